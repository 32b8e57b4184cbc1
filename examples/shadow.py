"""ShaDow-KHop sampling (Zeng et al., 2021), written in the gsample DSL.

From the seeds, ``len(fanouts)`` hops of GraphSAGE-style neighbour sampling
collect a node set; the sample is the subgraph those nodes induce in the graph
(every edge between two of them, sampled or not).

Run it from the repository root (after ``pip install -e .``)::

    python examples/shadow.py                          # an R-MAT graph
    python examples/shadow.py --snap ../shared/data/web-NotreDame.txt.gz
"""
import argparse
import functools
import time

import torch

import gsample as gs


def shadow(A, seeds, fanouts=(10, 10)):
    """Sample the subgraph induced by the seeds' sampled k-hop neighbourhood.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph.
    seeds : LongTensor, shape (B,)
        Global ids of the mini-batch's target nodes.
    fanouts : sequence of int
        In-neighbours kept per node at each hop (without replacement).

    Returns
    -------
    subgraph : gs.Matrix, shape (n, n)
        ``A[nodes, nodes]``: every edge of ``A`` between two of ``nodes``.
    nodes : LongTensor, shape (n,)
        The node set, unique, seeds first.
    """
    nodes = seeds
    for k in fanouts:
        nodes = A[:, nodes].individual_sample(k).all_nodes()   # frontier first, then new
    return A[nodes, nodes], nodes


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--snap", help="SNAP edge list to read instead of an R-MAT graph")
    p.add_argument("--num-nodes", type=int, default=100_000)
    p.add_argument("--num-edges", type=int, default=1_000_000)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--batches", type=int, default=10)
    p.add_argument("--fanouts", type=int, nargs="+", default=[10, 10])
    args = p.parse_args(argv)

    A = gs.datasets.read_snap(args.snap) if args.snap else \
        gs.datasets.rmat(args.num_nodes, args.num_edges, seed=0)
    gs.manual_seed(0)
    sampler = functools.partial(shadow, fanouts=args.fanouts)
    seeds = torch.randperm(A.num_nodes, generator=torch.Generator().manual_seed(0))
    loader = gs.DataLoader(A, sampler, seeds[:args.batch_size * args.batches], args.batch_size)
    start, edges = time.perf_counter(), 0
    for batch in loader:
        subgraph, _ = batch.out
        edges += subgraph.num_edges
    elapsed = time.perf_counter() - start
    print(f"shadow: {len(loader)} batches of {args.batch_size} seeds, "
          f"{edges} sampled edges, {edges / elapsed:,.0f} sampled edges/s")


if __name__ == "__main__":
    main()
