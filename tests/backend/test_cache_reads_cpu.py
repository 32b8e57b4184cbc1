"""Every kernel that reads a UVA graph's GPU cache reads it only within the cache's bounds.

A cached column's rows are read at ``crows[slot[v] + off]`` (and its edge ids at ``ceids``)
only where all of it lies in the cache's ``cE`` rows (``kernels/counters.cuh``'s
``gs_cache_at``, which the walks' ``gs_walk_cached`` applies too); otherwise the column is
read from the graph and counted as a miss. Here, without a GPU:

- ``kernels/extract.cu``'s ``gs_segment_counts`` and ``gs_gather_segments`` (column slicing)
  are compiled as C++ under AddressSanitizer (one thread runs every grid-stride loop, as in
  ``test_kernel_ids_cpu.py``), for int64 and int32 rows (``GS_IDX``), with slots gone wrong;
- ``kernels/nodewise.cu`` and ``kernels/extract.cu`` read a cache's slots only through
  ``gs_cache_at`` (the source; ``gs_sample_uniform`` needs a GPU to run);
- the host code hands each launch the cache's own row count as ``cE``, and rows and cache
  rows of one dtype with the matching compile parameter (``extract.Kernels``,
  ``walk._launch``; their launches recorded, not run).

The GPU's proof is compute-sanitizer's memcheck (``scripts/memcheck.py``) on the cache tests.
"""

import re

import pytest
import torch
from helpers import CUDA_AS_CPP, INT64_IO_CPP, KERNELS, build_asan, run_int64_program
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gsample as gs
from gsample.backend.cuda import extract, walk
from gsample.formats import cache as C

SHIM = (
    CUDA_AS_CPP
    + r"""
#include <cstdint>
#include <vector>
// one thread runs every loop: a warp of one lane (its missing lanes add nothing)
template <typename T> static inline T __shfl_down_sync(unsigned, T, int) { return T(0); }
#include "extract.cu"
"""
    + INT64_IO_CPP
    + r"""
// every array below is its own exact-size allocation (copy<T>): AddressSanitizer's
// redzones bound it

// column slicing as backend/cuda/extract.py runs it: the counts (with the cache's
// counters), their scan, then the gather (rows and edge ids, from the cache where it holds
// the column)
int main() {
    const vec indptr = read_vec(), rows = read_vec(), eids = read_vec(), seg = read_vec();
    const vec slot = read_vec(), crows = read_vec(), ceids = read_vec();
    const std::vector<gs_idx> ip = copy<gs_idx>(indptr), r = copy<gs_idx>(rows);
    const std::vector<gs_idx> cr = copy<gs_idx>(crows);
    const long long N = (long long)indptr.size() - 1, n = seg.size(), cE = cr.size();
    std::vector<long long> starts(n), counts(n), counters(2, 0), ptr(n + 1, 0);
    gs_segment_counts(ip.data(), N, seg.data(), n, starts.data(), counts.data(), slot.data(),
                      cE, counters.data());
    for (long long i = 0; i < n; ++i) ptr[i + 1] = ptr[i] + counts[i];
    const long long total = ptr[n];
    std::vector<long long> index(total), rows_out(total), eids_out(total);
    gs_gather_segments(ptr.data(), n, starts.data(), total, r.data(), eids.data(), index.data(),
                       rows_out.data(), eids_out.data(), seg.data(), slot.data(), cr.data(),
                       ceids.data(), cE);
    write_vec(counts);
    write_vec(rows_out);
    write_vec(eids_out);
    write_vec(counters);
    return 0;
}
"""
)

#: slots no cache read may go through (the cache below holds about a third of the edges)
BAD = (-1, -2, -(2**40), 2**31, 2**32 + 1, 2**40, 2**62, 2**63 - 1, -(2**63))
GRAPH = gs.datasets.rmat(300, 3000, seed=5).csc
N = GRAPH.num_nodes
SHIFT = 10**6  # the cache's copies, altered: visible where read
SETTINGS = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module", params=["long long", "int"])
def program(request, tmp_path_factory):
    """The program for int64 rows, and for a UVA graph's int32 rows and cache (``GS_IDX``)."""
    out = tmp_path_factory.mktemp("cache_reads") / "slice"
    return build_asan(SHIM, out, f"-DGS_IDX={request.param}")


def _cache():
    """A cache of every third non-empty column: slots, altered rows and edge ids."""
    deg = GRAPH.indptr.diff()
    cols = torch.nonzero(deg > 0).squeeze(1)[::3]
    index, ptr = gs.formats.gather_segments(GRAPH.indptr, cols)
    slot = torch.full((N,), -1, dtype=torch.int64)
    slot[cols] = ptr[:-1]
    return cols, slot, GRAPH.rows[index] + SHIFT, GRAPH.eids[index] + SHIFT


@SETTINGS
@given(
    seg=st.lists(st.one_of(st.integers(0, N - 1), st.sampled_from(BAD)), min_size=1, max_size=48),
    slots=st.lists(
        st.one_of(st.sampled_from(BAD), st.integers(-(2**63), 2**63 - 1)), min_size=8, max_size=8
    ),
    short=st.integers(0, 40),
)
def test_column_slicing_reads_the_cache_within_its_rows(program, seg, slots, short):
    """A column is read from the cache only where its slot puts all of it within the cache's
    rows (here the cache is also cut ``short`` rows short of its last column's end, and some
    slots are any int64): those rows and edge ids are the cache's, every other column's the
    graph's, a column outside the graph is empty, and the counters add every column's edges
    and the cache's. Nothing is read outside an array (AddressSanitizer)."""
    cols, slot, crows, ceids = _cache()
    cE = crows.numel() - short
    crows, ceids = crows[:cE], ceids[:cE]
    slot = slot.clone()
    slot[cols[: len(slots)]] = torch.tensor(slots)
    # a wrong slot that still lies inside the cache reads cached rows (in bounds: only the
    # bounds are checked), so the expected values below leave those out
    deg = GRAPH.indptr.diff()
    right = _cache()[1]
    slot = torch.where((slot != right) & (slot >= 0) & (slot <= cE - deg), -1, slot)
    # the frontier: the drawn ids, then every column whose slot was redrawn and the last one
    seg = [*seg, *cols[: len(slots)].tolist(), int(cols[-1])]
    counts, rows, eids, counters = run_int64_program(
        program, GRAPH.indptr, GRAPH.rows, GRAPH.eids, seg, slot, crows, ceids
    )
    seg = torch.tensor(seg)
    ok = (seg >= 0) & (seg < N)
    s = torch.where(ok, seg, 0)
    want_counts = torch.where(ok, deg[s], 0)
    hit = ok & (slot[s] >= 0) & (slot[s] <= cE - deg[s]) & (want_counts > 0)
    index, _ = gs.formats.gather_segments(GRAPH.indptr, s[ok])
    cached = hit[ok].repeat_interleave(want_counts[ok])
    assert counts.tolist() == want_counts.tolist()
    assert rows.tolist() == (GRAPH.rows[index] + SHIFT * cached).tolist()
    assert eids.tolist() == (GRAPH.eids[index] + SHIFT * cached).tolist()
    assert counters.tolist() == [int(want_counts.sum()), int(want_counts[hit].sum())]


def _code(name: str) -> str:
    """A kernel source without its comments."""
    text = (KERNELS / name).read_text()
    return re.sub(r"//[^\n]*", "", text)


@pytest.mark.parametrize("name", ["nodewise.cu", "extract.cu", "walkstep.cuh"])
def test_the_kernels_read_a_cache_s_slots_through_its_bound_only(name):
    """``gs_sample_uniform``, ``gs_segment_counts``, ``gs_gather_segments`` and the walks
    find a cached column through ``gs_cache_at`` alone (no ``slot[...]`` read of their own:
    a read past the bound would go unseen without a GPU), and read the cache's rows and edge
    ids only at the offset it gave."""
    code = _code(name)
    assert "gs_cache_at(" in code
    assert not re.search(r"\bslot\s*\[", code), f"{name}: a slot read outside gs_cache_at"
    for m in re.finditer(r"\b(crows|ceids)\s*\+|\b(crows|ceids)\s*\[", code):
        line = code[code.rfind("\n", 0, m.start()) + 1 : code.find("\n", m.end())]
        assert re.search(r"\b(at|c)\b", line), f"{name}: {line.strip()}"


# ----------------------------------------------------------------------------- launch sites
def _names(family: str, kernel: str) -> list:
    """The parameter names of ``kernel`` in ``kernels/<family>.cu``."""
    code = _code(f"{family}.cu")
    m = re.search(rf"\b{kernel}\s*\(([^{{]*?)\)\s*\{{", code, re.S)
    return [re.findall(r"\w+", p)[-1] for p in m.group(1).split(",")]


def _record(monkeypatch, module):
    calls = []

    def launch(family, kernel, n, *args, **key):
        calls.append((family, kernel, dict(zip(_names(family, kernel), args)), key))

    monkeypatch.setattr(module, "launch", launch)
    return calls


def _cached(dtype):
    """The small graph (int64 rows, int64 edge ids) with a cache of ``dtype`` rows."""
    A = GRAPH
    cols, slot, crows, ceids = _cache()
    counters = torch.zeros(2, dtype=torch.int64)
    C._CACHES[A] = C.GraphCache(slot, crows.to(dtype), ceids, cols.numel(), 0, counters)
    return A, C._CACHES[A]


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_column_slicing_launches_with_the_cache_s_row_count_and_dtype(monkeypatch, dtype):
    """``extract.Kernels`` passes the cache's row count as ``cE`` to both launches, and the
    gather's rows and cache rows in one dtype, compiled for it (``GS_IDX``)."""
    A, cache = _cached(dtype)
    try:
        calls = _record(monkeypatch, extract)
        rows = A.rows.to(dtype)
        seg = torch.tensor([0, 5, 7])
        starts, _ = extract.Kernels.segment_counts(A.indptr, seg, cache)
        new_indptr = torch.tensor([0, 1, 2, 3])
        extract.Kernels.gather(new_indptr, starts, 3, rows, A.eids, seg, cache)
    finally:
        del C._CACHES[A]
    (_, k1, counts, _), (_, k2, gather, key) = calls
    assert (k1, k2) == ("gs_segment_counts", "gs_gather_segments")
    assert counts["cE"] == gather["cE"] == cache.rows.numel() > 0
    assert counts["slot"] is cache.slot and gather["slot"] is cache.slot
    assert gather["crows"] is cache.rows and gather["ceids"] is cache.eids
    assert gather["rows"].dtype == gather["crows"].dtype == dtype
    assert (("IDX", "int") in key["params"]) == (dtype == torch.int32)


def test_walks_launch_with_the_cache_s_row_count_and_dtype(monkeypatch):
    """``walk._launch`` hands the walk kernel the cache's row count as ``cE``, the rows and
    the cache's rows in one dtype and ``GS_ROW=int`` exactly where they are int32 (a UVA
    graph's int32 host rows beside its int32 cache: ``extract.rows_read``)."""
    from gsample.formats import placement as P

    monkeypatch.setattr(walk, "memset", lambda t, byte: t.fill_(byte))
    seeds = torch.arange(0, N, 7)
    for dtype in (torch.int64, torch.int32):
        A, cache = _cached(dtype)
        if dtype == torch.int32:
            P._ROWS32[A] = A.rows.int()
        try:
            calls = _record(monkeypatch, walk)
            walk._launch(A, seeds, 4, 0, None, 0, N, None, 1.0, 1.0, 0.0, 0.0, 0.0)
        finally:
            del C._CACHES[A]
            P._ROWS32.pop(A, None)
        (_, _, args, key) = next(c for c in calls if c[1] == "gs_random_walk")
        assert args["cE"] == cache.rows.numel() > 0 and args["crows"] is cache.rows
        assert args["rows"].dtype == args["crows"].dtype == dtype
        assert (("ROW", "int") in key["params"]) == (dtype == torch.int32), key["params"]
        assert ("WALK_CACHE", 1) in key["params"]


def test_int32_rows_of_another_length_are_not_read():
    """``extract.rows_read`` hands a kernel a UVA graph's int32 host rows only where they are
    as many as its rows (a shorter copy would be read past its end through the graph's
    ``indptr``): otherwise the int64 rows, and the int32 cache is not read with them."""
    from gsample.formats import placement as P

    A, _ = _cached(torch.int32)
    P._ROWS32[A] = A.rows[:-1].int()
    try:
        rows, got = extract.rows_read(A, A.rows)
    finally:
        del C._CACHES[A], P._ROWS32[A]
    assert rows is A.rows and got is None
