"""A graph partitioned over ranks by edge-balanced ranges of columns (Skywalker+'s placement).

Rank ``r`` owns the columns (the in-edges) of nodes ``bounds[r] <= v < bounds[r + 1]``, the
ranges cut where the edge count reaches ``r * E / world_size``, and keeps only their CSC on its
device. A sampler sees a :class:`PartitionedMatrix` and runs eagerly; an operator over a
frontier that spans ranges exchanges it. Every sample is the single-process one, bit for bit
(docs/architecture.md §3: draws are keyed by the mini-batch and the column's position in the
frontier, never by the rank):

``A[:, cols].individual_sample(k, probs=..., replace=..., method=...)``
    uniform or weighted, drawn by the columns' owners or by the requesting rank
    (:mod:`gsample.distributed.partition_sampling` says which, and how they exchange).
``A.random_walk(seeds, length, probs=..., p=..., q=..., stop_prob=..., ...)``
    uniform, weighted or node2vec, each step taken by the owner of the walk's current node
    (:mod:`gsample.distributed.partition_walks`).

The draws are the torch code's (``gsample.backend.torch.select`` and ``.walk``) on the rank's
device: bit for bit the single-device samples of the torch backend (the default for eager
ops); a single GPU under ``gs.use_backend("cuda")`` draws weighted node-wise samples within
docs/architecture.md §3's bound of them (99.9% of draws), the others bit for bit.

``gs.DataLoader(P, sampler, seeds, B, super_batch=N)`` samples N mini-batches of a rank in
one round: the sampler runs once, each operator above exchanging the N mini-batches'
frontiers at once, each column keyed by its own mini-batch (the single-device super-batch's
``BatchKeys`` / ``ColumnKeys``), and the results split back, the same bits as one by one
(:mod:`gsample.distributed.partition_batches`).

An empty frontier (``A[:, cols]`` of no column, a hop that reached no new node, on one rank or
on every rank; or walks of no seed) samples nothing, as on one process: a ``(N, 0)`` sample,
a ``(0, length + 1)`` walk; the rank still takes part in every exchange.

Checks of data that differ between ranks (probabilities) are agreed: when they fail on one
rank, every rank raises (that rank's error), so that none is left waiting in a collective.
Every other operator (``collective_sample``, reductions, slices with rows, ...) raises
``NotImplementedError`` naming a placement that runs it ("replicated" or "shared").
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import torch
import torch.distributed as dist

from gsample.base import validate as V
from gsample.distributed.partition_batches import active_round
from gsample.distributed.partition_frontier import SUPPORTED, Frontier, unsupported
from gsample.distributed.partition_walks import Walks
from gsample.formats.csc import CSC
from gsample.matrix.sparse import Matrix


def edge_balanced_bounds(indptr: torch.Tensor, world_size: int) -> list:
    """``world_size + 1`` column bounds: range ``r`` starts at the first column whose edges
    start at or after ``r * E / world_size`` (the last ends at ``N``).

    Examples
    --------
    >>> import torch
    >>> edge_balanced_bounds(torch.tensor([0, 5, 6, 7, 10]), 2)
    [0, 1, 4]
    """
    n, E = indptr.numel() - 1, int(indptr[-1])
    targets = torch.tensor(
        [math.ceil(r * E / world_size) for r in range(world_size + 1)],
        dtype=indptr.dtype,
        device=indptr.device,
    )
    cuts = torch.searchsorted(indptr, targets).clamp_(max=n).tolist()
    cuts[0], cuts[-1] = 0, n
    return cuts


def local_part(csc: CSC, lo: int, hi: int, device=None) -> CSC:
    """The columns ``lo .. hi - 1`` of the graph ``csc`` (rows and edge ids global).

    With ``device``, a copy there of those columns only (made there: identity edge ids are
    never materialised where the graph is, e.g. a shared host copy of billions of edges);
    else views of ``csc`` (and new offsets and edge ids on its device)."""
    e0, e1 = int(csc.indptr[lo]), int(csc.indptr[hi])
    where = csc.indptr.device if device is None else torch.device(device)

    def part(t):
        return t if device is None else t.to(device, copy=True)

    eids = torch.arange(e0, e1, device=where) if csc.eids is None else part(csc.eids[e0:e1])
    return CSC(
        csc.num_nodes,
        part(csc.indptr[lo : hi + 1]) - e0,
        part(csc.rows[e0:e1]),
        values=None if csc.values is None else part(csc.values[e0:e1]),
        eids=eids,
    )


class PartitionedMatrix(Walks):
    """This rank's part of a graph partitioned by edge-balanced column ranges.

    Made by :func:`gsample.distributed.place`. A sampler written with the Matrix API runs on
    it eagerly (``A[:, cols].individual_sample(k)``, uniform or weighted, ``.all_nodes()``
    and the rest on the sampled matrices, ``A.random_walk``, uniform, weighted or node2vec);
    every rank must run the same operators in the same order (as the ranks of one epoch do,
    through ``gs.DataLoader``). Samples are the single-process ones, bit for bit (the docstrings
    of :mod:`~gsample.distributed.partition_sampling` and
    :mod:`~gsample.distributed.partition_walks` say how each operator exchanges its
    frontier); ``gs.DataLoader(..., super_batch=N)`` runs the sampler once for N
    mini-batches, every exchange carrying all N
    (:mod:`~gsample.distributed.partition_batches`).

    Attributes
    ----------
    num_nodes, num_edges : int
        Of the whole graph.
    bounds : list of int
        ``world_size + 1`` column bounds; this rank owns ``bounds[rank]:bounds[rank + 1]``.
    local : CSC
        This rank's columns (local ``indptr``; global rows and edge ids) on its device.
    first_edge : int
        The position (in the whole graph's CSC order) of this rank's first edge: its edges
        are ``first_edge .. first_edge + local.nnz - 1`` of an edge-aligned tensor.
    rank, world_size, group
        Where this part sits in the process group.

    Examples
    --------
    In each rank of a process group (not run here), ``A`` the graph and ``seeds`` the
    rank's mini-batch:

    >>> import gsample as gs
    >>> P = gs.distributed.place(A, "partitioned")  # every rank of the group  # doctest: +SKIP
    >>> s = P[:, seeds].individual_sample(10)  # a gs.Matrix, as on one process  # doctest: +SKIP
    >>> sub = P[:, seeds]  # doctest: +SKIP
    >>> s = sub.individual_sample(5, probs=sub, replace=True)  # by edge weight  # doctest: +SKIP
    >>> walks = P.random_walk(seeds, 80, p=2.0, q=0.5)  # node2vec, (B, 81)  # doctest: +SKIP
    """

    placement = "partitioned"

    def __init__(
        self,
        local: CSC,
        bounds: list,
        num_nodes: int,
        num_edges: int,
        rank: int,
        world_size: int,
        group=None,
        first_edge: int | None = None,
    ):
        self.local, self.bounds = local, list(bounds)
        self.num_nodes, self.num_edges = num_nodes, num_edges
        self.rank, self.world_size, self.group = rank, world_size, group
        self.lo = self.bounds[rank]
        self._first_edge = first_edge
        self._cuts = torch.tensor(self.bounds[1:-1], dtype=torch.int64, device=self.device)
        self._deg = local.indptr[1:] - local.indptr[:-1]
        self._checks = SimpleNamespace(
            num_nodes=num_nodes, device=self.device, row_ids=None, col_ids=None
        )
        self._own_alias = None  # (values' version, alias tables of its values)

    @property
    def device(self) -> torch.device:
        return self.local.indptr.device

    @property
    def shape(self) -> tuple:
        return (self.num_nodes, self.num_nodes)

    @property
    def first_edge(self) -> int:
        if self._first_edge is None:  # made by hand: the ranks' edge counts (collective)
            counts = torch.zeros(self.world_size, dtype=torch.int64, device=self.device)
            counts[self.rank] = self.local.nnz
            dist.all_reduce(counts, group=self.group)
            self._first_edge = int(counts[: self.rank].sum())
        return self._first_edge

    def owner(self, ids: torch.Tensor) -> torch.Tensor:
        """The rank owning the column of each node of ``ids``."""
        return torch.searchsorted(self._cuts, ids, right=True)

    def __repr__(self) -> str:
        return (
            f"PartitionedMatrix(num_nodes={self.num_nodes}, num_edges={self.num_edges}, "
            f"rank={self.rank} of {self.world_size}, columns={self.lo}.."
            f"{self.bounds[self.rank + 1] - 1}, local_edges={self.local.nnz}, "
            f"device={self.device})"
        )

    def __getattr__(self, name):
        if not name.startswith("_") and hasattr(Matrix, name):
            raise unsupported(name)
        raise AttributeError(f"'PartitionedMatrix' object has no attribute {name!r}")

    def __getitem__(self, key) -> Frontier:
        """``A[:, cols]``: a frontier to sample from (only column slices are supported).

        ``cols`` may be empty (a hop that reached no new node): the frontier has no column and
        its samples none, of shape ``(N, 0)``, as on one process (each op still takes its op
        ordinal, so the draws after it are the single-process ones)."""
        if not isinstance(key, tuple) or len(key) != 2:
            raise TypeError("Matrix indexing: use A[rows, cols], e.g. A[:, seeds]")
        if not (isinstance(key[0], slice) and key[0] == slice(None)) or isinstance(key[1], slice):
            raise unsupported("A[rows, :] and A[rows, cols]")
        if isinstance(key[1], int) and not isinstance(key[1], bool):
            key = (key[0], [key[1]])
        run = active_round()
        if run is not None:  # a super-batch: its mini-batches' frontiers at once
            cols, ptr = run.join_ids(key[1], "cols", self)
            return Frontier(self, cols, batches=(run, ptr))
        return Frontier(self, V.ids(key[1], "cols", self.num_nodes, self.device))


__all__ = ["SUPPORTED", "PartitionedMatrix", "edge_balanced_bounds", "local_part"]
