"""Multi-GPU sampling throughput (issue 16): 1, 2 and 4 processes, each graph placement.

One process per GPU (``torch.multiprocessing.spawn``, NCCL with ``NCCL_NVLS_ENABLE=0``),
or per CPU core with gloo (``--device cpu``: one thread a rank). Every rank generates the
products-sized R-MAT graph (docs/architecture.md §8: 2.4M nodes, 120M edges, fixed seed) on its
device, then ``gs.distributed.place(A, placement)`` for each placement:

=============  ===============================================================================
replicated     the graph on every GPU
shared         one copy in shared pinned host memory, read by every GPU through UVA
partitioned    edge-balanced column ranges, frontiers exchanged with NCCL all-to-alls
=============  ===============================================================================

Workloads through ``gs.DataLoader(..., distributed=True)``: W1 GraphSAGE [25, 10], mini-batch
512, and W2 DeepWalk, length 80, mini-batch 1024, 196,608 seeds, compiled for the CUDA backend
(the torch backend on CPUs; a partitioned graph runs the samplers eagerly). Per (world size,
placement, workload): the epoch time (median of ``--repeats`` after a warm-up epoch; ranks
synchronised by barriers; over the first ``--max-batches`` mini-batches of the epoch, scaled
to the whole epoch), seeds and sampled edges (walk steps) per second, and the scaling
efficiency ``throughput(n) / (n * throughput(1))``. Every mini-batch's samples are
fingerprinted in the warm-up epoch and must equal the single-process replicated run's.

Writes ``multi_gpu_<graph>_<device>.json`` (device, date, command, versions) and a PNG of
the throughputs to ``--out``; prints a table. Must finish in under 5 minutes.

    python benchmarks/multi_gpu.py                            # 1, 2, 4 GPUs (those present)
    python benchmarks/multi_gpu.py --quick                    # a small graph
    python benchmarks/multi_gpu.py --device cpu --quick       # 1 and 2 gloo processes
"""

import argparse
import datetime
import functools
import json
import os
import pathlib
import platform
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))

from deepwalk import deepwalk
from graphsage import graphsage

import gsample as gs
from gsample.bench.report import git_commit

ROOT = pathlib.Path(__file__).resolve().parents[1]

PLACEMENTS = ("replicated", "shared", "partitioned")
WORKLOADS = {"W1 GraphSAGE [25, 10]": "graphsage", "W2 DeepWalk L=80": "deepwalk"}


def parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument(
        "--world-sizes",
        type=int,
        nargs="+",
        default=None,
        help="processes per run (default: 1 2 4 GPUs, those present; 1 2 on CPUs)",
    )
    p.add_argument("--placements", nargs="+", default=list(PLACEMENTS), choices=PLACEMENTS)
    p.add_argument("--num-nodes", type=int, default=2_400_000)
    p.add_argument("--num-edges", type=int, default=120_000_000)
    p.add_argument("--seeds", type=int, default=196_608)
    p.add_argument("--sage-batch", type=int, default=512)
    p.add_argument("--walk-batch", type=int, default=1024)
    p.add_argument("--walk-length", type=int, default=80)
    p.add_argument(
        "--max-batches",
        type=int,
        default=96,
        help="mini-batches timed per epoch (0: all); times scaled to the epoch",
    )
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument(
        "--quick", action="store_true", help="a small graph: 100k nodes, 2M edges, 16,384 seeds"
    )
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    return p


def fingerprint(out) -> tuple:
    """An exact summary of a mini-batch's samples: ``(size, checksum)`` (int64 sums)."""
    if isinstance(out, torch.Tensor):  # walks
        w = out.to(torch.int64)
        pos = torch.arange(1, w.shape[1] + 1, device=w.device)
        return int((w >= 0).sum()) - w.shape[0], int((w * pos).sum())
    size, check = 0, 0
    for m in out:
        rows, cols, eids = m.edges()
        size += m.num_edges
        check += int((rows * 1_000_003 + cols * 7_919 + eids).sum())
    return size, check


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# ----------------------------------------------------------------------------- one rank
def _worker(rank, world, url, cfg, out_dir):
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # never NVLink multicast
    cuda = cfg["device"] == "cuda"
    if cuda:
        torch.cuda.set_device(rank)
        device = torch.device("cuda", rank)
    else:
        torch.set_num_threads(1)  # a CPU rank is one core, as a GPU rank is one GPU
        device = torch.device("cpu")
    dist.init_process_group(
        "nccl" if cuda else "gloo",
        init_method=url,
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(minutes=10),
    )
    try:
        res = _run(rank, world, device, cfg)
        (pathlib.Path(out_dir) / f"rank{rank}.json").write_text(json.dumps(res))
    finally:
        dist.destroy_process_group()


def _run(rank, world, device, cfg):
    start = time.perf_counter()
    A = gs.datasets.rmat(cfg["num_nodes"], cfg["num_edges"], seed=0, device=device)
    sync(device)
    res = {"generate_s": time.perf_counter() - start}
    perm = torch.randperm(A.num_nodes, generator=torch.Generator().manual_seed(0))
    seeds = perm[: cfg["seeds"]].to(device)
    backend = "cuda" if device.type == "cuda" else "torch"
    samplers = {
        "graphsage": (gs.compile(graphsage, backend=backend), cfg["sage_batch"]),
        "deepwalk": (
            functools.partial(gs.compile(deepwalk, backend=backend), length=cfg["walk_length"]),
            cfg["walk_batch"],
        ),
    }
    for placement in cfg["placements"]:
        start = time.perf_counter()
        try:
            G = gs.distributed.place(A, placement, device=device)
        except Exception as e:
            res[placement] = {"error": repr(e)}
            continue
        sync(device)
        res[placement] = {"place_s": time.perf_counter() - start, "graph": G.placement}
        for name, (sampler, bs) in samplers.items():
            res[placement][name] = _time(G, sampler, seeds, bs, device, cfg)
        del G
    return res


def _time(G, sampler, seeds, bs, device, cfg):
    total = -(-seeds.numel() // bs)
    timed = min(total, cfg["max_batches"]) if cfg["max_batches"] else total
    loader = gs.DataLoader(G, sampler, seeds[: timed * bs], bs, seed=0, distributed=True)
    batches = {}
    for b in loader:  # the warm-up epoch: compiles, and fingerprints
        batches[b.index] = fingerprint(b.out)
    times = []
    for _ in range(cfg["repeats"]):
        sync(device)
        dist.barrier()
        start = time.perf_counter()
        for _ in loader:
            pass
        sync(device)
        dist.barrier()
        times.append(time.perf_counter() - start)
    return {
        "times": times,
        "timed_batches": timed,
        "epoch_batches": total,
        "fingerprints": {str(k): v for k, v in batches.items()},
    }


# ----------------------------------------------------------------------------- the run


def run_world(world, cfg, out):
    d = pathlib.Path(out) / f"world{world}"
    d.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    url = gs.distributed.local_init_method()
    mp.spawn(_worker, args=(world, url, cfg, str(d)), nprocs=world)
    ranks = [json.loads((d / f"rank{r}.json").read_text()) for r in range(world)]
    for f in d.iterdir():
        f.unlink()
    d.rmdir()
    return ranks, time.perf_counter() - start


def summarise(world, ranks, cfg, reference, rows):
    for placement in cfg["placements"]:
        if "error" in ranks[0][placement]:
            rows.append(
                {"world": world, "placement": placement, "error": ranks[0][placement]["error"]}
            )
            continue
        for label, name in WORKLOADS.items():
            per = [r[placement][name] for r in ranks]
            median = statistics.median(max(t) for t in zip(*(p["times"] for p in per)))
            fps = {}
            for p in per:
                fps.update(p["fingerprints"])
            scale = per[0]["epoch_batches"] / per[0]["timed_batches"]
            bs = cfg["sage_batch"] if name == "graphsage" else cfg["walk_batch"]
            edges = sum(v[0] for v in fps.values())
            ref = reference.setdefault(name, fps)
            rows.append(
                {
                    "world": world,
                    "placement": placement,
                    "workload": label,
                    "graph_placement": ranks[0][placement]["graph"],
                    "epoch_s": median * scale,
                    "timed_s": median,
                    "timed_batches": per[0]["timed_batches"],
                    "seeds_per_s": min(per[0]["timed_batches"] * bs, cfg["seeds"]) / median,
                    "edges_per_s": edges / median,
                    "identical_to_single": fps == ref,
                    "place_s": max(r[placement]["place_s"] for r in ranks),
                }
            )


def efficiency(rows):
    for r in rows:
        if "error" in r:
            continue
        base = [
            x
            for x in rows
            if "error" not in x
            and x["placement"] == r["placement"]
            and x["workload"] == r["workload"]
        ]
        one = min(base, key=lambda x: x["world"])
        r["scaling_efficiency"] = (
            (r["seeds_per_s"] / one["seeds_per_s"]) * one["world"] / r["world"]
        )


def plot(path, rows, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(WORKLOADS), figsize=(5.2 * len(WORKLOADS), 3.8), squeeze=False)
    for ax, label in zip(axes[0], WORKLOADS):
        for placement in PLACEMENTS:
            mine = sorted(
                (r for r in rows if r.get("workload") == label and r["placement"] == placement),
                key=lambda r: r["world"],
            )
            if not mine:
                continue
            xs, ys = [r["world"] for r in mine], [r["edges_per_s"] / 1e6 for r in mine]
            ax.plot(xs, ys, marker="o", label=placement)
            for r, x, y in zip(mine, xs, ys):
                ax.annotate(
                    f"{r['scaling_efficiency']:.0%}",
                    (x, y),
                    fontsize=7,
                    textcoords="offset points",
                    xytext=(4, 4),
                )
        ax.set_xticks(sorted({r["world"] for r in rows}))
        ax.set_xlabel("processes (GPUs)")
        ax.set_ylabel("M sampled edges / s" if "GraphSAGE" in label else "M walk steps / s")
        ax.set_title(label + " (labels: scaling efficiency)", fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"wrote {path}")


def main(argv=None):
    args = parser().parse_args(argv)
    if args.quick:
        args.num_nodes, args.num_edges, args.seeds = 100_000, 2_000_000, 16_384
        if args.device == "cpu":
            args.num_nodes, args.num_edges, args.seeds = 20_000, 200_000, 4096
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        raise SystemExit("benchmarks/multi_gpu.py: no CUDA GPU (use --device cpu for gloo)")
    available = torch.cuda.device_count() if cuda else os.cpu_count()
    worlds = args.world_sizes or ([1, 2, 4] if cuda else [1, 2])
    worlds = sorted(w for w in set(worlds) if w <= available) if cuda else sorted(set(worlds))
    cfg = {
        k: getattr(args, k)
        for k in (
            "device",
            "placements",
            "num_nodes",
            "num_edges",
            "seeds",
            "sage_batch",
            "walk_batch",
            "walk_length",
            "max_batches",
            "repeats",
        )
    }
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    name = torch.cuda.get_device_name(0) if cuda else f"{platform.machine()} CPU"
    print(f"device: {name}; world sizes {worlds}; placements {args.placements}", flush=True)
    t0 = time.perf_counter()
    rows, reference, spawn_s = [], {}, {}
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for world in worlds:
        ranks, spawn_s[world] = run_world(world, cfg, out)
        summarise(world, ranks, cfg, reference, rows)
        print(f"  {world} process(es): {spawn_s[world]:.0f} s", flush=True)
    efficiency(rows)
    record = {
        **cfg,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": name,
        "torch": torch.__version__,
        "gsample": gs.__version__,
        "commit": git_commit(ROOT),
        "command": " ".join(
            ["python", "benchmarks/multi_gpu.py"] + (sys.argv[1:] if argv is None else list(argv))
        ),
        "graph": f"rmat({args.num_nodes}, {args.num_edges}, seed=0)",
        "world_sizes": worlds,
        "spawn_s": spawn_s,
        "results": rows,
        "total_s": time.perf_counter() - t0,
    }
    path = out / f"multi_gpu{'_quick' if args.quick else ''}_rmat_{args.device}.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {path}")
    plot(
        path.with_suffix(".png"),
        rows,
        f"{args.num_nodes:,} nodes, {args.num_edges:,} edges, {args.seeds:,} seeds; {name}",
    )
    print(
        f"{'n':>2s} {'placement':12s} {'workload':24s} {'epoch s':>9s} {'M edges/s':>10s} "
        f"{'seeds/s':>10s} {'eff.':>6s} same"
    )
    for r in rows:
        if "error" in r:
            print(f"{r['world']:2d} {r['placement']:12s} error: {r['error'][:70]}")
            continue
        print(
            f"{r['world']:2d} {r['placement']:12s} {r['workload']:24s} {r['epoch_s']:9.4f} "
            f"{r['edges_per_s'] / 1e6:10.2f} {r['seeds_per_s']:10.0f} "
            f"{r['scaling_efficiency']:6.0%} {r['identical_to_single']}"
        )
    print(f"total {record['total_s']:.0f} s")
    if not all(r.get("identical_to_single", True) for r in rows):
        raise SystemExit("some placement's samples differ from the single-process run's")


if __name__ == "__main__":
    main()
