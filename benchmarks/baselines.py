"""Plain-PyTorch samplers written directly with torch ops, no gsample: GraphSAGE, LADIES,
FastGCN, ShaDow-KHop and PASS.

The baselines of ``benchmarks/gpu_workloads.py`` and ``benchmarks/runtime.py`` (docs/architecture.md
§8): what someone would write in PyTorch on the graph's CSC tensors (``indptr``, ``indices``,
edge ``values``), on any device. They implement the same sampler semantics and sizes as
the samplers of ``examples/`` but draw from torch's generator, so their samples differ from
gsample's; ``tests/test_benchmark_baselines.py`` holds them to those semantics.

A sampled layer is a :class:`Block`: ``indptr`` over the frontier ``cols`` (global ids),
``rows`` the global id of each kept edge's source (CSC order), and ``values`` (layer-wise).
"""

from __future__ import annotations

from typing import NamedTuple

import torch


class Block(NamedTuple):
    indptr: torch.Tensor  # (C + 1,)
    rows: torch.Tensor  # (E,) global source ids, column by column
    cols: torch.Tensor  # (C,) global ids of the frontier
    values: torch.Tensor | None = None

    @property
    def num_edges(self) -> int:
        return self.rows.numel()


def _exclusive_cumsum(x: torch.Tensor) -> torch.Tensor:
    out = torch.zeros(x.numel() + 1, dtype=torch.int64, device=x.device)
    torch.cumsum(x, 0, out=out[1:])
    return out


def frontier_edges(indptr: torch.Tensor, cols: torch.Tensor):
    """The in-edges of the frontier ``cols``: ``(ptr, col, pos)``; edge ``i`` is graph edge
    ``pos[i]`` of local column ``col[i]``, and local column ``c`` holds ``ptr[c]:ptr[c+1]``."""
    start = indptr[cols]
    deg = indptr[cols + 1] - start
    ptr = _exclusive_cumsum(deg)
    total = int(ptr[-1])
    col = torch.repeat_interleave(
        torch.arange(cols.numel(), device=cols.device), deg, output_size=total
    )
    pos = torch.arange(total, device=cols.device) + (start - ptr[:-1])[col]
    return ptr, col, pos


def next_frontier(cols: torch.Tensor, rows: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """``cols`` followed by the rows not among them (ascending, unique): a node mask, no sort."""
    new = torch.zeros(num_nodes, dtype=torch.bool, device=rows.device)
    new[rows] = True
    new[cols] = False
    return torch.cat([cols, new.nonzero().squeeze(1)])


# ----------------------------------------------------------------------------- GraphSAGE
def sage_layer(indptr, indices, cols, k: int) -> Block:
    """Up to ``k`` in-edges of each frontier column, uniformly without replacement.

    Columns with at most ``k`` edges keep them all; in the others every edge gets a random
    key and one sort of ``column + key`` ranks the edges inside their column (a segmented
    random permutation); the first ``k`` of each column are kept, in CSC order.
    """
    ptr, col, pos = frontier_edges(indptr, cols)
    deg = ptr[1:] - ptr[:-1]
    big_col = deg > k
    keep = ~big_col[col]  # small columns: every edge
    big = (~keep).nonzero().squeeze(1)  # edges of big columns, CSC order
    if big.numel():
        bcol = col[big]
        keys = bcol.to(torch.float64) + torch.rand(
            big.numel(), dtype=torch.float64, device=cols.device
        )
        order = torch.sort(keys).indices  # columns stay grouped, shuffled inside
        bptr = _exclusive_cumsum(torch.where(big_col, deg, 0))
        rank = torch.arange(big.numel(), device=cols.device) - bptr[bcol]
        keep[big[order[rank < k]]] = True
    kept = keep.nonzero().squeeze(1)
    return Block(_exclusive_cumsum(torch.clamp(deg, max=k)), indices[pos[kept]], cols)


def graphsage(indptr, indices, num_nodes: int, seeds, fanouts=(25, 10)):
    """GraphSAGE neighbour sampling: one :class:`Block` per fanout, seeds outwards."""
    blocks = []
    for k in fanouts:
        b = sage_layer(indptr, indices, seeds, k)
        blocks.append(b)
        seeds = next_frontier(seeds, b.rows, num_nodes)
    return blocks


# ----------------------------------------------------------------------------- LADIES
def ladies_layer(indptr, indices, values, num_nodes: int, cols, k: int) -> Block:
    """One LADIES layer on the normalised graph (``values``).

    Row probabilities: the sum of squared weights of the frontier's in-edges by row
    (normalised); ``k`` rows drawn by ``torch.multinomial`` without replacement among the
    rows with positive probability (all of them when there are at most ``k``); every
    in-edge of the frontier from a chosen row is kept, weighted by ``1 / p(row)``, and each
    column is normalised to sum to 1.
    """
    _ptr, col, pos = frontier_edges(indptr, cols)
    rows, w = indices[pos], values[pos]
    p = torch.zeros(num_nodes, dtype=w.dtype, device=w.device).index_add_(0, rows, w * w)
    p = p / p.sum().clamp(min=1e-30)
    return _keep_chosen_rows((p > 0).nonzero().squeeze(1), p, k, rows, col, w, cols, num_nodes)


def _keep_chosen_rows(cand, p, k: int, rows, col, w, cols, num_nodes: int) -> Block:
    """The layer-wise step both samplers share: ``k`` of the candidate rows ``cand`` drawn by
    ``torch.multinomial`` without replacement with probabilities ``p`` (all of them when
    there are at most ``k``); every frontier edge (``rows``, local column ``col``, weight
    ``w``) from a chosen row kept with value ``w / p[row]``; columns normalised to sum 1."""
    if cand.numel() > k:
        chosen = torch.sort(cand[torch.multinomial(p[cand], k, replacement=False)]).values
    else:
        chosen = cand
    is_chosen = torch.zeros(num_nodes, dtype=torch.bool, device=rows.device)
    is_chosen[chosen] = True
    kept = is_chosen[rows].nonzero().squeeze(1)
    kcol, krows = col[kept], rows[kept]
    v = w[kept] / p[krows]
    colsum = torch.zeros(cols.numel(), dtype=v.dtype, device=v.device).index_add_(0, kcol, v)
    v = v / colsum[kcol]
    return Block(_exclusive_cumsum(torch.bincount(kcol, minlength=cols.numel())), krows, cols, v)


def ladies(indptr, indices, values, num_nodes: int, seeds, layers=(4000, 4000, 4000)):
    """LADIES layer-wise sampling: one :class:`Block` per layer, seeds outwards."""
    blocks = []
    for k in layers:
        b = ladies_layer(indptr, indices, values, num_nodes, seeds, k)
        blocks.append(b)
        seeds = next_frontier(seeds, b.rows, num_nodes)
    return blocks


# ----------------------------------------------------------------------------- FastGCN
def fastgcn_layer(indptr, indices, values, num_nodes: int, cols, k: int, p) -> Block:
    """One FastGCN layer: ``k`` rows drawn by ``torch.multinomial`` without replacement with
    the node probabilities ``p`` among the rows with an edge into the frontier and ``p > 0``
    (all of them when there are at most ``k``); every frontier in-edge from a chosen row is
    kept with value ``w / p[row]``; each column is normalised to sum to 1."""
    _ptr, col, pos = frontier_edges(indptr, cols)
    rows = indices[pos]
    w = torch.ones(pos.numel(), dtype=p.dtype, device=p.device) if values is None else values[pos]
    has = torch.zeros(num_nodes, dtype=torch.bool, device=rows.device)
    has[rows] = True
    cand = (has & (p > 0)).nonzero().squeeze(1)
    return _keep_chosen_rows(cand, p, k, rows, col, w, cols, num_nodes)


def fastgcn(indptr, indices, values, num_nodes: int, seeds, layers=(2000, 2000), degree=None):
    """FastGCN layer-wise sampling, bias = degree (weighted out-degree by default)."""
    if degree is None:
        w = torch.ones(indices.numel(), device=indices.device) if values is None else values
        degree = torch.zeros(num_nodes, dtype=w.dtype, device=w.device).index_add_(0, indices, w)
    p = degree / degree.sum().clamp(min=1e-30)
    blocks = []
    for k in layers:
        b = fastgcn_layer(indptr, indices, values, num_nodes, seeds, k, p)
        blocks.append(b)
        seeds = next_frontier(seeds, b.rows, num_nodes)
    return blocks


# ----------------------------------------------------------------------------- ShaDow-KHop
def induced(indptr, indices, num_nodes: int, nodes) -> Block:
    """Every edge of the graph between two of ``nodes`` (columns = ``nodes``)."""
    _ptr, col, pos = frontier_edges(indptr, nodes)
    inside = torch.zeros(num_nodes, dtype=torch.bool, device=nodes.device)
    inside[nodes] = True
    rows = indices[pos]
    kept = inside[rows].nonzero().squeeze(1)
    counts = torch.bincount(col[kept], minlength=nodes.numel())
    return Block(_exclusive_cumsum(counts), rows[kept], nodes)


def shadow(indptr, indices, num_nodes: int, seeds, fanouts=(10, 10)):
    """ShaDow-KHop: GraphSAGE hops for the node set, then the subgraph it induces;
    returns ``(subgraph, nodes)``."""
    nodes = seeds
    for k in fanouts:
        b = sage_layer(indptr, indices, nodes, k)
        nodes = next_frontier(nodes, b.rows, num_nodes)
    return induced(indptr, indices, num_nodes, nodes), nodes


# ----------------------------------------------------------------------------- PASS
def pass_layer(indptr, indices, values, num_nodes: int, cols, k: int, X, W1, W2, W3) -> Block:
    """One PASS layer: attention over three scores per in-edge of the frontier, then ``k``
    draws per column with replacement proportional to it (inverse CDF on a running sum per
    column, all columns at once)."""
    ptr, col, pos = frontier_edges(indptr, cols)
    rows = indices[pos]
    w = torch.ones(pos.numel(), device=cols.device) if values is None else values[pos]
    uniq, local = torch.unique(rows, return_inverse=True)  # the compacted row space
    u, v = X[uniq], X[cols]
    att1 = ((u @ W1)[local] * (v @ W1)[col]).sum(1)
    att2 = ((u @ W2)[local] * (v @ W2)[col]).sum(1)
    colsum = torch.zeros(cols.numel(), dtype=w.dtype, device=w.device).index_add_(0, col, w)
    att3 = w / colsum[col]
    scores = torch.stack([att1, att2, att3], dim=1)
    att = torch.relu(scores @ torch.softmax(W3, dim=0)).squeeze(1) + 1e-9
    deg = ptr[1:] - ptr[:-1]
    nz = (deg > 0).nonzero().squeeze(1)
    cum = torch.cumsum(att.double(), 0)
    before = torch.cat([cum.new_zeros(1), cum])[ptr]  # running sum at each column
    total = before[1:] - before[:-1]
    draw_col = nz.repeat_interleave(k)
    target = (
        before[draw_col]
        + torch.rand(draw_col.numel(), dtype=torch.float64, device=cols.device) * total[draw_col]
    )
    e = torch.searchsorted(cum, target, right=True)
    e = torch.minimum(torch.maximum(e, ptr[draw_col]), ptr[draw_col + 1] - 1)
    e = torch.sort(e).values  # column order
    counts = torch.where(deg > 0, k, 0)
    return Block(_exclusive_cumsum(counts), rows[e], cols)


def pass_sampler(indptr, indices, values, num_nodes: int, seeds, X, W1, W2, W3, fanouts=(10, 10)):
    """PASS: ``fanouts[l]`` draws with replacement per frontier node by learned attention."""
    blocks = []
    for k in fanouts:
        b = pass_layer(indptr, indices, values, num_nodes, seeds, k, X, W1, W2, W3)
        blocks.append(b)
        seeds = next_frontier(seeds, b.rows, num_nodes)
    return blocks
