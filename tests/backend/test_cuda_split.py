"""``kernels/split.cu``: a super-batch matrix's bounds and its mini-batch matrices made by two
launches, against the torch ops of ``gsample.runtime.block_diagonal`` (the reference) and against
the mini-batch matrices the super-batch was joined from (skipped without a GPU)."""

import pytest
import torch
from helpers import random_batch

from gsample.backend.cuda import split as cuda_split
from gsample.formats.csc import CSC
from gsample.runtime import block_diagonal as blocks

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
]


def _fields(m):
    return [getattr(m, f) for f in ("indptr", "rows", "row_ids", "col_ids", "values", "eids")]


def _cuda(m):
    return CSC(
        num_nodes=m.num_nodes,
        **{
            f: None if t is None else t.cuda()
            for f, t in zip(("indptr", "rows", "row_ids", "col_ids", "values", "eids"), _fields(m))
        },
    )


@pytest.mark.parametrize("row_space", [False, True])
@pytest.mark.parametrize("empty", [(), (0,), (2, 3), (0, 1, 2, 3, 4, 5, 6)])
def test_split_is_the_torch_split_and_gives_back_the_joined_batches(row_space, empty):
    """Batches with no columns anywhere (the first, in a row, all of them; batch 5's columns
    have no edges): the kernels' bounds and parts equal the torch ops', field for field, and
    each part is the mini-batch matrix the super-batch was joined from."""
    g = torch.Generator().manual_seed(7 + len(empty) + 10 * row_space)
    n, copies = 50, 7
    parts = [
        random_batch(
            g,
            n,
            0 if b in empty else int(torch.randint(1, 9, (1,), generator=g)),
            0 if b == 5 else 4,
            row_space,
            values=b % 2 == 0,
            eids=True,
        )
        for b in range(copies)
    ]
    # (a joined matrix has values where any batch has: 1.0 for a batch without, as here)
    parts = [
        p if p.values is not None else CSC(**{**p.__dict__, "values": torch.ones(p.nnz)})
        for p in parts
    ]
    M = _cuda(blocks.join_matrices(parts, n))
    got_b = blocks.bounds(M, n, copies)
    assert cuda_split.applies(M)
    cpu = blocks.join_matrices(parts, n)
    want_b = blocks.bounds(cpu, n, copies)  # the torch ops (on the CPU)
    assert (got_b.cols, got_b.rows, got_b.edges) == (want_b.cols, want_b.rows, want_b.edges)
    assert torch.equal(got_b.device.cpu(), want_b.device)
    got = blocks.split_matrix(M, got_b, n, copies)
    want = blocks.split_matrix(cpu, want_b, n, copies)
    for b in range(copies):
        for x, y, z in zip(_fields(got[b]), _fields(want[b]), _fields(parts[b])):
            assert (x is None) == (y is None) == (z is None)
            if x is not None:
                assert x.is_cuda and x.dtype == y.dtype
                assert torch.equal(x.cpu(), y) and torch.equal(y, z)


def test_the_torch_ops_on_the_gpu_give_the_same_parts(monkeypatch):
    """The GPU's torch path (kernels off) and the kernels: the same bits."""
    g = torch.Generator().manual_seed(3)
    n, copies = 1000, 16
    parts = [random_batch(g, n, 40, 12, False, values=False, eids=True) for b in range(copies)]
    M = _cuda(blocks.join_matrices(parts, n))
    fast = blocks.split_matrix(M, blocks.bounds(M, n, copies), n, copies)
    monkeypatch.setattr(cuda_split, "applies", lambda M: False)
    slow = blocks.split_matrix(M, blocks.bounds(M, n, copies), n, copies)
    for x, y in zip(fast, slow):
        for a, b in zip(_fields(x), _fields(y)):
            assert (a is None and b is None) or torch.equal(a, b)


def test_other_index_types_take_the_torch_ops():
    M = CSC(
        num_nodes=20,
        indptr=torch.tensor([0, 1], device="cuda"),
        rows=torch.tensor([3], dtype=torch.int32, device="cuda"),
        col_ids=torch.tensor([4], device="cuda"),
    )
    assert not cuda_split.applies(M)
    assert not cuda_split.applies(
        CSC(num_nodes=2, indptr=torch.tensor([0, 1]), rows=torch.tensor([1]))
    )
    assert blocks.bounds(M, 10, 2).cols == [0, 1, 1]


@pytest.mark.parametrize("row_space", [False, True])
def test_large_batches_split_as_the_torch_ops(row_space):
    """Batches of thousands of columns and tens of thousands of edges (a warp's chunks inside
    one batch, many rounds of the grid's warps, some batches empty): the kernel's parts equal
    the torch ops' on the CPU."""
    g = torch.Generator().manual_seed(11 + row_space)
    n, copies = 5000, 64
    parts = [
        random_batch(g, n, 0 if b % 9 == 4 else 1500, 40, row_space, values=False, eids=False)
        for b in range(copies)
    ]
    cpu = blocks.join_matrices(parts, n)
    M = _cuda(cpu)
    got = blocks.split_matrix(M, blocks.bounds(M, n, copies), n, copies)
    want = blocks.split_matrix(cpu, blocks.bounds(cpu, n, copies), n, copies)
    for x, y in zip(got, want):
        for a, b in zip(_fields(x), _fields(y)):
            assert (a is None) == (b is None)
            assert a is None or torch.equal(a.cpu(), b)
