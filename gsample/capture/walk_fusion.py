"""A compiled ``gs.walk`` as one op: the step's bodies in a ``FUSED_WALK`` node.

``gs.walk`` in a compiled sampler traces its step once per phase (``gsample.capture.walks``). When
every traced body is per-walker code (``gsample.ir.walk_body.roles``: uniform one-walker
``random_walk``\\ s, gathers of graph-level vectors, elementwise arithmetic), the walk becomes
one ``FUSED_WALK`` node instead of ``length`` copies of the body:

* each body is converted to IR as the sampler is (``gsample.capture.trace``), so its random ops
  number ``0, 1, ...`` in program order, as they would in a copy;
* its loop-invariant values (``(A ** 0).sum(axis=0)``) are hoisted into the sampler's graph,
  once per walk, as the fused op's operands ``"0"``, ``"1"``, ... (pre-processing then
  computes them once per graph, as it does the copies');
* the node takes the op ordinals the unrolled copies would: ``num_ordinals`` of them from the
  next free one, step ``s``'s random op ``j`` being ``ordinal + offsets[s] + j``
  (``walk_body.offsets``), so its draws are the unrolled program's, bit for bit.

Anything else returns None and ``gs.walk`` unrolls as before.
"""

from __future__ import annotations

import torch.fx as fx

from gsample.capture.trace import MatrixProxy, TraceError, _Converter
from gsample.ir import Graph, Kind, Op, attr_key
from gsample.ir.walk_body import GRAPH, MATRIX, NotPerWalker, offsets, roles

#: the inputs of a traced body, by their place among gs.walk's leaves (A, cur, prev, state)
_NAMES = {0: "A", 1: "cur", 2: "prev"}


def try_fuse(tracer, inliner, A, seeds, length: int, period: int):
    """The walks of ``length`` steps as one traced ``FUSED_WALK`` value, or None.

    ``inliner`` (``walks._Inliner``) traces (and keeps) each phase's body, so an unrolled
    walk after a refusal traces nothing twice.
    """
    if length < 1 or not isinstance(A, MatrixProxy) or not isinstance(seeds, fx.Proxy):
        return None
    args = (A, seeds, seeds, None)
    try:
        first = _body(inliner, args, 0, True, tracer.root)
        phases = (
            tuple(
                _body(inliner, args, t, False, tracer.root)
                if any(s % period == t for s in range(1, length))
                else None
                for t in range(period)
            )
            if length > 1
            else ()
        )
    except (NotPerWalker, TraceError, KeyError):
        return None
    call = FusedWalkCall(first, phases, length)
    if call.num_ordinals == 0:  # a step without draws: nothing to key
        return None
    return tracer.create_proxy("call_function", call, (A, seeds), {})


def _body(inliner, args, t: int, first: bool, root) -> tuple:
    """``(IR body, its roles)`` of phase ``t`` (or of the first step)."""
    graph, places = inliner.body(args, t, first)
    names = {ph: _NAMES[i] for ph, i in places if i in _NAMES}
    conv = _Converter(root)
    for node in graph.nodes:
        if any(isinstance(a, fx.Node) and a.graph is not graph for a in node.all_input_nodes):
            raise NotPerWalker("the step reads a traced value from outside itself")
        if node.op == "placeholder":
            if node not in names:
                raise NotPerWalker("the step takes a state or several matrices")
            kind = Kind.MATRIX if names[node] == "A" else Kind.TENSOR
            conv.env[node] = conv.g.add(
                Op.INPUT, attrs={"name": names[node], "kind": kind}, kind=kind
            )
        else:
            conv.env[node] = conv.convert(node)
    body = conv.g.verify()
    return body, roles(body)


class FusedWalkCall:
    """The traced call a fused walk is (an fx ``call_function`` target); :meth:`convert`
    makes its IR node."""

    _gs_op = Op.FUSED_WALK
    __name__ = __qualname__ = "fused_walk"

    def __init__(self, first: tuple, phases: tuple, length: int):
        self.first, self.phases, self.length = first, phases, length
        bodies = [b for b, _ in (first, *[p for p in phases if p is not None])]
        plain = tuple(None if p is None else p[0] for p in phases)
        self.num_ordinals = offsets(first[0], plain, length)[-1] if bodies else 0

    def __call__(self, *args):  # never run: converted to IR
        raise RuntimeError("fused_walk is an IR op")

    def convert(self, conv, args) -> object:
        """The ``FUSED_WALK`` node in ``conv``'s graph (its invariants hoisted there)."""
        g = conv.g
        A, seeds = conv.env[args[0]], conv.value(args[1])
        operands: dict = {}  # outer node -> operand name
        hoisted: dict = {}  # invariant values added to g, by structure
        first = _hoist(g, A, *self.first, operands, hoisted)
        phases = tuple(
            None if p is None else _hoist(g, A, *p, operands, hoisted) for p in self.phases
        )
        inputs = {"A": A, "seeds": seeds, **{name: v for v, name in operands.items()}}
        attrs = {
            "first": first,
            "phases": phases,
            "length": self.length,
            "ordinal": g.num_random,
            "num_ordinals": self.num_ordinals,
        }
        g.num_random += self.num_ordinals
        return g.add(Op.FUSED_WALK, inputs, attrs)


def _hoist(g: Graph, A, body: Graph, role: dict, operands: dict, hoisted: dict) -> Graph:
    """``body`` without its loop-invariant values: those are added to ``g`` (``A``: the
    sampler's graph) and read as operands (named in ``operands``, shared by the bodies)."""
    new, m, outer, reads = Graph(), {}, {}, {}
    for n in body.nodes:
        r = role.get(n)
        if n.op is Op.INPUT:
            m[n] = new.add(Op.INPUT, attrs=dict(n.attrs), kind=n.kind)
            if r is MATRIX:
                outer[n] = A
        elif r in (GRAPH, MATRIX):  # computed once, in the sampler's graph
            ins = {k: outer[v] for k, v in n.inputs.items()}
            key = (n.op, tuple(sorted((k, id(v)) for k, v in ins.items())), attr_key(n.attrs))
            if key not in hoisted:  # the phases' bodies share their invariants
                hoisted[key] = g.add(n.op, ins, n.attrs, n.kind)
            outer[n] = hoisted[key]
        else:
            ins = {}
            for k, v in n.inputs.items():
                if v in m:
                    ins[k] = m[v]
                    continue
                name = operands.setdefault(outer[v], str(len(operands)))
                if name not in reads:
                    reads[name] = new.add(
                        Op.INPUT, attrs={"name": name, "kind": Kind.TENSOR}, kind=Kind.TENSOR
                    )
                ins[k] = reads[name]
            m[n] = new.add(n.op, ins, n.attrs, n.kind)
    new.num_random = body.num_random
    return new.verify()


__all__ = ["FusedWalkCall", "try_fuse"]
