"""The GPU cache of a UVA graph (gsample.formats.cache): ``A.to("cuda", placement="uva",
cache=bytes)``.

On the CPU: which columns a budget holds (whole columns of highest in-degree, greedily, a
brute-force check), the ``cache="auto"`` rule (half the free memory, or of ``budget``, at
most the whole graph's cache) and the errors naming ``cache``. On a GPU (``-m cuda``): what
the cache holds (the device ``indptr``, each cached column's rows and edge ids at its slot),
samples identical to the device-resident graph's and to the uncached UVA graph's (GraphSAGE
one mini-batch at a time, super-batched, eager; walks, which read cached columns' rows from
the cache too, and LADIES, which reads the device ``indptr``), and read counters equal to
what the samples imply: every sampled edge read once, the hits exactly the edges of cached
columns; a walk's reads one row per move (per attempt, node2vec), its hits the moves from a
cached column; ``cache="auto"`` within half the free memory (or of ``budget``), sampling
alike. The walk kernels' cache reads on the CPU: ``tests/backend/test_walk_kernel_cpu.py``,
``test_fused_walk_kernel_cpu.py`` and ``test_kernel_ids_cpu.py``.
"""

import functools

import numpy as np
import pytest
import torch
from helpers import assert_same, example, graphsage

import gsample as gs
from gsample.formats import cache as C
from gsample.formats import placement as P

cuda = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]


# ----------------------------------------------------------------------------- CPU
def test_the_budget_holds_the_highest_in_degree_columns_whole():
    indptr = torch.tensor([0, 5, 6, 9, 9, 14])  # degrees 5, 1, 3, 0, 5
    assert C.choose_columns(indptr, 0, 8).tolist() == []
    assert C.choose_columns(indptr, 39, 8).tolist() == []  # 5 edges need 40 bytes
    assert C.choose_columns(indptr, 40, 8).tolist() == [0]  # ties: smaller id first
    assert C.choose_columns(indptr, 80, 8).tolist() == [0, 4]
    assert C.choose_columns(indptr, 104, 8).tolist() == [0, 2, 4]
    # the next column in degree order does not fit: no smaller one is taken instead
    assert C.choose_columns(indptr, 100, 8).tolist() == [0, 4]
    assert C.choose_columns(indptr, 10**9, 16).tolist() == [0, 1, 2, 4]  # never empty ones


@pytest.mark.parametrize("seed", range(5))
def test_chosen_columns_are_the_greedy_prefix_by_degree(seed):
    rng = np.random.default_rng(seed)
    deg = rng.zipf(1.7, size=300).clip(max=500)
    deg[rng.random(300) < 0.2] = 0
    indptr = torch.tensor(np.concatenate([[0], np.cumsum(deg)]))
    budget = int(rng.integers(0, 16 * deg.sum()))
    got = C.choose_columns(indptr, budget, 16).tolist()
    order = sorted(range(300), key=lambda v: (-deg[v], v))
    want, used = [], 0
    for v in order:
        if used + 16 * deg[v] > budget:
            break
        used += 16 * deg[v]
        want.append(v)
    assert got == sorted(v for v in want if deg[v] > 0)
    assert 16 * deg[got].sum() <= budget


def test_a_priority_ranks_columns_by_expected_reads_per_byte():
    indptr = torch.tensor([0, 5, 6, 9, 9, 14])  # degrees 5, 1, 3, 0, 5
    priority = torch.tensor([10.0, 1.0, 9.0, 100.0, 0.0])  # per byte: 2, 1, 3, -, 0
    assert C.choose_columns(indptr, 24, 8, priority).tolist() == [2]
    assert C.choose_columns(indptr, 71, 8, priority).tolist() == [0, 2]
    assert C.choose_columns(indptr, 72, 8, priority).tolist() == [0, 1, 2]
    assert C.choose_columns(indptr, 10**6, 8, priority).tolist() == [0, 1, 2, 4]
    A = gs.Matrix.from_edge_index(torch.tensor([[0, 0, 0, 1], [1, 2, 3, 0]]), num_nodes=4)
    assert C.out_degrees(A.csc).tolist() == [3, 1, 0, 0]


def test_the_auto_cache_takes_half_the_free_memory_up_to_the_whole_graph():
    whole = 100 << 20
    assert C.CACHE_SHARE == 0.5
    for free, want in [
        (0, 0),
        (1, 0),
        (3, 1),
        (64 << 20, 32 << 20),
        (2 * whole - 1, whole - 1),
        (2 * whole, whole),  # the whole graph just fits: all of it
        (2 * whole + 1, whole),  # more free memory: no more than the whole graph takes
        (80 << 30, whole),
    ]:
        assert C.auto_budget(free, whole) == want, free
    assert C.auto_budget(80 << 30, 0) == 0


@pytest.mark.parametrize(
    "rows, eids, narrow",
    [
        ("int64", "int64", None),
        ("int64", "int64", False),
        ("int64", None, None),
        ("int32", "int64", None),
        ("int32", None, None),
    ],
)
def test_the_whole_graphs_cache_takes_indptr_slots_rows_and_int64_edge_ids(
    small_graph, rows, eids, narrow
):
    """``whole_bytes`` is what a cache of every column takes, as :func:`build` counts it: a
    budget of that many bytes chooses every non-empty column, one byte less does not. A
    graph of int64 rows and fewer than ``2**31`` nodes counts 4 bytes a row (its cache keeps
    int32 rows), unless told it does not narrow."""
    from dataclasses import replace

    A = small_graph.csc
    A = replace(
        A,
        rows=A.rows.to(getattr(torch, rows)),
        eids=None if eids is None else A.eids.to(getattr(torch, eids)),
    )
    n, E = A.num_nodes, A.nnz
    assert C.narrows(A) == (rows == "int64")
    row = 8 if rows == "int64" and narrow is False else 4
    edge = row + (8 if eids == "int64" else 0)
    whole = C.whole_bytes(A, narrow)
    assert whole == 8 * (n + 1) + 8 * n + edge * E
    rest = whole - 8 * (n + 1) - 8 * n
    every = torch.nonzero(A.indptr.diff() > 0).squeeze(1)
    assert torch.equal(C.choose_columns(A.indptr, rest, edge), every)
    assert C.choose_columns(A.indptr, rest - 1, edge).numel() < every.numel()


@pytest.mark.parametrize(
    "device, budget",
    [("cpu", None), ("cpu", 0), ("cpu", 1 << 40), pytest.param("cuda", 1 << 40, marks=cuda)],
)
def test_auto_keeping_the_graph_on_the_device_ignores_an_auto_cache(small_graph, device, budget):
    """As with a cache of bytes: a graph "auto" keeps on the device has no cache (on the CPU
    "auto" is always the device; a budget of 1 TiB keeps it on a GPU)."""
    for cache in ("auto", 10):
        B = small_graph.to(device, placement="auto", budget=budget, cache=cache)
        assert B.placement == "device" and B.cache is None


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"cache": 10}, ValueError, "cache: only used with placement='uva' or 'auto'"),
        ({"cache": "auto"}, ValueError, "cache: only used with placement='uva' or 'auto'"),
        (
            {"placement": "device", "cache": "auto", "budget": 10},
            ValueError,
            "cache: only used with",
        ),
        ({"placement": "uva", "cache": "half"}, ValueError, "cache: must be an int .* or 'auto'"),
        ({"placement": "auto", "cache": "AUTO"}, ValueError, "cache: must be an int"),
        ({"placement": "uva", "cache": -5}, ValueError, "cache: must be >= 0 bytes"),
        ({"placement": "uva", "cache": [10]}, TypeError, "cache: must be an int .* or 'auto'"),
        (
            {"placement": "uva", "cache": torch.tensor(10)},
            TypeError,
            "cache: must be an int .* got Tensor",
        ),
        (
            {"placement": "uva", "cache": 10, "budget": 10},
            ValueError,
            "budget: only used with placement='auto' or cache='auto'",
        ),
        (
            {"placement": "uva", "cache": "auto", "budget": -1},
            ValueError,
            "budget: must be >= 0",
        ),
        (
            {"placement": "uva", "cache": "auto", "budget": 0.5},
            TypeError,
            "budget: must be an int",
        ),
        ({"placement": "device", "cache": 10}, ValueError, "cache: only used with"),
        ({"placement": "uva", "cache": -1}, ValueError, "cache: must be >= 0 bytes"),
        ({"placement": "uva", "cache": 1.5}, TypeError, "cache: must be an int"),
        ({"placement": "auto", "cache": True}, TypeError, "cache: must be an int"),
        (
            {"placement": "uva", "cache_priority": torch.ones(2000)},
            ValueError,
            "cache_priority: only used with cache=",
        ),
        (
            {"placement": "uva", "cache": 10, "cache_priority": torch.ones(3)},
            ValueError,
            "cache_priority: expected a real tensor of shape \\(2000,\\)",
        ),
        (
            {"placement": "uva", "cache": 10, "cache_priority": -torch.ones(2000)},
            ValueError,
            "cache_priority: must be finite and >= 0",
        ),
    ],
)
def test_bad_cache_arguments_name_the_argument(small_graph, kwargs, error, match):
    with pytest.raises(error, match=match):
        small_graph.to("cuda", **kwargs)


def test_a_graph_without_uva_has_no_cache(small_graph):
    assert small_graph.cache is None and C.cache_of(None) is None


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_column_slicing_reads_cached_columns_from_the_cache(small_graph, dtype):
    """The CUDA backend's slicing code with its kernels' CPU twins (``extract._Twin``): cached
    columns' rows and edge ids come from the cache (a cache of altered copies shows it), the
    others from the graph, and the counters add every column's edges and the cached ones'.
    The cache keeps the graph's index dtype (int32 here too), as the kernels read both alike."""
    from dataclasses import replace

    from gsample.backend.cuda import extract

    A = small_graph.csc
    A = replace(A, indptr=A.indptr.to(dtype), rows=A.rows.to(dtype))
    deg = A.indptr.diff()
    cols = C.choose_columns(A.indptr, 16 * int(deg.sum()) // 4, 16)
    index, ptr = gs.formats.gather_segments(A.indptr, cols)
    slot = torch.full((A.num_nodes,), -1, dtype=torch.int64)
    slot[cols] = ptr[:-1]
    shift = 10**6  # altered copies: visible when read
    cache = C.GraphCache(
        slot,
        A.rows[index] + shift,
        A.eids[index] + shift,
        cols.numel(),
        0,
        torch.zeros(2, dtype=torch.int64),
    )
    assert extract._cache(A, A.rows) is None  # not registered yet
    frontier = torch.tensor([cols[0], 7, cols[-1], 7, 1999, cols[0]])
    plain = extract.slice_cols(A, frontier)
    C._CACHES[A] = cache
    try:
        got = extract.slice_cols(A, frontier)
    finally:
        del C._CACHES[A]
    cached = (slot[frontier] >= 0).repeat_interleave(deg[frontier])
    assert got.rows.dtype == plain.rows.dtype == dtype
    assert torch.equal(got.indptr, plain.indptr) and cached.any() and not cached.all()
    assert torch.equal(got.rows, plain.rows + shift * cached)
    assert torch.equal(got.eids, plain.eids + shift * cached)
    assert cache.counters.tolist() == [int(deg[frontier].sum()), int(cached.sum())]


def test_column_slicing_reads_a_column_past_the_cache_s_end_from_the_graph(small_graph):
    """A slot that would put a column's rows past the end of the cache's (here: the last
    cached column lost its last row) is not read (kernels' ``gs_cache_at``, on their CPU
    twins): that column's rows come from the graph and count as no hit, the others' from
    the cache."""
    from gsample.backend.cuda import extract

    A = small_graph.csc
    deg = A.indptr.diff()
    cols = C.choose_columns(A.indptr, 16 * int(deg.sum()) // 4, 16)
    index, ptr = gs.formats.gather_segments(A.indptr, cols)
    slot = torch.full((A.num_nodes,), -1, dtype=torch.int64)
    slot[cols] = ptr[:-1]
    shift = 10**6
    cache = C.GraphCache(
        slot,
        (A.rows[index] + shift)[:-1].int(),  # the last column runs past the end
        (A.eids[index] + shift)[:-1],
        cols.numel(),
        0,
        torch.zeros(2, dtype=torch.int64),
    )
    G = gs.formats.CSC(A.num_nodes, **{f: getattr(A, f) for f in P._FIELDS})
    C._CACHES[G] = cache
    P._ROWS32[G] = A.rows.int()
    other = int(torch.nonzero((slot < 0) & (deg > 0))[0])  # a column not cached
    frontier = torch.tensor([int(cols[0]), int(cols[-1]), other])
    got = extract.slice_cols(G, frontier)
    plain = extract.slice_cols(A, frontier)
    hit = torch.tensor([True, False, False]).repeat_interleave(deg[frontier])
    assert hit.any() and deg[cols[-1]] > 0
    assert torch.equal(got.rows, plain.rows + shift * hit)
    assert torch.equal(got.eids, plain.eids + shift * hit)
    assert cache.counters.tolist() == [int(deg[frontier].sum()), int(hit.sum())]


def test_walks_take_the_cache_of_the_rows_dtype_only(small_graph):
    """The walk kernels' cache arguments (``walk.cache_args``): a registered cache of the
    rows' dtype (the dtype the walks read) gives its slots, rows, their count and the
    counters, and compiles the cache's code in; a cache of ``indptr`` alone its counters only
    (reads counted, no hit); none, or one of another dtype, nothing (the kernel as without a
    cache). int32 rows compile ``GS_ROW=int`` (below, with the int32 cache a UVA graph
    keeps)."""
    from dataclasses import replace

    from gsample.backend.cuda import walk

    A = small_graph.csc
    counters = torch.zeros(2, dtype=torch.int64)
    slot = torch.full((A.num_nodes,), -1, dtype=torch.int64)
    slot[3] = 0
    rows = A.rows[A.indptr[3] : A.indptr[4]]
    on = (("WALK_CACHE", 1),)
    assert walk.cache_args(A, A.rows) == ((0, 0, 0, 0), ())
    for cache, want in (
        (C.GraphCache(slot, rows, None, 1, 0, counters), (slot, rows, rows.numel(), counters)),
        (C.GraphCache(None, rows[:0], None, 0, 0, counters), (0, 0, 0, counters)),
    ):
        C._CACHES[A] = cache
        try:
            assert walk.cache_args(A, A.rows) == (want, on)
        finally:
            del C._CACHES[A]
    narrow = replace(A, indptr=A.indptr.int(), rows=A.rows.int())
    C._CACHES[narrow] = C.GraphCache(slot, rows.int(), None, 1, 0, counters)
    try:
        assert walk.cache_args(narrow, narrow.rows.long()) == ((0, 0, 0, 0), ())
        args, params = walk.cache_args(narrow, narrow.rows)
        assert params == (("WALK_CACHE", 1), ("ROW", "int")) and args[1].dtype == torch.int32
    finally:
        del C._CACHES[narrow]
    C._CACHES[A] = C.GraphCache(slot, rows, None, 1, 0, counters)
    try:  # int64 rows read, an int64 cache: no GS_ROW; int32 rows read: not this cache
        assert walk.cache_args(A, A.rows)[1] == on
        assert walk.cache_args(A, A.rows.int()) == ((0, 0, 0, 0), (("ROW", "int"),))
    finally:
        del C._CACHES[A]


# ----------------------------------------------------------------------------- int32 rows
def _uva_like(small_graph, budget, narrow=True, priority=None):
    """``small_graph`` as ``placement._finish_uva`` leaves a UVA graph, on the CPU (the same
    code; no pinned memory): its rows as int32 beside the int64 ones where ``narrow`` (the
    copy placement checks and keeps), a cache of ``budget`` bytes (``"auto"``: of a 1 MiB
    ``budget=``, which also lets ``indptr`` "move to the device" without a cache)."""
    A = small_graph.csc
    rows32 = A.rows.to(torch.int32) if narrow else None
    return P._finish_uva(A, torch.device("cpu"), 1 << 20, budget, priority, rows32)


@pytest.mark.parametrize("eids", [True, False])
def test_a_cache_of_int32_rows_counts_4_bytes_a_row_and_holds_about_twice_the_edges(
    small_graph, eids
):
    """A cache built from int32 rows (``build(..., rows32=)``, as placement builds a UVA
    graph's of fewer than ``2**31`` nodes) keeps them as int32 (the same values) and counts
    4 bytes a row: for the same budget it holds exactly the columns a budget of 4 (+ 8 for
    int64 edge ids) bytes an edge chooses, about twice an int64 cache's edges without edge
    ids, and its ``nbytes`` are what it takes."""
    from dataclasses import replace

    A = small_graph.csc
    A = A if eids else replace(A, eids=None)
    n, E = A.num_nodes, A.nnz
    head = 8 * (n + 1) + 8 * n
    eid = 8 if eids else 0
    budget = head + (8 + eid) * E // 4  # a quarter of the edges with int64 rows
    wide = C.cache_of(C.build(A, budget, torch.device("cpu")))
    narrow = C.cache_of(C.build(A, budget, torch.device("cpu"), rows32=A.rows.int()))
    assert wide.rows.dtype == torch.int64 and narrow.rows.dtype == torch.int32
    rest = budget - head
    deg = C.out_degrees(A)
    for cache, edge in ((wide, 8 + eid), (narrow, 4 + eid)):
        cols = torch.nonzero(cache.slot >= 0).squeeze(1)
        assert torch.equal(cols, C.choose_columns(A.indptr, rest, edge, deg))
        assert cache.nbytes == head + edge * cache.edges <= budget
        index, ptr = gs.formats.gather_segments(A.indptr, cols)
        assert torch.equal(cache.rows.long(), A.rows[index])
        assert torch.equal(cache.slot[cols], ptr[:-1])
        assert (cache.eids is not None) == eids
        if eids:
            assert torch.equal(cache.eids, A.eids[index])
    ratio = narrow.edges / wide.edges
    assert ratio > (1.9 if not eids else 1.3), ratio  # 8 / 4 bytes; 16 / 12 with edge ids
    with pytest.raises(ValueError, match="rows32: expected an int32 tensor"):
        C.build(A, budget, torch.device("cpu"), rows32=A.rows)


def test_a_cache_is_gathered_a_chunk_at_a_time_alike(small_graph, monkeypatch):
    """The cache's build gathers its columns ``BUILD_CHUNK`` edges at a time (its index
    temporaries bounded): any chunk gives the same arrays, the chosen columns' rows and edge
    ids. Fresh tensors are filled with garbage first (``torch.empty`` may hand back the last
    build's memory, values and all): a chunk left ungathered shows."""
    A = small_graph.csc
    budget = C.whole_bytes(A) // 2
    want = C.cache_of(C.build(A, budget, torch.device("cpu"), rows32=A.rows.int()))
    index, _ = gs.formats.gather_segments(A.indptr, torch.nonzero(want.slot >= 0).squeeze(1))
    assert torch.equal(want.rows.long(), A.rows[index]) and torch.equal(want.eids, A.eids[index])
    empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, **k: empty(*a, **k).fill_(-7))
    for chunk in (1, 7, 1000, want.edges // 3, want.edges, 10**9):
        monkeypatch.setattr(C, "BUILD_CHUNK", chunk)
        got = C.cache_of(C.build(A, budget, torch.device("cpu"), rows32=A.rows.int()))
        assert torch.equal(got.slot, want.slot) and torch.equal(got.rows, want.rows), chunk
        assert torch.equal(got.eids, want.eids) and got.nbytes == want.nbytes, chunk


@pytest.mark.parametrize("budget", ["auto", 0, 20_000, 60_000, 200_000, 10**8])
def test_a_uva_graph_keeps_int32_rows_beside_its_cache_of_int32_rows(small_graph, budget):
    """Placement's bookkeeping (``_finish_uva``, on the CPU): the int32 rows are registered
    for the graph it returns (``narrow_rows``), cached or not, and its cache keeps int32 rows
    copied from them, 4 bytes a row in its budget (``"auto"``: half the budget, capped at
    the whole graph's cache at 4 bytes a row); without int32 rows (a graph too large for
    them) the cache keeps int64 rows, 8 bytes a row, and nothing is registered."""
    A = small_graph.csc
    G = _uva_like(small_graph, budget)
    rows32 = P.narrow_rows(G)
    assert rows32 is not None and rows32.dtype == torch.int32
    assert torch.equal(rows32.long(), A.rows)
    cache = G.cache if isinstance(G, gs.Matrix) else C.cache_of(G)
    if budget == 0:
        assert cache is None and G is not A  # (indptr "to the device": a copy)
        return
    assert cache is not None and cache.rows.dtype == torch.int32
    n = A.num_nodes
    cap = C.auto_budget(1 << 20, C.whole_bytes(A, narrow=True)) if budget == "auto" else budget
    assert cache.nbytes <= cap
    if cache.slot is not None:
        assert cache.nbytes == 8 * (n + 1) + 8 * n + (4 + 8) * cache.edges
    if budget == 10**8 or budget == "auto":  # the whole graph: 4 bytes a row fit it all
        assert cache.edges == A.nnz
    wide = _uva_like(small_graph, budget, narrow=False)
    assert P.narrow_rows(wide) is None and C.cache_of(wide).rows.dtype == torch.int64
    if budget in (60_000, 200_000):  # 12 bytes an edge where 16 were
        assert 0 < C.cache_of(wide).edges < cache.edges


def test_the_kernels_read_int32_rows_and_the_int32_cache_together(small_graph):
    """What the kernels that read a cache get for a UVA graph of int32 rows (host and
    cache, ``extract.rows_read``): the int32 host rows and the cache (node-wise sampling,
    column slicing, walks, fused walks), ``GS_ROW=int`` for the walks; a cache of another
    dtype than the rows it would be read with is not read (int64 rows then, for an int64
    cache). Column slicing through its kernels' CPU twins reads cached columns from the
    int32 cache and the others from the int32 host rows (altered copies show which), and
    counts the reads."""
    from dataclasses import replace

    from gsample.backend.cuda import extract, walk

    A = small_graph.csc
    G = _uva_like(small_graph, C.whole_bytes(A) // 3)
    cache, rows32 = C.cache_of(G), P.narrow_rows(G)
    rows, got = extract.rows_read(G, G.rows)
    assert rows is rows32 and got is cache and rows.dtype == cache.rows.dtype == torch.int32
    (_, crows, cE, _), params = walk.cache_args(G, rows)
    assert crows is cache.rows and cE == cache.edges and ("ROW", "int") in params
    assert ("WALK_CACHE", 1) in params
    # an int32 cache without int32 host rows: the int64 rows, the cache not read
    C._CACHES[A] = cache
    try:
        assert extract.rows_read(A, A.rows) == (A.rows, None)
    finally:
        del C._CACHES[A]
    # int32 host rows beside an int64 cache: the int64 rows and the cache
    wide = C.build(A, C.whole_bytes(A) // 3, torch.device("cpu"))
    P._ROWS32[wide] = rows32
    rows, got = extract.rows_read(wide, wide.rows)
    assert rows is wide.rows and got is C.cache_of(wide)
    # column slicing: altered copies of both show where each row was read
    shift, far = 10**5, 10**7
    altered = replace(G)
    C._CACHES[altered] = C.GraphCache(
        cache.slot, cache.rows + shift, cache.eids, cache.columns, 0, torch.zeros(2).long()
    )
    P._ROWS32[altered] = rows32 + far
    deg = A.indptr.diff()
    cols = torch.nonzero(cache.slot >= 0).squeeze(1)
    frontier = torch.tensor([int(cols[0]), 7, int(cols[-1]), 1999, 7])
    plain = extract.slice_cols(A, frontier)
    sliced = extract.slice_cols(altered, frontier)
    hit = (cache.slot[frontier] >= 0).repeat_interleave(deg[frontier])
    assert hit.any() and not hit.all() and sliced.rows.dtype == torch.int64
    assert torch.equal(sliced.rows, plain.rows + torch.where(hit, shift, far))
    counters = C.cache_of(altered).counters.tolist()
    assert counters == [int(deg[frontier].sum()), int(hit.sum())]


def test_only_a_whole_graph_of_fewer_than_2_31_nodes_narrows():
    """A cache (and the host rows beside it) keeps int32 rows only for a whole graph of int64
    rows with fewer than ``2**31`` nodes (every row id then fits in 31 bits): a graph of
    ``2**31`` nodes (one column here) keeps int64 rows, 8 bytes a row in its budget."""
    from gsample.formats.csc import CSC

    def graph(n, **ids):
        return CSC(n, indptr=torch.tensor([0, 2]), rows=torch.tensor([0, n - 1]), **ids)

    assert C.narrows(graph(2**31 - 1)) and C.whole_bytes(graph(2**31 - 1)) == 16 + 8 + 2 * 4
    assert not C.narrows(graph(2**31)) and C.whole_bytes(graph(2**31)) == 16 + 8 + 2 * 8
    assert not C.narrows(graph(5, col_ids=torch.tensor([3])))
    small = graph(5)
    assert not C.narrows(CSC(5, indptr=small.indptr.int(), rows=small.rows.int()))


@pytest.mark.parametrize("bad", [-1, "N", 2**31, 2**32 + 3])
def test_rows_out_of_range_are_not_narrowed_and_the_cache_keeps_int64_rows(
    small_graph, monkeypatch, bad
):
    """Placement checks a UVA graph's rows at full width before it narrows them
    (``placement.rows_in_range``): with one row outside ``[0, N)`` (negative, ``N``, past
    int32, or one int32 would wrap back into range) no int32 copy is made
    (``_narrowed_rows``, on the CPU: its pinned mapping stood in for), and the graph still
    works on int64 rows: its cache keeps int64 rows (8 bytes a row) and the kernels read the
    int64 rows with it (``extract.rows_read``)."""
    from gsample.backend.cuda import extract

    A = small_graph.csc
    n = A.num_nodes
    rows = A.rows.clone()
    rows[rows.numel() // 2] = n if bad == "N" else bad
    G = gs.formats.CSC(n, **{f: getattr(A, f) for f in P._FIELDS if f != "rows"}, rows=rows)
    assert C.narrows(G) and P.rows_in_range(A.rows, n) and not P.rows_in_range(rows, n)
    monkeypatch.setattr(P, "is_mapped", lambda t: t is rows)
    monkeypatch.setattr(P, "host_of", lambda t: t)
    monkeypatch.setattr(P, "map_host", lambda host, device: host)
    assert P._narrowed_rows(G, torch.device("cpu")) is None
    H = P._finish_uva(G, torch.device("cpu"), 1 << 20, C.whole_bytes(G) // 2, None, None)
    cache = C.cache_of(H)
    assert P.narrow_rows(H) is None and cache.rows.dtype == torch.int64 and cache.edges > 0
    assert cache.nbytes == 8 * (n + 1) + 8 * n + (8 + 8) * cache.edges
    got_rows, got_cache = extract.rows_read(H, H.rows)
    assert got_rows is H.rows and got_cache is cache
    cols = torch.nonzero(cache.slot >= 0).squeeze(1)[:5]
    index, _ = gs.formats.gather_segments(G.indptr, cols)
    assert torch.equal(extract.slice_cols(H, cols).rows, rows[index])


# ----------------------------------------------------------------------------- GPU
#: device bytes a cached edge of the GPU tests' graph takes: its int32 row (fewer than
#: 2**31 nodes) and its int64 edge id
EDGE = 4 + 8


@pytest.fixture(scope="module")
def graphs():
    """A device-resident graph (with int64 edge ids), the same in pinned host memory without a
    cache, and with caches of about a third of its edges, of its ``indptr`` alone, and of
    all of it (:data:`EDGE` bytes an edge: int32 rows)."""
    A = gs.datasets.rmat(60_000, 1_300_000, seed=2, weighted=True, device="cuda")
    n, E = A.num_nodes, A.num_edges
    head = 8 * (n + 1) + 8 * n
    return {
        "device": A,
        "uva": A.to("cuda", placement="uva"),
        "third": A.to("cuda", placement="uva", cache=head + EDGE * E // 3),
        "indptr": A.to("cuda", placement="uva", cache=8 * (n + 1)),
        "all": A.to("cuda", placement="auto", budget=0, cache=head + EDGE * E),
        "presampled": A.to(
            "cuda",
            placement="uva",
            cache=head + EDGE * E // 3,
            cache_priority=torch.arange(n, 0, -1, device="cuda"),
        ),
        # a cache of int64 rows, as a graph keeps where its rows are not narrowed (8 + 8
        # bytes an edge): the same budget holds fewer edges
        "wide": _wide_cache(A, head + EDGE * E // 3),
    }


def _wide_cache(A, budget):
    """``A`` in pinned host memory with a cache of ``budget`` bytes built from its int64 rows
    (as for a graph of ``2**31`` nodes or more): no int32 rows anywhere."""
    mapped = A.to("cuda", placement="uva").csc
    plain = gs.formats.CSC(
        mapped.num_nodes, **{f: getattr(mapped, f) for f in P._FIELDS}
    )  # a new storage: no int32 rows registered for it
    return gs.Matrix(P._finish_uva(plain, torch.device("cuda"), None, budget, None, None))


@pytest.mark.parametrize("dummy", [pytest.param(0, marks=cuda)])
def test_the_cache_holds_indptr_and_the_chosen_columns(graphs, dummy):
    A, H = graphs["device"], graphs["third"]
    cache = H.cache
    assert H.placement == "uva" and graphs["uva"].cache is None
    assert not P.is_mapped(H.csc.indptr) and torch.equal(H.csc.indptr, A.csc.indptr)
    assert P.is_mapped(H.csc.rows) and P.is_mapped(H.csc.eids)
    cols = torch.nonzero(cache.slot >= 0).squeeze(1)
    assert cols.numel() == cache.columns > 0
    n = A.num_nodes
    rest = EDGE * A.num_edges // 3
    want = C.choose_columns(A.csc.indptr, rest, EDGE, C.out_degrees(A.csc))  # by out-degree
    assert torch.equal(cols.cpu(), want)
    assert torch.equal(C.out_degrees(H.csc), C.out_degrees(A.csc))
    index, ptr = gs.formats.gather_segments(A.csc.indptr, cols)
    assert torch.equal(cache.slot[cols], ptr[:-1])
    assert cache.rows.dtype == torch.int32  # 4 bytes a row: fewer than 2**31 nodes
    assert torch.equal(cache.rows.long(), A.csc.rows[index])
    assert torch.equal(cache.eids, A.csc.eids[index])
    assert cache.nbytes == 8 * (n + 1) + 8 * n + EDGE * cache.edges
    assert cache.edges <= A.num_edges // 3 + 1
    rows32 = P.narrow_rows(H.csc)  # the int32 host rows beside the cache, which it copies
    assert rows32.dtype == torch.int32 and P.is_mapped(rows32)
    assert torch.equal(rows32.long(), A.csc.rows)
    only = graphs["indptr"].cache
    assert only.slot is None and only.columns == 0 and only.nbytes == 8 * (n + 1)
    assert graphs["all"].cache.edges == A.num_edges
    wide = graphs["wide"].cache  # int64 rows: 16 bytes an edge, fewer edges for the budget
    assert wide.rows.dtype == torch.int64 and P.narrow_rows(graphs["wide"].csc) is None
    assert wide.nbytes == 8 * (n + 1) + 8 * n + 16 * wide.edges
    assert 0 < wide.edges < cache.edges


@pytest.mark.parametrize("placement", [pytest.param(p, marks=cuda) for p in ("uva", "auto")])
def test_an_auto_cache_takes_half_the_free_memory_and_samples_alike(graphs, placement):
    """``cache="auto"``: the whole graph's cache where half the free memory holds it (this
    graph's, on any GPU), else half of ``budget`` (the columns of a cache of that many bytes);
    "auto" choosing UVA for the budget too. Samples are the device graph's."""
    A = graphs["device"]
    whole = C.whole_bytes(graphs["uva"].csc)
    free = P.free_memory("cuda")
    if placement == "uva":  # no budget: the free memory
        H = A.to("cuda", placement="uva", cache="auto")
        assert H.cache.nbytes == whole <= free // 2  # (a 22 MB cache: the cap binds)
        assert H.cache.edges == A.num_edges
    else:
        budget = 2 * graphs["third"].cache.nbytes + 1
        assert P.choose(P.graph_bytes(A.csc), budget) == "uva"
        H = A.to("cuda", placement="auto", budget=budget, cache="auto")
        assert H.cache.nbytes <= budget // 2
        assert torch.equal(H.cache.slot, graphs["third"].cache.slot)
    assert H.placement == "uva" and not P.is_mapped(H.csc.indptr) and P.is_mapped(H.csc.rows)
    sampler = functools.partial(gs.compile(graphsage, backend="cuda"), fanouts=(25, 10))
    with gs.use_backend("cuda"):
        H.cache.reset()
        assert_same(_epoch(H, sampler), _epoch(A, sampler))
        assert H.cache.stats()["hits"] > 0


def _epoch(G, sampler, batches=6, **kw):
    seeds = torch.arange(0, 512 * batches, device=G.device) * 7 % G.num_nodes
    gs.manual_seed(0)
    return [(b.index, b.out) for b in gs.DataLoader(G, sampler, seeds, 512, seed=4, **kw)]


def _expected_reads(out, graph, cache, sliced):
    """(edges read, edges of cached columns read) of a GraphSAGE epoch's blocks: each
    column's sampled edges, or all its edges where the frontier is ``sliced`` first (eager)."""
    reads = hits = 0
    for _, blocks in out:
        for block in blocks:
            cols = block.csc.col_ids
            counts = graph.csc.indptr.diff()[cols] if sliced else block.csc.indptr.diff()
            reads += int(counts.sum())
            hits += int(counts[cache.slot[cols] >= 0].sum())
    return reads, hits


@pytest.mark.parametrize(
    "mode", [pytest.param(m, marks=cuda) for m in ("eager", "compiled", "super-batched")]
)
def test_graphsage_through_the_cache_samples_the_same_and_counts_its_reads(graphs, mode):
    fn = graphsage if mode == "eager" else gs.compile(graphsage, backend="cuda")
    sampler = functools.partial(fn, fanouts=(25, 10))
    kw = {"super_batch": 3} if mode == "super-batched" else {}
    H = graphs["third"]
    with gs.use_backend("cuda"):
        want = _epoch(graphs["device"], sampler, **kw)
        assert_same(_epoch(graphs["uva"], sampler, **kw), want)
        H.cache.reset()
        got = _epoch(H, sampler, **kw)
        assert_same(got, want)
        stats = H.cache.stats()
        reads, hits = _expected_reads(got, graphs["device"], H.cache, mode == "eager")
        assert (stats["reads"], stats["hits"]) == (reads, hits)
        assert 0 < hits < reads and stats["hit_rate"] == hits / reads
        for name in ("indptr", "all", "presampled", "wide"):
            G = graphs[name]
            G.cache.reset()
            assert_same(_epoch(G, sampler, **kw), want)
            s = G.cache.stats()
            expect = (
                {"indptr": 0, "all": reads}.get(name)
                if name not in ("presampled", "wide")
                else _expected_reads(got, graphs["device"], G.cache, mode == "eager")[1]
            )
            assert s["reads"] == reads and s["hits"] == expect
    H.cache.reset()
    assert H.cache.stats()["reads"] == 0 and np.isnan(H.cache.stats()["hit_rate"])


@pytest.mark.parametrize("dummy", [pytest.param(0, marks=cuda)])
def test_walks_and_ladies_read_the_cached_graph_alike(graphs, dummy):
    A, H = graphs["device"], graphs["third"]
    with gs.use_backend("cuda"):
        walker = gs.compile(lambda G, seeds: G.random_walk(seeds, 20, p=2.0, q=0.5), backend="cuda")
        assert_same(_epoch(H, walker, batches=3), _epoch(A, walker, batches=3))
    ladies = example("ladies")
    sampler = functools.partial(gs.compile(ladies.ladies, backend="cuda"), layers=(500, 500))
    assert_same(
        _epoch(ladies.normalize(H), sampler, batches=3),
        _epoch(ladies.normalize(A), sampler, batches=3),
    )


#: walks (``A.random_walk`` keywords; ``probs``: the graph's values) and whether their
#: every step is a move or a stop (a row read each, for exact expected counts)
WALKS = {
    "deepwalk": ({}, True),
    "ppr": ({"stop_prob": 0.15}, True),
    "weighted": ({"probs": True}, True),
    "node2vec": ({"p": 2.0, "q": 0.5}, False),
    "restart-jump": ({"restart_prob": 0.2, "jump_prob": 0.1}, False),
    "node2vec-weighted": ({"p": 0.3, "q": 3.0, "probs": True, "stop_prob": 0.01}, False),
}


def _walker(kw: dict, compiled: bool):
    kw = dict(kw)
    weighted = kw.pop("probs", False)

    def walk(G, seeds):
        return G.random_walk(seeds, 20, probs=G.values if weighted else None, **kw)

    return gs.compile(walk, backend="cuda") if compiled else walk


def _walk_reads(out, cache):
    """(moves, moves from a cached column) of an epoch's walks: each step after the seed
    that is not -1 (walks that only move or stop)."""
    reads = hits = 0
    for _, walks in out:
        moved = walks[:, 1:] >= 0
        reads += int(moved.sum())
        if cache.slot is not None:  # (ids as a super-batch's, b * n + v, would be v)
            src = cache.slot[walks[:, :-1].clamp(min=0) % cache.slot.numel()] >= 0
            hits += int((moved & src).sum())
    return reads, hits


@pytest.mark.parametrize(
    "mode", [pytest.param(m, marks=cuda) for m in ("eager", "compiled", "super-batched")]
)
@pytest.mark.parametrize("walk", list(WALKS))
def test_walks_read_cached_columns_from_the_cache_and_count_their_reads(graphs, walk, mode):
    """A walk on a cached UVA graph is the device graph's walk; the cache counts one read
    per row the walk read and a hit per read of a cached column's (exactly, for walks that
    only move or stop): no hit with a cache of ``indptr`` alone, all of them with a cache of
    the whole graph, the same reads whatever the cache."""
    kw, exact = WALKS[walk]
    sampler = _walker(kw, mode != "eager")
    opts = {"super_batch": 3} if mode == "super-batched" else {}
    with gs.use_backend("cuda"):
        want = _epoch(graphs["device"], sampler, batches=3, **opts)
        counts = {}
        for name in ("third", "indptr", "all", "presampled", "wide"):
            G = graphs[name]
            G.cache.reset()
            assert_same(_epoch(G, sampler, batches=3, **opts), want)
            s = G.cache.stats()
            counts[name] = (s["reads"], s["hits"])
            if exact:
                assert counts[name] == _walk_reads(want, G.cache), name
    reads = counts["third"][0]
    assert reads > 0 and all(r == reads for r, _ in counts.values())
    assert counts["indptr"][1] == 0 and counts["all"][1] == reads
    assert 0 < counts["third"][1] < reads


@pytest.mark.parametrize("dummy", [pytest.param(0, marks=cuda)])
def test_fused_walks_read_cached_columns_from_the_cache(graphs, dummy):
    """A fused walk (``gs.walk`` of a step with a walk in it: one generated kernel) on a
    cached UVA graph is the device graph's, and its inlined walks count their reads."""
    mh = example("metropolis_hastings")
    sampler = gs.compile(lambda G, seeds: mh.metropolis_hastings(G, seeds, 30), backend="cuda")
    with gs.use_backend("cuda"):
        want = _epoch(graphs["device"], sampler, batches=3)
        for name in ("third", "all", "wide"):
            G = graphs[name]
            G.cache.reset()
            assert_same(_epoch(G, sampler, batches=3), want)
            reads, hits = G.cache.stats()["reads"], G.cache.stats()["hits"]
            assert reads > 0 and (hits == reads if name == "all" else 0 < hits < reads), name
