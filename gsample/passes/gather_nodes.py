"""The nodes a loader gathers rows for, computed by the program: the last block's ``all_nodes``.

``gs.DataLoader(..., features=X)`` gathers the rows of ``n_id``, which for a DGL-style sampler
(block ``l + 1``'s columns are ``blocks[l].all_nodes()``) is ``blocks[-1].all_nodes()``
(:func:`gsample.loader.features.batch_nodes`). The program computes every other block's
``all_nodes`` (it slices the next hop with it) and keeps it with its block
(:mod:`gsample.formats.derived`), but dead-code elimination drops the last one: nothing in
the program reads it. Computed eagerly after the call, it costs launches and a read-back of
its size on every mini-batch; inside the program it runs with the rest (on a GPU, in the
same CUDA graph, its size read back with the others).

This pass is not in :data:`gsample.passes.PIPELINE`: a program run without a loader that
gathers rows would compute it for nothing. The loader compiles its sampler a second time with
the pass appended (:func:`gsample.loader.dataloader.gathering`), only when it is given
``features`` or ``labels``. It adds the node where the returned blocks chain (block ``l + 1``
slices its columns with an ``all_nodes`` of block ``l``; :func:`column_source`), as a hidden
input of the output (a numbered input no template place names: computed and kept alive, not
returned; the lowering keeps it with the last block, ``gsample.runtime.lower``).

Example (GraphSAGE, two hops)::

    %s0 = slice_individual_sample(A=%A, cols=%seeds)
    %f0 = all_nodes(A=%s0)
    %s1 = slice_individual_sample(A=%A, cols=%f0)
    %out = output(0=%s0, 1=%s1)              becomes    %f1 = all_nodes(A=%s1)
                                                        %out = output(0=%s0, 1=%s1, 2=%f1)
"""

from __future__ import annotations

import itertools

from gsample.ir import Align, Graph, Kind, Node, Op, Ref, Step
from gsample.passes.result import PassResult


def structure_root(node: Node) -> Node:
    """The matrix whose edges, ids and layout ``node`` has: ``node`` read through value maps
    (``OpDef.edges == "same"`` and ``keeps_layout``: an edge map, a broadcast, SDDMM, a fused
    map), as :func:`gsample.passes.structure_reads.structure_reads` reads them. A
    structure-only op (``all_nodes``) of one of them is one of all of them.

    Examples
    --------
    >>> # %w = edge_broadcast(A=%s, ...): structure_root(%w) is %s
    """
    while node.info.edges == "same" and node.info.keeps_layout and "A" in node.inputs:
        node = node.inputs["A"]
    return node


def column_source(node: Node) -> Node | None:
    """The IR value whose ids are matrix ``node``'s global column ids, all of them and in
    order, or None where the op table does not say so.

    A matrix op with an input aligned ``NEW_COLS`` (``A[:, cols]``, a fused slice and sample,
    ``from_neighbors``) takes its columns from it; one that keeps its matrix's edges (or a
    subset of them: ``OpDef.edges``) or selects among them (a sample, ``Step.SELECT``) has its
    matrix's columns. A super-batch's ops (``batches``, ``per_batch``) encode their ids: None.

    Examples
    --------
    >>> # %s = slice_individual_sample(A=%A, cols=%f): column_source(%s) is %f
    >>> # %w = edge_broadcast(A=%s, ...): column_source(%w) is %f as well
    """
    while node.kind is Kind.MATRIX and node.op is not Op.INPUT:
        if "batches" in node.attrs or "per_batch" in node.attrs:
            return None
        d = node.info
        new = [i.name for i in d.inputs if i.align is Align.NEW_COLS and i.name in node.inputs]
        if new:
            return node.inputs[new[0]]
        A = node.inputs.get("A")
        if A is None or not (d.edges in ("same", "subset") or d.step is Step.SELECT):
            return None
        node = A
    return None


def returned_blocks(graph: Graph) -> list | None:
    """The matrices the program returns, in order, where it returns blocks (one matrix, or a
    list or tuple of them, as :func:`gsample.loader.features.batch_nodes` takes them); else
    None.

    Examples
    --------
    >>> # %out = output(0=%s0, 1=%s1) {template=[Ref('0'), Ref('1')]}: [%s0, %s1]
    >>> # %out = output(0=%s0, 1=%nodes) {template=(Ref('0'), Ref('1'))}: None (a tensor)
    """
    out = graph.output
    template = out.attrs.get("template")
    refs = [template] if isinstance(template, Ref) else template
    if not isinstance(refs, (list, tuple)) or not refs:
        return None
    if not all(isinstance(r, Ref) and r.name in out.inputs for r in refs):
        return None
    blocks = [out.inputs[r.name] for r in refs]
    return blocks if all(b.kind is Kind.MATRIX for b in blocks) else None


def frontier_of(graph: Graph, block: Node) -> Node | None:
    """An ``all_nodes`` node of ``block`` (of one of the matrices with its structure) in
    ``graph`` for one mini-batch, or None.

    Examples
    --------
    >>> # %f0 = all_nodes(A=%s0); %w = edge_broadcast(A=%s0, ...): frontier_of(g, %w) is %f0
    """
    root = structure_root(block)
    for n in graph.nodes:
        A = n.inputs.get("A")
        if (
            n.op is Op.ALL_NODES
            and "batches" not in n.attrs
            and A is not None
            and structure_root(A) is root
        ):
            return n
    return None


def gather_nodes(graph: Graph) -> PassResult:
    """Compute the last returned block's ``all_nodes`` in the program, where the returned
    blocks chain (each one after the first takes its columns from an ``all_nodes`` of the one
    before it, :func:`column_source`) and the program does not compute it already.

    Examples
    --------
    >>> gather_nodes(graphsage_program).changed  # doctest: +SKIP
    True
    >>> gather_nodes(graphsage_program).changed  # already there  # doctest: +SKIP
    False
    """
    blocks = returned_blocks(graph)
    if blocks is None:
        return PassResult(graph, False)
    for before, block in itertools.pairwise(blocks):
        src = column_source(block)
        if src is None or src.op is not Op.ALL_NODES or "batches" in src.attrs:
            return PassResult(graph, False)
        if structure_root(src.inputs["A"]) is not structure_root(before):
            return PassResult(graph, False)
    last = blocks[-1]
    if frontier_of(graph, last) is not None:
        return PassResult(graph, False)
    out = graph.output
    # read the last block's structure, not its values (as structure_reads makes every
    # reader do): it need not wait for a weighting of the block
    nodes = graph.add(Op.ALL_NODES, {"A": structure_root(last)}, before=out)
    hidden = 1 + max((int(k) for k in out.inputs if k.isdigit()), default=-1)
    out.inputs[str(hidden)] = nodes  # no template place: computed, kept, not returned
    return PassResult(graph, True)


#: why the pass runs where it does (``gs.explain`` prints it with the pass)
WHY = "after the pipeline (after DCE): the loader gathers rows of the last block's all_nodes"

__all__ = [
    "WHY",
    "column_source",
    "frontier_of",
    "gather_nodes",
    "returned_blocks",
    "structure_root",
]
