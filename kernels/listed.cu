// Kernel family "listed": LADIES's probabilities at the slice's rows only
// (listed_collective_sample; host code: gsample/backend/cuda/listed.py; semantics:
// gsample/backend/torch/fused_select.py, listed_collective_sample): the frontier's edges
// listed (each one's row in the block-diagonal row space and its graph edge), and each listed
// row's weights summed one after the other in the slice's edge order, from 0, in the weights'
// own dtype (the torch code's segment sum of the rows' edges, sorted by row stably: the same
// additions in the same order, the same bits). No array over the row space.
#include "frontier_tiles.cuh"
#include "listed_sums.cuh"

// Every frontier edge g (g < ptr[C]): key[g] its row (b * n + row in a super-batch), edge[g]
// its edge of the graph. A bad frontier id is an empty column (gs_frontier_ptr flagged it),
// so no g reaches it; the graph's own rows and edges are in range (a CSC's invariant, which
// the other frontier kernels read the same way).
extern "C" __global__ void gs_listed_edges(const gs_idx* __restrict__ indptr,
                                           const gs_idx* __restrict__ rows,
                                           const gs_i64* __restrict__ cols, gs_i64 C,
                                           const gs_i64* __restrict__ ptr, gs_i64 n,
                                           gs_i64* __restrict__ key, gs_i64* __restrict__ edge) {
    GS_TILES(g0, t, ptr, C, true) {
        GS_LOAD_ITEMS(g0, t, r, e, c)
#pragma unroll
        for (int j = 0; j < GS_ITEMS; ++j) {
            const gs_i64 g = g0 + j * (gs_i64)blockDim.x + threadIdx.x;
            if (c[j] >= 0 && g < gs_E) {
                key[g] = r[j];
                edge[g] = e[j];
            }
        }
    }
}

// The listed rows' sums (listed_sums.cuh: out[i], i < L, row i's terms terms[seg[i], seg[i + 1])
// added in order from 0, the bounds clamped into [0, E]).
extern "C" __global__ void gs_listed_sums(const gs_t* __restrict__ terms, gs_i64 E,
                                          const gs_i64* __restrict__ seg, gs_i64 L,
                                          gs_t* __restrict__ out) {
    gs_listed_sum_rows(terms, E, seg, L, out);
}
