// Kernel family "rowsum": exact row sums, A[:, cols].sum(axis=1) over a frontier of the graph
// without its column slice, and A.sum(axis=1) over a matrix's edges (host code:
// gsample/backend/cuda/rowsum.py and layerwise.py; semantics:
// gsample/backend/torch/fused_reduce.py).
//
// Row sums (A[:, cols].sum(axis=1)) add exactly: each row's terms become 62-bit fixed-point
// integers at the row's largest binary exponent (pass 1), summed in 128 bits by integer
// atomics (pass 2: integer addition is associative, so the result does not depend on the
// order threads run in: bit-reproducible), converted back once (pass 3). Non-finite terms
// follow IEEE: NaN, or +inf and -inf, give NaN; else an infinity wins. The exponents, flags
// and the sums' low and high words are four arrays (gsample/backend/cuda/rowsum.py): the
// passes read the exponents and add to the low words of rows at random, and interleaving
// the exponents with the flags and the low words with the high ones would spread those
// random reads over twice the memory (twice the cache lines per pass).
#include "frontier_tiles.cuh"

#define GS_EXP_BIAS 1100                    // stored exponents: e + bias >= 1 (0: no term)
#define GS_NAN 1
#define GS_POS_INF 2
#define GS_NEG_INF 4
// Rows of a chunk: the chunked passes' unit (below), and the unit one mini-batch's finish
// skips where pass 1 wrote nothing (gs_rowsum_finish's `touched`)
#define GS_CHUNK_BITS 11
#define GS_CHUNK (1 << GS_CHUNK_BITS)

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

// gs_rowsum_term for a sum in shared memory, as four 32-bit words w[0..3] (least significant
// first; lo = w[0] + w[1] * 2**32, hi = w[2] + w[3] * 2**32): shared memory adds 32-bit words
// natively where a 64-bit atomicAdd is a compare-and-swap loop (ATOMS.CAST.SPIN.64, sm_90),
// which spun on a hub row's sum (its thousands of terms in one chunk). Each carry out of a
// word is added to the next by the thread whose addition made it: the same integer.
__device__ __forceinline__ void gs_rowsum_term_words(unsigned* __restrict__ w, double x,
                                                     int em) {
    const gs_i64 q = (gs_i64)llrint(ldexp(x, 62 - (em - GS_EXP_BIAS)));
    const unsigned sign = q < 0 ? 0xFFFFFFFFu : 0u;          // the high words of q
    const unsigned part[4] = {(unsigned)q, (unsigned)((gs_u64)q >> 32), sign, sign};
    unsigned carry = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        // part + carry: at most 2**32, a carry of its own when part is all ones
        const unsigned add = part[i] + carry;
        unsigned next = add < part[i] ? 1u : 0u;
        if (add) {
            const unsigned old = atomicAdd(&w[i], add);
            next += old + add < old ? 1u : 0u;
        }
        carry = next;
    }
}

__device__ __forceinline__ bool gs_finite_nonzero(double x) {
    return x != 0.0 && !isnan(x) && !isinf(x);
}

// gs_rowsum_note over a row space whose 128-bit sums are not cleared before pass 1 (only
// the exponents and flags are: one mini-batch's frontier touches a small share of the
// graph's rows, and a clear of 24 bytes a row was a pass over all of them): the thread
// whose atomicMax first raises row r's exponent from 0 (one thread a row: a biased
// exponent is >= 1) clears the row's sum, before pass 2 (a later launch) adds to it; pass 2
// adds finite nonzero terms only, so it adds to no row without an exponent. A thread that
// writes a row's exponent or flags first marks its chunk, touched[r >> GS_CHUNK_BITS] (a
// read first: a chunk holds many of the frontier's rows), for the finish.
__device__ __forceinline__ void gs_rowsum_note_first(int* __restrict__ emax,
                                                     int* __restrict__ flags,
                                                     gs_u64* __restrict__ lo,
                                                     gs_u64* __restrict__ hi,
                                                     unsigned char* __restrict__ touched,
                                                     gs_i64 r, double x) {
    bool wrote = false;
    if (isnan(x) || isinf(x)) {
        atomicOr(&flags[r], isnan(x) ? GS_NAN : x > 0 ? GS_POS_INF : GS_NEG_INF);
        wrote = true;
    } else if (x != 0.0) {
        int ex;
        frexp(x, &ex);                                  // |x| < 2 ** ex
        if (emax[r] < ex + GS_EXP_BIAS && atomicMax(&emax[r], ex + GS_EXP_BIAS) == 0) {
            lo[r] = 0;
            hi[r] = 0;
            wrote = true;
        }
    }
    const gs_i64 k = r >> GS_CHUNK_BITS;
    if (wrote && !touched[k]) touched[k] = 1;
}

// Pass 1 over the frontier's edges (one mini-batch's row sums, finished by gs_rowsum_finish
// with `touched`): the exponents and flags zero before the launch, the sums (lo_words,
// hi_words) cleared here where pass 2 adds (gs_rowsum_note_first), touched (a byte a chunk
// of the row space) zero before the launch.
extern "C" __global__ void gs_rowsum_exponents(const gs_idx* __restrict__ indptr,
                                               const gs_idx* __restrict__ rows,
                                               const gs_t* __restrict__ values,
                                               const gs_i64* __restrict__ cols, gs_i64 C,
                                               const gs_i64* __restrict__ ptr, gs_i64 n,
                                               int* __restrict__ emax,
                                               int* __restrict__ flags,
                                               gs_u64* __restrict__ lo_words,
                                               gs_u64* __restrict__ hi_words,
                                               unsigned char* __restrict__ touched) {
    GS_TILES(g0, t, ptr, C, false) {
        for (int j = 0; j < GS_ITEMS; ++j) {
            const gs_i64 g = g0 + j * (gs_i64)blockDim.x + threadIdx.x;
            if (g >= gs_E) break;
            gs_i64 c, shift;
            const gs_i64 e = gs_frontier_edge(t, indptr, cols, ptr, n, g, &c, &shift);
            gs_rowsum_note_first(emax, flags, lo_words, hi_words, touched,
                                 (gs_i64)rows[e] + shift, gs_value(values, e));
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
        // one term after the other: a thread's four atomics in flight at once contend for
        // the same rows' lines and make the pass slower, not faster
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

// A row's value as the program divides it (scale null: the value): the unfused p / c, the
// sum rounded to gs_t then divided by its mini-batch's scale (count of them, each for per
// consecutive rows; one for every row where per >= R), an IEEE division as the options
// compile it (--prec-div=true, as PyTorch's DivFunctor on a 0-dim device tensor): the same
// bits, 0 / c, NaN and infinities included. The scale's index is clamped to its count.
__device__ __forceinline__ gs_t gs_rowsum_scaled(gs_t v, const gs_t* __restrict__ scale,
                                                 gs_i64 r, gs_i64 per, gs_i64 count) {
    if (scale == nullptr) return v;
    gs_i64 b = per > 0 ? r / per : 0;
    if (b >= count) b = count - 1;
    if (b < 0) b = 0;
    return v / scale[b];
}

// Pass 3: out[r] for every row of the row space (0 where no term). A row's sum is read only
// where it has an exponent and no flag (the value of a flagged row does not depend on it),
// so a sum pass 1 did not clear is never read. touched (null: every row read): a byte a
// chunk of rows, set by gs_rowsum_exponents where it wrote an exponent or a flag; a row of
// an untouched chunk is 0 without a read of its scratch (a frontier whose rows lie in few
// of the graph's chunks reads little more than them). scale (null: none): every row divided
// as it is written (gs_rowsum_scaled: the scaled_row_sums pass's p / c, no pass of its own).
extern "C" __global__ void gs_rowsum_finish(const int* __restrict__ emax,
                                            const int* __restrict__ flags,
                                            const gs_u64* __restrict__ lo,
                                            const gs_u64* __restrict__ hi, gs_i64 R,
                                            gs_t* __restrict__ out,
                                            const unsigned char* __restrict__ touched,
                                            const gs_t* __restrict__ scale, gs_i64 per,
                                            gs_i64 count) {
    for (gs_i64 r = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; r < R;
         r += (gs_i64)gridDim.x * blockDim.x) {
        gs_t v = (gs_t)0;
        if (touched == nullptr || touched[r >> GS_CHUNK_BITS]) {
            const int em = emax[r], f = flags[r];
            v = em == 0 && f == 0 ? (gs_t)0
                : f != 0          ? gs_rowsum_value(em, f, 0, 0)
                                  : gs_rowsum_value(em, f, lo[r], hi[r]);
        }
        out[r] = gs_rowsum_scaled(v, scale, r, per, count);
    }
}

// ----------------------------------------------------------------------------- row sums by chunk
// A super-batch's row space is N graphs' rows: the passes above add into accumulators that
// miss the L2, and their atomics bound them. Here the
// frontier's nonzero terms are first grouped by chunk of GS_CHUNK consecutive rows (a
// count, then a fill: each chunk's terms contiguous, in any order), then a block per chunk
// sums them in shared memory with the same exact arithmetic (the same bits) and writes all
// its rows' sums: no row-space scratch, memset or finishing pass.
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

// counts[k] += the items' nonzero terms in chunk k (the lanes of a warp on one chunk add
// once); gs_rowsum_chunk_counts and its fused form with the totals (below).
#define GS_CHUNK_COUNT(counts, ch)                                                             \
    _Pragma("unroll")                                                                          \
    for (int j = 0; j < GS_ITEMS; ++j) {                                                       \
        const unsigned peers = __match_any_sync(0xFFFFFFFFu, (unsigned long long)ch[j]);       \
        if (ch[j] >= 0 && (int)(threadIdx.x & 31) == __ffs(peers) - 1)                         \
            atomicAdd((unsigned long long*)&counts[ch[j]], (unsigned long long)__popc(peers)); \
    }

// counts[k] = the frontier's nonzero terms in chunk k (zero before the launch; the lanes of
// a warp on one chunk add once). `sub` rounds of items a tile (GS_TILES_OF, the host's
// _rounds): a pass that reads every frontier edge and writes little waits on each tile's
// column search and staging, which the rounds share (kernels/layerwise.cu).
extern "C" __global__ void gs_rowsum_chunk_counts(const gs_idx* __restrict__ indptr,
                                                  const gs_idx* __restrict__ rows,
                                                  const gs_t* __restrict__ values,
                                                  const gs_i64* __restrict__ cols, gs_i64 C,
                                                  const gs_i64* __restrict__ ptr, gs_i64 n,
                                                  gs_i64* __restrict__ counts, int sub) {
    GS_TILES_OF(g0, t, ptr, C, true, sub) for (int s = 0; s < sub; ++s) {
        const gs_i64 gs = g0 + s * (gs_i64)blockDim.x * GS_ITEMS;
        GS_CHUNK_ITEMS(gs, t, ch, r, x)
        GS_CHUNK_COUNT(counts, ch)
    }
}

// A term of a chunk: its value and its row in the chunk, written with one store (as two
// arrays, the fill would make two scattered stores a term). (Placing a block's terms by
// chunk in shared memory, a global atomic per block and chunk, is slower still: each block's
// runs of places spread the writes over more of the L2 than the chunks' cursors do.)
struct alignas(2 * sizeof(gs_t)) gs_term_t {
    gs_t x;
    int local;
};

// Each nonzero term at its chunk's next place: cursor[k] starts at the chunk's first place
// (the counts' exclusive sum) and ends at the next chunk's. `sub` rounds of items a tile, as
// the counts take. A round's places are asked for all its items before any is used: the
// cursors' atomics return a value, and one after the other a thread waited on GS_ITEMS
// round trips to the L2 a round where it now waits on one (the terms' order in a chunk is
// any: its sums are order-free). GS_CHUNK_PLACE places a round's items (lane: the thread's in
// its warp) and runs `then` for each item j placed (the fused totals' pass 2; empty here).
#define GS_CHUNK_PLACE(cursor, terms, ch, r, x, lane, then)                            \
    unsigned peers[GS_ITEMS];                                                          \
    gs_i64 base[GS_ITEMS];                                                             \
    _Pragma("unroll")                                                                  \
    for (int j = 0; j < GS_ITEMS; ++j)                                                 \
        peers[j] = __match_any_sync(0xFFFFFFFFu, (unsigned long long)ch[j]);           \
    _Pragma("unroll")                                                                  \
    for (int j = 0; j < GS_ITEMS; ++j) {                                               \
        base[j] = 0;                                                                   \
        if (ch[j] >= 0 && lane == __ffs(peers[j]) - 1)                                 \
            base[j] = (gs_i64)atomicAdd((unsigned long long*)&cursor[ch[j]],           \
                                        (unsigned long long)__popc(peers[j]));         \
    }                                                                                  \
    _Pragma("unroll")                                                                  \
    for (int j = 0; j < GS_ITEMS; ++j) {                                               \
        const gs_i64 at = __shfl_sync(peers[j], base[j], __ffs(peers[j]) - 1);         \
        if (ch[j] >= 0) {                                                              \
            gs_term_t term;                                                            \
            term.x = (gs_t)x[j];                                                       \
            term.local = (int)(r[j] & (GS_CHUNK - 1));                                 \
            terms[at + __popc(peers[j] & ((1u << lane) - 1u))] = term;                 \
            then                                                                       \
        }                                                                              \
    }

extern "C" __global__ void gs_rowsum_chunk_fill(const gs_idx* __restrict__ indptr,
                                                const gs_idx* __restrict__ rows,
                                                const gs_t* __restrict__ values,
                                                const gs_i64* __restrict__ cols, gs_i64 C,
                                                const gs_i64* __restrict__ ptr, gs_i64 n,
                                                gs_i64* __restrict__ cursor,
                                                gs_term_t* __restrict__ terms, int sub) {
    const int lane = threadIdx.x & 31;
    GS_TILES_OF(g0, t, ptr, C, true, sub) for (int s = 0; s < sub; ++s) {
        const gs_i64 gs = g0 + s * (gs_i64)blockDim.x * GS_ITEMS;
        GS_CHUNK_ITEMS(gs, t, ch, r, x)
        GS_CHUNK_PLACE(cursor, terms, ch, r, x, lane, )
    }
}

// Block k: the sums of rows k * GS_CHUNK .. (k + 1) * GS_CHUNK - 1 (below R) from the chunk's
// terms starts[k] .. starts[k + 1] - 1, exactly as passes 1-3 compute them. A thread holds
// its first GS_CHUNK_HELD terms in registers, loaded together before the shared memory is
// cleared (their loads in flight meanwhile), for both passes: a chunk of up to
// GS_CHUNK_HELD * blockDim terms is read once, not twice, and not a term after the other
// behind each pass's atomics; the terms past them (a hub row's chunk) are read as before.
#define GS_CHUNK_HELD 4

__device__ __forceinline__ int gs_term_row(const gs_term_t& term) {
    return term.local & (GS_CHUNK - 1);                 // (the fill's: below GS_CHUNK)
}

// scale (null: none): each row divided by its mini-batch's as it is written (as the finish).
extern "C" __global__ void gs_rowsum_chunks(const gs_i64* __restrict__ starts,
                                            const gs_term_t* __restrict__ terms, gs_i64 R,
                                            gs_t* __restrict__ out,
                                            const gs_t* __restrict__ scale, gs_i64 per,
                                            gs_i64 count) {
    __shared__ int emax[GS_CHUNK], flags[GS_CHUNK];
    __shared__ unsigned words[GS_CHUNK][4];              // a row's 128-bit sum
    const gs_i64 k = blockIdx.x, first = k * GS_CHUNK;
    const gs_i64 a = starts[k], b = starts[k + 1];
    const gs_i64 rest = a + GS_CHUNK_HELD * (gs_i64)blockDim.x;  // the terms not held
    gs_term_t held[GS_CHUNK_HELD];
#pragma unroll
    for (int h = 0; h < GS_CHUNK_HELD; ++h) {
        const gs_i64 i = a + h * (gs_i64)blockDim.x + threadIdx.x;
        held[h].x = 0;
        held[h].local = 0;
        if (i < b) held[h] = terms[i];
    }
    for (int i = threadIdx.x; i < GS_CHUNK; i += blockDim.x) {
        emax[i] = flags[i] = 0;
        words[i][0] = words[i][1] = words[i][2] = words[i][3] = 0;
    }
    __syncthreads();
#pragma unroll
    for (int h = 0; h < GS_CHUNK_HELD; ++h)
        if (a + h * (gs_i64)blockDim.x + threadIdx.x < b)
            gs_rowsum_note(emax, flags, gs_term_row(held[h]), (double)held[h].x);
    for (gs_i64 i = rest + threadIdx.x; i < b; i += blockDim.x) {
        const gs_term_t term = terms[i];
        gs_rowsum_note(emax, flags, gs_term_row(term), (double)term.x);
    }
    __syncthreads();
#pragma unroll
    for (int h = 0; h < GS_CHUNK_HELD; ++h) {
        const double x = (double)held[h].x;
        const int row = gs_term_row(held[h]);
        if (a + h * (gs_i64)blockDim.x + threadIdx.x < b && gs_finite_nonzero(x))
            gs_rowsum_term_words(words[row], x, emax[row]);
    }
    for (gs_i64 i = rest + threadIdx.x; i < b; i += blockDim.x) {
        const gs_term_t term = terms[i];
        const double x = (double)term.x;
        const int row = gs_term_row(term);
        if (gs_finite_nonzero(x)) gs_rowsum_term_words(words[row], x, emax[row]);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < GS_CHUNK && first + i < R; i += blockDim.x) {
        const unsigned* w = words[i];
        const gs_t v = gs_rowsum_value(emax[i], flags[i], w[0] | ((gs_u64)w[1] << 32),
                                       w[2] | ((gs_u64)w[3] << 32));
        out[first + i] = gs_rowsum_scaled(v, scale, first + i, per, count);
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

// ----------------------------------------------------------------------------- sums of every edge
// A.sum() (no axis): one exact sum of every edge value of a matrix, or of each mini-batch's
// edges in a super-batch (its group), with the row sums' arithmetic (a group is a "row"):
// the same bits as gsample/backend/torch/compute.py's exact_sums, in any order. Each thread
// keeps a running exponent (pass 1) or 128-bit sum (pass 2) of its terms of one group, and
// adds it with atomics when its group changes and at its end; a warp whose lanes hold one
// group first combines them by shuffles: one atomic a warp, where a thread per edge on one
// word would queue every term at the L2. Over a super-batch's frontier the warps also
// combine at the end of each tile: the blocks stride over the tiles, so a thread's next
// tile is mostly another batch's, and a flush by every thread at every tile (at its change
// of group) queued a block's worth of atomics a tile on the batch's one word.
struct gs_total_t {
    gs_i64 group;     // the group of the running value (-1: none yet)
    int em, flags;    // pass 1: the largest biased exponent (0: no term) and the flags
    gs_u64 lo, hi;    // pass 2: the running 128-bit sum
};

__device__ __forceinline__ gs_total_t gs_total_start() {
    gs_total_t a;
    a.group = -1;
    a.em = a.flags = 0;
    a.lo = a.hi = 0;
    return a;
}

__device__ __forceinline__ void gs_total_note_flush(int* __restrict__ emax,
                                                    int* __restrict__ flags,
                                                    const gs_total_t& a) {
    if (a.group < 0) return;
    // a plain read first: the group's exponent is soon at its max
    if (a.em && emax[a.group] < a.em) atomicMax(&emax[a.group], a.em);
    if (a.flags) atomicOr(&flags[a.group], a.flags);
}

// Pass 1 for term x of group g.
__device__ __forceinline__ void gs_total_note(int* __restrict__ emax, int* __restrict__ flags,
                                              gs_total_t& a, gs_i64 g, double x) {
    if (g != a.group) {
        gs_total_note_flush(emax, flags, a);
        a.group = g;
        a.em = a.flags = 0;
    }
    if (isnan(x)) a.flags |= GS_NAN;
    else if (isinf(x)) a.flags |= x > 0 ? GS_POS_INF : GS_NEG_INF;
    else if (x != 0.0) {
        int ex;
        frexp(x, &ex);                                  // |x| < 2 ** ex
        if (ex + GS_EXP_BIAS > a.em) a.em = ex + GS_EXP_BIAS;
    }
}

// Pass 1's end, every lane of the warp: its running value added.
__device__ __forceinline__ void gs_total_note_end(int* __restrict__ emax,
                                                  int* __restrict__ flags, gs_total_t& a) {
    const unsigned full = 0xFFFFFFFFu;
    const gs_i64 g0 = __shfl_sync(full, a.group, 0);
    if (g0 >= 0 && __all_sync(full, a.group == g0 || a.group < 0)) {
        int em = a.group < 0 ? 0 : a.em, f = a.group < 0 ? 0 : a.flags;
        for (int o = 16; o > 0; o >>= 1) {
            em = max(em, __shfl_down_sync(full, em, o));
            f |= __shfl_down_sync(full, f, o);
        }
        if ((threadIdx.x & 31) != 0) return;
        a.group = g0;
        a.em = em;
        a.flags = f;
    }
    gs_total_note_flush(emax, flags, a);
}

// The 128-bit (lo, hi) added to group a.group's sum: the carry out of lo counted by the
// thread whose addition made it (integer addition: any order, the same sum).
__device__ __forceinline__ void gs_total_add_flush(gs_u64* __restrict__ lo,
                                                   gs_u64* __restrict__ hi,
                                                   const gs_total_t& a) {
    if (a.group < 0 || (a.lo == 0 && a.hi == 0)) return;
    const gs_u64 old = atomicAdd((unsigned long long*)&lo[a.group], (unsigned long long)a.lo);
    const gs_u64 high = a.hi + ((old + a.lo) < old ? 1ULL : 0ULL);
    if (high) atomicAdd((unsigned long long*)&hi[a.group], (unsigned long long)high);
}

// Pass 2 for term x of group g: sum += round(x * 2 ** (62 - em)), em the group's largest
// exponent (pass 1's), as gs_rowsum_term rounds it.
__device__ __forceinline__ void gs_total_term(const int* __restrict__ emax,
                                              gs_u64* __restrict__ lo, gs_u64* __restrict__ hi,
                                              gs_total_t& a, gs_i64 g, double x) {
    if (!gs_finite_nonzero(x)) return;
    if (g != a.group) {
        gs_total_add_flush(lo, hi, a);
        a.group = g;
        a.em = emax[g];
        a.lo = a.hi = 0;
    }
    const gs_i64 q = (gs_i64)llrint(ldexp(x, 62 - (a.em - GS_EXP_BIAS)));
    const gs_u64 s = a.lo + (gs_u64)q;
    a.hi += (s < a.lo ? 1ULL : 0ULL) + (q < 0 ? ~0ULL : 0ULL);
    a.lo = s;
}

// Pass 2's end, every lane of the warp.
__device__ __forceinline__ void gs_total_add_end(gs_u64* __restrict__ lo,
                                                 gs_u64* __restrict__ hi, gs_total_t& a) {
    const unsigned full = 0xFFFFFFFFu;
    const gs_i64 g0 = __shfl_sync(full, a.group, 0);
    if (g0 >= 0 && __all_sync(full, a.group == g0 || a.group < 0)) {
        gs_u64 l = a.group < 0 ? 0 : a.lo, h = a.group < 0 ? 0 : a.hi;
        for (int o = 16; o > 0; o >>= 1) {
            const gs_u64 ol = __shfl_down_sync(full, (unsigned long long)l, o);
            const gs_u64 oh = __shfl_down_sync(full, (unsigned long long)h, o);
            const gs_u64 s = l + ol;
            h += oh + (s < l ? 1ULL : 0ULL);
            l = s;
        }
        if ((threadIdx.x & 31) != 0) return;
        a.group = g0;
        a.lo = l;
        a.hi = h;
    }
    gs_total_add_flush(lo, hi, a);
}

// Pass 1 over a matrix's E edges (one group). Launched with a multiple of 32 threads a block
// (every lane of a warp reaches the end).
extern "C" __global__ void gs_total_edges_exponents(const gs_t* __restrict__ values, gs_i64 E,
                                                    int* __restrict__ emax,
                                                    int* __restrict__ flags) {
    gs_total_t a = gs_total_start();
    for (gs_i64 e = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; e < E;
         e += (gs_i64)gridDim.x * blockDim.x)
        gs_total_note(emax, flags, a, 0, gs_value(values, e));
    gs_total_note_end(emax, flags, a);
}

// Pass 2 over a matrix's E edges.
extern "C" __global__ void gs_total_edges_add(const gs_t* __restrict__ values, gs_i64 E,
                                              const int* __restrict__ emax,
                                              gs_u64* __restrict__ lo, gs_u64* __restrict__ hi) {
    gs_total_t a = gs_total_start();
    for (gs_i64 e = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; e < E;
         e += (gs_i64)gridDim.x * blockDim.x)
        gs_total_term(emax, lo, hi, a, 0, gs_value(values, e));
    gs_total_add_end(lo, hi, a);
}

// Frontier edge g's group: its column's mini-batch (0 for one mini-batch), below G; -1 for
// a batch out of range (none: the frontier's ids were checked and clamped by gs_frontier_ptr,
// and a bad column holds no edge; guarded all the same before it indexes a group).
__device__ __forceinline__ gs_i64 gs_total_group(gs_i64 shift, gs_i64 n, gs_i64 G) {
    const gs_i64 b = n > 0 ? gs_batch(shift, n) : 0;
    return gs_in_range(b, G) ? b : -1;
}

// The frontier's edges this thread takes (A[:, cols] without the slice; G mini-batches):
// visit(b, x) for each value x of group b, both passes' one walk over the tiles; with more
// than one group, tile_end() after each tile, every lane of the warp (the tile loop is the
// block's: its lanes meet there). Like the chunk passes, which read the same edges, the walk
// stages a tile's columns, loads a round's items before it uses any, and takes `sub` rounds a
// tile: these passes make one atomic a warp and tile, and wait on the tile's column search
// and the loads behind it, not on their atomics (unstaged, a thread's items were four
// searches of the frontier's pointer and four chains of dependent loads, one after the
// other).
template <typename Visit, typename TileEnd>
__device__ __forceinline__ void gs_total_each_edge(const gs_idx* __restrict__ indptr,
                                                   const gs_t* __restrict__ values,
                                                   const gs_i64* __restrict__ cols, gs_i64 C,
                                                   const gs_i64* __restrict__ ptr, gs_i64 n,
                                                   gs_i64 G, int sub, Visit visit,
                                                   TileEnd tile_end) {
    GS_TILES_OF(g0, t, ptr, C, true, sub) {
        for (int s = 0; s < sub; ++s) {
            const gs_i64 gs = g0 + s * (gs_i64)blockDim.x * GS_ITEMS;
            // held as int (a group is below G, a super-batch's mini-batch count) and gs_t:
            // the registers of an SM's sixth block
            int b[GS_ITEMS];
            gs_t x[GS_ITEMS];
#pragma unroll
            for (int j = 0; j < GS_ITEMS; ++j) {
                const gs_i64 g = gs + j * (gs_i64)blockDim.x + threadIdx.x;
                b[j] = -1;
                x[j] = 0;
                if (g < gs_E) {
                    gs_i64 c, shift;
                    const gs_i64 e = gs_frontier_edge(t, indptr, cols, ptr, n, g, &c, &shift);
                    b[j] = (int)gs_total_group(shift, n, G);
                    x[j] = (gs_t)gs_value(values, e);           // (exact: a gs_t's value)
                }
            }
#pragma unroll
            for (int j = 0; j < GS_ITEMS; ++j)
                if (b[j] >= 0) visit(b[j], (double)x[j]);
        }
        if (G > 1) tile_end();
    }
}

// Pass 1 over a frontier's edges (A[:, cols].sum() without the slice; G mini-batches).
extern "C" __global__ void gs_total_exponents(const gs_idx* __restrict__ indptr,
                                              const gs_t* __restrict__ values,
                                              const gs_i64* __restrict__ cols, gs_i64 C,
                                              const gs_i64* __restrict__ ptr, gs_i64 n,
                                              gs_i64 G, int* __restrict__ emax,
                                              int* __restrict__ flags, int sub) {
    gs_total_t a = gs_total_start();
    gs_total_each_edge(
        indptr, values, cols, C, ptr, n, G, sub,
        [&](gs_i64 b, double x) { gs_total_note(emax, flags, a, b, x); },
        [&]() {
            gs_total_note_end(emax, flags, a);
            a = gs_total_start();
        });
    gs_total_note_end(emax, flags, a);
}

// Pass 2 over a frontier's edges.
extern "C" __global__ void gs_total_add(const gs_idx* __restrict__ indptr,
                                        const gs_t* __restrict__ values,
                                        const gs_i64* __restrict__ cols, gs_i64 C,
                                        const gs_i64* __restrict__ ptr, gs_i64 n, gs_i64 G,
                                        const int* __restrict__ emax,
                                        gs_u64* __restrict__ lo, gs_u64* __restrict__ hi,
                                        int sub) {
    gs_total_t a = gs_total_start();
    gs_total_each_edge(
        indptr, values, cols, C, ptr, n, G, sub,
        [&](gs_i64 b, double x) { gs_total_term(emax, lo, hi, a, b, x); },
        [&]() {
            gs_total_add_end(lo, hi, a);
            a = gs_total_start();
        });
    gs_total_add_end(lo, hi, a);
}

// ----------------------------------------------------------------------------- row sums and totals
// A super-batch's totals (gs_total_*) taken by the chunked row sums' passes over the same
// frontier edges (host: layerwise.FUSE_TOTALS): the counts also note each mini-batch's largest
// exponent and flags (gs_total_exponents' pass 1), the fill also adds each term to its
// mini-batch's 128-bit sum (gs_total_add's pass 2), so that LADIES' row sums and normaliser
// read the frontier twice, not four times. The arithmetic is gs_total_*'s, term by term (the
// same bits: integer sums, any order); zero terms, which the chunk passes skip, add nothing
// to either.

// Blocks of GS_SUM_THREADS (the host's _THREADS; the launch bounds refuse more), at most 48
// registers a thread with GS_SUM_MIN_BLOCKS 5 on sm_90: uncapped, ptxas took 56, which left
// 4 of these blocks an SM where the passes without the totals fit 6 (no spills at 48, which
// tests/backend/test_kernels_ptx.py checks; at 40, six blocks, they spill). Other SMs: no cap.
#define GS_SUM_THREADS 256
#ifndef GS_SUM_MIN_BLOCKS
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900
#define GS_SUM_MIN_BLOCKS 5
#else
#define GS_SUM_MIN_BLOCKS 1
#endif
#endif

// GS_CHUNK_ITEMS, and each item's group: its column's mini-batch below G (gs_total_group;
// -1: no edge).
#define GS_CHUNK_ITEMS_GROUPS(g0, t, ch, r, x, b, G)                                  \
    gs_i64 r[GS_ITEMS], e[GS_ITEMS], ch[GS_ITEMS];                                    \
    double x[GS_ITEMS];                                                               \
    int b[GS_ITEMS];                                                                  \
    _Pragma("unroll")                                                                 \
    for (int j = 0; j < GS_ITEMS; ++j) {                                              \
        const gs_i64 g = g0 + j * (gs_i64)blockDim.x + threadIdx.x;                   \
        r[j] = -1;                                                                    \
        e[j] = 0;                                                                     \
        b[j] = -1;                                                                    \
        if (g < gs_E) {                                                               \
            gs_i64 c, shift;                                                          \
            e[j] = gs_frontier_edge(t, indptr, cols, ptr, n, g, &c, &shift);          \
            r[j] = (gs_i64)rows[e[j]] + shift;                                        \
            b[j] = (int)gs_total_group(shift, n, G);                                  \
        }                                                                             \
    }                                                                                 \
    _Pragma("unroll")                                                                 \
    for (int j = 0; j < GS_ITEMS; ++j) {                                              \
        x[j] = r[j] >= 0 ? gs_value(values, e[j]) : 0.0;                              \
        ch[j] = x[j] != 0.0 ? r[j] >> GS_CHUNK_BITS : -1;                              \
    }

// gs_rowsum_chunk_counts, and pass 1 of the G mini-batches' totals into (emax, flags) (zero
// before the launch). Launched with a multiple of 32 threads a block (every lane of a warp
// reaches each tile's end).
extern "C" __global__ void __launch_bounds__(GS_SUM_THREADS, GS_SUM_MIN_BLOCKS)
gs_rowsum_chunk_counts_total(
    const gs_idx* __restrict__ indptr, const gs_idx* __restrict__ rows,
    const gs_t* __restrict__ values, const gs_i64* __restrict__ cols, gs_i64 C,
    const gs_i64* __restrict__ ptr, gs_i64 n, gs_i64* __restrict__ counts, int sub, gs_i64 G,
    int* __restrict__ emax, int* __restrict__ flags) {
    gs_total_t a = gs_total_start();
    GS_TILES_OF(g0, t, ptr, C, true, sub) {
        for (int s = 0; s < sub; ++s) {
            const gs_i64 gs = g0 + s * (gs_i64)blockDim.x * GS_ITEMS;
            GS_CHUNK_ITEMS_GROUPS(gs, t, ch, r, x, b, G)
            GS_CHUNK_COUNT(counts, ch)
#pragma unroll
            for (int j = 0; j < GS_ITEMS; ++j)
                if (ch[j] >= 0 && b[j] >= 0) gs_total_note(emax, flags, a, b[j], x[j]);
        }
        // (as gs_total_exponents: the blocks stride over the tiles, a tile's group is
        // mostly not the previous one's)
        if (G > 1) {
            gs_total_note_end(emax, flags, a);
            a = gs_total_start();
        }
    }
    gs_total_note_end(emax, flags, a);
}

// gs_rowsum_chunk_fill, and pass 2 of the totals into (lo, hi) (zero before the launch) from
// the exponents gs_rowsum_chunk_counts_total noted. Launched with a multiple of 32 threads a
// block.
extern "C" __global__ void __launch_bounds__(GS_SUM_THREADS, GS_SUM_MIN_BLOCKS)
gs_rowsum_chunk_fill_total(
    const gs_idx* __restrict__ indptr, const gs_idx* __restrict__ rows,
    const gs_t* __restrict__ values, const gs_i64* __restrict__ cols, gs_i64 C,
    const gs_i64* __restrict__ ptr, gs_i64 n, gs_i64* __restrict__ cursor,
    gs_term_t* __restrict__ terms, int sub, gs_i64 G, const int* __restrict__ emax,
    gs_u64* __restrict__ lo, gs_u64* __restrict__ hi) {
    const int lane = threadIdx.x & 31;
    gs_total_t a = gs_total_start();
    GS_TILES_OF(g0, t, ptr, C, true, sub) {
        for (int s = 0; s < sub; ++s) {
            const gs_i64 gs = g0 + s * (gs_i64)blockDim.x * GS_ITEMS;
            GS_CHUNK_ITEMS_GROUPS(gs, t, ch, r, x, b, G)
            GS_CHUNK_PLACE(cursor, terms, ch, r, x, lane,
                           if (b[j] >= 0) gs_total_term(emax, lo, hi, a, b[j], x[j]);)
        }
        if (G > 1) {
            gs_total_add_end(lo, hi, a);
            a = gs_total_start();
        }
    }
    gs_total_add_end(lo, hi, a);
}

// ----------------------------------------------------------------------------- listed rows
// LADIES's row probabilities over the frontier slice's distinct rows only (the CUDA listed
// collective sample, gsample/backend/cuda/listed.py): each batch's rows get places in a list
// of `cap` (a map `slot` over the row space, int32, all -1 before the first pass), their sums
// add at those places by the arithmetic above, and the keys of the positive ones are
// compacted by batch for the radix select (kernels/topk.cu): the row-space passes of the
// dense path (its finish and its compaction of candidates, vectors over every row of the
// graph) are gone. A batch whose distinct rows pass `cap` counts past it: the caller reads
// that back and samples by its exact path instead.

// The batch of a listed row (n > 0: a super-batch's encoded rows).
__device__ __forceinline__ gs_i64 gs_listed_batch(gs_i64 r, gs_i64 n) {
    return n > 0 ? gs_batch(r, n) : 0;
}

// Pass 1: a place for each distinct row of the frontier's edges. The thread whose
// compare-and-swap takes a row's slot from -1 claims it; a tile whose columns are one batch's
// adds its claims to the batch's count with one atomic (a block scan places them), any other
// tile claim by claim. A claim within its batch's `cap` writes the row's place in `slot`, the
// row in `list` and clears its exponent, flags and sum there; one past it gives the slot back
// (-1), and the count says so. count: a word a batch, zero before the launch.
extern "C" __global__ void gs_listed_claim(const gs_idx* __restrict__ indptr,
                                           const gs_idx* __restrict__ rows,
                                           const gs_i64* __restrict__ cols, gs_i64 C,
                                           const gs_i64* __restrict__ ptr, gs_i64 n,
                                           int* __restrict__ slot, gs_i64* __restrict__ count,
                                           gs_i64 cap, gs_i64* __restrict__ list,
                                           int* __restrict__ emax, int* __restrict__ flags,
                                           gs_u64* __restrict__ lo, gs_u64* __restrict__ hi,
                                           int sub) {
    __shared__ gs_i64 s_base;
    __shared__ int s_mixed;
    GS_TILES_OF(g0, t, ptr, C, true, sub) {
        // the batch of the tile's first column (a column owning an edge: a valid id)
        const gs_i64 b_lo = gs_listed_batch(cols[t.lo], n);
        for (int s = 0; s < sub; ++s) {
            const gs_i64 gs = g0 + s * (gs_i64)blockDim.x * GS_ITEMS;
            GS_LOAD_ITEMS(gs, t, r, e, c)
            bool mine[GS_ITEMS];
            gs_i64 m = 0;
            int same = 1;
#pragma unroll
            for (int j = 0; j < GS_ITEMS; ++j) {
                mine[j] = r[j] >= 0 && slot[r[j]] == -1 && atomicCAS(&slot[r[j]], -1, -2) == -1;
                m += mine[j];
                if (mine[j] && gs_listed_batch(r[j], n) != b_lo) same = 0;
            }
            // every claim of the round in one batch (a super-batch's frontier lists its
            // batches in turn: all but the rounds at their borders)
            if (threadIdx.x == 0) s_mixed = 0;
            __syncthreads();
            if (!same) s_mixed = 1;
            __syncthreads();
            const bool one = s_mixed == 0;
            gs_i64 at = 0;
            if (one) {                                   // (the same for the whole block)
                gs_i64 total;
                const gs_i64 before = gs_block_exclusive(m, &total);
                if (threadIdx.x == 0)
                    s_base = total ? (gs_i64)atomicAdd((unsigned long long*)&count[b_lo],
                                                       (unsigned long long)total)
                                   : 0;
                __syncthreads();
                at = s_base + before;
            }
            __syncthreads();                   // s_mixed and s_base read before the next round
#pragma unroll
            for (int j = 0; j < GS_ITEMS; ++j) {
                if (!mine[j]) continue;
                const gs_i64 b = one ? b_lo : gs_listed_batch(r[j], n);
                const gs_i64 i = one ? at++
                                     : (gs_i64)atomicAdd((unsigned long long*)&count[b], 1ULL);
                if (i >= cap) {                          // the batch's list is full
                    slot[r[j]] = -1;
                    continue;
                }
                const gs_i64 g = b * cap + i;
                slot[r[j]] = (int)i;
                list[g] = r[j];
                emax[g] = 0;
                flags[g] = 0;
                lo[g] = 0;
                hi[g] = 0;
            }
        }
    }
}

// The place in the lists of frontier edge item j's row (-1: none), its batch's values'
// offset (wcopy > 0: a copy of the values a batch, wcopy edges each) and its term.
#define GS_LISTED_ITEM(j, g, x)                                                       \
    gs_i64 g = -1;                                                                    \
    double x = 0.0;                                                                   \
    if (r[j] >= 0) {                                                                  \
        const int place = slot[r[j]];                                                 \
        if (place >= 0) {                                                             \
            const gs_i64 b = gs_listed_batch(r[j], n);                                \
            g = b * cap + place;                                                      \
            x = gs_value(values, e[j] + b * wcopy);                                   \
        }                                                                             \
    }

// Pass 2: each listed row's largest exponent and flags (gs_rowsum_note at its place).
extern "C" __global__ void gs_listed_exponents(const gs_idx* __restrict__ indptr,
                                               const gs_idx* __restrict__ rows,
                                               const gs_t* __restrict__ values, gs_i64 wcopy,
                                               const gs_i64* __restrict__ cols, gs_i64 C,
                                               const gs_i64* __restrict__ ptr, gs_i64 n,
                                               const int* __restrict__ slot, gs_i64 cap,
                                               int* __restrict__ emax,
                                               int* __restrict__ flags) {
    GS_TILES(g0, t, ptr, C, true) {
        GS_LOAD_ITEMS(g0, t, r, e, c)
#pragma unroll
        for (int j = 0; j < GS_ITEMS; ++j) {
            GS_LISTED_ITEM(j, g, x)
            if (g >= 0) gs_rowsum_note(emax, flags, g, x);
        }
    }
}

// Pass 3: each listed row's 128-bit sum (gs_rowsum_term at its place).
extern "C" __global__ void gs_listed_add(const gs_idx* __restrict__ indptr,
                                         const gs_idx* __restrict__ rows,
                                         const gs_t* __restrict__ values, gs_i64 wcopy,
                                         const gs_i64* __restrict__ cols, gs_i64 C,
                                         const gs_i64* __restrict__ ptr, gs_i64 n,
                                         const int* __restrict__ slot, gs_i64 cap,
                                         const int* __restrict__ emax,
                                         gs_u64* __restrict__ lo, gs_u64* __restrict__ hi) {
    GS_TILES(g0, t, ptr, C, true) {
        GS_LOAD_ITEMS(g0, t, r, e, c)
#pragma unroll
        for (int j = 0; j < GS_ITEMS; ++j) {
            GS_LISTED_ITEM(j, g, x)
            if (g >= 0 && gs_finite_nonzero(x)) gs_rowsum_term(lo, hi, g, x, emax[g]);
        }
    }
}

// Pass 4, over each batch's listed rows (min(count[b], cap) of them): the row's probability
// as the dense finish writes it (gs_rowsum_value, divided by gs_rowsum_scaled at the row),
// checked as the dense draws check node_probs (bad[0]: NaN or infinite, bad[1]: negative;
// zero before the launch), and for a positive one its sort key (layerwise.cu's
// gs_seeded_key: exponential(word) / p) and row, compacted from at[b] (the batch's first
// place, b * cap) up, a block's with one atomic a round. The row space's other rows have
// p = 0: no candidate, nothing to check. Every thread of a block runs every round.
extern "C" __global__ void gs_listed_keys(const gs_i64* __restrict__ count, gs_i64 cap,
                                          gs_i64 copies, const gs_i64* __restrict__ list,
                                          const int* __restrict__ emax,
                                          const int* __restrict__ flags,
                                          const gs_u64* __restrict__ lo,
                                          const gs_u64* __restrict__ hi,
                                          const gs_t* __restrict__ scale, gs_i64 per,
                                          gs_i64 scount, const gs_u64* __restrict__ key,
                                          gs_i64 n, gs_i64* __restrict__ at,
                                          gs_i64* __restrict__ ckeys, gs_i64* __restrict__ crows,
                                          gs_i64* __restrict__ bad) {
    __shared__ gs_i64 s_base;
    for (gs_i64 b = 0; b < copies; ++b) {
        const gs_i64 L = min(count[b], cap);
        const gs_u64 seed = gs_key_seed(key, b);
        for (gs_i64 base = blockIdx.x * (gs_i64)blockDim.x; base < L;
             base += (gs_i64)gridDim.x * blockDim.x) {
            const gs_i64 i = base + threadIdx.x;
            bool is = false;
            gs_i64 k = 0, r = 0;
            if (i < L) {
                const gs_i64 g = b * cap + i;
                const int em = emax[g], f = flags[g];
                const gs_t v = em == 0 && f == 0 ? (gs_t)0
                               : f != 0          ? gs_rowsum_value(em, f, 0, 0)
                                                 : gs_rowsum_value(em, f, lo[g], hi[g]);
                r = list[g];
                const double x = (double)gs_rowsum_scaled(v, scale, r, per, scount);
                if (isnan(x) || isinf(x)) bad[0] = 1;
                else if (x < 0.0) bad[1] = 1;
                is = x > 0.0;
                if (is)
                    k = __double_as_longlong(
                        __ddiv_rn(gs_exponential(gs_combine(seed, r - b * n)), x));
            }
            gs_i64 total;
            const gs_i64 before = gs_block_exclusive(is ? 1 : 0, &total);
            if (threadIdx.x == 0)
                s_base = total ? (gs_i64)atomicAdd((unsigned long long*)&at[b],
                                                   (unsigned long long)total)
                               : 0;
            __syncthreads();
            if (is) {
                ckeys[s_base + before] = k;
                crows[s_base + before] = r;
            }
            __syncthreads();                             // s_base read before the next round
        }
    }
}
