"""The CUDA backend's sync-free path (``kernels/nodewise.cu``, ``kernels/frontier.cu``, the
runtime's bounded values and deferred checks) against the torch backend, sample for sample,
and its host synchronisations counted (skipped without a GPU)."""

import functools
from dataclasses import replace

import pytest
import torch
from helpers import assert_same, example, graphsage, host_syncs

import gsample as gs
from gsample.backend.cuda import extract as X
from gsample.backend.cuda import nodewise
from gsample.backend.torch import finalize
from gsample.base import validate as V
from gsample.base.random import DeviceKey, combine, key_prefix, signed
from gsample.formats.bounded import BoundedCSC, BoundedIds, read_counts, trim
from gsample.runtime import Options

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
]


@pytest.fixture(scope="module")
def graph():
    """R-MAT with hubs, plus repeated edges and a few isolated columns."""
    return gs.datasets.rmat(20_000, 300_000, seed=4).to("cuda")


@pytest.fixture(scope="module")
def weighted():
    return gs.datasets.rmat(5_000, 60_000, seed=5, weighted=True).to("cuda")


def _seeds(n, num_nodes, seed=0, repeats=False):
    s = torch.randperm(num_nodes, generator=torch.Generator().manual_seed(seed))[:n]
    if repeats:
        s = torch.cat([s, s[: n // 3]])
    return s.cuda()


def _both(fn, A, seeds, **kwargs):
    """``(torch backend on CUDA tensors, cuda backend)`` samples, same stream."""
    gs.manual_seed(3)
    ref = gs.compile(fn, backend="torch")(A, seeds, **kwargs)
    gs.manual_seed(3)
    got = gs.compile(fn, backend="cuda")(A, seeds, **kwargs)
    return ref, got


@pytest.mark.parametrize("fanouts", [(25, 10), (1,), (3, 3, 3), (0, 2), (200,)])
@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("repeats", [False, True])
def test_graphsage_equals_the_torch_backend(graph, fanouts, replace, repeats):
    seeds = _seeds(300, graph.num_nodes, 1, repeats)
    ref, got = _both(graphsage, graph, seeds, fanouts=fanouts, replace=replace)
    assert_same(got, ref)


def test_weighted_graph_values_and_the_int32_path(weighted, monkeypatch):
    """Edge values are gathered with the sampled edges; a large graph reads int32 copies."""
    monkeypatch.setattr(X, "INT32_MIN_EDGES", 0)
    seeds = _seeds(500, weighted.num_nodes, 2)
    ref, got = _both(graphsage, weighted, seeds, fanouts=(5, 4))
    assert_same(got, ref)
    assert got[0].csc.values is not None


def test_the_program_is_sync_free_and_reads_back_once(graph):
    """GraphSAGE on the CUDA backend: every op sync-free; one read-back per call (the sizes
    and the deferred range check of the seeds together)."""
    sampler = gs.compile(graphsage, backend="cuda")
    seeds = _seeds(512, graph.num_nodes, 3)
    program = sampler.lowered(graph, seeds)
    assert program.num_syncs == 1  # the finish (the kernel checks the seeds)
    ops = [s for s in program.steps if s.label.startswith("cuda.")]
    assert len(ops) == 3 and all("sync-free" in s.label for s in ops), program.format()
    for _ in range(2):  # warm: kernels compiled, the CUDA graph captured
        sampler(graph, seeds)
    syncs = host_syncs(lambda: sampler(graph, seeds))
    assert len(syncs) == 1, syncs


def test_bad_seeds_raise_after_the_deferred_read_back(graph):
    sampler = gs.compile(graphsage, backend="cuda")
    seeds = _seeds(64, graph.num_nodes, 4)
    bad = seeds.clone()
    bad[7] = graph.num_nodes + 5
    with pytest.raises(IndexError, match=f"cols: node id {graph.num_nodes + 5} is out of range"):
        sampler(graph, bad)
    bad[7] = -3
    with pytest.raises(IndexError, match="cols: node id -3 is negative"):
        sampler(graph, bad)
    gs.manual_seed(3)
    after = sampler(graph, seeds)  # the program is fine after the errors
    assert_same(after, _both(graphsage, graph, seeds)[0])


def test_bad_seeds_of_a_layer_wise_sampler_raise(normalized):
    """LADIES's frontier ids are checked by its first kernel (gs_frontier_ptr), not by a
    check step: the same errors, eagerly and compiled, and nothing read out of bounds."""
    fn = functools.partial(example("ladies").ladies, layers=(50, 50))
    sampler = gs.compile(fn, backend="cuda")
    seeds = _seeds(64, normalized.num_nodes, 4)
    gs.manual_seed(3)
    before = sampler(normalized, seeds)
    steps = [s.label for s in sampler.lowered(normalized, seeds).steps]
    assert any("cols: checked in the kernel" in label for label in steps), steps
    bad = seeds.clone()
    bad[7] = normalized.num_nodes + 5
    for f in (sampler, sampler, fn):  # capture, replay, eager
        with pytest.raises(
            IndexError, match=f"cols: node id {normalized.num_nodes + 5} is out of range"
        ):
            f(normalized, bad)
    bad[7] = -3
    with pytest.raises(IndexError, match="cols: node id -3 is negative"):
        sampler(normalized, bad)
    gs.manual_seed(3)
    assert_same(sampler(normalized, seeds), before)  # the program is fine after the errors


@pytest.mark.parametrize("k", [1, 8, 10, 16, 17, 32, 40])
@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("C", [100, 40_000, 600_000])
def test_sampling_warps_take_one_or_many_columns(graph, k, replace, C):
    """The sampling kernel's warps draw one column each on small frontiers and up to 32 on
    large ones (a super-batch's), k <= 32 draws on the lanes (a group of 8, 16 or 32 lanes a
    column: 4, 2 or 1 columns of a warp at once) and more on one lane: every way
    gives the torch backend's edges, in its order."""
    from gsample.backend.torch import select

    n = graph.num_nodes
    cols = (torch.arange(C, device="cuda") * 7919) % n
    prefix = key_prefix(11, 0)
    key = DeviceKey(torch.tensor([signed(prefix), 4], device="cuda"), prefix, 4)
    s = nodewise.slice_individual_sample(graph.csc, cols, k, replace, key)
    (sizes,), _ = read_counts([s])
    got = trim(s, sizes)
    want = select.individual_sample(
        gs.Matrix(graph.csc)[:, cols].csc, k, replace, combine(prefix, 4)
    )
    assert torch.equal(got.indptr, want.indptr)
    assert torch.equal(got.eids, want.eids)
    assert torch.equal(got.rows, want.row_ids[want.rows] if want.row_ids is not None else want.rows)


def _chained_columns(base: int, degrees: list, k: int) -> int:
    """How many columns' Floyd draws (without replacement, column c keyed as the kernel keys
    it) replace a draw t_i that no earlier lane drew first but that is j_q = deg - k + q of a
    replaced lane q < i (the case the kernel resolves by pointer jumping)."""
    chained = 0
    for c, deg in enumerate(degrees):
        if deg <= k:
            continue
        t = [(combine(combine(base, c), i) >> 1) % (deg - k + i + 1) for i in range(k)]
        drawn = []
        for i in range(k):
            hit = t[i] in drawn
            if hit and t[i] not in t[:i]:
                chained += 1
                break
            drawn.append(deg - k + i if hit else t[i])
    return chained


@pytest.mark.parametrize("k", [3, 8, 12, 16, 20, 32])
@pytest.mark.parametrize("replace", [False, True])
def test_sampling_groups_near_the_degree(k, replace):
    """Columns of k + 1 .. k + 4 and 2k edges (some repeated), where Floyd's draws often
    collide and a replaced draw often replaces the next (draw i hits j_q = deg - k + q of a
    replaced q < i): the kernel's group vote, pointer jumping and sort give the torch
    backend's edges, in its order."""
    from gsample.backend.torch import select
    from gsample.formats.csc import CSC

    gen = torch.Generator().manual_seed(k)
    degrees = [k + 1 + i % 4 if i % 5 else 2 * k for i in range(600)]
    cols_of = torch.repeat_interleave(torch.arange(len(degrees)), torch.tensor(degrees))
    rows = torch.randint(0, 50, (cols_of.numel(),), generator=gen)  # repeated edges too
    n = len(degrees)
    indptr = torch.cat([torch.zeros(1, dtype=torch.int64), torch.tensor(degrees).cumsum(0)])
    A = gs.Matrix(CSC(n, indptr, rows)).to("cuda")
    cols = torch.arange(n, device="cuda")
    prefix = key_prefix(5, 1)
    key = DeviceKey(torch.tensor([signed(prefix), 2], device="cuda"), prefix, 2)
    if not replace:  # the chains the test is for are there
        assert _chained_columns(combine(prefix, 2), degrees, k) > 10
    s = nodewise.slice_individual_sample(A.csc, cols, k, replace, key)
    (sizes,), _ = read_counts([s])
    got = trim(s, sizes)
    want = select.individual_sample(A[:, cols].csc, k, replace, combine(prefix, 2))
    assert torch.equal(got.indptr, want.indptr)
    assert torch.equal(got.eids, want.eids)
    assert torch.equal(got.rows, want.row_ids[want.rows] if want.row_ids is not None else want.rows)


@pytest.mark.parametrize("copies", [1, 3])
def test_all_nodes_of_a_bounded_sample(graph, copies):
    """The frontier kernels on a bounded sample equal the torch ``all_nodes`` (a super-batch:
    grouped by mini-batch), and leave their bitmaps all zero."""
    n = graph.num_nodes
    parts = [_seeds(200, n, 10 + b, repeats=True) for b in range(copies)]
    cols = torch.cat([p + b * n for b, p in enumerate(parts)])
    prefix = key_prefix(7, 1)
    key = DeviceKey(
        torch.tensor([prefix - (1 << 64) if prefix >= 1 << 63 else prefix, 2], device="cuda"),
        prefix,
        2,
        copies,
        n if copies > 1 else 0,
    )
    bounded_cols = BoundedIds(
        torch.cat([cols, torch.zeros(50, dtype=torch.long, device="cuda")]),
        torch.tensor([cols.numel()], device="cuda"),
    )
    s = nodewise.slice_individual_sample(graph.csc, bounded_cols, 7, False, key)
    assert isinstance(s, BoundedCSC) and s.col_bound == cols.numel() + 50
    batches = (copies, n) if copies > 1 else None
    nodes = nodewise.all_nodes(s, batches)
    (sizes_s, sizes_n), _ = read_counts([s, nodes])
    exact = trim(s, sizes_s)
    want = finalize.all_nodes(exact, batches)
    assert torch.equal(trim(nodes, sizes_n), want)
    R, K, _ = nodewise._bitmaps(torch.device("cuda"), 1)  # K: the flag word too
    assert not R.any() and not K.any(), "the bitmaps are left all zero"
    # the sample itself: each mini-batch's columns drew with its own key and positions
    for b, p in enumerate(parts):
        ref = gs.Matrix(graph.csc)[:, p]
        keys = combine(prefix, 2 + b)
        from gsample.backend.torch import select

        one = select.individual_sample(ref.csc, 7, False, keys)
        lo = sum(x.numel() for x in parts[:b])
        e0, e1 = int(exact.indptr[lo]), int(exact.indptr[lo + p.numel()])
        assert torch.equal(exact.rows[e0:e1] - b * n, one.rows)


@pytest.mark.parametrize("copies", [1, 3])
def test_all_nodes_of_a_collective_sample(graph, copies):
    """``all_nodes`` of a sample whose row space is its chosen rows (``row_ids``, here 3000
    of them, many also columns: those are dropped by ``gs_nodes_drop_cols``) equals the torch
    ``all_nodes``, one mini-batch and a super-batch, and leaves the bitmaps all zero."""
    from gsample.backend.cuda import layerwise

    n = graph.num_nodes
    parts = [_seeds(400, n, 20 + b) for b in range(copies)]
    cols = torch.cat([p + b * n for b, p in enumerate(parts)])
    prefix = key_prefix(5, 0)
    key = DeviceKey(
        torch.tensor([signed(prefix), 0], device="cuda"), prefix, 0, copies, n if copies > 1 else 0
    )
    s = layerwise.slice_collective_sample(graph.csc, cols, 3000, False, key)
    assert s.row_ids is not None and s.row_ids.numel() > 0
    in_cols = torch.isin(s.row_ids, cols)
    assert in_cols.any() and not in_cols.all()  # both kinds of chosen rows occur
    batches = (copies, n) if copies > 1 else None
    nodes = nodewise.all_nodes(s, batches)
    (sizes,), _ = read_counts([nodes])
    assert torch.equal(trim(nodes, sizes), finalize.all_nodes(s, batches))
    R, K, _ = nodewise._bitmaps(torch.device("cuda"), 1)  # K: the flag word too
    assert not R.any() and not K.any(), "the bitmaps are left all zero"


BAD_IDS = [-1, -(2**40), 2**31, 2**32 + 1, 2**40, 2**62, 2**63 - 1]


def _frontier_and_key(graph, copies: int, seed: int):
    """A (super-batch's) frontier of 200 nodes a mini-batch and its device key."""
    n = graph.num_nodes
    cols = torch.cat([_seeds(200, n, seed + b) + b * n for b in range(copies)])
    prefix = key_prefix(7, 1)
    key = DeviceKey(
        torch.tensor([signed(prefix), 0], device="cuda"), prefix, 0, copies, n if copies > 1 else 0
    )
    return cols, key


@pytest.mark.parametrize("bad", BAD_IDS + ["N"])
def test_the_sampler_keeps_a_clamped_frontier(graph, bad):
    """A bad frontier id is an empty column of id 0 in the result's ``col_ids`` (the kernel's
    clamped copy: the caller's tensor is unchanged), and raises an IndexError naming ``cols``
    when the deferred flags are read."""
    cols, key = _frontier_and_key(graph, 1, 3)
    cols[17] = graph.num_nodes if bad == "N" else bad
    before = cols.clone()
    with V.deferred():
        s = nodewise.slice_individual_sample(graph.csc, cols, 5, False, key)
        ids, indptr = s.csc.col_ids, s.csc.indptr
        assert torch.equal(cols, before) and ids.data_ptr() != cols.data_ptr()
        assert int(ids[17]) == 0, "the clamped copy holds node 0"
        assert torch.equal(ids[:17], cols[:17]) and torch.equal(ids[18:], cols[18:])
        assert int(indptr[18]) == int(indptr[17]), "a bad column is empty"
        with pytest.raises(IndexError, match="cols: node id"):
            V.read_back([])  # the recorded flags, as the runtime reads them


@pytest.mark.parametrize("bad", BAD_IDS + ["M"])
@pytest.mark.parametrize("copies", [1, 3])
@pytest.mark.parametrize("where", ["col_ids", "rows", "row_ids"])
def test_all_nodes_guards_ids_it_did_not_make(graph, bad, copies, where):
    """``all_nodes`` of a matrix holding an id outside its space (a column, an edge's row, or
    a row id of its row space; ``M``: the matrix's node count, a super-batch's ``copies *
    n``): its kernels read and write nothing through it, raise an IndexError naming
    ``all_nodes``, and leave the bitmaps and the flag zero, so the next call equals the torch
    code."""
    cols, key = _frontier_and_key(graph, copies, 30)
    batches = (copies, graph.num_nodes) if copies > 1 else None
    if where == "row_ids":  # a collective sample: local rows, a row space of ids
        from gsample.backend.cuda import layerwise

        good = layerwise.slice_collective_sample(graph.csc, cols, 3000, False, key)
    else:  # a node-wise sample: rows are node ids
        s = nodewise.slice_individual_sample(graph.csc, cols, 7, False, key)
        (sizes,), _ = read_counts([s])
        good = trim(s, sizes)
    field = getattr(good, where).clone()
    field[3] = good.num_nodes if bad == "M" else bad
    with pytest.raises(IndexError, match="all_nodes: a node id"):
        nodewise.all_nodes(replace(good, **{where: field}), batches)  # eager: raises at once
    R, K, flag = nodewise._bitmaps(torch.device("cuda"), 1)
    assert not R.any() and not K.any() and int(flag) == 0
    nodes = nodewise.all_nodes(good, batches)
    (sizes,), _ = read_counts([nodes])
    assert torch.equal(trim(nodes, sizes), finalize.all_nodes(good, batches))


def test_super_batched_loader_equals_one_by_one(graph):
    sampler = functools.partial(gs.compile(graphsage, backend="cuda"), fanouts=(10, 5))
    seeds = _seeds(2000, graph.num_nodes, 6)
    one = [b.out for b in gs.DataLoader(graph, sampler, seeds, 256, seed=2)]
    many = [b.out for b in gs.DataLoader(graph, sampler, seeds, 256, seed=2, super_batch=3)]
    assert len(one) == len(many)
    for a, b in zip(one, many):
        assert_same(b, a)


def test_every_runtime_option_draws_the_same(graph):
    seeds = _seeds(400, graph.num_nodes, 8)
    outs = []
    for options in (
        Options(lowered=False),
        Options(boundary_checks=False, sync_free=False),
        Options(sync_free=False),
        Options(),
    ):
        gs.manual_seed(5)
        outs.append(gs.compile(graphsage, backend="cuda", runtime=options)(graph, seeds))
    for o in outs[1:]:
        assert_same(o, outs[0])


# ----------------------------------------------------------------------------- layer-wise
def _edge_set(blocks):
    out = set()
    for i, b in enumerate(blocks):
        rows, cols, eids = b.edges()
        out |= {(i, *e) for e in zip(rows.tolist(), cols.tolist(), eids.tolist())}
    return out


def _agreement(a, b):
    x, y = _edge_set(a), _edge_set(b)
    return len(x & y) / max(len(x | y), 1)


@pytest.fixture(scope="module")
def normalized(graph):
    from helpers import example

    return example("ladies").normalize(graph)


def test_slice_reduce_rows_exact_and_reproducible(normalized):
    """A[:, cols].sum(axis=1) by the 128-bit integer sums: float64-accurate (so within a
    float32 rounding of the torch backend's float32 sums), the same bits every run, and
    IEEE's NaN / inf rules; a super-batch's encoded frontier gives every batch's rows (summed
    by chunk of rows, ``_chunked_row_sums``: the same bits)."""
    from gsample.backend.cuda import layerwise
    from gsample.backend.torch import fused_reduce

    A = normalized.csc
    cols = _seeds(3000, A.num_nodes, 9, repeats=True)
    got = layerwise.slice_reduce(A, cols, "sum", 1)
    ref64 = fused_reduce.slice_reduce(A.with_values(A.values.double()), cols, "sum", 1)
    assert got.dtype == torch.float32
    assert torch.allclose(got.double(), ref64, rtol=1e-6, atol=0)
    assert torch.equal(got, layerwise.slice_reduce(A, cols, "sum", 1))
    bounded = BoundedIds(torch.cat([cols, cols[:7]]), torch.tensor([cols.numel()], device="cuda"))
    assert torch.equal(layerwise.slice_reduce(A, bounded, "sum", 1), got)
    vals = A.values.clone()
    nan_edge, inf_edge = 0, int(A.indptr[int(cols[1])])
    vals[nan_edge] = float("nan")
    vals[inf_edge] = float("inf")
    B = A.with_values(vals)
    g, r = layerwise.slice_reduce(B, cols, "sum", 1), fused_reduce.slice_reduce(B, cols, "sum", 1)
    assert torch.equal(g.isnan(), r.isnan()) and torch.equal(g.isinf(), r.isinf())
    n = A.num_nodes
    enc = torch.cat([cols, cols[:500] + n])
    both = layerwise.slice_reduce(A, enc, "sum", 1, batches=(2, n))
    assert torch.equal(both[:n], got)
    assert torch.equal(both[n:], layerwise.slice_reduce(A, cols[:500], "sum", 1))
    # a super-batch sums by chunk of 2048 rows (n = 20,000: the last chunk is partial): the
    # same bits, NaN and inf included, and a bad id raises
    nan_both = layerwise.slice_reduce(B, enc, "sum", 1, batches=(2, n))
    torch.testing.assert_close(nan_both[:n], g, rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(
        nan_both[n:],
        layerwise.slice_reduce(B, cols[:500], "sum", 1),
        rtol=0,
        atol=0,
        equal_nan=True,
    )
    with pytest.raises(IndexError, match="cols"):
        layerwise.slice_reduce(
            A, torch.cat([enc, torch.tensor([2 * n], device="cuda")]), "sum", 1, batches=(2, n)
        )


@pytest.mark.parametrize("size", [1, 3, 40, 3000])
def test_one_mini_batch_s_row_sums_read_only_what_they_cleared(normalized, size):
    """One mini-batch's row sums clear only their exponents and flags (pass 1 clears each
    128-bit sum it adds to, the finish reads only the chunks of 2048 rows pass 1 wrote):
    with the caching allocator's blocks full of garbage before each call, every row is the
    bits of the same frontier's sums by chunk (a super-batch's, which clear nothing), NaN
    and infinities included, and 0 in the chunks the frontier does not reach."""
    from gsample.backend.cuda import layerwise

    A = normalized.csc
    n = A.num_nodes
    vals = A.values.clone()
    vals[::5003] = float("nan")
    vals[7::7001] = float("inf")
    vals[11::3001] = 0.0  # terms that add nothing (a row of only these stays 0, unmarked)
    for B in (A, A.with_values(vals)):
        cols = _seeds(size, n, 50 + size)
        other = _seeds(7, n, 51)
        want = layerwise.slice_reduce(B, torch.cat([cols, other + n]), "sum", 1, batches=(2, n))[:n]
        for _ in range(2):
            junk = torch.empty(8 * (3 * n + 4096), dtype=torch.uint8, device="cuda")
            junk.fill_(0xA5)  # freed below: the scratch that follows may reuse these bytes
            del junk
            got = layerwise.slice_reduce(B, cols, "sum", 1)
            torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
        indptr, rows = B.indptr.cpu(), B.rows.cpu()
        reached = torch.cat([rows[int(indptr[c]) : int(indptr[c + 1])] for c in cols.tolist()]).to(
            torch.int64
        )
        untouched = ~torch.isin(torch.arange(n) // 2048, reached // 2048)
        assert not got.cpu()[untouched].any()


@pytest.mark.parametrize("rounds", [1, 2, 3, 4])
def test_chunked_row_sums_of_several_rounds_a_tile_equal_one_mini_batch(
    normalized, rounds, monkeypatch
):
    """A super-batch's row sums by chunk (``gs_rowsum_chunk_counts`` and ``_fill`` with
    ``sub`` rounds of items a tile, the host's ``_rounds`` forced; the fill asks for a
    round's places together): every batch's rows the bits of its mini-batch alone (the
    passes over the row space), NaN and inf included; frontiers of long columns (staged
    tiles) and of the shortest ones (tiles of more columns than ``GS_STAGE``, unstaged)."""
    from gsample.backend.cuda import layerwise

    A = normalized.csc
    n = A.num_nodes
    vals = A.values.clone()
    vals[::5003] = float("nan")
    vals[7::7001] = float("inf")
    B = A.with_values(vals)
    # the shortest columns with an edge (the graph's 4000 shortest have none): tiles of
    # more columns than GS_STAGE, unstaged
    deg = A.indptr.diff()
    some = torch.nonzero(deg > 0).squeeze(1)
    short = some[torch.argsort(deg[some], stable=True)[:4000]]
    parts = [
        _seeds(3000, n, 40 + rounds, repeats=True),
        _seeds(500, n, 41 + rounds),
        short,
        short[1::2],
    ]
    singles = [layerwise.slice_reduce(B, p, "sum", 1) for p in parts]  # not forced: 1 round
    monkeypatch.setattr(layerwise, "_rounds", lambda *args: rounds)
    monkeypatch.setattr(layerwise, "SUM_ROUNDS", rounds)  # "auto" caps small frontiers at 1
    enc = torch.cat([p + b * n for b, p in enumerate(parts)])
    padded = BoundedIds(torch.cat([enc, enc[:9]]), torch.tensor([enc.numel()], device="cuda"))
    for frontier in (enc, padded):
        got = layerwise.slice_reduce(B, frontier, "sum", 1, batches=(len(parts), n))
        for b, want in enumerate(singles):
            torch.testing.assert_close(
                got[b * n : (b + 1) * n], want, rtol=0, atol=0, equal_nan=True
            )


def test_layer_wise_kernels_cut_columns_into_equal_tiles():
    """The layer-wise kernels run over tiles of 1024 frontier edges: columns of 0, 1, 1023,
    1024, 1025, 2048 and 5000 edges (tiles start inside and at the edge of them), repeated
    and padding columns give the row sums and the samples of the torch backend."""
    from gsample.backend.cuda import layerwise
    from gsample.backend.torch import fused_reduce, fused_select

    g = torch.Generator().manual_seed(8)
    degrees = [0, 1, 1023, 1024, 1025, 2048, 5000, 3, 0, 7]
    dst = torch.repeat_interleave(torch.arange(len(degrees)), torch.tensor(degrees))
    src = torch.randint(0, 6000, (dst.numel(),), generator=g)
    w = torch.rand(dst.numel(), generator=g) + 0.1
    A = gs.Matrix.from_edge_index(torch.stack([src, dst]), num_nodes=6000, weight=w).to("cuda")
    cols = torch.tensor([2, 3, 4, 0, 6, 5, 1, 4, 8, 9, 7, 6], device="cuda")
    csc = A.csc
    got = layerwise.slice_reduce(csc, cols, "sum", 1)
    ref = fused_reduce.slice_reduce(csc.with_values(csc.values.double()), cols, "sum", 1)
    assert torch.allclose(got.double(), ref, rtol=1e-6, atol=0)
    padded = BoundedIds(torch.cat([cols, cols[:5]]), torch.tensor([cols.numel()], device="cuda"))
    assert torch.equal(layerwise.slice_reduce(csc, padded, "sum", 1), got)
    for k in (1, 500, 5000, 6000):
        prefix = key_prefix(5, k)
        key = DeviceKey(torch.tensor([signed(prefix), 2], device="cuda"), prefix, 2)
        want = fused_select.slice_collective_sample(csc, cols, k, False, key.host(), None)
        for frontier in (cols, padded):
            s = layerwise.slice_collective_sample(csc, frontier, k, False, key)
            for f in ("indptr", "rows", "row_ids", "col_ids", "eids"):
                assert torch.equal(getattr(s, f), getattr(want, f)), (k, f)
            assert torch.equal(s.values, want.values)


@pytest.mark.parametrize("values", ["float32", "float64", "float16", "two per edge", None])
def test_the_kept_edge_pass_gathers_values_and_edge_ids(weighted, values):
    """One mini-batch's kept-edge pass writes each kept edge's value (4- or 8-byte entries)
    and id (a graph with edge ids of its own) as it goes; other values (2-byte, a row per
    edge) are gathered after it: every field the torch backend's."""
    from dataclasses import replace

    from gsample.backend.cuda import layerwise
    from gsample.backend.torch import fused_select

    csc = weighted.csc
    g = torch.Generator().manual_seed(11)
    v = torch.rand(csc.nnz, generator=g, dtype=torch.float64)
    v = (
        None
        if values is None
        else v.view(-1, 1).repeat(1, 2)
        if values == "two per edge"
        else v.to(getattr(torch, values))
    )
    A = replace(
        csc,
        values=None if v is None else v.cuda(),
        eids=torch.randperm(csc.nnz, generator=g).cuda(),
    )
    cols = _seeds(300, csc.num_nodes, 2)
    for k in (1, 700):
        prefix = key_prefix(6, k)
        key = DeviceKey(torch.tensor([signed(prefix), 2], device="cuda"), prefix, 2)
        want = fused_select.slice_collective_sample(A, cols, k, False, key.host(), None)
        got = layerwise.slice_collective_sample(A, cols, k, False, key)
        assert got.nnz > 0
        for f in ("indptr", "rows", "row_ids", "col_ids", "values", "eids"):
            a, b = getattr(got, f), getattr(want, f)
            assert (a is None and b is None) or (a.dtype == b.dtype and torch.equal(a, b)), f


@pytest.mark.parametrize("probs", [None, "shared", "per_batch"])
@pytest.mark.parametrize("k", [1, 300, 20_000])
@pytest.mark.parametrize(
    "N, room, mask",
    [
        (3, None, True),
        (3, 1, True),
        (3, 0, True),
        (1, None, True),
        (3, 1, False),
        (3, 0, False),
    ],
)
def test_super_batched_collective_sample_equals_the_torch_backend(
    graph, probs, k, N, room, mask, monkeypatch
):
    """A super-batch's collective draws run on the kernels (each batch's k rows among its
    own, over a padded frontier) and give the torch backend's super-batched sample, its
    kept edges listed and sorted (room None), counted per column after the list ran out of
    room (1), or counted per column from the start (0; one mini-batch always is); the kept
    edges written from a mask of them (the warp passes), or (``mask`` False: ``MASK_FINISH``)
    as before."""
    from gsample.backend.cuda import layerwise
    from gsample.backend.torch import fused_select

    monkeypatch.setattr(layerwise, "_LAST_KEPT", {})
    monkeypatch.setattr(layerwise, "MASK_FINISH", bool(mask))
    if room is not None:
        monkeypatch.setattr(layerwise, "_list_room", lambda *args: room)
    listed = []
    real = layerwise._kept_listed
    monkeypatch.setattr(layerwise, "_kept_listed", lambda *a: listed.append(1) or real(*a))
    masked = []
    real_mask = layerwise._kept_mask
    monkeypatch.setattr(layerwise, "_kept_mask", lambda *a: masked.append(1) or real_mask(*a))
    n = graph.num_nodes
    parts = [_seeds(150 + 40 * b, n, 20 + b) for b in range(N)]
    enc = torch.cat([p + b * n for b, p in enumerate(parts)])
    padded = BoundedIds(torch.cat([enc, enc[:9]]), torch.tensor([enc.numel()], device="cuda"))
    g = torch.Generator().manual_seed(k)
    p = None
    if probs is not None:
        p = torch.rand(n if probs == "shared" or N == 1 else N * n, generator=g) ** 3
        p[::7] = 0
        p = p.cuda()
    prefix = key_prefix(13, 2)
    key = DeviceKey(
        torch.tensor([signed(prefix), 5], device="cuda"), prefix, 5, N, n if N > 1 else 0
    )
    want = fused_select.slice_collective_sample(graph.csc, enc, k, False, key.host(), p)
    for frontier in (enc, padded):
        got = layerwise.slice_collective_sample(graph.csc, frontier, k, False, key, p)
        assert got.num_nodes == want.num_nodes == N * n
        for f in ("indptr", "rows", "row_ids", "col_ids", "eids"):
            assert torch.equal(getattr(got, f), getattr(want, f)), f
    assert bool(listed) == (room is None and N > 1)  # (the first call lists, at least)
    if room is not None:  # (each batch keeps an edge: more than a room of 1)
        assert bool(masked) == bool(mask)  # the mask passes wrote the kept edges


@pytest.mark.parametrize("N", [1, 3])
@pytest.mark.parametrize("select", ["radix", "torch"])
def test_collective_positions_are_written_at_the_drawn_rows_only(graph, N, select):
    """The drawn rows and their positions come from the drawn rows' bits
    (``gs_chosen_bits``): ``newpos`` and ``chosen`` are neither cleared nor scanned, so with
    the caching allocator's blocks full of garbage before each call the sample is still the
    torch backend's, bit for bit (a position read at a row not drawn, or a drawn row left
    out, would show), for one mini-batch and a super-batch, radix select or torch.topk."""
    from gsample.backend.cuda import layerwise
    from gsample.backend.torch import fused_select

    n = graph.num_nodes
    enc = torch.cat([_seeds(200 + 30 * b, n, 60 + b) + b * n for b in range(N)])
    p = (torch.rand(N * n, generator=torch.Generator().manual_seed(6)) ** 3).cuda()
    p[::5] = 0
    prefix = key_prefix(17, 1)
    key = DeviceKey(
        torch.tensor([signed(prefix), 3], device="cuda"), prefix, 3, N, n if N > 1 else 0
    )
    for k in (1, 150, n):  # (k = n: every candidate drawn)
        want = fused_select.slice_collective_sample(graph.csc, enc, k, False, key.host(), p)
        for fill in (0xA5, 0xFF):
            junk = torch.empty(16 * N * n + (1 << 20), dtype=torch.uint8, device="cuda")
            junk.fill_(fill)  # freed: newpos and chosen may take these bytes
            del junk
            got = layerwise.slice_collective_sample(
                graph.csc, enc, k, False, key, p, _select=select
            )
            for f in ("indptr", "rows", "row_ids", "col_ids", "eids"):
                assert torch.equal(getattr(got, f), getattr(want, f)), (f, k, fill)


@pytest.mark.parametrize("rounds", [2, 3, 4])
@pytest.mark.parametrize("probs", [None, "shared"])
def test_collective_passes_of_several_rounds_a_tile_equal_the_torch_backend(
    graph, rounds, probs, monkeypatch
):
    """gs_frontier_rows and gs_kept_append with ``sub`` rounds of items a tile (GS_TILES_OF):
    the test graph's mean degree makes _rounds 1, so the rounds are forced here; a
    super-batch's frontier of some 9,000 edges has a last partial tile whose later rounds
    hold no edge, and tiles of more columns than GS_STAGE (read unstaged)."""
    from gsample.backend.cuda import layerwise
    from gsample.backend.torch import fused_select

    monkeypatch.setattr(layerwise, "_LAST_KEPT", {})
    monkeypatch.setattr(layerwise, "_rounds", lambda *args: rounds)
    listed = []
    real = layerwise._kept_listed
    monkeypatch.setattr(layerwise, "_kept_listed", lambda *a: listed.append(1) or real(*a))
    n, N, k = graph.num_nodes, 3, 300
    parts = [_seeds(150 + 40 * b, n, 20 + b) for b in range(N)]
    enc = torch.cat([p + b * n for b, p in enumerate(parts)])
    padded = BoundedIds(torch.cat([enc, enc[:9]]), torch.tensor([enc.numel()], device="cuda"))
    p = None
    if probs is not None:
        p = torch.rand(n, generator=torch.Generator().manual_seed(rounds)) ** 3
        p[::7] = 0
        p = p.cuda()
    prefix = key_prefix(13, 2)
    key = DeviceKey(torch.tensor([signed(prefix), 5], device="cuda"), prefix, 5, N, n)
    want = fused_select.slice_collective_sample(graph.csc, enc, k, False, key.host(), p)
    for frontier in (enc, padded):
        got = layerwise.slice_collective_sample(graph.csc, frontier, k, False, key, p)
        for f in ("indptr", "rows", "row_ids", "col_ids", "eids"):
            assert torch.equal(getattr(got, f), getattr(want, f)), f
    assert listed  # the kept list (gs_kept_append) ran


@pytest.mark.parametrize("weighted_graph", [False, True])
def test_rows_of_a_column_slice_equal_the_torch_backend(graph, weighted, weighted_graph):
    """A[rows, cols] on the layer-wise kernels (SLICE_ROWS_COLS): the rows in their order,
    repeated and padding columns, hubs; the two slices' result edge for edge."""
    from gsample.backend.cuda import layerwise
    from gsample.backend.torch import extract as T

    G = weighted if weighted_graph else graph
    n = G.num_nodes
    nodes = _seeds(3000, n, 31)
    cols = torch.cat([nodes, nodes[:50]])
    padded = BoundedIds(torch.cat([cols, cols[:11]]), torch.tensor([cols.numel()], device="cuda"))
    want = T.slice_rows_cols(G.csc, nodes, cols)
    for frontier in (cols, padded):
        got = layerwise.slice_rows_cols(G.csc, nodes, frontier)
        for f in ("indptr", "rows", "row_ids", "col_ids", "values", "eids"):
            a, b = getattr(got, f), getattr(want, f)
            assert (a is None and b is None) or torch.equal(a, b), f
    assert want.nnz > 0


def test_shadow_compiles_to_the_fused_slice_and_equals_the_torch_backend(graph):
    from helpers import example

    fn = example("shadow").shadow
    seeds = _seeds(256, graph.num_nodes, 32)
    program = gs.compile(fn, backend="cuda").program(graph, seeds)
    assert any(n.op.value == "slice_rows_cols" for n in program.nodes)
    ref, got = _both(fn, graph, seeds)
    assert_same(got, ref)


@pytest.mark.parametrize("sampler", ["ladies", "fastgcn", "uniform"])
def test_layer_wise_samplers_equal_the_torch_backend(graph, normalized, sampler):
    from helpers import example

    if sampler == "ladies":
        fn, G, kw = example("ladies").ladies, normalized, {"layers": (300, 300, 300)}
    elif sampler == "fastgcn":
        fn, G, kw = example("fastgcn").fastgcn, graph, {"layers": (300, 300)}
    else:

        def fn(A, seeds, k=300):
            s = A[:, seeds].collective_sample(k)
            return [s, A[:, s.all_nodes()].collective_sample(k)]

        G, kw = graph, {}
    seeds = _seeds(256, G.num_nodes, 11)
    ref, got = _both(fn, G, seeds, **kw)
    if sampler == "uniform":
        assert_same(got, ref)  # uniform draws: identical
    else:
        assert _agreement(got, ref) >= 0.999  # weighted: float rounding of probabilities


def test_ladies_reads_back_once_per_layer_and_checks_its_probabilities(normalized):
    from helpers import example

    sampler = gs.compile(example("ladies").ladies, backend="cuda")
    seeds = _seeds(512, normalized.num_nodes, 12)
    program = sampler.lowered(normalized, seeds, layers=(500, 500, 500))
    assert program.num_syncs <= 7, program.format()
    for _ in range(2):  # warm: kernels compiled, the CUDA graphs captured
        sampler(normalized, seeds, layers=(500, 500, 500))
    syncs = host_syncs(lambda: sampler(normalized, seeds, layers=(500, 500, 500)))
    assert len(syncs) <= 6, syncs

    def bad_bias(A, seeds, k=100):
        sub = A[:, seeds]
        p = (sub**2).sum(axis=1) - 1.0  # negative: the check must catch it
        return sub.collective_sample(k, node_probs=p)

    with pytest.raises(ValueError, match="node_probs: contains negative values"):
        gs.compile(bad_bias, backend="cuda")(normalized, seeds)
    # the values are checked by the sampler's kernel (the check step only converts them),
    # one mini-batch or a super-batch, NaN as well as negative
    labels = [s.label for s in program.steps]
    assert any("node_probs: checked in the kernel" in x for x in labels), labels
    with pytest.raises(ValueError, match="node_probs: contains negative values"):
        list(
            gs.DataLoader(
                normalized, gs.compile(bad_bias, backend="cuda"), seeds, 128, super_batch=4
            )
        )

    def nan_bias(A, seeds, k=100):
        sub = A[:, seeds]
        return sub.collective_sample(k, node_probs=(sub**2).sum(axis=1) * float("nan"))

    with pytest.raises(ValueError, match="node_probs: contains NaN or infinite values"):
        gs.compile(nan_bias, backend="cuda")(normalized, seeds)


# ----------------------------------------------------------------------------- CUDA graphs
def test_cuda_graph_replays_draw_every_call_s_own_samples(graph, weighted):
    """The third call of a shape replays a captured graph: every call still draws its own
    samples (new keys, new seeds), its results survive the next replay (copied out), a bad
    seed still raises, and another graph of the same size is captured again."""
    sampler = gs.compile(graphsage, backend="cuda")
    reference = gs.compile(graphsage, backend="torch")
    seeds = [_seeds(300, graph.num_nodes, 20 + i) for i in range(5)]
    assert sampler.lowered(graph, seeds[0]).region is not None
    gs.manual_seed(8)
    got = [sampler(graph, s) for s in seeds]  # eager, capture, replays
    gs.manual_seed(8)
    want = [reference(graph, s) for s in seeds]
    for g, w in zip(got, want):
        assert_same(g, w)
    bad = seeds[0].clone()
    bad[3] = -1
    with pytest.raises(IndexError, match="cols: node id -1 is negative"):
        sampler(graph, bad)
    other = gs.datasets.rmat(graph.num_nodes, 100_000, seed=9).to("cuda")
    for _ in range(3):
        gs.manual_seed(1)
        a = sampler(other, seeds[1])
        gs.manual_seed(1)
        assert_same(a, reference(other, seeds[1]))


def test_a_replay_survives_the_scratch_growing(graph):
    """A super-batch's id space grows the all_nodes bitmaps; a graph captured before still
    reads the old ones, which must stay allocated (and zero) rather than become another
    tensor's memory (found by the runtime benchmark: one-at-a-time samples changed after a
    super-batched epoch)."""
    from gsample.runtime import cuda_graphs

    if not cuda_graphs.enabled():  # scripts/memcheck.py turns the graphs off
        pytest.skip("CUDA graphs are off in this process (GSAMPLE_CUDA_GRAPHS=0 or no caching)")
    sampler = gs.compile(graphsage, backend="cuda")
    reference = gs.compile(graphsage, backend="torch")
    seeds = _seeds(300, graph.num_nodes, 40)
    for _ in range(3):  # eager, capture, replay
        sampler(graph, seeds)
    assert len(sampler.lowered(graph, seeds).region.captured) == 1
    words = nodewise._SCRATCH[torch.cuda.current_device()].shape[1]
    nodewise._bitmaps(torch.device("cuda", torch.cuda.current_device()), 4 * words)
    junk = [torch.full((2, words), -1, dtype=torch.int32, device="cuda") for _ in range(4)]
    for i in range(2):
        gs.manual_seed(i)
        got = sampler(graph, seeds)
        gs.manual_seed(i)
        assert_same(got, reference(graph, seeds))
    assert all(bool((j == -1).all()) for j in junk)  # nothing wrote into them


def test_gsample_cuda_graphs_0_runs_the_region_eagerly(graph, monkeypatch):
    """``GSAMPLE_CUDA_GRAPHS=0`` (scripts/memcheck.py) captures nothing: the same samples."""
    from gsample.runtime import cuda_graphs

    allowed = cuda_graphs.enabled()  # not under scripts/memcheck.py's allocators
    monkeypatch.setenv("GSAMPLE_CUDA_GRAPHS", "0")
    sampler = gs.compile(graphsage, backend="cuda")
    reference = gs.compile(graphsage, backend="torch")
    seeds = _seeds(300, graph.num_nodes, 30)
    program = sampler.lowered(graph, seeds)
    assert program.region is not None and not program.region.enabled
    for i in range(4):
        gs.manual_seed(i)
        got = sampler(graph, seeds)
        gs.manual_seed(i)
        assert_same(got, reference(graph, seeds))
    assert program.region.captured == {}
    monkeypatch.undo()
    if not allowed:
        return
    other = gs.compile(graphsage, backend="cuda")
    for _ in range(3):
        other(graph, seeds)
    assert len(other.lowered(graph, seeds).region.captured) == 1  # the control


def _uniform_layers(A, seeds, k=300):
    s = A[:, seeds].collective_sample(k)
    return [s, A[:, s.all_nodes()].collective_sample(k)]


def _scaled_ladies(A, seeds, scale, k=200):
    """Two LADIES-like layers whose probabilities are scaled by an argument (a NaN scale
    makes them invalid after the graphs were captured)."""
    blocks = []
    for _ in range(2):
        sub = A[:, seeds]
        p = (sub**2).sum(axis=1) * scale
        s = sub.collective_sample(k, node_probs=p / p.sum().clamp(min=1e-30))
        blocks.append(s)
        seeds = s.all_nodes()
    return blocks


@pytest.mark.parametrize("sampler", ["ladies", "uniform"])
def test_layer_wise_regions_replay_every_call_s_own_samples(graph, normalized, sampler):
    """A layer-wise sampler captures one CUDA graph per layer (its row sums, probabilities
    and the device part of its collective sampler, up to the layer's read-back) and replays
    them from the third call of a shape on: every call still draws its own samples (those
    of the torch backend), results survive later replays, the frontiers' varying bounds
    share a few graphs, and the super-batched loader draws the same."""
    from helpers import example

    from gsample.runtime import cuda_graphs

    if not cuda_graphs.enabled():  # scripts/memcheck.py turns the graphs off
        pytest.skip("CUDA graphs are off in this process (GSAMPLE_CUDA_GRAPHS=0 or no caching)")
    if sampler == "ladies":
        fn, G, layers = (
            functools.partial(example("ladies").ladies, layers=(300, 300, 300)),
            normalized,
            3,
        )
    else:
        fn, G, layers = _uniform_layers, graph, 2
    compiled, reference = gs.compile(fn, backend="cuda"), gs.compile(fn, backend="torch")
    seeds = [_seeds(256, G.num_nodes, 50 + i) for i in range(7)]
    gs.manual_seed(8)
    got = [compiled(G, s) for s in seeds]  # eager, capture, replays
    gs.manual_seed(8)
    want = [reference(G, s) for s in seeds]
    for g, w in zip(got, want):
        if sampler == "uniform":
            assert_same(g, w)
        else:
            assert _agreement(g, w) >= 0.999  # float rounding of the probabilities
    program = compiled.lowered(G, seeds[0])
    assert len(program.regions) == layers, program.format()
    assert all(1 <= len(r.captured) <= 3 for r in program.regions), [
        len(r.captured) for r in program.regions
    ]
    pool = torch.cat(seeds)
    one = [b.out for b in gs.DataLoader(G, compiled, pool, 256, seed=3)]
    for _ in range(2):  # the second epoch replays
        sb = [b.out for b in gs.DataLoader(G, compiled, pool, 256, seed=3, super_batch=3)]
        assert len(sb) == len(one)
        for a, b in zip(sb, one):
            if sampler == "uniform":
                assert_same(a, b)
            else:
                assert _agreement(a, b) >= 0.999


def test_bad_probabilities_raise_after_the_layers_replay(normalized):
    """Probabilities checked in the captured kernels still raise, naming ``node_probs``,
    when a replayed graph computed them; the next good call draws as the torch backend."""
    from gsample.runtime import cuda_graphs

    if not cuda_graphs.enabled():
        pytest.skip("CUDA graphs are off in this process (GSAMPLE_CUDA_GRAPHS=0 or no caching)")
    compiled = gs.compile(_scaled_ladies, backend="cuda")
    reference = gs.compile(_scaled_ladies, backend="torch")
    seeds = _seeds(256, normalized.num_nodes, 60)
    one = torch.ones((), device="cuda")
    for _ in range(4):
        compiled(normalized, seeds, one)
    assert all(r.captured for r in compiled.lowered(normalized, seeds, one).regions)
    with pytest.raises(ValueError, match="node_probs: contains NaN or infinite values"):
        compiled(normalized, seeds, torch.full((), float("nan"), device="cuda"))
    with pytest.raises(ValueError, match="node_probs: contains negative values"):
        compiled(normalized, seeds, -one)
    gs.manual_seed(4)
    got = compiled(normalized, seeds, one)
    gs.manual_seed(4)
    assert _agreement(got, reference(normalized, seeds, one)) >= 0.999


def _probs_and_a_view(A, seeds, k=100):
    """Returns a probability vector computed inside a captured region, and a view of it."""
    sub = A[:, seeds]
    p = (sub**2).sum(axis=1)
    p = p / p.sum().clamp(min=1e-30)
    return sub.collective_sample(k, node_probs=p), p, p[:50]


def test_results_in_a_graph_s_memory_and_views_of_them_are_copied_out(normalized):
    """Dense values a replayed region computed are returned as copies, views of them too:
    the next replay must not change what an earlier call returned."""
    from gsample.runtime import cuda_graphs

    if not cuda_graphs.enabled():
        pytest.skip("CUDA graphs are off in this process (GSAMPLE_CUDA_GRAPHS=0 or no caching)")
    compiled = gs.compile(_probs_and_a_view, backend="cuda")
    reference = gs.compile(_probs_and_a_view, backend="torch")
    seeds = [_seeds(256, normalized.num_nodes, 70 + i) for i in range(5)]
    got = [compiled(normalized, s) for s in seeds]  # eager, capture, replays
    assert compiled.lowered(normalized, seeds[0]).regions[0].captured
    for g, s in zip(got, seeds):
        _, p, _view = reference(normalized, s)
        assert torch.allclose(g[1], p, rtol=1e-5, atol=1e-12)
        assert torch.equal(g[2], g[1][:50])
        assert (
            g[2].untyped_storage().data_ptr() != got[-1][2].untyped_storage().data_ptr()
            or g is got[-1]
        )
