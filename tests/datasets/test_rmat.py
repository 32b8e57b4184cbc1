"""``gs.datasets.rmat``'s edges against R-MAT's definition written here edge by edge (the
quadrant of every level from its hashed uniform), their quadrant frequencies, and a pinned
checksum (the generator's output must not drift)."""

import pytest
import torch
from scipy import stats

import gsample as gs
from gsample.base.random import combine, hash_tensor, sort_key, uniform_float

RMAT = 0x524D4154  # the key prefix R-MAT draws with ("RMAT")


def reference_rmat(num_nodes, num_edges, seed, a, b, c):
    """``(src, dst, weight)`` by edge id: at level ``l`` edge ``e`` takes quadrant ``q`` = the
    number of ``a, a + b, a + b + c`` at or below ``u = uniform(hash(key, l, e))`` (``q >= 2``:
    the lower half, ``q`` odd: the right half); ids folded into ``[0, N)``, then relabelled
    by the nodes' hashed keys (sorted, ties by folded id)."""
    key = combine(combine(0, seed), RMAT)
    levels = max(1, (num_nodes - 1).bit_length())
    e = torch.arange(num_edges)
    s, d = torch.zeros_like(e), torch.zeros_like(e)
    for level in range(levels):
        u = uniform_float(hash_tensor(key, torch.full_like(e, level), e))
        q = (u >= a).long() + (u >= a + b).long() + (u >= a + b + c).long()
        s, d = 2 * s + q // 2, 2 * d + q % 2
    nodes = torch.arange(num_nodes)
    perm = torch.argsort(sort_key(hash_tensor(key, torch.full_like(nodes, -1), nodes)), stable=True)
    weight = 1 + 4 * uniform_float(hash_tensor(key, torch.full_like(e, -2), e))
    return perm[s % num_nodes], perm[d % num_nodes], weight.float()


def by_edge_id(A):
    src, dst, eid = A.edges()
    order = torch.argsort(eid)
    return src[order], dst[order], A.values[order]


@pytest.mark.parametrize(
    "args",
    [
        (1000, 20_000, 0, 0.57, 0.19, 0.19),  # folded: 1000 < 2**10
        (1024, 20_000, -7, 0.45, 0.25, 0.15),
        (1, 50, 3, 0.57, 0.19, 0.19),
        (3, 500, 2**70 + 1, 0.2, 0.3, 0.5),  # a + b + c = 1: no bottom-right quadrant
        (777, 5000, 1, 1.0, 0.0, 0.0),  # every edge 0 -> 0 before the permutation
        (777, 5000, 1, 0.0, 0.0, 0.0),
    ],
)
@pytest.mark.parametrize("chunk", [1 << 22, 999])
def test_rmat_draws_rmats_definition_edge_by_edge(args, chunk):
    n, m, seed, a, b, c = args
    A = gs.datasets.rmat(n, m, seed, a=a, b=b, c=c, weighted=True, chunk=chunk)
    want = reference_rmat(n, m, seed, a, b, c)
    assert A.num_nodes == n and A.num_edges == m
    for got, ref in zip(by_edge_id(A), want):
        assert torch.equal(got, ref)


def test_rmat_quadrants_have_their_probabilities():
    """The top level's quadrant of every edge (its folded ids' top bits, N = 2**10: no
    folding) is a draw of ``(a, b, c, d)``."""
    n, m, a, b, c = 1024, 100_000, 0.57, 0.19, 0.19
    src, dst, _ = by_edge_id(gs.datasets.rmat(n, m, seed=5))
    key = combine(combine(0, 5), RMAT)
    nodes = torch.arange(n)
    perm = torch.argsort(sort_key(hash_tensor(key, torch.full_like(nodes, -1), nodes)), stable=True)
    folded = torch.argsort(perm)  # node -> folded id
    q = 2 * (folded[src] >> 9) + (folded[dst] >> 9)
    counts = torch.bincount(q, minlength=4).numpy()
    p = stats.chisquare(counts, [m * x for x in (a, b, c, 1 - a - b - c)]).pvalue
    assert p > 1e-3, (counts, p)


def test_rmat_output_is_pinned():
    src, dst, _ = by_edge_id(gs.datasets.rmat(20_000, 200_000, seed=0, weighted=True))
    key = src * 20_000 + dst
    assert int(key.sum()) == 39_807_806_137_771
    assert int((key * torch.arange(200_000)).sum()) == 3_986_223_507_652_838_295
