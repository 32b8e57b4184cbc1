"""Feature rows read by the GPU from pinned host memory (UVA), with a device cache
(``kernels/gather.cu``); the semantics are ``out[i] = table[ids[i]]`` (``gsample/features.py``).

PyTorch cannot index a pinned CPU tensor with CUDA indices (``index_select`` refuses the
device mix), so a kernel reads the host rows through their device-mapped address
(``cudaHostGetDevicePointer``): only the rows a mini-batch needs cross the bus, and no host
thread copies them.
"""

from __future__ import annotations

import numpy as np
import torch

from gsample.backend.cuda.module import launch, memset
from gsample.base import validate as V

#: the machine word a row is moved in, by size in bytes (the kernel's GS_WORD)
WORDS = {
    16: "uint4",
    8: "unsigned long long",
    4: "unsigned int",
    2: "unsigned short",
    1: "unsigned char",
}
_NULL = np.uint64(0)


def device_pointer(host: torch.Tensor) -> int:
    """The address a kernel reads a pinned host tensor's data at.

    With unified addressing (every 64-bit Linux system with a GPU of compute capability
    2.0 or later) pinned host memory is directly accessible from the device, and "the
    pointer value through which allocated host memory may be accessed in kernels ... is the
    same as the pointer value through which that memory is accessed on the host" (CUDA
    Runtime API, unified addressing), whether ``cudaHostAlloc`` made it (PyTorch's pinned
    allocator) or it was registered (given ``cudaDevAttrCanUseHostPointerForRegisteredMem``).
    """
    if not host.is_pinned():
        raise ValueError("host: expected a pinned CPU tensor (tensor.pin_memory())")
    return host.data_ptr()


def word_size(row_bytes: int, *addresses: int) -> int:
    """The widest word (16, 8, 4, 2 or 1 bytes) dividing a row and every base address."""
    for size in (16, 8, 4, 2):
        if row_bytes % size == 0 and all(a % size == 0 for a in addresses):
            return size
    return 1


def gather_rows(
    host: torch.Tensor,
    ids: torch.Tensor,
    out: torch.Tensor,
    cache: torch.Tensor | None = None,
    slot: torch.Tensor | None = None,
    hits: torch.Tensor | None = None,
    host_address: int | None = None,
) -> torch.Tensor:
    """``out[i] = host[ids[i]]``, or ``cache[slot[ids[i]]]`` where that slot is ``>= 0``.

    Parameters
    ----------
    host : Tensor, shape (N, ...), pinned CPU memory, contiguous
        The whole table.
    ids : LongTensor, shape (n,), on the GPU
        Rows to read, each in ``[0, N)``: the kernel guards them, and one outside raises an
        ``IndexError`` naming ``n_id`` (a deferred :func:`gsample.base.validate.fail_if`: at once
        unless the runtime defers checks; the kernel read row 0 for it).
    out : Tensor, shape (n, ...), on the GPU, contiguous, ``host``'s dtype
        Where the rows go.
    cache : Tensor, shape (C, ...), on the GPU, optional
        Cached rows; ``slot`` (shape (N,), int64, on the GPU) maps a row to its cache row
        or -1. ``hits`` (shape (1,), int64) counts the rows the cache served.
    host_address : int, optional
        :func:`device_pointer` of ``host``, when the caller keeps it.

    Returns
    -------
    Tensor
        ``out``.

    Examples
    --------
    >>> import torch
    >>> X = torch.randn(1000, 64).pin_memory()  # doctest: +SKIP
    >>> out = torch.empty(3, 64, device="cuda")  # doctest: +SKIP
    >>> index = torch.tensor([5, 0, 5], device="cuda")  # doctest: +SKIP
    >>> gather_rows(X, index, out)[0].equal(X[5].cuda())  # doctest: +SKIP
    True
    """
    n = ids.numel()
    row_bytes = host[0].numel() * host.element_size() if host.shape[0] else 0
    if n and not host.shape[0]:
        raise IndexError(f"n_id: the table has no rows; {n} ids asked for")
    if n == 0 or row_bytes == 0:
        return out
    address = device_pointer(host) if host_address is None else host_address
    bases = [address, out.data_ptr()] + ([cache.data_ptr()] if cache is not None else [])
    size = word_size(row_bytes, *bases)
    words = row_bytes // size
    bad = torch.empty(1, dtype=torch.int32, device=out.device)
    memset(bad, 0)
    launch(
        "gather",
        "gs_gather_rows",
        n * words,
        address,
        cache if cache is not None else _NULL,
        slot if slot is not None else _NULL,
        ids.to(torch.int64).contiguous(),
        n,
        words,
        out,
        hits if hits is not None else _NULL,
        host.shape[0],
        bad,
        params=(("WORD", WORDS[size]),),
    )
    V.fail_if(
        bad, IndexError, f"n_id: a row id is out of range for a table of {host.shape[0]} rows"
    )
    return out
