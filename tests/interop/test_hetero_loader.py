"""``gsample.pyg.NeighborLoader`` / ``LinkNeighborLoader`` on a ``HeteroData``, against a
brute-force reference written here (every in-edge of every sampled node enumerated per edge
type), the sampling laws (chi-square goodness of fit at fixed seeds), the determinism
contract (same seed, any ``num_workers``, ``loader(index)``), the homogeneous loader
(a one-type ``HeteroData`` draws exactly what the compiled ``Data`` loader draws), PyG's
subgraph types, and the refusals."""

import itertools
import math

import pytest
import torch

import gsample as gs

pytest.importorskip("torch_geometric")
from scipy import stats
from torch_geometric.data import Data, HeteroData
from torch_geometric.loader import NodeLoader

import gsample.pyg as gp
from gsample.interop.pyg.hetero_loader import (
    HeteroBatches,
    HeteroSampler,
    fanouts,
    to_bidirectional,
)

WRITES = ("author", "writes", "paper")
REV_WRITES = ("paper", "rev_writes", "author")
CITES = ("paper", "cites", "paper")
IN = ("paper", "in", "venue")
COUNTS = {"author": 20, "paper": 30, "venue": 5}


def hetero(seed: int = 0) -> HeteroData:
    """Authors, papers and venues; ``writes`` and its reverse ``rev_writes`` (edge ``i`` of
    one is edge ``i`` of the other, reversed), ``cites`` (self-loops and parallel edges
    allowed), ``in``; ``edge_attr`` are distinct per edge type, ``x`` are the node ids."""
    g = torch.Generator().manual_seed(seed)
    data = HeteroData()
    for t, n in COUNTS.items():
        data[t].x = torch.arange(n) + 1000 * list(COUNTS).index(t)
    writes = torch.stack(
        [torch.randint(0, 20, (70,), generator=g), torch.randint(0, 30, (70,), generator=g)]
    )
    data[WRITES].edge_index = writes
    data[REV_WRITES].edge_index = writes.flip(0)
    data[CITES].edge_index = torch.randint(0, 30, (2, 60), generator=g)
    data[IN].edge_index = torch.stack([torch.arange(30), torch.randint(0, 5, (30,), generator=g)])
    for i, et in enumerate((WRITES, REV_WRITES, CITES, IN)):
        data[et].edge_attr = torch.arange(data[et].edge_index.shape[1]) + 10_000 * i
    return data


def split(values: torch.Tensor, counts: list) -> list:
    return list(torch.split(values, counts))


def check_batch(data: HeteroData, batch, input_type: str, seeds: torch.Tensor, ks: list):
    """The batch against the brute-force reference of PyG's hops: ``n_id`` (seeds first,
    then each hop's new nodes ascending, all distinct), every edge an edge of its relation
    (``e_id``, local ids, ``edge_attr``), and at hop ``h`` each node first reached at hop
    ``h - 1`` has exactly ``min(k, degree)`` distinct in-edges of each edge type, the
    others none."""
    num_hops = len(ks)
    parts = {}
    for t in data.node_types:
        n_id, counts = batch[t].n_id, batch[t].num_sampled_nodes
        assert len(counts) == num_hops + 1 and sum(counts) == n_id.numel()
        assert n_id.unique().numel() == n_id.numel()
        parts[t] = split(n_id, counts)
        for p in parts[t][1:]:
            assert torch.equal(p, p.sort().values)
        assert torch.equal(batch[t].x, data[t].x[n_id])
    assert torch.equal(parts[input_type][0], seeds)
    assert all(parts[t][0].numel() == 0 for t in data.node_types if t != input_type)
    assert batch[input_type].batch_size == seeds.numel()
    sources = [{t: set() for t in data.node_types} for _ in range(num_hops)]
    for et in data.edge_types:
        s, _, d = et
        store, full = batch[et], data[et].edge_index
        e_id = store.e_id
        assert torch.equal(store.edge_attr, data[et].edge_attr[e_id])
        glob = torch.stack([batch[s].n_id[store.edge_index[0]], batch[d].n_id[store.edge_index[1]]])
        assert torch.equal(glob, full[:, e_id])  # every edge is an edge of its relation
        hop_e_id = split(e_id, store.num_sampled_edges)
        hop_dst = split(glob[1], store.num_sampled_edges)
        for h in range(num_hops):
            frontier = set(parts[d][h].tolist())
            assert set(hop_dst[h].tolist()) <= frontier
            for v in frontier:
                in_edges = set(torch.nonzero(full[1] == v).view(-1).tolist())
                got = hop_e_id[h][hop_dst[h] == v].tolist()
                assert len(got) == len(set(got)) and set(got) <= in_edges
                want = len(in_edges) if ks[h] < 0 else min(ks[h], len(in_edges))
                assert len(got) == want, (et, h, v)
            sources[h][s] |= set(full[0, hop_e_id[h]].tolist())
    for h in range(num_hops):  # hop h's new nodes: its sources not reached before
        for t in data.node_types:
            before = set(torch.cat(parts[t][: h + 1]).tolist())
            assert parts[t][h + 1].tolist() == sorted(sources[h][t] - before)


def same(a, b) -> bool:
    """Two HeteroData batches hold the same tensors and values."""
    if a.node_types != b.node_types or a.edge_types != b.edge_types:
        return False
    for sa, sb in zip(a.stores, b.stores):
        if set(sa.keys()) != set(sb.keys()):
            return False
        for k in sa:
            x, y = sa[k], sb[k]
            if isinstance(x, torch.Tensor):
                if not torch.equal(x, y):
                    return False
            elif x != y:
                return False
    return True


# ----------------------------------------------------------------------------- structure
@pytest.mark.parametrize("ks", [[3, 2], [-1, 2], [2, 0, 3], []])
def test_batches_follow_pygs_hops(ks):
    data = hetero(1)
    input_nodes = torch.tensor([4, 0, 17, 9, 23, 11, 2])
    loader = gp.NeighborLoader(
        data, ks, input_nodes=("paper", input_nodes), batch_size=3, seed=7, shuffle=True
    )
    assert str(loader) == "NeighborLoader()" and len(loader) == 3
    seen = []
    for batch in loader:
        assert batch.input_type == "paper"
        seeds = input_nodes[batch["paper"].input_id]
        check_batch(data, batch, "paper", seeds, ks)
        seen += batch["paper"].input_id.tolist()
    assert sorted(seen) == list(range(7))
    short = gp.NeighborLoader(
        data, ks, input_nodes=("paper", input_nodes), batch_size=3, seed=7, drop_last=True
    )
    assert [b["paper"].batch_size for b in short] == [3, 3]


def test_replace_draws_k_per_node_with_repeats():
    data = hetero(2)
    (batch,) = gp.NeighborLoader(data, [6], input_nodes="venue", batch_size=5, replace=True, seed=0)
    ei, e_id = batch[IN].edge_index, batch[IN].e_id
    deg = torch.bincount(data[IN].edge_index[1], minlength=5)
    for v in range(5):
        got = e_id[batch["venue"].n_id[ei[1]] == v]
        assert got.numel() == (6 if deg[v] else 0)
        assert set(got.tolist()) <= set(
            torch.nonzero(data[IN].edge_index[1] == v).view(-1).tolist()
        )
    assert any(e_id[ei[1] == j].unique().numel() < 6 for j in range(5) if deg[j] > 0)


def test_num_neighbors_per_edge_type():
    data = hetero(3)
    ks = {WRITES: [2, 1], REV_WRITES: [0, 0], CITES: [-1, 1], IN: [1, 1]}
    (batch,) = gp.NeighborLoader(data, ks, input_nodes=("paper", [1, 5, 8]), batch_size=3, seed=1)
    assert batch[REV_WRITES].e_id.numel() == 0
    # the per-type fanouts, checked one edge type at a time against the same reference
    for et, k in ks.items():
        sub = HeteroData()
        for t in COUNTS:
            sub[t].x = data[t].x
        sub[et].edge_index, sub[et].edge_attr = data[et].edge_index, data[et].edge_attr
        hop_dst = split(batch[et].edge_index[1], batch[et].num_sampled_edges)
        for h, kh in enumerate(k):
            d = et[2]
            frontier = split(batch[d].n_id, batch[d].num_sampled_nodes)[h]
            for v in frontier.tolist():
                deg = int((data[et].edge_index[1] == v).sum())
                local = int(torch.nonzero(batch[d].n_id == v)[0, 0])
                want = deg if kh < 0 else min(kh, deg)
                assert int((hop_dst[h] == local).sum()) == want


def test_sampled_info_matches_pyg_example():
    """PyG's own ``test_hetero_neighbor_loader_sampled_info`` graph, counts by hand."""
    ei = torch.tensor([[2, 3, 4, 5, 7, 7, 10, 11, 12, 13], [0, 1, 2, 3, 2, 3, 7, 7, 7, 7]])
    data = HeteroData()
    data["paper"].num_nodes = data["author"].num_nodes = 14
    for et in (("paper", "to", "paper"), ("paper", "to", "author"), ("author", "to", "paper")):
        data[et].edge_index = ei
    (batch, *_) = gp.NeighborLoader(data, [1, 2, 4], input_nodes="paper", batch_size=2, seed=0)
    assert batch["paper"].num_sampled_nodes == [2, 2, 3, 4]
    assert batch["author"].num_sampled_nodes == [0, 2, 3, 4]
    assert batch["paper", "to", "paper"].num_sampled_edges == [2, 4, 4]
    assert batch["paper", "to", "author"].num_sampled_edges == [0, 4, 4]


def test_input_nodes_forms():
    data = hetero(4)
    mask = torch.zeros(30, dtype=torch.bool)
    mask[[3, 7, 20]] = True
    by_mask = next(iter(gp.NeighborLoader(data, [2], input_nodes=("paper", mask), batch_size=5)))
    assert by_mask["paper"].input_id.tolist() == [3, 7, 20]  # PyG: a mask's ids
    by_ids = next(
        iter(gp.NeighborLoader(data, [2], input_nodes=("paper", [3, 7, 20]), batch_size=5))
    )
    assert by_ids["paper"].input_id.tolist() == [0, 1, 2]
    assert by_ids["paper"].n_id[:3].tolist() == [3, 7, 20]
    for form in ("venue", ("venue", None)):
        loader = gp.NeighborLoader(data, [2], input_nodes=form, batch_size=2)
        assert len(loader) == 3
        assert torch.cat(
            [b["venue"].n_id[: b["venue"].batch_size] for b in loader]
        ).tolist() == list(range(5))
    given = next(
        iter(
            gp.NeighborLoader(
                data,
                [2],
                input_nodes=("paper", [3, 7]),
                input_id=torch.tensor([9, 8]),
                batch_size=2,
            )
        )
    )
    assert given["paper"].input_id.tolist() == [9, 8]


# ----------------------------------------------------------------------------- laws
def star(weights=None) -> HeteroData:
    """One item with five user in-edges (``users`` 0..4), optionally weighted."""
    data = HeteroData()
    data["user"].num_nodes, data["item"].num_nodes = 5, 1
    data["user", "buys", "item"].edge_index = torch.stack(
        [torch.arange(5), torch.zeros(5, dtype=torch.long)]
    )
    if weights is not None:
        data["user", "buys", "item"].w = torch.tensor(weights, dtype=torch.float)
    return data


def draws(data, k, m, **kw) -> list:
    """The sampled edge ids of ``m`` mini-batches of the one item (keys 0..m-1)."""
    loader = gp.NeighborLoader(
        data,
        [k],
        input_nodes=("item", torch.zeros(m, dtype=torch.long)),
        batch_size=1,
        seed=11,
        **kw,
    )
    return [tuple(sorted(b["user", "buys", "item"].e_id.tolist())) for b in loader]


def test_uniform_without_replacement_is_uniform_over_k_subsets():
    m = 1200
    got = draws(star(), 2, m)
    subsets = list(itertools.combinations(range(5), 2))
    counts = [got.count(s) for s in subsets]
    assert sum(counts) == m
    p = stats.chisquare(counts).pvalue
    assert p > 1e-3, p  # p = 0.68 at this seed


def test_weighted_without_replacement_follows_sequential_draws():
    w = [1.0, 2.0, 3.0, 4.0, 0.0]
    m = 2500
    got = draws(star(w), 2, m, weight_attr="w")
    assert all(4 not in s for s in got)  # weight 0: never
    total = sum(w)
    pairs = list(itertools.combinations(range(4), 2))
    expected = [
        m * (w[a] / total * w[b] / (total - w[a]) + w[b] / total * w[a] / (total - w[b]))
        for a, b in pairs
    ]
    counts = [got.count(s) for s in pairs]
    assert sum(counts) == m and math.isclose(sum(expected), m)
    p = stats.chisquare(counts, expected).pvalue
    assert p > 1e-3, p  # p = 0.73 at this seed
    # the test tells the law from a near one: pairs in proportion to w_a * w_b
    near = [w[a] * w[b] for a, b in pairs]
    near = [m * x / sum(near) for x in near]
    assert stats.chisquare(counts, near).pvalue < 1e-2  # p = 5e-4 at this seed


def test_weighted_hop_all_keeps_positive_weights_only():
    data = star([1, 0, 2, 0, 5])
    (b,) = gp.NeighborLoader(data, [-1], input_nodes="item", weight_attr="w", seed=0)
    store = b["user", "buys", "item"]
    assert sorted(store.e_id.tolist()) == [0, 2, 4]
    # the weights stay an attribute, sliced by e_id (PyG's), not edge_weight
    assert torch.equal(store.w, data["user", "buys", "item"].w[store.e_id])
    assert "edge_weight" not in store


def test_graph_values_become_edge_weight():
    data = hetero(15)
    H = gs.HeteroGraph(
        {
            et: gs.Matrix.from_edge_index(
                data[et].edge_index, num_nodes=30, weight=data[et].edge_attr.float()
            )
            for et in data.edge_types
        },
        COUNTS,
    )
    kw = {"input_nodes": "paper", "batch_size": 10, "seed": 6}
    plain = list(gp.NeighborLoader(data, [3, 2], **kw))
    for a, b in zip(plain, gp.NeighborLoader(data, [3, 2], graph=H, **kw)):
        for et in data.edge_types:  # uniform draws all the same; the values as edge_weight
            assert torch.equal(a[et].e_id, b[et].e_id)
            assert torch.equal(b[et].edge_weight, data[et].edge_attr[b[et].e_id].float())
    (b, *_) = gp.NeighborLoader(data, [3, 2], graph=H, subgraph_type="bidirectional", **kw)
    assert "edge_weight" not in b[CITES]  # merged: no single edge, no value
    assert torch.equal(b[IN].edge_weight, data[IN].edge_attr[b[IN].e_id].float())


# ----------------------------------------------------------------------------- determinism
def test_same_seed_same_batches_any_workers():
    data = hetero(5)

    def batches(**kw):
        loader = gp.NeighborLoader(
            data, [3, 2], input_nodes="paper", batch_size=8, shuffle=True, seed=3, **kw
        )
        return [list(loader) for _ in range(2)]  # two epochs

    a, b = batches(), batches()
    c = batches(num_workers=2)
    for ea, eb, ec in zip(a, b, c):
        assert all(same(x, y) and same(x, z) for x, y, z in zip(ea, eb, ec))
    assert not all(same(x, y) for x, y in zip(a[0], a[1]))  # epochs draw anew
    other = gp.NeighborLoader(data, [3, 2], input_nodes="paper", batch_size=8, shuffle=True, seed=4)
    assert not all(same(x, y) for x, y in zip(a[0], list(other)))


def test_loader_call_gives_the_iterated_batch():
    data = hetero(6)
    loader = gp.NeighborLoader(data, [3, 2], input_nodes="paper", batch_size=8, seed=9)
    batches = list(loader)
    assert same(loader(torch.arange(8, 16)), batches[1])
    one = loader([5, 2])
    assert one["paper"].n_id[:2].tolist() == [5, 2] and one["paper"].input_id.tolist() == [5, 2]
    check_batch(data, one, "paper", torch.tensor([5, 2]), [3, 2])


@pytest.mark.parametrize("compile", [True, False])
def test_one_type_draws_what_the_compiled_homogeneous_loader_draws(compile):
    """A HeteroData of one node and one edge type is sampled by HeteroGraph, one step per
    hop (compiled, or eagerly); the ``Data`` loader runs the compiled ``neighbor_sample``:
    same seed, same batches (for fanouts >= 0: a ``-1`` hop takes a stream ordinal in the
    heterogeneous sampler only)."""
    g = torch.Generator().manual_seed(8)
    ei = torch.randint(0, 50, (2, 300), generator=g)
    d = Data(edge_index=ei, num_nodes=50, x=torch.arange(50))
    h = HeteroData()
    h["v"].x, h["v", "to", "v"].edge_index = torch.arange(50), ei
    kw = {"batch_size": 7, "seed": 5, "shuffle": True}
    a = list(gp.NeighborLoader(d, [3, 1, 2], **kw))
    b = list(gp.NeighborLoader(h, [3, 1, 2], input_nodes="v", compile=compile, **kw))
    assert len(a) == len(b) == 8
    for x, y in zip(a, b):
        assert torch.equal(x.n_id, y["v"].n_id) and x.num_sampled_nodes == y["v"].num_sampled_nodes
        assert torch.equal(x.edge_index, y["v", "to", "v"].edge_index)
        assert torch.equal(x.e_id, y["v", "to", "v"].e_id)


def test_graph_on_a_device_draws_the_cpu_batches(device):
    data = hetero(9)
    H = gs.HeteroGraph.from_pyg(data, weight=None).to(device)
    kw = {"input_nodes": "paper", "batch_size": 10, "seed": 2, "shuffle": True}
    cpu = list(gp.NeighborLoader(data, [3, 2], **kw))
    dev = list(gp.NeighborLoader(data, [3, 2], graph=H, **kw))
    for x, y in zip(cpu, dev):
        assert same(x, y)
        check_batch(data, y, "paper", y["paper"].n_id[: y["paper"].batch_size], [3, 2])


# ----------------------------------------------------------------------------- subgraph types
def test_induced_is_every_edge_between_sampled_nodes():
    data = hetero(10)
    kw = {"input_nodes": "paper", "batch_size": 6, "seed": 1}
    directional = list(gp.NeighborLoader(data, [2, 2], **kw))
    induced = list(gp.NeighborLoader(data, [2, 2], subgraph_type="induced", **kw))
    for a, b in zip(directional, induced):
        for t in data.node_types:
            assert torch.equal(a[t].n_id, b[t].n_id)
            assert "num_sampled_nodes" not in b[t]
        for et in data.edge_types:
            s, _, d = et
            ns, nd = set(b[s].n_id.tolist()), set(b[d].n_id.tolist())
            full = data[et].edge_index.tolist()
            want = [i for i, (u, v) in enumerate(zip(*full)) if u in ns and v in nd]
            assert sorted(b[et].e_id.tolist()) == want
            glob = torch.stack([b[s].n_id[b[et].edge_index[0]], b[d].n_id[b[et].edge_index[1]]])
            assert torch.equal(glob, data[et].edge_index[:, b[et].e_id])


def test_bidirectional_merges_each_type_with_its_reverse():
    data = hetero(11)
    kw = {"input_nodes": "paper", "batch_size": 6, "seed": 4}
    directional = list(gp.NeighborLoader(data, [2, 2], **kw))
    bi = list(gp.NeighborLoader(data, [2, 2], subgraph_type="bidirectional", **kw))

    def pairs(batch, et, flip=False):
        s, _, d = et
        g = torch.stack(
            [batch[s].n_id[batch[et].edge_index[0]], batch[d].n_id[batch[et].edge_index[1]]]
        )
        return set(map(tuple, (g.flip(0) if flip else g).t().tolist()))

    for a, b in zip(directional, bi):
        for t in data.node_types:
            assert torch.equal(a[t].n_id, b[t].n_id)
        union = pairs(a, WRITES) | pairs(a, REV_WRITES, flip=True)
        assert pairs(b, WRITES) == union and pairs(b, REV_WRITES) == {(y, x) for x, y in union}
        assert pairs(b, CITES) == pairs(a, CITES) | pairs(a, CITES, flip=True)
        for et in (WRITES, REV_WRITES, CITES):  # merged: no single edge id, PyG's
            assert "e_id" not in b[et] and "edge_attr" not in b[et]
            ei = b[et].edge_index
            assert ei.shape[1] == len(pairs(b, et))  # coalesced
            if et != REV_WRITES:  # by destination, then source; the rev_ type: flipped
                key = ei[1] * 1000 + ei[0]
                assert torch.equal(key, key.sort().values)
        assert torch.equal(b[REV_WRITES].edge_index, b[WRITES].edge_index.flip(0))
        assert pairs(b, IN) == pairs(a, IN)  # no reverse type: directional, with ids
        assert torch.equal(b[IN].e_id, a[IN].e_id)


def test_to_bidirectional_unique_reverse_and_warning():
    ab, ba, cc = ("a", "x", "b"), ("b", "y", "a"), ("c", "z", "d")
    t = lambda *v: torch.tensor(v)  # noqa: E731
    with pytest.warns(UserWarning, match="does not seem to have a reverse edge type"):
        row, col, edge = to_bidirectional(
            {ab: t(0, 1), ba: t(2), cc: t(0)},
            {ab: t(1, 1), ba: t(0), cc: t(0)},
            {ab: t(5, 6), ba: t(7), cc: t(8)},
        )
    assert list(zip(row[ab].tolist(), col[ab].tolist())) == [(0, 1), (1, 1), (0, 2)]
    assert list(zip(row[ba].tolist(), col[ba].tolist())) == [(1, 0), (2, 0), (1, 1)]
    assert edge[ab] is None and edge[ba] is None and edge[cc].tolist() == [8]


# ----------------------------------------------------------------------------- link loader
def test_link_loader_batches_hold_their_supervision_edges():
    data = hetero(12)
    label = data[WRITES].edge_index[:, :24]
    loader = gp.LinkNeighborLoader(
        data, [2, 2], edge_label_index=(WRITES, label), batch_size=8, neg_sampling="binary", seed=3
    )
    assert str(loader) == "LinkNeighborLoader()" and len(loader) == 3
    for batch in loader:
        store = batch[WRITES]
        pos = label[:, store.input_id]
        eli = store.edge_label_index
        glob = torch.stack([batch["author"].n_id[eli[0]], batch["paper"].n_id[eli[1]]])
        assert torch.equal(glob[:, :8], pos) and store.edge_label.tolist() == [1.0] * 8 + [0.0] * 8
        # the seeds are the endpoints, unique per type, first in n_id
        ends = {"author": glob[0].unique(), "paper": glob[1].unique()}
        for t, ids in ends.items():
            assert torch.equal(batch[t].n_id[: ids.numel()], ids)
            assert batch[t].num_sampled_nodes[0] == ids.numel()
        for et in data.edge_types:  # every sampled edge an edge of its relation
            s, _, d = et
            g = torch.stack(
                [batch[s].n_id[batch[et].edge_index[0]], batch[d].n_id[batch[et].edge_index[1]]]
            )
            assert torch.equal(g, data[et].edge_index[:, batch[et].e_id])


def test_link_loader_same_seed_same_batches():
    data = hetero(13)
    kw = {"edge_label_index": CITES, "batch_size": 16, "neg_sampling": "triplet", "shuffle": True}

    def batches(**more):
        torch.manual_seed(0)  # PyG's LinkLoader shuffles with torch's generator
        return list(gp.LinkNeighborLoader(data, [2, 1], seed=5, **kw, **more))

    a, b, c = batches(), batches(), batches(num_workers=2)
    assert all(same(x, y) and same(x, z) for x, y, z in zip(a, b, c))
    for batch in a:
        p = batch["paper"]
        eli = data[CITES].edge_index[:, batch[CITES].input_id]
        assert torch.equal(p.n_id[p.src_index], eli[0]) and torch.equal(
            p.n_id[p.dst_pos_index], eli[1]
        )


def test_hetero_sampler_in_pygs_node_loader():
    data = hetero(14)
    sampler = HeteroSampler(HeteroBatches(data, [3, 2]), seed=0, key=gp.batch_key)
    loader = NodeLoader(data, sampler, input_nodes=("paper", torch.arange(12)), batch_size=4)
    first = list(loader)
    assert all(same(x, y) for x, y in zip(first, list(loader)))  # unshuffled: same keys
    for batch in first:
        check_batch(data, batch, "paper", batch["paper"].n_id[:4], [3, 2])
    sampler.set_epoch(1)
    assert not all(same(x, y) for x, y in zip(first, list(loader)))


# ----------------------------------------------------------------------------- refusals
def test_induced_is_not_disjoint():
    """Disjoint and temporal sampling (tests/interop/test_hetero_temporal.py) grow one tree
    per seed: an induced subgraph (one per mini-batch) is refused, naming subgraph_type."""
    data = hetero(0)
    data["paper"].time = torch.zeros(30, dtype=torch.long)
    for kw in ({"disjoint": True}, {"time_attr": "time"}):
        with pytest.raises(ValueError, match=r"^subgraph_type: 'induced' subgraphs are not"):
            gp.NeighborLoader(data, [2], input_nodes="paper", subgraph_type="induced", **kw)
        link_kw = dict(kw)
        if "time_attr" in link_kw:
            link_kw["edge_label_time"] = torch.zeros(70, dtype=torch.long)
        with pytest.raises(ValueError, match=r"^subgraph_type: 'induced' subgraphs are not"):
            gp.LinkNeighborLoader(
                data, [2], edge_label_index=WRITES, subgraph_type="induced", **link_kw
            )


def test_bad_arguments_name_themselves():
    data = hetero(0)
    cases = [
        ({"input_nodes": None}, ValueError, "input_nodes: a HeteroData needs"),
        ({"input_nodes": torch.arange(3)}, TypeError, "input_nodes: for a HeteroData"),
        ({"input_nodes": "nope"}, ValueError, "input_nodes: 'nope' is not a node type"),
        ({"input_nodes": ("paper", [40])}, IndexError, "input_nodes"),
        ({"num_neighbors": {WRITES: [2]}}, ValueError, "Missing number of neighbors"),
        ({"num_neighbors": {("a", "b", "c"): [2]}}, ValueError, "Not all edge types"),
        (
            {"num_neighbors": {WRITES: [2], REV_WRITES: [2, 1], CITES: [1], IN: [1]}},
            ValueError,
            "hops must be the same across all",
        ),
        ({"num_neighbors": 3}, TypeError, "num_neighbors"),
        ({"num_neighbors": [2, -2]}, TypeError, "num_neighbors"),
        ({"weight_attr": "nothing"}, ValueError, "weight_attr: no edge type"),
        (
            {"graph": gs.Matrix.from_edge_index(torch.tensor([[0], [1]]))},
            TypeError,
            "graph: for a HeteroData",
        ),
        (
            {
                "graph": gs.HeteroGraph.from_pyg(hetero(0), weight=None).to("cpu"),
                "weight_attr": "w",
            },
            ValueError,
            "weight_attr: give",
        ),
    ]
    for kw, exc, match in cases:
        args = {"num_neighbors": [2], "input_nodes": "paper", **kw}
        with pytest.raises(exc, match=match):
            loader = gp.NeighborLoader(data, **args)
            next(iter(loader))
    other = HeteroData()
    other["paper"].num_nodes = 3
    other[CITES].edge_index = torch.tensor([[0], [1]])
    with pytest.raises(ValueError, match=r"graph: expected a gs\.HeteroGraph of the data's graph"):
        gp.NeighborLoader(data, [2], input_nodes="paper", graph=gs.HeteroGraph.from_pyg(other))
    bad = hetero(0)
    bad[CITES].w = -torch.ones(60)
    with pytest.raises(
        ValueError, match=r"weight_attr: data\[\('paper', 'cites', 'paper'\)\]\.w must be finite"
    ):
        gp.NeighborLoader(bad, [2], input_nodes="paper", weight_attr="w")
    no_edges = hetero(0)
    del no_edges[CITES].edge_index
    with pytest.raises(
        ValueError, match=r"data\[\('paper', 'cites', 'paper'\)\]: has no edge_index"
    ):
        gp.NeighborLoader(no_edges, [2], input_nodes="paper")
    adj = hetero(0)
    adj[CITES].adj_t = torch.eye(30).to_sparse()
    with pytest.raises(TypeError, match=r"adj_t: a relation stored as a sparse adjacency"):
        gp.NeighborLoader(adj, [2], input_nodes="paper")
    with pytest.raises(ValueError, match="edge_label_index: a heterogeneous graph needs"):
        gp.LinkNeighborLoader(data, [2])


def test_fanouts_reads_pygs_num_neighbors():
    from torch_geometric.sampler import NumNeighbors

    ets = [WRITES, CITES]
    assert fanouts([3, -1], ets) == ({WRITES: [3, -1], CITES: [3, -1]}, 2)
    assert fanouts(NumNeighbors({WRITES: [4]}, default=[0]), ets) == ({WRITES: [4], CITES: [0]}, 1)
    assert fanouts([], ets) == ({WRITES: [], CITES: []}, 0)
    assert fanouts([2], []) == ({}, 1)
