"""Buffers' used prefixes packed one after another into one buffer on the device
(``kernels/pack.cu``): a CUDA graph packs its bounded results so that the host copies them
out of the graph's memory in one copy (``gsample.formats.replayed.ReplayedTrim``)."""

from __future__ import annotations

import torch

from gsample.backend.cuda.gather import WORDS
from gsample.backend.cuda.module import function, launch


def prepare(dtype: torch.dtype, device: torch.device) -> None:
    """Load the kernel for ``dtype`` on ``device`` before a capture that packs."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    function("pack", "gs_pack_parts", index, params=_params(dtype))


def _params(dtype: torch.dtype) -> tuple:
    return (("WORD", WORDS[dtype.itemsize]),)


def pack_parts(parts: list, out: torch.Tensor, desc_host: torch.Tensor) -> torch.Tensor:
    """Write the first ``count + add`` entries of each part, one after another, into ``out``
    (lengths clamped into ``[0, len(tensor)]``; the counts are read on the device).

    Parameters
    ----------
    parts : list of (Tensor, Tensor or None, int)
        ``(tensor, count, add)``: a contiguous 1-D CUDA tensor of ``out``'s dtype, a
        1-element int64 CUDA tensor (None: no count) and the number added to it.
    out : Tensor, shape (T,), at least the parts' total length
    desc_host : LongTensor, shape (>= 4 * len(parts),), pinned
        Host room for the parts' descriptions, copied to the device by this call (async:
        keep it unchanged until the stream has run the copy); when captured in a CUDA graph,
        each replay copies it again, so it must be kept alive and unchanged as long as the
        graph.

    Returns
    -------
    LongTensor, shape (4 * len(parts),), on the device
        The descriptions the kernel reads (keep it as long as a graph that replays it).

    Examples
    --------
    >>> import torch
    >>> a, n = torch.arange(5, device="cuda"), torch.tensor([2], device="cuda")  # doctest: +SKIP
    >>> out = torch.zeros(8, dtype=torch.int64, device="cuda")  # doctest: +SKIP
    >>> desc = torch.empty(8, dtype=torch.int64).pin_memory()  # doctest: +SKIP
    >>> _ = pack_parts([(a, n, 1), (a, None, 2)], out, desc)  # doctest: +SKIP
    >>> out[:5].tolist()  # doctest: +SKIP
    [0, 1, 2, 0, 1]
    """
    view, at = desc_host.numpy(), 0
    for p, (t, count, add) in enumerate(parts):
        if t.dim() != 1 or not t.is_contiguous() or t.dtype != out.dtype:
            raise ValueError("parts: contiguous 1-D tensors of out's dtype")
        if count is not None and count.dtype != torch.int64:
            raise ValueError("parts: counts must be int64")
        view[4 * p : 4 * p + 4] = (t.data_ptr(), 0 if count is None else count.data_ptr(), add, at)
        at += t.numel()
    if at > out.numel():
        raise ValueError(f"out: {out.numel()} entries, the parts hold up to {at}")
    desc = torch.empty(4 * len(parts), dtype=torch.int64, device=out.device)
    desc.copy_(desc_host[: 4 * len(parts)], non_blocking=True)
    launch("pack", "gs_pack_parts", at, desc, len(parts), at, out, params=_params(out.dtype))
    return desc
