"""Extract: column and row slicing, and transposition, on PyTorch tensors."""

from __future__ import annotations

from dataclasses import replace

import torch

from gsample.backend.registry import torch_impl
from gsample.backend.torch import layerwise_native
from gsample.backend.torch.batched import frontier
from gsample.base import validate as V
from gsample.base.random import batch_ptr
from gsample.formats.csc import CSC, gather_segments, locate, segment_ptr
from gsample.ir import Op


@torch_impl(Op.SLICE_COLS)
def slice_cols(A: CSC, cols: torch.Tensor) -> CSC:
    """``A[:, cols]``: columns of ``cols`` (global ids, repeats allowed) in that order.

    A node outside the matrix's column space gives an empty column. On CPU tensors the
    native code (:func:`.layerwise_native.slice_cols`) returns the same CSC.
    """
    if cols.device.type == "cpu":
        S = layerwise_native.slice_cols(A, cols)
        if S is not None:
            return S
    index, new_indptr = gather_segments(*A.column_segments(cols))
    return replace(A.take_edges(index, new_indptr), col_ids=cols)


def _marker_pays(num_nodes: int, edge_rows: torch.Tensor, rows: torch.Tensor) -> bool:
    """Whether :func:`_locate_by_marker` beats :func:`locate` for ``A[rows, :]``: on the CPU,
    where a binary search per edge costs about ``log2(len(rows))`` dependent cache misses
    while the marker costs one write per node of the graph and one read per edge."""
    if edge_rows.device.type != "cpu":
        return False  # keep the GPU on the search: a per-call array of N nodes is its cost
    E, R = edge_rows.numel(), rows.numel()
    return R > 0 and num_nodes <= 4 * E * max(R.bit_length(), 1)


def _locate_by_marker(rows: torch.Tensor, edge_rows: torch.Tensor, num_nodes: int):
    """``locate(rows, edge_rows)`` through a node-indexed marker (no sort, no search).

    ``marker[v]`` is the position of the first occurrence of node ``v`` in ``rows``
    (``len(rows)`` where absent; ``rows`` outside ``[0, num_nodes)`` mark nothing, as they
    match no edge); ``edge_rows`` are global ids of the graph, so in ``[0, num_nodes)``.
    The hits and their positions are :func:`locate`'s; a missed edge's position differs
    (callers read positions at hits only)."""
    R = rows.numel()
    marker = torch.full((num_nodes,), R, dtype=torch.int64, device=rows.device)
    at = torch.arange(R, device=rows.device)
    inside = (rows >= 0) & (rows < num_nodes)
    if not bool(inside.all()):
        rows, at = rows[inside], at[inside]
    # amin: the first occurrence wins whatever order the writes land in
    marker.scatter_reduce_(0, rows, at, "amin")
    local = marker[edge_rows]
    return local, local < R


def slice_rows(A: CSC, rows: torch.Tensor) -> CSC:
    """``A[rows, :]``: keeps the edges whose row is in ``rows`` (global ids, no repeats).

    The row space of the result is ``rows`` in the given order.
    """
    csc = A
    edge_rows = csc.global_rows()
    if _marker_pays(csc.num_nodes, edge_rows, rows):
        local, hit = _locate_by_marker(rows, edge_rows, csc.num_nodes)
    else:
        local, hit = locate(rows, edge_rows)
    keep = hit.nonzero().squeeze(1)
    kept = segment_ptr(hit.to(torch.int64))
    counts = kept[csc.indptr[1:]] - kept[csc.indptr[:-1]]
    out = csc.take_edges(keep, segment_ptr(counts))
    return replace(out, rows=local[keep], row_ids=rows)


@torch_impl(Op.SLICE_ROWS_COLS)
def slice_rows_cols(A: CSC, rows: torch.Tensor, cols: torch.Tensor, batches=None) -> CSC:
    """``A[rows, cols]``: ``slice_rows(slice_cols(A, cols), rows)`` (the reference of the
    fused op ``SLICE_ROWS_COLS``; its backends need not build the column slice).

    On CPU tensors: the native column slice (:func:`.layerwise_native.slice_cols`), then
    :func:`slice_rows`. Elsewhere, where the marker pays (:func:`_marker_pays`), the column
    slice's edges are filtered before their values and edge ids are gathered: the same
    tensors, fewer passes.
    ``batches`` ``(N, n)``: a super-batch (:func:`slice_rows_cols_batched`)."""
    if batches is not None:
        return slice_rows_cols_batched(A, rows, cols, *batches)
    if cols.device.type == "cpu":
        # the native column slice, then the marker: faster on the CPU than gathering the
        # columns' segments with torch ops, even with the values and edge ids gathered
        # before the filter (the same CSC)
        S = layerwise_native.slice_cols(A, cols)
        if S is not None:
            return slice_rows(S, rows)
    index, ptr = gather_segments(*A.column_segments(cols))
    local_rows = A.rows[index]
    edge_rows = A.global_rows(local_rows)
    if not _marker_pays(A.num_nodes, edge_rows, rows):
        # slice_cols's take_edges, its row gather reused
        sliced = replace(
            A,
            indptr=ptr,
            rows=local_rows,
            col_ids=cols,
            values=None if A.values is None else A.values[index],
            eids=index if A.eids is None else A.eids[index],
        )
        return slice_rows(sliced, rows)
    local, hit = _locate_by_marker(rows, edge_rows, A.num_nodes)
    keep = hit.nonzero().squeeze(1)
    kept = segment_ptr(hit.to(torch.int64))
    index = index[keep]
    return replace(
        A,
        indptr=segment_ptr(kept[ptr[1:]] - kept[ptr[:-1]]),
        rows=local[keep],
        row_ids=rows,
        col_ids=cols,
        values=None if A.values is None else A.values[index],
        eids=index if A.eids is None else A.eids[index],
    )


def slice_rows_cols_batched(
    A: CSC, rows: torch.Tensor, cols: torch.Tensor, copies: int, n: int
) -> CSC:
    """``A[rows, cols]`` of ``copies`` mini-batches at once (a super-batch: ids of batch ``b``
    are ``b * n + v``, each batch's contiguous and in batch order), without the
    block-diagonal graph's column slice or a marker per batch.

    Parameters
    ----------
    A : CSC
        The graph (``n`` nodes; a matrix of ``copies * n`` nodes is a super-batch matrix
        already, sliced as one matrix).
    rows, cols : LongTensor, shapes (R,) and (C,)
        Encoded ids, grouped by batch; each batch's rows unique.
    copies, n : int
        The super-batch's ``(N, n)``.

    Returns
    -------
    CSC
        Of ``copies * n`` nodes: ``row_ids = rows``, ``col_ids = cols``, batch ``b``'s
        edges those of its own ``A[rows_b, cols_b]`` (same order, values and edge ids),
        their rows positions in ``rows``.

    Batch by batch, with one marker over the graph's ``n`` nodes that every batch shares:
    batch ``b`` gathers its columns' edges, writes its rows' positions into the marker,
    keeps its edges whose row is marked and clears what it wrote (where ``n`` dwarfs the
    super-batch's frontier edges, a search among the batch's rows instead, as
    :func:`slice_rows` chooses). Memory and time are the sampled work's (a batch's frontier
    edges at a time, which stay in cache as a mini-batch's do, and the kept edges), never an
    array of ``copies * n``. A batch repeating a row raises the ``ValueError`` of a
    mini-batch's check.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A = gs.datasets.rmat(100, 500, seed=0).csc
    >>> n = A.num_nodes
    >>> rows = torch.tensor([0, 1, 23, n + 0, n + 55])  # batch 0's rows, then batch 1's
    >>> cols = torch.tensor([1, n + 2])                  # node 1 in batch 0, node 2 in batch 1
    >>> S = slice_rows_cols_batched(A, rows, cols, 2, n)
    >>> S.num_nodes, S.indptr, S.rows                    # rows as positions in ``rows``
    (200, tensor([0, 1, 2]), tensor([2, 4]))
    """
    N = copies
    if A.num_nodes not in (n, N * n):
        raise ValueError(
            f"A: a super-batch of {N} mini-batches of {n} nodes slices the graph ({n} nodes) "
            f"or their block-diagonal matrix ({N * n}), not a matrix of {A.num_nodes}"
        )
    if A.num_nodes != n:  # a super-batch matrix: the ids are its own
        rows = V.ids(rows, "rows", A.num_nodes, A.device)
        V.unique_ids(rows, "rows")
        cols = V.ids(cols, "cols", A.num_nodes, A.device, allow_empty=True)
        return slice_rows_cols(A, rows, cols)
    v, _, cptr = frontier(cols, n, N)  # (checked: ids in range, grouped by batch)
    rows = V.ids(rows, "rows", N * n, A.device, allow_empty=True)
    rptr = batch_ptr(torch.div(rows, n, rounding_mode="floor"), N)
    indptr, seg = A.column_segments(v)
    E = int((indptr[seg + 1] - indptr[seg]).sum()) if seg.numel() else 0
    R, dev = rows.numel(), rows.device
    # one fill of n entries for the super-batch, where a mini-batch pays one per call
    marker = None
    if R and n <= 4 * E * max(R.bit_length(), 1):
        marker = torch.full((n,), -1, dtype=torch.int64, device=dev)
    at = torch.arange(R, device=dev)
    counts, local_rows, eids, values, repeats = [], [], [], [], []
    native = dev.type == "cpu"
    for b in range(N):
        r0, r1 = rptr[b], rptr[b + 1]
        # on the CPU the native column slice (its rows, edge ids and values in one pass, as a
        # mini-batch's A[rows, cols] takes them); else the columns' edge positions
        S = layerwise_native.slice_cols(A, v[cptr[b] : cptr[b + 1]]) if native else None
        if S is not None:
            ptr, edge_rows = S.indptr, A.global_rows(S.rows)
        else:
            idx, ptr = gather_segments(indptr, seg[cptr[b] : cptr[b + 1]])
            edge_rows = A.global_rows(A.rows[idx])  # node ids of the graph, in [0, n)
        mine = rows[r0:r1] - b * n
        if marker is not None:
            marker[mine] = at[r0:r1]
            repeats.append((marker[mine] != at[r0:r1]).any())
            local = marker[edge_rows]
            marker[mine] = -1
            hit = local >= 0
        else:
            V.unique_ids(mine, "rows")
            local, hit = locate(mine, edge_rows)
            local = local + r0
        keep = hit.nonzero().squeeze(1)
        kept = segment_ptr(hit.to(torch.int64))
        counts.append(kept[ptr[1:]] - kept[ptr[:-1]])
        local_rows.append(local[keep])
        if S is not None:
            eids.append(S.eids[keep])
            if A.values is not None:
                values.append(S.values[keep])
            continue
        idx = idx[keep]  # (each batch's gathers while its edges are in cache)
        eids.append(idx if A.eids is None else A.eids[idx])
        if A.values is not None:
            values.append(A.values[idx])
    if repeats and bool(torch.stack(repeats).any()):
        V.unique_ids(rows, "rows", n)  # (raises, naming the smallest repeated node)
    return replace(
        A,
        num_nodes=N * n,
        indptr=segment_ptr(torch.cat(counts)),
        rows=torch.cat(local_rows),
        row_ids=rows,
        col_ids=cols,
        values=None if A.values is None else torch.cat(values),
        eids=torch.cat(eids),
    )


def transpose(A: CSC) -> CSC:
    """``A.T``: rows become columns; the new column space is the old row space."""
    csc = A
    perm = torch.argsort(csc.rows, stable=True)
    counts = torch.bincount(csc.rows, minlength=csc.num_rows)
    return CSC(
        num_nodes=csc.num_nodes,
        indptr=segment_ptr(counts),
        rows=csc.edge_cols()[perm],
        row_ids=csc.col_ids,
        col_ids=csc.row_ids,
        values=None if csc.values is None else csc.values[perm],
        eids=perm if csc.eids is None else csc.eids[perm],
    )
