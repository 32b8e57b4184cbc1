"""Snowball sampling (Goodman, 1961), written in the gsample DSL.

From a uniform random sample of seed nodes, take *every* neighbour of the
sample, then every neighbour of those, up to a depth (the "waves" of the
snowball). Nothing is random but the seeds: ``gs.DataLoader`` draws them, its
shuffled mini-batches being uniform random sets of the seed pool (a uniform
permutation from gsample's hash each epoch). docs/architecture.md §7, entry 20: all
neighbours up to depth 2 from uniform seeds.

Neighbours are in-neighbours (the direction every gsample op reads; pass the
transposed or symmetrised graph for out- or all neighbours). The blocks are
DGL-style, as :mod:`graphsage`'s: each wave takes all in-edges of the whole
frontier so far, so a GNN layer can run on each.

Run it from the repository root (after ``pip install -e .``)::

    python examples/snowball.py                        # an R-MAT graph
    python examples/snowball.py --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools

from common import graph_parser, load_graph, run_batches


def snowball(A, seeds, depth=2):
    """Every in-edge of the seeds' ``depth``-hop in-neighbourhood, wave by wave.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph.
    seeds : LongTensor, shape (B,)
        Global ids of the seed nodes (the loader's shuffled mini-batch: uniform).
    depth : int
        Waves of the snowball.

    Returns
    -------
    list of gs.Matrix
        ``blocks[l] = A[:, frontier_l]``, shape ``(N, C_l)``: every in-edge of the
        nodes within ``l`` hops (``frontier_0`` = the seeds; ``frontier_{l+1} =
        blocks[l].all_nodes()``: the frontier first, then the new in-neighbours).
        ``blocks[-1].all_nodes()`` is the whole snowball: every node within
        ``depth`` in-hops of a seed.

    Notes
    -----
    No select op: the sample is a deterministic function of the seeds, the same
    on every backend, with or without ``super_batch`` (``super_batch=4`` in
    ``gs.DataLoader`` gives the same batches).
    """
    blocks = []
    for _ in range(depth):
        s = A[:, seeds]  # every in-edge of the frontier
        blocks.append(s)
        seeds = s.all_nodes()  # frontier first, then the new wave
    return blocks


def main(argv=None):
    p = graph_parser(__doc__, batch_size=64)
    p.add_argument("--depth", type=int, default=2)
    args = p.parse_args(argv)
    A = load_graph(args)
    run_batches("snowball", A, functools.partial(snowball, depth=args.depth), args)


if __name__ == "__main__":
    main()
