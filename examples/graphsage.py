"""GraphSAGE neighbour sampling (Hamilton et al., 2017), written in the gsample DSL.

Each layer keeps up to ``k`` uniformly chosen in-neighbours of every frontier
node, without replacement; the next frontier is the current one followed by the
newly reached neighbours.

Run it from the repository root (after ``pip install -e .``)::

    python examples/graphsage.py                       # an R-MAT graph
    python examples/graphsage.py --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools

from common import graph_parser, load_graph, run_batches


def graphsage(A, seeds, fanouts=(25, 10)):
    """Sample one block per layer, from the seeds outwards.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph; column ``j`` holds the in-edges of node ``j``.
    seeds : LongTensor, shape (B,)
        Global ids of the mini-batch's target nodes.
    fanouts : sequence of int
        Neighbours kept per node at each layer, first layer first.

    Returns
    -------
    list of gs.Matrix
        ``blocks[l]`` has shape ``(N, C_l)``: its columns are layer ``l``'s
        frontier (``C_0 = B``, the seeds) and each column holds at most
        ``fanouts[l]`` of that node's in-edges (all of them when it has fewer).
        ``blocks[l + 1]``'s columns are ``blocks[l].all_nodes()``.
    """
    blocks = []
    for k in fanouts:
        s = A[:, seeds].individual_sample(k)  # k in-neighbours per frontier node
        blocks.append(s)
        seeds = s.all_nodes()  # frontier first, then new neighbours
    return blocks


def main(argv=None):
    p = graph_parser(__doc__)
    p.add_argument("--fanouts", type=int, nargs="+", default=[25, 10])
    args = p.parse_args(argv)
    A = load_graph(args)
    sampler = functools.partial(graphsage, fanouts=args.fanouts)
    run_batches("graphsage", A, sampler, args)


if __name__ == "__main__":
    main()
