"""Fused edge maps as generated CUDA kernels (``kernels/edge_map.cu`` + :mod:`.codegen`).

A ``FUSED_EDGE_MAP`` program that :func:`codegen.plan` supports runs as one kernel over
the edges (no intermediate tensors); anything else runs the torch backend's
:mod:`~gsample.backend.torch.fused_compute` on the CUDA tensors. ``FUSED_EDGE_MAP_REDUCE``
is the same map followed by the segment-reduce kernels (:mod:`.compute`), which add in
their own fixed order: bit-reproducible, equal to the torch backend's up to rounding.
"""

from __future__ import annotations

import numpy as np
import torch

from gsample.backend.cuda import codegen, compute
from gsample.backend.cuda.module import launch
from gsample.backend.registry import cuda_impl
from gsample.backend.torch import fused_compute
from gsample.formats.csc import CSC
from gsample.ir import Op

_NULL = np.uint64(0)


def _contiguous(t: torch.Tensor) -> torch.Tensor:
    return t if t.is_contiguous() else t.contiguous()


def run_kernel(A: CSC, kernel: codegen.EdgeMapKernel, operands: dict) -> torch.Tensor:
    """The values ``kernel`` computes on ``A``'s edges, shape (E,)."""
    out = torch.empty(A.nnz, dtype=kernel.dtype, device=A.device)
    v = _contiguous(A.values) if kernel.reads_values else _NULL
    col = A.edge_cols() if kernel.reads_cols else _NULL
    row = _contiguous(A.rows.to(torch.int64)) if kernel.reads_rows else _NULL
    ptrs = [_contiguous(operands[n]) for n in kernel.operands]
    ptrs += [_NULL] * (codegen.MAX_OPERANDS - len(ptrs))
    launch("edge_map", "gs_edge_map", A.nnz, v, col, row, A.nnz, out, *ptrs, **kernel.key)
    return out


def _on_gpu(A: CSC, program: tuple, operands: dict) -> bool:
    return A.indptr.is_cuda and all(
        operands[n].is_cuda
        for _, n, *_ in program
        if n is not None and isinstance(operands[n], torch.Tensor)
    )


def kernel_for(A: CSC, program: tuple, operands: dict):
    """The generated kernel for ``program`` on ``A``, or None (the torch code runs)."""
    if not _on_gpu(A, program, operands):
        return None
    try:
        return codegen.plan(A, program, operands)
    except codegen.Unsupported:
        return None


def _evaluate(A: CSC, program: tuple, operands: dict):
    kernel = kernel_for(A, program, operands)
    if kernel is None:
        return fused_compute._evaluate(A, program, operands)
    return run_kernel(A, kernel, operands)


@cuda_impl(Op.FUSED_EDGE_MAP)  # generated kernels
def fused_edge_map(A: CSC, program: tuple, **operands) -> CSC:
    """As :func:`fused_compute.fused_edge_map`, as one generated kernel when supported."""
    v = _evaluate(A, program, operands)
    return A if v is None else A.with_values(v)


@cuda_impl(Op.FUSED_EDGE_MAP_REDUCE)
def fused_edge_map_reduce(A: CSC, program: tuple, op: str, axis: int, **operands) -> torch.Tensor:
    """As :func:`fused_compute.fused_edge_map_reduce`: the generated map, then the
    segment-reduce kernels (:func:`.compute.reduce_values`: fixed-order, deterministic)."""
    return compute.reduce_values(A, _evaluate(A, program, operands), op, axis)
