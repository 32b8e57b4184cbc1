"""Edge-normalise fusion: a matrix divided (or otherwise combined) by its own reduction.

``X.div(X.sum(axis=a), axis=a)`` (LADIES's column normalisation; any ``REDUCE`` op and
broadcast op along the same axis) reads ``X`` twice, through a ``REDUCE`` and an
``EDGE_BROADCAST`` of its result. When those two are ``X``'s only users and the reduction
is used only by the broadcast, the three become one ``FUSED_EDGE_NORMALIZE``; when ``X``
is itself a chain of edge maps (``s.div(p[s.row_ids], axis=1)``, used by nothing else),
the chain's program is absorbed too, as edge-map fusion would::

    %x = edge_broadcast(A=%s, vector=%w) {op='div', axis=1}
    %r = reduce(A=%x) {op='sum', axis=0}
    %y = edge_broadcast(A=%x, vector=%r) {op='div', axis=0}
    => %y = fused_edge_normalize(A=%s, 0=%w) {program=(('div', '0', False, None, 1),),
                                              reduce='sum', op='div', axis=0}

Each part keeps its unfused op's dtype rules and order of operations (the torch backend
runs the map, the reduction and the broadcast as the unfused ops do; the CUDA backend's
kernel, ``kernels/normalize.cu``, does each with the unfused kernels' arithmetic and
reduction order), so values are the same bits. What it saves: two intermediate matrices,
the reduction's vector and its check, the program steps between them and, on a GPU, two
launches and their host work (on a layer's small values, host work is most of the cost).
"""

from __future__ import annotations

from gsample.ir import Graph, Op
from gsample.passes.fuse_edge_map import _MAPS, _chain, _program
from gsample.passes.result import PassResult


def _normalised(node, users: dict):
    """``(X, reduce node)`` when ``node`` is ``X.op(X.reduce(axis), axis)`` with ``X`` read by
    nothing else and the reduction only by ``node``; else None."""
    if node.op is not Op.EDGE_BROADCAST:
        return None
    X, r = node.input("A"), node.input("vector")
    if (
        r is None
        or r.op is not Op.REDUCE
        or r.input("A") is not X
        or r.attrs["axis"] != node.attrs["axis"]
    ):
        return None
    if set(users[r]) != {node} or set(users[X]) != {r, node} or len(users[X]) != 2:
        return None
    return X, r


def fuse_edge_normalize(graph: Graph) -> PassResult:
    """Fuse each ``X.op(X.reduce(axis), axis)`` (and the edge maps making ``X``) into one
    ``FUSED_EDGE_NORMALIZE``.

    Examples
    --------
    >>> # graph: %r = reduce(A=%x) {op='sum', axis=0}
    >>> #        %y = edge_broadcast(A=%x, vector=%r) {op='div', axis=0}
    >>> fuse_edge_normalize(graph).changed  # doctest: +SKIP
    True
    >>> # now %y = fused_edge_normalize(A=%x) {program=(), reduce='sum', op='div', axis=0}
    """
    fused_count = 0
    while True:  # one at a time: a rewrite changes the users of the rest
        users = graph.users()
        found = next(
            ((n, *m) for n in graph.nodes if (m := _normalised(n, users)) is not None), None
        )
        if found is None:
            return PassResult(graph, fused_count > 0)
        node, X, r = found
        chain = _chain(X, users) if X.op in _MAPS else []
        program, operands = _program(chain)
        A = chain[0].input("A") if chain else X
        attrs = {
            "program": program,
            "reduce": r.attrs["op"],
            "op": node.attrs["op"],
            "axis": node.attrs["axis"],
        }
        fused = graph.add(
            Op.FUSED_EDGE_NORMALIZE, {"A": A, **operands}, attrs, before=node, meta=node.meta
        )
        graph.replace_uses(node, fused)
        graph.remove(set(chain) | {r, node})
        fused_count += 1


__all__ = ["fuse_edge_normalize"]
