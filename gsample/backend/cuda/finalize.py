"""Finalize on the GPU without sorting (``kernels/relabel.cu``), equal to the torch backend's.

:func:`unique_first` keeps the first occurrence of every id through a device hash table
(the smallest position of each id, then a scan of the first-occurrence flags), so the
order comes out of the positions and no sort is needed; :func:`relabel` maps ids to those
labels. Rows of a matrix are local indices, so :func:`row` and :func:`compact` flag the
row space and scan it (or, when the row space is much larger than the edge list, hash the
edges' rows and sort only the distinct ones). ``column``, ``row_ids`` and ``col_ids`` are
views: the torch backend's functions serve as they are.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from gsample.backend.cuda.module import launch
from gsample.backend.registry import cuda_impl
from gsample.backend.torch import finalize as reference
from gsample.backend.torch.finalize import col_ids, column, row_ids
from gsample.formats.csc import CSC
from gsample.ir import Op

#: the hash table has at least this many slots
MIN_TABLE = 32
#: row() / compact() flag the row space when it has at most this many rows per edge
ROW_FLAG_RATIO = 16
_NULL = np.uint64(0)  # a null pointer argument (the kernel ignores it)

# views of the matrix: the torch backend's code, which never reads a size back
for _op, _fn in ((Op.COLUMN, column), (Op.ROW_IDS, row_ids), (Op.COL_IDS, col_ids)):
    cuda_impl(_op, syncs=False)(_fn)
del _op, _fn


# ----------------------------------------------------------------------------- host arithmetic
def table_size(n: int) -> int:
    """Slots of the hash table for ``n`` ids: the smallest power of two ``>= max(2 n, 32)``.

    At most half full, so linear probing stays short and always meets an empty slot.
    """
    if n < 0:
        raise ValueError(f"n: expected a count >= 0, got {n}")
    return 1 << (max(2 * n, MIN_TABLE) - 1).bit_length()


def use_row_flags(num_rows: int, nnz: int) -> bool:
    """Whether the unique rows come from flags over the row space (``O(R + E)``) rather
    than from hashing the edges' rows and sorting the distinct ones (``O(E + U log U)``)."""
    return num_rows <= ROW_FLAG_RATIO * max(nnz, 1)


def _check_ids(ids: torch.Tensor, name: str) -> torch.Tensor:
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"{name}: expected a tensor, got {type(ids).__name__}")
    if not ids.is_cuda:
        raise ValueError(f"{name}: expected a CUDA tensor, got one on {ids.device}")
    if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
        raise TypeError(f"{name}: expected integer ids, got {ids.dtype}")
    if ids.dim() != 1:
        raise ValueError(f"{name}: expected a 1-D tensor, got shape {tuple(ids.shape)}")
    return ids.to(torch.int64).contiguous()


def _inclusive_scan(flags: torch.Tensor):
    """``(rank, count)``: inclusive int64 scan of int32 ``flags`` and its total (one sync)."""
    rank = torch.cumsum(flags, 0, dtype=torch.int64)
    return rank, int(rank[-1]) if rank.numel() else 0


# ----------------------------------------------------------------------------- hash table
class _Table:
    """The hash table of ``ids`` (int64, >= 0, contiguous, CUDA): ``keys``, ``vals`` (the
    first position of each key), ``mask``, the ``slot`` of every id, and the first-occurrence
    ``flags``, their inclusive scan ``rank`` and ``count`` (the number of distinct ids)."""

    def __init__(self, ids: torch.Tensor):
        n = ids.numel()
        size = table_size(n)
        self.n, self.mask = n, size - 1
        # -1 is GS_EMPTY in keys and the largest unsigned value in vals (atomicMin's start)
        self.keys = torch.full((size,), -1, dtype=torch.int64, device=ids.device)
        self.vals = torch.full((size,), -1, dtype=torch.int64, device=ids.device)
        self.slot = torch.empty(n, dtype=torch.int64, device=ids.device)
        self.flags = torch.empty(n, dtype=torch.int32, device=ids.device)
        launch("relabel", "gs_hash_insert", n, ids, n, self.keys, self.vals, self.mask, self.slot)
        launch("relabel", "gs_first_flags", n, self.vals, self.slot, n, self.flags)
        self.rank, self.count = _inclusive_scan(self.flags)

    def unique(self, ids: torch.Tensor) -> torch.Tensor:
        out = torch.empty(self.count, dtype=torch.int64, device=ids.device)
        launch(
            "relabel", "gs_select_flagged", self.n, self.flags, self.rank, self.n, ids, True, out
        )
        return out

    def inverse(self) -> torch.Tensor:
        inv = torch.empty(self.n, dtype=torch.int64, device=self.slot.device)
        launch("relabel", "gs_first_inverse", self.n, self.vals, self.slot, self.rank, self.n, inv)
        return inv

    def lookup(self, ids: torch.Tensor) -> torch.Tensor:
        out = torch.empty(ids.numel(), dtype=torch.int64, device=ids.device)
        launch(
            "relabel",
            "gs_hash_lookup",
            ids.numel(),
            self.keys,
            self.vals,
            self.mask,
            self.rank,
            self.n,
            ids,
            ids.numel(),
            out,
        )
        return out


def _nonnegative(ids: torch.Tensor, name: str) -> None:
    if ids.numel() and int(ids.min()) < 0:
        raise ValueError(f"{name}: ids must be >= 0 (-1 marks empty slots of the hash table)")


def unique_first(ids: torch.Tensor, return_inverse: bool = False):
    """Unique values of ``ids`` in order of first occurrence, as the torch backend's.

    Parameters
    ----------
    ids : integer CUDA tensor, shape (n,)
        Ids ``>= 0`` (any integer dtype; computed in int64).
    return_inverse : bool
        Also return the label of every element: the position of its value in the result.

    Returns
    -------
    uniq : tensor of ``ids.dtype``, shape (U,)
    inverse : LongTensor, shape (n,)
        Only with ``return_inverse``; ``uniq[inverse] == ids``.
    """
    x = _check_ids(ids, "ids")
    _nonnegative(x, "ids")
    uniq, inv = _unique_first(x, return_inverse)
    uniq = uniq.to(ids.dtype)
    return (uniq, inv) if return_inverse else uniq


def _unique_first(x: torch.Tensor, return_inverse: bool = False):
    """:func:`unique_first` of trusted ids (int64, >= 0, contiguous, CUDA): ``(uniq, inv)``."""
    table = _Table(x)
    return table.unique(x), table.inverse() if return_inverse else None


def relabel(ids: torch.Tensor, space: torch.Tensor) -> torch.Tensor:
    """Local label of each of ``ids`` in ``space``: the position of its value in
    ``unique_first(space)`` (for a duplicate-free space, its position there).

    Parameters
    ----------
    ids : integer CUDA tensor, shape (n,)
        Ids to relabel (any value; those not in ``space`` get -1).
    space : integer CUDA tensor, shape (m,)
        The label space, ids ``>= 0`` (repeats label as their first occurrence).

    Returns
    -------
    LongTensor, shape (n,)
        Labels in ``[0, U)``, or -1 where the id is not in ``space``.
    """
    x, s = _check_ids(ids, "ids"), _check_ids(space, "space")
    if x.device != s.device:
        raise ValueError(f"ids: on {x.device} but space is on {s.device}")
    _nonnegative(s, "space")
    return _Table(s).lookup(x)


def edge_cols(indptr: torch.Tensor, nnz: int, cols=None) -> torch.Tensor:
    """Column of every edge from a CSC ``indptr`` (shape (C + 1,), starting at 0).

    One thread per edge with a binary search in ``indptr``, so a hub column does not
    serialise the launch. Returns local column indices, or ``cols[c]`` when ``cols``
    (shape (C,)) is given; LongTensor of shape (nnz,), as ``CSC.edge_cols``.
    """
    indptr = _check_ids(indptr, "indptr")
    C = indptr.numel() - 1
    if C < 0:
        raise ValueError("indptr: expected at least one entry (C + 1 for C columns)")
    if nnz > 0 and C == 0:
        raise ValueError(f"indptr: no columns for {nnz} edges")
    if cols is not None and cols.numel() != C:
        raise ValueError(f"cols: expected {C} entries (one per column), got {cols.numel()}")
    out = torch.empty(nnz, dtype=torch.int64, device=indptr.device)
    cid = None if cols is None else _check_ids(cols, "cols")
    launch("convert", "gs_edge_cols", nnz, indptr, C, nnz, out)  # kernels/convert.cu
    return out if cid is None else cid[out].to(cols.dtype)


# ----------------------------------------------------------------------------- rows
def local_rows(rows: torch.Tensor, num_rows: int, return_inverse: bool = False):
    """Distinct local rows of an edge list, ascending, as ``torch.unique(rows)``.

    Parameters
    ----------
    rows : LongTensor (CUDA), shape (E,)
        Local row of each edge, in ``[0, num_rows)``.
    num_rows : int
        ``R``, the size of the row space.
    return_inverse : bool
        Also return each edge's new row: the position of its row in the result.

    Returns
    -------
    local : LongTensor, shape (R',)
    inverse : LongTensor, shape (E,)
        Only with ``return_inverse``.
    """
    r = _check_ids(rows, "rows")
    E, dev = r.numel(), r.device
    if use_row_flags(num_rows, E):
        flags = torch.zeros(num_rows, dtype=torch.int32, device=dev)
        launch("relabel", "gs_mark_rows", E, r, E, num_rows, flags)
        rank, count = _inclusive_scan(flags)
        local = torch.empty(count, dtype=torch.int64, device=dev)
        launch("relabel", "gs_select_flagged", num_rows, flags, rank, num_rows, _NULL, False, local)
        if not return_inverse:
            return local
        inv = torch.empty(E, dtype=torch.int64, device=dev)
        launch("relabel", "gs_rank_rows", E, r, E, rank, num_rows, inv)
        return local, inv
    # a row space far larger than the edges: hash them, then sort only the distinct rows
    uniq, first_inv = _unique_first(r, return_inverse)
    local, order = torch.sort(uniq)  # distinct keys: the order is unambiguous
    if not return_inverse:
        return local
    position = torch.empty_like(order)
    position[order] = torch.arange(order.numel(), device=dev)
    return local, position[first_inv]


# ----------------------------------------------------------------------------- the ops
@cuda_impl(Op.ROW)  # kernels/relabel.cu
def row(A: CSC) -> torch.Tensor:
    """Global ids of the rows holding at least one edge, in row-space order, shape (R',)."""
    if not isinstance(A, CSC):
        return reference.row(A)
    return A.global_rows(local_rows(A.rows, A.num_rows))


@cuda_impl(Op.ALL_NODES)
def all_nodes(A: CSC, batches=None) -> torch.Tensor:
    """Columns first (first occurrence), then the new rows in row-space order; unique
    (grouped by mini-batch with ``batches``, as the torch backend's)."""
    if not isinstance(A, CSC):
        return reference.all_nodes(A, batches)
    ids = torch.cat([column(A), row(A)])
    ids = _unique_first(ids.to(torch.int64).contiguous())[0].to(ids.dtype)
    return ids if batches is None else reference.batch_order(ids, batches[1])


@cuda_impl(Op.EDGES)
def edges(A: CSC):
    """``(row ids, column ids, original edge ids)``, each shape (E,), in CSC order."""
    if not isinstance(A, CSC):
        return reference.edges(A)
    return A.global_rows(), edge_cols(A.indptr, A.nnz, A.col_ids), A.eid_tensor()


@cuda_impl(Op.COMPACT)
def compact(A: CSC) -> CSC:
    """Drop the rows without edges: the row space becomes :func:`row`."""
    if not isinstance(A, CSC):
        return reference.compact(A)
    local, inverse = local_rows(A.rows, A.num_rows, return_inverse=True)
    return replace(A, rows=inverse, row_ids=A.global_rows(local))
