"""``s.first_reached``: disjoint sampling's next frontier, and ``A.positions``, its seed
slots (the reference implementations).

A pair *(seed slot, node)* is one 64-bit key, ``(batch * slots + slot) * n + node`` (batch
0 outside a super-batch), so sorting keys orders the pairs by mini-batch, then slot, then
node: the frontier's order, grouped as a super-batch's values are. The new pairs are the
sorted edge keys that differ from the previous key and are not found (binary search) in the
sorted keys of the pairs reached before; one read-back gives their count, and a scatter
(instead of a boolean index, which would read back again) compacts them.
"""

from __future__ import annotations

import torch

from gsample.backend.registry import torch_impl
from gsample.backend.torch import reached_native
from gsample.base import validate as V
from gsample.formats.csc import CSC
from gsample.ir import Op


def slot_space(copies: int, n: int) -> int:
    """How many seed slots a key holds for ``copies`` mini-batches of ``n`` nodes: the
    largest power of two with ``copies * slots * n < 2**62``."""
    return 1 << max(0, 62 - max(1, copies * n).bit_length())


def pair_keys(ids: torch.Tensor, slot: torch.Tensor, n: int, slots: int) -> torch.Tensor:
    """Keys of pairs ``(slot, ids)``, ``ids`` encoded ``batch * n + node``."""
    batch = torch.div(ids, n, rounding_mode="floor")
    return (batch * slots + slot) * n + (ids - batch * n)


@torch_impl(Op.FIRST_REACHED)
def first_reached(A: CSC, slot=None, state=None, carry=None, batches=None):
    """``(nodes, slot, carry, state)``: the pairs of ``A``'s edges not in ``state`` (default:
    its columns' pairs), by (mini-batch,) slot, then node; see the op's method docstring."""
    copies, n = (1, A.num_nodes) if batches is None else batches
    slots = slot_space(copies, n)
    if slot is None and A.device.type == "cpu":  # one tree: native code where it runs
        got = reached_native.first_reached(A, state, copies, n, slots)
        if got is not None:
            nodes, first, grown = got
            out_carry = None if carry is None else carry[A.edge_cols()[first]]
            return nodes, torch.zeros_like(nodes), out_carry, grown
    if slot is None:  # one tree: the nodes first reached
        slot = torch.zeros(A.num_cols, dtype=torch.int64, device=A.device)
    slot = slot.to(torch.int64)
    if slot.numel():
        lo, hi = torch.aminmax(slot)
        V.fail_if(
            (lo < 0) | (hi >= slots),
            ValueError,
            lambda a, b: f"slot: seed slots must lie in [0, {slots}), got {a} .. {b}",
            lo,
            hi,
        )
    ecol = A.edge_cols()
    key = pair_keys(A.global_rows(), slot[ecol], n, slots)
    if state is None:
        state = torch.sort(pair_keys(A.global_cols(), slot, n, slots)).values
    order = torch.argsort(key, stable=True)  # ties: the first edge (column order) first
    k = key[order]
    new = torch.diff(k, prepend=k[:1] - 1) != 0
    if state.numel():
        at = torch.searchsorted(state, k).clamp(max=state.numel() - 1)
        new &= state[at] != k
    (count,) = V.read_back([new.sum()])
    where = torch.where(new, torch.cumsum(new, 0) - 1, count)
    first = torch.empty(count + 1, dtype=torch.int64, device=k.device)
    first = first.scatter_(0, where, order)[:count]  # the first edge of each new pair
    fresh = key[first]
    bs = torch.div(fresh, n, rounding_mode="floor")
    node = fresh - bs * n
    batch = torch.div(bs, slots, rounding_mode="floor")
    out_slot = bs - batch * slots
    nodes = node if batches is None else batch * n + node
    out_carry = None if carry is None else carry[ecol[first]]
    return nodes, out_slot, out_carry, torch.sort(torch.cat([state, fresh])).values


@torch_impl(Op.POSITIONS, syncs=False)  # arange and a binary search: no read-back
def positions(A: CSC, nodes: torch.Tensor, batches=None) -> torch.Tensor:
    """``arange(len(nodes))``; in a super-batch (``batches`` ``(N, n)``, ``nodes`` encoded
    ``b * n + v`` and grouped by mini-batch) each mini-batch's entries from 0, without a
    read-back (a binary search finds where each entry's mini-batch starts)."""
    at = torch.arange(nodes.numel(), device=nodes.device)
    if batches is None or nodes.numel() == 0:
        return at
    b = torch.div(nodes, batches[1], rounding_mode="floor")
    return at - torch.searchsorted(b, b)


__all__ = ["first_reached", "pair_keys", "positions", "slot_space"]
