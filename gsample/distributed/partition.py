"""A graph partitioned over ranks by edge-balanced ranges of columns (Skywalker+'s placement).

Rank ``r`` owns the columns (the in-edges) of nodes ``bounds[r] <= v < bounds[r + 1]``, the
ranges cut where the edge count reaches ``r * E / world_size``, and keeps only their CSC on its
device. A sampler sees a :class:`PartitionedMatrix` and runs eagerly; an operator over a
frontier that spans ranges exchanges it. Every sample is the single-process one, bit for bit
(docs/architecture.md §3: draws are keyed by the mini-batch and the column's position in the frontier,
never by the rank):

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

Checks of data that differ between ranks (probabilities) are agreed: when they fail on one
rank, every rank raises (that rank's error), so that none is left waiting in a collective.
Every other operator (``collective_sample``, reductions, slices with rows, ...) raises
``NotImplementedError`` naming a placement that runs it ("replicated" or "shared").
"""

from __future__ import annotations

import functools
import math
import numbers
from types import SimpleNamespace

import torch
import torch.distributed as dist

from gsample.base import validate as V
from gsample.base.random import next_op_key
from gsample.distributed.comm import Route, all_to_all, group_sums
from gsample.distributed.partition_batches import active_round
from gsample.distributed.partition_sampling import _mapped, _sample, _sample_here
from gsample.distributed.partition_walks import _Walks
from gsample.formats.csc import CSC, gather_segments, segment_ptr
from gsample.matrix.sparse import EdgeMapOperators, Matrix


def edge_balanced_bounds(indptr: torch.Tensor, world_size: int) -> list:
    """``world_size + 1`` column bounds: range ``r`` starts at the first column whose edges
    start at or after ``r * E / world_size`` (the last ends at ``N``).

    Examples
    --------
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


def local_part(csc: CSC, lo: int, hi: int) -> CSC:
    """The columns ``lo .. hi - 1`` of the graph ``csc`` (rows and edge ids global)."""
    e0, e1 = int(csc.indptr[lo]), int(csc.indptr[hi])
    eids = torch.arange(e0, e1, device=csc.indptr.device) if csc.eids is None else csc.eids[e0:e1]
    return CSC(
        csc.num_nodes,
        csc.indptr[lo : hi + 1] - e0,
        csc.rows[e0:e1],
        values=None if csc.values is None else csc.values[e0:e1],
        eids=eids,
    )


#: what a partitioned graph runs (the other operators' error says so)
SUPPORTED = (
    "A[:, cols].individual_sample (uniform or weighted, with or without "
    "replacement), A[:, cols].values and scalar edge maps of A[:, cols], and "
    "A.random_walk (uniform, weighted, node2vec, with stop / restart / jump)"
)


def _unsupported(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"{what}: not supported on a partitioned graph (placement='partitioned' runs "
        f"{SUPPORTED}); place the graph 'replicated' or 'shared' (gsample.distributed.place) "
        "for it"
    )


class PartitionedMatrix(_Walks):
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
    >>> P = gs.distributed.place(A, "partitioned")          # every rank of the group
    >>> s = P[:, seeds].individual_sample(10)               # a gs.Matrix, as on one process
    >>> sub = P[:, seeds]
    >>> s = sub.individual_sample(5, probs=sub, replace=True)       # by edge weight
    >>> walks = P.random_walk(seeds, 80, p=2.0, q=0.5)      # node2vec, shape (B, 81)
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
            raise _unsupported(name)
        raise AttributeError(f"'PartitionedMatrix' object has no attribute {name!r}")

    def __getitem__(self, key) -> _Frontier:
        """``A[:, cols]``: a frontier to sample from (only column slices are supported)."""
        if not isinstance(key, tuple) or len(key) != 2:
            raise TypeError("Matrix indexing: use A[rows, cols], e.g. A[:, seeds]")
        if not (isinstance(key[0], slice) and key[0] == slice(None)) or isinstance(key[1], slice):
            raise _unsupported("A[rows, :] and A[rows, cols]")
        if isinstance(key[1], int) and not isinstance(key[1], bool):
            key = (key[0], [key[1]])
        run = active_round()
        if run is not None:  # a super-batch: its mini-batches' frontiers at once
            cols, ptr = run.join_ids(key[1], "cols", self, allow_empty=False)
            return _Frontier(self, cols, batches=(run, ptr))
        return _Frontier(
            self, V.ids(key[1], "cols", self.num_nodes, self.device, allow_empty=False)
        )


class _Frontier(EdgeMapOperators):
    """``A[:, cols]`` of a :class:`PartitionedMatrix`: what can be sampled from it.

    Its edges stay with their owners; ``.values`` fetches them. Scalar edge maps (``sub **
    2``, ``2 * sub + 1``) give frontiers whose values the owners compute, elementwise, as one
    process does: as ``probs`` they are drawn by the owners too.

    In a super-batch (:mod:`gsample.distributed.partition_batches`) ``cols`` holds the N
    mini-batches' columns one mini-batch after the other and ``batches`` is ``(round,
    ptr)``: mini-batch ``b``'s columns are ``cols[ptr[b]:ptr[b + 1]]``; every exchange
    carries them all, and what the sampler gets back holds one value per mini-batch.
    """

    def __init__(
        self,
        A: PartitionedMatrix,
        cols: torch.Tensor,
        maps: tuple = (),
        fetched: dict | None = None,
        batches: tuple | None = None,
    ):
        self.A, self.cols, self._maps = A, cols, maps
        # what was fetched of the slice (degrees, the graph's values): shared with edge maps
        self._fetched = {} if fetched is None else fetched
        self._batches = batches

    def __getattr__(self, name):
        if not name.startswith("_") and hasattr(Matrix, name):
            raise _unsupported(f"A[:, cols].{name}")
        raise AttributeError(f"'A[:, cols]' of a partitioned graph has no attribute {name!r}")

    @property
    def shape(self) -> tuple:
        if self._batches is not None:
            run, ptr = self._batches
            return run.each([(self.A.num_nodes, c1 - c0) for c0, c1 in zip(ptr[:-1], ptr[1:])])
        return (self.A.num_nodes, self.cols.numel())

    # ------------------------------------------------------------------ scalar edge maps
    def _edge_map(self, op: str, other, reverse: bool = False) -> _Frontier:
        if isinstance(other, bool) or not isinstance(other, numbers.Real):
            raise _unsupported(
                f"other: an edge map of A[:, cols] with a "
                f"{type(other).__name__} (a Python number only)"
            )
        return _Frontier(
            self.A, self.cols, self._maps + ((op, other, reverse),), self._fetched, self._batches
        )

    def _negate(self) -> _Frontier:
        return _Frontier(
            self.A, self.cols, self._maps + (("neg", None, False),), self._fetched, self._batches
        )

    # ------------------------------------------------------------------ fetched from the owners
    def _fetch(self, values: bool) -> dict:
        """The frontier's column degrees (``"deg"``, shape (C,)) and, with ``values``, the
        graph's values of its edges in slice order (``"values"``, shape (E_slice,)), asked of
        their owners once (every rank calls it)."""
        got = self._fetched
        if "deg" in got and (not values or "values" in got):
            return got
        A, cols = self.A, self.cols
        route = Route(cols.unsqueeze(1), A.owner(cols), A.world_size, A.group)
        v = route.received[:, 0] - A.lo
        deg = A._deg[v]
        sent = all_to_all(deg, route.sent, route.got, route.group)  # in the order sent
        got["deg"] = torch.empty_like(sent)
        got["deg"][route.order] = sent
        if values:
            index, _ = gather_segments(A.local.indptr, v)
            back = route.answer_grouped(
                A.local.value_tensor()[index],
                group_sums(deg, route.got),
                group_sums(sent, route.sent),
            )
            inv = torch.empty_like(route.order)
            inv[route.order] = torch.arange(cols.numel(), device=cols.device)
            got["values"] = back[gather_segments(segment_ptr(sent), inv)[0]]
        return got

    @property
    def values(self) -> torch.Tensor:
        """Edge values of the slice, shape (E_slice,), in its edge order (column after
        column, each in the graph's CSC order; 1.0 when the graph has none), as
        ``gs.Matrix.values`` of ``A[:, cols]``: fetched from the columns' owners (every rank
        must ask, as for any operator). A tensor computed from them is a valid ``probs``.

        Examples
        --------
        >>> sub = P[:, seeds]
        >>> s = sub.individual_sample(5, probs=sub.values.sqrt())
        """
        got = self._fetch(True)
        values = _mapped(got["values"], self._maps)
        if self._batches is None:
            return values
        run, ptr = self._batches
        return run.split_edges(values, got["deg"], ptr)

    def _same_columns(self, other: _Frontier) -> bool:
        mine, theirs = self._batches, other._batches
        if (mine is None) != (theirs is None) or (mine is not None and mine[1] != theirs[1]):
            return False
        return other.A is self.A and (
            other.cols is self.cols
            or (other.cols.shape == self.cols.shape and torch.equal(other.cols, self.cols))
        )

    # ------------------------------------------------------------------ sampling
    def individual_sample(
        self, k: int, probs=None, replace: bool = False, method: str = "cdf"
    ) -> Matrix:
        """``gs.Matrix.individual_sample`` on a partitioned graph: the single-process sample.

        Parameters
        ----------
        k : int
            Edges per column, ``>= 0``.
        probs : A[:, cols], a scalar edge map of it, or Tensor, optional
            Unnormalised probabilities: this frontier itself (the graph's edge values, as
            ``probs=sub`` on one process), a scalar edge map of it (``sub ** 2``), or a
            tensor of shape (E_slice,) aligned with the slice's edges (as ``sub.values``
            gives them). Finite, non-negative, not all zero in a column with edges (checked
            on every rank together). ``None``: uniform.
        replace : bool
            With replacement every non-empty column returns exactly ``k`` edges.
        method : {"cdf", "alias"}
            How weighted draws with replacement are made (as on one process; ``"alias"``
            needs ``replace=True`` when ``probs`` is given).

        Returns
        -------
        gs.Matrix, shape (N, C)
            On this rank's device: row space all nodes, column space ``cols``, each column's
            chosen edges (rows, edge ids, values) in the graph's order.

        Notes
        -----
        Uniform draws, and weighted ones of the owners' weights (``probs`` the frontier or
        an edge map of it) without replacement or with ``method="alias"``, are made by each
        column's owner with the single-process keys (the column's position in the frontier):
        one request, ``k`` edges per column back. Inverse-CDF draws with replacement take one
        running sum over the whole frontier (its rounding decides rare draws), and a tensor
        ``probs`` lives here: then this rank fetches the columns' degrees (and weights),
        draws exactly as one process does, and fetches the chosen edges.

        Examples
        --------
        >>> sub = P[:, seeds]
        >>> s = sub.individual_sample(10)                                    # uniform
        >>> s = sub.individual_sample(10, probs=sub)                         # by edge weight
        >>> s = sub.individual_sample(5, probs=sub ** 2, replace=True, method="alias")
        >>> s.shape == (P.num_nodes, len(seeds))
        True
        """
        run, ptr = (None, None) if self._batches is None else self._batches
        if run is not None:
            run.shared(k=k, replace=replace, method=method)
        k = V.count(k)
        replace = V.flag(replace, "replace")
        if method not in ("cdf", "alias"):
            raise ValueError(f"method: must be 'cdf' or 'alias', got {method!r}")
        if method == "alias" and probs is not None and not replace:
            raise ValueError(
                "method: 'alias' draws with replacement (replace=True); without "
                "replacement weighted draws use exponential keys (method='cdf')"
            )
        A = self.A

        def key():  # the op's key (a super-batch: each column its mini-batch's)
            return next_op_key() if run is None else run.column_keys(self.cols, ptr)

        def out(csc: CSC):
            return Matrix(csc) if run is None else run.split_matrix(csc, ptr)

        if probs is None:
            return out(_sample(A, self.cols, k, replace, key(), self._maps))
        if isinstance(probs, _Frontier):
            if not self._same_columns(probs):
                raise ValueError(
                    "probs: a probability matrix must have the same sparsity as "
                    "the matrix being sampled"
                )
            if not replace or method == "alias":  # column-local draws: by the owners
                return out(
                    _sample(A, self.cols, k, replace, key(), self._maps, probs._maps, method)
                )
            probs = probs.values  # the frontier's running sum: here
        elif isinstance(probs, (Matrix, PartitionedMatrix)):
            raise ValueError(
                "probs: on a partitioned graph, A[:, cols] itself, a scalar edge "
                "map of it (sub ** 2) or a tensor of one probability per edge "
                f"of the slice (sub.values); got {type(probs).__name__}"
            )
        if run is not None:  # one tensor per mini-batch: joined (and checked)
            probs = functools.partial(run.join_edges, probs, ptr=ptr)
        return out(_sample_here(self, k, replace, probs, method, key()))


__all__ = ["SUPPORTED", "PartitionedMatrix", "edge_balanced_bounds", "local_part"]
