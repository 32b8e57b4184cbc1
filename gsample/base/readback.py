"""Host read-backs: the values of many 1-element device tensors in one host
synchronisation (:func:`read_scalars`), and the refusal of a read-back inside a CUDA graph
capture (:func:`refuse_capture`).

Under everything that reads a size or a check flag back: the argument checks'
:func:`gsample.base.validate.read_back` (sizes with the pending check flags), the bounded
values of :mod:`gsample.formats.bounded` (their counts), and the runtime, whose replayed
CUDA graph copies its results' sizes to pinned memory itself (:data:`READ_BACK`), so that
a read-back after a replay only waits for it.
"""

from __future__ import annotations

import contextvars
import functools

import torch

__all__ = ["READ_BACK", "NotCapturable", "current_stream", "read_scalars", "refuse_capture"]

#: the ``replayed.Replayed`` of the CUDA graph just replayed (set by runtime.cuda_graphs):
#: read_scalars then only waits for its event and reads what the graph copied out itself
READ_BACK = contextvars.ContextVar("gsample_graph_read_back", default=None)


class NotCapturable(RuntimeError):
    """Raised before a read-back that a CUDA graph being captured would refuse (the exact
    fallback of a sync-free implementation, for inputs its kernels do not take): the runtime
    ends the capture, drops it and runs those steps eagerly from then on."""


def refuse_capture() -> None:
    """Raise :class:`NotCapturable` when the current CUDA stream is being captured."""
    if _cuda() and torch.cuda.is_current_stream_capturing():
        raise NotCapturable("a read-back inside a CUDA graph capture")


@functools.cache
def _cuda() -> bool:
    # once: torch.cuda.is_available() reads the environment and asks NVML on every call
    return torch.cuda.is_available()


def _synchronize(device: torch.device) -> None:
    """Wait for torch's current stream on ``device``."""
    current_stream(device).synchronize()


def current_stream(device: torch.device):
    """torch's current stream on ``device`` as a ``torch.cuda.Stream``, cached by its raw
    handle (``torch.cuda.current_stream`` costs more than the wait on a replayed graph)."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    raw = torch._C._cuda_getCurrentRawStream(index)
    stream = _STREAMS.get(raw)
    if stream is None:
        stream = _STREAMS[raw] = torch.cuda.current_stream(index)
    return stream


_STREAMS: dict = {}


def read_scalars(scalars: list) -> list:
    """The values of 1-element tensors (ints; a bool tensor's as 0 / 1), read back in one host
    synchronisation: on a GPU those a replayed CUDA graph did not copy out itself are
    gathered into one tensor (one launch) and copied into pinned host memory at once (a
    copy each would be a host call each: a program's counts and check flags number a dozen
    or more), then the stream is waited for once."""
    if not scalars:
        return []
    if not scalars[0].is_cuda:
        return [int(t.reshape(-1)[0]) for t in scalars]
    refuse_capture()
    replayed = READ_BACK.get()
    at = [None] * len(scalars)
    if replayed is not None:  # a replayed CUDA graph copied (some of) these to pinned memory
        at = [replayed.known.get((t.data_ptr(), t.dtype)) for t in scalars]
        if None not in at:
            host = replayed.wait()
            return [int(host[i]) for i in at]
    todo = [i for i, a in enumerate(at) if a is None]
    bools = None
    devices = {scalars[i].device for i in todo}
    # a copy each (no kernel): no gathering launch for one or two, and no torch.cat across
    # devices (it refuses tensors on several)
    if len(todo) <= 2 or len(devices) > 1:
        got = torch.empty(len(todo), dtype=torch.int64, pin_memory=True)
        bools = torch.empty(len(todo), dtype=torch.bool, pin_memory=True)
        for j, i in enumerate(todo):
            t = scalars[i]
            if t.dtype not in (torch.bool, torch.int64):
                t = t.to(torch.int64)
            (bools if t.dtype == torch.bool else got)[j : j + 1].copy_(
                t.reshape(1), non_blocking=True
            )
    else:  # torch.cat promotes bools (0 / 1) and narrower integers to int64
        flat = torch.cat([scalars[i].reshape(1) for i in todo]).to(torch.int64)
        got = torch.empty(len(todo), dtype=torch.int64, pin_memory=True)
        got.copy_(flat, non_blocking=True)
    for device in devices:
        _synchronize(device)
    out = [0] * len(scalars)
    for j, i in enumerate(todo):
        small_bool = bools is not None and scalars[i].dtype == torch.bool
        out[i] = int(bools[j]) if small_bool else int(got[j])
    if len(todo) < len(scalars):
        host = replayed.wait()
        for i, a in enumerate(at):
            if a is not None:
                out[i] = int(host[a])
    return out
