"""Epoch time of eager samplers on a SNAP graph or a generated one (DESIGN §8, reduced size).

Median of ``--repeats`` epochs after one warm-up epoch; writes JSON with device, date and the
command to ``benchmarks/results/``.

    python benchmarks/epoch_time.py --snap ../shared/data/web-NotreDame.txt.gz --seeds 20480
    python benchmarks/epoch_time.py --device cuda
"""
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

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

import gsample as gs  # noqa: E402
from common import graph_parser, load_graph, seed_nodes  # noqa: E402
from common import epoch as loader_epoch  # noqa: E402
from graphsage import graphsage  # noqa: E402
from ladies import ladies, normalize  # noqa: E402


# ----------------------------------------------------------------------------- shared set-up
# (benchmarks/compile_time.py imports these too)
def benchmark_parser(description, repeats_help=None):
    """The options of the benchmarks: graph, seeds, mini-batch, repeats, device, workloads, out."""
    p = graph_parser(description, num_edges=2_000_000, batches=None)
    p.add_argument("--seeds", type=int, default=20480)
    p.add_argument("--repeats", type=int, default=5, help=repeats_help)
    p.add_argument("--device", default="cpu")
    p.add_argument("--workloads", nargs="+", default=["graphsage", "ladies"])
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    return p


def load(args):
    """``(device, graph on it, the first --seeds of a fixed permutation on it)``."""
    device = torch.device(args.device)
    A = load_graph(args).to(device)
    return device, A, seed_nodes(A.num_nodes, args.seeds).to(device)


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{platform.processor() or platform.machine()} CPU, {torch.get_num_threads()} threads"


def sync(device):
    """Wait for the device's queued work (a no-op on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn, device):
    """``(seconds, fn())``, with the device synchronised before and after."""
    sync(device)
    start = time.perf_counter()
    out = fn()
    sync(device)
    return time.perf_counter() - start, out


def epoch(A, sampler, seeds, batch_size):
    """``(seconds, sampled edges)`` of one epoch, the same mini-batches every time."""
    return loader_epoch(gs.DataLoader(A, sampler, seeds, batch_size=batch_size, seed=0))


def as_typed(arg):
    """``arg``, with a path under the repository's parent folder written relative to the
    repository root (``../shared/data/...``, not ``/work/shared/data/...``), as it would
    be typed to run the recorded command from the root."""
    key, eq, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
    if not value or not os.path.exists(value):
        return arg
    path = os.path.abspath(value)
    if os.path.commonpath([path, str(ROOT.parent)]) != str(ROOT.parent):
        return arg
    return key + eq + os.path.relpath(path, ROOT)


def write_record(script, args, argv, device, A, **fields):
    """Write ``<--out>/<script>_<graph>_<device type>.json``: when, where, the command, the
    graph and mini-batch options, then ``fields``; returns its path."""
    argv = sys.argv[1:] if argv is None else argv
    record = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": device_name(device),
        "torch": torch.__version__,
        "command": " ".join(["python", f"benchmarks/{script}.py"] + [as_typed(a) for a in argv]),
        "graph": as_typed(args.snap) if args.snap else
                 f"rmat({args.num_nodes}, {args.num_edges}, seed=0)",
        "num_nodes": A.num_nodes, "num_edges": A.num_edges,
        "seeds": args.seeds, "batch_size": args.batch_size,
        **fields,
    }
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = pathlib.Path(args.snap).name.split(".")[0] if args.snap else "rmat"
    path = out / f"{script}_{tag}_{device.type}.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {path}")
    return path


# ----------------------------------------------------------------------------- eager epochs
def main(argv=None):
    args = benchmark_parser(__doc__).parse_args(argv)
    device, A, seeds = load(args)
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
    write_record("epoch_time", args, argv, device, A, mode="eager, torch backend", results=results)


if __name__ == "__main__":
    main()
