// Kernel family "layerwise": what a layer-wise sampler (LADIES, FastGCN) does to a frontier
// of the graph, without materialising the frontier's column slice (host code:
// gsample/backend/cuda/layerwise.py; semantics: gsample/backend/torch/fused_select.py):
// the frontier's edge pointer, its candidate rows and their sort keys, the kept edges of
// the chosen rows. The kernels over the frontier's edges take equal tiles of them
// (frontier_tiles.cuh), so a hub's column of a million edges does not hold one block; the
// row sums are kernels/rowsum.cu's.
#include "frontier_tiles.cuh"

// ----------------------------------------------------------------------------- frontier edges
// gs_frontier_rows and gs_kept_append (passes that read every frontier edge and write
// little: a collective sample's candidate rows, a super-batch's kept list) take `sub` rounds
// of GS_ITEMS items a thread per tile (GS_TILES_OF): a tile's column search and staging
// serve them all. gs_kept_counts and gs_kept_edges keep one round a tile: there the rounds'
// longer tiles cost more than the searches they save (each round's atomics or block scan
// waits on its own loads either way).

// ptr[c] = the edges of the frontier's columns before c (padding columns, c >= *ncols, have
// none); ptr[C] = all of them. A tile of blockDim columns per block, scanned across the
// blocks in one pass (scan.cuh); state: 1 + tiles words, zero before the launch. The ids
// are checked against [0, M) (gs_column; err: 5 words, zero before the launch): a bad one
// is an empty column, which no later pass over the frontier's edges reads.
extern "C" __global__ void gs_frontier_ptr(const gs_idx* __restrict__ indptr,
                                           const gs_i64* __restrict__ cols, gs_i64 C,
                                           const gs_i64* __restrict__ ncols, gs_i64 n,
                                           gs_u64* __restrict__ state,
                                           gs_i64* __restrict__ ptr, gs_i64 M,
                                           gs_i64* __restrict__ err) {
    const gs_i64 m = ncols == nullptr ? C : *ncols;
    const gs_i64 tile = gs_scan_ticket(state);
    const gs_i64 c = tile * blockDim.x + threadIdx.x;
    gs_i64 start = 0, end = 0, shift;
    if (c < C) gs_column(indptr, cols, c, m, n, M, err, &start, &end, &shift);
    const gs_i64 deg = end - start;
    gs_i64 sum;
    const gs_i64 local = gs_block_exclusive(deg, &sum);
    const gs_i64 before = gs_scan_exclusive(state, tile, sum);
    if (c < C) ptr[c] = before + local;
    if (c == C - 1) ptr[C] = before + local + deg;
}

// ----------------------------------------------------------------------------- collective
// A candidate row's bit: row r is bit r % 32 of word r / 32 (R / 8 bytes, which stay in the
// L2: a byte a row of a super-batch's row space did not, and each first visit of a row wrote
// a partial sector to the DRAM).
__device__ __forceinline__ bool gs_cand_bit(const unsigned* __restrict__ cand, gs_i64 r) {
    return (cand[r >> 5] >> (r & 31)) & 1u;
}

// The rows holding an edge of the frontier: cand's bit r set.
extern "C" __global__ void gs_frontier_rows(const gs_idx* __restrict__ indptr,
                                            const gs_idx* __restrict__ rows,
                                            const gs_i64* __restrict__ cols, gs_i64 C,
                                            const gs_i64* __restrict__ ptr, gs_i64 n,
                                            unsigned* __restrict__ cand, int sub) {
    GS_TILES_OF(g0, t, ptr, C, true, sub) {
        for (int s = 0; s < sub; ++s) {
            const gs_i64 gs = g0 + s * (gs_i64)blockDim.x * GS_ITEMS;
            GS_LOAD_ITEMS(gs, t, r, e, c)
#pragma unroll
            for (int j = 0; j < GS_ITEMS; ++j)             // a read first: hub rows (above)
                if (r[j] >= 0 && !gs_cand_bit(cand, r[j]))
                    atomicOr(&cand[r[j] >> 5], 1u << (r[j] & 31));
        }
    }
}

// Sort keys of the rows (select.Draws.row_keys): row r's of the row space is, for a
// candidate (a row holding a frontier edge, with p[r] > 0 when weighted), uniform
// word(0, v) >> 1 or weighted exponential(word(0, v)) / p[r] (float64; its bits order like
// the number: it is > 0), for v = r (or r - b * n in batch b, keyed by its batch; p of the
// batch, or with `shared` the one p all batches share); every other row's is INT64_MAX,
// above all of them (the k smallest keys of a batch then say how many candidates it has,
// up to k: no counter every candidate would add to).
// With probs, each value of probs is also checked once (the compiled program's check of
// node_probs, in the pass that reads them anyway): bad[0] = 1 when one is NaN or infinite,
// bad[1] = 1 when one is negative (bad: zero before the launch; read back by the caller).
// cand null: the rows with p[r] > 0 are the candidates (probs are 0 off the slice's rows:
// the probs_support pass said so).
#define GS_NOT_A_ROW 0x7FFFFFFFFFFFFFFFLL

// b: row r's batch, n > 0 ? gs_batch(r, n) : 0 (gs_is_candidate finds it; a caller that
// knows it for a run of rows passes it).
__device__ __forceinline__ bool gs_is_candidate_of(const unsigned* __restrict__ cand,
                                                   const gs_t* __restrict__ probs, int shared,
                                                   gs_i64 n, gs_i64 r, gs_i64 b,
                                                   gs_i64* __restrict__ bad) {
    if (probs == nullptr) return cand == nullptr || gs_cand_bit(cand, r);
    const double x = (double)probs[shared ? r - b * n : r];   // the batches share one probs
    if (!shared || b == 0) {
        if (isnan(x) || isinf(x)) bad[0] = 1;
        else if (x < 0.0) bad[1] = 1;
    }
    return (cand == nullptr || gs_cand_bit(cand, r)) && x > 0.0;
}

__device__ __forceinline__ bool gs_is_candidate(const unsigned* __restrict__ cand,
                                                const gs_t* __restrict__ probs, int shared,
                                                gs_i64 n, gs_i64 r, gs_i64* __restrict__ bad) {
    if (probs == nullptr) return cand == nullptr || gs_cand_bit(cand, r);
    return gs_is_candidate_of(cand, probs, shared, n, r, n > 0 ? gs_batch(r, n) : 0, bad);
}

// The sort key of row r, a candidate of batch b (seed: gs_key_seed's of b; bn: b * n).
__device__ __forceinline__ gs_i64 gs_seeded_key(const gs_t* __restrict__ probs, int shared,
                                                gs_u64 seed, gs_i64 r, gs_i64 bn) {
    const gs_u64 w = gs_combine(seed, r - bn);
    return probs == nullptr
        ? (gs_i64)(w >> 1)
        : __double_as_longlong(__ddiv_rn(gs_exponential(w), (double)probs[shared ? r - bn : r]));
}

// The sort key of row r, a candidate.
__device__ __forceinline__ gs_i64 gs_candidate_key(const gs_t* __restrict__ probs, int shared,
                                                   const gs_u64* __restrict__ key, gs_i64 n,
                                                   gs_i64 r) {
    const gs_i64 b = n > 0 ? gs_batch(r, n) : 0;
    return gs_seeded_key(probs, shared, gs_key_seed(key, b), r, b * n);
}

// keys[r] for every row r of the row space (torch.topk selects from them).
extern "C" __global__ void gs_row_sort_keys(const unsigned* __restrict__ cand, gs_i64 R,
                                            const gs_t* __restrict__ probs, int shared,
                                            const gs_u64* __restrict__ key, gs_i64 n,
                                            gs_i64* __restrict__ keys,
                                            gs_i64* __restrict__ bad) {
    for (gs_i64 r = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; r < R;
         r += (gs_i64)gridDim.x * blockDim.x)
        keys[r] = gs_is_candidate(cand, probs, shared, n, r, bad)
                  ? gs_candidate_key(probs, shared, key, n, r) : GS_NOT_A_ROW;
}

// The candidates' keys compacted by batch (the radix select of kernels/topk.cu reads them,
// not a key per row: the candidates are a small share of a super-batch's row space, and the
// select's passes read only them): batch b's go to ckeys / crows (their rows) from its
// cursor at[b] up (at[b] starts at the batch's first place, b * per: per rows a batch, room
// for all; it ends past the last), in no order. A warp takes 32 * GS_ITEMS consecutive rows
// (a span), lists its candidates in shared memory and computes their keys 32 at a time: a
// key is a hash, a logarithm and a division in float64, and with one row a lane every lane
// would wait for the warp's few candidates. A block's warps take consecutive spans (a
// round); where the round's rows are one batch's, the block adds its candidates to the
// batch's cursor with one atomic (one mini-batch's cursor is one word, which an atomic of
// every warp with a candidate queued on: most spans hold one where a layer's frontier
// reaches rows all over the graph), else each warp whose span is one batch's does, else
// each candidate. A span within one batch of the keys (n: mostly, as n is far above the
// span) finds its batch and its hash's seed once, not a division and two hash rounds a row.
// Blocks of at most GS_KEY_WARPS warps (the launch bounds), every lane of a warp launched.
#define GS_KEY_WARPS 8
extern "C" __global__ void __launch_bounds__(GS_KEY_WARPS * 32)
gs_row_keys_compact(const unsigned* __restrict__ cand, gs_i64 R,
                    const gs_t* __restrict__ probs, int shared,
                    const gs_u64* __restrict__ key, gs_i64 n, gs_i64 per,
                    gs_i64* __restrict__ at, gs_i64* __restrict__ ckeys,
                    gs_i64* __restrict__ crows, gs_i64* __restrict__ bad) {
    __shared__ int listed[GS_KEY_WARPS][32 * GS_ITEMS];
    __shared__ int found[GS_KEY_WARPS];                  // each warp's candidates this round
    __shared__ gs_i64 block_first;                       // the block's first place this round
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    int* list = listed[warp];
    const gs_i64 span = 32 * GS_ITEMS, round = span * nw;
    // (the bound is the block's: its warps meet at the barriers of every round)
    for (gs_i64 start = blockIdx.x * round; start < R; start += (gs_i64)gridDim.x * round) {
        const gs_i64 base = start + warp * span;         // (at or past R: no row)
        const gs_i64 kb = n > 0 ? gs_batch(min(base, R - 1), n) : 0;  // the span's key batch
        const bool kone = n <= 0 || gs_batch(min(base + span, R) - 1, n) == kb;
        // every row's test (its loads) before any vote: the span's loads in flight together
        bool is[GS_ITEMS];
#pragma unroll
        for (int j = 0; j < GS_ITEMS; ++j) {
            const gs_i64 r = base + 32 * j + lane;
            is[j] = r < R && gs_is_candidate_of(cand, probs, shared, n, r,
                                                kone ? kb : gs_batch(r, n), bad);
        }
        int m = 0;                                       // the warp's candidates so far
#pragma unroll
        for (int j = 0; j < GS_ITEMS; ++j) {
            const unsigned ball = __ballot_sync(0xFFFFFFFFu, is[j]);
            if (is[j]) list[m + __popc(ball & ((1u << lane) - 1u))] = 32 * j + lane;
            m += __popc(ball);
        }
        if (lane == 0) found[warp] = m;
        const gs_i64 rb = gs_batch(start, per);
        const bool block_one = rb == gs_batch(min(start + round, R) - 1, per);  // (uniform)
        __syncthreads();                                 // the lists and counts written
        gs_i64 first = 0;
        bool one = block_one;                            // this warp's places from `first`
        if (block_one) {
            if (threadIdx.x == 0) {
                gs_i64 total = 0;
                for (int w = 0; w < nw; ++w) total += found[w];
                block_first = total ? (gs_i64)atomicAdd((unsigned long long*)&at[rb],
                                                        (unsigned long long)total)
                                    : 0;
            }
            __syncthreads();                             // block_first written
            first = block_first;
            for (int w = 0; w < warp; ++w) first += found[w];
        } else if (m > 0) {
            const gs_i64 b = gs_batch(base, per);
            one = b == gs_batch(min(base + span, R) - 1, per);   // the span: one batch's rows
            if (one && lane == 0)
                first = (gs_i64)atomicAdd((unsigned long long*)&at[b], (unsigned long long)m);
            first = __shfl_sync(0xFFFFFFFFu, first, 0);
        }
        if (m > 0) {
            const gs_u64 seed = gs_key_seed(key, kb);
            for (int i = lane; i < m; i += 32) {
                const gs_i64 r = base + list[i];
                const gs_i64 k = kone ? gs_seeded_key(probs, shared, seed, r, kb * n)
                                      : gs_candidate_key(probs, shared, key, n, r);
                const gs_i64 to =
                    one ? first + i
                        : (gs_i64)atomicAdd((unsigned long long*)&at[gs_batch(r, per)], 1ULL);
                ckeys[to] = k;
                crows[to] = r;
            }
        }
        __syncthreads();          // the lists, counts and block_first read before they change
    }
}

// newpos[chosen[i]] = i for the chosen rows (newpos starts all -1; entries of chosen outside
// [0, R) are not rows: R marks fewer candidates than draws, and A[rows, cols]'s rows are
// guarded here too, whatever checked them before).
extern "C" __global__ void gs_scatter_positions(const gs_i64* __restrict__ chosen, gs_i64 k,
                                                gs_i64 R, int* __restrict__ newpos) {
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < k;
         i += (gs_i64)gridDim.x * blockDim.x)
        if (gs_in_range(chosen[i], R)) newpos[chosen[i]] = (int)i;
}

// bits[r / 32] bit r % 32 set for the rows drawn (bits start all 0; entries of picked at or
// past R are not rows): the kept-edge passes test a row there, in R / 8 bytes that stay in
// the L2 (newpos, 4 bytes a row, did not: a super-batch's row space is N graphs').
extern "C" __global__ void gs_mark_bits(const gs_i64* __restrict__ picked, gs_i64 k, gs_i64 R,
                                        unsigned* __restrict__ bits) {
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < k;
         i += (gs_i64)gridDim.x * blockDim.x)
        if (gs_in_range(picked[i], R)) atomicOr(&bits[picked[i] >> 5], 1u << (picked[i] & 31));
}

// The drawn rows in row order from their bits (gs_mark_bits), in one pass over the bitmap's
// words (a single-pass scan, scan.cuh): chosen[i] is the i-th drawn row (i below room; the
// rest of chosen is not written) and newpos[r] its position i, written at the drawn rows
// only (every reader of newpos tests the row's bit first). A bit a row: the pass reads R / 8
// bytes, where a byte a row marked, then scanned, and newpos cleared, cost a pass over the
// row space. Each thread takes GS_ITEMS consecutive words of its block's tile (a block a
// tile; state: 1 + tiles words, zero before the launch); a bit at or past R is no row.
extern "C" __global__ void gs_chosen_bits(const unsigned* __restrict__ bits, gs_i64 words,
                                          gs_i64 R, gs_u64* __restrict__ state,
                                          gs_i64* __restrict__ chosen, gs_i64 room,
                                          int* __restrict__ newpos) {
    const gs_i64 tile = gs_scan_ticket(state);
    const gs_i64 w0 = (tile * blockDim.x + threadIdx.x) * GS_ITEMS;
    unsigned w[GS_ITEMS];
    gs_i64 count = 0;
#pragma unroll
    for (int j = 0; j < GS_ITEMS; ++j) {
        w[j] = w0 + j < words ? bits[w0 + j] : 0u;
        count += __popc(w[j]);
    }
    gs_i64 sum;
    const gs_i64 local = gs_block_exclusive(count, &sum);
    gs_i64 at = gs_scan_exclusive(state, tile, sum) + local;
#pragma unroll
    for (int j = 0; j < GS_ITEMS; ++j)
        for (unsigned m = w[j]; m != 0u; m &= m - 1u, ++at) {
            const gs_i64 r = (w0 + j) * 32 + (__ffs(m) - 1);
            if (r < R && at < room) {
                chosen[at] = r;
                newpos[r] = (int)at;
            }
        }
}

__device__ __forceinline__ bool gs_drawn(const unsigned* __restrict__ bits,
                                         const int* __restrict__ newpos, gs_i64 r) {
    return bits != nullptr ? (bits[r >> 5] >> (r & 31)) & 1u : newpos[r] >= 0;
}

// The frontier edges of a chosen row that each column keeps: counts[c] (zero before the
// launch; the lanes of a warp on one column add once). A row is chosen where its bit is set
// (bits, gs_mark_bits) or, with bits null, where newpos[r] >= 0. n > 0: a super-batch (rows
// of batch b at b * n), as for every kernel here.
extern "C" __global__ void gs_kept_counts(const gs_idx* __restrict__ indptr,
                                          const gs_idx* __restrict__ rows,
                                          const gs_i64* __restrict__ cols, gs_i64 C,
                                          const gs_i64* __restrict__ ptr, gs_i64 n,
                                          const int* __restrict__ newpos,
                                          const unsigned* __restrict__ bits,
                                          gs_i64* __restrict__ counts) {
    GS_TILES(g0, t, ptr, C, true) {
        GS_LOAD_ITEMS(g0, t, r, e, c)
        bool keep[GS_ITEMS];
#pragma unroll
        for (int j = 0; j < GS_ITEMS; ++j) keep[j] = r[j] >= 0 && gs_drawn(bits, newpos, r[j]);
#pragma unroll
        for (int j = 0; j < GS_ITEMS; ++j) {
            const unsigned peers = __match_any_sync(0xFFFFFFFFu,
                                                    (unsigned long long)(keep[j] ? c[j] : -1));
            if (keep[j] && (int)(threadIdx.x & 31) == __ffs(peers) - 1)
                atomicAdd((unsigned long long*)&counts[c[j]], (unsigned long long)__popc(peers));
        }
    }
}

// The kept edges (a drawn row's, as gs_kept_counts tests it) listed in any order by their
// place in the frontier g: list[0 .. *count - 1] (*count: zero before the launch; places
// past `room` are counted, not written: the caller then takes the ordered passes). A block
// adds its tile's kept edges to the count once (a block scan places them): a warp's add
// each, on the one word, queued at the L2 where many warps keep an edge (FastGCN's hub
// rows). (LADIES keeps about one frontier edge in 200: a sort of the list orders them for
// less than a second ordered pass over all.)
extern "C" __global__ void gs_kept_append(const gs_idx* __restrict__ indptr,
                                          const gs_idx* __restrict__ rows,
                                          const gs_i64* __restrict__ cols, gs_i64 C,
                                          const gs_i64* __restrict__ ptr, gs_i64 n,
                                          const int* __restrict__ newpos,
                                          const unsigned* __restrict__ bits,
                                          gs_i64* __restrict__ count, gs_i64 room,
                                          gs_i64* __restrict__ list, int sub) {
    __shared__ gs_i64 base;
    GS_TILES_OF(g0, t, ptr, C, true, sub) for (int s = 0; s < sub; ++s) {
        const gs_i64 gs = g0 + s * (gs_i64)blockDim.x * GS_ITEMS;
        GS_LOAD_ITEMS(gs, t, r, e, c)
        bool keep[GS_ITEMS];
        gs_i64 mine = 0;
#pragma unroll
        for (int j = 0; j < GS_ITEMS; ++j) {
            keep[j] = r[j] >= 0 && gs_drawn(bits, newpos, r[j]);
            mine += keep[j];
        }
        gs_i64 total;
        const gs_i64 local = gs_block_exclusive(mine, &total);
        if (threadIdx.x == 0)
            base = total ? (gs_i64)atomicAdd((unsigned long long*)count, (unsigned long long)total)
                         : 0;
        __syncthreads();
        gs_i64 at = base + local;
        __syncthreads();                                 // base is read before the next tile
#pragma unroll
        for (int j = 0; j < GS_ITEMS; ++j)
            if (keep[j]) {
                if (at < room) list[at] = gs + j * (gs_i64)blockDim.x + threadIdx.x;
                ++at;
            }
    }
}

// Kept edge i at frontier place g[i] (ascending: the frontier's order): rows_out[i] its
// row's position among the chosen, pos_out[i] its graph edge.
extern "C" __global__ void gs_kept_listed(const gs_idx* __restrict__ indptr,
                                          const gs_idx* __restrict__ rows,
                                          const gs_i64* __restrict__ cols, gs_i64 C,
                                          const gs_i64* __restrict__ ptr, gs_i64 n,
                                          const int* __restrict__ newpos,
                                          const gs_i64* __restrict__ g, gs_i64 K,
                                          gs_i64* __restrict__ rows_out,
                                          gs_i64* __restrict__ pos_out) {
    gs_tile_t all;                                  // every column, none staged
    all.lo = 0;
    all.hi = C - 1;
    all.ptr = all.base = all.shift = nullptr;
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < K;
         i += (gs_i64)gridDim.x * blockDim.x) {
        gs_i64 c, shift;
        const gs_i64 e = gs_frontier_edge(all, indptr, cols, ptr, n, g[i], &c, &shift);
        rows_out[i] = newpos[(gs_i64)rows[e] + shift];
        pos_out[i] = e;
    }
}

// One kept edge's outputs at place `at` (below K): its row (or position), graph edge, value
// (vsize 4 or 8 bytes, copied as bits; else none) and id (none for null eids): as
// gs_kept_edges and gs_kept_masked_warps write them.
__device__ __forceinline__ void gs_kept_put(gs_i64 at, gs_i64 row, gs_i64 edge,
                                            gs_i64* __restrict__ rows_out,
                                            gs_i64* __restrict__ pos_out,
                                            const void* __restrict__ values,
                                            void* __restrict__ values_out, int vsize,
                                            const gs_i64* __restrict__ eids,
                                            gs_i64* __restrict__ eids_out) {
    rows_out[at] = row;
    pos_out[at] = edge;
    if (vsize == 4)
        static_cast<unsigned*>(values_out)[at] = static_cast<const unsigned*>(values)[edge];
    else if (vsize == 8)
        static_cast<unsigned long long*>(values_out)[at] =
            static_cast<const unsigned long long*>(values)[edge];
    if (eids != nullptr) eids_out[at] = eids[edge];
}

// The kept edges in the frontier's order (column after column, each column's in graph order):
// rows_out (the chosen row's position), pos_out (the edge's position in the graph). One tile
// per block, taken by ticket, each thread GS_ITEMS consecutive edges of it (one block scan
// orders the tile, where a scan per item, in the order of GS_LOAD_ITEMS, would synchronise
// the block GS_ITEMS times); a tile's place in the output is the kept edges of the tiles
// before it (a single-pass scan, scan.cuh; state: 1 + tiles words, zero before the launch).
// With vsize 4 or 8, each kept edge's value (values: the graph's, vsize bytes an edge, copied
// as bits) goes to values_out at its place; with eids, its edge id to eids_out: the gathers
// the host would otherwise run after the pass (an index_select each: a launch and its host
// work on every layer). With bits, a row is kept where its bit is set, and newpos is read
// only for such a row. newpos null (bits given): rows_out holds the kept edge's row itself
// (b * n + row in a super-batch), which the caller maps to its position (ShaDow's induced
// subgraph where a newpos over N graphs' rows would outweigh its kept edges).
// The block scan places each kept edge in the tile before the look-back ends: its row and
// edge wait in shared memory at that place, and after the look-back the block writes the
// tile's kept edges together, thread i the tile's i-th, i + blockDim-th, ... (a thread
// writing its own at its own places made every store of a warp touch 32 sectors for 8 bytes
// each). The same edges at the same places: only the thread that writes one changes.
// Blocks of GS_KEPT_THREADS (the host's _THREADS; the launch bounds refuse more), at most
// 32 registers a thread with GS_KEPT_MIN_BLOCKS 8 on sm_90 (a full SM; no spills, which
// tests/backend/test_kernels_ptx.py checks). Other SMs get no register cap: an sm_80 SM's
// shared memory holds 6 of these blocks, not 8, and 32 registers spill there; sm_86, sm_89
// and sm_120 SMs hold 1536 threads, and ptxas ignores the bound.
#define GS_KEPT_THREADS 256
#define GS_KEPT_TILE (GS_KEPT_THREADS * GS_ITEMS)
#ifndef GS_KEPT_MIN_BLOCKS
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900
#define GS_KEPT_MIN_BLOCKS 8
#else
#define GS_KEPT_MIN_BLOCKS 1
#endif
#endif
extern "C" __global__ void __launch_bounds__(GS_KEPT_THREADS, GS_KEPT_MIN_BLOCKS)
gs_kept_edges(const gs_idx* __restrict__ indptr,
              const gs_idx* __restrict__ rows,
              const gs_i64* __restrict__ cols, gs_i64 C,
              const gs_i64* __restrict__ ptr, gs_i64 n,
              const int* __restrict__ newpos,
              const unsigned* __restrict__ bits,
              gs_u64* __restrict__ state,
              gs_i64* __restrict__ rows_out,
              gs_i64* __restrict__ pos_out,
              const void* __restrict__ values,
              void* __restrict__ values_out, int vsize,
              const gs_i64* __restrict__ eids,
              gs_i64* __restrict__ eids_out) {
    __shared__ gs_i64 s_row[GS_KEPT_TILE], s_edge[GS_KEPT_TILE];
    const gs_i64 E = ptr[C];
    const gs_i64 size = (gs_i64)blockDim.x * GS_ITEMS;
    const gs_i64 tile = gs_scan_ticket(state);
    const gs_i64 g0 = tile * size;
    const gs_i64 gs_E = E;
    const gs_tile_t t = gs_tile_columns(indptr, cols, ptr, C, n, g0, min(E, g0 + size), true);
    GS_LOAD_RUN(g0, t, r, e, c)
    gs_i64 p[GS_ITEMS];
    gs_i64 mine = 0;
    const bool tested = bits != nullptr || newpos != nullptr;  // neither: nothing is kept
#pragma unroll
    for (int j = 0; j < GS_ITEMS; ++j) {
        p[j] = r[j] >= 0 && tested && gs_drawn(bits, newpos, r[j])
                   ? (newpos != nullptr ? (gs_i64)newpos[r[j]] : r[j])
                   : -1;
        mine += p[j] >= 0;
    }
    gs_i64 total;
    const gs_i64 local = gs_block_exclusive(mine, &total, false);
    int at = (int)local;                    // below total <= blockDim * GS_ITEMS
#pragma unroll
    for (int j = 0; j < GS_ITEMS; ++j) {
        if (p[j] >= 0) {
            if (at < GS_KEPT_TILE) {
                s_row[at] = p[j];
                s_edge[at] = e[j];
            }
            ++at;
        }
    }
    const gs_i64 before = gs_scan_exclusive(state, tile, total);   // (synchronises: staged)
    const int kept = (int)min(total, (gs_i64)GS_KEPT_TILE);
#pragma unroll
    for (int k = 0; k < GS_ITEMS; ++k) {
        const int i = k * (int)blockDim.x + (int)threadIdx.x;
        if (i >= kept) break;
        // (the edge read first: the order its registers were fitted with)
        const gs_i64 to = before + i, edge = s_edge[i];
        gs_kept_put(to, s_row[i], edge, rows_out, pos_out, values, values_out, vsize, eids,
                    eids_out);
    }
}

// ----------------------------------------------------------------------------- kept mask
// Where the frontier's edge count is read back before its kept edges are counted (a
// super-batch's A[rows, cols]: ShaDow's induced subgraph, a third of 40M frontier edges a
// mini-batch kept), three launches replace gs_kept_counts and gs_kept_edges, and only the
// first tests rows (a random 4-byte read of the bits an edge: most of gs_kept_edges' L2
// traffic, and the link of its chain of dependent loads between the row and its position):
// - gs_kept_mask_warps (below): frontier edge g kept as bit g % 32 of mask[g / 32] (a warp's
//   ballot over 32 consecutive edges: one word), and each tile's kept edges in its[tile]
//   (tiles of GS_KEPT_TILE edges); no atomics, no __match_any_sync;
// - (the host: before[t], the kept edges of the tiles before t; before[tiles] all of them)
// - gs_kept_ptr: the kept edges' column pointer: ptr_out[c], the kept edges before frontier
//   edge ptr[c] (its tile's before and the mask's bits of the tile before it);
// - gs_kept_masked_warps (below): the kept edges in the frontier's order, each at its tile's
//   before, plus its word's place in the tile (a warp's scan of the tile's 32 words), plus
//   its lane's: no ticket, look-back, block scan or staged edges (the warps run apart, and
//   the kept edges of one word go to consecutive places: a warp's stores cover whole sectors
//   but at its ends), and an edge not kept reads nothing.
// mask: words = tiles * GS_KEPT_TILE / 32 words (every one written: a tile's items past
// the frontier's end are not kept); its: tiles words.

// ptr_out[c] for c in [0, C]: the kept edges before frontier edge ptr[c] (all of them,
// before[tiles], at or past the frontier's end).
extern "C" __global__ void gs_kept_ptr(const gs_i64* __restrict__ ptr, gs_i64 C,
                                       const unsigned* __restrict__ mask, gs_i64 words,
                                       const gs_i64* __restrict__ before, gs_i64 tiles,
                                       gs_i64* __restrict__ ptr_out) {
    const gs_i64 E = ptr[C];
    for (gs_i64 c = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; c <= C;
         c += (gs_i64)gridDim.x * blockDim.x) {
        const gs_i64 g = ptr[c], tile = g / GS_KEPT_TILE;
        gs_i64 k = before[tiles];
        if (g >= 0 && g < E && tile < tiles && (g >> 5) < words) {
            k = before[tile];
            for (gs_i64 w = tile * (GS_KEPT_TILE / 32); w < (g >> 5); ++w) k += __popc(mask[w]);
            k += __popc(mask[g >> 5] & ((1u << (g & 31)) - 1u));
        }
        ptr_out[c] = k;
    }
}

// Lane i: v of lanes 0 .. i summed (a warp's inclusive scan by shuffles: every lane,
// converged); the masked passes' scan of a tile's 32 words' kept edges.
__device__ __forceinline__ int gs_warp_inclusive(int v, int lane) {
    for (int d = 1; d < 32; d <<= 1) {
        const int y = __shfl_up_sync(0xFFFFFFFFu, v, d);
        if (lane >= d) v += y;
    }
    return v;
}

// ----------------------------------------------------------------------------- warp cursor
// gs_batch(id, n) for 0 <= id (a column's checked id) without the 64-bit division's
// subroutine: in a warp's loop its call left ptxas too few registers for the values live
// across it. Where both do not fit 32 bits, a restoring long division, a bit a step (r stays
// below n < 2**63: its shift does not wrap).
__device__ __forceinline__ gs_i64 gs_batch_inline(gs_i64 id, gs_i64 n) {
    if ((gs_u64)id <= 0xFFFFFFFFULL && (gs_u64)n <= 0xFFFFFFFFULL)
        return (gs_i64)((unsigned)id / (unsigned)n);
    gs_u64 q = 0, r = 0;
#pragma unroll 1
    for (int i = 63; i >= 0; --i) {
        r = r << 1 | (((gs_u64)id >> i) & 1u);
        if (r >= (gs_u64)n) {
            r -= (gs_u64)n;
            q |= 1ULL << i;
        }
    }
    return (gs_i64)q;
}

// A warp that takes consecutive windows of 32 frontier edges (lane i edge a + i) keeps the
// column of its last edge as it goes, instead of a block staging a tile's columns: a column
// of the products-like frontiers holds hundreds of edges, so most windows lie in the
// cursor's column (the graph edge an addition, no search, no load and no barrier) and the
// others search only the next 32 columns (a load a lane and a 32-way search by shuffles).
// Warp-uniform; every lane holds the same.
struct gs_cursor_t {
    gs_i64* c;      // a column holding an edge before the warp's next window (ptr[*c] <= a;
                    // in shared memory, a slot a warp: read only past a column's end, not a
                    // register held through the loop)
    gs_i64 end;     // ptr[*c + 1] (-1 before the first window: no column yet)
    gs_i64 base;    // graph edge of frontier edge g of column c: base + g
    gs_i64 shift;   // row offset of c's batch
};

__device__ __forceinline__ gs_cursor_t gs_cursor_start() {
    __shared__ gs_i64 columns[32];
    gs_cursor_t cur;
    cur.c = &columns[threadIdx.x >> 5];
    if ((threadIdx.x & 31) == 0) *cur.c = 0;    // ptr[0] = 0: before every edge
    __syncwarp();
    cur.end = -1;
    cur.base = cur.shift = 0;
    return cur;
}

// The window of frontier edges a .. a + 31 (warp-uniform; call from every lane, converged,
// windows in ascending order; the callers take a window wholly in the cursor's column,
// a + 31 < cur.end, themselves: its edges are cur.base + a + lane): lane i's graph edge
// (*e; -1 for an edge at or past E = ptr[C]) and its batch's row offset (*shift); the cursor
// moves to the column of the window's last edge before E. A column's id is read only for a
// column that holds an edge (a bad id or a padding column is empty: gs_frontier_ptr); every
// ptr index is clamped to [0, C].
__device__ __forceinline__ void gs_cursor_window(gs_cursor_t& cur,
                                                 const gs_idx* __restrict__ indptr,
                                                 const gs_i64* __restrict__ cols, gs_i64 C,
                                                 const gs_i64* __restrict__ ptr, gs_i64 n,
                                                 gs_i64 a, gs_i64* e, gs_i64* shift) {
    const int lane = threadIdx.x & 31;
    // the 32 columns after the cursor's: their starts (ptr[C] = E, above every edge, past
    // the last) as offsets in the window, clamped to [-1, 32] (32 bits)
    const gs_i64 E = ptr[C];                     // (read here: a register less outside)
    if (a >= E) {                                // no edge: the cursor stays
        *e = -1;
        *shift = 0;
        return;
    }
    gs_i64 col = *cur.c;
    gs_i64 q = ptr[min(col + 1 + lane, C)];
    if (__shfl_sync(0xFFFFFFFFu, q, 31) <= a) {  // past them: a warp search
        col += 32 + gs_owner_warp(ptr + col + 32, C - col - 32, a);   // (col + 32 < C here)
        q = ptr[min(col + 1 + lane, C)];
    }
    const int dq = (int)max((gs_i64)-1, min(q - a, (gs_i64)32));
    int k = 0;                                   // of those starts, the ones at or before
    for (int s = 16; s > 0; s >>= 1)             // this lane's edge
        if (__shfl_sync(0xFFFFFFFFu, dq, k + s - 1) <= lane) k += s;
    if (__shfl_sync(0xFFFFFFFFu, dq, 31) <= lane) k = 32;
    const bool live = a + lane < E;
    col += k;
    if (live && k == 32)        // more than 32 columns in the window (empty ones): searched
        col += gs_owner(ptr + col, C - col, a + lane);   // (ptr[col] <= a + lane < E)
    gs_i64 base = 0, sh = 0;
    if (live) {                                  // col holds the edge: a good id
        const gs_i64 id = cols[col];
        const gs_i64 b = n > 0 ? gs_batch_inline(id, n) : 0;
        base = (gs_i64)indptr[id - b * n] - ptr[col];
        sh = b * n;
    }
    *e = live ? base + a + lane : -1;
    *shift = sh;
    const int last = 31 - __clz(__ballot_sync(0xFFFFFFFFu, live));   // (lane 0 is: a < E)
    col = __shfl_sync(0xFFFFFFFFu, col, last);
    cur.base = __shfl_sync(0xFFFFFFFFu, base, last);
    cur.shift = __shfl_sync(0xFFFFFFFFu, sh, last);
    cur.end = ptr[col + 1];                      // (col < C: it holds an edge)
    __syncwarp();                                // (every lane read the slot before)
    if (lane == 0) *cur.c = col;
    __syncwarp();
}

// for each tile t of this warp: runs of `run` consecutive tiles (the host's, at least 1:
// tiles / warps rounded up, one run a warp), run r of the launch to warp r % warps, so its
// cursor moves forward only (any run covers [0, tiles)).
#define GS_WARP_TILES(t, tiles, run)                                                  \
    for (int gs_k = 0, gs_once = 1; gs_once; gs_once = 0)                             \
        for (gs_i64 t = (((gs_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5) * (run); \
             t < (tiles);                                                             \
             t += ++gs_k < (run) ? 1 : (gs_k = 0,                                     \
                                        1 + ((((gs_i64)gridDim.x * blockDim.x) >> 5) - 1) * (run)))

// ----------------------------------------------------------------------------- kept mask, warps
// The mask passes take a warp, not a block, to a tile: a block tile would wait at block
// barriers while two warps searched the whole frontier pointer (a 32-way search: 4 to 5
// dependent loads) and the block staged the tile's columns (2 more), then each edge would
// search the staged columns in shared memory. Here each warp takes a run of consecutive
// tiles (GS_WARP_TILES) and walks their windows of 32 edges in order with a column cursor
// (gs_cursor_window): no search of the pointer but the run's first (and a skip past 32
// columns), no staging, no barrier. The windows wholly in the cursor's column (most: a column of the products-like frontiers holds
// hundreds of edges) go up to GS_ITEMS at a time, their rows' loads, then their bits' (or
// outputs'), in flight together; a window past the column's end goes alone, the cursor
// moved first. A tile's 32 words are its warp's 32 ballots, one a lane, and its count their
// sum: one coalesced store each. Blocks of GS_KEPT_THREADS, at most 40 registers a thread
// on sm_90 (GS_WARPS_MIN_BLOCKS 6: at 32, ptxas spilled the cursor and the run; the host's
// grid is one wave of 6 blocks an SM, _WARP_BLOCKS); any grid is correct (a run after
// another, or none).
#ifndef GS_WARPS_MIN_BLOCKS
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900
#define GS_WARPS_MIN_BLOCKS 6
#else
#define GS_WARPS_MIN_BLOCKS 1
#endif
#endif
extern "C" __global__ void __launch_bounds__(GS_KEPT_THREADS, GS_WARPS_MIN_BLOCKS)
gs_kept_mask_warps(const gs_idx* __restrict__ indptr,
                   const gs_idx* __restrict__ rows,
                   const gs_i64* __restrict__ cols, gs_i64 C,
                   const gs_i64* __restrict__ ptr, gs_i64 n,
                   const int* __restrict__ newpos,
                   const unsigned* __restrict__ bits,
                   unsigned* __restrict__ mask, gs_i64 words,
                   gs_i64* __restrict__ its, gs_i64 tiles, int run) {
    const int lane = threadIdx.x & 31;
    const bool tested = bits != nullptr || newpos != nullptr;  // neither: nothing is kept
    gs_cursor_t cur = gs_cursor_start();
    GS_WARP_TILES(t, tiles, run) {
        unsigned mine = 0u;                              // lane i: the tile's word i
        for (int i = 0; i < GS_KEPT_TILE / 32;) {
            const gs_i64 a = t * GS_KEPT_TILE + (gs_i64)i * 32;
            // the windows from a wholly in the cursor's column, up to GS_ITEMS in the tile
            const int m = (int)max((gs_i64)0, min((cur.end - a) >> 5,
                                                  (gs_i64)min(GS_ITEMS, GS_KEPT_TILE / 32 - i)));
            if (m > 0) {
                gs_idx row[GS_ITEMS];
#pragma unroll
                for (int j = 0; j < GS_ITEMS; ++j)
                    row[j] = j < m ? rows[cur.base + a + 32 * j + lane] : 0;
                bool keep[GS_ITEMS];    // all tested before the first ballot (their loads
#pragma unroll                                  // in flight together)
                for (int j = 0; j < GS_ITEMS; ++j) {
                    const gs_i64 r = (gs_i64)row[j] + cur.shift;
                    keep[j] = j < m && r >= 0 && tested && gs_drawn(bits, newpos, r);
                }
#pragma unroll
                for (int j = 0; j < GS_ITEMS; ++j) {
                    const unsigned word = __ballot_sync(0xFFFFFFFFu, keep[j]);
                    if (lane == i + j) mine = word;
                }
                i += m;
                continue;
            }
            gs_i64 e, shift;
            gs_cursor_window(cur, indptr, cols, C, ptr, n, a, &e, &shift);
            const gs_i64 r = e >= 0 ? (gs_i64)rows[e] + shift : -1;
            const bool keep = r >= 0 && tested && gs_drawn(bits, newpos, r);
            const unsigned word = __ballot_sync(0xFFFFFFFFu, keep);
            if (lane == i) mine = word;
            ++i;
        }
        const gs_i64 w = t * (GS_KEPT_TILE / 32) + lane;
        if (w < words) mask[w] = mine;
        int count = __popc(mine);                        // the tile's kept edges (lane 0)
        for (int d = 16; d > 0; d >>= 1) count += __shfl_down_sync(0xFFFFFFFFu, count, d);
        if (lane == 0) its[t] = count;                   // (t < tiles: GS_WARP_TILES)
    }
}

// out[first + place] = in[edge] for the kept edges of GS_ITEMS windows in one column
// (gs_kept_masked_warps' at: place << 5 | window, -1 for none; edge = e0 + 32 * window): all
// loads before the first store, which they would wait for otherwise.
template <typename T>
__device__ __forceinline__ void gs_kept_copy(const int* at, gs_i64 first, gs_i64 e0,
                                             const T* __restrict__ in, T* __restrict__ out) {
    T v[GS_ITEMS];
#pragma unroll
    for (int j = 0; j < GS_ITEMS; ++j) v[j] = at[j] >= 0 ? in[e0 + 32 * (at[j] & 31)] : T();
#pragma unroll
    for (int j = 0; j < GS_ITEMS; ++j)
        if (at[j] >= 0) out[first + (at[j] >> 5)] = v[j];
}

// The kept edges of gs_kept_mask_warps' mask, K of them (before[tiles]), in the frontier's
// order: rows_out, pos_out, values_out and eids_out as gs_kept_edges writes them (newpos
// null: the row itself). A warp's tile's 32 words, one a lane, scanned by shuffles, give each
// kept edge's place (its tile's before, the words before its word, the lanes below it); the
// warp visits only the windows whose word is not zero, those wholly in the cursor's column
// up to GS_ITEMS at a time (their rows, positions, values and ids loaded together), its
// cursor skipping the others. A kept edge's place is bounded by K, every word's index by
// words and every tile's by tiles.
extern "C" __global__ void __launch_bounds__(GS_KEPT_THREADS, GS_WARPS_MIN_BLOCKS)
gs_kept_masked_warps(const gs_idx* __restrict__ indptr,
                     const gs_idx* __restrict__ rows,
                     const gs_i64* __restrict__ cols, gs_i64 C,
                     const gs_i64* __restrict__ ptr, gs_i64 n,
                     const int* __restrict__ newpos,
                     const unsigned* __restrict__ mask, gs_i64 words,
                     const gs_i64* __restrict__ before, gs_i64 tiles, int run, gs_i64 K,
                     gs_i64* __restrict__ rows_out,
                     gs_i64* __restrict__ pos_out,
                     const void* __restrict__ values,
                     void* __restrict__ values_out, int vsize,
                     const gs_i64* __restrict__ eids,
                     gs_i64* __restrict__ eids_out) {
    const int lane = threadIdx.x & 31;
    const unsigned below = (1u << lane) - 1u;
    gs_cursor_t cur = gs_cursor_start();
    GS_WARP_TILES(t, tiles, run) {
        const gs_i64 w = t * (GS_KEPT_TILE / 32) + lane;
        const unsigned word = w < words ? mask[w] : 0u;
        const gs_i64 first = before[t];                  // (t < tiles: GS_WARP_TILES)
        const int inc = gs_warp_inclusive(__popc(word), lane);   // the tile's words scanned
        const int off0 = inc - __popc(word);             // lane i: word i's first place
        const gs_i64 g0 = t * GS_KEPT_TILE;
        unsigned left = __ballot_sync(0xFFFFFFFFu, word != 0u);   // the windows to visit
        while (left) {
            // the windows below `lim` lie wholly in the cursor's column
            const gs_i64 lim = (cur.end - g0) >> 5;
            unsigned in = lim >= 32 ? left : lim <= 0 ? 0u : left & ((1u << lim) - 1u);
            if (in) {                   // up to GS_ITEMS of them (left's lowest bits) together
                // each as this lane's place in the tile (bits 5 on) and its index (bits 0-4);
                // -1: no kept edge in this lane, or no window
                int at[GS_ITEMS];
#pragma unroll
                for (int j = 0; j < GS_ITEMS; ++j) {
                    const int i = in ? __ffs(in) - 1 : 0;
                    const unsigned mw = __shfl_sync(0xFFFFFFFFu, word, i);
                    const int o = __shfl_sync(0xFFFFFFFFu, off0, i) + __popc(mw & below);
                    at[j] = in && ((mw >> lane) & 1u) ? o << 5 | i : -1;
                    if (in) left &= left - 1u;           // (in's lowest bit is left's)
                    in &= in - 1u;
                }
                // each one's row (or with newpos its position: an int either way in the
                // registers of a graph of int32 indices)
                gs_idx r[GS_ITEMS];
#pragma unroll
                for (int j = 0; j < GS_ITEMS; ++j)
                    r[j] = at[j] >= 0 ? rows[cur.base + g0 + 32 * (at[j] & 31) + lane] : 0;
                if (newpos != nullptr) {
#pragma unroll
                    for (int j = 0; j < GS_ITEMS; ++j)
                        if (at[j] >= 0) r[j] = newpos[(gs_i64)r[j] + cur.shift];
                }
                // then the outputs, each array's loads (values, ids) before its stores
#pragma unroll
                for (int j = 0; j < GS_ITEMS; ++j) {
                    if (at[j] < 0 || first + (at[j] >> 5) >= K) at[j] = -1;   // (bounded)
                    if (at[j] < 0) continue;
                    const gs_i64 to = first + (at[j] >> 5);
                    rows_out[to] = newpos != nullptr ? (gs_i64)r[j] : (gs_i64)r[j] + cur.shift;
                    pos_out[to] = cur.base + g0 + 32 * (at[j] & 31) + lane;
                }
                if (vsize == 4)
                    gs_kept_copy(at, first, cur.base + g0 + lane,
                                 static_cast<const unsigned*>(values),
                                 static_cast<unsigned*>(values_out));
                else if (vsize == 8)
                    gs_kept_copy(at, first, cur.base + g0 + lane,
                                 static_cast<const unsigned long long*>(values),
                                 static_cast<unsigned long long*>(values_out));
                if (eids != nullptr) gs_kept_copy(at, first, cur.base + g0 + lane, eids, eids_out);
                continue;
            }
            // the first window left, past the column's end: alone, the cursor moved first
            const int i = __ffs(left) - 1;
            left &= left - 1u;
            const unsigned mw = __shfl_sync(0xFFFFFFFFu, word, i);
            const gs_i64 to = first + __shfl_sync(0xFFFFFFFFu, off0, i) + __popc(mw & below);
            gs_i64 e, shift;            // (-1 past the frontier's end, where a word keeps none)
            gs_cursor_window(cur, indptr, cols, C, ptr, n, g0 + (gs_i64)i * 32, &e, &shift);
            if (!((mw >> lane) & 1u) || e < 0 || to >= K) continue;
            const gs_i64 r = (gs_i64)rows[e] + shift;
            gs_kept_put(to, newpos != nullptr ? (gs_i64)newpos[r] : r, e, rows_out, pos_out,
                        values, values_out, vsize, eids, eids_out);
        }
    }
}
