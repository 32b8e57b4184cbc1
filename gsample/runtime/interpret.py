"""The IR interpreter: runs a graph node by node (``Options(lowered=False)``).

What compiled samplers ran before lowering existed, kept as the baseline of the runtime
ablation: every node builds its arguments in a dictionary, looks its op up, and every op
checks all its inputs as an eager call does. Samples are the lowered program's.
"""

from __future__ import annotations

from gsample.backend import get_backend, resolve, run_op
from gsample.base.random import BatchKeys, KeyRange, op_key, stream_state
from gsample.ir import Graph, Op, info, map_template
from gsample.runtime.lower import _wrap


def _call_dense(fn, template, env_get):
    args, kwargs = map_template(template, env_get)
    if isinstance(fn, tuple):  # ("method", name)
        return getattr(args[0], fn[1])(*args[1:], **kwargs)
    return fn(*args, **kwargs)


def interpret(graph: Graph, args: dict, backend: str = "torch"):
    """Run ``graph`` on ``args`` (``name -> gs.Matrix or tensor``) node by node."""
    from gsample.matrix.sparse import Matrix
    from gsample.runtime.cached import CachedValue
    from gsample.runtime.options import Options

    be = get_backend(backend)
    stream = stream_state()
    seed, base, batch = stream.seed, stream.ordinal, stream.batch_index
    stream.ordinal += graph.num_random
    env: dict = {}
    for node in graph.nodes:
        get = lambda ref, n=node: env[n.inputs[ref.name]]
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
            value = CachedValue(node, backend, Options(lowered=False))(env[node.inputs["graph"]])
        elif op is Op.OUTPUT:
            return map_template(node.attrs["template"], lambda ref: _wrap(get(ref)))
        else:
            d = info(op)
            if "per_batch" in node.attrs:  # a super-batch's draw on the whole graph
                env[node] = _per_batch_draw(node, d, be, env, seed, base, batch)
                continue
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
            value = run_op(here, op, kwargs)
        env[node] = value
    raise AssertionError("graph without an OUTPUT node")


def _per_batch_draw(node, d, be, env, seed, base, batch):
    """A random op on the whole graph in a super-batch: once per mini-batch, each with its
    own key (:class:`gsample.runtime.block_diagonal.PerBatchDraw`)."""
    from gsample.runtime.block_diagonal import PerBatchDraw

    names = tuple(node.inputs)
    attrs = {a: node.attrs[a] for a in d.attrs if a in node.attrs}
    A = env[node.inputs["A"]]
    impl = resolve(be, node.op, A, inputs={"A": A}, given=(*names, *attrs))
    keys = BatchKeys.of(seed, base + node.attrs["ordinal"], batch, *node.attrs["batches"])
    draw = PerBatchDraw(impl.fn, names, attrs, node.attrs["per_batch"], d.check)
    return draw(*[env[node.inputs[k]] for k in names], keys)
