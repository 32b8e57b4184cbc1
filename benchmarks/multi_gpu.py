"""Multi-GPU sampling throughput: 1, 2, 4, ... processes, each graph placement, one
mini-batch at a time and super-batched per rank.

One process per GPU (``torch.multiprocessing.spawn``, NCCL with ``NCCL_NVLS_ENABLE=0``:
never NVLink multicast), or per CPU core with gloo (``--device cpu``: one thread a rank).

The graph (``--graph``: ``papers-like`` (default), ``products-like`` or ``rmat:N:E``, the
generator of ``python -m gsample.bench --graph``) is built ONCE, by this process (on GPU 0,
then written to ``--graph-dir``, a tmpfs by default:
:func:`gsample.distributed.shared.share_graph`), and every rank maps that one copy
(:func:`~gsample.distributed.shared.attach_graph`) and places it with
``gs.distributed.place(A, placement)``:

=============  ===============================================================================
replicated     every rank copies the graph to its GPU
shared         the one copy itself, pinned in place and read by every GPU through UVA
partitioned    each rank copies its edge-balanced column range; frontiers go by all-to-alls
=============  ===============================================================================

A later run given the same ``--graph-dir`` and ``--graph`` reuses the graph there
(``--keep-graph`` keeps it; ``.gpu/mgpu.sh`` shares it with ``benchmarks/train_ddp.py``).

Workloads through ``gs.DataLoader(..., distributed=True)`` over the graph's seeds (the anchor
graphs' pinned seeds: 1,207,179 for papers-like): GraphSAGE ``--fanouts`` [20, 15, 10],
mini-batch 1024, and DeepWalk L = 80, mini-batch 1024, compiled for the CUDA backend (the
torch backend on CPUs; a partitioned graph runs the samplers eagerly), each one mini-batch at
a time and super-batched (``super_batch=--super-batch`` per rank, the rank's mini-batches in
runs of N; on a partitioned graph each round's exchanges carry N).

Per (world size, placement, workload, mode): the epoch time (median of the repeats after a
warm-up epoch; ranks synchronised by barriers; over the first ``--max-batches`` mini-batches
of the epoch, fewer for the slower placements, all ranks together, scaled to the whole
epoch; the seeds are taken in their order, already random, so mini-batch ``i`` holds the
same seeds under every cap), seeds and sampled edges (walk steps) per second, and the
scaling efficiency against the ONE-GPU epoch with the graph on the device in its best mode
(world 1, ``replicated``, the faster of one at a time and super-batched):
``T_1 / (n * T_n)``. Every mini-batch's samples are fingerprinted in the warm-up epoch
and must equal the single-process run's (``identical_to_single``; the run exits with an
error otherwise).

Writes ``multi_gpu_<graph>_<device>.json`` (device, date, command, versions) and a PNG of the
throughputs to ``--out``; prints a table.

    python benchmarks/multi_gpu.py                                  # papers-like, 1, 2, 4 GPUs
    python benchmarks/multi_gpu.py --graph products-like --world-sizes 1 2
    python benchmarks/multi_gpu.py --device cpu --quick             # 1 and 2 gloo processes
"""

# ruff: noqa: E402  the examples' folder goes on sys.path before their imports
import argparse
import copy
import datetime
import functools
import json
import os
import pathlib
import platform
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "examples")]

from deepwalk import deepwalk
from graphsage import graphsage

import gsample as gs
from gsample.bench.cli import epoch_seeds, graph_problem, load_graph
from gsample.bench.report import git_commit
from gsample.distributed.shared import (
    attach_graph,
    map_shared,
    remove_shared,
    share_graph,
    shared_graph_header,
    shm_dir,
    write_shared,
)

PLACEMENTS = ("replicated", "shared", "partitioned")
WORKLOADS = ("graphsage", "deepwalk")
ONE = "one at a time"


def positive(text: str) -> int:
    """An argparse type: an int >= 1 (a fanout, a mini-batch size, a length)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument(
        "--graph",
        default=None,
        help="papers-like (default), products-like or rmat:N:E (python -m gsample.bench's)",
    )
    p.add_argument(
        "--world-sizes",
        type=int,
        nargs="+",
        default=None,
        help="processes per run (default: 1 2 4 8 GPUs, those present; 1 2 on CPUs)",
    )
    p.add_argument("--placements", nargs="+", default=list(PLACEMENTS), choices=PLACEMENTS)
    p.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=WORKLOADS)
    p.add_argument(
        "--seeds", type=int, default=None, help="seeds (default: the anchor graph's, else 196608)"
    )
    p.add_argument("--fanouts", type=positive, nargs="+", default=[20, 15, 10])
    p.add_argument("--sage-batch", type=positive, default=1024)
    p.add_argument("--walk-batch", type=positive, default=1024)
    p.add_argument("--walk-length", type=positive, default=80)
    p.add_argument(
        "--super-batch", type=int, default=16, help="mini-batches per run per rank (0: not run)"
    )
    p.add_argument(
        "--max-batches",
        type=int,
        default=768,
        help="mini-batches timed per epoch, all ranks together (0: all); scaled to the epoch",
    )
    p.add_argument("--max-batches-shared", type=int, default=192, help="the same, shared")
    p.add_argument(
        "--max-batches-partitioned", type=int, default=64, help="the same, partitioned GraphSAGE"
    )
    p.add_argument(
        "--max-batches-partitioned-walk",
        type=int,
        default=32,
        help="the same, partitioned DeepWalk (every step an exchange)",
    )
    p.add_argument(
        "--time-budget",
        type=float,
        default=0,
        help="seconds for the whole run (0: no limit); each world size gets an equal share of "
        "what is left, and a measurement that would start past it is skipped (recorded so)",
    )
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--repeats-partitioned", type=int, default=1)
    p.add_argument(
        "--graph-dir",
        default=None,
        help="where the graph is shared (default: a new folder in /dev/shm); reused when it "
        "holds the same --graph",
    )
    p.add_argument("--keep-graph", action="store_true", help="leave the graph in --graph-dir")
    p.add_argument(
        "--quick",
        action="store_true",
        help="a small graph (rmat:100000:2000000 on GPUs, rmat:20000:200000 on CPUs)",
    )
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    return p


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


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


# ----------------------------------------------------------------------------- the graph
def build_shared(spec, count, folder, device):
    """The graph of ``spec`` and its first ``count`` epoch seeds in ``folder`` (built on
    ``device`` and written there, or found there from an earlier run); its header."""
    header = shared_graph_header(folder)
    meta = {} if header is None else header["meta"]
    if meta.get("spec") == spec and meta["seeds"][2][0] >= count:
        log(f"graph {spec}: reusing {folder}")
        return header
    start = time.perf_counter()
    log(f"graph {spec}: building on {device}")
    A, tag = load_graph(spec, device)
    seeds, source = epoch_seeds(spec, A, device)
    seeds = seeds[:count]
    sync(device)
    built = time.perf_counter() - start
    log(f"graph {spec}: {A.num_nodes} nodes, {A.num_edges} edges in {built:.1f} s; sharing")
    start = time.perf_counter()
    seed_spec = write_shared({"seeds": seeds}, folder)["seeds"]
    header = share_graph(
        A,
        folder,
        spec=spec,
        tag=tag,
        seeds=seed_spec,
        seed_source=source,
        num_edges=A.num_edges,
        build_s=built,
    )
    header["meta"]["share_s"] = time.perf_counter() - start
    log(f"graph {spec}: written to {folder} in {header['meta']['share_s']:.1f} s")
    del A, seeds
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return header


def graph_folder(args, nbytes_hint=0):
    """``--graph-dir``, else a new folder in /dev/shm (a tmpfs), or the temporary folder
    when /dev/shm is too small for the graph."""
    if args.graph_dir:
        return pathlib.Path(args.graph_dir), False
    base = shm_dir()
    stat = os.statvfs(base)
    if stat.f_bavail * stat.f_frsize < nbytes_hint:
        base = tempfile.gettempdir()
    return pathlib.Path(tempfile.mkdtemp(prefix="gsample-graph-", dir=base)), True


def expected_bytes(spec):
    """About the shared graph's bytes (int64 offsets and rows), to pick a folder."""
    sizes = {"papers-like": (54_475_832, 3_231_371_744), "products-like": (1_833_086, 123_718_280)}
    if spec in sizes:
        n, e = sizes[spec]
    else:
        _, n, e = spec.split(":")
        n, e = int(n), int(e)
    return 8 * (n + 1 + e) + (1 << 30)


# ----------------------------------------------------------------------------- one rank
def rank_worker(rank, world, url, cfg, out_dir, run):
    """One rank of a spawned run: its device (GPU ``rank``, or one CPU core), the process
    group (NCCL, or gloo on CPUs), then ``run(rank, world, device, cfg)``, its result
    written to ``out_dir/rank<rank>.json``."""
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
        **({"device_id": device} if cuda else {}),
    )
    try:
        res = run(rank, world, device, cfg)
        (pathlib.Path(out_dir) / f"rank{rank}.json").write_text(json.dumps(res))
    finally:
        dist.destroy_process_group()


def _worker(rank, world, url, cfg, out_dir):
    rank_worker(rank, world, url, cfg, out_dir, _run)


def _samplers(cfg, backend):
    return {
        "graphsage": (
            functools.partial(
                gs.compile(graphsage, backend=backend), fanouts=tuple(cfg["fanouts"])
            ),
            cfg["sage_batch"],
        ),
        "deepwalk": (
            functools.partial(gs.compile(deepwalk, backend=backend), length=cfg["walk_length"]),
            cfg["walk_batch"],
        ),
    }


def _run(rank, world, device, cfg):
    A = attach_graph(cfg["folder"])
    header = shared_graph_header(cfg["folder"])
    seeds = map_shared({"seeds": header["meta"]["seeds"]})["seeds"].to(device)
    backend = "cuda" if device.type == "cuda" else "torch"
    modes = [(ONE, None)] + (
        [(f"super-batched {cfg['super_batch']}", cfg["super_batch"])] if cfg["super_batch"] else []
    )
    res = {}
    for placement in cfg["placements"]:
        if out_of_time(cfg, world):
            res[placement] = {"error": SKIPPED}
            continue
        sync(device)
        dist.barrier()
        start = time.perf_counter()
        G, error = None, None
        try:
            G = gs.distributed.place(A, placement, device=device)
            sync(device)
        except Exception as e:  # e.g. a graph that does not fit: said, the others still run
            error = repr(e)
        error = agreed(error, world)
        if error is not None:
            res[placement] = {"error": error}
            G = None
            continue
        res[placement] = {"place_s": time.perf_counter() - start, "graph": G.placement}
        # compiled afresh for each placement: what a compiled sampler keeps between calls
        # (programs, captured CUDA graphs) then never holds the previous placement's graph
        samplers = _samplers(cfg, backend)
        for name in cfg["workloads"]:
            sampler, bs = samplers[name]
            cap, repeats = caps(cfg, placement, name)
            for mode, size in modes:
                if out_of_time(cfg, world):
                    res[placement][f"{name}|{mode}"] = {"error": SKIPPED}
                    continue
                try:
                    r, error = _time(G, sampler, seeds, bs, size, cap, repeats, device), None
                except Exception as e:  # outside a collective (the loader's are in step)
                    error = repr(e)
                error = agreed(error, world)
                if error is not None:
                    r = {"error": error}
                res[placement][f"{name}|{mode}"] = r
                if rank == 0:
                    log(f"  {world} rank(s) {placement} {name} {mode}: {r.get('times', r)}")
        G = samplers = sampler = None  # freed before the next placement is made
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return res


SKIPPED = "skipped: --time-budget spent"


def out_of_time(cfg, world):
    """Whether this world size's share of ``--time-budget`` is spent (any rank's clock: all
    ranks skip together)."""
    late = [None] * world
    dist.all_gather_object(late, cfg["deadline"] is not None and time.time() > cfg["deadline"])
    return any(late)


def agreed(error, world):
    """The first rank's error of those that had one (every rank learns it, so all go on to
    the next measurement together), or None."""
    errors = [None] * world
    dist.all_gather_object(errors, error)
    return next((e for e in errors if e is not None), None)


def caps(cfg, placement, name):
    """``(max batches, repeats)`` of a placement and workload."""
    if placement == "partitioned":
        key = "max_batches_partitioned_walk" if name == "deepwalk" else "max_batches_partitioned"
        return cfg[key], cfg["repeats_partitioned"]
    if placement == "shared":
        return cfg["max_batches_shared"], cfg["repeats"]
    return cfg["max_batches"], cfg["repeats"]


def _time(G, sampler, seeds, bs, super_batch, cap, repeats, device):
    total = -(-seeds.numel() // bs)
    timed = min(total, cap) if cap else total
    # not shuffled: the seeds are in a random order already, and mini-batch i is then the
    # same seeds under every cap (the fingerprints of a shorter run compare with a longer's)
    loader = gs.DataLoader(
        G,
        sampler,
        seeds[: timed * bs],
        bs,
        shuffle=False,
        seed=0,
        distributed=True,
        super_batch=super_batch,
    )
    batches = {}
    sync(device)
    start = time.perf_counter()
    for b in loader:  # the warm-up epoch: compiles, and fingerprints
        batches[b.index] = fingerprint(b.out)
    warm = time.perf_counter() - start
    times = []
    for _ in range(repeats):
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
        "warm_up_s": warm,
        "timed_batches": timed,
        "epoch_batches": total,
        "rank_batches": len(loader),
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


def summarise(world, ranks, cfg, rows):
    for placement in cfg["placements"]:
        if "error" in ranks[0][placement]:
            rows.append(
                {"world": world, "placement": placement, "error": ranks[0][placement]["error"]}
            )
            continue
        for key in ranks[0][placement]:
            if "|" not in key:
                continue
            name, mode = key.split("|")
            per = [r[placement][key] for r in ranks]
            errors = [p["error"] for p in per if "error" in p]
            if errors:
                rows.append(
                    {
                        "world": world,
                        "placement": placement,
                        "workload": name,
                        "mode": mode,
                        "error": errors[0],
                    }
                )
                continue
            median = statistics.median(max(t) for t in zip(*(p["times"] for p in per)))
            fps = {}
            for p in per:
                fps.update(p["fingerprints"])
            timed, total = per[0]["timed_batches"], per[0]["epoch_batches"]
            bs = cfg["sage_batch"] if name == "graphsage" else cfg["walk_batch"]
            rows.append(
                {
                    "world": world,
                    "placement": placement,
                    "workload": name,
                    "mode": mode,
                    "graph_placement": ranks[0][placement]["graph"],
                    "epoch_s": median * total / timed,
                    "timed_s": median,
                    "timed_batches": timed,
                    "epoch_batches": total,
                    "batches_per_rank": per[0]["rank_batches"],
                    "seeds_per_s": min(timed * bs, cfg["seeds"]) / median,
                    "edges_per_s": sum(v[0] for v in fps.values()) / median,
                    "warm_up_s": max(p["warm_up_s"] for p in per),
                    "place_s": max(r[placement]["place_s"] for r in ranks),
                    "fingerprints": fps,
                }
            )


def compare(rows):
    """``identical_to_single`` of every row: its mini-batches' fingerprints equal the
    single-process run's (world 1, the first placement, one at a time) on every index."""
    for name in WORKLOADS:
        mine = [r for r in rows if r.get("workload") == name and "fingerprints" in r]
        if not mine:
            continue
        ref_rows = [r for r in mine if r["world"] == 1] or mine
        ref = max(ref_rows, key=lambda r: (r["mode"] == ONE, len(r["fingerprints"])))[
            "fingerprints"
        ]
        for r in mine:
            fps = r.pop("fingerprints")
            r["identical_to_single"] = all(ref.get(k) == v for k, v in fps.items())
            r["checked_batches"] = len(fps)


def efficiency(rows):
    """Every row's scaling efficiency against the one-GPU epoch with the graph on the device
    in its best mode: ``T_1 / (n * T_n)``; and the best mode of each (world, placement,
    workload) marked ``best``."""
    base = {}
    for name in WORKLOADS:
        one = [
            r
            for r in rows
            if r.get("workload") == name
            and "epoch_s" in r
            and r["world"] == 1
            and r["placement"] == "replicated"
        ]
        if one:
            best = min(one, key=lambda r: r["epoch_s"])
            base[name] = {"epoch_s": best["epoch_s"], "mode": best["mode"]}
    groups = {}
    for r in rows:
        if "epoch_s" not in r:
            continue
        if r["workload"] in base:
            r["scaling_efficiency"] = base[r["workload"]]["epoch_s"] / (r["world"] * r["epoch_s"])
        groups.setdefault((r["world"], r["placement"], r["workload"]), []).append(r)
    for group in groups.values():
        fastest = min(group, key=lambda r: r["epoch_s"])
        for r in group:
            r["best"] = r is fastest
    return base


def plot(path, rows, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n in WORKLOADS if any(r.get("workload") == n and "epoch_s" in r for r in rows)]
    if not names:
        log(f"no figure: nothing was measured ({path})")
        return
    fig, axes = plt.subplots(1, len(names), figsize=(5.4 * len(names), 3.9), squeeze=False)
    worlds = sorted({r["world"] for r in rows})
    for ax, name in zip(axes[0], names):
        for placement in PLACEMENTS:
            mine = sorted(
                (
                    r
                    for r in rows
                    if r.get("workload") == name and r["placement"] == placement and r.get("best")
                ),
                key=lambda r: r["world"],
            )
            if not mine:
                continue
            xs, ys = [r["world"] for r in mine], [r["edges_per_s"] / 1e6 for r in mine]
            ax.plot(xs, ys, marker="o", label=placement)
            for r, x, y in zip(mine, xs, ys):
                if "scaling_efficiency" in r:
                    ax.annotate(
                        f"{r['scaling_efficiency']:.0%}",
                        (x, y),
                        fontsize=7,
                        textcoords="offset points",
                        xytext=(4, 4),
                    )
        base = [
            r
            for r in rows
            if r.get("workload") == name
            and r["world"] == 1
            and r["placement"] == "replicated"
            and r.get("best")
        ]
        if base:  # linear scaling from the one-GPU epoch with the graph on the device
            ax.plot(
                worlds,
                [w * base[0]["edges_per_s"] / 1e6 for w in worlds],
                "k--",
                lw=0.8,
                label="linear from 1 GPU, device",
            )
        ax.set_xticks(worlds)
        ax.set_yscale("log")
        ax.set_xlabel("processes (GPUs)")
        ax.set_ylabel("M sampled edges / s" if name == "graphsage" else "M walk steps / s")
        ax.set_title(
            f"{name}, best mode (labels: efficiency vs 1 GPU, graph on the device)", fontsize=8
        )
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    log(f"wrote {path}")


def setup(args, script: str) -> tuple:
    """A spawned benchmark's start (this one's and ``train_ddp.py``'s): ``--graph`` checked,
    the world sizes to run (on GPUs, those the host has), NCCL's NVLink multicast off;
    ``(world sizes, the anchor graph's entry or None, the device's name)``."""
    problem = graph_problem(args.graph)
    if problem is not None:
        raise SystemExit(f"--graph {args.graph}: {problem}")
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        raise SystemExit(f"{script}: no CUDA GPU (use --device cpu for gloo)")
    worlds = args.world_sizes or ([1, 2, 4, 8] if cuda else [1, 2])
    if cuda:
        worlds = [w for w in worlds if w <= torch.cuda.device_count()]
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    name = torch.cuda.get_device_name(0) if cuda else f"{platform.machine()} CPU"
    return sorted(set(worlds)), gs.datasets.ANCHOR_GRAPHS.get(args.graph), name


def main(argv=None):
    args = parser().parse_args(argv)
    if args.graph is None:
        args.graph = "papers-like"
        if args.quick:
            args.graph = "rmat:100000:2000000" if args.device == "cuda" else "rmat:20000:200000"
    worlds, anchor, name = setup(args, "benchmarks/multi_gpu.py")
    cuda = args.device == "cuda"
    if args.seeds is None:
        args.seeds = anchor.num_seeds if anchor else 196_608
    log(f"device: {name}; world sizes {worlds}; graph {args.graph}; placements {args.placements}")
    t0 = time.perf_counter()
    folder, temporary = graph_folder(args, expected_bytes(args.graph))
    try:
        header = build_shared(
            args.graph, args.seeds, folder, torch.device("cuda", 0) if cuda else torch.device("cpu")
        )
        args.seeds = min(args.seeds, header["meta"]["seeds"][2][0])
        cfg = {
            k: getattr(args, k)
            for k in (
                "device",
                "placements",
                "workloads",
                "seeds",
                "fanouts",
                "sage_batch",
                "walk_batch",
                "walk_length",
                "super_batch",
                "max_batches",
                "max_batches_shared",
                "max_batches_partitioned",
                "max_batches_partitioned_walk",
                "repeats",
                "repeats_partitioned",
            )
        }
        cfg["folder"] = str(folder)
        raw, spawn_s = [], {}
        out = pathlib.Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for k, world in enumerate(worlds):
            cfg["deadline"] = None
            if args.time_budget:
                # an equal share of what is left, less the start and the record's writing
                left = args.time_budget - (time.perf_counter() - t0)
                cfg["deadline"] = time.time() + left / (len(worlds) - k) - 15
            log(f"{world} process(es): started")
            ranks, spawn_s[world] = run_world(world, cfg, out)
            summarise(world, ranks, cfg, raw)
            log(f"{world} process(es): {spawn_s[world]:.0f} s")
            # written after every world size: a run stopped later keeps what it measured
            record, rows = write(args, argv, cfg, header, name, spawn_s, raw, t0)
    finally:
        if temporary or not args.keep_graph:
            remove_shared(folder)
    table(rows)
    print(f"total {record['total_s']:.0f} s", flush=True)
    if not all(r.get("identical_to_single", True) for r in rows):
        raise SystemExit("some placement's samples differ from the single-process run's")
    return record


def write(args, argv, cfg, header, name, spawn_s, raw, t0):
    """The record of the world sizes run so far, to JSON and PNG; ``(record, rows)``."""
    rows = copy.deepcopy(raw)
    compare(rows)
    base = efficiency(rows)
    meta = header["meta"]
    record = {
        **{k: v for k, v in cfg.items() if k not in ("folder", "deadline")},
        "time_budget": args.time_budget,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": name,
        "torch": torch.__version__,
        "gsample": gs.__version__,
        "python": platform.python_version(),
        "commit": git_commit(ROOT),
        "command": " ".join(
            ["python", "benchmarks/multi_gpu.py"] + (sys.argv[1:] if argv is None else list(argv))
        ),
        "graph": {
            "spec": args.graph,
            "nodes": header["num_nodes"],
            "edges": meta["num_edges"],
            "seeds": args.seeds,
            "seed_source": meta["seed_source"],
            "build_s": meta.get("build_s"),
            "share_s": meta.get("share_s"),
        },
        "nccl_nvls_enable": os.environ.get("NCCL_NVLS_ENABLE"),
        "world_sizes": sorted(spawn_s),
        "spawn_s": spawn_s,
        "one_gpu_device_best": base,
        "targets": {
            "replicated, super-batched, 4 GPUs": "scaling_efficiency >= 0.85",
            "partitioned, 4 GPUs": "scaling_efficiency >= 0.70",
        },
        "results": rows,
        "total_s": time.perf_counter() - t0,
    }
    out = pathlib.Path(args.out)
    tag = args.graph.replace(":", "x").replace("rmatx", "rmat")
    path = out / f"multi_gpu{'_quick' if args.quick else ''}_{tag}_{args.device}.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    log(f"wrote {path}")
    plot(
        path.with_suffix(".png"),
        rows,
        f"{args.graph}: {header['num_nodes']:,} nodes, {meta['num_edges']:,} edges, "
        f"{args.seeds:,} seeds; {name}",
    )
    return record, rows


def table(rows):
    print(
        f"{'n':>2s} {'placement':12s} {'workload':10s} {'mode':18s} {'epoch s':>9s} "
        f"{'M edges/s':>10s} {'eff.':>6s} best same"
    )
    for r in rows:
        if "error" in r:
            print(
                f"{r['world']:2d} {r['placement']:12s} {r.get('workload', ''):10s} "
                f"{r.get('mode', ''):18s} error: {r['error'][:70]}"
            )
            continue
        eff = r.get("scaling_efficiency")
        print(
            f"{r['world']:2d} {r['placement']:12s} {r['workload']:10s} {r['mode']:18s} "
            f"{r['epoch_s']:9.4f} {r['edges_per_s'] / 1e6:10.1f} "
            f"{'' if eff is None else f'{eff:6.0%}':>6s} {'*' if r['best'] else ' ':>4s} "
            f"{r['identical_to_single']}"
        )


if __name__ == "__main__":
    main()
