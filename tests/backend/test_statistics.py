"""Statistical tests of the samplers against hand-computed distributions (docs/architecture.md §3).

Every test draws many independent trials at a *fixed* seed and compares the observed
outcome counts with the exact distribution the sampler must follow (the algorithms are
stated in the docstring of ``gsample/backend/torch/select.py``):

* individual, uniform, without replacement: uniform over the k-subsets of a column;
* individual, uniform, with replacement: k iid uniform draws (multiset distribution,
  because the output keeps CSC order and loses the draw order);
* individual, weighted, without replacement: k sequential draws, each proportional to
  weight among the edges not yet drawn (A-Res / exponential keys);
* individual, weighted, with replacement: k iid draws proportional to weight;
* collective: the same four laws over the rows that have edges (and positive
  ``node_probs``), one trial per call; with replacement a row drawn twice appears once.

Independent trials inside one call come from repeating the same node in the frontier,
``A[:, torch.full((T,), j)]``: the column position is part of every key, so each repeat
draws independently. Collective sampling is one trial per call; the op ordinal advances
with every call, so successive calls are independent.

Threshold
---------
A test passes when its p-value exceeds ``P_MIN = 1e-3``. The seeds are fixed, so the
p-values are reproducible (on CPU and CUDA alike for uniform samplers, which are
bit-identical across devices); the threshold is what a correct sampler at a fresh seed
fails with probability 1e-3 per check. Every p-value is printed and a summary table is
printed at the end of the module: run ``pytest tests/backend/test_statistics.py -s``.

Power
-----
Each test also runs its own check on a deliberately wrong alternative (a sampler that
always takes the first k edges, one whose inclusion probabilities are proportional to
weight, one that ignores weights, a "first writer wins" reservoir, ...) and asserts that
the check *rejects* it (p < P_MIN), so that a passing test means something. Those
p-values are printed with the tag ``(power: must reject)``.
"""

from __future__ import annotations

import collections
import itertools
import math

import numpy as np
import pytest
import scipy.stats as st
import torch

import gsample as gs
from gsample.base.random import batch_scope

P_MIN = 1e-3

# ----------------------------------------------------------------------------- p-value log
_PVALUES: dict = {}


@pytest.fixture(scope="module", autouse=True)
def _print_pvalue_table():
    """Print every recorded p-value once the module has run (visible with ``-s``)."""
    yield
    if _PVALUES:
        print(
            f"\n==== p-values of tests/backend/test_statistics.py (pass: p > {P_MIN}; "
            "power checks must be < it) ===="
        )
        for name, p in _PVALUES.items():
            print(f"  {p:11.4g}  {name}")


def _record(key: str, p: float) -> None:
    _PVALUES[key] = float(p)
    print(f"\n  p = {p:.4g}  {key}", end="")


def _where(device) -> str:
    """Device and backend of a result, e.g. ``cuda/cuda`` for the CUDA backend's kernels."""
    return f"{torch.device(device).type}/{gs.backend_for(device)}"


def check(name: str, p: float, device) -> float:
    """Record a goodness-of-fit p-value and assert that it does not reject."""
    key = f"{name}[{_where(device)}]"
    _record(key, p)
    assert p > P_MIN, f"{key}: p = {p:.3g} <= {P_MIN}: the sample does not follow the expected law"
    return p


def rejects(name: str, p: float, device) -> float:
    """Record the p-value of a check applied to a wrong alternative; it must reject."""
    key = f"{name}[{_where(device)}] (power: must reject)"
    _record(key, p)
    assert p < P_MIN, f"{key}: p = {p:.3g}: the check cannot tell the alternative apart"
    return p


# ----------------------------------------------------------------------------- graphs
def star_graph(columns, weighted: bool = False):
    """A graph whose node ``c`` has the in-edges described by ``columns[c]``.

    ``columns[c]`` is a degree (int) or a list of edge weights. Node ``c``'s ``i``-th in-edge
    comes from node ``m + i`` (``m = len(columns)``), so in CSC order it sits at local
    offset ``i``. Returns ``(A, info)`` where ``info`` maps original edge ids to
    ``offset``, ``src`` and ``dst`` (numpy arrays).
    """
    m = len(columns)
    src, dst, w, off = [], [], [], []
    for c, spec in enumerate(columns):
        ws = [1.0] * spec if isinstance(spec, int) else [float(x) for x in spec]
        for i, x in enumerate(ws):
            src.append(m + i)
            dst.append(c)
            w.append(x)
            off.append(i)
    n = m + max([1] + [len(([0] * s) if isinstance(s, int) else s) for s in columns])
    weight = torch.tensor(w, dtype=torch.float64) if weighted else None
    A = gs.Matrix.from_edge_index(
        torch.tensor([src, dst], dtype=torch.int64), num_nodes=n, weight=weight
    )
    info = {
        "offset": np.array(off, dtype=np.int64),
        "src": np.array(src, dtype=np.int64),
        "dst": np.array(dst, dtype=np.int64),
    }
    return A, info


def frontier(nodes, reps: int, device) -> torch.Tensor:
    """``nodes`` repeated ``reps`` times, interleaved: n0, n1, ..., n0, n1, ..."""
    return torch.tensor(list(nodes) * reps, dtype=torch.int64, device=device)


def per_column(s: gs.Matrix, info) -> list:
    """The local offsets each column of the sample ``s`` selected, one array per column.

    Checks the structure on the way: every edge is an edge of the graph in its own
    column, and each column's edges come out in CSC order (non-decreasing offset).
    """
    rows, cols, eids = (t.cpu().numpy() for t in s.edges())
    assert np.array_equal(rows, info["src"][eids]) and np.array_equal(cols, info["dst"][eids])
    offs = info["offset"][eids]
    ptr = s.csc.indptr.cpu().numpy()
    out = [offs[ptr[c] : ptr[c + 1]] for c in range(len(ptr) - 1)]
    for o in out:
        assert (np.diff(o) >= 0).all(), "selected edges must keep CSC order"
    return out


def outcomes(groups) -> list:
    """Each column's selection as a sorted tuple (a set or multiset outcome)."""
    return [tuple(sorted(g.tolist())) for g in groups]


# ----------------------------------------------------------------------------- laws
def uniform_subsets(n: int, k: int) -> dict:
    """k of n without replacement, uniform: every k-subset has probability 1 / C(n, k)."""
    if n <= k:
        return {tuple(range(n)): 1.0}
    return {c: 1.0 / math.comb(n, k) for c in itertools.combinations(range(n), k)}


def sequential_subsets(w, k: int) -> dict:
    """k sequential draws proportional to ``w`` without replacement, as sets.

    P(S) = sum over the orders (s1, ..., sk) of S of
    prod_t w[s_t] / (W - w[s_1] - ... - w[s_{t-1}]);
    for k = 2: P({a, b}) = w_a/W * w_b/(W - w_a) + w_b/W * w_a/(W - w_b). Zero weights never
    appear; with at most k positive weights the only outcome is all of them.
    """
    pos = [i for i, x in enumerate(w) if x > 0]
    if len(pos) <= k:
        return {tuple(pos): 1.0}
    total = float(sum(w))
    out = collections.defaultdict(float)
    for perm in itertools.permutations(pos, k):
        p, rem = 1.0, total
        for i in perm:
            p *= w[i] / rem
            rem -= w[i]
        out[tuple(sorted(perm))] += p
    return dict(out)


def iid_draws(w, k: int, as_set: bool = False) -> dict:
    """k iid draws proportional to ``w``: the multiset law (or, ``as_set``, the set of distinct
    values drawn). For k = 2: P({a, a}) = p_a^2 and P({a, b}) = 2 p_a p_b."""
    pos = [i for i, x in enumerate(w) if x > 0]
    total = float(sum(w))
    out = collections.defaultdict(float)
    for seq in itertools.product(pos, repeat=k):
        key = tuple(sorted(set(seq))) if as_set else tuple(sorted(seq))
        out[key] += math.prod(w[i] / total for i in seq)
    return dict(out)


def marginals(law: dict, n: int) -> np.ndarray:
    """Inclusion probability of each of n items under a law over sets."""
    pi = np.zeros(n)
    for s, p in law.items():
        for i in set(s):
            pi[i] += p
    return pi


def gof_p(obs: list, law: dict) -> float:
    """Pearson chi-square p-value of observed outcomes against ``law`` (outcome -> prob).

    An outcome the law gives probability 0 (absent from ``law``) gives p = 0.
    """
    counts = collections.Counter(obs)
    if any(o not in law for o in counts):
        return 0.0
    cells = list(law)
    if len(cells) == 1:
        return 1.0
    observed = np.array([counts.get(c, 0) for c in cells], dtype=np.float64)
    probs = np.array([law[c] for c in cells])
    expected = probs / probs.sum() * len(obs)
    assert expected.min() >= 5, "test design: too few trials for the chi-square approximation"
    return float(st.chisquare(observed, expected).pvalue)


def check_law(name: str, obs: list, law: dict, device) -> float:
    counts = collections.Counter(obs)
    bad = [o for o in counts if o not in law]
    assert not bad, f"{name}: impossible outcomes drawn: {bad[:5]}"
    return check(name, gof_p(obs, law), device)


def hypergeom_chisq_p(counts, sizes, n: int, k: int, trials: int) -> float:
    """p-value for per-cell inclusion counts of ``trials`` uniform k-of-n draws without
    replacement, cell ``c`` holding ``sizes[c]`` of the n items.

    Per trial the cell counts are multivariate hypergeometric, whose covariance is the
    multinomial one times ``(n - k) / (n - 1)``; so Pearson's statistic divided by that
    factor is chi-square with ``cells - 1`` degrees of freedom (trials are independent).
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    expected = trials * k * sizes / n
    stat = float(((np.asarray(counts) - expected) ** 2 / expected).sum()) / ((n - k) / (n - 1))
    return float(st.chi2.sf(stat, len(sizes) - 1))


# ======================================================================= 1. uniform, no replacement
UNI_DEGS = [6, 5, 8, 4, 2]  # node 4 has degree 2: fewer than k for k >= 2


@pytest.mark.parametrize("k", [2, 3, 5])
def test_uniform_without_replacement_is_uniform_over_subsets(device, k):
    """All C(n, k) subsets equally likely in columns of 6, 5, 8 and 4 edges; a column with
    at most k edges returns all of them."""
    A, info = star_graph(UNI_DEGS)
    T = 12000
    gs.manual_seed(1000 + k)
    s = A.to(device)[:, frontier(range(len(UNI_DEGS)), T, device)].individual_sample(k)
    groups = per_column(s, info)
    rng = np.random.default_rng(k)
    for c, n in enumerate(UNI_DEGS):
        obs = outcomes(groups[c :: len(UNI_DEGS)])
        law = uniform_subsets(n, k)
        if n <= k:
            assert set(obs) == {tuple(range(n))}, "a column with <= k edges returns all of them"
            continue
        check_law(f"uniform/noreplace n={n} k={k}", obs, law, device)
        # power: a first-k sampler, and one with uniform marginals but consecutive offsets
        rejects(
            f"uniform/noreplace n={n} k={k} vs first-k sampler",
            gof_p([tuple(range(k))] * T, law),
            device,
        )
        if 2 <= k <= n - 2:  # (for k = n - 1 every subset is a cyclic window)
            starts = rng.integers(0, n, T)
            cyc = [tuple(sorted((s0 + j) % n for j in range(k))) for s0 in starts]
            rejects(
                f"uniform/noreplace n={n} k={k} vs cyclic-window sampler", gof_p(cyc, law), device
            )


# ========================================================================== 2. uniform, replacement
@pytest.mark.parametrize("k", [2, 3])
def test_uniform_with_replacement_multisets(device, k):
    """k iid uniform draws: multiset law (P({a,a}) = 1/n^2, P({a,b}) = 2/n^2 for k = 2) and
    the pooled per-edge counts (multinomial, uniform)."""
    degs = [5, 4, 1]
    A, info = star_graph(degs)
    T = 20000
    gs.manual_seed(2000 + k)
    s = A.to(device)[:, frontier(range(len(degs)), T, device)].individual_sample(k, replace=True)
    groups = per_column(s, info)
    assert all(len(g) == k for g in groups), "with replacement every non-empty column gets k"
    rng = np.random.default_rng(k)
    for c, n in enumerate(degs):
        obs = outcomes(groups[c :: len(degs)])
        law = iid_draws([1.0] * n, k)
        if n == 1:
            assert set(obs) == {(0,) * k}
            continue
        check_law(f"uniform/replace multiset n={n} k={k}", obs, law, device)
        pooled = np.bincount(np.concatenate(groups[c :: len(degs)]), minlength=n)
        check(f"uniform/replace per-edge counts n={n} k={k}", st.chisquare(pooled).pvalue, device)
        # power: without-replacement draws (never a repeat) and "all k draws equal"
        noreps = [tuple(sorted(rng.choice(n, k, replace=False).tolist())) for _ in range(T)]
        rejects(f"uniform/replace n={n} k={k} vs no-repeat sampler", gof_p(noreps, law), device)
        same = [(int(a),) * k for a in rng.integers(0, n, T)]
        rejects(
            f"uniform/replace n={n} k={k} vs one-draw-repeated sampler", gof_p(same, law), device
        )


# ====================================================================== 3. weighted, no replacement
W_NOREP = [
    [1, 2, 3, 4, 0, 10],  # a zero-weight edge in the middle
    [0, 3, 0, 1, 0],  # only two positive edges: fewer than (or equal to) k
    [1, 1, 2, 3, 5, 0, 8],
    [0, 0, 0, 6],  # one positive edge
]


@pytest.mark.parametrize("k", [2, 3])
def test_weighted_without_replacement_sequential_draws(device, k):
    """Sets follow k sequential draws proportional to weight (A-Res); zero weights are never
    chosen; a column with at most k positive edges returns exactly its positive edges."""
    A, info = star_graph(W_NOREP, weighted=True)
    T = 30000
    gs.manual_seed(3000 + k)
    sub = A.to(device)[:, frontier(range(len(W_NOREP)), T, device)]
    s = sub.individual_sample(k, probs=sub.values)
    groups = per_column(s, info)
    for c, w in enumerate(W_NOREP):
        obs = outcomes(groups[c :: len(W_NOREP)])
        law = sequential_subsets(w, k)
        if len(law) == 1:
            assert set(obs) == set(law), f"column {w}: must return exactly its positive edges"
            continue
        check_law(f"weighted/noreplace w={w} k={k}", obs, law, device)
        rejects(
            f"weighted/noreplace w={w} k={k} vs uniform-over-positive sampler",
            gof_p(obs, sequential_subsets([float(x > 0) for x in w], k)),
            device,
        )
    if k == 2:
        # power against "marginal inclusion proportional to weight" (pi_i = k w_i / W), on
        # the heaviest edge of [1, 1, 2, 3, 5, 0, 8]: 0.8 under that alternative, while the
        # sequential law gives 0.6789...; exact binomial tests on the inclusion count.
        w = W_NOREP[2]
        inc = sum(6 in o for o in outcomes(groups[2 :: len(W_NOREP)]))
        pi_seq = marginals(sequential_subsets(w, 2), len(w))[6]
        check(
            "weighted/noreplace inclusion of heaviest edge (binomial)",
            st.binomtest(inc, T, pi_seq).pvalue,
            device,
        )
        rejects(
            "weighted/noreplace vs inclusion-proportional-to-weight",
            st.binomtest(inc, T, 2 * 8 / sum(w)).pvalue,
            device,
        )


# ========================================================================= 4. weighted, replacement
W_REP = [
    [0, 1, 2, 0, 3, 4, 10, 0],  # zeros first, in the middle and last
    [5],  # a single edge
    [0, 0, 7, 0],  # a single positive edge among zeros
]


def test_weighted_with_replacement_iid_draws(device):
    """k = 2 iid draws proportional to weight: P({a,a}) = p_a^2, P({a,b}) = 2 p_a p_b."""
    A, info = star_graph(W_REP, weighted=True)
    T, k = 30000, 2
    gs.manual_seed(4000)
    sub = A.to(device)[:, frontier(range(len(W_REP)), T, device)]
    s = sub.individual_sample(k, probs=sub.values, replace=True)
    groups = per_column(s, info)
    assert all(len(g) == k for g in groups)
    for c, w in enumerate(W_REP):
        obs = outcomes(groups[c :: len(W_REP)])
        law = iid_draws(w, k)
        if len(law) == 1:
            assert set(obs) == set(law), f"column {w}: only its positive edge can be drawn"
            continue
        check_law(f"weighted/replace multiset w={w} k={k}", obs, law, device)
        pooled = np.bincount(np.concatenate(groups[c :: len(W_REP)]), minlength=len(w))
        pos = np.array(w) > 0
        assert (pooled[~pos] == 0).all(), "zero-weight edges are never drawn"
        exp = np.array(w, dtype=float)[pos] / sum(w) * pooled.sum()
        check(
            f"weighted/replace per-edge counts w={w}", st.chisquare(pooled[pos], exp).pvalue, device
        )
        rejects(
            f"weighted/replace w={w} vs uniform-over-positive",
            gof_p(obs, iid_draws([float(x > 0) for x in w], k)),
            device,
        )


def test_weighted_with_replacement_ignores_other_columns_weights(device):
    """A column's law must not depend on the weights of the columns before it in the frontier.

    Column 1 (weights 1e-3..4e-3) sits after column 0 (a single edge of weight 1e12). The
    inverse-CDF search must resolve column 1's weights whatever came before it: a search in
    one running sum over the whole frontier only resolves ulp(1e12) = 1.2e-4, which moves
    the lightest edge's probability from 0.1 to about 0.092.
    """
    cols = [[1e12], [1e-3, 2e-3, 3e-3, 4e-3]]
    A, info = star_graph(cols, weighted=True)
    T = 50000
    gs.manual_seed(4100)
    sub = A.to(device)[:, torch.tensor([0] + [1] * T, device=device)]
    s = sub.individual_sample(1, probs=sub.values, replace=True)
    groups = per_column(s, info)
    counts = np.bincount(np.concatenate(groups[1:]), minlength=4)
    w = np.array(cols[1])
    check(
        "weighted/replace column after a 1e12-weight column",
        st.chisquare(counts, w / w.sum() * T).pvalue,
        device,
    )


@pytest.mark.parametrize("replace", [False, True])
def test_weighted_small_column_after_huge_column_is_accepted(device, replace):
    """Positive weights of 1..4 in one column are not 'all zero' because an earlier column of
    the frontier has a weight of 1e17 (column totals must not be differences of a global
    running sum); the column is sampled among its own edges."""
    cols = [[1e17], [1.0, 2.0, 3.0, 4.0]]
    A, info = star_graph(cols, weighted=True)
    gs.manual_seed(4200)
    sub = A.to(device)[:, torch.tensor([0, 1], device=device)]
    s = sub.individual_sample(2, probs=sub.values, replace=replace)
    groups = per_column(s, info)
    assert len(groups[1]) == 2 and set(groups[1].tolist()) <= {0, 1, 2, 3}


# ============================================================================= 5. probs as a Matrix
@pytest.mark.parametrize("replace", [False, True])
def test_probs_matrix_equals_probs_tensor(device, replace):
    """``probs=sub ** 2`` (a Matrix) and ``probs=sub.values ** 2`` (an (E,) tensor) give
    identical samples under one seed, and follow the law of the squared weights."""
    cols = [[1, 2, 3, 4, 0, 5], [3, 1, 2]]
    A, info = star_graph(cols, weighted=True)
    T, k = 20000, 2
    sub = A.to(device)[:, frontier(range(len(cols)), T, device)]
    pm, pt = sub**2, sub.values**2
    gs.manual_seed(5000)
    s1 = sub.individual_sample(k, probs=pm, replace=replace)
    gs.manual_seed(5000)
    s2 = sub.individual_sample(k, probs=pt, replace=replace)
    for a, b in zip(s1.edges(), s2.edges()):
        assert torch.equal(a, b), "a probs Matrix and the same values as a tensor must agree"
    assert torch.equal(s1.csc.indptr, s2.csc.indptr)
    groups = per_column(s1, info)
    mode = "replace" if replace else "noreplace"
    for c, w in enumerate(cols):
        w2 = [x * x for x in w]
        law = iid_draws(w2, k) if replace else sequential_subsets(w2, k)
        check_law(f"probs=sub**2 {mode} w={w}", outcomes(groups[c :: len(cols)]), law, device)
        wrong = iid_draws(w, k) if replace else sequential_subsets(w, k)
        rejects(
            f"probs=sub**2 {mode} w={w} vs law of unsquared weights",
            gof_p(outcomes(groups[c :: len(cols)]), wrong),
            device,
        )


# ============================================================================= 6-8. collective
# Frontier = nodes 0 and 1. In-edges: 2->0, 3->0, 6->0, 3->1, 4->1, 6->1, 7->1. Node 5 and node
# 0 have out-edges only to node 8 (outside the frontier): rows 0, 1, 5, 8 of A[:, [0, 1]] are
# empty and must never be chosen.
COL_EDGES = [(2, 0), (3, 0), (6, 0), (3, 1), (4, 1), (6, 1), (7, 1), (5, 8), (0, 8)]
COL_N = 9
COL_ROWS = [2, 3, 4, 6, 7]  # rows with edges in the sub-matrix
COL_ROW_DEG = {2: 1, 3: 2, 4: 1, 6: 2, 7: 1}
# node_probs over the row space (all 9 nodes): positive on empty rows 0, 5 and 8 (must be
# ignored) and zero on row 6, which has edges (never chosen).
COL_P = [5.0, 0.0, 1.0, 2.0, 3.0, 7.0, 0.0, 4.0, 9.0]


def _collective_trials(device, k, trials, seed, node_probs=None, replace=False):
    """Chosen rows (sorted tuples of global ids) of ``trials`` successive collective calls."""
    A = gs.Matrix.from_edge_index(torch.tensor(COL_EDGES).T, num_nodes=COL_N).to(device)
    sub = A[:, torch.tensor([0, 1], device=device)]
    p = None if node_probs is None else torch.tensor(node_probs, dtype=torch.float64, device=device)
    gs.manual_seed(seed)
    out = []
    for t in range(trials):
        s = sub.collective_sample(k, node_probs=p, replace=replace)
        chosen = tuple(s.row_ids.cpu().tolist())
        assert list(chosen) == sorted(set(chosen)), "chosen rows are unique, in row-space order"
        assert s.num_edges == sum(COL_ROW_DEG.get(r, 0) for r in chosen), (
            "every edge of a chosen row is kept"
        )
        if t < 20:
            assert tuple(s.row().cpu().tolist()) == chosen, "only rows with edges are chosen"
        out.append(chosen)
    return out


def _law_over_rows(law_idx: dict, rows) -> dict:
    return {tuple(rows[i] for i in key): p for key, p in law_idx.items()}


@pytest.mark.parametrize("k", [2, 3])
def test_collective_uniform_without_replacement(device, k):
    """Uniform over the k-subsets of the 5 rows that have edges."""
    obs = _collective_trials(device, k, 2000, 6000 + k)
    law = _law_over_rows(uniform_subsets(len(COL_ROWS), k), COL_ROWS)
    check_law(f"collective uniform/noreplace k={k}", obs, law, device)
    rejects(
        f"collective uniform/noreplace k={k} vs first-k rows",
        gof_p([tuple(COL_ROWS[:k])] * len(obs), law),
        device,
    )
    # fewer candidate rows than k: all of them
    assert _collective_trials(device, 7, 3, 6100) == [tuple(COL_ROWS)] * 3


@pytest.mark.parametrize("k", [2, 3])
def test_collective_weighted_without_replacement(device, k):
    """Sequential draws proportional to node_probs among rows with edges and positive
    probability (rows 2, 3, 4, 7 with 1, 2, 3, 4); row 6 (zero) and empty rows never."""
    obs = _collective_trials(device, k, 3000, 7000 + k, node_probs=COL_P)
    rows = [2, 3, 4, 7]
    w = [COL_P[r] for r in rows]
    law = _law_over_rows(sequential_subsets(w, k), rows)
    check_law(f"collective weighted/noreplace k={k}", obs, law, device)
    rejects(
        f"collective weighted/noreplace k={k} vs uniform",
        gof_p(obs, _law_over_rows(uniform_subsets(len(rows), k), rows)),
        device,
    )
    if k == 2:
        # against "inclusion probability proportional to node_probs" (pi = 2 p / W): row 7
        # would be in 80% of samples; the sequential law gives 0.6889.
        inc = sum(7 in o for o in obs)
        rejects(
            "collective weighted/noreplace vs inclusion-proportional-to-probs",
            st.binomtest(inc, len(obs), 2 * 4 / 10).pvalue,
            device,
        )


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("k", [2, 3])
def test_collective_with_replacement(device, weighted, k):
    """k iid draws (uniform over rows with edges, or proportional to node_probs); each drawn
    row is kept once: for k = 2, P({a}) = p_a^2 and P({a, b}) = 2 p_a p_b."""
    trials = 3000 if k == 2 else (6000 if weighted else 4000)  # smallest cell: p = 1e-3
    obs = _collective_trials(
        device,
        k,
        trials,
        8000 + 10 * k + weighted,
        node_probs=COL_P if weighted else None,
        replace=True,
    )
    rows = [2, 3, 4, 7] if weighted else COL_ROWS
    w = [COL_P[r] for r in rows] if weighted else [1.0] * len(rows)
    law = _law_over_rows(iid_draws(w, k, as_set=True), rows)
    name = f"collective {'weighted' if weighted else 'uniform'}/replace k={k}"
    check_law(name, obs, law, device)
    # power: a sampler drawing without replacement never keeps fewer than k rows (here:
    # probability < 1e-6 per trial), and a uniform one has other set frequencies
    short = sum(len(o) < k for o in obs)
    rejects(
        f"{name} vs without-replacement sampler ({short} trials kept < k rows)",
        st.binomtest(short, len(obs), 1e-6).pvalue,
        device,
    )
    if weighted:
        rejects(
            f"{name} vs uniform draws",
            gof_p(obs, _law_over_rows(iid_draws([1.0] * len(rows), k, as_set=True), rows)),
            device,
        )


# ============================================================================= 9. a large column
def test_large_column_uniform_without_replacement(device):
    """k = 100 of a column of 10,000 edges, 400 independent columns: per-edge and binned
    inclusion counts are uniform, and the first k offsets (the reservoir's initial slots)
    are not favoured."""
    n, k, T = 10_000, 100, 400
    A, info = star_graph([n])
    gs.manual_seed(9000)
    s = A.to(device)[:, torch.zeros(T, dtype=torch.int64, device=device)].individual_sample(k)
    groups = per_column(s, info)
    assert all(len(g) == k and len(set(g.tolist())) == k for g in groups)
    offs = np.stack(groups)  # (T, k)

    def stats(offs, tag, assert_fn):
        per_edge = np.bincount(offs.ravel(), minlength=n)
        assert_fn(
            f"large column per-edge inclusion{tag}",
            hypergeom_chisq_p(per_edge, np.ones(n), n, k, T),
            device,
        )
        binned = per_edge.reshape(100, 100).sum(1)
        assert_fn(
            f"large column inclusion in 100 offset bins{tag}",
            hypergeom_chisq_p(binned, np.full(100, 100), n, k, T),
            device,
        )
        first = (offs < k).sum(1)  # per trial ~ Hypergeom(n, k, k)
        assert_fn(
            f"large column picks among first k offsets, binomial{tag}",
            st.binomtest(int(first.sum()), T * k, k / n).pvalue,
            device,
        )
        pmf = st.hypergeom(n, k, k).pmf(np.arange(3))
        exp = np.append(pmf, 1 - pmf.sum()) * T
        obs = np.array(
            [(first == 0).sum(), (first == 1).sum(), (first == 2).sum(), (first >= 3).sum()]
        )
        assert_fn(
            f"large column per-trial count in first k offsets, hypergeometric{tag}",
            st.chisquare(obs, exp).pvalue,
            device,
        )

    stats(offs, "", check)
    # power: the same checks reject a reservoir whose slots keep the *first* offset that
    # hits them instead of the last (a plausible bug), and a first-k sampler.
    rng = np.random.default_rng(9)
    bad = np.tile(np.arange(k), (T, 1))
    i = np.arange(k, n)
    j = rng.integers(0, i + 1, size=(T, n - k))
    t_idx, i_idx = np.nonzero(j < k)
    slot = t_idx * k + j[t_idx, i_idx]
    first_hit = np.full(T * k, n)
    np.minimum.at(first_hit, slot, i[i_idx])
    bad = np.where(first_hit < n, first_hit, bad.ravel()).reshape(T, k)
    per_edge = np.bincount(bad.ravel(), minlength=n)
    rejects(
        "large column binned inclusion vs first-writer-wins reservoir",
        hypergeom_chisq_p(per_edge.reshape(100, 100).sum(1), np.full(100, 100), n, k, T),
        device,
    )
    rejects(
        "large column first-k binomial vs first-k sampler",
        st.binomtest(T * k, T * k, k / n).pvalue,
        device,
    )


def test_large_column_weighted_with_replacement(device):
    """k = 100 draws with replacement from 10,000 edges of weights 1, 2, 4, 8 (by offset mod
    4), 200 columns: counts in 40 cells (weight class x block of 1,000 offsets) match
    ``draws * block_weight / W``."""
    n, k, T = 10_000, 100, 200
    w = np.array([1.0, 2.0, 4.0, 8.0])[np.arange(n) % 4]
    A, info = star_graph([w.tolist()], weighted=True)
    gs.manual_seed(9100)
    sub = A.to(device)[:, torch.zeros(T, dtype=torch.int64, device=device)]
    s = sub.individual_sample(k, probs=sub.values, replace=True)
    groups = per_column(s, info)
    assert all(len(g) == k for g in groups)
    offs = np.concatenate(groups)
    cell = (offs // 1000) * 4 + offs % 4
    obs = np.bincount(cell, minlength=40)
    cw = np.bincount((np.arange(n) // 1000) * 4 + np.arange(n) % 4, weights=w, minlength=40)
    check(
        "large column weighted/replace 40 cells",
        st.chisquare(obs, cw / w.sum() * T * k).pvalue,
        device,
    )
    rejects(
        "large column weighted/replace vs uniform",
        st.chisquare(obs, np.full(40, T * k / 40)).pvalue,
        device,
    )


# ========================================================================== 10. zero-degree columns
ZD_COLS = [[], [1, 2, 3], [], [0, 1, 0, 2, 3, 0, 1], [1.0] * 12, [0, 0, 5]]
#  node:    0      1       2              3                4            5


@pytest.mark.parametrize("mode", ["uniform", "uniform-replace", "weighted", "weighted-replace"])
def test_zero_degree_columns(device, mode):
    """Empty columns in the frontier return no edges; other columns return min(k, deg)
    (without replacement; positive-weight edges for weighted) or k (with); appending empty
    columns does not change the earlier columns' samples; and a column interleaved with
    empty ones still follows its law."""
    A, info = star_graph(ZD_COLS, weighted=True)
    A = A.to(device)
    k = 4
    fr = [0, 1, 2, 3, 0, 4, 5, 2, 0]
    replace = mode.endswith("replace")
    weighted = mode.startswith("weighted")

    def sample(nodes, seed):
        sub = A[:, torch.tensor(nodes, device=device)]
        gs.manual_seed(seed)
        return sub.individual_sample(k, probs=sub.values if weighted else None, replace=replace)

    groups = per_column(sample(fr, 10_000), info)
    for pos, node in enumerate(fr):
        w = ZD_COLS[node]
        deg = sum(x > 0 for x in w) if weighted else len(w)
        want = 0 if deg == 0 else (k if replace else min(k, deg))
        assert len(groups[pos]) == want, f"column {pos} (node {node}, {mode})"
        if weighted:
            assert all(w[o] > 0 for o in groups[pos])
    # appending empty columns keeps every earlier column's sample bit for bit
    s1, s2 = sample(fr, 10_001), sample(fr + [0, 2, 0], 10_001)
    for a, b in zip(s1.edges(), s2.edges()):
        assert torch.equal(a, b)
    assert torch.equal(s2.csc.indptr[: len(fr) + 1], s1.csc.indptr)
    # statistics of node 1 (weights 1, 2, 3) between empty columns, k = 2
    T = 12000
    sub = A[:, frontier([0, 1, 2], T, device)]
    gs.manual_seed(10_002)
    s = sub.individual_sample(2, probs=sub.values if weighted else None, replace=replace)
    groups = per_column(s, info)
    assert all(len(g) == 0 for g in groups[0::3] + groups[2::3])
    w = ZD_COLS[1] if weighted else [1.0, 1.0, 1.0]
    law = iid_draws(w, 2) if replace else sequential_subsets(w, 2)
    check_law(
        f"zero-degree neighbours: {mode} column between empty columns",
        outcomes(groups[1::3]),
        law,
        device,
    )


# ==================================================================== 11. independence, determinism
def _contingency_p(a: list, b: list) -> float:
    cats = sorted(set(a) | set(b))
    idx = {c: i for i, c in enumerate(cats)}
    table = np.zeros((len(cats), len(cats)))
    np.add.at(table, ([idx[x] for x in a], [idx[y] for y in b]), 1)
    return float(st.chi2_contingency(table).pvalue)


@pytest.mark.parametrize("mode", ["uniform", "weighted-replace"])
def test_repeated_columns_and_successive_calls_are_independent(device, mode):
    """Outcomes at adjacent column positions, and at one position in two successive calls,
    are independent (chi-square contingency test) and coincide only as often as chance
    allows (binomial test)."""
    w = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    A, info = star_graph([w], weighted=True)
    A = A.to(device)
    T = 30000
    k = 2 if mode == "uniform" else 1
    sub = A[:, torch.zeros(T, dtype=torch.int64, device=device)]
    probs = None if mode == "uniform" else sub.values
    law = uniform_subsets(6, 2) if mode == "uniform" else iid_draws(w, 1)
    coincide = sum(p * p for p in law.values())
    gs.manual_seed(11_000)
    o1 = outcomes(
        per_column(sub.individual_sample(k, probs=probs, replace=probs is not None), info)
    )
    o2 = outcomes(
        per_column(sub.individual_sample(k, probs=probs, replace=probs is not None), info)
    )
    even, odd = o1[0::2], o1[1::2]
    check(
        f"{mode}: adjacent positions independent (contingency)", _contingency_p(even, odd), device
    )
    same = sum(a == b for a, b in zip(even, odd))
    check(
        f"{mode}: adjacent positions coincide at chance rate (binomial)",
        st.binomtest(same, len(even), coincide).pvalue,
        device,
    )
    check(f"{mode}: successive calls independent (contingency)", _contingency_p(o1, o2), device)
    same = sum(a == b for a, b in zip(o1, o2))
    check(
        f"{mode}: successive calls coincide at chance rate (binomial)",
        st.binomtest(same, T, coincide).pvalue,
        device,
    )
    # power: a sampler keyed by node id instead of column position gives identical columns
    rejects(
        f"{mode}: coincidence test vs position-blind sampler",
        st.binomtest(len(even), len(even), coincide).pvalue,
        device,
    )


def test_same_seed_same_samples(device):
    """The same seed gives identical samples (every sampler, including collective ones and a
    mini-batch scope); a different seed or mini-batch index gives different ones."""
    A, _info = star_graph([[1, 2, 3, 4, 5, 6, 7, 8], [2, 0, 1], [1.0] * 30], weighted=True)
    A = A.to(device)
    fr = frontier([0, 1, 2], 200, device)

    def run(seed):
        gs.manual_seed(seed)
        sub = A[:, fr]
        outs = [
            sub.individual_sample(3),
            sub.individual_sample(3, replace=True),
            sub.individual_sample(3, probs=sub.values),
            sub.individual_sample(3, probs=sub.values, replace=True),
            sub.collective_sample(5),
            sub.collective_sample(5, node_probs=(sub**2).sum(axis=1)),
            sub.collective_sample(5, replace=True),
        ]
        return [tuple(t.cpu() for t in o.edges()) for o in outs]

    def equal(r1, r2):
        return [all(torch.equal(a, b) for a, b in zip(x, y)) for x, y in zip(r1, r2)]

    a, b, c = run(12_000), run(12_000), run(12_001)
    assert all(equal(a, b)), "same seed, same samples"
    assert not any(equal(a, c)), "a different seed must change every sampler's output"

    sub = A[:, fr]
    with batch_scope(12_000, 0):
        b0 = sub.individual_sample(3).edges()
    with batch_scope(12_000, 0):
        b0_again = sub.individual_sample(3).edges()
    with batch_scope(12_000, 1):
        b1 = sub.individual_sample(3).edges()
    assert all(torch.equal(x, y) for x, y in zip(b0, b0_again))
    assert not torch.equal(b0[2], b1[2]), "the mini-batch index is part of the key"
