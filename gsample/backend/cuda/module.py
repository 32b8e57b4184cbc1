"""Compiling ``kernels/*.cu`` through CuPy, caching modules, launching on PyTorch's stream.

A module is compiled once per key ``(family, dtypes, layout, params)`` (and GPU) and kept for
the process; the binary is also kept on disk (``$GSAMPLE_CACHE/kernels``, default
``~/.cache/gsample/kernels``) under a hash of the source, the headers, the options, the
architecture and the NVRTC version. Tensors go to kernels without copies: a
kernel argument is the tensor's device pointer; launches run on
``torch.cuda.current_stream()`` so they order with the surrounding PyTorch work.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import pathlib
import struct
import threading

import numpy as np
import torch

from gsample.backend.registry import kernels_dir

KERNELS = kernels_dir()  # gsample/_kernels when installed, else kernels/
# ---
#: threads per block for the grid-stride kernels
BLOCK = 256
#: NVRTC options: IEEE arithmetic, as PyTorch's kernels are built — keep subnormals
#: (``-ftz=false``), exact division and sqrt — so results are bit-equal to the torch
#: backend's; our own arithmetic uses _rn intrinsics, so FMA contraction stays as the
#: library code of powf/log expects
OPTIONS = ("-std=c++17", f"-I{KERNELS}", "--ftz=false", "--prec-div=true", "--prec-sqrt=true")


def source(family: str) -> str:
    """The CUDA source of a kernel family (``kernels/<family>.cu``)."""
    path = KERNELS / f"{family}.cu"
    if not path.exists():
        raise FileNotFoundError(f"family: no kernel source {path}")
    return path.read_text()


def full_source(family: str, dtypes: tuple = (), layout: str = "csc", params: tuple = ()) -> str:
    """The source compiled for one cache key: ``#define`` lines, then ``kernels/<family>.cu``.

    ``dtypes`` become ``GS_DTYPE<i>``, ``layout`` ``GS_LAYOUT_<LAYOUT>`` and each
    ``(name, value)`` of ``params`` ``GS_<name>``; a value may be generated code (an
    expression: :mod:`.codegen`), which is why they are written into the source rather
    than passed as ``-D`` options.
    """
    lines = [f"#define GS_DTYPE{i} {d}" for i, d in enumerate(dtypes)]
    lines += [f"#define GS_LAYOUT_{layout.upper()} 1"]
    for k, v in params:
        text = str(v)
        if "\n" in text or "\r" in text:
            raise ValueError(f"params: the value of {k!r} spans lines")
        lines.append(f"#define GS_{k} {text}")
    return "\n".join(lines) + "\n" + source(family)


@functools.cache
def module(
    family: str, dtypes: tuple = (), layout: str = "csc", params: tuple = (), device: int = 0
):
    """The compiled CuPy module of ``family`` for one cache key.

    ``dtypes``, ``layout`` and ``params`` (a tuple of ``(name, value)`` pairs, hashable:
    the key of this cache) become defines (:func:`full_source`), so a generated or
    specialised source compiles once per combination.
    """
    # import here: CuPy, an optional dependency (pip install gsample[cuda]), imported at the
    # first compile (this package imports without it)
    try:
        import cupy as cp
        from cupy.cuda import compiler, function
    except ImportError:
        raise ImportError("backend 'cuda' needs CuPy: pip install 'gsample[cuda]'") from None
    source_text = full_source(family, dtypes, layout, params)
    major, minor = torch.cuda.get_device_capability(device)
    arch = f"{major}{minor}"
    nvrtc = cp.cuda.nvrtc.getVersion()
    headers = tuple(h.read_text() for h in sorted(KERNELS.glob("*.cuh")))
    digest = hashlib.sha256(repr((source_text, headers, OPTIONS, arch, nvrtc)).encode())
    digest = digest.hexdigest()
    path = _cache_dir() / f"{family}-{digest[:32]}.bin"
    if path.exists():
        binary = path.read_bytes()
    else:
        # not cp.RawModule: CuPy appends -ftz=true to every option list it compiles with
        # (it flushes subnormal float32 results to 0, which the torch backend keeps), so
        # NVRTC runs with ours alone
        binary, _ = compiler.compile_using_nvrtc(
            source_text, options=OPTIONS, arch=arch, filename=f"{family}.cu"
        )
        binary = binary.encode() if isinstance(binary, str) else bytes(binary)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(binary)
        os.replace(tmp, path)  # atomic: parallel test workers share it
    with cp.cuda.Device(device):  # a module belongs to one GPU's context
        mod = function.Module()
        mod.load(binary)
    return mod


def _cache_dir() -> pathlib.Path:
    """Where compiled kernels are kept across processes (``$GSAMPLE_CACHE/kernels``)."""
    root = os.environ.get("GSAMPLE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gsample"
    )
    path = pathlib.Path(root) / "kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _arg(x) -> int:
    """A kernel argument as the 64 bits ``cuLaunchKernel`` copies from its slot: a tensor's
    device pointer (passed by value: no copy), an int as 64 bits (the kernels take ``long
    long``), a bool as an int (a kernel's ``int`` reads the slot's low 32 bits: little-endian),
    a float as a double's bits."""
    if x.__class__ is int:
        return x - (1 << 64) if x >= 1 << 63 else x
    if isinstance(x, torch.Tensor):
        if not x.is_cuda or not x.is_contiguous():
            raise ValueError("kernel arguments must be contiguous CUDA tensors")
        return x.data_ptr()
    if isinstance(x, (bool, np.bool_)):
        return int(x)
    if isinstance(x, (int, np.integer)):
        x = int(x)
        return x - (1 << 64) if x >= 1 << 63 else x
    if isinstance(x, (float, np.floating)):
        return _DOUBLE_BITS.unpack(_DOUBLE.pack(float(x)))[0]
    raise TypeError(f"kernel argument of type {type(x).__name__}")


_DOUBLE, _DOUBLE_BITS = struct.Struct("<d"), struct.Struct("<q")
_SLOTS = threading.local()


def _params(values: list):
    """The ``void**`` array ``cuLaunchKernel`` takes: one 64-bit slot per argument in a
    ctypes array and pointers to the slots, made once per argument count and thread and
    refilled per launch (the driver copies the arguments when the kernel is launched, so a
    launch may reuse them; a thread of its own: the pipelined loader launches from two).
    A ctypes value per argument, then two ctypes objects a launch, were made before
    (LADIES launches about 18 of our kernels a mini-batch, each with 8 to 16 arguments)."""
    n = max(len(values), 1)
    arrays = getattr(_SLOTS, "arrays", None)
    if arrays is None:
        arrays = _SLOTS.arrays = {}
    held = arrays.get(n)
    if held is None:
        slots = (ctypes.c_int64 * n)()
        base = ctypes.addressof(slots)
        pointers = (ctypes.c_void_p * n)(*range(base, base + 8 * n, 8))
        held = arrays[n] = (slots, pointers, ctypes.addressof(pointers))
    held[0][: len(values)] = values
    return held


_FUNCTIONS: dict = {}


def function(family: str, name: str, index: int, **key):
    """Kernel ``name`` of ``family`` on GPU ``index`` (``key``: :func:`module`'s), compiled
    and loaded once: before a CUDA graph capture that launches it first (a module is not
    loaded while a stream captures)."""
    fkey = (family, name, index, tuple(sorted(key.items())) if key else ())
    kernel = _FUNCTIONS.get(fkey)
    if kernel is None:
        kernel = _FUNCTIONS[fkey] = module(family, **key, device=index).get_function(name)
    return kernel


def launch(family: str, name: str, n: int, *args, block: int = BLOCK, grid=None, **key) -> None:
    """Run kernel ``name`` of ``family`` over ``n`` work items (grid-stride) on torch's stream.

    ``grid`` (blocks) and ``block`` (threads per block) override the grid-stride launch
    for kernels that need one block per tile. The function is looked up once per key and
    launched with ``cuLaunchKernel`` directly (the arguments as C values: CuPy's
    ``RawKernel`` call converts its arguments in Python on every launch, a host cost that
    dominates the small launches of a mini-batch).
    """
    if n <= 0:
        return
    # import here: CuPy, an optional dependency (a cached module object: a dictionary lookup)
    import cupy as cp

    index = None
    for a in args:
        if a.__class__ is torch.Tensor or isinstance(a, torch.Tensor):
            index = a.device.index
            break
    if index is None:
        index = torch.cuda.current_device()
    kernel = _FUNCTIONS.get((family, name, index, tuple(sorted(key.items())) if key else ()))
    if kernel is None:
        kernel = function(family, name, index, **key)
    if grid is None:
        grid = int(min((n + block - 1) // block, 65535 * 4))
    params = _params([_arg(a) for a in args])[2]
    stream = torch._C._cuda_getCurrentRawStream(index)
    if cp.cuda.runtime.getDevice() != index:
        with cp.cuda.Device(index):
            cp.cuda.driver.launchKernel(kernel.ptr, grid, 1, 1, block, 1, 1, 0, stream, params, 0)
    else:
        cp.cuda.driver.launchKernel(kernel.ptr, grid, 1, 1, block, 1, 1, 0, stream, params, 0)


def memset(t: torch.Tensor, byte: int) -> None:
    """Set every byte of the contiguous CUDA tensor ``t`` to ``byte`` (``cudaMemsetAsync`` on
    torch's current stream: no kernel launch)."""
    # import here: CuPy, an optional dependency (a cached module object: a dictionary lookup)
    import cupy as cp

    if not t.is_cuda or not t.is_contiguous():
        raise ValueError("t: memset needs a contiguous CUDA tensor")
    nbytes = t.numel() * t.element_size()
    if nbytes:
        index = t.device.index if t.device.index is not None else torch.cuda.current_device()
        stream = torch._C._cuda_getCurrentRawStream(index)
        if cp.cuda.runtime.getDevice() != index:
            with cp.cuda.Device(index):
                cp.cuda.runtime.memsetAsync(t.data_ptr(), byte, nbytes, stream)
        else:
            cp.cuda.runtime.memsetAsync(t.data_ptr(), byte, nbytes, stream)
