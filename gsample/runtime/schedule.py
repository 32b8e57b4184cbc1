"""A GPU program's step order, before release points: host work sunk past device work
(:func:`sink`), and a one-region program's read-backs hoisted ahead of its host work
(:func:`hoist`).

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

A super-batch's program ends with host work after its last device work: per output, the
trim of its sizes and its batches' bounds (read-backs), then its split into the
mini-batches' pieces (host work: views, objects). :func:`hoist` moves every read-back of
that tail ahead of the host work, so that a caller keeping two calls in flight
(``gsample.runtime.overlap.in_turn``) launches the next call's device work once this call's
read-backs are made (``Program.settles``) and splits all of its outputs while the device
runs it::

    before: region | trim_1, bounds_1, split_1, trim_2, bounds_2, split_2, assemble | finish
    after:  region | trim_1, bounds_1, trim_2, bounds_2, split_1, split_2, assemble | finish
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


def _reads(step, made: dict) -> set:
    """Ids of the steps of ``made`` (``slot -> the step that makes it``) that ``step`` reads
    from, directly or through others of them."""
    todo, found = [made[a] for a in step.args if a in made], set()
    while todo:
        s = todo.pop()
        if id(s) not in found:
            found.add(id(s))
            todo.extend(made[a] for a in s.args if a in made)
    return found


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
        return _reads(step, made)

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


def hoist(steps: list) -> list:
    """``steps`` reordered: in the tail after the last step a CUDA graph may hold (but for
    the final step, the output's read-back), each step that may read back
    (``Instruction.syncs``) moves ahead of the host steps before it that it does not read
    (with the ones it reads, in order). Moved steps keep their order; a step whose move
    would write a slot a step it passes reads or writes stays, and so does every step after
    it. Values and samples are the same in any such order (each step reads what the steps
    it follows made); an error of a read-back may be raised before an earlier host step's.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> from gsample.runtime.lower import lower
    >>> from gsample.runtime.options import Options
    >>> @gs.compile
    ... def graphsage(A, seeds):                   # two GraphSAGE layers
    ...     s1 = A[:, seeds].individual_sample(10)
    ...     return [s1, A[:, s1.all_nodes()].individual_sample(5)]
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.arange(8)
    >>> sb = graphsage.super_batched((A, seeds), seeds="seeds")
    >>> program = lower(sb.program(4)[0], "cuda", Options(), "cuda:0")  # hoisted already
    >>> [s.label for s in program.steps[program.regions[0].stop : -1]]
    ['trim', 'dense bounds', 'trim', 'dense bounds', 'dense split', 'dense split', \
'dense assemble_batches']
    """
    start = 1 + max((i for i, s in enumerate(steps) if s.graph_safe or s.device_part), default=-1)
    if start >= len(steps) - 1:
        return steps
    early, late = [], []
    for k, step in enumerate(steps[start:-1]):
        if not step.syncs:
            late.append(step)
            continue
        need = _reads(step, {o: s for s in late for o in _outs(s)})
        moved = [s for s in late if id(s) in need] + [step]
        stay = [s for s in late if id(s) not in need]
        writes = {o for s in moved for o in _outs(s)}
        if any(writes & (set(s.args) | set(_outs(s))) for s in stay):
            return steps[:start] + early + late + steps[start + k : -1] + steps[-1:]
        early += moved
        late = stay
    return steps[:start] + early + late + steps[-1:]


__all__ = ["hoist", "movable", "sink"]
