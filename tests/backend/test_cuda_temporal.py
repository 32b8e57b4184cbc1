"""``temporal_sample``'s kernels (``kernels/temporal.cu``) against the torch implementation,
bit for bit: every strategy, window, time dtype, seed keys, super-batch keys, with and
without replacement, draws per column below and above a warp's 32, hubs; the frontier's
ids checked (a bad one raises ``IndexError`` naming ``cols``, and the next call is
unharmed). The sync-free implementation equals the exact one and the torch code (bounded
frontiers with padding, device keys), makes no host synchronisation, and the compiled
disjoint program on the CUDA backend reads back once, at its end. The CPU tests check which
implementation the CUDA backend picks (``test_cuda_temporal_cpu.py`` runs the kernels'
source on the CPU)."""

import dataclasses
import functools

import pytest
import torch
from helpers import host_syncs
from test_cuda_temporal_cpu import CASES, device_key, inputs, padded, super_batch, trimmed

import gsample as gs
from gsample.backend import get_backend, resolve
from gsample.backend.cuda import temporal as cuda_temporal
from gsample.backend.torch import temporal as torch_temporal
from gsample.base import validate as V
from gsample.base.random import BatchKeys, op_key
from gsample.formats.bounded import BoundedIds
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


@GPU
@pytest.mark.parametrize("grouped", [False, True], ids=["any-order", "grouped"])
@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_kernels_equal_the_torch_code(case, grouped):
    """Columns in any order (the host ranks each seed's columns) or grouped by seed (the
    kernel ranks them)."""
    A, et = _graph()
    cols, time, seed_ids = _frontier(A)
    if grouped:  # columns listed seed by seed (the disjoint program's frontiers)
        o = torch.argsort(seed_ids, stable=True)
        cols, time, seed_ids = cols[o], time[o], seed_ids[o]
    _, cols, k, replace, kw = inputs((A.csc, et), case, (cols, time, seed_ids))
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

    def spying(real):
        @functools.wraps(real)  # the same signature: lowering reads it
        def spy(*a, **k):
            calls.append(1)
            return real(*a, **k)

        return spy

    be, key = get_backend("cuda"), (Op.TEMPORAL_SAMPLE, "csc")
    for impls in (be.impls, be.sync_free_impls):  # whichever the runtime picks
        monkeypatch.setitem(impls, key, dataclasses.replace(impls[key], fn=spying(impls[key].fn)))
    fn = gs.compile(lambda A, s, t, e: disjoint_sample(A, s, t, e, num_neighbors=(8, 4)))
    gs.manual_seed(4)
    got = fn(A.to("cuda"), seeds.cuda(), st.cuda(), et.cuda())
    assert calls, "the CUDA backend did not run the temporal kernels"
    for x, y in zip(ref[0], got[0], strict=True):
        assert all(torch.equal(u, v.cpu()) for u, v in zip(x.edges(), y.edges(), strict=True))


# ----------------------------------------------------------------------------- sync-free
@GPU
@pytest.mark.parametrize("bounded", [False, True], ids=["tensor", "bounded"])
@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_sync_free_equals_exact_and_the_torch_code(case, bounded):
    """Grouped frontiers (the disjoint program's): the sync-free kernels' sample equals the
    exact kernels' and the torch code's; a bounded frontier's padding (bad ids, times and
    seeds out of order) is not read."""
    G, et = _graph()
    A, cols, k, replace, kw = inputs((G.csc, et), case)
    m = cols.numel() - 25 if bounded else cols.numel()
    key = device_key(device="cuda")
    cut = {n: v[:m] if n in ("time", "seed") else v for n, v in kw.items()}
    ref = torch_temporal.temporal_sample(A, cols[:m], k, replace, key.host(), **cut)
    Ad = G.to("cuda").csc
    dev = {n: v.cuda() if isinstance(v, torch.Tensor) else v for n, v in cut.items()}
    _same(cuda_temporal.temporal_sample(Ad, cols[:m].cuda(), k, replace, key.host(), **dev), ref)
    dev = {n: v.cuda() if isinstance(v, torch.Tensor) else v for n, v in kw.items()}
    fr = cols.cuda()
    if bounded:
        fr = padded(fr, m, 2**40)
        for n, fill in (("time", -(10**6)), ("seed", -1)):
            if n in dev:
                dev[n] = padded(dev[n], m, fill)
    got = cuda_temporal.temporal_sample_sync_free(Ad, fr, k, replace, key, **dev)
    assert got.csc.rows.numel() == (cols.numel() + 7 * bounded) * k
    _same(trimmed(got), ref)


@GPU
def test_sync_free_super_batch_keys():
    A, et = _graph(1)
    enc, time, seed_ids, _ = super_batch(A.csc, C=300)
    key = device_key(5, 1, 8, copies=3, num_nodes=A.num_nodes, device="cuda")
    kw = {"time": time, "edge_time": et, "seed": seed_ids}
    ref = torch_temporal.temporal_sample(A.csc, enc, 6, False, key.host(), **kw)
    dev = {m: v.cuda() for m, v in kw.items()}
    got = cuda_temporal.temporal_sample_sync_free(
        A.to("cuda").csc, enc.cuda(), 6, False, key, **dev
    )
    _same(trimmed(got), ref)


@GPU
def test_sync_free_makes_no_host_sync_and_defers_its_errors():
    """No synchronisation at all (the checks deferred, as the runtime runs it); a bad id
    and a frontier out of seed order raise at the read-back, the next call is unharmed."""
    A, et = _graph()
    Ad, etd = A.to("cuda"), et.cuda()
    cols, time, seed_ids = (x.cuda() for x in _frontier(A))
    o = torch.argsort(seed_ids, stable=True)
    cols, time, seed_ids = cols[o], time[o], seed_ids[o]
    key = device_key(device="cuda")
    m = cols.numel() - 4
    fr, t, s = padded(cols, m, -1), padded(time, m, 0), padded(seed_ids, m, 0)

    def call(frontier=fr, seed=s):
        return cuda_temporal.temporal_sample_sync_free(
            Ad.csc, frontier, 10, False, key, t, etd, seed, "uniform", None
        )

    with V.deferred():
        call()  # compiled, the time order built
        syncs = host_syncs(call)
    assert syncs == [], syncs
    bad = BoundedIds(fr.data.clone(), fr.count)
    bad.data[3] = 2**40
    with V.deferred():
        call(bad)
        with pytest.raises(IndexError, match=rf"^cols: node id {2**40} is out of range"):
            V.read_back([])
    unordered = BoundedIds(s.data.flip(0), s.count)
    with V.deferred():
        call(fr, unordered)
        with pytest.raises(ValueError, match=r"^seed: under the sync-free runtime"):
            V.read_back([])
    with V.deferred():
        out = call()
        V.read_back([])
    ref = torch_temporal.temporal_sample(
        A.csc, cols[:-4].cpu(), 10, False, key.host(), time=time[:-4].cpu(), edge_time=et,
        seed=seed_ids[:-4].cpu(),
    )  # fmt: skip
    _same(trimmed(out), ref)


@GPU
def test_the_compiled_disjoint_program_reads_back_once():
    """The temporal disjoint program compiled on the CUDA backend: every temporal_sample
    step sync-free, one read-back per call (at its end), the torch backend's trees."""
    from gsample.interop.pyg.temporal import disjoint_sample

    A, et = _graph(2)
    Ad, etd = A.to("cuda"), et.cuda()
    seeds = torch.tensor([1, 2, 2, 40, 999, 17, 5], device="cuda")
    st = torch.tensor([900, 500, 700, 999, 100, 640, 321], device="cuda")

    def program(A, s, t, e):
        return disjoint_sample(A, s, t, e, num_neighbors=(8, 4, 3))

    fn = gs.compile(program, backend="cuda")
    lowered = fn.lowered(Ad, seeds, st, etd)
    steps = [x for x in lowered.steps if x.label.startswith("cuda.temporal_sample")]
    assert len(steps) == 3 and all("sync-free" in x.label for x in steps), lowered.format()
    assert lowered.num_syncs == 1, lowered.format()
    gs.manual_seed(4)
    ref = gs.compile(program, backend="torch")(Ad, seeds, st, etd)
    for _ in range(2):  # warm: kernels compiled, the time order built, a graph captured
        gs.manual_seed(4)
        got = fn(Ad, seeds, st, etd)
    for x, y in zip(ref[0], got[0], strict=True):
        assert all(torch.equal(u, v) for u, v in zip(x.edges(), y.edges(), strict=True))
    gs.manual_seed(4)
    syncs = host_syncs(lambda: fn(Ad, seeds, st, etd))
    assert len(syncs) == 1, syncs


@GPU
def test_a_hop_the_sync_free_kernels_do_not_take_keeps_the_program_aligned():
    """``k = -1`` (every allowed edge) runs the exact kernels inside a sync-free program: the
    sample comes back over the frontier's buffer, so the next ``first_reached`` reads slots
    and times aligned with its columns; the trees are the torch backend's."""
    from gsample.interop.pyg.temporal import disjoint_sample

    A, et = _graph(2)
    Ad, etd = A.to("cuda"), et.cuda()
    seeds = torch.tensor([1, 2, 2, 40, 999, 17], device="cuda")
    st = torch.tensor([900, 500, 700, 999, 100, 640], device="cuda")

    def program(A, s, t, e):
        return disjoint_sample(A, s, t, e, num_neighbors=(3, -1, 3))

    gs.manual_seed(5)
    ref = gs.compile(program, backend="torch")(Ad, seeds, st, etd)
    fn = gs.compile(program, backend="cuda")
    for _ in range(3):  # eager, warm-up, captured or replayed
        gs.manual_seed(5)
        got = fn(Ad, seeds, st, etd)
        for x, y in zip(ref[0], got[0], strict=True):
            assert all(torch.equal(u, v) for u, v in zip(x.edges(), y.edges(), strict=True))


@GPU
def test_two_samplers_with_their_own_edge_times_on_one_graph_replay_their_own():
    """Each compiled sampler's CUDA graph reads its own time order in place: a second
    sampler's edge times on the same graph do not free or replace it."""
    from gsample.interop.pyg.temporal import disjoint_sample

    A, et = _graph(3)
    Ad = A.to("cuda")
    seeds = torch.tensor([1, 2, 40, 77], device="cuda")
    st = torch.tensor([900, 500, 999, 640], device="cuda")
    times = [et.cuda(), et.flip(0).contiguous().cuda()]

    def sampler(e):  # edge times captured as the program's constant
        return gs.compile(lambda A, s, t: disjoint_sample(A, s, t, e, num_neighbors=(4, 3)))

    fns = [sampler(e) for e in times]
    refs = []
    for e in times:
        gs.manual_seed(2)
        refs.append(disjoint_sample(A, seeds.cpu(), st.cpu(), e.cpu(), num_neighbors=(4, 3)))
    for _ in range(4):  # alternating: warm-ups, captures, replays
        for fn, ref in zip(fns, refs, strict=True):
            gs.manual_seed(2)
            got = fn(Ad, seeds, st)
            for x, y in zip(ref[0], got[0], strict=True):
                assert all(
                    torch.equal(u, v.cpu()) for u, v in zip(x.edges(), y.edges(), strict=True)
                )
