"""DeepWalk (Perozzi et al., 2014): uniform random walks, written in the gsample DSL.

Each walk starts at a seed and moves ``length`` times to a uniformly chosen in-neighbour
(a row of the current node's column); a walk that reaches a node without in-edges stops
there, and the rest of its row is ``-1``. The walks then feed a skip-gram model.

Run it from the repository root (after ``pip install -e .``)::

    python examples/deepwalk.py                        # an R-MAT graph, length 80
    python examples/deepwalk.py --snap ../shared/data/web-NotreDame.txt.gz --device cuda
"""

import functools

from common import load_graph, run_walks, walk_parser


def deepwalk(A, seeds, length=80):
    """One uniform walk per seed.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph; column ``j`` holds the in-edges of node ``j``.
    seeds : LongTensor, shape (B,)
        Start nodes of the mini-batch's walks.
    length : int
        Steps per walk (80 in gSampler, 100 in NextDoor and Skywalker+).

    Returns
    -------
    LongTensor, shape (B, length + 1)
        ``walks[b, 0] = seeds[b]``; ``walks[b, t + 1]`` is an in-neighbour of
        ``walks[b, t]``, or ``-1`` once the walk stopped.

    Examples
    --------
    >>> walks = gs.compile(deepwalk)(A, seeds)
    """
    return A.random_walk(seeds, length)


def main(argv=None):
    args = walk_parser(__doc__).parse_args(argv)
    run_walks("deepwalk", load_graph(args), functools.partial(deepwalk, length=args.length), args)


if __name__ == "__main__":
    main()
