"""A compiled ``gs.walk`` of a per-walker step is one ``FUSED_WALK`` op
(``gsample.capture.walk_fusion``).

Determinism: the fused walk draws what the unrolled program (``fuse=False``) and the eager
loop draw, bit for bit (it takes their op ordinals), one by one and super-batched. Structure:
one fused op, no per-step copies; a step that is not per-walker code is unrolled as before
and is still correct.
"""

import functools
import io

import pytest
import torch
from helpers import assert_same, example, loader_outputs, run_seeded

import gsample as gs
from gsample.ir import Op


@pytest.fixture(scope="module")
def graph():
    return gs.datasets.rmat(2000, 16000, seed=4)


def seeds_of(n, N=2000, seed=1):
    return torch.randint(0, N, (n,), generator=torch.Generator().manual_seed(seed))


def ops(program):
    return [n.op for n in program.nodes]


def mh_sampler(fuse):
    mh = example("metropolis_hastings")

    def sampler(A, seeds, length=20):
        return gs.walk(mh.mh_step, A, seeds, length, fuse=fuse)

    return sampler


def phased(A, cur, prev, t):
    """Two phases: a lazy step (stops at 20%) and a jumpy one; keeps away from ``prev``."""
    if t == 0:
        nxt = A.random_walk(cur, 1, stop_prob=0.2)[:, 1]
    else:
        nxt = A.random_walk(cur, 2, restart_prob=0.3, jump_prob=0.1)[:, 2]
    deg = (A**0).sum(axis=0)
    lazy = deg[nxt.clamp(min=0)] > deg[cur] * 1.5
    return torch.where(lazy & (nxt != prev), cur, nxt)


def not_per_walker(A, cur, prev, t):
    """``torch.unique`` of the walkers' draws: not per-walker code (unrolled)."""
    nxt = A.random_walk(cur, 1)[:, 1]
    return torch.where(nxt >= torch.unique(nxt).min(), nxt, cur)


def sampled_neighbour(A, cur, prev, t):
    """A node-wise draw per walker (``A[:, cur].individual_sample``): unrolled."""
    nxt = A.random_walk(cur, 1)[:, 1]
    return torch.where(A[:, cur].individual_sample(2).sum(axis=0) > 1, nxt, cur)


@pytest.mark.parametrize("length", [1, 2, 7, 40])
def test_metropolis_hastings_is_one_fused_op(graph, length):
    seeds = seeds_of(300)
    fused, unrolled = gs.compile(mh_sampler(True)), gs.compile(mh_sampler(False))
    program = fused.program(graph, seeds, length=length)
    assert ops(program).count(Op.FUSED_WALK) == 1
    assert Op.RANDOM_WALK not in ops(program) and Op.DENSE not in ops(program)
    (node,) = [n for n in program.nodes if n.op is Op.FUSED_WALK]
    flat = unrolled.program(graph, seeds, length=length)
    assert ops(flat).count(Op.RANDOM_WALK) == 2 * length
    assert program.num_random == flat.num_random == node.attrs["num_ordinals"] == 2 * length
    want = run_seeded(unrolled, graph, seeds, length=length, seed=5)
    eager = run_seeded(mh_sampler(True), graph, seeds, length=length, seed=5)
    assert torch.equal(want, eager)
    for call in range(2):
        assert torch.equal(run_seeded(fused, graph, seeds, length=length, seed=5), want), call
    assert want.shape == (300, length + 1)


def test_later_draws_keep_their_ordinals(graph):
    """Random ops after the walk draw with the ordinals after the walk's, as unrolled."""
    mh = example("metropolis_hastings")

    def sampler(A, seeds, fuse):
        walks = gs.walk(mh.mh_step, A, seeds, 5, fuse=fuse)
        return walks, A.random_walk(walks[:, -1].clamp(min=0), 3)

    seeds = seeds_of(100)
    fused = run_seeded(gs.compile(functools.partial(sampler, fuse=True)), graph, seeds, seed=2)
    flat = run_seeded(gs.compile(functools.partial(sampler, fuse=False)), graph, seeds, seed=2)
    eager = run_seeded(functools.partial(sampler, fuse=True), graph, seeds, seed=2)
    assert_same(list(fused), list(flat))
    assert_same(list(fused), list(eager))


def test_phases_are_fused(graph):
    seeds = seeds_of(400, seed=3)

    def sampler(A, seeds, fuse):
        return gs.walk(phased, A, seeds, 11, period=2, fuse=fuse)

    fused = gs.compile(functools.partial(sampler, fuse=True))
    program = fused.program(graph, seeds)
    assert ops(program).count(Op.FUSED_WALK) == 1 and Op.RANDOM_WALK not in ops(program)
    want = run_seeded(functools.partial(sampler, fuse=False), graph, seeds, seed=9)
    assert int((want < 0).sum()) > 0  # some walkers stop
    assert torch.equal(
        run_seeded(gs.compile(functools.partial(sampler, fuse=False)), graph, seeds, seed=9), want
    )
    assert torch.equal(run_seeded(fused, graph, seeds, seed=9), want)


@pytest.mark.parametrize("step", [not_per_walker, sampled_neighbour])
def test_other_steps_are_unrolled_and_correct(graph, step):
    seeds = seeds_of(200, seed=4)

    def sampler(A, seeds):
        return gs.walk(step, A, seeds, 6)

    compiled = gs.compile(sampler)
    program = compiled.program(graph, seeds)
    assert Op.FUSED_WALK not in ops(program)
    assert ops(program).count(Op.RANDOM_WALK) == 6
    want = run_seeded(sampler, graph, seeds, seed=1)
    assert torch.equal(run_seeded(compiled, graph, seeds, seed=1), want)


def test_a_step_with_state_is_unrolled(graph):
    def step(A, cur, prev, t, visits):
        nxt = A.random_walk(cur, 1)[:, 1]
        return nxt, visits + (nxt >= 0).to(torch.int64)

    def sampler(A, seeds):
        return gs.walk(step, A, seeds, 4, state=torch.zeros_like(seeds))

    seeds = seeds_of(50)
    assert Op.FUSED_WALK not in ops(gs.compile(sampler).program(graph, seeds))
    got, want = (run_seeded(f, graph, seeds, seed=3) for f in (gs.compile(sampler), sampler))
    assert_same(list(got), list(want))


@pytest.mark.parametrize("super_batch", [1, 3])
def test_super_batched_equals_one_by_one(graph, super_batch):
    seeds = seeds_of(240, seed=7)
    fn = functools.partial(gs.compile(mh_sampler(True)), length=9)
    ref = loader_outputs(graph, functools.partial(mh_sampler(False), length=9), seeds, 40)
    got = loader_outputs(graph, fn, seeds, 40, super_batch=super_batch)
    assert len(got) == len(ref) == 6
    assert_same(got, ref, f"super_batch={super_batch}")


def test_interpreter_and_no_passes_agree(graph):
    seeds = seeds_of(100, seed=8)
    want = run_seeded(gs.compile(mh_sampler(False)), graph, seeds, seed=4)
    for kwargs in ({"passes": []}, {"runtime": gs.runtime.Options(lowered=False)}):
        got = run_seeded(gs.compile(mh_sampler(True), **kwargs), graph, seeds, seed=4)
        assert torch.equal(got, want), kwargs


def test_bad_ids_raise(graph):
    compiled = gs.compile(mh_sampler(True))
    with pytest.raises(IndexError, match="seeds"):
        compiled(graph, torch.tensor([2000]))

    def escapes(A, cur, prev, t):  # walks off the graph at step 2
        return A.random_walk(cur, 1)[:, 1].clamp(min=0) + 5000 * (t + 1)

    sampler = gs.compile(lambda A, seeds: gs.walk(escapes, A, seeds, 3))
    assert Op.FUSED_WALK in ops(sampler.program(graph, seeds_of(4)))
    with pytest.raises(IndexError, match="seeds"):
        sampler(graph, seeds_of(4))


def test_explain_shows_one_fused_op(graph):
    mh = example("metropolis_hastings")
    text = gs.explain(mh.metropolis_hastings, graph, seeds_of(10), length=80, file=io.StringIO())
    optimised = text.split("== optimised IR")[1].split("==\n", 1)[1].split("\n\n")[0]
    assert optimised.count("fused_walk(") == 1 and "random_walk(" not in optimised
    assert "num_ordinals=160" in optimised
