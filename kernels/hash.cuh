// The counter-based hash of the determinism contract (DESIGN §3), bit-equal to
// gsample/random.py: combine(h, x) = splitmix64_finalizer(h + (x + 1) * GOLDEN).
// Reference values: tests/test_random.py (SPLITMIX_1234567) and
// tests/backend/test_cuda_backend.py (device words == torch words).
#pragma once

typedef unsigned long long gs_u64;
typedef long long gs_i64;

#define GS_GOLDEN 0x9E3779B97F4A7C15ULL

// Whether `id` lies in [0, bound): one unsigned compare at the id's full width, so a negative
// id (a huge unsigned one) fails it too. Every kernel that indexes memory with an id guards
// the index with this, whoever made the id (kernels/README.md, "Ids"); never through a 32-bit
// cast, which would let 2**32 + 1 through as 1.
__device__ __forceinline__ bool gs_in_range(gs_i64 id, gs_i64 bound) {
    return (unsigned long long)id < (unsigned long long)bound;
}

__device__ __forceinline__ gs_u64 gs_mix64(gs_u64 z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// fold one key component into the running hash (wrapping, as int64 bits in torch)
__device__ __forceinline__ gs_u64 gs_combine(gs_u64 h, gs_i64 x) {
    return gs_mix64(h + ((gs_u64)x + 1ULL) * GS_GOLDEN);
}

// the random word of draw `draw` in column `col` of the op keyed by `base`
__device__ __forceinline__ gs_u64 gs_word(gs_u64 base, gs_i64 col, gs_i64 draw) {
    return gs_combine(gs_combine(base, col), draw);
}

// The collective samples' sort keys' hash in batch b (kernels/layerwise.cu, the listed rows
// of kernels/rowsum.cu): row v's word is gs_word(gs_combine(key[0], key[1] + b), 0, v) =
// gs_combine(seed, v), the seed the batch's (the same for all its rows).
__device__ __forceinline__ gs_u64 gs_key_seed(const gs_u64* __restrict__ key, gs_i64 b) {
    return gs_combine(gs_combine(key[0], (gs_i64)key[1] + b), 0);
}

// uniform integer in [0, n), n > 0: (r >> 1) % n, as random.uniform_int
__device__ __forceinline__ gs_i64 gs_uniform_int(gs_u64 r, gs_i64 n) {
    return (gs_i64)((r >> 1) % (gs_u64)n);
}

// uniform double in [0, 1): 53 random bits, as random.uniform_float
__device__ __forceinline__ double gs_uniform_float(gs_u64 r) {
    return (double)(r >> 11) * 0x1.0p-53;
}

// unit exponential from a word: -log(((r >> 11) + 0.5) * 2**-53), as random.exponential
// (every step an explicit _rn operation; log is CUDA's double log, torch's float64 log)
__device__ __forceinline__ double gs_exponential(gs_u64 r) {
    const double u = __dmul_rn(__dadd_rn((double)(r >> 11), 0.5), 0x1.0p-53);
    return -log(u);
}

// ----------------------------------------------------------------------------- hash table
// Open addressing with linear probing over mask + 1 slots (a power of two, at least twice
// the number of keys, so a probe always meets a free slot). keys[s] holds a key (>= 0) or
// GS_FREE; vals[s] the smallest position inserted with it (atomicMin: the result does not
// depend on the order threads run in). Both arrays start as all ones (GS_FREE).
#define GS_FREE 0xFFFFFFFFFFFFFFFFULL

// Insert `key` (>= 0: GS_FREE is -1, so callers guard their ids first) with position `pos`;
// returns its slot.
__device__ __forceinline__ gs_i64 gs_table_insert(gs_u64* keys, gs_u64* vals, gs_i64 mask,
                                                  gs_u64 key, gs_u64 pos) {
    gs_i64 s = (gs_i64)(gs_mix64(key) & (gs_u64)mask);
    for (gs_i64 probe = 0; probe <= mask; ++probe) {          // bounded: never spins forever
        gs_u64 seen = ((volatile gs_u64*)keys)[s];
        if (seen == GS_FREE) seen = atomicCAS(&keys[s], GS_FREE, key);
        if (seen == GS_FREE || seen == key) {
            if (((volatile gs_u64*)vals)[s] > pos) atomicMin(&vals[s], pos);
            return s;
        }
        s = (s + 1) & mask;
    }
    return s;
}

// Whether `key` was inserted (after the inserting launch).
__device__ __forceinline__ bool gs_table_contains(const gs_u64* __restrict__ keys, gs_i64 mask,
                                                  gs_u64 key) {
    gs_i64 s = (gs_i64)(gs_mix64(key) & (gs_u64)mask);
    for (gs_i64 probe = 0; probe <= mask; ++probe) {
        const gs_u64 seen = keys[s];
        if (seen == key) return true;
        if (seen == GS_FREE) return false;
        s = (s + 1) & mask;
    }
    return false;
}
