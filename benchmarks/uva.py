"""Sampling a graph in pinned host memory (UVA), with and without a GPU cache, against the same
graph on the device, in one run (issues 15 and 35).

The graph is generated on the GPU with a fixed seed: the products-sized R-MAT of
docs/architecture.md §8 (2.4M nodes, 120M edges) by default, or an anchor graph by name
(``--graph papers-like`` / ``products-like``, with its pinned training seeds). It is placed
on the device (``A.to("cuda")``) and in pinned host memory read by the GPU through unified
virtual addressing (``A.to("cuda", placement="uva")``; ``"auto"`` with a ``budget`` below the
graph's size picks the same, as for a GPU too small for it), and again with GPU caches of its
busiest columns (``cache=`` bytes, ``--cache-mb``): by out-degree per byte (the default) and
by the column reads of ``--presample-batches`` mini-batches of other seeds
(``cache_priority=``, GNNLab's presampling). Workloads (``--workloads``): GraphSAGE
(``--fanouts``) and DeepWalk (``--walk-length``), compiled for the CUDA backend, through
``gs.DataLoader``: one mini-batch at a time and super-batched. Per (workload, placement,
mode): epoch time over every seed (median of ``--repeats`` after a warm-up epoch that also
counts the work: sampled edges or walk steps), its spread, the cache's hit rate and the
device memory the mode's epoch peaked at (with the resident graphs, and above what was
allocated before it). Before timing, the first ``--check-batches`` mini-batches of each mode
(at least one whole super-batch, so that the sweeps below run) are compared: every
placement's samples must be identical to the device-resident graph's.

The host link's profile, in the same run: random reads of int64 words (``t[idx]``) from
device memory and from the UVA graph's rows, in drawn order and in address order (the same
positions sorted). Random reads of pinned host memory pay an address translation each
once they spread over more than the translation cache covers; in address order consecutive
reads share pages. The CUDA backend samples a UVA graph's dense frontiers in address order
(``kernels/nodewise.cu``), and walks one with many walkers a step at a time, its walkers
sorted by node (``kernels/walk.cu``).

Published anchors: gSampler over UVA on an A100, ogbn-papers100M, GraphSAGE [20, 15, 10],
about 0.94 s per 196k seeds (5.77 s an epoch of 1.2M seeds).

Writes ``uva_<graph>_cuda.json`` (device, date, command, versions, commit) and a PNG of the
epoch times per workload to ``--out``, and prints a table.

    python benchmarks/uva.py                  # products-sized R-MAT (2.4M nodes, 120M edges)
    python benchmarks/uva.py --quick          # 200k nodes, 4M edges
    python benchmarks/uva.py --graph papers-like --fanouts 20 15 10 --batch-size 1024 \\
        --workloads graphsage deepwalk --super-batch 64 256 --walk-super-batch 1179 \\
        --cache-mb 16384 --presample-batches 0
"""

import argparse
import datetime
import functools
import json
import pathlib
import platform
import statistics
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))

from deepwalk import deepwalk
from graphsage import graphsage

import gsample as gs
from gsample.bench.report import git_commit
from gsample.formats.placement import graph_bytes

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: gSampler's published UVA figure: seconds per 196,608 seeds (A100, papers100M, [20, 15, 10])
PUBLISHED = {
    "system": "gSampler (UVA), A100",
    "graph": "ogbn-papers100M",
    "sampler": "GraphSAGE [20, 15, 10]",
    "epoch_s": 0.94,
    "seeds": 196_608,
}


def parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--graph",
        default="rmat",
        choices=["rmat", *gs.datasets.ANCHOR_GRAPHS],
        help="the R-MAT of --num-nodes / --num-edges, or an anchor graph with its seeds",
    )
    p.add_argument("--num-nodes", type=int, default=2_400_000)
    p.add_argument("--num-edges", type=int, default=120_000_000)
    p.add_argument("--seeds", type=int, default=196_608, help="seeds of the R-MAT graph")
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--fanouts", type=int, nargs="+", default=[25, 10])
    p.add_argument("--walk-length", type=int, default=80)
    p.add_argument(
        "--workloads", nargs="+", default=["graphsage"], choices=["graphsage", "deepwalk"]
    )
    p.add_argument(
        "--super-batch",
        type=int,
        nargs="*",
        default=[64],
        help="super-batch sizes to time besides one mini-batch at a time",
    )
    p.add_argument(
        "--walk-super-batch",
        type=int,
        nargs="*",
        default=None,
        help="super-batch sizes for the walks (default: --super-batch's); a UVA graph is "
        "walked in address order once a super-batch has a walker per 64 nodes",
    )
    p.add_argument(
        "--cache-mb",
        type=int,
        nargs="*",
        default=[256, 1024],
        help="GPU cache budgets (MiB) of the UVA graph to time besides none",
    )
    p.add_argument(
        "--presample-batches",
        type=int,
        default=64,
        help="mini-batches of other seeds whose column reads set a presampled "
        "cache's priority (0: no presampled caches)",
    )
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--check-batches", type=int, default=8)
    p.add_argument("--quick", action="store_true", help="a small graph (200k nodes, 4M edges)")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    return p


def sync():
    torch.cuda.synchronize()


def same(x, y) -> bool:
    """Two samplers' outputs (lists of gs.Matrix, or walk tensors) hold identical samples."""
    if isinstance(x, torch.Tensor):
        return isinstance(y, torch.Tensor) and torch.equal(x, y)
    if len(x) != len(y):
        return False
    for a, b in zip(x, y):
        ca, cb = a.csc, b.csc
        for name in ("indptr", "rows", "col_ids", "eids"):
            ta, tb = getattr(ca, name), getattr(cb, name)
            if (ta is None) != (tb is None) or (ta is not None and not torch.equal(ta, tb)):
                return False
    return True


def work(out) -> int:
    """Sampled edges of a mini-batch (blocks), or the steps its walks took (a tensor)."""
    if isinstance(out, torch.Tensor):
        return int((out[:, 1:] >= 0).sum())
    return sum(m.num_edges for m in out)


def loader(G, sampler, seeds, bs, super_batch):
    kw = {} if super_batch is None else {"super_batch": super_batch}
    return gs.DataLoader(G, sampler, seeds, bs, seed=0, **kw)


def epoch_time(load) -> float:
    """Seconds of one pass over the loader ``load`` (nothing read back per mini-batch)."""
    sync()
    start = time.perf_counter()
    for _ in load:
        pass
    sync()
    return time.perf_counter() - start


def measure(load, repeats):
    """A warm-up epoch (compiles, captures, caches) that counts the work, then ``repeats``
    timed ones; the device memory the timed epochs peaked at."""
    done = sum(work(b.out) for b in load)
    sync()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    times = [epoch_time(load) for _ in range(repeats)]
    return {
        "epoch_s": statistics.median(times),
        "epoch_s_all": times,
        "spread_s": max(times) - min(times),
        "work": done,
        "work_per_s": done / statistics.median(times),
        "peak_device_bytes": torch.cuda.max_memory_allocated(),
        "peak_above_resident_bytes": torch.cuda.max_memory_allocated() - before,
    }


def presample(A, sampler, seeds, bs):
    """Edges read per column (shape (N,)) by ``sampler`` over the mini-batches of ``seeds``."""
    reads = torch.zeros(A.num_nodes, dtype=torch.float64, device=A.device)
    for b in loader(A, sampler, seeds, bs, None):
        for m in b.out:
            reads.index_add_(0, m.csc.col_ids, m.csc.indptr.diff().double())
    return reads


def random_reads(t: torch.Tensor, ordered: bool = False, n: int = 1 << 24, repeats: int = 5):
    """Random int64 reads per second (and GB/s of words) from ``t`` (device or UVA), at
    uniformly drawn positions in drawn order or (``ordered``) sorted: in address order."""
    idx = torch.randint(t.numel(), (n,), device="cuda")
    if ordered:
        idx = idx.sort().values
    t[idx]
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        t[idx]
        sync()
        times.append(time.perf_counter() - start)
    s = statistics.median(times)
    return {"reads_per_s": n / s, "GB_per_s": n * t.element_size() / s / 1e9}


def versions() -> dict:
    out = {"torch": torch.__version__, "gsample": gs.__version__}
    try:
        import cupy  # optional: the CUDA backend's kernels

        out["cupy"] = cupy.__version__
    except ImportError:
        pass
    out["commit"] = git_commit(ROOT)
    return out


def plot(path, rows, title):
    import matplotlib  # optional: only the figure needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    fig, axes = plt.subplots(
        1, len(workloads), figsize=(2 + 4.5 * len(workloads), 3.8), squeeze=False
    )
    labels = {"device": "graph on the device", "uva": "graph in host memory (UVA)"}
    colors = ("#3a7bd5", "#e07b39", "#e0b139", "#8bc34a", "#9c27b0")
    for ax, workload in zip(axes[0], workloads):
        mine = [r for r in rows if r["workload"] == workload]
        modes = list(dict.fromkeys(r["mode"] for r in mine))
        placements = list(dict.fromkeys(r["placement"] for r in mine))
        width = 0.8 / len(placements)
        for j, placement in enumerate(placements):
            vals = [
                next(
                    (r["epoch_s"] for r in mine if r["mode"] == m and r["placement"] == placement),
                    0,
                )
                for m in modes
            ]
            bars = ax.bar(
                [i + (j - (len(placements) - 1) / 2) * width for i in range(len(modes))],
                vals,
                width,
                label=labels.get(placement, placement),
                color=colors[j % len(colors)],
            )
            ax.bar_label(bars, fmt="%.3g", fontsize=7)
        ax.set_xticks(range(len(modes)), modes, fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("epoch s")
        ax.set_title(workload, fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"wrote {path}")


def build(args, device):
    """``(graph, seeds, others, name)``: others are seeds outside the epoch (presampling)."""
    if args.graph == "rmat":
        A = gs.datasets.rmat(args.num_nodes, args.num_edges, seed=0, device=device)
        perm = torch.randperm(A.num_nodes, generator=torch.Generator().manual_seed(0))
        seeds = perm[: args.seeds].to(device)
        extra = args.presample_batches * args.batch_size
        others = perm[args.seeds : args.seeds + extra].to(device)
        return A, seeds, others, f"rmat({args.num_nodes}, {args.num_edges}, seed=0)"
    A, seeds = gs.datasets.anchor_graph(args.graph, device=device)
    inside = torch.zeros(A.num_nodes, dtype=torch.bool, device=device)
    inside[seeds] = True
    rest = (~inside).nonzero().flatten()
    pick = torch.randperm(rest.numel(), generator=torch.Generator().manual_seed(0))
    others = rest[pick[: args.presample_batches * args.batch_size].to(device)]
    return A, seeds, others, args.graph


def main(argv=None):
    args = parser().parse_args(argv)
    if args.quick:
        args.num_nodes, args.num_edges, args.seeds = 200_000, 4_000_000, 32_768
    if not torch.cuda.is_available():
        raise SystemExit(
            "benchmarks/uva.py: needs a CUDA GPU (UVA reads pinned host memory from one)"
        )
    t0 = time.perf_counter()
    device = torch.device("cuda", torch.cuda.current_device())
    name = torch.cuda.get_device_name(device)
    print(f"device: {name}")
    start = time.perf_counter()
    A, seeds, others, graph_name = build(args, device)
    sync()
    gen_s = time.perf_counter() - start
    nbytes = graph_bytes(A.csc)
    print(
        f"graph {graph_name}: {A.num_nodes:,} nodes, {A.num_edges:,} edges, "
        f"{nbytes / 1e9:.2f} GB, built in {gen_s:.1f} s; {seeds.numel():,} seeds"
    )
    start = time.perf_counter()
    before = torch.cuda.memory_allocated(device)
    H = A.to(device, placement="auto", budget=nbytes)  # a GPU the graph does not fit
    sync()
    uva_place_s = time.perf_counter() - start
    uva_device_bytes = torch.cuda.memory_allocated(device) - before
    assert H.placement == "uva", H.placement
    print(
        f"placed in pinned host memory in {uva_place_s:.1f} s; device memory it takes: "
        f"{uva_device_bytes / 1e6:.1f} MB"
    )
    samplers = {
        "graphsage": functools.partial(
            gs.compile(graphsage, backend="cuda"), fanouts=tuple(args.fanouts)
        ),
        "deepwalk": functools.partial(
            gs.compile(deepwalk, backend="cuda"), length=args.walk_length
        ),
    }
    policies = [("", None)]
    if others.numel():
        policies.append(
            (" presampled", presample(A, samplers["graphsage"], others, args.batch_size))
        )
    graphs = [("device", A), ("uva", H)]
    for mb in args.cache_mb:
        for label, priority in policies:
            start = time.perf_counter()
            G = A.to(device, placement="uva", cache=mb << 20, cache_priority=priority)
            sync()
            c = G.cache
            print(
                f"UVA with a {mb} MiB{label} cache: {c.columns:,} columns, {c.edges:,} edges "
                f"({c.edges / A.num_edges:.1%}), {c.nbytes / 1e6:.1f} MB, built in "
                f"{time.perf_counter() - start:.1f} s"
            )
            graphs.append((f"uva, {mb} MiB{label} cache", G))
    reads = {
        "device": random_reads(A.csc.rows),
        "uva": random_reads(H.csc.rows),
        "uva, address order": random_reads(H.csc.rows, ordered=True),
    }
    for k, v in reads.items():
        print(
            f"random int64 reads, {k}: {v['reads_per_s'] / 1e9:.3f} G/s "
            f"({v['GB_per_s']:.1f} GB/s of words)"
        )
    checks, rows = {}, []
    for workload in args.workloads:
        fn = samplers[workload]
        unit = "steps" if workload == "deepwalk" else "edges"
        sizes = args.super_batch
        if workload == "deepwalk" and args.walk_super_batch is not None:
            sizes = args.walk_super_batch
        modes = [("one at a time", None)] + [(f"super-batched {n}", n) for n in sizes]
        for mode, sb in modes:
            # at least one whole super-batch: its deeper layers are the dense calls
            check = seeds[: args.batch_size * max(args.check_batches, sb or 0)]
            outs = [[b.out for b in loader(G, fn, check, args.batch_size, sb)] for _, G in graphs]
            ok = all(
                len(o) == len(outs[0]) and all(same(x, y) for x, y in zip(o, outs[0]))
                for o in outs[1:]
            )
            checks[f"{workload}, {mode}"] = ok
            print(f"{workload}, {mode}: every placement's samples identical: {ok}", flush=True)
            for placement, G in graphs:
                if G.cache is not None:
                    G.cache.reset()
                r = measure(loader(G, fn, seeds, args.batch_size, sb), args.repeats)
                if G.cache is not None:
                    r["cache"] = G.cache.stats()
                rows.append(
                    {
                        "workload": workload,
                        "placement": placement,
                        "mode": mode,
                        "super_batch": sb,
                        "unit": unit,
                        **r,
                    }
                )
                hit = f", hit rate {r['cache']['hit_rate']:.3f}" if "cache" in r else ""
                print(
                    f"  {placement:30s} {mode:18s} epoch {r['epoch_s']:.4f} s "
                    f"(spread {r['spread_s']:.4f}), {r['work_per_s'] / 1e6:.1f} M {unit}/s"
                    f"{hit}",
                    flush=True,
                )
    for r in rows:
        dev = next(
            x
            for x in rows
            if x["workload"] == r["workload"]
            and x["mode"] == r["mode"]
            and x["placement"] == "device"
        )
        r["x_device"] = r["epoch_s"] / dev["epoch_s"]
    record = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": name,
        "host": platform.node(),
        "versions": versions(),
        "command": " ".join(
            ["python", "benchmarks/uva.py"] + (sys.argv[1:] if argv is None else list(argv))
        ),
        "graph": graph_name,
        "num_nodes": A.num_nodes,
        "num_edges": A.num_edges,
        "graph_bytes": nbytes,
        "seeds": seeds.numel(),
        "batch_size": args.batch_size,
        "fanouts": list(args.fanouts),
        "walk_length": args.walk_length,
        "presample_batches": args.presample_batches,
        "generate_s": gen_s,
        "uva_place_s": uva_place_s,
        "uva_device_bytes": uva_device_bytes,
        "random_reads": reads,
        "caches": {
            p: {k: v for k, v in G.cache.stats().items() if k in ("bytes", "columns", "edges")}
            for p, G in graphs
            if G.cache
        },
        "identical_samples": checks,
        "results": rows,
        "published": PUBLISHED,
        "total_s": time.perf_counter() - t0,
    }
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "rmat" if args.graph == "rmat" else args.graph
    path = out / f"uva{'_quick' if args.quick else ''}_{stem}_cuda.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {path}")
    plot(
        path.with_suffix(".png"),
        rows,
        f"{graph_name}: {A.num_nodes:,} nodes, {A.num_edges:,} edges, "
        f"{seeds.numel():,} seeds, mini-batches of {args.batch_size}; {name}",
    )
    print(
        f"{'workload':10s} {'placement':30s} {'mode':18s} {'epoch s':>9s} {'spread':>8s} "
        f"{'M work/s':>10s} {'x device':>9s} {'hit rate':>9s}"
    )
    for r in rows:
        hit = f"{r['cache']['hit_rate']:9.3f}" if "cache" in r else f"{'-':>9s}"
        print(
            f"{r['workload']:10s} {r['placement']:30s} {r['mode']:18s} {r['epoch_s']:9.4f} "
            f"{r['spread_s']:8.4f} {r['work_per_s'] / 1e6:10.1f} {r['x_device']:9.2f} {hit}"
        )
    print(
        f"published: {PUBLISHED['system']}, {PUBLISHED['graph']}, {PUBLISHED['sampler']}: "
        f"{PUBLISHED['epoch_s']} s per 196k seeds"
    )
    print(f"total {record['total_s']:.0f} s")
    if not all(checks.values()):
        raise SystemExit("UVA samples differ from the device graph's")


if __name__ == "__main__":
    main()
