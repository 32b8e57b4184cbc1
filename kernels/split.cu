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

// Items a lane decodes at once in gs_split_decode: a warp takes GS_SPLIT_ILP * 32 consecutive
// items of a field (a chunk), lane l items l, l + 32, ...: every load coalesced, and a lane's
// GS_SPLIT_ILP loads issued before any is used (one outstanding load a thread cannot cover a
// stream's latency: the edges' rows are most of the bytes, read once). The host sizes the
// grid by it (gsample/backend/cuda/split.py, _ILP).
#define GS_SPLIT_ILP 4
#define GS_SPLIT_CHUNK (GS_SPLIT_ILP * 32)

// Decodes items [0, len) of one field, chunk by chunk over the grid's warps: v = load(i, b)
// for each of a lane's items, then put(i, v, b), where b is the item's batch (first: where
// each batch's items start in the field, first.at(b) for b in [0, copies], the last the
// field's end; the batch of item i: first.batch(i), the last b in [0, copies) with
// first.at(b) <= i). A chunk's batch is searched once, by its first item, a search every
// lane makes alike (broadcast reads); an item past that batch's end (a chunk across a
// boundary) searches its own. ByBatch: load needs b (the search first); else the loads are
// issued before the search, which their latency then covers. blockDim.x: a multiple of 32
// (whole warps: a chunk's start is its warp's).
template <bool ByBatch, typename First, typename Load, typename Put>
__device__ __forceinline__ void gs_split_field(gs_i64 len, First first, Load load, Put put) {
    const gs_i64 lane = threadIdx.x & 31;
    const gs_i64 warp = (blockIdx.x * (gs_i64)blockDim.x + threadIdx.x) >> 5;
    const gs_i64 warps = ((gs_i64)gridDim.x * blockDim.x) >> 5;
    for (gs_i64 base = warp * GS_SPLIT_CHUNK; base < len; base += warps * GS_SPLIT_CHUNK) {
        gs_i64 v[GS_SPLIT_ILP];
        gs_i64 b = 0, end = 0;
        if (ByBatch) {
            b = first.batch(base);
            end = first.at(b + 1);  // b < copies: entry b + 1 <= copies
        }
#pragma unroll
        for (int k = 0; k < GS_SPLIT_ILP; ++k) {
            const gs_i64 i = base + k * 32 + lane;
            // (without ByBatch no search here: end is 0, and a search whose result load
            // ignores still ran, as the compiler keeps a loop it cannot prove ends)
            v[k] = i < len ? load(i, ByBatch ? (i < end ? b : first.batch(i)) : 0) : 0;
        }
        if (!ByBatch) {
            b = first.batch(base);
            end = first.at(b + 1);
        }
#pragma unroll
        for (int k = 0; k < GS_SPLIT_ILP; ++k) {
            const gs_i64 i = base + k * 32 + lane;
            if (i < len) put(i, v[k], i < end ? b : first.batch(i));
        }
    }
}

// A field without batches (ids decoded by % n alone): every item batch 0, no boundary.
struct gs_split_flat {
    gs_i64 len;
    __device__ __forceinline__ gs_i64 batch(gs_i64) const { return 0; }
    __device__ __forceinline__ gs_i64 at(gs_i64) const { return len; }
};

// The edges' batches: item i is edge e0 + i, its batch the segment of first_edge holding it.
struct gs_split_edges {
    const gs_i64* __restrict__ first_edge;
    gs_i64 copies;
    __device__ __forceinline__ gs_i64 at(gs_i64 b) const { return first_edge[b] - first_edge[0]; }
    __device__ __forceinline__ gs_i64 batch(gs_i64 i) const {
        return gs_owner(first_edge, copies, first_edge[0] + i);
    }
};

// The decoded pointers' batches: batch b's pointer (first_col[b + 1] - first_col[b] + 1
// entries) starts at first_col[b] - first_col[0] + b (gs_pointer_batch).
struct gs_split_pointers {
    const gs_i64* __restrict__ first_col;
    gs_i64 copies;
    __device__ __forceinline__ gs_i64 at(gs_i64 b) const { return first_col[b] - first_col[0] + b; }
    __device__ __forceinline__ gs_i64 batch(gs_i64 j) const {
        return gs_pointer_batch(first_col, copies, j);
    }
};

// bnd: the (3, copies + 1) table of gs_batch_bounds. out: P = (columns + copies) pointer
// entries, then E edge rows, then (has_cols) the columns' ids, then (with row_ids) the rows'
// ids; total, the sum. row_space: the rows are positions in row_ids (not node ids). Each
// field is decoded by gs_split_field in turn (the edges' rows are most of the items).
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
    const gs_i64 c0 = first_col[0], e0 = first_edge[0], r0 = first_row[0];
    // pointer entry j of batch b: indptr[j - b + c0] (its columns' entries and the one after
    // its last column) less the batch's first edge
    gs_split_field<true>(
        P, gs_split_pointers{first_col, copies},
        [&](gs_i64 j, gs_i64 b) { return indptr[j - b + c0]; },
        [&](gs_i64 j, gs_i64 v, gs_i64 b) { out[j] = v - first_edge[b]; });
    gs_i64* __restrict__ out_rows = out + P;
    if (row_space) {
        gs_split_field<false>(
            E, gs_split_edges{first_edge, copies}, [&](gs_i64 i, gs_i64) { return rows[e0 + i]; },
            [&](gs_i64 i, gs_i64 r, gs_i64 b) { out_rows[i] = r - first_row[b]; });
    } else {
        gs_split_field<false>(
            E, gs_split_flat{E}, [&](gs_i64 i, gs_i64) { return rows[e0 + i]; },
            [&](gs_i64 i, gs_i64 r, gs_i64) { out_rows[i] = r % n; });
    }
    gs_i64* __restrict__ out_ids = out_rows + E;
    if (has_cols) {
        gs_split_field<false>(
            C, gs_split_flat{C}, [&](gs_i64 i, gs_i64) { return col_ids[c0 + i]; },
            [&](gs_i64 i, gs_i64 c, gs_i64) { out_ids[i] = c % n; });
        out_ids += C;
    }
    const gs_i64 R = total - (out_ids - out);
    gs_split_field<false>(
        R, gs_split_flat{R}, [&](gs_i64 i, gs_i64) { return row_ids[r0 + i]; },
        [&](gs_i64 i, gs_i64 r, gs_i64) { out_ids[i] = r % n; });
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
