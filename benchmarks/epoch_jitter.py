"""Epoch-to-epoch spread of a super-batched GraphSAGE epoch, with Python's garbage collector as
it is and with the objects frozen after the warm-up (``gc.freeze``).

On the products-like graph (``gs.datasets.anchor_graph``), GraphSAGE [25, 10], mini-batches of
512 seeds, ``gs.DataLoader`` compiled, one mini-batch at a time and super-batched
(``--super-batch``): ``--epochs`` epochs per row after a warm-up epoch, each with the full
(generation 2) collections that ran in it and the time they took. A full collection walks
every object the interpreter tracks (some 170,000 after ``import torch``), so it is the one
epoch in a dozen that takes several times the others; frozen, those objects are skipped.
Rows run in order: the collector as it is first (nothing frozen yet), then frozen.
Writes ``epoch_jitter_<graph>_<device>.json`` (device, date, command) to ``--out``.

    python benchmarks/epoch_jitter.py                       # products-like, on cuda
    python benchmarks/epoch_jitter.py --quick --device cpu  # a 20k-node R-MAT, seconds
"""

import argparse
import functools
import gc
import pathlib
import statistics
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))

import graphsage  # (the example, put on the path above)

import gsample as gs
from gsample.bench.measure import FullCollections, sync
from gsample.bench.report import script_record, write_record

ROOT = pathlib.Path(__file__).resolve().parents[1]
FANOUT = (25, 10)


def epochs(loader, count: int, device: torch.device) -> dict:
    """``count`` epochs of ``loader`` after a warm-up one: each one's seconds, and the full
    collections that ran in it with their milliseconds."""
    for _ in loader:
        pass
    full = FullCollections()
    gc.callbacks.append(full)
    seconds, collections, gc_ms = [], [], []
    try:
        for _ in range(count):
            n0, s0 = full.count, full.seconds
            sync(device)
            full.active = True
            t = time.perf_counter()
            for _ in loader:
                pass
            sync(device)
            seconds.append(time.perf_counter() - t)
            full.active = False
            collections.append(full.count - n0)
            gc_ms.append(round((full.seconds - s0) * 1e3, 3))
    finally:
        gc.callbacks.remove(full)
    med = statistics.median(seconds)
    return {
        "epoch_s_median": med,
        "epoch_s_max": max(seconds),
        "max_over_median": max(seconds) / med,
        "epoch_s_all": seconds,
        "full_collections": collections,
        "full_collection_ms": gc_ms,
    }


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", default="products-like", choices=["products-like", "papers-like"])
    p.add_argument("--device", default="cuda")
    p.add_argument("--quick", action="store_true", help="a 20k-node graph (a smoke run)")
    p.add_argument("--epochs", type=int, default=16)
    p.add_argument("--super-batch", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = p.parse_args(argv)
    device = torch.device(args.device)
    if args.quick:
        A = gs.datasets.undirected_rmat(20_000, 200_000, seed=0, device=device)
        seeds = gs.datasets.uniform_seeds(A.num_nodes, 4096, device=device)
    else:
        A, seeds = gs.datasets.anchor_graph(args.graph, device=device)
    fn = gs.compile(functools.partial(graphsage.graphsage, fanouts=FANOUT))
    modes = {"one": None, f"super{args.super_batch}": args.super_batch}
    rows = {}
    frozen_before = gc.get_freeze_count()
    for collector in ("as is", "frozen"):
        if collector == "frozen":
            gc.collect()
            gc.freeze()
        for mode, sb in modes.items():
            loader = gs.DataLoader(A, fn, seeds, args.batch_size, seed=0, super_batch=sb)
            row = rows[f"{mode}/{'gc' if collector == 'as is' else 'frozen'}"] = epochs(
                loader, args.epochs, device
            )
            print(
                f"{mode:>8} gc {collector:6}: median {row['epoch_s_median']:.4f} s, "
                f"max {row['epoch_s_max']:.4f} s ({row['max_over_median']:.2f}x), "
                f"full collections {sum(row['full_collections'])} "
                f"({sum(row['full_collection_ms']):.1f} ms)",
                flush=True,
            )
    if not frozen_before:
        gc.unfreeze()
    name = "quick" if args.quick else args.graph
    meta = script_record(
        device,
        ROOT,
        argv,
        python=sys.version.split()[0],
        graph={"name": name, "nodes": A.num_nodes, "edges": A.num_edges},
        seeds=int(seeds.numel()),
        fanout=list(FANOUT),
        batch_size=args.batch_size,
        epochs=args.epochs,
        rows=rows,
    )
    print(f"wrote {write_record(meta, args.out, f'epoch_jitter_{name}_{device.type}.json')}")
    return meta


if __name__ == "__main__":
    main()
