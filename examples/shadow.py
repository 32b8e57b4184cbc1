"""ShaDow-KHop sampling (Zeng et al., 2021), written in the gsample DSL.

From the seeds, ``len(fanouts)`` hops of GraphSAGE-style neighbour sampling
collect a node set; the sample is the subgraph those nodes induce in the graph
(every edge between two of them, sampled or not).

Run it from the repository root (after ``pip install -e .``)::

    python examples/shadow.py                          # an R-MAT graph
    python examples/shadow.py --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools

from common import graph_parser, load_graph, run_batches


def shadow(A, seeds, fanouts=(10, 10)):
    """Sample the subgraph induced by the seeds' sampled k-hop neighbourhood.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph.
    seeds : LongTensor, shape (B,)
        Global ids of the mini-batch's target nodes.
    fanouts : sequence of int
        In-neighbours kept per node at each hop (without replacement).

    Returns
    -------
    subgraph : gs.Matrix, shape (n, n)
        ``A[nodes, nodes]``: every edge of ``A`` between two of ``nodes``.
    nodes : LongTensor, shape (n,)
        The node set, unique, seeds first.
    """
    nodes = seeds
    for k in fanouts:
        nodes = A[:, nodes].individual_sample(k).all_nodes()  # frontier first, then new
    return A[nodes, nodes], nodes


def main(argv=None):
    p = graph_parser(__doc__)
    p.add_argument("--fanouts", type=int, nargs="+", default=[10, 10])
    args = p.parse_args(argv)
    A = load_graph(args)
    sampler = functools.partial(shadow, fanouts=args.fanouts)
    run_batches("shadow", A, sampler, args)


if __name__ == "__main__":
    main()
