"""``A.temporal_sample`` with uniform draws as two kernels (``kernels/temporal.cu``).

The definition is the torch backend's (:mod:`gsample.backend.torch.temporal`): the same
candidates (a binary search in each column's time order, built once per graph by
:func:`~gsample.backend.torch.temporal.time_order`), the same keys (a seed's columns draw
with ``combine(op key, seed)`` and their rank among the seed's columns; a super-batch's with
their batch's), the same Floyd draws, the result in CSC order: bit for bit its samples.

``gs_temporal_count`` (a thread per column; ``gs_temporal_count_bounded`` for a bounded
frontier and a device key, the same code per column) checks the frontier's ids (a bad one is
an empty column, flagged), searches its candidates, counts its draws and makes its key;
``gs_temporal_draw`` (a warp per column) draws, maps the draws to edges and writes them in
CSC order. Two implementations share them (and their host code, :class:`_Call`):

- :func:`temporal_sample`, the exact one: one read-back between the kernels takes the
  result's size with the flags, so a call with a bad id raises before anything is drawn,
  and a frontier whose (batch, seed) groups are not in ascending order is ranked by the
  torch code.
- :func:`temporal_sample_sync_free` (``Impl.sync_free``): no read-back. It takes a frontier
  that is a :class:`~gsample.formats.bounded.BoundedIds` (``time`` and ``seed`` buffers
  aligned with it, as the previous hop's ``first_reached`` gives them) or a tensor, reads the
  op's key from the device (:class:`~gsample.base.random.DeviceKey`: a replayed CUDA graph
  takes new keys), allocates ``k`` edge slots per column of the frontier's buffer and returns
  a :class:`~gsample.formats.bounded.BoundedCSC`. Its flags are deferred
  (:func:`gsample.base.validate.fail_if`): a bad id raises an ``IndexError`` naming ``cols``
  and a frontier out of (batch, seed) order (which it cannot rank without a read-back) a
  ``ValueError`` naming ``seed``, with the program's one read-back.

What the kernels do not take runs the torch code on the device: weighted draws (``probs``,
registered ``without``), ``k = -1`` (every candidate: no draw) or more than
:data:`_MOST_DRAWS`, a graph with a row or column space of its own, int32 indices, and times
of two dtypes (the sync-free implementation then trims its inputs, one read-back, and runs
the exact one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from gsample.backend.cuda.module import launch as _launch
from gsample.backend.cuda.module import memset as _memset
from gsample.backend.cuda.nodewise import _at, _id_error, _too_large, exact
from gsample.backend.registry import cuda_impl
from gsample.backend.torch import temporal as reference
from gsample.backend.torch.batched import encode_columns
from gsample.base import validate as V
from gsample.base.random import MASK64, BatchKeys, DeviceKey, batch_ptr
from gsample.base.readback import refuse_capture
from gsample.formats.bounded import BoundedCSC, BoundedIds
from gsample.formats.csc import CSC, segment_ptr
from gsample.ir import Op

_TYPES = {torch.int64: "long long", torch.float64: "double"}
#: draws per column above which one lane's insertion sort (quadratic) gives way to torch's
_MOST_DRAWS = 1024

#: the sync-free implementation's message for a frontier its kernel cannot rank
ORDER_ERROR = (
    "seed: under the sync-free runtime temporal_sample needs the columns of each "
    "(mini-batch, seed) group together and the groups in ascending order, as "
    "disjoint_sample's frontiers are; for other orders pass "
    "gs.compile(..., runtime=Options(sync_free=False))"
)


def _kernels_take(A: CSC, k: int, time, edge_time) -> bool:
    if k < 0 or k > _MOST_DRAWS or A.row_ids is not None or A.col_ids is not None:
        return False
    if A.indptr.dtype != torch.int64 or not A.indptr.is_cuda:
        return False
    if time is None:
        return True
    return reference.wide(time).dtype == reference.wide(edge_time).dtype


@dataclass
class _Times:
    """What the kernels read of the times: the graph's time order (``order``, ``stime``),
    the columns' times ``t`` (widened as the torch code compares them), the window and the
    kernels' dtype option (all None / 0 / empty without times)."""

    order: torch.Tensor | None = None
    stime: torch.Tensor | None = None
    t: torch.Tensor | None = None
    window_on: int = 0
    span: float | int = 0
    dtype: dict | None = None

    @classmethod
    def of(cls, A: CSC, time, edge_time, window) -> _Times:
        if time is None:
            return cls(dtype={})
        to = reference.time_order(A, edge_time)
        t = reference.wide(time).contiguous()
        # the span in the times' type (a kernel argument's bits: a double for float times)
        span = float(window or 0) if t.is_floating_point() else int(window or 0)
        dtype = {"dtypes": (_TYPES[to.time.dtype],)}
        return cls(
            to.order.contiguous(), to.time.contiguous(), t, int(window is not None), span, dtype
        )


#: the CUDA module's launch and memset (a test passes a CPU build's)
CUDA = (_launch, _memset)


@dataclass
class _Call:
    """One call as the kernels take it (shared by the exact and the sync-free paths)."""

    A: CSC
    k: int
    replace: bool
    last: int
    times: _Times
    launch: Callable
    memset: Callable

    @classmethod
    def of(cls, A, k, replace, time, edge_time, strategy, window, kernels) -> _Call:
        times = _Times.of(A, time, edge_time, window)
        return cls(A, k, bool(replace), int(strategy == "last"), times, *kernels)

    def count(self, cols, M, seed, keyed=True, keys=None, key=0, bounded=None):
        """The count kernel over a frontier buffer ``cols``: ``(lo, cand, count, bases,
        positions, err)`` (the keys None unless ``keyed``). Keys from the host (``keys``: a
        super-batch's, else ``key``), or with ``bounded`` ``(ncols, device key, clamped
        ids out)``, the sync-free kernel's: ``ncols`` columns real, keys read from the
        device. One allocation: candidates' start, their count, the draws' count, the
        columns' keys (base, position), and the flags (bad ids, a frontier out of (batch,
        seed) order)."""
        C, t, launch = cols.numel(), self.times, self.launch
        work = torch.empty((5 if keyed else 3) * C + 6, dtype=torch.int64, device=cols.device)
        lo, cand, count = work[:C], work[C : 2 * C], work[2 * C : 3 * C]
        bases = work[3 * C : 4 * C] if keyed else None
        positions = work[4 * C : 5 * C] if keyed else None
        err = work[-6:]
        self.memset(err, 0)
        A, seed, kb, kp = self.A, _null(seed), _null(bases), _null(positions)
        # fmt: off
        if bounded is None:
            launch("temporal", "gs_temporal_count", C, A.indptr.contiguous(), cols, C,
                   A.num_nodes, M, _null(t.t), _null(t.stime), t.window_on, t.span, self.last,
                   self.k, self.replace, seed, _null(keys), key, lo, cand, count, kb, kp, err,
                   **t.dtype)
        else:
            ncols, dkey, ids = bounded
            launch("temporal", "gs_temporal_count_bounded", C, A.indptr.contiguous(), cols,
                   C, _null(ncols), A.num_nodes, M, _null(t.t), _null(t.stime), t.window_on,
                   t.span, self.last, self.k, self.replace, seed, dkey, lo, cand, count, kb, kp,
                   ids, err, **t.dtype)
        # fmt: on
        return lo, cand, count, bases, positions, err

    def draw(self, lo, cand, indptr, key, bases, positions, M, pos, cols=None, rows=None):
        """``gs_temporal_draw``: each column's edges at ``indptr`` in ``pos`` (and, with
        ``rows``, their rows, encoded by the clamped columns ``cols`` in a super-batch)."""
        C, launch = lo.numel(), self.launch
        graph_rows = self.A.rows.contiguous() if rows is not None else None
        # fmt: off
        launch("temporal", "gs_temporal_draw", C * 32, lo, cand, indptr, C,
               _null(self.times.order), self.k, self.replace, key, _null(bases),
               _null(positions), _null(graph_rows), _null(cols), self.A.num_nodes, M, pos,
               _null(rows), **self.times.dtype)
        # fmt: on

    def result(self, indptr, rows, pos, col_ids, M) -> CSC:
        """The sampled CSC of edge positions ``pos`` (row space: all nodes)."""
        values, eids = self.A.values, self.A.eids
        eids = pos if eids is None else _at(eids, pos)
        # CSC.of: no row space (all nodes), the frozen dataclass made without its __init__
        return CSC.of(M, indptr, rows, None, col_ids, _at(values, pos), eids)


@cuda_impl(Op.TEMPORAL_SAMPLE, batch_keys=True, checks=("cols",), without=("probs",))
def temporal_sample(
    A: CSC,
    cols: torch.Tensor,
    k: int,
    replace: bool,
    key,
    probs: torch.Tensor | None = None,
    time: torch.Tensor | None = None,
    edge_time: torch.Tensor | None = None,
    seed: torch.Tensor | None = None,
    strategy: str = "uniform",
    window: float | None = None,
) -> CSC:
    """The uniform sample of :func:`gsample.backend.torch.temporal.temporal_sample` (same
    parameters but ``probs``; same result, bit for bit), as kernels and one read-back.

    Parameters
    ----------
    A : CSC
        The graph.
    cols : LongTensor, shape (C,)
        The frontier (ids ``b * n + v`` with a super-batch's :class:`BatchKeys`); its ids are
        checked by the first kernel (``IndexError`` naming ``cols``).
    k, replace, key, time, edge_time, seed, strategy, window
        As the torch implementation.
    probs : None
        Weighted draws are the torch code's (registered ``without=("probs",)``).

    Returns
    -------
    CSC
        ``A``'s row space, column space ``cols``; each column's selected edges in CSC order.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> A = A.with_edge_time(torch.arange(A.num_edges) % 10).to("cuda")  # doctest: +SKIP
    >>> et = A.edge_time[A.edges()[2]]  # doctest: +SKIP
    >>> cols, t = seeds.cuda(), torch.tensor([5, 5, 8], device="cuda")  # doctest: +SKIP
    >>> slot = A.positions(cols)  # doctest: +SKIP
    >>> with gs.use_backend("cuda"):  # doctest: +SKIP
    ...     s = A.temporal_sample(cols, 10, time=t, edge_time=et, seed=slot)
    """
    aligned(cols.shape[0], time, seed)
    if probs is not None or not _kernels_take(A, k, time, edge_time):  # checks=("cols",)
        copies = key.copies if isinstance(key, BatchKeys) else 1
        cols = V.ids(cols, "cols", A.num_nodes * copies, cols.device, allow_empty=True)
        return reference.temporal_sample(
            A, cols, k, replace, key, probs, time, edge_time, seed, strategy, window
        )
    return run_exact(A, cols, k, replace, key, time, edge_time, seed, strategy, window)


def run_exact(A, cols, k, replace, key, time, edge_time, seed, strategy, window, kernels=CUDA):
    """:func:`temporal_sample`'s kernel path (``kernels``: :data:`CUDA`'s launch and memset,
    or a test's CPU build's): one read-back."""
    aligned(cols.shape[0], time, seed)
    call = _Call.of(A, k, replace, time, edge_time, strategy, window, kernels)
    batches = isinstance(key, BatchKeys)
    n = A.num_nodes
    M = n * key.copies if batches else n
    cols = cols.to(torch.int64).contiguous()
    dev = cols.device
    seed = None if seed is None else seed.to(torch.int64).contiguous()
    keyed = batches or seed is not None  # per-column keys, made by the count kernel
    keys = key.bases(dev) if batches else None
    scalar = 0 if batches else key & MASK64
    lo, cand, count, bases, positions, err = call.count(cols, M, seed, keyed, keys, scalar)
    indptr = segment_ptr(count)
    # the one read-back: the size, with the flags
    total, *flags, unsorted = torch.cat([indptr[-1:], err[:5], err[5:6]]).tolist()
    if flags[4]:
        raise IndexError(_id_error("cols", M)(flags))
    if keyed and unsorted:  # columns not grouped by (batch, seed): ranked by the torch code
        batch = cols // n if batches else None
        if seed is not None:
            ckey = reference.seed_keys(key, seed, batch)
        else:
            ckey = key.columns(cols, batch, batch_ptr(batch, key.copies))
        bases, positions = ckey.base.contiguous(), ckey.position.contiguous()
    pos = torch.empty(total, dtype=torch.int64, device=dev)
    call.draw(lo, cand, indptr, scalar, bases, positions, M, pos)
    nodes = cols - (cols // n) * n if batches else cols
    out = call.result(indptr, A.rows[pos], pos, nodes, n)
    return encode_columns(out, cols, n, key.copies) if batches else out


@cuda_impl(
    Op.TEMPORAL_SAMPLE,
    sync_free=True,
    bounded_out=True,
    checks=("cols",),
    # ranks a seed's columns by a binary search: seeds ascending within each mini-batch
    # (disjoint_sample's slots); others are ranked by the exact implementation
    without=("probs", "seed:unordered"),
)
def temporal_sample_sync_free(
    A: CSC,
    cols,
    k: int,
    replace: bool,
    key: DeviceKey,
    time=None,
    edge_time: torch.Tensor | None = None,
    seed=None,
    strategy: str = "uniform",
    window: float | None = None,
):
    """:func:`temporal_sample` without a read-back: the same sample (bit for bit) in
    bounded buffers.

    Parameters
    ----------
    A : CSC
        The graph.
    cols : LongTensor (C,) or BoundedIds
        The frontier (ids ``b * n + v`` in a super-batch). Its ids are checked by the count
        kernel (a deferred ``IndexError`` naming ``cols``): a bad one is an empty column of
        id 0 in the result's ``col_ids``. Each (mini-batch, seed) group's columns together
        and the groups in ascending order (else a deferred ``ValueError`` naming ``seed``).
    time, seed : Tensor (C,) or BoundedIds, optional
        Each column's time and seed index, buffers aligned with ``cols``' (a
        ``BoundedIds`` shares its count).
    edge_time, strategy, window, k, replace
        As the torch implementation.
    key : gsample.base.random.DeviceKey
        The op's key, read from the device (a super-batch's: ``copies`` mini-batches of
        ``num_nodes`` nodes).

    Returns
    -------
    BoundedCSC
        ``C`` columns (the frontier's buffer, ``ncols`` real: padding columns empty),
        ``k`` edge slots per column; row space of all nodes (encoded in a super-batch).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> A = A.with_edge_time(torch.arange(A.num_edges) % 10).to("cuda")  # doctest: +SKIP
    >>> et = A.edge_time[A.edges()[2]]  # doctest: +SKIP
    >>> cols, t = seeds.cuda(), torch.tensor([5, 5, 8], device="cuda")  # doctest: +SKIP
    >>> slot = A.positions(cols)  # doctest: +SKIP
    >>> with gs.use_backend("cuda"):  # compiled: bounded frontiers  # doctest: +SKIP
    ...     s = A.temporal_sample(cols, 10, time=t, edge_time=et, seed=slot)
    """
    C = _buffer(cols).numel()
    aligned(C, time, seed)
    if (
        not _kernels_take(A, k, _buffer(time), edge_time)
        or A.rows.dtype != torch.int64
        or _too_large(C * k, A.indptr.device)
    ):
        refuse_capture()  # the exact code reads sizes back
        c, t, s = (exact(x) for x in (cols, time, seed))
        out = temporal_sample(A, c, k, replace, key.host(), None, t, edge_time, s, strategy, window)
        return _padded(out, C, cols.count if isinstance(cols, BoundedIds) else None)
    return run_sync_free(A, cols, k, replace, key, time, edge_time, seed, strategy, window)


def aligned(C: int, time, seed) -> None:
    """Refuse ``time`` or ``seed`` (tensors or bounded buffers) that are not one value per
    column of a frontier buffer of ``C`` columns, or of the wrong dtype (host metadata only:
    the kernels read ``time[c]`` and ``seed[c]`` for every column ``c < C``)."""
    for name, x in (("time", time), ("seed", seed)):
        t = _buffer(x)
        if t is None:
            continue
        if name == "seed" and (t.dtype == torch.bool or t.is_floating_point() or t.is_complex()):
            raise TypeError(f"seed: seed indices must be an integer tensor, got dtype {t.dtype}")
        if t.dim() != 1 or t.shape[0] != C:
            raise ValueError(
                f"{name}: expected one value per column of the frontier (shape ({C},)), got "
                f"shape {tuple(t.shape)}"
            )


def _padded(out: CSC, C: int, ncols) -> CSC | BoundedCSC:
    """The exact fallback's sample over a bounded frontier's buffer of ``C`` columns (empty
    padding columns of id 0, ``ncols`` real), so that what the next op reads beside it (the
    frontier's slots and times, buffers of ``C``) stays aligned with its columns."""
    if ncols is None or out.num_cols == C:
        return out if ncols is None else BoundedCSC(out, ncols)
    pad = C - out.num_cols
    return BoundedCSC(
        CSC(
            num_nodes=out.num_nodes,
            indptr=torch.cat([out.indptr, out.indptr[-1:].expand(pad)]),
            rows=out.rows,
            row_ids=out.row_ids,
            col_ids=torch.cat([out.col_ids, out.col_ids.new_zeros(pad)]),
            values=out.values,
            eids=out.eids,
        ),
        ncols,
    )


def run_sync_free(A, cols, k, replace, key, time, edge_time, seed, strategy, window, kernels=CUDA):
    """:func:`temporal_sample_sync_free`'s kernel path (``kernels`` as :func:`run_exact`'s):
    no read-back."""
    aligned(_buffer(cols).shape[0], time, seed)
    call = _Call.of(A, k, replace, _buffer(time), edge_time, strategy, window, kernels)
    ncols = next((x.count for x in (cols, seed, time) if isinstance(x, BoundedIds)), None)
    buf = _buffer(cols).to(torch.int64).contiguous()
    C, dev = buf.numel(), buf.device
    M = A.num_nodes * key.copies
    seed = None if seed is None else _buffer(seed).to(torch.int64).contiguous()
    # the result's indptr (C + 1) and clamped columns (C) in one allocation
    indptr, col_ids = torch.empty(2 * C + 1, dtype=torch.int64, device=dev).split((C + 1, C))
    bounded = (ncols, key.tensor, col_ids)
    lo, cand, count, bases, positions, err = call.count(buf, M, seed, bounded=bounded)
    V.fail_if(err[4:5], IndexError, _id_error("cols", M), err[:4])
    V.fail_if(err[5:6], ValueError, ORDER_ERROR)
    call.memset(indptr[:1], 0)
    torch.cumsum(count, 0, out=indptr[1:])
    E = C * k if A.nnz else 0  # padding slots gather at position 0: an edge of the graph
    slots = torch.empty(2 * E, dtype=torch.int64, device=dev)
    pos, rows = slots[:E], slots[E:]
    call.memset(pos, 0)
    call.draw(lo, cand, indptr, 0, bases, positions, M, pos, col_ids, rows)
    return BoundedCSC(call.result(indptr, rows, pos, col_ids, M), ncols)


def _buffer(x):
    """A bounded value's buffer (a tensor or None as it is)."""
    return x.data if isinstance(x, BoundedIds) else x


def _null(t: torch.Tensor | None):
    """A kernel's optional array argument: the tensor, or a null pointer."""
    return 0 if t is None else t


__all__ = [
    "CUDA",
    "ORDER_ERROR",
    "run_exact",
    "run_sync_free",
    "temporal_sample",
    "temporal_sample_sync_free",
]
