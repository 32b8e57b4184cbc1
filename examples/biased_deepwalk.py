"""Biased DeepWalk: random walks whose steps follow static edge weights.

Each step moves to an in-neighbour with probability proportional to the weight of the
edge it takes: the graph's own edge weights (``bias="weight"``, e.g. uniform in [1, 5)),
or the degree of the neighbour it moves to (``bias="degree"``). The weights depend on the
graph alone, so a compiled sampler builds their alias tables once per graph (the
pre-processing pass) and every step is O(1).

Run it from the repository root (after ``pip install -e .``)::

    python examples/biased_deepwalk.py                 # a weighted R-MAT graph, length 100
    python examples/biased_deepwalk.py --bias degree --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools

import torch
from common import run_walks, walk_parser

import gsample as gs


def biased_deepwalk(A, seeds, length=100, bias="weight"):
    """One weighted walk per seed.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph; its values are the edge weights for ``bias="weight"``.
    seeds : LongTensor, shape (B,)
        Start nodes.
    length : int
        Steps per walk.
    bias : {"weight", "degree"}
        Step weights: the edge's weight, or the degree (in plus out) of the node it leads
        to: the edge ``i -> j``, taken from ``j``, weighs ``deg(i) >= 1``.

    Returns
    -------
    LongTensor, shape (B, length + 1)
        As :func:`deepwalk.deepwalk`; a step along edge ``e`` of node ``v``'s column has
        probability ``w_e / sum of w over v's column``.

    Examples
    --------
    >>> walks = gs.compile(biased_deepwalk)(A, seeds, bias="degree")
    """
    if bias == "weight":
        probs = A.values
    elif bias == "degree":
        ones = A**0  # 1.0 on every edge
        degree = ones.sum(axis=0) + ones.sum(axis=1)  # in + out degree, per node
        probs = ones.mul(degree, axis=1)  # edge i -> j weighs deg(i)
    else:
        raise ValueError(f"bias: must be 'weight' or 'degree', got {bias!r}")
    return A.random_walk(seeds, length, probs=probs)


def weighted_graph(args):
    """The ``--snap`` graph with fixed weights uniform in [1, 5), or a weighted R-MAT."""
    if not args.snap:
        return gs.datasets.rmat(args.num_nodes, args.num_edges, seed=0, weighted=True)
    A = gs.datasets.read_snap(args.snap)
    src, dst, _ = A.edges()
    w = 1 + 4 * torch.rand(A.num_edges, generator=torch.Generator().manual_seed(0))
    return gs.Matrix.from_edge_index(torch.stack([src, dst]), num_nodes=A.num_nodes, weight=w)


def main(argv=None):
    p = walk_parser(__doc__, length=100)
    p.add_argument("--bias", choices=["weight", "degree"], default="weight")
    args = p.parse_args(argv)
    sampler = functools.partial(biased_deepwalk, length=args.length, bias=args.bias)
    run_walks("biased_deepwalk", weighted_graph(args), sampler, args)


if __name__ == "__main__":
    main()
