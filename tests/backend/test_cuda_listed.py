"""The CUDA backend's ``listed_collective_sample`` (``gsample/backend/cuda/listed.py``,
``kernels/listed.cu``): the torch reference's samples bit for bit, one mini-batch and
super-batched, with and without replacement; LADIES compiled for CUDA takes it; bad frontier
ids raise and the next call is unharmed.

Without a GPU: the sums' kernel compiled as C++ (``CUDA_AS_CPP``) against a model, adversarial
segment bounds included, and the host code run on CPU tensors with the two kernels emulated
(the frontier's edges by torch code, the sums by the C++ build) against the reference.
"""

from __future__ import annotations

import ctypes

import pytest
import torch
from helpers import CUDA_AS_CPP, CXX, build_cpp, example, ops, random_seeds

import gsample as gs
from gsample.backend.cuda import listed
from gsample.backend.torch import fused_select
from gsample.base import validate as V
from gsample.base.random import BatchKeys, op_key
from gsample.formats.csc import CSC
from gsample.ir import Op

N = 2000
_DTYPES = {torch.float32: ("float", ctypes.c_float), torch.float64: ("double", ctypes.c_double)}
_HARNESS = r"""
#include <algorithm>
using std::max;
using std::min;
typedef long long gs_i64;
typedef GS_T gs_t;
static inline float __fadd_rn(float a, float b) { return a + b; }
#include "listed_sums.cuh"
extern "C" void gs_listed_sums(const gs_t* terms, gs_i64 E, const gs_i64* seg, gs_i64 L,
                               gs_t* out) {
    gs_listed_sum_rows(terms, E, seg, L, out);
}
"""


@pytest.fixture(scope="module")
def sums_kernel(tmp_path_factory):
    """``gs_listed_sums`` as a C++ library per dtype (one thread runs every row)."""
    if CXX is None:
        pytest.skip("no C++ compiler")
    libs = {}
    for dtype, (name, _) in _DTYPES.items():
        out = tmp_path_factory.mktemp("listed") / f"listed_{name}.so"
        done = build_cpp(CUDA_AS_CPP + _HARNESS, out, "-shared", "-fPIC", f"-DGS_T={name}")
        assert done.returncode == 0, done.stderr
        libs[dtype] = ctypes.CDLL(str(out))
    return libs


def _run_sums(libs, terms: torch.Tensor, seg: torch.Tensor, L: int) -> torch.Tensor:
    terms, seg = terms.contiguous(), seg.to(torch.int64).contiguous()
    out = torch.full((L,), -7.0, dtype=terms.dtype)
    libs[terms.dtype].gs_listed_sums(
        ctypes.c_void_p(terms.data_ptr()),
        ctypes.c_longlong(terms.numel()),
        ctypes.c_void_p(seg.data_ptr()),
        ctypes.c_longlong(L),
        ctypes.c_void_p(out.data_ptr()),
    )
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_sums_kernel_adds_in_order_from_zero_and_bounds_its_segments(sums_kernel, dtype):
    """Each row's terms added one after the other from 0 in the row's order (Python's
    float additions, rounded to ``dtype`` each step: the reference's segment sum), and
    segment bounds outside ``[0, E]`` or decreasing clamped, never read past."""
    g = torch.Generator().manual_seed(1)
    for trial in range(50):
        E = int(torch.randint(0, 60, (1,), generator=g))
        scale = torch.tensor(10.0) ** torch.randint(-30, 30, (E,), generator=g)
        terms = (torch.randn(E, generator=g, dtype=torch.float64) * scale).to(dtype)
        cuts = torch.sort(torch.randint(0, E + 1, (int(torch.randint(0, 8, (1,))),))).values
        seg = torch.cat([torch.tensor([0]), cuts, torch.tensor([E])])
        if trial % 5 == 4:  # adversarial bounds: negative, past E, decreasing
            seg = torch.tensor([-5, E + 9, 2, -(2**62), 2**62, 0])
        L = seg.numel() - 1
        got = _run_sums(sums_kernel, terms, seg, L)
        want = []
        for i in range(L):
            lo = min(max(int(seg[i]), 0), E)
            hi = min(max(int(seg[i + 1]), lo), E)
            s = torch.zeros((), dtype=dtype)
            for j in range(lo, hi):
                s = s + terms[j]
            want.append(s)
        want = torch.stack(want) if want else torch.zeros(0, dtype=dtype)
        assert torch.equal(got.view(torch.int8), want.view(torch.int8)), (terms, seg)


# ----------------------------------------------------------------------------- host code
def _emulated(monkeypatch, sums_kernel):
    """The host code on CPU tensors: ``gs_frontier_ptr`` (its id check included),
    ``gs_listed_edges`` (torch code) and ``gs_listed_sums`` (the C++ build) emulated."""

    def frontier_ptr(indptr, buf, ncols, n, M):
        V.ids(buf, "cols", M, buf.device)
        b = torch.div(buf, n, rounding_mode="floor") if n else torch.zeros_like(buf)
        v = buf - b * n
        deg = indptr[v + 1] - indptr[v]
        return torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(deg, 0)])

    def launch(family, name, n_items, *args, **key):
        assert family == "listed"
        if name == "gs_listed_edges":
            indptr, rows, buf, C, ptr, n, row_e, edge_e = args
            b = torch.div(buf, n, rounding_mode="floor") if n else torch.zeros_like(buf)
            v = buf - b * n
            deg = ptr[1:] - ptr[:-1]
            col = torch.repeat_interleave(torch.arange(C), deg)
            e = indptr[v][col] + torch.arange(col.numel()) - ptr[:-1][col]
            edge_e.copy_(e)
            row_e.copy_(rows[e].long() + (b * n)[col])
        else:
            assert name == "gs_listed_sums"
            terms, _, seg, L, out = args
            out.copy_(_run_sums(sums_kernel, terms, seg, L))

    monkeypatch.setattr(listed, "_frontier_ptr", frontier_ptr)
    monkeypatch.setattr(listed, "launch", launch)
    monkeypatch.setattr(listed, "_takes", lambda *a: True)


def assert_same_csc(got: CSC, want: CSC) -> None:
    for f in ("indptr", "rows", "row_ids", "col_ids", "values", "eids"):
        a, b = getattr(got, f), getattr(want, f)
        assert (a is None) == (b is None), f
        if a is not None:
            assert a.dtype == b.dtype and torch.equal(a.cpu(), b.cpu()), f
    assert got.num_nodes == want.num_nodes


@pytest.fixture(scope="module")
def G():
    return example("ladies").normalize(gs.datasets.rmat(N, 30_000, seed=3, weighted=True)).csc


def _inputs(G, copies: int, seed: int, dtype=torch.float32, per_batch=True, C=150):
    """A frontier (a super-batch's encoded, grouped by batch), LADIES's weights and scale."""
    w = (G.values.to(dtype)) ** 2
    parts = [random_seeds(C, seed=seed + b, num_nodes=N) for b in range(copies)]
    if copies == 1:
        cols = parts[0]
        sub = fused_select.listed_probs(G, cols, w, 1.0)[1].sum()
        return cols, w, sub.clamp(min=1e-30), op_key(seed, 0, 0)
    cols = torch.cat([p + b * N for b, p in enumerate(parts)])
    scale = torch.stack([fused_select.listed_probs(G, p, w, 1.0)[1].sum() for p in parts])
    key = BatchKeys.of(seed, 1, 0, copies, N)
    return cols, w, (scale if per_batch else scale[0]), key


@pytest.mark.parametrize("copies", [1, 2, 4])
@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_host_code_equals_the_reference(monkeypatch, sums_kernel, G, copies, replace, dtype):
    _emulated(monkeypatch, sums_kernel)
    if copies == 2:  # the int64 sort keys of a row space past 2**31 rows
        monkeypatch.setattr(listed, "_INT32_ROWS", 0)
    for seed in range(3):
        cols, w, scale, key = _inputs(G, copies, seed, dtype, per_batch=seed != 2)
        if seed == 1 and copies == 1:  # a number, and a float64 0-dim scale
            scale = float(scale) if replace else scale.double()
        for k in (0, 1, 40, 5000):
            got = listed.listed_collective_sample(G, cols, w, scale, k, replace, key)
            want = fused_select.listed_collective_sample(G, cols, w, scale, k, replace, key)
            assert_same_csc(got, want)


def test_the_host_code_raises_as_the_reference(monkeypatch, sums_kernel, G):
    """Negative or NaN probabilities, a mini-batch with edges but no positive row, a bad
    frontier id: the reference's errors; the next call is unharmed."""
    _emulated(monkeypatch, sums_kernel)
    cols, w, scale, key = _inputs(G, 2, 0)
    for bad, match in ((-scale, "negative"), (scale * float("nan"), "NaN")):
        with pytest.raises(ValueError, match=match):
            listed.listed_collective_sample(G, cols, w, bad, 10, False, key)
    zero = w.clone()
    zero[:] = 0
    with pytest.raises(ValueError, match="zero on every row"):
        listed.listed_collective_sample(G, cols, zero, scale, 10, False, key)
    for x in (-1, 2 * N, 2**40):
        bad_cols = cols.clone()
        bad_cols[3] = x
        with pytest.raises(IndexError, match="cols"):
            listed.listed_collective_sample(G, bad_cols, w, scale, 10, False, key)
    got = listed.listed_collective_sample(G, cols, w, scale, 10, False, key)
    assert_same_csc(got, fused_select.listed_collective_sample(G, cols, w, scale, 10, False, key))


def test_ladies_compiled_for_cuda_takes_the_listed_op(G):
    """The CUDA backend registers the op itself (``Target.own``), so the ``listed_rows``
    pass rewrites the catalogue LADIES compiled for it (no GPU needed to compile)."""
    seeds = random_seeds(64, num_nodes=N)
    lad = example("ladies")
    program = gs.compile(lad.ladies, backend="cuda").program(gs.Matrix(G), seeds)
    got = ops(program)
    assert got.count(Op.LISTED_COLLECTIVE_SAMPLE) == 3, got
    assert Op.SLICE_COLLECTIVE_SAMPLE not in got and Op.SLICE_REDUCE not in got


# ----------------------------------------------------------------------------- on a GPU
@pytest.mark.parametrize("copies", [1, 2, 4])
@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_cuda_listed_equals_the_reference(G, copies, replace, dtype):
    """The kernels' sample = the torch reference's (on the CPU: sums in edge order), bit
    for bit, one mini-batch and super-batched by 2 and 4."""
    pytest.importorskip("cupy")
    Gc = G.to("cuda")
    for seed in range(3):
        cols, w, scale, key = _inputs(G, copies, seed, dtype, per_batch=seed != 2)
        for k in (0, 1, 40, 5000):
            want = fused_select.listed_collective_sample(G, cols, w, scale, k, replace, key)
            got = listed.listed_collective_sample(
                Gc, cols.cuda(), w.cuda(), scale.cuda(), k, replace, key
            )
            assert_same_csc(got, want)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_cuda_listed_raises_on_bad_ids_and_the_next_call_is_unharmed(G):
    pytest.importorskip("cupy")
    Gc = G.to("cuda")
    cols, w, scale, key = _inputs(G, 2, 0)
    cols, w, scale = cols.cuda(), w.cuda(), scale.cuda()
    for x in (-1, 2 * N, 2**40, -(2**63)):
        bad = cols.clone()
        bad[5] = x
        with pytest.raises(IndexError, match="cols"):
            listed.listed_collective_sample(Gc, bad, w, scale, 10, False, key)
    with pytest.raises(ValueError, match="node_probs: contains negative values"):
        listed.listed_collective_sample(Gc, cols, w, -scale, 10, False, key)
    got = listed.listed_collective_sample(Gc, cols, w, scale, 10, False, key)
    want = fused_select.listed_collective_sample(
        G, cols.cpu(), w.cpu(), scale.cpu(), 10, False, key
    )
    assert_same_csc(got, want)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("super_batch", [1, 4])
def test_cuda_ladies_takes_the_listed_op_and_draws_the_torch_backends_samples(G, super_batch):
    """The catalogue LADIES compiled on CUDA runs the listed op and draws the rows and
    edges the torch backend draws on the CPU (the same probabilities' bits: exact total,
    sums in edge order), one mini-batch at a time and super-batched."""
    pytest.importorskip("cupy")
    lad = example("ladies")
    A, Ac = gs.Matrix(G), gs.Matrix(G).to("cuda")
    ids = random_seeds(256, num_nodes=N)
    f = gs.compile(lad.ladies, backend="cuda")
    assert Op.LISTED_COLLECTIVE_SAMPLE in ops(f.program(Ac, ids[:64].cuda()))
    ref = gs.compile(lad.ladies, backend="torch")
    runs = [
        [b.out for b in gs.DataLoader(X, g, i, 64, shuffle=False, seed=5, super_batch=super_batch)]
        for X, g, i in ((Ac, f, ids.cuda()), (A, ref, ids))
    ]
    assert len(runs[0]) == len(runs[1])
    for got, want in zip(*runs):
        for a, b in zip(got, want):
            a, b = a.csc, b.csc
            for field in ("indptr", "rows", "row_ids", "col_ids", "eids"):
                assert torch.equal(getattr(a, field).cpu(), getattr(b, field)), field
            torch.testing.assert_close(a.values.cpu(), b.values)
