"""Disjoint and temporal sampling of heterogeneous graphs (``HeteroData`` and stores) and
typed negatives on the graph's device: ``gs.HeteroGraph.sample_disjoint``, gsample.pyg's
``NeighborLoader`` / ``LinkNeighborLoader`` with ``disjoint`` / ``time_attr`` /
``input_time`` / ``edge_label_time`` / ``temporal_strategy``, and ``NegativeSampler`` over two
node types.

Structure exactly against the brute-force reference of ``brute_force.py`` (every allowed
edge of every seed, hop and relation enumerated), laws by chi-square goodness-of-fit tests
at fixed seeds (p-values printed), the determinism contract (same seed, any
``num_workers``; each seed's tree is the tree it samples alone with its slot), strict
negatives never an edge, refusals named."""

import collections
import itertools

import pytest
import torch
from brute_force import allowed, check_hetero_batch, relation_graphs

pytest.importorskip("torch_geometric")
pytest.importorskip("scipy")

from scipy import stats
from torch_geometric.data import HeteroData
from torch_geometric.sampler import NegativeSampling
from torch_geometric.testing import MyFeatureStore, MyGraphStore

import gsample as gs
import gsample.pyg as gp
from gsample.base.random import batch_scope, op_key
from gsample.interop.pyg.hetero_loader import disjoint_layout
from gsample.interop.pyg.negatives import NEGATIVE_ORDINAL, NegativeSampler
from gsample.interop.pyg.temporal import TemporalSpec

A, P, V = "author", "paper", "venue"
WRITES = (A, "writes", P)
REV = (P, "rev_writes", A)
CITES = (P, "cites", P)
IN = (P, "in", V)
HAS = (V, "has", P)
COUNTS = {A: 25, P: 40, V: 6}
T = 30


def hetero(seed: int = 0, time: str | None = "node") -> HeteroData:
    """Authors, papers, venues. ``time="node"``: authors and papers have a time, venues
    none (so ``HAS``, whose sources are venues, samples without time); ``"edge"``: ``WRITES``,
    ``CITES`` and ``HAS`` have edge times, ``REV`` and ``IN`` none."""
    g = torch.Generator().manual_seed(seed)
    data = HeteroData()
    for i, (t, n) in enumerate(COUNTS.items()):
        data[t].x = torch.arange(n) + 1000 * i
    writes = torch.stack(
        [torch.randint(0, 25, (120,), generator=g), torch.randint(0, 40, (120,), generator=g)]
    )
    data[WRITES].edge_index = writes
    data[REV].edge_index = writes.flip(0)
    data[CITES].edge_index = torch.randint(0, 40, (2, 150), generator=g)
    venue = torch.stack([torch.arange(40), torch.randint(0, 6, (40,), generator=g)])
    data[IN].edge_index = venue
    data[HAS].edge_index = venue.flip(0)
    if time == "node":
        data[A].time = torch.randint(0, T, (25,), generator=g)
        data[P].time = torch.randint(0, T, (40,), generator=g)
    elif time == "edge":
        for et in (WRITES, CITES, HAS):
            data[et].time = torch.randint(0, T, (data[et].edge_index.shape[1],), generator=g)
    return data


def same(a, b) -> bool:
    """Two HeteroData batches hold the same tensors and values."""
    if a.node_types != b.node_types or a.edge_types != b.edge_types:
        return False
    for sa, sb in zip(a.stores, b.stores, strict=True):
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
@pytest.mark.parametrize("time", ["node", "edge", None])
@pytest.mark.parametrize("strategy", ["uniform", "last"])
@pytest.mark.parametrize("replace", [False, True])
def test_node_loader_trees_are_the_references(time, strategy, replace):
    """Every tree of every batch, relation by relation, against the reference: allowed at
    its seed's time (``time=None``: ``disjoint=True`` without time), ``min(k, #allowed)``
    distinct, the most recent for ``"last"``, each hop's new nodes the sources first reached
    by their seed; relations without a time sample without constraint."""
    if time is None and strategy == "last":
        pytest.skip("'last' needs times")
    data = hetero(1, time)
    seeds = torch.arange(0, 40, 2)
    times = torch.randint(0, T, (20,), generator=torch.Generator().manual_seed(2))
    kw = {"disjoint": True} if time is None else {"time_attr": "time"}
    if time == "edge":
        kw["input_time"] = times
    loader = gp.NeighborLoader(
        data,
        [3, 2],
        input_nodes=(P, seeds),
        batch_size=7,
        seed=3,
        replace=replace,
        temporal_strategy=strategy,
        **kw,
    )
    graphs = relation_graphs(data, None if time is None else "time")
    at = 0
    for batch in loader:
        B = batch[P].batch_size
        s = seeds[at : at + B]
        t = None
        if time == "edge":
            t = times[at : at + B].tolist()
            assert torch.equal(batch[P].seed_time, times[at : at + B])
        elif time == "node":
            t = data[P].time[s].tolist()
            assert "seed_time" not in batch[P]  # PyG: input_time only
        check_hetero_batch(
            batch, graphs, [(P, v) for v in s.tolist()], [3, 2], t, replace, strategy
        )
        for tt in data.node_types:
            assert torch.equal(batch[tt].x, data[tt].x[batch[tt].n_id])
        for et in data.edge_types:
            if time == "edge" and et in (WRITES, CITES, HAS):
                assert torch.equal(batch[et].time, data[et].time[batch[et].e_id])
        at += B
    assert at == 20


def test_pygs_single_link_semantics():
    """PyG's test_temporal_neighbor_loader_single_link, checked against the reference: seeds
    of a type without time at their input_time; a neighbour type whose times are later
    than every seed's contributes nothing."""
    data = HeteroData()
    for t in "abc":
        data[t].x = torch.arange(10)
    data["b"].time = torch.arange(0, 10)
    data["c"].time = torch.arange(1, 11)
    ident = torch.arange(10).view(1, -1).repeat(2, 1)
    for et in (("a", "to", "b"), ("b", "to", "a"), ("a", "to", "c"), ("c", "to", "a")):
        data[et].edge_index = ident
    times = torch.arange(10)
    loader = gp.NeighborLoader(
        data, [-1, -1], input_nodes="a", time_attr="time", input_time=times, batch_size=10
    )
    batch = next(iter(loader))
    assert (batch["a"].num_nodes, batch["b"].num_nodes, batch["c"].num_nodes) == (10, 10, 0)
    check_hetero_batch(
        batch,
        relation_graphs(data, "time"),
        [("a", v) for v in range(10)],
        [-1, -1],
        times.tolist(),
    )


def test_weighted_temporal_trees():
    """``weight_attr`` with ``time_attr``: weight-0 edges are never sampled (``e_id`` maps the
    kept edges back to the data's), every tree the reference's."""
    data = hetero(4, "node")
    g = torch.Generator().manual_seed(4)
    for et in (WRITES, CITES):
        e = data[et].edge_index.shape[1]
        data[et].w = torch.rand(e, generator=g) * (torch.rand(e, generator=g) > 0.3)
    loader = gp.NeighborLoader(
        data, [3, 2], input_nodes=P, time_attr="time", weight_attr="w", batch_size=13, seed=4
    )
    graphs = relation_graphs(data, "time")
    weight = {et: data[et].w.tolist() for et in (WRITES, CITES)}
    at = 0
    for batch in loader:
        s = list(range(at, at + batch[P].batch_size))
        check_hetero_batch(
            batch, graphs, [(P, v) for v in s], [3, 2], data[P].time[s].tolist(), weight=weight
        )
        for et in (WRITES, CITES):
            assert bool((batch[et].w > 0).all())
            assert torch.equal(batch[et].w, data[et].w[batch[et].e_id])
        at += len(s)


def test_bidirectional_keeps_the_trees():
    """``subgraph_type="bidirectional"`` with ``time_attr``: the nodes and PyG's ``batch`` of
    the directional batch, each merged edge type the union of both directions."""
    data = hetero(5, "node")
    kw = dict(input_nodes=P, time_attr="time", batch_size=8, seed=7)
    for one, two in zip(
        gp.NeighborLoader(data, [2, 2], **kw),
        gp.NeighborLoader(data, [2, 2], subgraph_type="bidirectional", **kw),
        strict=True,
    ):
        for t in data.node_types:
            assert torch.equal(one[t].n_id, two[t].n_id)
            assert torch.equal(one[t].batch, two[t].batch)
        pairs = torch.cat([one[WRITES].edge_index, one[REV].edge_index.flip(0)], 1)
        assert set(map(tuple, two[WRITES].edge_index.t().tolist())) == set(
            map(tuple, pairs.t().tolist())
        )


# ----------------------------------------------------------------------------- determinism
def test_each_seed_samples_what_it_samples_alone():
    """The determinism target of disjoint sampling: seed ``i`` of a batch (slots numbered
    across two seed types) samples the tree ``sample_disjoint`` gives for it alone with its
    slot as seed index, relation by relation, with times, weights and replacement."""
    data = hetero(6, "node")
    H = gs.HeteroGraph.from_pyg(data, weight=None)
    weights = {et: torch.rand(H.num_edges(et)) + 0.1 for et in H.edge_types}
    Hw = gs.HeteroGraph(
        {
            et: gs.Matrix.from_edge_index(data[et].edge_index, H.size, weight=weights[et])
            for et in H.edge_types
        },
        H.num_nodes_dict,
    )
    spec = TemporalSpec.of(data, time_attr="time")
    seeds = {P: torch.tensor([3, 9, 3, 17]), A: torch.tensor([0, 5, 5])}
    seed_time = {P: torch.tensor([10, 25, 29, 5]), A: torch.tensor([20, 1, 28])}
    order = [(t, j) for t in seeds for j in range(seeds[t].numel())]
    for graph, replace in ((H, False), (Hw, False), (H, True), (Hw, True)):
        et_time = spec.graph_time(graph)
        kw = dict(replace=replace, weighted=graph is Hw)
        with batch_scope(11, 4):
            whole = graph.sample_disjoint(seeds, [3, 2], seed_time, et_time, **kw)
        lay, batch = disjoint_layout(*whole, seeds, graph)
        for i, (t, j) in enumerate(order):
            one = {t: seeds[t][j : j + 1]}
            with batch_scope(11, 4):
                alone = graph.sample_disjoint(
                    one,
                    [3, 2],
                    {t: seed_time[t][j : j + 1]},
                    et_time,
                    seed_index={t: torch.tensor([i])},
                    **kw,
                )
            lay1, _ = disjoint_layout(*alone, one, graph)
            for nt in graph.node_types:
                assert torch.equal(lay.node[nt][batch[nt] == i], lay1.node[nt]), (i, nt)
            for et in graph.edge_types:
                mine = batch[et[2]][lay.edges[et][1]] == i
                assert torch.equal(lay.edges[et][2][mine], lay1.edges[et][2]), (i, et)


def test_same_seed_same_batches_whatever_num_workers():
    data = hetero(7, "node")
    kw = dict(input_nodes=P, time_attr="time", batch_size=9, shuffle=True, seed=5)
    a = list(gp.NeighborLoader(data, [3, 2], **kw))
    assert all(same(x, y) for x, y in zip(a, gp.NeighborLoader(data, [3, 2], **kw), strict=True))
    b = list(gp.NeighborLoader(data, [3, 2], num_workers=2, **kw))
    assert len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    c = list(gp.NeighborLoader(data, [3, 2], **{**kw, "seed": 6}))
    assert not all(same(x, y) for x, y in zip(a, c, strict=True))


def test_link_loader_same_seed_same_batches_whatever_num_workers():
    data = hetero(8, "node")
    label = data[WRITES].edge_index[:, :48]
    label_time = torch.maximum(data[A].time[label[0]], data[P].time[label[1]]) + 3
    kw = dict(
        edge_label_index=(WRITES, label),
        edge_label_time=label_time,
        time_attr="time",
        batch_size=12,
        neg_sampling=NegativeSampling("binary", 2),
        seed=2,
    )

    def batches(**more):
        torch.manual_seed(0)  # PyG's LinkLoader shuffles with torch's generator
        return list(gp.LinkNeighborLoader(data, [2, 2], shuffle=True, **kw, **more))

    a, b, c = batches(), batches(), batches(num_workers=2)
    assert all(same(x, y) and same(x, z) for x, y, z in zip(a, b, c, strict=True))


# ----------------------------------------------------------------------------- laws
def test_temporal_uniform_law_through_the_loader():
    """One paper as ``M`` seeds at one time: each tree's ``CITES`` draws (k = 2) are uniform
    over the 2-subsets of the edges allowed at that time (and never another edge)."""
    data = hetero(9, "node")
    g = relation_graphs(data, "time")[CITES]
    v, t, ok = next(
        (v, t, allowed(g, v, t))
        for v in range(40)
        for t in range(0, T, 2)
        if 5 <= len(allowed(g, v, t)) <= 7
    )
    M = 3000
    nn = {et: [2 if et == CITES else 0] for et in data.edge_types}
    loader = gp.NeighborLoader(
        data,
        nn,
        input_nodes=(P, torch.full((M,), v)),
        input_time=torch.full((M,), t),
        time_attr="time",
        batch_size=M,
        seed=9,
    )
    batch = next(iter(loader))
    draws = check_hetero_batch(batch, relation_graphs(data, "time"), [(P, v)] * M, nn, [t] * M)
    counts = collections.Counter(tuple(d) for (i, h, et, node), d in draws.items() if et == CITES)
    subsets = list(itertools.combinations(ok, 2))
    assert set(counts) <= set(subsets) and sum(counts.values()) == M
    p = stats.chisquare([counts[s] for s in subsets]).pvalue
    print(f"hetero temporal uniform (paper {v} at t={t}, d={len(ok)}, k=2, M={M}): p={p:.3g}")
    assert p > 1e-3


def _bipartite(seed=0, ns=7, nd=11, e=30):
    g = torch.Generator().manual_seed(seed)
    ei = torch.stack(
        [torch.randint(0, ns, (e,), generator=g), torch.randint(0, nd, (e,), generator=g)]
    )
    return ei, ns, nd


def test_typed_uniform_negatives_goodness_of_fit():
    """Binary negatives of an edge type between two node types: sources uniform over the
    source type's nodes, destinations over the destination type's, independently."""
    ei, ns, nd = _bipartite()
    neg = NegativeSampler(ei, (ns, nd))
    out = neg(torch.zeros(4000, dtype=torch.long), None, "binary", 5, key=op_key(3, 0, 0))
    assert out.src.shape == (20000,) and int(out.src.max()) < ns and int(out.dst.max()) < nd
    p_src = stats.chisquare(torch.bincount(out.src, minlength=ns).tolist()).pvalue
    p_dst = stats.chisquare(torch.bincount(out.dst, minlength=nd).tolist()).pvalue
    joint = torch.bincount(out.src * nd + out.dst, minlength=ns * nd).view(ns, nd)
    p_ind = stats.chi2_contingency(joint.numpy()).pvalue
    print(f"typed uniform negatives: src p={p_src:.3g}, dst p={p_dst:.3g}, indep. p={p_ind:.3g}")
    assert min(p_src, p_dst, p_ind) > 1e-3


def test_typed_degree_weighted_negatives_goodness_of_fit():
    """``dst_weight`` = in-degree over the destination type: ``P(v) = deg(v) / E``, a node of
    degree 0 never drawn; triplet negatives keep their positive's source."""
    ei, ns, nd = _bipartite(1)
    deg = torch.bincount(ei[1], minlength=nd).double()
    neg = NegativeSampler(ei, (ns, nd), dst_weight=deg)
    src = torch.arange(ns).repeat(800)
    out = neg(src, None, "triplet", 3, key=op_key(4, 0, 0))
    assert out.dst.shape == (src.numel(), 3) and torch.equal(out.src, src.view(-1, 1).expand(-1, 3))
    counts = torch.bincount(out.dst.reshape(-1), minlength=nd)
    assert int(counts[deg == 0].sum()) == 0
    live = deg > 0
    p = stats.chisquare(
        counts[live].tolist(), (deg[live] / deg.sum() * counts.sum()).tolist()
    ).pvalue
    print(f"typed degree-weighted negatives (nd={nd}, draws={int(counts.sum())}): p={p:.3g}")
    assert p > 1e-3


def test_typed_strict_negatives_follow_each_sources_law():
    """Strict triplet negatives of a typed edge type: for source ``u``, ``P(v) ∝ w(v)`` over
    the destinations ``u`` has no edge to; ``v == u`` is a pair of two types, allowed."""
    ei, ns, nd = _bipartite(2)
    w = torch.rand(nd, generator=torch.Generator().manual_seed(2), dtype=torch.float64) + 0.2
    neg = NegativeSampler(ei, (ns, nd), dst_weight=w, strict=True)
    u = 3
    out = neg(torch.full((6000,), u), None, "triplet", 1, key=op_key(5, 0, 0))
    assert not bool(neg.excluded(out.src.reshape(-1), out.dst.reshape(-1)).any())
    nbrs = set(ei[1, ei[0] == u].tolist())
    ok = [v for v in range(nd) if v not in nbrs]
    assert u in ok  # not a self-pair: other node types
    counts = torch.bincount(out.dst.reshape(-1), minlength=nd)
    assert int(counts[list(nbrs)].sum()) == 0
    exp = w[ok] / w[ok].sum() * counts.sum()
    p = stats.chisquare(counts[ok].tolist(), exp.tolist()).pvalue
    print(f"typed strict triplet negatives of source {u} ({len(ok)} allowed): p={p:.3g}")
    assert p > 1e-3


def test_typed_temporal_negatives_exist_at_their_time():
    """Temporal typed negatives: each endpoint among its own type's nodes existing at the
    positive's time (``node_time <= t``); a type without times is drawn without."""
    ei, ns, nd = _bipartite(3)
    g = torch.Generator().manual_seed(3)
    ts, td = torch.randint(0, 20, (ns,), generator=g), torch.randint(0, 20, (nd,), generator=g)
    time = torch.randint(int(max(ts.min(), td.min())), 20, (500,), generator=g)
    for times in ((ts, td), (None, td), (ts, None)):
        neg = NegativeSampler(ei, (ns, nd), node_time=times)
        out = neg(torch.zeros(500, dtype=torch.long), None, "binary", 2, time=time, key=9)
        t = time.repeat(2)
        ok = torch.ones_like(out.relaxed)
        if times[0] is not None:
            ok &= ts[out.src] <= t
        if times[1] is not None:
            ok &= td[out.dst] <= t
        assert bool((ok | out.relaxed).all()) and torch.equal(out.time, t)
        assert bool(ok[~out.relaxed].all())


# ----------------------------------------------------------------------------- link loader
@pytest.mark.parametrize("mode", ["binary", "triplet"])
@pytest.mark.parametrize("edge_type", [WRITES, CITES])
def test_temporal_link_batches(mode, edge_type):
    """PyG's temporal link layout on a heterogeneous graph: seeds first (disjoint: the
    endpoints and the negatives, numbered consecutively, the source type's first), ``batch``
    modulo the positives, every node of a timed type no later than its tree's time (the
    negatives' are their positive's), negatives existing at their time."""
    data = hetero(10, "node")
    label = data[edge_type].edge_index[:, :40]
    s, _, d = edge_type
    label_time = torch.maximum(data[s].time[label[0]], data[d].time[label[1]]) + 2
    loader = gp.LinkNeighborLoader(
        data,
        [2, 2],
        edge_label_index=(edge_type, label),
        edge_label_time=label_time,
        time_attr="time",
        neg_sampling=NegativeSampling(mode, 2),
        batch_size=8,
        seed=1,
    )
    for batch in loader:
        Pn = batch[edge_type].input_id.numel()
        if mode == "binary":
            t = batch[edge_type].edge_label_time
            eli = batch[edge_type].edge_label_index
            n_seeds = 3 * Pn
            assert torch.equal(t, label_time[batch[edge_type].input_id].repeat(3))
            if s == d:
                assert torch.equal(eli, torch.arange(2 * n_seeds).view(2, -1))
            else:
                assert torch.equal(eli, torch.arange(n_seeds).repeat(2, 1))
            src_glob = batch[s].n_id[eli[0]]
            dst_glob = batch[d].n_id[eli[1]]
            assert torch.equal(src_glob[:Pn], label[0, batch[edge_type].input_id])
            assert bool((data[s].time[src_glob] <= t).all())
            assert bool((data[d].time[dst_glob] <= t).all())
        else:
            t = batch[s].seed_time
            assert torch.equal(t, label_time[batch[edge_type].input_id])
            neg = batch[d].dst_neg_index
            first = 2 * Pn if s == d else Pn
            assert torch.equal(neg, torch.arange(first, first + 2 * Pn).view(2, Pn).t())
            assert bool((data[d].time[batch[d].n_id[neg]] <= t.view(-1, 1)).all())
        for nt in (A, P):  # every node no later than its tree's time
            assert bool((data[nt].time[batch[nt].n_id] <= t[:Pn][batch[nt].batch]).all())
        assert int(batch[P].batch.max()) < Pn and int(batch[A].batch.max()) < Pn


def test_disjoint_link_without_time_is_pygs_layout():
    """``disjoint=True`` without time (PyG's triplet test's disjoint case): seeds first,
    ``batch`` increasing by ``B`` blocks, the triplet indices PyG's."""
    data = hetero(11, None)
    label = data[CITES].edge_index[:, :40]
    B = 10
    loader = gp.LinkNeighborLoader(
        data,
        [-1, -1],
        edge_label_index=(CITES, label),
        disjoint=True,
        neg_sampling=dict(mode="triplet", amount=2),
        batch_size=B,
        shuffle=True,
        seed=0,
    )
    for batch in loader:
        p = batch[P]
        assert torch.equal(p.src_index, torch.arange(B))
        assert torch.equal(p.dst_pos_index, torch.arange(B, 2 * B))
        assert torch.equal(p.dst_neg_index, torch.arange(2 * B, 4 * B).view(2, B).t())
        assert torch.equal(p.batch[: 4 * B], torch.arange(4 * B) % B)
        assert torch.equal(p.n_id[p.src_index], label[0, batch[CITES].input_id])


def test_link_negatives_are_gsamples_draws():
    """The loader's binary negatives are the typed sampler's draws under the mini-batch's
    key (``op_key(epoch seed, NEGATIVE_ORDINAL, i)`` for mini-batch ``i``, the epoch seed
    holding the supervision edges' hash, as on a ``Data``), on an edge type between two
    node types."""
    data = hetero(12, None)
    label = data[WRITES].edge_index[:, :30]
    ns = NegativeSampling("binary", 2, dst_weight=torch.rand(40) + 0.1)
    loader = gp.LinkNeighborLoader(
        data, [1], edge_label_index=(WRITES, label), neg_sampling=ns, batch_size=10, seed=4
    )
    sampler = loader.link_sampler
    neg = sampler.negative_sampler(loader.neg_sampling, WRITES)
    assert neg.num_nodes == (25, 40)
    for i, batch in enumerate(loader):
        ids = batch[WRITES].input_id
        key = op_key(loader.batches.epoch_seed, NEGATIVE_ORDINAL, i)
        want = neg(label[0, ids], label[1, ids], "binary", 2, key=key)
        eli = batch[WRITES].edge_label_index
        got_src, got_dst = batch[A].n_id[eli[0, 10:]], batch[P].n_id[eli[1, 10:]]
        assert torch.equal(got_src, want.src) and torch.equal(got_dst, want.dst)


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("mode", ["binary", "triplet"])
@pytest.mark.parametrize("edge_type", [WRITES, CITES])
def test_strict_negatives_are_never_edges(mode, edge_type, strict):
    """``strict=True``: no negative pair of a batch is an edge of the supervised type (nor,
    within one node type, a self-pair), whatever the graph's density; without it, PyG's law
    hits the edges (the control: the graph is dense enough for the check to bite)."""
    data = hetero(13, None)
    label = data[edge_type].edge_index
    s, _, d = edge_type
    edges = set(map(tuple, label.t().tolist()))
    loader = gp.LinkNeighborLoader(
        data,
        [1],
        edge_label_index=edge_type,
        neg_sampling={"mode": mode, "amount": 3, "strict": strict},
        batch_size=30,
        seed=6,
    )
    hits = total = 0
    for batch in loader:
        Pn = batch[edge_type].input_id.numel()
        if mode == "binary":
            eli = batch[edge_type].edge_label_index[:, Pn:]
            pairs = zip(batch[s].n_id[eli[0]].tolist(), batch[d].n_id[eli[1]].tolist())
        else:
            u = batch[s].n_id[batch[s].src_index].view(-1, 1).expand(-1, 3)
            v = batch[d].n_id[batch[d].dst_neg_index]
            pairs = zip(u.reshape(-1).tolist(), v.reshape(-1).tolist())
        for u, v in pairs:
            total += 1
            hits += (u, v) in edges or (s == d and u == v)
    print(f"strict={strict} {mode} negatives of {edge_type}: {hits} positive pairs of {total}")
    assert total > 0 and (hits == 0 if strict else hits > 0)


# ----------------------------------------------------------------------------- stores
def _stores(data, time_level: str):
    fs, gst = MyFeatureStore(), MyGraphStore()
    for t in data.node_types:
        fs.put_tensor(data[t].x, group_name=t, attr_name="x", index=None)
        if time_level == "node" and "time" in data[t]:
            fs.put_tensor(data[t].time, group_name=t, attr_name="time", index=None)
    for et in data.edge_types:
        size = (COUNTS[et[0]], COUNTS[et[2]])
        ei = data[et].edge_index
        gst.put_edge_index((ei[0], ei[1]), edge_type=et, layout="coo", size=size)
        if time_level == "edge" and "time" in data[et]:
            fs.put_tensor(data[et].time, group_name=et, attr_name="time", index=None)
    return fs, gst


@pytest.mark.parametrize("time", ["node", "edge"])
def test_stores_draw_the_hetero_data_batches(time):
    """``(FeatureStore, GraphStore)`` with ``time_attr``: the store's time tensors are read
    as PyG reads them (node- or edge-level by their group), and the batches are the
    ``HeteroData``'s."""
    data = hetero(14, time)
    kw = dict(input_nodes=P, time_attr="time", batch_size=11, seed=8)
    if time == "edge":
        kw["input_time"] = torch.randint(0, T, (40,), generator=torch.Generator().manual_seed(1))
    for a, b in zip(
        gp.NeighborLoader(data, [2, 2], **kw),
        gp.NeighborLoader(_stores(data, time), [2, 2], **kw),
        strict=True,
    ):
        for t in data.node_types:
            assert torch.equal(a[t].n_id, b[t].n_id) and torch.equal(a[t].batch, b[t].batch)
            assert torch.equal(a[t].x, b[t].x)
        for et in data.edge_types:
            assert torch.equal(a[et].e_id, b[et].e_id)


def test_stores_temporal_link_loader():
    data = hetero(15, "node")
    label = data[WRITES].edge_index[:, :24]
    label_time = torch.maximum(data[A].time[label[0]], data[P].time[label[1]])
    kw = dict(
        edge_label_index=(WRITES, label),
        edge_label_time=label_time,
        time_attr="time",
        neg_sampling="binary",
        batch_size=8,
        seed=3,
    )
    a = list(gp.LinkNeighborLoader(data, [2], **kw))
    b = list(gp.LinkNeighborLoader(_stores(data, "node"), [2], **kw))
    for x, y in zip(a, b, strict=True):
        for t in (A, P):
            assert torch.equal(x[t].n_id, y[t].n_id) and torch.equal(x[t].batch, y[t].batch)
        assert torch.equal(x[WRITES].edge_label_index, y[WRITES].edge_label_index)


# ----------------------------------------------------------------------------- refusals
def test_refusals_name_their_argument():
    data = hetero(0, "node")
    both = hetero(0, "node")
    both[CITES].time = torch.zeros(150, dtype=torch.long)
    with pytest.raises(ValueError, match=r"^time_attr: The time attribute 'time' holds both"):
        gp.NeighborLoader(both, [2], input_nodes=P, time_attr="time")
    with pytest.raises(ValueError, match=r"^time_attr: the time attribute 'nope' is neither"):
        gp.NeighborLoader(data, [2], input_nodes=P, time_attr="nope")
    mixed = hetero(0, "node")
    mixed[A].time = mixed[A].time.double()
    with pytest.raises(TypeError, match=r"^time_attr: data's 'time' tensors mix integer"):
        gp.NeighborLoader(mixed, [2], input_nodes=P, time_attr="time")
    short = hetero(0, "node")
    short[A].time = short[A].time[:3]
    with pytest.raises(ValueError, match=r"time_attr \(data\['author'\]\.time\): expected one"):
        gp.NeighborLoader(short, [2], input_nodes=P, time_attr="time")
    with pytest.raises(ValueError, match=r"^input_time: temporal sampling needs .* 'venue'"):
        next(iter(gp.NeighborLoader(data, [2], input_nodes=V, time_attr="time")))
    edge = hetero(0, "edge")
    with pytest.raises(ValueError, match=r"^input_time: .* names an edge attribute"):
        next(iter(gp.NeighborLoader(edge, [2], input_nodes=P, time_attr="time")))
    with pytest.raises(ValueError, match=r"^input_time: expected one time per input node"):
        gp.NeighborLoader(data, [2], input_nodes=P, time_attr="time", input_time=torch.zeros(3))
    with pytest.raises(TypeError, match=r"^input_time: dtype torch\.float64 but"):
        gp.NeighborLoader(data, [2], input_nodes=P, time_attr="time", input_time=torch.zeros(40))
    with pytest.raises(ValueError, match="'input_time' is set while 'time_attr' is not set"):
        gp.NeighborLoader(data, [2], input_nodes=P, input_time=torch.zeros(40))
    with pytest.raises(ValueError, match="temporal_strategy: expected one of"):
        gp.NeighborLoader(data, [2], input_nodes=P, time_attr="time", temporal_strategy="x")
    with pytest.raises(ValueError, match=r"time_attr: the FeatureStore holds no tensor named"):
        gp.NeighborLoader(_stores(data, None), [2], input_nodes=P, time_attr="time")
    with pytest.raises(ValueError, match=r"^edge_label_time: expected one time per input"):
        gp.LinkNeighborLoader(
            data, [2], edge_label_index=WRITES, time_attr="time", edge_label_time=torch.zeros(5)
        )
    full = HeteroData()  # author 0 wrote every paper of positive weight: no strict negative
    full[A].num_nodes, full[P].num_nodes = 2, 3
    full[WRITES].edge_index = torch.tensor([[0, 0, 0, 1], [0, 1, 2, 0]])
    with pytest.raises(ValueError, match=r"^neg_sampling: strict triplet negatives: node 0 of"):
        gp.LinkNeighborLoader(
            full, [1], edge_label_index=WRITES, neg_sampling={"mode": "triplet", "strict": True}
        )
    with pytest.raises(ValueError, match=r"num_nodes: an int, or a pair"):
        NegativeSampler(torch.zeros(2, 0, dtype=torch.long), (2, 3, 4))
    with pytest.raises(TypeError, match=r"node_time: for a typed graph"):
        NegativeSampler(torch.zeros(2, 0, dtype=torch.long), (2, 3), node_time=torch.zeros(2))
    with pytest.raises(IndexError, match=r"graph\[1\]"):
        NegativeSampler(torch.tensor([[0], [3]]), (2, 3))
    with pytest.raises(ValueError, match=r"dst_weight: expected one weight per node, shape \(3,\)"):
        NegativeSampler(torch.tensor([[0], [1]]), (2, 3), dst_weight=torch.ones(2))


def test_sample_disjoint_refusals():
    H = gs.HeteroGraph.from_pyg(hetero(0, None), weight=None)
    seeds = {P: torch.tensor([1, 2])}
    et_time = {CITES: torch.zeros(150, dtype=torch.long)}
    with pytest.raises(ValueError, match=r"^seed_time: temporal sampling \(edge_time\) needs"):
        H.sample_disjoint(seeds, [2], edge_time=et_time)
    with pytest.raises(ValueError, match=r"^seed_time\['paper'\]: expected one time per seed"):
        H.sample_disjoint(seeds, [2], {P: torch.tensor([1])}, et_time)
    with pytest.raises(ValueError, match=r"^seed_time: no time for the seeds of type 'author'"):
        H.sample_disjoint({**seeds, A: torch.tensor([0])}, [2], {P: torch.tensor([1, 2])}, et_time)
    with pytest.raises(ValueError, match=r"^strategy: must be one of"):
        H.sample_disjoint(seeds, [2], strategy="first")
    with pytest.raises(ValueError, match=r"^edge_time key: \('a', 'b', 'c'\) is not an edge"):
        H.sample_disjoint(seeds, [2], {P: torch.tensor([1, 2])}, {("a", "b", "c"): et_time[CITES]})
    with pytest.raises(ValueError, match=r"^node_time\['paper'\]: expected one time per node"):
        H.relation_times(node_time={P: torch.zeros(3)})
    with pytest.raises(ValueError, match=r"^edge_time\[\('paper', 'cites', 'paper'\)\]: expected"):
        H.relation_times(edge_time={CITES: torch.zeros(3)})


# ----------------------------------------------------------------------------- the device
@pytest.mark.cuda
def test_graph_on_the_device_draws_the_cpu_batches(device):
    """A ``gs.HeteroGraph`` on the GPU (``graph=``) samples the CPU's temporal batches, bit
    for bit, and its link loader's typed strict negatives are the CPU's."""
    data = hetero(16, "node")
    kw = dict(input_nodes=P, time_attr="time", batch_size=10, seed=2)
    H = gs.HeteroGraph.from_pyg(data, weight=None)
    for a, b in zip(
        gp.NeighborLoader(data, [3, 2], **kw),
        gp.NeighborLoader(data, [3, 2], graph=H.to(device), **kw),
        strict=True,
    ):
        assert same(a, b)
    ei, ns, nd = _bipartite(4)
    cpu = NegativeSampler(ei, (ns, nd), strict=True)
    dev = NegativeSampler(ei.to(device), (ns, nd), strict=True)
    src = torch.arange(ns).repeat(20)
    for mode in ("binary", "triplet"):
        x, y = cpu(src, None, mode, 2, key=5), dev(src, None, mode, 2, key=5)
        assert torch.equal(x.src, y.src.cpu()) and torch.equal(x.dst, y.dst.cpu())
