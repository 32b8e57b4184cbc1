"""Extract: column and row slicing, and transposition, on PyTorch tensors."""

from __future__ import annotations

from dataclasses import replace

import torch

from gsample.backend.registry import torch_impl
from gsample.formats.csc import CSC, gather_segments, locate, segment_ptr
from gsample.ir import Op


@torch_impl(Op.SLICE_COLS)
def slice_cols(A: CSC, cols: torch.Tensor) -> CSC:
    """``A[:, cols]``: columns of ``cols`` (global ids, repeats allowed) in that order.

    A node outside the matrix's column space gives an empty column.
    """
    index, new_indptr = gather_segments(*A.column_segments(cols))
    return replace(A.take_edges(index, new_indptr), col_ids=cols)


def slice_rows(A: CSC, rows: torch.Tensor) -> CSC:
    """``A[rows, :]``: keeps the edges whose row is in ``rows`` (global ids, no repeats).

    The row space of the result is ``rows`` in the given order.
    """
    csc = A
    local, hit = locate(rows, csc.global_rows())
    keep = hit.nonzero().squeeze(1)
    kept = segment_ptr(hit.to(torch.int64))
    counts = kept[csc.indptr[1:]] - kept[csc.indptr[:-1]]
    out = csc.take_edges(keep, segment_ptr(counts))
    return replace(out, rows=local[keep], row_ids=rows)


@torch_impl(Op.SLICE_ROWS_COLS)
def slice_rows_cols(A: CSC, rows: torch.Tensor, cols: torch.Tensor) -> CSC:
    """``A[rows, cols]``: ``slice_rows(slice_cols(A, cols), rows)`` (the reference of the
    fused op ``SLICE_ROWS_COLS``; its backends need not build the column slice)."""
    return slice_rows(slice_cols(A, cols), rows)


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
