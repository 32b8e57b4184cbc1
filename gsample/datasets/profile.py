"""The in-degree profile of a graph: how many neighbours a sampler finds per node."""

from __future__ import annotations

import math

import torch

from gsample.base import validate as V
from gsample.matrix.sparse import Matrix

__all__ = ["degree_profile"]


def degree_profile(A: Matrix, fanouts=()) -> dict:
    """In-degree profile of ``A``'s columns: how many neighbours a sampler finds per node.

    Parameters
    ----------
    A : Matrix
    fanouts : iterable of int
        For each ``k``, the share of nodes with fewer than ``k`` in-neighbours (where a
        node-wise sampler of fanout ``k`` takes them all; ``k = 1``: dead ends of a walk).

    Returns
    -------
    dict
        ``nodes`` (columns), ``edges``, ``mean``, ``median``, ``p99``, ``max`` (the
        nearest-rank quantiles of the sorted degrees: the value at rank ``ceil(q n)``) and
        ``below``: ``{k: share}``.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A = gs.Matrix.from_edge_index(torch.tensor([[0, 1, 2, 2], [1, 2, 0, 1]]))
    >>> p = gs.datasets.degree_profile(A, fanouts=(2,))
    >>> p["median"], p["max"], p["below"]
    (1, 2, {2: 0.6666666666666666})
    """
    if not isinstance(A, Matrix):
        raise TypeError(f"A: expected a gsample.Matrix, got {type(A).__name__}")
    ks = []
    for k in fanouts:
        ks.append(V.count(k, "fanouts"))
    deg = A.csc.degrees()
    n, e = deg.numel(), A.num_edges
    if n == 0:
        return {
            "nodes": 0,
            "edges": e,
            "mean": None,
            "median": None,
            "p99": None,
            "max": None,
            "below": {k: None for k in ks},
        }
    s = torch.sort(deg).values
    at = [max(math.ceil(q * n) - 1, 0) for q in (0.5, 0.99)] + [n - 1]
    below = [torch.searchsorted(s, torch.tensor(ks, dtype=s.dtype, device=s.device))] if ks else []
    vals = torch.cat([s[torch.tensor(at, device=s.device)], *below]).tolist()
    return {
        "nodes": n,
        "edges": e,
        "mean": e / n,
        "median": vals[0],
        "p99": vals[1],
        "max": vals[2],
        "below": {k: v / n for k, v in zip(ks, vals[3:])},
    }
