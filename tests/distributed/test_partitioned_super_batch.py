"""Super-batching on a partitioned graph (``gs.DataLoader(P, sampler, seeds, B,
super_batch=N)``, :mod:`gsample.distributed.partition_batches`) with 2 gloo processes.

9 mini-batches (the last one partial) give each rank 5 (rank 1's: 5, 6, 7, 8 and 0, the
padding's wrap-around), so N = 2 samples rounds of 2, 2, 1 and N = 3 rounds of 3, 2 (rank 1's
second round: mini-batches 8 and 0). Every mini-batch equals the single-process epoch's, bit
for bit, for node-wise sampling (uniform, weighted: by the owners, by the requesting rank's
running sums, a tensor computed per mini-batch), walks (uniform, weighted, node2vec with
teleports) and per-batch torch code; a sampler that cannot be super-batched there raises a
ValueError naming super_batch on every rank, and a check failing on one rank's data raises
on both (the mini-batch's own error, re-sampled one by one); both ranks go on after each (no
rank is left in a collective: the worker's later collectives would time out).
"""

import datetime
import functools
import math
import re

import pytest
import torch
import torch.distributed as dist
from helpers import assert_same, spawn_ranks
from test_distributed_sampling import SAMPLERS, SEEDS, _error, graph

import gsample as gs

BATCH = 40  # 350 seeds: 9 mini-batches, the last of 30
SIZES = (2, 3)
NAMES = (
    "graphsage",
    "graphsage compiled",
    "with replacement",
    "weighted",
    "weighted with replacement",
    "weighted alias",
    "weighted tensor",
    "weighted tensor with replacement",
    "deepwalk",
    "weighted walk, tensor",
    "weighted node2vec with teleports",
)


def edge_code(A, seeds):
    """Per-batch torch code, unpacking and a random op on each mini-batch's sample (its own
    stream: its index, its op ordinal) between the partitioned operators."""
    s = A[:, seeds].individual_sample(4)
    rows, cols, eids = s.individual_sample(2, replace=True).edges()
    nodes = s.all_nodes().clone()
    nodes[0] = seeds[-1]
    nodes += 0
    walks = A.random_walk(torch.cat([seeds, nodes[:3]]), 3)
    (n,) = rows.shape
    return [s, rows * 2, torch.unique(cols, return_inverse=True), eids.sum(), n, walks]


def walk_weights(A, seeds, w):
    return A.random_walk(seeds, 5, probs=w)


def branching(A, seeds):  # Python control flow on a sampled value
    s = A[:, seeds].individual_sample(3)
    if s.all_nodes().numel() > 100:
        s = A[:, s.all_nodes()].individual_sample(2)
    return s


def fanout_per_batch(A, seeds):
    return A[:, seeds].individual_sample(seeds.numel() // 10)


def shared_mask(A, seeds):  # writes each mini-batch into one tensor
    mask = torch.zeros(A.num_nodes, dtype=torch.bool)
    mask[seeds] = True
    return A[:, mask.nonzero().squeeze(1)].individual_sample(3)


def keyed_by_seeds(A, seeds):  # a per-batch value as a dict key
    return {seeds: A[:, seeds].individual_sample(3)}


def negative_in_one_batch(A, seeds):  # one rank's data fails a check of the round
    sub = A[:, seeds]
    bad = (seeds == 698).any().double() * 1e3
    return sub.individual_sample(3, probs=sub.values - bad)


def collective(A, seeds):
    return A[:, seeds].collective_sample(3)


CODE = {
    "edge code": edge_code,  # walk weights: a tensor given to the sampler
    "walk weights": functools.partial(
        walk_weights, w=1.0 + (torch.arange(graph().num_edges) % 3).double()
    ),
}


def _epoch(G, sampler, **kw):
    loader = gs.DataLoader(G, sampler, SEEDS, BATCH, seed=0, **kw)
    return len(loader), [(b.index, b.out) for b in loader]


def _worker(rank, world, url, out):
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=url, rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60)
    )
    try:
        P = gs.distributed.place(graph() if rank == 0 else None, "partitioned")
        res = {}
        for N in SIZES:
            for name in NAMES:
                res[name, N] = _epoch(P, SAMPLERS[name], super_batch=N)
            res["edge code", N] = _epoch(P, edge_code, super_batch=N)
        res["walk weights", 3] = _epoch(P, CODE["walk weights"], super_batch=3, fixed_state=True)
        res["graphsage", "N = 1"] = _epoch(P, SAMPLERS["graphsage"], super_batch=1)
        res["errors"] = {
            "branching": _error(lambda: _epoch(P, branching, super_batch=2)),
            "fanout per batch": _error(lambda: _epoch(P, fanout_per_batch, super_batch=3)),
            "shared mask": _error(lambda: _epoch(P, shared_mask, super_batch=2)),
            "keyed by seeds": _error(lambda: _epoch(P, keyed_by_seeds, super_batch=3)),
            "collective": _error(lambda: _epoch(P, collective, super_batch=2)),
            "negative in one batch": _error(
                lambda: _epoch(P, negative_in_one_batch, super_batch=3)
            ),
            "auto": _error(lambda: gs.DataLoader(P, graph, SEEDS, BATCH, super_batch="auto")),
            "state": _error(
                lambda: gs.DataLoader(P, CODE["walk weights"], SEEDS, BATCH, super_batch=2)
            ),
            "N differs": _error(
                lambda: gs.DataLoader(P, graph, SEEDS, BATCH, super_batch=2 + rank)
            ),
            "seeds differ": _error(
                lambda: gs.DataLoader(P, graph, SEEDS[: 200 + 100 * rank], BATCH, super_batch=2)
            ),
        }
        # every rank went on: one more round together
        res["after errors"] = _epoch(P, SAMPLERS["graphsage"], super_batch=2)
        torch.save(res, f"{out}/rank{rank}.pt")
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return spawn_ranks(_worker, tmp_path_factory.mktemp("partitioned_super_batch"))


@functools.cache
def _single(name):
    """The single-process epoch of a sampler (one by one, replicated graph)."""
    sampler = SAMPLERS[name] if name in SAMPLERS else CODE[name]
    return dict(_epoch(graph(), sampler)[1])


def _union(ranks, key, reference):
    seen = {}
    for r, res in enumerate(ranks):
        length, batches = res[key]
        assert length == len(batches) == math.ceil(len(reference) / 2) == 5
        for index, out in batches:
            assert_same(out, reference[index], f"{key}, rank {r}, mini-batch {index}")
            seen[index] = out
    assert sorted(seen) == sorted(reference) == list(range(9))


@pytest.mark.parametrize("N", SIZES)
@pytest.mark.parametrize("name", NAMES + ("edge code",))
def test_super_batches_sample_the_single_process_epoch(ranks, name, N):
    _union(ranks, (name, N), _single(name))


def test_wrapped_rounds_fixed_state_and_rounds_of_one(ranks):
    assert [i for i, _ in ranks[1]["graphsage", 3][1]] == [5, 6, 7, 8, 0]
    _union(ranks, ("walk weights", 3), _single("walk weights"))
    _union(ranks, ("graphsage", "N = 1"), _single("graphsage"))
    _union(ranks, "after errors", _single("graphsage"))


@pytest.mark.parametrize(
    "what, error, match",
    [
        ("branching", "ValueError", r"super_batch: bool\(\) of a per-batch value"),
        ("fanout per batch", "ValueError", "super_batch: k: one value per mini-batch"),
        (
            "shared mask",
            "ValueError",
            "super_batch: __setitem__: writes one value per mini-batch "
            "in place into a tensor the mini-batches share",
        ),
        (
            "keyed by seeds",
            "ValueError",
            "super_batch: mini-batches (0, 1, 2|5, 6, 7) sample one by "
            "one but not in one round on a partitioned graph "
            r"\(TypeError: unhashable type: 'PerBatch'\)",
        ),
        # an operator the partitioned graph does not run: its own error, as one by one
        ("collective", "NotImplementedError", "collective_sample: not supported on a partitioned"),
        # agreed by the ranks in the round, then re-sampled one by one: the mini-batch's error
        ("negative in one batch", "ValueError", "probs: contains negative values"),
        ("auto", "ValueError", "super_batch: 'auto' is not supported on a partitioned graph"),
        ("state", "ValueError", "super_batch: the sampler is given tensors .*fixed_state=True"),
        (
            "N differs",
            "ValueError",
            "super_batch: the ranks of a partitioned graph must give the "
            "same super_batch, got values from 2 to 3",
        ),
        (
            "seeds differ",
            "ValueError",
            "seeds: the ranks of a partitioned graph must give the same seeds",
        ),
    ],
)
def test_what_cannot_be_super_batched_raises_on_every_rank(ranks, what, error, match):
    for res in ranks:
        got = res["errors"][what]
        assert got is not None, f"{what}: no error"
        assert got[0] == error and re.search(match, got[1]), got
