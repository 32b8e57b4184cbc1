"""The step bodies of a fused walk (``Op.FUSED_WALK``): one step of ``gs.walk`` as a small
program of per-walker code, and the check that a step is one.

A *body* is a :class:`Graph` whose inputs are ``A`` (the graph), ``cur`` and ``prev``
(LongTensor (W,): each walker's position and the one before) and the fused op's operands
``"0"``, ``"1"``, ... (graph-level values: degrees), and whose output is the walkers' next
positions. Its random ops number ``0 .. num_random - 1`` in program order: random op ``j``
of step ``s`` draws with the fused op's ordinal ``ordinal + offset(s) + j``
(:func:`offsets`), the one the unrolled program gives it.

A traced step is *per-walker* (:func:`roles`) when every value is one of

* ``GRAPH``: computed from ``A`` and constants only (pure): hoisted out of the loop, an
  operand of the fused op (pre-processing then computes it once per graph);
* ``WALKER``: one value per walker (W,): ``cur``, ``prev``, and what the ops below make;
* ``WALKS``: ``A.random_walk(x, L, ...)`` of a ``WALKER`` ``x``: uniform (no ``probs``,
  ``p = q = 1``; ``stop_prob``, ``restart_prob``, ``jump_prob`` allowed), ``L <= MAX_STEPS``;

and the ``WALKER`` values come from: a column of a walk (``w[:, i]``), a graph-level vector
indexed by a walker value (``deg[cur]``), elementwise arithmetic of walker values and Python
numbers (:data:`BINARY`, ``-x``, ``torch.where``, ``clamp``, ``.double()``, ``.float()``,
``.long()``). Anything else raises :class:`NotPerWalker` (``gs.walk`` then unrolls).
"""

from __future__ import annotations

import operator

import torch

from gsample.ir.graph import Graph, Ref
from gsample.ir.opdef import Kind, Op

GRAPH, WALKER, WALKS, MATRIX = "graph", "walker", "walks", "matrix"
#: the longest ``random_walk`` a body may take per step
MAX_STEPS = 16
#: elementwise binary functions a body may call (as ``a op b``)
BINARY = {
    operator.add: "add",
    operator.sub: "sub",
    operator.mul: "mul",
    operator.truediv: "div",
    operator.lt: "lt",
    operator.le: "le",
    operator.gt: "gt",
    operator.ge: "ge",
    operator.eq: "eq",
    operator.ne: "ne",
    operator.and_: "and",
    operator.or_: "or",
}
#: dtype casts (methods without arguments)
CASTS = {"double": torch.float64, "float": torch.float32, "long": torch.int64}


class NotPerWalker(Exception):
    """The step is not per-walker code (the message says where): it is unrolled instead."""


def _number(x) -> bool:
    return isinstance(x, (int, float))  # bool included (an int)


def dense_form(node) -> tuple | None:
    """``(name, operand refs / numbers, params)`` of a per-walker DENSE node, or None.

    Names: ``column`` (``w[:, i]``: params ``i``), ``gather`` (``v[x]``), a :data:`BINARY`
    name, ``neg``, ``where``, ``clamp`` (params ``(min, max)``), ``cast`` (params the dtype).
    """
    fn, (args, kwargs) = node.attrs["fn"], node.attrs["template"]
    args = tuple(args)
    if fn is operator.getitem and len(args) == 2 and not kwargs and isinstance(args[0], Ref):
        key = args[1]
        if isinstance(key, Ref):
            return "gather", args, None
        if (
            isinstance(key, tuple)
            and len(key) == 2
            and key[0] == slice(None)
            and isinstance(key[1], int)
            and not isinstance(key[1], bool)
        ):
            return "column", args[:1], key[1]
        return None
    if (
        fn in BINARY
        and len(args) == 2
        and not kwargs
        and all(isinstance(a, Ref) or _number(a) for a in args)
    ):
        return BINARY[fn], args, None
    if fn is operator.neg and len(args) == 1 and not kwargs and isinstance(args[0], Ref):
        return "neg", args, None
    if (
        fn is torch.where
        and len(args) == 3
        and not kwargs
        and isinstance(args[0], Ref)
        and all(isinstance(a, Ref) or _number(a) for a in args[1:])
    ):
        return "where", args, None
    method = fn[1] if isinstance(fn, tuple) else None
    if (method == "clamp" or fn is torch.clamp) and args and isinstance(args[0], Ref):
        bounds = dict(zip(("min", "max"), args[1:]), **kwargs)
        if (
            set(bounds) <= {"min", "max"}
            and len(args) <= 3
            and all(v is None or (_number(v) and not isinstance(v, bool)) for v in bounds.values())
        ):
            return "clamp", args[:1], (bounds.get("min"), bounds.get("max"))
        return None
    if method in CASTS and len(args) == 1 and not kwargs and isinstance(args[0], Ref):
        return "cast", args, CASTS[method]
    return None


def roles(body: Graph) -> dict:
    """``node -> GRAPH / WALKER / WALKS / MATRIX`` of a traced step (inputs ``A``, ``cur``,
    ``prev``); raises :class:`NotPerWalker` naming the first value that is none of them."""
    role: dict = {}
    for n in body.nodes:
        ins = {k: role[v] for k, v in n.inputs.items()}
        if n.op is Op.INPUT:
            name = n.attrs["name"]
            role[n] = (
                MATRIX if n.kind is Kind.MATRIX else WALKER if name in ("cur", "prev") else GRAPH
            )
        elif n.op is Op.OUTPUT:
            if n.attrs["template"] != (Ref("0"), None) or ins.get("0") != WALKER:
                raise NotPerWalker("the step must return one position per walker (no state)")
        elif not n.is_random and all(r in (GRAPH, MATRIX) for r in ins.values()):
            role[n] = MATRIX if n.kind is Kind.MATRIX else GRAPH  # loop-invariant
        elif n.op is Op.RANDOM_WALK:
            a = n.attrs
            if "alias" in n.inputs or a.get("p", 1.0) != 1.0 or a.get("q", 1.0) != 1.0:
                raise NotPerWalker("random_walk: only uniform walks (no probs, p = q = 1)")
            if ins.get("seeds") != WALKER or n.inputs["A"].op is not Op.INPUT:
                raise NotPerWalker("random_walk: from the walkers' positions on the graph")
            if a["length"] > MAX_STEPS:
                raise NotPerWalker(f"random_walk: at most {MAX_STEPS} steps per walk step")
            role[n] = WALKS
        elif n.op is Op.DENSE:
            form = dense_form(n)
            if form is None:
                raise NotPerWalker(f"{n.attrs['fn']!r} is not elementwise per-walker code")
            name, args, _ = form
            got = [ins[a.name] for a in args if isinstance(a, Ref)]
            if name == "column":
                ok = got == [WALKS]
            elif name == "gather":
                ok = got == [GRAPH, WALKER]
            else:  # elementwise: walker values and Python numbers only
                ok = bool(got) and all(r == WALKER for r in got)
            if not ok:
                raise NotPerWalker(f"{name}: of values {got} (per-walker code only)")
            role[n] = WALKER
        else:
            raise NotPerWalker(f"{n.op.value} of per-walker values")
    return role


def offsets(first: Graph, phases: tuple, length: int) -> list:
    """Where each step's ordinals start (relative to the fused op's first), and the total:
    a list of ``length + 1`` numbers."""
    out, at = [0], 0
    for s in range(length):
        at += (first if s == 0 else phases[s % len(phases)]).num_random
        out.append(at)
    return out


def body_of(first: Graph, phases: tuple, s: int) -> Graph:
    """The body step ``s`` runs."""
    return first if s == 0 else phases[s % len(phases)]


__all__ = [
    "BINARY",
    "CASTS",
    "GRAPH",
    "MATRIX",
    "MAX_STEPS",
    "WALKER",
    "WALKS",
    "NotPerWalker",
    "body_of",
    "dense_form",
    "offsets",
    "roles",
]
