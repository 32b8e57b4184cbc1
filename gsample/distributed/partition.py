"""A graph partitioned over ranks by edge-balanced ranges of columns (Skywalker+'s placement).

Rank ``r`` owns the columns (the in-edges) of nodes ``bounds[r] <= v < bounds[r + 1]``, the
ranges cut where the edge count reaches ``r * E / world_size``, and keeps only their CSC on its
device. A sampler sees a :class:`PartitionedMatrix` and runs eagerly; an operator over a
frontier that spans ranges exchanges it:

``A[:, cols].individual_sample(k, replace=...)`` (uniform)
    each rank sends every frontier column to its owner with the column's position in the
    frontier and the op's key (one all-to-all); the owner draws exactly what the
    single-process sampler draws for that column (the same keys: DESIGN §3, the column
    position of the requesting frontier) and sends back per column its edge count, then the
    edges' rows, edge ids and values (two all-to-alls). The result is an ordinary
    ``gs.Matrix`` on the rank's device, identical to the single-process sample.
``A.random_walk(seeds, length, stop_prob=..., restart_prob=..., jump_prob=...)`` (uniform)
    each step sends every walk still going to the owner of its current node (with its walker
    hash and root), which takes the step as ``gsample.backend.torch.walk`` does, and answers
    with the next node: two all-to-alls per step, the walks identical to the single-process
    ones.

Every other operator, weighted sampling and node2vec (whose edge test needs the previous
node's column, on another rank) raise ``NotImplementedError`` naming a placement that runs
them ("replicated" or "shared").
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import torch

from .. import validate as V
from ..backend.torch.select import select_in_columns
from ..backend.torch.walk import STRIDE, _general_step, thresholds
from ..formats.csc import CSC, gather_segments, segment_ptr
from ..matrix import Matrix
from ..random import ColumnKeys, _signed, combine_tensor, next_op_key
from .comm import Route, all_to_all, group_sums


def edge_balanced_bounds(indptr: torch.Tensor, world_size: int) -> list:
    """``world_size + 1`` column bounds: range ``r`` starts at the first column whose edges
    start at or after ``r * E / world_size`` (the last ends at ``N``).

    Examples
    --------
    >>> edge_balanced_bounds(torch.tensor([0, 5, 6, 7, 10]), 2)
    [0, 1, 4]
    """
    n, E = indptr.numel() - 1, int(indptr[-1])
    targets = torch.tensor([math.ceil(r * E / world_size) for r in range(world_size + 1)],
                           dtype=indptr.dtype, device=indptr.device)
    cuts = torch.searchsorted(indptr, targets).clamp_(max=n).tolist()
    cuts[0], cuts[-1] = 0, n
    return cuts


def local_part(csc: CSC, lo: int, hi: int) -> CSC:
    """The columns ``lo .. hi - 1`` of the graph ``csc`` (rows and edge ids global)."""
    e0, e1 = int(csc.indptr[lo]), int(csc.indptr[hi])
    eids = torch.arange(e0, e1, device=csc.indptr.device) if csc.eids is None \
        else csc.eids[e0:e1]
    return CSC(csc.num_nodes, csc.indptr[lo:hi + 1] - e0, csc.rows[e0:e1],
               values=None if csc.values is None else csc.values[e0:e1], eids=eids)


def _unsupported(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"{what}: not supported on a partitioned graph (placement='partitioned' runs "
        "A[:, cols].individual_sample(k) and A.random_walk(...), uniform); place the graph "
        "'replicated' or 'shared' (gsample.distributed.place) for it")


class PartitionedMatrix:
    """This rank's part of a graph partitioned by edge-balanced column ranges.

    Made by :func:`gsample.distributed.place`. A sampler written with the Matrix API runs on
    it eagerly (``A[:, cols].individual_sample(k)``, ``.all_nodes()`` and the rest on the
    sampled matrices, ``A.random_walk``); every rank must run the same operators in the same
    order (as the ranks of one epoch do, through ``gs.DataLoader``).

    Attributes
    ----------
    num_nodes, num_edges : int
        Of the whole graph.
    bounds : list of int
        ``world_size + 1`` column bounds; this rank owns ``bounds[rank]:bounds[rank + 1]``.
    local : CSC
        This rank's columns (local ``indptr``; global rows and edge ids) on its device.
    rank, world_size, group
        Where this part sits in the process group.

    Examples
    --------
    >>> P = gs.distributed.place(A, "partitioned")          # every rank of the group
    >>> s = P[:, seeds].individual_sample(10)               # a gs.Matrix, as on one process
    """

    placement = "partitioned"

    def __init__(self, local: CSC, bounds: list, num_nodes: int, num_edges: int, rank: int,
                 world_size: int, group=None):
        self.local, self.bounds = local, list(bounds)
        self.num_nodes, self.num_edges = num_nodes, num_edges
        self.rank, self.world_size, self.group = rank, world_size, group
        self.lo = self.bounds[rank]
        self._cuts = torch.tensor(self.bounds[1:-1], dtype=torch.int64, device=self.device)
        self._deg = local.indptr[1:] - local.indptr[:-1]
        self._checks = SimpleNamespace(num_nodes=num_nodes, device=self.device, row_ids=None,
                                       col_ids=None)

    @property
    def device(self) -> torch.device:
        return self.local.indptr.device

    @property
    def shape(self) -> tuple:
        return (self.num_nodes, self.num_nodes)

    def owner(self, ids: torch.Tensor) -> torch.Tensor:
        """The rank owning the column of each node of ``ids``."""
        return torch.searchsorted(self._cuts, ids, right=True)

    def __repr__(self) -> str:
        return (f"PartitionedMatrix(num_nodes={self.num_nodes}, num_edges={self.num_edges}, "
                f"rank={self.rank} of {self.world_size}, columns={self.lo}.."
                f"{self.bounds[self.rank + 1] - 1}, local_edges={self.local.nnz}, "
                f"device={self.device})")

    def __getattr__(self, name):
        if not name.startswith("_") and hasattr(Matrix, name):
            raise _unsupported(name)
        raise AttributeError(f"'PartitionedMatrix' object has no attribute {name!r}")

    def __getitem__(self, key) -> "_Frontier":
        """``A[:, cols]``: a frontier to sample from (only column slices are supported)."""
        if not isinstance(key, tuple) or len(key) != 2:
            raise TypeError("Matrix indexing: use A[rows, cols], e.g. A[:, seeds]")
        if not (isinstance(key[0], slice) and key[0] == slice(None)) \
                or isinstance(key[1], slice):
            raise _unsupported("A[rows, :] and A[rows, cols]")
        if isinstance(key[1], int) and not isinstance(key[1], bool):
            key = (key[0], [key[1]])
        return _Frontier(self, V.ids(key[1], "cols", self.num_nodes, self.device,
                                     allow_empty=False))

    def random_walk(self, seeds, length: int, probs=None, p: float = 1.0, q: float = 1.0,
                    stop_prob: float = 0.0, restart_prob: float = 0.0,
                    jump_prob: float = 0.0) -> torch.Tensor:
        """``gs.Matrix.random_walk`` (uniform, with stop / restart / jump), the steps exchanged
        between the ranks: the walks are the single-process ones. Shape (W, length + 1)."""
        length = V.count(length, "length")
        p, q = V.positive(p, "p"), V.positive(q, "q")
        stop_prob = V.probability(stop_prob, "stop_prob")
        restart_prob = V.probability(restart_prob, "restart_prob")
        jump_prob = V.probability(jump_prob, "jump_prob")
        if probs is not None:
            raise _unsupported("probs (weighted walks)")
        if p != 1.0 or q != 1.0:
            raise _unsupported("p, q (node2vec walks)")
        seeds = V.check_random_walk(self._checks, seeds, length=length, stop_prob=stop_prob,
                                    restart_prob=restart_prob, jump_prob=jump_prob)["seeds"]
        key = next_op_key()                    # after the checks, as an eager op takes it
        return self._walk(seeds, length, key, thresholds(stop_prob, restart_prob, jump_prob))

    def _walk(self, seeds, length, key, cs):
        W, dev, local = seeds.numel(), self.device, self.local
        out = torch.full((W, length + 1), -1, dtype=torch.int64, device=dev)
        out[:, 0] = seeds
        at = torch.arange(W, device=dev)
        h = combine_tensor(key, at)           # the walker's hash: the first half of every key
        root = cur = seeds
        one = torch.ones((), dtype=torch.float64, device=dev)
        weights = (one, one, one, 1.0)        # node2vec's, unused
        for t in range(length):
            route = Route(torch.stack([cur, h, root], 1), self.owner(cur), self.world_size,
                          self.group)
            v, hv, rv = (route.received[:, i] for i in range(3))
            v = v - self.lo
            step = _general_step(t, t * STRIDE, hv, v, None, rv, self._deg[v], local.indptr,
                                 local.rows, None, self.num_nodes, None, cs, weights, False, dev)
            nxt = route.answer(step)
            out[at, t + 1] = nxt
            going = nxt >= 0
            at, h, root, cur = at[going], h[going], root[going], nxt[going]
        return out


class _Frontier:
    """``A[:, cols]`` of a :class:`PartitionedMatrix`: what can be sampled from it."""

    def __init__(self, A: PartitionedMatrix, cols: torch.Tensor):
        self.A, self.cols = A, cols

    def __getattr__(self, name):
        if not name.startswith("_") and hasattr(Matrix, name):
            raise _unsupported(f"A[:, cols].{name}")
        raise AttributeError(f"'A[:, cols]' of a partitioned graph has no attribute {name!r}")

    def individual_sample(self, k: int, probs=None, replace: bool = False,
                          method: str = "cdf") -> Matrix:
        """``gs.Matrix.individual_sample`` (uniform), each column drawn by its owner rank with
        the single-process keys: the same sample. Returns a ``gs.Matrix`` on this rank's
        device (row space of all nodes, column space ``cols``). ``method`` only concerns
        weighted draws (not supported here)."""
        k = V.count(k)
        replace = V.flag(replace, "replace")
        if method not in ("cdf", "alias"):
            raise ValueError(f"method: must be 'cdf' or 'alias', got {method!r}")
        if probs is not None:
            raise _unsupported("probs (weighted individual_sample)")
        key = next_op_key()
        return Matrix(_sample(self.A, self.cols, k, replace, key))


def _sample(A: PartitionedMatrix, cols: torch.Tensor, k: int, replace: bool, key: int) -> CSC:
    dev, C, local = A.device, cols.numel(), A.local
    position = torch.arange(C, device=dev)
    request = torch.stack([cols, position, torch.full_like(cols, _signed(key))], 1)
    route = Route(request, A.owner(cols), A.world_size, A.group)
    # the owner's part: the single-process draws of each column it was sent
    v = route.received[:, 0] - A.lo
    starts = local.indptr[v]
    keys = ColumnKeys(route.received[:, 2], route.received[:, 1], [0, v.numel()], ())
    ptr, col, offset = select_in_columns(A._deg[v], k, replace, keys)
    edges = starts[col] + offset
    counts = ptr[1:] - ptr[:-1]
    per_sender = group_sums(counts, route.got)
    # back to the requesters: the edge count of each column (in the order they were sent),
    # then the edges, grouped by owner as the columns were
    back = all_to_all(counts, route.sent, route.got, route.group)
    per_owner = group_sums(back, route.sent)
    data = torch.stack([local.rows[edges], local.eids[edges]], 1)
    got = route.answer_grouped(data, per_sender, per_owner)
    values = None
    if local.values is not None:
        values = route.answer_grouped(local.values[edges], per_sender, per_owner)
    # in frontier order: column c's edges are segment inv[c] of what came back
    inv = torch.empty_like(route.order)
    inv[route.order] = position
    index, indptr = gather_segments(segment_ptr(back), inv)
    return CSC(A.num_nodes, indptr, got[index, 0], col_ids=cols,
               values=None if values is None else values[index], eids=got[index, 1])


__all__ = ["PartitionedMatrix", "edge_balanced_bounds", "local_part"]
