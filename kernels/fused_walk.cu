// Kernel family "fused_walk": a whole gs.walk of a per-walker step in one launch, one thread
// per walker, a loop over the steps (gsample/backend/cuda/walk_codegen.py writes GS_STEP
// from the FUSED_WALK op's step bodies: straight-line C over registers v<i>).
//
// GS_STEP is the code of step s: it reads `cur` and `prev` (the walker's position and the one
// before, as the step's torch code sees them: -1 after a stop), the operands o<i> (graph-level
// vectors of m<i> entries), and sets `nxt`; a random_walk in it is gs_walk_one
// (walkstep.cuh) from the walker's position with the key of its op ordinal `at + j`; `at`
// advances by the body's random ops. Ids are checked where they are read (gs_fw_id,
// gs_fw_index): one out of range sets failed[0] (an IndexError on the host) and reads node 0.
// A seed outside [0, M) (M: the graph's N nodes, or a super-batch's copies * n ids), whoever
// made it, walks nowhere (its row all -1) and sets failed[1].
//
// Keys: with `direct`, keys[j] is the key of the op's ordinal j; otherwise keys[2j] is its
// prefix and keys[2j + 1] the first mini-batch index (the program's device key buffer), and
// with n > 0 the walkers are a super-batch (seeds b * n + v grouped by batch, as
// gs_random_walk takes them): walker w draws with batch b's keys as position w - (first
// walker of b) and writes its ids encoded (+ b * n; a negative id as it is).
//
// A UVA graph's GPU cache (slot, crows, cE, counters: as gs_random_walk takes them) serves
// the rows of its cached columns to the inlined walks (`cache`, which GS_STEP passes on),
// compiled with GS_WALK_CACHE 1. `rows` and `crows` are gs_row (walkstep.cuh's GS_ROW: int
// for a UVA graph's int32 rows and its cache's).
#include "walkstep.cuh"
#include "ieee.cuh"

#ifndef GS_STEP
#define GS_STEP { nxt = cur; }
#endif

// the key of ordinal j of the op for mini-batch b of a super-batch (0 otherwise)
__device__ __forceinline__ gs_u64 gs_fw_key(const gs_u64* __restrict__ keys, int direct,
                                            gs_i64 j, gs_i64 b) {
    return direct ? keys[j] : gs_combine(keys[2 * j], (gs_i64)keys[2 * j + 1] + b);
}

// a walk's start node: in [0, N), else the failure flag (and node 0)
__device__ __forceinline__ gs_i64 gs_fw_id(gs_i64 x, gs_i64 N, int* failed) {
    if (gs_in_range(x, N)) return x;
    atomicExch(failed, 1);
    return 0;
}

// an index into a vector of m entries, negative ones from the end (as torch indexes)
__device__ __forceinline__ gs_i64 gs_fw_index(gs_i64 x, gs_i64 m, int* failed) {
    const gs_i64 i = x < 0 ? x + m : x;
    if (gs_in_range(i, m)) return i;
    atomicExch(failed, 1);
    return 0;
}

__device__ __forceinline__ gs_i64 gs_fw_max(gs_i64 a, gs_i64 b) { return a < b ? b : a; }
__device__ __forceinline__ gs_i64 gs_fw_min(gs_i64 a, gs_i64 b) { return b < a ? b : a; }

extern "C" __global__ void gs_fused_walk(
        const gs_i64* __restrict__ indptr, const gs_row* __restrict__ rows,
        const gs_i64* __restrict__ seeds, gs_i64 W, gs_i64 L, gs_i64 N,
        const gs_u64* __restrict__ keys, int direct, gs_i64 n, gs_i64 M,
        const void* o0, const void* o1, const void* o2, const void* o3,
        const void* o4, const void* o5, const void* o6, const void* o7,
        gs_i64 m0, gs_i64 m1, gs_i64 m2, gs_i64 m3, gs_i64 m4, gs_i64 m5, gs_i64 m6,
        gs_i64 m7, gs_i64* __restrict__ out, int* __restrict__ failed,
        const gs_i64* __restrict__ slot, const gs_row* __restrict__ crows, gs_i64 cE,
        gs_i64* __restrict__ counters) {
    gs_walk_cache cache = {slot, crows, cE, 0, 0};
    const gs_i64 stride = (gs_i64)blockDim.x * gridDim.x;
    for (gs_i64 w = (gs_i64)blockIdx.x * blockDim.x + threadIdx.x; w < W; w += stride) {
        const gs_i64 id = seeds[w];
        const gs_i64 b = n > 0 ? id / n : 0;
        const gs_i64 shift = b * n;
        gs_i64* __restrict__ o = out + w * (L + 1);
        if (!gs_in_range(id, M) || !gs_in_range(id - shift, N)) {
            failed[1] = 1;
            for (gs_i64 s = 0; s <= L; ++s) o[s] = -1;
            continue;
        }
        const gs_i64 pos = n > 0 ? w - gs_first_at_least(seeds, W, shift) : w;
        o[0] = id;
        gs_i64 cur = id - shift, prev = cur, at = 0;
        for (gs_i64 s = 0; s < L; ++s) {
            gs_i64 nxt = -1;
            GS_STEP
            o[s + 1] = nxt >= 0 ? nxt + shift : nxt;
            prev = cur;
            cur = nxt;
        }
    }
    gs_walk_count(cache, counters);
}
