"""The ablation of gSampler's Figure 10 (what each group of passes buys), as a call of the
harness (``python -m gsample.bench``).

GraphSAGE [25, 10] and LADIES 3 x 4000 on the products-sized R-MAT, four cumulative
configurations on one backend (``cuda`` on a GPU, ``torch`` on the CPU), each a harness mode:

1. ``eager``: the sampler function called as is (every op dispatched one by one);
2. ``+ compute passes``: ``gs.compile`` with the pipeline minus layout selection (CSE,
   pre-processing, edge-map and extract-select fusion, DCE);
3. ``+ layout``: the full pipeline (layout selection with the device's calibrated costs);
4. ``+ super-batching (N)``: the full pipeline through ``gs.DataLoader(..., super_batch=N)``
   for each ``--super-batch`` (default ``auto``).

The harness checks the configurations draw eager's samples, times them and writes
``benchmarks/results/ablation_<graph>_<device>_<UTC>.json`` and a PNG per workload; options
are its own (``python -m gsample.bench --help``).

    python benchmarks/ablation.py                                    # GPU, products-sized
    python benchmarks/ablation.py --device cpu --graph rmat:20000:400000 --seeds 4096 \\
        --super-batch 4
"""

import functools
import sys

import gsample as gs
from gsample.bench import Mode, cli
from gsample.passes import PIPELINE
from gsample.passes.layout import select_layouts

#: the pipeline of configuration 2: every pass but layout selection
COMPUTE_PASSES = [entry for entry in PIPELINE if entry[0] is not select_layouts]


def configurations(w, device, args):
    """The four cumulative configurations of workload ``w`` as harness modes."""
    backend = "cuda" if device.type == "cuda" else "torch"

    def on(fn):
        @functools.wraps(fn)
        def run(A, seeds):
            with gs.use_backend(backend):
                return fn(A, seeds, **w.kw)

        return run

    compiled = gs.compile(w.fn, backend=backend)
    modes = {
        "eager": Mode(on(w.fn), {}, "eager"),
        "+ compute passes": Mode(
            on(gs.compile(w.fn, passes=COMPUTE_PASSES, backend=backend)), {}, "compiled"
        ),
        "+ layout": Mode(on(compiled), {}, "compiled"),
    }
    for n in args.super_batch:
        modes[f"+ super-batching ({n})"] = Mode(
            functools.partial(compiled, **w.kw), {"super_batch": n, **w.loader}, "super"
        )
    return modes


def main(argv=None):
    return cli.main(
        argv,
        modes=configurations,
        name="ablation",
        workloads=["graphsage", "ladies"],
        peers=[],
        super_batch=["auto"],
    )


if __name__ == "__main__":
    sys.exit(main())
