"""Scaled row sums: a reduction divided by a scalar tensor as one op, ``r / c`` in its finish.

LADIES (``examples/ladies.py``) normalises its row probabilities by the slice's total: ``p =
W[:, cols].sum(axis=1) / s`` with ``s = W[:, cols].sum().clamp(min=1e-30)``. After fusion
that is a ``SLICE_REDUCE`` over every row of the graph (``(R,)``: the graph's rows, times
the mini-batches of a super-batch), then a dense division over the same ``R`` values: a
second pass over the row space, which the backend's row sums could do as they write.

Where the reduction is read by that division only, and the divisor is one value computed by
the program (an op whose result the op table says is a scalar, ``A.sum()``, or exact
elementwise code on such values and constants: a 0-dim tensor on the program's device),
this pass gives the reduction the divisor as its ``scale`` input and drops the division.
The op's definition says what it computes: the result divided by ``scale`` as the program
divided it (``gsample.backend.torch.fused_reduce.divided``: the same IEEE division of the
same rounded sum by the same value, so the same bits, and the same samples). A super-batch
gives each mini-batch its own scale (``super_batch`` stacks their 0-dim values, ``(N,)``).

Not rewritten: a divisor that is a number or a constant (torch divides a device tensor by a
host value through its reciprocal, which a finish dividing by it would not match), a
divisor over the rows (a tensor), a reduction read elsewhere too (its undivided values are
needed), ``c / p``, a division with a rounding mode, and any other arithmetic. A backend
whose kernels cannot divide as the program does (another dtype, a host tensor) divides
with torch after its reduction: the rewrite never changes values.

Example (one LADIES layer, the CUDA backend's program: ``listed_rows`` kept the dense
path)::

    %p = slice_reduce(A=%A2, cols=%seeds) {op='sum', axis=1}
    %t = slice_total(A=%A2, cols=%seeds);  %c = dense(0=%t) {fn=.clamp()}
    %q = dense(0=%p, 1=%c) {fn=truediv}
    %s = slice_collective_sample(A=%A, cols=%seeds, node_probs=%q) {k=4000, ...}

becomes::

    %t = slice_total(A=%A2, cols=%seeds);  %c = dense(0=%t) {fn=.clamp()}
    %q = slice_reduce(A=%A2, cols=%seeds, scale=%c) {op='sum', axis=1}
    %s = slice_collective_sample(A=%A, cols=%seeds, node_probs=%q) {k=4000, ...}
"""

from __future__ import annotations

import torch

from gsample.ir import Align, Graph, Kind, Node, Op
from gsample.passes.listed_rows import _is_division
from gsample.passes.result import PassResult
from gsample.passes.super_batch import exact_elementwise

#: the input an op that divides its result takes the divisor by (a scalar: Align.SCALAR)
SCALE = "scale"


def scaled_row_sums(graph: Graph) -> PassResult:
    """Fold each ``reduction / scalar`` into the reduction's ``scale`` (see the module doc).

    Examples
    --------
    >>> # graph: %q = dense(0=%p, 1=%c) {fn=truediv}, %p = slice_reduce(...), %c a total
    >>> scaled_row_sums(graph).changed  # doctest: +SKIP
    True
    >>> # now %q = slice_reduce(A=..., cols=..., scale=%c)
    """
    users = graph.users()
    done = 0
    for q in list(graph.nodes):
        plan = _plan(q, users)
        if plan is None:
            continue
        p, c = plan
        fused = graph.add(
            p.op,
            {**p.inputs, SCALE: c},
            dict(p.attrs),
            p.kind,
            before=q,  # after the divisor, which the finish reads
            meta=p.meta,
        )
        graph.replace_uses(q, fused)
        graph.remove([p, q])
        users = graph.users()
        done += 1
    return PassResult(graph, done > 0)


def _plan(q: Node, users: dict):
    """``(p, c)`` when ``q`` is ``p / c``, ``p`` a reduction that can take a scale and is
    read by ``q`` alone, ``c`` a scalar tensor computed by the program; else None."""
    if q.op is not Op.DENSE or not _is_division(q):
        return None
    (num, den), _ = q.attrs["template"]
    p, c = q.inputs[num.name], q.inputs[den.name]
    i = p.info.input(SCALE)  # (the op's definition: whether it divides its result)
    if (
        i is None
        or i.align is not Align.SCALAR
        or not i.optional
        or p.inputs.get(SCALE) is not None
        or "batches" in p.attrs
        or users[p] != [q]
        or not _tensor_scalar(c, 0)
    ):
        return None
    return p, c


def _tensor_scalar(v: Node, depth: int) -> bool:
    """Whether ``v`` is one value computed by the program (a tensor, not a number): an op
    whose result the op table says is a scalar (``A.sum()``), or exact elementwise dense
    code on such values and constants, at least one of them computed."""
    if depth > 16 or v.kind is Kind.MATRIX:
        return False
    if v.op is Op.DENSE:
        fn, template = v.attrs["fn"], v.attrs["template"]
        ins = list(v.inputs.values())
        if not exact_elementwise(fn, template) or not ins:
            return False
        computed = [i for i in ins if i.op is not Op.CONSTANT]
        return (
            bool(computed)
            and all(_one_value(i.attrs["value"]) for i in ins if i.op is Op.CONSTANT)
            and all(_tensor_scalar(i, depth + 1) for i in computed)
        )
    if v.op in (Op.CONSTANT, Op.INPUT):
        return False
    return v.info.out is Align.SCALAR and "batches" not in v.attrs


def _one_value(x) -> bool:
    """A constant that keeps a scalar one value: a number or a 0-dim tensor."""
    return isinstance(x, (bool, int, float)) or (isinstance(x, torch.Tensor) and x.dim() == 0)


__all__ = ["scaled_row_sums"]
