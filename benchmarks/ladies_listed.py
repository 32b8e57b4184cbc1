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

With ``--graph`` the two programs sample an anchor graph instead (``products-like`` or
``papers-like``, :func:`gsample.datasets.anchor_graph`, normalised), the first ``--batches``
mini-batches of its epoch, one at a time and super-batched (``--super-batch``), with the
graph on the device and, with ``--pinned``, in pinned host memory (``placement="uva"``);
every mode's blocks are checked against the dense program's one at a time, and the peak
GPU memory of each is recorded.

    python benchmarks/ladies_listed.py --nodes 2000000 20000000
    python benchmarks/ladies_listed.py --device cuda --nodes 2000000 60000000
    python benchmarks/ladies_listed.py --device cuda --graph papers-like --batches 64 \
        --super-batch 16 64 --pinned
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time

import torch

import gsample as gs
from gsample.backend.cuda import listed
from gsample.base.random import batch_scope
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


def timed(sampler, A, batches, repeats: int, super_batch: int = 0) -> tuple:
    """(seconds per mini-batch, the last run's blocks): the fastest of ``repeats`` runs,
    one mini-batch at a time (``super_batch`` 0; mini-batch ``i`` drawn in
    ``batch_scope(0, i)``), or ``super_batch`` at a time (the same draws)."""
    best, out = float("inf"), None
    cuda = A.device.type == "cuda"
    if super_batch:
        sb = sampler.super_batched((A, batches[0]), seeds="seeds")
        chunks = range(0, len(batches), super_batch)
    for _ in range(repeats + 1):  # a warm-up first
        gs.manual_seed(0)
        if cuda:
            torch.cuda.synchronize()
        t = time.perf_counter()
        if super_batch:
            out = [b for i in chunks for b in sb.run(batches[i : i + super_batch], 0, first=i)]
        else:
            out = []
            for i, s in enumerate(batches):
                with batch_scope(0, i):
                    out.append(sampler(A, s))
        if cuda:
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    return best / len(batches), out


def same_blocks(a: list, b: list) -> bool:
    """Whether two runs drew the same blocks, bit for bit."""
    return all(
        torch.equal(x.csc.rows, y.csc.rows)
        and torch.equal(x.csc.indptr, y.csc.indptr)
        and torch.equal(x.row_ids, y.row_ids)
        and torch.equal(x.values, y.values)
        and torch.equal(x.csc.eids, y.csc.eids)
        for bx, by in zip(a, b, strict=True)
        for x, y in zip(bx, by, strict=True)
    )


def anchor_rows(args, programs) -> list:
    """Each placement's and mode's milliseconds per mini-batch on ``args.graph``."""
    A, seeds = gs.datasets.anchor_graph(args.graph, device=args.device)
    A = lad.normalize(A)
    batches = list(seeds[: args.batches * args.batch_size].view(-1, args.batch_size))
    rows, ref = [], None
    for placement in ("device", "uva") if args.pinned else ("device",):
        if placement == "uva":  # the device copy freed first (the programs' caches hold it)
            for f in programs.values():
                f.clear_cache()
            A = A.to(args.device, placement="uva")
        for name, f in programs.items():
            for n in [0, *args.super_batch]:
                gc.collect()  # the last mode's super-batcher, its CUDA graphs' pools
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
                row = {"placement": placement, "path": name, "super_batch": n or None}
                try:
                    t, out = timed(f, A, batches, args.repeats, n)
                except torch.OutOfMemoryError as e:
                    rows.append({**row, "error": str(e).split(".")[0]})
                    print(f"{placement:>6} {name:>6} sb {n}: {rows[-1]['error']}")
                    continue
                ref = out if ref is None else ref  # the dense program, one at a time, first
                row = {
                    **row,
                    "ms_per_batch": 1e3 * t,
                    "epoch_s": t * -(-seeds.numel() // args.batch_size),
                    "peak_gib": torch.cuda.max_memory_allocated() / 2**30,
                    "same_samples": same_blocks(out, ref),
                }
                rows.append(row)
                print(
                    f"{placement:>6} {name:>6} {'sb ' + str(n) if n else 'one at a time':>13}: "
                    f"{row['ms_per_batch']:7.2f} ms/batch ({row['epoch_s']:6.2f} s an epoch), "
                    f"peak {row['peak_gib']:5.1f} GiB, same samples: {row['same_samples']}"
                )
                del out
    return rows


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
    p.add_argument(
        "--graph",
        choices=("products-like", "papers-like"),
        default=None,
        help="an anchor graph's first --batches mini-batches instead of the --nodes sweep",
    )
    p.add_argument("--super-batch", type=int, nargs="*", default=[], help="with --graph")
    p.add_argument("--pinned", action="store_true", help="with --graph: also placement='uva'")
    p.add_argument("--out", default=None, help="write the record as JSON here")
    args = p.parse_args(argv)
    if args.graph and args.device != "cuda":
        p.error("--graph: the anchor graphs are sampled on a GPU (--device cuda)")
    if any(args.batches % n for n in args.super_batch):
        p.error("--super-batch: each must divide --batches")
    if args.threads:
        torch.set_num_threads(args.threads)

    def sampler(A, seeds):
        return lad.ladies(A, seeds, layers=tuple(args.layers))

    backend = "torch" if args.device == "cpu" else "cuda"
    if backend == "cuda":  # listed at every node count (read when a program is compiled)
        listed.LISTED = True
    without = [f for f, _ in PIPELINE if f is not listed_rows]
    programs = {
        "dense": gs.compile(sampler, backend=backend, passes=without),
        "listed": gs.compile(sampler, backend=backend),
    }
    record = {
        "benchmark": "ladies_listed",
        "command": "python " + " ".join(sys.argv) if argv is None else None,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "device": args.device,
        "device_name": torch.cuda.get_device_name() if args.device == "cuda" else None,
        "backend": backend,
        "threads": torch.get_num_threads(),
        "layers": args.layers,
        "batch_size": args.batch_size,
        "batches": args.batches,
    }
    if args.graph:
        record.update(graph=args.graph, rows=anchor_rows(args, programs))
        return write(record, args.out)
    g = torch.Generator().manual_seed(1)
    batches = [
        torch.randperm(args.active, generator=g)[: args.batch_size].to(args.device)
        for _ in range(args.batches)
    ]
    rows = []
    for n in args.nodes:
        A = graph(args.active, args.edges, n, args.device)
        got = {name: timed(f, A, batches, args.repeats) for name, f in programs.items()}
        same = same_blocks(got["listed"][1], got["dense"][1])
        row = {"nodes": n, "same_samples": same}
        row.update({f"{name}_ms_per_batch": 1e3 * t for name, (t, _) in got.items()})
        rows.append(row)
        print(
            f"N = {n:>11,}: listed {row['listed_ms_per_batch']:8.2f} ms/batch, "
            f"dense {row['dense_ms_per_batch']:8.2f} ms/batch, same samples: {same}"
        )
    record.update(active_nodes=args.active, edges=args.edges, rows=rows)
    return write(record, args.out)


def write(record: dict, out: str | None) -> dict:
    """``record``, written as JSON to ``out`` when given."""
    if out:
        with open(out, "w") as f:
            json.dump(record, f, indent=1)
    return record


if __name__ == "__main__":
    main()
