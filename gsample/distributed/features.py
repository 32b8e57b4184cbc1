"""A node feature table partitioned over the ranks by contiguous ranges of node ids.

Rank ``r`` keeps rows ``bounds[r] <= v < bounds[r + 1]`` of the table ``x`` on its device
(:class:`PartitionedFeatures`); a mini-batch's rows are read in two steps that a training loop
can time apart: :meth:`~PartitionedFeatures.request` gathers the rows this rank owns (no
communication) and sorts the others by owner, and :meth:`~PartitionedFeatures.exchange` runs
the all-to-alls (the ids to their owners, their rows back: :class:`gsample.distributed.comm.Route`)
and puts every row in place. The result is ``x[ids]``, exactly, on every rank. Every rank calls
both steps the same number of times (a rank with nothing to ask still takes part).
"""

from __future__ import annotations

import itertools
import operator
from dataclasses import dataclass

import torch
import torch.distributed as dist

from gsample.distributed.comm import Route, group_ranks


def even_bounds(num_nodes: int, world_size: int) -> list:
    """``world_size + 1`` bounds of equal ranges of ``0..num_nodes-1`` (the first ranges one
    longer when it does not divide).

    Examples
    --------
    >>> even_bounds(10, 3)
    [0, 4, 7, 10]
    """
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, int) or num_nodes < 0:
        raise ValueError(f"num_nodes: must be an int >= 0, got {num_nodes!r}")
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"world_size: must be an int >= 1, got {world_size!r}")
    q, r = divmod(num_nodes, world_size)
    out = [0]
    for i in range(world_size):
        out.append(out[-1] + q + (i < r))
    return out


@dataclass
class FeatureRequest:
    """One mini-batch's rows half read (:meth:`PartitionedFeatures.request`).

    Attributes
    ----------
    out : Tensor, shape (n, F)
        The rows, those this rank owns already in place.
    remote : LongTensor, shape (m,)
        Positions in ``out`` of the rows other ranks own.
    remote_ids : LongTensor, shape (m,)
        Their node ids.
    owner : LongTensor, shape (m,)
        Their owners' ranks.
    """

    out: torch.Tensor
    remote: torch.Tensor
    remote_ids: torch.Tensor
    owner: torch.Tensor


class PartitionedFeatures:
    """This rank's rows of a node feature table partitioned by node ranges.

    Parameters
    ----------
    local : Tensor, shape (bounds[rank + 1] - bounds[rank], F)
        The rows of this rank's nodes, on its device (a GPU under NCCL, the CPU under gloo).
    bounds : list of int
        ``world_size + 1`` non-decreasing node ids from 0 to the number of nodes
        (:func:`even_bounds`).
    group : process group, optional
        Default: the whole world (initialised first).

    Every rank makes it together (the ranks' rows are compared: one dtype, row shape and
    device type). A bad id on one rank raises there; the others then wait in
    :meth:`exchange` until the group's timeout, so check ids before (a sampler's ``n_id``
    is in range).

    Examples
    --------
    In each rank of a process group on GPUs (not run here), ``x`` the features (N, F)
    and ``batch`` a mini-batch:

    >>> bounds = even_bounds(num_nodes, world_size)  # doctest: +SKIP
    >>> local = x[bounds[rank] : bounds[rank + 1]].cuda()  # doctest: +SKIP
    >>> feats = PartitionedFeatures(local, bounds)  # doctest: +SKIP
    >>> rows = feats.gather(batch.n_id)             # == x[batch.n_id]  # doctest: +SKIP
    >>> req = feats.request(batch.n_id)             # or: the local rows ...  # doctest: +SKIP
    >>> rows = feats.exchange(req)                  # ... then the all-to-alls  # doctest: +SKIP
    """

    def __init__(self, local: torch.Tensor, bounds, group=None):
        self.rank, self.world_size = group_ranks(group)
        self.group = group
        if not isinstance(local, torch.Tensor) or local.dim() < 1:
            raise TypeError("local: expected a tensor of shape (rows, ...)")
        try:
            if any(isinstance(b, bool) for b in bounds):
                raise TypeError
            bounds = [operator.index(b) for b in bounds]
        except TypeError:
            raise TypeError(f"bounds: expected integer node ids, got {bounds!r}") from None
        if len(bounds) != self.world_size + 1 or bounds[0] != 0:
            raise ValueError(
                f"bounds: expected world_size + 1 = {self.world_size + 1} bounds from 0, "
                f"got {bounds}"
            )
        if any(a > b for a, b in itertools.pairwise(bounds)):
            raise ValueError(f"bounds: must be non-decreasing, got {bounds}")
        lo, hi = bounds[self.rank], bounds[self.rank + 1]
        if local.shape[0] != hi - lo:
            raise ValueError(
                f"local: rank {self.rank} owns nodes {lo}..{hi - 1} ({hi - lo} rows), "
                f"got {local.shape[0]} rows"
            )
        self.local, self.bounds, self.lo, self.hi = local, bounds, lo, hi
        self.num_nodes = bounds[-1]
        self._inner = torch.tensor(bounds[1:-1], dtype=torch.int64, device=local.device)
        if self.world_size > 1:  # rows of one table: a mismatch would corrupt the exchange
            mine = (str(local.dtype), tuple(local.shape[1:]), local.device.type)
            seen = [None] * self.world_size
            dist.all_gather_object(seen, mine, group=group)
            if len(set(seen)) > 1:
                raise ValueError(
                    "local: the ranks' rows differ in (dtype, row shape, device): "
                    + ", ".join(str(x) for x in seen)
                )

    def owner(self, ids: torch.Tensor) -> torch.Tensor:
        """The rank that owns each node of ``ids`` (shape of ``ids``)."""
        if self.world_size == 1:  # no inner bound to search
            return torch.zeros_like(ids, dtype=torch.int64)
        return torch.searchsorted(self._inner, ids, right=True)

    def request(self, ids: torch.Tensor) -> FeatureRequest:
        """This rank's own rows of ``ids`` gathered in place, the others sorted out for
        :meth:`exchange` (no communication).

        Parameters
        ----------
        ids : LongTensor, shape (n,)
            Node ids in ``[0, num_nodes)``, on this rank's device; repeats allowed.
        """
        if (
            not isinstance(ids, torch.Tensor)
            or ids.dim() != 1
            or ids.is_floating_point()
            or ids.is_complex()
            or ids.dtype == torch.bool
        ):
            raise TypeError("ids: expected a 1-D integer tensor of node ids")
        ids = ids.to(device=self.local.device, dtype=torch.int64)
        if ids.numel() and bool(((ids < 0) | (ids >= self.num_nodes)).any()):
            raise IndexError(f"ids: node ids must lie in [0, {self.num_nodes})")
        if self.world_size == 1:  # every row is this rank's: one gather, nothing to route
            none = ids[:0]
            return FeatureRequest(self.local.index_select(0, ids), none, none, none)
        out = self.local.new_empty((ids.numel(),) + tuple(self.local.shape[1:]))
        owner = self.owner(ids)
        mine = owner == self.rank
        here = mine.nonzero().squeeze(1)
        out[here] = self.local[ids[here] - self.lo]
        remote = (~mine).nonzero().squeeze(1)
        return FeatureRequest(out, remote, ids[remote], owner[remote])

    def exchange(self, req: FeatureRequest) -> torch.Tensor:
        """The rows of ``req`` that other ranks own, fetched (an all-to-all of the ids to
        their owners, one of the rows back) and put in place: ``x[ids]`` (shape (n, F)).
        Every rank calls it together."""
        if self.world_size == 1:  # (request gathered every row)
            return req.out
        route = Route(req.remote_ids, req.owner, self.world_size, self.group)
        asked = route.received  # ids other ranks want from this rank, all owned here
        req.out[req.remote] = route.answer(self.local[asked - self.lo])
        return req.out

    def gather(self, ids: torch.Tensor) -> torch.Tensor:
        """``x[ids]`` (shape (n, F)): :meth:`request` then :meth:`exchange` (collective)."""
        return self.exchange(self.request(ids))


__all__ = ["FeatureRequest", "PartitionedFeatures", "even_bounds"]
