// Kernel family "nodewise": A[:, cols].individual_sample(k) (uniform, with or without
// replacement) without the slice and without reading a size back to the host (host code:
// gsample/backend/cuda/nodewise.py; the algorithms, which these reproduce draw for draw,
// are stated in gsample/backend/torch/select.py).
//
// The frontier `cols` is a buffer of C entries of which the first ncols are real (ncols is
// read from the device, or is C when the pointer is null). Every launch covers the whole
// buffer; padding columns get no edges. A super-batch (n > 0) holds N mini-batches as one
// block-diagonal graph of ids b * n + v: column c reads the graph's node cols[c] % n, draws
// with its batch's key and its position within its batch, and its rows are encoded.
//
// Keys: key[0] is the op's key prefix combine(combine(0, seed), ordinal) and key[1] the
// first mini-batch index; batch b draws with combine(key[0], key[1] + b), the op key of
// DESIGN §3 (read from the device, so a captured CUDA graph replays with new keys).
//
// GS_IDX is the index type of the graph's indptr and rows (int for the int32 copy of a
// large graph, else long long).
#include "search.cuh"

#ifndef GS_IDX
#define GS_IDX long long
#endif
typedef GS_IDX gs_idx;

#define GS_LOOP(i, n)                                                          \
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < (n);   \
         i += (gs_i64)gridDim.x * blockDim.x)

__device__ __forceinline__ gs_i64 gs_count(const gs_i64* __restrict__ ncols, gs_i64 C) {
    return ncols == nullptr ? C : *ncols;
}

// the first index in [0, m) whose cols[i] >= x (cols grouped by batch, batches ascending)
__device__ __forceinline__ gs_i64 gs_first_at_least(const gs_i64* __restrict__ cols,
                                                    gs_i64 m, gs_i64 x) {
    gs_i64 lo = 0, hi = m;
    while (lo < hi) {
        const gs_i64 mid = lo + ((hi - lo) >> 1);
        if (cols[mid] < x) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// Per column c < C: the number of edges it samples, into counts[c] (0 for padding); the
// host turns them into the result's indptr by an inclusive scan (indptr[0] = 0 set here).
extern "C" __global__ void gs_sample_counts(const gs_idx* __restrict__ indptr,
                                            const gs_i64* __restrict__ cols, gs_i64 C,
                                            const gs_i64* __restrict__ ncols, gs_i64 n,
                                            gs_i64 k, int replace,
                                            gs_i64* __restrict__ counts,
                                            gs_i64* __restrict__ indptr_out) {
    const gs_i64 m = gs_count(ncols, C);
    GS_LOOP(c, C) {
        gs_i64 cnt = 0;
        if (c < m) {
            const gs_i64 v = n > 0 ? cols[c] % n : cols[c];
            const gs_i64 deg = (gs_i64)indptr[v + 1] - (gs_i64)indptr[v];
            cnt = replace ? (deg > 0 ? k : 0) : (deg < k ? deg : k);
        }
        counts[c] = cnt;
        if (c == 0) indptr_out[0] = 0;
    }
}

// One thread per column c < ncols: its edges of the sample at indptr_out[c] ..., in column
// order: rows_out (the graph's row, + b * n in a super-batch) and pos_out (the edge's
// position in the graph). Without replacement a column of deg <= k edges keeps them all;
// else Floyd's k draws (draw i: t = uniform_int(word(col, i), j + 1), j = deg - k + i; t,
// or j when t was drawn before); with replacement draw i takes uniform_int(word(col, i),
// deg). The draws are sorted (insertion sort in the output: k is small) before the gather.
extern "C" __global__ void gs_sample_uniform(const gs_idx* __restrict__ indptr,
                                             const gs_idx* __restrict__ rows,
                                             const gs_i64* __restrict__ cols, gs_i64 C,
                                             const gs_i64* __restrict__ ncols, gs_i64 n,
                                             gs_i64 k, int replace,
                                             const gs_u64* __restrict__ key,
                                             const gs_i64* __restrict__ indptr_out,
                                             gs_i64* __restrict__ rows_out,
                                             gs_i64* __restrict__ pos_out) {
    const gs_i64 m = gs_count(ncols, C);
    GS_LOOP(c, m) {
        const gs_i64 id = cols[c];
        const gs_i64 b = n > 0 ? id / n : 0;
        const gs_i64 v = n > 0 ? id - b * n : id;
        const gs_i64 start = (gs_i64)indptr[v];
        const gs_i64 deg = (gs_i64)indptr[v + 1] - start;
        const gs_i64 out = indptr_out[c];
        const gs_i64 shift = b * n;
        if (!replace && deg <= k) {
            for (gs_i64 j = 0; j < deg; ++j) {
                rows_out[out + j] = (gs_i64)rows[start + j] + shift;
                pos_out[out + j] = start + j;
            }
            continue;
        }
        if (deg == 0) continue;              // with replacement: an empty column draws nothing
        // the column's position within its batch keys its draws (DESIGN §3)
        const gs_i64 position = n > 0 ? c - gs_first_at_least(cols, m, b * n) : c;
        const gs_u64 base = gs_combine(key[0], (gs_i64)key[1] + b);
        gs_i64* S = pos_out + out;           // the draws, then sorted in place
        for (gs_i64 i = 0; i < k; ++i) {
            const gs_u64 w = gs_word(base, position, i);
            gs_i64 t;
            if (replace) {
                t = gs_uniform_int(w, deg);
            } else {
                const gs_i64 j = deg - k + i;
                t = gs_uniform_int(w, j + 1);
                for (gs_i64 q = 0; q < i; ++q) {
                    if (S[q] == t) { t = j; break; }
                }
            }
            gs_i64 q = i;                    // insertion: S[0..i] stays sorted
            while (q > 0 && S[q - 1] > t) { S[q] = S[q - 1]; --q; }
            S[q] = t;
        }
        for (gs_i64 i = 0; i < k; ++i) {
            const gs_i64 e = start + S[i];
            rows_out[out + i] = (gs_i64)rows[e] + shift;
            S[i] = e;
        }
    }
}
