"""``benchmarks/cpu_super_batch.py``: each workload one mini-batch at a time and
super-batched on the CPU, with the page faults and the system time each mode costs, and
whether its samples are the one-at-a-time mode's."""

import json
import pathlib
import sys

import pytest
import torch

import gsample as gs

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import cpu_super_batch  # noqa: E402  (a script folder, put on the path above)


def test_a_small_run_records_every_mode_with_its_faults(tmp_path):
    threads = torch.get_num_threads()
    out = tmp_path / "r.json"
    argv = ["--graph", "rmat:3000:30000", "--workloads", "pass", "shadow"]
    argv += ["--super-batch", "2", "4", "--batches", "4", "--repeats", "1", "--out", str(out)]
    record = cpu_super_batch.main(argv)
    torch.set_num_threads(threads)
    assert json.loads(out.read_text()) == record
    rows = record["rows"]
    assert [(r["workload"], r["super_batch"]) for r in rows] == [
        (w, n) for w in ("pass", "shadow") for n in (None, 2, 4)
    ]
    for r in rows:
        assert r["same_samples"], r  # super-batches draw the mini-batches' own samples
        assert r["epoch_s"] > 0 and r["user_s"] >= 0 and r["system_s"] >= 0
        assert isinstance(r["minor_faults"], int) and r["minor_faults"] >= 0
    assert record["threads"] == 1 and record["graph"] == "rmat:3000:30000"


def test_samples_that_differ_are_told_apart():
    A = gs.datasets.rmat(200, 2000, seed=0)
    s = []
    for seed in (0, 1):
        gs.manual_seed(seed)
        s.append(A[:, torch.arange(8)].individual_sample(3))
    assert cpu_super_batch.same([[s[0]]], [[s[0]]])
    assert not cpu_super_batch.same([[s[0]]], [[s[1]]])
    assert not cpu_super_batch.same([[s[0]]], [])


def test_a_bad_graph_names_the_argument(capsys):
    with pytest.raises(SystemExit):
        cpu_super_batch.main(["--graph", "cora"])
    assert "--graph" in capsys.readouterr().err
