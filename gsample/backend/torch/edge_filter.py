"""``A.filter_edges(keep)``: the edges a mask keeps, every column kept (possibly empty).

Edge ``e`` (in CSC order) stays when ``keep[e]``; it moves to position ``csum[e]``, the
kept edges before it, and column ``c`` then spans ``csum[indptr[c]] .. csum[indptr[c + 1]]``.
"""

from __future__ import annotations

import torch

from gsample.backend.registry import torch_impl
from gsample.formats.csc import CSC
from gsample.ir import Op


def kept_indptr(A: CSC, keep: torch.Tensor) -> tuple:
    """``(indptr, csum)``: the filtered matrix's column pointer, shape (C + 1,), and the
    kept edges before each edge, shape (E + 1,)."""
    csum = torch.zeros(keep.numel() + 1, dtype=torch.int64, device=keep.device)
    torch.cumsum(keep, 0, out=csum[1:])
    return csum[A.indptr], csum


@torch_impl(Op.FILTER_EDGES)
def filter_edges(A: CSC, keep: torch.Tensor) -> CSC:
    """``A.filter_edges(keep)``.

    Parameters
    ----------
    A : CSC
        Any matrix, shape (R, C), ``E`` edges.
    keep : BoolTensor, shape (E,)
        Which edges stay (checked).

    Returns
    -------
    CSC
        ``A``'s row and column spaces; the kept edges in their order, with their values and
        edge ids.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> sub = A[:, seeds].mul(torch.tensor([0.2, 0.6, 1.0]), axis=0)
    >>> s = gs.Matrix(filter_edges(sub.csc, sub.values > 0.5))
    >>> s.shape, s.num_edges, sub.num_edges            # column 0's one edge is dropped
    ((100, 3), 11, 12)
    """
    indptr, _ = kept_indptr(A, keep)
    return A.take_edges(torch.nonzero(keep).squeeze(1), indptr)


__all__ = ["filter_edges", "kept_indptr"]
