"""``python -m gsample.bench --graph papers-like / products-like``: the anchor graphs by name,
their pinned seeds, and the record's degree profile and work per seed."""

import pytest
import torch

import gsample as gs
from gsample.bench import cli, measure, report, workloads

TINY = gs.datasets.AnchorGraph("tiny-like", 3000, 20_000, 600, {})


@pytest.fixture
def tiny(monkeypatch):
    """A small anchor graph the harness takes by name, as it takes papers-like."""
    monkeypatch.setitem(gs.datasets.ANCHOR_GRAPHS, "tiny-like", TINY)
    monkeypatch.setattr(cli, "ANCHORS", (*cli.ANCHORS, "tiny-like"))
    return "tiny-like"


def test_anchor_graphs_are_taken_by_name_and_others_refused(capsys):
    assert cli.ANCHORS == ("papers-like", "products-like")
    for name in cli.ANCHORS:
        assert cli.graph_problem(name) is None
    assert "papers-like, products-like" in cli.graph_problem("arxiv-like")
    help_text = cli.parser().format_help()
    assert "papers-like" in help_text and "--graph-cache" in help_text


def test_anchor_seeds_are_the_epoch_default(capsys):
    args = cli.parse(["--device", "cpu", "--graph", "products-like"])
    assert args.seeds == 196_608 and args.graph_cache is None
    args = cli.parse(["--device", "cuda", "--graph", "papers-like"])
    assert args.seeds == 1_207_179
    assert cli.parse(["--device", "cpu", "--graph", "papers-like", "--quick"]).seeds == 2048
    assert cli.parse(["--graph", "papers-like", "--seeds", "1024"]).seeds == 1024
    with pytest.raises(SystemExit):
        cli.parse(["--graph", "products-like", "--seeds", "196609"])
    assert "--seeds: at most 196608 for products-like" in capsys.readouterr().err


def test_epoch_seeds_of_an_anchor_are_its_pinned_seeds(tiny):
    A = gs.datasets.undirected_rmat(3000, 20_000)
    seeds, source = cli.epoch_seeds(tiny, A, torch.device("cpu"))
    assert torch.equal(seeds, gs.datasets.uniform_seeds(A.num_nodes, 600, seed=0))
    assert "anchor_seeds('tiny-like'" in source
    perm, source = cli.epoch_seeds("rmat:3000:20000", A, torch.device("cpu"))
    assert perm.numel() == A.num_nodes and "randperm" in source


def test_work_bounds_and_fanouts_of_each_workload():
    workloads.import_repo(workloads.repo_root())
    A = gs.datasets.undirected_rmat(500, 3000)
    want = {
        "graphsage": (275, (25, 10)),
        "pass": (110, (10, 10)),
        "deepwalk": (12, (1,)),
        "node2vec": (12, (1,)),
        "shadow": (None, (10, 10)),
        "ladies": (None, ()),
        "fastgcn": (None, ()),
    }
    for name, (most, fanouts) in want.items():
        w = workloads.workload(name, A, walk_length=12)
        assert (cli.most_units_per_seed(w), cli.fanouts_of(w)) == (most, fanouts), name
    w = measure.work_per_seed(35_000, 1000, "sampled edges", 275)
    assert w["per_seed"] == 35.0 and w["share_of_most"] == pytest.approx(35 / 275)
    assert measure.work_per_seed(10, 0, "walk steps")["per_seed"] is None


def test_the_record_has_the_degree_profile_and_the_work_per_seed(tiny, tmp_path):
    args = cli.parse(
        [
            "--quick",
            "--device",
            "cpu",
            "--graph",
            tiny,
            "--graph-cache",
            str(tmp_path / "graphs"),
            "--workloads",
            "graphsage",
            "deepwalk",
            "--modes",
            "eager",
            "torch",
            "--peers",
            "--repeats",
            "1",
            "--batch-size",
            "128",
            "--walk-length",
            "10",
            "--no-plots",
            "--out",
            str(tmp_path),
        ]
    )
    assert args.seeds == 600  # the anchor's seeds, fewer than --quick's 2048
    rec = cli.run(args)
    assert rec["ok"], rec["failures"]
    assert (tmp_path / "graphs" / "tiny-like" / "header.json").is_file()
    A = gs.datasets.undirected_rmat(3000, 20_000)
    profile = gs.datasets.degree_profile(A, fanouts=(1, 10, 25))
    assert rec["num_nodes"] == A.num_nodes and rec["graph"] == "tiny-like"
    assert rec["degree_profile"] == profile
    assert rec["seeds_source"] == "gs.datasets.anchor_seeds('tiny-like', A)"
    sage, walk = rec["workloads"]["graphsage"], rec["workloads"]["deepwalk"]
    assert sage["fanouts"] == [25, 10] and walk["fanouts"] == [1]
    assert sage["share_below_fanout"] == {k: profile["below"][k] for k in (25, 10)}
    for e, most in ((sage, 275), (walk, 10)):
        w = e["work_per_seed"]
        seeds = e["batches"] * e["batch_size"]
        assert w["seeds"] == seeds == 512  # 600 pinned seeds, whole mini-batches of 128
        assert w["units"] == e["modes"]["compiled, torch backend"]["units"]
        assert w["per_seed"] == w["units"] / seeds and w["most_per_seed"] == most
        assert 0 < w["share_of_most"] <= 1
    assert walk["work_per_seed"]["share_of_most"] == 1.0  # no dead ends: isolated nodes dropped
    lines = "\n".join(report.table_lines(rec))
    assert f"in-degree: mean {profile['mean']:.1f}, median {profile['median']}" in lines
    assert "graphsage: " in lines and "sampled edges per seed of at most 275" in lines
    assert "deepwalk: 10.0 walk steps per seed of at most 10 (100.0%)" in lines


def test_old_records_print_without_a_profile():
    assert report.profile_lines({"workloads": {}}) == []


def test_the_default_gpu_graph_is_products_like_and_the_cpu_one_stays(monkeypatch):
    args = cli.parse(["--device", "cuda"])  # parsing only: no GPU needed
    assert cli.GPU_GRAPH == "products-like" and args.graph == "products-like"
    assert args.seeds == gs.datasets.ANCHOR_GRAPHS["products-like"].num_seeds == 196_608
    assert "GPU products-like" in cli.parser().format_help()
    assert cli.parse(["--device", "cuda", "--graph", "rmat:2400:12000"]).graph == "rmat:2400:12000"
    monkeypatch.setattr(gs.datasets, "default_data_path", lambda name: "/nonexistent/" + name)
    cpu = cli.parse(["--device", "cpu"])
    assert cpu.graph == "rmat:300000:3000000" and cpu.seeds == 10_240
    assert cli.parse(["--device", "cuda", "--quick"]).graph == "rmat:20000:200000"


def test_each_row_shows_the_work_per_seed_and_per_second_beside_the_epoch_time():
    mode = {"kind": "super", "epoch_s_median": 0.02, "spread_s": 0.001, "units": 23_592_960}
    mode["units_per_s"] = mode["units"] / mode["epoch_s_median"]
    rec = {
        "device": "H200",
        "device_type": "cuda",
        "graph": "products-like",
        "num_nodes": 1_833_086,
        "num_edges": 123_718_280,
        "date": "2026-12-01",
        "workloads": {
            "graphsage": {
                "unit": "sampled edges",
                "agreement": {},
                "work_per_seed": measure.work_per_seed(23_592_960, 196_608, "sampled edges"),
                "modes": {"compiled, super-batched 64": mode},
            },
            "deepwalk": {"error": "RuntimeError('x')"},
        },
    }
    lines = report.table_lines(rec)
    header = next(line for line in lines if line.startswith("| workload |"))
    cols = [c.strip() for c in header.strip("|").split("|")]
    assert cols[2:6] == ["epoch s (median)", "spread s", "per seed", "units/s"]
    row = next(line for line in lines if line.startswith("| graphsage |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert len(cells) == len(cols)
    assert cells[2:6] == ["0.0200", "0.0010", "120.0 edges", "1.18 G edges/s"]
    error = next(line for line in lines if line.startswith("| deepwalk |"))
    assert len(error.strip("|").split("|")) == len(cols)
    assert [report._rate(v) for v in (None, 0, 512.0, 2.5e4, 3.2e7)] == [
        "-",
        "0",
        "512",
        "25 k",
        "32 M",
    ]
