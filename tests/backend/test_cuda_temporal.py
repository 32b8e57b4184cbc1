"""``temporal_sample``'s kernels (``kernels/temporal.cu``) against the torch implementation,
bit for bit: every strategy, window, time dtype, seed keys, super-batch keys, with and
without replacement, draws per column below and above a warp's 32, hubs; the frontier's
ids checked (a bad one raises ``IndexError`` naming ``cols``, and the next call is
unharmed). The CPU tests check which implementation the CUDA backend picks."""

import dataclasses
import functools

import pytest
import torch

import gsample as gs
from gsample.backend import get_backend, resolve
from gsample.backend.cuda import temporal as cuda_temporal
from gsample.backend.torch import temporal as torch_temporal
from gsample.base.random import BatchKeys, op_key
from gsample.ir import Op


def GPU(f):
    """Marks a test that needs a CUDA GPU (skipped without one)."""
    skip = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
    return pytest.mark.cuda(skip(f))


def test_the_cuda_backend_picks_the_kernels_for_uniform_draws():
    """Uniform draws take the kernels; weighted ones (``probs``) the torch code."""
    cuda = get_backend("cuda")
    A = gs.datasets.rmat(50, 300, seed=0).csc
    assert resolve(cuda, Op.TEMPORAL_SAMPLE, A).fn is cuda_temporal.temporal_sample
    weighted = resolve(cuda, Op.TEMPORAL_SAMPLE, A, given=("A", "cols", "probs"))
    assert weighted.fn is torch_temporal.temporal_sample


def _graph(seed=0):
    """An R-MAT graph with hubs (in-degree in the hundreds) and integer / float times."""
    A = gs.datasets.rmat(3000, 60_000, seed=seed)
    g = torch.Generator().manual_seed(seed)
    et = torch.randint(0, 1000, (A.num_edges,), generator=g)
    return A, et


def _frontier(A, C=700, seed=1):
    g = torch.Generator().manual_seed(seed)
    hubs = torch.argsort(A.csc.degrees(), descending=True)[:20]
    cols = torch.cat([torch.randint(0, A.num_nodes, (C,), generator=g), hubs, hubs[:3]])
    time = torch.randint(0, 1000, (cols.numel(),), generator=g)
    seed_ids = torch.sort(torch.randint(0, 64, (cols.numel(),), generator=g)).values
    return cols, time, seed_ids[torch.randperm(cols.numel(), generator=g)]


def _same(a, b):
    assert torch.equal(a.indptr.cpu(), b.indptr)
    assert torch.equal(a.rows.cpu(), b.rows)
    assert torch.equal(a.eid_tensor().cpu(), b.eid_tensor())
    assert torch.equal(a.col_ids.cpu(), b.col_ids)
    assert a.num_nodes == b.num_nodes


CASES = [
    # (k, replace, timed, strategy, window, seeded, float times)
    (5, False, False, "uniform", None, False, False),
    (5, False, True, "uniform", None, False, False),
    (5, True, True, "uniform", None, True, False),
    (40, False, True, "uniform", None, True, False),
    (40, True, False, "uniform", None, True, False),
    (10, False, True, "last", None, True, False),
    (10, False, True, "uniform", 300, True, False),
    (64, False, True, "last", 200, False, False),
    (7, False, True, "uniform", 250.5, True, True),
    (0, False, True, "uniform", None, True, False),
    (32, False, True, "uniform", None, True, True),
]


@GPU
@pytest.mark.parametrize("grouped", [False, True], ids=["any-order", "grouped"])
@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_kernels_equal_the_torch_code(case, grouped):
    """Columns in any order (the host ranks each seed's columns) or grouped by seed (the
    kernel ranks them)."""
    k, replace, timed, strategy, window, seeded, floats = case
    A, et = _graph()
    cols, time, seed_ids = _frontier(A)
    if grouped:  # columns listed seed by seed (the disjoint program's frontiers)
        o = torch.argsort(seed_ids, stable=True)
        cols, time, seed_ids = cols[o], time[o], seed_ids[o]
    if floats:
        et, time = et.double() / 3, time.double() / 3
    kw = {}
    if timed:
        kw = {"time": time, "edge_time": et, "strategy": strategy, "window": window}
    if seeded:
        kw["seed"] = seed_ids
    key = op_key(7, 3, 2)
    ref = torch_temporal.temporal_sample(A.csc, cols, k, replace, key, **kw)
    dev = {n: v.cuda() if isinstance(v, torch.Tensor) else v for n, v in kw.items()}
    Ad = A.to("cuda")
    got = cuda_temporal.temporal_sample(Ad.csc, cols.cuda(), k, replace, key, **dev)
    _same(got, ref)
    assert ref.nnz > 0 or k == 0


@GPU
@pytest.mark.parametrize(("seeded", "grouped"), [(False, "any"), (True, "any"), (True, "batch")])
def test_super_batch_keys(seeded, grouped):
    """A super-batch's encoded frontier (three batches, one empty) draws with each batch's
    keys: the torch code's sample."""
    A, et = _graph(1)
    n = A.num_nodes
    cols, time, seed_ids = _frontier(A, C=300)
    batch = torch.arange(cols.numel()) % 3
    batch[batch == 1] = 2  # batch 1 empty
    # by batch (a super-batch's frontier always is), each batch's seeds in any order or
    # grouped (the disjoint program's frontiers)
    sort_key = {"any": batch, "batch": batch * 64 + seed_ids}
    order = torch.argsort(sort_key[grouped], stable=True)
    cols, time, seed_ids, batch = cols[order], time[order], seed_ids[order], batch[order]
    enc = batch * n + cols
    key = BatchKeys.of(seed=5, ordinal=1, first_batch=8, copies=3, num_nodes=n)
    kw = {"time": time, "edge_time": et, "seed": seed_ids if seeded else None}
    ref = torch_temporal.temporal_sample(A.csc, enc, 6, False, key, **kw)
    dev = {m: v.cuda() if isinstance(v, torch.Tensor) else v for m, v in kw.items()}
    got = cuda_temporal.temporal_sample(A.to("cuda").csc, enc.cuda(), 6, False, key, **dev)
    _same(got, ref)


@GPU
@pytest.mark.parametrize("bad", [-1, 3000, 2**32 + 1, 2**40, -(2**62)])
def test_a_bad_id_raises_and_the_next_call_is_unharmed(bad):
    A, et = _graph()
    Ad, etd = A.to("cuda"), et.cuda()
    cols = torch.tensor([0, 5, bad, 7], device="cuda")
    t = torch.full((4,), 500, device="cuda")
    with pytest.raises(IndexError, match="cols: node id"):
        cuda_temporal.temporal_sample(Ad.csc, cols, 3, False, 11, time=t, edge_time=etd)
    with pytest.raises(IndexError, match="cols: node id"):  # k = -1: the torch code's path
        cuda_temporal.temporal_sample(Ad.csc, cols, -1, False, 11, time=t, edge_time=etd)
    good = torch.tensor([0, 5, 6, 7])
    ref = torch_temporal.temporal_sample(A.csc, good, 3, False, 11, time=t.cpu(), edge_time=et)
    got = cuda_temporal.temporal_sample(Ad.csc, good.cuda(), 3, False, 11, time=t, edge_time=etd)
    _same(got, ref)


@GPU
def test_an_empty_frontier_is_an_empty_sample():
    A, et = _graph()
    Ad = A.to("cuda")
    none = torch.empty(0, dtype=torch.int64, device="cuda")
    got = cuda_temporal.temporal_sample(
        Ad.csc, none, 4, False, 1, time=none, edge_time=et.cuda(), seed=none
    )
    assert got.indptr.tolist() == [0] and got.nnz == 0


@GPU
def test_the_disjoint_program_on_the_cuda_backend_runs_the_kernels(monkeypatch):
    """Compiled on the CUDA backend, the temporal disjoint program calls the kernels (not
    the torch code) and samples the CPU's trees."""
    from gsample.interop.pyg.temporal import disjoint_sample

    A, et = _graph(2)
    seeds = torch.tensor([1, 2, 2, 40, 999])
    st = torch.tensor([900, 500, 700, 999, 100])
    gs.manual_seed(4)
    ref = disjoint_sample(A, seeds, st, et, num_neighbors=(8, 4))
    calls = []
    real = cuda_temporal.temporal_sample

    @functools.wraps(real)  # the same signature: lowering reads it
    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    impls = get_backend("cuda").impls
    key = (Op.TEMPORAL_SAMPLE, "csc")
    monkeypatch.setitem(impls, key, dataclasses.replace(impls[key], fn=spy))
    fn = gs.compile(lambda A, s, t, e: disjoint_sample(A, s, t, e, num_neighbors=(8, 4)))
    gs.manual_seed(4)
    got = fn(A.to("cuda"), seeds.cuda(), st.cuda(), et.cuda())
    assert calls, "the CUDA backend did not run the temporal kernels"
    for x, y in zip(ref[0], got[0], strict=True):
        assert all(torch.equal(u, v.cpu()) for u, v in zip(x.edges(), y.edges(), strict=True))
