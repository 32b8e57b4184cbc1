"""``@gs.compile``: trace once per set of static arguments, optimise, run the IR.

A :class:`CompiledSampler` keeps one optimised program per cache key: the static
arguments' values and, for every traced argument, its kind, dtype, device and
layout (and the graph's node count). A new static value re-traces; old constants
are never reused. Running a program is :func:`execute`: an interpreter over the IR
that sends each sparse op to the backend with the same data checks as eager mode,
and gives random op ``i`` the op ordinal ``stream + i`` so that compiled and eager
runs draw the same samples (DESIGN §3).
"""
from __future__ import annotations

import functools
import inspect
import os
import weakref
from typing import Callable, Optional

import torch

from . import validate as V
from .backend import current_backend, get_backend, run_op
from .ir import Graph, Kind, Op, info, map_template
from .matrix import Matrix
from .random import BatchKeys, _stream, op_key
from .storage import CSC


def debug_level() -> int:
    """``GSAMPLE_DEBUG``: 0 off; 1 verify the IR after every pass; 2 also print the IR after
    every pass that changed it; 3 also print each node as it executes."""
    try:
        return int(os.environ.get("GSAMPLE_DEBUG", "0"))
    except ValueError:
        return 0


# ----------------------------------------------------------------------------- execution
_CACHED_VALUES: "weakref.WeakKeyDictionary[CSC, dict]" = weakref.WeakKeyDictionary()


def _call_dense(fn, template, env_get):
    args, kwargs = map_template(template, env_get)
    if isinstance(fn, tuple):                     # ("method", name)
        return getattr(args[0], fn[1])(*args[1:], **kwargs)
    return fn(*args, **kwargs)


def execute(graph: Graph, args: dict, backend: str = "torch", observe=None):
    """Run ``graph`` on ``args`` (``name -> Matrix or tensor``) and return its output.

    Random op ``i`` draws with op ordinal ``stream.ordinal + i``; the stream then
    advances by ``graph.num_random``, as the eager program would. A random op that
    ``gsample.passes.super_batch`` made run N mini-batches (``attrs["batches"] = (N, n)``)
    gets a ``BatchKeys`` key, one key per mini-batch ``stream.batch_index + b``, and runs
    the torch code, which checks its inputs per mini-batch. ``observe(node, value)``, when
    given, is called after each node (the loader's memory estimate uses it).
    """
    be = get_backend(backend)
    stream = _stream()
    seed, base, batch = stream.seed, stream.ordinal, stream.batch_index
    stream.ordinal += graph.num_random
    env: dict = {}
    verbose = debug_level() >= 3
    for node in graph.nodes:
        get = lambda ref, n=node: env[n.inputs[ref.name]]  # noqa: E731
        op = node.op
        if op is Op.INPUT:
            value = args[node.attrs["name"]]
            value = value.csc if isinstance(value, Matrix) else value
        elif op is Op.CONSTANT:
            value = node.attrs["value"]
        elif op is Op.DENSE:
            value = _call_dense(node.attrs["fn"], node.attrs["template"], get)
        elif op is Op.GETITEM:
            value = env[node.inputs["x"]][node.attrs["index"]]
        elif op is Op.CACHED:
            value = _cached(node, env[node.inputs["graph"]], backend)
        elif op is Op.OUTPUT:
            wrap = lambda ref: _wrap(get(ref))  # noqa: E731
            return map_template(node.attrs["template"], wrap)
        else:
            kwargs = {name: env[v] for name, v in node.inputs.items()}
            kwargs.update({name: node.attrs[name] for name in info(op).attrs})
            batches = node.attrs.get("batches")            # a super-batched random op
            if batches is None:
                V.check_op(op, kwargs)
            if node.is_random:
                kwargs["key"] = op_key(seed, base + node.attrs["ordinal"], batch) if not batches \
                    else BatchKeys.of(seed, base + node.attrs["ordinal"], batch, *batches)
            # an op the backend has no kernel for runs the reference code (same device)
            value = run_op(be if batches is None else get_backend("torch"), op, kwargs)
        if verbose:
            print(f"[gsample] {node.name} = {op.value} -> {_describe(value)}")
        if observe is not None:
            observe(node, value)
        env[node] = value
    raise AssertionError("graph without an OUTPUT node")


def _cached(node, graph_csc: CSC, backend: str):
    """A frontier-independent value: computed on first use per graph, then reused.

    Keyed by the backend and the node's ``meta["cache_key"]`` (a structural key of the
    program, so re-traced and repeated programs share a value; else the program's id),
    and recomputed when one of the graph's tensors, or a tensor constant of the program,
    was written in place since."""
    per_graph = _CACHED_VALUES.setdefault(graph_csc, {})
    program = node.attrs["program"]
    key = (backend, node.meta.get("cache_key", id(program)))
    consts = [n.attrs["value"] for n in program.nodes if n.op is Op.CONSTANT]
    stamp = tuple(t._version for t in (graph_csc.indptr, graph_csc.rows, graph_csc.row_ids,
                                       graph_csc.col_ids, graph_csc.values, graph_csc.eids,
                                       *consts) if isinstance(t, torch.Tensor))
    if key not in per_graph or per_graph[key][1] != stamp:
        (name,) = [n.attrs["name"] for n in program.nodes if n.op is Op.INPUT]
        out = execute(program, {name: Matrix(graph_csc)}, backend)
        per_graph[key] = (program, stamp, out.csc if isinstance(out, Matrix) else out)
    return per_graph[key][2]


def _wrap(value):
    return Matrix(value) if isinstance(value, CSC) else value


def _describe(value) -> str:
    if isinstance(value, CSC):
        return f"matrix {value.num_rows}x{value.num_cols}, {value.nnz} edges"
    if isinstance(value, torch.Tensor):
        return f"tensor {tuple(value.shape)} {value.dtype}"
    return type(value).__name__


# ----------------------------------------------------------------------------- compile
def _hashable(value, name: str):
    """The cache-key part of a static argument: its value *and* type, recursively (so ``1``,
    ``1.0`` and ``True``, or ``[25, 10]`` and ``(25, 10)``, never share a program)."""
    if isinstance(value, (torch.Tensor, Matrix)):
        raise TypeError(f"{name}: a tensor or gs.Matrix inside a static argument would be "
                        "built into the program as a constant; pass it as an argument of "
                        "its own so that it is traced")
    if isinstance(value, (list, tuple)):
        return (type(value).__qualname__,) + tuple(_hashable(v, name) for v in value)
    if isinstance(value, dict):
        return ("dict",) + tuple((k, _hashable(v, name)) for k, v in value.items())
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"{name}: static arguments of a compiled sampler must be hashable "
                        f"(int, float, str, tuple, None), got {type(value).__name__}") from None
    return (type(value).__qualname__, value)


def _signature_of(value):
    """The cache-key part of a traced argument: kind, dtype, device, layout."""
    if isinstance(value, Matrix):
        c = value.csc
        vals = None if c.values is None else (c.values.dtype, c.values.dim())
        return ("matrix", str(c.device), c.num_nodes, "csc", vals,
                c.row_ids is None, c.col_ids is None)
    return ("tensor", value.dtype, str(value.device), value.layout, value.dim())


class CompiledSampler:
    """A sampler function compiled by :func:`compile`; call it like the function.

    Attributes
    ----------
    fn : callable
        The original (eager) function.
    """

    def __init__(self, fn: Callable, passes: Optional[list] = None,
                 backend: Optional[str] = None):
        if backend is not None:
            get_backend(backend)                  # an unknown name fails here, clearly
        self.fn = fn
        self.passes = passes
        self.backend = backend
        self.signature = inspect.signature(fn)
        self._cache: dict = {}
        self.traces = 0
        functools.update_wrapper(self, fn)

    def _split(self, args, kwargs):
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        dynamic, static, num_nodes = {}, {}, None
        for name, value in bound.arguments.items():
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

    def _backend(self) -> str:
        """The backend a call runs on: ``backend=``, else the ``gs.use_backend`` one."""
        return self.backend or current_backend()

    def _check_device(self, dynamic) -> None:
        """An explicit ``backend="cuda"`` needs the graph on a GPU (under
        ``gs.use_backend("cuda")`` a CPU graph runs the torch code, as eager ops do)."""
        if self.backend == "cuda" and any(isinstance(v, Matrix) and v.device.type != "cuda"
                                          for v in dynamic.values()):
            raise ValueError("backend: the 'cuda' backend needs the graph on a GPU "
                             "(A.to('cuda'))")

    def _key(self, dynamic, static, num_nodes, backend):
        # the backend is part of the key: the layout pass prices a plan for one backend
        return (tuple((n, _hashable(v, n)) for n, v in static.items()),
                tuple((n, _signature_of(v)) for n, v in dynamic.items()), num_nodes, backend)

    def program(self, *args, **kwargs) -> Graph:
        """The optimised IR this call would run (tracing it if needed)."""
        dynamic, static, num_nodes = self._split(args, kwargs)
        return self._program(dynamic, static, num_nodes, self._backend())

    def _program(self, dynamic, static, num_nodes, backend) -> Graph:
        key = self._key(dynamic, static, num_nodes, backend)
        if key not in self._cache:
            from .passes import optimize
            from .trace import trace
            kinds = {n: Kind.MATRIX if isinstance(v, Matrix) else Kind.TENSOR
                     for n, v in dynamic.items()}
            from .passes.cost_model import annotate_inputs
            graph = trace(self.fn, kinds, static, num_nodes)
            # sizes, device and backend of this call: what the layout pass's cost model prices
            annotate_inputs(graph, dynamic, backend)
            self._cache[key] = optimize(graph, self.passes)
            self.traces += 1
        return self._cache[key]

    def __call__(self, *args, **kwargs):
        dynamic, static, num_nodes = self._split(args, kwargs)   # once per call: a hot path
        self._check_device(dynamic)
        backend = self._backend()
        return execute(self._program(dynamic, static, num_nodes, backend), dynamic, backend)

    def clear_cache(self) -> None:
        self._cache.clear()


def compile(fn: Optional[Callable] = None, *, passes: Optional[list] = None,
            backend: Optional[str] = None):
    """Compile a sampler function: trace it with torch.fx, optimise its IR, run it.

    Arguments that are a ``gs.Matrix`` or a tensor are traced; every other argument
    is static: its value is built into the program (Python loops over it unroll) and
    a new value compiles a new program. Samples equal the eager function's under the
    same ``gs.manual_seed``.

    Parameters
    ----------
    fn : callable
        ``fn(A, seeds, ...)``, written with the Matrix API.
    passes : list of callables, optional
        ``Graph -> Graph`` passes to run instead of ``gsample.passes.PIPELINE``
        (``[]`` runs the traced program as is).
    backend : str, optional
        ``"torch"`` (CPU and CUDA tensors) or ``"cuda"`` (CuPy kernels where it has them,
        the torch code on the GPU elsewhere; the graph must be on a GPU). Default: the
        backend current at each call (``gs.use_backend``; ``"torch"`` unless set).

    Returns
    -------
    CompiledSampler

    Examples
    --------
    >>> @gs.compile
    ... def graphsage(A, seeds, fanouts=(25, 10)):
    ...     blocks = []
    ...     for k in fanouts:
    ...         s = A[:, seeds].individual_sample(k)
    ...         blocks.append(s)
    ...         seeds = s.all_nodes()
    ...     return blocks
    >>> blocks = graphsage(A, torch.arange(512))
    """
    if fn is None:
        return lambda f: CompiledSampler(f, passes, backend)
    if not callable(fn):
        raise TypeError(f"fn: expected a function, got {type(fn).__name__}")
    return CompiledSampler(fn, passes, backend)
