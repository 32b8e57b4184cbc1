"""GraphSAINT random-walk sampler (Zeng et al., "GraphSAINT: Graph Sampling Based
Inductive Learning Method", ICLR 2020), written in the gsample DSL.

Each mini-batch is one subgraph: from each of its ``r`` roots (2000) a uniform random
walk of ``length`` (4) steps along in-edges (``A.random_walk``); the sample is the
subgraph the visited nodes induce, ``A[nodes, nodes]``.

The mini-batch's ``seeds`` are the roots. GraphSAINT draws them uniformly from the
training nodes; ``gs.DataLoader(A, graphsaint_rw, train_ids, batch_size=2000)`` (shuffled
by default) gives each epoch disjoint uniformly drawn root sets, without replacement
within an epoch. The roots come first among the subgraph's nodes, so ``batch.to_pyg()``
puts them first too. ``super_batch`` works: the walks of N mini-batches run as one walk
op (each walker keyed by its mini-batch and its position in it), the rest per mini-batch.

Run it from the repository root (after ``pip install -e .``)::

    python examples/graphsaint_rw.py                   # an R-MAT graph
    python examples/graphsaint_rw.py --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools

import torch
from common import graph_parser, load_graph, run_batches


def graphsaint_rw(A, seeds, length=4, return_walks=False):
    """Sample one GraphSAINT-RW subgraph.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph; column ``j`` holds the in-edges of node ``j``.
    seeds : LongTensor, shape (r,)
        The roots, one walk each; no repeats (they become rows of ``A[nodes, nodes]``).
    length : int
        Steps per walk (a walk ends early at a node without in-edges).
    return_walks : bool
        Also return the walks.

    Returns
    -------
    subgraph : gs.Matrix, shape (n, n)
        ``A[nodes, nodes]``: every edge of ``A`` between two of ``nodes``.
    nodes : LongTensor, shape (n,)
        The visited nodes, unique: the roots in their order, then the others in
        ascending id order.
    walks : LongTensor, shape (r, length + 1)
        Only with ``return_walks``: row ``i`` is root ``i``'s walk, ``-1`` after it stops.
    """
    walks = A.random_walk(seeds, length)  # (r, length + 1): the roots, then steps
    visited = walks[:, 1:].reshape(-1)
    others = torch.unique(visited[visited >= 0])  # ascending
    nodes = torch.cat([seeds, others[~torch.isin(others, seeds)]])
    if return_walks:
        return A[nodes, nodes], nodes, walks
    return A[nodes, nodes], nodes


def main(argv=None):
    p = graph_parser(__doc__, batch_size=2000)
    p.add_argument("--length", type=int, default=4)
    args = p.parse_args(argv)
    A = load_graph(args)
    run_batches("graphsaint_rw", A, functools.partial(graphsaint_rw, length=args.length), args)


if __name__ == "__main__":
    main()
