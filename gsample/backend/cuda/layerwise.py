"""Layer-wise sampling on the GPU without the frontier's slice (``kernels/layerwise.cu``):
``A[:, cols].sum(axis=1)`` (``SLICE_REDUCE``), ``A[:, cols].collective_sample(k)``, and
``A[rows, cols]`` (``SLICE_ROWS_COLS``: the same kept-edge kernels, the rows given).

Every kernel runs over the frontier's edges in tiles of equal size (the frontier's edge
pointer, one single-pass scan, says which column an edge belongs to), not a block per column:
on an R-MAT graph a hub's column of 10**5 edges would keep one block busy while the rest of
the GPU idled, and that one block would set the layer's time.

* ``slice_reduce`` (sum over rows) is sync-free for one mini-batch: two passes over the
  frontier's edges and one over the rows, the exact sums of :mod:`.rowsum` (the same bits as
  the row sums of the built slice, ``compute.reduce``), whose scratch is cleared only where
  they write and read only in the chunks of rows they wrote; it takes a bounded frontier. A
  super-batch's (an encoded frontier over N graphs' rows, whose accumulators missed the L2)
  goes by chunk of rows, with one read-back of its term count (:func:`_chunked_row_sums`):
  the same bits. ``slice_total`` (each mini-batch's sum of the frontier's edges) is two
  passes too; a super-batch's, where the row sums of its frontier come next (LADIES' ``p /
  p_total``), takes them in the chunk count and fill of those row sums (``FUSE_TOTALS``).
* ``slice_collective_sample`` (without replacement) runs in two phases, two steps of a
  lowered program: :func:`collective_start` queues every launch up to the kept counts and
  reads nothing back (a CUDA graph captures it: one per layer of LADIES), and
  :func:`collective_finish` reads back once, before the output is allocated: the frontier's
  edges, its candidate rows and the kept edges (with every check flag pending, so a bad
  ``node_probs`` raises there). The draws are the torch backend's keys
  (``select.Draws.row_keys``), the ``k`` smallest chosen by an exact radix select over the
  candidates' keys, compacted by batch (:mod:`.topk`, in a super-batch or a graph being
  captured), or by ``torch.topk`` over a key per row of the row space (the largest int64
  for a row that is not a candidate; one mini-batch run eagerly: fewer launches); keys of
  distinct rows differ but for a 64-bit hash collision, so samples equal the torch
  backend's. The kept-edge passes test a row's bit (a bit per row of the row space, in the
  L2) before they read its position. They count the kept edges per column, and the finish
  takes them in the frontier's order in a second pass (a super-batch's from a mask of them,
  :func:`_kept_mask`: the rows tested once after the read-back); a super-batch that keeps few
  of its frontier's edges lists them instead, and the finish sorts the list
  (:func:`_list_room`: a pass over the frontier's edges less).

A super-batch (a :class:`~gsample.base.random.DeviceKey` of ``copies`` mini-batches) runs the same
kernels over the block-diagonal row space, each batch drawing its ``k`` rows among its own
(one select over all of them). Other inputs (replacement, a sub-matrix,
other reductions) run the exact implementations.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field

import torch

from gsample.backend.cuda import compute, extract, sampling, topk
from gsample.backend.cuda.extract import _index_arrays, _params
from gsample.backend.cuda.module import launch, memset
from gsample.backend.cuda.nodewise import _at, _frontier, _id_error, _opt, exact
from gsample.backend.cuda.rowsum import CHUNK as _CHUNK
from gsample.backend.cuda.rowsum import FLOATS as _FLOATS
from gsample.backend.cuda.rowsum import NO_SCALE, RowSums, scale_args
from gsample.backend.registry import cuda_impl
from gsample.backend.torch import fused_reduce
from gsample.base import validate as V
from gsample.base.random import DeviceKey
from gsample.base.readback import refuse_capture
from gsample.formats.bounded import COPY_OUT, BoundedIds, PendingSizes, copy_all
from gsample.formats.csc import CSC
from gsample.ir import Op
from gsample.ir.checks import NO_POSITIVE_ROW

_THREADS = 256
_ITEMS = 4  # GS_ITEMS of kernels/layerwise.cu
_TILE = _ITEMS * _THREADS  # frontier edges per tile (GS_ITEMS per thread)
# rounds of items a tile of gs_frontier_rows / gs_kept_append, and of the row sums' chunk
# passes and the totals of kernels/rowsum.cu (_rounds): up to 4, as many as GS_TILES_OF
# takes; a round shares the tile's column search and staging with the others
_MAX_ROUNDS = 4
_GRID = 1024  # blocks of the kernels whose edge count stays on the device
_NOT_A_ROW = 2**63 - 1  # the sort key of a row that is not a candidate
#: room for the kept edges of a super-batch's collective sample as a list (_list_room):
#: _KEPT_ROOM a draw, at least _KEPT_MIN (LADIES on the products-sized R-MAT keeps about 3
#: a draw); past it, the finish counts them per column (a pass over the frontier's edges)
_KEPT_ROOM, _KEPT_MIN = 8, 1 << 16
#: a list only while the last sample kept at most one frontier edge in _LIST_SHARE
_LIST_SHARE = 16
#: a super-batch's collective sample writes its kept edges (counted per column) from a mask
#: of them (gs_kept_mask_warps: the one pass after the read-back that tests rows, then
#: gs_kept_masked_warps) rather than by gs_kept_edges (a row tested again, a look-back); past
#: its kept list's room the mask gives the column pointer too. False: the old finish, for an
#: A/B. The mask passes take a warp to a run of consecutive tiles, each warp's column cursor
#: moving forward through them (no search of the frontier's pointer a tile, no staging, no
#: block barrier)
MASK_FINISH = True
#: blocks an SM of the warp passes on sm_90 (GS_WARPS_MIN_BLOCKS of kernels/layerwise.cu):
#: their grid is one wave of them, each warp a run of tiles as long as every other's
_WARP_BLOCKS = 6
#: (graph's indptr address, key prefix, k, copies) -> (kept edges, frontier edges) of the
#: op's last super-batch
_LAST_KEPT: dict = {}
#: how collective sampling picks each batch's k smallest keys: "radix" (kernels/topk.cu),
#: "torch" (torch.topk) or "auto": radix for a super-batch or inside a CUDA graph capture,
#: torch.topk for one mini-batch run eagerly (a super-batch's row space is N graphs', where
#: torch.topk's passes over every key cost most; one at a time, the radix select's eight
#: launches cost more host time than they save)
SELECT = "auto"
#: rounds of items a tile of the exact sums' passes over a frontier's edges
#: (gs_rowsum_chunk_counts, gs_rowsum_chunk_fill, gs_total_*): "auto" (_rounds, as the
#: candidate bits and the kept list take) or a number from 1 (a round a tile) to _MAX_ROUNDS;
#: the same bits either way (the sums are order-free)
SUM_ROUNDS = "auto"
#: a super-batch's totals (``SLICE_TOTAL``) taken by the passes that place its row sums' terms
#: by chunk (gs_rowsum_chunk_counts_total / _fill_total) where the same frontier's row sums
#: (``SLICE_REDUCE``) come next, as LADIES' normaliser and probabilities do: the totals' two
#: passes over the frontier's edges (gs_total_*) not run, the same bits
#: (:func:`_totals_with_terms`). False: the totals' own passes, for an A/B
FUSE_TOTALS = True
#: (graph's indptr and values addresses, copies, n) -> whether the last super-batched
#: slice_total of that graph was followed by a slice_reduce of the same frontier (learned by
#: slice_reduce: the first super-batch computes its totals on their own)
_PAIRED: dict = {}
#: id(frontier) -> a super-batched slice_total's (graph, frontier, batches, versions, scope)
#: and the row sums' terms it placed (None: its totals' own passes), for the slice_reduce of
#: that frontier that follows (by the frontier: another call's, a pipelined loader's other
#: lane, may run between them); the scope (:func:`_scope`: the call's deferred-check record
#: and the stream) keeps an entry to the call and stream that made it (a frontier object
#: reused by another call, a static buffer a graph rewrites without a version, or another
#: thread's stream never takes it); an entry goes when its frontier does (its terms freed)
_PLACED: dict = {}
_PLACED_LOCK = threading.Lock()
#: the kernels keep a chosen row's position among the chosen (``newpos``) as int32, and the
#: radix select counts a batch's candidates per digit in uint32: a sample that could pass
#: these runs the exact implementation (docs/guide/large-graphs.md, "64-bit offsets")
_MAX_CHOSEN, _MAX_CANDIDATES = 2**31 - 1, 2**32 - 1
#: a super-batch's ``A[rows, cols]`` maps its kept edges' rows to positions through an int32
#: array over its row space (``copies * n`` entries) up to _NEWPOS_MAX entries (1 GiB), and
#: up to _NEWPOS_PER_EDGE entries a kept edge (4 bytes a row against the 16 bytes an edge
#: the hash table's path moves: it copies the kept edges' rows and writes their positions);
#: else by a hash table of the rows
_NEWPOS_MAX, _NEWPOS_PER_EDGE = 1 << 28, 4


def _graph(A) -> bool:
    return isinstance(A, CSC) and A.indptr.is_cuda and A.row_ids is None and A.col_ids is None


def _frontier_ptr(indptr, buf: torch.Tensor, ncols, n: int, M: int) -> torch.Tensor:
    """The frontier's edge pointer (C + 1 entries: its columns' edges, padding columns none),
    in one launch (a single-pass scan). The kernel also checks the ids against ``[0, M)``
    (``M``: the graph's nodes times the mini-batches), whoever made them: a bad one is an
    empty column, and a deferred ``fail_if`` names it."""
    C = buf.numel()
    ptr = torch.empty(C + 1, dtype=torch.int64, device=buf.device)
    if C == 0:
        memset(ptr, 0)
        return ptr
    grid = -(-C // _THREADS)
    state = torch.empty(1 + grid + 5, dtype=torch.int64, device=buf.device)
    memset(state, 0)
    err = state[1 + grid :]
    launch(
        "layerwise",
        "gs_frontier_ptr",
        grid * _THREADS,
        indptr,
        buf,
        C,
        _opt(ncols),
        n,
        state,
        ptr,
        M,
        err,
        block=_THREADS,
        grid=grid,
        params=_params(indptr),
    )
    V.fail_if(err[4:5], IndexError, _id_error("cols", M), err[:4])
    return ptr


# ----------------------------------------------------------------------------- row sums
def _exact_cols(A: CSC, cols, batches) -> torch.Tensor:
    """The frontier's ids trimmed and checked for the exact implementations, which read
    sizes back: not in a CUDA graph."""
    refuse_capture()
    trimmed = exact(cols)
    V.ids(trimmed, "cols", A.num_nodes * (batches[0] if batches else 1), trimmed.device)
    return trimmed


# the frontier's ids are checked by gs_frontier_ptr (the program's check step only converts
# them: an aminmax, two comparisons and a clamp less a call)
# a super-batch's row sums go by chunk of rows, with one read-back of their terms' count
@cuda_impl(Op.SLICE_REDUCE, sync_free=True, bounded_out=False, checks=("cols",), syncs_batched=True)
def slice_reduce(A: CSC, cols, op: str, axis: int, batches=None, scale=None) -> torch.Tensor:
    """``A[:, cols].<op>(axis)`` (see ``gsample.backend.torch.fused_reduce``), divided by
    ``scale`` where given; sums over rows of the graph run the sync-free kernels, whose
    finish divides each row as it writes it (the program's ``p / c``: the same bits, no
    pass over the rows of its own), the rest the exact implementations and torch's
    division (``fused_reduce.divided``)."""
    vals = A.values
    ok = (
        op == "sum"
        and axis == 1
        and _graph(A)
        and (vals is None or (vals.dtype in _FLOATS and vals.dim() == 1))
    )
    if not ok:
        trimmed = _exact_cols(A, cols, batches)
        if batches is None:
            out = compute.reduce(extract.slice_cols(A, trimmed), op, axis)
            return fused_reduce.divided(out, scale)
        return fused_reduce.slice_reduce(A, trimmed, op, axis, batches, scale)
    buf, ncols = _frontier(cols)
    N, n = batches if batches is not None else (1, 0)
    C = buf.numel()
    dtype = torch.float32 if vals is None else vals.dtype
    R = A.num_nodes * N
    divisor = scale_args(scale, dtype, buf.device, R, batches)
    if divisor is None:  # a divisor the finish cannot take: the sums, then torch's division
        return fused_reduce.divided(slice_reduce(A, cols, op, axis, batches), scale, batches)
    indptr, rows = _index_arrays(A)
    v = _opt(None if vals is None else vals.contiguous())
    if N > 1 and C:  # a super-batch: by chunk of rows, one read-back
        refuse_capture()
        # (switched off, an older entry is dropped all the same)
        placed = _terms_placed(A, cols, batches)
        if placed is None or not FUSE_TOTALS:  # (the ids checked by its frontier pointer)
            placed = _chunk_terms(indptr, rows, v, buf, ncols, C, n, R, dtype)
        return _chunked_row_sums(*placed, R, dtype, _params(indptr), divisor)
    # the sums cleared by pass 1 where it writes, the finish reading only the chunks it wrote
    # (one mini-batch's frontier touches a small share of the graph's rows)
    sums = RowSums(R, dtype, buf.device, _params(indptr), cleared=False)
    if C == 0:
        return sums.finish(divisor)
    key = sums.key
    ptr = _frontier_ptr(indptr, buf, ncols, n, A.num_nodes * N)  # the ids checked there
    # the edge count stays on the device: a fixed grid strides over the tiles
    launch(
        "rowsum",
        "gs_rowsum_exponents",
        _GRID * _THREADS,
        indptr,
        rows,
        v,
        buf,
        C,
        ptr,
        n,
        sums.emax,
        sums.flags,
        sums.lo,
        sums.hi,
        sums.touched,
        block=_THREADS,
        grid=_GRID,
        **key,
    )
    launch(
        "rowsum",
        "gs_rowsum_add",
        _GRID * _THREADS,
        indptr,
        rows,
        v,
        buf,
        C,
        ptr,
        n,
        sums.emax,
        sums.lo,
        sums.hi,
        block=_THREADS,
        grid=_GRID,
        **key,
    )
    return sums.finish(divisor)


# the frontier's ids are checked by gs_frontier_ptr, as for slice_reduce; a super-batch's
# may read back (FUSE_TOTALS: the row sums' terms placed)
@cuda_impl(
    Op.SLICE_TOTAL,
    sync_free=True,
    syncs=False,
    bounded_out=False,
    checks=("cols",),
    syncs_batched=True,
)
def slice_total(A: CSC, cols, op: str, batches=None) -> torch.Tensor:
    """``A[:, cols].sum()`` (see ``gsample.backend.torch.fused_reduce.slice_total``): the
    exact sum of the frontier's edge values (each mini-batch's: shape (N,), with
    ``batches``), two passes over its edges (``kernels/rowsum.cu``, ``gs_total_*``) and no
    read-back; other values run the exact implementation. A super-batch whose row sums of
    the same frontier come next (:data:`FUSE_TOTALS`) takes its totals in the passes that
    place those sums' terms instead, with their read-back (:func:`_totals_with_terms`)."""
    vals = A.values
    if not (_graph(A) and (vals is None or (vals.dtype in _FLOATS and vals.dim() == 1))):
        return fused_reduce.slice_total(A, _exact_cols(A, cols, batches), op, batches)
    buf, ncols = _frontier(cols)
    N, n = batches if batches is not None else (1, 0)
    C = buf.numel()
    dtype = torch.float32 if vals is None else vals.dtype
    indptr, rows = _index_arrays(A)
    v = _opt(None if vals is None else vals.contiguous())
    sums = RowSums(N, dtype, buf.device, _params(indptr))
    if N > 1 and C and FUSE_TOTALS and not torch.cuda.is_current_stream_capturing():
        out = _totals_with_terms(A, cols, batches, indptr, rows, v, buf, ncols, C, dtype, sums)
        if out is not None:
            return out
    elif N > 1 and C:
        _forget(cols)
    if C:
        ptr = _frontier_ptr(indptr, buf, ncols, n, A.num_nodes * N)  # the ids checked there
        sub = _sum_rounds(indptr, rows, C)
        for name, out in (
            ("gs_total_exponents", (sums.emax, sums.flags)),
            ("gs_total_add", (sums.emax, sums.lo, sums.hi)),
        ):
            # the edge count stays on the device: a fixed grid strides over the tiles
            launch(
                "rowsum",
                name,
                _GRID * _THREADS,
                indptr,
                v,
                buf,
                C,
                ptr,
                n,
                N,
                *out,
                sub,
                block=_THREADS,
                grid=_GRID,
                **sums.key,
            )
    out = sums.finish()
    return out.reshape(()) if batches is None else out


def _chunk_terms(
    indptr, rows, v, buf, ncols, C: int, n: int, R: int, dtype: torch.dtype, totals=None
) -> tuple:
    """A super-batch's nonzero row-sum terms counted and placed by chunk of rows, one
    read-back of their number (a bad frontier id raises there): ``(starts, terms)``, chunk
    k's terms ``terms[starts[k]:starts[k + 1]]`` (``gs_term_t``: a value and its row in the
    chunk). ``totals``: the :class:`RowSums` of the N mini-batches' totals (zero), which the
    same two passes take (gs_rowsum_chunk_counts_total / _fill_total)."""
    dev = buf.device
    K = -(-R // _CHUNK)
    key = {"params": _params(indptr), "dtypes": (_FLOATS[dtype],)}
    ptr = _frontier_ptr(indptr, buf, ncols, n, R)  # the ids checked there
    sub = _sum_rounds(indptr, rows, C)  # the counts and the fill: the same rounds
    starts = torch.empty(2 * (K + 1), dtype=torch.int64, device=dev)
    memset(starts, 0)
    counts, starts = starts[: K + 1], starts[K + 1 :]
    args = (indptr, rows, v, buf, C, ptr, n)  # (both passes, fused or not, take these first)
    kw = {"block": _THREADS, "grid": _GRID, **key}
    if totals is None:
        launch("rowsum", "gs_rowsum_chunk_counts", _GRID * _THREADS, *args, counts, sub, **kw)
    else:  # (blocks of _THREADS: the launch bounds' GS_SUM_THREADS)
        launch(
            "rowsum",
            "gs_rowsum_chunk_counts_total",
            _GRID * _THREADS,
            *args,
            counts,
            sub,
            totals.R,
            totals.emax,
            totals.flags,
            **kw,
        )
    torch.cumsum(counts[:K], 0, out=starts[1:])
    (terms,) = V.read_back([starts[K:]])  # (and a bad frontier id raises here)
    # a term: its value and its row in the chunk, one struct of two values' size (gs_term_t)
    found = torch.empty(
        terms, dtype=torch.int64 if dtype == torch.float32 else torch.complex128, device=dev
    )
    cursor = starts[:K].clone() if terms else None  # each chunk's next place
    if terms and totals is None:
        launch("rowsum", "gs_rowsum_chunk_fill", _GRID * _THREADS, *args, cursor, found, sub, **kw)
    elif terms:  # (none: every term zero, which adds nothing to a total either)
        total = (totals.R, totals.emax, totals.lo, totals.hi)
        launch(
            "rowsum",
            "gs_rowsum_chunk_fill_total",
            _GRID * _THREADS,
            *args,
            cursor,
            found,
            sub,
            *total,
            **kw,
        )
    return starts, found


def _chunked_row_sums(
    starts, found, R: int, dtype: torch.dtype, params, divisor: tuple = NO_SCALE
) -> torch.Tensor:
    """A super-batch's row sums from its terms placed by chunk (:func:`_chunk_terms`; the
    same bits as the passes over its row space): a block per chunk sums them in shared
    memory and writes every row of it, divided by its mini-batch's scale where ``divisor``
    (``rowsum.scale_args``) gives one."""
    K = -(-R // _CHUNK)
    out = torch.empty(R, dtype=dtype, device=starts.device)
    scale, per, count = divisor
    launch(
        "rowsum",
        "gs_rowsum_chunks",
        K * _THREADS,
        starts,
        found,
        R,
        out,
        scale,
        per,
        count,
        block=_THREADS,
        grid=K,
        params=params,
        dtypes=(_FLOATS[dtype],),
    )
    return out


def _versions(A: CSC, cols) -> tuple:
    """What an in-place write to the graph's arrays or the frontier changes."""
    frontier = (cols.data, cols.count) if isinstance(cols, BoundedIds) else (cols,)
    arrays = (A.indptr, A.rows, A.values, *frontier)
    return tuple(-1 if a is None else a._version for a in arrays)


def _scope(A: CSC) -> tuple:
    """The program call (its deferred checks' record: one a call, None outside one) and the
    stream an entry of :data:`_PLACED` belongs to: a write a version does not count (a CUDA
    graph's replay into its static buffers, a ``.data`` write) can only come from another
    call, and terms placed on another stream may not be written yet."""
    dev = A.indptr.device
    stream = torch.cuda.current_stream(dev).cuda_stream if dev.type == "cuda" else 0
    return (V.DEFERRED.get(), stream)


def _pair_key(A: CSC, batches) -> tuple:
    vals = A.values
    return (A.indptr.data_ptr(), 0 if vals is None else vals.data_ptr(), *batches)


def _drop_when_gone(key: int):
    """A weak reference's callback: the entry of a frontier that is gone dropped, its terms
    freed (no lock: one dict operation; it may run in any thread, inside a locked block)."""

    def drop(ref) -> None:
        entry = _PLACED.get(key)
        if entry is not None and entry[1] is ref:
            _PLACED.pop(key, None)

    return drop


def _forget(cols) -> None:
    """Any entry of this frontier dropped (a super-batched slice_total that placed nothing:
    no older entry may reach the row sums that follow)."""
    with _PLACED_LOCK:
        _PLACED.pop(id(cols), None)


def _totals_with_terms(
    A: CSC, cols, batches, indptr, rows, v, buf, ncols, C: int, dtype, sums
) -> torch.Tensor | None:
    """A super-batch's totals (``sums``: the N mini-batches') taken in the passes that place
    its row sums' terms (:func:`_chunk_terms`, one read-back), the terms kept for the
    ``slice_reduce`` of the same graph and frontier that comes next (:func:`_terms_placed`),
    where the last super-batch's did (:data:`_PAIRED`); None otherwise (the caller runs the
    totals' own passes: a frontier whose row sums are not taken would place its terms for
    nothing). Either way the call is noted for that ``slice_reduce``."""
    fused = _PAIRED.get(_pair_key(A, batches), False)
    placed = None
    if fused:
        N, n = batches
        placed = _chunk_terms(indptr, rows, v, buf, ncols, C, n, A.num_nodes * N, dtype, sums)
    # weakly: a graph or frontier dropped meanwhile is not kept alive, and is no match
    key = id(cols)
    frontier = weakref.ref(cols, _drop_when_gone(key))
    entry = (weakref.ref(A), frontier, batches, _versions(A, cols), _scope(A), placed)
    with _PLACED_LOCK:
        _PLACED[key] = entry
    return sums.finish() if fused else None


def _terms_placed(A: CSC, cols, batches) -> tuple | None:
    """The terms a super-batched ``slice_total`` of this frontier placed for these row sums
    (``(starts, terms)``: the same graph, frontier and batches, neither written since, in
    the same call and stream), or None; notes whether such a call came first
    (:data:`_PAIRED`)."""
    with _PLACED_LOCK:
        entry = _PLACED.pop(id(cols), None)
    same = (
        entry is not None
        and entry[0]() is A
        and entry[1]() is cols
        and entry[2] == batches
        and entry[3] == _versions(A, cols)
        and entry[4][0] is V.DEFERRED.get()
        and entry[4][1] == _scope(A)[1]
    )
    _PAIRED[_pair_key(A, batches)] = same
    if len(_PAIRED) > 1024:  # (graphs come and go: addresses reused)
        _PAIRED.clear()
    return entry[5] if same else None


# ----------------------------------------------------------------------------- collective
@dataclass
class Pending(PendingSizes):
    """:func:`collective_start`'s queued work, which :func:`collective_finish` reads back."""

    args: tuple  # (A, cols, k, replace, key, node_probs, select, in slice)
    fallback: bool  # the exact implementation runs it all in the finish
    scalars: list = field(default_factory=list)  # read back: edges, drawn, kept, flags...
    state: tuple = ()  # (buf, ncols, ptr, kept, chosen, newpos, bits, radix, room)
    weighted: bool = False  # drawn by probabilities: no positive row raises
    redo: object = None  # () -> CSC where the overflow flag is set (None: the exact sample)


def slice_collective_sample(
    A: CSC,
    cols,
    k: int,
    replace: bool,
    key: DeviceKey,
    node_probs=None,
    probs_in_slice: bool = False,
    _select: str | None = None,
) -> CSC:
    """``A[:, cols].collective_sample(k, node_probs, replace)``: ``k`` rows for the frontier,
    every frontier edge of a chosen row kept (see the module docstring); the two phases
    :func:`collective_start` and :func:`collective_finish` in one call."""
    return collective_finish(
        collective_start(A, cols, k, replace, key, node_probs, probs_in_slice, _select)
    )


def collective_start(
    A: CSC,
    cols,
    k: int,
    replace: bool,
    key: DeviceKey,
    node_probs=None,
    probs_in_slice: bool = False,
    _select: str | None = None,
) -> Pending:
    """The device part of :func:`slice_collective_sample`: candidate rows, their keys, each
    batch's ``k`` smallest, the kept counts (or list); nothing read back (a CUDA graph may capture
    it). Inputs another implementation runs (replacement, a sub-matrix, ``k == 0``, other
    probabilities) only pass through, to the finish. ``probs_in_slice``: ``node_probs`` is 0
    at every row without an edge in the slice (``passes.probs_support``), so its positive
    rows are the candidates and the slice's rows are not marked (a pass over its edges
    less)."""
    args = (A, cols, k, replace, key, node_probs, probs_in_slice, _select)
    N, n = (key.copies, key.num_nodes) if key.copies > 1 else (1, 0)
    R = A.num_nodes * N  # the (block-diagonal) row space
    probs_ok = node_probs is None or (
        node_probs.dtype in _FLOATS
        and node_probs.is_cuda
        and node_probs.dim() == 1
        and node_probs.numel() in (A.num_nodes, R)
    )
    if (
        replace
        or k == 0
        or not _graph(A)
        or not probs_ok
        or N * min(k, A.num_nodes) > _MAX_CHOSEN  # newpos: int32 positions
    ):
        return Pending(args, fallback=True)
    buf, ncols = _frontier(cols)
    C, dev = buf.numel(), buf.device
    indptr, rows = _index_arrays(A)
    params = _params(indptr)
    p = None if node_probs is None else node_probs.contiguous()
    shared = p is not None and p.numel() != R  # the batches share one
    # the candidates: rows with an edge in the slice (and p > 0); with probs_in_slice, p > 0
    cand = None
    if p is None or shared or not probs_in_slice:
        cand = torch.empty(R // 32 + 1, dtype=torch.int32, device=dev)  # a bit a row
        memset(cand, 0)
    # per column: kept edges (col_counts), then their pointer (indptr_out), then the two
    # flags of node_probs' check (gs_is_candidate); a list's count instead of the first two
    room = _list_room(indptr, key.prefix, k, N)
    scratch = torch.empty((1 if room else 2 * C + 1) + 2, dtype=torch.int64, device=dev)
    memset(scratch, 0)
    bad = scratch[-2:]
    ptr = _frontier_ptr(indptr, buf, ncols, n, R)
    if C and cand is not None:
        launch(
            "layerwise",
            "gs_frontier_rows",
            _GRID * _THREADS,
            indptr,
            rows,
            buf,
            C,
            ptr,
            n,
            cand,
            _rounds(indptr, rows),
            block=_THREADS,
            grid=_GRID,
            params=params,
        )
    dtypes = (_FLOATS[p.dtype],) if p is not None else ("float",)
    # each batch's k smallest keys among its candidates, rows ascending; R marks a draw past
    # the candidates (no read-back of their count)
    rows_per = A.num_nodes
    take = min(k, rows_per)
    overflow = None
    select = _select or SELECT
    if select == "auto":  # in a CUDA graph its launches cost nothing
        select = "radix" if N > 1 or torch.cuda.is_current_stream_capturing() else "torch"
    if select == "radix" and take < rows_per <= _MAX_CANDIDATES:  # uint32 counts
        # kernels/topk.cu over the candidates' keys, compacted by batch (batch b's from
        # b * rows_per up to its cursor)
        bounds = torch.arange(0, R, rows_per, device=dev).repeat(2)
        lo, at = bounds[:N], bounds[N:]
        found = torch.empty(2 * R, dtype=torch.int64, device=dev)
        ckeys, crows = found[:R], found[R:]
        launch(
            "layerwise",
            "gs_row_keys_compact",
            -(-R // _ITEMS),
            _opt(cand),
            R,
            _opt(p),
            shared,
            key.tensor,
            n,
            rows_per,
            at,
            ckeys,
            crows,
            bad,
            block=_THREADS,
            dtypes=dtypes,
        )
        picked, overflow = topk.smallest_compact(ckeys, crows, lo, at, N, take, R)
    else:  # a key per row (INT64_MAX: not a candidate)
        keys = torch.empty(R, dtype=torch.int64, device=dev)
        launch(
            "layerwise",
            "gs_row_sort_keys",
            R,
            _opt(cand),
            R,
            _opt(p),
            shared,
            key.tensor,
            n,
            keys,
            bad,
            dtypes=dtypes,
        )
        per = keys.view(N, rows_per)
        if take == rows_per:
            vals, at = torch.sort(per, dim=1)
        else:
            vals, at = torch.topk(per, take, dim=1, largest=False, sorted=False)
        if N > 1:
            at = at + torch.arange(0, R, rows_per, device=dev).unsqueeze(1)
        picked = torch.where(vals != _NOT_A_ROW, at, R)
    return kept_pending(
        A, args, buf, ncols, ptr, n, N, R, picked, overflow, p is not None, bad, scratch, room
    )


def _list_room(indptr, prefix: int, k: int, copies: int) -> int:
    """Room for the kept edges of a super-batch's collective sample as a list (0: counted
    per column instead; one mini-batch always is). A list, sorted in the finish, spares a
    pass over the frontier's edges where it keeps few of them (LADIES' second and third
    layers: one in 200); where the op's last super-batch (its key's ``prefix``: the epoch's
    seed and the op's ordinal) kept more than one in :data:`_LIST_SHARE` (LADIES' first
    layer: about one in five; FastGCN's second, whose hub rows keep about a million edges a
    mini-batch) the ordered passes cost less, and the room grows to what it kept."""
    if copies == 1:
        return 0
    last = _LAST_KEPT.get((indptr.data_ptr(), prefix, k, copies))
    if last is not None and last[0] * _LIST_SHARE > last[1]:
        return 0
    return max(_KEPT_ROOM * copies * k, _KEPT_MIN, 0 if last is None else 2 * last[0])


def _note_kept(indptr, prefix: int, k: int, copies: int, kept: int, edges: int) -> None:
    if len(_LAST_KEPT) >= 1024:  # (a new prefix each epoch)
        _LAST_KEPT.clear()
    _LAST_KEPT[(indptr.data_ptr(), prefix, k, copies)] = (kept, edges)


def _drawn_bits(picked: torch.Tensor, R: int) -> torch.Tensor:
    """A bit per row of the row space, set for the rows drawn (``picked``; entries ``>= R``
    are none): what the kept-edge kernels test (R / 8 bytes, L2-resident)."""
    bits = torch.empty(R // 32 + 1, dtype=torch.int32, device=picked.device)
    memset(bits, 0)
    launch("layerwise", "gs_mark_bits", picked.numel(), picked, picked.numel(), R, bits)
    return bits


def _positions(bits: torch.Tensor, R: int, room: int) -> tuple:
    """The rows drawn, ascending (``chosen``: ``room`` entries, the number of draws; the drawn
    rows, ``min(k, candidates)`` a batch, come first, and the entries after them are not
    written), and each one's position there (``newpos``: int32 per row of the row space,
    written at the drawn rows only), from the drawn rows' bits (:func:`_drawn_bits`) in one
    pass (``gs_chosen_bits``: a single-pass scan of R / 32 words).

    The rest of ``newpos`` is never read: every pass that reads a row's position (the
    kept-edge kernels) first tests the row's bit, so it is neither cleared nor scanned (a
    byte a row marked and scanned, or a clear of ``newpos``, cost a pass over the row space
    a layer: a super-batch's is ``copies`` graphs').
    """
    dev = bits.device
    words = bits.numel()
    tiles = -(-words // _TILE)
    order = torch.empty(1 + tiles, dtype=torch.int64, device=dev)
    memset(order, 0)
    chosen = torch.empty(room, dtype=torch.int64, device=dev)
    newpos = torch.empty(R, dtype=torch.int32, device=dev)
    launch(
        "layerwise",
        "gs_chosen_bits",
        tiles * _THREADS,
        bits,
        words,
        R,
        order,
        chosen,
        room,
        newpos,
        block=_THREADS,
        grid=tiles,
    )
    return chosen, newpos


def kept_pending(
    A: CSC,
    args: tuple,
    buf: torch.Tensor,
    ncols,
    ptr: torch.Tensor,
    n: int,
    N: int,
    R: int,
    picked: torch.Tensor,
    overflow,
    weighted: bool,
    bad: torch.Tensor,
    scratch: torch.Tensor,
    room: int,
    redo=None,
) -> Pending:
    """A collective sample's draws (``picked``: each batch's rows of its ``k`` smallest keys,
    ``R`` none; ``overflow`` a flag tensor or None) made into its kept counts (or list), and
    the :class:`Pending` :func:`collective_finish` reads back: what :func:`collective_start`
    and the listed sample (:mod:`.listed`) share. ``weighted``: the rows were drawn by
    probabilities (a batch with frontier edges and no positive row raises); ``bad``: the
    probabilities' two check flags; ``scratch`` and ``room`` as ``collective_start`` made them
    (:func:`_list_room`); ``redo``: what the finish runs instead where ``overflow`` is set
    (None: the exact implementation of the dense sample).

    Examples
    --------
    On a GPU, ``picked`` of shape (N, k) from :func:`gsample.backend.cuda.topk
    .smallest_compact` (the sample is ``collective_finish``'s):

    >>> pending = kept_pending(A, args, buf, None, ptr, 0, 1, R, picked, overflow, True,
    ...                        bad, scratch, 0)  # doctest: +SKIP
    >>> sample = collective_finish(pending)  # doctest: +SKIP
    """
    indptr, rows = _index_arrays(A)
    params = _params(indptr)
    C, dev = buf.numel(), buf.device
    drawn_d = picked < R  # a candidate: min(k, candidates)
    valid = drawn_d.sum().reshape(1)
    if N > 1 and weighted and C:
        # as each mini-batch checks its own: a batch with frontier edges needs a candidate
        batch = torch.div(buf, n, rounding_mode="floor").clamp_(0, N - 1)
        edges_b = torch.zeros(N, dtype=torch.int64, device=dev).index_add_(
            0, batch, ptr[1:] - ptr[:-1]
        )
        V.fail_if(((edges_b > 0) & ~drawn_d.any(dim=1)).any(), ValueError, NO_POSITIVE_ROW)
    bits = _drawn_bits(picked.reshape(-1), R)  # what the kept-edge passes test
    chosen, newpos = _positions(bits, R, picked.numel())
    if room:  # the kept edges (a chosen row's) listed by their place in the frontier
        kept_n, kept = scratch[:1], torch.empty(room, dtype=torch.int64, device=dev)
        if C:
            launch(
                "layerwise",
                "gs_kept_append",
                _GRID * _THREADS,
                indptr,
                rows,
                buf,
                C,
                ptr,
                n,
                newpos,
                _opt(bits),
                kept_n,
                room,
                kept,
                _rounds(indptr, rows),
                block=_THREADS,
                grid=_GRID,
                params=params,
            )
    else:  # counted per column (the finish takes the edges in order)
        kept = _kept_counts(indptr, rows, buf, C, ptr, n, newpos, bits, scratch[: 2 * C + 1])
        kept_n = kept[-1:]
    # read back by the finish: the frontier's edges and columns, the rows drawn and the
    # kept edges (and every pending check flag: a bad node_probs raises there)
    scalars = (
        [ptr[C:], valid, kept_n, bad[:1], bad[1:]]
        + ([ncols] if ncols is not None else [])
        + ([overflow] if overflow is not None else [])
    )
    return Pending(
        args,
        False,
        scalars,
        (buf, ncols, ptr, kept, chosen, newpos, bits, overflow is not None, room),
        weighted,
        redo,
    )


def collective_finish(pending: Pending) -> CSC:
    """The read-back of :func:`collective_start`'s sizes (and of every check flag pending),
    then the kept edges: the sample. After a replayed CUDA graph (``COPY_OUT``) the values
    it keeps from the graph's memory are copies."""
    A, cols, k, replace, key, node_probs, probs_in_slice, _select = pending.args
    if pending.fallback:
        if node_probs is not None:  # (the kernel path checks them itself)
            V.finite_nonnegative(node_probs, "node_probs")
        return sampling.slice_collective_sample(
            A,
            exact(cols),
            k,
            replace,
            key.host(),
            None if node_probs is None else exact(node_probs),
        )
    buf, _ncols, ptr, kept, chosen, newpos, bits, radix, room = pending.state
    edges, drawn, K, not_finite, negative, *rest = V.read_back(pending.scalars)
    if not_finite:
        raise ValueError("node_probs: contains NaN or infinite values")
    if negative:
        least = "" if node_probs is None else f" (min {float(node_probs.min())})"
        raise ValueError(f"node_probs: contains negative values{least}")
    if radix and rest.pop():  # too many ties (or a listed sample's full list): again
        if pending.redo is not None:
            return pending.redo()
        return slice_collective_sample(
            A, cols, k, replace, key, node_probs, probs_in_slice, _select="torch"
        )
    if pending.weighted and edges and not drawn:  # (k >= 1 here)
        raise ValueError(NO_POSITIVE_ROW)
    Cx = rest[0] if rest else buf.numel()
    cols, chosen = buf[:Cx], chosen[:drawn]
    indptr_out = None if room else kept[: Cx + 1]
    if COPY_OUT.get():  # kept: not views of the graph's memory (one copy)
        cols, chosen, *counted = copy_all([cols, chosen] + ([] if room else [indptr_out]))
        indptr_out = counted[0] if counted else None
    n = key.num_nodes if key.copies > 1 else 0
    indptr, rows = _index_arrays(A)
    if room:
        _note_kept(indptr, key.prefix, k, key.copies, K, edges)
    if room and room >= K:  # the list, in the frontier's order
        # places below 2**31 sort as int32: half the radix sort's passes and bytes
        g = kept[:K].to(torch.int32) if edges < 2**31 else kept[:K]
        g = torch.sort(g).values.to(torch.int64)
        rows_out, pos = _kept_listed(indptr, rows, cols, Cx, ptr, n, newpos, g)
        indptr_out = torch.searchsorted(g, ptr[: Cx + 1])
    else:  # counted per column; the edges in order
        masked = None
        if MASK_FINISH and (room or (n and K)):
            # a super-batch's: the mask pass tests the rows, the kept edges' pass only places
            # them (and, past the list's room, the mask gives the column pointer)
            counted, masked = _kept_mask(indptr, rows, cols, Cx, ptr, n, bits, edges, not room)
            indptr_out = counted if room else indptr_out
        elif room:  # (more than the list's room: counted now)
            indptr_out = _kept_counts(indptr, rows, cols, Cx, ptr, n, newpos, bits)
        rows_out, _, values, eids = _kept_edges(
            indptr, rows, cols, Cx, ptr, n, newpos, bits, edges, K, A.values, A.eids, masked
        )
        return CSC.of(
            A.num_nodes * max(key.copies, 1), indptr_out, rows_out, chosen, cols, values, eids
        )
    return CSC.of(
        A.num_nodes * max(key.copies, 1),
        indptr_out,
        rows_out,
        chosen,
        cols,
        _at(A.values, pos),
        pos if A.eids is None else _at(A.eids, pos),
    )


# node_probs' values are checked by gs_is_candidate (read back with the sizes): the
# program's check step does only their dtype and shape (six launches less a layer); two
# phases: a CUDA graph captures the device part (one per layer of LADIES); registered
# here, below its second phase, which the registration names
cuda_impl(
    Op.SLICE_COLLECTIVE_SAMPLE,
    sync_free=True,
    syncs=False,
    bounded_out=False,
    checks=("node_probs",),
    finish=collective_finish,
)(collective_start)


def _kept_listed(indptr, rows, cols, C: int, ptr, n: int, newpos, g) -> tuple:
    """The kept edges at the frontier's places ``g`` (ascending): each one's chosen row's
    position and graph edge (``rows_out``, ``pos``)."""
    K = g.numel()
    rows_out = torch.empty(K, dtype=torch.int64, device=g.device)
    pos = torch.empty(K, dtype=torch.int64, device=g.device)
    launch(
        "layerwise",
        "gs_kept_listed",
        K,
        indptr,
        rows,
        cols,
        C,
        ptr,
        n,
        newpos,
        g,
        K,
        rows_out,
        pos,
        params=_params(indptr),
    )
    return rows_out, pos


def _rounds(indptr, rows) -> int:
    """Rounds of items a tile of gs_frontier_rows, gs_kept_append, the row sums' chunk
    counts and fill and the totals (``kernels/rowsum.cu``) take (``sub``, 1 to
    ``_MAX_ROUNDS``): as many as keep a tile's columns (``sub * _TILE`` edges) within half
    the staging (GS_STAGE = 256 columns) where the frontier's columns are as long as the
    graph's mean (``rows`` and ``indptr`` are the graph's; the frontier's edge count is not
    read back before these passes, and a sampled frontier's columns are mostly longer)."""
    mean = rows.numel() // max(indptr.numel() - 1, 1)
    return max(1, min(_MAX_ROUNDS, mean * 128 // _TILE))


def _sum_rounds(indptr, rows, C: int) -> int:
    """Rounds of items a tile of the exact sums' passes over a frontier of ``C`` columns
    (``SUM_ROUNDS``; clamped: a tile of no round would never advance). "auto" takes
    ``_rounds`` only as far as the frontier's edges (at the graph's mean) still fill every
    block of the fixed grid: on a small frontier (one mini-batch) more rounds a tile would
    make fewer tiles than blocks and leave blocks idle."""
    if SUM_ROUNDS == "auto":
        mean = rows.numel() // max(indptr.numel() - 1, 1)
        return max(1, min(_rounds(indptr, rows), C * mean // (_TILE * _GRID)))
    return max(1, min(_MAX_ROUNDS, int(SUM_ROUNDS)))


def _kept_counts(
    indptr, rows, cols, C: int, ptr, n: int, newpos, bits, scratch=None
) -> torch.Tensor:
    """The kept edges' column pointer (``C + 1`` entries; a pass over the frontier's edges),
    in ``scratch`` (``2 * C + 1`` int64, zero: the pointer, then the counts) when given."""
    if scratch is None:
        scratch = torch.empty(2 * C + 1, dtype=torch.int64, device=cols.device)
        memset(scratch, 0)
    counts, indptr_out = scratch[C + 1 :], scratch[: C + 1]
    if C:
        launch(
            "layerwise",
            "gs_kept_counts",
            _GRID * _THREADS,
            indptr,
            rows,
            cols,
            C,
            ptr,
            n,
            newpos,
            _opt(bits),
            counts,
            block=_THREADS,
            grid=_GRID,
            params=_params(indptr),
        )
        torch.cumsum(counts, 0, out=indptr_out[1:])
    return indptr_out


_SMS: dict = {}


def _warp_grid(tiles: int, dev) -> tuple:
    """The grid (blocks of ``_THREADS``) and run (consecutive tiles a warp) of the warp mask
    passes over ``tiles`` tiles on ``dev``: at most one wave of :data:`_WARP_BLOCKS` blocks an
    SM (a warp's run is its whole share: a second wave would double the pass), at most
    ``_GRID`` blocks (the other passes' grid; a test's smaller one gives a warp several runs)
    and a tile a warp, and the run ``tiles`` over the grid's warps rounded up (at least 1)."""
    sms = _SMS.get(dev.index)
    if sms is None:
        sms = _SMS[dev.index] = torch.cuda.get_device_properties(dev).multi_processor_count
    per = _THREADS // 32
    grid = max(1, min(-(-tiles // per), _WARP_BLOCKS * sms, _GRID))
    return grid, max(1, min(-(-tiles // (grid * per)), 2**31 - 1))


def _kept_mask(
    indptr, rows, cols, C: int, ptr, n: int, bits, edges: int, counted: bool = False
) -> tuple:
    """The kept edges of a frontier of ``edges`` edges (read back) as a mask: a bit per
    frontier edge, each tile's kept count, then the tiles' prefix and the kept edges'
    column pointer from them (kernels/layerwise.cu's ``gs_kept_mask_warps``, ``gs_kept_ptr``).
    Returns ``(indptr_out, masked)``: ``C + 1`` entries, the last the kept edges (None where
    ``counted``: the caller has them); and what :func:`_kept_edges` takes to write them
    without testing a row again."""
    dev = cols.device
    tiles = -(-edges // _TILE)
    words = tiles * (_TILE // 32)
    mask = torch.empty(words, dtype=torch.int32, device=dev)
    # one allocation: each tile's kept edges, their exclusive prefix (tiles + 1), the pointer
    # (none where counted)
    lens = (tiles, tiles + 1, 0 if counted else C + 1)
    its, before, indptr_out = torch.empty(sum(lens), dtype=torch.int64, device=dev).split(lens)
    memset(before[:1], 0)
    params = _params(indptr)
    if tiles:
        args = (indptr, rows, cols, C, ptr, n, 0, bits, mask, words, its, tiles)
        grid, run = _warp_grid(tiles, dev)
        launch(
            "layerwise",
            "gs_kept_mask_warps",
            grid * _THREADS,
            *args,
            run,
            block=_THREADS,
            grid=grid,
            params=params,
        )
        torch.cumsum(its, 0, out=before[1:])
    if counted:
        return None, (mask, words, before, tiles)
    launch(
        "layerwise",
        "gs_kept_ptr",
        C + 1,
        ptr,
        C,
        mask,
        words,
        before,
        tiles,
        indptr_out,
        params=params,
    )
    return indptr_out, (mask, words, before, tiles)


def _kept_edges(
    indptr,
    rows,
    cols,
    C: int,
    ptr,
    n: int,
    newpos,
    bits,
    edges: int,
    kept: int,
    values=None,
    eids=None,
    masked=None,
) -> tuple:
    """The ``kept`` edges of the frontier's ``edges`` in its order (a pass over them):
    ``(rows_out, pos, values_out, eids_out)``, each one's chosen row's position, graph edge,
    value (of the graph's ``values``; None for None) and edge id (of its ``eids``; ``pos``
    for None). The pass writes the values (1-D, 4- or 8-byte entries: copied as bits) and
    the ids (int64) as it goes; others are gathered after it. ``masked``: :func:`_kept_mask`'s
    mask and tile prefix, which place each kept edge (``gs_kept_masked_warps``: no row tested, no
    look-back); else ``gs_kept_edges`` tests each row and places them by a single-pass scan."""
    dev = cols.device
    vsize = (
        values.element_size()
        if values is not None
        and values.is_cuda
        and values.dim() == 1
        and values.element_size() in (4, 8)
        and values.is_contiguous()
        else 0
    )
    take_eids = (
        eids is not None
        and eids.is_cuda
        and eids.dtype == torch.int64
        and eids.dim() == 1
        and eids.is_contiguous()
    )
    tiles = -(-edges // _TILE) if kept and masked is None else 0
    # one allocation: the rows, the positions, the edge ids, the scan's state
    lens = (kept, kept, kept if take_eids else 0, 1 + tiles if tiles else 0)
    rows_out, pos, eids_out, state = torch.empty(sum(lens), dtype=torch.int64, device=dev).split(
        lens
    )
    values_out = torch.empty(kept, dtype=values.dtype, device=dev) if vsize else None
    if kept and masked is not None:
        mask, words, before, mtiles = masked
        head = (indptr, rows, cols, C, ptr, n, _opt(newpos), mask, words, before, mtiles)
        tail = (
            kept,
            rows_out,
            pos,
            values if vsize else 0,
            _opt(values_out),
            vsize,
            eids if take_eids else 0,
            eids_out if take_eids else 0,
        )
        grid, run = _warp_grid(mtiles, dev)
        launch(
            "layerwise",
            "gs_kept_masked_warps",
            grid * _THREADS,
            *head,
            run,  # (its run after the tiles)
            *tail,
            block=_THREADS,
            grid=grid,
            params=_params(indptr),
        )
    elif kept:
        memset(state, 0)
        launch(
            "layerwise",
            "gs_kept_edges",
            tiles * _THREADS,
            indptr,
            rows,
            cols,
            C,
            ptr,
            n,
            newpos,
            _opt(bits),
            state,
            rows_out,
            pos,
            values if vsize else 0,
            _opt(values_out),
            vsize,
            eids if take_eids else 0,
            eids_out if take_eids else 0,
            block=_THREADS,
            grid=tiles,
            params=_params(indptr),
        )
    if not vsize:
        values_out = _at(values, pos)
    if not take_eids:
        eids_out = pos if eids is None else _at(eids, pos)
    return rows_out, pos, values_out, eids_out


# ----------------------------------------------------------------------------- A[rows, cols]
@cuda_impl(Op.SLICE_ROWS_COLS, syncs=True)
def slice_rows_cols(A: CSC, rows: torch.Tensor, cols: torch.Tensor, batches=None) -> CSC:
    """``A[rows, cols]`` (``SLICE_ROWS_COLS``): the frontier's edges whose row is in ``rows``
    (unique ids), kept as the collective sampler keeps a chosen row's, without the column
    slice: each row's position in ``rows`` scattered over the graph's rows, then the kept
    counts, one read-back, the kept edges. Another ``A`` (not the whole graph) runs the two
    slices' kernels. ``batches`` ``(N, n)``: a super-batch (:func:`_slice_rows_cols_batched`;
    another ``A``: the torch backend's code)."""
    if batches is not None:
        N, n = batches
        if _graph(A) and A.num_nodes == n:  # (N == 1 too: checked as a super-batch is)
            return _slice_rows_cols_batched(A, rows, cols, N, n)
        return extract._reference(Op.SLICE_ROWS_COLS, A=A, rows=rows, cols=cols, batches=batches)
    if not _graph(A) or rows.numel() > _MAX_CHOSEN:  # newpos: int32 positions in rows
        return extract.slice_rows(extract.slice_cols(A, cols), rows)
    buf, ncols = _frontier(cols)
    rows = rows.to(torch.int64).contiguous()
    C, dev, R = buf.numel(), buf.device, A.num_nodes
    indptr, rows_g = _index_arrays(A)
    newpos = torch.empty(R, dtype=torch.int32, device=dev)
    memset(newpos, 0xFF)  # -1: not a row
    launch("layerwise", "gs_scatter_positions", rows.numel(), rows, rows.numel(), R, newpos)
    ptr = _frontier_ptr(indptr, buf, ncols, 0, R)
    indptr_out = _kept_counts(indptr, rows_g, buf, C, ptr, 0, newpos, None)
    edges, kept, *m = V.read_back(
        [ptr[C:], indptr_out[-1:]] + ([ncols] if ncols is not None else [])
    )
    Cx = m[0] if m else C
    cols, indptr_out = buf[:Cx], indptr_out[: Cx + 1]
    rows_out, _, values, eids = _kept_edges(
        indptr, rows_g, cols, Cx, ptr, 0, newpos, None, edges, kept, A.values, A.eids
    )
    return CSC(
        num_nodes=A.num_nodes,
        indptr=indptr_out,
        rows=rows_out,
        row_ids=rows,
        col_ids=cols,
        values=values,
        eids=eids,
    )


def _slice_rows_cols_batched(A: CSC, rows, cols, copies: int, n: int) -> CSC:
    """``A[rows, cols]`` of a super-batch (the torch backend's ``slice_rows_cols_batched``,
    the same CSC): ``rows`` and ``cols`` encoded (``b * n + v``), grouped by batch.

    The kept-edge kernels run over the encoded frontier once for every batch; a row is
    tested in a bitmap of the block-diagonal row space (``copies * n / 8`` bytes, which stays
    in the L2) by one pass after the frontier's edge count is read back, which writes a bit
    per frontier edge (:func:`_kept_mask`; the column pointer and the kept edges' places come
    from those bits), and each kept edge's row is mapped to its position in ``rows`` as it is
    written: through the rows' positions scattered over the row space (int32, as one
    mini-batch does), where that array is small enough (at most :data:`_NEWPOS_MAX`
    entries, and :data:`_NEWPOS_PER_EDGE` a kept edge), or else by a hash table of ``rows``
    alone after the pass. No column slice. Bad ids raise as a
    mini-batch's checks do: a row out of range (``IndexError``), a batch's row given twice
    (``ValueError``), a column out of range (``IndexError``, the frontier's kernel)."""
    R, dev = copies * n, A.indptr.device
    cols = cols.to(torch.int64).contiguous()
    rows = V.ids(rows, "rows", R, dev).contiguous()
    C, K = cols.numel(), rows.numel()
    indptr, rows_g = _index_arrays(A)
    bits = torch.zeros((R + 31) // 32, dtype=torch.int32, device=dev)
    launch("layerwise", "gs_mark_bits", K, rows, K, R, bits)
    ptr = _frontier_ptr(indptr, cols, None, n, R)  # the columns' ids checked there
    # the frontier's edges read back first (a read-back more): sized by them, the mask of its
    # kept edges is the one pass that tests rows (a random read of the bits an edge)
    (edges,) = V.read_back([ptr[C:]])
    indptr_out, masked = _kept_mask(indptr, rows_g, cols, C, ptr, n, bits, edges)
    (kept,) = V.read_back([indptr_out[-1:]])
    newpos = None
    if min(_NEWPOS_MAX, _NEWPOS_PER_EDGE * kept) >= R and K <= _MAX_CHOSEN:
        newpos = torch.empty(R, dtype=torch.int32, device=dev)
        memset(newpos, 0xFF)  # -1: not a row
        launch("layerwise", "gs_scatter_positions", K, rows, K, R, newpos)
    found, _, values, eids = _kept_edges(
        indptr,
        rows_g,
        cols,
        C,
        ptr,
        n,
        _opt(newpos),
        bits,
        edges,
        kept,
        A.values,
        A.eids,
        masked,
    )
    if newpos is not None:  # the kept edges' rows are positions; a repeat took another's
        own, at = newpos[rows].to(torch.int64), found
    else:  # one table of rows: their own positions (a repeat finds an earlier one) and the edges'
        both, _ = extract.member_positions(rows, torch.cat([rows, found]))
        own, at = both[:K], both[K:]
    # every repeated row has an occurrence whose position is not its own (the scatter keeps
    # any one of them, the table the first): the error names the smallest such encoded row
    # (the first batch with a repeat, its smallest repeated node), as the torch op does,
    # whichever occurrence a race kept
    repeated = own != torch.arange(K, device=dev)
    V.fail_if(
        repeated.any(),
        ValueError,
        lambda v: f"rows: node {v % n} appears more than once; row ids must be unique",
        torch.where(repeated, rows, R).min() if K else rows,
    )
    return CSC(
        num_nodes=R,
        indptr=indptr_out,
        rows=at,
        row_ids=rows,
        col_ids=cols,
        values=values,
        eids=eids,
    )


__all__ = [
    "Pending",
    "collective_finish",
    "collective_start",
    "slice_collective_sample",
    "slice_reduce",
    "slice_rows_cols",
]
