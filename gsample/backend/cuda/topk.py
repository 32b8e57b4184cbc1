"""The ``k`` smallest keys of each batch on the GPU (``kernels/topk.cu``): an exact radix
select of three 12-bit digits in eight launches, for collective sampling, over the
candidates compacted by batch (:func:`smallest_compact`).

``torch.topk`` over every row key of a large graph launches once per radix pass and waits
on the host between passes, more host work than the rest of a LADIES layer's draws; the
select here reads the candidates only, in a fixed number of launches.
"""

from __future__ import annotations

import torch

from gsample.backend.cuda.module import launch, memset

BINS = 1 << 12
#: ties kept per batch (keys sharing their top 36 bits with the k-th smallest: a few); the
#: fill ranks them in shared memory (GS_TIE_CAP of kernels/topk.cu: not more)
CAP = 1024
#: a key that is not a candidate (never chosen)
NONE = 2**63 - 1
#: blocks of the passes over the keys (each counts its share of a batch's in shared memory)
_BLOCKS = 1024
#: threads of the fill's block per batch (it ranks up to CAP ties)
_FILL_THREADS = 512


def smallest_compact(
    keys: torch.Tensor,
    rows: torch.Tensor,
    lo: torch.Tensor,
    hi: torch.Tensor,
    copies: int,
    k: int,
    R: int,
):
    """Rows of the ``k`` smallest keys of each of ``copies`` batches of compacted candidates.

    Parameters
    ----------
    keys : LongTensor, shape (M,)
        The candidates' keys, ``>= 0``; batch ``b``'s are ``keys[lo[b]:hi[b]]``, in any order.
    rows : LongTensor, shape (M,)
        Each candidate's row.
    lo, hi : LongTensor, shape (copies,), on the device
    copies, k : int
        ``k >= 1``.
    R : int
        What marks "no row" in the result (the row space's size).

    Returns
    -------
    chosen : LongTensor, shape (copies, k)
        Each batch's rows of its ``k`` smallest keys, in no order; ``R`` past a batch's
        candidates.
    overflow : LongTensor, shape (1,)
        Nonzero when some batch had more than :data:`CAP` ties (``chosen`` is then
        incomplete: use ``torch.topk``). Read it back with the caller's counts.

    Examples
    --------
    On a GPU, ``row_keys`` one key per row of a row space of ``R`` rows (``NONE``: no
    candidate):

    >>> import torch
    >>> rows = torch.nonzero(row_keys != NONE).view(-1)  # doctest: +SKIP
    >>> at = torch.tensor([0, rows.numel()], device=rows.device)  # doctest: +SKIP
    >>> chosen, overflow = smallest_compact(  # doctest: +SKIP
    ...     row_keys[rows], rows, at[:1], at[1:], 1, 4000, R)
    """
    dev, N = keys.device, copies
    hist = torch.empty(N * BINS, dtype=torch.int32, device=dev)
    small = torch.empty(6 * N, dtype=torch.int64, device=dev)  # thr (3 a batch), below, counts
    memset(small, 0)
    thr, below, counts = small[: 3 * N], small[3 * N : 4 * N], small[4 * N :]
    chosen = torch.empty(N * k, dtype=torch.int64, device=dev)
    ties = torch.empty(2 * N * CAP, dtype=torch.int64, device=dev)  # keys, then rows
    tie_keys, tie_rows = ties[: N * CAP], ties[N * CAP :]
    # blocks per batch: their candidates are counted on the device
    B = max(1, _BLOCKS // N)
    for level in (1, 2, 3):
        memset(hist, 0)
        launch(
            "topk", "gs_topk_histogram", N * B * 256, keys, lo, hi, B, level, thr, hist, grid=N * B
        )
        launch(
            "topk", "gs_topk_threshold", N * 1024, hist, k, level, thr, below, block=1024, grid=N
        )
    launch(
        "topk",
        "gs_topk_select",
        N * B * 256,
        keys,
        rows,
        lo,
        hi,
        B,
        N,
        k,
        thr,
        CAP,
        counts,
        chosen,
        tie_keys,
        tie_rows,
        grid=N * B,
    )
    # ties ranked in the kernel (a torch.sort of the (N, CAP) buffer would sort every slot,
    # not only the ties, and add its launches to every layer)
    launch(
        "topk",
        "gs_topk_fill",
        N * _FILL_THREADS,
        counts,
        tie_keys,
        tie_rows,
        N,
        k,
        CAP,
        R,
        chosen,
        block=_FILL_THREADS,
        grid=N,
    )
    overflow = (counts[N:] > CAP).any().reshape(1)
    return chosen.view(N, k), overflow


__all__ = ["BINS", "CAP", "NONE", "smallest_compact"]
