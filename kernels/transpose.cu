// Kernel family "transpose": gs_transpose_i64 writes out (C, R) = in (R, C) transposed, both
// row-major int64, a 32 x 32 tile per block at a time through shared memory (one row of padding
// against bank conflicts), so that both the reads and the writes of a warp are whole lines.
// gsample/backend/cuda/walk.py uses it for walks written step-major (gs_random_walk with
// GS_WALK_TIME_MAJOR 1: every warp writes a line per step) and returned walker-major.
// Every index is bounded by R and C; the grid strides over the tiles; blockDim.x is a multiple
// of 32 (the host launches 256 threads: 8 rows of a tile at a time).
#include "hash.cuh"

extern "C" __global__ void gs_transpose_i64(const gs_i64* __restrict__ in, gs_i64 R, gs_i64 C,
                                            gs_i64* __restrict__ out) {
    __shared__ gs_i64 tile[32][33];
    const gs_i64 tr = (R + 31) / 32, tc = (C + 31) / 32;
    const int x = threadIdx.x % 32, y = threadIdx.x / 32, rows = blockDim.x / 32;
    for (gs_i64 b = blockIdx.x; b < tr * tc; b += gridDim.x) {
        const gs_i64 r0 = (b / tc) * 32, c0 = (b % tc) * 32;
        for (int i = y; i < 32; i += rows) {                     // in: row r0 + i, column c0 + x
            const gs_i64 r = r0 + i, c = c0 + x;
            if (r < R && c < C) tile[i][x] = in[r * C + c];
        }
        __syncthreads();
        for (int i = y; i < 32; i += rows) {                     // out: row c0 + i, column r0 + x
            const gs_i64 c = c0 + i, r = r0 + x;
            if (r < R && c < C) out[c * R + r] = tile[x][i];
        }
        __syncthreads();
    }
}
