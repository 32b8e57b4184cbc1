"""A fused walk (``FUSED_WALK``, made by ``gsample.capture.walk_fusion``) on PyTorch tensors: the
semantic reference.

It runs the step bodies (``gsample.ir.walk_body``) step after step with the torch code the
unrolled program runs: each dense node's own function and arguments, each ``random_walk``
through this backend's :func:`.walk.random_walk` with the key of its ordinal (checked as the
unrolled program checks it), the columns stacked as ``gs.walk`` stacks them. The walks are
therefore the unrolled program's, bit for bit, on any device.

A super-batch (encoded seeds ``b * n + v`` and :class:`~gsample.base.random.BatchKeys`) runs the
steps mini-batch by mini-batch on the decoded seeds, each with its own keys, and encodes the
walks (``-1`` stays ``-1``): exactly the mini-batches' own walks.
"""

from __future__ import annotations

import torch

from gsample.backend.registry import torch_impl
from gsample.backend.torch import walk as walks
from gsample.base.random import BatchKeys, KeyRange, frontier_ptr
from gsample.formats.csc import CSC
from gsample.ir import Op, info, map_template
from gsample.ir.walk_body import body_of


@torch_impl(Op.FUSED_WALK)
def fused_walk(
    A: CSC, seeds: torch.Tensor, first, phases: tuple, length: int, key, **operands
) -> torch.Tensor:
    """``gs.walk(step, A, seeds, length)`` from its fused op.

    Parameters
    ----------
    A : CSC
        The whole graph.
    seeds : LongTensor, shape (W,)
        Start nodes (checked), or a super-batch's encoded ones.
    first, phases : gsample.ir.Graph, tuple of them
        The first step's body and the later steps' (step ``s``: ``phases[s % period]``).
    length : int
        Steps.
    key : gsample.base.random.KeyRange
        One key per ordinal of the op, in order (ints, ``BatchKeys`` or ``DeviceKey``).
    **operands : tensor
        The bodies' graph-level inputs ``"0"``, ``"1"``, ...

    Returns
    -------
    LongTensor, shape (W, length + 1)
        Column 0 the seeds, column ``s + 1`` the positions after step ``s``, ``-1`` after a
        walker's stop.
    """
    keys = key.host() if isinstance(key, KeyRange) else tuple(key)
    if not keys or not isinstance(keys[0], BatchKeys):
        return run_steps(A, seeds, first, phases, length, keys, operands)
    n, copies = keys[0].num_nodes, keys[0].copies
    ptr = frontier_ptr(seeds, n, copies)
    parts = []
    for b in range(copies):
        mine = tuple(k.keys[b] for k in keys)
        w = run_steps(A, seeds[ptr[b] : ptr[b + 1]] - b * n, first, phases, length, mine, operands)
        parts.append(torch.where(w >= 0, w + b * n, w))
    return torch.cat(parts) if parts else seeds.new_empty((0, length + 1))


def run_steps(A: CSC, seeds, first, phases, length: int, keys: tuple, operands: dict):
    """The walks of one mini-batch: the bodies step by step, ``keys`` one per ordinal."""
    cols, cur, prev, at = [seeds], seeds, seeds, 0
    for s in range(length):
        body = body_of(first, phases, s)
        nxt = run_body(body, A, cur, prev, operands, keys[at : at + body.num_random])
        at += body.num_random
        cols.append(nxt)
        prev, cur = cur, nxt
    return torch.stack(cols, dim=1)


_CHECK = info(Op.RANDOM_WALK).check


def run_body(body, A: CSC, cur, prev, operands: dict, keys: tuple):
    """One step: the body's nodes in order (``keys``: its random ops' keys)."""
    env: dict = {}
    for n in body.nodes:
        op = n.op
        if op is Op.INPUT:
            name = n.attrs["name"]
            env[n] = (
                A
                if name == "A"
                else cur
                if name == "cur"
                else prev
                if name == "prev"
                else operands[name]
            )
        elif op is Op.CONSTANT:
            env[n] = n.attrs["value"]
        elif op is Op.DENSE:
            args, kwargs = map_template(n.attrs["template"], lambda r, n=n: env[n.inputs[r.name]])
            fn = n.attrs["fn"]
            env[n] = (
                getattr(args[0], fn[1])(*args[1:], **kwargs)
                if isinstance(fn, tuple)
                else fn(*args, **kwargs)
            )
        elif op is Op.RANDOM_WALK:
            attrs = {k: v for k, v in n.attrs.items() if k != "ordinal"}
            # the unrolled program checks the ids each copy's walk starts from (dense code
            # made them); so does this
            seeds = _CHECK(A=A, seeds=env[n.inputs["seeds"]], **attrs)["seeds"]
            env[n] = walks.random_walk(A, seeds, key=keys[n.attrs["ordinal"]], **attrs)
        elif op is Op.OUTPUT:
            return env[n.inputs["0"]]
        else:
            raise AssertionError(f"fused_walk: {op.value} in a step body")
    raise AssertionError("fused_walk: a body without an output")


__all__ = ["fused_walk", "run_body", "run_steps"]
