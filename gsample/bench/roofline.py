"""The harness's roofline (``--roofline``): the device's peaks measured in the run, the least
bytes a workload's samples must move, and the bytes its kernels moved (Nsight Compute, on a
sample of mini-batches, scaled to the epoch).

* :func:`microbenchmarks`: a STREAM-style copy and a random gather of 4- and 8-byte elements
  (an index of the same width, uniform) from a source of 8 GiB (smaller with ``--quick``,
  on the CPU, or where memory is short: the record says so);
* :class:`BoundTally`: per output, the bytes the sample itself must read and write
  (:data:`BOUND_MODELS`), summed over an epoch; the bound's seconds are those bytes over the
  random-gather peak of the graph's row-index width;
* :func:`measured`: one mode's DRAM bytes in a sampled region, scaled to the timed epoch,
  as achieved GB/s, a share of that peak, and beside the bound.
"""

from __future__ import annotations

import math
import statistics
import time

import torch

__all__ = [
    "BOUND_MODELS",
    "MICROBENCHMARK",
    "SOURCE_BYTES",
    "BoundTally",
    "copy_bandwidth",
    "gather_bandwidth",
    "gather_inputs",
    "measured",
    "microbenchmarks",
    "peak_of",
    "region_batches",
    "table_lines",
    "timed_batches",
    "with_bound_times",
]

GIB = 1 << 30
#: the ``workload`` of a microbenchmark's region in the ncu worker's output
MICROBENCHMARK = "_microbenchmark"
#: the random gather's source: far beyond any L2, so every gathered element is a DRAM access
SOURCE_BYTES = 8 * GIB
_FRONTIER = "each frontier id and its two indptr entries read"
_OUT = (
    "the block written as stored (its indptr, rows, edge ids, values and row ids) and, before "
    "the last layer, the next frontier (its nodes) written"
)
#: what the bound counts per workload (the least a correct sampler of it reads and writes)
BOUND_MODELS = {
    "graphsage": f"per layer: {_FRONTIER}, one row per sampled edge read; {_OUT}",
    "ladies": f"per layer: {_FRONTIER}, every in-edge of the frontier read (its row and "
    f"value: the row probabilities need them all); {_OUT}",
    "deepwalk": "each seed read; per step the current node's two indptr entries and one row "
    "read; a walk that stops reads its dead end's indptr; the walk tensor written whole",
    "node2vec": "as deepwalk, and per step after the first one row of the previous node "
    "read (the edge test x -> u probes its neighbours at least once)",
}


# ------------------------------------------------------------------ microbenchmarks
def _seconds(fn, device) -> float:
    """Seconds of ``fn()``: CUDA events on a GPU, the host clock elsewhere."""
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def copy_bandwidth(device, array_bytes: int, repeats: int = 5) -> dict:
    """STREAM-style copy bandwidth: ``dst.copy_(src)`` of two float32 arrays.

    Returns
    -------
    dict
        ``GB_per_s`` of the best of ``repeats`` (bytes = read + written), ``bytes``,
        ``array_bytes``, ``seconds_best``, ``seconds_median``.

    Examples
    --------
    >>> import torch
    >>> copy_bandwidth(torch.device("cpu"), 1 << 20, 2)["GB_per_s"] > 0
    True
    """
    n = max(array_bytes // 4, 1)
    src = torch.ones(n, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)  # warm-up
    times = [_seconds(lambda: dst.copy_(src), device) for _ in range(repeats)]
    nbytes = 2 * n * 4
    best = min(times)
    return {
        "kind": "copy (STREAM-style, float32, device to device)",
        "array_bytes": n * 4,
        "bytes": nbytes,
        "seconds_best": best,
        "seconds_median": statistics.median(times),
        "GB_per_s": nbytes / best / 1e9,
    }


def gather_inputs(device, elem_bytes: int, source_bytes: int, num_indices: int) -> tuple:
    """``(x, idx, out)`` of :func:`gather_bandwidth` (the ncu worker gathers the same): a
    source of ``source_bytes`` of ``elem_bytes``-wide integers, uniform indices as wide
    (seeded), and the output."""
    dtype = {4: torch.int32, 8: torch.int64}[elem_bytes]
    n = max(source_bytes // elem_bytes, 1)
    x = torch.empty(n, dtype=dtype, device=device)
    x.fill_(1)
    g = torch.Generator(device=device).manual_seed(0)
    idx = torch.randint(0, n, (num_indices,), device=device, generator=g).to(dtype)
    return x, idx, torch.empty(num_indices, dtype=dtype, device=device)


def gather_bandwidth(
    device, elem_bytes: int, source_bytes: int, num_indices: int, repeats: int = 5
) -> dict:
    """Random-gather bandwidth: ``x[idx]`` of ``elem_bytes``-wide integers (4: int32, 8: int64)
    from a source of ``source_bytes``, ``idx`` uniform and as wide as the elements.

    Returns
    -------
    dict
        ``GB_per_s`` of the best of ``repeats`` (bytes = indices read + elements read +
        elements written, what a sampler's row gather must move), the sizes, ``seconds_best``
        and ``seconds_median``.

    Examples
    --------
    >>> import torch
    >>> gather_bandwidth(torch.device("cpu"), 4, 1 << 20, 1 << 16, 2)["index_dtype"]
    'int32'
    """
    x, idx, out = gather_inputs(device, elem_bytes, source_bytes, num_indices)
    dtype, n = x.dtype, x.numel()
    torch.index_select(x, 0, idx, out=out)  # warm-up
    times = [
        _seconds(lambda: torch.index_select(x, 0, idx, out=out), device) for _ in range(repeats)
    ]
    nbytes = num_indices * 3 * elem_bytes
    best = min(times)
    return {
        "kind": f"random gather, {elem_bytes}-byte elements",
        "dtype": str(dtype).replace("torch.", ""),
        "index_dtype": str(dtype).replace("torch.", ""),
        "source_bytes": n * elem_bytes,
        "num_indices": num_indices,
        "bytes": nbytes,
        "seconds_best": best,
        "seconds_median": statistics.median(times),
        "GB_per_s": nbytes / best / 1e9,
    }


def microbenchmarks(device, quick: bool = False, free_bytes: int | None = None) -> dict:
    """The peaks of ``device`` for the roofline: ``copy``, ``gather_4B``, ``gather_8B``
    (:func:`copy_bandwidth`, :func:`gather_bandwidth`), and ``note``: why a source is smaller
    than :data:`SOURCE_BYTES` (``--quick``, the CPU, or ``free_bytes`` short), else None.

    Examples
    --------
    >>> import torch
    >>> m = microbenchmarks(torch.device("cpu"), quick=True)
    >>> sorted(m)[:3], m["note"].startswith("source")
    (['copy', 'gather_4B', 'gather_8B'], True)
    """
    gpu = device.type == "cuda"
    if gpu and free_bytes is None:
        free_bytes = torch.cuda.mem_get_info(device)[0]
    num_indices = 1 << 27 if gpu and not quick else 1 << 22 if gpu else 1 << 20
    source, why = SOURCE_BYTES, None
    if not gpu:
        source, why = 1 << (26 if quick else 28), "on the CPU"
    elif quick:
        source, why = 1 << 28, "--quick"
    else:
        # the 8-byte gather's source, its indices, its output and the int64 draw of them
        room = free_bytes - 3 * num_indices * 8 - GIB
        if room < SOURCE_BYTES:
            source = 1 << max(int(math.log2(max(room, 1 << 26))), 26)
            why = f"{free_bytes / GIB:.1f} GiB free on the device"
    repeats = 3 if quick or not gpu else 5
    out = {"copy": copy_bandwidth(device, min(source, 2 * GIB) // 2 if why else 2 * GIB, repeats)}
    for width in (4, 8):
        if gpu:  # each benchmark's arrays back before the next (and, last, to the workloads)
            torch.cuda.empty_cache()
        out[f"gather_{width}B"] = gather_bandwidth(device, width, source, num_indices, repeats)
    if gpu:
        torch.cuda.empty_cache()
    out["note"] = (
        None
        if why is None
        else f"source {source / GIB:.3g} GiB, smaller than {SOURCE_BYTES // GIB} GiB ({why}): "
        "a source within reach of the caches reads faster than DRAM"
    )
    return out


def peak_of(G, micro: dict) -> dict:
    """The peak a sampler of graph ``G`` is set against: the random gather of the width of
    ``G``'s row indices (the access its bytes mostly are).

    Returns
    -------
    dict
        ``name`` (``gather_4B`` or ``gather_8B``); ``GB_per_s``: the gather's DRAM bytes per
        second where ncu measured them (``dram_GB_per_s``: sector-granular, as a sampler's
        measured bytes are), else its useful bytes per second; ``basis``: which;
        ``useful_GB_per_s`` (what the bound divides by) and ``copy_GB_per_s``.
    """
    width = G.csc.rows.element_size()
    key = f"gather_{8 if width >= 8 else 4}B"
    m = micro[key]
    dram = m.get("dram_GB_per_s")
    return {
        "name": key,
        "GB_per_s": dram or m["GB_per_s"],
        "basis": "DRAM bytes of the gather, measured by ncu"
        if dram
        else "useful bytes of the gather (indices, elements read and written): DRAM moves "
        "whole sectors, so a sampler's DRAM GB/s can exceed it",
        "useful_GB_per_s": m["GB_per_s"],
        "copy_GB_per_s": (micro.get("copy") or {}).get("GB_per_s"),
    }


# ------------------------------------------------------------------ the bound
def _nbytes(t) -> int:
    return 0 if t is None else t.numel() * t.element_size()


class BoundTally:
    """The bytes a workload's samples must move (:data:`BOUND_MODELS`), summed over outputs.

    Parameters
    ----------
    name : str
        A workload of :data:`BOUND_MODELS`.
    G : gs.Matrix
        The graph it samples (LADIES: the normalised one).

    Examples
    --------
    >>> import torch
    >>> import gsample as gs
    >>> A = gs.Matrix.from_edge_index(torch.tensor([[0, 1, 2], [1, 2, 0]]))
    >>> t = BoundTally("deepwalk", A)
    >>> t.add(torch.tensor([[0, 2, 1], [1, 0, 2]]))
    >>> t.result()["read_bytes"]  # 2 seeds + 4 steps (2 indptr + 1 row, 8 bytes each)
    112
    """

    def __init__(self, name: str, G):
        if name not in BOUND_MODELS:
            raise ValueError(f"name: no bound model for {name!r} (one of {list(BOUND_MODELS)})")
        self.name, self.G = name, G
        self.read = self.write = 0
        self._later = []  # device counts: summed once, at the end (no sync per output)
        self.outputs = 0

    def add(self, out) -> None:
        """Count one sampler output (a walk tensor, or a list of blocks)."""
        self.outputs += 1
        if self.name in ("deepwalk", "node2vec"):
            self._walk(out)
        else:
            self._blocks(list(out))

    def _walk(self, walks) -> None:
        g = self.G.csc
        ptr, row = g.indptr.element_size(), g.rows.element_size()
        B = walks.shape[0]
        self.read += B * walks.element_size()  # the seeds, as wide as the walk's entries
        self.write += _nbytes(walks)
        if walks.shape[1] < 2:
            return
        valid = walks[:, 1:] >= 0
        steps, stopped = valid.sum(), (~valid[:, -1]).sum()
        count = (steps + stopped) * 2 * ptr + steps * row
        if self.name == "node2vec":
            count = count + (steps - valid[:, 0].sum()) * row
        self._later.append(count)

    def _blocks(self, blocks) -> None:
        g = self.G.csc
        ptr, row = g.indptr.element_size(), g.rows.element_size()
        val = 0 if g.values is None else g.values.element_size()
        for i, b in enumerate(blocks):
            c = b.csc
            cols = c.col_ids
            width = 8 if cols is None else cols.element_size()
            self.read += c.num_cols * (width + 2 * ptr)
            if self.name == "ladies":  # every in-edge of the frontier
                frontier = cols if cols is not None else torch.arange(c.num_cols, device=g.device)
                frontier = frontier.to(g.indptr.device, torch.int64)
                deg = (g.indptr[frontier + 1] - g.indptr[frontier]).sum()
                self._later.append(deg * (row + val))
            else:
                self.read += c.nnz * row
            self.write += sum(_nbytes(t) for t in (c.indptr, c.rows, c.eids, c.values, c.row_ids))
            if i + 1 < len(blocks):
                self.write += blocks[i + 1].csc.num_cols * width

    def result(self) -> dict:
        """``read_bytes``, ``write_bytes``, ``bytes`` and ``outputs`` so far."""
        read = self.read + sum(int(x) for x in self._later)
        return {
            "read_bytes": read,
            "write_bytes": self.write,
            "bytes": read + self.write,
            "outputs": self.outputs,
        }


def with_bound_times(bound: dict, modes: dict, micro: dict, G) -> dict:
    """``bound`` (:meth:`BoundTally.result` of the timed epoch) with its peak and seconds,
    and each gsample mode's ``x_bound`` (epoch seconds / bound seconds) in ``modes``'s
    ``roofline``."""
    peak = peak_of(G, micro)
    name, gbps = peak["name"], peak["useful_GB_per_s"]
    out = {**bound, "peak": name, "peak_GB_per_s": gbps, "epoch_s": bound["bytes"] / gbps / 1e9}
    for r in modes.values():
        if r.get("kind") in ("compiled", "super", "eager"):
            r.setdefault("roofline", {})["x_bound"] = (
                r["epoch_s_median"] / out["epoch_s"] if out["epoch_s"] else None
            )
    return out


# ------------------------------------------------------------------ batches and scaling
def timed_batches(epoch_batches: int, full_batches: int, super_batch=None) -> int:
    """Mini-batches a mode times when the epoch is capped at ``epoch_batches`` of
    ``full_batches``: the cap, except that a super-batched mode of ``N`` times whole
    super-batches, at least one (never scaled from fewer mini-batches than its ``N``), up
    to the full epoch.

    Examples
    --------
    >>> timed_batches(48, 192, 64), timed_batches(96, 192, 64), timed_batches(48, 192)
    (64, 128, 48)
    >>> timed_batches(48, 50, 64), timed_batches(128, 192, 64)
    (50, 128)
    """
    if not isinstance(super_batch, int) or super_batch <= 1 or epoch_batches >= full_batches:
        return epoch_batches
    return min(full_batches, -(-epoch_batches // super_batch) * super_batch)


def region_batches(sample: int, available: int, super_batch=None) -> int:
    """Mini-batches profiled for a mode: ``sample`` one at a time; whole super-batches of
    ``N``, at least one; never more than ``available``.

    Examples
    --------
    >>> region_batches(4, 384), region_batches(4, 384, 64), region_batches(4, 48, 64)
    (4, 64, 48)
    """
    n = sample
    if isinstance(super_batch, int) and super_batch > 1:
        n = -(-sample // super_batch) * super_batch
    return max(1, min(n, available))


def measured(
    region: dict,
    sampled_batches: int,
    epoch_batches: int,
    epoch_s: float,
    peak: dict,
    bound_s=None,
    bound_bytes=None,
) -> dict:
    """One mode's roofline from its sampled region (:func:`gsample.bench.ncu.regions_of`):
    the region's DRAM bytes scaled by ``epoch_batches / sampled_batches``, over the mode's
    ``epoch_s``, beside the ``peak`` (:func:`peak_of`) and the bound.

    Examples
    --------
    >>> r = measured({"read": 3e9, "write": 1e9, "kernels": 10, "na": 0}, 4, 8, 0.01,
    ...              {"name": "gather_8B", "GB_per_s": 1000.0, "basis": "b"},
    ...              bound_s=0.002, bound_bytes=2e9)
    >>> r["dram_bytes_epoch"], r["achieved_GB_per_s"], r["peak_fraction"], r["bytes_over_bound"]
    (8000000000.0, 800.0, 0.8, 4.0)
    """
    scale = epoch_batches / sampled_batches
    total = (region["read"] + region["write"]) * scale
    gbps = total / epoch_s / 1e9 if epoch_s else None
    peak_gbps, copy = peak["GB_per_s"], peak.get("copy_GB_per_s")
    return {
        "sampled_batches": sampled_batches,
        "scale": scale,
        "kernels_sampled": region["kernels"],
        "kernels_na": region["na"],
        "dram_read_bytes_sampled": region["read"],
        "dram_write_bytes_sampled": region["write"],
        "dram_bytes_epoch": total,
        "achieved_GB_per_s": gbps,
        "peak": peak["name"],
        "peak_basis": peak["basis"],
        "peak_fraction": gbps / peak_gbps if gbps is not None and peak_gbps else None,
        "copy_fraction": gbps / copy if gbps is not None and copy else None,
        "x_bound": epoch_s / bound_s if bound_s else None,
        "bytes_over_bound": total / bound_bytes if bound_bytes else None,
    }


# ------------------------------------------------------------------ the table
def _f(v, spec) -> str:
    return "-" if v is None else format(v, spec)


def _num(v) -> str:
    """A figure of any size in a few characters: whole above 100, 3 digits below."""
    return "-" if v is None else f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def table_lines(record) -> list:
    """The roofline of a ``--roofline`` record as printed lines (none for another record):
    per (workload, gsample mode) the epoch time, the DRAM bytes of an epoch, the achieved
    GB/s, its share of the matching peak, and the ratio to the bound."""
    rf = record.get("roofline")
    if not rf:
        return []
    micro = rf.get("microbenchmarks") or {}
    peaks = ", ".join(
        f"{k} {_num(v['GB_per_s'])} GB/s"
        + (f" ({_num(v['dram_GB_per_s'])} GB/s of DRAM)" if v.get("dram_GB_per_s") else "")
        for k, v in micro.items()
        if isinstance(v, dict)
    )
    lines = [
        "",
        f"roofline: peaks {peaks or '-'}"
        + (f" ({micro['note']})" if micro.get("note") else "")
        + f"; measured bytes: {rf.get('status')}"
        + (f" ({rf['why']})" if rf.get("why") else ""),
        "",
        "| workload | mode | epoch s | DRAM GB/epoch | achieved GB/s | % of peak (peak) | "
        "% of copy | bound s | x bound | bytes / bound |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, e in record.get("workloads", {}).items():
        bound = (e.get("roofline") or {}).get("bound") or {}
        for mode, r in e.get("modes", {}).items():
            m = r.get("roofline")
            if m is None:
                continue
            pct = m.get("peak_fraction")
            got = m.get("dram_bytes_epoch")
            lines.append(
                f"| {name} | {mode} | {r['epoch_s_median']:.4f} | "
                f"{_num(got and got / 1e9)} | {_num(m.get('achieved_GB_per_s'))} | "
                + ("-" if pct is None else f"{100 * pct:.1f}% ({m['peak']})")
                + f" | {_f(m.get('copy_fraction') and 100 * m['copy_fraction'], '.1f')}"
                + f" | {_f(bound.get('epoch_s'), '.3g')} | {_num(m.get('x_bound'))} | "
                f"{_num(m.get('bytes_over_bound'))} |"
                + (f" {m['why'][:80]}" if m.get("why") else "")
            )
    return lines
