// Kernel family "cdf": weighted individual sampling with replacement by inverse CDF, per
// column (gsample/backend/cuda/sampling.py, weighted_with, is the host side). The CUDA
// backend's definition; the torch backend's (select._weighted_with: one running sum over
// all columns) agrees with it up to float rounding (DESIGN §3).
//
// Column c holds edges ptr[c] .. ptr[c + 1] - 1 with weights w >= 0 (GS_DTYPE0, read as
// double); every step below is one IEEE double operation, rounded alone (_rn intrinsics:
// never contracted, never flushed).
//   scaled   x_e = w_e / max(colmax_c, 2^-1022)    (colmax: the column's largest weight, as
//            the torch code scales, so no column's sum overflows or lives among subnormals)
//   chunks   the column's edges, from its start, in chunks of 32 and groups of 32 chunks
//            (GS_GROUP = 1024, groups.cuh): offset j = g * 1024 + i * 32 + t.
//   a        a_t = a_{t-1} + x_t within the chunk (a_0 = x_0); chunk sum v_i = a_last
//   P        P_0 = 0, P_{i+1} = P_i + v_i over the group's chunks; group sum S_g = P_chunks
//   L        L_e = P_i + a_t (the group's local running sum; L of its last edge is S_g)
//   O        O_0 = 0, O_{g+1} = O_g + S_g over the column's groups; total T_c = O_G
//   cum      cum_e = O_g + L_e  (non-decreasing in e, cum of the last edge = T_c)
// The order depends only on offsets from the column's start, never on where the column sits
// in the array: a super-batch's column sums as its mini-batch's does, bit for bit.
// Draw t of a column with T > 0 takes u = uniform_float(word(key, c, t)) (a super-batch:
// word(base[c], position[c], t)), target = u * T, and the first edge with cum > target (if
// none, as target == T could be, the first with cum == T: no draw lands past the column's
// last positive weight, and a zero weight never raises cum, so it is never drawn). A
// column's k draws are written in ascending offset.
//
// Checks, as device flags (bit 0: a NaN or infinite weight, bit 1: a negative one, bit 2: a
// column with edges and no positive weight), read back with the draws' count.
#include "groups.cuh"
#include "scan.cuh"
#include "search.cuh"

#ifndef GS_DTYPE0
#define GS_DTYPE0 double
#endif

typedef GS_DTYPE0 gs_t;

#define GS_CDF_BLOCK 128                     // threads per block of gs_cdf_groups
#define GS_CDF_WARPS (GS_CDF_BLOCK / 32)
#define GS_CDF_BATCH 16                      // group sums a thread loads at once
#define GS_TINY 0x1.0p-1022                  // the least normal double (DBL_MIN)
#define GS_HUGE 0x1.fffffffffffffp+1023      // the largest finite double (DBL_MAX)
#define GS_BAD_VALUE 1ULL                    // NaN or infinite
#define GS_BAD_NEGATIVE 2ULL
#define GS_BAD_COLUMN 4ULL                   // edges, no positive weight

// Phase 1 (GS_CDF_BLOCK threads a block): warp q < min(gptr[C], Q) takes group q - gptr[c]
// of its column c: stages its x in shared memory (coalesced loads, checks on the raw
// weights), lane i computes chunk i's running sum and v_i, every lane folds the chunk sums
// in order (P of its own chunk, S of the group), lane i writes L of its chunk (coalesced
// stores through shared memory again); local[e] = L_e, gsum[q] = S.
extern "C" __global__ void __launch_bounds__(GS_CDF_BLOCK)
gs_cdf_groups(const gs_i64* __restrict__ ptr, const gs_i64* __restrict__ gptr, gs_i64 C,
              gs_i64 Q, const gs_t* __restrict__ w, const gs_t* __restrict__ colmax,
              double* __restrict__ local, double* __restrict__ gsum,
              gs_u64* __restrict__ flags) {
    __shared__ double stage[GS_CDF_WARPS][32 * 33];          // padded: no bank conflicts
    const int lane = threadIdx.x & 31;
    double* sm = stage[threadIdx.x >> 5];
    const gs_i64 warps = ((gs_i64)gridDim.x * blockDim.x) >> 5;
    const gs_i64 total = gptr[C] < Q ? gptr[C] : Q;
    gs_u64 bad = 0;
    for (gs_i64 q = ((gs_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; q < total;
         q += warps) {
        gs_i64 start;
        int n;
        const gs_i64 c = gs_group(ptr, gptr, C, q, lane, &start, &n);
        const double m = (double)colmax[c];
        const double scale = m > GS_TINY ? m : GS_TINY;     // torch: clamp_min(tiny)
        __syncwarp();                                         // sm's previous group is done
        for (int h = 0; 32 * h < n; ++h) {                    // term 32 h + lane
            const int j = 32 * h + lane;
            double x = 0.0;
            if (j < n) {
                const double raw = (double)w[start + j];
                if (!(fabs(raw) <= GS_HUGE)) bad |= GS_BAD_VALUE;     // NaN fails it too
                if (raw < 0.0) bad |= GS_BAD_NEGATIVE;
                x = __ddiv_rn(raw, scale);
            }
            sm[33 * h + lane] = x;
        }
        __syncwarp();
        const int chunks = (n + 31) >> 5;
        const int len = n - 32 * lane < 32 ? n - 32 * lane : 32;    // lane < chunks: >= 1
        double* mine = sm + 33 * lane;
        double v = 0.0;
        if (lane < chunks) {
            v = mine[0];
            for (int t = 1; t < len; ++t) v = __dadd_rn(v, mine[t]);
        }
        double P = 0.0, S = 0.0;                              // folded in chunk order
        for (int i = 0; i < chunks; ++i) {
            const double vi = __shfl_sync(0xFFFFFFFFu, v, i);
            if (i == lane) P = S;
            S = __dadd_rn(S, vi);
        }
        if (lane < chunks) {
            double a = mine[0];
            mine[0] = __dadd_rn(P, a);
            for (int t = 1; t < len; ++t) {
                a = __dadd_rn(a, mine[t]);
                mine[t] = __dadd_rn(P, a);
            }
        }
        __syncwarp();
        for (int h = 0; 32 * h < n; ++h) {
            const int j = 32 * h + lane;
            if (j < n) local[start + j] = sm[33 * h + lane];
        }
        if (lane == 0) gsum[q] = S;
    }
    for (int d = 16; d > 0; d >>= 1) bad |= __shfl_xor_sync(0xFFFFFFFFu, bad, d);
    if (lane == 0 && bad) atomicOr((unsigned long long*)flags, (unsigned long long)bad);
}

// Phase 2 (one tile of blockDim.x columns a block, by ticket: state holds 1 + blocks words,
// zero before the launch): thread c folds its column's group sums in order, goff[gptr[c] + g]
// = O_g, total[c] = T_c (0 for an empty column), flags a column with edges and T_c = 0, and
// the single-pass scan (scan.cuh) gives optr[c] = k * (columns before c with T > 0),
// optr[C] = k * all of them: the result's indptr, and its size to read back.
extern "C" __global__ void gs_cdf_columns(const gs_i64* __restrict__ gptr, gs_i64 C, gs_i64 k,
                                          const double* __restrict__ gsum,
                                          double* __restrict__ goff, double* __restrict__ total,
                                          gs_u64* __restrict__ state, gs_i64* __restrict__ optr,
                                          gs_u64* __restrict__ flags) {
    const gs_i64 tile = gs_scan_ticket(state);
    const gs_i64 c = tile * blockDim.x + threadIdx.x;
    gs_i64 drawn = 0;
    if (c < C) {
        const gs_i64 a = gptr[c], b = gptr[c + 1];
        double o = 0.0;
        for (gs_i64 q = a; q < b; q += GS_CDF_BATCH) {        // a hub: ~1,000 groups
            double s[GS_CDF_BATCH];                           // loads in flight together
#pragma unroll
            for (int j = 0; j < GS_CDF_BATCH; ++j) s[j] = q + j < b ? gsum[q + j] : 0.0;
#pragma unroll
            for (int j = 0; j < GS_CDF_BATCH; ++j) {
                if (q + j < b) {
                    goff[q + j] = o;
                    o = __dadd_rn(o, s[j]);
                }
            }
        }
        total[c] = o;
        drawn = o > 0.0;
        if (b > a && !drawn) atomicOr((unsigned long long*)flags, GS_BAD_COLUMN);
    }
    gs_i64 sum;
    const gs_i64 local = gs_block_exclusive(drawn, &sum);
    const gs_i64 before = gs_scan_exclusive(state, tile, sum);
    if (c < C) optr[c] = k * (before + local);
    if (c == C - 1) optr[C] = k * (before + local + drawn);
}

// One draw in a column of deg edges from position start, groups q0 .. q0 + G - 1, total T > 0:
// the group first (its end O_{g+1} = cum of its last edge), then the edge within it.
__device__ __forceinline__ gs_i64 gs_cdf_draw(gs_u64 word, gs_i64 start, gs_i64 deg,
                                              gs_i64 q0, gs_i64 G,
                                              const double* __restrict__ local,
                                              const double* __restrict__ goff, double T) {
    const double target = __dmul_rn(gs_uniform_float(word), T);
    const bool past = !(target < T);          // u * T rounded up to T: the first cum == T
    const double y = past ? T : target;
    gs_i64 lo = 0, hi = G - 1;                // the last group's end, T, always qualifies
    while (lo < hi) {
        const gs_i64 mid = lo + ((hi - lo) >> 1);
        const double end = goff[q0 + mid + 1];
        if (past ? end >= y : end > y) hi = mid; else lo = mid + 1;
    }
    const double o = goff[q0 + lo];
    const gs_i64 first = lo * GS_GROUP;
    const gs_i64 n = deg - first < GS_GROUP ? deg - first : GS_GROUP;
    gs_i64 a = 0, b = n - 1;                  // the group's last edge qualifies
    while (a < b) {
        const gs_i64 mid = a + ((b - a) >> 1);
        const double v = __dadd_rn(o, local[start + first + mid]);
        if (past ? v >= y : v > y) b = mid; else a = mid + 1;
    }
    return first + a;
}

// Phase 3, after the read-back of optr[C] = n * k: draw t of the j-th drawn column c (j < n)
// is item j * W + t. With k <= 32, W (a power of two >= k) lanes of a warp hold a column's
// draws and each writes its draw at its rank among them (ties: the earlier draw first), so
// the column's offsets come out ascending; with k > 32, W = k and the host sorts them.
// col[j * k + r] = c, offset[...] = the edge's offset in its column.
extern "C" __global__ void gs_cdf_draws(gs_u64 base, const gs_i64* __restrict__ cbase,
                                        const gs_i64* __restrict__ cpos,
                                        const gs_i64* __restrict__ ptr,
                                        const gs_i64* __restrict__ gptr, gs_i64 C,
                                        const gs_i64* __restrict__ optr, gs_i64 k, gs_i64 W,
                                        gs_i64 n, const double* __restrict__ local,
                                        const double* __restrict__ goff,
                                        const double* __restrict__ total,
                                        gs_i64* __restrict__ col, gs_i64* __restrict__ offset) {
    const gs_i64 items = n * W;
    const gs_i64 padded = (items + 31) & ~(gs_i64)31;        // whole warps for the shuffles
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < padded;
         i += (gs_i64)gridDim.x * blockDim.x) {
        const gs_i64 j = i / W, t = i - j * W;
        const bool live = i < items && t < k;
        gs_i64 c = 0, e = 0;
        if (live) {
            c = gs_owner(optr, C, j * k);                     // the drawn column at j * k
            const gs_u64 word = cbase ? gs_word((gs_u64)cbase[c], cpos[c], t)
                                      : gs_word(base, c, t);
            e = gs_cdf_draw(word, ptr[c], ptr[c + 1] - ptr[c], gptr[c], gptr[c + 1] - gptr[c],
                            local, goff, total[c]);
        }
        gs_i64 at = t;
        if (W <= 32) {
            at = 0;
            for (int s = 0; s < W; ++s) {
                const gs_i64 es = __shfl_sync(0xFFFFFFFFu, e, s, (int)W);
                const int ls = __shfl_sync(0xFFFFFFFFu, (int)live, s, (int)W);
                at += ls && (es < e || (es == e && s < t));
            }
        }
        if (live) {
            col[j * k + at] = c;
            offset[j * k + at] = e;
        }
    }
}
