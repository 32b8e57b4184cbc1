// Kernel family "frontier": A.all_nodes() of a sample whose row space is every node (a
// column slice of the graph), without a sort and without reading a size back to the host
// (host code: gsample/backend/cuda/nodewise.py; semantics: gsample/backend/torch/finalize.py,
// and gsample/runtime/blocks.py batch_order for a super-batch).
//
// The result is, per mini-batch b (one when n == 0): the columns of b in the order they
// first occur, then b's rows that are not among its columns, in row-space order: ascending
// ids when the matrix's row space is all nodes (rows[e] is an id), else ascending local
// rows r (rows[e] is a local row, its id row_ids[r]; a row is "among the columns" when its
// id is in the columns' hash table). Ids live in
// [0, M): M = the graph's node count, or N * n in a super-batch of N mini-batches, where
// id b * n + v is node v of batch b (columns and rows of a batch are contiguous and batches
// ascending, so "ascending ids" groups the rows by batch).
//
// Sizes come from the buffers' bounds only. Two launches for one mini-batch (three with
// row_ids):
//   gs_nodes_mark       the columns' first positions (hash table, atomicMin) and two bitmaps:
//                       R over the rows (ids in [0, M), or local rows) of the edges, and
//                       K over [0, M), the columns (only without row_ids);
//   gs_nodes_drop_cols  (with row_ids only) R's local rows whose id is a column cleared;
//   gs_nodes_scan_emit  per tile of items (columns of the buffer, then words of the
//                       bitmaps): how many it emits (first-occurring columns; bits of
//                       R & ~K), its offset by a single-pass scan (scan.cuh), the ids written
//                       to their place, the bitmap words cleared again (the bitmaps are kept
//                       all zero between calls: no clearing launch).
// A super-batch interleaves the batches (each its columns, then its rows): a row's place
// needs the columns of its batch and those before, a column's the rows of the batches
// before. Six launches (seven with row_ids), one pass over the bitmaps: gs_nodes_mark,
// gs_nodes_count (the columns per tile and per batch), gs_nodes_prefix (the columns up to
// each batch), gs_nodes_rows (count, scan, place and clear the rows), gs_nodes_prefix (the
// rows before each batch), gs_nodes_emit (place the columns).
//
// Ids are guarded where they index memory (gs_in_range), whoever made them: a column id or a
// row id (row_ids) outside [0, M) counts as id 0, an edge's row outside the row space (ids
// [0, M), or local rows [0, NR) with row_ids) marks nothing, and each sets *flag (a word kept
// zero between calls, past the bitmaps' words); the emitting launch moves it to count[1] and
// clears it, and the host raises on it (gsample.validate.fail_if).
#include "scan.cuh"

#define GS_THREADS 256
#define GS_PER_THREAD 4
#define GS_TILE (GS_THREADS * GS_PER_THREAD)    // items (columns or bitmap words) per tile

#define GS_LOOP(i, n)                                                          \
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < (n);   \
         i += (gs_i64)gridDim.x * blockDim.x)

// Column p's id, guarded: cols[p] in [0, M), else 0.
__device__ __forceinline__ gs_i64 gs_col_id(const gs_i64* __restrict__ cols, gs_i64 p,
                                            gs_i64 M) {
    const gs_i64 id = cols[p];
    return gs_in_range(id, M) ? id : 0;
}

// Columns first (positions < m), then the edges' rows (nnz = *nnz of them); counters[0:2N]
// zeroed for gs_nodes_count. M: the id space; NR: the rows' space (M, or with row_ids their
// number); a column or row outside its space sets *flag (see the header).
extern "C" __global__ void gs_nodes_mark(const gs_i64* __restrict__ cols, gs_i64 C,
                                         const gs_i64* __restrict__ ncols,
                                         const gs_i64* __restrict__ rows, gs_i64 E,
                                         const gs_i64* __restrict__ nnz,
                                         const gs_i64* __restrict__ row_ids,
                                         gs_u64* keys, gs_u64* vals, gs_i64 mask,
                                         gs_i64* __restrict__ slot,
                                         unsigned int* R, unsigned int* K,
                                         gs_i64* __restrict__ counters, gs_i64 ncounters,
                                         gs_i64 M, gs_i64 NR, unsigned int* flag) {
    const gs_i64 m = ncols == nullptr ? C : *ncols;
    const gs_i64 e_end = *nnz;
    const gs_i64 total = C + E > ncounters ? C + E : ncounters;
    GS_LOOP(i, total) {
        if (i < ncounters) counters[i] = 0;
        if (i < C) {
            if (i < m) {
                gs_i64 id = cols[i];
                if (!gs_in_range(id, M)) { *flag = 1u; id = 0; }
                slot[i] = gs_table_insert(keys, vals, mask, (gs_u64)id, (gs_u64)i);
                if (row_ids == nullptr) atomicOr(&K[id >> 5], 1u << (id & 31));
            }
        } else if (i - C < e_end) {
            const gs_i64 id = rows[i - C];
            if (gs_in_range(id, NR)) atomicOr(&R[id >> 5], 1u << (id & 31));
            else *flag = 1u;
        }
    }
}

// The emitting launch's last thread: the flag to count[1], the flag cleared (the mark launch
// before it set it; nothing else in this launch touches it).
__device__ __forceinline__ void gs_take_flag(unsigned int* flag, gs_i64* __restrict__ count,
                                             gs_i64 t, gs_i64 tiles) {
    if (t == tiles - 1 && threadIdx.x == 0) {
        count[1] = *flag;
        *flag = 0u;
    }
}

// With row_ids: drop from R the local rows whose id is among the columns (the columns' hash
// table is complete once gs_nodes_mark has run), a thread per local row. The lookups ran
// inside the scans, up to 128 dependent probes per thread on one or two blocks, would be
// most of a layer's critical path; here every local row's probe runs in parallel.
// A row id outside [0, M) sets *flag (the emitting launch reads it as 0).
extern "C" __global__ void gs_nodes_drop_cols(const gs_i64* __restrict__ row_ids,
                                              gs_i64 nrows,
                                              const gs_u64* __restrict__ keys, gs_i64 mask,
                                              unsigned int* R, gs_i64 M, unsigned int* flag) {
    GS_LOOP(r, nrows) {
        if (!gs_in_range(row_ids[r], M)) *flag = 1u;
        const unsigned int bit = 1u << (r & 31);
        if ((R[r >> 5] & bit) && gs_table_contains(keys, mask, (gs_u64)row_ids[r]))
            atomicAnd(&R[r >> 5], ~bit);
    }
}

// The bits of word w of R whose rows are not among the columns (with row_ids, R has been
// through gs_nodes_drop_cols).
__device__ __forceinline__ unsigned int gs_new_rows(const unsigned int* R,
                                                    const unsigned int* K, gs_i64 w,
                                                    gs_i64 W, const gs_i64* __restrict__ row_ids) {
    if (w >= W) return 0u;
    return row_ids == nullptr ? R[w] & ~K[w] : R[w];
}

// The id of bit j of word w of R (a row id outside [0, M): 0; R holds only local rows in
// range, gs_nodes_mark guards them).
__device__ __forceinline__ gs_i64 gs_row_id(const gs_i64* __restrict__ row_ids, gs_i64 w,
                                            int j, gs_i64 M) {
    const gs_i64 r = w * 32 + j;
    if (row_ids == nullptr) return r;
    const gs_i64 id = row_ids[r];
    return gs_in_range(id, M) ? id : 0;
}

__device__ __forceinline__ bool gs_first_col(const gs_u64* vals, const gs_i64* slot,
                                             gs_i64 p, gs_i64 m) {
    return p < m && vals[slot[p]] == (gs_u64)p;
}

// Super-batches, the columns' count: the first-occurring columns per tile and per batch
// (counters[0:N]). The tiles are taken by ticket and scanned (scan.cuh; state: 1 + col_tiles
// zero words): offsets[t] = the first-occurring columns of the tiles before t. A batch's
// columns are contiguous, so nearly every column of a tile is in the batch of the tile's
// first column: those are summed in the block and added to counters once, the others one by
// one (a global atomic per item on N counters would serialise).
extern "C" __global__ void gs_nodes_count(const gs_i64* __restrict__ cols, gs_i64 C,
                                          const gs_i64* __restrict__ ncols,
                                          const gs_u64* __restrict__ vals,
                                          const gs_i64* __restrict__ slot, gs_i64 n, gs_i64 N,
                                          gs_i64 M, gs_i64* __restrict__ counters,
                                          gs_u64* state, gs_i64* __restrict__ offsets) {
    __shared__ gs_i64 in_first, first_batch;
    const gs_i64 m = ncols == nullptr ? C : *ncols;
    const gs_i64 t = gs_scan_ticket(state);
    if (threadIdx.x == 0) {
        in_first = 0;
        first_batch = t * GS_TILE < m ? gs_col_id(cols, t * GS_TILE, M) / n : -1;
    }
    __syncthreads();
    const gs_i64 b0 = first_batch;
    gs_i64 mine = 0, mine_b0 = 0;
    for (int j = 0; j < GS_PER_THREAD; ++j) {
        const gs_i64 p = t * GS_TILE + threadIdx.x * GS_PER_THREAD + j;
        if (gs_first_col(vals, slot, p, m)) {
            ++mine;
            const gs_i64 b = gs_col_id(cols, p, M) / n;
            if (b == b0) ++mine_b0;
            else atomicAdd((unsigned long long*)&counters[b], 1ULL);
        }
    }
    if (mine_b0) atomicAdd((unsigned long long*)&in_first, (unsigned long long)mine_b0);
    gs_i64 total;
    gs_block_exclusive(mine, &total);           // (synchronises: in_first is complete)
    if (threadIdx.x == 0 && in_first && b0 >= 0 && b0 < N)  // (always: in_first counts b0's)
        atomicAdd((unsigned long long*)&counters[b0], (unsigned long long)in_first);
    const gs_i64 before = gs_scan_exclusive(state, t, total);
    if (threadIdx.x == 0) offsets[t] = before;
}

// Super-batches: counters[0:N] (columns per batch) -> inclusive prefix (columns up to and
// including b) when part is 0; counters[N:2N] (rows per batch) -> exclusive prefix (rows
// before b) when part is 1.
extern "C" __global__ void gs_nodes_prefix(gs_i64* __restrict__ counters, gs_i64 N, int part) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    gs_i64 s = 0;
    for (gs_i64 b = 0; b < N; ++b) {
        const gs_i64 x = counters[part * N + b];
        counters[part * N + b] = part == 0 ? s + x : s;
        s += x;
    }
}

// Emit a tile of bitmap words: the new rows' ids in bit order from rank on, the words
// cleared (R always; K when it was set, without row_ids). place(id, rank) -> position.
template <typename Place>
__device__ __forceinline__ void gs_emit_rows(unsigned int* R, unsigned int* K, gs_i64 W,
                                             const gs_i64* __restrict__ row_ids,
                                             const unsigned int* bits, gs_i64 w0, gs_i64 rank,
                                             gs_i64 M, gs_i64* __restrict__ out, Place place) {
    for (int j = 0; j < GS_PER_THREAD; ++j) {
        const gs_i64 w = w0 + j;
        if (w >= W) break;
        R[w] = 0u;
        if (row_ids == nullptr) K[w] = 0u;
        for (unsigned int b = bits[j]; b; b &= b - 1) {
            const gs_i64 id = gs_row_id(row_ids, w, __ffs(b) - 1, M);
            out[place(id, rank++)] = id;
        }
    }
}

// Super-batches, the rows in one pass over the bitmaps (after the columns' count and
// prefix): per tile of words (by ticket, scanned: state 1 + row_tiles zero words) the new
// rows, counted per batch (counters[N:2N]) and placed after the columns of their batch and
// of the batches before (counters[0:N], inclusive), the words cleared; count[0] = every id.
// Without row_ids a tile's words are (nearly all) in the batch of its first word: counted in
// the block; with them, per bit (local rows need not follow ids).
extern "C" __global__ void gs_nodes_rows(const gs_i64* __restrict__ row_ids, unsigned int* R,
                                         unsigned int* K, gs_i64 W, gs_i64 n, gs_i64 N,
                                         gs_i64 row_tiles, gs_i64 M,
                                         gs_i64* __restrict__ counters, gs_u64* state,
                                         gs_i64* __restrict__ out, gs_i64* __restrict__ count,
                                         unsigned int* flag) {
    __shared__ gs_i64 in_first;
    const gs_i64 t = gs_scan_ticket(state);
    if (threadIdx.x == 0) in_first = 0;
    __syncthreads();
    gs_take_flag(flag, count, t, row_tiles);
    const gs_i64 b0 = row_ids == nullptr ? t * GS_TILE * 32 / n : -1;
    const gs_i64 w0 = t * GS_TILE + threadIdx.x * GS_PER_THREAD;
    unsigned int bits[GS_PER_THREAD];
    gs_i64 mine = 0, mine_b0 = 0;
    for (int j = 0; j < GS_PER_THREAD; ++j) {
        const gs_i64 w = w0 + j;
        bits[j] = gs_new_rows(R, K, w, W, row_ids);
        mine += __popc(bits[j]);
        unsigned int left = bits[j];
        if (row_ids != nullptr) {
            for (; left; left &= left - 1)
                atomicAdd((unsigned long long*)&counters[N + gs_row_id(row_ids, w,
                                                                       __ffs(left) - 1, M) / n],
                          1ULL);
        }
        while (left) {                      // per batch: a word may straddle two batches
            const gs_i64 b = (w * 32 + __ffs(left) - 1) / n;
            const gs_i64 end = (b + 1) * n - w * 32;         // first bit of the next batch
            const unsigned int inb = end >= 32 ? left : (left & ((1u << end) - 1u));
            if (b == b0) mine_b0 += __popc(inb);
            else atomicAdd((unsigned long long*)&counters[N + b], (unsigned long long)__popc(inb));
            left &= ~inb;
        }
    }
    if (mine_b0) atomicAdd((unsigned long long*)&in_first, (unsigned long long)mine_b0);
    gs_i64 tile_total;
    const gs_i64 local = gs_block_exclusive(mine, &tile_total);  // (in_first is complete)
    if (threadIdx.x == 0 && in_first && b0 >= 0 && b0 < N)
        atomicAdd((unsigned long long*)&counters[N + b0], (unsigned long long)in_first);
    const gs_i64 rank = gs_scan_exclusive(state, t, tile_total) + local;     // among all rows
    if (t == row_tiles - 1 && threadIdx.x == 0) count[0] = counters[N - 1] + rank - local + tile_total;
    gs_emit_rows(R, K, W, row_ids, bits, w0, rank, M, out,
                 [&](gs_i64 id, gs_i64 r) { return counters[id / n] + r; });
}

// Super-batches, the columns (after the rows' pass and prefix): each first-occurring column
// at its rank among all columns (offsets: gs_nodes_count's), after the rows of the batches
// before its own (counters[N:2N], exclusive).
extern "C" __global__ void gs_nodes_emit(const gs_i64* __restrict__ cols, gs_i64 C,
                                         const gs_i64* __restrict__ ncols,
                                         const gs_u64* __restrict__ vals,
                                         const gs_i64* __restrict__ slot, gs_i64 n, gs_i64 N,
                                         gs_i64 M, const gs_i64* __restrict__ counters,
                                         const gs_i64* __restrict__ offsets,
                                         gs_i64* __restrict__ out) {
    const gs_i64 m = ncols == nullptr ? C : *ncols;
    const gs_i64 t = blockIdx.x;
    const gs_i64 p0 = t * GS_TILE + threadIdx.x * GS_PER_THREAD;
    gs_i64 mine = 0, block_total;
    for (int j = 0; j < GS_PER_THREAD; ++j) mine += gs_first_col(vals, slot, p0 + j, m);
    gs_i64 rank = offsets[t] + gs_block_exclusive(mine, &block_total);
    for (int j = 0; j < GS_PER_THREAD; ++j) {
        const gs_i64 p = p0 + j;
        if (!gs_first_col(vals, slot, p, m)) continue;
        const gs_i64 id = gs_col_id(cols, p, M);
        out[counters[N + id / n] + rank++] = id;
    }
}

// One mini-batch: count, scan and emit in one launch (the tiles in ticket order: the
// columns' tiles first, so every column precedes every row). state: 1 + tiles zero words.
extern "C" __global__ void gs_nodes_scan_emit(const gs_i64* __restrict__ cols, gs_i64 C,
                                              const gs_i64* __restrict__ ncols,
                                              const gs_u64* __restrict__ keys,
                                              const gs_u64* __restrict__ vals, gs_i64 mask,
                                              const gs_i64* __restrict__ slot,
                                              const gs_i64* __restrict__ row_ids,
                                              unsigned int* R, unsigned int* K, gs_i64 W,
                                              gs_i64 col_tiles, gs_i64 tiles, gs_u64* state,
                                              gs_i64* __restrict__ out,
                                              gs_i64* __restrict__ count, gs_i64 M,
                                              unsigned int* flag) {
    const gs_i64 m = ncols == nullptr ? C : *ncols;
    const gs_i64 t = gs_scan_ticket(state);
    gs_take_flag(flag, count, t, tiles);
    gs_i64 mine = 0, tile_total;
    if (t < col_tiles) {
        const gs_i64 p0 = t * GS_TILE + threadIdx.x * GS_PER_THREAD;
        for (int j = 0; j < GS_PER_THREAD; ++j) mine += gs_first_col(vals, slot, p0 + j, m);
        const gs_i64 local = gs_block_exclusive(mine, &tile_total);
        gs_i64 rank = gs_scan_exclusive(state, t, tile_total) + local;
        if (t == tiles - 1 && threadIdx.x == 0) count[0] = rank - local + tile_total;
        for (int j = 0; j < GS_PER_THREAD; ++j) {
            const gs_i64 p = p0 + j;
            if (gs_first_col(vals, slot, p, m)) out[rank++] = gs_col_id(cols, p, M);
        }
    } else {
        const gs_i64 w0 = (t - col_tiles) * GS_TILE + threadIdx.x * GS_PER_THREAD;
        unsigned int bits[GS_PER_THREAD];
        for (int j = 0; j < GS_PER_THREAD; ++j) {
            bits[j] = gs_new_rows(R, K, w0 + j, W, row_ids);
            mine += __popc(bits[j]);
        }
        const gs_i64 local = gs_block_exclusive(mine, &tile_total);
        const gs_i64 rank = gs_scan_exclusive(state, t, tile_total) + local;
        if (t == tiles - 1 && threadIdx.x == 0) count[0] = rank - local + tile_total;
        gs_emit_rows(R, K, W, row_ids, bits, w0, rank, M, out,
                     [](gs_i64, gs_i64 r) { return r; });
    }
}
