// Kernel family "split": a super-batch matrix (CSC over N * n nodes, batch b's ids b * n + v,
// each batch's columns, rows and edges one range, batches ascending) cut into its N
// mini-batch matrices, as gsample/runtime/block_diagonal.py's bounds and split_matrix do it with torch
// ops (about fifteen launches a matrix), in two launches (gsample/backend/cuda/split.py is
// the host side):
//
// gs_batch_bounds: where each batch's columns, rows and edges start (and the ends), a
//   (3, N + 1) table: a batch's first column is the first encoded column id >= b * n (a binary
//   search: the ids are grouped by batch), its first row likewise in the row space (all nodes:
//   b * n), its first edge indptr[first column].
// gs_split_decode: every batch's fields decoded at once into one int64 buffer, one segment a
//   field (the host splits each segment into the batches' views): each batch's column pointer
//   (its columns' entries of indptr and one more, minus its first edge), the edges' rows (a
//   global id v of the batch: id % n; a row-space position: minus the batch's first row), the
//   column ids and row ids (id % n).
#include "search.cuh"

// C (R): the number of column (row) ids, or -1 where the matrix has none (all nodes; an
// empty tensor's pointer may be null, so the count says which).
extern "C" __global__ void gs_batch_bounds(const gs_i64* __restrict__ cols, gs_i64 C,
                                           const gs_i64* __restrict__ rows, gs_i64 R,
                                           const gs_i64* __restrict__ indptr, gs_i64 n,
                                           gs_i64 copies, gs_i64* __restrict__ out) {
    const gs_i64 m = copies + 1;
    for (gs_i64 b = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; b < m;
         b += (gs_i64)gridDim.x * blockDim.x) {
        const gs_i64 c = C >= 0 ? gs_first_at_least(cols, C, b * n) : b * n;
        out[b] = c;
        out[m + b] = R >= 0 ? gs_first_at_least(rows, R, b * n) : b * n;
        out[2 * m + b] = indptr[c];
    }
}

// The batch whose column pointer holds position j of the decoded pointers: the last b in
// [0, copies) with bnd[b] - bnd[0] + b <= j (batch b's pointer has bnd[b + 1] - bnd[b] + 1
// entries, so batch b starts there).
__device__ __forceinline__ gs_i64 gs_pointer_batch(const gs_i64* __restrict__ bnd,
                                                   gs_i64 copies, gs_i64 j) {
    gs_i64 lo = 0, hi = copies;
    while (hi - lo > 1) {
        const gs_i64 mid = lo + ((hi - lo) >> 1);
        if (bnd[mid] - bnd[0] + mid <= j) lo = mid; else hi = mid;
    }
    return lo;
}

// bnd: the (3, copies + 1) table of gs_batch_bounds. out: P = (columns + copies) pointer
// entries, then E edge rows, then (has_cols) the columns' ids, then (with row_ids) the rows'
// ids; total, the sum. row_space: the rows are positions in row_ids (not node ids).
extern "C" __global__ void gs_split_decode(const gs_i64* __restrict__ indptr,
                                           const gs_i64* __restrict__ rows,
                                           const gs_i64* __restrict__ col_ids,
                                           const gs_i64* __restrict__ row_ids,
                                           const gs_i64* __restrict__ bnd, gs_i64 copies,
                                           gs_i64 n, int row_space, int has_cols, gs_i64 P,
                                           gs_i64 E, gs_i64 total, gs_i64* __restrict__ out) {
    const gs_i64 m = copies + 1;
    const gs_i64* __restrict__ first_col = bnd;
    const gs_i64* __restrict__ first_row = bnd + m;
    const gs_i64* __restrict__ first_edge = bnd + 2 * m;
    const gs_i64 C = P - copies;
    for (gs_i64 t = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; t < total;
         t += (gs_i64)gridDim.x * blockDim.x) {
        if (t < P) {
            const gs_i64 b = gs_pointer_batch(first_col, copies, t);
            out[t] = indptr[t - b + first_col[0]] - first_edge[b];
        } else if (t < P + E) {
            const gs_i64 e = first_edge[0] + (t - P);
            const gs_i64 r = rows[e];
            out[t] = row_space ? r - first_row[gs_owner(first_edge, copies, e)] : r % n;
        } else if (has_cols && t < P + E + C) {
            out[t] = col_ids[first_col[0] + (t - P - E)] % n;
        } else {
            const gs_i64 i = t - P - E - (has_cols ? C : 0);
            out[t] = row_ids[first_row[0] + i] % n;
        }
    }
}

// gs_decode_walks: a super-batch's walks (W walkers x S steps, ids b * n + v, -1 after a stop)
// decoded in one pass, out[i] = walks[i] % n where it is >= 0, else itself: the ge, remainder
// and where of gsample/runtime/block_diagonal.py's split_walks (three passes over the walks) in one.
// Every index is i < total; n > 0 (the host's: the graph's nodes).
extern "C" __global__ void gs_decode_walks(const gs_i64* __restrict__ walks, gs_i64 total,
                                           gs_i64 n, gs_i64* __restrict__ out) {
    const gs_i64 stride = (gs_i64)blockDim.x * gridDim.x;
    for (gs_i64 i = (gs_i64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const gs_i64 v = walks[i];
        out[i] = v >= 0 ? v % n : v;
    }
}
