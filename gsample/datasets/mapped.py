"""Arrays on disk, memory-mapped and placed a chunk at a time where a graph is to live:
device memory, the host, or pinned host memory a GPU reads (``placement="uva"``), with no
full copy in host memory first. :func:`gsample.datasets.load_csc` and
:func:`gsample.datasets.load_coo` read their files through these."""

from __future__ import annotations

import os
import warnings

import numpy as np
import torch

from gsample.formats.placement import choose, free_memory, map_host, require_cuda

__all__ = [
    "PLACEMENTS",
    "Target",
    "as_array",
    "as_path",
    "check_placement",
    "host_tensor",
    "zero_copy",
]

#: where a loaded graph may live (as :meth:`gsample.Matrix.to`)
PLACEMENTS = ("device", "uva", "auto")
_INT_KINDS = "iu"
#: the id dtypes gsample's constructors read as they are (native byte order)
_TORCH_IDS = tuple(np.dtype(t) for t in ("int8", "int16", "int32", "int64", "uint8"))


def as_path(path, name: str = "path") -> str:
    """``path`` as a str (a TypeError naming ``name`` when it is not a path)."""
    try:
        return os.fspath(path)
    except TypeError:
        raise TypeError(
            f"{name}: expected a str or os.PathLike, got {type(path).__name__}"
        ) from None


def check_placement(placement) -> str:
    """``placement``, one of :data:`PLACEMENTS` (else a ValueError naming it)."""
    if not isinstance(placement, str) or placement not in PLACEMENTS:
        raise ValueError(f"placement: must be one of {PLACEMENTS}, got {placement!r}")
    return placement


def as_array(x, name: str, ndim: int = 1) -> np.ndarray:
    """``x`` as a numpy array: a ``.npy`` path memory-mapped (copy-on-write: the file is
    never written), or an array (a ``numpy.memmap`` of raw binary, any integer dtype)."""
    if isinstance(x, (str, os.PathLike)):
        path = as_path(x, name)
        if not os.path.exists(path):
            raise FileNotFoundError(f"{name}: no such file: {path}")
        try:
            arr = np.load(path, mmap_mode="c", allow_pickle=False)
        except ValueError as e:
            raise ValueError(f"{name}: {path} is not a .npy array ({e})") from None
    elif isinstance(x, np.ndarray):
        arr = x
    elif isinstance(x, torch.Tensor):
        if x.device.type != "cpu":
            raise ValueError(f"{name}: a host array or a file, got a tensor on {x.device}")
        arr = x.numpy()
    else:
        raise TypeError(
            f"{name}: expected a .npy path or an array (numpy.memmap of a raw file), got "
            f"{type(x).__name__}"
        )
    if arr.dtype.kind not in _INT_KINDS or arr.ndim != ndim:
        shape = "(E,)" if ndim == 1 else "(2, E)"
        raise TypeError(
            f"{name}: expected an integer array of shape {shape}, got dtype {arr.dtype} and "
            f"shape {arr.shape}"
        )
    return arr


class Target:
    """Where placed arrays go: ``device`` memory, the host (a CPU device), or pinned host
    memory mapped for a GPU (``placement="uva"``, :func:`gsample.formats.placement.map_host`:
    the arrays are CUDA tensors at host addresses, so the checks and sorts run on the GPU
    for every placement but the CPU's).

    Parameters
    ----------
    device : torch.device
    placement : {"device", "uva", "auto"}
        ``"auto"``: :func:`gsample.formats.placement.choose` for ``nbytes``.
    nbytes : int
        The size of what is placed.
    """

    def __init__(self, device, placement: str, nbytes: int):
        placement = check_placement(placement)
        if placement != "device" and device.type != "cuda":
            if placement == "uva":
                raise ValueError(
                    "placement: 'uva' keeps the graph in pinned host memory for a GPU to "
                    f"read; device must be a CUDA device, got {device}"
                )
            placement = "device"
        if placement == "auto":
            placement = choose(nbytes, free_memory(device))
        if placement == "uva":
            require_cuda("placement='uva'")
            if device.index is None:
                device = torch.device("cuda", torch.cuda.current_device())
        self.device, self.uva = device, placement == "uva"
        self.staging = None

    def empty(self, n: int, dtype) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(tensor, host)``: a new array of ``n`` elements, and its host view where one
        can be written from numpy directly (the host, pinned memory), else None."""
        if self.uva:
            with torch.cuda.device(self.device):  # pinned while the reading GPU is current
                host = torch.empty(n, dtype=dtype, pin_memory=True)
                return map_host(host, self.device), host
        t = torch.empty(n, dtype=dtype, device=self.device)
        return t, (t if self.device.type == "cpu" else None)

    def fill(self, dest, host, src: np.ndarray, chunk: int, bar=None) -> None:
        """``dest[:] = src`` a chunk at a time (widened as copied): on the host straight
        from the mapped file, to a GPU through a pinned buffer of ``chunk`` elements."""
        n = src.shape[0]
        for i in range(0, n, chunk):
            j = min(n, i + chunk)
            if host is not None:
                host[i:j].numpy()[...] = src[i:j]
            else:
                st = self._stage(src.dtype, chunk)[: j - i]
                st.numpy()[...] = src[i:j]
                dest[i:j].copy_(st)
            if bar is not None:
                bar.update(j - i)

    def chunk(self, src: np.ndarray, i: int, j: int, chunk: int) -> torch.Tensor:
        """``src[i:j]`` as an int64 tensor on the work device."""
        part = src[i:j]
        if self.device.type == "cpu":
            return torch.from_numpy(np.array(part, dtype=np.int64))  # a copy: sorted in place
        st = self._stage(src.dtype, chunk)[: j - i]
        st.numpy()[...] = part
        return st.to(self.device).to(torch.int64)

    def _stage(self, dtype, chunk: int) -> torch.Tensor:
        t = torch.from_numpy(np.empty(0, dtype=np.dtype(dtype).newbyteorder("="))).dtype
        if self.staging is None or self.staging.dtype != t or self.staging.numel() < chunk:
            self.staging = torch.empty(chunk, dtype=t, pin_memory=torch.cuda.is_available())
        return self.staging


def zero_copy(arr: np.ndarray, dtype) -> torch.Tensor | None:
    """A CPU tensor over the mapped file ``arr`` (copy-on-write), when it already holds
    ``dtype`` in native order; else None."""
    want = np.dtype(str(dtype).replace("torch.", ""))
    if (
        isinstance(arr, np.memmap)
        and getattr(arr, "mode", None) == "c"
        and arr.dtype == want
        and arr.dtype.isnative
        and arr.flags.c_contiguous
    ):
        return torch.from_numpy(arr)
    return None


def host_tensor(arr: np.ndarray) -> torch.Tensor:
    """``arr`` (integer ids) as a CPU tensor over its own memory (a mapped file stays
    mapped, nothing is read ahead), where torch reads its dtype; else widened to int64
    (a copy: unsigned ids over 8 bits, another byte order, negative strides)."""
    if arr.dtype in _TORCH_IDS and all(s >= 0 for s in arr.strides):
        with warnings.catch_warnings():  # a read-only map: the constructors never write it
            warnings.filterwarnings("ignore", "The given NumPy array is not writable")
            return torch.from_numpy(arr)
    return torch.from_numpy(arr.astype(np.int64))
