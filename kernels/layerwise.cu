// Kernel family "layerwise": what a layer-wise sampler (LADIES, FastGCN) does to a frontier
// of the graph, without materialising the frontier's column slice (host code:
// gsample/backend/cuda/layerwise.py; semantics: gsample/backend/torch/fused_reduce.py and
// fused_select.py).
//
// Every kernel walks the frontier's edges column by column, a block per column (block-
// stride over the columns), so a hub column of a million edges is spread over a block. The
// frontier is a buffer of C ids of which *ncols are real (C when null); n > 0: a super-batch
// (ids b * n + v; node v of the graph, rows b * n + row).
//
// Row sums (A[:, cols].sum(axis=1)) add exactly: each row's terms become 62-bit fixed-point
// integers at the row's largest binary exponent (pass 1), summed in 128 bits by integer
// atomics (pass 2: integer addition is associative, so the result does not depend on the
// order threads run in: bit-reproducible), converted back once (pass 3). Non-finite terms
// follow IEEE: NaN, or +inf and -inf, give NaN; else an infinity wins. The exponents, flags
// and the sums' low and high words are four arrays (gsample/backend/cuda/rowsum.py): the
// passes read the exponents and add to the low words of rows at random, and interleaving
// the exponents with the flags and the low words with the high ones spread those reads over
// twice the memory (H100, LADIES super-batched 64: the two passes took 0.47 against 0.38 ms
// a mini-batch).
#include "hash.cuh"
#include "scan.cuh"
#include "search.cuh"

#ifndef GS_IDX
#define GS_IDX long long
#endif
#ifndef GS_DTYPE0
#define GS_DTYPE0 float
#endif
typedef GS_IDX gs_idx;
typedef GS_DTYPE0 gs_t;

#define GS_EXP_BIAS 1100                    // stored exponents: e + bias >= 1 (0: no term)
#define GS_NAN 1
#define GS_POS_INF 2
#define GS_NEG_INF 4

// The batch of an encoded id (id / n; n > 0), by a 32-bit division where both fit (a 64-bit
// one is a long subroutine, run here for every row of a super-batch's row space).
__device__ __forceinline__ gs_i64 gs_batch(gs_i64 id, gs_i64 n) {
    if ((gs_u64)id <= 0xFFFFFFFFULL && (gs_u64)n <= 0xFFFFFFFFULL)
        return (gs_i64)((unsigned)id / (unsigned)n);
    return id / n;
}

// Column c of the frontier: its graph node's edge range and the row offset of its batch;
// false for a padding column. With M > 0 an id outside [0, M) is checked here (err, as
// kernels/nodewise.cu's: err[0] a negative one, err[1] one >= M, err[2] / err[3] the
// smallest / largest such id, err[4] any) and is an empty column, so no kernel reads out of
// bounds (the others reach a column's edges only through ptr).
__device__ __forceinline__ bool gs_column(const gs_idx* __restrict__ indptr,
                                          const gs_i64* __restrict__ cols, gs_i64 c, gs_i64 m,
                                          gs_i64 n, gs_i64 M, gs_i64* __restrict__ err,
                                          gs_i64* start, gs_i64* end, gs_i64* shift) {
    if (c >= m) return false;
    const gs_i64 id = cols[c];
    if (M > 0 && (id < 0 || id >= M)) {
        if (id < 0) { err[0] = 1; atomicMin((long long*)&err[2], (long long)id); }
        else { err[1] = 1; atomicMax((long long*)&err[3], (long long)id); }
        err[4] = 1;
        return false;
    }
    const gs_i64 b = n > 0 ? gs_batch(id, n) : 0;
    const gs_i64 v = id - b * n;
    *start = (gs_i64)indptr[v];
    *end = (gs_i64)indptr[v + 1];
    *shift = b * n;
    return true;
}

__device__ __forceinline__ double gs_value(const gs_t* __restrict__ values, gs_i64 e) {
    return values == nullptr ? 1.0 : (double)values[e];
}


// ----------------------------------------------------------------------------- frontier edges
// The kernels below run over the frontier's edges, not its columns: a block per column left
// a hub's column (10**5 edges of an R-MAT graph) to one block while the others idled. The
// frontier's edges are numbered column after column (g = 0 .. ptr[C] - 1, ptr the frontier's
// edge pointer), and tiles of blockDim * GS_ITEMS consecutive g go to the blocks in turn:
// every thread has the same work whatever the degrees, and the edges of a tile keep the
// frontier's order (what the compaction of kept edges needs).
#define GS_ITEMS 4

// ptr[c] = the edges of the frontier's columns before c (padding columns, c >= *ncols, have
// none); ptr[C] = all of them. A tile of blockDim columns per block, scanned across the
// blocks in one pass (scan.cuh); state: 1 + tiles words, zero before the launch. M > 0:
// the ids are checked against [0, M) (gs_column; err: 5 words, zero before the launch).
extern "C" __global__ void gs_frontier_ptr(const gs_idx* __restrict__ indptr,
                                           const gs_i64* __restrict__ cols, gs_i64 C,
                                           const gs_i64* __restrict__ ncols, gs_i64 n,
                                           gs_u64* __restrict__ state,
                                           gs_i64* __restrict__ ptr, gs_i64 M,
                                           gs_i64* __restrict__ err) {
    const gs_i64 m = ncols == nullptr ? C : *ncols;
    const gs_i64 tile = gs_scan_ticket(state);
    const gs_i64 c = tile * blockDim.x + threadIdx.x;
    gs_i64 start = 0, end = 0, shift;
    if (c < C) gs_column(indptr, cols, c, m, n, M, err, &start, &end, &shift);
    const gs_i64 deg = end - start;
    gs_i64 sum;
    const gs_i64 local = gs_block_exclusive(deg, &sum);
    const gs_i64 before = gs_scan_exclusive(state, tile, sum);
    if (c < C) ptr[c] = before + local;
    if (c == C - 1) ptr[C] = before + local + deg;
}

// A tile's columns [lo, hi] (those holding its frontier edges g0 .. g1 - 1; thread 0
// searches, the block shares them). With `stage`, when they are at most GS_STAGE, the block
// also keeps each one's edge pointer, first graph edge and batch offset in shared memory,
// read once per column: an edge's column is then a search in shared memory and its graph
// edge an addition, not a search of the frontier's pointer and three dependent loads (the
// kept-edge passes: 0.10 against 0.11 ms a mini-batch, LADIES super-batched 64, H100; the
// row-sum passes, whose atomics bound them, ran no faster, and are not staged).
#define GS_STAGE 256

struct gs_tile_t {
    gs_i64 lo, hi;
    const gs_i64* ptr;          // staged columns (shared memory); null: not staged
    const gs_i64* base;         // graph edge of frontier edge g: base[i] + g
    const gs_i64* shift;        // row offset of the column's batch
};

// call from every thread: it synchronises the block
__device__ __forceinline__ gs_tile_t gs_tile_columns(const gs_idx* __restrict__ indptr,
                                                     const gs_i64* __restrict__ cols,
                                                     const gs_i64* __restrict__ ptr, gs_i64 C,
                                                     gs_i64 n, gs_i64 g0, gs_i64 g1,
                                                     bool stage) {
    __shared__ gs_i64 bounds[2];
    __shared__ gs_i64 s_ptr[GS_STAGE], s_base[GS_STAGE], s_shift[GS_STAGE];
    __syncthreads();                                   // the previous tile's readers are done
    if (threadIdx.x == 0) {
        bounds[0] = gs_owner(ptr, C, g0);
        bounds[1] = gs_owner(ptr, C, g1 - 1);
    }
    __syncthreads();
    gs_tile_t t;
    t.lo = bounds[0];
    t.hi = bounds[1];
    t.ptr = t.base = t.shift = nullptr;
    const gs_i64 m = t.hi - t.lo + 1;
    if (stage && m <= GS_STAGE) {                      // (the same for the whole block)
        for (gs_i64 i = threadIdx.x; i < m; i += blockDim.x) {
            const gs_i64 c = t.lo + i, p0 = ptr[c];
            s_ptr[i] = p0;
            if (ptr[c + 1] > p0) {      // an empty column (a bad id's too) owns no edge
                const gs_i64 id = cols[c];
                const gs_i64 b = n > 0 ? gs_batch(id, n) : 0;
                s_base[i] = (gs_i64)indptr[id - b * n] - p0;
                s_shift[i] = b * n;
            }
        }
        __syncthreads();
        t.ptr = s_ptr;
        t.base = s_base;
        t.shift = s_shift;
    }
    return t;
}

// Frontier edge g of tile t: its column (*c), its edge in the graph (returned) and its
// batch's row offset (*shift).
__device__ __forceinline__ gs_i64 gs_frontier_edge(const gs_tile_t& t,
                                                   const gs_idx* __restrict__ indptr,
                                                   const gs_i64* __restrict__ cols,
                                                   const gs_i64* __restrict__ ptr, gs_i64 n,
                                                   gs_i64 g, gs_i64* c, gs_i64* shift) {
    if (t.ptr != nullptr) {
        const gs_i64 i = gs_owner(t.ptr, t.hi - t.lo + 1, g);
        *c = t.lo + i;
        *shift = t.shift[i];
        return t.base[i] + g;
    }
    const gs_i64 at = t.lo + gs_owner(ptr + t.lo, t.hi - t.lo + 1, g);
    const gs_i64 id = cols[at];
    const gs_i64 b = n > 0 ? gs_batch(id, n) : 0;
    *c = at;
    *shift = b * n;
    return (gs_i64)indptr[id - b * n] + (g - ptr[at]);
}

// for each tile of the frontier's E = ptr[C] edges (grid-stride), with g0 its first edge and
// t its columns (staged or not: gs_tile_columns); every thread of the block runs every
// iteration (the kernel's parameters indptr, cols and n are read)
#define GS_TILES(g0, t, ptr, C, stage)                                                \
    const gs_i64 gs_E = (ptr)[C];                                                     \
    const gs_i64 gs_tile = (gs_i64)blockDim.x * GS_ITEMS;                             \
    gs_tile_t t;                                                                      \
    for (gs_i64 g0 = blockIdx.x * gs_tile;                                            \
         g0 < gs_E && (t = gs_tile_columns(indptr, cols, ptr, C, n, g0,               \
                                           min(gs_E, g0 + gs_tile), stage), true);    \
         g0 += gridDim.x * gs_tile)

// The items of a tile this thread takes, loaded for all GS_ITEMS before any is used (the
// loads of independent edges in flight together): frontier edge g0 + j * blockDim +
// threadIdx's column c[j] (-1: none), graph edge e[j] and row r[j] (-1: none).
#define GS_LOAD_ITEMS(g0, t, r, e, c)                                                 \
    gs_i64 r[GS_ITEMS], e[GS_ITEMS], c[GS_ITEMS];                                     \
    _Pragma("unroll")                                                                 \
    for (int j = 0; j < GS_ITEMS; ++j) {                                              \
        const gs_i64 g = g0 + j * (gs_i64)blockDim.x + threadIdx.x;                   \
        r[j] = c[j] = -1;                                                             \
        e[j] = 0;                                                                     \
        if (g < gs_E) {                                                               \
            gs_i64 shift;                                                             \
            e[j] = gs_frontier_edge(t, indptr, cols, ptr, n, g, &c[j], &shift);       \
            r[j] = (gs_i64)rows[e[j]] + shift;                                        \
        }                                                                             \
    }

// ----------------------------------------------------------------------------- row sums
// Pass 1 for term x of row r: the row's largest exponent of its finite nonzero terms, and
// flags of its non-finite ones.
__device__ __forceinline__ void gs_rowsum_note(int* __restrict__ emax, int* __restrict__ flags,
                                               gs_i64 r, double x) {
    if (isnan(x)) atomicOr(&flags[r], GS_NAN);
    else if (isinf(x)) atomicOr(&flags[r], x > 0 ? GS_POS_INF : GS_NEG_INF);
    else if (x != 0.0) {
        int ex;
        frexp(x, &ex);                                  // |x| < 2 ** ex
        // a plain read first: a hub row is in most columns of a layer's frontier, and
        // atomics on its one word queued at the L2 (its exponent is soon at its max)
        if (emax[r] < ex + GS_EXP_BIAS) atomicMax(&emax[r], ex + GS_EXP_BIAS);
    }
}

// Pass 2 for term x of row r, whose largest exponent is em (biased): sum += round(x *
// 2 ** (62 - em)), a 128-bit two's complement integer in (lo, hi): the carry out of lo is
// counted by the thread whose addition made it.
__device__ __forceinline__ void gs_rowsum_term(gs_u64* __restrict__ lo, gs_u64* __restrict__ hi,
                                               gs_i64 r, double x, int em) {
    const gs_i64 q = (gs_i64)llrint(ldexp(x, 62 - (em - GS_EXP_BIAS)));
    const gs_u64 old = atomicAdd((unsigned long long*)&lo[r], (unsigned long long)q);
    const gs_u64 carry = (old + (gs_u64)q) < old ? 1ULL : 0ULL;
    const gs_u64 high = carry + (q < 0 ? ~0ULL : 0ULL);
    if (high) atomicAdd((unsigned long long*)&hi[r], (unsigned long long)high);
}

__device__ __forceinline__ bool gs_finite_nonzero(double x) {
    return x != 0.0 && !isnan(x) && !isinf(x);
}

// Pass 1 over the frontier's edges.
extern "C" __global__ void gs_rowsum_exponents(const gs_idx* __restrict__ indptr,
                                               const gs_idx* __restrict__ rows,
                                               const gs_t* __restrict__ values,
                                               const gs_i64* __restrict__ cols, gs_i64 C,
                                               const gs_i64* __restrict__ ptr, gs_i64 n,
                                               int* __restrict__ emax,
                                               int* __restrict__ flags) {
    GS_TILES(g0, t, ptr, C, false) {
        for (int j = 0; j < GS_ITEMS; ++j) {
            const gs_i64 g = g0 + j * (gs_i64)blockDim.x + threadIdx.x;
            if (g >= gs_E) break;
            gs_i64 c, shift;
            const gs_i64 e = gs_frontier_edge(t, indptr, cols, ptr, n, g, &c, &shift);
            gs_rowsum_note(emax, flags, (gs_i64)rows[e] + shift, gs_value(values, e));
        }
    }
}

// Pass 2 over the frontier's edges.
extern "C" __global__ void gs_rowsum_add(const gs_idx* __restrict__ indptr,
                                         const gs_idx* __restrict__ rows,
                                         const gs_t* __restrict__ values,
                                         const gs_i64* __restrict__ cols, gs_i64 C,
                                         const gs_i64* __restrict__ ptr, gs_i64 n,
                                         const int* __restrict__ emax,
                                         gs_u64* __restrict__ lo_words,
                                         gs_u64* __restrict__ hi_words) {
    GS_TILES(g0, t, ptr, C, false) {
        // one term after the other: with the four of a thread's atomics in flight at once
        // the pass took 0.31 against 0.27 ms a mini-batch (LADIES super-batched 64, H100)
        for (int j = 0; j < GS_ITEMS; ++j) {
            const gs_i64 g = g0 + j * (gs_i64)blockDim.x + threadIdx.x;
            if (g >= gs_E) break;
            gs_i64 c, shift;
            const gs_i64 e = gs_frontier_edge(t, indptr, cols, ptr, n, g, &c, &shift);
            const double x = gs_value(values, e);
            if (!gs_finite_nonzero(x)) continue;
            const gs_i64 r = (gs_i64)rows[e] + shift;
            gs_rowsum_term(lo_words, hi_words, r, x, emax[r]);
        }
    }
}

// A row's sum from its exponent em, flags f and 128-bit (lo, hi): the value pass 3 writes.
__device__ __forceinline__ gs_t gs_rowsum_value(int em, int f, gs_u64 lo, gs_u64 hi) {
    double v;
    if ((f & GS_NAN) || ((f & GS_POS_INF) && (f & GS_NEG_INF))) v = nan("");
    else if (f & GS_POS_INF) v = __longlong_as_double(0x7FF0000000000000LL);
    else if (f & GS_NEG_INF) v = __longlong_as_double(0xFFF0000000000000LL);
    else if (em == 0) v = 0.0;
    else {
        const double whole = __dadd_rn(__dmul_rn((double)(long long)hi, 0x1.0p64),
                                       (double)lo);
        v = ldexp(whole, em - GS_EXP_BIAS - 62);
    }
    return (gs_t)v;
}

// Pass 3: out[r] for every row of the row space (0 where no term).
extern "C" __global__ void gs_rowsum_finish(const int* __restrict__ emax,
                                            const int* __restrict__ flags,
                                            const gs_u64* __restrict__ lo,
                                            const gs_u64* __restrict__ hi, gs_i64 R,
                                            gs_t* __restrict__ out) {
    for (gs_i64 r = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; r < R;
         r += (gs_i64)gridDim.x * blockDim.x)
        out[r] = emax[r] == 0 && flags[r] == 0 ? (gs_t)0
                                               : gs_rowsum_value(emax[r], flags[r], lo[r], hi[r]);
}

// ----------------------------------------------------------------------------- row sums by chunk
// A super-batch's row space is N graphs' rows: the passes above add into accumulators that
// miss the L2 (LADIES super-batched 64, H100: 0.27 ms of atomics a mini-batch). Here the
// frontier's nonzero terms are first grouped by chunk of GS_CHUNK consecutive rows (a
// count, then a fill: each chunk's terms contiguous, in any order), then a block per chunk
// sums them in shared memory with the same exact arithmetic (the same bits) and writes all
// its rows' sums: no row-space scratch, memset or finishing pass.
#define GS_CHUNK_BITS 11
#define GS_CHUNK (1 << GS_CHUNK_BITS)

// The chunk of frontier edge g's row (-1: no edge, or a zero term, which adds nothing), and
// its row and value.
#define GS_CHUNK_ITEMS(g0, t, ch, r, x)                                               \
    GS_LOAD_ITEMS(g0, t, r, e, c)                                                     \
    gs_i64 ch[GS_ITEMS];                                                              \
    double x[GS_ITEMS];                                                               \
    _Pragma("unroll")                                                                 \
    for (int j = 0; j < GS_ITEMS; ++j) {                                              \
        x[j] = r[j] >= 0 ? gs_value(values, e[j]) : 0.0;                              \
        ch[j] = x[j] != 0.0 ? r[j] >> GS_CHUNK_BITS : -1;                              \
    }

// counts[k] = the frontier's nonzero terms in chunk k (zero before the launch; the lanes of
// a warp on one chunk add once).
extern "C" __global__ void gs_rowsum_chunk_counts(const gs_idx* __restrict__ indptr,
                                                  const gs_idx* __restrict__ rows,
                                                  const gs_t* __restrict__ values,
                                                  const gs_i64* __restrict__ cols, gs_i64 C,
                                                  const gs_i64* __restrict__ ptr, gs_i64 n,
                                                  gs_i64* __restrict__ counts) {
    GS_TILES(g0, t, ptr, C, true) {
        GS_CHUNK_ITEMS(g0, t, ch, r, x)
#pragma unroll
        for (int j = 0; j < GS_ITEMS; ++j) {
            const unsigned peers = __match_any_sync(0xFFFFFFFFu, (unsigned long long)ch[j]);
            if (ch[j] >= 0 && (int)(threadIdx.x & 31) == __ffs(peers) - 1)
                atomicAdd((unsigned long long*)&counts[ch[j]], (unsigned long long)__popc(peers));
        }
    }
}

// Each nonzero term at its chunk's next place: cursor[k] starts at the chunk's first place
// (the counts' exclusive sum) and ends at the next chunk's; local[i] its row in the chunk,
// xs[i] its value.
extern "C" __global__ void gs_rowsum_chunk_fill(const gs_idx* __restrict__ indptr,
                                                const gs_idx* __restrict__ rows,
                                                const gs_t* __restrict__ values,
                                                const gs_i64* __restrict__ cols, gs_i64 C,
                                                const gs_i64* __restrict__ ptr, gs_i64 n,
                                                gs_i64* __restrict__ cursor,
                                                int* __restrict__ local,
                                                gs_t* __restrict__ xs) {
    GS_TILES(g0, t, ptr, C, true) {
        GS_CHUNK_ITEMS(g0, t, ch, r, x)
        const int lane = threadIdx.x & 31;
#pragma unroll
        for (int j = 0; j < GS_ITEMS; ++j) {
            const unsigned peers = __match_any_sync(0xFFFFFFFFu, (unsigned long long)ch[j]);
            const int leader = __ffs(peers) - 1;
            gs_i64 base = 0;
            if (ch[j] >= 0 && lane == leader)
                base = (gs_i64)atomicAdd((unsigned long long*)&cursor[ch[j]],
                                         (unsigned long long)__popc(peers));
            base = __shfl_sync(peers, base, leader);
            if (ch[j] >= 0) {
                const gs_i64 at = base + __popc(peers & ((1u << lane) - 1u));
                local[at] = (int)(r[j] & (GS_CHUNK - 1));
                xs[at] = (gs_t)x[j];
            }
        }
    }
}

// Block k: the sums of rows k * GS_CHUNK .. (k + 1) * GS_CHUNK - 1 (below R) from the chunk's
// terms starts[k] .. starts[k + 1] - 1, exactly as passes 1-3 compute them.
extern "C" __global__ void gs_rowsum_chunks(const gs_i64* __restrict__ starts,
                                            const int* __restrict__ local,
                                            const gs_t* __restrict__ xs, gs_i64 R,
                                            gs_t* __restrict__ out) {
    __shared__ int emax[GS_CHUNK], flags[GS_CHUNK];
    __shared__ gs_u64 lo[GS_CHUNK], hi[GS_CHUNK];
    const gs_i64 k = blockIdx.x, first = k * GS_CHUNK;
    for (int i = threadIdx.x; i < GS_CHUNK; i += blockDim.x) {
        emax[i] = flags[i] = 0;
        lo[i] = hi[i] = 0;
    }
    __syncthreads();
    const gs_i64 a = starts[k], b = starts[k + 1];
    for (gs_i64 i = a + threadIdx.x; i < b; i += blockDim.x)
        gs_rowsum_note(emax, flags, local[i], (double)xs[i]);
    __syncthreads();
    for (gs_i64 i = a + threadIdx.x; i < b; i += blockDim.x) {
        const double x = (double)xs[i];
        if (gs_finite_nonzero(x)) gs_rowsum_term(lo, hi, local[i], x, emax[local[i]]);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < GS_CHUNK && first + i < R; i += blockDim.x)
        out[first + i] = gs_rowsum_value(emax[i], flags[i], lo[i], hi[i]);
}

// ----------------------------------------------------------------------------- collective
// The rows holding an edge of the frontier: cand[r] = 1.
extern "C" __global__ void gs_frontier_rows(const gs_idx* __restrict__ indptr,
                                            const gs_idx* __restrict__ rows,
                                            const gs_i64* __restrict__ cols, gs_i64 C,
                                            const gs_i64* __restrict__ ptr, gs_i64 n,
                                            unsigned char* __restrict__ cand) {
    GS_TILES(g0, t, ptr, C, true) {
        GS_LOAD_ITEMS(g0, t, r, e, c)
#pragma unroll
        for (int j = 0; j < GS_ITEMS; ++j)
            if (r[j] >= 0 && !cand[r[j]]) cand[r[j]] = 1;     // a read first: hub rows (above)
    }
}

// Sort keys of the rows (select.Draws.row_keys), keys[r] for every row r of the row space:
// a candidate's (a row holding a frontier edge, with p[r] > 0 when weighted) is uniform
// word(0, v) >> 1 or weighted exponential(word(0, v)) / p[r] (float64; its bits order like
// the number: it is > 0), for v = r (or r - b * n in batch b, keyed by its batch; p of the
// batch, or with `shared` the one p all batches share); every other row's is INT64_MAX,
// above all of them (the k smallest keys of a batch then say how many candidates it has,
// up to k: no counter every candidate would add to).
// With probs, each value of probs is also checked once (the compiled program's check of
// node_probs, in the pass that reads them anyway): bad[0] = 1 when one is NaN or infinite,
// bad[1] = 1 when one is negative (bad: zero before the launch; read back by the caller).
// cand null: the rows with p[r] > 0 are the candidates (probs are 0 off the slice's rows:
// the probs_support pass said so).
extern "C" __global__ void gs_row_sort_keys(const unsigned char* __restrict__ cand, gs_i64 R,
                                            const gs_t* __restrict__ probs, int shared,
                                            const gs_u64* __restrict__ key, gs_i64 n,
                                            gs_i64* __restrict__ keys,
                                            gs_i64* __restrict__ bad) {
    for (gs_i64 r = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; r < R;
         r += (gs_i64)gridDim.x * blockDim.x) {
        const gs_i64 b = n > 0 ? gs_batch(r, n) : 0;
        const gs_i64 pr = shared ? r - b * n : r;        // the batches share one probs
        if (probs != nullptr && (!shared || b == 0)) {
            const double x = (double)probs[pr];
            if (isnan(x) || isinf(x)) bad[0] = 1;
            else if (x < 0.0) bad[1] = 1;
        }
        const bool is = (cand == nullptr || cand[r])
                        && (probs == nullptr || (double)probs[pr] > 0.0);
        gs_i64 k = 0x7FFFFFFFFFFFFFFFLL;
        if (is) {
            const gs_u64 w = gs_word(gs_combine(key[0], (gs_i64)key[1] + b), 0, r - b * n);
            k = probs == nullptr ? (gs_i64)(w >> 1)
                : __double_as_longlong(__ddiv_rn(gs_exponential(w), (double)probs[pr]));
        }
        keys[r] = k;
    }
}

// newpos[chosen[i]] = i for the chosen rows (newpos starts all -1; entries of chosen at or
// past R are not rows: fewer candidates than draws).
extern "C" __global__ void gs_scatter_positions(const gs_i64* __restrict__ chosen, gs_i64 k,
                                                gs_i64 R, int* __restrict__ newpos) {
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < k;
         i += (gs_i64)gridDim.x * blockDim.x)
        if (chosen[i] < R) newpos[chosen[i]] = (int)i;
}

// mark[picked[i]] = 1 for the rows drawn (mark starts all 0; entries at or past R are not
// rows: fewer candidates than draws).
extern "C" __global__ void gs_mark_rows(const gs_i64* __restrict__ picked, gs_i64 k, gs_i64 R,
                                        unsigned char* __restrict__ mark) {
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < k;
         i += (gs_i64)gridDim.x * blockDim.x)
        if (picked[i] < R) mark[picked[i]] = 1;
}

// bits[r / 32] bit r % 32 set for the rows drawn (bits start all 0; entries of picked at or
// past R are not rows): the kept-edge passes test a row there, in R / 8 bytes that stay in
// the L2 (newpos, 4 bytes a row, did not: a super-batch's row space is N graphs').
extern "C" __global__ void gs_mark_bits(const gs_i64* __restrict__ picked, gs_i64 k, gs_i64 R,
                                        unsigned* __restrict__ bits) {
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < k;
         i += (gs_i64)gridDim.x * blockDim.x)
        if (picked[i] < R) atomicOr(&bits[picked[i] >> 5], 1u << (picked[i] & 31));
}

__device__ __forceinline__ bool gs_drawn(const unsigned* __restrict__ bits,
                                         const int* __restrict__ newpos, gs_i64 r) {
    return bits != nullptr ? (bits[r >> 5] >> (r & 31)) & 1u : newpos[r] >= 0;
}

// The marked rows in row order, in one pass (a single-pass scan, scan.cuh): chosen[i] is
// the i-th marked row, newpos[r] its position i (-1 for a row not marked). Each thread takes
// GS_ITEMS consecutive rows of its block's tile (state: 1 + tiles words, zero before).
extern "C" __global__ void gs_chosen_rows(const unsigned char* __restrict__ mark, gs_i64 R,
                                          gs_u64* __restrict__ state,
                                          gs_i64* __restrict__ chosen,
                                          int* __restrict__ newpos) {
    const gs_i64 tile = gs_scan_ticket(state);
    const gs_i64 r0 = (tile * blockDim.x + threadIdx.x) * GS_ITEMS;
    bool m[GS_ITEMS];
    gs_i64 count = 0;
    for (int j = 0; j < GS_ITEMS; ++j) {
        m[j] = r0 + j < R && mark[r0 + j];
        count += m[j];
    }
    gs_i64 sum;
    const gs_i64 local = gs_block_exclusive(count, &sum);
    gs_i64 at = gs_scan_exclusive(state, tile, sum) + local;
    for (int j = 0; j < GS_ITEMS; ++j) {
        if (r0 + j >= R) break;
        if (m[j]) chosen[at] = r0 + j;
        newpos[r0 + j] = m[j] ? (int)at++ : -1;
    }
}

// The frontier edges of a chosen row that each column keeps: counts[c] (zero before the
// launch; the lanes of a warp on one column add once). A row is chosen where its bit is set
// (bits, gs_mark_bits) or, with bits null, where newpos[r] >= 0. n > 0: a super-batch (rows
// of batch b at b * n), as for every kernel here.
extern "C" __global__ void gs_kept_counts(const gs_idx* __restrict__ indptr,
                                          const gs_idx* __restrict__ rows,
                                          const gs_i64* __restrict__ cols, gs_i64 C,
                                          const gs_i64* __restrict__ ptr, gs_i64 n,
                                          const int* __restrict__ newpos,
                                          const unsigned* __restrict__ bits,
                                          gs_i64* __restrict__ counts) {
    GS_TILES(g0, t, ptr, C, true) {
        GS_LOAD_ITEMS(g0, t, r, e, c)
        bool keep[GS_ITEMS];
#pragma unroll
        for (int j = 0; j < GS_ITEMS; ++j) keep[j] = r[j] >= 0 && gs_drawn(bits, newpos, r[j]);
#pragma unroll
        for (int j = 0; j < GS_ITEMS; ++j) {
            const unsigned peers = __match_any_sync(0xFFFFFFFFu,
                                                    (unsigned long long)(keep[j] ? c[j] : -1));
            if (keep[j] && (int)(threadIdx.x & 31) == __ffs(peers) - 1)
                atomicAdd((unsigned long long*)&counts[c[j]], (unsigned long long)__popc(peers));
        }
    }
}

// The kept edges in the frontier's order (column after column, each column's in graph order):
// rows_out (the chosen row's position), pos_out (the edge's position in the graph). One tile
// per block, taken by ticket; a tile's place in the output is the kept edges of the tiles
// before it (a single-pass scan, scan.cuh; state: 1 + tiles words, zero before the launch).
extern "C" __global__ void gs_kept_edges(const gs_idx* __restrict__ indptr,
                                         const gs_idx* __restrict__ rows,
                                         const gs_i64* __restrict__ cols, gs_i64 C,
                                         const gs_i64* __restrict__ ptr, gs_i64 n,
                                         const int* __restrict__ newpos,
                                         const unsigned* __restrict__ bits,
                                         gs_u64* __restrict__ state,
                                         gs_i64* __restrict__ rows_out,
                                         gs_i64* __restrict__ pos_out) {
    const gs_i64 E = ptr[C];
    const gs_i64 size = (gs_i64)blockDim.x * GS_ITEMS;
    const gs_i64 tile = gs_scan_ticket(state);
    const gs_i64 g0 = tile * size;
    const gs_i64 gs_E = E;
    const gs_tile_t t = gs_tile_columns(indptr, cols, ptr, C, n, g0, min(E, g0 + size), true);
    GS_LOAD_ITEMS(g0, t, r, e, c)
    int p[GS_ITEMS];
    gs_i64 mine = 0;
#pragma unroll
    for (int j = 0; j < GS_ITEMS; ++j) {
        p[j] = r[j] >= 0 && gs_drawn(bits, newpos, r[j]) ? newpos[r[j]] : -1;
        mine += p[j] >= 0;
    }
    gs_i64 total;
    gs_block_exclusive(mine, &total);
    gs_i64 base = gs_scan_exclusive(state, tile, total);
    for (int j = 0; j < GS_ITEMS; ++j) {
        gs_i64 count;
        const gs_i64 at = base + gs_block_exclusive(p[j] >= 0, &count);
        if (p[j] >= 0) {
            rows_out[at] = p[j];
            pos_out[at] = e[j];
        }
        base += count;
    }
}

// ----------------------------------------------------------------------------- row sums of a matrix
// The same exact row sums over a materialised matrix's edges (rows[e], values[e]), one
// thread per edge, in the same scratch (finished by gs_rowsum_finish): A.sum(axis=1) gives
// the same bits whether or not its slice was built.
extern "C" __global__ void gs_rowsum_edges_exponents(const gs_i64* __restrict__ rows,
                                                     const gs_t* __restrict__ values, gs_i64 E,
                                                     int* __restrict__ emax,
                                                     int* __restrict__ flags) {
    for (gs_i64 e = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; e < E;
         e += (gs_i64)gridDim.x * blockDim.x)
        gs_rowsum_note(emax, flags, rows[e], gs_value(values, e));
}

extern "C" __global__ void gs_rowsum_edges_add(const gs_i64* __restrict__ rows,
                                               const gs_t* __restrict__ values, gs_i64 E,
                                               const int* __restrict__ emax,
                                               gs_u64* __restrict__ lo, gs_u64* __restrict__ hi) {
    for (gs_i64 e = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; e < E;
         e += (gs_i64)gridDim.x * blockDim.x) {
        const double x = gs_value(values, e);
        if (!gs_finite_nonzero(x)) continue;
        const gs_i64 r = rows[e];
        gs_rowsum_term(lo, hi, r, x, emax[r]);
    }
}
