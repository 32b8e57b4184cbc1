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

// GS_ROW: the type of the rows the walks read and of a GPU cache's rows (int for a UVA graph's
// int32 rows in host memory and its cache's, else long long); every other array of a walk is
// int64, and a row read is widened to int64 at once.
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
    const gs_row* crows;
    gs_i64 cE;
    gs_i64 reads, hits;
};

// Where column cur (in [0, N): a seed checked by the kernel, a jump's draw or a row of the
// graph) of deg edges starts in the cache, or -1: its deg rows lie in [0, cE) or none is read
// (counters.cuh's gs_cache_at, the bound every reader of the cache applies)
__device__ __forceinline__ gs_i64 gs_walk_cached(const gs_walk_cache& c, gs_i64 cur,
                                                 gs_i64 deg) {
    if (!GS_WALK_CACHE || deg <= 0) return -1;
    return gs_cache_at(c.slot, cur, deg, c.cE);
}

// Adds the threads' counts to counters (null: none): counters[0] += the rows read,
// counters[1] += those from the cache; a warp's sums, one atomic each. Every lane of the
// warp calls this (after the kernel's walker loop: no lane has left it).
__device__ __forceinline__ void gs_walk_count(const gs_walk_cache& c,
                                              gs_i64* __restrict__ counters) {
    if (GS_WALK_CACHE) gs_count_reads(c.reads, c.hits, counters);
}

// node2vec's edge test (step t > 0 of a walk from prev: whether the candidate x is a row of
// column prev) decides between alpha = 1 and alpha = 1/q only. Four switches, the host's
// module constants in gsample/backend/cuda/walk.py (LAZY_EDGE_TEST, SEARCH_WAYS,
// PREFETCH_PIVOTS, KEEP_PREV_BOUNDS); 0, 2, 0, 0 is the binary search at every attempt after
// reading prev's bounds again, as before them. Every setting takes the same draws and makes
// the same decisions, so the walks are the same.
// GS_WALK_LAZY 1: the attempt's acceptance coin u (a draw: no memory read) is drawn first,
// and the column is searched only where u < 1 and u < 1/q disagree (u in [1, 1/q) or
// [1/q, 1)): elsewhere both alphas give the same answer. With p = 2, q = 0.5 (u uniform in
// [0, 2)) half the attempts search.
#ifndef GS_WALK_LAZY
#define GS_WALK_LAZY 1
#endif
// GS_WALK_WAYS: the search's fan-out, 2 (the binary search, gs_has_row), 4 or 8: a round
// reads WAYS - 1 pivots at once (independent loads, in flight together) and keeps one of
// the WAYS gaps between them, until GS_WALK_SCAN rows or fewer are left, which are read
// together. A column of d rows: about log_WAYS(d / 8) + 1 dependent rounds where the
// binary search waits on log2(d); the rows a walker stands on are drawn by degree, so the
// columns searched are mostly long ones.
#ifndef GS_WALK_WAYS
#define GS_WALK_WAYS 4
#endif
#if GS_WALK_WAYS != 2 && GS_WALK_WAYS != 4 && GS_WALK_WAYS != 8
#error "GS_WALK_WAYS: 2, 4 or 8"
#endif
#define GS_WALK_SHIFT (GS_WALK_WAYS == 8 ? 3 : GS_WALK_WAYS == 4 ? 2 : 1)
#define GS_WALK_SCAN 8
// GS_WALK_PREFETCH 1 (with GS_WALK_WAYS 4 or 8): the first round's pivots of column prev are
// read as soon as an attempt's coin says the column will be searched (with GS_WALK_LAZY 0:
// at once), beside the reads of indptr[cur] and the candidate's row instead of after them,
// and kept for the step's later attempts.
#ifndef GS_WALK_PREFETCH
#define GS_WALK_PREFETCH 1
#endif

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

// A column's rows [lo, hi) as the WAYS-way search narrows it, and its pivots: piv[j - 1] =
// rows[lo + (hi - lo) * j / WAYS] for j = 1 .. WAYS - 1, read (`read`) only while hi - lo >
// GS_WALK_SCAN (hence at least WAYS rows: the pivots are distinct and inside [lo, hi)).
struct gs_walk_column {
    gs_i64 lo, hi;
    gs_i64 piv[GS_WALK_WAYS - 1];
    bool read;
};

// Reads c's pivots where its rows are more than a scan's (no read otherwise, none twice)
__device__ __forceinline__ void gs_column_pivots(const gs_i64* __restrict__ rows,
                                                 gs_walk_column& c) {
    const gs_i64 len = c.hi - c.lo;
    if (c.read || len <= GS_WALK_SCAN) return;
#pragma unroll
    for (int j = 1; j < GS_WALK_WAYS; ++j)
        c.piv[j - 1] = rows[c.lo + ((len * j) >> GS_WALK_SHIFT)];
    c.read = true;
}

// Whether x is among c's sorted rows (gs_has_row's answer), starting from c's pivots where
// gs_column_pivots read them; c is left as it was (a later attempt of the step starts from
// the same pivots). Reads inside [c.lo, c.hi) only, whatever the rows hold: rows out of
// order give some answer, never a read outside the column.
__device__ __forceinline__ bool gs_has_row_ways(const gs_i64* __restrict__ rows,
                                                const gs_walk_column& c, gs_i64 x) {
    gs_i64 lo = c.lo, hi = c.hi;
    bool first = c.read;
    while (hi - lo > GS_WALK_SCAN) {
        const gs_i64 len = hi - lo;
        gs_i64 r[GS_WALK_WAYS - 1];
#pragma unroll
        for (int j = 1; j < GS_WALK_WAYS; ++j)
            r[j - 1] = first ? c.piv[j - 1] : rows[lo + ((len * j) >> GS_WALK_SHIFT)];
        first = false;
        // the pivots ascend: x lies after the last one below it and before the first one
        // above it (one equal to x: found)
        gs_i64 nlo = lo, nhi = hi;
        bool found = false;
#pragma unroll
        for (int j = 1; j < GS_WALK_WAYS; ++j) {
            const gs_i64 m = lo + ((len * j) >> GS_WALK_SHIFT);
            found |= r[j - 1] == x;
            if (r[j - 1] < x) nlo = m + 1;
        }
#pragma unroll
        for (int j = GS_WALK_WAYS - 1; j >= 1; --j)
            if (r[j - 1] > x) nhi = lo + ((len * j) >> GS_WALK_SHIFT);
        if (found) return true;
        lo = nlo;
        hi = nhi;
    }
    bool found = false;
#pragma unroll
    for (int i = 0; i < GS_WALK_SCAN; ++i)
        if (lo + i < hi) found |= rows[lo + i] == x;
    return found;
}

// GS_WALK_NODE2VEC 0: node2vec's code is left out (the kernels' `node2vec` argument must be
// 0: the host compiles first-order walks so, which then hold fewer registers)
#ifndef GS_WALK_NODE2VEC
#define GS_WALK_NODE2VEC 1
#endif

// GS_WALK_KEEP 1: node2vec's previous node's column bounds are the ones its own move read
// (that step's indptr[cur], indptr[cur + 1]), kept in registers (gs_walk_prev); 0: read again
#ifndef GS_WALK_KEEP
#define GS_WALK_KEEP 1
#endif

// The previous node's column as the walker kept it from its last move: `known` false where
// that step did not read it (the first step, a teleport, gs_random_walk_step's walkers), and
// its bounds are read again.
struct gs_walk_prev {
    gs_i64 lo, hi;
    bool known;
};

// Step t of walker `pos` of the op keyed `k` (h = gs_combine(k, pos), the first half of each
// of its words gs_word(k, pos, draw)), at node cur (from prev, or -1 at t = 0; root: its
// start node): the next node, or -1 where the walk stops (a stop draw, no in-edges, or
// node2vec's rejection loop past its bound, which sets failed[0]). A move's row comes from
// `cache` where it holds the column (node2vec's edge test still reads sorted_rows), and is
// counted there. `pc`: prev's column bounds where known (node2vec), left holding cur's where
// this step read them (a move), for the next step.
__device__ __forceinline__ gs_i64 gs_walk_step(
        const gs_i64* __restrict__ indptr, const gs_row* __restrict__ rows,
        const gs_i64* __restrict__ sorted_rows, const gs_i64* __restrict__ alias,
        gs_walk_cache& cache, gs_i64 t, gs_i64 N, gs_u64 h, gs_i64 root,
        gs_i64 cur, gs_i64 prev,
        int node2vec, double inv_p, double inv_q, double amax,
        double c1, double c2, double c3, int* __restrict__ failed, gs_walk_prev& pc) {
    const gs_i64 base = t * GS_WALK_STRIDE;
    const bool known = GS_WALK_KEEP && pc.known;
    pc.known = false;
    if (c3 > 0.0) {
        const double u = gs_uniform_float(gs_combine(h, base));
        if (u < c1) return -1;                                   // the walk stops
        if (u < c2) return root;                                 // back to the root
        if (u < c3) return gs_uniform_int(gs_combine(h, base + 1), N);  // anywhere
    }
    const bool second = GS_WALK_NODE2VEC && node2vec && t > 0;
    // column prev, and attempt 0's coin (where it says the column is searched, its pivots
    // are read now, beside indptr[cur])
    gs_walk_column col;
    col.lo = second ? (known ? pc.lo : indptr[prev]) : 0;
    col.hi = second ? (known ? pc.hi : indptr[prev + 1]) : 0;
    col.read = false;
    double u = second ? __dmul_rn(gs_uniform_float(gs_combine(h, base + 4)), amax) : 0.0;
    if (GS_WALK_WAYS > 2 && GS_WALK_PREFETCH && second
        && (!GS_WALK_LAZY || (u < 1.0) != (u < inv_q)))
        gs_column_pivots(sorted_rows, col);
    const gs_i64 lo = indptr[cur], deg = indptr[cur + 1] - lo;
    if (deg == 0) return -1;                                     // no in-edges
    if (GS_WALK_KEEP) {
        pc.lo = lo;
        pc.hi = lo + deg;
        pc.known = true;
    }
    const gs_i64 c = gs_walk_cached(cache, cur, deg);
    for (gs_i64 a = 0;; ++a) {
        const gs_i64 slot = base + 2 + 3 * a;
        // this attempt's coin (attempt 0's: drawn above)
        if (second && a > 0)
            u = __dmul_rn(gs_uniform_float(gs_combine(h, slot + 2)), amax);
        const bool search = !GS_WALK_LAZY || (u < 1.0) != (u < inv_q);
        if (GS_WALK_WAYS > 2 && GS_WALK_PREFETCH && second && search)
            gs_column_pivots(sorted_rows, col);
        gs_i64 e = lo + gs_uniform_int(gs_combine(h, slot), deg);
        if (alias != nullptr) {
            const gs_u64 coin = gs_combine(h, slot + 1) >> 11;
            if (!(coin < (gs_u64)alias[2 * e])) e = alias[2 * e + 1];
        }
        // an alias edge is the column's own; were it not, the graph's row is read
        const gs_i64 off = e - lo;
        const bool hit = c >= 0 && (gs_u64)off < (gs_u64)deg;
        const gs_i64 x = hit ? (gs_i64)cache.crows[c + off] : (gs_i64)rows[e];
        cache.reads += 1;
        cache.hits += hit ? 1 : 0;
        if (!second) return x;
        // alpha: 1/p back to prev, 1 to a row of column prev, 1/q elsewhere
        bool accept;
        if (x == prev) {
            accept = u < inv_p;
        } else if (!search) {
            accept = u < 1.0;                                    // = u < inv_q
        } else {
            const bool edge = GS_WALK_WAYS == 2 ? gs_has_row(sorted_rows, col.lo, col.hi, x)
                                                : gs_has_row_ways(sorted_rows, col, x);
            accept = u < (edge ? 1.0 : inv_q);
        }
        if (accept) return x;
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
    gs_walk_prev pc = {0, 0, false};                             // cur's column, once read
    const gs_u64 h = gs_combine(k, pos);
    for (; t < L; ++t) {
        const gs_i64 nxt = gs_walk_step(indptr, rows, sorted_rows, alias, cache, t, N, h, root,
                                        cur, prev, node2vec, inv_p, inv_q, amax, c1, c2, c3,
                                        failed, pc);
        if (nxt < 0) break;
        o[(t + 1) * os] = nxt + shift;
        prev = cur;
        cur = nxt;
    }
    for (++t; t <= L; ++t) o[t * os] = -1;                       // after a stop
}
