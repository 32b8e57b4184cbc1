"""``gsample.base.readback.read_scalars``: the values of many 1-element tensors in one host
synchronisation, whatever their dtypes (bool, int32, int64) and, on GPUs, however many of
them (one or two: a copy each; more: one gathered copy) and on however many devices (a
gathered copy cannot span devices: a copy each)."""

from __future__ import annotations

import pytest
import torch

from gsample.base.readback import read_scalars

cuda = pytest.mark.cuda
needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")


def scalars(device) -> list:
    return [
        torch.tensor([True], device=device),
        torch.tensor([-3], dtype=torch.int32, device=device),
        torch.tensor(2**40 + 5, device=device),
        torch.tensor([False], device=device),
        torch.tensor([[7]], dtype=torch.int16, device=device),
    ]


WANT = [1, -3, 2**40 + 5, 0, 7]


def test_cpu_scalars():
    assert read_scalars(scalars("cpu")) == WANT
    assert read_scalars([]) == []


@cuda
@needs_gpu
@pytest.mark.parametrize("many", [1, 2, 5])
def test_gpu_scalars_one_copy_each_or_gathered(many):
    assert read_scalars(scalars("cuda")[:many]) == WANT[:many]


@cuda
@needs_gpu
def test_scalars_on_two_gpus_are_copied_one_by_one():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
    mixed = [t.to(f"cuda:{i % 2}") for i, t in enumerate(scalars("cpu"))]
    assert read_scalars(mixed) == WANT
