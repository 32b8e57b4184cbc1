"""Every pass says whether it changed the graph (``PassResult.changed``), and says it right.

A pass counts its own rewrites; nothing prints or compares the IR to find out. These tests
do compare (printing is fine here): over the catalogue's samplers, for every pass of
:data:`gsample.passes.PIPELINE`, run in pipeline order and alone on the traced program,
``changed`` is exactly "the printed IR differs". The optimised program is a fixed point:
the pipeline run on it again changes nothing. ``run_passes`` records what each pass said,
and a ``Graph -> Graph`` function (a user's pass) still runs.
"""

import functools

import pytest
import torch
from helpers import example, example_workloads

import gsample as gs
from gsample.ir import Graph, format_lines
from gsample.passes import PIPELINE, PassResult, PassRun, optimize, run_passes
from gsample.passes.cse import cse


@functools.cache
def catalogue() -> dict:
    """name -> (sampler, graph, keyword arguments) for samplers of the catalogue."""
    A = gs.datasets.rmat(1000, 15000, seed=1, weighted=True)
    N = A.num_nodes
    g = torch.Generator().manual_seed(0)
    return {
        **example_workloads(A),
        "asgcn": (
            example("asgcn").asgcn,
            A,
            {**example("asgcn").random_inputs(N, num_features=8), "layers": (64, 64)},
        ),
        "labor": (example("labor").labor, A, {}),
        "csaw_layer": (example("csaw_layer").csaw_layer, A, {"layers": (100, 100)}),
        "weighted_neighbors": (example("weighted_neighbors").weighted_neighbors, A, {}),
        "vrgcn": (example("vrgcn").vrgcn, example("vrgcn").normalize(A), {}),
        "gcn_bs": (example("gcn_bs").gcn_bs, A, {"bias": torch.ones(A.num_edges)}),
        "forest_fire": (example("forest_fire").forest_fire, A, {}),
        "snowball": (example("snowball").snowball, A, {}),
        "graphsaint_node": (example("graphsaint_node").graphsaint_node, A, {"budget": 300}),
        "graphsaint_rw": (example("graphsaint_rw").graphsaint_rw, A, {}),
        "cluster_gcn": (
            example("cluster_gcn").cluster_gcn,
            A,
            {"parts": example("cluster_gcn").random_partition(N, 50)},
        ),
        "seal": (example("seal").seal, A, {}),
        "deepwalk": (example("deepwalk").deepwalk, A, {"length": 5}),
        "node2vec": (example("node2vec").node2vec, A, {"length": 5}),
        "ppr": (example("ppr").ppr, A, {"length": 5}),
        "biased_deepwalk": (example("biased_deepwalk").biased_deepwalk, A, {"length": 5}),
        "pinsage": (example("pinsage").pinsage, A, {"num_walks": 4}),
        "mvs": (example("mvs").mvs, A, {"grad_norm": torch.rand(N, generator=g)}),
    }


SEEDS = torch.arange(0, 64, 3)


def traced(name) -> Graph:
    """The traced program of catalogue sampler ``name`` (target and example sizes set, as
    the compiler gives them to the passes)."""
    fn, A, kwargs = catalogue()[name]
    return gs.compile(fn, passes=[]).program(A, SEEDS, **kwargs)


def optimised(name) -> Graph:
    fn, A, kwargs = catalogue()[name]
    return gs.compile(fn).program(A, SEEDS, **kwargs)


def check_reports(fn, graph: Graph, where: str) -> PassResult:
    """Run pass ``fn`` on ``graph``; assert its ``changed`` says whether the IR changed."""
    before = format_lines(graph)
    result = fn(graph)
    assert isinstance(result, PassResult), f"{where}: {fn.__name__} returned {type(result)}"
    after = format_lines(result.graph.verify())
    assert result.changed == (after != before), (
        f"{where}: {fn.__name__} reported changed={result.changed}, but the printed IR "
        f"{'differs' if after != before else 'is the same'}:\n{before}\n--- after ---\n{after}"
    )
    return result


@pytest.mark.parametrize("name", list(catalogue()))
def test_every_pass_reports_a_change_exactly_in_pipeline_order(name):
    g = traced(name)
    flags = []
    for fn, _ in PIPELINE:
        result = check_reports(fn, g, f"{name}, in the pipeline")
        g = result.graph
        flags.append(result.changed)
    assert any(flags), f"{name}: no pass changed anything"
    # the pipeline records what each pass said, and makes the program the compiler runs
    result = run_passes(traced(name))
    assert result.runs == tuple(PassRun(fn.__name__, f) for (fn, _), f in zip(PIPELINE, flags))
    assert result.changed == tuple(fn.__name__ for (fn, _), f in zip(PIPELINE, flags) if f)
    assert format_lines(result.graph) == format_lines(optimised(name)) == format_lines(g)


@pytest.mark.parametrize("name", list(catalogue()))
def test_every_pass_reports_a_change_exactly_alone(name):
    """Each pass alone on the traced program: the rewrites it finds there are others than
    in the pipeline (nothing fused or hoisted yet), and it must report them as well."""
    for fn, _ in PIPELINE:
        check_reports(fn, traced(name), f"{name}, alone")


#: the passes that still change an optimised program, and why that is known and kept
NOT_A_FIXED_POINT = {
    # pre-processing's commute makes one slice of the cached map per chain it moves, equal
    # slices that CSE (run first) never sees; merging them would change a compiled program
    "forest_fire": ("cse",),
}


@pytest.mark.parametrize("name", list(catalogue()))
def test_the_pipeline_is_idempotent(name):
    """The optimised program is a fixed point: every pass, run on it again, reports no
    change and changes nothing (a program optimised twice is the program optimised once),
    but where :data:`NOT_A_FIXED_POINT` says otherwise."""
    g = optimised(name)
    once = format_lines(g)
    expected = NOT_A_FIXED_POINT.get(name, ())
    again = run_passes(g)
    assert again.changed == expected, f"{name}: passes changed an optimised program"
    if not expected:
        assert format_lines(again.graph) == once
    for fn, _ in PIPELINE:
        result = check_reports(fn, g.copy(), f"{name}, optimised")
        assert result.changed == (fn.__name__ in expected), (name, fn.__name__)


def test_the_check_catches_a_pass_that_hides_a_change():
    """A pass that rewrites and says it did not fails :func:`check_reports`."""

    def hides(graph):
        result = cse(graph)  # which merges the two equal slices below
        return PassResult(result.graph, False)

    def f(A, seeds):
        return A[:, seeds].individual_sample(2), A[:, seeds].individual_sample(3)

    A = catalogue()["graphsage"][1]
    g = gs.compile(f, passes=[]).program(A, SEEDS)
    with pytest.raises(AssertionError, match="reported changed=False, but the printed IR differs"):
        check_reports(hides, g, "test")


def test_graph_returning_passes_still_run():
    """A ``Graph -> Graph`` function (a user's pass): whether it changed the graph is found
    from the printed IR; anything else returned is refused with the pass named."""

    def identity(graph):
        return graph

    def renumber(graph):
        for n in graph.nodes:
            n.name = "x_" + n.name
        return graph

    g = traced("graphsage")
    text = format_lines(g)
    result = run_passes(g, [identity, (renumber, "why"), identity])
    assert result.runs == (
        PassRun("identity", False),
        PassRun("renumber", True),
        PassRun("identity", False),
    )
    assert format_lines(g) == text  # the traced program is left as it is
    assert all(n.name.startswith("x_") for n in optimize(g, [renumber]).nodes)

    def nothing(graph):
        graph.nodes.append(graph.nodes.pop())

    with pytest.raises(TypeError, match="pass nothing returned NoneType"):
        run_passes(g, [nothing])


def test_pipeline_entries_are_passes_with_a_one_line_why():
    names = [fn.__name__ for fn, _ in PIPELINE]
    assert len(set(names)) == len(names)  # each pass once
    for fn, why in PIPELINE:
        assert callable(fn) and isinstance(why, str) and why and "\n" not in why, fn
        assert fn.__module__.startswith("gsample.passes."), fn  # it reports PassResult
