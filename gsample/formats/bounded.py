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
from dataclasses import dataclass, replace
from typing import Optional

import torch

from .csc import CSC

#: (pinned tensor, (data_ptr, dtype) -> index) of scalars a replayed CUDA graph copied out
#: itself (set by gsample.runtime.cuda_graphs); read_scalars then only waits
READ_BACK = contextvars.ContextVar("gsample_graph_read_back", default=None)


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
    ncols: Optional[torch.Tensor] = None
    nrows: Optional[torch.Tensor] = None

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
    cut = (lambda t, n: t[:n].clone()) if copy else (lambda t, n: t[:n])
    if isinstance(value, BoundedIds):
        return cut(value.data, sizes[0])
    if isinstance(value, BoundedCSC):
        c = value.csc
        nnz, rest = sizes[0], list(sizes[1:])
        ncols = rest.pop(0) if value.ncols is not None else c.num_cols
        nrows = rest.pop(0) if value.nrows is not None else None
        keep = lambda t, n: None if t is None else cut(t, n)  # noqa: E731
        return replace(
            c, indptr=cut(c.indptr, ncols + 1), rows=cut(c.rows, nnz),
            values=keep(c.values, nnz), eids=keep(c.eids, nnz),
            col_ids=keep(c.col_ids, ncols),
            row_ids=c.row_ids if nrows is None else cut(c.row_ids, nrows))
    return value.clone() if copy and isinstance(value, torch.Tensor) else value


_FIELDS = ("indptr", "rows", "row_ids", "col_ids", "values", "eids")


def copy_all(values: list) -> list:
    """Copies of ``values`` (tensors and CSCs; anything else kept): every tensor of them in
    one ``torch.cat`` per dtype and device, then views of it (one launch per dtype, not one
    per tensor: results leaving a CUDA graph's memory)."""
    tensors = []
    for v in values:
        if isinstance(v, torch.Tensor):
            tensors.append(v)
        elif isinstance(v, CSC):
            tensors.extend(getattr(v, f) for f in _FIELDS)
    groups: dict = {}
    for i, t in enumerate(tensors):
        if t is not None:
            groups.setdefault((t.dtype, t.device), []).append(i)
    copies = list(tensors)
    for idx in groups.values():
        flat = torch.cat([tensors[i] if tensors[i].dim() == 1 else tensors[i].reshape(-1)
                          for i in idx])
        at = 0
        for i in idx:
            t = tensors[i]
            n = t.numel()
            copies[i] = flat[at:at + n] if t.dim() == 1 else flat[at:at + n].view(t.shape)
            at += n
    out, j = [], 0
    for v in values:
        if isinstance(v, torch.Tensor):
            out.append(copies[j])
            j += 1
        elif isinstance(v, CSC):
            out.append(replace(v, **dict(zip(_FIELDS, copies[j:j + len(_FIELDS)]))))
            j += len(_FIELDS)
        else:
            out.append(v)
    return out


def read_scalars(scalars: list) -> list:
    """The values of 1-element tensors (ints; a bool tensor's as 0 / 1), read back in one host
    synchronisation: on a GPU each is copied into pinned host memory (no kernel), then the
    stream is waited for once."""
    if not scalars:
        return []
    if not scalars[0].is_cuda:
        return [int(t.reshape(-1)[0]) for t in scalars]
    done = READ_BACK.get()
    if done is not None:            # a replayed CUDA graph copied these to pinned memory
        pinned, known = done
        at = [known.get((t.data_ptr(), t.dtype)) for t in scalars]
        if None not in at:
            torch.cuda.current_stream(scalars[0].device).synchronize()
            host = pinned.numpy()
            return [int(host[i]) for i in at]
    ints = torch.empty(len(scalars), dtype=torch.int64, pin_memory=True)
    bools = torch.empty(len(scalars), dtype=torch.bool, pin_memory=True)
    for i, t in enumerate(scalars):
        if t.dtype not in (torch.bool, torch.int64):
            t = t.to(torch.int64)
        (bools if t.dtype == torch.bool else ints)[i:i + 1].copy_(t.reshape(1), non_blocking=True)
    torch.cuda.current_stream(scalars[0].device).synchronize()
    return [int(bools[i]) if t.dtype == torch.bool else int(ints[i])
            for i, t in enumerate(scalars)]


def read_counts(values: list, flags: list = ()) -> tuple:
    """Every count of ``values`` and every flag (nonzero: set) in ``flags``, read back in one
    host synchronisation (:func:`read_scalars`): ``(per-value size lists, flag values)``."""
    parts = [counts(v) for v in values]
    host = read_scalars([t for p in parts for t in p] + list(flags))
    out, i = [], 0
    for p in parts:
        out.append(host[i:i + len(p)])
        i += len(p)
    return out, [bool(x) for x in host[i:]]
