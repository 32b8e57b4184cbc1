"""Mini-batch iteration: ``gs.DataLoader`` and ``gs.Batch``."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch
from tqdm.auto import tqdm

from . import validate as V
from .random import _stream, batch_scope, combine, hash_tensor, op_key, sort_key


@dataclass
class Batch:
    """One mini-batch.

    Attributes
    ----------
    seeds : LongTensor, shape (B,)
        This mini-batch's seed nodes (global ids).
    index : int
        Its position in the epoch (0, 1, ...), part of every random key.
    out : Any
        What the sampler function returned for these seeds.
    """

    seeds: torch.Tensor
    index: int
    out: Any


class DataLoader:
    """Iterate over mini-batches of seeds, sampling each with ``sampler_fn``.

    Parameters
    ----------
    A : Matrix
        The graph.
    sampler_fn : callable
        ``sampler_fn(A, seeds) -> out``; bind extra arguments with
        ``functools.partial``.
    seeds : LongTensor, shape (S,)
        All seeds of an epoch (global node ids).
    batch_size : int
        Seeds per mini-batch, ``B >= 1``.
    shuffle : bool
        Shuffle the seeds every epoch (a permutation drawn from gsample's hash, so
        it is the same on CPU and GPU).
    drop_last : bool
        Drop the last mini-batch when it is smaller than ``batch_size``.
    seed : int, optional
        Seed of the loader's stream. Default: drawn from gsample's stream when an
        epoch starts, so ``gs.manual_seed`` controls it. Epoch ``e`` of a loader
        uses its own stream either way, so epochs differ and are reproducible.
    progress : bool
        Show a tqdm bar over the mini-batches.

    Notes
    -----
    Mini-batch ``i`` runs ``sampler_fn`` with the epoch's seed, batch index ``i``
    and op ordinals restarting at 0, so its samples depend only on the epoch's
    seed, ``i`` and its seeds: not on the batches before it.

    Examples
    --------
    >>> loader = gs.DataLoader(A, graphsage, train_ids, batch_size=512, seed=0)
    >>> for batch in loader:
    ...     blocks = batch.out
    """

    def __init__(self, A, sampler_fn: Callable, seeds, batch_size: int, shuffle: bool = True,
                 drop_last: bool = False, seed: Optional[int] = None, progress: bool = False):
        from .matrix import Matrix
        if not isinstance(A, Matrix):
            raise TypeError(f"A: expected a gs.Matrix, got {type(A).__name__}")
        if not callable(sampler_fn):
            raise TypeError("sampler_fn: must be callable as sampler_fn(A, seeds)")
        self.A = A
        self.sampler_fn = sampler_fn
        self.seeds = V.ids(seeds, "seeds", A.num_nodes, A.device)
        self.batch_size = V.count(batch_size, "batch_size")
        if self.batch_size == 0:
            raise ValueError("batch_size: must be >= 1")
        self.shuffle = V.flag(shuffle, "shuffle")
        self.drop_last = V.flag(drop_last, "drop_last")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"seed: must be an int or None, got {type(seed).__name__}")
        self.seed = seed
        self.progress = V.flag(progress, "progress")
        self._epoch = 0

    def __len__(self) -> int:
        n = self.seeds.numel()
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def _epoch_seed(self) -> int:
        if self.seed is not None:
            return combine(combine(0, self.seed), self._epoch)
        stream = _stream()
        key = op_key(stream.seed, stream.ordinal, stream.batch_index)
        stream.ordinal += 1        # the loader's epoch takes one ordinal of the outer stream
        return key

    def __iter__(self):
        epoch_seed = self._epoch_seed()
        self._epoch += 1
        order = self.seeds
        if self.shuffle:
            pos = torch.arange(order.numel(), device=order.device)
            keys = sort_key(hash_tensor(epoch_seed, torch.full_like(pos, -1), pos))
            order = order[torch.argsort(keys, stable=True)]
        for i in tqdm(range(len(self)), disable=not self.progress, desc="sampling", unit="batch"):
            batch_seeds = order[i * self.batch_size:(i + 1) * self.batch_size]
            with batch_scope(epoch_seed, i):
                out = self.sampler_fn(self.A, batch_seeds)
            yield Batch(seeds=batch_seeds, index=i, out=out)
