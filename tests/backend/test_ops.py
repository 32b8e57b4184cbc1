"""Semantics of every non-random operator against an independent dense reference.

The reference is the dense ``|V| x |V|`` matrix ``D`` with ``D[src, dst] = weight``
(and a boolean mask of the stored entries, so that explicit zeros and negative
values stay distinguishable from "no edge"). A sub-matrix ``A[rows, cols]`` must
equal ``D[rows][:, cols]`` (a column per position of ``cols``, repeats included),
and every reduction, broadcast, product and finalize op is checked against the
same computation done on ``D`` with plain torch.
"""

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gsample as gs

# ----------------------------------------------------------------------------- reference

# A small weighted graph exercising the corner cases: a self-loop (2 -> 2), nodes
# without in-edges (4, 6), an isolated node (7), edges listed out of CSC order.
EDGES = [  # (src, dst, weight)
    (3, 1, 0.5),
    (0, 1, 1.5),
    (6, 0, 2.0),
    (2, 1, 2.0),
    (4, 2, 2.5),
    (1, 2, 3.0),
    (2, 2, 1.0),
    (5, 3, 4.0),
    (0, 3, 1.0),
    (3, 5, 1.25),
    (1, 5, 0.25),
]
N = 8


class Dense:
    """Dense reference: ``val`` (float64, R x C) and ``mask`` (bool, R x C)."""

    def __init__(self, val, mask):
        self.val, self.mask = val, mask

    @classmethod
    def of_edges(cls, edges, n):
        val = torch.zeros(n, n, dtype=torch.float64)
        mask = torch.zeros(n, n, dtype=torch.bool)
        for s, d, w in edges:
            val[s, d] += w
            mask[s, d] = True
        return cls(val, mask)

    def __getitem__(self, key):
        rows, cols = key
        val, mask = self.val, self.mask
        if rows is not None:
            val, mask = val[rows], mask[rows]
        if cols is not None:
            val, mask = val[:, cols], mask[:, cols]
        return Dense(val, mask)

    @property
    def T(self):
        return Dense(self.val.T, self.mask.T)

    def reduce(self, op, axis):
        cnt = self.mask.sum(axis).double()
        s = torch.where(self.mask, self.val, 0.0).sum(axis)
        if op == "sum":
            return s
        if op == "mean":
            return torch.where(cnt > 0, s / cnt.clamp(min=1), 0.0)
        if self.mask.shape[axis] == 0:
            return torch.zeros(self.mask.shape[1 - axis], dtype=torch.float64)
        m = torch.where(self.mask, self.val, -math.inf).amax(axis)
        return torch.where(cnt > 0, m, 0.0)


def dense_of(M: gs.Matrix) -> Dense:
    """The matrix as a dense (R, C) reference, positions of its row and column spaces."""
    R, C = M.shape
    csc = M.csc
    deg = (csc.indptr[1:] - csc.indptr[:-1]).cpu()
    cols = torch.repeat_interleave(torch.arange(C), deg)
    rows = csc.rows.cpu()
    vals = M.values.detach().cpu().double()
    val = torch.zeros((R, C) + tuple(vals.shape[1:]), dtype=torch.float64)
    val.index_put_((rows, cols), vals, accumulate=True)
    mask = torch.zeros(R, C, dtype=torch.bool)
    mask[rows, cols] = True
    return Dense(val, mask)


def assert_dense_equal(M, ref: Dense):
    assert M.shape == tuple(ref.mask.shape)
    got = dense_of(M)
    assert torch.equal(got.mask, ref.mask)
    torch.testing.assert_close(got.val[ref.mask], ref.val[ref.mask], rtol=1e-5, atol=1e-6)
    assert int(M.num_edges) == int(ref.mask.sum())


def ref_edges(edges, cols, rows=None, n=N):
    """Expected ``edges()`` of ``A[rows, cols]`` in CSC order.

    Columns in frontier order; within a column by row id, then original edge id.
    """
    rowset = None if rows is None else set(int(r) for r in rows)
    cols = range(n) if cols is None else [int(c) for c in cols]
    out = []
    for c in cols:
        col = sorted(
            (s, e)
            for e, (s, d, _) in enumerate(edges)
            if d == c and (rowset is None or s in rowset)
        )
        out += [(s, c, e) for s, e in col]
    return out


def triples(M):
    r, c, e = M.edges()
    return list(zip(r.tolist(), c.tolist(), e.tolist()))


def ids(x, device, dtype=torch.int64):
    return torch.tensor(x, dtype=dtype, device=device)


@pytest.fixture
def A(device):
    ei = torch.tensor([[s for s, _, _ in EDGES], [d for _, d, _ in EDGES]], device=device)
    w = torch.tensor([w for _, _, w in EDGES], device=device)
    return gs.Matrix.from_edge_index(ei, num_nodes=N, weight=w)


@pytest.fixture
def D():
    return Dense.of_edges(EDGES, N)


# A frontier with a repeated node, a node without in-edges (4) and an isolated one (7).
COLS = [1, 5, 1, 4, 2, 7]
ROWS = [5, 2, 0, 7, 3]  # unique, unsorted; 7 holds no edge


# ----------------------------------------------------------------------------- the graph
def test_graph_itself(A, D, device):
    assert A.num_nodes == N
    assert A.num_edges == len(EDGES)
    assert A.shape == (N, N)
    assert A.device.type == device.type
    assert_dense_equal(A, D)
    assert triples(A) == ref_edges(EDGES, None)
    assert torch.equal(A.row_ids.cpu(), torch.arange(N))
    assert torch.equal(A.col_ids.cpu(), torch.arange(N))


# ----------------------------------------------------------------------------- extract
def test_slice_cols_repeated(A, D, device):
    sub = A[:, ids(COLS, device)]
    assert sub.shape == (N, len(COLS))
    assert sub.num_nodes == N
    assert_dense_equal(sub, D[None, COLS])
    assert triples(sub) == ref_edges(EDGES, COLS)
    assert sub.column().tolist() == COLS
    assert sub.col_ids.tolist() == COLS
    assert sub.row_ids.tolist() == list(range(N))
    # values follow the edges they belong to
    w = torch.tensor([w for _, _, w in EDGES], dtype=torch.float32)
    assert torch.equal(sub.values.cpu(), w[sub.edges()[2].cpu()])


def test_slice_cols_accepts_lists_and_ints(A, D):
    assert triples(A[:, [1, 1, 3]]) == ref_edges(EDGES, [1, 1, 3])
    assert triples(A[:, 2]) == ref_edges(EDGES, [2])


def test_slice_cols_of_submatrix(A, D, device):
    sub = A[:, ids([1, 2, 2, 5], device)]
    # 7 and 0 are nodes of the graph but not in sub's column space: empty columns
    # (node 0 has an in-edge in the graph, which must not come back).
    cols2 = [2, 7, 1, 2, 0]
    sub2 = sub[:, ids(cols2, device)]
    assert sub2.shape == (N, len(cols2))
    ref = D[None, cols2].val.clone(), D[None, cols2].mask.clone()
    ref[0][:, [1, 4]] = 0
    ref[1][:, [1, 4]] = False
    assert_dense_equal(sub2, Dense(*ref))
    assert sub2.column().tolist() == cols2
    assert sub2.sum(axis=0).tolist()[1] == 0 and sub2.sum(axis=0).tolist()[4] == 0
    exp = [t for t in ref_edges(EDGES, cols2) if t[1] not in (7, 0)]
    assert triples(sub2) == exp


def test_slice_rows(A, D, device):
    sub = A[ids(ROWS, device), :]
    assert sub.shape == (len(ROWS), N)
    assert sub.row_ids.tolist() == ROWS
    assert sub.col_ids.tolist() == list(range(N))
    assert_dense_equal(sub, D[ROWS, None])
    assert triples(sub) == ref_edges(EDGES, None, ROWS)


def test_slice_rows_of_submatrix(A, D, device):
    sub = A[ids([0, 1, 2, 3], device), :]
    # 5 is a node of the graph but not of sub's row space: an empty row
    sub2 = sub[ids([5, 2, 0], device), :]
    ref = D[[5, 2, 0], None]
    ref.val[0], ref.mask[0] = 0, False
    assert_dense_equal(sub2, ref)
    assert sub2.row_ids.tolist() == [5, 2, 0]
    assert sub2.sum(axis=1).tolist()[0] == 0


def test_slice_rows_and_cols(A, D, device):
    rows, cols = ids(ROWS, device), ids(COLS, device)
    sub = A[rows, cols]
    ref = D[ROWS, COLS]
    assert_dense_equal(sub, ref)
    assert sub.row_ids.tolist() == ROWS and sub.col_ids.tolist() == COLS
    assert triples(sub) == ref_edges(EDGES, COLS, ROWS)
    # the same as slicing in either order
    assert_dense_equal(A[:, cols][rows, :], ref)
    assert_dense_equal(A[rows, :][:, cols], ref)
    assert triples(A[:, cols][rows, :]) == triples(sub)


def test_slice_full_slices(A, D):
    assert_dense_equal(A[:, :], D)
    assert triples(A[:, :]) == triples(A)


# ----------------------------------------------------------------------------- edge maps
def _ops():
    return {
        "mul": (lambda M, x: M * x, lambda d, x: d * x),
        "rmul": (lambda M, x: x * M, lambda d, x: x * d),
        "add": (lambda M, x: M + x, lambda d, x: d + x),
        "radd": (lambda M, x: x + M, lambda d, x: x + d),
        "sub": (lambda M, x: M - x, lambda d, x: d - x),
        "rsub": (lambda M, x: x - M, lambda d, x: x - d),
        "div": (lambda M, x: M / x, lambda d, x: d / x),
        "rdiv": (lambda M, x: x / M, lambda d, x: x / d),
        "pow": (lambda M, x: M**x, lambda d, x: d**x),
    }


EDGE_OPS = _ops()


@pytest.mark.parametrize("kind", ["scalar", "int_scalar", "edge_tensor", "matrix"])
@pytest.mark.parametrize("name", list(EDGE_OPS))
@pytest.mark.parametrize("on_sub", [False, True], ids=["graph", "sub"])
def test_edge_map(A, D, device, name, kind, on_sub):
    op, ref_op = EDGE_OPS[name]
    M, ref = (A[:, ids(COLS, device)], D[None, COLS]) if on_sub else (A, D)
    # an independent dense operand X, read at each edge's (row, col) position
    X = torch.arange(1, 1 + ref.val.numel(), dtype=torch.float64).reshape(ref.val.shape) / 7 + 0.5
    X = X.float().double()  # exactly representable in float32
    if kind in ("scalar", "int_scalar"):
        x = 2.5 if kind == "scalar" else 2
        xd = x
        out = op(M, x)
    else:
        xd = X
        got_ref = dense_of(M)  # positions of the edges in M's (R, C) space
        csc = M.csc
        deg = (csc.indptr[1:] - csc.indptr[:-1]).cpu()
        pos = (csc.rows.cpu(), torch.repeat_interleave(torch.arange(M.shape[1]), deg))
        xe = X[pos].float().to(device)
        assert got_ref.mask[pos].all()
        other = xe if kind == "edge_tensor" else M * 0 + xe  # a same-sparsity Matrix
        out = op(M, other)
    assert isinstance(out, gs.Matrix)
    assert triples(out) == triples(M)  # same sparsity, same edges
    assert out.shape == M.shape
    exp = Dense(ref_op(ref.val, xd), ref.mask)
    assert_dense_equal(out, exp)
    assert out.values.is_floating_point()


def test_neg(A, D, device):
    for M, ref in ((A, D), (A[ids(ROWS, device), ids(COLS, device)], D[ROWS, COLS])):
        out = -M
        assert triples(out) == triples(M)
        assert_dense_equal(out, Dense(-ref.val, ref.mask))


def test_edge_map_zero_values_keep_edges(A, D):
    out = A - A  # explicit zeros: the edges stay
    assert out.num_edges == A.num_edges
    assert torch.equal(out.values.cpu(), torch.zeros(A.num_edges))
    assert torch.equal(out.sum(axis=0).cpu(), torch.zeros(N))


def test_edge_map_unweighted_graph(device):
    A = gs.Matrix.from_edge_index(torch.tensor([[0, 1], [1, 0]], device=device))
    assert torch.equal(A.values.cpu(), torch.ones(2))
    assert torch.equal((A * 3).values.cpu(), torch.full((2,), 3.0))
    assert torch.equal((A**2 + 1).values.cpu(), torch.full((2,), 2.0))


# ----------------------------------------------------------------------------- broadcasts
BCAST = {"mul": torch.mul, "div": torch.div, "add": torch.add, "sub": torch.sub}


@pytest.mark.parametrize("op", list(BCAST))
@pytest.mark.parametrize("axis", [0, 1])
def test_broadcast(A, D, device, op, axis):
    M, ref = A[ids(ROWS, device), ids(COLS, device)], D[ROWS, COLS]
    R, C = M.shape
    n = C if axis == 0 else R
    v = torch.arange(1, n + 1, dtype=torch.float64) * 0.75
    out = getattr(M, op)(v.float().to(device), axis)
    vv = v[None, :] if axis == 0 else v[:, None]  # axis=0: v[j]; axis=1: v[i]
    assert triples(out) == triples(M)
    assert_dense_equal(out, Dense(BCAST[op](ref.val, vv), ref.mask))
    # keyword form
    out2 = getattr(M, op)(v.float().to(device), axis=axis)
    assert torch.equal(out2.values, out.values)


def test_broadcast_normalise_columns(A, D, device):
    sub = A[:, ids(COLS, device)]
    s = sub.sum(axis=0)
    norm = sub.div(torch.where(s > 0, s, torch.ones_like(s)), axis=0)
    got = norm.sum(axis=0).cpu()
    exp = (D[None, COLS].mask.sum(0) > 0).float()
    torch.testing.assert_close(got, exp)


# ----------------------------------------------------------------------------- reductions
def operand(which, A, D, device):
    """``(M, dense reference)``: the graph, a column slice, a row and column slice, or
    (``"neg"``) a negated column slice."""
    if which == "graph":
        return A, D
    if which == "cols":
        return A[:, ids(COLS, device)], D[None, COLS]
    if which == "rows_cols":
        return A[ids(ROWS, device), ids(COLS, device)], D[ROWS, COLS]
    assert which == "neg"  # negative values: max must not be clipped at 0 on non-empty segments
    return -A[:, ids(COLS, device)], Dense(-D[None, COLS].val, D[None, COLS].mask)


@pytest.mark.parametrize("op", ["sum", "max", "mean"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("which", ["graph", "cols", "rows_cols", "neg"])
def test_reductions(A, D, device, op, axis, which):
    M, ref = operand(which, A, D, device)
    got = getattr(M, op)(axis)
    exp = ref.reduce(op, axis)
    assert got.shape == ((M.shape[1],) if axis == 0 else (M.shape[0],))
    assert got.device.type == device.type
    torch.testing.assert_close(got.cpu().double(), exp)
    # empty columns / rows give exactly 0
    empty = ~ref.mask.any(axis)
    assert torch.all(got.cpu()[empty] == 0)
    torch.testing.assert_close(getattr(M, op)(axis=axis), got)


def test_reductions_multi_edges(device):
    # a repeated edge is two edges: it counts twice in sum and mean, once per value in max
    ei = torch.tensor([[0, 0, 1], [2, 2, 2]], device=device)
    A = gs.Matrix.from_edge_index(
        ei, num_nodes=3, weight=torch.tensor([1.0, 3.0, 2.0], device=device)
    )
    assert A.sum(0).tolist() == [0, 0, 6]
    assert A.mean(0).tolist() == [0, 0, 2]
    assert A.max(0).tolist() == [0, 0, 3]
    assert A.sum(1).tolist() == [4, 2, 0]
    assert A.mean(1).tolist() == [2, 2, 0]
    assert A.max(1).tolist() == [3, 2, 0]


# ----------------------------------------------------------------------------- products
@pytest.mark.parametrize("feat", [None, 3])
@pytest.mark.parametrize("which", ["graph", "cols", "rows_cols"])
def test_spmm(A, D, device, feat, which):
    M, ref = operand(which, A, D, device)
    R, C = M.shape
    g = torch.Generator().manual_seed(0)
    shape_c = (C,) if feat is None else (C, feat)
    shape_r = (R,) if feat is None else (R, feat)
    Xc = torch.randn(shape_c, generator=g, dtype=torch.float64)
    Xr = torch.randn(shape_r, generator=g, dtype=torch.float64)
    dense = torch.where(ref.mask, ref.val, 0.0)
    out = M @ Xc.float().to(device)
    assert out.shape == shape_r and out.device.type == device.type
    torch.testing.assert_close(out.cpu().double(), dense @ Xc, rtol=1e-5, atol=1e-5)
    out_t = M.T @ Xr.float().to(device)
    assert out_t.shape == shape_c
    torch.testing.assert_close(out_t.cpu().double(), dense.T @ Xr, rtol=1e-5, atol=1e-5)


def test_spmm_float64_and_int(A, D, device):
    X = torch.arange(N, dtype=torch.float64, device=device)
    dense = torch.where(D.mask, D.val, 0.0)
    torch.testing.assert_close((A @ X).cpu().double(), dense @ X.cpu())
    Xi = torch.arange(N, device=device)
    torch.testing.assert_close((A @ Xi).cpu().double(), dense @ Xi.cpu().double())


@pytest.mark.parametrize("which", ["graph", "cols", "rows_cols"])
def test_transpose(A, D, device, which):
    M, ref = operand(which, A, D, device)
    Mt = M.T
    assert Mt.shape == (M.shape[1], M.shape[0])
    assert Mt.num_nodes == M.num_nodes and Mt.num_edges == M.num_edges
    assert_dense_equal(Mt, ref.T)
    assert torch.equal(Mt.row_ids, M.col_ids)
    assert torch.equal(Mt.col_ids, M.row_ids)
    # edges are the same set with ends swapped, with their edge ids and values
    r, c, e = M.edges()
    rt, ct, et = Mt.edges()
    a = sorted(zip(r.tolist(), c.tolist(), e.tolist(), M.values.tolist()))
    b = sorted(zip(ct.tolist(), rt.tolist(), et.tolist(), Mt.values.tolist()))
    assert a == b
    assert_dense_equal(Mt.T, ref)
    torch.testing.assert_close(Mt.sum(axis=0), M.sum(axis=1))
    torch.testing.assert_close(Mt.sum(axis=1), M.sum(axis=0))


SDDMM = {
    "dot": lambda u, v: (u * v).sum(-1) if u.dim() == 3 else u * v,
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
}


@pytest.mark.parametrize("op", list(SDDMM))
@pytest.mark.parametrize("feat", [None, 4])
def test_sddmm(A, D, device, op, feat):
    M, ref = A[ids(ROWS, device), ids(COLS, device)], D[ROWS, COLS]
    R, C = M.shape
    g = torch.Generator().manual_seed(1)
    U = torch.rand((R,) if feat is None else (R, feat), generator=g, dtype=torch.float64) + 0.5
    V = torch.rand((C,) if feat is None else (C, feat), generator=g, dtype=torch.float64) + 0.5
    out = gs.sddmm(M, U.to(device), V.to(device), op)
    assert isinstance(out, gs.Matrix)
    assert triples(out) == triples(M)
    if feat is None or op == "dot":
        assert out.values.shape == (M.num_edges,)
    else:
        assert out.values.shape == (M.num_edges, feat)
    if feat is None:
        full = SDDMM[op](U[:, None], V[None, :])
    else:
        full = SDDMM[op](U[:, None, :], V[None, :, :])
    got = dense_of(out)
    assert torch.equal(got.mask, ref.mask)
    torch.testing.assert_close(got.val[ref.mask], full[ref.mask])
    if op == "dot":  # default op
        torch.testing.assert_close(gs.sddmm(M, U.to(device), V.to(device)).values, out.values)


def test_sddmm_dot_memory_is_a_chunks(monkeypatch):
    """``sddmm(..., "dot")`` of feature rows on the CPU never gathers more than a chunk of
    edges at a time (a super-batch's PASS attention: N times a mini-batch's edges, whose
    whole (E, F) temporaries cost more than N mini-batches' do), and gives the unchunked
    values bit for bit."""
    from gsample.backend.torch import compute

    A = gs.datasets.rmat(2000, 30000, seed=4)
    g = torch.Generator().manual_seed(2)
    U = torch.randn(A.num_nodes, 16, generator=g)
    V = torch.randn(A.num_nodes, 16, generator=g)
    rows, cols = A.csc.rows, A.csc.edge_cols()
    want = (U[rows] * V[cols]).sum(-1)
    gathered = []
    real = compute._rows_of

    def spy(x, index):
        gathered.append(index.numel())
        return real(x, index)

    monkeypatch.setattr(compute, "_rows_of", spy)
    monkeypatch.setattr(compute, "DOT_CHUNK", 16 * 1000)  # 1000 edges of 16 features
    got = gs.sddmm(A, U, V, "dot").values
    assert torch.equal(got, want)
    assert max(gathered) <= 1000 and sum(gathered) == 2 * A.num_edges
    assert len(gathered) >= 2 * (A.num_edges // 1000)


# ----------------------------------------------------------------------------- finalize
def test_row_column_all_nodes(A, D, device):
    cols = [5, 1, 5, 7, 4]
    sub = A[:, ids(cols, device)]
    ref = D[None, cols]
    rows_with_edges = ref.mask.any(1).nonzero().squeeze(1).tolist()
    assert sub.row().tolist() == rows_with_edges  # row-space order (ascending here)
    assert sub.column().tolist() == cols  # repeats kept
    first = list(dict.fromkeys(cols))
    exp = first + [r for r in rows_with_edges if r not in first]
    assert sub.all_nodes().tolist() == exp
    nodes = sub.all_nodes()
    assert nodes.unique().numel() == nodes.numel()
    for t in (sub.row(), sub.column(), sub.all_nodes()):
        assert t.dtype == torch.int64 and t.device.type == device.type


def test_finalize_in_row_space_order(A, D, device):
    rows, cols = [5, 3, 0, 2, 1], [2, 1, 5, 3]
    sub = A[ids(rows, device), ids(cols, device)]
    ref = D[rows, cols]
    with_edges = [rows[i] for i in range(len(rows)) if ref.mask[i].any()]
    assert sub.row().tolist() == with_edges  # row space order, not sorted
    first = list(dict.fromkeys(cols))
    assert sub.all_nodes().tolist() == first + [r for r in with_edges if r not in first]


def test_row_of_empty_sample(A, device):
    s = A[:, ids([4, 6], device)]  # no in-edges
    assert s.num_edges == 0
    assert s.row().tolist() == []
    assert s.all_nodes().tolist() == [4, 6]
    assert s.edges()[0].tolist() == []
    assert s.sum(0).tolist() == [0, 0] and s.max(1).tolist() == [0] * N


def test_edges_global_ids_and_eids(A, device):
    src = torch.tensor([s for s, _, _ in EDGES])
    dst = torch.tensor([d for _, d, _ in EDGES])
    w = torch.tensor([w for _, _, w in EDGES])
    for M in (
        A,
        A[:, ids(COLS, device)],
        A[ids(ROWS, device), ids(COLS, device)],
        A[:, ids(COLS, device)].compact(),
        A[:, ids(COLS, device)].T.T,
    ):
        r, c, e = (t.cpu() for t in M.edges())
        assert r.dtype == c.dtype == e.dtype == torch.int64
        assert r.shape == c.shape == e.shape == (M.num_edges,)
        assert torch.equal(src[e], r) and torch.equal(dst[e], c)
        assert torch.equal(w[e], M.values.cpu())


def test_compact(A, D, device):
    sub = A[:, ids(COLS, device)]
    cmp = sub.compact()
    rows = sub.row()
    assert cmp.shape == (rows.numel(), len(COLS))
    assert torch.equal(cmp.row_ids, rows)
    assert torch.equal(cmp.row(), rows)
    assert triples(cmp) == triples(sub)
    assert_dense_equal(cmp, D[rows.cpu(), COLS])
    torch.testing.assert_close(cmp.sum(axis=1), sub.sum(axis=1)[rows])
    torch.testing.assert_close(cmp.sum(axis=0), sub.sum(axis=0))
    assert torch.equal(cmp.all_nodes(), sub.all_nodes())
    # on a row-sliced matrix with unsorted rows, row space order is kept
    sub2 = A[ids(ROWS, device), ids(COLS, device)].compact()
    assert sub2.row_ids.tolist() == [r for r in ROWS if D[[r], COLS].mask.any()]
    assert_dense_equal(sub2, D[sub2.row_ids.cpu(), COLS])


def test_to_device(A, D, device):
    B = A.to("cpu").to(device)
    assert B.device.type == device.type
    assert_dense_equal(B, D)
    sub = A[:, ids(COLS, device)]
    moved = sub.to("cpu")
    assert moved.device.type == "cpu"
    assert moved.shape == sub.shape and moved.num_nodes == sub.num_nodes
    assert triples(moved) == triples(sub)
    assert torch.equal(moved.values, sub.values.cpu())
    for t in (moved.row_ids, moved.col_ids, moved.values, moved.csc.indptr, moved.csc.rows):
        assert t.device.type == "cpu"
    back = moved.to(device)
    assert back.device.type == device.type and triples(back) == triples(sub)
    assert B.to(torch.device("cpu")).device == torch.device("cpu")


def test_shape_num_nodes_num_edges(A, device):
    sub = A[ids(ROWS, device), ids(COLS, device)]
    assert sub.num_nodes == N
    assert sub.shape == (len(ROWS), len(COLS))
    assert sub.num_edges == len(ref_edges(EDGES, COLS, ROWS))
    assert isinstance(sub.num_edges, int) and isinstance(sub.num_nodes, int)
    assert all(isinstance(x, int) for x in sub.shape)


# ----------------------------------------------------------------------------- property test
@st.composite
def graphs(draw):
    n = draw(st.integers(1, 12))
    pairs = draw(
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=40, unique=True)
    )
    ws = draw(st.lists(st.integers(1, 8), min_size=len(pairs), max_size=len(pairs)))
    edges = [(s, d, w / 4) for (s, d), w in zip(pairs, ws)]
    cols = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=10))
    rows = draw(st.none() | st.lists(st.integers(0, n - 1), unique=True, max_size=n))
    feat = draw(st.sampled_from([None, 2]))
    return n, edges, cols, rows, feat


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(g=graphs())
def test_property_slicing_reductions_spmm(device, g):
    n, edges, cols, rows, feat = g
    if edges:
        ei = torch.tensor([[s for s, _, _ in edges], [d for _, d, _ in edges]], device=device)
    else:
        ei = torch.zeros(2, 0, dtype=torch.int64, device=device)
    w = torch.tensor([w for _, _, w in edges], dtype=torch.float32, device=device)
    A = gs.Matrix.from_edge_index(ei, num_nodes=n, weight=w)
    D = Dense.of_edges(edges, n)
    sub = A[:, torch.tensor(cols, device=device)]
    ref = D[None, cols]
    if rows is not None:
        sub = sub[torch.tensor(rows, dtype=torch.int64, device=device), :]
        ref = ref[rows, None]
    assert_dense_equal(sub, ref)
    for op in ("sum", "max", "mean"):
        for axis in (0, 1):
            torch.testing.assert_close(getattr(sub, op)(axis).cpu().double(), ref.reduce(op, axis))
    R, C = sub.shape
    dense = torch.where(ref.mask, ref.val, 0.0)
    Xc = torch.arange(C * (feat or 1), dtype=torch.float64).reshape(
        (C,) if feat is None else (C, feat)
    )
    Xr = torch.arange(R * (feat or 1), dtype=torch.float64).reshape(
        (R,) if feat is None else (R, feat)
    )
    torch.testing.assert_close((sub @ Xc.to(device)).cpu(), dense @ Xc)
    torch.testing.assert_close((sub.T @ Xr.to(device)).cpu(), dense.T @ Xr)
    row_space = list(range(n)) if rows is None else rows
    with_edges = [row_space[i] for i in range(R) if ref.mask[i].any()]
    assert sub.row().tolist() == with_edges
    first = list(dict.fromkeys(cols))
    assert sub.all_nodes().tolist() == first + [r for r in with_edges if r not in first]
    assert triples(sub) == ref_edges(edges, cols, rows, n)


# ----------------------------------------------------------------------------- feature values
@pytest.mark.parametrize("F", [2, 3])
def test_edge_map_on_feature_values(device, F):
    # After an elementwise SDDMM the values are (E, F); an edge-aligned operand of
    # shape (E,) (or a per-column / per-row broadcast) scales each edge's whole
    # feature row. F = 3 = E is the case where a wrong broadcast would go unnoticed.
    ei = torch.tensor([[0, 1, 2], [1, 2, 0]], device=device)
    A = gs.Matrix.from_edge_index(ei, num_nodes=3)
    U = torch.ones(3, F, device=device)
    V = torch.arange(3 * F, dtype=torch.float32, device=device).reshape(3, F)
    Fm = gs.sddmm(A, U, V, "mul")
    vals = Fm.values.cpu()
    assert vals.shape == (3, F)
    x = torch.tensor([1.0, 2.0, 3.0])
    torch.testing.assert_close((Fm * x.to(device)).values.cpu(), vals * x[:, None])
    torch.testing.assert_close((Fm + x.to(device)).values.cpu(), vals + x[:, None])
    col_of_edge = Fm.edges()[1].cpu()
    torch.testing.assert_close(Fm.mul(x.to(device), 0).values.cpu(), vals * x[col_of_edge][:, None])
    row_of_edge = Fm.edges()[0].cpu()
    torch.testing.assert_close(Fm.div(x.to(device), 1).values.cpu(), vals / x[row_of_edge][:, None])
    # an (E, F) operand is elementwise
    torch.testing.assert_close((Fm * Fm).values.cpu(), vals * vals)
