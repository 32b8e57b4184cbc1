"""Layer-wise sampling's frontier passes in native code (``layerwise_native``: ``A[:,
cols].sum(axis=1)`` and the fused collective sample) against the torch code they replace, bit
for bit, and against brute-force versions written here."""

from __future__ import annotations

import functools
import os
from dataclasses import fields

import numpy as np
import pytest
import torch
from helpers import in_forked_child

import gsample as gs
from gsample.backend.torch import fused_reduce, fused_select, layerwise_native
from gsample.formats.csc import CSC

pytestmark = pytest.mark.skipif(
    not layerwise_native.available(), reason="no C++ compiler for the native CPU code"
)


def _graph(dtype=torch.float32, width=None, eids=False, seed=5) -> CSC:
    """An R-MAT graph of 3000 nodes (hubs, nodes without in-edges) with values of many
    magnitudes, so that a row's sum depends on the order of its additions."""
    A = gs.datasets.rmat(3000, 30000, seed=seed).csc
    g = torch.Generator().manual_seed(seed)
    E = A.rows.numel()
    shape = (E,) if width is None else (E, width)
    v = (
        torch.rand(shape, generator=g, dtype=torch.float64)
        * 10.0 ** torch.randint(-6, 6, shape, generator=g)
    ).to(dtype)
    ids = torch.randperm(E, generator=g) + 7 if eids else None
    return CSC(A.num_nodes, A.indptr, A.rows, values=v, eids=ids)


@pytest.fixture(scope="module")
def graph():
    return _graph()


def _cols(n, C, seed=0):
    """A frontier with repeats, hubs and nodes without in-edges."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, n, (C,), generator=g)


def bits(t: torch.Tensor) -> torch.Tensor:
    """``t``'s bit patterns (so -0.0, 0.0 and NaNs compare exactly)."""
    return (
        t.view({4: torch.int32, 8: torch.int64}[t.element_size()]) if t.is_floating_point() else t
    )


def same(a: CSC, b: CSC):
    for f in fields(CSC):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
            assert x is not None and y is not None, f.name
            assert x.dtype == y.dtype and x.shape == y.shape, f.name
            assert torch.equal(bits(x), bits(y)), f.name
        else:
            assert x == y, f.name


def _fail(*a, **k):
    raise AssertionError("the torch code ran")


# ----------------------------------------------------------------------------- row sums
def torch_row_sum(A, cols, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(layerwise_native, "ENABLED", False)
        return fused_reduce.slice_reduce(A, cols, "sum", 1)


def native_row_sum(A, cols, monkeypatch):
    with monkeypatch.context() as m:  # the slice the torch code builds made to fail
        m.setattr(fused_reduce.extract, "slice_cols", _fail)
        return fused_reduce.slice_reduce(A, cols, "sum", 1)


def brute_row_sum(A, cols) -> np.ndarray:
    """Each row's sum, its edges added one by one from 0 in the slice's CSC order, in the
    values' own precision."""
    v = A.values.numpy()
    out = np.zeros(A.num_rows, dtype=v.dtype)
    indptr, rows = A.indptr.tolist(), A.rows.tolist()
    for c in cols.tolist():
        for e in range(indptr[c], indptr[c + 1]):
            out[rows[e]] = out[rows[e]] + v[e]
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("C", [0, 1, 40, 700])
def test_row_sum_equals_torch_and_brute_force(dtype, C, monkeypatch):
    A = _graph(dtype)
    cols = _cols(A.num_nodes, C, seed=C)
    got = native_row_sum(A, cols, monkeypatch)
    assert got.dtype == dtype and got.shape == (A.num_rows,)
    assert torch.equal(bits(got), bits(torch_row_sum(A, cols, monkeypatch)))
    assert torch.equal(bits(got), bits(torch.from_numpy(brute_row_sum(A, cols))))


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("rows_per_edge", [0, 1 << 40], ids=["ranked", "row-space"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("C", [1, 40, 700])
def test_listed_row_sum_is_the_row_sums_at_the_listed_rows(
    dtype, C, rows_per_edge, threads, monkeypatch
):
    """``listed_row_sum``: each listed row's edges added in the slice's order, bit for bit
    the brute force's, whether by a rank per edge (rows split between the threads) or over
    the row space and gathered (a row space of at most ``ROWS_PER_EDGE`` rows per edge);
    a row of the frontier left off the list sends the caller to the torch code."""
    A = _graph(dtype)
    cols = _cols(A.num_nodes, C, seed=C)
    monkeypatch.setattr(layerwise_native, "ROWS_PER_EDGE", rows_per_edge)
    monkeypatch.setattr(layerwise_native, "THREADS", threads)
    cand, E = layerwise_native.candidates(A, cols, None)
    got = layerwise_native.listed_row_sum(A, cols, cand, A.values, E)
    want = torch.from_numpy(brute_row_sum(A, cols))[cand]
    assert got.dtype == dtype and torch.equal(bits(got), bits(want))
    if cand.numel() > 1 and rows_per_edge == 0:
        assert layerwise_native.listed_row_sum(A, cols, cand[1:], A.values, E) is None


def test_row_sum_signed_zeros_and_non_finite(graph, monkeypatch):
    """Negative values, -0.0 (a row of only -0.0 sums to +0.0, as from 0), inf and NaN: the
    torch code's bits."""
    v = graph.values.clone()
    v[::2] = -v[::2]
    v[1::5] = -0.0
    v[3::97] = float("inf")
    v[5::89] = float("-inf")
    v[7::101] = float("nan")
    A = CSC(graph.num_nodes, graph.indptr, graph.rows, values=v)
    cols = _cols(A.num_nodes, 800, seed=3)
    got = native_row_sum(A, cols, monkeypatch)
    assert torch.equal(bits(got), bits(torch_row_sum(A, cols, monkeypatch)))
    assert got.isnan().any() and got.isinf().any()


def test_row_sum_data_is_order_sensitive(graph):
    """The test graph's sums depend on the order of the additions (a pass that added a row's
    edges in another order would fail the tests above)."""
    cols = _cols(graph.num_nodes, 700, seed=700)
    A_rev = CSC(graph.num_nodes, graph.indptr, graph.rows, values=graph.values)
    forward = brute_row_sum(A_rev, cols)
    backward = brute_row_sum(A_rev, cols.flip(0))
    assert (forward != backward).any()


def test_row_sum_without_values_and_sub_matrix(graph, monkeypatch):
    """No values (1.0 each, float32), and a matrix over a row space of its own (row_ids)."""
    cols = _cols(graph.num_nodes, 500)
    ones = CSC(graph.num_nodes, graph.indptr, graph.rows)
    got = native_row_sum(ones, cols, monkeypatch)
    assert got.dtype == torch.float32
    assert torch.equal(got, torch_row_sum(ones, cols, monkeypatch))
    assert torch.equal(got, torch.bincount(ones.rows[_edges(ones, cols)], minlength=3000).float())
    A = gs.Matrix(graph)[torch.arange(0, 3000, 3), :].csc  # rows local to a row space
    assert A.row_ids is not None and A.col_ids is None
    got = native_row_sum(A, cols, monkeypatch)
    assert got.shape == (A.num_rows,)
    assert torch.equal(bits(got), bits(torch_row_sum(A, cols, monkeypatch)))


def _edges(A, cols):
    return torch.cat(
        [torch.arange(int(A.indptr[c]), int(A.indptr[c + 1])) for c in cols.tolist()]
        + [torch.zeros(0, dtype=torch.int64)]
    )


@pytest.mark.parametrize("bad", [-1, 3000, 2**40])
def test_row_sum_bad_column_runs_the_torch_code(graph, bad, monkeypatch):
    """A column outside the matrix: the native pass declines and the torch code raises."""
    cols = torch.tensor([0, 5, bad])
    assert layerwise_native.slice_row_sum(graph, cols) is None
    with pytest.raises((IndexError, RuntimeError, ValueError)):
        torch_row_sum(graph, cols, monkeypatch)


def test_row_sum_declines_what_it_does_not_take(graph):
    cols = _cols(graph.num_nodes, 10)
    assert layerwise_native.slice_row_sum(graph, cols.to(torch.int32)) is None
    half = CSC(graph.num_nodes, graph.indptr, graph.rows, values=graph.values.half())
    assert layerwise_native.slice_row_sum(half, cols) is None
    sub = gs.Matrix(graph)[:, torch.arange(100)].csc  # a column space of its own
    assert sub.col_ids is not None and layerwise_native.slice_row_sum(sub, cols) is None


# ----------------------------------------------------------------------------- collective
def torch_collective(A, cols, k, replace, key, probs, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(layerwise_native, "ENABLED", False)
        return fused_select.slice_collective_sample(A, cols, k, replace, key, probs)


def native_collective(A, cols, k, replace, key, probs, monkeypatch):
    with monkeypatch.context() as m:  # the torch code's passes made to fail
        m.setattr(fused_select, "choose_rows", _fail)
        m.setattr(fused_select, "keep_rows", _fail)
        m.setattr(fused_select, "gather_segments", _fail)
        return fused_select.slice_collective_sample(A, cols, k, replace, key, probs)


def brute_collective(A, cols, out):
    """The sample's chosen rows must be exactly the frontier's candidates it keeps, and every
    frontier edge from a chosen row is kept, in CSC order, with its row's position among
    the chosen rows, its value and its edge id."""
    chosen = out.row_ids.tolist()
    where = {r: i for i, r in enumerate(chosen)}
    grows = A.global_rows().tolist()
    indptr = [0]
    kept = []
    for c in cols.tolist():
        for e in range(int(A.indptr[c]), int(A.indptr[c + 1])):
            if grows[e] in where:
                kept.append((e, where[grows[e]]))
        indptr.append(len(kept))
    assert out.indptr.tolist() == indptr
    assert out.rows.tolist() == [r for _, r in kept]
    e = torch.tensor([e for e, _ in kept], dtype=torch.int64)
    eids = e if A.eids is None else A.eids[e]
    assert torch.equal(out.eids, eids)
    if A.values is not None:
        assert torch.equal(bits(out.values), bits(A.values[e]))
    assert chosen == sorted(set(chosen))


def _probs(n, dtype, seed=0, zero_every=3):
    g = torch.Generator().manual_seed(seed)
    p = torch.rand(n, generator=g, dtype=torch.float64).to(dtype)
    p[::zero_every] = 0
    return p


@pytest.mark.parametrize(
    "probs", [None, torch.float32, torch.float64], ids=["uniform", "f32", "f64"]
)
@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("k", [0, 1, 50, 100000])
def test_collective_equals_torch(graph, probs, replace, k, monkeypatch):
    cols = _cols(graph.num_nodes, 400, seed=k)
    p = None if probs is None else _probs(graph.num_rows, probs, seed=k)
    got = native_collective(graph, cols, k, replace, 11, p, monkeypatch)
    same(got, torch_collective(graph, cols, k, replace, 11, p, monkeypatch))
    brute_collective(graph, cols, got)
    if 0 < k < 100000 and not replace:
        assert got.row_ids.numel() == k  # a real draw among more candidates


@pytest.mark.parametrize("case", ["2d-values-eids", "no-values", "sub-matrix", "empty"])
def test_collective_layouts(case, monkeypatch):
    if case == "2d-values-eids":
        A, cols = _graph(width=3, eids=True), _cols(3000, 300)
    elif case == "no-values":
        g = _graph()
        A, cols = CSC(g.num_nodes, g.indptr, g.rows), _cols(3000, 300)
    elif case == "sub-matrix":
        A = gs.Matrix(_graph())[torch.arange(1, 3000, 2), :].csc
        cols = _cols(3000, 300)
    else:
        A, cols = _graph(), torch.zeros(0, dtype=torch.int64)
    p = _probs(A.num_rows, torch.float32)
    for k in (0, 20, 10**6):
        got = native_collective(A, cols, k, False, 3, p, monkeypatch)
        same(got, torch_collective(A, cols, k, False, 3, p, monkeypatch))
        brute_collective(A, cols, got)


def test_collective_no_positive_row_raises(graph, monkeypatch):
    cols = _cols(graph.num_nodes, 50)
    p = torch.zeros(graph.num_rows)
    for run in (native_collective, torch_collective):
        with pytest.raises(ValueError):
            run(graph, cols, 5, False, 1, p, monkeypatch)


@pytest.mark.parametrize("bad", [-1, 3000])
def test_collective_bad_column_runs_the_torch_code(graph, bad, monkeypatch):
    cols = torch.tensor([1, bad, 2])
    assert layerwise_native.candidates(graph, cols, None) is None
    with pytest.raises((IndexError, RuntimeError, ValueError)):
        fused_select.slice_collective_sample(graph, cols, 5, False, 1, None)


def test_collective_declines_wrong_probs(graph):
    cols = _cols(graph.num_nodes, 10)
    assert layerwise_native.candidates(graph, cols, torch.ones(5)) is None  # wrong length
    assert layerwise_native.candidates(graph, cols, torch.ones(3000).half()) is None


# ----------------------------------------------------------------------------- samplers
def _ladies(A, seeds, layers=(300, 300)):
    blocks = []
    for k in layers:
        sub = A[:, seeds]
        p = (sub**2).sum(axis=1)
        p = p / p.sum().clamp(min=1e-30)
        s = sub.collective_sample(k, node_probs=p)
        s = s.div(p[s.row_ids], axis=1)
        s = s.div(s.sum(axis=0), axis=0)
        blocks.append(s)
        seeds = s.all_nodes()
    return blocks


def _fastgcn(A, seeds, p, layers=(300, 300)):
    blocks = []
    for k in layers:
        s = A[:, seeds].collective_sample(k, node_probs=p)
        s = s.div(p[s.row_ids], axis=1)
        blocks.append(s)
        seeds = s.all_nodes()
    return blocks


@pytest.mark.parametrize("which", ["ladies", "fastgcn"])
def test_compiled_samplers_equal_the_torch_code(which, monkeypatch):
    A = gs.Matrix(_graph(seed=2))
    deg = A.sum(axis=1)
    fn = _ladies if which == "ladies" else functools.partial(_fastgcn, p=deg / deg.sum())

    def run(native: bool):
        with monkeypatch.context() as m:
            m.setattr(layerwise_native, "ENABLED", native)
            gs.manual_seed(0)
            f = gs.compile(fn, backend="torch")
            return [f(A, torch.arange(i, 3000, 97)) for i in range(3)]

    calls = []
    real = layerwise_native.build

    def counted():
        calls.append(1)
        return real()

    monkeypatch.setattr(layerwise_native, "build", counted)
    native = run(True)
    assert calls, "the native passes did not run"
    for a, b in zip(native, run(False)):
        for x, y in zip(a, b):
            same(x.csc, y.csc)


# ----------------------------------------------------------------------------- threads
@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("case", ["f32", "2d-values-eids", "no-values"])
def test_threads_give_the_same_bits(threads, case, monkeypatch):
    """Columns split over threads (row ranges for the sums): the one-thread result, bit for
    bit, and the brute-force one."""
    if case == "f32":
        A = _graph()
    elif case == "2d-values-eids":
        A = _graph(torch.float64, width=3, eids=True)
    else:
        g = _graph()
        A = CSC(g.num_nodes, g.indptr, g.rows)
    cols = _cols(3000, 900, seed=threads)
    p = _probs(3000, torch.float64, seed=threads)
    monkeypatch.setattr(layerwise_native, "THREADS", 1)
    one = native_collective(A, cols, 200, False, 5, p, monkeypatch)
    sums = native_row_sum(A, cols, monkeypatch) if A.values is None or A.values.dim() == 1 else None
    monkeypatch.setattr(layerwise_native, "THREADS", threads)
    many = native_collective(A, cols, 200, False, 5, p, monkeypatch)
    same(many, one)
    brute_collective(A, cols, many)
    if sums is not None:
        assert torch.equal(bits(native_row_sum(A, cols, monkeypatch)), bits(sums))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_row_outside_the_space_leaves_every_bitmap_clear(graph, threads, monkeypatch):
    """A CSC whose rows leave its row space (not a graph gsample built): the candidates'
    pass declines it, on one thread or several, and leaves the bitmaps it marked (the
    calling thread's and each thread's own) clear: the next call lists exactly the rows."""
    monkeypatch.setattr(layerwise_native, "THREADS", threads)
    cols = _cols(3000, 900)
    want = layerwise_native.candidates(graph, cols, None)
    rows = graph.rows.clone()
    rows[rows.numel() // 2] = graph.num_rows + 5  # an edge of a column in the middle
    bad = CSC(graph.num_nodes, graph.indptr, rows)
    assert layerwise_native.candidates(bad, torch.arange(3000), None) is None
    got = layerwise_native.candidates(graph, cols, None)
    assert torch.equal(got[0], want[0]) and got[1] == want[1]
    assert torch.equal(got[0], torch.unique(graph.rows[_edges_of(graph, cols)]))


def _edges_of(A, cols):
    return torch.cat([torch.arange(A.indptr[c], A.indptr[c + 1]) for c in cols.tolist()])


def _in_child(A, cols, p, conn):
    try:
        out = layerwise_native.keep_chosen(A, cols, *layerwise_native.candidates(A, cols, p))
        sums = layerwise_native.slice_row_sum(A, cols)
        conn.send([t.numpy().tobytes() for t in (*out[:3], sums)])
    except Exception as err:  # the parent reports it
        conn.send(repr(err))
    conn.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_forked_child_runs_with_threads(graph, monkeypatch):
    """A child forked after the parent ran OpenMP teams runs the passes on std::threads: no
    hang, the same result."""
    monkeypatch.setattr(layerwise_native, "THREADS", 2)
    torch.rand(1 << 20).sum()  # an OpenMP team of torch's
    cols = _cols(3000, 900)
    p = _probs(3000, torch.float32)
    cand, E = layerwise_native.candidates(graph, cols, p)
    out = layerwise_native.keep_chosen(graph, cols, cand, E)
    want = [t.numpy().tobytes() for t in (*out[:3], layerwise_native.slice_row_sum(graph, cols))]
    assert in_forked_child(_in_child, graph, cols, p) == want


# ----------------------------------------------------------------------------- unique rows
@pytest.mark.parametrize("E,R", [(0, 10), (1, 1), (500, 64), (5000, 100000), (20000, 3000)])
def test_unique_rows_equals_torch_unique(E, R):
    """Sparse and dense row spaces (the sorted-words and the scanned-bitmap orders)."""
    g = torch.Generator().manual_seed(E + R)
    rows = torch.randint(0, R, (E,), generator=g)
    uniq, inv = layerwise_native.unique_rows(rows, R, inverse=True)
    want, want_inv = torch.unique(rows, return_inverse=True)
    assert torch.equal(uniq, want) and torch.equal(inv, want_inv)
    assert torch.equal(layerwise_native.unique_rows(rows, R), want)
    assert torch.equal(uniq[inv], rows)  # brute force: the inverse gives the rows back
    assert uniq.tolist() == sorted(set(rows.tolist()))


@pytest.mark.parametrize("bad", [-1, 50])
def test_unique_rows_declines_a_row_outside_the_space(bad):
    rows = torch.tensor([3, bad, 7])
    assert layerwise_native.unique_rows(rows, 50, inverse=True) is None
    assert layerwise_native.unique_rows(rows, 50) is None
    good = torch.tensor([3, 7, 3])  # the bitmap was left clear by the declined call
    assert layerwise_native.unique_rows(good, 50).tolist() == [3, 7]


def test_compact_and_row_equal_the_torch_code(graph, monkeypatch):
    from gsample.backend.torch import finalize

    S = gs.Matrix(graph)[:, _cols(3000, 700)].csc
    native_c, native_r = finalize.compact(S), finalize.row(S)
    with monkeypatch.context() as m:
        m.setattr(layerwise_native, "ENABLED", False)
        same(native_c, finalize.compact(S))
        assert torch.equal(native_r, finalize.row(S))


# ----------------------------------------------------------------------------- column slices
@pytest.mark.parametrize("case", ["f32", "2d-values-eids", "no-values", "sub-matrix", "empty"])
def test_slice_cols_equals_the_torch_code(case, monkeypatch):
    from gsample.backend.torch import extract

    cols = _cols(3000, 600, seed=9)
    if case == "f32":
        A = _graph()
    elif case == "2d-values-eids":
        A = _graph(torch.float64, width=3, eids=True)
    elif case == "no-values":
        g = _graph()
        A = CSC(g.num_nodes, g.indptr, g.rows)
    elif case == "sub-matrix":
        A = gs.Matrix(_graph(eids=True))[torch.arange(0, 3000, 4), :].csc
    else:
        A, cols = _graph(), cols[:0]
    with monkeypatch.context() as m:
        m.setattr(extract, "gather_segments", _fail)
        got = extract.slice_cols(A, cols)
    with monkeypatch.context() as m:
        m.setattr(layerwise_native, "ENABLED", False)
        same(got, extract.slice_cols(A, cols))
    # brute force: each column's edges, in order
    want = [e for c in cols.tolist() for e in range(int(A.indptr[c]), int(A.indptr[c + 1]))]
    e = torch.tensor(want, dtype=torch.int64)
    assert torch.equal(got.rows, A.rows[e])
    assert torch.equal(got.eids, e if A.eids is None else A.eids[e])


def test_slice_cols_declines_a_bad_column(graph):
    assert layerwise_native.slice_cols(graph, torch.tensor([2, 3000])) is None
    assert layerwise_native.slice_cols(graph, torch.tensor([-1])) is None
