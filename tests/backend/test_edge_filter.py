"""``A.filter_edges(keep)`` (``gsample.backend.torch.edge_filter`` and the CUDA backend's
sync-free variant, ``gsample.backend.cuda.edge_filter``, run here on CPU tensors too):
the kept edges against the matrix's own edge table, empty columns kept, eager == compiled,
super-batched == one mini-batch at a time, bad arguments, and (marked ``cuda``) the CUDA
backend against the torch backend."""

import pytest
import torch
from helpers import (
    assert_same,
    check_compiled_equals_eager,
    check_super_batched,
    loader_outputs,
    run_seeded,
)

import gsample as gs
from gsample.backend.cuda import edge_filter as cuda_filter
from gsample.formats.bounded import BoundedCSC, read_counts, trim


@pytest.fixture(scope="module")
def A():
    return gs.datasets.rmat(2000, 30000, seed=1, weighted=True)


def heavy(A, seeds, t=0.5):
    """Each column keeps its edges of value > t; then GraphSAGE on what is left."""
    sub = A[:, seeds]
    s = sub.filter_edges(sub.values > t)
    return s, A[:, s.all_nodes()].individual_sample(3)


def test_keeps_exactly_the_masked_edges(A):
    seeds = torch.tensor([5, 7, 5, 1999, 0])
    sub = A[:, seeds]
    keep = torch.rand(sub.num_edges, generator=torch.Generator().manual_seed(0)) < 0.4
    keep[sub.csc.indptr[0] : sub.csc.indptr[1]] = False  # column 0 emptied
    s = sub.filter_edges(keep)
    assert s.shape == sub.shape and torch.equal(s.column(), seeds)
    r, c, e = sub.edges()
    r2, c2, e2 = s.edges()
    assert torch.equal(r2, r[keep]) and torch.equal(c2, c[keep]) and torch.equal(e2, e[keep])
    assert torch.equal(s.values, sub.values[keep])
    deg = s.csc.indptr[1:] - s.csc.indptr[:-1]
    assert deg[0] == 0 and int(deg.sum()) == int(keep.sum())
    assert s.filter_edges(torch.zeros(s.num_edges, dtype=torch.bool)).num_edges == 0
    # a sub-matrix's row space is kept
    sr = sub.compact()
    assert torch.equal(sr.filter_edges(keep).row_ids, sr.row_ids)


def test_sync_free_variant_equals_the_reference(A):
    sub = A[:, torch.arange(40)]
    keep = sub.values > 0.5
    for src in (sub.csc, sub.compact().csc):
        got = cuda_filter.filter_edges(src, keep)
        assert isinstance(got, BoundedCSC)
        (sizes,), _ = read_counts([got])
        assert sizes == [int(keep.sum())]
        ref = gs.Matrix(src).filter_edges(keep).csc
        assert_same(gs.Matrix(trim(got, sizes)), gs.Matrix(ref))


def test_compiled_and_super_batched_equal_eager(A):
    seeds = torch.randperm(2000, generator=torch.Generator().manual_seed(2))[:180]
    check_compiled_equals_eager(heavy, A, seeds[:32], calls=2)
    for n in (1, 4):
        check_super_batched(A, heavy, seeds, 32, n)


@pytest.mark.parametrize(
    "keep,exc,match",
    [
        (lambda E: torch.ones(E), TypeError, "keep: must be a bool tensor"),
        (lambda E: torch.ones(E + 1, dtype=torch.bool), ValueError, "keep: expected one flag"),
        (lambda E: torch.ones(E, 1, dtype=torch.bool), ValueError, "keep: expected one flag"),
        (lambda E: "yes", TypeError, "keep: expected a tensor"),
    ],
)
def test_bad_arguments(A, keep, exc, match):
    sub = A[:, torch.arange(10)]
    with pytest.raises(exc, match=match):
        sub.filter_edges(keep(sub.num_edges))
    sampler = gs.compile(lambda A, seeds, k: A[:, seeds].filter_edges(k))
    if isinstance(keep(1), torch.Tensor):
        with pytest.raises(exc, match=match):
            sampler(A, torch.arange(10), keep(sub.num_edges))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_cuda_backend_equals_torch_backend(A):
    pytest.importorskip("cupy")
    G = A.to("cuda")
    seeds = torch.randperm(2000, generator=torch.Generator().manual_seed(3))[:256].cuda()
    torch_fn, cuda_fn = gs.compile(heavy, backend="torch"), gs.compile(heavy, backend="cuda")
    for call in range(4):  # CUDA graphs replay from the third call
        assert_same(
            run_seeded(cuda_fn, G, seeds[:64], seed=call),
            run_seeded(torch_fn, G, seeds[:64], seed=call),
            f"call {call}",
        )
    ref = loader_outputs(G, torch_fn, seeds, 64)
    for options in ({}, {"super_batch": 4}):
        got = loader_outputs(G, cuda_fn, seeds, 64, **options)
        for i, (g, r) in enumerate(zip(got, ref)):
            assert_same(g, r, f"loader {options}, batch {i}")
