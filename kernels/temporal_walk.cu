// Kernel family "temporal_walk": A.temporal_walk / A.temporal_walk_edges, every step of every
// walker in one launch, one thread per walker (host code: gsample/backend/cuda/temporal_walk.py;
// the definition, which this reproduces draw for draw, is the module docstring of
// gsample/backend/torch/temporal_walk.py).
//
// Step s of walker w moves from node v along an in-edge of v drawn uniformly among the allowed
// ones: in v's segment of the time order (order: each column's CSC positions sorted by
// (time, edge id); stime: their times), the range at or after the bound (later; after it with
// strict) or at or before it (earlier; before it with strict), found by a binary search. The
// bound is the previous step's edge time, for the first step time[w] (none with time null).
// The draw is (word >> 1) % count of gs_word(key, position, s * 2^32 + 2); the edge's row is
// the next node, its time the next bound, its id (eids[e], else its CSC position e) the step's
// entry of `edges`. No allowed edge: the walk stops, its later entries -1.
//
// GS_DTYPE0 is the times' type (long long or double): compared exactly, as the torch code.
//
// Keys: with `keys` null, `key` is the op's key and walker w is position w. Otherwise the
// walkers are a super-batch of n-node mini-batches (n > 0): seeds are ids b * n + v grouped
// by batch, walker w walks node v with batch b's key keys[b] as position w - (first walker
// of b), and writes its ids encoded (+ b * n; -1 stays -1).
//
// Seeds are guarded here, whoever made them: a seed outside [0, M) (M: the graph's N nodes,
// or the super-batch's copies * n ids) walks nowhere, its rows all -1, and is flagged in err
// (zero before the launch): err[0] a negative one, err[1] one >= M, err[2] / err[3] the
// smallest / largest such id; the host raises them as an IndexError naming `seeds`. Every
// other index is the graph's own structure (indptr, rows, order), checked when it was built.
#include "hash.cuh"
#include "search.cuh"

#ifndef GS_DTYPE0
#define GS_DTYPE0 long long
#endif
typedef GS_DTYPE0 gs_time;

#define GS_TWALK_STRIDE (1LL << 32)
#define GS_TWALK_SLOT 2

// The first position in [lo, hi) whose time is above t (strict) or at least t (hi when none
// is): the torch code's first_above (the position is unique: the same whatever the
// midpoints).
__device__ __forceinline__ gs_i64 gs_first_above(const gs_time* __restrict__ stime, gs_i64 lo,
                                                 gs_i64 hi, gs_time t, int strict) {
    while (lo < hi) {
        const gs_i64 mid = lo + ((hi - lo) >> 1);
        const gs_time x = stime[mid];
        if (strict ? x <= t : x < t) lo = mid + 1; else hi = mid;
    }
    return lo;
}

extern "C" __global__ void gs_temporal_walk(
        const gs_i64* __restrict__ indptr, const gs_i64* __restrict__ rows,
        const gs_i64* __restrict__ eids,           // A's edge ids, or null (CSC positions)
        const gs_i64* __restrict__ order,          // each column's edges by (time, id)
        const gs_time* __restrict__ stime,         // their times
        const gs_i64* __restrict__ seeds, gs_i64 W, gs_i64 L, gs_i64 N,
        const gs_time* __restrict__ time,          // each walker's start bound, or null
        int later, int strict,
        const gs_i64* __restrict__ keys, gs_u64 key, gs_i64 n, gs_i64 M,
        gs_i64* __restrict__ out,                  // (W, L + 1)
        gs_i64* __restrict__ edges,                // (W, L), or null
        gs_i64* __restrict__ err) {
    // "later" cuts below the bound, "earlier" above it: an upper bound (first time > t) for
    // strictly later and for at-or-before, a lower bound (first >= t) otherwise
    const int above = later ? strict : !strict;
    const gs_i64 stride = (gs_i64)blockDim.x * gridDim.x;
    for (gs_i64 w = (gs_i64)blockIdx.x * blockDim.x + threadIdx.x; w < W; w += stride) {
        gs_i64* o = out + w * (L + 1);
        gs_i64* oe = edges != nullptr ? edges + w * L : nullptr;
        const gs_i64 id = seeds[w];
        const bool inside = gs_in_range(id, M);
        const gs_i64 b = inside && n > 0 ? id / n : 0;
        const gs_i64 shift = b * n;
        if (!inside || !gs_in_range(id - shift, N)) {
            if (id < 0) { err[0] = 1; atomicMin((long long*)&err[2], (long long)id); }
            else { err[1] = 1; atomicMax((long long*)&err[3], (long long)id); }
            for (gs_i64 t = 0; t <= L; ++t) o[t] = -1;
            if (oe != nullptr) for (gs_i64 t = 0; t < L; ++t) oe[t] = -1;
            continue;
        }
        const gs_u64 k = keys != nullptr ? (gs_u64)keys[b] : key;
        const gs_i64 pos = keys != nullptr ? w - gs_first_at_least(seeds, W, shift) : w;
        o[0] = id;
        gs_i64 cur = id - shift, s = 0;
        bool bounded = time != nullptr;
        gs_time bound = bounded ? time[w] : (gs_time)0;
        for (; s < L; ++s) {
            const gs_i64 start = indptr[cur], end = indptr[cur + 1];
            gs_i64 lo = start, hi = end;
            if (bounded) {
                const gs_i64 cut = gs_first_above(stime, start, end, bound, above);
                if (later) lo = cut; else hi = cut;
            }
            if (hi <= lo) break;                                  // no allowed edge
            const gs_u64 word = gs_word(k, pos, s * GS_TWALK_STRIDE + GS_TWALK_SLOT);
            const gs_i64 p = lo + gs_uniform_int(word, hi - lo);
            const gs_i64 e = order[p];
            cur = rows[e];
            bound = stime[p];
            bounded = true;
            o[s + 1] = cur + shift;
            if (oe != nullptr) oe[s] = eids != nullptr ? eids[e] : e;
        }
        for (gs_i64 t = s + 1; t <= L; ++t) o[t] = -1;            // after a stop
        if (oe != nullptr) for (gs_i64 t = s; t < L; ++t) oe[t] = -1;
    }
}
