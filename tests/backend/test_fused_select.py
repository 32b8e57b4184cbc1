"""Extract-Select fusion on the torch backend: the fused ops equal slice-then-sample, bit for bit.

``slice_individual_sample(A, cols, k, replace, key, probs)`` must return exactly what
``individual_sample(slice_cols(A, cols), k, replace, key, probs[slice edges])`` returns
(same rows, row and column spaces, values, edge ids, column pointers), and likewise for
collective sampling, for every algorithm and on the corner cases: repeated columns,
zero-degree columns, k above every degree, k = 0, an unweighted graph, and a sliced
matrix whose column space is not the graph's.
"""

import pytest
import torch
from helpers import assert_same_csc
from hypothesis import given, settings
from hypothesis import strategies as st

import gsample as gs
from gsample.backend import get_backend
from gsample.backend.torch import extract, fused_select, select
from gsample.formats.csc import CSC, gather_segments
from gsample.ir import Op

KEY = 0x1234_5678_9ABC_DEF0


def slice_probs(A: CSC, cols, probs):
    """The slice's probabilities: graph-level ``probs`` gathered at the slice's edges."""
    if A.col_ids is None:
        index, _ = gather_segments(A.indptr, cols)
    else:
        index = extract.slice_cols(A.with_values(torch.arange(A.nnz, device=A.device)), cols).values
    return probs[index]


def check_individual(A: CSC, cols, k, replace, probs=None, key=KEY):
    S = extract.slice_cols(A, cols)
    sp = None if probs is None else slice_probs(A, cols, probs)
    want = select.individual_sample(S, k, replace, key, sp)
    got = fused_select.slice_individual_sample(A, cols, k, replace, key, probs)
    assert_same_csc(got, want)
    return got


def check_collective(A: CSC, cols, k, replace, node_probs=None, key=KEY):
    want = select.collective_sample(extract.slice_cols(A, cols), k, replace, key, node_probs)
    got = fused_select.slice_collective_sample(A, cols, k, replace, key, node_probs)
    assert_same_csc(got, want)
    return got


def _graph(device, weighted=True):
    """A graph with hubs (degree far above k), zero-degree nodes and a self-loop."""
    g = torch.Generator().manual_seed(5)
    n = 300
    src = torch.randint(0, n, (4000,), generator=g)
    dst = torch.randint(0, 60, (4000,), generator=g) * 3  # only multiples of 3 get edges
    hub = torch.full((500,), 7 * 3)  # node 21: degree ~ 500+
    src = torch.cat([src, torch.randint(0, n, (500,), generator=g), torch.tensor([5])])
    dst = torch.cat([dst, hub, torch.tensor([5])])
    w = torch.rand(src.numel(), generator=g) + 0.01 if weighted else None
    if w is not None:
        w[::7] = 0.0  # some zero-weight edges
    return gs.Matrix.from_edge_index(torch.stack([src, dst]), num_nodes=n, weight=w).csc.to(device)


def _frontier(device, n=300, size=120):
    g = torch.Generator().manual_seed(9)
    cols = torch.randint(0, n, (size,), generator=g)
    cols[:10] = torch.tensor([21, 21, 0, 1, 2, 21, 5, 5, 4, 21])  # repeats, empty columns
    return cols.to(device)


@pytest.mark.parametrize("k", [0, 1, 4, 30, 1000])
@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_individual_equals_slice_then_sample(device, k, replace, weighted):
    A = _graph(device)
    cols = _frontier(device)
    probs = A.values if weighted else None
    out = check_individual(A, cols, k, replace, probs)
    assert out.col_ids is cols and out.num_cols == cols.numel()


@pytest.mark.parametrize("k", [0, 1, 17, 1000])
@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_collective_equals_slice_then_sample(device, k, replace, weighted):
    A = _graph(device)
    cols = _frontier(device)
    g = torch.Generator().manual_seed(3)
    node_probs = torch.rand(A.num_rows, generator=g).to(device) if weighted else None
    if weighted:
        node_probs[::5] = 0.0
    check_collective(A, cols, k, replace, node_probs)


@pytest.mark.parametrize("replace", [False, True])
def test_unweighted_graph(device, replace):
    """values None stays None; probs of all ones sample like uniform weights."""
    A = _graph(device, weighted=False)
    cols = _frontier(device)
    out = check_individual(A, cols, 6, replace)
    assert out.values is None
    check_individual(A, cols, 6, replace, probs=torch.ones(A.nnz, device=device))
    check_collective(A, cols, 40, replace)


def test_zero_degree_frontier_and_single_column(device):
    A = _graph(device)
    empty_cols = torch.tensor([1, 2, 4, 7, 1], device=device)  # none of them has an in-edge
    for replace in (False, True):
        for probs in (None, A.values):
            out = check_individual(A, empty_cols, 3, replace, probs)
            assert out.nnz == 0 and out.num_cols == 5
        out = check_collective(A, empty_cols, 3, replace)
        assert out.nnz == 0 and out.num_rows == 0
    for k in (1, 3, 600):
        check_individual(A, torch.tensor([21], device=device), k, False)


def test_submatrix_column_space(device):
    """A sliced matrix whose columns are not the graph's (misses give empty columns)."""
    A = _graph(device)
    sub = extract.slice_cols(A, torch.tensor([21, 3, 6, 9, 12, 0], device=device))
    cols = torch.tensor([6, 21, 100, 6, 0, 21], device=device)  # 100: not in the column space
    for replace in (False, True):
        for k in (0, 2, 50):
            check_individual(sub, cols, k, replace)
            check_individual(sub, cols, k, replace, probs=sub.values)
            check_collective(sub, cols, k, replace)


def test_sampled_row_space(device):
    """A matrix with its own row space (a collective sample) sliced again."""
    A = _graph(device)
    rowsub = select.collective_sample(A, 100, False, 77)
    cols = _frontier(device)
    np_ = torch.rand(rowsub.num_rows).to(device)
    for replace in (False, True):
        check_individual(rowsub, cols, 3, replace)
        check_individual(rowsub, cols, 3, replace, probs=rowsub.values)
        check_collective(rowsub, cols, 20, replace)
        check_collective(rowsub, cols, 20, replace, node_probs=np_)


def test_empty_frontier(device):
    A = _graph(device)
    cols = torch.zeros(0, dtype=torch.int64, device=device)
    for replace in (False, True):
        check_individual(A, cols, 3, replace)
        check_individual(A, cols, 3, replace, A.values)
        check_collective(A, cols, 3, replace)


def test_registered_and_never_slices(device, monkeypatch):
    """Both ops are torch backend ops, and neither calls the column slice."""
    be = get_backend("torch")
    assert be.impl(Op.SLICE_INDIVIDUAL_SAMPLE).fn is fused_select.slice_individual_sample
    assert be.impl(Op.SLICE_COLLECTIVE_SAMPLE).fn is fused_select.slice_collective_sample
    A = _graph(device)
    cols = _frontier(device)
    want_i = select.individual_sample(extract.slice_cols(A, cols), 5, False, KEY)
    want_c = select.collective_sample(extract.slice_cols(A, cols), 9, False, KEY)

    def boom(*a, **k):
        raise AssertionError("the fused op materialised the slice")

    monkeypatch.setattr(extract, "slice_cols", boom)
    assert_same_csc(fused_select.slice_individual_sample(A, cols, 5, False, KEY), want_i)
    assert_same_csc(fused_select.slice_collective_sample(A, cols, 9, False, KEY), want_c)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 40),
    m=st.integers(0, 300),
    c=st.integers(0, 30),
    k=st.integers(0, 12),
    replace=st.booleans(),
    weighted=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_graphs(n, m, c, k, replace, weighted, seed):
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(0, n, (2, m), generator=g)
    w = torch.rand(m, generator=g) * (torch.rand(m, generator=g) > 0.2) if weighted else None
    A = gs.Matrix.from_edge_index(ei, num_nodes=n, weight=w).csc
    cols = torch.randint(0, n, (c,), generator=g)
    check_individual(A, cols, k, replace, A.values if weighted else None, key=seed)
    node_probs = torch.rand(n, generator=g) if weighted else None
    check_collective(A, cols, k, replace, node_probs, key=seed)
