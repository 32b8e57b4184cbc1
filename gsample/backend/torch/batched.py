"""Frontiers of a super-batch (N mini-batches as one block-diagonal graph of ``N * n``
nodes, node ``v`` of batch ``b`` being ``b * n + v``): the torch sampling code's helpers.

The rest of super-batching (splitting and joining values, per-batch dense code) belongs to
the runtime (``gsample.runtime.block_diagonal``), which uses these too.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from gsample.base import validate as V
from gsample.base.random import batch_ptr
from gsample.formats.csc import CSC


def frontier(cols: torch.Tensor, n: int, copies: int, name: str = "cols"):
    """Check an encoded frontier and decode it: ``(node ids, batch of each, batch ptr)``.

    As ``validate`` checks a mini-batch's frontier: ids in range. A batch's part may be
    empty (its hop reached no new node), as a mini-batch's frontier may.
    """
    cols = V.ids(cols, name, n * copies, cols.device)
    batch = cols // n
    return cols - batch * n, batch, batch_ptr(batch, copies)


def encode_columns(S: CSC, cols: torch.Tensor, n: int, copies: int) -> CSC:
    """A column slice of the graph (row space: all ``n`` nodes), as the slice of the
    block-diagonal graph at the encoded columns ``cols``: each edge's row moves to its
    column's batch, the column space becomes ``cols`` and the id space ``copies * n``."""
    if S.row_ids is not None:
        raise RuntimeError("super-batch: a column slice of a sub-matrix cannot be encoded")
    batch = torch.repeat_interleave(cols // n, S.degrees(), output_size=S.nnz)
    return replace(S, num_nodes=n * copies, rows=S.rows + batch * n, col_ids=cols)


def batch_order(ids: torch.Tensor, n: int) -> torch.Tensor:
    """``ids`` grouped by batch, keeping their order within each batch (a stable sort): a
    super-batch's ``all_nodes`` (``batches=(N, n)``)."""
    return ids[torch.argsort(ids // n, stable=True)]
