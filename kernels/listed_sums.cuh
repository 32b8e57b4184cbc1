// The listed rows' sums of kernels/listed.cu (gs_listed_sums), alone in a header so that
// the kernels-as-C++ tests (tests/backend/test_cuda_listed.py) compile them without the
// warp-level headers: it needs gs_i64 and gs_t (frontier_tiles.cuh's, or the test's), min
// and max.
#pragma once

__device__ __forceinline__ float gs_add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double gs_add_rn(double a, double b) { return __dadd_rn(a, b); }

// out[i] = terms[seg[i]] + ... + terms[seg[i + 1] - 1], added from 0 in that order (a thread
// a listed row: a row's edges of one mini-batch's slice are few but for a hub's, and their
// order is the sum's), for i < L. The segment bounds are clamped into [0, E] (seg is the host's
// cumulative count of the sorted rows: in range, but a kernel reads nothing it did not bound).
__device__ __forceinline__ void gs_listed_sum_rows(const gs_t* __restrict__ terms, gs_i64 E,
                                                   const gs_i64* __restrict__ seg, gs_i64 L,
                                                   gs_t* __restrict__ out) {
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < L;
         i += (gs_i64)gridDim.x * blockDim.x) {
        const gs_i64 lo = min(max(seg[i], (gs_i64)0), E);
        const gs_i64 hi = min(max(seg[i + 1], lo), E);
        gs_t s = (gs_t)0;
        for (gs_i64 j = lo; j < hi; ++j) s = gs_add_rn(s, terms[j]);
        out[i] = s;
    }
}
