"""``Batch.to_dgl`` (``gsample/output/dgl.py``). DGL does not import with torch >= 2.3, so
most tests inject a minimal fake ``dgl`` that records what ``create_block`` and ``graph`` are
called with (DGL's documented API) and check those arguments; the last test runs real DGL
where it imports."""

import functools
import itertools
import sys
import types

import pytest
import torch
from helpers import example

import gsample as gs
from gsample.interop.pyg.data import pyg_sample


class FakeGraph:
    """What the conversion touches on a DGL block or graph: the feature dicts."""

    def __init__(self, kind, edges, **kwargs):
        self.kind, self.edges, self.kwargs = kind, edges, kwargs
        self.srcdata, self.dstdata, self.edata, self.ndata = {}, {}, {}, {}


@pytest.fixture
def fake_dgl(monkeypatch):
    dgl = types.ModuleType("dgl")
    dgl.NID, dgl.EID = "_ID", "_ID"
    dgl.calls = []

    def create_block(
        data_dict,
        num_src_nodes=None,
        num_dst_nodes=None,
        idtype=None,
        device=None,
        node_count_check=True,
    ):
        block = FakeGraph(
            "block", data_dict, num_src_nodes=num_src_nodes, num_dst_nodes=num_dst_nodes
        )
        dgl.calls.append(block)
        return block

    def graph(data, num_nodes=None, idtype=None, device=None):
        g = FakeGraph("graph", data, num_nodes=num_nodes)
        dgl.calls.append(g)
        return g

    dgl.create_block, dgl.graph = create_block, graph
    monkeypatch.setitem(sys.modules, "dgl", dgl)
    return dgl


def edge_table(A):
    r, c, e = A.edges()
    src, dst = torch.empty_like(r), torch.empty_like(c)
    src[e], dst[e] = r, c
    return src, dst


@pytest.mark.parametrize("name", ["graphsage", "ladies"])
def test_blocks_as_create_block_arguments(name, fake_dgl, small_graph):
    fn = {
        "graphsage": functools.partial(example("graphsage").graphsage, fanouts=(5, 4)),
        "ladies": functools.partial(example("ladies").ladies, layers=(100, 100)),
    }[name]
    A = example("ladies").normalize(small_graph) if name == "ladies" else small_graph
    seeds = torch.arange(0, 2000, 37)
    gs.manual_seed(0)
    mats = fn(A, seeds)
    X, y = torch.randn(2000, 3), torch.arange(2000)
    blocks = gs.Batch(seeds, 0, mats).to_dgl(x=X, y=y)
    assert blocks == fake_dgl.calls[::-1]  # DGL's order: the input layer first
    src_of, dst_of = edge_table(A)
    for block, m in zip(blocks[::-1], mats):
        u, v = block.edges  # (U, V): local source -> destination
        src, dst = block.srcdata["_ID"], block.dstdata["_ID"]
        assert block.kwargs == {"num_src_nodes": src.numel(), "num_dst_nodes": dst.numel()}
        assert torch.equal(dst, m.col_ids)  # the frontier
        assert torch.equal(src[: dst.numel()], dst)  # destinations first
        assert torch.equal(src, m.all_nodes())
        e = block.edata["_ID"]
        assert torch.equal(src[u], src_of[e]) and torch.equal(dst[v], dst_of[e])
        assert torch.equal(block.edata["edge_weight"], m.values)
    for outer, inner in itertools.pairwise(blocks):  # layers chain
        assert torch.equal(outer.dstdata["_ID"], inner.srcdata["_ID"])
    assert torch.equal(blocks[-1].dstdata["_ID"], seeds)
    assert torch.equal(blocks[0].srcdata["feat"], X[blocks[0].srcdata["_ID"]])
    assert torch.equal(blocks[-1].dstdata["label"], y[seeds])


def test_pyg_style_blocks_are_refused(fake_dgl, small_graph):
    seeds = torch.arange(0, 2000, 37)
    gs.manual_seed(0)
    mats = example("graphsage_pyg").graphsage_pyg(small_graph, seeds, (5, 4))
    with pytest.raises(ValueError, match=r"batch\.out: block 1's columns"):
        gs.Batch(seeds, 0, mats).to_dgl()
    assert fake_dgl.calls == []  # checked before any DGL call


def test_induced_subgraph_as_dgl_graph(fake_dgl, small_graph):
    seeds = torch.arange(0, 2000, 53)
    gs.manual_seed(0)
    out = example("shadow").shadow(small_graph, seeds, (5, 5))
    g = gs.Batch(seeds, 0, out).to_dgl()
    s = pyg_sample(out, seeds)  # the same nodes and edges as to_pyg
    assert g.kind == "graph" and g.kwargs == {"num_nodes": s.node.numel()}
    assert torch.equal(g.edges[0], s.row) and torch.equal(g.edges[1], s.col)
    assert torch.equal(g.ndata["_ID"], s.node) and torch.equal(g.edata["_ID"], s.edge)
    assert torch.equal(s.node[: len(seeds)], seeds)


def test_without_dgl_the_error_says_why(monkeypatch, small_graph):
    monkeypatch.setitem(sys.modules, "dgl", None)  # as if not installed: no spec, no module
    seeds = torch.arange(8)
    gs.manual_seed(0)
    batch = gs.Batch(seeds, 0, example("graphsage").graphsage(small_graph, seeds, (3,)))
    with pytest.raises(ImportError, match=r"to_dgl\(\) needs DGL, which is not installed"):
        batch.to_dgl()


def test_a_dgl_that_does_not_import_is_told_apart(monkeypatch, tmp_path, small_graph):
    """DGL 2.1 under torch >= 2.3 is installed but fails to load its graphbolt library (a
    FileNotFoundError, not an ImportError): the error says so instead of "not installed"."""
    (tmp_path / "dgl").mkdir()
    (tmp_path / "dgl" / "__init__.py").write_text(
        "raise FileNotFoundError('Cannot find DGL C++ graphbolt library')\n"
    )
    monkeypatch.delitem(sys.modules, "dgl", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    seeds = torch.arange(8)
    gs.manual_seed(0)
    batch = gs.Batch(seeds, 0, example("graphsage").graphsage(small_graph, seeds, (3,)))
    with pytest.raises(ImportError, match=r"installed but does not import.*FileNotFoundError"):
        batch.to_dgl()


def test_real_dgl(small_graph):
    dgl = pytest.importorskip("dgl", exc_type=ImportError)
    seeds = torch.arange(0, 2000, 37)
    gs.manual_seed(0)
    mats = example("graphsage").graphsage(small_graph, seeds, (5, 4))
    blocks = gs.Batch(seeds, 0, mats).to_dgl()
    assert all(b.is_block for b in blocks)
    for block, m in zip(blocks[::-1], mats):
        assert block.num_dst_nodes() == m.shape[1] and block.num_edges() == m.num_edges
        src = block.srcdata[dgl.NID]
        assert torch.equal(src[: block.num_dst_nodes()], block.dstdata[dgl.NID])
        u, v, e = block.edges(form="all", order="eid")
        r, c, eid = m.edges()
        assert torch.equal(src[u], r) and torch.equal(block.dstdata[dgl.NID][v], c)
        assert torch.equal(block.edata[dgl.EID][e], eid)


def test_real_dgl_layers_run_on_the_blocks(small_graph):
    """DGL's own SAGEConv over the blocks equals the mean aggregation computed from the
    sampled edges by hand (destinations read their own features at ``h[:num_dst]``)."""
    dgl = pytest.importorskip("dgl", exc_type=ImportError)
    from dgl.nn import SAGEConv

    seeds = torch.arange(0, 2000, 37)
    gs.manual_seed(0)
    mats = example("graphsage").graphsage(small_graph, seeds, (4, 3))
    X = torch.randn(2000, 5)
    blocks = gs.Batch(seeds, 0, mats).to_dgl(x=X)
    torch.manual_seed(0)
    convs = [SAGEConv(5, 5, "mean"), SAGEConv(5, 5, "mean")]
    h = blocks[0].srcdata["feat"]
    ref = {int(v): X[v] for v in blocks[0].srcdata[dgl.NID]}
    for conv, block, m in zip(convs, blocks, mats[::-1]):
        h = conv(block, h)
        r = m.edges()[0]
        new = {}
        for j, v in enumerate(m.col_ids.tolist()):
            nbrs = r[m.csc.edge_cols() == j].tolist()
            mean = torch.stack([ref[u] for u in nbrs]).mean(0) if nbrs else torch.zeros(5)
            bias = getattr(conv, "bias", None)  # a parameter in some versions
            new[v] = conv.fc_self(ref[v]) + conv.fc_neigh(mean) + (0 if bias is None else bias)
        ref = new
        torch.testing.assert_close(h, torch.stack([ref[v] for v in m.col_ids.tolist()]))
    assert h.shape == (len(seeds), 5)
