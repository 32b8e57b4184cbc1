"""gsample.pyg.LinkNeighborLoader: PyG's link loader outputs, determinism, refused arguments."""

import collections
import functools

import pytest
import torch

pytest.importorskip("torch_geometric")

from torch_geometric.data import Data, HeteroData
from torch_geometric.loader import LinkLoader
from torch_geometric.sampler import SamplerOutput
from torch_geometric.sampler.base import SubgraphType

import gsample.pyg as gp
from gsample.base import validate as V
from gsample.interop.pyg.loader import UnsupportedArgument

N, E = 60, 400


@pytest.fixture
def data():
    g = torch.Generator().manual_seed(0)
    edge_index = torch.randint(0, N, (2, E), generator=g)
    return Data(
        x=torch.arange(N, dtype=torch.float).view(-1, 1),
        edge_index=edge_index,
        edge_attr=torch.arange(E, dtype=torch.float),
        w=torch.rand(E, generator=g),
        num_nodes=N,
    )


def _check_structure(batch, data):
    """The batch's edges and attributes are the Data's, by n_id / e_id."""
    assert torch.equal(batch.x.view(-1).long(), batch.n_id)
    assert torch.equal(batch.edge_attr.long(), batch.e_id)
    src, dst = batch.n_id[batch.edge_index]
    assert torch.equal(torch.stack([src, dst]), data.edge_index[:, batch.e_id])


def test_binary_outputs_are_pygs(data):
    label_index = data.edge_index[:, :50]
    label = torch.arange(50) % 3  # starts at 0: shifted by one, 0 means negative
    loader = gp.LinkNeighborLoader(
        data,
        [4, 3],
        edge_label_index=label_index,
        edge_label=label,
        batch_size=16,
        neg_sampling="binary",
        seed=1,
    )
    assert str(loader) == "LinkNeighborLoader()"
    assert len(loader) == 4
    batches = list(loader)
    for i, b in enumerate(batches):
        n = b.input_id.numel()
        assert torch.equal(b.input_id, torch.arange(i * 16, i * 16 + n))
        assert b.edge_label_index.shape == (2, 2 * n)
        # positives first, in local ids; n_id starts with the label edges' endpoints
        assert torch.equal(b.n_id[b.edge_label_index[:, :n]], label_index[:, b.input_id])
        seeds = b.num_sampled_nodes[0]  # the endpoints, unique, first in n_id
        assert set(b.edge_label_index.unique().tolist()) == set(range(seeds))
        assert torch.equal(b.edge_label[:n], label[b.input_id] + 1)
        assert bool((b.edge_label[n:] == 0).all())
        _check_structure(b, data)


def test_triplet_outputs_are_pygs(data):
    loader = gp.LinkNeighborLoader(
        data,
        [3],
        batch_size=10,
        neg_sampling={"mode": "triplet", "amount": 2},
        seed=2,
    )
    b = loader(torch.arange(10))
    assert b.src_index.shape == (10,) and b.dst_pos_index.shape == (10,)
    assert b.dst_neg_index.shape == (10, 2)
    assert torch.equal(b.n_id[b.src_index], data.edge_index[0, :10])
    assert torch.equal(b.n_id[b.dst_pos_index], data.edge_index[1, :10])
    assert "edge_label" not in b
    _check_structure(b, data)


def test_same_as_pygs_link_loader_over_sampler(data):
    """The loader lays its batches out as PyG's LinkLoader over gsample.pyg.Sampler: with
    every neighbour kept and no negatives (nothing drawn), the same batches. (Their draws
    differ: PyG's LinkLoader keys a mini-batch by its input_id set, the loader mini-batch
    ``i`` by ``i``, so that super_batch can draw runs of them: test_link_super_batch.py.)"""
    kw = {"batch_size": 32}
    ours = gp.LinkNeighborLoader(data, [-1, -1], seed=7, compile=False, **kw)
    fn = functools.partial(gp.neighbor_sample, num_neighbors=(-1, -1), replace=False)
    ref = LinkLoader(data, gp.Sampler(data, fn, seed=7), **kw)
    for a, b in zip(ours, ref, strict=True):
        assert sorted(a.keys()) == sorted(b.keys())
        for key in ("n_id", "e_id", "edge_index", "edge_label_index", "input_id"):
            assert torch.equal(a[key], b[key]), key


def test_same_seed_same_batches(data):
    def run(seed, compile):
        loader = gp.LinkNeighborLoader(
            data, [4, 2], batch_size=25, neg_sampling="binary", seed=seed, compile=compile
        )
        return [(b.n_id, b.e_id, b.edge_label_index) for b in loader]

    a, b, c = run(3, True), run(3, True), run(4, True)
    assert all(torch.equal(x, y) for p, q in zip(a, b, strict=True) for x, y in zip(p, q))
    assert any(not torch.equal(p[0], q[0]) for p, q in zip(a, c, strict=True))
    d = run(3, False)  # compiled or not: the same samples
    assert all(torch.equal(x, y) for p, q in zip(a, d, strict=True) for x, y in zip(p, q))


def test_weight_attr(data):
    data.w[: E // 2] = 0.0  # never sampled
    loader = gp.LinkNeighborLoader(data, [-1, -1], batch_size=50, weight_attr="w", seed=0)
    for b in loader:
        assert bool((b.e_id >= E // 2).all())
        _check_structure(b, data)


@pytest.mark.parametrize(
    "name, value",
    [
        ("subgraph_type", "induced"),
        ("directed", False),
        ("neighbor_sampler", object()),
        ("custom_cls", HeteroData),
    ],
)
def test_refused_arguments_are_named(data, name, value):
    with pytest.raises(UnsupportedArgument, match=name):
        gp.LinkNeighborLoader(data, [2], **{name: value})


def test_bidirectional_is_pygs_to_bidirectional_of_the_directional_batch(data):
    """Same seed: the same nodes and labels; the edges are PyG's ``to_bidirectional`` of the
    directional batch's (``e_id``: the sampled edge's id, also on its reverse)."""
    kw = {"batch_size": 20, "neg_sampling": "binary", "seed": 5, "compile": False}
    directional = gp.LinkNeighborLoader(data, [4, 3], **kw)
    bidirectional = gp.LinkNeighborLoader(data, [4, 3], subgraph_type="bidirectional", **kw)
    assert bidirectional.subgraph_type == "bidirectional"
    for a, b in zip(directional, bidirectional, strict=True):
        for key in ("n_id", "input_id", "edge_label_index", "edge_label"):
            assert torch.equal(a[key], b[key]), key
        row, col = a.edge_index
        pyg = SamplerOutput(a.n_id, row, col, a.e_id).to_bidirectional()
        assert torch.equal(b.edge_index, torch.stack([pyg.row, pyg.col]))
        # a pair sampled more than once (both directions, or parallel edges) has several
        # ids (PyG keeps an arbitrary one): skip it
        pairs = collections.Counter(zip(row.tolist(), col.tolist()))
        out = zip(pyg.row.tolist(), pyg.col.tolist())
        one = torch.tensor([pairs[r, c] + pairs[c, r] * (r != c) == 1 for r, c in out])
        assert torch.equal(b.e_id[one], pyg.edge[one])
        assert "num_sampled_nodes" not in b and "num_sampled_edges" not in b  # as PyG's
        src, dst = b.n_id[b.edge_index]  # each edge is a graph edge or one's reverse
        e = data.edge_index[:, b.e_id]
        assert bool(((src == e[0]) & (dst == e[1]) | (src == e[1]) & (dst == e[0])).all())


def test_directed_false_and_induced_are_refused_with_their_reasons(data):
    with pytest.raises(UnsupportedArgument, match="directed=False is PyG's deprecated"):
        gp.LinkNeighborLoader(data, [2], directed=False)
    with pytest.raises(UnsupportedArgument, match="subgraph_type='induced'"):
        gp.LinkNeighborLoader(data, [2], subgraph_type=SubgraphType.induced)
    with pytest.raises(ValueError, match="subgraph_type: expected one of"):
        gp.LinkNeighborLoader(data, [2], subgraph_type="undirected")


def test_conflicting_temporal_arguments_are_pygs_value_error(data):
    with pytest.raises(ValueError, match="'edge_label_time' is not set"):
        gp.LinkNeighborLoader(data, [2], time_attr="t")
    with pytest.raises(ValueError, match="'time_attr' is not set"):
        gp.LinkNeighborLoader(data, [2], edge_label_time=torch.zeros(E))


def test_refused_data_is_named(data):
    with pytest.raises(TypeError, match=r"data: .*LinkNeighborLoader"):
        gp.LinkNeighborLoader((object(), object()), [2])
    with pytest.raises(TypeError, match="num_neighbors"):
        gp.LinkNeighborLoader(data, {("a", "to", "a"): [2]})
    with pytest.raises(TypeError, match="bogus"):
        gp.LinkNeighborLoader(data, [2], bogus=1)


def test_accepted_defaults(data):
    loader = gp.LinkNeighborLoader(
        data,
        [2],
        subgraph_type="directional",
        disjoint=False,
        temporal_strategy="uniform",
        directed=True,
        is_sorted=True,
        filter_per_worker=False,
        batch_size=100,
        seed=0,
    )
    assert sum(b.input_id.numel() for b in loader) == E


@pytest.mark.parametrize("bad", [-1, N, 2**40])
@pytest.mark.parametrize("row", [0, 1])
def test_supervision_edges_are_checked_once_when_the_loader_is_made(data, bad, row, monkeypatch):
    """A bad id in ``edge_label_index`` is an ``IndexError`` naming it when the loader is
    made; good edges are checked there once, so neither a batch's negative draw nor its
    sampler checks its endpoints (or the negatives, drawn among the graph's nodes) again
    (each check a host read-back on a GPU)."""
    label_index = data.edge_index[:, :40].clone()
    label_index[row, 7] = bad
    with pytest.raises(IndexError, match=rf"edge_label_index: node id {bad} is"):
        gp.LinkNeighborLoader(data, [3], edge_label_index=label_index, batch_size=8)

    def epoch():  # a new loader's first epoch (each iteration is an epoch of its own)
        loader = gp.LinkNeighborLoader(
            data,
            [3, 2],
            edge_label_index=data.edge_index[:, :40],
            batch_size=8,
            neg_sampling=gp.NegativeSampling("binary", 1, strict=True),
            seed=3,
        )
        return [torch.cat([b.n_id, b.edge_label_index.view(-1)]) for b in loader]

    want = epoch()
    checked = []
    in_range = V.in_range
    monkeypatch.setattr(
        V, "in_range", lambda t, name, n: (checked.append(name), in_range(t, name, n))
    )
    got = epoch()
    assert len(got) == 5 and all(torch.equal(a, b) for a, b in zip(got, want))
    assert "edge_label_index" in checked  # the loader's own check, when it is made
    assert not {"src", "dst", "seeds"} & set(checked)  # not again, batch by batch


def test_with_edge_weight_finds_every_link_batch(data):
    """``gp.with_edge_weight`` as the link loader's transform finds each batch by its
    ``input_id`` (the loader remembers the batch unhashed; the lookup hashes it), with the
    sampled edges: no ``RuntimeError``, and no ``edge_weight`` where the sampler gave no
    values."""
    loader = gp.LinkNeighborLoader(
        data,
        [3, 2],
        edge_label_index=data.edge_index[:, :40],
        batch_size=8,
        neg_sampling="binary",
        transform=gp.with_edge_weight,
        seed=2,
    )
    batches = list(loader)
    assert len(batches) == 5
    for b in batches:
        assert "edge_weight" not in b and b.e_id.numel() > 0
        _check_structure(b, data)
