"""Extract-Extract fusion: ``A[rows, cols]`` becomes one ``SLICE_ROWS_COLS`` when the column
slice has no other use and slices the graph; the result is the two slices', edge for edge."""

import functools

import helpers
import pytest
import torch
from helpers import example
from helpers import random_seeds as seeds

import gsample as gs
from gsample.backend.torch import extract
from gsample.ir import Op
from gsample.passes.cse import cse
from gsample.passes.dce import dce
from gsample.passes.fuse_extract_extract import fuse_extract_extract

FUSE = [cse, fuse_extract_extract, dce]
check_eager = functools.partial(
    helpers.check_compiled_equals_eager, passes=FUSE, seed=5, distinct=True
)
programs = functools.partial(helpers.programs, passes=FUSE)


@pytest.fixture(scope="module")
def A():
    return gs.datasets.rmat(2000, 30000, seed=2, weighted=True)


def ops(graph, op):
    return [n for n in graph.nodes if n.op is op]


def induced(A, seeds):
    nodes = A[:, seeds].individual_sample(5).all_nodes()
    return A[nodes, nodes], nodes


def slice_kept(A, seeds):
    nodes = A[:, seeds].individual_sample(5).all_nodes()
    frontier = A[:, nodes]  # returned too: built anyway, nothing to fuse
    return frontier[nodes, :], frontier


def slice_of_a_sample(A, seeds):
    s = A[:, seeds].individual_sample(5)  # not the graph: its rows are not node ids
    return s[s.row()[:3], :]


@pytest.mark.parametrize("fn", [induced, example("shadow").shadow])
def test_an_induced_subgraph_is_one_op_and_equals_eager(A, fn):
    traced, opt = programs(fn, A, seeds())
    assert ops(traced, Op.SLICE_COLS) and ops(traced, Op.SLICE_ROWS)
    (fused,) = ops(opt, Op.SLICE_ROWS_COLS)
    # the row slice and its column slice are gone (the sampling ops' slices stay: not fused here)
    assert not ops(opt, Op.SLICE_ROWS)
    assert len(ops(opt, Op.SLICE_COLS)) == len(ops(traced, Op.SLICE_COLS)) - 1
    assert fused.input("A").op is Op.INPUT
    check_eager(fn, A, seeds())


@pytest.mark.parametrize("fn", [slice_kept, slice_of_a_sample])
def test_a_slice_used_otherwise_or_not_of_the_graph_stays(A, fn):
    _, opt = programs(fn, A, seeds())
    assert not ops(opt, Op.SLICE_ROWS_COLS)
    check_eager(fn, A, seeds())


def test_the_reference_keeps_rows_in_their_order_and_repeated_columns(A):
    c = A.csc
    cols = torch.tensor([7, 3, 7, 1999, 0, 3])
    rows = torch.tensor([1500, 4, 99, 3, 7, 1200, 0, 1999])
    got = extract.slice_rows_cols(c, rows, cols)
    want = (gs.Matrix(c)[:, cols])[rows, :].csc
    for f in ("indptr", "rows", "row_ids", "col_ids", "values", "eids"):
        assert torch.equal(getattr(got, f), getattr(want, f)), f
    assert torch.equal(got.row_ids, rows)


def test_a_bad_row_is_named_before_anything_runs(A):
    bad = gs.compile(lambda A, r, c: A[r, c], passes=FUSE)
    with pytest.raises(ValueError, match="rows: node 3 appears more than once"):
        bad(A, torch.tensor([3, 3]), torch.tensor([1, 2]))
    with pytest.raises(IndexError, match="cols"):
        bad(A, torch.tensor([3, 4]), torch.tensor([1, 5000]))
