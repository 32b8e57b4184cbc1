"""Catalogue entries 11, 12, 15, 17, 19 and 20 (docs/architecture.md §7): weighted neighbour
sampling, VR-GCN, GCN-BS / Thanos, MVS, forest fire and snowball.

For each example, on a generated weighted R-MAT graph and on web-NotreDame with weights
drawn in [1, 5) (skipped when ``../shared/data`` lacks it): the structure against the
graph's own edge table (every sampled edge is the graph's edge with that id, sizes as
specified, seeds and frontiers in place), compiled == eager, and ``gs.DataLoader`` with
``super_batch`` equal to one mini-batch at a time (GCN-BS and MVS with ``fixed_state=True``,
refused without it). The laws, at fixed seeds, each checked at p > ``P_MIN`` and shown to
have power (a wrong law is rejected):

* weighted neighbours: with replacement, each draw of a column picks an edge with
  probability ``w / sum(w)`` (chi-square per column, summed); without replacement, the
  2-subsets of a column follow two sequential weighted draws (not ``w_a w_b``);
* VR-GCN: the 2-subsets of a column are uniform (not ``w_a w_b``);
* GCN-BS: each draw picks an edge with probability ``(1 - eta) b / sum(b) + eta / n``
  (not ``b / sum(b)``), and the loader samples in step with the bandit's updates;
* MVS: the pairs of chosen candidates follow two sequential draws in proportion to the
  gradient norm (not ``g_a g_b``); with ``--law independent`` (minimal variance sampling),
  each candidate is kept ``Binomial(n, p_i)`` times in ``n`` draws, ``p_i = min(1, g_i / mu)``
  (not ``min(1, K g_i / sum g)``), and the number kept follows the Poisson-binomial law of
  independent coins (not a fixed size);
* forest fire: the number of nodes a seed sets on fire is ``min(x, f)``, ``x``
  geometric with ``P(x) = 0.3 * 0.7^x`` and ``f`` its unburned in-neighbours (a randomised
  PIT and Kolmogorov-Smirnov; ``p = 0.6`` is rejected), and a seed that sets one fire picks
  it uniformly among its in-neighbours (chi-square; the weight-proportional law is rejected);
* snowball: the loader's first mini-batch of each epoch is a uniform subset of the seeds.

The CUDA test (marked ``cuda``, skipped without a GPU) compares ``backend="cuda"`` with the
torch backend, called directly and through ``gs.DataLoader`` (one by one and super-batched
by 4): exactly for the uniform samplers, on at least 99.9% of the edges for the weighted ones.
"""

import collections
import functools
import itertools

import numpy as np
import pytest
import scipy.stats as st
import torch
from helpers import (
    assert_same,
    check_compiled_equals_eager,
    example,
    loader_outputs,
    random_seeds,
    run_seeded,
)

import gsample as gs

P_MIN = 1e-3
NAMES = ["weighted_neighbors", "vrgcn", "gcn_bs", "mvs", "forest_fire", "snowball"]


# ----------------------------------------------------------------------------- graphs
class Table:
    """A graph with its edge table indexed by original edge id."""

    def __init__(self, A):
        r, c, e = A.edges()
        self.A, self.N, self.E = A, A.num_nodes, A.num_edges
        self.rows, self.cols = torch.empty_like(r), torch.empty_like(c)
        self.rows[e], self.cols[e] = r, c
        self.vals = torch.empty(e.numel(), dtype=A.values.dtype)
        self.vals[e] = A.values
        self.in_deg = torch.bincount(self.cols, minlength=self.N)

    def check_edges(self, m):
        """Every edge of ``m`` is the graph's edge with that id; returns ``m.edges()``."""
        r, c, e = m.edges()
        assert r.shape == c.shape == e.shape
        assert torch.equal(self.rows[e], r) and torch.equal(self.cols[e], c)
        if m.values is not None and m.num_edges:
            assert m.values.shape == e.shape
        return r, c, e

    def in_edges(self, nodes):
        """Sorted ids of every in-edge of ``nodes``."""
        return torch.isin(self.cols, nodes).nonzero().squeeze(1)

    def seeds(self, n, seed=1):
        return random_seeds(n, seed, self.N)

    def simple_nodes(self, count, lo, hi, seed=0):
        """``count`` nodes whose in-degree is in ``[lo, hi]``, without parallel in-edges."""
        key = self.cols * self.N + self.rows
        dup = torch.zeros(self.N, dtype=torch.bool)
        u, n = torch.unique(key, return_counts=True)
        dup[u[n > 1] // self.N] = True
        ok = ((self.in_deg >= lo) & (self.in_deg <= hi) & ~dup).nonzero().squeeze(1)
        perm = torch.randperm(ok.numel(), generator=torch.Generator().manual_seed(seed))
        return ok[perm[:count]]


def weighted_notredame(A):
    src, dst, _ = A.edges()
    w = 1 + 4 * torch.rand(A.num_edges, generator=torch.Generator().manual_seed(0))
    return gs.Matrix.from_edge_index(torch.stack([src, dst]), num_nodes=A.num_nodes, weight=w)


@pytest.fixture(scope="module", params=["rmat", "notredame"])
def graph(request):
    if request.param == "rmat":
        return Table(gs.datasets.rmat(20_000, 300_000, seed=0, weighted=True))
    return Table(weighted_notredame(request.getfixturevalue("notredame")))


@pytest.fixture(scope="module")
def small():
    return Table(gs.datasets.rmat(2000, 30000, seed=1, weighted=True))


def check_frontiers(blocks, seeds):
    """Block 0's columns are the seeds; block l + 1's are ``all_nodes`` of block l."""
    cols = seeds
    for s in blocks:
        assert torch.equal(s.column(), cols)
        nodes = s.all_nodes()
        assert torch.equal(nodes[: cols.numel()], cols)  # frontier first
        assert nodes.unique().numel() == nodes.numel()
        assert set(nodes.tolist()) == set(cols.tolist()) | set(s.row().tolist())
        cols = nodes


def per_column(G, c, cols):
    """Sampled edges per column, for unique ``cols``."""
    assert cols.unique().numel() == cols.numel()
    return torch.bincount(c, minlength=G.N)[cols]


def column_draws(m, k):
    """The edge ids of a matrix whose every column holds exactly ``k`` edges, shape (C, k)."""
    _r, c, e = m.edges()
    C = m.shape[1]
    assert e.numel() == C * k
    assert torch.equal(c.view(C, k), m.column().unsqueeze(1).expand(C, k))
    return e.view(C, k)


def chi2_sum(groups):
    """p-value of independent Pearson chi-squares ``(counts, probs)`` summed."""
    stat, df = 0.0, 0
    for counts, probs in groups:
        counts, probs = np.asarray(counts, float), np.asarray(probs, float)
        expected = counts.sum() * probs / probs.sum()
        stat += ((counts - expected) ** 2 / expected).sum()
        df += len(probs) - 1
    return st.chi2.sf(stat, df)


def pair_counts(pairs, cands):
    """Counts of each unordered pair of ``cands`` among ``pairs`` (shape (n, 2))."""
    combos = list(itertools.combinations(cands, 2))
    index = {frozenset(p): i for i, p in enumerate(combos)}
    counts = np.zeros(len(combos))
    for a, b in pairs.tolist():
        counts[index[frozenset((a, b))]] += 1
    return combos, counts


def sequential_pair_law(combos, weight):
    """P({a, b}) of two draws without replacement, each in proportion to ``weight``."""
    W = sum(weight.values())
    return np.array(
        [
            weight[a] / W * weight[b] / (W - weight[a])
            + weight[b] / W * weight[a] / (W - weight[b])
            for a, b in combos
        ]
    )


def matrices(out):
    """Every matrix of a sampler's output, flattened in order."""
    if isinstance(out, gs.Matrix):
        return [out]
    if isinstance(out, (list, tuple)):
        return [m for o in out for m in matrices(o)]
    return []


def workloads(G):
    """name -> (sampler, graph to sample, keyword arguments, fixed_state, uniform)."""
    bias = 0.1 + torch.rand(G.E, generator=torch.Generator().manual_seed(3))
    grad = torch.rand(G.N, generator=torch.Generator().manual_seed(4))
    return {
        "weighted_neighbors": (
            example("weighted_neighbors").weighted_neighbors,
            G.A,
            {"fanouts": (5, 3)},
            False,
            False,
        ),
        "weighted_neighbors-replace": (
            example("weighted_neighbors").weighted_neighbors,
            G.A,
            {"fanouts": (5, 3), "replace": True},
            False,
            False,
        ),
        "vrgcn": (example("vrgcn").vrgcn, example("vrgcn").normalize(G.A), {}, False, True),
        "gcn_bs": (example("gcn_bs").gcn_bs, G.A, {"bias": bias, "fanouts": (4, 3)}, True, False),
        "mvs": (example("mvs").mvs, G.A, {"grad_norm": grad, "batch_size": 8}, True, False),
        "mvs-independent": (
            example("mvs").mvs_independent,
            G.A,
            {"grad_norm": grad, "batch_size": 8},
            True,
            False,
        ),
        "forest_fire": (example("forest_fire").forest_fire, G.A, {}, False, True),
        "snowball": (example("snowball").snowball, G.A, {}, False, True),
    }


WORKLOADS = [
    "weighted_neighbors",
    "weighted_neighbors-replace",
    "vrgcn",
    "gcn_bs",
    "mvs",
    "mvs-independent",
    "forest_fire",
    "snowball",
]


# ============================================================================= loaders
@pytest.mark.parametrize("name", WORKLOADS)
def test_compiled_and_super_batched_equal_eager(name, small):
    """Compiled == eager, and ``gs.DataLoader`` with ``super_batch`` 1 and 4 gives the
    batches one mini-batch at a time gives (6 batches, the last one short)."""
    fn, A, kwargs, fixed, _ = workloads(small)[name]
    seeds = random_seeds(180, 2, small.N)
    check_compiled_equals_eager(fn, A, seeds[:32], calls=2, **kwargs)
    part = functools.partial(fn, **kwargs)
    ref = loader_outputs(A, part, seeds, 32)
    assert len(ref) == 6
    compiled = functools.partial(gs.compile(fn), **kwargs)
    for n in (1, 4):
        loader = gs.DataLoader(
            A, compiled, seeds, 32, shuffle=False, seed=7, super_batch=n, fixed_state=fixed
        )
        assert loader.super_batch_size == n
        got = [b.out for b in loader]
        for i, (g, r) in enumerate(zip(got, ref)):
            assert_same(g, r, f"{name}, super_batch={n}, batch {i}")


@pytest.mark.parametrize("name", ["gcn_bs", "mvs"])
def test_stateful_samplers_need_fixed_state_to_super_batch(name, small):
    fn, A, kwargs, _, _ = workloads(small)[name]
    sampler = functools.partial(gs.compile(fn), **kwargs)
    with pytest.raises(ValueError, match="fixed_state"):
        gs.DataLoader(A, sampler, random_seeds(64, 2, small.N), 32, super_batch=4)


@pytest.mark.parametrize("name", NAMES)
def test_main_runs(name, capsys):
    argv = ["--num-nodes", "2000", "--num-edges", "20000", "--batches", "2", "--batch-size", "64"]
    example(name).main(argv)
    out = capsys.readouterr().out
    if name == "gcn_bs":
        assert out.startswith("batch 0: ") and "batch 1: " in out
    else:
        assert out.startswith(f"{name}: 2 batches of 64 ")


# ============================================================================= 11: weighted
@pytest.mark.parametrize("fanouts", [(10, 5), (1, 7, 0)], ids=["10-5", "1-7-0"])
@pytest.mark.parametrize("replace", [False, True], ids=["without", "with"])
def test_weighted_neighbors_structure(graph, fanouts, replace):
    G, seeds = graph, graph.seeds(256)
    fn = functools.partial(
        example("weighted_neighbors").weighted_neighbors, fanouts=fanouts, replace=replace
    )
    blocks = run_seeded(fn, G.A, seeds)
    assert len(blocks) == len(fanouts)
    check_frontiers(blocks, seeds)
    for s, k in zip(blocks, fanouts):
        _r, c, e = G.check_edges(s)
        torch.testing.assert_close(s.values, G.vals[e])  # weights kept
        cols = s.column()
        deg = G.in_deg[cols]
        if replace:
            assert torch.equal(per_column(G, c, cols), torch.where(deg > 0, k, 0))
        else:
            assert torch.equal(per_column(G, c, cols), deg.clamp(max=k))
            assert e.unique().numel() == e.numel()  # distinct edges
    if fanouts == (10, 5):
        check_compiled_equals_eager(fn, G.A, seeds, calls=1)


def test_weighted_neighbors_with_replacement_follow_the_weights(graph):
    """Each draw picks an in-edge with probability ``w / sum(w)`` (per column)."""
    G = graph
    nodes = G.simple_nodes(6, 4, 12)
    reps, k = 1500, 4
    cols = nodes.repeat_interleave(reps)
    fn = example("weighted_neighbors").weighted_neighbors
    (s,) = run_seeded(gs.compile(fn), G.A, cols, seed=3, fanouts=(k,), replace=True)
    draws = column_draws(s, k)
    right, uniform = [], []
    for i, v in enumerate(nodes.tolist()):
        eids = G.in_edges(torch.tensor([v]))
        got = draws[i * reps : (i + 1) * reps].reshape(-1)
        counts = [(got == e).sum().item() for e in eids.tolist()]
        assert sum(counts) == reps * k
        right.append((counts, G.vals[eids].double().numpy()))
        uniform.append((counts, np.ones(eids.numel())))
    p, wrong = chi2_sum(right), chi2_sum(uniform)
    print(f"weighted, with replacement ({G.N} nodes): p = {p:.4f}, uniform law p = {wrong:.2e}")
    assert p > P_MIN
    assert wrong < P_MIN  # power


def test_weighted_neighbors_without_replacement_follow_sequential_draws(graph):
    """The 2-subsets of a column: two draws, each in proportion to weight among the edges
    not drawn yet; the product law ``w_a w_b`` is rejected."""
    G = graph
    nodes = G.simple_nodes(5, 4, 6, seed=1)
    reps = 20000
    fn = example("weighted_neighbors").weighted_neighbors
    (s,) = run_seeded(gs.compile(fn), G.A, nodes.repeat_interleave(reps), seed=4, fanouts=(2,))
    draws = column_draws(s, 2)
    right, product = [], []
    for i, v in enumerate(nodes.tolist()):
        eids = G.in_edges(torch.tensor([v])).tolist()
        combos, counts = pair_counts(draws[i * reps : (i + 1) * reps], eids)
        w = {e: float(G.vals[e]) for e in eids}
        right.append((counts, sequential_pair_law(combos, w)))
        product.append((counts, np.array([w[a] * w[b] for a, b in combos])))
    p, wrong = chi2_sum(right), chi2_sum(product)
    print(f"weighted, without replacement: p = {p:.4f}, product law p = {wrong:.2e}")
    assert p > P_MIN
    assert wrong < P_MIN  # power


# ============================================================================= 12: VR-GCN
def test_vrgcn_structure(graph):
    G, seeds = graph, graph.seeds(512)
    m = example("vrgcn")
    P = m.normalize(G.A)
    colsum = torch.zeros(G.N, dtype=torch.float64).index_add_(0, G.cols, G.vals.double())
    p_edge = G.vals.double() / colsum[G.cols]  # P by edge id
    blocks, history = run_seeded(m.vrgcn, P, seeds)
    assert len(blocks) == len(history) == 2
    check_frontiers(blocks, seeds)
    for s, h, k in zip(blocks, history, (2, 2)):
        cols = s.column()
        assert torch.equal(h.column(), cols)
        # history: every in-edge of the frontier, with P
        _, _, he = G.check_edges(h)
        assert torch.equal(torch.sort(he).values, G.in_edges(cols))
        torch.testing.assert_close(h.values.double(), p_edge[he], rtol=1e-5, atol=1e-7)
        # sampled: min(2, n(u)) distinct in-edges, P scaled by n(u) / min(2, n(u))
        _r, c, e = G.check_edges(s)
        deg = G.in_deg[cols]
        assert torch.equal(per_column(G, c, cols), deg.clamp(max=k))
        assert e.unique().numel() == e.numel()
        n = G.in_deg[c].double()
        torch.testing.assert_close(
            s.values.double(), p_edge[e] * n / n.clamp(max=k), rtol=1e-5, atol=1e-7
        )
        # the history term sums to the full aggregation; the sampled one estimates it
        sums = s.sum(axis=0)
        assert bool((sums[deg <= k] - h.sum(axis=0)[deg <= k]).abs().max() < 1e-4)
    check_compiled_equals_eager(m.vrgcn, P, seeds, calls=1)


def test_vrgcn_samples_uniform_pairs(graph):
    """Each column keeps a uniform 2-subset of its in-edges (whatever their weights)."""
    G = graph
    m = example("vrgcn")
    nodes = G.simple_nodes(3, 4, 7, seed=2)
    reps = 4000
    blocks, _ = run_seeded(
        gs.compile(m.vrgcn), m.normalize(G.A), nodes.repeat_interleave(reps), seed=5, fanouts=(2,)
    )
    draws = column_draws(blocks[0], 2)
    right, product = [], []
    for i, v in enumerate(nodes.tolist()):
        eids = G.in_edges(torch.tensor([v])).tolist()
        combos, counts = pair_counts(draws[i * reps : (i + 1) * reps], eids)
        w = {e: float(G.vals[e]) for e in eids}
        right.append((counts, np.ones(len(combos))))
        product.append((counts, np.array([w[a] * w[b] for a, b in combos])))
    p, wrong = chi2_sum(right), chi2_sum(product)
    print(f"vrgcn pairs: p = {p:.4f}, weight-product law p = {wrong:.2e}")
    assert p > P_MIN
    assert wrong < P_MIN  # power


# ============================================================================= 15: GCN-BS
def gcn_bs_law(G, bias, cols, eta):
    """q by edge id for the in-edges of ``cols``: (1 - eta) b / sum(b) + eta / n."""
    mask = torch.isin(G.cols, cols)
    b = torch.where(mask, bias.double(), 0.0)
    total = torch.zeros(G.N, dtype=torch.float64).index_add_(0, G.cols, b)
    return (1 - eta) * bias.double() / total[G.cols] + eta / G.in_deg[G.cols].double()


def test_gcn_bs_structure(graph):
    G, seeds = graph, graph.seeds(512)
    m = example("gcn_bs")
    bias = 0.1 + torch.rand(G.E, generator=torch.Generator().manual_seed(0))
    blocks = run_seeded(m.gcn_bs, G.A, seeds, bias=bias, fanouts=(10, 10), eta=0.4)
    check_frontiers(blocks, seeds)
    for s, k in zip(blocks, (10, 10)):
        _r, c, e = G.check_edges(s)
        cols = s.column()
        assert torch.equal(per_column(G, c, cols), torch.where(G.in_deg[cols] > 0, k, 0))
        torch.testing.assert_close(
            s.values.double(), gcn_bs_law(G, bias, cols, 0.4)[e], rtol=1e-4, atol=1e-7
        )
    check_compiled_equals_eager(m.gcn_bs, G.A, seeds, bias=bias, calls=1)


def test_gcn_bs_draws_follow_the_bandit_law(graph):
    """Each draw picks edge ``(v, u)`` with ``q = (1 - eta) b / sum(b) + eta / n(u)``; the
    law without exploration, ``b / sum(b)``, is rejected."""
    G = graph
    m = example("gcn_bs")
    bias = torch.rand(G.E, generator=torch.Generator().manual_seed(1)) ** 3 + 1e-3
    nodes = G.simple_nodes(5, 3, 8, seed=3)
    reps, k = 1000, 4
    blocks = run_seeded(
        gs.compile(m.gcn_bs),
        G.A,
        nodes.repeat_interleave(reps),
        seed=6,
        bias=bias,
        fanouts=(k,),
        eta=0.4,
    )
    draws = column_draws(blocks[0], k)
    q = gcn_bs_law(G, bias, nodes, 0.4)
    right, greedy = [], []
    for i, v in enumerate(nodes.tolist()):
        eids = G.in_edges(torch.tensor([v]))
        got = draws[i * reps : (i + 1) * reps].reshape(-1)
        counts = [(got == e).sum().item() for e in eids.tolist()]
        right.append((counts, q[eids].numpy()))
        greedy.append((counts, bias[eids].double().numpy()))
    p, wrong = chi2_sum(right), chi2_sum(greedy)
    print(f"gcn_bs draws: p = {p:.4f}, law without exploration p = {wrong:.2e}")
    assert p > P_MIN
    assert wrong < P_MIN  # power


def test_gcn_bs_loader_samples_in_step_with_the_updates(small):
    """Without ``fixed_state`` the loader draws batch ``i + 1`` after the loop has updated
    the bias with batch ``i``: each batch's q is the law of the bias at that moment."""
    G = small
    m = example("gcn_bs")
    bias = torch.ones(G.E)
    h = torch.randn(G.N, 8, generator=torch.Generator().manual_seed(0))
    sampler = functools.partial(m.gcn_bs, bias=bias, fanouts=(5, 5))
    gs.manual_seed(0)
    loader = gs.DataLoader(G.A, sampler, random_seeds(256, 4, G.N), 64)
    before, changed = bias.clone(), 0
    for batch in loader:
        for s in batch.out:
            _, _c, e = s.edges()
            torch.testing.assert_close(
                s.values.double(), gcn_bs_law(G, before, s.column(), 0.4)[e], rtol=1e-4, atol=1e-7
            )
        m.bandit_update(bias, G.A, batch.out, h, (5, 5))
        changed += int(not torch.equal(bias, before))
        assert bool(torch.isfinite(bias).all()) and bool((bias > 0).all())
        before = bias.clone()
    assert changed == 4
    # rewarded edges gained weight relative to the edges never drawn
    assert float(bias.max()) > float(bias.min())


# ============================================================================= 17: MVS
def _check_mvs_block(G, cands, grad, block, chosen):
    """An MVS sample: distinct eligible candidates (in-edges, positive norm) in the
    candidates' order, the block their every in-edge with its value; returns the eligible."""
    eligible = cands[(G.in_deg[cands] > 0) & (grad[cands] > 0)]
    assert torch.isin(chosen, eligible).all() and chosen.unique().numel() == chosen.numel()
    order = {v: i for i, v in enumerate(cands.tolist())}  # candidates' order
    assert [order[v] for v in chosen.tolist()] == sorted(order[v] for v in chosen.tolist())
    assert torch.equal(block.column(), chosen)
    _r, _c, e = G.check_edges(block)
    assert torch.equal(torch.sort(e).values, G.in_edges(chosen))  # 1 hop: every in-edge
    torch.testing.assert_close(block.values, G.vals[e])
    return eligible


def test_mvs_structure(graph):
    G = graph
    m = example("mvs")
    grad = torch.rand(G.N, generator=torch.Generator().manual_seed(2))
    grad[G.seeds(512)[:50]] = 0  # never drawn
    cands = G.seeds(512)
    block, chosen, prob = run_seeded(m.mvs, G.A, cands, grad_norm=grad, batch_size=64)
    eligible = _check_mvs_block(G, cands, grad, block, chosen)
    assert chosen.numel() == min(64, eligible.numel())
    torch.testing.assert_close(
        prob.double(), grad[chosen].double() / grad[cands].double().sum(), rtol=1e-5, atol=1e-9
    )
    check_compiled_equals_eager(m.mvs, G.A, cands, grad_norm=grad, calls=1)


def test_mvs_draws_follow_the_gradient_norms(small):
    """Pairs of chosen candidates: two sequential draws in proportion to ``g``; the product
    law ``g_a g_b`` is rejected. 3000 mini-batches of one pool, super-batched by 100."""
    G = small
    m = example("mvs")
    pool = G.seeds(400, seed=6)
    pool = pool[G.in_deg[pool] > 0][:6]
    grad = torch.zeros(G.N)
    grad[pool] = torch.tensor([0.05, 0.1, 0.2, 0.4, 0.8, 1.6])
    sampler = functools.partial(gs.compile(m.mvs), grad_norm=grad, batch_size=2)
    seeds = pool.repeat(3000)
    gs.manual_seed(7)
    loader = gs.DataLoader(G.A, sampler, seeds, 6, shuffle=False, super_batch=100, fixed_state=True)
    pairs = torch.stack([b.out[1] for b in loader])
    assert pairs.shape == (3000, 2)
    combos, counts = pair_counts(pairs, pool.tolist())
    g = {v: float(grad[v]) for v in pool.tolist()}
    p = chi2_sum([(counts, sequential_pair_law(combos, g))])
    wrong = chi2_sum([(counts, np.array([g[a] * g[b] for a, b in combos]))])
    print(f"mvs pairs: p = {p:.4f}, product law p = {wrong:.2e}")
    assert p > P_MIN
    assert wrong < P_MIN  # power


def mvs_threshold(g, p):
    """``mu`` read back from ``p = min(1, g / mu)`` where ``p < 1`` (all must agree)."""
    free = p < 1
    assert bool(free.any())
    mu = g[free] / p[free]
    torch.testing.assert_close(mu, mu[:1].expand_as(mu), rtol=1e-9, atol=0)
    return float(mu[0])


def test_mvs_independent_structure(graph):
    """Chosen: candidates with in-edges and ``g > 0``, in order, with every in-edge; ``p``
    is ``min(1, g / mu)`` with ``sum_candidates p = min(batch_size, #positive)``; compiled
    equals eager."""
    G = graph
    m = example("mvs")
    cands = G.seeds(512)
    grad = torch.rand(G.N, generator=torch.Generator().manual_seed(2))
    grad[cands[:50]] = 0  # never kept
    heavy = cands[50:53]
    grad[heavy] = 100.0  # p = 1: always kept
    block, chosen, prob = run_seeded(m.mvs_independent, G.A, cands, grad_norm=grad, batch_size=64)
    eligible = _check_mvs_block(G, cands, grad, block, chosen)
    assert torch.isin(heavy[G.in_deg[heavy] > 0], chosen).all()
    assert prob.dtype == torch.float64 and prob.shape == chosen.shape
    assert bool((prob > 0).all()) and bool((prob <= 1).all())
    g = grad.double()
    mu = mvs_threshold(g[chosen], prob)
    assert torch.equal(prob == 1, g[chosen] >= mu)
    expected = torch.clamp(g[eligible] / mu, max=1.0).sum()
    assert abs(float(expected) - min(64, eligible.numel())) < 1e-9
    assert abs(chosen.numel() - 64) < 4 * 64**0.5  # K on average
    # batch_size >= the positive candidates: every one kept, with p = 1
    _, chosen, prob = run_seeded(m.mvs_independent, G.A, cands, grad_norm=grad, batch_size=10_000)
    assert torch.equal(chosen, eligible) and bool((prob == 1).all())
    check_compiled_equals_eager(
        m.mvs_independent, G.A, cands, grad_norm=grad, calls=2, distinct=True
    )


def poisson_binomial(p):
    """P(sum of independent Bernoulli(p_i) = s), s = 0 .. len(p)."""
    pmf = np.ones(1)
    for q in p:
        pmf = np.convolve(pmf, [1 - q, q])
    return pmf


def mvs_independent_fit(counts, sizes, p, n):
    """p-values of ``n`` draws of independent coins ``p`` (0 < p < 1): the inclusion counts
    (``sum (c - n p)^2 / (n p (1 - p))``, chi-square with one degree per coin) and the
    numbers kept (Pearson against the Poisson-binomial law, bins of expected count >= 5)."""
    stat = ((counts - n * p) ** 2 / (n * p * (1 - p))).sum()
    marginal = st.chi2.sf(stat, len(p))
    expected, observed = n * poisson_binomial(p), np.bincount(sizes, minlength=len(p) + 1)
    edges = [0]  # bins [edges[i], edges[i + 1])
    for s in range(len(expected)):
        if expected[edges[-1] : s + 1].sum() >= 5 and expected[s + 1 :].sum() >= 5:
            edges.append(s + 1)
    edges.append(len(expected))
    e = np.add.reduceat(expected, edges[:-1])
    o = np.add.reduceat(observed, edges[:-1])
    return marginal, st.chi2.sf(((o - e) ** 2 / e).sum(), len(e) - 1)


def test_mvs_independent_keeps_each_candidate_with_its_probability(small):
    """1000 draws of one pool of 12 (super-batched by 100): the 8 uncertain candidates'
    inclusion counts are Binomial(1000, min(1, g / mu)) (not ``min(1, K g / sum g)``), the
    2 with ``p = 1`` are always kept and those without in-edges or with ``g = 0`` never;
    the number kept follows the Poisson-binomial law (not a fixed size)."""
    G = small
    m = example("mvs")
    pool = G.seeds(400, seed=6)
    live = pool[G.in_deg[pool] > 0]
    pool = torch.cat([live[:11], pool[G.in_deg[pool] == 0][:1]])  # last: no in-edges
    assert pool.numel() == 12
    grad = torch.zeros(G.N)
    grad[pool] = torch.tensor([0.05, 0.1, 0.2, 0.3, 0.5, 0.8, 1.2, 2.0, 8.0, 20.0, 0.0, 5.0])
    g = grad[pool].double()[:10]
    K, n = 4, 1000
    sampler = functools.partial(gs.compile(m.mvs_independent), grad_norm=grad, batch_size=K)
    gs.manual_seed(7)
    loader = gs.DataLoader(
        G.A, sampler, pool.repeat(n), 12, shuffle=False, super_batch=100, fixed_state=True
    )
    outs = [b.out for b in loader]
    assert len(outs) == n
    index = {v: i for i, v in enumerate(pool.tolist())}
    counts, sizes, prob = np.zeros(12), [], np.full(12, np.nan)
    for _, chosen, pr in outs:
        at = [index[v] for v in chosen.tolist()]
        counts[at] += 1
        sizes.append(len(at))
        prob[at] = pr.numpy()  # the same every draw
    mu = mvs_threshold(g[:8], torch.from_numpy(prob[:8]))
    p = np.minimum(1, g.numpy() / mu)
    assert abs(p.sum() - K) < 1e-9
    np.testing.assert_allclose(prob[:10], p, rtol=1e-12)
    assert (p[:8] < 1).all() and (p[8:] == 1).all()
    assert (counts[8:10] == n).all() and (counts[10:] == 0).all()
    marginal, size = mvs_independent_fit(counts[:8], np.array(sizes) - 2, p[:8], n)
    q = np.minimum(1, K * g.numpy() / g.sum().item())[:8]  # proportional, uncapped
    wrong_marginal, _ = mvs_independent_fit(counts[:8], np.array(sizes) - 2, q, n)
    fixed = np.zeros(n, dtype=int) + K - 2  # a fixed size (mvs's)
    _, wrong_size = mvs_independent_fit(counts[:8], fixed, p[:8], n)
    assert marginal > P_MIN and size > P_MIN
    assert wrong_marginal < P_MIN and wrong_size < P_MIN  # power


def test_mvs_main_runs_the_independent_law(capsys):
    example("mvs").main(
        [
            "--num-nodes",
            "2000",
            "--num-edges",
            "20000",
            "--batches",
            "2",
            "--batch-size",
            "64",
            "--mvs-batch",
            "16",
            "--law",
            "independent",
        ]
    )
    assert capsys.readouterr().out.startswith("mvs: 2 batches of 64 ")


# ============================================================================= 19: forest fire
def test_forest_fire_structure(graph):
    G, seeds = graph, graph.seeds(512)
    m = example("forest_fire")
    blocks, burned = run_seeded(m.forest_fire, G.A, seeds)
    assert len(blocks) == 2
    assert torch.equal(burned[: seeds.numel()], seeds)
    assert burned.unique().numel() == burned.numel()
    before, frontier, at = seeds, seeds, seeds.numel()
    for s in blocks:
        r, c, e = G.check_edges(s)
        torch.testing.assert_close(s.values, G.vals[e])
        cols = s.column()
        # the columns: frontier nodes that set a fire, in frontier order
        pos = {v: i for i, v in enumerate(frontier.tolist())}
        assert all(v in pos for v in cols.tolist())
        assert [pos[v] for v in cols.tolist()] == sorted(pos[v] for v in cols.tolist())
        n = per_column(G, c, cols)
        assert bool((n >= 1).all())
        assert not torch.isin(r, before).any()  # unburned only
        pair = c * G.N + r
        assert pair.unique().numel() == pair.numel()  # once per column
        new = s.row()
        assert torch.equal(burned[at : at + new.numel()], new)
        at += new.numel()
        before, frontier = torch.cat([before, new]), new
    assert at == burned.numel()
    assert blocks[0].num_edges > 100
    check_compiled_equals_eager(m.forest_fire, G.A, seeds, calls=1)


def fire_counts(G, seeds, p, seed):
    """One hop of forest fire from ``seeds``: per seed, the nodes it set on fire (counts)
    and its unburned distinct in-neighbours ``f``; and the block."""
    m = example("forest_fire")
    blocks, _ = run_seeded(gs.compile(m.forest_fire), G.A, seeds, seed=seed, p=p, depth=1)
    s = blocks[0]
    _, c, _ = s.edges()
    got = torch.bincount(c, minlength=G.N)[seeds]
    fresh = torch.isin(G.cols, seeds) & ~torch.isin(G.rows, seeds)
    pairs = torch.unique(G.cols[fresh] * G.N + G.rows[fresh])
    f = torch.bincount(pairs // G.N, minlength=G.N)[seeds]
    return got, f, s


def count_pit(got, f, p, seed=0):
    """Randomised PIT of ``got ~ min(x, f)``, ``P(x) = (1 - p) p^x`` (seeds with f > 0)."""
    keep = f > 0
    c, m = got[keep].double(), f[keep].double()
    cdf_below = torch.where(c > 0, 1 - p**c, torch.zeros_like(c))  # P(< c)
    at = torch.where(c < m, (1 - p) * p**c, p**m)  # P(= c)
    v = torch.rand(c.numel(), generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return (cdf_below + v * at).numpy()


def test_forest_fire_counts_are_geometric(graph):
    G = graph
    seeds = G.seeds(6000, seed=8)
    got, f, _ = fire_counts(G, seeds, 0.7, seed=9)
    assert bool((got <= f).all())
    assert int((f > 0).sum()) > 2000
    p = st.kstest(count_pit(got, f, 0.7), "uniform").pvalue
    wrong = st.kstest(count_pit(got, f, 0.6), "uniform").pvalue
    print(f"forest fire counts: p = {p:.4f}, p_burn = 0.6 p = {wrong:.2e}")
    assert p > P_MIN
    assert wrong < P_MIN  # power


def test_forest_fire_burns_uniform_in_neighbours(graph):
    """A node that sets one fire picks it uniformly among its unburned in-neighbours (the
    weight-proportional law is rejected): 200 seeds whose in-neighbours are not seeds
    (so all of them are unburned), 200 mini-batches of them, super-batched by 20."""
    G = graph
    nodes = G.simple_nodes(600, 3, 6, seed=15)
    linked = torch.isin(G.rows, nodes) & torch.isin(G.cols, nodes)  # seed -> seed edges
    nodes = nodes[~torch.isin(nodes, torch.cat([G.rows[linked], G.cols[linked]]))][:200]
    m = example("forest_fire")
    sampler = functools.partial(gs.compile(m.forest_fire), depth=1)
    gs.manual_seed(16)
    loader = gs.DataLoader(
        G.A, sampler, nodes.repeat(200), nodes.numel(), shuffle=False, super_batch=20
    )
    counts = collections.Counter()
    for batch in loader:
        _, c, e = batch.out[0][0].edges()
        one = torch.bincount(c, minlength=G.N)[c] == 1  # columns that set one fire
        counts.update(e[one].tolist())
    right, weighted = [], []
    for v in nodes.tolist():
        eids = G.in_edges(torch.tensor([v]))
        got = [counts[e] for e in eids.tolist()]
        if sum(got):
            right.append((got, np.ones(eids.numel())))
            weighted.append((got, G.vals[eids].double().numpy()))
    assert nodes.numel() == 200
    assert sum(sum(g) for g, _ in right) > 200 * 200 * 0.3 * 0.7 * 0.8
    p, wrong = chi2_sum(right), chi2_sum(weighted)
    print(f"forest fire, one fire: p = {p:.4f}, weight-proportional law p = {wrong:.2e}")
    assert p > P_MIN
    assert wrong < P_MIN  # power


# ============================================================================= 20: snowball
def test_snowball_structure(graph):
    G, seeds = graph, graph.seeds(64)
    blocks = run_seeded(example("snowball").snowball, G.A, seeds)
    assert len(blocks) == 2
    check_frontiers(blocks, seeds)
    for s in blocks:
        _r, _c, e = G.check_edges(s)
        assert torch.equal(torch.sort(e).values, G.in_edges(s.column()))  # every in-edge
        torch.testing.assert_close(s.values, G.vals[e])
    hop1 = torch.cat([seeds, G.rows[torch.isin(G.cols, seeds)]]).unique()
    hop2 = torch.cat([hop1, G.rows[torch.isin(G.cols, hop1)]]).unique()
    assert torch.equal(torch.sort(blocks[-1].all_nodes()).values, hop2)
    check_compiled_equals_eager(example("snowball").snowball, G.A, seeds, calls=1)


def test_snowball_seeds_are_uniform(small):
    """Over 300 epochs, each of 50 seed nodes is in the first mini-batch (10 seeds) about
    equally often: uniform 10-subsets (a chi-square corrected for the fixed batch size);
    a law favouring the low ids is rejected."""
    G = small
    pool = G.seeds(50, seed=13)
    loader = gs.DataLoader(G.A, gs.compile(example("snowball").snowball), pool, 10, super_batch=5)
    gs.manual_seed(14)
    counts = collections.Counter()
    for _ in range(300):
        first = next(iter(loader))
        assert first.index == 0 and first.seeds.numel() == 10
        assert torch.equal(first.out[0].column(), first.seeds)
        counts.update(first.seeds.tolist())
    n, k, epochs = 50, 10, 300
    obs = np.array([counts[v] for v in pool.tolist()], float)

    def pvalue(probs):
        expected = epochs * k * probs / probs.sum()
        stat = ((obs - expected) ** 2 / (expected * (1 - k / n))).sum() * (n - 1) / n
        return st.chi2.sf(stat, n - 1)

    p = pvalue(np.ones(n))
    wrong = pvalue(np.linspace(1.5, 0.5, n))
    print(f"snowball seeds: p = {p:.4f}, tilted law p = {wrong:.2e}")
    assert p > P_MIN
    assert wrong < P_MIN  # power


# ============================================================================= CUDA
def sampled_edges(out):
    """The edges of an output as a multiset of (matrix, row, col, edge id)."""
    return collections.Counter(
        (i, *e) for i, m in enumerate(matrices(out)) for e in zip(*(t.tolist() for t in m.edges()))
    )


def assert_agree(got, ref, uniform, what):
    if uniform:
        assert_same(got, ref, what)
        return
    a, b = sampled_edges(got), sampled_edges(ref)
    both, either = sum((a & b).values()), sum((a | b).values())
    assert both >= 0.999 * either, f"{what}: {both} of {either} edges agree"


def cuda_workload(name):
    G = Table(gs.datasets.rmat(3000, 60000, seed=4, weighted=True))
    fn, A, kwargs, fixed, uniform = workloads(G)[name]
    kwargs = {k: v.cuda() if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    return G, fn, A.to("cuda"), kwargs, fixed, uniform


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("name", WORKLOADS)
def test_cuda_backend_equals_torch_backend(name):
    """``backend="cuda"`` on CUDA tensors samples what the torch backend samples (exactly
    for the uniform samplers, on >= 99.9% of the edges for the weighted ones), called
    directly and through ``gs.DataLoader`` (one by one, and super-batched by 4)."""
    pytest.importorskip("cupy")
    G, fn, A, kwargs, fixed, uniform = cuda_workload(name)
    batch = 64
    seeds = random_seeds(4 * batch, 3, G.N).cuda()
    torch_fn = functools.partial(gs.compile(fn, backend="torch"), **kwargs)
    cuda_fn = functools.partial(gs.compile(fn, backend="cuda"), **kwargs)
    for call in range(3):
        ref = run_seeded(torch_fn, A, seeds[:batch], seed=21 + call)
        got = run_seeded(cuda_fn, A, seeds[:batch], seed=21 + call)
        assert_agree(got, ref, uniform, f"{name}, call {call}")
    ref = loader_outputs(A, torch_fn, seeds, batch)
    for options in ({}, {"super_batch": 4, "fixed_state": fixed}):
        got = loader_outputs(A, cuda_fn, seeds, batch, **options)
        assert len(got) == len(ref) == 4
        for i, (g, r) in enumerate(zip(got, ref)):
            assert_agree(g, r, uniform, f"{name}, loader {options}, batch {i}")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_cuda_graphs_capture_weighted_neighbors():
    """The default runtime (CUDA graphs on) runs weighted neighbour sampling call after call
    (its weighted sampler lowers to the exact kernel, outside any captured region:
    ``tests/runtime/test_lower.py``); it must sample what the torch backend samples."""
    pytest.importorskip("cupy")
    G, fn, A, kwargs, _, _ = cuda_workload("weighted_neighbors")
    seeds = random_seeds(64, 3, G.N).cuda()
    torch_fn = functools.partial(gs.compile(fn, backend="torch"), **kwargs)
    cuda_fn = functools.partial(gs.compile(fn, backend="cuda"), **kwargs)
    for call in range(3):
        got = run_seeded(cuda_fn, A, seeds, seed=21 + call)
        assert_agree(got, run_seeded(torch_fn, A, seeds, seed=21 + call), False, f"call {call}")
