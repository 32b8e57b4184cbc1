"""Feature rows for mini-batches, per placement of the feature table: the loader's gather.

The nodes of ``--batches`` mini-batches of GraphSAGE [15, 10, 5] (``--fanouts``, mini-batch
``--batch-size``) over an anchor graph (``--graph papers-like``) or an R-MAT are sampled once
(``Batch.n_id``, what ``gs.DataLoader`` gathers), then gathered by
:class:`gsample.loader.features.FeatureStore` (each call checks its ids: one host read of
the check's flag) from a (N, ``--features``) table held

- on the device, float32 and bfloat16 (``device``);
- in pinned host memory, read by the GPU in place (``uva``), float32;
- the same with a GPU cache of the highest in-degree rows (``--cache-mb``, each a row).

Before any table is made, each placement's device bytes are set beside the free memory: one
that does not fit is skipped, with a line that says so (nothing is allocated for it). The
graph is on the device. For each placement: seconds per mini-batch and per epoch (scaled to
the epoch's mini-batches), rows and GB of rows per second, the cache's hit rate (over every
call), the device
bytes the table (or cache) takes. Every placement's rows equal the device float32 table's
(bfloat16: its rounding).

Writes ``features_<graph>_<device>.json`` (device, date, command, commit) to ``--out``.

    python benchmarks/features.py --graph papers-like --batches 128
    python benchmarks/features.py --quick          # a small R-MAT (on a CPU: device only)
"""

# ruff: noqa: E402  the examples' folder goes on sys.path before their imports
import argparse
import functools
import pathlib
import statistics
import sys
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

from graphsage import graphsage

import gsample as gs
from gsample.bench.report import script_record, write_record
from gsample.loader.features import FeatureStore, batch_nodes


def parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", default="rmat", choices=["rmat", *gs.datasets.ANCHOR_GRAPHS])
    p.add_argument("--num-nodes", type=int, default=2_000_000)
    p.add_argument("--num-edges", type=int, default=40_000_000)
    p.add_argument("--features", type=int, default=128)
    p.add_argument("--fanouts", type=int, nargs="+", default=[15, 10, 5])
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--batches", type=int, default=64, help="mini-batches gathered and timed")
    p.add_argument("--cache-mb", type=int, nargs="*", default=[4096])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--quick", action="store_true", help="a small R-MAT, few mini-batches")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    return p


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def build(args, device):
    """``(graph, training seeds, name)``."""
    if args.graph == "rmat":
        A = gs.datasets.rmat(args.num_nodes, args.num_edges, seed=0, device=device)
        seeds = gs.datasets.uniform_seeds(A.num_nodes, A.num_nodes // 10, device=device)
        return A, seeds, f"rmat({args.num_nodes}, {args.num_edges}, seed=0)"
    A, seeds = gs.datasets.anchor_graph(args.graph, device=device)
    return A, seeds, args.graph


def table_on(device, N: int, F: int, dtype, pinned: bool = False, chunk: int = 1 << 22):
    """A (N, F) table of standard normal rows (a fixed generator, made on ``device`` chunk
    by chunk), on ``device`` or, ``pinned``, in pinned host memory."""
    out = torch.empty((N, F), dtype=dtype, pin_memory=pinned) if pinned else None
    out = out if out is not None else torch.empty((N, F), dtype=dtype, device=device)
    g = torch.Generator(device=device).manual_seed(0)
    for lo in range(0, N, chunk):
        hi = min(N, lo + chunk)
        rows = torch.randn((hi - lo, F), generator=g, device=device).to(dtype)
        out[lo:hi].copy_(rows)
    return out


def free_bytes(device) -> int:
    return torch.cuda.mem_get_info(device)[0] if device.type == "cuda" else 1 << 62


def timed(store, n_ids, device, repeats):
    """Seconds of gathering every mini-batch of ``n_ids``: the median of ``repeats``."""
    store(n_ids[0])  # warm-up
    times = []
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        for n_id in n_ids:
            store(n_id)
        sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def main(argv=None):
    args = parser().parse_args(argv)
    if args.quick:
        args.num_nodes, args.num_edges, args.batches, args.batch_size = 20_000, 200_000, 8, 256
        args.cache_mb = [1]
    device = torch.device(args.device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    A, seeds, name = build(args, device)
    N, F = A.num_nodes, args.features
    backend = "cuda" if device.type == "cuda" else "torch"
    sampler = functools.partial(gs.compile(graphsage, backend=backend), fanouts=args.fanouts)
    loader = gs.DataLoader(A, sampler, seeds, args.batch_size, seed=0)
    n_ids = []
    for b in loader:
        n_ids.append(batch_nodes(b.out, b.seeds))
        if len(n_ids) == args.batches:
            break
    rows = sum(n.numel() for n in n_ids)
    epoch_batches = len(loader)
    print(
        f"graph {name}: {N:,} nodes; {len(n_ids)} mini-batches, {rows / len(n_ids):,.0f} rows each"
    )
    placements = [("device", torch.float32, 0), ("device", torch.bfloat16, 0)]
    if device.type == "cuda":
        placements += [("uva", torch.float32, 0)]
        placements += [("uva", torch.float32, mb << 20) for mb in args.cache_mb]
    reference, results, pinned = None, [], None
    for where, dtype, cache in placements:
        label = f"{where} {str(dtype).replace('torch.', '')}"
        label += f", {cache >> 20} MiB cache" if cache else ""
        row_bytes = F * dtype.itemsize
        needs = N * row_bytes if where == "device" else cache
        free = free_bytes(device)
        if needs > 0.9 * free:  # said before the table is made
            print(f"  {label}: skipped, needs {needs / 2**30:.1f} GiB of {free / 2**30:.1f} free")
            results.append({"placement": label, "skipped": True, "needs_bytes": needs})
            continue
        if where == "device":
            table = table_on(device, N, F, dtype)
        else:  # one pinned table serves every cache
            pinned = pinned if pinned is not None else table_on(device, N, F, dtype, pinned=True)
            table = pinned
        sync(device)
        before = torch.cuda.memory_allocated(device) if device.type == "cuda" else 0
        store = FeatureStore(table, A, cache_bytes=cache)
        held = (torch.cuda.memory_allocated(device) - before) if device.type == "cuda" else 0
        if where == "device":
            held += table.numel() * table.element_size()
        got = store(n_ids[0]).float()
        if reference is None:
            reference = got
        tol = 0 if dtype == torch.float32 else 1e-2
        agree = bool(torch.allclose(got, reference, rtol=tol, atol=tol))
        seconds, all_s = timed(store, n_ids, device, args.repeats)
        hit = store.hit_rate
        result = {
            "placement": label,
            "mode": store.mode,
            "batch_s": seconds / len(n_ids),
            "epoch_s": seconds / len(n_ids) * epoch_batches,
            "all_s": all_s,
            "rows_per_s": rows / seconds,
            "GB_per_s": rows * row_bytes / seconds / 1e9,
            "hit_rate": hit,
            "device_bytes": held,
            "agrees": agree,
        }
        results.append(result)
        print(
            f"  {label:32s} {result['batch_s'] * 1e3:8.3f} ms a mini-batch, epoch "
            f"{result['epoch_s']:7.3f} s, {result['GB_per_s']:7.1f} GB/s"
            + (f", hit rate {hit:.3f}" if hit is not None else "")
            + f", {held / 2**30:.1f} GiB on the device, rows agree: {agree}"
        )
        del store, table  # a device table freed before the next is made
        if device.type == "cuda":
            torch.cuda.empty_cache()
    record = script_record(
        device,
        ROOT,
        argv,
        graph=name,
        num_nodes=N,
        features=F,
        fanouts=args.fanouts,
        batch_size=args.batch_size,
        batches=len(n_ids),
        epoch_batches=epoch_batches,
        rows_per_batch=rows / len(n_ids),
        results=results,
    )
    tag = "quick_" if args.quick else ""
    path = write_record(record, args.out, f"features_{tag}{args.graph}_{device.type}.json")
    print(f"wrote {path}")
    return record


if __name__ == "__main__":
    main()
