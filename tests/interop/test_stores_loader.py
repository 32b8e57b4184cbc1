"""``gsample.pyg.NeighborLoader`` / ``LinkNeighborLoader`` on PyG's remote-backend input,
``(FeatureStore, GraphStore)``: the graph read from every edge layout (COO, CSR, CSC), edge
ids as positions in the layout stored (PyG's ``edge_permutation``), features gathered from
the ``FeatureStore``, and batches equal to those of the same graph as a ``Data`` /
``HeteroData`` with the same seed."""

import pytest
import torch

pytest.importorskip("torch_geometric")
from test_hetero_loader import CITES, COUNTS, IN, REV_WRITES, WRITES, check_batch, hetero
from torch_geometric.data import Data, HeteroData
from torch_geometric.testing import MyFeatureStore, MyGraphStore

import gsample.pyg as gp
from gsample.interop.pyg import stores

N = 40


def layout_edges(edge_index: torch.Tensor, layout: str, size: tuple) -> tuple:
    """``edge_index`` stored in ``layout``: ``(what put_edge_index takes, the COO edge_index
    in the stored order)``."""
    if layout == "coo":
        return (edge_index[0], edge_index[1]), edge_index
    if layout == "csr":
        perm = torch.argsort(edge_index[0] * size[1] + edge_index[1])
        row, col = edge_index[:, perm]
        ptr = torch.cat(
            [torch.zeros(1, dtype=torch.long), torch.bincount(row, minlength=size[0]).cumsum(0)]
        )
        return (ptr, col), edge_index[:, perm]
    perm = torch.argsort(edge_index[1] * size[0] + edge_index[0])
    row, col = edge_index[:, perm]
    ptr = torch.cat(
        [torch.zeros(1, dtype=torch.long), torch.bincount(col, minlength=size[1]).cumsum(0)]
    )
    return (row, ptr), edge_index[:, perm]


def homogeneous(layout: str = "coo"):
    g = torch.Generator().manual_seed(1)
    ei = torch.randint(0, N, (2, 240), generator=g)
    x, y = torch.randn(N, 3, generator=g), torch.randint(0, 4, (N,), generator=g)
    fs, gs_ = MyFeatureStore(), MyGraphStore()
    fs.put_tensor(x, group_name=None, attr_name="x", index=None)
    fs.put_tensor(y, group_name=None, attr_name="y", index=None)
    stored, order = layout_edges(ei, layout, (N, N))
    gs_.put_edge_index(edge_index=stored, edge_type=None, layout=layout, size=(N, N))
    return (fs, gs_), Data(x=x, y=y, edge_index=ei, num_nodes=N), order


def heterogeneous(layouts: dict | None = None):
    data = hetero(3)
    fs, gs_ = MyFeatureStore(), MyGraphStore()
    for t in data.node_types:
        fs.put_tensor(data[t].x, group_name=t, attr_name="x", index=None)
    orders = {}
    for et in data.edge_types:
        size = (COUNTS[et[0]], COUNTS[et[2]])
        layout = (layouts or {}).get(et, "coo")
        stored, orders[et] = layout_edges(data[et].edge_index, layout, size)
        gs_.put_edge_index(edge_index=stored, edge_type=et, layout=layout, size=size)
    return (fs, gs_), data, orders


# ----------------------------------------------------------------------------- homogeneous
def test_homogeneous_store_draws_the_data_batches():
    store, data, _ = homogeneous("coo")
    kw = {"batch_size": 8, "seed": 4, "shuffle": True}
    a = list(gp.NeighborLoader(data, [3, 2], **kw))
    b = list(gp.NeighborLoader(store, [3, 2], **kw))
    assert str(gp.NeighborLoader(store, [3, 2])) == "NeighborLoader()" and len(a) == len(b) == 5
    for x, y in zip(a, b):
        assert isinstance(y, Data)
        for key in ("n_id", "edge_index", "e_id", "input_id", "x", "y"):
            assert torch.equal(x[key], y[key]), key
        assert x.num_sampled_nodes == y.num_sampled_nodes and x.batch_size == y.batch_size


@pytest.mark.parametrize("layout", ["csr", "csc"])
def test_homogeneous_layouts_give_positions_in_the_stored_order(layout):
    store, data, order = homogeneous(layout)
    for batch in gp.NeighborLoader(store, [4, 3], batch_size=10, seed=2):
        glob = batch.n_id[batch.edge_index]
        assert torch.equal(glob, order[:, batch.e_id])  # e_id: a position in the layout
        assert torch.equal(batch.x, data.x[batch.n_id]) and torch.equal(batch.y, data.y[batch.n_id])
    # every in-edge (-1): the same edges as the Data's, whatever the layout
    for x, y in zip(
        gp.NeighborLoader(data, [-1, -1], batch_size=10),
        gp.NeighborLoader(store, [-1, -1], batch_size=10),
    ):
        assert torch.equal(x.n_id, y.n_id)
        ex = sorted(map(tuple, x.n_id[x.edge_index].t().tolist()))
        ey = sorted(map(tuple, y.n_id[y.edge_index].t().tolist()))
        assert ex == ey


def test_custom_cls_is_the_batch_class():
    class MyData(Data):
        pass

    store, _, _ = homogeneous()
    (batch, *_) = gp.NeighborLoader(store, [2], batch_size=20, custom_cls=MyData, seed=0)
    assert type(batch) is MyData


# ----------------------------------------------------------------------------- heterogeneous
def test_heterogeneous_store_draws_the_hetero_data_batches():
    store, data, _ = heterogeneous()
    kw = {"input_nodes": ("paper", torch.arange(0, 30, 2)), "batch_size": 6, "seed": 8}
    for x, y in zip(gp.NeighborLoader(data, [3, 2], **kw), gp.NeighborLoader(store, [3, 2], **kw)):
        for t in data.node_types:  # the stores' batch also says num_nodes (PyG's)
            assert y[t].num_nodes == x[t].num_nodes
        for et in data.edge_types:
            assert torch.equal(x[et].edge_index, y[et].edge_index)
            assert torch.equal(x[et].e_id, y[et].e_id)
        for t in data.node_types:
            assert torch.equal(x[t].n_id, y[t].n_id) and torch.equal(x[t].x, y[t].x)
        check_batch_stores(data, y)


def check_batch_stores(data, batch):
    """The structure check of ``test_hetero_loader`` (edge attributes are not in stores)."""
    for et in data.edge_types:
        batch[et].edge_attr = data[et].edge_attr[batch[et].e_id]
    seeds = batch["paper"].n_id[: batch["paper"].batch_size]
    check_batch(data, batch, "paper", seeds, [3, 2])


def test_heterogeneous_layouts_give_positions_in_the_stored_order():
    layouts = {WRITES: "csr", REV_WRITES: "csc", CITES: "coo", IN: "csc"}
    store, data, orders = heterogeneous(layouts)
    for batch in gp.NeighborLoader(store, [3, 2], input_nodes="paper", batch_size=10, seed=3):
        for et in data.edge_types:
            s, _, d = et
            glob = torch.stack(
                [batch[s].n_id[batch[et].edge_index[0]], batch[d].n_id[batch[et].edge_index[1]]]
            )
            assert torch.equal(glob, orders[et][:, batch[et].e_id])
        for t in data.node_types:
            assert torch.equal(batch[t].x, data[t].x[batch[t].n_id])


def test_heterogeneous_store_link_loader():
    store, data, _ = heterogeneous()
    kw = {"edge_label_index": CITES, "batch_size": 20, "neg_sampling": "binary", "seed": 1}
    torch.manual_seed(0)
    a = list(gp.LinkNeighborLoader(data, [2, 2], **kw))
    torch.manual_seed(0)
    b = list(gp.LinkNeighborLoader(store, [2, 2], **kw))
    assert len(a) == len(b) == 3
    for x, y in zip(a, b):
        for t in data.node_types:
            assert torch.equal(x[t].n_id, y[t].n_id) and torch.equal(x[t].x, y[t].x)
        for et in data.edge_types:
            assert torch.equal(x[et].edge_index, y[et].edge_index)
        assert torch.equal(x[CITES].edge_label_index, y[CITES].edge_label_index)
        assert torch.equal(x[CITES].edge_label, y[CITES].edge_label)


def test_as_data_reads_sizes_and_features():
    store, data, _ = heterogeneous({WRITES: "csr"})
    graph, join = stores.as_data(store)
    assert isinstance(graph, HeteroData) and callable(join)
    assert {t: graph[t].num_nodes for t in graph.node_types} == COUNTS
    for et in data.edge_types:
        if et != WRITES:
            assert torch.equal(graph[et].edge_index, data[et].edge_index)
    # no size: the feature store's rows (PyG's count), else the largest id + 1
    fs, gs_ = MyFeatureStore(), MyGraphStore()
    fs.put_tensor(torch.zeros(9), group_name="a", attr_name="x", index=None)
    gs_.put_edge_index(
        edge_index=(torch.tensor([0, 2]), torch.tensor([1, 4])),
        edge_type=("a", "to", "b"),
        layout="coo",
    )
    graph, _ = stores.as_data((fs, gs_))
    assert graph["a"].num_nodes == 9 and graph["b"].num_nodes == 5


# ----------------------------------------------------------------------------- refusals
def test_bad_stores_name_the_problem():
    store, _, _ = homogeneous()
    with pytest.raises(
        ValueError, match=r"weight_attr: a \(FeatureStore, GraphStore\) holds no edge attributes"
    ):
        gp.NeighborLoader(store, [2], weight_attr="w")
    with pytest.raises(
        TypeError, match=r"data: a \(FeatureStore, GraphStore\) of a homogeneous graph"
    ):
        gp.LinkNeighborLoader(store, [2], edge_label_index=torch.tensor([[0], [1]]))
    fs, empty = MyFeatureStore(), MyGraphStore()
    with pytest.raises(ValueError, match="data: the GraphStore holds no edge_index"):
        gp.NeighborLoader((fs, empty), [2])
    mixed = MyGraphStore()
    mixed.put_edge_index(
        edge_index=(torch.tensor([0]), torch.tensor([1])), edge_type=None, layout="coo", size=(2, 2)
    )
    mixed.put_edge_index(
        edge_index=(torch.tensor([0]), torch.tensor([1])),
        edge_type=("a", "to", "a"),
        layout="coo",
        size=(2, 2),
    )
    with pytest.raises(ValueError, match="data: the GraphStore mixes edges of no type"):
        gp.NeighborLoader((fs, mixed), [2])
    with pytest.raises(
        TypeError, match=r"data: expected a torch_geometric Data, a HeteroData or a \(FeatureStore"
    ):
        gp.NeighborLoader((object(), object()), [2])
    hstore, _, _ = heterogeneous()
    with pytest.raises(ValueError, match="input_nodes: a HeteroData needs"):
        gp.NeighborLoader(hstore, [2])
