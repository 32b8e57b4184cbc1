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

The CUDA backend's column slicing (``A[:, cols]``, ``kernels/extract.cu``) and node-wise
sampling (``A[:, cols].individual_sample``, ``kernels/nodewise.cu``: compiled, one mini-batch
or a super-batch) read a cached column's rows and edge ids from the device, and so do random
walks (``A.random_walk``: DeepWalk, node2vec, weighted, with stops, restarts and jumps,
``kernels/walk.cu``; the walks of a fused ``gs.walk``, ``kernels/fused_walk.cu``) for the row
each move takes, on a graph of int64 rows (the dtype those kernels read); every other read of
the edges (node2vec's sorted rows, alias tables, temporal walks, PyTorch's own kernels) goes
to the host arrays, through the device ``indptr``. The cached arrays are copies of the same
values, so samples and walks are identical with or without the cache. Those kernels count,
per cache, the edges they read (a walk: one row per move, per attempt with node2vec) and
those the cache served (:meth:`GraphCache.stats`: one host read when asked).

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

import math
import weakref
from dataclasses import dataclass, replace

import torch

from gsample.formats.csc import CSC, gather_segments

#: bytes of a node's slot (int64)
SLOT_BYTES = 8
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
    rows : Tensor, shape (E_c,), on the GPU, the graph's index dtype
        The cached columns' rows, in column order, each column's in the graph's order.
    eids : LongTensor, shape (E_c,), or None
        Their edge ids (when the graph has int64 edge ids).
    columns : int
        Cached columns.
    nbytes : int
        Device bytes the cache takes (``indptr``, ``slot``, ``rows``, ``eids``).
        ``indptr`` keeps the graph's dtype, the slots are int64.
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


def _edge_bytes(csc: CSC) -> int:
    """Device bytes a cached edge takes: its row (the graph's index dtype) and, where the
    graph has int64 edge ids, its id."""
    eids = csc.eids is not None and csc.eids.dtype == torch.int64
    return csc.rows.element_size() + (8 if eids else 0)


def whole_bytes(csc: CSC) -> int:
    """Bytes a cache of every column of ``csc`` takes: ``indptr`` (its dtype), a slot per
    node, and every edge's row (and int64 edge id): the most a cache budget can use.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A = gs.Matrix.from_edge_index(torch.tensor([[0, 1, 2], [1, 2, 0]]), num_nodes=3)
    >>> whole_bytes(A.csc)        # indptr 8 * 4, slots 8 * 3, 3 edges of 8 + 8 bytes
    104
    """
    n = csc.num_cols
    return csc.indptr.element_size() * (n + 1) + SLOT_BYTES * n + csc.nnz * _edge_bytes(csc)


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


def out_degrees(csc: CSC) -> torch.Tensor:
    """Each node's out-degree (edges whose row it is), shape (N,), on the rows' device."""
    return torch.bincount(csc.rows.long(), minlength=csc.num_nodes)


def build(csc: CSC, nbytes: int, device: torch.device, priority: torch.Tensor | None = None) -> CSC:
    """``csc`` (a UVA graph: arrays mapped from pinned host memory) with a cache of at most
    ``nbytes`` bytes of ``device`` memory (module docstring): its ``indptr`` on the device
    and the cache registered for :func:`cache_of`; columns by ``priority`` (shape (N,), >= 0;
    None: out-degrees) per byte. A budget below ``indptr``'s size caches nothing (``csc``
    is returned as it is)."""
    n = csc.num_cols
    indptr_bytes = csc.indptr.element_size() * (n + 1)
    if nbytes < indptr_bytes or csc.col_ids is not None or csc.row_ids is not None:
        return csc
    # the same dtypes as the graph's, so kernels read the cache as the graph (GS_IDX)
    indptr = csc.indptr.to(device=device, copy=True)
    out = replace(csc, indptr=indptr)
    eids = csc.eids if csc.eids is not None and csc.eids.dtype == torch.int64 else None
    edge_bytes = _edge_bytes(csc)
    rest = nbytes - indptr_bytes - SLOT_BYTES * n
    if rest > 0:
        priority = out_degrees(csc) if priority is None else priority
        cols = choose_columns(indptr, rest, edge_bytes, priority).to(device)
    else:
        cols = None
    slot, rows, cached_eids, total = None, indptr.new_empty(0), None, indptr_bytes
    if cols is not None and cols.numel():
        index, starts = gather_segments(indptr, cols)
        slot = torch.full((n,), -1, dtype=torch.int64, device=device)
        slot[cols] = starts[:-1]
        rows = csc.rows[index]  # read once over the bus
        cached_eids = eids[index] if eids is not None else None
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


def cache_of(csc) -> GraphCache | None:
    """The :class:`GraphCache` of a matrix's storage, or None."""
    return _CACHES.get(csc) if isinstance(csc, CSC) else None


__all__ = [
    "CACHE_SHARE",
    "SLOT_BYTES",
    "GraphCache",
    "auto_budget",
    "build",
    "cache_of",
    "check_cache",
    "choose_columns",
    "out_degrees",
    "whole_bytes",
]
