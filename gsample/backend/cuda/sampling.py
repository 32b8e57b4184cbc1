"""CUDA draws for individual and collective sampling (``kernels/sampling.cu``).

The host code (degrees, running sums, output layout, sorting) is the torch backend's
(:func:`gsample.backend.torch.select.select_in_columns`, :func:`~gsample.backend.torch.
select.choose_rows`); only the draws run as kernels, equal to ``select.Draws`` (same
words, same Floyd draws, same float steps rounded one by one, same binary search). The
column statistics of weighted draws with replacement (each column's largest weight and last
positive edge) are a segment reduction and a scan here, not the torch code's atomic
scatters (float64 ``amax`` atomics on a hub column's one address); the same values.
"""
from __future__ import annotations

import torch

from ...random import MASK64
from ..torch import fused_select, select
from .compute import segment_reduce
from .module import launch


def _base(key: int) -> int:
    if not isinstance(key, int):          # a super-batch's keys: the torch code's (Draws)
        raise TypeError(f"key: the CUDA draws take one op key (an int), got "
                        f"{type(key).__name__}")
    return key & MASK64


def column_max(indptr, col, w):
    """``select.Draws.column_max`` without atomics: a warp per column (``gs_seg_warp``).

    The max is exact, so the values are the scatter's; no host read-back.
    """
    top = segment_reduce(indptr, "max", w.numel(), torch.float64, x=w).squeeze(1)
    # a column of -0.0 weights: +0.0 (-0.0 + 0.0), as the CPU's scatter (its start wins;
    # the GPU's atomics give either sign, by their order)
    return top.add_(0.0)


def last_positive(indptr, col, w):
    """``select.Draws.last_positive`` from a running count (torch code, no host read-back).

    A column's last positive edge is the ``n``-th positive edge overall (``n``: those up to
    the column's end): the first edge whose running count reaches ``n``, a binary search.
    """
    # cumsum scans a 1-D tensor device-wide (CUB); cummax would scan it in one block
    seen = torch.cumsum(w > 0, 0)
    before = torch.cat([seen.new_zeros(1), seen])           # positive edges before each
    end, start = before[indptr[1:]], before[indptr[:-1]]
    return torch.where(end > start, torch.searchsorted(seen, end), -1)


class CudaDraws:
    """``select.Draws`` with the draws as kernels (one thread per draw or candidate)."""

    column_max = staticmethod(column_max)
    last_positive = staticmethod(last_positive)

    @staticmethod
    def with_replacement(cols, deg, k, key):
        out = torch.empty(cols.numel() * k, dtype=torch.int64, device=cols.device)
        launch("sampling", "gs_draw_with_replacement", out.numel(), _base(key),
               cols.contiguous(), deg.contiguous(), cols.numel(), k, out)
        return out

    @staticmethod
    def floyd(cols, deg, k, key):
        out = torch.empty(cols.numel() * k, dtype=torch.int64, device=cols.device)
        launch("sampling", "gs_floyd", cols.numel(), _base(key), _i64(cols), _i64(deg),
               cols.numel(), k, out)
        return out

    @staticmethod
    def exp_keys(col, offset, probs, key):
        out = torch.empty(col.numel(), dtype=torch.float64, device=col.device)
        launch("sampling", "gs_exp_keys", out.numel(), _base(key), _i64(col), _i64(offset),
               _f64(probs), col.numel(), out)
        return out

    @staticmethod
    def inverse_cdf(cum, before, last, cols, k, key):
        out = torch.empty(cols.numel() * k, dtype=torch.int64, device=cols.device)
        cum = _f64(cum)
        launch("sampling", "gs_inverse_cdf", out.numel(), _base(key), cum, cum.numel(),
               _f64(before), _i64(last), _i64(cols), cols.numel(), k, out)
        return out

    #: alias draws: the torch code on the device's tensors (no read-back; a gather per draw)
    alias = select.Draws.alias

    @staticmethod
    def row_keys(gid, key, probs=None):
        if probs is None:
            out = torch.empty(gid.numel(), dtype=torch.int64, device=gid.device)
            launch("sampling", "gs_row_keys", out.numel(), _base(key), _i64(gid), gid.numel(),
                   out)
        else:
            out = torch.empty(gid.numel(), dtype=torch.float64, device=gid.device)
            launch("sampling", "gs_row_exp_keys", out.numel(), _base(key), _i64(gid),
                   _f64(probs), gid.numel(), out)
        return out

    @staticmethod
    def row_draws(cand, k, key, cum=None):
        out = torch.empty(k, dtype=torch.int64, device=cand.device)
        if cum is None:
            launch("sampling", "gs_row_draws", k, _base(key), cand.numel(), k, out)
        else:
            launch("sampling", "gs_row_draws_weighted", k, _base(key), _f64(cum), cand.numel(),
                   k, out)
        return out


def _i64(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.int64).contiguous()


def _f64(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.float64).contiguous()


def hash_words(key: int, col: torch.Tensor, draw: torch.Tensor) -> torch.Tensor:
    """Device words of the hash (for tests: equal to ``random.hash_tensor``), as int64 bits."""
    out = torch.empty(col.numel(), dtype=torch.int64, device=col.device)
    launch("sampling", "gs_hash_words", col.numel(), _base(key), col.contiguous(),
           draw.contiguous(), col.numel(), out)
    return out


class BatchDraws(select.Draws):
    """A super-batch's draws: ``select.Draws`` (per-batch keys), with :class:`CudaDraws`'
    column statistics (no atomics)."""

    column_max = staticmethod(column_max)
    last_positive = staticmethod(last_positive)


def _draws(key):
    """The kernels for one op key; a super-batch's per-batch keys take the torch draws,
    with the column statistics of the kernels' (:class:`BatchDraws`)."""
    return CudaDraws if isinstance(key, int) else BatchDraws


def individual_sample(A, k, replace, key, probs=None, method="cdf", alias=None):
    """Individual sampling with every draw (uniform and weighted) as kernels."""
    return select.individual_sample(A, k, replace, key, probs, draws=_draws(key),
                                    method=method, alias=alias)


def slice_individual_sample(A, cols, k, replace, key, probs=None, method="cdf", alias=None):
    """The fused slice + individual sample, with the draws as kernels."""
    return fused_select.slice_individual_sample(A, cols, k, replace, key, probs,
                                                draws=_draws(key), method=method, alias=alias)


def collective_sample(A, k, replace, key, node_probs=None):
    """Collective sampling with the row keys / row draws as kernels."""
    return select.collective_sample(A, k, replace, key, node_probs, draws=_draws(key))


def slice_collective_sample(A, cols, k, replace, key, node_probs=None, probs_in_slice=False):
    """The fused slice + collective sample, with the row keys / row draws as kernels."""
    return fused_select.slice_collective_sample(A, cols, k, replace, key, node_probs,
                                                draws=_draws(key))
