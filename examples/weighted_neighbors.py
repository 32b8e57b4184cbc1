"""Weighted neighbour sampling, written in the gsample DSL.

GraphSAGE-style node-wise sampling (Hamilton et al., 2017) in which a node's
in-neighbours are drawn with probability proportional to the weight of the edge
that joins them (DGL's ``sample_neighbors(..., prob="weight")``, PyG's
``NeighborLoader(..., weight_attr=...)``), with or without replacement, for any
fanouts. docs/architecture.md §7, entry 11.

* With replacement, each of the ``k`` draws of column ``j`` picks edge ``(i, j)``
  with probability ``w_ij / sum_i' w_i'j``, independently.
* Without replacement, the ``k`` edges are ``k`` sequential draws, each
  proportional to weight among the edges not drawn yet (the exponential-key /
  A-Res order of docs/architecture.md §3): the marginal inclusion probability of an edge is
  *not* ``k w_ij / sum w`` (a heavy edge is capped at 1).

Run it from the repository root (after ``pip install -e .``)::

    python examples/weighted_neighbors.py                       # an R-MAT graph, weights in [1, 5)
    python examples/weighted_neighbors.py --replace --fanouts 5 5 5
    python examples/weighted_neighbors.py --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools

import torch
from common import graph_parser, run_batches

import gsample as gs


def weighted_neighbors(A, seeds, fanouts=(25, 10), replace=False):
    """Sample one block per layer, neighbours drawn in proportion to edge weight.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph; column ``j`` holds the in-edges of node ``j`` and its values are
        the edge weights (finite, non-negative, positive somewhere in every column
        with edges; an unweighted graph samples uniformly).
    seeds : LongTensor, shape (B,)
        Global ids of the mini-batch's target nodes.
    fanouts : sequence of int
        Draws per node at each layer, first layer first (any ``k >= 0``).
    replace : bool
        Draw with replacement (every column with in-edges then holds exactly ``k``
        sampled edges, repeats possible) or without (``min(k, deg)`` distinct edges).

    Returns
    -------
    list of gs.Matrix
        ``blocks[l]`` has shape ``(N, C_l)``: its columns are layer ``l``'s frontier
        (``C_0 = B``, the seeds), each holding its sampled in-edges with their
        weights as values. ``blocks[l + 1]``'s columns are ``blocks[l].all_nodes()``.

    Notes
    -----
    ``super_batch=4`` in ``gs.DataLoader`` samples exactly what one mini-batch at a
    time samples (the weights are the graph's own values, no tensor argument).
    """
    blocks = []
    for k in fanouts:
        sub = A[:, seeds]
        s = sub.individual_sample(k, probs=sub, replace=replace)  # probs = edge weights
        blocks.append(s)
        seeds = s.all_nodes()  # frontier first, then new
    return blocks


def main(argv=None):
    p = graph_parser(__doc__)
    p.add_argument("--fanouts", type=int, nargs="+", default=[25, 10])
    p.add_argument("--replace", action="store_true", help="draw with replacement")
    args = p.parse_args(argv)
    if args.snap:  # SNAP graphs have no weights: draw some
        A = gs.datasets.read_snap(args.snap)
        src, dst, _ = A.edges()
        w = 1 + 4 * torch.rand(A.num_edges, generator=torch.Generator().manual_seed(0))
        A = gs.Matrix.from_edge_index(torch.stack([src, dst]), A.num_nodes, weight=w)
    else:
        A = gs.datasets.rmat(args.num_nodes, args.num_edges, seed=0, weighted=True)
    sampler = functools.partial(weighted_neighbors, fanouts=args.fanouts, replace=args.replace)
    run_batches("weighted_neighbors", A, sampler, args)


if __name__ == "__main__":
    main()
