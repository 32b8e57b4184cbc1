"""Select: individual (node-wise) and collective (layer-wise) sampling on PyTorch tensors.

Every draw takes its random word from ``gsample.random.hash_tensor`` keyed by the
op's key prefix, the column's position in the frontier and a draw or edge id, so
the result depends on nothing else (DESIGN §3). The algorithms, which the CUDA
backend implements identically:

individual, uniform, ``replace=False``
    A column with at most ``k`` edges keeps all of them. Otherwise reservoir
    sampling (Algorithm R): slots ``0..k-1`` start with offsets ``0..k-1``; the
    edge at offset ``i >= k`` draws ``j = uniform_int(word(col, i), i + 1)`` and,
    if ``j < k``, would replace slot ``j``; each slot keeps the largest such
    offset. Exactly uniform over k-subsets, and order-free (a max per slot).
individual, uniform, ``replace=True``
    Draw ``t`` of column ``c`` takes offset ``uniform_int(word(c, t), deg)``.
individual, weighted, ``replace=False``
    Exponential keys (Efraimidis-Spirakis / A-Res): edge ``i`` gets
    ``exponential(word(c, i)) / p_i``; the ``k`` smallest keys win (ties: lower
    offset). This is the distribution of ``k`` sequential draws proportional to
    weight, each without replacement. Zero-weight edges are never chosen.
individual, weighted, ``replace=True``
    Inverse CDF: draw ``t`` finds ``uniform_float(word(c, t)) * total`` in the
    column's running sum (float64, weights scaled by the column's largest).
collective
    Candidates are the rows with at least one edge (and positive ``node_probs``).
    Without replacement: row ``g`` (global id) gets ``sort_key(word(0, g))`` or
    ``exponential(word(0, g)) / p_g`` and the ``k`` smallest win. With
    replacement: draw ``t`` uses ``word(0, t)`` on candidates in row-space order;
    the result keeps each drawn row once.

Selected edges keep their column's order (CSC order) in the output.

The algorithms are written once, over columns described only by their degrees
(:func:`select_in_columns`, :func:`choose_rows`, :func:`keep_rows`); the public
functions here apply them to a materialised matrix and ``fused_select`` applies them
to a column slice ``A[:, cols]`` that it never builds.
"""
from __future__ import annotations

from dataclasses import replace as dc_replace
from typing import Optional

import torch

from ...random import exponential, hash_tensor, sort_key, uniform_float, uniform_int
from ...storage import CSC, segment_ptr


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
class Draws:
    """The random draws of sampling, as tensor code.

    A backend with kernels for them (``gsample.backend.cuda``) passes its own object with
    these methods to :func:`select_in_columns` / :func:`choose_rows`; the host code around
    them (degrees, running sums, sorting, output layout) is shared. Every method is a pure
    function of its arguments and the op key; a kernel implementation must return the
    same values (the same bits).
    """

    @staticmethod
    def with_replacement(cols, deg, k, key):
        """Offsets drawn for ``k`` draws of each column of ``cols`` (shape (n * k,))."""
        draws = _arange(k, cols).repeat(cols.numel())
        cols = cols.repeat_interleave(k)
        return uniform_int(hash_tensor(key, cols, draws), deg[cols])

    @staticmethod
    def reservoir(cols, extra, k, key):
        """Algorithm R slots (shape (n * k,)) of columns ``cols`` with ``k + extra`` edges."""
        ptr = segment_ptr(extra)
        n = int(ptr[-1])
        owner = torch.repeat_interleave(_arange(cols.numel(), cols), extra, output_size=n)
        co = _arange(n, cols) - ptr[owner] + k
        j = uniform_int(hash_tensor(key, cols[owner], co), co + 1)
        hit = j < k
        slots = _arange(k, cols).repeat(cols.numel())
        return slots.scatter_reduce_(0, owner[hit] * k + j[hit], co[hit], "amax")

    @staticmethod
    def exp_keys(col, offset, probs, key):
        """Exponential keys of edges: ``exponential(word(col, offset)) / probs`` (float64).

        ``col``, ``offset`` (LongTensor) and ``probs`` (any float dtype, > 0) have shape (n,).
        """
        return exponential(hash_tensor(key, col, offset)) / probs.double()

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
        u = uniform_float(hash_tensor(key, rep, t))
        e = torch.searchsorted(cum, before[rep] + u * total[rep], right=True)
        return torch.minimum(e, last[rep])

    @staticmethod
    def row_keys(gid, key, probs=None):
        """Keys of candidate rows of global ids ``gid`` (the ``k`` smallest win).

        Uniform: ``sort_key(word(0, gid))`` (int64); weighted: ``exponential(word(0, gid))
        / probs`` (float64; ``probs`` aligned with ``gid``, > 0).
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


def select_in_columns(deg: torch.Tensor, k: int, replace: bool, key: int,
                      probs: Optional[torch.Tensor] = None, draws=Draws):
    """Individual sampling over ``C`` columns known by their degrees alone.

    Parameters
    ----------
    deg : LongTensor, shape (C,)
        Edges in each column; column ``c`` is the ``c``-th of the frontier (its position
        keys its draws).
    k, replace, key
        As :func:`individual_sample`.
    probs : Tensor, shape (sum(deg),), optional
        Weights of the columns' edges, concatenated in column order (the edge order of
        the column slice). Uniform sampling never needs the edges themselves.
    draws : object with the methods of :class:`Draws`
        Who makes the draws (:class:`Draws`: tensor code; or a backend's kernels).

    Returns
    -------
    indptr : LongTensor, shape (C + 1,)
        Selected edges per column, as an ``indptr``.
    col, offset : LongTensor, shape (n,)
        Each selected edge's column and offset within that column, in CSC order.
    """
    C = deg.numel()
    nnz = int(deg.sum()) if C else 0
    if k == 0 or nnz == 0:
        empty = deg.new_zeros(0)
        return segment_ptr(torch.zeros_like(deg)), empty, empty
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


def individual_sample(A: CSC, k: int, replace: bool, key: int,
                      probs: Optional[torch.Tensor] = None, draws=Draws) -> CSC:
    """``k`` edges per column; see the module docstring for the exact algorithms."""
    csc = A
    indptr, col, offset = select_in_columns(csc.degrees(), k, replace, key, probs, draws)
    return csc.take_edges(csc.indptr[col] + offset, indptr)


def _uniform_without(deg, k, key, draws):
    # columns with at most k edges keep them all; the others keep k reservoir slots
    C = deg.numel()
    counts = torch.clamp(deg, max=k)
    indptr = segment_ptr(counts)
    total = int(indptr[-1])
    col = torch.repeat_interleave(_arange(C, deg), counts, output_size=total)
    offset = _arange(total, deg) - indptr[col]
    big = deg > k
    bc = big.nonzero().squeeze(1)
    nb = bc.numel()
    if nb:
        # edges at offsets >= k of the big columns are the candidates of Algorithm R
        slots = draws.reservoir(bc, deg[bc] - k, k, key)
        offset[big[col]] = _sort_rows(slots, k)      # big columns hold k positions each
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
    C = indptr.numel() - 1
    # Scale each column by its largest weight (exact, order-free) before the running sum,
    # so one column's weights are never rounded against the totals of the columns before it.
    w = probs.to(torch.float64)
    colmax = torch.zeros(C, dtype=torch.float64, device=w.device)
    colmax.scatter_reduce_(0, col, w, "amax")
    w = w / colmax[col].clamp_min(torch.finfo(torch.float64).tiny)
    cum = torch.cumsum(w, 0)
    before = torch.cat([cum.new_zeros(1), cum])[indptr]      # running sum at each column start
    total = before[1:] - before[:-1]
    drawn = torch.nonzero(total > 0).squeeze(1)
    # float rounding may step past a column's last positive edge; draws pull it back to last
    last = torch.full((C,), -1, dtype=torch.int64, device=w.device)
    pos = (w > 0).nonzero().squeeze(1)
    last.scatter_reduce_(0, col[pos], pos, "amax")
    e = draws.inverse_cdf(cum, before, last, drawn, k, key)
    e, order = torch.sort(e, stable=True)
    return e, drawn.repeat_interleave(k)[order]


# ----------------------------------------------------------------------------- collective
def choose_rows(rows: torch.Tensor, num_rows: int, global_rows, k: int, replace: bool, key: int,
                node_probs: Optional[torch.Tensor] = None, draws=Draws) -> torch.Tensor:
    """The local rows (ascending) collective sampling keeps.

    ``rows`` (shape (E,)) are the local rows of the matrix's edges, in any order;
    ``global_rows(local)`` maps local rows to global ids (the keys of their draws);
    ``draws`` makes the draws (:class:`Draws` or a backend's kernels).
    """
    has = torch.zeros(num_rows, dtype=torch.bool, device=rows.device)
    has[rows] = True
    if node_probs is not None:
        has &= node_probs > 0
    cand = has.nonzero().squeeze(1)
    n = cand.numel()
    if k == 0 or n == 0:
        return cand[:0]
    if not replace:
        if n <= k:
            return cand
        keys = draws.row_keys(global_rows(cand).to(torch.int64), key,
                              None if node_probs is None else node_probs[cand])
        return torch.sort(cand[torch.argsort(keys, stable=True)[:k]]).values
    cum = None if node_probs is None else torch.cumsum(node_probs[cand].double(), 0)
    return torch.unique(cand[draws.row_draws(cand, k, key, cum)])


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


def collective_sample(A: CSC, k: int, replace: bool, key: int,
                      node_probs: Optional[torch.Tensor] = None, draws=Draws) -> CSC:
    """``k`` rows for the whole matrix, keeping every edge of the chosen rows."""
    csc = A
    chosen = choose_rows(csc.rows, csc.num_rows, csc.global_rows, k, replace, key, node_probs,
                         draws)
    indptr, kept, rows = keep_rows(csc.indptr, csc.rows, csc.num_rows, chosen)
    out = csc.take_edges(kept, indptr)
    return dc_replace(out, rows=rows, row_ids=csc.global_rows(chosen))
