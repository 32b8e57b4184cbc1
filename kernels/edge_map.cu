// Kernel family "edge_map": a generated, fused chain of edge maps and broadcasts
// (gsample/backend/cuda/codegen.py writes GS_EXPR from a FUSED_EDGE_MAP program).
// One grid-stride loop over the edges; the whole program is evaluated in registers.
//
// GS_EXPR is a straight-line expression over
//   v[e]          the edge's value (the leaf is the literal 1 when the matrix has none)
//   o<i>[e]       per-edge operand i              (one value per edge)
//   o<i>[col[e]]  per-column operand i (axis 0)   col: the column of each edge
//   o<i>[row[e]]  per-row operand i (axis 1)      row: the row of each edge
// and the helpers of ieee.cuh. Every helper is one correctly rounded IEEE operation
// (explicit _rn intrinsics: never contracted into an FMA) or the exact expression torch's
// CUDA kernel evaluates, so the result is bit-equal to the torch backend (codegen.py argues
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

#include "ieee.cuh"

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
