"""``python -m gsample.bench --roofline``: its options, a CPU run (peaks and bounds recorded,
measured bytes "not on a GPU"), super-batched modes never timed on fewer mini-batches than
their N, the worker's regions, and the ncu plumbing end to end through a stand-in ncu that
writes what ncu writes (a GPU's ncu cannot run here)."""

import copy
import json
import os
import pathlib
import stat
import sys

import pytest
import torch

from gsample.bench import cli, dram, ncu, report, roofline, roofline_worker

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
    "5",
    "--peers",
    "--no-plots",
]

#: a stand-in for ncu: runs no worker, but writes the worker's OUT.json (a region per job)
#: and, to --log-file, the table ncu writes: a marker, then the region's kernels (kernel k
#: of a region of n mini-batches reads 1,000 k bytes and writes 10)
FAKE_NCU = """#!{python}
import json, os, pathlib, sys, time
args = sys.argv[1:]
log, spec, out = args[args.index("--log-file") + 1], args[-2], args[-1]
how = os.environ.get("FAKE_NCU", "ok")
if how == "sleep":
    time.sleep(60)
if how == "denied":
    pathlib.Path(log).write_text(
        "==PROF== Connected to process 9\\n==ERROR== ERR_NVGPUCTRPERM - The user does not "
        "have permission to access NVIDIA GPU Performance Counters on the target device 0.\\n"
    )
    sys.exit(1)
spec = json.loads(pathlib.Path(spec).read_text())
jobs = spec["jobs"]
rows = ['"ID","Kernel Name","dram__bytes_read.sum","dram__bytes_write.sum"', '"","","byte","byte"']
regions = []
for g in spec["gathers"]:  # a gather moves 8 times its useful bytes (whole sectors)
    regions.append(dict(workload="_microbenchmark", mode=g["name"], sampled_batches=1, marked=True))
    rows.append(f'"{{len(rows) - 2}}","{marker}","0","0"')
    useful = 3 * g["elem_bytes"] * g["num_indices"]
    rows.append(f'"{{len(rows) - 2}}","indexSelectLargeIndex","{{7 * useful:,}}","{{useful:,}}"')
for job in jobs:
    for label, n in job["batches"].items():
        regions.append(dict(workload=job["workload"], mode=label, sampled_batches=n, marked=True))
        rows.append(f'"{{len(rows) - 2}}","{marker}","0","0"')
        for k in range(1, n + 1):
            rows.append(f'"{{len(rows) - 2}}","void kernel<int, 2>(int*)","{{1000 * k:,}}","10"')
pathlib.Path(out).write_text(json.dumps(dict(regions=regions)))
pathlib.Path(log).write_text("==PROF== Disconnected from process 9\\n" + "\\n".join(rows) + "\\n")
"""


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    """A CPU ``--roofline`` run: graphsage capped at 1 of its 4 mini-batches (its
    super-batched 2 mode must still time 2), deepwalk uncapped."""
    out = tmp_path_factory.mktemp("roofline")
    argv = [*SMALL, "--workloads", "graphsage", "deepwalk", "--modes", "torch", "super"]
    args = cli.parse([*argv, "--batches", "graphsage=1", "--roofline", "--out", str(out)])
    return cli.run(args), args, out


def test_the_roofline_options_parse_and_are_checked(capsys):
    a = cli.parse(SMALL)
    assert not a.roofline and a.roofline_batches == 4 and a.ncu is None
    a = cli.parse([*SMALL, "--roofline", "--roofline-batches", "8", "--ncu", "/x/ncu",
                   "--roofline-timeout", "90"])  # fmt: skip
    assert (a.roofline, a.roofline_batches, a.ncu, a.roofline_timeout) == (True, 8, "/x/ncu", 90)
    for bad in (["--roofline-batches", "0"], ["--roofline-timeout", "soon"]):
        with pytest.raises(SystemExit):
            cli.parse([*SMALL, *bad])
        assert bad[0] in capsys.readouterr().err


def test_a_cpu_run_records_peaks_and_bounds_not_bytes(cpu_run):
    rec, _, _ = cpu_run
    assert rec["ok"], rec["failures"]
    rf = rec["roofline"]
    assert rf["status"] == "not measured" and rf["why"].startswith("not on a GPU")
    micro = rf["microbenchmarks"]
    assert {"copy", "gather_4B", "gather_8B"} <= set(micro) and "on the CPU" in micro["note"]
    assert json.loads(pathlib.Path(rec["path"]).read_text())["roofline"]["status"] == (
        "not measured"
    )
    for name in ("graphsage", "deepwalk"):
        e = rec["workloads"][name]
        b = e["roofline"]["bound"]
        assert b["bytes"] == b["read_bytes"] + b["write_bytes"] > 0
        assert b["batches"] == e["batches"] and b["peak"] in micro
        assert b["epoch_s"] == pytest.approx(b["bytes"] / micro[b["peak"]]["GB_per_s"] / 1e9)
        assert e["roofline"]["model"] == roofline.BOUND_MODELS[name]
        for r in e["modes"].values():
            assert r["roofline"]["x_bound"] == pytest.approx(r["epoch_s_median"] / b["epoch_s"])
            assert "dram_bytes_epoch" not in r["roofline"]
    lines = "\n".join(report.table_lines(rec))
    assert "measured bytes: not measured (not on a GPU" in lines
    assert "| workload | mode | epoch s | DRAM GB/epoch | achieved GB/s | % of peak" in lines
    assert "| deepwalk | compiled, super-batched 2 |" in lines.split("roofline:")[1]


def test_super_batched_modes_are_never_scaled_from_fewer_than_n(cpu_run):
    rec, _, _ = cpu_run
    e = rec["workloads"]["graphsage"]
    assert e["batches"] == 1 and e["epoch_scale"] == 4.0
    sup = e["modes"]["compiled, super-batched 2"]
    assert sup["timed_batches"] == 2 and sup["timed_fraction"] == 2.0
    assert sup["epoch_s_full"] == pytest.approx(4 * sup["epoch_s_median"])
    one = e["modes"]["compiled, torch backend"]
    assert "timed_batches" not in one and "timed_fraction" not in one
    assert all("timed_batches" not in r for r in rec["workloads"]["deepwalk"]["modes"].values())


def test_the_worker_samples_each_region(tmp_path):
    spec = {
        "graph": "rmat:4000:40000",
        "graph_cache": None,
        "device": "cpu",
        "seeds": 512,
        "batch_size": 128,
        "walk_length": 5,
        "super_batch": [2],
        "modes": ["torch", "super"],
        "gathers": [
            {"name": "gather_4B", "elem_bytes": 4, "source_bytes": 1 << 20, "num_indices": 64}
        ],
        "jobs": [
            {"workload": "deepwalk", "batches": {"compiled, super-batched 2": 2, "made up": 1}},
            {"workload": "graphsage", "batches": {"compiled, torch backend": 3}},
        ],
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    assert roofline_worker.main([str(tmp_path / "spec.json"), str(tmp_path / "out.json")]) == 0
    regions = json.loads((tmp_path / "out.json").read_text())["regions"]
    assert [(r["workload"], r["mode"]) for r in regions] == [
        (roofline.MICROBENCHMARK, "gather_4B"),
        ("deepwalk", "compiled, super-batched 2"),
        ("deepwalk", "made up"),
        ("graphsage", "compiled, torch backend"),
    ]
    assert [r.get("marked") for r in regions] == [True, True, None, True]
    assert [r["sampled_batches"] for r in regions] == [1, 2, 1, 3]
    assert "cannot build it" in regions[2]["why"]
    assert not any("why" in r for i, r in enumerate(regions) if i != 2)
    assert roofline_worker.main(["only-one"]) == 2


@pytest.fixture
def fake_ncu(tmp_path):
    exe = tmp_path / "ncu"
    exe.write_text(FAKE_NCU.format(python=sys.executable, marker=ncu.MARKER))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe


def _measure(cpu_run, exe, tmp_path, timeout=60):
    rec, args, _ = cpu_run
    rec = copy.deepcopy(rec)
    args = copy.copy(args)
    args.ncu, args.roofline_timeout, args.roofline_batches = str(exe), timeout, 3
    A, _ = cli.load_graph(args.graph, torch.device("cpu"))
    # device "cuda" names where the kernels would run; the stand-in runs nothing on it
    got = dram.measure_bytes(args, rec, torch.device("cuda"), A, tmp_path, "stem", cli.SLOW_MODES)
    return rec, got


def test_ncu_bytes_are_attributed_scaled_and_compared(cpu_run, fake_ncu, tmp_path):
    rec, got = _measure(cpu_run, fake_ncu, tmp_path)
    assert got["status"] == "measured" and got["why"] is None, got
    assert got["units"] == {m: "byte" for m in ncu.METRICS} and got["log"] == "stem_ncu.csv"
    assert (tmp_path / "stem_ncu.csv").is_file()
    micro = rec["roofline"]["microbenchmarks"]
    for key in ("gather_4B", "gather_8B"):
        g = micro[key]
        assert g["dram_bytes"] == 8 * g["bytes"] and g["dram_over_useful"] == 8.0
        assert g["dram_GB_per_s"] == pytest.approx(g["dram_bytes"] / g["seconds_best"] / 1e9)
    for name, e in rec["workloads"].items():
        bound = e["roofline"]["bound"]
        for label, r in e["modes"].items():
            m = r["roofline"]
            if label in cli.SLOW_MODES:  # the torch code: not profiled
                assert "sampled_batches" not in m
                continue
            n = 4  # --roofline-batches 3 in whole super-batches of 2
            assert m["sampled_batches"] == n and m["kernels_sampled"] == n, (name, label)
            sampled = 1000 * n * (n + 1) / 2 + 10 * n
            assert m["dram_bytes_epoch"] == pytest.approx(sampled * e["batches"] / n)
            assert m["achieved_GB_per_s"] == pytest.approx(
                m["dram_bytes_epoch"] / r["epoch_s_median"] / 1e9
            )
            assert m["peak"] == bound["peak"]
            assert m["peak_fraction"] == pytest.approx(
                m["achieved_GB_per_s"] / micro[m["peak"]]["dram_GB_per_s"]
            )
            assert m["peak_basis"].startswith("DRAM bytes")
            assert m["copy_fraction"] == pytest.approx(
                m["achieved_GB_per_s"] / micro["copy"]["GB_per_s"]
            )
            assert m["bytes_over_bound"] == pytest.approx(m["dram_bytes_epoch"] / bound["bytes"])
            assert m["x_bound"] == pytest.approx(r["epoch_s_median"] / bound["epoch_s"])
    rec["roofline"].update(got)
    lines = "\n".join(roofline.table_lines(rec))
    assert "measured bytes: measured" in lines and "% (gather_" in lines


def test_the_jobs_are_the_compiled_modes_in_whole_super_batches():
    def mode(kind, **kw):
        return {"kind": kind, "epoch_s_median": 1.0, **kw}

    record = {
        "workloads": {
            "graphsage": {
                "batches": 48,
                "epoch_scale": 4.0,
                "modes": {
                    "gsample eager": mode("eager"),
                    "compiled, torch backend": mode("compiled"),
                    "compiled, cuda backend": mode("compiled"),
                    "compiled, super-batched 64": mode("super"),
                    "compiled, super-batched auto": mode("super", super_batch_size=16),
                    "plain PyTorch": mode("plain"),
                },
            },
            "pass": {"error": "RuntimeError()"},
        }
    }
    assert dram.roofline_jobs(record, 4, cli.SLOW_MODES) == [
        {
            "workload": "graphsage",
            "batches": {
                "compiled, cuda backend": 4,
                "compiled, super-batched 64": 64,
                "compiled, super-batched auto": 16,
            },
        }
    ]


def test_ncu_refused_is_recorded_with_its_reason(cpu_run, fake_ncu, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_NCU", "denied")
    rec, got = _measure(cpu_run, fake_ncu, tmp_path)
    assert got["status"] == "failed" and "ERR_NVGPUCTRPERM" in got["why"]
    for e in rec["workloads"].values():
        for label, r in e["modes"].items():
            if label not in cli.SLOW_MODES:
                assert r["roofline"]["why"].startswith("ncu: ncu exited 1")
            assert "dram_bytes_epoch" not in r["roofline"]


def test_ncu_past_its_time_is_stopped_and_recorded(cpu_run, fake_ncu, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_NCU", "sleep")
    _, got = _measure(cpu_run, fake_ncu, tmp_path, timeout=1)
    assert got["status"] == "failed" and "timed out after 1 s" in got["why"]


def test_no_ncu_is_recorded(cpu_run, tmp_path, monkeypatch):
    monkeypatch.setenv("GSAMPLE_NCU", str(tmp_path / "missing-ncu"))
    rec, args, _ = cpu_run
    args = copy.copy(args)
    args.ncu = None
    got = dram.measure_bytes(
        args, copy.deepcopy(rec), torch.device("cuda"), None, tmp_path, "s", cli.SLOW_MODES
    )
    assert got == {"status": "not measured", "why": "ncu not found (--ncu PATH or $GSAMPLE_NCU)"}


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_gpu_roofline_run(tmp_path):
    argv = [
        *("--quick", "--device", "cuda", "--graph", "rmat:20000:200000", "--repeats", "1"),
        *("--workloads", "graphsage", "deepwalk", "--modes", "cuda", "super", "--peers"),
        *("--no-plots", "--roofline", "--roofline-batches", "2", "--out", str(tmp_path)),
    ]
    rec = cli.run(cli.parse(argv))
    assert rec["ok"], rec["failures"]
    rf = rec["roofline"]
    if ncu.find_ncu() is None:
        assert rf["why"].startswith("ncu not found")
        return
    assert rf["status"] == "measured", rf
    for e in rec["workloads"].values():
        for label, r in e["modes"].items():
            m = r["roofline"]
            assert m["dram_bytes_epoch"] > 0 and m["kernels_sampled"] > 0, label
            # a graph this small lives in the L2: its DRAM bytes may be under the bound
            assert m["bytes_over_bound"] > 0, label
    assert os.path.isfile(tmp_path / rf["log"])
