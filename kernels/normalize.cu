// Kernel family "normalize": a column normalisation in one launch (gsample/backend/cuda/
// normalize.py is the host side): for every column s of a CSC matrix, with x the column's
// mapped values,
//   x[e]   = v[e] (1 when the matrix has none), or gs_binary(v[e], y[at(e)], mop): the one
//            edge broadcast (or per-edge operand) of a FUSED_EDGE_NORMALIZE program;
//   r      = the reduction (sum / max, a mean divides the sum by the length) of the x[e],
//            in the tree order of the segment-reduce kernels (segment_reduce.cu: chunks of
//            32 consecutive terms folded left to right, their values fed in order through
//            gs_push / gs_close), so r has their bits;
//   out[e] = gs_binary(x[e], r, cop).
// Each step is the unfused op's own arithmetic (gs_edge_binary's gs_binary, the reduction's
// gs_combine_op, tree.cuh): the same bits as the map, reduce and broadcast kernels one
// after the other. A warp per column (as gs_seg_warp: the host takes this path for at most
// compute.ONE_LAUNCH edges); each lane writes x for its chunk's positions, then rescales
// the same positions (its own writes: no synchronisation needed).
#include "hash.cuh"

#ifndef GS_DTYPE0
#define GS_DTYPE0 float
#endif

typedef GS_DTYPE0 gs_t;

#include "tree.cuh"

// where the map's operand is read (normalize.py: AT_EDGE, AT_COL, AT_ROW; NONE: no map)
#define GS_NORM_NONE -1

__device__ __forceinline__ gs_t gs_norm_term(gs_i64 p, gs_i64 s, const gs_i64* __restrict__ rows,
                                             const gs_t* __restrict__ v,
                                             const gs_t* __restrict__ y, gs_i64 ymode,
                                             gs_i64 mop) {
    const gs_t a = v ? v[p] : (gs_t)1;
    if (ymode == GS_NORM_NONE) return a;
    const gs_i64 at = ymode == GS_AT_COL ? s : (ymode == GS_AT_ROW ? rows[p] : p);
    return gs_binary(a, y[at], mop);
}

extern "C" __global__ void gs_edge_normalize(const gs_i64* __restrict__ ptr, gs_i64 C,
                                             const gs_i64* __restrict__ rows,
                                             const gs_t* __restrict__ v,
                                             const gs_t* __restrict__ y, gs_i64 ymode,
                                             gs_i64 mop, gs_i64 red, gs_i64 mean, gs_i64 cop,
                                             gs_t* __restrict__ out) {
    const int lane = threadIdx.x & 31;
    const gs_i64 warps = ((gs_i64)gridDim.x * blockDim.x) >> 5;
    for (gs_i64 s = ((gs_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; s < C; s += warps) {
        const gs_i64 a = ptr[s], b = ptr[s + 1];
        gs_t acc[GS_LEVELS];
        int cnt[GS_LEVELS];
        for (int l = 0; l < GS_LEVELS; ++l) cnt[l] = 0;
        for (gs_i64 g = a; g < b; g += 32 * 32) {
            const gs_i64 start = g + 32 * (gs_i64)lane;
            const bool has = start < b;
            gs_t t = (gs_t)0;
            if (has) {
                const gs_i64 end = b - start < 32 ? b : start + 32;
                for (gs_i64 p = start; p < end; ++p) {
                    const gs_t x = gs_norm_term(p, s, rows, v, y, ymode, mop);
                    out[p] = x;
                    t = p == start ? x : gs_combine_op(t, x, red);
                }
            }
            for (int j = 0; j < 32; ++j) {
                const gs_t tj = __shfl_sync(0xFFFFFFFFu, t, j);
                const bool hj = __shfl_sync(0xFFFFFFFFu, has, j);
                if (lane == 0 && hj) gs_push(acc, cnt, tj, red);
            }
        }
        gs_t r = (gs_t)0;
        if (lane == 0 && b > a) {
            r = gs_close(acc, cnt, red);
            if (mean) r = gs_div(r, (gs_t)(b - a));
        }
        r = __shfl_sync(0xFFFFFFFFu, r, 0);
        for (gs_i64 g = a; g < b; g += 32 * 32) {
            const gs_i64 start = g + 32 * (gs_i64)lane;
            const gs_i64 end = b - start < 32 ? b : start + 32;
            for (gs_i64 p = start; p < end; ++p) out[p] = gs_binary(out[p], r, cop);
        }
    }
}
