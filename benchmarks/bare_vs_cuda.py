"""A bare ``@gs.compile`` (no ``backend=``: ``"auto"``) against ``backend="cuda"``, epochs
alternating in one process (A B A B ...), so both see the same host and GPU state.

The harness (``python -m gsample.bench --modes cuda super bare``) times its modes one after
another, each in its own stretch of the run, and a lent machine's host speed varies about
two-fold within a run; alternating the two modes' epochs compares them under the same load.
Per workload (GraphSAGE [25, 10] mb 512, LADIES 3 x 4000 mb 512, DeepWalk L = 80 mb 1024),
one at a time and super-batched: the median epoch of each mode and their ratio (the issue's
target: a bare sampler within 10% of ``backend="cuda"``).

    python benchmarks/bare_vs_cuda.py                          # the harness's GPU graph
    python benchmarks/bare_vs_cuda.py --graph rmat:200000:2000000 --repeats 3
"""

import argparse
import pathlib
import statistics
import sys
import time

import torch

import gsample as gs

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
from deepwalk import deepwalk
from graphsage import graphsage
from ladies import ladies, normalize


def epoch(fn, A, seeds, batch_size: int, **options) -> float:
    """Seconds of one loader epoch (the device waited for at both ends)."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in gs.DataLoader(A, fn, seeds, batch_size, seed=1, **options):
        pass
    torch.cuda.synchronize()
    return time.perf_counter() - start


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", default="rmat:2400000:120000000", help="rmat:NODES:EDGES")
    p.add_argument("--seeds", type=int, default=196_608)
    p.add_argument("--repeats", type=int, default=7, help="epochs per mode (after a warm one)")
    p.add_argument("--super-batch", type=int, default=64)
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        p.error("needs a CUDA GPU")
    _, nodes, edges = args.graph.split(":")
    A = gs.datasets.rmat(int(nodes), int(edges), seed=0, device="cuda")
    seeds = torch.randperm(A.num_nodes, generator=torch.Generator().manual_seed(0))
    seeds = seeds[: args.seeds].cuda()
    cases = [
        ("graphsage", graphsage, A, 512),
        ("ladies", ladies, normalize(A), 512),
        ("deepwalk", deepwalk, A, 1024),
    ]
    print(
        f"{torch.cuda.get_device_name()}, {args.graph}, {args.seeds} seeds, "
        f"median of {args.repeats} alternating epochs"
    )
    for name, fn, G, batch_size in cases:
        for options in ({}, {"super_batch": args.super_batch}):
            modes = {"cuda": gs.compile(fn, backend="cuda"), "bare": gs.compile(fn)}
            assert modes["bare"].backend_for(G) == "cuda", "auto did not pick the kernels"
            for f in modes.values():
                epoch(f, G, seeds, batch_size, **options)  # trace, lower, capture
            times = {m: [] for m in modes}
            for _ in range(args.repeats):
                for m, f in modes.items():
                    times[m].append(epoch(f, G, seeds, batch_size, **options))
            med = {m: statistics.median(v) for m, v in times.items()}
            how = f"super-batched {args.super_batch}" if options else "one at a time"
            print(
                f"{name:9s} {how:18s} cuda {med['cuda']:.4f} s  bare {med['bare']:.4f} s  "
                f"bare / cuda {med['bare'] / med['cuda']:.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
