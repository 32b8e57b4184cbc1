"""scripts/memcheck.py: sharding, resuming, deadlines and reading memcheck's logs (no GPU:
``--sanitizer none`` runs the chunks with plain pytest)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tqdm")
SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "memcheck.py"
_spec = importlib.util.spec_from_file_location("memcheck_script", SCRIPT)
memcheck = importlib.util.module_from_spec(_spec)
sys.modules["memcheck_script"] = memcheck  # dataclasses look their module up
_spec.loader.exec_module(memcheck)

TESTS = """
import time
def test_a(): pass
def test_b(): assert 0
def test_c(): pass
def test_d(): pass
def test_slow(): time.sleep(60)
"""


def _run(tmp_path, *args):
    """Run the script from ``tmp_path`` (the rootdir of the node ids) on its test file."""
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--sanitizer", "none", "--log-dir", "logs", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return out.returncode, out.stdout + out.stderr


def _done(tmp_path):
    return sorted((tmp_path / "logs" / "done.txt").read_text().split())


def test_shards_resumes_and_reports_failures(tmp_path):
    (tmp_path / "test_x.py").write_text(TESTS)
    rc, out = _run(tmp_path, "--jobs", "2", "--chunk", "2", "--", "test_x.py", "-k", "not slow")
    assert rc == 1, out  # test_b fails
    assert "BAD test_x.py::test_b" in out
    assert "4 to run in 2 chunks" in out
    assert _done(tmp_path) == ["test_x.py::test_a", "test_x.py::test_c", "test_x.py::test_d"]
    assert len(list((tmp_path / "logs").glob("*.log"))) == 2
    rc, out = _run(tmp_path, "--", "test_x.py", "-k", "not slow")
    assert rc == 1 and "3 done before, 1 to run" in out, out  # only the failure runs again
    (tmp_path / "more.txt").write_text("# passed elsewhere\ntest_x.py::test_b\n")
    rc, out = _run(tmp_path, "--done", "more.txt", "--", "test_x.py", "-k", "not slow")
    assert rc == 0 and "4 done before, 0 to run" in out, out
    assert (tmp_path / "more.txt").read_text().count("test_x") == 1  # --done is read only


def test_a_chunk_past_the_deadline_is_killed_and_left_to_do(tmp_path):
    (tmp_path / "test_x.py").write_text(TESTS)
    rc, out = _run(
        tmp_path,
        "--chunk",
        "5",
        "--deadline",
        "20",  # room for pytest's start-up on a loaded 2-core host (test_slow sleeps 60)
        "--start-margin",
        "0",
        "--",
        "test_x.py",
        "-k",
        "a or slow",
    )
    assert rc == 3, out
    assert "killed at the deadline" in out and "LEFT test_x.py::test_slow" in out
    assert _done(tmp_path) == ["test_x.py::test_a"]  # what finished is kept


def test_parse_log_reads_outcomes_and_memcheck_summary():
    log = "\n".join(
        [
            "tests/t.py::test_a[cuda-1] PASSED                 [ 33%]",
            "tests/t.py::test_c[1-per batch] PASSED            [ 66%]",
            "tests/t.py::test_b FAILED                         [100%]",
            "========= Invalid __global__ read of size 8 bytes",
            "=========     at gs_gather_segments+0x1f0",
            "========= Invalid __global__ write of size 4 bytes",
            "========= Program hit cudaErrorIllegalAddress on CUDA API call to cudaMemcpyAsync.",
            "========= ERROR SUMMARY: 3 errors",
            "============================== 1 passed, 1 failed in 3.1s =========================",
        ]
    )
    outcomes, errors, reports = memcheck.parse_log(log)
    assert outcomes == {
        "tests/t.py::test_a[cuda-1]": "PASSED",
        "tests/t.py::test_b": "FAILED",
        "tests/t.py::test_c[1-per batch]": "PASSED",
    }  # an id with a space
    assert (errors, reports) == (3, 3)
    clean = "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors"
    assert memcheck.parse_log(clean)[1:] == (0, 0)
    assert memcheck.parse_log("killed mid-way")[1] == -1


def test_command_runs_pytest_under_memcheck():
    cmd = memcheck.command(["t.py::a"], "compute-sanitizer", ["--kernel-name=kns=gs_"])
    assert cmd[:5] == ["compute-sanitizer", "--tool", "memcheck", "--error-exitcode", "1"]
    assert cmd[5:7] == ["--show-backtrace", "device"]  # host backtraces slow it down
    assert cmd[7] == "--kernel-name=kns=gs_"
    assert cmd[8:11] == [sys.executable, "-m", "pytest"] and "no:xdist" in cmd
    assert cmd[-1] == "t.py::a"
    assert memcheck.command(["t.py::a"], "none", [])[0] == sys.executable


def test_a_chunk_with_memcheck_errors_marks_nothing_done(tmp_path):
    (tmp_path / "test_x.py").write_text(TESTS)
    # what memcheck prints at the end of a process with errors (plain pytest here)
    (tmp_path / "conftest.py").write_text(
        "import os\n"
        "def pytest_unconfigure(config):\n"
        "    os.write(1, b'========= Invalid __global__ read of size 4 bytes\\n'\n"
        "                b'========= ERROR SUMMARY: 1 error\\n')\n"
    )
    rc, out = _run(tmp_path, "--", "test_x.py", "-k", "a or c")
    assert rc == 1 and "memcheck errors 1, error reports 1" in out, out
    assert _done(tmp_path) == []  # the passed tests are run again next time


@pytest.mark.parametrize(
    "allocator, env",
    [
        ("nocache", {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "GSAMPLE_CUDA_GRAPHS": "0"}),
        (
            "async",
            {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync", "GSAMPLE_CUDA_GRAPHS": "0"},
        ),
        ("cached", {"PYTORCH_NO_CUDA_MEMORY_CACHING": None, "GSAMPLE_CUDA_GRAPHS": None}),
    ],
)
def test_allocator_sets_pytorch_environment(tmp_path, monkeypatch, allocator, env):
    for var in ("PYTORCH_NO_CUDA_MEMORY_CACHING", "GSAMPLE_CUDA_GRAPHS"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "test_env.py").write_text(
        f"import os\ndef test_env():\n"
        f"    assert {{v: os.environ.get(v) for v in {list(env)!r}}} == {env!r}\n"
    )
    rc, out = _run(tmp_path, "--allocator", allocator, "--", "test_env.py")
    assert rc == 0 and f"allocator {allocator}" in out, out
    assert _done(tmp_path) == ["test_env.py::test_env"]


@pytest.mark.parametrize(
    "args, name",
    [
        (["--jobs", "0"], "--jobs"),
        (["--chunk", "0"], "--chunk"),
        (["--deadline", "0"], "--deadline"),
        (["--start-margin", "-1"], "--start-margin"),
        (["--done", "missing.txt"], "--done"),
        (["--allocator", "pinned"], "--allocator"),
    ],
)
def test_bad_arguments_are_named(tmp_path, args, name):
    rc, out = _run(tmp_path, *args)
    assert rc == 2 and name in out, out
