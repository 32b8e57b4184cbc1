"""``@gs.compile`` gives the eager function's samples exactly (docs/architecture.md §3,
consequence 2).

* every example in ``examples/`` compiles, and after ``gs.manual_seed(s)`` the compiled
  and eager runs return identical samples, called directly and through ``gs.DataLoader``;
* a hypothesis test over random small graphs (edge lists with weights), seeds, fanouts
  and ``replace`` flags, for a GraphSAGE-style, a weighted individual and a collective
  sampler: compiled == eager, or both raise the same error;
* ``GSAMPLE_DEBUG=1`` verifies the IR after every pass (a broken pass is caught).

Every test runs with ``GSAMPLE_DEBUG=1``, so the default pipeline is verified after each
of its passes on every program compiled here.
"""

import functools

import pytest
import torch
from helpers import assert_same, example_workloads, graphsage, random_seeds
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gsample as gs
from gsample.ir import Op, VerifyError


@pytest.fixture(autouse=True)
def _verify_after_every_pass(monkeypatch):
    monkeypatch.setenv("GSAMPLE_DEBUG", "1")


def outcome(fn, *args, **kwargs):
    """``("ok", result)`` or ``("error", type, message)``."""
    try:
        return ("ok", fn(*args, **kwargs))
    except Exception as e:
        return ("error", type(e), str(e))


# ----------------------------------------------------------------------------- the examples
@pytest.fixture(scope="module")
def weighted_graph():
    return gs.datasets.rmat(1000, 15000, seed=1, weighted=True)


NAMES = [
    "graphsage",
    "graphsage-3",
    "ladies",
    "ladies-small",
    "fastgcn",
    "fastgcn-degree",
    "shadow",
    "pass_sampler",
]


def workload(name, graph, device, num_seeds, seed):
    """Example ``name``'s (function, graph, keyword arguments, seeds), all on ``device``."""
    fn, A, kwargs = example_workloads(graph)[name]
    kwargs = {
        k: v.to(device) if isinstance(v, (torch.Tensor, gs.Matrix)) else v
        for k, v in kwargs.items()
    }
    return fn, A.to(device), kwargs, random_seeds(num_seeds, seed, A.num_nodes).to(device)


@pytest.mark.parametrize("name", NAMES)
def test_example_compiled_equals_eager(name, weighted_graph, device):
    fn, A, kwargs, seeds = workload(name, weighted_graph, device, 64, 7)
    compiled = gs.compile(fn)
    for s in (0, 12345):
        gs.manual_seed(s)
        eager = fn(A, seeds, **kwargs)
        gs.manual_seed(s)
        assert_same(eager, compiled(A, seeds, **kwargs), f"{name} seed {s}")
    assert compiled.traces == 1
    # the stream is left where the eager run leaves it
    gs.manual_seed(3)
    fn(A, seeds, **kwargs)
    after_eager = A[:, seeds].individual_sample(2)
    gs.manual_seed(3)
    compiled(A, seeds, **kwargs)
    assert_same(after_eager, A[:, seeds].individual_sample(2), f"{name}: stream after the call")


@pytest.mark.parametrize("name", NAMES)
def test_example_compiled_equals_eager_through_the_dataloader(name, weighted_graph, device):
    fn, A, kwargs, seeds = workload(name, weighted_graph, device, 136, 8)
    compiled = gs.compile(fn)
    for loader_seed in (None,) if name.startswith("ladies") else (None, 4):
        gs.manual_seed(21)
        eager = list(
            gs.DataLoader(
                A, functools.partial(fn, **kwargs), seeds, batch_size=64, seed=loader_seed
            )
        )
        gs.manual_seed(21)
        comp = list(
            gs.DataLoader(
                A, functools.partial(compiled, **kwargs), seeds, batch_size=64, seed=loader_seed
            )
        )
        assert len(eager) == len(comp) == 3  # the last batch holds 8 seeds
        for e, c in zip(eager, comp):
            assert e.index == c.index and torch.equal(e.seeds, c.seeds)
            assert_same(e.out, c.out, f"{name} batch {e.index}")
    assert compiled.traces == 1  # a smaller last batch is not a re-trace


def test_every_example_program_keeps_its_random_ops(weighted_graph):
    """Passes never drop or renumber a used random op (ordinals stay 0 .. n-1)."""
    for name in NAMES:
        fn, A, kwargs = example_workloads(weighted_graph)[name]
        traced = gs.compile(fn, passes=[]).program(A, torch.arange(8), **kwargs)
        optimised = gs.compile(fn).program(A, torch.arange(8), **kwargs)
        assert optimised.num_random == traced.num_random
        assert sorted(n.attrs["ordinal"] for n in optimised.random_nodes()) == sorted(
            n.attrs["ordinal"] for n in traced.random_nodes()
        ), name


# ----------------------------------------------------------------------------- hypothesis
def sage_style(A, seeds, fanouts=(2,), replace=False):
    return graphsage(A, seeds, fanouts, replace)


def weighted_individual(A, seeds, fanouts=(2,), replace=False):
    blocks = []
    for k in fanouts:
        sub = A[:, seeds]
        s = sub.individual_sample(k, probs=sub**2, replace=replace)
        s = s.div(s.sum(axis=0), axis=0)
        blocks.append(s)
        seeds = s.all_nodes()
    return blocks


def collective(A, seeds, fanouts=(2,), replace=False):
    blocks = []
    for k in fanouts:
        sub = A[:, seeds]
        p = (sub**2).sum(axis=1)
        p = p / p.sum().clamp(min=1e-30)
        s = sub.collective_sample(k, node_probs=p, replace=replace)
        s = s.div(p[s.row_ids], axis=1)
        blocks.append(s)
        seeds = s.all_nodes()
    return blocks


SAMPLERS = {f.__name__: (f, gs.compile(f)) for f in (sage_style, weighted_individual, collective)}


@st.composite
def problems(draw):
    n = draw(st.integers(1, 24))
    m = draw(st.integers(0, 80))
    node = st.integers(0, n - 1)
    src = draw(st.lists(node, min_size=m, max_size=m))
    dst = draw(st.lists(node, min_size=m, max_size=m))
    weight = draw(
        st.lists(st.one_of(st.just(0.0), st.floats(0.0625, 8.0, width=32)), min_size=m, max_size=m)
    )
    weighted = draw(st.booleans())
    seeds = draw(st.lists(node, min_size=1, max_size=12))
    fanouts = tuple(draw(st.lists(st.integers(0, 6), min_size=1, max_size=3)))
    return dict(
        n=n,
        src=src,
        dst=dst,
        weight=weight if weighted else None,
        seeds=seeds,
        fanouts=fanouts,
        replace=draw(st.booleans()),
        seed=draw(st.integers(0, 2**63)),
    )


@pytest.mark.parametrize("sampler", list(SAMPLERS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=problems())
def test_random_graphs_compiled_equals_eager(sampler, p):
    fn, compiled = SAMPLERS[sampler]
    edge_index = torch.tensor([p["src"], p["dst"]], dtype=torch.long).reshape(2, -1)
    weight = None if p["weight"] is None else torch.tensor(p["weight"], dtype=torch.float32)
    A = gs.Matrix.from_edge_index(edge_index, p["n"], weight=weight)
    seeds = torch.tensor(p["seeds"])
    kwargs = dict(fanouts=p["fanouts"], replace=p["replace"])
    gs.manual_seed(p["seed"])
    eager = outcome(fn, A, seeds, **kwargs)
    gs.manual_seed(p["seed"])
    comp = outcome(compiled, A, seeds, **kwargs)
    assert eager[0] == comp[0], (eager, comp)
    if eager[0] == "ok":
        assert_same(eager[1], comp[1])
    else:
        assert eager[1:] == comp[1:]


# ----------------------------------------------------------------------------- GSAMPLE_DEBUG
def two_layer(A, seeds):
    s1 = A[:, seeds].individual_sample(3)
    return s1, A[:, s1.all_nodes()].individual_sample(2)


def reuse_ordinal_0(graph):
    """A subtly broken pass: the second random op takes the first one's ordinal."""
    graph.random_nodes()[1].attrs["ordinal"] = 0
    return graph


def drop_first_slice(graph):
    """A broken pass: removes a node that is still used."""
    graph.remove([n for n in graph.nodes if n.op is Op.SLICE_COLS][:1])
    return graph


def test_debug_level_1_verifies_after_every_pass(monkeypatch, weighted_graph):
    seeds = torch.arange(16)
    for broken, match in (
        (reuse_ordinal_0, "share an op ordinal"),
        (drop_first_slice, "not defined before"),
    ):
        with pytest.raises(VerifyError, match=match):
            gs.compile(two_layer, passes=[broken])(weighted_graph, seeds)
        with pytest.raises(VerifyError, match=match):  # also as a (pass, why) entry
            gs.compile(two_layer, passes=[(broken, "why")]).program(weighted_graph, seeds)
    # with the verifier off, the subtly broken pass runs and silently draws wrong samples
    monkeypatch.setenv("GSAMPLE_DEBUG", "0")
    gs.manual_seed(0)
    wrong = gs.compile(two_layer, passes=[reuse_ordinal_0])(weighted_graph, seeds)
    gs.manual_seed(0)
    right = two_layer(weighted_graph, seeds)
    assert torch.equal(wrong[0].row(), right[0].row())
    with pytest.raises(AssertionError):
        assert_same(wrong[1], right[1])


def test_debug_levels_2_and_3_print_passes_and_nodes(monkeypatch, capsys, weighted_graph):
    def renumber(graph):  # a pass that changes names
        for n in graph.nodes:
            n.name = "x_" + n.name
        return graph

    def identity(graph):
        return graph

    seeds = torch.arange(16)
    monkeypatch.setenv("GSAMPLE_DEBUG", "2")
    gs.compile(two_layer, passes=[renumber, identity])(weighted_graph, seeds)
    err = capsys.readouterr().err
    assert "[gsample] after renumber:" in err and "%x_" in err
    assert "after identity" not in err  # unchanged: not printed
    monkeypatch.setenv("GSAMPLE_DEBUG", "3")
    gs.compile(two_layer, passes=[])(weighted_graph, seeds)
    out = capsys.readouterr().out
    assert "individual_sample -> matrix" in out and "slice_cols -> matrix" in out
    monkeypatch.setenv("GSAMPLE_DEBUG", "not a number")  # treated as 0
    gs.compile(two_layer, passes=[reuse_ordinal_0])(weighted_graph, seeds)


def test_a_program_per_backend(small_graph):
    """The layout plan is priced for the backend a call runs on, so a sampler compiled
    without ``backend=`` traces again when ``gs.use_backend`` changes it (and reuses each)."""
    f = gs.compile(graphsage)
    seeds = random_seeds(16, 1, small_graph.num_nodes)
    f(small_graph, seeds)
    with gs.use_backend("cuda"):  # CPU tensors: every op runs the torch code
        f(small_graph, seeds)
    f(small_graph, seeds)
    assert f.traces == 2 and len(f._cache) == 2
