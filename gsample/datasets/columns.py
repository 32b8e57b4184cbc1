"""The steps of a CSC built a chunk of edges at a time, within memory: each chunk's entries
placed at their columns' cursors (:func:`place_chunk`), then every column's rows sorted a
range of whole columns at a time (:func:`sort_columns`), never sorting the whole edge
array. :func:`gsample.datasets.undirected_rmat` and :func:`gsample.datasets.load_coo` build
with them; :func:`gsample.datasets.load_csc` sorts the columns of a file that are not
ascending.

Sort keys are ``column * n + row`` (int64): :func:`check_size` bounds ``n``.
"""

from __future__ import annotations

import torch

from gsample.matrix.convert import column_ranges

__all__ = [
    "HOST_RANGE",
    "MATRIX_ROWS",
    "check_size",
    "place_chunk",
    "sort_columns",
    "spans",
    "unsorted_ranges",
]

#: the row dtype of a :class:`gsample.Matrix` (its samplers read int64 rows); files hold
#: int32 rows where the node count allows and are widened as they are placed
MATRIX_ROWS = torch.int64
#: edges of a column range sorted at a time on the host: the sort's scratch (some 70 bytes
#: an edge of the range: keys, the sort's outputs, permuted edge ids) stays near 70 MiB
HOST_RANGE = 1 << 20


def check_size(n: int, name: str) -> None:
    """Raise a ValueError naming ``name`` when ``column * n + row`` keys could pass
    ``2**63``."""
    if n > 3_037_000_499:
        raise ValueError(f"{name}: at most 3,037,000,499 nodes (int64 sort keys), got {n:,}")


def spans(total: int, chunk: int) -> list[tuple[int, int]]:
    """``[(i, j)]``: ``0..total-1`` cut into steps of ``chunk``."""
    return [(i, min(i + chunk, total)) for i in range(0, total, chunk)]


def place_chunk(cols, rows_in, n, cursor, rows, ones, eid=None, eids=None) -> None:
    """Write one chunk's entries (``rows_in[i]`` in column ``cols[i]``, int64, both
    consumed) at their columns' cursors: sorted by ``(column, row)`` (stable: ties keep
    their order, so edge ids ``eid`` stay ascending), then entry ``i`` of a column's run
    goes to ``cursor[column] + i`` of ``rows`` (and its id to ``eids``); the cursors move
    past them. ``ones``: at least as many int64 ones as the chunk has entries."""
    key = cols.mul_(n).add_(rows_in)  # < n**2 <= 2**63 (n is checked)
    del rows_in
    if eid is None:
        key = torch.sort(key).values
        order = None
    else:
        key, order = torch.sort(key, stable=True)
    col = torch.div(key, n, rounding_mode="floor")
    row = key.sub_(col * n)
    m = col.numel()
    idx = torch.arange(m, device=col.device)
    new = torch.ones(m, dtype=torch.bool, device=col.device)
    torch.ne(col[1:], col[:-1], out=new[1:])
    start = torch.cummax(torch.where(new, idx, 0), 0).values  # where the column's run starts
    del new
    pos = cursor[col]
    pos += idx
    pos -= start
    del idx, start
    rows[pos] = row.to(rows.dtype)
    if eids is not None:
        eids[pos] = eid[order]
    cursor.index_add_(0, col, ones[:m])


def _ranges(indptr: torch.Tensor, limit: int) -> list:
    """``[(c0, c1, p0, p1)]``: ranges of whole columns ``c0..c1-1`` (edges ``p0..p1-1``) of
    about ``limit`` edges each (more where one column alone holds more): the ranges
    :meth:`gsample.Matrix.from_csc` sorts by."""
    return column_ranges(indptr, limit)


def _range_keys(indptr, rows, n, c0, c1, p0, p1):
    """``(key, base)`` of the edges of columns ``c0..c1-1``: ``(column - c0) * n + row``
    (int64) and ``(column - c0) * n`` alone."""
    counts = indptr[c0 + 1 : c1 + 1] - indptr[c0:c1]
    local = torch.arange(c1 - c0, device=rows.device)
    base = torch.repeat_interleave(local, counts.to(rows.device), output_size=p1 - p0)
    base *= n
    return base + rows[p0:p1], base


def sort_columns(indptr, rows, n, limit, eids=None, ranges=None, bar=None) -> None:
    """Sort every column's rows in place (stable: equal rows keep their edge ids' order,
    ``eids`` permuted with them), a range of whole columns of about ``limit`` edges at a
    time (or the ``ranges`` given: :func:`unsorted_ranges`); ``bar`` counts the edges."""
    for c0, c1, p0, p1 in _ranges(indptr, limit) if ranges is None else ranges:
        key, base = _range_keys(indptr, rows, n, c0, c1, p0, p1)
        if eids is None:
            key = torch.sort(key).values
        else:
            key, order = torch.sort(key, stable=True)
            eids[p0:p1] = eids[p0:p1][order]
            del order
        key -= base
        rows[p0:p1] = key.to(rows.dtype)
        del key, base
        if bar is not None:
            bar.update(p1 - p0)


def unsorted_ranges(indptr, rows, n, limit) -> list:
    """The column ranges of about ``limit`` edges (:func:`sort_columns`'s) where some
    column's rows are not ascending."""
    out = []
    for r in _ranges(indptr, limit):
        key, _ = _range_keys(indptr, rows, n, *r)
        if key.numel() > 1 and bool((key[1:] < key[:-1]).any()):
            out.append(r)
    return out
