"""The runtime's ablation (issue 11; gSampler's Figure 10 on the new runtime), one process.

GraphSAGE [25, 10] and LADIES 3 x 4000 on the products-sized R-MAT (or a smaller one),
mini-batches of 512, each configuration an epoch over the same mini-batches through
``gs.DataLoader``, cumulative:

1. ``interpreted``: ``Options(lowered=False)``: the IR run node by node, every op checking
   its inputs, sizes read back op by op (the runtime before lowering);
2. ``lowered``: ``Options(boundary_checks=False, sync_free=False, cuda_graphs=False)``;
3. ``+ boundary checks``: ``Options(sync_free=False, cuda_graphs=False)``;
4. ``+ sync-free``: ``Options(cuda_graphs=False)``;
5. ``+ CUDA graphs``: ``Options()``;
6. ``+ super-batched N`` for each ``--super-batch``.

All configurations run the CUDA backend (the torch backend on the CPU) and draw the same
samples (checked first on a few mini-batches). Figures as ``benchmarks/runtime.py``: epoch
time (median of ``--repeats`` after a warm-up), kernels and host syncs per mini-batch.
Writes ``ablation_runtime_<graph>_<device>.json`` and a PNG to ``--out``.

    python benchmarks/ablation_runtime.py                       # GPU, products-sized
    python benchmarks/ablation_runtime.py --device cpu --num-nodes 20000 --num-edges 200000 \\
        --seeds 4096 --repeats 1 --super-batch 4 --out /tmp/abl
"""
import functools
import pathlib
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "examples"))

import gsample as gs  # noqa: E402
from gsample.runtime import Options  # noqa: E402
from common import seed_nodes  # noqa: E402
from epoch_time import benchmark_parser, device_name, write_record  # noqa: E402
from gpu_workloads import agreement  # noqa: E402
from runtime import (_super, _versions, bar_chart, epoch_loader, measure,  # noqa: E402
                     profile_counts)

CONFIGS = [
    ("interpreted", Options(lowered=False)),
    ("lowered", Options(boundary_checks=False, sync_free=False, cuda_graphs=False)),
    ("+ boundary checks", Options(sync_free=False, cuda_graphs=False)),
    ("+ sync-free", Options(cuda_graphs=False)),
    ("+ CUDA graphs", Options()),
]


def main(argv=None):
    from graphsage import graphsage
    from ladies import ladies, normalize
    p = benchmark_parser(__doc__)
    p.set_defaults(num_nodes=2_400_000, num_edges=120_000_000, seeds=196_608, device="cuda")
    p.add_argument("--super-batch", nargs="+", type=_super, default=[16, 64])
    p.add_argument("--profile-batches", type=int, default=8)
    args = p.parse_args(argv)
    device = torch.device(args.device)
    backend = "cuda" if device.type == "cuda" else "torch"
    A = gs.datasets.rmat(args.num_nodes, args.num_edges, seed=0, device=device)
    seeds = seed_nodes(A.num_nodes, args.seeds).to(device)
    bs = args.batch_size
    work = {"graphsage": (graphsage, A, {"fanouts": (25, 10)}),
            "ladies": (ladies, normalize(A), {"layers": (4000,) * 3})}
    rows = []
    print(f"device: {device_name(device)}")
    for name in args.workloads:
        fn, G, kw = work[name]
        samplers = {c: functools.partial(gs.compile(fn, backend=backend, runtime=o), **kw)
                    for c, o in CONFIGS}
        first = None
        for config, sampler in samplers.items():        # the same samples, every config
            gs.manual_seed(0)
            got = [m for b in gs.DataLoader(G, sampler, seeds[:bs * 3], bs, seed=1)
                   for m in b.out]
            first = first or got
            same = agreement(first, got)
            assert same >= (1.0 if name == "graphsage" else 0.999), (name, config, same)
        runs = [(c, samplers[c], {}) for c, _ in CONFIGS]
        runs += [(f"+ super-batched {N}", samplers["+ CUDA graphs"], {"super_batch": N})
                 for N in args.super_batch]
        for config, sampler, extra in runs:
            epoch = epoch_loader(G, sampler, seeds, bs, **extra)
            r = measure(epoch, args.repeats)
            size = epoch.loader.super_batch_size or 1
            prof = epoch_loader(G, sampler, seeds[:bs * max(size, args.profile_batches)], bs,
                                **({"super_batch": size} if extra else {}))
            prof()                                    # its own warm-up
            counts = profile_counts(prof, max(size, args.profile_batches), device)
            rows.append({"workload": name, "config": config, **r, **counts})
            print(f"{name:9s} {config:24s} epoch {r['epoch_s_median']:8.4f} s  "
                  f"kernels/b {counts['kernels']}  syncs/b {counts['syncs']}", flush=True)
    path = write_record("ablation_runtime", args, argv, device, A, results=rows,
                        versions=_versions())
    bar_chart(path.with_suffix(".png"), rows, f"{A.num_nodes:,} nodes; {device_name(device)}",
              lambda r: r["config"], lambda r: r["epoch_s_median"], "epoch s")


if __name__ == "__main__":
    main()
