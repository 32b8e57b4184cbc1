"""Hash lookups of int64 keys on CPU tensors in native code (C++): a disjoint sample's
*(seed slot, node)* pairs laid out in PyG's layout (``gsample.interop.pyg.temporal``).

The torch code is the reference: :func:`positions` is ``_local``'s sort and binary search
(each key's place in a list of distinct keys), :func:`new_keys` is ``new_keys``' two sorts
and a binary search (the keys not seen before, each once, ascending). Here an open-addressing
table of the distinct (or seen) keys answers each lookup in one probe or a few, and only the
new keys are sorted. Results are the torch code's, bit for bit
(``tests/backend/test_keys_native.py``); where a key equals the table's empty marker
(``-2**63``), the keys looked up among repeat or a looked-up key is absent, the call
returns None and the torch code runs.
Built as :mod:`.walk_native`'s libraries are; without a compiler or with
``GSAMPLE_NATIVE_CPU=0`` the torch code runs.
"""

from __future__ import annotations

import ctypes

import torch

from gsample.backend.torch import walk_native

SOURCE = r"""
#include <algorithm>
#include <cstdint>
#include <vector>

typedef long long gs_i64;
typedef unsigned long long gs_u64;

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

#: the native path is taken (with :func:`walk_native.enabled`); False: the torch code runs
ENABLED = True


def enabled() -> bool:
    """Whether the native path may be used (``GSAMPLE_NATIVE_CPU=0`` or :data:`ENABLED` False
    turn it off)."""
    return ENABLED and walk_native.enabled()


def build():
    """The compiled ``(gs_key_positions, gs_new_keys)`` (ctypes), building them on first
    use; None when there is no compiler or the build fails."""
    return _BUILT()


_BUILT = walk_native.once(lambda: _build())  # _build: below


def available() -> bool:
    """Whether the native lookups run (enabled, and built or buildable)."""
    return enabled() and build() is not None


def _build():
    dll = walk_native.compile_library("keys", SOURCE, [], "the key lookups")
    if dll is None:
        return None
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    positions_fn, new_fn = dll.gs_key_positions, dll.gs_new_keys
    positions_fn.argtypes = [ptr, i64, ptr, i64, ptr]
    positions_fn.restype = i64
    new_fn.argtypes = [ptr, i64, ptr, i64, ptr]
    new_fn.restype = i64
    return positions_fn, new_fn


def _plain(*tensors) -> bool:
    return all(
        t.device.type == "cpu" and t.dtype == torch.int64 and t.dim() == 1 and t.is_contiguous()
        for t in tensors
    )


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
    >>> positions(torch.tensor([40, 7, 12]), torch.tensor([12, 40, 12]))
    tensor([2, 0, 2])
    """
    if not (enabled() and _plain(space, ids)):
        return None
    fns = build()
    if fns is None:
        return None
    out = torch.empty(ids.numel(), dtype=torch.int64)
    if fns[0](space.data_ptr(), space.numel(), ids.data_ptr(), ids.numel(), out.data_ptr()) < 0:
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
    >>> new_keys(torch.tensor([5, 1, 5, 3]), torch.tensor([3, 9]))
    tensor([1, 5])
    """
    if not (enabled() and _plain(keys, seen)):
        return None
    fns = build()
    if fns is None:
        return None
    out = torch.empty(keys.numel(), dtype=torch.int64)
    k = fns[1](keys.data_ptr(), keys.numel(), seen.data_ptr(), seen.numel(), out.data_ptr())
    if k < 0:
        return None
    return out if k == out.numel() else out[:k].clone()


__all__ = ["ENABLED", "available", "build", "enabled", "new_keys", "positions"]
