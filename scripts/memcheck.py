"""Run a pytest selection under ``compute-sanitizer --tool memcheck``, sharded and resumable.

pytest-xdist workers make no progress under compute-sanitizer, and one sanitized process runs
the CUDA part of the suite far slower than the GPU allows, so this script runs ``--jobs``
sanitized pytest processes at once, each on a contiguous chunk of the selection (contiguous:
module-scoped fixtures are built once per chunk, not once per test). Every test that passed is
appended to ``LOG_DIR/done.txt``; a later call skips those (and those of ``--done`` lists), so a
long selection can be spread over several calls with a ``--deadline`` each (a chunk still
running at the deadline is killed, and its unfinished tests stay to do).

PyTorch's caching allocator is off, so a read past the end of any tensor is a read past the end
of its own allocation, which memcheck sees (inside a cached block it would not: the block
is memory CUDA handed out, and memcheck checks allocations, not tensors).
``--allocator nocache`` (default) gives every tensor a ``cudaMalloc`` of its own
(``PYTORCH_NO_CUDA_MEMORY_CACHING=1``); ``--allocator async`` a ``cudaMallocAsync`` of its own
(``PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync``), which memcheck tracks just as
precisely and which frees without a device-wide synchronisation (each free of
``cudaMalloc`` memory waits for the device, and under memcheck every wait is long). Both run
without CUDA graphs (``GSAMPLE_CUDA_GRAPHS=0``; the same samples): with ``cudaMalloc`` a
capture is refused, and memcheck reports every replayed write into a graph's
``cudaMallocAsync`` memory as out of bounds, even for plain PyTorch code (a captured
``x[idx] * 3`` is reported so).
``--allocator cached`` keeps PyTorch's caching allocator and the graphs: it checks the
replays, but not a read past a tensor's end that stays inside its cached block.

Host backtraces are off (``--show-backtrace device``): collecting them makes every CUDA call
slower the longer a process runs (the cost grows with every call recorded, so a long
selection would slow down call after call); an error report still names the kernel and its
device backtrace.

Examples
--------
From the repository root, on a GPU machine::

    python3 scripts/memcheck.py --jobs 8 --deadline 570 --log-dir memcheck -- -m cuda tests
    python3 scripts/memcheck.py --jobs 8 --deadline 570 --log-dir memcheck -- -m cuda tests
    # the same again goes on where the first call stopped

Exit status: 0 when every selected test passed under memcheck with 0 errors, 1 when a test
failed or memcheck reported an error, 3 when tests are left to do (call again).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

# a test id may hold spaces (a parametrize id such as "per batch"): up to the first outcome
_RESULT = re.compile(r"^(\S+::.+?) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b", re.M)
_SUMMARY = re.compile(r"^========= ERROR SUMMARY: (\d+) errors?", re.M)
# an error report's first line ("========= Invalid __global__ read ...", "========= Program hit
# cudaErrorIllegalAddress ..."); its detail lines are indented, pytest's rules have no space
_REPORT = re.compile(r"^========= (?!ERROR SUMMARY|COMPUTE-SANITIZER)\S", re.M)


@dataclass
class ChunkResult:
    """What one sanitized pytest process did."""

    name: str
    tests: list  # node ids it was given
    outcomes: dict  # node id -> PASSED / FAILED / ERROR / SKIPPED ...
    memcheck_errors: int  # memcheck's ERROR SUMMARY (-1: no summary, the process was killed)
    reports: int  # memcheck error reports in the log ("Invalid ...", "Program hit ...")
    returncode: int  # None when killed at the deadline
    seconds: float

    @property
    def unfinished(self) -> list:
        return [t for t in self.tests if t not in self.outcomes]


def parse_log(text: str) -> tuple[dict, int, int]:
    """Per-test outcomes of a ``pytest -v`` log, memcheck's error count and error reports.

    Returns ``(outcomes, errors, reports)``; ``errors`` is -1 when the log has no
    ``ERROR SUMMARY`` line (the sanitizer did not finish).
    """
    outcomes = {m.group(1): m.group(2) for m in _RESULT.finditer(text)}
    summaries = _SUMMARY.findall(text)
    errors = int(summaries[-1]) if summaries else -1
    return outcomes, errors, len(_REPORT.findall(text))


def collect(selection: list[str]) -> list[str]:
    """Node ids of ``selection`` in collection order (``pytest --collect-only -q``)."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:xdist",
            "-p",
            "no:cacheprovider",
            *selection,
        ],
        capture_output=True,
        text=True,
    )
    ids = [line.strip() for line in out.stdout.splitlines() if "::" in line]
    if out.returncode not in (0, 5) or (not ids and out.returncode != 5):
        raise RuntimeError(f"pytest could not collect {selection}:\n{out.stdout}\n{out.stderr}")
    return ids


def command(tests: list[str], sanitizer: str, sanitizer_args: list[str]) -> list[str]:
    """The command that runs ``tests`` (node ids) in one pytest process under memcheck."""
    pytest = [
        sys.executable,
        "-m",
        "pytest",
        "-v",
        "-p",
        "no:xdist",
        "-p",
        "no:cacheprovider",
        "--durations=10",
        *tests,
    ]
    if sanitizer == "none":  # for tests of this script (no GPU)
        return pytest
    return [
        sanitizer,
        "--tool",
        "memcheck",
        "--error-exitcode",
        "1",
        "--show-backtrace",
        "device",
        *sanitizer_args,
        *pytest,
    ]


#: environment of each allocator choice: every tensor an allocation of its own (nocache,
#: async; CUDA graphs off), or PyTorch's caching allocator with graphs replayed (cached)
ALLOCATORS = {
    "nocache": {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "GSAMPLE_CUDA_GRAPHS": "0"},
    "async": {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync", "GSAMPLE_CUDA_GRAPHS": "0"},
    "cached": {},
}


def run_chunk(name, tests, log_dir: Path, end: float, cmd, allocator="nocache") -> ChunkResult:
    """Run one chunk until it ends or the deadline ``end`` (``time.monotonic``) passes."""
    t0, log = time.monotonic(), log_dir / f"{name}.log"
    env = dict(os.environ, **ALLOCATORS[allocator])
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env)
        try:
            rc = proc.wait(timeout=max(end - t0, 0.0))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rc = None
    outcomes, errors, reports = parse_log(log.read_text(errors="replace"))
    return ChunkResult(name, tests, outcomes, errors, reports, rc, time.monotonic() - t0)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--jobs", type=int, default=8, help="sanitized processes at once")
    p.add_argument("--chunk", type=int, default=25, help="tests per process")
    p.add_argument(
        "--deadline",
        type=float,
        default=570.0,
        help="seconds: all chunks stop at it (their unfinished tests stay to do)",
    )
    p.add_argument(
        "--start-margin",
        type=float,
        default=60.0,
        help="seconds: no chunk starts later than this before the deadline",
    )
    p.add_argument("--log-dir", type=Path, default=Path("memcheck"), help="one log per chunk")
    p.add_argument(
        "--done",
        type=Path,
        action="append",
        default=[],
        help="more lists of tests that passed already (read only; LOG_DIR/done.txt, "
        "where this run appends, is always read)",
    )
    p.add_argument(
        "--sanitizer",
        default="compute-sanitizer",
        help="the sanitizer executable ('none': plain pytest, for tests)",
    )
    p.add_argument(
        "--sanitizer-arg",
        action="append",
        default=[],
        dest="sanitizer_args",
        help="one word of an extra sanitizer option, e.g. --sanitizer-arg=--kernel-name "
        "--sanitizer-arg=kns=gs_ (check only gsample's kernels)",
    )
    p.add_argument(
        "--allocator",
        choices=sorted(ALLOCATORS),
        default="nocache",
        help="how PyTorch allocates: cudaMalloc per tensor (nocache), "
        "cudaMallocAsync per tensor (async), both without CUDA graphs, or its "
        "caching allocator, CUDA graphs replayed (cached)",
    )
    p.add_argument(
        "selection",
        nargs="*",
        default=["-m", "cuda", "tests"],
        help="pytest arguments that select the tests (after --)",
    )
    a = p.parse_args(argv)
    for name in ("jobs", "chunk"):
        if getattr(a, name) < 1:
            p.error(f"--{name}: expected at least 1, got {getattr(a, name)}")
    if a.deadline <= 0:
        p.error(f"--deadline: expected seconds > 0, got {a.deadline}")
    if a.start_margin < 0:
        p.error(f"--start-margin: expected seconds >= 0, got {a.start_margin}")
    for path in a.done:
        if not path.is_file():
            p.error(f"--done: no such file {path}")
    a.log_dir.mkdir(parents=True, exist_ok=True)
    done_file = a.log_dir / "done.txt"
    done = set()
    for path in [done_file, *a.done]:  # one node id per line, '#' comments
        if path.exists():
            done |= {
                ln.strip()
                for ln in path.read_text().splitlines()
                if ln.strip() and not ln.startswith("#")
            }

    todo = [t for t in collect(a.selection) if t not in done]
    chunks = [todo[i : i + a.chunk] for i in range(0, len(todo), a.chunk)]
    start = time.monotonic()
    end = start + a.deadline
    stamp = time.strftime("%Y%m%d-%H%M%S")
    print(
        f"{len(done)} done before, {len(todo)} to run in {len(chunks)} chunks of "
        f"<= {a.chunk}, {a.jobs} at once, allocator {a.allocator}"
    )

    def job(i_tests):
        i, tests = i_tests
        if time.monotonic() > end - a.start_margin:  # too late to finish anything
            return ChunkResult(f"{stamp}-{i:03d}", tests, {}, -1, 0, None, 0.0)
        cmd = command(tests, a.sanitizer, a.sanitizer_args)
        return run_chunk(f"{stamp}-{i:03d}", tests, a.log_dir, end, cmd, a.allocator)

    results = []
    with ThreadPoolExecutor(a.jobs) as pool, tqdm(total=len(todo), unit="test") as bar:
        for fut in as_completed([pool.submit(job, c) for c in enumerate(chunks)]):
            r = fut.result()
            results.append(r)
            bar.update(len(r.tests))
            # skips are final too (their reasons do not change between calls); memcheck
            # prints an error when its kernel ends, before the test can pass, so a test that
            # passed in a chunk killed later is done if the log has no error report; a chunk
            # with errors gives none (they are not attributed to tests: run it again)
            clean = r.reports == 0 and r.memcheck_errors <= 0
            ok = [t for t, o in r.outcomes.items() if clean and o in ("PASSED", "SKIPPED")]
            with open(done_file, "a") as f:
                f.writelines(t + "\n" for t in ok)
    results.sort(key=lambda r: r.name)
    return report(results, len(done), a.log_dir)


def report(results: list[ChunkResult], done_before: int, log_dir: Path) -> int:
    """Print (and write to LOG_DIR/summary.txt) one line per chunk and the totals."""
    lines, bad, left = [], [], []
    for r in results:
        counts = {o: sum(v == o for v in r.outcomes.values()) for o in set(r.outcomes.values())}
        lines.append(
            f"{r.name}: {len(r.tests)} tests, {counts or 'none finished'}, "
            f"memcheck errors {r.memcheck_errors if r.memcheck_errors >= 0 else '?'}, "
            f"error reports {r.reports}, {r.seconds:.0f} s"
            + (
                ""
                if r.returncode is not None
                else " (killed at the deadline)"
                if r.seconds
                else " (not started: deadline)"
            )
        )
        bad += [t for t, o in r.outcomes.items() if o in ("FAILED", "ERROR")]
        left += r.unfinished
        if r.memcheck_errors > 0 or r.reports > 0:
            bad.append(f"{r.name}: memcheck errors")
        elif r.returncode not in (None, 0) and not any(
            o in ("FAILED", "ERROR") for o in r.outcomes.values()
        ):
            bad.append(f"{r.name}: exit status {r.returncode} (see its log)")
    passed = sum(o == "PASSED" for r in results for o in r.outcomes.values())
    lines.append(
        f"passed now {passed}, before {done_before}; failed or memcheck errors "
        f"{len(bad)}; not finished {len(left)}"
    )
    lines += [f"  BAD {t}" for t in bad] + [f"  LEFT {t}" for t in left]
    text = "\n".join(lines)
    print(text)
    with open(log_dir / "summary.txt", "a") as f:
        f.write(time.strftime("%Y-%m-%d %H:%M:%S %Z") + "\n" + text + "\n")
    return 1 if bad else (3 if left else 0)


if __name__ == "__main__":
    sys.exit(main())
