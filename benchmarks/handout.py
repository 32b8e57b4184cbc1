"""Host time per mini-batch of a super-batch's hand-out, on the CPU, without the sampling.

After a super-batch is sampled, every one of its mini-batches costs the host some Python: its
matrices cut out of the super-batch's decoded fields (``block_diagonal._parts``: views, a
``CSC`` each), its output assembled as the mini-batch program's (``block_diagonal.Assemble``:
each block a ``gs.Matrix``), and its ``gs.Batch`` handed out by ``gs.DataLoader``. On a GPU that
host work, not the kernels, bounds a super-batched epoch. This script times each stage alone on
outputs sampled beforehand (GraphSAGE on a small undirected R-MAT): ``--copies`` mini-batches a
super-batch, each stage repeated, the best of ``--repeats`` rounds, in microseconds per
mini-batch; ``total`` is their sum, ``epoch`` a whole super-batched CPU epoch's (sampling
included) for scale. ``split`` makes each field's pieces when first read (the default,
``block_diagonal.LAZY_PIECES``); ``split_every_field_read`` reads every field of every
block after it (what a loop reading them all pays in the end), ``split_eager`` makes them
all at once (``LAZY_PIECES`` off, the hand-out before it). ``facts`` is what a compiled
super-batch keeps with each mini-batch's blocks for the loader
(``gsample.formats.derived``: each block's ``all_nodes`` and the ids its columns were sliced
with, the seeds bound to the first block's), kept as ``Assemble`` and the loader keep them,
on fresh blocks (a super-batch split beforehand for each call). Writes
``handout_<device>.json`` (device, date, command) to ``--out``.

    python benchmarks/handout.py             # 64 mini-batches a super-batch
    python benchmarks/handout.py --quick     # seconds
"""

import argparse
import functools
import gc
import pathlib
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))

import graphsage  # (the example, put on the path above)

import gsample as gs
from gsample.bench.report import script_record, write_record
from gsample.compiler.compiled import wrap
from gsample.formats.derived import COLUMNS, bind_seeds
from gsample.ir import Op
from gsample.ir.graph import Ref
from gsample.runtime import block_diagonal as bd

ROOT = pathlib.Path(__file__).resolve().parents[1]


class _Replay:
    """Stands for a loader's super-batcher: every run returns the same outputs (sampled
    once), so the loader's epoch is its hand-out alone."""

    def __init__(self, outs: list):
        self.outs = outs

    def run(self, parts: list, epoch_seed: int, first: int, observe=None, meanwhile=None):
        if meanwhile is not None:  # the seeds' views the loader makes while a device samples
            meanwhile()
        return self.outs[: len(parts)]


def best_us(fn, per: int, repeats: int, inner: int) -> float:
    """The best of ``repeats`` rounds of ``inner`` calls of ``fn``, in microseconds per
    ``per`` (mini-batches a call hands out)."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        best = min(best, (time.perf_counter() - t) / (inner * per))
    return best * 1e6


def presample(A, fanouts, seeds: torch.Tensor, batch_size: int, copies: int) -> tuple:
    """The blocks of ``copies`` mini-batches sampled one at a time, and per layer the
    super-batch's matrix, its bounds and its fields decoded as a GPU's split kernel leaves
    them (each batch's, one after another)."""
    fn = gs.compile(functools.partial(graphsage.graphsage, fanouts=fanouts))
    outs = []
    for b in range(copies):
        with gs.base.random.batch_scope(0, b):
            outs.append(fn(A, seeds[b * batch_size : (b + 1) * batch_size]))
    layers = []
    for layer in range(len(fanouts)):
        parts = [o[layer]._csc for o in outs]
        M = bd.join_matrices(parts, A.num_nodes)
        bnd = bd.bounds(M, A.num_nodes, copies)
        decoded = [torch.cat([p.indptr for p in parts]), torch.cat([p.rows for p in parts])]
        for field in ("col_ids", "row_ids"):
            got = [getattr(p, field) for p in parts]
            decoded.append(None if got[0] is None else torch.cat(got))
        layers.append((M, bnd, decoded))
    return fn, outs, layers


def same(a, b) -> bool:
    """Whether two CSCs hold equal fields (``None`` where the other's is)."""
    for field in ("indptr", "rows", "row_ids", "col_ids", "values", "eids"):
        x, y = getattr(a, field), getattr(b, field)
        if (x is None) != (y is None) or (x is not None and not torch.equal(x, y)):
            return False
    return a.num_nodes == b.num_nodes


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer, smaller runs (a smoke run)")
    p.add_argument("--copies", type=int, default=64, help="mini-batches per super-batch")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--super-batches", type=int, default=6, help="a replayed epoch's")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = p.parse_args(argv)
    copies, repeats, inner = args.copies, args.repeats, 200
    if args.quick:
        copies, repeats, inner = min(copies, 8), 2, 5
    torch.set_num_threads(1)
    fanouts = (25, 10)
    A = gs.datasets.undirected_rmat(20_000, 200_000, seed=0)
    n = A.num_nodes
    seeds = gs.datasets.uniform_seeds(n, copies * args.batch_size, seed=0)
    fn, outs, layers = presample(A, fanouts, seeds, args.batch_size, copies)

    def split():
        return [bd._parts(M, bnd, n, copies, *dec) for M, bnd, dec in layers]

    fields = ("indptr", "rows", "row_ids", "col_ids", "values", "eids")

    def split_read():
        made = split()
        for part in made:
            for m in part:
                for f in fields:
                    getattr(m, f)
        return made

    def split_eager():
        lazy = bd.LAZY_PIECES
        bd.LAZY_PIECES = False
        try:
            return split()
        finally:
            bd.LAZY_PIECES = lazy

    per_layer = split()
    names = [f"block{i}" for i in range(len(fanouts))]
    assemble = bd.Assemble([Ref(k) for k in names], frozenset(names), copies, wrap)
    inputs = dict(zip(names, per_layer))
    got = assemble(**inputs)  # the hand-out gives the mini-batches' own blocks
    for mine, own in zip(got, outs):
        for a, b in zip(mine, own):
            assert same(a._csc, b._csc), "the hand-out's blocks differ from the mini-batches'"

    # an epoch of --super-batches super-batches, unshuffled (a shuffle's sort is the epoch's,
    # not a mini-batch's): the loader's own work per mini-batch
    many = torch.arange(args.super_batches * copies * args.batch_size) % n
    loader = gs.DataLoader(A, fn, many, args.batch_size, shuffle=False, super_batch=copies)
    loader._super = _Replay(got)
    gc.collect()
    parts = list(seeds[: copies * args.batch_size].split(args.batch_size))
    # what the compiled GraphSAGE keeps with its blocks (gsample.passes.super_batch's
    # block_facts): block 0's columns are the seeds, block 1's its own column ids, which
    # are also block 0's all_nodes
    kept = (
        (names[0], COLUMNS, ("seeds",)),
        (names[1], COLUMNS, ("cols", names[1])),
        (names[0], Op.ALL_NODES, ("cols", names[1])),
    )
    keeps = bd.Assemble([Ref(k) for k in names], frozenset(names), copies, wrap, kept)
    # the facts go to fresh blocks, as a run's do: a super-batch's split and assembled
    # afresh for every call (made before the timing)
    fresh = []
    for _ in range(1 + repeats * max(1, inner // 10)):
        mine = dict(zip(names, split()))
        fresh.append((mine, assemble(**mine)))
    fresh = iter(fresh)

    def facts():  # as Assemble._remember and the loader's bind_seeds keep them
        mine, out = next(fresh)
        keeps._remember(mine)
        bind_seeds(out, parts)

    rows = {
        "split": best_us(split, copies, repeats, inner),
        "assemble": best_us(lambda: assemble(**inputs), copies, repeats, inner),
        "facts": best_us(facts, copies, repeats, max(1, inner // 10)),
        "loader": best_us(lambda: list(loader), len(loader), repeats, max(1, inner // 20)),
    }
    rows["total"] = sum(rows.values())
    rows["split_every_field_read"] = best_us(split_read, copies, repeats, inner)
    rows["split_eager"] = best_us(split_eager, copies, repeats, inner)
    sampled = gs.DataLoader(A, fn, seeds, args.batch_size, seed=0, super_batch=copies)
    rows["epoch"] = best_us(lambda: list(sampled), len(sampled), max(2, repeats // 2), 1)
    for k, v in rows.items():
        print(f"{k:>9}: {v:8.2f} us per mini-batch", flush=True)
    meta = script_record(
        torch.device("cpu"),
        ROOT,
        argv,
        python=sys.version.split()[0],
    )
    record = {
        **meta,
        "workload": {
            "sampler": f"graphsage {list(fanouts)}",
            "graph": f"undirected R-MAT, {n} nodes",
            "batch_size": args.batch_size,
            "copies": copies,
            "replayed_epoch_batches": len(loader),
            "quick": args.quick,
        },
        "us_per_minibatch": rows,
    }
    write_record(record, args.out, "handout_cpu.json")
    return record


if __name__ == "__main__":
    main()
