// Kernel family "gather": rows of a feature table for a mini-batch's nodes, read straight from
// pinned host memory by the GPU (UVA: zero-copy over PCIe / C2C, no staging copy on the host),
// with an optional device cache of the hottest rows. gsample/backend/cuda/gather.py is the host
// side; gsample/features.py states the semantics (out[i] = table[ids[i]]).
//
// A row is moved as `words` machine words of GS_WORD (16, 8, 4, 2 or 1 bytes: the widest that
// divides the row's bytes and both base addresses), one thread per word, consecutive threads on
// consecutive words of a row, so each warp reads whole 128-byte lines of the host row.
//
// slot (optional, may be null): slot[id] >= 0 is the row of `cache` (device memory) that holds
// row `id`; -1: not cached, read from `host`. hits (optional) counts the rows served by the
// cache (one atomic per row, by the row's first word's thread).
//
// An id outside [0, N) (N: the table's rows) reads row 0 instead and sets *bad (zero before
// the launch; the host raises an IndexError): whoever made the ids, no read leaves the table.
#include "hash.cuh"

#ifndef GS_WORD
#define GS_WORD unsigned int
#endif

extern "C" __global__ void gs_gather_rows(const GS_WORD* host,    // mapped host memory: plain loads
                                          const GS_WORD* __restrict__ cache,
                                          const gs_i64* __restrict__ slot,
                                          const gs_i64* __restrict__ ids, gs_i64 n,
                                          gs_i64 words, GS_WORD* __restrict__ out,
                                          unsigned long long* __restrict__ hits, gs_i64 N,
                                          int* __restrict__ bad) {
    const gs_i64 total = n * words;
    for (gs_i64 t = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; t < total;
         t += (gs_i64)gridDim.x * blockDim.x) {
        const gs_i64 i = t / words;
        const gs_i64 w = t - i * words;
        gs_i64 id = ids[i];
        if (!gs_in_range(id, N)) {
            if (w == 0) *bad = 1;
            id = 0;
        }
        const gs_i64 s = slot != nullptr ? slot[id] : -1;
        if (s >= 0) {
            out[t] = cache[s * words + w];
            if (w == 0 && hits != nullptr) atomicAdd(hits, 1ULL);
        } else {
            out[t] = host[id * words + w];
        }
    }
}
