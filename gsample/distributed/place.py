"""Placing a graph for the ranks of a process group: replicated, shared, or partitioned."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

from gsample.distributed.comm import default_device, group_ranks
from gsample.distributed.partition import PartitionedMatrix, edge_balanced_bounds, local_part
from gsample.distributed.shared import one_host, publish, register
from gsample.formats.csc import CSC
from gsample.formats.placement import (
    DEVICE_SHARE,
    check_options,
    free_memory,
    graph_bytes,
    placement_of,
)
from gsample.matrix.sparse import Matrix

PLACEMENTS = ("auto", "replicated", "shared", "partitioned")
_ARRAYS = ("indptr", "rows", "values", "eids")


def choose_placement(nbytes: int, free: int, world_size: int, gpu: bool = True) -> str:
    """The ``"auto"`` rule of :func:`place`, from the graph's bytes and each rank's free
    device memory (the least of the ranks').

    ``"replicated"`` when the graph takes at most :data:`~gsample.formats.placement.DEVICE_SHARE`
    of ``free`` (no communication at all); else, on GPUs, ``"partitioned"`` when one rank's
    share does (device bandwidth and GPU-to-GPU links beat reading host memory over PCIe:
    Skywalker+); else ``"shared"`` (one copy in pinned host memory per host, read through
    UVA). On CPUs ``free`` is a rank's share of the host's memory, and a graph that does not
    fit is shared.

    Examples
    --------
    >>> choose_placement(10 << 30, 80 << 30, 4), choose_placement(100 << 30, 80 << 30, 4)
    ('replicated', 'partitioned')
    >>> choose_placement(500 << 30, 80 << 30, 4)
    'shared'
    """
    if nbytes <= DEVICE_SHARE * free:
        return "replicated"
    if gpu and world_size > 1 and nbytes / world_size <= DEVICE_SHARE * free:
        return "partitioned"
    return "shared"


def _host_share(world_size: int) -> int:
    """A rank's share of the host's available memory (bytes)."""
    try:
        with open("/proc/meminfo") as f:
            avail = next(
                int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:")
            )
    except (OSError, StopIteration, ValueError):
        avail = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return avail // world_size


def _graph_problem(A):
    """``(exception type, message)`` when ``A`` cannot be placed, else None."""
    if A is None:
        return None
    if not isinstance(A, Matrix):
        return TypeError, (
            f"A: expected a gs.Matrix (or None on ranks other than 0), got {type(A).__name__}"
        )
    if A.csc.row_ids is not None or A.csc.col_ids is not None:
        return ValueError, "A: must be a whole graph (rows and columns all nodes), not a sub-matrix"
    return None


def place(
    A: Matrix | None, placement: str = "auto", device=None, *, budget: int | None = None, group=None
):
    """Place a graph for sampling on every rank of a process group (call it on all of them).

    Parameters
    ----------
    A : gs.Matrix or None
        The whole graph, on any device. Rank 0 must give it; the other ranks may pass None,
        and then receive it through shared memory (ranks of one host).
    placement : {"auto", "replicated", "shared", "partitioned"}
        ``"replicated"``: every rank holds the graph on its device (no communication).
        ``"shared"``: one copy in memory shared by the host's ranks (``/dev/shm``; when every
        rank passes the graph :func:`~gsample.distributed.shared.attach_graph` mapped, that
        copy itself), pinned and read by each GPU through unified virtual addressing
        (``placement == "uva"``), or read by CPU ranks directly (``"shared"``).
        ``"partitioned"``: rank ``r`` keeps the columns of an edge-balanced range of nodes
        on its device and operators exchange frontiers
        (:mod:`gsample.distributed.partition`: node-wise sampling, uniform or weighted, and
        walks, uniform, weighted or node2vec).
        ``"auto"``: :func:`choose_placement` with the graph's bytes and the least free
        device memory of the ranks (or ``budget``).
    device : torch.device or str, optional
        This rank's device; default its current GPU under NCCL, else the CPU.
    budget : int, optional
        With ``"auto"``: bytes of device memory per rank to decide with.
    group : process group, optional
        Default: the whole world.

    Returns
    -------
    gs.Matrix or PartitionedMatrix
        A ``gs.Matrix`` (``placement`` ``"device"``, ``"uva"`` or ``"shared"``), or this
        rank's :class:`PartitionedMatrix`. Samples are the same under every placement, and the
        same as one process draws (the determinism contract keys on the mini-batch index).

    Examples
    --------
    In each process of ``torchrun`` (a process group on GPUs: not run here):

    >>> import torch, torch.distributed as dist, gsample as gs
    >>> dist.init_process_group("nccl"); torch.cuda.set_device(local_rank)  # doctest: +SKIP
    >>> if rank == 0:  # doctest: +SKIP
    ...     A = gs.datasets.rmat(2_400_000, 120_000_000, seed=0)
    ... else:
    ...     A = None
    >>> G = gs.distributed.place(A, "shared")  # doctest: +SKIP
    >>> loader = gs.DataLoader(  # doctest: +SKIP
    ...     G, graphsage, train_ids, 512, seed=0, distributed=True)
    """
    rank, world = group_ranks(group)
    check_options(placement, budget, PLACEMENTS, "bytes per rank")
    device = default_device(group) if device is None else torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    # every rank learns of a bad graph anywhere and raises, so that none waits for the others
    status = [None] * world
    problem = _graph_problem(A)
    mapped = A is not None and problem is None and placement_of(A.csc) == "shared"
    shape = (A.num_nodes, A.num_edges) if A is not None and problem is None else None
    dist.all_gather_object(status, (A is not None, problem, mapped, shape), group=group)
    for _, problem, _, _ in status:
        if problem is not None:
            raise problem[0](problem[1])
    shapes = {s for *_, s in status if s is not None}
    if len(shapes) > 1:  # (each rank would sample its own graph under rank 0's node count)
        raise ValueError(
            "A: the ranks passed different graphs, (nodes, edges) "
            + ", ".join(str(s) for *_, s in status)
            + ": pass one graph (or None on ranks other than 0)"
        )
    everyone = [has for has, *_ in status]
    # every rank attached one host's shared copy (gsample.distributed.shared.attach_graph):
    # "shared" uses it in place, with no second copy
    attached = all(m for _, _, m, _ in status)
    if not everyone[0]:
        raise ValueError("A: rank 0 must pass the graph (the others may pass None)")
    meta = [None]
    if rank == 0:
        meta[0] = (A.num_nodes, A.num_edges, graph_bytes(A.csc))
    dist.broadcast_object_list(
        meta, src=dist.get_global_rank(group, 0) if group else 0, group=group
    )
    num_nodes, num_edges, nbytes = meta[0]
    if placement == "auto":
        free = (
            budget
            if budget is not None
            else (free_memory(device) if device.type == "cuda" else _host_share(world))
        )
        least = torch.tensor(
            [free], dtype=torch.int64, device=device if dist.get_backend(group) == "nccl" else "cpu"
        )
        dist.all_reduce(least, op=dist.ReduceOp.MIN, group=group)
        placement = choose_placement(nbytes, int(least), world, device.type == "cuda")
    if placement == "shared" or not all(everyone):
        one_host(
            group,
            f"placement={placement!r}"
            if all(everyone)
            else "A: None on some ranks (the graph then comes from rank 0)",
        )
        if placement == "shared" and attached:
            arrays = {n: getattr(A.csc, n) for n in _ARRAYS}
        else:
            arrays = publish({n: getattr(A.csc, n) for n in _ARRAYS} if rank == 0 else None, group)
        csc = CSC(num_nodes, **arrays)
        if placement == "shared":
            if device.type == "cuda":
                csc = CSC(
                    num_nodes,
                    **{n: None if t is None else register(t, device) for n, t in arrays.items()},
                )
            return Matrix(csc)
        own = False  # the shared copy is only read: this rank copies it
    else:
        csc, own = A.csc, True
    if placement == "replicated":
        return Matrix(csc.to(device) if own else _copy(csc, device))
    bounds = edge_balanced_bounds(csc.indptr.cpu(), world)
    # a copy of this rank's columns only (views would keep the whole graph's memory alive)
    local = local_part(csc, bounds[rank], bounds[rank + 1], device)
    return PartitionedMatrix(
        local,
        bounds,
        num_nodes,
        num_edges,
        rank,
        world,
        group,
        first_edge=int(csc.indptr[bounds[rank]]),
    )


def _copy(csc: CSC, device) -> CSC:
    """``csc`` copied to ``device`` (a copy even on the CPU: out of the shared memory)."""
    return CSC(
        csc.num_nodes,
        **{
            n: None if t is None else t.to(device, copy=True)
            for n, t in (
                (n, getattr(csc, n))
                for n in ("indptr", "rows", "row_ids", "col_ids", "values", "eids")
            )
        },
    )


__all__ = ["PLACEMENTS", "choose_placement", "place"]
