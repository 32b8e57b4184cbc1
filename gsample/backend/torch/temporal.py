"""``A.temporal_sample(cols, k, time, edge_time, seed, probs, ...)``: disjoint and temporal
node-wise sampling as one op, without materialising the column slice or a mask of it.

What it samples
---------------
Column ``c`` of the result is node ``cols[c]`` (repeats are independent columns). Its
*candidates* are the in-edges of ``cols[c]`` in ``A`` that are allowed at the column's time
``time[c]``: ``edge_time[e] <= time[c]`` and, with a ``window``, ``edge_time[e] > time[c] -
window`` (the half-open span ``(t - window, t]``); without times every edge is a candidate.
With ``strategy="last"`` the candidates narrow to the ``k`` most recent ones (the largest
``(edge_time, edge id)`` pairs: ties go to the larger edge id). Then ``k`` candidates are
drawn as :meth:`gs.Matrix.individual_sample` draws (``k = -1``: all of them): uniformly
(Floyd's algorithm without replacement, ``O(k)`` draws with), or by ``probs`` (exponential
keys without replacement; alias tables with replacement, built per call over the candidates:
exact and column-local, ``gsample.backend.torch.alias``). A column whose candidates all have
weight 0 is empty. Selected edges keep their column's CSC order.

Keys (docs/architecture.md §3)
------------------------------
Without ``seed``, column ``c`` draws with the op key and its position ``c`` in the frontier,
as ``individual_sample`` does. With ``seed`` (one non-negative integer per column, the index
of the seed whose tree the column belongs to) column ``c`` draws with the key
``combine(op key, seed[c])`` and its position among the columns of that seed (in frontier
order): a seed's draws depend on the op key, its own index and its own columns only, never
on the other seeds' frontiers. So one seed's tree, sampled with the others, is the tree the
same program samples for that seed alone, given the same seed index (the determinism target
of disjoint sampling).

Candidates are enumerated in CSC order without times (so, without ``seed`` and times, the op
draws exactly what ``A[:, cols].individual_sample(k)`` draws, but for weighted draws with
replacement, which are alias draws here), and by ``(edge_time, edge id)`` with times: the
candidates of a column are then a contiguous range of its edges in time order, found by a
binary search. That order (a permutation of ``A``'s edges sorting each column by time) is
built once per graph and ``edge_time`` tensor and kept with the graph (a weak reference:
:func:`time_order`), so a call costs ``O(C log d)`` for the search and ``O(k)`` per column for
uniform draws, whatever the columns' degrees; weighted draws read the candidates' weights.

Super-batches: with a :class:`gsample.base.random.BatchKeys` key, ``cols`` is a frontier of
the block-diagonal graph (ids ``b * n + v``), each batch's columns draw with its own key
(and, with ``seed``, ``combine(batch key, seed)``), ``time`` / ``seed`` come joined, and
``edge_time`` / ``probs`` are the graph's (shared by the batches).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch

from gsample.backend.registry import torch_impl
from gsample.backend.torch import nodewise_native
from gsample.backend.torch.batched import encode_columns
from gsample.backend.torch.select import Draws, select_in_columns
from gsample.base import validate as V
from gsample.base.random import BatchKeys, ColumnKeys, batch_ptr, combine_tensor, signed
from gsample.base.readback import refuse_capture
from gsample.formats.csc import CSC, segment_ptr
from gsample.ir import Op


@dataclass(frozen=True)
class TimeOrder:
    """Each column's edges by ``(time, edge id)``, for one graph and one ``edge_time``.

    Attributes
    ----------
    order : LongTensor, shape (E,)
        Positions in ``A``'s CSC: column ``c``'s edges by time are
        ``order[indptr[c]:indptr[c + 1]]``.
    time : Tensor, shape (E,)
        ``edge_time[order]``, int64 (integer times) or float64.
    steps : int
        Rounds of a binary search within the largest column (``max degree``'s bit length).
    """

    order: torch.Tensor
    time: torch.Tensor
    steps: int


#: ``A``'s time orders, one per ``edge_time`` tensor alive (a weak key: they go with the
#: graph): a CUDA graph captured with one reads it in place at every replay, so a second
#: sampler's edge times on the same graph must not free it
_ORDERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def wide(t: torch.Tensor) -> torch.Tensor:
    """Times compared exactly: integers as int64, floating point as float64."""
    return t.to(torch.float64 if t.is_floating_point() else torch.int64)


def time_order(A: CSC, edge_time: torch.Tensor) -> TimeOrder:
    """The :class:`TimeOrder` of ``A`` for ``edge_time`` (shape (E,), ``A``'s CSC order): built
    on first use (a sort of the ``E`` edges) and kept while both ``A`` and the tensor live
    and the tensor is not changed in place.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A = gs.Matrix.from_edge_index(torch.tensor([[0, 1, 2], [3, 3, 3]])).csc
    >>> time_order(A, torch.tensor([5, 1, 5])).order[A.indptr[3]:].tolist()
    [1, 0, 2]
    """
    stamp = (edge_time._version, A.rows._version)
    orders = _ORDERS.setdefault(A, {})
    hit = orders.get(id(edge_time))
    if hit is not None and hit[0]() is edge_time and hit[1] == stamp:
        return hit[2]
    refuse_capture()  # the sort reads the largest degree back
    t = wide(edge_time)
    # (column, time, edge id): sorts from the least significant key, each stable
    order = torch.argsort(A.eid_tensor())
    order = order[torch.argsort(t[order], stable=True)]
    order = order[torch.argsort(A.edge_cols()[order], stable=True)]
    deg = A.degrees()
    steps = int(deg.max()).bit_length() if deg.numel() else 0
    out = TimeOrder(order, t[order], steps)
    for dead in [i for i, (ref, _, _) in orders.items() if ref() is None]:
        del orders[dead]  # (an id a dead tensor had may be a new tensor's)
    orders[id(edge_time)] = (weakref.ref(edge_time), stamp, out)
    return out


def _after(sorted_time, start, end, t, steps: int) -> torch.Tensor:
    """Per column, the first position in ``[start, end)`` whose time is above ``t`` (a
    vectorised binary search of ``steps`` rounds over sorted segments; on the CPU one native
    pass, ``nodewise_native.after``, with the same answers)."""
    if sorted_time.device.type == "cpu":
        native = nodewise_native.after(sorted_time, start, end, t.expand_as(start).contiguous())
        if native is not None:
            return native
    lo, hi = start.clone(), end.clone()
    last = max(sorted_time.numel() - 1, 0)
    for _ in range(steps):
        active = lo < hi
        mid = (lo + hi) // 2
        right = active & (sorted_time[mid.clamp(max=last)] <= t)
        lo = torch.where(right, mid + 1, lo)
        hi = torch.where(active & ~right, mid, hi)
    return lo


def _ranks(group: torch.Tensor) -> torch.Tensor:
    """Each element's position among the elements of its group, in order (shape (n,))."""
    n = group.numel()
    order = torch.argsort(group, stable=True)
    g = group[order]
    starts = torch.ones_like(g, dtype=torch.bool)
    starts[1:] = g[1:] != g[:-1]
    at = torch.arange(n, device=group.device)
    first = torch.cummax(torch.where(starts, at, 0), 0).values
    out = torch.empty_like(at)
    out[order] = at - first
    return out


def seed_keys(key, seed: torch.Tensor, batch: torch.Tensor | None = None) -> ColumnKeys:
    """The keys of columns owned by seeds ``seed`` (shape (C,)): column ``c`` draws with
    ``combine(key, seed[c])`` and its rank among the columns of its seed (``key``: the op key,
    or a super-batch's :class:`BatchKeys` with ``batch``, each column's batch).

    Examples
    --------
    >>> import torch
    >>> k = seed_keys(7, torch.tensor([0, 1, 0]))
    >>> k.position.tolist()
    [0, 0, 1]
    """
    if isinstance(key, BatchKeys):
        base = combine_tensor(key.bases(seed.device)[batch], seed)
        # a seed's columns within its batch: batch-major groups of (batch, seed)
        span = int(seed.max()) + 1 if seed.numel() else 1
        group, keys = batch * span + seed, key.keys
    else:
        base = combine_tensor(signed(key), seed)
        group, keys = seed, (key,)
    return ColumnKeys(base, _ranks(group), [0, seed.numel()], keys)


def _candidates(lo: torch.Tensor, cnt: torch.Tensor):
    """``(positions, column)``: positions ``lo[c] .. lo[c] + cnt[c] - 1`` of every column
    ``c``, concatenated, and the column of each."""
    ptr = segment_ptr(cnt)
    total = int(ptr[-1])
    col = torch.repeat_interleave(
        torch.arange(cnt.numel(), device=cnt.device), cnt, output_size=total
    )
    return torch.arange(total, device=cnt.device) - ptr[col] + lo[col], col


@torch_impl(Op.TEMPORAL_SAMPLE)
def temporal_sample(
    A: CSC,
    cols: torch.Tensor,
    k: int,
    replace: bool,
    key,
    probs: torch.Tensor | None = None,
    time: torch.Tensor | None = None,
    edge_time: torch.Tensor | None = None,
    seed: torch.Tensor | None = None,
    strategy: str = "uniform",
    window: float | None = None,
    draws=Draws,
) -> CSC:
    """The sample (see the module docstring).

    Parameters
    ----------
    A : CSC
        The matrix sliced (the graph).
    cols : LongTensor, shape (C,)
        The frontier (global ids; a super-batch's encoded ones with :class:`BatchKeys`).
    k : int
        Candidates per column, ``-1`` for all.
    replace : bool
        Draw with replacement.
    key : int or BatchKeys
        The op key.
    probs : Tensor, shape (E,), optional
        Weights of ``A``'s edges (finite, non-negative: the candidates' are checked here).
    time : Tensor, shape (C,), optional
        Each column's time.
    edge_time : Tensor, shape (E,), optional
        Each edge's time (``A``'s CSC order); with ``time``.
    seed : LongTensor, shape (C,), optional
        Each column's seed index (keys its draws).
    strategy : {"uniform", "last"}
    window : float, optional
        Candidates are the edges of time in ``(time - window, time]``.

    Returns
    -------
    CSC
        ``A``'s row space, column space ``cols``; the selected edges of each column in CSC
        order, with their values and edge ids.
    """
    batches = isinstance(key, BatchKeys)
    nodes, batch = cols, None
    if batches:  # decoded: a batch's frontier may be empty (a tree that ended)
        n = key.num_nodes
        cols = V.ids(cols, "cols", n * key.copies, cols.device)
        batch = cols // n
        nodes, ptr = cols - batch * n, batch_ptr(batch, key.copies)
    indptr_a, seg = A.column_segments(nodes)
    start, end = indptr_a[seg], indptr_a[seg + 1]
    order = None
    if time is None:
        lo, hi = start, end
    else:
        to = time_order(A, edge_time)
        order, t = to.order, wide(time)
        hi = _after(to.time, start, end, t, to.steps)
        lo = (
            start if window is None else _after(to.time, start, end, t - _span(window, t), to.steps)
        )
        if strategy == "last" and k >= 0:
            lo = torch.maximum(lo, hi - k)
    cnt = hi - lo
    if seed is not None:
        ckey = seed_keys(key, seed, batch)
    elif batches:
        ckey = key.columns(cols, batch, ptr)
    else:
        ckey = key
    p = None
    if probs is not None:  # weighted draws read the candidates' weights, and only those
        index, owner = _candidates(lo, cnt)
        p = probs[index if order is None else order[index]]
        V.finite_nonnegative(p, "probs")
        if k < 0 or replace:  # all positive candidates; alias tables need one per column
            live = torch.zeros_like(cnt).index_add_(0, owner, (p > 0).to(torch.int64)) > 0
            keep = live[owner] if replace else p > 0
            index, owner, p = index[keep], owner[keep], p[keep]
            cnt = torch.bincount(owner, minlength=cnt.numel())
    if k < 0:
        if p is None:
            index, owner = _candidates(lo, cnt)
        indptr, pos, col = segment_ptr(cnt), index, owner
    else:
        native = _native(A, lo, hi, ckey, k, replace) if p is None and draws is Draws else None
        if native is not None:
            indptr, pos = native
            col = None
        else:
            method = "alias" if p is not None and replace else "cdf"
            indptr, col, off = select_in_columns(cnt, k, replace, ckey, p, draws, method)
            pos = lo[col] + off
    edges = pos if order is None else order[pos]
    if order is not None and edges.numel():  # back to CSC order within each column
        if col is None:
            counts = indptr[1:] - indptr[:-1]
            col = torch.repeat_interleave(torch.arange(counts.numel()), counts)
        edges = edges[torch.argsort(col * max(A.nnz, 1) + edges)]
    out = CSC(
        num_nodes=A.num_nodes,
        indptr=indptr,
        rows=A.rows[edges],
        row_ids=A.row_ids,
        col_ids=nodes,
        values=None if A.values is None else A.values[edges],
        eids=edges if A.eids is None else A.eids[edges],
    )
    return encode_columns(out, cols, n, key.copies) if batches else out


def _native(A: CSC, lo, hi, key, k, replace):
    """``(indptr, positions)`` of uniform draws among ``[lo, hi)`` per column by the native
    CPU code (``nodewise_native.ranged_sample``: the draws of ``select_in_columns``, bit for
    bit), or None where it does not run."""
    if lo.device.type != "cpu" or not nodewise_native.enabled():
        return None
    C = lo.numel()
    if isinstance(key, ColumnKeys):
        if key.base.shape != (C,) or key.position.shape != (C,):
            return None
        hs = combine_tensor(key.base, key.position)
    elif isinstance(key, int) and not isinstance(key, bool):
        hs = combine_tensor(key, torch.arange(C))
    else:
        return None
    out = nodewise_native.ranged_sample(lo, hi, hs, k, replace, A.rows, A.eids)
    return None if out is None else out[:2]


def _span(window: float, t: torch.Tensor):
    """``window`` in the times' dtype (an integer span for integer times)."""
    return window if t.is_floating_point() else int(window)


__all__ = ["TimeOrder", "seed_keys", "temporal_sample", "time_order", "wide"]
