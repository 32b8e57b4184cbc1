"""``python -m gsample.bench`` (issue 14): the quick CPU run writes its record and PNGs, every
workload agrees across its modes; a disagreement or an error fails the run, speed never does;
bad options are refused by name."""

import functools
import json
import os
import pathlib
import statistics
import subprocess
import sys

import pytest
import torch

import gsample.bench as bench
from gsample.bench import cli, workloads

ROOT = pathlib.Path(__file__).resolve().parents[2]
SMALL = [
    "--quick",
    "--device",
    "cpu",
    "--graph",
    "rmat:4000:40000",
    "--seeds",
    "512",
    "--repeats",
    "1",
    "--super-batch",
    "2",
    "--batch-size",
    "128",
    "--walk-length",
    "10",
]


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def _record(out: pathlib.Path) -> dict:
    (path,) = out.glob(bench.RESULT_PATTERN)
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    r = subprocess.run(
        [sys.executable, "-m", "gsample.bench", *SMALL, "--out", str(out)],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=1200,  # a hang guard, not a speed check: loaded 2-core hosts are slow
    )
    return r, out


def test_quick_run_writes_record_and_plots(quick_run):
    r, out = quick_run
    assert r.returncode == 0, r.stderr[-3000:]
    rec = _record(out)
    for key in (
        "date",
        "device",
        "versions",
        "commit",
        "command",
        "graph",
        "num_nodes",
        "num_edges",
        "random_gather",
        "byte_model",
        "load_avg_start",
        "workloads",
    ):
        assert key in rec
    assert rec["ok"] and rec["complete"] and rec["failures"] == []
    assert rec["versions"]["torch"] == torch.__version__ and rec["random_gather"]["GB_per_s"] > 0
    assert rec["command"].startswith("python -m gsample.bench --quick")
    assert set(rec["workloads"]) == set(bench.ALL_WORKLOADS)
    for name, e in rec["workloads"].items():
        assert "error" not in e, e.get("traceback")
        assert e["agreement_ok"] and e["batch_size"] == 128 and e["batches"] == 4
        # the determinism contract: identical draws on the CPU's torch backend, and again
        assert set(e["agreement"].values()) == {1.0}
        assert "compiled, super-batched 2, drawn again" in e["agreement"]
        modes = e["modes"]
        assert {"gsample eager", "compiled, torch backend", "compiled, super-batched 2"} <= set(
            modes
        )
        assert ("plain PyTorch" in modes) == (name not in bench.WALKS)
        gsample_units = {r["units"] for r in modes.values() if r["kind"] not in ("plain", "peer")}
        assert len(gsample_units) == 1 and gsample_units.pop() > 0  # the same samples
        for m in modes.values():
            assert 0 < m["epoch_s_median"] <= max(m["epoch_s_all"])
            assert m["units"] > 0 and m["units_per_s"] > 0
            assert m["spread_s"] == max(m["epoch_s_all"]) - min(m["epoch_s_all"])
            assert len(m["host_loop_ms_all"]) == len(m["epoch_s_all"])
            assert m["host_loop_ms"] == statistics.median(m["host_loop_ms_all"]) > 0
            assert m["peak_memory_kind"] == "process_peak_rss"
        assert e["bound"]["epoch_s"] > 0
        for peer, why in e["peers_not_run"].items():
            assert why.startswith(("not ", "none ")), (peer, why)
    pytest.importorskip("matplotlib")
    assert set(rec["pngs"]) == set(bench.ALL_WORKLOADS)
    for png in rec["pngs"].values():
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_printed_table_has_every_mode(quick_run):
    r, _out = quick_run
    assert "| graphsage | compiled, torch backend |" in r.stdout
    assert "| deepwalk | gsample eager |" in r.stdout
    assert "| pass | plain PyTorch |" in r.stdout


def _run(tmp_path, *extra, **hooks):
    return cli.run(cli.parse([*SMALL, "--no-plots", "--out", str(tmp_path), *extra]), **hooks)


def test_a_disagreement_fails_the_run(tmp_path, capsys):
    def broken(w, device, args):
        modes = cli.default_modes(w, device, args)
        m = modes["compiled, torch backend"]
        # other fanouts: not the samples eager draws
        modes["compiled, torch backend"] = m._replace(
            sampler=functools.partial(m.sampler, fanouts=(3, 2))
        )
        return modes

    rec = _run(tmp_path, "--workloads", "graphsage", modes=broken)
    e = rec["workloads"]["graphsage"]
    assert not e["agreement_ok"] and e["agreement"]["compiled, torch backend"] < 1.0
    assert not rec["ok"] and "disagree" in rec["failures"][0]
    assert _record(tmp_path)["failures"] == rec["failures"]


def test_main_exits_1_on_a_failure_and_records_it(tmp_path, monkeypatch, capsys):
    def boom(*a, **k):
        raise RuntimeError("sampler exploded")

    monkeypatch.setattr(cli, "workload", boom)
    code = bench.main([*SMALL, "--workloads", "deepwalk", "--no-plots", "--out", str(tmp_path)])
    assert code == 1
    assert "sampler exploded" in _record(tmp_path)["workloads"]["deepwalk"]["error"]
    assert "FAILED" in capsys.readouterr().err


def slow(w, device, args):
    """The default modes, with eager sleeping 0.05 s a mini-batch."""
    modes = cli.default_modes(w, device, args)
    m = modes["gsample eager"]

    def crawl(A, seeds, **kw):
        import time

        time.sleep(0.05)
        return m.sampler(A, seeds, **kw)

    modes["gsample eager"] = m._replace(sampler=crawl)
    return modes


def test_a_slow_mode_does_not_fail_the_run(tmp_path):
    rec = _run(tmp_path, "--workloads", "graphsage", "--peers", modes=slow)
    modes = rec["workloads"]["graphsage"]["modes"]
    assert rec["ok"] and modes["gsample eager"]["epoch_s_median"] >= 4 * 0.05
    assert (
        modes["gsample eager"]["epoch_s_median"]
        > modes["compiled, torch backend"]["epoch_s_median"]
    )


def test_fanouts_replace_the_samplers_own_everywhere(tmp_path):
    """``--fanouts 4 3 2``: GraphSAGE samples three layers of at most 4, 3 and 2 neighbours
    in every mode (its blocks and the record say so), and the per-seed bound follows."""
    rec = _run(tmp_path, "--workloads", "graphsage", "--fanouts", "4", "3", "2")
    e = rec["workloads"]["graphsage"]
    assert rec["ok"] and e["fanouts"] == [4, 3, 2]
    A = workloads.gs.datasets.rmat(4000, 40000, seed=0)
    w = workloads.workload("graphsage", A, 8, fanouts=(4, 3, 2))
    assert w.kw["fanouts"] == (4, 3, 2)
    blocks = w.fn(A, torch.arange(8), **w.kw)
    assert len(blocks) == 3
    per_column = [int((b.csc.indptr[1:] - b.csc.indptr[:-1]).max()) for b in blocks]
    assert all(d <= k for d, k in zip(per_column, (4, 3, 2))), per_column
    assert 0 < e["work_per_seed"]["per_seed"] <= 4 + 4 * 3 + 4 * 3 * 2


def test_capped_epochs_are_scaled_to_the_full_epoch(tmp_path):
    rec = _run(tmp_path, "--workloads", "graphsage", "--peers", "--batches", "graphsage=2")
    e = rec["workloads"]["graphsage"]
    assert e["batches"] == 2 and e["epoch_scale"] == 2.0
    for r in e["modes"].values():
        assert r["epoch_s_full"] == pytest.approx(2 * r["epoch_s_median"])


def test_slow_modes_are_timed_on_a_prefix_and_scaled(tmp_path):
    """``--slow-batches 1``: eager and the torch backend time the first mini-batch of the
    4-batch epoch, reported for the whole epoch (a sleep of 0.05 s a call: at least 0.2 s);
    the other modes run the whole epoch."""
    rec = _run(tmp_path, "--workloads", "graphsage", "--peers", "--slow-batches", "1", modes=slow)
    modes = rec["workloads"]["graphsage"]["modes"]
    eager = modes["gsample eager"]
    assert eager["timed_fraction"] == pytest.approx(1 / 4)
    assert eager["epoch_s_median"] >= 4 * 0.05  # scaled to the 4 mini-batches
    assert modes["compiled, torch backend"]["timed_fraction"] == pytest.approx(1 / 4)
    assert "timed_fraction" not in modes["compiled, super-batched 2"]


def test_without_a_checkout_it_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("GSAMPLE_REPO", raising=False)
    site = tmp_path / "site" / "gsample" / "bench"  # an installed wheel
    monkeypatch.setattr(workloads, "__file__", str(site / "workloads.py"))
    assert bench.main([*SMALL, "--out", str(tmp_path)]) == 2
    assert "benchmarks/ and examples/" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--graph", "rmat:big:1"], "--graph rmat:big:1"),
        (["--graph", "/no/such/graph.txt"], "--graph /no/such/graph.txt: no such file"),
    ],
)
def test_a_bad_graph_is_refused_by_name(tmp_path, capsys, argv, needle):
    assert bench.main([*SMALL, "--out", str(tmp_path), *argv]) == 2
    assert needle in capsys.readouterr().err
    assert not list(tmp_path.glob(bench.RESULT_PATTERN))


def test_bad_caps_and_workloads_are_refused(capsys):
    with pytest.raises(SystemExit):
        cli.parse([*SMALL, "--batches", "graphsage"])
    assert "--batches" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.parse([*SMALL, "--workloads", "nope"])
    assert "--workloads" in capsys.readouterr().err


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_gpu_run_checks_cpu_draws_and_profiles(tmp_path):
    rec = cli.run(
        cli.parse(
            [
                "--quick",
                "--device",
                "cuda",
                "--graph",
                "rmat:20000:200000",
                "--repeats",
                "1",
                "--no-plots",
                "--out",
                str(tmp_path),
            ]
        )
    )
    assert rec["ok"], rec["failures"]
    for e in rec["workloads"].values():
        need = e["agreement_required"]
        assert e["agreement"]["gsample eager on the CPU"] >= need
        cuda = e["modes"]["compiled, cuda backend"]
        assert cuda["kernels_per_batch"] > 0 and cuda["syncs_per_batch"] >= 0
        assert cuda["peak_memory_kind"] == "torch.cuda.max_memory_allocated"


def test_agreement_is_the_jaccard_of_the_sampled_edge_sets():
    """``workloads.agreement``: the share of (layer, row, column, edge id) both runs drew
    (Jaccard); 1.0 for the same samples, 0.0 for empty ones."""
    import gsample as gs

    A = gs.datasets.rmat(500, 4000, seed=2)
    seeds = torch.arange(0, 500, 7)
    gs.manual_seed(0)
    x = [A[:, seeds].individual_sample(3), A[:, seeds[:20]].individual_sample(2)]
    gs.manual_seed(1)
    y = [A[:, seeds].individual_sample(3), x[1]]
    assert workloads.agreement(x, x) == 1.0

    def edge_set(blocks):
        return {
            (i, *e) for i, b in enumerate(blocks) for e in zip(*(t.tolist() for t in b.edges()))
        }

    a, b = edge_set(x), edge_set(y)
    assert workloads.agreement(x, y) == pytest.approx(len(a & b) / len(a | b))
    assert 0.0 < workloads.agreement(x, y) < 1.0
    assert workloads.agreement([], []) == 0.0


def test_epochs_drop_outputs_counted_on_the_host():
    """A block's edges are counted as it comes and the block dropped (as a training loop
    drops it), an induced subgraph's with its node ids too (an epoch of ShaDow's kept for
    counting filled a GPU); a walk tensor, whose count reads the device, is kept and counted
    after."""
    import weakref

    import gsample as gs
    from gsample.bench import measure

    A = gs.datasets.rmat(500, 4000, seed=0)
    blocks = [A[:, torch.arange(i, i + 20)] for i in range(0, 60, 20)]
    walk = torch.tensor([[0, 1, -1], [2, -1, -1]])
    assert (
        workloads.host_count(blocks)
        == workloads.count(blocks)
        == sum(int(b.csc.rows.numel()) for b in blocks)
        > 0
    )
    assert workloads.host_count(tuple(blocks)) == workloads.count(blocks)
    assert (
        workloads.host_count([blocks, [blocks[0]]]) == workloads.count(blocks) + blocks[0].num_edges
    ), "nested lists"
    assert workloads.host_count(walk) is None and workloads.host_count([blocks[0], walk]) is None
    # an induced subgraph and its nodes (ShaDow's output): node ids count no edge, on the host
    nodes = torch.arange(20)
    assert workloads.host_count((blocks[0], nodes)) == workloads.count((blocks[0], nodes))
    assert workloads.count((blocks[0], nodes)) == blocks[0].num_edges
    alive = []

    def outputs():
        for i in range(0, 60, 20):
            out = [A[:, torch.arange(i, i + 20)]]  # fresh tensors each time
            alive.append(weakref.ref(out[0].csc.rows))
            yield out
        sub = (A[:, torch.arange(60, 80)], torch.arange(60, 80))  # a subgraph and its nodes
        alive.extend((weakref.ref(sub[0].csc.rows), weakref.ref(sub[1])))
        yield sub

    run = measure.epoch_runner(outputs, torch.device("cpu"), workloads.count, workloads.host_count)
    seconds, units = run()
    assert units == workloads.count(blocks) + A[:, torch.arange(60, 80)].num_edges
    assert seconds >= 0
    assert all(r() is None for r in alive), "host-counted outputs are not kept"
    run = measure.epoch_runner(
        lambda: iter([walk, walk]), torch.device("cpu"), workloads.count, workloads.host_count
    )
    assert run()[1] == 2 * workloads.count(walk) == 2
