"""``gsample.bench.report`` and ``scripts/bench_table.py``: the README block comes from the
newest full record per device and graph, between its markers and nowhere else."""

import json
import pathlib
import subprocess
import sys

import pytest

from gsample.bench import report

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _mode(kind, t, units=1000):
    return {
        "kind": kind,
        "epoch_s_median": t,
        "epoch_s_all": [t, t * 1.1],
        "spread_s": t * 0.1,
        "units": units,
        "units_per_s": units / t,
        "peak_memory_bytes": 2**20,
        "x_bound": t / 0.001,
    }


def _record(date, device_type="cpu", graph="rmat:10:20", quick=False, t=0.5):
    return {
        "harness": "gsample.bench",
        "date": date,
        "device": f"{device_type} device",
        "device_type": device_type,
        "graph": graph,
        "num_nodes": 10,
        "num_edges": 20,
        "command": "python -m gsample.bench",
        "repeats": 5,
        "quick": quick,
        "commit": "abc",
        "random_gather": {"GB_per_s": 3.0},
        "workloads": {
            "graphsage": {
                "unit": "sampled edges",
                "batch_size": 512,
                "batches": 40,
                "agreement": {"gsample eager": 1.0, "compiled, torch backend": 1.0},
                "bound": {"epoch_s": 0.001},
                "peers_not_run": {"DGL": "not installed; why"},
                "modes": {
                    "gsample eager": _mode("eager", t),
                    "compiled, torch backend": _mode("compiled", t / 2),
                    "compiled, super-batched 8": _mode("super", t / 3),
                    "compiled, super-batched 40": _mode("super", t / 4),
                    "plain PyTorch": _mode("plain", t / 5),
                    "PyG NeighborLoader": _mode("peer", t / 6),
                },
            }
        },
    }


@pytest.fixture
def results(tmp_path):
    d = tmp_path / "results"
    d.mkdir()
    recs = {
        "old_cpu": _record("2026-11-01T00:00:00+00:00", t=9.0),
        "new_cpu": _record("2026-11-02T00:00:00+00:00", t=0.5),
        "quick_cpu": _record("2026-11-03T00:00:00+00:00", quick=True, t=7.0),
        "gpu": _record("2026-11-01T00:00:00+00:00", device_type="cuda", t=0.25),
        "other_graph": _record("2026-10-01T00:00:00+00:00", graph="web.txt.gz", t=3.0),
    }
    for k, r in recs.items():
        (d / f"bench_{k}.json").write_text(json.dumps(r))
    (d / "bench_broken.json").write_text("{not json")
    (d / "ablation_x.json").write_text(json.dumps(_record("2027-01-01T00:00:00+00:00")))
    return d


def test_newest_record_per_device_and_graph_gpu_first(results):
    got = report.newest_records(results)
    assert [(r["device_type"], r["graph"], r["file"]) for r in got] == [
        ("cuda", "rmat:10:20", "bench_gpu.json"),
        ("cpu", "rmat:10:20", "bench_new_cpu.json"),
        ("cpu", "web.txt.gz", "bench_other_graph.json"),
    ]


def test_cpu_records_of_two_thread_counts_make_two_tables(tmp_path):
    d = tmp_path / "results"
    d.mkdir()
    for name, threads, date in (("one", 1, "2026-11-01"), ("two", 2, "2026-11-02")):
        device = f"x86_64 CPU, {threads} thread{'s' * (threads > 1)}"
        r = {**_record(f"{date}T00:00:00+00:00"), "threads": threads, "device": device}
        (d / f"bench_{name}.json").write_text(json.dumps(r))
    got = report.newest_records(d)
    assert [(r["threads"], r["file"]) for r in got] == [
        (1, "bench_one.json"),
        (2, "bench_two.json"),
    ]
    block = report.readme_block(got)
    assert "**x86_64 CPU, 1 thread**" in block and "**x86_64 CPU, 2 threads**" in block


def _partial(date, t, names, device_type="cuda", quick=False, repeats=5):
    """A record holding only ``names``, each a copy of :func:`_record`'s graphsage entry
    scaled by ``t`` (so a row tells which record it came from)."""
    r = _record(date, device_type=device_type, quick=quick, t=t)
    entry = r["workloads"]["graphsage"]
    r.update(
        workloads={n: entry for n in names},
        complete=False,
        repeats=repeats,
        command=f"python -m gsample.bench --workloads {' '.join(names)}",
    )
    return r


def _eager(block, name):
    row = next(line for line in block.splitlines() if line.startswith(f"| {name} |"))
    return row.strip("|").split("|")[2].strip()


def test_partial_records_merge_each_workload_from_the_newest_that_has_it(tmp_path):
    d = tmp_path / "results"
    d.mkdir()
    recs = {
        "bench_a_cuda_part1.json": _partial(
            "2026-11-26T09:00:00+00:00", 1.0, ["graphsage", "deepwalk", "node2vec"]
        ),
        "bench_a_cuda_part2.json": _partial(
            "2026-11-26T10:00:00+00:00", 2.0, ["pass", "node2vec", "shadow"]
        ),
        "bench_a_cuda_quick.json": _partial(
            "2026-11-27T00:00:00+00:00", 7.0, ["graphsage", "pass"], quick=True
        ),
    }
    for name, r in recs.items():
        (d / name).write_text(json.dumps(r))
    (got,) = report.newest_records(d)
    assert list(got["workloads"]) == ["graphsage", "deepwalk", "node2vec", "shadow", "pass"]
    assert [(s["file"], s["taken"]) for s in got["sources"]] == [
        ("bench_a_cuda_part1.json", ["graphsage", "deepwalk"]),
        ("bench_a_cuda_part2.json", ["node2vec", "shadow", "pass"]),
    ]
    assert got["file"] == "bench_a_cuda_part2.json"  # the newest contributing
    block = report.readme_block([got])
    assert {n: _eager(block, n) for n in got["workloads"]} == {  # eager = t: which record
        "graphsage": "1",
        "deepwalk": "1",
        "node2vec": "2",
        "shadow": "2",
        "pass": "2",
    }
    assert block.count("bench_a_cuda_part1.json") == 1
    assert block.count("bench_a_cuda_part2.json") == 1
    assert "bench_a_cuda_quick.json" not in block  # quick: left out
    assert (
        "- graphsage, deepwalk: cuda device, 2026-11-26, `python -m gsample.bench "
        "--workloads graphsage deepwalk node2vec` (`benchmarks/results/"
        "bench_a_cuda_part1.json`); random gather 3 GB/s" in block
    )
    assert "- node2vec, shadow, pass: cuda device, 2026-11-26" in block
    assert (
        "each workload from the newest of 2 records that has it; epoch seconds, median "
        "of 5:" in block
    )
    assert sum(line.startswith("| workload |") for line in block.splitlines()) == 1


def test_the_header_says_how_fast_each_source_s_host_was(tmp_path):
    """Epochs recorded with their host's speed (``host_loop_ms_all``): each source's line
    gives the median and range over the workloads taken from it; older records, none."""
    d = tmp_path / "results"
    d.mkdir()
    old = _partial("2026-11-26T09:00:00+00:00", 1.0, ["graphsage", "deepwalk"])
    new = _partial("2026-11-26T10:00:00+00:00", 2.0, ["deepwalk", "shadow"])
    new["workloads"] = {n: json.loads(json.dumps(e)) for n, e in new["workloads"].items()}
    for n, loops in (("deepwalk", [40.0, 90.0]), ("shadow", [60.0, 70.0])):
        for m in new["workloads"][n]["modes"].values():
            m["host_loop_ms_all"] = loops
    (d / "bench_a_cuda_1.json").write_text(json.dumps(old))
    (d / "bench_a_cuda_2.json").write_text(json.dumps(new))
    (got,) = report.newest_records(d)
    block = report.readme_block([got])
    line = next(x for x in block.splitlines() if x.startswith("- deepwalk, shadow:"))
    assert line.endswith(
        "host speed (a pure-Python loop before each epoch) 70 ms per million iterations, 40 to 90"
    ), line
    assert "host speed" not in next(x for x in block.splitlines() if x.startswith("- graphsage:"))


def test_a_single_source_keeps_the_one_record_header(results):
    (gpu, *_) = report.newest_records(results)
    assert [s["file"] for s in gpu["sources"]] == ["bench_gpu.json"]
    plain = {**gpu}
    del plain["sources"]
    assert report.readme_table(gpu) == report.readme_table(plain)
    assert report.readme_table(gpu)[0].startswith("**cuda device**, rmat:10:20 (10 nodes, ")


def test_readme_table_takes_the_fastest_super_batch_and_the_peers():
    lines = report.readme_table(_record("2026-11-02T00:00:00+00:00", t=1.2))
    row = next(line for line in lines if line.startswith("| graphsage |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:8] == ["graphsage", "40 x 512", "1.2", "0.6", "-", "0.3 (40)", "0.24", "PyG 0.2"]
    assert cells[8:] == ["0.001", "1.0000"]


def test_replace_block_touches_only_the_block():
    text = "# t\n\nbefore\n<!-- bench:begin -->\nold\n<!-- bench:end -->\nafter\n"
    assert (
        report.replace_block(text, "new")
        == "# t\n\nbefore\n<!-- bench:begin -->\nnew\n<!-- bench:end -->\nafter\n"
    )
    with pytest.raises(ValueError, match="bench:begin"):
        report.replace_block("no markers", "new")


def _table(*argv):
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_table.py"), *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_bench_table_writes_then_checks_the_readme(results, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- bench:begin -->\n<!-- bench:end -->\nrest\n")
    args = ["--results", str(results), "--readme", str(readme)]
    stale = _table(*args, "--check")
    assert stale.returncode == 1 and "stale" in stale.stderr
    assert _table(*args, "--write").returncode == 0
    text = readme.read_text()
    assert text.startswith("intro\n<!-- bench:begin -->\n") and text.endswith(
        "<!-- bench:end -->\nrest\n"
    )
    assert "bench_gpu.json" in text and "bench_new_cpu.json" in text
    assert "bench_old_cpu.json" not in text and "bench_quick_cpu.json" not in text
    assert _table(*args, "--check").returncode == 0


def test_bench_table_without_records_or_markers_fails(results, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    r = _table("--results", str(empty))
    assert r.returncode == 1 and "no bench_*.json" in r.stderr
    readme = tmp_path / "README.md"
    readme.write_text("no block here\n")
    r = _table("--results", str(results), "--readme", str(readme), "--write")
    assert r.returncode == 1 and "bench:begin" in r.stderr
    assert readme.read_text() == "no block here\n"


def test_full_table_lists_every_mode_and_why_a_peer_did_not_run(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_record("2026-11-02T00:00:00+00:00")))
    r = _table("--full", str(path))
    assert r.returncode == 0
    assert "| graphsage | compiled, super-batched 40 | 0.1250 |" in r.stdout
    assert "| graphsage | DGL | not installed; why |" in r.stdout


def test_plot_draws_a_png_per_workload_beside_the_record(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "bench_x_cuda_1.json"
    path.write_text(json.dumps(_record("2026-11-02T00:00:00+00:00", device_type="cuda")))
    r = _table("--plot", str(path))
    assert r.returncode == 0, r.stderr
    assert json.loads(path.read_text())["pngs"] == {"graphsage": "bench_x_cuda_1_graphsage.png"}
    assert (tmp_path / "bench_x_cuda_1_graphsage.png").read_bytes()[:4] == b"\x89PNG"


def test_paths_beside_the_checkout_are_recorded_as_typed_from_it(tmp_path):
    root, data = tmp_path / "main", tmp_path / "shared" / "data"
    root.mkdir()
    data.mkdir(parents=True)
    (data / "g.txt").write_text("")
    assert report.as_typed(str(data / "g.txt"), root) == "../shared/data/g.txt"
    assert report.as_typed(f"--graph={data / 'g.txt'}", root) == "--graph=../shared/data/g.txt"
    assert report.as_typed("rmat:10:20", root) == "rmat:10:20"
    assert report.as_typed("/", root) == "/"  # outside: unchanged


def test_the_benchmarks_page_block_is_made_from_the_committed_records():
    """docs/guide/benchmarks.md's table is the newest records' (run
    ``scripts/bench_table.py --write`` after adding one to ``benchmarks/results``)."""
    r = _table("--check")
    assert r.returncode == 0, r.stderr


def test_the_summary_csv_is_made_from_the_committed_records():
    """benchmarks/results/summary.csv lists every kept record's rows, each kind of record
    read (run ``scripts/bench_summary.py`` after adding or dropping one)."""
    r = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_summary.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
