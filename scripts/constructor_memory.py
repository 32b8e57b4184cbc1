"""Peak host memory of gsample's graph constructors, as a multiple of the CSC they return.

Each case runs in a fresh Python process: it builds the caller's inputs (a random edge list
of ``--edges`` edges over ``--nodes`` nodes, or its CSC, or a SNAP text file), then resets
the kernel's peak-RSS mark (``/proc/self/clear_refs``; without it, the peak is measured
from the inputs on, as ``ru_maxrss`` is) and runs the constructor once. Reported per case:

- ``csc MiB``: the bytes of the finished CSC (``indptr``, ``rows``, ``eids`` when kept,
  ``values`` when given);
- ``beyond MiB``: peak resident memory during the call minus the memory held just before
  it (the caller's inputs and the interpreter): what the constructor itself needed;
- ``ratio``: ``beyond / csc`` (the target is at most 2: the CSC itself and as much again);
- ``s``: the call's wall time.

tracemalloc does not see torch's allocations, so this reads the kernel's counters
(``VmHWM`` / ``VmRSS`` of ``/proc/self/status``). Linux only.

Examples
--------
From the repository root::

    python scripts/constructor_memory.py                       # 20M edges over 2M nodes
    python scripts/constructor_memory.py --edges 2000000 --nodes 200000 --cases edge_index
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

#: case name -> what it builds (the table's order)
CASES = {
    "edge_index": "from_edge_index, edges in random order",
    "edge_index_weighted": "from_edge_index, random order, float32 weights",
    "edge_index_by_dst": "from_edge_index, edges sorted by (dst, src)",
    "csc_sorted": "from_csc, rows ascending in every column",
    "csc_unsorted": "from_csc, rows in random order within columns",
    "read_snap": "read_snap of a text file of the random edges",
    "read_snap_undirected": "read_snap(undirected=True) of that file",
}


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


def _csc_bytes(A) -> int:
    c = A.csc
    return sum(
        t.numel() * t.element_size() for t in (c.indptr, c.rows, c.eids, c.values) if t is not None
    )


def _snap_file(edges: int, nodes: int, seed: int, folder: Path) -> Path:
    """The random edge list as a SNAP text file (written once, reused)."""
    import numpy as np
    import torch

    path = folder / f"snap_{edges}_{nodes}_{seed}.txt"
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    src, dst = _edges(edges, nodes, seed, torch)
    tmp = path.with_suffix(".part")
    with open(tmp, "w") as f:
        f.write(f"# Directed graph: {nodes} nodes, {edges} edges\n# FromNodeId\tToNodeId\n")
        step = 1 << 20
        for i in range(0, edges, step):
            block = np.stack([src[i : i + step].numpy(), dst[i : i + step].numpy()], 1)
            np.savetxt(f, block, fmt="%d", delimiter="\t")
    tmp.rename(path)
    return path


def _edges(edges: int, nodes: int, seed: int, torch):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, nodes, (edges,), generator=g), torch.randint(
        0, nodes, (edges,), generator=g
    )


def _worker(case: str, edges: int, nodes: int, seed: int, folder: Path, threads: int) -> dict:
    import torch

    import gsample as gs

    if threads:
        torch.set_num_threads(threads)
    args: tuple = ()
    kwargs: dict = {}
    if case.startswith("read_snap"):
        path = _snap_file(edges, nodes, seed, folder)
        fn = gs.datasets.read_snap
        args = (path,)
        kwargs = {
            "num_nodes": nodes,
            "undirected": case.endswith("undirected"),
            "progress": False,
        }
    else:
        src, dst = _edges(edges, nodes, seed, torch)
        if case in ("edge_index_by_dst", "csc_sorted", "csc_unsorted"):
            if case == "csc_unsorted":  # by column, a random order within each column
                shuffle = torch.randperm(edges, generator=torch.Generator().manual_seed(seed + 1))
                order = shuffle[torch.sort(dst[shuffle], stable=True).indices]
                del shuffle
            else:
                order = torch.sort(dst * nodes + src, stable=True).indices
            src, dst = src[order].contiguous(), dst[order].contiguous()
            del order
        if case.startswith("csc"):
            indptr = torch.zeros(nodes + 1, dtype=torch.int64)
            torch.cumsum(torch.bincount(dst, minlength=nodes), 0, out=indptr[1:])
            fn = gs.Matrix.from_csc
            args = (indptr, src)
            del dst
        else:
            fn = gs.Matrix.from_edge_index
            args = (torch.stack([src, dst]),)
            kwargs = {"num_nodes": nodes}
            if case == "edge_index_weighted":
                kwargs["weight"] = torch.rand(edges, generator=torch.Generator().manual_seed(7))
            del src, dst
    gc.collect()
    reset = _reset_peak()
    before = _status("VmRSS")
    t0 = time.perf_counter()
    A = fn(*args, **kwargs)
    seconds = time.perf_counter() - t0
    peak = _status("VmHWM")
    return {
        "case": case,
        "edges": A.num_edges,
        "nodes": A.num_nodes,
        "csc": _csc_bytes(A),
        "eids": A.csc.eids is not None,
        "beyond": peak - before,
        "seconds": seconds,
        "reset": reset,
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--edges", type=int, default=20_000_000, help="edges (default 20M)")
    p.add_argument("--nodes", type=int, default=2_000_000, help="nodes (default 2M)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--cases", nargs="+", default=list(CASES), choices=list(CASES), help="cases to run"
    )
    p.add_argument(
        "--folder",
        type=Path,
        default=Path("/tmp/gsample_constructor_memory"),
        help="where the SNAP text file is written (once per size and seed)",
    )
    p.add_argument(
        "--threads", type=int, default=0, help="torch CPU threads (default: torch's own)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object per case")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        print(json.dumps(_worker(a.worker, a.edges, a.nodes, a.seed, a.folder, a.threads)))
        return 0
    if any(c.startswith("read_snap") for c in a.cases):  # written outside the measurement
        _snap_file(a.edges, a.nodes, a.seed, a.folder)
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    mib = 1 << 20
    if not a.json:
        print(f"{a.edges:,} edges over {a.nodes:,} nodes")
        print(f"{'case':<22} {'eids':>5} {'csc MiB':>9} {'beyond MiB':>11} {'ratio':>6} {'s':>7}")
    for case in a.cases:
        cmd = [sys.executable, __file__, "--worker", case, "--edges", str(a.edges)]
        cmd += ["--nodes", str(a.nodes), "--seed", str(a.seed), "--folder", str(a.folder)]
        cmd += ["--threads", str(a.threads)]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if out.returncode:
            print(f"{case:<22} failed:\n{out.stderr[-2000:]}")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        if a.json:
            print(json.dumps(r))
            continue
        note = "" if r["reset"] else "  (peak since start: clear_refs refused)"
        print(
            f"{case:<22} {'yes' if r['eids'] else 'no':>5} {r['csc'] / mib:>9.1f} "
            f"{r['beyond'] / mib:>11.1f} {r['beyond'] / r['csc']:>6.2f} {r['seconds']:>7.2f}" + note
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
