// Kernel family "temporal": A.temporal_sample(cols, k, time, edge_time, seed) for uniform
// draws (host code: gsample/backend/cuda/temporal.py; the definition, which these reproduce
// draw for draw, is gsample/backend/torch/temporal.py's module docstring).
//
// GS_DTYPE0 is the times' type (long long or double): the column times, the edges' times in
// each column's time order (stime) and the window are compared exactly, as the torch code.
//
// Two callers: the exact implementation (one read-back between the kernels: the result's
// size and the flags) and the sync-free one (no read-back: a frontier buffer of C columns of
// which the first *ncols are real, keys made from the device key (prefix, first), k edge
// slots per column, the flags raised with the program's one read-back).
#include "hash.cuh"

#ifndef GS_DTYPE0
#define GS_DTYPE0 long long
#endif
typedef GS_DTYPE0 gs_time;

// Draws per column made by a warp's lanes at once (past it, lane 0 makes them one after
// another). The C++ twin of the tests (one thread) defines it as 0: the sequential path only.
#ifndef GS_WARP_DRAWS
#define GS_WARP_DRAWS 32
#endif

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

// Column c of the frontier buffer (C columns, the first m real; ids in [0, M), node id % n
// of the graph): its candidates [lo, lo + cand) (positions in the time order, or in the CSC
// without times) and the edges it samples (count). A padding column (c >= m) is empty, its
// id not read. An id outside [0, M) is an empty column, flagged in err (err[0]: a negative
// one, err[1]: one >= M, err[2] / err[3]: the smallest / largest such id, err[4]: any; zero
// before the launch). cols_out non-null: the frontier's clamped copy (a bad id or a padding
// column: 0), the result's col_ids. time null: no times (every edge a candidate).
// window_on: only times in (t - window, t]. last: the k most recent candidates.
//
// bases_out non-null: each column's key too, as the draws take it: base = combine(kb, seed)
// (kb: the batch's key), or kb without seeds; position = its rank among the columns of its
// (batch, seed) group. The batch's key: combine(dkey[0], dkey[1] + b) with a device key
// (dkey non-null: the op's key prefix and first mini-batch, read here so that a replayed
// CUDA graph takes new keys), else keys[b] (a super-batch's batch keys), else key. The rank
// is c minus the group's first column (a binary search), which holds when the frontier
// lists its groups in ascending (batch, seed) order, as the disjoint program's frontiers do
// (a super-batch's batch by batch, each batch's seed by seed); a column out of that order
// sets err[5] (the exact caller then ranks the columns itself; the sync-free one raises).
__device__ __forceinline__ void gs_temporal_count_column(
    gs_i64 c, gs_i64 m, const gs_i64* __restrict__ indptr, const gs_i64* __restrict__ cols,
    gs_i64 n, gs_i64 M, const gs_time* __restrict__ time, const gs_time* __restrict__ stime,
    int window_on, gs_time window, int last, gs_i64 k, int replace,
    const gs_i64* __restrict__ seed, const gs_i64* __restrict__ keys, gs_u64 key,
    const gs_u64* __restrict__ dkey, gs_i64* __restrict__ lo_out, gs_i64* __restrict__ cand_out,
    gs_i64* __restrict__ count_out, gs_i64* __restrict__ bases_out,
    gs_i64* __restrict__ positions_out, gs_i64* __restrict__ cols_out,
    gs_i64* __restrict__ err) {
    gs_i64 lo = 0, hi = 0, id = 0;
    if (c < m) {
        id = cols[c];
        if (bases_out != nullptr) {  // the column's key: its batch's and seed's, its rank
            const gs_i64 b = gs_batch_of(cols, c, n, M);
            const gs_i64 s = seed != nullptr ? seed[c] : 0;
            const gs_u64 kb = dkey != nullptr    ? gs_combine(dkey[0], (gs_i64)dkey[1] + b)
                              : keys != nullptr ? (gs_u64)keys[b]
                                                : key;
            bases_out[c] = (gs_i64)(seed != nullptr ? gs_combine(kb, s) : kb);
            if (c > 0) {  // the frontier out of (batch, seed) order
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
            id = 0;                                      // an empty column of id 0
        }
    } else if (bases_out != nullptr) {                   // padding: an empty column
        bases_out[c] = 0;
        positions_out[c] = 0;
    }
    if (cols_out != nullptr) cols_out[c] = id;
    const gs_i64 cand = hi - lo;
    lo_out[c] = lo;
    cand_out[c] = cand;
    count_out[c] = replace ? (cand > 0 ? k : 0) : (cand < k ? cand : k);
}

// The exact implementation's count: a thread per column of a frontier of C columns, keys
// from the host (keys, key), no clamped copy.
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
        gs_temporal_count_column(c, C, indptr, cols, n, M, time, stime, window_on, window,
                                 last, k, replace, seed, keys, key, nullptr, lo_out, cand_out,
                                 count_out, bases_out, positions_out, nullptr, err);
    }
}

// The sync-free implementation's count: a thread per column of a frontier buffer of C
// columns, the first m real (m = *ncols clamped to [0, C], or C when ncols is null), keys
// from the device key dkey (every column's: bases_out and positions_out non-null), the
// clamped copy in cols_out.
extern "C" __global__ void gs_temporal_count_bounded(const gs_i64* __restrict__ indptr,
                                                     const gs_i64* __restrict__ cols, gs_i64 C,
                                                     const gs_i64* __restrict__ ncols,
                                                     gs_i64 n, gs_i64 M,
                                                     const gs_time* __restrict__ time,
                                                     const gs_time* __restrict__ stime,
                                                     int window_on, gs_time window, int last,
                                                     gs_i64 k, int replace,
                                                     const gs_i64* __restrict__ seed,
                                                     const gs_u64* __restrict__ dkey,
                                                     gs_i64* __restrict__ lo_out,
                                                     gs_i64* __restrict__ cand_out,
                                                     gs_i64* __restrict__ count_out,
                                                     gs_i64* __restrict__ bases_out,
                                                     gs_i64* __restrict__ positions_out,
                                                     gs_i64* __restrict__ cols_out,
                                                     gs_i64* __restrict__ err) {
    gs_i64 m = ncols != nullptr ? *ncols : C;
    m = m < 0 ? 0 : (m > C ? C : m);
    GS_LOOP(c, C) {
        gs_temporal_count_column(c, m, indptr, cols, n, M, time, stime, window_on, window,
                                 last, k, replace, seed, nullptr, 0, dkey, lo_out, cand_out,
                                 count_out, bases_out, positions_out, cols_out, err);
    }
}

// One warp per column: its draws (Floyd's without replacement, or k uniform draws with),
// each draw's edge (order[lo + offset] with times, lo + offset without), written at
// indptr[c] ... in ascending edge position (the CSC order of the torch code's result).
// Keys: column c draws word(base, position, i) with base = bases[c], position =
// positions[c] (a seed's or a super-batch's column keys), or base = key and position = c.
// k <= GS_WARP_DRAWS: lane i makes draw i (Floyd's rule resolved by ballots) and its rank
// among the column's edges places it; else lane 0 draws one after another, insertion-sorted
// in place. rows_out non-null: each edge's row too, rows[edge] (the graph's, int64) moved to
// its column's batch in a super-batch (n < M: + (cols[c] / n) * n, cols the clamped ids).
extern "C" __global__ void gs_temporal_draw(const gs_i64* __restrict__ lo_in,
                                            const gs_i64* __restrict__ cand_in,
                                            const gs_i64* __restrict__ indptr_out, gs_i64 C,
                                            const gs_i64* __restrict__ order, gs_i64 k,
                                            int replace, gs_u64 key,
                                            const gs_i64* __restrict__ bases,
                                            const gs_i64* __restrict__ positions,
                                            const gs_i64* __restrict__ rows,
                                            const gs_i64* __restrict__ cols, gs_i64 n, gs_i64 M,
                                            gs_i64* __restrict__ pos_out,
                                            gs_i64* __restrict__ rows_out) {
    const unsigned FULL = 0xFFFFFFFFu;
    const int lane = threadIdx.x & 31;
    gs_i64 warps = (gs_i64)gridDim.x * (blockDim.x >> 5);
    warps = warps > 0 ? warps : 1;                      // the C++ twin's one thread
    for (gs_i64 c = (blockIdx.x * (gs_i64)blockDim.x + threadIdx.x) >> 5; c < C; c += warps) {
        const gs_i64 lo = lo_in[c], cand = cand_in[c], out = indptr_out[c];
        const gs_i64 count = indptr_out[c + 1] - out;
        if (count == 0) continue;                       // the same for the whole warp
        const gs_u64 base = bases != nullptr ? (gs_u64)bases[c] : key;
        const gs_i64 position = positions != nullptr ? positions[c] : c;
        const gs_i64 shift = rows_out != nullptr && n < M ? cols[c] / n * n : 0;
        const bool all = !replace && cand <= k;         // every candidate, no draw
        if (k <= GS_WARP_DRAWS) {
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
            if (lane < count) {
                pos_out[out + rank] = e;
                if (rows_out != nullptr) rows_out[out + rank] = rows[e] + shift;
            }
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
        if (rows_out != nullptr) {
            for (gs_i64 i = 0; i < count; ++i) rows_out[out + i] = rows[S[i]] + shift;
        }
    }
}
