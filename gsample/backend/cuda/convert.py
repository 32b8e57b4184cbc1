"""CSC -> CSR / COO conversions on the GPU (``kernels/convert.cu``), with a per-matrix cache.

Array-level functions for the backends and the layouts of :mod:`gsample.formats`; on CPU
tensors each one runs its plain-PyTorch twin, with the same results:

* :func:`edge_cols` -- the column of every edge (COO expansion), one thread per edge with a
  binary search in ``indptr`` (balanced whatever the degrees);
* :func:`row_counts` -- edges per row (integer atomics: order-free, deterministic);
* :func:`csr_permutation` -- the STABLE permutation that lists the edges row by row, within
  a row in CSC order: exactly ``torch.argsort(rows, stable=True)`` (it is
  ``torch.sort(stable=True)``, a radix sort on the GPU; a stable order is unique);
* :func:`to_csr` -- ``(indptr_r, perm)`` of a :class:`~gsample.formats.CSC`, cached per CSC
  object for the whole graph and graph-level (cached) matrices, so per-row reductions over
  the graph do not sort it on every call; small sub-matrices are converted per call.
"""

from __future__ import annotations

import weakref

import torch

from gsample.backend.cuda.extract import Kernels
from gsample.backend.cuda.module import launch
from gsample.formats.csc import CSC, segment_ptr

#: a CSC with at least this many edges keeps its CSR permutation (as do graph-level ones)
CACHE_MIN_EDGES = 1 << 22
# CSC -> (stamp, indptr_r, perm). CSC has identity semantics (eq=False), so entries die
# with their matrix; matrices that share indptr and rows (``with_values`` copies, as a
# chain of edge maps makes) share one entry's tensors.
_CSR_CACHE: weakref.WeakKeyDictionary[CSC, tuple] = weakref.WeakKeyDictionary()


def on_gpu(t: torch.Tensor) -> bool:
    """Whether the kernels run for ``t`` (a CUDA tensor); else the torch twin runs."""
    return t.is_cuda


def _i64(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.int64).contiguous()


def edge_cols(csc: CSC) -> torch.Tensor:
    """The (local) column of every edge.

    Parameters
    ----------
    csc : CSC
        ``C`` columns, ``E`` edges.

    Returns
    -------
    LongTensor, shape (E,)
        ``out[e] = c`` for ``indptr[c] <= e < indptr[c + 1]``; equal to ``csc.edge_cols()``.
    """
    if not on_gpu(csc.indptr):
        return csc.edge_cols()
    out = torch.empty(csc.nnz, dtype=torch.int64, device=csc.device)
    launch("convert", "gs_edge_cols", csc.nnz, _i64(csc.indptr), csc.num_cols, csc.nnz, out)
    return out


def csr_cols(csc: CSC, perm: torch.Tensor) -> torch.Tensor:
    """The column of every edge in CSR order: ``edge_cols(csc)[perm]``, shape (E,).

    ``perm`` (shape (E,)) is :func:`to_csr`'s permutation (any permutation of the edges).
    """
    if perm.shape != (csc.nnz,):
        raise ValueError(f"perm: expected shape ({csc.nnz},), got {tuple(perm.shape)}")
    if not on_gpu(csc.indptr):
        return csc.edge_cols()[perm]
    # the transpose's kernel (kernels/extract.cu), no eids
    return Kernels.perm_cols(_i64(csc.indptr), _i64(perm))[0]


def row_counts(rows: torch.Tensor, num_rows: int) -> torch.Tensor:
    """Edges per row: ``torch.bincount(rows, minlength=num_rows)``.

    Parameters
    ----------
    rows : LongTensor, shape (E,)
        Local row of each edge, in ``[0, num_rows)`` (the CSC invariant; not re-checked).
    num_rows : int
        ``R``.

    Returns
    -------
    LongTensor, shape (R,)
    """
    if not on_gpu(rows):
        return torch.bincount(rows, minlength=num_rows)
    counts = torch.zeros(num_rows, dtype=torch.int64, device=rows.device)
    launch("convert", "gs_row_counts", rows.numel(), _i64(rows), rows.numel(), counts, num_rows)
    return counts


def csr_permutation(rows: torch.Tensor, num_rows: int) -> torch.Tensor:
    """The stable permutation sorting the edges by row: ``torch.argsort(rows, stable=True)``.

    Parameters
    ----------
    rows : LongTensor, shape (E,)
        Local row of each edge, in ``[0, num_rows)``.
    num_rows : int
        ``R``; below 2**31 the keys are sorted as int32 (half the radix passes).

    Returns
    -------
    LongTensor, shape (E,)
        Edge (CSC position) at each CSR position; within a row, in CSC order.
    """
    keys = rows.to(torch.int32) if num_rows < 2**31 else rows
    return torch.sort(keys, stable=True).indices


def _stamp(csc: CSC) -> tuple:
    """Versions of the tensors the permutation depends on (an in-place write changes one)."""
    return (csc.num_rows, csc.indptr._version, csc.rows._version)


def _cacheable(csc: CSC) -> bool:
    return csc.col_ids is None or csc.nnz >= CACHE_MIN_EDGES


def _cached(csc: CSC):
    hit = _CSR_CACHE.get(csc)
    if hit is not None and hit[0] == _stamp(csc):
        return hit[1:]
    for other, entry in list(_CSR_CACHE.items()):  # a matrix sharing the structure
        if other.indptr is csc.indptr and other.rows is csc.rows and entry[0] == _stamp(csc):
            _CSR_CACHE[csc] = entry
            return entry[1:]
    return None


def to_csr(csc: CSC, cache: bool | None = None):
    """Compressed sparse rows of ``csc``: ``(indptr_r, perm)``.

    Parameters
    ----------
    csc : CSC
        ``R`` rows, ``E`` edges.
    cache : bool, optional
        Keep the result for this CSC object (and matrices sharing its ``indptr`` and
        ``rows`` tensors) until it is garbage-collected or one of those tensors is written
        in place. Default: for graph-level matrices (no ``col_ids``: the graph and the
        matrices computed from it once) and those with ``CACHE_MIN_EDGES`` edges or more.

    Returns
    -------
    indptr_r : LongTensor, shape (R + 1,)
        Row ``r`` holds CSR positions ``indptr_r[r]:indptr_r[r + 1]``.
    perm : LongTensor, shape (E,)
        The edge (CSC position) at each CSR position: ``torch.argsort(csc.rows,
        stable=True)``, so ``values[perm]`` are the values in CSR order.
    """
    cache = _cacheable(csc) if cache is None else cache
    if cache:
        hit = _cached(csc)
        if hit is not None:
            return hit
    indptr_r = segment_ptr(row_counts(csc.rows, csc.num_rows))
    perm = csr_permutation(csc.rows, csc.num_rows)
    if cache:
        _CSR_CACHE[csc] = (_stamp(csc), indptr_r, perm)
    return indptr_r, perm


def clear_cache() -> None:
    """Drop every cached CSR permutation (their memory goes back to the allocator)."""
    _CSR_CACHE.clear()
