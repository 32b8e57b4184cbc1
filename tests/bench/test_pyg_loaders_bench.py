"""``benchmarks/pyg_loaders.py``: the rows it compares run interleaved, round by round, and a
quick CPU run writes every row, its ratios, and strict negatives none of which is an edge."""

import json
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import pyg_loaders  # noqa: E402  (a script folder, put on the path above)


def test_rounds_alternate_and_each_run_is_timed_once_a_round():
    calls = []
    runs = {name: (lambda name=name: calls.append(name)) for name in "abc"}
    times = pyg_loaders.interleaved(runs, 3, pyg_loaders.torch.device("cpu"))
    # a warm-up each, then the rounds, every other one reversed
    assert calls == list("abc") + list("abc") + list("cba") + list("abc")
    assert {k: len(v) for k, v in times.items()} == {"a": 3, "b": 3, "c": 3}


def test_the_ratio_is_the_median_of_the_rounds_ratios():
    # one round in which the baseline alone was slowed: the medians' ratio (2.0 / 1.0)
    # would call it 2x, the rounds say 2x, 2x and 0.5x
    assert pyg_loaders.paired_ratio([2.0, 2.0, 2.0], [1.0, 1.0, 4.0]) == 2.0
    assert pyg_loaders.paired_ratio([1.0, 3.0], [1.0, 1.0]) == 2.0


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_quick_run_writes_every_row(tmp_path):
    pyg_loaders.main(["--quick", "--device", "cpu", "--repeats", "1", "--out", str(tmp_path)])
    got = json.loads((tmp_path / "pyg_loaders_quick_cpu.json").read_text())
    rows = got["rows"]
    for name in ("shared", "disjoint", "temporal"):
        for mode in ("one", "super"):
            assert rows[f"{name}/{mode}"]["seconds"] > 0
    for mode in ("one", "super"):
        assert rows[f"temporal/{mode}"]["ratio_to_shared"] > 0
        assert rows[f"disjoint/{mode}"]["ratio_to_shared"] > 0
    assert rows["link_loader"]["ratio_to_node_loader"] > 0
    assert rows["node_loader/super"]["ratio_to_one_at_a_time"] > 0
    link = rows["link_loader"]
    assert link["strict_negatives"] > 0 and link["strict_negatives_that_are_edges"] == 0
    assert got["command"].startswith("python ") and got["graph"]["name"] == "quick"


def test_the_cpu_comparison_with_pyg_writes_its_rows(tmp_path):
    """``benchmarks/pyg_cpu.py``: gsample's node and link loaders, and PyG's where it has a
    sampling backend (else the record says why not)."""
    import pyg_cpu

    got = pyg_cpu.main(
        ["--rmat", "2000", "20000", "--seeds", "512", "--edges", "256", "--repeats", "1"]
        + ["--out", str(tmp_path)]
    )
    assert json.loads((tmp_path / "pyg_cpu_rmat2000x20000_1t.json").read_text()) == got
    for row in ("node", "link"):
        assert got["rows"][f"gsample {row}"]["seconds"] > 0
    if got["pyg_backend"] is None:
        assert got["peers_not_run"] == pyg_cpu.NO_PYG and "PyG node" not in got["rows"]
    else:
        assert got["rows"]["gsample link"]["ratio_to_pyg"] > 0
