"""Finalize: node and edge ids of a (sampled) matrix, and row compaction."""
from __future__ import annotations

from dataclasses import replace

import torch

from ...storage import CSC


def row(csc: CSC) -> torch.Tensor:
    """Global ids of the rows holding at least one edge, in row-space order, shape (R',)."""
    return csc.global_rows(torch.unique(csc.rows))


def column(csc: CSC) -> torch.Tensor:
    """Global ids of the columns (the frontier, repeats kept), shape (C,)."""
    return csc.global_cols()


def unique_first(ids: torch.Tensor) -> torch.Tensor:
    """Unique values of ``ids`` in order of first occurrence."""
    uniq, inverse = torch.unique(ids, return_inverse=True)
    first = torch.full((uniq.numel(),), ids.numel(), dtype=torch.int64, device=ids.device)
    first.scatter_reduce_(0, inverse, torch.arange(ids.numel(), device=ids.device), "amin")
    return uniq[torch.argsort(first)]


def all_nodes(csc: CSC) -> torch.Tensor:
    """Columns first (first occurrence), then the new rows in row-space order; unique."""
    return unique_first(torch.cat([column(csc), row(csc)]))


def edges(csc: CSC):
    """``(row ids, column ids, original edge ids)``, each shape (E,), in CSC order."""
    return csc.global_rows(), csc.global_cols()[csc.edge_cols()], csc.eid_tensor()


def compact(csc: CSC) -> CSC:
    """Drop the rows without edges: the row space becomes :func:`row`."""
    local, inverse = torch.unique(csc.rows, return_inverse=True)
    return replace(csc, rows=inverse.reshape(-1), row_ids=csc.global_rows(local))
