"""Capture: torch.fx records a sampler function; the record becomes gsample IR at once.

:class:`Tracer` runs the user's function on proxies: a :class:`MatrixProxy` for each
``gs.Matrix`` argument and an fx proxy for each tensor argument; every other argument
is *static*, passed as its Python value (fanouts, ``k``, layer counts), so Python
loops over it unroll. :func:`trace` then converts the fx graph to a
:class:`gsample.ir.Graph`: Matrix methods and operators become the ops of the op
table, everything else on dense values becomes ``DENSE`` nodes. fx is only the
capture mechanism; nothing after this file sees it.

Control flow on a traced value (``if sub.num_edges > 0``, ``len(seeds)``, ``for x in
t``) cannot be captured; it raises :class:`TraceError` naming the line.
"""

from __future__ import annotations

import builtins
import inspect
import numbers
import operator
import os
import traceback
from typing import Any

import torch
import torch.fx as fx

from gsample.base import validate as V
from gsample.ir import METHODS, PROPERTIES, SDDMM_OPS, Effect, Graph, Kind, Op, Ref, info
from gsample.matrix.sparse import Matrix

# the package root: frames anywhere in gsample (not only in capture/) are not user code
_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TORCH = os.path.dirname(os.path.abspath(torch.__file__))


class TraceError(RuntimeError):
    """The sampler function cannot be compiled as written; the message says why and where."""


# capture map: Matrix methods and properties come from the op definitions (Capture); the
# Python operators on a matrix are edge maps (and @ the SpMM)
_METHODS, _ATTRS = METHODS, PROPERTIES
_ARITH = {
    operator.add: "add",
    operator.sub: "sub",
    operator.mul: "mul",
    operator.truediv: "div",
    operator.pow: "pow",
}
_DATA_DEPENDENT = ("shape", "num_edges", "device", "csc")


def _kind(arg) -> Kind:
    return arg.meta.get("gs_kind", Kind.ANY) if isinstance(arg, fx.Node) else Kind.ANY


def _is_matrix(arg) -> bool:
    return _kind(arg) is Kind.MATRIX


def _user_frame(frames) -> str:
    """``file:line: code`` of the innermost frame of user code among ``frames``."""
    where = None
    for frame in frames:
        path = os.path.abspath(frame.filename)
        if not (path.startswith(_HERE) or path.startswith(_TORCH)):
            where = frame
    if where is None:
        return "<unknown line>"
    return f"{where.filename}:{where.lineno}: `{(where.line or '').strip()}`"


def _user_line(tb) -> str:
    """``file:line: code`` of the innermost frame of user code in a traceback."""
    return _user_frame(traceback.extract_tb(tb))


class MatrixProxy(fx.Proxy):
    """A traced ``gs.Matrix``: its methods and operators become fx nodes."""

    @property
    def num_nodes(self) -> int:
        return self.tracer.num_nodes

    def __getattr__(self, name):
        if name in _DATA_DEPENDENT:
            raise TraceError(
                f"Matrix.{name} depends on the sampled data and cannot steer a "
                "compiled sampler; compute with it through Matrix operators instead"
            )
        return super().__getattr__(name)


class Tracer(fx.Tracer):
    """An fx tracer whose proxies know which values are matrices."""

    def __init__(self, num_nodes: int):
        super().__init__(autowrap_functions=())
        self.num_nodes = num_nodes

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        node.meta["gs_kind"] = self._infer(kind, target, args)
        if kind != "placeholder":  # where the user wrote it, for conversion errors
            node.meta["gs_where"] = _user_frame(traceback.extract_stack())
        return node

    def proxy(self, node):
        if node.meta.get("gs_kind") is Kind.MATRIX:
            return MatrixProxy(node, self)
        return fx.Proxy(node, self)

    @staticmethod
    def _infer(kind, target, args) -> Kind:
        if kind == "call_method" and args and _is_matrix(args[0]):
            if target not in _METHODS:
                raise TraceError(f"Matrix.{target}() cannot be compiled")
            return info(_METHODS[target]).kind
        if kind != "call_function":
            return Kind.ANY
        if target is operator.getitem and args:
            if _is_matrix(args[0]):
                return Kind.MATRIX
            if _kind(args[0]) is Kind.TUPLE:
                return Kind.TENSOR
        if target in _ARITH or target is operator.neg:
            return Kind.MATRIX if any(_is_matrix(a) for a in args) else Kind.ANY
        if target is operator.matmul and args and _is_matrix(args[0]):
            return Kind.TENSOR
        if target is builtins.getattr and _is_matrix(args[0]) and args[1] in _ATTRS:
            return info(_ATTRS[args[1]]).kind
        if getattr(target, "_gs_op", None) is not None:
            return info(target._gs_op).kind
        return Kind.ANY


def _bind(method: str, receiver, args, kwargs) -> dict:
    sig = inspect.signature(getattr(Matrix, method))
    bound = sig.bind(receiver, *args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def _static(value, name: str, what: str):
    if isinstance(value, fx.Node):
        raise TraceError(
            f"{name}: must be a static Python {what} in a compiled sampler (it is "
            "traced here); pass it as a plain Python argument"
        )
    return value


class _Converter:
    """fx graph -> gsample IR."""

    def __init__(self, root):
        self.g = Graph()
        self.env: dict = {}
        self.root = root

    def value(self, arg):
        """IR node for an fx argument (constants become CONSTANT nodes)."""
        if isinstance(arg, fx.Node):
            return self.env[arg]
        return self.g.add(Op.CONSTANT, attrs={"value": arg}, kind=Kind.TENSOR)

    def as_edge_values(self, arg):
        """A tensor input; a matrix operand is taken by its values."""
        node = self.value(arg)
        if node.kind is Kind.MATRIX:
            node = self.g.add(Op.VALUES, {"A": node})
        return node

    def template(self, obj, inputs: dict):
        if isinstance(obj, fx.Node):
            if _is_matrix(obj) and not self._allow_matrix:
                raise TraceError(
                    "a gs.Matrix was passed to dense code; use Matrix operators "
                    "(or its .values, .row(), .all_nodes(), ...) instead"
                )
            key = str(len(inputs))
            inputs[key] = self.env[obj]
            return Ref(key)
        if isinstance(obj, (list, tuple)):  # fx's immutable_list becomes a list
            items = [self.template(o, inputs) for o in obj]
            if hasattr(obj, "_fields"):
                return type(obj)(*items)
            return tuple(items) if isinstance(obj, tuple) else items
        if isinstance(obj, dict):
            return {k: self.template(v, inputs) for k, v in obj.items()}
        return obj

    def random(self, op, inputs, attrs):
        attrs["ordinal"] = self.g.num_random
        self.g.num_random += 1
        return self.g.add(op, inputs, attrs)

    def convert(self, node: fx.Node):
        g, op, target, args, kwargs = self.g, node.op, node.target, node.args, node.kwargs
        self._allow_matrix = op == "output"
        if op == "get_attr":
            return g.add(Op.CONSTANT, attrs={"value": getattr(self.root, target)}, kind=Kind.TENSOR)
        if op == "output":
            inputs: dict = {}
            return g.add(Op.OUTPUT, inputs, {"template": self.template(args[0], inputs)})
        if op == "call_method" and _is_matrix(args[0]):
            return self.method(target, _bind(target, args[0], args[1:], kwargs))
        if getattr(target, "_gs_op", None) is Op.FUSED_WALK:  # gsample.capture.walk_fusion
            return target.convert(self, args)
        if (
            op == "call_function"
            and node.meta["gs_kind"] in (Kind.MATRIX, Kind.TENSOR)
            and any(_is_matrix(a) or _kind(a) is Kind.TUPLE for a in args)
        ):
            return self.function(target, args, kwargs)
        if getattr(target, "_gs_op", None) is Op.SDDMM:
            return self.function(target, args, kwargs)
        inputs = {}
        template = self.template((args, kwargs), inputs)
        fn = ("method", target) if op == "call_method" else target
        if fn == ("method", "__getitem__"):  # t[i] on a captured tensor: one form for passes
            fn = operator.getitem
        return g.add(Op.DENSE, inputs, {"fn": fn, "template": template}, kind=Kind.ANY)

    def method(self, name: str, a: dict):
        """A Matrix method call: its parameters become the op's inputs and attributes as
        the op's definition names them (``Capture.params`` renames; the method's name is
        the ``op`` attribute of ops that have one)."""
        d = info(_METHODS[name])
        for param, op in d.capture.when_none.items():
            if param in a and a[param] is None:  # A.sum(): another op, without the parameter
                del a[param]
                d = info(op)
        inputs, attrs = {"A": self.env[a.pop("self")]}, {}
        for param, value in a.items():
            key = d.capture.params.get(param, param)
            declared = d.input(key)
            if declared is not None:
                if value is not None and key in d.capture.derive:
                    inputs[key] = self.derived(d.capture.derive[key], inputs["A"], value)
                elif value is not None:
                    inputs[key] = (
                        self.as_edge_values(value) if declared.edge_values else self.value(value)
                    )
                continue
            att = d.attribute(key)
            value = _static(value, key, att.what)
            value = att.check(value) if att.check is not None else value
            if att.required or value != att.default:  # an optional one at its default is
                attrs[key] = value  # left off the node (it applies)
        if "op" in d.attrs:
            attrs["op"] = name
        if d.attrs_check is not None:
            d.attrs_check(**{**{t.name: t.default for t in d.attributes}, **attrs})
        if d.effect is Effect.RANDOM:
            return self.random(d.op, inputs, attrs)
        return self.g.add(d.op, inputs, attrs)

    def derived(self, op: Op, A, value):
        """``op(A, value)``: the value a method's parameter stands for (a walk's ``probs``
        become alias tables, a pure op that pre-processing hoists when it can)."""
        (name,) = [i for i in info(op).input_names() if i != "A"]
        declared = info(op).input(name)
        node = self.as_edge_values(value) if declared.edge_values else self.value(value)
        return self.g.add(op, {"A": A, name: node})

    def function(self, target, args, kwargs):
        g = self.g
        if target is operator.getitem and _kind(args[0]) is Kind.TUPLE:
            return g.add(Op.GETITEM, {"x": self.env[args[0]]}, {"index": args[1]})
        if target is operator.getitem:
            key = args[1]
            if not isinstance(key, tuple) or len(key) != 2:
                raise TraceError("Matrix indexing: use A[rows, cols], e.g. A[:, seeds]")
            A = self.env[args[0]]
            rows, cols = (None if k == slice(None) else self.value(k) for k in key)
            if cols is not None:
                A = g.add(Op.SLICE_COLS, {"A": A, "cols": cols})
            if rows is not None:
                A = g.add(Op.SLICE_ROWS, {"A": A, "rows": rows})
            return A
        if target is builtins.getattr:
            return g.add(_ATTRS[args[1]], {"A": self.env[args[0]]})
        if target is operator.neg:
            return g.add(
                Op.EDGE_MAP,
                {"A": self.env[args[0]]},
                {"op": "neg", "reverse": False, "scalar": None},
            )
        if target is operator.matmul:
            return g.add(Op.SPMM, {"A": self.env[args[0]], "dense": self.value(args[1])})
        if getattr(target, "_gs_op", None) is Op.SDDMM:
            bound = inspect.signature(target).bind(*args, **kwargs)
            bound.apply_defaults()
            A, U, Vv, sop = bound.arguments.values()
            if sop not in SDDMM_OPS:
                raise TraceError(f"op: must be one of {SDDMM_OPS}, got {sop!r}")
            return g.add(
                Op.SDDMM, {"A": self.env[A], "u": self.value(U), "v": self.value(Vv)}, {"op": sop}
            )
        # arithmetic: an edge map with the matrix on either side
        left, right = args
        reverse = not _is_matrix(left)
        A, other = (right, left) if reverse else (left, right)
        inputs, scalar = {"A": self.env[A]}, None
        if isinstance(other, numbers.Real) and not isinstance(other, bool):
            # (a Fraction, an int past int64: checked and made a Python number now, as the
            # eager call's check does, not left for torch to fail on at run time)
            scalar = V.scalar_or_edges(other, "other", 0, None)
        else:
            inputs["other"] = self.as_edge_values(other)
        return g.add(
            Op.EDGE_MAP, inputs, {"op": _ARITH[target], "reverse": reverse, "scalar": scalar}
        )


def trace(fn, dynamic: dict, static: dict, num_nodes: int) -> Graph:
    """Trace ``fn`` and return its IR.

    Parameters
    ----------
    fn : callable
        The sampler function.
    dynamic : dict
        ``name -> Kind`` for the traced arguments (matrices and tensors).
    static : dict
        ``name -> value`` for the arguments specialised into the program.
    num_nodes : int
        The graph's node count (``A.num_nodes`` is static in a compiled sampler).

    Returns
    -------
    Graph
        Verified IR, with random ops numbered in program order.
    """
    tracer = Tracer(num_nodes)
    tracer.root = torch.nn.Module()
    tracer.graph = fx.Graph(tracer_cls=Tracer)
    tracer.tensor_attrs = {}
    proxies = {}
    for name, kind in dynamic.items():
        node = tracer.graph.placeholder(name)
        node.meta["gs_kind"] = kind
        proxies[name] = tracer.proxy(node)
    try:
        out = fn(**proxies, **static)
    except TraceError as e:
        raise TraceError(f"{_user_line(e.__traceback__)}: {e}") from None
    except (fx.proxy.TraceError, RuntimeError, TypeError) as e:
        msg = str(e)
        if not isinstance(e, fx.proxy.TraceError) and "symbolic" not in msg and "Proxy" not in msg:
            raise
        raise TraceError(
            f"{_user_line(e.__traceback__)}: this line needs the value of a traced tensor or "
            "matrix (branching, len(), iteration or conversion to a Python number). A compiled "
            "sampler is traced once per set of static arguments, so control flow may depend "
            "only on static Python values (fanouts, k, layer counts). Use tensor operations "
            "such as torch.where or masks instead, or pass the value as a static argument. "
            f"(fx: {msg.splitlines()[0]})"
        ) from None
    tracer.graph.output(tracer.create_arg(out))
    conv = _Converter(tracer.root)
    for name, kind in dynamic.items():
        conv.g.add(Op.INPUT, attrs={"name": name, "kind": kind}, kind=kind)
    inputs = {n.attrs["name"]: n for n in conv.g.nodes}
    for node in tracer.graph.nodes:
        if node.op == "placeholder":
            conv.env[node] = inputs[node.target]
            continue
        try:
            conv.env[node] = conv.convert(node)
        except TraceError as e:
            raise TraceError(f"{node.meta.get('gs_where', '<unknown line>')}: {e}") from None
    return conv.g.verify()


__all__: list[Any] = ["MatrixProxy", "TraceError", "Tracer", "trace"]
