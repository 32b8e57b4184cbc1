"""Column and row slicing and transposition as CUDA kernels (``kernels/extract.cu``).

Bit-equal to :mod:`gsample.backend.torch.extract`: the same edges in the same order, the
same ``indptr``, ``rows``, ``row_ids``, ``col_ids``, ``values`` and ``eids`` (same dtypes).

- ``A[:, cols]``: a load-balanced segment gather (one thread per output edge, which finds
  its column by binary search in the new ``indptr``) that also gathers the rows and edge
  ids; the values are gathered by PyTorch (any dtype and shape). A sub-matrix's column
  space is looked up in a device hash table.
- ``A[rows, :]``: ``rows`` go into an open-addressing hash table (int64 keys, the first
  occurrence's position as value), each edge looks its row up (through a per-row map for a
  sub-matrix), then a stable compaction by an exclusive scan of the kept flags.
- ``A.T``: a stable device sort of the rows for the permutation; the new ``indptr`` by
  binary search in the sorted rows, the new rows (old columns) by the segment search.

A whole graph with fewer than 2**31 nodes and edges (and at least :data:`INT32_MIN_EDGES`
edges) is read through a cached int32 copy of its ``indptr`` and ``rows`` (the kernels are
compiled for ``GS_IDX=int``), halving the gathers' traffic; outputs stay int64. A graph in
pinned host memory (``placement="uva"``) is read as it is, in place (its int32 rows where it
keeps them: :func:`rows_read`), the columns its GPU cache holds from the device
(:mod:`gsample.formats.cache`).

The array-level functions :func:`gather_segments`, :func:`member_positions` and
:func:`filter_members` serve the CSR and COO layouts: CSR row slicing is the segment
gather on its row pointer, COO slicing filters the (row, col) pairs by membership. COO
column slicing with repeated columns goes through the segment gather of its CSC twin.

The same host code runs on CPU tensors with pure-torch twins of the kernels
(:class:`_Twin`, same contract line by line), so its index arithmetic is tested without a
GPU; the backend itself only calls it with CUDA tensors.
"""

from __future__ import annotations

import weakref
from dataclasses import replace

import torch

from gsample.backend.cuda.module import launch
from gsample.backend.registry import cuda_impl, reference
from gsample.backend.torch import layout_ops
from gsample.formats.cache import cache_of
from gsample.formats.csc import CSC, segment_ptr
from gsample.formats.layouts import CSR
from gsample.formats.placement import is_mapped, narrow_rows
from gsample.ir import Op

#: whole graphs with at least this many edges are read through an int32 copy of their
#: ``indptr`` / ``rows`` (``None``: never). Tests set 0 to force the int32 path.
INT32_MIN_EDGES = 1 << 20

_NARROW: weakref.WeakKeyDictionary[CSC, tuple] = weakref.WeakKeyDictionary()
_INDEX_DTYPES = (torch.int32, torch.int64)
_I64_MAX = 2**63 - 1


# ----------------------------------------------------------------------------- kernels
def _params(t: torch.Tensor) -> tuple:
    return (("IDX", "int"),) if t.dtype == torch.int32 else ()


def _opt(t):
    """A kernel's optional pointer: the tensor, or 0 (null)."""
    return 0 if t is None else t


class Kernels:
    """Launchers of ``kernels/extract.cu``; ``GS_IDX`` follows the index-typed argument."""

    @staticmethod
    def segment_counts(indptr, seg, cache=None):
        starts, counts = (
            torch.empty(seg.numel(), dtype=torch.int64, device=seg.device) for _ in range(2)
        )
        launch(
            "extract",
            "gs_segment_counts",
            seg.numel(),
            indptr,
            indptr.numel() - 1,
            seg,
            seg.numel(),
            starts,
            counts,
            _opt(None if cache is None else cache.slot),
            0 if cache is None else cache.rows.numel(),
            _opt(None if cache is None else cache.counters),
            params=_params(indptr),
        )
        return starts, counts

    @staticmethod
    def gather(new_indptr, starts, total, rows=None, eids=None, seg=None, cache=None):
        def out():
            return torch.empty(total, dtype=torch.int64, device=starts.device)

        index = out()
        rows_out = None if rows is None else out()
        eids_out = None if eids is None else out()
        cached = cache is not None and cache.slot is not None
        seg, slot, crows, ceids = (
            (seg, cache.slot, cache.rows, cache.eids) if cached else (None, None, None, None)
        )
        launch(
            "extract",
            "gs_gather_segments",
            total,
            new_indptr,
            starts.numel(),
            starts,
            total,
            _opt(rows),
            _opt(eids),
            index,
            _opt(rows_out),
            _opt(eids_out),
            _opt(seg),
            _opt(slot),
            _opt(crows),
            _opt(ceids),
            0 if crows is None else crows.numel(),
            params=() if rows is None else _params(rows),
        )
        return index, rows_out, eids_out

    @staticmethod
    def positions(space, ids):
        out = torch.full((ids.numel(),), -1, dtype=torch.int64, device=ids.device)
        if space.numel() == 0 or ids.numel() == 0:
            return out
        cap = 1 << (2 * space.numel() - 1).bit_length()  # a power of two >= 2n
        table = torch.empty(cap, 2, dtype=torch.int64, device=space.device)
        table[:, 0] = -1  # empty key
        table[:, 1] = _I64_MAX  # atomicMin target
        launch("extract", "gs_hash_insert", space.numel(), space, space.numel(), table, cap - 1)
        launch(
            "extract",
            "gs_hash_lookup",
            ids.numel(),
            table,
            cap - 1,
            ids,
            ids.numel(),
            out,
            params=_params(ids),
        )
        return out

    @staticmethod
    def map_rows(rows, rowmap):
        out = torch.empty(rows.numel(), dtype=torch.int64, device=rows.device)
        launch(
            "extract",
            "gs_map_rows",
            rows.numel(),
            rows,
            rows.numel(),
            rowmap,
            rowmap.numel(),
            out,
            params=_params(rows),
        )
        return out

    @staticmethod
    def compact(local, kept, total, eids=None):
        def out():
            return torch.empty(total, dtype=torch.int64, device=local.device)

        keep, rows_out = out(), out()
        eids_out = None if eids is None else out()
        launch(
            "extract",
            "gs_compact",
            local.numel(),
            local,
            kept,
            local.numel(),
            _opt(eids),
            keep,
            rows_out,
            _opt(eids_out),
        )
        return keep, rows_out, eids_out

    @staticmethod
    def perm_cols(indptr, perm, eids=None):
        cols = torch.empty(perm.numel(), dtype=torch.int64, device=perm.device)
        eids_out = None if eids is None else torch.empty_like(cols)
        launch(
            "extract",
            "gs_perm_cols",
            perm.numel(),
            indptr,
            indptr.numel() - 1,
            perm,
            perm.numel(),
            _opt(eids),
            cols,
            _opt(eids_out),
            params=_params(indptr),
        )
        return cols, eids_out

    @staticmethod
    def lower_bounds(sorted_rows, m):
        out = torch.empty(m, dtype=torch.int64, device=sorted_rows.device)
        launch(
            "extract",
            "gs_lower_bounds",
            m,
            sorted_rows,
            sorted_rows.numel(),
            m,
            out,
            params=_params(sorted_rows),
        )
        return out


class _Twin:
    """Pure-torch twins of :class:`Kernels`, the kernels' contract in tensor ops (CPU tests)."""

    @staticmethod
    def segment_counts(indptr, seg, cache=None):
        ok = (seg >= 0) & (seg < indptr.numel() - 1)
        s = torch.where(ok, seg, 0)
        starts = torch.where(ok, indptr[s].long(), 0)
        end = indptr[torch.where(ok, seg + 1, 0)].long()  # no read past the end
        counts = torch.where(ok, end - starts, 0)
        if cache is not None:  # a column within the cache's rows (gs_cache_at)
            hit = (
                (cache.slot[s] >= 0) & (cache.slot[s] <= cache.edges - counts) & ok
                if cache.slot is not None
                else ok & False
            )
            cache.counters += torch.stack([counts.sum(), counts[hit].sum()])
        return starts, counts

    @staticmethod
    def gather(new_indptr, starts, total, rows=None, eids=None, seg=None, cache=None):
        p = torch.arange(total, device=starts.device)
        s = torch.searchsorted(new_indptr[: starts.numel()], p, right=True) - 1  # gs_owner
        off = p - new_indptr[s]
        index = starts[s] + off
        rows_out = None if rows is None else rows[index].long()
        eids_out = None if eids is None else eids[index]
        if cache is not None and cache.slot is not None:  # cached columns: the cache's
            c = cache.slot[seg[s]]
            deg = (new_indptr[1:] - new_indptr[:-1])[s]
            at = torch.nonzero((c >= 0) & (c <= cache.edges - deg)).squeeze(1)
            if rows_out is not None:
                rows_out[at] = cache.rows[c[at] + off[at]].long()
            if eids_out is not None and cache.eids is not None:
                eids_out[at] = cache.eids[c[at] + off[at]]
        return index, rows_out, eids_out

    @staticmethod
    def positions(space, ids):
        srt, order = torch.sort(space, stable=True)  # first occurrence, as atomicMin
        pos = torch.searchsorted(srt, ids.long()).clamp_(max=max(space.numel() - 1, 0))
        if space.numel() == 0:
            return torch.full((ids.numel(),), -1, dtype=torch.int64, device=ids.device)
        hit = (srt[pos] == ids) & (ids >= 0)
        return torch.where(hit, order[pos], -1)

    @staticmethod
    def map_rows(rows, rowmap):
        ok = (rows >= 0) & (rows < rowmap.numel())
        return torch.where(ok, rowmap[torch.where(ok, rows, 0).long()], -1)

    @staticmethod
    def compact(local, kept, total, eids=None):
        keep = (local >= 0).nonzero().squeeze(1)
        return keep, local[keep], None if eids is None else eids[keep]

    @staticmethod
    def perm_cols(indptr, perm, eids=None):
        cols = torch.searchsorted(indptr[:-1].long(), perm, right=True) - 1
        return cols, None if eids is None else eids[perm]

    @staticmethod
    def lower_bounds(sorted_rows, m):
        return torch.searchsorted(sorted_rows.long(), torch.arange(m, device=sorted_rows.device))


def _kernels(t: torch.Tensor):
    if t.is_cuda:
        return Kernels
    if t.device.type == "cpu":
        return _Twin
    raise ValueError(f"A: tensors on {t.device} are neither CUDA nor CPU tensors")


# ----------------------------------------------------------------------------- index arrays
def _index_arrays(A: CSC):
    """``(indptr, rows)`` of ``A`` with one index dtype (int32 or int64), contiguous.

    A whole graph (no row or column space) with fewer than 2**31 nodes and edges and at
    least :data:`INT32_MIN_EDGES` edges is read through an int32 copy, cached per CSC
    object (identity semantics) and remade after an in-place write to either tensor.
    """
    indptr, rows = A.indptr, A.rows
    if indptr.dtype != rows.dtype or indptr.dtype not in _INDEX_DTYPES:
        indptr, rows = indptr.long(), rows.long()
    if (
        indptr.dtype == torch.int64
        and INT32_MIN_EDGES is not None
        and A.row_ids is None
        and A.col_ids is None
        and A.nnz >= INT32_MIN_EDGES
        and A.num_nodes < 2**31
        and A.nnz < 2**31
    ):
        stamp = (indptr.data_ptr(), indptr._version, rows.data_ptr(), rows._version)
        cached = _NARROW.get(A)
        if cached is None or cached[0] != stamp:
            if is_mapped(rows) or is_mapped(indptr):
                # a graph in pinned host memory (placement "uva") is read in place: a
                # narrowed copy would take device memory the size of the graph's edges
                cached = (stamp, indptr.contiguous(), rows.contiguous())
            else:
                cached = (
                    stamp,
                    indptr.to(torch.int32).contiguous(),
                    rows.to(torch.int32).contiguous(),
                )
            _NARROW[A] = cached
        return cached[1], cached[2]
    return indptr.contiguous(), rows.contiguous()


def _eids(A: CSC):
    """``A.eids`` when a kernel can gather it (int64), else ``None`` (gathered by torch)."""
    e = A.eids
    return e.contiguous() if e is not None and e.dtype == torch.int64 else None


def _cache(A: CSC, rows: torch.Tensor):
    """A whole UVA graph's GPU cache (:mod:`gsample.formats.cache`) where the kernels can read
    it as they read ``rows`` (the index arrays they were given: the same dtype), else None."""
    cache = cache_of(A)
    return cache if cache is not None and cache.rows.dtype == rows.dtype else None


def rows_read(A: CSC, rows: torch.Tensor) -> tuple:
    """The rows a kernel reads of ``A`` and the GPU cache it reads with them: one dtype.

    A UVA graph keeps its rows as int32 in pinned host memory too where its node ids fit
    (:func:`gsample.formats.placement.narrow_rows`), and a GPU cache of it keeps int32 rows
    (:mod:`gsample.formats.cache`): the kernels that read a cache (column slicing, node-wise
    sampling, walks) read both, half the bytes of int64 rows, compiled for int32 rows
    (``GS_ROW=int``; column slicing's gather: ``GS_IDX=int``).

    Parameters
    ----------
    A : CSC
    rows : Tensor, shape (E,)
        ``A``'s rows as the caller would read them (int64, or a device graph's int32 copy).

    Returns
    -------
    rows : Tensor, shape (E,)
        The int32 host rows where ``A`` keeps them, ``rows`` is int64 and a cache (if any)
        holds int32 rows too; else ``rows``.
    cache : GraphCache or None
        ``A``'s cache where its rows have the returned rows' dtype (:func:`_cache`), else
        None (nothing read from it, nothing counted).

    Examples
    --------
    >>> import gsample as gs
    >>> A = gs.datasets.rmat(100, 500, seed=0).csc
    >>> rows, cache = rows_read(A, A.rows)   # a graph neither mapped nor cached
    >>> rows is A.rows, cache
    (True, None)
    """
    narrow = narrow_rows(A) if rows.dtype == torch.int64 else None
    cache = cache_of(A)
    if (
        narrow is not None
        and narrow.shape == rows.shape
        and (cache is None or cache.rows.dtype == narrow.dtype)
    ):
        rows = narrow
    return rows, _cache(A, rows)


def _finish_eids(A: CSC, index, gathered):
    if A.eids is None:
        return index  # as take_edges: the positions are the edge ids
    return gathered if gathered is not None else A.eids[index]


def _int_ids(t: torch.Tensor, name: str) -> torch.Tensor:
    if (
        not isinstance(t, torch.Tensor)
        or t.dim() != 1
        or t.is_floating_point()
        or t.is_complex()
        or t.dtype == torch.bool
    ):
        raise TypeError(f"{name}: expected a 1-D integer tensor")
    return t if t.dtype in _INDEX_DTYPES and t.is_contiguous() else t.long().contiguous()


def _same_device(a, b, name):
    if a.device != b.device:
        raise ValueError(f"{name}: tensor is on {b.device} but the other input on {a.device}")


# ----------------------------------------------------------------------------- array level
def _gather(indptr, seg, rows=None, eids=None, cache=None):
    """Segment gather: ``(index, new_indptr, rows_out, eids_out)``; ``seg`` int64 (node ids
    where ``cache``, a whole UVA graph's GPU cache, is given: cached columns read from it)."""
    K = _kernels(seg)
    starts, counts = K.segment_counts(indptr, seg, cache)
    new_indptr = segment_ptr(counts)
    total = int(new_indptr[-1])
    index, rows_out, eids_out = K.gather(new_indptr, starts, total, rows, eids, seg, cache)
    return index, new_indptr, rows_out, eids_out


def gather_segments(indptr: torch.Tensor, seg: torch.Tensor):
    """Edge positions of segments ``seg`` of ``indptr``, concatenated (CUDA twin of
    :func:`gsample.formats.gather_segments`).

    Parameters
    ----------
    indptr : LongTensor or IntTensor, shape (S + 1,)
        Segment ``s`` holds positions ``indptr[s]:indptr[s + 1]``.
    seg : LongTensor, shape (n,)
        Segments to take, in ``[0, S)``; repeats allowed.

    Returns
    -------
    index : LongTensor, shape (sum of their lengths,)
        The positions of ``seg[0]``, then ``seg[1]``, ...
    new_indptr : LongTensor, shape (n + 1,)
        Delimits them.
    """
    indptr, seg = _int_ids(indptr, "indptr"), _int_ids(seg, "seg").long()
    _same_device(indptr, seg, "seg")
    if seg.numel():
        lo, hi = torch.aminmax(seg)
        if int(lo) < 0 or int(hi) >= indptr.numel() - 1:
            raise IndexError(
                f"seg: segment ids must be in [0, {indptr.numel() - 1}), got [{int(lo)}, {int(hi)}]"
            )
    index, new_indptr, _, _ = _gather(indptr, seg)
    return index, new_indptr


def member_positions(space: torch.Tensor, ids: torch.Tensor):
    """Position of each of ``ids`` in ``space`` (CUDA twin of :func:`gsample.formats.locate`).

    Parameters
    ----------
    space : LongTensor, shape (n,)
        Non-negative ids; where one repeats, its first position counts.
    ids : LongTensor or IntTensor, shape (m,)
        Ids to look up (a negative id is never found).

    Returns
    -------
    pos : LongTensor, shape (m,)
        Position in ``space``, ``-1`` where not found (``locate`` leaves those undefined).
    hit : BoolTensor, shape (m,)
        ``pos >= 0``.
    """
    space, ids = _int_ids(space, "space").long(), _int_ids(ids, "ids")
    _same_device(space, ids, "ids")
    pos = _kernels(ids).positions(space, ids)
    return pos, pos >= 0


def filter_members(space: torch.Tensor, ids: torch.Tensor):
    """The entries of ``ids`` found in ``space``, in order (COO slicing by rows, or by
    columns without repeats).

    Parameters
    ----------
    space : LongTensor, shape (n,)
        The selected ids (``rows`` of ``A[rows, :]``).
    ids : LongTensor or IntTensor, shape (E,)
        One id per edge (a COO's global rows).

    Returns
    -------
    keep : LongTensor, shape (K,)
        Positions ``i`` of ``ids`` with ``ids[i]`` in ``space``, increasing.
    pos : LongTensor, shape (K,)
        Position of ``ids[keep]`` in ``space`` (the new local index).
    """
    pos, hit = member_positions(space, ids)
    kept = segment_ptr(hit.to(torch.int64))
    keep, local, _ = _kernels(pos).compact(pos, kept, int(kept[-1]))
    return keep, local


# ----------------------------------------------------------------------------- ops
def _reference(op: Op, **kwargs):
    """Another layout than CSC (CSR, COO): the torch backend's code for it."""
    return reference().run(op, **kwargs)


def _locate(space: torch.Tensor, ids: torch.Tensor):
    """``storage.locate`` with the device hash table: ``(position, hit)``, positions of
    misses clamped to 0 as ``locate`` leaves them in range."""
    pos, hit = member_positions(space, ids)
    return pos.clamp(min=0), hit


@cuda_impl(Op.SLICE_COLS)  # kernels/extract.cu
def slice_cols(A: CSC, cols: torch.Tensor) -> CSC:
    """``A[:, cols]``: columns of ``cols`` (global ids, repeats allowed) in that order.

    A node outside the matrix's column space gives an empty column; where the column
    space repeats a node, its first column is taken.

    Parameters
    ----------
    A : CSC
        ``R x C`` with ``E`` edges.
    cols : LongTensor, shape (n,)
        Global column ids.

    Returns
    -------
    CSC
        ``R x n``, ``col_ids = cols``, edges in ``A``'s order within each column.
    """
    if not isinstance(A, CSC):
        return _reference(Op.SLICE_COLS, A=A, cols=cols)
    seg = _int_ids(cols, "cols").long()
    _same_device(A.indptr, seg, "cols")
    if A.col_ids is not None:  # -1 (outside the column space): an empty column
        seg = member_positions(A.col_ids, seg)[0]
    indptr, rows = _index_arrays(A)
    # a UVA graph's int32 rows and cache where it keeps them (gs_gather_segments' GS_IDX
    # follows the rows it reads; gs_segment_counts' the int64 indptr)
    rows, cache = rows_read(A, rows)
    index, new_indptr, rows_out, eids_out = _gather(indptr, seg, rows, _eids(A), cache)
    return replace(
        A,
        indptr=new_indptr,
        rows=rows_out.to(A.rows.dtype),
        col_ids=cols,
        values=None if A.values is None else A.values[index],
        eids=_finish_eids(A, index, eids_out),
    )


@cuda_impl(Op.SLICE_ROWS, layouts=("csc", "csr", "csr-compact"))
def slice_rows(A: CSC, rows: torch.Tensor) -> CSC:
    """``A[rows, :]``: keeps the edges whose row is in ``rows`` (global ids, no repeats).

    Parameters
    ----------
    A : CSC
        ``R x C`` with ``E`` edges.
    rows : LongTensor, shape (m,)
        Global row ids, unique (the op's checks ensure it).

    Returns
    -------
    CSC
        ``m x C``, ``row_ids = rows`` in the given order, the kept edges in ``A``'s order.
    """
    if isinstance(A, CSR):  # the torch CSR code with these kernels' gather / lookup
        return layout_ops.slice_rows(A, rows, gather=gather_segments, find=_locate)
    if not isinstance(A, CSC):
        return _reference(Op.SLICE_ROWS, A=A, rows=rows)
    sel = _int_ids(rows, "rows").long()
    _same_device(A.indptr, sel, "rows")
    K = _kernels(sel)
    _, erows = _index_arrays(A)
    if A.row_ids is None:  # the local rows are global ids: one lookup per edge
        local = K.positions(sel, erows)
    else:  # look the R rows up once, then map each edge
        local = K.map_rows(erows, K.positions(sel, _int_ids(A.row_ids, "A.row_ids")))
    kept = torch.zeros(local.numel() + 1, dtype=torch.int64, device=local.device)
    torch.cumsum(local >= 0, 0, dtype=torch.int64, out=kept[1:])
    keep, rows_out, eids_out = K.compact(local, kept, int(kept[-1]), _eids(A))
    indptr = A.indptr
    counts = kept[indptr[1:]] - kept[indptr[:-1]]
    return replace(
        A,
        indptr=segment_ptr(counts),
        rows=rows_out,
        row_ids=rows,
        values=None if A.values is None else A.values[keep],
        eids=_finish_eids(A, keep, eids_out),
    )


@cuda_impl(Op.TRANSPOSE)
def transpose(A: CSC) -> CSC:
    """``A.T``: rows become columns; the new column space is the old row space.

    Parameters
    ----------
    A : CSC
        ``R x C`` with ``E`` edges.

    Returns
    -------
    CSC
        ``C x R``; within a new column, edges in ``A``'s order (a stable sort by row).
    """
    if not isinstance(A, CSC):
        return _reference(Op.TRANSPOSE, A=A)
    K = _kernels(A.indptr)
    indptr, rows = _index_arrays(A)
    sorted_rows, perm = torch.sort(rows, stable=True)  # stable: the unique permutation
    cols, eids_out = K.perm_cols(indptr, perm, _eids(A))
    return CSC(
        num_nodes=A.num_nodes,
        indptr=K.lower_bounds(sorted_rows, A.num_rows + 1),
        rows=cols,
        row_ids=A.col_ids,
        col_ids=A.row_ids,
        values=None if A.values is None else A.values[perm],
        eids=_finish_eids(A, perm, eids_out),
    )
