"""``A.temporal_walk`` / ``A.temporal_walk_edges`` on the GPU: every step of every walker in
one launch (``kernels/temporal_walk.cu``).

One thread per walker runs the torch reference's algorithm
(:mod:`gsample.backend.torch.temporal_walk`) with the same draws: each step's allowed edges
by a binary search in the current node's time order (built once per graph and ``edge_time``
by :func:`gsample.backend.torch.temporal.time_order`, kept with the graph), one uniform
draw keyed by the walker's position and the step; so the walks and their edge ids are the
torch backend's, bit for bit. A super-batch's walkers (:class:`~gsample.base.random.BatchKeys`)
run in the same launch, each batch with its key.

The kernel checks the seeds itself (``checks=("seeds",)``): a seed outside the graph (or
the super-batch's ids) walks nowhere and is flagged; the flag is raised as an
``IndexError`` naming ``seeds`` through :func:`gsample.base.validate.fail_if` (at once in an
eager call, with the program's read-back in a compiled one), and the next call is
unharmed. Nothing else is read back. What the kernel does not take runs the torch code on
the device: int32 indices.
"""

from __future__ import annotations

import torch

from gsample.backend.cuda.module import launch, memset
from gsample.backend.registry import cuda_impl
from gsample.backend.torch import temporal_walk as reference
from gsample.backend.torch.temporal import time_order, wide
from gsample.base import validate as V
from gsample.base.random import MASK64, BatchKeys, ColumnKeys
from gsample.formats.csc import CSC
from gsample.ir import Op
from gsample.ir.checks import check_temporal_walk

_TYPES = {torch.int64: "long long", torch.float64: "double"}
#: threads per block: a mini-batch of walkers is small, so small blocks spread it over SMs
_THREADS = 64


def _kernel_takes(A: CSC) -> bool:
    return (
        A.indptr.is_cuda
        and A.indptr.dtype == torch.int64
        and A.rows.dtype == torch.int64
        and (A.eids is None or A.eids.dtype == torch.int64)
    )


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
) -> torch.Tensor:
    """The walks (``edges=False``: LongTensor (W, length + 1)) or their steps' edge ids
    (``edges=True``: LongTensor (W, length)) of
    :func:`gsample.backend.torch.temporal_walk.walk` (same parameters), by one launch.

    ``seeds`` are checked by the kernel (the boundary's check only converted them): a bad
    one raises ``IndexError`` naming ``seeds``.
    """
    if isinstance(key, ColumnKeys):
        raise TypeError("temporal_walk: takes an op key or a super-batch's BatchKeys")
    batches = isinstance(key, BatchKeys)
    n = A.num_nodes
    M = n * key.copies if batches else n
    if not _kernel_takes(A):  # the torch code, its seeds checked as the kernel would
        seeds = V.ids(seeds, "seeds", M, seeds.device)
        pair = reference.walk(A, seeds, length, key, edge_time, time, direction, strict, edges)
        return pair[1] if edges else pair[0]
    if batches:  # a super-batch skips the boundary's check: the times are checked here
        checked = check_temporal_walk(A, seeds, edge_time, time, length, trusted=("seeds",))
        edge_time, time = checked["edge_time"], checked.get("time")
    seeds = seeds.to(torch.int64).contiguous()
    W, L, dev = seeds.numel(), int(length), seeds.device
    out = torch.empty((W, L + 1), dtype=torch.int64, device=dev)  # every entry written
    eout = torch.empty((W, L), dtype=torch.int64, device=dev) if edges else None
    if W == 0:
        return eout if edges else out
    to = time_order(A, edge_time)
    order, stime = to.order.contiguous(), to.time.contiguous()
    t = None if time is None else wide(time).to(stime.dtype).contiguous()
    # err: a negative seed, one >= M, the smallest and the largest such (zero before)
    err = torch.empty(4, dtype=torch.int64, device=dev)
    memset(err, 0)
    launch(
        "temporal_walk",
        "gs_temporal_walk",
        W,
        A.indptr.contiguous(),
        A.rows.contiguous(),
        0 if A.eids is None else A.eids.contiguous(),
        order,
        stime,
        seeds,
        W,
        L,
        n,
        0 if t is None else t,
        int(direction == "later"),
        int(bool(strict)),
        key.bases(dev) if batches else 0,
        0 if batches else key & MASK64,
        n if batches else 0,
        M,
        out,
        0 if eout is None else eout,
        err,
        block=_THREADS,
        dtypes=(_TYPES[stime.dtype],),
    )
    V.fail_if(err[:2].any(), IndexError, _bad_seed(M), err[0], err[2], err[3])
    return eout if edges else out


def _bad_seed(M: int):
    """The message of a flagged seed (from the kernel's err words, read back on failure)."""

    def message(negative, low, high):
        if negative:
            return f"seeds: node id {low} is negative"
        return f"seeds: node id {high} is out of range for a graph of {M} nodes"

    return message


@cuda_impl(Op.TEMPORAL_WALK, batch_keys=True, checks=("seeds",))  # kernels/temporal_walk.cu
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
    """``A.temporal_walk(seeds, length, edge_time, time, direction, strict)`` in one launch:
    LongTensor (W, length + 1), the torch backend's walks bit for bit (see :func:`walk`).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> A = A.with_edge_time(torch.arange(A.num_edges) % 10)
    >>> et = A.edge_time[A.edges()[2]]
    >>> with gs.use_backend("cuda"):  # doctest: +SKIP
    ...     walks = A.to("cuda").temporal_walk(seeds.cuda(), 10, et.cuda())
    """
    return walk(A, seeds, length, key, edge_time, time, direction, strict)


@cuda_impl(Op.TEMPORAL_WALK_EDGES, batch_keys=True, checks=("seeds",))
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
    """``A.temporal_walk_edges(...)`` in one launch: LongTensor (W, length), the edge ids of
    the steps (see :func:`walk`)."""
    return walk(A, seeds, length, key, edge_time, time, direction, strict, edges=True)


__all__ = ["temporal_walk", "temporal_walk_edges", "walk"]
