"""Extract-Select fusion: the structural rewrite, and samples unchanged under the same seed.

Structure: ``A[:, seeds].individual_sample(k)`` (GraphSAGE) and
``A[:, seeds].collective_sample(k, node_probs)`` (FastGCN, and LADIES once
pre-processing has moved ``sub ** 2`` onto the graph) become one fused op taking
``A`` and ``seeds``, with the random op's attributes (its ordinal) kept and no
``SLICE_COLS`` left; weighted individual sampling fuses when its ``probs`` can be
read at graph level (``sub.values``, ``sub ** 2`` after pre-processing); a slice
with any other user, ``probs`` computed on the slice, or a slice of a sub-matrix
stay as traced. Samples: every compiled program draws what the eager function draws.
"""

import functools

import helpers
import pytest
from helpers import example, graphsage
from helpers import random_seeds as seeds

import gsample as gs
from gsample.ir import Op, format_lines
from gsample.passes import PIPELINE
from gsample.passes.alias_tables import alias_tables
from gsample.passes.cse import cse
from gsample.passes.dce import dce
from gsample.passes.fuse_extract_select import fuse_extract_select
from gsample.passes.layout import select_layouts
from gsample.passes.listed_rows import listed_rows
from gsample.passes.probs_support import probs_support
from gsample.passes.scaled_row_sums import scaled_row_sums
from gsample.passes.structure_reads import structure_reads

FUSE = [cse, fuse_extract_select, dce]
# compiled with passes (FUSE unless given): two calls after one seed equal two eager calls
# and differ from each other (the stream advanced between the calls)
check_eager = functools.partial(
    helpers.check_compiled_equals_eager, passes=FUSE, seed=11, distinct=True
)
programs = functools.partial(helpers.programs, passes=FUSE)  # (traced IR, optimised IR)


def _preprocess():
    return pytest.importorskip("gsample.passes.preprocess").preprocess


@pytest.fixture(scope="module")
def A():
    return gs.datasets.rmat(2000, 30000, seed=1, weighted=True)


@pytest.fixture(scope="module")
def A1():
    """The same graph without weights."""
    return gs.datasets.rmat(2000, 30000, seed=1, weighted=False)


# ----------------------------------------------------------------------------- helpers
def ops(graph, op):
    return [n for n in graph.nodes if n.op is op]


def randoms(graph):
    """(k, replace, ordinal) of each random op, in program order."""
    return [(n.attrs["k"], n.attrs["replace"], n.attrs["ordinal"]) for n in graph.random_nodes()]


# ----------------------------------------------------------------------------- samplers
def graphsage_replace(A, seeds, fanouts=(5, 3)):
    return graphsage(A, seeds, fanouts, replace=True)


def fastgcn(A, seeds, layers=(200, 200)):
    p = A.sum(axis=1)  # graph-level node bias, (N,)
    blocks = []
    for k in layers:
        s = A[:, seeds].collective_sample(k, node_probs=p)
        blocks.append(s)
        seeds = s.all_nodes()
    return blocks


def ladies(A, seeds, layers=(300, 300), replace=False):
    blocks = []
    for k in layers:
        sub = A[:, seeds]
        p = (sub**2).sum(axis=1)  # per-batch: depends on the frontier
        s = sub.collective_sample(k, node_probs=p, replace=replace)
        blocks.append(s)
        seeds = s.all_nodes()
    return blocks


def weighted_sage(A, seeds, fanouts=(6, 3), replace=False):
    blocks = []
    for k in fanouts:
        sub = A[:, seeds]
        s = sub.individual_sample(k, probs=sub**2, replace=replace)
        blocks.append(s)
        seeds = s.all_nodes()
    return blocks


def by_values(A, seeds, replace=False):
    sub = A[:, seeds]
    return sub.individual_sample(5, probs=sub.values, replace=replace)


# ----------------------------------------------------------------------------- structure
def test_graphsage_fuses(A):
    before, after = programs(graphsage, A, seeds())
    assert len(ops(before, Op.SLICE_COLS)) == 2 and len(ops(before, Op.INDIVIDUAL_SAMPLE)) == 2
    assert not ops(after, Op.SLICE_COLS) and not ops(after, Op.INDIVIDUAL_SAMPLE)
    fused = ops(after, Op.SLICE_INDIVIDUAL_SAMPLE)
    assert len(fused) == 2
    assert randoms(after) == randoms(before) == [(25, False, 0), (10, False, 1)]
    assert after.num_random == before.num_random
    a_in = next(n for n in after.nodes if n.op is Op.INPUT and n.attrs["name"] == "A")
    s_in = next(n for n in after.nodes if n.op is Op.INPUT and n.attrs["name"] == "seeds")
    assert fused[0].inputs == {"A": a_in, "cols": s_in}
    assert fused[1].input("A") is a_in and fused[1].input("cols").op is Op.ALL_NODES
    again = fuse_extract_select(after.copy())
    assert not again.changed
    assert format_lines(again.graph.verify()) == format_lines(after)


@pytest.mark.parametrize("fn", [graphsage, graphsage_replace])
def test_graphsage_samples_as_eager(A, A1, fn):
    for g in (A, A1):
        check_eager(fn, g, seeds())


def test_fastgcn_collective_fuses(A):
    before, after = programs(fastgcn, A, seeds())
    assert not ops(after, Op.SLICE_COLS) and not ops(after, Op.COLLECTIVE_SAMPLE)
    fused = ops(after, Op.SLICE_COLLECTIVE_SAMPLE)
    assert len(fused) == 2 and randoms(after) == randoms(before)
    assert all(n.input("node_probs").op is Op.REDUCE for n in fused)  # passed through
    check_eager(fastgcn, A, seeds())


@pytest.mark.parametrize("replace", [False, True])
def test_ladies_fuses_after_preprocessing(A, replace):
    # without pre-processing, sub ** 2 reads the slice: it stays, and so does the sample
    _, plain = programs(ladies, A, seeds(), replace=replace)
    assert len(ops(plain, Op.COLLECTIVE_SAMPLE)) == 2 and not ops(plain, Op.SLICE_COLLECTIVE_SAMPLE)
    passes = [cse, _preprocess(), fuse_extract_select, dce]
    before, after = programs(ladies, A, seeds(), replace=replace, passes=passes)
    fused = ops(after, Op.SLICE_COLLECTIVE_SAMPLE)
    assert len(fused) == 2 and not ops(after, Op.COLLECTIVE_SAMPLE)
    assert randoms(after) == randoms(before)
    # the only slices left are of the cached A ** 2 (for the per-row bias), not of A
    assert all(s.input("A").op is Op.CACHED for s in ops(after, Op.SLICE_COLS))
    check_eager(ladies, A, seeds(), replace=replace, passes=passes)


@pytest.mark.parametrize("replace", [False, True])
def test_weighted_individual_after_preprocessing(A, A1, replace):
    # sub ** 2 computed on the slice is aligned with the slice only: no fusion
    _, plain = programs(weighted_sage, A, seeds(), replace=replace)
    assert len(ops(plain, Op.INDIVIDUAL_SAMPLE)) == 2
    passes = [cse, _preprocess(), fuse_extract_select, dce]
    before, after = programs(weighted_sage, A, seeds(), replace=replace, passes=passes)
    fused = ops(after, Op.SLICE_INDIVIDUAL_SAMPLE)
    assert len(fused) == 2 and not ops(after, Op.INDIVIDUAL_SAMPLE)
    assert randoms(after) == randoms(before)
    for n in fused:  # probs = VALUES(CACHED(A ** 2)): graph-level
        p = n.input("probs")
        assert p.op is Op.VALUES and p.input("A").op is Op.CACHED
    assert not ops(after, Op.SLICE_COLS)
    for g in (A, A1):
        check_eager(weighted_sage, g, seeds(), replace=replace, passes=passes)


@pytest.mark.parametrize("replace", [False, True])
def test_probs_from_the_slice_values(A, A1, replace):
    _before, after = programs(by_values, A, seeds(), replace=replace)
    (fused,) = ops(after, Op.SLICE_INDIVIDUAL_SAMPLE)
    assert not ops(after, Op.SLICE_COLS) and not ops(after, Op.VALUES)
    # the graph's values, once per graph (an unweighted graph's ones are not rebuilt per batch)
    p = fused.input("probs")
    assert p.op is Op.CACHED and p.input("graph") is fused.input("A")
    for g in (A, A1):
        check_eager(by_values, g, seeds(), replace=replace)


def test_one_slice_many_samples(A):
    def f(A, seeds):
        sub = A[:, seeds]
        return (
            sub.individual_sample(4),
            sub.individual_sample(3, probs=sub.values),
            sub.collective_sample(50),
            sub.individual_sample(2, replace=True),
        )

    before, after = programs(f, A, seeds())
    assert not ops(after, Op.SLICE_COLS)
    assert len(ops(after, Op.SLICE_INDIVIDUAL_SAMPLE)) == 3
    assert len(ops(after, Op.SLICE_COLLECTIVE_SAMPLE)) == 1
    assert randoms(after) == randoms(before)
    check_eager(f, A, seeds())


def _returns_slice(A, seeds):
    sub = A[:, seeds]
    return sub.individual_sample(5), sub


def _reduces_slice(A, seeds):
    sub = A[:, seeds]
    return sub.individual_sample(5), sub.sum(axis=0)


def _dense_probs(A, seeds):
    sub = A[:, seeds]
    return sub.individual_sample(5, probs=sub.values * 2 + 1)  # computed on the slice


def _other_frontier_probs(A, seeds):
    sub = A[:, seeds]
    other = A[:, seeds.flip(0)]  # same size, other columns
    return sub.individual_sample(5, probs=other.values)


def _slice_of_slice(A, seeds):
    sub = A[:, seeds[:40]]
    return sub[:, seeds[:20]].individual_sample(5)  # column space: not the graph's


def _ladies_slice_shared(A, seeds):
    sub = A[:, seeds]
    return sub.collective_sample(30, node_probs=(sub**2).sum(axis=1))


@pytest.mark.parametrize(
    "fn",
    [
        _returns_slice,
        _reduces_slice,
        _dense_probs,
        _other_frontier_probs,
        _slice_of_slice,
        _ladies_slice_shared,
    ],
)
def test_left_unfused(A, fn):
    _before, after = programs(fn, A, seeds())
    assert not ops(after, Op.SLICE_INDIVIDUAL_SAMPLE) and not ops(after, Op.SLICE_COLLECTIVE_SAMPLE)
    assert format_lines(after) == format_lines(programs(fn, A, seeds(), passes=[cse, dce])[1])
    check_eager(fn, A, seeds())


def test_dead_users_do_not_block_fusion(A):
    def f(A, seeds):
        sub = A[:, seeds]
        sub.sum(axis=0)  # computed, never used
        return sub.individual_sample(5)

    _, after = programs(f, A, seeds(), passes=[cse, fuse_extract_select])
    assert len(ops(after, Op.SLICE_INDIVIDUAL_SAMPLE)) == 1
    _, after = programs(f, A, seeds())
    assert not ops(after, Op.SLICE_COLS) and not ops(after, Op.REDUCE)
    check_eager(f, A, seeds())


# ----------------------------------------------------------------------------- pipeline
def test_in_the_pipeline_before_the_final_dce():
    names = [e[0] for e in PIPELINE]
    # the last fusion of the program: after it only the derived inputs of the fused ops
    # (alias tables of the graph-level weights fusion made), an attribute of the fused
    # collective sampler (probs_support) and its listed rows, the row sums that divide
    # where nothing is listed, structure readers past value maps, layout selection (which
    # prices the fused ops) and the final DCE
    assert names[-1] is dce
    assert names[names.index(fuse_extract_select) + 1 : -1] == [
        alias_tables,
        probs_support,
        listed_rows,
        scaled_row_sums,
        structure_reads,
        select_layouts,
    ]
    if any(getattr(e[0], "__name__", "") == "preprocess" for e in PIPELINE):
        assert names.index(fuse_extract_select) > [e[0].__name__ for e in PIPELINE].index(
            "preprocess"
        )


def _example_calls(A):
    nodes = seeds(64)
    yield example("graphsage").graphsage, (A, nodes), {"fanouts": (25, 10)}
    yield example("ladies").ladies, (example("ladies").normalize(A), nodes), {"layers": (400, 400)}
    yield example("fastgcn").fastgcn, (A, nodes), {"layers": (200, 200)}
    yield example("shadow").shadow, (A, nodes), {"fanouts": (10, 10)}


def test_examples_with_the_pipeline(A):
    """The default pipeline fuses the examples' slices and samples as eager."""
    fused = {}
    for fn, args, kwargs in _example_calls(A):
        c = check_eager(fn, *args, passes=None, **kwargs)
        g = c.program(*args, **kwargs).verify()
        fused[fn.__name__] = len(
            ops(g, Op.SLICE_INDIVIDUAL_SAMPLE)
            + ops(g, Op.SLICE_COLLECTIVE_SAMPLE)
            + ops(g, Op.LISTED_COLLECTIVE_SAMPLE)  # LADIES's, fused then listed
        )
    assert fused["graphsage"] == 2 and fused["fastgcn"] == 2 and fused["shadow"] == 2
    assert fused["ladies"] == 2
