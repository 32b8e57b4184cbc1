"""Node-wise sampling of a partitioned graph: the exchanges behind
``A[:, cols].individual_sample`` of :mod:`gsample.distributed.partition`, and the checks that
every rank agrees on.

``A[:, cols].individual_sample(k, replace=...)`` (uniform)
    each rank sends every frontier column to its owner with the column's position in the
    frontier and the op's key (one all-to-all); the owner draws exactly what the
    single-process sampler draws for that column (the same keys: docs/architecture.md §3, the column
    position of the requesting frontier) and sends back per column its edge count, then the
    edges' rows, edge ids and values (two all-to-alls). The result is an ordinary
    ``gs.Matrix`` on the rank's device, identical to the single-process sample.
``A[:, cols].individual_sample(k, probs=..., replace=..., method=...)`` (weighted)
    ``probs`` is ``A[:, cols]`` itself (the graph's edge values), a scalar edge map of it
    (``sub ** 2``, ``2 * sub + 1``) or a tensor of one probability per edge of the slice
    (from ``sub.values``, which fetches them). Weights the owner computes itself (the first
    two) are drawn by the owner, as uniform draws are, where the draws are column-local:
    without replacement (exponential keys) and with ``method="alias"`` (alias tables of the
    column alone). Inverse-CDF draws with replacement (``method="cdf"``) are not: their
    running sum spans the whole frontier, and its float rounding decides rare draws. Those,
    and every draw with a tensor of probabilities (it lives on the requesting rank), are made
    by the requesting rank: it fetches the columns' degrees (and their weights), draws as one
    process does (``select_in_columns`` over the whole frontier) and fetches the chosen edges
    from their owners.

In a super-batch (:mod:`gsample.distributed.partition_batches`) the frontier holds N
mini-batches' columns, and each column's key (sent with the request, or used here) is its
mini-batch's, with its position within its mini-batch (``ColumnKeys``): the same exchanges,
once for the N mini-batches; inverse-CDF running sums start again at each mini-batch.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

import torch
import torch.distributed as dist

from gsample.backend.torch.compute import map_values
from gsample.backend.torch.select import select_in_columns
from gsample.base import validate as V
from gsample.base.random import ColumnKeys, signed
from gsample.distributed.comm import Route, all_to_all, group_sums
from gsample.formats.csc import CSC, gather_segments, segment_ptr

if TYPE_CHECKING:  # (both modules import this one)
    from gsample.distributed.partition import PartitionedMatrix
    from gsample.distributed.partition_frontier import Frontier


#: errors of checks that :func:`together` agrees on
_ERRORS = (ValueError, TypeError, IndexError, RuntimeError, NotImplementedError)


def together(A: PartitionedMatrix, fn):
    """``fn()`` on every rank of ``A``'s group; when it raises on some rank, every rank raises
    (a failing rank its own error, the others the first failing rank's, its rank named), so
    that no rank is left waiting in the next collective. One all-reduce when all is well."""
    try:
        out, error = fn(), None
    except _ERRORS as e:
        out, error = None, e
    failed = torch.zeros(A.world_size, dtype=torch.int64, device=A.device)
    failed[A.rank] = int(error is not None)
    dist.all_reduce(failed, group=A.group)
    if not bool(failed.any()):
        return out
    told = [None] * A.world_size
    dist.all_gather_object(
        told, None if error is None else (type(error).__name__, str(error)), group=A.group
    )
    if error is not None:
        raise error
    r = int(failed.nonzero()[0])
    name, message = told[r]
    kind = getattr(builtins, name, None)
    if not (isinstance(kind, type) and issubclass(kind, Exception)):
        kind = RuntimeError
    raise kind(f"{message} (on rank {r} of the partitioned graph's group)")


def mapped(v: torch.Tensor, maps: tuple) -> torch.Tensor:
    """Edge values ``v`` through the scalar edge maps ``maps`` (``(op, scalar, reverse)``),
    as the single-process edge-map operators compute them (elementwise: the same bits)."""
    for op, y, reverse in maps:
        v = map_values(v, None, op, reverse, y)
    return v


def check_probs(
    p, indptr: torch.Tensor, position: torch.Tensor, nodes: torch.Tensor
) -> torch.Tensor:
    """The one-process checks of edge probabilities ``p`` (one per edge of the columns
    ``indptr``; finite, non-negative, positive somewhere in every column with edges), with
    its messages; column ``c`` is named by its frontier ``position[c]`` and its node."""
    p = V.probabilities(p, "probs", int(indptr[-1]), indptr.device, "edge")
    positive = segment_ptr((p > 0).to(torch.int64))
    empty = (positive[indptr[1:]] == positive[indptr[:-1]]) & (indptr[1:] > indptr[:-1])
    if empty.numel() and bool(empty.any()):
        c = int(torch.argmax(empty.to(torch.int8)))
        raise ValueError(
            f"probs: column {int(position[c])} (node {int(nodes[c])}) has edges "
            "but all its probabilities are zero"
        )
    return p


def sample_by_owners(
    A: PartitionedMatrix,
    cols: torch.Tensor,
    k: int,
    replace: bool,
    key,
    maps: tuple = (),
    weights: tuple | None = None,
    method: str = "cdf",
) -> CSC:
    """Each column of ``cols`` drawn by its owner. ``key``: the op's key, or a super-batch's
    :class:`~gsample.base.random.ColumnKeys` (each column its mini-batch's key and its position
    within its mini-batch: :mod:`gsample.distributed.partition_batches`), which travels with
    the request; ``maps``: the frontier's edge maps (its values); ``weights``: None (uniform)
    or the edge maps making the probabilities of the graph's values (checked by the owners,
    on every rank together)."""
    dev, C, local = A.device, cols.numel(), A.local
    position = torch.arange(C, device=dev)
    if isinstance(key, ColumnKeys):
        request = torch.stack([cols, key.position, key.base], 1)
    else:
        request = torch.stack([cols, position, torch.full_like(cols, signed(key))], 1)
    route = Route(request, A.owner(cols), A.world_size, A.group)
    # the owner's part: the single-process draws of each column it was sent
    v = route.received[:, 0] - A.lo
    starts = local.indptr[v]
    deg = A._deg[v]
    keys = ColumnKeys(route.received[:, 2], route.received[:, 1], [0, v.numel()], ())
    if weights is None:
        ptr, col, offset = select_in_columns(deg, k, replace, keys)
    else:

        def draw():
            index, indptr = gather_segments(local.indptr, v)
            p = check_probs(
                mapped(local.value_tensor()[index], weights),
                indptr,
                route.received[:, 1],
                route.received[:, 0],
            )
            return select_in_columns(deg, k, replace, keys, p, method=method)

        ptr, col, offset = together(A, draw)
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
    if local.values is not None or maps:
        values = route.answer_grouped(
            mapped(local.value_tensor()[edges], maps), per_sender, per_owner
        )
    # in frontier order: column c's edges are segment inv[c] of what came back
    inv = torch.empty_like(route.order)
    inv[route.order] = position
    index, indptr = gather_segments(segment_ptr(back), inv)
    return CSC(
        A.num_nodes,
        indptr,
        got[index, 0],
        col_ids=cols,
        values=None if values is None else values[index],
        eids=got[index, 1],
    )


def sample_here(F: Frontier, k: int, replace: bool, probs, method: str, key) -> CSC:
    """Weighted draws made by the requesting rank over its whole frontier, as one process
    makes them (the columns' degrees fetched), then the chosen edges fetched. ``key``: the
    op's key or a super-batch's ``ColumnKeys`` (each mini-batch's running sum then starts at
    0, as on its own: ``select_in_columns``); ``probs``: a tensor, or a function of the
    columns' degrees giving one (checked on every rank together)."""
    A, cols, local = F.A, F.cols, F.A.local
    deg = F._fetch(False)["deg"]
    position = (
        key.position if isinstance(key, ColumnKeys) else torch.arange(cols.numel(), device=A.device)
    )

    def draw():
        p = probs(deg) if callable(probs) else probs  # (a super-batch's: joined here)
        p = check_probs(p, segment_ptr(deg), position, cols)
        return select_in_columns(deg, k, replace, key, p, method=method)

    ptr, col, offset = together(A, draw)
    nodes = cols[col]
    route = Route(torch.stack([nodes, offset], 1), A.owner(nodes), A.world_size, A.group)
    e = local.indptr[route.received[:, 0] - A.lo] + route.received[:, 1]
    got = route.answer(torch.stack([local.rows[e], local.eids[e]], 1))
    values = None
    if local.values is not None or F._maps:
        values = route.answer(mapped(local.value_tensor()[e], F._maps))
    return CSC(A.num_nodes, ptr, got[:, 0], col_ids=cols, values=values, eids=got[:, 1])
