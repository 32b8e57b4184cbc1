"""The marker lookup of ``A[rows, :]`` and ``A[rows, cols]`` on the CPU
(``extract._locate_by_marker``, the fused ``extract.slice_rows_cols``) against the sort-and-
search code (``formats.csc.locate``) they replace there, and against a brute-force
enumeration of the kept edges: the same CSC, bit for bit."""

from __future__ import annotations

from dataclasses import fields

import pytest
import torch

import gsample as gs
from gsample.backend.torch import extract
from gsample.formats.csc import CSC


@pytest.fixture(scope="module")
def graph():
    """An R-MAT graph of 3000 nodes with edge values (hubs, nodes without in-edges)."""
    A = gs.datasets.rmat(3000, 30000, seed=5).csc
    g = torch.Generator().manual_seed(1)
    return CSC(A.num_nodes, A.indptr, A.rows, values=torch.rand(A.rows.numel(), generator=g))


def same(a: CSC, b: CSC):
    for f in fields(CSC):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
            assert x is not None and y is not None, f.name
            assert x.dtype == y.dtype and torch.equal(x, y), f.name
        else:
            assert x == y, f.name


def reference(A, rows, cols, monkeypatch):
    """The sort-and-search code: the marker switched off."""
    with monkeypatch.context() as m:
        m.setattr(extract, "_marker_pays", lambda *a: False)
        S = extract.slice_rows(extract.slice_cols(A, cols), rows)
        same(S, extract.slice_rows_cols(A, rows, cols))
    return S


def marker(A, rows, cols, monkeypatch):
    """The marker code, the search made to fail so that it cannot be what runs."""

    def fail(*a):
        raise AssertionError("locate ran")

    with monkeypatch.context() as m:
        m.setattr(extract, "_marker_pays", lambda *a: True)
        m.setattr(extract, "locate", fail)
        out = [extract.slice_rows(extract.slice_cols(A, cols), rows)]
        out.append(extract.slice_rows_cols(A, rows, cols))  # the native column slice
        # without the native code: the fused filter, before values and edge ids are gathered
        m.setattr(extract.layerwise_native, "slice_cols", lambda *a: None)
        out.append(extract.slice_rows_cols(A, rows, cols))
        return out


def brute_force(A, rows, cols):
    """Every (column position, edge) of ``A[:, cols]`` whose global row is in ``rows``, its row
    the first position of that row in ``rows``: the kept edges enumerated one by one."""
    first = {}
    for i, r in enumerate(rows.tolist()):
        first.setdefault(r, i)
    col_pos = {v: c for c, v in reversed(list(enumerate(A.global_cols().tolist())))}
    grows = A.global_rows().tolist()
    out = []
    for j, v in enumerate(cols.tolist()):
        c = col_pos.get(v)
        if c is None:
            continue
        for e in range(int(A.indptr[c]), int(A.indptr[c + 1])):
            if grows[e] in first:
                out.append((j, first[grows[e]], e))
    return out


def check(A, rows, cols, monkeypatch):
    ref = reference(A, rows, cols, monkeypatch)
    for S in marker(A, rows, cols, monkeypatch):
        same(S, ref)
    col = torch.repeat_interleave(torch.arange(cols.numel()), ref.indptr.diff())
    eids = ref.eids if A.eids is None else None
    got = list(zip(col.tolist(), ref.rows.tolist(), (eids if eids is not None else col).tolist()))
    want = brute_force(A, rows, cols)
    assert [g[:2] for g in got] == [w[:2] for w in want]
    if eids is not None:
        assert [g[2] for g in got] == [w[2] for w in want]
    return ref


def nodes(n, size, seed):
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed))[:size]


@pytest.mark.parametrize("size", [0, 1, 40, 700, 3000])
def test_induced_subgraph_equals_search(graph, size, monkeypatch):
    v = nodes(graph.num_nodes, size, size)
    S = check(graph, v, v, monkeypatch)
    assert size < 700 or S.rows.numel() > 0  # the test reaches kept edges


def test_rows_and_cols_differ_repeat_and_leave_the_space(graph, monkeypatch):
    cols = torch.cat([nodes(3000, 300, 3), torch.tensor([5, 5, 2999])])
    rows = torch.cat([nodes(3000, 900, 4), torch.tensor([-1, 3000, 1 << 40])])
    check(graph, rows, cols, monkeypatch)
    # repeated rows: the first occurrence is every edge's row
    rows = torch.randint(0, 3000, (1200,), generator=torch.Generator().manual_seed(2))
    check(graph, rows, cols, monkeypatch)


def test_sub_matrices_with_ids_and_eids(graph, monkeypatch):
    S = extract.slice_cols(graph, nodes(3000, 500, 7))  # col ids, eids
    R = extract.slice_rows(S, nodes(3000, 2000, 8))  # row ids in a random order
    for A in (S, R):
        cols = torch.cat([nodes(3000, 200, 9), A.global_cols()[:50]])
        check(A, nodes(3000, 1500, 10), cols, monkeypatch)


def test_marker_pays_on_the_cpu_only():
    rows = torch.arange(100)
    assert extract._marker_pays(1000, torch.zeros(100, dtype=torch.int64), rows)
    assert not extract._marker_pays(10**9, torch.zeros(100, dtype=torch.int64), rows)
    assert not extract._marker_pays(1000, torch.zeros(100, dtype=torch.int64), rows[:0])
    assert not extract._marker_pays(1000, torch.zeros(100, dtype=torch.int64, device="meta"), rows)


def shadow(A, seeds, fanouts):
    """ShaDow-KHop as in examples/shadow.py: hops for the node set, then its subgraph."""
    v = seeds
    for k in fanouts:
        v = A[:, v].individual_sample(k).all_nodes()
    return A[v, v], v


def test_compiled_shadow_uses_the_marker_and_equals_search(monkeypatch):
    A = gs.datasets.rmat(2000, 20000, seed=1)
    seeds = nodes(2000, 64, 11)
    f = gs.compile(shadow, backend="torch")
    calls = []
    real = extract._locate_by_marker
    monkeypatch.setattr(
        extract, "_locate_by_marker", lambda *a: calls.append(1) or real(*a), raising=True
    )
    gs.manual_seed(3)
    sub, v = f(A, seeds, fanouts=(5, 5))
    assert calls
    monkeypatch.setattr(extract, "_marker_pays", lambda *a: False)
    gs.manual_seed(3)
    sub2, v2 = gs.compile(shadow, backend="torch")(A, seeds, fanouts=(5, 5))
    assert torch.equal(v, v2)
    same(sub.csc, sub2.csc)
