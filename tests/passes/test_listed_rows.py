"""The ``listed_rows`` pass: LADIES's probabilities at the slice's rows only, the same
samples (every block, bit for bit) as the dense program, eager, compiled and super-batched;
nothing over the graph's rows; a user's own dense normaliser, a probability vector read
elsewhere, or a backend without the listed op keeps the dense path."""

from __future__ import annotations

import pathlib
import sys

import pytest
import torch
from helpers import (
    assert_same,
    check_compiled_equals_eager,
    check_super_batched,
    dense_ladies,
    example,
    ops,
    random_seeds,
)

import gsample as gs
from gsample.ir import Op
from gsample.ir.graph import Target
from gsample.passes import PIPELINE
from gsample.passes.listed_rows import listed_rows
from gsample.passes.scaled_row_sums import scaled_row_sums

N = 3000
WITHOUT = [f for f, _ in PIPELINE if f is not listed_rows]


@pytest.fixture(scope="module")
def G():
    return example("ladies").normalize(gs.datasets.rmat(N, 40_000, seed=0, weighted=True))


def ladies(A, seeds, layers=(150, 150, 150)):
    return example("ladies").ladies(A, seeds, layers=layers)


def test_ladies_is_rewritten_to_listed_rows(G):
    seeds = random_seeds(64, num_nodes=N)
    g = gs.compile(ladies, backend="torch").program(G, seeds)
    assert ops(g).count(Op.LISTED_COLLECTIVE_SAMPLE) == 3
    # no value over the graph's rows is left: the dense bias, its division and the gather
    assert Op.SLICE_COLLECTIVE_SAMPLE not in ops(g) and Op.SLICE_REDUCE not in ops(g)
    assert not [n for n in g.nodes if n.op is Op.DENSE and "getitem" in str(n.attrs["fn"])]
    for n in g.nodes:
        if n.op is Op.LISTED_COLLECTIVE_SAMPLE:
            assert n.attrs["ordinal"] in (0, 1, 2)
            assert n.input("scale").op is Op.DENSE  # the clamp of the slice's sum


@pytest.mark.parametrize("replace", [False, True])
def test_every_block_is_the_dense_programs(G, replace):
    def sampler(A, seeds):
        blocks = []
        for k in (200, 120):
            sub = A[:, seeds]
            sq = sub**2
            p = sq.sum(axis=1)
            p = p / sq.sum().clamp(min=1e-30)
            s = sub.collective_sample(k, node_probs=p, replace=replace)
            s = s.div(p[s.row_ids], axis=1)
            blocks.append(s.div(s.sum(axis=0), axis=0))
            seeds = s.all_nodes()
        return blocks

    for s in range(3):
        seeds = random_seeds(96, seed=s, num_nodes=N)
        listed = check_compiled_equals_eager(sampler, G, seeds, calls=2, seed=s)
        assert Op.LISTED_COLLECTIVE_SAMPLE in ops(listed.program(G, seeds))
        dense = gs.compile(sampler, passes=WITHOUT)
        assert Op.LISTED_COLLECTIVE_SAMPLE not in ops(dense.program(G, seeds))
        gs.manual_seed(s)
        want = [dense(G, seeds) for _ in range(2)]
        gs.manual_seed(s)
        got = [listed(G, seeds) for _ in range(2)]
        assert_same(got, want)


def test_the_catalogue_ladies_equals_eager_and_the_dense_program(G):
    seeds = random_seeds(128, num_nodes=N)
    listed = check_compiled_equals_eager(ladies, G, seeds, calls=2, seed=4)
    gs.manual_seed(4)
    want = [gs.compile(ladies, passes=WITHOUT)(G, seeds) for _ in range(2)]
    gs.manual_seed(4)
    assert_same([listed(G, seeds) for _ in range(2)], want)


@pytest.mark.parametrize("n", [2, 4])
def test_super_batched_equals_one_by_one(G, n):
    check_super_batched(G, ladies, random_seeds(256, num_nodes=N), 32, n)


def test_a_users_dense_normaliser_keeps_the_dense_path(G):
    seeds = random_seeds(64, num_nodes=N)
    c = check_compiled_equals_eager(dense_ladies, G, seeds)
    g = c.program(G, seeds)
    assert Op.LISTED_COLLECTIVE_SAMPLE not in ops(g) and Op.SLICE_COLLECTIVE_SAMPLE in ops(g)


def test_probabilities_read_elsewhere_keep_the_dense_path(G):
    def returns_p(A, seeds):
        sub = A[:, seeds]
        sq = sub**2
        p = sq.sum(axis=1) / sq.sum()
        s = sub.collective_sample(100, node_probs=p)
        return s, p  # p itself leaves: a tensor over every row

    seeds = random_seeds(64, num_nodes=N)
    c = check_compiled_equals_eager(returns_p, G, seeds)
    assert Op.LISTED_COLLECTIVE_SAMPLE not in ops(c.program(G, seeds))


def test_a_backend_without_the_listed_op_keeps_the_dense_path(G):
    seeds = random_seeds(64, num_nodes=N)
    # (without scaled_row_sums too, which folds the dense path's division where nothing is
    # listed: the program listed_rows would have seen)
    dense = [f for f in WITHOUT if f is not scaled_row_sums]
    g = gs.compile(ladies, passes=dense).program(G, seeds)
    before = ops(g)
    g.target = Target("cuda", g.target.op_layouts, frozenset({Op.SLICE_COLLECTIVE_SAMPLE}))
    assert not listed_rows(g).changed and ops(g) == before
    g.target = Target("torch", g.target.op_layouts, None)
    assert listed_rows(g).changed and Op.LISTED_COLLECTIVE_SAMPLE in ops(g)


def test_bad_probabilities_raise_as_the_dense_program(G):
    def negative(A, seeds):
        sub = A[:, seeds]
        sq = sub**2
        p = sq.sum(axis=1) / (sq.sum() * -1.0)
        return sub.collective_sample(10, node_probs=p)

    seeds = random_seeds(64, num_nodes=N)
    listed = gs.compile(negative)
    assert Op.LISTED_COLLECTIVE_SAMPLE in ops(listed.program(G, seeds))
    for f in (listed, gs.compile(negative, passes=WITHOUT), negative):
        with pytest.raises(ValueError, match="node_probs"):
            f(G, seeds)


def test_the_benchmark_draws_the_same_samples_at_two_node_counts():
    root = pathlib.Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "benchmarks"))
    import ladies_listed

    record = ladies_listed.main(
        [
            "--nodes",
            "3000",
            "30000",
            "--active",
            "2000",
            "--edges",
            "20000",
            "--layers",
            "100",
            "100",
            "--batch-size",
            "64",
            "--batches",
            "2",
            "--repeats",
            "1",
        ]
    )
    assert [r["nodes"] for r in record["rows"]] == [3000, 30000]
    assert all(r["same_samples"] for r in record["rows"])


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_on_cuda_tensors_the_torch_backend_draws_the_dense_programs_blocks():
    """The listed op's torch code on a GPU (no native passes there: a sort by row, segment
    sums) gives the dense program's blocks bit for bit, one mini-batch and super-batched."""
    G = example("ladies").normalize(gs.datasets.rmat(N, 40_000, seed=0, weighted=True)).to("cuda")
    seeds = random_seeds(128, num_nodes=N).cuda()
    listed = gs.compile(ladies, backend="torch")
    assert Op.LISTED_COLLECTIVE_SAMPLE in ops(listed.program(G, seeds))
    dense = gs.compile(ladies, backend="torch", passes=WITHOUT)
    gs.manual_seed(2)
    want = [dense(G, seeds) for _ in range(2)]
    gs.manual_seed(2)
    assert_same([listed(G, seeds) for _ in range(2)], want)
    ids = random_seeds(256, num_nodes=N).cuda()
    runs = [
        [b.out for b in gs.DataLoader(G, f, ids, 64, shuffle=False, seed=3, super_batch=4)]
        for f in (listed, dense)
    ]
    assert_same(runs[0], runs[1])
