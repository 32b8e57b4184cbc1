"""Extract: column and row slicing, and transposition, on PyTorch tensors."""
from __future__ import annotations

from dataclasses import replace

import torch

from ...storage import CSC, gather_segments, segment_ptr


def _locate(space: torch.Tensor, ids: torch.Tensor):
    """Position of each of ``ids`` in the duplicate-free ``space``; ``hit`` marks found ones."""
    sorted_space, order = torch.sort(space)
    pos = torch.searchsorted(sorted_space, ids).clamp_(max=max(space.numel() - 1, 0))
    if space.numel() == 0:
        return pos, torch.zeros_like(ids, dtype=torch.bool)
    hit = sorted_space[pos] == ids
    return order[pos], hit


def slice_cols(A: CSC, cols: torch.Tensor) -> CSC:
    """``A[:, cols]``: columns of ``cols`` (global ids, repeats allowed) in that order.

    A node outside the matrix's column space gives an empty column.
    """
    csc = A
    if csc.col_ids is None:
        seg = cols
        indptr = csc.indptr
    else:
        local, hit = _locate(csc.col_ids, cols)
        # misses point at an extra empty segment appended after the last column
        indptr = torch.cat([csc.indptr, csc.indptr[-1:]])
        seg = torch.where(hit, local, csc.num_cols)
    index, new_indptr = gather_segments(indptr, seg)
    out = csc.take_edges(index, new_indptr)
    return replace(out, col_ids=cols)


def slice_rows(A: CSC, rows: torch.Tensor) -> CSC:
    """``A[rows, :]``: keeps the edges whose row is in ``rows`` (global ids, no repeats).

    The row space of the result is ``rows`` in the given order.
    """
    csc = A
    local, hit = _locate(rows, csc.global_rows())
    keep = hit.nonzero().squeeze(1)
    kept = segment_ptr(hit.to(torch.int64))
    counts = kept[csc.indptr[1:]] - kept[csc.indptr[:-1]]
    out = csc.take_edges(keep, segment_ptr(counts))
    return replace(out, rows=local[keep], row_ids=rows)


def transpose(A: CSC) -> CSC:
    """``A.T``: rows become columns; the new column space is the old row space."""
    csc = A
    perm = torch.argsort(csc.rows, stable=True)
    counts = torch.bincount(csc.rows, minlength=csc.num_rows)
    return CSC(
        num_nodes=csc.num_nodes,
        indptr=segment_ptr(counts),
        rows=csc.edge_cols()[perm],
        row_ids=csc.col_ids,
        col_ids=csc.row_ids,
        values=None if csc.values is None else csc.values[perm],
        eids=perm if csc.eids is None else csc.eids[perm],
    )
