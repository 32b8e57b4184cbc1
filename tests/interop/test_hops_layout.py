"""PyG's hops laid out without a read-back (``gsample.interop.pyg.data.hops_sample``).

``NeighborLoader`` samples with ``neighbor_hops`` (blocks and ``n_id``) where its input
nodes are distinct, and lays the batch out from what the hops already know, instead of
searching for it (``pyg_sample``: ``unique`` and ``isin``, each a read-back on a GPU). The
two layouts are the same batch, field for field, whatever the hops (``-1``, hops that
reach no new node, weights, draws with replacement) and whether super-batched."""

from __future__ import annotations

import functools

import pytest
import torch
from torch_geometric.data import Data

import gsample as gs
import gsample.pyg as gp
from gsample.backend.torch import reached_native
from gsample.base.random import batch_scope
from gsample.interop.pyg import data as layout
from gsample.interop.pyg import neighbor_loader as nl
from gsample.interop.pyg.subgraph import neighbor_hops
from gsample.runtime import Options, lower
from gsample.runtime.cuda_graphs import regions

FIELDS = ("node", "row", "col", "edge", "weight", "batch_size")


def _same(a, b):
    for f in FIELDS:
        x, y = getattr(a, f), getattr(b, f)
        if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
            assert x is not None and y is not None and torch.equal(x, y), f
        else:
            assert x == y, f
    assert a.num_sampled_nodes == b.num_sampled_nodes
    assert a.num_sampled_edges == b.num_sampled_edges


@pytest.mark.parametrize(
    "fanouts, replace, weighted, n",
    [
        ((4, 3), False, False, 300),
        ((-1, 2), False, False, 300),
        ((6, 6, 6, 6), False, False, 25),  # later hops reach no new node
        ((3, 3), True, False, 300),  # repeated draws inside a column
        ((5, 2), False, True, 300),
        ((), False, False, 300),  # zero hops: the seeds alone
    ],
)
@pytest.mark.parametrize("native", [True, False])
def test_the_hops_layout_is_pyg_sample_s(fanouts, replace, weighted, n, native, monkeypatch):
    """(On the CPU the local ids come from a native hash table of ``n_id``, or, with the
    native code off, from a sort and a binary search: both are laid out alike.)"""
    if not native:
        monkeypatch.setattr(reached_native, "ENABLED", False)
    A = gs.datasets.rmat(n, 8 * n, seed=1)
    if weighted:
        src, dst, _ = A.edges()
        w = torch.rand(A.num_edges, generator=torch.Generator().manual_seed(2)) + 0.1
        A = gs.Matrix.from_edge_index(torch.stack([src, dst]), weight=w, num_nodes=n)
    seeds = torch.randperm(n, generator=torch.Generator().manual_seed(3))[:17]
    kw = {"num_neighbors": fanouts, "replace": replace, "weighted": weighted}
    hops = gs.compile(functools.partial(neighbor_hops, **kw))
    blocks = gs.compile(functools.partial(gp.neighbor_sample, **kw))
    with batch_scope(5, 0):
        fast = layout.hops_sample(hops(A, seeds), seeds)
    with batch_scope(5, 0):
        ref = layout.pyg_sample(blocks(A, seeds), seeds)
    _same(fast, ref)
    assert len(fast.num_sampled_nodes) == len(fanouts) + 1
    assert fast.node.numel() == sum(fast.num_sampled_nodes)
    if weighted:
        assert fast.weight is not None and fast.weight.numel() == fast.edge.numel()


def _batches(loader):
    return [
        (b.n_id, b.edge_index, b.e_id, b.get("num_sampled_nodes"), b.get("num_sampled_edges"))
        for b in loader
    ]


@pytest.mark.parametrize("super_batch", [None, 2])
@pytest.mark.parametrize("subgraph_type", ["directional", "bidirectional"])
def test_a_loader_of_distinct_seeds_lays_out_the_hops(monkeypatch, super_batch, subgraph_type):
    A = gs.datasets.rmat(400, 4000, seed=0)
    src, dst, _ = A.edges()
    data = Data(edge_index=torch.stack([src, dst]), num_nodes=A.num_nodes)
    kw = dict(
        input_nodes=torch.arange(0, 400, 3),
        batch_size=32,
        shuffle=True,
        seed=4,
        subgraph_type=subgraph_type,
        super_batch=super_batch,
    )
    fast = gp.NeighborLoader(data, [5, 3], **kw)
    assert fast.dataset.layout is layout.hops_sample
    got = _batches(fast)
    monkeypatch.setattr(nl, "_distinct", lambda ids, n=None: False)  # the searching layout
    slow = gp.NeighborLoader(data, [5, 3], **kw)
    assert slow.dataset.layout is layout.pyg_sample
    want = _batches(slow)
    assert len(got) == len(want) == 5
    for g, w in zip(got, want, strict=True):
        assert all(torch.equal(x, y) for x, y in zip(g[:3], w[:3], strict=True))
        assert g[3:] == w[3:]


def test_repeated_input_nodes_keep_the_searching_layout():
    """A mini-batch may then hold a seed twice: ``pyg_sample`` keeps the first copy's
    edges only, which the hops' layout would not."""
    data = Data(edge_index=torch.tensor([[0, 1, 2], [1, 2, 0]]), num_nodes=3)
    loader = gp.NeighborLoader(data, [2], input_nodes=torch.tensor([0, 1, 0]), batch_size=3)
    assert loader.dataset.layout is layout.pyg_sample
    (b,) = list(loader)
    assert b.n_id[:3].tolist() == [0, 1, 0]
    for n in (None, 10):  # by a sort, and by a mask of the nodes
        assert nl._distinct(torch.tensor([4, 1, 9]), n)
        assert not nl._distinct(torch.tensor([4, 1, 4]), n)
        assert nl._distinct(torch.tensor([9]), n) and nl._distinct(
            torch.tensor([], dtype=torch.long), n
        )
        assert not nl._distinct(torch.tensor([0, 9, 3, 9, 0]), n)


def test_the_epoch_order_is_the_same_wherever_it_is_sorted():
    """A loader over a GPU graph shuffles its inputs there (a stable sort of distinct keys:
    the same permutation as the host's), and returns the order on the inputs' device."""
    want = nl.epoch_order(5000, True, 7)
    assert sorted(want.tolist()) == list(range(5000)) and want.tolist() != list(range(5000))
    assert torch.equal(nl.epoch_order(5000, True, 7, None, "cpu"), want)
    assert not torch.equal(nl.epoch_order(5000, True, 8), want)
    assert nl.epoch_order(4, False, 7, None, "cpu").tolist() == [0, 1, 2, 3]
    assert nl._sort_on(gs.datasets.rmat(10, 20, seed=0)) is None and nl._sort_on(None) is None
    if torch.cuda.is_available():
        got = nl.epoch_order(5000, True, 7, None, nl._sort_on(torch.zeros(1, device="cuda")))
        assert got.device.type == "cpu" and torch.equal(got, want)


def test_the_hops_program_reads_back_once():
    """Lowered for the CUDA backend, ``neighbor_hops`` is one CUDA-graph region and one
    read-back, as ``neighbor_sample``: each hop's new nodes stay in their buffers (a
    concatenation per hop would read each hop's count back first)."""
    A = gs.datasets.rmat(2000, 20000, seed=0)
    fn = gs.compile(functools.partial(neighbor_hops, num_neighbors=(10, 10, 5)))
    p = lower(fn.program(A, torch.arange(10)), "cuda", Options(), "cuda:0")
    assert p.num_syncs == 1 and len(regions(p)) == 1, p.format()
    blocks, reached = fn(A, torch.arange(10))
    assert len(blocks) == 3 and len(reached) == 4 and reached[0].tolist() == list(range(10))


def test_loader_index_with_a_repeated_position_keeps_the_searching_layout():
    """``loader(index)`` may repeat an input position although the inputs are distinct:
    that batch is laid out by ``pyg_sample`` (its first copy's edges only), the batch a
    loader whose inputs repeat gives for the same seeds."""
    n = 60
    A = gs.datasets.rmat(n, 6 * n, seed=1)
    src, dst, _ = A.edges()
    data = Data(edge_index=torch.stack([src, dst]), num_nodes=n)
    fast = gp.NeighborLoader(data, [3, 2], batch_size=4, seed=0)
    assert fast.dataset.layout is layout.hops_sample
    inputs = torch.cat([torch.arange(n), torch.tensor([0])])  # a repeat: the searching layout
    slow = gp.NeighborLoader(data, [3, 2], input_nodes=inputs, batch_size=4, seed=0)
    assert slow.dataset.layout is layout.pyg_sample
    index = torch.tensor([13, 13, 41, 2])
    a, b = fast(index), slow(index)
    assert torch.equal(a.n_id, b.n_id) and torch.equal(a.edge_index, b.edge_index)
    assert a.num_sampled_edges == b.num_sampled_edges
    # every seed copy past the first has no edge (pyg_sample's rule)
    hop0 = a.edge_index[1, : a.num_sampled_edges[0]]
    assert 1 not in hop0.tolist() and {0, 2, 3} >= set(hop0.tolist())
    c = fast(torch.tensor([13, 41, 2]))  # distinct: the hops' layout, the same draws
    d = slow(torch.tensor([13, 41, 2]))
    assert torch.equal(c.n_id, d.n_id) and torch.equal(c.edge_index, d.edge_index)


def test_a_transform_sampler_output_reads_the_output_on_one_device():
    """``transform_sampler_output`` runs before filter_data: row / col are where node is
    (on a GPU graph they would otherwise stay on the GPU)."""
    A = gs.datasets.rmat(100, 600, seed=2)
    src, dst, _ = A.edges()
    data = Data(edge_index=torch.stack([src, dst]), num_nodes=100)
    seen = []

    def transform(out):
        seen.append(out.row.device == out.node.device == out.col.device)
        return out

    graph = A.to("cuda") if torch.cuda.is_available() else A
    loader = gp.NeighborLoader(
        data, [3], batch_size=50, transform_sampler_output=transform, graph=graph
    )
    assert len(list(loader)) == 2 and seen == [True, True]
