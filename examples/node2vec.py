"""node2vec (Grover and Leskovec, 2016): second-order random walks, in the gsample DSL.

From the second step on, a candidate ``x`` of the current node, coming from node ``u``,
weighs ``1/p`` when ``x == u`` (return), ``1`` when ``x -> u`` is an edge (a neighbour of
``u``) and ``1/q`` otherwise; static edge weights, when given, multiply in. gsample draws
these steps exactly, by rejection from the first-order step with an exact edge test (a
binary search in ``u``'s sorted in-neighbours).

Run it from the repository root (after ``pip install -e .``)::

    python examples/node2vec.py                        # p = 2, q = 0.5, length 80
    python examples/node2vec.py --snap ../shared/data/web-NotreDame.txt.gz --device cuda
"""

import functools

from common import load_graph, run_walks, walk_parser


def node2vec(A, seeds, length=80, p=2.0, q=0.5, weighted=False):
    """One node2vec walk per seed.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph.
    seeds : LongTensor, shape (B,)
        Start nodes.
    length : int
        Steps per walk.
    p, q : float
        Return and in-out parameters (``p = 2, q = 0.5``: gSampler's W3).
    weighted : bool
        Multiply the node2vec weights by the graph's edge weights.

    Returns
    -------
    LongTensor, shape (B, length + 1)
        ``walks[b, 0] = seeds[b]``, then one in-neighbour per step; ``-1`` once the walk
        reached a node without in-edges.

    Examples
    --------
    >>> walks = gs.compile(node2vec)(A, seeds, p=2.0, q=0.5)
    """
    return A.random_walk(seeds, length, probs=A.values if weighted else None, p=p, q=q)


def main(argv=None):
    parser = walk_parser(__doc__)
    parser.add_argument("-p", type=float, default=2.0)
    parser.add_argument("-q", type=float, default=0.5)
    args = parser.parse_args(argv)
    sampler = functools.partial(node2vec, length=args.length, p=args.p, q=args.q)
    run_walks("node2vec", load_graph(args), sampler, args)


if __name__ == "__main__":
    main()
