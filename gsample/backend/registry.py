"""The backends' registry: what a backend is (:class:`Backend`), what it runs (:class:`Impl`),
the decorators its modules register their code with (:data:`torch_impl`, :data:`cuda_impl`),
and the backends made so far, the torch reference among them (:func:`reference`).

The backends' packages (``gsample.backend.torch``, ``gsample.backend.cuda``) import this
module, never the front package ``gsample.backend`` that makes them (:func:`get_backend`):
the package imports the torch backend (the reference every backend falls back to) when it
is imported, and the CUDA backend when one is first asked for. Every name here is also
importable from ``gsample.backend``.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from dataclasses import dataclass

from gsample.formats.layouts import NAMES, name_of
from gsample.ir import Op
from gsample.ir.graph import Target

__all__ = [
    "BACKENDS",
    "Backend",
    "Impl",
    "Implementations",
    "Registration",
    "cuda_impl",
    "kernels_dir",
    "reference",
    "resolve",
    "run_op",
    "torch_impl",
]


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
    bounded_out : bool or "inputs"
        ``fn`` (sync-free) may return a bounded value; ``"inputs"``: only where one of its
        tensor inputs (not a matrix) is bounded (an exact input gives an exact result,
        which a later check or exact implementation reads without a trim).
    without : tuple of str
        Optional inputs or attributes of the op that ``fn`` does not take (e.g.
        ``("probs",)``: uniform draws only). A node that has one of them runs another
        implementation of the op (:meth:`Backend.impl`): ``fn`` never sees it, so it cannot
        fall back inside itself. ``"<input>:unordered"``: an input declared ``In.ordered``
        whose producer does not keep it ascending within each mini-batch (the lowering names
        it so, ``gsample.runtime.lower``).
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
    syncs_batched : bool
        ``fn`` (sync-free one mini-batch at a time) reads a size back for a super-batch (a
        node with ``batches``): the lowering then treats that node's step as syncing, so no
        CUDA graph region is formed around it only to be refused at capture.
    """

    fn: Callable
    backend: str
    sync_free: bool = False
    syncs: bool = True
    checks: tuple = ()
    bounded_out: bool | str = False
    without: tuple = ()
    finish: Callable | None = None
    unless: tuple = ()
    batch_keys: bool = False
    syncs_batched: bool = False

    def takes(self, given) -> bool:
        """Whether ``fn`` takes a node with inputs and attributes ``given`` (names)."""
        given = set(given)
        return not set(self.without) & given or (bool(self.unless) and set(self.unless) <= given)


#: what a registration may say about its implementation (the fields of :class:`Impl`)
_OPTIONS = frozenset(
    {
        "sync_free",
        "syncs",
        "checks",
        "bounded_out",
        "without",
        "finish",
        "unless",
        "batch_keys",
        "syncs_batched",
    }
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
    >>> from gsample.ir import Op
    >>> example_impl = Implementations("example")
    >>> @example_impl(Op.COLUMN, layouts=("csc", "coo"))
    ... def column(A):
    ...     return A.global_cols()
    >>> len(example_impl.registrations)                # one, for both layouts
    1
    """

    def __init__(self, backend: str):
        self.backend = backend
        self.registrations: list = []

    def __call__(self, op: Op, layouts: tuple = ("csc",), **options) -> Callable:
        """A decorator registering its function for ``op`` on each of ``layouts``, with the
        :class:`Impl` fields ``options`` (``sync_free``, ``syncs``, ``checks``,
        ``bounded_out``, ``without``, ``unless``, ``finish``, ``batch_keys``,
        ``syncs_batched``)."""
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
        bounded_out: bool | str | None = None,
        without: tuple = (),
        finish: Callable | None = None,
        unless: tuple = (),
        batch_keys: bool = False,
        syncs_batched: bool = False,
    ) -> None:
        """Register ``fn`` for ``op`` on each of ``layouts``; ``sync_free``: a variant that
        takes bounded values and device keys, used where the runtime allows it (by default it
        never reads back and may return bounded values); ``checks``: the inputs whose id
        ranges its kernels check; ``without``: the op's optional inputs (or attributes) ``fn``
        does not take (``unless`` the inputs named there are all given); ``finish``: the
        second phase of a two-phase ``fn``; ``batch_keys``: it takes a super-batch's keys;
        ``syncs_batched``: it reads back for a super-batch (see :class:`Impl`)."""
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
                syncs_batched=syncs_batched,
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
        torch_be = reference()
        ops = {op for op, _ in torch_be.impls} | {op for op, _ in self.impls}
        own = {op for op, _ in self.impls} | {op for op, _ in self.sync_free_impls}
        return Target(
            self.name,
            {op: self.layouts(op) or torch_be.layouts(op) for op in ops},
            None if self is torch_be else frozenset(own),
            self.listed_min_nodes(),
            self.listed_pinned(),
        )

    def listed_min_nodes(self) -> int | None:
        """The fewest nodes of a graph whose LADIES-shaped samples this backend lists
        (:attr:`Target.listed_min_nodes`, read by the ``listed_rows`` pass when a program
        is compiled): every graph (0) unless the backend says otherwise."""
        return 0

    def listed_pinned(self) -> bool:
        """Whether this backend's LADIES-shaped samples are listed on a graph in pinned
        host memory too (:attr:`Target.listed_pinned`): yes unless the backend says
        otherwise."""
        return True

    def runs_here(self, inputs: dict) -> bool:
        """Whether this backend's code can run on these inputs (their device)."""
        return True

    def run(self, ir_op: Op, /, **kwargs):
        """Run ``ir_op`` on its (already checked) inputs and attributes (eager mode)."""
        return resolve(self, ir_op, kwargs.get("A")).fn(**kwargs)


#: the backends made so far, by name (:func:`gsample.backend.get_backend` makes them; the
#: package makes the torch one when it is imported)
_BACKENDS: dict = {}
#: the concrete backends (:func:`gsample.backend.get_backend`)
BACKENDS = ("torch", "cuda")


def reference() -> Backend:
    """The torch backend: the semantic reference, whose code runs every op another backend
    lacks (made when ``gsample.backend`` is imported; a dictionary lookup).

    Examples
    --------
    >>> reference().name
    'torch'
    """
    return _BACKENDS["torch"]


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
    reference's (the per-op fallback of docs/architecture.md §2.3: same device, same results)."""
    if layout is None:
        layout = "csc" if A is None else name_of(A)
    if given is None:
        given = tuple(k for k, v in (inputs or {}).items() if v is not None)
    impl = backend.impl(op, layout, sync_free, tuple(given))
    if impl is not None and (inputs is None or backend.runs_here(inputs)):
        return impl
    ref = reference().impl(op, layout)
    if ref is None:
        raise NotImplementedError(f"{op.value} has no implementation for layout {layout!r}")
    return ref


def run_op(backend: Backend, ir_op: Op, kwargs: dict):
    """Run ``ir_op`` eagerly on ``backend`` (or the torch reference where it lacks it)."""
    return resolve(backend, ir_op, kwargs.get("A"), inputs=kwargs).fn(**kwargs)
