"""LADIES with and without the listed-rows pass, as the graph's node count grows and the
work stays the same: on the torch backend (``--device cpu``), or on the CUDA backend
(``--device cuda``: its listed sample, ``gsample.backend.cuda.listed``, switched on for every
graph here, against its dense kernels).

The graphs hold the same edges (an R-MAT graph over the first ``--active`` nodes) in id
spaces of ``--nodes`` nodes (the rest isolated): each mini-batch slices the same edges and
draws the same rows, so a sampler whose work is linear in its slices takes the same time
on every graph, and one that makes tensors over every node (the dense row probabilities
``p``) grows with the node count. Both programs (the default pipeline, and the pipeline
without ``listed_rows``) are checked to draw the same blocks, bit for bit.

    python benchmarks/ladies_listed.py --nodes 2000000 20000000
    python benchmarks/ladies_listed.py --device cuda --nodes 2000000 60000000
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import torch

import gsample as gs
from gsample.backend.cuda import listed
from gsample.passes import PIPELINE
from gsample.passes.listed_rows import listed_rows

sys.path.insert(0, __file__.rsplit("/", 2)[0] + "/examples")
import ladies as lad


def graph(active: int, edges: int, nodes: int, device: str = "cpu") -> gs.Matrix:
    """The normalised R-MAT graph of ``active`` nodes, in an id space of ``nodes``."""
    g = gs.datasets.rmat(active, edges, seed=0, weighted=True)
    r, c, _ = g.edges()
    A = gs.Matrix.from_edge_index(torch.stack([r, c]), num_nodes=nodes, weight=g.values)
    return lad.normalize(A.to(device))


def timed(sampler, A, batches, repeats: int) -> tuple:
    """(seconds per mini-batch, the last run's blocks): the fastest of ``repeats`` runs."""
    best, out = float("inf"), None
    cuda = A.device.type == "cuda"
    for _ in range(repeats + 1):  # a warm-up first
        gs.manual_seed(0)
        if cuda:
            torch.cuda.synchronize()
        t = time.perf_counter()
        out = [sampler(A, s) for s in batches]
        if cuda:
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    return best / len(batches), out


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, nargs="+", default=[2_000_000, 20_000_000])
    p.add_argument("--active", type=int, default=200_000)
    p.add_argument("--edges", type=int, default=4_000_000)
    p.add_argument("--layers", type=int, nargs="+", default=[4000, 4000, 4000])
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--batches", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default="cpu",
        help="cpu: the torch backend; cuda: the CUDA backend (its listed sample on every graph)",
    )
    p.add_argument("--out", default=None, help="write the record as JSON here")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    def sampler(A, seeds):
        return lad.ladies(A, seeds, layers=tuple(args.layers))

    backend = "torch" if args.device == "cpu" else "cuda"
    if backend == "cuda":  # listed at every node count (read when a program is compiled)
        listed.LISTED = True
    without = [f for f, _ in PIPELINE if f is not listed_rows]
    programs = {
        "listed": gs.compile(sampler, backend=backend),
        "dense": gs.compile(sampler, backend=backend, passes=without),
    }
    g = torch.Generator().manual_seed(1)
    batches = [
        torch.randperm(args.active, generator=g)[: args.batch_size].to(args.device)
        for _ in range(args.batches)
    ]
    rows = []
    for n in args.nodes:
        A = graph(args.active, args.edges, n, args.device)
        got = {name: timed(f, A, batches, args.repeats) for name, f in programs.items()}
        same = all(
            torch.equal(x.csc.rows, y.csc.rows)
            and torch.equal(x.csc.indptr, y.csc.indptr)
            and torch.equal(x.row_ids, y.row_ids)
            and torch.equal(x.values, y.values)
            and torch.equal(x.csc.eids, y.csc.eids)
            for bx, by in zip(got["listed"][1], got["dense"][1])
            for x, y in zip(bx, by)
        )
        row = {"nodes": n, "same_samples": same}
        row.update({f"{name}_ms_per_batch": 1e3 * t for name, (t, _) in got.items()})
        rows.append(row)
        print(
            f"N = {n:>11,}: listed {row['listed_ms_per_batch']:8.2f} ms/batch, "
            f"dense {row['dense_ms_per_batch']:8.2f} ms/batch, same samples: {same}"
        )
    record = {
        "benchmark": "ladies_listed",
        "device": args.device,
        "backend": backend,
        "threads": torch.get_num_threads(),
        "active_nodes": args.active,
        "edges": args.edges,
        "layers": args.layers,
        "batch_size": args.batch_size,
        "rows": rows,
    }
    if args.out:
        with open(args.out, "w") as f:
            json.dump(record, f, indent=1)
    return record


if __name__ == "__main__":
    main()
