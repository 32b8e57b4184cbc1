"""A super-batch matrix cut into its mini-batch matrices on the GPU (``kernels/split.cu``):
the bounds of each batch in one launch, every batch's fields decoded in another, where
``gsample.runtime.block_diagonal.bounds`` and ``split_matrix`` ran about fifteen torch ops a matrix
(a super-batch of GraphSAGE [25, 10] splits two a call; each op costs the host more than
its kernel costs the GPU)."""

from __future__ import annotations

import torch

from gsample.backend.cuda.module import launch
from gsample.backend.cuda.nodewise import _opt
from gsample.formats.csc import CSC

#: items a lane of ``gs_split_decode`` decodes at once (``GS_SPLIT_ILP`` in kernels/split.cu): the
#: grid is sized by ``total / _ILP`` threads, each warp taking ``32 * _ILP`` items a round
_ILP = 4


def applies(M) -> bool:
    """Whether the kernels take ``M``: a CSC on a GPU whose index tensors are int64 and
    contiguous (anything else: the torch ops)."""
    if not isinstance(M, CSC) or not M.indptr.is_cuda:
        return False
    return all(
        t is None or (t.dtype == torch.int64 and t.dim() == 1 and t.is_contiguous())
        for t in (M.indptr, M.rows, M.row_ids, M.col_ids)
    )


def batch_bounds(M: CSC, n: int, copies: int) -> torch.Tensor:
    """Where each batch's columns, rows and edges start in ``M`` (:func:`applies`).

    Parameters
    ----------
    M : CSC
        A super-batch matrix over ``copies * n`` nodes: ids ``b * n + v``, each batch's
        columns, rows and edges one range, batches ascending.
    n : int
        Nodes per batch.
    copies : int
        Batches.

    Returns
    -------
    LongTensor, shape (3, copies + 1), on ``M``'s device
        Rows: each batch's first column, first row (in the row space; ``b * n`` where it is
        all nodes) and first edge, the last entry of each the end.

    Examples
    --------
    >>> import torch
    >>> M = CSC(num_nodes=20, indptr=torch.tensor([0, 2, 3], device="cuda"),  # doctest: +SKIP
    ...         rows=torch.tensor([1, 12, 13], device="cuda"),
    ...         col_ids=torch.tensor([4, 15], device="cuda"))
    >>> batch_bounds(M, 10, 2).tolist()  # doctest: +SKIP
    [[0, 1, 2], [0, 10, 20], [0, 2, 3]]
    """
    out = torch.empty((3, copies + 1), dtype=torch.int64, device=M.device)
    # -1: no ids (all nodes); the count, not the pointer, says so (an empty tensor's is null)
    C = -1 if M.col_ids is None else M.col_ids.numel()
    R = -1 if M.row_ids is None else M.row_ids.numel()
    launch(
        "split",
        "gs_batch_bounds",
        copies + 1,
        _opt(M.col_ids),
        C,
        _opt(M.row_ids),
        R,
        M.indptr,
        n,
        copies,
        out,
    )
    return out


def split_decode(
    M: CSC, cols: list, rows: list, edges: list, device_bounds: torch.Tensor, n: int
) -> tuple:
    """Every batch's fields of ``M`` decoded at once (:func:`applies`): ``(indptr, rows,
    col_ids, row_ids)``, each the batches' parts one after another (views of one buffer;
    None where ``M`` has none), for ``torch.split`` into the batches' views.

    Parameters
    ----------
    M : CSC
        The super-batch matrix.
    cols, rows, edges : list of int
        The host copy of :func:`batch_bounds` (``copies + 1`` entries each).
    device_bounds : LongTensor, shape (3, copies + 1)
        :func:`batch_bounds` itself.
    n : int
        Nodes per batch.

    Returns
    -------
    tuple of LongTensor
        ``indptr``, shape ``(C + copies,)``: batch ``b``'s column pointer (its
        ``cols[b + 1] - cols[b] + 1`` entries, from 0); ``rows``, shape ``(E,)``: each
        edge's row, a node id ``v`` (all nodes as rows) or its position in the batch's row
        space; ``col_ids``, shape ``(C,)`` and ``row_ids``, shape ``(R,)``: ids ``v``;
        where ``C``, ``E`` and ``R`` are the batches' columns, edges and rows.
    """
    copies = len(cols) - 1
    C, E = cols[-1] - cols[0], edges[-1] - edges[0]
    Rn = 0 if M.row_ids is None else rows[-1] - rows[0]
    P = C + copies
    total = P + E + (C if M.col_ids is not None else 0) + Rn
    out = torch.empty(total, dtype=torch.int64, device=M.device)
    launch(
        "split",
        "gs_split_decode",
        -(-total // _ILP),
        M.indptr,
        M.rows,
        _opt(M.col_ids),
        _opt(M.row_ids),
        device_bounds,
        copies,
        n,
        M.row_ids is not None,
        M.col_ids is not None,
        P,
        E,
        total,
        out,
    )
    at = P + E
    col_ids = None if M.col_ids is None else out[at : at + C]
    at += 0 if M.col_ids is None else C
    row_ids = None if M.row_ids is None else out[at : at + Rn]
    return out[:P], out[P : P + E], col_ids, row_ids


def decode_walks(walks: torch.Tensor, n: int) -> torch.Tensor:
    """A super-batch's walks decoded in one pass (``kernels/split.cu``, ``gs_decode_walks``):
    ``torch.where(walks >= 0, walks % n, walks)`` (three passes over the walks there).

    Parameters
    ----------
    walks : LongTensor, shape (W, S), contiguous, on a GPU
        Ids ``b * n + v``, ``-1`` after a stop.
    n : int
        Nodes per batch (``> 0``).

    Returns
    -------
    LongTensor, shape (W, S)
        The ids ``v``, ``-1`` kept.

    Examples
    --------
    >>> import torch
    >>> decode_walks(torch.tensor([[13, 4, -1]], device="cuda"), 10).tolist()  # doctest: +SKIP
    [[3, 4, -1]]
    """
    out = torch.empty_like(walks)
    launch("split", "gs_decode_walks", walks.numel(), walks, walks.numel(), n, out)
    return out
