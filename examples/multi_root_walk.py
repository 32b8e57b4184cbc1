"""Multi-root walk / multi-dimensional random walk (frontier sampling; Ribeiro and Towsley,
2010), written in the gsample DSL.

A walk with many roots: the frontier starts as the mini-batch's ``m`` roots; at each step
one frontier node is picked with probability proportional to its in-degree and replaced by
one of its in-neighbours drawn uniformly, and the edge it moved along is sampled. NextDoor
evaluates it with 100 roots per sample and 100 steps, c-saw with a frontier of 2000 (the
mini-batch size here: ``--batch-size 2000``).

The walk is ``gs.walk`` of one step, :func:`frontier_step`: the frontier is the walk's
positions (one walker per root) and the sampled edges its state. A step is two select
operators: ``A[:, frontier].compact().T.collective_sample(1, node_probs=deg, replace=True)``
draws one row of the transposed slice, i.e. one frontier entry, with probability
proportional to its degree (a frontier node without in-edges has an empty row and is never
picked), and ``A[:, v].individual_sample(1)`` draws its uniform in-neighbour. Together they
pick every in-edge of the frontier with the same probability ``1 / sum(deg)``. Frontier
entries on the same node are interchangeable, so the first one is replaced. Compiled, the
step is traced once (twice: the first step apart) and copied ``length`` times into the
program, where a Python loop would be traced ``length`` times. What the DSL still lacks: a
way to draw one edge uniformly from a whole matrix in one operator. When every frontier
node is a dead end the walk stops (the remaining steps sample nothing).

Super-batching: ``gs.DataLoader(..., super_batch=4)`` works.

Run it from the repository root (after ``pip install -e .``)::

    python examples/multi_root_walk.py                 # 100 roots, 100 steps (NextDoor)
    python examples/multi_root_walk.py --batch-size 2000 --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools
import time

import torch
from common import graph_parser, load_graph, seed_nodes

import gsample as gs


def multi_root_walk(A, roots, length=100):
    """Frontier sampling from ``roots``: ``length`` degree-biased steps of one walker each.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph (walkers move along in-edges, as every gsample select op reads).
    roots : LongTensor, shape (m,)
        The initial frontier (repeats are separate walkers).
    length : int
        Steps: edges sampled.

    Returns
    -------
    src, dst, eid : LongTensor, shape (S,)
        The sampled edges in step order: at step ``t`` a walker on ``dst[t]`` moved to
        ``src[t]`` along edge ``eid[t]`` (``src[t] -> dst[t]`` is an edge of ``A``).
        ``S = length`` unless every frontier node became a dead end first.
    frontier : LongTensor, shape (m,)
        The walkers' final nodes.
    """
    empty = roots[:0].to(torch.int64)
    walks, (src, dst, eid) = gs.walk(frontier_step, A, roots, length, state=(empty, empty, empty))
    return src, dst, eid, walks[:, -1]


def frontier_step(A, frontier, prev, t, sampled):
    """One step of :func:`multi_root_walk` (a ``gs.walk`` step): a frontier entry drawn in
    proportion to its in-degree moves to a uniform in-neighbour; the edge joins ``sampled``
    (``(src, dst, eid)`` so far). Returns the next frontier and the edges."""
    sub = A[:, frontier].compact()  # rows: the in-neighbours only
    deg = (sub * 0.0 + 1.0).sum(axis=0)  # (m,): in-degree of each walker
    v = sub.T.collective_sample(1, node_probs=deg, replace=True).row_ids  # (1,) or (0,)
    r, c, e = A[:, v].individual_sample(1).edges()  # its uniform in-neighbour
    match = torch.isin(frontier, v)
    first = torch.logical_and(match, torch.cumsum(match, 0) == 1)
    src, dst, eid = sampled
    return (
        frontier.masked_scatter(first, r),  # the walker moves
        (torch.cat([src, r]), torch.cat([dst, c]), torch.cat([eid, e])),
    )


def main(argv=None):
    p = graph_parser(__doc__, batch_size=100)
    p.add_argument("--length", type=int, default=100)
    args = p.parse_args(argv)
    A = load_graph(args)
    sampler = functools.partial(gs.compile(multi_root_walk), length=args.length)
    gs.manual_seed(0)
    roots = seed_nodes(A.num_nodes, args.batch_size * args.batches)
    loader = gs.DataLoader(A, sampler, roots, args.batch_size)
    sampler(A, roots[: args.batch_size])  # compile first (the steps are unrolled)
    start, edges = time.perf_counter(), 0
    for batch in loader:
        edges += batch.out[0].numel()
    elapsed = time.perf_counter() - start
    print(
        f"multi_root_walk: {len(loader)} batches of {args.batch_size} roots, "
        f"{edges} sampled edges, {edges / elapsed:,.0f} sampled edges/s"
    )


if __name__ == "__main__":
    main()
