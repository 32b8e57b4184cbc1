"""Random walk with jump: at each step, with probability ``jump`` (0.1), the walker jumps to
a node drawn uniformly from the whole graph instead of moving to an in-neighbour (the
teleport of PageRank; it also lets walks leave dead ends' neighbourhoods).

Run it from the repository root (after ``pip install -e .``)::

    python examples/walk_with_jump.py --jump 0.1
"""

import functools

from common import load_graph, run_walks, walk_parser


def walk_with_jump(A, seeds, length=80, jump=0.1):
    """One walk with jumps per seed.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph.
    seeds : LongTensor, shape (B,)
        Start nodes.
    length : int
        Steps per walk.
    jump : float
        Probability of a jump at each step.

    Returns
    -------
    LongTensor, shape (B, length + 1)
        Each step is an in-neighbour of the previous node or a jump; a walk stops (``-1``)
        only when it must move from a node without in-edges.

    Examples
    --------
    >>> walks = gs.compile(walk_with_jump)(A, seeds, jump=0.1)
    """
    return A.random_walk(seeds, length, jump_prob=jump)


def main(argv=None):
    p = walk_parser(__doc__)
    p.add_argument("--jump", type=float, default=0.1)
    args = p.parse_args(argv)
    sampler = functools.partial(walk_with_jump, length=args.length, jump=args.jump)
    run_walks("walk_with_jump", load_graph(args), sampler, args)


if __name__ == "__main__":
    main()
