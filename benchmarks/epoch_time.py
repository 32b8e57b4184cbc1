"""Epoch time of eager samplers on a SNAP graph or a generated one (DESIGN §8, reduced size).

Median of ``--repeats`` epochs after one warm-up epoch; writes JSON with device, date and the
command to ``benchmarks/results/``. With ``--super-batch N`` (or ``auto``) it times instead the
compiled samplers one mini-batch at a time and ``N`` mini-batches per run
(``gs.DataLoader(..., super_batch=N)``), epochs of the two interleaved, and writes
``epoch_time_super_batch_<graph>_<device>.json``.

    python benchmarks/epoch_time.py --snap ../shared/data/web-NotreDame.txt.gz --seeds 20480
    python benchmarks/epoch_time.py --device cuda
    python benchmarks/epoch_time.py --snap ../shared/data/web-NotreDame.txt.gz --super-batch 8
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


def epoch(A, sampler, seeds, batch_size, **options):
    """``(seconds, sampled edges)`` of one epoch, the same mini-batches every time
    (``options``: more ``gs.DataLoader`` arguments, e.g. ``super_batch``)."""
    return loader_epoch(gs.DataLoader(A, sampler, seeds, batch_size=batch_size, seed=0,
                                      **options))


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


def write_record(script, args, argv, device, A, name=None, **fields):
    """Write ``<--out>/<name or script>_<graph>_<device type>.json``: when, where, the command,
    the graph and mini-batch options, then ``fields``; returns its path."""
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
    path = out / f"{name or script}_{tag}_{device.type}.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {path}")
    return path


# ----------------------------------------------------------------------------- eager epochs
def _super_batch(value):
    return value if value == "auto" else int(value)


#: key -> (name, sampler function, its arguments, whether it samples the normalised graph)
WORKLOADS = {"graphsage": ("GraphSAGE [25, 10]", graphsage, {"fanouts": (25, 10)}, False),
             "ladies": ("LADIES 3 x 4000", ladies, {"layers": (4000,) * 3}, True)}


def main(argv=None):
    p = benchmark_parser(__doc__)
    p.add_argument("--super-batch", type=_super_batch, default=None,
                   help="time the compiled samplers one by one and N mini-batches per run "
                        "(an int, or 'auto')")
    args = p.parse_args(argv)
    if args.super_batch is not None:
        return super_batch_main(args, argv)
    device, A, seeds = load(args)
    results = []
    for key in args.workloads:
        name, fn, kwargs, normalized = WORKLOADS[key]
        graph, sampler = normalize(A) if normalized else A, functools.partial(fn, **kwargs)
        epoch(graph, sampler, seeds, args.batch_size)                      # warm-up
        runs = [epoch(graph, sampler, seeds, args.batch_size) for _ in range(args.repeats)]
        t = statistics.median(r[0] for r in runs)
        edges = statistics.median(r[1] for r in runs)
        results.append({"workload": name, "epoch_s_median": t, "epoch_s_all": [r[0] for r in runs],
                        "sampled_edges": edges, "sampled_edges_per_s": edges / t})
        print(f"{name:20s} epoch {t:7.3f} s (median of {args.repeats}), "
              f"{edges:,.0f} edges, {edges / t:,.0f} edges/s")
    write_record("epoch_time", args, argv, device, A, mode="eager, torch backend", results=results)


# ----------------------------------------------------------------------------- super-batching
def super_batch_main(args, argv):
    """Compiled samplers, one mini-batch per run vs ``--super-batch`` per run (same batches)."""
    device, A, seeds = load(args)
    modes = {"one by one": {}, f"super_batch={args.super_batch}": {"super_batch": args.super_batch}}
    results = []
    for key in args.workloads:
        name, fn, kwargs, normalized = WORKLOADS[key]
        graph = normalize(A) if normalized else A
        sampler = functools.partial(gs.compile(fn), **kwargs)
        runs = {mode: [] for mode in modes}
        for r in range(args.repeats + 1):           # interleaved, so load shifts hit both
            for mode, options in modes.items():
                t, edges = epoch(graph, sampler, seeds, args.batch_size, **options)
                if r:                                  # the first round warms up
                    runs[mode].append((t, edges))
        for mode, rs in runs.items():
            t, edges = statistics.median(x[0] for x in rs), statistics.median(x[1] for x in rs)
            results.append({"workload": name, "mode": mode, "epoch_s_median": t,
                            "epoch_s_all": [x[0] for x in rs], "sampled_edges": edges,
                            "sampled_edges_per_s": edges / t})
        base, sb = (results[-2]["epoch_s_median"], results[-1]["epoch_s_median"])
        results[-1]["speedup"] = base / sb
        for res in results[-2:]:
            print(f"{name:20s} {res['mode']:18s} epoch {res['epoch_s_median']:7.3f} s (median of "
                  f"{args.repeats}), {res['sampled_edges']:,.0f} edges")
        print(f"{name:20s} super-batching speed-up x{base / sb:.2f}")
    write_record("epoch_time", args, argv, device, A, name="epoch_time_super_batch",
                 mode="compiled, torch backend; one by one vs super-batched", results=results)


if __name__ == "__main__":
    main()
