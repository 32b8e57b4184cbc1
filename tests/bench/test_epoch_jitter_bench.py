"""``benchmarks/epoch_jitter.py``: epochs timed one by one with the full collections that ran in
each, the collector as it is and then frozen, and the interpreter left as it was."""

import gc
import json
import pathlib
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import epoch_jitter  # noqa: E402  (a script folder, put on the path above)


class _Loader:
    """Two mini-batches an epoch; a full collection in epochs listed in ``collect_in``."""

    def __init__(self, collect_in):
        self.collect_in, self.epoch = set(collect_in), 0

    def __iter__(self):
        if self.epoch in self.collect_in:
            gc.collect()
        self.epoch += 1
        yield from (0, 1)


def test_each_epochs_full_collections_are_its_own():
    # epoch 0 is the warm-up: its collection is not counted
    row = epoch_jitter.epochs(_Loader({0, 2, 3}), 4, torch.device("cpu"))
    assert row["full_collections"] == [0, 1, 1, 0]
    assert len(row["epoch_s_all"]) == 4 and row["max_over_median"] >= 1.0
    assert all(ms >= 0 for ms in row["full_collection_ms"])


def test_a_quick_run_writes_both_collectors_rows_and_unfreezes(tmp_path):
    before = gc.get_freeze_count()
    quick = ["--quick", "--device", "cpu", "--epochs", "2", "--super-batch", "4"]
    epoch_jitter.main([*quick, "--out", str(tmp_path)])
    assert gc.get_freeze_count() == before
    got = json.loads((tmp_path / "epoch_jitter_quick_cpu.json").read_text())
    assert set(got["rows"]) == {"one/gc", "super4/gc", "one/frozen", "super4/frozen"}
    for row in got["rows"].values():
        assert len(row["epoch_s_all"]) == 2 and row["epoch_s_median"] > 0
        assert len(row["full_collections"]) == 2
    assert got["command"].startswith("python ") and got["graph"]["name"] == "quick"
