"""Forest fire sampling (Leskovec and Faloutsos, KDD 2006), written in the gsample DSL.

"Sampling from Large Graphs": a fire starts at each seed; a burning node ``v``
draws ``x`` from a geometric law with mean ``p / (1 - p)`` (``P(x) = (1 - p) p^x``,
``x = 0, 1, ...``; ``p`` the forward burning probability, 0.7 in the paper) and
sets fire to ``x`` of its neighbours that have not burned yet, chosen uniformly
(all of them when it has fewer); the newly burned nodes burn in turn. docs/architecture.md §7,
entry 19: ``p = 0.7``, depth 2. The fire spreads along in-edges (the direction
every gsample op reads; pass the transposed graph for out-links).

Each hop is written with gsample's keyed random values:

1. the count: ``A.random_count(frontier, "geometric", p)``, one ``x`` per burning node;
2. the choice: ``A.random_uniform`` of the rows of the frontier's in-edges, one uniform per
   edge, orders each node's unburned in-neighbours uniformly at random (``argsort``); the
   first ``x`` of that order burn (a uniform ``x``-subset, all of them when there are fewer);
3. the filter: ``filter_edges(burns)`` keeps those edges; the columns of nodes that burn
   nothing (``x = 0``, or no unburned in-neighbour) are dropped first by a column slice.

The difference from the paper's process: the nodes of one hop burn in parallel, so two of
them may set the same unburned node on fire (the sequential process would not let the
second one choose it).

Run it from the repository root (after ``pip install -e .``)::

    python examples/forest_fire.py                     # an R-MAT graph
    python examples/forest_fire.py --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools
import time

import torch
from common import graph_parser, load_graph, seed_nodes

import gsample as gs


def _candidates(sub, burned):
    """1.0 on the edges of ``sub`` that may burn, else 0.0, shape (E,): one edge per
    (in-neighbour, node) pair (the first of parallel edges) whose in-neighbour has not
    burned."""
    rows, cols, _ = sub.edges()
    _, pair = torch.unique(cols * sub.num_nodes + rows, return_inverse=True)
    position = torch.arange(rows.numel(), device=rows.device)
    first = torch.zeros_like(rows).scatter_reduce(0, pair, position, "amin", include_self=False)
    keep = torch.logical_and(first[pair] == position, ~torch.isin(rows, burned))
    return keep.to(torch.float32)


def forest_fire(A, seeds, p=0.7, depth=2):
    """Burn ``depth`` hops of forest fire from the seeds.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph; the fire moves from a node to its in-neighbours.
    seeds : LongTensor, shape (B,)
        Global ids of the nodes that burn first (unique).
    p : float
        Forward burning probability, ``0 <= p < 1``: a burning node sets fire to
        ``min(x, f)`` of its ``f`` unburned in-neighbours, ``P(x) = (1 - p) p^x``.
    depth : int
        Hops the fire spreads.

    Returns
    -------
    blocks : list of gs.Matrix
        ``blocks[h]`` has shape ``(N, F_h)``: its columns are hop ``h``'s burning
        nodes that set at least one fire (nodes of the hop's frontier, in frontier
        order; the frontier of hop 0 is the seeds, of hop ``h + 1`` the nodes
        ``blocks[h]`` set on fire), and column ``v`` holds the edges ``(u, v)`` to
        the in-neighbours ``u`` it set on fire, with their values.
    burned : LongTensor, shape (n,)
        Every burned node, unique: the seeds, then each hop's new nodes
        (``blocks[h].row()``).

    Notes
    -----
    A mini-batch whose fire dies out before ``depth`` hops (every frontier node
    draws 0 or has no unburned in-neighbour: about ``(1 - p)^B`` for ``B`` seeds with
    in-edges) returns blocks of no column for the hops after: an empty frontier is a
    slice of no column. The seeds must be unique (the loader's are). The sample is
    the same eager and compiled and on the CUDA backend (uniform draws and 0/1
    weights), and ``super_batch=4`` in ``gs.DataLoader`` gives the same batches.
    """
    burned = frontier = seeds
    blocks = []
    for _ in range(depth):
        # 1. how many in-neighbours each frontier node sets on fire
        count = A.random_count(frontier, "geometric", p=p)  # x, (F,)
        # 2. the unburned in-neighbours; keep the nodes that burn something
        sub = A[:, frontier]
        unburned = (sub**0 * _candidates(sub, burned)).sum(axis=0)  # per frontier node
        fire = torch.logical_and(count > 0, unburned > 0)  # (`&` would block super_batch)
        sub, count = sub[:, frontier[fire]], count[fire]
        # 3. a uniformly random order of each node's unburned in-neighbours: the first
        # `count` of it burn
        rows, cols, _ = sub.edges()
        ok = _candidates(sub, burned) > 0
        order = torch.where(ok, A.random_uniform(rows), 2.0)  # the others last
        limit = (sub**0).mul(count.to(torch.float32), axis=0).values  # count per edge
        burns = torch.logical_and(ok, _rank_in_column(cols, order) < limit)
        s = sub.filter_edges(burns)
        blocks.append(s)
        frontier = s.row()  # newly burned, unique
        burned = torch.cat([burned, frontier])
    return blocks, burned


def _rank_in_column(cols, key):
    """Each edge's rank by ``key`` (ascending, ties by position) among the edges of its
    column, shape (E,); ``cols``: the edges' columns (node ids, one column per id)."""
    by_key = torch.argsort(key, stable=True)
    order = by_key[torch.argsort(cols[by_key], stable=True)]
    sorted_cols = cols[order]
    first = torch.searchsorted(sorted_cols, sorted_cols)  # where each column starts
    rank = torch.arange(order.numel(), device=cols.device) - first  # in sorted order
    return rank[torch.argsort(order)]  # (no in-place write)


def main(argv=None):
    p = graph_parser(__doc__)
    p.add_argument("--p", type=float, default=0.7, help="forward burning probability")
    p.add_argument("--depth", type=int, default=2)
    args = p.parse_args(argv)
    A = load_graph(args)
    sampler = functools.partial(forest_fire, p=args.p, depth=args.depth)
    gs.manual_seed(0)
    seeds = seed_nodes(A.num_nodes, args.batch_size * args.batches)
    loader = gs.DataLoader(A, sampler, seeds, args.batch_size)
    start, edges, nodes = time.perf_counter(), 0, 0
    for batch in loader:
        blocks, burned = batch.out
        edges += sum(b.num_edges for b in blocks)
        nodes += burned.numel()
    elapsed = time.perf_counter() - start
    print(
        f"forest_fire: {len(loader)} batches of {args.batch_size} seeds, {nodes} burned nodes, "
        f"{edges} burned edges, {edges / elapsed:,.0f} edges/s"
    )


if __name__ == "__main__":
    main()
