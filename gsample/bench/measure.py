"""Timing of the harness: epochs, their median and spread, peak memory, kernels and host syncs
per mini-batch on a GPU, the device's random-gather bandwidth and the machine's load; the
graph's degree profile and the work a seed yields, which the figures are read against.

Every figure of :mod:`gsample.bench` comes from here, so that all modes and peers are timed
the same way: one warm-up epoch, then the median of ``repeats`` epochs, the device
synchronised around every epoch. Outputs are dropped as they come, as a training loop drops
each mini-batch, where their size is known on the host (blocks, subgraphs: ``host_count``);
those whose count reads the device (walk tensors) are kept and counted after the clock
stops. (Keeping a whole epoch's blocks alive would slow the epoch it measures: the caching
allocator could no longer recycle a batch's blocks for the next.)
"""

from __future__ import annotations

import gc
import os
import resource
import statistics
import time

import torch
from torch.profiler import ProfilerActivity, profile

import gsample as gs

#: CPU-side CUDA calls that wait for the device (a host synchronisation each)
SYNCS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy")


def sync(device):
    """Wait for ``device``'s queued work (a no-op on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn, device):
    """``(seconds, fn())``, the device synchronised before and after."""
    sync(device)
    start = time.perf_counter()
    out = fn()
    sync(device)
    return time.perf_counter() - start, out


def load_average():
    """The machine's 1-minute load average (``None`` where the OS has none): other processes
    share the cores, and the record says how busy they were."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def host_loop_ms(iterations: int = 200_000) -> float:
    """Milliseconds a fixed pure-Python loop takes per million iterations on the core this
    process runs on: the host's speed at that moment. A sampler's host work (its launches, a
    mini-batch's Python objects) follows it, and a lent machine's cores differ from one
    another and from minute to minute, so each epoch's record says how fast its host was.

    Examples
    --------
    >>> host_loop_ms() > 0
    True
    """
    start, total = time.perf_counter(), 0
    for i in range(iterations):
        total += i & 7
    return (time.perf_counter() - start) * 1e3 * 1_000_000 / iterations


def gather_bandwidth(
    device, src_elems: int, idx_elems: int, dtype=torch.int64, repeats: int = 10
) -> dict:
    """Random-gather bandwidth of ``device``: GB/s of ``x[idx]``.

    Parameters
    ----------
    device : torch.device
    src_elems : int
        Size of the gathered array ``x`` (of ``dtype``).
    idx_elems : int
        Number of random int64 indices.
    dtype : torch.dtype
    repeats : int
        Timed gathers after a warm-up; the median is kept.

    Returns
    -------
    dict
        ``GB_per_s`` (bytes = indices read + values read + values written), ``bytes``,
        ``seconds_median`` and the sizes.

    Examples
    --------
    >>> import torch
    >>> gather_bandwidth(torch.device("cpu"), 1 << 20, 1 << 18)["GB_per_s"] > 0
    True
    """
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.arange(src_elems, device=device).to(dtype)
    idx = torch.randint(0, src_elems, (idx_elems,), device=device, generator=g)
    out = torch.empty(idx_elems, dtype=dtype, device=device)
    torch.index_select(x, 0, idx, out=out)  # warm-up
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.index_select(x, 0, idx, out=out)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            times.append(timed(lambda: torch.index_select(x, 0, idx, out=out), device)[0])
    assert torch.equal(out, x[idx])
    t = statistics.median(times)
    nbytes = idx_elems * (idx.element_size() + 2 * x.element_size())
    return {
        "dtype": str(dtype).replace("torch.", ""),
        "src_elems": src_elems,
        "idx_elems": idx_elems,
        "bytes": nbytes,
        "seconds_median": t,
        "GB_per_s": nbytes / t / 1e9,
    }


def graph_profile(A, fanouts=()) -> dict:
    """The in-degree profile of graph ``A`` (:func:`gsample.datasets.degree_profile`: nodes,
    edges, mean, median, p99, max, and ``below``: the share of nodes with fewer in-neighbours
    than each of ``fanouts``, where a sampler of that fanout finds fewer than it asks for).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A = gs.Matrix.from_edge_index(torch.tensor([[0, 1, 2], [1, 2, 2]]))
    >>> graph_profile(A, (2,))["below"]
    {2: 0.6666666666666666}
    """
    return gs.datasets.degree_profile(A, fanouts=fanouts)


def work_per_seed(units: int, seeds: int, unit: str, most=None) -> dict:
    """What a seed yields over an epoch: ``units`` (sampled edges or walk steps) over
    ``seeds``, beside ``most``, the bound a seed could reach (a walk's length, a node-wise
    sampler's tree of fanouts), and their ratio: how much of the requested work the graph
    let the sampler do.

    Examples
    --------
    >>> work_per_seed(35_000, 1000, "sampled edges", 275)["share_of_most"]
    0.12727272727272726
    """
    per = units / seeds if seeds else None
    return {
        "unit": unit,
        "units": units,
        "seeds": seeds,
        "per_seed": per,
        "most_per_seed": most,
        "share_of_most": per / most if per is not None and most else None,
    }


def batch_list(G, seeds, batch_size):
    """The mini-batches of a fresh ``gs.DataLoader(..., seed=0)``'s first epoch, in order:
    the peers sample these, the gsample modes the same loader's epochs."""
    loader = gs.DataLoader(G, lambda A, s: None, seeds, batch_size=batch_size, seed=0)
    return [b.seeds for b in loader]


def epoch_runner(outputs, device, count, host_count=None):
    """One epoch as ``run() -> (seconds, units)``: ``outputs()`` returns an iterable of the
    epoch's sampler outputs (a ``gs.DataLoader``'s, a peer's own loader's, or calls over
    mini-batches), drawn inside the clock. ``host_count(out)``, when given, counts an
    output as it comes if it can without reading the device (else None), and the output is
    dropped; the others are kept and ``count(out)`` runs after the clock stops."""

    def run():
        sync(device)
        start = time.perf_counter()
        units, later = 0, []
        for out in outputs():
            n = None if host_count is None else host_count(out)
            if n is None:
                later.append(out)
            else:
                units += n
        sync(device)
        seconds = time.perf_counter() - start
        return seconds, units + sum(count(o) for o in later)

    return run


def loader_epoch(loader, device, count, host_count=None):
    """:func:`epoch_runner` of a ``gs.DataLoader`` (made once, as a training loop does)."""
    return epoch_runner(lambda: (b.out for b in loader), device, count, host_count)


def calls_epoch(sample, batches, device, count, host_count=None):
    """:func:`epoch_runner` of ``sample(seeds)`` over the mini-batches ``batches``."""
    return epoch_runner(lambda: (sample(s) for s in batches), device, count, host_count)


def scaled(row: dict, factor: float) -> dict:
    """``row`` of :func:`measure` timed on a prefix of the epoch, scaled to the epoch: times
    and units times ``factor`` (a rate stays), with ``timed_fraction = 1 / factor``."""
    out = dict(row)
    for k in ("epoch_s_median", "spread_s", "warmup_epoch_s"):
        out[k] = row[k] * factor
    out["epoch_s_all"] = [t * factor for t in row["epoch_s_all"]]
    out["units"] = round(row["units"] * factor)
    out["timed_fraction"] = 1 / factor
    return out


def measure(run, repeats: int, device) -> dict:
    """One warm-up call of ``run`` (compiles, caches, CUDA graph captures), then ``repeats``.

    After the warm-up the interpreter's objects are collected and frozen (``gc.freeze``,
    undone before returning): a full collection walks every tracked object, some 170,000 of
    them torch's own, for about 0.1 s on a fast core, and one falls in an epoch whenever
    enough objects have outlived two younger collections (every few short epochs). It is the
    interpreter's cost, not the sampler's (``timeit`` disables the collector for the same
    reason); the full collections that still ran during the timed epochs, on the objects
    made since, are counted with the time they took. A caller's own earlier freeze stays.

    Returns
    -------
    dict
        ``epoch_s_median``, ``epoch_s_all``, ``spread_s`` (max - min), ``warmup_epoch_s``,
        ``units`` (of the last epoch), ``units_per_s``, ``host_loop_ms`` (median) and
        ``host_loop_ms_all`` (:func:`host_loop_ms` right before each timed epoch),
        ``gc_full_collections`` and ``gc_full_ms`` (during the timed epochs),
        ``peak_memory_bytes`` and its kind, ``load_avg`` (the machine's, after the epochs).

    Examples
    --------
    >>> import torch
    >>> row = measure(lambda: (0.01, 5), repeats=3, device=torch.device("cpu"))
    >>> row["epoch_s_median"], row["units"], row["gc_full_collections"]
    (0.01, 5, 0)
    """
    if device.type == "cuda":
        sync(device)
        torch.cuda.reset_peak_memory_stats(device)
    warm, _ = run()
    runs, loops, full = [], [], FullCollections()
    frozen_before = gc.get_freeze_count()  # a caller's own freeze is left as it is
    gc.collect()
    gc.freeze()
    gc.callbacks.append(full)
    try:
        for _ in range(repeats):
            loops.append(host_loop_ms())  # the host's speed right before the epoch
            full.active = True
            runs.append(run())
            full.active = False
    finally:
        gc.callbacks.remove(full)
        if not frozen_before:
            gc.unfreeze()
    times = [r[0] for r in runs]
    med = statistics.median(times)
    units = runs[-1][1]
    row = {
        "epoch_s_median": med,
        "epoch_s_all": times,
        "spread_s": max(times) - min(times),
        "warmup_epoch_s": warm,
        "units": units,
        "units_per_s": units / med if med else None,
        "host_loop_ms": statistics.median(loops),
        "host_loop_ms_all": loops,
        "gc_full_collections": full.count,
        "gc_full_ms": round(full.seconds * 1e3, 3),
    }
    if device.type == "cuda":
        row["peak_memory_bytes"] = torch.cuda.max_memory_allocated(device)
        row["peak_memory_kind"] = "torch.cuda.max_memory_allocated"
    else:
        row["peak_memory_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        row["peak_memory_kind"] = "process_peak_rss"
    row["load_avg"] = load_average()
    return row


class FullCollections:
    """A ``gc.callbacks`` entry counting the interpreter's full (generation 2) collections
    while :attr:`active`, and the seconds they took."""

    def __init__(self):
        self.active, self.count, self.seconds, self._began = False, 0, 0.0, None

    def __call__(self, phase: str, info: dict) -> None:
        if not self.active or info.get("generation") != 2:
            return
        if phase == "start":
            self._began = time.perf_counter()
        elif self._began is not None:
            self.count += 1
            self.seconds += time.perf_counter() - self._began
            self._began = None


def profile_counts(run, num_batches: int, device) -> dict:
    """Kernels, memcpys, memsets and host syncs per mini-batch of ``run()`` (which samples
    ``num_batches`` mini-batches), and GPU busy and wall milliseconds per mini-batch, from
    ``torch.profiler``; ``{}`` off CUDA."""
    if device.type != "cuda":
        return {}
    sync(device)
    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        run()
        sync(device)
    wall = time.perf_counter() - start
    kernels = memcpys = memsets = syncs = 0
    busy = 0.0
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            name = e.name.lower()
            if "memcpy" in name:
                memcpys += 1
            elif "memset" in name:
                memsets += 1
            else:
                kernels += 1
            busy += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
        elif e.name in SYNCS:
            syncs += 1
    n = max(num_batches, 1)
    return {
        "kernels_per_batch": kernels / n,
        "memcpys_per_batch": memcpys / n,
        "memsets_per_batch": memsets / n,
        "syncs_per_batch": syncs / n,
        "gpu_busy_ms_per_batch": busy / 1e3 / n,
        "wall_ms_per_batch": wall * 1e3 / n,
    }
