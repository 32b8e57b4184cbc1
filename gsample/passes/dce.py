"""Dead-code elimination: drop nodes whose values nothing uses.

A random op whose sample is unused is dropped too; this changes no other sample,
because every random op keeps the op ordinal it was traced with and the stream
advances by ``graph.num_random`` whatever remains (docs/architecture.md §3). Dense code that writes
in place is a side effect and always stays.
"""

from __future__ import annotations

from gsample.ir import Graph, Op
from gsample.passes.result import PassResult


def dce(graph: Graph) -> PassResult:
    """Remove the nodes the output does not depend on (inputs always stay).

    Examples
    --------
    >>> # graph: %d = reduce(A=%s) {op='sum', axis=0}, read by nothing
    >>> dce(graph).changed  # doctest: +SKIP
    True
    >>> # now %d is gone
    """
    live = {graph.output}
    for node in reversed(graph.nodes):
        if node in live or node.op is Op.INPUT or node.writes_in_place:
            live.add(node)
            live.update(node.inputs.values())
    dead = [n for n in graph.nodes if n not in live]
    graph.remove(dead)
    return PassResult(graph, bool(dead))
