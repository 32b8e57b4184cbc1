// Kernel family "nodewise": A[:, cols].individual_sample(k) (uniform, with or without
// replacement; weighted with replacement from alias tables) in one launch, without the slice and without reading a size back to the host (host code:
// gsample/backend/cuda/nodewise.py; the algorithms, which these reproduce draw for draw,
// are stated in gsample/backend/torch/select.py).
//
// The frontier `cols` is a buffer of C entries of which the first ncols are real (ncols is
// read from the device, or is C when the pointer is null). Every launch covers the whole
// buffer; padding columns get no edges. A super-batch (n > 0) holds N mini-batches as one
// block-diagonal graph of ids b * n + v: column c reads the graph's node cols[c] % n, draws
// with its batch's key and its position within its batch, and its rows are encoded.
//
// Keys: key[0] is the op's key prefix combine(combine(0, seed), ordinal) and key[1] the
// first mini-batch index; batch b draws with combine(key[0], key[1] + b), the op key of
// DESIGN §3 (read from the device, so a captured CUDA graph replays with new keys).
//
// GS_IDX is the index type of the graph's indptr and rows (int for the int32 copy of a
// large graph, else long long).
#include "scan.cuh"
#include "search.cuh"

#ifndef GS_IDX
#define GS_IDX long long
#endif
typedef GS_IDX gs_idx;

#define GS_LOOP(i, n)                                                          \
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < (n);   \
         i += (gs_i64)gridDim.x * blockDim.x)

__device__ __forceinline__ gs_i64 gs_count(const gs_i64* __restrict__ ncols, gs_i64 C) {
    return ncols == nullptr ? C : *ncols;
}

// The edges column c samples (0 for padding columns).
__device__ __forceinline__ gs_i64 gs_sample_count(const gs_idx* __restrict__ indptr, gs_i64 v,
                                                  gs_i64 k, int replace) {
    const gs_i64 deg = (gs_i64)indptr[v + 1] - (gs_i64)indptr[v];
    return replace ? (deg > 0 ? k : 0) : (deg < k ? deg : k);
}

// Weighted draw i of a column (with replacement) from the graph's alias tables (the
// alias_table op: per edge e, table[2e] the threshold scaled to 2**53, table[2e + 1] the
// alias edge): slot s = uniform_int(word(col, 2i), deg), kept when word(col, 2i + 1) >> 11
// is below its threshold, else its alias (as gsample.backend.torch.alias.
// draw_with_replacement). Returns the draw's offset within the column.
__device__ __forceinline__ gs_i64 gs_alias_draw(const gs_i64* __restrict__ alias, gs_u64 base,
                                                gs_i64 position, gs_i64 i, gs_i64 start,
                                                gs_i64 deg) {
    const gs_i64 s = gs_uniform_int(gs_word(base, position, 2 * i), deg);
    const gs_u64 coin = gs_word(base, position, 2 * i + 1);
    const gs_i64 e = start + s;
    return (gs_i64)(coin >> 11) < alias[2 * e] ? s : alias[2 * e + 1] - start;
}

// Column c (graph id `id`, its edges from `out`) drawn by one warp: its draws, sorted, and
// their edges gathered (alias: weighted draws from the alias tables, with replacement).
__device__ __forceinline__ void gs_sample_column(const gs_idx* __restrict__ indptr,
                                                 const gs_idx* __restrict__ rows,
                                                 const gs_i64* __restrict__ cols, gs_i64 m,
                                                 gs_i64 n, gs_i64 k, int replace,
                                                 const gs_i64* __restrict__ alias,
                                                 const gs_u64* __restrict__ key, gs_i64 c,
                                                 gs_i64 id, gs_i64 out, int lane,
                                                 const gs_i64* __restrict__ slot,
                                                 const gs_idx* __restrict__ crows,
                                                 const gs_i64* __restrict__ eids,
                                                 const gs_i64* __restrict__ ceids,
                                                 gs_i64* __restrict__ rows_out,
                                                 gs_i64* __restrict__ pos_out,
                                                 gs_i64* __restrict__ eids_out) {
    const unsigned FULL = 0xFFFFFFFFu;
    const gs_i64 b = n > 0 ? id / n : 0;
    const gs_i64 v = id - b * n;
    const gs_i64 start = (gs_i64)indptr[v];
    const gs_i64 deg = (gs_i64)indptr[v + 1] - start;
    const gs_i64 shift = b * n;
    // the column's rows and edge ids: the graph's, or the GPU cache's copy (same values)
    const gs_idx* R = rows + start;
    const gs_i64* I = eids != nullptr ? eids + start : nullptr;
    if (slot != nullptr && slot[v] >= 0) {
        R = crows + slot[v];
        if (I != nullptr) I = ceids + slot[v];
    }
    if (!replace && deg <= k) {
        for (gs_i64 j = lane; j < deg; j += 32) {
            rows_out[out + j] = (gs_i64)R[j] + shift;
            pos_out[out + j] = start + j;
            if (I != nullptr) eids_out[out + j] = I[j];
        }
        return;
    }
    // the column's position within its batch keys its draws (DESIGN §3)
    const gs_i64 position = n > 0 ? c - gs_first_at_least(cols, m, b * n) : c;
    const gs_u64 base = gs_combine(key[0], (gs_i64)key[1] + b);
    if (k <= 32) {
        gs_i64 d = 0;
        if (lane < k && alias) {
            d = gs_alias_draw(alias, base, position, lane, start, deg);
        } else if (lane < k) {
            const gs_u64 w = gs_word(base, position, lane);
            d = gs_uniform_int(w, replace ? deg : deg - k + lane + 1);
        }
        if (!replace) {                      // Floyd: lanes before i hold their final draws
            const gs_i64 first = d;
            for (int i = 1; i < k; ++i) {
                const gs_i64 ti = __shfl_sync(FULL, first, i);
                const unsigned seen = __ballot_sync(FULL, lane < i && d == ti);
                if (lane == i && seen) d = deg - k + i;
            }
        }
        int rank = 0;                        // the draws before this one in sorted order
        for (int q = 0; q < k; ++q) {
            const gs_i64 dq = __shfl_sync(FULL, d, q);
            rank += dq < d || (dq == d && q < lane);
        }
        if (lane < k) {
            rows_out[out + rank] = (gs_i64)R[d] + shift;
            pos_out[out + rank] = start + d;
            if (I != nullptr) eids_out[out + rank] = I[d];
        }
        return;
    }
    if (lane != 0) return;
    gs_i64* S = pos_out + out;               // the draws, then sorted in place
    for (gs_i64 i = 0; i < k; ++i) {
        const gs_u64 w = gs_word(base, position, i);
        gs_i64 d;
        if (alias) {
            d = gs_alias_draw(alias, base, position, i, start, deg);
        } else if (replace) {
            d = gs_uniform_int(w, deg);
        } else {
            const gs_i64 j = deg - k + i;
            d = gs_uniform_int(w, j + 1);
            for (gs_i64 q = 0; q < i; ++q) {
                if (S[q] == d) { d = j; break; }
            }
        }
        gs_i64 q = i;                        // insertion: S[0..i] stays sorted
        while (q > 0 && S[q - 1] > d) { S[q] = S[q - 1]; --q; }
        S[q] = d;
    }
    for (gs_i64 i = 0; i < k; ++i) {
        const gs_i64 d = S[i];
        rows_out[out + i] = (gs_i64)R[d] + shift;
        if (I != nullptr) eids_out[out + i] = I[d];
        S[i] = start + d;
    }
}

// One launch: every column's count, the result's indptr by a single-pass scan (scan.cuh),
// then the draws. Block t (by ticket) takes the T = warps * per_warp columns t * T ..: a
// thread counts each, then a warp draws each column (per_warp of them, one after another),
// so a small frontier (512 seeds: per_warp 1) still spreads over the GPU, a super-batch's
// (10**6 columns: up to 32 each) needs few tiles, and the k <= 32 draws of a column run on
// its lanes at once.
//
// A graph in pinned host memory may have a GPU cache (gsample/formats/cache.py): slot[v] >= 0
// puts column v's rows at crows + slot[v] (and its edge ids at ceids + slot[v]); slot null:
// none. eids non-null: the kernel also writes each edge's id to eids_out (from the cache
// where it has them). counters non-null: counters[0] += the edges read, counters[1] += those
// of cached columns (a warp's sums, one atomic each).
//
// The frontier's ids are checked here: an id outside [0, M) sets err (err[0]: a negative
// one, err[1]: one >= M, err[2] / err[3]: the smallest / largest such id, err[4]: any) and is
// an empty column whose id is 0 in cols_out, the frontier's clamped copy (the result's
// col_ids: whatever reads the result reads ids in range); the host reads err[4] with the
// program's sizes and raises (gsample.validate.fail_if). Padding columns are 0 in cols_out.
// state: scan.cuh's words, then err, all zero before the launch.
//
// Column c's edges go to indptr_out[c] ..., in column order: rows_out (the graph's row,
// + b * n in a super-batch) and pos_out (the edge's position in the graph). Without
// replacement a column of deg <= k edges keeps them all; else Floyd's k draws (draw i: t =
// uniform_int(word(col, i), j + 1), j = deg - k + i; t, or j when t was drawn before); with
// replacement draw i takes uniform_int(word(col, i), deg), or with alias tables (non-null
// `alias`, replace set) the weighted draw of gs_alias_draw. The draws are sorted before the
// gather: lane i of the warp makes draw i and writes it at its rank; past 32 draws lane 0
// makes them one after another (an insertion sort in the output).
extern "C" __global__ void gs_sample_uniform(const gs_idx* __restrict__ indptr,
                                             const gs_idx* __restrict__ rows,
                                             const gs_i64* __restrict__ cols, gs_i64 C,
                                             const gs_i64* __restrict__ ncols, gs_i64 n,
                                             gs_i64 M, gs_i64 k, int replace,
                                             const gs_i64* __restrict__ alias,
                                             const gs_u64* __restrict__ key,
                                             gs_u64* state, gs_i64 tiles, gs_i64 per_warp,
                                             gs_i64* __restrict__ indptr_out,
                                             gs_i64* __restrict__ rows_out,
                                             gs_i64* __restrict__ pos_out,
                                             const gs_i64* __restrict__ slot,
                                             const gs_idx* __restrict__ crows,
                                             const gs_i64* __restrict__ eids,
                                             const gs_i64* __restrict__ ceids,
                                             gs_i64* __restrict__ eids_out,
                                             gs_i64* __restrict__ counters,
                                             gs_i64* __restrict__ cols_out) {
    __shared__ gs_i64 s_id[256], s_out[256], s_cnt[256];    // blockDim <= 256
    const int lane = threadIdx.x & 31;
    const gs_i64 T = (gs_i64)(blockDim.x >> 5) * per_warp;      // columns per tile
    const gs_i64 m = gs_count(ncols, C);
    const gs_i64 t = gs_scan_ticket(state);
    gs_i64* err = (gs_i64*)(state + 1 + tiles);
    {
        const gs_i64 c = t * T + threadIdx.x;
        gs_i64 id = 0, cnt = 0;
        if (threadIdx.x < T && c < m) {
            id = cols[c];
            if (gs_in_range(id, M)) {
                cnt = gs_sample_count(indptr, n > 0 ? id % n : id, k, replace);
            } else {
                if (id < 0) { err[0] = 1; atomicMin((long long*)&err[2], (long long)id); }
                else { err[1] = 1; atomicMax((long long*)&err[3], (long long)id); }
                err[4] = 1;
                id = 0;                         // an empty column (cnt 0) of id 0
            }
        }
        if (threadIdx.x < T && c < C) cols_out[c] = id;
        if (counters != nullptr) {              // uniform: every thread of the block is here
            gs_i64 reads = cnt;
            gs_i64 hits = slot != nullptr && cnt > 0 && slot[n > 0 ? id % n : id] >= 0 ? cnt : 0;
            for (int d = 16; d > 0; d >>= 1) {
                reads += __shfl_down_sync(0xFFFFFFFFu, reads, d);
                hits += __shfl_down_sync(0xFFFFFFFFu, hits, d);
            }
            if (lane == 0 && reads > 0) {
                atomicAdd((unsigned long long*)&counters[0], (unsigned long long)reads);
                atomicAdd((unsigned long long*)&counters[1], (unsigned long long)hits);
            }
        }
        gs_i64 tile_total;
        const gs_i64 local = gs_block_exclusive(cnt, &tile_total);
        const gs_i64 out = gs_scan_exclusive(state, t, tile_total) + local;
        if (threadIdx.x < T && c < C) indptr_out[c + 1] = out + cnt;
        if (c == 0) indptr_out[0] = 0;
        s_id[threadIdx.x] = id;
        s_out[threadIdx.x] = out;
        s_cnt[threadIdx.x] = cnt;
        __syncthreads();
    }
    for (gs_i64 r = 0; r < per_warp; ++r) {
        const gs_i64 j = (threadIdx.x >> 5) * per_warp + r;     // the tile's column
        if (j >= T || s_cnt[j] == 0) continue;                  // the same for the warp
        const gs_i64 c = t * T + j, id = s_id[j], out = s_out[j];
        gs_sample_column(indptr, rows, cols, m, n, k, replace, alias, key, c, id, out, lane,
                         slot, crows, eids, ceids, rows_out, pos_out, eids_out);
    }
}
