"""Arrays in memory shared by the processes of one host (one copy per host).

Rank 0 writes each array into a file of a tmpfs (``/dev/shm``, or ``$GSAMPLE_SHM_DIR``) and
every rank maps the file (``mmap``, ``torch.frombuffer``: no copy); once all have, rank 0
unlinks the files, so the memory is freed with the last process that uses it. A GPU rank then
page-locks its mapping (``cudaHostRegister``) and reads it through unified virtual addressing
(:func:`gsample.formats.placement.map_host`), the way DGL shares a graph among its GPU
samplers.
"""

from __future__ import annotations

import mmap
import os
import socket
import tempfile
import uuid

import torch
import torch.distributed as dist

from gsample.formats.placement import map_host, mark_shared

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


__all__ = ["one_host", "publish", "register", "shm_dir"]
