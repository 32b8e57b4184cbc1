// Kernel family "sampling": the random draws of individual (node-wise) sampling over
// columns known by their degrees (gsample/backend/torch/select.py states the
// algorithms; the host code around these kernels is shared with the torch backend).
// Work is spread over draws or candidate edges, never over columns, so one hub column
// of a million edges does not serialise a launch.
#include "search.cuh"

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

// Uniform without replacement, Floyd's algorithm over the columns with more than k edges,
// one thread per column: column b (position cols[b], deg[b] > k edges) makes k draws; draw i
// takes t = uniform_int(word(col, i), j + 1) with j = deg - k + i and adds offset t, or j
// when an earlier draw of the column already added t. out[b * k + i] (unsorted), O(k) draws
// per column whatever its degree (the membership test reads the column's earlier draws).
extern "C" __global__ void gs_floyd(gs_u64 base, const gs_i64* __restrict__ cols,
                                    const gs_i64* __restrict__ deg, gs_i64 nb, gs_i64 k,
                                    gs_i64* __restrict__ out) {
    for (gs_i64 b = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; b < nb;
         b += (gs_i64)gridDim.x * blockDim.x) {
        gs_i64* S = out + b * k;
        const gs_i64 c = cols[b], D = deg[b];
        for (gs_i64 i = 0; i < k; ++i) {
            const gs_i64 j = D - k + i;
            const gs_i64 t = gs_uniform_int(gs_word(base, c, i), j + 1);
            bool seen = false;
            for (gs_i64 m = 0; m < i && !seen; ++m) seen = S[m] == t;
            S[i] = seen ? j : t;
        }
    }
}

// ----------------------------------------------------------------------------- weighted
// The float draws follow random.py and select.Draws step for step. Every rounding step is
// an explicit _rn intrinsic, so the compiler never fuses two of torch's separate tensor ops
// (each rounded on its own) into one FMA; log is CUDA's double log (libdevice __nv_log),
// the function torch's float64 log kernel calls.

// torch.searchsorted(cum[0:n], target, right=True) with the probes of ATen's CUDA
// upper_bound (same midpoints: the same answer even where rounding broke monotonicity)
__device__ __forceinline__ gs_i64 gs_search_right(const double* __restrict__ cum, gs_i64 n,
                                                  double target) {
    gs_i64 lo = 0, hi = n;
    while (lo < hi) {
        const gs_i64 mid = lo + ((hi - lo) >> 1);
        if (!(cum[mid] > target)) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// Weighted without replacement, exponential keys (A-Res): one thread per candidate edge,
// out[i] = exponential(word(col[i], offset[i])) / probs[i] (probs: float64, > 0).
extern "C" __global__ void gs_exp_keys(gs_u64 base, const gs_i64* __restrict__ col,
                                       const gs_i64* __restrict__ offset,
                                       const double* __restrict__ probs, gs_i64 n,
                                       double* __restrict__ out) {
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < n;
         i += (gs_i64)gridDim.x * blockDim.x) {
        out[i] = __ddiv_rn(gs_exponential(gs_word(base, col[i], offset[i])), probs[i]);
    }
}

// ----------------------------------------------------------------------------- collective
// Row keys without replacement, one thread per candidate row of global id gid[i]:
// uniform: sort_key(word(0, gid)) = word >> 1 (int64).
extern "C" __global__ void gs_row_keys(gs_u64 base, const gs_i64* __restrict__ gid, gs_i64 n,
                                       gs_i64* __restrict__ out) {
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < n;
         i += (gs_i64)gridDim.x * blockDim.x) {
        out[i] = (gs_i64)(gs_word(base, 0, gid[i]) >> 1);
    }
}

// weighted: exponential(word(0, gid)) / probs (float64, > 0).
extern "C" __global__ void gs_row_exp_keys(gs_u64 base, const gs_i64* __restrict__ gid,
                                           const double* __restrict__ probs, gs_i64 n,
                                           double* __restrict__ out) {
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < n;
         i += (gs_i64)gridDim.x * blockDim.x) {
        out[i] = __ddiv_rn(gs_exponential(gs_word(base, 0, gid[i])), probs[i]);
    }
}

// Rows with replacement, one thread per draw t < k over n candidates: uniform_int(word(0, t),
// n); with weights (cum: float64 running sum, n entries) the first i with cum[i] >
// uniform_float(word(0, t)) * cum[n - 1], at most n - 1.
extern "C" __global__ void gs_row_draws(gs_u64 base, gs_i64 n, gs_i64 k,
                                        gs_i64* __restrict__ out) {
    for (gs_i64 t = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; t < k;
         t += (gs_i64)gridDim.x * blockDim.x) {
        out[t] = gs_uniform_int(gs_word(base, 0, t), n);
    }
}

extern "C" __global__ void gs_row_draws_weighted(gs_u64 base, const double* __restrict__ cum,
                                                 gs_i64 n, gs_i64 k, gs_i64* __restrict__ out) {
    for (gs_i64 t = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; t < k;
         t += (gs_i64)gridDim.x * blockDim.x) {
        const double target = __dmul_rn(gs_uniform_float(gs_word(base, 0, t)), cum[n - 1]);
        const gs_i64 i = gs_search_right(cum, n, target);
        out[t] = i < n - 1 ? i : n - 1;
    }
}
