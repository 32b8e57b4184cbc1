"""The exact radix select of ``kernels/topk.cu`` against ``torch.topk`` (skipped without a
GPU)."""

import pytest
import torch

from gsample.backend.cuda import topk

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
]

NONE = 2**63 - 1


def _smallest(keys, copies, n, k):
    """``topk.smallest_compact`` over a key per row (``NONE``: not a candidate) of ``copies``
    batches of ``n`` rows, compacted the way the collective sampler's kernels compact them."""
    rows = torch.nonzero(keys != NONE).view(-1)
    bounds = torch.searchsorted(rows, torch.arange(0, (copies + 1) * n, n, device=keys.device))
    return topk.smallest_compact(keys[rows], rows, bounds[:-1], bounds[1:], copies, k, copies * n)


def _keys(N, n, share, seed, uniform=True):
    g = torch.Generator().manual_seed(seed)
    if uniform:
        keys = torch.randint(0, 2**63 - 1, (N * n,), generator=g)
    else:  # float64 bits of exponential / p: few exponents, many ties
        e = -torch.log(torch.rand(N * n, generator=g, dtype=torch.float64))
        p = torch.rand(N * n, generator=g, dtype=torch.float64) ** 4 + 1e-9
        keys = (e / p).view(torch.int64)
    keys[torch.rand(N * n, generator=g) < share] = NONE
    return keys.cuda()


def _want(keys, N, n, k):
    """Per batch, the set of rows of its k smallest candidate keys (by torch)."""
    out = []
    for b in range(N):
        part = keys[b * n : (b + 1) * n]
        vals, at = torch.topk(part, k, largest=False)
        out.append(set((at[vals != NONE] + b * n).tolist()))
    return out


@pytest.mark.parametrize(
    "N, n, k, share",
    [
        (1, 100_000, 4000, 0.5),
        (1, 5000, 4000, 0.5),
        (3, 50_000, 300, 0.9),
        (4, 20_000, 1, 0.0),
        (2, 3000, 2999, 0.999),
    ],
)
@pytest.mark.parametrize("uniform", [True, False])
def test_smallest_equals_torch_topk(N, n, k, share, uniform):
    keys = _keys(N, n, share, seed=n + k, uniform=uniform)
    rows, overflow = _smallest(keys, N, n, k)
    assert rows.shape == (N, k) and not bool(overflow)
    want = _want(keys, N, n, k)
    for b in range(N):
        got = rows[b]
        real = got[got < N * n]
        assert set(real.tolist()) == want[b]
        assert real.numel() == len(want[b])  # no row twice; R past the candidates


def test_more_ties_than_the_buffer_are_reported():
    """Keys sharing their top 24 bits beyond the tie buffer set the overflow flag (the
    collective sampler then selects with torch.topk)."""
    n = 3 * topk.CAP
    keys = (torch.full((n,), 12345, dtype=torch.int64) << 31) + torch.arange(n)
    rows, overflow = _smallest(keys.cuda(), 1, n, 10)
    assert bool(overflow)
    few = keys.clone()
    few[topk.CAP // 2 :] += 1 << 39  # the ties now fit
    rows, overflow = _smallest(few.cuda(), 1, n, 10)
    assert not bool(overflow)
    assert sorted(rows[0].tolist()) == list(range(10))


def test_collective_sampling_falls_back_on_too_many_ties(monkeypatch):
    """The radix select draws torch.topk's sample; with no tie buffer every selection
    overflows (the k-th key always has its tie): the sampler selects again with torch.topk
    and draws the same sample."""
    import gsample as gs
    from gsample.backend.cuda import layerwise, topk
    from gsample.base.random import DeviceKey, key_prefix, signed

    A = gs.datasets.rmat(20_000, 200_000, seed=2).to("cuda").csc
    cols = torch.arange(0, 20_000, 7, device="cuda")
    prefix = key_prefix(3, 1)
    key = DeviceKey(torch.tensor([signed(prefix), 0], device="cuda"), prefix, 0)
    want = layerwise.slice_collective_sample(A, cols, 500, False, key, _select="torch")
    radix = layerwise.slice_collective_sample(A, cols, 500, False, key, _select="radix")
    monkeypatch.setattr(topk, "CAP", 0)
    fallen_back = layerwise.slice_collective_sample(A, cols, 500, False, key, _select="radix")
    for got in (radix, fallen_back):
        for f in ("indptr", "rows", "row_ids", "col_ids", "eids"):
            assert torch.equal(getattr(got, f), getattr(want, f)), f


def test_equal_keys_choose_the_smallest_rows_every_time():
    """Ties are ranked by (key, row) in the fill kernel: equal keys (a 64-bit collision)
    across the k-th place choose the lowest rows, the same on every call, whatever order
    the select kernel appended them in."""
    n, k = 700, 10
    keys = torch.full((2 * n,), 7 << 40, dtype=torch.int64)
    keys[n:] = 9 << 40  # batch 1: another key, all equal
    keys[n + 3] = 1 << 40  # ... but one smaller
    runs = [_smallest(keys.cuda(), 2, n, k) for _ in range(5)]
    for rows, overflow in runs:
        assert not bool(overflow)
        assert sorted(rows[0].tolist()) == list(range(k))
        # batch 1: row n + 3's smaller key, then the lowest rows of the equal ones
        assert sorted(rows[1].tolist()) == list(range(n, n + k))
