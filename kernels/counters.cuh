// A UVA graph's GPU cache counts what the kernels read (gsample/formats/cache.py,
// `A.cache.stats()`): counters[0] the edges (rows) read, counters[1] those the cache served.
#pragma once

// Adds a warp's reads and hits to counters (null: none): the warp's sums, one atomic each.
// Every lane of the warp calls this together (its shuffles span the warp).
__device__ __forceinline__ void gs_count_reads(long long reads, long long hits,
                                               long long* __restrict__ counters) {
    if (counters == nullptr) return;
    for (int d = 16; d > 0; d >>= 1) {
        reads += __shfl_down_sync(0xFFFFFFFFu, reads, d);
        hits += __shfl_down_sync(0xFFFFFFFFu, hits, d);
    }
    if ((threadIdx.x & 31) == 0 && reads > 0) {
        atomicAdd((unsigned long long*)&counters[0], (unsigned long long)reads);
        atomicAdd((unsigned long long*)&counters[1], (unsigned long long)hits);
    }
}

// Where column v of deg edges starts in a GPU cache of cE rows (slot[v]), or -1 where slot is
// null, the column is not cached, or its rows would run outside [0, cE) (then it is read
// from the graph and counted as such: a slot the host did not make reads nothing past the
// cache). v must be a node of the graph (slot has one entry a node).
__device__ __forceinline__ long long gs_cache_at(const long long* __restrict__ slot, long long v,
                                                 long long deg, long long cE) {
    if (slot == nullptr) return -1;
    const long long s = slot[v];
    return s >= 0 && deg >= 0 && s <= cE - deg ? s : -1;
}
