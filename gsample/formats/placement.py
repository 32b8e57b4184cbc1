"""Where a graph's arrays live: device memory, or pinned host memory a GPU reads (UVA).

``A.to("cuda", placement=...)`` (:meth:`gsample.Matrix.to`) takes one of :data:`PLACEMENTS`:

``"device"``
    Every array in the device's memory (the default).
``"uva"``
    The edge arrays (``rows``, edge ids, values) stay in *pinned host memory* and the GPU
    reads them in place through unified virtual addressing: a pinned buffer's host address
    is a valid device address (CUDA Runtime API, "Unified Addressing"). Each array is handed
    to PyTorch as a CUDA tensor *at that address* (through the CUDA Array Interface,
    :func:`map_host`), so every kernel of both backends, PyTorch's included, reads it as it
    reads device memory, and only what a sampler touches crosses the bus (the rows and edge
    ids of the edges it keeps). ``indptr``, the one node-sized array (``8 (N + 1)`` bytes,
    two entries read by every column sampled, every walk step), is copied to the device
    where it takes at most :data:`DEVICE_SHARE` of the free memory (or of ``budget``), else
    it is mapped too: a read of host memory at a random address costs an address
    translation (``benchmarks/host_link.py``), and a walk step then makes one, not two.
    Results are device tensors. A graph larger than the GPU's memory can be sampled so, and
    samples are identical to the device-resident graph's (the same values are read).
``"auto"``
    ``"device"`` when the graph takes at most :data:`DEVICE_SHARE` of the device's free
    memory (or of ``budget`` bytes, which pretends a smaller GPU), else ``"uva"``
    (:func:`choose`).

``cache=`` bytes (with ``"uva"``, or ``"auto"`` choosing it) keep a GPU cache of the graph's
``indptr`` and busiest columns (:mod:`gsample.formats.cache`; ``A.cache.stats()`` gives its
hit rate). ``cache="auto"`` sizes it from the device's free memory (or from ``budget``):
half of it, at most what caching the whole graph takes
(:func:`gsample.formats.cache.auto_budget`). Where ``"auto"`` keeps the graph on the device,
``cache`` is not used (nothing to cache).

Graph-level arrays derived from a UVA graph stay in host memory too: node2vec's sorted rows
are built on the host; edge-sized values a compiled sampler hoists (alias tables, ``A ** 2``)
are computed on the device as for a device-resident graph (so they are the same bits), then
moved into pinned host memory (:func:`offload`). The CUDA backend reads a UVA graph in place
(no device copy): its int64 arrays, and the int32 rows kept beside them (:func:`narrow_rows`),
which a cache of such a graph copies. A matrix reports where it lives in ``A.placement``:
``"device"``, ``"uva"``, or ``"shared"`` (CPU arrays in shared memory, one copy for the
processes of a host: :mod:`gsample.distributed`).

Examples
--------
>>> import gsample as gs
>>> A = gs.datasets.rmat(1000, 20_000, seed=0)       # 328 kB of arrays
>>> A.placement, A.device                    # on the CPU: where it was made
('device', device(type='cpu'))

On a GPU:

>>> H = A.to("cuda", placement="uva")  # pinned in host memory, read by the GPU  # doctest: +SKIP
>>> H.placement, H.device  # doctest: +SKIP
('uva', device(type='cuda', index=0))
>>> A.to("cuda", placement="auto", budget=1 << 16).placement  # a 64 kB GPU  # doctest: +SKIP
'uva'
>>> H = A.to("cuda", placement="uva", cache="auto")  # doctest: +SKIP
>>> H.cache.nbytes <= free_memory("cuda") // 2  # doctest: +SKIP
True
"""

from __future__ import annotations

import dataclasses
import numbers
import weakref
from dataclasses import fields

import numpy as np
import torch

from gsample.formats.cache import auto_budget, check_cache, narrows, whole_bytes
from gsample.formats.cache import build as build_cache
from gsample.formats.csc import CSC

PLACEMENTS = ("device", "uva", "auto")
#: ``"auto"`` keeps a graph on the device while it takes at most this share of the free
#: memory: the rest holds a sampler's buffers, the CUDA backend's int32 index copies of a
#: large graph (half the index arrays again), features and the model
DEVICE_SHARE = 0.5
_FIELDS = tuple(f.name for f in fields(CSC) if f.name != "num_nodes")

# storage address -> its _HostArray (weak: an entry lives as long as some mapped tensor's
# storage, which holds the _HostArray through its deleter)
_MAPPED: weakref.WeakValueDictionary[int, _HostArray] = weakref.WeakValueDictionary()
# a UVA graph -> its rows as int32 in pinned host memory (narrow_rows)
_ROWS32: weakref.WeakKeyDictionary[CSC, torch.Tensor] = weakref.WeakKeyDictionary()
# storage address -> holder of a shared-memory CPU array (gsample.distributed)
_SHARED: weakref.WeakValueDictionary[int, object] = weakref.WeakValueDictionary()


class _HostArray:
    """A pinned host storage, described to PyTorch as CUDA memory (CUDA Array Interface v2:
    a byte array at the host address, which UVA makes a device address too). Held by the
    deleter of every CUDA tensor made from it, so ``host`` lives while they do."""

    def __init__(self, host: torch.Tensor, on_free=None):
        storage = host.untyped_storage()
        self.host = host
        self.nbytes = storage.nbytes()
        self.__cuda_array_interface__ = {
            "shape": (self.nbytes,),
            "typestr": "|u1",
            "data": (storage.data_ptr(), False),
            "version": 2,
            "strides": None,
        }
        if on_free is not None:
            weakref.finalize(self, on_free).atexit = False  # the process's end frees it all


def _cuda_device(device) -> torch.device:
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return device


def require_cuda(what: str) -> None:
    """Raise a clear error where pinned (page-locked, device-mapped) memory is asked for
    without CUDA: pinning is a CUDA driver call."""
    if not torch.cuda.is_available():
        raise RuntimeError(
            f"{what}: pinning host memory for a GPU to read (UVA) needs CUDA, "
            "and torch.cuda.is_available() is False"
        )


def map_host(host: torch.Tensor, device, on_free=None) -> torch.Tensor:
    """A CUDA tensor on ``device`` at the address of the pinned CPU tensor ``host``: the same
    memory, no copy (the GPU reads it over the bus, through unified virtual addressing).

    Parameters
    ----------
    host : Tensor
        A pinned CPU tensor (``tensor.pin_memory()``, or memory registered with
        ``cudaHostRegister``).
    device : torch.device or str
        The GPU that reads it.
    on_free : callable, optional
        Called once the last tensor mapping this storage is freed (e.g. to unregister it).

    Returns
    -------
    Tensor
        ``host``'s dtype, shape and strides, ``is_cuda``; writes are visible on both sides.

    Examples
    --------
    >>> import torch
    >>> h = torch.arange(4).pin_memory()  # doctest: +SKIP
    >>> d = map_host(h, "cuda")  # doctest: +SKIP
    >>> d.data_ptr() == h.data_ptr(), int(d.sum())  # doctest: +SKIP
    (True, 6)
    """
    device = _cuda_device(device)
    if host.numel() == 0:
        return torch.empty(host.shape, dtype=host.dtype, device=device)
    ptr = host.untyped_storage().data_ptr()
    array = _MAPPED.get(ptr)
    if array is None or array.nbytes < host.untyped_storage().nbytes():
        array = _HostArray(host, on_free)
        _MAPPED[ptr] = array
    base = torch.as_tensor(array, device=device)  # uint8, the whole storage
    if base.data_ptr() != ptr or base.device != device:
        raise RuntimeError(
            f"placement='uva': PyTorch copied the pinned buffer instead of "
            f"mapping it (to {base.device}); map it on the device that was "
            "current when it was pinned"
        )
    return base.view(host.dtype).as_strided(host.shape, host.stride(), host.storage_offset())


def is_mapped(t) -> bool:
    """Whether ``t`` is a CUDA tensor in pinned host memory (made by :func:`map_host`)."""
    return (
        isinstance(t, torch.Tensor)
        and t.is_cuda
        and t.numel() > 0
        and t.untyped_storage().data_ptr() in _MAPPED
    )


def host_of(t: torch.Tensor) -> torch.Tensor | None:
    """The CPU tensor over the same pinned memory as the mapped ``t`` (None when ``t`` is not
    mapped)."""
    if not is_mapped(t):
        return None
    array = _MAPPED[t.untyped_storage().data_ptr()]
    return torch.empty(0, dtype=t.dtype).set_(
        array.host.untyped_storage(), t.storage_offset(), t.shape, t.stride()
    )


def pinned(t: torch.Tensor) -> torch.Tensor:
    """``t`` in pinned host memory: itself when it is pinned already, else a pinned copy
    (from a GPU: one device-to-host copy)."""
    if t.device.type == "cpu" and t.is_pinned():
        return t
    if is_mapped(t):
        return host_of(t)
    if t.device.type == "cpu":
        return t.detach().contiguous().pin_memory()
    out = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)  # one copy from the device
    out.copy_(t.detach())
    return out


def to_host_mapped(t: torch.Tensor, device) -> torch.Tensor:
    """``t`` moved to pinned host memory and mapped for ``device`` (no-op when it is mapped)."""
    if is_mapped(t):
        return t
    return map_host(pinned(t), device)


def mark_shared(t: torch.Tensor, holder) -> None:
    """Record that the CPU tensor ``t`` lives in memory shared by the processes of a host
    (``holder`` keeps the record while it lives)."""
    if t.numel():
        _SHARED[t.untyped_storage().data_ptr()] = holder


def _arrays(csc: CSC):
    return [getattr(csc, name) for name in _FIELDS]


def placement_of(csc: CSC) -> str:
    """``"uva"`` (arrays in pinned host memory read by a GPU), ``"shared"`` (CPU arrays in
    shared memory) or ``"device"``."""
    arrays = [t for t in _arrays(csc) if isinstance(t, torch.Tensor) and t.numel()]
    if any(is_mapped(t) for t in arrays):
        return "uva"
    if arrays and all(
        t.device.type == "cpu" and t.untyped_storage().data_ptr() in _SHARED for t in arrays
    ):
        return "shared"
    return "device"


def host_twin(csc: CSC) -> CSC | None:
    """The same matrix over the host memory of a UVA graph (CPU tensors, no copy; arrays
    kept on the device are copied), or None for a graph that is not in host memory."""
    if not is_mapped(csc.rows) and not is_mapped(csc.indptr):
        return None
    host = {
        name: None if t is None else (host_of(t) if is_mapped(t) else t.cpu())
        for name, t in zip(_FIELDS, _arrays(csc))
    }
    return CSC(csc.num_nodes, **host)


def graph_bytes(csc: CSC) -> int:
    """Bytes of a matrix's arrays (``indptr``, ``rows``, ids, values, edge ids)."""
    return sum(t.numel() * t.element_size() for t in _arrays(csc) if t is not None)


def free_memory(device) -> int:
    """Free bytes of a GPU's memory (``torch.cuda.mem_get_info``)."""
    return torch.cuda.mem_get_info(_cuda_device(device))[0]


def available_memory(device) -> int:
    """Bytes a new tensor on a GPU can take: the free memory, and what torch's caching
    allocator holds unused (it serves new tensors from that first)."""
    device = _cuda_device(device)
    cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    return free_memory(device) + max(0, cached)


def check_fits(nbytes: int, device, name: str, what: str, advice: str) -> None:
    """Raise a ``ValueError`` naming ``name`` before anything is allocated when ``what``
    (``nbytes`` of it) exceeds the memory a GPU ``device`` has available
    (:func:`available_memory`); nothing on other devices.

    Examples
    --------
    >>> import gsample as gs
    >>> csc = gs.datasets.rmat(100, 500, seed=0).csc
    >>> check_fits(graph_bytes(csc), "cpu", "placement", "the graph", "use placement='uva'")
    >>> check_fits(graph_bytes(csc), "cuda", "placement", "the graph", "...")  # doctest: +SKIP
    """
    if torch.device(device).type != "cuda":
        return
    have = available_memory(device)
    if nbytes > have:
        raise ValueError(
            f"{name}: {what} ({nbytes / 2**30:.2f} GiB) does not fit on {device}, which has "
            f"{have / 2**30:.2f} GiB available; {advice}"
        )


def choose(nbytes: int, free: int) -> str:
    """The ``"auto"`` rule: ``"device"`` when a graph of ``nbytes`` takes at most
    :data:`DEVICE_SHARE` of ``free`` bytes, else ``"uva"``.

    Examples
    --------
    >>> choose(10 << 30, 80 << 30), choose(50 << 30, 80 << 30)
    ('device', 'uva')
    """
    return "device" if nbytes <= DEVICE_SHARE * free else "uva"


def check_options(
    placement,
    budget,
    choices=PLACEMENTS,
    unit: str = "bytes of device memory",
    cache_auto: bool | None = None,
) -> None:
    """``placement`` one of ``choices``; ``budget`` None or an int of ``unit`` >= 0, given
    only with ``"auto"``, or with ``cache="auto"`` where ``cache_auto`` is True (None: the
    caller has no ``cache`` argument). A clear error naming the argument;
    ``gs.distributed.place`` checks its options with its own choices."""
    if not isinstance(placement, str) or placement not in choices:
        raise ValueError(f"placement: must be one of {choices}, got {placement!r}")
    if budget is not None:
        if isinstance(budget, (bool, np.bool_)) or not isinstance(budget, numbers.Integral):
            raise TypeError(f"budget: must be an int ({unit}), got {type(budget).__name__}")
        if budget < 0:
            raise ValueError(f"budget: must be >= 0 bytes, got {budget}")
        if placement != "auto" and not cache_auto:
            users = "placement='auto'" + ("" if cache_auto is None else " or cache='auto'")
            raise ValueError(
                f"budget: only used with {users} (it pretends the GPU has that many bytes free)"
            )


def place(
    csc: CSC,
    device,
    placement: str = "device",
    budget: int | None = None,
    cache: int | str | None = None,
    cache_priority=None,
) -> CSC:
    """``csc`` with its arrays placed for ``device`` (see the module docstring).

    Parameters
    ----------
    csc : CSC
        The matrix (on any device, or in host memory already).
    device : torch.device or str
        Where its samples are made.
    placement : {"device", "uva", "auto"}
    budget : int, optional
        With ``"auto"`` or ``cache="auto"``: bytes of device memory to decide with instead
        of the free memory.
    cache : int or "auto", optional
        Where the graph goes to UVA: bytes of device memory for a cache of its most-read
        adjacency (:mod:`gsample.formats.cache`), its columns by ``cache_priority`` (shape
        (N,): expected reads per node; None: out-degrees) per byte. ``"auto"``: the bytes
        :func:`~gsample.formats.cache.auto_budget` gives for the free memory (or
        ``budget``). Not used where ``"auto"`` keeps the graph on the device.

    Returns
    -------
    CSC
    """
    auto_cache = isinstance(cache, str) and cache == "auto"
    check_options(placement, budget, cache_auto=auto_cache)
    check_cache(cache, placement, cache_priority, csc.num_nodes)
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(
            f"device: {device!r} is not a device; use 'cpu', 'cuda' or 'cuda:N'"
        ) from None
    if placement != "device" and device.type != "cuda":
        if placement == "uva":
            raise ValueError(
                f"placement: 'uva' keeps the graph in pinned host memory for a "
                f"GPU to read; device must be a CUDA device, got {device}"
            )
        placement = "device"  # "auto" on the CPU: nothing to choose
    if device.type == "cuda" and placement != "uva" and not torch.cuda.is_available():
        raise RuntimeError(
            f"device: {device} needs a CUDA GPU, and torch.cuda.is_available() is False"
        )
    if placement == "auto":
        free = budget if budget is not None else free_memory(device)
        placement = choose(graph_bytes(csc), free)
    if placement == "uva":
        require_cuda("placement='uva'")
        device = _cuda_device(device)
        with torch.cuda.device(device):  # pinned while the reading GPU is current
            mapped = CSC(
                csc.num_nodes,
                **{
                    n: None if t is None else to_host_mapped(t, device)
                    for n, t in zip(_FIELDS, _arrays(csc))
                },
            )
            # int32 rows beside the int64 ones, where the node ids fit: read by the kernels
            # that read a UVA graph's rows, and the source of a cache's (int32 too)
            rows32 = _narrowed_rows(mapped, device)
            return _finish_uva(mapped, device, budget, cache, cache_priority, rows32)
    twin = host_twin(csc)
    source = twin if twin is not None else csc
    if device.type == "cuda" and source.device.type != "cuda":
        check_fits(  # said before any array is copied (a failed copy would leave parts behind)
            graph_bytes(source),
            device,
            "placement",
            "the graph's arrays",
            "keep it in pinned host memory (placement='uva', with a cache= of device "
            "memory), or let placement='auto' choose",
        )
    return source.to(device)


def narrow_rows(csc) -> torch.Tensor | None:
    """A UVA graph's rows as int32 in pinned host memory, mapped for its GPU, or None.

    ``placement="uva"`` keeps this copy beside the int64 ``rows`` (4 bytes an edge of host
    memory more) for a graph of fewer than ``2**31`` nodes whose rows all lie in
    ``[0, N)`` (checked at full width before they are narrowed): node-wise sampling, column
    slicing and random walks (``kernels/nodewise.cu``, ``kernels/extract.cu``,
    ``kernels/walk.cu``, ``kernels/fused_walk.cu``) read it, so their reads of host memory
    lie half as far apart and share more of the GPU's address translations
    (``benchmarks/host_link.py`` measures how sorted reads slow down as they lie farther
    apart). A GPU cache of such a graph (``cache=``, :mod:`gsample.formats.cache`) is copied
    from it and keeps int32 rows too, so the same kernels read both alike. Every other
    kernel reads ``rows``.

    Parameters
    ----------
    csc : CSC

    Returns
    -------
    IntTensor, shape (E,), or None
        Equal to ``csc.rows`` value for value.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A = gs.datasets.rmat(100, 500, seed=0)
    >>> narrow_rows(A.csc) is None               # a graph on the CPU
    True
    >>> H = A.to("cuda", placement="uva")  # doctest: +SKIP
    >>> torch.equal(narrow_rows(H.csc).long(), H.csc.rows)  # doctest: +SKIP
    True
    >>> C = A.to("cuda", placement="uva", cache=1 << 20)  # doctest: +SKIP
    >>> narrow_rows(C.csc).dtype, C.cache.rows.dtype  # doctest: +SKIP
    (torch.int32, torch.int32)
    """
    return _ROWS32.get(csc) if isinstance(csc, CSC) else None


def _narrowed_rows(csc: CSC, device: torch.device) -> torch.Tensor | None:
    """:func:`narrow_rows`' copy of a whole mapped graph that
    :func:`~gsample.formats.cache.narrows` (int64 rows, fewer than ``2**31`` nodes) and whose
    rows all lie in ``[0, N)`` (checked at full width on the host first: an id out of range
    is never narrowed), else None."""
    rows = csc.rows
    if not narrows(csc) or not is_mapped(rows):
        return None
    host = host_of(rows)
    if not rows_in_range(host, csc.num_nodes):
        return None  # the kernels read the int64 rows, as they are
    small = torch.empty(host.shape, dtype=torch.int32, pin_memory=True)
    small.copy_(host)  # checked above: exact in int32 (converted in place, no temporary)
    return map_host(small, device)


def rows_in_range(rows: torch.Tensor, num_nodes: int) -> bool:
    """Whether every entry of ``rows`` (any integer dtype, read at its own width) lies in
    ``[0, num_nodes)``: the check made before rows are narrowed to int32.

    Examples
    --------
    >>> import torch
    >>> rows_in_range(torch.tensor([0, 4, 2]), 5), rows_in_range(torch.tensor([0, 2**32]), 5)
    (True, False)
    >>> rows_in_range(torch.tensor([-1, 3]), 5), rows_in_range(torch.zeros(0).long(), 0)
    (False, True)
    """
    if rows.numel() == 0:
        return True
    lo, hi = torch.aminmax(rows)
    return int(lo) >= 0 and int(hi) < num_nodes


def _finish_uva(
    mapped: CSC,
    device: torch.device,
    budget: int | None,
    cache,
    priority: torch.Tensor | None,
    rows32: torch.Tensor | None,
) -> CSC:
    """The UVA graph :func:`place` returns for ``mapped`` (its arrays in pinned host memory):
    with a cache of ``cache`` bytes (``"auto"``: :func:`~gsample.formats.cache.auto_budget`
    of the free memory, or of ``budget``), its rows int32 where ``rows32`` is given (4 bytes
    a row in the budget), else its ``indptr`` on the device where it fits; ``rows32`` (the
    rows as int32, checked: :func:`_narrowed_rows`) registered for :func:`narrow_rows`."""
    if isinstance(cache, str):  # "auto", measured now: the mapped graph takes no device memory
        free = budget if budget is not None else free_memory(device)
        cache = auto_budget(free, whole_bytes(mapped, narrow=rows32 is not None))
    out = build_cache(mapped, cache, device, priority, rows32) if cache else mapped
    if out is mapped:  # no cache: its indptr on the device where it fits
        out = _indptr_to_device(mapped, device, budget)
    if rows32 is not None:
        _ROWS32[out] = rows32
    return out


def _indptr_to_device(csc: CSC, device: torch.device, budget: int | None) -> CSC:
    """``csc`` (arrays mapped) with its ``indptr`` copied to ``device`` where it takes at most
    :data:`DEVICE_SHARE` of the free memory (or of ``budget``); else ``csc`` as it is."""
    nbytes = csc.indptr.numel() * csc.indptr.element_size()
    free = budget if budget is not None else free_memory(device)
    if nbytes > DEVICE_SHARE * free:
        return csc
    return dataclasses.replace(csc, indptr=csc.indptr.to(device=device, copy=True))


def offload(graph: CSC, value):
    """``value`` (a tensor, CSC, or a list / tuple / dict of them) with its edge-sized tensors
    moved into pinned host memory, mapped for the GPU, when ``graph`` is a UVA graph: the
    graph-level values a sampler derives from it (alias tables, hoisted edge maps) then stay
    out of device memory as the graph does. Anything else is returned as it is."""
    if graph.nnz == 0 or placement_of(graph) != "uva":
        return value
    return _offload(value, graph.nnz, graph.device)


def _offload(value, nnz: int, device):
    if isinstance(value, torch.Tensor):
        if value.is_cuda and value.numel() >= nnz and not is_mapped(value):
            return to_host_mapped(value, device)
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # CSC, CSR, COO
        return dataclasses.replace(
            value,
            **{
                f.name: _offload(getattr(value, f.name), nnz, device)
                for f in fields(value)
                if isinstance(getattr(value, f.name), torch.Tensor)
            },
        )
    if isinstance(value, (list, tuple)):
        return type(value)(_offload(v, nnz, device) for v in value)
    if isinstance(value, dict):
        return {k: _offload(v, nnz, device) for k, v in value.items()}
    return value


__all__ = [
    "DEVICE_SHARE",
    "PLACEMENTS",
    "available_memory",
    "check_fits",
    "choose",
    "free_memory",
    "graph_bytes",
    "host_of",
    "host_twin",
    "is_mapped",
    "map_host",
    "mark_shared",
    "narrow_rows",
    "offload",
    "pinned",
    "place",
    "placement_of",
    "require_cuda",
    "rows_in_range",
    "to_host_mapped",
]
