"""Extract-reduce fusion: ``A[:, cols].sum(axis=1)`` (also ``max``, ``mean``) and
``A[:, cols].sum()`` never materialise the slice.

A per-row ``REDUCE`` (``axis=1``: one value per row of the graph) whose matrix is a
``SLICE_COLS`` of a whole graph (its sparsity reaches a graph ``INPUT``, as extract-select
fusion requires: the fused op indexes the graph's columns by node id) becomes one
``SLICE_REDUCE`` taking the slice's matrix and columns.
LADIES's row bias ``(A[:, seeds] ** 2).sum(axis=1)``, whose ``** 2`` pre-processing moved to
the graph, becomes the reduction of a cached graph-level matrix over the frontier's edges:
no slice, no edge count read back. So does the sum of every edge of such a slice (``TOTAL``,
LADIES's normaliser ``(A[:, seeds] ** 2).sum()``): one ``SLICE_TOTAL``, whose sum is exact
and order-free, the same bits as the slice's. The slice itself stays while anything else reads it
(DCE drops it otherwise). The result is the same computation, so samples do not change.
"""

from __future__ import annotations

from gsample.ir import Graph, Op
from gsample.passes.fuse_extract_select import _live, _sparsity_root
from gsample.passes.result import PassResult


def fuse_extract_reduce(graph: Graph) -> PassResult:
    """Fuse every reduction of a graph-level column slice (see the module doc).

    Examples
    --------
    >>> # graph: %s = slice_cols(A=%A, cols=%seeds); %r = reduce(A=%s) {op='sum', axis=1}
    >>> fuse_extract_reduce(graph).changed  # doctest: +SKIP
    True
    >>> # now %r = slice_reduce(A=%A, cols=%seeds) {op='sum', axis=1}
    """
    live = _live(graph)
    dead = []
    for node in list(graph.nodes):
        if node not in live:
            continue
        if node.op is Op.REDUCE and node.attrs["axis"] == 1:
            op, attrs = Op.SLICE_REDUCE, {"op": node.attrs["op"], "axis": node.attrs["axis"]}
        elif node.op is Op.TOTAL and "batches" not in node.attrs:
            op, attrs = Op.SLICE_TOTAL, {"op": node.attrs["op"]}
        else:
            continue
        sl = node.input("A")
        if sl.op is not Op.SLICE_COLS or _sparsity_root(sl.input("A")).op is not Op.INPUT:
            continue
        fused = graph.add(
            op,
            {"A": sl.input("A"), "cols": sl.input("cols")},
            attrs,
            node.kind,
            before=node,
            meta=node.meta,
        )
        graph.replace_uses(node, fused)
        dead.append(node)
    graph.remove(dead)
    return PassResult(graph, bool(dead))
