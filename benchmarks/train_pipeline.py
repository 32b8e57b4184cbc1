"""Per-epoch training time with and without the pipelined loader (``gs.DataLoader(pipeline=...)``).

A 2-layer GraphSAGE (PyG ``SAGEConv``) trains on mini-batches of a compiled gsample sampler,
features and labels gathered by the loader, on a planted-partition graph
(``gs.datasets.planted_partition``). Epochs of the two modes are interleaved (one warm-up
epoch each first) and the median of ``--repeats`` is reported, with each mode's summed
sampling, gathering and training time per epoch. Both modes train on the same batches with
the same dropout masks: their first epoch's mean losses are reported next to each other
(equal on the CPU). The baseline is a third mode, interleaved with the two: the same model (a
copy, fresh Adam) on ``--baseline-batches`` mini-batches (default: a whole epoch's) sampled and
gathered before the first epoch, one pass each round, the median per mini-batch times the
epoch's: the model's own time, which the loader's epochs are set against (timed beside them,
it moves with the GPU's clocks and the host's load as they do). Training steps queue without
a host sync (their time: CUDA events). JSON with device, date and the
command goes to ``benchmarks/results/train_pipeline_<device>.json`` (``_uva`` appended with
``--host-features``).

Each stage (graph generation, split, loaders, every epoch, and every tenth of an epoch's
mini-batches) prints a line with the seconds since start, flushed, so that a run killed by a
time limit shows where it was.

    python benchmarks/train_pipeline.py                                   # CPU, small
    python benchmarks/train_pipeline.py --device cuda --num-nodes 2000000 --features 128 \\
        --train-nodes 100000
    python benchmarks/train_pipeline.py --device cuda --num-nodes 2000000 --features 128 \\
        --train-nodes 100000 --host-features --feature-cache 1000000000   # host features (UVA)

At 2,000,000 nodes the graph (24 M edges) and the features (1 GB at 128 floats) are generated
on the CPU before the clock starts. ``--train-nodes 100000`` keeps 196 mini-batches of 512 per
epoch, 8 epochs in all (a warm-up and ``--repeats 3`` in each of the two modes); the whole 60 %
training split would be about 2,350 mini-batches an epoch, about 19,000 in all, twelve times
the work for the same comparison.
"""

import argparse
import datetime
import functools
import itertools
import json
import pathlib
import platform
import statistics
import sys
import time

# ruff: noqa: E402  the imports below come after _T0 so that the progress lines count their time
_T0 = time.perf_counter()  # progress lines count from here (imports of torch, PyG)

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))

from graphsage import graphsage
from ladies import ladies, normalize
from train_common import ModelOnly, Net, split, train_epoch

import gsample as gs

ROOT = pathlib.Path(__file__).resolve().parents[1]


def log(message):
    """Print ``message`` after the seconds since the script started, flushed at once."""
    print(f"[{time.perf_counter() - _T0:7.1f} s] {message}", flush=True)


#: ``--pipeline`` choices: the pipelined mode's ``gs.DataLoader(pipeline=...)``
PIPELINES = {"auto": "auto", "threads": True, "stream": "stream", "off": False}


def mode_name(pipeline) -> str:
    """The ``--pipeline`` name of a loader's resolved ``pipeline`` (never ``"auto"``)."""
    return next(k for k, v in PIPELINES.items() if v == pipeline and k != "auto")


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-nodes", type=int, default=20_000)
    p.add_argument("--avg-degree", type=float, default=12.0)
    p.add_argument("--features", type=int, default=32)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--sampler", choices=["graphsage", "ladies"], default="graphsage")
    p.add_argument("--fanouts", type=int, nargs="+", default=[10, 5])
    p.add_argument("--layers", type=int, nargs="+", default=[2048, 2048])
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument(
        "--train-nodes",
        type=int,
        default=None,
        help="seeds per epoch (default: the 60 %% training split)",
    )
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument(
        "--baseline-batches",
        type=int,
        default=0,
        help="mini-batches the model-only time is on (0: a whole epoch's)",
    )
    p.add_argument("--device", default="cpu")
    p.add_argument(
        "--host-features",
        action="store_true",
        help="keep features and labels on the CPU (a GPU reads them through UVA)",
    )
    p.add_argument("--feature-cache", type=int, default=0, help="bytes of GPU feature cache")
    p.add_argument("--super-batch", default=None, help="an int or 'auto'")
    p.add_argument(
        "--pipeline",
        choices=list(PIPELINES),
        default="auto",
        help="the pipelined mode's gs.DataLoader(pipeline=...): auto (a side CUDA stream where "
        "the graph and tables are on a GPU, else threads), threads, or stream",
    )
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    return p.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    device = torch.device(args.device)
    log(
        f"generating the graph: planted_partition({args.num_nodes} nodes, avg degree "
        f"{args.avg_degree}, {args.features} features) on the CPU, then to {device}"
    )
    A, x, y = gs.datasets.planted_partition(
        args.num_nodes, avg_degree=args.avg_degree, num_features=args.features, device=device
    )
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    log(f"graph: {A.num_nodes} nodes, {A.num_edges} edges; features {tuple(x.shape)}")
    if args.host_features:
        x, y = x.cpu(), y.cpu()
    train_ids, _, _ = split(y)
    train_ids = train_ids.to(device)[: args.train_nodes]
    log(
        f"split: {train_ids.numel()} training seeds, "
        f"{-(-train_ids.numel() // args.batch_size)} mini-batches of {args.batch_size}"
    )
    backend = "cuda" if device.type == "cuda" else "torch"  # the kernels on a GPU
    if args.sampler == "ladies":
        A = normalize(A)
        sampler = functools.partial(gs.compile(ladies, backend=backend), layers=tuple(args.layers))
        conv = "graph"
    else:
        sampler = functools.partial(
            gs.compile(graphsage, backend=backend), fanouts=tuple(args.fanouts)
        )
        conv = "sage"
    super_batch = (
        None
        if args.super_batch is None
        else (args.super_batch if args.super_batch == "auto" else int(args.super_batch))
    )

    def make_loader(pipeline):
        return gs.DataLoader(
            A,
            sampler,
            train_ids,
            args.batch_size,
            seed=0,
            features=x,
            labels=y,
            feature_cache=args.feature_cache,
            pipeline=pipeline,
            super_batch=super_batch,
        )

    modes = {}
    on_mode = PIPELINES[args.pipeline]
    for pipeline in (on_mode, False):
        torch.manual_seed(0)
        model = Net(x.shape[1], args.hidden, int(y.max()) + 1, conv=conv).to(device)
        loader = make_loader(pipeline)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        modes[pipeline] = {"model": model, "loader": loader, "optimizer": optimizer, "epochs": []}
    log(
        f"models and loaders made ({args.sampler}, feature store "
        f"{modes[on_mode]['loader'].feature_store.mode}; pipelined: "
        f"{mode_name(modes[on_mode]['loader'].pipeline)})"
    )
    count = args.baseline_batches or len(modes[False]["loader"])
    log(f"baseline: the model on {count} pre-sampled, pre-gathered mini-batches")
    # a loader of its own: the modes' loaders draw their epochs in step
    ready = list(itertools.islice(iter(make_loader(False)), count))
    baseline = ModelOnly(modes[False]["model"], 0.01, ready, check=False)
    per_batch_runs = []
    first_loss = {}
    for r in range(args.repeats + 1):  # epoch 0: warm-up (compiles, captures)
        for pipeline, m in modes.items():
            name = "pipelined" if pipeline else "one stage at a time"
            log(f"{name}, epoch {r}{' (warm-up)' if r == 0 else ''}: started")
            torch.manual_seed(r)  # the same dropout masks in both modes
            s = train_epoch(
                m["model"],
                m["loader"],
                m["optimizer"],
                log=lambda msg, name=name, r=r: log(f"{name}, epoch {r}: {msg}"),
                log_every=max(1, -(-len(m["loader"]) // 10)),
                check=False,  # the samplers' frontiers are all_nodes(): columns first
            )
            if r == 0:
                first_loss[pipeline] = s["loss"]
            else:
                m["epochs"].append(s)
            log(
                f"{name:>20}, epoch {r}: "
                f"{s['epoch']:.3f} s (sampling {s['sample']:.3f}, gathering "
                f"{s['gather']:.3f}, training {s['train']:.3f}), loss {s['loss']:.4f}"
            )
        t = baseline()
        if r > 0:
            per_batch_runs.append(t)
        log(f"{'model only':>20}, round {r}: {t * len(modes[on_mode]['loader']):.3f} s an epoch")
    per_batch = statistics.median(per_batch_runs)
    report = {}
    for pipeline, m in modes.items():
        name = "pipelined" if pipeline else "not pipelined"
        med = {
            k: statistics.median(e[k] for e in m["epochs"])
            for k in ("epoch", "sample", "gather", "train")
        }
        store = m["loader"].feature_store
        med["feature_mode"] = store.mode
        med["cache_hit_rate"] = store.hit_rate if store.cache is not None else None
        med["first_epoch_loss"] = first_loss[pipeline]
        med["epochs"] = [e["epoch"] for e in m["epochs"]]
        report[name] = med
    on, off = report["pipelined"]["epoch"], report["not pipelined"]["epoch"]
    n = max(1, len(modes[on_mode]["loader"]))
    model_epoch = per_batch * len(modes[on_mode]["loader"])
    print(
        f"median epoch: pipelined {on:.3f} s, not pipelined {off:.3f} s ({off / on:.2f}x); "
        f"first-epoch loss {first_loss[on_mode]:.6f} / {first_loss[False]:.6f}; "
        f"{len(modes[on_mode]['loader'])} mini-batches per epoch",
        flush=True,
    )
    print(
        f"model only ({len(ready)} pre-sampled, pre-gathered mini-batches, median of "
        f"{len(per_batch_runs)} interleaved passes, scaled): "
        f"{model_epoch:.3f} s; epoch / model only: pipelined {on / model_epoch:.3f}, not "
        f"pipelined {off / model_epoch:.3f}; "
        f"gathering {report['pipelined']['gather']:.3f} s pipelined (its stage's wall time, "
        f"waits for the device included), {report['not pipelined']['gather']:.3f} s stage by "
        f"stage ({1e3 * report['not pipelined']['gather'] / n:.3f} ms a mini-batch: host time)",
        flush=True,
    )
    if report["pipelined"]["cache_hit_rate"] is not None:
        print(f"feature cache hit rate: {report['pipelined']['cache_hit_rate']:.3f}", flush=True)
    dev = (
        torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else f"{platform.machine()} CPU, {torch.get_num_threads()} threads"
    )
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"train_pipeline_{device.type}{'_uva' if args.host_features else ''}.json"
    path.write_text(
        json.dumps(
            {
                "device": dev,
                "date": datetime.date.today().isoformat(),
                "command": " ".join(sys.argv),
                "args": vars(args),
                "graph": {"nodes": A.num_nodes, "edges": A.num_edges},
                "pipeline": mode_name(modes[on_mode]["loader"].pipeline),
                "speedup": off / on,
                "model_only": {
                    "per_batch": per_batch,
                    "per_batch_runs": per_batch_runs,
                    "batches": len(ready),
                    "epoch": model_epoch,
                },
                "pipelined_over_model_only": on / model_epoch,
                "not_pipelined_over_model_only": off / model_epoch,
                "results": report,
            },
            indent=1,
        )
    )
    log(f"wrote {path}")
    return report


if __name__ == "__main__":
    main()
