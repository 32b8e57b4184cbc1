"""Extract-Extract fusion: ``A[rows, cols]`` never builds the column slice ``A[:, cols]``.

``A[rows, cols]`` (an induced subgraph: ShaDow-KHop's ``A[nodes, nodes]``, GraphSAINT's,
ClusterGCN's) is traced as ``SLICE_ROWS(SLICE_COLS(A, cols), rows)``: every edge of the
frontier's columns is gathered, then most are dropped. When the column slice has no other
(live) user and slices a whole graph (its sparsity reaches a graph ``INPUT``), the pair
becomes one ``SLICE_ROWS_COLS(A, rows, cols)``, whose backends keep only the edges of
``rows`` as they walk the columns (the CUDA backend: one pass to count, one to write, over
equal tiles of the frontier's edges). Same result, edge for edge and in the same order: the
rows of ``rows`` in their order, columns as ``cols``, each column's edges in graph order.
Nothing random is involved, so no op ordinal moves.
"""

from __future__ import annotations

from gsample.ir import Graph, Op
from gsample.passes.fuse_extract_select import _live, _sparsity_root
from gsample.passes.result import PassResult


def fuse_extract_extract(graph: Graph) -> PassResult:
    """Fuse each ``SLICE_ROWS(SLICE_COLS(G, cols), rows)`` (see the module doc).

    Examples
    --------
    >>> # graph: %c = slice_cols(A=%A, cols=%n); %s = slice_rows(A=%c, rows=%n)
    >>> fuse_extract_extract(graph).changed  # doctest: +SKIP
    True
    >>> # now %s = slice_rows_cols(A=%A, rows=%n, cols=%n)
    """
    supported = graph.target.op_layouts
    if supported and Op.SLICE_ROWS_COLS not in supported:
        return PassResult(graph, False)  # the backend compiled for cannot run it
    live = _live(graph)
    users = graph.users()
    fused = 0
    for node in list(graph.nodes):
        if node.op is not Op.SLICE_ROWS or node not in live:
            continue
        sl = node.input("A")
        if (
            sl.op is not Op.SLICE_COLS
            or [u for u in users[sl] if u in live] != [node]
            or _sparsity_root(sl.input("A")).op is not Op.INPUT
        ):
            continue
        new = graph.add(
            Op.SLICE_ROWS_COLS,
            {"A": sl.input("A"), "rows": node.input("rows"), "cols": sl.input("cols")},
            {},
            node.kind,
            before=node,
            meta=node.meta,
        )
        graph.replace_uses(node, new)
        graph.remove({node} | ({sl} if all(u is node for u in users[sl]) else set()))
        fused += 1
    return PassResult(graph, fused > 0)
