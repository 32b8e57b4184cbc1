// Kernel family "extract": column and row slicing and transposition of a CSC
// (host code: gsample/backend/cuda/extract.py; semantics, which these kernels reproduce
// edge for edge: gsample/backend/torch/extract.py and gsample/storage.py).
//
// GS_IDX is the index type of the *input* graph's indptr / rows / looked-up ids: long long,
// or int for the int32 copy of a graph with fewer than 2**31 nodes and edges (half the
// traffic of the gathers). Positions, scalars and every output are long long. Each launch
// compiles it for its own index-typed argument: gs_gather_segments' are the rows and a GPU
// cache's rows alone (int for a UVA graph's int32 rows in host memory and its cache's, with
// gs_segment_counts reading its int64 indptr as long long).
//
// Work is spread over output edges (or input edges), never over columns: a thread finds
// its column by binary search in an exclusive scan, so a hub column of a million edges is
// spread over the whole grid.
#include "counters.cuh"
#include "search.cuh"

#ifndef GS_IDX
#define GS_IDX long long
#endif
typedef GS_IDX gs_idx;

#define GS_LOOP(i, n)                                                          \
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < (n);   \
         i += (gs_i64)gridDim.x * blockDim.x)

// -1 marks an empty hash slot and a miss (node ids are >= 0)
#define GS_NONE (-1LL)
#define GS_I64_MAX 0x7FFFFFFFFFFFFFFFLL

// ----------------------------------------------------------------------------- segments
// Start and length of segment seg[i] of indptr (nseg segments, nseg + 1 entries); a segment
// outside [0, nseg) (-1: a column outside a sub-matrix's column space) is empty. counters
// non-null (a UVA graph's GPU cache, gsample/formats/cache.py): counters[0] += the edges the
// segments hold, counters[1] += those of cached ones (slot[seg[i]] >= 0, the column within
// the cache's cE rows: gs_cache_at); a warp's sums, one atomic each (the loop runs whole
// warps: blockDim is a multiple of 32).
extern "C" __global__ void gs_segment_counts(const gs_idx* __restrict__ indptr, gs_i64 nseg,
                                             const gs_i64* __restrict__ seg, gs_i64 n,
                                             gs_i64* __restrict__ starts,
                                             gs_i64* __restrict__ counts,
                                             const gs_i64* __restrict__ slot, gs_i64 cE,
                                             gs_i64* __restrict__ counters) {
    const gs_i64 stride = (gs_i64)gridDim.x * blockDim.x;
    for (gs_i64 w = blockIdx.x * (gs_i64)blockDim.x + (threadIdx.x & ~31); w < n; w += stride) {
        const gs_i64 i = w + (threadIdx.x & 31);
        gs_i64 reads = 0, hits = 0;
        if (i < n) {
            const gs_i64 s = seg[i];
            const bool ok = gs_in_range(s, nseg);
            const gs_i64 a = ok ? (gs_i64)indptr[s] : 0;
            starts[i] = a;
            reads = ok ? (gs_i64)indptr[s + 1] - a : 0;
            counts[i] = reads;
            hits = reads > 0 && gs_cache_at(slot, s, reads, cE) >= 0 ? reads : 0;
        }
        gs_count_reads(reads, hits, counters);
    }
}

// Load-balanced segment gather, one thread per output edge p < total: p belongs to the
// selected segment s owning it in new_indptr (nseg + 1 entries, exclusive scan of the
// counts, new_indptr[nseg] == total); its source edge is starts[s] + p - new_indptr[s].
// index[p] = that edge; rows_out[p] = rows[edge] and eids_out[p] = eids[edge] where the
// input pointer is not null (the same pass, so no second gather over the edges), read from
// a UVA graph's GPU cache where the column is cached (slot non-null: column seg[s]'s edges
// at crows / ceids + slot[seg[s]], cE entries each; the same values).
extern "C" __global__ void gs_gather_segments(const gs_i64* __restrict__ new_indptr, gs_i64 nseg,
                                              const gs_i64* __restrict__ starts, gs_i64 total,
                                              const gs_idx* __restrict__ rows,
                                              const gs_i64* __restrict__ eids,
                                              gs_i64* __restrict__ index,
                                              gs_i64* __restrict__ rows_out,
                                              gs_i64* __restrict__ eids_out,
                                              const gs_i64* __restrict__ seg,
                                              const gs_i64* __restrict__ slot,
                                              const gs_idx* __restrict__ crows,
                                              const gs_i64* __restrict__ ceids, gs_i64 cE) {
    GS_LOOP(p, total) {
        const gs_i64 s = gs_owner(new_indptr, nseg, p);
        const gs_i64 off = p - new_indptr[s];
        const gs_i64 e = starts[s] + off;
        // s is not empty: seg[s] valid; its column read from the cache where all of it lies
        // in the cache's cE rows (gs_cache_at)
        const gs_i64 c = slot != nullptr
                             ? gs_cache_at(slot, seg[s], new_indptr[s + 1] - new_indptr[s], cE)
                             : -1;
        index[p] = e;
        if (rows != nullptr) rows_out[p] = (gs_i64)(c >= 0 ? crows[c + off] : rows[e]);
        if (eids != nullptr) eids_out[p] = c >= 0 && ceids != nullptr ? ceids[c + off] : eids[e];
    }
}

// ----------------------------------------------------------------------------- membership
// Open addressing with linear probing over `cap` (a power of two, >= 2 n: a free slot
// always exists) interleaved (key, value) slots, initialised to (-1, INT64_MAX). The value
// of a key is the smallest position holding it (atomicMin: the first occurrence whatever
// the thread order, so the result is deterministic). Negative keys are never inserted.
__device__ __forceinline__ gs_i64 gs_slot(gs_i64 key, gs_i64 mask) {
    return (gs_i64)(gs_mix64((gs_u64)key) & (gs_u64)mask);
}

extern "C" __global__ void gs_hash_insert(const gs_i64* __restrict__ keys, gs_i64 n,
                                          gs_i64* table, gs_i64 mask) {
    GS_LOOP(i, n) {
        const gs_i64 key = keys[i];
        if (key < 0) continue;
        gs_i64 h = gs_slot(key, mask);
        for (gs_i64 probe = 0; probe <= mask; ++probe) {
            const gs_u64 prev = atomicCAS(reinterpret_cast<gs_u64*>(&table[2 * h]),
                                          (gs_u64)GS_NONE, (gs_u64)key);
            if (prev == (gs_u64)GS_NONE || prev == (gs_u64)key) {
                atomicMin(&table[2 * h + 1], i);
                break;
            }
            h = (h + 1) & mask;
        }
    }
}

__device__ __forceinline__ gs_i64 gs_find(const gs_i64* __restrict__ table, gs_i64 mask,
                                          gs_i64 key) {
    if (key < 0) return GS_NONE;
    gs_i64 h = gs_slot(key, mask);
    for (gs_i64 probe = 0; probe <= mask; ++probe) {
        const gs_i64 k = table[2 * h];
        if (k == key) return table[2 * h + 1];
        if (k == GS_NONE) return GS_NONE;
        h = (h + 1) & mask;
    }
    return GS_NONE;
}

// out[i] = position of ids[i] in the inserted keys, or -1 (a separate launch after the
// inserts, so every insert is visible).
extern "C" __global__ void gs_hash_lookup(const gs_i64* __restrict__ table, gs_i64 mask,
                                          const gs_idx* __restrict__ ids, gs_i64 n,
                                          gs_i64* __restrict__ out) {
    GS_LOOP(i, n) {
        out[i] = gs_find(table, mask, (gs_i64)ids[i]);
    }
}

// Per edge through a per-row map: out[e] = rowmap[rows[e]] (-1 outside [0, nmap)). Row
// slicing of a sub-matrix looks its R rows up once, then maps its E edges with one read.
extern "C" __global__ void gs_map_rows(const gs_idx* __restrict__ rows, gs_i64 n,
                                       const gs_i64* __restrict__ rowmap, gs_i64 nmap,
                                       gs_i64* __restrict__ out) {
    GS_LOOP(e, n) {
        const gs_i64 r = (gs_i64)rows[e];
        out[e] = gs_in_range(r, nmap) ? rowmap[r] : GS_NONE;
    }
}

// Stable compaction of the kept edges (local[e] >= 0); kept: exclusive scan of the flags
// (n + 1 entries). keep[q] = e, rows_out[q] = local[e], eids_out[q] = eids[e] (if eids).
extern "C" __global__ void gs_compact(const gs_i64* __restrict__ local,
                                      const gs_i64* __restrict__ kept, gs_i64 n,
                                      const gs_i64* __restrict__ eids,
                                      gs_i64* __restrict__ keep, gs_i64* __restrict__ rows_out,
                                      gs_i64* __restrict__ eids_out) {
    GS_LOOP(e, n) {
        const gs_i64 pos = local[e];
        if (pos < 0) continue;
        const gs_i64 q = kept[e];
        keep[q] = e;
        rows_out[q] = pos;
        if (eids != nullptr) eids_out[q] = eids[e];
    }
}

// ----------------------------------------------------------------------------- transpose
// Edges in row order (perm: stable sort of the rows): cols_out[p] = the column of edge
// perm[p] (its segment in indptr: ncols + 1 entries, indptr[0] == 0), eids_out[p] =
// eids[perm[p]] (if eids). Also the CSR-order columns of convert.csr_cols (eids null).
extern "C" __global__ void gs_perm_cols(const gs_idx* __restrict__ indptr, gs_i64 ncols,
                                        const gs_i64* __restrict__ perm, gs_i64 n,
                                        const gs_i64* __restrict__ eids,
                                        gs_i64* __restrict__ cols_out,
                                        gs_i64* __restrict__ eids_out) {
    GS_LOOP(p, n) {
        const gs_i64 e = perm[p];
        cols_out[p] = gs_owner(indptr, ncols, e);
        if (eids != nullptr) eids_out[p] = eids[e];
    }
}

// out[r] = the first i in sorted[0:n] with sorted[i] >= r, for r < m: the indptr of the
// rows (m = R + 1) without atomics (equal to the exclusive scan of their counts).
extern "C" __global__ void gs_lower_bounds(const gs_idx* __restrict__ sorted, gs_i64 n, gs_i64 m,
                                           gs_i64* __restrict__ out) {
    GS_LOOP(r, m) {
        gs_i64 lo = 0, hi = n;
        while (lo < hi) {
            const gs_i64 mid = lo + ((hi - lo) >> 1);
            if ((gs_i64)sorted[mid] < r) lo = mid + 1; else hi = mid;
        }
        out[r] = lo;
    }
}
