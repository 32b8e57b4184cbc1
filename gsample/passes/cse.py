"""Effect-aware common-subexpression elimination.

Two pure nodes with the same op, the same inputs and equal attributes compute the
same value; the later one is replaced by the earlier. Random ops are merged only
when their keys are equal, and each random op has its own op ordinal, so they never
are. Dense nodes call arbitrary Python and are merged only when their function and
arguments are identical objects. Dense code that writes in place is never merged, nor
is anything that reads a value such code writes (its value depends on the order).
"""

from __future__ import annotations

from gsample.ir import Effect, Graph, Op, info
from gsample.ir.graph import attr_key
from gsample.passes.result import PassResult


def _key(node):
    if info(node.op).effect is not Effect.PURE or node.op in (Op.INPUT, Op.OUTPUT):
        return None
    inputs = tuple(sorted((k, id(v)) for k, v in node.inputs.items()))
    return node.op, inputs, attr_key(node.attrs)


def cse(graph: Graph) -> PassResult:
    """Replace each pure node equal to an earlier one by that earlier node.

    Examples
    --------
    >>> # graph: %b = slice_cols(A=%A, cols=%s); %c = slice_cols(A=%A, cols=%s)
    >>> cse(graph).changed  # doctest: +SKIP
    True
    >>> # now %c's users read %b, and %c is gone
    """
    seen, dead = {}, []
    written = {v for n in graph.nodes if n.writes_in_place for v in n.inputs.values()}
    for node in graph.nodes:
        key = _key(node)
        if key is None or node.writes_in_place or written.intersection(node.inputs.values()):
            continue
        first = seen.setdefault(key, node)
        if first is not node:
            graph.replace_uses(node, first)
            dead.append(node)
    graph.remove(dead)
    return PassResult(graph, bool(dead))
