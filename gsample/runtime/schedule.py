"""Sinking host work past device work: a GPU program's step order, before release points.

A layer-wise sampler reads each layer's sizes back (the collective sampler's finish), then
does host work the next layer does not read: LADIES's importance weights and column
normalisation (two edge broadcasts and a column sum: host work on every edge of the layer),
while the GPU idles until the next layer's launch. :func:`sink` moves such steps to just
before the next step that waits for the device: after the next layer's device work is
queued, so the GPU runs it while the host does them. A step moves when it is a pure sparse
op's (not random, not a read-back, not one a CUDA graph may hold) or a check of such an
op's inputs that reads nothing back; moved steps keep their order, and a step reading what
a moved one makes places it (and the moved steps before it) first. Values and samples are
the same in any such order (the ops are pure, and random draws are keyed by their op
ordinals); an error of a moved op is raised later in the call.

Example (LADIES, one layer to the next)::

    before: finish_1, row_ids, getitem, check, edge_broadcast, reduce, check,
            edge_broadcast, all_nodes | slice_reduce_2 ... collective_start_2 | finish_2
    after:  finish_1, row_ids, getitem, check, check, all_nodes | slice_reduce_2 ...
            collective_start_2 | edge_broadcast, reduce, edge_broadcast, finish_2
"""

from __future__ import annotations

from gsample.ir import Effect, Op
from gsample.runtime.steps import Check, trim

#: steps of these ops stay in place (not sparse ops: program structure, dense code)
_STRUCTURE = frozenset({Op.INPUT, Op.CONSTANT, Op.DENSE, Op.GETITEM, Op.CACHED, Op.OUTPUT})


def movable(step) -> bool:
    """Whether :func:`sink` may move ``step``: a pure sparse op's call (not one a CUDA graph
    may hold), or a check of its inputs that reads nothing back (it moves with the op, which
    it precedes)."""
    node = step.node
    if (
        node is None
        or node.op in _STRUCTURE
        or node.info.effect is not Effect.PURE
        or step.device_part
        or step.fn is trim
    ):
        return False
    if isinstance(step.fn, Check):
        return not step.syncs
    return not step.graph_safe


def _outs(step) -> tuple:
    return (step.out,) if isinstance(step.out, int) else tuple(step.out)


def sink(steps: list) -> list:
    """``steps`` reordered: each movable step (:func:`movable`) as late as the next step
    that may read back (``Instruction.syncs``, not itself movable), or the first step reading its
    result (with the moved steps it reads, in order).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> @gs.compile
    ... def graphsage(A, seeds):                   # two GraphSAGE layers
    ...     s1 = A[:, seeds].individual_sample(10)
    ...     return [s1, A[:, s1.all_nodes()].individual_sample(5)]
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.arange(8)
    >>> program = graphsage.lowered(A, seeds)
    >>> steps = sink(program.steps)          # before release points are computed
    >>> sorted(map(id, steps)) == sorted(map(id, program.steps))   # the same steps, reordered
    True
    """
    out, held, made = [], [], {}  # held: moved steps not yet placed, in order

    def place(chosen: set) -> None:
        """Place the held steps whose ids are in ``chosen``, in order."""
        nonlocal held
        for s in held:
            if id(s) in chosen:
                out.append(s)
                for o in _outs(s):
                    made.pop(o, None)
        held = [s for s in held if id(s) not in chosen]

    def needed(step) -> set:
        """Ids of the held steps ``step`` reads from, directly or through other held ones."""
        todo, found = [made[a] for a in step.args if a in made], set()
        while todo:
            s = todo.pop()
            if id(s) not in found:
                found.add(id(s))
                todo.extend(made[a] for a in s.args if a in made)
        return found

    for step in steps:
        if movable(step):  # (after the held steps it reads, in order)
            held.append(step)
            for o in _outs(step):
                made[o] = step
        elif step.syncs:
            place({id(s) for s in held})  # the device is waited for here: all of them
            out.append(step)
        else:
            place(needed(step))
            out.append(step)
    place({id(s) for s in held})
    return out


__all__ = ["movable", "sink"]
