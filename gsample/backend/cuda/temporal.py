"""``A.temporal_sample`` with uniform draws as two kernels (``kernels/temporal.cu``).

The definition is the torch backend's (:mod:`gsample.backend.torch.temporal`): the same
candidates (a binary search in each column's time order, built once per graph by
:func:`~gsample.backend.torch.temporal.time_order`), the same keys (a seed's columns draw
with ``combine(op key, seed)`` and their rank among the seed's columns; a super-batch's with
their batch's), the same Floyd draws, the result in CSC order: bit for bit its samples.

``gs_temporal_count`` (a thread per column) checks the frontier's ids (a bad one is an empty
column, flagged), searches its candidates and counts its draws; one read-back takes the
result's size with the flags, so a call with a bad id raises before anything is drawn;
``gs_temporal_draw`` (a warp per column) draws, maps the draws to edges and writes them in
CSC order. What the kernels do not take runs the torch code on the device: weighted draws
(``probs``, registered ``without``), ``k = -1`` (every candidate: no draw), a graph with a
row or column space of its own, int32 indices, and times of two dtypes.
"""

from __future__ import annotations

import torch

from gsample.backend.cuda.module import launch, memset
from gsample.backend.registry import cuda_impl
from gsample.backend.torch import temporal as reference
from gsample.backend.torch.batched import encode_columns
from gsample.base import validate as V
from gsample.base.random import MASK64, BatchKeys, batch_ptr
from gsample.formats.csc import CSC, segment_ptr
from gsample.ir import Op

_TYPES = {torch.int64: "long long", torch.float64: "double"}
#: draws per column above which one lane's insertion sort (quadratic) gives way to torch's
_MOST_DRAWS = 1024


def _kernels_take(A: CSC, k: int, time, edge_time) -> bool:
    if k < 0 or k > _MOST_DRAWS or A.row_ids is not None or A.col_ids is not None:
        return False
    if A.indptr.dtype != torch.int64 or not A.indptr.is_cuda:
        return False
    if time is None:
        return True
    return reference.wide(time).dtype == reference.wide(edge_time).dtype


@cuda_impl(Op.TEMPORAL_SAMPLE, batch_keys=True, checks=("cols",), without=("probs",))
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
) -> CSC:
    """The uniform sample of :func:`gsample.backend.torch.temporal.temporal_sample` (same
    parameters but ``probs``; same result, bit for bit), as kernels.

    Parameters
    ----------
    A : CSC
        The graph.
    cols : LongTensor, shape (C,)
        The frontier (ids ``b * n + v`` with a super-batch's :class:`BatchKeys`); its ids are
        checked by the first kernel (``IndexError`` naming ``cols``).
    k, replace, key, time, edge_time, seed, strategy, window
        As the torch implementation.
    probs : None
        Weighted draws are the torch code's (registered ``without=("probs",)``).

    Returns
    -------
    CSC
        ``A``'s row space, column space ``cols``; each column's selected edges in CSC order.

    Examples
    --------
    >>> with gs.use_backend("cuda"):
    ...     s = A.temporal_sample(cols, 10, time=t, edge_time=et, seed=slot)
    """
    if probs is not None or not _kernels_take(A, k, time, edge_time):  # checks=("cols",)
        copies = key.copies if isinstance(key, BatchKeys) else 1
        cols = V.ids(cols, "cols", A.num_nodes * copies, cols.device, allow_empty=True)
        return reference.temporal_sample(
            A, cols, k, replace, key, probs, time, edge_time, seed, strategy, window
        )
    batches = isinstance(key, BatchKeys)
    n = A.num_nodes
    M = n * key.copies if batches else n
    cols = cols.to(torch.int64).contiguous()
    C, dev = cols.numel(), cols.device
    order = stime = t = None
    window_on, span = 0, 0
    if time is not None:
        to = reference.time_order(A, edge_time)
        order, stime = to.order.contiguous(), to.time.contiguous()
        t = reference.wide(time).contiguous()
        if window is not None:
            window_on = 1
            span = float(window) if t.is_floating_point() else int(window)
    keyed = batches or seed is not None  # per-column keys, made by the count kernel
    # one allocation: candidates' start, their count, the draws' count, the columns' keys
    # (base, position), and the flags (bad ids, a frontier out of (batch, seed) order)
    work = torch.empty((5 if keyed else 3) * C + 6, dtype=torch.int64, device=dev)
    lo, cand, count = work[:C], work[C : 2 * C], work[2 * C : 3 * C]
    bases = work[3 * C : 4 * C] if keyed else None
    positions = work[4 * C : 5 * C] if keyed else None
    err = work[-6:]
    memset(err, 0)
    seed = None if seed is None else seed.to(torch.int64).contiguous()
    dtype = {"dtypes": (_TYPES[stime.dtype],)} if stime is not None else {}
    launch(
        "temporal",
        "gs_temporal_count",
        C,
        A.indptr.contiguous(),
        cols,
        C,
        n,
        M,
        _null(t),
        _null(stime),
        window_on,
        span,
        int(strategy == "last"),
        k,
        bool(replace),
        _null(seed),
        key.bases(dev) if batches else 0,
        0 if batches else key & MASK64,
        lo,
        cand,
        count,
        _null(bases),
        _null(positions),
        err,
        **dtype,
    )
    indptr = segment_ptr(count)
    # the one read-back: the size, with the flags
    total, bad, negative, low, high, unsorted = torch.cat(
        [indptr[-1:], err[4:5], err[:1], err[2:4], err[5:6]]
    ).tolist()
    if bad:
        if negative:
            raise IndexError(f"cols: node id {low} is negative")
        raise IndexError(f"cols: node id {high} is out of range for a graph of {M} nodes")
    nodes = cols - (cols // n) * n if batches else cols
    if keyed and unsorted:  # columns not grouped by (batch, seed): ranked by the torch code
        batch = cols // n if batches else None
        if seed is not None:
            ckey = reference.seed_keys(key, seed, batch)
        else:
            ckey = key.columns(cols, batch, batch_ptr(batch, key.copies))
        bases, positions = ckey.base.contiguous(), ckey.position.contiguous()
    pos = torch.empty(total, dtype=torch.int64, device=dev)
    launch(
        "temporal",
        "gs_temporal_draw",
        C * 32,
        lo,
        cand,
        indptr,
        C,
        _null(order),
        k,
        bool(replace),
        0 if batches or seed is not None else key & MASK64,
        _null(bases),
        _null(positions),
        pos,
        **dtype,
    )
    out = CSC(
        num_nodes=A.num_nodes,
        indptr=indptr,
        rows=A.rows[pos],
        row_ids=A.row_ids,
        col_ids=nodes,
        values=None if A.values is None else A.values[pos],
        eids=pos if A.eids is None else A.eids[pos],
    )
    return encode_columns(out, cols, n, key.copies) if batches else out


def _null(t: torch.Tensor | None):
    """A kernel's optional array argument: the tensor, or a null pointer."""
    return 0 if t is None else t


__all__ = ["temporal_sample"]
