// Correctly rounded IEEE arithmetic helpers of the generated kernels (edge_map.cu,
// fused_walk.cu): each one IEEE operation with an explicit _rn intrinsic (never contracted
// into an FMA) or the exact expression torch's CUDA kernel evaluates, so generated code is
// bit-equal to the torch backend (gsample/backend/cuda/codegen.py argues it per op).
#pragma once

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
