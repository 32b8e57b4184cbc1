"""``benchmarks/ab_trees.py``: two trees of gsample (a commit of this checkout, and the
checkout) timed in one run, each in its own process, every job in both."""

import json
import pathlib
import statistics
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))


def test_both_trees_time_every_job_and_the_record_names_them(tmp_path, capsys):
    if subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True).returncode:
        pytest.skip("not a git checkout: no base commit to archive")
    import ab_trees

    from gsample.bench.report import git_commit

    jobs = ["graphsage:1", "deepwalk:2"]
    new = str(ROOT / "benchmarks" / "..")  # this checkout, spelled another way
    argv = ["--base-commit", "HEAD", "--new", new, "--quick", "--jobs", *jobs]
    argv += ["--out", str(tmp_path)]
    assert ab_trees.main(argv) == 0
    rec = json.loads((tmp_path / "ab_trees_cpu.json").read_text())
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    assert rec["trees"] == {"base": head, "new": git_commit(ROOT)}  # ids, not names
    assert rec["command"].endswith(" ".join(argv)) and rec["rounds"] == 2
    for label in ("base", "new"):
        rows = rec["rows"][label]
        assert [r["job"] for r in rows] == jobs
        for r in rows:
            assert r["batches"] >= 1
            # --quick: 2 epochs a round, 2 rounds (base, new, then new, base)
            assert len(r["epoch_s_all"]) == 4 and all(t > 0 for t in r["epoch_s_all"])
            assert len(r["round_medians"]) == 2
            assert r["epoch_s_median"] == statistics.median(r["epoch_s_all"])
            assert r["gpu_busy_ms"] is None  # the CPU: no kernels
    out = capsys.readouterr().out
    assert "| graphsage:1 |" in out and "| deepwalk:2 |" in out


def test_a_base_tree_without_gsample_is_refused(tmp_path):
    """An empty folder: its process would import an installed gsample, not the tree's."""
    import ab_trees

    argv = ["--base", str(tmp_path), "--quick", "--jobs", "graphsage:1", "--out", str(tmp_path)]
    with pytest.raises(SystemExit, match=r"ab_trees: (gsample came from|the tree) "):
        ab_trees.main(argv)
    assert not (tmp_path / "ab_trees_cpu.json").exists()


def test_a_base_folder_is_recorded_by_the_name_given(tmp_path):
    """``--base`` with ``--base-name``: the record names the folder's tree by that name (the
    commit a device's copy was archived from), not by the folder's path."""
    if subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True).returncode:
        pytest.skip("not a git checkout: no commit to archive")
    import ab_trees

    base = tmp_path / "base"
    base.mkdir()
    archive = subprocess.run(
        ["git", "archive", "HEAD", "gsample", "kernels"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
    argv = ["--base", str(base), "--base-name", "abc123", "--quick", "--jobs", "deepwalk:2"]
    argv += ["--rounds", "1", "--warmup", "1", "--out", str(tmp_path)]  # (children take it)
    assert ab_trees.main(argv) == 0
    rec = json.loads((tmp_path / "ab_trees_cpu.json").read_text())
    assert rec["trees"]["base"] == "abc123"
    with pytest.raises(SystemExit):
        ab_trees.parse(["--base-name", "abc123", "--base-commit", "HEAD"])


def test_warm_up_epochs_are_chosen_and_a_negative_count_refused():
    """``--warmup``: the untimed epochs a job runs, a round, before its timed ones (two by
    default, as before the option)."""
    import ab_trees

    assert ab_trees.parse(["--base-commit", "HEAD"]).warmup == 2
    assert ab_trees.parse(["--base-commit", "HEAD", "--warmup", "0"]).warmup == 0
    assert ab_trees.parse(["--base-commit", "HEAD", "--warmup", "8"]).warmup == 8
    with pytest.raises(SystemExit):
        ab_trees.parse(["--base-commit", "HEAD", "--warmup", "-1"])
