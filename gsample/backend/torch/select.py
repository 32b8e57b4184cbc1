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
"""
from __future__ import annotations

from dataclasses import replace as dc_replace
from typing import Optional

import torch

from ...random import exponential, hash_tensor, sort_key, uniform_float, uniform_int
from ...storage import CSC, segment_ptr


def _arange(n: int, like: torch.Tensor) -> torch.Tensor:
    return torch.arange(n, device=like.device)


def _from_mask(csc: CSC, mask: torch.Tensor) -> CSC:
    """Keep the edges where ``mask`` holds, in CSC order."""
    kept = segment_ptr(mask.to(torch.int64))
    counts = kept[csc.indptr[1:]] - kept[csc.indptr[:-1]]
    return csc.take_edges(mask.nonzero().squeeze(1), segment_ptr(counts))


def _from_sorted_edges(csc: CSC, edges: torch.Tensor, cols: torch.Tensor) -> CSC:
    """Edges ``edges`` (with repeats) of columns ``cols``; sorted into CSC order."""
    edges, order = torch.sort(edges, stable=True)
    counts = torch.bincount(cols, minlength=csc.num_cols)
    return csc.take_edges(edges, segment_ptr(counts))


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


def individual_sample(A: CSC, k: int, replace: bool, key: int,
                      probs: Optional[torch.Tensor] = None) -> CSC:
    """``k`` edges per column; see the module docstring for the exact algorithms."""
    csc = A
    deg = csc.degrees()
    if k == 0 or csc.nnz == 0:
        return _from_mask(csc, torch.zeros(csc.nnz, dtype=torch.bool, device=csc.device))
    col = csc.edge_cols()
    offset = _arange(csc.nnz, col) - csc.indptr[col]
    if probs is None and not replace:
        return _uniform_without(csc, k, deg, col, offset, key)
    if probs is None:
        cols = torch.nonzero(deg > 0).squeeze(1).repeat_interleave(k)
        draws = _arange(k, cols).repeat(cols.numel() // k)
        off = uniform_int(hash_tensor(key, cols, draws), deg[cols])
        return _from_sorted_edges(csc, csc.indptr[cols] + off, cols)
    if not replace:
        positive = probs > 0
        npos = segment_ptr(positive.to(torch.int64))
        npos = npos[csc.indptr[1:]] - npos[csc.indptr[:-1]]
        full = (npos <= k)[col]
        mask = positive & full
        need = (positive & ~full).nonzero().squeeze(1)
        if need.numel():
            keys = exponential(hash_tensor(key, col[need], offset[need])) / probs[need].double()
            mask[need[_segmented_smallest(keys, col[need], k)]] = True
        return _from_mask(csc, mask)
    return _weighted_with(csc, k, probs, deg, col, key)


def _uniform_without(csc, k, deg, col, offset, key) -> CSC:
    big = deg > k
    mask = ~big[col]
    bc = big.nonzero().squeeze(1)
    if bc.numel():
        cand = (big[col] & (offset >= k)).nonzero().squeeze(1)
        cc, co = col[cand], offset[cand]
        j = uniform_int(hash_tensor(key, cc, co), co + 1)
        hit = j < k
        slot_of_col = torch.full((csc.num_cols,), -1, dtype=torch.int64, device=csc.device)
        slot_of_col[bc] = _arange(bc.numel(), bc)
        slots = _arange(k, bc).repeat(bc.numel())
        slots.scatter_reduce_(0, slot_of_col[cc[hit]] * k + j[hit], co[hit], "amax")
        mask[csc.indptr[bc].repeat_interleave(k) + slots] = True
    return _from_mask(csc, mask)


def _weighted_with(csc, k, probs, deg, col, key) -> CSC:
    # Scale each column by its largest weight (exact, order-free) before the running sum,
    # so one column's weights are never rounded against the totals of the columns before it.
    w = probs.to(torch.float64)
    colmax = torch.zeros(csc.num_cols, dtype=torch.float64, device=csc.device)
    colmax.scatter_reduce_(0, col, w, "amax")
    w = w / colmax[col].clamp_min(torch.finfo(torch.float64).tiny)
    cum = torch.cumsum(w, 0)
    before = torch.cat([cum.new_zeros(1), cum])[csc.indptr]      # running sum at each column start
    total = before[1:] - before[:-1]
    cols = torch.nonzero(total > 0).squeeze(1).repeat_interleave(k)
    draws = _arange(k, cols).repeat(cols.numel() // k)
    u = uniform_float(hash_tensor(key, cols, draws))
    e = torch.searchsorted(cum, before[cols] + u * total[cols], right=True)
    # float rounding may step past a column's last positive edge; pull it back
    last = torch.full((csc.num_cols,), -1, dtype=torch.int64, device=csc.device)
    pos = (w > 0).nonzero().squeeze(1)
    last.scatter_reduce_(0, col[pos], pos, "amax")
    e = torch.minimum(e, last[cols])
    return _from_sorted_edges(csc, e, cols)


def collective_sample(A: CSC, k: int, replace: bool, key: int,
                      node_probs: Optional[torch.Tensor] = None) -> CSC:
    """``k`` rows for the whole matrix, keeping every edge of the chosen rows."""
    csc = A
    has = torch.zeros(csc.num_rows, dtype=torch.bool, device=csc.device)
    has[csc.rows] = True
    if node_probs is not None:
        has &= node_probs > 0
    cand = has.nonzero().squeeze(1)
    n = cand.numel()
    if k == 0 or n == 0:
        chosen = cand[:0]
    elif not replace:
        if n <= k:
            chosen = cand
        else:
            word = hash_tensor(key, torch.zeros_like(cand), csc.global_rows(cand))
            keys = sort_key(word) if node_probs is None else \
                exponential(word) / node_probs[cand].double()
            chosen = torch.sort(cand[torch.argsort(keys, stable=True)[:k]]).values
    else:
        draws = _arange(k, cand)
        word = hash_tensor(key, torch.zeros_like(draws), draws)
        if node_probs is None:
            idx = uniform_int(word, n)
        else:
            cum = torch.cumsum(node_probs[cand].double(), 0)
            idx = torch.searchsorted(cum, uniform_float(word) * cum[-1], right=True)
            idx = idx.clamp_(max=n - 1)
        chosen = torch.unique(cand[idx])
    return _keep_rows(csc, chosen)


def _keep_rows(csc: CSC, chosen: torch.Tensor) -> CSC:
    """Restrict to local rows ``chosen`` (ascending); they become the new row space."""
    newpos = torch.full((csc.num_rows,), -1, dtype=torch.int64, device=csc.device)
    newpos[chosen] = _arange(chosen.numel(), chosen)
    local = newpos[csc.rows]
    out = _from_mask(csc, local >= 0)
    return dc_replace(out, rows=local[local >= 0], row_ids=csc.global_rows(chosen))
