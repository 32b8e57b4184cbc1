"""Temporal random walks (``A.temporal_walk``, ``A.temporal_walk_edges``): the reference.

What a walk is
--------------
Walker ``w`` (its position in ``seeds``, the column position of docs/architecture.md §3)
starts at ``out[w, 0] = seeds[w]``; step ``s`` (``0 <= s < length``) moves from ``v = out[w,
s]`` along an in-edge ``u -> v`` of ``A`` (``u``, a row of column ``v``, as
``A.random_walk`` moves) to ``out[w, s + 1] = u``. The edge is drawn uniformly among the
*allowed* in-edges of ``v``: with ``b`` the bound (the previous step's edge time; for the
first step ``time[w]``, or no bound without ``time``), those of time

* ``>= b`` (``direction="later"``), ``> b`` with ``strict``;
* ``<= b`` (``direction="earlier"``), ``< b`` with ``strict``.

A walker with no allowed edge stops: the rest of its row is ``-1`` (and of its edge row).
Times are compared exactly: integers as int64, floating point as float64 (no NaN: checked).

Draws
-----
Each column's edges sorted by ``(edge_time, edge id)`` (the per-graph time order of
:func:`gsample.backend.torch.temporal.time_order`, built once per graph and ``edge_time``
tensor) make the allowed edges of ``v`` one contiguous range ``[lo, hi)`` of its
segment, found by a binary search: a lower bound (the first time ``>= b``) or an upper
bound (the first ``> b``). Step ``s`` then takes position ``lo + uniform_int(word, hi - lo)``
with ``word = combine(combine(key, w), s * 2**32 + 2)`` (``gsample.backend.torch.walk``'s
numbering of a step's draws: its first move attempt's slot), so a draw depends on (seed,
op ordinal, mini-batch, walker, step) only. The edge at that position is the step's: its
row the next node, its time the next bound, its id (``A.eids``, else its CSC position) the
step's entry of ``temporal_walk_edges``.

Super-batches: with a :class:`gsample.base.random.BatchKeys` key, ``seeds`` are ids ``b * n
+ v`` grouped by batch, walker ``w`` of batch ``b`` draws with batch ``b``'s key as its
position within ``b``, and the walks come out encoded (``-1`` stays ``-1``); ``time`` comes
joined (one per walker), ``edge_time`` is the graph's. The CUDA backend's kernel
(``kernels/temporal_walk.cu``) walks the same walks, bit for bit.
"""

from __future__ import annotations

import torch

from gsample.backend.registry import torch_impl
from gsample.backend.torch.temporal import time_order, wide
from gsample.backend.torch.walk import FIRST, STRIDE, step_word
from gsample.base import validate as V
from gsample.base.random import BatchKeys, ColumnKeys, combine_tensor, uniform_int
from gsample.formats.csc import CSC
from gsample.ir import Op
from gsample.ir.checks import check_temporal_walk


def first_above(stime, start, end, bound, steps: int, strict: bool) -> torch.Tensor:
    """Per walker, the first position in ``[start, end)`` whose time is ``> bound``
    (``strict``; an upper bound) or ``>= bound`` (a lower bound), ``end`` when none is: a
    vectorised binary search of ``steps`` rounds over sorted segments (``steps``: the
    largest segment's bit length)."""
    lo, hi = start.clone(), end.clone()
    last = max(stime.numel() - 1, 0)
    for _ in range(steps):
        active = lo < hi
        mid = (lo + hi) // 2
        t = stime[mid.clamp(max=last)]
        right = active & ((t <= bound) if strict else (t < bound))
        lo = torch.where(right, mid + 1, lo)
        hi = torch.where(active & ~right, mid, hi)
    return lo


def walk(
    A: CSC,
    seeds: torch.Tensor,
    length: int,
    key,
    edge_time: torch.Tensor,
    time: torch.Tensor | None = None,
    direction: str = "later",
    strict: bool = False,
    edges: bool = False,
) -> tuple:
    """The walks and, with ``edges``, their steps' edge ids (the module docstring).

    Parameters
    ----------
    A : CSC
        The whole graph.
    seeds : LongTensor, shape (W,)
        Start nodes (checked; a super-batch's encoded ids with :class:`BatchKeys`, checked
        here).
    length : int
        Steps per walk.
    key : int or BatchKeys
        The op's key.
    edge_time : Tensor, shape (E,)
        Each edge's time, in ``A``'s CSC order.
    time : Tensor, shape (W,), optional
        Each walker's start time (the first step's bound).
    direction : {"later", "earlier"}
    strict : bool
    edges : bool
        Also return the edge ids.

    Returns
    -------
    tuple
        ``(walks, edge_ids)``: LongTensor (W, length + 1) (the seeds, then one node per
        step, ``-1`` after a stop; encoded for a super-batch) and LongTensor (W, length)
        (``-1`` after a stop), or None without ``edges``.
    """
    if isinstance(key, ColumnKeys):
        raise TypeError("temporal_walk: takes an op key or a super-batch's BatchKeys")
    N, dev = A.num_nodes, seeds.device
    shift = None
    if isinstance(key, BatchKeys):
        # a super-batch skips the boundary's check: its inputs are checked here, the
        # encoded seeds against the super-batch's ids
        checked = check_temporal_walk(A, seeds, edge_time, time, length, trusted=("seeds",))
        edge_time, time = checked["edge_time"], checked.get("time")
        seeds = V.ids(seeds, "seeds", N * key.copies, dev)
        columns = key.columns(seeds)
        shift = seeds - seeds % N
        seeds = seeds - shift
        h = combine_tensor(columns.base, columns.position)
    else:
        h = combine_tensor(key, torch.arange(seeds.numel(), device=dev))
    W, L = seeds.numel(), length
    out = torch.full((W, L + 1), -1, dtype=torch.int64, device=dev)
    out[:, 0] = seeds
    eout = torch.full((W, L), -1, dtype=torch.int64, device=dev) if edges else None
    if W and L and A.nnz:
        _steps(A, seeds, L, h, edge_time, time, direction == "later", strict, out, eout)
    if shift is not None:
        out = torch.where(out >= 0, out + shift[:, None], out)
    return out, eout


def _steps(A: CSC, seeds, L: int, h, edge_time, time, later: bool, strict: bool, out, eout):
    """Every step of every walker into ``out`` (and ``eout``), the walkers still going
    compacted after each step."""
    to = time_order(A, edge_time)
    order, stime, steps = to.order, to.time, to.steps
    indptr, rows, eids = A.indptr, A.rows, A.eids
    dev = seeds.device
    flat = out.view(-1)
    eflat = None if eout is None else eout.view(-1)
    walker = torch.arange(seeds.numel(), device=dev)
    cur = seeds.to(torch.int64)
    bound = None if time is None else wide(time)
    # "later" cuts below the bound (lower or upper bound by strictness), "earlier" above it
    # (an upper bound, or a lower one when strict)
    above = strict if later else not strict
    for s in range(L):
        start, end = indptr[cur], indptr[cur + 1]
        if bound is None:
            lo, hi = start, end
        else:
            cut = first_above(stime, start, end, bound, steps, above)
            lo, hi = (cut, end) if later else (start, cut)
        count = hi - lo
        going = count > 0
        if not bool(going.all()):
            idx = going.nonzero().squeeze(1)
            if idx.numel() == 0:
                break
            walker, h, lo, count = walker[idx], h[idx], lo[idx], count[idx]
        pos = lo + uniform_int(step_word(h, s * STRIDE + FIRST), count)
        e = order[pos]
        cur = rows[e]
        bound = stime[pos]
        flat[walker * (L + 1) + (s + 1)] = cur
        if eflat is not None:
            eflat[walker * L + s] = e if eids is None else eids[e]


@torch_impl(Op.TEMPORAL_WALK)
def temporal_walk(
    A: CSC,
    seeds: torch.Tensor,
    length: int,
    key,
    edge_time: torch.Tensor,
    time: torch.Tensor | None = None,
    direction: str = "later",
    strict: bool = False,
) -> torch.Tensor:
    """``A.temporal_walk(seeds, length, edge_time, time, direction, strict)``: LongTensor
    (W, length + 1), the seeds then one node per step, ``-1`` after a stop (see
    :func:`walk`)."""
    return walk(A, seeds, length, key, edge_time, time, direction, strict)[0]


@torch_impl(Op.TEMPORAL_WALK_EDGES)
def temporal_walk_edges(
    A: CSC,
    seeds: torch.Tensor,
    length: int,
    key,
    edge_time: torch.Tensor,
    time: torch.Tensor | None = None,
    direction: str = "later",
    strict: bool = False,
) -> torch.Tensor:
    """``A.temporal_walk_edges(...)``: LongTensor (W, length), the edge id of each step of
    the walks :func:`temporal_walk` draws with the same key, ``-1`` after a stop."""
    return walk(A, seeds, length, key, edge_time, time, direction, strict, edges=True)[1]


__all__ = ["first_above", "temporal_walk", "temporal_walk_edges", "walk"]
