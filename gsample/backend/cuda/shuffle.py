"""An epoch's shuffle keys on the GPU (``kernels/shuffle.cu``): one launch where
:func:`gsample.base.random.shuffle_keys` (the reference) runs an arange and about sixteen
elementwise torch ops, each a launch the host makes before the epoch's first sampling kernel
(a super-batched DeepWalk epoch is one short sampling run: that host time is on its
critical path)."""

from __future__ import annotations

import torch

from gsample.backend.cuda.module import launch
from gsample.base.random import combine


def shuffle_keys(epoch_seed: int, n: int, device) -> torch.Tensor:
    """:func:`gsample.base.random.shuffle_keys` in one kernel: the same arguments (``device``
    a CUDA device) and the same bits, a LongTensor of shape (n,) on ``device``.

    Examples
    --------
    >>> import torch
    >>> from gsample.base import random as R
    >>> torch.equal(shuffle_keys(7, 5, "cuda").cpu(), R.shuffle_keys(7, 5))  # doctest: +SKIP
    True
    """
    out = torch.empty(n, dtype=torch.int64, device=device)
    # the constant first half of the hash folded here, as the reference folds it
    launch("shuffle", "gs_shuffle_keys", n, combine(epoch_seed, -1), n, out)
    return out
