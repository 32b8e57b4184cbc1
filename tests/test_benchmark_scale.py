"""The scale benchmarks run end to end: ``benchmarks/multi_gpu.py`` with 2 gloo processes on a
tiny graph (every placement's samples identical to one process's, or it exits with an error),
and on a GPU (``-m cuda``) ``benchmarks/uva.py --quick`` and ``multi_gpu.py --quick``."""

import importlib
import json
import pathlib
import sys

import pytest
import torch

BENCH = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name):
    """``benchmarks/<name>.py`` imported by its name (spawned ranks import it so too: they
    inherit ``sys.path``)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module(name)


def test_multi_process_benchmark_on_cpus(tmp_path):
    bench = _load("multi_gpu")
    bench.main(
        [
            "--device",
            "cpu",
            "--num-nodes",
            "3000",
            "--num-edges",
            "30000",
            "--seeds",
            "1024",
            "--walk-length",
            "10",
            "--repeats",
            "1",
            "--world-sizes",
            "1",
            "2",
            "--out",
            str(tmp_path),
        ]
    )
    record = json.loads((tmp_path / "multi_gpu_rmat_cpu.json").read_text())
    rows = record["results"]
    assert {(r["world"], r["placement"]) for r in rows} == {
        (w, p) for w in (1, 2) for p in ("replicated", "shared", "partitioned")
    }
    assert all(r["identical_to_single"] and r["epoch_s"] > 0 for r in rows)
    assert (tmp_path / "multi_gpu_rmat_cpu.png").stat().st_size > 0


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_uva_benchmark_quick(tmp_path):
    _load("uva").main(["--quick", "--repeats", "1", "--out", str(tmp_path)])
    record = json.loads((tmp_path / "uva_quick_rmat_cuda.json").read_text())
    assert all(record["identical_samples"].values())
    assert record["uva_device_bytes"] < record["graph_bytes"] // 20


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_multi_gpu_benchmark_quick(tmp_path):
    _load("multi_gpu").main(["--quick", "--repeats", "1", "--out", str(tmp_path)])
    record = json.loads((tmp_path / "multi_gpu_quick_rmat_cuda.json").read_text())
    assert all(r.get("identical_to_single") for r in record["results"])
