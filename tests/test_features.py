"""``gs.DataLoader(..., features=X, labels=y)`` (``gsample/features.py``): which nodes a batch
gathers (``n_id``), the rows it gets (device, pinned host memory read by the GPU, a cache of
the highest in-degree nodes and its hit rate) and the checks of the arguments."""

import dataclasses
import functools

import pytest
import torch
from helpers import assert_same, example, host_syncs

import gsample as gs
from gsample.formats.derived import COLUMNS, recall
from gsample.ir import Op
from gsample.loader.dataloader import gathering
from gsample.loader.features import (
    SLOT_BYTES,
    FeatureStore,
    _chained,
    _hop_by_hop,
    _program_chained,
    batch_nodes,
)

_GPU = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]


def samplers():
    return {
        "graphsage": functools.partial(example("graphsage").graphsage, fanouts=(5, 5)),
        "graphsage_pyg": functools.partial(example("graphsage_pyg").graphsage_pyg, fanouts=(5, 5)),
        "ladies": functools.partial(example("ladies").ladies, layers=(64, 64)),
        "shadow": functools.partial(example("shadow").shadow, fanouts=(4, 4)),
    }


def graph_for(name, A):
    return example("ladies").normalize(A) if name == "ladies" else A


def tables(A, F=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(A.num_nodes, F, generator=g), torch.randint(
        0, 7, (A.num_nodes,), generator=g
    )


# ----------------------------------------------------------------------------- n_id
@pytest.mark.parametrize("name", ["graphsage", "ladies"])
def test_dgl_style_n_id_is_the_last_frontier(small_graph, name):
    """DGL-style samplers: n_id == blocks[-1].all_nodes(), so each block's columns are a
    prefix of n_id and its rows are in n_id."""
    A = graph_for(name, small_graph)
    seeds = torch.arange(0, 2000, 37)
    gs.manual_seed(3)
    blocks = samplers()[name](A, seeds)
    n_id = batch_nodes(blocks, seeds)
    assert _program_chained(blocks, seeds) is None  # eager blocks say nothing: compared
    assert _chained(blocks, seeds) is not None  # the shortcut was taken
    assert torch.equal(n_id, _hop_by_hop(blocks, seeds))  # and gives the definition's
    assert torch.equal(n_id, blocks[-1].all_nodes())
    assert n_id.unique().numel() == n_id.numel()
    for m in blocks:
        cols = m.csc.global_cols()
        assert torch.equal(n_id[: cols.numel()], cols)
        assert bool(torch.isin(m.row(), n_id).all())


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=_GPU)])
def test_compiled_blocks_keep_their_frontier(small_graph, device):
    """A compiled sampler keeps each ``all_nodes`` it computed with its block: the block
    returns that very tensor (the next block's columns), equal to a fresh computation, and
    the loader's n_id takes the shortcut without comparing (equal to the definition)."""
    A = small_graph.to(device)
    seeds = torch.arange(0, 2000, 37, device=device)
    fn = gs.compile(samplers()["graphsage"].func)
    blocks = fn(A, seeds, fanouts=(5, 5))
    first = recall(blocks[0].csc, Op.ALL_NODES)
    assert first is not None and first is blocks[0].all_nodes()
    assert torch.equal(first, blocks[1].csc.global_cols())
    if device == "cpu":  # the very tensor the program sliced the next hop with
        assert first.data_ptr() == blocks[1].csc.global_cols().data_ptr()
    fresh = dataclasses.replace(blocks[0].csc)  # the same block, another object: computed
    assert recall(fresh, Op.ALL_NODES) is None
    assert torch.equal(first, gs.Matrix(fresh).all_nodes())
    assert recall(blocks[1].csc, Op.ALL_NODES) is None  # the program never needed it
    n_id = batch_nodes(blocks, seeds)
    assert torch.equal(n_id, _hop_by_hop(blocks, seeds))


def compiled(name):
    """``samplers()[name]`` with its function ``gs.compile``'d."""
    s = samplers()[name]
    return functools.partial(gs.compile(s.func), **s.keywords)


@pytest.mark.parametrize("super_batch", [None, 2, "auto"])
@pytest.mark.parametrize("name", ["graphsage", "ladies"])
def test_a_gathering_loader_takes_n_id_from_the_program(small_graph, device, name, super_batch):
    """With tables, the loader samples with ``gathering(sampler)``: its program computes the
    last block's all_nodes and keeps it with the block, and keeps with each block the object
    its columns were sliced with (the seeds, then the all_nodes kept with the block before).
    n_id is then the program's tensor, taken without a comparison; the blocks are those of a
    loader without tables (whose program does not compute it), n_id the definition's, x and
    y the tables' rows of it. A super-batch's output keeps the same with each batch's blocks
    (the loader binds each batch's seeds): no comparison of ids there either."""
    A = graph_for(name, small_graph).to(device)
    X, y = (t.to(device) for t in tables(A))
    seeds = torch.arange(0, 2000, 7, device=device)
    sampler = compiled(name)
    plain = list(gs.DataLoader(A, sampler, seeds, 64, seed=5))
    loader = gs.DataLoader(
        A, sampler, seeds, 64, seed=5, features=X, labels=y, super_batch=super_batch
    )
    batches = list(loader)
    assert len(batches) == len(plain) == 5
    for p, b in zip(plain, batches):
        assert_same(p.out, b.out, f"{name} batch {b.index}")
        assert recall(p.out[-1].csc, Op.ALL_NODES) is None  # no tables: not computed
        assert recall(b.out[-1].csc, Op.ALL_NODES) is b.n_id  # the program's own
        assert recall(b.out[0].csc, COLUMNS) is b.seeds
        assert recall(b.out[1].csc, COLUMNS) is recall(b.out[0].csc, Op.ALL_NODES)
        assert _program_chained(b.out, b.seeds) is b.n_id
        assert torch.equal(b.n_id, _hop_by_hop(b.out, b.seeds))
        assert torch.equal(b.n_id, batch_nodes(p.out, p.seeds))
        assert torch.equal(b.x, X[b.n_id]) and torch.equal(b.y, y[b.n_id])
        assert torch.equal(recall(b.out[0].csc, Op.ALL_NODES), b.out[1].csc.global_cols())


def test_a_super_batch_run_alone_keeps_its_facts_and_is_compared_for_its_seeds(small_graph):
    """``sampler.super_batched(...).run`` without a loader: each batch's blocks keep their
    all_nodes (the next block's columns, the loader's n_id) and mark their columns as the
    mini-batch's seeds (``SEEDS``), which only the holder of the seeds binds; unbound, the
    chain is compared (and holds), and a wrong seeds tensor is not taken for the right one."""
    from gsample.formats.derived import SEEDS, bind_seeds

    fn = gathering(compiled("graphsage"))
    parts = [torch.arange(0, 640, 10), torch.arange(1, 641, 10), torch.arange(2, 300, 10)]
    sb = fn.func.super_batched((small_graph, parts[0]), fn.keywords, seeds="seeds")
    outs = sb.run(parts, epoch_seed=3, first=0)
    for out, s in zip(outs, parts):
        assert recall(out[0].csc, COLUMNS) is SEEDS
        assert recall(out[1].csc, COLUMNS) is recall(out[0].csc, Op.ALL_NODES)
        n_id = recall(out[1].csc, Op.ALL_NODES)
        assert n_id is not None and torch.equal(n_id, _hop_by_hop(out, s))
        assert _program_chained(out, s) is None and _chained(out, s) is n_id
        assert _chained(out, s.flip(0)) is None  # other seeds: the chain does not hold
    bind_seeds(outs, parts)
    for out, s in zip(outs, parts):
        assert _program_chained(out, s) is recall(out[1].csc, Op.ALL_NODES)
        assert _program_chained(out, s.clone()) is None  # identity, not values


def frontiers(sampler, *args, **kwargs) -> int:
    """The all_nodes steps of the program ``sampler(*args, **kwargs)`` runs."""
    steps = sampler.lowered(*args, **kwargs).steps
    return sum(s.node is not None and s.node.op is Op.ALL_NODES for s in steps)


def test_only_a_loader_gathering_rows_computes_the_last_frontier(small_graph):
    """``gathering`` makes one variant per compiled sampler, which computes one all_nodes
    more than the sampler (the last block's); a loader without tables samples with the
    sampler itself, one with tables with the variant; plain functions are kept."""
    fn = gs.compile(example("graphsage").graphsage)
    sampler = functools.partial(fn, fanouts=(5, 5))
    seeds = torch.arange(0, 2000, 31)
    list(gs.DataLoader(small_graph, sampler, seeds, 32, seed=1))
    variant = gathering(fn)
    assert gathering(fn) is variant and fn.traces == 1 and variant.traces == 0
    gs.DataLoader(small_graph, sampler, seeds, 32, seed=1, labels=torch.arange(2000))
    loader = gs.DataLoader(small_graph, sampler, seeds, 32, seed=1, labels=torch.arange(2000))
    assert loader._sampler.func is variant and loader._sampler.keywords == {"fanouts": (5, 5)}
    list(loader)
    assert fn.traces == 1 and variant.traces == 1

    assert frontiers(fn, small_graph, seeds[:32], fanouts=(5, 5)) == 1
    assert frontiers(variant, small_graph, seeds[:32], fanouts=(5, 5)) == 2
    eager = example("graphsage").graphsage
    assert gathering(eager) is eager and gathering(sampler.func) is variant
    interpreted = gs.compile(eager, runtime=gs.runtime.Options(lowered=False))
    assert gathering(interpreted) is interpreted


def _sage_reading(k: dict):
    """A 2-layer GraphSAGE whose fanout is ``k["fanout"]``, read when it is traced (a global
    the function reads, as a user's module-level setting)."""

    def sage(A, seeds):
        s = A[:, seeds].individual_sample(k["fanout"])
        return [s, A[:, s.all_nodes()].individual_sample(k["fanout"])]

    return sage


def test_clearing_a_samplers_cache_clears_its_gathering_variant(small_graph):
    """The variant lives with its sampler: after ``clear_cache`` (a changed global the
    function reads), a loader with tables samples as one without, not the old program."""
    k = {"fanout": 5}
    fn = gs.compile(_sage_reading(k))
    seeds = torch.arange(0, 2000, 31)
    labels = torch.arange(2000)
    list(gs.DataLoader(small_graph, fn, seeds, 32, seed=1, labels=labels))
    k["fanout"] = 2
    fn.clear_cache()
    plain = list(gs.DataLoader(small_graph, fn, seeds, 32, seed=1))
    tabled = list(gs.DataLoader(small_graph, fn, seeds, 32, seed=1, labels=labels))
    for p, t in zip(plain, tabled, strict=True):
        assert_same(p.out, t.out)
        degrees = t.out[0].csc.indptr.diff()
        assert int(degrees.max()) <= 2


def test_a_gathering_loader_made_before_clear_cache_samples_with_the_new_programs(small_graph):
    """A loader with tables holds its sampler's variant: ``clear_cache`` clears the
    variant's programs too, so that same loader's next epoch traces the function again."""
    k = {"fanout": 5}
    fn = gs.compile(_sage_reading(k))
    seeds = torch.arange(0, 2000, 31)
    tabled = gs.DataLoader(small_graph, fn, seeds, 32, seed=1, labels=torch.arange(2000))
    first = list(tabled)
    assert max(int(b.out[0].csc.indptr.diff().max()) for b in first) > 2
    k["fanout"] = 2
    fn.clear_cache()
    again = list(tabled)  # the same loader: its variant traces again
    assert max(int(b.out[0].csc.indptr.diff().max()) for b in again) <= 2


def brute_force_n_id(blocks, seeds) -> list:
    """The definition, in plain Python: the seeds, then hop by hop each block's columns and
    its rows (in row-space order), each node the first time it appears."""
    seen, order = set(), []
    for v in seeds.tolist():
        if v not in seen:
            seen.add(v)
            order.append(v)
    for block in blocks:
        csc = block.csc
        cols = csc.col_ids.tolist() if csc.col_ids is not None else list(range(csc.num_cols))
        local = sorted(set(csc.rows.tolist()))
        rows = [csc.row_ids[r].item() for r in local] if csc.row_ids is not None else local
        for v in cols + rows:
            if v not in seen:
                seen.add(v)
                order.append(v)
    return order


@pytest.mark.parametrize("name", ["graphsage", "ladies"])
def test_a_gathering_loaders_n_id_is_the_definitions(small_graph, name):
    """Whatever the program keeps, ``n_id`` is the brute-force definition's, batch by batch
    (three hops of GraphSAGE; LADIES' layers)."""
    fn = gs.compile(getattr(example(name), name))
    kw = {"fanouts": (4, 3, 2)} if name == "graphsage" else {"layers": (64, 64)}
    G = example("ladies").normalize(small_graph) if name == "ladies" else small_graph
    sampler = functools.partial(fn, **kw)
    seeds = torch.arange(0, 2000, 17)
    loader = gs.DataLoader(G, sampler, seeds, 32, seed=3, labels=torch.arange(2000))
    for batch in loader:
        assert batch.n_id.tolist() == brute_force_n_id(batch.out, batch.seeds)


def broken(A, seeds):
    """Two hops whose second slices every node of the first hop's all_nodes, in reverse:
    not DGL-style (block 1's columns are not blocks[0].all_nodes())."""
    s = A[:, seeds].individual_sample(5)
    return [s, A[:, s.all_nodes().flip(0)].individual_sample(5)]


@pytest.mark.parametrize("how", ["eager", "compiled"])
def test_a_broken_chain_is_compared_and_refused_by_the_model_loop(small_graph, device, how):
    """Blocks no program vouches for (an eager sampler's, or a compiled one whose frontier
    went through dense code) are compared: a broken chain gives the definition's n_id, and
    the example model loop's prefix check refuses the batch, naming batch.out."""
    pytest.importorskip("torch_geometric")
    A = small_graph.to(device)
    seeds = torch.arange(0, 2000, 13, device=device)
    sampler = broken if how == "eager" else gs.compile(broken)
    if how == "compiled":  # the pass adds nothing: its blocks do not chain
        assert frontiers(gathering(sampler), A, seeds[:16]) == frontiers(sampler, A, seeds[:16])
    loader = gs.DataLoader(A, sampler, seeds, 16, seed=3, labels=torch.arange(2000).to(device))
    block_layers = example("train_common").block_layers
    for batch in loader:
        assert _program_chained(batch.out, batch.seeds) is None
        assert _chained(batch.out, batch.seeds) is None
        assert torch.equal(batch.n_id, _hop_by_hop(batch.out, batch.seeds))
        with pytest.raises(ValueError, match=r"batch\.out: a block's columns are not a prefix"):
            block_layers(batch)
        block_layers(batch, check=False)  # (unchecked: the caller's word)


@pytest.mark.parametrize("super_batch", [None, 2])
@pytest.mark.parametrize("backend", ["torch", "cuda"])
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_a_gathering_loaders_n_id_costs_no_host_sync_on_the_gpu(small_graph, backend, super_batch):
    """On a GPU, n_id of a compiled sampler's batch is found without a launch or a read-back
    (its rows' gather then queues behind the sampling), super-batched too; an eager
    sampler's is compared, in one read-back."""
    A = small_graph.to("cuda")
    seeds = torch.arange(0, 2000, 7, device="cuda")
    fn = functools.partial(
        gs.compile(example("graphsage").graphsage, backend=backend), fanouts=(5, 5)
    )
    loader = gs.DataLoader(
        A, fn, seeds, 64, seed=2, labels=torch.arange(2000, device="cuda"), super_batch=super_batch
    )
    for batch in loader:
        assert host_syncs(lambda b=batch: batch_nodes(b.out, b.seeds)) == []
        assert torch.equal(batch.n_id, _hop_by_hop(batch.out, batch.seeds))
    eager = samplers()["graphsage"](A, seeds[:64])
    assert len(host_syncs(lambda: _chained(eager, seeds[:64]))) >= 1


def test_pyg_style_and_induced_n_id_match_to_pyg(small_graph):
    """For PyG-style blocks and induced subgraphs, n_id is to_pyg()'s node order."""
    pytest.importorskip("torch_geometric")
    seeds = torch.arange(5, 2000, 41)
    for name in ("graphsage_pyg", "shadow"):
        loader = gs.DataLoader(
            small_graph, samplers()[name], seeds, batch_size=16, seed=2, labels=torch.arange(2000)
        )
        for batch in loader:
            assert torch.equal(batch.n_id, batch.to_pyg().n_id), name
            if name == "graphsage_pyg":  # not chained: the definition
                assert _chained(batch.out, batch.seeds) is None
            assert torch.equal(batch.n_id[: batch.seeds.numel()], batch.seeds)


def test_n_id_refuses_other_outputs():
    with pytest.raises(TypeError, match=r"features / labels: .* returned Tensor"):
        batch_nodes(torch.arange(3), torch.arange(2))


# ----------------------------------------------------------------------------- rows
@pytest.mark.parametrize("name", ["graphsage", "ladies", "shadow"])
def test_rows_are_the_tables_rows_of_n_id(small_graph, device, name):
    A = graph_for(name, small_graph).to(device)
    X, y = tables(A)
    loader = gs.DataLoader(
        A,
        samplers()[name],
        torch.arange(0, 2000, 7, device=device),
        64,
        seed=0,
        features=X.to(device),
        labels=y.to(device),
    )
    n = 0
    for batch in loader:
        assert batch.x.device == batch.y.device == batch.n_id.device == A.device
        assert torch.equal(batch.x.cpu(), X[batch.n_id.cpu()])
        assert torch.equal(batch.y.cpu(), y[batch.n_id.cpu()])
        n += 1
    assert n == len(loader) == 5


def test_without_tables_batches_have_no_rows(small_graph):
    batch = next(iter(gs.DataLoader(small_graph, samplers()["graphsage"], torch.arange(8), 8)))
    assert batch.n_id is None and batch.x is None and batch.y is None


def test_to_pyg_reads_the_gathered_rows(small_graph):
    """Batch.to_pyg() defaults x / y to the loader's rows (looked up through n_id)."""
    pytest.importorskip("torch_geometric")
    X, y = tables(small_graph)
    for name in ("graphsage", "ladies"):
        A = graph_for(name, small_graph)
        for batch in gs.DataLoader(
            A, samplers()[name], torch.arange(0, 2000, 9), 100, seed=1, features=X, labels=y
        ):
            data = batch.to_pyg()
            assert torch.equal(data.x, X[data.n_id]) and torch.equal(data.y, y[data.n_id])


def hot_nodes(A, rows):
    """The ``rows`` highest in-degree nodes, smaller ids first among equals."""
    degree = A.csc.degrees()
    order = sorted(range(A.num_nodes), key=lambda v: (-int(degree[v]), v))
    return set(order[:rows])


def test_cache_holds_the_hottest_rows_and_counts_hits(small_graph):
    """On a CPU graph the loader makes no cache (``hit_rate`` None: rows are read in place);
    a store made with ``always_cache`` runs the cache path there (it only copies), for its
    logic: the rows equal the table's, the cache holds the highest in-degree nodes within the
    budget, and the hit rate is the share of looked-up rows that are among them."""
    A = small_graph
    X, _ = tables(A, F=5)
    rows = 150
    budget = SLOT_BYTES * A.num_nodes + rows * 5 * 4 + 19  # 19 bytes: not a whole row
    loader = gs.DataLoader(
        A,
        samplers()["graphsage"],
        torch.arange(0, 2000, 3),
        128,
        seed=4,
        features=X,
        feature_cache=budget,
    )
    assert loader.feature_store.hit_rate is None and loader.feature_store.cached_rows == 0
    store = loader.feature_store = FeatureStore(X, A, cache_bytes=budget, always_cache=True)
    assert store.cached_rows == rows and store.cache_bytes <= budget
    hot = hot_nodes(A, rows)
    looked, hits = 0, 0
    for batch in loader:
        assert torch.equal(batch.x, X[batch.n_id])
        looked += batch.n_id.numel()
        hits += sum(int(v) in hot for v in batch.n_id)
    assert store.lookups == looked and store.hits == hits
    assert store.hit_rate == pytest.approx(hits / looked)
    assert 0 < store.hit_rate < 1
    # the hottest nodes are reached more often than the others: the hit rate beats the
    # cached share of the nodes
    assert store.hit_rate > 2 * rows / A.num_nodes


def test_a_budget_below_the_slot_map_caches_nothing(small_graph):
    X, _ = tables(small_graph)
    store = FeatureStore(
        X, small_graph, cache_bytes=SLOT_BYTES * small_graph.num_nodes - 1, always_cache=True
    )
    assert store.cached_rows == 0
    assert torch.equal(store(torch.tensor([3, 1, 3])), X[[3, 1, 3]])
    assert store.hit_rate == 0.0


@pytest.mark.parametrize(
    "dtype, F", [(torch.float32, 64), (torch.float16, 3), (torch.bfloat16, 1), (torch.float64, 5)]
)
@pytest.mark.parametrize("cache", [False, True])
@pytest.mark.parametrize("pinned", [False, True])
@pytest.mark.parametrize("kernels", [False, True])
def test_host_rows_read_by_the_gpu(small_graph, dtype, F, cache, pinned, kernels):
    """A CPU table for a GPU graph: pinned and read through UVA (every word size: rows of
    256, 6, 2 and 40 bytes), with and without the cache; equal to the table's rows."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    A = small_graph.to("cuda")
    X = torch.randn(A.num_nodes, F).to(dtype)
    X = X.pin_memory() if pinned else X
    budget = SLOT_BYTES * A.num_nodes + 300 * F * X.element_size() if cache else 0
    with gs.use_backend("cuda" if kernels else "torch"):
        loader = gs.DataLoader(
            A,
            samplers()["graphsage"],
            torch.arange(0, 2000, 5, device="cuda"),
            100,
            seed=0,
            features=X,
            feature_cache=budget,
        )
        store = loader.feature_store
        assert store.mode == "uva" and store.table.is_pinned()
        if pinned:
            assert store.table.data_ptr() == X.data_ptr()  # no copy
        hot = hot_nodes(small_graph, store.cached_rows)
        hits = 0
        for batch in loader:
            assert batch.x.is_cuda and torch.equal(batch.x.cpu(), X[batch.n_id.cpu()])
            hits += sum(int(v) in hot for v in batch.n_id.cpu())
    assert store.hits == hits and (hits > 0) == cache


test_host_rows_read_by_the_gpu = pytest.mark.cuda(test_host_rows_read_by_the_gpu)


# ----------------------------------------------------------------------------- checks
def test_bad_tables_are_refused_naming_the_argument(small_graph):
    A, n = small_graph, small_graph.num_nodes
    f = samplers()["graphsage"]
    s = torch.arange(8)
    cases = [
        (
            {"features": torch.randn(n)},
            ValueError,
            (
                r"features: expected shape \(N, F\) "
                r"with N = 2000 graph nodes, got \(2000,\)"
            ),
        ),
        ({"features": torch.randn(n + 1, 3)}, ValueError, r"features: .*got \(2001, 3\)"),
        (
            {"features": torch.ones(n, 3, dtype=torch.int64)},
            TypeError,
            "features: expected a floating-point dtype, got torch.int64",
        ),
        ({"features": [[0.0]] * n}, TypeError, "features: expected a torch.Tensor"),
        (
            {"features": torch.randn(n, 3, device="meta")},
            ValueError,
            "features: is on meta but the graph is on cpu",
        ),
        ({"labels": torch.zeros(n, 2, 2)}, ValueError, r"labels: expected shape \(N,\) or"),
        ({"labels": torch.zeros(n - 1)}, ValueError, r"labels: .*got \(1999,\)"),
        ({"labels": torch.zeros(n, dtype=torch.bool)}, TypeError, "labels: expected an integer"),
        ({"feature_cache": 100}, ValueError, "feature_cache: caches rows of features"),
        (
            {"features": torch.randn(n, 3), "feature_cache": -1},
            ValueError,
            "feature_cache: expected a byte count >= 0",
        ),
        ({"pipeline": "yes"}, TypeError, "pipeline"),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            gs.DataLoader(A, f, s, 4, **kwargs)


def test_non_contiguous_features_are_gathered(small_graph):
    X = torch.randn(6, small_graph.num_nodes).T  # (N, 6), not contiguous
    batch = next(
        iter(gs.DataLoader(small_graph, samplers()["graphsage"], torch.arange(8), 8, features=X))
    )
    assert torch.equal(batch.x, X[batch.n_id])


def test_a_feature_cache_that_does_not_fit_is_said_before_it_is_allocated(small_graph, monkeypatch):
    """A feature cache larger than the GPU memory available: a ValueError naming
    feature_cache, before the slot map or a row is allocated."""
    from gsample.formats import placement

    X, _ = tables(small_graph)
    store = FeatureStore(X, small_graph)  # on the CPU graph: rows read in place
    store.row_bytes = X[0].numel() * X.element_size()
    need = 8 * small_graph.num_nodes + 100 * store.row_bytes  # the slot map and 100 rows
    store.device = torch.device("cuda:0")  # as for a graph on a GPU (never reached here)
    monkeypatch.setattr(placement, "available_memory", lambda device: need - 1)
    with pytest.raises(ValueError, match=r"^feature_cache: a cache of 100 rows and its slot map"):
        store._build_cache(small_graph, need)
    assert store.cache is None
