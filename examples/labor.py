"""LABOR-0 sampling (Balin and Catalyurek, 2023), written in the gsample DSL.

Layer-neighbour sampling: each layer draws *one* uniform number ``u_r`` per candidate row
(an in-neighbour of the frontier) and shares it among all the frontier's columns; row
``r`` is taken for column ``c`` when ``u_r <= k / deg(c)``. Every column keeps each of its
in-edges with probability ``min(1, k / deg(c))`` (``k`` in expectation, all of them when
``deg(c) <= k``), as node-wise sampling does, but a row kept by one column is likely kept by
the others too: the layers reach fewer distinct nodes than GraphSAGE's. Fanouts ``[10, 10,
10]`` (docs/architecture.md §7); the blocks keep the graph's edge values (no importance weights:
LABOR-0).

The per-row variates are ``A.random_uniform(rows)``: one keyed uniform per candidate row
(its position among the candidates keys it, so the draws are independent per row, per layer
and per mini-batch, and equal eager / compiled / super-batched / on the CUDA backend).

A column keeps the edges that pass its threshold: ``sub.filter_edges(keep)``, which keeps
every column, an empty one included (no row passes a column's threshold with probability
about ``exp(-k)`` for a column of high degree).

Super-batching: ``gs.DataLoader(..., super_batch=4)`` works.

Run it from the repository root (after ``pip install -e .``)::

    python examples/labor.py                           # an R-MAT graph
    python examples/labor.py --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools

import torch
from common import graph_parser, load_graph, run_batches


def labor(A, seeds, fanouts=(10, 10, 10)):
    """Sample one block per layer with LABOR-0.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph.
    seeds : LongTensor, shape (B,)
        Global ids of the mini-batch's target nodes (unique).
    fanouts : sequence of int
        ``k`` of each layer, first layer first: the expected edges per column.

    Returns
    -------
    list of gs.Matrix
        ``blocks[l]`` has shape ``(N, C_l)``: its columns are layer ``l``'s frontier
        (``C_0 = B``, the seeds) and column ``c`` holds the in-edges ``r -> c`` with
        ``u_r <= fanouts[l] / deg(c)`` (one ``u_r`` per row and layer), with their values
        and edge ids, in CSC order. ``blocks[l + 1]``'s columns are
        ``blocks[l].all_nodes()``.
    """
    blocks = []
    for k in fanouts:
        sub = A[:, seeds]
        rows = sub.row()  # candidate rows, ascending
        u = A.random_uniform(rows)  # (R,): one per row, all columns
        r, _, _ = sub.edges()
        ones = sub * 0.0 + 1.0
        deg = ones.mul(ones.sum(axis=0), axis=0).values  # (E,): the edge's column degree
        keep = u[torch.searchsorted(rows, r)] <= k / deg.double()  # (E,): u_r <= k / deg
        s = sub.filter_edges(keep)
        blocks.append(s)
        seeds = s.all_nodes()  # frontier first, then new rows
    return blocks


def main(argv=None):
    p = graph_parser(__doc__)
    p.add_argument("--fanouts", type=int, nargs="+", default=[10, 10, 10])
    args = p.parse_args(argv)
    A = load_graph(args)
    run_batches("labor", A, functools.partial(labor, fanouts=args.fanouts), args)


if __name__ == "__main__":
    main()
