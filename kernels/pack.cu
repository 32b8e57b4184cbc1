// Kernel family "pack": the used prefixes of several buffers, one after another, in one buffer,
// their lengths read on the device. A CUDA graph's results live in buffers sized by bounds
// (gsample/formats/bounded.py); the graph packs them with this kernel at its end, so the host,
// once it has read the counts back, copies them out of the graph's memory in one copy and
// splits that copy into views (gsample/backend/cuda/pack.py is the host side).
//
// desc holds 4 int64 per part: the source's address, the address of its int64 count (0: none),
// the number added to the count (without one: the length), and the part's first index in
// [0, total), the sum of the parts' capacities (parts in order; a part's capacity runs to the
// next one's first index, the last one's to total). A part's length is clamped into
// [0, capacity]. Part p lands at the sum of the lengths of the parts before it.
#include "hash.cuh"

#ifndef GS_WORD
#define GS_WORD unsigned long long
#endif

extern "C" __global__ void gs_pack_parts(const gs_i64* __restrict__ desc, gs_i64 parts,
                                         gs_i64 total, GS_WORD* __restrict__ out) {
    for (gs_i64 t = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; t < total;
         t += (gs_i64)gridDim.x * blockDim.x) {
        gs_i64 offset = 0;
        for (gs_i64 p = 0; p < parts; ++p) {
            const gs_i64* d = desc + 4 * p;
            const gs_i64 end = p + 1 < parts ? desc[4 * (p + 1) + 3] : total;
            const gs_i64* count = reinterpret_cast<const gs_i64*>(d[1]);
            gs_i64 used = (count != nullptr ? *count : 0) + d[2];
            used = used < 0 ? 0 : (used > end - d[3] ? end - d[3] : used);
            if (t < end) {
                const gs_i64 i = t - d[3];
                if (i < used) out[offset + i] = reinterpret_cast<const GS_WORD*>(d[0])[i];
                break;
            }
            offset += used;
        }
    }
}
