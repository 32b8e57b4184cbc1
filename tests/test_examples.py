"""The eager examples in ``examples/``: structure, sizes, brute-force checks, determinism.

Each sampler runs on a small weighted R-MAT graph, a larger unweighted one and, when
``../shared/data`` holds it, web-NotreDame. Every check compares the sample with the
graph's own edge table (``A.edges()`` indexed by original edge id), not with another
gsample operator.
"""

import gzip
from dataclasses import dataclass

import pytest
import torch
from helpers import example, random_seeds, same

import gsample as gs

NAMES = ["graphsage", "ladies", "fastgcn", "shadow", "pass_sampler"]


@dataclass
class Graph:
    A: gs.Matrix
    rows: torch.Tensor  # (E,) source of each original edge id
    cols: torch.Tensor  # (E,) destination of each original edge id
    vals: torch.Tensor  # (E,) weight of each original edge id
    in_deg: torch.Tensor  # (N,) edges per column
    name: str

    @classmethod
    def of(cls, A, name):
        r, c, e = A.edges()
        rows, cols, vals = (
            torch.empty_like(r),
            torch.empty_like(c),
            torch.empty(e.numel(), dtype=A.values.dtype),
        )
        rows[e], cols[e], vals[e] = r, c, A.values
        return cls(A, rows, cols, vals, torch.bincount(cols, minlength=A.num_nodes), name)

    def seeds(self, n, seed=1):
        return random_seeds(n, seed, self.A.num_nodes)


@pytest.fixture(scope="module", params=["weighted-rmat", "rmat", "notredame"])
def graph(request, small_graph):
    if request.param == "weighted-rmat":
        return Graph.of(small_graph, request.param)
    if request.param == "rmat":
        return Graph.of(gs.datasets.rmat(20_000, 300_000, seed=0), request.param)
    return Graph.of(request.getfixturevalue("notredame"), request.param)


# ----------------------------------------------------------------------------- helpers
def check_edges(G, m):
    """Every edge of ``m`` is the graph's edge with that id; returns ``m.edges()``."""
    r, c, e = m.edges()
    assert r.shape == c.shape == e.shape
    assert torch.equal(G.rows[e], r) and torch.equal(G.cols[e], c)
    return r, c, e


def check_frontiers(blocks, seeds):
    """Layer 0's columns are the seeds; layer l + 1's are ``all_nodes`` of layer l."""
    cols = seeds
    for s in blocks:
        assert torch.equal(s.column(), cols)
        nodes = s.all_nodes()
        assert torch.equal(nodes[: cols.numel()], cols)  # frontier first
        assert nodes.unique().numel() == nodes.numel()
        assert set(nodes.tolist()) == set(cols.tolist()) | set(s.row().tolist())
        cols = nodes


def per_column(G, c, cols):
    """Sampled edges per column, for unique ``cols``."""
    assert cols.unique().numel() == cols.numel()
    return torch.bincount(c, minlength=G.A.num_nodes)[cols]


def pass_inputs(G):
    return example("pass_sampler").random_inputs(G.A.num_nodes)


def run(name, G, seeds, seed=0):
    """Run example ``name``'s sampler on ``G`` after ``gs.manual_seed(seed)``."""
    gs.manual_seed(seed)
    m = example(name)
    if name == "graphsage":
        return m.graphsage(G.A, seeds, fanouts=(25, 10))
    if name == "ladies":
        return m.ladies(m.normalize(G.A), seeds, layers=(4000, 4000, 4000))
    if name == "fastgcn":
        return m.fastgcn(G.A, seeds, layers=(2000, 2000))
    if name == "shadow":
        return m.shadow(G.A, seeds, fanouts=(10, 10))
    return m.pass_sampler(G.A, seeds, fanouts=(10, 10), **pass_inputs(G))


# ----------------------------------------------------------------------------- samplers
def test_graphsage(graph):
    G, seeds = graph, graph.seeds(512)
    blocks = run("graphsage", G, seeds)
    assert len(blocks) == 2
    check_frontiers(blocks, seeds)
    for s, k in zip(blocks, (25, 10)):
        _r, c, e = check_edges(G, s)
        assert e.unique().numel() == e.numel()  # no replacement
        cols = s.column()
        assert torch.equal(per_column(G, c, cols), G.in_deg[cols].clamp(max=k))


def layerwise_expected(G, s, p, vals):
    """Brute-force block values: ``vals[e] / p[row]``, then each column scaled to sum 1."""
    r, c, e = s.edges()
    w = vals[e].double() / p[r]
    colsum = torch.zeros(G.A.num_nodes, dtype=torch.float64).index_add_(0, c, w)
    return w / colsum[c]


def check_layerwise(G, blocks, seeds, layers, vals, bias):
    """Sizes, completeness and values of LADIES / FastGCN blocks.

    ``bias(cols)`` gives the brute-force row probabilities (shape (N,)) for a frontier.
    """
    assert len(blocks) == len(layers)
    check_frontiers(blocks, seeds)
    for s, k in zip(blocks, layers):
        _r, c, e = check_edges(G, s)
        cols = s.column()
        in_frontier = torch.isin(G.cols, cols)
        candidates = G.rows[in_frontier].unique()  # rows with edges
        chosen = s.row_ids
        assert s.shape == (chosen.numel(), cols.numel())
        assert chosen.numel() == min(k, candidates.numel())  # <= k rows, exactly
        assert torch.isin(chosen, candidates).all()
        # every edge of a chosen row to the frontier is kept, once
        expected_eids = (in_frontier & torch.isin(G.rows, chosen)).nonzero().squeeze(1)
        assert torch.equal(torch.sort(e).values, expected_eids)
        # importance weighting by 1 / p(row), then columns with edges sum to 1
        p = bias(cols)
        assert (p[chosen] > 0).all()
        torch.testing.assert_close(
            s.values.double(), layerwise_expected(G, s, p, vals), rtol=1e-4, atol=1e-6
        )
        sums, has = s.sum(axis=0), per_column(G, c, cols) > 0
        torch.testing.assert_close(sums[has], torch.ones_like(sums[has]), rtol=1e-4, atol=1e-5)
        assert (sums[~has] == 0).all()


def test_ladies(graph):
    G, seeds = graph, graph.seeds(512)
    # brute-force symmetric normalisation and LADIES bias from the edge table
    d_out = torch.zeros(G.A.num_nodes).index_add_(0, G.rows, G.vals)
    d_in = torch.zeros(G.A.num_nodes).index_add_(0, G.cols, G.vals)
    norm = G.vals / (d_out[G.rows] * d_in[G.cols]).sqrt()
    torch.testing.assert_close(
        example("ladies").normalize(G.A).values, norm[G.A.edges()[2]], rtol=1e-5, atol=1e-7
    )

    def bias(cols):
        mask = torch.isin(G.cols, cols)
        p = torch.zeros(G.A.num_nodes, dtype=torch.float64)
        p.index_add_(0, G.rows[mask], norm[mask].double() ** 2)
        return p / p.sum()

    blocks = run("ladies", G, seeds)
    check_layerwise(G, blocks, seeds, (4000, 4000, 4000), norm, bias)


def test_fastgcn(graph):
    G, seeds = graph, graph.seeds(512)
    degree = torch.zeros(G.A.num_nodes, dtype=torch.float64).index_add_(0, G.rows, G.vals.double())
    blocks = run("fastgcn", G, seeds)
    check_layerwise(G, blocks, seeds, (2000, 2000), G.vals, lambda cols: degree / degree.sum())
    # a precomputed degree gives the same blocks as the one computed in the sampler
    gs.manual_seed(0)
    again = example("fastgcn").fastgcn(G.A, seeds, layers=(2000, 2000), degree=G.A.sum(axis=1))
    assert same(blocks, again)


def test_shadow(graph):
    G, seeds = graph, graph.seeds(512)
    sub, nodes = run("shadow", G, seeds)
    assert torch.equal(nodes[: seeds.numel()], seeds)
    assert nodes.unique().numel() == nodes.numel()
    # nodes lie within 2 in-hops of the seeds
    hop1 = torch.cat([seeds, G.rows[torch.isin(G.cols, seeds)]]).unique()
    hop2 = torch.cat([hop1, G.rows[torch.isin(G.cols, hop1)]]).unique()
    assert torch.isin(nodes, hop2).all()
    # the result is exactly the induced subgraph A[nodes, nodes]
    assert sub.shape == (nodes.numel(), nodes.numel())
    assert torch.equal(sub.row_ids, nodes) and torch.equal(sub.column(), nodes)
    _r, _c, e = check_edges(G, sub)
    induced = (torch.isin(G.rows, nodes) & torch.isin(G.cols, nodes)).nonzero().squeeze(1)
    assert torch.equal(torch.sort(e).values, induced)
    torch.testing.assert_close(sub.values, G.vals[e])


def test_pass(graph):
    G, seeds = graph, graph.seeds(64)
    blocks = run("pass_sampler", G, seeds)
    assert len(blocks) == 2
    check_frontiers(blocks, seeds)
    for s, k in zip(blocks, (10, 10)):
        _r, c, _e = check_edges(G, s)
        cols = s.column()
        deg = G.in_deg[cols]
        assert torch.equal(per_column(G, c, cols), torch.where(deg > 0, k, 0))  # replacement
        # row space after compact(): the frontier's in-neighbours, ascending
        assert torch.equal(s.row_ids, G.rows[torch.isin(G.cols, cols)].unique())


def test_pass_follows_attention(small_graph):
    """Edges whose attention is ~0 (relu clips them) are essentially never drawn."""
    G = Graph.of(small_graph, "weighted-rmat")
    inputs = pass_inputs(G)
    inputs["W3"] = torch.tensor([[10.0], [-10.0], [-10.0]])  # all weight on att1 = <XW1, XW1>
    seeds = G.seeds(64)
    gs.manual_seed(0)
    (s,) = example("pass_sampler").pass_sampler(G.A, seeds, fanouts=(50,), **inputs)
    r, c, _e = check_edges(G, s)
    proj = inputs["X"] @ inputs["W1"]
    att1 = (proj[r] * proj[c]).sum(1)
    # columns with at least one positive-attention edge only draw positive-attention edges
    pos = torch.zeros(G.A.num_nodes, dtype=torch.bool)
    pos[c[att1 > 0]] = True
    assert (att1[pos[c]] > 0).all()


# ----------------------------------------------------------------------------- distributions
def busy_node(G, lo=12, hi=40):
    """A node with between ``lo`` and ``hi`` in-edges."""
    return int(((G.in_deg >= lo) & (G.in_deg <= hi)).nonzero()[0])


def chi2_pvalue(counts, expected):
    from scipy.stats import chisquare

    return chisquare(counts.double().numpy(), expected.double().numpy()).pvalue


def test_graphsage_is_uniform(small_graph):
    """One node repeated as 4,000 columns: each in-edge is kept with probability k / deg."""
    G = Graph.of(small_graph, "weighted-rmat")
    v, k, T = busy_node(G), 5, 4000
    gs.manual_seed(0)
    (s,) = example("graphsage").graphsage(G.A, torch.full((T,), v), fanouts=(k,))
    _, _, e = check_edges(G, s)
    edges_of_v = (G.cols == v).nonzero().squeeze(1)
    counts = torch.bincount(e, minlength=G.A.num_edges)[edges_of_v]
    assert counts.sum() == T * k
    expected = torch.full((len(counts),), T * k / len(counts), dtype=torch.float64)
    assert chi2_pvalue(counts, expected) > 1e-3


def test_pass_draws_follow_attention(small_graph):
    """With replacement, draws of one node's in-edges are proportional to the PASS attention."""
    G = Graph.of(small_graph, "weighted-rmat")
    inputs = pass_inputs(G)
    inputs["W3"] = torch.tensor([[0.5], [0.0], [1.0]])
    v, k, T = busy_node(G), 10, 2000
    gs.manual_seed(0)
    (s,) = example("pass_sampler").pass_sampler(G.A, torch.full((T,), v), fanouts=(k,), **inputs)
    _, _, e = check_edges(G, s)
    # brute-force attention of v's in-edges
    edges_of_v = (G.cols == v).nonzero().squeeze(1)
    X, src = inputs["X"], G.rows[edges_of_v]
    a1 = (X[src] @ inputs["W1"]) @ (X[v] @ inputs["W1"])
    a2 = (X[src] @ inputs["W2"]) @ (X[v] @ inputs["W2"])
    a3 = G.vals[edges_of_v] / G.vals[edges_of_v].sum()
    mix = torch.softmax(inputs["W3"], 0)
    att = torch.relu(torch.stack([a1, a2, a3], 1) @ mix).squeeze(1) + 1e-9
    counts = torch.bincount(e, minlength=G.A.num_edges)[edges_of_v]
    assert counts.sum() == T * k
    expected = T * k * att.double() / att.double().sum()
    big = expected >= 5  # chi-square needs >= 5 expected
    assert counts[~big].sum() <= max(5.0, 3 * float(expected[~big].sum()))
    counts, expected = counts[big], expected[big]
    assert chi2_pvalue(counts, expected * counts.sum() / expected.sum()) > 1e-3


# ----------------------------------------------------------------------------- behaviour
@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_sample(name, graph):
    seeds = graph.seeds(64 if name == "pass_sampler" else 512)
    first = run(name, graph, seeds, seed=0)
    assert same(first, run(name, graph, seeds, seed=0))
    if graph.name != "weighted-rmat":  # 2,000 nodes: LADIES / FastGCN keep them all
        assert not same(first, run(name, graph, seeds, seed=1))


@pytest.mark.parametrize("name", NAMES)
def test_frontier_without_in_edges(name, small_graph):
    """Seeds with no in-edges give empty blocks, not an error, and stay the frontier."""
    G = Graph.of(small_graph, "weighted-rmat")
    seeds = (G.in_deg == 0).nonzero().squeeze(1)[:8]
    assert seeds.numel() > 0
    out = run(name, G, seeds)
    if name == "shadow":
        sub, nodes = out
        assert torch.equal(nodes, seeds)
        induced = (torch.isin(G.rows, seeds) & torch.isin(G.cols, seeds)).sum()
        assert sub.num_edges == int(induced)
        return
    check_frontiers(out, seeds)
    assert all(s.num_edges == 0 for s in out)


@pytest.mark.parametrize("name", NAMES)
def test_main_runs(name, capsys):
    example(name).main(
        ["--num-nodes", "2000", "--num-edges", "20000", "--batches", "2", "--batch-size", "64"]
    )
    out = capsys.readouterr().out
    assert "2 batches of 64 seeds" in out and "sampled edges/s" in out


@pytest.mark.parametrize("name", NAMES)
def test_main_reads_snap(name, tmp_path, capsys):
    ei = gs.datasets.rmat(500, 5000, seed=3).edges()
    path = tmp_path / "tiny.txt.gz"
    with gzip.open(path, "wt") as f:
        f.write("# Directed graph: tiny\n# FromNodeId\tToNodeId\n")
        f.writelines(f"{s}\t{d}\n" for s, d in zip(ei[0].tolist(), ei[1].tolist()))
    example(name).main(["--snap", str(path), "--batches", "3", "--batch-size", "32"])
    assert "3 batches of 32 seeds" in capsys.readouterr().out
