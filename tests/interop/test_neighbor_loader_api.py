"""``gsample.pyg.NeighborLoader`` against PyG's ``NeighborLoader`` API: ``str()``,
``loader(index)``, ``filter_per_worker``, ``subgraph_type``, zero hops, ``weight_attr``,
the arguments not supported yet (each refused naming itself), and the inputs it does not
take (``HeteroData``, ``(FeatureStore, GraphStore)``, a sparse adjacency)."""

import pytest
import torch

import gsample as gs

pytest.importorskip("torch_geometric")
from torch_geometric.data import Data
from torch_geometric.loader import NeighborLoader as PygNeighborLoader
from torch_geometric.sampler.base import SubgraphType

import gsample.pyg as gp

N = 400


@pytest.fixture(scope="module")
def data():
    """An R-MAT graph as a PyG ``Data``; edge ``i`` of ``edge_index`` has edge id ``i``."""
    A = gs.datasets.rmat(N, 4000, seed=5)
    src, dst, eid = A.edges()
    ei = torch.empty(2, A.num_edges, dtype=torch.long)
    ei[0, eid], ei[1, eid] = src, dst
    g = torch.Generator().manual_seed(1)
    return Data(
        edge_index=ei,
        x=torch.randn(N, 3, generator=g),
        edge_attr=torch.randn(A.num_edges, 2, generator=g),
        num_nodes=N,
    )


def same_data(a, b):
    assert sorted(a.keys()) == sorted(b.keys())
    for key in sorted(a.keys()):
        va, vb = a[key], b[key]
        if isinstance(va, torch.Tensor):
            assert torch.equal(va, vb), key
        else:
            assert va == vb, key


# --- str(), loader(index), filter_per_worker -------------------------------------------


def test_str_is_pygs(data):
    loader = gp.NeighborLoader(data, [3], batch_size=10, seed=0)
    assert str(loader) == "NeighborLoader()" == repr(loader)
    assert str(loader) == str(PygNeighborLoader(data, [3], batch_size=10))


@pytest.mark.parametrize("shuffle", [False, True])
def test_call_gives_the_iterated_batch_of_the_same_seeds(data, shuffle):
    """PyG's ``loader(index)`` (``NodeLoader.__call__``): the batch of input positions
    ``index``; for the positions of an epoch's mini-batch ``i``, the very batch iteration
    gives (same key), every field included."""
    loader = gp.NeighborLoader(data, [4, 3], batch_size=64, shuffle=shuffle, seed=7)
    first = gp.NeighborLoader(data, [4, 3], batch_size=64, shuffle=shuffle, seed=7)
    epoch = iter(first)  # starts epoch 0 (sets its seed)
    positions = first.dataset.positions(first.batches.epoch_seed)  # epoch 0's order
    for i, batch in enumerate(epoch):
        called = loader(positions[i * 64 : (i + 1) * 64])
        same_data(called, batch)
        if i == 2:
            break
    # after an epoch started, loader(index) draws in that epoch, as iteration did
    it = list(loader)
    positions = loader.dataset.positions(loader.batches.epoch_seed)
    same_data(loader(positions[64:128].tolist()), it[1])


def test_call_of_any_seeds_has_pygs_fields(data):
    loader = gp.NeighborLoader(data, [4, 3], batch_size=64, seed=7)
    batch = loader([5, 2, 300])
    assert batch.batch_size == 3
    assert batch.input_id.tolist() == [5, 2, 300]
    assert batch.n_id[:3].tolist() == [5, 2, 300]
    assert sorted(batch.keys()) == sorted(next(iter(loader)).keys())
    same_data(batch, loader([5, 2, 300]))  # deterministic: same seeds, same epoch, same draw
    src, dst = batch.n_id[batch.edge_index]
    eid = batch.e_id
    assert torch.equal(data.edge_index[0, eid], src) and torch.equal(data.edge_index[1, eid], dst)


@pytest.mark.parametrize("value", [None, True, False])
def test_filter_per_worker_changes_no_batch(data, value):
    ref = list(gp.NeighborLoader(data, [4, 2], batch_size=100, seed=3))
    got = list(gp.NeighborLoader(data, [4, 2], batch_size=100, seed=3, filter_per_worker=value))
    assert len(got) == len(ref)
    for a, b in zip(got, ref):
        same_data(a, b)


def test_filter_per_worker_false_with_workers(data):
    ref = list(gp.NeighborLoader(data, [4, 2], batch_size=100, seed=3))
    got = list(
        gp.NeighborLoader(
            data, [4, 2], batch_size=100, seed=3, filter_per_worker=False, num_workers=2
        )
    )
    for a, b in zip(got, ref):
        same_data(a, b)


# --- subgraph_type, zero hops --------------------------------------------------------


@pytest.mark.parametrize("value", ["directional", SubgraphType.directional])
def test_directional_is_the_default(data, value):
    ref = list(gp.NeighborLoader(data, [4, 2], batch_size=100, seed=3))
    got = list(gp.NeighborLoader(data, [4, 2], batch_size=100, seed=3, subgraph_type=value))
    for a, b in zip(got, ref):
        same_data(a, b)


@pytest.mark.parametrize(
    "value", ["bidirectional", "induced", SubgraphType.bidirectional, SubgraphType.induced]
)
def test_other_subgraph_types_are_taken(data, value):
    loader = gp.NeighborLoader(data, [3], batch_size=50, seed=3, subgraph_type=value)
    assert loader.subgraph_type == (value.value if isinstance(value, SubgraphType) else value)
    assert "num_sampled_nodes" not in next(iter(loader))  # no hop structure, as PyG's


@pytest.mark.parametrize("value", ["undirected", 3, None])
def test_an_unknown_subgraph_type_is_a_value_error_naming_the_argument(data, value):
    with pytest.raises(ValueError, match=r"subgraph_type: expected one of"):
        gp.NeighborLoader(data, [3], subgraph_type=value)


def test_directed_false_is_induced(data):
    a = gp.NeighborLoader(data, [3], batch_size=50, seed=3, directed=False)
    b = gp.NeighborLoader(data, [3], batch_size=50, seed=3, subgraph_type="induced")
    same_data(next(iter(a)), next(iter(b)))


def test_zero_hops_give_the_seeds_alone(data):
    """PyG's ``num_neighbors=[]``: each batch is its seeds, no edge."""
    seeds = torch.tensor([7, 3, 99, 250, 3 + 1])
    loader = gp.NeighborLoader(data, [], input_nodes=seeds, batch_size=2, seed=0)
    batches = list(loader)
    assert len(batches) == 3
    assert torch.equal(torch.cat([b.n_id for b in batches]), seeds)
    for b in batches:
        assert b.edge_index.shape == (2, 0) and b.e_id.numel() == 0
        assert b.edge_attr.shape == (0, 2)
        assert b.num_nodes == b.batch_size == b.n_id.numel()
        assert torch.equal(b.x, data.x[b.n_id])
        assert b.num_sampled_nodes == [b.batch_size] and b.num_sampled_edges == []
    assert torch.equal(loader([4]).n_id, seeds[4:])


# --- weight_attr ---------------------------------------------------------------------


def test_weighted_sampling_never_draws_zero_weight_edges(data):
    g = torch.Generator().manual_seed(3)
    E = data.edge_index.shape[1]
    w = torch.rand(E, generator=g) * (torch.rand(E, generator=g) < 0.5)
    d = data.clone()
    d.w = w
    for replace in (False, True):
        loader = gp.NeighborLoader(
            d, [3, 2], batch_size=50, weight_attr="w", replace=replace, seed=4
        )
        seen = torch.cat([b.e_id for b in loader])
        assert seen.numel() > 0
        assert bool((w[seen] > 0).all())
        for b in loader:
            assert torch.equal(b.w, w[b.e_id])  # the weights sliced as any edge attribute
            assert "edge_weight" not in b
            src, dst = b.n_id[b.edge_index]
            assert torch.equal(d.edge_index[0, b.e_id], src)
            assert torch.equal(d.edge_index[1, b.e_id], dst)


def test_weighted_sampling_pygs_example():
    """PyG's weighted loader test: node 2's in-edges from 1 (weight 0) and 3 (weight 1)."""
    edge_index = torch.tensor([[1, 3, 0, 4], [2, 2, 1, 3]])
    d = Data(num_nodes=5, edge_index=edge_index, edge_weight=torch.tensor([0.0, 1.0, 0.0, 1.0]))
    loader = gp.NeighborLoader(
        d, input_nodes=torch.tensor([2]), num_neighbors=[1, 1], batch_size=1,
        weight_attr="edge_weight", seed=0,
    )  # fmt: skip
    (batch,) = list(loader)
    assert batch.n_id.tolist() == [2, 3, 4]
    assert batch.edge_index.tolist() == [[1, 2], [0, 1]]
    assert batch.e_id.tolist() == [1, 3]


def test_weighted_sampling_follows_the_weights():
    """3000 nodes, each with in-edges of weights 1, 2 and 7 from nodes 3000..3002, one
    draw each: frequencies near 0.1, 0.2, 0.7 (chi-square)."""
    scipy_stats = pytest.importorskip("scipy.stats")
    dst = torch.arange(3000).repeat_interleave(3)
    src = 3000 + torch.arange(3).repeat(3000)
    w = torch.tensor([1.0, 2.0, 7.0]).repeat(3000)
    d = Data(num_nodes=3003, edge_index=torch.stack([src, dst]), w=w)
    loader = gp.NeighborLoader(
        d, [1], input_nodes=torch.arange(3000), batch_size=1000, weight_attr="w", seed=11
    )
    counts = torch.zeros(3)
    for b in loader:
        counts += torch.bincount(b.e_id % 3, minlength=3)
    assert counts.sum() == 3000
    p = scipy_stats.chisquare(counts.numpy(), [300, 600, 2100]).pvalue
    assert p > 1e-4, (counts, p)


def test_weighted_is_deterministic_and_differs_from_uniform(data):
    d = data.clone()
    d.w = torch.rand(d.edge_index.shape[1], generator=torch.Generator().manual_seed(9))
    a = list(gp.NeighborLoader(d, [5, 3], batch_size=100, weight_attr="w", seed=2))
    b = list(gp.NeighborLoader(d, [5, 3], batch_size=100, weight_attr="w", seed=2))
    for x, y in zip(a, b):
        same_data(x, y)
    c = gp.NeighborLoader(d, [5, 3], batch_size=100, weight_attr="w", seed=2, compile=False)
    for x, y in zip(a, c):
        same_data(x, y)


@pytest.mark.parametrize(
    "weights, match",
    [
        (None, "weight_attr: data has no tensor attribute 'w'"),
        ("neg", "weight_attr: data.w must be finite and non-negative"),
        ("short", r"weight_attr: data.w must hold one floating-point weight per edge"),
    ],
)
def test_bad_weights_name_weight_attr(data, weights, match):
    d = data.clone()
    E = d.edge_index.shape[1]
    if weights == "neg":
        d.w = -torch.ones(E)
    elif weights == "short":
        d.w = torch.ones(E - 1)
    with pytest.raises(ValueError, match=match):
        gp.NeighborLoader(d, [3], weight_attr="w")


def test_weight_attr_and_graph_are_exclusive(data):
    d = data.clone()
    d.w = torch.ones(d.edge_index.shape[1])
    with pytest.raises(ValueError, match=r"weight_attr: .* not both"):
        gp.NeighborLoader(d, [3], weight_attr="w", graph=gs.Matrix.from_pyg(d, weight="w"))


# --- arguments ---------------------------------------------------------------------


def test_disjoint_false_is_the_default(data):
    same_data(  # disjoint=False is PyG's default
        next(iter(gp.NeighborLoader(data, [3], batch_size=9, seed=1, disjoint=False))),
        next(iter(gp.NeighborLoader(data, [3], batch_size=9, seed=1))),
    )


def test_every_refusal_is_both_a_type_and_a_value_error():
    assert issubclass(gp.UnsupportedArgument, TypeError)
    assert issubclass(gp.UnsupportedArgument, ValueError)


# --- inputs not taken ----------------------------------------------------------------


def test_sparse_adjacency_is_a_type_error_naming_it(data):
    d = Data(x=data.x, num_nodes=N)
    d.adj_t = torch.sparse_coo_tensor(data.edge_index.flip(0), torch.ones(data.num_edges))
    with pytest.raises(TypeError, match=r"^data\.adj_t: a graph stored as a sparse adjacency"):
        gp.NeighborLoader(d, [3])
    with pytest.raises(TypeError, match=r"^graph\.adj_t: "):
        gp.Sampler(d, gp.neighbor_sample, seed=0)


def test_no_edge_index_is_a_graph_of_no_edge():
    """PyG's ``to_csc``: a ``Data`` with no ``edge_index`` (nor adjacency) has no edge; the
    second hop's frontier is empty (nothing new reached) and adds no node and no edge, as
    PyG's, compiled or not."""
    d = Data(x=torch.randn(6, 2), num_nodes=6)
    for compile in (True, False):
        (b,) = list(gp.NeighborLoader(d, [2, 2], batch_size=6, seed=0, compile=compile))
        assert b.n_id.tolist() == list(range(6)) and b.e_id.numel() == 0
        assert b.edge_index is None
        assert b.num_sampled_nodes == [6, 0, 0] and b.num_sampled_edges == [0, 0]


def test_no_edge_index_one_hop():
    """A ``Data`` with no ``edge_index``: one hop reaches nothing (the seeds alone)."""
    d = Data(x=torch.randn(6, 2), num_nodes=6)
    (b,) = list(gp.NeighborLoader(d, [2], batch_size=6, seed=0))
    assert b.n_id.tolist() == list(range(6)) and b.e_id.numel() == 0
    assert b.edge_index is None  # PyG's filter_data: no edge_index in, none out
    assert b.num_sampled_nodes == [6, 0]
