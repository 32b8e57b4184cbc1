// Frontier tiles: what the kernel families that run over a frontier's edges share
// (kernels/layerwise.cu, kernels/rowsum.cu). The frontier is a buffer of C ids of which
// *ncols are real (C when null); n > 0: a super-batch (ids b * n + v; node v of the graph,
// rows b * n + row). Its edges are numbered column after column (g = 0 .. ptr[C] - 1, ptr
// its edge pointer: gs_frontier_ptr of kernels/layerwise.cu) and cut into tiles of equal
// size, whatever the columns' degrees.
#pragma once

#include "hash.cuh"
#include "scan.cuh"
#include "search.cuh"

#ifndef GS_IDX
#define GS_IDX long long
#endif
#ifndef GS_DTYPE0
#define GS_DTYPE0 float
#endif
typedef GS_IDX gs_idx;
typedef GS_DTYPE0 gs_t;

// The batch of an encoded id (id / n; n > 0), by a 32-bit division where both fit (a 64-bit
// one is a long subroutine, run here for every row of a super-batch's row space).
__device__ __forceinline__ gs_i64 gs_batch(gs_i64 id, gs_i64 n) {
    if ((gs_u64)id <= 0xFFFFFFFFULL && (gs_u64)n <= 0xFFFFFFFFULL)
        return (gs_i64)((unsigned)id / (unsigned)n);
    return id / n;
}

// Column c of the frontier: its graph node's edge range and the row offset of its batch;
// false for a padding column. An id outside [0, M) (M: the graph's nodes, times the
// mini-batches of a super-batch) is checked here, whoever made the frontier (err, as
// kernels/nodewise.cu's: err[0] a negative one, err[1] one >= M, err[2] / err[3] the
// smallest / largest such id, err[4] any), and is an empty column, so no kernel reads out of
// bounds (the others reach a column's edges only through ptr, and only non-empty ones).
__device__ __forceinline__ bool gs_column(const gs_idx* __restrict__ indptr,
                                          const gs_i64* __restrict__ cols, gs_i64 c, gs_i64 m,
                                          gs_i64 n, gs_i64 M, gs_i64* __restrict__ err,
                                          gs_i64* start, gs_i64* end, gs_i64* shift) {
    if (c >= m) return false;
    const gs_i64 id = cols[c];
    if (!gs_in_range(id, M)) {
        if (id < 0) { err[0] = 1; atomicMin((long long*)&err[2], (long long)id); }
        else { err[1] = 1; atomicMax((long long*)&err[3], (long long)id); }
        err[4] = 1;
        return false;
    }
    const gs_i64 b = n > 0 ? gs_batch(id, n) : 0;
    const gs_i64 v = id - b * n;
    *start = (gs_i64)indptr[v];
    *end = (gs_i64)indptr[v + 1];
    *shift = b * n;
    return true;
}

__device__ __forceinline__ double gs_value(const gs_t* __restrict__ values, gs_i64 e) {
    return values == nullptr ? 1.0 : (double)values[e];
}


// ----------------------------------------------------------------------------- frontier edges
// The kernels below run over the frontier's edges, not its columns: a block per column left
// a hub's column (10**5 edges of an R-MAT graph) to one block while the others idled. The
// frontier's edges are numbered column after column (g = 0 .. ptr[C] - 1, ptr the frontier's
// edge pointer), and tiles of blockDim * GS_ITEMS consecutive g go to the blocks in turn:
// every thread has the same work whatever the degrees, and the edges of a tile keep the
// frontier's order (what the compaction of kept edges needs).
#define GS_ITEMS 4

// A tile's columns [lo, hi] (those holding its frontier edges g0 .. g1 - 1; two warps
// search, gs_owner_warp, the block shares them). With `stage`, when they are at most
// GS_STAGE, the block also keeps each one's edge pointer, first graph edge and batch offset
// in shared memory, read once per column: an edge's column is then a search in shared
// memory and its graph edge an addition, not a search of the frontier's pointer and three
// dependent loads (the kept-edge passes, the chunked row sums and the frontier totals, bound
// by those loads, stage; the row-sum passes over the row space are bound by their atomics
// instead, gain nothing, and are not staged).
#define GS_STAGE 256

struct gs_tile_t {
    gs_i64 lo, hi;
    const gs_i64* ptr;          // staged columns (shared memory); null: not staged
    const gs_i64* base;         // graph edge of frontier edge g: base[i] + g
    const gs_i64* shift;        // row offset of the column's batch
};

// gs_owner(ptr, n, x) by the 32 lanes of a warp (call from all of them): a 32-way search,
// a load per lane a step, 4 steps for a frontier of 10**6 columns where a binary search is
// 20 dependent loads (a tile's two searches by one thread would hold up the whole block at
// the start of every pass over a super-batch's frontier). ptr[0] <= x.
__device__ __forceinline__ gs_i64 gs_owner_warp(const gs_i64* __restrict__ ptr, gs_i64 n,
                                                gs_i64 x) {
    const int lane = threadIdx.x & 31;
    gs_i64 lo = 0, hi = n;                             // the answer is in [lo, hi)
    while (hi - lo > 1) {
        const gs_i64 step = (hi - lo + 31) / 32;
        const gs_i64 at = lo + lane * step;
        const unsigned ok = __ballot_sync(0xFFFFFFFFu, lane == 0 || (at < hi && ptr[at] <= x));
        const gs_i64 last = 31 - __clz(ok);             // lane 0's probe, lo, always holds
        lo += last * step;
        hi = min(hi, lo + step);
    }
    return lo;
}

// call from every thread: it synchronises the block (of at least 64 threads)
__device__ __forceinline__ gs_tile_t gs_tile_columns(const gs_idx* __restrict__ indptr,
                                                     const gs_i64* __restrict__ cols,
                                                     const gs_i64* __restrict__ ptr, gs_i64 C,
                                                     gs_i64 n, gs_i64 g0, gs_i64 g1,
                                                     bool stage) {
    __shared__ gs_i64 bounds[2];
    __shared__ gs_i64 s_ptr[GS_STAGE], s_base[GS_STAGE], s_shift[GS_STAGE];
    __syncthreads();                                   // the previous tile's readers are done
    if (threadIdx.x < 64) {                            // a warp for each bound
        const gs_i64 b = gs_owner_warp(ptr, C, threadIdx.x < 32 ? g0 : g1 - 1);
        if ((threadIdx.x & 31) == 0) bounds[threadIdx.x >> 5] = b;
    }
    __syncthreads();
    gs_tile_t t;
    t.lo = bounds[0];
    t.hi = bounds[1];
    t.ptr = t.base = t.shift = nullptr;
    const gs_i64 m = t.hi - t.lo + 1;
    if (stage && m <= GS_STAGE) {                      // (the same for the whole block)
        for (gs_i64 i = threadIdx.x; i < m; i += blockDim.x) {
            const gs_i64 c = t.lo + i, p0 = ptr[c];
            s_ptr[i] = p0;
            if (ptr[c + 1] > p0) {      // an empty column (a bad id's too) owns no edge
                const gs_i64 id = cols[c];
                const gs_i64 b = n > 0 ? gs_batch(id, n) : 0;
                s_base[i] = (gs_i64)indptr[id - b * n] - p0;
                s_shift[i] = b * n;
            }
        }
        __syncthreads();
        t.ptr = s_ptr;
        t.base = s_base;
        t.shift = s_shift;
    }
    return t;
}

// Frontier edge g of tile t: its column (*c), its edge in the graph (returned) and its
// batch's row offset (*shift).
__device__ __forceinline__ gs_i64 gs_frontier_edge(const gs_tile_t& t,
                                                   const gs_idx* __restrict__ indptr,
                                                   const gs_i64* __restrict__ cols,
                                                   const gs_i64* __restrict__ ptr, gs_i64 n,
                                                   gs_i64 g, gs_i64* c, gs_i64* shift) {
    if (t.ptr != nullptr) {
        const gs_i64 i = gs_owner(t.ptr, t.hi - t.lo + 1, g);
        *c = t.lo + i;
        *shift = t.shift[i];
        return t.base[i] + g;
    }
    const gs_i64 at = t.lo + gs_owner(ptr + t.lo, t.hi - t.lo + 1, g);
    const gs_i64 id = cols[at];
    const gs_i64 b = n > 0 ? gs_batch(id, n) : 0;
    *c = at;
    *shift = b * n;
    return (gs_i64)indptr[id - b * n] + (g - ptr[at]);
}

// for each tile of the frontier's E = ptr[C] edges (grid-stride), with g0 its first edge and
// t its columns (staged or not: gs_tile_columns); every thread of the block runs every
// iteration (the kernel's parameters indptr, cols and n are read). GS_TILES_OF's tiles hold
// `sub` rounds of blockDim * GS_ITEMS edges (`sub`: the same for the whole launch; the body
// loops over them, round s starting at g0 + s * blockDim * GS_ITEMS), so one search for a
// tile's columns (and one staging) serves them all; GS_TILES's hold one round
// (kernels/layerwise.cu says which passes gain from more).
#define GS_TILES_OF(g0, t, ptr, C, stage, sub)                                        \
    const gs_i64 gs_E = (ptr)[C];                                                     \
    const gs_i64 gs_tile = (gs_i64)blockDim.x * GS_ITEMS * (sub);                     \
    gs_tile_t t;                                                                      \
    for (gs_i64 g0 = blockIdx.x * gs_tile;                                            \
         g0 < gs_E && (t = gs_tile_columns(indptr, cols, ptr, C, n, g0,               \
                                           min(gs_E, g0 + gs_tile), stage), true);    \
         g0 += gridDim.x * gs_tile)

#define GS_TILES(g0, t, ptr, C, stage) GS_TILES_OF(g0, t, ptr, C, stage, 1)

// The items of a tile this thread takes, loaded for all GS_ITEMS before any is used (the
// loads of independent edges in flight together): frontier edge g(j) = g0 + j * blockDim +
// threadIdx's column c[j] (-1: none), graph edge e[j] and row r[j] (-1: none). With
// GS_LOAD_RUN, g(j) = g0 + threadIdx * GS_ITEMS + j: a thread's items are consecutive
// frontier edges (in the frontier's order thread after thread: one scan orders a tile).
#define GS_LOAD_ITEMS(g0, t, r, e, c)                                                 \
    GS_LOAD_AT(g0 + j * (gs_i64)blockDim.x + threadIdx.x, t, r, e, c)
#define GS_LOAD_RUN(g0, t, r, e, c)                                                   \
    GS_LOAD_AT(g0 + (gs_i64)threadIdx.x * GS_ITEMS + j, t, r, e, c)
#define GS_LOAD_AT(g_of_j, t, r, e, c)                                                \
    gs_i64 r[GS_ITEMS], e[GS_ITEMS], c[GS_ITEMS];                                     \
    _Pragma("unroll")                                                                 \
    for (int j = 0; j < GS_ITEMS; ++j) {                                              \
        const gs_i64 g = g_of_j;                                                      \
        r[j] = c[j] = -1;                                                             \
        e[j] = 0;                                                                     \
        if (g < gs_E) {                                                               \
            gs_i64 shift;                                                             \
            e[j] = gs_frontier_edge(t, indptr, cols, ptr, n, g, &c[j], &shift);       \
            r[j] = (gs_i64)rows[e[j]] + shift;                                        \
        }                                                                             \
    }
