"""GraphSAGE neighbour sampling with PyG's hop semantics, written in the gsample DSL.

PyG's ``NeighborLoader`` samples every node once: hop ``h`` samples the in-neighbours of
the nodes *first reached* at hop ``h - 1`` (the seeds at hop 1), never again those of
nodes already sampled. ``examples/graphsage.py`` is DGL-style instead: every hop
re-samples the whole frontier, seeds included. Both map to PyG's mini-batch with
``batch.to_pyg()`` (``gsample.interop.pyg.data``); this one loses no samples there, and is what
``gsample.pyg.NeighborLoader`` runs.

Run it from the repository root (after ``pip install -e .``)::

    python examples/graphsage_pyg.py                   # an R-MAT graph
    python examples/graphsage_pyg.py --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools

import torch
from common import graph_parser, load_graph, run_batches


def graphsage_pyg(A, seeds, fanouts=(25, 10)):
    """Sample one block per hop, each over the nodes first reached at the hop before.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph; column ``j`` holds the in-edges of node ``j``.
    seeds : LongTensor, shape (B,)
        Global ids of the mini-batch's target nodes (unique).
    fanouts : sequence of int
        Neighbours kept per node at each hop, first hop first.

    Returns
    -------
    list of gs.Matrix
        ``blocks[h]`` has shape ``(N, C_h)``: its columns are the nodes first reached at
        hop ``h`` (``C_0 = B``, the seeds; later hops in ascending id order), each with at
        most ``fanouts[h]`` of its in-edges. No node is a column of two blocks.
    """
    blocks, frontier, seen = [], seeds, seeds
    for k in fanouts:
        s = A[:, frontier].individual_sample(k)  # k in-neighbours per frontier node
        blocks.append(s)
        rows = s.row()  # every neighbour reached, ascending id
        frontier = rows[~torch.isin(rows, seen)]  # only the ones no hop reached before
        seen = torch.cat([seen, frontier])
    return blocks


def main(argv=None):
    p = graph_parser(__doc__)
    p.add_argument("--fanouts", type=int, nargs="+", default=[25, 10])
    args = p.parse_args(argv)
    A = load_graph(args)
    sampler = functools.partial(graphsage_pyg, fanouts=args.fanouts)
    run_batches("graphsage_pyg", A, sampler, args)


if __name__ == "__main__":
    main()
