"""Epoch time of eager samplers on a SNAP graph or a generated one (DESIGN §8, reduced size).

Median of ``--repeats`` epochs after one warm-up epoch; writes JSON with device, date and the
command to ``benchmarks/results/``.

    python benchmarks/epoch_time.py --snap ../shared/data/web-NotreDame.txt.gz --seeds 20480
    python benchmarks/epoch_time.py --device cuda
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

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

import gsample as gs  # noqa: E402
from graphsage import graphsage  # noqa: E402
from ladies import ladies, normalize  # noqa: E402


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{platform.processor() or platform.machine()} CPU, {torch.get_num_threads()} threads"


def epoch(A, sampler, seeds, batch_size):
    edges = 0
    start = time.perf_counter()
    for batch in gs.DataLoader(A, sampler, seeds, batch_size=batch_size, seed=0):
        edges += sum(block.num_edges for block in batch.out)
    if A.device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start, edges


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--snap", help="SNAP edge list (default: an R-MAT graph)")
    p.add_argument("--num-nodes", type=int, default=100_000)
    p.add_argument("--num-edges", type=int, default=2_000_000)
    p.add_argument("--seeds", type=int, default=20480)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--device", default="cpu")
    p.add_argument("--workloads", nargs="+", default=["graphsage", "ladies"])
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = p.parse_args(argv)

    device = torch.device(args.device)
    A = (gs.datasets.read_snap(args.snap) if args.snap else
         gs.datasets.rmat(args.num_nodes, args.num_edges, seed=0)).to(device)
    seeds = torch.randperm(A.num_nodes, generator=torch.Generator().manual_seed(0))[:args.seeds]
    seeds = seeds.to(device)
    workloads = {
        "graphsage": ("GraphSAGE [25, 10]", A, functools.partial(graphsage, fanouts=(25, 10))),
        "ladies": ("LADIES 3 x 4000", None, functools.partial(ladies, layers=(4000,) * 3)),
    }
    results = []
    for key in args.workloads:
        name, graph, sampler = workloads[key]
        graph = normalize(A) if graph is None else graph
        epoch(graph, sampler, seeds, args.batch_size)                      # warm-up
        runs = [epoch(graph, sampler, seeds, args.batch_size) for _ in range(args.repeats)]
        t = statistics.median(r[0] for r in runs)
        edges = statistics.median(r[1] for r in runs)
        results.append({"workload": name, "epoch_s_median": t, "epoch_s_all": [r[0] for r in runs],
                        "sampled_edges": edges, "sampled_edges_per_s": edges / t})
        print(f"{name:20s} epoch {t:7.3f} s (median of {args.repeats}), "
              f"{edges:,.0f} edges, {edges / t:,.0f} edges/s")
    record = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": device_name(device),
        "torch": torch.__version__,
        "command": " ".join(["python", "benchmarks/epoch_time.py"] + (argv or sys.argv[1:])),
        "graph": args.snap or f"rmat({args.num_nodes}, {args.num_edges}, seed=0)",
        "num_nodes": A.num_nodes, "num_edges": A.num_edges,
        "seeds": args.seeds, "batch_size": args.batch_size, "mode": "eager, torch backend",
        "results": results,
    }
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = pathlib.Path(args.snap).name.split(".")[0] if args.snap else "rmat"
    path = out / f"epoch_time_{tag}_{device.type}.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
