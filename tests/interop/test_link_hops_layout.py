"""Link batches and ``gsample.pyg.Sampler``'s batches laid out from PyG's hops, without a
read-back.

``LinkNeighborLoader`` (on a ``Data``) samples its mini-batches' endpoints, unique by
construction (``edge_seeds``), with ``neighbor_hops`` and lays them out with
``hops_sample``; ``gsample.pyg.Sampler`` runs a ``neighbor_sample`` it is given as
``neighbor_hops`` (same draws) and does the same for a link mini-batch, or a node mini-batch
of distinct seeds. Every batch equals, field for field, the one the searching layout
(``pyg_sample`` of ``neighbor_sample``'s blocks) gives: the old path, restored here by
monkeypatching, one at a time and super-batched, directional and bidirectional, with each
kind of negatives, weighted, and with repeated seeds."""

from __future__ import annotations

import functools

import pytest
import torch

pytest.importorskip("torch_geometric")

from torch_geometric.data import Data
from torch_geometric.loader import LinkLoader, NodeLoader

import gsample as gs
import gsample.pyg as gp
from gsample.base.random import batch_scope
from gsample.interop.pyg import data as layout
from gsample.interop.pyg import link as lk
from gsample.interop.pyg import loader as ld
from gsample.interop.pyg.subgraph import neighbor_hops

N, E = 300, 2400

#: what a batch of either loader carries (those PyG's filter_fn sets, and the Data's join)
KEYS = (
    "n_id",
    "e_id",
    "edge_index",
    "edge_attr",
    "x",
    "input_id",
    "edge_label_index",
    "edge_label",
    "edge_label_time",
    "src_index",
    "dst_pos_index",
    "dst_neg_index",
    "seed_time",
    "batch",
    "batch_size",
    "num_sampled_nodes",
    "num_sampled_edges",
)


@pytest.fixture(scope="module")
def data():
    A = gs.datasets.rmat(N, E, seed=3)
    src, dst, _ = A.edges()
    g = torch.Generator().manual_seed(0)
    return Data(
        x=torch.arange(N, dtype=torch.float).view(-1, 1),
        edge_index=torch.stack([src, dst]),
        edge_attr=torch.arange(A.num_edges, dtype=torch.float),
        w=torch.rand(A.num_edges, generator=g) + 0.05,
        num_nodes=N,
    )


def _fields(batch) -> dict:
    return {k: batch[k] for k in KEYS if k in batch}


def _same(got: list, want: list) -> None:
    assert len(got) == len(want) > 0
    for g, w in zip(got, want, strict=True):
        assert g.keys() == w.keys()
        for k in g:
            x, y = g[k], w[k]
            if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
                assert isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor), k
                assert x.dtype == y.dtype and x.device == y.device and torch.equal(x, y), k
            else:
                assert x == y, k


def _searching_layout(monkeypatch) -> None:
    """The layout before the hops: neighbor_sample's blocks searched by pyg_sample."""
    monkeypatch.setattr(lk, "neighbor_hops", gp.neighbor_sample)
    monkeypatch.setattr(ld, "_hops_program", lambda fn: None)


def _no_search(monkeypatch) -> None:
    """pyg_sample raises: a batch laid out by searching fails."""

    def refuse(out, seeds):
        raise AssertionError("pyg_sample called: the batch was laid out by searching")

    monkeypatch.setattr(layout, "pyg_sample", refuse)


# ----------------------------------------------------------------------- _hops_program
def test_the_hops_twin_of_each_way_to_give_neighbor_sample():
    hops = ld._hops_program
    assert hops(gp.neighbor_sample) is neighbor_hops
    assert hops(neighbor_hops) is neighbor_hops
    p = hops(functools.partial(gp.neighbor_sample, num_neighbors=(3, 2), replace=True))
    assert p.func is neighbor_hops and p.keywords == {"num_neighbors": (3, 2), "replace": True}
    compiled = gs.compile(gp.neighbor_sample, backend="torch", passes=["cse", "dce"])
    twin = hops(functools.partial(compiled, num_neighbors=(4,)))
    assert twin.keywords == {"num_neighbors": (4,)}
    assert isinstance(twin.func, gs.CompiledSampler) and twin.func.fn is neighbor_hops
    assert twin.func.backend == "torch" and twin.func.passes == compiled.passes
    assert hops(compiled) is twin.func  # one twin (one trace cache) per compiled function
    inner = gs.compile(functools.partial(gp.neighbor_sample, num_neighbors=(2,)))
    assert hops(inner).fn.func is neighbor_hops
    already = functools.partial(gs.compile(neighbor_hops), num_neighbors=(2,))
    assert hops(already) is already
    assert hops(functools.partial(len, ())) is None and hops(lambda A, seeds: []) is None
    assert hops(gs.compile(lambda A, seeds: [A[:, seeds]])) is None


def test_the_twin_draws_what_neighbor_sample_draws(data):
    A = gs.Matrix.from_pyg(data, weight=None)
    seeds = torch.tensor([5, 17, 3, 5, 250, 17])  # repeats: pyg_sample of the blocks
    for compile_ in (False, True):
        fn = functools.partial(gp.neighbor_sample, num_neighbors=(4, 3))
        fn = gs.compile(fn) if compile_ else fn
        with batch_scope(9, 1):
            want = layout.pyg_sample(fn(A, seeds), seeds)
        with batch_scope(9, 1):
            blocks, _ = ld._hops_program(fn)(A, seeds)
        got = layout.pyg_sample(blocks, seeds)
        for f in ("node", "row", "col", "edge"):
            assert torch.equal(getattr(got, f), getattr(want, f)), f
        assert got.num_sampled_nodes == want.num_sampled_nodes


# ----------------------------------------------------------------------- LinkNeighborLoader
def _link_batches(data, **kw) -> list:
    loader = gp.LinkNeighborLoader(data, [4, 3], batch_size=40, shuffle=True, seed=5, **kw)
    epochs = [[_fields(b) for b in loader] for _ in range(2)]  # epoch 1 draws anew
    return epochs[0] + epochs[1] + [_fields(loader(torch.tensor([7, 2, 90])))]


@pytest.mark.parametrize("super_batch", [None, 3])
@pytest.mark.parametrize("subgraph_type", ["directional", "bidirectional"])
@pytest.mark.parametrize(
    "neg",
    [None, "binary", {"mode": "triplet", "amount": 2}, {"mode": "binary", "strict": True}],
)
def test_link_batches_are_the_searching_layouts(monkeypatch, data, super_batch, subgraph_type, neg):
    kw = dict(
        edge_label_index=data.edge_index[:, :200],
        neg_sampling=neg,
        subgraph_type=subgraph_type,
        super_batch=super_batch,
    )
    with monkeypatch.context() as m:
        _no_search(m)
        loader = gp.LinkNeighborLoader(data, [2], batch_size=8, seed=0, **kw)
        assert loader.link_sampler.hops_fn is not None and loader.link_sampler.keep_edges
        got = _link_batches(data, **kw)
    _searching_layout(monkeypatch)
    assert gp.LinkNeighborLoader(data, [2], batch_size=8, **kw).link_sampler.hops_fn is None
    want = _link_batches(data, **kw)
    _same(got, want)
    for b in got:  # n_id: the endpoints (each once), then each hop's new nodes
        if "edge_label_index" in b and subgraph_type == "directional":
            seeds = b["num_sampled_nodes"][0]
            assert b["edge_label_index"].unique().tolist() == list(range(seeds))
            assert sum(b["num_sampled_nodes"]) == b["n_id"].numel() == b["n_id"].unique().numel()


@pytest.mark.parametrize("compile_", [True, False])
def test_weighted_link_batches_are_the_searching_layouts(monkeypatch, data, compile_):
    kw = dict(neg_sampling="binary", weight_attr="w", compile=compile_, replace=True)
    with monkeypatch.context() as m:
        _no_search(m)
        got = _link_batches(data, **kw)
    _searching_layout(monkeypatch)
    _same(got, _link_batches(data, **kw))


def test_disjoint_and_temporal_link_loaders_keep_their_layout(data):
    """One tree per seed: the disjoint program, not the hops (a seed may repeat)."""
    t = torch.arange(N, dtype=torch.long)
    timed = Data(edge_index=data.edge_index, time=t, num_nodes=N)
    label_time = torch.full((data.edge_index.shape[1],), N, dtype=torch.long)
    for loader in (
        gp.LinkNeighborLoader(data, [2], batch_size=8, disjoint=True, seed=0),
        gp.LinkNeighborLoader(
            timed, [2], batch_size=8, time_attr="time", edge_label_time=label_time, seed=0
        ),
    ):
        assert loader.link_sampler.hops_fn is None
        b = next(iter(loader))
        assert b.batch.numel() == b.n_id.numel()


# ----------------------------------------------------------------------- gsample.pyg.Sampler
def _sampler(data, compile_: bool, **kw):
    fn = gs.compile(gp.neighbor_sample) if compile_ else gp.neighbor_sample
    return gp.Sampler(data, functools.partial(fn, num_neighbors=(3, 2), **kw), seed=4)


def _node_batches(data, input_nodes, compile_: bool) -> list:
    loader = NodeLoader(data, _sampler(data, compile_), input_nodes=input_nodes, batch_size=32)
    return [_fields(b) for b in loader]


@pytest.mark.parametrize("compile_", [True, False])
def test_node_batches_of_distinct_seeds_are_the_searching_layouts(monkeypatch, data, compile_):
    nodes = torch.randperm(N, generator=torch.Generator().manual_seed(1))[:150]
    with monkeypatch.context() as m:
        _no_search(m)
        got = _node_batches(data, nodes, compile_)
    _searching_layout(monkeypatch)
    _same(got, _node_batches(data, nodes, compile_))


def test_node_batches_of_repeated_seeds_are_searched(monkeypatch, data):
    """A repeated seed: the hops' draws, laid out by pyg_sample (its first copy's edges)."""
    nodes = torch.tensor([4, 9, 4, 100, 9, 7] * 8)
    called = []
    search = layout.pyg_sample

    def counted(out, seeds):
        called.append(seeds.numel())
        return search(out, seeds)

    with monkeypatch.context() as m:
        m.setattr(layout, "pyg_sample", counted)
        got = _node_batches(data, nodes, True)
    assert called == [32, 16]
    assert torch.equal(got[0]["n_id"][:32], nodes[:32])  # each copy a seed, as PyG's
    _searching_layout(monkeypatch)
    _same(got, _node_batches(data, nodes, True))


def _pyg_link_batches(data, neg, compile_: bool, **kw) -> list:
    sampler = _sampler(data, compile_, **kw)
    loader = LinkLoader(
        data,
        sampler,
        edge_label_index=data.edge_index[:, :120],
        batch_size=24,
        neg_sampling=neg,
    )
    return [_fields(b) for b in loader]


@pytest.mark.parametrize("neg", [None, "binary", {"mode": "triplet", "amount": 3}])
def test_pygs_link_loader_batches_are_the_searching_layouts(monkeypatch, data, neg):
    with monkeypatch.context() as m:
        _no_search(m)
        got = _pyg_link_batches(data, neg, True)
    _searching_layout(monkeypatch)
    _same(got, _pyg_link_batches(data, neg, True))


def test_row_and_col_stay_on_the_graph_only_for_filter_data(data):
    """A public Sampler does not know its loader (a transform_sampler_output, or a store's
    join, reads row / col where node is): they go to the seeds' device. The link loader's
    own sampler keeps them on the graph's device, unless a transform_sampler_output reads
    the output before filter_data."""
    A = gs.Matrix.from_pyg(data, weight=None)
    assert not gp.Sampler(A, gp.neighbor_sample).keep_edges
    assert not gp.Sampler(data, gp.neighbor_sample).keep_edges
    other = gp.Sampler(data, functools.partial(gs.compile(lambda A, seeds: [A[:, seeds]])))
    assert other.hops_fn is None
    kw = dict(edge_label_index=data.edge_index[:, :20], batch_size=10)
    assert gp.LinkNeighborLoader(data, [2], **kw).link_sampler.keep_edges
    seen = []

    def transform(out):
        seen.append(out.row.device == out.node.device == out.col.device)
        return out

    loader = gp.LinkNeighborLoader(data, [2], transform_sampler_output=transform, **kw)
    assert not loader.link_sampler.keep_edges
    assert len(list(loader)) == 2 and seen == [True, True]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("super_batch", [None, 2])
def test_a_gpu_link_loader_is_the_cpu_ones(data, super_batch):
    """On a GPU (data there, supervision edges on the host): the CPU's batches, row / col
    never through the host; n_id / e_id / the labels where the supervision edges are."""
    kw = dict(
        edge_label_index=data.edge_index[:, :200],
        neg_sampling="binary",
        super_batch=super_batch,
        batch_size=40,
        seed=2,
    )
    cpu = [_fields(b) for b in gp.LinkNeighborLoader(data, [4, 3], **kw)]
    gpu_data = data.clone().to("cuda")  # (Data.to moves in place: the fixture stays)
    gpu = [_fields(b) for b in gp.LinkNeighborLoader(gpu_data, [4, 3], **kw)]
    for c, g in zip(cpu, gpu, strict=True):
        assert g["edge_index"].is_cuda and not g["n_id"].is_cuda
        for k in c:
            x, y = c[k], g[k]
            if isinstance(x, torch.Tensor):
                assert torch.equal(x, y.cpu()), k
            else:
                assert x == y, k
