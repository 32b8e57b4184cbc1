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
from dataclasses import dataclass

# under another name: importing the subpackage gsample.backend.torch binds "torch" in this
# module's namespace to it
import torch as _torch

from gsample.formats.layouts import NAMES, name_of
from gsample.ir import Op
from gsample.ir.graph import Target


def kernels_dir() -> pathlib.Path:
    """The kernel sources: an installed package's ``gsample/_kernels`` (copied there by
    ``setup.py``'s build hook), else the source tree's ``kernels/`` at the repository root
    (which a caller reports as missing when it is absent). The CUDA backend compiles them;
    the torch backend's native CPU walks compile ``walk.cu`` as C++."""
    here = pathlib.Path(__file__).resolve()
    for candidate in (here.parents[1] / "_kernels", here.parents[2] / "kernels"):
        if (candidate / "hash.cuh").is_file():
            return candidate
    return here.parents[2] / "kernels"


@dataclass(frozen=True)
class Impl:
    """One implementation of an op on one layout.

    Attributes
    ----------
    fn : callable
        ``fn(**inputs, **attrs[, key=...])``: the op's inputs and attributes by the names
        its :class:`gsample.ir.ops.OpDef` gives them (a random op also gets ``key``).
    backend : str
        Who registered it.
    sync_free : bool
        ``fn`` also takes bounded values (``gsample.formats.bounded``) and returns one where
        a result's size is only known on the device: it never reads a size back to the host.
    syncs : bool
        ``fn`` reads a size back to the host (a host synchronisation on a GPU).
    checks : tuple of str
        Inputs whose data (id ranges, weights' values) ``fn``'s kernels check themselves,
        reporting through ``gsample.base.validate.fail_if`` or with their own read-back: the
        runtime's boundary check, and an eager call's, only converts them. Such an ``fn``
        builds every output from clamped ids only (a bad frontier column is an empty
        column, and the result's ``col_ids`` is the frontier's clamped copy, never the
        caller's tensor, which it does not change in place).

    Notes
    -----
    Ids (``kernels/README.md``, "Ids: check, clamp and flag"): every kernel an ``fn``
    launches guards each index that is an id, whoever made the id (the user, a check whose
    flag is still pending, an earlier op), with one unsigned compare at the id's full
    width, ``(unsigned long long) id < (unsigned long long) bound`` (never through a
    32-bit cast); a bad id is clamped (or its item made empty) and flagged, and the flag
    raises through ``gsample.base.validate.fail_if``: a flagged call raises, the next call is
    unharmed. Host code that reads a bounded value's size reads the pending flags with it
    (``gsample.base.validate.read_back``).
    bounded_out : bool
        ``fn`` (sync-free) may return a bounded value.
    without : tuple of str
        Optional inputs or attributes of the op that ``fn`` does not take (e.g.
        ``("probs",)``: uniform draws only). A node that has one of them runs another
        implementation of the op (:meth:`Backend.impl`): ``fn`` never sees it, so it cannot
        fall back inside itself.
    unless : tuple of str
        Inputs that make ``fn`` take a node ``without`` would pass over (all of them given:
        e.g. ``("alias",)``: weighted draws from alias tables, but not other weighted ones).
    finish : callable, optional
        A two-phase implementation's second phase: ``fn`` then only queues device work
        (no read-back, so a CUDA graph may capture it) and returns a pending state, and
        ``finish(state)`` reads its sizes back and returns the op's result. The runtime runs
        them as two steps (the op is ``finish(fn(...))``).
    batch_keys : bool
        ``fn`` (not sync-free) also takes a super-batch's keys (``gsample.base.random.BatchKeys``);
        else a super-batched random op runs the torch backend's code, which does.
    """

    fn: Callable
    backend: str
    sync_free: bool = False
    syncs: bool = True
    checks: tuple = ()
    bounded_out: bool = False
    without: tuple = ()
    finish: Callable | None = None
    unless: tuple = ()
    batch_keys: bool = False

    def takes(self, given) -> bool:
        """Whether ``fn`` takes a node with inputs and attributes ``given`` (names)."""
        given = set(given)
        return not set(self.without) & given or (bool(self.unless) and set(self.unless) <= given)


#: what a registration may say about its implementation (the fields of :class:`Impl`)
_OPTIONS = frozenset(
    {"sync_free", "syncs", "checks", "bounded_out", "without", "finish", "unless", "batch_keys"}
)


@dataclass(frozen=True)
class Registration:
    """One ``@impl`` decoration: ``fn`` runs ``op`` on ``layouts`` (``options``: the
    :class:`Impl` fields it sets, as :meth:`Backend.register` takes them)."""

    op: Op
    layouts: tuple
    fn: Callable
    options: tuple  # (name, value) pairs


class Implementations:
    """A backend's registration decorator: ``@torch_impl(Op.ROW, layouts=...)`` above the
    function that implements the op, in the module that holds it.

    The one way a backend learns what it runs: its package imports its modules, each
    decoration is recorded here, and the backend registers every recorded one when it is
    made (:meth:`Backend.__init__`). A decoration returns ``fn`` unchanged (no wrapper:
    a call costs what it cost before); ``tests/backend/test_signatures.py`` checks every
    recorded ``fn``'s parameters against its op's :class:`gsample.ir.OpDef`.

    Parameters
    ----------
    backend : str
        The backend these registrations belong to (``"torch"``, ``"cuda"``).

    Examples
    --------
    >>> @torch_impl(Op.COLUMN, layouts=LAYOUTS)
    ... def column(A):
    ...     return A.global_cols()
    """

    def __init__(self, backend: str):
        self.backend = backend
        self.registrations: list = []

    def __call__(self, op: Op, layouts: tuple = ("csc",), **options) -> Callable:
        """A decorator registering its function for ``op`` on each of ``layouts``, with the
        :class:`Impl` fields ``options`` (``sync_free``, ``syncs``, ``checks``,
        ``bounded_out``, ``without``, ``unless``, ``finish``, ``batch_keys``)."""
        unknown = set(options) - _OPTIONS
        if unknown:
            raise TypeError(f"impl: unknown options {sorted(unknown)}; expected {sorted(_OPTIONS)}")
        if isinstance(layouts, str):
            layouts = (layouts,)

        def register(fn: Callable) -> Callable:
            self.registrations.append(
                Registration(op, tuple(layouts), fn, tuple(sorted(options.items())))
            )
            return fn

        return register


#: the torch backend's decorator (its modules: ``gsample.backend.torch``)
torch_impl = Implementations("torch")
#: the CUDA backend's decorator (its modules: ``gsample.backend.cuda``)
cuda_impl = Implementations("cuda")


class Backend:
    """An executor of IR ops: a registry ``(op, layout) -> Impl``.

    A concrete backend names its decorator (``implementations``, an
    :class:`Implementations`) and, made after its package imported its modules, registers
    what they decorated; :meth:`register` is the primitive under it (a test may build a
    ``Backend()`` of its own with it).
    """

    name: str = "abstract"
    #: the decorator whose registrations this backend runs (None: none)
    implementations: Implementations | None = None

    def __init__(self):
        self.impls: dict = {}
        self.sync_free_impls: dict = {}
        if self.implementations is not None:
            for r in self.implementations.registrations:
                self.register(r.op, r.layouts, r.fn, **dict(r.options))

    def register(
        self,
        op: Op,
        layouts,
        fn: Callable,
        sync_free: bool = False,
        checks: tuple = (),
        syncs: bool | None = None,
        bounded_out: bool | None = None,
        without: tuple = (),
        finish: Callable | None = None,
        unless: tuple = (),
        batch_keys: bool = False,
    ) -> None:
        """Register ``fn`` for ``op`` on each of ``layouts``; ``sync_free``: a variant that
        takes bounded values and device keys, used where the runtime allows it (by default it
        never reads back and may return bounded values); ``checks``: the inputs whose id
        ranges its kernels check; ``without``: the op's optional inputs (or attributes) ``fn``
        does not take (``unless`` the inputs named there are all given); ``finish``: the
        second phase of a two-phase ``fn``; ``batch_keys``: it takes a super-batch's keys
        (see :class:`Impl`)."""
        table = self.sync_free_impls if sync_free else self.impls
        syncs = (not sync_free) if syncs is None else syncs
        bounded_out = sync_free if bounded_out is None else bounded_out
        for layout in layouts:
            if (op, layout) in table:  # two decorations of one op: which runs is unclear
                raise ValueError(
                    f"{self.name}: {op.value} on {layout!r} is registered twice"
                    + (" (sync-free)" if sync_free else "")
                    + f": {table[op, layout].fn.__qualname__} and {fn.__qualname__}"
                )
            table[op, layout] = Impl(
                fn,
                self.name,
                sync_free=sync_free,
                syncs=syncs,
                checks=tuple(checks),
                bounded_out=bounded_out,
                without=tuple(without),
                finish=finish,
                unless=tuple(unless),
                batch_keys=batch_keys,
            )

    def impl(
        self, op: Op, layout: str = "csc", sync_free: bool = False, given: tuple = ()
    ) -> Impl | None:
        """The implementation of ``op`` on ``layout`` for a node with inputs and attributes
        ``given`` (names): its sync-free variant when asked for, registered and taking them,
        else the exact one (None if that does not take them either)."""
        for table in (self.sync_free_impls, self.impls) if sync_free else (self.impls,):
            impl = table.get((op, layout))
            if impl is not None and impl.takes(given):
                return impl
        return None

    def supports(self, op: Op) -> bool:
        return any(o is op for o, _ in self.impls)

    def layouts(self, op: Op) -> tuple:
        """The layouts this backend runs ``op`` on (CSC first)."""
        return tuple(lay for lay in NAMES if (op, lay) in self.impls)

    def target(self) -> Target:
        """This backend's capabilities as data for the passes: per op, the layouts it runs
        (the torch backend's where this one has no implementation of the op)."""
        torch_be = get_backend("torch")
        ops = {op for op, _ in torch_be.impls} | {op for op, _ in self.impls}
        return Target(self.name, {op: self.layouts(op) or torch_be.layouts(op) for op in ops})

    def runs_here(self, inputs: dict) -> bool:
        """Whether this backend's code can run on these inputs (their device)."""
        return True

    def run(self, ir_op: Op, /, **kwargs):
        """Run ``ir_op`` on its (already checked) inputs and attributes (eager mode)."""
        return resolve(self, ir_op, kwargs.get("A")).fn(**kwargs)


_BACKENDS: dict = {}
#: the concrete backends (:func:`get_backend`)
BACKENDS = ("torch", "cuda")
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
    if name == "torch":
        from gsample.backend.torch import TorchBackend

        be = TorchBackend()
    elif name == "cuda":
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
    >>> gs.use_backend("torch")                      # from now on: the reference backend
    >>> with gs.use_backend("cuda"):                 # in this block: the CuPy kernels
    ...     s = A.to("cuda")[:, seeds].individual_sample(10)
    >>> gs.current_backend()                          # restored on exit
    'torch'
    >>> gs.use_backend("auto")
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
    try:
        import cupy as cp  # optional dependency (pip install gsample[cuda])
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
    >>> gsample.backend.cuda_problem("cuda:0")       # a GPU without CuPy
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
    >>> gs.backend_for(gs.datasets.rmat(100, 1000, seed=0))
    'torch'
    >>> gs.backend_for("cuda:0")           # a GPU with CuPy installed ('torch' without CuPy)
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


def resolve(
    backend: Backend,
    op: Op,
    A=None,
    layout: str | None = None,
    inputs: dict | None = None,
    sync_free: bool = False,
    given=None,
) -> Impl:
    """The implementation that runs ``op`` on ``backend`` for a matrix ``A`` (or a known
    ``layout``) and a node with inputs and attributes ``given`` (names; default: the keys
    of ``inputs`` that are not None): the backend's own that takes them, else the torch
    reference's (the per-op fallback of docs/architecture.md §2: same device, same results)."""
    if layout is None:
        layout = "csc" if A is None else name_of(A)
    if given is None:
        given = tuple(k for k, v in (inputs or {}).items() if v is not None)
    impl = backend.impl(op, layout, sync_free, tuple(given))
    if impl is not None and (inputs is None or backend.runs_here(inputs)):
        return impl
    ref = get_backend("torch").impl(op, layout)
    if ref is None:
        raise NotImplementedError(f"{op.value} has no implementation for layout {layout!r}")
    return ref


def run_op(backend: Backend, ir_op: Op, kwargs: dict):
    """Run ``ir_op`` eagerly on ``backend`` (or the torch reference where it lacks it)."""
    return resolve(backend, ir_op, kwargs.get("A"), inputs=kwargs).fn(**kwargs)


# ----------------------------------------------------------------------------- runtime hooks
# (owned by the runtime's maintainers: issue 33) The runtime (a level above the backends)
# never imports a backend's own modules: what it calls of them it asks for here, by name,
# once (at import, or once per capture), never per op.

#: hook name -> ``"module:attribute"`` of its implementation, imported on first use
HOOKS = {
    # the torch backend's super-batch frontiers (gsample.runtime.block_diagonal)
    "frontier": "gsample.backend.torch.batched:frontier",
    "encode_columns": "gsample.backend.torch.batched:encode_columns",
    # the CUDA backend's split of a super-batch matrix (kernels/split.cu)
    "split_applies": "gsample.backend.cuda.split:applies",
    "batch_bounds": "gsample.backend.cuda.split:batch_bounds",
    "split_decode": "gsample.backend.cuda.split:split_decode",
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
