// Kernel family "shuffle": the sort keys of a loader's epoch permutation (gs.DataLoader
// shuffles its seeds by them, gsample/loader/dataloader.py) in one launch, where the torch
// code (gsample/base/random.py's shuffle_keys, the reference and the CPU path) takes an
// arange and about sixteen elementwise ops, every one a launch the host makes before the
// epoch's first sampling kernel (gsample/backend/cuda/shuffle.py is the host side).
//
// gs_shuffle_keys: out[i] = combine(h, i) >> 1 for i < n: sort_key (the word's top bit
// dropped by a logical shift: a non-negative int64) of hash_tensor(epoch_seed, -1, i), with
// h = combine(epoch_seed, -1) folded by the host. Unsigned 64-bit wrapping arithmetic
// throughout (hash.cuh), as the torch code's int64 bits.
#include "hash.cuh"

extern "C" __global__ void gs_shuffle_keys(gs_u64 h, gs_i64 n, gs_i64* __restrict__ out) {
    const gs_i64 stride = (gs_i64)blockDim.x * gridDim.x;
    for (gs_i64 i = (gs_i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = (gs_i64)(gs_combine(h, i) >> 1);
    }
}
