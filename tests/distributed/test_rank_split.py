"""Each rank's share of an epoch (gsample.distributed.split), in one process: a loader given
``rank`` and ``world_size`` yields what that rank of a distributed run yields, so the ranks'
mini-batches together are the single-process epoch, sample for sample."""

import functools
import math

import pytest
import torch
from helpers import assert_same, graphsage

import gsample as gs
from gsample.distributed import rank_batches, resolve_ranks


@pytest.mark.parametrize("world", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("batches", [0, 1, 3, 7, 10, 12])
def test_ranks_get_equal_shares_that_cover_the_epoch(batches, world):
    shares = [
        [first + j for first, n in rank_batches(batches, r, world) for j in range(n)]
        for r in range(world)
    ]
    per = math.ceil(batches / world) if batches else 0
    assert all(len(s) == per for s in shares)  # ranks step together
    assert sorted(set(i for s in shares for i in s)) == list(range(batches))
    flat = [i for s in shares for i in s]
    # the padded epoch, as DistributedSampler pads: the epoch, then its beginning again
    assert flat == [i % batches for i in range(per * world)] if batches else flat == []


def loader_batches(A, sampler, seeds, **kw):
    return [(b.index, b.out) for b in gs.DataLoader(A, sampler, seeds, 40, seed=3, **kw)]


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("super_batch", [None, 2])
def test_the_ranks_together_sample_the_single_process_epoch(small_graph, world, super_batch):
    sampler = functools.partial(gs.compile(graphsage), fanouts=(5, 3))
    seeds = torch.arange(0, 2000, 7)  # 286 seeds: 8 mini-batches
    single = dict(loader_batches(small_graph, sampler, seeds))
    seen = {}
    for rank in range(world):
        mine = loader_batches(
            small_graph, sampler, seeds, rank=rank, world_size=world, super_batch=super_batch
        )
        assert len(mine) == math.ceil(len(single) / world)
        for index, out in mine:
            assert_same(out, single[index], f"rank {rank}, mini-batch {index}")
            seen[index] = out
    assert sorted(seen) == sorted(single)


def test_len_is_the_ranks_share(small_graph):
    seeds = torch.arange(0, 2000, 7)
    one = gs.DataLoader(small_graph, graphsage, seeds, 40)
    assert (len(one), one.num_batches) == (8, 8)
    three = gs.DataLoader(small_graph, graphsage, seeds, 40, rank=2, world_size=3)
    assert (len(three), three.num_batches) == (3, 8)
    assert [b.index for b in three] == [6, 7, 0]  # padded with the first one


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"rank": 0}, ValueError, "rank, world_size: give both"),
        ({"world_size": 2}, ValueError, "rank, world_size: give both"),
        ({"rank": 2, "world_size": 2}, ValueError, "rank: must be in"),
        ({"rank": -1, "world_size": 2}, ValueError, "rank: must be in"),
        ({"rank": 0, "world_size": 0}, ValueError, "world_size: must be >= 1"),
        ({"rank": 0.5, "world_size": 2}, TypeError, "rank: must be an int"),
        ({"rank": 0, "world_size": True}, TypeError, "world_size: must be an int"),
        ({"distributed": 1}, TypeError, "distributed: must be True or False"),
        ({"distributed": True}, RuntimeError, "distributed: torch.distributed is not initialised"),
    ],
)
def test_bad_rank_arguments_are_named(small_graph, kwargs, error, match):
    with pytest.raises(error, match=match):
        gs.DataLoader(small_graph, graphsage, torch.arange(10), 4, **kwargs)


def test_distributed_takes_explicit_ranks_without_an_initialised_group():
    assert resolve_ranks(True, 1, 4) == (1, 4)
    assert resolve_ranks(False, None, None) == (0, 1)
