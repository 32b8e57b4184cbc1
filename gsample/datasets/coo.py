"""An edge list on disk built into CSC within memory: :func:`load_coo` builds it on the
host as :meth:`gsample.Matrix.from_edge_index` does, over the mapped file, and for a GPU a
chunk of edges at a time (count, place, sort: :mod:`gsample.datasets.columns`), with no
sort of the whole edge list and no copy of it in memory."""

from __future__ import annotations

import torch
from tqdm.auto import tqdm

from gsample.base import validate as V
from gsample.datasets.columns import MATRIX_ROWS, check_size, place_chunk, sort_columns, spans
from gsample.datasets.mapped import Target, as_array, host_tensor
from gsample.formats.csc import CSC, segment_ptr
from gsample.matrix.convert import check_ids, csc_from_edges
from gsample.matrix.sparse import Matrix

__all__ = ["load_coo"]


def load_coo(
    edge_index,
    dst=None,
    num_nodes: int | None = None,
    device: str | torch.device = "cpu",
    placement: str = "device",
    edge_ids: bool = True,
    chunk: int = 1 << 24,
    progress: bool = False,
) -> Matrix:
    """A graph from an edge list on disk, built into CSC within memory (no sort of the whole
    edge list, no copy of it in memory).

    Edge ``e`` is ``edge_index[0, e] -> edge_index[1, e]``: column ``dst`` holds the in-edges
    of ``dst``, rows ascending, as :meth:`gsample.Matrix.from_edge_index` builds it. On the
    host the build is ``from_edge_index``'s (:func:`gsample.matrix.convert.csc_from_edges`)
    over the memory-mapped file, read as it is (int8, int16, int32, int64 or uint8 ids in
    native byte order; other ids are widened to int64 first, a copy). For a GPU (placement
    ``"device"`` or ``"uva"``) the edges go over a chunk at a time: counted per column,
    placed at their columns' cursors, then each range of columns sorted, the edge list
    never whole on the device.

    Parameters
    ----------
    edge_index : str, os.PathLike or numpy array
        Shape ``(2, E)`` (a ``.npy`` file or an array, e.g. a ``numpy.memmap``), any integer
        dtype; or the sources, shape ``(E,)``, with ``dst`` the destinations.
    dst : str, os.PathLike or numpy array, optional
    num_nodes : int, optional
        Default: the largest id + 1 (one more pass over the file).
    device : str or torch.device
    placement : {"device", "uva", "auto"}
    edge_ids : bool
        Keep each edge's position in the file as its id (as ``from_edge_index``: the matrix
        is then equal to it; 8 bytes per edge; on the host none are kept where the file
        lists the edges in CSC order, the ids then being the CSC positions), or number the
        edges by their CSC position.
    chunk : int
        Edges per step of a GPU's build (the pinned staging buffer, the sort's ranges); the
        host's build sizes its own steps.
    progress : bool

    Returns
    -------
    Matrix

    Examples
    --------
    >>> import gsample as gs
    >>> import numpy as np
    >>> np.save("/tmp/ei.npy", np.array([[0, 2, 1], [1, 1, 0]], np.int32))
    >>> gs.datasets.load_coo("/tmp/ei.npy").edges()
    (tensor([1, 0, 2]), tensor([0, 1, 1]), tensor([2, 0, 1]))
    """
    device = V.device(device)
    chunk = V.count(chunk, "chunk", low=1)
    edge_ids, progress = V.flag(edge_ids, "edge_ids"), V.flag(progress, "progress")
    if dst is None:
        ei = as_array(edge_index, "edge_index", ndim=2)
        if ei.shape[0] != 2:
            raise ValueError(f"edge_index: expected shape (2, E), got {ei.shape}")
        src_np, dst_np = ei[0], ei[1]
    else:
        src_np, dst_np = as_array(edge_index, "edge_index"), as_array(dst, "dst")
        if src_np.shape != dst_np.shape:
            raise ValueError(f"dst: {dst_np.shape[0]} destinations for {src_np.shape[0]} sources")
    e = src_np.shape[0]
    target = Target(device, placement, 8 * e * (2 if edge_ids else 1))
    if target.device.type == "cpu":
        return _coo_on_host(src_np, dst_np, num_nodes, edge_ids, progress)
    if num_nodes is None:
        hi = -1
        for i, j in spans(e, chunk):
            hi = max(
                hi,
                int(target.chunk(src_np, i, j, chunk).max()),
                int(target.chunk(dst_np, i, j, chunk).max()),
            )
        num_nodes = hi + 1
    n = V.count(num_nodes, "num_nodes")
    check_size(n, "num_nodes")
    return Matrix(_coo_streamed(src_np, dst_np, n, target, edge_ids, chunk, progress))


def _coo_on_host(src_np, dst_np, num_nodes, edge_ids: bool, progress: bool) -> Matrix:
    """The edge list's graph on the host: :meth:`gsample.Matrix.from_edge_index`'s
    construction (:func:`gsample.matrix.convert.csc_from_edges`) over the mapped files,
    read as they are."""
    bar = tqdm(total=src_np.shape[0], disable=not progress, desc="load_coo", unit_scale=True)
    src, dst = host_tensor(src_np), host_tensor(dst_np)
    if num_nodes is None:
        num_nodes = max(int(src.max()), int(dst.max())) + 1 if src.numel() else 0
    n = V.count(num_nodes, "num_nodes")
    check_size(n, "num_nodes")
    check_ids(src, "edge_index[0] (sources)", n)
    check_ids(dst, "edge_index[1] (destinations)", n)
    csc = csc_from_edges(src, dst, n)
    bar.update(src.numel())
    bar.close()
    return Matrix(CSC(n, csc.indptr, csc.rows, eids=csc.eids if edge_ids else None))


def _coo_streamed(src_np, dst_np, n, target, edge_ids: bool, chunk: int, progress: bool) -> CSC:
    """The edge list's CSC built a chunk at a time into ``target``'s memory (a GPU's, or
    pinned host memory), the edge list never whole there: count, place, sort."""
    e = src_np.shape[0]
    work = target.device
    chunks = spans(e, chunk)
    passes = 2 + (1 if len(chunks) > 1 else 0)
    bar = tqdm(total=passes * e, disable=not progress, desc="load_coo: count", unit_scale=True)
    ones = torch.ones(min(chunk, max(e, 1)), dtype=torch.int64, device=work)
    deg = torch.zeros(n, dtype=torch.int64, device=work)
    for i, j in chunks:
        s, d = target.chunk(src_np, i, j, chunk), target.chunk(dst_np, i, j, chunk)
        check_ids(s, "edge_index[0] (sources)", n)
        check_ids(d, "edge_index[1] (destinations)", n)
        deg.index_add_(0, d, ones[: j - i])
        bar.update(j - i)
    indptr_w = segment_ptr(deg)
    del deg
    rows_t = target.empty(e, MATRIX_ROWS)[0]
    eids_t = target.empty(e, torch.int64)[0] if edge_ids else None
    cursor = indptr_w[:-1].clone()
    bar.set_description("load_coo: place")
    for i, j in chunks:
        s, d = target.chunk(src_np, i, j, chunk), target.chunk(dst_np, i, j, chunk)
        eid = torch.arange(i, j, device=work) if edge_ids else None
        place_chunk(d, s, n, cursor, rows_t, ones, eid, eids_t)
        bar.update(j - i)
    del cursor
    if len(chunks) > 1:
        bar.set_description("load_coo: sort")
        sort_columns(indptr_w, rows_t, n, chunk, eids=eids_t, bar=bar)
    bar.close()
    if target.uva:
        ptr, host = target.empty(n + 1, torch.int64)
        host.copy_(indptr_w)
    else:
        ptr = indptr_w
    return CSC(n, ptr, rows_t, eids=eids_t)
