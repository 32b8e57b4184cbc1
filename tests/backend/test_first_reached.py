"""``s.first_reached(slot, state, carry)``: disjoint sampling's next frontier, the (seed
slot, node) pairs first reached by their seed, checked against a brute-force reference
(every edge's pair enumerated in Python), hop after hop, compiled, super-batched, and on
bad input."""

from __future__ import annotations

import pytest
import torch
from helpers import check_compiled_equals_eager, check_super_batched, random_seeds

import gsample as gs


def _reference(s: gs.Matrix, slot: list, seen: set, carry: list | None):
    """Pairs ``(slot[c], r)`` of the edges in CSC order, first occurrence's carry, minus
    ``seen``; sorted by (slot, node)."""
    src, _, _ = s.edges()
    cols = s.csc.edge_cols().tolist()
    first: dict = {}
    for r, c in zip(src.tolist(), cols):
        pair = (slot[c], r)
        if pair not in seen and pair not in first:
            first[pair] = None if carry is None else carry[c]
    pairs = sorted(first)
    return pairs, [first[p] for p in pairs]


def _frontier(device, seed=0):
    A = gs.datasets.rmat(300, 4000, seed=seed).to(device)
    g = torch.Generator().manual_seed(seed)
    seeds = torch.randint(0, 300, (12,), generator=g)
    seeds[3] = seeds[0]  # a node of two trees
    return A, seeds.to(device)


def test_pairs_hop_after_hop_equal_the_brute_force_reference(device):
    A, seeds = _frontier(device)
    B = seeds.numel()
    slot = torch.arange(B, device=device)
    carry = torch.arange(B, device=device) * 10 + 7  # a per-seed value (its time)
    seen = {(i, v) for i, v in enumerate(seeds.tolist())}
    nodes, state = seeds, None
    grew = []
    for hop, k in enumerate((4, 3, 2)):
        s = A.temporal_sample(nodes, k, seed=slot)
        pairs, carried = _reference(s, slot.tolist(), seen, carry.tolist())
        nodes, slot, carry, state = s.first_reached(slot, state, carry)
        assert nodes.dtype == slot.dtype == torch.int64 and nodes.device.type == device.type
        assert list(zip(slot.tolist(), nodes.tolist())) == pairs, f"hop {hop}"
        assert carry.tolist() == carried
        # a pair's carried value is its seed's: every column of a tree carries the same
        assert carry.tolist() == [i * 10 + 7 for i in slot.tolist()]
        seen |= set(pairs)
        assert sorted(seen) == [(int(k) // 300, int(k) % 300) for k in state.tolist()]
        grew.append(len(pairs))
    assert grew[0] > 0 and grew[1] > 0  # the reference is not vacuous


def test_without_slot_it_is_one_tree_the_nodes_first_reached(device):
    A, seeds = _frontier(device, seed=1)
    seeds = torch.unique(seeds)
    s = A[:, seeds].individual_sample(5)
    nodes, slot, carry, state = s.first_reached()
    rows = s.row()
    expect = rows[~torch.isin(rows, seeds)]
    assert torch.equal(nodes, expect) and carry is None
    assert torch.equal(slot, torch.zeros_like(nodes))
    # the next hop excludes the seeds and this hop's nodes
    s2 = A[:, nodes].individual_sample(5)
    nodes2, _, _, _ = s2.first_reached(state=state)
    rows2 = s2.row()
    assert torch.equal(nodes2, rows2[~torch.isin(rows2, torch.cat([seeds, nodes]))])


def test_an_empty_frontier_reaches_nothing(device):
    A, _ = _frontier(device)
    s = A.temporal_sample(torch.empty(0, dtype=torch.int64, device=device), 3)
    slot = torch.empty(0, dtype=torch.int64, device=device)
    nodes, slot2, carry, state = s.first_reached(slot, carry=slot.double())
    assert nodes.shape == slot2.shape == carry.shape == state.shape == (0,)


def _disjoint(A, seeds):
    slot = torch.ones_like(seeds).cumsum(0) - 1
    time = slot * 3
    out, state, nodes = [], None, seeds
    for k in (4, 3):
        s = A.temporal_sample(nodes, k, seed=slot)
        nodes, slot, time, state = s.first_reached(slot, state, time)
        out += [s, nodes, slot, time]
    return out


def test_compiled_equals_eager():
    A = gs.datasets.rmat(400, 4000, seed=2)
    check_compiled_equals_eager(_disjoint, A, random_seeds(32, num_nodes=400), distinct=True)


def test_super_batched_equals_one_by_one():
    A = gs.datasets.rmat(400, 4000, seed=3)
    check_super_batched(A, _disjoint, random_seeds(70, num_nodes=400), 16, 3)


def test_a_super_batched_program_cannot_return_the_state():
    A = gs.datasets.rmat(400, 4000, seed=3)

    def leaks(A, seeds):
        s = A.temporal_sample(seeds, 3)
        return s.first_reached()[3]

    with pytest.raises(
        ValueError, match=r"super_batch: the program returns an op's state \(first_reached's\)"
    ):
        list(gs.DataLoader(A, gs.compile(leaks), random_seeds(8, num_nodes=400), 4, super_batch=2))


def test_bad_input_names_the_argument():
    A, seeds = _frontier("cpu")
    s = A.temporal_sample(seeds, 3)
    C = seeds.numel()
    with pytest.raises(ValueError, match=r"slot: expected one seed slot per column .*\(12,\)"):
        s.first_reached(torch.arange(C - 1))
    with pytest.raises(TypeError, match="slot: seed slots must be an integer tensor"):
        s.first_reached(torch.arange(C).double())
    with pytest.raises(TypeError, match="slot: seed slots must be an integer tensor"):
        s.first_reached(torch.ones(C, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"slot: seed slots must lie in \[0, "):
        s.first_reached(torch.arange(C) - 1)
    with pytest.raises(ValueError, match=r"slot: seed slots must lie in \[0, "):
        s.first_reached(torch.full((C,), 2**62))
    with pytest.raises(ValueError, match="carry: expected one value per column"):
        s.first_reached(torch.arange(C), carry=torch.zeros(C + 1))
    with pytest.raises(TypeError, match="state: pass the state a previous first_reached"):
        s.first_reached(torch.arange(C), state=torch.zeros(3))
    # the next call is unharmed
    nodes, *_ = s.first_reached(torch.arange(C))
    assert nodes.numel() > 0


def test_positions_number_each_mini_batch_from_zero(device):
    A, seeds = _frontier(device)
    assert torch.equal(A.positions(seeds), torch.arange(seeds.numel(), device=device))
    assert A.positions(seeds[:0]).shape == (0,)
    with pytest.raises(IndexError, match="nodes"):
        A.positions(torch.tensor([0, A.num_nodes], device=device))

    def slots(A, seeds):
        return A.positions(seeds), A.positions(seeds).mul(2)

    # super-batched (sizes 16, 16, 16, 6 in runs of 3): each mini-batch's from 0
    check_super_batched(A.to("cpu"), slots, random_seeds(54, num_nodes=300), 16, 3)
