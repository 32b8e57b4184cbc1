"""``subgraph_type="induced"`` / ``"bidirectional"`` in ``gsample.pyg.NeighborLoader`` against
brute-force references written here (every edge of the graph enumerated), compiled == eager,
the same nodes as ``"directional"`` with the same seed, and PyG's batch checks."""

import pytest
import torch

import gsample as gs

pytest.importorskip("torch_geometric")
from torch_geometric.data import Data
from torch_geometric.sampler.base import SamplerOutput
from torch_geometric.utils import is_undirected

import gsample.pyg as gp
from gsample.base.random import batch_scope
from gsample.interop.pyg import data as D
from gsample.interop.pyg.subgraph import induced_sample, to_bidirectional

N, E = 60, 300


def graph(seed: int, n: int = N, e: int = E) -> Data:
    """A random multigraph-free directed graph with self-loops allowed; edge ``i`` of
    ``edge_index`` has edge id ``i``."""
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(0, n, (2, e * 2), generator=g)
    ei = torch.unique(ei, dim=1)[:, :e]  # no parallel edges: a pair names one edge
    ei = ei[:, torch.randperm(ei.shape[1], generator=g)]
    return Data(edge_index=ei, x=torch.arange(n), edge_attr=torch.arange(ei.shape[1]), num_nodes=n)


def edge_set(batch) -> list:
    """The batch's edges as sorted ``(global src, global dst, e_id)`` triples."""
    src, dst = batch.n_id[batch.edge_index[0]], batch.n_id[batch.edge_index[1]]
    return sorted(zip(src.tolist(), dst.tolist(), batch.e_id.tolist()))


def induced_reference(data: Data, n_id: torch.Tensor) -> list:
    """Every edge of the graph whose two ends are in ``n_id``, enumerated."""
    keep = set(n_id.tolist())
    src, dst = data.edge_index
    return sorted(
        (s, d, i)
        for i, (s, d) in enumerate(zip(src.tolist(), dst.tolist()))
        if s in keep and d in keep
    )


def bidirectional_reference(directional) -> list:
    """PyG's ``to_bidirectional`` by enumeration: each sampled edge ``s -> d`` (id ``e``) and
    ``d -> s`` (id ``e``), one per pair, a sampled edge's own id first."""
    pairs = {}
    sampled = edge_set(directional)
    for s, d, e in sampled:
        pairs.setdefault((s, d), e)
    for s, d, e in sampled:
        pairs.setdefault((d, s), e)
    return sorted((s, d, e) for (s, d), e in pairs.items())


def loaders(data, hops, subgraph_type, **kw):
    kw = {"batch_size": 7, "seed": 11, "shuffle": True, **kw}
    return gp.NeighborLoader(data, hops, subgraph_type=subgraph_type, **kw)


CASES = [(0, [3, 2]), (1, [-1]), (2, [4, -1]), (3, []), (4, [2, 2, 2])]


@pytest.mark.parametrize("seed,hops", CASES)
def test_induced_is_every_edge_among_the_sampled_nodes(seed, hops):
    data = graph(seed)
    directional = list(loaders(data, hops, "directional"))
    induced = list(loaders(data, hops, "induced"))
    assert len(induced) == len(directional) == -(-N // 7)
    for a, b in zip(directional, induced):
        assert torch.equal(a.n_id, b.n_id)  # the same draws: the same nodes, same order
        assert b.batch_size == a.batch_size and torch.equal(a.input_id, b.input_id)
        assert edge_set(b) == induced_reference(data, b.n_id)
        assert set(edge_set(a)) <= set(edge_set(b))
        assert torch.equal(b.edge_attr, data.edge_attr[b.e_id])  # filter_data by e_id
        assert "num_sampled_nodes" not in b and "num_sampled_edges" not in b  # as PyG


@pytest.mark.parametrize("seed,hops", CASES)
def test_bidirectional_is_the_sampled_edges_and_their_reverses(seed, hops):
    data = graph(seed)
    directional = list(loaders(data, hops, "directional"))
    bidirectional = list(loaders(data, hops, "bidirectional"))
    for a, b in zip(directional, bidirectional):
        assert torch.equal(a.n_id, b.n_id)
        assert edge_set(b) == bidirectional_reference(a)
        assert is_undirected(b.edge_index, num_nodes=b.num_nodes)
        key = b.edge_index[1] * b.num_nodes + b.edge_index[0]  # PyG's order: by col, row
        assert bool((key[1:] > key[:-1]).all())
        assert "num_sampled_nodes" not in b and "num_sampled_edges" not in b  # as PyG


def test_to_bidirectional_matches_pygs():
    data = graph(7)
    A = gs.Matrix.from_pyg(data, weight=None)
    seeds = torch.tensor([4, 9, 0, 33])
    for replace in (False, True):  # with replacement: repeated draws coalesce too
        with batch_scope(3, 1):
            s = D.pyg_sample(gp.neighbor_sample(A, seeds, (4, 3), replace=replace), seeds)
        ours = to_bidirectional(s)
        pyg = SamplerOutput(s.node, s.row, s.col, s.edge).to_bidirectional()
        assert torch.equal(ours.row, pyg.row) and torch.equal(ours.col, pyg.col)
        if replace:
            continue  # repeated draws of one pair: PyG's reduce="any" keeps an arbitrary id
        # a pair sampled in both directions has two ids (PyG keeps an arbitrary one): skip it
        pairs = set(zip(s.row.tolist(), s.col.tolist()))
        out = zip(ours.row.tolist(), ours.col.tolist())
        one = torch.tensor([not ((r, c) in pairs and (c, r) in pairs) for r, c in out])
        assert torch.equal(ours.edge[one], pyg.edge[one])


@pytest.mark.parametrize("subgraph_type", ["induced", "bidirectional"])
def test_compiled_equals_eager(subgraph_type):
    data = graph(5)
    for a, b in zip(
        loaders(data, [3, 3], subgraph_type, compile=True),
        loaders(data, [3, 3], subgraph_type, compile=False),
    ):
        assert torch.equal(a.n_id, b.n_id)
        assert torch.equal(a.edge_index, b.edge_index) and torch.equal(a.e_id, b.e_id)


def test_induced_program_compiled_equals_eager():
    A = gs.Matrix.from_pyg(graph(8), weight=None)
    seeds = torch.tensor([5, 1, 40])
    with batch_scope(2, 9):
        sub, nodes = induced_sample(A, seeds, (3, 2))
    with batch_scope(2, 9):
        sub_c, nodes_c = gs.compile(induced_sample)(A, seeds, (3, 2))
    assert torch.equal(nodes, nodes_c)
    a, b = D.pyg_sample((sub, nodes), seeds), D.pyg_sample((sub_c, nodes_c), seeds)
    assert torch.equal(a.row, b.row) and torch.equal(a.col, b.col) and torch.equal(a.edge, b.edge)


@pytest.mark.parametrize("subgraph_type", ["induced", "bidirectional"])
def test_deterministic_and_call_equals_iteration(subgraph_type):
    data = graph(6)
    one = list(loaders(data, [3, 2], subgraph_type, shuffle=False))
    two = list(loaders(data, [3, 2], subgraph_type, shuffle=False))
    for a, b in zip(one, two):
        assert torch.equal(a.n_id, b.n_id) and torch.equal(a.edge_index, b.edge_index)
    loader = loaders(data, [3, 2], subgraph_type, shuffle=False)
    got = loader(torch.arange(7))
    assert torch.equal(got.n_id, one[0].n_id) and torch.equal(got.edge_index, one[0].edge_index)


@pytest.mark.parametrize("subgraph_type", ["directional", "induced", "bidirectional"])
def test_pyg_style_checks(subgraph_type):
    data = graph(9, n=100, e=500)
    loader = gp.NeighborLoader(data, [5, 5], batch_size=20, subgraph_type=subgraph_type, seed=0)
    for i, batch in enumerate(loader):
        assert batch.n_id.size() == (batch.num_nodes,)
        assert batch.edge_index.min() >= 0 and batch.edge_index.max() < batch.num_nodes
        assert batch.edge_attr.size(0) == batch.edge_index.size(1)
        assert torch.equal(batch.x[: batch.batch_size], torch.arange(i * 20, (i + 1) * 20))
        if subgraph_type == "directional":
            assert sum(batch.num_sampled_nodes) == batch.num_nodes
            assert sum(batch.num_sampled_edges) == batch.num_edges


def test_induced_with_weight_attr_keeps_the_positive_weight_edges():
    data = graph(10)
    w = torch.rand(data.num_edges, generator=torch.Generator().manual_seed(0))
    w[::3] = 0
    data.w = w
    for batch in gp.NeighborLoader(
        data, [3, 2], batch_size=10, seed=2, weight_attr="w", subgraph_type="induced"
    ):
        ref = [t for t in induced_reference(data, batch.n_id) if w[t[2]] > 0]
        assert edge_set(batch) == ref
        assert torch.equal(batch.w, w[batch.e_id])


def test_induced_super_batched_equals_one_by_one_on_every_backend(device):
    """The induced program through ``gs.DataLoader``: super-batched (2 and 3 mini-batches a
    run) it samples what it samples one mini-batch at a time, and on a GPU (torch code or
    the CUDA backend) what it samples on the CPU."""
    import functools

    A = gs.datasets.rmat(500, 5000, seed=0)
    fn = gs.compile(functools.partial(induced_sample, num_neighbors=(3, 2)))
    seeds = torch.randperm(500, generator=torch.Generator().manual_seed(0))[:80]

    def run(graph, seeds, **kw):
        loader = gs.DataLoader(graph, fn, seeds, 16, shuffle=False, seed=3, **kw)
        return [(s.edges(), nodes) for s, nodes in (b.out for b in loader)]

    cpu = run(A, seeds)
    assert sum(nodes.numel() for _, nodes in cpu) > seeds.numel()  # the hops reached nodes
    Ad = A.to(device)
    for kw in ({}, {"super_batch": 2}, {"super_batch": 3}):
        got = run(Ad, seeds.to(device), **kw)
        for (e1, n1), (e2, n2) in zip(cpu, got, strict=True):
            assert torch.equal(n1, n2.cpu())
            assert all(torch.equal(x, y.cpu()) for x, y in zip(e1, e2, strict=True))
