"""Listed rows on the GPU: ``LISTED_COLLECTIVE_SAMPLE`` (made by the ``listed_rows`` pass from
LADIES's row sums, division and collective sample), with nothing over the graph's rows.

The dense program computes ``p = W[:, cols].sum(axis=1) / scale`` for every row of the graph
(``SLICE_REDUCE`` with its scale: :mod:`.rowsum`'s exact sums and finish over all ``N``
rows), draws among the rows with ``p > 0`` by a key per row (:mod:`.layerwise`), and keeps
every frontier edge of a chosen row. Here only the slice's ``L`` distinct rows exist:

* the slice's edges (:func:`gsample.formats.csc.gather_segments`) and their rows, made
  distinct by a sort (ascending; a super-batch's encoded ``b * n + v``; :func:`_distinct`:
  their number stays on the device), each edge mapped to its row's place among them;
* the row sums by the same exact arithmetic over that local row space (``rowsum
  .edge_row_sums``: 62-bit fixed point at each row's largest exponent, 128-bit integer sums,
  one rounding), divided in the finish by the same scale (a super-batch's: each row's
  mini-batch's): the bits the dense vector has at those rows;
* the positive rows drawn with the dense sampler's keys, mini-batch by mini-batch
  (``select.choose_among`` with :class:`.sampling.CudaDraws`: ``exponential(word(0, v)) /
  p``, the ``k`` smallest, ``v`` the row's node id in its mini-batch);
* the chosen rows' slice edges kept in the slice's order (a mask over its edges).

So the sample is the dense path's, bit for bit: the rows chosen, the edges kept and their
order, values and ids. NaN, infinite or negative probabilities raise naming ``node_probs``
(as the dense kernels' flags do), before a frontier without a positive row does.

With the device's keys (a compiled program's layers: the sync-free registration) the rows
are listed on the device instead (:func:`_on_device`, :data:`DEVICE`): each batch's
distinct slice rows take places in a list (an int32 map over the row space, set to -1 a
call, says which row has which place: ``kernels/rowsum.cu``'s ``gs_listed_claim``), their
exact sums add at those places (``gs_listed_exponents``, ``gs_listed_add``), the positive
rows' keys are compacted by batch (``gs_listed_keys``) for the dense path's radix select
(:mod:`.topk`), and the dense path's kept-edge passes and finish
(:func:`gsample.backend.cuda.layerwise.kept_pending`, ``collective_finish``) make the
sample, with one read-back. A batch with more distinct rows than its list holds
(:data:`LIST_ROOM` at first) is drawn again by the path below, and the next sample of the
graph gets room for them.

Otherwise (the host's keys, a divisor the finish cannot take, replacement) the sizes are
data-dependent (the slice's edges, its distinct rows, the candidates, the
kept edges): a call reads back three times (the slice's edge count; the distinct rows' and
each mini-batch's candidates' counts with every pending check flag; the kept edges' count),
one mini-batch or a super-batch. So the op is registered as reading back (``syncs``): the
lowering never puts it in a CUDA graph region. Its sync-free registration takes a bounded
frontier (the previous layer's ``all_nodes``) and reads its count with the slice's size
(no trim step of its own); the exact one (the runtime without sync-free steps) takes
trimmed inputs. Graphs of fewer
than :data:`MIN_NODES` nodes keep the dense path (:data:`LISTED`): their row space costs
little, and the dense path's device part is captured and replayed.
"""

from __future__ import annotations

import torch

from gsample.backend.cuda import topk
from gsample.backend.cuda.extract import _index_arrays, _params
from gsample.backend.cuda.layerwise import (
    _GRID,
    _MAX_CANDIDATES,
    _MAX_CHOSEN,
    _THREADS,
    _frontier_ptr,
    _graph,
    _list_room,
    _rounds,
    collective_finish,
    kept_pending,
)
from gsample.backend.cuda.module import launch, memset
from gsample.backend.cuda.nodewise import _frontier, exact
from gsample.backend.cuda.rowsum import FLOATS, edge_row_sums, scale_args
from gsample.backend.cuda.sampling import CudaDraws
from gsample.backend.registry import cuda_impl
from gsample.backend.torch import fused_reduce, fused_select
from gsample.backend.torch.select import _draws_fit, choose_among
from gsample.base import validate as V
from gsample.base.random import BatchKeys, DeviceKey
from gsample.base.readback import refuse_capture
from gsample.formats.bounded import COPY_OUT
from gsample.formats.csc import CSC, gather_segments, segment_ptr
from gsample.ir import Op
from gsample.ir.checks import NO_POSITIVE_ROW

#: whether the ``listed_rows`` pass lists LADIES's rows on the CUDA backend: ``"auto"`` for
#: graphs of at least :data:`MIN_NODES` nodes, True for every graph, False for none. Read
#: when a program is compiled (a program compiled before a change keeps its choice).
#: ``"auto"`` by default: on a large graph on the device a program's layers list their
#: rows there (:data:`DEVICE`), where the dense kernels' passes over every row of the graph
#: are gone; on a small one the dense kernels, captured in CUDA graphs, launch less from
#: the host; on a graph in pinned host memory listing reads the slice over the host link
#: in three passes (place, exponents, sums) where the dense path reads it in one
LISTED = "auto"
#: the fewest nodes of a graph that ``"auto"`` lists: below it the dense row space (a few
#: vectors of ``N`` entries a layer) costs less than listing the slice's rows, and the
#: dense path's device part is captured in a CUDA graph
MIN_NODES = 2**23


#: whether a sample with the device's keys (the sync-free registration's: every layer of a
#: compiled program, one mini-batch or a super-batch) lists its rows on the device
#: (:func:`_on_device`: places in per-batch lists through a map over the row space, the sums
#: at those places, the positive rows' keys compacted for the radix select; one read-back, in
#: the dense finish) rather than by a sort and three read-backs (:func:`_sample`, which runs
#: where that cannot: another divisor, replacement, a list that fills up)
DEVICE = True
#: rows a batch's list holds at first (at most the graph's rows); a sample whose batch lists
#: more is drawn again by :func:`_sample`, and the next one of that graph and size gets twice
#: what it listed
LIST_ROOM = 1 << 22
#: (graph's indptr address, batches) -> the room the next listed sample gets a batch
_ROOM: dict = {}


def min_nodes() -> int | None:
    """The CUDA backend's ``Target.listed_min_nodes`` from :data:`LISTED` (None: never).

    Examples
    --------
    >>> min_nodes() == MIN_NODES  # LISTED = "auto": graphs of 2**23 nodes or more
    True
    """
    if LISTED is True:
        return 0
    if LISTED is False:
        return None
    if LISTED == "auto":
        return MIN_NODES
    raise ValueError(f"LISTED: expected 'auto', True or False, got {LISTED!r}")


def pinned() -> bool:
    """The CUDA backend's ``Target.listed_pinned`` from :data:`LISTED`: whether a graph in
    pinned host memory is listed too (only when :data:`LISTED` is True).

    Examples
    --------
    >>> pinned()  # LISTED = "auto": graphs on the device only
    False
    """
    return LISTED is True


# data-dependent sizes: it reads back (Impl.syncs), so the lowering keeps its step out of
# every CUDA graph region. Sync-free (a bounded frontier: its count read back with the
# slice's size, not by a trim step of its own) where the runtime allows it, and exact (the
# runtime trims its inputs; a super-batch's keys) where it does not
@cuda_impl(Op.LISTED_COLLECTIVE_SAMPLE, sync_free=True, syncs=True, bounded_out=False)
@cuda_impl(Op.LISTED_COLLECTIVE_SAMPLE, syncs=True, batch_keys=True)
def listed_collective_sample(
    A: CSC, cols: torch.Tensor, row_weights: torch.Tensor, scale, k: int, replace: bool, key
) -> CSC:
    """``A[:, cols].collective_sample(k, node_probs=p, replace)`` with ``p = W[:, cols]
    .sum(axis=1) / scale`` (``W``: ``A``'s edges with values ``row_weights``), ``p``
    evaluated at the slice's rows only (see the module docstring): the CUDA backend's dense
    sample, bit for bit, and no tensor over ``A``'s rows.

    Parameters
    ----------
    A : CSC
        The graph (a super-batch's: the whole graph of ``n`` nodes).
    cols : LongTensor, shape (C,), or BoundedIds
        The frontier (a super-batch's: encoded ``b * n + v``); bounded: the first ``count``
        ids of its buffer (ids an op of the program made).
    row_weights : Tensor, shape (A.nnz,)
        ``W``'s value at each edge of ``A`` (a super-batch's may be one copy a mini-batch,
        shape (copies * A.nnz,)).
    scale : Tensor, 0-dim (a super-batch's: shape (copies,), each mini-batch's), or a number
    k, replace
        As ``collective_sample``.
    key : int, BatchKeys or DeviceKey
        The op key; a super-batch's keys (a device key: its host keys are taken).

    Returns
    -------
    CSC
        Row space: the chosen rows (ascending); columns ``cols``; every slice edge of a
        chosen row, in the slice's order.

    Examples
    --------
    On a GPU (``A2 = A ** 2``, ``c`` its slice's total): the dense program's sample

    >>> s = listed_collective_sample(A.csc, seeds, A2.csc.values, c, 40, False, 7)  # doctest: +SKIP
    """
    if isinstance(key, DeviceKey):  # (the sync-free registration's)
        if DEVICE:
            out = _on_device(A, cols, row_weights, scale, k, replace, key)
            if out is not None:
                return out
        key = key.host()  # (its host keys)
    if not A.indptr.is_cuda or (row_weights.dtype not in FLOATS):
        # the dense path's sums of these dtypes are the torch code's (compute.reduce)
        return fused_select.listed_collective_sample(
            A, exact(cols), row_weights, scale, k, replace, key
        )
    return _sample(A, cols, row_weights, scale, k, replace, key)


def _sample(A: CSC, cols, row_weights, scale, k: int, replace: bool, key) -> CSC:
    """:func:`listed_collective_sample` past its choice of code: one mini-batch (``key`` an
    int) or a super-batch (:class:`BatchKeys`), the frontier exact or bounded."""
    refuse_capture()  # (it reads sizes back: never inside a CUDA graph capture)
    buf, count = _frontier(cols)
    if not isinstance(key, BatchKeys):
        if count is not None and A.col_ids is None:  # (and the buffer's padding past them)
            buf = buf.clamp(0, max(A.num_nodes - 1, 0))
        return _listed(A, buf, count, row_weights, scale, k, replace, (key,), 0)
    n, copies = key.num_nodes, key.copies
    if A.row_ids is not None:
        raise RuntimeError("super-batch: a fused collective sample must slice the whole graph")
    _draws_fit(k, replace, copies, buf.device)
    # the encoded frontier checked (as torch's ``batched.frontier``, without its read-back of
    # the batches' pointer: nothing here needs them grouped); a bounded one's are the
    # program's own ids, clamped with the buffer's padding
    if count is None:
        buf = V.ids(buf, "cols", n * copies, buf.device)
    else:
        buf = buf.clamp(0, max(n * copies - 1, 0))
    return _listed(A, buf, count, row_weights, scale, k, replace, key.keys, n)


def _on_device(A: CSC, cols, row_weights, scale, k: int, replace: bool, key: DeviceKey):
    """The listed sample on the device, its draws and kept edges the dense path's
    (:func:`gsample.backend.cuda.layerwise.kept_pending`, read back once by
    :func:`~gsample.backend.cuda.layerwise.collective_finish`); None where it does not apply
    (the caller runs :func:`_sample`).

    Each batch's distinct slice rows get places in a list of ``room`` rows (the first thread
    to take a row's entry of an int32 map over the row space, ``R = copies * n`` entries
    set to -1 here); their exact sums add at those places (``kernels/rowsum.cu``'s
    arithmetic); the positive ones' keys (the dense kernels' hash, ``exponential(word) /
    p``) are compacted by batch for the radix select. Nothing is over the row space but the
    map (4 bytes a row) and the drawn rows' bits and places, which the dense path has too.
    """
    N, n = (key.copies, key.num_nodes) if key.copies > 1 else (1, 0)
    rows_per, dev = A.num_nodes, A.indptr.device
    R, take = rows_per * N, min(k, rows_per)
    dtype = row_weights.dtype
    if (
        replace
        or k == 0
        or not _graph(A)
        or not A.indptr.is_cuda
        or dtype not in FLOATS
        or take >= rows_per
        or rows_per > _MAX_CANDIDATES
        or N * take > _MAX_CHOSEN
    ):
        return None
    divisor = scale_args(scale, dtype, dev, R, (N, n) if N > 1 else None)
    if divisor is None:  # (a division the finish cannot make as torch does)
        return None
    if row_weights.numel() == A.nnz:
        wcopy = 0
    elif N > 1 and row_weights.numel() == N * A.nnz:
        wcopy = A.nnz  # one copy of the weights a mini-batch
    else:
        return None
    buf, ncols = _frontier(cols)
    C = buf.numel()
    indptr, rows = _index_arrays(A)
    kargs = {"dtypes": (FLOATS[dtype],), "params": tuple(_params(indptr))}
    ptr = _frontier_ptr(indptr, buf, ncols, n, R)  # (the ids checked there)
    at_key = (indptr.data_ptr(), N)
    room = min(rows_per, _ROOM.get(at_key, LIST_ROOM))
    slot = torch.empty(R, dtype=torch.int32, device=dev)
    memset(slot, 0xFF)  # -1: no place
    M = N * room
    acc = torch.empty(3 * M, dtype=torch.int64, device=dev)  # exponents and flags, lo, hi
    words = acc[:M].view(torch.int32)
    emax, flags, lo, hi = words[:M], words[M:], acc[M : 2 * M], acc[2 * M :]
    listed = torch.empty(M, dtype=torch.int64, device=dev)
    small = torch.zeros(N + 2, dtype=torch.int64, device=dev)
    count, bad = small[:N], small[N:]
    values = row_weights.contiguous()
    if C:
        tiles = {"block": _THREADS, "grid": _GRID, **kargs}
        head = (indptr, rows)
        frontier = (buf, C, ptr, n)
        launch(
            "rowsum",
            "gs_listed_claim",
            _GRID * _THREADS,
            *head,
            *frontier,
            slot,
            count,
            room,
            listed,
            emax,
            flags,
            lo,
            hi,
            _rounds(indptr, rows),
            **tiles,
        )
        weights = (values, wcopy, *frontier, slot, room)
        launch(
            "rowsum", "gs_listed_exponents", _GRID * _THREADS, *head, *weights, emax, flags, **tiles
        )
        launch("rowsum", "gs_listed_add", _GRID * _THREADS, *head, *weights, emax, lo, hi, **tiles)
    firsts = torch.arange(0, M, room, device=dev)
    at = firsts.clone()
    found = torch.empty(2 * M, dtype=torch.int64, device=dev)
    ckeys, crows = found[:M], found[M:]
    divisor_t, per, scount = divisor
    launch(
        "rowsum",
        "gs_listed_keys",
        _GRID * _THREADS,
        count,
        room,
        N,
        listed,
        emax,
        flags,
        lo,
        hi,
        divisor_t,
        per,
        scount,
        key.tensor,
        n,
        at,
        ckeys,
        crows,
        bad,
        block=_THREADS,
        grid=_GRID,
        **kargs,
    )
    picked, overflow = topk.smallest_compact(ckeys, crows, firsts, at, N, take, R)
    full = (count > room).any().reshape(1)
    overflow = overflow | full
    # room for the kept edges as the dense sample takes it (a super-batch's list)
    kept_room = _list_room(indptr, key.prefix, k, N)
    scratch = torch.empty((1 if kept_room else 2 * C + 1) + 2, dtype=torch.int64, device=dev)
    memset(scratch, 0)

    def redo():
        # a batch listed more than its room: the next sample of this graph gets more, this
        # one is drawn by the host-sized path (the same sample)
        most = int(count.max())
        if most > room:
            _ROOM[at_key] = min(rows_per, 2 * most)
        return _sample(A, cols, row_weights, scale, k, replace, key.host())

    args = (A, cols, k, replace, key, None, False, None)
    pending = kept_pending(
        A,
        args,
        buf,
        ncols,
        ptr,
        n,
        N,
        R,
        picked.view(N, take),
        overflow,
        True,
        bad,
        scratch,
        kept_room,
        redo,
    )
    return collective_finish(pending)


def _slice(A: CSC, nodes, count) -> tuple:
    """``(index, indptr, C)``: the slice ``A[:, nodes[:C]]``'s edges (positions in ``A``, in
    CSC order) and column pointer; ``C`` is ``count``'s value (None: every id of ``nodes``),
    read back with the slice's edge count (one read-back)."""
    indptr_a, seg = A.column_segments(nodes)
    if count is None:
        index, indptr = gather_segments(indptr_a, seg)
        return index, indptr, nodes.numel()
    dev = nodes.device
    valid = torch.arange(seg.numel(), device=dev) < count  # (the buffer's padding: empty)
    seg = torch.where(valid, seg, 0)
    starts = indptr_a[seg]
    deg = torch.where(valid, indptr_a[seg + 1] - starts, 0)
    ptr = segment_ptr(deg)
    E, C = V.read_back([ptr[-1:], count.reshape(-1)[:1]])
    # (as gather_segments: each edge's position from its column's start)
    owner = torch.repeat_interleave(torch.arange(seg.numel(), device=dev), deg, output_size=E)
    index = torch.arange(E, device=dev) + (starts - ptr[:-1])[owner]
    return index, ptr[: C + 1], C


def _listed(A: CSC, buf, count, row_weights, scale, k, replace, keys: tuple, n: int):
    """The listed sample of one mini-batch (``n`` 0: ``buf`` is the frontier) or of
    ``len(keys)`` (``n`` > 0: ``buf`` the encoded frontier of mini-batches of ``n`` nodes);
    a bounded frontier's first ``count`` ids (None: all)."""
    copies, dev = len(keys), buf.device
    batched = n > 0
    nodes = buf
    if batched:  # each column's mini-batch and node
        batch = torch.div(buf, n, rounding_mode="floor")
        nodes = buf - batch * n
    index, indptr_s, C = _slice(A, nodes, count)  # (a read-back: its size)
    cols = buf[:C]
    E = index.numel()
    rows_s = A.rows[index].to(torch.int64)
    owner = None
    if batched:  # each edge's mini-batch: its row in the block-diagonal space
        batch = batch[:C]
        owner = torch.repeat_interleave(batch, indptr_s[1:] - indptr_s[:-1], output_size=E)
        rows_s = rows_s + owner * n
    # the slice's distinct rows (ascending; E entries, the first L of them) and each edge's
    # place among them; L stays on the device until the read-back below
    rows, local, distinct = _distinct(rows_s)
    at = index
    if owner is not None and row_weights.numel() == copies * A.nnz != A.nnz:
        at = index + owner * A.nnz  # one copy of the weights a mini-batch
    probs = _probs(local, row_weights[at], rows, E, scale, n, copies if batched else None)
    probs = torch.where(torch.arange(E, device=dev) < distinct, probs, 0)  # (rows past L: 0)
    # (recorded, or raised at once outside deferred checks: read with the counts below)
    V.finite_nonnegative(probs, "node_probs")
    positive = probs > 0
    # the distinct rows, and the candidates (and the frontier's edges) of each mini-batch: one
    # read-back, with every pending check flag (a bad probability raises before a missing
    # candidate)
    if not batched:
        counts = torch.cat([distinct, positive.sum().reshape(1)])
        edges = [E]
    else:
        batch_of = torch.div(rows, n, rounding_mode="floor").clamp_(max=copies - 1)
        counts = torch.zeros(copies, dtype=torch.int64, device=dev)
        counts.index_add_(0, batch_of, positive.to(torch.int64))
        # each mini-batch's frontier edges, as the dense kernels' check counts them
        edges_b = torch.zeros(copies, dtype=torch.int64, device=dev)
        edges_b.index_add_(0, batch, indptr_s[1:] - indptr_s[:-1])
        counts = torch.cat([distinct, counts, edges_b])
    L, *host = V.read_back(list(counts.split(1)))
    rows, probs, positive = rows[:L], probs[:L], positive[:L]
    cand_n = host[:copies]
    if batched:
        edges = host[copies:]
    for c, e in zip(cand_n, edges):
        if e and not c:  # as each mini-batch checks its own, before any draw
            raise ValueError(NO_POSITIVE_ROW)
    total = sum(cand_n)
    # the positive rows and their probabilities, in order (a scatter: no read-back)
    slot = torch.where(positive, torch.cumsum(positive, 0) - 1, total)
    cand = torch.empty(total + 1, dtype=torch.int64, device=dev).scatter_(0, slot, rows)
    cand_p = torch.empty(total + 1, dtype=probs.dtype, device=dev).scatter_(0, slot, probs)
    parts, first = [], 0
    for b, (key, m) in enumerate(zip(keys, cand_n)):
        cb, pb = cand[first : first + m], cand_p[first : first + m]
        first += m
        # the keys of batch b's rows are their node ids in the mini-batch
        gids = (lambda r, at=b * n: r - at) if batched else A.global_rows
        parts.append(
            choose_among(cb, edges[b], gids, k, replace, key, draws=CudaDraws, cand_probs=pb)
        )
    chosen = parts[0] if copies == 1 else torch.cat(parts)  # ascending
    # each slice row's place among the chosen (-1: not chosen), then each edge's
    place = torch.full((L,), -1, dtype=torch.int64, device=dev)
    place[torch.searchsorted(rows, chosen)] = torch.arange(chosen.numel(), device=dev)
    pos = place[local]
    kept_mask = pos >= 0
    before = torch.zeros(E + 1, dtype=torch.int64, device=dev)
    torch.cumsum(kept_mask, 0, out=before[1:])
    indptr = before[indptr_s]  # the kept edges before each column
    kept = kept_mask.nonzero().squeeze(1)  # (a read-back: their number)
    edges_kept = index[kept]
    if COPY_OUT.get():  # (a replayed CUDA graph's memory: not returned as it is)
        cols = cols.clone()
    return CSC(
        num_nodes=n * copies if batched else A.num_nodes,
        indptr=indptr,
        rows=pos[kept],
        row_ids=chosen if batched else A.global_rows(chosen),
        col_ids=cols.to(torch.int64),
        values=None if A.values is None else A.values[edges_kept],
        eids=edges_kept if A.eids is None else A.eids[edges_kept],
    )


def _distinct(rows_s: torch.Tensor) -> tuple:
    """The distinct values of ``rows_s`` (shape (E,)) without a read-back of their number:
    ``(rows, local, count)``, ``rows`` (E,) the ``L`` distinct values ascending, then
    :data:`_PAST` (after every row), ``local`` (E,) each entry's place among them, ``count``
    ``L`` as a 1-element tensor (a sort, a scan and two scatters: what ``torch.unique``
    computes, less its read-back of ``L``)."""
    E, dev = rows_s.numel(), rows_s.device
    rows = torch.full((E,), _PAST, dtype=torch.int64, device=dev)
    if E == 0:
        return rows, rows, torch.zeros(1, dtype=torch.int64, device=dev)
    ordered, order = torch.sort(rows_s)
    first = torch.ones(E, dtype=torch.bool, device=dev)
    torch.ne(ordered[1:], ordered[:-1], out=first[1:])
    place = torch.cumsum(first, 0) - 1  # each sorted entry's row's place
    local = torch.empty(E, dtype=torch.int64, device=dev).scatter_(0, order, place)
    rows.scatter_(0, place, ordered)  # (a run's entries write one value)
    return rows, local, place[-1:] + 1


#: the value of the entries of ``_distinct``'s rows past the distinct ones (above every row)
_PAST = 2**63 - 1


def _probs(local, values, rows, R: int, scale, n: int, copies: int | None) -> torch.Tensor:
    """The rows' probabilities: the exact sums of ``values`` by ``local`` row (``R`` rows:
    ``rows``, ascending, :data:`_PAST` past the distinct ones) divided as the dense path
    divides them (the finish's division where ``SLICE_REDUCE``'s finish divides, else
    torch's, ``fused_reduce.divided``); a super-batch's (``copies`` mini-batches, ``rows``
    encoded, ``n`` nodes each) each row by its mini-batch's scale."""
    dtype, dev = values.dtype, values.device
    if R == 0:
        return torch.zeros(0, dtype=dtype, device=dev)
    per_batch = copies is not None and isinstance(scale, torch.Tensor) and scale.dim() == 1
    if not per_batch:
        divisor = scale_args(scale, dtype, dev, R)
        if divisor is not None:
            return edge_row_sums(local, values, R, dtype, divisor)
        return fused_reduce.divided(edge_row_sums(local, values, R, dtype), scale)
    if scale.dtype == dtype and scale.device == dev:  # the finish divides each row by its own
        batch_of = torch.div(rows, n, rounding_mode="floor").clamp_(max=copies - 1)
        return edge_row_sums(local, values, R, dtype, (scale[batch_of].contiguous(), 1, R))
    # as fused_reduce.divided: each mini-batch's rows by its 0-dim scale (its promotion)
    sums = edge_row_sums(local, values, R, dtype)
    bounds = torch.searchsorted(rows, torch.arange(copies + 1, device=dev) * n).tolist()
    parts = [sums[bounds[b] : bounds[b + 1]] / scale[b] for b in range(copies)]
    return torch.cat([*parts, sums[bounds[-1] :]])  # (and the rows past the distinct ones)


__all__ = ["LISTED", "MIN_NODES", "listed_collective_sample", "min_nodes"]
