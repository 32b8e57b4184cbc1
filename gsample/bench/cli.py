"""``python -m gsample.bench``: options, the graph, and the run of every workload."""

from __future__ import annotations

import argparse
import functools
import json
import os
import pathlib
import re
import sys
import time
import traceback

import torch

import gsample as gs
from gsample.bench import dram, measure, peers, report, roofline
from gsample.bench.workloads import (
    ALL_WORKLOADS,
    DESIGN_IDS,
    MODE_KEYS,
    WALKS,
    HarnessError,
    Mode,
    agreement_of,
    count,
    draw,
    host_count,
    import_repo,
    make_modes,
    repo_root,
    workload,
)

PEER_KEYS = ("plain", "torch_cluster", "pyg", "dgl")
#: the modes --slow-batches times on a prefix of the epoch
SLOW_MODES = ("gsample eager", "compiled, torch backend")
BYTES_PER_EDGE, BYTES_PER_STEP = 16, 32
BYTE_MODEL = (
    "sampled edge: its 8-byte row id gathered + 8-byte id written; walk step: 2 "
    "indptr reads + 1 row read + 1 id written (8 bytes each); candidates scanned but "
    "not kept are ignored, so the bound is loose"
)
NOTREDAME = "web-NotreDame.txt.gz"
#: ``--graph`` names of the pinned anchor-shaped graphs (``gs.datasets.ANCHOR_GRAPHS``): their
#: epochs draw from their pinned seeds
ANCHORS = tuple(gs.datasets.ANCHOR_GRAPHS)
#: the default ``--graph`` on a GPU: the graph gSampler and the other anchors benchmark on
#: (undirected, products-sized), so that figures compare per unit of work; ``rmat:`` stays
GPU_GRAPH = "products-like"
#: workloads whose sampled edges per seed are bounded by their fanouts (a tree of
#: ``k1 + k1 k2 + ...`` edges); walks are bounded by their length
NODEWISE = ("graphsage", "pass")
#: default --batches: epochs capped (and scaled to the full epoch) where a mode is slow
CAPS = {
    "quick": ["pass=8"],
    "cpu": ["pass=40"],
    "cuda": ["fastgcn=96", "shadow=96", "pass=96", "deepwalk=48", "node2vec=48"],
}


def _positive(x, zero_ok=False):
    """An argparse ``type``: an integer >= 1 (>= 0 with ``zero_ok``)."""
    low = 0 if zero_ok else 1
    try:
        v = int(x, 10) if isinstance(x, str) else None
    except ValueError:
        v = None
    if v is None or v < low:
        raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {x!r}")
    return v


def _super(x):
    """An argparse ``type``: ``auto`` or an integer >= 1."""
    if x == "auto":
        return x
    try:
        return _positive(x)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be 'auto' or an integer >= 1, got {x!r}") from None


def _cap(x):
    """An argparse ``type``: ``WORKLOAD=N`` (a workload's epoch cap), kept as the text."""
    name, sep, n = x.partition("=")
    try:
        ok = bool(sep) and name in ALL_WORKLOADS and _positive(n) > 0
    except argparse.ArgumentTypeError:
        ok = False
    if not ok:
        raise argparse.ArgumentTypeError(
            f"expected WORKLOAD=N (WORKLOAD one of {', '.join(ALL_WORKLOADS)}; N >= 1), got {x!r}"
        )
    return x


def graph_problem(spec: str):
    """What is wrong with a ``--graph`` value (None when nothing is): ``rmat:N:E`` with
    ``N >= 1`` and ``E >= 0`` integers, ``cora``, an anchor graph (:data:`ANCHORS`), or an
    existing SNAP edge list."""
    if spec.startswith("rmat:"):
        parts = spec.split(":")
        try:
            ok = len(parts) == 3 and int(parts[1], 10) >= 1 and int(parts[2], 10) >= 0
        except ValueError:
            ok = False
        return None if ok else "expected rmat:NUM_NODES:NUM_EDGES (integers, NUM_NODES >= 1)"
    if spec == "cora" or spec in ANCHORS or os.path.isfile(spec):
        return None
    return f"no such file (expected rmat:N:E, cora, {', '.join(ANCHORS)} or a SNAP path)"


class _GraphOption(argparse.Action):
    """``--graph``, checked as it is parsed (:func:`graph_problem`)."""

    def __call__(self, parser, namespace, value, option_string=None):
        problem = graph_problem(value)
        if problem is not None:
            parser.error(f"--graph {value}: {problem}")
        setattr(namespace, self.dest, value)


def _name(x):
    """An argparse ``type``: a file-name prefix (letters, digits, ``_``, ``-``, ``.``)."""
    if not re.fullmatch(r"[\w.-]+", x) or x in (".", ".."):
        raise argparse.ArgumentTypeError(
            f"must be a file-name prefix (letters, digits, _ - and .; no path), got {x!r}"
        )
    return x


def _out_dir(x):
    """An argparse ``type``: a directory, or a path where one can be made."""
    if os.path.exists(x) and not os.path.isdir(x):
        raise argparse.ArgumentTypeError(f"{x}: exists and is not a directory")
    return x


def _file(x):
    """An argparse ``type``: an existing file."""
    if not os.path.isfile(x):
        raise argparse.ArgumentTypeError(f"{x}: no such file")
    return x


def parser():
    """The harness's argparse parser (``python -m gsample.bench --help``)."""
    p = argparse.ArgumentParser(
        prog="python -m gsample.bench",
        description="One benchmark harness: every workload of the catalogue "
        "(docs/catalogue.md) beside its peers and the gather bound.",
    )
    p.add_argument("--workloads", nargs="+", choices=ALL_WORKLOADS, default=list(ALL_WORKLOADS))
    p.add_argument(
        "--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=("cpu", "cuda")
    )
    p.add_argument(
        "--graph",
        default=None,
        action=_GraphOption,
        help="rmat:NODES:EDGES (directed, generated on the device, seed 0), "
        f"{' or '.join(ANCHORS)} (undirected R-MAT at ogbn-papers100M's / ogbn-products' "
        "size, generated on the device or read from --graph-cache; the epoch draws from "
        "its pinned seeds: gs.datasets.anchor_seeds), a SNAP edge list, or cora (default: "
        f"GPU {GPU_GRAPH}; CPU $GSAMPLE_DATA or "
        f"../shared/data/{NOTREDAME}, else rmat:300000:3000000; --quick "
        "rmat:20000:200000)",
    )
    p.add_argument(
        "--graph-cache",
        type=_out_dir,
        default=None,
        metavar="DIR",
        help=f"keep {' and '.join(ANCHORS)} in DIR/<name> (a memory-mappable CSC), "
        "built on the first run (default: generated every run)",
    )
    p.add_argument(
        "--seeds",
        type=_positive,
        default=None,
        help="seeds per epoch (default GPU 196608, CPU 10240, --quick 2048; an anchor "
        "graph: all its pinned seeds, or the first N of them)",
    )
    p.add_argument(
        "--batch-size",
        type=_positive,
        default=None,
        help="seeds per mini-batch (default 512; walks 1024; PASS 64)",
    )
    p.add_argument(
        "--batches",
        nargs="*",
        type=_cap,
        default=None,
        metavar="WORKLOAD=N",
        help="cap a workload's epoch at N mini-batches; its times are also "
        f"reported scaled to the full epoch (default {CAPS})",
    )
    p.add_argument(
        "--super-batch",
        nargs="+",
        type=_super,
        default=None,
        help="mini-batches per super-batch, a mode each; an int or auto "
        "(default GPU 16 64, CPU 8, --quick 4)",
    )
    p.add_argument(
        "--repeats", type=_positive, default=None, help="timed epochs (default 5; --quick 3)"
    )
    p.add_argument("--walk-length", type=_positive, default=80)
    p.add_argument(
        "--fanouts",
        nargs="+",
        type=_positive,
        default=None,
        help="the node-wise samplers' fanouts, outermost layer first (default: GraphSAGE "
        "25 10, ShaDow and PASS 10 10; papers100M's figures use 20 15 10)",
    )
    p.add_argument(
        "--modes",
        nargs="*",
        choices=MODE_KEYS,
        default=list(MODE_KEYS),
        help="gsample modes: eager, compiled on the torch / cuda backend, super",
    )
    p.add_argument(
        "--peers",
        nargs="*",
        choices=PEER_KEYS,
        default=None,
        help="peers to run where they can (default all)",
    )
    p.add_argument(
        "--torch-cluster-sdist",
        type=_file,
        default=None,
        help="torch_cluster's sdist, built when torch_cluster does not import "
        "(default $GSAMPLE_TORCH_CLUSTER_SDIST or .whl/torch_cluster-*.tar.gz; "
        "--quick: only when given)",
    )
    p.add_argument(
        "--torch-cluster-node2vec",
        action="store_true",
        help="on CUDA, run torch_cluster's node2vec too "
        "(see gsample.bench.peers.CLUSTER_NODE2VEC_CUDA)",
    )
    p.add_argument(
        "--slow-batches",
        type=_positive,
        default=None,
        help="time 'gsample eager' and 'compiled, torch backend' (the torch code, "
        "10-100x slower than the kernels on a GPU) over the epoch's first N "
        "mini-batches only, scaled to the epoch (default 16 on a GPU, all "
        "on the CPU)",
    )
    p.add_argument(
        "--profile-batches",
        type=functools.partial(_positive, zero_ok=True),
        default=8,
        help="mini-batches profiled per mode on a GPU (kernels, syncs)",
    )
    p.add_argument(
        "--threads",
        type=_positive,
        default=None,
        help="torch's CPU threads (default torch's own; 1 keeps a shared, loaded "
        "machine from slowing small ops down many times over)",
    )
    p.add_argument(
        "--no-cpu-check",
        action="store_true",
        help="on CUDA, skip the CPU draw the modes are also compared with",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="CI set: a small generated graph, few mini-batches, 3 repeats",
    )
    p.add_argument(
        "--roofline",
        action="store_true",
        help="also measure the roofline (off by default: ncu is slow): copy and random-gather "
        "peaks (8 GiB sources), each workload's least bytes (its bound), and on a GPU the "
        "DRAM bytes of each compiled mode's kernels under Nsight Compute, on "
        "--roofline-batches mini-batches scaled to the epoch",
    )
    p.add_argument(
        "--roofline-batches",
        type=_positive,
        default=4,
        help="mini-batches profiled per one-at-a-time mode under ncu (a super-batched mode: "
        "one whole super-batch, or more to reach this many)",
    )
    p.add_argument(
        "--roofline-timeout",
        type=_positive,
        default=300,
        metavar="SECONDS",
        help="the ncu run's wall-clock limit (all workloads together)",
    )
    p.add_argument(
        "--ncu",
        default=None,
        metavar="PATH",
        help="Nsight Compute's ncu (default $GSAMPLE_NCU, ncu on the PATH, "
        "/usr/local/cuda/bin/ncu)",
    )
    p.add_argument("--no-plots", action="store_true")
    p.add_argument(
        "--out", type=_out_dir, default=None, help="a directory (default <repo>/benchmarks/results)"
    )
    p.add_argument("--name", type=_name, default="bench", help="the record's file name prefix")
    return p


def parse(argv=None, **defaults):
    """Parsed options with the run's defaults filled in (``defaults``: a calling script's)."""
    p = parser()
    p.set_defaults(**defaults)
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    gpu = args.device == "cuda"
    shared = gs.datasets.default_data_path(NOTREDAME)
    args.graph = args.graph or (
        "rmat:20000:200000"
        if args.quick
        else GPU_GRAPH
        if gpu
        else shared
        if os.path.exists(shared)
        else "rmat:300000:3000000"
    )
    anchor = gs.datasets.ANCHOR_GRAPHS.get(args.graph)
    if anchor is not None and args.seeds is not None and args.seeds > anchor.num_seeds:
        p.error(f"--seeds: at most {anchor.num_seeds} for {args.graph} (its pinned seeds)")
    args.seeds = args.seeds or (
        min(2048, anchor.num_seeds)
        if args.quick and anchor is not None
        else 2048
        if args.quick
        else anchor.num_seeds
        if anchor is not None
        else 196_608
        if gpu
        else 10_240
    )
    caps = (
        args.batches if args.batches is not None else CAPS["quick" if args.quick else args.device]
    )
    try:
        args.caps = {k: int(v) for k, v in (c.split("=") for c in caps)}
        assert set(args.caps) <= set(ALL_WORKLOADS) and min(args.caps.values(), default=1) > 0
    except (ValueError, AssertionError):
        p.error(f"--batches: expected WORKLOAD=N, got {' '.join(caps)}")
    args.super_batch = args.super_batch or ([4] if args.quick else [16, 64] if gpu else [8])
    args.repeats = args.repeats or (3 if args.quick else 5)
    if args.slow_batches is None and gpu and not args.quick:
        # the walks' eager and torch-backend modes run a step at a time from Python: over a
        # full epoch's mini-batches they alone would take most of a lent device's time limit
        args.slow_batches = 16
    args.peers = list(PEER_KEYS) if args.peers is None else args.peers
    return args


def load_graph(spec: str, device, cache=None):
    """``(graph, tag)`` of ``--graph`` (checked again: a calling script's default was not
    parsed); an anchor graph is kept in ``cache/<name>`` when ``cache`` is given."""
    problem = graph_problem(spec)
    if problem is not None:
        raise HarnessError(f"--graph {spec}: {problem}")
    if spec in ANCHORS:
        try:
            return gs.datasets.anchor_graph(spec, device=device, cache=cache)[0], spec
        except ValueError as err:  # a size that cannot be allocated, by name
            raise HarnessError(f"--graph {spec}: {err}") from None
    if spec.startswith("rmat:"):
        _, n, e = spec.split(":")
        n, e = int(n), int(e)
        try:
            return gs.datasets.rmat(n, e, seed=0, device=device), f"rmat{n}x{e}"
        except ValueError as err:  # a size that cannot be allocated, by name
            raise HarnessError(f"--graph {spec}: {err}") from None
    if spec == "cora":
        try:
            return gs.datasets.cora(device=device)[0], "cora"
        except FileNotFoundError as err:  # $GSAMPLE_DATA/cora.npz, by path
            raise HarnessError(f"--graph cora: {err}") from None
    return gs.datasets.read_snap(spec).to(device), pathlib.Path(spec).name.split(".")[0]


def epoch_seeds(spec: str, A, device):
    """``(seeds, source)``: the nodes an epoch draws its mini-batches from, in order (the
    harness takes the first ``--seeds``), and how they were drawn: an anchor graph's pinned
    seeds, else a random permutation of every node."""
    if spec in ANCHORS:
        return gs.datasets.anchor_seeds(spec, A), f"gs.datasets.anchor_seeds({spec!r}, A)"
    perm = torch.randperm(A.num_nodes, generator=torch.Generator().manual_seed(0))
    return perm.to(device), "torch.randperm(num_nodes, generator seeded 0)"


def most_units_per_seed(w):
    """The most units a seed can yield in workload ``w``: a walk's length, a node-wise
    sampler's tree of fanouts (``k1 + k1 k2 + ...``), else None (no per-seed bound)."""
    if w.walk:
        return w.kw.get("length")
    fanouts = w.kw.get("fanouts")
    if w.name not in NODEWISE or not fanouts:
        return None
    total, width = 0, 1
    for k in fanouts:
        width *= k
        total += width
    return total


def fanouts_of(w) -> tuple:
    """The in-neighbour counts a node needs so that workload ``w`` finds as many as it asks
    for: a node-wise sampler's fanouts, 1 for a walk (a node without any ends the walk),
    none for layer-wise samplers."""
    if w.walk:
        return (1,)
    return tuple(w.kw.get("fanouts", ()))


def default_modes(w, device, args):
    """``{label: Mode}`` of the gsample modes ``args.modes`` asks for on ``device``
    (:func:`gsample.bench.workloads.make_modes`, super-batched for each ``--super-batch``)."""
    return make_modes(w, device, args.super_batch, args.modes)


def _profile(what, w, seeds, batches, device, args):
    """Kernels and syncs per mini-batch (a GPU only) of a mode (a fresh loader over the first
    mini-batches, warmed up once) or of a peer that samples call by call."""
    if device.type != "cuda" or args.profile_batches <= 0:
        return {}
    if isinstance(what, Mode):
        size = what.options.get("super_batch")
        n = max(size if isinstance(size, int) else 1, args.profile_batches)
        loader = gs.DataLoader(
            w.G, what.sampler, seeds[: n * w.batch_size], w.batch_size, seed=0, **what.options
        )
        run = measure.loader_epoch(loader, device, lambda o: 0)
    elif what.sample is not None:
        n = min(args.profile_batches, len(batches))
        run = measure.calls_epoch(what.sample, batches[:n], device, lambda o: 0)
    else:
        return {}
    run()
    return measure.profile_counts(run, n, device)


def _fanouts(args) -> tuple | None:
    """``--fanouts`` as a tuple, or None (each workload's own)."""
    fanouts = getattr(args, "fanouts", None)
    return tuple(fanouts) if fanouts else None


def run_workload(name, A, device, seeds, args, baselines, modes_fn, extra, cpu_graph, log):
    """Check that the modes of workload ``name`` draw the same samples, then time
    each mode and each peer that runs here; returns the record's entry of the workload."""
    w = workload(name, A, args.batch_size, args.walk_length, _fanouts(args))
    full = seeds[: min(args.seeds, seeds.numel()) // w.batch_size * w.batch_size]
    epoch = full[: args.caps[name] * w.batch_size] if name in args.caps else full
    if epoch.numel() < w.batch_size or w.batch_size <= 0:
        raise HarnessError(f"{name}: fewer seeds than one mini-batch ({w.batch_size})")
    scale = full.numel() / epoch.numel()
    modes = modes_fn(w, device, args)
    more = {}
    if device.type == "cuda" and cpu_graph is not None and "gsample eager" in modes:
        wc = workload(name, cpu_graph(), args.batch_size, args.walk_length, _fanouts(args))
        more["gsample eager on the CPU"] = draw(
            wc, make_modes(wc, torch.device("cpu"), [], ("eager",))["gsample eager"], epoch.cpu()
        )
    last = list(modes)[-1]
    more[f"{last}, drawn again"] = draw(w, modes[last], epoch)
    log(f"{name}: agreement of {len(modes) + len(more)} draws")
    agree = agreement_of(w, modes, epoch, more)
    need = w.required_agreement()
    entry = {
        "design": DESIGN_IDS[name],
        "unit": w.unit,
        "batch_size": w.batch_size,
        "batches": -(-epoch.numel() // w.batch_size),
        "epoch_scale": scale,
        "kwargs": {k: v for k, v in w.kw.items() if not torch.is_tensor(v)},
        "agreement": agree,
        "agreement_required": need,
        "agreement_ok": all(v >= need for v in agree.values()),
        "modes": {},
    }
    full_batches = full.numel() // w.batch_size
    for label, mode in modes.items():
        log(f"{name}: {label}")
        part = epoch
        if args.slow_batches and label in SLOW_MODES:
            part = epoch[: args.slow_batches * w.batch_size]
        # a capped epoch shorter than a super-batch would time a smaller super-batch than
        # the mode's N: such a mode times whole super-batches, scaled to the capped epoch
        n = roofline.timed_batches(entry["batches"], full_batches, mode.options.get("super_batch"))
        if n != entry["batches"]:
            part = full[: n * w.batch_size]
        loader = gs.DataLoader(w.G, mode.sampler, part, w.batch_size, seed=0, **mode.options)
        row = measure.measure(
            measure.loader_epoch(loader, device, count, host_count), args.repeats, device
        )
        if part.numel() != epoch.numel():  # timed on a prefix or more: scaled to the epoch
            row = measure.scaled(row, epoch.numel() / part.numel())
            row["timed_batches"] = part.numel() // w.batch_size
        if mode.options.get("super_batch") == "auto":
            row["super_batch_size"] = loader.super_batch_size
        entry["modes"][label] = {
            "kind": mode.kind,
            **row,
            **_profile(mode, w, full, None, device, args),
        }
    if args.roofline and name in roofline.BOUND_MODELS:
        entry["roofline"] = {"model": roofline.BOUND_MODELS[name], "bound": _bound(w, modes, epoch)}
    batches = measure.batch_list(w.G, epoch, w.batch_size)
    found, entry["peers_not_run"] = peers.build(w, batches, device, args, baselines)
    for label, peer in found.items():
        log(f"{name}: {label}")
        peer.check(batches[0])
        row = measure.measure(peer.run, args.repeats, device)
        entry["modes"][label] = {
            "kind": "plain" if label == "plain PyTorch" else "peer",
            "note": peer.note,
            **row,
            **_profile(peer, w, epoch, batches, device, args),
        }
    for r in entry["modes"].values():
        r["epoch_s_full"] = r["epoch_s_median"] * scale
    ours = [r for r in entry["modes"].values() if r["kind"] not in ("plain", "peer")]
    whole = [r for r in ours if "timed_fraction" not in r]  # units of the whole epoch
    if ours:
        entry["work_per_seed"] = measure.work_per_seed(
            (whole or ours)[0]["units"], epoch.numel(), w.unit, most_units_per_seed(w)
        )
    fanouts = fanouts_of(w)
    if fanouts:
        entry["fanouts"] = list(fanouts)
        entry["share_below_fanout"] = measure.graph_profile(A, fanouts)["below"]
    if extra:
        extra(w, entry, device, args)
    return entry


def _bound(w, modes, epoch) -> dict:
    """The least bytes of the epoch's samples (:class:`gsample.bench.roofline.BoundTally`),
    drawn by the last super-batched mode (else the first): every mode draws the same."""
    label = next((m for m in reversed(modes) if modes[m].kind == "super"), next(iter(modes)))
    mode = modes[label]
    tally = roofline.BoundTally(w.name, w.G)
    loader = gs.DataLoader(w.G, mode.sampler, epoch, w.batch_size, seed=0, **mode.options)
    for b in loader:
        tally.add(b.out)
    return {**tally.result(), "drawn_by": label, "batches": len(loader)}


def add_bound(entry, walk: bool, gather_gbps: float):
    """Bound seconds = bytes the sampler must touch (:data:`BYTE_MODEL`) / the measured
    random-gather bandwidth, from the first gsample mode's units (all draw the same)."""
    units = next(r["units"] for r in entry["modes"].values() if r["kind"] not in ("plain", "peer"))
    per = BYTES_PER_STEP if walk else BYTES_PER_EDGE
    bound = units * per / (gather_gbps * 1e9)
    entry["bound"] = {
        "bytes": units * per,
        "bytes_per_unit": per,
        "gather_GB_per_s": gather_gbps,
        "epoch_s": bound,
    }
    for r in entry["modes"].values():
        r["x_bound"] = r["epoch_s_median"] / bound if bound else None


def run(args, modes=None, extra=None) -> dict:
    """Run the harness; returns the record, also written to ``<out>/<name>_<graph>_<device>_
    <UTC stamp>.json`` (after every workload, so a run cut short keeps what it measured).

    ``modes(w, device, args) -> {label: Mode}`` replaces the gsample modes (the ablation
    scripts pass their configurations; the first is the agreement's reference);
    ``extra(w, entry, device, args)`` adds fields to a workload's entry."""
    start = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - start:6.1f} s] {msg}", file=sys.stderr, flush=True)

    root = repo_root()
    baselines = import_repo(root)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise HarnessError("--device cuda: CUDA is not available")
    if "torch_cluster" in args.peers and args.torch_cluster_sdist is None and not args.quick:
        args.torch_cluster_sdist = peers.default_sdist(root)
    load_s, (A, tag) = measure.timed(
        lambda: load_graph(args.graph, device, args.graph_cache), device
    )
    log(f"graph {args.graph}: {A.num_nodes:,} nodes, {A.num_edges:,} edges in {load_s:.1f} s")
    profile = measure.graph_profile(A)
    log(
        f"degree: mean {profile['mean'] or 0:.1f}, median {profile['median']}, p99 "
        f"{profile['p99']}, max {profile['max']}"
    )
    n_src = 1 << 26 if device.type == "cuda" else (1 << 20 if args.quick else 1 << 24)
    gather = measure.gather_bandwidth(
        device, n_src, n_src // 4, torch.int64, repeats=3 if args.quick else 10
    )
    log(f"random gather int64: {gather['GB_per_s']:.2f} GB/s")
    micro = None
    if args.roofline:
        micro = roofline.microbenchmarks(device, quick=args.quick)
        log(
            "roofline peaks: "
            + ", ".join(f"{k} {v['GB_per_s']:.1f} GB/s" for k, v in micro.items() if k != "note")
            + (f" ({micro['note']})" if micro["note"] else "")
        )
    perm, seeds_source = epoch_seeds(args.graph, A, device)
    if perm.numel() < args.seeds:
        log(f"{args.graph}: {perm.numel():,} seeds (fewer than --seeds {args.seeds:,})")
    cpu_graph = None if args.no_cpu_check else functools.lru_cache(lambda: A.to("cpu"))
    out = pathlib.Path(args.out) if args.out else root / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    record = report.new_record(
        args,
        device,
        A,
        root,
        graph_load_s=load_s,
        degree_profile=profile,
        seeds_source=seeds_source,
        random_gather=gather,
        byte_model={
            "bytes_per_sampled_edge": BYTES_PER_EDGE,
            "bytes_per_walk_step": BYTES_PER_STEP,
            "note": BYTE_MODEL,
        },
        load_avg_start=measure.load_average(),
    )
    if micro is not None:
        record["roofline"] = {
            "microbenchmarks": micro,
            "bound_models": roofline.BOUND_MODELS,
            "status": "pending",
        }
    stem = f"{args.name}_{tag}_{device.type}_{record['stamp']}"
    path = out / f"{stem}.json"
    for name in args.workloads:
        try:
            entry = run_workload(
                name,
                A,
                device,
                perm,
                args,
                baselines,
                modes or default_modes,
                extra,
                cpu_graph,
                log,
            )
            add_bound(entry, name in WALKS, gather["GB_per_s"])
            if "roofline" in entry:
                entry["roofline"]["bound"] = roofline.with_bound_times(
                    entry["roofline"]["bound"], entry["modes"], micro, A
                )
            for k, share in entry.get("share_below_fanout", {}).items():
                record["degree_profile"]["below"][k] = share
            if not entry["agreement_ok"]:
                record["failures"].append(
                    f"{name}: draws disagree: {entry['agreement']} "
                    f"(required >= {entry['agreement_required']})"
                )
        except Exception as e:  # recorded, then the run fails
            entry = {"error": repr(e), "traceback": traceback.format_exc()}
            record["failures"].append(f"{name}: {e!r}")
            log(f"{name}: FAILED {e!r}")
        record["workloads"][name] = entry
        record["wall_s"] = time.perf_counter() - start
        path.write_text(json.dumps(record, indent=2) + "\n")
    if micro is not None:
        log("roofline: DRAM bytes under ncu")
        record["roofline"].update(
            dram.measure_bytes(args, record, device, A, out, stem, SLOW_MODES)
        )
        log(f"roofline: {record['roofline']['status']} {record['roofline'].get('why') or ''}")
    record.update(ok=not record["failures"], complete=True, load_avg_end=measure.load_average())
    if not args.no_plots:
        try:
            record["pngs"] = report.plot_all(record, out, stem)
        except ImportError:
            record["pngs"] = "not drawn: matplotlib is not installed (pip install -e .[bench])"
    record["wall_s"] = time.perf_counter() - start
    path.write_text(json.dumps(record, indent=2) + "\n")
    record["path"] = str(path)
    return record


def main(argv=None, modes=None, extra=None, **defaults) -> int:
    """The command line (and the scripts that call the harness with their own ``modes``,
    ``extra`` and option ``defaults``): prints the table; returns 0 when every workload ran
    and its draws agree, 1 otherwise (never because of speed), 2 when the harness cannot
    run."""
    try:
        args = parse(argv, **defaults)
    except SystemExit as e:  # argparse refused an option (it said why) or --help
        return e.code if isinstance(e.code, int) else 2
    try:
        record = run(args, modes=modes, extra=extra)
    except HarnessError as e:
        print(f"gsample.bench: error: {e}", file=sys.stderr)
        return 2
    print("\n".join(report.table_lines(record)))
    print(f"wrote {record['path']}")
    if record["failures"]:
        print("gsample.bench: FAILED:\n  " + "\n  ".join(record["failures"]), file=sys.stderr)
        return 1
    return 0
