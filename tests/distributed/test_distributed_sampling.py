"""gsample.distributed with 2 gloo processes on the CPU (torch.multiprocessing.spawn).

One spawn runs everything (``_worker``) and saves what each rank sampled; the tests compare it
with one process. Under every placement (replicated, shared memory, partitioned; the graph
given on rank 0 only, or on every rank) the ranks' mini-batches of an epoch are the
single-process epoch, sample for sample: node-wise sampling with and without replacement
(weighted edges, so values travel too), uniform and weighted (by the edge values, an edge map
of them, a tensor computed from ``sub.values``; exponential keys, inverse CDF, alias tables),
compiled and eager, super-batched, and walks with and without stop / restart / jump,
weighted (the graph's values, a tensor) and node2vec. Bad arguments raise clear errors on
every rank, also when only one rank's probabilities are bad.
"""

import datetime
import functools
import math

import pytest
import torch
import torch.distributed as dist
from helpers import assert_same, graphsage, spawn_ranks

import gsample as gs

N, E, BATCH = 700, 9000, 48
SEEDS = torch.arange(0, N, 2)  # 350 seeds: 8 mini-batches, 4 per rank
PLACEMENTS = ("replicated", "shared", "partitioned")
VALUE_COLS = torch.tensor([5, 699, 0, 350, 5, 12])  # both ranks' columns, a repeat


def graph():
    return gs.datasets.rmat(N, E, seed=5, weighted=True)


def sage(A, seeds, fanouts=(6, 3), replace=False):
    return graphsage(A, seeds, fanouts, replace)


def deepwalk(A, seeds):
    return A.random_walk(seeds, 7)


def teleporting_walk(A, seeds):
    return A.random_walk(seeds, 7, stop_prob=0.1, restart_prob=0.05, jump_prob=0.05)


def weighted(A, seeds, fanouts=(6, 3), replace=False, probs=lambda sub: sub, method="cdf"):
    """examples/weighted_neighbors.py, ``probs`` made from each layer's slice."""
    blocks = []
    for k in fanouts:
        sub = A[:, seeds]
        s = sub.individual_sample(k, probs=probs(sub), replace=replace, method=method)
        blocks.append(s)
        seeds = s.all_nodes()
    return blocks


def weighted_with_replacement(A, seeds):
    return weighted(A, seeds, replace=True)


def edge_tensor(sub):
    return torch.sqrt(sub.values) + (sub.values > 2).to(sub.values.dtype)


def weighted_walk(A, seeds):
    return A.random_walk(seeds, 7, probs=A)


def tensor_walk(A, seeds):
    return A.random_walk(seeds, 7, probs=1.0 + (torch.arange(A.num_edges) % 5).double())


def node2vec(A, seeds):
    return A.random_walk(seeds, 7, p=2.0, q=0.5)


def teleporting_node2vec(A, seeds):
    return A.random_walk(
        seeds, 7, probs=A, p=0.5, q=2.0, stop_prob=0.05, restart_prob=0.05, jump_prob=0.05
    )


SAMPLERS = {
    "graphsage": sage,
    "graphsage compiled": gs.compile(sage),
    "with replacement": functools.partial(sage, replace=True),
    "deepwalk": deepwalk,
    "teleporting walk": teleporting_walk,
    # weighted node-wise: drawn by the owners (exponential keys, alias tables) or here
    "weighted": weighted,
    "weighted, squared": functools.partial(weighted, probs=lambda sub: sub**2),
    "weighted with replacement": functools.partial(weighted, replace=True),
    "weighted alias": functools.partial(
        weighted, replace=True, method="alias", probs=lambda sub: 2 * sub + 1
    ),
    "weighted tensor": functools.partial(weighted, probs=edge_tensor),
    "weighted tensor with replacement": functools.partial(
        weighted, probs=edge_tensor, replace=True
    ),
    "weighted compiled": gs.compile(weighted_with_replacement),
    # weighted and second-order walks
    "weighted walk": weighted_walk,
    "weighted walk, tensor": tensor_walk,
    "node2vec": node2vec,
    "weighted node2vec with teleports": teleporting_node2vec,
}


def _epoch(G, sampler, **kw):
    loader = gs.DataLoader(G, sampler, SEEDS, BATCH, seed=0, **kw)
    return len(loader), [(b.index, b.out) for b in loader]


# ----------------------------------------------------------------------------- empty frontiers
# tests/test_empty_frontier.py's forest of small in-trees (edge ``e``: SRC[e] -> DST[e]): in
# mini-batches of 2 of FOREST_SEEDS, [8, 9] and [12, 6] reach no new node at hop 1, [7, 0] at
# hop 2, [3, 4] at hop 3; the hops after sample an empty frontier
FOREST_SRC = [1, 2, 3, 6, 5, 9, 8, 11, 10, 12]
FOREST_DST = [0, 0, 0, 5, 4, 8, 9, 10, 11, 10]
FOREST_SEEDS = torch.tensor([8, 9, 7, 0, 1, 2, 12, 6, 3, 4])
MIXED_COLS = ([0, 10, 4], [])  # rank 0's frontier, rank 1's (empty)


def forest():
    w = torch.tensor([1.0, 2.0, 3.0, 1.0, 2.0, 1.0, 4.0, 2.0, 1.0, 3.0])
    return gs.Matrix.from_edge_index(torch.tensor([FOREST_SRC, FOREST_DST]), num_nodes=13, weight=w)


def new_node_hops(A, seeds, fanouts=(2, 2, 2), replace=False, probs=None, walk=None):
    """Each hop samples the nodes the previous one reached first (PyG's frontier), so a hop
    that reaches nothing new leaves the next an empty frontier; then walks from the last
    frontier (often of no seed) and a draw from the seeds, whose keys are the single-process
    ones only if every empty op took its op ordinal."""
    blocks, frontier = [], seeds
    for k in fanouts:
        sub = A[:, frontier]
        s = sub.individual_sample(k, replace=replace, probs=None if probs is None else probs(sub))
        blocks.append(s)
        nodes = s.all_nodes()
        frontier = nodes[~torch.isin(nodes, frontier)]
    walks = A.random_walk(frontier, 3, **({} if walk is None else walk(A)))
    return blocks, walks, A[:, seeds].individual_sample(1)


EMPTY_SAMPLERS = {
    "uniform": new_node_hops,
    "with replacement, node2vec": functools.partial(
        new_node_hops, replace=True, walk=lambda A: {"p": 2.0, "q": 0.5}
    ),
    # by the owners (exponential keys), then weighted walks (alias tables)
    "weighted": functools.partial(
        new_node_hops, probs=lambda sub: sub, walk=lambda A: {"probs": A}
    ),
    # drawn here (inverse CDF of a tensor): the frontier's degrees and values fetched
    "weighted tensor with replacement": functools.partial(
        new_node_hops, replace=True, probs=lambda sub: sub.values + 1.0
    ),
}


def _forest_epoch(G, sampler, **kw):
    loader = gs.DataLoader(G, sampler, FOREST_SEEDS, 2, seed=0, **kw)
    return len(loader), [(b.index, b.out) for b in loader]


def mixed_frontiers(A, cols):
    """Eager operators on a frontier that is empty on one rank only, then on every rank."""
    sub = A[:, cols]
    return (
        sub.individual_sample(2),
        sub.individual_sample(2, probs=sub, replace=True, method="alias"),
        sub.individual_sample(1, probs=sub.values * 2, replace=True),
        (sub**2).values,
        A.random_walk(cols, 3, p=2.0, q=0.5),
        A[:, []].individual_sample(3),
        A.random_walk([], 2, probs=A),
        A[:, cols].individual_sample(1),
    )


def _error(call):
    try:
        call()
    except Exception as e:
        return type(e).__name__, str(e)
    return None


def _worker(rank, world, url, out):
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=url, rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60)
    )
    try:
        A = graph() if rank == 0 else None
        res = {}
        for placement in PLACEMENTS:
            G = gs.distributed.place(A, placement)
            res[placement, "placement"] = G.placement
            for name, sampler in SAMPLERS.items():
                res[placement, name] = _epoch(G, sampler, distributed=True)
        own = graph()  # every rank gives the graph
        for placement in ("replicated", "partitioned"):
            G = gs.distributed.place(own, placement)
            res[placement + ", own graph", "graphsage"] = _epoch(G, sage, distributed=True)
        G = gs.distributed.place(own, "replicated")
        res["replicated", "super-batched"] = _epoch(
            G, SAMPLERS["graphsage compiled"], distributed=True, super_batch=2
        )
        res["auto", "large budget"] = gs.distributed.place(A, budget=1 << 40).placement
        res["auto", "small budget"] = gs.distributed.place(A, budget=1 << 10).placement
        # empty frontiers: hops that reach no new node, on one rank or both
        F = forest() if rank == 0 else None
        for placement in PLACEMENTS:
            G = gs.distributed.place(F, placement)
            for name, sampler in EMPTY_SAMPLERS.items():
                res["empty", placement, name] = _forest_epoch(G, sampler, distributed=True)
        G = gs.distributed.place(F, "partitioned")
        for name in ("uniform", "weighted"):
            res["empty", "partitioned, super-batched", name] = _forest_epoch(
                G, EMPTY_SAMPLERS[name], distributed=True, super_batch=2
            )
        gs.manual_seed(3)
        res["empty", "mixed"] = mixed_frontiers(G, MIXED_COLS[rank])
        P = gs.distributed.place(A, "partitioned")
        res["values"] = (P[:, VALUE_COLS] ** 2).values  # fetched from the owners
        few = SEEDS[:4]
        sub = P[:, few]
        bad_here = sub.values.clone()
        if rank == 1:
            bad_here[0] = -1.0
        res["errors"] = {
            "probs shape": _error(lambda: sub.individual_sample(3, probs=torch.ones(E))),
            "probs zero": _error(lambda: sub.individual_sample(3, probs=sub * 0)),
            "probs zero tensor": _error(
                lambda: sub.individual_sample(3, probs=torch.zeros_like(sub.values))
            ),
            "probs bad on rank 1": _error(lambda: sub.individual_sample(3, probs=bad_here)),
            "probs matrix": _error(lambda: sub.individual_sample(3, probs=own)),
            "probs other frontier": _error(
                lambda: sub.individual_sample(3, probs=P[:, SEEDS[4:8]])
            ),
            "alias without replacement": _error(
                lambda: sub.individual_sample(3, probs=sub, method="alias")
            ),
            "edge map with a tensor": _error(lambda: sub * torch.ones(3)),
            "collective": _error(lambda: P[:, few].collective_sample(3)),
            "walk probs shape": _error(lambda: P.random_walk(few, 3, probs=torch.ones(5))),
            "walk probs negative": _error(
                lambda: P.random_walk(few, 3, probs=-torch.ones(P.num_edges))
            ),
            "walk probs matrix": _error(lambda: P.random_walk(few, 3, probs=own)),
            "walk p": _error(lambda: P.random_walk(few, 3, p=0.0)),
            "sum": _error(lambda: P.sum(axis=0)),
            "rows": _error(lambda: P[few, :]),
            "out of range": _error(lambda: P[:, torch.tensor([N])]),
            "k": _error(lambda: P[:, few].individual_sample(-1)),
            "super_batch": _error(lambda: gs.DataLoader(P, sage, SEEDS, BATCH, super_batch="auto")),
            "placement": _error(lambda: gs.distributed.place(A, "everywhere")),
            "budget": _error(lambda: gs.distributed.place(A, "shared", budget=5)),
            "not a graph": _error(lambda: gs.distributed.place("graph", "shared")),
            "no graph": _error(lambda: gs.distributed.place(None, "shared")),
            "sub-matrix": _error(lambda: gs.distributed.place(own[:, few], "replicated")),
        }
        torch.save(res, f"{out}/rank{rank}.pt")
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return spawn_ranks(_worker, tmp_path_factory.mktemp("distributed"))


@pytest.fixture(scope="module")
def single():
    """Every sampler's epoch in one process."""
    A = graph()
    return {name: dict(_epoch(A, sampler)[1]) for name, sampler in SAMPLERS.items()}


def _union(ranks, key, reference):
    """The ranks' mini-batches of ``key``, checked against ``reference`` batch by batch."""
    seen = {}
    for r, res in enumerate(ranks):
        length, batches = res[key]
        assert length == len(batches) == math.ceil(len(reference) / 2)
        for index, out in batches:
            assert_same(out, reference[index], f"{key}, rank {r}, mini-batch {index}")
            seen[index] = out
    assert sorted(seen) == sorted(reference)


@pytest.mark.parametrize("sampler", list(SAMPLERS))
@pytest.mark.parametrize("placement", PLACEMENTS)
def test_every_placement_samples_the_single_process_epoch(ranks, single, placement, sampler):
    _union(ranks, (placement, sampler), single[sampler])


@pytest.mark.parametrize(
    "key",
    [
        ("replicated, own graph", "graphsage"),
        ("partitioned, own graph", "graphsage"),
        ("replicated", "super-batched"),
    ],
)
def test_graphs_given_on_every_rank_and_super_batches(ranks, single, key):
    _union(ranks, key, single["graphsage"])


@pytest.fixture(scope="module")
def forest_single():
    """Every empty-frontier sampler's epoch in one process."""
    return {name: dict(_forest_epoch(forest(), f)[1]) for name, f in EMPTY_SAMPLERS.items()}


@pytest.mark.parametrize("sampler", list(EMPTY_SAMPLERS))
@pytest.mark.parametrize("placement", PLACEMENTS + ("partitioned, super-batched",))
def test_empty_frontiers_sample_the_single_process_epoch(ranks, forest_single, placement, sampler):
    """Hops at an empty frontier (most mini-batches have one) and walks of no seed sample
    nothing, as one process does, and the draws after them are the single-process ones."""
    if placement.endswith("super-batched") and sampler not in ("uniform", "weighted"):
        pytest.skip("super-batched: the uniform and weighted samplers")
    reference = forest_single[sampler]
    empty = sum(s.shape[1] == 0 for blocks, _, _ in reference.values() for s in blocks)
    assert empty >= 3, "the reference samples empty frontiers"
    _union(ranks, ("empty", placement, sampler), reference)


def test_a_frontier_empty_on_one_rank_only(ranks):
    """Rank 1's frontier is empty, rank 0's is not: each rank gets what one process gets for
    its own frontier (a ``(N, 0)`` sample, a ``(0, 4)`` walk), and neither waits for the
    other in an exchange."""
    for r, res in enumerate(ranks):
        gs.manual_seed(3)
        want = mixed_frontiers(forest(), MIXED_COLS[r])
        assert_same(res["empty", "mixed"], want, f"rank {r}")
    got = ranks[1]["empty", "mixed"]
    assert got[0].shape == (13, 0) and got[0].csc.eids.dtype == torch.int64
    assert got[4].shape == (0, 4) and got[4].dtype == torch.int64
    assert got[6].shape == (0, 3) and got[3].shape == (0,)


def test_placements_report_where_the_graph_lives(ranks):
    for res in ranks:
        assert res["replicated", "placement"] == "device"
        assert res["shared", "placement"] == "shared"  # CPU ranks: one copy, shared
        assert res["partitioned", "placement"] == "partitioned"
        assert res["auto", "large budget"] == "device"  # fits: replicated
        assert res["auto", "small budget"] == "shared"  # a CPU never partitions


def test_partitioned_rank_holds_about_half_the_edges():
    from gsample.distributed import edge_balanced_bounds

    A = graph()
    bounds = edge_balanced_bounds(A.csc.indptr, 2)
    halves = [int(A.csc.indptr[bounds[r + 1]] - A.csc.indptr[bounds[r]]) for r in range(2)]
    assert sum(halves) == E and abs(halves[0] - halves[1]) <= 0.05 * E


@pytest.mark.parametrize(
    "what, error, match",
    [
        (
            "probs shape",
            "ValueError",
            "probs: expected one probability per edge \\(shape \\(\\d+,\\)\\)",
        ),
        (
            "probs zero",
            "ValueError",
            "probs: column \\d \\(node \\d+\\) has edges but all its probabilities are zero",
        ),
        ("probs zero tensor", "ValueError", "probs: column \\d \\(node \\d+\\) has edges but all"),
        ("probs bad on rank 1", "ValueError", "probs: contains negative values"),
        ("probs matrix", "ValueError", "probs: on a partitioned graph, A\\[:, cols\\] itself"),
        ("probs other frontier", "ValueError", "probs: a probability matrix must have the same"),
        ("alias without replacement", "ValueError", "method: 'alias' draws with replacement"),
        (
            "edge map with a tensor",
            "NotImplementedError",
            "other: an edge map of A\\[:, cols\\] with a Tensor .*'replicated' or 'shared'",
        ),
        ("collective", "NotImplementedError", "collective_sample: not supported on a partitioned"),
        ("walk probs shape", "ValueError", "probs: expected one probability per edge \\(shape"),
        ("walk probs negative", "ValueError", "probs: contains negative values"),
        ("walk probs matrix", "ValueError", "probs: on a partitioned graph, the graph itself"),
        ("walk p", "ValueError", "p: must be"),
        ("sum", "NotImplementedError", "sum: not supported on a partitioned graph"),
        ("rows", "NotImplementedError", "A\\[rows, :\\]"),
        ("out of range", "IndexError", "cols: node id 700 is out of range"),
        ("k", "ValueError", "k: must be >= 0"),
        (
            "super_batch",
            "ValueError",
            "super_batch: 'auto' is not supported on a partitioned graph",
        ),
        ("placement", "ValueError", "placement: must be one of"),
        ("budget", "ValueError", "budget: only used with placement='auto'"),
        ("not a graph", "TypeError", "A: expected a gs.Matrix"),
        ("no graph", "ValueError", "A: rank 0 must pass the graph"),
        ("sub-matrix", "ValueError", "A: must be a whole graph"),
    ],
)
def test_bad_arguments_raise_clear_errors_on_every_rank(ranks, what, error, match):
    import re

    for res in ranks:
        got = res["errors"][what]
        assert got is not None, f"{what}: no error"
        assert got[0] == error and re.search(match, got[1]), got


def test_a_check_failing_on_one_rank_raises_on_every_rank(ranks):
    # rank 1's probabilities are negative, rank 0's fine: rank 0 raises rank 1's error (and
    # both went on to the next operators: no rank was left waiting in a collective)
    assert (
        ranks[1]["errors"]["probs bad on rank 1"][1] == "probs: contains negative values (min -1.0)"
    )
    assert ranks[0]["errors"]["probs bad on rank 1"] == (
        "ValueError",
        "probs: contains negative values (min -1.0) (on rank 1 of the partitioned graph's group)",
    )


def test_partitioned_slice_values_are_the_single_process_ones(ranks):
    expect = (graph()[:, VALUE_COLS] ** 2).values
    for res in ranks:
        assert torch.equal(res["values"], expect)


def test_place_needs_an_initialised_group():
    with pytest.raises(RuntimeError, match=r"torch\.distributed is not initialised"):
        gs.distributed.place(graph(), "replicated")
