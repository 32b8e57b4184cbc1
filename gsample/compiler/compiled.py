"""``@gs.compile``: trace once per set of static arguments, optimise, lower, run.

A :class:`CompiledSampler` keeps, per cache key, one optimised program (IR) and its lowered
form (``gsample.runtime``). The key is the static arguments' values and, for every traced
argument, its kind, dtype, device and layout (and the graph's node count), and the backend
the call resolves to (``"auto"``, the default setting, is resolved per call for the graph's
device: :func:`gsample.backend_for`). A new static value re-traces; old constants are never
reused. A call binds its arguments, finds the entry, and runs the lowered program
(``gsample.runtime.run``): checks at the program's boundary, resolved calls, random op ``i``
drawing with op ordinal ``stream + i`` so that compiled and eager runs draw the same samples
(docs/architecture.md §3).
"""

from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import Callable

import torch

from gsample.backend import (
    auto_backend,
    backend_for,
    check_name,
    cuda_problem,
    current_backend,
    get_backend,
)
from gsample.capture.trace import TraceError, trace
from gsample.formats.csc import CSC
from gsample.formats.placement import placement_of
from gsample.ir import Graph, Kind
from gsample.ir.graph import debug_level
from gsample.matrix.sparse import Matrix, matrix_of
from gsample.passes import PIPELINE, optimize
from gsample.passes.cost_model import annotate_inputs
from gsample.passes.super_batch import super_batch
from gsample.runtime import (
    Options,
    SuperBatcher,
    block_helpers,
    describe,
    interpret,
    lower,
    run,
    start,
)


def wrap(value):
    """A value a program returns as the user sees it: a sparse format (the runtime's
    values) as a ``gs.Matrix``, anything else as it is (``gsample.runtime.lower``'s
    ``wrap``)."""
    return matrix_of(value) if isinstance(value, CSC) else value


#: the runtime's default switches (a frozen dataclass: one instance serves every call)
_DEFAULT = Options()


def execute(
    graph: Graph, args: dict, backend: str = "torch", observe=None, options: Options = _DEFAULT
):
    """Lower ``graph`` and run it once on ``args`` (``name -> Matrix or tensor``).

    A convenience for hand-built graphs and tests; compiled samplers keep their lowered
    programs instead. ``observe(node, value)`` is called after each step.
    """
    device = next((str(v.device) for v in args.values() if isinstance(v, Matrix)), "cpu")
    return run(lower(graph, backend, options, device, wrap), args, observe)


def _print_step(node, value) -> None:
    if node is not None:
        print(f"[gsample] {node.name} = {node.op.value} -> {describe(value)}")


# ----------------------------------------------------------------------------- compile
def _pass_name(entry) -> str:
    fn = entry[0] if isinstance(entry, tuple) else entry
    return getattr(fn, "__name__", type(fn).__name__)


def check_passes(passes) -> list | None:
    """``passes`` as :func:`compile` and :func:`gsample.compiler.explain` take them, checked: None
    (the default pipeline), or a list (or tuple) whose entries are ``Graph -> Graph``
    callables, ``(callable, why)`` pairs, or names of the passes of
    :data:`gsample.passes.PIPELINE` (each replaced by its pipeline entry).

    Parameters
    ----------
    passes : list, tuple or None

    Returns
    -------
    list or None

    Raises
    ------
    TypeError
        ``passes`` is not a list or tuple (a single pass or name included), or an entry is
        none of the above; the message names ``passes`` (or ``passes[i]``).
    ValueError
        A name is not a pass of the pipeline (the message lists them).

    Examples
    --------
    >>> [f.__name__ for f, _ in check_passes(["cse", "dce"])]
    ['cse', 'dce']
    >>> check_passes("cse")
    Traceback (most recent call last):
    TypeError: passes: expected a list of passes ...
    """
    if passes is None:
        return None
    what = (
        "a list of passes (Graph -> Graph callables, (callable, why) pairs, or names "
        "of gsample.passes.PIPELINE's passes)"
    )
    if isinstance(passes, str):
        raise TypeError(
            f"passes: expected {what}, got the str {passes!r}; write passes=[{passes!r}]"
        )
    if not isinstance(passes, (list, tuple)):
        hint = f"; write passes=[{_pass_name(passes)}]" if callable(passes) else ""
        raise TypeError(f"passes: expected {what}, got {type(passes).__name__}{hint}")
    named = {_pass_name(e): e for e in PIPELINE}
    out = []
    for i, entry in enumerate(passes):
        if isinstance(entry, str):
            if entry not in named:
                raise ValueError(
                    f"passes[{i}]: no pass named {entry!r} in "
                    f"gsample.passes.PIPELINE; its passes: " + ", ".join(repr(n) for n in named)
                )
            entry = named[entry]
        elif not (callable(entry) or (isinstance(entry, tuple) and entry and callable(entry[0]))):
            raise TypeError(
                f"passes[{i}]: expected a Graph -> Graph callable, a (callable, "
                f"why) pair or a pass name, got {type(entry).__name__}"
            )
        out.append(entry)
    return out


def _hashable(value, name: str):
    """The cache-key part of a static argument: its value *and* type, recursively (so ``1``,
    ``1.0`` and ``True``, or ``[25, 10]`` and ``(25, 10)``, never share a program)."""
    if isinstance(value, (torch.Tensor, Matrix)):
        raise TypeError(
            f"{name}: a tensor or gs.Matrix inside a static argument would be "
            "built into the program as a constant; pass it as an argument of "
            "its own so that it is traced"
        )
    if isinstance(value, (list, tuple)):
        return (type(value).__qualname__,) + tuple(_hashable(v, name) for v in value)
    if isinstance(value, dict):
        return ("dict",) + tuple((k, _hashable(v, name)) for k, v in value.items())
    try:
        hash(value)
    except TypeError:
        raise TypeError(
            f"{name}: static arguments of a compiled sampler must be hashable "
            f"(int, float, str, tuple, None), got {type(value).__name__}"
        ) from None
    return (type(value).__qualname__, value)


#: leaves of a static value that cannot change after it is made
_FROZEN = (int, float, str, bytes, bool, type(None))


def _frozen(value) -> bool:
    """Whether ``value`` is immutable all the way down (tuples of numbers, strings, None):
    its :func:`_hashable` key is the same every call."""
    if value.__class__ is tuple:
        return all(_frozen(v) for v in value)
    return value.__class__ in _FROZEN


def _static_key(value, name: str, memo: dict):
    """:func:`_hashable` of ``value``, remembered by identity for an immutable tuple (the
    object is held with its key, so its id is not reused while remembered): a static
    argument such as ``fanouts=(25, 10)``, its default or the caller's, is keyed once."""
    if value.__class__ is not tuple:
        return _hashable(value, name)
    hit = memo.get(id(value))
    if hit is not None and hit[0] is value:
        return hit[1]
    key = _hashable(value, name)
    if _frozen(value):
        if len(memo) > 256:
            memo.clear()
        memo[id(value)] = (value, key)
    return key


def _signature_of(value):
    """The cache-key part of a traced argument: kind, dtype, device, layout (a matrix's
    placement too: the passes may plan differently for a graph in pinned host memory)."""
    if isinstance(value, Matrix):
        c = value.csc
        vals = None if c.values is None else (c.values.dtype, c.values.dim())
        return (
            "matrix",
            str(c.device),
            placement_of(c),
            c.num_nodes,
            "csc",
            vals,
            c.row_ids is None,
            c.col_ids is None,
        )
    return ("tensor", value.dtype, str(value.device), value.layout, value.dim())


class CompiledSampler:
    """A sampler function compiled by :func:`compile`; call it like the function.

    Attributes
    ----------
    fn : callable
        The original (eager) function.
    backend : str or None
        ``backend=`` as given (None: the ``gs.use_backend`` setting at each call);
        :meth:`backend_for` names the backend a call on a graph runs.
    generation : int
        :meth:`clear_cache` calls so far (part of :meth:`stamp`).
    """

    def __init__(
        self,
        fn: Callable,
        passes: list | None = None,
        backend: str | None = None,
        runtime: Options | None = None,
    ):
        if backend is not None:
            check_name(backend)  # an unknown name fails here, clearly
        passes = check_passes(passes)
        if runtime is not None and not isinstance(runtime, Options):
            raise TypeError(
                f"runtime: expected gsample.runtime.Options, got {type(runtime).__name__}"
            )
        self.fn = fn
        self.passes = passes
        self.backend = backend
        self.runtime = runtime or Options()
        self.signature = inspect.signature(fn)
        if any(q.kind is q.VAR_POSITIONAL for q in self.signature.parameters.values()):
            # the tracer binds every argument by name; *args has none
            raise TypeError(
                f"fn: a compiled sampler's parameters must be named; "
                f"{getattr(fn, '__name__', 'fn')} takes *args (name them, e.g. "
                "def sampler(A, seeds, fanouts=(25, 10)))"
            )
        self._cache: dict = {}
        self._plans: dict = {}
        self._variants: dict = {}
        self._statics: dict = {}  # id -> (static tuple, its key part): _static_key
        self._signatures = weakref.WeakKeyDictionary()  # CSC -> its key part: _signature
        self.traces = 0
        self.generation = 0  # clear_cache()s so far
        functools.update_wrapper(self, fn)

    def _bound(self, args, kwargs) -> dict:
        """``name -> value`` of every parameter, as ``signature.bind`` + defaults gives it;
        the binding is worked out once per way of calling (number of positional arguments,
        keyword names) and replayed after."""
        shape = (len(args), tuple(kwargs))
        plan = self._plans.get(shape)
        if plan is None:
            bound = self.signature.bind(*args, **kwargs)
            bound.apply_defaults()
            simple = all(
                p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY, p.POSITIONAL_ONLY)
                for p in self.signature.parameters.values()
            )
            if not simple:
                return dict(bound.arguments)
            plan = []
            for i, (name, p) in enumerate(self.signature.parameters.items()):
                if i < len(args):
                    plan.append((name, 0, i))
                elif name in kwargs:
                    plan.append((name, 1, name))
                else:
                    plan.append((name, 2, p.default))
            self._plans[shape] = plan
        return {
            name: args[x] if how == 0 else kwargs[x] if how == 1 else x for name, how, x in plan
        }

    def _split(self, args, kwargs):
        dynamic, static, num_nodes = {}, {}, None
        for name, value in self._bound(args, kwargs).items():
            if isinstance(value, Matrix):
                dynamic[name] = value
                num_nodes = value.num_nodes if num_nodes is None else num_nodes
            elif isinstance(value, torch.Tensor):
                dynamic[name] = value
            else:
                static[name] = value
        if num_nodes is None:
            raise TypeError(f"{self.fn.__name__}: a compiled sampler needs a gs.Matrix argument")
        return dynamic, static, num_nodes

    def _backend(self, dynamic: dict | None = None) -> str:
        """The backend a call on the traced arguments ``dynamic`` runs on: ``backend=``,
        else the ``gs.use_backend`` setting, ``"auto"`` resolved for the device of the
        first matrix (once probed, a dictionary lookup: this is on every call's path).
        Without ``dynamic`` (a caller that has not bound the call), ``"auto"`` is resolved
        for the current GPU, ``"torch"`` when there is none or its kernels cannot run (a
        graph on the CPU runs the torch code whatever the name)."""
        name = self.backend or current_backend()
        if name != "auto":
            return name
        if dynamic is not None:
            for v in dynamic.values():
                if v.__class__ is Matrix or isinstance(v, Matrix):
                    indptr = v.csc.indptr
                    return auto_backend(indptr.device) if indptr.is_cuda else "torch"
        if torch.cuda.is_available() and cuda_problem(torch.cuda.current_device()) is None:
            return "cuda"
        return "torch"

    def backend_for(self, A) -> str:
        """The backend whose code a call of this sampler on graph ``A`` runs: ``"torch"``
        or ``"cuda"`` (:func:`gsample.backend_for` of ``A`` and this sampler's
        ``backend``).

        Examples
        --------
        >>> import torch, gsample as gs
        >>> @gs.compile
        ... def sampler(A, seeds):                     # one GraphSAGE layer
        ...     return [A[:, seeds].individual_sample(5)]
        >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.arange(8)
        >>> sampler.backend_for(A)
        'torch'
        >>> sampler.backend_for(A.to("cuda"))    # CuPy installed  # doctest: +SKIP
        'cuda'
        """
        return backend_for(A, self.backend)

    def _check_device(self, dynamic) -> None:
        """An explicit ``backend="cuda"`` needs the graph on a GPU (under
        ``gs.use_backend("cuda")`` a CPU graph runs the torch code, as eager ops do)."""
        if self.backend == "cuda" and any(
            isinstance(v, Matrix) and v.device.type != "cuda" for v in dynamic.values()
        ):
            raise ValueError("backend: the 'cuda' backend needs the graph on a GPU (A.to('cuda'))")

    def _key(self, dynamic, static, num_nodes, backend):
        # the backend is part of the key: the layout pass prices a plan for one backend
        return (
            tuple((n, _static_key(v, n, self._statics)) for n, v in static.items()),
            tuple((n, self._signature(v)) for n, v in dynamic.items()),
            num_nodes,
            backend,
        )

    def _signature(self, value):
        """:func:`_signature_of` ``value``; a matrix's remembered with its CSC (frozen: its
        fields, their devices and dtypes, never change; weakly, not keeping a graph alive)."""
        if value.__class__ is not Matrix:
            return _signature_of(value)
        c = value.csc
        sig = self._signatures.get(c)
        if sig is None:
            sig = self._signatures[c] = _signature_of(value)
        return sig

    def program(self, *args, **kwargs) -> Graph:
        """The optimised IR this call would run (tracing it if needed)."""
        dynamic, static, num_nodes = self._split(args, kwargs)
        return self._program(dynamic, static, num_nodes, self._backend(dynamic))

    def lowered(self, *args, **kwargs):
        """The lowered program (``gsample.runtime.Program``) this call would run."""
        dynamic, static, num_nodes = self._split(args, kwargs)
        return self._entry(dynamic, static, num_nodes, self._backend(dynamic))[1]

    def _program(self, dynamic, static, num_nodes, backend) -> Graph:
        return self._entry(dynamic, static, num_nodes, backend)[0]

    def _entry(self, dynamic, static, num_nodes, backend) -> list:
        """``[optimised IR, lowered program]`` of this cache key (made on first use; the
        super-batched programs belong to the super-batchers :meth:`super_batched` returns)."""
        key = self._key(dynamic, static, num_nodes, backend)
        entry = self._cache.get(key)
        if entry is None:
            kinds = {
                n: Kind.MATRIX if isinstance(v, Matrix) else Kind.TENSOR for n, v in dynamic.items()
            }
            graph = trace(self.fn, kinds, static, num_nodes)
            graph.target = get_backend(backend).target()  # what the passes may plan for
            # sizes, device and backend of this call: what the layout pass's cost model prices
            annotate_inputs(graph, dynamic, backend)
            graph = optimize(graph, self.passes)
            device = next(str(v.device) for v in dynamic.values() if isinstance(v, Matrix))
            entry = self._cache[key] = [graph, self._lower(graph, backend, device)]
            self.traces += 1
        return entry

    def _lower(self, graph: Graph, backend: str, device: str):
        """``graph`` lowered as this sampler's programs are (None: it is interpreted)."""
        return lower(graph, backend, self.runtime, device, wrap) if self.runtime.lowered else None

    def __call__(self, *args, **kwargs):
        dynamic, static, num_nodes = self._split(args, kwargs)  # once per call: a hot path
        self._check_device(dynamic)
        backend = self._backend(dynamic)
        graph, program = self._entry(dynamic, static, num_nodes, backend)
        if program is None:
            return interpret(graph, dynamic, backend, wrap)
        return run(program, dynamic, _print_step if debug_level() >= 3 else None)

    def begin(self, *args, **kwargs):
        """This call as a generator pausing where it waits for the device
        (:func:`gsample.runtime.program.start`), or None where it would not pause (no
        lowered program, a CPU program, the runtime's ``overlap`` off,
        ``GSAMPLE_DEBUG=3``); a ``gs.DataLoader`` keeps two such calls in flight
        (:mod:`gsample.runtime.overlap`). Its value (``StopIteration.value``) is what the
        call returns.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> @gs.compile
        ... def sampler(A, seeds):                     # one GraphSAGE layer
        ...     return [A[:, seeds].individual_sample(5)]
        >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.arange(8)
        >>> sampler.begin(A, seeds) is None          # on the CPU: call sampler(A, seeds)
        True

        On a GPU:

        >>> calls = sampler.begin(A.to("cuda"), seeds.cuda())  # doctest: +SKIP
        >>> next(calls)         # the first layer's graph is queued  # doctest: +SKIP
        >>> try:  # doctest: +SKIP
        ...     while True:
        ...         next(calls)
        ... except StopIteration as end:
        ...     blocks = end.value                   # what sampler(A, seeds) returns
        """
        planned = self.plan(*args, **kwargs)
        return None if planned is None else start(*planned)

    def plan(self, *args, **kwargs):
        """``(program, arguments)`` of this call where it would pause (see :meth:`begin`),
        else None: ``start(program, arguments)`` runs it. A loader plans its epoch's first
        mini-batch and starts the others with their seeds in its place (same program: the
        same static arguments, graph and tensor signature), sparing each call the binding
        and cache lookup.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> @gs.compile
        ... def sampler(A, seeds):                     # one GraphSAGE layer
        ...     return [A[:, seeds].individual_sample(5)]
        >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.arange(8)
        >>> sampler.plan(A, seeds) is None           # on the CPU nothing pauses
        True

        On a GPU:

        >>> from gsample.runtime.program import start
        >>> program, arguments = sampler.plan(A.to("cuda"), seeds.cuda())  # doctest: +SKIP
        >>> calls = start(program, {**arguments, "seeds": seeds + 8})  # doctest: +SKIP
        """
        prepared = self._prepare(args, kwargs)
        if prepared is None or not self.runtime.overlap or not prepared[0].pauses:
            return None
        return prepared[:2]

    def prepare(self, *args, **kwargs):
        """``(program, arguments)`` of this call, or None where it runs no lowered program as
        it is (the runtime's ``lowered`` off: interpreted; ``GSAMPLE_DEBUG=3``: printed) or a
        static argument may change in place (a list, a dict, an object: each call keys it as
        it is then): then ``gsample.runtime.run(program, arguments)`` is the call (made under
        the same random stream). The binding, the device's check, the backend's resolution
        and the cache lookup are this call's alone: a loader calling the sampler one
        mini-batch at a time prepares its epoch's first and runs the others with their seeds
        in its place (same program: the same static arguments, graph and tensor signature),
        keeping that host work off every mini-batch's path, while :meth:`stamp` is unchanged
        (no :meth:`clear_cache`, the same backend setting).

        Examples
        --------
        >>> import torch, gsample as gs
        >>> @gs.compile
        ... def sampler(A, seeds):                     # one GraphSAGE layer
        ...     return [A[:, seeds].individual_sample(5)]
        >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.arange(8)
        >>> from gsample.runtime import run
        >>> program, arguments = sampler.prepare(A, seeds)
        >>> blocks = run(program, {**arguments, "seeds": seeds + 8})   # the next mini-batch
        >>> [b.shape for b in blocks]
        [(100, 8)]
        """
        prepared = self._prepare(args, kwargs)
        return None if prepared is None or not prepared[2] else prepared[:2]

    def _prepare(self, args, kwargs):
        """``(program, arguments, frozen)`` of this call (None: interpreted or printed);
        ``frozen``: every static argument is immutable all the way down (:func:`_frozen`)."""
        dynamic, static, num_nodes = self._split(args, kwargs)
        self._check_device(dynamic)
        _graph, program = self._entry(dynamic, static, num_nodes, self._backend(dynamic))
        if program is None or debug_level() >= 3:
            return None
        return program, dynamic, all(_frozen(v) for v in static.values())

    def stamp(self) -> tuple:
        """What a call's program depends on besides its arguments: ``(generation, the
        gs.use_backend setting where no backend= was given, else None)``. A program
        :meth:`prepare` handed out is this sampler's call while the stamp is unchanged.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> @gs.compile
        ... def sampler(A, seeds):                     # one GraphSAGE layer
        ...     return [A[:, seeds].individual_sample(5)]
        >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.arange(8)
        >>> stamp = sampler.stamp()
        >>> sampler.clear_cache()
        >>> sampler.stamp() == stamp
        False
        """
        return self.generation, None if self.backend else current_backend()

    def super_batched(
        self, args: tuple, kwargs: dict | None = None, *, seeds: str, fixed_state: bool = False
    ) -> SuperBatcher:
        """This call's program run for N mini-batches at once: a
        :class:`gsample.runtime.SuperBatcher` (``gs.DataLoader(..., super_batch=N)``).

        The call is traced (as :meth:`program`), and for each number of mini-batches N the
        super-batcher asks for, its optimised IR is rewritten by
        :func:`gsample.passes.super_batch.super_batch` and lowered as this sampler's
        programs are: once per N, kept by the super-batcher returned (a loader's) and freed
        with it, as its CUDA graphs and their memory should be. Samples are those of the N
        calls made one by one, mini-batch ``first + b`` drawing with its own op keys.

        Parameters
        ----------
        args : tuple
            A call of the sampler on a first mini-batch, ``self(*args, **kwargs)``: its
            positional arguments (given as a tuple, so that no parameter's name clashes
            with ``seeds`` or ``fixed_state``) ...
        kwargs : dict, optional
            ... and its keyword arguments.
        seeds : str
            The name of the parameter that takes a mini-batch's seeds (node ids, checked).
        fixed_state : bool
            The caller's word that tensor arguments the random draws depend on (model
            weights, bandit biases) do not change while the super-batcher runs (else such
            a sampler is refused).

        Returns
        -------
        gsample.runtime.SuperBatcher

        Raises
        ------
        ValueError
            The sampler does not trace (``super_batch: the sampler must compile with
            gs.compile: ...``), or cannot be super-batched (a message naming
            ``super_batch``: state without ``fixed_state``, dense code writing in place,
            ...); as :meth:`__call__` for bad arguments.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> @gs.compile
        ... def sampler(A, seeds):                     # one GraphSAGE layer
        ...     return [A[:, seeds].individual_sample(5)]
        >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.arange(8)
        >>> parts = list(torch.arange(32).view(4, 8))            # 4 mini-batches of 8 seeds
        >>> sb = sampler.super_batched((A, parts[0]), seeds="seeds")
        >>> outs = sb.run(parts, 0, first=0)                    # 4 mini-batches, one run
        >>> len(outs), [b.shape for b in outs[0]]
        (4, [(100, 8)])
        """
        dynamic, static, num_nodes = self._split(args, kwargs or {})
        self._check_device(dynamic)
        backend = self._backend(dynamic)
        try:
            entry = self._entry(dynamic, static, num_nodes, backend)
        except TraceError as e:
            raise ValueError(f"super_batch: the sampler must compile with gs.compile: {e}") from e
        counts = {k: v.num_nodes for k, v in dynamic.items() if isinstance(v, Matrix)}
        device = next(str(v.device) for v in dynamic.values() if isinstance(v, Matrix))

        def build(copies: int) -> tuple:
            """``(IR, lowered program)`` for ``copies`` mini-batches (the super-batcher
            keeps it, once per count, and frees it with the loader that holds it)."""
            rewrite = super_batch(
                copies, num_nodes, seeds, fixed_state, counts, helpers=block_helpers(wrap)
            )
            graph = optimize(entry[0], [rewrite])
            return graph, self._lower(graph, backend, device)

        return SuperBatcher(dynamic, seeds, num_nodes, backend, build)

    def with_passes(self, *extra: tuple) -> CompiledSampler:
        """This sampler with ``extra`` passes run after its own: the same function, backend
        and runtime options, its programs traced and kept apart (a loader that gathers
        features asks for ``gsample.passes.gather_nodes``'s). Made once per ``extra`` and
        kept by this sampler; :meth:`clear_cache` clears its programs with this one's.

        Parameters
        ----------
        *extra : tuple
            ``(pass, why)`` entries, as in :data:`gsample.passes.PIPELINE`.

        Returns
        -------
        CompiledSampler

        Examples
        --------
        >>> import gsample as gs
        >>> @gs.compile
        ... def sampler(A, seeds):                     # one GraphSAGE layer
        ...     return [A[:, seeds].individual_sample(5)]
        >>> from gsample.passes.gather_nodes import gather_nodes
        >>> variant = sampler.with_passes((gather_nodes, "the loader's n_id"))
        >>> variant is sampler.with_passes((gather_nodes, "the loader's n_id"))
        True
        """
        variant = self._variants.get(extra)
        if variant is None:
            passes = [*(PIPELINE if self.passes is None else self.passes), *extra]
            variant = CompiledSampler(self.fn, passes, self.backend, self.runtime)
            self._variants[extra] = variant
        return variant

    def clear_cache(self) -> None:
        """Drop every program traced so far (and those of the variants :meth:`with_passes`
        made): the next call traces again, reading the function's globals as they are then."""
        self._cache.clear()
        # a variant's programs too, the variant kept: a loader gathering features holds it
        # (dropping it from here left that loader sampling with its old programs)
        for variant in self._variants.values():
            variant.clear_cache()
        self.generation += 1  # what prepare() handed out is no longer this sampler's


def compile(
    fn: Callable | None = None,
    *,
    passes: list | None = None,
    backend: str | None = None,
    runtime: Options | None = None,
):
    """Compile a sampler function: trace it with torch.fx, optimise its IR, run it.

    Arguments that are a ``gs.Matrix`` or a tensor are traced; every other argument
    is static: its value is built into the program (Python loops over it unroll) and
    a new value compiles a new program. Samples equal the eager function's under the
    same ``gs.manual_seed``.

    Parameters
    ----------
    fn : callable
        ``fn(A, seeds, ...)``, written with the Matrix API.
    passes : list, optional
        Passes to run instead of ``gsample.passes.PIPELINE``, in order: ``Graph -> Graph``
        callables, ``(callable, why)`` pairs, or names of the pipeline's passes
        (``["cse", "dce"]``); ``[]`` runs the traced program as is.
    backend : {"auto", "torch", "cuda"}, optional
        ``"auto"``: the CUDA backend for a graph on a GPU where CuPy's kernels run, the
        torch backend otherwise (resolved per call for the graph's device:
        :func:`gsample.backend_for`); ``"torch"`` (CPU and CUDA tensors: the reference);
        ``"cuda"`` (CuPy kernels where it has them, the torch code on the GPU elsewhere; the
        graph must be on a GPU). Default: the setting current at each call
        (``gs.use_backend``; ``"auto"`` unless set).
    runtime : gsample.runtime.Options, optional
        What the runtime may do (lowering, boundary checks, sync-free implementations,
        CUDA graphs); all on by default. Samples are the same with every setting.

    Returns
    -------
    CompiledSampler

    Raises
    ------
    TypeError
        ``fn`` is not callable, ``passes`` is not a list of passes, ``runtime`` is not an
        ``Options``.
    ValueError
        ``backend`` is not one of the names above, or a name in ``passes`` is no pass.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> @gs.compile
    ... def graphsage(A, seeds, fanouts=(25, 10)):
    ...     blocks = []
    ...     for k in fanouts:
    ...         s = A[:, seeds].individual_sample(k)
    ...         blocks.append(s)
    ...         seeds = s.all_nodes()
    ...     return blocks
    >>> A = gs.datasets.rmat(100, 500, seed=0)
    >>> blocks = graphsage(A, torch.arange(8))     # on a GPU graph: the CUDA kernels
    >>> [b.shape for b in blocks]                  # (nodes, columns): 8 seeds, then their hop
    [(100, 8), (100, 26)]
    """
    if fn is None:  # @gs.compile(...): bad options fail here, not at the def
        passes = check_passes(passes)
        if backend is not None:
            check_name(backend)
        return lambda f: CompiledSampler(f, passes, backend, runtime)
    if not callable(fn):
        raise TypeError(f"fn: expected a function, got {type(fn).__name__}")
    return CompiledSampler(fn, passes, backend, runtime)
