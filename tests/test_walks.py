"""The step operator ``gs.walk`` (``gsample/walks.py``).

Determinism: a walk written as one step draws exactly what the hand-written Python loop
over that step draws (eager, compiled, super-batched; the CPU and a GPU alike), because the
compiled walk is the step's trace copied step after step, with the loop's op ordinals. The
step is traced once per phase, whatever the length. Distribution: a Metropolis-Hastings
step (``examples/metropolis_hastings.py``) moves from a node as its chain says (chi-square,
with a power check). Errors name the argument.
"""

import functools

import pytest
import scipy.stats as st
import torch
from helpers import assert_same, example, loader_outputs, run_seeded

import gsample as gs

P_MIN = 1e-3


@pytest.fixture(scope="module")
def graph():
    return gs.datasets.rmat(3000, 24000, seed=2)


def seeds_of(n, N=3000, seed=1):
    return torch.randint(0, N, (n,), generator=torch.Generator().manual_seed(seed))


def backtrack_averse(A, cur, prev, t):
    """Uses ``prev``: a step that lands on the previous node draws once more; stops at 10%."""
    nxt = A.random_walk(cur, 1, stop_prob=0.1)[:, 1]
    again = A.random_walk(cur, 1)[:, 1]
    return torch.where(nxt == prev, again, nxt)


def hand_written(step, A, seeds, length, period=1):
    """The loop ``gs.walk`` promises to equal: the first step on the seeds, later ones with
    stopped walkers at node 0 (their draws dropped)."""
    cols, cur, prev = [seeds], seeds, seeds
    for s in range(length):
        if s == 0:
            nxt = step(A, cur, prev, 0)
        else:
            dead = cur < 0
            nxt = step(A, cur.clamp(min=0), prev.clamp(min=0), s % period)
            nxt = torch.where(dead, -1, nxt)
        cols.append(nxt)
        prev, cur = cur, nxt
    return torch.stack(cols, 1)


def dsl(A, seeds, length=25):
    return gs.walk(backtrack_averse, A, seeds, length)


def loop(A, seeds, length=25):
    return hand_written(backtrack_averse, A, seeds, length)


# ----------------------------------------------------------------------------- determinism
def test_equals_the_hand_written_loop(graph):
    seeds = seeds_of(500)
    ref = run_seeded(loop, graph, seeds, seed=3)
    assert ref.shape == (500, 26) and torch.equal(ref[:, 0], seeds)
    assert int((ref < 0).sum()) > 0 and bool(((ref[:, :-1] < 0) <= (ref[:, 1:] < 0)).all())
    assert torch.equal(run_seeded(dsl, graph, seeds, seed=3), ref), "eager"
    compiled = gs.compile(dsl)
    for call in range(2):
        assert torch.equal(run_seeded(compiled, graph, seeds, seed=3), ref), f"call {call}"
    assert torch.equal(run_seeded(gs.compile(loop), graph, seeds, seed=3), ref)
    assert not torch.equal(run_seeded(compiled, graph, seeds, seed=4), ref)


def test_the_step_is_traced_once_per_phase(graph):
    calls = []

    def counted(A, cur, prev, t):
        calls.append(t)
        return backtrack_averse(A, cur, prev, t)

    program = gs.compile(lambda A, seeds: gs.walk(counted, A, seeds, 40)).program(
        graph, seeds_of(10)
    )
    assert len(calls) == 2, "the first step and the others"
    assert program.num_random == 80, "two random ops per step, each with its own ordinal"
    calls.clear()
    gs.compile(lambda A, seeds: gs.walk(counted, A, seeds, 40, period=3)).program(
        graph, seeds_of(10)
    )
    assert sorted(calls) == [0, 0, 1, 2]


def test_phases_state_and_several_matrices(graph):
    """A metapath-like walk over two relations (``period=2``) with a state (visits so far)."""
    B = gs.datasets.rmat(3000, 9000, seed=5)

    def step(mats, cur, prev, t, visits):
        nxt = mats[t].random_walk(cur, 1)[:, 1]
        return nxt, visits + (nxt >= 0).to(torch.int64)

    def sampler(A, seeds, B):
        zero = torch.zeros_like(seeds)
        return gs.walk(step, (A, B), seeds, 9, state=zero, period=2)

    def by_hand(A, seeds, B):
        visits = torch.zeros_like(seeds)

        def one(mats, cur, prev, t):
            nonlocal visits
            nxt, visits = step(mats, cur, prev, t, visits)
            return nxt

        return hand_written(one, (A, B), seeds, 9, period=2), visits

    seeds = seeds_of(300)
    walks, visits = run_seeded(sampler, graph, seeds, B, seed=6)
    ref, _ref_visits = run_seeded(by_hand, graph, seeds, B, seed=6)
    assert torch.equal(walks, ref)
    got = run_seeded(gs.compile(sampler), graph, seeds, B, seed=6)
    assert torch.equal(got[0], ref)
    # the state is not masked: a stopped walker's dropped draws still count here
    assert bool((got[1] >= (ref[:, 1:] >= 0).sum(1)).all())
    assert torch.equal(got[1], visits)


def test_super_batched_equals_one_by_one(graph):
    mh = example("metropolis_hastings")
    fn = functools.partial(gs.compile(mh.metropolis_hastings), length=12)
    seeds = seeds_of(200, seed=7)
    ref = loader_outputs(graph, functools.partial(mh.metropolis_hastings, length=12), seeds, 50)
    for n in (1, 4):
        got = loader_outputs(graph, fn, seeds, 50, super_batch=n)
        assert len(got) == len(ref) == 4
        assert_same(got, ref, f"super_batch={n}")


# ----------------------------------------------------------------------------- distribution
def mh_law(src, dst, deg, v):
    """``(nodes, probabilities)`` of a Metropolis-Hastings move from ``v``: per in-edge
    ``u -> v``, ``min(1/deg v, 1/deg u)`` (``1/deg v`` when ``u`` has no in-edges: always
    accepted), the rest a stay."""
    nbrs = src[dst == v]
    w = torch.minimum(
        torch.full(nbrs.shape, 1.0 / float(deg[v]), dtype=torch.float64), 1.0 / deg[nbrs].double()
    )
    nodes = torch.unique(torch.cat([nbrs, torch.tensor([v])]))
    law = torch.zeros(nodes.numel(), dtype=torch.float64)
    law.index_add_(0, torch.searchsorted(nodes, nbrs), w)
    law[torch.searchsorted(nodes, torch.tensor(v))] += 1.0 - float(w.sum())
    return nodes, law


def test_metropolis_hastings_moves_as_its_chain(graph):
    """``T`` walkers at one node ``v``: their first moves follow the chain's law (chi-square);
    the proposal alone (uniform over the in-edges, no stays) is rejected (power)."""
    mh = example("metropolis_hastings")
    src, dst, _ = graph.edges()
    deg = torch.bincount(dst, minlength=graph.num_nodes)
    # a node whose in-neighbours' degrees straddle its own: the acceptance matters
    v = next(
        int(x)
        for x in torch.nonzero((deg >= 6) & (deg <= 15)).squeeze(1)
        if int(deg[src[dst == x]].max()) >= 3 * int(deg[x])
        and int(deg[src[dst == x]].min()) <= int(deg[x])
    )
    T = 20_000
    walks = run_seeded(
        gs.compile(mh.metropolis_hastings),
        graph,
        torch.full((T,), v, dtype=torch.int64),
        length=1,
        seed=8,
    )
    nodes, law = mh_law(src, dst, deg, v)
    assert bool(torch.isin(walks[:, 1], nodes).all())
    counts = torch.bincount(
        torch.searchsorted(nodes, walks[:, 1].contiguous()), minlength=nodes.numel()
    ).numpy()
    assert st.chisquare(counts, T * law.numpy()).pvalue > P_MIN
    proposal = torch.zeros_like(law).index_add_(
        0, torch.searchsorted(nodes, src[dst == v]), torch.ones(int(deg[v]), dtype=torch.float64)
    )
    moved = proposal.numpy() > 0  # the stays at v only through a self-loop
    wrong = proposal.numpy()[moved] / proposal.numpy()[moved].sum()
    assert st.chisquare(counts[moved], counts[moved].sum() * wrong).pvalue < P_MIN


# ----------------------------------------------------------------------------- errors
def test_errors_name_the_argument(graph):
    seeds = seeds_of(5)
    with pytest.raises(TypeError, match="step: expected a function"):
        gs.walk(None, graph, seeds, 3)
    with pytest.raises(ValueError, match="period: must be >= 1"):
        gs.walk(backtrack_averse, graph, seeds, 3, period=0)
    with pytest.raises(ValueError, match="length"):
        gs.walk(backtrack_averse, graph, seeds, -1)
    with pytest.raises(ValueError, match="step: must return one position per walker"):
        gs.walk(lambda A, cur, prev, t: cur[:2], graph, seeds, 3)
    with pytest.raises(TypeError, match=r"step: with state, must return \(next positions"):
        gs.walk(lambda A, cur, prev, t, s: cur, graph, seeds, 3, state=seeds)
    with pytest.raises(IndexError, match="seeds: node id 3000 is out of range"):
        gs.walk(backtrack_averse, graph, torch.tensor([3000]), 3)
    with pytest.raises(TypeError, match=r"A: expected a gs\.Matrix"):
        gs.walk(backtrack_averse, "graph", seeds, 3)
    bad = gs.compile(dsl)
    with pytest.raises(IndexError, match="out of range"):
        bad(graph, torch.tensor([3000]))
    assert gs.walk(backtrack_averse, graph, seeds, 0).shape == (5, 1)


# ----------------------------------------------------------------------------- CUDA
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("backend", ["torch", "cuda"])
def test_cuda_draws_what_the_cpu_draws(graph, backend):
    if backend == "cuda":
        pytest.importorskip("cupy")
    seeds = seeds_of(500)
    ref = run_seeded(loop, graph, seeds, seed=3)
    G = graph.to("cuda")
    fn = gs.compile(dsl, backend=backend)
    for call in range(3):
        assert torch.equal(run_seeded(fn, G, seeds.cuda(), seed=3).cpu(), ref), f"call {call}"
    mh = example("metropolis_hastings")
    cpu = loader_outputs(graph, gs.compile(mh.metropolis_hastings), seeds, 125)
    gpu = loader_outputs(
        G, gs.compile(mh.metropolis_hastings, backend=backend), seeds.cuda(), 125, super_batch=4
    )
    assert_same([g.cpu() for g in gpu], cpu)
