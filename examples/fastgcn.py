"""FastGCN layer-wise sampling (Chen et al., 2018), written in the gsample DSL.

Each layer draws ``k`` rows (neighbours) for the whole frontier at once, with
probability proportional to the node's degree in the whole graph; the kept
edges are importance-weighted by ``1 / p`` of their row and every column is
then normalised to sum to 1.

Run it from the repository root (after ``pip install -e .``)::

    python examples/fastgcn.py                         # an R-MAT graph
    python examples/fastgcn.py --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools

from common import graph_parser, load_graph, run_batches


def fastgcn(A, seeds, layers=(2000, 2000), degree=None):
    """Sample one block per layer with FastGCN.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph.
    seeds : LongTensor, shape (B,)
        Global ids of the mini-batch's target nodes.
    layers : sequence of int
        Rows (neighbours) drawn per layer, first layer first.
    degree : Tensor, shape (N,), optional
        The node bias, one value per node; default ``A.sum(axis=1)`` (weighted
        out-degree). Pass it precomputed to avoid recomputing it every batch.

    Returns
    -------
    list of gs.Matrix
        ``blocks[l]`` has shape ``(R_l, C_l)`` with ``R_l <= layers[l]`` sampled
        rows and ``C_l`` frontier columns (``C_0 = B``, the seeds); every column
        with edges sums to 1. ``blocks[l + 1]``'s columns are
        ``blocks[l].all_nodes()``.
    """
    if degree is None:
        degree = A.sum(axis=1)  # (N,): one value per row
    p = degree / degree.sum().clamp(min=1e-30)  # probabilities (0 / 0 guarded)
    blocks = []
    for k in layers:
        sub = A[:, seeds]  # row space: all N nodes
        s = sub.collective_sample(k, node_probs=p)  # row space: the k chosen rows
        s = s.div(p[s.row_ids], axis=1)  # importance weight 1 / p(row)
        s = s.div(s.sum(axis=0), axis=0)  # columns sum to 1
        blocks.append(s)
        seeds = s.all_nodes()  # frontier first, then new rows
    return blocks


def main(argv=None):
    p = graph_parser(__doc__)
    p.add_argument("--layers", type=int, nargs="+", default=[2000, 2000])
    args = p.parse_args(argv)
    A = load_graph(args)
    sampler = functools.partial(fastgcn, layers=args.layers, degree=A.sum(axis=1))
    run_batches("fastgcn", A, sampler, args)


if __name__ == "__main__":
    main()
