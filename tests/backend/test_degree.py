"""``A.degree(axis)``: edges per column or per row (the op added by following
docs/adding-an-op.md: its OpDef, its torch implementation, its CUDA registration)."""

from __future__ import annotations

import pytest
import torch
from helpers import check_compiled_equals_eager, check_super_batched, random_seeds

import gsample as gs


def _expected(sub: gs.Matrix, axis: int) -> torch.Tensor:
    """Counted edge by edge: each edge's local column (axis 0) or row (axis 1)."""
    local = sub.csc.edge_cols() if axis == 0 else sub.csc.rows
    return torch.bincount(local, minlength=sub.shape[1] if axis == 0 else sub.shape[0])


def test_degree_counts_edges_per_column_and_per_row(device):
    A = gs.datasets.rmat(300, 3000, seed=0).to(device)
    seeds = torch.tensor([5, 7, 5, 299, 0], device=device)
    for sub in (A, A[:, seeds], A[:, seeds].individual_sample(3), A[:, seeds].compact()):
        for axis in (0, 1):
            got = sub.degree(axis)
            assert got.dtype == torch.int64 and got.device.type == device.type
            assert got.shape == (sub.shape[1] if axis == 0 else sub.shape[0],)
            assert torch.equal(got, _expected(sub, axis))
    # independent of the values: the count of stored edges
    assert torch.equal((A * 0.5).degree(0), A.degree(0))
    # the totals are the edge count
    assert int(A.degree(0).sum()) == int(A.degree(1).sum()) == A.num_edges


def test_degree_checks_its_axis():
    A = gs.datasets.rmat(50, 200, seed=1)
    with pytest.raises(ValueError, match="axis: must be 0"):
        A.degree(2)
    with pytest.raises(TypeError):
        A.degree()


def _sampler(A, seeds):
    sub = A[:, seeds]
    s = sub.individual_sample(4, probs=sub.div(sub.degree(1) + 1.0, axis=1))
    return s, s.degree(0), s.degree(1), A.degree(0)


def test_compiled_equals_eager():
    A = gs.datasets.rmat(400, 4000, seed=2)
    check_compiled_equals_eager(_sampler, A, random_seeds(32, num_nodes=400), distinct=True)


def test_super_batched_equals_one_by_one():
    A = gs.datasets.rmat(400, 4000, seed=3)

    def sampler(A, seeds):
        s = A[:, seeds].individual_sample(5)
        return s.degree(0), s.degree(1), s.compact().degree(1), s.all_nodes()

    check_super_batched(A, sampler, random_seeds(64, num_nodes=400), 16, 2)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_the_cuda_backend_reads_no_size_back():
    from gsample.backend import get_backend
    from gsample.ir import Op

    impl = get_backend("cuda").impl(Op.DEGREE)
    assert impl is not None and not impl.syncs
    A = gs.datasets.rmat(300, 3000, seed=0).to("cuda")
    with gs.use_backend("cuda"):
        got = A[:, torch.tensor([3, 3, 9], device="cuda")].degree(1)
    with gs.use_backend("torch"):
        want = A[:, torch.tensor([3, 3, 9], device="cuda")].degree(1)
    assert torch.equal(got, want)
