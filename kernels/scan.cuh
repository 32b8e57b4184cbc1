// A single-pass exclusive scan across the blocks of one launch (decoupled look-back, as
// CUB's): each block takes a tile in the order blocks start (a ticket), publishes its
// aggregate, adds its predecessors' published values (stopping at the first inclusive
// prefix) and publishes its own inclusive prefix. Taking tiles by ticket means every tile a
// block waits for belongs to a block that has already started, so the wait always ends.
//
// state: 1 + tiles 64-bit words, zero before the launch (a memset): state[0] the ticket
// counter, state[1 + t] tile t's word: 0 (nothing yet), (1 << 62) | aggregate, or
// (2 << 62) | inclusive prefix. Values must stay below 2**62.
#pragma once
#include "hash.cuh"

#define GS_SCAN_AGG (1ULL << 62)
#define GS_SCAN_INC (2ULL << 62)
#define GS_SCAN_VAL ((1ULL << 62) - 1)

// The tile this block works on (call from every thread: it synchronises the block).
__device__ __forceinline__ gs_i64 gs_scan_ticket(gs_u64* state) {
    __shared__ gs_i64 tile;
    if (threadIdx.x == 0) tile = (gs_i64)atomicAdd((unsigned long long*)state, 1ULL);
    __syncthreads();
    return tile;
}

// Publish `aggregate` for `tile` and return the sum of all tiles before it (call from every
// thread; the first warp looks back 32 tiles at a time, as CUB does: with thousands of small
// tiles a one-tile-at-a-time look-back made a chain as long as the blocks in flight).
__device__ __forceinline__ gs_i64 gs_scan_exclusive(gs_u64* state, gs_i64 tile,
                                                    gs_i64 aggregate) {
    __shared__ gs_i64 before;
    if (threadIdx.x < 32) {
        const int lane = threadIdx.x;
        volatile gs_u64* words = state + 1;
        if (lane == 0) {
            __threadfence();
            words[tile] = (tile == 0 ? GS_SCAN_INC : GS_SCAN_AGG) | (gs_u64)aggregate;
        }
        gs_i64 sum = 0;
        for (gs_i64 last = tile - 1; last >= 0; last -= 32) {     // tiles last, last - 1, ...
            const gs_i64 at = last - lane;
            gs_u64 w = GS_SCAN_INC;                                 // before tile 0: nothing
            if (at >= 0) {
                do { w = words[at]; } while (w == 0);               // its block has started
            }
            const unsigned inc = __ballot_sync(0xFFFFFFFFu, (w & GS_SCAN_INC) != 0);
            const int stop = inc ? __ffs(inc) - 1 : 31;             // the nearest inclusive one
            gs_i64 v = lane <= stop && at >= 0 ? (gs_i64)(w & GS_SCAN_VAL) : 0;
            for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xFFFFFFFFu, v, d);
            sum += __shfl_sync(0xFFFFFFFFu, v, 0);
            if (inc) break;
        }
        if (lane == 0 && tile > 0) {
            __threadfence();
            words[tile] = GS_SCAN_INC | (gs_u64)(sum + aggregate);
        }
        if (lane == 0) before = sum;
    }
    __syncthreads();
    return before;
}

// An exclusive scan of one value per thread over the block; *sum gets the block's total.
// (Block size: a multiple of 32, at most 1024.) again false: the block calls it no more, and
// skips the barrier that lets a next call reuse its shared words.
__device__ __forceinline__ gs_i64 gs_block_exclusive(gs_i64 x, gs_i64* sum, bool again = true) {
    __shared__ gs_i64 warp_sums[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    gs_i64 inc = x;
    for (int d = 1; d < 32; d <<= 1) {
        const gs_i64 y = __shfl_up_sync(0xFFFFFFFFu, inc, d);
        if (lane >= d) inc += y;
    }
    if (lane == 31) warp_sums[warp] = inc;
    __syncthreads();
    if (warp == 0) {
        gs_i64 s = lane < warps ? warp_sums[lane] : 0;
        for (int d = 1; d < 32; d <<= 1) {
            const gs_i64 y = __shfl_up_sync(0xFFFFFFFFu, s, d);
            if (lane >= d) s += y;
        }
        if (lane < warps) warp_sums[lane] = s;               // inclusive prefix of warps
    }
    __syncthreads();
    const gs_i64 before = (warp > 0 ? warp_sums[warp - 1] : 0) + inc - x;
    *sum = warp_sums[warps - 1];
    if (again) __syncthreads();                               // warp_sums reused next call
    return before;
}
