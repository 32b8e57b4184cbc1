// Kernel family "first_reached": s.first_reached(slot, state, carry), disjoint sampling's next
// frontier (host code: gsample/backend/cuda/first_reached.py; the definition, which these
// reproduce bit for bit, is gsample/backend/torch/first_reached.py).
//
// A pair (seed slot, node) is the 64-bit key (batch * slots + slot) * n + node, below
// copies * slots * n <= 2**62. Three launches and one read-back:
//   gs_fr_insert   a thread per column, per state entry and per edge: the state's keys go
//                  into an open-addressing table (hash.cuh) with position 0, each edge's key
//                  with its position e + 1 (atomicMin: the first edge in column order wins,
//                  whatever order threads run in); slots, ids and the state's order checked
//                  (flagged in one error word);
//   gs_fr_compact  a thread per edge: an edge is new when its table entry holds its own
//                  position (the key's first edge, and no state entry holds it); a single-pass
//                  scan (scan.cuh) compacts the new edges' (key, column) in edge order and the
//                  last tile writes their count (read back with the error and group words);
//   gs_fr_finish_grouped  where the columns are grouped by (batch, slot) (the disjoint
//                  program's frontiers; each group's edges at most the host's bound, computed
//                  here by gs_fr_insert): a thread per new pair and per state entry places it
//                  by its group's start (a binary search) plus the keys of its group below it
//                  (a count), decodes the new keys into nodes and slots, takes each one's
//                  column (for the carried values) and writes the new state: no sort;
//   gs_fr_finish   otherwise, after the host sorts the new keys (torch.sort of the count
//                  alone): the same, each entry's place in the new state by a binary search
//                  in the other sorted list.
// The sync-free variant (no read-back: a CUDA graph may capture it) runs the same kernels on
// bounded buffers: the columns', edges' and state's counts are device words (null pointers:
// the buffers are exact), padding is skipped, the insert fills the new keys' buffer with a
// key above every pair's (GS_FR_PAD) so that the host sorts the whole buffer (its size a
// bound, not the count), gs_fr_finish reads the new pairs' count from the device, and
// gs_fr_report (one thread) explains the error word for the host's deferred checks and
// writes the new state's count. The exact host code launches gs_fr_report only on failure.
//
// Every index is bounded here: slots against slots, rows against the sample's row space and
// the id space M = copies * n, the table's probes by its mask, the compaction's writes by the
// edge count, the finish's reads by the count and its writes by the merged size; a device
// count is clamped into its buffer (gs_fr_count).
#include "hash.cuh"
#include "search.cuh"

#define GS_LOOP(i, n)                                                          \
    for (gs_i64 i = blockIdx.x * (gs_i64)blockDim.x + threadIdx.x; i < (n);   \
         i += (gs_i64)gridDim.x * blockDim.x)

// The error word (all ones before the launch: none) holds (kind << 58) | index of the first
// problem met, the lowest kind first: atomicMin makes it independent of the threads' order.
#define GS_FR_SLOT 0ULL      // slot[index] outside [0, slots)
#define GS_FR_COL 1ULL       // column index's id outside [0, M)
#define GS_FR_ROW 2ULL       // edge index's row outside the row space or [0, M)
#define GS_FR_STATE 3ULL     // state[index - 1] > state[index]: not a state this op returned
#define GS_FR_UNSORTED 4ULL  // the columns' pairs (the default state) out of order: not an
                             // error, the host sorts them
#define GS_FR_INDEX ((1ULL << 58) - 1)
// A padding key (of a padding column, or past the new keys): above every pair's key (below
// 2**62), so a sort puts it last.
#define GS_FR_PAD 0x7FFFFFFFFFFFFFFFLL

// A bounded value's count (a device word, or the buffer's size `bound` without one),
// clamped into [0, bound]: whatever a count says, no index passes the buffer.
__device__ __forceinline__ gs_i64 gs_fr_count(const gs_i64* __restrict__ count, gs_i64 bound) {
    if (count == nullptr) return bound;
    const gs_i64 c = count[0];
    return c < 0 ? 0 : (c > bound ? bound : c);
}

__device__ __forceinline__ void gs_fr_flag(gs_u64* err, gs_u64 kind, gs_i64 index) {
    atomicMin(err, (kind << 58) | ((gs_u64)index & GS_FR_INDEX));
}

// The key of pair (slot s, id): id = batch * n + node, in [0, M); s in [0, slots).
__device__ __forceinline__ gs_i64 gs_fr_key(gs_i64 id, gs_i64 s, gs_i64 n, gs_i64 slots) {
    const gs_i64 b = id / n;
    return (b * slots + s) * n + (id - b * n);
}

// Column c's slot, 0 when out of range (flagged by the column's own thread).
__device__ __forceinline__ gs_i64 gs_fr_slot(const gs_i64* __restrict__ slot, gs_i64 c,
                                             gs_i64 slots) {
    const gs_i64 s = slot[c];
    return gs_in_range(s, slots) ? s : 0;
}

// Column c's pair key (its id col_ids[c], or c without col_ids), the id clamped to 0.
__device__ __forceinline__ gs_i64 gs_fr_col_key(const gs_i64* __restrict__ col_ids,
                                                const gs_i64* __restrict__ slot, gs_i64 c,
                                                gs_i64 n, gs_i64 M, gs_i64 slots) {
    gs_i64 id = col_ids != nullptr ? col_ids[c] : c;
    if (!gs_in_range(id, M)) id = 0;
    return gs_fr_key(id, gs_fr_slot(slot, c, slots), n, slots);
}

// Column c's batch (batched: its id / n; else 0), -1 for an id outside [0, M).
__device__ __forceinline__ gs_i64 gs_fr_batch(const gs_i64* __restrict__ col_ids, gs_i64 c,
                                              gs_i64 n, gs_i64 M, int batched) {
    if (!batched) return 0;
    const gs_i64 id = col_ids != nullptr ? col_ids[c] : c;
    return gs_in_range(id, M) ? id / n : -1;
}

// Column c's group, batch * slots + slot (the high part of its pairs' keys), -1 when its
// batch or slot is out of range.
__device__ __forceinline__ gs_i64 gs_fr_group(const gs_i64* __restrict__ col_ids,
                                              const gs_i64* __restrict__ slot, gs_i64 c,
                                              gs_i64 n, gs_i64 M, gs_i64 slots, int batched) {
    const gs_i64 b = gs_fr_batch(col_ids, c, n, M, batched);
    const gs_i64 s = slot[c];
    return b >= 0 && gs_in_range(s, slots) ? b * slots + s : -1;
}

// The groups word (all ones before the launch) holds ~(the most edges of one group of
// consecutive columns): the first column of a group finds the group's end by a binary search
// and folds its edge count in; columns out of group order (or out of range) write 0, which
// sends the host to the sort. ~word bounds how many new pairs share a group (a slot of a
// mini-batch), which the grouped finish counts through.
__device__ __forceinline__ void gs_fr_group_size(const gs_i64* __restrict__ indptr, gs_i64 C,
                                                 const gs_i64* __restrict__ col_ids,
                                                 const gs_i64* __restrict__ slot, gs_i64 c,
                                                 gs_i64 n, gs_i64 M, gs_i64 slots,
                                                 int batched, gs_u64* groups) {
    const gs_i64 g = gs_fr_group(col_ids, slot, c, n, M, slots, batched);
    const gs_i64 p = c > 0 ? gs_fr_group(col_ids, slot, c - 1, n, M, slots, batched) : -2;
    if (g < 0 || p == -1 || p > g) {
        atomicMin(groups, 0ULL);
        return;
    }
    if (p == g) return;                          // not the group's first column
    gs_i64 lo = c + 1, hi = C;                   // the first column past the group
    while (lo < hi) {
        const gs_i64 mid = lo + ((hi - lo) >> 1);
        const gs_i64 q = gs_fr_group(col_ids, slot, mid, n, M, slots, batched);
        if (q < 0 || q > g) hi = mid; else lo = mid + 1;
    }
    const gs_i64 size = indptr[lo] - indptr[c];
    atomicMin(groups, ~(gs_u64)(size > 0 ? size : 0));
}

// Bounded inputs (the sync-free host code): ncols, nnz and nstate are the columns', edges'
// and state's counts (null: all of the buffer); padding columns write GS_FR_PAD as their key
// (colkey), padding edges are never new (slot_e -1), padding state entries are skipped; fkey
// (null: not filled) gets GS_FR_PAD everywhere. groups null: no group bound (the sync-free
// code always sorts).
// Threads [0, C): column c checks its slot; without a state (given 0) it makes its pair's
// key (colkey[c], inserted with position 0) and checks the keys' order. Threads [C, C + S):
// state entry i inserted with position 0 (a key outside [0, kmax) matches no edge: not
// inserted), its order checked. Threads [C + S, C + S + E): edge e (column by a binary search
// in indptr, ecol[e]) inserts its pair's key with position e + 1 and keeps its table slot
// (slot_e[e]). Rows are local: ids row_ids[r] (R entries), or ids themselves (R < 0). Also
// zeroes the compaction's scan words and the count after them (scan[0 .. words): a count of
// 0 when no compaction runs), and bounds each (batch, slot) group's edges in the groups word
// (gs_fr_group_size; batched: a column's batch is its id / n, and a row outside it sends
// the host to the sort). (An empty tensor's pointer may be null: whether an array is given
// is never read from its pointer.)
extern "C" __global__ void gs_fr_insert(const gs_i64* __restrict__ indptr, gs_i64 C,
                                        const gs_i64* __restrict__ ncols,
                                        const gs_i64* __restrict__ rows, gs_i64 E,
                                        const gs_i64* __restrict__ nnz,
                                        const gs_i64* __restrict__ row_ids, gs_i64 R,
                                        const gs_i64* __restrict__ col_ids,
                                        const gs_i64* __restrict__ slot, gs_i64 slots,
                                        gs_i64 n, gs_i64 M, gs_i64 kmax,
                                        const gs_i64* __restrict__ state, gs_i64 S,
                                        const gs_i64* __restrict__ nstate, int given,
                                        gs_i64* __restrict__ colkey, gs_u64* keys,
                                        gs_u64* vals, gs_i64 mask,
                                        gs_i64* __restrict__ slot_e,
                                        gs_i64* __restrict__ ecol, gs_i64* __restrict__ fkey,
                                        gs_u64* scan, gs_i64 words, gs_u64* err, int batched,
                                        gs_u64* groups) {
    GS_LOOP(w, words) scan[w] = 0;
    const gs_i64 S_ = given ? S : 0;
    const gs_i64 Cr = gs_fr_count(ncols, C), Er = gs_fr_count(nnz, E);
    const gs_i64 Sr = gs_fr_count(nstate, S_);
    GS_LOOP(i, C + S_ + E) {
        if (i < C) {
            const gs_i64 c = i;
            if (c >= Cr) {                      // a padding column: its key sorts last
                if (!given) colkey[c] = GS_FR_PAD;
                continue;
            }
            if (!gs_in_range(slot[c], slots)) gs_fr_flag(err, GS_FR_SLOT, c);
            if (groups != nullptr)
                gs_fr_group_size(indptr, Cr, col_ids, slot, c, n, M, slots, batched, groups);
            if (!given) {
                const gs_i64 id = col_ids != nullptr ? col_ids[c] : c;
                if (!gs_in_range(id, M)) gs_fr_flag(err, GS_FR_COL, c);
                const gs_i64 k = gs_fr_col_key(col_ids, slot, c, n, M, slots);
                colkey[c] = k;
                gs_table_insert(keys, vals, mask, (gs_u64)k, 0ULL);
                if (c > 0 && gs_fr_col_key(col_ids, slot, c - 1, n, M, slots) > k)
                    gs_fr_flag(err, GS_FR_UNSORTED, c);
            }
        } else if (i < C + S_) {
            const gs_i64 j = i - C;
            if (j >= Sr) continue;              // the state's padding
            const gs_i64 k = state[j];
            if (gs_in_range(k, kmax)) gs_table_insert(keys, vals, mask, (gs_u64)k, 0ULL);
            if (j > 0 && state[j - 1] > k) gs_fr_flag(err, GS_FR_STATE, j);
        } else {
            const gs_i64 e = i - C - S_;
            if (fkey != nullptr) fkey[e] = GS_FR_PAD;   // the compaction overwrites [0, F)
            if (e >= Er) {                      // the edge buffer's padding: never new
                slot_e[e] = -1;
                ecol[e] = 0;
                continue;
            }
            if (Cr == 0) {  // edges without columns: not a CSC (flagged, nothing read)
                gs_fr_flag(err, GS_FR_ROW, e);
                ecol[e] = 0;
                slot_e[e] = 0;
                continue;
            }
            const gs_i64 c = gs_owner(indptr, Cr, e);
            ecol[e] = c;
            gs_i64 r = rows[e];
            if (R >= 0) {
                if (gs_in_range(r, R)) {
                    r = row_ids[r];
                } else {
                    gs_fr_flag(err, GS_FR_ROW, e);
                    r = 0;
                }
            }
            if (!gs_in_range(r, M)) {
                gs_fr_flag(err, GS_FR_ROW, e);
                r = 0;
            }
            if (groups != nullptr && batched && r / n != gs_fr_batch(col_ids, c, n, M, 1))
                atomicMin(groups, 0ULL);              // a row outside its column's batch
            const gs_i64 k = gs_fr_key(r, gs_fr_slot(slot, c, slots), n, slots);
            slot_e[e] = gs_table_insert(keys, vals, mask, (gs_u64)k, (gs_u64)e + 1ULL);
        }
    }
}

// Edge e is new when its table entry's position is its own (e + 1).
__device__ __forceinline__ bool gs_fr_new(const gs_i64* __restrict__ slot_e,
                                          const gs_u64* __restrict__ vals, gs_i64 mask,
                                          gs_i64 e) {
    const gs_i64 s = slot_e[e];   // -1: padding
    return s >= 0 && vals[s & mask] == (gs_u64)e + 1ULL;
}

#ifndef GS_FR_SEQUENTIAL
#include "scan.cuh"

// One tile of blockDim.x edges a block, by ticket (scan: 1 + blocks words, zeroed by
// gs_fr_insert): the new edges' keys and columns in edge order (fkey, fcol: E entries at
// most), their count in count[0] (written by the last tile).
extern "C" __global__ void gs_fr_compact(const gs_i64* __restrict__ slot_e,
                                         const gs_i64* __restrict__ ecol, gs_i64 E,
                                         const gs_u64* __restrict__ keys,
                                         const gs_u64* __restrict__ vals, gs_i64 mask,
                                         gs_u64* scan, gs_i64* __restrict__ fkey,
                                         gs_i64* __restrict__ fcol,
                                         gs_i64* __restrict__ count) {
    const gs_i64 t = gs_scan_ticket(scan);
    const gs_i64 e = t * blockDim.x + threadIdx.x;
    const gs_i64 mine = e < E && gs_fr_new(slot_e, vals, mask, e) ? 1 : 0;
    gs_i64 total;
    const gs_i64 local = gs_block_exclusive(mine, &total);
    const gs_i64 before = gs_scan_exclusive(scan, t, total);
    const gs_i64 r = before + local;
    if (mine && gs_in_range(r, E)) {
        fkey[r] = (gs_i64)keys[slot_e[e] & mask];
        fcol[r] = ecol[e];
    }
    if (threadIdx.x == 0 && t == (gs_i64)gridDim.x - 1) count[0] = before + total;
}
#else
// The same result, one thread (the kernels compiled as C++ for the CPU tests).
extern "C" __global__ void gs_fr_compact(const gs_i64* __restrict__ slot_e,
                                         const gs_i64* __restrict__ ecol, gs_i64 E,
                                         const gs_u64* __restrict__ keys,
                                         const gs_u64* __restrict__ vals, gs_i64 mask,
                                         gs_u64* scan, gs_i64* __restrict__ fkey,
                                         gs_i64* __restrict__ fcol,
                                         gs_i64* __restrict__ count) {
    gs_i64 r = 0;
    for (gs_i64 e = 0; e < E; ++e) {
        if (!gs_fr_new(slot_e, vals, mask, e)) continue;
        fkey[r] = (gs_i64)keys[slot_e[e] & mask];
        fcol[r] = ecol[e];
        ++r;
    }
    count[0] = r;
    (void)scan;
}
#endif

// Threads [0, F): new pair j (fresh: the sorted new keys; perm: each one's place in fcol)
// decoded into its node (encoded b * n + v when encode) and slot, its column (ocol), and
// written into the new state at j + (state entries <= it). Threads [F, F + S): state entry
// i written at i + (new keys < it). Both lists sorted: the places are a permutation of
// [0, F + S). F and S are buffer sizes; the counts nfresh and nstate (device words, null:
// the buffers are exact) say how much of each is real (the sync-free host code's bounded
// values): a padding pair gets column 0 (a valid index to gather the carried values at),
// a padding state entry is skipped.
extern "C" __global__ void gs_fr_finish(const gs_i64* __restrict__ fresh,
                                        const gs_i64* __restrict__ perm,
                                        const gs_i64* __restrict__ fcol, gs_i64 F,
                                        const gs_i64* __restrict__ nfresh,
                                        const gs_i64* __restrict__ state, gs_i64 S,
                                        const gs_i64* __restrict__ nstate, gs_i64 n,
                                        gs_i64 slots, int encode, gs_i64* __restrict__ nodes,
                                        gs_i64* __restrict__ oslot,
                                        gs_i64* __restrict__ ocol,
                                        gs_i64* __restrict__ out_state) {
    const gs_i64 Fr = gs_fr_count(nfresh, F), Sr = gs_fr_count(nstate, S);
    GS_LOOP(i, F + S) {
        if (i < F) {
            if (i >= Fr) {
                ocol[i] = 0;
                continue;
            }
            const gs_i64 k = fresh[i];
            const gs_i64 bs = k / n, v = k - bs * n;
            const gs_i64 b = bs / slots;
            nodes[i] = encode ? b * n + v : v;
            oslot[i] = bs - b * slots;
            const gs_i64 p = perm[i];
            ocol[i] = gs_in_range(p, F) ? fcol[p] : 0;
            // state entries <= k: the first index at least k + 1 (k < 2**62: no overflow)
            const gs_i64 at = i + gs_first_at_least(state, Sr, k + 1);
            if (gs_in_range(at, Fr + Sr)) out_state[at] = k;
        } else {
            const gs_i64 j = i - F;
            if (j >= Sr) continue;
            const gs_i64 k = state[j];
            const gs_i64 at = j + gs_first_at_least(fresh, Fr, k);
            if (gs_in_range(at, Fr + Sr)) out_state[at] = k;
        }
    }
}

// One thread: the error word explained in report[0 .. 7) (no error: the flags 0), and
// report[7] the new state's size (nfresh + nstate, each clamped as the finish clamps it; 0
// with nfresh null). report[0], [1], [2]: whether the error is a slot's, an id of A's (a
// column's or an edge's row) or the state's order; report[3 .. 7): kind, index, a, b, the
// details the host's message takes: a bad slot's kind gives the real slots' least and
// greatest (a loop over the columns: only on failure), a column's its id, an edge's its row
// (a local row in the row space: its id, b 0; outside it: the row itself, b 1; no edge: b 2).
extern "C" __global__ void gs_fr_report(const gs_u64* __restrict__ err,
                                        const gs_i64* __restrict__ slot, gs_i64 C,
                                        const gs_i64* __restrict__ ncols,
                                        const gs_i64* __restrict__ col_ids,
                                        const gs_i64* __restrict__ rows, gs_i64 E,
                                        const gs_i64* __restrict__ row_ids, gs_i64 R,
                                        const gs_i64* __restrict__ nfresh, gs_i64 F,
                                        const gs_i64* __restrict__ nstate, gs_i64 S,
                                        gs_i64* __restrict__ report) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    const gs_u64 word = err[0];
    const gs_i64 kind = (gs_i64)(word >> 58), index = (gs_i64)(word & GS_FR_INDEX);
    gs_i64 a = 0, b = 0;
    if (kind == (gs_i64)GS_FR_SLOT) {
        const gs_i64 Cr = gs_fr_count(ncols, C);
        a = Cr ? slot[0] : 0;
        b = a;
        for (gs_i64 c = 1; c < Cr; ++c) {
            a = slot[c] < a ? slot[c] : a;
            b = slot[c] > b ? slot[c] : b;
        }
    } else if (kind == (gs_i64)GS_FR_COL) {
        a = col_ids == nullptr ? index : (gs_in_range(index, C) ? col_ids[index] : 0);
    } else if (kind == (gs_i64)GS_FR_ROW) {
        b = 2;
        if (gs_in_range(index, E)) {
            a = rows[index];
            b = 0;
            if (R >= 0) {
                if (gs_in_range(a, R)) a = row_ids[a]; else b = 1;
            }
        }
    }
    report[0] = kind == (gs_i64)GS_FR_SLOT;
    report[1] = kind == (gs_i64)GS_FR_COL || kind == (gs_i64)GS_FR_ROW;
    report[2] = kind == (gs_i64)GS_FR_STATE;
    report[3] = kind;
    report[4] = index;
    report[5] = a;
    report[6] = b;
    report[7] = nfresh == nullptr ? 0 : gs_fr_count(nfresh, F) + gs_fr_count(nstate, S);
}

// gs_fr_finish without the sort, for new keys in edge order whose groups (key / n) do not
// decrease (the columns grouped by (batch, slot), each group's edges at most span, the
// bound gs_fr_insert computed): a key's place among the sorted new keys is its group's first
// position plus the keys of its group below it, a state entry's the new keys below it (its
// group's start and the keys of its group below it). The group's keys are [g * n, g * n + n),
// its positions found by binary searches on those bounds (no division in the loops), within
// span of the key for a new one. Threads [0, F): new pair i (fkey[i], column fcol[i]);
// threads [F, F + S): state entry i - F. The places are the sorted order's: the same outputs.
extern "C" __global__ void gs_fr_finish_grouped(const gs_i64* __restrict__ fkey,
                                                const gs_i64* __restrict__ fcol, gs_i64 F,
                                                const gs_i64* __restrict__ state, gs_i64 S,
                                                gs_i64 n, gs_i64 slots, gs_i64 kmax,
                                                gs_i64 span, int encode,
                                                gs_i64* __restrict__ nodes,
                                                gs_i64* __restrict__ oslot,
                                                gs_i64* __restrict__ ocol,
                                                gs_i64* __restrict__ out_state) {
    if (span < 1) span = 1;
    GS_LOOP(i, F + S) {
        const bool fresh = i < F;
        const gs_i64 k = fresh ? fkey[i] : state[i - F];
        if (!fresh && !gs_in_range(k, kmax)) {   // below or above every new key
            const gs_i64 at = i - F + (k < 0 ? 0 : F);
            if (gs_in_range(at, F + S)) out_state[at] = k;
            continue;
        }
        const gs_i64 g = k / n, first = g * n, past = first + n;   // k < kmax <= 2**62
        gs_i64 lo, hi;
        if (fresh) {
            const gs_i64 a = i - span + 1 > 0 ? i - span + 1 : 0;
            lo = a + gs_first_at_least(fkey + a, i - a, first);
            const gs_i64 b = i + span < F ? i + span : F;
            hi = i + 1 + gs_first_at_least(fkey + i + 1, b - i - 1, past);
        } else {
            lo = gs_first_at_least(fkey, F, first);
            const gs_i64 m = F - lo < span ? F - lo : span;
            hi = lo + gs_first_at_least(fkey + lo, m, past);
        }
        gs_i64 below = 0;
        for (gs_i64 j = lo; j < hi; ++j) below += fkey[j] < k;
        if (fresh) {
            const gs_i64 r = lo + below;             // its place among the sorted new keys
            if (!gs_in_range(r, F)) continue;
            const gs_i64 b = g / slots;
            nodes[r] = encode ? b * n + (k - first) : k - first;
            oslot[r] = g - b * slots;
            ocol[r] = fcol[i];
            const gs_i64 at = r + gs_first_at_least(state, S, k + 1);
            if (gs_in_range(at, F + S)) out_state[at] = k;
        } else {
            const gs_i64 at = i - F + lo + below;
            if (gs_in_range(at, F + S)) out_state[at] = k;
        }
    }
}
