"""The roofline's worker: ``python -m gsample.bench.roofline_worker SPEC.json OUT.json``, run
by ``python -m gsample.bench --roofline`` under Nsight Compute (:mod:`gsample.bench.ncu`).

It loads the run's graph and seeds as the harness does. First, one region per random
gather of the spec's ``gathers`` (the run's microbenchmarks again: the DRAM bytes behind
their GB/s); then, for each (workload, mode) of the spec, it samples that mode's first
mini-batches twice outside the profiler (compiles, CUDA graph captures, kernel builds) and
once more between ``cudaProfilerStart`` and ``cudaProfilerStop``; each region is opened by
the marker kernel :data:`~gsample.bench.ncu.MARKER`.
``OUT.json`` lists the regions in order: ``workload``, ``mode``, ``sampled_batches``,
``marked`` (its marker was launched: its kernels are in ncu's table), and ``why`` for one
it could not sample.
"""

from __future__ import annotations

import json
import pathlib
import sys
import traceback

import torch

import gsample as gs
from gsample.bench import cli, measure, roofline
from gsample.bench.ncu import MARKER
from gsample.bench.workloads import import_repo, make_modes, repo_root, workload

__all__ = ["main", "marker_kernel"]

_MARKER_SOURCE = f'extern "C" __global__ void {MARKER}(int *x) {{ if (x[0] < 0) x[0] = 0; }}'


def marker_kernel():
    """A launcher of the region marker: a one-thread kernel named :data:`MARKER`, built now
    (outside the profiled regions) with CuPy."""
    # import here: CuPy, optional (the CUDA backend's own dependency)
    import cupy

    kernel = cupy.RawKernel(_MARKER_SOURCE, MARKER)
    buf = cupy.zeros(1, dtype=cupy.int32)

    def launch():
        kernel((1,), (1,), (buf,))

    launch()
    cupy.cuda.Device().synchronize()
    return launch


_ON = [False]


def _profiling(gpu: bool, on: bool) -> None:
    """``cudaProfilerStart`` / ``cudaProfilerStop`` (a GPU only), each once per region: a
    stop after a region that failed before its start stops nothing."""
    if gpu and on != _ON[0]:
        (torch.cuda.profiler.start if on else torch.cuda.profiler.stop)()
        _ON[0] = on


def _drain(loader) -> None:
    """One epoch of ``loader``, its outputs dropped as they come (as a training loop does)."""
    for b in loader:
        b.out  # noqa: B018 - drawn, then dropped


def _gather(g: dict, device, launch) -> dict:
    """A region of one random gather of the run's microbenchmark ``g`` (``name``,
    ``elem_bytes``, ``source_bytes``, ``num_indices``): the DRAM bytes behind its GB/s."""
    region = {"workload": roofline.MICROBENCHMARK, "mode": g["name"], "sampled_batches": 1}
    region["marked"] = False
    gpu = device.type == "cuda"
    try:
        x, idx, out = roofline.gather_inputs(
            device, g["elem_bytes"], g["source_bytes"], g["num_indices"]
        )
        torch.index_select(x, 0, idx, out=out)  # warm-up
        measure.sync(device)
        _profiling(gpu, True)
        launch()
        region["marked"] = True
        torch.index_select(x, 0, idx, out=out)
        measure.sync(device)
    except Exception as e:  # recorded; the workloads still run
        region["why"] = f"{e!r}"
    finally:
        _profiling(gpu, False)
    x = idx = out = None
    if gpu:
        torch.cuda.empty_cache()  # the source back to the samplers
    return region


def main(argv=None) -> int:
    """Sample the spec's regions; 0 once ``OUT.json`` is written (a region that failed says
    why there: the others are still measured), 2 on bad arguments."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print("usage: python -m gsample.bench.roofline_worker SPEC.json OUT.json", file=sys.stderr)
        return 2
    spec = json.loads(pathlib.Path(argv[0]).read_text())
    device = torch.device(spec.get("device", "cuda"))
    gpu = device.type == "cuda"
    import_repo(repo_root())
    # off a GPU (the tests) the regions run without profiler or marker
    launch = marker_kernel() if gpu else lambda: None
    # the gathers' 8 GiB sources come and go before the graph takes its share of memory
    regions = [_gather(g, device, launch) for g in spec.get("gathers", ())]
    A, _ = cli.load_graph(spec["graph"], device, spec.get("graph_cache"))
    seeds, _ = cli.epoch_seeds(spec["graph"], A, device)
    seeds = seeds[: spec["seeds"]]
    for job in spec["jobs"]:
        fanouts = spec.get("fanouts")
        w = workload(
            job["workload"],
            A,
            spec["batch_size"],
            spec["walk_length"],
            tuple(fanouts) if fanouts else None,
        )
        modes = make_modes(w, device, spec["super_batch"], spec["modes"])
        for label, n in job["batches"].items():
            region = {"workload": job["workload"], "mode": label, "sampled_batches": n}
            mode = modes.get(label)
            if mode is None:
                region["why"] = "not one of the harness's default modes: the worker cannot build it"
                regions.append(region)
                continue
            region["marked"] = False
            try:
                loader = gs.DataLoader(
                    w.G, mode.sampler, seeds[: n * w.batch_size], w.batch_size, seed=0,
                    **mode.options,
                )  # fmt: skip
                for _ in range(2):
                    _drain(loader)
                measure.sync(device)
                _profiling(gpu, True)
                launch()
                region["marked"] = True
                _drain(loader)
                measure.sync(device)
                region["sampled_batches"] = len(loader)
            except Exception as e:  # recorded per region; the others still run
                region["why"] = f"{e!r}"
                region["traceback"] = traceback.format_exc()[-2000:]
            finally:
                _profiling(gpu, False)
            regions.append(region)
            print(f"roofline worker: {job['workload']}, {label}: {n} mini-batches", flush=True)
    pathlib.Path(argv[1]).write_text(json.dumps({"regions": regions}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
