"""PyG interop (issue 32, item 4): every PyG loader argument gsample's loaders do not take is a
``TypeError`` naming it (read off PyG's own signatures, so a new PyG argument cannot slip
through), the PyG arguments they do take behave as PyG's, importance weights reach PyG's
``NodeLoader`` / ``LinkLoader`` batches as ``edge_weight``, and masks and sparse tables are
taken as PyG takes them."""

import collections
import functools
import inspect

import pytest
import torch
from helpers import example

import gsample as gs
import gsample.pyg

pytest.importorskip("torch_geometric")
from torch_geometric.data import Data, HeteroData
from torch_geometric.loader import LinkLoader, NodeLoader
from torch_geometric.loader import NeighborLoader as PygNeighborLoader
from torch_geometric.sampler import NegativeSampling, NeighborSampler, NodeSamplerInput
from torch_geometric.sampler.base import SubgraphType

import gsample.interop.pyg.loader as gp

N = 600


@pytest.fixture(scope="module")
def data():
    """A PyG ``Data`` over an R-MAT graph; edge ``i`` of ``edge_index`` has edge id ``i``;
    ``w`` a positive weight per edge."""
    A = gs.datasets.rmat(N, 6000, seed=5)
    src, dst, eid = A.edges()
    ei = torch.empty(2, A.num_edges, dtype=torch.long)
    ei[0, eid], ei[1, eid] = src, dst
    g = torch.Generator().manual_seed(1)
    return Data(
        edge_index=ei,
        x=torch.randn(N, 3, generator=g),
        w=torch.rand(A.num_edges, generator=g) + 0.5,
        num_nodes=N,
    )


def same_batches(a, b):
    for x, y in zip(a, b, strict=True):
        assert torch.equal(x.n_id, y.n_id) and torch.equal(x.e_id, y.e_id)
        assert torch.equal(x.edge_index, y.edge_index) and torch.equal(x.x, y.x)
        assert torch.equal(x.input_id, y.input_id) and x.batch_size == y.batch_size


# ----------------------------------------------------------------------------- the table
def pyg_arguments():
    """Every named argument of PyG's NeighborLoader, NodeLoader and NeighborSampler."""
    names = set()
    for cls in (PygNeighborLoader, NodeLoader, NeighborSampler):
        for p in inspect.signature(cls.__init__).parameters.values():
            if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                names.add(p.name)
    return sorted(names)


def test_every_pyg_argument_is_taken_or_in_the_table():
    """A PyG argument neither taken by gsample.pyg.NeighborLoader nor in PYG_ONLY would reach
    torch's DataLoader ("unexpected keyword argument"): none may exist, and the table lists
    only PyG's arguments."""
    own = set(inspect.signature(gp.NeighborLoader.__init__).parameters)
    pyg = pyg_arguments()
    assert "subgraph_type" in pyg and "disjoint" in pyg  # the signatures were read
    missing = [name for name in pyg if name not in own and name not in gp.PYG_ONLY]
    assert missing == []
    assert sorted(set(gp.PYG_ONLY) - set(pyg)) == []
    assert not set(gp.PYG_ONLY) & own


REFUSED = {
    "sample_direction": "backward",
    "neighbor_sampler": object(),
    "node_sampler": object(),
    "custom_cls": HeteroData,
    "is_sorted": "yes",
    "share_memory": 1,
}


def test_refusals_cover_the_table():
    assert sorted(REFUSED) == sorted(gp.PYG_ONLY)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_pyg_only_arguments_are_refused_naming_themselves(data, name):
    with pytest.raises(TypeError, match=rf"^gsample\.pyg\.NeighborLoader: {name}=") as info:
        gp.NeighborLoader(data, [3], **{name: REFUSED[name]})
    assert "DataLoader.__init__" not in str(info.value)


def test_an_unknown_subgraph_type_is_refused_naming_it(data):
    with pytest.raises(ValueError, match="subgraph_type: expected one of"):
        gp.NeighborLoader(data, [3], subgraph_type="undirected")


def test_accepted_values_sample_what_the_defaults_sample(data):
    """Every value PYG_ONLY accepts means what gsample does: the batches of the default."""
    ref = list(gp.NeighborLoader(data, [4, 2], batch_size=100, seed=3))
    for name, rule in gp.PYG_ONLY.items():
        for value in rule.accepted:
            got = gp.NeighborLoader(data, [4, 2], batch_size=100, seed=3, **{name: value})
            same_batches(got, ref)
    got = gp.NeighborLoader(
        data, [4, 2], batch_size=100, seed=3, subgraph_type=SubgraphType.directional
    )
    same_batches(got, ref)


def test_unknown_and_own_keywords_name_themselves(data):
    with pytest.raises(
        TypeError,
        match=r"NeighborLoader: unexpected keyword argument "
        r"'fanouts' \(neither",
    ):
        gp.NeighborLoader(data, [3], fanouts=[3])
    with pytest.raises(
        TypeError, match="NeighborLoader: unexpected keyword argument 'edge_label_index'"
    ):
        gp.NeighborLoader(data, [3], edge_label_index=data.edge_index)
    for name in ("dataset", "batch_sampler", "collate_fn"):
        with pytest.raises(TypeError, match=rf"NeighborLoader: {name} is not an argument"):
            gp.NeighborLoader(data, [3], **{name: None})
    # torch's own options still go to torch's DataLoader
    loader = gp.NeighborLoader(data, [3], batch_size=200, seed=0, timeout=0, pin_memory=False)
    assert len(list(loader)) == 3


def test_other_bad_arguments_name_themselves(data):
    cases = [
        ({"data": object()}, TypeError, "data: expected a torch_geometric Data"),
        ({"num_neighbors": {("a", "to", "a"): [3]}}, TypeError, "num_neighbors: a dict"),
        ({"transform": 3}, TypeError, "transform: must be callable"),
        ({"transform_sampler_output": "x"}, TypeError, "transform_sampler_output: must be"),
        ({"filter_per_worker": "yes"}, TypeError, "filter_per_worker"),
        ({"drop_last": 1}, TypeError, "drop_last"),
        ({"compile": None}, TypeError, "compile"),
        ({"batch_size": -2}, ValueError, "batch_size: must be >= 1, got -2"),
        ({"seed": 1.5}, TypeError, "seed: must be an int"),
        (
            {"input_nodes": torch.ones(N - 1, dtype=torch.bool)},
            ValueError,
            r"input_nodes: a boolean mask needs one entry per graph node, shape \(600,\)",
        ),
        (
            {"input_nodes": torch.arange(5), "input_id": torch.arange(4)},
            ValueError,
            r"input_id: expected one entry per input node, shape \(5,\)",
        ),
    ]
    for kwargs, error, message in cases:
        args = {"data": data, "num_neighbors": [3], **kwargs}
        with pytest.raises(error, match=message):
            gp.NeighborLoader(**args)


# ----------------------------------------------------------------------------- PyG's options
def test_filter_in_the_main_process_gives_the_same_batches(data):
    ref = list(gp.NeighborLoader(data, [4, 2], batch_size=150, shuffle=True, seed=2))
    main = gp.NeighborLoader(
        data, [4, 2], batch_size=150, shuffle=True, seed=2, filter_per_worker=False
    )
    same_batches(main, ref)
    workers = gp.NeighborLoader(
        data, [4, 2], batch_size=150, shuffle=True, seed=2, filter_per_worker=False, num_workers=2
    )
    same_batches(workers, ref)


def test_transform_sampler_output_runs_before_the_data_is_built(data):
    """Swapping each edge's ends in the SamplerOutput swaps them in the batch."""

    def flip(out):
        out.row, out.col = out.col, out.row
        return out

    ref = list(gp.NeighborLoader(data, [4, 2], batch_size=150, seed=2))
    got = list(
        gp.NeighborLoader(data, [4, 2], batch_size=150, seed=2, transform_sampler_output=flip)
    )
    for a, b in zip(got, ref, strict=True):
        assert torch.equal(a.edge_index, b.edge_index.flip(0))
        assert torch.equal(a.e_id, b.e_id)


def test_input_id_as_pyg_reports_it(data):
    mask = torch.zeros(N, dtype=torch.bool)
    mask[::7] = True
    for batch in gp.NeighborLoader(data, [2], input_nodes=mask, batch_size=30, seed=0):
        assert torch.equal(batch.input_id, batch.n_id[: batch.batch_size])  # PyG: node ids
    ids = torch.arange(100, 200)
    labels = torch.arange(1000, 1100)
    for i, batch in enumerate(
        gp.NeighborLoader(data, [2], input_nodes=ids, input_id=labels, batch_size=40, seed=0)
    ):
        assert torch.equal(batch.input_id, labels[i * 40 : (i + 1) * 40])


def test_loader_call_samples_the_given_positions(data):
    ids = torch.arange(50, 300)
    loader = gp.NeighborLoader(data, [3, 2], input_nodes=ids, batch_size=40, seed=9)
    a, b = loader([0, 7, 3]), loader(torch.tensor([0, 7, 3]))
    assert torch.equal(a.n_id[:3], ids[[0, 7, 3]]) and a.batch_size == 3
    assert torch.equal(a.e_id, b.e_id) and torch.equal(a.input_id, torch.tensor([0, 7, 3]))
    assert torch.equal(a.n_id[a.edge_index], data.edge_index[:, a.e_id])
    with pytest.raises(IndexError, match="index: node id 250 is out of range"):
        loader([250])
    assert repr(loader) == "NeighborLoader()"


def test_weighted_graph_values_become_edge_weight(data):
    A = gs.Matrix.from_pyg(data, weight="w")
    for batch in gp.NeighborLoader(data, [3, 2], batch_size=200, seed=0, graph=A):
        assert torch.equal(batch.edge_weight, data.w[batch.e_id])
    batch = next(iter(gp.NeighborLoader(data, [3, 2], batch_size=200, seed=0)))
    assert "edge_weight" not in batch


# ----------------------------------------------------------------------------- edge weights
def ladies_sampler(data, seed=4):
    ladies = example("ladies")
    A = ladies.normalize(gs.Matrix.from_pyg(data, weight=None))
    return gp.Sampler(A, functools.partial(ladies.ladies, layers=(60, 60)), seed=seed)


def expected_weights(sampler, seeds, key):
    """What ``Batch.to_pyg()`` gives for the mini-batch drawn with ``key``."""
    return gs.Batch(seeds=seeds, index=0, out=sampler.sample(seeds, key)).to_pyg()


@pytest.mark.parametrize("num_workers", [0, 2])
def test_importance_weights_reach_node_loader_batches(data, num_workers):
    sampler = ladies_sampler(data)
    train = torch.arange(0, N, 3)
    loader = NodeLoader(
        data,
        sampler,
        input_nodes=train,
        batch_size=64,
        transform=gp.with_edge_weight,
        num_workers=num_workers,
    )
    n = 0
    for batch in loader:
        seeds = batch.n_id[: batch.batch_size]
        ref = expected_weights(sampler, seeds, gp.batch_key(batch.input_id))
        assert torch.equal(batch.e_id, ref.e_id)
        assert torch.equal(batch.edge_index, ref.edge_index)
        assert batch.edge_weight.dtype.is_floating_point
        assert torch.equal(batch.edge_weight, ref.edge_weight)
        # LADIES normalises every kept column to sum to 1
        sums = torch.zeros(batch.num_nodes).index_add_(0, batch.edge_index[1], batch.edge_weight)
        assert torch.allclose(sums[sums > 0], torch.ones(1), atol=1e-5)
        n += 1
    assert n == len(loader) == 4


def test_sampler_output_metadata_carries_the_weights(data):
    sampler = ladies_sampler(data)
    seeds = torch.arange(10, 40)
    out = sampler.sample_from_nodes(NodeSamplerInput(input_id=torch.arange(30), node=seeds))
    ref = expected_weights(sampler, seeds, gp.batch_key(torch.arange(30)))
    assert len(out.metadata) == 3 and out.metadata[1] is None
    assert torch.equal(out.metadata[2], ref.edge_weight) and torch.equal(out.edge, ref.e_id)
    plain = gp.Sampler(data, functools.partial(gp.neighbor_sample, num_neighbors=(3,)), seed=0)
    assert plain.sample_from_nodes(NodeSamplerInput(None, seeds)).metadata[2] is None


def test_importance_weights_reach_link_loader_batches(data):
    sampler = ladies_sampler(data, seed=6)
    label_index = data.edge_index[:, :120]
    loader = LinkLoader(
        data,
        sampler,
        edge_label_index=label_index,
        batch_size=40,
        neg_sampling=NegativeSampling("binary"),
        transform=gp.with_edge_weight,
    )
    for batch in loader:
        seeds = batch.n_id[: batch.num_sampled_nodes[0]]
        ref = expected_weights(sampler, seeds, gp.batch_key(batch.input_id))
        assert torch.equal(batch.e_id, ref.e_id)
        assert torch.equal(batch.edge_weight, ref.edge_weight)


def test_unweighted_samplers_get_no_edge_weight(data):
    sampler = gp.Sampler(data, functools.partial(gp.neighbor_sample, num_neighbors=(3,)), seed=0)
    batch = next(iter(NodeLoader(data, sampler, batch_size=50, transform=gp.with_edge_weight)))
    assert "edge_weight" not in batch and batch.e_id.numel() > 0


def test_with_edge_weight_refuses_what_it_cannot_match(data, monkeypatch):
    # this process's record of recent batches starts empty: another test run in the same
    # process may have sampled a batch with the same input nodes
    monkeypatch.setattr(gp, "_RECENT", collections.OrderedDict())
    sampler = ladies_sampler(data)
    loader = NodeLoader(
        data,
        sampler,
        batch_size=64,
        transform=gp.with_edge_weight,
        filter_per_worker=False,
        num_workers=2,
    )
    with pytest.raises(
        RuntimeError,
        match=r"did not sample this mini-batch in this process.*filter_per_worker=True",
    ):
        next(iter(loader))

    def drop_one(out):
        out.row, out.col, out.edge = out.row[1:], out.col[1:], out.edge[1:]
        return out

    loader = NodeLoader(
        data,
        sampler,
        batch_size=64,
        transform=gp.with_edge_weight,
        transform_sampler_output=drop_one,
    )
    with pytest.raises(RuntimeError, match=r"the batch's edges \(e_id\) are not those"):
        next(iter(loader))
    with pytest.raises(TypeError, match="data: expected a mini-batch"):
        gp.with_edge_weight(Data(num_nodes=3))


def test_no_seeds_is_an_empty_epoch_as_in_pyg(data):
    for nodes in (torch.tensor([], dtype=torch.long), torch.zeros(N, dtype=torch.bool)):
        loader = gp.NeighborLoader(data, [3], input_nodes=nodes, batch_size=10)
        assert len(loader) == 0 and list(loader) == []


def test_a_graph_of_no_edge_and_zero_hops(data):
    """PyG's loaders take a ``Data`` without ``edge_index`` and ``num_neighbors=[]``: the
    seeds alone."""
    for graph, hops in ((Data(num_nodes=N), [3]), (data, [])):
        for batch in gp.NeighborLoader(graph, hops, batch_size=256, seed=0):
            assert torch.equal(batch.n_id, batch.n_id[: batch.batch_size])
            assert batch.e_id.numel() == 0 and batch.num_sampled_nodes[0] == batch.batch_size


# ----------------------------------------------------------------------------- tables
@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_sparse_attributes_pyg_cannot_slice_are_refused_up_front(data):
    coo = Data(edge_index=data.edge_index, x=data.x.to_sparse(), num_nodes=N)
    batch = next(iter(gp.NeighborLoader(coo, [3], batch_size=50, seed=0)))
    assert torch.equal(batch.x.to_dense(), data.x[batch.n_id])  # PyG slices COO
    csr = Data(edge_index=data.edge_index, x=data.x.to_sparse_csr(), num_nodes=N)
    with pytest.raises(
        TypeError,
        match=r"data\.x: a sparse tensor of layout "
        r"torch\.sparse_csr cannot be sliced",
    ):
        gp.NeighborLoader(csr, [3], batch_size=50)
    with pytest.raises(TypeError, match=r"data\.x: .*torch\.sparse_csr cannot be sliced"):
        gsample.pyg.LinkNeighborLoader(csr, [3], batch_size=50)  # the link loader's batches too


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_to_pyg_slices_a_sparse_table_as_pyg_does(data):
    A = gs.Matrix.from_pyg(data, weight=None)
    X = torch.randn(N, 5)
    X[X < 0.5] = 0
    seeds = torch.arange(20)
    gs.manual_seed(0)
    batch = gs.Batch(seeds=seeds, index=0, out=gp.neighbor_sample(A, seeds, (3,)))
    for table in (X.to_sparse(), X.to_sparse_csr()):
        x = batch.to_pyg(x=table).x
        assert x.layout == torch.sparse_coo  # PyG's filter_data's layout
        assert torch.equal(x.to_dense(), X[batch.to_pyg().n_id])
