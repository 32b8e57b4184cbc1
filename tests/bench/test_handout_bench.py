"""``benchmarks/handout.py``: the hand-out of a super-batch's mini-batches timed stage by stage
on outputs sampled beforehand (which it checks are the mini-batches' own), in microseconds per
mini-batch."""

import json
import pathlib
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import handout  # noqa: E402  (a script folder, put on the path above)


def test_the_replayed_loader_hands_out_the_replayed_outputs():
    outs = [["a"], ["b"], ["c"]]
    replay = handout._Replay(outs)
    assert replay.run([1, 2], 0, 0) == [["a"], ["b"]]


def test_a_quick_run_times_every_stage_and_writes_its_record(tmp_path):
    threads = torch.get_num_threads()
    record = handout.main(["--quick", "--out", str(tmp_path)])
    torch.set_num_threads(threads)
    got = json.loads((tmp_path / "handout_cpu.json").read_text())
    rows = got["us_per_minibatch"]
    assert set(rows) == {
        "split",
        "assemble",
        "facts",
        "loader",
        "total",
        "split_every_field_read",
        "split_eager",
        "epoch",
    }
    assert all(v > 0 for v in rows.values())
    stages = rows["split"] + rows["assemble"] + rows["facts"] + rows["loader"]
    assert abs(rows["total"] - stages) < 1e-9
    assert got["workload"]["copies"] == 8 and got["workload"]["replayed_epoch_batches"] == 48
    assert got["command"].startswith("python ") and record["us_per_minibatch"] == rows
