"""The benchmark scripts that call the harness (``benchmarks/runtime.py``, ``ablation.py``,
``ablation_runtime.py``, ``compile_time.py``) run their configurations through it: each
configuration is a mode of the record, checked to draw the first one's samples."""

import json
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
TINY = [
    "--device",
    "cpu",
    "--graph",
    "rmat:2000:20000",
    "--seeds",
    "256",
    "--batch-size",
    "128",
    "--repeats",
    "1",
    "--no-plots",
    "--workloads",
    "graphsage",
]


def _record(out, prefix):
    (path,) = out.glob(f"{prefix}_*.json")
    return json.loads(path.read_text())


@pytest.mark.parametrize(
    "script, modes",
    [
        ("ablation", ["eager", "+ compute passes", "+ layout", "+ super-batching (2)"]),
        (
            "ablation_runtime",
            [
                "interpreted",
                "lowered",
                "+ boundary checks",
                "+ sync-free",
                "+ CUDA graphs",
                "+ two in flight",
                "+ super-batched 2",
            ],
        ),
        ("compile_time", ["gsample eager", "compiled", "compiled, all-CSC layouts"]),
        ("runtime", ["compiled, torch backend", "compiled, super-batched 2", "plain PyTorch"]),
    ],
)
def test_script_runs_its_configurations_through_the_harness(tmp_path, capsys, script, modes):
    module = __import__(script)
    assert module.main([*TINY, "--super-batch", "2", "--out", str(tmp_path)]) == 0
    rec = _record(tmp_path, script)
    assert rec["ok"] and rec["harness"] == "gsample.bench"
    e = rec["workloads"]["graphsage"]
    assert list(e["modes"]) == modes
    assert set(e["agreement"].values()) == {1.0}  # uniform: the same samples
    out = capsys.readouterr().out
    assert "| graphsage |" in out and f"{script}_" in out
    if script == "compile_time":
        c = rec["workloads"]["graphsage"]["compile"]
        # the record's fields, not their order: which call is faster is a benchmark's
        # finding, and under load a warm call can be as slow as the cold one
        fields = ("cold_first_call_s", "trace_and_passes_s", "warm_call_s", "eager_call_s")
        assert all(0 < c[k] < 60 for k in fields)
        assert len(c["cold_first_call_s_all"]) == len(c["trace_and_passes_s_all"]) >= 1
    if script == "runtime":
        assert "(not judged on the CPU)" in out


def test_runtime_verdicts_judge_the_fastest_mode_of_each_kind():
    import runtime

    fast = {"kind": "super", "epoch_s_median": 0.01, "epoch_s_full": 0.01}
    slow = {
        "kind": "compiled",
        "epoch_s_median": 0.5,
        "epoch_s_full": 0.5,
        "kernels_per_batch": 9,
        "syncs_per_batch": 1,
    }
    plain = {"kind": "plain", "epoch_s_median": 1.0, "epoch_s_full": 1.0}
    rec = {
        "workloads": {
            "graphsage": {"modes": {"one": slow, "sb": fast, "plain PyTorch": plain}},
            "fastgcn": {"modes": {"one": slow, "plain PyTorch": plain}},
        }
    }
    got = {(w, m): met for w, _, m, met in runtime.verdicts(rec)}
    assert got == {
        ("graphsage", "sb"): True,
        ("graphsage", "one"): False,
        ("fastgcn", "one"): False,
    }
