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
#include "groups.cuh"
#include "scan.cuh"
#include "search.cuh"

#ifndef GS_DTYPE0
#define GS_DTYPE0 float
#endif

typedef GS_DTYPE0 gs_t;

#include "tree.cuh"                          // arithmetic, op codes, gs_push / gs_close

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
// out[e] = sum_f U[row, f] * V[col, f], each product rounded, added left to right. Where F
// is a multiple of a 16-byte vector's elements and both tables start 16-byte aligned (so
// does every row), a thread loads its rows 16 bytes at a time: a quarter of the load
// instructions for float32 (each touching a row's sector once where one load a feature
// came back to it), the same products and additions in the same order.
template <typename T> struct gs_vec_of;
template <> struct gs_vec_of<float> { typedef float4 type; };
template <> struct gs_vec_of<double> { typedef double2 type; };
typedef gs_vec_of<gs_t>::type gs_v;
#define GS_VEC_N ((int)(sizeof(gs_v) / sizeof(gs_t)))

// acc plus a vector's products after its first, in order
__device__ __forceinline__ float gs_dot_tail(float acc, float4 a, float4 b) {
    acc = gs_add(acc, gs_mul(a.y, b.y));
    acc = gs_add(acc, gs_mul(a.z, b.z));
    return gs_add(acc, gs_mul(a.w, b.w));
}
__device__ __forceinline__ double gs_dot_tail(double acc, double2 a, double2 b) {
    return gs_add(acc, gs_mul(a.y, b.y));
}

extern "C" __global__ void gs_edge_dot(const gs_t* __restrict__ u, const gs_t* __restrict__ v,
                                       const gs_i64* __restrict__ indptr, gs_i64 C,
                                       const gs_i64* __restrict__ rows, gs_i64 E, gs_i64 F,
                                       gs_t* __restrict__ out) {
    const bool vec = F % GS_VEC_N == 0 && ((unsigned long long)u % sizeof(gs_v)) == 0 &&
                     ((unsigned long long)v % sizeof(gs_v)) == 0;
    for (gs_i64 e = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; e < E;
         e += (gs_i64)gridDim.x * blockDim.x) {
        const gs_t* __restrict__ ur = u + rows[e] * F;
        const gs_t* __restrict__ vc = v + gs_owner(indptr, C, e) * F;
        gs_t acc;
        if (vec) {
            const gs_v* __restrict__ a = reinterpret_cast<const gs_v*>(ur);
            const gs_v* __restrict__ b = reinterpret_cast<const gs_v*>(vc);
            gs_v x = a[0], y = b[0];                        // (whole vectors: 16-byte loads)
            acc = gs_dot_tail(gs_mul(x.x, y.x), x, y);
            for (gs_i64 k = 1; k < F / GS_VEC_N; ++k) {
                x = a[k], y = b[k];
                acc = gs_dot_tail(gs_add(acc, gs_mul(x.x, y.x)), x, y);
            }
        } else {
            acc = gs_mul(ur[0], vc[0]);
            for (gs_i64 f = 1; f < F; ++f) acc = gs_add(acc, gs_mul(ur[f], vc[f]));
        }
        out[e] = acc;
    }
}

// ----------------------------------------------------------------------------- one feature
// The same tree for one feature (F = 1) without a read-back. The tree is aligned on offsets
// from a segment's start, so a group of GS_GROUP = 32 * 32 consecutive terms starting at
// ptr[s] + GS_GROUP * g (the last group of a segment may be shorter) reduces to one value
// alone: the fold, in order, of its chunks' folds (the second level of the tree, or the
// root when the group is the whole segment). A segment of G >= 2 groups gives the tree over
// its G group values as leaves (the levels above the second only see those values), and a
// segment of one group gives that group's value. So:
//   gs_seg_group_ptr     gptr: the exclusive running sum of ceil(length_s / GS_GROUP), in
//                        one single-pass scan (no read-back); the host sizes gval by a
//                        bound, (P + (GS_GROUP - 1) * S) / GS_GROUP;
//   gs_seg_groups        a warp per group of any segment (balanced: a hub column of a
//                        million edges is 977 warps), its value to gval[gptr[s] + g];
//   gs_seg_groups_finish a warp per segment: the tree over its group values, the same way
//                        (blocks of GS_GROUP leaves, each folded as a group, their values
//                        fed in order into a stack of partial groups, gs_push / gs_close),
//                        divided by the length for a mean, 0 for an empty segment.
// gs_seg_warp (a warp walks its whole segment: one launch, but a hub is one warp's serial
// work) computes the same tree in one launch; compute.segment_reduce takes it for at most
// ONE_LAUNCH terms (less host time than three launches), tests compare the two. GS_GROUP,
// gs_owner_warp and gs_group (a group's segment and range): groups.cuh.
#define GS_SEG_BLOCK 128                     // threads per block of the staged kernels
#define GS_SEG_WARPS (GS_SEG_BLOCK / 32)
#ifndef GS_BATCH
#define GS_BATCH 16                          // loads a lane keeps in flight (divides 32)
#endif

// The value of one group: n (1 .. GS_GROUP) terms at positions start .. start + n - 1, cut
// into chunks of 32; lane i folds chunk i left to right, then the chunk values are folded
// in chunk order (every lane computes it: the result is the warp's). The terms are read
// coalesced, GS_BATCH chunks at a time (lane l reads term 32 k + l; past the end it
// re-reads the last term, so a batch's loads are unconditional and all in flight at once),
// into sm, the warp's 32 x 33 staging area (padded: the writes and the chunk-wise reads are
// free of bank conflicts). The operand tests are hoisted out of the unrolled loads (as
// gs_term with one feature). Call with the whole warp.
__device__ __forceinline__ gs_t gs_fold_group(gs_t* sm, int lane, gs_i64 start, int n,
                                              const gs_i64* __restrict__ perm,
                                              const gs_t* __restrict__ x,
                                              const gs_i64* __restrict__ gidx,
                                              const gs_t* __restrict__ d, gs_i64 op) {
    const gs_i64 last = start + n - 1;
    __syncwarp();                            // the previous group's reads of sm are done
#pragma unroll 1
    for (int h = 0; h < 32 && 32 * h < n; h += GS_BATCH) {   // GS_BATCH loads in flight
        gs_t r[GS_BATCH];
        if (perm == nullptr && d == nullptr) {
            if (x) {
#pragma unroll
                for (int k = 0; k < GS_BATCH; ++k) {
                    const gs_i64 p = start + 32 * (h + k) + lane;
                    r[k] = x[p < last ? p : last];
                }
            } else {
#pragma unroll
                for (int k = 0; k < GS_BATCH; ++k) r[k] = (gs_t)1;
            }
        } else {
            gs_i64 item[GS_BATCH];
#pragma unroll
            for (int k = 0; k < GS_BATCH; ++k) {
                const gs_i64 p = start + 32 * (h + k) + lane;
                item[k] = p < last ? p : last;
            }
            if (perm) {
#pragma unroll
                for (int k = 0; k < GS_BATCH; ++k) item[k] = perm[item[k]];
            }
            if (x) {
#pragma unroll
                for (int k = 0; k < GS_BATCH; ++k) r[k] = x[item[k]];
            }
            if (d) {
#pragma unroll
                for (int k = 0; k < GS_BATCH; ++k) item[k] = gidx[item[k]];
                if (x) {                      // torch multiplies by a tensor of ones: exact
#pragma unroll
                    for (int k = 0; k < GS_BATCH; ++k) r[k] = gs_mul(r[k], d[item[k]]);
                } else {
#pragma unroll
                    for (int k = 0; k < GS_BATCH; ++k) r[k] = d[item[k]];
                }
            } else if (!x) {
#pragma unroll
                for (int k = 0; k < GS_BATCH; ++k) r[k] = (gs_t)1;
            }
        }
#pragma unroll
        for (int k = 0; k < GS_BATCH; ++k) sm[33 * (h + k) + lane] = r[k];
    }
    __syncwarp();
    const int chunks = (n + 31) >> 5;
    gs_t v = (gs_t)0;
    if (lane < chunks) {
        const gs_t* __restrict__ c = sm + 33 * lane;
        const int m = n - 32 * lane < 32 ? n - 32 * lane : 32;
        v = c[0];
        for (int t = 1; t < m; ++t) v = gs_combine_op(v, c[t], op);
    }
    gs_t acc = __shfl_sync(0xFFFFFFFFu, v, 0);
    for (int j = 1; j < chunks; ++j) acc = gs_combine_op(acc, __shfl_sync(0xFFFFFFFFu, v, j), op);
    return acc;
}

// gptr[s] = the groups of segments before s (ceil(length / GS_GROUP) each), gptr[S] all of
// them: one thread per segment, a single-pass scan across the blocks (scan.cuh; state: 1 +
// blocks words, zero before the launch), so the group pointer is one launch and a memset.
extern "C" __global__ void gs_seg_group_ptr(const gs_i64* __restrict__ ptr, gs_i64 S,
                                            gs_u64* __restrict__ state,
                                            gs_i64* __restrict__ gptr) {
    const gs_i64 tile = gs_scan_ticket(state);
    const gs_i64 s = tile * blockDim.x + threadIdx.x;
    const gs_i64 g = s < S ? (ptr[s + 1] - ptr[s] + (GS_GROUP - 1)) / GS_GROUP : 0;
    gs_i64 sum;
    const gs_i64 local = gs_block_exclusive(g, &sum);
    const gs_i64 before = gs_scan_exclusive(state, tile, sum);
    if (s < S) gptr[s] = before + local;
    if (s == S - 1) gptr[S] = before + local + g;
}

// Phase 1 (launch with GS_SEG_BLOCK threads a block): warp q < min(gptr[S], Q) reduces
// group g = q - gptr[s] of its segment s (found by a search in gptr), terms
// ptr[s] + GS_GROUP * g .. on, and writes gval[q]. Q: the host's bound on the groups
// ((P + (GS_GROUP - 1) * S) / GS_GROUP), the size of gval.
extern "C" __global__ void __launch_bounds__(GS_SEG_BLOCK)
gs_seg_groups(const gs_i64* __restrict__ ptr, const gs_i64* __restrict__ gptr, gs_i64 S,
              gs_i64 Q, const gs_i64* __restrict__ perm, const gs_t* __restrict__ x,
              const gs_i64* __restrict__ gidx, const gs_t* __restrict__ d, gs_i64 op,
              gs_t* __restrict__ gval) {
    __shared__ gs_t stage[GS_SEG_WARPS][32 * 33];
    const int lane = threadIdx.x & 31;
    gs_t* sm = stage[threadIdx.x >> 5];
    const gs_i64 warps = ((gs_i64)gridDim.x * blockDim.x) >> 5;
    const gs_i64 total = gptr[S] < Q ? gptr[S] : Q;
    for (gs_i64 q = ((gs_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; q < total;
         q += warps) {
        gs_i64 start;
        int n;
        gs_group(ptr, gptr, S, q, lane, &start, &n);
        const gs_t v = gs_fold_group(sm, lane, start, n, perm, x, gidx, d, op);
        if (lane == 0) gval[q] = v;
    }
}

// Phase 2 (launch with GS_SEG_BLOCK threads a block): a warp per segment; its group values
// gval[gptr[s] .. gptr[s + 1] - 1] are the leaves of the rest of the tree.
extern "C" __global__ void __launch_bounds__(GS_SEG_BLOCK)
gs_seg_groups_finish(const gs_i64* __restrict__ ptr, const gs_i64* __restrict__ gptr,
                     gs_i64 S, const gs_t* __restrict__ gval, gs_i64 op, gs_i64 mean,
                     gs_t* __restrict__ out) {
    __shared__ gs_t stage[GS_SEG_WARPS][32 * 33];
    const int lane = threadIdx.x & 31;
    gs_t* sm = stage[threadIdx.x >> 5];
    const gs_i64 warps = ((gs_i64)gridDim.x * blockDim.x) >> 5;
    for (gs_i64 s = ((gs_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; s < S; s += warps) {
        const gs_i64 a = gptr[s], b = gptr[s + 1];
        gs_t v = (gs_t)0;
        if (b - a == 1) {
            v = gval[a];                                   // one group: the segment's value
        } else if (b - a > 1) {
            gs_t acc[GS_LEVELS];
            int cnt[GS_LEVELS];
            for (int l = 0; l < GS_LEVELS; ++l) cnt[l] = 0;
            for (gs_i64 g = a; g < b; g += GS_GROUP) {     // 1,024 groups: a 2 ** 20 segment
                const int n = b - g < GS_GROUP ? (int)(b - g) : GS_GROUP;
                const gs_t u = gs_fold_group(sm, lane, g, n, nullptr, gval, nullptr, nullptr,
                                             op);
                if (lane == 0) gs_push(acc, cnt, u, op);
            }
            if (lane == 0) v = gs_close(acc, cnt, op);
        }
        if (lane == 0) {
            if (b > a && mean) v = gs_div(v, (gs_t)(ptr[s + 1] - ptr[s]));
            out[s] = v;
        }
    }
}

// One launch, a warp per segment; lane i reduces chunk i of each group of 32 consecutive
// chunks, left to right, and lane 0 feeds the chunk results, in order, into the stack
// (gs_push); at the end gs_close. So every term meets the same operations in the same
// order as in gs_seg_chunks + gs_seg_finish, level by level: bit-equal results.
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
        if (b > a) {
            v = gs_close(acc, cnt, op);
            if (mean) v = gs_div(v, (gs_t)(b - a));
        }
        out[s] = v;
    }
}
