"""Edge-map fusion and edge-map-reduce fusion: structure, and samples unchanged.

Structure: ``((A[:, seeds] ** 2) * 3).div(v, axis=0)`` becomes one FUSED_EDGE_MAP with a
three-step program; ``(sub ** 2).sum(axis=1)`` becomes one FUSED_EDGE_MAP_REDUCE; an
intermediate with another user is never fused away. Values: every fused program returns
bit-for-bit what the eager function returns. Samples: the LADIES and PASS examples (and
a sampler drawing with fused probabilities) draw exactly what eager draws under the same
``gs.manual_seed``, with these passes alone and with the default pipeline.
"""

import pytest
import torch
from helpers import check_compiled_equals_eager, example, weighted_sampler
from helpers import random_seeds as seeds

import gsample as gs
from gsample.ir import Op, VerifyError, format_lines, info
from gsample.passes import PIPELINE
from gsample.passes.cse import cse
from gsample.passes.dce import dce
from gsample.passes.fuse_edge_map import fuse_edge_map, fuse_edge_map_reduce

PASSES = [cse, fuse_edge_map, fuse_edge_map_reduce, dce]
MAPS = (Op.EDGE_MAP, Op.EDGE_BROADCAST)


@pytest.fixture(scope="module")
def A():
    return gs.datasets.rmat(2000, 30000, seed=1, weighted=True)


def ops(graph):
    return [n.op for n in graph.nodes]


def fused(fn, *args, passes=PASSES, **kwargs):
    """The optimised IR (verified), after checking its output equals eager's bit for bit."""
    c = check_compiled_equals_eager(fn, *args, passes=passes, calls=1, seed=5, **kwargs)
    return c.program(*args, **kwargs).verify()


def only(graph, op):
    (node,) = [n for n in graph.nodes if n.op is op]
    return node


# ----------------------------------------------------------------------------- structure
def test_chain_of_maps_and_a_broadcast_becomes_one_fused_edge_map(A):
    def f(A, seeds, v):
        return ((A[:, seeds] ** 2) * 3).div(v, axis=0)

    s = seeds()
    before = gs.compile(f, passes=[]).program(A, s, torch.rand(64) + 0.5).verify()
    assert ops(before).count(Op.EDGE_MAP) == 2 and ops(before).count(Op.EDGE_BROADCAST) == 1
    after = fused(f, A, s, torch.rand(64) + 0.5)
    assert not set(MAPS) & set(ops(after))
    node = only(after, Op.FUSED_EDGE_MAP)
    assert node.input("A").op is Op.SLICE_COLS
    assert node.input("0").op is Op.INPUT and node.input("0").attrs["name"] == "v"
    assert node.attrs["program"] == (
        ("pow", None, False, 2, None),
        ("mul", None, False, 3, None),
        ("div", "0", False, None, 0),
    )
    assert "fused_edge_map(A=%" in format_lines(after)


def test_map_then_reduce_becomes_fused_edge_map_reduce(A):
    def f(A, seeds):
        sub = A[:, seeds]
        return (sub**2).sum(axis=1), (-(2 - sub)).mean(axis=0)

    after = fused(f, A, seeds())
    assert not {Op.REDUCE, *MAPS, Op.FUSED_EDGE_MAP} & set(ops(after))
    first, second = [n for n in after.nodes if n.op is Op.FUSED_EDGE_MAP_REDUCE]
    assert first.attrs["program"] == (("pow", None, False, 2, None),)
    assert (first.attrs["op"], first.attrs["axis"]) == ("sum", 1)
    assert second.attrs["program"] == (
        ("sub", None, True, 2, None),
        ("neg", None, False, None, None),
    )
    assert (second.attrs["op"], second.attrs["axis"]) == ("mean", 0)


def test_edge_tensors_and_shared_operands(A):
    def f(A, seeds, v, w):
        sub = A[:, seeds]
        x = (sub * sub.values).div(v, axis=0).mul(v, axis=0).add(w, axis=1)
        return x.max(axis=0)

    s = seeds()
    after = fused(f, A, s, torch.rand(64) + 0.5, torch.rand(2000, dtype=torch.float64))
    node = only(after, Op.FUSED_EDGE_MAP_REDUCE)
    assert node.input("0").op is Op.VALUES  # the edge tensor
    assert node.input("1").attrs["name"] == "v"  # read by two steps, one operand
    assert node.input("2").attrs["name"] == "w"
    assert [step[1] for step in node.attrs["program"]] == ["0", "1", "1", "2"]
    assert [step[4] for step in node.attrs["program"]] == [None, 0, 0, 1]


def test_intermediate_with_another_user_is_kept(A):
    def f(A, seeds):
        sub = A[:, seeds]
        s1 = sub**2  # used by the chain and by the output
        s3 = (s1 * 3) + 1
        s4 = s3 * 2  # used by a reduction and by the output
        return s1, s4, s4.sum(axis=0)

    after = fused(f, A, seeds())
    assert ops(after).count(Op.EDGE_MAP) == 1  # s1 stays
    node = only(after, Op.FUSED_EDGE_MAP)  # s3 and s4: one node
    assert node.input("A").op is Op.EDGE_MAP
    assert len(node.attrs["program"]) == 3
    assert only(after, Op.REDUCE).input("A") is node  # s4 has two users


def test_single_map_is_not_fused_but_feeds_a_reduction(A):
    def f(A, seeds):
        s = A[:, seeds] * 2
        return s, s.sum(axis=1)

    after = fused(f, A, seeds())
    assert Op.FUSED_EDGE_MAP not in ops(after) and Op.FUSED_EDGE_MAP_REDUCE not in ops(after)


def test_chain_reading_a_fused_reduction(A):
    """A broadcast's vector is a fused reduction, itself rewritten by the same pass."""

    def f(A, seeds):
        sub = A[:, seeds]
        d = (sub**2).sum(axis=0)
        return (sub * 2).div(d.clamp(min=1e-6), axis=0).sum(axis=1)

    after = fused(f, A, seeds())
    first, second = [n for n in after.nodes if n.op is Op.FUSED_EDGE_MAP_REDUCE]
    assert second.input("0").input("0") is first  # through the clamp


def test_passes_are_idempotent(A):
    def f(A, seeds, v):
        return ((A[:, seeds] ** 2) * 3).div(v, axis=0).sum(axis=1)

    g = gs.compile(f, passes=PASSES).program(A, seeds(), torch.rand(64) + 0.5)
    once = format_lines(g)
    maps = fuse_edge_map(g)
    again = fuse_edge_map_reduce(maps.graph)
    assert not maps.changed and not again.changed
    assert format_lines(again.graph.verify()) == once


def test_verifier_takes_A_plus_numbered_operands(A):
    def f(A, seeds, v):
        return (A[:, seeds] * 2).div(v, axis=0)

    assert info(Op.FUSED_EDGE_MAP).is_variadic and info(Op.FUSED_EDGE_MAP).input_names() == ("A",)
    assert info(Op.DENSE).is_variadic and info(Op.DENSE).input_names() == ()
    g = gs.compile(f, passes=PASSES).program(A, seeds(), torch.rand(64)).verify()
    node = only(g, Op.FUSED_EDGE_MAP)
    node.inputs["v"] = node.inputs.pop("0")  # not a number
    with pytest.raises(VerifyError, match="named 0, 1"):
        g.verify()
    node.inputs["0"] = node.inputs.pop("v")
    del node.inputs["A"]
    with pytest.raises(VerifyError, match="missing \\['A'\\]"):
        g.verify()


def test_pipeline_runs_edge_map_fusion_before_reduce_fusion_and_before_dce():
    names = [fn.__name__ for fn, _ in PIPELINE]
    assert names.index("fuse_edge_map") < names.index("fuse_edge_map_reduce") < names.index("dce")
    assert names[-1] == "dce"


# ----------------------------------------------------------------------------- samples
@pytest.mark.parametrize("passes", [PASSES, None], ids=["fusion", "pipeline"])
def test_samples_unchanged_weighted_sampler(A, passes):
    v = torch.rand(2000) + 0.5
    g = fused(weighted_sampler, A, seeds(), v, passes=passes)
    if passes is PASSES:
        assert ops(g).count(Op.FUSED_EDGE_MAP) == 2 and ops(g).count(Op.FUSED_EDGE_MAP_REDUCE) == 2


@pytest.mark.parametrize("passes", [PASSES, None], ids=["fusion", "pipeline"])
def test_samples_unchanged_ladies(A, passes):
    ex = example("ladies")
    An = ex.normalize(A)
    g = fused(ex.ladies, An, seeds(), layers=(300, 300), passes=passes)
    if passes is PASSES:
        # sq = sub ** 2 is read by sq.sum(axis=1) and by sq.sum(): no reduction absorbs it
        assert ops(g).count(Op.FUSED_EDGE_MAP_REDUCE) == 0
        assert ops(g).count(Op.EDGE_MAP) == 2 and ops(g).count(Op.TOTAL) == 2


@pytest.mark.parametrize("passes", [PASSES, None], ids=["fusion", "pipeline"])
def test_samples_unchanged_pass(A, passes):
    ex = example("pass_sampler")
    inputs = ex.random_inputs(A.num_nodes, num_features=8, hidden=16)
    fused(ex.pass_sampler, A, seeds(), fanouts=(5, 5), passes=passes, **inputs)
