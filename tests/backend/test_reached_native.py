"""The native CPU ``first_reached`` of seed slot 0 (``gsample/backend/torch/reached_native.py``)
against the torch code (:data:`reached_native.ENABLED` off), bit for bit: random hops with
repeated rows and columns, empty samples and states, a row space (row ids), super-batches
(``batches=(N, n)``), carried values, states grown hop after hop; the inputs it must leave to
the torch code (keys of another slot or outside the key space, an unsorted state, rows out
of range, int32 ids), with its bitmap left clear after each; the switches; PyG's hops and
the PyG-style loader, native against torch."""

import pytest
import torch
from helpers import hop_sample

import gsample as gs
from gsample.backend.torch import first_reached as fr
from gsample.backend.torch import reached_native
from gsample.formats.csc import CSC

pytestmark = pytest.mark.skipif(
    not reached_native.available(), reason="no native CPU first_reached (no C++ compiler)"
)


def torch_code(*args, **kwargs):
    saved, reached_native.ENABLED = reached_native.ENABLED, False
    try:
        return fr.first_reached(*args, **kwargs)
    finally:
        reached_native.ENABLED = saved


def assert_same(got, want, what):
    for i, (x, y) in enumerate(zip(got, want, strict=True)):
        if y is None:
            assert x is None, f"{what}: output {i}"
            continue
        assert x.dtype == y.dtype and x.shape == y.shape, f"{what}: output {i}"
        assert torch.equal(x, y), f"{what}: output {i}\n{x}\n{y}"


def native_ran(monkeypatch) -> list:
    """A list that records each native call's result (None: declined)."""
    calls, real = [], reached_native.first_reached

    def spy(*args):
        out = real(*args)
        calls.append(out)
        return out

    monkeypatch.setattr(reached_native, "first_reached", spy)
    return calls


CASES = [
    dict(),
    dict(C=1),
    dict(C=1, k=0),
    dict(C=0),
    dict(k=0),
    dict(n=3, C=50),  # nearly every row repeated
    dict(n=5000, C=400, k=20),  # many words of the bitmap
    dict(row_space=True),
    dict(copies=3, n=20),
    dict(copies=4, n=7, C=60, row_space=True),
    dict(copies=64, n=300, C=500),
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hops_equal_the_torch_code(case, seed, monkeypatch):
    """From the columns' pairs, then from the state a call grew (and from an empty state):
    the same new ids, carried values and grown state as the torch code, each call native."""
    A, _, batches = hop_sample(seed, **CASES[case])
    calls = native_ran(monkeypatch)
    carry = torch.rand(A.num_cols, generator=torch.Generator().manual_seed(seed))
    first = fr.first_reached(A, None, None, carry, batches)
    assert_same(first, torch_code(A, None, None, carry, batches), f"case {case}, no state")
    B, _, _ = hop_sample(seed + 100, **CASES[case])
    for state in (first[3], torch.empty(0, dtype=torch.int64)):
        got = fr.first_reached(B, None, state, None, batches)
        assert_same(got, torch_code(B, None, state, None, batches), f"case {case}, a state")
        assert torch.equal(got[1], torch.zeros_like(got[0]))  # seed slot 0
    assert sum(c is not None for c in calls) == 3  # (the torch code's calls: None)


def test_a_loader_s_hops_grow_one_state():
    """PyG's hops on an R-MAT graph, three hops, mini-batches of 64: the sampled nodes of
    every hop equal the torch code's."""
    from gsample.interop.pyg.subgraph import neighbor_hops

    A = gs.datasets.rmat(3000, 30000, seed=4)
    seeds = torch.randperm(3000, generator=torch.Generator().manual_seed(0))[:64]
    gs.manual_seed(3)
    blocks, reached = neighbor_hops(A, seeds, (10, 5, 3))
    saved, reached_native.ENABLED = reached_native.ENABLED, False
    try:
        gs.manual_seed(3)
        blocks_t, reached_t = neighbor_hops(A, seeds, (10, 5, 3))
    finally:
        reached_native.ENABLED = saved
    assert len(reached) == 4 and all(r.numel() for r in reached)
    for got, want in zip(reached, reached_t, strict=True):
        assert torch.equal(got, want)
    for got, want in zip(blocks, blocks_t, strict=True):
        assert torch.equal(got.csc.rows, want.csc.rows)


def test_the_pyg_neighbor_loader_equals_its_torch_code():
    """``gsample.pyg.NeighborLoader`` (its hops take the native path) yields the batches it
    yields with the native code off."""
    from torch_geometric.data import Data

    import gsample.pyg

    A = gs.datasets.rmat(2000, 20000, seed=5)
    src, dst, _ = A.edges()
    data = Data(edge_index=torch.stack([src, dst]), num_nodes=A.num_nodes)

    def epoch():
        torch.manual_seed(0)
        gs.manual_seed(0)
        loader = gsample.pyg.NeighborLoader(
            data, [10, 5], input_nodes=torch.arange(0, 2000, 3), batch_size=128, shuffle=True
        )
        return [(b.n_id, b.edge_index) for b in loader]

    got = epoch()
    saved, reached_native.ENABLED = reached_native.ENABLED, False
    try:
        want = epoch()
    finally:
        reached_native.ENABLED = saved
    assert len(got) == len(want) == 6
    for (n1, e1), (n2, e2) in zip(got, want, strict=True):
        assert torch.equal(n1, n2) and torch.equal(e1, e2)


def declined(A, state, batches, monkeypatch):
    """Whether the native code declined the call (the torch code then ran)."""
    calls = native_ran(monkeypatch)
    fr.first_reached(A, None, state, None, batches)
    return calls == [None]


def test_it_declines_what_it_does_not_take_and_leaves_its_bitmap_clear(monkeypatch):
    """Keys of another slot or outside the key space, an unsorted state, rows outside the
    id space and int32 rows go to the torch code, which returns what it always did; a call
    after each is unharmed (the bitmap was left clear)."""
    A, _, batches = hop_sample(7, copies=3, n=50, C=80)
    copies, n = batches
    slots = fr.slot_space(copies, n)
    grown = fr.first_reached(A, None, None, None, batches)[3]
    for name, state in {
        "a key of slot 1": torch.cat([grown, torch.tensor([(copies - 1) * slots * n + n + 1])]),
        "a negative key": torch.cat([torch.tensor([-5]), grown]),
        "a batch past the last": torch.cat([grown, torch.tensor([copies * slots * n])]),
        "unsorted": grown.flip(0),
    }.items():
        assert declined(A, state, batches, monkeypatch), name
        assert_same(
            fr.first_reached(A, None, state, None, batches),
            torch_code(A, None, state, None, batches),
            name,
        )
        B, _, _ = hop_sample(8, copies=3, n=50, C=80)
        assert_same(
            fr.first_reached(B, None, grown, None, batches),
            torch_code(B, None, grown, None, batches),
            f"after {name}",
        )
    wide = CSC(num_nodes=A.num_nodes, indptr=A.indptr, rows=A.rows + 1000, col_ids=A.col_ids)
    assert declined(wide, grown, batches, monkeypatch), "rows out of range"
    narrow = CSC(
        num_nodes=A.num_nodes, indptr=A.indptr, rows=A.rows.to(torch.int32), col_ids=A.col_ids
    )
    assert declined(narrow, grown, batches, monkeypatch), "int32 rows"


def test_switches_turn_it_off(monkeypatch):
    A, _, _ = hop_sample(3)
    slots = fr.slot_space(1, A.num_nodes)
    assert reached_native.first_reached(A, None, 1, A.num_nodes, slots) is not None
    monkeypatch.setenv("GSAMPLE_NATIVE_CPU", "0")
    assert reached_native.first_reached(A, None, 1, A.num_nodes, slots) is None
    monkeypatch.delenv("GSAMPLE_NATIVE_CPU")
    monkeypatch.setattr(reached_native, "ENABLED", False)
    assert reached_native.first_reached(A, None, 1, A.num_nodes, slots) is None
