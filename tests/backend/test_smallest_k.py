"""``select.smallest_k``: the selection collective sampling uses on the CPU picks exactly the
positions a stable argsort's first ``k`` lists (ties in position order)."""

from __future__ import annotations

import pytest
import torch

from gsample.backend.torch.select import smallest_k


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.int64])
def test_the_k_smallest_are_the_stable_argsort_s_first_k(dtype):
    g = torch.Generator().manual_seed(0)
    for n in (2, 3, 17, 1000):
        for span in (2, 5, n * 10):  # few distinct values: many ties at the k-th
            keys = torch.randint(0, span, (n,), generator=g).to(dtype)
            for k in {1, n // 2 or 1, n - 1}:
                mask = smallest_k(keys, k)
                expect = torch.zeros(n, dtype=torch.bool)
                expect[torch.argsort(keys, stable=True)[:k]] = True
                assert mask.dtype == torch.bool and int(mask.sum()) == k
                assert torch.equal(mask, expect), (n, span, k)


def test_collective_sampling_keeps_its_rows():
    """The rows LADIES keeps on the CPU are the ones the sort-based path keeps."""
    import gsample as gs
    from gsample.backend.torch import select

    A = gs.datasets.rmat(3000, 40000, seed=4)
    seeds = torch.arange(0, 3000, 7)
    sub = A[:, seeds]
    p = (sub**2).sum(axis=1)
    gs.manual_seed(3)
    got = sub.collective_sample(500, node_probs=p / p.sum())
    original = select.smallest_k
    try:  # the sort-based selection, as on a GPU
        select.smallest_k = lambda keys, k: torch.isin(
            torch.arange(keys.numel()), torch.argsort(keys, stable=True)[:k]
        )
        gs.manual_seed(3)
        ref = sub.collective_sample(500, node_probs=p / p.sum())
    finally:
        select.smallest_k = original
    assert torch.equal(got.row_ids, ref.row_ids) and got.row_ids.numel() == 500
    assert torch.equal(got.csc.eid_tensor(), ref.csc.eid_tensor())
