"""The collectives gsample's ranks run: all-to-alls of rows to their owners and back.

Every rank calls the same collectives in the same order (the ranks run the same sampler on
mini-batches of one epoch, and :mod:`gsample.distributed.split` gives them equal counts), so
a rank with nothing to send still takes part. Tensors live on the rank's device: CPU tensors
with gloo, GPU tensors with NCCL.
"""

from __future__ import annotations

import socket

import torch
import torch.distributed as dist


def local_init_method() -> str:
    """An ``init_method`` for processes of one host (``torch.multiprocessing.spawn``): TCP on
    the loopback at a port free now.

    Examples
    --------
    >>> url = local_init_method()
    >>> url.startswith("tcp://127.0.0.1:")
    True
    >>> # worker: torch.distributed.init_process_group(..., init_method=url)
    >>> import torch.multiprocessing as mp
    >>> mp.spawn(worker, args=(world, url), nprocs=world)  # doctest: +SKIP
    """
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def group_ranks(group=None) -> tuple:
    """``(rank, world_size)`` of this process in ``group`` (initialised first)."""
    if not (dist.is_available() and dist.is_initialized()):
        raise RuntimeError(
            "group: torch.distributed is not initialised; call "
            "torch.distributed.init_process_group first (one process per device)"
        )
    return dist.get_rank(group), dist.get_world_size(group)


def default_device(group=None) -> torch.device:
    """A rank's device: its current GPU with NCCL, else the CPU."""
    if dist.get_backend(group) == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def all_to_all(data: torch.Tensor, out_splits: list, in_splits: list, group=None) -> torch.Tensor:
    """Rows ``data`` split by ``in_splits`` (rows for rank 0, 1, ...), the rows every rank sent
    here returned, ``out_splits`` of them from each (dimension 0)."""
    out = data.new_empty((sum(out_splits),) + tuple(data.shape[1:]))
    dist.all_to_all_single(out, data.contiguous(), out_splits, in_splits, group=group)
    return out


class Route:
    """Rows sent to their owner ranks (one all-to-all of the counts, one of the rows), and
    the way back.

    Parameters
    ----------
    rows : Tensor, shape (n, F)
        What to send; row ``i`` goes to rank ``owner[i]``.
    owner : LongTensor, shape (n,)
    world_size : int
    group : process group, optional

    Attributes
    ----------
    received : Tensor, shape (m, F)
        The rows this rank owns, grouped by the rank that sent them (rank 0's first), each
        sender's in its order.
    sent, got : list of int
        Rows sent to / received from each rank.
    order : LongTensor, shape (n,)
        ``rows[order]`` is what was sent, in that order.
    """

    def __init__(self, rows: torch.Tensor, owner: torch.Tensor, world_size: int, group=None):
        self.group = group
        self.order = torch.argsort(owner, stable=True)
        counts = torch.bincount(owner, minlength=world_size)
        got = torch.empty_like(counts)
        dist.all_to_all_single(got, counts, group=group)
        self.sent, self.got = counts.tolist(), got.tolist()  # one read-back for both
        self.received = all_to_all(rows[self.order], self.got, self.sent, group)

    def answer(self, rows: torch.Tensor) -> torch.Tensor:
        """One row of answer per received row (shape (m, ...)) sent back: the answers to this
        rank's own rows, in the order they were given (shape (n, ...))."""
        back = all_to_all(rows, self.sent, self.got, self.group)
        out = torch.empty_like(back)
        out[self.order] = back
        return out

    def answer_grouped(self, rows: torch.Tensor, per_sender: list, per_owner: list):
        """Variable-length answers sent back: ``per_sender[s]`` rows of ``rows`` (grouped as
        ``received`` is) for sender ``s``; ``per_owner[r]`` rows come back from rank ``r``,
        grouped by owner as this rank's rows were sent (``rows[order]``)."""
        return all_to_all(rows, per_owner, per_sender, self.group)


def group_sums(counts: torch.Tensor, splits: list) -> list:
    """Sums of consecutive groups of ``counts`` of sizes ``splits`` (one read-back)."""
    if counts.numel() == 0:
        return [0] * len(splits)
    ends = torch.tensor(splits, device=counts.device).cumsum(0)
    total = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    at = total[ends]
    return torch.diff(at, prepend=at.new_zeros(1)).tolist()


__all__ = ["Route", "all_to_all", "default_device", "group_ranks", "group_sums"]
