"""IR nodes and graphs, and the verifier.

A :class:`Node` is ``(op, inputs, attrs)``: ``inputs`` maps the input names the
op table declares to other nodes (IR values), ``attrs`` holds static Python
values. Ops with any number of inputs (dense code, the output) name them
``"0", "1", ...`` and keep a ``template``: their call's arguments with
:class:`Ref` where an input goes. A :class:`Graph` is a topologically ordered
list of nodes ending in one ``OUTPUT``.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from typing import Any

import torch

from gsample.ir.ops import Effect, Kind, Op, info


@dataclass(frozen=True)
class Ref:
    """A place in a template filled by input ``name`` of the node."""

    name: str


#: the in-place functions of the ``operator`` module (``x &= y`` traces to ``operator.iand``)
_OPERATOR_IN_PLACE = frozenset(
    {
        "iadd",
        "iand",
        "iconcat",
        "ifloordiv",
        "ilshift",
        "imatmul",
        "imod",
        "imul",
        "ior",
        "ipow",
        "irshift",
        "isub",
        "itruediv",
        "ixor",
    }
)


class Node:
    """One operation of the IR."""

    __slots__ = ("attrs", "inputs", "kind", "meta", "name", "op")

    def __init__(self, op: Op, inputs: dict, attrs: dict, name: str, kind: Kind, meta=None):
        self.op = op
        self.inputs = dict(inputs)
        self.attrs = dict(attrs)
        self.name = name
        self.kind = kind
        self.meta = dict(meta or {})

    def input(self, name: str) -> Node | None:
        return self.inputs.get(name)

    @property
    def info(self):
        return info(self.op)

    @property
    def is_random(self) -> bool:
        return info(self.op).effect is Effect.RANDOM

    @property
    def ordinals(self) -> range:
        """The op ordinals a random op takes: its ``ordinal``, or ``num_ordinals`` of them
        from there (a fused walk takes one per random op of every step)."""
        first = self.attrs["ordinal"]
        return range(first, first + self.attrs.get("num_ordinals", 1))

    @property
    def writes_in_place(self) -> bool:
        """Dense code that writes into an argument (``x.add_()``, ``out=``, ``inplace=True``).

        Dense code is otherwise taken as pure; such a node is a side effect that passes
        must keep, in place and in order.
        """
        if self.op is not Op.DENSE:
            return False
        fn, template = self.attrs["fn"], self.attrs["template"]
        name = fn[1] if isinstance(fn, tuple) else getattr(fn, "__name__", "")  # ("method", n)
        kwargs = template[1] if isinstance(template, tuple) and len(template) == 2 else {}
        kwargs = kwargs if isinstance(kwargs, dict) else {}
        # operator.and_ / or_ / not_ are pure (their in-place forms are iand / ior): the
        # trailing "_" of a method (x.add_()) or torch function (torch.relu_) means in place
        pure_operator = not isinstance(fn, tuple) and getattr(fn, "__module__", None) in (
            "operator",
            "_operator",
        )
        if pure_operator:
            return name in _OPERATOR_IN_PLACE
        return (
            (name.endswith("_") and not name.endswith("__"))
            or "out" in kwargs
            or kwargs.get("inplace") is True
        )

    def __repr__(self) -> str:
        return f"%{self.name}"


def map_template(template, fn):
    """Rebuild a nested list / tuple / dict ``template`` with ``fn`` applied to each
    :class:`Ref`."""
    if isinstance(template, Ref):
        return fn(template)
    if isinstance(template, (list, tuple)):
        items = [map_template(t, fn) for t in template]
        return type(template)(items) if not hasattr(template, "_fields") else type(template)(*items)
    if isinstance(template, dict):
        return {k: map_template(v, fn) for k, v in template.items()}
    return template


def debug_level() -> int:
    """``GSAMPLE_DEBUG``: 0 off; 1 verify the IR after every pass; 2 also print the IR after
    every pass that changed it; 3 also print each step of a program as it runs."""
    try:
        return int(os.environ.get("GSAMPLE_DEBUG", "0"))
    except ValueError:
        return 0


def attr_key(value):
    """A hashable key of an attribute value, equal only for equal values *of the same type*
    (``2``, ``2.0`` and ``True`` compare and hash equal in Python but are different
    constants to torch: ``seeds * 2`` is int64, ``seeds * 2.0`` float32). Tensors and
    unhashable objects are keyed by identity; a nested :class:`Graph` by its structure.
    CSE merges and pre-processing's cache keys read this one definition."""
    if isinstance(value, torch.Tensor):
        return ("tensor", id(value))
    if isinstance(value, Graph):
        return ("graph", structure_key(value))
    if isinstance(value, (list, tuple)):
        return (type(value).__qualname__, tuple(attr_key(v) for v in value))
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: repr(kv[0]))
        return ("dict", tuple((k, attr_key(v)) for k, v in items))
    try:
        hash(value)
    except TypeError:
        return ("object", id(value))
    return (type(value).__qualname__, value)


def structure_key(program: Graph, skip_input_names: bool = True) -> tuple:
    """A structural key of a graph: equal keys compute equal values from equal inputs
    (input names aside, by default)."""
    index = {n: i for i, n in enumerate(program.nodes)}
    key = []
    for n in program.nodes:
        attrs = {
            k: v
            for k, v in n.attrs.items()
            if not (skip_input_names and n.op is Op.INPUT and k == "name")
        }
        ins = tuple(sorted((k, index[v]) for k, v in n.inputs.items()))
        key.append((n.op, n.kind, ins, attr_key(attrs)))
    return tuple(key)


class VerifyError(AssertionError):
    """The IR broke one of its invariants."""


@dataclass(frozen=True)
class Target:
    """What the backend a program is compiled for runs, as data for the passes (which import
    no backend code): its name and, per op, the layouts it runs the op on (CSC first)."""

    name: str = "torch"
    op_layouts: dict = field(default_factory=dict)
    #: the ops the backend implements itself (None: every op, as the torch backend); the
    #: others run the torch code on its device
    own: frozenset | None = None
    #: the fewest nodes a graph has for the ``listed_rows`` pass to list a sample's rows on
    #: this backend (None: never): where listing costs more than the dense vectors it spares
    #: (a small graph's row space on a GPU), the backend keeps its dense path
    listed_min_nodes: int | None = 0
    #: whether the pass lists a graph in pinned host memory too (``placement="uva"``):
    #: where listing reads the slice over the host link more often than the dense path
    #: does, the backend keeps its dense path for such graphs
    listed_pinned: bool = True

    def layouts(self, op: Op) -> tuple:
        return self.op_layouts.get(op) or ("csc",)


@dataclass
class Graph:
    """A topologically ordered list of nodes; the last one is the ``OUTPUT``.

    Attributes
    ----------
    nodes : list of Node
    num_random : int
        Op ordinals the program takes from the random stream per call (random ops
        number ``0 .. num_random - 1`` in program order, the order eager runs them).
    target : Target
        The backend the program is compiled for (its capabilities, read by passes).
    """

    nodes: list = field(default_factory=list)
    num_random: int = 0
    target: Target = field(default_factory=Target)
    _names: Any = field(default_factory=itertools.count, repr=False)

    # ------------------------------------------------------------------ building
    def add(
        self,
        op: Op,
        inputs: dict | None = None,
        attrs: dict | None = None,
        kind: Kind | None = None,
        name: str | None = None,
        before: Node | None = None,
        meta: dict | None = None,
    ) -> Node:
        """Create a node; append it, or insert it just before ``before``."""
        kind = kind or info(op).kind
        node = Node(
            op, inputs or {}, attrs or {}, name or f"{op.value}_{next(self._names)}", kind, meta
        )
        if before is None:
            self.nodes.append(node)
        else:
            self.nodes.insert(self.nodes.index(before), node)
        return node

    @property
    def output(self) -> Node:
        return self.nodes[-1]

    def users(self) -> dict:
        """Map each node to the nodes that take it as an input."""
        out = {n: [] for n in self.nodes}
        for n in self.nodes:
            for i in n.inputs.values():
                out[i].append(n)
        return out

    def replace_uses(self, old: Node, new: Node) -> None:
        """Make every user of ``old`` use ``new`` instead."""
        for n in self.nodes:
            for k, v in n.inputs.items():
                if v is old:
                    n.inputs[k] = new

    def remove(self, nodes) -> None:
        dead = set(nodes)
        self.nodes = [n for n in self.nodes if n not in dead]

    def copy(self) -> Graph:
        """A deep copy of the node structure (attribute values are shared)."""
        g = Graph(num_random=self.num_random, target=self.target)
        # new names continue after every numbered name already here (a copy of a copy must
        # not hand out a name a pass already used)
        used = [
            int(n.name.rsplit("_", 1)[1]) + 1
            for n in self.nodes
            if "_" in n.name and n.name.rsplit("_", 1)[1].isdigit()
        ]
        g._names = itertools.count(max([len(self.nodes) + 1000, *used]))
        mapping = {}
        for n in self.nodes:
            c = Node(
                n.op, {k: mapping[v] for k, v in n.inputs.items()}, n.attrs, n.name, n.kind, n.meta
            )
            mapping[n] = c
            g.nodes.append(c)
        return g

    def random_nodes(self) -> list:
        return [n for n in self.nodes if n.is_random]

    # ------------------------------------------------------------------ verifier
    def verify(self) -> Graph:
        """Check the invariants every pass must keep; raise :class:`VerifyError`."""
        seen, names = set(), set()
        if not self.nodes or self.nodes[-1].op is not Op.OUTPUT:
            raise VerifyError("the graph must end in one OUTPUT node")
        ordinals = []
        for n in self.nodes:
            i = info(n.op)
            if n.name in names:
                raise VerifyError(f"duplicate node name {n.name}")
            names.add(n.name)
            if n.op is Op.OUTPUT and n is not self.nodes[-1]:
                raise VerifyError(f"{n}: OUTPUT must be the last node")
            for key, v in n.inputs.items():
                if v not in seen:
                    raise VerifyError(f"{n}: input {key}={v} is not defined before it")
            # named inputs as the table declares them; a variadic op also takes "0", "1", ...
            extra = set(n.inputs) - set(i.input_names())
            if i.is_variadic and not all(k.isdigit() for k in extra):
                raise VerifyError(f"{n}: variadic inputs must be named 0, 1, ...")
            unknown = set() if i.is_variadic else extra
            missing = set(i.required_inputs()) - set(n.inputs)
            if unknown or missing:
                raise VerifyError(
                    f"{n}: inputs {sorted(n.inputs)} do not match the op table "
                    f"{i.input_names()} (unknown {sorted(unknown)}, missing "
                    f"{sorted(missing)})"
                )
            missing = set(i.required_attrs()) - set(n.attrs)
            if missing:
                raise VerifyError(f"{n}: attributes {sorted(missing)} missing")
            for key, v in n.inputs.items():
                declared = i.input(key)
                if declared is not None and declared.matrix and v.kind is not Kind.MATRIX:
                    raise VerifyError(f"{n}: input {key} must be a matrix, got {v.kind.value}")
            if n.is_random:
                if "ordinal" not in n.attrs:
                    raise VerifyError(f"{n}: random op without an op ordinal")
                ordinals.extend(n.ordinals)
            seen.add(n)
        if len(set(ordinals)) != len(ordinals):
            raise VerifyError(f"random ops share an op ordinal: {sorted(ordinals)}")
        if any(not 0 <= o < self.num_random for o in ordinals):
            raise VerifyError(f"op ordinals {sorted(ordinals)} outside 0..{self.num_random - 1}")
        return self
