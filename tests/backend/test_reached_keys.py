"""The native CPU key lookups (``gsample/backend/torch/reached_native.py``) against the torch
code, bit for bit: positions of keys among distinct keys (``interop.pyg.data._local``), new keys
(``interop.pyg.data.new_keys``) with repeats, negative and huge keys, the torch code's ``-1``
sentinel and empty inputs; what they leave to the torch code (repeated or absent keys, the
table's empty marker, int32); the switches; a disjoint and a temporal PyG loader, native
against torch."""

import pytest
import torch

import gsample as gs
from gsample.backend.torch import reached_native
from gsample.interop.pyg import data as layout

pytestmark = pytest.mark.skipif(
    not reached_native.available(), reason="no native CPU key lookups (no C++ compiler)"
)

EMPTY = -(2**63)


def torch_code(fn, *args):
    saved, reached_native.ENABLED = reached_native.ENABLED, False
    try:
        return fn(*args)
    finally:
        reached_native.ENABLED = saved


def keys(seed, n, low=0, high=10**6, distinct=False):
    g = torch.Generator().manual_seed(seed)
    if distinct:  # unique draws, in a random order
        u = torch.unique(torch.randint(low, high, (2 * n,), generator=g))
        return u[torch.randperm(u.numel(), generator=g)][:n]
    return torch.randint(low, high, (n,), generator=g)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    "low, high", [(0, 50), (0, 10**6), (-(10**12), 10**12), (2**62, 2**62 + 10**5)]
)
def test_positions_are_the_sort_and_search(seed, low, high):
    space = keys(seed, min(40, high - low) if high - low < 100 else 3000, low, high, True)
    ids = space[keys(seed + 9, 5000, 0, space.numel())]
    got = reached_native.positions(space, ids)
    assert got is not None and torch.equal(got, torch_code(layout._local, space, ids))
    assert torch.equal(space[got], ids)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("K, S, high", [(5000, 3000, 2000), (500, 0, 10**9), (0, 40, 100)])
def test_new_keys_are_the_torch_code_s(seed, K, S, high):
    k, s = keys(seed, K, 0, high), keys(seed + 50, S, 0, high)
    got = reached_native.new_keys(k, s)
    want = torch_code(layout.new_keys, k, s)
    assert got is not None and torch.equal(got, want)
    if K and S:
        assert 0 < got.numel() < K  # repeats and seen keys left out


def test_new_keys_keep_the_torch_code_s_sentinel_out():
    """The torch code's table holds -1 (a sentinel): -1 is never a new key there, nor here."""
    k, s = torch.tensor([-1, 4, -1, -7, 4]), torch.tensor([9])
    got = reached_native.new_keys(k, s)
    assert torch.equal(got, torch_code(layout.new_keys, k, s))
    assert got.tolist() == [-7, 4]


def test_what_it_leaves_to_the_torch_code():
    space = torch.tensor([5, 9, 2])
    assert reached_native.positions(torch.tensor([5, 9, 5]), torch.tensor([9])) is None  # repeat
    assert reached_native.positions(space, torch.tensor([9, 4])) is None  # absent
    assert reached_native.positions(torch.tensor([EMPTY, 1]), torch.tensor([1])) is None
    assert reached_native.positions(space, torch.tensor([EMPTY])) is None
    assert reached_native.positions(space.to(torch.int32), torch.tensor([9])) is None
    assert reached_native.new_keys(torch.tensor([3, EMPTY]), space) is None
    assert reached_native.new_keys(torch.tensor([3]), torch.tensor([EMPTY])) is None
    # the callers then run the torch code: its own answers
    ids = torch.tensor([9, 5])
    assert torch.equal(layout._local(torch.tensor([5, 9, 5]), ids), torch.tensor([1, 0]))


def test_switches_turn_it_off(monkeypatch):
    space, ids = torch.tensor([5, 9]), torch.tensor([9])
    assert reached_native.positions(space, ids) is not None
    monkeypatch.setenv("GSAMPLE_NATIVE_CPU", "0")
    assert reached_native.positions(space, ids) is None
    assert reached_native.new_keys(ids, space) is None
    monkeypatch.delenv("GSAMPLE_NATIVE_CPU")
    monkeypatch.setattr(reached_native, "ENABLED", False)
    assert reached_native.positions(space, ids) is None


def _epoch(make):
    torch.manual_seed(0)
    gs.manual_seed(0)
    return [
        (b.n_id, b.edge_index, b.get("batch"), b.get("edge_label_index"), b.get("e_id"))
        for b in make()
    ]


def _same_epochs(make, calls):
    got = _epoch(make)
    assert calls, "the native lookups ran"
    want = torch_code(_epoch, make)
    assert len(got) == len(want) > 1
    for a, b in zip(got, want, strict=True):
        for x, y in zip(a, b, strict=True):
            assert (x is None and y is None) or torch.equal(x, y)


def _count_calls(monkeypatch) -> list:
    calls, real = [], reached_native.positions

    def spy(*args):
        out = real(*args)
        if out is not None:
            calls.append(1)
        return out

    monkeypatch.setattr(reached_native, "positions", spy)
    return calls


def test_a_disjoint_loader_equals_its_torch_code(monkeypatch):
    from torch_geometric.data import Data

    import gsample.pyg

    A = gs.datasets.rmat(2000, 20000, seed=5)
    src, dst, _ = A.edges()
    data = Data(edge_index=torch.stack([src, dst]), num_nodes=A.num_nodes)
    calls = _count_calls(monkeypatch)
    _same_epochs(
        lambda: gsample.pyg.NeighborLoader(
            data, [5, 3], input_nodes=torch.arange(0, 2000, 5), batch_size=64, disjoint=True
        ),
        calls,
    )


def test_a_temporal_link_loader_equals_its_torch_code(monkeypatch):
    from torch_geometric.data import Data

    import gsample.pyg

    g = torch.Generator().manual_seed(1)
    n, m = 500, 6000
    ei = torch.randint(0, n, (2, m), generator=g)
    t = torch.sort(torch.randint(0, 10**6, (m,), generator=g)).values
    data = Data(edge_index=ei, edge_time=t, num_nodes=n)
    pick = torch.randperm(m, generator=g)[:512]
    calls = _count_calls(monkeypatch)
    _same_epochs(
        lambda: gsample.pyg.LinkNeighborLoader(
            data,
            num_neighbors=[5, 3],
            edge_label_index=ei[:, pick],
            edge_label_time=t[pick] - 1,
            time_attr="edge_time",
            neg_sampling="binary",
            batch_size=128,
            shuffle=True,
        ),
        calls,
    )
