"""Graph inputs: the CSC construction behind ``Matrix.from_edge_index`` / ``from_csc``;
scipy.sparse, networkx and PyG ``Data`` to :class:`gsample.Matrix`; text edge lists read a
block at a time.

The graph's CSC order (the determinism contract's: every sampler sees it) is: column by
column, within a column by row id, ties by input position; edge ids are input positions.
The construction needs little memory beyond the CSC it returns, at any size: the edges are
counted per column (``indptr``), their positions bucketed by range of columns (one pass,
written into the edge-id array itself), then each range sorted once by a
``(column, row)`` key (stable: ties keep their input order). Edges that come in column
order are only checked (one pass) and copied; a column whose rows are not ascending is the
only thing sorted (with its range, when unsorted columns hold most of it), and without one
no edge ids are kept (``eids=None``: the identity). Every step works on a range of about
:func:`default_chunk` edges: scratch of about 3 bytes an edge of the graph, against the
CSC's 8 (rows) or 16 (rows and edge ids); ``benchmarks/constructors_memory.py`` measures it.
"""

from __future__ import annotations

import gzip
import io
import itertools
import numbers
import os
import warnings

import numpy as np
import torch
from tqdm.auto import tqdm

from gsample.base import validate as V
from gsample.formats.csc import CSC, segment_ptr

__all__ = [
    "check_ids",
    "column_ranges",
    "csc_from_columns",
    "csc_from_edges",
    "from_networkx",
    "from_pyg",
    "from_scipy",
    "read_edge_list",
    "relabel_ids",
]

#: the construction works on ranges of about ``max(MIN_CHUNK, E // PIECES)`` edges: its
#: scratch (about 48 bytes an edge of a range: keys, the sort's outputs and buffers, a
#: gather) stays near 3 bytes an edge of the graph
MIN_CHUNK = 1 << 20
PIECES = 16


def default_chunk(num_edges: int) -> int:
    """Edges per range of the construction (:data:`MIN_CHUNK`, :data:`PIECES`)."""
    return max(MIN_CHUNK, -(-num_edges // PIECES))


def check_ids(t: torch.Tensor, name: str, num_nodes: int) -> None:
    """Raise an IndexError naming ``name`` when an id of ``t`` (any integer dtype, read as
    it is: no widened copy) is outside ``[0, num_nodes)``."""
    if t.numel() == 0:
        return
    lo, hi = (int(x) for x in torch.aminmax(t))
    if lo < 0:
        raise IndexError(f"{name}: node id {lo} is negative")
    if hi >= num_nodes:
        raise IndexError(f"{name}: node id {hi} is out of range for a graph of {num_nodes} nodes")


def _key_bits(num_nodes: int) -> tuple[int, int]:
    """``(bits, span)``: a sort key is ``column offset << bits | row`` (rows fill ``bits``
    bits); ``span`` columns of offsets keep it below ``2**62`` (non-negative int64)."""
    bits = max(int(num_nodes - 1).bit_length(), 1)
    return bits, 1 << max(62 - bits, 0)


def column_ranges(
    indptr: torch.Tensor, limit: int, span: int | None = None
) -> list[tuple[int, int, int, int]]:
    """``[(c0, c1, p0, p1)]``: ranges of whole columns ``c0..c1-1`` (edges ``p0..p1-1``) of
    about ``limit`` edges (more where one column alone holds more), at most ``span``
    columns each (any number without); ranges without edges are left out.

    Examples
    --------
    >>> import torch
    >>> column_ranges(torch.tensor([0, 2, 2, 5, 6]), 3)
    [(0, 3, 0, 5), (3, 4, 5, 6)]
    """
    n = indptr.numel() - 1
    span = max(n, 1) if span is None else span
    total = int(indptr[-1])
    if n <= 0 or total == 0:
        return []
    marks = torch.arange(limit, max(total, limit), limit, device=indptr.device)
    # each range ends at the first column boundary at or past a multiple of ``limit``
    cuts = sorted({0, n, *torch.searchsorted(indptr, marks).tolist()})
    cols = []
    for lo, hi in itertools.pairwise(cuts):
        cols.extend((c, min(c + span, hi)) for c in range(lo, hi, span))
    at = indptr[torch.tensor([c for c, _ in cols] + [cols[-1][1]], device=indptr.device)]
    at = at.tolist()
    return [(c0, c1, at[i], at[i + 1]) for i, (c0, c1) in enumerate(cols) if at[i + 1] > at[i]]


def _ascending(t: torch.Tensor, chunk: int) -> bool:
    """Whether ``t`` is non-decreasing (a pass of ``chunk``-sized pieces: the comparison's
    scratch stays one bool per element of a piece)."""
    n = t.numel()
    for a in range(0, max(n - 1, 0), chunk):
        piece = t[a : min(a + chunk + 1, n)]
        if bool((piece[1:] < piece[:-1]).any()):
            return False
    return True


def csc_from_edges(
    src: torch.Tensor,
    dst: torch.Tensor,
    num_nodes: int,
    weight: torch.Tensor | None = None,
    chunk: int | None = None,
) -> CSC:
    """The graph's CSC of edges ``src[e] -> dst[e]``, in the graph's CSC order.

    Parameters
    ----------
    src, dst : Tensor, shape (E,)
        Any integer dtype (read as they are: no widened copy), ids in ``[0, num_nodes)``
        (checked by the caller: :func:`check_ids`).
    num_nodes : int
    weight : Tensor, shape (E,), optional
        The values, permuted with the edges.
    chunk : int, optional
        Edges per range (default :func:`default_chunk`).

    Returns
    -------
    CSC
        ``rows`` int64; ``eids`` the input positions, or None when that is the identity
        (the edges came sorted by ``(dst, src)``).

    Examples
    --------
    >>> import torch
    >>> c = csc_from_edges(torch.tensor([2, 0, 1]), torch.tensor([1, 1, 0]), 3)
    >>> c.indptr, c.rows, c.eids
    (tensor([0, 1, 3, 3]), tensor([1, 0, 2]), tensor([2, 1, 0]))
    """
    e = src.numel()
    chunk = default_chunk(e) if chunk is None else chunk
    block = 1 << 30  # a kernel may count elements in 32 bits
    counts = torch.bincount(dst[:block], minlength=num_nodes)
    for a in range(block, e, block):
        counts += torch.bincount(dst[a : a + block], minlength=num_nodes)
    indptr = segment_ptr(counts)
    del counts
    if _ascending(dst, chunk):  # already by column: a CSC, maybe unsorted within columns
        return csc_from_columns(indptr, src, num_nodes, weight, chunk, own_indptr=True)
    dev = src.device
    rows = torch.empty(e, dtype=torch.int64, device=dev)
    eids = torch.empty(e, dtype=torch.int64, device=dev)
    values = None if weight is None else torch.empty_like(weight)
    bits, span = _key_bits(num_nodes)
    ranges = column_ranges(indptr, chunk, span)
    _bucket(dst, ranges, eids, num_nodes, chunk)
    for c0, _, p0, p1 in ranges:
        pos = eids[p0:p1]  # the range's edges, in input order
        key = dst[pos].to(torch.int64)
        key.sub_(c0).bitwise_left_shift_(bits).add_(src[pos])
        key, order = torch.sort(key, stable=True)  # ties keep their input order
        torch.bitwise_and(key, (1 << bits) - 1, out=rows[p0:p1])
        del key
        pos.copy_(pos[order])
        del order
        if values is not None:
            torch.index_select(weight, 0, pos, out=values[p0:p1])
    return CSC(num_nodes, indptr, rows, values=values, eids=eids)


def _bucket(dst: torch.Tensor, ranges: list, out: torch.Tensor, num_nodes: int, chunk: int) -> None:
    """Write the positions of the edges of each column range (``dst`` in it) to the range's
    slice ``out[p0:p1]``, ascending: a block of ``chunk`` edges at a time, each edge's range
    number (a byte an edge of the block, from a table over the columns), counted per range,
    then one pass over those per range (scratch: about 2 bytes an edge of a block; each
    ``nonzero`` sees fewer than ``2**30`` elements, as some kernels count in 32 bits)."""
    if len(ranges) == 1:
        torch.arange(dst.numel(), out=out)
        return
    small = len(ranges) < 256
    table = torch.zeros(num_nodes, dtype=torch.uint8 if small else torch.int32, device=dst.device)
    for k, (c0, c1, _, _) in enumerate(ranges):
        table[c0:c1] = k
    cursor = [p0 for _, _, p0, _ in ranges]  # where each range's next positions go
    step = min(chunk, 1 << 30)
    for a in range(0, dst.numel(), step):
        d = dst[a : a + step]
        rid = table[d if d.dtype in (torch.int32, torch.int64) else d.to(torch.int32)]
        counts = torch.bincount(rid, minlength=len(ranges)).tolist()  # one read-back a block
        for k, m in enumerate(counts):
            if m:
                at = out[cursor[k] : cursor[k] + m].view(-1, 1)
                torch.nonzero(rid == k, out=at)
                at.add_(a)
                cursor[k] += m


def csc_from_columns(
    indptr: torch.Tensor,
    rows: torch.Tensor,
    num_nodes: int,
    weight: torch.Tensor | None = None,
    chunk: int | None = None,
    own_indptr: bool = False,
) -> CSC:
    """The graph's CSC of a CSC (column ``j``: rows ``rows[indptr[j]:indptr[j + 1]]``):
    the columns whose rows are not ascending sorted (stable), the others copied.

    Parameters
    ----------
    indptr : LongTensor, shape (N + 1,)
        Checked by the caller (from 0 to ``E``, non-decreasing).
    rows : Tensor, shape (E,)
        Any integer dtype, ids in ``[0, num_nodes)`` (checked by the caller).
    num_nodes : int
    weight : Tensor, shape (E,), optional
        The values, permuted with the rows.
    chunk : int, optional
        Edges per step (default :func:`default_chunk`).
    own_indptr : bool
        ``indptr`` is the construction's own (else the CSC gets a copy: the caller's
        tensors are never aliased).

    Returns
    -------
    CSC
        ``eids`` the input positions, or None when every column was sorted already.

    Examples
    --------
    >>> import torch
    >>> c = csc_from_columns(torch.tensor([0, 2, 3]), torch.tensor([1, 0, 1]), 2)
    >>> c.rows, c.eids
    (tensor([0, 1, 1]), tensor([1, 0, 2]))
    """
    e = rows.numel()
    chunk = default_chunk(e) if chunk is None else chunk
    ptr = indptr if own_indptr else indptr.clone()
    out = rows.to(torch.int64, copy=True)
    values = None if weight is None else weight.clone()
    dev = out.device
    eids = None  # until a column is sorted: the identity
    bits, span = _key_bits(num_nodes)
    for c0, c1, p0, p1 in column_ranges(ptr, chunk, span):
        cols = _unsorted_columns(ptr, out, c0, c1, p0, p1)  # offsets from c0
        if cols.numel() == 0:
            continue
        if eids is None:
            eids = torch.arange(e, device=dev)
        if cols.numel() < c1 - c0:  # some columns are sorted: sort the others alone when
            starts = ptr[cols + c0]
            counts = ptr[cols + c0 + 1] - starts
            total = int(counts.sum())
            if 2 * total < p1 - p0:  # they hold under half the range's edges
                # the positions of their edges, column by column, ascending within each
                local = torch.repeat_interleave(
                    torch.arange(cols.numel(), device=dev), counts, output_size=total
                )
                index = torch.arange(total, device=dev)
                index += (starts - segment_ptr(counts)[:-1])[local]
                del starts, counts, cols
                _sort_edges(out, eids, values, weight, local, index, bits)
                continue
            del starts, counts
        del cols
        # a sorted column sorts to itself (stable): the range is sorted as one slice
        local = torch.repeat_interleave(
            torch.arange(c1 - c0, device=dev),
            ptr[c0 + 1 : c1 + 1] - ptr[c0:c1],
            output_size=p1 - p0,
        )
        _sort_edges(out, eids, values, weight, local, slice(p0, p1), bits)
    return CSC(num_nodes, ptr, out, values=values, eids=eids)


def _unsorted_columns(indptr, rows, c0: int, c1: int, p0: int, p1: int) -> torch.Tensor:
    """The columns of ``c0..c1-1`` (edges ``p0..p1-1``) whose rows are not ascending, as
    offsets from ``c0`` (ascending): the descents ``rows[i + 1] < rows[i]`` of the range
    counted per column from their running sum (one pass; 5 bytes an edge of scratch)."""
    t = p1 - p0
    if t < 2:
        return torch.zeros(0, dtype=torch.int64, device=rows.device)
    r = rows[p0:p1]
    running = torch.zeros(t, dtype=torch.int32 if t < 2**31 else torch.int64, device=r.device)
    torch.cumsum(r[1:] < r[:-1], 0, dtype=running.dtype, out=running[1:])  # descents before k
    seg = indptr[c0 : c1 + 1] - p0
    first, end = seg[:-1], seg[1:]
    # a column's own descents: between its first and last edge (none with < 2 edges)
    inside = running[(end - 1).clamp_(min=0)] - running[first.clamp(max=t - 1)]
    return ((inside > 0) & (end - first > 1)).nonzero().squeeze(1)


def _sort_edges(rows, eids, values, weight, local, at, bits: int) -> None:
    """Sort the edges ``at`` (a slice, or positions ascending within each column) of the
    columns ``local`` (per edge, ascending: offsets of the columns) by ``(column, row)``,
    stable; ``eids`` and ``values`` follow (``values`` from ``weight``, the input's)."""
    key = local.bitwise_left_shift_(bits).add_(rows[at])
    key, order = torch.sort(key, stable=True)
    if isinstance(at, slice):
        torch.bitwise_and(key, (1 << bits) - 1, out=rows[at])
        del key
        torch.add(order, at.start, out=eids[at])
        del order
        if values is not None:
            torch.index_select(weight, 0, eids[at], out=values[at])
        return
    rows[at] = key.bitwise_and_((1 << bits) - 1)
    del key
    perm = at[order]
    del order
    eids[at] = perm
    if values is not None:
        values[at] = weight[perm]


# ----------------------------------------------------------------------------- text edge lists
#: elements of a piece of a growing array: over glibc's largest mmap threshold (32 MiB), so a
#: piece's memory goes back to the system once it is copied out and freed
PIECE = 1 << 24


class _Pieces:
    """A 1-D array of unknown length, appended a block at a time into fixed-size pieces
    (``dtype``: the narrowest seen so far; a wider block starts a wider piece)."""

    def __init__(self, dtype: torch.dtype):
        self.dtype = dtype
        self.full: list[torch.Tensor] = []
        self.cur: torch.Tensor | None = None
        self.used = 0

    def widen(self, dtype: torch.dtype) -> None:
        if dtype != self.dtype:
            self._close()
            self.dtype = dtype

    def append(self, x: torch.Tensor) -> None:
        while x.numel():
            if self.cur is None or self.used == self.cur.numel():
                self._close()
                self.cur = torch.empty(PIECE, dtype=self.dtype)  # untouched: no memory yet
            m = min(x.numel(), self.cur.numel() - self.used)
            self.cur[self.used : self.used + m] = x[:m]
            self.used += m
            x = x[m:]

    def _close(self) -> None:
        if self.cur is not None and self.used:
            self.full.append(self.cur[: self.used])
        self.cur, self.used = None, 0

    def numel(self) -> int:
        return sum(p.numel() for p in self.full) + self.used

    def dtypes(self) -> set:
        return {p.dtype for p in self.full} | ({self.dtype} if self.used else set())

    def drain_into(self, out: torch.Tensor) -> None:
        """Copy everything into ``out`` (its length), freeing each piece once copied."""
        self._close()
        at = 0
        while self.full:
            p = self.full.pop(0)
            out[at : at + p.numel()] = p
            at += p.numel()
            del p


def read_edge_list(
    path: str,
    times: bool = True,
    relabel: bool = False,
    undirected: bool = False,
    progress: bool | None = None,
    block: int = 1 << 23,
) -> tuple[torch.Tensor, torch.Tensor | None, int | None]:
    """A whitespace-separated text edge list (``src dst [time ...]`` a line, ``#``
    comments; ``.gz`` read through gzip), read ``block`` characters of lines at a time.

    Parameters
    ----------
    path : str
    times : bool
        Keep a third column: int64 when every value is an integer, else float64 (None
        when a line has no third column, or a value is not a number).
    relabel : bool
        Renumber the ids that occur to ``0..n-1`` in ascending order (:func:`relabel_ids`).
    undirected : bool
        Append the reverse of every edge (edge ``e`` reversed is edge ``E + e``; its time
        too).
    progress : bool, optional
        A tqdm bar over the file's bytes; None: for files over 64 MiB.
    block : int
        Characters of lines parsed at once (the parser's scratch: about 10x that).

    Returns
    -------
    edge_index : Tensor, shape (2, E)
        int32 when every id fits (after relabelling), else int64.
    time : Tensor, shape (E,), or None
    num_ids : int or None
        With ``relabel``: the number of distinct ids.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "edges.txt")
    >>> with open(path, "w") as f:                # a SNAP-style text edge list
    ...     for line in ("# src dst time", "10 30 5", "30 70 7"):
    ...         print(line, file=f)
    >>> ei, t, n = read_edge_list(path, relabel=True)
    >>> ei, t, n
    (tensor([[0, 1],
            [1, 2]], dtype=torch.int32), tensor([5, 7]), 3)
    """
    size = os.path.getsize(path)
    progress = size > 64 << 20 if progress is None else progress
    src, dst = _Pieces(torch.int32), _Pieces(torch.int32)
    tp = _Pieces(torch.int64) if times else None  # None once a block has no times
    raw = open(path, "rb")  # noqa: SIM115 (closed below, with the layers over it)
    stream = gzip.GzipFile(fileobj=raw) if path.endswith(".gz") else raw
    text = io.TextIOWrapper(stream, encoding="utf-8", errors="replace")  # odd bytes: in comments
    bar = tqdm(total=size, disable=not progress, desc="read", unit="B", unit_scale=True)
    line = 0
    try:
        while True:
            lines = text.readlines(block)
            if not lines:
                break
            pairs, t = _parse(lines, tp is not None and tp.dtype, path, line)
            line += len(lines)
            if tp is not None:
                if t is None:
                    tp = None
                else:
                    if t.dtype == np.float64:
                        tp.widen(torch.float64)
                    tp.append(torch.from_numpy(t))
            ids = torch.from_numpy(pairs)
            if ids.numel() and not _fits_int32(ids):
                src.widen(torch.int64)
                dst.widen(torch.int64)
            src.append(ids[:, 0])
            dst.append(ids[:, 1])
            del pairs, ids, lines
            bar.update(raw.tell() - bar.n)
    finally:
        text.close()
        raw.close()
        bar.close()
    e = src.numel()
    wide = torch.int64 in src.dtypes() | dst.dtypes()
    ei = torch.empty((2, e * (2 if undirected else 1)), dtype=torch.int64 if wide else torch.int32)
    src.drain_into(ei[0, :e])
    dst.drain_into(ei[1, :e])
    num_ids = relabel_ids(ei[:, :e]) if relabel else None
    if undirected:
        ei[0, e:] = ei[1, :e]
        ei[1, e:] = ei[0, :e]
    time = None
    if tp is not None:
        time = torch.empty(e * (2 if undirected else 1), dtype=tp.dtype)
        tp.drain_into(time[:e])
        if undirected:
            time[e:] = time[:e]
    return ei, time, num_ids


def _fits_int32(ids: torch.Tensor) -> bool:
    lo, hi = (int(x) for x in torch.aminmax(ids))
    return lo >= -(2**31) and hi < 2**31


def _parse(lines: list, time_dtype, path: str, line: int):
    """``(pairs (m, 2) int64, times (m,) or None)`` of a block of lines; ``time_dtype``:
    torch.int64 / torch.float64 (a third column wanted, integer as far as seen) or False."""

    def load(usecols, dtype):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "input contained no data"
            return np.loadtxt(lines, dtype=dtype, comments="#", usecols=usecols, ndmin=2)

    if time_dtype == torch.int64:
        try:
            a = load((0, 1, 2), np.int64)
            return a[:, :2], np.ascontiguousarray(a[:, 2])
        except ValueError:
            pass  # a third column that is not an integer, or none: parsed apart below
    try:  # columns past the third (and the third, without times) are ignored
        pairs = load((0, 1), np.int64)
    except ValueError as e:
        raise ValueError(
            f"path: {path} is not a SNAP edge list (in the lines from line {line + 1}: {e})"
        ) from None
    if not time_dtype:
        return pairs, None
    try:
        return pairs, load((2,), np.float64)[:, 0]
    except ValueError:
        return pairs, None


def relabel_ids(ei: torch.Tensor) -> int:
    """Renumber, in place, the ids of ``ei`` (any shape, an integer dtype) to their ranks
    among the distinct ids that occur (``0..n-1``, ascending); returns ``n``.

    A table over the id range when it is at most a few times the number of ids (one pass to
    mark, one to map), else the sorted distinct ids and a binary search; a block of ids at
    a time either way (no widened copy of ``ei``).

    Examples
    --------
    >>> import torch
    >>> ei = torch.tensor([[10, 30], [30, 70]])
    >>> relabel_ids(ei), ei
    (3, tensor([[0, 1],
            [1, 2]]))
    """
    flat = ei.view(ei.shape[0], -1) if ei.dim() > 1 else ei.view(1, -1)
    if flat.numel() == 0:
        return 0
    lo, hi = (int(x) for x in torch.aminmax(flat))
    step = 1 << 22
    blocks = [r[a : a + step] for r in flat for a in range(0, flat.shape[1], step)]
    span = hi - lo + 1
    if span <= 4 * flat.numel() + (1 << 20):
        seen = torch.zeros(span, dtype=torch.bool, device=ei.device)
        for b in blocks:
            seen[b.to(torch.int64) - lo] = True
        rank = torch.cumsum(seen, 0, dtype=torch.int64 if span >= 2**31 else torch.int32)
        del seen
        for b in blocks:
            b.copy_(rank[b.to(torch.int64) - lo] - 1)
        return int(rank[-1])
    uniq = torch.unique(torch.cat([torch.unique(b) for b in blocks]))
    for b in blocks:
        b.copy_(torch.searchsorted(uniq, b.to(uniq.dtype)))
    return uniq.numel()


def from_scipy(cls, matrix, weight: bool = True):
    # import here: scipy is an optional dependency (only this constructor needs it)
    import scipy.sparse as sp

    if not sp.issparse(matrix):
        raise TypeError(f"matrix: expected a scipy.sparse matrix, got {type(matrix).__name__}")
    if matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"matrix: must be square (N x N), got shape {matrix.shape}")
    weight = V.flag(weight, "weight")
    coo = matrix.tocoo()
    ei = torch.from_numpy(np.stack([coo.row, coo.col]).astype(np.int64))
    w = None
    if weight:
        data = np.asarray(coo.data)
        # before any cast: a complex matrix would lose its imaginary part with a warning only
        V.not_complex(
            data.dtype,
            "matrix",
            "pass matrix.real or abs(matrix), or weight=False to drop the values",
        )
        if data.dtype == object or not (
            np.issubdtype(data.dtype, np.number) or data.dtype == np.bool_
        ):
            raise TypeError(
                f"matrix: stored values must be numbers, got dtype {data.dtype} "
                "(pass weight=False to drop them)"
            )
        w = torch.from_numpy(data)
        if not w.is_floating_point():  # integer and bool weights: float32 (validate's doc)
            w = w.to(torch.float32)
    return cls.from_edge_index(ei, num_nodes=matrix.shape[0], weight=w)


def from_networkx(cls, graph, weight=None):
    # import here: networkx takes a while to import and only this constructor needs it
    import networkx as nx

    if not isinstance(graph, nx.Graph):
        raise TypeError(f"graph: expected a networkx graph, got {type(graph).__name__}")
    index = {node: i for i, node in enumerate(graph.nodes)}
    edges = list(graph.edges(data=True))
    src = [index[u] for u, _, _ in edges]
    dst = [index[v] for _, v, _ in edges]
    if weight is not None and not isinstance(weight, str):
        raise TypeError(
            f"weight: the name of an edge attribute (a str) or None, got {type(weight).__name__}"
        )
    w = (
        [_real(d.get(weight, 1.0), u, v, weight) for u, v, d in edges]
        if weight is not None
        else None
    )
    if not graph.is_directed():  # both directions; a self-loop stays one edge
        back = [i for i, (u, v) in enumerate(zip(src, dst)) if u != v]
        src, dst = src + [dst[i] for i in back], dst + [src[i] for i in back]
        w = None if w is None else w + [w[i] for i in back]
    ei = torch.tensor([src, dst], dtype=torch.int64).reshape(2, -1)
    wt = None if w is None else torch.tensor(w, dtype=torch.float32)
    return cls.from_edge_index(ei, num_nodes=len(index), weight=wt)


def _real(x, u, v, weight: str) -> float:
    """An edge attribute as a float weight; a complex or non-numeric one names the edge."""
    if isinstance(x, (bool, np.bool_, numbers.Real)):
        return float(x)
    kind = "complex" if isinstance(x, numbers.Complex) else "not a real number"
    raise TypeError(
        f"weight: edge ({u!r}, {v!r}) has {weight}={x!r}, {kind}; weights must be real numbers"
    )


def from_pyg(cls, data, weight="edge_weight", edge_time=None):
    edge_index = getattr(data, "edge_index", None)
    if edge_index is None:
        raise TypeError("data: expected a torch_geometric Data with an edge_index")
    if weight is not None and not isinstance(weight, str):
        raise TypeError(
            f"weight: the name of an edge attribute (a str) or None, got {type(weight).__name__}"
        )
    w = getattr(data, weight, None) if weight is not None else None
    if w is not None:
        w = V.as_tensor(w, f"weight (data.{weight})", None)
    if w is not None and w.dim() != 1:
        raise ValueError(
            f"weight: data.{weight} must have one value per edge, got shape {tuple(w.shape)}"
        )
    t = None
    if edge_time is not None:
        if not isinstance(edge_time, str):
            raise TypeError(
                "edge_time: the name of an edge attribute (a str) or None, got "
                f"{type(edge_time).__name__}"
            )
        t = getattr(data, edge_time, None)
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"edge_time: data has no tensor attribute {edge_time!r}")
    return cls.from_edge_index(edge_index, num_nodes=data.num_nodes, weight=w, edge_time=t)
