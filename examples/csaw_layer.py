"""c-saw layer sampling (Pandey et al., SC 2020), written in the gsample DSL.

Each layer draws a constant number ``k`` of rows for the whole frontier, uniformly and
without replacement among the union of the frontier's in-neighbours (the rows of
``A[:, frontier]`` that hold an edge), and keeps every edge from a chosen row into the
frontier. Unlike FastGCN and LADIES there is no bias and no importance weighting: the
blocks keep the graph's edge values. A frontier with at most ``k`` distinct in-neighbours
keeps them all.

docs/architecture.md §7 fixes no count; the default ``layers=(2000, 2000)`` is FastGCN's, for
comparison with it. Super-batching: ``gs.DataLoader(..., super_batch=4)`` works (``k``
rows per mini-batch, each drawn with its own keys).

Run it from the repository root (after ``pip install -e .``)::

    python examples/csaw_layer.py                      # an R-MAT graph
    python examples/csaw_layer.py --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools

from common import graph_parser, load_graph, run_batches


def csaw_layer(A, seeds, layers=(2000, 2000)):
    """Sample one block per layer: ``k`` uniform rows over the frontier's in-neighbours.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph.
    seeds : LongTensor, shape (B,)
        Global ids of the mini-batch's target nodes.
    layers : sequence of int
        Rows drawn per layer, first layer first.

    Returns
    -------
    list of gs.Matrix
        ``blocks[l]`` has shape ``(R_l, C_l)``: ``R_l = min(layers[l], n_l)`` rows chosen
        uniformly among the ``n_l`` distinct in-neighbours of the frontier (each one with
        probability ``R_l / n_l``; every ``R_l``-subset equally likely), in ascending id
        order, and the ``C_l`` frontier columns (``C_0 = B``, the seeds). Every edge from
        a chosen row to a frontier node is kept, with its value. ``blocks[l + 1]``'s
        columns are ``blocks[l].all_nodes()``.
    """
    blocks = []
    for k in layers:
        s = A[:, seeds].collective_sample(k)  # k rows, uniform among rows with edges
        blocks.append(s)
        seeds = s.all_nodes()  # frontier first, then the chosen rows
    return blocks


def main(argv=None):
    p = graph_parser(__doc__)
    p.add_argument("--layers", type=int, nargs="+", default=[2000, 2000])
    args = p.parse_args(argv)
    A = load_graph(args)
    run_batches("csaw_layer", A, functools.partial(csaw_layer, layers=args.layers), args)


if __name__ == "__main__":
    main()
