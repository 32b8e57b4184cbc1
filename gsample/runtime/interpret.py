"""The IR interpreter: runs a graph node by node (``Options(lowered=False)``).

What compiled samplers ran before lowering existed, kept as the baseline of the runtime
ablation: every node builds its arguments in a dictionary, looks its op up, and every op
checks all its inputs as an eager call does. Samples are the lowered program's.
"""

from __future__ import annotations

from collections.abc import Callable

from gsample.backend import get_backend, resolve, run_op
from gsample.base.random import BatchKeys, KeyRange, op_key, stream_state
from gsample.ir import Graph, Node, Op, info, map_template
from gsample.ir.visit import NodeVisitor
from gsample.runtime import dense_index
from gsample.runtime.block_diagonal import PerBatchDraw
from gsample.runtime.cached import CachedValue
from gsample.runtime.lower import lower
from gsample.runtime.options import Options


def _call_dense(fn, template, env_get):
    args, kwargs = map_template(template, env_get)
    if isinstance(fn, tuple):  # ("method", name)
        return getattr(args[0], fn[1])(*args[1:], **kwargs)
    return fn(*args, **kwargs)


def interpret(graph: Graph, args: dict, backend: str = "torch", wrap: Callable | None = None):
    """Run ``graph`` on ``args`` (``name -> gs.Matrix or tensor``) node by node.

    Parameters
    ----------
    graph : Graph
        An optimised IR graph.
    args : dict
        Its arguments by name: a matrix as a ``gs.Matrix`` (read as ``.csc``), or a tensor.
    backend : str
        ``"torch"`` or ``"cuda"``.
    wrap : callable, optional
        Applied to each value returned (as :func:`gsample.runtime.lower.lower`'s ``wrap``);
        default: values as they are (sparse formats).

    Returns
    -------
    The output's structure, as the sampler returns it.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> @gs.compile
    ... def graphsage(A, seeds):                   # two GraphSAGE layers
    ...     s1 = A[:, seeds].individual_sample(10)
    ...     return [s1, A[:, s1.all_nodes()].individual_sample(5)]
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.arange(8)
    >>> out = interpret(graphsage.program(A, seeds), {"A": A, "seeds": seeds})
    >>> [type(b).__name__ for b in out]          # graphsage(A, seeds)'s blocks, as formats
    ['CSC', 'CSC']
    """
    stream = stream_state()
    run = _Interpreter(graph, args, backend, wrap, stream.seed, stream.ordinal, stream.batch_index)
    stream.ordinal += graph.num_random
    for node in graph.nodes:
        value = run.visit(node)
        if node.op is Op.OUTPUT:
            return value
        run.env[node] = value
    raise AssertionError("graph without an OUTPUT node")


class _Interpreter(NodeVisitor):
    """The value of each node, by kind (:class:`gsample.ir.visit.NodeVisitor`), from the
    values of the nodes before it (``env``)."""

    def __init__(self, graph, args, backend, wrap, seed, base, batch):
        self.args, self.backend, self.wrap = args, backend, wrap
        self.be = get_backend(backend)
        self.seed, self.base, self.batch = seed, base, batch
        self.env: dict = {}

    def input(self, node: Node):
        value = self.args[node.attrs["name"]]
        # a matrix argument (a gs.Matrix) is read as its format
        return getattr(value, "csc", value)

    def constant(self, node: Node):
        return node.attrs["value"]

    def dense(self, node: Node):
        env = self.env
        fn, template = node.attrs["fn"], node.attrs["template"]
        if dense_index.kind(fn) is not None:  # ids bounded first, as a lowered program's
            names = list(node.inputs)
            guarded = dense_index.GuardedIndex(
                fn, template, names, dense_index.index_names(fn, template, node.inputs), "dense"
            )
            return guarded(*(env[node.inputs[k]] for k in names))
        return _call_dense(fn, template, lambda ref: env[node.inputs[ref.name]])

    def getitem(self, node: Node):
        return self.env[node.inputs["x"]][node.attrs["index"]]

    def cached(self, node: Node):
        program = CachedValue(node, self.backend, Options(lowered=False), lower)
        return program(self.env[node.inputs["graph"]])

    def output(self, node: Node):
        env, wrap = self.env, self.wrap
        get = (
            (lambda ref: env[node.inputs[ref.name]])
            if wrap is None
            else (lambda ref: wrap(env[node.inputs[ref.name]]))
        )
        return map_template(node.attrs["template"], get)

    def op(self, node: Node):
        env, be, seed, base, batch = self.env, self.be, self.seed, self.base, self.batch
        op = node.op
        d = info(op)
        if "per_batch" in node.attrs:  # a super-batch's draw on the whole graph
            return _per_batch_draw(node, d, be, env, seed, base, batch)
        kwargs = {name: env[v] for name, v in node.inputs.items()}
        kwargs.update({name: node.attrs[name] for name in d.attrs if name in node.attrs})
        batches = node.attrs.get("batches")  # a super-batched random op
        if batches is None and d.check is not None:
            kwargs.update(d.check(**kwargs))
        if node.is_random and "num_ordinals" in node.attrs:  # a fused walk
            kwargs["key"] = KeyRange.of(
                seed, base + node.attrs["ordinal"], len(node.ordinals), batch, batches
            )
        elif node.is_random:
            kwargs["key"] = (
                op_key(seed, base + node.attrs["ordinal"], batch)
                if not batches
                else BatchKeys.of(seed, base + node.attrs["ordinal"], batch, *batches)
            )
        # a super-batched op runs the torch code (it takes BatchKeys, encoded frontiers)
        # unless the backend's own takes a super-batch's keys (Impl.batch_keys), as
        # lowering decides
        here = be
        if batches is not None and not (
            node.is_random and resolve(be, op, kwargs.get("A"), inputs=kwargs).batch_keys
        ):
            here = get_backend("torch")
        return run_op(here, op, kwargs)


def _per_batch_draw(node, d, be, env, seed, base, batch):
    """A random op on the whole graph in a super-batch: once per mini-batch, each with its
    own key (:class:`gsample.runtime.block_diagonal.PerBatchDraw`)."""
    names = tuple(node.inputs)
    attrs = {a: node.attrs[a] for a in d.attrs if a in node.attrs}
    A = env[node.inputs["A"]]
    impl = resolve(be, node.op, A, inputs={"A": A}, given=(*names, *attrs))
    keys = BatchKeys.of(seed, base + node.attrs["ordinal"], batch, *node.attrs["batches"])
    draw = PerBatchDraw(impl.fn, names, attrs, node.attrs["per_batch"], d.check)
    return draw(*[env[node.inputs[k]] for k in names], keys)
