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


@pytest.mark.parametrize("rows, eids", [("int64", "int64"), ("int32", "int64"), ("int32", None)])
def test_the_whole_graphs_cache_takes_indptr_slots_rows_and_int64_edge_ids(small_graph, rows, eids):
    """``whole_bytes`` is what a cache of every column takes, as :func:`build` counts it: a
    budget of that many bytes chooses every non-empty column, one byte less does not."""
    from dataclasses import replace

    A = small_graph.csc
    A = replace(
        A,
        rows=A.rows.to(getattr(torch, rows)),
        eids=None if eids is None else A.eids.to(getattr(torch, eids)),
    )
    n, E = A.num_nodes, A.nnz
    edge = (4 if rows == "int32" else 8) + (8 if eids == "int64" else 0)
    whole = C.whole_bytes(A)
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


def test_walks_take_the_cache_of_int64_rows_only(small_graph):
    """The walk kernels' cache arguments (``walk.cache_args``): a registered cache of int64
    rows (the dtype the walks read) gives its slots, rows, their count and the counters, and
    compiles the cache's code in; a cache of ``indptr`` alone its counters only (reads
    counted, no hit); none, or one of int32 rows, nothing (the kernel as without a cache)."""
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
    finally:
        del C._CACHES[narrow]


# ----------------------------------------------------------------------------- GPU
@pytest.fixture(scope="module")
def graphs():
    """A device-resident graph (with int64 edge ids), the same in pinned host memory without a
    cache, and with caches of about a third of its edges, of its ``indptr`` alone, and of
    all of it."""
    A = gs.datasets.rmat(60_000, 1_300_000, seed=2, weighted=True, device="cuda")
    n, E = A.num_nodes, A.num_edges
    head = 8 * (n + 1) + 8 * n
    return {
        "device": A,
        "uva": A.to("cuda", placement="uva"),
        "third": A.to("cuda", placement="uva", cache=head + 16 * E // 3),
        "indptr": A.to("cuda", placement="uva", cache=8 * (n + 1)),
        "all": A.to("cuda", placement="auto", budget=0, cache=head + 16 * E),
        "presampled": A.to(
            "cuda",
            placement="uva",
            cache=head + 16 * E // 3,
            cache_priority=torch.arange(n, 0, -1, device="cuda"),
        ),
    }


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
    rest = 16 * A.num_edges // 3
    want = C.choose_columns(A.csc.indptr, rest, 16, C.out_degrees(A.csc))  # by out-degree
    assert torch.equal(cols.cpu(), want)
    assert torch.equal(C.out_degrees(H.csc), C.out_degrees(A.csc))
    index, ptr = gs.formats.gather_segments(A.csc.indptr, cols)
    assert torch.equal(cache.slot[cols], ptr[:-1])
    assert torch.equal(cache.rows, A.csc.rows[index])
    assert torch.equal(cache.eids, A.csc.eids[index])
    assert cache.nbytes == 8 * (n + 1) + 8 * n + 16 * cache.edges
    assert cache.edges <= A.num_edges // 3 + 1
    only = graphs["indptr"].cache
    assert only.slot is None and only.columns == 0 and only.nbytes == 8 * (n + 1)
    assert graphs["all"].cache.edges == A.num_edges


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
        for name in ("indptr", "all", "presampled"):
            G = graphs[name]
            G.cache.reset()
            assert_same(_epoch(G, sampler, **kw), want)
            s = G.cache.stats()
            expect = (
                {"indptr": 0, "all": reads}.get(name)
                if name != "presampled"
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
        for name in ("third", "indptr", "all", "presampled"):
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
        for name in ("third", "all"):
            G = graphs[name]
            G.cache.reset()
            assert_same(_epoch(G, sampler, batches=3), want)
            reads, hits = G.cache.stats()["reads"], G.cache.stats()["hits"]
            assert reads > 0 and (hits == reads if name == "all" else 0 < hits < reads), name
