"""Structure readers read through value maps.

``all_nodes``, ``row_ids``, ``col_ids``, ``row`` and ``column`` read a matrix's structure
only, never its values (``OpDef.structure_only``); an edge map, an edge broadcast, SDDMM or a
fused map gives new values on the same edges, ids and layout (``OpDef.edges == "same"`` and
``keeps_layout``). Such a reader then reads the map's input instead: the same result, and
one dependency less. LADIES's next frontier, ``s.all_nodes()`` of the importance-weighted,
column-normalised sample, no longer waits for the weighting and the normalisation, which
the runtime then runs while the next layer's device work runs (``gsample.runtime.schedule``).

Example::

    %w = edge_broadcast(A=%s, vector=%v) {op='div', axis=1}
    %f = all_nodes(A=%w)                    becomes    %f = all_nodes(A=%s)
"""

from __future__ import annotations

from gsample.ir import Graph
from gsample.passes.result import PassResult


def structure_reads(graph: Graph) -> PassResult:
    """Make each structure-only reader read the matrix its value maps were applied to.

    Examples
    --------
    >>> # graph: %w = edge_broadcast(A=%s, vector=%v); %f = all_nodes(A=%w)
    >>> structure_reads(graph).changed  # doctest: +SKIP
    True
    >>> # now %f = all_nodes(A=%s)
    """
    rewired = 0
    for node in graph.nodes:
        A = node.inputs.get("A")
        if not node.info.structure_only or A is None:
            continue
        while A.info.edges == "same" and A.info.keeps_layout and A.inputs.get("A") is not None:
            A = A.input("A")
        if A is not node.inputs["A"]:
            node.inputs["A"] = A
            rewired += 1
    return PassResult(graph, rewired > 0)


__all__ = ["structure_reads"]
