"""CUDA segment reductions, SpMM / SDDMM, edge broadcasts and CSC -> CSR / COO conversions
(``kernels/segment_reduce.cu``, ``kernels/convert.cu``) against the torch backend.

GPU tests (marked ``cuda``, skipped without a GPU) check, on an R-MAT graph with a column
and a row of 1,000,000 edges and empty rows and columns, its sub-matrices and an empty one:

* every result is bit-equal to ``compute.reference_segment_reduce`` (the kernels' tree
  replayed in torch) but row sums of one feature, which are exact (``rowsum``: within
  1e-6 relative of the float64 sum), and to itself on a second run (determinism), and equals the
  torch backend up to float rounding: ``assert_close`` with the dtype's default tolerances
  against the torch backend computed in float64 (float32 sums in the torch backend's own
  sequential order are further than that from the true sum on hub segments); ``max`` and
  integer-valued sums (exact in any order) are asserted equal to the float32 torch backend
  itself; per-edge ops (edge broadcasts, SDDMM but ``dot`` over features) are single IEEE
  operations, asserted bit-equal;
* float32 subnormal inputs and results are kept (no flush to zero);
* the CSR permutation equals ``torch.argsort(rows, stable=True)`` exactly, and is cached;
* compiled LADIES on the ``cuda`` backend draws the torch backend's edges (>= 99.9%).

CPU tests check the host side: the tree's plan, its torch twin against a plain Python tree
and the torch backend, the CPU paths and the cache of ``convert``, the torch fallback on CPU
tensors, and that the compiled kernels carry no ``.ftz`` instruction even under ``-ftz=true``.
"""

import gc
import shutil
import subprocess

import numpy as np
import pytest
import torch
from helpers import example

import gsample as gs
from gsample.backend import get_backend
from gsample.backend.cuda import compute as cc
from gsample.backend.cuda import convert
from gsample.backend.cuda.module import KERNELS, full_source, launch
from gsample.backend.torch import compute as tc
from gsample.formats.csc import CSC, segment_ptr
from gsample.ir import Op

GPU = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]
nvcc = shutil.which("nvcc")

N = 20_000
HUB = 1_000_000  # column 0 has HUB in-edges, row 1 HUB out-edges
EMPTY = 50  # the last EMPTY nodes have no edges at all


def gpu(fn):
    for mark in GPU:
        fn = mark(fn)
    return fn


def _gen(seed):
    return torch.Generator().manual_seed(seed)


# ----------------------------------------------------------------------------- inputs
def hub_graph() -> CSC:
    """R-MAT (no values) plus a hub column and a hub row of ``HUB`` edges (CPU)."""
    src, dst, _ = gs.datasets.rmat(N, 300_000, seed=5).edges()
    keep = (src < N - EMPTY) & (dst < N - EMPTY)
    g = _gen(0)
    hub_src = torch.randint(0, N - EMPTY, (HUB,), generator=g)
    hub_dst = torch.randint(0, N - EMPTY, (HUB,), generator=g)
    ei = torch.stack(
        [
            torch.cat([src[keep], hub_src, torch.ones(HUB, dtype=torch.long)]),
            torch.cat([dst[keep], torch.zeros(HUB, dtype=torch.long), hub_dst]),
        ]
    )
    return gs.Matrix.from_edge_index(ei, num_nodes=N).csc


def submatrices(csc: CSC) -> dict:
    M = gs.Matrix(csc)
    dev = csc.device
    cols = torch.cat([torch.tensor([0, 1, N - 1, 0]), torch.arange(2, N, 7)]).to(dev)
    rows = torch.cat([torch.tensor([1, 0, N - 3]), torch.arange(3, N, 5)]).to(dev)
    return {
        "graph": csc,
        "cols": M[:, cols].csc,
        "rows": M[rows, :].csc,
        "rows_cols": M[rows, cols].csc,
        "empty": M[:, torch.tensor([N - 1, N - 2], device=dev)].csc,
    }


@pytest.fixture(scope="module")
def mats():
    return submatrices(hub_graph().to("cuda"))


WHICH = ["graph", "cols", "rows", "rows_cols", "empty"]


def with_values(A: CSC, shape: str, dtype, seed: int = 0, ints: bool = False) -> CSC:
    """``A`` with no values, (E,) or (E, 3) values: positive reals, or small integers."""
    if shape == "none":
        return A.with_values(None)
    size = (A.nnz,) if shape == "E" else (A.nnz, 3)
    g = _gen(seed)
    v = torch.randint(0, 8, size, generator=g) if ints else torch.rand(size, generator=g) + 0.5
    return A.with_values(v.to(dtype).to(A.device))


def as64(A: CSC) -> CSC:
    return A if A.values is None else A.with_values(A.values.double())


def same(x, y) -> bool:
    """Equal dtype, shape and values, NaN equal to NaN."""
    if x.dtype != y.dtype or x.shape != y.shape:
        return False
    if not x.is_floating_point():
        return torch.equal(x, y)
    nan = x.isnan()
    return torch.equal(nan, y.isnan()) and torch.equal(x[~nan], y[~nan])


def twice(fn, *args):
    """``fn(*args)``, asserting a second run is bit-identical."""
    a, b = fn(*args), fn(*args)
    x, y = (a.values, b.values) if isinstance(a, CSC) else (a, b)
    assert same(x, y), "two runs differ"
    return a


def csr_args(A: CSC, axis: int):
    return (A.indptr, None) if axis == 0 else convert.to_csr(A)


# ----------------------------------------------------------------------------- reductions
REDUCE_CASES = [(s, d) for s in ("E", "EF") for d in (torch.float32, torch.float64)]
REDUCE_CASES.append(("none", torch.float32))


@gpu
@pytest.mark.parametrize("which", WHICH)
@pytest.mark.parametrize("shape,dtype", REDUCE_CASES, ids=lambda x: str(x).replace("torch.", ""))
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("op", ["sum", "max", "mean"])
def test_reduce(mats, op, axis, shape, dtype, which):
    A = with_values(mats[which], shape, dtype)
    got = twice(cc.reduce, A, op, axis)
    ref = tc.reduce(A, op, axis)
    assert got.dtype == ref.dtype and got.shape == ref.shape
    ptr, perm = csr_args(A, axis)
    exact_sum = axis == 1 and op == "sum" and shape != "EF"
    if exact_sum:  # row sums are exact (gsample/backend/cuda/rowsum.py), not the tree
        want = tc.reduce(as64(A), op, axis)
        tol = dict(rtol=1e-6, atol=0) if dtype == torch.float32 else dict(rtol=1e-12, atol=0)
        torch.testing.assert_close(got.double(), want.double(), **tol)
    else:
        twin = cc.reference_segment_reduce(ptr, op, A.nnz, got.dtype, x=A.values, perm=perm)
        assert torch.equal(got, twin.reshape(got.shape)), "kernel != its torch twin"
    if op == "max":
        assert torch.equal(got, ref)  # order-free
    else:
        torch.testing.assert_close(got, tc.reduce(as64(A), op, axis).to(got.dtype))
    n = A.num_cols if axis == 0 else A.num_rows
    if which in ("graph", "cols"):  # an empty column / row gives 0
        empty = (A.degrees() if axis == 0 else torch.bincount(A.rows, minlength=n)) == 0
        assert bool(empty.any()) and not bool(got[empty].any())


@gpu
@pytest.mark.parametrize("which", ["graph", "cols", "rows"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", ["E", "EF"])
@pytest.mark.parametrize("axis", [0, 1])
def test_integer_valued_sums_equal_torch_backend(mats, axis, shape, dtype, which):
    """Small integers sum exactly in any order (< 2**24): equal to the torch backend's own
    float result, hubs of 1,000,000 edges included; a mean is one rounding of that sum."""
    A = with_values(mats[which], shape, dtype, seed=3, ints=True)
    for op in ("sum", "mean", "max"):
        assert torch.equal(cc.reduce(A, op, axis), tc.reduce(A, op, axis)), op


@gpu
def test_hub_segments_span_several_tree_levels(mats):
    A = mats["graph"]
    assert int(A.degrees()[0]) >= HUB
    assert len(cc.plan(A.indptr, A.nnz)) == cc.levels(int(A.degrees().max())) == 4
    got = cc.reduce(A, "sum", 1)  # values None: the row degrees
    assert torch.equal(got, torch.bincount(A.rows, minlength=N).float())


@gpu
def test_nan_and_inf(mats):
    A = with_values(mats["cols"], "E", torch.float32)
    v = A.values.clone()
    v[A.indptr[0]] = float("nan")  # column 0 (the hub)
    v[A.indptr[1]] = float("inf")  # column 1
    v[A.indptr[4] : A.indptr[5]] = -float("inf")  # column 4: only -inf
    A = A.with_values(v)
    for op in ("sum", "max", "mean"):
        for axis in (0, 1):
            got, ref = cc.reduce(A, op, axis), tc.reduce(A, op, axis)
            assert torch.equal(got.isnan(), ref.isnan()), (op, axis)
            assert torch.equal(got.isinf(), ref.isinf()), (op, axis)
    assert bool(cc.reduce(A, "max", 0)[0].isnan())


# ----------------------------------------------------------------------------- one feature
# segment_reduce with one feature runs gs_seg_groups (a warp per 1,024-term group of any
# segment) + gs_seg_groups_finish (a warp per segment over its group values): bit-equal to
# the tree (reference_segment_reduce) and to the one-launch gs_seg_warp on every length
# case: empty segments first, in the middle and last; 1, 31, 32, 33 terms (one chunk or
# two), 1023 / 1024 / 1025 (one group or two), 32 * 1024 +- 1, 1024 ** 2 and 1024 ** 2 + 1
# (the last phase: one block of group values, or two), 2,500,000 (three blocks), among
# thousands of short segments.
HUB_LENS = [
    0,
    1,
    31,
    32,
    33,
    0,
    1023,
    1024,
    1025,
    32 * 1024 - 1,
    32 * 1024 + 1,
    0,
    2_500_000,
    5,
    1024**2,
    1024**2 + 1,
    3,
]
ONE_FEATURE = ["x", "ones", "perm", "spmm", "spmm_t", "spmm_ones"]


SHORT = 1500  # short segments between HUB_LENS[:12] and HUB_LENS[12:], and after
BIG = 12 + SHORT  # the segment of 2,500,000 terms


def one_feature_lens(seed=0):
    g = _gen(seed)
    short = torch.randint(0, 70, (2 * SHORT,), generator=g)
    short[::13] = 0
    lens = torch.cat(
        [
            torch.tensor(HUB_LENS[:12]),
            short[:SHORT],
            torch.tensor(HUB_LENS[12:]),
            short[SHORT:],
            torch.tensor([0]),
        ]
    )
    assert int(lens[BIG]) == 2_500_000
    return lens


def one_feature_terms(lens, dtype, variant, op, seed=0):
    """ptr and the operands of one feature: x (random magnitudes over 8 decades, so the
    order shows in a sum), perm, gidx, d as ``variant`` asks; the segment of 1,025 terms
    holds only zeros: -0.0 (a sum keeps the sign), or for max both signs (the first of
    equal terms wins); for max also NaN terms (two payloads: the last NaN wins)."""
    g = _gen(seed)
    ptr = segment_ptr(lens)
    P = int(lens.sum())
    x = torch.randn(P, generator=g, dtype=torch.float64) * torch.logspace(
        -4, 4, P, dtype=torch.float64
    )
    zeros = slice(int(ptr[8]), int(ptr[9]))  # the segment of 1,025 terms
    sign = torch.randint(0, 2, (1025,), generator=g).bool() | (op != "max")
    x[zeros] = torch.where(sign, -0.0, 0.0).double()
    x = x.to(dtype)
    if op == "max":
        bits = torch.int32 if dtype == torch.float32 else torch.int64
        nan1 = torch.tensor(float("nan"), dtype=dtype).view(bits) | 1
        nan2 = torch.tensor(float("nan"), dtype=dtype).view(bits) | 2
        where = [
            int(ptr[4]) + 5,
            int(ptr[4]) + 20,
            int(ptr[9]) + 31 * 1024 + 7,
            int(ptr[BIG]) + 1_500_000,
            int(ptr[BIG]) + 2_400_000,
        ]
        xb = x.view(bits)
        for i, w in enumerate(where):
            xb[w] = nan1 if i % 2 == 0 else nan2
    N = 5000
    gidx = torch.randint(0, N, (P,), generator=g)
    d = (torch.rand(N, generator=g, dtype=torch.float64) + 0.5).to(dtype)
    perm = torch.randperm(P, generator=g)
    use = {
        "x": (x, None, None, None),
        "ones": (None, None, None, None),
        "perm": (x, perm, None, None),
        "spmm": (x, perm, gidx, d),
        "spmm_t": (x, None, gidx, d),
        "spmm_ones": (None, perm, gidx, d),
    }[variant]
    return ptr, P, [None if t is None else t.cuda() for t in use]


def assert_bits(got, want):
    """Bit for bit, signed zeros and NaN payloads included."""
    assert got.dtype == want.dtype and got.shape == want.shape
    bits = torch.int32 if got.dtype == torch.float32 else torch.int64
    diff = (got.contiguous().view(bits) != want.contiguous().view(bits)).nonzero()
    assert diff.numel() == 0, f"{diff.numel()} segments differ, first {diff[:5].tolist()}"


@pytest.fixture(scope="module")
def one_lens():
    return one_feature_lens()


@gpu
@pytest.mark.parametrize("variant", ONE_FEATURE)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("op", ["sum", "max", "mean"])
def test_one_feature_groups_bit_equal_the_tree(one_lens, op, dtype, variant):
    ptr, P, (x, perm, gidx, d) = one_feature_terms(one_lens, dtype, variant, op)
    ptr = ptr.cuda()
    args = (ptr, op, P, dtype)
    kw = dict(x=x, perm=perm, gidx=gidx, d=d)
    got = twice(lambda: cc.segment_reduce(*args, **kw))
    assert got.shape == (one_lens.numel(), 1)
    assert_bits(got, cc.reference_segment_reduce(*args, **kw))
    assert_bits(got, cc.segment_reduce_warp(*args, **kw))
    empty = (one_lens == 0).cuda()
    assert bool((got[empty].view(-1) == 0).all()) and bool((~got[empty].signbit()).all())
    if op == "max" and variant == "x":  # segments 4, 9 and BIG hold NaNs
        assert got.view(-1).isnan().nonzero().view(-1).tolist() == [4, 9, BIG]
    elif op == "max" and variant != "ones" and variant != "spmm_ones":
        assert bool(got.isnan().any())


@gpu
def test_one_feature_group_pointer_and_bound(one_lens):
    ptr = segment_ptr(one_lens).cuda()
    S, P = one_lens.numel(), int(one_lens.sum())
    blocks = -(-S // 256)
    state = torch.zeros(1 + blocks, dtype=torch.int64, device="cuda")
    gptr = torch.full((S + 1,), -1, dtype=torch.int64, device="cuda")
    launch(
        "segment_reduce",
        "gs_seg_group_ptr",
        blocks * 256,
        ptr,
        S,
        state,
        gptr,
        grid=blocks,
        dtypes=("float",),
    )
    assert torch.equal(gptr, cc.group_ptr(ptr))
    assert int(gptr[-1]) <= cc.group_bound(P, S)


@gpu
@pytest.mark.parametrize(
    "lens", [[0, 0, 7, 0], [1], [1024], [1025], [0] * 40 + [3], [5_000_000], [40] * 100_000]
)
def test_one_feature_small_cases(lens, monkeypatch):
    """A lone segment, all but one empty, a single 5,000,000-term hub, many equal ones; the
    grouped kernels and, up to ONE_LAUNCH terms, the one launch (both paths each time)."""
    lens = torch.tensor(lens)
    ptr, P = segment_ptr(lens).cuda(), int(lens.sum())
    x = (torch.rand(P, generator=_gen(3)) * 2 - 1).cuda()
    for one_launch in (0, cc.ONE_LAUNCH):
        monkeypatch.setattr(cc, "ONE_LAUNCH", one_launch)
        for op in ("sum", "max", "mean"):
            got = cc.segment_reduce(ptr, op, P, torch.float32, x=x)
            assert_bits(got, cc.reference_segment_reduce(ptr, op, P, torch.float32, x=x))


@gpu
def test_one_feature_is_sync_free_and_replays_in_a_cuda_graph(one_lens):
    ptr, P, (x, _, _, _) = one_feature_terms(one_lens, torch.float32, "x", "sum")
    ptr = ptr.cuda()
    cc.segment_reduce(ptr, "sum", P, torch.float32, x=x)  # compiled, warm
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        cc.segment_reduce(ptr, "max", P, torch.float32, x=x)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm on the side stream
        cc.segment_reduce(ptr, "mean", P, torch.float32, x=x)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = cc.segment_reduce(ptr, "mean", P, torch.float32, x=x)
    for seed in (1, 2):
        x.copy_((torch.rand(P, generator=_gen(seed)) - 0.5).cuda())
        graph.replay()
        torch.cuda.synchronize()
        assert_bits(out, cc.reference_segment_reduce(ptr, "mean", P, torch.float32, x=x))


# ----------------------------------------------------------------------------- SpMM
SPMM_DTYPES = [
    ("f32", "f32"),
    ("none", "f32"),
    ("none", "i64"),
    ("f64", "f32"),
    ("f32", "f64"),
    ("none", "f64"),
]
_DT = {"f32": torch.float32, "f64": torch.float64, "i64": torch.int64}


@gpu
@pytest.mark.parametrize("which", WHICH)
@pytest.mark.parametrize("feat", [None, 5])
@pytest.mark.parametrize("vals,dense", SPMM_DTYPES)
@pytest.mark.parametrize("transpose", [False, True], ids=["A@D", "A.T@D"])
def test_spmm(mats, transpose, vals, dense, feat, which):
    A = mats[which]
    A = A.with_values(None) if vals == "none" else with_values(A, "E", _DT[vals], seed=1)
    n = A.num_rows if transpose else A.num_cols
    size = (n,) if feat is None else (n, feat)
    D = (
        (
            torch.randint(-3, 4, size, generator=_gen(2))
            if dense == "i64"
            else torch.rand(size, generator=_gen(2)) + 0.25
        )
        .to(_DT[dense])
        .cuda()
    )
    fn, ref_fn = (cc.spmm_t, tc.spmm_t) if transpose else (cc.spmm, tc.spmm)
    got = twice(fn, A, D)
    ref = ref_fn(A, D)
    assert got.dtype == ref.dtype and got.shape == ref.shape
    dt = got.dtype
    if transpose:
        ptr, perm, gidx = A.indptr, None, A.rows
    else:
        (ptr, perm), gidx = convert.to_csr(A), A.edge_cols()
    x = None if A.values is None else A.values.to(dt)
    twin = cc.reference_segment_reduce(ptr, "sum", A.nnz, dt, x=x, perm=perm, gidx=gidx, d=D.to(dt))
    assert torch.equal(got, twin.reshape(got.shape)), "kernel != its torch twin"
    if dense == "i64" and vals == "none":  # integer sums: exact in any order
        assert torch.equal(got, ref)
    else:
        torch.testing.assert_close(got, ref_fn(as64(A), D.double()).to(dt))


@gpu
@pytest.mark.parametrize("transpose", [False, True], ids=["A@D", "A.T@D"])
def test_spmm_integer_valued_equals_torch_backend(mats, transpose):
    A = mats["graph"]
    A = A.with_values(torch.randint(0, 4, (A.nnz,), generator=_gen(4)).float().cuda())
    n = A.num_rows if transpose else A.num_cols
    D = torch.randint(0, 4, (n, 3), generator=_gen(5)).float().cuda()
    fn, ref_fn = (cc.spmm_t, tc.spmm_t) if transpose else (cc.spmm, tc.spmm)
    assert torch.equal(fn(A, D), ref_fn(A, D))  # sums < 2**24: exact in any order


# ----------------------------------------------------------------------------- per edge
@gpu
@pytest.mark.parametrize("which", ["graph", "rows_cols", "empty"])
@pytest.mark.parametrize(
    "types", [("f32", "f32"), ("f32", "f64"), ("f64", "f64"), ("i64", "f32"), ("i64", "i64")]
)
@pytest.mark.parametrize("feat", [None, 4, 64])
@pytest.mark.parametrize("op", ["dot", "add", "sub", "mul", "div"])
def test_sddmm(mats, op, feat, types, which):
    A = mats[which]
    size_u = (A.num_rows,) if feat is None else (A.num_rows, feat)
    size_v = (A.num_cols,) if feat is None else (A.num_cols, feat)
    g = _gen(6)

    def make(size, t):
        if t == "i64":
            return torch.randint(1, 9, size, generator=g).cuda()
        x = torch.rand(size, generator=g) + 0.1
        return x.to(_DT[t]).cuda()

    U, V = make(size_u, types[0]), make(size_v, types[1])
    got = twice(cc.sddmm, A, U, V, op).values
    ref = tc.sddmm(A, U, V, op).values
    assert got.dtype == ref.dtype and got.shape == ref.shape
    if op == "dot" and feat is not None and got.is_floating_point():
        truth = tc.sddmm(A, U.double(), V.double(), op).values.to(got.dtype)
        torch.testing.assert_close(got, truth)  # a sum over features: rounding order
    else:
        assert same(got, ref)  # one IEEE operation per edge


@gpu
@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize(
    "feat, offset",
    [(64, 0), (8, 0), (4, 0), (2, 0), (6, 0), (3, 0), (64, 1), (1, 0)],
    ids=["64", "8", "4", "2", "6", "3", "64-unaligned", "1"],
)
def test_sddmm_dot_adds_the_products_left_to_right(feat, offset, dtype):
    """gs_edge_dot's two paths (16-byte loads where the feature count and the tables'
    alignment allow, one element at a time otherwise) round each product and add them in
    feature order: bit for bit the sum made one feature at a time by torch's own mul and
    add (separate kernels: nothing contracted). The graph and the sum are made on the
    CPU, whose mul and add round the same way: under compute-sanitizer the test launches
    little beyond gs_edge_dot."""
    H = hub_graph()
    A = H.to("cuda")
    g = _gen(11)
    dt = _DT[dtype]

    def table(n):
        # ``offset`` elements before the table: its start is then not 16-byte aligned
        flat = (torch.rand(n * feat + offset, generator=g) - 0.5).to(dt).cuda()
        return flat[offset:].view(n, feat)

    U, V = table(A.num_rows), table(A.num_cols)
    got = cc.sddmm(A, U, V, "dot").values
    r, c, U, V = H.rows, H.edge_cols(), U.cpu(), V.cpu()
    want = U[r, 0] * V[c, 0]
    for f in range(1, feat):
        want = want + U[r, f] * V[c, f]
    assert got.dtype == dt and torch.equal(got.cpu(), want)


@gpu
@pytest.mark.parametrize("which", ["graph", "cols", "rows_cols", "empty"])
@pytest.mark.parametrize(
    "types",
    [
        ("f32", "f32"),
        ("f64", "f32"),
        ("f32", "f64"),
        ("none", "f64"),
        ("none", "i64"),
        ("f32", "i64"),
        ("i64", "i64"),
    ],
)
@pytest.mark.parametrize("shape", ["E", "EF"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow"])
def test_edge_broadcast_bit_equal(mats, op, axis, shape, types, which):
    A = mats[which]
    vals, vec = types
    if vals == "none":
        A = A.with_values(None)
    elif vals == "i64":
        A = with_values(A, shape, torch.int64, seed=7, ints=True)
    else:
        A = with_values(A, shape, _DT[vals], seed=7)
    n = A.num_cols if axis == 0 else A.num_rows
    v = (
        torch.rand(n, generator=_gen(8)) * 4 - 1
        if vec != "i64"
        else torch.randint(-3, 4, (n,), generator=_gen(8))
    )
    v[::11] = 0  # x / 0: +-inf, as torch
    if op == "pow" and vec == "i64":
        v = v.abs()  # torch: no negative integer powers
    v = v.to(_DT[vec]).cuda()
    got = twice(cc.edge_broadcast, A, op, v, axis).values
    ref = tc.edge_broadcast(A, op, v, axis).values
    assert same(got, ref)  # one IEEE operation per edge


# ----------------------------------------------------------------------------- subnormals
TINY = 2.0**-149  # the smallest float32 subnormal


@gpu
def test_float32_subnormals_are_kept(mats):
    """The kernels' float32 steps keep subnormals (bit-equal to torch's). Multiples of
    2**-149 below 2**-125 add exactly, so every result is compared with ==."""
    A = mats["graph"]
    k = torch.randint(1, 4, (A.nnz,), generator=_gen(9)).cuda()
    S = A.with_values(k.float() * TINY)  # every value subnormal
    assert bool((S.values < 2.0**-126).all() and (S.values > 0).all())
    for op in ("sum", "max", "mean"):
        for axis in (0, 1):
            got, ref = cc.reduce(S, op, axis), tc.reduce(S, op, axis)
            assert torch.equal(got, ref), f"{op} axis {axis}: float32 subnormals flushed?"
    assert float(cc.reduce(S, "max", 0)[0]) == 3 * TINY
    # SpMM with subnormal products: values k * 2**-140, D in {0, .., 3} * 2**-9
    W = A.with_values(k.float() * 2.0**-140)
    D = (torch.randint(0, 4, (N,), generator=_gen(10)).float() * 2.0**-9).cuda()
    assert torch.equal(cc.spmm(W, D), tc.spmm(W, D))
    assert torch.equal(cc.spmm_t(W, D), tc.spmm_t(W, D))
    # per-edge results in the subnormal range: products and quotients of normal numbers,
    # sums and differences of subnormal ones
    X = A.with_values((torch.rand(A.nnz, generator=_gen(11)) + 1).cuda() * 1e-20)
    y = (torch.rand(N, generator=_gen(12)) + 1).cuda() * 1e-20
    j = (torch.randint(1, 4, (N,), generator=_gen(14)).float() * TINY).cuda()
    for M, op, vec in ((X, "mul", y), (X, "div", 1 / y), (S, "sub", j), (S, "add", j)):
        got = cc.edge_broadcast(M, op, vec, 0).values
        assert torch.equal(got, tc.edge_broadcast(M, op, vec, 0).values), op
        assert bool(((got != 0) & (got.abs() < 2.0**-126)).any()), op
    U = (torch.rand(N, generator=_gen(13)) + 1).cuda() * 1e-20
    assert torch.equal(cc.sddmm(A, U, y, "dot").values, tc.sddmm(A, U, y, "dot").values)


# ----------------------------------------------------------------------------- conversions
@gpu
@pytest.mark.parametrize("which", WHICH)
def test_conversions_exact(mats, which):
    A = mats[which]
    indptr_r, perm = convert.to_csr(A, cache=False)
    counts = torch.bincount(A.rows, minlength=A.num_rows)
    assert torch.equal(perm, torch.argsort(A.rows, stable=True))
    assert torch.equal(indptr_r, segment_ptr(counts))
    assert torch.equal(convert.row_counts(A.rows, A.num_rows), counts)
    cols = convert.edge_cols(A)
    assert torch.equal(cols, A.edge_cols())
    assert torch.equal(convert.csr_cols(A, perm), cols[perm])


@gpu
def test_csr_is_cached_per_graph(mats):
    A = mats["graph"]
    first = convert.to_csr(A)
    again = convert.to_csr(A)
    assert first[1] is again[1] and first[0] is again[0]
    scaled = A.with_values(torch.ones(A.nnz, device=A.device))  # same structure
    assert convert.to_csr(scaled)[1] is first[1]
    sub = mats["cols"]  # a sub-matrix: per call
    assert convert.to_csr(sub)[1] is not convert.to_csr(sub)[1]
    B = CSC(A.num_nodes, A.indptr.clone(), A.rows.clone())
    p = convert.to_csr(B)[1]
    B.rows[:2] = B.rows[:2].flip(0)  # written in place
    p2 = convert.to_csr(B)[1]
    assert p2 is not p and torch.equal(p2, torch.argsort(B.rows, stable=True))


# ----------------------------------------------------------------------------- end to end
def _draws(A, sampler, seeds):
    loader = gs.DataLoader(A, sampler, seeds, batch_size=512, seed=1234)
    return [[tuple(t.cpu() for t in b.edges()) for b in batch.out] for batch in loader]


def _agreement(x, y):
    """Fraction of first-layer edges that are identical (as the bench harness's draw check)."""
    same = total = 0
    for bx, by in zip(x, y):
        ex, ey = bx[0][2], by[0][2]
        total += max(ex.numel(), ey.numel())
        if ex.shape == ey.shape:
            same += int((ex == ey).sum())
    return same / max(total, 1)


@gpu
def test_compiled_ladies_cuda_backend_draws_the_torch_backends_edges():
    ladies = example("ladies")
    assert all(get_backend("cuda").supports(op) for op in (Op.REDUCE, Op.EDGE_BROADCAST))
    A = ladies.normalize(gs.datasets.rmat(50_000, 1_000_000, seed=0).to("cuda"))
    seeds = torch.randperm(50_000, generator=_gen(0))[:2048].cuda()
    out = {}
    for name in ("torch", "cuda", "cuda again"):
        out[name] = _draws(A, gs.compile(ladies.ladies, backend=name.split()[0]), seeds)
    assert len(out["cuda"]) == 4
    for bx, by in zip(out["cuda"], out["cuda again"]):  # bit-identical reruns
        for a, b in zip(bx, by):
            assert all(torch.equal(p, q) for p, q in zip(a, b))
    agree = _agreement(out["torch"], out["cuda"])
    assert agree >= 0.999, f"first-layer agreement {agree:.6f}"


# ----------------------------------------------------------------------------- CPU: host side
def test_levels():
    assert [cc.levels(n) for n in (0, 1, 2, 32, 33, 1024, 1025, 32768, 32769, HUB)] == [
        0,
        1,
        1,
        1,
        2,
        2,
        3,
        3,
        4,
        4,
    ]


def test_plan_counts_chunks_per_level():
    lens = torch.randint(0, 100, (5000,), generator=_gen(1))
    lens[::9] = 0
    lens[17] = 30_000  # 3 levels of 32
    ptr = segment_ptr(lens)
    levels = cc.plan(ptr, int(lens.sum()))
    assert len(levels) == 3
    for l, (cptr, total) in enumerate(levels, start=1):
        per = cptr[1:] - cptr[:-1]
        assert torch.equal(per, (lens + 32**l - 1) // 32**l) and total == int(per.sum())
    assert torch.equal(levels[-1][0][1:] - levels[-1][0][:-1], (lens > 0).long())


def _python_tree(values, op):
    """The documented order in plain Python float32 arithmetic: chunks of 32, left to
    right, again and again."""
    f32 = np.float32
    level = [f32(v) for v in values]
    while len(level) > 1:
        nxt = []
        for i in range(0, len(level), 32):
            acc = level[i]
            for t in level[i + 1 : i + 32]:
                acc = f32(acc + t) if op == "sum" else (t if (np.isnan(t) or t > acc) else acc)
            nxt.append(acc)
        level = nxt
    return level[0]


@pytest.mark.parametrize("op", ["sum", "max"])
def test_twin_follows_the_documented_order(op):
    g = _gen(2)
    lens = [1, 31, 32, 33, 100, 1025, 0, 2000]
    x = (torch.randn(sum(lens), generator=g) * torch.logspace(-4, 4, sum(lens))).float()
    ptr = segment_ptr(torch.tensor(lens))
    got = cc.reference_segment_reduce(ptr, op, sum(lens), torch.float32, x=x).reshape(-1)
    for s, n in enumerate(lens):
        part = x[int(ptr[s]) : int(ptr[s + 1])].numpy()
        want = _python_tree(part, op) if n else np.float32(0)
        assert got[s].numpy().view(np.int32) == np.asarray(want, np.float32).view(np.int32), s


def _fold_groups(t, op):
    """Each group of 1,024 consecutive terms of ``t`` folded as gs_fold_group does: every
    chunk of 32 left to right, then the chunk values in order (vectorised over groups)."""
    n = t.numel()
    G = -(-n // 1024)
    pad = torch.zeros(G * 1024, dtype=t.dtype)
    pad[:n] = t
    valid = (torch.arange(G * 1024) < n).view(G, 32, 32)
    terms = pad.view(G, 32, 32)

    def combine(acc, v):
        if op == "max":
            return torch.where(v.isnan() | (v > acc), v, acc)
        return acc + v

    acc = terms[:, :, 0]
    for j in range(1, 32):
        acc = torch.where(valid[:, :, j], combine(acc, terms[:, :, j]), acc)
    chunk_valid = valid[:, :, 0]
    out = acc[:, 0]
    for j in range(1, 32):
        out = torch.where(chunk_valid[:, j], combine(out, acc[:, j]), out)
    return out


def _grouped_model(ptr, op, x):
    """The order of gs_seg_groups + gs_seg_groups_finish (and their stack, gs_push /
    gs_close) in torch / numpy scalars: group values, then per segment the tree over them."""
    lens = (ptr[1:] - ptr[:-1]).tolist()
    out = []
    for s, n in enumerate(lens):
        if n == 0:
            out.append(torch.zeros((), dtype=x.dtype))
            continue
        gval = _fold_groups(x[int(ptr[s]) : int(ptr[s + 1])], op)
        if gval.numel() == 1:
            v = gval[0]
        else:
            acc, cnt = [None] * 8, [0] * 8

            def comb(a, b):
                if op == "max":
                    return b if (bool(b.isnan()) or bool(b > a)) else a
                return a + b

            def push(v, acc=acc, cnt=cnt):
                for l in range(8):
                    acc[l] = v if cnt[l] == 0 else comb(acc[l], v)
                    cnt[l] += 1
                    if cnt[l] < 32:
                        return
                    v, cnt[l] = acc[l], 0

            for u in _fold_groups(gval, op):
                push(u)
            top = max(l for l in range(8) if cnt[l])
            for l in range(top):
                if cnt[l]:
                    acc[l + 1] = acc[l] if cnt[l + 1] == 0 else comb(acc[l + 1], acc[l])
                    cnt[l], cnt[l + 1] = 0, cnt[l + 1] + 1
            v = acc[top]
        out.append(v / n if op == "mean" else v)
    return torch.stack(out).reshape(-1, 1)


@pytest.mark.parametrize("op", ["sum", "max", "mean"])
def test_grouped_order_is_the_tree(op):
    """The decomposition behind the one-feature kernels, on the CPU: groups of 1,024 terms
    aligned on a segment's start, then the tree over the group values (a stack fed in
    blocks of 1,024 of them), give the tree's bits on every length case."""
    lens = torch.tensor(
        [
            0,
            1,
            31,
            32,
            33,
            0,
            1023,
            1024,
            1025,
            32 * 1024 - 1,
            32 * 1024 + 1,
            0,
            1024**2,
            1024**2 + 1,
            3 * 1024**2 + 5000,
            7,
            0,
        ]
    )
    g = _gen(4)
    P = int(lens.sum())
    x = (
        torch.randn(P, generator=g, dtype=torch.float64)
        * torch.logspace(-4, 4, P, dtype=torch.float64)
    ).float()
    ptr = segment_ptr(lens)
    if op == "max":
        x[int(ptr[4]) + 3] = float("nan")
        x[int(ptr[14]) + 2_000_000] = float("nan")
        x[int(ptr[8]) : int(ptr[9])] = torch.where(torch.rand(1025, generator=g) < 0.5, -0.0, 0.0)
    got = _grouped_model(ptr, op, x)
    want = cc.reference_segment_reduce(ptr, op, P, torch.float32, x=x)
    assert torch.equal(got.view(torch.int32), want.view(torch.int32))


def test_group_ptr_and_bound():
    lens = torch.tensor([0, 1, 1023, 1024, 1025, 0, 5000, 1024**2 + 1, 0])
    gptr = cc.group_ptr(segment_ptr(lens))
    want = [0]
    for n in lens.tolist():
        want.append(want[-1] + -(-n // 1024))
    assert gptr.tolist() == want and gptr.dtype == torch.int64
    assert cc.group_ptr(segment_ptr(lens), group=32).tolist()[-1] == sum(
        -(-n // 32) for n in lens.tolist()
    )
    g = _gen(5)
    for _ in range(20):
        lens = torch.randint(0, 3000, (int(torch.randint(1, 50, (1,), generator=g)),), generator=g)
        total = int(cc.group_ptr(segment_ptr(lens))[-1])
        bound = cc.group_bound(int(lens.sum()), lens.numel())
        assert total <= bound <= -(-int(lens.sum()) // 1024) + lens.numel()


def test_twin_matches_torch_backend_on_cpu(small_graph):
    A = small_graph.csc
    for op in ("sum", "max", "mean"):
        for axis in (0, 1):
            ptr, perm = csr_args(A, axis)
            got = cc.reference_segment_reduce(
                ptr, op, A.nnz, torch.float32, x=A.values, perm=perm
            ).reshape(-1)
            torch.testing.assert_close(got, tc.reduce(as64(A), op, axis).float())
    D = torch.rand(A.num_cols, 4, generator=_gen(3))
    (ptr, perm), cols = convert.to_csr(A), A.edge_cols()
    got = cc.reference_segment_reduce(
        ptr, "sum", A.nnz, torch.float32, x=A.values, perm=perm, gidx=cols, d=D
    )
    torch.testing.assert_close(got, tc.spmm(as64(A), D.double()).float())


def test_convert_on_cpu_and_its_cache(small_graph):
    A = small_graph.csc
    indptr_r, perm = convert.to_csr(A)
    assert torch.equal(perm, torch.argsort(A.rows, stable=True))
    assert torch.equal(indptr_r, segment_ptr(torch.bincount(A.rows, minlength=A.num_rows)))
    assert torch.equal(convert.edge_cols(A), A.edge_cols())
    assert torch.equal(convert.csr_cols(A, perm), A.edge_cols()[perm])
    assert convert.to_csr(A)[1] is perm  # graph-level: cached
    assert convert.to_csr(A.with_values(None))[1] is perm  # shares the structure
    sub = small_graph[:, torch.arange(0, 2000, 3)].csc
    assert convert.to_csr(sub)[1] is not convert.to_csr(sub)[1]  # small: per call
    B = CSC(A.num_nodes, A.indptr.clone(), A.rows.clone())
    convert.to_csr(B)
    rows = B.rows
    assert any(k.rows is rows for k in list(convert._CSR_CACHE.keys()))
    del B
    gc.collect()
    assert not any(k.rows is rows for k in list(convert._CSR_CACHE.keys()))  # dies with its CSC
    with pytest.raises(ValueError, match="perm"):
        convert.csr_cols(A, perm[:-1])


def test_cpu_tensors_run_the_torch_code(small_graph):
    A = small_graph.csc
    D = torch.rand(A.num_cols, 2)
    assert torch.equal(cc.reduce(A, "sum", 1), tc.reduce(A, "sum", 1))
    assert torch.equal(cc.spmm(A, D), tc.spmm(A, D))
    assert torch.equal(cc.spmm_t(A, D), tc.spmm_t(A, D))
    assert torch.equal(cc.sddmm(A, D, D, "dot").values, tc.sddmm(A, D, D, "dot").values)
    v = torch.rand(A.num_rows)
    assert torch.equal(
        cc.edge_broadcast(A, "div", v, 1).values, tc.edge_broadcast(A, "div", v, 1).values
    )


@pytest.mark.skipif(nvcc is None, reason="nvcc not installed")
@pytest.mark.parametrize("dtype", ["float", "double"])
def test_kernels_do_not_flush_subnormals_under_ftz(dtype, tmp_path):
    """Not even -ftz=true (which cp.RawModule appends) makes a float32 step flush."""
    src = tmp_path / "segment_reduce.cu"
    src.write_text(full_source("segment_reduce", dtypes=(dtype,)))
    out = tmp_path / "segment_reduce.ptx"
    done = subprocess.run(
        [
            nvcc,
            "-ptx",
            "-arch=sm_90",
            "-std=c++17",
            "-ftz=true",
            f"-I{KERNELS}",
            str(src),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    ptx = out.read_text()
    for name in ("gs_seg_chunks", "gs_seg_finish", "gs_edge_binary", "gs_edge_dot"):
        assert f".entry {name}" in ptx
    suffix = "f32" if dtype == "float" else "f64"
    assert f"add.rn.{suffix}" in ptx and f"div.rn.{suffix}" in ptx
    assert ".ftz" not in ptx  # no flushing instruction at all
    assert "fma." not in ptx  # products rounded before they are added
