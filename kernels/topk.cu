// Kernel family "topk": the k smallest keys of each batch, exactly, in a fixed number of
// launches and without reading a count back to the host (host code:
// gsample/backend/cuda/topk.py). torch.topk launches once per radix pass and digit, with
// host work between them; these are eight launches whatever the keys.
//
// The candidates come compacted: keys[i] and rows[i] for i in [lo[b], hi[b]) are batch b's
// (N batches; every key >= 0; lo and hi on the device, in any order within a batch), so the
// passes read the candidates only, not a key per row of the row space (in a super-batch the
// candidates are a small share of the rows), B blocks per batch. A key is 63
// bits: its top 12 bits are its level-1 digit, the next 12 its level-2 digit, the next 12
// its level-3 digit. Per batch, a histogram of level-1 digits gives the digit t1 where the
// k-th smallest key lies (those below it are chosen); a histogram of the level-2 digits of
// the keys in t1 gives t2
// the same way, and so on; the keys of (t1, t2, t3) (those sharing their top 36 bits: a
// float64 key's exponent and 24 bits of mantissa) are "ties", ranked by (key, row) in the
// last launch, and the smallest of them fill the k. Histograms are counted in shared memory
// per block (weighted keys crowd a few digits: global atomics on them would serialise) and
// added to the batch's once per block.
// (The last pass reads the tie set's digits: 12 bits of 63 are left after three.)
#include "hash.cuh"
#include "scan.cuh"

#define GS_BINS 4096
#define GS_TIE_CAP 1024          // ties kept per batch at most (gsample/backend/cuda/topk.py CAP)

__device__ __forceinline__ gs_i64 gs_digit(gs_i64 key, gs_i64 level) {
    return (key >> (63 - 12 * level)) & 0xFFF;
}

// Whether key's digits before `level` are its batch's thresholds (thr: 3 per batch).
__device__ __forceinline__ bool gs_in_bin(gs_i64 key, gs_i64 level, const gs_i64* thr) {
    for (int l = 1; l < level; ++l)
        if (gs_digit(key, l) != thr[l - 1]) return false;
    return true;
}

// The part of batch b's candidates block x of its B takes: [*first, *last).
__device__ __forceinline__ void gs_topk_share(const gs_i64* __restrict__ lo,
                                              const gs_i64* __restrict__ hi, gs_i64 b,
                                              gs_i64 x, gs_i64 B, gs_i64* first, gs_i64* last) {
    const gs_i64 a = lo[b], m = hi[b] - a;
    const gs_i64 chunk = (m + B - 1) / B;
    *first = a + x * chunk < a + m ? a + x * chunk : a + m;
    *last = *first + chunk < a + m ? *first + chunk : a + m;
}

// hist[b][digit] of the candidates' level-`level` digits, over those whose earlier digits are
// their batch's thresholds (thr[b * 3 + l - 1] for level l). Block b * B + x counts its
// share of batch b's in shared memory, then adds it to the batch's.
extern "C" __global__ void gs_topk_histogram(const gs_i64* __restrict__ keys,
                                             const gs_i64* __restrict__ lo,
                                             const gs_i64* __restrict__ hi, gs_i64 B,
                                             gs_i64 level, const gs_i64* __restrict__ thr,
                                             unsigned int* __restrict__ hist) {
    __shared__ unsigned int h[GS_BINS];
    for (int i = threadIdx.x; i < GS_BINS; i += blockDim.x) h[i] = 0;
    __syncthreads();
    const gs_i64 b = blockIdx.x / B;
    gs_i64 first, last;
    gs_topk_share(lo, hi, b, blockIdx.x - b * B, B, &first, &last);
    const gs_i64* t = thr + 3 * b;
    for (gs_i64 i = first + threadIdx.x; i < last; i += blockDim.x) {
        const gs_i64 key = keys[i];
        if (gs_in_bin(key, level, t)) atomicAdd(&h[gs_digit(key, level)], 1u);
    }
    __syncthreads();
    if (first >= last) return;
    for (int i = threadIdx.x; i < GS_BINS; i += blockDim.x)
        if (h[i]) atomicAdd(&hist[b * GS_BINS + i], h[i]);
}

// Append `x` at counter[0] (and up) from every lane that has one: one atomic per group of
// lanes on the same counter (call from every lane of the warp).
__device__ __forceinline__ void gs_append(bool has, gs_i64* counter, gs_i64 slot,
                                          gs_i64* where) {
    const unsigned peers = __match_any_sync(0xFFFFFFFFu, has ? (unsigned long long)slot
                                                             : ~0ULL);
    const int lane = threadIdx.x & 31, leader = __ffs(peers) - 1;
    gs_i64 base = 0;
    if (has && lane == leader)
        base = (gs_i64)atomicAdd((unsigned long long*)counter, (unsigned long long)__popc(peers));
    base = __shfl_sync(peers, base, leader);
    *where = base + __popc(peers & ((1u << lane) - 1));
}

// One block per batch: the digit t where batch b's need-th smallest key lies (need = k, less
// the keys already below at earlier levels), and the keys below it (below[b], added to).
// Without that many keys, t = GS_BINS: every key is below. (blockDim 1024: 4 digits a
// thread.)
extern "C" __global__ void gs_topk_threshold(const unsigned int* __restrict__ hist, gs_i64 k,
                                             gs_i64 level, gs_i64* __restrict__ thr,
                                             gs_i64* __restrict__ below) {
    __shared__ gs_i64 found_t, found_below;
    const gs_i64 b = blockIdx.x;
    const unsigned int* h = hist + b * GS_BINS;
    const int per = GS_BINS / blockDim.x;
    const gs_i64 need = k - below[b];             // level 2: what level 1 left
    gs_i64 mine = 0;
    for (int j = 0; j < per; ++j) mine += h[threadIdx.x * per + j];
    gs_i64 total;
    const gs_i64 before = gs_block_exclusive(mine, &total);
    if (threadIdx.x == 0) {
        found_t = GS_BINS;
        found_below = total;
    }
    __syncthreads();
    if (need > 0 && before < need && need <= before + mine) {        // one thread: the crossing
        gs_i64 acc = before;
        for (int j = 0; j < per; ++j) {
            const gs_i64 c = h[threadIdx.x * per + j];
            if (acc + c >= need) {
                found_t = threadIdx.x * per + j;
                found_below = acc;
                break;
            }
            acc += c;
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        thr[b * 3 + level - 1] = need > 0 ? found_t : -1;   // -1: no key needed past here
        below[b] += need > 0 ? found_below : 0;
    }
}

// Each candidate below its batch's threshold goes to chosen[b][...] (its row; at most k a
// batch); each tie to ties[b][...] (keys, then rows; past cap, counted only: the host falls
// back). counts: N chosen, then N ties, zero before the launch. Blocks as the histogram's.
extern "C" __global__ void gs_topk_select(const gs_i64* __restrict__ keys,
                                          const gs_i64* __restrict__ rows,
                                          const gs_i64* __restrict__ lo,
                                          const gs_i64* __restrict__ hi, gs_i64 B, gs_i64 N,
                                          gs_i64 k, const gs_i64* __restrict__ thr,
                                          gs_i64 cap, gs_i64* __restrict__ counts,
                                          gs_i64* __restrict__ chosen,
                                          gs_i64* __restrict__ tie_keys,
                                          gs_i64* __restrict__ tie_rows) {
    const gs_i64 b = blockIdx.x / B;
    gs_i64 first, last;
    gs_topk_share(lo, hi, b, blockIdx.x - b * B, B, &first, &last);
    const gs_i64* t = thr + 3 * b;
    // whole warps (the appends below): the block's threads in turn
    for (gs_i64 i = first + threadIdx.x; i - (threadIdx.x & 31) < last; i += blockDim.x) {
        bool sure = false, tie = false;
        gs_i64 key = 0;
        if (i < last) {
            key = keys[i];
            tie = true;                           // every digit so far on the thresholds
            for (int l = 1; l <= 3 && tie; ++l) {
                const gs_i64 d = gs_digit(key, l);
                sure = d < t[l - 1];
                tie = d == t[l - 1];
            }
        }
        gs_i64 at;
        gs_append(sure, &counts[b], b, &at);
        if (sure) chosen[b * k + at] = rows[i];
        gs_append(tie, &counts[N + b], b, &at);
        if (tie && at < cap) {
            tie_keys[b * cap + at] = key;
            tie_rows[b * cap + at] = rows[i];
        }
    }
}

// Fill each batch's k (one block per batch): after its counts[b] sure rows, its smallest
// ties, and R (no row) where the batch has fewer candidates than k. A tie's place is its rank
// among the batch's ties by (key, row) -- counted in shared memory, O(ties^2 / threads): a
// few ties a batch, at most cap (the host falls back past it) -- so equal keys (a 64-bit hash
// collision) still choose the same rows every run.
extern "C" __global__ void gs_topk_fill(const gs_i64* __restrict__ counts,
                                        const gs_i64* __restrict__ tie_keys,
                                        const gs_i64* __restrict__ tie_rows, gs_i64 N,
                                        gs_i64 k, gs_i64 cap, gs_i64 R,
                                        gs_i64* __restrict__ chosen) {
    __shared__ gs_i64 tie_key[GS_TIE_CAP], tie_row[GS_TIE_CAP];
    const gs_i64 b = blockIdx.x;
    const gs_i64 sure = counts[b];
    gs_i64 ties = counts[N + b] < cap ? counts[N + b] : cap;
    ties = ties < GS_TIE_CAP ? ties : GS_TIE_CAP;
    for (gs_i64 t = threadIdx.x; t < ties; t += blockDim.x) {
        tie_key[t] = tie_keys[b * cap + t];
        tie_row[t] = tie_rows[b * cap + t];
    }
    __syncthreads();
    for (gs_i64 t = threadIdx.x; t < ties; t += blockDim.x) {
        const gs_i64 key = tie_key[t], row = tie_row[t];
        gs_i64 rank = 0;
        for (gs_i64 j = 0; j < ties; ++j) {
            const gs_i64 kj = tie_key[j];
            rank += kj < key || (kj == key && tie_row[j] < row);
        }
        if (sure + rank < k) chosen[b * k + sure + rank] = row;
    }
    for (gs_i64 j = sure + ties + threadIdx.x; j < k; j += blockDim.x)
        chosen[b * k + j] = R;                                   // past the candidates
}
