"""The law of the catalogue's LADIES (``examples/ladies.py``), whose probabilities are the
slice's squared row sums normalised by the sum of every squared edge of the slice
(``(sub ** 2).sum()``, an exact sum).

At fixed seeds, on a frontier of three columns and six candidate rows of known weights:
one row drawn per layer is row ``r`` with probability ``p_r = sum_c w_rc^2 / sum w^2``
(chi-square; a draw by ``sum_c w_rc`` and a uniform one are rejected), and two rows drawn
without replacement follow two sequential draws by ``p`` (not ``p_a p_b``). The draws are
made by a compiled sampler through ``gs.DataLoader``, super-batched (each mini-batch's own
key: independent draws), and the super-batched samples equal one mini-batch at a time.
"""

import itertools

import numpy as np
import scipy.stats as st
import torch
from helpers import assert_same, example

import gsample as gs

P_MIN = 1e-3
SEEDS = torch.tensor([0, 1, 2])
#: (row, column, weight): rows 3..8 reach the frontier with these weights
EDGES = [
    (3, 0, 0.2),
    (4, 0, 0.5),
    (4, 1, 0.3),
    (5, 1, 0.8),
    (6, 1, 0.4),
    (6, 2, 0.9),
    (7, 2, 2.2),
    (8, 0, 0.6),
    (8, 2, 0.7),
    (2, 5, 1.0),  # an edge outside the frontier's columns: never a candidate
]
ROWS = [3, 4, 5, 6, 7, 8]


def graph() -> gs.Matrix:
    r, c, w = zip(*EDGES)
    return gs.Matrix.from_edge_index(
        torch.tensor([r, c]), num_nodes=9, weight=torch.tensor(w, dtype=torch.float32)
    )


def law(power: int) -> np.ndarray:
    """Per candidate row, the sum of its frontier edges' weights to ``power``, normalised."""
    w = np.zeros(9)
    for r, c, x in EDGES:
        if c in SEEDS.tolist():
            w[r] += x**power
    w = w[ROWS]
    return w / w.sum()


def draws(k: int, batches: int, super_batch: int) -> list:
    """The rows each of ``batches`` mini-batches (the same frontier) draws in one layer."""
    lad = example("ladies")

    def one_layer(A, seeds):
        return lad.ladies(A, seeds, layers=(k,))

    loader = gs.DataLoader(
        graph(),
        gs.compile(one_layer),
        SEEDS.repeat(batches),
        len(SEEDS),
        shuffle=False,
        seed=11,
        super_batch=super_batch,
    )
    return [b.out[0] for b in loader]


def chi2(counts, probs) -> float:
    counts, probs = np.asarray(counts, float), np.asarray(probs, float)
    expected = counts.sum() * probs / probs.sum()
    return float(st.chi2.sf(((counts - expected) ** 2 / expected).sum(), len(probs) - 1))


def test_one_row_is_drawn_by_its_squared_weights():
    blocks = draws(1, 4000, 200)
    rows = torch.cat([b.row_ids for b in blocks]).tolist()
    assert len(rows) == 4000 and set(rows) <= set(ROWS)
    counts = [rows.count(r) for r in ROWS]
    p, by_weight, uniform = chi2(counts, law(2)), chi2(counts, law(1)), chi2(counts, [1] * 6)
    print(f"ladies, one row: p = {p:.4f}; by sum of weights {by_weight:.2e}, uniform {uniform:.2e}")
    assert p > P_MIN
    assert by_weight < P_MIN and uniform < P_MIN  # power: wrong laws are rejected
    # importance weights 1 / p(row), then each column with an edge sums to 1
    for b in blocks[:20]:
        sums = b.sum(axis=0)
        assert torch.allclose(sums[sums > 0], torch.ones(()))


def test_two_rows_follow_two_sequential_draws():
    blocks = draws(2, 4000, 200)
    pairs = [tuple(sorted(b.row_ids.tolist())) for b in blocks]
    assert all(len(set(x)) == 2 for x in pairs)
    combos = list(itertools.combinations(ROWS, 2))
    counts = [pairs.count(c) for c in combos]
    p = dict(zip(ROWS, law(2)))
    sequential = [p[a] * p[b] / (1 - p[a]) + p[b] * p[a] / (1 - p[b]) for a, b in combos]
    product = [p[a] * p[b] for a, b in combos]
    right, wrong = chi2(counts, sequential), chi2(counts, product)
    print(f"ladies, two rows: p = {right:.4f}; product law {wrong:.2e}")
    assert right > P_MIN
    assert wrong < P_MIN


def test_super_batched_draws_equal_one_by_one():
    one = draws(2, 40, 1)
    many = draws(2, 40, 8)
    for i, (a, b) in enumerate(zip(one, many)):
        assert_same(a, b, f"batch {i}")
