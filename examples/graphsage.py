"""GraphSAGE neighbour sampling (Hamilton et al., 2017), written in the gsample DSL.

Each layer keeps up to ``k`` uniformly chosen in-neighbours of every frontier
node, without replacement; the next frontier is the current one followed by the
newly reached neighbours.

Run it from the repository root (after ``pip install -e .``)::

    python examples/graphsage.py                       # an R-MAT graph
    python examples/graphsage.py --snap ../shared/data/web-NotreDame.txt.gz
"""
import argparse
import functools
import time

import torch

import gsample as gs


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
        s = A[:, seeds].individual_sample(k)   # k in-neighbours per frontier node
        blocks.append(s)
        seeds = s.all_nodes()                  # frontier first, then new neighbours
    return blocks


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--snap", help="SNAP edge list to read instead of an R-MAT graph")
    p.add_argument("--num-nodes", type=int, default=100_000)
    p.add_argument("--num-edges", type=int, default=1_000_000)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--batches", type=int, default=10)
    p.add_argument("--fanouts", type=int, nargs="+", default=[25, 10])
    args = p.parse_args(argv)

    A = gs.datasets.read_snap(args.snap) if args.snap else \
        gs.datasets.rmat(args.num_nodes, args.num_edges, seed=0)
    gs.manual_seed(0)
    sampler = functools.partial(graphsage, fanouts=args.fanouts)
    seeds = torch.randperm(A.num_nodes, generator=torch.Generator().manual_seed(0))
    loader = gs.DataLoader(A, sampler, seeds[:args.batch_size * args.batches], args.batch_size)
    start, edges = time.perf_counter(), 0
    for batch in loader:
        edges += sum(block.num_edges for block in batch.out)
    elapsed = time.perf_counter() - start
    print(f"graphsage: {len(loader)} batches of {args.batch_size} seeds, "
          f"{edges} sampled edges, {edges / elapsed:,.0f} sampled edges/s")


if __name__ == "__main__":
    main()
