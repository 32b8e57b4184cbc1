"""Command-line plumbing the examples share: graph options, the graph, the timing loop.

Not needed to use a sampler: each example's sampler function is self-contained. The
scripts in ``examples/`` import this file as ``common`` (their folder is on ``sys.path``
when they run as scripts; ``examples/demo.py`` and ``benchmarks/`` rely on the same).
"""

import argparse
import time

import torch

import gsample as gs


def graph_parser(description, *, num_edges=1_000_000, batch_size=512, batches=10):
    """An argument parser with the graph and mini-batch options.

    ``--snap``, ``--num-nodes``, ``--num-edges`` and ``--batch-size``, plus ``--batches``
    unless ``batches`` is ``None``; the caller adds its sampler's own options.
    """
    p = argparse.ArgumentParser(description=description.splitlines()[0])
    p.add_argument("--snap", help="SNAP edge list to read instead of an R-MAT graph")
    p.add_argument("--num-nodes", type=int, default=100_000)
    p.add_argument("--num-edges", type=int, default=num_edges)
    p.add_argument("--batch-size", type=int, default=batch_size)
    if batches is not None:
        p.add_argument("--batches", type=int, default=batches)
    return p


def load_graph(args):
    """The ``--snap`` graph, or an R-MAT graph of ``--num-nodes`` nodes, ``--num-edges`` edges."""
    if args.snap:
        return gs.datasets.read_snap(args.snap)
    return gs.datasets.rmat(args.num_nodes, args.num_edges, seed=0)


def seed_nodes(num_nodes, n):
    """The first ``n`` of a fixed random permutation of the ``num_nodes`` node ids."""
    return torch.randperm(num_nodes, generator=torch.Generator().manual_seed(0))[:n]


def sampled_edges(out):
    """Edges of the matrices a sampler returned (its blocks, or a subgraph and its nodes)."""
    return sum(m.num_edges for m in out if isinstance(m, gs.Matrix))


def epoch(loader):
    """``(seconds, sampled edges)`` of one pass over ``loader`` (CUDA work waited for)."""
    start, edges = time.perf_counter(), 0
    for batch in loader:
        edges += sampled_edges(batch.out)
    if loader.A.device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start, edges


def run_batches(name, A, sampler, args):
    """Sample ``--batches`` mini-batches of ``--batch-size`` seeds and print the throughput."""
    gs.manual_seed(0)
    seeds = seed_nodes(A.num_nodes, args.batch_size * args.batches)
    loader = gs.DataLoader(A, sampler, seeds, args.batch_size)
    elapsed, edges = epoch(loader)
    print(
        f"{name}: {len(loader)} batches of {args.batch_size} seeds, "
        f"{edges} sampled edges, {edges / elapsed:,.0f} sampled edges/s"
    )


def walk_parser(description, *, length=80, batch_size=1024, batches=10):
    """:func:`graph_parser` with ``--length`` (steps per walk) and ``--compile`` for walk
    samplers; mini-batches of 1024 seeds by default, as gSampler's walk workloads."""
    p = graph_parser(description, batch_size=batch_size, batches=batches)
    p.add_argument("--length", type=int, default=length)
    p.add_argument("--eager", action="store_true", help="run the sampler uncompiled")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    return p


def run_walks(name, A, sampler, args):
    """Walk from ``--batches`` mini-batches of ``--batch-size`` seeds; print steps per second.

    ``sampler(A, seeds)`` returns walks, a LongTensor (B, L + 1) with -1 after a stop.
    """
    A = A.to(args.device)
    fn = sampler if args.eager else gs.compile(sampler)
    gs.manual_seed(0)
    seeds = seed_nodes(A.num_nodes, args.batch_size * args.batches).to(args.device)
    loader = gs.DataLoader(A, fn, seeds, args.batch_size)
    start, steps = time.perf_counter(), 0
    for batch in loader:
        steps += int((batch.out[:, 1:] >= 0).sum())
    if A.device.type == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    print(
        f"{name}: {len(loader)} batches of {args.batch_size} walks, {steps} steps, "
        f"{steps / elapsed:,.0f} steps/s"
    )
