"""Temporal sampling: ``A.temporal_sample`` (the op) and gsample.pyg's loaders with
``time_attr`` / ``input_time`` / ``temporal_strategy`` / ``edge_label_time``, against the
brute-force reference of ``brute_force.py`` (every allowed edge of every seed and hop
enumerated): structure exactly, laws by goodness-of-fit tests at fixed seeds (their p-values
printed), compiled == eager, determinism, refusals."""

import collections
import functools
import itertools
import math

import pytest
import torch
from brute_force import Graph, allowed, check_batch, expected_trees, trees_of
from conftest import snap_path

pytest.importorskip("torch_geometric")
pytest.importorskip("scipy")

from scipy import stats
from torch_geometric.data import Data, HeteroData
from torch_geometric.sampler import NegativeSampling

import gsample as gs
import gsample.pyg as gp
from gsample.backend import get_backend
from gsample.backend.cuda import first_reached as cuda_first_reached
from gsample.base.random import batch_scope
from gsample.interop.pyg.temporal import (
    HeteroTemporalSpec,
    TemporalSpec,
    disjoint_pyg_sample,
    disjoint_sample,
)
from gsample.ir import Op

N, E, T = 80, 1200, 50


def _rmat_data(time_kind="edge", seed=0):
    """A small R-MAT graph as a Data, with integer times per edge or per node."""
    A = gs.datasets.rmat(N, E, seed=seed)
    src, dst, _ = A.edges()
    g = torch.Generator().manual_seed(seed)
    data = Data(edge_index=torch.stack([src, dst]), num_nodes=N)
    data.x = torch.arange(N).view(-1, 1)
    if time_kind == "edge":
        data.edge_time = torch.randint(0, T, (E,), generator=g)
    else:
        data.time = torch.randint(0, T, (N,), generator=g)
    return data


def _node_graph(data) -> Graph:
    """A node-level time as the reference's edge time: the source's (the neighbour's)."""
    return Graph.of(data.edge_index, data.time[data.edge_index[0]])


def _batches(loader):
    return [(b.n_id, b.batch, b.edge_index, b.e_id) for b in loader]


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert all(torch.equal(u, v) for u, v in zip(x, y, strict=True))


# --- the op: structure against the reference ------------------------------------------


@pytest.fixture(scope="module")
def timed():
    A = gs.datasets.rmat(N, E, seed=1)
    A = A.with_edge_time(torch.randint(0, T, (E,), generator=torch.Generator().manual_seed(1)))
    src, dst, eid = A.edges()
    et = A.edge_time[eid]  # A's edge order (the op's); the reference's by edge id
    by_id = torch.argsort(eid)
    return A, Graph.of(torch.stack([src, dst])[:, by_id], A.edge_time), et, eid


@pytest.mark.parametrize("strategy", ["uniform", "last"])
@pytest.mark.parametrize("k", [0, 3, -1])
@pytest.mark.parametrize("window", [None, 9])
@pytest.mark.parametrize("replace", [False, True])
def test_op_samples_only_allowed_edges(timed, strategy, k, window, replace):
    """Column ``c`` holds ``min(k, #allowed)`` distinct allowed edges (``k`` with
    replacement), the most recent ones for ``"last"``, all for ``k = -1``; CSC order."""
    if replace and k < 0:
        pytest.skip("k = -1 takes every allowed edge")
    A, g, et, eid = timed
    gen = torch.Generator().manual_seed(2)
    cols = torch.randint(0, N, (300,), generator=gen)
    t = torch.randint(-5, T + 5, (300,), generator=gen)
    gs.manual_seed(0)
    s = A.temporal_sample(
        cols,
        k,
        time=t,
        edge_time=et,
        strategy=strategy,
        window=window,
        replace=replace,
        seed=torch.arange(300) % 11,
    )
    assert torch.equal(s.col_ids, cols)
    ptr, got = s.csc.indptr.tolist(), s.csc.eids
    pos = torch.empty_like(eid)
    pos[eid] = torch.arange(eid.numel())  # each edge id's position in A's CSC
    for c in range(300):
        e = got[ptr[c] : ptr[c + 1]]
        ok = allowed(g, int(cols[c]), int(t[c]), window, strategy, k)
        assert set(e.tolist()) <= set(ok)
        assert bool((pos[e][1:] >= pos[e][:-1]).all()), "CSC order within a column"
        if replace:
            assert e.numel() == (k if ok else 0)
        else:
            want = len(ok) if k < 0 else min(k, len(ok))
            assert e.numel() == want == len(set(e.tolist()))
            if strategy == "last" or k < 0:
                assert sorted(e.tolist()) == ok


def test_op_without_times_is_individual_sample(timed):
    """No time, no seed: exactly ``A[:, cols].individual_sample(k)`` (uniform, and weighted
    without replacement)."""
    A, _, _, _ = timed
    cols = torch.tensor([3, 3, 7, 0, 50, 79])
    w = torch.rand(A.num_edges, generator=torch.Generator().manual_seed(3))
    for kw in ({}, {"replace": True}, {"probs": w}):
        gs.manual_seed(4)
        a = A.temporal_sample(cols, 2, **kw)
        gs.manual_seed(4)
        if "probs" in kw:  # the slice's weights: A's at the slice's edges
            kw = {"probs": w[_positions(A, cols)]}
        b = A[:, cols].individual_sample(2, **kw)
        assert all(torch.equal(x, y) for x, y in zip(a.edges(), b.edges(), strict=True)), kw


def _positions(A, cols):
    """Positions in ``A``'s CSC of the edges of ``A[:, cols]`` (its weights' index)."""
    ptr = A.csc.indptr
    return torch.cat([torch.arange(int(ptr[c]), int(ptr[c + 1])) for c in cols.tolist()])


def test_a_node_level_time_is_the_neighbours(timed):
    """``edge_time = node_time[sources]``: a neighbour is allowed when its own time is."""
    A, _, _, _ = timed
    node_time = torch.randint(0, T, (N,), generator=torch.Generator().manual_seed(5))
    src, dst, _ = A.edges()
    cols, t = torch.arange(N), torch.full((N,), T // 2)
    s = A.temporal_sample(cols, -1, time=t, edge_time=node_time[src])
    got = collections.Counter(zip(*[x.tolist() for x in s.edges()[:2]]))
    want = collections.Counter(
        (u, v) for u, v in zip(src.tolist(), dst.tolist()) if node_time[u] <= T // 2
    )
    assert got == want


# --- laws -------------------------------------------------------------------------------


def _hub(g, et, k_min=6, k_max=8):
    """A node and a time with between k_min and k_max allowed edges (a fixed choice)."""
    for v in range(N):
        for t in range(0, T, 3):
            ok = allowed(g, v, t)
            if k_min <= len(ok) <= k_max and len({g.time[e] for e in ok}) > 1:
                return v, t, ok
    raise AssertionError("no hub")


def _draws(A, v, t, et, M, k, **kw):
    gs.manual_seed(6)
    s = A.temporal_sample(
        torch.full((M,), v),
        k,
        time=torch.full((M,), t),
        edge_time=et,
        seed=torch.arange(M),
        **kw,
    )
    ptr, e = s.csc.indptr.tolist(), s.csc.eids.tolist()
    return [tuple(sorted(e[ptr[c] : ptr[c + 1]])) for c in range(M)]


def test_uniform_law_is_uniform_over_k_subsets(timed):
    """Temporal 'uniform', without replacement: every k-subset of the allowed edges equally
    likely (one column per seed: independent trees)."""
    A, g, et, _ = timed
    v, t, ok = _hub(g, et)
    M, k = 6000, 2
    counts = collections.Counter(_draws(A, v, t, et, M, k))
    subsets = list(itertools.combinations(ok, k))
    assert set(counts) <= set(subsets)
    p = stats.chisquare([counts[s] for s in subsets]).pvalue
    print(f"temporal uniform without replacement (d={len(ok)}, k={k}, M={M}): p={p:.3g}")
    assert p > 1e-3


def test_uniform_law_with_replacement(timed):
    A, g, et, _ = timed
    v, t, ok = _hub(g, et)
    M, k = 3000, 3
    counts = collections.Counter(e for d in _draws(A, v, t, et, M, k, replace=True) for e in d)
    assert set(counts) <= set(ok)
    p = stats.chisquare([counts[e] for e in ok]).pvalue
    print(f"temporal uniform with replacement (d={len(ok)}, draws={M * k}): p={p:.3g}")
    assert p > 1e-3


def test_weighted_law_without_replacement(timed):
    """Sequential draws proportional to weight among the allowed edges (exponential keys):
    the exact probability of each 2-subset."""
    A, g, et, eid = timed
    v, t, ok = _hub(g, et)
    w = torch.rand(A.num_edges, generator=torch.Generator().manual_seed(7)) + 0.1
    by_id = torch.empty_like(w)
    by_id[eid] = w  # weight of each edge id
    M = 6000
    counts = collections.Counter(_draws(A, v, t, et, M, 2, probs=w))
    W = sum(float(by_id[e]) for e in ok)
    subsets = list(itertools.combinations(ok, 2))
    prob = []
    for a, b in subsets:
        wa, wb = float(by_id[a]), float(by_id[b])
        prob.append(wa / W * wb / (W - wa) + wb / W * wa / (W - wb))
    p = stats.chisquare([counts[s] for s in subsets], [M * q for q in prob]).pvalue
    print(f"temporal weighted without replacement (d={len(ok)}, k=2, M={M}): p={p:.3g}")
    assert p > 1e-3


def test_weighted_law_with_replacement(timed):
    A, g, et, eid = timed
    v, t, ok = _hub(g, et)
    w = torch.rand(A.num_edges, generator=torch.Generator().manual_seed(8)) + 0.1
    by_id = torch.empty_like(w)
    by_id[eid] = w
    M, k = 3000, 3
    counts = collections.Counter(
        e for d in _draws(A, v, t, et, M, k, probs=w, replace=True) for e in d
    )
    W = sum(float(by_id[e]) for e in ok)
    p = stats.chisquare([counts[e] for e in ok], [M * k * float(by_id[e]) / W for e in ok]).pvalue
    print(f"temporal weighted with replacement (d={len(ok)}, draws={M * k}): p={p:.3g}")
    assert p > 1e-3


def test_loader_uniform_law(timed):
    """The same law through gsample.pyg.NeighborLoader: one seed node repeated, its first
    hop's 2-subsets."""
    A, g, et, eid = timed
    v, t, ok = _hub(g, et)
    eid = A.edges()[2]
    by_id = torch.empty_like(et)
    by_id[eid] = et
    data = Data(edge_index=torch.stack([g_t(g.src), g_t(g.dst)]), edge_time=by_id, num_nodes=N)
    M = 3000
    loader = gp.NeighborLoader(
        data,
        [2],
        input_nodes=torch.full((M,), v),
        input_time=torch.full((M,), t),
        time_attr="edge_time",
        batch_size=M,
        seed=9,
    )
    batch = next(iter(loader))
    draws = check_batch(batch, Graph.of(data.edge_index, data.edge_time), [v] * M, [2], [t] * M)
    counts = collections.Counter(tuple(d) for d in draws.values())
    subsets = list(itertools.combinations(ok, 2))
    p = stats.chisquare([counts[s] for s in subsets]).pvalue
    print(f"NeighborLoader temporal uniform (d={len(ok)}, k=2, M={M}): p={p:.3g}")
    assert p > 1e-3


def g_t(values):
    return torch.tensor(values, dtype=torch.int64)


# --- the loaders: structure against the reference ------------------------------------


@pytest.mark.parametrize("time_kind", ["edge", "node"])
@pytest.mark.parametrize("strategy", ["uniform", "last"])
@pytest.mark.parametrize("replace", [False, True])
def test_neighbor_loader_trees(time_kind, strategy, replace):
    data = _rmat_data(time_kind)
    g = Graph.of(data.edge_index, data.edge_time) if time_kind == "edge" else _node_graph(data)
    seeds = torch.arange(0, N, 3)
    times = torch.randint(0, T, (seeds.numel(),), generator=torch.Generator().manual_seed(1))
    kw = {"input_time": times} if time_kind == "edge" else {}
    loader = gp.NeighborLoader(
        data,
        [3, 2],
        input_nodes=seeds,
        batch_size=7,
        seed=3,
        replace=replace,
        time_attr="edge_time" if time_kind == "edge" else "time",
        temporal_strategy=strategy,
        **kw,
    )
    at = 0
    for batch in loader:
        B = batch.batch_size
        s = seeds[at : at + B].tolist()
        t = times[at : at + B] if time_kind == "edge" else data.time[seeds[at : at + B]]
        check_batch(batch, g, s, [3, 2], t.tolist(), replace, strategy)
        if time_kind == "edge":
            assert torch.equal(batch.seed_time, times[at : at + B])
        else:  # PyG: seed_time is input_time, None when not given
            assert "seed_time" not in batch
        at += B
    assert at == seeds.numel()


def test_weighted_temporal_trees():
    """``weight_attr`` with ``time_attr``: weight-0 edges never sampled (the sampled graph
    holds the positive ones: ``e_id`` maps back to ``data.edge_index``), every tree the
    reference's."""
    data = _rmat_data("edge", seed=8)
    g = torch.Generator().manual_seed(8)
    data.w = torch.rand(E, generator=g) * (torch.rand(E, generator=g) > 0.3)
    seeds = torch.arange(0, N, 2)
    times = torch.randint(0, T, (seeds.numel(),), generator=g)
    loader = gp.NeighborLoader(
        data,
        [3, 2],
        input_nodes=seeds,
        input_time=times,
        time_attr="edge_time",
        weight_attr="w",
        batch_size=10,
        seed=4,
    )
    ref, w = Graph.of(data.edge_index, data.edge_time), data.w.tolist()
    for j, batch in enumerate(loader):
        sl = slice(10 * j, 10 * j + 10)
        check_batch(batch, ref, seeds[sl].tolist(), [3, 2], times[sl].tolist(), weight=w)
        assert bool((batch.w > 0).all()) and torch.equal(batch.w, data.w[batch.e_id])


@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_deterministic_trees_equal_the_reference(strategy):
    """``-1`` (every allowed edge) and ``"last"``: nothing is drawn, so the batch is the
    reference's, edge for edge."""
    data = _rmat_data("edge", seed=2)
    g = Graph.of(data.edge_index, data.edge_time)
    seeds, times = torch.tensor([1, 5, 5, 9, 33, 70]), torch.tensor([10, 40, 20, 49, 0, 25])
    hops = [-1, -1] if strategy == "uniform" else [2, 3]
    loader = gp.NeighborLoader(
        data,
        hops,
        input_nodes=seeds,
        input_time=times,
        time_attr="edge_time",
        temporal_strategy=strategy,
        batch_size=6,
    )
    batch = next(iter(loader))
    check_batch(batch, g, seeds.tolist(), hops, times.tolist(), strategy=strategy)
    want = expected_trees(g, seeds.tolist(), hops, times.tolist(), strategy)
    assert trees_of(batch, 6, 2) == want


def test_edge_time_of_every_batch_edge_is_at_most_its_seeds():
    """PyG's own check (test_edge_level_temporal_homo_neighbor_loader), on R-MAT, and each
    node of a tree of node-level time is no later than its seed."""
    data = _rmat_data("node", seed=3)
    loader = gp.NeighborLoader(data, [4, 4], time_attr="time", batch_size=10, seed=0)
    for batch in loader:
        st = batch.time[: batch.batch_size]
        assert bool((batch.time <= st[batch.batch]).all())


# --- link prediction ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["binary", "triplet"])
def test_link_loader_temporal_trees(mode):
    """Every tree of a temporal link batch (the positives' endpoints and the negatives')
    holds only nodes of time <= its seed time: ``edge_label_time``, the negatives' the
    positive's. PyG's ``batch`` is the tree's position modulo the positives ``P``, and the
    trees ``j``, ``j + P``, ... share positive ``j``'s time."""
    data = _rmat_data("node", seed=4)
    label_index = data.edge_index[:, :60]
    label_time = torch.maximum(data.time[label_index[0]], data.time[label_index[1]]) + 5
    loader = gp.LinkNeighborLoader(
        data,
        [2, 2],
        edge_label_index=label_index,
        edge_label_time=label_time,
        time_attr="time",
        neg_sampling=NegativeSampling(mode, 2),
        batch_size=12,
        seed=1,
    )
    for batch in loader:
        P = batch.input_id.numel()
        t = batch.edge_label_time if mode == "binary" else batch.seed_time
        assert torch.equal(t[:P], label_time[batch.input_id])
        n_seeds = (2 + 2 * 2) * P if mode == "binary" else (2 + 2) * P
        assert torch.equal(batch.batch[:n_seeds], torch.arange(n_seeds) % P), "seeds first"
        assert bool((batch.time <= t[:P][batch.batch]).all())
        if mode == "binary":
            assert torch.equal(batch.edge_label_index, torch.arange(n_seeds).view(2, -1))
        else:
            assert torch.equal(batch.dst_neg_index, torch.arange(2 * P, 4 * P).view(2, P).t())


def test_link_loader_edge_label_time_is_pygs():
    """PyG's test_temporal_homo_link_neighbor_loader on R-MAT, binary labels."""
    data = _rmat_data("node", seed=5)
    elt = torch.maximum(data.time[data.edge_index[0]], data.time[data.edge_index[1]])
    loader = gp.LinkNeighborLoader(
        data,
        [-1],
        time_attr="time",
        edge_label=torch.ones(E),
        edge_label_time=elt,
        batch_size=4,
        shuffle=True,
        seed=2,
    )
    for batch in itertools.islice(loader, 20):
        assert batch.edge_label_index.shape == (2, 4)
        assert batch.edge_label_time.shape == (4,)
        assert bool((batch.time <= batch.edge_label_time[batch.batch]).all())


# --- determinism, compiled == eager ------------------------------------------------------


def test_same_seed_same_batches_whatever_num_workers():
    data = _rmat_data("node", seed=6)
    kw = dict(time_attr="time", batch_size=16, shuffle=True, seed=5)
    a = _batches(gp.NeighborLoader(data, [3, 3], **kw))
    _same(a, _batches(gp.NeighborLoader(data, [3, 3], **kw)))
    _same(a, _batches(gp.NeighborLoader(data, [3, 3], num_workers=2, **kw)))
    _same(a, _batches(gp.NeighborLoader(data, [3, 3], compile=False, **kw)))
    b = _batches(gp.NeighborLoader(data, [3, 3], **{**kw, "seed": 6}))
    assert any(not torch.equal(x[3], y[3]) for x, y in zip(a, b, strict=True))


def test_each_seed_samples_what_it_samples_alone():
    """The determinism target of disjoint sampling: seed ``i`` of a mini-batch samples what the
    program samples for that seed alone, given its batch key and position (seed index ``i``),
    with times and weights."""
    data = _rmat_data("edge", seed=7)
    A = gs.Matrix.from_edge_index(data.edge_index, N, weight=torch.rand(E) + 0.1)
    et = data.edge_time[A.edges()[2]]
    seeds = torch.tensor([4, 9, 4, 60, 2, 17, 9])
    st = torch.tensor([30, 10, 45, 49, 5, 20, 30])
    for weighted, replace in ((False, False), (True, False), (False, True), (True, True)):
        fn = gs.compile(
            functools.partial(
                disjoint_sample, num_neighbors=(3, 2), weighted=weighted, replace=replace
            )
        )
        with batch_scope(11, 4):
            whole = disjoint_pyg_sample(fn(A, seeds, st, et), seeds)
        for i in range(seeds.numel()):
            with batch_scope(11, 4):
                one = disjoint_pyg_sample(
                    fn(A, seeds[i : i + 1], st[i : i + 1], et, torch.tensor([i])), seeds[i : i + 1]
                )
            mine = whole.batch == i
            assert torch.equal(whole.node[mine], one.node)
            assert torch.equal(whole.edge[whole.batch[whole.col] == i], one.edge)


@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_compiled_equals_eager(timed, strategy):
    A, _, et, _ = timed
    seeds = torch.tensor([0, 3, 3, 40, 79])
    st = torch.tensor([10, 20, 30, 40, 49])
    for kw in ({}, {"weighted": True}, {"replace": True}, {"window": 15}):
        fn = functools.partial(disjoint_sample, num_neighbors=(3, -1), strategy=strategy, **kw)
        w = (
            A
            if "weighted" not in kw
            else gs.Matrix.from_csc(A.csc.indptr, A.csc.rows, weight=torch.rand(A.num_edges) + 0.1)
        )
        et_w = et if w is A else et[torch.argsort(A.edges()[2])][w.edges()[2]]
        gs.manual_seed(3)
        e = fn(w, seeds, st, et_w)
        gs.manual_seed(3)
        c = gs.compile(fn)(w, seeds, st, et_w)
        for x, y in zip(e[0], c[0], strict=True):
            assert all(torch.equal(u, v) for u, v in zip(x.edges(), y.edges(), strict=True))


def test_super_batched_equals_one_by_one():
    """gs.DataLoader's super-batches of a temporal disjoint program (node-level times,
    captured) sample what the mini-batches sample one by one."""
    A = gs.datasets.rmat(300, 3000, seed=0)
    node_time = torch.randint(0, 100, (300,), generator=torch.Generator().manual_seed(0))
    et = node_time[A.edges()[0]]

    def temporal(A, seeds):
        return disjoint_sample(A, seeds, node_time[seeds], et, num_neighbors=(4, 3))

    fn = gs.compile(temporal)
    one = [b.out for b in gs.DataLoader(A, fn, torch.arange(64), 16, shuffle=False, seed=3)]
    sb = gs.DataLoader(  # the times are captured constants: fixed while the loader runs
        A, fn, torch.arange(64), 16, shuffle=False, seed=3, super_batch=2, fixed_state=True
    )
    for o1, b in zip(one, sb, strict=True):
        for x, y in zip(o1[0], b.out[0], strict=True):
            assert all(torch.equal(u, v) for u, v in zip(x.edges(), y.edges(), strict=True))


def test_cpu_tensors_on_the_cuda_backend_run_the_torch_code():
    """The CUDA backend's kernels take GPU graphs; a CPU graph under ``use_backend("cuda")``
    runs the torch code (same samples). Its kernels: tests/backend/test_cuda_temporal.py."""
    A = gs.datasets.rmat(50, 300, seed=0)
    assert get_backend("cuda").target().op_layouts[Op.TEMPORAL_SAMPLE] == ("csc",)
    cols = torch.tensor([1, 2, 2, 3])
    gs.manual_seed(0)
    with gs.use_backend("cuda"):
        a = A.temporal_sample(cols, 2, seed=torch.arange(4))
    gs.manual_seed(0)
    b = A.temporal_sample(cols, 2, seed=torch.arange(4))
    assert all(torch.equal(x, y) for x, y in zip(a.edges(), b.edges(), strict=True))


@pytest.mark.cuda
def test_compiled_equals_eager_on_the_device(device):
    """On a GPU: eager, compiled and (``cuda-kernels``) the CUDA backend's run of the
    temporal program give the CPU's samples, bit for bit (uniform draws)."""
    A = gs.datasets.rmat(N, E, seed=1)
    et = torch.randint(0, T, (E,), generator=torch.Generator().manual_seed(1))
    seeds, st = torch.tensor([0, 3, 3, 40]), torch.tensor([10, 20, 30, 40])
    fn = functools.partial(disjoint_sample, num_neighbors=(3, 2), strategy="uniform")
    gs.manual_seed(3)
    ref = fn(A, seeds, st, et)
    Ad = A.to(device)
    for f in (fn, gs.compile(fn)):
        gs.manual_seed(3)
        got = f(Ad, seeds.to(device), st.to(device), et.to(device))
        for x, y in zip(ref[0], got[0], strict=True):
            assert all(torch.equal(u, v.cpu()) for u, v in zip(x.edges(), y.edges(), strict=True))


# --- CollegeMsg ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def college():
    A = gs.datasets.read_snap(snap_path("CollegeMsg.txt.gz"))
    src, dst, eid = A.edges()
    order = torch.argsort(eid)
    data = Data(
        edge_index=torch.stack([src[order], dst[order]]),
        edge_time=A.edge_time,
        num_nodes=A.num_nodes,
    )
    return A, data


def test_college_msg_temporal_trees(college):
    """CollegeMsg (59,835 timestamped messages): trees of 'uniform' and 'last' sampling at
    each seed's time, against the reference."""
    A, data = college
    g = Graph.of(data.edge_index, data.edge_time)
    gen = torch.Generator().manual_seed(0)
    eids = torch.randint(0, A.num_edges, (40,), generator=gen)
    seeds = data.edge_index[1, eids]  # receivers of messages, at those messages' times
    times = data.edge_time[eids]
    for strategy in ("uniform", "last"):
        loader = gp.NeighborLoader(
            data,
            [5, 3],
            input_nodes=seeds,
            input_time=times,
            time_attr="edge_time",
            temporal_strategy=strategy,
            batch_size=20,
            seed=1,
        )
        for j, batch in enumerate(loader):
            s, t = seeds[20 * j : 20 * j + 20].tolist(), times[20 * j : 20 * j + 20].tolist()
            check_batch(batch, g, s, [5, 3], t, strategy=strategy)
            if strategy == "last":
                assert trees_of(batch, 20, 2) == expected_trees(g, s, [5, 3], t, "last")


def test_college_msg_uniform_law(college):
    """Uniform among the allowed messages of a busy receiver, at a mid time: the number of
    times each allowed message is drawn (k=1 per tree) fits a uniform law."""
    A, data = college
    g = Graph.of(data.edge_index, data.edge_time)
    deg = torch.bincount(data.edge_index[1], minlength=A.num_nodes)
    v = int(torch.argsort(deg, descending=True)[5])
    ts = sorted(data.edge_time[g.in_edges(v)].tolist())
    t = ts[len(ts) // 3]
    ok = allowed(g, v, t)
    M = 40 * len(ok)
    loader = gp.NeighborLoader(
        data,
        [1],
        input_nodes=torch.full((M,), v),
        input_time=torch.full((M,), t),
        time_attr="edge_time",
        batch_size=M,
        seed=2,
    )
    batch = next(iter(loader))
    counts = collections.Counter(batch.e_id.tolist())
    assert set(counts) <= set(ok) and sum(counts.values()) == M
    p = stats.chisquare([counts[e] for e in ok]).pvalue
    print(f"CollegeMsg uniform (node {v}, {len(ok)} allowed, M={M}): p={p:.3g}")
    assert p > 1e-3


# --- refusals -------------------------------------------------------------------------------


def test_refusals_name_their_argument():
    data = _rmat_data("edge")
    with pytest.raises(ValueError, match="'input_time' is set while 'time_attr' is not set"):
        gp.NeighborLoader(data, [2], input_time=torch.zeros(N, dtype=torch.long))
    with pytest.raises(ValueError, match=r"time_attr: the time attribute 'nope' is neither"):
        gp.NeighborLoader(data, [2], time_attr="nope")
    with pytest.raises(ValueError, match="temporal_strategy: expected one of"):
        gp.NeighborLoader(data, [2], time_attr="edge_time", temporal_strategy="first")
    with pytest.raises(TypeError, match="time_attr: the name of a node or edge attribute"):
        gp.NeighborLoader(data, [2], time_attr=3)
    with pytest.raises(ValueError, match="input_time: edge-level temporal sampling"):
        next(iter(gp.NeighborLoader(data, [2], time_attr="edge_time")))
    with pytest.raises(ValueError, match=r"input_time: expected one time per input node"):
        gp.NeighborLoader(data, [2], time_attr="edge_time", input_time=torch.zeros(3))
    with pytest.raises(TypeError, match=r"input_time: dtype torch\.float64 but data\.edge_time"):
        gp.NeighborLoader(data, [2], time_attr="edge_time", input_time=torch.zeros(N))
    with pytest.raises(ValueError, match="subgraph_type: 'induced' subgraphs are not disjoint"):
        gp.NeighborLoader(
            data,
            [2],
            time_attr="edge_time",
            subgraph_type="induced",
            input_time=torch.zeros(N, dtype=torch.long),
        )
    data.edge_time = data.edge_time.float()
    data.edge_time[0] = math.nan
    with pytest.raises(ValueError, match=r"time_attr \(data.edge_time\): contains NaN"):
        gp.NeighborLoader(data, [2], time_attr="edge_time")
    with pytest.raises(ValueError, match="'edge_label_time' is not set"):
        gp.LinkNeighborLoader(data, [2], time_attr="edge_time")


def test_a_hetero_data_gives_per_type_times():
    """A HeteroData's spec holds one time tensor per node type holding ``time_attr``
    (sampling: tests/interop/test_hetero_temporal.py); stores are read into a graph first."""
    h = HeteroData()
    h["a"].x = torch.arange(4)
    h["a"].time = torch.arange(4)
    h["b"].num_nodes = 2
    h["a", "to", "a"].edge_index = torch.tensor([[0, 1], [1, 2]])
    spec = TemporalSpec.of(h, time_attr="time")
    assert isinstance(spec, HeteroTemporalSpec) and spec.edge_time is None
    assert list(spec.node_time) == ["a"] and torch.equal(spec.node_time["a"], torch.arange(4))
    with pytest.raises(TypeError, match=r"disjoint: gsample\.pyg\.NeighborLoader reads a"):
        TemporalSpec.of((object(), object()), disjoint=True)


def test_op_refusals(timed):
    A, _, et, _ = timed
    cols = torch.tensor([1, 2])
    t = torch.tensor([5, 6])
    with pytest.raises(ValueError, match="edge_time: temporal sampling needs both"):
        A.temporal_sample(cols, 2, time=t)
    with pytest.raises(ValueError, match="time: temporal sampling needs both"):
        A.temporal_sample(cols, 2, edge_time=et)
    with pytest.raises(ValueError, match="strategy: strategy='last' needs time"):
        A.temporal_sample(cols, 2, strategy="last")
    with pytest.raises(ValueError, match="strategy: must be one of"):
        A.temporal_sample(cols, 2, time=t, edge_time=et, strategy="first")
    with pytest.raises(ValueError, match="window: must be a positive"):
        A.temporal_sample(cols, 2, time=t, edge_time=et, window=0)
    with pytest.raises(ValueError, match="window: integer times take an integer window"):
        A.temporal_sample(cols, 2, time=t, edge_time=et, window=1.5)
    with pytest.raises(TypeError, match=r"time: dtype torch\.float32 but edge_time"):
        A.temporal_sample(cols, 2, time=t.float(), edge_time=et)
    with pytest.raises(ValueError, match="time: contains NaN"):
        A.temporal_sample(cols, 2, time=torch.tensor([1.0, math.nan]), edge_time=et.double())
    with pytest.raises(ValueError, match=r"time: expected one time per column \(shape \(2,\)"):
        A.temporal_sample(cols, 2, time=t[:1], edge_time=et)
    with pytest.raises(ValueError, match=r"edge_time: expected one time per edge"):
        A.temporal_sample(cols, 2, time=t, edge_time=et[:3])
    with pytest.raises(ValueError, match="seed: seed index -1 is negative"):
        A.temporal_sample(cols, 2, seed=torch.tensor([0, -1]))
    with pytest.raises(TypeError, match="seed: seed indices must be an integer tensor"):
        A.temporal_sample(cols, 2, seed=torch.tensor([0.0, 1.0]))
    with pytest.raises(IndexError, match="cols: node id 80 is out of range"):
        A.temporal_sample(torch.tensor([80]), 2)
    with pytest.raises(ValueError, match="k: must be"):
        A.temporal_sample(cols, -2)
    with pytest.raises(ValueError, match="probs: contains negative values"):
        A.temporal_sample(cols, 2, probs=-torch.ones(A.num_edges))
    empty = A.temporal_sample(torch.tensor([], dtype=torch.long), 2)  # a tree that ended
    assert empty.shape == (N, 0) and empty.num_edges == 0


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("super_batch", [None, 3])
@pytest.mark.parametrize("time_kind", ["edge", "node"])
def test_cuda_backend_temporal_batches_equal_the_cpus(time_kind, super_batch, monkeypatch):
    """On a GPU, the CUDA backend (``first_reached``'s kernels among them: counted) gives the
    torch backend's temporal batches and the CPU's, bit for bit, one at a time and
    super-batched."""
    calls = []
    run = cuda_first_reached.run
    monkeypatch.setattr(cuda_first_reached, "run", lambda *a, **k: calls.append(1) or run(*a, **k))
    data = _rmat_data(time_kind, seed=2)
    seeds = torch.arange(N).repeat(2)
    attr = "edge_time" if time_kind == "edge" else "time"
    times = torch.arange(2 * N) % T

    def batches(device, backend):
        graph = gs.Matrix.from_pyg(data, weight=None).to(device)
        with gs.use_backend(backend):
            loader = gp.NeighborLoader(
                data,
                [4, 3, 2],
                input_nodes=seeds,
                input_time=times,
                time_attr=attr,
                batch_size=16,
                shuffle=True,
                seed=2,
                graph=graph,
                super_batch=super_batch,
            )
            return [tuple(t.cpu() for t in (b.n_id, b.batch, b.edge_index, b.e_id)) for b in loader]

    ref = batches("cpu", "torch")
    for backend in ("torch", "cuda"):
        _same(ref, batches("cuda", backend))
    assert calls, "the CUDA backend did not run first_reached's kernels"
