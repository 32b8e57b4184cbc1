"""W1 GraphSAGE [25, 10] and W4 LADIES 3 x 4000 on the products-sized graph, four modes, one run.

DESIGN §8 on a GPU: an R-MAT graph of 2.4M nodes and 120M edges generated with a fixed seed
on the device (or ``--snap``, or a smaller ``--num-nodes`` / ``--num-edges``), 196,608
seeds per epoch in mini-batches of 512. Per workload, in one process:

1. ``plain PyTorch``: the sampler written directly with torch ops on the CSC tensors
   (``benchmarks/baselines.py``; its own random stream, same semantics and sizes);
2. ``gsample eager``: the torch-backend ops on the device's tensors;
3. ``compiled, torch backend``: ``gs.compile(fn)``;
4. ``compiled, cuda backend``: ``gs.compile(fn, backend="cuda")`` (skipped off CUDA).

Modes 2-4 draw the same samples (identical for GraphSAGE; for LADIES at least 99.9% of
edges, as the determinism contract allows weighted draws); the script checks that on a few
mini-batches before timing. Figures per (workload, mode): epoch time (median of ``--repeats`` after one
warm-up epoch, the same mini-batches every epoch), sampled edges per second, peak device
memory; once per run: the graph generation time and the device's random-gather bandwidth
(``x[idx]``, random int64 ``idx``; bytes of ``idx`` read, values gathered and written),
the physical bound of a sampler. Writes JSON (device, date, command) and a PNG bar chart
of the epoch times to ``--out``; prints a table last.

    python benchmarks/gpu_workloads.py                                   # full size, CUDA
    python benchmarks/gpu_workloads.py --device cpu --num-nodes 20000 --num-edges 200000 \
        --seeds 4096
"""
import functools
import pathlib
import statistics
import sys
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import gsample as gs  # noqa: E402
# epoch_time also puts examples/ on sys.path
from epoch_time import (benchmark_parser, device_name, epoch, sync, timed,  # noqa: E402
                        write_record)
from common import seed_nodes  # noqa: E402
from graphsage import graphsage  # noqa: E402
from ladies import ladies, normalize  # noqa: E402
import baselines  # noqa: E402

MODES = ("plain PyTorch", "gsample eager", "compiled, torch backend", "compiled, cuda backend")


# ----------------------------------------------------------------------------- set-up
def load(args, device):
    """``(graph, generation seconds, seeds)``: the graph is generated on ``device``."""
    if args.snap:
        t, A = timed(lambda: gs.datasets.read_snap(args.snap).to(device), device)
    else:
        t, A = timed(lambda: gs.datasets.rmat(args.num_nodes, args.num_edges, seed=0,
                                              device=device), device)
    return A, t, seed_nodes(A.num_nodes, args.seeds).to(device)


def gather_bandwidth(device, src_elems, idx_elems, dtype, repeats=10):
    """GB/s of ``x[idx]``: ``src_elems`` values of ``dtype``, ``idx_elems`` random int64
    indices; bytes = idx read + values read + values written (median of ``repeats``)."""
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.empty(src_elems, dtype=dtype, device=device)
    x.copy_(torch.arange(src_elems, device=device) if not dtype.is_floating_point else
            torch.rand(src_elems, device=device, generator=g).to(dtype))
    idx = torch.randint(0, src_elems, (idx_elems,), device=device, generator=g)
    out = torch.empty(idx_elems, dtype=dtype, device=device)
    torch.index_select(x, 0, idx, out=out)                             # warm-up
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.index_select(x, 0, idx, out=out)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            times.append(timed(lambda: torch.index_select(x, 0, idx, out=out), device)[0])
    assert torch.equal(out, x[idx])
    t = statistics.median(times)
    nbytes = idx_elems * (idx.element_size() + 2 * x.element_size())
    return {"dtype": str(dtype).replace("torch.", ""), "src_elems": src_elems,
            "idx_elems": idx_elems, "bytes": nbytes, "seconds_median": t, "GB_per_s": nbytes / t / 1e9}


# ----------------------------------------------------------------------------- modes
def batch_list(A, seeds, batch_size, max_batches):
    """The mini-batches of an ``epoch_time.epoch`` epoch (a fresh loader, seed 0), in order."""
    loader = gs.DataLoader(A, lambda A, s: None, seeds, batch_size=batch_size, seed=0)
    return [b.seeds for b in loader][:max_batches]


def baseline_epoch(sampler, batches, device):
    """``(seconds, sampled edges)`` of one pass of the plain-PyTorch ``sampler`` over ``batches``."""
    start, edges = time.perf_counter(), 0
    for s in batches:
        edges += sum(b.num_edges for b in sampler(s))
    sync(device)
    return time.perf_counter() - start, edges


def agreement(x_blocks, y_blocks) -> float:
    """Share of sampled edges two runs both drew: Jaccard of their (layer, row, column,
    edge id) sets (1.0: the same samples)."""
    def edges(blocks):
        found = set()
        for i, b in enumerate(blocks):
            rows, cols, eids = b.edges()
            found |= {(i, *e) for e in zip(rows.tolist(), cols.tolist(), eids.tolist())}
        return found
    a, b = edges(x_blocks), edges(y_blocks)
    return len(a & b) / max(len(a | b), 1)


def same_samples(A, samplers, seeds, batch_size):
    """How closely every gsample sampler draws the first's samples on a few mini-batches:
    ``{name: agreement}`` (:func:`agreement` over all their edges). The determinism contract:
    1.0 for uniform samplers; at least 0.999 for weighted ones, whose probabilities may be
    rounded differently (the CUDA backend's reductions add in their own order)."""
    def draw(sampler):
        gs.manual_seed(0)
        return [b.out for b in gs.DataLoader(A, sampler, seeds, batch_size, seed=1)]
    reference = draw(next(iter(samplers.values())))
    result = {}
    for name, sampler in samplers.items():
        got = draw(sampler)
        result[name] = agreement([blk for batch in reference for blk in batch],
                                 [blk for batch in got for blk in batch])
    return result


def layer0_sizes_match(name, A, gs_sampler, base_sampler, seeds):
    """The plain-PyTorch sampler's first layer has gsample's sizes (they are not random):
    GraphSAGE edges per column, LADIES the number of rows drawn."""
    gs.manual_seed(0)
    g = gs_sampler(A, seeds)[0]
    b = base_sampler(seeds)[0]
    if name == "graphsage":
        return torch.equal(g.csc.degrees(), b.indptr[1:] - b.indptr[:-1])
    return g.shape[0] == torch.unique(b.rows).numel() and g.num_edges > 0 and b.num_edges > 0


def memory_start(device):
    if device.type != "cuda":
        return None
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    return torch.cuda.memory_allocated(device)


def memory_peak(device, resident):
    if device.type != "cuda":
        return {"peak_bytes": None, "peak_above_resident_bytes": None}
    peak = torch.cuda.max_memory_allocated(device)
    return {"peak_bytes": peak, "peak_above_resident_bytes": peak - resident}


def run_mode(mode, run_epoch, repeats, device):
    """One warm-up epoch, then ``repeats``; the figures of one (workload, mode)."""
    resident = memory_start(device)
    warm_s, _ = run_epoch()
    runs = [run_epoch() for _ in range(repeats)]
    t = statistics.median(r[0] for r in runs)
    edges = statistics.median(r[1] for r in runs)
    return {"mode": mode, "epoch_s_median": t, "epoch_s_all": [r[0] for r in runs],
            "warmup_epoch_s": warm_s, "sampled_edges": edges,
            "sampled_edges_all": [r[1] for r in runs], "sampled_edges_per_s": edges / t,
            **memory_peak(device, resident)}


# ----------------------------------------------------------------------------- output
def plot(path, results, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    workloads = list(dict.fromkeys(r["workload"] for r in results))
    fig, ax = plt.subplots(figsize=(3.2 + 2.6 * len(workloads), 4.2))
    width = 0.8 / len(MODES)
    for i, mode in enumerate(MODES):
        xs, ys = [], []
        for j, w in enumerate(workloads):
            r = next((r for r in results if r["workload"] == w and r["mode"] == mode), None)
            if r is not None:
                xs.append(j + (i - (len(MODES) - 1) / 2) * width)
                ys.append(r["epoch_s_median"])
        if xs:
            bars = ax.bar(xs, ys, width, label=mode)
            ax.bar_label(bars, fmt="%.3g", fontsize=7)
    ax.set_xticks(range(len(workloads)), workloads)
    ax.set_ylabel("epoch time, s (median)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"wrote {path}")


def table(results, gather):
    lines = [f"{'workload':20s} {'mode':26s} {'epoch s':>9s} {'edges/s':>13s} "
             f"{'peak MiB':>9s} {'x eager':>8s}"]
    for r in results:
        eager = next(x for x in results if x["workload"] == r["workload"]
                     and x["mode"] == "gsample eager")
        mem = "-" if r["peak_bytes"] is None else f"{r['peak_bytes'] / 2**20:,.0f}"
        lines.append(f"{r['workload']:20s} {r['mode']:26s} {r['epoch_s_median']:9.4f} "
                     f"{r['sampled_edges_per_s']:13,.0f} {mem:>9s} "
                     f"{eager['epoch_s_median'] / r['epoch_s_median']:8.2f}")
    for g in gather:
        lines.append(f"random gather {g['dtype']:8s} {g['GB_per_s']:8.1f} GB/s "
                     f"({g['idx_elems']:,} of {g['src_elems']:,} elements)")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- main
def main(argv=None):
    p = benchmark_parser(__doc__)
    p.set_defaults(num_nodes=2_400_000, num_edges=120_000_000, seeds=196_608, device="cuda")
    p.add_argument("--max-batches", type=int, default=None,
                   help="cap an epoch at this many mini-batches (default: all seeds)")
    p.add_argument("--modes", nargs="+", type=int, default=[1, 2, 3, 4], choices=[1, 2, 3, 4],
                   help="modes to run: 1 plain PyTorch, 2 gsample eager, 3 compiled torch, "
                        "4 compiled cuda")
    p.add_argument("--gather-elems", type=int, default=None,
                   help="source array size of the gather bandwidth (default: 2^28 on CUDA, "
                        "2^24 on the CPU); a quarter as many indices")
    p.add_argument("--check-seeds", type=int, default=2048,
                   help="seeds of the mini-batches compared between modes 2-4")
    args = p.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.cuda.set_device(device.index or 0)
    print(f"device: {device_name(device)}")

    # graph, seeds, gather bandwidth
    A, gen_s, seeds = load(args, device)
    print(f"graph: {A.num_nodes:,} nodes, {A.num_edges:,} edges, generated in {gen_s:.2f} s")
    norm_s, An = timed(lambda: normalize(A), device)
    n_src = args.gather_elems or (1 << 28 if device.type == "cuda" else 1 << 24)
    gather = [gather_bandwidth(device, n_src, n_src // 4, torch.float32),
              gather_bandwidth(device, n_src // 2, n_src // 4, torch.int64)]
    for g in gather:
        print(f"random gather {g['dtype']}: {g['GB_per_s']:.1f} GB/s")
    seeds = seeds[:args.max_batches * args.batch_size] if args.max_batches else seeds
    batches = batch_list(A, seeds, args.batch_size, args.max_batches)

    csc, ncsc = A.csc, An.csc
    workloads = {
        "graphsage": ("GraphSAGE [25, 10]", A, graphsage, {"fanouts": (25, 10)},
                      functools.partial(baselines.graphsage, csc.indptr, csc.rows, A.num_nodes,
                                        fanouts=(25, 10))),
        "ladies": ("LADIES 3 x 4000", An, ladies, {"layers": (4000,) * 3},
                   functools.partial(baselines.ladies, ncsc.indptr, ncsc.rows,
                                     An.values, An.num_nodes, layers=(4000,) * 3)),
    }
    wanted = [MODES[m - 1] for m in sorted(args.modes)]
    if device.type != "cuda" and MODES[3] in wanted:
        print(f"note: skipping mode '{MODES[3]}': it needs --device cuda")
        wanted.remove(MODES[3])

    results, checks = [], {}
    for key in args.workloads:
        name, G, fn, kwargs, base = workloads[key]
        samplers = {
            MODES[1]: functools.partial(fn, **kwargs),
            MODES[2]: functools.partial(gs.compile(fn), **kwargs),
        }
        if MODES[3] in wanted:
            samplers[MODES[3]] = functools.partial(gs.compile(fn, backend="cuda"), **kwargs)
        check = {m: s for m, s in samplers.items() if m in wanted or m == MODES[1]}
        same = same_samples(G, check, seeds[:args.check_seeds], args.batch_size)
        sizes = layer0_sizes_match(key, G, samplers[MODES[1]], base, seeds[:args.batch_size])
        checks[name] = {"agreement_with_gsample_eager": same, "plain_pytorch_layer0_sizes_match":
                        sizes}
        print(f"{name}: agreement with gsample eager: {same}; plain PyTorch layer-0 sizes "
              f"match: {sizes}")
        need = 1.0 if key == "graphsage" else 0.999          # uniform: identical samples
        assert min(same.values()) >= need, f"{name}: modes 2-4 drew other samples: {same}"
        assert sizes, f"{name}: the plain-PyTorch sampler's first layer has other sizes"
        for mode in wanted:
            if mode == MODES[0]:
                run_epoch = functools.partial(baseline_epoch, base, batches, device)
            else:
                run_epoch = functools.partial(epoch, G, samplers[mode], seeds, args.batch_size)
            r = {"workload": name, **run_mode(mode, run_epoch, args.repeats, device)}
            results.append(r)
            mem = "" if r["peak_bytes"] is None else f", peak {r['peak_bytes'] / 2**20:,.0f} MiB"
            print(f"  {mode:26s} epoch {r['epoch_s_median']:8.4f} s (warm-up "
                  f"{r['warmup_epoch_s']:.3f} s), {r['sampled_edges']:,.0f} edges, "
                  f"{r['sampled_edges_per_s']:,.0f} edges/s{mem}", flush=True)

    path = write_record(
        "gpu_workloads", args, argv, device, A, repeats=args.repeats,
        batches_per_epoch=len(batches), graph_generation_s=gen_s, normalize_s=norm_s,
        random_gather=gather, checks=checks, results=results,
        notes="plain PyTorch = benchmarks/baselines.py (torch's random stream: same sampler "
              "semantics and sizes, other samples); peak memory includes the resident graph "
              "(peak_above_resident_bytes excludes what was allocated when the mode started)")
    tag = "rmat" if not args.snap else pathlib.Path(args.snap).name.split(".")[0]
    plot(path.with_suffix(".png"), results,
         f"{tag}: {A.num_nodes:,} nodes, {A.num_edges:,} edges; {len(batches)} batches of "
         f"{args.batch_size}; {device_name(device)}")
    print()
    print(table(results, gather))


if __name__ == "__main__":
    main()
