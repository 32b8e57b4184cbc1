"""Two source trees of gsample timed side by side in one run: the same loaders' epochs.

A change to a kernel or the runtime is judged against the code before it on the same machine
in the same run (a lent GPU's speed differs from one machine to the next by more than most
changes gain). Each tree runs in its own processes (``PYTHONPATH`` set to it, the samplers
of this checkout's ``examples/``), ``--rounds`` a tree in alternating order (base, new, new,
base, ...: with an even count, each tree runs as often in the middle of the run as at its
ends). Per job (a workload, one at a time or super-batched ``N``) and round: ``--warmup``
(two) untimed epochs, ``--repeats`` timed epochs of ``--batches`` mini-batches (``gs.DataLoader``
over the graph's first seeds), and on a GPU the summed device time of one more epoch's
kernels, copies and memsets (``torch.profiler``: ``gpu_busy_ms``); a job's figure is the
median of its epochs over the rounds. Writes ``ab_trees_<device>.json`` (device, date,
command, both trees' commits) to ``--out`` and prints a table.

    python benchmarks/ab_trees.py --base-commit HEAD~1 --graph products-like \\
        --jobs ladies:64 shadow:1 shadow:16 fastgcn:64 --batches 384
    python benchmarks/ab_trees.py --base-commit HEAD --quick     # the CPU, seconds
"""

import argparse
import gc
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base-commit", help="the base tree: this commit of the checkout")
    p.add_argument("--base", help="the base tree: a folder holding gsample/ and kernels/")
    p.add_argument(
        "--base-name",
        help="how the record names --base's tree (the commit it was archived from, where the "
        "machine that runs this has no git history of it); its path by default",
    )
    p.add_argument("--new", default=str(ROOT), help="the new tree (default: this checkout)")
    p.add_argument("--device", default="cuda", choices=("cpu", "cuda"))
    p.add_argument(
        "--graph",
        default="products-like",
        help="as python -m gsample.bench takes it: products-like, papers-like, rmat:N:E, "
        "cora or a SNAP edge list (the harness's graph and epoch seeds)",
    )
    p.add_argument(
        "--jobs",
        nargs="+",
        default=["graphsage:1", "graphsage:64"],
        help="workload:mode, mode 1 (one at a time) or N (super-batched N)",
    )
    p.add_argument("--batches", type=int, default=384, help="mini-batches an epoch")
    p.add_argument("--repeats", type=int, default=5, help="timed epochs a job, a round")
    p.add_argument(
        "--warmup",
        type=int,
        default=2,
        help="untimed epochs a job, a round, before its timed ones (a process's first epochs "
        "on a GPU host may run slower for several epochs, more in one tree's process than "
        "the other's by chance)",
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="processes a tree, alternating (base, new, new, base, ...): a drift of the "
        "machine during the run falls on both trees",
    )
    p.add_argument("--quick", action="store_true", help="the CPU, rmat:2000:20000, 8 batches")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.device, args.graph, args.batches, args.repeats = "cpu", "rmat:2000:20000", 8, 2
    if args.rounds < 1:
        p.error("--rounds: at least 1")
    if args.warmup < 0:
        p.error("--warmup: 0 or more")
    if args.base_name and not args.base:
        p.error("--base-name: names a --base folder (--base-commit names itself)")
    return args


def measure(args) -> dict:
    """This process's tree: where it imported gsample from (``"gsample"``), and one row per
    job (epoch seconds, GPU busy milliseconds)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    import gsample as gs
    from gsample.bench import cli
    from gsample.bench import workloads as W

    W.import_repo(ROOT)
    device = torch.device(args.device)
    A, _ = cli.load_graph(args.graph, device)  # the harness's graph and seeds, by name
    seeds, _ = cli.epoch_seeds(args.graph, A, device)
    rows = []
    for job in args.jobs:
        name, mode = job.split(":")
        w = W.workload(name, A)
        fn = W.make_modes(w, device, [], ("cuda", "torch"))
        fn = fn.get("compiled, cuda backend", fn["compiled, torch backend"]).sampler
        opts = {} if mode == "1" else {"super_batch": int(mode), **w.loader}
        part = seeds[: args.batches * w.batch_size].to(device)
        loader = gs.DataLoader(w.G, fn, part, w.batch_size, seed=0, **opts)

        def epoch(loader=loader):
            for b in loader:
                W.host_count(b.out)
            if device.type == "cuda":
                torch.cuda.synchronize(device)

        for _ in range(args.warmup):
            epoch()
        gc.collect()
        gc.freeze()
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            epoch()
            times.append(time.perf_counter() - t)
        busy = None
        if device.type == "cuda":
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                epoch()
            busy = sum(e.self_device_time_total for e in prof.key_averages()) / 1e3
        gc.unfreeze()
        rows.append(
            {
                "job": job,
                "batches": len(loader),  # fewer than --batches where the seeds run out
                "epoch_s_median": statistics.median(times),
                "epoch_s_all": times,
                "gpu_busy_ms": busy,
            }
        )
    return {"gsample": gs.__file__, "rows": rows}


def _rev_parse(commit: str) -> str:
    """``commit`` (a name such as ``HEAD~1``) as the full id of the commit it names now."""
    done = subprocess.run(
        ["git", "rev-parse", "--verify", f"{commit}^{{commit}}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"ab_trees: no commit {commit!r} in {ROOT}: {done.stderr.strip()}")
    return done.stdout.strip()


def _base_tree(args, scratch: pathlib.Path) -> tuple:
    """``(tree, commit)``: ``--base`` (its folder's path for a commit), or ``--base-commit``'s
    ``gsample/`` and ``kernels/`` archived into ``scratch`` (the commit's full id: a name
    such as ``HEAD~1`` names another commit tomorrow)."""
    if args.base:
        tree = pathlib.Path(args.base).resolve()
        return tree, args.base_name or str(tree)
    if not args.base_commit:
        raise SystemExit("ab_trees: give --base-commit or --base")
    commit = _rev_parse(args.base_commit)
    tree = scratch / "base"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "archive", commit, "gsample", "kernels"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree, commit


def _commit(tree: pathlib.Path) -> str:
    """The new tree's commit: this checkout's (``+dirty`` where it differs from it), or
    another folder's path (whatever ``--new`` spelled, compared resolved)."""
    if tree.resolve() == ROOT:
        from gsample.bench.report import git_commit

        return git_commit(ROOT)
    return str(tree.resolve())


def run_tree(tree: pathlib.Path, argv: list) -> list:
    """``measure``'s rows in a process that imports gsample from ``tree`` (a SystemExit
    where it fails, or where gsample came from elsewhere: an installed copy)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "GSAMPLE_REPO": str(ROOT)}
    done = subprocess.run(
        [sys.executable, __file__, "--child", *argv],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"ab_trees: the tree {tree} failed:\n{done.stderr[-4000:]}")
    got = json.loads(done.stdout.strip().splitlines()[-1])
    if not pathlib.Path(got["gsample"]).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"ab_trees: gsample came from {got['gsample']}, not the tree {tree}")
    return got["rows"]


def merged(runs: list) -> list:
    """One row a job from each round's rows (``runs``: a list of :func:`measure` row lists):
    every round's epochs, their median, the median of the rounds' device times."""
    rows = []
    for parts in zip(*runs):
        times = [t for r in parts for t in r["epoch_s_all"]]
        busy = [r["gpu_busy_ms"] for r in parts if r["gpu_busy_ms"] is not None]
        rows.append(
            {
                **parts[0],
                "epoch_s_median": statistics.median(times),
                "epoch_s_all": times,
                "round_medians": [r["epoch_s_median"] for r in parts],
                "gpu_busy_ms": statistics.median(busy) if busy else None,
            }
        )
    return rows


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse(argv)
    if args.child:
        print(json.dumps(measure(args)))
        return 0
    sys.path.insert(0, str(ROOT))
    import torch

    from gsample.bench.report import script_record, write_record

    with tempfile.TemporaryDirectory() as scratch:
        base, base_commit = _base_tree(args, pathlib.Path(scratch))
        new = pathlib.Path(args.new)
        trees = {"base": base, "new": new}
        rounds = {"base": [], "new": []}
        for i in range(args.rounds):
            for label in ("base", "new") if i % 2 == 0 else ("new", "base"):
                rounds[label].append(run_tree(trees[label], argv))
        rows = {label: merged(runs) for label, runs in rounds.items()}
        commits = {"base": base_commit, "new": _commit(new)}
    print("| job | base s (median) | new s (median) | new / base | GPU busy ms base, new |")
    print("|---|---:|---:|---:|---|")
    for b, n in zip(rows["base"], rows["new"]):
        ratio = n["epoch_s_median"] / b["epoch_s_median"]
        busy = "-"
        if b["gpu_busy_ms"] is not None:
            busy = f"{b['gpu_busy_ms']:.1f}, {n['gpu_busy_ms']:.1f}"
        print(
            f"| {b['job']} | {b['epoch_s_median']:.4f} | {n['epoch_s_median']:.4f} "
            f"| {ratio:.3f} | {busy} |"
        )
    device = torch.device(args.device)
    record = script_record(
        device,
        ROOT,
        argv,
        graph=args.graph,
        batches=args.batches,
        repeats=args.repeats,
        rounds=args.rounds,
        trees=commits,
        rows=rows,
    )
    path = write_record(record, args.out, f"ab_trees_{args.device}.json")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
