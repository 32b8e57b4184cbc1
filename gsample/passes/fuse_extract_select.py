"""Extract-Select fusion: ``A[:, cols].individual_sample(k)`` never materialises the slice.

An ``INDIVIDUAL_SAMPLE`` or ``COLLECTIVE_SAMPLE`` whose ``A`` is a ``SLICE_COLS``
becomes one ``SLICE_INDIVIDUAL_SAMPLE`` / ``SLICE_COLLECTIVE_SAMPLE`` taking the
slice's ``A`` and ``cols``, when the slice is then no longer needed: every (live) user
of the slice is such a sampling op, or the slice's ``VALUES`` read only as those ops'
``probs``. Several samples of one slice are all fused (each works from the column
pointers; none builds the slice); one other user (a reduction, a returned slice)
leaves them all unfused, since the slice is materialised anyway. The random op's
attributes, its op ordinal above all, are kept, and the fused backend op draws with
the same keys and algorithms, so samples are bit-for-bit unchanged (docs/architecture.md §3).

Probabilities:

* ``node_probs`` (collective) has one value per row; a column slice keeps the row
  space, so it is passed through unchanged.
* ``probs`` (individual) is aligned with the *slice's* edges, but the fused op takes
  weights aligned with the sliced matrix's edges. The rewrite is therefore made only
  when the weights can be read at graph level: ``probs`` is
  ``VALUES(SLICE_COLS(G2, cols))`` with the very same ``cols`` node and ``G2`` of the
  same sparsity as the sliced ``G`` (both reach one matrix through value-only ops:
  edge maps, broadcasts, SDDMM, fused edge maps, or a ``CACHED`` program of them, as
  pre-processing makes of ``A[:, seeds] ** 2``). The fused op then takes
  ``VALUES(G2)``; when ``G2`` is a graph input, that is a ``CACHED`` value, so an
  unweighted graph's all-ones weights are built once per graph, not once per batch.
  Any other ``probs`` (a tensor computed on the slice) leaves the op unfused.

The sliced matrix must provably have the graph's column space (its sparsity reaches
a graph ``INPUT``; a compiled sampler's matrix argument is taken to be a whole
graph), since the fused ops' input checks index ``A``'s columns by node id.

Nodes the rewrite leaves unused (the slice, the ``VALUES`` of a slice feeding only
the fused ops' ``probs``) are removed here; anything else is left to DCE.
"""

from __future__ import annotations

from gsample.ir import Graph, Kind, Node, Op, Ref, info
from gsample.passes.result import PassResult

#: the random op -> its fused form
_FUSED = {
    Op.INDIVIDUAL_SAMPLE: Op.SLICE_INDIVIDUAL_SAMPLE,
    Op.COLLECTIVE_SAMPLE: Op.SLICE_COLLECTIVE_SAMPLE,
}
#: ops whose result has the sparsity (and edge order) of their input ``A``
_VALUE_ONLY = (Op.EDGE_MAP, Op.EDGE_BROADCAST, Op.SDDMM, Op.FUSED_EDGE_MAP)
#: the key of the graph-level edge weights this pass caches
_VALUES_KEY = ("fuse_extract_select", "values of the graph")


def _weights_input(op: Op) -> str:
    """The name of a sampling op's optional weight input (``probs`` or ``node_probs``)."""
    return info(op).weights


# a fused op takes the slice's A and cols, plus the inputs of the op it replaces
assert all(
    set(info(f).input_names()) == {"cols"} | set(info(op).input_names()) for op, f in _FUSED.items()
), "the op table's fused sampling ops changed their inputs"


def _program_output(program: Graph):
    out = program.output
    template = out.attrs.get("template")
    return out.inputs.get(template.name) if isinstance(template, Ref) else None


def _sparsity_root(node: Node) -> Node:
    """The matrix whose sparsity ``node`` has, following value-only ops (and ``CACHED``
    programs made of them) down to their source."""
    while True:
        if node.op in _VALUE_ONLY:
            node = node.input("A")
        elif node.op is Op.CACHED and node.kind is Kind.MATRIX:
            v = _program_output(node.attrs["program"])
            if v is None or _sparsity_root(v).op is not Op.INPUT:
                return node
            node = node.input("graph")
        else:
            return node


def _graph_level_probs(probs: Node, sl: Node):
    """``G2`` when ``probs`` is ``VALUES(SLICE_COLS(G2, cols))`` with ``sl``'s ``cols`` and
    ``G2`` of the sparsity of the matrix ``sl`` slices; else None."""
    if probs.op is not Op.VALUES:
        return None
    p = probs.input("A")
    if p.op is not Op.SLICE_COLS or p.input("cols") is not sl.input("cols"):
        return None
    g2 = p.input("A")
    return g2 if _sparsity_root(g2) is _sparsity_root(sl.input("A")) else None


def _values_of(graph: Graph, g2: Node, before: Node) -> Node:
    """A node holding ``g2``'s edge values (one per edge), placed before ``before``
    (an equal one defined before it is reused)."""
    for n in graph.nodes:
        if n is before:
            break
        if n.op is Op.VALUES and n.input("A") is g2 and g2.op is not Op.INPUT:
            return n
        if n.op is Op.CACHED and n.input("graph") is g2 and n.meta.get("cache_key") == _VALUES_KEY:
            return n
    if g2.op is not Op.INPUT:
        return graph.add(Op.VALUES, {"A": g2}, before=before)
    prog = Graph()
    src = prog.add(
        Op.INPUT, attrs={"name": "graph", "kind": Kind.MATRIX}, kind=Kind.MATRIX, name="graph"
    )
    vals = prog.add(Op.VALUES, {"A": src}, name="values")
    prog.add(Op.OUTPUT, {"0": vals}, {"template": Ref("0")}, name="output")
    return graph.add(
        Op.CACHED,
        {"graph": g2},
        {"program": prog.verify(), "kind": Kind.TENSOR},
        Kind.TENSOR,
        name=f"values_of_{g2.name}",
        before=before,
        meta={"cache_key": _VALUES_KEY},
    )


def _live(graph: Graph) -> set:
    live = {graph.output}
    for n in reversed(graph.nodes):
        if n in live:
            live.update(n.inputs.values())
    return live


def _plan(node: Node, sl: Node):
    """``(node, G2 or None)`` when ``node`` (a sampling op on the slice ``sl``) can be fused;
    None when its weights are aligned with the slice only."""
    weights = node.input(_weights_input(node.op))
    if any(node.input(i.name) is not None for i in node.info.inputs if i.derived is not None):
        return None  # derived from the slice (a pass made it): keep it
    if weights is None or node.op is not Op.INDIVIDUAL_SAMPLE:
        return node, None
    g2 = _graph_level_probs(weights, sl)
    return None if g2 is None else (node, g2)


def fuse_extract_select(graph: Graph) -> PassResult:
    """Fuse each column slice into the sampling ops that use it (see the module doc).

    Examples
    --------
    >>> # graph: %s = slice_cols(A=%A, cols=%seeds); %x = individual_sample(A=%s) {k=10}
    >>> fuse_extract_select(graph).changed  # doctest: +SKIP
    True
    >>> # now %x = slice_individual_sample(A=%A, cols=%seeds) {k=10}, and %s is gone
    """
    fused = 0
    live = _live(graph)
    all_users = graph.users()
    users = {n: [u for u in us if u in live] for n, us in all_users.items()}
    for sl in list(graph.nodes):
        if (
            sl.op is not Op.SLICE_COLS
            or sl not in live
            or not users[sl]
            or _sparsity_root(sl.input("A")).op is not Op.INPUT
        ):
            continue
        samples = [u for u in users[sl] if u.op in _FUSED and u.input("A") is sl]
        plans = [_plan(u, sl) for u in samples]
        # the slice's VALUES, read only as the probs of those samples, go with them
        freed = [
            u
            for u in set(users[sl])
            if u.op is Op.VALUES
            and all(
                v in samples and v.op is Op.INDIVIDUAL_SAMPLE and v.input(_weights_input(v.op)) is u
                for v in users[u]
            )
        ]
        if None in plans or set(samples) | set(freed) != set(users[sl]):
            continue  # the slice is needed anyway: leave it as it is
        dead = set()
        for node, g2 in plans:
            wname = _weights_input(node.op)
            inputs = {"A": sl.input("A"), "cols": sl.input("cols")}
            if node.input(wname) is not None:
                inputs[wname] = (
                    node.input(wname) if g2 is None else _values_of(graph, g2, before=node)
                )
            new = graph.add(
                _FUSED[node.op], inputs, dict(node.attrs), node.kind, before=node, meta=node.meta
            )
            graph.replace_uses(node, new)
            dead.add(node)
            fused += 1
        for n in freed + [sl]:  # what the rewrite left unused (DCE drops the rest)
            if all(u in dead for u in all_users[n]):
                dead.add(n)
        graph.remove(dead)
    return PassResult(graph, fused > 0)
