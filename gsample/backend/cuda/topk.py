"""The ``k`` smallest keys of each batch on the GPU (``kernels/topk.cu``): an exact radix
select of three 12-bit digits in eight launches, for collective sampling.

``torch.topk`` over the 2.4M row keys of a products-sized graph spent 0.21 ms of host time
per call (H100: a launch per radix pass), more than the rest of a LADIES layer's draws.
"""
from __future__ import annotations

import torch

from .module import launch, memset

BINS = 1 << 12
#: ties kept per batch (keys sharing their top 36 bits with the k-th smallest: a few); the
#: fill ranks them in shared memory (GS_TIE_CAP of kernels/topk.cu: not more)
CAP = 1024
#: a key that is not a candidate (never chosen)
NONE = 2 ** 63 - 1
#: blocks of the passes over the keys (each counts its share in shared memory)
_HIST_BLOCKS = 2048
#: threads of the fill's block per batch (it ranks up to CAP ties)
_FILL_THREADS = 512


def smallest(keys: torch.Tensor, copies: int, n: int, k: int):
    """Rows of the ``k`` smallest keys of each of ``copies`` batches of ``n`` keys.

    Parameters
    ----------
    keys : LongTensor, shape (copies * n,)
        Keys ``>= 0``; :data:`NONE` for rows that are not candidates. Batch ``b``'s are
        ``keys[b * n:(b + 1) * n]``.
    copies, n, k : int
        ``1 <= k <= n``.

    Returns
    -------
    chosen : LongTensor, shape (copies, k)
        Global rows ``b * n + v`` of each batch's ``k`` smallest keys, in no order;
        ``copies * n`` (no row) past a batch's candidates.
    overflow : LongTensor, shape (1,)
        Nonzero when some batch had more than :data:`CAP` ties (``chosen`` is then
        incomplete: use ``torch.topk``). Read it back with the caller's counts.

    Examples
    --------
    >>> rows, overflow = smallest(keys, 1, keys.numel(), 4000)   # doctest: +SKIP
    """
    dev, R, N = keys.device, keys.numel(), copies
    hist = torch.empty(N * BINS, dtype=torch.int32, device=dev)
    small = torch.empty(6 * N, dtype=torch.int64, device=dev)     # thr (3 a batch), below, counts
    memset(small, 0)
    thr, below, counts = small[:3 * N], small[3 * N:4 * N], small[4 * N:]
    chosen = torch.empty(N * k, dtype=torch.int64, device=dev)
    ties = torch.empty(2 * N * CAP, dtype=torch.int64, device=dev)   # keys, then rows
    tie_keys, tie_rows = ties[:N * CAP], ties[N * CAP:]
    grid = min(-(-R // 256), _HIST_BLOCKS)
    for level in (1, 2, 3):
        memset(hist, 0)
        launch("topk", "gs_topk_histogram", R, keys, R, n, level, thr, hist, grid=grid)
        launch("topk", "gs_topk_threshold", N * 1024, hist, k, level, thr, below, block=1024,
               grid=N)
    launch("topk", "gs_topk_select", R, keys, R, n, k, thr, N, CAP, counts, chosen, tie_keys,
           tie_rows, grid=grid)
    # ties ranked in the kernel (a torch.sort of the (N, CAP) buffer took 36 us a layer)
    launch("topk", "gs_topk_fill", N * _FILL_THREADS, counts, tie_keys, tie_rows, N, k, CAP, R,
           chosen, block=_FILL_THREADS, grid=N)
    overflow = (counts[N:] > CAP).any().reshape(1)
    return chosen.view(N, k), overflow


__all__ = ["smallest", "BINS", "CAP", "NONE"]
