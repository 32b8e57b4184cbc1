"""``gs.datasets.planted_partition`` (communities a GNN can find) and ``gs.datasets.cora``."""

import pytest
import torch
from conftest import DATA
from scipy import stats

import gsample as gs


def test_planted_partition_structure():
    A, x, y = gs.datasets.planted_partition(3000, num_classes=6, num_features=10, seed=2)
    assert x.shape == (3000, 10) and x.dtype == torch.float32
    assert y.shape == (3000,) and y.dtype == torch.int64
    assert torch.equal(torch.bincount(y), torch.full((6,), 500))  # balanced
    r, c, _ = A.edges()
    assert not bool((r == c).any())  # no self-loops
    key = r * 3000 + c
    assert key.unique().numel() == key.numel()  # no repeats
    assert torch.equal(torch.sort(key).values, torch.sort(c * 3000 + r).values)  # symmetric
    again = gs.datasets.planted_partition(3000, num_classes=6, num_features=10, seed=2)
    assert torch.equal(again[0].edges()[2], A.edges()[2]) and torch.equal(again[1], x)
    other = gs.datasets.planted_partition(3000, num_classes=6, num_features=10, seed=3)
    assert not torch.equal(other[2], y)


def test_planted_partition_edge_ids_follow_source_then_destination():
    """Edge ids are positions in the (source, destination)-sorted edge list, as with
    ``torch.unique(edge_index, dim=1)`` (the generator's earlier, much slower dedup); the
    graph for this seed is pinned (the same before and after that change)."""
    A, _, _ = gs.datasets.planted_partition(3000, num_classes=6, num_features=10, seed=2)
    r, c, e = A.edges()
    key = (r * 3000 + c)[torch.argsort(e)]
    assert bool((key[1:] > key[:-1]).all())
    assert torch.equal(e.sort().values, torch.arange(A.num_edges))
    assert A.num_edges == 35816 and int(key.sum()) == 160414094547


def test_planted_partition_homophily_is_binomial():
    """An edge stays inside its class with probability h + (1 - h) / C (the in-class draw,
    or a uniform node that happens to share the class); few repeats at this density."""
    h, k = 0.6, 8
    A, _, y = gs.datasets.planted_partition(
        20_000, num_classes=k, avg_degree=4, homophily=h, seed=0
    )
    r, c, _ = A.edges()
    keep = r < c  # each edge once
    inside = int((y[r[keep]] == y[c[keep]]).sum())
    test = stats.binomtest(inside, int(keep.sum()), h + (1 - h) / k)
    assert test.pvalue > 1e-3, (inside, int(keep.sum()), test.pvalue)


def test_planted_partition_features_carry_the_classes_plus_noise():
    """Own features name the class for some nodes; the mean of the neighbours' for more."""
    A, x, y = gs.datasets.planted_partition(10_000, seed=1)
    centroids = torch.stack([x[y == c].mean(0) for c in range(8)])

    def accuracy(h):
        return float((torch.cdist(h, centroids).argmin(1) == y).float().mean())

    r, c, _ = A.edges()
    degree = torch.bincount(c, minlength=A.num_nodes).clamp(min=1)
    mean = torch.zeros_like(x).index_add_(0, c, x[r]) / degree[:, None]
    own = accuracy(x)
    assert 1 / 8 + 0.2 < own < 0.8
    assert accuracy(mean) > own + 0.1


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_classes": 0}, "num_classes: must be in"),
        ({"num_classes": 11}, "num_classes"),
        ({"homophily": 1.5}, "homophily: must be in"),
        ({"avg_degree": -1}, "avg_degree"),
        ({"noise": -0.1}, "noise: must be >= 0"),
        ({"num_nodes": -5}, "num_nodes"),
    ],
)
def test_planted_partition_checks_arguments(kwargs, message):
    args = {"num_nodes": 10} | kwargs
    with pytest.raises((ValueError, TypeError), match=message):
        gs.datasets.planted_partition(**args)


def test_cora():
    path = DATA / "cora.npz"
    if not path.exists():
        pytest.skip(f"{path} not present")
    A, x, y = gs.datasets.cora(path)
    assert A.num_nodes == x.shape[0] == y.shape[0] == 2708  # the data README's sizes
    assert x.shape[1] == 1433 and int(y.max()) + 1 == 7
    assert set(x.unique().tolist()) == {0.0, 1.0}
    r, c, _ = A.edges()
    assert torch.equal(torch.sort(r * 2708 + c).values, torch.sort(c * 2708 + r).values)
    assert not bool((r == c).any())
    with pytest.raises(FileNotFoundError, match="path: no such file"):
        gs.datasets.cora(path.parent / "missing.npz")
