"""Alias tables built once per graph (Skywalker+'s offline mode), a pass of its own.

An ``individual_sample(..., method="alias")`` whose matrix and weights are graph-only values
(the graph, a hoisted slice of it) takes its alias table as a derived input: this pass adds
the op that builds it (declared in ``gsample.ir.ops`` as the input's ``derived`` op) once per
(graph, weights) and hoists it as a ``CACHED`` value with the pre-processing pass's machinery
(:mod:`.preprocess`), so a compiled sampler builds the table once per graph, not per call.
Weights computed per mini-batch keep the op's own per-call tables (online mode). Both draw
the same samples: a column's table depends on that column's weights only.
"""

from __future__ import annotations

from gsample.ir import Graph
from gsample.ir.ops import info
from gsample.passes.preprocess import _drop_unused, _graphs, _hoist
from gsample.passes.result import PassResult


def alias_tables(graph: Graph) -> PassResult:
    """Build each graph-level derived input once per graph (see the module doc).

    Examples
    --------
    >>> # A[:, seeds].individual_sample(k, probs=A[:, seeds], replace=True, method="alias")
    >>> g = fuse_extract_select(preprocess(graph).graph).graph  # doctest: +SKIP
    >>> alias_tables(g).changed  # doctest: +SKIP
    True
    >>> # slice_individual_sample(A, cols, probs=%values, alias=%cached_alias_table)
    """
    graphs, made, memo = _graphs(graph), [], {}
    for node in list(graph.nodes):
        d = info(node.op)
        if node.attrs.get("method") != "alias" or d.weights is None:
            continue
        A, probs = node.input("A"), node.input(d.weights)
        for i in d.inputs:
            if i.derived is None or node.input(i.name) is not None or probs is None:
                continue
            src = graphs.get(A), graphs.get(probs)
            if None in src or len(src[0] | src[1]) != 1:
                continue  # per batch: the op builds it per call
            key = (i.derived, A, probs)
            if key not in memo:
                (name,) = [x.name for x in info(i.derived).inputs if not x.matrix]
                memo[key] = graph.add(i.derived, {"A": A, name: probs}, before=node)
                graphs[memo[key]] = src[0] | src[1]
                made.append(memo[key])
            node.inputs[i.name] = memo[key]
    hoisted = _hoist(graph, graphs, made)
    dropped = _drop_unused(graph, made)
    return PassResult(graph, bool(made or hoisted or dropped))
