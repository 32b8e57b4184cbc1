"""Backends: what runs the ops of the IR.

A :class:`Backend` registers an implementation (:class:`Impl`) per ``(op, layout)`` it runs
(layout names of :data:`gsample.ir.ops.LAYOUTS`); that registry is its declaration of what
it supports, and :meth:`Backend.target` hands it to the passes as data (the layout pass
prices only layouts the backend runs). The torch backend implements every op and is the
semantic reference every other backend is tested against, sample for sample; an op another
backend lacks (for a layout, or for the inputs' device) runs the torch code on the same
device (:func:`resolve`).
"""
from __future__ import annotations

import contextlib
import contextvars
import pathlib
from dataclasses import dataclass
from typing import Callable, Optional

from ..formats.layouts import name_of
from ..ir import Op
from ..ir.graph import Target


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
        reporting through ``gsample.validate.fail_if`` or with their own read-back: the
        runtime's boundary check, and an eager call's, only converts them.
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
        ``fn`` (not sync-free) also takes a super-batch's keys (``gsample.random.BatchKeys``);
        else a super-batched random op runs the torch backend's code, which does.
    """
    fn: Callable
    backend: str
    sync_free: bool = False
    syncs: bool = True
    checks: tuple = ()
    bounded_out: bool = False
    without: tuple = ()
    finish: Optional[Callable] = None
    unless: tuple = ()
    batch_keys: bool = False

    def takes(self, given) -> bool:
        """Whether ``fn`` takes a node with inputs and attributes ``given`` (names)."""
        given = set(given)
        return not set(self.without) & given or bool(self.unless) and set(self.unless) <= given


class Backend:
    """An executor of IR ops: a registry ``(op, layout) -> Impl``."""

    name: str = "abstract"

    def __init__(self):
        self.impls: dict = {}
        self.sync_free_impls: dict = {}

    def register(self, op: Op, layouts, fn: Callable, sync_free: bool = False,
                 checks: tuple = (), syncs: Optional[bool] = None,
                 bounded_out: Optional[bool] = None, without: tuple = (),
                 finish: Optional[Callable] = None, unless: tuple = (),
                 batch_keys: bool = False) -> None:
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
            table[op, layout] = Impl(fn, self.name, sync_free=sync_free, syncs=syncs,
                                     checks=tuple(checks), bounded_out=bounded_out,
                                     without=tuple(without), finish=finish,
                                     unless=tuple(unless), batch_keys=batch_keys)

    def impl(self, op: Op, layout: str = "csc", sync_free: bool = False,
             given: tuple = ()) -> Optional[Impl]:
        """The implementation of ``op`` on ``layout`` for a node with inputs and attributes
        ``given`` (names): its sync-free variant when asked for, registered and taking them,
        else the exact one (None if that does not take them either)."""
        for table in ((self.sync_free_impls, self.impls) if sync_free else (self.impls,)):
            impl = table.get((op, layout))
            if impl is not None and impl.takes(given):
                return impl
        return None

    def supports(self, op: Op) -> bool:
        return any(o is op for o, _ in self.impls)

    def layouts(self, op: Op) -> tuple:
        """The layouts this backend runs ``op`` on (CSC first)."""
        from ..formats.layouts import NAMES
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
#: the backend eager ops (and compiled samplers without an explicit ``backend``) run on
_CURRENT = contextvars.ContextVar("gsample_backend", default="torch")


def get_backend(name: str = "torch") -> Backend:
    """The backend called ``name``: ``"torch"`` (CPU and CUDA tensors) or ``"cuda"``
    (CuPy kernels; ops without a kernel run the torch backend's code)."""
    if name not in _BACKENDS:
        if name == "torch":
            from .torch import TorchBackend
            _BACKENDS[name] = TorchBackend()
        elif name == "cuda":
            from .cuda import CudaBackend
            _BACKENDS[name] = CudaBackend()
        else:
            raise ValueError(f"backend: unknown backend {name!r}; available: 'torch', 'cuda'")
    return _BACKENDS[name]


def current_backend() -> str:
    """The name of the backend eager ops run on (see :func:`use_backend`)."""
    return _CURRENT.get()


@contextlib.contextmanager
def use_backend(name: str):
    """Run eager ops, and compiled samplers made without ``backend=``, on backend ``name``.

    Parameters
    ----------
    name : str
        ``"torch"`` or ``"cuda"``.

    Examples
    --------
    >>> with gs.use_backend("cuda"):
    ...     s = A.to("cuda")[:, seeds].individual_sample(10)   # CuPy kernels where they exist
    """
    get_backend(name)                          # an unknown name fails here, clearly
    token = _CURRENT.set(name)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def resolve(backend: Backend, op: Op, A=None, layout: Optional[str] = None,
            inputs: Optional[dict] = None, sync_free: bool = False, given=None) -> Impl:
    """The implementation that runs ``op`` on ``backend`` for a matrix ``A`` (or a known
    ``layout``) and a node with inputs and attributes ``given`` (names; default: the keys
    of ``inputs`` that are not None): the backend's own that takes them, else the torch
    reference's (the per-op fallback of DESIGN §2: same device, same results)."""
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
