"""Graph inputs (docs/architecture.md §5): edge lists, CSC arrays, scipy.sparse, networkx, PyG
``Data``, SNAP files and the R-MAT generator.

Each constructor is checked against a dense reference built independently from
its input, and for the documented edge order: within a column, edges are ordered
by row id, then by original edge id.
"""

import gzip

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
import torch
from conftest import snap_path

import gsample as gs


def dense(M: gs.Matrix) -> torch.Tensor:
    """``D[src, dst] = sum of weights`` over the edges of a whole-graph matrix."""
    r, c, _ = M.edges()
    out = torch.zeros(M.num_nodes, M.num_nodes, dtype=torch.float64)
    out.index_put_((r, c), M.values.double(), accumulate=True)
    return out


def triples(M):
    r, c, e = M.edges()
    return list(zip(r.tolist(), c.tolist(), e.tolist()))


def same_edges(A, B) -> bool:
    return all(torch.equal(x, y) for x, y in zip(A.edges(), B.edges()))


def csc_order(src, dst):
    """Expected edges() of a graph from an edge list: by dst, then src, then position."""
    return sorted(
        ((s, d, e) for e, (s, d) in enumerate(zip(src, dst))), key=lambda t: (t[1], t[0], t[2])
    )


# ----------------------------------------------------------------------------- from_edge_index
def test_from_edge_index_defaults():
    src, dst = [3, 0, 3, 0, 2, 1], [1, 1, 1, 1, 0, 3]  # repeated edges, unsorted
    A = gs.Matrix.from_edge_index(torch.tensor([src, dst]))
    assert A.num_nodes == 4  # max id + 1
    assert A.num_edges == 6 and A.shape == (4, 4)
    assert triples(A) == csc_order(src, dst)  # ties by original edge id
    assert torch.equal(A.values, torch.ones(6))
    ref = torch.zeros(4, 4, dtype=torch.float64)
    for s, d in zip(src, dst):
        ref[s, d] += 1
    assert torch.equal(dense(A), ref)
    assert torch.equal(A.sum(axis=0), ref.sum(0).float())  # in-degree per column


def test_from_edge_index_weights_and_num_nodes():
    src, dst = [2, 0, 1, 2], [0, 2, 2, 2]
    w = torch.tensor([0.5, 1.5, 2.5, 3.5])
    A = gs.Matrix.from_edge_index(torch.tensor([src, dst]), num_nodes=6, weight=w)
    assert A.num_nodes == 6 and A.shape == (6, 6)  # nodes 3..5 isolated
    order = csc_order(src, dst)
    assert triples(A) == order
    assert torch.equal(A.values, w[[e for _, _, e in order]])
    ref = torch.zeros(6, 6, dtype=torch.float64)
    ref[src, dst] = w.double()
    assert torch.equal(dense(A), ref)
    # int weights become floating point; float64 weights are kept
    Ai = gs.Matrix.from_edge_index(torch.tensor([src, dst]), weight=torch.tensor([1, 2, 3, 4]))
    assert Ai.values.is_floating_point()
    A64 = gs.Matrix.from_edge_index(torch.tensor([src, dst]), weight=w.double())
    assert A64.values.dtype == torch.float64


def test_from_edge_index_lists_empty_and_int32():
    A = gs.Matrix.from_edge_index([[0, 1], [1, 0]])
    assert A.num_nodes == 2 and triples(A) == [(1, 0, 1), (0, 1, 0)]
    B = gs.Matrix.from_edge_index(torch.tensor([[0, 1], [1, 0]], dtype=torch.int32))
    assert triples(B) == triples(A)
    empty = gs.Matrix.from_edge_index(torch.zeros(2, 0, dtype=torch.long))
    assert empty.num_nodes == 0 and empty.num_edges == 0
    empty5 = gs.Matrix.from_edge_index(torch.zeros(2, 0, dtype=torch.long), num_nodes=5)
    assert empty5.shape == (5, 5) and empty5.num_edges == 0
    assert empty5.sum(axis=0).tolist() == [0] * 5


# ----------------------------------------------------------------------------- from_csc
def test_from_csc_unsorted_rows():
    indptr = torch.tensor([0, 3, 3, 5, 6])
    indices = torch.tensor([2, 0, 3, 1, 0, 2])  # column 0 unsorted, column 2 unsorted
    w = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    A = gs.Matrix.from_csc(indptr, indices, weight=w)
    assert A.num_nodes == 4 and A.num_edges == 6
    # edge ids are positions in `indices`; within a column sorted by row
    assert triples(A) == [(0, 0, 1), (2, 0, 0), (3, 0, 2), (0, 2, 4), (1, 2, 3), (2, 3, 5)]
    assert A.values.tolist() == [2.0, 1.0, 3.0, 5.0, 4.0, 6.0]
    ref = torch.zeros(4, 4, dtype=torch.float64)
    for j in range(4):
        for p in range(int(indptr[j]), int(indptr[j + 1])):
            ref[indices[p], j] += w[p]
    assert torch.equal(dense(A), ref)
    assert gs.Matrix.from_csc(indptr, indices, num_nodes=4).num_edges == 6
    # repeated rows in a column: ordered by edge id
    B = gs.Matrix.from_csc(torch.tensor([0, 3, 3]), torch.tensor([1, 0, 1]))
    assert triples(B) == [(0, 0, 1), (1, 0, 0), (1, 0, 2)]


def test_from_csc_matches_from_edge_index():
    g = torch.Generator().manual_seed(0)
    src = torch.randint(0, 50, (400,), generator=g)
    dst = torch.randint(0, 50, (400,), generator=g)
    order = torch.argsort(dst, stable=True)
    indptr = torch.zeros(51, dtype=torch.long)
    indptr[1:] = torch.cumsum(torch.bincount(dst, minlength=50), 0)
    A = gs.Matrix.from_csc(indptr.int(), src[order].int())
    B = gs.Matrix.from_edge_index(torch.stack([src, dst]), num_nodes=50)
    assert torch.equal(dense(A), dense(B))
    a, b = A.edges(), B.edges()
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert torch.equal(order[a[2]], b[2])  # A's edge ids are positions in the CSC input


# ----------------------------------------------------------------------------- from_scipy
@pytest.mark.parametrize("fmt", ["coo", "csr", "csc", "coo_array", "csr_array"])
@pytest.mark.parametrize("weight", [True, False])
def test_from_scipy(fmt, weight):
    rng = np.random.default_rng(0)
    n = 30
    row, col = rng.integers(0, n, 120), rng.integers(0, n, 120)
    data = rng.uniform(0.5, 2.0, 120).astype(np.float32)
    coo = sp.coo_matrix((data, (row, col)), shape=(n, n))
    coo.sum_duplicates()
    m = {
        "coo": coo,
        "csr": coo.tocsr(),
        "csc": coo.tocsc(),
        "coo_array": sp.coo_array(coo),
        "csr_array": sp.csr_array(coo),
    }[fmt]
    A = gs.Matrix.from_scipy(m, weight=weight)
    assert A.num_nodes == n and A.num_edges == coo.nnz
    ref = m.toarray().astype(np.float64) if weight else (m.toarray() != 0).astype(np.float64)
    np.testing.assert_allclose(dense(A).numpy(), ref, rtol=1e-6)
    if not weight:
        assert torch.equal(A.values, torch.ones(A.num_edges))
    # edge ids are positions in the matrix's COO order
    c = m.tocoo()
    r, cc, e = A.edges()
    assert np.array_equal(np.asarray(c.row)[e.numpy()], r.numpy())
    assert np.array_equal(np.asarray(c.col)[e.numpy()], cc.numpy())


def test_from_scipy_int_data_and_duplicates():
    m = sp.coo_matrix(
        (np.array([2, 3, 4]), (np.array([0, 0, 1]), np.array([1, 1, 0]))), shape=(3, 3)
    )
    A = gs.Matrix.from_scipy(m)
    assert A.values.is_floating_point()
    assert A.num_edges == 3  # duplicates are kept as parallel edges
    assert dense(A)[0, 1] == 5 and dense(A)[1, 0] == 4
    with pytest.raises(ValueError, match=r"\bmatrix\b.*square"):
        gs.Matrix.from_scipy(sp.coo_matrix((2, 3)))
    with pytest.raises(TypeError, match=r"\bmatrix\b"):
        gs.Matrix.from_scipy(np.eye(3))


# ----------------------------------------------------------------------------- from_networkx
def test_from_networkx_directed_weights():
    G = nx.DiGraph()
    G.add_nodes_from([3, 1, 0, 2, 9])  # order defines the numbering
    G.add_edge(3, 1, w=2.0)
    G.add_edge(1, 0, w=0.5)
    G.add_edge(0, 3)  # missing attribute -> 1.0
    G.add_edge(2, 1, w=4.0)
    A = gs.Matrix.from_networkx(G, weight="w")
    assert A.num_nodes == 5 and A.num_edges == 4
    ref = nx.to_numpy_array(G, nodelist=list(G.nodes), weight="w")
    assert np.allclose(dense(A).numpy(), ref)
    # edge ids are positions in G.edges
    idx = {u: i for i, u in enumerate(G.nodes)}
    listed = [(idx[u], idx[v]) for u, v in G.edges]
    for r, c, e in triples(A):
        assert listed[e] == (r, c)
    unweighted = gs.Matrix.from_networkx(G)
    assert torch.equal(unweighted.values, torch.ones(4))


def test_from_networkx_undirected():
    G = nx.Graph()
    G.add_edges_from([(0, 1, {"weight": 3.0}), (1, 2, {"weight": 0.5}), (2, 3), (4, 0)])
    A = gs.Matrix.from_networkx(G, weight="weight")
    m = G.number_of_edges()
    assert A.num_edges == 2 * m
    ref = nx.to_numpy_array(G, nodelist=list(G.nodes), weight="weight")
    assert np.allclose(dense(A).numpy(), ref)
    assert np.allclose(ref, ref.T)
    # ids 0..m-1 for u -> v as listed by G.edges, m..2m-1 for v -> u
    idx = {u: i for i, u in enumerate(G.nodes)}
    listed = [(idx[u], idx[v]) for u, v in G.edges]
    for r, c, e in triples(A):
        exp = listed[e] if e < m else listed[e - m][::-1]
        assert exp == (r, c)


def test_from_networkx_undirected_self_loop_is_one_edge():
    # As PyG's and DGL's from_networkx (and nx.to_numpy_array): a self-loop of an
    # undirected graph is a single edge u -> u, not two parallel ones.
    G = nx.Graph([(0, 1), (1, 1), (1, 2)])
    A = gs.Matrix.from_networkx(G)
    ref = nx.to_numpy_array(G, nodelist=list(G.nodes))
    assert np.allclose(dense(A).numpy(), ref)
    assert A.num_edges == 5


def test_from_networkx_non_integer_labels():
    G = nx.DiGraph()
    G.add_edge("paris", ("x", 1), weight=2.0)
    G.add_edge(("x", 1), "berlin", weight=3.0)
    G.add_edge("berlin", "paris")
    G.add_node(frozenset({"lonely"}))
    A = gs.Matrix.from_networkx(G, weight="weight")
    nodes = list(G.nodes)  # paris, ('x', 1), berlin, frozenset
    assert A.num_nodes == 4
    assert np.allclose(dense(A).numpy(), nx.to_numpy_array(G, nodelist=nodes, weight="weight"))
    assert sorted((r, c) for r, c, _ in triples(A)) == sorted([(0, 1), (1, 2), (2, 0)])


def test_from_networkx_multigraph_and_empty():
    G = nx.MultiDiGraph([(0, 1), (0, 1), (1, 0)])
    A = gs.Matrix.from_networkx(G)
    assert A.num_edges == 3 and dense(A)[0, 1] == 2
    E = gs.Matrix.from_networkx(nx.empty_graph(3))
    assert E.num_nodes == 3 and E.num_edges == 0
    with pytest.raises(TypeError, match=r"\bgraph\b"):
        gs.Matrix.from_networkx([(0, 1)])


# ----------------------------------------------------------------------------- from_pyg
def test_from_pyg():
    from torch_geometric.data import Data

    ei = torch.tensor([[0, 2, 1, 2], [1, 1, 3, 0]])
    w = torch.tensor([0.5, 1.0, 2.0, 4.0])
    data = Data(edge_index=ei, edge_weight=w, num_nodes=6)
    A = gs.Matrix.from_pyg(data)
    assert A.num_nodes == 6 and A.num_edges == 4
    ref = torch.zeros(6, 6, dtype=torch.float64)
    ref[ei[0], ei[1]] = w.double()  # source -> target, PyG's default flow
    assert torch.equal(dense(A), ref)
    assert triples(A) == csc_order(ei[0].tolist(), ei[1].tolist())
    # no weights: all ones; weight=None ignores edge_weight
    assert torch.equal(gs.Matrix.from_pyg(Data(edge_index=ei, num_nodes=4)).values, torch.ones(4))
    assert torch.equal(gs.Matrix.from_pyg(data, weight=None).values, torch.ones(4))
    # another attribute name
    data2 = Data(edge_index=ei, w2=w * 2, num_nodes=4)
    assert torch.equal(dense(gs.Matrix.from_pyg(data2, weight="w2"))[:4, :4], (ref * 2)[:4, :4])


def test_from_pyg_matches_pyg_neighbourhoods():
    from torch_geometric.data import Data
    from torch_geometric.utils import to_scipy_sparse_matrix

    g = torch.Generator().manual_seed(3)
    ei = torch.randint(0, 40, (2, 300), generator=g)
    A = gs.Matrix.from_pyg(Data(edge_index=ei, num_nodes=40))
    ref = to_scipy_sparse_matrix(ei, num_nodes=40).toarray()
    assert np.allclose(dense(A).numpy(), ref)


# ----------------------------------------------------------------------------- read_snap
SNAP_TEXT = """# Directed graph (each unordered pair of nodes is saved once): tiny.txt
# Nodes: 5 Edges: 6
# FromNodeId\tToNodeId
10\t20
20\t30
  # an indented comment
10\t30

30 10
40\t10
20\t20
"""
SNAP_EDGES = [(10, 20), (20, 30), (10, 30), (30, 10), (40, 10), (20, 20)]


def _write(tmp_path, name, text):
    p = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(p, "wt") as f:
            f.write(text)
    else:
        p.write_text(text)
    return p


@pytest.mark.parametrize("name", ["tiny.txt", "tiny.txt.gz"])
def test_read_snap(tmp_path, name):
    p = _write(tmp_path, name, SNAP_TEXT)
    A = gs.datasets.read_snap(p)
    assert A.num_nodes == 41 and A.num_edges == 6  # largest id + 1
    src, dst = zip(*SNAP_EDGES)
    assert triples(A) == csc_order(src, dst)  # ids = line positions
    assert torch.equal(A.values, torch.ones(6))
    B = gs.datasets.read_snap(str(p), num_nodes=50)
    assert B.num_nodes == 50 and triples(B) == triples(A)


@pytest.mark.parametrize("name", ["tiny.txt", "tiny.txt.gz"])
def test_read_snap_relabel_undirected(tmp_path, name):
    p = _write(tmp_path, name, SNAP_TEXT)
    A = gs.datasets.read_snap(p, relabel=True)
    relabel = {10: 0, 20: 1, 30: 2, 40: 3}  # ascending order of the ids
    assert A.num_nodes == 4
    src = [relabel[s] for s, _ in SNAP_EDGES]
    dst = [relabel[d] for _, d in SNAP_EDGES]
    assert triples(A) == csc_order(src, dst)
    U = gs.datasets.read_snap(p, relabel=True, undirected=True)
    assert U.num_nodes == 4 and U.num_edges == 12
    # edge e reversed gets id E + e
    assert triples(U) == csc_order(src + dst, dst + src)
    d = dense(U)
    assert torch.equal(d, d.T)


def test_read_snap_comments_only_and_missing(tmp_path):
    p = _write(tmp_path, "empty.txt", "# nothing\n# here\n")
    A = gs.datasets.read_snap(p)
    assert A.num_edges == 0 and A.num_nodes == 0
    assert gs.datasets.read_snap(p, num_nodes=3).num_nodes == 3
    with pytest.raises(FileNotFoundError, match=r"\bpath\b"):
        gs.datasets.read_snap(tmp_path / "nope.txt")


def test_read_snap_malformed_is_a_clear_error(tmp_path):
    p = _write(tmp_path, "bad.txt", "1\t2\n3\tx\n")
    with pytest.raises(ValueError, match=r"\bpath\b"):
        gs.datasets.read_snap(p)
    odd = _write(tmp_path, "odd.txt", "1\t2\n3\n")
    with pytest.raises(ValueError, match=r"\bpath\b"):
        gs.datasets.read_snap(odd)


def test_read_snap_three_columns_not_misparsed(tmp_path):
    # SNAP's temporal graphs have a third column (a timestamp). Reading one must
    # either take the first two columns or refuse, never pair ids across lines.
    p = _write(tmp_path, "temporal.txt", "# src dst ts\n0 1 100\n1 2 101\n")
    try:
        A = gs.datasets.read_snap(p)
    except ValueError as e:
        assert "path" in str(e)
    else:
        assert sorted((r, c) for r, c, _ in triples(A)) == [(0, 1), (1, 2)]


def test_read_snap_epinions():
    A = gs.datasets.read_snap(snap_path("soc-Epinions1.txt.gz"), relabel=True)
    assert A.num_nodes == 75_879
    assert A.num_edges == 508_837
    # without relabelling, the id space is max id + 1 and 75,879 ids occur
    B = gs.datasets.read_snap(snap_path("soc-Epinions1.txt.gz"))
    r, c, _ = B.edges()
    assert B.num_edges == 508_837
    assert torch.unique(torch.cat([r, c])).numel() == 75_879
    assert B.num_nodes == int(torch.cat([r, c]).max()) + 1
    # the first edge of the file is 0 -> 4 and has edge id 0
    assert triples(B[:, torch.tensor([4])]).count((0, 4, 0)) == 1


# ----------------------------------------------------------------------------- rmat
def test_rmat_exact_reproducible_in_range():
    n, m = 3000, 40_000  # n not a power of two: ids are folded
    A = gs.datasets.rmat(n, m, seed=0)
    assert A.num_nodes == n and A.num_edges == m
    r, c, e = A.edges()
    assert int(r.min()) >= 0 and int(r.max()) < n and int(c.min()) >= 0 and int(c.max()) < n
    assert torch.equal(torch.sort(e).values, torch.arange(m))
    assert torch.equal(A.values, torch.ones(m))
    B = gs.datasets.rmat(n, m, seed=0)
    assert same_edges(A, B)
    C = gs.datasets.rmat(n, m, seed=1)
    assert not same_edges(A, C)
    assert not torch.equal(A.sum(axis=0), C.sum(axis=0))
    # the graph does not depend on how generation is chunked
    D = gs.datasets.rmat(n, m, seed=0, chunk=4096)
    assert same_edges(A, D)


def test_rmat_skewed_degrees():
    n, m = 4096, 60_000
    A = gs.datasets.rmat(n, m, seed=2)
    indeg = A.sum(axis=0)
    outdeg = A.sum(axis=1)
    mean = m / n
    assert float(indeg.max()) > 20 * mean and float(outdeg.max()) > 20 * mean
    # heavy tail: the top 1% of nodes hold a large share of the edges
    top = torch.sort(indeg, descending=True).values[: n // 100].sum()
    assert float(top) > 0.15 * m
    # many nodes are far below the mean
    assert float((indeg < mean / 2).float().mean()) > 0.3


def test_rmat_weighted():
    A = gs.datasets.rmat(2000, 20_000, seed=4, weighted=True)
    w = A.values
    assert w.is_floating_point() and w.shape == (20_000,)
    assert float(w.min()) >= 1.0 and float(w.max()) < 5.0
    assert float(w.min()) < 1.1 and float(w.max()) > 4.9  # the whole range is used
    assert abs(float(w.mean()) - 3.0) < 0.05
    B = gs.datasets.rmat(2000, 20_000, seed=4, weighted=True)
    assert torch.equal(A.values, B.values)
    U = gs.datasets.rmat(2000, 20_000, seed=4)
    assert same_edges(U, A)  # weights do not change the structure


def test_rmat_edge_cases():
    assert gs.datasets.rmat(10, 0).num_edges == 0
    assert gs.datasets.rmat(1, 5).edges()[0].tolist() == [0] * 5
    with pytest.raises(ValueError, match=r"\bnum_nodes\b"):
        gs.datasets.rmat(0, 5)
    with pytest.raises(ValueError, match=r"\bnum_edges\b"):
        gs.datasets.rmat(10, -1)
    with pytest.raises(ValueError, match=r"a, b, c"):
        gs.datasets.rmat(10, 10, a=0.9, b=0.2, c=0.1)
