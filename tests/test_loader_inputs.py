"""``gs.DataLoader``'s inputs (issue 32, items 4 and 5): boolean masks as seeds, an empty seed set,
every public argument typed as its docstring says, sparse feature tables, cache statistics
only where a cache exists, and the feature store's check of a caller's ``n_id``."""

import functools

import numpy as np
import pytest
import torch
from helpers import example

import gsample as gs
from gsample.loader.features import SLOT_BYTES, FeatureStore, csr_rows

_GPU = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]

BAD_IDS = [2000, 2001, -1, -(2**40), 2**31, 2**32 + 1, 2**40, 2**62, 2**63 - 1]  # N = 2000


def sage(A, seeds):
    return A[:, seeds].individual_sample(4)


def star(*args):
    A, seeds = args
    return A[:, seeds].individual_sample(4)


def keywords(A, seeds, **options):
    return A[:, seeds].individual_sample(4)


def graphsage():
    return functools.partial(example("graphsage").graphsage, fanouts=(4, 3))


# ----------------------------------------------------------------------------- seeds
def test_a_mask_samples_what_its_ids_sample(small_graph):
    mask = torch.zeros(2000, dtype=torch.bool)
    mask[::9] = True
    ids = mask.nonzero().view(-1)
    for shuffle in (False, True):
        a = list(gs.DataLoader(small_graph, sage, mask, 50, shuffle=shuffle, seed=4))
        b = list(gs.DataLoader(small_graph, sage, ids, 50, shuffle=shuffle, seed=4))
        assert len(a) == len(b) == 5
        for x, y in zip(a, b, strict=True):
            assert torch.equal(x.seeds, y.seeds) and x.index == y.index
            assert torch.equal(x.out.edges()[2], y.out.edges()[2])
    # a NumPy mask and a list of bools mean the same
    for other in (mask.numpy(), mask.tolist()):
        loader = gs.DataLoader(small_graph, sage, other, 50, shuffle=False, seed=4)
        assert torch.equal(torch.cat([b.seeds for b in loader]), ids)


@pytest.mark.parametrize(
    "seeds, message",
    [
        (
            torch.ones(1999, dtype=torch.bool),
            r"seeds: a boolean mask needs one entry per graph "
            r"node, shape \(2000,\); got \(1999,\)",
        ),
        (torch.ones(2000, 1, dtype=torch.bool), r"got \(2000, 1\)"),
        (torch.ones(2001, dtype=torch.bool), r"got \(2001,\)"),
    ],
)
def test_a_mask_of_another_shape_is_refused(small_graph, seeds, message):
    with pytest.raises(ValueError, match=message):
        gs.DataLoader(small_graph, sage, seeds, 10)


@pytest.mark.parametrize(
    "seeds", [torch.tensor([], dtype=torch.long), [], torch.zeros(2000, dtype=torch.bool)]
)
def test_no_seeds_is_bad_input(small_graph, seeds):
    with pytest.raises(
        ValueError,
        match=r"^seeds: no seeds .* an epoch would have no "
        "mini-batch",
    ):
        gs.DataLoader(small_graph, sage, seeds, 10)


# ----------------------------------------------------------------------------- super-batching
@pytest.mark.parametrize(
    "fn, stars", [(star, r"\*args"), (functools.partial(keywords, k=1), r"\*\*options")]
)
def test_a_super_batched_sampler_with_packed_parameters_is_refused(small_graph, fn, stars):
    with pytest.raises(
        TypeError,
        match=rf"^sampler_fn: super_batch needs a sampler whose "
        rf"parameters are all named .* takes {stars}",
    ):
        gs.DataLoader(small_graph, fn, torch.arange(40), 10, super_batch=2)
    # without super-batching it is an ordinary callable
    assert len(list(gs.DataLoader(small_graph, fn, torch.arange(40), 10, seed=0))) == 4


# ----------------------------------------------------------------------------- the arguments
CASES = [
    ({"batch_size": 0}, ValueError, "batch_size: must be >= 1, got 0"),
    ({"batch_size": -3}, ValueError, "batch_size: must be >= 1, got -3"),
    ({"batch_size": True}, TypeError, "batch_size: must be an int, got bool"),
    ({"batch_size": 2.5}, TypeError, "batch_size: must be an int, got float"),
    ({"batch_size": "8"}, TypeError, "batch_size: must be an int, got str"),
    ({"shuffle": "yes"}, TypeError, "shuffle: must be True or False"),
    ({"drop_last": 1}, TypeError, "drop_last: must be True or False"),
    ({"progress": None}, TypeError, "progress: must be True or False"),
    ({"seed": 1.5}, TypeError, "seed: must be an int or None, got float"),
    ({"seed": True}, TypeError, "seed: must be an int or None, got bool"),
    ({"super_batch": 0}, ValueError, r"super_batch: must be >= 1 \(or 'auto'\), got 0"),
    ({"super_batch": "fast"}, TypeError, "super_batch: must be a positive int or 'auto'"),
    ({"super_batch": 2.0}, TypeError, "super_batch: must be a positive int or 'auto'"),
    ({"super_batch": True}, TypeError, "super_batch: must be a positive int or 'auto'"),
    ({"memory_budget": 100}, ValueError, "memory_budget: only used with super_batch='auto'"),
    ({"super_batch": "auto", "memory_budget": 0}, ValueError, "memory_budget: must be >= 1"),
    (
        {"super_batch": "auto", "memory_budget": 1.5},
        TypeError,
        "memory_budget: must be a positive int",
    ),
    ({"fixed_state": 1}, TypeError, "fixed_state: must be True or False"),
    (
        {"features": torch.randn(2000, 2), "feature_cache": True},
        TypeError,
        r"feature_cache: expected a byte count \(an int >= 0\), got True",
    ),
    ({"features": torch.randn(2000, 2), "feature_cache": 2.5}, TypeError, "feature_cache:"),
    (
        {"features": torch.randn(2000, 2), "feature_cache": -1},
        ValueError,
        "feature_cache: expected a byte count >= 0",
    ),
    ({"feature_cache": 64}, ValueError, "feature_cache: caches rows of features; none"),
    ({"pipeline": None}, TypeError, 'pipeline: must be True, False, "stream" or "auto"'),
    ({"distributed": 1}, TypeError, "distributed: must be True or False"),
    ({"seeds_are_nodes": "no"}, TypeError, "seeds_are_nodes: must be True or False"),
    (
        {"features": torch.randn(2000, 4).to_sparse(1)},
        TypeError,
        r"features: a sparse COO table with dense dimensions \(hybrid",
    ),
    (
        {"features": torch.randn(2000, 2).to_mkldnn()},
        TypeError,
        "features: tensors of layout torch._mkldnn are not supported",
    ),
    (
        {"features": torch.randn(2000, 2, dtype=torch.complex64)},
        TypeError,
        "features: expected a floating-point dtype",
    ),
    ({"seeds": torch.arange(3.0)}, TypeError, "seeds: node ids must be an integer tensor"),
    ({"seeds": None}, TypeError, "seeds: expected a tensor"),
    ({"seeds": torch.tensor([2**40])}, IndexError, "seeds: node id 1099511627776 is out of range"),
]


@pytest.mark.parametrize(
    "kwargs, error, message", CASES, ids=[f"{i}-{'-'.join(c[0])}" for i, c in enumerate(CASES)]
)
def test_bad_arguments_name_themselves(small_graph, kwargs, error, message):
    kwargs = {"seeds": torch.arange(40), "batch_size": 10, **kwargs}
    with pytest.raises(error, match=message):
        gs.DataLoader(small_graph, sage, **kwargs)


def test_numpy_integers_are_ints(small_graph):
    loader = gs.DataLoader(
        small_graph, sage, torch.arange(40), np.int64(10), seed=np.int64(3), super_batch=np.int32(2)
    )
    ref = gs.DataLoader(small_graph, sage, torch.arange(40), 10, seed=3, super_batch=2)
    assert loader.batch_size == 10 and loader.super_batch == 2 and type(loader.seed) is int
    for a, b in zip(loader, ref, strict=True):
        assert torch.equal(a.out.edges()[2], b.out.edges()[2])


# ----------------------------------------------------------------------------- sparse tables
def sparse_table(n=2000, F=7, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, F, generator=g)
    X[torch.rand(n, F, generator=g) < 0.7] = 0  # most entries zero, some rows empty
    return X


@pytest.mark.parametrize("layout", ["coo", "csr", "csc", "bsr"])
def test_sparse_features_give_dense_rows(small_graph, layout):
    X = sparse_table()
    table = {
        "coo": X.to_sparse,
        "csr": X.to_sparse_csr,
        "csc": X.to_sparse_csc,
        "bsr": lambda: X.to_sparse_bsr((1, 1)),
    }[layout]()
    y = torch.arange(2000) % 5
    loader = gs.DataLoader(
        small_graph,
        graphsage(),
        torch.arange(0, 2000, 13),
        32,
        seed=1,
        features=table,
        labels=y.to_sparse(),
    )
    assert loader.feature_store.mode == "sparse"
    n = 0
    for batch in loader:
        assert batch.x.layout == torch.strided and batch.x.dtype == X.dtype
        assert torch.equal(batch.x, X[batch.n_id]) and torch.equal(batch.y, y[batch.n_id])
        n += 1
    assert n == len(loader)


def test_csr_rows_is_indexing_the_dense_table():
    X = sparse_table(50, 9, seed=3)
    ids = torch.tensor([3, 3, 0, 49, 17, 3])
    for dtype in (torch.float32, torch.float64, torch.int32):
        got = csr_rows(X.to(dtype).to_sparse_csr(), ids)
        assert got.dtype == dtype and torch.equal(got, X.to(dtype)[ids])
    empty = csr_rows(X.to_sparse_csr(), torch.tensor([], dtype=torch.long))
    assert empty.shape == (0, 9)


# ----------------------------------------------------------------------------- cache statistics
def test_no_cache_on_a_cpu_graph(small_graph):
    """A CPU graph reads rows in place: no cache is made, none is reported."""
    X = torch.randn(2000, 4)
    loader = gs.DataLoader(
        small_graph,
        graphsage(),
        torch.arange(0, 2000, 11),
        64,
        seed=0,
        features=X,
        feature_cache=64 << 20,
    )
    for batch in loader:
        assert torch.equal(batch.x, X[batch.n_id])
    store = loader.feature_store
    assert store.mode == "device" and store.cache is None
    assert store.hit_rate is None and store.cached_rows == 0 and store.cache_bytes == 0
    assert store.lookups > 0


def hot_nodes(A, rows):
    degree = A.csc.degrees()
    return set(sorted(range(A.num_nodes), key=lambda v: (-int(degree[v]), v))[:rows])


def test_the_cache_logic_runs_on_the_cpu_when_asked(small_graph):
    """``always_cache``: the cache path on a CPU graph (it only copies there), for its logic:
    it holds the highest in-degree rows within the budget, and its hit rate is the share of
    looked-up rows among them."""
    A, F, rows = small_graph, 5, 150
    X = torch.randn(2000, F)
    budget = SLOT_BYTES * 2000 + rows * F * 4 + 19  # 19: not a whole row
    store = FeatureStore(X, A, cache_bytes=budget, always_cache=True)
    assert store.cached_rows == rows and store.cache_bytes <= budget
    assert store.hit_rate == 0.0  # a cache, no lookup yet
    hot, looked, hits = hot_nodes(A, rows), 0, 0
    for batch in gs.DataLoader(A, graphsage(), torch.arange(0, 2000, 3), 128, seed=4):
        n_id = batch.out[-1].all_nodes()
        assert torch.equal(store(n_id), X[n_id])
        looked += n_id.numel()
        hits += sum(int(v) in hot for v in n_id)
    assert store.lookups == looked and store.hits == hits
    assert store.hit_rate == pytest.approx(hits / looked) and 0 < store.hit_rate < 1
    tiny = FeatureStore(X, A, cache_bytes=SLOT_BYTES * 2000 - 1, always_cache=True)
    assert tiny.cached_rows == 0
    assert torch.equal(tiny(torch.tensor([3, 1, 3])), X[[3, 1, 3]]) and tiny.hit_rate == 0.0


@pytest.mark.parametrize("where", ["gpu table", "cpu table", "sparse cpu table"])
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_cache_statistics_on_a_gpu_graph(small_graph, where):
    A = small_graph.to("cuda")
    X = torch.randn(2000, 4)
    table = {"gpu table": X.cuda(), "cpu table": X, "sparse cpu table": X.to_sparse()}[where]
    if where == "sparse cpu table":
        with pytest.raises(ValueError, match="feature_cache: not supported with a sparse"):
            gs.DataLoader(
                A,
                graphsage(),
                torch.arange(64, device="cuda"),
                32,
                features=table,
                feature_cache=1 << 20,
            )
        return
    loader = gs.DataLoader(
        A,
        graphsage(),
        torch.arange(0, 2000, 7, device="cuda"),
        64,
        seed=0,
        features=table,
        feature_cache=SLOT_BYTES * 2000 + 100 * 16,
    )
    for batch in loader:
        assert torch.equal(batch.x.cpu(), X[batch.n_id.cpu()])
    store = loader.feature_store
    if where == "gpu table":  # rows read in place: no cache
        assert store.hit_rate is None and store.cache is None
    else:
        assert store.cached_rows == 100 and 0 < store.hit_rate < 1


# ----------------------------------------------------------------------------- n_id
@pytest.mark.parametrize("bad", BAD_IDS)
def test_a_callers_n_id_is_checked(small_graph, bad):
    X = torch.randn(2000, 3)
    for store in (
        FeatureStore(X, small_graph),
        FeatureStore(X, small_graph, cache_bytes=SLOT_BYTES * 2000 + 480, always_cache=True),
        FeatureStore(X.to_sparse(), small_graph),
        FeatureStore(torch.arange(2000), small_graph, "labels"),
    ):
        with pytest.raises(
            IndexError,
            match=r"^n_id: node id -?\d+ is (negative|out of range "
            r"for a graph of 2000 nodes)",
        ):
            store(torch.tensor([5, bad, 7]))
        ok = torch.tensor([5, 1999, 0])
        assert torch.equal(
            store(ok),
            store.table[ok]
            if store.mode == "device"
            else X[ok]
            if store.table.dim() == 2
            else torch.arange(2000)[ok],
        )


def test_n_id_of_another_type_is_refused(small_graph):
    store = FeatureStore(torch.randn(2000, 3), small_graph)
    with pytest.raises(TypeError, match="n_id: node ids must be an integer tensor"):
        store(torch.tensor([1.0]))
    with pytest.raises(ValueError, match="n_id: node ids must be 1-D"):
        store(torch.zeros(2, 2, dtype=torch.long))
    assert store([4, 2]).shape == (2, 3)  # a list: ids


@pytest.mark.parametrize("mode", ["device", "uva"])
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_a_callers_n_id_is_checked_on_the_gpu(small_graph, mode):
    A = small_graph.to("cuda")
    X = torch.randn(2000, 8)
    store = FeatureStore(X.cuda() if mode == "device" else X, A)
    good = torch.tensor([5, 1999, 0], device="cuda")
    want = store(good).cpu()
    for bad in BAD_IDS:
        with pytest.raises(IndexError, match=r"^n_id: node id"):
            store(torch.tensor([5, bad, 7], device="cuda"))
        assert torch.equal(store(good).cpu(), want)  # the next call is exact
    assert torch.equal(want, X[good.cpu()])


def test_an_induced_samplers_nodes_are_checked_before_rows_are_read(small_graph):
    def bad_nodes(A, seeds):
        nodes = torch.cat([seeds, seeds + 100])
        return A[nodes, nodes], torch.cat([nodes, torch.tensor([2**40])])

    loader = gs.DataLoader(
        small_graph, bad_nodes, torch.arange(10), 5, features=torch.randn(2000, 3)
    )
    with pytest.raises(
        IndexError,
        match=r"batch\.out \(the induced subgraph's nodes\): node "
        "id 1099511627776 is out of range",
    ):
        next(iter(loader))
