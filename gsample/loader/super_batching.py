"""How a loader sizes and guards its super-batches: ``super_batch`` / ``memory_budget``
checked (:func:`super_batch_options`), ``"auto"``'s budget (:func:`default_budget`) and its
choice among timed sizes (:func:`choose_super_batch`), and what a run that ran out of memory
leaves behind (:func:`out_of_memory`, :func:`release_frames`). ``gs.DataLoader`` and the PyG
loaders (``gsample.interop.pyg``) share them.
"""

from __future__ import annotations

import contextlib
import numbers
import statistics
from collections.abc import Callable

import numpy as np
import torch


def out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` (or an error it chains) is an allocation failure: torch's or CuPy's
    ``OutOfMemoryError``, or Python's ``MemoryError``."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, MemoryError) or any(
            c.__name__ == "OutOfMemoryError" for c in type(error).__mro__
        ):
            return True
        error = error.__cause__ or error.__context__
    return False


def release_frames(error: BaseException) -> None:
    """Drop the local variables of the finished frames in the tracebacks of ``error`` and of
    the errors it chains (``__cause__``, ``__context__``): a super-batch that ran out of
    memory would otherwise keep every tensor its run made alive, through the error, in the
    caller's ``except`` block where a user retries with a smaller ``super_batch``. The
    tracebacks still print (file, line, function). A traceback's first frame, where its
    error was caught, may still run (or be a paused generator, which clearing would close):
    it is left alone; the error left every other one."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        tb = error.__traceback__
        tb = tb and tb.tb_next
        while tb is not None:
            with contextlib.suppress(RuntimeError):  # a frame still running: left as it is
                tb.tb_frame.clear()
            tb = tb.tb_next
        error = error.__cause__ or error.__context__


def super_batch_options(super_batch, memory_budget=None) -> tuple:
    """``(super_batch, memory_budget)`` checked: ``super_batch`` None, an int ``>= 1``
    (Python or NumPy; not a bool) or ``"auto"``; ``memory_budget`` (bytes, an int ``>= 1``)
    only with ``"auto"``. A ``TypeError`` / ``ValueError`` names the argument (every loader
    that takes them checks them here).

    Examples
    --------
    >>> super_batch_options(4)
    (4, None)
    >>> super_batch_options(0)
    Traceback (most recent call last):
    ValueError: super_batch: must be >= 1 (or 'auto'), got 0
    """
    if super_batch is not None and not (isinstance(super_batch, str) and super_batch == "auto"):
        if _not_int(super_batch):
            raise TypeError(f"super_batch: must be a positive int or 'auto', got {super_batch!r}")
        super_batch = int(super_batch)
        if super_batch < 1:
            raise ValueError(f"super_batch: must be >= 1 (or 'auto'), got {super_batch}")
    if memory_budget is not None:
        if _not_int(memory_budget):
            raise TypeError(f"memory_budget: must be a positive int (bytes), got {memory_budget!r}")
        memory_budget = int(memory_budget)
        if memory_budget < 1:
            raise ValueError(f"memory_budget: must be >= 1 byte, got {memory_budget}")
        if super_batch != "auto":
            raise ValueError(
                "memory_budget: only used with super_batch='auto' (it picks the "
                "largest super-batch that fits)"
            )
    return super_batch, memory_budget


#: how much less time per mini-batch than one at a time a super-batch size must take for
#: ``"auto"`` to keep it: a smaller gain is within a loaded host's timing noise, and where
#: super-batching does not pay (the CPU, large mini-batches) a choice by noise alone loses
AUTO_MARGIN = 0.1


def auto_statistic(device: torch.device) -> Callable:
    """What ``"auto"`` compares of each size's timed runs on ``device``: on a GPU the best
    run (host noise only adds time, and a super-batch's gain is large); on the CPU the
    median (the runs sample different mini-batches, whose work differs more than a
    super-batch saves, so one light run must not decide).

    Examples
    --------
    >>> import torch
    >>> auto_statistic(torch.device("cpu")) is statistics.median
    True
    """
    return min if torch.device(device).type == "cuda" else statistics.median


def choose_super_batch(runs: dict, margin: float = AUTO_MARGIN, statistic: Callable = min) -> int:
    """The super-batch size ``"auto"`` keeps, from timed runs: the size whose runs took the
    least time per mini-batch (by ``statistic``: the best run, or :func:`auto_statistic`'s
    for the device), where that beats one at a time's by ``margin``; else 1 (one at a
    time), so ``"auto"`` is never slower than one at a time by more than the timing noise.

    Parameters
    ----------
    runs : dict
        ``{size: seconds per mini-batch}`` (a float, or a sequence of one per timed run),
        ``size >= 1``; 1 is the reference (without it, nothing is chosen over one at a time).
    margin : float
        The share of one at a time's time a size must save, ``0 <= margin < 1``.
    statistic : callable
        A size's runs (a non-empty list of seconds) to the one figure compared; default
        the best run.

    Returns
    -------
    int
        The size, ``>= 1``.

    Examples
    --------
    >>> choose_super_batch({1: [2.0e-3, 2.1e-3], 2: [1.9e-3, 1.95e-3]})  # 5%: noise
    1
    >>> choose_super_batch({1: 2.0e-3, 2: 1.5e-3, 4: 1.2e-3, 8: 1.3e-3})
    4
    >>> choose_super_batch({1: [4.3e-3, 4.2e-3], 2: [4.5e-3, 3.6e-3]})  # one light run
    2
    >>> choose_super_batch({1: [4.3e-3, 4.2e-3], 2: [4.5e-3, 3.6e-3]}, statistic=statistics.median)
    1
    """
    if not isinstance(runs, dict):
        raise TypeError(f"runs: expected a dict {{size: seconds}}, got {type(runs).__name__}")
    if isinstance(margin, bool) or not isinstance(margin, numbers.Real) or not 0 <= margin < 1:
        raise ValueError(f"margin: must be a number in [0, 1), got {margin!r}")
    best = {}
    for size, times in runs.items():
        if _not_int(size) or size < 1:
            raise ValueError(f"runs: sizes must be ints >= 1, got {size!r}")
        times = [times] if isinstance(times, numbers.Real) else list(times)
        if times:
            best[int(size)] = statistic(times)
    if 1 not in best:
        return 1
    size = min(best, key=lambda n: (best[n], n))
    return size if best[size] < (1 - margin) * best[1] else 1


def _not_int(x) -> bool:
    """Whether ``x`` is not an integer (Python or NumPy; bools are not)."""
    return isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Integral)


def default_budget(device: torch.device) -> int:
    """``"auto"``'s budget when none is given: half the free memory of a GPU; on the CPU, the
    size of a core's L2 cache (2 MiB when unknown), as a super-batch pays there only while
    its values stay in cache (``python -m gsample.bench --modes super`` measures it)."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0] // 2
    try:
        with open("/sys/devices/system/cpu/cpu0/cache/index2/size") as f:
            size = f.read().strip().upper()
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
        return int(size.rstrip("KMG")) * scale
    except (OSError, ValueError):
        return 2 << 20


__all__ = [
    "AUTO_MARGIN",
    "auto_statistic",
    "choose_super_batch",
    "default_budget",
    "out_of_memory",
    "release_frames",
    "super_batch_options",
]
