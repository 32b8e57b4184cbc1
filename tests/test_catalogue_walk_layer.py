"""Catalogue entries 8, 9, 18, 23 and 24 (docs/architecture.md §7): multi-root walk (frontier
sampling), PinSAGE, LABOR, AS-GCN and c-saw layer sampling.

For each example, on a generated weighted R-MAT graph and on web-NotreDame (skipped when
``../shared/data`` lacks it): the structure against the graph's own edge table (every
sampled edge is the graph's edge with that id, sizes as specified, seeds / frontiers in
place), compiled == eager, and super-batching in ``gs.DataLoader`` equal to one mini-batch
at a time. The laws, at fixed seeds, each checked at p > ``P_MIN`` and shown to have power
(a wrong law is rejected):

* PinSAGE: the visit counts of walks with restart on a tiny graph against their exact
  law (mean and covariance by enumerating every walk), a chi-square on the quadratic form;
* multi-root walk: the first step picks every in-edge of the roots with probability
  ``1 / sum(deg)`` (degree-biased walker, then a uniform in-neighbour);
* c-saw layer: each candidate row is kept with probability ``k / n`` (uniform k-subsets);
* AS-GCN: one row drawn in proportion to the brute-force AS-GCN bias ``q``;
* LABOR: each edge kept with probability ``min(1, k / deg)``, two columns keep a shared
  row together with probability ``min(p1, p2)`` (one uniform per row, not independent
  draws), and a column keeps nothing with probability ``(1 - k / deg) ** deg``.

The CUDA tests (marked ``cuda``, skipped without a GPU) compare the CUDA backend with the
torch backend, called directly and through ``gs.DataLoader`` with ``super_batch=4``.
"""

import collections
import functools

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
NAMES = ["pinsage", "multi_root_walk", "csaw_layer", "asgcn", "labor"]


# ----------------------------------------------------------------------------- graphs
class Table:
    """A graph with its edge table indexed by original edge id."""

    def __init__(self, A):
        r, c, e = A.edges()
        self.A, self.N = A, A.num_nodes
        self.rows, self.cols = torch.empty_like(r), torch.empty_like(c)
        self.rows[e], self.cols[e] = r, c
        self.vals = torch.empty(e.numel(), dtype=A.values.dtype)
        self.vals[e] = A.values
        self.in_deg = torch.bincount(self.cols, minlength=self.N)
        self.keys = torch.unique(self.cols * self.N + self.rows)

    def check_edges(self, m):
        """Every edge of ``m`` is the graph's edge with that id; returns ``m.edges()``."""
        r, c, e = m.edges()
        assert r.shape == c.shape == e.shape
        assert torch.equal(self.rows[e], r) and torch.equal(self.cols[e], c)
        return r, c, e

    def is_edge(self, src, dst):
        return torch.isin(dst * self.N + src, self.keys)

    def seeds(self, n, seed=1):
        return random_seeds(n, seed, self.N)


@pytest.fixture(scope="module", params=["rmat", "notredame"])
def graph(request):
    if request.param == "rmat":
        return Table(gs.datasets.rmat(20_000, 300_000, seed=0, weighted=True))
    return Table(request.getfixturevalue("notredame"))


@pytest.fixture(scope="module")
def small():
    return Table(gs.datasets.rmat(2000, 30000, seed=1, weighted=True))


def check_frontiers(blocks, seeds):
    """Block 0's columns are the seeds; block l + 1's are ``all_nodes`` of block l."""
    cols = seeds
    for s in blocks:
        assert torch.equal(s.column(), cols)
        nodes = s.all_nodes()
        assert torch.equal(nodes[: cols.numel()], cols)
        assert nodes.unique().numel() == nodes.numel()
        assert set(nodes.tolist()) == set(cols.tolist()) | set(s.row().tolist())
        cols = nodes


def chi2_binomial(counts, trials, p):
    """p-value of independent ``counts[i] ~ Binomial(trials, p[i])`` (normal approximation,
    a chi-square of ``len(p)`` degrees of freedom)."""
    counts, p = np.asarray(counts, float), np.asarray(p, float)
    stat = ((counts - trials * p) ** 2 / (trials * p * (1 - p))).sum()
    return st.chi2.sf(stat, len(p))


def chi2_multinomial(counts, probs):
    """Pearson's chi-square of ``counts`` against ``probs`` (cells expecting < 5 merged)."""
    counts, probs = np.asarray(counts, float), np.asarray(probs, float)
    expected = counts.sum() * probs / probs.sum()
    small = expected < 5
    if small.any():
        counts = np.append(counts[~small], counts[small].sum())
        expected = np.append(expected[~small], expected[small].sum())
    return st.chisquare(counts, expected).pvalue


# ============================================================================= PinSAGE
def pinsage_fn():
    return example("pinsage").pinsage


def test_pinsage_structure(graph):
    """Shapes, and the top-k of every seed recounted from the very walks the sampler drew."""
    G, seeds = graph, graph.seeds(256)
    fn = pinsage_fn()
    check_compiled_equals_eager(fn, G.A, seeds, calls=2, distinct=True)
    nbrs, weights = run_seeded(fn, G.A, seeds)
    assert nbrs.shape == weights.shape == (256, 10)
    assert nbrs.dtype == torch.int64 and weights.dtype == torch.float32
    # the walks: the sampler's only random op, so the same after the same seed
    walks = run_seeded(G.A.random_walk, seeds.repeat_interleave(100), 3, restart_prob=0.5)
    cur, nxt = walks[:, :-1], walks[:, 1:]
    root = walks[:, :1].expand_as(cur)
    taken = nxt >= 0
    ok = G.is_edge(nxt[taken], cur[taken]) | (nxt[taken] == root[taken])
    assert bool(ok.all()), "each step is an in-edge or a restart to the seed"
    visits = walks[:, 1:].reshape(256, 300)
    for i in range(256):
        counts = collections.Counter(x for x in visits[i].tolist() if x >= 0 and x != int(seeds[i]))
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
        n = len(top)
        assert nbrs[i, :n].tolist() == [v for v, _ in top]
        assert weights[i, :n].tolist() == [float(c) for _, c in top]
        assert bool((nbrs[i, n:] == -1).all()) and bool((weights[i, n:] == 0).all())
    assert int((nbrs >= 0).sum()) > 256 * 2


TINY_IN = {0: [1, 2, 3], 1: [0, 2], 2: [4], 3: [1, 4, 5], 4: [0, 3], 5: []}  # 5: a dead end


def tiny_graph():
    src = [r for c, rs in TINY_IN.items() for r in rs]
    dst = [c for c, rs in TINY_IN.items() for _ in rs]
    return gs.Matrix.from_edge_index(torch.tensor([src, dst]), num_nodes=6)


def visit_law(seed, length, alpha):
    """Mean and covariance of one walk's visit counts of the nodes other than ``seed``
    (walks with restart on TINY_IN, in gsample's order: restart with ``alpha``, else a
    uniform in-neighbour, else stop), by enumerating every walk."""
    paths = [((), seed, 1.0)]
    for _ in range(length):
        nxt = []
        for seen, cur, p in paths:
            if cur < 0:
                nxt.append((seen, cur, p))
                continue
            nxt.append((seen + (seed,), seed, p * alpha))
            nb = TINY_IN[cur]
            if nb:
                nxt += [(seen + (x,), x, p * (1 - alpha) / len(nb)) for x in nb]
            else:
                nxt.append((seen, -1, p * (1 - alpha)))
        paths = nxt
    others = [v for v in TINY_IN if v != seed]
    y = np.array([[seen.count(v) for v in others] for seen, _, _ in paths], float)
    p = np.array([q for _, _, q in paths])
    mean = p @ y
    return others, mean, (y - mean).T @ ((y - mean) * p[:, None])


def quadratic_pvalue(total, n, mean, cov):
    d = total - n * mean
    stat = d @ np.linalg.pinv(n * cov) @ d
    return st.chi2.sf(stat, np.linalg.matrix_rank(cov))


def test_pinsage_visit_counts_follow_the_walk_law():
    A, seed, copies = tiny_graph(), 0, 300
    nbrs, weights = run_seeded(gs.compile(pinsage_fn()), A, torch.full((copies,), seed), seed=11)
    others, mean, cov = visit_law(seed, 3, 0.5)
    total = np.array([float(weights[nbrs == v].sum()) for v in others])
    n = copies * 100
    right = quadratic_pvalue(total, n, mean, cov)
    _, wrong_mean, wrong_cov = visit_law(seed, 3, 0.4)  # power
    wrong = quadratic_pvalue(total, n, wrong_mean, wrong_cov)
    print(f"pinsage visit counts: p = {right:.4g} (restart 0.4: {wrong:.3g})")
    assert right > P_MIN and wrong < P_MIN


# ============================================================================= multi-root walk
def mrw_fn():
    return example("multi_root_walk").multi_root_walk


def replay(G, roots, out, length):
    """The steps follow the frontier: each moves a walker on ``dst`` along an in-edge."""
    src, dst, eid, final = out
    assert src.shape == dst.shape == eid.shape and src.numel() <= length
    assert torch.equal(G.rows[eid], src) and torch.equal(G.cols[eid], dst)
    frontier = roots.tolist()
    for t, (s, d) in enumerate(zip(src.tolist(), dst.tolist())):
        assert d in frontier, f"step {t}: {d} is not in the frontier"
        frontier[frontier.index(d)] = s
    if src.numel() < length:  # stopped: every walker on a dead end
        assert bool((G.in_deg[torch.tensor(frontier)] == 0).all())
    assert final.tolist() == frontier


def test_multi_root_walk_structure(graph):
    """NextDoor's parameters: 100 roots, 100 steps."""
    G, roots = graph, graph.seeds(100)
    fn = functools.partial(mrw_fn(), length=100)
    compiled = check_compiled_equals_eager(fn, G.A, roots, calls=1)
    out = run_seeded(compiled, G.A, roots)
    assert out[0].numel() == 100
    replay(G, roots, out, 100)
    # the same in a loader, one mini-batch at a time and super-batched
    roots = graph.seeds(400, seed=2)
    ref = loader_outputs(G.A, compiled, roots, 100)
    for r, part in zip(ref, roots.split(100)):
        replay(G, part, r, 100)
    assert_same(loader_outputs(G.A, compiled, roots, 100, super_batch=4), ref)


def roots_for_law(G, m=6, lo=3, hi=30):
    ok = ((G.in_deg >= lo) & (G.in_deg <= hi)).nonzero().squeeze(1)
    return ok[torch.randperm(ok.numel(), generator=torch.Generator().manual_seed(3))[:m]]


def test_multi_root_walk_first_step_law(small):
    """The first step's edge is uniform over the roots' in-edges (degree-biased walker,
    uniform in-neighbour); a uniformly chosen walker is rejected."""
    G, T = small, 3000
    roots = roots_for_law(G)
    fn = functools.partial(gs.compile(mrw_fn()), length=1)
    outs = loader_outputs(G.A, fn, roots.repeat(T), roots.numel(), super_batch=100)
    eid = torch.cat([o[2] for o in outs])
    assert eid.numel() == T
    cand = torch.isin(G.cols, roots).nonzero().squeeze(1)  # the roots' in-edges
    counts = torch.bincount(eid, minlength=G.A.num_edges)[cand].numpy()
    assert counts.sum() == T
    right = chi2_multinomial(counts, np.ones(cand.numel()))
    wrong = chi2_multinomial(counts, 1.0 / G.in_deg[G.cols[cand]].double().numpy())
    print(f"multi-root walk first step: p = {right:.4g} (uniform walker: {wrong:.3g})")
    assert right > P_MIN and wrong < P_MIN  # power: wrong


# ============================================================================= c-saw layer
def check_rows_blocks(G, blocks, seeds, layers):
    """Layer-wise blocks: ``min(k, candidates)`` rows among the frontier's in-neighbours,
    every edge from a chosen row into the frontier kept once."""
    assert len(blocks) == len(layers)
    check_frontiers(blocks, seeds)
    for s, k in zip(blocks, layers):
        _r, _c, e = G.check_edges(s)
        cols = s.column()
        into = torch.isin(G.cols, cols)
        cand = G.rows[into].unique()
        chosen = s.row_ids
        assert s.shape == (chosen.numel(), cols.numel())
        assert chosen.numel() == min(k, cand.numel())
        assert bool(torch.isin(chosen, cand).all())
        assert torch.equal(chosen, chosen.sort().values)
        expected = (into & torch.isin(G.rows, chosen)).nonzero().squeeze(1)
        assert torch.equal(e.sort().values, expected)


def test_csaw_layer_structure(graph):
    G, seeds = graph, graph.seeds(512)
    fn = example("csaw_layer").csaw_layer
    check_compiled_equals_eager(fn, G.A, seeds, calls=2, distinct=True)
    blocks = run_seeded(fn, G.A, seeds)
    check_rows_blocks(G, blocks, seeds, (2000, 2000))
    for s in blocks:
        torch.testing.assert_close(s.values, G.vals[s.edges()[2]], rtol=0, atol=0)


def frontier_for_law(G, lo=40, hi=120):
    """A few seeds whose in-neighbours number between ``lo`` and ``hi``."""
    for start in range(0, G.N, 4):
        seeds = torch.arange(start, start + 4)
        n = G.rows[torch.isin(G.cols, seeds)].unique().numel()
        if lo <= n <= hi:
            return seeds
    raise AssertionError("no frontier of that size")


def test_csaw_layer_rows_are_uniform(small):
    """Each of the n candidate rows is kept with probability k / n; the counts of uniform
    k-subsets have covariance T p (1 - p) n / (n - 1) (I - J / n), so
    ``(n - 1) / n * sum (O - E)^2 / (T p (1 - p))`` is chi-square with n - 1 degrees."""
    G, T, k = small, 2000, 15
    seeds = frontier_for_law(G)
    fn = functools.partial(gs.compile(example("csaw_layer").csaw_layer), layers=(k,))
    outs = loader_outputs(G.A, fn, seeds.repeat(T), seeds.numel(), super_batch=100)
    into = torch.isin(G.cols, seeds)
    cand = G.rows[into].unique()
    n, p = cand.numel(), k / cand.numel()
    counts = torch.bincount(torch.cat([o[0].row_ids for o in outs]), minlength=G.N)[cand]
    assert int(counts.sum()) == T * k
    counts = counts.double().numpy()

    def pvalue(expected):
        stat = (n - 1) / n * ((counts - expected) ** 2 / (T * p * (1 - p))).sum()
        return st.chi2.sf(stat, n - 1)

    links = torch.bincount(G.rows[into], minlength=G.N)[cand].double().numpy()
    right, wrong = pvalue(np.full(n, T * p)), pvalue(T * k * links / links.sum())
    print(f"c-saw layer rows: p = {right:.4g} (by edge count: {wrong:.3g})")
    assert right > P_MIN and wrong < P_MIN  # power: wrong


# ============================================================================= AS-GCN
def asgcn_inputs(N):
    return example("asgcn").random_inputs(N, num_features=8)


def asgcn_bias(G, cols, X, W, k):
    """Brute-force AS-GCN row probabilities ``q`` (shape (N,), float64) for a frontier."""
    X, W = X.double(), W.double()
    into = torch.isin(G.cols, cols)
    p = (
        torch.zeros(G.N, dtype=torch.float64)
        .index_add_(0, G.rows[into], G.vals[into].double() ** 2)
        .sqrt()
    )
    h_u = X @ W[:, 0]
    hv_sum = (X[cols] @ W[:, 1]).sum()
    q = p * (torch.relu(h_u + hv_sum) + 1) / k * (torch.relu(h_u) + 1)
    return q / q.sum()


def test_asgcn_structure(graph):
    """Layers [512, 512], mini-batches of 256; the values are AS-GCN's brute-force weights."""
    G, seeds = graph, graph.seeds(256)
    inputs = asgcn_inputs(G.N)
    fn = example("asgcn").asgcn
    check_compiled_equals_eager(fn, G.A, seeds, calls=2, distinct=True, **inputs)
    blocks = run_seeded(fn, G.A, seeds, **inputs)
    check_rows_blocks(G, blocks, seeds, (512, 512))
    X, W = inputs["X"].double(), inputs["W"].double()
    for s in blocks:
        r, c, _ = s.edges()
        q = asgcn_bias(G, s.column(), inputs["X"], inputs["W"], 512)
        assert bool((q[s.row_ids] > 0).all())
        att = torch.relu(X[r] @ W[:, 0] + X[c] @ W[:, 1]) + 1
        expected = att / s.row_ids.numel() / q[r]
        torch.testing.assert_close(s.values.double(), expected, rtol=2e-4, atol=0)


def test_asgcn_draws_follow_the_bias(small):
    """With k = 1 the row drawn has probability q (one draw); LADIES-style p alone and the
    uniform law are rejected."""
    G, T = small, 3000
    seeds = frontier_for_law(G)
    inputs = asgcn_inputs(G.N)
    inputs["W"] = inputs["W"] * 4  # a marked model bias
    fn = functools.partial(gs.compile(example("asgcn").asgcn), layers=(1,), **inputs)
    outs = loader_outputs(
        G.A, fn, seeds.repeat(T), seeds.numel(), super_batch=100, fixed_state=True
    )
    drawn = torch.cat([o[0].row_ids for o in outs])
    assert drawn.numel() == T
    q = asgcn_bias(G, seeds, inputs["X"], inputs["W"], 1)
    cand = (q > 0).nonzero().squeeze(1)
    counts = torch.bincount(drawn, minlength=G.N)[cand].numpy()
    assert counts.sum() == T
    into = torch.isin(G.cols, seeds)
    p = (
        torch.zeros(G.N, dtype=torch.float64)
        .index_add_(0, G.rows[into], G.vals[into].double() ** 2)
        .sqrt()
    )
    right = chi2_multinomial(counts, q[cand].numpy())
    wrong = (
        chi2_multinomial(counts, p[cand].numpy()),  # power: p alone
        chi2_multinomial(counts, np.ones(cand.numel())),
    )  # power: uniform
    print(f"as-gcn draws: p = {right:.4g} (p alone: {wrong[0]:.3g}, uniform: {wrong[1]:.3g})")
    assert right > P_MIN and max(wrong) < P_MIN


def test_asgcn_super_batch_needs_fixed_state(small):
    inputs = asgcn_inputs(small.N)
    fn = functools.partial(gs.compile(example("asgcn").asgcn), layers=(64, 64), **inputs)
    with pytest.raises(ValueError, match="fixed_state=True"):
        gs.DataLoader(small.A, fn, small.seeds(256), 64, super_batch=4)


# ============================================================================= LABOR
def labor_fn():
    return example("labor").labor


def test_labor_structure(graph):
    """Fanouts [10, 10, 10]: every column keeps only its in-edges, all of them when its
    degree is at most k; and one threshold per row explains every block (a row kept by a
    column is kept by every column of smaller degree: u_r <= k / deg(c))."""
    G, seeds = graph, graph.seeds(512)
    fn = labor_fn()
    check_compiled_equals_eager(fn, G.A, seeds, calls=2, distinct=True)
    blocks = run_seeded(fn, G.A, seeds)
    assert len(blocks) == 3
    check_frontiers(blocks, seeds)
    for s in blocks:
        _r, _c, e = G.check_edges(s)
        cols = s.column()
        assert s.shape == (G.N, cols.numel())
        assert e.unique().numel() == e.numel()
        torch.testing.assert_close(s.values, G.vals[e], rtol=0, atol=0)
        into = torch.isin(G.cols, cols).nonzero().squeeze(1)  # candidate edges
        kept = torch.isin(into, e)
        deg = G.in_deg[G.cols[into]]
        assert bool(kept[deg <= 10].all()), "columns of degree <= k keep every edge"
        # per row: the kept columns' degrees lie below the dropped ones'
        row = G.rows[into]
        big = torch.full((G.N,), -1, dtype=torch.int64).scatter_reduce(
            0, row[kept], deg[kept], "amax"
        )
        low = torch.full((G.N,), 1 << 40, dtype=torch.int64).scatter_reduce(
            0, row[~kept], deg[~kept], "amin"
        )
        assert bool((big < low).all()), "no single threshold per row explains the block"
        assert 0 < int(kept.sum()) < kept.numel()


GADGETS, STRIDE = 200, 47


def labor_graph():
    """``GADGETS`` disjoint copies of two columns sharing 25 in-neighbours: in gadget ``g``
    (nodes ``47 g ..``), column ``a = 47 g + 45`` has in-neighbours ``47 g + 0..39`` (degree
    40) and column ``b = 47 g + 46`` has ``47 g + 0..24`` and ``47 g + 40..44`` (degree 30).
    Rows of different gadgets draw independent uniforms: one call samples every gadget."""
    src, dst = [], []
    for g in range(GADGETS):
        o = g * STRIDE
        src += (
            [o + r for r in range(40)] + [o + r for r in range(25)] + [o + r for r in range(40, 45)]
        )
        dst += [o + 45] * 40 + [o + 46] * 30
    A = gs.Matrix.from_edge_index(torch.tensor([src, dst]), num_nodes=GADGETS * STRIDE)
    return Table(A)


def labor_runs(G, k, calls):
    """``kept[t, e]``: whether edge ``e`` (edge ids in gadget order, 70 per gadget) was kept
    in trial ``t`` (``calls`` calls of one LABOR layer on every gadget's two columns)."""
    fn = gs.compile(labor_fn())
    cols = torch.stack(
        [torch.arange(GADGETS) * STRIDE + 45, torch.arange(GADGETS) * STRIDE + 46], 1
    ).reshape(-1)
    kept = []
    for call in range(calls):
        (s,) = run_seeded(fn, G.A, cols, fanouts=(k,), seed=100 + call)
        G.check_edges(s)
        mask = torch.zeros(G.A.num_edges, dtype=torch.bool)
        mask[s.edges()[2]] = True
        kept.append(mask.view(GADGETS, 70))
    return torch.cat(kept)  # (calls * GADGETS, 70): edges 0..39 of a, 40..69 of b


def test_labor_inclusion_and_shared_rows():
    G, k = labor_graph(), 10
    kept = labor_runs(G, k, 10)
    T = kept.shape[0]
    counts = kept.sum(0).double()
    for sl, p in ((slice(0, 40), k / 40), (slice(40, 70), k / 30)):  # a column's rows
        right = chi2_binomial(counts[sl], T, np.full(counts[sl].numel(), p))
        wrong = chi2_binomial(counts[sl], T, np.full(counts[sl].numel(), 1.15 * p))
        print(
            f"labor inclusion, degree {round(k / p)}: p = {right:.4g} (1.15 k / deg: {wrong:.3g})"
        )
        assert right > P_MIN and wrong < P_MIN  # power: wrong
    # the 25 shared rows: edge r of a and edge 40 + r of b; kept by both with probability
    # min(1/4, 1/3) (one uniform per row), not 1/4 * 1/3 (independent draws)
    a, b = kept[:, :25], kept[:, 40:65]
    both, n = int((a & b).sum()), a.numel()
    right = st.binomtest(both, n, k / 40).pvalue
    wrong = st.binomtest(both, n, (k / 40) * (k / 30)).pvalue  # power: independent
    print(f"labor shared rows: p = {right:.4g} (independent draws: {wrong:.3g})")
    assert right > P_MIN and wrong < P_MIN
    assert not bool((a & ~b).any()), "a row kept by a (u <= 1/4) is kept by b (u <= 1/3)"


def test_labor_empty_columns():
    """k = 1 on degree 40: a column keeps nothing with probability (39/40)^40 (such columns
    go around individual_sample's all-zero check and come back empty)."""
    G = labor_graph()
    kept = labor_runs(G, 1, 10)
    T = kept.shape[0]
    empty = int((~kept[:, :40]).all(1).sum())
    right = st.binomtest(empty, T, (39 / 40) ** 40).pvalue
    wrong = st.binomtest(empty, T, 0.42).pvalue  # power
    print(f"labor empty columns: p = {right:.4g} (0.42: {wrong:.3g})")
    assert right > P_MIN and wrong < P_MIN
    both = int(((~kept[:, :40]).all(1) & (~kept[:, 40:]).all(1)).sum())
    assert both > 0, "a frontier whose every column is empty"


# ============================================================================= all examples
def workloads(G, small=False):
    """name -> (function, keyword arguments, fixed_state, batch size, uniform)."""
    return {
        "pinsage": (pinsage_fn(), {}, False, 64, True),
        "multi_root_walk": (mrw_fn(), {"length": 20 if small else 100}, False, 100, True),
        "csaw_layer": (
            example("csaw_layer").csaw_layer,
            {"layers": (300, 300)} if small else {},
            False,
            512,
            True,
        ),
        "asgcn": (
            example("asgcn").asgcn,
            dict(asgcn_inputs(G.N), **({"layers": (64, 64)} if small else {})),
            True,
            256,
            False,
        ),
        "labor": (labor_fn(), {}, False, 512, True),
    }


@pytest.mark.parametrize("name", NAMES)
def test_super_batch_equals_one_by_one(name, small):
    """``super_batch=3`` and ``4`` (3 does not divide the 6 mini-batches) give every
    mini-batch exactly as eager sampling one at a time (AS-GCN with ``fixed_state=True``)."""
    fn, kwargs, fixed, batch, _ = workloads(small, small=True)[name]
    seeds = small.seeds(6 * min(batch, 64) - 20, seed=4)
    batch = min(batch, 64)
    ref = loader_outputs(small.A, functools.partial(fn, **kwargs), seeds, batch)  # eager
    compiled = functools.partial(gs.compile(fn), **kwargs)
    for N in (3, 4):
        loader = gs.DataLoader(
            small.A, compiled, seeds, batch, shuffle=False, seed=7, super_batch=N, fixed_state=fixed
        )
        assert loader.super_batch_size == N
        got = [b.out for b in loader]
        assert len(got) == len(ref) == 6
        assert_same(got, ref, f"{name}, super_batch={N}")


@pytest.mark.parametrize("name", NAMES)
def test_main_runs(name, capsys):
    argv = ["--num-nodes", "2000", "--num-edges", "20000", "--batches", "2", "--batch-size", "64"]
    if name == "multi_root_walk":
        argv += ["--length", "10"]
    example(name).main(argv)
    out = capsys.readouterr().out
    assert out.startswith(f"{name}: 2 batches of 64 ")


# ----------------------------------------------------------------------------- CUDA
def sampled_edges(out):
    """The edges of an output as a set of (matrix, row, col, edge id)."""
    mats = [
        m for m in (out if isinstance(out, (list, tuple)) else [out]) if isinstance(m, gs.Matrix)
    ]
    return {(i, *e) for i, m in enumerate(mats) for e in zip(*(t.tolist() for t in m.edges()))}


def assert_agree(got, ref, uniform, what):
    if uniform:
        assert_same(got, ref, what)
        return
    a, b = sampled_edges(got), sampled_edges(ref)
    assert len(a & b) >= 0.999 * len(a | b), what


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("name", NAMES)
def test_cuda_backend_equals_torch_backend(name):
    """``backend="cuda"`` on CUDA tensors samples what the torch backend samples (exactly
    for the uniform samplers, on >= 99.9% of the edges for AS-GCN), called directly and
    through ``gs.DataLoader`` (one by one, and super-batched by 4)."""
    pytest.importorskip("cupy")
    G = Table(gs.datasets.rmat(3000, 60000, seed=4, weighted=True))
    fn, kwargs, fixed, batch, uniform = workloads(G, small=True)[name]
    A = G.A.to("cuda")
    kwargs = {k: v.cuda() if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    seeds = random_seeds(4 * batch, 3, G.N).cuda()
    torch_fn = functools.partial(gs.compile(fn, backend="torch"), **kwargs)
    cuda_fn = functools.partial(gs.compile(fn, backend="cuda"), **kwargs)
    for call in range(2):
        ref = run_seeded(torch_fn, A, seeds[:batch], seed=21 + call)
        got = run_seeded(cuda_fn, A, seeds[:batch], seed=21 + call)
        assert_agree(got, ref, uniform, f"{name}, call {call}")
    ref = loader_outputs(A, torch_fn, seeds, batch)
    for options in ({}, {"super_batch": 4, "fixed_state": fixed}):
        got = loader_outputs(A, cuda_fn, seeds, batch, **options)
        assert len(got) == len(ref) == 4
        for i, (g, r) in enumerate(zip(got, ref)):
            assert_agree(g, r, uniform, f"{name}, loader {options}, batch {i}")
