"""``kernels/gather.cu``: feature rows read from pinned host memory by the GPU, with and
without a device cache, against ``table[ids]``; ids outside the table are guarded by the
kernel and raise (skipped without a GPU)."""

import pytest
import torch

from gsample.backend.cuda.gather import gather_rows
from gsample.base import validate as V

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
]

ROWS = 5000


@pytest.fixture(scope="module")
def table():
    return torch.randn(ROWS, 37, generator=torch.Generator().manual_seed(2)).pin_memory()


def _cache(table):
    """Every third row cached on the device: ``(cache, slot)``."""
    cached = torch.arange(0, ROWS, 3)
    slot = torch.full((ROWS,), -1, dtype=torch.int64)
    slot[cached] = torch.arange(cached.numel())
    return table[cached].cuda(), slot.cuda()


@pytest.mark.parametrize("cached", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
def test_rows_equal_the_table(table, cached, dtype):
    t = table.to(dtype).pin_memory()
    ids = torch.randint(0, ROWS, (3000,), generator=torch.Generator().manual_seed(1))
    out = torch.empty((ids.numel(), t.shape[1]), dtype=dtype, device="cuda")
    cache, slot = _cache(t) if cached else (None, None)
    hits = torch.zeros(1, dtype=torch.int64, device="cuda")
    gather_rows(t, ids.cuda(), out, cache, slot, hits)
    assert torch.equal(out.cpu(), t[ids])
    assert int(hits) == (int((ids % 3 == 0).sum()) if cached else 0)


@pytest.mark.parametrize("bad", [ROWS, -1, -(2**40), 2**31, 2**32 + 1, 2**40, 2**62, 2**63 - 1])
@pytest.mark.parametrize("cached", [False, True])
def test_ids_outside_the_table_raise_and_the_next_call_is_exact(table, bad, cached):
    """The kernel reads row 0 for a bad id (no read leaves the table or the slot map) and
    flags it: an IndexError naming ``n_id`` (at once, or when deferred flags are read); the
    other rows are right, and the next call equals ``table[ids]``."""
    ids = torch.randint(0, ROWS, (512,), generator=torch.Generator().manual_seed(3))
    bad_ids = ids.clone()
    bad_ids[100] = bad
    out = torch.empty((512, table.shape[1]), device="cuda")
    cache, slot = _cache(table) if cached else (None, None)
    with pytest.raises(IndexError, match="n_id: a row id is out of range"):
        gather_rows(table, bad_ids.cuda(), out, cache, slot)
    with V.deferred():
        gather_rows(table, bad_ids.cuda(), out, cache, slot)
        keep = torch.arange(512) != 100
        assert torch.equal(out.cpu()[keep], table[ids][keep])
        with pytest.raises(IndexError, match="n_id"):
            V.read_back([])
    gather_rows(table, ids.cuda(), out, cache, slot)
    assert torch.equal(out.cpu(), table[ids])
