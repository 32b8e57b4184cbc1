"""Extract-reduce fusion: ``A[:, cols].sum/max/mean(axis)`` as one op (``SLICE_REDUCE``),
and ``A[:, cols].sum()`` (``SLICE_TOTAL``).

The torch backend's reference is the unfused computation itself (the slice, then the
reduction), so the fused op returns exactly what the program it replaces returned; the CUDA
backend's kernels reduce the frontier's edges without building the slice.
"""

from __future__ import annotations

import torch

from gsample.backend.registry import torch_impl
from gsample.backend.torch import compute, extract, layerwise_native, layout_ops
from gsample.backend.torch.batched import encode_columns, frontier
from gsample.formats.layouts import to_csr
from gsample.ir import Op


@torch_impl(Op.SLICE_REDUCE)
def slice_reduce(
    A, cols: torch.Tensor, op: str, axis: int, batches=None, scale=None
) -> torch.Tensor:
    """``A[:, cols].<op>(axis)``: shape ``(len(cols),)`` for ``axis=0``, ``(R,)`` for ``axis=1``.

    With ``batches`` ``(N, n)``, ``cols`` is a super-batch's encoded frontier (ids ``b * n +
    v``) and ``A`` the graph: the reduction of the block-diagonal graph's slice (axis 1: the
    ``N * n`` encoded rows), as the unfused super-batched program computes it. ``scale``
    (the ``scaled_row_sums`` pass's): the result divided by it (:func:`divided`).
    """
    return divided(_slice_reduce(A, cols, op, axis, batches), scale, batches)


def divided(out: torch.Tensor, scale, batches=None) -> torch.Tensor:
    """``out / scale`` as the program the ``scaled_row_sums`` pass rewrote divides: one
    mini-batch's ``p / c`` (``scale`` a 0-dim tensor); a super-batch's ``(N * n,)`` rows
    each divided by its own mini-batch's scale (``scale`` shape (N,), the stack of their
    0-dim tensors; 0-dim: one for all), as ``blocks.Elementwise`` divides them: once over
    the ``(N, n)`` view where the dtypes and devices agree, else batch by batch (a 0-dim
    operand's type promotion). None: ``out`` as it is.

    Parameters
    ----------
    out : Tensor, shape (R,)
        The reduction (``R = N * n`` with ``batches``).
    scale : Tensor, shape () or (N,), or None
    batches : tuple of int, optional
        ``(N, n)``.

    Returns
    -------
    Tensor, shape (R,)
    """
    if scale is None:
        return out
    if batches is None or scale.dim() == 0:
        return out / scale
    N, n = batches
    if (
        scale.dtype == out.dtype
        and scale.device == out.device
        and out.dtype not in (torch.float16, torch.bfloat16)
        and out.numel() == N * n
    ):
        return (out.view(N, n) / scale.view(N, 1)).reshape(N * n)
    return torch.cat([out[b * n : (b + 1) * n] / scale[b] for b in range(N)])


def _slice_reduce(A, cols: torch.Tensor, op: str, axis: int, batches) -> torch.Tensor:
    if op == "sum" and axis == 1 and cols.device.type == "cpu":
        # one pass (a mini-batch at a time in a super-batch), the same sums
        out = _native_row_sum(A, cols, batches)
        if out is not None:
            return out
    if batches is None:
        S = extract.slice_cols(A, cols)
    else:
        N, n = batches
        nodes, _, _ = frontier(cols, n, N)
        S = encode_columns(extract.slice_cols(A, nodes), cols, n, N)
    if axis == 1 and S.num_rows > 4 * S.nnz:
        # per row over a row space far larger than the slice: a compact CSR is O(E), not
        # O(R), and reduces in the same order (the same bits, gsample.formats.layouts)
        S = to_csr(S, compact=True)
    return layout_ops.reduce(S, op, axis)


def _native_row_sum(A, cols: torch.Tensor, batches):
    """:func:`layerwise_native.slice_row_sum`, of each mini-batch of a super-batch (its
    ``n`` rows after the batches before it): None where the torch code must run."""
    if batches is None:
        return layerwise_native.slice_row_sum(A, cols)
    N, n = batches
    nodes, _, ptr = frontier(cols, n, N)
    parts = [layerwise_native.slice_row_sum(A, nodes[ptr[b] : ptr[b + 1]]) for b in range(N)]
    return None if any(p is None for p in parts) else torch.cat(parts)


@torch_impl(Op.SLICE_TOTAL)
def slice_total(A, cols: torch.Tensor, op: str, batches=None) -> torch.Tensor:
    """``A[:, cols].sum()``: the exact, order-free sum of the slice's edge values
    (``compute.total`` of the slice), a 0-dim tensor. With ``batches`` ``(N, n)``, ``cols`` is
    a super-batch's encoded frontier and the result each mini-batch's sum, shape (N,)."""
    if cols.device.type == "cpu":  # one native pass over the frontier's edges, no slice
        if batches is None:
            out = layerwise_native.total(A.values, A, cols)
        else:
            N, n = batches
            nodes, _, ptr = frontier(cols, n, N)
            parts = [
                layerwise_native.total(A.values, A, nodes[ptr[b] : ptr[b + 1]]) for b in range(N)
            ]
            out = None if any(x is None for x in parts) else torch.stack(parts)
        if out is not None:
            return out
    if batches is None:
        return compute.total(extract.slice_cols(A, cols), op)
    N, n = batches
    nodes, _, _ = frontier(cols, n, N)
    return compute.total(encode_columns(extract.slice_cols(A, nodes), cols, n, N), op, batches)
