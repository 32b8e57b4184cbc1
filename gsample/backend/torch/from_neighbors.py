"""``A.from_neighbors(cols, neighbors, values)``: a block from dense per-column neighbour lists.

Column ``j`` of the result is node ``cols[j]`` and holds the ids ``neighbors[j, :]`` that
are ``>= 0`` (``-1`` pads, anywhere), with ``values[j, :]`` as values, ordered by id within
the column as a sampled block's entries (repeats kept, in list order). The row space is
``A``'s nodes (the ids are global,
``row_ids`` None), as a column slice's; the entries are not edges of ``A``, so the block has
no edge ids of the graph (``eids`` None: its own positions). Pure torch code, one pass; the
CUDA backend runs it on the device as it is (no host read-back).
"""

from __future__ import annotations

import torch

from gsample.backend.registry import torch_impl
from gsample.formats.csc import CSC
from gsample.ir import Op


@torch_impl(Op.FROM_NEIGHBORS)
def from_neighbors(
    A: CSC, cols: torch.Tensor, neighbors: torch.Tensor, values=None, batches=None
) -> CSC:
    """The block (see the module docstring).

    Parameters
    ----------
    A : CSC
        The whole graph, ``N`` nodes (only its node count is read).
    cols : LongTensor, shape (C,)
        The columns' node ids.
    neighbors : LongTensor, shape (C, K)
        Node ids per column, ``-1`` where there is none.
    values : Tensor, shape (C, K), optional
        The entries' values.
    batches : tuple (copies, n), optional
        A super-batch's: ids ``b * n + v`` of batch ``b`` (encoded by the rewrite); the row
        space is ``copies * n``.

    Returns
    -------
    CSC
        ``C`` columns, ``(neighbors >= 0).sum()`` entries.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1])
    >>> s = from_neighbors(A.csc, seeds, torch.tensor([[3, 5], [4, -1]]))
    >>> s.indptr.tolist(), s.rows.tolist()
    ([0, 2, 3], [3, 5, 4])
    """
    num_nodes = A.num_nodes * (batches[0] if batches is not None else 1)
    keep = neighbors >= 0
    indptr = torch.zeros(cols.numel() + 1, dtype=torch.int64, device=cols.device)
    torch.cumsum(keep.sum(dim=1), 0, out=indptr[1:])
    rows = neighbors[keep].to(torch.int64)
    # within a column by row id (stable: repeats keep their list order), as every sampled
    # block's entries are
    col = torch.arange(cols.numel(), device=cols.device).unsqueeze(1).expand_as(neighbors)[keep]
    order = torch.argsort(col * num_nodes + rows, stable=True)
    return CSC(
        num_nodes=num_nodes,
        indptr=indptr,
        rows=rows[order],
        row_ids=None,
        col_ids=cols.to(torch.int64),
        values=None if values is None else values[keep][order],
        eids=None,
    )


__all__ = ["from_neighbors"]
