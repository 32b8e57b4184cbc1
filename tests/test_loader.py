"""gs.DataLoader: order, sizes, shuffling, and the batch index in every random key."""

import functools

import torch
from helpers import assert_same, graphsage

import gsample as gs
from gsample.base.random import batch_scope, combine


def sage(A, seeds):
    s = A[:, seeds].individual_sample(5)
    return s.edges()[2], s.all_nodes()


def test_batches_in_order_with_sizes(small_graph):
    seeds = torch.arange(100, 1100)
    loader = gs.DataLoader(small_graph, sage, seeds, batch_size=300, shuffle=False, seed=0)
    batches = list(loader)
    assert len(loader) == len(batches) == 4
    assert [b.index for b in batches] == [0, 1, 2, 3]
    assert [b.seeds.numel() for b in batches] == [300, 300, 300, 100]
    assert torch.equal(torch.cat([b.seeds for b in batches]), seeds)
    for b in batches:
        assert torch.equal(b.out[1][: b.seeds.numel()], b.seeds)  # seeds lead all_nodes
    dropped = gs.DataLoader(small_graph, sage, seeds, batch_size=300, drop_last=True, seed=0)
    assert len(dropped) == len(list(dropped)) == 3


def test_shuffle_is_a_reproducible_permutation(small_graph):
    seeds = torch.arange(0, 2000, 3)
    a = gs.DataLoader(small_graph, sage, seeds, batch_size=64, seed=1)
    order = [torch.cat([b.seeds for b in a]) for _ in range(2)]
    for o in order:
        assert torch.equal(torch.sort(o).values, seeds)
    assert not torch.equal(order[0], seeds)
    assert not torch.equal(order[0], order[1]), "each epoch reshuffles"
    b = gs.DataLoader(small_graph, sage, seeds, batch_size=64, seed=1)
    assert torch.equal(torch.cat([x.seeds for x in b]), order[0])


def test_shuffle_order_is_the_stable_sort_of_the_epoch_s_hash(small_graph):
    """Epoch ``e`` of a loader with ``seed=s`` orders its seeds by the stable sort of
    ``combine(combine(epoch_seed, -1), i) >> 1`` with ``epoch_seed = combine(combine(0, s), e)``
    (computed here with Python ints): the order every earlier release gave, whichever code
    makes the keys (the torch ops, or the CUDA backend's kernel)."""
    seeds = torch.arange(0, 2000, 3)
    for s in (1, (1 << 64) - 1):
        loader = gs.DataLoader(small_graph, sage, seeds, batch_size=64, seed=s)
        for epoch in range(2):
            got = torch.cat([b.seeds for b in loader])
            h = combine(combine(combine(0, s), epoch), -1)
            keys = [combine(h, i) >> 1 for i in range(seeds.numel())]
            want = sorted(range(seeds.numel()), key=lambda i: (keys[i], i))
            assert torch.equal(got, seeds[want])


def test_batch_depends_only_on_epoch_seed_index_and_seeds(small_graph):
    seeds = torch.arange(0, 1000)
    loader = gs.DataLoader(small_graph, sage, seeds, batch_size=100, shuffle=False, seed=3)
    batches = list(loader)
    epoch0 = combine(combine(0, 3), 0)
    for i in (0, 4, 9):
        with batch_scope(epoch0, i):
            eids, _ = sage(small_graph, batches[i].seeds)
        assert torch.equal(eids, batches[i].out[0])
    # same seeds at another batch index: other samples
    with batch_scope(epoch0, 1):
        eids, _ = sage(small_graph, batches[0].seeds)
    assert not torch.equal(eids, batches[0].out[0])


def test_default_seed_follows_manual_seed(small_graph):
    seeds = torch.arange(500)

    def run():
        return [b.out[0] for b in gs.DataLoader(small_graph, sage, seeds, batch_size=128)]

    gs.manual_seed(11)
    first, second = run(), run()
    gs.manual_seed(11)
    again = run()
    assert all(torch.equal(x, y) for x, y in zip(first, again))
    assert not all(torch.equal(x, y) for x, y in zip(first, second))


def test_progress_bar(small_graph, capsys):
    list(gs.DataLoader(small_graph, sage, torch.arange(64), batch_size=16, progress=True, seed=0))
    assert "4/4" in capsys.readouterr().err


def test_rows_gathered_by_any_path_are_the_same_batches(small_graph):
    """With tables, a compiled sampler samples one at a time through its gathering variant
    (its program computes n_id) and super-batched through itself; pipelined or not, every
    batch (blocks, n_id, x, y) is the eager sampler's, bit for bit."""
    X, y = torch.randn(2000, 4, generator=torch.Generator().manual_seed(0)), torch.arange(2000)

    def run(sampler, **options):
        return list(
            gs.DataLoader(
                small_graph,
                functools.partial(sampler, fanouts=(5, 3)),
                torch.arange(0, 2000, 3),
                100,
                seed=7,
                features=X,
                labels=y,
                **options,
            )
        )

    ref = run(graphsage, pipeline=False)
    assert len(ref) == 7
    compiled = gs.compile(graphsage)
    for options in ({}, {"pipeline": False}, {"super_batch": 3}):
        got = run(compiled, **options)
        for r, g in zip(ref, got, strict=True):
            assert r.index == g.index and torch.equal(r.seeds, g.seeds)
            assert_same(r.out, g.out, f"{options} batch {r.index}")
            for name in ("n_id", "x", "y"):
                assert torch.equal(getattr(r, name), getattr(g, name)), (options, name)
