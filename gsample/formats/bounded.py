"""Bounded values: results held in buffers sized by an upper bound, their true sizes on
the device.

A sync-free implementation (``gsample.backend.Impl.sync_free``) never reads a size back
to the host: where a result's size depends on the data (a frontier's unique nodes, the
edges a sample keeps) it allocates from an upper bound known from its inputs' buffer
sizes (``gsample.ir.ops.bound``) and returns one of these forms, whose valid part is
counted by 1-element int64 tensors on the device. The runtime reads every count of a
program's results in one host synchronisation at its end (:func:`counts`, then
:func:`trim`), and hands exact values (views of the buffers) to anything else.

``BoundedIds``
    ``data[:count]`` are the ids; the rest of ``data`` is padding (unspecified values).
``BoundedCSC``
    A CSC whose ``indptr`` has one entry per column of a buffer of ``C`` columns, of
    which the first ``ncols`` are real: ``indptr[c] == indptr[ncols]`` for every padding
    column, so padding columns are empty and ``indptr[-1]`` is the edge count;
    ``rows`` / ``eids`` / ``values`` are buffers of at least that many edges; ``col_ids``
    has ``C`` entries of which ``ncols`` are real. ``ncols`` None: every column is real.
    The row space is the matrix's (``row_ids`` None: all nodes, or ``nrows`` of a
    ``row_ids`` buffer).
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass

import torch

from gsample.base.readback import read_scalars
from gsample.formats.csc import CSC

#: set while a program's steps after a replayed CUDA graph run: a result that would keep a
#: view of the graph's memory (which the next replay overwrites) keeps a copy instead
COPY_OUT = contextvars.ContextVar("gsample_copy_out", default=False)


class PendingSizes:
    """The state between the two phases of a two-phase implementation
    (``gsample.backend.Impl.finish``): ``scalars``, the 1-element device tensors its finish
    reads back. A CUDA graph that ran the first phase copies them to pinned memory itself,
    so that the finish's read-back only waits."""

    scalars: tuple = ()


@dataclass(frozen=True, eq=False)
class BoundedIds:
    """Node ids ``data[:count]`` (``data``: LongTensor (L,), ``count``: LongTensor (1,))."""

    data: torch.Tensor
    count: torch.Tensor

    @property
    def bound(self) -> int:
        return int(self.data.numel())

    @property
    def device(self) -> torch.device:
        return self.data.device


@dataclass(frozen=True, eq=False)
class BoundedCSC:
    """A CSC in bounded buffers (see the module docstring)."""

    csc: CSC
    ncols: torch.Tensor | None = None
    nrows: torch.Tensor | None = None

    @property
    def num_nodes(self) -> int:
        return self.csc.num_nodes

    @property
    def device(self) -> torch.device:
        return self.csc.device

    @property
    def col_bound(self) -> int:
        return self.csc.num_cols


Bounded = (BoundedIds, BoundedCSC)


def counts(value) -> list:
    """The device scalars (1-element tensors) giving ``value``'s sizes, in a fixed order."""
    if isinstance(value, BoundedIds):
        return [value.count]
    if isinstance(value, BoundedCSC):
        out = [value.csc.indptr[-1:]]
        if value.ncols is not None:
            out.append(value.ncols)
        if value.nrows is not None:
            out.append(value.nrows)
        return out
    return []


def trim(value, sizes: list, copy: bool = False):
    """The exact value of a bounded one, given its :func:`counts` read back (``sizes``,
    Python ints in the same order). Views of the buffers, or copies with ``copy`` (when the
    buffers are reused, as a replayed CUDA graph's are)."""
    if copy:
        return trim_copies([value], [sizes])[0]
    if not isinstance(value, Bounded):
        return value
    parts, recipes = trim_parts([value])
    return rebuild(recipes, [t[:n] for (t, _, _), n in zip(parts, lengths(parts, [sizes]))])[0]


def trim_parts(values) -> tuple:
    """How a trim takes ``values`` apart (one definition for views, copies and a CUDA
    graph's packed copies): ``(parts, recipes)``.

    ``parts``: per buffer, ``(tensor, at, add)``: its first ``c + add`` entries, ``c`` the
    ``j``-th of ``counts(values[i])`` for ``at = (i, j)``, or ``add`` entries for ``at``
    None (a value that is not bounded, a buffer of fixed length). ``recipes``: per value, how
    :func:`rebuild` makes it from the parts' pieces: ``("t", part)``, ``("c", num_nodes,
    (part of each CSC field or None))`` or ``("v", value)`` (kept as it is).
    """
    parts, recipes = [], []

    def take(t, at=None, add=0):
        if t is None:
            return None
        parts.append((t, at, add))
        return len(parts) - 1

    for i, v in enumerate(values):
        if isinstance(v, BoundedIds):
            recipes.append(("t", take(v.data, (i, 0))))
        elif isinstance(v, BoundedCSC):  # counts: nnz, then ncols, nrows if any
            c = v.csc
            cols = ((i, 1), 0) if v.ncols is not None else (None, c.num_cols)
            rows = (
                ((i, 1 + (v.ncols is not None)), 0)
                if v.nrows is not None
                else (None, 0 if c.row_ids is None else c.row_ids.numel())
            )
            recipes.append(
                (
                    "c",
                    c.num_nodes,
                    (
                        take(c.indptr, cols[0], cols[1] + 1),
                        take(c.rows, (i, 0)),
                        take(c.row_ids, *rows),
                        take(c.col_ids, *cols),
                        take(c.values, (i, 0)),
                        take(c.eids, (i, 0)),
                    ),
                )
            )
        elif isinstance(v, CSC):
            recipes.append(
                (
                    "c",
                    v.num_nodes,
                    tuple(
                        take(t, None, 0 if t is None else t.shape[0])
                        for t in (getattr(v, f) for f in _FIELDS)
                    ),
                )
            )
        elif isinstance(v, torch.Tensor):
            recipes.append(("t", take(v, None, v.shape[0])))
        else:
            recipes.append(("v", v))
    return parts, recipes


def lengths(parts: list, sizes: list, limits: list | None = None) -> list:
    """Each of :func:`trim_parts`' ``parts``' length given ``sizes`` (per value, its counts
    read back), clamped into ``[0, len(tensor)]``; ``limits``: ``_limits(parts)`` (a trim
    planned once passes its own)."""
    return [
        add if at is None else min(max(sizes[at[0]][at[1]] + add, 0), top)
        for at, add, top in (limits if limits is not None else _limits(parts))
    ]


def _limits(parts: list) -> list:
    """``(at, add, buffer length)`` of each of :func:`trim_parts`' ``parts``."""
    return [(at, add, t.shape[0]) for t, at, add in parts]


def rebuild(recipes: list, pieces: list) -> list:
    """The values of :func:`trim_parts`' ``recipes`` from their parts' ``pieces``."""
    out = []
    for r in recipes:
        if r[0] == "t":
            out.append(pieces[r[1]])
        elif r[0] == "c":
            out.append(CSC.of(r[1], *[None if k is None else pieces[k] for k in r[2]]))
        else:
            out.append(r[1])
    return out


def trim_copies(values: list, sizes: list) -> list:
    """``[trim(v, s) for v, s in zip(values, sizes)]``, every tensor a copy (results leaving
    a replayed CUDA graph's memory, which the next replay overwrites), made in one
    ``torch.cat`` per dtype and device: a launch per dtype, not one per tensor. Values that
    are not bounded (``sizes`` entry unused) are copied whole (tensors, CSCs) or kept."""
    parts, recipes = trim_parts(values)
    return rebuild(
        recipes, _copy_parts([(t, n) for (t, _, _), n in zip(parts, lengths(parts, sizes))])
    )


def _copy_parts(parts: list) -> list:
    """Copies of the first ``n`` entries of each ``(tensor, n)`` of ``parts`` (``n`` None:
    all): one ``torch.cat`` per (dtype, device), then views of it from one ``split`` (a
    call, not a slice per part). One-dimensional buffers whose unused tails are small
    (at most the entries used, plus 64K) are copied whole, their tails split off unused: no
    slice of each on the host either."""
    first = parts[0][0] if parts else None
    if first is not None and all(
        t.dtype == first.dtype and t.device == first.device for t, _ in parts
    ):
        groups = {None: range(len(parts))}  # the usual case: one dtype, one device
    else:
        groups = {}
        for i, (t, _) in enumerate(parts):
            groups.setdefault((t.dtype, t.device), []).append(i)
    copies = [None] * len(parts)
    for idx in groups.values():
        tensors = [parts[i][0] for i in idx]
        used = [t.shape[0] if n is None else n for t, n in (parts[i] for i in idx)]
        whole = sum(t.numel() for t in tensors)
        if all(t.dim() == 1 for t in tensors) and whole <= 2 * sum(used) + (1 << 16):
            sizes = []
            for t, n in zip(tensors, used):
                sizes += (n, t.numel() - n)
            pieces = torch.cat(tensors).split(sizes)[::2]
            for i, piece in zip(idx, pieces):
                copies[i] = piece
            continue
        cut = [t if t.shape[0] == n else t[:n] for t, n in zip(tensors, used)]
        flat = torch.cat([t if t.dim() == 1 else t.reshape(-1) for t in cut])
        pieces = flat.split([t.numel() for t in cut])
        for i, t, piece in zip(idx, cut, pieces):
            copies[i] = piece if t.dim() == 1 else piece.view(t.shape)
    return copies


_FIELDS = ("indptr", "rows", "row_ids", "col_ids", "values", "eids")


def copy_all(values: list) -> list:
    """Copies of ``values`` (tensors and CSCs; anything else kept): every tensor of them in
    one ``torch.cat`` per dtype and device, then views of it (one launch per dtype, not one
    per tensor: results leaving a CUDA graph's memory)."""
    first = values[0] if values else None
    if (
        first.__class__ is torch.Tensor
        and first.dim() == 1
        and all(
            v.__class__ is torch.Tensor
            and v.dim() == 1
            and v.dtype == first.dtype
            and v.device == first.device
            for v in values[1:]
        )
    ):
        # the usual case (a collective sample's columns, rows and pointer): one cat, one
        # split, without the trim's recipes (a third of the host time of that copy)
        return list(torch.cat(values).split([v.shape[0] for v in values]))
    return trim_copies(values, [None] * len(values))


def read_counts(values: list, flags: list = ()) -> tuple:
    """Every count of ``values`` and every flag (nonzero: set) in ``flags``, read back in one
    host synchronisation (:func:`read_scalars`): ``(per-value size lists, flag values)``."""
    parts = [counts(v) for v in values]
    host = read_scalars([t for p in parts for t in p] + list(flags))
    out, i = [], 0
    for p in parts:
        out.append(host[i : i + len(p)])
        i += len(p)
    return out, [bool(x) for x in host[i:]]
