"""``benchmarks/train_scale.py``: the end-to-end training benchmark runs on a CPU at a tiny size
with the papers-scale model (3-layer SAGEConv, hidden 256, fanouts [15, 10, 5]), its loss falls
and its held-out accuracy is well above chance; its planted labels are balanced and its
planted features carry them; its held-out nodes are disjoint from the training seeds. On a GPU
(``-m cuda``) it runs on ``products-like`` for a few mini-batches."""

import importlib
import itertools
import json
import pathlib
import statistics
import sys

import pytest
import scipy.stats
import torch

import gsample as gs

BENCH = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"

TINY = ["--num-nodes", "4000", "--num-edges", "40000", "--batch-size", "256"]
TINY += ["--eval-nodes", "1024", "--lr", "0.01", "--baseline-batches", "4"]


def _load():
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module("train_scale")


def test_training_learns_and_splits_the_epoch(tmp_path):
    bench = _load()
    record = bench.main(TINY + ["--epochs", "5", "--out", str(tmp_path)])
    epochs = record["epochs"]
    assert len(epochs) == 5
    # the loss falls epoch by epoch (a planted, learnable task), and within the first epochs
    losses = [e["loss"] for e in epochs]
    assert all(b < a for a, b in itertools.pairwise(losses)), losses
    assert epochs[-1]["loss_last_tenth"] < epochs[0]["loss_first_tenth"] - 0.5
    chance = record["chance"]
    assert chance == 1 / 32
    assert record["held_out_accuracy_before"] < 3 * chance
    assert epochs[-1]["held_out_accuracy"] > 6 * chance, epochs[-1]["held_out_accuracy"]
    for e in epochs:
        assert e["batches"] == 8  # ceil(0.6 * 3078 / 256)
        assert 0 < e["model"] <= e["epoch"]
        assert e["exposed"] == pytest.approx(e["epoch"] - e["model"])
        assert e["sample"] > 0 and e["gather"] > 0
    base = record["model_only"]
    assert base["batches"] == 4 and base["per_batch"] > 0
    # timed after each epoch (interleaved), the median of those after the warm-up epoch
    assert len(base["per_batch_runs"]) == 5
    assert base["per_batch"] == pytest.approx(statistics.median(base["per_batch_runs"][1:]))
    assert base["epoch"] == pytest.approx(base["per_batch"] * 8)
    assert record["epoch_over_model_only"] == pytest.approx(
        record["median"]["epoch"] / base["epoch"]
    )
    # the model and the loader apart: the loader's own pass (no model) is timed, and one
    # after the other costs their sum
    solo = record["loader_only"]
    assert solo["batches"] == 4 and solo["per_batch"] > 0
    assert "gpu_busy_ms_per_batch" not in solo  # profiled on a GPU only
    assert record["serial_over_model_only"] == pytest.approx(
        (base["per_batch"] + solo["per_batch"]) / base["per_batch"]
    )
    assert record["feature_mode"] == "device"  # read in place: no second copy of the table
    assert record["seeds"] == {"train": 1846, "held_out": 1024}
    on_disk = json.loads((tmp_path / "train_scale_rmat_cpu.json").read_text())
    assert on_disk["command"] and on_disk["date"] and "CPU" in on_disk["device"]
    assert on_disk["epochs"] == epochs


def test_max_batches_caps_the_epoch(tmp_path):
    record = _load().main(
        TINY + ["--epochs", "1", "--max-batches", "3", "--super-batch", "2", "--out", str(tmp_path)]
    )
    assert record["epochs"][0]["batches"] == 3
    assert record["model_only"]["epoch"] == pytest.approx(record["model_only"]["per_batch"] * 3)


def test_the_pipeline_option_is_passed_to_the_loader_and_recorded(tmp_path, monkeypatch):
    """``--pipeline`` names the loader's ``pipeline=`` (``--no-pipeline``: ``off``); the JSON
    keeps the option (``args``) and what the training loader resolved it to; every choice
    trains on the same mini-batches (the same loss)."""
    bench = _load()
    assert bench.parse([]).pipeline == "auto"
    assert bench.parse(["--no-pipeline"]).pipeline == "off"
    asked = []
    real = gs.DataLoader

    def loader(*args, **kwargs):
        asked.append(kwargs["pipeline"])
        return real(*args, **kwargs)

    monkeypatch.setattr(bench.gs, "DataLoader", loader)
    tiny = TINY + ["--epochs", "1", "--max-batches", "2", "--baseline-batches", "2"]
    losses = {}
    for option, passed, resolved in (
        ("auto", "auto", "threads"),  # (on a CPU)
        ("threads", True, "threads"),
        ("stream", "stream", "stream"),
        ("off", False, "off"),
    ):
        asked.clear()
        record = bench.main(tiny + ["--pipeline", option, "--out", str(tmp_path)])
        assert (asked[0], type(asked[0])) == (passed, type(passed))  # (the training loader's)
        assert record["args"]["pipeline"] == option and record["pipeline"] == resolved
        losses[option] = record["epochs"][0]["loss"]
    assert len(set(losses.values())) == 1, losses


def test_planted_labels_are_balanced_and_features_carry_them():
    bench = _load()
    n, classes = 64_000, 32
    y = bench.planted_labels(n, classes, "cpu")
    assert torch.equal(y, bench.planted_labels(n, classes, "cpu", chunk=777))  # chunk-free
    counts = y.bincount(minlength=classes)
    p = scipy.stats.chisquare(counts.numpy()).pvalue  # uniform over the classes
    assert p > 0.01, p
    x = bench.planted_features(y, 128, classes, 0.3, torch.float32, chunk=5000)
    assert x.shape == (n, 128) and x.dtype == torch.float32
    # the class means estimated from the table are the centroids: nearest-mean accuracy
    # is high (the task is learnable) but not perfect (the loss keeps falling)
    means = torch.stack([x[y == c].mean(0) for c in range(classes)])
    acc = float((torch.cdist(x, means).argmin(1) == y).float().mean())
    assert 0.75 < acc < 0.97, acc
    # noise is N(0, 1) around the class mean
    resid = x - means[y]
    assert float(resid.std()) == pytest.approx(1.0, abs=0.01)


def test_held_out_nodes_are_disjoint_from_the_training_seeds():
    bench = _load()
    args = bench.parse(TINY)
    A, train, held_out, x, y, _ = bench.load(args, torch.device("cpu"))
    order = gs.datasets.uniform_seeds(A.num_nodes, train.numel() + held_out.numel(), seed=0)
    assert torch.equal(torch.cat([train, held_out]), order)
    assert not set(train.tolist()) & set(held_out.tolist())
    assert train.numel() == int(0.6 * A.num_nodes) and held_out.numel() == 1024
    assert x.shape == (A.num_nodes, 128) and torch.equal(
        y, bench.planted_labels(A.num_nodes, 32, "cpu")
    )


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_products_like_on_the_gpu(tmp_path):
    record = _load().main(
        [
            "--device",
            "cuda",
            "--graph",
            "products-like",
            "--epochs",
            "2",
            "--max-batches",
            "40",
            "--out",
            str(tmp_path),
        ]
    )
    assert record["seeds"]["train"] == 196_608
    assert record["epochs"][-1]["loss"] < record["epochs"][0]["loss"]
    assert record["epochs"][-1]["held_out_accuracy"] > 3 * record["chance"]
    assert record["feature_mode"] == "device"
    for apart in (record["model_only"], record["loader_only"]):  # profiled apart
        assert apart["gpu_busy_ms_per_batch"] > 0 and apart["kernels_per_batch"] > 0


def test_the_pipeline_benchmark_times_the_model_alone_between_its_epochs(tmp_path):
    """``benchmarks/train_pipeline.py``: the baseline is timed once a round, between the two
    modes' epochs (a median of the rounds after the warm-up), on a whole epoch's mini-batches
    drawn by a loader of its own, so the two modes still train on the same batches (equal
    first-epoch losses on the CPU)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    bench = importlib.import_module("train_pipeline")
    args = ["--num-nodes", "3000", "--features", "8", "--hidden", "16", "--batch-size", "256"]
    report = bench.main(args + ["--repeats", "2", "--out", str(tmp_path)])
    record = json.loads((tmp_path / "train_pipeline_cpu.json").read_text())
    base = record["model_only"]
    batches = -(-int(0.6 * 3000) // 256)
    assert base["batches"] == batches and len(base["per_batch_runs"]) == 2
    assert base["per_batch"] == pytest.approx(statistics.median(base["per_batch_runs"]))
    assert base["epoch"] == pytest.approx(base["per_batch"] * batches)
    assert record["not_pipelined_over_model_only"] == pytest.approx(
        report["not pipelined"]["epoch"] / base["epoch"]
    )
    losses = [report[m]["first_epoch_loss"] for m in ("pipelined", "not pipelined")]
    assert losses[0] == losses[1]
