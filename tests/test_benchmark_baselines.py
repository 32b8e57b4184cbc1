"""The plain-PyTorch baselines of the benchmarks (``benchmarks/baselines.py``) sample what
their gsample counterparts sample: checked structurally on a small random graph, and the
uniform and weighted draws with goodness-of-fit tests.

A baseline that silently sampled less (or other edges) would make every speedup the
benchmarks print meaningless, so each one is held to its sampler's definition:

* GraphSAGE: ``min(k, degree)`` distinct in-edges per column, uniform over the column;
* LADIES / FastGCN: at most ``k`` rows, every frontier edge from a chosen row kept, the
  columns normalised to 1;
* ShaDow: exactly the edges the node set induces;
* PASS: ``k`` draws with replacement per column with an edge, from that column's edges.
"""

import pathlib
import sys

import pytest
import torch
from scipy import stats

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
import baselines as B

N = 300


@pytest.fixture(scope="module")
def graph():
    """A random directed graph in CSC form, no duplicate edges: ``(indptr, indices, values)``."""
    g = torch.Generator().manual_seed(0)
    src = torch.randint(0, N, (6000,), generator=g)
    dst = torch.randint(0, N, (6000,), generator=g)
    key = torch.unique(dst * N + src)  # sorted by column, then row
    rows, cols = key % N, key // N
    indptr = B._exclusive_cumsum(torch.bincount(cols, minlength=N))
    values = torch.rand(rows.numel(), generator=g) + 0.1
    return indptr, rows, values


def edge_set(indptr, indices, cols):
    return {
        (int(indices[e]), int(c)) for c in cols for e in range(int(indptr[c]), int(indptr[c + 1]))
    }


def block_edges(b):
    out = []
    for j, c in enumerate(b.cols.tolist()):
        out += [(int(r), c) for r in b.rows[b.indptr[j] : b.indptr[j + 1]]]
    return out


def test_frontier_edges_lists_every_in_edge_of_the_frontier(graph):
    indptr, _indices, _ = graph
    cols = torch.tensor([5, 0, 299, 5])
    ptr, col, pos = B.frontier_edges(indptr, cols)
    assert ptr.tolist() == [0] + torch.cumsum(indptr[cols + 1] - indptr[cols], 0).tolist()
    for c in range(cols.numel()):
        got = pos[ptr[c] : ptr[c + 1]].tolist()
        assert got == list(range(int(indptr[cols[c]]), int(indptr[cols[c] + 1])))
        assert (col[ptr[c] : ptr[c + 1]] == c).all()


def test_next_frontier_keeps_the_columns_first_then_new_rows_ascending():
    out = B.next_frontier(torch.tensor([7, 3]), torch.tensor([9, 3, 1, 9, 7]), 10)
    assert out.tolist() == [7, 3, 1, 9]


def test_graphsage_takes_min_k_distinct_in_edges_per_column(graph):
    indptr, indices, _ = graph
    torch.manual_seed(0)
    seeds = torch.randperm(N)[:40]
    blocks = B.graphsage(indptr, indices, N, seeds, fanouts=(5, 3))
    cols = seeds
    for b, k in zip(blocks, (5, 3)):
        assert torch.equal(b.cols, cols)
        deg = indptr[cols + 1] - indptr[cols]
        assert torch.equal(b.indptr[1:] - b.indptr[:-1], deg.clamp(max=k))
        edges = block_edges(b)
        assert len(set(edges)) == len(edges)  # without replacement
        assert set(edges) <= edge_set(indptr, indices, cols.tolist())
        cols = B.next_frontier(cols, b.rows, N)


def test_graphsage_draws_each_edge_of_a_column_uniformly(graph):
    indptr, indices, _ = graph
    c = int(torch.argmax(indptr[1:] - indptr[:-1]))
    deg, k, trials = int(indptr[c + 1] - indptr[c]), 4, 3000
    torch.manual_seed(1)
    b = B.sage_layer(indptr, indices, torch.full((trials,), c), k)  # one column, many times
    assert all(len(set(b.rows[i * k : (i + 1) * k].tolist())) == k for i in range(trials))
    hits = torch.bincount(b.rows, minlength=N)
    observed = hits[indices[indptr[c] : indptr[c + 1]]].double()
    assert int(observed.sum()) == k * trials
    assert stats.chisquare(observed.numpy()).pvalue > 1e-3, f"degree {deg}"


@pytest.mark.parametrize("name", ["ladies", "fastgcn"])
def test_layer_wise_keeps_every_frontier_edge_of_at_most_k_chosen_rows(name, graph):
    indptr, indices, values = graph
    torch.manual_seed(2)
    seeds = torch.randperm(N)[:30]
    k = 40
    if name == "ladies":
        b = B.ladies_layer(indptr, indices, values, N, seeds, k)
    else:
        degree = torch.zeros(N).index_add_(0, indices, values)
        b = B.fastgcn_layer(indptr, indices, values, N, seeds, k, degree / degree.sum())
    chosen = set(b.rows.tolist())
    assert 0 < len(chosen) <= k
    frontier = edge_set(indptr, indices, seeds.tolist())
    assert sorted(block_edges(b)) == sorted(e for e in frontier if e[0] in chosen)
    sums = torch.zeros(seeds.numel()).index_add_(
        0,
        torch.repeat_interleave(torch.arange(seeds.numel()), b.indptr[1:] - b.indptr[:-1]),
        b.values,
    )
    has = (b.indptr[1:] - b.indptr[:-1]) > 0
    assert torch.allclose(sums[has], torch.ones(int(has.sum())))


def test_ladies_keeps_every_row_when_there_are_at_most_k(graph):
    indptr, indices, values = graph
    seeds = torch.tensor([3, 4])
    b = B.ladies_layer(indptr, indices, values, N, seeds, 10**6)
    assert sorted(block_edges(b)) == sorted(edge_set(indptr, indices, [3, 4]))


def test_ladies_draws_rows_by_their_squared_weights(graph):
    """With k = 1 the one chosen row is drawn with probability proportional to the sum of
    its squared weights into the frontier."""
    indptr, indices, values = graph
    seeds = torch.tensor([10, 11, 12])
    _ptr, _col, pos = B.frontier_edges(indptr, seeds)
    p = torch.zeros(N, dtype=torch.float64).index_add_(0, indices[pos], values[pos].double() ** 2)
    torch.manual_seed(3)
    counts = torch.zeros(N)
    for _ in range(4000):
        b = B.ladies_layer(indptr, indices, values, N, seeds, 1)
        counts[int(b.rows[0])] += 1
    support = (p > 0).nonzero().squeeze(1)
    expected = (p[support] / p.sum() * 4000).numpy()
    assert counts[p == 0].sum() == 0
    assert stats.chisquare(counts[support].numpy(), expected).pvalue > 1e-3


def test_shadow_returns_the_induced_subgraph_of_its_node_set(graph):
    indptr, indices, _ = graph
    torch.manual_seed(4)
    seeds = torch.randperm(N)[:10]
    sub, nodes = B.shadow(indptr, indices, N, seeds, fanouts=(3, 2))
    assert torch.equal(nodes[:10], seeds) and nodes.unique().numel() == nodes.numel()
    inside = set(nodes.tolist())
    want = {e for e in edge_set(indptr, indices, nodes.tolist()) if e[0] in inside}
    assert sorted(block_edges(sub)) == sorted(want)


def test_pass_draws_k_edges_with_replacement_from_each_nonempty_column(graph):
    indptr, indices, values = graph
    torch.manual_seed(5)
    X = torch.randn(N, 8)
    W1, W2, W3 = torch.randn(8, 4), torch.randn(8, 4), torch.randn(3, 1)
    seeds = torch.randperm(N)[:25]
    blocks = B.pass_sampler(indptr, indices, values, N, seeds, X, W1, W2, W3, fanouts=(6, 2))
    cols = seeds
    for b, k in zip(blocks, (6, 2)):
        deg = indptr[cols + 1] - indptr[cols]
        assert torch.equal(b.indptr[1:] - b.indptr[:-1], torch.where(deg > 0, k, 0))
        assert set(block_edges(b)) <= edge_set(indptr, indices, cols.tolist())
        cols = B.next_frontier(cols, b.rows, N)
