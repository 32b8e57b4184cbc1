"""``kernels/shuffle.cu``: an epoch's shuffle keys in one launch, against the torch code
(:func:`gsample.base.random.shuffle_keys`, the reference), and ``gs.DataLoader`` shuffling
with them on the GPU as on the CPU (skipped without a GPU)."""

import pytest
import torch

import gsample as gs
import gsample.backend as backend
from gsample.backend import hook
from gsample.base.random import MASK64, shuffle_keys
from gsample.interop.pyg.neighbor_loader import epoch_order

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
]

SEEDS = [0, 1, (1 << 63) - 1, 1 << 63, MASK64, 0x9E3779B97F4A7C15]


def counted_hook(monkeypatch) -> list:
    """The arguments of every call of the ``shuffle_keys`` hook from now on (the hook
    still runs)."""
    calls = []
    kernel = hook("shuffle_keys")

    def counted(*args):
        calls.append(args)
        return kernel(*args)

    monkeypatch.setitem(backend._HOOKED, "shuffle_keys", counted)
    return calls


@pytest.mark.parametrize("n", [0, 1, 1000, 2**20 + 3])
@pytest.mark.parametrize("epoch_seed", SEEDS, ids=hex)
def test_the_kernel_s_keys_are_the_torch_keys(epoch_seed, n):
    got = hook("shuffle_keys")(epoch_seed, n, torch.device("cuda"))
    assert got.is_cuda and got.dtype == torch.int64 and got.shape == (n,)
    assert torch.equal(got, shuffle_keys(epoch_seed, n, "cuda"))  # the torch ops on the GPU
    assert torch.equal(got.cpu(), shuffle_keys(epoch_seed, n))  # and on the CPU


def test_the_loader_shuffles_with_the_kernel_as_on_the_cpu(small_graph, monkeypatch):
    """A loader on the CUDA backend makes its keys with the hook (one call an epoch) and
    yields the seeds in the CPU loader's order, epoch after epoch; on the torch backend it
    runs the torch code on the GPU (no call), in the same order."""
    calls = counted_hook(monkeypatch)

    def ids(A, seeds):
        return A[:, seeds].individual_sample(2).edges()[2]

    seeds = torch.arange(0, 2000, 3)
    cpu = gs.DataLoader(small_graph, ids, seeds, batch_size=64, seed=5)
    A = small_graph.to("cuda")
    with gs.use_backend("cuda"):
        gpu = gs.DataLoader(A, ids, seeds.cuda(), batch_size=64, seed=5)
        for _ in range(2):
            got = torch.cat([b.seeds for b in gpu]).cpu()
            assert torch.equal(got, torch.cat([b.seeds for b in cpu]))
    assert len(calls) == 2
    with gs.use_backend("torch"):
        ref = gs.DataLoader(A, ids, seeds.cuda(), batch_size=64, seed=5)
        first = torch.cat([b.seeds for b in ref]).cpu()
    assert len(calls) == 2
    again = gs.DataLoader(small_graph, ids, seeds, batch_size=64, seed=5)
    assert torch.equal(first, torch.cat([b.seeds for b in again]))


def test_pyg_s_epoch_order_uses_the_kernel_on_the_cuda_backend(monkeypatch):
    """PyG's loaders sort their inputs on the graph's GPU by the same keys
    (``epoch_keys``): the hook on the CUDA backend, the torch code on the torch backend, one
    order (the CPU's)."""
    calls = counted_hook(monkeypatch)
    want = epoch_order(5000, True, 7)
    with gs.use_backend("cuda"):
        assert torch.equal(epoch_order(5000, True, 7, None, torch.device("cuda")), want)
    assert len(calls) == 1
    with gs.use_backend("torch"):
        assert torch.equal(epoch_order(5000, True, 7, None, torch.device("cuda")), want)
    assert len(calls) == 1
