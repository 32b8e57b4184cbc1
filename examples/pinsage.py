"""PinSAGE importance-based neighbourhoods (Ying et al., 2018), written in the gsample DSL.

PinSAGE does not aggregate over a node's graph neighbours: it runs short random walks with
restart from the node and takes the ``k`` nodes its walks visit most often as its
neighbours, weighted by their visit counts (the weights of its importance pooling). Here
every seed starts ``num_walks`` walks of ``length`` steps (100 walks of 3 steps, ``k = 10``,
as in docs/architecture.md §7); at each step a walk goes back to its seed with probability
``restart_prob`` (0.5, DGL's ``PinSAGESampler`` default), else to a uniform in-neighbour.
Visits of the seed itself do not count (a node is not its own neighbour; DGL's sampler
counts them). Ties in the counts go to the smaller node id, so the result is a function of
the walks alone.

The walks are one ``A.random_walk`` (every draw keyed, docs/architecture.md §3); counting and the
top-k are plain torch code on them. The neighbours are not edges of ``A`` (they are up to
``length`` hops away): :func:`pinsage` returns them as dense ``(B, k)`` tensors, and
:func:`pinsage_block` as a block (``A.from_neighbors``: column ``i`` the seed, its
neighbours the rows, the visit counts the values), which converts and chains as a sampled
block does.

Super-batching: ``gs.DataLoader(..., super_batch=4)`` works (the walks of all the
mini-batches run in one walk launch; the counting runs per mini-batch).

Run it from the repository root (after ``pip install -e .``)::

    python examples/pinsage.py                         # an R-MAT graph
    python examples/pinsage.py --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools
import time

import torch
from common import graph_parser, load_graph, seed_nodes

import gsample as gs


def pinsage(A, seeds, num_walks=100, length=3, restart_prob=0.5, k=10):
    """The ``k`` most visited nodes of walks with restart from each seed.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph (walks move along in-edges, as every gsample select op reads).
    seeds : LongTensor, shape (B,)
        Global ids of the mini-batch's target nodes.
    num_walks : int
        Walks started from each seed.
    length : int
        Steps per walk.
    restart_prob : float
        Probability that a step goes back to the seed instead of to an in-neighbour.
    k : int
        Neighbours kept per seed.

    Returns
    -------
    neighbors : LongTensor, shape (B, k)
        Row ``i``: the nodes other than ``seeds[i]`` visited most often by its walks, by
        decreasing visit count, ties by increasing node id; ``-1`` after the last one
        when fewer than ``k`` were visited.
    weights : Tensor, shape (B, k), float32
        Their visit counts (0 where ``neighbors`` is -1); divide by the row sum for
        PinSAGE's normalised importance weights.

    Examples
    --------
    >>> nbrs, w = gs.compile(pinsage)(A, seeds)
    """
    walks = A.random_walk(
        seeds.repeat_interleave(num_walks), length, restart_prob=restart_prob
    )  # (B * W, L + 1)
    visits = walks[:, 1:].reshape(-1, num_walks * length)  # (B, W * L)
    return top_visited(visits, seeds, k, A.num_nodes, num_walks * length)


def pinsage_block(A, seeds, num_walks=100, length=3, restart_prob=0.5, k=10):
    """:func:`pinsage` as a block: column ``i`` is ``seeds[i]`` and holds its ``k`` most
    visited nodes (fewer when its walks visited fewer), their visit counts as values
    (``A.from_neighbors``). Same parameters as :func:`pinsage`.

    Returns
    -------
    gs.Matrix, shape (N, B)
        The neighbours as a block: ``to_pyg()`` gives PinSAGE's ``edge_index`` (neighbour
        -> seed) with the counts as ``edge_weight``; ``all_nodes()`` the next frontier.

    Examples
    --------
    >>> block = gs.compile(pinsage_block)(A, seeds)
    """
    neighbors, weights = pinsage(A, seeds, num_walks, length, restart_prob, k)
    return A.from_neighbors(seeds, neighbors, weights)


def top_visited(visits, seeds, k, num_nodes, most):
    """Per row of ``visits`` (shape (B, V), -1 for no visit), the ``k`` most frequent ids
    other than ``seeds[row]``: ``(ids (B, k) -1-padded, counts (B, k) float32)``; ``most``
    is an upper bound of a count (``V``). Plain torch code, deterministic."""
    row = torch.cumsum(torch.ones_like(seeds), 0) - 1  # 0 .. B - 1
    row = row.unsqueeze(1).expand_as(visits)
    # torch.logical_and, not `&`: the super-batch pass takes operator.and_ (its name ends
    # in '_') for an in-place write and refuses the sampler
    keep = torch.logical_and(visits >= 0, visits != seeds.unsqueeze(1))
    pair, count = torch.unique(row[keep] * num_nodes + visits[keep], return_counts=True)
    r, node = pair // num_nodes, pair % num_nodes  # sorted by (r, node)
    # by row, then count descending; the stable sort keeps ascending ids among equal counts
    order = torch.sort(r * (most + 1) + (most - count), stable=True).indices
    r, node, count = r[order], node[order], count[order]
    rank = torch.cumsum(torch.ones_like(r), 0) - 1 - torch.searchsorted(r, r)
    top = rank < k
    empty = torch.zeros_like(seeds).unsqueeze(1).repeat(1, k)
    at = (r[top], rank[top])
    neighbors = (empty - 1).index_put(at, node[top])
    weights = empty.float().index_put(at, count[top].float())
    return neighbors, weights


def main(argv=None):
    p = graph_parser(__doc__, batch_size=512)
    p.add_argument("--num-walks", type=int, default=100)
    p.add_argument("--length", type=int, default=3)
    p.add_argument("--restart-prob", type=float, default=0.5)
    p.add_argument("--k", type=int, default=10)
    args = p.parse_args(argv)
    A = load_graph(args)
    sampler = functools.partial(
        gs.compile(pinsage),
        num_walks=args.num_walks,
        length=args.length,
        restart_prob=args.restart_prob,
        k=args.k,
    )
    gs.manual_seed(0)
    seeds = seed_nodes(A.num_nodes, args.batch_size * args.batches)
    loader = gs.DataLoader(A, sampler, seeds, args.batch_size)
    start, found = time.perf_counter(), 0
    for batch in loader:
        found += int((batch.out[0] >= 0).sum())
    elapsed = time.perf_counter() - start
    print(
        f"pinsage: {len(loader)} batches of {args.batch_size} seeds, {found} neighbours, "
        f"{len(seeds) * args.num_walks * args.length / elapsed:,.0f} walk steps/s"
    )


if __name__ == "__main__":
    main()
