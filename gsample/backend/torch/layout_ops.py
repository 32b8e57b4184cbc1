"""Ops on CSR and COO inputs (``gsample.formats.layouts``), and the conversion op ``TO_LAYOUT``.

Each function here takes a matrix in any layout the torch backend registers it for
(its ``@torch_impl`` decorations): a CSC goes to the CSC code (``compute``, ``extract``,
``finalize``), a CSR or COO to the code below. Results are bit-identical whatever the
layout, because every
per-row or per-column reduction adds the same values in the same order: a CSR keeps its
edges in CSC order within each row, which is the order the CSC code sorts them into.
Per-edge tensors in and out (edge-map operands, ``A.values``) are in CSC order.

Where a layout pays:

* CSR: per-row work (``sum(axis=1)``, ``A @ D``, ``row()``, ``A[rows, :]``, ``A.T``) needs
  no sort; a compact CSR does it in ``O(E)`` over a row space of all ``N`` nodes.
* COO: everything that needs each edge's column (``div(v, axis=0)``, SDDMM, ``edges()``,
  ``A @ D``) reads it instead of expanding the column pointer.

Ops that only look at values, rows or columns through the shared interface
(``edge_broadcast``, ``sddmm``, ``column``, ``edges``, ...) run their CSC code unchanged.
"""

from __future__ import annotations

import torch

from gsample.backend.registry import torch_impl
from gsample.backend.torch import compute, extract, finalize, fused_compute, relabel_native
from gsample.backend.torch.compute import _by_rows, _native_row_sums, _segment, _weighted
from gsample.formats.csc import CSC, gather_segments, locate, segment_ptr
from gsample.formats.layouts import COO, CSR, NAMES, Sparse, convert
from gsample.ir import Op


@torch_impl(Op.TO_LAYOUT, layouts=NAMES)
def to_layout(A: Sparse, layout: str) -> Sparse:
    """``A`` in ``layout`` (``csc``, ``csr``, ``csr-compact`` or ``coo``); exact."""
    return convert(A, layout)


def _col_counts(A: CSR) -> torch.Tensor:
    return torch.bincount(A.cols, minlength=A.num_cols)


def reduce_values(A: Sparse, v, op: str, axis: int) -> torch.Tensor:
    """``sum``/``max``/``mean`` of edge values ``v`` (``A``'s edge order; None: its own)
    per column (``axis=0``, shape (C,)) or per row (``axis=1``, shape (R,)); 0 where empty."""
    if isinstance(A, CSC):
        return fused_compute.reduce_values(A, v, op, axis)
    v = A.value_tensor() if v is None else v
    if isinstance(A, COO):
        if axis == 0:
            return _segment(v, op, A.degrees())
        if op == "sum" and v.device.type == "cpu" and v.dim() == 1:
            out = _native_row_sums(A, v)  # its edges in CSC order: one pass, no sort
            if out is not None:
                return out
        perm, lengths = _by_rows(A)
        return _segment(v[perm], op, lengths)
    if axis == 1:
        return A.scatter_rows(_segment(v, op, A.row_counts()))
    return _segment(A.to_csc_order(v), op, _col_counts(A))


@torch_impl(Op.REDUCE, layouts=NAMES)
def reduce(A: Sparse, op: str, axis: int) -> torch.Tensor:
    """``A.sum/max/mean(axis)`` on any layout (see :func:`compute.reduce`)."""
    if isinstance(A, CSC):
        return compute.reduce(A, op, axis)
    return reduce_values(A, None, op, axis)


@torch_impl(Op.SPMM, layouts=NAMES)
def spmm(A: Sparse, dense: torch.Tensor) -> torch.Tensor:
    """``A @ D`` on any layout (see :func:`compute.spmm`)."""
    if isinstance(A, CSC):
        return compute.spmm(A, dense)
    contrib = _weighted(A, dense[A.edge_cols()])
    if isinstance(A, CSR):
        return A.scatter_rows(_segment(contrib, "sum", A.row_counts()))
    perm, lengths = _by_rows(A)
    return _segment(contrib[perm], "sum", lengths)


@torch_impl(Op.SPMM_T, layouts=NAMES)
def spmm_t(A: Sparse, dense: torch.Tensor) -> torch.Tensor:
    """``A.T @ D`` on any layout (see :func:`compute.spmm_t`)."""
    if isinstance(A, CSC):
        return compute.spmm_t(A, dense)
    contrib = _weighted(A, dense[A.rows])
    if isinstance(A, CSR):
        return _segment(A.to_csc_order(contrib), "sum", _col_counts(A))
    return _segment(contrib, "sum", A.degrees())


def _edge_ordered(A: Sparse, t):
    """An edge-aligned operand (CSC order) in ``A``'s edge order; scalars unchanged."""
    if isinstance(t, torch.Tensor) and t.dim() >= 1 and not isinstance(A, CSC):
        return A.from_csc_order(t)
    return t


@torch_impl(Op.EDGE_MAP, layouts=NAMES)
def edge_map(A: Sparse, op: str, reverse: bool = False, scalar=None, other=None) -> Sparse:
    """``compute.edge_map`` on any layout: ``other`` (CSC order) follows ``A``'s edge order."""
    return compute.edge_map(A, op, reverse, scalar, _edge_ordered(A, other))


def _operands(A: Sparse, program: tuple, operands: dict) -> dict:
    per_edge = {
        name for _op, name, _rev, _scalar, axis in program if name is not None and axis is None
    }
    return {k: _edge_ordered(A, v) if k in per_edge else v for k, v in operands.items()}


@torch_impl(Op.FUSED_EDGE_MAP, layouts=NAMES)
def fused_edge_map(A: Sparse, program: tuple, **operands) -> Sparse:
    """``fused_compute.fused_edge_map`` on any layout."""
    return fused_compute.fused_edge_map(A, program, **_operands(A, program, operands))


@torch_impl(Op.FUSED_EDGE_MAP_REDUCE, layouts=NAMES)
def fused_edge_map_reduce(A: Sparse, program: tuple, op: str, axis: int, **operands):
    """``fused_compute.fused_edge_map_reduce`` on any layout."""
    v = fused_compute._evaluate(A, program, _operands(A, program, operands))
    return reduce_values(A, v, op, axis)


@torch_impl(Op.FUSED_EDGE_NORMALIZE, layouts=NAMES)
def fused_edge_normalize(
    A: Sparse, program: tuple, reduce: str, op: str, axis: int, **operands
) -> Sparse:
    """``fused_compute.fused_edge_normalize`` on any layout (its reduction as
    :func:`reduce_values`, the broadcast as the CSC code's)."""
    v = fused_compute._evaluate(A, program, _operands(A, program, operands))
    return fused_compute.normalized(A, v, reduce_values(A, v, reduce, axis), op, axis)


@torch_impl(Op.VALUES, layouts=NAMES)
def values(A: Sparse) -> torch.Tensor:
    """``A.values`` in CSC order (1.0 where the matrix has none)."""
    return A.to_csc_order(A.value_tensor()) if isinstance(A, CSR) else A.value_tensor()


@torch_impl(Op.ROW, layouts=NAMES)
def row(A: Sparse) -> torch.Tensor:
    """``A.row()``: a CSR knows its rows with edges without a sort."""
    if not isinstance(A, CSR):
        return finalize.row(A)
    if A.compact:
        return A.global_rows(A.stored_rows)
    return A.global_rows((A.row_counts() > 0).nonzero().squeeze(1))


@torch_impl(Op.ALL_NODES, layouts=NAMES)
def all_nodes(A: Sparse, batches=None) -> torch.Tensor:
    """``A.all_nodes()`` on any layout (columns first, then new rows; see
    ``finalize.all_nodes`` for ``batches``); native on CPU tensors (:mod:`.relabel_native`)."""
    ids = relabel_native.all_nodes(A, batches)
    if ids is not None:
        return ids
    ids = finalize.unique_first(torch.cat([finalize.column(A), row(A)]))
    return ids if batches is None else finalize.batch_order(ids, batches[1])


@torch_impl(Op.TRANSPOSE, layouts=NAMES)
def transpose(A: Sparse) -> CSC:
    """``A.T``: the CSR of ``A`` *is* the CSC of ``A.T`` (same within-column order)."""
    if not isinstance(A, CSR):
        return extract.transpose(A)
    return CSC(A.num_nodes, A.full_indptr(), A.cols, A.col_ids, A.row_ids, A.values, A.eid_tensor())


@torch_impl(Op.SLICE_ROWS, layouts=("csc", "csr", "csr-compact"))
def slice_rows(A: Sparse, rows: torch.Tensor, gather=gather_segments, find=locate) -> CSC:
    """``A[rows, :]`` (see :func:`extract.slice_rows`); a CSR gathers the rows' segments
    instead of searching every edge, then puts the kept edges back in CSC order.

    ``gather`` and ``find`` are :func:`storage.gather_segments` and :func:`storage.locate`
    or a backend's kernels for them (the CUDA backend passes its own)."""
    if not isinstance(A, CSR):
        return extract.slice_rows(A, rows)
    if A.row_ids is None:
        local, hit = rows, torch.ones_like(rows, dtype=torch.bool)
    else:
        local, hit = find(A.row_ids, rows)
    seg, S = local, A.indptr.numel() - 1
    if A.compact and S:
        seg = torch.searchsorted(A.stored_rows, local).clamp_(max=S - 1)
        hit = hit & (A.stored_rows[seg] == local)
    elif A.compact:
        hit = torch.zeros_like(hit)
    # a requested row without edges reads an empty segment appended at the end
    indptr = torch.cat([A.indptr, A.indptr[-1:]])
    index, ptr = gather(indptr, torch.where(hit, seg, S))
    new_rows = torch.repeat_interleave(
        torch.arange(rows.numel(), device=rows.device),
        ptr[1:] - ptr[:-1],
        output_size=index.numel(),
    )
    order = torch.argsort(A.perm[index])  # CSC positions are distinct: CSC order
    index, new_rows = index[order], new_rows[order]
    return CSC(
        num_nodes=A.num_nodes,
        indptr=segment_ptr(torch.bincount(A.cols[index], minlength=A.num_cols)),
        rows=new_rows,
        row_ids=rows,
        col_ids=A.col_ids,
        values=None if A.values is None else A.values[index],
        eids=A.eid_tensor()[index],
    )
