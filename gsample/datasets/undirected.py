"""Undirected R-MAT graphs built straight into CSC, within memory: :func:`undirected_rmat`
(the anchor graphs of :mod:`gsample.datasets.anchors` are such graphs), built column range
by column range, never sorting the whole edge array, and kept in an on-disk cache
(:func:`gsample.datasets.save_csc`) when asked.

The build, for ``E`` drawn edges over ``N`` nodes (the same steps serve
:func:`gsample.datasets.load_coo`; :mod:`gsample.datasets.columns`):

1. **count**: draw the edges chunk by chunk and add their ends to per-node counts (both
   directions of every edge: a node's column holds one entry per edge end at it);
2. **map**: the nodes that occur are numbered ``0..n-1`` in id order (isolated ones
   dropped), and ``indptr`` is the cumulated counts;
3. **place**: draw each chunk again (or read it back, when keeping the drawn pairs costs at
   most half the finished CSC), sort the chunk's entries by ``(column, row)`` and write each
   at its column's cursor;
4. **sort**: within each column the chunks' runs are merged by sorting ranges of whole
   columns (at most ``chunk`` entries plus one column each) in place, so that every column
   lists its rows in ascending order: the canonical order of :class:`gsample.Matrix`.

The working memory beyond the finished CSC is a few arrays of ``N`` entries and one chunk's
entries, so the peak stays within twice the CSC.
"""

from __future__ import annotations

import os
import pathlib
import warnings

import torch
from tqdm.auto import tqdm

from gsample.base import validate as V
from gsample.datasets.columns import MATRIX_ROWS, check_size, place_chunk, sort_columns, spans
from gsample.datasets.mapped import as_path
from gsample.datasets.ondisk import load_csc, read_header, save_csc
from gsample.datasets.profile import degree_profile
from gsample.datasets.rmat_draws import Draws, check_rmat, node_permutation
from gsample.formats.csc import CSC, segment_ptr
from gsample.matrix.sparse import Matrix

__all__ = ["GENERATOR_VERSION", "rmat_params", "undirected_rmat"]

#: bumped whenever the same arguments would draw a different graph: a cache written by an
#: older build is then stale
GENERATOR_VERSION = 1


def _default_chunk(device: torch.device) -> int:
    return 1 << (24 if device.type == "cuda" else 20)


def _undirected_csc(
    num_nodes: int,
    num_edges: int,
    seed: int,
    a: float,
    b: float,
    c: float,
    device: torch.device,
    chunk: int,
    progress: bool,
    store: bool | None = None,
    rows_dtype: torch.dtype = MATRIX_ROWS,
) -> CSC:
    """The CSC of :func:`undirected_rmat` (``store``: keep the drawn pairs between the count
    and the place pass instead of drawing them twice; None: when they take at most half the
    finished CSC)."""
    draws = Draws(num_nodes, seed, a, b, c, device)
    pair = torch.int32 if num_nodes <= 2**31 - 1 else torch.int64
    pair_bytes = 2 * num_edges * pair.itemsize
    csc_bytes = 2 * num_edges * rows_dtype.itemsize + 8 * (num_nodes + 1)
    if store is None:
        store = pair_bytes <= csc_bytes // 2
    chunks = spans(num_edges, chunk)
    sort = len(chunks) > 1
    bar = tqdm(
        total=2 * num_edges + (2 * num_edges if sort else 0),
        disable=not progress,
        desc="undirected_rmat: draw",
        unit="edge",
        unit_scale=True,
    )
    ones = torch.ones(2 * min(chunk, max(num_edges, 1)), dtype=torch.int64, device=device)
    width = min(chunk, num_edges)
    if store:
        src_all = torch.empty(num_edges, dtype=pair, device=device)
        dst_all = torch.empty(num_edges, dtype=pair, device=device)
    else:
        src_buf = torch.empty(width, dtype=torch.int64, device=device)
        dst_buf = torch.empty(width, dtype=torch.int64, device=device)

    def ends(i, j, fresh):
        if store and not fresh:
            return src_all[i:j], dst_all[i:j]
        s, d = (src_all[i:j], dst_all[i:j]) if store else (src_buf[: j - i], dst_buf[: j - i])
        draws.draw(i, s, d)
        return s, d

    # 1. count: entries per folded id (each edge end is an entry of its node's column)
    deg = torch.zeros(num_nodes, dtype=torch.int64, device=device)
    for i, j in chunks:
        s, d = ends(i, j, True)
        deg.index_add_(0, s, ones[: j - i])
        deg.index_add_(0, d, ones[: j - i])
        bar.update(j - i)
    # 2. map: rmat's ids, the isolated ones dropped, renumbered in id order
    perm = node_permutation(draws.key, num_nodes, device)
    by_id = torch.empty_like(deg)
    by_id[perm] = deg
    del deg
    keep = by_id > 0
    new_id = torch.cumsum(keep, 0)
    new_id -= 1
    n = int(new_id[-1]) + 1 if num_nodes else 0
    fmap = new_id[perm]  # folded id -> final id
    del new_id, perm
    indptr = segment_ptr(by_id[keep])
    del by_id, keep
    check_size(n, "num_nodes")
    # 3. place
    bar.set_description("undirected_rmat: place")
    rows = torch.empty(2 * num_edges, dtype=rows_dtype, device=device)
    cursor = indptr[:-1].clone()
    for i, j in chunks:
        s, d = ends(i, j, False)
        fs, fd = fmap[s], fmap[d]
        place_chunk(torch.cat([fd, fs]), torch.cat([fs, fd]), n, cursor, rows, ones)
        del fs, fd
        bar.update(j - i)
    del fmap, cursor, ones
    if store:
        del src_all, dst_all
    # 4. sort each column's rows (one chunk's placement is sorted already)
    if sort:
        bar.set_description("undirected_rmat: sort")
        sort_columns(indptr, rows, n, 2 * chunk, bar=bar)
    bar.close()
    return CSC(n, indptr, rows)


def rmat_params(num_nodes, num_edges, seed, a, b, c) -> dict:
    """What the graph is a function of (a cache's header; its staleness test)."""
    return {
        "name": "gsample.datasets.undirected_rmat",
        "version": GENERATOR_VERSION,
        "num_nodes": num_nodes,
        "num_edges": num_edges,
        "seed": seed,
        "a": a,
        "b": b,
        "c": c,
    }


def undirected_rmat(
    num_nodes: int,
    num_edges: int,
    seed: int = 0,
    a: float = 0.57,
    b: float = 0.19,
    c: float = 0.19,
    device: str | torch.device = "cpu",
    progress: bool = False,
    chunk: int | None = None,
    cache: str | os.PathLike | None = None,
) -> Matrix:
    """An undirected R-MAT power-law graph, built straight into CSC within memory.

    The edges :func:`gsample.datasets.rmat` draws with the same arguments (the same seed draws
    the same edges, on every device), each stored in both directions as drawn: repeats and
    self-loops are kept (a self-loop twice). Nodes no edge touches are dropped and the rest
    renumbered ``0..n-1`` keeping rmat's id order. Every column lists its rows in ascending
    order. Built chunk by chunk (see the module docstring): count, map, place, sort, with no
    sort of the whole edge array; the peak memory stays within twice the finished CSC.

    Parameters
    ----------
    num_nodes, num_edges : int
        Nodes drawn over and edges drawn, ``N`` and ``E`` (the graph has ``n <= N`` nodes
        and ``2 E`` edges).
    seed : int
        The graph is a pure function of the arguments and ``seed``.
    a, b, c : float
        Quadrant probabilities (top-left, top-right, bottom-left), as in rmat.
    device : str or torch.device
        Where it is built and returned (a GPU builds ``papers-like`` in seconds).
    progress : bool
        A tqdm bar over the edges of each step.
    chunk : int, optional
        Edges drawn per step (``>= 1``; default ``2**24`` on a GPU, ``2**20`` on a CPU):
        bounds the working memory, never changes the graph.
    cache : str or os.PathLike, optional
        A folder holding this graph (:func:`save_csc`): read from it (memory-mapped) when its
        header names these arguments, else built and written there, a stale copy (other
        arguments, an older generator) replaced with a warning.

    Returns
    -------
    Matrix
        ``n x n``, symmetric, ``2 E`` edges, edge ids the CSC positions.

    Examples
    --------
    >>> import gsample as gs
    >>> A = gs.datasets.undirected_rmat(10_000, 50_000, seed=0)
    >>> A.num_edges, A.num_nodes < 10_000
    (100000, True)
    """
    num_nodes, num_edges, a, b, c, seed = check_rmat(num_nodes, num_edges, a, b, c, seed)
    progress = V.flag(progress, "progress")
    device = V.device(device)
    chunk = _default_chunk(device) if chunk is None else V.count(chunk, "chunk", low=1)
    check_size(num_nodes, "num_nodes")
    folder = None if cache is None else pathlib.Path(as_path(cache, "cache"))
    params = rmat_params(num_nodes, num_edges, seed, a, b, c)
    if folder is not None:
        header = read_header(folder)
        if header is not None and header.get("generator") == params:
            return load_csc(folder, device=device)
        if header is not None:
            old = header.get("generator") or {}
            diff = ", ".join(
                f"{k} {old.get(k)!r} -> {v!r}" for k, v in params.items() if old.get(k) != v
            )
            warnings.warn(
                f"cache: {folder} holds a stale graph ({diff}); it is rebuilt", stacklevel=2
            )
    # the finished CSC (int64 rows) and the per-node arrays of the build, named if too large
    V.fits(2 * num_edges, MATRIX_ROWS.itemsize, device, "num_edges", f"{2 * num_edges} edges")
    V.fits(num_nodes, 40, device, "num_nodes", f"building over {num_nodes} nodes")
    A = Matrix(_undirected_csc(num_nodes, num_edges, seed, a, b, c, device, chunk, progress))
    if folder is not None:
        save_csc(A, folder, generator=params, profile=degree_profile(A))
    return A
