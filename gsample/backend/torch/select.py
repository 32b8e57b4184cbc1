"""Select: individual (node-wise) and collective (layer-wise) sampling on PyTorch tensors.

Every draw takes its random word from ``gsample.base.random.hash_tensor`` keyed by the
op's key prefix, the column's position in the frontier and a draw or edge id, so
the result depends on nothing else (docs/architecture.md §3). The algorithms, which the CUDA
backend implements identically:

individual, uniform, ``replace=False``
    A column with at most ``k`` edges keeps all of them. Otherwise Floyd's
    algorithm over its ``D`` edges, ``k`` draws whatever ``D`` is: draw ``i``
    (``0 <= i < k``) takes ``t = uniform_int(word(col, i), j + 1)`` with ``j = D - k
    + i`` and adds offset ``t``, or ``j`` when an earlier draw already added ``t``.
    Exactly uniform over k-subsets (Floyd, CACM 1987); the offsets are then sorted.
individual, uniform, ``replace=True``
    Draw ``t`` of column ``c`` takes offset ``uniform_int(word(c, t), deg)``.
individual, weighted, ``replace=False``
    Exponential keys (Efraimidis-Spirakis / A-Res): edge ``i`` gets
    ``exponential(word(c, i)) / p_i``; the ``k`` smallest keys win (ties: lower
    offset). This is the distribution of ``k`` sequential draws proportional to
    weight, each without replacement. Zero-weight edges are never chosen.
individual, weighted, ``replace=True``
    Inverse CDF (``method="cdf"``, the default): draw ``t`` finds
    ``uniform_float(word(c, t)) * total`` in the column's running sum (float64, weights
    scaled by the column's largest). Alias tables (``method="alias"``): draw ``t`` takes
    slot ``s = uniform_int(word(c, 2t), deg)`` of the column's table and keeps it when
    ``word(c, 2t + 1) >> 11 < threshold[s]``, else its alias (:mod:`.alias`: a column's
    table depends on its own weights only, so a table built on the whole graph once and
    one built on a slice per call draw the same edges). The same distribution, other
    draws; ``method="alias"`` needs ``replace=True``.
collective
    Candidates are the rows with at least one edge (and positive ``node_probs``).
    Without replacement: row ``g`` (global id) gets ``sort_key(word(0, g))`` or
    ``exponential(word(0, g)) / p_g`` and the ``k`` smallest win. With
    replacement: draw ``t`` uses ``word(0, t)`` on candidates in row-space order;
    the result keeps each drawn row once.

Selected edges keep their column's order (CSC order) in the output.

Super-batches (``gsample.passes.super_batch``): ``key`` may be a
:class:`gsample.base.random.BatchKeys`, for a matrix of the block-diagonal graph of N
mini-batches (ids ``b * n + v``, each batch's columns and rows contiguous). Every
column then draws with its batch's key and its position within its batch, collective
sampling chooses ``k`` rows per batch (a segmented top-k with each batch's row keys
``word(0, v)``), and the running sums of weighted sampling with replacement restart at
each batch: each batch's sample is bit for bit the one it would draw on its own. The
inputs are checked per batch here (the executor leaves super-batched ops to this code).

The CUDA backend draws weighted samples with replacement by its own kernels
(``Draws.weighted_with``: ``gsample.backend.cuda.sampling``): the same inverse CDF, with
running sums that restart at every column (a super-batch needs no per-batch loop); the
draws agree with these on at least 99.9% (float rounding, docs/architecture.md §3).

The algorithms are written once, over columns described only by their degrees
(:func:`select_in_columns`, :func:`choose_rows`, :func:`keep_rows`); the public
functions here apply them to a materialised matrix and ``fused_select`` applies them
to a column slice ``A[:, cols]`` that it never builds.
"""

from __future__ import annotations

from dataclasses import replace as dc_replace

import torch

from gsample.backend.registry import torch_impl
from gsample.backend.torch import alias as _alias
from gsample.backend.torch import nodewise_native
from gsample.base import validate as V
from gsample.base.random import (
    BatchKeys,
    ColumnKeys,
    batch_ptr,
    exponential,
    hash_tensor,
    sort_key,
    uniform_float,
    uniform_int,
    words,
)
from gsample.formats.csc import CSC, segment_ptr
from gsample.ir import Op
from gsample.ir.checks import NO_POSITIVE_ROW, check_individual

#: how weighted draws with replacement are made (``individual_sample``'s ``method``)
METHODS = ("cdf", "alias")

#: draws past which sampling with replacement first checks that its results fit in memory
_LARGE = 1 << 26


def _arange(n: int, like: torch.Tensor) -> torch.Tensor:
    return torch.arange(n, device=like.device)


def _segmented_smallest(keys: torch.Tensor, group: torch.Tensor, k: int) -> torch.Tensor:
    """Mask of the ``k`` smallest ``keys`` within each ``group`` (ties: earlier element)."""
    o1 = torch.argsort(keys, stable=True)
    o2 = torch.argsort(group[o1], stable=True)
    order = o1[o2]
    g = group[order]
    starts = torch.ones_like(g, dtype=torch.bool)
    starts[1:] = g[1:] != g[:-1]
    first = torch.cummax(torch.where(starts, _arange(g.numel(), g), 0), 0).values
    rank = _arange(g.numel(), g) - first
    mask = torch.zeros_like(keys, dtype=torch.bool)
    mask[order[rank < k]] = True
    return mask


def _sort_rows(x: torch.Tensor, k: int) -> torch.Tensor:
    """Sort each consecutive block of ``k`` values (one block per column)."""
    if x.numel() == 0:
        return x
    return torch.sort(x.view(-1, k), dim=1).values.reshape(-1)


# ----------------------------------------------------------------------------- individual
def _in_earlier(S: torch.Tensor, T: torch.Tensor) -> torch.Tensor:
    """``out[r, i]``: whether ``T[r, i]`` is one of ``S[r, :i]`` (shapes (n, k))."""
    k = S.shape[1]
    vals, order = torch.sort(S, dim=1, stable=True)  # equal values: earliest first
    at = torch.searchsorted(vals, T).clamp_(max=k - 1)
    return (vals.gather(1, at) == T) & (order.gather(1, at) < _arange(k, S))


def _floyd(cols, deg, k, key):
    """:meth:`Draws.floyd`, vectorised over the columns.

    Draw ``i`` is a collision when its ``t`` is among the offsets the draws before it added;
    whether it is depends only on the draws before it, so iterating ``collided -> offsets
    -> collided`` from "no collision" makes draw ``i`` exact after ``i`` rounds and stops
    at the sequential algorithm's result (the unique fixed point), usually in 1-2 rounds.
    """
    n = cols.numel()
    draw = _arange(k, cols)
    word = words(key, cols.repeat_interleave(k), draw.repeat(n)).view(n, k)
    J = (deg - k).unsqueeze(1) + draw  # j = D - k + i
    T = uniform_int(word, J + 1)
    collided = torch.zeros_like(T, dtype=torch.bool)
    while True:
        S = torch.where(collided, J, T)
        new = _in_earlier(S, T)
        if torch.equal(new, collided):
            return S
        collided = new


class Draws:
    """The random draws of sampling, as tensor code.

    A backend with kernels for them (``gsample.backend.cuda``) passes its own object with
    these methods to :func:`select_in_columns` / :func:`choose_rows`; the host code around
    them (degrees, running sums, sorting, output layout) is shared. Every method is a pure
    function of its arguments and the op key; a kernel implementation must return the
    same values (the same bits). A backend's object may also have ``weighted_with(deg, k,
    key, probs, nodes)``: weighted draws with replacement of its own, by its definition
    (:func:`select_in_columns` then hands them over whole).
    """

    @staticmethod
    def with_replacement(cols, deg, k, key):
        """Offsets drawn for ``k`` draws of each column of ``cols`` (shape (n * k,))."""
        draws = _arange(k, cols).repeat(cols.numel())
        cols = cols.repeat_interleave(k)
        return uniform_int(words(key, cols, draws), deg[cols])

    @staticmethod
    def floyd(cols, deg, k, key):
        """Floyd's draws (shape (n * k,), draw-major per column, unsorted): ``k`` distinct
        offsets of each column of ``cols`` (positions in the frontier; ``deg`` (shape (n,)):
        their edge counts, each ``> k``), see the module docstring."""
        return _floyd(cols, deg, k, key).reshape(-1)

    @staticmethod
    def exp_keys(col, offset, probs, key):
        """Exponential keys of edges: ``exponential(word(col, offset)) / probs`` (float64).

        ``col``, ``offset`` (LongTensor) and ``probs`` (any float dtype, > 0) have shape (n,).
        """
        return exponential(words(key, col, offset)) / probs.double()

    @staticmethod
    def inverse_cdf(cum, before, last, cols, k, key):
        """Inverse-CDF draws, ``k`` per column of ``cols`` (shape (n * k,), draw-major).

        Draw ``t`` of column ``c = cols[i]`` (at ``i * k + t``) takes ``u = uniform_float(
        word(c, t))``, ``target = before[c] + u * (before[c + 1] - before[c])`` and the
        first edge ``e`` with ``cum[e] > target`` (``searchsorted(right=True)``), pulled
        back to ``last[c]``, the column's last edge of positive weight.

        ``cum`` (float64, shape (nnz,)) is the running sum over all columns' edges (in
        column order) and is searched whole, as ``torch.searchsorted`` does; ``before``
        (float64, shape (C + 1,)) is its value at each column start (0 first); only columns
        with ``before[c + 1] > before[c]`` may be drawn.
        """
        total = before[1:] - before[:-1]
        rep = cols.repeat_interleave(k)
        t = _arange(k, cols).repeat(cols.numel())
        u = uniform_float(words(key, rep, t))
        e = torch.searchsorted(cum, before[rep] + u * total[rep], right=True)
        return torch.minimum(e, last[rep])

    @staticmethod
    def column_max(indptr, col, w):
        """Largest weight of each column (float64, shape (C,); 0 for an empty column).

        ``w`` (float64, ``>= 0``, shape (E,)) holds the columns' edge weights in column
        order: column ``c``'s at ``indptr[c]:indptr[c + 1]`` (``indptr`` shape (C + 1,)),
        ``col`` (shape (E,)) is each edge's column.
        """
        out = torch.zeros(indptr.numel() - 1, dtype=torch.float64, device=w.device)
        return out.scatter_reduce_(0, col, w, "amax")

    #: alias draws (:func:`.alias.draw_with_replacement`): ``alias(cols, deg, k, key, start,
    #: threshold, alias)``, offsets shape (n * k,), draw-major per column
    alias = staticmethod(_alias.draw_with_replacement)

    @staticmethod
    def row_keys(gid, key, probs=None):
        """Keys of candidate rows of global ids ``gid`` (the ``k`` smallest win).

        Uniform: ``sort_key(word(0, gid))`` (int64); weighted: ``exponential(word(0, gid))
        / probs`` (float64; ``probs`` aligned with ``gid``, > 0). ``key`` may also be a
        LongTensor of key prefixes aligned with ``gid`` (a super-batch: each row's batch).
        """
        word = hash_tensor(key, torch.zeros_like(gid), gid)
        return sort_key(word) if probs is None else exponential(word) / probs.double()

    @staticmethod
    def row_draws(cand, k, key, cum=None):
        """Positions in ``cand`` (shape (k,)) of ``k`` draws with replacement.

        Draw ``t`` uses ``word(0, t)``: uniform ``uniform_int(word, n)``; weighted (``cum``:
        float64 running sum of the candidates' weights, shape (n,)) the first ``i`` with
        ``cum[i] > uniform_float(word) * cum[-1]``, at most ``n - 1``.
        """
        n = cand.numel()
        t = _arange(k, cand)
        word = hash_tensor(key, torch.zeros_like(t), t)
        if cum is None:
            return uniform_int(word, n)
        idx = torch.searchsorted(cum, uniform_float(word) * cum[-1], right=True)
        return idx.clamp_(max=n - 1)


def select_in_columns(
    deg: torch.Tensor,
    k: int,
    replace: bool,
    key: int,
    probs: torch.Tensor | None = None,
    draws=Draws,
    method: str = "cdf",
    table: tuple | None = None,
    nodes: torch.Tensor | None = None,
):
    """Individual sampling over ``C`` columns known by their degrees alone.

    Parameters
    ----------
    deg : LongTensor, shape (C,)
        Edges in each column; column ``c`` is the ``c``-th of the frontier (its position
        keys its draws).
    k, replace, key
        As :func:`individual_sample`; ``key`` may also be a super-batch's
        :class:`gsample.base.random.ColumnKeys` (each column its batch's key and position).
    probs : Tensor, shape (sum(deg),), optional
        Weights of the columns' edges, concatenated in column order (the edge order of
        the column slice). Uniform sampling never needs the edges themselves.
    draws : object with the methods of :class:`Draws`
        Who makes the draws (:class:`Draws`: tensor code; or a backend's kernels).
    method : {"cdf", "alias"}
        How weighted draws with replacement are made (the module docstring).
    table : tuple of LongTensor, optional
        ``method="alias"``: the columns' alias tables in local form (:func:`.alias.local`:
        thresholds and offsets, shape (sum(deg),) each), when built beforehand (offline);
        None builds them here from ``probs`` (online).
    nodes : LongTensor, shape (C,), optional
        The columns' node ids when ``probs`` comes unchecked: its values are checked here,
        before any draw (finite, non-negative, a positive one in every column with edges;
        ``gsample.ir.checks.check_individual``'s errors, a bad column named by position and
        node).
        None: the caller checked them.

    Weighted draws with replacement (``method="cdf"``) go to ``draws.weighted_with(deg, k,
    key, probs, nodes)`` when the draws have it (the CUDA backend's kernels: per-column
    running sums, the checks as device flags, one read-back); it returns what this does.

    Returns
    -------
    indptr : LongTensor, shape (C + 1,)
        Selected edges per column, as an ``indptr``.
    col, offset : LongTensor, shape (n,)
        Each selected edge's column and offset within that column, in CSC order.
    """
    C = deg.numel()
    alias = _method(method, replace, probs)
    weighted_with = getattr(draws, "weighted_with", None)
    if probs is not None and replace and not alias and weighted_with is not None:
        return weighted_with(deg, k, key, probs, nodes)
    if probs is not None and nodes is not None:
        V.column_probs(probs, segment_ptr(deg), nodes)
    nnz = int(deg.sum()) if C else 0
    if k == 0 or nnz == 0:
        empty = deg.new_zeros(0)
        return segment_ptr(torch.zeros_like(deg)), empty, empty
    if replace and C * k > _LARGE:  # the bound first: the exact count costs a sync
        n = int((deg > 0).sum())
        V.fits(n * k, 32, deg.device, "k", f"{n} columns x k = {k} draws with replacement")
    if alias:
        return _alias_with(deg, k, key, probs, draws, table)
    if probs is not None and replace and isinstance(key, ColumnKeys):
        return _weighted_with_per_batch(deg, k, key, probs, draws)
    if probs is None and not replace:
        return _uniform_without(deg, k, key, draws)
    if probs is None:
        return _uniform_with(deg, k, key, draws)
    indptr = segment_ptr(deg)
    col = torch.repeat_interleave(_arange(C, deg), deg, output_size=nnz)
    offset = _arange(nnz, deg) - indptr[col]
    if not replace:
        mask = _weighted_without(indptr, col, offset, probs, k, key, draws)
        kept = segment_ptr(mask.to(torch.int64))
        sel = mask.nonzero().squeeze(1)
        return segment_ptr(kept[indptr[1:]] - kept[indptr[:-1]]), col[sel], offset[sel]
    e, cols = _weighted_with(indptr, col, probs, k, key, draws)
    return segment_ptr(torch.bincount(cols, minlength=C)), col[e], offset[e]


def _weighted_with_per_batch(deg, k, key: ColumnKeys, probs, draws):
    # the inverse CDF searches one running sum over the columns: a batch's sum must start
    # at 0, as on its own, or its float rounding (and a rare draw) would differ
    # each batch's first edge: copies + 1 values to the host, not the whole column pointer
    first = segment_ptr(deg)[torch.tensor(key.ptr, device=deg.device)].tolist()
    parts = []
    for b, (c0, c1) in enumerate(zip(key.ptr[:-1], key.ptr[1:])):
        ptr, col, offset = select_in_columns(
            deg[c0:c1], k, True, key.keys[b], probs[first[b] : first[b + 1]], draws
        )
        parts.append((ptr, col + c0, offset))
    counts = torch.cat([p[1:] - p[:-1] for p, _, _ in parts])
    return (
        segment_ptr(counts),
        torch.cat([c for _, c, _ in parts]),
        torch.cat([o for _, _, o in parts]),
    )


@torch_impl(Op.INDIVIDUAL_SAMPLE)
def individual_sample(
    A: CSC,
    k: int,
    replace: bool,
    key: int,
    probs: torch.Tensor | None = None,
    draws=Draws,
    method: str = "cdf",
    alias: torch.Tensor | None = None,
    checked: bool = True,
) -> CSC:
    """``k`` edges per column; see the module docstring for the exact algorithms.

    ``alias``: with ``method="alias"``, ``A``'s alias tables (the ``alias_table`` op's value
    for ``probs``), else built here. ``checked=False``: ``probs``' values come unchecked (a
    backend that registers ``checks=("probs",)``) and are checked with the draws."""
    csc = A
    native = (
        draws is Draws
        and method in METHODS
        and A.indptr.device.type == "cpu"
        and nodewise_native.enabled()
    )
    if isinstance(key, BatchKeys):  # a super-batch: per-column keys, weights checked here
        probs = check_individual(csc, probs=probs, in_kernel=("probs",)).get("probs", probs)
        checked = False
        if native and probs is not None and replace and method == "cdf":
            # checked before any draw, as select_in_columns checks them (``nodes``), so that
            # the native code takes the super-batch's weighted draws (all batches in one pass,
            # not a Python loop of tensor code per mini-batch: _weighted_with_per_batch)
            V.column_probs(probs, segment_ptr(csc.degrees()), csc.global_cols())
            checked = True
    if native:  # CPU tensors: native code where it takes the inputs (nodewise_native), same bits
        out = nodewise_native.individual_sample(A, k, replace, key, probs, method, checked)
        if out is not None:
            return out
    if isinstance(key, BatchKeys):
        key = key.columns(csc.global_cols())
    deg = csc.degrees()
    table = None
    if alias is not None and _method(method, replace, probs):
        table = _alias.local(
            alias,
            torch.arange(csc.nnz, device=deg.device),
            csc.indptr[:-1].repeat_interleave(deg, output_size=csc.nnz),
        )
    nodes = None if checked or probs is None else csc.global_cols()
    indptr, col, offset = select_in_columns(
        deg, k, replace, key, probs, draws, method, table, nodes
    )
    return csc.take_edges(csc.indptr[col] + offset, indptr)


def _method(method: str, replace: bool, probs) -> bool:
    """Whether the draws use alias tables (``method``, checked: "alias" needs ``replace``)."""
    if method not in METHODS:
        raise ValueError(f"method: must be one of {METHODS}, got {method!r}")
    if method == "alias" and probs is not None and not replace:
        raise ValueError(
            "method: 'alias' draws with replacement (replace=True); without "
            "replacement weighted draws use exponential keys (method='cdf')"
        )
    return method == "alias" and probs is not None


def _alias_with(deg, k, key, probs, draws, table):
    # O(k) per column, as uniform draws, plus one coin each (the module docstring)
    if table is None:
        table = _alias.alias_columns(deg, probs, draws.column_max)
    threshold, alias = table
    nz = torch.nonzero(deg > 0).squeeze(1)
    start = segment_ptr(deg)[:-1]
    off = draws.alias(nz, deg, k, key, start, threshold, alias)
    counts = torch.where(deg > 0, k, 0)
    return segment_ptr(counts), nz.repeat_interleave(k), _sort_rows(off, k)


def _uniform_without(deg, k, key, draws):
    # columns with at most k edges keep them all; the others k of Floyd's draws
    C = deg.numel()
    counts = torch.clamp(deg, max=k)
    indptr = segment_ptr(counts)
    total = int(indptr[-1])
    col = torch.repeat_interleave(_arange(C, deg), counts, output_size=total)
    offset = _arange(total, deg) - indptr[col]
    big = deg > k
    bc = big.nonzero().squeeze(1)
    if bc.numel():
        offset[big[col]] = _sort_rows(draws.floyd(bc, deg[bc], k, key), k)
    return indptr, col, offset


def _uniform_with(deg, k, key, draws):
    # O(k) per column: draw t of column c takes offset uniform_int(word(c, t), deg[c])
    nz = torch.nonzero(deg > 0).squeeze(1)
    off = draws.with_replacement(nz, deg, k, key)
    counts = torch.where(deg > 0, k, 0)
    return segment_ptr(counts), nz.repeat_interleave(k), _sort_rows(off, k)


def _weighted_without(indptr, col, offset, probs, k, key, draws=Draws) -> torch.Tensor:
    """Mask of the edges kept: exponential keys, the k smallest per column win."""
    positive = probs > 0
    npos = segment_ptr(positive.to(torch.int64))
    npos = npos[indptr[1:]] - npos[indptr[:-1]]
    full = (npos <= k)[col]
    mask = positive & full
    need = (positive & ~full).nonzero().squeeze(1)
    if need.numel():
        keys = draws.exp_keys(col[need], offset[need], probs[need], key)
        mask[need[_segmented_smallest(keys, col[need], k)]] = True
    return mask


def _weighted_with(indptr, col, probs, k, key, draws=Draws):
    """Drawn edges (ascending positions) and their columns: inverse CDF per column."""
    # Scale each column by its largest weight (exact, order-free) before the running sum,
    # so one column's weights are never rounded against the totals of the columns before it.
    w = probs.to(torch.float64)
    colmax = draws.column_max(indptr, col, w)
    w = w / colmax[col].clamp_min(torch.finfo(torch.float64).tiny)
    cum = torch.cumsum(w, 0)
    before = torch.cat([cum.new_zeros(1), cum])[indptr]  # running sum at each column start
    total = before[1:] - before[:-1]
    drawn = torch.nonzero(total > 0).squeeze(1)
    # float rounding may step past a column's last positive edge; draws pull it back to last
    # (of the scaled weights: a tiny weight may scale to 0)
    last = torch.full((indptr.numel() - 1,), -1, dtype=torch.int64, device=w.device)
    pos = (w > 0).nonzero().squeeze(1)
    last.scatter_reduce_(0, col[pos], pos, "amax")
    e = draws.inverse_cdf(cum, before, last, drawn, k, key)
    e, order = torch.sort(e, stable=True)
    return e, drawn.repeat_interleave(k)[order]


# ----------------------------------------------------------------------------- collective
def smallest_k(keys: torch.Tensor, k: int) -> torch.Tensor:
    """The mask of the ``k`` smallest ``keys``, ties taken in position order: the positions
    ``torch.argsort(keys, stable=True)[:k]`` lists, found by a selection (``kthvalue``,
    linear on the CPU) instead of a sort.

    Parameters
    ----------
    keys : Tensor, shape (n,)
        No NaN; ``0 < k < n``.

    Returns
    -------
    BoolTensor, shape (n,)
        True at exactly ``k`` positions.

    Examples
    --------
    >>> import torch
    >>> smallest_k(torch.tensor([3.0, 1.0, 2.0, 1.0]), 2)
    tensor([False,  True, False,  True])
    """
    kth = torch.kthvalue(keys, k).values
    below = keys < kth
    tied = keys == kth
    need = k - below.sum()
    return below | (tied & (torch.cumsum(tied, 0) <= need))


def _draws_fit(k: int, replace: bool, copies: int, device) -> None:
    """Static, before the allocator fails on them: ``copies`` mini-batches' ``k`` row draws
    with replacement fit in ``device``'s memory (``V.fits``, naming ``k``)."""
    if replace and k > _LARGE:
        what = (f"{copies} mini-batches x " if copies > 1 else "") + f"k = {k} row draws"
        V.fits(copies * k, 32, device, "k", what + " with replacement")


def choose_rows(
    rows: torch.Tensor,
    num_rows: int,
    global_rows,
    k: int,
    replace: bool,
    key: int,
    node_probs: torch.Tensor | None = None,
    draws=Draws,
) -> torch.Tensor:
    """The local rows (ascending) collective sampling keeps.

    ``rows`` (shape (E,)) are the local rows of the matrix's edges, in any order;
    ``global_rows(local)`` maps local rows to global ids (the keys of their draws);
    ``draws`` makes the draws (:class:`Draws` or a backend's kernels). With
    :class:`BatchKeys` (a super-batch), ``k`` rows per batch (:func:`_choose_rows_batched`).
    """
    if isinstance(key, BatchKeys):
        _draws_fit(k, replace, key.copies, rows.device)
        return _choose_rows_batched(rows, num_rows, global_rows, k, replace, key, node_probs, draws)
    has = torch.zeros(num_rows, dtype=torch.bool, device=rows.device)
    has[rows] = True
    if node_probs is not None:
        has &= node_probs > 0
    cand = has.nonzero().squeeze(1)
    return choose_among(cand, rows.numel(), global_rows, k, replace, key, node_probs, draws)


def choose_among(
    cand: torch.Tensor,
    num_edges: int,
    global_rows,
    k: int,
    replace: bool,
    key: int,
    node_probs: torch.Tensor | None = None,
    draws=Draws,
    cand_probs: torch.Tensor | None = None,
) -> torch.Tensor:
    """:func:`choose_rows`'s draw (one mini-batch's key) among its candidates ``cand``: the
    local rows (ascending, distinct) holding one of the matrix's ``num_edges`` edges, with
    ``node_probs > 0`` when given. A caller that lists them its own way (the native CPU
    passes) draws the same rows; one that has the probabilities at the candidates only
    (``node_probs[cand]``, listed) gives them as ``cand_probs``."""
    _draws_fit(k, replace, 1, cand.device)
    n = cand.numel()
    if cand_probs is None and node_probs is not None:
        cand_probs = node_probs[cand]
    if n == 0 and cand_probs is not None and num_edges:
        raise ValueError(NO_POSITIVE_ROW)  # before any draw (the fused op's check)
    if k == 0 or n == 0:
        return cand[:0]
    if not replace:
        if n <= k:
            return cand
        keys = draws.row_keys(global_rows(cand).to(torch.int64), key, cand_probs)
        if keys.device.type == "cpu":  # a selection, not a sort of every candidate
            return cand[smallest_k(keys, k)]
        return torch.sort(cand[torch.argsort(keys, stable=True)[:k]]).values
    cum = None if cand_probs is None else torch.cumsum(cand_probs.double(), 0)
    return torch.unique(cand[draws.row_draws(cand, k, key, cum)])


def _choose_rows_batched(
    rows, num_rows, global_rows, k, replace, key: BatchKeys, node_probs, draws
):
    """:func:`choose_rows` of every batch of a super-batch at once (ascending local rows).

    Candidates are grouped by batch (the row space is); batch ``b``'s rows draw with
    ``keys[b]`` and their node ids, so each batch keeps the rows it keeps on its own.
    """
    has = torch.zeros(num_rows, dtype=torch.bool, device=rows.device)
    has[rows] = True
    n, copies = key.num_nodes, key.copies
    if node_probs is not None:
        # per batch, as each mini-batch checks its own: some row with edges must be positive
        with_edges = (
            torch.bincount(global_rows(has.nonzero().squeeze(1)) // n, minlength=copies) > 0
        )
        has &= node_probs > 0
    cand = has.nonzero().squeeze(1)
    gid = global_rows(cand).to(torch.int64)
    batch = gid // n
    ptr = batch_ptr(batch, copies)
    if node_probs is not None:
        counts = torch.tensor([ptr[b + 1] - ptr[b] for b in range(copies)], device=rows.device)
        if bool((with_edges & (counts == 0)).any()):
            raise ValueError(NO_POSITIVE_ROW)
    if k == 0 or cand.numel() == 0:
        return cand[:0]
    probs = None if node_probs is None else node_probs[cand]
    if not replace:  # on the CPU, a sort per batch is cheaper than two over them all
        top_k = _top_k_batch_by_batch if cand.device.type == "cpu" else _top_k_segmented
        return top_k(cand, gid, batch, ptr, k, key, probs, draws)
    if node_probs is None:  # uniform: all batches' draws at once (as row_draws per batch)
        live = [b for b in range(copies) if ptr[b + 1] > ptr[b]]
        per = torch.tensor([[ptr[b], ptr[b + 1] - ptr[b]] for b in live], device=cand.device)
        start, size = per.repeat_interleave(k, dim=0).unbind(1)
        base = key.bases(cand.device)[per.new_tensor(live)].repeat_interleave(k)
        t = _arange(k, cand).repeat(len(live))
        word = hash_tensor(base, torch.zeros_like(t), t)
        # batches hold ascending, disjoint rows: one unique is each batch's, concatenated
        return torch.unique(cand[start + uniform_int(word, size)])
    parts = []
    for b in range(copies):  # draw t of batch b: word(0, t) of its key
        cb = cand[ptr[b] : ptr[b + 1]]
        if cb.numel():
            cum = torch.cumsum(node_probs[cb].double(), 0)  # a running sum per batch
            parts.append(torch.unique(cb[draws.row_draws(cb, k, key.keys[b], cum)]))
    return torch.cat(parts) if parts else cand[:0]


def _top_k_segmented(cand, gid, batch, ptr, k, key: BatchKeys, probs, draws):
    """The ``k`` rows of smallest key of each batch, by one segmented sort (ascending)."""
    n = key.num_nodes
    keys = draws.row_keys(gid - batch * n, key.bases(cand.device)[batch], probs)
    return cand[_segmented_smallest(keys, batch, k)]


def _top_k_batch_by_batch(cand, gid, batch, ptr, k, key: BatchKeys, probs, draws):
    """:func:`_top_k_segmented`, batch by batch: each batch's candidates as :func:`choose_rows`
    selects them on their own."""
    parts = []
    for b in range(key.copies):
        lo, hi = ptr[b], ptr[b + 1]
        if hi - lo <= k:
            parts.append(cand[lo:hi])
            continue
        keys = draws.row_keys(
            gid[lo:hi] - b * key.num_nodes, key.keys[b], None if probs is None else probs[lo:hi]
        )
        parts.append(torch.sort(cand[lo:hi][torch.argsort(keys, stable=True)[:k]]).values)
    return torch.cat(parts)


def keep_rows(indptr: torch.Tensor, rows: torch.Tensor, num_rows: int, chosen: torch.Tensor):
    """Restrict edges (``indptr``, local ``rows``) to the local rows ``chosen`` (ascending).

    Returns ``(new_indptr, kept, new_rows)``: the kept edges' positions, in CSC order,
    and their rows in the new row space ``chosen``.
    """
    newpos = torch.full((num_rows,), -1, dtype=torch.int64, device=rows.device)
    newpos[chosen] = _arange(chosen.numel(), chosen)
    local = newpos[rows]
    mask = local >= 0
    cum = segment_ptr(mask.to(torch.int64))
    kept = mask.nonzero().squeeze(1)
    return segment_ptr(cum[indptr[1:]] - cum[indptr[:-1]]), kept, local[kept]


@torch_impl(Op.COLLECTIVE_SAMPLE)
def collective_sample(
    A: CSC, k: int, replace: bool, key: int, node_probs: torch.Tensor | None = None, draws=Draws
) -> CSC:
    """``k`` rows for the whole matrix, keeping every edge of the chosen rows."""
    csc = A
    if isinstance(key, BatchKeys) and node_probs is not None:  # the rest is per batch there
        V.probabilities(node_probs, "node_probs", csc.num_rows, csc.device, "row")
    chosen = choose_rows(
        csc.rows, csc.num_rows, csc.global_rows, k, replace, key, node_probs, draws
    )
    indptr, kept, rows = keep_rows(csc.indptr, csc.rows, csc.num_rows, chosen)
    out = csc.take_edges(kept, indptr)
    return dc_replace(out, rows=rows, row_ids=csc.global_rows(chosen))
