"""LADIES 3 x 4000 at an anchor graph's shape: its epoch against the least any LADIES can
spend on the same slices, on a GPU.

Each layer of LADIES sums, for every row of the graph with an edge in the frontier's column
slice, the squared weights of those edges: whatever the kernels, every slice edge is read
and added to its row's sum. This script takes ``--batches`` mini-batches of 512 anchor seeds,
slices their three layers as the compiled sampler draws them (the slices' edges, ``E``, and
their distinct rows, ``L``), and times, on those exact slices (median of 5 each):

* ``gather``: the slice's rows and values read from the graph (what any pass over the
  slice reads);
* ``scatter_rows``: one float ``index_add_`` of the slice's squared values into a vector
  over the graph's rows (one pass of atomics, not exact: the least a dense row sum costs;
  the exact sums gsample computes take two);
* ``scatter_listed``: the same into a vector over the slice's distinct rows, their places
  given (the row map that makes them is not timed);
* ``count_rows``: an integer ``index_add_`` over the graph's rows (what finding the
  distinct rows by marking them costs at least).

Scaled to the epoch (the anchor's seeds in mini-batches of 512), ``gather`` +
``scatter_rows`` is a floor for LADIES with its row sums over the graph's rows, and
``gather`` + ``count_rows`` + ``scatter_listed`` one for LADIES that lists the rows first.
The compiled sampler's own epoch (one mini-batch at a time, a prefix of ``--prefix``
mini-batches, scaled) is measured in the same run. With ``--pinned`` the graph is also
placed in pinned host memory: the slices' gather from there (the link's floor for one pass)
and the sampler's epoch on it, its first mini-batches checked against the device graph's.

    python benchmarks/ladies_floor.py --graph papers-like --pinned
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time

import torch

import gsample as gs
from gsample.bench.report import device_name, versions, write_record
from gsample.formats.csc import gather_segments

sys.path.insert(0, __file__.rsplit("/", 2)[0] + "/examples")
import ladies as lad

ROOT = __file__.rsplit("/", 2)[0]
BATCH = 512


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--graph", choices=["papers-like", "products-like"], default="papers-like")
    p.add_argument("--batches", type=int, default=8, help="mini-batches whose slices are timed")
    p.add_argument("--prefix", type=int, default=64, help="mini-batches of the sampler's epoch")
    p.add_argument("--pinned", action="store_true", help="also in pinned host memory")
    p.add_argument("--out", default=f"{ROOT}/benchmarks/results")
    return p.parse_args(argv)


def timed(fn, *args, reps: int = 5) -> float:
    """Median seconds of ``fn(*args)`` on the GPU (CUDA events)."""
    out = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        end.record()
        torch.cuda.synchronize()
        out.append(start.elapsed_time(end) / 1e3)
    return statistics.median(out)


def gather(csc, idx: torch.Tensor) -> tuple:
    """The rows and values of the graph edges ``idx``."""
    return csc.rows[idx], csc.values[idx]


def floor(An, samp, seeds, batches: int, H=None) -> dict:
    """Per mini-batch: slice edges, distinct rows and the seconds of each floor pass."""
    csc, N, dev = An.csc, An.num_nodes, seeds.device
    hcsc = None if H is None else H.csc
    keys = ("gather", "scatter_rows", "scatter_listed", "count_rows") + (
        ("gather_pinned",) if H is not None else ()
    )
    tot = dict.fromkeys(("E", "L") + keys, 0.0)
    for b in range(batches):
        for block in samp(An, seeds[b * BATCH : (b + 1) * BATCH]):
            idx, _ = gather_segments(csc.indptr, block.col_ids.to(torch.int64))
            r = csc.rows[idx].to(torch.int64)
            w = csc.values[idx] ** 2
            uniq, loc = torch.unique(r, return_inverse=True)
            acc_n, acc_l = torch.zeros(N, device=dev), torch.zeros(uniq.numel(), device=dev)
            cnt = torch.zeros(N, dtype=torch.int32, device=dev)
            one = torch.ones(r.numel(), dtype=torch.int32, device=dev)
            tot["E"] += r.numel()
            tot["L"] += uniq.numel()
            tot["gather"] += timed(gather, csc, idx)
            tot["scatter_rows"] += timed(acc_n.index_add_, 0, r, w)
            tot["scatter_listed"] += timed(acc_l.index_add_, 0, loc, w)
            tot["count_rows"] += timed(cnt.index_add_, 0, r, one)
            if hcsc is not None:
                tot["gather_pinned"] += timed(gather, hcsc, idx, reps=3)
    return {k: v / batches for k, v in tot.items()}


def epoch(G, samp, seeds, n: int) -> float:
    """Seconds a mini-batch of the sampler, one at a time (after two untimed)."""
    for b in range(2):
        samp(G, seeds[b * BATCH : (b + 1) * BATCH])
    torch.cuda.synchronize()
    start = time.perf_counter()
    for b in range(n):
        samp(G, seeds[b * BATCH : (b + 1) * BATCH])
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / n


def same_samples(G, H, samp, seeds, n: int = 2) -> bool:
    """Whether ``H`` draws ``G``'s blocks for the first ``n`` mini-batches (same seed each)."""
    for b in range(n):
        s = seeds[b * BATCH : (b + 1) * BATCH]
        gs.manual_seed(b)
        want = samp(G, s)
        gs.manual_seed(b)
        got = samp(H, s)
        for x, y in zip(want, got):
            if not (torch.equal(x.row_ids, y.row_ids) and torch.equal(x.csc.rows, y.csc.rows)):
                return False
    return True


def main(argv=None):
    args = parse(argv)
    if not torch.cuda.is_available():
        raise SystemExit("benchmarks/ladies_floor.py: needs a CUDA GPU")
    dev = torch.device("cuda")
    start = time.perf_counter()
    A, seeds = gs.datasets.anchor_graph(args.graph, device=dev)
    An = lad.normalize(A)
    del A
    torch.cuda.synchronize()
    print(
        f"{args.graph}: {An.num_nodes:,} nodes, {An.num_edges:,} edges, built in "
        f"{time.perf_counter() - start:.1f} s",
        flush=True,
    )
    samp = gs.compile(lad.ladies, backend="cuda")
    per_epoch = -(-seeds.numel() // BATCH)
    H = None
    if args.pinned:
        start = time.perf_counter()
        H = An.to(dev, placement="uva")
        torch.cuda.synchronize()
        print(f"placed in pinned host memory in {time.perf_counter() - start:.1f} s", flush=True)
    per = floor(An, samp, seeds, args.batches, H)
    scaled = {k: v * per_epoch for k, v in per.items()}
    rows = {
        "sampler_device_s": epoch(An, samp, seeds, args.prefix) * per_epoch,
        "floor_dense_s": scaled["gather"] + scaled["scatter_rows"],
        "floor_listed_s": scaled["gather"] + scaled["count_rows"] + scaled["scatter_listed"],
    }
    if H is not None:
        rows["sampler_pinned_s"] = epoch(H, samp, seeds, max(1, args.prefix // 2)) * per_epoch
        rows["floor_pinned_s"] = scaled["gather_pinned"]
        rows["pinned_samples_identical"] = same_samples(An, H, samp, seeds)
    for k, v in {**scaled, **rows}.items():
        print(f"{k}: {v:,.3f}" if isinstance(v, float) else f"{k}: {v}", flush=True)
    record = {
        "benchmark": "benchmarks/ladies_floor.py",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": device_name(dev),
        "versions": versions(),
        "command": "python " + " ".join(["benchmarks/ladies_floor.py", *sys.argv[1:]]),
        "graph": args.graph,
        "mini_batches_an_epoch": per_epoch,
        "per_mini_batch": per,
        "epoch": {**scaled, **rows},
    }
    path = write_record(record, args.out, f"ladies_floor_{args.graph}_cuda.json")
    print(f"record: {path}")


if __name__ == "__main__":
    main()
