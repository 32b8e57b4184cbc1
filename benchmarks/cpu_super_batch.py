"""Super-batching on the CPU, and where its time goes: each mode's epoch with the minor
page faults and the system time it costs.

A super-batch of N mini-batches makes every array of a sampler N times larger. Past the C
library's thresholds (glibc: 128 KiB to 32 MiB, raised as blocks are freed) such arrays are
mapped afresh and given back on every call, so each one's pages fault in again, and the
kernel's time doing so shows as system time. This benchmark times the harness's workloads
(``gsample.bench.workloads``) one mini-batch at a time and super-batched on one graph, in one
process, and records per mode the epoch's seconds (the best of ``--repeats``), its user and
system seconds and its minor page faults (``resource.getrusage``), and whether its samples
are the one-at-a-time mode's. Run it again under ``GLIBC_TUNABLES`` to see what the faults
cost (the record keeps the variable)::

    python benchmarks/cpu_super_batch.py --workloads pass shadow --threads 1
    T=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296
    GLIBC_TUNABLES=$T:glibc.malloc.top_pad=268435456 \\
        python benchmarks/cpu_super_batch.py --workloads pass shadow --threads 1

(Set all three: a tunable set alone turns glibc's raising of the mapping threshold off,
and every block of 128 KiB or more is then mapped afresh, one at a time included.)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time

import torch

import gsample as gs
from gsample.bench import workloads as W


def epoch(w: W.Workload, sampler, pool: torch.Tensor, options: dict) -> list:
    """One epoch's outputs over ``pool`` (in order, loader seed 1)."""
    loader = gs.DataLoader(w.G, sampler, pool, w.batch_size, shuffle=False, seed=1, **options)
    return [b.out for b in loader]


def measured(w: W.Workload, sampler, pool, options: dict, repeats: int) -> tuple:
    """(the best epoch's seconds, its user and system seconds and minor page faults, the
    outputs): after a warm-up epoch (the program built, its sizes seen)."""
    out = epoch(w, sampler, pool, options)
    best = None
    for _ in range(repeats):
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        epoch(w, sampler, pool, options)
        t, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
        row = {
            "epoch_s": t,
            "user_s": r1.ru_utime - r0.ru_utime,
            "system_s": r1.ru_stime - r0.ru_stime,
            "minor_faults": r1.ru_minflt - r0.ru_minflt,
        }
        best = row if best is None or t < best["epoch_s"] else best
    return best, out


def same(x: list, y: list) -> bool:
    """Whether two epochs drew the same samples (every mini-batch's output)."""
    return len(x) == len(y) and all(
        W.agreement(W.matrices(a), W.matrices(b)) == 1.0 for a, b in zip(x, y)
    )


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--graph", default="rmat:300000:3000000", help="rmat:NODES:EDGES")
    p.add_argument("--workloads", nargs="+", default=["pass", "shadow"])
    p.add_argument("--super-batch", type=int, nargs="+", default=[8])
    p.add_argument("--batches", type=int, default=None, help="mini-batches an epoch")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default=None, help="write the record as JSON here")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    W.import_repo(W.repo_root())
    try:
        _, nodes, edges = args.graph.split(":")
        A = gs.datasets.rmat(int(nodes), int(edges), seed=0)
    except ValueError:
        p.error(f"--graph: expected rmat:NODES:EDGES, got {args.graph!r}")
    rows = []
    for name in args.workloads:
        w = W.workload(name, A)
        sampler = W.make_modes(w, torch.device("cpu"), [], ("torch",))
        sampler = next(iter(sampler.values())).sampler
        batches = args.batches or (40 if name == "pass" else 20)
        g = torch.Generator().manual_seed(0)
        pool = torch.randperm(A.num_nodes, generator=g)[: batches * w.batch_size]
        ref = None
        for n in [None, *args.super_batch]:
            options = {"super_batch": n, **w.loader} if n else {}
            row, out = measured(w, sampler, pool, options, args.repeats)
            ref = out if ref is None else ref
            row.update(workload=name, super_batch=n, batches=batches, same_samples=same(out, ref))
            rows.append(row)
            print(
                f"{name:>8} {'sb ' + str(n) if n else 'one at a time':>13}: "
                f"{row['epoch_s']:.3f} s (user {row['user_s']:.3f}, system "
                f"{row['system_s']:.3f}), {row['minor_faults']:,} minor faults, "
                f"same samples: {row['same_samples']}"
            )
    record = {
        "benchmark": "cpu_super_batch",
        "command": "python " + " ".join(sys.argv) if argv is None else None,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "threads": args.threads,
        "graph": args.graph,
        "glibc_tunables": os.environ.get("GLIBC_TUNABLES"),
        "rows": rows,
    }
    if args.out:
        with open(args.out, "w") as f:
            json.dump(record, f, indent=1)
    return record


if __name__ == "__main__":
    main()
