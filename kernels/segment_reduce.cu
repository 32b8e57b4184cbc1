// Kernel family "segment_reduce": segment sum / max / mean (per column, or per row through
// the CSR permutation), SpMM (A @ D, A.T @ D), SDDMM and edge broadcasts
// (gsample/backend/cuda/compute.py is the host side and states the dtype rules).
//
// Determinism without float atomics: a segment is reduced as a K-ary tree in a fixed
// order. Its positions are cut into chunks of K consecutive ones (the last may be
// shorter), each chunk is reduced left to right by one thread (gs_seg_chunks), and the
// chunk results, in chunk order, are cut and reduced again by the same kernel, level after
// level, until one value per segment is left (gs_seg_finish writes it, 0 for an empty
// segment, divided by the length for a mean). The order depends only on the segment
// lengths and K, never on the launch, so two runs are bit-identical, and
// compute.reference_segment_reduce replays it in torch. Every thread does at most K steps
// per level, so a segment of a million edges spreads over the grid like a million short
// ones (balanced by construction, no degree binning needed).
//
// Float32 steps are explicit PTX without .ftz, so they keep subnormals whatever -ftz flag
// compiles the module (cp.RawModule appends -ftz=true, which flushes C arithmetic and
// intrinsics alike); float64 steps are the _rn intrinsics (never flushed). No step is
// contracted into an FMA, so a product is rounded before it is added, as torch's separate
// mul and sum round it.
#include "search.cuh"

#ifndef GS_DTYPE0
#define GS_DTYPE0 float
#endif

typedef GS_DTYPE0 gs_t;

// ----------------------------------------------------------------------------- arithmetic
__device__ __forceinline__ float gs_add(float a, float b) {
    float r; asm("add.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r;
}
__device__ __forceinline__ float gs_sub(float a, float b) {
    float r; asm("sub.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r;
}
__device__ __forceinline__ float gs_mul(float a, float b) {
    float r; asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r;
}
__device__ __forceinline__ float gs_div(float a, float b) {
    float r; asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r;
}
__device__ __forceinline__ bool gs_gt(float a, float b) {     // a > b, subnormals kept
    unsigned r;
    asm("{\n\t.reg .pred p;\n\tsetp.gt.f32 p, %1, %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(r) : "f"(a), "f"(b));
    return r != 0;
}
__device__ __forceinline__ bool gs_isnan(float a) {
    unsigned r;
    asm("{\n\t.reg .pred p;\n\tsetp.nan.f32 p, %1, %1;\n\tselp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(r) : "f"(a));
    return r != 0;
}
__device__ __forceinline__ double gs_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double gs_sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ double gs_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double gs_div(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ bool gs_gt(double a, double b) { return a > b; }
__device__ __forceinline__ bool gs_isnan(double a) { return a != a; }

// op codes shared with compute.py
#define GS_SUM 0
#define GS_MAX 1
#define GS_OP_ADD 0
#define GS_OP_SUB 1
#define GS_OP_MUL 2
#define GS_OP_DIV 3
// where a per-edge operand is read (compute.py: PER_EDGE, PER_COL, PER_ROW)
#define GS_AT_EDGE 0
#define GS_AT_COL 1
#define GS_AT_ROW 2

// max propagates NaN (as torch's segment max): a NaN term wins, and once the running
// value is NaN no comparison is true
__device__ __forceinline__ gs_t gs_combine_op(gs_t acc, gs_t t, gs_i64 op) {
    if (op == GS_MAX) return (gs_isnan(t) || gs_gt(t, acc)) ? t : acc;
    return gs_add(acc, t);
}

__device__ __forceinline__ gs_t gs_binary(gs_t a, gs_t b, gs_i64 op) {
    switch (op) {
        case GS_OP_ADD: return gs_add(a, b);
        case GS_OP_SUB: return gs_sub(a, b);
        case GS_OP_MUL: return gs_mul(a, b);
        default: return gs_div(a, b);
    }
}

// ----------------------------------------------------------------------------- reductions
// The term at position p for feature f: item = perm ? perm[p] : p, then
//   x ? x[item, f] : 1            (x has xf features: 1, broadcast over f, or F)
//   times d[gidx[item], f]        when d is given (d has df features: 1 or F)
__device__ __forceinline__ gs_t gs_term(gs_i64 p, gs_i64 f, const gs_i64* __restrict__ perm,
                                        const gs_t* __restrict__ x, gs_i64 xf,
                                        const gs_i64* __restrict__ gidx,
                                        const gs_t* __restrict__ d, gs_i64 df) {
    const gs_i64 item = perm ? perm[p] : p;
    gs_t v = x ? x[item * xf + (xf == 1 ? 0 : f)] : (gs_t)1;
    if (d) {
        const gs_t w = d[gidx[item] * df + (df == 1 ? 0 : f)];
        v = x ? gs_mul(v, w) : w;       // torch multiplies by a tensor of ones: exact
    }
    return v;
}

// One level of the tree. Segment s holds positions ptr[s] .. ptr[s + 1] - 1 and chunks
// cptr[s] .. cptr[s + 1] - 1 (ceil(length / chunk) of them); work item i = c * F + f
// (n = chunks * F items) reduces chunk c of its segment for feature f, left to right:
// out[c, f] = op(... op(term(start), term(start + 1)) ..., term(end - 1)).
extern "C" __global__ void gs_seg_chunks(const gs_i64* __restrict__ ptr,
                                         const gs_i64* __restrict__ cptr, gs_i64 S,
                                         gs_i64 chunk, gs_i64 F, gs_i64 n,
                                         const gs_i64* __restrict__ perm,
                                         const gs_t* __restrict__ x, gs_i64 xf,
                                         const gs_i64* __restrict__ gidx,
                                         const gs_t* __restrict__ d, gs_i64 df, gs_i64 op,
                                         gs_t* __restrict__ out) {
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < n;
         i += (gs_i64)gridDim.x * blockDim.x) {
        const gs_i64 c = i / F, f = i - c * F;
        const gs_i64 s = gs_owner(cptr, S, c);
        const gs_i64 start = ptr[s] + (c - cptr[s]) * chunk;
        const gs_i64 stop = ptr[s + 1];
        const gs_i64 end = stop - start < chunk ? stop : start + chunk;
        gs_t acc = gs_term(start, f, perm, x, xf, gidx, d, df);
        for (gs_i64 p = start + 1; p < end; ++p) {
            acc = gs_combine_op(acc, gs_term(p, f, perm, x, xf, gidx, d, df), op);
        }
        out[i] = acc;
    }
}

// After the last level every non-empty segment has one chunk: out[s, f] = x[cptr[s], f]
// (divided by the segment's length ptr[s + 1] - ptr[s] when mean), 0 for an empty segment.
extern "C" __global__ void gs_seg_finish(const gs_i64* __restrict__ ptr,
                                         const gs_i64* __restrict__ cptr, gs_i64 S, gs_i64 F,
                                         gs_i64 mean, const gs_t* __restrict__ x,
                                         gs_t* __restrict__ out) {
    const gs_i64 n = S * F;
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < n;
         i += (gs_i64)gridDim.x * blockDim.x) {
        const gs_i64 s = i / F, f = i - s * F;
        const gs_i64 len = ptr[s + 1] - ptr[s];
        gs_t v = (gs_t)0;
        if (len > 0) {
            v = x[cptr[s] * F + f];
            if (mean) v = gs_div(v, (gs_t)len);
        }
        out[i] = v;
    }
}

// ----------------------------------------------------------------------------- per edge
__device__ __forceinline__ gs_i64 gs_at(gs_i64 mode, gs_i64 e, const gs_i64* __restrict__ indptr,
                                        gs_i64 C, const gs_i64* __restrict__ rows) {
    if (mode == GS_AT_COL) return gs_owner(indptr, C, e);
    if (mode == GS_AT_ROW) return rows[e];
    return e;
}

// out[e, f] = op(a[at(amode, e), f], b[at(bmode, e), f]) for E edges and F features
// (item i = e * F + f); a null a stands for 1.0; an operand with 1 feature (af or bf = 1)
// is broadcast over f. Edge broadcasts: a = values (per edge), b = the vector (per column
// or per row); SDDMM: a = U (per row), b = V (per column).
extern "C" __global__ void gs_edge_binary(const gs_t* __restrict__ a, gs_i64 amode, gs_i64 af,
                                          const gs_t* __restrict__ b, gs_i64 bmode, gs_i64 bf,
                                          const gs_i64* __restrict__ indptr, gs_i64 C,
                                          const gs_i64* __restrict__ rows, gs_i64 E, gs_i64 F,
                                          gs_i64 op, gs_t* __restrict__ out) {
    const gs_i64 n = E * F;
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < n;
         i += (gs_i64)gridDim.x * blockDim.x) {
        const gs_i64 e = i / F, f = i - e * F;
        const gs_t av = a ? a[gs_at(amode, e, indptr, C, rows) * af + (af == 1 ? 0 : f)]
                          : (gs_t)1;
        const gs_t bv = b[gs_at(bmode, e, indptr, C, rows) * bf + (bf == 1 ? 0 : f)];
        out[i] = gs_binary(av, bv, op);
    }
}

// SDDMM dot over F >= 1 features, one thread per edge (every edge costs F steps: balanced):
// out[e] = sum_f U[row, f] * V[col, f], each product rounded, added left to right.
extern "C" __global__ void gs_edge_dot(const gs_t* __restrict__ u, const gs_t* __restrict__ v,
                                       const gs_i64* __restrict__ indptr, gs_i64 C,
                                       const gs_i64* __restrict__ rows, gs_i64 E, gs_i64 F,
                                       gs_t* __restrict__ out) {
    for (gs_i64 e = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; e < E;
         e += (gs_i64)gridDim.x * blockDim.x) {
        const gs_t* __restrict__ ur = u + rows[e] * F;
        const gs_t* __restrict__ vc = v + gs_owner(indptr, C, e) * F;
        gs_t acc = gs_mul(ur[0], vc[0]);
        for (gs_i64 f = 1; f < F; ++f) acc = gs_add(acc, gs_mul(ur[f], vc[f]));
        out[e] = acc;
    }
}

// ----------------------------------------------------------------------------- one launch
// The same tree for one feature (F = 1) in one launch without a read-back: a warp per
// segment; lane i reduces chunk i of each group of 32 consecutive chunks, left to right,
// and lane 0 feeds the chunk results, in order, into a stack of partial groups, one per
// level (a full group of 32 becomes one term of the level above). At the end the partial
// groups are closed from the bottom up: each is the last chunk of its level. So every term
// meets the same operations in the same order as in gs_seg_chunks + gs_seg_finish, level by
// level: bit-equal results (the tree does not depend on the launch).
#define GS_LEVELS 8                          // 32 ** 8 = 2 ** 40 terms per segment

__device__ __forceinline__ void gs_push(gs_t* acc, int* cnt, gs_t v, gs_i64 op) {
    for (int l = 0; l < GS_LEVELS; ++l) {
        acc[l] = cnt[l] == 0 ? v : gs_combine_op(acc[l], v, op);
        if (++cnt[l] < 32) return;
        v = acc[l];                          // a full group: one term of the level above
        cnt[l] = 0;
    }
}

extern "C" __global__ void gs_seg_warp(const gs_i64* __restrict__ ptr, gs_i64 S,
                                       const gs_i64* __restrict__ perm,
                                       const gs_t* __restrict__ x,
                                       const gs_i64* __restrict__ gidx,
                                       const gs_t* __restrict__ d, gs_i64 op, gs_i64 mean,
                                       gs_t* __restrict__ out) {
    const int lane = threadIdx.x & 31;
    const gs_i64 warps = ((gs_i64)gridDim.x * blockDim.x) >> 5;
    for (gs_i64 s = ((gs_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; s < S; s += warps) {
        const gs_i64 a = ptr[s], b = ptr[s + 1];
        gs_t acc[GS_LEVELS];
        int cnt[GS_LEVELS];
        for (int l = 0; l < GS_LEVELS; ++l) cnt[l] = 0;
        for (gs_i64 g = a; g < b; g += 32 * 32) {
            const gs_i64 start = g + 32 * (gs_i64)lane;
            const bool has = start < b;
            gs_t v = (gs_t)0;
            if (has) {
                const gs_i64 end = b - start < 32 ? b : start + 32;
                v = gs_term(start, 0, perm, x, 1, gidx, d, 1);
                for (gs_i64 p = start + 1; p < end; ++p)
                    v = gs_combine_op(v, gs_term(p, 0, perm, x, 1, gidx, d, 1), op);
            }
            for (int j = 0; j < 32; ++j) {
                const gs_t vj = __shfl_sync(0xFFFFFFFFu, v, j);
                const bool hj = __shfl_sync(0xFFFFFFFFu, has, j);
                if (lane == 0 && hj) gs_push(acc, cnt, vj, op);
            }
        }
        if (lane != 0) continue;
        gs_t v = (gs_t)0;
        if (b > a) {                          // close the partial groups, bottom up
            int top = GS_LEVELS - 1;
            while (cnt[top] == 0) --top;
            for (int l = 0; l < top; ++l) {
                if (cnt[l] == 0) continue;
                const gs_t closed = acc[l];
                cnt[l] = 0;
                acc[l + 1] = cnt[l + 1] == 0 ? closed : gs_combine_op(acc[l + 1], closed, op);
                ++cnt[l + 1];
            }
            v = acc[top];                     // the top group is the root's one chunk
            if (mean) v = gs_div(v, (gs_t)(b - a));
        }
        out[s] = v;
    }
}
