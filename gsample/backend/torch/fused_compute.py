"""Fused edge maps: a chain of edge maps and broadcasts (and a reduction) in one evaluation.

``program`` is a tuple of steps ``(op, operand, reverse, scalar, axis)`` applied in order
to the edge values ``x`` (see :mod:`gsample.passes.fuse_edge_map`, which builds it):

========  =================================================================
op        ``add``, ``sub``, ``mul``, ``div``, ``pow``, or ``neg`` (unary)
operand   ``None`` (use ``scalar``), or the name (``"0"``, ``"1"``, ...) of an operand
reverse   ``x = op(y, x)`` when True, else ``x = op(x, y)``
scalar    the Python number ``y`` when ``operand`` is None (None for ``neg``)
axis      None: ``y = operand[e]`` (one value per edge, shape (E,) or (E, F));
          0: ``y = operand[col(e)]`` (one per column); 1: ``y = operand[row(e)]`` (one per row)
========  =================================================================

Every step does exactly what :func:`compute.edge_map` / :func:`compute.edge_broadcast`
would do to the intermediate matrix's values, with the same torch operator and the same
dtype rules, so results are bit-identical to the unfused chain: the first step takes
``A``'s values, or ones of the operand's floating dtype (float32 otherwise) when ``A``
has none; an integer result becomes float32; an (E,) operand meets (E, F) values as a
column. What fusion saves: no intermediate :class:`CSC`, and each broadcast vector is
gathered by edge column or row once, with the edge columns computed once.
"""

from __future__ import annotations

import torch

from gsample.backend.torch.compute import _by_rows, _native_row_sums, _segment, map_values
from gsample.formats.csc import CSC


def _evaluate(A: CSC, program: tuple, operands: dict) -> torch.Tensor | None:
    """The values after ``program`` (None for an empty program: ``A``'s own values)."""
    v, gathered, cols = None, {}, None
    for op, name, reverse, scalar, axis in program:
        if name is None:
            y = scalar
        elif axis is None:
            y = operands[name]
        else:
            y = gathered.get((name, axis))
            if y is None:
                if axis == 0 and cols is None:
                    cols = A.edge_cols()
                y = operands[name][cols if axis == 0 else A.rows]
                gathered[(name, axis)] = y
        v = map_values(v, A, op, reverse, y)
    return v


def fused_edge_map(A: CSC, program: tuple, **operands) -> CSC:
    """``A`` with values ``program(values)``: the whole chain of edge maps and broadcasts.

    Parameters
    ----------
    A : CSC
        The matrix; the result has its sparsity.
    program : tuple of (op, operand, reverse, scalar, axis)
        The steps (see the module docstring).
    **operands : Tensor
        ``"0", "1", ...``: per-edge tensors (shape (E,) or (E, F)) and broadcast
        vectors (shape (C,) for axis 0, (R,) for axis 1) the steps name.
    """
    v = _evaluate(A, program, operands)
    return A if v is None else A.with_values(v)


def fused_edge_map_reduce(A: CSC, program: tuple, op: str, axis: int, **operands) -> torch.Tensor:
    """``program`` (as :func:`fused_edge_map`), then ``sum``/``max``/``mean`` of the values
    per column (``axis=0``, shape (C,)) or per row (``axis=1``, shape (R,)); 0 where empty."""
    return reduce_values(A, _evaluate(A, program, operands), op, axis)


def fused_edge_normalize(
    A: CSC, program: tuple, reduce: str, op: str, axis: int, **operands
) -> CSC:
    """``A`` with values ``x.op(x.reduce(axis), axis)`` where ``x = program(values)``.

    Parameters
    ----------
    A : CSC, shape (R, C)
        The matrix; the result has its sparsity.
    program : tuple of (op, operand, reverse, scalar, axis)
        The steps making ``x`` (see the module docstring; empty: ``A``'s own values).
    reduce : str
        ``sum``, ``max`` or ``mean``: per column (``axis=0``) or per row (``axis=1``).
    op : str
        ``add``, ``sub``, ``mul`` or ``div``: each value with its column's (row's) reduction.
    axis : int
    **operands : Tensor
        As :func:`fused_edge_map`'s.

    Returns
    -------
    CSC, shape (R, C)
        The same bits as ``X = fused_edge_map(A, program)``, ``X.op(X.reduce(axis), axis)``
        (``X.div(X.sum(axis=0), axis=0)``: every column with edges sums to 1).
    """
    v = _evaluate(A, program, operands)
    return normalized(A, v, reduce_values(A, v, reduce, axis), op, axis)


def normalized(A, v: torch.Tensor | None, r: torch.Tensor, op: str, axis: int):
    """``A`` (any layout) with values ``op(v, r[col])`` (``axis=0``) or ``op(v, r[row])``: an
    edge broadcast of ``r`` on values ``v`` (None: ``A``'s own), as the unfused op makes it."""
    y = r[A.edge_cols()] if axis == 0 else r[A.rows]
    return A.with_values(map_values(v, A, op, False, y))


def reduce_values(A: CSC, v: torch.Tensor | None, op: str, axis: int) -> torch.Tensor:
    """The reduction of :func:`fused_edge_map_reduce` over values ``v`` on ``A``'s edges
    (None: ``A``'s own); shared with the CUDA backend, whose map is a generated kernel."""
    if v is None:
        v = A.value_tensor()
    if axis == 0:
        return _segment(v, op, A.degrees())
    if op == "sum" and v.device.type == "cpu" and v.dim() == 1:
        out = _native_row_sums(A, v)  # one pass, no sort: the same bits
        if out is not None:
            return out
    perm, lengths = _by_rows(A)
    return _segment(v[perm], op, lengths)
