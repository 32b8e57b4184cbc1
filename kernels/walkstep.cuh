// One walker's random walk (A.random_walk), shared by the walk kernels: gs_random_walk
// (kernels/walk.cu: every walker of a mini-batch or super-batch) and the generated fused
// gs.walk steps (kernels/fused_walk.cu: a short walk per step of a user's step). The
// algorithm and its draws are gsample/backend/torch/walk.py's (walk.cu's header says how).
#pragma once
#include "counters.cuh"
#include "hash.cuh"
#include "search.cuh"

#define GS_WALK_STRIDE (1LL << 32)
#define GS_WALK_MAX_ATTEMPTS (1LL << 20)

// GS_WALK_CACHE 1: the walks read a UVA graph's GPU cache (gs_walk_cache, from the kernel's
// arguments); 0, the default: those arguments are ignored and the walker compiles as it does
// without them (no registers held for them: a device-resident graph's walks).
#ifndef GS_WALK_CACHE
#define GS_WALK_CACHE 0
#endif

// GS_ROW: the type of the rows the walks read (int for a UVA graph's int32 rows in host
// memory, else long long); every other array of a walk is int64.
#ifndef GS_ROW
#define GS_ROW long long
#endif
typedef GS_ROW gs_row;

// A UVA graph's GPU cache as a walker reads it (gsample/formats/cache.py): slot[v] >= 0 puts
// column v's rows at crows + slot[v] (the same values as rows + indptr[v], so the walks are
// the same); slot null: no cached column. cE: crows' length (a column that would run past it
// is read from the graph). reads / hits: the rows this thread read and those the cache
// served, for gs_walk_count.
struct gs_walk_cache {
    const gs_i64* slot;
    const gs_i64* crows;
    gs_i64 cE;
    gs_i64 reads, hits;
};

// Where column cur (in [0, N): a seed checked by the kernel, a jump's draw or a row of the
// graph) of deg edges starts in the cache, or -1: its deg rows lie in [0, cE) or none is read
__device__ __forceinline__ gs_i64 gs_walk_cached(const gs_walk_cache& c, gs_i64 cur,
                                                 gs_i64 deg) {
    if (!GS_WALK_CACHE || c.slot == nullptr) return -1;
    const gs_i64 s = c.slot[cur];
    return s >= 0 && deg > 0 && s <= c.cE - deg ? s : -1;
}

// Adds the threads' counts to counters (null: none): counters[0] += the rows read,
// counters[1] += those from the cache; a warp's sums, one atomic each. Every lane of the
// warp calls this (after the kernel's walker loop: no lane has left it).
__device__ __forceinline__ void gs_walk_count(const gs_walk_cache& c,
                                              gs_i64* __restrict__ counters) {
    if (GS_WALK_CACHE) gs_count_reads(c.reads, c.hits, counters);
}

// Whether src is among the sorted rows [lo, hi) (the edge src -> column)
__device__ __forceinline__ bool gs_has_row(const gs_i64* __restrict__ rows, gs_i64 lo,
                                           gs_i64 hi, gs_i64 src) {
    while (lo < hi) {
        const gs_i64 mid = lo + ((hi - lo) >> 1);
        const gs_i64 r = rows[mid];
        if (r == src) return true;
        if (r < src) lo = mid + 1; else hi = mid;
    }
    return false;
}

// Step t of walker `pos` of the op keyed `k`, at node cur (from prev, or -1 at t = 0; root:
// its start node): the next node, or -1 where the walk stops (a stop draw, no in-edges, or
// node2vec's rejection loop past its bound, which sets failed[0]). A move's row comes from
// `cache` where it holds the column (node2vec's edge test still reads sorted_rows), and is
// counted there.
__device__ __forceinline__ gs_i64 gs_walk_step(
        const gs_i64* __restrict__ indptr, const gs_row* __restrict__ rows,
        const gs_i64* __restrict__ sorted_rows, const gs_i64* __restrict__ alias,
        gs_walk_cache& cache, gs_i64 t, gs_i64 N, gs_u64 k, gs_i64 pos, gs_i64 root,
        gs_i64 cur, gs_i64 prev,
        int node2vec, double inv_p, double inv_q, double amax,
        double c1, double c2, double c3, int* __restrict__ failed) {
    const gs_i64 base = t * GS_WALK_STRIDE;
    if (c3 > 0.0) {
        const double u = gs_uniform_float(gs_word(k, pos, base));
        if (u < c1) return -1;                                   // the walk stops
        if (u < c2) return root;                                 // back to the root
        if (u < c3) return gs_uniform_int(gs_word(k, pos, base + 1), N);  // anywhere
    }
    const gs_i64 lo = indptr[cur], deg = indptr[cur + 1] - lo;
    if (deg == 0) return -1;                                     // no in-edges
    const gs_i64 c = gs_walk_cached(cache, cur, deg);
    const bool second = node2vec && t > 0;
    const gs_i64 plo = second ? indptr[prev] : 0;
    const gs_i64 phi = second ? indptr[prev + 1] : 0;
    for (gs_i64 a = 0;; ++a) {
        const gs_i64 slot = base + 2 + 3 * a;
        gs_i64 e = lo + gs_uniform_int(gs_word(k, pos, slot), deg);
        if (alias != nullptr) {
            const gs_u64 coin = gs_word(k, pos, slot + 1) >> 11;
            if (!(coin < (gs_u64)alias[2 * e])) e = alias[2 * e + 1];
        }
        // an alias edge is the column's own; were it not, the graph's row is read
        const gs_i64 off = e - lo;
        const bool hit = c >= 0 && (gs_u64)off < (gs_u64)deg;
        const gs_i64 x = hit ? cache.crows[c + off] : (gs_i64)rows[e];
        cache.reads += 1;
        cache.hits += hit ? 1 : 0;
        if (!second) return x;
        const double alpha = x == prev ? inv_p
            : (gs_has_row(sorted_rows, plo, phi, x) ? 1.0 : inv_q);
        const double u = __dmul_rn(gs_uniform_float(gs_word(k, pos, slot + 2)), amax);
        if (u < alpha) return x;
        if (a + 1 >= GS_WALK_MAX_ATTEMPTS) { atomicExch(failed, 1); return -1; }
    }
}

// Walker `pos` of the op keyed `k` from node id - shift (its id in the super-batch: id; shift
// = b * n, or 0): writes o[0], o[os], ..., o[L * os] (the id, the steps + shift, -1 after a
// stop; os: the distance between steps, 1 in a walker-major row), as one thread of
// gs_random_walk does (reading and counting through `cache` as gs_walk_step).
__device__ __forceinline__ void gs_walk_one(
        const gs_i64* __restrict__ indptr, const gs_row* __restrict__ rows,
        const gs_i64* __restrict__ sorted_rows, const gs_i64* __restrict__ alias,
        gs_walk_cache& cache, gs_i64 L, gs_i64 N, gs_u64 k, gs_i64 pos, gs_i64 id,
        gs_i64 shift,
        int node2vec, double inv_p, double inv_q, double amax,
        double c1, double c2, double c3, gs_i64* o, int* __restrict__ failed,
        gs_i64 os = 1) {
    const gs_i64 root = id - shift;
    o[0] = id;
    gs_i64 cur = root, prev = -1, t = 0;
    for (; t < L; ++t) {
        const gs_i64 nxt = gs_walk_step(indptr, rows, sorted_rows, alias, cache, t, N, k, pos,
                                        root, cur, prev, node2vec, inv_p, inv_q, amax, c1, c2,
                                        c3, failed);
        if (nxt < 0) break;
        o[(t + 1) * os] = nxt + shift;
        prev = cur;
        cur = nxt;
    }
    for (++t; t <= L; ++t) o[t * os] = -1;                       // after a stop
}
