"""Exact per-row sums on the GPU (``kernels/rowsum.cu``): ``A.sum(axis=1)``.

Each row's terms become 62-bit fixed-point integers at the row's largest binary exponent and
are added in 128-bit integers by atomics: integer addition is associative, so the sum is the
same bits whatever order threads run in and whatever order the terms come in. A column
slice's row sums are therefore the same bits whether the slice was built (``A[:, cols]
.sum(axis=1)`` eagerly) or not (``SLICE_REDUCE``), and the same for a mini-batch on its own
and inside a super-batch. Non-finite terms follow IEEE (NaN, or +inf and -inf, give NaN).
The torch backend's float sums agree up to their own rounding (these are float64-accurate).
"""

from __future__ import annotations

import torch

from gsample.backend.cuda.module import BLOCK, launch, memset

FLOATS = {torch.float32: "float", torch.float64: "double"}


#: rows of a chunk (GS_CHUNK of kernels/rowsum.cu): the unit the chunked passes sum by, and
#: the unit one mini-batch's finish skips where nothing was written
CHUNK = 2048


#: the finish's divisor arguments (gs_rowsum_scaled of kernels/rowsum.cu) when it divides by
#: nothing: a null scale
NO_SCALE = (0, 1, 1)


class RowSums:
    """Scratch and the finishing pass of one exact row-sum over ``R`` rows.

    ``cleared`` False: only the exponents and flags are zeroed here (8 of the 24 bytes a
    row); the caller's pass 1 (``gs_rowsum_exponents``) clears each sum it will add to and
    marks the chunks it writes in :attr:`touched` (zero, a byte a chunk of :data:`CHUNK`
    rows), which the finish takes: rows of an untouched chunk are 0 without a read.
    """

    def __init__(
        self, R: int, dtype: torch.dtype, device: torch.device, params=(), cleared: bool = True
    ):
        self.R, self.dtype = R, dtype
        self.scratch = torch.empty(3 * max(R, 1), dtype=torch.int64, device=device)
        memset(self.scratch if cleared else self.scratch[: max(R, 1)], 0)
        words = self.scratch[:R].view(torch.int32)  # R exponents, then R flags
        self.emax, self.flags = words[:R], words[R : 2 * R]
        self.lo, self.hi = self.scratch[R : 2 * R], self.scratch[2 * R : 3 * R]
        self.touched = None
        if not cleared:
            self.touched = torch.empty(-(-R // CHUNK) + 1, dtype=torch.uint8, device=device)
            memset(self.touched, 0)
        self.key = {"dtypes": (FLOATS[dtype],), "params": tuple(params)}

    def finish(self, scale: tuple = NO_SCALE) -> torch.Tensor:
        """The ``R`` sums, each divided as it is written where ``scale`` (:func:`scale_args`)
        gives a divisor; shape (R,), :attr:`dtype`."""
        out = torch.empty(self.R, dtype=self.dtype, device=self.scratch.device)
        divisor, per, count = scale
        launch(
            "rowsum",
            "gs_rowsum_finish",
            self.R,
            self.emax,
            self.flags,
            self.lo,
            self.hi,
            self.R,
            out,
            0 if self.touched is None else self.touched,
            divisor,
            per,
            count,
            **self.key,
        )
        return out


def scale_args(scale, dtype: torch.dtype, device, R: int, batches=None) -> tuple | None:
    """The finish's divisor arguments ``(scale, per, count)`` for row sums of ``R`` rows
    divided by ``scale`` (``SLICE_REDUCE``'s, the ``scaled_row_sums`` pass's): a 0-dim tensor
    for every row, or a super-batch's ``(N,)``, one for each mini-batch's ``n`` rows; None
    where the kernel cannot divide as the program does (another dtype, whose promotion torch
    does; a host value, which torch's division multiplies by its reciprocal; another shape):
    the caller divides with torch (``fused_reduce.divided``)."""
    if scale is None:
        return NO_SCALE
    if not isinstance(scale, torch.Tensor) or scale.dtype != dtype or scale.device != device:
        return None
    if scale.dim() == 0:
        return scale, max(R, 1), 1
    if batches is not None and tuple(scale.shape) == (batches[0],):
        return scale.contiguous(), max(batches[1], 1), batches[0]
    return None


def edge_row_sums(
    rows: torch.Tensor, values, R: int, dtype: torch.dtype, scale: tuple = NO_SCALE
) -> torch.Tensor:
    """Per row ``r < R``: the exact sum of ``values[e]`` over the edges ``e`` with
    ``rows[e] == r`` (``values`` None: 1.0 each); shape (R,), ``dtype``. ``scale``
    (:func:`scale_args`, or ``(divisors, 1, R)``: one a row): each sum divided as the
    finish writes it, the bits of a dense row-sum vector divided by the same scale."""
    s = RowSums(R, dtype, rows.device)
    rows = rows.to(torch.int64).contiguous()
    v = 0 if values is None else values.to(dtype).contiguous()
    E = rows.numel()
    launch("rowsum", "gs_rowsum_edges_exponents", E, rows, v, E, s.emax, s.flags, **s.key)
    launch("rowsum", "gs_rowsum_edges_add", E, rows, v, E, s.emax, s.lo, s.hi, **s.key)
    return s.finish(scale)


#: blocks of the every-edge sums' launches at most: each thread adds its terms before its
#: one atomic (a warp's, combined), so a fixed grid bounds the atomics on the sum's word
TOTAL_GRID = 1024


def edge_total(values, E: int, dtype: torch.dtype, device) -> torch.Tensor:
    """The exact sum of a matrix's ``E`` edge values (``values`` None: 1.0 each), a 0-dim
    tensor of ``dtype``: the bits of ``gsample.backend.torch.compute.exact_total`` (the same
    fixed point, exponent and rounding), in any order of the terms. No read-back."""
    s = RowSums(1, dtype, device)
    v = 0 if values is None else values.to(dtype).contiguous()
    grid = max(1, min(-(-E // BLOCK), TOTAL_GRID))
    launch("rowsum", "gs_total_edges_exponents", E, v, E, s.emax, s.flags, grid=grid, **s.key)
    launch("rowsum", "gs_total_edges_add", E, v, E, s.emax, s.lo, s.hi, grid=grid, **s.key)
    return s.finish().reshape(())
