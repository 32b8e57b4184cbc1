"""Extract-Select fusion: ``A[:, cols].individual_sample(k)`` and ``.collective_sample(k)``
without materialising the column slice.

Each function returns exactly (bit for bit) what ``select`` returns on
``extract.slice_cols(A, cols)``: the same algorithms (shared with ``select``), the
same keys (the column's position in ``cols``, the edge's offset within its column
or the draw index), the same output layout (row space of ``A``, column space
``cols``, values and original edge ids of the chosen edges). What is never built:

* individual sampling works from each column's start and degree
  (``indptr[cols]``, ``indptr[cols + 1]``) and gathers rows, values and edge ids of
  the *selected* edges only. Uniform with replacement is ``O(k)`` per column,
  uniform without replacement makes ``k`` draws per column with more than ``k``
  edges (Floyd's algorithm) and reads none of its edges;
  weighted sampling gathers the probabilities of the frontier's edges, nothing else.
* collective sampling gathers the frontier's row ids (it needs them to find the
  candidate rows), never the slice's values or edge ids.

``probs`` is aligned with the edges of ``A`` (shape ``(A.nnz,)``), not with the
slice: the slice's probabilities are ``probs`` gathered at the slice's edges.
``node_probs`` has one value per row of ``A``'s row space (a column slice keeps
the row space).

Super-batches: with a :class:`gsample.base.random.BatchKeys` key, ``A`` is the graph and
``cols`` a frontier of the block-diagonal graph of N mini-batches (ids ``b * n + v``,
see :mod:`gsample.runtime.block_diagonal`); the result is that graph's sample, every
batch's part bit for bit
the mini-batch's own. ``probs`` may then be the graph's (``(A.nnz,)``, shared by the
batches) or one per batch (``(N * A.nnz,)``), ``node_probs`` likewise ``(n,)`` or
``(N * n,)``. These inputs are checked here, per batch.
"""

from __future__ import annotations

from dataclasses import replace as dc_replace

import torch

from gsample.backend.registry import torch_impl
from gsample.backend.torch import alias as _alias
from gsample.backend.torch import compute, layerwise_native, nodewise_native
from gsample.backend.torch.batched import encode_columns, frontier
from gsample.backend.torch.select import (
    METHODS,
    Draws,
    _draws_fit,
    _method,
    choose_among,
    choose_rows,
    keep_rows,
    select_in_columns,
)
from gsample.base import validate as V
from gsample.base.random import BatchKeys
from gsample.formats.csc import CSC, gather_segments, segment_ptr
from gsample.ir import Op


def _result(
    A: CSC,
    cols: torch.Tensor,
    indptr: torch.Tensor,
    edges: torch.Tensor,
    rows: torch.Tensor | None = None,
    row_ids=None,
) -> CSC:
    """The sample: edges ``edges`` of ``A`` (positions, CSC order) over columns ``cols``."""
    return CSC(
        num_nodes=A.num_nodes,
        indptr=indptr,
        rows=A.rows[edges] if rows is None else rows,
        row_ids=A.row_ids if row_ids is None else row_ids,
        col_ids=cols,
        values=None if A.values is None else A.values[edges],
        eids=edges if A.eids is None else A.eids[edges],
    )


@torch_impl(Op.SLICE_INDIVIDUAL_SAMPLE)
def slice_individual_sample(
    A: CSC,
    cols: torch.Tensor,
    k: int,
    replace: bool,
    key: int,
    probs: torch.Tensor | None = None,
    draws=Draws,
    method: str = "cdf",
    alias: torch.Tensor | None = None,
    checked: bool = True,
) -> CSC:
    """``A[:, cols].individual_sample(k, probs[slice edges], replace)`` without the slice.

    Parameters
    ----------
    A : CSC
        The matrix sliced (usually the whole graph).
    cols : LongTensor, shape (C,)
        The frontier: global ids, repeats allowed (each repeat samples independently).
    k, replace, key
        As ``select.individual_sample``.
    probs : Tensor, shape (A.nnz,), optional
        Edge weights aligned with ``A``'s edges.
    method : {"cdf", "alias"}
        How weighted draws with replacement are made (``select``'s module docstring).
    alias : LongTensor, shape (A.nnz, 2), optional
        ``A``'s alias tables for ``probs`` (the ``alias_table`` op, built once per graph by
        pre-processing); None with ``method="alias"`` builds the frontier's columns' tables
        from ``probs`` here (the same tables: they are column-local).
    checked : bool
        False: ``probs``' values come unchecked (a backend that registers
        ``checks=("probs",)``); the frontier's are checked with the draws.

    Returns
    -------
    CSC
        Row space of ``A``, column space ``cols``; bit-identical to the unfused result.
    """
    if (  # CPU tensors: native code where it takes the inputs (nodewise_native), the same bits
        draws is Draws
        and method in METHODS
        and cols.device.type == "cpu"
        and nodewise_native.enabled()
    ):
        out = nodewise_native.slice_individual_sample(
            A, cols, k, replace, key, probs, method, checked
        )
        if out is not None:
            return out
    if isinstance(key, BatchKeys):
        return _batched_individual(A, cols, k, replace, key, probs, method, alias, draws)
    indptr_a, seg = A.column_segments(cols)
    starts = indptr_a[seg]
    deg = indptr_a[seg + 1] - starts
    probs_s, table = _frontier_weights(
        indptr_a, seg, deg, starts, k > 0 or not checked, replace, probs, method, alias
    )
    nodes = None if checked else cols
    indptr, col, offset = select_in_columns(
        deg, k, replace, key, probs_s, draws, method, table, nodes
    )
    return _result(A, cols, indptr, starts[col] + offset)


def _frontier_weights(indptr_a, seg, deg, starts, needed, replace, probs, method, alias):
    """The frontier's weights (``probs`` gathered at its columns' edges, when ``needed``: a
    draw or a check reads them) and, for alias draws from tables built beforehand, the local
    form of their rows."""
    if probs is None or not needed:
        return None, None
    # weighted sampling reads every weight of the frontier's columns (and only those)
    index, _ = gather_segments(indptr_a, seg)
    return probs[index], _table(alias, index, starts, deg, replace, probs, method)


def _table(alias, index, starts, deg, replace, probs, method):
    """The local form of ``alias`` at the edges ``index`` (None: no table built beforehand,
    or no alias draws)."""
    if alias is None or not _method(method, replace, probs):
        return None
    return _alias.local(alias, index, starts.repeat_interleave(deg, output_size=index.numel()))


@torch_impl(Op.SLICE_COLLECTIVE_SAMPLE)
def slice_collective_sample(
    A: CSC,
    cols: torch.Tensor,
    k: int,
    replace: bool,
    key: int,
    node_probs: torch.Tensor | None = None,
    draws=Draws,
    probs_in_slice: bool = False,
) -> CSC:
    """``A[:, cols].collective_sample(k, node_probs, replace)`` without the slice's values.

    Parameters
    ----------
    A : CSC
        The matrix sliced (usually the whole graph).
    cols : LongTensor, shape (C,)
        The frontier: global ids, repeats allowed.
    k, replace, key
        As ``select.collective_sample``.
    node_probs : Tensor, shape (A.num_rows,), optional
        One weight per row of ``A``'s row space.
    draws
        Who makes the draws (``select.Draws`` or a backend's kernels).
    probs_in_slice : bool
        ``node_probs`` is 0 off the slice's rows (``passes.probs_support``): a hint for
        kernels that would mark those rows; this code gathers them anyway.

    Returns
    -------
    CSC
        Row space = the chosen rows, column space ``cols``; bit-identical to the
        unfused result.
    """
    if isinstance(key, BatchKeys):
        return _batched_collective(A, cols, k, replace, key, node_probs)
    if draws is Draws and cols.device.type == "cpu":  # native passes where they take the inputs
        out = _native_collective(A, cols, k, replace, key, node_probs)
        if out is not None:
            return out
    indptr_a, seg = A.column_segments(cols)
    index, indptr_s = gather_segments(indptr_a, seg)
    rows_s = A.rows[index]  # the frontier's rows: the candidates
    chosen = choose_rows(rows_s, A.num_rows, A.global_rows, k, replace, key, node_probs, draws)
    indptr, kept, rows = keep_rows(indptr_s, rows_s, A.num_rows, chosen)
    return _result(A, cols, indptr, index[kept], rows=rows, row_ids=A.global_rows(chosen))


def _native_collective(A: CSC, cols, k, replace, key, node_probs):
    """:func:`slice_collective_sample` with the frontier's passes in native code
    (:mod:`.layerwise_native`: the candidates, then the kept edges) around the same draw
    (:func:`choose_among`): the same CSC, bit for bit; None where the torch code must run."""
    found = layerwise_native.candidates(A, cols, node_probs)
    if found is None:
        return None
    cand, E = found
    chosen = choose_among(cand, E, A.global_rows, k, replace, key, node_probs)
    kept = layerwise_native.keep_chosen(A, cols, chosen, E)
    if kept is None:
        return None
    indptr, eids, rows, values = kept
    return CSC.of(A.num_nodes, indptr, rows, A.global_rows(chosen), cols, values, eids)


# ----------------------------------------------------------------------------- super-batches
def _per_batch_weights(w, name: str, length: int, copies: int, what: str):
    """Check weights with one value per ``what`` of the graph: True when ``w`` holds one block
    of them per batch (``copies * length`` values), False when the batches share it."""
    if w.dim() != 1 or w.shape[0] not in (length, copies * length):
        raise ValueError(
            f"{name}: expected one probability per {what} (shape ({length},)), "
            f"got shape {tuple(w.shape)}"
        )
    if not w.is_floating_point():
        raise TypeError(f"{name}: probabilities must be floating point, got dtype {w.dtype}")
    return w.shape[0] != length or copies == 1


def _batched_individual(
    A: CSC, cols, k, replace, key: BatchKeys, probs, method="cdf", alias=None, draws=Draws
):
    n, copies = key.num_nodes, key.copies
    nodes, batch, ptr = frontier(cols, n, copies)
    indptr_a, seg = A.column_segments(nodes)
    starts = indptr_a[seg]
    deg = indptr_a[seg + 1] - starts
    probs_s = table = None
    if probs is not None:
        own = _per_batch_weights(probs, "probs", A.nnz, copies, "edge")
        index, _ = gather_segments(indptr_a, seg)
        # tables built beforehand are the graph's (shared weights), read at the graph's edges
        table = _table(None if own else alias, index, starts, deg, replace, probs, method)
        if own:  # batch b's weights follow the b batches before it
            index = index + A.nnz * torch.repeat_interleave(batch, deg, output_size=index.numel())
        probs_s = probs[index]  # checked by select_in_columns (nodes)
    indptr, col, offset = select_in_columns(
        deg,
        k,
        replace,
        key.columns(cols, batch, ptr),
        probs_s,
        draws,
        method=method,
        table=table,
        nodes=nodes,
    )
    return encode_columns(_result(A, nodes, indptr, starts[col] + offset), cols, n, copies)


def _batched_collective(A: CSC, cols, k, replace, key: BatchKeys, node_probs):
    n, copies = key.num_nodes, key.copies
    if A.row_ids is not None:
        raise RuntimeError("super-batch: a fused collective sample must slice the whole graph")
    nodes, batch, ptr = frontier(cols, n, copies)
    shared = True
    if node_probs is not None:
        shared = not _per_batch_weights(node_probs, "node_probs", n, copies, "row")
        V.finite_nonnegative(node_probs, "node_probs")  # once, before the copies
    if cols.device.type == "cpu":  # native passes, a mini-batch at a time
        out = _native_batches(A, cols, nodes, ptr, k, replace, key, node_probs, shared)
        if out is not None:
            return out
    indptr_a, seg = A.column_segments(nodes)
    index, indptr_s = gather_segments(indptr_a, seg)
    # the frontier's rows in the block-diagonal row space (A's rows are all n nodes)
    owner = torch.repeat_interleave(batch, indptr_s[1:] - indptr_s[:-1], output_size=index.numel())
    rows_s = A.rows[index] + owner * n
    if node_probs is not None and shared:
        node_probs = node_probs.repeat(copies)
    chosen = choose_rows(rows_s, n * copies, lambda rows: rows, k, replace, key, node_probs)
    indptr, kept, rows = keep_rows(indptr_s, rows_s, n * copies, chosen)
    out = _result(A, cols, indptr, index[kept], rows=rows, row_ids=chosen)
    return dc_replace(out, num_nodes=n * copies)


def _native_batches(A: CSC, cols, nodes, ptr, k, replace, key: BatchKeys, node_probs, shared):
    """:func:`_batched_collective` on CPU tensors as each mini-batch samples on its own
    (:func:`_native_collective`'s passes and draw, with the batch's key and weights), the
    results laid side by side in the block-diagonal spaces: the same CSC, bit for bit
    (each batch keeps the rows it keeps on its own), in time linear in the super-batch where
    the torch code sorts its edges and candidates. None where the torch code must run."""
    n, copies = key.num_nodes, key.copies
    _draws_fit(k, replace, copies, cols.device)
    parts = []
    for b in range(copies):
        nodes_b = nodes[ptr[b] : ptr[b + 1]]
        probs = node_probs if shared or node_probs is None else node_probs[b * n : (b + 1) * n]
        found = layerwise_native.candidates(A, nodes_b, probs)
        if found is None:
            return None
        cand, E = found
        chosen = choose_among(cand, E, A.global_rows, k, replace, key.keys[b], probs)
        kept = layerwise_native.keep_chosen(A, nodes_b, chosen, E)
        if kept is None:
            return None
        parts.append((chosen + b * n, *kept))
    chosen, indptrs, eids, rows, values = zip(*parts)
    # batch b's edges and rows follow those of the batches before it
    edge_at = torch.tensor([0, *(int(p[-1]) for p in indptrs)]).cumsum(0)
    row_at = torch.tensor([0, *(c.numel() for c in chosen)]).cumsum(0)
    indptr = torch.cat([indptrs[0][:1], *(p[1:] + at for p, at in zip(indptrs, edge_at))])
    return CSC(
        num_nodes=n * copies,
        indptr=indptr,
        rows=torch.cat([r + at for r, at in zip(rows, row_at)]),
        row_ids=torch.cat(chosen),
        col_ids=cols,
        values=None if values[0] is None else torch.cat(values),
        eids=torch.cat(eids),
    )


# ----------------------------------------------------------------------------- listed rows
def listed_probs(A: CSC, cols: torch.Tensor, row_weights: torch.Tensor, scale):
    """The slice ``A[:, cols]``'s distinct rows and their probabilities, listed.

    Parameters
    ----------
    A : CSC
        The graph (every node a row).
    cols : LongTensor, shape (C,)
        The frontier.
    row_weights : Tensor, shape (A.nnz,)
        A weight per edge of ``A`` (a matrix of ``A``'s edges: its values).
    scale : Tensor, 0-dim, or a number

    Returns
    -------
    rows : LongTensor, shape (L,)
        The slice's rows holding an edge, ascending.
    probs : Tensor, shape (L,)
        ``W[:, cols].sum(axis=1)[rows] / scale``: each row's weights summed in the slice's
        edge order (what the dense row sums add, in their order: the same bits), then
        divided as dense code divides the whole vector.
    index, indptr : LongTensor
        The slice's edges (positions in ``A``, CSC order) and its column pointer.
    """
    indptr_a, seg = A.column_segments(cols)
    index, indptr = gather_segments(indptr_a, seg)
    rows_s = A.rows[index]
    order = torch.argsort(rows_s, stable=True)
    rows, counts = torch.unique_consecutive(rows_s[order], return_counts=True)
    sums = compute._segment(row_weights[index][order], "sum", counts)
    return rows, sums / scale, index, indptr, rows_s


def _listed_native(A: CSC, cols, row_weights, scale, k: int, replace: bool, key):
    """:func:`_listed_one` by the native passes (:mod:`.layerwise_native`: the slice's rows,
    their sums, the kept edges, each in time linear in the slice; a bitmap, no array over
    the row space), or None where the torch code must run."""
    found = layerwise_native.candidates(A, cols, None)
    if found is None:
        return None
    rows, E = found
    sums = layerwise_native.listed_row_sum(A, cols, rows, row_weights, E)
    if sums is None:
        return None
    probs = sums / scale
    V.finite_nonnegative(probs, "node_probs")  # as the dense probabilities are checked
    positive = probs > 0
    chosen = choose_among(
        rows[positive], E, A.global_rows, k, replace, key, cand_probs=probs[positive]
    )
    kept = layerwise_native.keep_chosen(A, cols, chosen, E)
    if kept is None:
        return None
    indptr, eids, local, values = kept
    return CSC.of(A.num_nodes, indptr, local, A.global_rows(chosen), cols, values, eids)


def _listed_one(A: CSC, cols, row_weights, scale, k: int, replace: bool, key):
    """:func:`listed_collective_sample` of one mini-batch: no tensor over ``A``'s rows."""
    if cols.device.type == "cpu":
        out = _listed_native(A, cols, row_weights, scale, k, replace, key)
        if out is not None:
            return out
    rows, probs, index, indptr_s, rows_s = listed_probs(A, cols, row_weights, scale)
    V.finite_nonnegative(probs, "node_probs")  # as the dense probabilities are checked
    positive = probs > 0
    cand, probs = rows[positive], probs[positive]
    chosen = choose_among(cand, index.numel(), A.global_rows, k, replace, key, cand_probs=probs)
    # the slice's edges whose row is chosen (chosen ascending: a search, not a row-space map)
    at = torch.searchsorted(chosen, rows_s)
    if chosen.numel():
        kept_mask = chosen[at.clamp(max=chosen.numel() - 1)] == rows_s
    else:
        kept_mask = torch.zeros_like(rows_s, dtype=torch.bool)
    cum = segment_ptr(kept_mask.to(torch.int64))
    indptr = segment_ptr(cum[indptr_s[1:]] - cum[indptr_s[:-1]])
    kept = kept_mask.nonzero().squeeze(1)
    return _result(A, cols, indptr, index[kept], rows=at[kept], row_ids=A.global_rows(chosen))


@torch_impl(Op.LISTED_COLLECTIVE_SAMPLE)
def listed_collective_sample(
    A: CSC, cols: torch.Tensor, row_weights: torch.Tensor, scale, k: int, replace: bool, key
) -> CSC:
    """``A[:, cols].collective_sample(k, node_probs=p, replace)`` with ``p = W[:, cols]
    .sum(axis=1) / scale`` (``W``: ``A``'s edges with values ``row_weights``), ``p``
    evaluated at the slice's rows only (:func:`listed_probs`): the rows, edges and draws of
    :func:`slice_collective_sample` given the dense ``p``, bit for bit, in work linear in
    the slice (no tensor over ``A``'s rows). With :class:`BatchKeys` (a super-batch: ``cols``
    encoded, ``scale`` each mini-batch's, shape (N,), or one for all), each mini-batch
    draws as on its own, the results laid side by side in the block-diagonal spaces."""
    if not isinstance(key, BatchKeys):
        return _listed_one(A, cols, row_weights, scale, k, replace, key)
    n, copies = key.num_nodes, key.copies
    if A.row_ids is not None:
        raise RuntimeError("super-batch: a fused collective sample must slice the whole graph")
    _draws_fit(k, replace, copies, cols.device)
    nodes, _, ptr = frontier(cols, n, copies)
    per = isinstance(scale, torch.Tensor) and scale.dim() == 1
    parts = [
        _listed_one(
            A,
            nodes[ptr[b] : ptr[b + 1]],
            row_weights,
            scale[b] if per else scale,
            k,
            replace,
            key.keys[b],
        )
        for b in range(copies)
    ]
    edge_at = torch.tensor([0, *(int(p.indptr[-1]) for p in parts)]).cumsum(0).tolist()
    row_at = torch.tensor([0, *(p.row_ids.numel() for p in parts)]).cumsum(0).tolist()
    dev = cols.device
    return CSC(
        num_nodes=n * copies,
        indptr=torch.cat(
            [torch.zeros(1, dtype=torch.int64, device=dev)]
            + [p.indptr[1:] + at for p, at in zip(parts, edge_at)]
        ),
        rows=torch.cat([p.rows + at for p, at in zip(parts, row_at)]),
        row_ids=torch.cat([p.row_ids + b * n for b, p in enumerate(parts)]),
        col_ids=cols,
        values=None if A.values is None else torch.cat([p.values for p in parts]),
        eids=torch.cat([p.eids for p in parts]),
    )
