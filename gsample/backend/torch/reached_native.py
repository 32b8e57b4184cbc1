"""``first_reached`` without seed slots, and key lookups, on CPU tensors in native code (C++).

The torch code (:func:`.first_reached.first_reached`) is the semantic reference: the rows of
the matrix's edges that no pair of ``state`` holds (default: its columns), each once, in
ascending id, with the first edge that reached each, and ``state`` grown by them (sorted
keys). It pays a stable ``argsort`` of every edge's key, a binary search of each in
``state`` and a sort of the grown state: on the CPU most of a PyG-style neighbour loader's
time (``gsample.interop.pyg``'s hops take it once a hop). Here one pass over ``state``
marks its ids in a bitmap over the id space, one pass over the edges keeps each unmarked row
the first time it is seen (with its edge), the new rows are sorted (they are few beside the
edges) and merged into ``state``. The result is the torch code's tensors, bit for bit
(``tests/backend/test_reached_native.py``).

Only pairs of seed slot 0 run here (``slot`` None: one tree, as PyG's non-disjoint hops);
the bitmap belongs to the calling thread and is kept across calls, cleared after each call
by the words the call touched. Every id and key is checked first: a row outside the id
space, a key of another slot or an unsorted ``state`` leaves the call to the torch code
(which returns or raises as it does). The library is built as :mod:`.walk_native`'s
(``$GSAMPLE_CACHE/cpu``); without a compiler, with ``GSAMPLE_NATIVE_CPU=0``, with
:data:`ENABLED` False or after a failed build the torch code runs.

The same library holds the hash lookups of int64 keys that lay a disjoint or temporal PyG
sample out (``gsample.interop.pyg``): :func:`positions` is ``_local``'s sort and binary
search (each key's place among distinct keys), :func:`new_keys` is ``new_keys``' two sorts
and a binary search (the keys not seen before, each once, ascending). An open-addressing
table answers each lookup in a probe or a few, and only the new keys are sorted; where a key
equals the table's empty marker (``-2**63``), the keys looked up among repeat or a
looked-up key is absent, the call returns None and the torch code runs
(``tests/backend/test_reached_keys.py``).
"""

from __future__ import annotations

import ctypes

import torch

from gsample.backend.torch import walk_native
from gsample.formats.csc import CSC

SOURCE = (
    r"""
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

typedef long long gs_i64;
typedef unsigned long long gs_u64;

"""
    + walk_native.BITS
    + r"""
namespace gs_fr {

// the calling thread's bitmap over the id space: all zero between calls
static thread_local std::vector<gs_u64> seen;

}  // namespace gs_fr

// first_reached of slot 0: rows[0, E) are ids b * n + v of the id space [0, N * n); the
// pairs reached before are `state` (S sorted keys b * slots * n + v) or, with S < 0, the
// columns' ids cols[0, C), whose keys are written to base[0, C) and sorted. Writes the k new
// ids ascending to nodes, the first edge of each to first, and the S' + k sorted keys of
// the grown state to state_out (S' = S, or C); returns k, or -1 where the torch code runs
// (an id out of range, a key of another slot or out of range, an unsorted state).
extern "C" gs_i64 gs_first_reached(const gs_i64* rows, gs_i64 E, const gs_i64* state, gs_i64 S,
                                   const gs_i64* cols, gs_i64 C, gs_i64 n, gs_i64 N,
                                   gs_i64 slots, gs_i64* base, gs_i64* nodes, gs_i64* first,
                                   gs_i64* state_out) {
    using namespace gs_fr;
    if (n <= 0 || N <= 0 || slots <= 0) return -1;
    const gs_i64 M = N * n, span = slots * n;
    for (gs_i64 e = 0; e < E; ++e)
        if (!in_range(rows[e], M)) return -1;
    const gs_i64* keys = state;
    gs_i64 K = S;
    if (S >= 0) {
        for (gs_i64 i = 0; i < S; ++i) {
            const gs_i64 key = state[i];
            if (key < 0 || (i && key < state[i - 1])) return -1;
            const gs_i64 b = key / span, v = key - b * span;
            if (b >= N || v >= n) return -1;  // a batch out of range, or a slot above 0
        }
    } else {
        for (gs_i64 c = 0; c < C; ++c) {
            const gs_i64 id = cols[c];
            if (!in_range(id, M)) return -1;
            const gs_i64 b = id / n;
            base[c] = b * span + (id - b * n);
        }
        std::sort(base, base + C);
        keys = base;
        K = C;
    }
    if (seen.size() < (size_t)((M + 63) >> 6)) seen.resize((size_t)((M + 63) >> 6), 0);
    gs_u64* bits = seen.data();
    for (gs_i64 i = 0; i < K; ++i) {
        const gs_i64 b = keys[i] / span;
        test_set(bits, b * n + (keys[i] - b * span));
    }
    gs_i64 k = 0;
    for (gs_i64 e = 0; e < E; ++e)
        if (test_set(bits, rows[e])) {
            nodes[k] = rows[e];
            first[k] = e;
            ++k;
        }
    // every bit this call set lies in a word of an id it marked: those words cleared, the
    // bitmap is all zero again
    for (gs_i64 i = 0; i < K; ++i) {
        const gs_i64 b = keys[i] / span;
        bits[(b * n + (keys[i] - b * span)) >> 6] = 0;
    }
    for (gs_i64 j = 0; j < k; ++j) bits[nodes[j] >> 6] = 0;
    std::vector<std::pair<gs_i64, gs_i64>> fresh((size_t)k);
    for (gs_i64 j = 0; j < k; ++j) fresh[(size_t)j] = std::make_pair(nodes[j], first[j]);
    std::sort(fresh.begin(), fresh.end());  // ids are distinct: by id
    gs_i64 i = 0, o = 0;
    for (gs_i64 j = 0; j < k; ++j) {
        const gs_i64 id = fresh[(size_t)j].first, b = id / n, key = b * span + (id - b * n);
        nodes[j] = id;
        first[j] = fresh[(size_t)j].second;
        while (i < K && keys[i] < key) state_out[o++] = keys[i++];
        state_out[o++] = key;
    }
    while (i < K) state_out[o++] = keys[i++];
    return k;
}


namespace gs_keys {

static const gs_i64 EMPTY = (gs_i64)(1ull << 63);

static inline gs_u64 mix(gs_u64 z) {  // splitmix64's finaliser: spreads clustered keys
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// an open-addressing table (linear probing) of at least 2 * n slots
struct Table {
    std::vector<gs_i64> key;
    std::vector<gs_i64> value;
    gs_u64 mask;
    explicit Table(gs_i64 n) {
        gs_u64 size = 16;
        while (size < (gs_u64)n * 2) size <<= 1;
        key.assign(size, EMPTY);
        value.assign(size, 0);
        mask = size - 1;
    }
    // the slot of k: its own, or the empty one where it would go
    inline gs_u64 slot(gs_i64 k) const {
        gs_u64 s = mix((gs_u64)k) & mask;
        while (key[s] != EMPTY && key[s] != k) s = (s + 1) & mask;
        return s;
    }
};

}  // namespace gs_keys

// out[i] = the position of ids[i] in space[0, P) (distinct keys); -1 (the torch code runs)
// where a key is the empty marker, space repeats a key or an id is not in space.
extern "C" gs_i64 gs_key_positions(const gs_i64* space, gs_i64 P, const gs_i64* ids, gs_i64 Q,
                                   gs_i64* out) {
    using namespace gs_keys;
    Table t(P);
    for (gs_i64 p = 0; p < P; ++p) {
        if (space[p] == EMPTY) return -1;
        const gs_u64 s = t.slot(space[p]);
        if (t.key[s] != EMPTY) return -1;  // a repeat
        t.key[s] = space[p];
        t.value[s] = p;
    }
    for (gs_i64 q = 0; q < Q; ++q) {
        if (ids[q] == EMPTY) return -1;
        const gs_u64 s = t.slot(ids[q]);
        if (t.key[s] == EMPTY) return -1;  // absent
        out[q] = t.value[s];
    }
    return 0;
}

// The keys of keys[0, K) not in seen[0, S) (nor -1, the torch code's sentinel), each once,
// ascending, written to out; returns their count, or -1 where a key is the empty marker.
extern "C" gs_i64 gs_new_keys(const gs_i64* keys, gs_i64 K, const gs_i64* seen, gs_i64 S,
                              gs_i64* out) {
    using namespace gs_keys;
    Table t(S + K + 1);
    t.key[t.slot(-1)] = -1;  // as the torch code's table: -1 is never new
    for (gs_i64 i = 0; i < S; ++i) {
        if (seen[i] == EMPTY) return -1;
        t.key[t.slot(seen[i])] = seen[i];
    }
    gs_i64 k = 0;
    for (gs_i64 i = 0; i < K; ++i) {
        if (keys[i] == EMPTY) return -1;
        const gs_u64 s = t.slot(keys[i]);
        if (t.key[s] == EMPTY) {
            t.key[s] = keys[i];
            out[k++] = keys[i];
        }
    }
    std::sort(out, out + k);
    return k;
}
"""
)

#: the native path is taken (with :func:`walk_native.enabled`); False: the torch code runs
ENABLED = True
#: id spaces past which the torch code runs (a bitmap of that many bits is kept for each
#: calling thread)
MAX_SPACE = 1 << 34


def enabled() -> bool:
    """Whether the native path may be used (``GSAMPLE_NATIVE_CPU=0`` or :data:`ENABLED` False
    turn it off)."""
    return ENABLED and walk_native.enabled()


def build():
    """The compiled ``(gs_first_reached, gs_key_positions, gs_new_keys)`` (ctypes), building
    them on first use; None when there is no compiler or the build fails."""
    return _BUILT()


_BUILT = walk_native.once(lambda: _build())  # _build: below


def available() -> bool:
    """Whether the native ``first_reached`` and key lookups run (enabled, and built or
    buildable)."""
    return enabled() and build() is not None


def _build():
    dll = walk_native.compile_library("reached", SOURCE, [], "first_reached and the key lookups")
    if dll is None:
        return None
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    reached, positions_fn, new_fn = dll.gs_first_reached, dll.gs_key_positions, dll.gs_new_keys
    reached.argtypes = [ptr, i64, ptr, i64, ptr, i64, i64, i64, i64, ptr, ptr, ptr, ptr]
    for fn in (positions_fn, new_fn):
        fn.argtypes = [ptr, i64, ptr, i64, ptr]
    for fn in (reached, positions_fn, new_fn):
        fn.restype = i64
    return reached, positions_fn, new_fn


def _native(i: int, *tensors):
    """Function ``i`` of :func:`build` where the native code takes ``tensors`` (contiguous
    1-d int64 CPU tensors, None allowed), else None."""
    if not (enabled() and all(t is None or _plain(t) for t in tensors)):
        return None
    fns = build()
    return None if fns is None else fns[i]


def _plain(t) -> bool:
    """A contiguous 1-d int64 CPU tensor: what the native code reads."""
    return t.device.type == "cpu" and t.dtype == torch.int64 and t.dim() == 1 and t.is_contiguous()


def _ptr(t):
    return None if t is None else t.data_ptr()


def _exact(t: torch.Tensor, k: int) -> torch.Tensor:
    # an exact tensor (what the torch code returns): a view would keep, and send to another
    # process, the whole buffer
    return t if k == t.numel() else t[:k].clone()


def first_reached(A: CSC, state, copies: int, n: int, slots: int):
    """``first_reached(A, state=state, batches=...)`` of seed slot 0 in native code:
    ``(nodes, first, state)``, the torch code's new ids, the first edge of each and the
    grown state, bit for bit; or None where the torch code must run.

    Parameters
    ----------
    A : CSC
        The matrix (a hop's sample), int64 CPU tensors; rows and columns in the id space
        ``[0, copies * n)`` (a super-batch's: encoded ``b * n + v``).
    state : LongTensor, shape (S,), or None
        The keys ``b * slots * n + v`` of the pairs reached before, sorted; None: the
        columns' pairs.
    copies, n : int
        Mini-batches and nodes per mini-batch (1 and the node count outside a
        super-batch).
    slots : int
        The key's slot space (:func:`.first_reached.slot_space`).

    Returns
    -------
    tuple of LongTensor, or None
        ``nodes`` (k,) ascending, ``first`` (k,) each one's first edge (CSC position),
        ``state`` (S + k,) sorted keys.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> from gsample.backend.torch.first_reached import slot_space
    >>> gs.manual_seed(0)
    >>> S = A[:, seeds].individual_sample(5)
    >>> nodes, first, state = first_reached(S.csc, None, 1, S.num_nodes, slot_space(1, 100))
    >>> nodes, state
    (tensor([23, 55, 66, 80, 84]), tensor([ 0,  1,  2, 23, 55, 66, 80, 84]))
    """
    if copies * n > MAX_SPACE:
        return None
    rows = A.global_rows()
    cols = A.global_cols() if state is None else None
    fn = _native(0, rows, cols, state)
    if fn is None:
        return None
    E = rows.numel()
    S = -1 if state is None else state.numel()
    C = 0 if cols is None else cols.numel()
    base = torch.empty(C, dtype=torch.int64) if cols is not None else None
    nodes = torch.empty(E, dtype=torch.int64)
    first = torch.empty(E, dtype=torch.int64)
    grown = torch.empty(max(S, C) + E, dtype=torch.int64)
    k = fn(
        _ptr(rows),
        E,
        _ptr(state),
        S,
        _ptr(cols),
        C,
        n,
        copies,
        slots,
        _ptr(base),
        _ptr(nodes),
        _ptr(first),
        _ptr(grown),
    )
    if k < 0:
        return None
    return _exact(nodes, k), _exact(first, k), _exact(grown, max(S, C) + k)


def positions(space: torch.Tensor, ids: torch.Tensor) -> torch.Tensor | None:
    """The position of each of ``ids`` in ``space`` (distinct keys, every id among them),
    or None where the torch code must run.

    Parameters
    ----------
    space : LongTensor, shape (P,)
        Distinct keys (a disjoint sample's pairs), contiguous, on the CPU.
    ids : LongTensor, shape (Q,)
        Keys of ``space``.

    Returns
    -------
    LongTensor, shape (Q,), or None

    Examples
    --------
    >>> import torch
    >>> positions(torch.tensor([40, 7, 12]), torch.tensor([12, 40, 12]))
    tensor([2, 0, 2])
    """
    fn = _native(1, space, ids)
    if fn is None:
        return None
    out = torch.empty(ids.numel(), dtype=torch.int64)
    if fn(space.data_ptr(), space.numel(), ids.data_ptr(), ids.numel(), out.data_ptr()) < 0:
        return None
    return out


def new_keys(keys: torch.Tensor, seen: torch.Tensor) -> torch.Tensor | None:
    """``unique(keys)`` without the members of ``seen``, ascending, or None where the torch
    code must run.

    Parameters
    ----------
    keys : LongTensor, shape (K,)
        Candidates, any order, repeats allowed; contiguous, on the CPU.
    seen : LongTensor, shape (S,)
        Keys already reached, any order.

    Returns
    -------
    LongTensor, shape (K',), or None

    Examples
    --------
    >>> import torch
    >>> new_keys(torch.tensor([5, 1, 5, 3]), torch.tensor([3, 9]))
    tensor([1, 5])
    """
    fn = _native(2, keys, seen)
    if fn is None:
        return None
    out = torch.empty(keys.numel(), dtype=torch.int64)
    k = fn(keys.data_ptr(), keys.numel(), seen.data_ptr(), seen.numel(), out.data_ptr())
    return None if k < 0 else _exact(out, k)


__all__ = [
    "ENABLED",
    "MAX_SPACE",
    "available",
    "build",
    "enabled",
    "first_reached",
    "new_keys",
    "positions",
]
