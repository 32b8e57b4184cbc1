"""LADIES layer-wise sampling (Zou et al., 2019), written in the gsample DSL.

Each layer draws ``k`` rows (neighbours) for the whole frontier at once, with
probability proportional to the sum of squared normalised edge weights to the
frontier; the kept edges are importance-weighted by ``1 / p`` of their row and
every column is then normalised to sum to 1.

Run it from the repository root (after ``pip install -e .``)::

    python examples/ladies.py                          # an R-MAT graph
    python examples/ladies.py --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools

import torch
from common import graph_parser, load_graph, run_batches


def normalize(A):
    """Symmetric degree normalisation ``D_out^{-1/2} A D_in^{-1/2}`` of the whole graph.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph (edge weights, 1.0 when none).

    Returns
    -------
    gs.Matrix, shape (N, N)
        Same edges; edge ``(i, j)`` has value ``w_ij / sqrt(d_out(i) * d_in(j))``,
        where ``d_out = A.sum(axis=1)`` and ``d_in = A.sum(axis=0)``.
    """
    d_out, d_in = A.sum(axis=1), A.sum(axis=0)  # one value per row / per column
    d_out = torch.where(d_out > 0, d_out, 1.0)  # a zero degree has no edge to scale
    d_in = torch.where(d_in > 0, d_in, 1.0)
    return A.div(d_out.sqrt(), axis=1).div(d_in.sqrt(), axis=0)


def ladies(A, seeds, layers=(4000, 4000, 4000)):
    """Sample one block per layer with LADIES.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The normalised graph (see :func:`normalize`).
    seeds : LongTensor, shape (B,)
        Global ids of the mini-batch's target nodes.
    layers : sequence of int
        Rows (neighbours) drawn per layer, first layer first.

    Returns
    -------
    list of gs.Matrix
        ``blocks[l]`` has shape ``(R_l, C_l)`` with ``R_l <= layers[l]`` sampled
        rows and ``C_l`` frontier columns (``C_0 = B``, the seeds); every column
        with edges sums to 1. ``blocks[l + 1]``'s columns are
        ``blocks[l].all_nodes()``.
    """
    blocks = []
    for k in layers:
        sub = A[:, seeds]  # row space: all N nodes
        sq = sub**2
        p = sq.sum(axis=1)  # (N,): one value per row
        # normalised by the sum of every edge of the slice (p's sum: an exact sum, the
        # same bits in any order, so a pass may evaluate p on the slice's rows only)
        p = p / sq.sum().clamp(min=1e-30)  # probabilities (0 / 0 guarded)
        s = sub.collective_sample(k, node_probs=p)  # row space: the k chosen rows
        s = s.div(p[s.row_ids], axis=1)  # importance weight 1 / p(row)
        s = s.div(s.sum(axis=0), axis=0)  # columns sum to 1
        blocks.append(s)
        seeds = s.all_nodes()  # frontier first, then new rows
    return blocks


def main(argv=None):
    p = graph_parser(__doc__)
    p.add_argument("--layers", type=int, nargs="+", default=[4000, 4000, 4000])
    args = p.parse_args(argv)
    A = load_graph(args)
    A = normalize(A)  # once, before sampling
    sampler = functools.partial(ladies, layers=args.layers)
    run_batches("ladies", A, sampler, args)


if __name__ == "__main__":
    main()
