"""``kernels/shuffle.cu`` on the CPU: the kernel source, compiled as C++ with CUDA's names
as plain C++ (one thread runs the grid-stride loop), gives
:func:`gsample.base.random.shuffle_keys`'s keys bit for bit. CI has no GPU; the GPU's
comparison is ``test_cuda_shuffle.py``."""

import ctypes

import pytest
import torch
from helpers import CUDA_AS_CPP, CXX, build_cpp

from gsample.backend import HOOKS, hook
from gsample.backend.cuda import shuffle
from gsample.base.random import MASK64, combine, shuffle_keys

SEEDS = [0, 1, 3, (1 << 63) - 1, 1 << 63, MASK64, 0x9E3779B97F4A7C15]


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    if CXX is None:
        pytest.skip("no C++ compiler")
    lib = tmp_path_factory.mktemp("shuffle_cpu") / "libshuffle.so"
    done = build_cpp(CUDA_AS_CPP + '#include "shuffle.cu"\n', lib, "-shared", "-fPIC")
    assert done.returncode == 0, done.stderr
    fn = ctypes.CDLL(str(lib)).gs_shuffle_keys
    fn.argtypes = [ctypes.c_uint64, ctypes.c_longlong, ctypes.c_void_p]
    fn.restype = None
    return fn


def run_kernel(fn, epoch_seed: int, n: int) -> torch.Tensor:
    """The keys as the host launches the kernel (``gsample/backend/cuda/shuffle.py``), with
    a guard entry past the end that the kernel must leave alone."""
    out = torch.full((n + 1,), -7, dtype=torch.int64)
    fn(combine(epoch_seed, -1), n, out.data_ptr())
    assert out[n].item() == -7, "the kernel wrote past i < n"
    return out[:n]


@pytest.mark.parametrize("n", [0, 1, 1000, 2**16 + 3])
@pytest.mark.parametrize("epoch_seed", SEEDS, ids=hex)
def test_the_kernel_s_keys_are_the_reference_s(kernel, epoch_seed, n):
    got = run_kernel(kernel, epoch_seed, n)
    assert torch.equal(got, shuffle_keys(epoch_seed, n))
    assert bool((got >= 0).all())  # 63-bit keys


def test_the_reference_is_the_formula():
    """``shuffle_keys`` is ``combine(combine(epoch_seed, -1), i) >> 1`` (Python ints)."""
    for epoch_seed in SEEDS:
        keys = shuffle_keys(epoch_seed, 50).tolist()
        h = combine(epoch_seed, -1)
        assert keys == [combine(h, i) >> 1 for i in range(50)]


def test_the_hook_names_the_cuda_host_code():
    """The loader reaches the kernel as ``hook("shuffle_keys")`` (importable without CuPy:
    the kernel compiles at its first launch)."""
    assert HOOKS["shuffle_keys"] == "gsample.backend.cuda.shuffle:shuffle_keys"
    assert hook("shuffle_keys") is shuffle.shuffle_keys
