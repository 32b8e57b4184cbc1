// Groups: the unit of per-segment work whose result must not depend on where a segment
// sits in its array. Group g of segment s holds the GS_GROUP consecutive positions from
// ptr[s] + GS_GROUP * g (the last group of a segment may be shorter): groups are aligned on
// the segment's start, so a segment cut into groups computes the same values alone or
// inside any array of segments. segment_reduce.cu numbers the groups of all segments with
// a group pointer (gs_seg_group_ptr: gptr[s] = the groups of segments before s, no
// read-back) and gives a warp to each group; gs_owner_warp finds the group's segment.
// Users: segment_reduce.cu (the one-feature tree), cdf.cu (per-column running sums).
#pragma once
#include "hash.cuh"

#define GS_GROUP 1024                        // terms per group: 32 chunks of 32

// gs_owner for a whole warp (every lane gets the answer): the last s in [0, n) with
// ptr[s] <= x, for a non-decreasing ptr with ptr[0] <= x, by a 32-ary search (the lanes
// probe 32 evenly spaced entries a round: log32(n) rounds of one load each, where a
// thread's binary search waits for log2(n) loads one after the other). Reads ptr[1 .. n - 1].
__device__ __forceinline__ gs_i64 gs_owner_warp(const gs_i64* __restrict__ ptr, gs_i64 n,
                                                gs_i64 x, int lane) {
    gs_i64 lo = 0, hi = n;                   // ptr[lo] <= x; the answer is in [lo, hi)
    while (hi - lo > 1) {
        const gs_i64 step = (hi - lo + 31) >> 5;
        const gs_i64 m = lo + step * lane;
        const bool le = lane == 0 || (m < hi && ptr[m] <= x);
        const unsigned below = __ballot_sync(0xFFFFFFFFu, le);   // a prefix of the lanes
        lo += step * (31 - __clz(below));
        hi = lo + step < hi ? lo + step : hi;
    }
    return lo;
}

// Group q of the groups numbered by gptr (a warp's call: every lane gets the answer): its
// segment (returned), its first position (*start) and its length (*n, at most GS_GROUP).
__device__ __forceinline__ gs_i64 gs_group(const gs_i64* __restrict__ ptr,
                                           const gs_i64* __restrict__ gptr, gs_i64 S, gs_i64 q,
                                           int lane, gs_i64* start, int* n) {
    const gs_i64 s = gs_owner_warp(gptr, S, q, lane);       // gptr[s] <= q < gptr[s + 1]
    *start = ptr[s] + (q - gptr[s]) * GS_GROUP;
    const gs_i64 left = ptr[s + 1] - *start;
    *n = left < GS_GROUP ? (int)left : GS_GROUP;
    return s;
}
