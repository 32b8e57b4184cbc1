"""Pre-processing: compute that does not depend on the frontier runs once per graph.

A value is *frontier-independent* when its node is pure (table effect ``PURE``), is
not an ``INPUT`` or the ``OUTPUT``, and everything it transitively reads is a graph
``INPUT`` (kind ``MATRIX``) or a ``CONSTANT``: degrees, ``A ** 2``, normalisations.
Tensor inputs (seeds, features, weights) may change from call to call, so anything
reading them is per-batch. Dense torch code is assumed pure, as CSE and DCE assume it
(a ``torch.rand`` in a sampler would be hoisted, as CSE would merge it); dense code
that works in place (``x.mul_(...)``, ``out=``) pins what it reads, which then stays
per-batch exactly as traced.

Two rewrites:

1. Commute: ``EDGE_MAP(SLICE_COLS(G, cols))`` with a scalar operand (no ``other``
   input) becomes ``SLICE_COLS(EDGE_MAP(G), cols)``, likewise through ``SLICE_ROWS``
   and chains of slices, when ``G`` is a graph input or hoistable. A slice gathers
   edge values, so the sliced values of a mapped graph are bit-for-bit the mapped
   values of the slice.
2. Hoist: every maximal hoistable value (frontier-independent and reading exactly one
   graph input) that a per-batch node or the output uses becomes a ``CACHED`` node.
   Its ``program`` is a graph of one ``INPUT`` computing the value; the executor
   evaluates it once per graph object and reuses it across calls. ``meta["cache_key"]``
   holds a structural key of the program, so equal programs (re-traces, repeated
   layers) share one cached value. A value that reads two graphs is left per-batch;
   its single-graph parts are hoisted.

Random ops are never hoisted, moved or dropped; attributes (op ordinals) are kept.
A value the output returns directly is the cached object itself: treat it as read-only.

Derived inputs (:mod:`.alias_tables`, Skywalker+'s offline mode): an op input the op table
declares ``derived`` (the alias tables of ``individual_sample(..., method="alias")``) is
built from the op's matrix and weights when both are frontier-independent, and hoisted as
above: once per graph. It runs after extract-select fusion, which is what makes a slice's
weights graph-level (``A[:, seeds]`` sampled by its own values reads the graph's values).
Otherwise the op builds what it needs per call (online mode), the same values: alias tables
are column-local (``gsample.backend.torch.alias``), so samples do not change.
"""

from __future__ import annotations

from gsample.ir import Effect, Graph, Kind, Node, Op, Ref, info
from gsample.ir.graph import attr_key, structure_key
from gsample.passes.result import PassResult

_SLICES = (Op.SLICE_COLS, Op.SLICE_ROWS)


def _index_input(op: Op) -> str:
    """The name of a slice's index input (the one that is not ``A``)."""
    (name,) = [n for n in info(op).input_names() if n != "A"]
    return name


def _graphs(graph: Graph) -> dict:
    """Node -> frozenset of the graph INPUTs it reads, or None when it is per-batch."""
    # in-place dense code, and everything it reads, stays per-batch (and so does what
    # reads those values afterwards): a cached value must never be written to
    pinned, stack = set(), [n for n in graph.nodes if n.writes_in_place]
    while stack:
        n = stack.pop()
        if n not in pinned and n.op is not Op.INPUT:
            pinned.add(n)
            stack.extend(n.inputs.values())
    out: dict = {}
    for n in graph.nodes:
        if n.op is Op.INPUT:
            out[n] = frozenset([n]) if n.kind is Kind.MATRIX else None
        elif n in pinned or info(n.op).effect is not Effect.PURE or n.op is Op.OUTPUT:
            out[n] = None
        else:
            ins = [out[v] for v in n.inputs.values()]
            out[n] = None if any(s is None for s in ins) else frozenset().union(*ins)
    return out


def _hoistable(node: Node, graphs: dict) -> bool:
    g = graphs.get(node)
    return node.op not in (Op.INPUT, Op.CACHED) and g is not None and len(g) == 1


def program_key(program: Graph) -> tuple:
    """A structural key: equal keys compute equal values on the same graph."""
    return structure_key(program)


def _program(graph: Graph, root: Node) -> tuple:
    """A graph of one INPUT computing ``root``; returns it and that graph INPUT."""
    need, stack = set(), [root]
    while stack:
        n = stack.pop()
        if n not in need:
            need.add(n)
            stack.extend(n.inputs.values())
    prog, mapping, source = Graph(), {}, None
    for n in graph.nodes:
        if n in need:
            source = n if n.op is Op.INPUT else source
            mapping[n] = Node(
                n.op, {k: mapping[v] for k, v in n.inputs.items()}, n.attrs, n.name, n.kind, n.meta
            )
            prog.nodes.append(mapping[n])
    prog.add(Op.OUTPUT, {"0": mapping[root]}, {"template": Ref("0")}, name=f"output_of_{root.name}")
    return prog.verify(), source


def _commute(graph: Graph, graphs: dict) -> list:
    """Rewrite 1; returns the nodes it made unused."""
    made, replaced = {}, []
    for node in list(graph.nodes):
        if node.op is not Op.EDGE_MAP or node.input("other") is not None:
            continue
        chain, base = [], node.input("A")
        while base.op in _SLICES:
            chain.append(base)
            base = base.input("A")
        if not chain or not ((base.op is Op.INPUT and graphs[base]) or _hoistable(base, graphs)):
            continue
        key = (base, attr_key(node.attrs))
        if key not in made:  # one map per base and attrs
            made[key] = graph.add(
                Op.EDGE_MAP, {"A": base}, node.attrs, node.kind, before=chain[-1], meta=node.meta
            )
            graphs[made[key]] = graphs[base]
        value = made[key]
        for s in reversed(chain):
            idx = _index_input(s.op)
            value = graph.add(
                s.op, {"A": value, idx: s.input(idx)}, s.attrs, s.kind, before=node, meta=s.meta
            )
            graphs[value] = None
        graph.replace_uses(node, value)
        replaced += [node] + chain
    return replaced


def _drop_unused(graph: Graph, candidates) -> int:
    """Remove the pure ``candidates`` nothing uses any more (a random op is never one);
    returns how many it removed."""
    candidates = {
        n
        for n in candidates
        if info(n.op).effect is Effect.PURE and n.op not in (Op.INPUT, Op.OUTPUT)
    }
    users, dead = graph.users(), set()
    for n in reversed(graph.nodes):
        if n in candidates and all(u in dead for u in users[n]):
            dead.add(n)
    graph.remove(dead)
    return len(dead)


def preprocess(graph: Graph) -> PassResult:
    """Hoist frontier-independent compute into ``CACHED`` nodes (see the module doc).

    Examples
    --------
    >>> # graph: %p = edge_map(A=%A) {op='pow', scalar=2}; %s = slice_cols(A=%p, cols=%seeds)
    >>> preprocess(graph).changed  # doctest: +SKIP
    True
    >>> # now %cached_p = cached(graph=%A) {program=<program of 3 nodes>} (A ** 2, once per
    >>> # graph) and %s = slice_cols(A=%cached_p, cols=%seeds)
    """
    graphs = _graphs(graph)
    commuted = _commute(graph, graphs)
    _drop_unused(graph, commuted)
    hoisted = _hoist(graph, graphs, list(graph.nodes))
    # what only hoisted values read is gone from the batch (DCE's job otherwise)
    dropped = _drop_unused(graph, [n for n in graph.nodes if graphs.get(n) is not None])
    return PassResult(graph, bool(commuted or hoisted or dropped))


def hoist(graph: Graph, nodes: list) -> int:
    """Rewrite 2 on ``nodes`` alone, for a later pass's frontier-independent values (made as
    pre-processing makes them, so that the pipeline run again changes nothing); returns how
    many inputs now read a ``CACHED`` node. What only hoisted values read is dropped."""
    rewired = _hoist(graph, _graphs(graph), nodes)
    _drop_unused(graph, nodes)
    return rewired


def _hoist(graph: Graph, graphs: dict, nodes: list) -> int:
    """Rewrite 2 on ``nodes``: each hoistable one a per-batch node uses becomes ``CACHED``;
    returns how many inputs now read a ``CACHED`` node."""
    users, shared, rewired = graph.users(), {}, 0
    for node in nodes:
        per_batch = [u for u in users[node] if not _hoistable(u, graphs)]
        if not _hoistable(node, graphs) or not per_batch:
            continue
        program, source = _program(graph, node)
        key = program_key(program)  # the same on every graph it runs on
        if (source, key) not in shared:
            shared[source, key] = graph.add(
                Op.CACHED,
                {"graph": source},
                {"program": program, "kind": node.kind},
                node.kind,
                name=f"cached_{node.name}",
                before=node,
                meta={"cache_key": key},
            )
        for u in per_batch:
            for k, v in u.inputs.items():
                if v is node:
                    u.inputs[k] = shared[source, key]
                    rewired += 1
    return rewired
