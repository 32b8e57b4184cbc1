"""Edge-normalise fusion: ``X.op(X.reduce(axis), axis)`` (and the maps making ``X``) becomes
one FUSED_EDGE_NORMALIZE where nothing else reads ``X`` or the reduction; compiled results
stay eager's, bit for bit, and LADIES draws what it draws eagerly."""

import functools

import pytest
import torch
from helpers import check_compiled_equals_eager, example
from helpers import random_seeds as seeds

import gsample as gs
from gsample.ir import Op
from gsample.passes import PIPELINE
from gsample.passes.cse import cse
from gsample.passes.dce import dce
from gsample.passes.fuse_edge_map import fuse_edge_map, fuse_edge_map_reduce
from gsample.passes.fuse_edge_normalize import fuse_edge_normalize

PASSES = [cse, fuse_edge_map, fuse_edge_map_reduce, fuse_edge_normalize, dce]


@pytest.fixture(scope="module")
def A():
    return gs.datasets.rmat(2000, 30000, seed=1, weighted=True)


def fused(fn, *args, passes=PASSES, **kwargs):
    """The optimised IR (verified), after checking its output equals eager's bit for bit."""
    c = check_compiled_equals_eager(fn, *args, passes=passes, calls=1, seed=5, **kwargs)
    return c.program(*args, **kwargs).verify()


def ops(graph):
    return [n.op for n in graph.nodes]


def column_normalised(A, seeds, w):
    s = A[:, seeds].individual_sample(5)
    s = s.div(w[s.row_ids], axis=1)  # a map making X ...
    return s.div(s.sum(axis=0), axis=0)  # ... normalised per column


def row_centred(A, seeds):
    s = A[:, seeds]
    return s.sub(s.max(axis=1), axis=1)  # no map: X is the slice itself


def test_a_normalised_map_becomes_one_op(A):
    w = torch.rand(A.num_nodes) + 0.5
    g = fused(column_normalised, A, seeds(), w)
    assert not {Op.REDUCE, Op.EDGE_BROADCAST} & set(ops(g))
    (node,) = [n for n in g.nodes if n.op is Op.FUSED_EDGE_NORMALIZE]
    assert node.attrs["program"] == (("div", "0", False, None, 1),)
    assert (node.attrs["reduce"], node.attrs["op"], node.attrs["axis"]) == ("sum", "div", 0)
    assert node.input("A").op is Op.INDIVIDUAL_SAMPLE
    out = gs.compile(column_normalised, passes=PASSES)(A, seeds(), w)
    sums = out.sum(axis=0)
    assert torch.allclose(sums[out.csc.degrees() > 0], torch.ones(()))


def test_a_plain_matrix_normalised_by_rows(A):
    g = fused(row_centred, A, seeds())
    (node,) = [n for n in g.nodes if n.op is Op.FUSED_EDGE_NORMALIZE]
    assert node.attrs["program"] == () and node.input("A").op is Op.SLICE_COLS
    assert (node.attrs["reduce"], node.attrs["op"], node.attrs["axis"]) == ("max", "sub", 1)


def test_nothing_fuses_where_x_or_the_reduction_is_read_elsewhere(A):
    def x_returned(A, seeds):
        s = A[:, seeds] * 2
        return s.div(s.sum(axis=0), axis=0), s

    def reduction_returned(A, seeds):
        s = A[:, seeds] * 2
        r = s.sum(axis=0)
        return s.div(r, axis=0), r

    def another_matrix(A, seeds):
        s = A[:, seeds] * 2
        return (s * 3).div(s.sum(axis=0), axis=0)

    for fn in (x_returned, reduction_returned, another_matrix):
        g = fused(fn, A, seeds())
        assert Op.FUSED_EDGE_NORMALIZE not in ops(g), fn.__name__


def test_ladies_fuses_every_layer_and_samples_as_eager(A):
    lad = example("ladies")
    G = lad.normalize(A)
    fn = functools.partial(lad.ladies, layers=(200, 200, 200))
    for passes in (PASSES, None):  # these passes, and the whole pipeline
        c = check_compiled_equals_eager(fn, G, seeds(), passes=passes, calls=2, seed=3)
        g = c.program(G, seeds())
        assert ops(g).count(Op.FUSED_EDGE_NORMALIZE) == 3
        # left: the row bias sq.sum(axis=1) where these passes alone keep sq = sub ** 2
        # (sq.sum() reads it too); the pipeline fuses it with the slice
        assert ops(g).count(Op.REDUCE) == (3 if passes is PASSES else 0)
        assert Op.EDGE_BROADCAST not in ops(g)


def test_the_pass_runs_in_the_pipeline_after_edge_map_reduce_fusion():
    names = [p.__name__ for p, _ in PIPELINE]
    assert names.index("fuse_edge_normalize") == names.index("fuse_edge_map_reduce") + 1
