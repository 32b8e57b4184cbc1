"""``A.sum()`` with no axis (``TOTAL``, and ``SLICE_TOTAL`` where a slice's sum is fused):
the sum of every edge value, the same bits in any order of the terms, on every layout,
device and backend, eager, compiled and super-batched.

The arithmetic (62-bit fixed point at the largest term's exponent, 128-bit integer sums,
one conversion back) is checked against a Python model of it in exact rationals, and the
CUDA kernels' own arithmetic (``kernels/rowsum.cu``, compiled as C++ with one thread per
call, the threads run in random orders) against the torch code, bit for bit.
"""

from __future__ import annotations

import math
import random
import struct
from fractions import Fraction

import numpy as np
import pytest
import torch
from helpers import (
    CUDA_AS_CPP,
    INT64_IO_CPP,
    build_asan,
    check_compiled_equals_eager,
    check_super_batched,
    example,
    random_seeds,
    run_int64_program,
)

import gsample as gs
from gsample.backend import get_backend
from gsample.backend.torch.compute import exact_sums, exact_total
from gsample.base import validate as V
from gsample.formats.layouts import NAMES, convert
from gsample.ir import Op


def model(xs) -> float:
    """The sum ``exact_sums`` defines, in exact rationals: each finite nonzero term
    ``round(x * 2 ** (62 - em))`` (half to even), the integers' sum ``S`` as 128-bit words
    ``(lo, hi)``, then ``(float(hi) * 2 ** 64 + float(lo)) * 2 ** (em - 62)``."""
    if any(math.isnan(x) for x in xs) or (math.inf in xs and -math.inf in xs):
        return math.nan
    if math.inf in xs or -math.inf in xs:
        return math.inf if math.inf in xs else -math.inf
    terms = [x for x in xs if x != 0.0]
    if not terms:
        return 0.0
    em = max(math.frexp(x)[1] for x in terms)
    S = sum(round(Fraction(x) * Fraction(2) ** (62 - em)) for x in terms)
    whole = float(S >> 64) * 2.0**64 + float(S % (1 << 64))
    return math.ldexp(whole, em - 62)


def adversarial(rng: random.Random, n: int) -> list:
    """Terms that test the fixed point: cancellation, 2**-1074 .. 2**1023, subnormals,
    exponents spread by more than 62 (rounded to the grain), huge integers."""
    mode = rng.randrange(4)
    if mode == 0:
        e = rng.randint(-1000, 1000)
        return [math.ldexp(rng.uniform(-1, 1), e - rng.randint(0, 80)) for _ in range(n)]
    if mode == 1:
        return [math.ldexp(rng.uniform(-1, 1), rng.randint(-1074, -1015)) for _ in range(n)]
    if mode == 2:
        big = [float(rng.randint(-(2**53), 2**53)) * 2.0**60 for _ in range(n // 2)]
        return big + [-x for x in big] + [rng.uniform(-1, 1) for _ in range(n - 2 * (n // 2))]
    return [math.ldexp(rng.uniform(-1, 1), rng.randint(-1074, 1023)) for _ in range(n)]


def bits(x: float) -> bytes:
    return b"nan" if math.isnan(x) else struct.pack("<d", x)


def test_the_sums_are_the_model_bit_for_bit_in_any_order():
    rng = random.Random(0)
    for _ in range(400):
        xs = adversarial(rng, rng.randint(0, 40))
        want = bits(model(xs))
        assert bits(exact_sums(torch.tensor(xs, dtype=torch.float64)).item()) == want, xs
        rng.shuffle(xs)
        assert bits(exact_sums(torch.tensor(xs, dtype=torch.float64)).item()) == want, xs
    # groups: each group's sum as alone
    xs = adversarial(rng, 300)
    group = [rng.randrange(5) for _ in xs]
    got = exact_sums(torch.tensor(xs, dtype=torch.float64), torch.tensor(group), 7).tolist()
    want = [model([x for x, g in zip(xs, group) if g == b]) for b in range(7)]
    assert [bits(x) for x in got] == [bits(x) for x in want]


def test_the_native_cpu_sums_are_the_torch_codes():
    """``layerwise_native.total`` (one C++ pass, 128-bit integers; what CPU tensors take):
    the bits of ``exact_sums``, of an array and of a frontier's edges without the slice."""
    from gsample.backend.torch import extract, layerwise_native

    if not layerwise_native.available():
        pytest.skip("no native CPU code")
    rng = random.Random(3)
    for trial in range(300):
        xs = adversarial(rng, rng.randint(0, 60))
        if trial % 10 == 0:
            xs += [rng.choice([math.nan, math.inf, -math.inf, 0.0])]
        x = torch.tensor(xs, dtype=torch.float64)
        assert bits(layerwise_native.total(x).item()) == bits(exact_sums(x).item()), xs
        y = x.float()
        want = exact_sums(y).to(torch.float32)
        assert bits(layerwise_native.total(y).item()) == bits(want.item()), xs
    A = _weighted("cpu").csc
    seeds = random_seeds(64, num_nodes=500)
    got = layerwise_native.total(A.values, A, seeds)
    assert torch.equal(got, exact_sums(extract.slice_cols(A, seeds).values).float()[0])


def test_non_finite_terms_follow_ieee_and_dtypes_are_kept():
    f = torch.float64
    assert math.isnan(exact_sums(torch.tensor([1.0, math.nan], dtype=f)).item())
    assert math.isnan(exact_sums(torch.tensor([math.inf, -math.inf], dtype=f)).item())
    assert exact_sums(torch.tensor([math.inf, 1e300, 1e300], dtype=f)).item() == math.inf
    assert exact_sums(torch.tensor([-math.inf, 2.0], dtype=f)).item() == -math.inf
    assert exact_sums(torch.zeros(0, dtype=f)).item() == 0.0
    assert exact_sums(torch.tensor([0.0, -0.0], dtype=f)).item() == 0.0
    # 1e16 + 1 - 1e16: exact where a float sum in this order gives 0
    x = torch.tensor([1e16, 1.0, -1e16], dtype=f)
    assert exact_sums(x).item() == 1.0 and float(x.sum()) in (0.0, 1.0)
    v32 = torch.rand(1000, dtype=torch.float32)
    assert exact_total(v32).dtype == torch.float32 and exact_total(v32).shape == ()
    assert exact_total(v32).item() == float(torch.tensor(model(v32.double().tolist())).float())
    assert exact_total(torch.tensor([3, 4, 5])).item() == 12  # integers: exact int64 sums
    two = torch.rand(50, 3, dtype=torch.float64)
    assert exact_total(two).tolist() == [model(two[:, j].tolist()) for j in range(3)]


def _weighted(device, n=500, e=6000, seed=0) -> gs.Matrix:
    A = gs.datasets.rmat(n, e, seed=seed, weighted=True).to(device)
    return example("ladies").normalize(A)


def test_sum_of_a_matrix_is_the_same_on_every_layout_and_in_every_edge_order(device):
    A = _weighted(device)
    seeds = random_seeds(40, num_nodes=500).to(device)
    sub = A[:, seeds] ** 2
    got = sub.sum()
    assert got.shape == () and got.dtype == sub.values.dtype and got.device == sub.device
    want = model(sub.values.double().cpu().tolist())
    assert got.item() == float(torch.tensor(want, dtype=torch.float32))
    # every layout, the torch code (the CUDA backend runs it where it has no kernel)
    impls = get_backend("torch")
    for layout in NAMES:
        fn = impls.impl(Op.TOTAL, layout).fn
        assert torch.equal(fn(convert(sub.csc, layout), "sum"), got), layout
    # the same edges in another order: the same bits
    r, c, _ = sub.edges()
    perm = torch.randperm(r.numel(), generator=torch.Generator().manual_seed(1)).to(device)
    again = gs.Matrix.from_edge_index(
        torch.stack([r[perm], c[perm]]), num_nodes=A.num_nodes, weight=sub.values[perm]
    )
    assert torch.equal(again.sum(), got)
    # float64 values keep their dtype
    wide = gs.Matrix.from_edge_index(
        torch.stack([r, c]), num_nodes=A.num_nodes, weight=sub.values.double() / 3
    )
    assert wide.sum().dtype == torch.float64
    assert wide.sum().item() == model((sub.values.double() / 3).cpu().tolist())


def test_sum_without_axis_only_for_sum():
    A = gs.datasets.rmat(50, 200, seed=1)
    with pytest.raises(TypeError):
        A.max()
    assert A.sum().item() == 200.0  # no values: 1.0 an edge
    assert A[:, torch.tensor([], dtype=torch.long)].sum().item() == 0.0


def _sums(A, seeds):
    sub = A[:, seeds]
    sq = sub**2
    s = sub.individual_sample(3)
    # a fused slice sum (SLICE_TOTAL), a matrix's, and a sample's
    return sq.sum(), (sq * 0.5).sum(), s.sum(), sq.sum(axis=1) / sq.sum().clamp(min=1e-30)


def test_compiled_equals_eager_and_the_slice_sum_is_fused():
    A = _weighted("cpu")
    seeds = random_seeds(32, num_nodes=500)
    compiled = check_compiled_equals_eager(_sums, A, seeds)
    ops = [n.op for n in compiled.program(A, seeds).nodes]
    assert Op.SLICE_TOTAL in ops and Op.TOTAL in ops


def test_super_batched_equals_one_by_one():
    A = _weighted("cpu")
    check_super_batched(A, _sums, random_seeds(96, num_nodes=500), 24, 4)


def test_the_fused_slice_sum_equals_the_slices_batch_by_batch():
    from gsample.backend.torch import fused_reduce

    A = _weighted("cpu").csc
    seeds = [random_seeds(30, seed=s, num_nodes=500) for s in range(3)]
    n = A.num_nodes
    enc = torch.cat([s + b * n for b, s in enumerate(seeds)])
    got = fused_reduce.slice_total(A, enc, "sum", batches=(3, n))
    want = torch.stack([fused_reduce.slice_total(A, s, "sum") for s in seeds])
    assert torch.equal(got, want)


# ----------------------------------------------------------------------------- the kernels
_HARNESS = (
    r"""
#include <algorithm>
#include <cstring>
#include <cstdio>
#include <vector>
using std::max;
using std::min;
using std::isnan;
using std::isinf;
// one thread a call, a warp of one lane whose lanes never agree: each thread adds its own
// running value (the warp combination is the same integer sum, in another order)
#define __shared__ static
static inline void __syncthreads() {}
static inline void __threadfence() {}
template <typename T> static inline T __shfl_sync(unsigned, T v, int) { return v; }
template <typename T> static inline T __shfl_down_sync(unsigned, T, int) { return T(0); }
template <typename T> static inline T __shfl_up_sync(unsigned, T, int) { return T(0); }
static inline bool __all_sync(unsigned, bool) { return false; }
static inline unsigned __ballot_sync(unsigned, bool p) { return p ? 1u : 0u; }
template <typename T> static inline unsigned __match_any_sync(unsigned, T) { return 1u; }
static inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }
template <typename T> static inline T atomicMax(T* p, T v) {
    T o = *p;
    *p = v > o ? v : o;
    return o;
}
template <typename T> static inline T atomicOr(T* p, T v) { T o = *p; *p = o | v; return o; }
static inline double __longlong_as_double(long long x) { double d; memcpy(&d, &x, 8); return d; }
static inline long long __double_as_longlong(double x) { long long i; memcpy(&i, &x, 8); return i; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
#define GS_DTYPE0 double
#include "rowsum.cu"
"""
    + INT64_IO_CPP
    + r"""
// stdin: the n values (float64 bits), then two orders of the T threads; stdout: the sum (its
// bits)
int main() {
    const vec x = read_vec(), order = read_vec();
    const long long n = x.size(), T = order.size() / 2;
    if (order.size() % 2) return 2;
    std::vector<double> v(n);           // exact size: AddressSanitizer bounds every read
    if (n) memcpy(v.data(), x.data(), 8 * n);
    std::vector<int> emax(1, 0), flags(1, 0);
    std::vector<gs_u64> lo(1, 0), hi(1, 0);
    std::vector<double> out(1, 0.0);
    blockDim.x = T;
    for (long long i = 0; i < T; ++i) {
        threadIdx.x = order[i];
        gs_total_edges_exponents(n ? v.data() : nullptr, n, emax.data(), flags.data());
    }
    for (long long i = 0; i < T; ++i) {
        threadIdx.x = order[T + i];
        gs_total_edges_add(n ? v.data() : nullptr, n, emax.data(), lo.data(), hi.data());
    }
    blockDim.x = 1;
    threadIdx.x = 0;
    gs_rowsum_finish(emax.data(), flags.data(), lo.data(), hi.data(), 1, out.data(),
                     nullptr, nullptr, 1, 1);
    long long sum;
    memcpy(&sum, out.data(), 8);
    write_vec(vec(1, sum));
    return 0;
}
"""
)


@pytest.fixture(scope="module")
def total_kernel(tmp_path_factory):
    # under AddressSanitizer where it can be: the kernels' index safety on the CPU
    # (memcheck's on the GPU); without it the sums are checked all the same
    out = tmp_path_factory.mktemp("total") / "total"
    return build_asan(CUDA_AS_CPP + _HARNESS, out, required=False)


def test_the_kernels_arithmetic_is_the_torch_codes(total_kernel):
    """``gs_total_edges_*`` and ``gs_rowsum_finish`` (one thread a call, ``T`` threads run in
    random orders, each adding its running sum with its own atomics) give the torch code's
    bits: every rounding the same, the 128-bit carries exact in any order."""
    rng = random.Random(5)
    for trial in range(300):
        xs = adversarial(rng, rng.randint(0, 50))
        if trial % 10 == 0:
            xs += [rng.choice([math.nan, math.inf, -math.inf, 0.0])]
        T = rng.randint(1, 9)
        orders = rng.sample(range(T), T) + rng.sample(range(T), T)
        x = np.array(xs, dtype=np.float64).view(np.int64)
        (out,) = run_int64_program(total_kernel, x, orders)
        (got,) = out.view(np.float64)
        want = exact_sums(torch.tensor(xs, dtype=torch.float64)).item()
        assert bits(got) == bits(want), (xs, T, orders)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("where", ["edges", "slice", "super-batch", "super-batch, many tiles"])
def test_cuda_kernels_equal_the_torch_code(dtype, where):
    """``gs_total_edges_*`` (a matrix's edges) and ``gs_total_*`` (a frontier's, one
    mini-batch or a super-batch's four; or 48 whose frontier, every node in each, is some
    2,800 tiles: each block takes tiles of several batches, and the warps add at the end of
    each tile) on a GPU: the torch code's bits."""
    pytest.importorskip("cupy")
    from gsample.backend.cuda import compute as cuda_compute
    from gsample.backend.cuda import layerwise
    from gsample.backend.torch import fused_reduce

    rng = random.Random(7)
    G = gs.datasets.rmat(3000, 60_000, seed=2, weighted=True).csc
    vals = torch.tensor(adversarial(rng, G.nnz), dtype=torch.float64).to(dtype)
    A = G.with_values(torch.where(vals.isfinite(), vals, 0.5))
    Ag = gs.Matrix(A).to("cuda").csc
    seeds = [random_seeds(200, seed=s, num_nodes=3000) for s in range(4)]
    if where == "edges":
        got, want = cuda_compute.total(Ag, "sum"), exact_total(A.values)
    elif where == "slice":
        got = layerwise.slice_total(Ag, seeds[0].cuda(), "sum")
        want = fused_reduce.slice_total(A, seeds[0], "sum")
    else:
        if where != "super-batch":
            seeds = [
                torch.randperm(3000, generator=torch.Generator().manual_seed(b)) for b in range(48)
            ]
        N = len(seeds)
        enc = torch.cat([s + b * 3000 for b, s in enumerate(seeds)])
        got = layerwise.slice_total(Ag, enc.cuda(), "sum", batches=(N, 3000))
        want = fused_reduce.slice_total(A, enc, "sum", batches=(N, 3000))
    assert got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got.cpu(), want)


def _spread(seed):
    """An R-MAT graph of 3,000 nodes and values for it: signed terms whose exponents spread
    past the 62-bit grain (rounded terms), and a column each (``some``) whose first edge is
    NaN, inf or -inf, so that some sums are NaN or infinite and the rest finite. Returns
    ``(G, vals, some, g)``, ``g`` the generator of seed ``seed`` that drew them."""
    G = gs.datasets.rmat(3000, 60_000, seed=2, weighted=True).csc
    g = torch.Generator().manual_seed(seed)
    vals = torch.ldexp(
        torch.rand(G.nnz, generator=g) * 2 - 1, torch.randint(-40, 40, (G.nnz,), generator=g)
    )
    deg = G.indptr.diff()
    some = torch.argsort(deg, stable=True)[int((deg == 0).sum()) :][100:107:3]
    vals[G.indptr[some]] = torch.tensor([float("nan"), float("inf"), -float("inf")])
    return G, vals, some, g


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("rounds", [1, 2, 3, 4])
@pytest.mark.parametrize("frontier", ["slice", "super-batch", "short columns"])
@pytest.mark.parametrize("values", ["spread", "ones"])
def test_the_frontier_sums_of_several_rounds_a_tile_are_the_torch_code(
    rounds, frontier, values, monkeypatch
):
    """``gs_total_*`` with ``sub`` rounds of items a tile (``GS_TILES_OF``, staged columns;
    the host's ``_rounds`` forced): one mini-batch; a super-batch of 48 whose last tile's
    later rounds hold no edge; and a super-batch of the graph's shortest columns, whose tiles
    of several rounds hold more columns than ``GS_STAGE`` (read unstaged). The torch code's
    bits, NaN and infinities included; with values of one, each sum is an edge count, which
    a term dropped or counted twice changes (a spread term below the 62-bit grain adds
    nothing either way)."""
    pytest.importorskip("cupy")
    from gsample.backend.cuda import layerwise
    from gsample.backend.torch import fused_reduce

    monkeypatch.setattr(layerwise, "_rounds", lambda *args: rounds)
    monkeypatch.setattr(layerwise, "SUM_ROUNDS", rounds)  # "auto" caps small frontiers at 1
    G, vals, _, _ = _spread(11)
    A = G.with_values(vals if values == "spread" else torch.ones(G.nnz))
    Ag = gs.Matrix(A).to("cuda").csc
    if frontier == "slice":
        seeds = random_seeds(700, seed=rounds, num_nodes=3000)
        got = layerwise.slice_total(Ag, seeds.cuda(), "sum")
        want = fused_reduce.slice_total(A, seeds, "sum")
    else:
        if frontier == "super-batch":
            g = torch.Generator().manual_seed(rounds)
            seeds = [torch.randperm(3000, generator=g)[: 100 + 50 * b] for b in range(48)]
        else:
            short = torch.argsort(A.indptr.diff(), stable=True)[:2000]  # 0 to a few edges
            seeds = [short[b::3] for b in range(48)]
        N = len(seeds)
        enc = torch.cat([s + b * 3000 for b, s in enumerate(seeds)])
        got = layerwise.slice_total(Ag, enc.cuda(), "sum", batches=(N, 3000))
        want = fused_reduce.slice_total(A, enc, "sum", batches=(N, 3000))
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0, equal_nan=True)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_cuda_backend_sums_as_the_torch_backend_without_a_read_back():
    """Compiled on each backend, a LADIES slice's sum (fused: ``SLICE_TOTAL``) and a
    sample's (``TOTAL``) are the same bits, and the CUDA kernels read nothing back."""
    pytest.importorskip("cupy")
    from helpers import host_syncs

    A = _weighted("cuda", n=20_000, e=400_000)
    seeds = random_seeds(512, num_nodes=20_000).cuda()

    def totals(A, seeds):
        sq = A[:, seeds] ** 2
        return sq.sum(), (sq * 3.0).sum()

    want = gs.compile(totals, backend="torch")(A, seeds)
    got = gs.compile(totals, backend="cuda")(A, seeds)
    assert all(torch.equal(g, w) for g, w in zip(got, want))
    sq = (A[:, seeds] ** 2).csc
    from gsample.backend.cuda import compute as cuda_compute
    from gsample.backend.cuda import layerwise

    A2 = (A**2).csc
    cuda_compute.total(sq, "sum")
    layerwise.slice_total(A2, seeds, "sum")  # compiled once (kernels cached)
    assert not host_syncs(lambda: cuda_compute.total(sq, "sum"))

    def fused():
        with V.deferred():  # as in a compiled program: the frontier's check flag deferred
            layerwise.slice_total(A2, seeds, "sum")

    assert not host_syncs(fused)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("rounds", ["auto", 1, 3])
def test_a_super_batch_s_totals_taken_by_its_row_sums_passes(dtype, rounds, monkeypatch):
    """``layerwise.FUSE_TOTALS``: a super-batch's ``slice_total`` followed by the
    ``slice_reduce`` of the same frontier (LADIES' normaliser and probabilities) takes the
    totals in the passes that place the row sums' terms (``gs_rowsum_chunk_counts_total`` /
    ``_fill_total``) once a first super-batch paired them, and the row sums reuse those
    terms: the totals' and the row sums' bits of the torch code and of the passes alone,
    NaN and infinities included, bounded frontiers too; another frontier's row sums, or one
    written in place, take no terms (and stop the pairing), and a bad id raises."""
    pytest.importorskip("cupy")
    from gsample.backend.cuda import layerwise
    from gsample.backend.torch import fused_reduce
    from gsample.formats.bounded import BoundedIds

    monkeypatch.setattr(layerwise, "SUM_ROUNDS", rounds)
    monkeypatch.setattr(layerwise, "_PAIRED", {})
    launched, real_launch = [], layerwise.launch

    def launch(family, kernel, *args, **kwargs):
        launched.append(kernel)
        return real_launch(family, kernel, *args, **kwargs)

    monkeypatch.setattr(layerwise, "launch", launch)
    G, vals, some, g = _spread(5)  # (g draws the parts after the values)
    A = G.with_values(vals.to(dtype))
    Ag = gs.Matrix(A).to("cuda").csc
    n = 3000
    parts = [torch.randperm(n, generator=g)[: 100 + 60 * b] for b in range(40)]
    parts[3] = some  # the NaN, inf and -inf
    N = len(parts)
    enc = torch.cat([p + b * n for b, p in enumerate(parts)])
    want_t = fused_reduce.slice_total(A, enc, "sum", batches=(N, n))
    # the row sums' bits: each mini-batch's alone (the passes over its row space; the torch
    # code's float sums are only within a rounding of them)
    want_r = torch.cat([layerwise.slice_reduce(Ag, p.cuda(), "sum", 1) for p in parts]).cpu()

    def pair(cols):
        launched.clear()
        t = layerwise.slice_total(Ag, cols, "sum", batches=(N, n))
        r = layerwise.slice_reduce(Ag, cols, "sum", 1, batches=(N, n))
        torch.testing.assert_close(t.cpu(), want_t, rtol=0, atol=0, equal_nan=True)
        torch.testing.assert_close(r.cpu(), want_r, rtol=0, atol=0, equal_nan=True)
        return set(launched)

    alone = {"gs_total_exponents", "gs_total_add", "gs_rowsum_chunk_counts"}
    first = pair(enc.cuda())  # not paired yet: the totals' own passes
    assert alone <= first and "gs_rowsum_chunk_counts_total" not in first
    fused = {"gs_rowsum_chunk_counts_total", "gs_rowsum_chunk_fill_total", "gs_rowsum_chunks"}
    for cols in (
        enc.cuda(),
        BoundedIds(torch.cat([enc, enc[:9]]).cuda(), torch.tensor([enc.numel()], device="cuda")),
    ):
        got = pair(cols)
        assert fused <= got and not alone & got, got
        assert not layerwise._PLACED, "the terms taken by the row sums"
    # another frontier's row sums: the terms not taken, the pairing undone
    cols = enc.cuda()
    layerwise.slice_total(Ag, cols, "sum", batches=(N, n))
    other = layerwise.slice_reduce(Ag, cols.clone(), "sum", 1, batches=(N, n))
    torch.testing.assert_close(other.cpu(), want_r, rtol=0, atol=0, equal_nan=True)
    assert not any(layerwise._PAIRED.values())
    assert alone <= pair(enc.cuda())  # (and paired again)
    # the frontier written in place between the two: the row sums' own terms
    cols = enc.cuda()
    layerwise.slice_total(Ag, cols, "sum", batches=(N, n))
    cols[:5] = cols[5:10]
    launched.clear()
    r = layerwise.slice_reduce(Ag, cols, "sum", 1, batches=(N, n))
    assert "gs_rowsum_chunk_counts" in launched
    want = want_r.clone()
    want[:n] = layerwise.slice_reduce(Ag, cols[: parts[0].numel()], "sum", 1).cpu()
    assert not torch.equal(want[:n], want_r[:n]), "batch 0's frontier changed"
    torch.testing.assert_close(r.cpu(), want, rtol=0, atol=0, equal_nan=True)
    pair(enc.cuda())  # paired again
    bad = torch.cat([enc, torch.tensor([N * n])]).cuda()
    with pytest.raises(IndexError, match="cols"):
        layerwise.slice_total(Ag, bad, "sum", batches=(N, n))
    # the row sums on another stream: their own terms (those placed may not be written yet)
    pair(enc.cuda())  # (paired again)
    cols = enc.cuda()
    layerwise.slice_total(Ag, cols, "sum", batches=(N, n))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    launched.clear()
    with torch.cuda.stream(side):
        r = layerwise.slice_reduce(Ag, cols, "sum", 1, batches=(N, n))
    torch.cuda.current_stream().wait_stream(side)
    assert "gs_rowsum_chunk_counts" in launched and not layerwise._PLACED
    torch.testing.assert_close(r.cpu(), want_r, rtol=0, atol=0, equal_nan=True)
    # switched off between the two: the row sums' own passes, the terms placed dropped
    pair(enc.cuda())  # (paired again)
    cols = enc.cuda()
    layerwise.slice_total(Ag, cols, "sum", batches=(N, n))
    assert layerwise._PLACED
    monkeypatch.setattr(layerwise, "FUSE_TOTALS", False)
    launched.clear()
    r = layerwise.slice_reduce(Ag, cols, "sum", 1, batches=(N, n))
    assert "gs_rowsum_chunk_counts" in launched and not layerwise._PLACED
    torch.testing.assert_close(r.cpu(), want_r, rtol=0, atol=0, equal_nan=True)
    # switched off: the totals' own passes, the same bits
    assert alone <= pair(enc.cuda())


def test_the_row_sums_take_only_the_terms_placed_for_their_own_frontier(monkeypatch):
    """``layerwise.FUSE_TOTALS``'s bookkeeping (host only, the passes stubbed): a super-batched
    ``slice_total`` places the row sums' terms only once the graph's last one was followed by
    the row sums of its frontier; those row sums take them, matched by the frontier object
    (interleaved calls of a pipelined loader's lanes each find theirs), never another
    frontier's, one written in place since, another graph's or other batches'; an entry
    whose frontier is gone is dropped, its terms with it."""
    import gc

    from gsample.backend.cuda import layerwise

    monkeypatch.setattr(layerwise, "_PAIRED", {})
    monkeypatch.setattr(layerwise, "_PLACED", {})
    placed = []

    def chunk_terms(*args):
        placed.append(args[-1])
        return ("starts", len(placed))

    monkeypatch.setattr(layerwise, "_chunk_terms", chunk_terms)

    class Sums:
        def finish(self):
            return "totals"

    A = gs.datasets.rmat(100, 1000, seed=1).csc
    batches = (4, 100)

    def total(cols, B=A, at=batches):
        return layerwise._totals_with_terms(B, cols, at, *[None] * 5, 1, None, Sums())

    one, two = torch.arange(10), torch.arange(20)
    assert total(one) is None and not placed  # not paired yet: the totals' own passes
    assert layerwise._terms_placed(A, one, batches) is None  # (none placed)
    assert {layerwise._pair_key(A, batches): True} == layerwise._PAIRED
    assert total(one) == "totals" and total(two) == "totals" and len(placed) == 2
    assert isinstance(placed[0], Sums)  # the totals go to the passes
    # interleaved: each frontier's own terms
    assert layerwise._terms_placed(A, two, batches) == ("starts", 2)
    assert layerwise._terms_placed(A, one, batches) == ("starts", 1)
    assert layerwise._terms_placed(A, one, batches) is None, "taken once"
    assert not any(layerwise._PAIRED.values()), "the row sums of a frontier with no total"
    total(one)
    assert layerwise._terms_placed(A, one, batches) is None  # (paired again)
    for mismatch in (
        lambda: layerwise._terms_placed(A, one.clone(), batches),  # another frontier
        lambda: layerwise._terms_placed(A, one.add_(0), batches),  # written in place
        lambda: layerwise._terms_placed(A.with_values(None), one, batches),  # another graph
        lambda: layerwise._terms_placed(A, one, (2, 200)),  # other batches
    ):
        layerwise._PAIRED[layerwise._pair_key(A, batches)] = True
        assert total(one) == "totals"
        assert mismatch() is None
        layerwise._PLACED.clear()
    three = torch.arange(30)
    layerwise._PAIRED[layerwise._pair_key(A, batches)] = True
    assert total(three) == "totals" and len(layerwise._PLACED) == 1
    del three
    gc.collect()
    total(two)
    assert list(layerwise._PLACED) == [id(two)], "the gone frontier's entry dropped"


def test_the_row_sums_take_terms_only_in_the_call_and_stream_that_placed_them(monkeypatch):
    """``layerwise.FUSE_TOTALS``'s entries are the call's and the stream's that placed them
    (host only, the passes stubbed): another program call (its own deferred-check record:
    a frontier object it shares may have been rewritten with no version, as a CUDA graph's
    replay rewrites its static buffers) or another stream (the terms may not be written
    yet) takes none; a bounded frontier's count written in place, or another object at a
    dead frontier's address, takes none; an entry goes with its frontier (its terms freed at
    once), and a slice_total that places nothing drops the frontier's older entry."""
    import gc

    from gsample.backend.cuda import layerwise
    from gsample.base import validate as V
    from gsample.formats.bounded import BoundedIds

    monkeypatch.setattr(layerwise, "_PLACED", {})
    monkeypatch.setattr(layerwise, "_chunk_terms", lambda *args: ("starts", "terms"))
    stream = [0]
    monkeypatch.setattr(layerwise, "_scope", lambda A: (V.DEFERRED.get(), stream[0]))

    class Sums:
        def finish(self):
            return "totals"

    A = gs.datasets.rmat(100, 1000, seed=1).csc
    batches = (4, 100)
    monkeypatch.setattr(layerwise, "_PAIRED", {layerwise._pair_key(A, batches): True})

    def total(cols):
        layerwise._PAIRED[layerwise._pair_key(A, batches)] = True
        return layerwise._totals_with_terms(A, cols, batches, *[None] * 5, 1, None, Sums())

    def reduce(cols):
        return layerwise._terms_placed(A, cols, batches)

    one = torch.arange(10)
    total(one)
    assert reduce(one) == ("starts", "terms")  # (the same call and stream: taken)
    with V.deferred():  # one call's record
        total(one)
        assert reduce(one) == ("starts", "terms")
        total(one)
    with V.deferred():  # the next call's
        assert reduce(one) is None, "another call's terms"
    total(one)
    stream[0] = 7
    assert reduce(one) is None, "another stream's terms"
    stream[0] = 0
    bounded = BoundedIds(torch.arange(12), torch.tensor([10]))
    total(bounded)
    bounded.count.fill_(9)
    assert reduce(bounded) is None, "the count written in place"
    two = torch.arange(20)
    total(one)
    layerwise._PLACED[id(two)] = layerwise._PLACED.pop(id(one))  # (an address reused)
    assert reduce(two) is None, "another frontier at the address"
    three = torch.arange(30)
    total(three)
    assert id(three) in layerwise._PLACED
    key = id(three)
    del three
    gc.collect()
    assert key not in layerwise._PLACED, "the terms freed with their frontier"
    total(one)
    layerwise._forget(one)  # (a slice_total that placed nothing: switched off, capturing)
    assert reduce(one) is None
