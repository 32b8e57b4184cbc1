// Random walks (A.random_walk): every step of every walker in one launch, one thread per
// walker. The algorithm and its draws are gsample/backend/torch/walk.py's, step for step:
// draw `slot` of step t of walker w is gs_word(key, w, t * 2^32 + slot); slot 0 decides stop /
// restart / jump / move, slot 1 draws a jump's node, attempt a of a move draws its edge slot
// (2 + 3a), its alias coin (3 + 3a) and its node2vec acceptance coin (4 + 3a). Every
// comparison is exact (integers, or IEEE doubles computed alike), so the walks are bit-equal.
// `out` is (W, L + 1) (or (L + 1, W): GS_WALK_TIME_MAJOR); the kernel writes the seed, the
// steps, and -1 after a stop.
//
// Keys: with `key` null, `key0` is the op's key and walker w is position w. Otherwise key[0]
// is the op's key prefix and key[1] the first mini-batch index (read from the device, so a
// captured CUDA graph replays with new keys), and with n > 0 the walkers are a super-batch:
// seeds are ids b * n + v grouped by batch, walker w walks node v of the graph with batch b's
// key combine(key[0], key[1] + b) as position w - (first walker of b), and writes its ids
// encoded (+ b * n; -1 stays -1).
//
// Seeds are guarded here, whoever made them (a seed from an earlier op of the program may
// be one whose check flag is still on its way to the host): a seed outside [0, M) (M: the
// graph's N nodes, or the super-batch's copies * n ids) walks nowhere, its row all -1, and
// sets failed[1], which the host raises as an IndexError; node2vec's rejection loop running
// past its bound sets failed[0].
//
// A graph in pinned host memory may have a GPU cache (gsample/formats/cache.py): slot non-null
// puts column v's rows at crows + slot[v] where slot[v] >= 0 (crows: cE entries of gs_row, the
// type of `rows`: int32 for both where the graph keeps int32 rows), and a move
// from v reads its row there (gs_walk_one). counters non-null: counters[0] += the rows the
// walks read (one per move attempt), counters[1] += those the cache served. Both only where
// the source is compiled with GS_WALK_CACHE 1 (walkstep.cuh).
#include "walkstep.cuh"

// GS_WALK_TIME_MAJOR 1: gs_random_walk writes `out` step-major, (L + 1, W): step t of walker w
// at t * W + w, so the walkers of a warp write one line per step. Walker-major, a walker's
// row is written 8 bytes at a time over its whole walk; with many walkers its sectors leave
// the L2 cache between steps and each step's write costs a sector written (and read) in device
// memory. The host transposes the result (kernels/transpose.cu).
#ifndef GS_WALK_TIME_MAJOR
#define GS_WALK_TIME_MAJOR 0
#endif

// GS_WALK_MIN_BLOCKS: blocks of 64 threads the compiler must fit on a multiprocessor (its
// registers capped to allow them): a walker waits on a dependent load at every step, so more
// walkers resident hide more of that latency, until spills cost more than they hide
#ifdef GS_WALK_MIN_BLOCKS
#define GS_WALK_BOUNDS __launch_bounds__(64, GS_WALK_MIN_BLOCKS)
#else
#define GS_WALK_BOUNDS
#endif

extern "C" __global__ void GS_WALK_BOUNDS gs_random_walk(
        const gs_i64* __restrict__ indptr, const gs_row* __restrict__ rows,
        const gs_i64* __restrict__ sorted_rows,    // each column's rows ascending (node2vec)
        const gs_i64* __restrict__ alias,          // (E, 2) threshold, alias edge; or null
        const gs_i64* __restrict__ seeds, gs_i64 W, gs_i64 L, gs_i64 N,
        gs_u64 key0, const gs_u64* __restrict__ key, gs_i64 n, gs_i64 M,
        int node2vec, double inv_p, double inv_q, double amax,
        double c1, double c2, double c3,
        gs_i64* __restrict__ out, int* __restrict__ failed,
        const gs_i64* __restrict__ slot, const gs_row* __restrict__ crows, gs_i64 cE,
        gs_i64* __restrict__ counters) {
    gs_walk_cache cache = {slot, crows, cE, 0, 0};
    const gs_i64 stride = (gs_i64)blockDim.x * gridDim.x;
    // where walker w's row starts, and the distance between its steps
    const gs_i64 ow = GS_WALK_TIME_MAJOR ? 1 : L + 1, os = GS_WALK_TIME_MAJOR ? W : 1;
    for (gs_i64 w = (gs_i64)blockIdx.x * blockDim.x + threadIdx.x; w < W; w += stride) {
        const gs_i64 id = seeds[w];
        const gs_i64 b = n > 0 ? id / n : 0;
        const gs_i64 shift = b * n;
        if (!gs_in_range(id, M) || !gs_in_range(id - shift, N)) {
            failed[1] = 1;
            for (gs_i64 t = 0; t <= L; ++t) out[w * ow + t * os] = -1;
            continue;
        }
        const gs_u64 k = key == nullptr ? key0 : gs_combine(key[0], (gs_i64)key[1] + b);
        const gs_i64 pos = n > 0 ? w - gs_first_at_least(seeds, W, shift) : w;
        gs_walk_one(indptr, rows, sorted_rows, alias, cache, L, N, k, pos, id, shift, node2vec,
                    inv_p, inv_q, amax, c1, c2, c3, out + w * ow, failed, os);
    }
    gs_walk_count(cache, counters);
}

// A graph in pinned host memory is walked a step at a time in address order (the host sorts
// the walkers by the node they stand on before each step): the GPU translates a host address
// per page through a cache that a random order misses at every read, and a sweep hits. The
// draws are gs_random_walk's, walker by walker, whatever the order.
//
// gs_random_walk_start checks the seeds (as gs_random_walk: a bad one walks nowhere, its row
// all -1, and sets failed[1]) and writes column 0 of `out` and each walker's state: (W, 4)
// words (32 bytes: one sector a step reads), the node it stands on (-1 once it stopped), the
// node it came from (-1 at first), its position within its batch (its draws' key: the
// search among the seeds made once, not every step) and its seed's id.
extern "C" __global__ void gs_random_walk_start(const gs_i64* __restrict__ seeds, gs_i64 W,
                                                gs_i64 L, gs_i64 N, gs_i64 n, gs_i64 M,
                                                gs_i64* __restrict__ state,
                                                gs_i64* __restrict__ out,
                                                int* __restrict__ failed) {
    const gs_i64 stride = (gs_i64)blockDim.x * gridDim.x;
    for (gs_i64 w = (gs_i64)blockIdx.x * blockDim.x + threadIdx.x; w < W; w += stride) {
        const gs_i64 id = seeds[w];
        const gs_i64 shift = (n > 0 ? id / n : 0) * n;
        const bool ok = gs_in_range(id, M) && gs_in_range(id - shift, N);
        if (!ok) failed[1] = 1;
        out[w * (L + 1)] = ok ? id : -1;
        state[4 * w] = ok ? id - shift : -1;
        state[4 * w + 1] = -1;
        state[4 * w + 2] = ok && n > 0 ? w - gs_first_at_least(seeds, W, shift) : w;
        state[4 * w + 3] = ok ? id : 0;
    }
}

// Step t of every walker, walker order[p] taken by thread p (order: the host's permutation
// of the W walkers). Writes out[w, t + 1] and the walker's state. Both are the host's own
// arrays, bounded here all the same: an entry of order outside [0, W), or (node2vec) a
// previous node outside [0, N) where the walker stands on a node, is skipped and sets
// failed[2], which the host raises as an internal error.
// slot, crows, cE, counters: a GPU cache, as gs_random_walk takes it.
extern "C" __global__ void gs_random_walk_step(
        const gs_i64* __restrict__ indptr, const gs_row* __restrict__ rows,
        const gs_i64* __restrict__ sorted_rows, const gs_i64* __restrict__ alias,
        const gs_i64* __restrict__ seeds, gs_i64 W, gs_i64 L, gs_i64 N,
        gs_u64 key0, const gs_u64* __restrict__ key, gs_i64 n,
        int node2vec, double inv_p, double inv_q, double amax,
        double c1, double c2, double c3, const gs_i64* __restrict__ order, gs_i64 t,
        gs_i64* __restrict__ state, gs_i64* __restrict__ out, int* __restrict__ failed,
        const gs_i64* __restrict__ slot, const gs_row* __restrict__ crows, gs_i64 cE,
        gs_i64* __restrict__ counters) {
    gs_walk_cache cache = {slot, crows, cE, 0, 0};
    const gs_i64 stride = (gs_i64)blockDim.x * gridDim.x;
    for (gs_i64 p = (gs_i64)blockIdx.x * blockDim.x + threadIdx.x; p < W; p += stride) {
        const gs_i64 w = order[p];
        if (!gs_in_range(w, W)) {
            failed[2] = 1;
            continue;
        }
        const gs_i64 cur = state[4 * w], prev = state[4 * w + 1];
        gs_i64* o = out + w * (L + 1) + t + 1;
        if (!gs_in_range(cur, N)) {                              // stopped (or never started)
            *o = -1;
            continue;
        }
        if (node2vec && t > 0 && !gs_in_range(prev, N)) {        // node2vec reads its column
            failed[2] = 1;
            *o = -1;
            state[4 * w] = -1;
            continue;
        }
        // the seed's id and the position kept with the walker (values, not addresses)
        const gs_i64 pos = state[4 * w + 2], id = state[4 * w + 3];
        const gs_i64 b = n > 0 ? id / n : 0;
        const gs_i64 shift = b * n;
        const gs_u64 k = key == nullptr ? key0 : gs_combine(key[0], (gs_i64)key[1] + b);
        gs_walk_prev pc = {0, 0, false};                         // prev's bounds: read
        const gs_i64 nxt = gs_walk_step(indptr, rows, sorted_rows, alias, cache, t, N,
                                        gs_combine(k, pos), id - shift, cur, prev, node2vec,
                                        inv_p, inv_q, amax, c1, c2, c3, failed, pc);
        *o = nxt < 0 ? -1 : nxt + shift;
        state[4 * w] = nxt;
        state[4 * w + 1] = cur;
    }
    gs_walk_count(cache, counters);
}
