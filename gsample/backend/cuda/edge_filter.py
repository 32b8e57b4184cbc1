"""``A.filter_edges(keep)`` on the GPU without reading the kept count back.

The torch reference (:mod:`gsample.backend.torch.edge_filter`) finds the kept edges with
``nonzero`` (a host synchronisation). Here each kept edge is scattered to its position
``csum[e]`` in buffers of ``E`` edges (a dropped one to a spare slot), and the result is a
:class:`~gsample.formats.bounded.BoundedCSC` whose edge count ``indptr[-1]`` stays on the
device: the same matrix once trimmed, with no kernel of its own (torch operators).
"""

from __future__ import annotations

import torch

from gsample.backend.cuda.nodewise import exact
from gsample.backend.registry import cuda_impl
from gsample.backend.torch.edge_filter import kept_indptr
from gsample.formats.bounded import BoundedCSC
from gsample.formats.csc import CSC
from gsample.ir import Op


@cuda_impl(Op.FILTER_EDGES, sync_free=True)  # a bounded result
def filter_edges(A, keep: torch.Tensor) -> BoundedCSC:
    """:func:`gsample.backend.torch.edge_filter.filter_edges`, sync-free (a bounded ``A``
    is trimmed first: one read-back, with the pending check flags, as the node-wise
    samplers do)."""
    A = exact(A)
    indptr, csum = kept_indptr(A, keep)
    E = keep.numel()
    dest = torch.where(keep, csum[:-1], E)  # dropped edges: the spare slot E

    def move(t):
        if t is None:
            return None
        buf = t.new_empty((E + 1, *t.shape[1:]))
        buf[dest] = t
        return buf[:E]

    eids = A.eids if A.eids is not None else torch.arange(E, device=keep.device)
    return BoundedCSC(
        CSC.of(A.num_nodes, indptr, move(A.rows), A.row_ids, A.col_ids, move(A.values), move(eids))
    )


__all__ = [
    "filter_edges",
]
