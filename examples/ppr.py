"""Personalized-PageRank walks: random walks with termination, or with restart to the root.

* ``variant="termination"``: before each step the walk ends with probability
  ``alpha`` (0.15 in Skywalker+, 0.01 in NextDoor), so its length is geometric; the visits
  of many such walks from a seed estimate its PPR vector.
* ``variant="restart"``: a walk of fixed length that goes back to its seed with probability
  ``alpha`` at each step (random walk with restart), as PinSAGE's importance walks.

Run it from the repository root (after ``pip install -e .``)::

    python examples/ppr.py --alpha 0.15
    python examples/ppr.py --variant restart --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools

import torch
from common import load_graph, run_walks, walk_parser


def ppr(A, seeds, length=80, alpha=0.15, variant="termination"):
    """One PPR walk per seed.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph.
    seeds : LongTensor, shape (B,)
        Start nodes (repeat a seed for several walks from it).
    length : int
        At most this many steps.
    alpha : float
        Termination (or restart) probability per step.
    variant : {"termination", "restart"}

    Returns
    -------
    LongTensor, shape (B, length + 1)
        The walks; after a termination (or at a node without in-edges) ``-1``.

    Examples
    --------
    >>> walks = gs.compile(ppr)(A, seeds.repeat_interleave(100), alpha=0.15)
    """
    if variant == "termination":
        return A.random_walk(seeds, length, stop_prob=alpha)
    if variant == "restart":
        return A.random_walk(seeds, length, restart_prob=alpha)
    raise ValueError(f"variant: must be 'termination' or 'restart', got {variant!r}")


def visit_frequencies(walks, num_nodes):
    """How often each node is visited over all ``walks`` (shape (N,), summing to 1): with
    termination walks from one seed, an estimate of that seed's PPR vector."""
    nodes = walks[walks >= 0]
    return torch.bincount(nodes, minlength=num_nodes).double() / max(nodes.numel(), 1)


def main(argv=None):
    p = walk_parser(__doc__)
    p.add_argument("--alpha", type=float, default=0.15)
    p.add_argument("--variant", choices=["termination", "restart"], default="termination")
    args = p.parse_args(argv)
    sampler = functools.partial(ppr, length=args.length, alpha=args.alpha, variant=args.variant)
    run_walks(f"ppr-{args.variant}", load_graph(args), sampler, args)


if __name__ == "__main__":
    main()
