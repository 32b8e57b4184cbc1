"""``rowsum.scale_args``: the divisor arguments the CUDA row sums' finish takes for
``SLICE_REDUCE``'s ``scale`` (the ``scaled_row_sums`` pass's), and None wherever the finish
cannot divide as the program does (the caller then divides with torch). Pure host code: it
runs without a GPU, so a wrong ``per``/``count`` (every row by the first mini-batch's
scale) or a scale of another dtype taken as the kernel's fails here, not only on a GPU."""

from __future__ import annotations

import torch

from gsample.backend.cuda.rowsum import NO_SCALE, scale_args

CPU = torch.device("cpu")


def test_no_scale_is_a_null_divisor():
    assert scale_args(None, torch.float32, CPU, 10) == NO_SCALE


def test_a_0_dim_scale_is_one_for_every_row():
    s = torch.tensor(2.5)
    got, per, count = scale_args(s, torch.float32, CPU, 10)
    assert got is s and (per, count) == (10, 1)
    assert scale_args(s, torch.float32, CPU, 0)[1:] == (1, 1)  # (per at least 1)
    got, per, count = scale_args(s, torch.float32, CPU, 12, (3, 4))  # shared by the batches
    assert got is s and (per, count) == (12, 1)


def test_a_super_batch_s_scales_are_one_a_mini_batch():
    s = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    got, per, count = scale_args(s, torch.float64, CPU, 12, (3, 4))
    assert torch.equal(got, s) and got.is_contiguous() and (per, count) == (4, 3)
    strided = torch.tensor([1.0, 0.0, 2.0, 0.0, 3.0, 0.0])[::2]
    got, per, count = scale_args(strided, torch.float32, CPU, 12, (3, 4))
    assert got.is_contiguous() and torch.equal(got, strided) and (per, count) == (4, 3)


def test_what_the_finish_cannot_divide_is_left_to_torch():
    s = torch.tensor(2.5)
    assert scale_args(s, torch.float64, CPU, 10) is None  # another dtype: torch promotes
    assert scale_args(s.double(), torch.float32, CPU, 10) is None
    # a host scale for device sums: torch multiplies by its reciprocal
    assert scale_args(s, torch.float32, torch.device("cuda"), 10) is None
    assert scale_args(2.5, torch.float32, CPU, 10) is None  # a number
    v = torch.ones(3)
    assert scale_args(v, torch.float32, CPU, 12) is None  # a vector, no batches
    assert scale_args(v, torch.float32, CPU, 16, (4, 4)) is None  # not one a mini-batch
    assert scale_args(torch.ones(3, 1), torch.float32, CPU, 12, (3, 4)) is None
