"""Heterogeneous graphs (``gs.HeteroGraph``, ``gsample/hetero/``; docs/catalogue.md #7).

Construction and its errors (each naming the argument), PyG's ``HeteroData`` both ways,
relation-typed neighbour sampling (structure, hops, determinism), metapath walks
(structure, node types, stops, restarts, the walker keys, eager == compiled) with
chi-square tests of a step's law, and ``to_pyg``'s ``HeteroData``. The example
``examples/metapath_walk.py`` provides the generated graph and the compiled sampler.
"""

import functools

import pytest
import scipy.stats as st
import torch
from helpers import example

import gsample as gs
from gsample.hetero import metapath_walk

P_MIN = 1e-3
WRITES = ("author", "writes", "paper")
WRITTEN_BY = ("paper", "written_by", "author")
PUBLISHED_IN = ("paper", "published_in", "venue")
PUBLISHES = ("venue", "publishes", "paper")
CITES = ("paper", "cites", "paper")
PAP = [WRITES, WRITTEN_BY]  # paper -> author -> paper (direction "in")


@pytest.fixture(scope="module")
def ex():
    return example("metapath_walk")


@pytest.fixture(scope="module")
def H(ex):
    """The example's academic graph plus a citation relation in which about a third of the
    papers cite nothing (dead ends for walks)."""
    base = ex.academic_graph(2000, 5000, 40, seed=3)
    g = torch.Generator().manual_seed(7)
    n = base.num_nodes("paper")
    citing = torch.randint(0, n, (6000,), generator=g)
    cited = torch.randint(0, n, (6000,), generator=g)
    keep = cited % 3 != 0  # papers 0, 3, 6, ... are never cited
    rels = {et: base[et] for et in base.edge_types}
    rels[CITES] = torch.stack([citing[keep], cited[keep]])  # citing -> cited: a paper's
    return gs.HeteroGraph(rels, base.num_nodes_dict)  # column holds its citers


def edge_keys(A):
    """Sorted ``src * N + dst`` of every edge of a relation matrix."""
    s, d, _ = A.edges()
    return torch.unique(s * A.num_nodes + d)


def is_edge(A, src, dst, keys=None):
    keys = edge_keys(A) if keys is None else keys
    return torch.isin(src * A.num_nodes + dst, keys)


def edge_table(A):
    """``(src, dst)`` per original edge id of a relation."""
    s, d, e = A.edges()
    rows, cols = torch.empty_like(s), torch.empty_like(d)
    rows[e], cols[e] = s, d
    return rows, cols


def in_degree(A):
    return A.csc.degrees()


# ----------------------------------------------------------------------------- construction
def small():
    writes = torch.tensor([[0, 0, 1, 2], [0, 1, 1, 3]])
    return gs.HeteroGraph(
        {("paper", "written_by", "author"): writes.flip(0), ("author", "writes", "paper"): writes},
        num_nodes={"paper": 5, "author": 3, "venue": 2},
    )


def test_construction_types_sizes_and_lookup():
    H = small()
    assert H.node_types == ["author", "paper", "venue"]
    assert H.edge_types == [WRITES, WRITTEN_BY]  # sorted, whatever the input order
    assert H.metadata() == (H.node_types, H.edge_types)
    assert H.num_nodes("paper") == 5 and H.num_nodes_dict == {"author": 3, "paper": 5, "venue": 2}
    assert H.size == 5 and H.num_edges(WRITES) == 4
    A = H[WRITES]
    assert A is H["writes"] and A.shape == (5, 5) and A.num_nodes == 5
    assert WRITES in H and "writes" in H and ("a", "b", "c") not in H
    s, d, e = A.edges()
    writes = torch.tensor([[0, 0, 1, 2], [0, 1, 1, 3]])
    assert torch.equal(writes[:, e], torch.stack([s, d]))  # edge ids: input positions
    assert torch.equal(A[:, torch.tensor([1])].row(), torch.tensor([0, 1]))  # authors of 1
    # a Matrix of any size >= its ids is resized to N, keeping edge ids and weights
    M = gs.Matrix.from_edge_index(writes, weight=torch.tensor([1.0, 2.0, 3.0, 4.0]))
    H2 = gs.HeteroGraph({WRITES: M}, num_nodes={"author": 3, "paper": 5})
    assert H2[WRITES].num_nodes == 5 and torch.equal(H2[WRITES].values, M.values)
    assert torch.equal(H2[WRITES].edges()[2], M.edges()[2])
    big = gs.Matrix.from_edge_index(writes, num_nodes=50)
    assert gs.HeteroGraph({WRITES: big}, {"author": 3, "paper": 5})[WRITES].num_nodes == 5
    assert "paper=5" in repr(H) and H.to("cpu").edge_types == H.edge_types


@pytest.mark.parametrize(
    "relations, num_nodes, exc, words",
    [
        ([1, 2], {"a": 1}, TypeError, "relations: expected a dict"),
        (
            {("a", "r"): torch.zeros(2, 0, dtype=torch.long)},
            {"a": 1},
            TypeError,
            "relations: keys must be (src_type, relation, dst_type)",
        ),
        (
            {("a", "r", "b"): torch.zeros(2, 0, dtype=torch.long)},
            {"a": 1},
            ValueError,
            "names node type 'b', which num_nodes does not list",
        ),
        ({}, [("a", 1)], TypeError, "num_nodes: expected a dict"),
        ({}, {"a": -1}, ValueError, "num_nodes['a']"),
        ({}, {"a": 1.5}, TypeError, "num_nodes['a']"),
        (
            {("a", "r", "b"): torch.tensor([[0, 2], [0, 0]])},
            {"a": 2, "b": 3},
            IndexError,
            "relations[('a', 'r', 'b')][0] (sources of type 'a'): node id 2 is out of range",
        ),
        (
            {("a", "r", "b"): torch.tensor([[0], [-1]])},
            {"a": 2, "b": 3},
            IndexError,
            "relations[('a', 'r', 'b')][1] (destinations of type 'b'): node id -1 is negative",
        ),
        (
            {("a", "r", "b"): torch.tensor([[0.0], [1.0]])},
            {"a": 2, "b": 3},
            TypeError,
            "relations[('a', 'r', 'b')]: an edge_index must be an integer tensor",
        ),
        (
            {("a", "r", "b"): torch.tensor([0, 1])},
            {"a": 2, "b": 3},
            ValueError,
            "relations[('a', 'r', 'b')]: an edge_index must have shape (2, E)",
        ),
        (
            {("a", "r", "b"): "edges"},
            {"a": 2, "b": 3},
            TypeError,
            "relations[('a', 'r', 'b')]: expected a gs.Matrix or an edge_index",
        ),
    ],
)
def test_construction_errors_name_the_argument(relations, num_nodes, exc, words):
    with pytest.raises(exc) as e:
        gs.HeteroGraph(relations, num_nodes)
    assert words in str(e.value)


def test_construction_errors_on_matrices():
    M = gs.Matrix.from_edge_index(torch.tensor([[0, 3], [1, 1]]), num_nodes=6)
    with pytest.raises(
        IndexError,
        match=r"relations\[\('a', 'r', 'b'\)\]: source id 3 is "
        r"out of range for node type 'a' \(2 nodes\)",
    ):
        gs.HeteroGraph({("a", "r", "b"): M}, {"a": 2, "b": 6})
    with pytest.raises(
        IndexError,
        match=r"destination id 1 is out of range for node type "
        r"'b' \(1 nodes\)",
    ):
        gs.HeteroGraph({("a", "r", "b"): M}, {"a": 6, "b": 1})
    with pytest.raises(ValueError, match=r"relations\[\('a', 'r', 'b'\)\]: a sub-matrix"):
        gs.HeteroGraph({("a", "r", "b"): M[:, torch.tensor([1])]}, {"a": 6, "b": 6})


def test_lookup_errors():
    H = gs.HeteroGraph(
        {("a", "r", "b"): torch.tensor([[0], [0]]), ("b", "r", "a"): torch.tensor([[0], [0]])},
        {"a": 1, "b": 1},
    )
    with pytest.raises(KeyError, match="relation 'r' names 2 edge types"):
        H["r"]
    with pytest.raises(KeyError, match="'s' is not an edge type"):
        H["s"]
    with pytest.raises(KeyError, match="node_type: 'c' is not a node type"):
        H.num_nodes("c")


# ----------------------------------------------------------------------------- PyG
def hetero_data():
    from torch_geometric.data import HeteroData

    g = torch.Generator().manual_seed(0)
    data = HeteroData()
    data["author"].x = torch.randn(30, 4, generator=g)
    data["paper"].num_nodes = 50
    ap = torch.stack(
        [torch.randint(0, 30, (200,), generator=g), torch.randint(0, 50, (200,), generator=g)]
    )
    data["author", "writes", "paper"].edge_index = ap
    data["paper", "written_by", "author"].edge_index = ap.flip(0)
    data["paper", "written_by", "author"].edge_weight = torch.rand(200, generator=g)
    data["paper", "cites", "paper"].edge_index = torch.randint(0, 50, (2, 80), generator=g)
    data["venue", "publishes", "paper"].edge_index = torch.tensor([[0, 1, 1], [4, 5, 49]])
    return data  # 'venue' has no count: max id + 1


def test_from_pyg_round_trip():
    data = hetero_data()
    H = gs.HeteroGraph.from_pyg(data)
    assert H.num_nodes_dict == {"author": 30, "paper": 50, "venue": 2}
    assert H.edge_types == sorted(data.edge_types)
    for et in data.edge_types:
        ei = data[et].edge_index
        s, d, e = H[et].edges()
        assert torch.equal(torch.sort(e).values, torch.arange(ei.shape[1]))
        assert torch.equal(ei[:, e], torch.stack([s, d]))  # eid = edge_index position
    w = data["paper", "written_by", "author"].edge_weight
    A = H["written_by"]
    assert torch.equal(A.values, w[A.edges()[2]])
    # and back: every in-edge of every node as one HeteroData gives the graph again
    seeds = {t: torch.arange(H.num_nodes(t)) for t in H.node_types}
    out = H.to_pyg(H.sample_neighbors(seeds, -1), seeds)
    for et in data.edge_types:
        s, _, d = et
        ei, eid = out[et].edge_index, out[et].e_id
        assert torch.equal(torch.sort(eid).values, torch.arange(data[et].edge_index.shape[1]))
        glob = torch.stack([out[s].n_id[ei[0]], out[d].n_id[ei[1]]])
        assert torch.equal(glob, data[et].edge_index[:, eid])
    assert torch.equal(out["written_by"].edge_weight, w[out["written_by"].e_id])
    assert H.to_pyg(H.sample_neighbors(seeds, -1), seeds, x={"author": data["author"].x})[
        "author"
    ].x.shape == (30, 4)


def test_from_pyg_errors():
    with pytest.raises(TypeError, match="data: expected a torch_geometric HeteroData"):
        gs.HeteroGraph.from_pyg(torch.zeros(2))
    data = hetero_data()
    data["paper"].num_nodes = 10
    with pytest.raises(
        IndexError,
        match=r"data\[\('author', 'writes', 'paper'\)\]"
        r"\.edge_index\[1\] \(destinations of type 'paper'\)",
    ):
        gs.HeteroGraph.from_pyg(data)
    data = hetero_data()
    data["paper", "written_by", "author"].edge_weight = torch.rand(200, 2)
    with pytest.raises(ValueError, match="weight: data"):
        gs.HeteroGraph.from_pyg(data)


# ----------------------------------------------------------------------------- neighbours
def seed_dict(H, n=64, seed=1):
    g = torch.Generator().manual_seed(seed)
    return {
        "paper": torch.randperm(H.num_nodes("paper"), generator=g)[:n],
        "author": torch.randperm(H.num_nodes("author"), generator=g)[: n // 2],
    }


def check_block(H, et, m, cols, k):
    """``m`` samples ``k`` in-edges of ``et`` per column ``cols``: all edges of ``et``."""
    s, _, d = et
    rows, dsts = edge_table(H[et])
    src, dst, eid = m.edges()
    assert torch.equal(rows[eid], src) and torch.equal(dsts[eid], dst)  # edges of et
    assert torch.equal(m.column(), cols)
    assert bool((src < H.num_nodes(s)).all()) and bool((dst < H.num_nodes(d)).all())
    counts = torch.bincount(m.csc.edge_cols(), minlength=cols.numel())
    deg = in_degree(H[et])[cols]
    assert torch.equal(counts, deg if k < 0 else deg.clamp(max=k))
    for c in range(cols.numel()):  # without replacement: distinct edges
        e = eid[m.csc.indptr[c] : m.csc.indptr[c + 1]]
        assert torch.unique(e).numel() == e.numel()


@pytest.mark.parametrize("k", [3, -1])
def test_sample_neighbors_structure(H, k):
    seeds = seed_dict(H)
    gs.manual_seed(0)
    out = H.sample_neighbors(seeds, k)
    assert list(out) == H.edge_types
    for et, m in out.items():
        d = et[2]
        if d in seeds:
            check_block(H, et, m, seeds[d], k)
        else:  # venues: no seeds, no columns
            assert m.shape == (H.size, 0) and m.num_edges == 0
    only = H.sample_neighbors({"paper": seeds["paper"]}, {"writes": 2, CITES: 1})
    assert list(only) == sorted([WRITES, CITES])
    check_block(H, WRITES, only[WRITES], seeds["paper"], 2)
    check_block(H, CITES, only[CITES], seeds["paper"], 1)


def test_sample_neighbors_weighted():
    """``weighted=True`` draws by the relation's weights: a zero-weight edge never comes."""
    ei = torch.tensor([[0, 1, 2, 0, 1], [0, 0, 0, 1, 1]])
    w = torch.tensor([1.0, 0.0, 3.0, 0.0, 2.0])
    H = gs.HeteroGraph({("a", "r", "b"): gs.Matrix.from_edge_index(ei, weight=w)}, {"a": 3, "b": 2})
    seeds = {"b": torch.tensor([0, 1] * 200)}
    gs.manual_seed(0)
    s = H.sample_neighbors(seeds, 1, weighted=True)[("a", "r", "b")]
    src, dst, eid = s.edges()
    assert not bool(torch.isin(eid, torch.tensor([1, 3])).any())
    assert bool((src[dst == 1] == 1).all())
    gs.manual_seed(0)
    uniform = H.sample_neighbors(seeds, 1)[("a", "r", "b")].edges()[2]
    assert bool(torch.isin(uniform, torch.tensor([1, 3])).any())


def test_sample_neighbors_hops_pyg_style(H):
    seeds = {"paper": seed_dict(H)["paper"]}
    empty = torch.zeros(0, dtype=torch.long)
    gs.manual_seed(0)
    hops = H.sample_neighbors(seeds, [3, 2])
    assert isinstance(hops, list) and len(hops) == 2
    first = {}
    for et, m in hops[0].items():  # hop 1: the seeds' in-edges
        check_block(H, et, m, seeds.get(et[2], empty), 3)
        if m.num_edges:
            first.setdefault(et[0], []).append(m.row())
    for et, m in hops[1].items():  # hop 2: the nodes first reached at
        t = et[2]  # hop 1, in ascending id order
        new = torch.unique(torch.cat(first[t])) if t in first else empty
        new = new[~torch.isin(new, seeds.get(t, empty))]
        assert new.numel() or t == "venue"
        check_block(H, et, m, new, 2)
    gs.manual_seed(0)
    pyg_form = H.sample_neighbors(seeds, {et: [3, 2] for et in H.edge_types})
    for a, b in zip(hops, pyg_form):
        assert samples_equal(a, b)


def samples_equal(a, b):
    return list(a) == list(b) and all(
        all(torch.equal(x, y) for x, y in zip(a[et].edges(), b[et].edges())) for et in a
    )


def test_sample_neighbors_deterministic(H):
    seeds = seed_dict(H)
    fan = {et: 4 for et in H.edge_types}
    gs.manual_seed(5)
    a = H.sample_neighbors(seeds, fan)
    gs.manual_seed(5)
    b = H.sample_neighbors(seeds, dict(reversed(list(fan.items()))))  # order of the dict
    assert samples_equal(a, b)
    gs.manual_seed(6)
    assert not samples_equal(a, H.sample_neighbors(seeds, fan))
    # one (hop, edge type), one op ordinal, with or without seeds: emptying the authors
    # leaves the paper relations' draws as they were
    gs.manual_seed(5)
    c = H.sample_neighbors({"paper": seeds["paper"], "author": seeds["author"][:0]}, fan)
    for et in H.edge_types:
        if et[2] == "paper":
            assert torch.equal(a[et].edges()[2], c[et].edges()[2])
        else:
            assert c[et].num_edges == 0


@pytest.mark.parametrize(
    "seeds, fanouts, exc, words",
    [
        (torch.arange(3), 2, TypeError, "seeds: expected a dict"),
        ({"journal": torch.arange(3)}, 2, ValueError, "seeds: 'journal' is not a node type"),
        (
            {"venue": torch.tensor([40])},
            2,
            IndexError,
            "seeds['venue']: node id 40 is out of range for a graph of 40 nodes",
        ),
        (
            {"paper": torch.tensor([0.5])},
            2,
            TypeError,
            "seeds['paper']: node ids must be an integer",
        ),
        (
            {"paper": torch.arange(3)},
            {"cited": 2},
            ValueError,
            "fanouts key: 'cited' is not an edge",
        ),
        ({"paper": torch.arange(3)}, -2, ValueError, "fanouts: a fanout must be >= 0, or -1"),
        ({"paper": torch.arange(3)}, 2.0, TypeError, "fanouts: a fanout must be an int"),
        ({"paper": torch.arange(3)}, [2, {"writes": "x"}], TypeError, "fanouts[1]["),
        (
            {"paper": torch.arange(3)},
            {"writes": [2, 2], "cites": [1]},
            ValueError,
            "fanouts: every edge type must list the same number of hops",
        ),
    ],
)
def test_sample_neighbors_errors(H, seeds, fanouts, exc, words):
    with pytest.raises(exc) as e:
        H.sample_neighbors(seeds, fanouts)
    assert words in str(e.value)


# ----------------------------------------------------------------------------- walks
def check_walks(H, walks, seeds, metapath, restart=None, direction="in"):
    """Every step an edge of its relation (or a restart to the root where allowed), every
    column in its node type, ``-1`` only after a stop, and stops only at dead ends."""
    types = H.path_types(metapath, direction)
    assert walks.shape == (seeds.numel(), len(metapath) + 1) and walks.dtype == torch.int64
    assert torch.equal(walks[:, 0], seeds)
    root = walks[:, 0]
    for t, et in enumerate(metapath):
        cur, nxt = walks[:, t], walks[:, t + 1]
        assert int(nxt.max()) < H.num_nodes(types[t + 1])
        assert bool((nxt[cur < 0] < 0).all())  # -1 after a stop
        live = (cur >= 0) & (nxt >= 0)
        A = H[et]
        src, dst = (nxt[live], cur[live]) if direction == "in" else (cur[live], nxt[live])
        ok = is_edge(A, src, dst)
        if restart is not None and restart[t] > 0:
            ok |= nxt[live] == root[live]
        assert bool(ok.all()), f"step {t}: a move that is not an edge of {et}"
        deg = (
            in_degree(A)
            if direction == "in"
            else torch.bincount(A.edges()[0], minlength=A.num_nodes)
        )
        stop = (cur >= 0) & (nxt < 0)
        assert bool((deg[cur[stop]] == 0).all())  # stops only at dead ends


def paper_seeds(H, n=512, seed=2):
    return torch.randint(
        0, H.num_nodes("paper"), (n,), generator=torch.Generator().manual_seed(seed)
    )


@pytest.mark.parametrize("restart", [0.0, 0.4])
def test_metapath_walk_structure(H, restart):
    mp = [WRITES, WRITTEN_BY, CITES, PUBLISHES, PUBLISHED_IN]
    assert H.path_types(mp) == ["paper", "author", "paper", "paper", "venue", "paper"]
    seeds = paper_seeds(H)
    gs.manual_seed(0)
    walks = H.metapath_walk(seeds, mp * 2, restart_prob=restart)
    probs = [restart if t == "paper" else 0.0 for t in H.path_types(mp * 2)[1:]]
    check_walks(H, walks, seeds, mp * 2, probs)
    assert bool((walks < 0).any())  # CITES' dead ends stop walks
    if restart:  # some steps went back to the root
        assert bool((walks[:, 3:] == walks[:, :1]).any())


def test_metapath_walk_direction_out(H):
    fwd = [WRITTEN_BY, WRITES, CITES]  # paper -> author -> paper -> cited
    assert H.path_types(fwd, "out") == ["paper", "author", "paper", "paper"]
    seeds = paper_seeds(H)
    gs.manual_seed(0)
    walks = H.metapath_walk(seeds, fwd, direction="out", restart_prob=0.2)
    check_walks(H, walks, seeds, fwd, [0.0, 0.2, 0.2], direction="out")
    # the reverse of written_by is writes edge for edge, so the first two steps are the
    # in-direction walks along PAP, draw for draw
    gs.manual_seed(0)
    ins = H.metapath_walk(seeds, PAP + [("paper", "cites", "paper")], restart_prob=0.2)
    assert torch.equal(walks[:, :3], ins[:, :3])
    R = H.reverse(CITES)  # cited papers, edge ids kept
    s, d, e = R.edges()
    rows, cols = edge_table(H[CITES])
    assert torch.equal(rows[e], d) and torch.equal(cols[e], s)
    gs.manual_seed(0)  # the DSL on reversed relations
    dsl = metapath_walk([H.reverse(et) for et in fwd], seeds, [0.0, 0.2, 0.2])
    assert torch.equal(dsl, walks)


def test_metapath_walk_errors(H):
    seeds = torch.arange(4)
    with pytest.raises(
        ValueError,
        match=r"metapath\[1\]: .* starts from node type 'paper', "
        r"but step 1 is at a node of type 'author'",
    ):
        H.metapath_walk(seeds, [WRITES, PUBLISHES])
    with pytest.raises(ValueError, match="these edge types chain with direction='out'"):
        H.metapath_walk(seeds, [WRITTEN_BY, WRITES, PUBLISHED_IN])
    with pytest.raises(ValueError, match=r"metapath\[0\]: 'cited' is not an edge type"):
        H.metapath_walk(seeds, ["cited"])
    with pytest.raises(ValueError, match="metapath: must name at least one edge type"):
        H.metapath_walk(seeds, [])
    with pytest.raises(TypeError, match="metapath: expected a list of edge types"):
        H.metapath_walk(seeds, WRITES)
    with pytest.raises(ValueError, match="direction: must be 'in' or 'out'"):
        H.metapath_walk(seeds, PAP, direction="both")
    with pytest.raises(ValueError, match="restart_prob: no step of this metapath reaches"):
        H.metapath_walk(seeds, [WRITES], restart_prob=0.5)
    with pytest.raises(
        ValueError,
        match=r"restart_prob\[0\]: step 0 reaches node type "
        r"'author'",
    ):
        H.metapath_walk(seeds, PAP, restart_prob=[0.5, 0.5])
    with pytest.raises(ValueError, match="restart_prob: expected one probability per step"):
        H.metapath_walk(seeds, PAP, restart_prob=[0.5])
    with pytest.raises(ValueError, match="restart_prob: must be a probability"):
        H.metapath_walk(seeds, PAP, restart_prob=1.5)
    # an id below N (the largest type, 5000 papers) but past the 2000 authors
    with pytest.raises(
        IndexError,
        match=r"seeds \(ids of node type 'author'\): node id 2500 "
        r"is out of range for a graph of 2000 nodes",
    ):
        H.metapath_walk(torch.tensor([2500]), [WRITTEN_BY, WRITES])
    with pytest.raises(IndexError, match="seeds: node id -1 is negative"):
        metapath_walk([H[WRITES]], torch.tensor([-1]))


def test_metapath_walk_deterministic_and_compiled(H, ex):
    seeds = paper_seeds(H)
    gs.manual_seed(3)
    a = H.metapath_walk(seeds, PAP * 3, restart_prob=0.3)
    gs.manual_seed(3)
    assert torch.equal(a, H.metapath_walk(seeds, PAP * 3, restart_prob=0.3))
    gs.manual_seed(4)
    assert not torch.equal(a, H.metapath_walk(seeds, PAP * 3, restart_prob=0.3))
    # the DSL function eagerly and the example's sampler compiled draw the same walks
    gs.manual_seed(3)
    assert torch.equal(a, metapath_walk(PAP_mats(H) * 3, seeds, [0.0, 0.3] * 3))
    fn = gs.compile(ex.paper_author_paper)
    gs.manual_seed(3)
    assert torch.equal(a, fn(H[WRITES], seeds, H[WRITTEN_BY], traversals=3, restart_prob=0.3))
    # and in a DataLoader mini-batch: what that batch's scope draws
    loader = gs.DataLoader(
        H[WRITES],
        functools.partial(fn, written_by=H[WRITTEN_BY], traversals=3, restart_prob=0.3),
        seeds,
        128,
        seed=9,
    )
    batches = [b.out for b in loader]
    again = [
        b.out
        for b in gs.DataLoader(
            H[WRITES],
            functools.partial(
                ex.paper_author_paper, written_by=H[WRITTEN_BY], traversals=3, restart_prob=0.3
            ),
            seeds,
            128,
            seed=9,
        )
    ]
    assert all(torch.equal(x, y) for x, y in zip(batches, again))


def PAP_mats(H):
    return [H[WRITES], H[WRITTEN_BY]]


def test_metapath_walk_keys_are_walker_positions(H):
    """A walker's walk depends on its position and its seed only: other walkers stopping
    early (at uncited papers on the CITES step) changes none of its draws."""
    mp = [CITES, CITES, WRITES, WRITTEN_BY]
    seeds = torch.arange(1, 3 * 400, 3)[:400]  # papers 1, 4, 7, ...: cited ones
    gs.manual_seed(0)
    a = H.metapath_walk(seeds, mp)
    other = seeds.clone()
    other[::2] = torch.arange(0, 3 * 200, 3)[:200]  # even walkers: uncited, stop at once
    gs.manual_seed(0)
    b = H.metapath_walk(other, mp)
    assert bool((b[::2, 1:] < 0).all())
    assert torch.equal(a[1::2], b[1::2])


# ----------------------------------------------------------------------------- the law
def chi_square(counts, expected):
    """Pearson's chi-square p-value of ``counts`` against ``expected`` (same total)."""
    counts, expected = counts.double(), expected.double()
    stat = float(((counts - expected) ** 2 / expected).sum())
    return stat, float(st.chi2.sf(stat, counts.numel() - 1))


def pooled(groups):
    """Sum of per-group chi-square statistics: ``(stat, dof)`` -> p-value."""
    stat = sum(s for s, _ in groups)
    dof = sum(d for _, d in groups)
    return float(st.chi2.sf(stat, dof))


def transition_groups(A, cur, nxt, law):
    """Per start node ``v`` of the steps ``cur -> nxt``: the counts over ``v``'s in-edges'
    sources and the expected counts under ``law(v, sources, multiplicities)``."""
    src, dst, _ = A.edges()
    out = []
    for v in torch.unique(cur).tolist():
        rows = src[dst == v]
        cand, mult = torch.unique(rows, return_counts=True)
        got = nxt[cur == v]
        n = got.numel()
        if cand.numel() < 2 or n < 5 * cand.numel():
            continue
        counts = (got[:, None] == cand[None, :]).sum(0)
        expected = law(v, cand, mult) * n
        out.append((float(((counts - expected) ** 2 / expected).sum()), cand.numel() - 1))
    return out


def test_metapath_step_law_chi_square(H):
    """Step 0 (paper -> author) and step 1 (author -> paper) of PAP walks are uniform over
    the in-edges; a law skewed by rank is rejected."""
    A_w, A_wb = H[WRITES], H[WRITTEN_BY]
    deg = in_degree(A_w)[: H.num_nodes("paper")]
    roots = torch.nonzero(deg == 4).squeeze(1)[:3]  # papers with 4 authors
    seeds = roots.repeat_interleave(6000)
    gs.manual_seed(11)
    walks = H.metapath_walk(seeds, PAP)

    def uniform(v, cand, mult):
        return mult.double() / mult.sum()

    def ranked(v, cand, mult):
        return torch.arange(1, cand.numel() + 1).double() / (cand.numel() * (cand.numel() + 1) / 2)

    step0 = transition_groups(A_w, walks[:, 0], walks[:, 1], uniform)
    step1 = transition_groups(A_wb, walks[:, 1], walks[:, 2], uniform)
    assert len(step0) == 3 and len(step1) >= 3
    p0, p1 = pooled(step0), pooled(step1)
    print(
        f"\nPAP step 0 (paper -> author): p = {p0:.4f}; step 1 (author -> paper): "
        f"p = {p1:.4f} over {len(step1)} authors"
    )
    assert p0 > P_MIN and p1 > P_MIN
    wrong = pooled(transition_groups(A_w, walks[:, 0], walks[:, 1], ranked))
    print(f"PAP step 0 against a rank-skewed law: p = {wrong:.3g}")
    assert wrong < P_MIN


def test_metapath_restart_law_chi_square(H):
    """The restart variant: from an author, back to the root paper with probability r,
    else uniform over the author's papers (the root among them): P(root) = r + (1 - r) *
    m_root / deg, P(x) = (1 - r) * m_x / deg. Ignoring the restart is rejected."""
    r = 0.3
    deg = in_degree(H[WRITES])[: H.num_nodes("paper")]
    roots = torch.nonzero(deg == 3).squeeze(1)[:4]
    seeds = roots.repeat_interleave(5000)
    gs.manual_seed(12)
    walks = H.metapath_walk(seeds, PAP, restart_prob=r)
    root_of = {}

    def law(rr):
        def f(v, cand, mult):
            p = (1 - rr) * mult.double() / mult.sum()
            return p + rr * (cand == root_of[v]).double()

        return f

    groups, wrong = [], []
    for root in roots.tolist():  # one root at a time: the law of a step
        sel = walks[:, 0] == root  # from author a depends on the root
        cur, nxt = walks[sel, 1], walks[sel, 2]
        for a in torch.unique(cur).tolist():
            root_of[a] = root
        groups += transition_groups(H[WRITTEN_BY], cur, nxt, law(r))
        wrong += transition_groups(H[WRITTEN_BY], cur, nxt, law(0.0))
    p, p_wrong = pooled(groups), pooled(wrong)
    print(
        f"\nPAP with restart {r}, step 1 (author -> paper or root): p = {p:.4f} over "
        f"{len(groups)} (root, author) pairs; without the restart term: p = {p_wrong:.3g}"
    )
    assert len(groups) >= 6 and p > P_MIN and p_wrong < P_MIN


# ----------------------------------------------------------------------------- to_pyg
def test_to_pyg_structure(H):
    seeds = seed_dict(H, 32)
    gs.manual_seed(0)
    hops = H.sample_neighbors(seeds, [4, 3])
    x = {"paper": torch.arange(H.num_nodes("paper")).float()[:, None]}
    data = H.to_pyg(hops, seeds, x=x)
    assert set(data.node_types) == set(H.node_types)
    assert set(data.edge_types) == set(H.edge_types)
    for t in H.node_types:
        n_id = data[t].n_id
        assert torch.unique(n_id).numel() == n_id.numel() and data[t].num_nodes == n_id.numel()
        assert sum(data[t].num_sampled_nodes) == n_id.numel()
        if t in seeds:
            b = data[t].batch_size
            assert b == seeds[t].numel() and torch.equal(n_id[:b], seeds[t])
            assert torch.equal(data[t].input_id, torch.arange(b))
    assert torch.equal(data["paper"].x[:, 0].long(), data["paper"].n_id)
    total = 0
    for et in H.edge_types:
        s, _, d = et
        ei, eid = data[et].edge_index, data[et].e_id
        rows, cols = edge_table(H[et])
        assert torch.equal(data[s].n_id[ei[0]], rows[eid])  # local ids, src -> dst
        assert torch.equal(data[d].n_id[ei[1]], cols[eid])
        key = eid * H.size + data[d].n_id[ei[1]]
        assert torch.unique(key).numel() == key.numel()  # no message twice
        assert sum(data[et].num_sampled_edges) == eid.numel()
        total += eid.numel()
    assert total == sum(m.num_edges for hop in hops for m in hop.values())  # PyG-style: all
    one = H.to_pyg(hops[0], seeds)
    assert one["writes"].num_sampled_edges == [hops[0][WRITES].num_edges]


def test_to_pyg_dgl_style_hops_send_no_message_twice(H):
    seeds = {"paper": seed_dict(H)["paper"]}
    gs.manual_seed(0)
    first = H.sample_neighbors(seeds, 3)
    frontier = {"paper": seeds["paper"]}  # re-sample the seeds, DGL-style
    for et, m in first.items():
        if m.num_edges:
            prev = frontier.get(et[0], torch.zeros(0, dtype=torch.long))
            frontier[et[0]] = torch.unique(torch.cat([prev, m.row()]))
    second = H.sample_neighbors(frontier, 3)
    data = H.to_pyg([first, second], seeds)
    for et in H.edge_types:
        d = et[2]
        key = data[et].e_id * H.size + data[d].n_id[data[et].edge_index[1]]
        assert torch.unique(key).numel() == key.numel()
    with pytest.raises(TypeError, match="samples: expected sample_neighbors' result"):
        H.to_pyg([torch.zeros(2)], seeds)


def test_example_main_runs(ex, capsys):
    ex.main(
        [
            "--authors",
            "300",
            "--papers",
            "800",
            "--venues",
            "10",
            "--batch-size",
            "64",
            "--batches",
            "2",
            "--traversals",
            "2",
        ]
    )
    out = capsys.readouterr().out
    assert "steps/s" in out and "gives the same walks: True" in out


def test_walks_and_samples_same_on_every_device(H, device):
    """Uniform operators draw the same on every device (docs/architecture.md §3)."""
    seeds = paper_seeds(H, 256)
    gs.manual_seed(0)
    walks = H.metapath_walk(seeds, PAP * 2 + [CITES], restart_prob=0.3)
    samples = H.sample_neighbors(seed_dict(H), 3)
    Hd = H.to(device)
    gs.manual_seed(0)
    assert torch.equal(
        Hd.metapath_walk(seeds.to(device), PAP * 2 + [CITES], restart_prob=0.3).cpu(), walks
    )
    other = Hd.sample_neighbors({t: s.to(device) for t, s in seed_dict(H).items()}, 3)
    for et in H.edge_types:
        assert all(torch.equal(a.cpu(), b) for a, b in zip(other[et].edges(), samples[et].edges()))
