"""Keyed random values per frontier entry: ``A.random_uniform`` and ``A.random_count``.

Entry ``i`` of ``nodes`` (its position, the column position of docs/architecture.md §3)
draws one word,
``word(i, 0)`` of the op's key; a super-batch's entry draws with its mini-batch's key and
its position within that mini-batch, so every value is the one the mini-batch draws alone.

* ``random_uniform``: ``(word >> 11) * 2**-53``, a float64 in ``[0, 1)`` (exact: 53 bits);
* ``random_count``: ``#{j : (word >> 11) < T_j}`` for the thresholds ``T`` of
  :func:`gsample.base.random.count_table` (integer comparisons).

The values are the same on every device. The code is torch operators on the inputs'
device; with a :class:`~gsample.base.random.DeviceKey` (the CUDA backend's sync-free runtime,
which registers these functions) it reads no size back to the host: the key is finished
on the device, and a super-batch's positions come from a search on the device.
"""

from __future__ import annotations

import torch

from gsample.backend.registry import torch_impl
from gsample.base import validate as V
from gsample.base.random import (
    BatchKeys,
    DeviceKey,
    combine_tensor,
    count_from_words,
    count_table,
    hash_tensor,
    uniform_float,
)
from gsample.ir import Op

_TABLES: dict = {}


def entry_words(key, nodes: torch.Tensor, valid=None) -> torch.Tensor:
    """One random word per entry of ``nodes`` (shape (C,)): ``word(position, 0)``.

    ``key``: the op's key (int), a super-batch's :class:`BatchKeys` (``nodes`` encoded,
    grouped by mini-batch), or a :class:`DeviceKey`. ``valid`` (a 1-element count, with a
    DeviceKey): only ``nodes[:valid]`` are entries (a bounded buffer's padding follows).
    """
    C, dev = nodes.numel(), nodes.device
    position = torch.arange(C, device=dev)
    draw = torch.zeros_like(position)
    if isinstance(key, int):
        return hash_tensor(key, position, draw)
    if isinstance(key, BatchKeys):
        nodes = V.ids(nodes, "nodes", key.num_nodes * key.copies, dev)
        return key.columns(nodes).words(position, draw)
    if not isinstance(key, DeviceKey):
        raise TypeError(
            f"random draws: takes an op key, BatchKeys or a DeviceKey, got {type(key).__name__}"
        )
    t = key.tensor  # (prefix, first mini-batch) bits
    if key.copies == 1 and key.num_nodes == 0:
        return hash_tensor(combine_tensor(t[0], t[1]), position, draw)
    copies, n = key.copies, key.num_nodes
    batch = nodes // n
    if valid is not None:  # padding after every batch
        batch = torch.where(position < valid, batch, copies)
    bases = combine_tensor(t[0], t[1] + torch.arange(copies, device=dev))
    start = torch.searchsorted(batch, torch.arange(copies, device=dev))
    b = batch.clamp(0, copies - 1)
    return hash_tensor(bases[b], position - start[b], draw)


@torch_impl(Op.RANDOM_UNIFORM)
def random_uniform(A, nodes: torch.Tensor, key) -> torch.Tensor:
    """``A.random_uniform(nodes)``: a float64 uniform in ``[0, 1)`` per entry, shape (C,).

    Parameters
    ----------
    A : CSC
        The whole graph (its node count decodes a super-batch's ids).
    nodes : LongTensor, shape (C,)
        Node ids (checked); only their positions key the draws.
    key : int, BatchKeys or DeviceKey
        The op's key.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> from gsample.base.random import op_key
    >>> u = random_uniform(A.csc, torch.tensor([3, 3]), op_key(0, 0, 0))   # two draws
    >>> u.shape, u.dtype
    (torch.Size([2]), torch.float64)
    """
    return uniform_float(entry_words(key, nodes))


def table(dist: str, p: float, n, device) -> torch.Tensor:
    """:func:`count_table`'s thresholds, ascending, as int64 on ``device`` (kept per device:
    a replayed program reads the same tensor)."""
    k = (dist, p, n, str(device))
    t = _TABLES.get(k)
    if t is None:
        t = _TABLES[k] = torch.tensor(
            count_table(dist, p, n)[::-1], dtype=torch.int64, device=device
        )
    return t


@torch_impl(Op.RANDOM_COUNT)
def random_count(
    A, nodes: torch.Tensor, key, dist: str = "geometric", p: float = 0.5, n=None
) -> torch.Tensor:
    """``A.random_count(nodes, dist, p, n)``: an int64 count per entry, shape (C,).

    Parameters
    ----------
    A, nodes, key
        As :func:`random_uniform`.
    dist : {"geometric", "binomial"}
        ``P(x) = (1 - p) p^x`` (``x >= 0``), or ``n`` trials of probability ``p``.
    p : float
        The probability.
    n : int, optional
        The binomial's trials.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> from gsample.base.random import op_key
    >>> c = random_count(A.csc, seeds, op_key(0, 0, 0), "binomial", 0.3, 10)   # in 0..10
    >>> c
    tensor([3, 2, 3])
    """
    return count_from_words(entry_words(key, nodes), table(dist, p, n, nodes.device))


__all__ = ["entry_words", "random_count", "random_uniform", "table"]
