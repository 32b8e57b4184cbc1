// Kernel family "edge_map": a generated, fused chain of edge maps and broadcasts
// (gsample/backend/cuda/codegen.py writes GS_EXPR from a FUSED_EDGE_MAP program).
// One grid-stride loop over the edges; the whole program is evaluated in registers.
//
// GS_EXPR is a straight-line expression over
//   v[e]          the edge's value (the leaf is the literal 1 when the matrix has none)
//   o<i>[e]       per-edge operand i              (one value per edge)
//   o<i>[col[e]]  per-column operand i (axis 0)   col: the column of each edge
//   o<i>[row[e]]  per-row operand i (axis 1)      row: the row of each edge
// and the helpers below. Every helper is one correctly rounded IEEE operation (explicit
// _rn intrinsics: never contracted into an FMA) or the exact expression torch's CUDA
// kernel evaluates, so the result is bit-equal to the torch backend (codegen.py argues
// this per op). Without definitions (tests compile every kernels/*.cu to PTX) the
// template is the identity map on float values.
#include "hash.cuh"

#ifndef GS_DTYPE0
#define GS_DTYPE0 float
#endif
#ifndef GS_EXPR
#define GS_EXPR (v[e])
#endif

typedef GS_DTYPE0 gs_t;

// float32
__device__ __forceinline__ float gs_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float gs_sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float gs_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float gs_div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ float gs_neg(float a) { return -a; }
__device__ __forceinline__ float gs_sqrt(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ float gs_pow(float a, float b) { return powf(a, b); }
// torch: base * base; base * base * base; 1.0 / (base * base) (a double division, then rounded to float)
__device__ __forceinline__ float gs_sq(float a) { return __fmul_rn(a, a); }
__device__ __forceinline__ float gs_pow3(float a) { return __fmul_rn(__fmul_rn(a, a), a); }
__device__ __forceinline__ float gs_pow_m2(float a) {
    return (float)__ddiv_rn(1.0, (double)__fmul_rn(a, a));
}

// float64
__device__ __forceinline__ double gs_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double gs_sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ double gs_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double gs_div(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ double gs_neg(double a) { return -a; }
__device__ __forceinline__ double gs_sqrt(double a) { return __dsqrt_rn(a); }
__device__ __forceinline__ double gs_pow(double a, double b) { return pow(a, b); }
__device__ __forceinline__ double gs_sq(double a) { return __dmul_rn(a, a); }
__device__ __forceinline__ double gs_pow3(double a) { return __dmul_rn(__dmul_rn(a, a), a); }
__device__ __forceinline__ double gs_pow_m2(double a) { return __ddiv_rn(1.0, __dmul_rn(a, a)); }

// out[e] = GS_EXPR for every edge e < n. Pointers the expression does not read may be null.
extern "C" __global__ void gs_edge_map(const gs_t* __restrict__ v, const gs_i64* __restrict__ col,
                                       const gs_i64* __restrict__ row, gs_i64 n,
                                       gs_t* __restrict__ out,
                                       const gs_t* __restrict__ o0, const gs_t* __restrict__ o1,
                                       const gs_t* __restrict__ o2, const gs_t* __restrict__ o3,
                                       const gs_t* __restrict__ o4, const gs_t* __restrict__ o5,
                                       const gs_t* __restrict__ o6, const gs_t* __restrict__ o7) {
    for (gs_i64 e = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; e < n;
         e += (gs_i64)gridDim.x * blockDim.x) {
        out[e] = GS_EXPR;
    }
}
