"""``A[:, cols]`` of a partitioned graph (:class:`Frontier`): what can be sampled from a frontier
whose columns live on their owners, and the error of what cannot.

:class:`gsample.distributed.partition.PartitionedMatrix` makes frontiers (``A[:, cols]``);
their draws exchange through :mod:`gsample.distributed.partition_sampling`, and in a
super-batch they carry the round's mini-batches at once
(:mod:`gsample.distributed.partition_batches`).
"""

from __future__ import annotations

import functools
import itertools
import numbers
from typing import TYPE_CHECKING

import torch

from gsample.base import validate as V
from gsample.base.random import next_op_key
from gsample.distributed.comm import Route, all_to_all, group_sums
from gsample.distributed.partition_sampling import mapped, sample_by_owners, sample_here
from gsample.formats.csc import CSC, gather_segments, segment_ptr
from gsample.matrix.sparse import EdgeMapOperators, Matrix

if TYPE_CHECKING:  # (partition.py imports this module)
    from gsample.distributed.partition import PartitionedMatrix


#: what a partitioned graph runs (the other operators' error says so)
SUPPORTED = (
    "A[:, cols].individual_sample (uniform or weighted, with or without "
    "replacement), A[:, cols].values and scalar edge maps of A[:, cols], and "
    "A.random_walk (uniform, weighted, node2vec, with stop / restart / jump)"
)


def unsupported(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"{what}: not supported on a partitioned graph (placement='partitioned' runs "
        f"{SUPPORTED}); place the graph 'replicated' or 'shared' (gsample.distributed.place) "
        "for it"
    )


class Frontier(EdgeMapOperators):
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
            raise unsupported(f"A[:, cols].{name}")
        raise AttributeError(f"'A[:, cols]' of a partitioned graph has no attribute {name!r}")

    @property
    def shape(self) -> tuple:
        if self._batches is not None:
            run, ptr = self._batches
            return run.each([(self.A.num_nodes, c1 - c0) for c0, c1 in itertools.pairwise(ptr)])
        return (self.A.num_nodes, self.cols.numel())

    # ------------------------------------------------------------------ scalar edge maps
    def _edge_map(self, op: str, other, reverse: bool = False) -> Frontier:
        if isinstance(other, bool) or not isinstance(other, numbers.Real):
            raise unsupported(
                f"other: an edge map of A[:, cols] with a "
                f"{type(other).__name__} (a Python number only)"
            )
        return Frontier(
            self.A, self.cols, self._maps + ((op, other, reverse),), self._fetched, self._batches
        )

    def _negate(self) -> Frontier:
        return Frontier(
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
        In each rank of a process group (not run here), ``P`` a partitioned graph
        (``gs.distributed.place(A, "partitioned")``) and ``seeds`` the rank's mini-batch:

        >>> sub = P[:, seeds]  # doctest: +SKIP
        >>> s = sub.individual_sample(5, probs=sub.values.sqrt())  # doctest: +SKIP
        """
        got = self._fetch(True)
        values = mapped(got["values"], self._maps)
        if self._batches is None:
            return values
        run, ptr = self._batches
        return run.split_edges(values, got["deg"], ptr)

    def _same_columns(self, other: Frontier) -> bool:
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
        In each rank of a process group (not run here), ``P`` a partitioned graph
        (``gs.distributed.place(A, "partitioned")``) and ``seeds`` the rank's mini-batch:

        >>> sub = P[:, seeds]  # doctest: +SKIP
        >>> s = sub.individual_sample(10)                         # uniform  # doctest: +SKIP
        >>> s = sub.individual_sample(10, probs=sub)       # by edge weight  # doctest: +SKIP
        >>> s = sub.individual_sample(  # doctest: +SKIP
        ...     5, probs=sub ** 2, replace=True, method="alias")
        >>> s.shape == (P.num_nodes, len(seeds))  # doctest: +SKIP
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
            return out(sample_by_owners(A, self.cols, k, replace, key(), self._maps))
        if isinstance(probs, Frontier):
            if not self._same_columns(probs):
                raise ValueError(
                    "probs: a probability matrix must have the same sparsity as "
                    "the matrix being sampled"
                )
            if not replace or method == "alias":  # column-local draws: by the owners
                return out(
                    sample_by_owners(
                        A, self.cols, k, replace, key(), self._maps, probs._maps, method
                    )
                )
            probs = probs.values  # the frontier's running sum: here
        elif isinstance(probs, (Matrix, type(A))):  # type(A): a PartitionedMatrix
            raise ValueError(
                "probs: on a partitioned graph, A[:, cols] itself, a scalar edge "
                "map of it (sub ** 2) or a tensor of one probability per edge "
                f"of the slice (sub.values); got {type(probs).__name__}"
            )
        if run is not None:  # one tensor per mini-batch: joined (and checked)
            probs = functools.partial(run.join_edges, probs, ptr=ptr)
        return out(sample_here(self, k, replace, probs, method, key()))


__all__ = ["SUPPORTED", "Frontier", "unsupported"]
