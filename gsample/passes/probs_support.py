"""Mark collective samples whose row probabilities vanish off the frontier's rows.

``A[:, cols].collective_sample(k, node_probs=p)`` draws among its candidate rows: the rows
with an edge in the slice and ``p > 0``. Where ``p`` is a row reduction of that very slice
(``A[:, cols].sum(axis=1)``, LADIES's bias), or of a matrix whose edges are among ``A``'s
(an edge map of it: ``A ** 2``), then scaled, every row without an edge in the slice has
``p == 0`` exactly (a reduction of no term is 0; ``0 / x`` and ``0 * x`` stay 0, or are NaN,
which the probabilities' check refuses either way). ``p > 0`` alone then says which rows
are candidates: the pass sets ``probs_in_slice`` on the ``SLICE_COLLECTIVE_SAMPLE``, and
the CUDA backend skips its pass over the frontier's edges that marks the slice's rows
(``kernels/layerwise.cu``, ``gs_frontier_rows``: a pass over every edge of the frontier, on
the layer's critical path).
Samples are unchanged: the candidates are the same rows.

What the pass follows is read from the op definitions (``OpDef.edges``: a matrix result
whose edges are ``A``'s or a subset of them; ``Align``: a reduction over rows) and from a
short list of dense functions that keep zeros (``x / y``, ``x * y``, ``abs``, ...).

Example (LADIES, one layer)::

    %p = slice_reduce(A=%A2, cols=%seeds) {op='sum', axis=1}      A2 = cached A ** 2
    %s = dense(0=%p) {fn=.sum()};  %c = dense(0=%s) {fn=.clamp()}
    %q = dense(0=%p, 1=%c) {fn=truediv}
    %b = slice_collective_sample(A=%A, cols=%seeds, node_probs=%q) {k=4000,
                                                                    probs_in_slice=True}
"""

from __future__ import annotations

import operator

import torch

from gsample.ir import Align, Graph, Node, Op, Ref
from gsample.passes.result import PassResult

#: dense functions f with f(0, ...) == 0 (or NaN) in the argument at these positions
#: (None: every argument); methods as the tracer records them, ("method", name)
_KEEP_ZERO = {
    operator.truediv: (0,),
    torch.div: (0,),
    torch.true_divide: (0,),
    ("method", "div"): (0,),
    ("method", "true_divide"): (0,),
    operator.mul: None,
    torch.mul: None,
    ("method", "mul"): None,
    operator.neg: (0,),
    torch.neg: (0,),
    ("method", "neg"): (0,),
    torch.abs: (0,),
    ("method", "abs"): (0,),
    torch.relu: (0,),
    ("method", "relu"): (0,),
    torch.sqrt: (0,),
    ("method", "sqrt"): (0,),
    torch.square: (0,),
    ("method", "square"): (0,),
    ("method", "float"): (0,),
    ("method", "double"): (0,),
    ("method", "to"): (0,),
    ("method", "contiguous"): (0,),
    ("method", "clone"): (0,),
}


def probs_support(graph: Graph) -> PassResult:
    """Set ``probs_in_slice=True`` on each ``SLICE_COLLECTIVE_SAMPLE`` whose ``node_probs``
    is zero at every row without an edge in its slice (see the module docstring).

    Examples
    --------
    >>> # graph: %b = slice_collective_sample(A=%A, cols=%seeds, node_probs=%q) {k=4000}
    >>> probs_support(graph).changed  # doctest: +SKIP
    True
    >>> # now %b's attributes say probs_in_slice=True
    """
    marked = 0
    for node in graph.nodes:
        if node.op is not Op.SLICE_COLLECTIVE_SAMPLE or node.attrs.get("probs_in_slice"):
            continue
        p = node.inputs.get("node_probs")
        if p is not None and _vanishes_off(p, node.input("A"), node.input("cols"), 0):
            node.attrs["probs_in_slice"] = True
            marked += 1
    return PassResult(graph, marked > 0)


def _vanishes_off(v: Node, A: Node, cols: Node, depth: int) -> bool:
    """Whether ``v`` (a tensor over ``A``'s rows) is 0 (or NaN) at every row without an edge
    in ``A[:, cols]``."""
    if depth > 32:  # a long chain: not worth following
        return False
    if v.op is Op.DENSE:
        fn = v.attrs["fn"]
        try:
            positions = _KEEP_ZERO.get(fn, False)
        except TypeError:  # an unhashable callable: not one of ours
            return False
        if positions is False:
            return False
        args, kwargs = v.attrs["template"]
        if fn == ("method", "to") and any(
            isinstance(a, Ref) for a in (*args[1:], *kwargs.values())
        ):
            return False
        refs = [
            a
            for i, a in enumerate(args)
            if isinstance(a, Ref) and (positions is None or i in positions)
        ]
        return any(_vanishes_off(v.inputs[r.name], A, cols, depth + 1) for r in refs)
    info = v.info
    # a reduction (its result lines up with its matrix's rows or columns, as its axis says;
    # over no term it is 0) over the rows of a matrix whose edges lie in A[:, cols]
    if info.out is Align.AXIS and info.alignment(None, v.attrs) is Align.ROWS:
        M = v.input("A")
        if "cols" in v.inputs:  # a fused slice: the reduction of M[:, cols]
            return v.input("cols") is cols and _edges_within(M, A)
        return _in_slice(M, A, cols)
    return False


def _in_slice(M: Node, A: Node, cols: Node) -> bool:
    """Whether the matrix ``M``'s edges are among those of ``A[:, cols]``."""
    while M.op is not Op.SLICE_COLS:
        if M.info.edges is None or "A" not in M.inputs:
            return False
        M = M.input("A")
    return M.input("cols") is cols and _edges_within(M.input("A"), A)


def _edges_within(M: Node, A: Node) -> bool:
    """Whether the matrix ``M``'s edges are among ``A``'s (``M`` is ``A``, made from it by
    ops whose definition says their result keeps or filters its edges, or a cached
    program of such ops on it)."""
    while M is not A:
        if M.op is Op.CACHED and M.input("graph") is A:
            return _program_keeps_edges(M.attrs["program"])
        if M.info.edges is None or "A" not in M.inputs:
            return False
        M = M.input("A")
    return True


def _program_keeps_edges(program: Graph) -> bool:
    """A cached program's output (a matrix) made from its graph input as :func:`_edges_within`
    requires."""
    out = next((n for n in program.nodes if n.op is Op.OUTPUT), None)
    src = next((n for n in program.nodes if n.op is Op.INPUT), None)
    if out is None or src is None or len(out.inputs) != 1:
        return False
    return _edges_within(next(iter(out.inputs.values())), src)


__all__ = ["probs_support"]
