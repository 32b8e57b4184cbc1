"""Arrays in memory shared by the processes of one host (one copy per host).

Rank 0 writes each array into a file of a tmpfs (``/dev/shm``, or ``$GSAMPLE_SHM_DIR``) and
every rank maps the file (``mmap``, ``torch.frombuffer``: no copy); once all have, rank 0
unlinks the files, so the memory is freed with the last process that uses it. A GPU rank then
page-locks its mapping (``cudaHostRegister``) and reads it through unified virtual addressing
(:func:`gsample.formats.placement.map_host`), the way DGL shares a graph among its GPU
samplers.

A graph can also be shared before any process group exists (:func:`share_graph`: a parent
process builds it once and writes it there; the ranks it starts :func:`attach_graph` it and
pass it to :func:`gsample.distributed.place`, which then copies nothing for ``"shared"``).
"""

from __future__ import annotations

import contextlib
import json
import math
import mmap
import os
import pathlib
import socket
import tempfile
import uuid

import torch
import torch.distributed as dist

from gsample.formats.csc import CSC
from gsample.formats.placement import map_host, mark_shared
from gsample.matrix.sparse import Matrix

#: cudaHostRegisterPortable | cudaHostRegisterMapped
_REGISTER_FLAGS = 0x01 | 0x02


def shm_dir() -> str:
    """Where shared arrays are written: ``$GSAMPLE_SHM_DIR``, else ``/dev/shm`` (a tmpfs)."""
    return os.environ.get("GSAMPLE_SHM_DIR") or (
        "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    )


def one_host(group=None, what: str = "placement='shared'") -> None:
    """Raise unless every rank of ``group`` runs on this host (shared memory is per host)."""
    hosts = [None] * dist.get_world_size(group)
    dist.all_gather_object(hosts, socket.gethostname(), group=group)
    if len(set(hosts)) > 1:
        raise RuntimeError(
            f"{what}: shares host memory, which needs every rank on one host; "
            f"the ranks run on {sorted(set(hosts))} (pass the graph on every rank "
            "and place it 'replicated' or 'partitioned')"
        )


def _map(path: str, nbytes: int, create: bool):
    fd = os.open(path, (os.O_CREAT | os.O_EXCL | os.O_RDWR) if create else os.O_RDWR, 0o600)
    try:
        if create:
            os.ftruncate(fd, nbytes)
        return mmap.mmap(fd, nbytes)
    finally:
        os.close(fd)


def _tensor(mm, dtype: torch.dtype, shape) -> torch.Tensor:
    t = torch.frombuffer(mm, dtype=dtype).view(shape)
    mark_shared(t, mm)  # the map lives as long as the tensor's storage
    return t


def publish(arrays: dict, group=None) -> dict:
    """Share ``arrays`` (name -> tensor, given on rank 0; None elsewhere) with every rank of
    ``group``: returns name -> a CPU tensor over the host's one shared copy, on every rank."""
    rank = dist.get_rank(group)
    meta = [None]
    if rank == 0:
        directory = shm_dir()
        need = sum(t.numel() * t.element_size() for t in arrays.values() if t is not None)
        stat = os.statvfs(directory)
        free = stat.f_bavail * stat.f_frsize
        tag = uuid.uuid4().hex[:12]
        meta[0] = {
            name: None
            if t is None
            else (
                os.path.join(directory, f"gsample-{tag}-{name}"),
                str(t.dtype)[6:],
                tuple(t.shape),
                t.numel() * t.element_size(),
            )
            for name, t in arrays.items()
        }
        if need > free:  # a write past a full tmpfs would kill the process (SIGBUS)
            meta[0] = (
                f"placement='shared': {directory} has {free:.3g} bytes free and the "
                f"graph needs {need:.3g}; set GSAMPLE_SHM_DIR to a larger tmpfs"
            )
    dist.broadcast_object_list(
        meta, src=dist.get_global_rank(group, 0) if group else 0, group=group
    )
    if isinstance(meta[0], str):  # raised on every rank: none waits for the others
        raise RuntimeError(meta[0])
    out, written = {}, []
    try:
        for name, info in meta[0].items():  # rank 0 writes every file
            if info is None or info[3] == 0:
                out[name] = (
                    None if info is None else torch.empty(info[2], dtype=getattr(torch, info[1]))
                )
            elif rank == 0:
                written.append(info[0])
                out[name] = _tensor(
                    _map(info[0], info[3], create=True), getattr(torch, info[1]), info[2]
                )
                out[name].copy_(arrays[name])
        dist.barrier(group=group)  # written
        for name, info in meta[0].items():  # the others map them
            if name not in out:
                out[name] = _tensor(
                    _map(info[0], info[3], create=False), getattr(torch, info[1]), info[2]
                )
        dist.barrier(group=group)  # mapped by every rank
    finally:
        for path in written:
            os.unlink(path)
    return out


def register(host: torch.Tensor, device) -> torch.Tensor:
    """Page-lock the shared CPU tensor ``host`` in place and map it for the GPU ``device``
    (unregistered once the last mapped tensor is freed)."""
    if host.numel() == 0:
        return torch.empty(host.shape, dtype=host.dtype, device=device)
    cudart = torch.cuda.cudart()
    ptr, nbytes = host.data_ptr(), host.numel() * host.element_size()
    with torch.cuda.device(device):
        err = cudart.cudaHostRegister(ptr, nbytes, _REGISTER_FLAGS)
        if int(getattr(err, "value", err)) != 0:
            raise RuntimeError(
                f"placement='shared': cudaHostRegister failed ({err}) on "
                f"{nbytes} bytes of shared memory"
            )
        return map_host(host, device, on_free=lambda: cudart.cudaHostUnregister(ptr))


#: a shared graph's description in its folder (written last: a folder without it is incomplete)
GRAPH_HEADER = "graph.json"
_GRAPH_ARRAYS = ("indptr", "rows", "values", "eids")


def _free_bytes(directory) -> int:
    stat = os.statvfs(directory)
    return stat.f_bavail * stat.f_frsize


def write_shared(arrays: dict, folder, chunk: int = 1 << 25) -> dict:
    """Write ``arrays`` (name -> tensor on any device, or None) into raw files of ``folder``
    (a tmpfs such as ``/dev/shm`` keeps them in memory), ``chunk`` elements at a time through
    one pinned buffer when they come from a GPU; no process group is needed.

    Returns
    -------
    dict
        name -> ``[path, dtype, shape, nbytes]`` or None: what :func:`map_shared` maps
        (JSON-serialisable, picklable).

    Raises
    ------
    RuntimeError
        When ``folder``'s file system has too little room (a write past a full tmpfs would
        kill the process with SIGBUS).

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()                  # /dev/shm: kept in memory
    >>> import torch
    >>> specs = write_shared({"seeds": torch.arange(10)}, os.path.join(folder, "run"))
    >>> map_shared(specs)["seeds"].sum()                 # in any process of this host
    tensor(45)
    """
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    need = sum(t.numel() * t.element_size() for t in arrays.values() if t is not None)
    free = _free_bytes(folder)
    if need > free:
        raise RuntimeError(
            f"folder: {folder} has {free:.3g} bytes free and the arrays need {need:.3g}; "
            "give a larger file system (GSAMPLE_SHM_DIR for /dev/shm's place)"
        )
    specs = {}
    for name, t in arrays.items():
        if t is None:
            specs[name] = None
            continue
        nbytes = t.numel() * t.element_size()
        path = folder / f"{name}.bin"
        path.unlink(missing_ok=True)
        specs[name] = [str(path), str(t.dtype)[6:], list(t.shape), nbytes]  # as JSON reads it
        if nbytes == 0:
            path.touch()
            continue
        dst = _tensor(_map(str(path), nbytes, create=True), t.dtype, t.shape).view(-1)
        src = t.detach().reshape(-1)
        staging = None
        if src.is_cuda:  # device -> pinned buffer at the link's speed, then a parallel copy
            staging = torch.empty(min(chunk, src.numel()), dtype=src.dtype, pin_memory=True)
        for i in range(0, src.numel(), chunk):
            part = src[i : i + chunk]
            if staging is not None:
                buf = staging[: part.numel()]
                buf.copy_(part)
                part = buf
            dst[i : i + part.numel()].copy_(part)
        del dst
    return specs


def map_shared(specs: dict) -> dict:
    """name -> a CPU tensor over the file :func:`write_shared` wrote (``mmap``, shared by every
    process that maps it: no copy), or None.

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()                  # /dev/shm: kept in memory
    >>> import torch
    >>> specs = write_shared({"seeds": torch.arange(10)}, os.path.join(folder, "run"))
    >>> seeds = map_shared(specs)["seeds"]            # specs: what write_shared returned
    >>> seeds.shape
    torch.Size([10])
    """
    out = {}
    for name, spec in specs.items():
        if spec is None:
            out[name] = None
            continue
        path, dtype, shape, nbytes = spec
        dtype = getattr(torch, dtype)
        if nbytes == 0:
            out[name] = torch.empty(shape, dtype=dtype)
        else:
            out[name] = _tensor(_map(path, nbytes, create=False), dtype, tuple(shape))
    return out


def share_graph(A: Matrix, folder, **meta) -> dict:
    """Write the whole graph ``A`` (on any device) into ``folder`` for processes of this host
    to map (:func:`attach_graph`), before any process group exists: a parent builds a graph
    once and the ranks it starts share one copy of it.

    Parameters
    ----------
    A : Matrix
        A whole graph (rows and columns all nodes).
    folder : str or os.PathLike
        On a tmpfs (``/dev/shm``) for memory that ``placement="shared"`` pins in place; any
        folder works for the other placements (the page cache holds it).
    **meta
        JSON-serialisable facts kept with it (what it was built from: a later run tells a
        graph it can reuse by them, :func:`shared_graph_header`).

    Returns
    -------
    dict
        The header (also written to ``folder/graph.json``): ``num_nodes``, ``arrays`` (for
        :func:`map_shared`) and ``meta``.

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()                  # /dev/shm: kept in memory
    >>> import gsample as gs
    >>> path = os.path.join(folder, "g")
    >>> header = share_graph(gs.datasets.rmat(1000, 5000, seed=0), path, spec="rmat:1000:5000")
    >>> header["num_nodes"], header["meta"]
    (1000, {'spec': 'rmat:1000:5000'})
    >>> # in each rank: G = gs.distributed.place(attach_graph(path), "shared")
    """
    if not isinstance(A, Matrix):
        raise TypeError(f"A: expected a gs.Matrix, got {type(A).__name__}")
    csc = A.csc
    if csc.row_ids is not None or csc.col_ids is not None:
        raise ValueError("A: must be a whole graph (rows and columns all nodes), not a sub-matrix")
    try:
        meta = json.loads(json.dumps(meta))  # (refused before any file is written)
    except (TypeError, ValueError) as e:
        raise TypeError(f"meta: must be JSON-serialisable ({e})") from None
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / GRAPH_HEADER).unlink(missing_ok=True)  # incomplete until the header is back
    names = [n for n in _GRAPH_ARRAYS if getattr(csc, n) is not None]
    try:
        arrays = write_shared({n: getattr(csc, n) for n in _GRAPH_ARRAYS}, folder)
        header = {"num_nodes": csc.num_nodes, "arrays": arrays, "meta": meta}
        tmp = folder / (GRAPH_HEADER + ".part")
        tmp.write_text(json.dumps(header) + "\n")
        os.replace(tmp, folder / GRAPH_HEADER)
    except BaseException:  # no half-written graph left behind
        for n in names:
            (folder / f"{n}.bin").unlink(missing_ok=True)
        (folder / (GRAPH_HEADER + ".part")).unlink(missing_ok=True)
        raise
    return header


def _spec_ok(spec) -> bool:
    """Whether ``spec`` is one :func:`write_shared` made: ``[path, dtype, shape, nbytes]``
    with an integer or floating dtype, whose bytes the shape holds and the file has."""
    path, dtype, shape, nbytes = spec
    dtype = getattr(torch, dtype, None) if isinstance(dtype, str) else None
    if not isinstance(dtype, torch.dtype) or dtype.is_complex or dtype == torch.bool:
        return False
    if not all(isinstance(d, int) and d >= 0 for d in shape):
        return False
    size = math.prod(shape) * torch.empty(0, dtype=dtype).element_size()
    return size == nbytes and os.path.getsize(path) == nbytes


def shared_graph_header(folder) -> dict | None:
    """The header of a complete graph :func:`share_graph` wrote to ``folder``, else None: its
    arrays those of a graph (``indptr`` of ``num_nodes + 1`` entries, ``rows``, and
    optionally ``values`` and ``eids`` of one entry per row), each file there at its size.

    Parameters
    ----------
    folder : str or os.PathLike

    Returns
    -------
    dict or None
        ``num_nodes``, ``arrays`` (name -> ``[path, dtype, shape, nbytes]`` or None) and
        ``meta``.

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()                  # /dev/shm: kept in memory
    >>> import gsample as gs
    >>> path = os.path.join(folder, "g")
    >>> shared_graph_header(path) is None                     # nothing shared there yet
    True
    >>> _ = share_graph(gs.datasets.rmat(1000, 5000, seed=0), path, spec="rmat:1000:5000")
    >>> header = shared_graph_header(path)
    >>> header is None or header["meta"]["spec"]              # what share_graph was told
    'rmat:1000:5000'
    """
    try:
        header = json.loads((pathlib.Path(folder) / GRAPH_HEADER).read_text())
        n, arrays = header["num_nodes"], header["arrays"]
        if not isinstance(n, int) or n < 0 or set(arrays) - set(_GRAPH_ARRAYS):
            return None
        if arrays.get("indptr") is None or arrays.get("rows") is None:
            return None
        if not all(spec is None or _spec_ok(spec) for spec in arrays.values()):
            return None
        if arrays["indptr"][2] != [n + 1] or len(arrays["rows"][2]) != 1:
            return None
        edges = arrays["rows"][2]
        if any(arrays.get(k) is not None and arrays[k][2] != edges for k in ("values", "eids")):
            return None
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None
    return header


def attach_graph(folder) -> Matrix:
    """The graph :func:`share_graph` wrote to ``folder``, over the files' memory (CPU arrays
    shared by every process that attaches it: ``placement == "shared"``, no copy).

    Raises
    ------
    ValueError
        When ``folder`` holds no complete shared graph.

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()                  # /dev/shm: kept in memory
    >>> import gsample as gs
    >>> path = os.path.join(folder, "g")
    >>> _ = share_graph(gs.datasets.rmat(1000, 5000, seed=0), path)
    >>> A = attach_graph(path)                        # after share_graph(..., path)
    >>> A.placement, A.num_edges
    ('shared', 5000)
    """
    header = shared_graph_header(folder)
    if header is None:
        raise ValueError(f"folder: {folder} holds no complete graph written by share_graph")
    arrays = map_shared(header["arrays"])
    indptr, rows = arrays["indptr"], arrays["rows"]
    if int(indptr[0]) != 0 or int(indptr[-1]) != rows.numel():
        raise ValueError(
            f"folder: {folder}'s graph is not a CSC: its offsets run from {int(indptr[0])} to "
            f"{int(indptr[-1])} over {rows.numel()} rows"
        )
    return Matrix(CSC(header["num_nodes"], **arrays))


def remove_shared(folder) -> None:
    """Delete the graph :func:`share_graph` wrote to ``folder``: its header and the files the
    header names (the graph's arrays, and arrays of :func:`write_shared` kept in its
    ``meta``), then the folder when nothing else is left in it. Other files stay, whatever
    their names; processes that mapped the arrays keep the memory until they unmap it.

    Parameters
    ----------
    folder : str or os.PathLike

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()                  # /dev/shm: kept in memory
    >>> import gsample as gs
    >>> path = os.path.join(folder, "g")
    >>> _ = share_graph(gs.datasets.rmat(1000, 5000, seed=0), path)
    >>> remove_shared(path)                           # the parent, when the ranks are done
    >>> os.path.exists(path)
    False
    """
    folder = pathlib.Path(folder)
    try:
        header = json.loads((folder / GRAPH_HEADER).read_text())
    except (OSError, ValueError):
        header = {}
    specs = list((header.get("arrays") or {}).values()) if isinstance(header, dict) else []
    if isinstance(header, dict) and isinstance(header.get("meta"), dict):
        specs += list(header["meta"].values())
    for name in (GRAPH_HEADER, GRAPH_HEADER + ".part"):
        (folder / name).unlink(missing_ok=True)
    here = folder.resolve()
    for spec in specs:
        if isinstance(spec, list) and len(spec) == 4 and isinstance(spec[0], str):
            path = pathlib.Path(spec[0])
            if path.resolve().parent == here:  # only files of this folder
                path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # other files of the caller's stay, and the folder
        folder.rmdir()


__all__ = [
    "GRAPH_HEADER",
    "attach_graph",
    "map_shared",
    "one_host",
    "publish",
    "register",
    "remove_shared",
    "share_graph",
    "shared_graph_header",
    "shm_dir",
    "write_shared",
]
