"""``s.first_reached(slot, state, carry)`` as three kernels (``kernels/first_reached.cu``).

The definition is the torch backend's (:mod:`gsample.backend.torch.first_reached`): a pair
*(seed slot, node)* is the 64-bit key ``(batch * slots + slot) * n + node``; the result is
the pairs of the sample's edges not in ``state``, by key (mini-batch, slot, node), each
carrying the value of the first column (in column order) that reached it, and the new
state, every key so far, sorted. Bit for bit the torch code's result, with one read-back
and without sorting the edges:

* ``gs_fr_insert`` puts the state's keys into a device hash table with position 0 and each
  edge's key with its position plus one (``atomicMin``: the first edge wins), checking the
  slots, the rows and the state's order (one error word);
* ``gs_fr_compact`` keeps the edges whose table entry is their own (a key's first edge, in
  no state entry), compacted in edge order by a single-pass scan, and counts them; the
  count and the error word are the one read-back;
* ``gs_fr_finish_grouped`` places them without a sort where the disjoint program's
  frontiers allow it: columns grouped by (mini-batch, slot), as its frontiers are, keep the
  new keys grouped by (mini-batch, slot) in edge order, so a key's place is its group's start
  plus the keys of its group below it (a count over at most :data:`GROUPED_MAX` edges, the
  bound the first kernel computed and the read-back brought); a state entry's place in the
  new state likewise. It decodes the keys into nodes and slots, takes each one's column (for
  ``carry``) and writes the new state, the merge of the two lists;
* otherwise (one tree: ``slot`` None, large groups, columns out of group order) only the new
  keys are sorted (``torch.sort`` of the count, the edges' order alongside) and
  ``gs_fr_finish`` does the same from the sorted keys.

A state that is not sorted (not one this op returned) raises ``ValueError`` naming
``state``; a slot outside the key's slot space raises the torch code's ``ValueError``; a row
or column id outside the graph raises ``IndexError`` naming ``A``; the kernels bound every
index themselves, so the next call is unharmed. What the kernels do not take (int32
indices, CPU tensors) runs the torch code.
"""

from __future__ import annotations

import torch

from gsample.backend.cuda.module import launch as _launch
from gsample.backend.cuda.module import memset as _memset
from gsample.backend.registry import cuda_impl
from gsample.backend.torch import first_reached as reference
from gsample.base import validate as V
from gsample.formats.csc import CSC
from gsample.ir import Op

#: threads per block of the compaction (one edge a thread, a tile a block)
BLOCK = 256
#: the most edges of one (batch, slot) group for which the finish ranks each new pair within
#: its group (a count over the group) instead of sorting the new pairs
GROUPED_MAX = 256
#: the error word's kinds (``kernels/first_reached.cu``): (kind << 58) | index
_SLOT, _COL, _ROW, _STATE, _UNSORTED = range(5)
_INDEX = (1 << 58) - 1


def _kernels_take(A: CSC, state) -> bool:
    """Whether the kernels take these inputs (int64 indices, on a GPU)."""
    if not A.indptr.is_cuda or A.indptr.dtype != torch.int64 or A.rows.dtype != torch.int64:
        return False
    ids = (A.row_ids, A.col_ids, state)
    return all(t is None or (t.is_cuda and t.dtype == torch.int64) for t in ids)


@cuda_impl(Op.FIRST_REACHED)
def first_reached(A: CSC, slot=None, state=None, carry=None, batches=None):
    """The result of :func:`gsample.backend.torch.first_reached.first_reached` (same
    parameters, same result bit for bit), as kernels and one read-back.

    Parameters
    ----------
    A : CSC
        A hop's sample, shape (N, C) (a super-batch's: ids ``b * n + v``).
    slot : LongTensor, shape (C,), optional
        Each column's seed slot (default 0: one tree); checked by the kernels.
    state : LongTensor, shape (S,), optional
        The previous call's state (sorted keys); default the columns' pairs.
    carry : Tensor, shape (C,), optional
        A value per column, carried to the pairs it reaches first.
    batches : (int, int), optional
        ``(N, n)``: ``A`` is a super-batch of ``N`` mini-batches of ``n`` nodes.

    Returns
    -------
    nodes, slot : LongTensor, shape (M,)
    carry : Tensor, shape (M,), or None
    state : LongTensor, shape (S + M,)

    Examples
    --------
    >>> with gs.use_backend("cuda"):
    ...     nodes, slot, time, state = s.first_reached(slot, state, time)
    """
    if not _kernels_take(A, state):
        return reference.first_reached(A, slot, state, carry, batches)
    return run(A, slot, state, carry, batches)


def run(A: CSC, slot, state, carry, batches, launch=_launch, memset=_memset):
    """:func:`first_reached`'s host code; ``launch`` and ``memset`` are the CUDA module's
    (a test passes a CPU build of the kernels' source with its own)."""
    copies, n = (1, A.num_nodes) if batches is None else batches
    slots = reference.slot_space(copies, n)
    M = copies * n
    C, E, dev = A.num_cols, A.nnz, A.device
    if slot is None:
        slot = torch.zeros(C, dtype=torch.int64, device=dev)
    slot = slot.to(torch.int64).contiguous()
    if slot.shape != (C,):
        raise ValueError(
            f"slot: expected one seed slot per column of the sample, shape ({C},); "
            f"got shape {tuple(slot.shape)}"
        )
    if carry is not None and carry.shape != (C,):
        raise ValueError(
            f"carry: expected one value per column of the sample, shape ({C},); "
            f"got shape {tuple(carry.shape)}"
        )
    given = state is not None
    S = state.numel() if given else 0
    state = state.contiguous() if given else None
    keys_in = (S if given else C) + E
    cap = 1 << max(1, (2 * keys_in - 1).bit_length())  # a power of two >= 2 * keys
    tiles = -(-E // BLOCK)
    words = 1 + tiles
    # one allocation: the table's keys and positions, the error and group words (all ones), the
    # scan's words and the count (zeroed by the first kernel), each edge's table slot and
    # column, the new edges' keys and columns, the columns' keys (no state given)
    at = [2 * cap + 2, words + 1, E, E, E, E, 0 if given else C]
    ws = torch.empty(sum(at), dtype=torch.int64, device=dev)
    parts = list(torch.split(ws, at))
    table, scan_count, slot_e, ecol, fkey, fcol, colkey = parts
    keys, vals = table[:cap], table[cap : 2 * cap]
    err, groups = table[2 * cap : 2 * cap + 1], table[2 * cap + 1 :]
    scan, count = scan_count[:words], scan_count[words:]
    memset(table, 0xFF)
    R = -1 if A.row_ids is None else A.row_ids.numel()  # -1: the rows are ids
    launch(
        "first_reached",
        "gs_fr_insert",
        max(C + S + E, words),
        A.indptr.contiguous(),
        C,
        A.rows.contiguous(),
        E,
        _null(A.row_ids),
        R,
        _null(A.col_ids),
        slot,
        slots,
        n,
        M,
        M * slots,
        _null(state),
        S,
        int(given),
        0 if given else colkey,
        keys,
        vals,
        cap - 1,
        slot_e,
        ecol,
        scan,
        words,
        err,
        int(batches is not None),
        groups,
    )
    if E:
        launch(
            "first_reached",
            "gs_fr_compact",
            E,
            slot_e,
            ecol,
            E,
            keys,
            vals,
            cap - 1,
            scan,
            fkey,
            fcol,
            count,
            grid=tiles,
            block=BLOCK,
        )
        # the one read-back: the new pairs' count, with the error and group words
        F, code, most = V.read_back([count, err, groups])
    else:
        F, (code,), most = 0, V.read_back([err]), 0
    base = state
    if code != -1:
        kind, index = code >> 58, code & _INDEX
        if kind != _UNSORTED:
            _raise(A, slot, kind, index, slots, M)
        base = torch.sort(colkey).values  # the columns' pairs out of order
    elif not given:
        base = colkey
    out = torch.empty(3 * F + base.numel() + F, dtype=torch.int64, device=dev)
    nodes, oslot, ocol, new_state = torch.split(out, [F, F, F, base.numel() + F])
    # most: ~(the most edges of a (batch, slot) group), 0 when the columns are not grouped
    if F and most != 0 and ~most <= GROUPED_MAX:  # each group's new pairs ranked in place
        launch(
            "first_reached",
            "gs_fr_finish_grouped",
            F + base.numel(),
            fkey,
            fcol,
            F,
            base,
            base.numel(),
            n,
            slots,
            M * slots,
            ~most,
            int(batches is not None),
            nodes,
            oslot,
            ocol,
            new_state,
        )
        return nodes, oslot, None if carry is None else carry[ocol], new_state
    if F:
        fresh, perm = torch.sort(fkey[:F])
    else:
        fresh = perm = fkey[:0]
    launch(
        "first_reached",
        "gs_fr_finish",
        F + base.numel(),
        fresh,
        perm,
        fcol,
        F,
        base,
        base.numel(),
        n,
        slots,
        int(batches is not None),
        nodes,
        oslot,
        ocol,
        new_state,
    )
    return nodes, oslot, None if carry is None else carry[ocol], new_state


def _raise(A: CSC, slot, kind: int, index: int, slots: int, M: int):
    """The error the kernels flagged (the first problem of the lowest kind)."""
    if kind == _SLOT:
        lo, hi = torch.aminmax(slot)
        raise ValueError(f"slot: seed slots must lie in [0, {slots}), got {int(lo)} .. {int(hi)}")
    if kind == _COL:
        bad = int(A.col_ids[index])
        raise IndexError(
            f"A: node id {bad} (column {index} of the sample) is out of range for a graph "
            f"of {M} nodes"
        )
    if kind == _ROW:
        r = int(A.rows[index]) if index < A.nnz else None
        if A.row_ids is not None and r is not None:
            R = A.row_ids.numel()
            if not 0 <= r < R:
                raise IndexError(
                    f"A: row {r} of edge {index} is out of range for the sample's {R} rows"
                )
            r = int(A.row_ids[r])
        raise IndexError(
            f"A: node id {r} (the row of edge {index}) is out of range for a graph of {M} nodes"
        )
    raise ValueError(
        "state: pass the state a previous first_reached call returned (its keys sorted "
        f"ascending); entry {index} is below entry {index - 1}"
    )


def _null(t: torch.Tensor | None):
    """A kernel's optional array argument: the tensor, or a null pointer."""
    return 0 if t is None else t


__all__ = ["first_reached", "run"]
