"""Peak memory of gsample's graph constructors beyond the caller's inputs, as a multiple of
the graph they return (``Matrix.from_edge_index``, ``Matrix.from_csc``,
``gs.datasets.read_snap``).

Each case runs in a fresh Python process: it builds the caller's inputs (a random edge list
of ``--edges`` edges over ``--nodes`` nodes with repeats and self-loops, or its CSC, or a
SNAP text file of it), marks the memory held then (the inputs and the interpreter), runs the
constructor once and reads the peak. Per case:

- ``graph MiB``: the bytes of what the call returns (``indptr``, ``rows``, ``eids`` when
  kept, ``values`` when given, the edge times when kept);
- ``beyond MiB``: the peak during the call minus the memory held just before it: what the
  constructor needed, the graph it returns included;
- ``ratio``: ``beyond / graph``; the target is at most 2 (the graph and as much again).

Where the memory is read:

- ``--device cpu``: the kernel's counters of the process (``VmHWM`` / ``VmRSS`` of
  ``/proc/self/status``; the peak mark reset through ``/proc/self/clear_refs`` after the
  inputs exist, and the C heap's free memory given back first, so that a freed input
  scratch is not reused unseen). Where the reset is refused, a thread samples ``VmRSS``
  every millisecond instead (the table says so). ``tracemalloc`` does not see torch's
  allocations. Linux only.
- ``--device cuda``: the inputs are made on the GPU and the peak is
  ``torch.cuda.max_memory_allocated`` minus the memory allocated before the call (torch's
  own allocations, exactly; the caching allocator's reserve aside). ``read_snap`` has no
  device: its cases are measured on the host either way.

``--before REV`` measures the tree of a git revision too (its ``gsample`` extracted with
``git archive`` into a temporary folder), beside this checkout's: the same inputs, one
process per case and tree.

Examples
--------
From the repository root::

    python benchmarks/constructors_memory.py                       # 20M edges, 2M nodes
    python benchmarks/constructors_memory.py --before 38d5981^     # and the tree before
    python benchmarks/constructors_memory.py --device cuda --edges 400000000 --nodes 50000000
    python benchmarks/constructors_memory.py --edges 2000000 --nodes 200000 --cases edge_index
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import inspect
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: case name -> what it builds (the table's order)
CASES = {
    "edge_index": "from_edge_index, int64 edges in random order",
    "edge_index_int32": "from_edge_index, int32 edges in random order",
    "edge_index_weighted": "from_edge_index, random order, float32 weights",
    "edge_index_by_dst": "from_edge_index, edges sorted by (dst, src)",
    "csc_sorted": "from_csc, rows ascending in every column",
    "csc_partly": "from_csc, rows in random order in a tenth of the columns",
    "csc_unsorted": "from_csc, rows in random order within every column",
    "read_snap": "read_snap of a text file of the random edges",
    "read_snap_undirected": "read_snap(undirected=True) of that file",
}


# ----------------------------------------------------------------------------- memory
def _status(field: str) -> int:
    """A ``kB`` field of ``/proc/self/status``, in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def _reset_peak() -> bool:
    """Reset the peak-RSS mark (``VmHWM``) to the current RSS; False where refused."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _trim_heap() -> None:
    """Give the C heap's free memory back to the system (glibc), so that the call cannot
    reuse the inputs' freed scratch without the resident size showing it."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to give back
        ctypes.CDLL("libc.so.6").malloc_trim(0)


class _Sampler(threading.Thread):
    """The largest ``VmRSS`` seen, read every millisecond (where the peak mark cannot be
    reset: a peak shorter than that may be missed)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak = _status("VmRSS")
        self.done = threading.Event()

    def run(self):
        while not self.done.wait(0.001):
            self.peak = max(self.peak, _status("VmRSS"))

    def stop(self) -> int:
        self.done.set()
        self.join()
        return max(self.peak, _status("VmRSS"))


def _graph_bytes(A) -> int:
    c = A.csc
    parts = [c.indptr, c.rows, c.eids, c.values, getattr(A, "edge_time", None)]
    return sum(t.numel() * t.element_size() for t in parts if t is not None)


# ----------------------------------------------------------------------------- inputs
def _edges(edges: int, nodes: int, seed: int, device: str):
    import torch

    g = torch.Generator().manual_seed(seed)  # drawn on the host: the same graph anywhere
    src = torch.randint(0, nodes, (edges,), generator=g)
    dst = torch.randint(0, nodes, (edges,), generator=g)
    return src.to(device), dst.to(device)


def _snap_file(edges: int, nodes: int, seed: int, folder: Path) -> Path:
    """The random edge list as a SNAP text file (written once per size and seed)."""
    import numpy as np

    path = folder / f"snap_{edges}_{nodes}_{seed}.txt"
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    src, dst = _edges(edges, nodes, seed, "cpu")
    tmp = path.with_suffix(".part")
    with open(tmp, "w") as f:
        f.write(f"# Directed graph: {nodes} nodes, {edges} edges\n# FromNodeId\tToNodeId\n")
        step = 1 << 20
        for i in range(0, edges, step):
            block = np.stack([src[i : i + step].numpy(), dst[i : i + step].numpy()], 1)
            np.savetxt(f, block, fmt="%d", delimiter="\t")
    tmp.rename(path)
    return path


def _inputs(case: str, edges: int, nodes: int, seed: int, device: str, folder: Path):
    """``(function, args, kwargs)`` of a case, its inputs made."""
    import torch

    import gsample as gs

    if case.startswith("read_snap"):
        kw = {"num_nodes": nodes, "undirected": case.endswith("undirected"), "progress": False}
        return gs.datasets.read_snap, (str(_snap_file(edges, nodes, seed, folder)),), kw
    src, dst = _edges(edges, nodes, seed, device)
    if case in ("edge_index_by_dst", "csc_sorted", "csc_partly", "csc_unsorted"):
        # one copy of the edges alive at a time (a 3.2B-edge graph's two take 52 GB)
        held = [torch.stack([src, dst])]
        del src, dst
        src, dst = _by_column(held, nodes, case, seed)
    if case.startswith("csc"):
        indptr = torch.zeros(nodes + 1, dtype=torch.int64, device=device)
        torch.cumsum(torch.bincount(dst, minlength=nodes), 0, out=indptr[1:])
        del dst
        return gs.Matrix.from_csc, (indptr, src.contiguous()), {}
    ei = torch.stack([src, dst])
    del src, dst
    if case == "edge_index_int32":
        ei = ei.to(torch.int32)
    kw = {"num_nodes": nodes}
    if case == "edge_index_weighted":
        kw["weight"] = torch.rand(edges, generator=torch.Generator().manual_seed(7)).to(device)
    return gs.Matrix.from_edge_index, (ei,), kw


def _by_column(held: list, nodes: int, case: str, seed: int):
    """The edges of ``held``'s edge index (taken out of the list, so that it is freed once
    ordered) ordered by ``(dst, src)``, or by ``dst`` then a random order within every
    column (``csc_unsorted``) or within about a tenth of them (``csc_partly``).

    torch.sort takes fewer than 2**31 elements, and a 3.2B-edge graph has more: the edges
    are grouped by column through gsample's own construction (ranges of columns, each
    sorted alone), then each range of under 2**30 edges is shuffled by ``(column, noise)``.
    """
    import torch

    import gsample as gs
    from gsample.matrix.convert import column_ranges

    c = gs.Matrix.from_edge_index(held.pop(), num_nodes=nodes).csc
    indptr, rows = c.indptr, c.rows
    del c
    counts = indptr[1:] - indptr[:-1]
    dst = torch.repeat_interleave(
        torch.arange(nodes, device=rows.device), counts, output_size=rows.numel()
    )
    if case in ("csc_partly", "csc_unsorted"):
        g = torch.Generator().manual_seed(seed + 1)
        pick = None
        if case == "csc_partly":
            pick = (torch.rand(nodes, generator=g) < 0.1).to(rows.device)
        for c0, _c1, p0, p1 in column_ranges(indptr, 1 << 30):
            noise = torch.rand(p1 - p0, generator=g).to(rows.device)
            if pick is not None:
                noise = torch.where(pick[dst[p0:p1]], noise, 0.0)
            # (column, noise): rows shuffled within their columns, columns kept in place
            key = (dst[p0:p1] - c0).to(torch.float64) * 2 + noise.to(torch.float64)
            order = torch.sort(key, stable=True).indices
            rows[p0:p1] = rows[p0:p1][order]
            del noise, key, order
    return rows, dst


# ----------------------------------------------------------------------------- one case
def _worker(case: str, a) -> dict:
    import torch

    import gsample

    if a.threads:
        torch.set_num_threads(a.threads)
    if a.min_chunk:
        from gsample.matrix import convert

        convert.MIN_CHUNK = a.min_chunk
    device = "cpu" if case.startswith("read_snap") else a.device
    fn, args, kwargs = _inputs(case, a.edges, a.nodes, a.seed, device, a.folder)
    # an older tree's constructors may lack a keyword (read_snap's progress)
    known = inspect.signature(fn).parameters
    kwargs = {k: v for k, v in kwargs.items() if k in known}
    sampler = None
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        how = "cuda allocator"
    else:
        _trim_heap()
        reset = _reset_peak()
        before = _status("VmRSS")
        how = "rss peak"
        if not reset:
            sampler = _Sampler()
            sampler.start()
            how = "rss sampled"
    t0 = time.perf_counter()
    A = fn(*args, **kwargs)
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    if device == "cuda":
        peak = torch.cuda.max_memory_allocated()
    else:
        peak = sampler.stop() if sampler is not None else _status("VmHWM")
    return {
        "case": case,
        "source": str(Path(gsample.__file__).parent.parent),
        "device": device,
        "how": how,
        "edges": A.num_edges,
        "nodes": A.num_nodes,
        "graph": _graph_bytes(A),
        "eids": A.csc.eids is not None,
        "beyond": peak - before,
        "seconds": seconds,
    }


def _run_case(case: str, a, source: Path) -> dict:
    """One case in a fresh process importing gsample from ``source``."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", case, "--edges", str(a.edges)]
    cmd += ["--nodes", str(a.nodes), "--seed", str(a.seed), "--folder", str(a.folder)]
    cmd += ["--threads", str(a.threads), "--device", a.device, "--min-chunk", str(a.min_chunk)]
    path = str(source) + os.pathsep + os.environ.get("PYTHONPATH", "")
    out = subprocess.run(
        cmd, env=dict(os.environ, PYTHONPATH=path), capture_output=True, text=True, cwd=source
    )
    if out.returncode:
        return {"case": case, "error": out.stderr.strip().splitlines()[-1:] or ["failed"]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _extract(rev: str, folder: Path) -> Path:
    """``gsample`` of git revision ``rev`` (read with ``git archive``: nothing in the
    repository changes) under ``folder``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "gsample"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--edges", type=int, default=20_000_000, help="edges (default 20M)")
    p.add_argument("--nodes", type=int, default=2_000_000, help="nodes (default 2M)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    p.add_argument("--before", metavar="REV", help="also measure gsample as of this git revision")
    p.add_argument(
        "--folder",
        type=Path,
        default=Path(tempfile.gettempdir()) / "gsample_constructor_memory",
        help="where the SNAP text file is written (once per size and seed)",
    )
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (default: torch's)")
    p.add_argument(
        "--min-chunk",
        type=int,
        default=0,
        help="the construction's smallest range of edges (gsample.matrix.convert.MIN_CHUNK; "
        "default: its own): the scratch follows the range, so a small graph measured with a "
        "small range shows the ratio of a large one",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object per case")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.folder = a.folder.resolve()
    if a.worker:
        print(json.dumps(_worker(a.worker, a)))
        return 0
    if any(c.startswith("read_snap") for c in a.cases):  # written outside the measurement
        _snap_file(a.edges, a.nodes, a.seed, a.folder)
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"now": ROOT}
        if a.before:
            trees = {"before": _extract(a.before, Path(tmp)), "now": ROOT}
        mib = 1 << 20
        if not a.json:
            print(f"{a.edges:,} edges over {a.nodes:,} nodes, --device {a.device}")
            head = "".join(f" {t + ' MiB':>11} {'ratio':>6} {'s':>7}" for t in trees)
            print(f"{'case':<21} {'eids':>5} {'graph MiB':>10}{head}  memory read")
        for case in a.cases:
            rows = {t: _run_case(case, a, src) for t, src in trees.items()}
            if a.json:
                for t, r in rows.items():
                    print(json.dumps({"tree": t, **r}))
                continue
            now = rows["now"]
            if "error" in now:
                print(f"{case:<21} failed: {now['error']}")
                continue
            line = f"{case:<21} {'yes' if now['eids'] else 'no':>5} {now['graph'] / mib:>10.1f}"
            for r in rows.values():
                if "error" in r:
                    line += f" {'failed':>11} {'':>6} {'':>7}"
                    continue
                ratio = r["beyond"] / max(r["graph"], 1)  # against the graph it returns
                line += f" {r['beyond'] / mib:>11.1f} {ratio:>6.2f} {r['seconds']:>7.2f}"
            print(line + f"  {now['how']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
