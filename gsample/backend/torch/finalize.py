"""Finalize: node and edge ids of a (sampled) matrix, and row compaction."""

from __future__ import annotations

from dataclasses import replace

import torch

from gsample.backend.registry import torch_impl
from gsample.backend.torch import layerwise_native, relabel_native
from gsample.backend.torch.batched import batch_order
from gsample.formats.csc import CSC
from gsample.formats.layouts import NAMES
from gsample.ir import Op


def _unique_rows(A: CSC, inverse: bool = False):
    """``torch.unique(A.rows, return_inverse=inverse)``; on CPU tensors by the native code
    (:func:`.layerwise_native.unique_rows`: a bitmap, no sort), the same tensors."""
    if A.rows.device.type == "cpu":
        out = layerwise_native.unique_rows(A.rows, A.num_rows, inverse)
        if out is not None:
            return out
    return torch.unique(A.rows, return_inverse=inverse)


def row(A: CSC) -> torch.Tensor:
    """Global ids of the rows holding at least one edge, in row-space order, shape (R',)."""
    return A.global_rows(_unique_rows(A))


@torch_impl(Op.COLUMN, layouts=NAMES)
def column(A: CSC) -> torch.Tensor:
    """Global ids of the columns (the frontier, repeats kept), shape (C,)."""
    return A.global_cols()


def unique_first(ids: torch.Tensor) -> torch.Tensor:
    """Unique values of ``ids`` in order of first occurrence."""
    uniq, inverse = torch.unique(ids, return_inverse=True)
    first = torch.full((uniq.numel(),), ids.numel(), dtype=torch.int64, device=ids.device)
    first.scatter_reduce_(0, inverse, torch.arange(ids.numel(), device=ids.device), "amin")
    return uniq[torch.argsort(first)]


def all_nodes(A: CSC, batches=None) -> torch.Tensor:
    """Columns first (first occurrence), then the new rows in row-space order; unique.

    ``batches`` ``(N, n)``: ``A`` is a super-batch; the ids are grouped by mini-batch.
    On CPU tensors the native code (:mod:`.relabel_native`) returns the same tensor."""
    ids = relabel_native.all_nodes(A, batches)
    if ids is not None:
        return ids
    ids = unique_first(torch.cat([column(A), row(A)]))
    return ids if batches is None else batch_order(ids, batches[1])


@torch_impl(Op.EDGES, layouts=("csc", "coo"))
def edges(A: CSC):
    """``(row ids, column ids, original edge ids)``, each shape (E,), in CSC order."""
    return A.global_rows(), A.global_cols()[A.edge_cols()], A.eid_tensor()


@torch_impl(Op.ROW_IDS, layouts=NAMES)
def row_ids(A: CSC) -> torch.Tensor:
    """Global ids of the row space, shape (R,)."""
    return A.all_row_ids()


@torch_impl(Op.COL_IDS, layouts=NAMES)
def col_ids(A: CSC) -> torch.Tensor:
    """Global ids of the column space, shape (C,)."""
    return A.global_cols()


@torch_impl(Op.COMPACT)
def compact(A: CSC) -> CSC:
    """Drop the rows without edges: the row space becomes :func:`row`."""
    local, inverse = _unique_rows(A, inverse=True)
    return replace(A, rows=inverse.reshape(-1), row_ids=A.global_rows(local))
