"""Backends: what runs the ops of the IR.

A :class:`Backend` registers an implementation (:class:`Impl`) per ``(op, layout)`` it runs
(layout names of :data:`gsample.ir.ops.LAYOUTS`); that registry is its declaration of what
it supports, and :meth:`Backend.target` hands it to the passes as data (the layout pass
prices only layouts the backend runs). The torch backend implements every op and is the
semantic reference every other backend is tested against, sample for sample; an op another
backend lacks (for a layout, or for the inputs' device) runs the torch code on the same
device (:func:`resolve`).

Which backend runs is a setting (:func:`use_backend`, :func:`current_backend`): ``"auto"``
by default, resolved per graph (:func:`backend_for`): the CUDA backend for a graph on a GPU
where CuPy's kernels run (probed once per process and GPU; where they cannot, one
:class:`BackendWarning` says how to install them and the torch backend runs), the torch
backend for any other graph. ``"torch"`` and ``"cuda"`` force one.
"""

from __future__ import annotations

import contextvars
import importlib
import importlib.util
import pathlib
import sys
import threading
import warnings
from collections.abc import Callable

# under another name: importing the subpackage gsample.backend.torch binds "torch" in this
# module's namespace to it
import torch as _torch

# the registry first: the backends' modules register their code with its decorators (its
# names are re-exported: every one stays importable from gsample.backend)
from gsample.backend.registry import (
    _BACKENDS,
    BACKENDS,
    Backend,
)
from gsample.backend.registry import Impl as Impl
from gsample.backend.registry import Implementations as Implementations
from gsample.backend.registry import Registration as Registration
from gsample.backend.registry import cuda_impl as cuda_impl
from gsample.backend.registry import kernels_dir as kernels_dir
from gsample.backend.registry import reference as reference
from gsample.backend.registry import resolve as resolve
from gsample.backend.registry import run_op as run_op
from gsample.backend.registry import torch_impl as torch_impl
from gsample.backend.torch import TorchBackend

# the reference every backend falls back to, made once (its registrations are made: its
# package imported every module of it)
_BACKENDS["torch"] = TorchBackend()

#: what :func:`use_backend` and ``gs.compile(backend=...)`` take: ``"auto"`` picks one of
#: :data:`BACKENDS` per graph (:func:`backend_for`)
CHOICES = ("auto",) + BACKENDS
#: the backend setting of eager ops (and of compiled samplers made without ``backend``)
_CURRENT = contextvars.ContextVar("gsample_backend", default="auto")


class BackendWarning(UserWarning):
    """A graph on a GPU runs the torch backend because the CUDA backend's kernels cannot run
    (CuPy missing, or failing to compile or launch); issued once per process."""


def get_backend(name: str = "torch") -> Backend:
    """The backend called ``name``: ``"torch"`` (CPU and CUDA tensors) or ``"cuda"``
    (CuPy kernels; ops without a kernel run the torch backend's code). ``"auto"`` is a
    choice per graph, not a backend: :func:`backend_for` resolves it."""
    be = _BACKENDS.get(name)
    if be is not None:
        return be
    if name == "cuda":
        # import here: the CUDA backend's modules load only when it is first asked for
        # (a process that never asks for it never imports them)
        from gsample.backend.cuda import CudaBackend

        be = CudaBackend()
    elif name == "auto":
        raise ValueError(
            "backend: 'auto' picks a backend per graph; "
            "gsample.backend_for(A) names the one it picks for A"
        )
    else:
        raise ValueError(f"backend: unknown backend {name!r}; available: 'torch', 'cuda'")
    return _BACKENDS.setdefault(name, be)


def check_name(name, arg: str = "backend") -> str:
    """``name`` if it is one of :data:`CHOICES`, else a ``ValueError`` (``TypeError`` for a
    non-string) whose message names the argument ``arg`` and lists the choices.

    Examples
    --------
    >>> check_name("cuda")
    'cuda'
    >>> check_name("gpu", "name")
    Traceback (most recent call last):
    ValueError: name: unknown backend 'gpu'; expected one of 'auto', 'torch', 'cuda'
    """
    if not isinstance(name, str):
        raise TypeError(
            f"{arg}: expected a backend name, one of 'auto', 'torch', 'cuda', "
            f"got {type(name).__name__}"
        )
    if name not in CHOICES:
        raise ValueError(
            f"{arg}: unknown backend {name!r}; expected one of "
            + ", ".join(repr(c) for c in CHOICES)
        )
    return name


def current_backend() -> str:
    """The backend setting of eager ops and of compiled samplers made without ``backend=``:
    ``"auto"`` (the default), ``"torch"`` or ``"cuda"`` (see :func:`use_backend`).
    :func:`backend_for` names the backend it picks for a graph.

    Examples
    --------
    >>> import gsample as gs
    >>> gs.current_backend()
    'auto'
    """
    return _CURRENT.get()


class use_backend:
    """Set the backend of eager ops and of compiled samplers made without ``backend=``.

    A plain call sets it for the rest of the current context (the thread, or the
    ``contextvars`` context: a ``gs.DataLoader``'s pipeline threads inherit it), as
    ``torch.set_default_dtype`` does; used in a ``with`` statement it is restored on exit,
    also when the block changed it again with a plain call.

    Parameters
    ----------
    name : {"auto", "torch", "cuda"}
        ``"auto"`` (the default setting): the CUDA backend's kernels for a graph on a GPU
        when CuPy imports and launches there, the torch backend otherwise
        (:func:`backend_for`). ``"torch"``: the reference code, on CPU and CUDA tensors.
        ``"cuda"``: the kernels; a graph on the CPU still runs the torch code.

    Raises
    ------
    ValueError
        ``name`` is not one of them (the message lists them).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> gs.use_backend("torch")                      # from now on: the reference backend
    gs.use_backend('torch')
    >>> with gs.use_backend("cuda"):                 # in this block: the CuPy kernels
    ...     s = A[:, seeds].individual_sample(10)    # (a CPU graph runs the torch code)
    >>> gs.current_backend()                          # restored on exit
    'torch'
    >>> gs.use_backend("auto")
    gs.use_backend('auto')
    """

    __slots__ = ("_previous", "_used", "name")

    def __init__(self, name: str):
        self.name = check_name(name, "name")
        self._previous = _CURRENT.get()
        _CURRENT.set(self.name)  # a plain call takes effect here
        self._used = False

    def __enter__(self) -> use_backend:
        current = _CURRENT.get()
        # ``with gs.use_backend(x):`` is already set (by __init__); an object made earlier
        # and entered later, or entered again, sets it now and restores what it finds
        if self._used or current != self.name:
            self._previous = current
            _CURRENT.set(self.name)
        self._used = True
        return self

    def __exit__(self, *exc) -> None:
        # the value before this object set it, whatever plain calls inside the block set
        _CURRENT.set(self._previous)

    def __repr__(self) -> str:
        return f"gs.use_backend({self.name!r})"


# ----------------------------------------------------------------------------- "auto"
#: GPU index -> None when the CUDA backend's kernels run there, else why not (probed once)
_PROBED: dict = {}
_UNPROBED = object()
_PROBE_LOCK = threading.Lock()
_WARNED = False
#: a one-thread kernel the probe compiles and launches: CuPy imports, NVRTC compiles for
#: the GPU's architecture, and the driver loads and runs the module (the path every kernel
#: of the CUDA backend takes, gsample.backend.cuda.module)
_PROBE_SOURCE = 'extern "C" __global__ void gs_probe(int* out) { out[0] = 42; }'


def _probe_cuda(index: int) -> str | None:
    """None when a CuPy kernel compiles, loads and runs on GPU ``index``, else the reason."""
    if importlib.util.find_spec("cupy") is None:
        return "CuPy is not installed"
    # import here: CuPy, an optional dependency (pip install gsample[cuda])
    try:
        import cupy as cp
        from cupy.cuda import compiler, function
    except Exception as e:  # ImportError, or its CUDA libraries failing
        return f"CuPy does not import ({type(e).__name__}: {e})"
    try:
        major, minor = _torch.cuda.get_device_capability(index)
        binary, _ = compiler.compile_using_nvrtc(
            _PROBE_SOURCE, arch=f"{major}{minor}", filename="gs_probe.cu"
        )
        binary = binary.encode() if isinstance(binary, str) else bytes(binary)
        with cp.cuda.Device(index):
            mod = function.Module()
            mod.load(binary)
            out = cp.zeros(1, dtype=cp.int32)
            mod.get_function("gs_probe")((1,), (1,), (out,))
            if int(out.get()[0]) != 42:
                return "a test kernel ran but did not write its result"
    except Exception as e:
        return f"a CuPy kernel does not compile or launch ({type(e).__name__}: {e})"
    return None


def cuda_problem(device) -> str | None:
    """Why the CUDA backend's kernels cannot run on CUDA device ``device`` (None: they can).

    Probed once per process and GPU: CuPy imports, and a one-thread kernel compiles
    (NVRTC), loads and runs there. While the current stream captures a CUDA graph nothing is
    launched (a launch would break the capture): CuPy being installed is taken as enough
    then, and the probe runs at the next call outside a capture.

    Examples
    --------
    >>> import gsample
    >>> gsample.backend.cuda_problem("cuda:0")  # a GPU without CuPy  # doctest: +SKIP
    'CuPy is not installed'
    """
    index = _torch.device(device).index
    if index is None:
        index = _torch.cuda.current_device()
    if index in _PROBED:
        return _PROBED[index]
    if _torch.cuda.is_available() and _torch.cuda.is_current_stream_capturing():
        return None if importlib.util.find_spec("cupy") is not None else "CuPy is not installed"
    with _PROBE_LOCK:
        if index not in _PROBED:
            _PROBED[index] = _probe_cuda(index)
    return _PROBED[index]


def _warn_fallback(device, problem: str) -> None:
    global _WARNED
    if _WARNED:  # every call on a fallen-back GPU graph: cheap
        return
    with _PROBE_LOCK:  # two threads falling back at once: one warning
        if _WARNED:
            return
        _WARNED = True
    warnings.warn(
        f"gsample: the graph is on {device} but the CUDA backend's kernels cannot run there: "
        f"{problem}. The torch backend runs instead (correct, but many times slower on a "
        f"GPU). Install the kernels with `pip install gsample[cuda]` (CuPy for CUDA 13), or "
        f"call gs.use_backend('torch') to choose the torch backend and silence this warning.",
        BackendWarning,
        stacklevel=_caller_level(),
    )


def _caller_level() -> int:
    """``warnings.warn``'s ``stacklevel`` (for its caller) of the first frame outside
    gsample: the user's line that reached the fallback, eager op or compiled call alike."""
    package = str(pathlib.Path(__file__).resolve().parents[1])
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def auto_backend(device: _torch.device) -> str:
    """``"auto"``'s choice for a graph on ``device`` (a ``torch.device``): ``"cuda"`` on a
    GPU where the CUDA backend's kernels run (:func:`cuda_problem`), else ``"torch"``;
    after the first call per GPU, a dictionary lookup."""
    if device.type != "cuda":
        return "torch"
    problem = _PROBED.get(device.index, _UNPROBED) if device.index is not None else _UNPROBED
    if problem is _UNPROBED:
        problem = cuda_problem(device)
    if problem is None:
        return "cuda"
    _warn_fallback(device, problem)
    return "torch"


def _device_of(graph) -> _torch.device:
    if isinstance(graph, _torch.device):
        return graph
    if isinstance(graph, (str, int)):
        return _torch.device(graph)
    device = getattr(graph, "device", None)  # gs.Matrix, a sparse format, a tensor
    if isinstance(device, _torch.device):
        return device
    raise TypeError(
        f"graph: expected a gs.Matrix, a tensor or a device, got {type(graph).__name__}"
    )


def backend_for(graph, backend: str | None = None) -> str:
    """The backend whose code runs ops on ``graph``: ``"torch"`` or ``"cuda"``.

    ``backend`` (default: the current setting, :func:`current_backend`) is resolved for the
    graph's device: ``"auto"`` picks ``"cuda"`` for a graph on a GPU where CuPy imports and
    launches a kernel (probed once per process and GPU), ``"torch"`` otherwise (one
    :class:`BackendWarning` per process says so when CuPy is what is missing on a GPU); a graph
    on the CPU always runs the torch code, whatever is asked for.

    Parameters
    ----------
    graph : gs.Matrix, torch.Tensor, torch.device or str
        The graph, or the device it is on.
    backend : {"auto", "torch", "cuda"}, optional
        The choice to resolve (a compiled sampler's ``backend=``); default the current
        setting (``gs.use_backend``).

    Returns
    -------
    str

    Examples
    --------
    >>> import gsample as gs
    >>> gs.backend_for(gs.datasets.rmat(100, 1000, seed=0))
    'torch'
    >>> gs.backend_for("cuda:0")  # with CuPy installed ('torch' without)  # doctest: +SKIP
    'cuda'
    >>> gs.backend_for("cuda:0", "torch")
    'torch'
    """
    name = _CURRENT.get() if backend is None else check_name(backend)
    device = _device_of(graph)
    if device.type != "cuda":
        return "torch"
    return auto_backend(device) if name == "auto" else name


def eager_backend(A) -> Backend:
    """The backend an eager op on matrix ``A`` (a sparse format, or None) runs on: the
    current setting, ``"auto"`` resolved for ``A``'s device (once probed, an attribute
    read and a dictionary lookup: this runs before every eager op)."""
    name = _CURRENT.get()
    if name == "auto":
        name = "torch"
        indptr = getattr(A, "indptr", None)  # every sparse format has one
        if indptr is not None and indptr.is_cuda and auto_backend(indptr.device) == "cuda":
            name = "cuda"
    be = _BACKENDS.get(name)
    return be if be is not None else get_backend(name)


# ----------------------------------------------------------------------------- runtime hooks
# The runtime (a level above the backends) never imports a backend's own modules: what it
# calls of them it asks for here, by name, once (at import, or once per capture), never per op.
# So does the loader (its epoch's shuffle keys, once an epoch).

#: hook name -> ``"module:attribute"`` of its implementation, imported on first use
HOOKS = {
    # the torch backend's super-batch frontiers (gsample.runtime.block_diagonal)
    "frontier": "gsample.backend.torch.batched:frontier",
    "encode_columns": "gsample.backend.torch.batched:encode_columns",
    # the CUDA backend's split of a super-batch matrix (kernels/split.cu)
    "split_applies": "gsample.backend.cuda.split:applies",
    "batch_bounds": "gsample.backend.cuda.split:batch_bounds",
    "split_decode": "gsample.backend.cuda.split:split_decode",
    "decode_walks": "gsample.backend.cuda.split:decode_walks",
    # the CUDA backend's epoch shuffle keys (kernels/shuffle.cu; gsample.loader's epoch_keys)
    "shuffle_keys": "gsample.backend.cuda.shuffle:shuffle_keys",
    # the CUDA backend's packing of a CUDA graph's results (kernels/pack.cu)
    "pack_parts": "gsample.backend.cuda.pack:pack_parts",
    "prepare_pack": "gsample.backend.cuda.pack:prepare",
}
_HOOKED: dict = {}


def hook(name: str) -> Callable:
    """The backend function the runtime calls as ``name`` (a key of :data:`HOOKS`), its
    module imported on first use (a CUDA module only where the runtime asks for it: on a
    GPU). Resolve it once (at import, or once per capture), not per op.

    Parameters
    ----------
    name : str
        A key of :data:`HOOKS` (or a name given to :func:`register_hook`).

    Returns
    -------
    callable

    Raises
    ------
    KeyError
        No hook of that name.

    Examples
    --------
    >>> import torch, gsample
    >>> frontier = hook("frontier")          # gsample.backend.torch.batched.frontier
    >>> ids, batch, ptr = frontier(torch.tensor([3, 10 + 4]), 10, 2)
    """
    fn = _HOOKED.get(name)
    if fn is None:
        module, _, attr = HOOKS[name].partition(":")
        fn = _HOOKED[name] = getattr(importlib.import_module(module), attr)
    return fn


def register_hook(name: str, fn: Callable) -> None:
    """Make ``fn`` the function :func:`hook` returns for ``name`` (a backend registering its
    own; a test replacing one). Callers that resolved ``name`` before keep the old one."""
    _HOOKED[name] = fn
