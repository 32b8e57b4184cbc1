"""The CPU temporal / disjoint draws in native code (``nodewise_native.ranged_sample``, taken by
``gsample/backend/torch/temporal.py``'s uniform draws) against the torch code
(``GSAMPLE_NATIVE_CPU=0``), bit for bit: op keys, seed keys (disjoint), super-batch keys,
edge times with ``<=``, a window and the ``last`` strategy, with and without replacement,
hubs, empty columns; and a compiled disjoint sampler."""

from dataclasses import replace as dc_replace

import pytest
import torch
from helpers import assert_same_csc, difference

import gsample as gs
from gsample.backend.torch import nodewise_native, select
from gsample.backend.torch import temporal as T
from gsample.base.random import BatchKeys, op_key
from gsample.interop.pyg.temporal import disjoint_sample

pytestmark = pytest.mark.skipif(
    not nodewise_native.available(), reason="no native CPU sampling (no C++ compiler, or disabled)"
)

KEY = op_key(5, 2, 9)


@pytest.fixture(scope="module")
def graph():
    """An R-MAT graph with edge ids, a hub of 2000 in-edges (node 3), and edge times."""
    g = gs.datasets.rmat(3000, 30000, seed=4).csc
    src = torch.randint(0, 3000, (2000,), generator=torch.Generator().manual_seed(1))
    ei = torch.stack(
        [torch.cat([g.rows, src]), torch.cat([g.edge_cols(), torch.full_like(src, 3)])]
    )
    A = gs.Matrix.from_edge_index(ei, 3000).csc
    A = dc_replace(A, eids=torch.randperm(A.nnz, generator=torch.Generator().manual_seed(2)))
    edge_time = torch.randint(0, 1000, (A.nnz,), generator=torch.Generator().manual_seed(3))
    return A, edge_time


def frontier(n, size, seed):
    g = torch.Generator().manual_seed(seed)
    cols = torch.cat([torch.randint(0, n, (size,), generator=g), torch.tensor([3, 3])])
    return cols[torch.randperm(cols.numel(), generator=g)]


def torch_code(monkeypatch, fn, *args, **kwargs):
    with monkeypatch.context() as m:
        m.setenv("GSAMPLE_NATIVE_CPU", "0")
        assert not nodewise_native.enabled()
        return fn(*args, **kwargs)


def native_only(monkeypatch):
    """The torch draws fail: a quiet fallback cannot pass a comparison."""

    def refuse(*args, **kwargs):
        raise AssertionError("the torch draws ran")

    monkeypatch.setattr(T, "select_in_columns", refuse)


CASES = {
    "untimed": {},
    "time": {"time": True},
    "window": {"time": True, "window": 300},
    "last": {"time": True, "strategy": "last"},
}


@pytest.mark.parametrize("replace", [False, True], ids=["without", "with"])
@pytest.mark.parametrize("k", [0, 1, 4, 25])
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("keyed", ["op", "seed"])
def test_native_equals_torch(graph, case, k, replace, keyed, monkeypatch):
    A, edge_time = graph
    cols = frontier(A.num_nodes, 600, k)
    kw = {}
    if CASES[case].get("time"):
        t = torch.randint(0, 1000, (cols.numel(),), generator=torch.Generator().manual_seed(k))
        kw.update(time=t, edge_time=edge_time)
    for name in ("window", "strategy"):
        if name in CASES[case]:
            kw[name] = CASES[case][name]
    if keyed == "seed":  # disjoint: each column keyed by its seed's index
        kw["seed"] = torch.randint(0, 50, (cols.numel(),), generator=torch.Generator())
    want = torch_code(monkeypatch, T.temporal_sample, A, cols, k, replace, KEY, **kw)
    native_only(monkeypatch)
    got = T.temporal_sample(A, cols, k, replace, KEY, **kw)
    assert_same_csc(got, want)


@pytest.mark.parametrize("replace", [False, True], ids=["without", "with"])
def test_super_batch_keys(graph, replace, monkeypatch):
    A, edge_time = graph
    n, copies = A.num_nodes, 3
    key = BatchKeys.of(7, 1, 4, copies, n)
    parts = [frontier(n, 200, b) + b * n for b in range(copies)]
    cols = torch.cat(parts)
    t = torch.randint(0, 1000, (cols.numel(),), generator=torch.Generator().manual_seed(5))
    kw = {"seed": torch.arange(cols.numel()) % 40, "time": t, "edge_time": edge_time}
    want = torch_code(monkeypatch, T.temporal_sample, A, cols, 6, replace, key, **kw)
    native_only(monkeypatch)
    assert_same_csc(T.temporal_sample(A, cols, 6, replace, key, **kw), want)


def test_what_it_does_not_take_runs_torch(graph, monkeypatch):
    """Weighted draws and ``k = -1`` (every allowed edge) stay in the torch code."""
    A, _ = graph
    cols = frontier(A.num_nodes, 100, 0)
    calls = []
    real = nodewise_native.ranged_sample
    monkeypatch.setattr(
        nodewise_native, "ranged_sample", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    T.temporal_sample(A, cols, 3, False, KEY, probs=torch.rand(A.nnz, dtype=torch.float64))
    T.temporal_sample(A, cols, -1, False, KEY)
    assert not calls
    T.temporal_sample(A, cols, 3, False, KEY)
    assert calls == [1]


def test_compiled_disjoint_sampler_equals_torch(monkeypatch):
    A = gs.datasets.undirected_rmat(5000, 50000, seed=2)
    seeds = torch.randperm(A.num_nodes, generator=torch.Generator().manual_seed(0))[:256]

    def sample():
        gs.manual_seed(3)
        return gs.compile(disjoint_sample)(A, seeds, num_neighbors=(10, 5))

    want = torch_code(monkeypatch, sample)
    monkeypatch.setattr(select, "_uniform_without", None)  # the torch draws would fail
    d = difference(sample(), want, "disjoint [10, 5]")
    assert d is None, d


@pytest.mark.parametrize("dtype", [torch.int64, torch.float64])
def test_binary_search_equals_torch(dtype, monkeypatch):
    """``nodewise_native.after`` (the allowed edges' end in each column's time order) is
    ``temporal._after``'s vectorised search, on ties, empty ranges and, in floating point,
    infinities and NaN."""
    g = torch.Generator().manual_seed(6)
    deg = torch.randint(0, 40, (300,), generator=g)
    deg[:5] = 0
    ptr = torch.cat([torch.zeros(1, dtype=torch.int64), deg.cumsum(0)])
    raw = torch.randint(0, 20, (int(ptr[-1]),), generator=g).to(dtype)
    if dtype == torch.float64:
        raw[::17] = float("inf")
        raw[::23] = -float("inf")
    col = torch.repeat_interleave(torch.arange(deg.numel()), deg)
    order = torch.argsort(raw, stable=True)  # then by column: each column's times ascending
    time = raw[order[torch.argsort(col[order], stable=True)]]
    t = torch.randint(-2, 22, (deg.numel(),), generator=g).to(dtype)
    if dtype == torch.float64:
        t[::11] = float("nan")
        t[::13] = float("inf")
    start, end = ptr[:-1].contiguous(), ptr[1:].contiguous()
    steps = int(deg.max()).bit_length()
    got = nodewise_native.after(time, start, end, t)
    want = torch_code(monkeypatch, T._after, time, start, end, t, steps)
    assert got is not None and torch.equal(got, want)
