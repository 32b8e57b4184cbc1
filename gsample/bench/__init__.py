"""One benchmark harness (docs/architecture.md §8): every workload, its gsample modes
and its peers side by side with the device's physical bound, in one process.

    python -m gsample.bench --quick --device cpu          # CI smoke run, < 2 minutes
    python -m gsample.bench --device cpu                  # the CPU set (web-NotreDame)
    python -m gsample.bench --device cpu --graph rmat:300000:3000000
    python -m gsample.bench --device cuda                 # W1-W5, products-sized R-MAT

Per workload (:mod:`gsample.bench.workloads`; W1 GraphSAGE, W2 DeepWalk, W3 node2vec, W4
LADIES, W5 FastGCN / ShaDow / PASS), each timed over the same seeds:

* gsample modes: ``gsample eager``, ``compiled, torch backend``, ``compiled, cuda backend``
  (a GPU only), ``compiled, super-batched N`` per ``--super-batch``; each one
  ``gs.DataLoader`` made once;
* peers (:mod:`gsample.bench.peers`): ``plain PyTorch`` (``benchmarks/baselines.py``),
  torch_cluster's ``random_walk``, PyG's ``NeighborLoader`` / ``ShaDowKHopSampler`` (CPU,
  with torch-sparse or pyg-lib), DGL (where it imports); a peer that cannot run is recorded
  with the reason.

Before timing, the gsample modes draw the first mini-batches from one seed and must agree with
the first mode (and, on a GPU, with eager on the CPU; and the last mode with itself drawn
again): uniform samplers exactly, weighted ones (LADIES, FastGCN, node2vec, PASS) on at least
0.999 of their edges or walk entries (docs/architecture.md §3). A disagreement or a workload that
raises makes the run exit 1 after writing its record; speed never does.

Figures (:mod:`gsample.bench.measure`) per (workload, mode): epoch seconds (median of
``--repeats`` after a warm-up, all epochs and the spread), units per second (sampled edges or
walk steps), peak memory, the machine's load average, on a GPU kernels / memcpys / host syncs
per mini-batch (``torch.profiler``), and the bound: bytes the sampler must touch over the
random-gather bandwidth measured in the same run; with ``--roofline``
(:mod:`gsample.bench.roofline`), copy and random-gather peaks from 8 GiB sources, each
workload's least bytes, and on a GPU the DRAM bytes its compiled modes' kernels move (Nsight
Compute, :mod:`gsample.bench.ncu`), as achieved GB/s, a share of the peak and a ratio to
the bound. :mod:`gsample.bench.report` writes
``benchmarks/results/bench_<graph>_<device>_<UTC>.json`` (device, date, versions, commit,
command), a PNG per workload, and the benchmarks page's table (``scripts/bench_table.py``).

The samplers and baselines are the repository's ``examples/`` and ``benchmarks/``, imported
by path: the harness needs a source checkout (or ``$GSAMPLE_REPO``), not an installed wheel.
"""

from gsample.bench.cli import main, parse, run
from gsample.bench.report import RESULT_PATTERN, readme_table, table_lines
from gsample.bench.workloads import (
    ALL_WORKLOADS,
    WALKS,
    WEIGHTED,
    HarnessError,
    Mode,
    make_modes,
    workload,
)

__all__ = [
    "ALL_WORKLOADS",
    "RESULT_PATTERN",
    "WALKS",
    "WEIGHTED",
    "HarnessError",
    "Mode",
    "main",
    "make_modes",
    "parse",
    "readme_table",
    "run",
    "table_lines",
    "workload",
]
