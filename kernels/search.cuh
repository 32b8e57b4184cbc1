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
