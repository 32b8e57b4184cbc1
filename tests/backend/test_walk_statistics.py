"""Distributions of ``A.random_walk`` and of alias tables (scipy.stats, fixed seeds).

Each law is the one ``gsample/backend/torch/walk.py`` states: a step is uniform over the
in-neighbours, or proportional to the static weights; node2vec weighs return : neighbour of
the previous node : other as ``1/p : 1 : 1/q``; with ``stop_prob`` a walk's length is
geometric; ``restart_prob`` and ``jump_prob`` teleport at their rates; alias tables give
the weights' distribution exactly, the same as inverse-CDF sampling
(``individual_sample(1, probs, replace=True)``). A check passes when p > ``P_MIN``, and
each runs a wrong alternative it must reject (power). Independent trials come from
repeating a seed: walkers are keyed by their position, so repeats walk independently.
"""

import numpy as np
import pytest
import scipy.stats as st
import torch

import gsample as gs
from gsample.backend.torch.alias import alias_table

P_MIN = 1e-3
T = 40_000


def chisquare(counts, probs):
    counts = np.asarray(counts, dtype=float)
    probs = np.asarray(probs, dtype=float)
    return st.chisquare(counts, counts.sum() * probs / probs.sum()).pvalue


@pytest.fixture(scope="module")
def hub():
    """Node 0 with 12 in-neighbours (1..12) of weights 1..12; each of those has in-edges."""
    src = list(range(1, 13)) + [0] * 12 + [(i % 12) + 1 for i in range(2, 14)]
    dst = [0] * 12 + list(range(1, 13)) + list(range(1, 13))
    w = [float(i) for i in range(1, 13)] + [1.0] * 24
    return gs.Matrix.from_edge_index(torch.tensor([src, dst]), num_nodes=13, weight=torch.tensor(w))


def first_steps(A, **kw):
    gs.manual_seed(0)
    return A.random_walk(torch.zeros(T, dtype=torch.int64), 1, **kw)[:, 1]


def test_uniform_step(hub):
    counts = torch.bincount(first_steps(hub), minlength=13)[1:]
    assert chisquare(counts, np.ones(12)) > P_MIN
    assert chisquare(counts, np.arange(1, 13)) < P_MIN  # power


def test_weighted_step_proportional_to_probs(hub):
    counts = torch.bincount(first_steps(hub, probs=hub.values), minlength=13)[1:]
    assert chisquare(counts, np.arange(1, 13)) > P_MIN
    assert chisquare(counts, np.ones(12)) < P_MIN  # power


def test_alias_tables_give_the_weights_exactly():
    """The table's implied probabilities (slot share plus aliased shares) equal the weights,
    on random weights with zeros and a range of 1e12, per column."""
    g = torch.Generator().manual_seed(0)
    A = gs.datasets.rmat(3000, 50000, seed=5)
    ptr, col = A.csc.indptr, A.csc.edge_cols()
    w = torch.rand(A.num_edges, generator=g, dtype=torch.float64) ** 12
    w[torch.rand(A.num_edges, generator=g) < 0.3] = 0.0
    w[ptr[:-1][ptr[1:] > ptr[:-1]]] += 1e-3  # a positive weight in every column
    table = alias_table(A.csc, w)
    assert bool((col[table[:, 1]] == col).all()), "an alias stays in its column"
    prob = table[:, 0].double() / 2.0**53
    implied = prob.clone().index_add_(0, table[:, 1], 1.0 - prob)
    deg = (ptr[1:] - ptr[:-1])[col].double()
    total = torch.zeros(A.num_nodes, dtype=torch.float64).index_add_(0, col, w)
    assert torch.allclose(implied / deg, w / total[col], rtol=0, atol=1e-9)


def test_alias_matches_inverse_cdf(hub):
    """Alias-table steps and inverse-CDF draws (weighted individual sampling with
    replacement) of the same weights: one distribution (two-sample chi-square)."""
    alias = torch.bincount(first_steps(hub, probs=hub.values), minlength=13)[1:]
    gs.manual_seed(1)
    s = hub[:, torch.zeros(T, dtype=torch.int64)].individual_sample(
        1, probs=hub[:, torch.zeros(T, dtype=torch.int64)].values, replace=True
    )
    icdf = torch.bincount(s.edges()[0], minlength=13)[1:]
    assert st.chi2_contingency(np.stack([alias.numpy(), icdf.numpy()])).pvalue > P_MIN
    uniform = torch.bincount(first_steps(hub), minlength=13)[1:]
    assert st.chi2_contingency(np.stack([uniform.numpy(), icdf.numpy()])).pvalue < P_MIN


@pytest.fixture(scope="module")
def triangle():
    """Seed u = 0 with in-neighbours {1 (= v), 2}; v's in-neighbours: u, 2 (2 -> u is an edge:
    a neighbour of u), 3 and 4 (not). From u the walk reaches v half the time; then the
    second step is node2vec's choice among u, 2, 3, 4."""
    src = [1, 2, 0, 2, 3, 4, 0, 0, 0]
    dst = [0, 0, 1, 1, 1, 1, 2, 3, 4]
    return gs.Matrix.from_edge_index(torch.tensor([src, dst]), num_nodes=5)


@pytest.mark.parametrize("p, q", [(2.0, 0.5), (0.25, 4.0), (1.0, 3.0)])
def test_node2vec_ratio(triangle, p, q):
    gs.manual_seed(2)
    walks = triangle.random_walk(torch.zeros(T, dtype=torch.int64), 2, p=p, q=q)
    second = walks[walks[:, 1] == 1, 2]
    counts = torch.bincount(second, minlength=5)[[0, 2, 3, 4]]
    assert chisquare(counts, [1 / p, 1.0, 1 / q, 1 / q]) > P_MIN
    assert chisquare(counts, [1.0, 1.0, 1.0, 1.0]) < P_MIN  # power


@pytest.fixture(scope="module")
def regular():
    """500 nodes, node j's in-neighbours j+1 .. j+4 (mod 500): no dead ends."""
    n, d = 500, 4
    dst = torch.arange(n).repeat_interleave(d)
    src = (dst + torch.arange(1, d + 1).repeat(n)) % n
    return gs.Matrix.from_edge_index(torch.stack([src, dst]), num_nodes=n)


def test_ppr_length_is_geometric(regular):
    s, L = 0.15, 20
    gs.manual_seed(3)
    walks = regular.random_walk(torch.zeros(T, dtype=torch.int64), L, stop_prob=s)
    steps = (walks[:, 1:] >= 0).sum(1)
    counts = torch.bincount(steps, minlength=L + 1).numpy()
    k = np.arange(L + 1)
    law = np.where(k < L, (1 - s) ** k * s, (1 - s) ** L)
    assert chisquare(counts, law) > P_MIN
    wrong = np.where(k < L, (1 - 0.17) ** k * 0.17, (1 - 0.17) ** L)
    assert chisquare(counts, wrong) < P_MIN  # power


@pytest.mark.parametrize("rate", [0.1, 0.3])
def test_restart_rate(regular, rate):
    """A step lands on the root, from a node the root is not an in-neighbour of, only by a
    restart: Binomial(steps, restart_prob)."""
    gs.manual_seed(4)
    walks = regular.random_walk(torch.full((4000,), 100), 10, restart_prob=rate)
    cur, nxt = walks[:, :-1].reshape(-1), walks[:, 1:].reshape(-1)
    offset = (100 - cur) % 500
    far = (offset < 1) | (offset > 4)  # 100 is not an in-neighbour of cur
    hits = int(((nxt == 100) & far).sum())
    n = int(far.sum())
    assert st.binomtest(hits, n, rate).pvalue > P_MIN
    assert st.binomtest(hits, n, rate * 1.1).pvalue < P_MIN  # power


def test_jump_rate(regular):
    """A step to a node that is not an in-neighbour is a jump that missed them:
    Binomial(steps, jump_prob * (1 - 4 / 500))."""
    rate = 0.1
    gs.manual_seed(5)
    walks = regular.random_walk(torch.arange(4000) % 500, 10, jump_prob=rate)
    cur, nxt = walks[:, :-1].reshape(-1), walks[:, 1:].reshape(-1)
    offset = (nxt - cur) % 500
    jumps = int(((offset < 1) | (offset > 4)).sum())
    p = rate * (1 - 4 / 500)
    assert st.binomtest(jumps, cur.numel(), p).pvalue > P_MIN
    assert st.binomtest(jumps, cur.numel(), p * 1.1).pvalue < P_MIN  # power
    # where it lands: uniform over the nodes
    landed = nxt[(offset < 1) | (offset > 4)]
    assert chisquare(torch.bincount(landed % 10, minlength=10), np.ones(10)) > P_MIN
