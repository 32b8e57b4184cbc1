"""CUDA draws for individual and collective sampling (``kernels/sampling.cu``,
``kernels/cdf.cu``).

The host code (degrees, output layout, sorting) is the torch backend's
(:func:`gsample.backend.torch.select.select_in_columns`, :func:`~gsample.backend.torch.
select.choose_rows`); the draws run as kernels, equal to ``select.Draws`` (same
words, same Floyd draws, same float steps rounded one by one). Each column's largest weight
(alias tables, the inverse CDF's scaling) is a segment reduction here, not the torch code's
atomic scatter (float64 ``amax`` atomics on a hub column's one address); the same values.

Weighted draws with replacement by inverse CDF are this backend's own
(:func:`weighted_with`, ``kernels/cdf.cu`` states the definition): each column's running
sum restarts at the column, in an order fixed by offsets from its start, so a mini-batch
draws the same edges alone, inside a super-batch, eager or compiled; they agree with the
torch backend's draws (one running sum over all columns) up to float rounding
(docs/architecture.md §3).
The weights are checked in the same kernels (device flags) and read back with the draws'
count: one host synchronisation a call. The backend registers ``checks=("probs",)``: every
weighted sampler here checks ``probs``' values itself (the other draws by the torch checks,
``select_in_columns``' ``nodes``), unless they came with alias tables built from checked
weights.
"""

from __future__ import annotations

import numpy as np
import torch

from gsample.backend.cuda.compute import GROUP_BLOCK, group_bound, group_pointer, segment_reduce
from gsample.backend.cuda.module import BLOCK, launch, memset
from gsample.backend.registry import cuda_impl
from gsample.backend.torch import fused_select, select
from gsample.base import validate as V
from gsample.base.random import MASK64, ColumnKeys
from gsample.formats.csc import segment_ptr
from gsample.ir import Op

_FLOATS = {torch.float32: "float", torch.float64: "double"}
_NULL = np.uint64(0)  # a null pointer argument
#: draws per column that the kernel sorts itself (a warp's lanes); more: a torch sort
_SORTED_IN_KERNEL = 32


def _base(key: int) -> int:
    if not isinstance(key, int):  # a super-batch's keys: the torch code's (Draws)
        raise TypeError(f"key: the CUDA draws take one op key (an int), got {type(key).__name__}")
    return key & MASK64


def column_max(indptr, col, w):
    """``select.Draws.column_max`` without atomics (``compute.segment_reduce``: balanced over
    a hub column's edges).

    The max is exact, so the values are the scatter's; no host read-back.
    """
    top = segment_reduce(indptr, "max", w.numel(), torch.float64, x=w).squeeze(1)
    # a column of -0.0 weights: +0.0 (-0.0 + 0.0), as the CPU's scatter (its start wins;
    # the GPU's atomics give either sign, by their order)
    return top.add_(0.0)


def weighted_with(deg, k, key, probs, nodes=None):
    """Weighted draws with replacement by inverse CDF, per column (``kernels/cdf.cu``).

    What :func:`~gsample.backend.torch.select.select_in_columns` returns for ``probs``,
    ``replace=True`` and ``method="cdf"``: each column with a positive weight draws ``k``
    edges, in ascending offset. Before the one read-back (the draws' count and the checks'
    flags): the columns' largest weights (``segment_reduce``'s max), the group pointer
    (``compute.group_pointer``), a warp per group of 1,024 edges (``gs_cdf_groups``: a hub
    spreads over the grid), a thread per column (``gs_cdf_columns``: its groups' offsets,
    the result's ``indptr``); after it, a thread per draw (``gs_cdf_draws``).

    Parameters
    ----------
    deg : LongTensor, shape (C,)
        Edges in each column (CUDA).
    k : int
        Draws per column.
    key : int or ColumnKeys
        The op's key (draw ``t`` of column ``c``: ``word(key, c, t)``), or a super-batch's
        per-column keys (``word(base[c], position[c], t)``).
    probs : Tensor, shape (sum(deg),)
        The columns' edge weights in column order.
    nodes : LongTensor, shape (C,), optional
        The columns' node ids when ``probs`` comes unchecked: then a NaN, infinite or
        negative weight, or a column with edges and no positive weight (flagged by the
        kernels), raises ``gsample.ir.checks.check_individual``'s ValueError, naming such a
        column by position and node, before anything is returned. None: the caller checked them (a
        column with no positive weight draws nothing, as in ``select_in_columns``).

    Returns
    -------
    indptr : LongTensor, shape (C + 1,)
    col, offset : LongTensor, shape (n * k,)
        ``n``: the columns with a positive weight; as ``select_in_columns``.
    """
    C, E, dev = deg.numel(), probs.numel(), deg.device
    indptr = segment_ptr(deg)
    if C == 0 or E == 0:
        return indptr, deg.new_zeros(0), deg.new_zeros(0)
    w = (probs if probs.dtype in _FLOATS else probs.double()).contiguous()
    dtypes = (_FLOATS[w.dtype],)
    colmax = segment_reduce(indptr, "max", E, w.dtype, x=w)  # exact: any order
    gptr = group_pointer(indptr, w.dtype)
    Q, blocks = group_bound(E, C), -(-C // BLOCK)
    f64 = torch.empty(E + 2 * Q + C, dtype=torch.float64, device=dev)
    local, gsum, goff, total = f64.split([E, Q, Q, C])
    i64 = torch.empty(2 + blocks + C + 1, dtype=torch.int64, device=dev)
    flags, state, optr = i64[:1], i64[1 : 2 + blocks], i64[2 + blocks :]
    memset(i64[: 2 + blocks], 0)
    launch(
        "cdf",
        "gs_cdf_groups",
        Q * 32,
        indptr,
        gptr,
        C,
        Q,
        w,
        colmax,
        local,
        gsum,
        flags,
        block=GROUP_BLOCK,
        dtypes=dtypes,
    )
    launch(
        "cdf",
        "gs_cdf_columns",
        blocks * BLOCK,
        gptr,
        C,
        k,
        gsum,
        goff,
        total,
        state,
        optr,
        flags,
        grid=blocks,
        dtypes=dtypes,
    )
    count, bad = V.read_back([optr[C:], flags])
    if bad and nodes is not None:  # the torch checks name the failure, in their order
        V.column_probs(probs, indptr, nodes, at_once=True)
    if count > select._LARGE:
        V.fits(count, 32, dev, "k", f"{count // k} columns x k = {k} draws with replacement")
    col = torch.empty(count, dtype=torch.int64, device=dev)
    offset = torch.empty(count, dtype=torch.int64, device=dev)
    if count:
        n = count // k
        W = k if k > _SORTED_IN_KERNEL else 1 << (k - 1).bit_length()  # lanes a column
        if isinstance(key, ColumnKeys):  # a super-batch: each column its batch's key
            base, cbase, cpos = 0, key.base.contiguous(), key.position.contiguous()
        else:
            base, cbase, cpos = _base(key), _NULL, _NULL
        launch(
            "cdf",
            "gs_cdf_draws",
            -(-n * W // 32) * 32,
            base,
            cbase,
            cpos,
            indptr,
            gptr,
            C,
            optr,
            k,
            W,
            n,
            local,
            goff,
            total,
            col,
            offset,
            dtypes=dtypes,
        )
        if k > _SORTED_IN_KERNEL:
            offset = torch.sort(offset.view(n, k), dim=1).values.view(-1)
    return optr, col, offset


class CudaDraws:
    """``select.Draws`` with the draws as kernels (one thread per draw or candidate), and
    weighted draws with replacement of this backend's own (:func:`weighted_with`)."""

    column_max = staticmethod(column_max)
    weighted_with = staticmethod(weighted_with)

    @staticmethod
    def with_replacement(cols, deg, k, key):
        out = torch.empty(cols.numel() * k, dtype=torch.int64, device=cols.device)
        launch(
            "sampling",
            "gs_draw_with_replacement",
            out.numel(),
            _base(key),
            cols.contiguous(),
            deg.contiguous(),
            cols.numel(),
            k,
            out,
        )
        return out

    @staticmethod
    def floyd(cols, deg, k, key):
        out = torch.empty(cols.numel() * k, dtype=torch.int64, device=cols.device)
        launch(
            "sampling",
            "gs_floyd",
            cols.numel(),
            _base(key),
            _i64(cols),
            _i64(deg),
            cols.numel(),
            k,
            out,
        )
        return out

    @staticmethod
    def exp_keys(col, offset, probs, key):
        out = torch.empty(col.numel(), dtype=torch.float64, device=col.device)
        launch(
            "sampling",
            "gs_exp_keys",
            out.numel(),
            _base(key),
            _i64(col),
            _i64(offset),
            _f64(probs),
            col.numel(),
            out,
        )
        return out

    #: alias draws: the torch code on the device's tensors (no read-back; a gather per draw)
    alias = select.Draws.alias

    @staticmethod
    def row_keys(gid, key, probs=None):
        if probs is None:
            out = torch.empty(gid.numel(), dtype=torch.int64, device=gid.device)
            launch("sampling", "gs_row_keys", out.numel(), _base(key), _i64(gid), gid.numel(), out)
        else:
            out = torch.empty(gid.numel(), dtype=torch.float64, device=gid.device)
            launch(
                "sampling",
                "gs_row_exp_keys",
                out.numel(),
                _base(key),
                _i64(gid),
                _f64(probs),
                gid.numel(),
                out,
            )
        return out

    @staticmethod
    def row_draws(cand, k, key, cum=None):
        out = torch.empty(k, dtype=torch.int64, device=cand.device)
        if cum is None:
            launch("sampling", "gs_row_draws", k, _base(key), cand.numel(), k, out)
        else:
            launch(
                "sampling", "gs_row_draws_weighted", k, _base(key), _f64(cum), cand.numel(), k, out
            )
        return out


def _i64(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.int64).contiguous()


def _f64(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.float64).contiguous()


def hash_words(key: int, col: torch.Tensor, draw: torch.Tensor) -> torch.Tensor:
    """Device words of the hash (for tests: equal to ``random.hash_tensor``), as int64 bits."""
    out = torch.empty(col.numel(), dtype=torch.int64, device=col.device)
    launch(
        "sampling",
        "gs_hash_words",
        col.numel(),
        _base(key),
        col.contiguous(),
        draw.contiguous(),
        col.numel(),
        out,
    )
    return out


class BatchDraws(select.Draws):
    """A super-batch's draws: ``select.Draws`` (per-batch keys), with :class:`CudaDraws`'
    column statistics (no atomics) and weighted draws with replacement (per-column keys:
    no loop over the batches)."""

    column_max = staticmethod(column_max)
    weighted_with = staticmethod(weighted_with)


def _draws(key):
    """The kernels for one op key; a super-batch's per-batch keys take the torch draws,
    with the column statistics and weighted draws of the kernels' (:class:`BatchDraws`)."""
    return CudaDraws if isinstance(key, int) else BatchDraws


@cuda_impl(Op.INDIVIDUAL_SAMPLE, batch_keys=True, checks=("probs",))
def individual_sample(A, k, replace, key, probs=None, method="cdf", alias=None):
    """Individual sampling with every draw (uniform and weighted) as kernels; ``probs``'
    values are checked here (with alias tables: when the tables were built)."""
    return select.individual_sample(
        A,
        k,
        replace,
        key,
        probs,
        draws=_draws(key),
        method=method,
        alias=alias,
        checked=alias is not None,
    )


@cuda_impl(Op.SLICE_INDIVIDUAL_SAMPLE, batch_keys=True, checks=("probs",))
def slice_individual_sample(A, cols, k, replace, key, probs=None, method="cdf", alias=None):
    """The fused slice + individual sample, with the draws as kernels (``probs`` as
    :func:`individual_sample`)."""
    return fused_select.slice_individual_sample(
        A,
        cols,
        k,
        replace,
        key,
        probs,
        draws=_draws(key),
        method=method,
        alias=alias,
        checked=alias is not None,
    )


@cuda_impl(Op.COLLECTIVE_SAMPLE)
def collective_sample(A, k, replace, key, node_probs=None):
    """Collective sampling with the row keys / row draws as kernels."""
    return select.collective_sample(A, k, replace, key, node_probs, draws=_draws(key))


@cuda_impl(Op.SLICE_COLLECTIVE_SAMPLE)
def slice_collective_sample(A, cols, k, replace, key, node_probs=None, probs_in_slice=False):
    """The fused slice + collective sample, with the row keys / row draws as kernels."""
    return fused_select.slice_collective_sample(
        A, cols, k, replace, key, node_probs, draws=_draws(key)
    )
