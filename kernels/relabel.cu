// Kernel family "relabel": unique ids in first-occurrence order and relabelling, without a
// sort (gsample/backend/cuda/finalize.py is the host side; gsample/backend/torch/finalize.py
// states the semantics these reproduce bit for bit).
//
// The hash table is open addressing with linear probing over `mask + 1` slots (a power of
// two, at least twice the number of ids, so a probe always meets an empty slot): keys[s]
// holds an id (int64, >= 0) or GS_EMPTY, vals[s] the smallest position where that id occurs
// (atomicMin: the result does not depend on the order threads run in, so it is
// deterministic). A position is a first occurrence when vals[slot of its id] == position;
// ranking those positions (an exclusive scan of the flags, on the host) gives the unique
// ids in first-occurrence order and the local label of every id.
//
// Rows of a matrix are local indices in [0, R), so their unique set needs no hash: a flag
// per row of the row space and a scan give it in row-space order.
#include "hash.cuh"

#define GS_EMPTY 0xFFFFFFFFFFFFFFFFULL     // the int64 -1: ids are >= 0

// Insert ids[i] (i < n); slot[i] gets the slot that holds it. keys/vals start at GS_EMPTY.
// Plain (volatile) reads first: a key never changes once set and vals only decrease, so a
// stale read only costs an atomic; repeated ids then contend far less on one slot. A
// negative id (-1 is GS_EMPTY itself) is never inserted: slot[i] = -1, and it is neither
// a first occurrence nor labelled (the host refuses negative ids; this keeps the table
// whole whatever it is given).
extern "C" __global__ void gs_hash_insert(const gs_i64* __restrict__ ids, gs_i64 n,
                                          gs_u64* keys, gs_u64* vals, gs_i64 mask,
                                          gs_i64* __restrict__ slot) {
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < n;
         i += (gs_i64)gridDim.x * blockDim.x) {
        const gs_u64 key = (gs_u64)ids[i];
        if (ids[i] < 0) { slot[i] = -1; continue; }
        gs_i64 s = (gs_i64)(gs_mix64(key) & (gs_u64)mask);
        for (gs_i64 probe = 0; probe <= mask; ++probe) {   // bounded: never spins forever
            gs_u64 seen = ((volatile gs_u64*)keys)[s];
            if (seen == GS_EMPTY) seen = atomicCAS(&keys[s], GS_EMPTY, key);
            if (seen == GS_EMPTY || seen == key) {
                if (((volatile gs_u64*)vals)[s] > (gs_u64)i) atomicMin(&vals[s], (gs_u64)i);
                break;
            }
            s = (s + 1) & mask;
        }
        slot[i] = s;                             // in [0, mask] even if the loop ran out
    }
}

// flags[i] = 1 where position i is the first occurrence of its id, else 0.
extern "C" __global__ void gs_first_flags(const gs_u64* __restrict__ vals,
                                          const gs_i64* __restrict__ slot, gs_i64 n,
                                          int* __restrict__ flags) {
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < n;
         i += (gs_i64)gridDim.x * blockDim.x) {
        flags[i] = slot[i] >= 0 && vals[slot[i]] == (gs_u64)i;
    }
}

// Compaction of flagged positions: rank is the inclusive scan of flags, so flagged i goes
// to out[rank[i] - 1]; it writes ids[i], or i itself when has_ids is 0 (ids unused).
extern "C" __global__ void gs_select_flagged(const int* __restrict__ flags,
                                             const gs_i64* __restrict__ rank, gs_i64 n,
                                             const gs_i64* __restrict__ ids, int has_ids,
                                             gs_i64* __restrict__ out) {
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < n;
         i += (gs_i64)gridDim.x * blockDim.x) {
        if (flags[i]) out[rank[i] - 1] = has_ids ? ids[i] : i;
    }
}

// Label of every position: the rank of its id's first occurrence, inv[i] = rank[vals[slot[i]]] - 1.
extern "C" __global__ void gs_first_inverse(const gs_u64* __restrict__ vals,
                                            const gs_i64* __restrict__ slot,
                                            const gs_i64* __restrict__ rank, gs_i64 n,
                                            gs_i64* __restrict__ inv) {
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < n;
         i += (gs_i64)gridDim.x * blockDim.x) {
        inv[i] = slot[i] >= 0 ? rank[(gs_i64)vals[slot[i]]] - 1 : -1;
    }
}

// Relabel ids[i] (i < n) through a built table of a space of m ids: out[i] = rank[p] - 1
// where p is the first position of ids[i] in the space (rank: inclusive scan of its first
// occurrence flags, m entries), or -1 when ids[i] is not in the space (negative ids too).
extern "C" __global__ void gs_hash_lookup(const gs_u64* __restrict__ keys,
                                          const gs_u64* __restrict__ vals, gs_i64 mask,
                                          const gs_i64* __restrict__ rank, gs_i64 m,
                                          const gs_i64* __restrict__ ids, gs_i64 n,
                                          gs_i64* __restrict__ out) {
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < n;
         i += (gs_i64)gridDim.x * blockDim.x) {
        const gs_u64 key = (gs_u64)ids[i];
        gs_i64 label = -1;
        if (key != GS_EMPTY) {
            gs_i64 s = (gs_i64)(gs_mix64(key) & (gs_u64)mask);
            for (gs_i64 probe = 0; probe <= mask; ++probe) {
                const gs_u64 seen = keys[s];
                if (seen == GS_EMPTY) break;
                if (seen == key) {
                    const gs_u64 p = vals[s];
                    if (p < (gs_u64)m) label = rank[p] - 1;
                    break;
                }
                s = (s + 1) & mask;
            }
        }
        out[i] = label;
    }
}

// flags[rows[e]] = 1 for every edge e < n (rows outside [0, R) are skipped). Every writer
// stores the same value, so plain stores suffice.
extern "C" __global__ void gs_mark_rows(const gs_i64* __restrict__ rows, gs_i64 n, gs_i64 R,
                                        int* __restrict__ flags) {
    for (gs_i64 e = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; e < n;
         e += (gs_i64)gridDim.x * blockDim.x) {
        const gs_i64 r = rows[e];
        if (gs_in_range(r, R)) flags[r] = 1;
    }
}

// New local row of every edge: out[e] = rank[rows[e]] - 1 (rank: inclusive scan of the row
// flags, R entries; -1 for a row outside [0, R)).
extern "C" __global__ void gs_rank_rows(const gs_i64* __restrict__ rows, gs_i64 n,
                                        const gs_i64* __restrict__ rank, gs_i64 R,
                                        gs_i64* __restrict__ out) {
    for (gs_i64 e = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; e < n;
         e += (gs_i64)gridDim.x * blockDim.x) {
        const gs_i64 r = rows[e];
        out[e] = gs_in_range(r, R) ? rank[r] - 1 : -1;
    }
}

