"""A walk written as one ``gs.walk`` step, compiled fused (one ``FUSED_WALK`` op: one generated
kernel per mini-batch on the CUDA backend) against the same walk unrolled (``fuse=False``:
``length`` copies of the step in the program), in one run (issue 13).

The workload is the Metropolis-Hastings walk of ``examples/metropolis_hastings.py`` (length 80,
mini-batch 1024) on the products-sized R-MAT graph of docs/architecture.md §8 (or ``--quick``: 200k
nodes, 4M edges). Per mode (fused, fused super-batched ``--super-batch``, unrolled), through
``gs.DataLoader``: epoch time (median of ``--repeats`` after a
warm-up epoch), and from ``torch.profiler`` over one mini-batch the kernels launched. The
first mini-batches of both modes are compared first: the walks must be identical.

    python benchmarks/fused_walk.py                 # products-sized, CUDA backend
    python benchmarks/fused_walk.py --quick

Writes ``fused_walk_rmat_<device>.json`` (device, date, command, commit) to ``--out``.
"""

import argparse
import datetime
import functools
import json
import pathlib
import statistics
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))

from metropolis_hastings import mh_step

import gsample as gs
from gsample.bench.measure import sync, timed
from gsample.bench.report import git_commit

ROOT = pathlib.Path(__file__).resolve().parents[1]


def parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-nodes", type=int, default=2_400_000)
    p.add_argument("--num-edges", type=int, default=120_000_000)
    p.add_argument("--seeds", type=int, default=196_608)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--length", type=int, default=80)
    p.add_argument(
        "--super-batch",
        type=int,
        default=64,
        help="also time the fused walk super-batched so (0: not)",
    )
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--device", default="cuda")
    p.add_argument("--quick", action="store_true", help="200k nodes, 4M edges, 32k seeds")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    return p


def mh(A, seeds, length, fuse):
    return gs.walk(mh_step, A, seeds, length, fuse=fuse)


def epoch(load, device):
    """Seconds of one pass over the loader (each mini-batch dropped as it comes)."""
    return timed(lambda: sum(1 for _ in load), device)[0]


def kernels_per_batch(sampler, A, seeds, device) -> int:
    """Kernels one mini-batch launches (torch.profiler; CUDA only)."""
    if device.type != "cuda":
        return -1
    from torch.profiler import ProfilerActivity, profile

    sampler(A, seeds)
    sync(device)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        sampler(A, seeds)
        sync(device)
    return sum(
        1
        for e in prof.events()
        if e.device_type.name == "CUDA"
        and "memcpy" not in e.name.lower()
        and "memset" not in e.name.lower()
    )


def main(argv=None):
    args = parser().parse_args(argv)
    if args.quick:
        args.num_nodes, args.num_edges, args.seeds = 200_000, 4_000_000, 32_768
    device = torch.device(args.device)
    backend = "cuda" if device.type == "cuda" else "torch"
    A = gs.datasets.rmat(args.num_nodes, args.num_edges, seed=0, device=device)
    perm = torch.randperm(A.num_nodes, generator=torch.Generator().manual_seed(0))
    seeds = perm[: args.seeds].to(device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"device: {name}; graph {A.num_nodes:,} nodes, {A.num_edges:,} edges")
    samplers = {
        mode: gs.compile(functools.partial(mh, length=args.length, fuse=fuse), backend=backend)
        for mode, fuse in (("fused", True), ("unrolled", False))
    }
    first = {
        m: [
            b.out
            for b in gs.DataLoader(A, s, seeds[: 4 * args.batch_size], args.batch_size, seed=0)
        ]
        for m, s in samplers.items()
    }
    same = all(torch.equal(x, y) for x, y in zip(first["fused"], first["unrolled"]))
    print(f"fused walks identical to the unrolled program's: {same}")
    if args.super_batch:
        sb = [
            b.out
            for b in gs.DataLoader(
                A,
                samplers["fused"],
                seeds[: 4 * args.batch_size],
                args.batch_size,
                seed=0,
                super_batch=args.super_batch,
            )
        ]
        same = same and all(torch.equal(x, y) for x, y in zip(sb, first["fused"]))
        print(f"super-batched {args.super_batch} identical too: {same}")
    rows = []
    modes = [(m, s, None) for m, s in samplers.items()]
    if args.super_batch:
        modes.insert(
            1, (f"fused, super-batched {args.super_batch}", samplers["fused"], args.super_batch)
        )
    for mode, sampler, n in modes:
        kw = {} if n is None else {"super_batch": n}
        load = gs.DataLoader(A, sampler, seeds, args.batch_size, seed=0, **kw)
        epoch(load, device)  # warm-up: compile, caches
        times = [epoch(load, device) for _ in range(args.repeats)]
        nodes = sampler.program(A, seeds[: args.batch_size]).nodes
        row = {
            "mode": mode,
            "super_batch": n,
            "epoch_s": statistics.median(times),
            "epoch_s_all": times,
            "ir_nodes": len(nodes),
            "kernels_per_batch": None
            if n
            else kernels_per_batch(sampler, A, seeds[: args.batch_size], device),
        }
        rows.append(row)
        print(
            f"  {mode:26s} epoch {row['epoch_s']:.4f} s, {row['ir_nodes']} IR nodes, "
            f"{row['kernels_per_batch']} kernels per mini-batch",
            flush=True,
        )
    speedup = rows[-1]["epoch_s"] / rows[0]["epoch_s"]
    print(f"fused / unrolled: {speedup:.1f}x faster")
    record = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": name,
        "torch": torch.__version__,
        "commit": git_commit(ROOT),
        "command": " ".join(
            ["python", "benchmarks/fused_walk.py"] + (sys.argv[1:] if argv is None else list(argv))
        ),
        "graph": f"rmat({args.num_nodes}, {args.num_edges}, seed=0)",
        "seeds": args.seeds,
        "batch_size": args.batch_size,
        "length": args.length,
        "workload": "Metropolis-Hastings",
        "identical": same,
        "results": rows,
        "fused_speedup": speedup,
    }
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"fused_walk{'_quick' if args.quick else ''}_rmat_{device.type}.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {path}")
    if not same:
        raise SystemExit("fused walks differ from the unrolled program's")


if __name__ == "__main__":
    main()
