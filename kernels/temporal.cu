// Kernel family "temporal": A.temporal_sample(cols, k, time, edge_time, seed) for uniform
// draws (host code: gsample/backend/cuda/temporal.py; the definition, which these reproduce
// draw for draw, is gsample/backend/torch/temporal.py's module docstring).
//
// GS_DTYPE0 is the times' type (long long or double): the column times, the edges' times in
// each column's time order (stime) and the window are compared exactly, as the torch code.
#include "hash.cuh"

#ifndef GS_DTYPE0
#define GS_DTYPE0 long long
#endif
typedef GS_DTYPE0 gs_time;

#define GS_LOOP(i, n)                                                          \
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < (n);   \
         i += (gs_i64)gridDim.x * blockDim.x)

// The first position in [lo, hi) whose time is above t: the torch code's _after (the same
// midpoints; its fixed number of rounds ends where this loop ends).
__device__ __forceinline__ gs_i64 gs_after(const gs_time* __restrict__ stime, gs_i64 lo,
                                           gs_i64 hi, gs_time t) {
    while (lo < hi) {
        const gs_i64 mid = (lo + hi) / 2;
        if (stime[mid] <= t) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// The batch of column c (id / n; 0 for a single mini-batch, n == M, or a bad id).
__device__ __forceinline__ gs_i64 gs_batch_of(const gs_i64* __restrict__ cols, gs_i64 c,
                                              gs_i64 n, gs_i64 M) {
    const gs_i64 id = cols[c];
    return n < M && gs_in_range(id, M) ? id / n : 0;
}

// One thread per column c of the frontier (C columns, ids in [0, M); node id % n of the
// graph): its candidates [lo, lo + cand) (positions in the time order, or in the CSC
// without times) and the edges it samples (count). An id outside [0, M) is an empty column,
// flagged in err (err[0]: a negative one, err[1]: one >= M, err[2] / err[3]: the smallest /
// largest such id, err[4]: any; zero before the launch). time null: no times (every edge a
// candidate). window_on: only times in (t - window, t]. last: the k most recent candidates.
//
// bases_out non-null: each column's key too, as the draws take it: base = combine(kb, seed)
// (kb: keys[batch], a super-batch's batch keys, or key), or kb without seeds; position =
// its rank among the columns of its (batch, seed) group. The rank is c minus the group's
// first column (a binary search), which holds when the frontier lists its groups in
// ascending (batch, seed) order, as the disjoint program's frontiers do (a super-batch's
// batch by batch, each batch's seed by seed); a column out of that order sets err[5] and
// the host ranks the columns itself.
extern "C" __global__ void gs_temporal_count(const gs_i64* __restrict__ indptr,
                                             const gs_i64* __restrict__ cols, gs_i64 C,
                                             gs_i64 n, gs_i64 M,
                                             const gs_time* __restrict__ time,
                                             const gs_time* __restrict__ stime,
                                             int window_on, gs_time window, int last,
                                             gs_i64 k, int replace,
                                             const gs_i64* __restrict__ seed,
                                             const gs_i64* __restrict__ keys, gs_u64 key,
                                             gs_i64* __restrict__ lo_out,
                                             gs_i64* __restrict__ cand_out,
                                             gs_i64* __restrict__ count_out,
                                             gs_i64* __restrict__ bases_out,
                                             gs_i64* __restrict__ positions_out,
                                             gs_i64* __restrict__ err) {
    GS_LOOP(c, C) {
        const gs_i64 id = cols[c];
        if (bases_out != nullptr) {  // the column's key: its batch's and seed's, its rank
            const gs_i64 b = gs_batch_of(cols, c, n, M);
            const gs_i64 s = seed != nullptr ? seed[c] : 0;
            const gs_u64 kb = keys != nullptr ? (gs_u64)keys[b] : key;
            bases_out[c] = (gs_i64)(seed != nullptr ? gs_combine(kb, s) : kb);
            if (c > 0) {  // the frontier out of (batch, seed) order: the host ranks
                const gs_i64 pb = gs_batch_of(cols, c - 1, n, M);
                const gs_i64 ps = seed != nullptr ? seed[c - 1] : 0;
                if (pb > b || (pb == b && ps > s)) err[5] = 1;
            }
            gs_i64 first = 0, end = c;                   // the group's first column
            while (first < end) {
                const gs_i64 mid = (first + end) / 2;
                const gs_i64 mb = gs_batch_of(cols, mid, n, M);
                const gs_i64 ms = seed != nullptr ? seed[mid] : 0;
                if (mb < b || (mb == b && ms < s)) first = mid + 1; else end = mid;
            }
            positions_out[c] = c - first;
        }
        gs_i64 lo = 0, hi = 0;
        if (gs_in_range(id, M)) {
            const gs_i64 v = id % n;
            lo = indptr[v];
            hi = indptr[v + 1];
            if (time != nullptr) {
                const gs_time t = time[c];
                const gs_i64 start = lo;
                hi = gs_after(stime, start, hi, t);
                if (window_on) lo = gs_after(stime, start, hi, t - window);
                if (last && k >= 0 && hi - k > lo) lo = hi - k;
            }
        } else {
            if (id < 0) { err[0] = 1; atomicMin((long long*)&err[2], (long long)id); }
            else { err[1] = 1; atomicMax((long long*)&err[3], (long long)id); }
            err[4] = 1;
        }
        const gs_i64 cand = hi - lo;
        lo_out[c] = lo;
        cand_out[c] = cand;
        count_out[c] = replace ? (cand > 0 ? k : 0) : (cand < k ? cand : k);
    }
}

// One warp per column: its draws (Floyd's without replacement, or k uniform draws with),
// each draw's edge (order[lo + offset] with times, lo + offset without), written at
// indptr[c] ... in ascending edge position (the CSC order of the torch code's result).
// Keys: column c draws word(base, position, i) with base = bases[c], position =
// positions[c] (a seed's or a super-batch's column keys), or base = key and position = c.
// k <= 32: lane i makes draw i (Floyd's rule resolved by ballots) and its rank among the
// column's edges places it; else lane 0 draws one after another, insertion-sorted in place.
extern "C" __global__ void gs_temporal_draw(const gs_i64* __restrict__ lo_in,
                                            const gs_i64* __restrict__ cand_in,
                                            const gs_i64* __restrict__ indptr_out, gs_i64 C,
                                            const gs_i64* __restrict__ order, gs_i64 k,
                                            int replace, gs_u64 key,
                                            const gs_i64* __restrict__ bases,
                                            const gs_i64* __restrict__ positions,
                                            gs_i64* __restrict__ pos_out) {
    const unsigned FULL = 0xFFFFFFFFu;
    const int lane = threadIdx.x & 31;
    const gs_i64 warps = (gs_i64)gridDim.x * (blockDim.x >> 5);
    for (gs_i64 c = (blockIdx.x * (gs_i64)blockDim.x + threadIdx.x) >> 5; c < C; c += warps) {
        const gs_i64 lo = lo_in[c], cand = cand_in[c], out = indptr_out[c];
        const gs_i64 count = indptr_out[c + 1] - out;
        if (count == 0) continue;                       // the same for the whole warp
        const gs_u64 base = bases != nullptr ? (gs_u64)bases[c] : key;
        const gs_i64 position = positions != nullptr ? positions[c] : c;
        const bool all = !replace && cand <= k;         // every candidate, no draw
        if (k <= 32) {
            gs_i64 d = 0;
            if (lane < count) {
                if (all) {
                    d = lane;
                } else {
                    const gs_u64 w = gs_word(base, position, lane);
                    d = gs_uniform_int(w, replace ? cand : cand - k + lane + 1);
                }
            }
            if (!all && !replace) {                     // Floyd: lanes before i are final
                const gs_i64 first = d;
                for (int i = 1; i < k; ++i) {
                    const gs_i64 ti = __shfl_sync(FULL, first, i);
                    const unsigned seen = __ballot_sync(FULL, lane < i && d == ti);
                    if (lane == i && seen) d = cand - k + i;
                }
            }
            const gs_i64 e = lane < count ? (order != nullptr ? order[lo + d] : lo + d) : 0;
            int rank = 0;                               // the edges before this one
            for (int q = 0; q < count; ++q) {
                const gs_i64 eq = __shfl_sync(FULL, e, q);
                rank += eq < e || (eq == e && q < lane);
            }
            if (lane < count) pos_out[out + rank] = e;
            continue;
        }
        if (lane != 0) continue;
        gs_i64* S = pos_out + out;                      // the draws' offsets, then edges
        for (gs_i64 i = 0; i < count; ++i) {
            gs_i64 d = i;
            if (replace) {
                d = gs_uniform_int(gs_word(base, position, i), cand);
            } else if (!all) {
                const gs_i64 j = cand - k + i;
                d = gs_uniform_int(gs_word(base, position, i), j + 1);
                for (gs_i64 q = 0; q < i; ++q) {
                    if (S[q] == d) { d = j; break; }
                }
            }
            S[i] = d;
        }
        for (gs_i64 i = 0; i < count; ++i) {            // offsets -> edges, sorted in place
            const gs_i64 e = order != nullptr ? order[lo + S[i]] : lo + S[i];
            gs_i64 q = i;
            while (q > 0 && S[q - 1] > e) { S[q] = S[q - 1]; --q; }
            S[q] = e;
        }
    }
}
