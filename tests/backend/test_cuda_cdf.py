"""Weighted draws with replacement by inverse CDF on the CUDA backend (``kernels/cdf.cu``,
``gsample.backend.cuda.sampling.weighted_with``): running sums that restart at every column,
in an order fixed by offsets from the column's start.

:func:`reference` replays that definition in torch, step for step (the same IEEE double
operations in the same order: the kernels' draws must equal its draws exactly). Without a
GPU the reference stands in for the kernels: its draws agree with the torch backend's
(``select.Draws``, one running sum over all columns) on >= 99.9%, fit ``w / total`` (chi-
square), and a super-batch's columns draw what each mini-batch draws alone. The host code is
checked on the CPU too: ``select_in_columns`` hands these draws to a draws object's
``weighted_with`` (no loop over a super-batch's batches), unchecked weights are checked
with the draws (the torch path's errors), and the op checks leave them to such a sampler.

On a GPU (marked ``cuda``): the kernels against the reference (columns of 0 .. 10**6 edges,
zeros at the start, middle and end, all-zero columns, subnormals, both dtypes, one key and a
super-batch's keys), against the torch backend and the law, a super-batch against its
mini-batches, PASS compiled against eager and super-batched against one by one, bad weights
raising the torch path's errors, and one host synchronisation a call.
"""

import functools
import itertools
import warnings
from typing import ClassVar

import pytest
import torch
from helpers import assert_same, example, random_seeds

import gsample as gs
from gsample.backend.torch import fused_select, select
from gsample.base import validate as V
from gsample.base.random import BatchKeys, ColumnKeys, op_key, uniform_float, words
from gsample.formats.csc import CSC, segment_ptr
from gsample.ir.checks import check_individual

GROUP, CHUNK = 1024, 32
TINY = torch.finfo(torch.float64).tiny
LENGTHS = [0, 1, 31, 1023, 1024, 1025, 2 * 1024 + 5, 10**5, 10**6]
_GPU = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]


# ----------------------------------------------------------------------------- the definition
def _folds(m: torch.Tensor) -> torch.Tensor:
    """Running sums of each row of ``m`` from 0, left to right, shape (rows, width + 1):
    column ``i`` holds the sum of the first ``i`` terms (one rounded addition a term)."""
    out = torch.zeros(m.shape[0], m.shape[1] + 1, dtype=torch.float64)
    for i in range(m.shape[1]):
        out[:, i + 1] = out[:, i] + m[:, i]
    return out


def _first(cum, lo, hi, ok):
    """Per element, the first ``e`` in ``[lo, hi)`` with ``ok(cum[e], element)`` (true on a
    suffix of the range), ``hi`` if none: a vectorised binary search."""
    lo, hi = lo.clone(), hi.clone()
    every = torch.arange(lo.numel())
    while bool((lo < hi).any()):
        live = lo < hi
        mid = torch.where(live, (lo + hi) // 2, 0)
        good = ok(cum[mid], every)
        hi = torch.where(live & good, mid, hi)
        lo = torch.where(live & ~good, mid + 1, lo)
    return lo


def cumulative(deg: torch.Tensor, probs: torch.Tensor):
    """``(cum, total)`` of the definition (``kernels/cdf.cu``'s header), on the CPU."""
    deg, w = deg.cpu(), probs.cpu().double()
    C = deg.numel()
    indptr = segment_ptr(deg)
    E = int(indptr[-1])
    col = torch.repeat_interleave(torch.arange(C), deg)
    j = torch.arange(E) - indptr[col]  # offset in the column
    colmax = torch.zeros(C, dtype=torch.float64).scatter_reduce_(0, col, w, "amax")
    x = w / colmax.clamp_min(TINY)[col]
    # chunks of 32 from the column's start: a_t, running sums within the chunk
    chunk_ptr = segment_ptr((deg + CHUNK - 1) // CHUNK)
    cid = chunk_ptr[col] + j // CHUNK
    X = torch.zeros(int(chunk_ptr[-1]), CHUNK, dtype=torch.float64)
    X[cid, j % CHUNK] = x
    A = _folds(X)  # A[:, t + 1] = a_t (zeros pad the end)
    # groups of 32 chunks: P_i, the running sum of the group's chunk sums v_i; S = P_chunks
    group_ptr = segment_ptr((deg + GROUP - 1) // GROUP)
    ccol = torch.repeat_interleave(torch.arange(C), chunk_ptr[1:] - chunk_ptr[:-1])
    cj = torch.arange(cid.max() + 1 if E else 0) - chunk_ptr[ccol]  # chunk in column
    Vc = torch.zeros(int(group_ptr[-1]), CHUNK, dtype=torch.float64)
    Vc[group_ptr[ccol] + cj // CHUNK, cj % CHUNK] = A[:, CHUNK]
    P = _folds(Vc)
    gid = group_ptr[col] + j // GROUP
    L = P[gid, (j % GROUP) // CHUNK] + A[cid, j % CHUNK + 1]
    # the column's groups: O_g, the running sum of the group sums S_g; T = O_G
    G = group_ptr[1:] - group_ptr[:-1]
    gcol = torch.repeat_interleave(torch.arange(C), G)
    gj = torch.arange(int(group_ptr[-1])) - group_ptr[gcol]
    Sg = torch.zeros(C, int(G.max()) if C else 0, dtype=torch.float64)
    Sg[gcol, gj] = P[:, CHUNK]
    O = _folds(Sg)
    cum = O[col, j // GROUP] + L
    return cum, O[:, -1]


def reference(deg, k, key, probs):
    """The draws of the definition: ``(indptr, col, offset)`` as ``select_in_columns``
    (CPU tensors); ``key`` an int or a ``ColumnKeys`` (any device)."""
    deg = deg.cpu()
    cum, total = cumulative(deg, probs)
    indptr = segment_ptr(deg)
    drawn = torch.nonzero(total > 0).squeeze(1)
    n = drawn.numel()
    c = drawn.repeat_interleave(k)
    t = torch.arange(k).repeat(n)
    if isinstance(key, ColumnKeys):
        key = ColumnKeys(key.base.cpu(), key.position.cpu(), key.ptr, key.keys)
    target = uniform_float(words(key, c, t)) * total[c]
    lo, hi = indptr[c], indptr[c + 1]
    e = _first(cum, lo, hi, lambda v, i: v > target[i])
    past = e == hi  # target == T: the first cum == T
    e = torch.where(past, _first(cum, lo, hi, lambda v, i: v >= total[c][i]), e)
    offset = (e - lo).view(n, k).sort(dim=1).values.reshape(-1) if n else e
    return segment_ptr(torch.where(total > 0, k, 0)), c, offset


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _columns(seed, lengths=LENGTHS, dtype=torch.float64):
    """``(deg, probs)``: columns of the given lengths, shuffled, weights with zeros at the start,
    middle and end of columns, two all-zero columns, subnormals (and a column of them)."""
    g = _gen(seed)
    deg = torch.tensor(lengths + [1, 40, 3000, 5, 0, 2, 700])
    deg = deg[torch.randperm(deg.numel(), generator=g)]
    indptr = segment_ptr(deg)
    w = torch.rand(int(indptr[-1]), generator=g, dtype=torch.float64) ** 3
    w[torch.rand(w.numel(), generator=g) < 0.1] = 0
    for c in range(deg.numel()):
        s, e = int(indptr[c]), int(indptr[c + 1])
        if e - s >= 3:
            w[s] = w[(s + e) // 2] = w[e - 1] = 0  # zeros at the start, middle, end
    tiny = 5e-324 if dtype == torch.float64 else 1e-45
    w[torch.rand(w.numel(), generator=g) < 0.01] = tiny
    zero = [c for c in range(deg.numel()) if 0 < deg[c] < 5000][:3]
    w[indptr[zero[0]] : indptr[zero[0] + 1]] = 0  # all-zero columns
    w[indptr[zero[1]] : indptr[zero[1] + 1]] = 0
    w[indptr[zero[2]] : indptr[zero[2] + 1]] = tiny  # only subnormals
    return deg, w.to(dtype)


def _super_batch(seed, copies=3, n=1500):
    """A super-batch's degrees, weights, frontier ids (``b * n + v``) and keys, and each
    batch's own ``(deg, probs, key)``."""
    g = _gen(seed)
    cols = torch.cat([b * n + torch.randperm(n, generator=g)[:300] for b in range(copies)])
    deg = torch.randint(0, 60, (cols.numel(),), generator=g)
    deg[::7] = 0
    deg[5], deg[400] = 30_000, 2500
    probs = torch.rand(int(deg.sum()), generator=g) ** 3
    probs[torch.rand(probs.numel(), generator=g) < 0.2] = 0
    keys = BatchKeys.of(seed=7, ordinal=1, first_batch=2, copies=copies, num_nodes=n)
    ptr = keys.columns(cols).ptr
    start = segment_ptr(deg)
    alone = [
        (deg[a:b], probs[start[a] : start[b]], keys.keys[i])
        for i, (a, b) in enumerate(itertools.pairwise(ptr))
    ]
    return deg, probs, cols, keys, alone


def _agreement(a, b):
    """Share of draws two results share: (column, offset) pairs, as multisets."""
    from collections import Counter

    x = Counter(zip(a[1].tolist(), a[2].tolist()))
    y = Counter(zip(b[1].tolist(), b[2].tolist()))
    return sum((x & y).values()) / max(sum((x | y).values()), 1)


def _random_columns(seed, C=4000):
    g = _gen(seed)
    deg = torch.randint(0, 300, (C,), generator=g)
    deg[::7] = 0
    deg[5] = 300_000
    probs = torch.rand(int(deg.sum()), generator=g) ** 3
    probs[torch.rand(probs.numel(), generator=g) < 0.1] = 0
    return deg, probs


def _chi_square(draws_of, seed):
    """p-values of the draw frequencies of a few columns against ``w / total``."""
    from scipy.stats import chisquare

    g = _gen(seed)
    deg = torch.tensor([7, 12, 40, 3])
    probs = torch.rand(int(deg.sum()), generator=g, dtype=torch.float64) ** 2
    probs[3] = 0
    k = 20_000
    _, col, offset = draws_of(deg, k, op_key(3, 1, 4), probs)
    start, out = segment_ptr(deg), []
    for c in range(deg.numel()):
        p = probs[start[c] : start[c + 1]]
        seen = torch.bincount(offset[col == c], minlength=int(deg[c])).double()
        assert seen[p == 0].sum() == 0  # a zero weight is never drawn
        keep = p > 0
        out.append(chisquare(seen[keep].numpy(), (p[keep] / p.sum() * k).numpy()).pvalue)
    return out


# ----------------------------------------------------------------------------- CPU
def test_the_reference_is_a_running_sum_per_column():
    deg, probs = _columns(0, lengths=[0, 1, 31, 1023, 1024, 1025, 2053, 5000])
    cum, total = cumulative(deg, probs)
    indptr = segment_ptr(deg)
    for c in range(deg.numel()):
        s, e = int(indptr[c]), int(indptr[c + 1])
        if e == s:
            assert total[c] == 0
            continue
        part = cum[s:e]
        assert bool((part[1:] >= part[:-1]).all()) and part[-1] == total[c]
        w = probs[s:e].double()
        scaled = w / max(float(w.max()), TINY)
        assert torch.allclose(part, torch.cumsum(scaled, 0), rtol=1e-12, atol=0)
        assert bool((part[1:][w[1:] == 0] == part[:-1][w[1:] == 0]).all())


@pytest.mark.parametrize("k", [1, 10, 25])
def test_the_reference_agrees_with_the_torch_backend(k):
    deg, probs = _random_columns(k)
    key = op_key(11, 4, 9)
    ref = select.select_in_columns(deg, k, True, key, probs)
    got = reference(deg, k, key, probs)
    assert torch.equal(got[0], ref[0]) and torch.equal(got[1], ref[1])  # the same columns
    assert _agreement(got, ref) >= 0.999


def test_the_reference_fits_the_weights():
    assert min(_chi_square(reference, 0)) > 1e-3


def test_the_reference_draws_a_super_batch_as_its_mini_batches():
    deg, probs, cols, keys, alone = _super_batch(0)
    got = reference(deg, 5, keys.columns(cols), probs)
    offsets = [reference(d, 5, key, p)[2] for d, p, key in alone]
    assert torch.equal(got[2], torch.cat(offsets))


class _Hook(select.Draws):
    """Draws with a ``weighted_with`` hook that records its calls."""

    calls: ClassVar[list] = []

    @staticmethod
    def weighted_with(deg, k, key, probs, nodes):
        _Hook.calls.append((k, key, nodes))
        return reference(deg, k, key, probs)


def test_select_in_columns_hands_cdf_draws_with_replacement_to_the_hook(monkeypatch):
    deg, probs, cols, keys, _ = _super_batch(1)
    ck = keys.columns(cols)

    def loop(*args):
        raise AssertionError("the per-batch loop ran")

    _Hook.calls.clear()
    got = select.select_in_columns(deg, 4, True, op_key(1, 2, 3), probs, _Hook)
    assert [c[0] for c in _Hook.calls] == [4]
    for a, b in zip(got, reference(deg, 4, op_key(1, 2, 3), probs)):
        assert torch.equal(a, b)
    monkeypatch.setattr(select, "_weighted_with_per_batch", loop)
    select.select_in_columns(deg, 4, True, ck, probs, _Hook)  # a super-batch: one call
    assert len(_Hook.calls) == 2 and _Hook.calls[1][1] is ck
    for replace, method, p in ((False, "cdf", probs), (True, "alias", probs), (True, "cdf", None)):
        select.select_in_columns(deg, 4, replace, op_key(1, 2, 3), p, _Hook, method)
    assert len(_Hook.calls) == 2  # without replacement, alias, uniform: not
    with pytest.raises(AssertionError, match="per-batch loop"):
        select.select_in_columns(deg, 4, True, ck, probs)  # select.Draws: the loop


def _csc(deg, cols=None, device="cpu"):
    """A matrix of 10 nodes with columns of degrees ``deg`` (the graph's when ``cols`` is
    None: 10 columns)."""
    indptr = segment_ptr(torch.as_tensor(deg))
    rows = torch.arange(int(indptr[-1])) % 5
    return CSC(10, indptr, rows, col_ids=None if cols is None else torch.as_tensor(cols)).to(device)


#: case -> (the matrix's degrees, its weights; the bad weight of the fused op's frontier, and
#: whether its last column is all zero)
BAD = {
    "nan": ([3, 2, 4], [1, 2, 0.5, 1, float("nan"), 1, 1, 1, 1], float("nan"), False),
    "inf": ([3, 2, 4], [1, float("inf"), 0.5, 1, 1, 1, 1, 1, 1], float("inf"), False),
    "negative": ([3, 2, 4], [1, 2, 0.5, 1, 1, 1, -0.25, 1, 1], -0.25, False),
    "zero column": ([3, 0, 2, 4], [1, 2, 0.5, 0, 0, 1, 1, 1, 1], None, True),
    "nan and zero column": (
        [3, 2, 4],
        [1, 2, 0.5, 0, 0, 1, 1, float("nan"), 1],
        float("nan"),
        True,
    ),
}
FRONTIER = [4, 2, 9]  # of the 10-column graph below: 4, 1 and 2 edges


def _bad(case, device="cpu"):
    """``(A, probs, G, q)``: the op's matrix (columns 7, 3, 9, 4) and weights, the graph and
    the weights of the fused op's ``G[:, FRONTIER]``, for a case of :data:`BAD`."""
    deg, p, value, zero = BAD[case]
    A = _csc(deg, [7, 3, 9, 4][: len(deg)], device)
    G = _csc([2, 3, 1, 0, 4, 2, 3, 1, 2, 2], device=device)
    q = torch.ones(G.nnz)
    if value is not None:
        q[int(G.indptr[4]) + 1] = value
    if zero:
        q[int(G.indptr[9]) : int(G.indptr[10])] = 0
    return A, torch.tensor(p).to(device), G, q.to(device)


def _message(fn):
    with pytest.raises(ValueError) as info:
        fn()
    return str(info.value)


@pytest.mark.parametrize("case", list(BAD))
def test_unchecked_probs_are_checked_with_the_draws(case):
    """``checked=False`` (a backend's ``checks=("probs",)``): the torch path's errors, for the
    op, the fused op and a super-batch."""
    A, probs, G, q = _bad(case)
    want = _message(lambda: check_individual(A, probs=probs))
    for replace in (True, False):
        assert (
            _message(lambda r=replace: select.individual_sample(A, 2, r, 5, probs, checked=False))
            == want
        )
    keys = BatchKeys.of(seed=1, ordinal=0, first_batch=0, copies=1, num_nodes=10)
    assert _message(lambda: select.individual_sample(A, 2, True, keys, probs)) == want
    cols = torch.tensor(FRONTIER)
    want = _message(lambda: check_individual(G, probs=q, cols=cols))
    for k in (2, 0):  # k = 0 checks them too
        assert (
            _message(
                lambda k=k: fused_select.slice_individual_sample(
                    G, cols, k, True, 5, q, checked=False
                )
            )
            == want
        )


def test_checked_probs_are_not_checked_again(monkeypatch):
    """``checked=True`` (the default: the op's check ran) reads no value of ``probs``."""

    def fail(*args, **kwargs):
        raise AssertionError("checked twice")

    monkeypatch.setattr(V, "column_probs", fail)
    G = _csc([2, 3, 1, 0, 4, 2, 3, 1, 2, 2])
    probs = torch.rand(G.nnz)
    for replace in (True, False):
        select.individual_sample(G, 2, replace, 5, probs)
        fused_select.slice_individual_sample(G, torch.tensor(FRONTIER), 2, replace, 5, probs)


def test_check_individual_leaves_probs_values_to_the_kernels():
    A = _csc([3, 2, 4], [7, 3, 9])
    bad = torch.tensor([float("nan")] * 9)
    out = check_individual(A, probs=bad, in_kernel=("probs",))
    assert out["probs"] is not None and torch.isnan(out["probs"]).all()
    with pytest.raises(ValueError, match="NaN"):
        check_individual(A, probs=bad)
    with pytest.raises(ValueError, match=r"probs: expected one probability per edge"):
        check_individual(A, probs=torch.ones(8), in_kernel=("probs",))  # still converted
    with pytest.raises(TypeError, match="floating point"):
        check_individual(A, probs=torch.ones(9, dtype=torch.long), in_kernel=("probs",))


def test_the_cuda_backend_registers_its_probs_checks():
    from gsample.backend import get_backend
    from gsample.ir import Op

    be = get_backend("cuda")
    for op in (Op.INDIVIDUAL_SAMPLE, Op.SLICE_INDIVIDUAL_SAMPLE):
        assert be.impl(op, "csc").checks == ("probs",)
    assert get_backend("torch").impl(Op.INDIVIDUAL_SAMPLE, "csc").checks == ()


# ----------------------------------------------------------------------------- GPU
@pytest.fixture(scope="module")
def cuda():
    """``gsample.backend.cuda.sampling`` (skips without a GPU or CuPy)."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    pytest.importorskip("cupy")
    from gsample.backend.cuda import sampling

    return sampling


def _equal(got, want):
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and torch.equal(a.cpu(), b.cpu())


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("k", [1, 7, 32, 33, 100])
@pytest.mark.parametrize("keyed", ["op key", "super-batch"])
@pytest.mark.cuda
def test_the_kernels_draw_the_reference(cuda, dtype, k, keyed):
    """Columns of 0, 1, 31, 1023, 1024, 1025, 2053, 10**5 and 10**6 edges (and more), zeros
    at their start, middle and end, all-zero columns (they draw nothing), subnormals."""
    deg, probs = _columns(k, dtype=dtype)
    key = op_key(8, 2, k)
    if keyed == "super-batch":  # two batches of the columns, 100 nodes each
        ids = torch.arange(deg.numel()) % 100 + (torch.arange(deg.numel()) >= 9) * 100
        key = BatchKeys.of(seed=3, ordinal=1, first_batch=4, copies=2, num_nodes=100).columns(
            ids.cuda()
        )
    _equal(cuda.weighted_with(deg.cuda(), k, key, probs.cuda()), reference(deg, k, key, probs))


@pytest.mark.parametrize("k", [1, 10, 25, 1000])
@pytest.mark.cuda
def test_the_kernels_agree_with_the_torch_backend(cuda, k):
    deg, probs = _random_columns(k)
    deg, probs, key = deg.cuda(), probs.cuda(), op_key(11, 4, 9)
    ref = select.select_in_columns(deg, k, True, key, probs)
    got = select.select_in_columns(deg, k, True, key, probs, cuda.CudaDraws)
    assert torch.equal(got[0], ref[0]) and torch.equal(got[1], ref[1])  # the same columns
    assert _agreement(got, ref) >= 0.999
    _equal(got, reference(deg, k, key, probs))


@pytest.mark.cuda
def test_the_kernels_fit_the_weights(cuda):
    def draws(deg, k, key, probs):
        return [t.cpu() for t in cuda.weighted_with(deg.cuda(), k, key, probs.cuda())]

    assert min(_chi_square(draws, 0)) > 1e-3


@pytest.mark.parametrize("k", [3, 40])
@pytest.mark.cuda
def test_a_super_batch_draws_its_mini_batches(cuda, k):
    """``BatchDraws`` (per-column keys, one call, no loop over the batches) against each batch
    drawn alone with its own key (``CudaDraws``), bit for bit."""
    deg, probs, cols, keys, alone = _super_batch(2)
    got = select.select_in_columns(
        deg.cuda(), k, True, keys.columns(cols.cuda()), probs.cuda(), cuda.BatchDraws
    )
    parts = [
        select.select_in_columns(d.cuda(), k, True, key, p.cuda(), cuda.CudaDraws)
        for d, p, key in alone
    ]
    assert torch.equal(got[2], torch.cat([off for _, _, off in parts]))
    assert torch.equal(got[0][1:] - got[0][:-1], torch.cat([p[1:] - p[:-1] for p, _, _ in parts]))
    _equal(got, reference(deg, k, keys.columns(cols), probs))


def _pass(device="cuda"):
    pas = example("pass_sampler")
    A = gs.datasets.rmat(3000, 60000, seed=4, weighted=True).to(device)
    inputs = {k: v.to(device) for k, v in pas.random_inputs(A.num_nodes, 8, 16).items()}
    return pas.pass_sampler, A, inputs, random_seeds(256, 3, A.num_nodes).to(device)


@pytest.mark.cuda
def test_pass_compiled_equals_eager_and_super_batched_equals_one_by_one(cuda, monkeypatch):
    """PASS on the CUDA backend: eager, compiled, and through a loader one by one and
    super-batched by 4 (``fixed_state``), the same samples, by the kernels' draws."""
    calls = []
    hook = cuda.weighted_with

    def counted(*args):
        calls.append(type(args[2]).__name__)
        return hook(*args)

    for draws in (cuda.CudaDraws, cuda.BatchDraws):
        monkeypatch.setattr(draws, "weighted_with", staticmethod(counted))
    fn, A, inputs, seeds = _pass()
    with gs.use_backend("cuda"):
        gs.manual_seed(21)
        eager = [fn(A, seeds, **inputs) for _ in range(2)]
    compiled = functools.partial(gs.compile(fn, backend="cuda"), **inputs)
    gs.manual_seed(21)
    assert_same([compiled(A, seeds) for _ in range(2)], eager)
    assert set(calls) == {"int"} and len(calls) >= 8  # 2 layers, 2 calls, twice
    one = [b.out for b in gs.DataLoader(A, compiled, seeds, 64, shuffle=False, seed=7)]
    many = [
        b.out
        for b in gs.DataLoader(
            A, compiled, seeds, 64, shuffle=False, seed=7, super_batch=4, fixed_state=True
        )
    ]
    assert "ColumnKeys" in calls
    assert len(one) == len(many) == 4
    for i, (g, r) in enumerate(zip(many, one)):
        assert_same(g, r, f"batch {i}")


@pytest.mark.parametrize("case", list(BAD))
@pytest.mark.cuda
def test_bad_probs_raise_the_torch_paths_errors(cuda, case):
    """The kernels' flags, read back with the count, raise what the torch path raises: the
    backend's ops, eager (``use_backend``), compiled (the check step only converts ``probs``)
    and a super-batch's per-column keys."""
    A, probs, G, q = _bad(case, "cuda")
    cpu = _bad(case)
    want = _message(lambda: check_individual(cpu[0], probs=cpu[1]))
    assert _message(lambda: cuda.individual_sample(A, 2, True, 5, probs)) == want
    keys = BatchKeys.of(seed=1, ordinal=0, first_batch=0, copies=1, num_nodes=10)
    assert _message(lambda: cuda.individual_sample(A, 2, True, keys, probs)) == want
    with gs.use_backend("cuda"):
        assert (
            _message(lambda: gs.Matrix(A).individual_sample(2, probs=probs, replace=True)) == want
        )

    def layer(A, p):
        return A.individual_sample(2, probs=p, replace=True)

    sampler = gs.compile(layer, backend="cuda")
    labels = [s.label for s in sampler.lowered(gs.Matrix(A), probs).steps]
    assert any("probs: checked in the kernel" in x for x in labels), labels
    assert _message(lambda: sampler(gs.Matrix(A), probs)) == want
    cols = torch.tensor(FRONTIER)
    want = _message(lambda: check_individual(cpu[2], probs=cpu[3], cols=cols))
    assert _message(lambda: cuda.slice_individual_sample(G, cols.cuda(), 2, True, 5, q)) == want


@pytest.mark.parametrize("k", [10, 64])
@pytest.mark.cuda
def test_one_host_synchronisation_a_call(cuda, k):
    """The op (weights unchecked: checked by the kernels) and a super-batch's draws read back
    once: the count with the checks' flags."""
    deg, probs = _random_columns(1)
    indptr = segment_ptr(deg)
    probs[indptr[1:][deg > 0] - 1] = 0.5  # valid: a positive weight in every column
    A = CSC(deg.numel(), indptr, torch.arange(int(indptr[-1])) % deg.numel()).to("cuda")
    probs = probs.cuda()
    sb_deg, sb_probs, cols, keys, _ = _super_batch(3)
    sb_deg, sb_probs, ck = sb_deg.cuda(), sb_probs.cuda(), keys.columns(cols.cuda())

    def calls():
        cuda.individual_sample(A, k, True, op_key(1, 2, 3), probs)
        select.select_in_columns(sb_deg, k, True, ck, sb_probs, cuda.BatchDraws)

    calls()  # warm: the kernels compiled
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            calls()
    finally:
        torch.cuda.set_sync_debug_mode(0)
    syncs = [str(w.message) for w in caught if "synchroniz" in str(w.message)]
    assert len(syncs) == 2, syncs
