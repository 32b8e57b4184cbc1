"""A GPU cache of a UVA graph's most-read adjacency: ``A.to("cuda", placement="uva", cache=B)``.

A graph in pinned host memory (``placement="uva"``, :mod:`gsample.formats.placement`) is read
by the GPU over the bus, one transaction per scattered read. Within ``B`` bytes of device
memory the cache holds, in this order:

1. the graph's ``indptr`` (``8 (N + 1)`` bytes): every sampled column reads two entries of it,
   so it moves to the device first and the matrix's ``indptr`` *is* that device copy;
2. a slot per node (``8 N`` bytes): where a cached column's edges start in the cache, or -1;
3. the rows (and int64 edge ids) of whole columns, as many as the rest of the budget holds,
   by a *priority* per node divided by the column's bytes: the reads a cached byte is
   expected to serve. By default the priority is the node's out-degree: a sampler reaches a
   node as often as it is the row of an edge, so the nodes of highest degree are the hot
   ones, and among them the cheapest columns first (the most reads per cached byte). A
   sampler's own counts can be given instead (``priority=``, e.g. GNNLab's presampling);
   they rank the columns well only when enough mini-batches were presampled to reach most
   of the hot nodes.

A graph of fewer than ``2**31`` nodes (:func:`narrows`) keeps its cached rows as int32, 4
bytes a row in the budget, so a budget holds about twice the edges of int64 rows (with int64
edge ids, 12 bytes an edge where 16 were). They are copied from the int32 rows placement
keeps in pinned host memory beside the int64 ones
(:func:`gsample.formats.placement.narrow_rows`, their ids checked at full width before they
were narrowed), which the kernels reading the cache read for the columns it does not hold.

The CUDA backend's column slicing (``A[:, cols]``, ``kernels/extract.cu``) and node-wise
sampling (``A[:, cols].individual_sample``, ``kernels/nodewise.cu``: compiled, one mini-batch
or a super-batch) read a cached column's rows and edge ids from the device, and so do random
walks (``A.random_walk``: DeepWalk, node2vec, weighted, with stops, restarts and jumps,
``kernels/walk.cu``; the walks of a fused ``gs.walk``, ``kernels/fused_walk.cu``) for the row
each move takes. They read the cache's rows and the host rows in one dtype (int32 where the
graph keeps both so, else int64; a cache of another dtype than the rows a kernel reads is
not read by it: ``gsample.backend.cuda.extract.rows_read``). Every other read of the edges
(node2vec's sorted rows, alias tables, temporal walks, layer-wise sampling, PyTorch's own
kernels) goes to the host arrays, through the device ``indptr``. The cached arrays are
copies of the same values, so samples and walks are identical with or without the cache.
Those kernels count, per cache, the edges they read (a walk: one row per move, per attempt
with node2vec) and those the cache served (:meth:`GraphCache.stats`: one host read when
asked); a column whose slot would put its rows past the cache's end is read from the graph
(``counters.cuh``'s ``gs_cache_at``, walkstep.cuh's ``gs_walk_cached``).

``cache="auto"`` chooses ``B`` from the device's free memory (or from ``budget=`` bytes):
:data:`CACHE_SHARE` of it, the rest left to the sampler's buffers, features and the model,
and no more than caching the whole graph takes (:func:`auto_budget`, :func:`whole_bytes`).

Examples
--------
On a GPU (a cache is device memory):

>>> import gsample as gs
>>> A = gs.datasets.rmat(100, 500, seed=0)
>>> H = A.to("cuda", placement="uva", cache=256 << 20)  # 256 MiB of device memory  # doctest: +SKIP
>>> sampler(H, seeds)  # doctest: +SKIP
>>> H.cache.stats()["hit_rate"]       # edges read from the GPU cache  # doctest: +SKIP
0.17
>>> H = A.to("cuda", placement="uva", cache="auto")  # half the free memory  # doctest: +SKIP
"""

from __future__ import annotations

import itertools
import math
import weakref
from dataclasses import dataclass, replace

import torch

from gsample.formats.csc import CSC, gather_segments, segment_ptr

#: bytes of a node's slot (int64)
SLOT_BYTES = 8
#: the most nodes a graph may have for its cache and host rows to keep int32 rows
ROWS32_MAX_NODES = 2**31 - 1
#: edges a cache's build gathers at a time (its index temporaries: 8 bytes an edge, twice)
BUILD_CHUNK = 1 << 26
#: ``cache="auto"`` takes at most this share of the free device memory (or of ``budget=``):
#: the rest holds a sampler's buffers, features and the model
CACHE_SHARE = 0.5

# CSC (identity) -> its GraphCache, as long as the CSC lives
_CACHES: weakref.WeakKeyDictionary[CSC, GraphCache] = weakref.WeakKeyDictionary()


@dataclass(eq=False)
class GraphCache:
    """Device copies of the edges of a UVA graph's highest in-degree columns.

    Attributes
    ----------
    slot : LongTensor, shape (N,), on the GPU, or None
        Column ``v``'s edges start at ``rows[slot[v]]`` in the cache, or ``slot[v] == -1``;
        None when the budget holds no column (the cache is the device ``indptr`` alone).
    rows : Tensor, shape (E_c,), on the GPU
        The cached columns' rows, in column order, each column's in the graph's order: int32
        where the graph keeps its rows as int32 in pinned host memory too (fewer than
        ``2**31`` nodes: :func:`gsample.formats.placement.narrow_rows`), else the graph's
        rows' dtype.
    eids : LongTensor, shape (E_c,), or None
        Their edge ids (when the graph has int64 edge ids).
    columns : int
        Cached columns.
    nbytes : int
        Device bytes the cache takes (``indptr``, ``slot``, ``rows``, ``eids``).
        ``indptr`` keeps the graph's dtype, the slots are int64, each row takes its
        dtype's bytes (4 for int32 rows).
    counters : LongTensor, shape (2,), on the GPU
        Edges read by the kernels that read through the cache (slicing, node-wise sampling,
        walks: module docstring), and those it served.
    """

    slot: torch.Tensor | None
    rows: torch.Tensor
    eids: torch.Tensor | None
    columns: int
    nbytes: int
    counters: torch.Tensor

    @property
    def edges(self) -> int:
        """Cached edges."""
        return self.rows.numel()

    def stats(self) -> dict:
        """What the cache holds and how much it served since the last :meth:`reset`.

        Returns
        -------
        dict
            ``bytes``, ``columns``, ``edges``, ``reads`` (edges read by the kernels that
            read through the cache), ``hits`` (those read from the device) and
            ``hit_rate`` (``hits / reads``, NaN before any read). One host read.
        """
        reads, hits = (int(x) for x in self.counters.tolist())
        return {
            "bytes": self.nbytes,
            "columns": self.columns,
            "edges": self.edges,
            "reads": reads,
            "hits": hits,
            "hit_rate": hits / reads if reads else math.nan,
        }

    def reset(self) -> None:
        """Zero the read counters."""
        self.counters.zero_()


def check_cache(cache, placement: str, priority=None, num_nodes: int = 0) -> None:
    """``cache`` None, an int of bytes ``>= 0`` or ``"auto"``, given with a placement that can
    be UVA; ``priority`` None or a real tensor of shape (num_nodes,) >= 0, given with
    ``cache``."""
    if priority is not None:
        if cache is None:
            raise ValueError("cache_priority: only used with cache=")
        if (
            not isinstance(priority, torch.Tensor)
            or priority.shape != (num_nodes,)
            or priority.is_complex()
            or priority.dtype == torch.bool
        ):
            raise ValueError(
                f"cache_priority: expected a real tensor of shape ({num_nodes},), "
                f"got {getattr(priority, 'shape', type(priority).__name__)}"
            )
        if bool((priority < 0).any()) or not bool(priority.isfinite().all()):
            raise ValueError("cache_priority: must be finite and >= 0")
    if cache is None:
        return
    if isinstance(cache, str):
        if cache != "auto":
            raise ValueError(
                f"cache: must be an int (bytes of device memory) or 'auto', got {cache!r}"
            )
    elif isinstance(cache, bool) or not isinstance(cache, int):
        raise TypeError(
            f"cache: must be an int (bytes of device memory) or 'auto', got {type(cache).__name__}"
        )
    elif cache < 0:
        raise ValueError(f"cache: must be >= 0 bytes, got {cache}")
    if placement == "device":
        raise ValueError(
            "cache: only used with placement='uva' or 'auto' (a graph on the device needs no cache)"
        )


def choose_columns(
    indptr: torch.Tensor, nbytes: int, edge_bytes: int, priority: torch.Tensor | None = None
) -> torch.Tensor:
    """The columns a cache of ``nbytes`` bytes (after ``indptr`` and the slots) holds.

    Parameters
    ----------
    indptr : LongTensor, shape (N + 1,)
        The graph's column pointer (any device).
    nbytes : int
        Bytes for the columns' edges.
    edge_bytes : int
        Bytes an edge takes in the cache.
    priority : Tensor, shape (N,), optional
        How often each column is expected to be read (>= 0).

    Returns
    -------
    LongTensor, shape (c,), ascending
        Non-empty columns in order of ``priority / in-degree`` (or of in-degree without a
        ``priority``; highest first, ties: the smaller id), taken until the next one does
        not fit in ``nbytes``.

    Examples
    --------
    >>> import torch
    >>> choose_columns(torch.tensor([0, 5, 6, 9]), 64, 8)     # degrees 5, 1, 3; 8 edges fit
    tensor([0, 2])
    >>> choose_columns(torch.tensor([0, 5, 6, 9]), 64, 8, torch.tensor([1., 1., 6.]))
    tensor([1, 2])
    """
    deg = (indptr[1:] - indptr[:-1]).cpu()
    if priority is None:
        score = deg.double()
    else:
        score = priority.detach().cpu().double() / deg.clamp(min=1)
    order = torch.sort(torch.where(deg > 0, score, -1.0), descending=True, stable=True).indices
    need = torch.cumsum(deg[order], 0) * edge_bytes
    take = int(torch.searchsorted(need, torch.tensor([nbytes]), right=True))
    chosen = order[:take]
    return torch.sort(chosen[deg[chosen] > 0]).values


def narrows(csc: CSC) -> bool:
    """Whether a UVA graph's cache (and the rows beside it in pinned host memory) may keep
    int32 rows: a whole graph (no row or column space of its own) of int64 rows and fewer
    than ``2**31`` nodes, whose every row id then fits in 31 bits. Placement also checks the
    rows themselves, at full width, before it narrows them
    (:func:`gsample.formats.placement.narrow_rows`).

    Examples
    --------
    >>> import gsample as gs
    >>> narrows(gs.datasets.rmat(100, 500, seed=0).csc)
    True
    """
    return (
        csc.rows.dtype == torch.int64
        and csc.num_nodes <= ROWS32_MAX_NODES
        and csc.row_ids is None
        and csc.col_ids is None
    )


def _edge_bytes(csc: CSC, narrow: bool) -> int:
    """Device bytes a cached edge takes: its row (4 bytes where the cache keeps int32 rows,
    else the graph's row dtype) and, where the graph has int64 edge ids, its id."""
    eids = csc.eids is not None and csc.eids.dtype == torch.int64
    return (4 if narrow else csc.rows.element_size()) + (8 if eids else 0)


def whole_bytes(csc: CSC, narrow: bool | None = None) -> int:
    """Bytes a cache of every column of ``csc`` takes: ``indptr`` (its dtype), a slot per
    node, and every edge's row (and int64 edge id): the most a cache budget can use.

    Parameters
    ----------
    csc : CSC
    narrow : bool, optional
        Whether the cache keeps int32 rows (4 bytes each); None: where :func:`narrows`
        says the graph allows it.

    Returns
    -------
    int

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A = gs.Matrix.from_edge_index(torch.tensor([[0, 1, 2], [1, 2, 0]]), num_nodes=3)
    >>> whole_bytes(A.csc)        # indptr 8 * 4, slots 8 * 3, 3 edges of 4 + 8 bytes
    92
    >>> whole_bytes(A.csc, narrow=False)  # int64 rows: 3 edges of 8 + 8 bytes
    104
    """
    n = csc.num_cols
    narrow = narrows(csc) if narrow is None else narrow
    return csc.indptr.element_size() * (n + 1) + SLOT_BYTES * n + csc.nnz * _edge_bytes(csc, narrow)


def auto_budget(free: int, whole: int) -> int:
    """The ``cache="auto"`` rule: bytes of device memory for a graph's cache,
    :data:`CACHE_SHARE` of ``free`` bytes, and no more than ``whole`` (what caching the whole
    graph takes, :func:`whole_bytes`).

    Parameters
    ----------
    free : int
        Free bytes of the device's memory (``torch.cuda.mem_get_info``), or ``budget=``.
    whole : int
        Bytes of a cache of every column.

    Returns
    -------
    int
        The cache's budget in bytes, ``>= 0``.

    Examples
    --------
    >>> auto_budget(80 << 30, 100 << 30) >> 30, auto_budget(80 << 30, 3 << 30) >> 30
    (40, 3)
    """
    return max(0, min(int(CACHE_SHARE * free), whole))


def out_degrees(csc: CSC, rows: torch.Tensor | None = None) -> torch.Tensor:
    """Each node's out-degree (edges whose row it is), on the rows' device.

    Parameters
    ----------
    csc : CSC
    rows : Tensor, shape (E,), optional
        ``csc.rows`` in another dtype, value for value (a UVA graph's int32 copy: half the
        bytes to read); None: ``csc.rows``.

    Returns
    -------
    LongTensor, shape (N,)

    The rows are copied and counted :data:`BUILD_CHUNK` at a time: a mapped graph's are read
    over the bus once, and no device temporary takes the size of the edges. A row outside
    ``[0, N)`` counts for no node (a graph's rows that placement did not narrow, as it found
    one: :func:`gsample.formats.placement.rows_in_range`).

    Examples
    --------
    >>> import torch
    >>> from gsample.formats.csc import CSC
    >>> A = CSC(4, indptr=torch.tensor([0, 2, 3, 3, 5]), rows=torch.tensor([1, 2, 1, -1, 4]))
    >>> out_degrees(A).tolist()
    [0, 2, 1, 0]
    """
    rows = csc.rows if rows is None else rows
    n = csc.num_nodes
    out = torch.zeros(n, dtype=torch.int64, device=rows.device)
    for a in range(0, rows.numel(), BUILD_CHUNK):
        r = rows[a : a + BUILD_CHUNK].clone()  # one read of the chunk (over the bus)
        out += torch.bincount(r[(r >= 0) & (r < n)], minlength=n)
    return out


def build(
    csc: CSC,
    nbytes: int,
    device: torch.device,
    priority: torch.Tensor | None = None,
    rows32: torch.Tensor | None = None,
) -> CSC:
    """``csc`` (a UVA graph: arrays mapped from pinned host memory) with a cache of at most
    ``nbytes`` bytes of ``device`` memory (module docstring): its ``indptr`` on the device
    and the cache registered for :func:`cache_of`; columns by ``priority`` (shape (N,), >= 0;
    None: out-degrees) per byte. A budget below ``indptr``'s size caches nothing (``csc``
    is returned as it is).

    Parameters
    ----------
    csc : CSC
    nbytes : int
    device : torch.device
    priority : Tensor, shape (N,), optional
    rows32 : IntTensor, shape (E,), optional
        ``csc.rows`` as int32, value for value (the pinned host copy placement keeps for a
        graph :func:`narrows`, its ids checked at full width first): the cache keeps int32
        rows, copied from it, and counts 4 bytes a row. None: the graph's rows' dtype.

    Returns
    -------
    CSC
    """
    n = csc.num_cols
    indptr_bytes = csc.indptr.element_size() * (n + 1)
    if nbytes < indptr_bytes or csc.col_ids is not None or csc.row_ids is not None:
        return csc
    narrow = rows32 is not None
    if narrow and (rows32.dtype != torch.int32 or rows32.shape != csc.rows.shape):
        raise ValueError(
            f"rows32: expected an int32 tensor of shape {tuple(csc.rows.shape)}, "
            f"got {rows32.dtype} of shape {tuple(rows32.shape)}"
        )
    # indptr of the graph's dtype, so kernels read the cache's as the graph's (GS_IDX)
    indptr = csc.indptr.to(device=device, copy=True)
    out = replace(csc, indptr=indptr)
    eids = csc.eids if csc.eids is not None and csc.eids.dtype == torch.int64 else None
    edge_bytes = _edge_bytes(csc, narrow)
    source = rows32 if narrow else csc.rows  # the rows the cache copies
    rest = nbytes - indptr_bytes - SLOT_BYTES * n
    if rest > 0:
        priority = out_degrees(csc, source) if priority is None else priority
        cols = choose_columns(indptr, rest, edge_bytes, priority).to(device)
    else:
        cols = None
    slot, rows, cached_eids, total = None, source.new_empty(0, device=device), None, indptr_bytes
    if cols is not None and cols.numel():
        slot, rows, cached_eids = _gather_columns(indptr, cols, source, eids)
        total += SLOT_BYTES * n + rows.numel() * edge_bytes
    _CACHES[out] = GraphCache(
        slot,
        rows,
        cached_eids,
        0 if slot is None else cols.numel(),
        total,
        torch.zeros(2, dtype=torch.int64, device=device),
    )
    return out


def _gather_columns(
    indptr: torch.Tensor, cols: torch.Tensor, rows: torch.Tensor, eids: torch.Tensor | None
) -> tuple:
    """The cache's arrays for columns ``cols``: ``(slot, rows, eids)``.

    Parameters
    ----------
    indptr : Tensor, shape (N + 1,), on the cache's device
    cols : LongTensor, shape (c,), ascending, non-empty columns, on that device
    rows : Tensor, shape (E,)
        The rows to copy (int32 or int64; mapped host memory: read once over the bus).
    eids : LongTensor, shape (E,), or None

    Returns
    -------
    slot : LongTensor, shape (N,)
        Where each cached column starts in the cache's rows, else -1.
    rows : Tensor, shape (E_c,), ``rows``' dtype
    eids : LongTensor, shape (E_c,), or None

    Columns are gathered :data:`BUILD_CHUNK` edges at a time (about: a longer column is
    gathered alone), so the int64 positions of the gather take that much device memory, not
    8 bytes per cached edge twice over.

    Examples
    --------
    >>> import torch
    >>> indptr, rows = torch.tensor([0, 2, 3, 6]), torch.tensor([4, 5, 6, 7, 8, 9])
    >>> slot, crows, _ = _gather_columns(indptr, torch.tensor([0, 2]), rows.int(), None)
    >>> slot.tolist(), crows.tolist(), crows.dtype
    ([0, -1, 2], [4, 5, 7, 8, 9], torch.int32)
    """
    n, device = indptr.numel() - 1, indptr.device
    ptr = segment_ptr((indptr[cols + 1] - indptr[cols]).long())
    total = int(ptr[-1])
    slot = torch.full((n,), -1, dtype=torch.int64, device=device)
    slot[cols] = ptr[:-1]
    out = torch.empty(total, dtype=rows.dtype, device=device)
    out_eids = None if eids is None else torch.empty(total, dtype=torch.int64, device=device)
    # column cuts every BUILD_CHUNK edges: [cuts[j], cuts[j + 1]) holds about that many
    marks = torch.arange(1, max(1, -(-total // BUILD_CHUNK)), device=device) * BUILD_CHUNK
    cuts = torch.searchsorted(ptr, marks).tolist()
    cuts = sorted({0, cols.numel(), *cuts})
    for a, b in itertools.pairwise(cuts):
        index, _ = gather_segments(indptr, cols[a:b])
        lo, hi = int(ptr[a]), int(ptr[b])
        out[lo:hi] = rows[index]
        if out_eids is not None:
            out_eids[lo:hi] = eids[index]
    return slot, out, out_eids


def cache_of(csc) -> GraphCache | None:
    """The :class:`GraphCache` of a matrix's storage, or None."""
    return _CACHES.get(csc) if isinstance(csc, CSC) else None


__all__ = [
    "BUILD_CHUNK",
    "CACHE_SHARE",
    "ROWS32_MAX_NODES",
    "SLOT_BYTES",
    "GraphCache",
    "auto_budget",
    "build",
    "cache_of",
    "check_cache",
    "choose_columns",
    "narrows",
    "out_degrees",
    "whole_bytes",
]
