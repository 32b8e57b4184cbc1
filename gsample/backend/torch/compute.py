"""Compute: edge maps, broadcasts, reductions, SpMM and SDDMM on PyTorch tensors.

Reductions use ``torch.segment_reduce`` over sorted segments rather than atomics,
so sums are bit-reproducible run to run on a GPU: probabilities computed from them
feed samplers, and the determinism contract must hold through them.
"""

from __future__ import annotations

import torch

from gsample.backend.registry import torch_impl
from gsample.formats.csc import CSC
from gsample.formats.layouts import NAMES
from gsample.ir import Op

BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "pow": torch.pow,
}


def map_values(v, A: CSC, op: str, reverse: bool, y) -> torch.Tensor:
    """One edge-map step on a value tensor: ``op(v, y)`` (``op(y, v)`` when ``reverse``).

    ``v`` None stands for ``A``'s own values (1.0 where it has none, in ``y``'s float
    dtype or float32). ``y`` is a number or a per-edge tensor ((E,) or (E, F)); an
    integer result becomes float32. The fused evaluation applies this step by step.
    """
    if v is None:
        like = y.dtype if isinstance(y, torch.Tensor) and y.is_floating_point() else torch.float32
        v = A.value_tensor(like)
    if op == "neg":
        return -v
    if isinstance(y, torch.Tensor) and y.dim() == 2 and v.dim() == 1:
        v = v.unsqueeze(1)
    elif isinstance(y, torch.Tensor) and y.dim() == 1 and v.dim() == 2:
        y = y.unsqueeze(1)  # one value per edge, over every feature
    out = BINARY[op](y, v) if reverse else BINARY[op](v, y)
    return out if out.is_floating_point() else out.to(torch.float32)


def edge_map(A: CSC, op: str, reverse: bool = False, scalar=None, other=None) -> CSC:
    """Values ``op(values, x)`` (or ``op(x, values)`` when ``reverse``).

    ``x`` is ``other``, a tensor aligned with the edges (shape (E,) or (E, F)), or
    else the Python number ``scalar``; ``op`` is one of ``add, sub, mul, div, pow``
    or ``neg`` (unary).
    """
    return A.with_values(map_values(None, A, op, reverse, scalar if other is None else other))


@torch_impl(Op.EDGE_BROADCAST, layouts=NAMES)
def edge_broadcast(A: CSC, op: str, vector: torch.Tensor, axis: int) -> CSC:
    """Values ``op(values, vector[col])`` (``axis=0``) or ``op(values, vector[row])``
    (``axis=1``)."""
    per_edge = _rows_of(vector, A.edge_cols() if axis == 0 else A.rows)
    return edge_map(A, op, other=per_edge)


def _by_rows(csc: CSC):
    perm = torch.argsort(csc.rows, stable=True)
    lengths = torch.bincount(csc.rows, minlength=csc.num_rows)
    return perm, lengths


def _segment(data: torch.Tensor, reduce: str, lengths: torch.Tensor) -> torch.Tensor:
    if data.numel() == 0 or lengths.numel() == 0:
        return torch.zeros(
            (lengths.numel(),) + tuple(data.shape[1:]), dtype=data.dtype, device=data.device
        )
    out = torch.segment_reduce(data, reduce, lengths=lengths, axis=0)
    empty = (lengths == 0).view((-1,) + (1,) * (out.dim() - 1))
    return torch.where(empty, torch.zeros((), dtype=out.dtype, device=out.device), out)


def reduce(A: CSC, op: str, axis: int) -> torch.Tensor:
    """Per-column (``axis=0``, shape (C,)) or per-row (``axis=1``, shape (R,)) reduction.

    ``op`` is ``sum``, ``max`` or ``mean``; an empty column or row gives 0.
    """
    csc = A
    v = csc.value_tensor()
    if axis == 0:
        return _segment(v, op, csc.degrees())
    perm, lengths = _by_rows(csc)
    return _segment(v[perm], op, lengths)


@torch_impl(Op.DEGREE)
def degree(A: CSC, axis: int) -> torch.Tensor:
    """Edges per column (``axis=0``, shape (C,)) or per row (``axis=1``, shape (R,)), int64.

    No size is read back (the result's length is the matrix's), and integer adds are exact
    in any order, so the result is the same on every device and for every layout.
    """
    if axis == 0:
        return A.degrees().to(torch.int64)
    ones = torch.ones(A.nnz, dtype=torch.int64, device=A.device)
    return torch.zeros(A.num_rows, dtype=torch.int64, device=A.device).index_add_(0, A.rows, ones)


def values(A: CSC) -> torch.Tensor:
    """``A.values``: edge values, 1.0 where the matrix has none."""
    return A.value_tensor()


def _weighted(csc: CSC, dense_rows: torch.Tensor) -> torch.Tensor:
    v = csc.value_tensor(dense_rows.dtype if dense_rows.is_floating_point() else torch.float32)
    return dense_rows * (v if dense_rows.dim() == 1 else v.unsqueeze(1))


def spmm(A: CSC, dense: torch.Tensor) -> torch.Tensor:
    """``A @ D``: ``D`` has one row per column (shape (C,) or (C, F)); out (R,) or (R, F)."""
    csc = A
    contrib = _weighted(csc, dense[csc.edge_cols()])
    perm, lengths = _by_rows(csc)
    return _segment(contrib[perm], "sum", lengths)


def spmm_t(A: CSC, dense: torch.Tensor) -> torch.Tensor:
    """``A.T @ D``: ``D`` has one row per row (shape (R,) or (R, F)); out (C,) or (C, F)."""
    csc = A
    contrib = _weighted(csc, dense[csc.rows])
    return _segment(contrib, "sum", csc.degrees())


def _rows_of(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``x[index]`` (a copy of the rows ``index``): on the CPU by ``index_select``, which
    copies each row whole where advanced indexing steps element by element (several times
    slower for rows of features); the same values."""
    if x.device.type == "cpu" and x.dim() >= 1 and index.dtype == torch.int64:
        return torch.index_select(x, 0, index)
    return x[index]


@torch_impl(Op.SDDMM, layouts=NAMES)
def sddmm(A: CSC, u: torch.Tensor, v: torch.Tensor, op: str) -> CSC:
    """Edge values ``op(U[row], V[col])``; ``dot`` sums over the feature axis."""
    csc = A
    a, b = _rows_of(u, csc.rows), _rows_of(v, csc.edge_cols())
    if op == "dot":
        out = a * b if a.dim() == 1 else (a * b).sum(-1)
    else:
        out = BINARY[op](a, b)
    return csc.with_values(out)
