"""The walk examples (docs/architecture.md §7, entries 1-6): structure, compiled == eager, and the
law of their steps, on a generated graph and on web-NotreDame (skipped when ../shared/data lacks
it).

Structure is checked against the graph's edge list. The law of the steps is tested with a
randomised probability integral transform: for a step from ``v`` to ``x`` whose law over
``v``'s in-neighbours has weights ``w`` (uniform, the edge weights, node2vec's ``1/p : 1 :
1/q`` given the previous node, Metropolis-Hastings' move probabilities), ``U = (W(< x) +
V * W(= x)) / W`` with ``V`` uniform is exactly Uniform(0, 1) when the walk follows the law,
whatever the degrees; a Kolmogorov-Smirnov test compares it with the uniform law. Stops,
restarts and jumps are counted against their binomial laws. A check passes at p >
``P_MIN``; each also rejects a wrong law (power).
"""

import functools

import numpy as np
import pytest
import scipy.stats as st
import torch
from helpers import example

import gsample as gs

P_MIN = 1e-3
NAMES = ["deepwalk", "biased_deepwalk", "node2vec", "ppr", "walk_with_jump", "metropolis_hastings"]


@pytest.fixture(scope="module", params=["rmat", "notredame"])
def graph(request):
    if request.param == "rmat":
        return gs.datasets.rmat(20_000, 300_000, seed=0, weighted=True)
    A = request.getfixturevalue("notredame")
    src, dst, _ = A.edges()
    w = 1 + 4 * torch.rand(A.num_edges, generator=torch.Generator().manual_seed(0))
    return gs.Matrix.from_edge_index(torch.stack([src, dst]), num_nodes=A.num_nodes, weight=w)


def seeds_of(A, n=1024, seed=1):
    return torch.randperm(A.num_nodes, generator=torch.Generator().manual_seed(seed))[:n]


def sampler(name, A):
    """``(graph to walk on, sampler(A, seeds))`` of example ``name`` with its paper's
    parameters (shorter walks: the law tests enumerate every step's candidates)."""
    m = example(name)
    if name == "metropolis_hastings":
        return A, functools.partial(m.metropolis_hastings, length=20)
    fn = getattr(m, name)
    kw = {
        "deepwalk": {"length": 20},
        "biased_deepwalk": {"length": 20},
        "node2vec": {"length": 20, "p": 2.0, "q": 0.5},
        "ppr": {"length": 20, "alpha": 0.15},
        "walk_with_jump": {"length": 20, "jump": 0.1},
    }[name]
    return A, functools.partial(fn, **kw)


def law_graph(name, A):
    """The graph whose edges (and values, as weights) are the steps' law: Metropolis-
    Hastings walks on ``A`` follow the weighted walk on ``mh_graph(A)`` (its stays are that
    graph's self-loops); the other walks, ``A`` itself."""
    return example(name).mh_graph(A) if name == "metropolis_hastings" else A


def steps(walks):
    """``(cur, nxt, prev, root)`` of every step taken (``prev`` -1 at a walk's first step)."""
    cur, nxt = walks[:, :-1], walks[:, 1:]
    prev = torch.cat([torch.full_like(walks[:, :1], -1), walks[:, :-2]], 1)
    root = walks[:, :1].expand_as(cur)
    taken = nxt >= 0
    return cur[taken], nxt[taken], prev[taken], root[taken]


def is_edge(A, src, dst):
    s, d, _ = A.edges()
    keys = torch.unique(d * A.num_nodes + s)
    return torch.isin(dst * A.num_nodes + src, keys)


# ----------------------------------------------------------------------------- structure
@pytest.mark.parametrize("name", NAMES)
def test_example_structure_and_compiled_equals_eager(graph, name):
    A, fn = sampler(name, graph)
    seeds = seeds_of(A)
    gs.manual_seed(0)
    walks = fn(A, seeds)
    gs.manual_seed(0)
    assert torch.equal(gs.compile(fn)(A, seeds), walks)
    assert walks.shape == (seeds.numel(), 21) and torch.equal(walks[:, 0], seeds)
    stopped = walks < 0
    assert not bool((stopped[:, :-1] & ~stopped[:, 1:]).any())
    cur, nxt, _, _ = steps(walks)
    assert cur.numel() > 1000
    edge = is_edge(law_graph(name, A), nxt, cur)
    if name == "walk_with_jump":
        assert 0 < int((~edge).sum()) < 0.2 * cur.numel()  # jumps, at about 10%
    else:
        assert bool(edge.all()), "every step is an in-edge of the node it leaves"


# ----------------------------------------------------------------------------- laws
def pit(A, cur, nxt, weight, order, seed=0):
    """Randomised PIT of steps ``cur -> nxt`` under candidate weights ``weight(step, e)``
    (float64, for the candidate edges ``e`` of each step's column), the candidate nodes
    taken in the order of their total ``order`` weight (then by id): a wrong law shows as a
    skew of ``U``, where positions alone would hide it."""
    ptr, rows, N = A.csc.indptr, A.csc.rows, A.num_nodes
    deg = ptr[cur + 1] - ptr[cur]
    step = torch.arange(cur.numel()).repeat_interleave(deg)
    first = torch.cumsum(deg, 0) - deg
    e = ptr[cur][step] + torch.arange(step.numel()) - first[step]
    w, x, n = weight(step, e), rows[e], cur.numel()
    pair, inv = torch.unique(step * N + x, return_inverse=True)  # (step, candidate node)
    key = torch.zeros(pair.numel(), dtype=torch.float64).index_add_(0, inv, order(step, e))
    chosen = key[torch.searchsorted(pair, torch.arange(n) * N + nxt)]
    k, c = key[inv], chosen[step]
    before = (k < c) | ((k == c) & (x < nxt[step]))
    total = torch.zeros(n, dtype=torch.float64).index_add_(0, step, w)
    below = torch.zeros(n, dtype=torch.float64).index_add_(0, step, w * before)
    at = torch.zeros(n, dtype=torch.float64).index_add_(0, step, w * (x == nxt[step]))
    assert bool((at > 0).all()), "a step to a node of zero weight"
    v = torch.rand(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return ((below + v * at) / total).numpy()


def ks(u):
    return st.kstest(u, "uniform").pvalue


def node2vec_weight(A, prev, p, q):
    s, d, _ = A.edges()
    keys = torch.unique(d * A.num_nodes + s)

    def weight(step, e):
        x, u = A.csc.rows[e], prev[step]
        neighbour = torch.isin(u * A.num_nodes + x, keys)
        w = torch.where(neighbour, 1.0, 1.0 / q).double()
        w = torch.where(x == u, 1.0 / p, w)
        return torch.where(u < 0, 1.0, w)  # first step: first order

    return weight


@pytest.mark.parametrize("name", ["deepwalk", "biased_deepwalk", "node2vec", "metropolis_hastings"])
def test_step_law(graph, name):
    A, fn = sampler(name, graph)
    gs.manual_seed(1)
    walks = gs.compile(fn)(A, seeds_of(A, 2048))
    A = law_graph(name, A)
    cur, nxt, prev, _ = steps(walks)

    def ones(step, e):
        return torch.ones(e.numel(), dtype=torch.float64)

    def values(step, e):
        return A.csc.values[e].double()

    if name == "deepwalk":
        right, wrong, order = ones, values, values
    elif name == "node2vec":
        right = wrong = order = node2vec_weight(A, prev, 2.0, 0.5)
        wrong = ones
    else:
        right, wrong, order = values, ones, values
    assert ks(pit(A, cur, nxt, right, order)) > P_MIN
    assert ks(pit(A, cur, nxt, wrong, order)) < P_MIN  # power


def test_ppr_termination_rate(graph):
    """Each step from a node with in-edges ends the walk with probability alpha."""
    A, fn = sampler("ppr", graph)
    gs.manual_seed(2)
    walks = gs.compile(fn)(A, seeds_of(A, 4096))
    cur, nxt = walks[:, :-1], walks[:, 1:]
    deg = A.sum(axis=0)
    tried = (cur >= 0) & (deg[cur.clamp(min=0)] > 0)
    stops = int((tried & (nxt < 0)).sum())
    n = int(tried.sum())
    assert st.binomtest(stops, n, 0.15).pvalue > P_MIN
    assert st.binomtest(stops, n, 0.165).pvalue < P_MIN  # power


def test_ppr_restart_rate(graph):
    """A step onto the root from a node the root is not an in-neighbour of is a restart."""
    m = example("ppr")
    fn = functools.partial(m.ppr, length=20, alpha=0.3, variant="restart")
    gs.manual_seed(3)
    walks = gs.compile(fn)(graph, seeds_of(graph, 2048))
    cur, nxt, _, root = steps(walks)
    far = ~is_edge(graph, root, cur)
    hits, n = int(((nxt == root) & far).sum()), int(far.sum())
    assert st.binomtest(hits, n, 0.3).pvalue > P_MIN
    assert st.binomtest(hits, n, 0.33).pvalue < P_MIN  # power


def test_jump_rate(graph):
    """From a node with in-edges, a step that is not an in-edge is a jump that missed them:
    probability 0.1 * (1 - deg / N) (a normal test of their sum)."""
    A, fn = sampler("walk_with_jump", graph)
    gs.manual_seed(4)
    walks = gs.compile(fn)(A, seeds_of(A, 4096))
    cur, nxt, _, _ = steps(walks)
    deg = A.sum(axis=0)[cur]
    keep = deg > 0
    p = (0.1 * (1 - deg[keep] / A.num_nodes)).double().numpy()
    jumps = int((~is_edge(A, nxt[keep], cur[keep])).sum())
    z = (jumps - p.sum()) / np.sqrt((p * (1 - p)).sum())
    assert 2 * st.norm.sf(abs(z)) > P_MIN
    z_wrong = (jumps - 1.1 * p.sum()) / np.sqrt((p * (1 - p)).sum())
    assert 2 * st.norm.sf(abs(z_wrong)) < P_MIN  # power
