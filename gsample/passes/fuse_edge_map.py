"""Edge-map fusion and edge-map-reduce fusion.

``fuse_edge_map``: a chain of two or more edge maps and broadcasts (``EDGE_MAP``,
``EDGE_BROADCAST``, or an earlier ``FUSED_EDGE_MAP``), each feeding the next through
input ``A`` and used by nothing else, becomes one ``FUSED_EDGE_MAP``::

    ((A[:, seeds] ** 2) * 3).div(v, axis=0)
    => fused_edge_map(A=%slice, 0=%v) {program=(('pow', None, False, 2, None),
                                                ('mul', None, False, 3, None),
                                                ('div', '0', False, None, 0))}

``fuse_edge_map_reduce``: a ``REDUCE`` whose input is such a chain (of one or more
nodes, or a ``FUSED_EDGE_MAP``) used only by it becomes one ``FUSED_EDGE_MAP_REDUCE``
with the chain's program and the reduction's ``op`` and ``axis``: ``(sub ** 2).sum(axis=1)``
never builds ``sub ** 2``.

The program (``attrs["program"]``) is plain data, a tuple of steps
``(op, operand, reverse, scalar, axis)`` applied in order to every edge value ``x``,
a straight-line elementwise program a backend can turn into one kernel:

- ``op``: ``add``, ``sub``, ``mul``, ``div``, ``pow`` or ``neg`` (unary);
- ``operand``: None (the step uses ``scalar``) or the name ``"0"``, ``"1"``, ... of an
  input of the fused node; one IR value gets one name however many steps read it;
- ``reverse``: ``x = op(y, x)`` when True, else ``x = op(x, y)``;
- ``scalar``: the Python number ``y`` of a scalar step (None otherwise);
- ``axis``: None, ``y = operand[e]`` (one value per edge, (E,) or (E, F)); 0,
  ``y = operand[col(e)]`` (a per-column vector); 1, ``y = operand[row(e)]`` (per row).

Each step keeps its unfused op's dtype rules (see ``backend/torch/fused_compute.py``),
so fused values are bit-identical to the unfused chain. Only pure ops are fused, and
the fused node is put where the chain's last node was, after every operand it reads:
random ops, their ordinals and so the samples do not change.
"""

from __future__ import annotations

from gsample.ir import Graph, Node, Op
from gsample.passes.result import PassResult

#: ops whose output is a matrix with ``A``'s sparsity and values mapped edge by edge
_MAPS = (Op.EDGE_MAP, Op.EDGE_BROADCAST, Op.FUSED_EDGE_MAP)


def _absorbable(node: Node, users: dict, into=_MAPS) -> bool:
    """``node`` is an edge map whose one use is as input ``A`` of its one user, an ``into`` op."""
    if node.op not in _MAPS or len(users[node]) != 1:
        return False
    user = users[node][0]
    return user.op in into and user.input("A") is node


def _chain(tail: Node, users: dict) -> list:
    """The edge maps ending at ``tail``, first to last: walk up input ``A`` while the
    producer is an edge map used only by the next node of the chain."""
    chain = [tail]
    while _absorbable(chain[0].input("A"), users):
        chain.insert(0, chain[0].input("A"))
    return chain


def _program(chain: list) -> tuple:
    """``(program, operands)``: the chain's steps and ``name -> IR value`` of its operands."""
    names: dict = {}  # IR value -> operand name, in order of first use

    def name(value):
        return names.setdefault(value, str(len(names)))

    steps = []
    for n in chain:
        if n.op is Op.EDGE_MAP:
            other = n.input("other")  # an edge tensor, or None: the scalar attr
            if other is None:
                steps.append((n.attrs["op"], None, n.attrs["reverse"], n.attrs["scalar"], None))
            else:
                steps.append((n.attrs["op"], name(other), n.attrs["reverse"], None, None))
        elif n.op is Op.EDGE_BROADCAST:
            steps.append((n.attrs["op"], name(n.input("vector")), False, None, n.attrs["axis"]))
        else:  # FUSED_EDGE_MAP: rename its operands
            for op, operand, reverse, scalar, axis in n.attrs["program"]:
                operand = None if operand is None else name(n.input(operand))
                steps.append((op, operand, reverse, scalar, axis))
    return tuple(steps), {v: k for k, v in names.items()}


def _replace(graph: Graph, chain: list, last: Node, op: Op, attrs: dict) -> Node:
    """Put one ``op`` node where ``last`` was; drop ``chain`` and ``last``."""
    program, operands = _program(chain)
    inputs = {"A": chain[0].input("A"), **operands}
    fused = graph.add(op, inputs, {"program": program, **attrs}, before=last, meta=last.meta)
    graph.replace_uses(last, fused)
    graph.remove(set(chain) | {last})
    return fused


# Both passes find every chain first (chains are disjoint: a chain's inner nodes have one
# user), then rewrite them in program order; a rewrite redirects the uses of the node it
# replaces, so a later chain reads the fused node where it read the replaced one.


def fuse_edge_map(graph: Graph) -> PassResult:
    """Fuse each chain of two or more edge maps / broadcasts into one ``FUSED_EDGE_MAP``.

    Examples
    --------
    >>> # graph: %p = edge_map(A=%s) {op='pow'}; %m = edge_map(A=%p) {op='mul'}
    >>> fuse_edge_map(graph).changed  # doctest: +SKIP
    True
    >>> # now %m = fused_edge_map(A=%s) {program=(('pow', ...), ('mul', ...))}
    """
    users = graph.users()
    chains = [_chain(n, users) for n in graph.nodes if n.op in _MAPS and not _absorbable(n, users)]
    chains = [chain for chain in chains if len(chain) >= 2]
    for chain in chains:
        _replace(graph, chain, chain[-1], Op.FUSED_EDGE_MAP, {})
    return PassResult(graph, bool(chains))


def fuse_edge_map_reduce(graph: Graph) -> PassResult:
    """Fuse each ``REDUCE`` of an edge-map chain used only by it into ``FUSED_EDGE_MAP_REDUCE``.

    Examples
    --------
    >>> # graph: %p = edge_map(A=%s) {op='pow'}; %r = reduce(A=%p) {op='sum', axis=1}
    >>> fuse_edge_map_reduce(graph).changed  # doctest: +SKIP
    True
    >>> # now %r = fused_edge_map_reduce(A=%s) {program=(('pow', ...),), op='sum', axis=1}
    """
    users = graph.users()
    found = [
        (_chain(n.input("A"), users), n)
        for n in graph.nodes
        if n.op is Op.REDUCE and _absorbable(n.input("A"), users, into=(Op.REDUCE,))
    ]
    for chain, red in found:
        _replace(
            graph,
            chain,
            red,
            Op.FUSED_EDGE_MAP_REDUCE,
            {"op": red.attrs["op"], "axis": red.attrs["axis"]},
        )
    return PassResult(graph, bool(found))
