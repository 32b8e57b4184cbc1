"""CUDA draws for uniform individual sampling (``kernels/sampling.cu``).

The host code (degrees, output layout, sorting within a column) is the torch
backend's :func:`gsample.backend.torch.select.select_in_columns`; only the draws run
as kernels, bit-equal to ``select.Draws`` (same words, same Algorithm R slots).
"""
from __future__ import annotations

import torch

from ...random import MASK64
from ..torch import fused_select, select
from .module import launch


def _base(key: int) -> int:
    return key & MASK64


class CudaDraws:
    """``select.Draws`` with the draws as kernels (one thread per draw or candidate)."""

    @staticmethod
    def with_replacement(cols, deg, k, key):
        out = torch.empty(cols.numel() * k, dtype=torch.int64, device=cols.device)
        launch("sampling", "gs_draw_with_replacement", out.numel(), _base(key),
               cols.contiguous(), deg.contiguous(), cols.numel(), k, out)
        return out

    @staticmethod
    def reservoir(cols, extra, k, key):
        ptr = torch.zeros(cols.numel() + 1, dtype=torch.int64, device=cols.device)
        torch.cumsum(extra, 0, out=ptr[1:])
        slots = torch.arange(k, device=cols.device).repeat(cols.numel())
        launch("sampling", "gs_reservoir", max(int(ptr[-1]), 1), _base(key),
               cols.contiguous(), ptr, cols.numel(), k, slots)
        return slots


def hash_words(key: int, col: torch.Tensor, draw: torch.Tensor) -> torch.Tensor:
    """Device words of the hash (for tests: equal to ``random.hash_tensor``), as int64 bits."""
    out = torch.empty(col.numel(), dtype=torch.int64, device=col.device)
    launch("sampling", "gs_hash_words", col.numel(), _base(key), col.contiguous(),
           draw.contiguous(), col.numel(), out)
    return out


def individual_sample(A, k, replace, key, probs=None):
    """Uniform draws run as kernels; weighted sampling runs the torch code on the GPU."""
    return select.individual_sample(A, k, replace, key, probs,
                                    draws=CudaDraws if probs is None else select.Draws)


def slice_individual_sample(A, cols, k, replace, key, probs=None):
    """The fused slice + sample, with uniform draws as kernels."""
    return fused_select.slice_individual_sample(
        A, cols, k, replace, key, probs, draws=CudaDraws if probs is None else select.Draws)
