// Kernel family "sampling": the random draws of individual (node-wise) sampling over
// columns known by their degrees (gsample/backend/torch/select.py states the
// algorithms; the host code around these kernels is shared with the torch backend).
// Work is spread over draws or candidate edges, never over columns, so one hub column
// of a million edges does not serialise a launch.
#include "hash.cuh"

// Words of the hash for given (column, draw) pairs: out[i] = gs_word(base, col[i], draw[i]).
extern "C" __global__ void gs_hash_words(gs_u64 base, const gs_i64* __restrict__ col,
                                         const gs_i64* __restrict__ draw, gs_i64 n,
                                         gs_u64* __restrict__ out) {
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < n;
         i += (gs_i64)gridDim.x * blockDim.x) {
        out[i] = gs_word(base, col[i], draw[i]);
    }
}

// Uniform with replacement: draw t of non-empty column cols[i] (i < n) takes offset
// uniform_int(word(cols[i], t), deg[cols[i]]); out[i * k + t], one thread per draw.
extern "C" __global__ void gs_draw_with_replacement(gs_u64 base, const gs_i64* __restrict__ cols,
                                                    const gs_i64* __restrict__ deg, gs_i64 n,
                                                    gs_i64 k, gs_i64* __restrict__ out) {
    const gs_i64 total = n * k;
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < total;
         i += (gs_i64)gridDim.x * blockDim.x) {
        const gs_i64 c = cols[i / k];
        out[i] = gs_uniform_int(gs_word(base, c, i % k), deg[c]);
    }
}

// Uniform without replacement, Algorithm R over the columns with more than k edges:
// column b (global position cols[b]) has candidates at offsets k .. k + extra_b - 1,
// numbered from ptr[b] (ptr: exclusive prefix sum of extra, nb + 1 entries). Candidate
// offset i draws j = uniform_int(word(col, i), i + 1); if j < k it may take slot j, and
// each slot keeps the largest such offset (atomicMax: the result is order-free).
extern "C" __global__ void gs_reservoir(gs_u64 base, const gs_i64* __restrict__ cols,
                                        const gs_i64* __restrict__ ptr, gs_i64 nb, gs_i64 k,
                                        gs_u64* __restrict__ slots) {
    const gs_i64 total = ptr[nb];
    for (gs_i64 t = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; t < total;
         t += (gs_i64)gridDim.x * blockDim.x) {
        gs_i64 lo = 0, hi = nb;                  // the last b with ptr[b] <= t
        while (hi - lo > 1) {
            const gs_i64 mid = lo + (hi - lo) / 2;
            if (ptr[mid] <= t) lo = mid; else hi = mid;
        }
        const gs_i64 i = k + (t - ptr[lo]);
        const gs_i64 j = gs_uniform_int(gs_word(base, cols[lo], i), i + 1);
        if (j < k) atomicMax(&slots[lo * k + j], (gs_u64)i);
    }
}
