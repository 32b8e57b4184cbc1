"""Alias tables (Walker 1977): O(1) weighted draws, for walks and for weighted
individual sampling with replacement (``individual_sample(k, probs, replace=True,
method="alias")``).

Layout (``alias_table``, the ``ALIAS_TABLE`` op's value)
-------------------------------------------------------
Per column of ``D`` edges: ``D`` slots, slot ``i`` keeping edge ``i`` with probability
``prob[i]`` and its alias edge otherwise, so a uniform slot and one coin draw an edge with
probability ``w_i / sum(w)``. A LongTensor ``(E, 2)``: per edge slot the threshold as 53-bit
fixed point (``prob * 2**53``; a coin ``word >> 11`` below it keeps the slot) and the alias's
edge index (absolute, CSC order). Sampling code works on the *local* form
(:func:`alias_columns`): the same thresholds and each alias as an offset within its column.

Exact and column-local
----------------------
A column's table is a function of that column's weights alone, bit for bit, on every device:
built on the whole graph once (a compiled sampler's pre-processing, offline) or on a column
slice per call (eager code, dynamic weights: online), it is the same table, so both draw the
same samples (docs/architecture.md §3). No float sum is involved (a float sum's rounding
depends on its order, on what else is summed and on the device):

1. the weights are scaled by the column's largest (exact) and quantised to integers
   ``q_i = max(1, floor(w_i / max * 2**K))`` (``0`` for a zero weight), with
   ``K = min(52, 62 - 2 * bitlen(D))`` so that every sum below fits in int64 (a column of at
   most ``2**11`` edges keeps 52 bits of each weight relative to its largest, one of ``2**16``
   keeps 30: the drawing probabilities are ``q_i / sum(q)``, within ``D * 2**-K`` of
   ``w_i / sum(w)`` in total variation);
2. in units where a slot holds ``T = sum(q)``, edge ``i`` has mass ``D q_i``; lights
   (``D q_i <= T``) and heavies (``D q_i > T``), each in column order, have gaps
   ``T - D q_i`` and excesses ``D q_i - T`` whose running sums ``G`` and ``X`` (integers,
   exact; the two totals are equal) pair them as Vose's sweep does, without a sequential
   loop (Hübschle-Schneider and Sanders, 2019): light ``i`` keeps ``D q_i`` of its slot and
   aliases the first heavy ``j`` with ``X_j > G_i`` (``G_i`` the gaps before ``i``); heavy
   ``j`` keeps ``T + X_j - G*`` (``G*`` the running gap of the first light reaching ``X_j``)
   and aliases the next heavy; the last heavy keeps its slot whole. The two searches are a
   binary search per light / heavy within its column;
3. the thresholds are ``kept / T`` in float64 (one correctly rounded division), times
   ``2**53``, rounded.
"""

from __future__ import annotations

import torch

from gsample.backend.registry import torch_impl
from gsample.base.random import srl, uniform_int, words
from gsample.formats.csc import CSC, segment_ptr
from gsample.ir import Op

#: a threshold of 1.0 (``word >> 11`` is below it always)
ONE = 1 << 53
#: columns with this many edges or more have no exact table (62 - 2 * 31 bits: none left)
MAX_DEGREE = 1 << 30
_LOW = (1 << 31) - 1


def alias_columns(deg: torch.Tensor, probs: torch.Tensor, column_max=None) -> tuple:
    """Alias tables of columns given by their degrees and concatenated weights (local form).

    Parameters
    ----------
    deg : LongTensor, shape (C,)
        Edges per column.
    probs : Tensor, shape (sum(deg),)
        Non-negative finite weights, column after column; positive somewhere in every column
        with edges (checked by the callers' input checks).
    column_max : callable, optional
        ``column_max(ptr, col, w)``: each column's largest weight, as
        ``select.Draws.column_max`` (a backend's draws may compute it without atomics);
        None: a scatter.

    Returns
    -------
    threshold : LongTensor, shape (sum(deg),)
        Per slot, the probability of keeping it, as ``prob * 2**53``.
    alias : LongTensor, shape (sum(deg),)
        Per slot, the offset within its column of the edge drawn otherwise.

    Examples
    --------
    >>> import torch
    >>> thr, al = alias_columns(torch.tensor([3]), torch.tensor([1.0, 1.0, 4.0]))
    >>> thr.tolist(), al.tolist()                 # slots 0, 1 give 1/2 of theirs to edge 2
    ([4503599627370496, 4503599627370496, 9007199254740992], [2, 2, 2])
    """
    dev, E, C = deg.device, probs.numel(), deg.numel()
    if E == 0:
        z = torch.zeros(0, dtype=torch.int64, device=dev)
        return z, z.clone()
    deg = deg.to(torch.int64)
    if int(deg.max()) >= MAX_DEGREE:
        raise ValueError(
            f"probs: a column has {int(deg.max())} edges; alias tables take at "
            f"most {MAX_DEGREE - 1} per column"
        )
    ptr = segment_ptr(deg)
    col = torch.repeat_interleave(torch.arange(C, device=dev), deg, output_size=E)
    offset = torch.arange(E, device=dev) - ptr[col]
    # 1. integer weights relative to the column's largest (exact on every device)
    w = probs.to(torch.float64)
    if column_max is None:
        top = torch.zeros(C, dtype=torch.float64, device=dev).scatter_reduce_(0, col, w, "amax")
    else:
        top = column_max(ptr, col, w)
    bits = torch.frexp(deg.to(torch.float64)).exponent.to(torch.int64)  # bitlen(D)
    K = torch.clamp(62 - 2 * bits, max=52)
    scale = torch.bitwise_left_shift(torch.ones_like(K), K).to(torch.float64)  # 2**K, exact
    rel = torch.where(top[col] > 0, w / torch.where(top > 0, top, 1.0)[col], 0.0)
    q = torch.floor(rel * scale[col]).to(torch.int64)
    q = torch.where(w > 0, q.clamp_min(1), 0)
    T = torch.zeros(C, dtype=torch.int64, device=dev).index_add_(0, col, q)
    # 2. masses in slot units T; lights and heavies, each in column order
    mass = q * deg[col]
    Tc = T[col]
    heavy = mass > Tc
    li, hi = (~heavy).nonzero().squeeze(1), heavy.nonzero().squeeze(1)
    lc, hc = col[li], col[hi]
    l_ptr, h_ptr = _ptr(lc, C), _ptr(hc, C)
    G = _running(Tc[li] - mass[li], l_ptr)  # gaps up to and with each light
    X = _running(mass[hi] - Tc[hi], h_ptr)  # excesses up to and with each heavy
    kept = mass.clone()
    alias = offset.clone()
    if hi.numel():
        # a light: the first heavy of its column with X > (the gaps before it)
        j = _first(X, h_ptr, lc, G - (Tc[li] - mass[li]), strict=True)
        has = h_ptr[lc + 1] > h_ptr[lc]
        # none past it: a light of no gap after the last heavy (kept whole, alias unused)
        j = torch.minimum(j, h_ptr[lc + 1] - 1).clamp(0, hi.numel() - 1)
        alias[li] = torch.where(has, offset[hi[j]], offset[li])
        # a heavy: keep T + X - G* of its slot, alias the next heavy; the last keeps it whole
        last = torch.arange(hi.numel(), device=dev) == h_ptr[hc + 1] - 1
        whole = last | (l_ptr[hc + 1] == l_ptr[hc])
        i = _first(G, l_ptr, hc, X, strict=False)
        i = torch.minimum(i, l_ptr[hc + 1] - 1).clamp(0, max(li.numel() - 1, 0))
        g_star = G[i] if li.numel() else torch.zeros_like(X)
        keep = (Tc[hi] + X - g_star).clamp(min=0)
        keep = torch.minimum(keep, Tc[hi])
        kept[hi] = torch.where(whole, Tc[hi], keep)
        nxt = torch.arange(1, hi.numel() + 1, device=dev).clamp(max=hi.numel() - 1)
        alias[hi] = torch.where(whole, offset[hi], offset[hi[nxt]])
    # 3. thresholds: kept / T, one rounded division
    T_safe = torch.where(Tc > 0, Tc, 1).to(torch.float64)
    frac = torch.where(Tc > 0, kept.to(torch.float64) / T_safe, 1.0)
    threshold = torch.round(frac.clamp(0.0, 1.0) * float(ONE)).to(torch.int64)
    return threshold, alias


def _ptr(group: torch.Tensor, C: int) -> torch.Tensor:
    """Offsets (C + 1,) of the groups ``0..C-1`` in the sorted ``group``."""
    return torch.searchsorted(group, torch.arange(C + 1, device=group.device))


def _running(values: torch.Tensor, ptr: torch.Tensor) -> torch.Tensor:
    """Inclusive running sums of non-negative int64 ``values`` restarting at each group
    (``ptr``), exact: the values (each < 2**62) are summed as two 31-bit halves, whose global
    running sums cannot overflow (fewer than 2**32 values), then each group's start taken off."""
    if values.numel() == 0:
        return values
    out = torch.zeros_like(values)
    group = torch.repeat_interleave(
        torch.arange(ptr.numel() - 1, device=values.device),
        ptr[1:] - ptr[:-1],
        output_size=values.numel(),
    )
    for shift in (31, 0):
        part = srl(values, shift) & _LOW if shift else values & _LOW
        run = torch.cumsum(part, 0)
        before = torch.cat([run.new_zeros(1), run])[ptr[:-1]][group]
        out += (run - before) << shift
    return out


def _first(
    sorted_vals: torch.Tensor,
    ptr: torch.Tensor,
    group: torch.Tensor,
    target: torch.Tensor,
    strict: bool,
) -> torch.Tensor:
    """Per query, the index (into ``sorted_vals``) of the first element of its ``group``'s
    run ``ptr[g]:ptr[g + 1]`` (non-decreasing there) that is ``> target`` (``strict``) or
    ``>= target``; ``ptr[g + 1]`` when none is (a binary search, exact on integers)."""
    lo, hi = ptr[group].clone(), ptr[group + 1].clone()
    if sorted_vals.numel() == 0:
        return lo
    top = sorted_vals.numel() - 1
    for _ in range(int((hi - lo).max()).bit_length() + 1 if lo.numel() else 0):
        mid = (lo + hi) // 2
        v = sorted_vals[mid.clamp(max=top)]
        before = (v <= target) if strict else (v < target)
        go = (lo < hi) & before
        stay = (lo < hi) & ~before
        lo = torch.where(go, mid + 1, lo)
        hi = torch.where(stay, mid, hi)
    return lo


@torch_impl(Op.ALIAS_TABLE)
def alias_table(A: CSC, probs: torch.Tensor) -> torch.Tensor:
    """Alias tables of every column of ``A`` for edge weights ``probs`` (the ``alias_table`` op).

    Parameters
    ----------
    A : CSC
        The graph.
    probs : Tensor, shape (E,)
        Non-negative weights, positive somewhere in every column with edges.

    Returns
    -------
    LongTensor, shape (E, 2)
        Per edge slot: threshold (``prob * 2**53``) and alias edge index (absolute).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A = gs.datasets.rmat(100, 500, seed=0)
    >>> A = A.mul(torch.rand(A.num_nodes), axis=0)     # weighted edges
    >>> t = alias_table(A.csc, A.values)
    >>> t.shape == (A.num_edges, 2)
    True
    """
    out = torch.empty((A.nnz, 2), dtype=torch.int64, device=A.device)
    if A.nnz == 0:
        return out
    deg = A.degrees()
    threshold, alias = alias_columns(deg, probs)
    out[:, 0] = threshold
    out[:, 1] = alias + A.indptr[:-1].repeat_interleave(deg, output_size=A.nnz)
    return out


def local(table: torch.Tensor, index: torch.Tensor, starts: torch.Tensor) -> tuple:
    """The local form of the table rows ``table[index]`` (``index``: edges of some columns,
    concatenated; ``starts``: the absolute first edge of each of those edges' columns):
    ``(threshold, alias offset within the column)``."""
    rows = table[index]
    return rows[:, 0], rows[:, 1] - starts


def alias_draw(table: torch.Tensor, e: torch.Tensor, word: torch.Tensor) -> torch.Tensor:
    """The edge the alias slot ``e`` gives for the coin ``word`` (shapes (n,))."""
    return torch.where(srl(word, 11) < table[e, 0], e, table[e, 1])


def draw_with_replacement(cols, deg, k, key, start, threshold, alias) -> torch.Tensor:
    """Offsets of ``k`` alias draws per column of ``cols`` (positions in the frontier; shape
    (n * k,), draw-major per column).

    Draw ``t`` of column ``c`` takes slot ``s = uniform_int(word(c, 2t), deg[c])`` and keeps
    it when ``word(c, 2t + 1) >> 11 < threshold[start[c] + s]``, else takes
    ``alias[start[c] + s]`` (the local table of the columns, concatenated from ``start``).
    """
    n = cols.numel()
    t = torch.arange(k, device=cols.device).repeat(n)
    rep = cols.repeat_interleave(k)
    s = uniform_int(words(key, rep, 2 * t), deg[rep])
    e = start[rep] + s
    coin = words(key, rep, 2 * t + 1)
    return torch.where(srl(coin, 11) < threshold[e], s, alias[e])


__all__ = [
    "ONE",
    "alias_columns",
    "alias_draw",
    "alias_table",
    "draw_with_replacement",
    "local",
]
