"""Super-batching at run time: N mini-batches as one block-diagonal graph.

A super-batched program (``gsample.passes.super_batch``) samples mini-batches
``0 .. N-1`` of a block at once, on the block-diagonal graph ``diag(A, ..., A)`` of
``N * n`` nodes: node ``v`` of batch ``b`` has the id ``b * n + v``. Every value keeps
each batch's part contiguous and in batch order (a frontier's columns, a row space,
a matrix's edges, a list of ids), so batch ``b``'s part of a value is one range of it.
The pass puts the helpers below into the program as ``DENSE`` nodes:

* :func:`decode_cols` / :func:`encode_columns` around a column slice of the graph;
* :func:`join` (per-batch values -> one value, ids encoded), :func:`join_matrices` and
  :func:`tile` (a graph-level value -> one copy per batch) where a sparse op takes them;
* :func:`bounds` and :func:`split` (a value -> its N parts, ids decoded, as the mini-batch
  would have seen it) where dense code or the output reads it;
* :class:`PerBatch` (dense code, or a sparse op as :class:`RunOp`, run once per batch),
  :class:`Elementwise` and :func:`gather` (dense code run once for all batches) and
  :class:`Assemble` (the N outputs).

The lowering (and the interpreter) run a random op on the whole graph (no frontier: the
rewrite marks it ``per_batch``) as :class:`PerBatchDraw`: once per batch, each with its
mini-batch's op key.

The sampling code (``select``, ``fused_select``) takes a :class:`gsample.base.random.BatchKeys`
and uses :func:`frontier` and :func:`encode_columns` for the graph-level sampling ops.

Examples
--------
>>> import torch
>>> enc = torch.tensor([3, 7, 10 + 3])             # n = 10: nodes 3, 7 of batch 0, 3 of batch 1
>>> [p.tolist() for p in split(enc, spec="ids", n=10, copies=2)]
[[3, 7], [3]]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from types import SimpleNamespace

import torch

from gsample.backend import get_backend, hook
from gsample.base import validate as V
from gsample.base.random import batch_ptr, frontier_ptr
from gsample.formats.csc import CSC, segment_ptr
from gsample.formats.derived import SEEDS, remember_each
from gsample.formats.layouts import to_csc
from gsample.formats.pieces import FIELDS, Pieces, SplitCSC
from gsample.ir import info
from gsample.ir.graph import Ref, map_template

# ----------------------------------------------------------------------------- frontiers
# (shared with the torch backend's super-batched sampling, which defines them)
frontier = hook("frontier")
encode_columns = hook("encode_columns")


def decode_cols(cols: torch.Tensor, n: int, copies: int) -> torch.Tensor:
    """The node ids of an encoded frontier (shape (C,)), checked as :func:`frontier` does."""
    return frontier(cols, n, copies)[0]


# ----------------------------------------------------------------------------- N parts -> one
def join(values: list, n: int, ids: bool, name: str):
    """One value from the batches' values (a sparse op's tensor input).

    ``ids``: node ids, checked as the op would check them and encoded (batch ``b``'s
    ``v`` becomes ``b * n + v``), concatenated. Otherwise tensors are concatenated along
    their first dimension (rows, columns and edges of a super-batch are the batches'
    ones in batch order); scalars (numbers, 0-dim tensors) must agree between batches.
    """
    if ids:
        parts = [
            V.ids(v, name, n, v.device if isinstance(v, torch.Tensor) else None) + b * n
            for b, v in enumerate(values)
        ]
        return torch.cat(parts)
    if any(not isinstance(v, torch.Tensor) or v.dim() == 0 for v in values):
        if not all(_same_scalar(values[0], v) for v in values[1:]):
            raise ValueError(
                f"{name}: a scalar that differs between the mini-batches of a "
                "super-batch (super_batch): pass one value per edge instead"
            )
        return values[0]
    return torch.cat(values)


def encode_entries(values: torch.Tensor, frontier: torch.Tensor, n: int, name: str):
    """Node ids given as values per entry of an encoded frontier (``t[seeds]`` of a table
    of node ids), checked as the op would check them and encoded with their entry's batch:
    ``values[i] + (frontier[i] // n) * n``."""
    v = V.ids(values, name, n, values.device, allow_empty=True)
    return v + torch.div(frontier, n, rounding_mode="floor") * n


def _same_scalar(a, b) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return (
            a.dim() == b.dim() == 0
            and a.dtype == b.dtype
            and a.device == b.device
            and bool(torch.equal(a, b))
        )
    return not isinstance(a, torch.Tensor) and type(a) is type(b) and a == b


def tile(value, n: int, copies: int, ids: bool, name: str):
    """A graph-level value given to a sparse op of a super-batch: one copy per batch."""
    if ids:
        v = V.ids(value, name, n, value.device)
        return (v + n * torch.arange(copies, device=v.device, dtype=v.dtype)[:, None]).reshape(-1)
    if not isinstance(value, torch.Tensor) or value.dim() == 0:
        return value
    return value.repeat(copies, *([1] * (value.dim() - 1)))


def join_matrices(parts: list, n: int) -> CSC:
    """The super-batch matrix of the batches' matrices (each over ``n`` nodes): batch ``b``'s
    columns, rows and edges follow those of the batches before it, its ids encoded."""
    parts = [p if isinstance(p, CSC) else to_csc(p) for p in parts]
    copies, dev = len(parts), parts[0].device
    rows_before = [0]
    for p in parts:
        rows_before.append(rows_before[-1] + p.num_rows)
    edges_before = [0]
    for p in parts:
        edges_before.append(edges_before[-1] + p.nnz)

    def ids(field, every):  # None when every batch's is None (all nodes)
        if all(getattr(p, field) is None for p in parts):
            return None
        return torch.cat([every(p) + b * n for b, p in enumerate(parts)])

    def per_edge(field, every):
        if all(getattr(p, field) is None for p in parts):
            return None
        return torch.cat([every(p) for p in parts])

    like = next((p.values.dtype for p in parts if p.values is not None), torch.float32)
    return CSC(
        num_nodes=copies * n,
        indptr=torch.cat(
            [parts[0].indptr[:1]] + [p.indptr[1:] + edges_before[b] for b, p in enumerate(parts)]
        ).to(dev),
        rows=torch.cat([p.rows + rows_before[b] for b, p in enumerate(parts)]),
        row_ids=ids("row_ids", CSC.all_row_ids),
        col_ids=ids("col_ids", CSC.global_cols),
        values=per_edge("values", lambda p: p.value_tensor(like)),
        eids=per_edge("eids", CSC.eid_tensor),
    )


# ----------------------------------------------------------------------------- one -> N parts
@dataclass(frozen=True)
class Bounds:
    """Where each batch's columns, rows and edges start in a super-batch matrix (lists of
    ``copies + 1`` positions; edges in CSC order), and the same on the device (``device``:
    a ``(3, copies + 1)`` LongTensor) for vectorised splits."""

    cols: list
    rows: list
    edges: list
    device: torch.Tensor = None


def bounds(M, n: int, copies: int) -> Bounds:
    """The :class:`Bounds` of a super-batch matrix ``M`` (any layout), read back at once
    (a CSC on a GPU: one launch, ``gsample.backend.cuda.split``)."""
    dev = M.device
    if dev.type == "cuda" and hook("split_applies")(M):
        both = hook("batch_bounds")(M, n, copies)
        c, r, e = both.tolist()
        return Bounds(c, r, e, both)
    batches = torch.arange(copies + 1, device=dev)
    # ids are grouped by batch, batches ascending (the encoding's invariant): a search each
    cols = batches * n if M.col_ids is None else torch.searchsorted(M.col_ids // n, batches)
    rows = batches * n if M.row_ids is None else torch.searchsorted(M.row_ids // n, batches)
    if isinstance(M, CSC):
        edges = M.indptr[cols]
    else:  # CSR / COO: count each batch's edges
        col_batch = M.global_cols()[M.edge_cols()] // n
        edges = segment_ptr(torch.bincount(col_batch, minlength=copies))
    both = torch.stack([cols, rows, edges])
    c, r, e = both.tolist()
    return Bounds(c, r, e, both)


# what the lowering reads of these dense steps (``Instruction.syncs``, a scheduling hint: a step
# that may read back waits for the device): bounds reads them back; a split finds each
# batch's part on the host where it is delimited by ids (``batch_ptr``)
bounds.reads_back = True


#: a batch's part of a value is a view where it starts this aligned (the alignment of a
#: fresh CUDA allocation), else a copy
_ALIGN = 512


def _part(value: torch.Tensor, lo: int, hi: int, shift) -> torch.Tensor:
    # each batch's tensor must look exactly as the mini-batch's own: same strides and an
    # alignment a fresh tensor would have, so reductions on it (vectorised by alignment)
    # round alike. A view where the part starts 512-byte aligned (a LADIES row space of n =
    # 2.4M float32: every batch's), else a copy (a copy per batch and row space is a launch
    # and a pass over the part, paid on every mini-batch: the view saves both where it can)
    part = value[lo:hi]
    if shift:
        return part - shift
    if (
        part.is_contiguous()
        and (value.data_ptr() + lo * value.stride(0) * value.element_size()) % _ALIGN == 0
    ):
        return part
    return part.clone()


def _aligned_rows(value, n: int, copies: int) -> bool:
    """Whether every batch's ``n`` rows of ``value`` start :data:`_ALIGN`-aligned (so
    :func:`_part` would make each a view)."""
    if (
        not isinstance(value, torch.Tensor)
        or value.dim() == 0
        or value.shape[0] != n * copies
        or not value.is_contiguous()
    ):
        return False
    row = value.stride(0) * value.element_size()
    return value.data_ptr() % _ALIGN == 0 and (n * row) % _ALIGN == 0


def split(value, bnd=None, *, spec, n: int, copies: int) -> list:
    """The ``copies`` parts of a super-batch value, as each mini-batch would see it.

    ``spec`` says how ``value`` lines up (``gsample.passes.super_batch`` names the op
    definitions' alignments so): ``"nodes"`` (``n`` values per batch, e.g. a per-row
    reduction over the graph's rows), ``"ids"``
    (ids, batch by batch), ``"rows"``, ``"cols"``, ``"edges"`` of the matrix whose
    :class:`Bounds` are ``bnd`` (``" ids"`` appended: they hold node ids), a tuple of
    those for a tuple value, ``"matrix"`` for a super-batch matrix, ``"walks"``
    (:func:`split_walks`), or ``"entries"`` / ``"paired"`` (one value per entry of the
    encoded frontier or ids given as ``bnd``, e.g. ``random_uniform``'s,
    ``first_reached``'s slots). Ids are decoded.
    """
    if spec == "matrix":
        return split_matrix(value, bnd, n, copies)
    if spec == "walks":
        return split_walks(value, n, copies, bnd)
    if value is None:  # an optional element of a tuple (first_reached's carry)
        return [None] * copies
    if spec in ("entries", "paired"):  # a value per entry of the encoded ids `bnd`
        return _parts_of(value, frontier_ptr(bnd, n, copies), None, copies)
    if spec == "nodes":  # one value per node of the graph, batch after batch
        if _aligned_rows(value, n, copies):  # every part a view: one call makes them
            return list(value.view(copies, n, *value.shape[1:]).unbind(0))
        return [_part(value, b * n, (b + 1) * n, 0) for b in range(copies)]
    if isinstance(spec, tuple):
        parts = [split(v, bnd, spec=s, n=n, copies=copies) for v, s in zip(value, spec)]
        return [tuple(p[b] for p in parts) for b in range(copies)]
    along, _, ids = spec.partition(" ")
    if along == "ids":
        ptr, ids = batch_ptr(value // n, copies), "ids"
    else:
        ptr = getattr(bnd, along)
    return _parts_of(value, ptr, n if ids else None, copies)


def _parts_of(value: torch.Tensor, ptr: list, n: int | None, copies: int) -> list:
    """The parts ``value[ptr[b]:ptr[b + 1]]`` (ids decoded where ``n`` is given: batch
    ``b``'s ids less ``b * n``). Integers round alike whatever their alignment, so their
    parts are views of one tensor (one decode, one split: a launch or two per value, not
    one per mini-batch); floating-point parts go through :func:`_part`."""
    if value.is_floating_point() or value.is_complex() or value.dim() == 0:
        shift = (lambda b: b * n) if n is not None else (lambda b: 0)
        return [_part(value, ptr[b], ptr[b + 1], shift(b)) for b in range(copies)]
    lo, hi = ptr[0], ptr[-1]
    part = value[lo:hi]
    if n is not None:  # each batch's ids lie in [b * n, (b + 1) * n): the remainder decodes
        part = torch.remainder(part, n)
    return list(part.split_with_sizes(_sizes(ptr)))


def _sizes(ptr: list) -> list:
    """The lengths of the ranges ``ptr`` delimits: ``ptr[b + 1] - ptr[b]`` for each ``b``."""
    return [b - a for a, b in pairwise(ptr)]


def _split_reads_back(spec, **_) -> bool:
    """Whether :func:`split` with ``spec`` reads back (its parts found on the host)."""
    if isinstance(spec, tuple):
        return any(_split_reads_back(s) for s in spec)
    return spec in ("walks", "entries", "paired") or spec.partition(" ")[0] == "ids"


split.reads_back = _split_reads_back


def split_walks(walks: torch.Tensor, n: int, copies: int, starts=None) -> list:
    """The ``copies`` mini-batches' walks of a super-batch's walks (shape (W, L + 1): a row
    per walker, grouped by batch, ids ``b * n + v``, ``-1`` after a stop): decoded in one
    pass, then views of it, one per batch (a launch or two whatever ``copies`` is; the
    views keep the super-batch's tensor alive while any of them is). ``starts``: the walks'
    encoded frontier (a walker a node), whose batches' sizes the host may know already
    (:func:`~gsample.base.random.frontier_ptr`: no read-back)."""
    if isinstance(starts, torch.Tensor) and starts.shape[0] == walks.shape[0]:
        ptr = frontier_ptr(starts, n, copies)
    else:
        ptr = batch_ptr(walks[:, 0] // n, copies)
    if walks.is_cuda and walks.dtype == torch.int64 and walks.is_contiguous() and n > 0:
        plain = hook("decode_walks")(walks, n)  # one pass where the torch ops take three
    else:
        plain = torch.where(walks >= 0, walks % n, walks)
    return list(plain.split_with_sizes(_sizes(ptr)))


def split_matrix(M, bnd: Bounds, n: int, copies: int) -> list:
    """The ``copies`` mini-batch matrices (CSC, ``n`` nodes) of a super-batch matrix.

    Vectorised: each of ``indptr``, ``rows``, ``row_ids`` and ``col_ids`` is decoded for all
    batches at once (a handful of launches whatever ``copies`` is; on a GPU one kernel,
    ``gsample.backend.cuda.split``, with ``bnd`` from :func:`bounds`), and each batch's
    matrix holds its ranges of them, no copy (equal to its own matrix, value for value)."""
    M = M if isinstance(M, CSC) else to_csc(M)
    dev = M.device
    decoded = _decoded(M, bnd, n)
    if decoded is not None:
        return _parts(M, bnd, n, copies, *decoded)
    cols_d, rows_d, edges_d = bnd.device
    batch = torch.arange(copies, device=dev)

    def owners(ptr_d, total):  # the batch of each of `total` positions delimited by ptr_d
        return torch.repeat_interleave(batch, ptr_d[1:] - ptr_d[:-1], output_size=total)

    # indptr: batch b's column pointer (c1 - c0 + 1 entries) at c0 + b, minus its first edge
    C = bnd.cols[-1] - bnd.cols[0]
    b_of = torch.repeat_interleave(batch, cols_d[1:] - cols_d[:-1] + 1, output_size=C + copies)
    at = torch.arange(C + copies, device=dev) - b_of + bnd.cols[0]
    indptr = M.indptr[at] - edges_d[b_of]
    # ids are b * n + v: v is id % n (one launch, no batch of each position needed)
    rows = M.rows[bnd.edges[0] : bnd.edges[-1]]
    if M.row_ids is None:  # rows are ids of the super-batch's graph
        rows = rows % n
    else:  # rows index the row space: each batch's start off
        rows = rows - rows_d[owners(edges_d, bnd.edges[-1] - bnd.edges[0])]
    col_ids = None if M.col_ids is None else M.col_ids[bnd.cols[0] : bnd.cols[-1]] % n
    row_ids = None if M.row_ids is None else M.row_ids[bnd.rows[0] : bnd.rows[-1]] % n
    return _parts(M, bnd, n, copies, indptr, rows, col_ids, row_ids)


def _decoded(M: CSC, bnd: Bounds, n: int):
    """``(indptr, rows, col_ids, row_ids)`` of every batch decoded by the GPU's kernels (two
    launches where the torch ops take about fifteen), or None where they do not apply (the
    CPU, other index types, bounds without their device copy)."""
    if M.device.type != "cuda" or bnd.device is None:
        return None
    if not hook("split_applies")(M):
        return None
    return hook("split_decode")(M, bnd.cols, bnd.rows, bnd.edges, bnd.device, n)


def _parts(M: CSC, bnd: Bounds, n: int, copies: int, indptr, rows, col_ids, row_ids) -> list:
    """The batches' matrices: pieces of the decoded fields (every batch's, one after
    another) and of ``M``'s values and edge ids, each batch's ranges of them (no copy). With
    :data:`LAZY_PIECES`, each field's pieces are made when any batch's is first read
    (:class:`gsample.formats.pieces.SplitCSC`), else now."""
    # each batch's pieces, one split per field (a C++ call, not a slice each); the sizes
    # from consecutive bounds (``copies + 1`` of each)
    cols, edges = bnd.cols, bnd.edges
    e_lo, e_hi = edges[0], edges[-1]
    edges_n, cols_n = _sizes(edges), _sizes(cols)
    rows_n = None if row_ids is None else _sizes(bnd.rows)
    values = None if M.values is None else M.values[e_lo:e_hi]
    eids = None if M.eids is None else M.eids[e_lo:e_hi]
    # indptr, rows and edge ids: unsafe splits (see _own_pieces); row and column ids stay
    # views to autograd (a super-batch's n_id is found by its pieces' common base, where
    # the loader gathers its rows at once: gsample.loader.features.adjacent), and so do
    # values (floating point: they may require grad)
    make = {
        "indptr": lambda: _own_pieces(indptr, [c + 1 for c in cols_n]),
        "rows": lambda: _own_pieces(rows, edges_n),
        "row_ids": lambda: row_ids.split_with_sizes(rows_n),
        "col_ids": lambda: col_ids.split_with_sizes(cols_n),
        "values": lambda: values.split_with_sizes(edges_n),
        "eids": lambda: _own_pieces(eids, edges_n),
    }
    given = {"row_ids": row_ids, "col_ids": col_ids, "values": values, "eids": eids}
    absent = tuple(k for k, v in given.items() if v is None)
    if LAZY_PIECES:
        for k in absent:
            del make[k]
        return SplitCSC.each(n, Pieces(make), M.device, edges_n, cols_n, rows_n, absent)
    none = (None,) * copies
    made = {k: none if k in absent else f() for k, f in make.items()}
    return CSC.each(n, *(made[k] for k in FIELDS))


#: a super-batch's mini-batch matrices make each field's pieces when first read
#: (:class:`gsample.formats.pieces.SplitCSC`: the same tensors, made only where read)
LAZY_PIECES = True


def _own_pieces(value: torch.Tensor, sizes: list) -> tuple:
    """``value.split_with_sizes(sizes)`` for an index tensor (integers), each piece a tensor
    of its own to autograd (``unsafe_split_with_sizes``: no view bookkeeping, a quarter less
    host work per piece). The pieces hold the same storage, offsets, shapes and strides as
    the views; they do not overlap, so an in-place write to one mini-batch's piece changes
    that piece alone, as on a mini-batch sampled alone. What differs is invisible there:
    no ``_base`` and a version counter each (an integer tensor never requires grad, and the
    decoded tensor they come from is the runtime's own, read by nothing after the split).
    One case sees the counters: ``M.eids`` is not decoded, and matrices that share it (a
    block and a value map of it, ``s`` and ``s * 2``) get pieces of the same memory with a
    counter each, so a write through one block's ``eids`` moves the other's values but not
    its ``_version`` (those blocks' ``indptr`` and ``rows`` are decoded apart: not shared at
    all, unlike a mini-batch sampled alone; blocks are not written in place)."""
    if value.is_floating_point() or value.is_complex():  # (not an index: a view each)
        return value.split_with_sizes(sizes)
    return value.unsafe_split_with_sizes(sizes)


def gather(x, ids: torch.Tensor, n: int | None = None):
    """``x[ids]`` for encoded node ids (batch ``b``'s node ``v`` is ``b * n + v``): each
    batch's part is ``x_b[v]``, its own ``x[ids]``, in batch order.

    Parameters
    ----------
    x : Tensor, shape (N * n, ...) or (n, ...)
        Encoded, a value per node of every batch (``n=None``), or graph-level, shared by
        the batches (``n`` given: the ids are decoded, ``ids % n``).
    ids : LongTensor, shape (K,)
        Encoded ids, grouped by batch.

    Returns
    -------
    Tensor, shape (K, ...)

    Examples
    --------
    >>> import torch
    >>> gather(torch.tensor([0., 1., 2., 10., 11., 12.]), torch.tensor([1, 3, 5]))
    tensor([ 1., 10., 12.])
    >>> gather(torch.tensor([0., 1., 2.]), torch.tensor([1, 3, 5]), n=3)
    tensor([1., 0., 2.])
    """
    return x[ids] if n is None else x[torch.remainder(ids, n)]


def stack(values: list) -> torch.Tensor:
    """The ``N`` mini-batches' 0-dim values as one ``(N,)`` tensor: a sparse op's input
    that holds one value per mini-batch (its alignment ``scalar``; the inverse of
    :func:`unbind`)."""
    return torch.stack([torch.as_tensor(v) for v in values])


def unbind(x: torch.Tensor) -> list:
    """The ``N`` mini-batches' 0-dim values of a super-batch op's ``(N,)`` result (one value
    per mini-batch: ``A.sum()``), views of it: what each mini-batch's own call returns.

    Examples
    --------
    >>> import torch
    >>> unbind(torch.tensor([1.0, 2.0]))
    [tensor(1.), tensor(2.)]
    """
    return list(x.unbind(0))


# ----------------------------------------------------------------------------- dense code
def _call(fn, args, kwargs):
    if isinstance(fn, tuple):  # ("method", name)
        return getattr(args[0], fn[1])(*args[1:], **kwargs)
    return fn(*args, **kwargs)


def _label(fn) -> str:
    if isinstance(fn, tuple):
        return f".{fn[1]}()"
    return getattr(fn, "__qualname__", getattr(fn, "__name__", type(fn).__name__))


class PerBatch:
    """A dense node's code run once per batch of a super-batch.

    Called with the node's inputs by name; those in ``per_batch`` are lists (one value
    per batch), the others are shared (graph-level). Returns the list of the results.
    """

    def __init__(self, fn, template, per_batch: frozenset, copies: int):
        self.fn, self.template, self.per_batch, self.copies = fn, template, per_batch, copies
        self.__name__ = self.__qualname__ = f"per_batch({_label(fn)})"

    def __call__(self, **inputs) -> list:
        out = []
        for b in range(self.copies):

            def get(ref, b=b):
                return inputs[ref.name][b] if ref.name in self.per_batch else inputs[ref.name]

            out.append(_call(self.fn, *map_template(self.template, get)))
        return out


class Elementwise:
    """Exact elementwise dense code (``gsample.passes.super_batch.exact_elementwise``) run
    once for a super-batch.

    Called with the node's inputs by name: those in ``nodes`` are encoded values with ``n``
    rows per batch (``(N * n,)``, batch ``b``'s rows ``b * n ..``), those in ``scalars``
    lists of one 0-dim tensor per batch, the others shared constants. The ``N`` mini-batch
    results (shape ``(n,)``) are the rows of one call over the ``(N, n)`` view of each
    encoded value and the ``(N, 1)`` stack of each batch's scalar, returned encoded
    (``(N * n,)``). Where the operands do not allow it (another shape, device or dtype: a
    stack would promote types otherwise than a 0-dim tensor does), the code runs batch by
    batch, its results concatenated: the same values either way.
    """

    def __init__(self, fn, template, nodes: frozenset, scalars: frozenset, copies: int, n: int):
        self.fn, self.template, self.nodes, self.scalars = fn, template, nodes, scalars
        self.copies, self.n = copies, n
        self.__name__ = self.__qualname__ = f"batched({_label(fn)})"

    def __call__(self, **inputs) -> torch.Tensor:
        batched = self._batched(inputs)
        if batched is not None:
            return batched
        return torch.cat([self._batch(inputs, b) for b in range(self.copies)])

    def _batch(self, inputs: dict, b: int):
        n = self.n

        def get(ref):
            v = inputs[ref.name]
            if ref.name in self.nodes:
                return _part(v, b * n, (b + 1) * n, 0)
            return v[b] if ref.name in self.scalars else v

        return _call(self.fn, *map_template(self.template, get))

    def _batched(self, inputs: dict):
        N, n = self.copies, self.n
        first = inputs[next(iter(self.nodes))]
        dev, dtype = first.device, first.dtype
        if dtype in (torch.float16, torch.bfloat16):  # (scalar special cases on a CPU)
            return None
        args = {}
        for k, v in inputs.items():
            if k in self.nodes:
                if v.dim() != 1 or v.numel() != N * n or v.dtype != dtype:
                    return None
                args[k] = v.view(N, n)
            elif k in self.scalars:
                if not all(
                    isinstance(x, torch.Tensor)
                    and x.dim() == 0
                    and x.dtype == dtype
                    and x.device == dev
                    for x in v
                ):
                    return None
                args[k] = torch.stack(v).view(N, 1)
            elif isinstance(v, torch.Tensor) and (v.dtype != dtype or v.dim() != 0):
                return None
            else:
                args[k] = v
        out = _call(self.fn, *map_template(self.template, lambda ref: args[ref.name]))
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != (N, n):
            return None
        return out.reshape(N * n)


class Scalars(PerBatch):
    """Exact elementwise dense code (``gsample.passes.super_batch.exact_elementwise``) on
    per-batch 0-dim tensors (those in ``per_batch``: lists, one a batch) and constants, run
    once: each list stacked
    into an ``(N,)`` tensor, one call, the result unbound into the batches' 0-dim tensors
    (LADIES' ``p.sum().clamp(min=...)``: one launch where the batches took ``N``). Where the
    operands do not allow it (another dtype or device, a tensor constant: a stack would
    promote types otherwise than 0-dim tensors do) the code runs batch by batch: the same
    values either way."""

    def __init__(self, fn, template, per_batch: frozenset, copies: int):
        super().__init__(fn, template, per_batch, copies)
        self.__name__ = self.__qualname__ = f"batched({_label(fn)})"

    def __call__(self, **inputs) -> list:
        first = inputs[next(iter(self.per_batch))][0]
        if not isinstance(first, torch.Tensor):
            return super().__call__(**inputs)
        args = {}
        for k, v in inputs.items():
            if k in self.per_batch:
                if not all(
                    isinstance(x, torch.Tensor)
                    and x.dim() == 0
                    and x.dtype == first.dtype
                    and x.device == first.device
                    for x in v
                ):
                    return super().__call__(**inputs)
                args[k] = torch.stack(v)
            elif isinstance(v, torch.Tensor):
                return super().__call__(**inputs)
            else:
                args[k] = v
        out = _call(self.fn, *map_template(self.template, lambda ref: args[ref.name]))
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != (self.copies,):
            return super().__call__(**inputs)
        return list(out.unbind())


class RunOp:
    """One sparse op on one batch's inputs (checked, then the torch backend's code): what
    :class:`PerBatch` runs for an op the block encoding cannot run once for all batches."""

    def __init__(self, op, attrs: dict):
        self.op, self.attrs = op, attrs
        self.__name__ = self.__qualname__ = op.value

    def __call__(self, **inputs):
        kwargs = {**inputs, **self.attrs}
        check = info(self.op).check
        if check is not None:
            kwargs.update(check(**kwargs))
        return get_backend("torch").run(self.op, **kwargs)


class PerBatchDraw:
    """A random op on the whole graph (no frontier) run once per mini-batch of a super-batch.

    ``fn`` is the op's implementation (``fn(**inputs, **attrs, key=...)``, a backend's
    :class:`gsample.backend.Impl` function). Called with the op's inputs, in ``names``
    order, then the op's :class:`gsample.base.random.BatchKeys`: batch ``b`` runs ``fn`` on its
    own inputs (those in ``per_batch`` are lists, one value per batch; the others are
    shared), checked by ``check`` as a mini-batch's call checks them, with the op key of
    mini-batch ``first + b`` (``keys.keys[b]``): exactly the mini-batch's own draw. Returns
    the list of the ``copies`` results.
    """

    def __init__(
        self, fn, names: tuple, attrs: dict, per_batch: frozenset, check=None, label: str = ""
    ):
        self.fn, self.names, self.attrs, self.per_batch = fn, tuple(names), attrs, per_batch
        self.check = check
        self.__name__ = self.__qualname__ = f"per_batch_draw({label or _label(fn)})"

    def __call__(self, *values) -> list:
        *values, keys = values
        out = []
        for b, key in enumerate(keys.keys):
            kwargs = {k: v[b] if k in self.per_batch else v for k, v in zip(self.names, values)}
            kwargs.update(self.attrs)
            if self.check is not None:
                kwargs.update(self.check(**kwargs))
            out.append(self.fn(**kwargs, key=key))
        return out


class Assemble:
    """The program's output, once per batch: a list of ``copies`` outputs shaped as the
    mini-batch program's (its ``template``), each value passed through ``wrap`` (the
    compiler's: a sparse format wrapped as a ``gs.Matrix``, as a mini-batch program's output
    is; default: as it is).

    The common templates (one :class:`~gsample.ir.graph.Ref`, a plain list or tuple of
    them: a sampler's block, its blocks, its walks) are built column by column, one list
    per value and one ``zip`` for all batches; any other
    (nested, a dict, a named tuple, constants) through
    :func:`~gsample.ir.graph.map_template`, batch by batch. Either way the outputs are the
    same: a container of its own per batch, and ``wrap`` called once per place and batch
    (a graph-level value shared by the batches is wrapped for each).

    ``facts`` (``gsample.passes.super_batch.block_facts``): what the mini-batch program
    keeps with its blocks, kept with each batch's (``gsample.formats.derived.remember``;
    the seeds as :data:`~gsample.formats.derived.SEEDS`, which the caller binds).
    """

    def __init__(
        self,
        template,
        per_batch: frozenset,
        copies: int,
        wrap: Callable | None = None,
        facts: tuple = (),
    ):
        self.template, self.per_batch, self.copies = template, per_batch, copies
        self.wrap = _same if wrap is None else wrap
        self.facts = facts
        # the facts of each block together (in their order): one write per block and batch
        by_block: dict = {}
        for block, op, source in facts:
            by_block.setdefault(block, []).append((op, source))
        self._by_block = tuple(by_block.items())
        self.__name__ = self.__qualname__ = "assemble_batches"
        self._flat = _flat_refs(template)

    def __call__(self, **inputs) -> list:
        if self.facts:
            self._remember(inputs)
        flat = self._flat
        if flat is not None:
            out = self._columns(flat, inputs)
            if out is not None:
                return out
        wrap = self.wrap
        return [
            map_template(
                self.template,
                lambda ref, b=b: wrap(
                    inputs[ref.name][b] if ref.name in self.per_batch else inputs[ref.name]
                ),
            )
            for b in range(self.copies)
        ]

    def _remember(self, inputs: dict) -> None:
        """Each batch's facts kept with its blocks (a dictionary write per block and batch:
        no launch); a fact whose values are not per-batch lists is left out."""
        copies, cols = self.copies, {}  # cols: each matrix list's column ids, listed once
        for block, kept in self._by_block:
            mats = inputs.get(block)
            if type(mats) is not list or len(mats) != copies:
                continue
            ops, columns = [], []
            for op, source in kept:
                kind, name = source[0], source[-1]
                if kind == "seeds":
                    values = [SEEDS] * copies
                else:
                    values = inputs.get(name)
                    if type(values) is not list or len(values) != copies:
                        continue
                    if kind == "cols":
                        if name not in cols:
                            cols[name] = [getattr(m, "col_ids", None) for m in values]
                        values = cols[name]
                ops.append(op)
                columns.append(values)
            if ops:
                remember_each(mats, ops, columns)

    def _columns(self, flat: tuple, inputs: dict):
        """The outputs of a flat template (``(container type or None, names)``), or None
        where a per-batch value is not a list of ``copies`` (the general path then says
        what is wrong, as it always has)."""
        container, names = flat
        copies, wrap = self.copies, self.wrap
        columns = []
        for name in names:
            value = inputs[name]
            if name in self.per_batch:
                if type(value) is not list or len(value) != copies:
                    return None
                columns.append([wrap(v) for v in value])
            else:  # graph-level: wrapped for each batch, as the general path does
                columns.append([wrap(value) for _ in range(copies)])
        if container is None:  # a single Ref
            return columns[0]
        if container is tuple:
            return list(zip(*columns))
        return list(map(list, zip(*columns)))


def _flat_refs(template):
    """``(None, (name,))`` for a single :class:`~gsample.ir.graph.Ref`, ``(list or tuple,
    names)`` for a plain (not a subclass) non-empty list or tuple of them, else None."""
    if isinstance(template, Ref):
        return None, (template.name,)
    if type(template) in (list, tuple) and template and all(type(t) is Ref for t in template):
        return type(template), tuple(t.name for t in template)
    return None


def _same(value):
    return value


#: what the super-batch rewrite (``gsample.passes.super_batch``) puts into a program
HELPERS = (
    "Assemble",
    "Elementwise",
    "PerBatch",
    "RunOp",
    "Scalars",
    "bounds",
    "decode_cols",
    "encode_columns",
    "encode_entries",
    "gather",
    "join",
    "join_matrices",
    "split",
    "stack",
    "tile",
    "unbind",
)


def helpers(wrap: Callable | None = None) -> SimpleNamespace:
    """The run-time helpers the super-batch rewrite puts into a program, by name
    (:data:`HELPERS`): what ``gsample.passes.super_batch.super_batch(..., helpers=)`` takes
    (the pass imports no runtime). ``wrap`` is applied to each value of the outputs
    (:class:`Assemble`), as :func:`gsample.runtime.lower.lower`'s ``wrap``.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> @gs.compile
    ... def graphsage(A, seeds):                   # two GraphSAGE layers
    ...     s1 = A[:, seeds].individual_sample(10)
    ...     return [s1, A[:, s1.all_nodes()].individual_sample(5)]
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.arange(8)
    >>> from gsample.passes import optimize
    >>> from gsample.passes.super_batch import super_batch
    >>> sb = super_batch(4, A.num_nodes, helpers=helpers())      # 4 mini-batches per call
    >>> graph = optimize(graphsage.program(A, seeds), [sb])
    """
    found = {name: globals()[name] for name in HELPERS}
    if wrap is not None:
        found["Assemble"] = lambda template, per_batch, copies, facts=(): Assemble(
            template, per_batch, copies, wrap, facts
        )
    return SimpleNamespace(**found)
