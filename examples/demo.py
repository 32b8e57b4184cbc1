"""The main job: a few epochs of GraphSAGE [25, 10] and LADIES 3 x 4000 on a generated graph.

Run from the repository root (``bash scripts/run.sh demo`` sets everything up first)::

    python examples/demo.py                     # R-MAT graph, 100k nodes, 2M edges, on the CPU
    python examples/demo.py --device cuda       # the same on CUDA tensors
"""
import argparse
import functools
import statistics
import time

import gsample as gs
from common import epoch, seed_nodes
from graphsage import graphsage
from ladies import ladies, normalize


def run_epochs(name, A, sampler, seeds, batch_size, epochs):
    loader = gs.DataLoader(A, sampler, seeds, batch_size=batch_size, seed=0)
    times = []
    for e in range(epochs):
        seconds, edges = epoch(loader)
        times.append(seconds)
        print(f"  {name:9s} epoch {e}: {seconds:6.2f} s, {len(loader)} batches, "
              f"{edges:,} sampled edges, {edges / seconds:,.0f} edges/s")
    return statistics.median(times)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-nodes", type=int, default=100_000)
    p.add_argument("--num-edges", type=int, default=2_000_000)
    p.add_argument("--num-seeds", type=int, default=8192)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--device", default="cpu")
    args = p.parse_args(argv)

    start = time.perf_counter()
    A = gs.datasets.rmat(args.num_nodes, args.num_edges, seed=0, device=args.device)
    print(f"graph: R-MAT {A.num_nodes:,} nodes, {A.num_edges:,} edges on {A.device} "
          f"({time.perf_counter() - start:.1f} s to generate)")
    gs.manual_seed(0)
    seeds = seed_nodes(A.num_nodes, args.num_seeds).to(A.device)
    sage = run_epochs("graphsage", A, functools.partial(graphsage, fanouts=(25, 10)), seeds,
                      args.batch_size, args.epochs)
    lad = run_epochs("ladies", normalize(A), functools.partial(ladies, layers=(4000,) * 3),
                     seeds, args.batch_size, args.epochs)
    print(f"median epoch ({args.num_seeds} seeds, mini-batch {args.batch_size}): "
          f"GraphSAGE [25, 10] {sage:.2f} s, LADIES 3 x 4000 {lad:.2f} s")


if __name__ == "__main__":
    main()
