"""The runtime's ablation (issue 11; gSampler's Figure 10 on the new runtime), as a call of
the harness (``python -m gsample.bench``).

GraphSAGE [25, 10] and LADIES 3 x 4000 on the products-sized R-MAT, cumulative
configurations of ``gs.compile(..., runtime=Options(...))`` on the CUDA backend (the torch
one on the CPU), each a harness mode:

1. ``interpreted``: ``Options(lowered=False)``: the IR run node by node, every op checking
   its inputs, sizes read back op by op (the runtime before lowering);
2. ``lowered``: ``Options(boundary_checks=False, sync_free=False, cuda_graphs=False,
   overlap=False)``;
3. ``+ boundary checks``: ``Options(sync_free=False, cuda_graphs=False, overlap=False)``;
4. ``+ sync-free``: ``Options(cuda_graphs=False, overlap=False)``;
5. ``+ CUDA graphs``: ``Options(overlap=False)``;
6. ``+ two in flight``: ``Options()``: the loader keeps two calls in flight, one's host work
   overlapping the other's device work (``gsample.runtime.overlap``);
7. ``+ super-batched N`` for each ``--super-batch`` (default 16 64).

The harness checks they draw the same samples, times them (kernels and host syncs per
mini-batch on a GPU) and writes ``benchmarks/results/ablation_runtime_<graph>_<device>_<UTC>
.json`` and a PNG per workload.

    python benchmarks/ablation_runtime.py --seeds 98304 --repeats 3      # GPU, half an epoch
    python benchmarks/ablation_runtime.py --device cpu --graph rmat:20000:200000 \\
        --seeds 4096 --repeats 1 --super-batch 4 --out /tmp/abl
"""

import functools
import sys

import gsample as gs
from gsample.bench import Mode, cli
from gsample.runtime import Options

CONFIGS = [
    ("interpreted", Options(lowered=False)),
    ("lowered", Options(boundary_checks=False, sync_free=False, cuda_graphs=False, overlap=False)),
    ("+ boundary checks", Options(sync_free=False, cuda_graphs=False, overlap=False)),
    ("+ sync-free", Options(cuda_graphs=False, overlap=False)),
    ("+ CUDA graphs", Options(overlap=False)),
    ("+ two in flight", Options()),
]


def configurations(w, device, args):
    backend = "cuda" if device.type == "cuda" else "torch"
    modes = {
        c: Mode(
            functools.partial(gs.compile(w.fn, backend=backend, runtime=o), **w.kw), {}, "compiled"
        )
        for c, o in CONFIGS
    }
    for n in args.super_batch:
        modes[f"+ super-batched {n}"] = Mode(
            modes["+ two in flight"].sampler, {"super_batch": n, **w.loader}, "super"
        )
    return modes


def main(argv=None):
    return cli.main(
        argv,
        modes=configurations,
        name="ablation_runtime",
        workloads=["graphsage", "ladies"],
        peers=[],
        super_batch=[16, 64],
    )


if __name__ == "__main__":
    sys.exit(main())
