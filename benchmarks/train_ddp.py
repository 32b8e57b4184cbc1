"""Data-parallel GraphSAGE training over several GPUs: the epoch split into sampling,
gathering, exchange and model, for 1, 2, 4, ... processes.

The model, graph and data of ``benchmarks/train_scale.py``: a 3-layer PyG ``SAGEConv`` model
(hidden 256, ``examples/train_common.py``'s ``Net``), GraphSAGE [15, 10, 5] mini-batches of
1024 seeds, 128 float32 features per node and planted labels (``train_scale.hashed_labels``:
a hash of the node id; features its class's centroid plus noise). One process per GPU
(``torch.multiprocessing.spawn``, NCCL, ``NCCL_NVLS_ENABLE=0``), or per CPU core with gloo
(``--device cpu``); the 1-GPU figure is this script with world size 1.

- **the graph** (``--graph papers-like`` by default, ``products-like``, ``rmat:N:E``) is built
  once by this process and shared with the ranks (``benchmarks/multi_gpu.py``'s
  ``build_shared``; ``--graph-dir`` reuses a graph written there), and placed by
  ``gs.distributed.place(A, --placement)`` (``replicated`` by default);
- **the features are partitioned**: rank ``r`` makes and keeps only the rows of its node
  range (``gs.distributed.even_bounds``), the same rows whatever the world size (each chunk of
  rows drawn from a generator keyed by the chunk); a mini-batch's rows
  (``n_id``, ``gsample.loader.features.batch_nodes``) are read with
  ``gs.distributed.PartitionedFeatures``: the rank's own rows gathered locally, the others
  fetched from their owners in one all-to-all exchange;
- **the seeds are split** over the ranks (``gs.DataLoader(..., distributed=True)``: each rank
  its share of every epoch's mini-batches);
- **the model** is wrapped in ``DistributedDataParallel`` (gradients all-reduced in backward).

Each step runs its stages in turn, the device synchronised between them, so the epoch splits
into (seconds, the slowest rank's):

- ``sample``: the loader's next mini-batch;
- ``gather``: ``n_id`` and the rank's own feature rows (no communication);
- ``exchange``: the rows other ranks own (the all-to-alls);
- ``model``: the blocks' local ids (``block_layers``, as ``train_scale.py`` counts them),
  forward, backward (with DDP's all-reduce) and Adam.

``--max-batches`` caps the mini-batches of an epoch (all ranks together: each rank runs its
share); the epoch time is over those. The median epoch after the first (which compiles and
warms up) is set against the 1-process run's: ``epoch_ratio = epoch(n) / epoch(1)`` (the
target: at most 0.3 at 4 GPUs). Loss (the ranks' mean) per epoch, first and last tenth, and
held-out accuracy (``--eval-nodes`` nodes of the same seed permutation, sampled like training).

JSON with device, date and command: ``benchmarks/results/train_ddp_<graph>_<device>.json``.

    python benchmarks/train_ddp.py --world-sizes 1 2                     # papers-like, GPUs
    python benchmarks/train_ddp.py --device cpu --quick                  # 1 and 2 gloo ranks
"""

# ruff: noqa: E402  the benchmarks' and examples' folders go on sys.path before their imports
import argparse
import datetime
import functools
import json
import os
import pathlib
import platform
import shutil
import statistics
import sys
import tempfile
import time
from types import SimpleNamespace

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

_HERE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(_HERE), str(_HERE.parent), str(_HERE.parent / "examples")]

from graphsage import graphsage
from multi_gpu import (
    build_shared,
    expected_bytes,
    graph_folder,
    log,
    positive,
    rank_worker,
    setup,
)
from train_common import Net, block_layers
from train_scale import hashed_labels

import gsample as gs
from gsample.bench.report import git_commit
from gsample.distributed.shared import attach_graph, remove_shared
from gsample.loader.features import batch_nodes

ROOT = _HERE.parent
STAGES = ("sample", "gather", "exchange", "model")
#: rows per chunk of the feature table: the unit a generator is keyed by (any rank makes any
#: chunk alone, so a row is the same whichever rank makes it)
CHUNK = 1 << 20


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--graph", default=None, help="papers-like (default), products-like, rmat:N:E")
    p.add_argument("--world-sizes", type=int, nargs="+", default=None)
    p.add_argument(
        "--placement", default="replicated", choices=("replicated", "shared", "partitioned")
    )
    p.add_argument("--features", type=int, default=128)
    p.add_argument("--classes", type=int, default=32)
    p.add_argument("--signal", type=float, default=0.3, help="class centroids' scale")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--fanouts", type=positive, nargs="+", default=[15, 10, 5])
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--lr", type=float, default=0.003)
    p.add_argument(
        "--train-nodes", type=int, default=None, help="default: the anchor graph's seeds"
    )
    p.add_argument("--eval-nodes", type=int, default=16_384)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument(
        "--max-batches", type=int, default=256, help="mini-batches an epoch, all ranks (0: all)"
    )
    p.add_argument("--super-batch", type=int, default=None)
    p.add_argument("--graph-dir", default=None, help="as benchmarks/multi_gpu.py's")
    p.add_argument("--keep-graph", action="store_true")
    p.add_argument("--quick", action="store_true", help="a tiny graph and model (a smoke run)")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = p.parse_args(argv)
    if args.quick:
        args.graph = args.graph or "rmat:5000:50000"
        args.features, args.hidden, args.batch_size = 32, 32, 64
        args.max_batches, args.eval_nodes = min(args.max_batches, 16), 256
        args.train_nodes = args.train_nodes or 2048
        args.signal = 1.0
    args.graph = args.graph or "papers-like"
    return args


def planted_rows(lo, hi, num_classes, num_features, signal, device, seed=0):
    """Rows ``lo .. hi - 1`` of the planted feature table: node ``v``'s class centroid
    (``signal * N(0, I)``, one per class) plus ``N(0, I)`` noise drawn by chunk ``v // CHUNK``'s
    own generator, so that every rank making a row makes the same one.

    Returns
    -------
    Tensor, shape (hi - lo, num_features), float32 on ``device``
    """
    g = torch.Generator(device=device).manual_seed(seed)
    centroids = signal * torch.randn(num_classes, num_features, generator=g, device=device)
    out = torch.empty(hi - lo, num_features, device=device)
    for c in range(lo // CHUNK, -(-hi // CHUNK)):
        a, b = c * CHUNK, (c + 1) * CHUNK
        g.manual_seed(seed * 1_000_003 + c + 1)
        noise = torch.randn(CHUNK, num_features, generator=g, device=device)
        s, e = max(a, lo), min(b, hi)
        ids = torch.arange(s, e, device=device)
        out[s - lo : e - lo] = noise[s - a : e - a].add_(centroids[hashed_labels(ids, num_classes)])
    return out


# ----------------------------------------------------------------------------- one rank
def _worker(rank, world, url, cfg, out_dir):
    rank_worker(rank, world, url, cfg, out_dir, _run)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _run(rank, world, device, cfg):
    t0 = time.perf_counter()
    A = attach_graph(cfg["folder"])
    G = gs.distributed.place(A, cfg["placement"], device=device)
    n = A.num_nodes
    del A
    order = gs.datasets.uniform_seeds(n, min(n, cfg["train"] + cfg["eval"]), 0, device)
    train, held_out = order[: cfg["train"]], order[cfg["train"] :]
    bounds = gs.distributed.even_bounds(n, world)
    local = planted_rows(
        bounds[rank], bounds[rank + 1], cfg["classes"], cfg["features"], cfg["signal"], device
    )
    feats = gs.distributed.PartitionedFeatures(local, bounds)
    sync(device)
    setup_s = time.perf_counter() - t0
    if rank == 0:
        log(
            f"  {world} rank(s): graph placed, {local.shape[0]} feature rows a rank "
            f"({setup_s:.1f} s)"
        )
    backend = "cuda" if device.type == "cuda" else "torch"
    sampler = functools.partial(
        gs.compile(graphsage, backend=backend), fanouts=tuple(cfg["fanouts"])
    )
    torch.manual_seed(0)  # the same initial weights on every rank (DDP broadcasts rank 0's)
    model = Net(cfg["features"], cfg["hidden"], cfg["classes"], num_layers=len(cfg["fanouts"]))
    model = model.to(device)
    ddp = DistributedDataParallel(
        model, device_ids=[device.index] if device.type == "cuda" else None
    )
    optimizer = torch.optim.Adam(ddp.parameters(), lr=cfg["lr"])

    def loader(seeds, shuffle=True):
        return gs.DataLoader(
            G,
            sampler,
            seeds,
            cfg["batch_size"],
            shuffle=shuffle,
            seed=0,
            distributed=True,
            super_batch=cfg["super_batch"],
        )

    train_loader, eval_loader = loader(train), loader(held_out, shuffle=False)
    limit = len(train_loader)
    if cfg["max_batches"]:
        limit = min(limit, -(-cfg["max_batches"] // world))
    epochs = []
    acc0 = accuracy(ddp.module, eval_loader, feats, cfg, device)
    for e in range(cfg["epochs"]):
        s = train_epoch(ddp, optimizer, train_loader, feats, cfg, device, limit)
        s["held_out_accuracy"] = accuracy(ddp.module, eval_loader, feats, cfg, device)
        epochs.append(s)
        if rank == 0:
            log(
                f"  {world} rank(s) epoch {e}: {s['epoch']:.3f} s "
                + ", ".join(f"{k} {s[k]:.3f}" for k in STAGES)
                + f"; loss {s['loss_first_tenth']:.4f} -> {s['loss_last_tenth']:.4f}; held-out "
                f"accuracy {s['held_out_accuracy']:.4f}"
            )
    res = {
        "setup_s": setup_s,
        "batches_per_rank": limit,
        "feature_rows": local.shape[0],
        "held_out_accuracy_before": acc0,
        "epochs": epochs,
    }
    if device.type == "cuda":
        res["peak_memory_bytes"] = torch.cuda.max_memory_allocated(device)
    return res


def _read(batch, feats, cfg, device, times=None):
    """The mini-batch's input rows: gathered here, then exchanged (timed into ``times``)."""
    n_id = batch_nodes(batch.out, batch.seeds)
    req = feats.request(n_id)
    if times is not None:
        sync(device)
        times["gather"] += time.perf_counter() - times["_at"]
        times["_at"] = time.perf_counter()
    x = feats.exchange(req)
    if times is not None:
        sync(device)
        times["exchange"] += time.perf_counter() - times["_at"]
        times["_at"] = time.perf_counter()
        times["remote_rows"] += req.remote.numel()
        times["rows"] += n_id.numel()
    return SimpleNamespace(
        x=x,
        y=hashed_labels(batch.seeds, cfg["classes"]),
        seeds=batch.seeds,
        n_id=n_id,
        out=batch.out,
    )


def train_epoch(ddp, optimizer, loader, feats, cfg, device, limit):
    """One epoch of ``limit`` mini-batches a rank, its stages timed apart (the slowest
    rank's seconds), and the ranks' mean loss."""
    ddp.train()
    times = dict.fromkeys(STAGES, 0.0) | {"remote_rows": 0, "rows": 0}
    losses = []
    it = iter(loader)
    sync(device)
    dist.barrier()
    start = times["_at"] = time.perf_counter()
    try:
        for _ in range(limit):
            batch = next(it)
            sync(device)
            times["sample"] += time.perf_counter() - times["_at"]
            times["_at"] = time.perf_counter()
            b = _read(batch, feats, cfg, device, times)
            B = b.seeds.numel()
            optimizer.zero_grad()
            out = ddp(b.x, block_layers(b, check=False))
            loss = F.cross_entropy(out[:B], b.y)
            loss.backward()  # DDP all-reduces the gradients here
            optimizer.step()
            losses.append(loss.detach())
            sync(device)
            times["model"] += time.perf_counter() - times["_at"]
            times["_at"] = time.perf_counter()
    finally:
        it.close()
    dist.barrier()
    epoch = time.perf_counter() - start
    loss = torch.stack(losses).float()
    dist.all_reduce(loss)  # the ranks' mean loss, step by step
    loss = (loss / dist.get_world_size()).cpu()
    tenth = max(1, loss.numel() // 10)
    stage = torch.tensor([epoch] + [times[k] for k in STAGES], dtype=torch.float64, device=device)
    dist.all_reduce(stage, op=dist.ReduceOp.MAX)  # the slowest rank's
    rows = torch.tensor([times["remote_rows"], times["rows"]], device=device)
    dist.all_reduce(rows)
    stage = stage.tolist()
    return {
        "batches_per_rank": loss.numel(),
        "epoch": stage[0],
        **dict(zip(STAGES, stage[1:])),
        "loss": float(loss.mean()),
        "loss_first_tenth": float(loss[:tenth].mean()),
        "loss_last_tenth": float(loss[-tenth:].mean()),
        "remote_row_share": float(rows[0]) / max(1, float(rows[1])),
    }


@torch.no_grad()
def accuracy(model, loader, feats, cfg, device):
    """Held-out accuracy over the ranks' mini-batches (every rank takes part)."""
    model.eval()
    right = torch.zeros(2, dtype=torch.float64, device=device)
    for batch in loader:
        b = _read(batch, feats, cfg, device)
        B = b.seeds.numel()
        pred = model(b.x, block_layers(b, check=False))[:B].argmax(-1)
        right += torch.stack(
            [(pred == b.y).sum().double(), torch.tensor(B, device=device).double()]
        )
    dist.all_reduce(right)
    return float(right[0] / right[1])


# ----------------------------------------------------------------------------- the run
def run_world(world, cfg, out):
    d = pathlib.Path(tempfile.mkdtemp(prefix=f"train_ddp_world{world}_", dir=out))
    try:
        mp.spawn(
            _worker, args=(world, gs.distributed.local_init_method(), cfg, str(d)), nprocs=world
        )
        return [json.loads((d / f"rank{r}.json").read_text()) for r in range(world)]
    finally:
        shutil.rmtree(d, ignore_errors=True)


def summary(world, ranks):
    """The run of ``world`` ranks: per-epoch figures (rank 0's record: every figure in it is
    already the ranks' mean or slowest), and the median of the epochs after the first."""
    r0 = ranks[0]
    epochs = r0["epochs"]
    timed = epochs[1:] or epochs
    median = {k: statistics.median(e[k] for e in timed) for k in ("epoch",) + STAGES}
    return {
        "world": world,
        "batches_per_rank": r0["batches_per_rank"],
        "setup_s": max(r["setup_s"] for r in ranks),
        "feature_rows_per_rank": [r["feature_rows"] for r in ranks],
        "held_out_accuracy_before": r0["held_out_accuracy_before"],
        "epochs": epochs,
        "median": median,
        "loss_falls": epochs[-1]["loss_last_tenth"] < epochs[0]["loss_first_tenth"],
        "peak_memory_bytes": max(r.get("peak_memory_bytes", 0) for r in ranks) or None,
    }


def main(argv=None):
    args = parse(argv)
    worlds, anchor, name = setup(args, "benchmarks/train_ddp.py")
    cuda = args.device == "cuda"
    train = args.train_nodes or (anchor.num_seeds if anchor else None)
    log(f"device: {name}; world sizes {worlds}; graph {args.graph}")
    t0 = time.perf_counter()
    folder, temporary = graph_folder(args, expected_bytes(args.graph))
    runs = []
    try:
        header = build_shared(
            args.graph, 1, folder, torch.device("cuda", 0) if cuda else torch.device("cpu")
        )
        n = header["num_nodes"]
        train = min(train or int(0.6 * n), n)
        if n - train < 1:
            raise SystemExit("--eval-nodes: no node is left for a held-out set")
        cfg = {
            "device": args.device,
            "folder": str(folder),
            "placement": args.placement,
            "features": args.features,
            "classes": args.classes,
            "signal": args.signal,
            "hidden": args.hidden,
            "fanouts": args.fanouts,
            "batch_size": args.batch_size,
            "lr": args.lr,
            "train": train,
            "eval": min(args.eval_nodes, n - train),
            "epochs": args.epochs,
            "max_batches": args.max_batches,
            "super_batch": args.super_batch,
        }
        out = pathlib.Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for world in worlds:
            log(f"{world} process(es): started")
            start = time.perf_counter()
            runs.append(summary(world, run_world(world, cfg, out)))
            runs[-1]["spawn_s"] = time.perf_counter() - start
            log(f"{world} process(es): {runs[-1]['spawn_s']:.0f} s")
            # written after every world size: a run stopped later keeps what it measured
            record = write(args, argv, cfg, header, name, runs, t0)
    finally:
        if temporary or not args.keep_graph:
            remove_shared(folder)
    print(
        f"{'n':>2s} {'epoch s':>8s} "
        + " ".join(f"{k:>8s}" for k in STAGES)
        + f" {'ratio':>6s} {'loss first -> last':>20s} {'acc':>6s}"
    )
    for r in runs:
        m, e = r["median"], r["epochs"]
        print(
            f"{r['world']:2d} {m['epoch']:8.3f} "
            + " ".join(f"{m[k]:8.3f}" for k in STAGES)
            + f" {r.get('epoch_ratio', float('nan')):6.3f} "
            f"{e[0]['loss_first_tenth']:9.4f} -> {e[-1]['loss_last_tenth']:7.4f} "
            f"{e[-1]['held_out_accuracy']:6.4f}"
        )
    print(f"total {record['total_s']:.0f} s", flush=True)
    return record


def write(args, argv, cfg, header, name, runs, t0):
    """The record of the world sizes run so far (ratios against the 1-process run) to JSON."""
    one = next((r for r in runs if r["world"] == 1), None)
    for r in runs:
        if one is not None:
            r["epoch_ratio"] = r["median"]["epoch"] / one["median"]["epoch"]
            r["speedup"] = one["median"]["epoch"] / r["median"]["epoch"]
            r["efficiency"] = r["speedup"] / r["world"]
    record = {
        "device": name,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(
            ["python", "benchmarks/train_ddp.py"] + (sys.argv[1:] if argv is None else list(argv))
        ),
        "torch": torch.__version__,
        "gsample": gs.__version__,
        "python": platform.python_version(),
        "commit": git_commit(ROOT),
        "nccl_nvls_enable": os.environ.get("NCCL_NVLS_ENABLE"),
        "args": dict(vars(args)),
        "graph": {
            "spec": args.graph,
            "nodes": header["num_nodes"],
            "edges": header["meta"]["num_edges"],
            "placement": args.placement,
        },
        "seeds": {"train": cfg["train"], "held_out": cfg["eval"]},
        "features": {"per_node": args.features, "dtype": "float32", "partitioned": "node ranges"},
        "model": f"{len(args.fanouts)}-layer SAGEConv, hidden {args.hidden}, DDP",
        "world_sizes": [r["world"] for r in runs],
        "target": "epoch_ratio <= 0.3 at 4 GPUs",
        "runs": runs,
        "total_s": time.perf_counter() - t0,
    }
    tag = args.graph.replace(":", "x").replace("rmatx", "rmat")
    path = pathlib.Path(args.out) / (
        f"train_ddp{'_quick' if args.quick else ''}_{tag}_{args.device}.json"
    )
    path.write_text(json.dumps(record, indent=1) + "\n")
    log(f"wrote {path}")
    return record


if __name__ == "__main__":
    main()
