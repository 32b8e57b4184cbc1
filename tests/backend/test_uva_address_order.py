"""A graph in pinned host memory is sampled in address order once its frontier (or its set of
walkers) is dense: ``kernels/nodewise.cu``'s phases 1 and 2, ``kernels/walk.cu``'s steps.
The order itself on the CPU, and on a GPU that the ordered launches run for a UVA graph
(alone, with a GPU cache, super-batched), not for a device graph, and sample alike."""

import functools

import pytest
import torch
from helpers import assert_same, graphsage

import gsample as gs
from gsample.backend.cuda import extract, nodewise, walk
from gsample.formats import placement as P

cuda = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]


def test_the_order_sorts_columns_by_the_node_they_read_with_padding_last():
    g = torch.Generator().manual_seed(0)
    n, copies, C, m = 1000, 4, 600, 517
    buf = torch.randint(copies * n, (C,), generator=g)
    buf[m:] = torch.randint(n, (C - m,), generator=g)  # padding: anything
    order = nodewise._address_order(buf, torch.tensor(m), n)
    assert torch.equal(order.sort().values, torch.arange(C))  # a permutation
    assert torch.equal(order[m:].sort().values, torch.arange(m, C))  # padding last
    v = buf[order[:m]] % n
    assert bool((v[1:] >= v[:-1]).all())  # real columns by node
    whole = nodewise._address_order(buf, None, 0)
    assert bool((buf[whole][1:] >= buf[whole][:-1]).all())


def test_the_order_of_an_empty_frontier_is_empty():
    assert nodewise._address_order(torch.empty(0, dtype=torch.int64), None, 5).numel() == 0


@pytest.fixture(scope="module")
def graphs():
    A = gs.datasets.rmat(50_000, 1_200_000, seed=3, device="cuda")
    return A, A.to("cuda", placement="uva"), A.to("cuda", placement="uva", cache=2 << 20)


@pytest.mark.parametrize("super_batch", [pytest.param(s, marks=cuda) for s in (None, 4)])
def test_a_uva_graph_is_read_in_two_phases_and_samples_alike(graphs, monkeypatch, super_batch):
    A, H, cached = graphs
    assert P.is_mapped(H.csc.rows) and cached.cache is not None
    phases = []
    real = nodewise.launch

    def record(*a, **k):
        if a[1] == "gs_sample_uniform":
            phases.append(a[-1])
        return real(*a, **k)

    monkeypatch.setattr(nodewise, "launch", record)
    fn = functools.partial(gs.compile(graphsage, backend="cuda"), fanouts=(15, 10))
    seeds = torch.randperm(A.num_nodes, generator=torch.Generator().manual_seed(1))[:2048]
    kw = {} if super_batch is None else {"super_batch": super_batch}

    def epoch(G):
        phases.clear()
        out = [b.out for b in gs.DataLoader(G, fn, seeds.cuda(), 256, seed=5, **kw)]
        return out, sorted(set(phases))

    ref, on_device = epoch(A)
    assert on_device == [0]
    for G in (H, cached):
        got, on_host = epoch(G)
        assert {1, 2} <= set(on_host)  # a dense layer (the seeds' may be sparse)
        assert_same(got, ref)
    monkeypatch.setattr(nodewise, "SWEEP_DENSITY", A.num_nodes)  # every layer in order
    fn = functools.partial(gs.compile(graphsage, backend="cuda"), fanouts=(15, 10))  # no replay
    got, on_host = epoch(H)
    assert on_host == [1, 2]
    assert_same(got, ref)


WALKS = [
    {},
    {"p": 2.0, "q": 0.5},
    {"stop_prob": 0.15},
    {"restart_prob": 0.2, "jump_prob": 0.1},
]


@pytest.mark.parametrize("kw", [pytest.param(k, marks=cuda) for k in WALKS])
def test_walks_on_a_uva_graph_step_in_address_order_alike(graphs, monkeypatch, kw):
    A, H, cached = graphs
    launched = []
    real = walk.launch

    def record(*a, **k):
        launched.append(a[1])
        return real(*a, **k)

    monkeypatch.setattr(walk, "launch", record)

    def walker(G, seeds):
        return G.random_walk(seeds, 12, **kw)

    seeds = torch.randperm(A.num_nodes, generator=torch.Generator().manual_seed(2))[:3000].cuda()
    compiled = gs.compile(walker, backend="cuda")

    def epoch(G, fn, **loader):
        launched.clear()
        out = [b.out for b in gs.DataLoader(G, fn, seeds, 500, seed=7, **loader)]
        return out, set(launched)

    for fn in (walker, compiled):
        with gs.use_backend("cuda"):
            ref, on_device = epoch(A, fn)
            assert on_device == {"gs_random_walk"}
            got, sparse = epoch(H, fn)  # 500 walkers over 50,000 nodes: one launch
            assert sparse == {"gs_random_walk"}
            assert_same(got, ref)
            monkeypatch.setattr(walk, "SWEEP_DENSITY", A.num_nodes)
            for G in (H, cached):
                if fn is not walker:  # compiled anew: no CUDA graph captured before replays
                    fn = gs.compile(walker, backend="cuda")
                got, steps = epoch(G, fn)
                assert steps == {"gs_random_walk_start", "gs_random_walk_step"}
                assert_same(got, ref)
            monkeypatch.setattr(walk, "SWEEP_DENSITY", nodewise.SWEEP_DENSITY)
    with gs.use_backend("cuda"):
        ref, _ = epoch(A, compiled, super_batch=6)
        got, steps = epoch(H, compiled, super_batch=6)  # 3,000 walkers: dense enough
        assert "gs_random_walk_step" in steps
        assert_same(got, ref)


@pytest.mark.parametrize(
    "fanouts, replace",
    [pytest.param(f, r, marks=cuda) for f, r in (((15, 10), True), ((40, 5), False))],
    ids=["with-replacement", "past-32-draws"],
)
def test_every_draw_path_reads_in_address_order_alike(graphs, monkeypatch, fanouts, replace):
    """Forced sweeps (every layer) through the kernel's other draw paths: with replacement,
    and more than 32 draws a column (lane 0 draws them one after another)."""
    A, H, cached = graphs
    monkeypatch.setattr(nodewise, "SWEEP_DENSITY", A.num_nodes)
    seeds = torch.randperm(A.num_nodes, generator=torch.Generator().manual_seed(3))[:1024].cuda()
    outs = []
    for G in (A, H, cached):
        fn = functools.partial(
            gs.compile(graphsage, backend="cuda"), fanouts=fanouts, replace=replace
        )
        outs.append([b.out for b in gs.DataLoader(G, fn, seeds, 256, seed=9, super_batch=2)])
    assert_same(outs[1], outs[0])
    assert_same(outs[2], outs[0])


def _corrupt(order: torch.Tensor) -> torch.Tensor:
    """An order gone wrong: entries outside the frontier (or the walkers), both ends."""
    bad = order.clone()
    bad[::7] = -(2**40)
    bad[3::7] = order.numel() + 5
    return bad


def _layer(G, seeds):
    return G[:, seeds].individual_sample(5)


def _walks(G, seeds):
    return G.random_walk(seeds, 6)


@pytest.mark.parametrize(
    "sampler, orders, match",
    [
        pytest.param(_layer, "_address_order", r"address order .* bug in gsample", marks=cuda),
        pytest.param(_walks, "_walker_orders", r"walker order or state .* bug", marks=cuda),
    ],
    ids=["nodewise", "walks"],
)
def test_a_corrupt_address_order_is_flagged_not_read_through(
    graphs, monkeypatch, sampler, orders, match
):
    """The orders are the host's own arrays; the kernels bound them all the same (memcheck
    runs this test): the call raises, and the next call is unharmed."""
    A, H, _ = graphs
    module = nodewise if orders == "_address_order" else walk
    monkeypatch.setattr(module, "SWEEP_DENSITY", A.num_nodes)
    seeds = torch.arange(0, A.num_nodes, 3, device="cuda")

    def epoch(G):  # compiled anew each time: no CUDA graph captured before
        fn = gs.compile(sampler, backend="cuda")
        return [b.out for b in gs.DataLoader(G, fn, seeds, 4096, seed=11)]

    want = epoch(A)
    good = getattr(module, orders)
    if orders == "_address_order":
        monkeypatch.setattr(module, orders, lambda *a: _corrupt(good(*a)))
    else:
        monkeypatch.setattr(module, orders, lambda *a: (_corrupt(o) for o in good(*a)))
    with pytest.raises(RuntimeError, match=match):
        epoch(H)
    monkeypatch.setattr(module, orders, good)
    assert_same(epoch(H), want)


@pytest.mark.parametrize("dummy", [pytest.param(0, marks=cuda)])
def test_the_kernels_read_a_uva_graph_s_int32_rows_where_it_keeps_them(graphs, monkeypatch, dummy):
    """A UVA graph keeps its rows as int32 in pinned host memory too (``narrow_rows``), with
    a GPU cache or without, and its cache keeps int32 rows (copied from them): node-wise
    sampling, column slicing and the walks read both, compiled for int32 rows. Samples
    alike (the tests above, and ``tests/formats/test_cache.py``)."""
    A, H, cached = graphs
    for G in (H, cached):
        rows32 = P.narrow_rows(G.csc)
        assert rows32.dtype == torch.int32 and P.is_mapped(rows32)
        assert P.host_of(rows32).is_pinned() and torch.equal(rows32.long(), G.csc.rows)
    assert P.narrow_rows(A.csc) is None
    assert cached.cache.rows.dtype == torch.int32 and cached.cache.edges > 0
    read = {}

    def record(real):
        def launch(family, kernel, *a, **k):
            where = {"gs_gather_segments": 5}.get(kernel, 2)  # grid, indptr, rows
            if kernel in (
                "gs_sample_uniform",
                "gs_random_walk",
                "gs_random_walk_step",
                "gs_gather_segments",
            ):
                int32 = ("ROW", "int") in k.get("params", ()) or ("IDX", "int") in k.get(
                    "params", ()
                )
                read.setdefault(kernel, set()).add((a[where].dtype, int32))
            return real(family, kernel, *a, **k)

        return launch

    monkeypatch.setattr(nodewise, "launch", record(nodewise.launch))
    monkeypatch.setattr(walk, "launch", record(walk.launch))
    monkeypatch.setattr(extract, "launch", record(extract.launch))
    seeds = torch.arange(0, A.num_nodes, 5, device="cuda")
    narrow = {(torch.int32, True)}
    with gs.use_backend("cuda"):
        for G in (H, cached):
            read.clear()
            fn = functools.partial(gs.compile(graphsage, backend="cuda"), fanouts=(10, 5))
            for _ in gs.DataLoader(G, fn, seeds, 2048, seed=3):
                pass
            G.random_walk(seeds, 5)
            G[:, seeds[:100]]
            assert read["gs_sample_uniform"] == narrow
            walked = read.get("gs_random_walk", set()) | read.get("gs_random_walk_step", set())
            assert walked == narrow
            assert read["gs_gather_segments"] == narrow


@pytest.mark.parametrize("in_flight", [pytest.param(n, marks=cuda) for n in (None, 1, 64, 200)])
def test_a_step_strides_over_the_walkers_it_has_no_thread_for(graphs, monkeypatch, in_flight):
    """``walk.STEP_IN_FLIGHT`` caps the threads of an address-ordered step (whole blocks of
    ``walk._THREADS``); the rest of the walkers are taken by the same threads in turn, and
    the walks are the device graph's whatever the cap (node2vec: the previous node's
    column read too). A cache of every edge reads nothing from host memory: no cap."""
    A, H, cached = graphs
    whole = A.to("cuda", placement="uva", cache=1 << 30)
    assert cached.cache.edges < A.num_edges == whole.cache.edges
    grids = []
    real = walk.launch

    def record(*a, **k):
        if a[1] == "gs_random_walk_step":
            grids.append(k.get("grid"))
        return real(*a, **k)

    monkeypatch.setattr(walk, "launch", record)
    monkeypatch.setattr(walk, "STEP_IN_FLIGHT", in_flight)
    monkeypatch.setattr(walk, "SWEEP_DENSITY", A.num_nodes)  # every launch steps in order
    seeds = torch.randperm(A.num_nodes, generator=torch.Generator().manual_seed(4))[:1500].cuda()
    for kw in ({}, {"p": 2.0, "q": 0.5}):
        gs.manual_seed(3)
        ref = A.random_walk(seeds, 10, **kw)
        for G in (H, cached, whole):
            grids.clear()
            gs.manual_seed(3)
            got = G.random_walk(seeds, 10, **kw)
            want = None if in_flight is None else -(-in_flight // walk._THREADS)
            want = None if G is whole else want
            assert grids == [want] * 10
            assert torch.equal(got, ref)
