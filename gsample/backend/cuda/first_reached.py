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

The sync-free implementation (:func:`first_reached_sync_free`, registered ``sync_free``:
the disjoint and temporal programs call the op once per hop, and a read-back per hop would
keep a compiled program from running without host synchronisations or as a CUDA graph)
runs the same kernels on bounded inputs (a :class:`~gsample.formats.bounded.BoundedCSC`
sample, :class:`~gsample.formats.bounded.BoundedIds` slots, state and carried values, their
counts on the device) and reads nothing back: its buffers are sized by its inputs' buffers
(at most one new pair per edge buffer entry; the new state, the state's buffer plus those),
it always sorts the new keys' whole buffer (padding keys sort last) and, without a state,
the columns' keys, and the finish reads the counts from the device. It returns
``(nodes, slot, carry, state)`` as bounded values: the first three share the new pairs'
count, the state's count is the previous state's plus theirs. Its errors are deferred
(:func:`gsample.base.validate.fail_if`, with the details ``gs_fr_report`` wrote).

A state that is not sorted (not one this op returned) raises ``ValueError`` naming
``state``; a slot outside the key's slot space raises the torch code's ``ValueError``; a row
or column id outside the graph raises ``IndexError`` naming ``A``; the kernels bound every
index themselves, so the next call is unharmed. What the kernels do not take (int32
indices, CPU tensors) runs the torch code (the sync-free implementation trims its inputs
first, a read-back that a CUDA graph's capture refuses).
"""

from __future__ import annotations

import torch

from gsample.backend.cuda.module import launch as _launch
from gsample.backend.cuda.module import memset as _memset
from gsample.backend.cuda.nodewise import exact
from gsample.backend.registry import cuda_impl
from gsample.backend.torch import first_reached as reference
from gsample.base import validate as V
from gsample.base.readback import refuse_capture
from gsample.formats.bounded import BoundedCSC, BoundedIds
from gsample.formats.csc import CSC
from gsample.ir import Op

#: threads per block of the compaction (one edge a thread, a tile a block)
BLOCK = 256
#: the most edges of one (batch, slot) group for which the finish ranks each new pair within
#: its group (a count over the group) instead of sorting the new pairs
GROUPED_MAX = 256
#: the error word's kinds (``kernels/first_reached.cu``): (kind << 58) | index
_SLOT, _COL, _ROW, _STATE, _UNSORTED = range(5)
#: words of ``gs_fr_report``'s report: three flags, four details, the new state's count
_REPORT = 8


def _kernels_take(A: CSC, slot, state, carry) -> bool:
    """Whether the kernels take these inputs (int64 indices and state, all on the GPU)."""
    if not A.indptr.is_cuda or A.indptr.dtype != torch.int64 or A.rows.dtype != torch.int64:
        return False
    ids = (A.row_ids, A.col_ids, state)
    return all(t is None or (t.is_cuda and t.dtype == torch.int64) for t in ids) and all(
        t is None or t.is_cuda for t in (slot, carry)
    )


def _buffer(value):
    """A bounded value's buffer (a tensor or None: itself)."""
    return value.data if isinstance(value, BoundedIds) else value


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
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> A, seeds = A.to("cuda"), seeds.cuda()  # doctest: +SKIP
    >>> time = torch.tensor([5, 5, 8], device="cuda")  # doctest: +SKIP
    >>> slot = A.positions(seeds)  # doctest: +SKIP
    >>> s = A.temporal_sample(seeds, 10, seed=slot)  # doctest: +SKIP
    >>> with gs.use_backend("cuda"):  # doctest: +SKIP
    ...     nodes, slot, time, state = s.first_reached(slot, carry=time)
    """
    if not _kernels_take(A, slot, state, carry):
        return reference.first_reached(A, slot, state, carry, batches)
    return run(A, slot, state, carry, batches)


@cuda_impl(Op.FIRST_REACHED, sync_free=True, syncs=False, bounded_out=True)
def first_reached_sync_free(A, slot=None, state=None, carry=None, batches=None):
    """:func:`first_reached` without a read-back: bounded inputs, bounded results, errors
    deferred (a CUDA graph may capture it).

    Parameters
    ----------
    A : CSC or BoundedCSC
        A hop's sample: ``C`` buffer columns (the first ``ncols`` real, the others empty),
        ``indptr[-1]`` its edge count, its edge buffers ``E`` entries (at least that many).
    slot, carry : Tensor or BoundedIds, shape (C,), optional
        Aligned with the column buffer (padding entries are not read).
    state : LongTensor or BoundedIds (of ``S`` buffer entries), optional
        The previous call's state.
    batches : (int, int), optional
        As :func:`first_reached`.

    Returns
    -------
    nodes, slot : BoundedIds
        Buffers of ``E`` entries, the new pairs' count ``F`` (one count tensor for both and
        for ``carry``).
    carry : BoundedIds (``carry``'s dtype) or None
    state : BoundedIds
        A buffer of ``S + E`` entries (``C + E`` without a state), ``S + F`` of them valid.

    Inputs the kernels do not take (int32 indices, CPU tensors, a sample with a bounded
    row space) are trimmed (a read-back; refused inside a CUDA graph's capture) and run
    :func:`first_reached`: its exact values.

    Examples
    --------
    On a GPU, ``s``, ``slot``, ``state`` and ``time`` as :func:`first_reached` takes them:

    >>> nodes, slot, time, state = first_reached_sync_free(s, slot, state, time)  # doctest: +SKIP
    >>> nodes.data[: int(nodes.count)]  # the new pairs' nodes (a read-back)  # doctest: +SKIP
    """
    csc = A.csc if isinstance(A, BoundedCSC) else A
    rows_bounded = isinstance(A, BoundedCSC) and A.nrows is not None
    # bounded slots or carried values over another buffer than the sample's columns (a
    # sample an exact op made of a bounded frontier): aligned by trimming both
    misaligned = any(
        isinstance(v, BoundedIds) and v.data.shape[0] != csc.num_cols for v in (slot, carry)
    )
    if (
        rows_bounded
        or misaligned
        or not _kernels_take(csc, _buffer(slot), _buffer(state), _buffer(carry))
    ):
        refuse_capture()  # the trims read sizes back
        A = exact(A)
        slot, carry = (_trimmed(v, A.num_cols) for v in (slot, carry))
        return first_reached(A, slot, exact(state), carry, batches)
    return run(A, slot, state, carry, batches, sync_free=True)


# bounded only when its frontier is: the seeds' slots stay exact, so the checks reading them
# need no trim
@cuda_impl(Op.POSITIONS, sync_free=True, syncs=False, bounded_out="inputs", checks=("nodes",))
def positions(A: CSC, nodes, batches=None):
    """:func:`gsample.backend.torch.first_reached.positions` (the same result) that checks
    its ids itself, on the device: a compiled program's boundary check then only converts
    the seeds, and this op joins the CUDA graph that replays the sampler (a check before
    it would record its flags outside the graph, which the replay's read-back must then
    fetch one by one).

    Parameters
    ----------
    A : CSC
        The graph (its node count ``n`` bounds the ids; ``N * n`` a super-batch's).
    nodes : LongTensor (n,) or BoundedIds
        The frontier (a super-batch's encoded ids, grouped by mini-batch, with
        ``batches``); an id out of range is a deferred ``IndexError`` naming ``nodes``.
        No id is read through: nothing is clamped.
    batches : tuple of int, optional
        ``(N, n)`` of a super-batch.

    Returns
    -------
    LongTensor (n,) or BoundedIds
        Each entry's position in its mini-batch (a bounded frontier's: in bounded buffers
        with its count; padding unspecified).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> with gs.use_backend("cuda"):  # doctest: +SKIP
    ...     slot = A.to("cuda").positions(seeds.cuda())          # arange(len(seeds))
    """
    bounded = isinstance(nodes, BoundedIds)
    ids = nodes.data if bounded else nodes
    at = torch.arange(ids.numel(), device=ids.device)
    valid = at < nodes.count if bounded else None
    if ids.numel():  # a super-batch's ids are encoded b * n + v
        bound = A.num_nodes * (1 if batches is None else batches[0])
        V.in_range(ids if valid is None else torch.where(valid, ids, 0), "nodes", bound)
    if batches is not None and ids.numel():
        b = torch.div(ids, batches[1], rounding_mode="floor")
        if valid is not None:  # padding sorts after every mini-batch
            b = torch.where(valid, b, batches[0])
        at = at - torch.searchsorted(b, b)
    return BoundedIds(at, nodes.count) if bounded else at


def _trimmed(v, columns: int):
    """A bounded value trimmed to its count (at most ``columns`` entries: the columns an exact
    sample kept); a tensor (or None) as it is, for the exact code to check."""
    return exact(v)[:columns] if isinstance(v, BoundedIds) else v


def run(A, slot, state, carry, batches, launch=_launch, memset=_memset, sync_free=False):
    """The host code of :func:`first_reached` (``sync_free`` False: exact inputs, one
    read-back) and of :func:`first_reached_sync_free` (``sync_free``: bounded inputs and
    results, no read-back). ``launch`` and ``memset`` are the CUDA module's (a test passes a
    CPU build of the kernels' source with its own)."""
    csc = A.csc if isinstance(A, BoundedCSC) else A
    ncols = A.ncols if isinstance(A, BoundedCSC) else None
    nnz = csc.indptr[-1:] if isinstance(A, BoundedCSC) else None  # padding columns: empty
    nstate = state.count if isinstance(state, BoundedIds) else None
    slot, state, carry = _buffer(slot), _buffer(state), _buffer(carry)
    copies, n = (1, csc.num_nodes) if batches is None else batches
    slots = reference.slot_space(copies, n)
    M = copies * n
    C, E, dev = csc.num_cols, csc.nnz, csc.device
    if slot is None:
        slot = torch.zeros(C, dtype=torch.int64, device=dev)
    if slot.dtype == torch.bool or slot.is_floating_point() or slot.is_complex():
        # (a trusted slot, an earlier first_reached's, is not checked by the runtime)
        raise TypeError(f"slot: seed slots must be an integer tensor, got dtype {slot.dtype}")
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
    # column, the new edges' keys and columns, the columns' keys (no state given), the report
    at = [2 * cap + 2, words + 1, E, E, E, E, 0 if given else C, _REPORT]
    ws = torch.empty(sum(at), dtype=torch.int64, device=dev)
    table, scan_count, slot_e, ecol, fkey, fcol, colkey, report = torch.split(ws, at)
    keys, vals = table[:cap], table[cap : 2 * cap]
    err, groups = table[2 * cap : 2 * cap + 1], table[2 * cap + 1 :]
    scan, count = scan_count[:words], scan_count[words:]
    memset(table, 0xFF)
    R = -1 if csc.row_ids is None else csc.row_ids.numel()  # -1: the rows are ids
    launch(
        "first_reached",
        "gs_fr_insert",
        max(C + S + E, words + 1),
        csc.indptr.contiguous(),
        C,
        _null(ncols),
        csc.rows.contiguous(),
        E,
        _null(nnz),
        _null(csc.row_ids),
        R,
        _null(csc.col_ids),
        slot,
        slots,
        n,
        M,
        M * slots,
        _null(state),
        S,
        _null(nstate),
        int(given),
        0 if given else colkey,
        keys,
        vals,
        cap - 1,
        slot_e,
        ecol,
        fkey if sync_free else 0,  # the sync-free code sorts the whole buffer: padding last
        scan_count,  # the scan's words and the count
        words + 1,
        err,
        int(batches is not None),
        0 if sync_free else groups,
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

    def explain(fresh=None, F=0, base=None, S=0):
        """Launch ``gs_fr_report``: the error word's details (and with the new pairs'
        count ``fresh``, the new state's count) in ``report``."""
        launch(
            "first_reached",
            "gs_fr_report",
            1,
            err,
            slot,
            C,
            _null(ncols),
            _null(csc.col_ids),
            csc.rows.contiguous(),
            E,
            _null(csc.row_ids),
            R,
            _null(fresh),
            F,
            _null(base),
            S,
            report,
            grid=1,
            block=1,
        )

    if sync_free:
        explain(count, E, nstate if given else ncols, S if given else C)
        message = _message(slots, M, R)
        # one kind of error at most: the word keeps the lowest; details read on failure only
        V.fail_if(report[0:1], ValueError, message, report[3:7])
        V.fail_if(report[1:2], IndexError, message, report[3:7])
        V.fail_if(report[2:3], ValueError, message, report[3:7])
        base = state if given else torch.sort(colkey).values  # padding columns' keys last
        fresh, perm = torch.sort(fkey) if E else (fkey, fkey)  # padding keys last
        nodes, oslot, ocarry, new_state = _finish(
            launch,
            fresh,
            perm,
            fcol,
            E,
            count,
            base,
            base.numel(),
            nstate if given else ncols,
            n,
            slots,
            batches,
            carry,
        )
        return (
            BoundedIds(nodes, count),
            BoundedIds(oslot, count),
            None if ocarry is None else BoundedIds(ocarry, count),
            BoundedIds(new_state, report[7:8]),
        )
    if E:
        # the one read-back: the new pairs' count, with the error and group words
        F, code, most = V.read_back([count, err, groups])
    else:
        F, (code,), most = 0, V.read_back([err]), 0
    base = state
    if code != -1:
        if code >> 58 != _UNSORTED:
            explain()
            details = V.read_back(list(report[3:7].split(1)))
            raise _ERRORS[details[0]](_message(slots, M, R)(details))
        base = torch.sort(colkey).values  # the columns' pairs out of order
    elif not given:
        base = colkey
    # most: ~(the most edges of a (batch, slot) group), 0 when the columns are not grouped
    if F and most != 0 and ~most <= GROUPED_MAX:  # each group's new pairs ranked in place
        out = torch.empty(3 * F + base.numel() + F, dtype=torch.int64, device=dev)
        nodes, oslot, ocol, new_state = torch.split(out, [F, F, F, base.numel() + F])
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
    return _finish(
        launch, fresh, perm, fcol, F, None, base, base.numel(), None, n, slots, batches, carry
    )


def _finish(launch, fresh, perm, fcol, F, nfresh, base, S, nbase, n, slots, batches, carry):
    """``gs_fr_finish`` from the sorted new keys ``fresh`` (``F`` of them, ``nfresh`` real
    on the device, None: all) and the sorted state ``base`` (``S``, ``nbase``):
    ``(nodes, slot, carry, state)``, buffers of ``F``, ``F``, ``F`` and ``S + F`` entries."""
    out = torch.empty(3 * F + S + F, dtype=torch.int64, device=base.device)
    nodes, oslot, ocol, new_state = torch.split(out, [F, F, F, S + F])
    launch(
        "first_reached",
        "gs_fr_finish",
        F + S,
        fresh,
        perm,
        fcol,
        F,
        _null(nfresh),
        base,
        S,
        _null(nbase),
        n,
        slots,
        int(batches is not None),
        nodes,
        oslot,
        ocol,
        new_state,
    )
    if carry is None:
        return nodes, oslot, None, new_state
    # padding pairs' columns are 0 (a valid index); no column: no pair
    ocarry = carry.index_select(0, ocol) if carry.numel() else carry.new_zeros(F)
    return nodes, oslot, ocarry, new_state


#: the exception of each error kind the kernels flag
_ERRORS = {_SLOT: ValueError, _COL: IndexError, _ROW: IndexError, _STATE: ValueError}


def _message(slots: int, M: int, R: int):
    """The message of a flagged call from ``gs_fr_report``'s details ``(kind, index, a,
    b)`` (ints; see the kernel): reads nothing else."""

    def message(details) -> str:
        kind, index, a, b = details
        if kind == _SLOT:
            return f"slot: seed slots must lie in [0, {slots}), got {a} .. {b}"
        if kind == _COL:
            return (
                f"A: node id {a} (column {index} of the sample) is out of range for a graph "
                f"of {M} nodes"
            )
        if kind == _ROW and b == 1:
            return f"A: row {a} of edge {index} is out of range for the sample's {R} rows"
        if kind == _ROW:
            return (
                f"A: node id {a if b == 0 else None} (the row of edge {index}) is out of range "
                f"for a graph of {M} nodes"
            )
        return (
            "state: pass the state a previous first_reached call returned (its keys sorted "
            f"ascending); entry {index} is below entry {index - 1}"
        )

    return message


def _null(t: torch.Tensor | None):
    """A kernel's optional array argument: the tensor, or a null pointer."""
    return 0 if t is None else t


__all__ = ["first_reached", "first_reached_sync_free", "positions", "run"]
