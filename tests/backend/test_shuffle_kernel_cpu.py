"""``kernels/shuffle.cu`` on the CPU: the kernel source, compiled as C++ with CUDA's names
as plain C++ (one thread runs the grid-stride loop), gives
:func:`gsample.base.random.shuffle_keys`'s keys bit for bit. CI has no GPU; the GPU's
comparison is ``test_cuda_shuffle.py``."""

import ctypes

import pytest
import torch
from helpers import CUDA_AS_CPP, CXX, build_cpp

import gsample.backend as backend
from gsample.backend import HOOKS, hook
from gsample.backend.cuda import shuffle
from gsample.backend.cuda.module import _arg
from gsample.base import random as R
from gsample.base.random import MASK64, combine, shuffle_keys
from gsample.interop.pyg.neighbor_loader import epoch_order
from gsample.loader.dataloader import epoch_keys

SEEDS = [0, 1, 3, (1 << 63) - 1, 1 << 63, MASK64, 0x9E3779B97F4A7C15]
#: sets the one "thread"'s block index (its first i), so a test can start past 2**32
START = 'extern "C" void gs_set_block(long long b) { blockIdx.x = b; }\n'


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    if CXX is None:
        pytest.skip("no C++ compiler")
    lib = tmp_path_factory.mktemp("shuffle_cpu") / "libshuffle.so"
    done = build_cpp(CUDA_AS_CPP + '#include "shuffle.cu"\n' + START, lib, "-shared", "-fPIC")
    assert done.returncode == 0, done.stderr
    so = ctypes.CDLL(str(lib))
    fn = so.gs_shuffle_keys
    # as launch passes it: the word's 64 bits in a signed slot (module._arg)
    fn.argtypes = [ctypes.c_int64, ctypes.c_longlong, ctypes.c_void_p]
    fn.restype = None
    so.gs_set_block.argtypes = [ctypes.c_longlong]
    fn.start = so.gs_set_block  # the one "thread"'s first index
    return fn


def run_kernel(fn, epoch_seed: int, n: int) -> torch.Tensor:
    """The keys as the host launches the kernel (``gsample/backend/cuda/shuffle.py``), with
    a guard entry past the end that the kernel must leave alone."""
    out = torch.full((n + 1,), -7, dtype=torch.int64)
    fn.start(0)
    fn(_arg(combine(epoch_seed, -1)), n, out.data_ptr())
    assert out[n].item() == -7, "the kernel wrote past i < n"
    return out[:n]


@pytest.mark.parametrize("n", [0, 1, 1000, 2**16 + 3])
@pytest.mark.parametrize("epoch_seed", SEEDS, ids=hex)
def test_the_kernel_s_keys_are_the_reference_s(kernel, epoch_seed, n):
    got = run_kernel(kernel, epoch_seed, n)
    assert torch.equal(got, shuffle_keys(epoch_seed, n))
    assert bool((got >= 0).all())  # 63-bit keys


@pytest.mark.parametrize("epoch_seed", [1, MASK64], ids=hex)
def test_the_kernel_s_index_is_64_bit(kernel, epoch_seed):
    """Positions past 2**32 (a 32-bit index would wrap): the thread starts at ``first``, and
    ``out`` is offset so that ``out[first]`` is a small buffer's first entry."""
    first, n = (1 << 32) - 2, (1 << 32) + 2
    buf = torch.full((5,), -7, dtype=torch.int64)
    if buf.data_ptr() < 8 * first:
        pytest.skip("the buffer lies too low to offset")
    kernel.start(first)
    try:
        kernel(_arg(combine(epoch_seed, -1)), n, buf.data_ptr() - 8 * first)
    finally:
        kernel.start(0)
    h = combine(epoch_seed, -1)
    assert buf[:4].tolist() == [combine(h, i) >> 1 for i in range(first, n)]
    assert buf[4].item() == -7, "the kernel wrote past i < n"


def test_the_cpu_keys_are_the_same_in_chunks():
    """On the CPU ``shuffle_keys`` works a chunk at a time past ``_CHUNK`` keys: the same
    bits as the whole-tensor ops (the GPU's torch path), across chunk edges."""
    for n in (R._CHUNK, R._CHUNK + 1, 3 * R._CHUNK + 5):
        for epoch_seed in SEEDS:
            whole = R.sort_key(R.combine_tensor(combine(epoch_seed, -1), torch.arange(n)))
            assert torch.equal(shuffle_keys(epoch_seed, n), whole)


def test_epoch_keys_runs_the_kernel_only_for_cuda_on_a_gpu(monkeypatch):
    """``epoch_keys`` (gs.DataLoader's and PyG's loaders' keys) calls the hook for the CUDA
    backend on a GPU, and the torch code otherwise (no GPU here: the hook is replaced)."""
    calls = []

    def counted(epoch_seed, n, device):
        calls.append(device)
        return shuffle_keys(epoch_seed, n)

    monkeypatch.setitem(backend._HOOKED, "shuffle_keys", counted)
    assert torch.equal(epoch_keys(5, 9, "cuda", "cuda"), shuffle_keys(5, 9))
    assert calls == [torch.device("cuda")]
    for device, name in (("cpu", "cuda"), ("cpu", "torch")):
        assert torch.equal(epoch_keys(5, 9, device, name), shuffle_keys(5, 9))
    assert len(calls) == 1


def test_pyg_loaders_order_their_inputs_by_the_same_keys():
    """PyG's loaders' epoch order is gs.DataLoader's: the stable sort of ``shuffle_keys``."""
    for epoch_seed in (7, MASK64):
        want = torch.argsort(shuffle_keys(epoch_seed, 5000), stable=True)
        assert torch.equal(epoch_order(5000, True, epoch_seed), want)


def test_the_host_code_launches_it_with_the_reference_s_arguments(kernel, monkeypatch):
    """``gsample/backend/cuda/shuffle.py`` run with its ``launch`` replaced by the C++ kernel
    on the CPU (the arguments converted as ``launch`` converts them): the host's argument
    list (the folded word, ``n``, ``out``) gives the reference's keys."""
    launched = []

    def on_the_cpu(family, name, n, *args):
        launched.append((family, name, n))
        if n > 0:  # as launch: no launch for no work
            kernel.start(0)
            kernel(*[a.data_ptr() if isinstance(a, torch.Tensor) else _arg(a) for a in args])

    monkeypatch.setattr(shuffle, "launch", on_the_cpu)
    for n in (0, 1, 1000):
        for epoch_seed in SEEDS:
            got = shuffle.shuffle_keys(epoch_seed, n, "cpu")
            assert got.dtype == torch.int64 and got.shape == (n,)
            assert torch.equal(got, shuffle_keys(epoch_seed, n))
    assert {w[:2] for w in launched} == {("shuffle", "gs_shuffle_keys")}


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
