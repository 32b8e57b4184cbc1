"""Each rank's share of an epoch's mini-batches (``gs.DataLoader(..., distributed=True)``).

As ``torch.utils.data.DistributedSampler`` does, every rank orders the epoch the same way (the
loader's shuffle is a pure function of the epoch's seed), pads it by repeating its beginning
to a multiple of the world size, and takes an equal share; here the unit is a whole
mini-batch, and a rank's share is a contiguous block of the padded list. A mini-batch's
samples depend on the epoch's seed and its *global* index only (docs/architecture.md §3), so the
union of the ranks' mini-batches is the single-process epoch, sample for sample; contiguous blocks
keep a rank's super-batches on consecutive indices.
"""

from __future__ import annotations

import math

import torch.distributed as dist


def resolve_ranks(distributed, rank, world_size) -> tuple:
    """``(rank, world_size)`` of a loader: given, or read from ``torch.distributed``.

    Parameters
    ----------
    distributed : bool
        Take this process's share of every epoch; ``rank`` and ``world_size`` default to
        ``torch.distributed.get_rank()`` / ``get_world_size()`` (initialised first).
    rank, world_size : int, optional
        This process's rank and the number of ranks (both, or neither).

    Returns
    -------
    tuple of int
        ``(0, 1)`` for a loader that is not distributed.
    """
    if not isinstance(distributed, bool):
        raise TypeError(f"distributed: must be True or False, got {distributed!r}")
    if (rank is None) != (world_size is None) and not distributed:
        raise ValueError(
            "rank, world_size: give both (or distributed=True to read them from torch.distributed)"
        )
    if distributed and (rank is None or world_size is None):
        if not (dist.is_available() and dist.is_initialized()):
            raise RuntimeError(
                "distributed: torch.distributed is not initialised; call "
                "torch.distributed.init_process_group first, or pass rank= "
                "and world_size="
            )
        rank = dist.get_rank() if rank is None else rank
        world_size = dist.get_world_size() if world_size is None else world_size
    if rank is None:
        return 0, 1
    for value, name in ((world_size, "world_size"), (rank, "rank")):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name}: must be an int, got {type(value).__name__}")
    if world_size < 1:
        raise ValueError(f"world_size: must be >= 1, got {world_size}")
    if not 0 <= rank < world_size:
        raise ValueError(f"rank: must be in [0, world_size = {world_size}), got {rank}")
    return rank, world_size


def rank_batches(num_batches: int, rank: int, world_size: int) -> list:
    """The global mini-batch indices of ``rank``, as runs ``(first, count)``.

    Every rank gets ``ceil(num_batches / world_size)`` mini-batches: rank ``r`` takes
    positions ``r * per .. (r + 1) * per - 1`` of the epoch padded by repeating its beginning
    (a repeated mini-batch is sampled again with its own index: the same samples), so ranks
    step together (a training loop's collectives need it).

    Examples
    --------
    >>> rank_batches(10, 0, 4), rank_batches(10, 3, 4)
    ([(0, 3)], [(9, 1), (0, 2)])
    """
    if world_size == 1:
        return [(0, num_batches)] if num_batches else []
    if num_batches == 0:
        return []
    per = math.ceil(num_batches / world_size)
    runs: list = []
    for i in range(rank * per, (rank + 1) * per):
        b = i % num_batches
        if runs and runs[-1][0] + runs[-1][1] == b:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((b, 1))
    return runs


__all__ = ["rank_batches", "resolve_ranks"]
