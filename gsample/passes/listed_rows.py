"""Listed rows: LADIES's row probabilities evaluated at the slice's rows only.

LADIES (``examples/ladies.py``) draws rows by ``p = W[:, cols].sum(axis=1) / s`` with ``W =
A ** 2`` and ``s`` a scalar (``W[:, cols].sum()``, clamped): after fusion a ``SLICE_REDUCE``
of a cached graph-level ``W``, a dense division and a ``SLICE_COLLECTIVE_SAMPLE`` whose
probabilities are zero off the slice's rows (``probs_in_slice``), then ``p[s.row_ids]``.
``p`` is a tensor over every node of the graph: on a graph of 10**8 nodes, each layer
allocates, fills and divides vectors of that length for a few thousand rows it can draw.

Only the slice's rows can have ``p > 0``, and ``p``'s value at a row depends on that row's
slice edges alone (its sum, in the slice's edge order, then the division: elementwise).
This pass makes the sample a ``LISTED_COLLECTIVE_SAMPLE`` that takes ``W``'s values and
``s`` and evaluates ``p`` at the slice's distinct rows only (the same bits there, so the
same candidates and draws), and ``p[s.row_ids]`` the same sums over the sample's edges (it
keeps every slice edge of a chosen row, in the slice's order): ``W``'s value map applied
to the sample, summed per row, divided by ``s``. Nothing is over the graph's rows; samples
are unchanged (the op keeps the sample's ordinal).

It applies when ``W``'s values are aligned with ``A``'s edges (``W`` is ``A``, or a cached
chain of scalar edge maps of it), ``s`` is a scalar (an op whose result is one value, or
exact elementwise code on such values and constants), and ``p`` is read by the sample and
``p[s.row_ids]`` only; and only for a backend that implements the listed op itself (the
torch backend; the CUDA backend, ``gsample.backend.cuda.listed``) on a graph of at least
``Target.listed_min_nodes`` nodes (the CUDA backend's dense kernels cost less on a graph
whose row space is small, or in pinned host memory; its ``LISTED`` switch, ``"auto"``,
lists graphs of at least ``MIN_NODES`` = 2**23 nodes on the device).

Example (one LADIES layer)::

    %p = slice_reduce(A=%A2, cols=%seeds) {op='sum', axis=1}         A2 = cached A ** 2
    %t = slice_total(A=%A2, cols=%seeds);  %c = dense(0=%t) {fn=.clamp()}
    %q = dense(0=%p, 1=%c) {fn=truediv}
    %s = slice_collective_sample(A=%A, cols=%seeds, node_probs=%q) {k=4000, ...}
    %w = dense(0=%q, 1=%r) {fn=getitem}                               %r = row_ids(A=%s)

becomes::

    %v = cached(graph=%A) {program=<A ** 2, its values>}             once per graph
    %s = listed_collective_sample(A=%A, cols=%seeds, row_weights=%v, scale=%c) {k=4000}
    %u = fused_edge_map_reduce(A=%s) {program=(('pow', None, False, 2, None),), op='sum',
                                      axis=1}
    %w = dense(0=%u, 1=%c) {fn=truediv}
"""

from __future__ import annotations

import operator

import torch

from gsample.ir import Align, Graph, Kind, Node, Op, Ref
from gsample.passes.cost_model import example_graph, example_placement
from gsample.passes.preprocess import hoist
from gsample.passes.result import PassResult
from gsample.passes.super_batch import exact_elementwise

#: dense divisions ``x / y`` as the tracer records them
_DIVISIONS = (
    operator.truediv,
    torch.div,
    torch.true_divide,
    ("method", "div"),
    ("method", "true_divide"),
)


def listed_rows(graph: Graph) -> PassResult:
    """Rewrite each LADIES-shaped collective sample to listed rows (see the module doc).

    Examples
    --------
    >>> # graph: %s = slice_collective_sample(A=%A, cols=%f, node_probs=%q), %q = p / c
    >>> listed_rows(graph).changed  # doctest: +SKIP
    True
    >>> # now %s = listed_collective_sample(A=%A, cols=%f, row_weights=%v, scale=%c)
    """
    if not applies(graph):
        return PassResult(graph, False)
    users = graph.users()
    done, weights = 0, {}
    for s in list(graph.nodes):
        plan = _plan(s, users)
        if plan is None:
            continue
        q, W, c, maps, reads = plan
        if W not in weights:  # W's values: graph-level, hoisted below as preprocess would
            weights[W] = graph.add(Op.VALUES, {"A": W}, before=s)
        values = weights[W]
        attrs = {"k": s.attrs["k"], "replace": s.attrs.get("replace", False)}
        attrs["ordinal"] = s.attrs["ordinal"]  # the same draws: the same op key
        listed = graph.add(
            Op.LISTED_COLLECTIVE_SAMPLE,
            {"A": s.input("A"), "cols": s.input("cols"), "row_weights": values, "scale": c},
            attrs,
            Kind.MATRIX,
            before=s,
            meta=s.meta,
        )
        graph.replace_uses(s, listed)
        for read in reads:  # p[s.row_ids]: W's map of the sample, summed per row, / c
            if maps:  # as fuse_edge_map_reduce would make it: one evaluation
                program = tuple(
                    (m.attrs["op"], None, m.attrs["reverse"], m.attrs["scalar"], None) for m in maps
                )
                u = graph.add(
                    Op.FUSED_EDGE_MAP_REDUCE,
                    {"A": listed},
                    {"program": program, "op": "sum", "axis": 1},
                    before=read,
                )
            else:
                u = graph.add(Op.REDUCE, {"A": listed}, {"op": "sum", "axis": 1}, before=read)
            (num, den), _ = q.attrs["template"]
            div = graph.add(
                Op.DENSE,
                {num.name: u, den.name: c},
                {"fn": q.attrs["fn"], "template": q.attrs["template"]},
                Kind.ANY,
                before=read,
                meta=read.meta,
            )
            graph.replace_uses(read, div)
        graph.remove([s, *reads])
        done += 1
    hoist(graph, list(weights.values()))
    return PassResult(graph, done > 0)


def applies(graph: Graph) -> bool:
    """Whether the pass lists rows for ``graph``'s backend and graph: the backend implements
    the listed op (``Target.own``) and the graph the program is compiled for has at least
    ``Target.listed_min_nodes`` nodes (its example call's, as the layout pass's cost model
    reads it; a hand-built graph without one counts as the cost model's default size), and
    a graph in pinned host memory only where ``Target.listed_pinned`` allows.

    Examples
    --------
    >>> from gsample.ir import Graph
    >>> from gsample.ir.graph import Target
    >>> applies(Graph(target=Target("cuda", {}, frozenset({Op.LISTED_COLLECTIVE_SAMPLE}), 2**23)))
    False
    >>> applies(Graph())  # the torch backend: every op, every graph
    True
    """
    target = graph.target
    if target.own is not None and Op.LISTED_COLLECTIVE_SAMPLE not in target.own:
        return False
    least = target.listed_min_nodes
    if least is None:
        return False
    if not target.listed_pinned and example_placement(graph) == "uva":
        return False
    return least <= 0 or example_graph(graph)[1] >= least


def _plan(s: Node, users: dict):
    """``(q, W, c, maps, reads)`` when ``s`` is a LADIES-shaped sample (else None): its
    probabilities ``q = p / c``, ``p`` the slice's row sums of ``W``, ``W``'s edge maps of
    ``A`` (in order), and the nodes reading ``q[s.row_ids]``."""
    if (
        s.op is not Op.SLICE_COLLECTIVE_SAMPLE
        or not s.attrs.get("probs_in_slice")
        or "batches" in s.attrs
        or s.inputs.get("node_probs") is None
    ):
        return None
    q, A, cols = s.input("node_probs"), s.input("A"), s.input("cols")
    if q.op is not Op.DENSE or not _is_division(q):
        return None
    (num, den), _ = q.attrs["template"]
    p, c = q.inputs[num.name], q.inputs[den.name]
    if (
        p.op is not Op.SLICE_REDUCE
        or p.attrs["op"] != "sum"
        or p.attrs["axis"] != 1
        or "batches" in p.attrs
        or p.input("cols") is not cols
        or users[p] != [q]
        or not _scalar(c, 0)
    ):
        return None
    W = p.input("A")
    maps = _maps_of(W, A)
    if maps is None:
        return None
    reads = []
    for u in users[q]:
        if u is s:
            continue
        if not _reads_at_rows(u, q, s):
            return None
        reads.append(u)
    return q, W, c, maps, reads


def _is_division(q: Node) -> bool:
    fn, (args, kwargs) = q.attrs["fn"], q.attrs["template"]
    try:
        division = fn in _DIVISIONS
    except TypeError:  # an unhashable callable: not one of these
        return False
    return (
        division
        and not kwargs
        and len(args) == 2
        and all(isinstance(a, Ref) for a in args)
        and args[0].name != args[1].name
    )


def _scalar(v: Node, depth: int) -> bool:
    """Whether ``v`` is one value (0-dim) for the whole program: an op whose result the
    op table says is a scalar (``A.sum()``), a number, or exact elementwise dense code on
    such values."""
    if depth > 16:
        return False
    if v.op is Op.CONSTANT:
        x = v.attrs["value"]
        return isinstance(x, (int, float)) or (isinstance(x, torch.Tensor) and x.dim() == 0)
    if v.op is Op.DENSE:
        fn, template = v.attrs["fn"], v.attrs["template"]
        if not exact_elementwise(fn, template) or not v.inputs:
            return False
        return all(_scalar(i, depth + 1) for i in v.inputs.values())
    return v.info.out is Align.SCALAR and "batches" not in v.attrs


def _maps_of(W: Node, A: Node):
    """The scalar edge maps (``EDGE_MAP`` nodes without a tensor operand, in order) that
    make ``W`` from ``A`` (``W`` is ``A``, or a value cached per graph), or None: then
    ``W``'s values are not a function of each edge's value of ``A`` alone."""
    if W is A:
        return []
    if W.op is not Op.CACHED or W.input("graph") is not A:
        return None
    program = W.attrs["program"]
    out = next((n for n in program.nodes if n.op is Op.OUTPUT), None)
    if out is None or len(out.inputs) != 1:
        return None
    maps = []
    m = next(iter(out.inputs.values()))
    while m.op is Op.EDGE_MAP:
        if set(m.inputs) != {"A"}:
            return None
        maps.append(m)
        m = m.input("A")
    if m.op is not Op.INPUT or m.kind is not Kind.MATRIX:
        return None
    return maps[::-1]


def _reads_at_rows(u: Node, q: Node, s: Node) -> bool:
    """Whether ``u`` is ``q[s.row_ids]``."""
    if u.op is not Op.DENSE or u.attrs["fn"] is not operator.getitem:
        return False
    args, kwargs = u.attrs["template"]
    if kwargs or len(args) != 2 or not all(isinstance(a, Ref) for a in args):
        return False
    x, ids = (u.inputs[a.name] for a in args)
    return x is q and ids.op is Op.ROW_IDS and ids.input("A") is s


__all__ = ["applies", "listed_rows"]
