"""gsample.base.seed_parts.SeedParts: the loader's mini-batches of seeds, made lazily, behave
as the list of views they replace; a super-batch encodes them without a copy."""

import functools

import pytest
import torch
from helpers import assert_same, example, graphsage

import gsample as gs
from gsample.base import random as random_module
from gsample.base.random import frontier_ptr, keep_sizes
from gsample.base.seed_parts import SeedParts
from gsample.formats.derived import COLUMNS, recall
from gsample.runtime import block_diagonal
from gsample.runtime.program import finish
from gsample.runtime.super_batcher import SuperBatcher, _at_first_pause


@pytest.mark.parametrize(
    "S, B, count", [(10, 4, None), (12, 4, None), (10, 4, 2), (1, 5, None), (0, 3, None), (9, 1, 7)]
)
def test_it_is_the_list_of_views_it_replaces(S, B, count):
    order = torch.randperm(max(S, 1), generator=torch.Generator().manual_seed(S))[:S]
    # (as the loader cuts them: ceil(S / B) mini-batches, none of no seeds)
    want = list(order.split(B))[: -(-S // B) if count is None else count]
    parts = SeedParts(order, B, count)
    assert len(parts) == len(want)
    assert [p.tolist() for p in parts] == [w.tolist() for w in want]
    assert parts.sizes() == [w.numel() for w in want]
    for i in range(-len(want), len(want)):
        assert torch.equal(parts[i], want[i])
    for a, b in [(0, None), (1, 3), (2, 100), (-2, None), (3, 1), (None, -1)]:
        got, ref = parts[a:b], want[a:b]
        assert isinstance(got, SeedParts) and len(got) == len(ref)
        assert [p.tolist() for p in got] == [w.tolist() for w in ref]
        joined = got.joined()
        assert joined.tolist() == (torch.cat(ref).tolist() if ref else [])
        if joined.numel():  # a view of the epoch's tensor, not a copy
            assert joined.data_ptr() == order[got.lo * B :].data_ptr()
    assert [p.tolist() for p in parts[::2]] == [w.tolist() for w in want[::2]]
    for i in (len(want), -len(want) - 1):
        with pytest.raises(IndexError):
            parts[i]


def test_each_view_is_made_once_and_shared_by_slices():
    parts = SeedParts(torch.arange(20), 3)
    first, fourth = parts[0], parts[3]  # made one at a time ...
    assert parts[0] is first and parts[1:5][2] is fourth
    block = parts[2:6]
    block.materialize()  # ... then the rest of a range in one call, the earlier ones kept
    assert list(block)[1] is fourth and block[0] is parts[2]
    assert all(a is b for a, b in zip(parts[2:6], block))
    assert parts._views[6] is None  # nothing outside the range was made


@pytest.mark.parametrize("S, B, count", [(10, 4, None), (12, 4, None), (10, 4, 2), (9, 1, 7)])
def test_materialize_makes_the_views_a_split_makes(S, B, count):
    """``materialize``'s views are those of ``flat.split(size)``, view for view: the same
    base, offset, shape and strides (a 2-D ``flat`` too)."""
    for flat in (torch.arange(S), torch.arange(2 * S).view(S, 2), torch.arange(S + 3)[3:]):
        parts = SeedParts(flat, B, count)
        parts.materialize()
        want = list(flat.split(B))[: len(parts)]
        for got, w in zip(parts._views, want, strict=True):
            assert got._base is w._base and got._base is not None
            assert got.storage_offset() == w.storage_offset()
            assert got.shape == w.shape and got.stride() == w.stride()


def test_a_super_batch_encodes_the_parts_as_the_list_without_a_copy():
    A = gs.datasets.rmat(200, 2000, seed=1)
    seeds = torch.randperm(200, generator=torch.Generator().manual_seed(2))[:70]

    def walk(A, seeds):
        return A.random_walk(seeds, 3)

    sb = gs.compile(walk).super_batched((A, seeds[:16]), seeds="seeds")
    assert isinstance(sb, SuperBatcher)
    for count in (4, 5):  # five: the epoch's short last mini-batch (6 seeds) too
        parts = SeedParts(seeds, 16, count)
        got = sb._encode(parts)
        assert torch.equal(got, sb._encode([p.clone() for p in parts]))
        want = [int(s) + (i // 16) * 200 for i, s in enumerate(seeds[: got.numel()])]
        assert got.tolist() == want


def test_run_does_the_host_work_it_is_given_once():
    A = gs.datasets.rmat(200, 2000, seed=1)
    seeds = torch.arange(64)

    def walk(A, seeds):
        return A.random_walk(seeds, 3)

    sb = gs.compile(walk).super_batched((A, seeds[:16]), seeds="seeds")
    parts = SeedParts(seeds, 16)
    calls = []
    outs = sb.run(parts, 7, 0, meanwhile=lambda: calls.append(sum(v is None for v in parts._views)))
    assert calls == [4]  # once, before the views were made
    assert [o.tolist() for o in outs] == [o.tolist() for o in sb.run(list(parts), 7, 0)]


@pytest.mark.parametrize("world, rank", [(1, 0), (3, 2)])
@pytest.mark.parametrize("drop_last", [False, True])
def test_a_super_batched_epoch_hands_out_the_epoch_s_own_views(world, rank, drop_last):
    """Each Batch.seeds is a view of the epoch's seeds (no copy), the object its blocks'
    columns were bound to, and the same samples as one by one: with the padding of a rank's
    share wrapping around to mini-batch 0 and with drop_last."""
    A = gs.datasets.rmat(2000, 20000, seed=1)
    sampler = functools.partial(gs.compile(graphsage), fanouts=(5, 3))
    seeds = torch.arange(0, 2000, 7)[:-6]  # 280 seeds: 7 mini-batches of 40 ...
    seeds = torch.cat([seeds, torch.tensor([1, 2, 3])])  # ... and a short one of 3
    kw = dict(seed=3, shuffle=True, drop_last=drop_last, rank=rank, world_size=world)
    alone = {b.index: b for b in gs.DataLoader(A, sampler, seeds, 40, **kw)}
    got = list(gs.DataLoader(A, sampler, seeds, 40, super_batch=3, **kw))
    assert [b.index for b in got] == list(alone)
    base = None
    for b in got:
        assert torch.equal(b.seeds, alone[b.index].seeds)
        assert_same(b.out, alone[b.index].out, f"mini-batch {b.index}")
        assert recall(b.out[0].csc, COLUMNS) is b.seeds
        base = base or b.seeds.untyped_storage().data_ptr()
        assert b.seeds.untyped_storage().data_ptr() == base  # one epoch tensor
        assert b.seeds.storage_offset() == 40 * b.index


def test_host_work_that_raises_closes_the_paused_run():
    """A ``meanwhile`` that raises leaves no run suspended (it would hold a program lane)."""
    closed = []

    def paused_run():
        try:
            yield  # the device working
            return "outs"
        finally:
            closed.append(True)

    def fails():
        raise RuntimeError("host work")

    try:
        finish(_at_first_pause(paused_run(), fails))
    except RuntimeError as error:  # (closed now, not when the traceback's frames are freed)
        assert str(error) == "host work" and closed == [True]
    else:
        pytest.fail("the host work's error was lost")
    assert finish(_at_first_pause(paused_run(), lambda: None)) == "outs"


def _count_batch_ptr(monkeypatch) -> list:
    """The calls of ``batch_ptr`` (the read-back of a super-batch's ids) from here on."""
    calls = []
    real = random_module.batch_ptr

    def counted(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(random_module, "batch_ptr", counted)
    monkeypatch.setattr(block_diagonal, "batch_ptr", counted)
    return calls


def test_a_super_batch_of_walks_splits_by_the_seeds_sizes_reading_nothing_back(monkeypatch):
    """The encoded seeds keep their mini-batches' sizes (``keep_sizes``): the walk and the
    split of its rows by mini-batch take them from the host (``frontier_ptr``), not from a
    read-back of the ids (``batch_ptr``); the samples are one by one's, the short last
    mini-batch included."""
    A = gs.datasets.rmat(300, 3000, seed=4)
    seeds = torch.randperm(300, generator=torch.Generator().manual_seed(5))[:70]

    def walk(A, seeds):
        return A.random_walk(seeds, 6)

    fn = gs.compile(walk)
    alone = list(gs.DataLoader(A, fn, seeds, 16, seed=2))
    calls = _count_batch_ptr(monkeypatch)
    got = list(gs.DataLoader(A, fn, seeds, 16, seed=2, super_batch=4))
    assert calls == []
    assert [b.index for b in got] == [b.index for b in alone]
    for a, b in zip(got, alone, strict=True):
        assert torch.equal(a.out, b.out), a.index


def _walk_with_restarts(A, seeds):
    return A.random_walk(seeds, 6, restart_prob=0.3, stop_prob=0.1)


def test_frontier_ptr_reads_back_where_the_sizes_do_not_fit_the_ids():
    ids = torch.tensor([1, 2, 10, 11, 12])
    assert frontier_ptr(ids, 10, 2) == [0, 2, 5]  # nothing kept: read from the ids
    assert frontier_ptr(keep_sizes(ids.clone(), [2, 3]), 10, 2) == [0, 2, 5]
    wrong = keep_sizes(ids.clone(), [1, 1])  # sizes of other ids: not trusted
    assert frontier_ptr(wrong, 10, 2) == [0, 2, 5]
    assert frontier_ptr(keep_sizes(ids.clone(), [5]), 10, 2) == [0, 2, 5]
    kept = keep_sizes(ids, [2, 3])
    assert "_gsample_batch_sizes" not in kept[1:].__dict__  # a view keeps nothing


def _mh_walk(A, seeds):
    return gs.walk(example("metropolis_hastings").mh_step, A, seeds, 5)


@pytest.mark.parametrize("fn", [_walk_with_restarts, _mh_walk], ids=["random_walk", "fused"])
def test_a_super_batch_of_unequal_mini_batches_splits_by_their_sizes(monkeypatch, fn):
    """A super-batch holding the short last mini-batch (and, run by hand, empty ones): the
    sizes kept are each mini-batch's, in order (a uniform super-batch cannot tell them from
    any other sizes of the same sum), and nothing is read back to split the walks."""
    A = gs.datasets.rmat(300, 3000, seed=4)
    seeds = torch.randperm(300, generator=torch.Generator().manual_seed(5))[:70]
    alone = [b.out for b in gs.DataLoader(A, fn, seeds, 16, shuffle=False, seed=2)]
    calls = _count_batch_ptr(monkeypatch)
    loader = gs.DataLoader(A, gs.compile(fn), seeds, 16, shuffle=False, seed=2, super_batch=5)
    got = [b.out for b in loader]  # one super-batch: 16, 16, 16, 16 and 6 seeds
    assert calls == []
    assert_same(got, alone)
    sb = gs.compile(fn).super_batched((A, seeds[:16]), seeds="seeds")
    parts = [seeds[:16], seeds[:0], seeds[16:26], seeds[:0], seeds[26:29]]
    outs = sb.run(parts, 3, 0)
    assert calls == []
    for b, p in enumerate(parts):
        assert_same(outs[b], sb.run([p], 3, b)[0], f"mini-batch {b}")
