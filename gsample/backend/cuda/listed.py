"""``listed_collective_sample`` on the GPU (``kernels/listed.cu``): LADIES's collective
sample with its row probabilities ``p = W[:, cols].sum(axis=1) / scale`` evaluated at the
slice's distinct rows only (the ``listed_rows`` pass makes the op; the torch backend's
``fused_select.listed_collective_sample`` is its reference, which this returns bit for bit).

Nothing is sized by the row space (a super-batch's is N graphs' rows): the frontier's edges
are listed (``gs_listed_edges``, over ``kernels/frontier_tiles.cuh``'s tiles: each edge's row,
``b * n + row`` in a super-batch, and its graph edge), sorted stably by row (the slice's edge
order kept within a row), the distinct rows are the candidates, and ``gs_listed_sums`` adds
each one's weights one after the other in that order from 0 (the reference's segment sum of
the same sorted edges: the same additions, the same bits). The draw is the reference's, on
the device: the candidates' keys (``select.Draws.row_keys`` with each one's mini-batch key),
each mini-batch's ``k`` smallest by two stable sorts (by key, then by batch); with
replacement, ``select.choose_among`` a mini-batch at a time. The kept edges are the frontier's
edges whose row is drawn, in the frontier's order.

This first implementation reads sizes back (the frontier's edge count, the candidates, the
kept edges): registered as an exact (syncing) implementation that takes a super-batch's
keys, so the sync-free runtime runs it between its captured regions.
"""

from __future__ import annotations

import torch

from gsample.backend.cuda.extract import _index_arrays, _params
from gsample.backend.cuda.layerwise import _THREADS, _TILE, _frontier_ptr, _graph
from gsample.backend.cuda.module import launch
from gsample.backend.cuda.nodewise import exact
from gsample.backend.cuda.rowsum import FLOATS
from gsample.backend.registry import cuda_impl
from gsample.backend.torch import fused_select
from gsample.backend.torch.select import Draws, _draws_fit, choose_among
from gsample.base import validate as V
from gsample.base.random import BatchKeys
from gsample.formats.csc import CSC
from gsample.ir import Op
from gsample.ir.checks import NO_POSITIVE_ROW

_MAX_GRID = 65535  # blocks of gs_listed_edges (it strides over the tiles past them)
_INT32_ROWS = 2**31 - 1  # row spaces up to this many rows sort their edges by int32 keys


def _takes(A, cols, row_weights, key) -> bool:
    """Whether the kernels take these inputs (else the torch code runs on the device)."""
    w = row_weights
    ok = (
        _graph(A)
        and isinstance(w, torch.Tensor)
        and w.is_cuda
        and w.dtype in FLOATS
        and w.dim() == 1
        and w.numel() == A.nnz
        and cols.is_cuda
    )
    return ok and (not isinstance(key, BatchKeys) or key.num_nodes == A.num_nodes)


# the frontier's ids are checked by gs_frontier_ptr (read back with the edge count); the
# probabilities' values where they are computed (V.finite_nonnegative, as the reference)
@cuda_impl(Op.LISTED_COLLECTIVE_SAMPLE, checks=("cols",), batch_keys=True)
def listed_collective_sample(
    A: CSC, cols, row_weights: torch.Tensor, scale, k: int, replace: bool, key
) -> CSC:
    """``A[:, cols].collective_sample(k, node_probs=W[:, cols].sum(axis=1) / scale,
    replace)`` with the probabilities at the slice's rows only (see the module docstring).

    Parameters
    ----------
    A : CSC
        The graph (every node a row).
    cols : LongTensor, shape (C,)
        The frontier (with :class:`BatchKeys`: a super-batch's, ids ``b * n + v``, grouped
        by mini-batch).
    row_weights : Tensor, shape (A.nnz,)
        ``W``'s value at each edge of ``A`` (float32 or float64 for the kernels).
    scale : Tensor, 0-dim or shape (N,) (each mini-batch's), or a number
    k, replace
        As ``collective_sample``.
    key : int or BatchKeys
        The op's key, or a super-batch's (each mini-batch draws with its own).

    Returns
    -------
    CSC
        The reference's sample, bit for bit: row space the chosen rows (ascending, a
        super-batch's grouped by mini-batch), column space ``cols``.
    """
    cols = exact(cols)
    batched = isinstance(key, BatchKeys)
    M = A.num_nodes * (key.copies if batched else 1)
    if not _takes(A, cols, row_weights, key):
        cols = V.ids(cols, "cols", M, cols.device)  # (the runtime left the check here)
        return fused_select.listed_collective_sample(A, cols, row_weights, scale, k, replace, key)
    return _listed(A, cols, row_weights, scale, k, replace, key, M)


def _listed(A: CSC, cols, w, scale, k: int, replace: bool, key, M: int) -> CSC:
    batched = isinstance(key, BatchKeys)
    N, n = (key.copies, key.num_nodes) if batched else (1, 0)
    _draws_fit(k, replace, N, cols.device)
    buf = cols.to(torch.int64).contiguous()
    C, dev = buf.numel(), buf.device
    indptr, rows = _index_arrays(A)
    ptr = _frontier_ptr(indptr, buf, None, n, M)  # a bad id: an empty column, flagged
    (E,) = V.read_back([ptr[C:]])  # (a flagged id raises here)
    listed = torch.empty(2 * E, dtype=torch.int64, device=dev)
    row_e, edge_e = listed[:E], listed[E:]  # per frontier edge: its row, its graph edge
    if E:
        tiles = -(-E // _TILE)
        launch(
            "listed",
            "gs_listed_edges",
            min(tiles, _MAX_GRID) * _THREADS,
            indptr,
            rows,
            buf,
            C,
            ptr,
            n,
            row_e,
            edge_e,
            block=_THREADS,
            grid=min(tiles, _MAX_GRID),
            params=_params(indptr),
        )
    # the candidates: the distinct rows, ascending; each one's edges in the slice's order
    # (32-bit keys where the row space allows: a radix sort of half the passes)
    narrow = row_e.to(torch.int32) if M <= _INT32_ROWS else row_e
    by_row, order = torch.sort(narrow, stable=True)
    cand, counts = torch.unique_consecutive(by_row, return_counts=True)
    cand = cand.to(torch.int64)
    L = cand.numel()
    seg = torch.zeros(L + 1, dtype=torch.int64, device=dev)
    torch.cumsum(counts, 0, out=seg[1:])
    terms = w[edge_e[order]]
    sums = torch.empty(L, dtype=w.dtype, device=dev)
    launch("listed", "gs_listed_sums", L, terms, E, seg, L, sums, dtypes=(FLOATS[w.dtype],))
    batch = torch.div(cand, n, rounding_mode="floor") if batched else torch.zeros_like(cand)
    probs = _divided(sums, scale, batch, batched)
    V.finite_nonnegative(probs, "node_probs")  # as the reference checks its probabilities
    positive = probs > 0
    # as each mini-batch checks its own: one with frontier edges needs a positive row
    ones = torch.ones_like(cand)
    listed_b = torch.zeros(N, dtype=torch.int64, device=dev).index_add_(0, batch, ones)
    positive_b = torch.zeros(N, dtype=torch.int64, device=dev).index_add_(
        0, batch, positive.to(torch.int64)
    )
    V.fail_if(((listed_b > 0) & (positive_b == 0)).any(), ValueError, NO_POSITIVE_ROW)
    drawn = _draw(A, cand, probs, positive, batch, k, replace, key, N, n)
    # the kept edges: the frontier's edges whose row is drawn, in its order; each one's row
    # is its position among the drawn rows (ascending: the candidates' order)
    place = torch.cumsum(drawn.to(torch.int64), 0) - 1
    of_edge = torch.empty(E, dtype=torch.int64, device=dev)  # each frontier edge's candidate
    of_edge[order] = torch.repeat_interleave(torch.arange(L, device=dev), counts, output_size=E)
    kept_mask = drawn[of_edge]
    cum = torch.zeros(E + 1, dtype=torch.int64, device=dev)
    torch.cumsum(kept_mask.to(torch.int64), 0, out=cum[1:])
    drawn_n = place[-1:] + 1 if L else cum[:1]
    # every pending flag (ids, probabilities) raises here, before a size is used
    K, D = V.read_back([cum[E:], drawn_n])
    chosen = _compact(drawn, place, cand, D)
    kept = _compact(kept_mask, cum[:-1], torch.arange(E, device=dev), K)
    edges = edge_e[kept]
    return CSC(
        num_nodes=M,
        indptr=cum[ptr],
        rows=place[of_edge[kept]],
        row_ids=chosen if batched else A.global_rows(chosen),
        col_ids=buf,
        values=None if A.values is None else A.values[edges],
        eids=edges if A.eids is None else A.eids[edges],
    )


def _compact(mask, at, values, count: int) -> torch.Tensor:
    """``values[mask]`` (``count`` of them) without a read-back: each one written at its
    place ``at`` (an exclusive count of ``mask``), the others at a spare slot dropped after."""
    out = torch.empty(count + 1, dtype=values.dtype, device=values.device)
    out.scatter_(0, torch.where(mask, at, count), values)
    return out[:count]


def _divided(sums: torch.Tensor, scale, batch: torch.Tensor, batched: bool) -> torch.Tensor:
    """``sums / scale`` as the reference divides each mini-batch's sums: by its scale (a
    0-dim tensor, a number, or a super-batch's ``scale[b]``, a 0-dim operand in the type
    promotion), the same dtype and the same division — always by a tensor on the device,
    never by a host scalar (which a GPU division turns into a product by its reciprocal)."""
    dev = sums.device
    if batched and isinstance(scale, torch.Tensor) and scale.dim() == 1:
        dt = torch.result_type(sums, scale[:1].reshape(()))
        return sums.to(dt) / scale.to(device=dev, dtype=dt)[batch]
    if isinstance(scale, torch.Tensor) and scale.dim() > 0:
        return sums / scale.to(dev)  # (as given: the reference's broadcast)
    dt = torch.result_type(sums, scale)
    return sums.to(dt) / torch.as_tensor(scale).to(device=dev, dtype=dt)


def _draw(A: CSC, cand, probs, positive, batch, k: int, replace: bool, key, N: int, n: int):
    """Which candidates are drawn (bool, aligned with ``cand``, ascending rows; a
    super-batch's grouped by mini-batch): :func:`select.choose_among` of each mini-batch
    among its positive candidates, with its key."""
    dev = cand.device
    L = cand.numel()
    if k == 0 or L == 0:
        return torch.zeros(L, dtype=torch.bool, device=dev)
    if replace:  # the reference's draws, a mini-batch at a time (reads sizes back)
        at = positive.nonzero().squeeze(1)
        cand_p, probs_p, batch_p = cand[at], probs[at], batch[at]
        per = torch.zeros(N, dtype=torch.int64, device=dev).index_add_(
            0, batch_p, torch.ones_like(batch_p)
        )
        bounds = [0, *torch.cumsum(per, 0).tolist()]
        parts = []
        for b in range(N):
            lo, hi = bounds[b], bounds[b + 1]
            if hi == lo:
                continue
            local = cand_p[lo:hi] - b * n
            kb = key.keys[b] if isinstance(key, BatchKeys) else key
            got = choose_among(local, 0, A.global_rows, k, True, kb, cand_probs=probs_p[lo:hi])
            parts.append(got + b * n)
        chosen = torch.cat(parts) if parts else cand[:0]
        if chosen.numel() == 0:
            return torch.zeros(L, dtype=torch.bool, device=dev)
        place = torch.searchsorted(chosen, cand).clamp_(max=chosen.numel() - 1)
        return chosen[place] == cand
    # each mini-batch's k smallest keys among its positive candidates (ties: the lower row,
    # as the reference's stable sort); a key of a row that is not positive is never read
    gid = A.global_rows(cand - batch * n).to(torch.int64)
    base = key.bases(dev)[batch] if isinstance(key, BatchKeys) else key
    keys = Draws.row_keys(gid, base, torch.where(positive, probs, 1.0))
    by_key = torch.argsort(keys, stable=True)
    perm = by_key[torch.argsort(batch[by_key], stable=True)]
    pos = positive[perm].to(torch.int64)
    # a positive candidate's rank among its batch's positive ones (in key order)
    before = torch.cumsum(pos, 0) - pos
    per = torch.zeros(N, dtype=torch.int64, device=dev).index_add_(0, batch, positive.long())
    first = torch.cumsum(per, 0) - per
    take = (pos > 0) & (before - first[batch[perm]] < k)
    drawn = torch.zeros(L, dtype=torch.bool, device=dev)
    drawn[perm] = take
    return drawn


__all__ = ["listed_collective_sample"]
