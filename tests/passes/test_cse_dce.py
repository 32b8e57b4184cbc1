"""CSE and DCE: structural effect, effect-awareness, and samples unchanged."""

import torch

import gsample as gs
from gsample.ir import Op
from gsample.passes.cse import cse
from gsample.passes.dce import dce


def _ops(compiled, *args):
    return [n.op for n in compiled.program(*args).nodes]


def test_cse_merges_repeated_pure_slices_and_keeps_samples(small_graph):
    def f(A, seeds):
        a = A[:, seeds].individual_sample(3)
        b = A[:, seeds].individual_sample(3)  # same slice, another random op
        return a, b, A[:, seeds].sum(axis=0)

    seeds = torch.arange(0, 300, 7)
    plain, merged = gs.compile(f, passes=[]), gs.compile(f, passes=[cse])
    assert _ops(plain, small_graph, seeds).count(Op.SLICE_COLS) == 3
    assert _ops(merged, small_graph, seeds).count(Op.SLICE_COLS) == 1
    assert _ops(merged, small_graph, seeds).count(Op.INDIVIDUAL_SAMPLE) == 2, (
        "random ops have distinct ordinals and are never merged"
    )
    merged.program(small_graph, seeds).verify()
    gs.manual_seed(1)
    eager = f(small_graph, seeds)
    gs.manual_seed(1)
    got = merged(small_graph, seeds)
    for x, y in zip(eager[:2], got[:2]):
        assert torch.equal(x.edges()[2], y.edges()[2])
    assert not torch.equal(got[0].edges()[2], got[1].edges()[2])
    assert torch.equal(eager[2], got[2])


def test_cse_never_merges_in_place_code_or_what_it_writes(small_graph):
    def f(A, seeds):
        p = A[:, seeds].sum(axis=1)
        p.add_(1.0)
        p.add_(1.0)
        return p

    seeds = torch.arange(10)
    assert torch.equal(gs.compile(f, passes=[cse])(small_graph, seeds), f(small_graph, seeds))


def test_dce_drops_unused_values_but_keeps_ordinals(small_graph):
    def f(A, seeds):
        A[:, seeds].individual_sample(4)  # ordinal 0, dropped
        (A[:, seeds] ** 2).sum(axis=1)  # dropped
        return A[:, seeds].individual_sample(2)  # ordinal 1

    seeds = torch.arange(0, 500, 5)
    c = gs.compile(f, passes=[dce])
    ops = _ops(c, small_graph, seeds)
    assert ops.count(Op.INDIVIDUAL_SAMPLE) == 1 and Op.REDUCE not in ops
    g = c.program(small_graph, seeds).verify()
    assert g.num_random == 2 and g.random_nodes()[0].attrs["ordinal"] == 1
    gs.manual_seed(4)
    eager = f(small_graph, seeds)
    after = f(small_graph, seeds)
    gs.manual_seed(4)
    assert torch.equal(c(small_graph, seeds).edges()[2], eager.edges()[2])
    assert torch.equal(c(small_graph, seeds).edges()[2], after.edges()[2]), (
        "the stream advanced by both ordinals"
    )


def test_dce_keeps_in_place_dense_code(small_graph):
    def f(A, seeds):
        p = A.sum(axis=1)
        p.fill_(1.0)
        return A[:, seeds].collective_sample(20, node_probs=p)

    seeds = torch.arange(0, 100)
    gs.manual_seed(0)
    eager = f(small_graph, seeds)
    gs.manual_seed(0)
    got = gs.compile(f, passes=[dce])(small_graph, seeds)
    assert torch.equal(eager.row(), got.row())


def test_cse_keeps_constants_of_different_types_apart(small_graph):
    # 2 == 2.0 and hash(2) == hash(2.0): a key of values alone merged these two, and the
    # compiled sampler returned int64 where eager returns float32
    def f(A, seeds):
        return seeds * 2, seeds * 2.0, seeds * True

    seeds = torch.arange(0, 40, 3)
    eager = f(small_graph, seeds)
    for passes in ([cse], None):
        got = gs.compile(f, passes=passes)(small_graph, seeds)
        assert (
            [t.dtype for t in got]
            == [t.dtype for t in eager]
            == [torch.int64, torch.float32, torch.int64]
        )
        for x, y in zip(got, eager):
            assert torch.equal(x, y)
    assert _ops(gs.compile(f, passes=[cse]), small_graph, seeds).count(Op.DENSE) == 3
