"""The scale benchmarks run end to end: ``benchmarks/multi_gpu.py`` and ``train_ddp.py`` with 1
and 2 gloo processes on a tiny graph (every placement's and mode's samples identical to one
process's, or it exits with an error; the JSON fields the docs cite), and on a GPU (``-m cuda``)
``benchmarks/uva.py --quick``, ``host_link.py --quick``, ``multi_gpu.py --quick`` and
``train_ddp.py --quick`` (and, where nvcc is, ``host_link.py``'s kernels compiled to PTX)."""

import importlib
import json
import pathlib
import shutil
import subprocess
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


#: a tiny run of every placement, workload and mode: mini-batches capped below the epoch
#: (partitioned ones further), so that the fingerprints of capped runs compare by index
TINY = [
    "--device",
    "cpu",
    "--graph",
    "rmat:3000:30000",
    "--seeds",
    "1024",
    "--fanouts",
    "5",
    "5",
    "--sage-batch",
    "128",
    "--walk-batch",
    "128",
    "--walk-length",
    "10",
    "--super-batch",
    "2",
    "--max-batches",
    "6",
    "--max-batches-shared",
    "6",
    "--max-batches-partitioned",
    "4",
    "--max-batches-partitioned-walk",
    "4",
    "--repeats",
    "1",
    "--world-sizes",
    "1",
    "2",
]


def test_multi_process_benchmark_on_cpus(tmp_path):
    bench = _load("multi_gpu")
    bench.main(TINY + ["--out", str(tmp_path)])
    record = json.loads((tmp_path / "multi_gpu_rmat3000x30000_cpu.json").read_text())
    rows = record["results"]
    modes = ("one at a time", "super-batched 2")
    assert {(r["world"], r["placement"], r["workload"], r["mode"]) for r in rows} == {
        (w, p, n, m)
        for w in (1, 2)
        for p in ("replicated", "shared", "partitioned")
        for n in ("graphsage", "deepwalk")
        for m in modes
    }
    for r in rows:
        assert r["identical_to_single"] and r["epoch_s"] > 0 and r["edges_per_s"] > 0, r
        cap = 4 if r["placement"] == "partitioned" else 6
        assert r["timed_batches"] == r["checked_batches"] == cap, r
        assert r["epoch_batches"] == 8 and r["batches_per_rank"] == cap // r["world"], r
    for name in ("graphsage", "deepwalk"):
        base = record["one_gpu_device_best"][name]
        one = [
            r
            for r in rows
            if r["world"] == 1 and r["placement"] == "replicated" and r["workload"] == name
        ]
        best = min(one, key=lambda r: r["epoch_s"])
        assert base == {"epoch_s": best["epoch_s"], "mode": best["mode"]}
        assert best["best"] and best["scaling_efficiency"] == pytest.approx(1.0)
        for r in rows:
            if r["workload"] == name:
                assert r["scaling_efficiency"] == pytest.approx(
                    base["epoch_s"] / (r["world"] * r["epoch_s"])
                )
    for key in ("device", "date", "command", "torch", "gsample", "commit", "graph", "spawn_s"):
        assert key in record, key
    assert record["graph"]["spec"] == "rmat:3000:30000" and record["graph"]["seeds"] == 1024
    assert (tmp_path / "multi_gpu_rmat3000x30000_cpu.png").stat().st_size > 0
    assert not list(tmp_path.glob("world*"))  # the ranks' files are cleaned up


def test_fingerprints_tell_a_changed_sample():
    bench = _load("multi_gpu")
    rows = [
        {
            "world": 1,
            "workload": "graphsage",
            "mode": "one at a time",
            "fingerprints": {"0": [3, 7]},
        },
        {
            "world": 2,
            "workload": "graphsage",
            "mode": "one at a time",
            "fingerprints": {"0": [3, 7]},
        },
        {"world": 2, "workload": "graphsage", "mode": "super", "fingerprints": {"0": [3, 8]}},
        {"world": 2, "workload": "graphsage", "mode": "x", "fingerprints": {"1": [3, 7]}},
    ]
    bench.compare(rows)
    assert [r["identical_to_single"] for r in rows] == [True, True, False, False]


def test_shared_graph_is_reused(tmp_path):
    """A second run given the same --graph-dir maps the graph written by the first."""
    bench = _load("multi_gpu")
    folder = tmp_path / "g"
    first = bench.build_shared("rmat:500:3000", 100, folder, torch.device("cpu"))
    again = bench.build_shared("rmat:500:3000", 50, folder, torch.device("cpu"))
    assert again == json.loads((folder / "graph.json").read_text())
    assert again["meta"]["build_s"] == first["meta"]["build_s"]  # not built again
    other = bench.build_shared("rmat:600:3000", 50, folder, torch.device("cpu"))
    assert other["num_nodes"] == 600 and other["meta"]["spec"] == "rmat:600:3000"


def test_ddp_training_benchmark_on_cpus(tmp_path):
    bench = _load("train_ddp")
    bench.main(["--device", "cpu", "--quick", "--world-sizes", "1", "2", "--out", str(tmp_path)])
    record = json.loads((tmp_path / "train_ddp_quick_rmat5000x50000_cpu.json").read_text())
    runs = {r["world"]: r for r in record["runs"]}
    assert sorted(runs) == [1, 2]
    for world, r in runs.items():
        assert len(r["epochs"]) == 2 and r["batches_per_rank"] == 16 // world
        assert all(r["median"][k] > 0 for k in ("epoch", "sample", "gather", "model"))
        # one rank owns everything: nothing is exchanged; two ranks fetch about half
        share = r["epochs"][-1]["remote_row_share"]
        assert share == 0 if world == 1 else 0.3 < share < 0.7
        assert sum(r["feature_rows_per_rank"]) == record["graph"]["nodes"]
        assert r["loss_falls"]
        assert r["epoch_ratio"] == pytest.approx(r["median"]["epoch"] / runs[1]["median"]["epoch"])
    for key in ("device", "date", "command", "torch", "commit", "graph", "seeds", "features"):
        assert key in record, key
    assert not list(tmp_path.glob("train_ddp_world*"))


def test_ddp_feature_rows_are_the_same_whatever_the_split():
    bench = _load("train_ddp")
    chunk = bench.CHUNK
    bench.CHUNK = 64  # several chunks, a bound inside one
    try:
        whole = bench.planted_rows(0, 300, 8, 4, 1.0, torch.device("cpu"))
        parts = [
            bench.planted_rows(a, b, 8, 4, 1.0, torch.device("cpu"))
            for a, b in ((0, 100), (100, 101), (101, 300))
        ]
    finally:
        bench.CHUNK = chunk
    assert torch.equal(torch.cat(parts), whole)
    # the features carry the class: nearest centroid reads it well above chance (1/8)
    y = _load("train_scale").hashed_labels(torch.arange(300), 8)
    centroids = torch.stack([whole[y == c].mean(0) for c in range(8)])
    assert float((torch.cdist(whole, centroids).argmin(1) == y).float().mean()) > 0.4


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_uva_benchmark_quick(tmp_path):
    args = ["--quick", "--repeats", "1", "--workloads", "graphsage", "deepwalk"]
    _load("uva").main([*args, "--walk-length", "10", "--out", str(tmp_path)])
    record = json.loads((tmp_path / "uva_quick_rmat_cuda.json").read_text())
    assert len(record["identical_samples"]) == 4 and all(record["identical_samples"].values())
    indptr_bytes = 8 * (record["num_nodes"] + 1)  # on the device, the edges in host memory
    assert record["uva_device_bytes"] < indptr_bytes + record["graph_bytes"] // 50
    assert {r["workload"] for r in record["results"]} == {"graphsage", "deepwalk"}
    assert all(r["work"] > 0 and r["peak_device_bytes"] > 0 for r in record["results"])
    assert set(record["random_reads"]) == {"device", "uva", "uva, address order"}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_host_link_kernels_compile(tmp_path):
    """CI has no GPU: the host-link probe's CuPy source compiles to PTX."""
    src = tmp_path / "host_link.cu"
    src.write_text(_load("host_link").SOURCE)
    done = subprocess.run(
        ["nvcc", "-ptx", "-arch=sm_90", str(src), "-o", str(tmp_path / "host_link.ptx")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_host_link_benchmark_quick(tmp_path):
    record = _load("host_link").main(["--quick", "--out", str(tmp_path)])
    assert json.loads((tmp_path / "host_link_quick_cuda.json").read_text())["units"]
    assert all(r["units_per_s"] > 0 for r in record["units"] + record["regions"])
    assert all(r["drawn_per_s"] > 0 and r["sorted_per_s"] > 0 for r in record["order"])
    assert record["latency_us"]["pinned"] > 0


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_multi_gpu_benchmark_quick(tmp_path):
    _load("multi_gpu").main(["--quick", "--repeats", "1", "--out", str(tmp_path)])
    record = json.loads((tmp_path / "multi_gpu_quick_rmat100000x2000000_cuda.json").read_text())
    assert all(r.get("identical_to_single") for r in record["results"])
    assert all("error" not in r for r in record["results"]), record["results"]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_ddp_training_benchmark_quick(tmp_path):
    _load("train_ddp").main(["--quick", "--world-sizes", "1", "--out", str(tmp_path)])
    record = json.loads((tmp_path / "train_ddp_quick_rmat5000x50000_cuda.json").read_text())
    assert record["runs"][0]["loss_falls"]


def test_features_benchmark_quick(tmp_path):
    """The feature-placement benchmark runs (on a CPU: the device placements), and its rows
    agree with the float32 table's."""
    record = _load("features").main(["--quick", "--out", str(tmp_path)])
    name = f"features_quick_rmat_{'cuda' if torch.cuda.is_available() else 'cpu'}.json"
    assert json.loads((tmp_path / name).read_text())["results"] == record["results"]
    done = [r for r in record["results"] if not r.get("skipped")]
    assert {r["placement"] for r in done} >= {"device float32", "device bfloat16"}
    assert all(r["agrees"] and r["rows_per_s"] > 0 for r in done)
    assert record["batches"] == 8 and record["rows_per_batch"] > 256
    if torch.cuda.is_available():  # pinned host memory, with and without a cache
        assert {r["mode"] for r in done} == {"device", "uva"}
        assert any(r["hit_rate"] is not None for r in done)
