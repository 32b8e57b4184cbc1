"""``A.positions`` on the CUDA backend (``gsample.backend.cuda.first_reached.positions``).

The implementation is plain torch code, so it runs here on CPU tensors: it equals the torch
backend's result on exact, bounded (garbage in the padding) and super-batched frontiers,
checks its ids itself (an ``IndexError`` naming ``nodes``; on a GPU a deferred flag, which
the adversarial-id tests raise from compiled, replayed and super-batched calls), and stays
exact for an exact frontier, so that the disjoint program's checks after it need no trim
(the program's one CUDA-graph region: ``tests/runtime/test_lower.py``)."""

from __future__ import annotations

import dataclasses
import functools

import pytest
import torch
from helpers import check_super_batched

import gsample as gs
from gsample.backend.cuda import first_reached as cuda_fr
from gsample.backend.registry import reference
from gsample.backend.torch import first_reached as torch_fr
from gsample.formats.bounded import BoundedIds
from gsample.interop.pyg.temporal import disjoint_sample
from gsample.ir import Op
from gsample.runtime import Options, lower

A = gs.datasets.rmat(300, 3000, seed=0)
CSC_A = A.csc


def test_an_exact_frontier_numbers_its_entries():
    nodes = torch.tensor([7, 3, 7, 0, 299])
    got = cuda_fr.positions(CSC_A, nodes)
    assert torch.equal(got, torch_fr.positions(CSC_A, nodes))
    assert got.tolist() == [0, 1, 2, 3, 4]


def test_a_bounded_frontier_keeps_its_count_and_ignores_its_padding():
    data = torch.tensor([5, 9, 2, -7, 10**12, 2**40])  # padding past the count: bad ids
    count = torch.tensor([3])
    got = cuda_fr.positions(CSC_A, BoundedIds(data, count))
    assert isinstance(got, BoundedIds) and got.count is count
    assert got.data[:3].tolist() == [0, 1, 2]


def test_a_super_batch_numbers_each_mini_batch_from_zero():
    n = CSC_A.num_nodes
    nodes = torch.tensor([3, 8, 8, n + 1, n + 250, 2 * n + 4])  # batches 0, 0, 0, 1, 1, 2
    want = torch_fr.positions(CSC_A, nodes, (3, n))
    assert want.tolist() == [0, 1, 2, 0, 1, 0]
    assert torch.equal(cuda_fr.positions(CSC_A, nodes, (3, n)), want)
    # bounded: padding (garbage, even ids of an earlier mini-batch) sorts after every batch
    data = torch.cat([nodes, torch.tensor([0, 5 * n, -1])])
    got = cuda_fr.positions(CSC_A, BoundedIds(data, torch.tensor([6])), (3, n))
    assert got.data[:6].tolist() == want.tolist()
    with pytest.raises(IndexError, match=r"nodes: node id 900 is out of range"):
        cuda_fr.positions(CSC_A, torch.tensor([3 * n]), (3, n))


@pytest.mark.parametrize("bad", [-1, 300, 2**40])
def test_a_bad_id_raises_naming_nodes_eagerly_and_deferred(bad):
    nodes = torch.tensor([4, bad, 2])
    with pytest.raises(IndexError, match=rf"nodes: node id {bad} is "):
        cuda_fr.positions(CSC_A, nodes)
    # in a bounded frontier only the counted ids are checked
    got = cuda_fr.positions(CSC_A, BoundedIds(torch.tensor([4, 2, bad]), torch.tensor([2])))
    assert got.data[:2].tolist() == [0, 1]
    with pytest.raises(IndexError, match=rf"nodes: node id {bad} is "):
        cuda_fr.positions(CSC_A, BoundedIds(torch.tensor([4, bad, 2]), torch.tensor([2])))


def test_super_batched_disjoint_sampling_through_it_equals_one_by_one(monkeypatch):
    """The CUDA implementation in the torch backend's place (CPU tensors): the disjoint
    sampler super-batched draws what it draws one mini-batch at a time (the super-batch's
    encoded seeds are in the implementation's bound)."""
    key = (Op.POSITIONS, "csc")
    torch_be = reference()
    calls = []

    def spy(A, nodes, batches=None):
        calls.append(batches)
        return cuda_fr.positions(A, nodes, batches)

    monkeypatch.setitem(torch_be.impls, key, dataclasses.replace(torch_be.impls[key], fn=spy))
    seeds = torch.arange(64) % 40  # repeats across and within mini-batches
    fn = functools.partial(disjoint_sample, num_neighbors=(4, 3))
    check_super_batched(A, fn, seeds, 16, 2)  # blocks and slots, each batch's
    assert None in calls and (2, A.num_nodes) in calls


def test_an_exact_frontier_s_positions_stay_exact_over_a_bounded_sample():
    """``bounded_out="inputs"`` counts the tensor inputs only: over a sample still in
    bounded buffers (``A``), the slots of an exact frontier are exact (nothing to trim)."""

    def program(A, seeds):
        s = A[:, seeds].individual_sample(3)
        return s, s.positions(seeds)

    p = lower(gs.compile(program).program(A, torch.arange(10)), "cuda", Options(), "cuda:0")
    (finish,) = [s for s in p.steps if s.syncs]
    positions = next(s for s in p.steps if s.label.startswith("cuda.positions"))
    assert positions.out not in finish.args, p.format()
    assert len(finish.args) == 1, p.format()
