"""Column normalisations in one launch (``kernels/normalize.cu``): the CUDA backend's
``FUSED_EDGE_NORMALIZE``.

``X.op(X.reduce(axis=0), axis=0)`` where ``X`` is ``A``'s values or one edge broadcast of
them by a per-column or per-row vector of their dtype (LADIES: ``s.div(p[s.row_ids],
axis=1)`` normalised per column) runs as one kernel, a warp per column: the map, the
reduction in the segment-reduce kernels' tree order and the broadcast, each step the
unfused kernel's own arithmetic, so the values are the unfused ops' bits
(``gs_edge_binary``, ``gs_seg_warp``, ``gs_edge_binary``). One launch and one allocation
where the map, the reduction and the broadcast took three of each and their checks: on a
layer's small values the host work of launching is most of the cost. Anything else (a
longer program, per-row reductions, (E, F) values, mixed dtypes, more than
``compute.ONE_LAUNCH`` edges, where a hub column would be one warp's serial work) runs the
map, reduction and broadcast kernels one after the other (:func:`composed`).
"""

from __future__ import annotations

import numpy as np
import torch

from gsample.backend.cuda import compute, edge_map
from gsample.backend.cuda.module import launch
from gsample.backend.registry import cuda_impl
from gsample.formats.csc import CSC
from gsample.ir import Op

_NULL = np.uint64(0)
_FLOATS = {torch.float32: "float", torch.float64: "double"}
_NONE = -1  # GS_NORM_NONE: no map step
_AT = {0: compute.AT_COL, 1: compute.AT_ROW}  # a broadcast step's vector: per column / row


def _one_launch(A: CSC, program: tuple, reduce: str, op: str, axis: int, operands: dict):
    """``(dtype, y, ymode, mop)`` when the kernel computes it, else None."""
    v = A.values
    if (
        axis != 0
        or reduce not in compute.REDUCE_OPS
        or op not in compute.BINARY_OPS
        or len(program) > 1
        or not A.indptr.is_cuda
        or A.nnz > compute.ONE_LAUNCH
        or (v is not None and (v.dim() != 1 or v.dtype not in _FLOATS))
    ):
        return None
    if not program:
        return (v.dtype if v is not None else torch.float32), None, _NONE, 0
    mop, name, reverse, _scalar, at = program[0]
    y = operands.get(name) if name is not None else None
    if (
        at is None
        or mop not in compute.BINARY_OPS
        or reverse
        or not isinstance(y, torch.Tensor)
        or y.dim() != 1
        or y.dtype not in _FLOATS
        or y.device != A.device
        or (v is not None and v.dtype != y.dtype)
    ):
        return None
    return y.dtype, y, _AT[at], compute.BINARY_OPS[mop]


@cuda_impl(Op.FUSED_EDGE_NORMALIZE)  # kernels/normalize.cu
def fused_edge_normalize(
    A: CSC, program: tuple, reduce: str, op: str, axis: int, **operands
) -> CSC:
    """As :func:`gsample.backend.torch.fused_compute.fused_edge_normalize`, in one kernel
    where it can (see the module docstring), else :func:`composed`.

    Parameters
    ----------
    A : CSC, shape (R, C)
    program : tuple
        The map making ``X`` (empty, or steps as ``FUSED_EDGE_MAP``'s).
    reduce, op : str
        The reduction (``sum``, ``max``, ``mean``) and the broadcast op (``add``, ``sub``,
        ``mul``, ``div``).
    axis : int
    **operands : Tensor

    Returns
    -------
    CSC, shape (R, C)
        ``A`` with values ``X.op(X.reduce(axis), axis)``.

    Examples
    --------
    On a GPU, ``s`` a sampled block (a CSC) and ``p`` one value per node:

    >>> out = fused_edge_normalize(s, (("div", "0", False, None, 1),), "sum", "div", 0,
    ...                            **{"0": p[s.row_ids]})  # columns sum to 1  # doctest: +SKIP
    """
    plan = _one_launch(A, program, reduce, op, axis, operands)
    if plan is None:
        return composed(A, program, reduce, op, axis, **operands)
    dtype, y, ymode, mop = plan
    out = torch.empty(A.nnz, dtype=dtype, device=A.device)
    C = A.num_cols
    if C and A.nnz:
        v = A.values
        launch(
            "normalize",
            "gs_edge_normalize",
            C * 32,
            A.indptr.to(torch.int64).contiguous(),
            C,
            A.rows.to(torch.int64).contiguous(),
            _NULL if v is None else v.contiguous(),
            _NULL if y is None else y.contiguous(),
            ymode,
            mop,
            compute.MAX if reduce == "max" else compute.SUM,
            int(reduce == "mean"),
            compute.BINARY_OPS[op],
            out,
            dtypes=(_FLOATS[dtype],),
        )
    return A.with_values(out)


def composed(A: CSC, program: tuple, reduce: str, op: str, axis: int, **operands) -> CSC:
    """The map (the generated kernel), the segment-reduce kernels and the broadcast kernel
    (:func:`.compute.edge_broadcast`) one after the other: the unfused ops' bits."""
    v = edge_map._evaluate(A, program, operands)
    X = A if v is None else A.with_values(v)
    return compute.edge_broadcast(X, op, compute.reduce_values(A, v, reduce, axis), axis)


__all__ = ["composed", "fused_edge_normalize"]
