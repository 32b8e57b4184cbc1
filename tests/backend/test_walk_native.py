"""The native CPU random walk (``gsample/backend/torch/walk_native.py``: ``kernels/walk.cu``
compiled as C++, and its CPU driver) against the torch code (``walk.reference_walk``), bit for
bit: every variant, op keys and super-batch keys, the driver with one and several walkers in
flight and the kernel itself, one thread and several; and the cases that must run the torch
code instead (``GSAMPLE_NATIVE_CPU=0``, inputs the kernel does not take)."""

import os
import random

import pytest
import torch
from helpers import in_forked_child

import gsample as gs
from gsample.backend.torch import walk, walk_native
from gsample.backend.torch.alias import alias_table
from gsample.base.random import MASK64, BatchKeys, combine, key_prefix, mix64, op_key

pytestmark = pytest.mark.skipif(
    not walk_native.available(), reason="no native CPU walk (no C++ compiler, or disabled)"
)

VARIANTS = {
    "deepwalk": {},
    "ppr": {"stop_prob": 0.15},
    "restart-jump": {"restart_prob": 0.2, "jump_prob": 0.1},
    "weighted": {"alias": True},
    "node2vec": {"p": 2.0, "q": 0.5},
    "node2vec-odd": {"p": 3.0, "q": 0.7},
    "node2vec-weighted": {"p": 0.25, "q": 4.0, "alias": True},
    "everything": {
        "p": 0.3,
        "q": 3.0,
        "alias": True,
        "stop_prob": 0.01,
        "restart_prob": 0.05,
        "jump_prob": 0.05,
    },
}


@pytest.fixture(scope="module")
def graph():
    return gs.datasets.rmat(5000, 60000, seed=3, weighted=True).csc


def options(A, name):
    kw = dict(VARIANTS[name])
    if kw.pop("alias", False):
        kw["alias"] = alias_table(A, A.values)
    return kw


#: (run the kernel itself, threads, walkers in flight per thread)
CONFIGS = [(False, 1, 8), (False, 3, 8), (False, 2, 1), (False, 1, 32), (True, 1, 1), (True, 3, 1)]


@pytest.fixture(
    params=CONFIGS, ids=[f"{'kernel' if k else 'driver'}-{t}t-{g}g" for k, t, g in CONFIGS]
)
def threads(request, monkeypatch):
    """The native walk's configurations: the driver (walkers in flight) and the kernel."""
    kernel, threads, group = request.param
    monkeypatch.setattr(walk_native, "KERNEL", kernel)
    monkeypatch.setattr(walk_native, "THREADS", threads)
    monkeypatch.setattr(walk_native, "GROUP", group)
    return threads


def native_only(monkeypatch):
    """Make ``walk.random_walk`` fail instead of quietly running the torch code."""

    def refuse(*args, **kwargs):
        raise AssertionError("the torch code ran")

    monkeypatch.setattr(walk, "reference_walk", refuse)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_native_equals_torch(graph, name, threads, monkeypatch):
    kw = options(graph, name)
    seeds = torch.randint(0, graph.num_nodes, (2000,), generator=torch.Generator().manual_seed(1))
    key = op_key(7, 3, 2)
    want = walk.reference_walk(graph, seeds, 30, key, **kw)
    native_only(monkeypatch)
    got = walk.random_walk(graph, seeds, 30, key, **kw)
    assert torch.equal(got, want)
    assert got.dtype == torch.int64 and got.shape == (2000, 31)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_native_super_batch_equals_torch(graph, name, threads, monkeypatch):
    """Three mini-batches of different sizes (one empty) in one call: the torch code's
    super-batched walks, which are the mini-batches' own walks, encoded."""
    n = graph.num_nodes
    kw = options(graph, name)
    g = torch.Generator().manual_seed(4)
    parts = [torch.randint(0, n, (size,), generator=g) for size in (700, 0, 300, 500)]
    enc = torch.cat([s + b * n for b, s in enumerate(parts)])
    keys = BatchKeys.of(7, 3, 5, len(parts), n)
    want = walk.reference_walk(graph, enc, 25, keys, **kw)
    native_only(monkeypatch)
    got = walk.random_walk(graph, enc, 25, keys, **kw)
    assert torch.equal(got, want)
    start = 0
    for b, s in enumerate(parts):
        own = walk.random_walk(graph, s, 25, op_key(7, 3, 5 + b), **kw)
        part = got[start : start + s.numel()]
        assert torch.equal(torch.where(part >= 0, part - b * n, part), own)
        start += s.numel()


def test_edge_cases_equal_torch(graph, threads, monkeypatch):
    key = op_key(1, 2, 3)
    deg = graph.indptr[1:] - graph.indptr[:-1]
    dead = int(torch.nonzero(deg == 0)[0])
    empty = gs.Matrix.from_edge_index(torch.zeros((2, 0), dtype=torch.int64), 6).csc
    cases = [
        (graph, torch.tensor([dead, 0, dead]), 6, {}),
        (graph, torch.tensor([0, 1], dtype=torch.int32), 4, {"p": 2.0}),
        (graph, torch.tensor([0, 1]), 0, {}),
        (graph, torch.tensor([], dtype=torch.int64), 4, {"q": 0.5}),
        (empty, torch.tensor([0, 5]), 3, {}),
        (empty, torch.tensor([0, 5]), 3, {"jump_prob": 0.5, "p": 2.0}),
    ]
    want = [walk.reference_walk(A, s, L, key, **kw) for A, s, L, kw in cases]
    native_only(monkeypatch)
    for (A, s, L, kw), w in zip(cases, want):
        assert torch.equal(walk.random_walk(A, s, L, key, **kw), w)


def test_large_walk_uses_threads_and_equals_torch(graph):
    """The default thread count (a walk big enough for several threads)."""
    seeds = torch.randint(0, graph.num_nodes, (4096,), generator=torch.Generator().manual_seed(2))
    key = op_key(0, 0, 9)
    assert torch.equal(
        walk.random_walk(graph, seeds, 40, key, p=2.0, q=0.5),
        walk.reference_walk(graph, seeds, 40, key, p=2.0, q=0.5),
    )


def test_disabled_runs_torch(graph, monkeypatch):
    calls = []
    monkeypatch.setattr(walk_native, "random_walk", lambda *a, **k: calls.append(1))
    seeds = torch.arange(50)
    monkeypatch.setenv("GSAMPLE_NATIVE_CPU", "0")
    assert not walk_native.enabled()
    a = walk.random_walk(graph, seeds, 5, op_key(0, 0, 0))
    assert calls == []
    monkeypatch.setenv("GSAMPLE_NATIVE_CPU", "1")
    assert walk_native.enabled()
    b = walk.random_walk(graph, seeds, 5, op_key(0, 0, 0))  # the stub, then the torch code
    assert calls == [1] and torch.equal(a, b)


def test_inputs_the_kernel_does_not_take_run_torch(graph, monkeypatch):
    """Out-of-range seeds, super-batch ids out of batch order, keys not of consecutive
    batches: the torch code runs (and gives its result or its error)."""
    n = graph.num_nodes
    monkeypatch.setattr(
        walk_native, "random_walk", lambda *a, **k: pytest.fail("the native walk ran")
    )
    with pytest.raises(IndexError):
        walk.random_walk(graph, torch.tensor([0, n]), 3, op_key(0, 0, 0))
    keys = BatchKeys.of(0, 0, 0, 2, n)
    with pytest.raises(RuntimeError, match="not grouped by mini-batch"):
        walk.random_walk(graph, torch.tensor([n + 1, 2]), 3, keys)
    odd = BatchKeys((op_key(0, 0, 0), op_key(0, 0, 7)), n)  # not consecutive
    seeds = torch.tensor([1, 2, n + 3])
    walk.random_walk(graph, seeds, 3, odd)  # the torch code (else the stub fails)


def test_device_key_recovers_the_prefix():
    rng = random.Random(0)
    for _ in range(200):
        prefix = key_prefix(rng.getrandbits(64), rng.randrange(100))
        first = rng.randrange(1 << 20)
        copies = rng.randrange(1, 9)
        keys = tuple(combine(prefix, first + b) for b in range(copies))
        p = walk_native.device_key(keys)
        assert p is not None and all(combine(p, b) == k for b, k in enumerate(keys))
    z = rng.getrandbits(64)
    assert walk_native._unmix64(mix64(z)) == z and mix64(walk_native._unmix64(z)) == z
    assert walk_native.device_key((op_key(0, 0, 0), op_key(0, 0, 2))) is None
    assert walk_native.device_key((MASK64,)) is not None  # any single key


def test_rejection_bound_raises(threads):
    """node2vec's rejection past 2**20 attempts raises, as the torch code does."""
    A = gs.Matrix.from_edge_index(torch.tensor([[1, 2, 0], [0, 1, 2]]), 3).csc
    # a directed cycle: 0 -> 1 (its one in-neighbour), then from 1 the one candidate 2, not
    # a return and no edge 2 -> 0: weight 1/q = 1 of amax = 1/p = 1e12 (never accepted)
    with pytest.raises(RuntimeError, match="ran past its bound"):
        walk.random_walk(A, torch.tensor([0]), 3, op_key(0, 0, 0), p=1e-12, q=1.0)


def _walk_in_child(A, seeds, conn):
    walk_native.THREADS = 2
    conn.send(walk.random_walk(A, seeds, 20, op_key(0, 0, 1)).numpy().tobytes())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_forked_child_walks_with_threads(graph, monkeypatch):
    """A child forked after the parent ran OpenMP teams (torch's, the walk's) walks on
    std::threads (libgomp's pool does not survive a fork): no hang, the same walks."""
    monkeypatch.setattr(walk_native, "THREADS", 2)
    torch.rand(1 << 20).sum()  # an OpenMP team of torch's
    seeds = torch.randint(0, graph.num_nodes, (3000,), generator=torch.Generator().manual_seed(6))
    want = walk.random_walk(graph, seeds, 20, op_key(0, 0, 1))
    assert in_forked_child(_walk_in_child, graph, seeds) == want.numpy().tobytes()


def test_a_library_that_does_not_build_warns_and_runs_in_torch(tmp_path, monkeypatch):
    """``compile_library``: a failed build is None and a warning naming what runs in torch
    instead; nothing is left in the cache."""
    if walk_native.compiler() is None:
        pytest.skip("no C++ compiler")
    monkeypatch.setenv("GSAMPLE_CACHE", str(tmp_path))
    with pytest.warns(RuntimeWarning, match="did not build; the test's draws run in torch"):
        assert walk_native.compile_library("broken", "not C++ {", [], "the test's draws") is None
    assert not list((tmp_path / "cpu").glob("*.so"))
