"""Graphs on disk: :func:`save_csc` writes a graph as a memory-mappable CSC (``.npy``
arrays and a JSON header), :func:`load_csc` maps such files (or any CSC's arrays) and
places them where the graph is to live, a chunk at a time, with no full copy in host
memory first."""

from __future__ import annotations

import json
import os
import pathlib

import numpy as np
import torch
from tqdm.auto import tqdm

from gsample.base import validate as V
from gsample.datasets.columns import (
    HOST_RANGE,
    MATRIX_ROWS,
    check_size,
    sort_columns,
    unsorted_ranges,
)
from gsample.datasets.mapped import Target, as_array, as_path, zero_copy
from gsample.formats.csc import CSC
from gsample.matrix.convert import check_ids
from gsample.matrix.sparse import Matrix

__all__ = ["FORMAT", "FORMAT_VERSION", "HEADER", "load_csc", "read_header", "save_csc"]

#: the on-disk layout :func:`save_csc` writes and :func:`load_csc` reads
FORMAT = "gsample.csc"
FORMAT_VERSION = 1
HEADER = "header.json"


def read_header(folder: pathlib.Path) -> dict | None:
    """The folder's header when it holds a complete graph of :data:`FORMAT` (its files
    there at the sizes it names), else None."""
    try:
        header = json.loads((folder / HEADER).read_text())
    except (OSError, ValueError):
        return None
    if header.get("format") != FORMAT or header.get("format_version") != FORMAT_VERSION:
        return None
    for spec in header.get("arrays", {}).values():
        try:
            arr = np.load(folder / spec["file"], mmap_mode="r")
        except (OSError, ValueError, KeyError):
            return None
        if list(arr.shape) != spec["shape"] or str(arr.dtype) != spec["dtype"]:
            return None
    return header


def _write_npy(path: pathlib.Path, t: torch.Tensor, dtype, chunk: int) -> dict:
    """``t`` (any device) into the ``.npy`` file ``path`` as ``dtype``, a chunk at a time
    (written under a temporary name, then renamed)."""
    tmp = path.with_name(path.name + ".part")
    out = np.lib.format.open_memmap(tmp, mode="w+", dtype=dtype, shape=(t.numel(),))
    for i in range(0, t.numel(), chunk):
        out[i : i + chunk] = t[i : i + chunk].cpu().numpy()
    out.flush()
    del out
    os.replace(tmp, path)
    return {"file": path.name, "dtype": np.dtype(dtype).name, "shape": [t.numel()]}


def save_csc(A: Matrix, folder: str | os.PathLike, chunk: int = 1 << 24, **meta) -> pathlib.Path:
    """Write the graph ``A`` as a memory-mappable CSC: ``indptr.npy`` (int64), ``rows.npy``
    (int32 when ``A.num_nodes < 2**31``, else int64), ``eids.npy`` (int64, when its edge ids
    are not the CSC positions) and ``values.npy`` (when weighted), then ``header.json``
    (sizes, dtypes, and ``meta``), a chunk at a time from any device.

    Parameters
    ----------
    A : Matrix
        A whole graph (not a sub-matrix).
    folder : str or os.PathLike
        Created if needed; files of the same names there are replaced.
    chunk : int
        Elements moved to the host per step.
    **meta
        JSON-serialisable facts kept in the header (a generator's parameters: what a stale
        copy is told by).

    Returns
    -------
    pathlib.Path
        The folder.

    Examples
    --------
    >>> import gsample as gs
    >>> A = gs.datasets.undirected_rmat(1000, 5000)
    >>> folder = gs.datasets.save_csc(A, "/tmp/g")
    >>> gs.datasets.load_csc(folder).num_edges
    10000
    """
    if not isinstance(A, Matrix):
        raise TypeError(f"A: expected a gsample.Matrix, got {type(A).__name__}")
    csc = A.csc
    if csc.row_ids is not None or csc.col_ids is not None:
        raise ValueError("A: a sub-matrix (its own row or column space); save the whole graph")
    chunk = V.count(chunk, "chunk", low=1)
    folder = pathlib.Path(as_path(folder, "folder"))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / HEADER).unlink(missing_ok=True)  # incomplete until the header is back
    rows_dtype = np.int32 if csc.num_nodes <= 2**31 - 1 else np.int64
    arrays = {
        "indptr": _write_npy(folder / "indptr.npy", csc.indptr, np.int64, chunk),
        "rows": _write_npy(folder / "rows.npy", csc.rows, rows_dtype, chunk),
    }
    if csc.eids is not None:
        arrays["eids"] = _write_npy(folder / "eids.npy", csc.eids, np.int64, chunk)
    if csc.values is not None:
        if csc.values.dim() != 1:
            raise ValueError("A: edge values of shape (E, F) are not saved; only one per edge")
        dt = str(csc.values.dtype).replace("torch.", "")
        arrays["values"] = _write_npy(folder / "values.npy", csc.values, np.dtype(dt), chunk)
    header = {
        **json.loads(json.dumps(meta)),  # first: it cannot override the layout's own keys
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "num_nodes": csc.num_nodes,
        "num_edges": csc.nnz,
        "arrays": arrays,
    }
    tmp = folder / (HEADER + ".part")
    tmp.write_text(json.dumps(header, indent=1) + "\n")
    os.replace(tmp, folder / HEADER)
    return folder


def load_csc(
    indptr,
    rows=None,
    num_nodes: int | None = None,
    device: str | torch.device = "cpu",
    placement: str = "device",
    chunk: int = 1 << 24,
    progress: bool = False,
) -> Matrix:
    """A graph from a CSC on disk, memory-mapped and placed a chunk at a time.

    Column ``j`` holds rows ``rows[indptr[j]:indptr[j + 1]]`` (the in-edges of ``j``, as
    :meth:`gsample.Matrix.from_csc`). The files are memory-mapped: on the CPU, arrays
    already of the matrix's dtypes are used in place (copy-on-write, the file is never
    written); otherwise each array goes chunk by chunk from the mapping into its final
    memory (device memory, or pinned host memory for ``placement="uva"``), with no full
    copy in host memory before. Values are checked there (``indptr`` from 0 to ``E``,
    non-decreasing; rows in ``[0, N)``). Columns whose rows are not ascending are sorted in
    place, a range of columns at a time; edge ids are then positions in ``rows`` (as
    ``from_csc`` numbers them), else none are kept (the CSC positions).

    Parameters
    ----------
    indptr : str, os.PathLike or numpy array
        A ``.npy`` file, or an array (``numpy.memmap(path, dtype, mode="r")`` of a raw
        file); any integer dtype, shape ``(N + 1,)``. Or a folder written by
        :func:`save_csc` (then ``rows`` is None), its edge ids and values included.
    rows : str, os.PathLike or numpy array, optional
        Shape ``(E,)``, any integer dtype (int32 is read and widened).
    num_nodes : int, optional
        Must equal ``N`` when given.
    device : str or torch.device
    placement : {"device", "uva", "auto"}
        As :meth:`gsample.Matrix.to`.
    chunk : int
        Elements per step: the copies (the pinned staging buffer) and a GPU's sort ranges
        (the host sorts ranges of at most ``2**20`` edges).
    progress : bool
        A tqdm bar over the elements copied.

    Returns
    -------
    Matrix

    Examples
    --------
    >>> import gsample as gs
    >>> import numpy as np
    >>> np.save("/tmp/indptr.npy", np.array([0, 1, 3]))
    >>> np.save("/tmp/rows.npy", np.array([1, 0, 1], np.int32))
    >>> gs.datasets.load_csc("/tmp/indptr.npy", "/tmp/rows.npy").sum(axis=0)
    tensor([1., 2.])
    """
    device = V.device(device)
    chunk = V.count(chunk, "chunk", low=1)
    progress = V.flag(progress, "progress")
    eids_np = values_np = None
    if rows is None:
        folder = pathlib.Path(as_path(indptr, "indptr"))
        if not folder.is_dir():
            raise ValueError(
                f"rows: needed unless indptr is a folder written by save_csc, got {folder}"
            )
        header = read_header(folder)
        if header is None:
            raise ValueError(
                f"indptr: {folder} holds no complete {FORMAT} graph (its {HEADER} is missing, "
                "or names files that are not there at its sizes)"
            )
        files = {k: folder / v["file"] for k, v in header["arrays"].items()}
        indptr, rows = files["indptr"], files["rows"]
        eids_np = as_array(files["eids"], "eids") if "eids" in files else None
        values_np = np.load(files["values"], mmap_mode="c") if "values" in files else None
    ip = as_array(indptr, "indptr")
    rw = as_array(rows, "rows")
    if ip.shape[0] == 0:
        raise ValueError("indptr: must have at least one element (N + 1 offsets)")
    n = ip.shape[0] - 1
    if num_nodes is not None and V.count(num_nodes, "num_nodes") != n:
        raise ValueError(f"num_nodes: {num_nodes} does not match len(indptr) - 1 = {n}")
    check_size(n, "indptr")
    e = rw.shape[0]
    nbytes = 8 * (n + 1 + e * (2 if eids_np is not None else 1))
    target = Target(device, placement, nbytes)
    bar = tqdm(total=n + 1 + e, disable=not progress, desc="load_csc", unit_scale=True)

    def place(arr, dtype):
        if not target.uva and device.type == "cpu":
            t = zero_copy(arr, dtype)
            if t is not None:
                bar.update(arr.shape[0])
                return t
        t, host = target.empty(arr.shape[0], dtype)
        target.fill(t, host, arr, chunk, bar)
        return t

    ptr = place(ip, torch.int64)
    first_last = ptr[torch.tensor([0, n], device=ptr.device)].tolist()
    if first_last != [0, e]:
        raise ValueError(
            f"indptr: must start at 0 and end at len(rows) = {e}, got {first_last[0]} and "
            f"{first_last[1]}"
        )
    if n and bool((ptr[1:] < ptr[:-1]).any()):
        raise ValueError("indptr: must be non-decreasing")
    r = place(rw, MATRIX_ROWS)
    check_ids(r, "rows", n)
    eids = None if eids_np is None else place(eids_np, torch.int64)
    values = None
    if values_np is not None:
        dt = torch.from_numpy(np.empty(0, dtype=values_np.dtype)).dtype
        values = place(values_np, dt)
    bar.close()
    # a GPU sorts ranges of ``chunk`` edges; the host keeps the sort's scratch small
    limit = chunk if target.device.type == "cuda" else min(chunk, HOST_RANGE)
    unsorted = unsorted_ranges(ptr, r, n, limit)
    if unsorted:
        if eids is not None or values is not None:
            raise ValueError(
                f"indptr: the columns of {folder} are not sorted (save_csc writes them sorted): "
                "the files were changed"
            )
        eids, host = target.empty(e, torch.int64)
        (host if host is not None else eids).copy_(torch.arange(e))
        sort_columns(ptr, r, n, limit, eids=eids, ranges=unsorted)
    return Matrix(CSC(n, ptr, r, values=values, eids=eids))
