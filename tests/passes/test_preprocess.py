"""The pre-processing pass: frontier-independent compute becomes CACHED, samples unchanged.

Structure: ``(A[:, seeds] ** 2).sum(axis=1)`` (LADIES) gets a CACHED ``A ** 2`` and a
slice of it; ``A.sum(axis=1)`` (FastGCN) becomes CACHED; per-batch values, random ops
and their ordinals stay. Samples: every example in ``examples/`` draws exactly what
its eager function draws under the same seed. Caching: one evaluation per graph
object, shared across calls and re-traces, redone for another graph or after the
graph is written in place.
"""

import functools

import helpers
import pytest
import torch
from helpers import cached, example, ladies_layer, ops, same
from helpers import random_seeds as seeds

import gsample as gs
from gsample.ir import Effect, Op, format_lines, info
from gsample.passes import PIPELINE
from gsample.passes.cse import cse
from gsample.passes.dce import dce
from gsample.passes.preprocess import preprocess
from gsample.runtime import cached as runtime_cached
from gsample.runtime import program as runtime_program

PASSES = [cse, preprocess, dce]
# compiled == eager, call after call, from the same seed (passes=PASSES unless given)
check_eager = functools.partial(helpers.check_compiled_equals_eager, passes=PASSES, seed=7)
programs = functools.partial(helpers.programs, passes=PASSES)  # (traced IR, optimised IR)


@pytest.fixture(scope="module")
def A():
    return gs.datasets.rmat(2000, 30000, seed=1, weighted=True)


# ----------------------------------------------------------------------------- samplers
def fastgcn_layer(A, seeds, k=100):
    degree = A.sum(axis=1)
    p = degree / degree.sum()
    s = A[:, seeds].collective_sample(k, node_probs=p)
    return s.div(p[s.row_ids], axis=1)


# ----------------------------------------------------------------------------- structure
def test_ladies_like_gets_cached_square_and_a_slice_of_it(A):
    before, after = programs(ladies_layer, A, seeds())
    (m,) = [n for n in before.nodes if n.op is Op.EDGE_MAP]
    assert m.input("A").op is Op.SLICE_COLS  # before: map of the slice
    (c,) = cached(after)
    prog = c.attrs["program"].verify()
    assert ops(prog) == [Op.INPUT, Op.EDGE_MAP, Op.OUTPUT]  # A ** 2 on the whole graph
    assert prog.nodes[1].input("A") is prog.nodes[0] and prog.nodes[1].attrs == m.attrs
    assert prog.nodes[0].attrs == {"name": "A", "kind": gs.ir.Kind.MATRIX}
    assert c.input("graph").op is Op.INPUT and c.kind is gs.ir.Kind.MATRIX
    assert Op.EDGE_MAP not in ops(after)  # no per-batch map left
    (r,) = [n for n in after.nodes if n.op is Op.REDUCE]
    sl = r.input("A")  # reduce of a slice of it
    assert sl.op is Op.SLICE_COLS and sl.input("A") is c and sl.input("cols").op is Op.INPUT
    (s,) = after.random_nodes()
    assert s.input("A").op is Op.SLICE_COLS and s.input("A").input("A").op is Op.INPUT
    check_eager(ladies_layer, A, seeds())


def test_fastgcn_like_degree_becomes_cached(A):
    before, after = programs(fastgcn_layer, A, seeds())
    assert any(n.op is Op.REDUCE and n.input("A").op is Op.INPUT for n in before.nodes)
    (c,) = cached(after)
    prog = c.attrs["program"]
    assert Op.REDUCE in ops(prog) and prog.nodes[0].op is Op.INPUT
    assert not any(n.op is Op.REDUCE for n in after.nodes)  # per batch: no degree
    (s,) = after.random_nodes()
    assert s.input("node_probs") is c  # p itself is cached
    check_eager(fastgcn_layer, A, seeds())


def test_frontier_dependent_values_stay(A):
    def fn(A, seeds, X):
        sub = A[:, seeds]
        col = sub.sum(axis=0)  # per batch: reads seeds
        w = X.sum(dim=1)  # reads a tensor input
        s = sub.individual_sample(3)
        sq = sub * sub.values  # an edge tensor operand
        return s, col, s.sum(axis=1), w, torch.ones(3) * 2, sq  # constant-only: no graph

    X = torch.randn(2000, 4)
    before, after = programs(fn, A, seeds(), X)
    assert not cached(after)
    assert format_lines(after) == format_lines(dce(cse(before.copy()).graph).graph)
    check_eager(fn, A, seeds(), X)


def test_random_ops_untouched(A):
    def fn(A, seeds):
        whole = A.individual_sample(2)  # random on the whole graph
        deg = whole.sum(axis=0)  # reads a sample: per batch
        s = A[:, seeds].individual_sample(5, probs=A[:, seeds] ** 2)
        return s, deg, A.collective_sample(10, node_probs=A.sum(axis=1))

    before, after = programs(fn, A, seeds())

    def key(g):
        return [(n.op, n.attrs) for n in g.random_nodes()]

    assert key(before) == key(after) and before.num_random == after.num_random == 3
    for c in cached(after):
        assert all(info(n.op).effect is Effect.PURE for n in c.attrs["program"].nodes)
    assert len(cached(after)) == 2  # A ** 2 and A.sum(axis=1)
    assert any(n.op is Op.REDUCE and n.input("A").is_random for n in after.nodes)
    check_eager(fn, A, seeds())


def test_chains_of_maps_and_slices(A):
    def fn(A, seeds, rows):
        return (A[rows, seeds] ** 2 * 0.5 + 1).values, -A[:, seeds]

    rows = seeds(300, seed=2).sort().values
    _before, after = programs(fn, A, seeds(), rows)
    progs = [c.attrs["program"] for c in cached(after)]
    assert sorted(len(p.nodes) for p in progs) == [3, 5]  # neg; pow, mul, add
    assert Op.EDGE_MAP not in ops(after)
    v = next(n for n in after.nodes if n.op is Op.VALUES).input("A")
    assert v.op is Op.SLICE_ROWS and v.input("A").op is Op.SLICE_COLS
    assert v.input("A").input("A").op is Op.CACHED
    check_eager(fn, A, seeds(), rows)


def test_two_graphs_hoist_each_part_separately(A):
    B = gs.datasets.rmat(2000, 20000, seed=3)

    def fn(A, B, seeds):
        p = A.sum(axis=1) + B.sum(axis=1)  # reads two graphs
        return A[:, seeds].collective_sample(50, node_probs=p)

    _, after = programs(fn, A, B, seeds())
    cs = cached(after)
    assert len(cs) == 2 and {c.input("graph").attrs["name"] for c in cs} == {"A", "B"}
    for c in cs:
        assert sum(n.op is Op.INPUT for n in c.attrs["program"].nodes) == 1
    check_eager(fn, A, B, seeds())


def test_in_place_dense_code_is_not_cached(A):
    def fn(A, seeds):
        p = A.sum(axis=1)
        p = p.index_add_(0, seeds, torch.ones(seeds.shape))  # writes into p every call
        return A[:, seeds].collective_sample(50, node_probs=p), p * 2

    _, after = programs(fn, A, seeds())
    assert not cached(after)
    check_eager(fn, A, seeds(), calls=3)


def test_values_of_another_type_are_another_program(A):
    def halves(A, seeds, two):
        deg = A.sum(axis=1).long() // two  # int64 // 2 vs // 2.0
        return A[:, seeds].collective_sample(20, node_probs=deg.double()), deg

    for two in (2, 2.0, 2):
        c = check_eager(halves, A, seeds(), two=two)
        assert len(cached(c.program(A, seeds(), two=two))) == 2  # deg and deg.double()
        assert c(A, seeds(), two=two)[1].dtype == halves(A, seeds(), two)[1].dtype


def test_idempotent_and_in_the_pipeline(A):
    _, after = programs(ladies_layer, A, seeds())
    again = preprocess(after.copy())
    assert not again.changed
    assert format_lines(again.graph.verify()) == format_lines(after)
    assert [e[0] for e in PIPELINE].index(preprocess) == [e[0] for e in PIPELINE].index(cse) + 1


# ----------------------------------------------------------------------------- alias tables
# ----------------------------------------------------------------------------- samples
def _example_calls(A):
    nodes = seeds(64)
    yield example("graphsage").graphsage, (A, nodes), {"fanouts": (25, 10)}
    yield (
        example("ladies").ladies,
        (example("ladies").normalize(A), nodes),
        {"layers": (400, 400, 400)},
    )
    yield example("fastgcn").fastgcn, (A, nodes), {"layers": (200, 200)}
    yield example("shadow").shadow, (A, nodes), {"fanouts": (10, 10)}
    yield (
        example("pass_sampler").pass_sampler,
        (A, nodes),
        {"fanouts": (10, 10), **example("pass_sampler").random_inputs(A.num_nodes)},
    )

    def ladies_normalizing(A, seeds):  # normalize inside: hoisted
        return example("ladies").ladies(example("ladies").normalize(A), seeds, (400, 400))

    yield ladies_normalizing, (A, nodes), {}


@pytest.mark.parametrize("passes", [PASSES, None], ids=["cse-preprocess-dce", "pipeline"])
def test_examples_sample_as_eager(A, passes):
    hoisted = {}
    for fn, args, kwargs in _example_calls(A):
        c = check_eager(fn, *args, passes=passes, **kwargs)
        hoisted[fn.__name__] = len(cached(c.program(*args, **kwargs).verify()))
    assert hoisted["ladies"] >= 1 and hoisted["fastgcn"] >= 1 and hoisted["graphsage"] == 0
    assert hoisted["ladies_normalizing"] >= 1


# ----------------------------------------------------------------------------- caching
@pytest.fixture
def count_programs(monkeypatch):
    """Counts executions of CACHED programs (the executor's own runs are not counted)."""
    runs = []
    real = runtime_program.run

    def run(program, args, observe=None):
        graph = program.graph
        if (
            graph.num_random == 0
            and any(n.op is Op.INPUT for n in graph.nodes)
            and not any(n.op is Op.CACHED for n in graph.nodes)
        ):
            runs.append((graph, next(iter(args.values()))))
        return real(program, args, observe)

    monkeypatch.setattr(runtime_program, "run", run)
    # a cached value runs its program through the name its module imported
    monkeypatch.setattr(runtime_cached, "run", run, raising=False)
    return runs


def test_cached_value_computed_once_across_calls(A, count_programs):
    A = gs.Matrix(A.csc.to("cpu"))  # a fresh graph object
    c = check_eager(fastgcn_layer, A, seeds(), calls=3)
    assert len(count_programs) == 1
    c(A, seeds(32, seed=5))  # another batch: still cached
    c.clear_cache()  # a re-trace: same key
    c(A, seeds())
    gs.compile(fastgcn_layer)(A, seeds())  # the default pipeline too
    assert len(count_programs) == 1 and c.traces == 2


def test_each_graph_gets_its_own_value(A, count_programs):
    A = gs.Matrix(A.csc.to("cpu"))  # fresh graph objects
    B = gs.datasets.rmat(2000, 30000, seed=4, weighted=True)
    c = gs.compile(fastgcn_layer, passes=PASSES)
    for G in (A, B, A, B):
        gs.manual_seed(3)
        eager = fastgcn_layer(G, seeds())
        gs.manual_seed(3)
        assert same(eager, c(G, seeds()))
    graphs = {id(m.csc) for _, m in count_programs}
    assert graphs == {id(A.csc), id(B.csc)} and len(count_programs) == 2


def test_in_place_write_to_the_graph_recomputes(count_programs):
    G = gs.datasets.rmat(2000, 30000, seed=5, weighted=True)
    check_eager(ladies_layer, G, seeds(), calls=1)
    G.csc.values.mul_(torch.linspace(0.5, 2.0, G.csc.nnz))  # a new weighting, in place
    check_eager(ladies_layer, G, seeds(), calls=2)
    assert len(count_programs) == 2


def test_in_place_write_to_a_captured_tensor_recomputes(A, count_programs):
    bias = torch.ones(2000)  # e.g. a bandit's node bias

    def biased(A, seeds):
        return A[:, seeds].collective_sample(50, node_probs=A.mul(bias, axis=1).sum(axis=1))

    c = check_eager(biased, A, seeds())
    assert len(cached(c.program(A, seeds()))) == 1
    bias[:1000] = 0.01  # updated after a batch
    check_eager(biased, A, seeds())
    assert len(count_programs) == 2
