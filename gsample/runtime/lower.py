"""Lowering: an optimised IR graph -> a :class:`~gsample.runtime.program.Program`.

Done once per cache key. For every node it decides, ahead of any call:

* which function runs it: the backend's implementation of the op on the layout its matrix
  has (the layout pass recorded it), its sync-free variant where the options allow and it
  takes the node's inputs and attributes (``Impl.without``), or the torch reference's
  (:func:`gsample.backend.resolve`); dense user code as traced;
* which checks run: the op's data check (its :class:`~gsample.ir.ops.OpDef`) where
  untrusted data enters it — the program's arguments, constants, dense user code's
  results, graph-level values — and never on ids the program's own ops made (a frontier
  from ``all_nodes`` is in range by construction); with deferred checks on a GPU, a check
  records device flags instead of reading them back;
* where bounded values (``gsample.formats.bounded``) are trimmed: right before the first
  reader that does not take them, and at the output, each trim one host read-back of every
  count and check flag pending;
* which slot each value lives in, and after which step it is released.
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable

import torch

from gsample.backend import get_backend, resolve
from gsample.formats.bounded import Bounded
from gsample.formats.csc import CSC
from gsample.formats.derived import COLUMNS, remember
from gsample.ir import Align, Graph, Kind, Op, Ref, info, map_template
from gsample.ir.visit import NodeVisitor
from gsample.passes.gather_nodes import column_source, structure_root
from gsample.runtime import dense_index
from gsample.runtime.block_diagonal import PerBatchDraw
from gsample.runtime.cached import CachedValue
from gsample.runtime.cuda_graphs import Region, copy_out, regions, storages
from gsample.runtime.options import Options
from gsample.runtime.program import Instruction, Program
from gsample.runtime.schedule import hoist, sink
from gsample.runtime.steps import Check, trim

#: values read as ids by ops: when a gsample op made them, they are in range by construction
_UNTRUSTED = (Op.INPUT, Op.CONSTANT, Op.DENSE, Op.CACHED)


def _moved(node) -> bool:
    """Whether ``node``'s value is an element of a structure-only op's tuple of results
    (``first_reached``'s slots and carried times): values it only moved, from inputs checked
    where they entered it, perhaps still in bounded buffers (a check would trim them: a
    read-back). The implementations reading them check their dtypes and lengths on the
    host."""
    if node.op is not Op.GETITEM:
        return False
    src = node.inputs["x"]
    return src.op not in _UNTRUSTED and src.kind is Kind.TUPLE and info(src.op).structure_only


def _unordered(node, d) -> tuple:
    """``"<name>:unordered"`` for each input of ``node`` that a sync-free kernel may need
    ascending within each mini-batch (``In.ordered``) and whose producer does not make it
    so (``OpDef.ordered_out``): an implementation registered ``without`` that name is
    passed over for the exact one, which orders any input itself."""
    out = []
    for i in d.inputs:
        v = node.inputs.get(i.name)
        if not i.ordered or v is None:
            continue
        at = None
        if v.op is Op.GETITEM:
            v, at = v.inputs["x"], v.attrs["index"]
        if v.op in _UNTRUSTED or v.op is Op.GETITEM or at not in info(v.op).ordered_out:
            out.append(f"{i.name}:unordered")
    return tuple(out)


#: dense user code a CUDA graph may capture: elementwise arithmetic and reductions, whose
#: results' shapes follow from their inputs' shapes (nothing read back). Anything else
#: (indexing, perhaps by a mask; nonzero; unique; ``.item()``; ``.to``) ends a region.
_CAPTURABLE_METHODS = frozenset(
    {
        "sum",
        "mean",
        "prod",
        "amax",
        "amin",
        "cumsum",
        "softmax",
        "log_softmax",
        "clamp",
        "clamp_min",
        "clamp_max",
        "sqrt",
        "rsqrt",
        "pow",
        "exp",
        "log",
        "log1p",
        "abs",
        "neg",
        "reciprocal",
        "square",
        "sigmoid",
        "tanh",
        "relu",
        "float",
        "double",
        "half",
        "mul",
        "div",
        "add",
        "sub",
        "__add__",
        "__sub__",
        "__mul__",
        "__truediv__",
        "__pow__",
        "__neg__",
        "__radd__",
        "__rsub__",
        "__rmul__",
        "__rtruediv__",
        "__rpow__",
    }
)
_CAPTURABLE_FUNCTIONS = frozenset(
    {
        operator.add,
        operator.sub,
        operator.mul,
        operator.truediv,
        operator.pow,
        operator.neg,
        operator.gt,
        operator.ge,
        operator.lt,
        operator.le,
        operator.eq,
        operator.ne,
        torch.sqrt,
        torch.rsqrt,
        torch.exp,
        torch.log,
        torch.abs,
        torch.clamp,
        torch.maximum,
        torch.minimum,
        torch.sigmoid,
        torch.tanh,
        torch.softmax,
    }
)


def _capturable(fn, template) -> bool:
    """Whether dense code ``fn`` (called with ``template``) may be captured in a CUDA graph:
    see :data:`_CAPTURABLE_METHODS`; ``torch.where`` only with three arguments (one is
    ``nonzero``)."""
    if isinstance(fn, tuple):
        return fn[1] in _CAPTURABLE_METHODS
    if fn is torch.where:
        return len(template[0]) + len(template[1]) == 3
    try:
        return fn in _CAPTURABLE_FUNCTIONS
    except TypeError:  # an unhashable callable
        return False


#: the runtime's default switches (a frozen dataclass: one instance serves every call)
_DEFAULT = Options()


def lower(
    graph: Graph,
    backend: str = "torch",
    options: Options = _DEFAULT,
    device: str = "cpu",
    wrap: Callable | None = None,
) -> Program:
    """Lower ``graph`` for ``backend`` (on a graph stored on ``device``).

    Parameters
    ----------
    graph : Graph
        An optimised IR graph.
    backend : str
        ``"torch"`` or ``"cuda"`` (a graph on the CPU runs the torch code whatever it says).
    options : Options
        What the runtime may do.
    device : str
        Where the graph's matrices are (``"cpu"``, ``"cuda:0"``, ...).
    wrap : callable, optional
        Applied to each value the program returns (every leaf of the output's template):
        the compiler's wraps a sparse format (``gsample.formats``) in a ``gs.Matrix``; the
        runtime itself returns formats. Default: values as they are.

    Returns
    -------
    Program

    Examples
    --------
    >>> import torch, gsample as gs
    >>> @gs.compile
    ... def graphsage(A, seeds):                   # two GraphSAGE layers
    ...     s1 = A[:, seeds].individual_sample(10)
    ...     return [s1, A[:, s1.all_nodes()].individual_sample(5)]
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.arange(8)
    >>> program = lower(graphsage.program(A, seeds), "torch")
    >>> print(program.format())                                  # doctest: +ELLIPSIS
    lowered program: 4 steps, ...
    """
    return _Lowering(graph, backend, options, device, wrap).build()


def _same(value):
    return value


class _Lowering(NodeVisitor):
    """One lowering: :meth:`build` visits the graph's nodes in order (one method per node
    kind, :class:`gsample.ir.visit.NodeVisitor`), each emitting its steps."""

    def __init__(
        self, graph: Graph, backend: str, options: Options, device: str, wrap: Callable | None
    ):
        self.g, self.options = graph, options
        self.wrap = _same if wrap is None else wrap
        # a graph on the CPU runs the torch code whatever backend was asked for
        self.backend = get_backend(backend if device.startswith("cuda") else "torch")
        self.gpu = device.startswith("cuda")
        self.p = Program(
            graph=graph,
            backend=self.backend.name,
            options=options,
            num_random=graph.num_random,
            device=device,
        )
        self.p.deferred = options.boundary_checks and options.sync_free and self.gpu
        self.slot: dict = {}
        self.bounded: set = set()  # slots a sync-free step may have left bounded
        # values of the graph alone (the input matrices, values cached per graph, what
        # deterministic sparse ops make of them, e.g. the values of a cached matrix): the
        # same storage every call, so a CUDA graph reads them in place (cuda_graphs.Region)
        self.graph_level: set = set()
        self.checked_graph_slots: set = set()  # a check's results of graph-level values
        self.inputs, self.keys = [], []

    # ------------------------------------------------------------------ slots
    def new_slot(self, name: str, value=None) -> int:
        self.p.env.append(value)
        self.p.slot_names.append(name)
        return len(self.p.env) - 1

    def const(self, value) -> int:
        return self.new_slot("const", value)

    def emit(self, fn, args, out, label, node=None, syncs=False) -> Instruction:
        step = Instruction(fn, tuple(args), out, label, node=node, syncs=syncs)
        self.p.steps.append(step)
        return step

    def exact(self, slots, node) -> None:
        """Trim the bounded ones of ``slots`` before ``node`` reads them (one read-back)."""
        todo = tuple(dict.fromkeys(s for s in slots if s in self.bounded))
        if todo:
            self.emit(trim, todo, todo, "trim", node, syncs=True)
            self.bounded.difference_update(todo)

    # ------------------------------------------------------------------ the program
    def build(self) -> Program:
        for node in self.g.nodes:
            self.visit(node)
        self.p.inputs, self.p.keys = tuple(self.inputs), tuple(self.keys)
        self.p.graph_slots = frozenset(
            {self.slot[n] for n in self.graph_level} | self.checked_graph_slots
        )
        if self.gpu and self.options.sync_free:
            # host work the next device launch does not wait for runs after that launch
            self.p.steps = sink(self.p.steps)
            # a tail's read-backs before its host work: a call in flight settles sooner
            self.p.steps = hoist(self.p.steps)
        self.release()
        if self.options.cuda_graphs and self.p.deferred:
            self.p.regions = [Region(self.p, *span) for span in regions(self.p)]
            if self.p.regions:  # the first region copies the keys (none read before it)
                device = {slot for slot, _, _, on_device, _ in self.p.keys if on_device}
                first = self.p.regions[0].start
                self.p.keys_in_region = bool(device) and not any(
                    device & set(s.args) for s in self.p.steps[:first]
                )
        return self.p

    # ------------------------------------------------------------------ the nodes, by kind
    def input(self, node):
        s = self.slot[node] = self.new_slot(node.attrs["name"])
        self.inputs.append((node.attrs["name"], s, node.kind is Kind.MATRIX))
        if node.kind is Kind.MATRIX:
            self.graph_level.add(node)

    def constant(self, node):
        self.slot[node] = self.new_slot(node.name, node.attrs["value"])
        if isinstance(node.attrs["value"], torch.Tensor):
            # the same storage every call (a sampler's edge times): a CUDA graph reads it in
            # place rather than copying it in, and per-graph caches keyed by it stay valid
            self.graph_level.add(node)

    def getitem(self, node):
        x = self.slot[node.inputs["x"]]
        self.slot[node] = self.new_slot(node.name)
        step = self.emit(
            operator.getitem,
            [x, self.const(node.attrs["index"])],
            self.slot[node],
            f"getitem[{node.attrs['index']}]",
            node,
        )
        if x in self.bounded:  # an element of a sync-free op's results: trimmed where read
            self.bounded.add(self.slot[node])
            step.graph_safe = self.gpu  # host work only: a CUDA graph's region goes on

    def cached(self, node):
        self.slot[node] = self.new_slot(node.name)
        self.emit(
            CachedValue(node, self.backend.name, self.options, lower),
            [self.slot[node.inputs["graph"]]],
            self.slot[node],
            f"cached[{node.name}]",
            node,
        )
        self.graph_level.add(node)

    def dense(self, node):
        names = sorted(node.inputs, key=int)
        slots = [self.slot[node.inputs[k]] for k in names]
        self.exact(slots, node)
        self.slot[node] = self.new_slot(node.name)
        fn = node.attrs["fn"]
        label = (
            f".{fn[1]}"
            if isinstance(fn, tuple)
            else getattr(fn, "__qualname__", getattr(fn, "__name__", type(fn).__name__))
        )
        template = node.attrs["template"]
        indexing = dense_index.kind(fn) is not None
        # ids the sampler's own code indexes with are bounded first: nothing else checks
        # them, and on the GPU an out-of-range one would be a device-side assert
        call = (
            dense_index.GuardedIndex(
                fn, template, names, dense_index.index_names(fn, template, node.inputs), label
            )
            if indexing
            else _dense_call(fn, template, names)
        )
        step = self.emit(
            call, slots, self.slot[node], f"dense {label}", node, syncs=_reads_back(fn, template)
        )
        step.graph_safe = self.p.deferred and (
            dense_index.capturable(fn, template, node.inputs)
            if indexing
            else _capturable(fn, template)
        )

    def op(self, node):
        d = info(node.op)
        if (
            not node.is_random
            and node.inputs
            and all(v in self.graph_level for v in node.inputs.values())
        ):
            self.graph_level.add(node)
        A = node.inputs.get("A")
        layout = A.meta.get("layout", "csc") if A is not None else "csc"
        layout = getattr(layout, "value", layout)
        # the node's inputs and attributes pick among the implementations: a sync-free one
        # that does not take one the node has (Impl.without) is passed over for the exact one
        given = (*node.inputs, *node.attrs, *_unordered(node, d))
        if "per_batch" in node.attrs:  # a super-batch's draw on the whole graph
            return self.per_batch_draw(node, d, layout, given)
        impl = resolve(
            self.backend, node.op, layout=layout, sync_free=self.options.sync_free, given=given
        )
        if (
            "batches" in node.attrs
            and node.is_random
            and not impl.sync_free
            and not impl.batch_keys
        ):
            # a super-batched draw the backend has no kernel for runs the reference code,
            # which takes the mini-batches' keys (gsample.base.random.BatchKeys)
            impl = resolve(get_backend("torch"), node.op, layout=layout, given=given)
        inputs = {k: self.slot[v] for k, v in node.inputs.items()}
        # a super-batched random op checks each mini-batch's inputs in its own code
        if d.check is not None and "batches" not in node.attrs:
            inputs = self.check(node, d, inputs, impl.checks)
        if not impl.sync_free:
            self.exact(inputs.values(), node)
        provided = dict(inputs)
        for a in d.attrs:
            if a in node.attrs:
                provided[a] = self.const(node.attrs[a])
        if node.is_random:
            key = self.new_slot(f"key{node.attrs['ordinal']}")
            # a sync-free kernel computes its key on the device from (prefix, batch); an op
            # taking several ordinals (a fused walk) gets their KeyRange
            self.keys.append(
                (
                    key,
                    node.attrs["ordinal"],
                    node.attrs.get("batches"),
                    impl.sync_free,
                    len(node.ordinals) if "num_ordinals" in node.attrs else 0,
                )
            )
            provided["key"] = key
        self.slot[node] = self.new_slot(node.name)
        fn, args = _bind(impl.fn, provided)
        label = f"{impl.backend}.{node.op.value}[{layout}]" + (
            " sync-free" if impl.sync_free else ""
        )
        if impl.finish is not None:
            # two phases: the device work (a region may capture it), then the read-back
            pending = self.new_slot(f"{node.name}.pending")
            first = self.emit(fn, args, pending, label + ": device part", node)
            first.graph_safe = first.device_part = self.gpu
            self.emit(
                impl.finish,
                [pending],
                self.slot[node],
                label + ": read back, finish",
                node,
                syncs=self.gpu,
            )
            return
        syncs = impl.syncs or (impl.syncs_batched and node.attrs.get("batches") is not None)
        step = self.emit(fn, args, self.slot[node], label, node, syncs=syncs and self.gpu)
        step.graph_safe = self.gpu and impl.sync_free and not syncs
        # "inputs": bounded where a tensor input is (a bounded sample as A does not bound
        # a result of one value per frontier entry)
        tensors = [inputs[i.name] for i in d.inputs if not i.matrix and i.name in inputs]
        if impl.sync_free and (
            impl.bounded_out is True
            or (impl.bounded_out == "inputs" and any(a in self.bounded for a in tensors))
        ):
            self.bounded.add(self.slot[node])

    def per_batch_draw(self, node, d, layout: str, given: tuple) -> None:
        """A random op on the whole graph in a super-batch (``attrs["per_batch"]``, see
        ``gsample.passes.super_batch``): the backend's exact implementation once per
        mini-batch (:class:`~gsample.runtime.block_diagonal.PerBatchDraw`), each with its own op key
        from the op's :class:`~gsample.base.random.BatchKeys` and its inputs checked as the
        mini-batch's call checks them."""
        impl = resolve(self.backend, node.op, layout=layout, given=given)
        fn = impl.fn if impl.finish is None else _then(impl.fn, impl.finish)
        names = tuple(node.inputs)
        slots = [self.slot[node.inputs[k]] for k in names]
        self.exact(slots, node)
        key = self.new_slot(f"key{node.attrs['ordinal']}")
        self.keys.append((key, node.attrs["ordinal"], node.attrs["batches"], False, 0))
        self.slot[node] = self.new_slot(node.name)
        label = f"{impl.backend}.{node.op.value}[{layout}]"
        attrs = {a: node.attrs[a] for a in d.attrs if a in node.attrs}
        self.emit(
            PerBatchDraw(fn, names, attrs, node.attrs["per_batch"], d.check, label),
            [*slots, key],
            self.slot[node],
            f"per batch: {label}",
            node,
            syncs=self.gpu,
        )

    def check(self, node, d, inputs: dict, in_kernel: tuple = ()) -> dict:
        """A check step before ``node`` for what enters it untrusted; returns the slots the
        op then reads (checked values in new slots)."""
        if self.options.boundary_checks:
            # ids the program's own ops made are in range by construction; values (weights,
            # operands) are checked wherever they come from: any arithmetic may have made them
            trusted = tuple(
                k
                for k, v in node.inputs.items()
                if (
                    v.op not in _UNTRUSTED and d.input(k).align is not None and d.input(k).align.ids
                )
                or (self.gpu and self.options.sync_free and _moved(v))
            )
            # a table derived once per graph (alias tables: the alias_tables pass) was made by
            # its op from weights that op checked: neither is checked again per call
            derived = tuple(
                i.name
                for i in d.inputs
                if i.derived is not None and node.inputs.get(i.name) is not None
            )
            if derived and d.weights is not None:
                trusted += derived + (d.weights,)
        else:  # every input, every time (as an eager call)
            trusted = ()
        checked = tuple(k for k in node.inputs if not d.input(k).matrix and k not in trusted)
        if not checked:
            return inputs
        names = tuple(inputs)
        self.exact([inputs[k] for k in checked], node)  # trusted ids may stay bounded
        attrs = {a: node.attrs[a] for a in d.attrs if a in node.attrs}
        outs = tuple(self.new_slot(f"{node.name}.{k}") for k in checked)
        # a checked constant (edge times) is the constant itself: a CUDA graph reads it in
        # place (a copy would miss the per-graph caches keyed by the tensor, such as a
        # temporal sampler's time order); a conversion made afresh each call changes the
        # region's key, so no graph replays a stale one
        self.checked_graph_slots.update(
            o for k, o in zip(checked, outs) if node.inputs[k] in self.graph_level
        )
        # ids the kernel checks itself are only converted here (no read-back for them)
        in_kernel = (
            tuple(k for k in in_kernel if k in checked) if self.options.boundary_checks else ()
        )
        reads = self.gpu and not self.p.deferred and not set(checked) <= set(in_kernel)
        step = self.emit(
            Check(d.check, names, attrs, trusted, checked, in_kernel),
            [inputs[k] for k in names],
            outs,
            f"check {node.op.value}({', '.join(checked)})"
            + (f" [{', '.join(in_kernel)}: checked in the kernel]" if in_kernel else ""),
            node,
            syncs=reads,
        )
        # deferred, a check records device flags (a region leaves out one that leads it on
        # an argument, see cuda_graphs.regions: a host tensor's conversion copies); one of
        # edge weights gathers the frontier's edges, whose count it reads back
        w = d.weights
        gathers = (
            w is not None
            and w in checked
            and w not in in_kernel
            and d.input(w).align is Align.EDGES
        )
        step.graph_safe, step.check = self.p.deferred and not gathers, True
        return {**inputs, **dict(zip(checked, outs))}

    def output(self, node):
        names = list(node.inputs)
        slots = [self.slot[node.inputs[k]] for k in names]
        kept = self.kept(node)
        facts = self.facts(node, kept)
        extra = [v for _, v, _ in kept]
        pending = tuple(dict.fromkeys(s for s in slots + extra if s in self.bounded))
        if pending or self.p.deferred:
            self.emit(
                trim,
                pending,
                pending,
                "finish: read counts and check flags back, trim",
                node,
                syncs=True,
            ).trim = True
        template = node.attrs["template"]
        where = dict(zip(names, slots))
        trimmed = set(pending)  # copies after a replay: no need to look at them
        wrap = self.wrap
        # a list or tuple of returned values (blocks): built from their slots directly (no
        # template walk per call)
        flat = (
            [where[r.name] for r in template]
            if type(template) in (list, tuple) and all(type(r) is Ref for r in template)
            else None
        )
        kind = type(template)

        def output(env, raw):
            """The returned structure; values with a tensor whose storage is in ``raw`` live
            in a CUDA graph's memory (a replayed region's untrimmed results, or views of
            them) and are copied out (once each: a value kept with a block and named by a
            fact is the very object the block's other facts name)."""
            got = {}

            def value(slot):
                v = got.get(slot, got)
                if v is got:
                    v = env[slot]
                    if raw and slot not in trimmed and not raw.isdisjoint(storages(v)):
                        v = copy_out(v)
                    got[slot] = v
                return v

            if flat is not None and not raw:  # nothing to copy out of a graph's memory
                for block, derived, op in kept:
                    remember(env[block], op, env[derived])
                for block, source in facts:
                    remember(env[block], COLUMNS, env[source])
                out = [wrap(env[s]) for s in flat]
                return out if kind is list else kind(out)
            for block, derived, op in kept:
                remember(value(block), op, value(derived))
            for block, source in facts:
                remember(value(block), COLUMNS, value(source))
            return map_template(template, lambda ref: wrap(value(where[ref.name])))

        self.p.output = output

    def kept(self, node) -> list:
        """``(block slot, value slot, op)`` of each op declared ``remembered`` (one mini-batch)
        on a matrix the program returns (for a structure-only op such as ``all_nodes``: on
        the returned matrix or on one with its structure, which value maps leave alike,
        :func:`~gsample.passes.gather_nodes.structure_root`): the output keeps the value with
        the block (:func:`gsample.formats.derived.remember`), so the caller's eager call
        reuses it. One value per block and op."""
        returned = [v for v in node.inputs.values() if v.kind is Kind.MATRIX]
        roots: dict = {}
        for m in returned:
            roots.setdefault(structure_root(m), []).append(m)
        out, seen = [], set()
        for n in self.g.nodes:
            d = info(n.op)
            A = n.inputs.get("A")
            if (
                not d.remembered
                or "batches" in n.attrs
                or A is None
                or A.kind is not Kind.MATRIX
                or n not in self.slot
            ):
                continue
            blocks = roots.get(structure_root(A), ()) if d.structure_only else [A]
            for m in blocks:
                if m in returned and (m, n.op) not in seen:
                    seen.add((m, n.op))
                    out.append((self.slot[m], self.slot[n], n.op))
        return out

    def facts(self, node, kept: list) -> list:
        """``(block slot, source slot)`` of each returned block whose global column ids the
        program knows to be a value it returns or was given: a tensor argument (a
        mini-batch's seeds) or the ``all_nodes`` kept with another returned block
        (:func:`~gsample.passes.gather_nodes.column_source`). The output keeps that very
        object with the block (``gsample.formats.derived.COLUMNS``): a loader checks that
        its blocks chain by identity, without comparing ids."""
        derived = {v for _, v, op in kept if op is Op.ALL_NODES}
        out = []
        for m in dict.fromkeys(v for v in node.inputs.values() if v.kind is Kind.MATRIX):
            src = column_source(m)
            if src is None or src not in self.slot:
                continue
            s = self.slot[src]
            given = src.op is Op.INPUT and src.kind is Kind.TENSOR
            if given or (src.op is Op.ALL_NODES and s in derived):
                out.append((self.slot[m], s))
        return out

    # ------------------------------------------------------------------ release points
    def release(self) -> None:
        """Release each slot after its last reader; the output's slots (and the values kept
        with them, and the arguments its blocks' facts name) are read at the end."""
        kept = self.kept(self.g.output)
        keep = {self.slot[v] for v in self.g.output.inputs.values()}
        keep |= {v for _, v, _ in kept}
        keep |= {v for _, v in self.facts(self.g.output, kept)}
        last = {}
        for i, step in enumerate(self.p.steps):
            for a in step.args:
                last[a] = i
        by_step: dict = {}
        for slot, i in last.items():
            if slot not in keep and self.p.env[slot] is None:
                by_step.setdefault(i, []).append(slot)
        for i, slots in by_step.items():
            self.p.steps[i].release = tuple(slots)


# ----------------------------------------------------------------------------- step functions
def _bind(fn, provided: dict):
    """``(callable, slots)`` calling ``fn`` positionally with the slots in ``provided``
    (by parameter name); omitted parameters keep their defaults; numbered operands of a
    variadic op go to its ``**operands`` by name."""
    params = list(inspect.signature(fn).parameters.values())
    order, rest = [], dict(provided)
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            break
        if p.name in rest:
            order.append((p.name, rest.pop(p.name)))
        elif any(
            q.name in rest
            for q in params[params.index(p) + 1 :]
            if q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD)
        ):
            if p.default is inspect.Parameter.empty:
                raise TypeError(f"{fn.__qualname__}: no value for {p.name!r}")
            order.append((p.name, None))  # a default before a later argument
        else:
            break
    named = sorted((k for k in rest if k.isdigit()), key=int)
    unknown = set(rest) - set(named)
    if unknown:
        raise TypeError(f"{fn.__qualname__}: does not take {sorted(unknown)}")
    defaults = {p.name: p.default for p in params}
    if not named and all(s is not None for _, s in order):
        return fn, [s for _, s in order]
    fixed = [(n, s) for n, s in order]
    slots = [s for _, s in fixed if s is not None] + [rest[k] for k in named]
    positions = [n for n, s in fixed]
    given = [s is not None for _, s in fixed]

    def call(*values):
        it = iter(values)
        args = [next(it) if g else defaults[n] for n, g in zip(positions, given)]
        return fn(*args, **dict(zip(named, it)))

    call.__qualname__ = fn.__qualname__
    return call, slots


def _then(fn, finish):
    """A two-phase implementation as one call: ``finish(fn(...))``."""

    def call(**kwargs):
        return finish(fn(**kwargs))

    call.__qualname__ = getattr(fn, "__qualname__", "two_phase")
    return call


def _dense_call(fn, template, names):
    """The dense node's call as a function of its inputs' values (in ``names`` order)."""
    args_t, kwargs_t = template
    flat = (
        all(isinstance(a, Ref) for a in args_t)
        and not kwargs_t
        and [a.name for a in args_t] == list(names)
    )
    method = fn[1] if isinstance(fn, tuple) else None
    if flat and method is None:
        return fn
    if flat:
        return lambda first, *rest: getattr(first, method)(*rest)
    index = {k: i for i, k in enumerate(names)}
    if _shallow(args_t, kwargs_t):
        # every argument a value's Ref or a constant (the super-batch's helpers: split(value,
        # bounds, spec=..., n=..., copies=...)): filled in place, without rebuilding the
        # template (map_template's call per leaf, paid at every step of every call)
        pos = [(True, index[a.name]) if isinstance(a, Ref) else (False, a) for a in args_t]
        kw = [
            (k, True, index[v.name]) if isinstance(v, Ref) else (k, False, v)
            for k, v in kwargs_t.items()
        ]

        def call(*values):
            args = [values[i] if ref else i for ref, i in pos]
            kwargs = {k: values[i] if ref else i for k, ref, i in kw}
            if method is not None:
                return getattr(args[0], method)(*args[1:], **kwargs)
            return fn(*args, **kwargs)

        return call

    def call(*values):
        args, kwargs = map_template(template, lambda ref: values[index[ref.name]])
        if method is not None:
            return getattr(args[0], method)(*args[1:], **kwargs)
        return fn(*args, **kwargs)

    return call


def _shallow(args_t, kwargs_t) -> bool:
    """Whether a dense node's template is a plain list or tuple of arguments and a dict of
    keyword arguments, each a :class:`Ref` or a constant that is no container (which
    ``map_template`` would copy, and rebuild a Ref inside)."""

    def leaf(t):
        return isinstance(t, Ref) or not isinstance(t, (list, tuple, dict))

    return (
        type(args_t) in (list, tuple)
        and type(kwargs_t) is dict
        and all(leaf(a) for a in args_t)
        and all(leaf(v) for v in kwargs_t.values())
    )


def _reads_back(fn, template) -> bool:
    """Whether dense code may read back: what it declares (``fn.reads_back``, a bool or a
    function of its keyword arguments: the runtime's super-batch helpers), else False (user
    code: a read-back in it only waits)."""
    says = getattr(fn, "reads_back", False)
    return bool(says(**template[1]) if callable(says) else says)


def describe(value) -> str:
    """A short description of a runtime value (``GSAMPLE_DEBUG=3``)."""
    if isinstance(value, CSC):
        return f"matrix {value.num_rows}x{value.num_cols}, {value.nnz} edges"
    if isinstance(value, Bounded):
        return f"bounded {type(value).__name__}"
    if isinstance(value, torch.Tensor):
        return f"tensor {tuple(value.shape)} {value.dtype}"
    return type(value).__name__


__all__: list = ["describe", "lower"]
