// Binary searches shared by the kernel families.
#pragma once
#include "hash.cuh"

// The segment holding position x: the last s in [0, n) with ptr[s] <= x, for a
// non-decreasing ptr of at least n entries with ptr[0] <= x (so empty segments, whose two
// bounds are equal, are skipped). Reads ptr[1 .. n - 1] only. T: the index type of ptr.
template <typename T>
__device__ __forceinline__ gs_i64 gs_owner(const T* __restrict__ ptr, gs_i64 n, gs_i64 x) {
    gs_i64 lo = 0, hi = n;
    while (hi - lo > 1) {
        const gs_i64 mid = lo + ((hi - lo) >> 1);
        if ((gs_i64)ptr[mid] <= x) lo = mid; else hi = mid;
    }
    return lo;
}

// The first index in [0, m) whose ids[i] >= x (ids non-decreasing: a super-batch's ids
// b * n + v grouped by batch, batches ascending), m when none is.
__device__ __forceinline__ gs_i64 gs_first_at_least(const gs_i64* __restrict__ ids, gs_i64 m,
                                                    gs_i64 x) {
    gs_i64 lo = 0, hi = m;
    while (lo < hi) {
        const gs_i64 mid = lo + ((hi - lo) >> 1);
        if (ids[mid] < x) lo = mid + 1; else hi = mid;
    }
    return lo;
}
