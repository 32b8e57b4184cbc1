"""The ablation of gSampler's Figure 10: what each group of passes buys, in one run.

GraphSAGE [25, 10] and LADIES 3 x 4000 (mini-batch 512) on the synthetic products-sized graph
(R-MAT, 2.4M nodes, 120M edges, fixed seed, generated on the device; or ``--snap`` / smaller
``--num-nodes``), four cumulative configurations, each an epoch over the same mini-batches:

1. ``eager``: the sampler function called as is (every op dispatched one by one);
2. ``+ compute passes``: ``gs.compile`` with the pipeline minus layout selection (CSE,
   pre-processing, edge-map and extract-select fusion, DCE);
3. ``+ layout``: the full pipeline (layout selection with the device's calibrated costs);
4. ``+ super-batching``: the full pipeline through ``gs.DataLoader(..., super_batch=N)``,
   one row per ``--super-batch`` value (``auto``: the largest N within the loader's memory
   budget; the N it used is recorded).

Every configuration runs on the same backend (``cuda`` on a GPU: its kernels where it has
them; ``torch`` on the CPU), so the differences are the passes'. Samples are compared
across configurations on a few mini-batches before timing (the determinism contract:
identical for GraphSAGE; LADIES at least 99.9% of edges, as a layout may reduce in another
order on the GPU). Figures: epoch time (median of ``--repeats``
after a warm-up epoch), sampled edges per second, peak device memory. Writes JSON (device,
date, command) and a PNG bar chart to ``--out``.

    python benchmarks/ablation.py                                    # GPU, products-sized
    python benchmarks/ablation.py --device cpu --num-nodes 20000 --num-edges 400000 \
        --seeds 4096 --super-batch 4
"""
import functools
import pathlib
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import gsample as gs  # noqa: E402
from gsample.passes import PIPELINE  # noqa: E402
from gsample.passes.layout import select_layouts  # noqa: E402
from epoch_time import (WORKLOADS, benchmark_parser, device_name, loader_epoch,  # noqa: E402
                        timed, write_record)
from gpu_workloads import load, run_mode, same_samples  # noqa: E402
from ladies import normalize  # noqa: E402

CONFIGS = ("eager", "+ compute passes", "+ layout", "+ super-batching")
#: the pipeline of configuration 2: every pass but layout selection
COMPUTE_PASSES = [entry for entry in PIPELINE if entry[0] is not select_layouts]


def samplers(fn, kwargs, backend, super_batches):
    """Configuration -> (sampler, super_batch) for one workload (one configuration 4 per
    entry of ``super_batches``)."""
    def on(backend_fn):
        @functools.wraps(backend_fn)
        def run(A, seeds):
            with gs.use_backend(backend):
                return backend_fn(A, seeds, **kwargs)
        return run
    compiled = gs.compile(fn, backend=backend)        # configurations 3 and 4: one trace
    full = functools.partial(compiled, **kwargs)
    configs = {
        CONFIGS[0]: (on(fn), None),
        CONFIGS[1]: (on(gs.compile(fn, passes=COMPUTE_PASSES, backend=backend)), None),
        CONFIGS[2]: (on(compiled), None),
    }
    for n in super_batches:
        configs[f"{CONFIGS[3]} (N={n})"] = (full, n)
    return configs


def run_config(A, sampler, seeds, batch_size, super_batch, repeats, device):
    """Warm-up epoch, then ``repeats`` epochs (``gpu_workloads.run_mode``): median seconds,
    edges, memory, and the super-batch size the loader used."""
    loaders = []

    def one():
        loaders.append(gs.DataLoader(A, sampler, seeds, batch_size=batch_size, seed=0,
                                     **({"super_batch": super_batch} if super_batch else {})))
        return loader_epoch(loaders[-1])
    r = run_mode(None, one, repeats, device)
    del r["mode"]
    return {"super_batch_size": loaders[-1].super_batch_size if super_batch else None, **r}


def plot(path, results, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    workloads = list(dict.fromkeys(r["workload"] for r in results))
    fig, axes = plt.subplots(1, len(workloads), figsize=(4.2 * len(workloads), 4.0),
                             squeeze=False)
    for ax, w in zip(axes[0], workloads):
        rows = [r for r in results if r["workload"] == w]
        base = rows[0]["epoch_s_median"]
        bars = ax.bar(range(len(rows)), [base / r["epoch_s_median"] for r in rows],
                      color=(["#999999", "#4c72b0", "#55a868"] + ["#c44e52"] * len(rows))[:len(rows)])
        ax.bar_label(bars, labels=[f"{base / r['epoch_s_median']:.2f}x\n"
                                   f"{r['epoch_s_median']:.3g} s" for r in rows], fontsize=7)
        ax.set_xticks(range(len(rows)), [r["config"] for r in rows], rotation=30, ha="right",
                      fontsize=8)
        ax.set_ylabel("speed-up over eager (epoch time)")
        ax.set_title(w, fontsize=9)
        ax.margins(y=0.2)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"wrote {path}")


def main(argv=None):
    p = benchmark_parser(__doc__)
    p.set_defaults(num_nodes=2_400_000, num_edges=120_000_000, seeds=196_608, device="cuda")
    p.add_argument("--super-batch", nargs="+", default=["auto"],
                   help="N for configuration 4, or 'auto' (the largest N within the loader's "
                        "default memory budget); several values give one row each")
    p.add_argument("--check-seeds", type=int, default=2048,
                   help="seeds of the mini-batches compared between configurations")
    args = p.parse_args(argv)
    super_batches = [n if n == "auto" else int(n) for n in args.super_batch]
    device = torch.device(args.device)
    backend = "cuda" if device.type == "cuda" else "torch"
    print(f"device: {device_name(device)}; backend {backend}")
    A, gen_s, seeds = load(args, device)
    print(f"graph: {A.num_nodes:,} nodes, {A.num_edges:,} edges, generated in {gen_s:.2f} s")
    norm_s, An = timed(lambda: normalize(A), device)
    results, checks = [], {}
    for key in args.workloads:
        name, fn, kwargs, normalized = WORKLOADS[key]
        G = An if normalized else A
        configs = samplers(fn, kwargs, backend, super_batches)
        same = same_samples(G, {c: s for c, (s, sb) in configs.items() if sb is None},
                            seeds[:args.check_seeds], args.batch_size)
        checks[name] = same
        print(f"{name}: agreement with eager: {same}")
        need = 1.0 if key == "graphsage" else 0.999          # uniform: identical samples
        assert min(same.values()) >= need, f"{name}: configurations drew other samples"
        for config, (sampler, sb) in configs.items():
            r = run_config(G, sampler, seeds, args.batch_size, sb, args.repeats, device)
            results.append({"workload": name, "config": config, **r})
            mem = "" if r["peak_bytes"] is None else f", peak {r['peak_bytes'] / 2**20:,.0f} MiB"
            chosen = "" if sb is None else f" (N used: {r['super_batch_size']})"
            print(f"  {config:26s} epoch {r['epoch_s_median']:8.4f} s (warm-up "
                  f"{r['warmup_epoch_s']:.3f} s), {r['sampled_edges_per_s']:,.0f} edges/s{mem}{chosen}",
                  flush=True)
    path = write_record("ablation", args, argv, device, A, repeats=args.repeats, backend=backend,
                        super_batch=args.super_batch, graph_generation_s=gen_s,
                        normalize_s=norm_s, checks=checks, results=results)
    tag = "rmat" if not args.snap else pathlib.Path(args.snap).name.split(".")[0]
    plot(path.with_suffix(".png"), results,
         f"ablation, {tag}: {A.num_nodes:,} nodes, {A.num_edges:,} edges, mini-batch "
         f"{args.batch_size}; {device_name(device)}")


if __name__ == "__main__":
    main()
