"""The native CPU node-wise sampling (``gsample/backend/torch/nodewise_native.py``) against the
torch code (``GSAMPLE_NATIVE_CPU=0``), bit for bit: the fused ``slice_individual_sample`` and
``individual_sample`` of a materialised matrix, uniform with and without replacement, op keys
and super-batch keys, hubs (degree far above k), empty columns, repeated and empty frontiers,
one thread and two; weighted super-batches; the inputs it must leave to the torch code (ids
out of range, a super-batch out of batch order, keys of non-consecutive batches, weights); a
compiled GraphSAGE sampler; a forked child."""

import os
from dataclasses import replace as dc_replace

import pytest
import torch
from helpers import assert_same_csc, in_forked_child

import gsample as gs
from gsample.backend.torch import extract, fused_select, nodewise_native, select
from gsample.base.random import BatchKeys, op_key

pytestmark = pytest.mark.skipif(
    not nodewise_native.available(), reason="no native CPU sampling (no C++ compiler, or disabled)"
)

KS = [0, 1, 5, 25, 40]
KEY = op_key(3, 1, 4)


@pytest.fixture(scope="module")
def graph():
    """An R-MAT graph (many empty columns, hubs of degree in the hundreds) with values and
    edge ids, plus one hub of 3000 in-edges (node 7)."""
    g = gs.datasets.rmat(4000, 40000, seed=3, weighted=True).csc
    src = torch.randint(0, 4000, (3000,), generator=torch.Generator().manual_seed(1))
    ei = torch.stack(
        [torch.cat([g.rows, src]), torch.cat([g.edge_cols(), torch.full_like(src, 7)])]
    )
    m = gs.Matrix.from_edge_index(ei, 4000, weight=torch.rand(ei.shape[1], dtype=torch.float64))
    A = m.csc
    eids = torch.randperm(A.nnz, generator=torch.Generator().manual_seed(2))
    return dc_replace(A, eids=eids)


@pytest.fixture(params=[1, 2], ids=["1t", "2t"])
def threads(request, monkeypatch):
    monkeypatch.setattr(nodewise_native, "THREADS", request.param)
    return request.param


def torch_code(monkeypatch, fn, *args):
    """``fn(*args)`` with the native path off: the reference."""
    with monkeypatch.context() as m:
        m.setenv("GSAMPLE_NATIVE_CPU", "0")
        assert not nodewise_native.enabled()
        return fn(*args)


def native_only(monkeypatch):
    """Make the torch code fail, so a quiet fallback cannot pass a comparison."""

    def refuse(*args, **kwargs):
        raise AssertionError("the torch code ran")

    monkeypatch.setattr(fused_select, "select_in_columns", refuse)
    monkeypatch.setattr(fused_select, "_batched_individual", refuse)
    monkeypatch.setattr(select, "select_in_columns", refuse)


def frontier(graph, size, seed):
    """Random ids with repeats, the hub, and columns with no edge at all."""
    deg = graph.degrees()
    g = torch.Generator().manual_seed(seed)
    empty = torch.nonzero(deg == 0).squeeze(1)[:5]
    ids = torch.randint(0, graph.num_nodes, (size,), generator=g)
    cols = torch.cat([ids, torch.tensor([7, 7]), empty, ids[:10]])
    return cols[torch.randperm(cols.numel(), generator=g)]


def _check_shape(S, cols, k, replace, graph):
    """Properties beside equality: counts per column, edges of the right column, sorted."""
    deg = graph.indptr[cols + 1] - graph.indptr[cols]
    want = torch.where(deg > 0, k, 0) if replace else deg.clamp(max=k)
    assert torch.equal(S.indptr[1:] - S.indptr[:-1], want)


@pytest.mark.parametrize("replace", [False, True], ids=["without", "with"])
@pytest.mark.parametrize("k", KS)
def test_slice_equals_torch(graph, k, replace, threads, monkeypatch):
    cols = frontier(graph, 1500, k)
    want = torch_code(
        monkeypatch, fused_select.slice_individual_sample, graph, cols, k, replace, KEY
    )
    native_only(monkeypatch)
    got = fused_select.slice_individual_sample(graph, cols, k, replace, KEY)
    assert_same_csc(got, want)
    _check_shape(got, cols, k, replace, graph)
    assert deg_max(graph, cols) > 10 * max(k, 1) or k == 0  # a hub was sampled


def deg_max(graph, cols):
    return int((graph.indptr[cols + 1] - graph.indptr[cols]).max())


@pytest.mark.parametrize("replace", [False, True], ids=["without", "with"])
@pytest.mark.parametrize("k", [1, 25, 300])
def test_materialised_equals_torch(graph, k, replace, threads, monkeypatch):
    """``individual_sample`` of a column slice (col_ids set) and of the whole graph."""
    S = extract.slice_cols(graph, frontier(graph, 800, 7))
    for M in (S, graph):
        want = torch_code(monkeypatch, select.individual_sample, M, k, replace, KEY)
        with monkeypatch.context() as m:
            native_only(m)
            got = select.individual_sample(M, k, replace, KEY)
        assert_same_csc(got, want)


@pytest.mark.parametrize("replace", [False, True], ids=["without", "with"])
def test_sub_matrix_slice_equals_torch(graph, replace, threads, monkeypatch):
    """Slicing a sub-matrix: frontier ids outside its column space are empty columns."""
    S = extract.slice_cols(graph, torch.arange(0, 4000, 3))
    cols = frontier(graph, 600, 11)
    want = torch_code(monkeypatch, fused_select.slice_individual_sample, S, cols, 5, replace, KEY)
    native_only(monkeypatch)
    assert_same_csc(fused_select.slice_individual_sample(S, cols, 5, replace, KEY), want)


@pytest.mark.parametrize("replace", [False, True], ids=["without", "with"])
@pytest.mark.parametrize("k", [1, 10, 40])
def test_super_batch_equals_torch_and_each_batch(graph, k, replace, threads, monkeypatch):
    """Four mini-batches (one empty) in one call: the torch code's super-batched sample, and
    each batch's part is the batch's own sample, encoded."""
    n = graph.num_nodes
    parts = [frontier(graph, size, 20 + size)[: size + 3] for size in (300, 0, 120, 500)]
    parts[1] = parts[1][:0]
    enc = torch.cat([p + b * n for b, p in enumerate(parts)])
    keys = BatchKeys.of(5, 2, 9, len(parts), n)
    fn = fused_select.slice_individual_sample
    want = torch_code(monkeypatch, fn, graph, enc, k, replace, keys)
    own = [
        torch_code(monkeypatch, fn, graph, p, k, replace, op_key(5, 2, 9 + b))
        for b, p in enumerate(parts)
    ]
    # the materialised form: individual_sample of the block-diagonal slice (keyed by its
    # encoded column ids)
    B = dc_replace(extract.slice_cols(graph, enc % n), col_ids=enc, num_nodes=n * len(parts))
    want_b = torch_code(monkeypatch, select.individual_sample, B, k, replace, keys)
    native_only(monkeypatch)
    got = fn(graph, enc, k, replace, keys)
    assert_same_csc(got, want)
    assert got.num_nodes == n * len(parts)
    at = 0
    for b, (p, o) in enumerate(zip(parts, own)):
        lo, hi = int(got.indptr[at]), int(got.indptr[at + p.numel()])
        assert torch.equal(got.rows[lo:hi], o.rows + b * n)
        assert torch.equal(got.eids[lo:hi], o.eids)
        at += p.numel()
    assert_same_csc(select.individual_sample(B, k, replace, keys), want_b)


def weights(graph, dtype, seed):
    """Edge weights over many scales: zeros (a column of only zeros among them), tiny ones
    (below the smallest normal double, for float64) and large ones."""
    g = torch.Generator().manual_seed(seed)
    w = torch.rand(graph.nnz, generator=g, dtype=torch.float64)
    w = w * 10.0 ** torch.randint(-6, 6, (graph.nnz,), generator=g)
    w[torch.rand(graph.nnz, generator=g) < 0.2] = 0.0
    lo = int(graph.indptr[7])
    w[lo : lo + 50] = 1e-310 if dtype == torch.float64 else 1e-30
    deg = graph.degrees()
    zero = int(torch.nonzero(deg == 3)[0])
    w[graph.indptr[zero] : graph.indptr[zero + 1]] = 0.0
    return w.to(dtype), zero


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("k", [1, 5, 40])
def test_weighted_with_replacement_equals_torch(graph, k, dtype, threads, monkeypatch):
    """Inverse-CDF draws (the running sum's roundings included), fused and materialised."""
    probs, zero = weights(graph, dtype, k)
    cols = torch.cat([frontier(graph, 1200, 30 + k), torch.tensor([zero, 7])])
    fn = fused_select.slice_individual_sample
    want = torch_code(monkeypatch, fn, graph, cols, k, True, KEY, probs)
    S = extract.slice_cols(graph.with_values(probs), cols)
    want_m = torch_code(monkeypatch, select.individual_sample, S, k, True, KEY, S.values)
    native_only(monkeypatch)
    got = fn(graph, cols, k, True, KEY, probs)
    assert_same_csc(got, want)
    assert got.indptr[-1] > 0 and int(got.indptr[-1] - got.indptr[-2]) == k  # the hub drew
    assert int(got.indptr[-2] - got.indptr[-3]) == 0  # all weights zero: nothing drawn
    assert_same_csc(select.individual_sample(S, k, True, KEY, S.values), want_m)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("k", [1, 10])
def test_weighted_super_batch_equals_torch_and_each_batch(graph, k, dtype, threads, monkeypatch):
    """A super-batch's weighted draws with replacement (PASS's, on its compacted block-
    diagonal slice): four mini-batches (one empty) in one native pass, no torch code (the
    reference loops over the mini-batches in Python), each batch's running sum from 0: the
    torch code's sample, and each batch's part is the batch's own sample, encoded."""
    n = graph.num_nodes
    probs, _ = weights(graph, dtype, 40 + k)
    # a positive weight in every column (a super-batch's weights are checked: a column of
    # zeros is an error), the others zero, tiny or large
    first = graph.indptr[:-1][graph.degrees() > 0]
    probs[first] = torch.where(probs[first] > 0, probs[first], 0.5)
    g = graph.with_values(probs)
    parts = [frontier(graph, size, 50 + size)[: size + 3] for size in (300, 0, 120, 500)]
    parts[1] = parts[1][:0]
    enc = torch.cat([p + b * n for b, p in enumerate(parts)])
    keys = BatchKeys.of(5, 2, 9, len(parts), n)
    B = dc_replace(extract.slice_cols(g, enc % n), col_ids=enc, num_nodes=n * len(parts))
    fn = select.individual_sample
    want = torch_code(monkeypatch, fn, B, k, True, keys, B.values)
    slices = [extract.slice_cols(g, p) for p in parts]
    own = [
        torch_code(monkeypatch, fn, S, k, True, op_key(5, 2, 9 + b), S.values)
        for b, S in enumerate(slices)
    ]
    native_only(monkeypatch)
    got = fn(B, k, True, keys, B.values)
    assert_same_csc(got, want)
    at = 0
    for p, o in zip(parts, own):
        lo, hi = int(got.indptr[at]), int(got.indptr[at + p.numel()])
        assert torch.equal(got.rows[lo:hi], o.rows)  # (a slice's rows: the graph's ids)
        assert torch.equal(got.eids[lo:hi], o.eids)
        at += p.numel()
    assert deg_max(graph, enc % n) > 10 * k  # a hub was sampled


def test_weighted_super_batch_checks_weights_first(graph, monkeypatch):
    """The super-batch's weights are checked before the native draws, with the torch code's
    errors (a negative weight; no positive weight in a column with edges)."""
    n = graph.num_nodes
    enc = torch.tensor([3, 5, n + 7, n + 5])
    keys = BatchKeys.of(0, 0, 0, 2, n)
    B = dc_replace(extract.slice_cols(graph, enc % n), col_ids=enc, num_nodes=2 * n)
    for bad in (-1.0, 0.0):
        w = torch.rand(B.nnz, dtype=torch.float64)
        w[int(B.indptr[2]) : int(B.indptr[3])] = bad  # batch 1's first column (the hub)
        with pytest.raises(ValueError) as native:
            select.individual_sample(B, 3, True, keys, w)
        with pytest.raises(ValueError) as ref:
            torch_code(monkeypatch, select.individual_sample, B, 3, True, keys, w)
        assert str(native.value) == str(ref.value)


def test_weighted_it_does_not_take_runs_torch(graph, monkeypatch):
    """Without replacement, alias draws, unchecked weights, float16, a super-batch: the torch
    code (the native function declines)."""
    probs = torch.rand(graph.nnz, dtype=torch.float64)
    cols = torch.tensor([7, 3, 3])
    f = nodewise_native.slice_individual_sample
    assert f(graph, cols, 4, True, KEY, probs) is not None
    assert f(graph, cols, 4, False, KEY, probs) is None
    assert f(graph, cols, 4, True, KEY, probs, "alias") is None
    assert f(graph, cols, 4, True, KEY, probs, "cdf", False) is None
    assert f(graph, cols, 4, True, KEY, probs.half()) is None
    assert f(graph, cols, 4, True, KEY, probs[:-1]) is None
    keys = BatchKeys.of(0, 0, 0, 1, graph.num_nodes)
    assert f(graph, cols, 4, True, keys, probs) is None  # (the fused slice's: not taken)
    assert f(graph, cols, 4, True, keys) is not None


def test_draws_fit_their_laws():
    """Goodness of fit of the native draws themselves (chi-square, fixed keys): a column of 40
    edges repeated 4000 times, 5 draws each: without replacement every edge is in a sample
    with probability 5/40 (and no sample repeats an edge); with weights and replacement,
    each draw takes an edge with probability proportional to its weight."""
    from scipy import stats

    deg, reps, k = 40, 4000, 5
    ei = torch.stack([torch.arange(deg), torch.zeros(deg, dtype=torch.int64)])
    w = torch.arange(1, deg + 1, dtype=torch.float64)
    A = gs.Matrix.from_edge_index(ei, deg, weight=w).csc
    cols = torch.zeros(reps, dtype=torch.int64)
    S = nodewise_native.slice_individual_sample(A, cols, k, False, KEY)
    rows = S.rows.view(reps, k)
    assert bool((rows[:, 1:] != rows[:, :-1]).all())  # distinct (sorted) in every sample
    seen = torch.bincount(S.rows, minlength=deg).double()
    p = stats.chisquare(seen.numpy(), torch.full((deg,), reps * k / deg).numpy()).pvalue
    assert p > 1e-3, p
    S = nodewise_native.slice_individual_sample(A, cols, k, True, KEY, A.values)
    seen = torch.bincount(S.rows, minlength=deg).double()
    p = stats.chisquare(seen.numpy(), (reps * k * w / w.sum()).numpy()).pvalue
    assert p > 1e-3, p


def test_empty_frontier_and_empty_graph(threads, monkeypatch):
    empty = gs.Matrix.from_edge_index(torch.zeros((2, 0), dtype=torch.int64), 6).csc
    cases = [(empty, torch.tensor([0, 5, 5]), 3), (empty, torch.tensor([], dtype=torch.int64), 3)]
    for A, cols, k in cases:
        for replace in (False, True):
            fn = fused_select.slice_individual_sample
            want = torch_code(monkeypatch, fn, A, cols, k, replace, KEY)
            with monkeypatch.context() as m:
                native_only(m)
                got = fn(A, cols, k, replace, KEY)
            assert_same_csc(got, want)
            assert got.nnz == 0 and got.indptr.tolist() == [0] * (cols.numel() + 1)


def test_default_threads_on_a_large_frontier(graph, monkeypatch):
    """The default thread count (torch's) on a frontier big enough for several threads."""
    monkeypatch.setattr(nodewise_native, "THREADS", None)
    cols = torch.randint(0, graph.num_nodes, (200_000,), generator=torch.Generator().manual_seed(3))
    for replace in (False, True):
        want = torch_code(
            monkeypatch, fused_select.slice_individual_sample, graph, cols, 10, replace, KEY
        )
        assert_same_csc(fused_select.slice_individual_sample(graph, cols, 10, replace, KEY), want)


def test_bad_ids_leave_it_to_the_torch_code(graph, monkeypatch):
    """Ids out of range (negative, past the graph, 2**40), a super-batch out of batch order
    and a bad segment: the native code reads nothing out of bounds and declines; the checked
    public paths raise their errors naming ``cols``."""
    n = graph.num_nodes
    for bad in ([0, n], [-1, 3], [2**40, 1], [5, -(2**40)]):
        cols = torch.tensor(bad)
        assert nodewise_native.slice_individual_sample(graph, cols, 5, False, KEY) is None
        keys = BatchKeys.of(0, 0, 0, 2, n)  # ids in [0, 2 n)
        enc = torch.where(cols == n, 2 * n, cols)
        assert nodewise_native.slice_individual_sample(graph, enc, 5, True, keys) is None
        with pytest.raises(IndexError, match="cols"):
            gs.Matrix(graph)[:, cols].individual_sample(5)
    keys = BatchKeys.of(0, 0, 0, 2, n)
    unordered = torch.tensor([n + 1, 2])
    assert nodewise_native.slice_individual_sample(graph, unordered, 3, False, keys) is None
    with pytest.raises(RuntimeError, match="not grouped by mini-batch"):
        fused_select.slice_individual_sample(graph, unordered, 3, False, keys)
    odd = BatchKeys((op_key(0, 0, 0), op_key(0, 0, 7)), n)  # not consecutive batches
    assert (
        nodewise_native.slice_individual_sample(graph, torch.tensor([1, n + 2]), 3, False, odd)
        is None
    )
    # an indptr pointing past the edges: declined, never read
    broken = dc_replace(graph, indptr=graph.indptr.clone())
    broken.indptr[-1] += 5
    assert (
        nodewise_native.slice_individual_sample(broken, torch.tensor([n - 1]), 3, False, KEY)
        is None
    )


def test_what_it_does_not_take_runs_torch(graph, monkeypatch):
    """Weights without replacement, an int32 frontier, ``GSAMPLE_NATIVE_CPU=0``: the torch
    code, with the same results."""
    answers = []
    real = nodewise_native.slice_individual_sample

    def spy(*args):
        answers.append(real(*args))
        return answers[-1]

    monkeypatch.setattr(nodewise_native, "slice_individual_sample", spy)
    cols = torch.tensor([7, 3, 3, 100])
    probs = torch.rand(graph.nnz, dtype=torch.float64) + 0.1
    fused_select.slice_individual_sample(graph, cols, 4, False, KEY, probs)
    assert len(answers) == 1 and answers[0] is None  # declined: A-Res keys
    got = fused_select.slice_individual_sample(graph, cols.int(), 4, False, KEY)
    assert len(answers) == 2 and answers[1] is None  # declined: int32
    ref = fused_select.slice_individual_sample(graph, cols, 4, False, KEY)
    assert answers[2] is not None
    for name in ("indptr", "rows", "eids", "values"):  # (the int32 frontier stays int32)
        assert torch.equal(getattr(got, name), getattr(ref, name))
    monkeypatch.setenv("GSAMPLE_NATIVE_CPU", "0")
    fused_select.slice_individual_sample(graph, cols, 4, False, KEY)
    assert len(answers) == 3  # not asked


def test_compiled_graphsage_runs_native_and_equals_torch(monkeypatch):
    """A compiled two-hop GraphSAGE sampler on the CPU: the native path runs, the samples
    are the torch code's."""
    g = gs.datasets.rmat(3000, 30000, seed=5)

    def sage(A, seeds):
        out = []
        for k in (25, 10):
            S = A[:, seeds].individual_sample(k)
            out.append(S)
            seeds = S.all_nodes()
        return out

    seeds = torch.randint(0, 3000, (256,), generator=torch.Generator().manual_seed(0))

    def run():
        gs.manual_seed(4)
        f = gs.compile(sage)
        return [f(g, seeds) for _ in range(2)]

    want = torch_code(monkeypatch, run)
    native_only(monkeypatch)
    got = run()
    for a, b in zip(got, want):
        for x, y in zip(a, b):
            assert_same_csc(x.csc, y.csc)


def _sample_in_child(graph, cols, conn):
    # as torch's DataLoader workers: torch's own operators on one thread (its OpenMP pool
    # does not survive a fork either), the native code on two std::threads
    torch.set_num_threads(1)
    nodewise_native.THREADS = 2
    S = fused_select.slice_individual_sample(graph, cols, 10, False, KEY)
    conn.send(S.rows.numpy().tobytes())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_forked_child_samples_with_threads(graph, monkeypatch):
    """A child forked after the parent ran OpenMP teams samples on std::threads (libgomp's
    pool does not survive a fork): no hang, the same sample."""
    monkeypatch.setattr(nodewise_native, "THREADS", 2)
    torch.rand(1 << 20).sum()  # an OpenMP team of torch's
    cols = torch.randint(0, graph.num_nodes, (5000,), generator=torch.Generator().manual_seed(6))
    want = fused_select.slice_individual_sample(graph, cols, 10, False, KEY).rows
    assert in_forked_child(_sample_in_child, graph, cols) == want.numpy().tobytes()
