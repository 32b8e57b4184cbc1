"""``Batch.to_pyg`` / ``to_sampler_output`` (``gsample/output/pyg.py``): the mapping of every
sampler shape onto PyG's node-level mini-batch, checked against the graph's edge table, PyG's
``trim_to_layer`` and a PyG model, and the no-double-counting rule over a Cora epoch."""

import functools

import numpy as np
import pytest
import torch
from conftest import DATA
from helpers import example

import gsample as gs

pytest.importorskip("torch_geometric")
from torch_geometric.data import Data
from torch_geometric.nn import SAGEConv
from torch_geometric.sampler import SamplerOutput
from torch_geometric.utils import trim_to_layer

from gsample.interop.pyg.data import pyg_sample


# ----------------------------------------------------------------------------- graphs
def cora():
    """Cora, symmetrised, with its features and labels (``gs.datasets.cora``; skipped when
    absent)."""
    path = DATA / "cora.npz"
    if not path.exists():
        pytest.skip(f"{path} not present")
    return gs.datasets.cora(path)


def edge_table(A):
    """``(src, dst)`` of every original edge id of ``A``."""
    r, c, e = A.edges()
    src, dst = torch.empty_like(r), torch.empty_like(c)
    src[e], dst[e] = r, c
    return src, dst


def samplers():
    ladies = example("ladies")
    return {
        "graphsage": functools.partial(example("graphsage").graphsage, fanouts=(5, 5)),
        "graphsage_pyg": functools.partial(example("graphsage_pyg").graphsage_pyg, fanouts=(5, 5)),
        "ladies": functools.partial(ladies.ladies, layers=(256, 256)),
        "fastgcn": functools.partial(example("fastgcn").fastgcn, layers=(256, 256)),
        "shadow": functools.partial(example("shadow").shadow, fanouts=(5, 5)),
    }


def graph_for(name, A):
    return example("ladies").normalize(A) if name == "ladies" else A


def messages(data):
    """``(edge id, global destination)`` of every edge, as one int64 key."""
    return data.e_id * (data.n_id.max() + 1) + data.n_id[data.edge_index[1]]


# ----------------------------------------------------------------------------- Cora epoch
@pytest.mark.parametrize("name", ["graphsage", "graphsage_pyg", "ladies", "fastgcn", "shadow"])
def test_no_message_twice_over_a_cora_epoch(name):
    A, x, y = cora()
    A = graph_for(name, A)
    src_of, dst_of = edge_table(A)
    loader = gs.DataLoader(A, samplers()[name], torch.arange(A.num_nodes), 256, seed=0)
    total = 0
    for batch in loader:
        data = batch.to_pyg(x=x, y=y)
        key = messages(data)
        assert key.unique().numel() == key.numel(), f"batch {batch.index}: a message repeats"
        src, dst = data.n_id[data.edge_index]
        assert torch.equal(src_of[data.e_id], src) and torch.equal(dst_of[data.e_id], dst)
        assert torch.equal(data.n_id[: data.batch_size], batch.seeds)
        assert torch.equal(data.x, x[data.n_id]) and torch.equal(data.y, y[data.n_id])
        total += key.numel()
    assert total > 1000


def test_joining_dgl_style_blocks_would_repeat_messages():
    """The bug the mapping avoids: GraphSAGE's blocks concatenated as they are repeat
    ``(edge id, destination)`` pairs on Cora (the seeds are re-sampled at hop 2)."""
    A, _, _ = cora()
    loader = gs.DataLoader(A, samplers()["graphsage"], torch.arange(A.num_nodes), 256, seed=0)
    repeats = 0
    for batch in loader:
        triples = [m.edges() for m in batch.out]
        e = torch.cat([t[2] for t in triples])
        d = torch.cat([t[1] for t in triples])
        key = e * A.num_nodes + d
        repeats += key.numel() - key.unique().numel()
    assert repeats > 100


# ----------------------------------------------------------------------------- structure
def check_hops(data):
    """Hop ``h``'s edges point at nodes of hops ``< h`` from nodes of hops ``<= h``."""
    nodes = np.cumsum(data.num_sampled_nodes)
    edges = np.concatenate([[0], np.cumsum(data.num_sampled_edges)])
    assert nodes[-1] == data.num_nodes and edges[-1] == data.edge_index.shape[1]
    for h in range(1, len(data.num_sampled_nodes)):
        hop = data.edge_index[:, edges[h - 1] : edges[h]]
        assert bool((hop[1] < nodes[h - 1]).all()) and bool((hop[0] < nodes[h]).all())


@pytest.mark.parametrize("name", ["graphsage", "graphsage_pyg", "ladies", "fastgcn"])
def test_blocks_follow_pyg_hop_layout(name, small_graph, device):
    A = graph_for(name, small_graph.to(device))
    seeds = torch.randperm(A.num_nodes, generator=torch.Generator().manual_seed(3))[:64]
    gs.manual_seed(0)
    batch = gs.Batch(seeds.to(device), 0, samplers()[name](A, seeds.to(device)))
    data = batch.to_pyg()
    assert data.edge_index.device.type == device.type and data.batch_size == 64
    assert data.n_id.unique().numel() == data.num_nodes  # each node once
    check_hops(data)
    src_of, dst_of = edge_table(A)
    assert torch.equal(src_of[data.e_id], data.n_id[data.edge_index[0]])
    assert torch.equal(dst_of[data.e_id], data.n_id[data.edge_index[1]])
    out = batch.to_sampler_output()
    assert isinstance(out, SamplerOutput)
    assert torch.equal(torch.stack([out.row, out.col]), data.edge_index)
    assert torch.equal(out.node, data.n_id) and torch.equal(out.edge, data.e_id)
    assert out.num_sampled_nodes == data.num_sampled_nodes
    assert torch.equal(out.metadata[0], torch.arange(64, device=device))


def test_dgl_style_blocks_keep_exactly_the_first_sample_of_each_node(small_graph):
    """Brute force: hop 1 is all of block 0; hop 2 is block 1's columns that are not seeds."""
    seeds = torch.arange(0, 2000, 41)
    gs.manual_seed(0)
    blocks = samplers()["graphsage"](small_graph, seeds)
    s = pyg_sample(blocks, seeds)
    _, c0, e0 = blocks[0].edges()
    _, c1, e1 = blocks[1].edges()
    new = ~torch.isin(c1, seeds)
    assert s.num_sampled_edges == [e0.numel(), int(new.sum())]
    assert torch.equal(s.edge, torch.cat([e0, e1[new]]))
    assert torch.equal(s.node[s.col], torch.cat([c0, c1[new]]))
    # hop-1 nodes, ascending: exactly block 0's new rows (= block 1's new columns)
    hop1 = s.node[len(seeds) : len(seeds) + s.num_sampled_nodes[1]]
    assert torch.equal(hop1, blocks[1].col_ids[len(seeds) :])


def test_pyg_style_blocks_keep_every_sampled_edge(small_graph):
    seeds = torch.arange(0, 2000, 41)
    gs.manual_seed(0)
    blocks = samplers()["graphsage_pyg"](small_graph, seeds)
    s = pyg_sample(blocks, seeds)
    assert torch.equal(s.edge, torch.cat([m.edges()[2] for m in blocks]))
    offsets = np.cumsum(s.num_sampled_nodes)
    for h, _m in enumerate(blocks):  # hop h's new nodes are block h + 1's columns
        if h + 1 < len(blocks):
            assert torch.equal(s.node[offsets[h] : offsets[h + 1]], blocks[h + 1].col_ids)


def test_layer_wise_weights_become_edge_weight(small_graph):
    A = graph_for("ladies", small_graph)
    seeds = torch.arange(0, 2000, 23)
    gs.manual_seed(0)
    data = gs.Batch(seeds, 0, samplers()["ladies"](A, seeds)).to_pyg()
    assert data.edge_weight.shape == (data.edge_index.shape[1],)
    sums = torch.zeros(data.num_nodes, dtype=data.edge_weight.dtype)
    sums.index_add_(0, data.edge_index[1], data.edge_weight)
    has = torch.bincount(data.edge_index[1], minlength=data.num_nodes) > 0
    assert torch.allclose(sums[has], torch.ones(int(has.sum()), dtype=sums.dtype), atol=1e-5)


def test_trim_to_layer_gives_the_seeds_the_same_output(small_graph):
    """PyG's ``trim_to_layer`` only drops what cannot reach the seeds any more: with it, a
    3-layer SAGE model gives the seeds the outputs it gives without it."""
    A = gs.datasets.rmat(3000, 40000, seed=5)
    seeds = torch.arange(0, 3000, 37)
    gs.manual_seed(0)
    for name in ("graphsage", "graphsage_pyg"):
        fn = functools.partial(samplers()[name].func, fanouts=(4, 3, 2))
        data = gs.Batch(seeds, 0, fn(A, seeds)).to_pyg(x=torch.randn(3000, 8))
        torch.manual_seed(0)
        convs = torch.nn.ModuleList([SAGEConv(8, 8) for _ in range(3)])
        full, x, ei = data.x, data.x, data.edge_index
        for conv in convs:
            full = conv(full, data.edge_index).relu()
        for i, conv in enumerate(convs):
            x, ei, _ = trim_to_layer(i, data.num_sampled_nodes, data.num_sampled_edges, x, ei)
            x = conv(x, ei).relu()
        assert x.shape[0] >= data.batch_size
        torch.testing.assert_close(x[: data.batch_size], full[: data.batch_size])


def test_induced_subgraph(small_graph):
    seeds = torch.arange(0, 2000, 53)
    gs.manual_seed(0)
    sub, nodes = samplers()["shadow"](small_graph, seeds)
    data = gs.Batch(seeds, 0, (sub, nodes)).to_pyg()
    assert torch.equal(data.n_id, nodes) and data.batch_size == len(seeds)
    assert "num_sampled_nodes" not in data
    src_of, dst_of = edge_table(small_graph)
    inside = torch.isin(src_of, nodes) & torch.isin(dst_of, nodes)
    assert torch.equal(data.e_id.sort().values, inside.nonzero().view(-1))  # every edge once
    assert torch.equal(data.n_id[data.edge_index[0]], src_of[data.e_id])
    assert torch.equal(
        data.edge_weight, small_graph.values[torch.argsort(small_graph.edges()[2])][data.e_id]
    )
    out = gs.Batch(seeds, 0, (sub, nodes)).to_sampler_output()
    assert out.num_sampled_nodes is None


def test_features_from_the_batch_or_a_callable(small_graph):
    seeds = torch.arange(10)
    gs.manual_seed(0)
    batch = gs.Batch(seeds, 0, samplers()["graphsage"](small_graph, seeds))
    X, y = torch.randn(2000, 3), torch.arange(2000)
    batch.features, batch.labels = X, (lambda ids: y[ids] * 2)
    data = batch.to_pyg()
    assert torch.equal(data.x, X[data.n_id]) and torch.equal(data.y, 2 * y[data.n_id])
    assert torch.equal(batch.to_pyg(x=-X).x, -X[data.n_id])  # an argument wins


def test_bad_input_names_the_argument(small_graph):
    seeds = torch.arange(10)
    with pytest.raises(TypeError, match=r"batch\.out"):
        gs.Batch(seeds, 0, [torch.arange(3)]).to_pyg()
    gs.manual_seed(0)
    batch = gs.Batch(seeds, 0, samplers()["graphsage"](small_graph, seeds))
    with pytest.raises(ValueError, match="x: has 5 rows"):
        batch.to_pyg(x=torch.zeros(5, 2))
    with pytest.raises(TypeError, match="y: expected a tensor"):
        batch.to_pyg(y=[1, 2, 3])


def test_is_a_pyg_data_object(small_graph):
    seeds = torch.arange(10)
    gs.manual_seed(0)
    data = gs.Batch(seeds, 0, samplers()["graphsage"](small_graph, seeds)).to_pyg()
    assert isinstance(data, Data) and data.validate(raise_on_error=True)
