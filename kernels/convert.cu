// Kernel family "convert": pieces of CSC -> COO / CSR conversions
// (gsample/backend/cuda/convert.py holds the host side and the stable sort).
//
// Work is spread over edges, never over columns or rows: each thread finds the column of
// its edge by a binary search in indptr, so a column of a million edges costs the same as
// a million columns of one edge. Row counts use integer atomics (integer sums do not
// depend on the order of the additions, so the result is deterministic).
#include "search.cuh"

// COO expansion: out[e] = the column of edge e (indptr: C + 1 entries, indptr[C] = E).
extern "C" __global__ void gs_edge_cols(const gs_i64* __restrict__ indptr, gs_i64 C, gs_i64 E,
                                        gs_i64* __restrict__ out) {
    for (gs_i64 e = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; e < E;
         e += (gs_i64)gridDim.x * blockDim.x) {
        out[e] = gs_owner(indptr, C, e);
    }
}

// Edges per row: counts[rows[e]] += 1 (counts: R zeros on entry; rows[e] in [0, R) for a
// matrix, guarded all the same: a row outside counts nowhere).
extern "C" __global__ void gs_row_counts(const gs_i64* __restrict__ rows, gs_i64 E,
                                         gs_u64* __restrict__ counts, gs_i64 R) {
    for (gs_i64 e = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; e < E;
         e += (gs_i64)gridDim.x * blockDim.x) {
        if (gs_in_range(rows[e], R)) atomicAdd(&counts[rows[e]], 1ULL);
    }
}
