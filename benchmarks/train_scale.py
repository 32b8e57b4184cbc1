"""End-to-end GraphSAGE training at papers' scale: the epoch split into sampling, gathering,
the model, and what the model does not hide, against the model's own time.

A 3-layer GraphSAGE (PyG ``SAGEConv`` mean aggregation, hidden 256, the model of
``examples/train_common.py``) trains on mini-batches of 1024 seeds sampled by the compiled
GraphSAGE sampler (``examples/graphsage.py``, fanouts [15, 10, 5]), features and labels
gathered by ``gs.DataLoader``, its sampling and gathering overlapping training as
``--pipeline`` says (the loader's ``pipeline``): ``auto`` (default: ``stream`` for a graph and
tables on a GPU, else ``threads``), ``threads`` (``pipeline=True``: two stage threads),
``stream`` (the next mini-batch, or super-batch, made on a side CUDA stream in the loop's
thread; on a CPU stage by stage) or ``off`` (``pipeline=False``, stage by stage;
``--no-pipeline`` is the same). The JSON records the option and what the loader resolved it
to (``pipeline``).

Graphs (``--graph``):

- ``papers-like`` / ``products-like``: the pinned anchor graphs
  (``gs.datasets.anchor_graph``) and their training seeds (1,207,179 / 196,608);
- ``rmat``: ``gs.datasets.undirected_rmat(--num-nodes, --num-edges)``, the same generator
  at any size (the default is small: a CPU smoke run);
- ``planted``: ``gs.datasets.planted_partition`` (``benchmarks/train_pipeline.py``'s graph),
  with its own homophilous classes and features.

Planted labels and features (all but ``planted``), made on the graph's device in chunks of
rows, so nothing but the (N, F) table itself is ever whole in memory: node ``v``'s class is
a multiplicative hash of its id (bits 32.. of ``v * 0x9E3779B97F4A7C15``) modulo
``--classes`` (32), balanced and independent of the graph's structure; its features are its
class's centroid (``--signal`` times ``N(0, I)``, one centroid per class) plus ``N(0, I)``
noise. With the defaults (128 features, signal 0.3) the class is readable from a node's own
features (SAGEConv's root weight) well above chance (1/32) but not perfectly, so the loss
keeps falling over an epoch; the neighbours carry no class signal (R-MAT has no
communities), so the model must also learn to discount them. papers-like: 54.5 M nodes x
128 float32 = 28 GB of features on the GPU beside the 27 GB graph.

Seeds: the training seeds are the first ``n`` of ``gs.datasets.uniform_seeds`` (for the
anchor graphs exactly ``anchor_seeds``); the held-out nodes (``--eval-nodes``) are the next
ones of the same permutation, disjoint from them. Held-out accuracy is measured after every
epoch on sampled mini-batches of the same sampler (a full-graph pass at 3.2 B edges would
not fit).

Times per epoch (all in seconds):

- ``epoch``: wall time of the training loop (the device synchronised at both ends);
- ``sample`` / ``gather``: the loader's stage times (``loader.sample_seconds`` /
  ``gather_seconds``, measured in the stages' threads: they overlap the model);
- ``model``: the training steps themselves (``block_layers``, forward, backward, Adam),
  on a GPU the sum of CUDA-event spans on the loop's stream (each starts after the
  mini-batch's gathering event is waited for), on a CPU wall time;
- ``exposed``: ``epoch - model``, what of sampling + gathering the model did not hide (and
  the loop's own overhead).

Baseline (``--baseline-batches K``, in the same run): the same model and dtype (a copy,
with a fresh Adam) trains on K mini-batches sampled and gathered before the first epoch and
kept on the device, one pass after each epoch (interleaved, so it moves with the GPU's clocks
and the host's load as the epochs do); its wall time (synchronised at both ends, after two
warm-up steps) per mini-batch, the median over the passes after the first epoch's, times the
epoch's mini-batches, is ``model_only``. The target ratio is ``epoch / model_only`` (the
median epoch after the first, which compiles and warms up).

Apart (after the epochs): the model's pass over its K ready mini-batches and a pass of the
loader alone over K mini-batches (sampling, then gathering, no pipeline, no model), each
timed and, on a GPU, profiled (``torch.profiler``: GPU busy and wall milliseconds, kernels
and host syncs a mini-batch): ``model_only`` and ``loader_only``.
``serial_over_model_only`` is ``(model + loader) / model`` a mini-batch, what one after the
other costs; a pipelined epoch below it overlaps them. A model whose GPU busy time is well
under its wall time is bound by its host, and in one process the loader's host work adds
to it.

Each stage prints a line with the seconds since start, flushed. JSON with device, date and
command goes to ``benchmarks/results/train_scale_<graph>_<device>.json``.

    python benchmarks/train_scale.py                                  # CPU, a 20k-node rmat
    python benchmarks/train_scale.py --device cuda --graph papers-like --epochs 3
    python benchmarks/train_scale.py --device cuda --graph papers-like --max-batches 200
"""

# ruff: noqa: E402  the examples' folder goes on sys.path before their imports
import argparse
import datetime
import functools
import pathlib
import statistics
import sys
import time

import torch

_HERE = pathlib.Path(__file__).resolve().parent
# the examples' sampler and model, and train_pipeline's progress lines
sys.path[:0] = [str(_HERE), str(_HERE.parent / "examples")]

from graphsage import graphsage
from train_common import Clock, ModelOnly, Net, block_layers, step
from train_pipeline import PIPELINES, ROOT, log, mode_name

import gsample as gs
from gsample.bench.measure import profile_counts
from gsample.bench.report import device_name, write_record

GRAPHS = ("rmat", "planted", "products-like", "papers-like")
#: Fibonacci hashing's multiplier (2**64 / golden ratio), as a signed int64
_GOLDEN = 0x9E3779B97F4A7C15 - (1 << 64)


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", choices=GRAPHS, default="rmat")
    p.add_argument("--num-nodes", type=int, default=20_000, help="rmat / planted: nodes")
    p.add_argument("--num-edges", type=int, default=200_000, help="rmat: edges drawn")
    p.add_argument("--avg-degree", type=float, default=12.0, help="planted: mean degree")
    p.add_argument("--cache", default=None, help="anchor graphs: a folder to keep them in")
    p.add_argument("--features", type=int, default=128)
    p.add_argument("--classes", type=int, default=32)
    p.add_argument("--signal", type=float, default=0.3, help="class centroids' scale")
    p.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--fanouts", type=int, nargs="+", default=[15, 10, 5])
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--lr", type=float, default=0.003)
    p.add_argument(
        "--train-nodes",
        type=int,
        default=None,
        help="training seeds (default: the anchor graph's, else 60 %% of the nodes)",
    )
    p.add_argument("--eval-nodes", type=int, default=16_384, help="held-out nodes")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--max-batches", type=int, default=None, help="mini-batches per epoch, at most")
    p.add_argument("--baseline-batches", type=int, default=32)
    p.add_argument("--super-batch", default=None, help="an int or 'auto'")
    p.add_argument(
        "--pipeline",
        choices=list(PIPELINES),
        default="auto",
        help="how sampling and gathering overlap training (the loader's pipeline=)",
    )
    p.add_argument(
        "--no-pipeline",
        dest="pipeline",
        action="store_const",
        const="off",
        help="one stage at a time: --pipeline off",
    )
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    return p.parse_args(argv)


def hashed_labels(ids, num_classes):
    """The planted class of each node of ``ids``: bits 32.. of ``v * 0x9E3779B97F4A7C15``
    (mod 2**64) modulo ``num_classes`` (a pure function of the id: any rank computes any
    node's label).

    Examples
    --------
    >>> hashed_labels(torch.arange(3), 32).shape
    torch.Size([3])
    """
    # int64 products wrap; the shift is arithmetic, so mask to the unsigned high half
    return ((ids.to(torch.int64) * _GOLDEN) >> 32 & 0xFFFFFFFF) % num_classes


def planted_labels(num_nodes, num_classes, device, chunk=1 << 22):
    """Node ``v``'s class: bits 32.. of ``v * 0x9E3779B97F4A7C15`` (mod 2**64) modulo
    ``num_classes``; made ``chunk`` ids at a time.

    Returns
    -------
    LongTensor, shape (num_nodes,)

    Examples
    --------
    >>> y = planted_labels(1000, 32, "cpu")
    >>> y.bincount().min() > 0
    tensor(True)
    """
    y = torch.empty(num_nodes, dtype=torch.int64, device=device)
    for a in range(0, num_nodes, chunk):
        ids = torch.arange(a, min(a + chunk, num_nodes), device=device)
        y[a : a + ids.numel()] = hashed_labels(ids, num_classes)
    return y


def planted_features(y, num_features, num_classes, signal, dtype, seed=0, chunk=1 << 20):
    """Features that carry ``y``: class ``c``'s centroid (``signal * N(0, I)``) plus
    ``N(0, I)`` noise, written into one ``(N, F)`` table ``chunk`` rows at a time (no second
    copy of the table: the temporaries are a chunk's).

    Returns
    -------
    Tensor, shape (len(y), num_features), on ``y``'s device, of ``dtype``

    Examples
    --------
    >>> x = planted_features(planted_labels(1000, 32, "cpu"), 128, 32, 0.3, torch.float32)
    >>> x.shape
    torch.Size([1000, 128])
    """
    g = torch.Generator(device=y.device).manual_seed(seed)
    centroids = signal * torch.randn(num_classes, num_features, generator=g, device=y.device)
    x = torch.empty(y.numel(), num_features, dtype=dtype, device=y.device)
    for a in range(0, y.numel(), chunk):
        part = y[a : a + chunk]
        noise = torch.randn(part.numel(), num_features, generator=g, device=y.device)
        x[a : a + part.numel()] = noise.add_(centroids[part])
    return x


def load(args, device):
    """The graph, its training and held-out seeds, features and labels, and a description."""
    dtype = getattr(torch, args.dtype)
    count = None
    if args.graph in ("papers-like", "products-like"):
        where = f" (or reading it from {args.cache})" if args.cache else ""
        log(f"building {args.graph} on {device}{where}")
        A, anchor = gs.datasets.anchor_graph(args.graph, device=device, cache=args.cache)
        count = anchor.numel()
        desc = args.graph
    elif args.graph == "rmat":
        log(f"building undirected_rmat({args.num_nodes}, {args.num_edges}) on {device}")
        A = gs.datasets.undirected_rmat(args.num_nodes, args.num_edges, seed=0, device=device)
        desc = f"undirected_rmat({args.num_nodes}, {args.num_edges})"
    else:
        log(f"generating planted_partition({args.num_nodes}) on the CPU, then to {device}")
        A, x, y = gs.datasets.planted_partition(
            args.num_nodes,
            num_classes=args.classes,
            avg_degree=args.avg_degree,
            num_features=args.features,
            device=device,
        )
        x = x.to(dtype)
        desc = f"planted_partition({args.num_nodes})"
    n = A.num_nodes
    if args.train_nodes is not None:
        count = min(args.train_nodes, n)
    elif count is None:
        count = int(0.6 * n)
    order = gs.datasets.uniform_seeds(n, min(n, count + args.eval_nodes), seed=0, device=device)
    train, held_out = order[:count], order[count:]
    if args.graph in ("papers-like", "products-like") and args.train_nodes is None:
        assert torch.equal(train, anchor), "the training seeds are the anchor seeds"
        del anchor
    if held_out.numel() == 0:
        raise SystemExit("--eval-nodes: no node is left for a held-out set")
    if args.graph != "planted":
        log(f"planting {args.classes} classes and {args.features} {args.dtype} features")
        y = planted_labels(n, args.classes, device)
        x = planted_features(y, args.features, args.classes, args.signal, dtype)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    log(
        f"graph {desc}: {n} nodes, {A.num_edges} edges; features {tuple(x.shape)} "
        f"({x.numel() * x.element_size() / 2**30:.2f} GiB); {train.numel()} training seeds, "
        f"{held_out.numel()} held out"
    )
    return A, train, held_out, x, y, desc


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def batches(loader, limit):
    """``loader``'s mini-batches, at most ``limit``; the epoch's stages stopped on leaving."""
    it = iter(loader)
    try:
        for i, batch in enumerate(it):
            if limit is not None and i >= limit:
                return
            yield batch
    finally:
        it.close()


def train_epoch(model, optimizer, loader, device, limit, name):
    """One epoch; its times (see the module docstring) and losses."""
    n = len(loader) if limit is None else min(limit, len(loader))
    every = max(1, -(-n // 10))
    clock, losses = Clock(device.type == "cuda"), []
    model.train()
    sync(device)
    start = time.perf_counter()
    for i, batch in enumerate(batches(loader, limit), 1):
        t = clock.start()
        losses.append(step(model, optimizer, batch, check=False))  # all_nodes(): columns first
        clock.stop(t)
        if i % every == 0 or i == n:
            recent = float(torch.stack(losses[-every:]).mean())  # a sync each tenth only
            log(f"{name}: batch {i} / {n}, loss {recent:.4f}")
    sync(device)
    epoch = time.perf_counter() - start
    model_s = clock.total()
    loss = torch.stack(losses).float().cpu()
    tenth = max(1, loss.numel() // 10)
    return {
        "batches": loss.numel(),
        "epoch": epoch,
        "sample": loader.sample_seconds,
        "gather": loader.gather_seconds,
        "model": model_s,
        "exposed": max(0.0, epoch - model_s),
        "loss": float(loss.mean()),
        "loss_first_tenth": float(loss[:tenth].mean()),
        "loss_last_tenth": float(loss[-tenth:].mean()),
    }


@torch.no_grad()
def held_out_accuracy(model, loader):
    """Accuracy on the held-out seeds, each mini-batch sampled as in training."""
    model.eval()
    right = total = 0
    for batch in loader:
        B = batch.seeds.numel()
        pred = model(batch.x, block_layers(batch))[:B].argmax(-1)
        right += (pred == batch.y[:B]).sum()
        total += B
    return float(right) / total


def _ms(counts: dict) -> str:
    busy = counts.get("gpu_busy_ms_per_batch")
    return "-" if busy is None else f"{busy:.3f} ms"


def apart_passes(baseline, solo, k: int, device) -> dict:
    """The model and the loader, each alone, a mini-batch at a time.

    Parameters
    ----------
    baseline : ModelOnly
        The model's pass over its ``k`` ready mini-batches.
    solo : gs.DataLoader
        A loader of the training seeds without a pipeline (sampling, then gathering, in
        the caller's thread): its first ``k`` mini-batches, no model.
    k : int
        Mini-batches a pass.
    device : torch.device

    Returns
    -------
    dict
        ``{"model_only": counts, "loader_only": {"batches", "per_batch", **counts}}``:
        ``per_batch`` the loader's wall seconds a mini-batch (a pass after a warm-up one),
        ``counts`` :func:`gsample.bench.measure.profile_counts` of one more pass of each
        (GPU busy and wall milliseconds, kernels and host syncs a mini-batch; empty off
        CUDA). A model whose GPU busy time is well under its wall time is bound by its
        host (its Python launches): in one process the loader's host work then adds to
        it, pipelined or not.

    Examples
    --------
    >>> apart = apart_passes(baseline, loader(train, seed=2, pipeline=False), 32, device)
    >>> apart["loader_only"]["per_batch"]  # seconds
    """

    def loader_pass():
        for _ in batches(solo, k):
            pass

    loader_pass()  # the programs made, the allocator's blocks held
    sync(device)
    start = time.perf_counter()
    loader_pass()
    sync(device)
    per_batch = (time.perf_counter() - start) / k
    return {
        "model_only": profile_counts(baseline, k, device),
        "loader_only": {
            "batches": k,
            "per_batch": per_batch,
            **profile_counts(loader_pass, k, device),
        },
    }


def main(argv=None):
    args = parse(argv)
    device = torch.device(args.device)
    gs.manual_seed(0)
    A, train, held_out, x, y, desc = load(args, device)
    backend = "cuda" if device.type == "cuda" else "torch"
    sampler = functools.partial(gs.compile(graphsage, backend=backend), fanouts=tuple(args.fanouts))
    super_batch = (
        None
        if args.super_batch is None
        else (args.super_batch if args.super_batch == "auto" else int(args.super_batch))
    )

    def loader(seeds, shuffle=True, seed=0, pipeline=PIPELINES[args.pipeline]):
        # features and labels are read in place on the device: no copy of the table
        return gs.DataLoader(
            A,
            sampler,
            seeds,
            args.batch_size,
            shuffle=shuffle,
            seed=seed,
            features=x,
            labels=y,
            pipeline=pipeline,
            super_batch=super_batch,
        )

    train_loader = loader(train)
    # what the loader runs ("auto" resolved): a --pipeline choice's name
    mode = mode_name(train_loader.pipeline)
    eval_loader = loader(held_out, shuffle=False)
    torch.manual_seed(0)
    num_classes = int(y.max()) + 1
    model = Net(args.features, args.hidden, num_classes, num_layers=len(args.fanouts))
    model = model.to(device=device, dtype=x.dtype)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    n = len(train_loader) if args.max_batches is None else min(args.max_batches, len(train_loader))
    log(
        f"model: {len(args.fanouts)}-layer SAGEConv, hidden {args.hidden}, {num_classes} "
        f"classes, {args.dtype}; fanouts {args.fanouts}, {n} mini-batches of "
        f"{args.batch_size} an epoch (of {len(train_loader)}), feature store "
        f"{train_loader.feature_store.mode}, pipeline {mode} (--pipeline {args.pipeline})"
    )
    acc0 = held_out_accuracy(model, eval_loader)
    log(f"held-out accuracy before training {acc0:.4f} (chance {1 / num_classes:.4f})")
    log(f"baseline: the model on {args.baseline_batches} pre-sampled, pre-gathered mini-batches")
    ready = list(batches(loader(train, seed=1), args.baseline_batches))
    baseline, k, per_batch_runs = ModelOnly(model, args.lr, ready, check=False), len(ready), []
    epochs = []
    for e in range(args.epochs):
        name = f"epoch {e}{' (warm-up)' if e == 0 else ''}"
        log(f"{name}: started")
        s = train_epoch(model, optimizer, train_loader, device, args.max_batches, name)
        s["held_out_accuracy"] = held_out_accuracy(model, eval_loader)
        epochs.append(s)
        log(
            f"{name}: {s['epoch']:.3f} s (sampling {s['sample']:.3f}, gathering "
            f"{s['gather']:.3f}, model {s['model']:.3f}, exposed {s['exposed']:.3f}); loss "
            f"{s['loss']:.4f} (first tenth {s['loss_first_tenth']:.4f}, last tenth "
            f"{s['loss_last_tenth']:.4f}); held-out accuracy {s['held_out_accuracy']:.4f}"
        )
        per_batch_runs.append(baseline())
        log(f"model only after {name}: {per_batch_runs[-1] * s['batches']:.3f} s an epoch")
    per_batch = statistics.median(per_batch_runs[1:] or per_batch_runs)
    timed = epochs[1:] or epochs  # the first epoch compiles and warms up
    median = {
        key: statistics.median(s[key] for s in timed)
        for key in ("epoch", "sample", "gather", "model", "exposed")
    }
    batches_per_epoch = timed[-1]["batches"]
    model_only_epoch = per_batch * batches_per_epoch
    ratio = median["epoch"] / model_only_epoch
    apart = apart_passes(baseline, loader(train, seed=2, pipeline=False), k, device)
    serial = (per_batch + apart["loader_only"]["per_batch"]) / per_batch
    log(
        f"apart, a mini-batch: the model {per_batch * 1e3:.3f} ms (GPU busy "
        f"{_ms(apart['model_only'])}), the loader {apart['loader_only']['per_batch'] * 1e3:.3f} "
        f"ms (GPU busy {_ms(apart['loader_only'])}); one after the other {serial:.3f}x the model"
    )
    print(
        f"median epoch {median['epoch']:.3f} s over {batches_per_epoch} mini-batches: "
        f"sampling {median['sample']:.3f}, gathering {median['gather']:.3f}, model "
        f"{median['model']:.3f}, exposed {median['exposed']:.3f}; model only (pre-sampled, "
        f"{k} mini-batches) {model_only_epoch:.3f} s; epoch / model only = {ratio:.3f}; "
        f"loss {epochs[0]['loss']:.4f} -> {epochs[-1]['loss']:.4f}; held-out accuracy "
        f"{acc0:.4f} -> {epochs[-1]['held_out_accuracy']:.4f}",
        flush=True,
    )
    record = {
        "device": device_name(device),
        "date": datetime.date.today().isoformat(),
        "command": " ".join(sys.argv),
        "args": vars(args),
        "graph": {"name": desc, "nodes": A.num_nodes, "edges": A.num_edges},
        "seeds": {"train": train.numel(), "held_out": held_out.numel()},
        "feature_mode": train_loader.feature_store.mode,
        "pipeline": mode,
        "held_out_accuracy_before": acc0,
        "chance": 1 / num_classes,
        "epochs": epochs,
        "median": median,
        "model_only": {
            "batches": k,
            "per_batch": per_batch,
            "per_batch_runs": per_batch_runs,
            "epoch": model_only_epoch,
            **apart["model_only"],
        },
        "loader_only": apart["loader_only"],
        "epoch_over_model_only": ratio,
        "serial_over_model_only": serial,
    }
    if device.type == "cuda":
        record["peak_memory_bytes"] = torch.cuda.max_memory_allocated(device)
    log(f"wrote {write_record(record, args.out, f'train_scale_{args.graph}_{device.type}.json')}")
    return record


if __name__ == "__main__":
    main()
