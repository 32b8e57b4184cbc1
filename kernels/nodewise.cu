// Kernel family "nodewise": A[:, cols].individual_sample(k) (uniform, with or without
// replacement; weighted with replacement from alias tables) in one launch, without the slice
// and without reading a size back to the host (host code:
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
// large graph, else long long); GS_ROW, the rows' (and the cache's rows') alone where it
// differs: int for a UVA graph's int32 rows in host memory beside its int64 indptr.
#include "counters.cuh"
#include "scan.cuh"
#include "search.cuh"

#ifndef GS_IDX
#define GS_IDX long long
#endif
#ifndef GS_ROW
#define GS_ROW GS_IDX
#endif
typedef GS_IDX gs_idx;
typedef GS_ROW gs_row;

__device__ __forceinline__ gs_i64 gs_count(const gs_i64* __restrict__ ncols, gs_i64 C) {
    return ncols == nullptr ? C : *ncols;
}

// uniform_int(r, n) of hash.cuh, bit for bit, without its 64-bit division (a called routine
// of about 60 instructions) when n < 2**32. x = r >> 1 < 2**63; inv = 1 / n rounded, so
// x * inv is within 3 * 2**-53 of x / n relatively and its quotient q within 2**12 of x / n:
// rem = x - q n (wrapped back) has |rem| < 2**12 n <= 2**44, exact in a double. rem * inv is
// then within 2**-40 of rem / n, closer than any non-integer multiple of 1 / n (n < 2**32) is
// to an integer, so truncating it is off only where rem / n is a nonzero integer, by one:
// -n <= rem <= n after the second step, and two conditional corrections finish it (not
// loops: the compiler turns a subtraction loop back into a division). Every step rounds as
// IEEE says (a host build of this function agrees with % on edge cases and random words).
__device__ __forceinline__ gs_i64 gs_uniform_int_fast(gs_u64 r, gs_i64 n) {
    if ((gs_u64)n >> 32) return gs_uniform_int(r, n);
    const gs_u64 x = r >> 1;
    const double inv = __drcp_rn((double)n);
    const gs_u64 q = (gs_u64)((double)x * inv);
    gs_i64 rem = (gs_i64)(x - q * (gs_u64)n);
    rem -= (gs_i64)((double)rem * inv) * n;
    rem += rem < 0 ? n : 0;
    rem -= rem >= n ? n : 0;
    return rem;
}

// Weighted draw i of a column (with replacement) from the graph's alias tables (the
// alias_table op: per edge e, table[2e] the threshold scaled to 2**53, table[2e + 1] the
// alias edge): slot s = uniform_int(word(col, 2i), deg), kept when word(col, 2i + 1) >> 11
// is below its threshold, else its alias (as gsample.backend.torch.alias.
// draw_with_replacement). Returns the draw's offset within the column.
__device__ __forceinline__ gs_i64 gs_alias_draw(const gs_i64* __restrict__ alias, gs_u64 base,
                                                gs_i64 position, gs_i64 i, gs_i64 start,
                                                gs_i64 deg) {
    const gs_i64 s = gs_uniform_int_fast(gs_word(base, position, 2 * i), deg);
    const gs_u64 coin = gs_word(base, position, 2 * i + 1);
    const gs_i64 e = start + s;
    return (gs_i64)(coin >> 11) < alias[2 * e] ? s : alias[2 * e + 1] - start;
}

// One column's draws: the launch's draw settings and outputs, and the column's own values
// (gs_sample_uniform builds one per column; the functions that take it are inlined, so its
// fields stay in the registers the separate arguments took).
struct gs_column_draws {
    gs_i64 k;                            // draws per column
    int replace;
    const gs_i64* alias;                 // the alias tables, or null (uniform draws)
    gs_i64* rows_out;                    // the result's rows, positions and edge ids
    gs_i64* pos_out;
    gs_i64* eids_out;
    const gs_row* R;                     // the column's rows (the graph's or the cache's)
    const gs_i64* I;                     // its edge ids likewise, or null: no eids_out
    gs_u64 base;                         // its batch's op key
    gs_i64 position;                     // its position within its batch (keys its draws)
    gs_i64 start, deg;                   // its edges in the graph
    gs_i64 shift;                        // b * n: its rows' encoding in a super-batch
    gs_i64 out;                          // its first slot in the result
};

// Draw i of a column before Floyd's check: weighted (alias tables), uniform over deg (with
// replacement), or over j + 1 for j = deg - k + i (without). Returns its offset in the column.
__device__ __forceinline__ gs_i64 gs_draw(const gs_column_draws& a, gs_i64 i) {
    if (a.alias) return gs_alias_draw(a.alias, a.base, a.position, i, a.start, a.deg);
    const gs_u64 w = gs_word(a.base, a.position, i);
    return gs_uniform_int_fast(w, a.replace ? a.deg : a.deg - a.k + i + 1);
}

// Writes the edge at offset d of the column into slot s of its result.
__device__ __forceinline__ void gs_put(const gs_column_draws& a, gs_i64 s, gs_i64 d) {
    a.rows_out[a.out + s] = (gs_i64)a.R[d] + a.shift;
    a.pos_out[a.out + s] = a.start + d;
    if (a.I != nullptr) a.eids_out[a.out + s] = a.I[d];
}

// A group of W lanes (W = 8, 16 or 32, the fewest lanes k <= 32 draws fit; gs_group)
// draws a column: lane i makes draw i, then the group sorts its draws and lane i writes the
// i-th smallest. Every lane of the warp calls this together (its votes and shuffles span the
// warp); `draws` is false for a lane whose group has no column to draw.
//
// Floyd without replacement, without a turn per draw: with t_q the first draw of lane q and
// j_q = deg - k + q, draw i is replaced (by j_i) exactly when t_i is among the draws kept by
// lanes q < i, and those are {t_q : q < i} (a replaced t_q was itself drawn before q) with
// {j_q : q < i, q replaced}. So lane i is replaced when an earlier lane of its group drew the
// same t (one match vote), or else when lane q = t_i - j_0 (the only one whose j_q can be t_i)
// is below it and replaced: a chain of lanes, resolved by pointer jumping (rarely entered: it
// needs t_i >= deg - k).
//
// The sort is a bitonic network over the group's lanes, each merge opening with the
// reflected exchange (lane s with s ^ (size - 1)) so that every exchange keeps the smaller
// value on the lower lane (one predicate per bit of the lane: none per step to hold in
// registers). A lane without a draw holds the largest value, so it sorts last; slot s gets
// the s-th smallest draw, as a rank by comparisons gave (equal draws, with replacement, write
// the same edge whichever goes first).
// When every draw of the warp is below 2**32 - 1, the network runs on 32-bit words.
__device__ __forceinline__ void gs_draw_in_group(int W, int sl, int g, bool draws,
                                                 const gs_column_draws& a) {
    const unsigned FULL = 0xFFFFFFFFu;
    const gs_i64 k = a.k;
    const bool drawer = draws && sl < k;
    gs_i64 d = drawer ? gs_draw(a, sl) : 0;
    if (!a.replace) {
        const unsigned below = ((1u << sl) - 1u) << (g * W);   // the group's lanes before this
        bool seen = (__match_any_sync(FULL, (unsigned long long)d) & below) != 0u;
        const gs_i64 j0 = a.deg - k;
        int next = drawer && !seen && d >= j0 && d - j0 < sl ? (int)(d - j0) : -1;
        while (__any_sync(FULL, next >= 0)) {      // at most 5 rounds: each halves a chain
            const int src = next >= 0 ? next : sl;
            const int seen_there = __shfl_sync(FULL, (int)seen, src, W);
            const int next_there = __shfl_sync(FULL, next, src, W);
            if (next >= 0) {
                if (seen_there) {
                    seen = true;
                    next = -1;
                } else {
                    next = next_there;
                }
            }
        }
        if (drawer && seen) d = j0 + sl;
    }
    if (__all_sync(FULL, !drawer || (gs_u64)d < 0xFFFFFFFFull)) {
        unsigned v = drawer ? (unsigned)d : 0xFFFFFFFFu;
#pragma unroll
        for (int size = 2; size <= 32; size <<= 1) {
            if (size > W) break;
#pragma unroll
            for (int bit = size >> 1; bit > 0; bit >>= 1) {
                const unsigned o = __shfl_xor_sync(FULL, v, bit == size >> 1 ? size - 1 : bit);
                v = (sl & bit) == 0 ? min(v, o) : max(v, o);
            }
        }
        d = (gs_i64)v;
    } else {
        gs_i64 v = drawer ? d : 0x7FFFFFFFFFFFFFFFLL;
#pragma unroll
        for (int size = 2; size <= 32; size <<= 1) {
            if (size > W) break;
#pragma unroll
            for (int bit = size >> 1; bit > 0; bit >>= 1) {
                const gs_i64 o = __shfl_xor_sync(FULL, v, bit == size >> 1 ? size - 1 : bit);
                v = (sl & bit) == 0 ? min(v, o) : max(v, o);
            }
        }
        d = v;
    }
    if (drawer) gs_put(a, sl, d);
}

// More than 32 draws: lane 0 makes them one after another (an insertion sort in the output).
__device__ __forceinline__ void gs_draw_serial(const gs_column_draws& a) {
    const gs_i64 k = a.k;
    gs_i64* S = a.pos_out + a.out;           // the draws, then sorted in place
    for (gs_i64 i = 0; i < k; ++i) {
        gs_i64 d = gs_draw(a, i);
        if (!a.alias && !a.replace) {        // Floyd: t, or j when t was drawn before
            const gs_i64 j = a.deg - k + i;
            for (gs_i64 q = 0; q < i; ++q) {
                if (S[q] == d) { d = j; break; }
            }
        }
        gs_i64 q = i;                        // insertion: S[0..i] stays sorted
        while (q > 0 && S[q - 1] > d) { S[q] = S[q - 1]; --q; }
        S[q] = d;
    }
    for (gs_i64 i = 0; i < k; ++i) gs_put(a, i, S[i]);
}

// The lanes that draw one column: the fewest of 8, 16, 32 that k draws fit (32 past 32
// draws: then lane 0 draws). The host rounds a warp's columns up to a multiple of 32 / W.
__device__ __forceinline__ int gs_group(gs_i64 k) { return k <= 8 ? 8 : k <= 16 ? 16 : 32; }

// One launch: every column's count, the result's indptr by a single-pass scan (scan.cuh),
// then the draws. Block t (by ticket) takes the T = warps * per_warp columns t * T ..: a
// thread counts each (its degree and, in a super-batch, its position within its batch,
// left in shared memory), then a group of W lanes draws each column (gs_group: 32 / W
// columns of a warp at once, its per_warp columns in turn), so a small frontier (512 seeds:
// per_warp 1) still spreads over the GPU, a super-batch's (10**6 columns: up to 32 each)
// needs few tiles, the k <= 32 draws of a column run on its lanes at once, and k <= 16
// leaves no half-warp idle.
//
// A graph in pinned host memory may have a GPU cache (gsample/formats/cache.py): slot[v] >= 0
// puts column v's rows at crows + slot[v] (and its edge ids at ceids + slot[v]; crows and
// ceids hold cE entries: a column that would run past them is read from the graph,
// gs_cache_at); slot null: none. eids non-null: the kernel also writes each edge's id to eids_out (from the cache
// where it has them). counters non-null: counters[0] += the edges read, counters[1] += those
// of cached columns (a warp's sums, one atomic each).
//
// The frontier's ids are checked here: an id outside [0, M) sets err (err[0]: a negative
// one, err[1]: one >= M, err[2] / err[3]: the smallest / largest such id, err[4]: any) and is
// an empty column whose id is 0 in cols_out, the frontier's clamped copy (the result's
// col_ids: whatever reads the result reads ids in range); the host reads err[4] with the
// program's sizes and raises (gsample.validate.fail_if). Padding columns are 0 in cols_out.
// state: scan.cuh's words, then err, all zero before the launch.
//
// A graph in pinned host memory is read in address order (order non-null, a permutation of
// the C columns by node, padding last): the GPU translates a host address per page through
// a cache that a random order misses at every read, and a sweep hits. The launch is then
// split in two (phase): phase 1 writes each column's count to indptr_out[c + 1] (the host
// scans them in place), phase 2 draws, reading its offset from indptr_out[c]. Phase 0, the
// single pass, scans in column order (order null). `order` is the host's own argsort of the
// frontier (backend/cuda/nodewise.py), a permutation of [0, C), and the offsets are its
// scan; both are bounded here all the same: an entry of order outside [0, C) is skipped,
// and a column whose offset would put its draws outside [0, C k) draws nothing; either sets
// err[5], which the host raises as an internal error (err[4] stays for the caller's ids).
//
// Column c's edges go to indptr_out[c] ..., in column order: rows_out (the graph's row,
// + b * n in a super-batch) and pos_out (the edge's position in the graph). Without
// replacement a column of deg <= k edges keeps them all; else Floyd's k draws (draw i: t =
// uniform_int(word(col, i), j + 1), j = deg - k + i; t, or j when t was drawn before); with
// replacement draw i takes uniform_int(word(col, i), deg), or with alias tables (non-null
// `alias`, replace set) the weighted draw of gs_alias_draw. The draws are sorted before the
// gather: lane i of the warp makes draw i and writes it at its rank; past 32 draws lane 0
// makes them one after another (an insertion sort in the output).
extern "C" __global__ void gs_sample_uniform(const gs_idx* __restrict__ indptr,
                                             const gs_row* __restrict__ rows,
                                             const gs_i64* __restrict__ cols, gs_i64 C,
                                             const gs_i64* __restrict__ ncols, gs_i64 n,
                                             gs_i64 M, gs_i64 k, int replace,
                                             const gs_i64* __restrict__ alias,
                                             const gs_u64* __restrict__ key,
                                             gs_u64* state, gs_i64 tiles, gs_i64 per_warp,
                                             gs_i64* __restrict__ indptr_out,
                                             gs_i64* __restrict__ rows_out,
                                             gs_i64* __restrict__ pos_out,
                                             const gs_i64* __restrict__ slot,
                                             const gs_row* __restrict__ crows, gs_i64 cE,
                                             const gs_i64* __restrict__ eids,
                                             const gs_i64* __restrict__ ceids,
                                             gs_i64* __restrict__ eids_out,
                                             gs_i64* __restrict__ counters,
                                             gs_i64* __restrict__ cols_out,
                                             const gs_i64* __restrict__ order, int phase) {
    // the count phase's per-column values, for the draws (blockDim <= 256)
    __shared__ gs_i64 s_id[256], s_out[256], s_cnt[256], s_start[256], s_deg[256], s_pos[256];
    const int lane = threadIdx.x & 31;
    const gs_i64 T = (gs_i64)(blockDim.x >> 5) * per_warp;      // columns per tile
    const gs_i64 m = gs_count(ncols, C);
    const gs_i64 t = gs_scan_ticket(state);
    gs_i64* err = (gs_i64*)(state + 1 + tiles);
    {
        const gs_i64 p = t * T + threadIdx.x;
        gs_i64 c = p;
        if (order != nullptr && threadIdx.x < T && p < C) {
            c = order[p];
            if (!gs_in_range(c, C)) { err[5] = 1; c = C; }  // no column: nothing read or written
        }
        gs_i64 id = 0, cnt = 0, start = 0, deg = 0, position = c;
        if (threadIdx.x < T && c < m) {
            id = cols[c];
            if (gs_in_range(id, M)) {
                const gs_i64 b = n > 0 ? id / n : 0;
                start = (gs_i64)indptr[id - b * n];
                deg = (gs_i64)indptr[id - b * n + 1] - start;
                cnt = replace ? (deg > 0 ? k : 0) : (deg < k ? deg : k);
                // the column's position within its batch keys its draws (DESIGN §3); a
                // thread each here, so the searches of a tile's columns overlap
                if (n > 0 && cnt > 0 && (replace || deg > k))
                    position = c - gs_first_at_least(cols, m, b * n);
            } else {
                if (id < 0) { err[0] = 1; atomicMin((long long*)&err[2], (long long)id); }
                else { err[1] = 1; atomicMax((long long*)&err[3], (long long)id); }
                err[4] = 1;
                id = 0;                         // an empty column (cnt 0) of id 0
            }
        }
        if (threadIdx.x < T && c < C) cols_out[c] = id;
        if (counters != nullptr && phase != 1) {  // uniform: every thread of the block is here
            const bool hit = cnt > 0 && gs_cache_at(slot, n > 0 ? id % n : id, deg, cE) >= 0;
            gs_count_reads(cnt, hit ? cnt : 0, counters);
        }
        gs_i64 out = 0;
        if (phase == 0) {                       // uniform: the scan's barriers
            gs_i64 tile_total;
            const gs_i64 local = gs_block_exclusive(cnt, &tile_total);
            out = gs_scan_exclusive(state, t, tile_total) + local;
        } else if (phase == 2 && threadIdx.x < T && c < C) {
            out = indptr_out[c];                // the scanned counts of phase 1
            if (out < 0 || out > C * k - cnt) { err[5] = 1; out = 0; cnt = 0; }
        }
        if (phase != 2 && threadIdx.x < T && c < C) indptr_out[c + 1] = out + cnt;
        if (phase != 2 && c == 0) indptr_out[0] = 0;
        if (phase == 1) return;                 // no barrier follows: threads may leave
        s_id[threadIdx.x] = id;
        s_out[threadIdx.x] = out;
        s_cnt[threadIdx.x] = cnt;
        s_start[threadIdx.x] = start;
        s_deg[threadIdx.x] = deg;
        s_pos[threadIdx.x] = position;
        __syncthreads();
    }
    // the draws: a warp takes its per_warp columns 32 / W at a time, a group of W lanes each
    const int W = gs_group(k), G = 32 / W, g = lane / W, sl = lane - g * W;
    for (gs_i64 r = 0; r < per_warp; r += G) {
        const gs_i64 j = (threadIdx.x >> 5) * per_warp + r + g;  // the tile's column
        const bool real = r + g < per_warp && s_cnt[j] > 0;
        if (!__any_sync(0xFFFFFFFFu, real)) continue;            // the same for the warp
        gs_i64 id = 0, start = 0, deg = 0, out = 0, position = 0;
        if (real) {
            id = s_id[j]; start = s_start[j]; deg = s_deg[j];
            out = s_out[j]; position = s_pos[j];
        }
        const bool keep_all = real && !replace && deg <= k;
        const gs_i64 b = n > 0 ? id / n : 0;
        const gs_i64 v = id - b * n;
        // the column's rows and edge ids: the graph's, or the GPU cache's copy (same values)
        const gs_row* R = rows + start;
        const gs_i64* I = eids != nullptr ? eids + start : nullptr;
        const gs_i64 at = real ? gs_cache_at(slot, v, deg, cE) : -1;
        if (at >= 0) {
            R = crows + at;
            if (I != nullptr) I = ceids + at;
        }
        gs_column_draws a = {k, replace, alias, rows_out, pos_out, eids_out, R, I, 0, position,
                             start, deg, b * n, out};
        if (keep_all) {
            for (gs_i64 e = sl; e < deg; e += W) gs_put(a, e, e);
        }
        // the batch's key, read after the copies so that it is not held across them
        a.base = gs_combine(key[0], (gs_i64)key[1] + b);
        const bool draws = real && !keep_all;
        if (k <= 32) {
            if (__any_sync(0xFFFFFFFFu, draws)) gs_draw_in_group(W, sl, g, draws, a);
        } else if (draws && lane == 0) {                         // G == 1: one column
            gs_draw_serial(a);
        }
    }
}
