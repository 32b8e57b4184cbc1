"""The fused column normalisation (``kernels/normalize.cu``, ``backend/cuda/normalize.py``)
against this backend's unfused kernels, bit for bit, and the torch backend up to the
reductions' rounding (skipped without a GPU).

Random matrices (repeated and empty columns, sliced rows, weighted or not) and programs of
no step or one edge broadcast (the one-launch path) or longer (the composed path), every
reduction and broadcast op, float32 and float64; a hub column of 15,000 edges (15 groups of
the reduction tree: ``gs_push`` past its first level); NaN, infinities and zero sums.
"""

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fused_compute import assert_identical, build, matrix

from gsample.backend.torch import fused_compute

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
]

OPS = ["add", "sub", "mul", "div"]
bcast = st.tuples(
    st.just("bcast"), st.sampled_from(OPS), st.integers(0, 1), st.just(-1), st.integers(0, 1)
)
scalar = st.tuples(
    st.just("scalar"),
    st.sampled_from(OPS + ["pow"]),
    st.booleans(),
    st.sampled_from([2, 0.5, -1, 3.0]),
)
SETTINGS = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _dtyped(specs, dtype):
    d = {torch.float32: 0, torch.float64: 1}[dtype]
    return [s[:3] + (d,) + s[4:] if s[0] == "bcast" else s for s in specs]


def _unfused(A, program, operands, reduce, op, axis):
    """This backend's unfused ops: the map (an edge broadcast, or the generated kernel of a
    longer program), the reduction, the broadcast."""
    from gsample.backend.cuda import compute, edge_map

    if not program:
        X = A
    elif len(program) == 1 and program[0][4] is not None:
        step = program[0]
        X = compute.edge_broadcast(A, step[0], operands[step[1]], step[4])
    else:
        X = edge_map.fused_edge_map(A, program, **operands)
    return compute.edge_broadcast(X, op, compute.reduce(X, reduce, axis), axis)


def _same_bits(got, want):
    assert got.same_structure(want) and got.values.dtype == want.values.dtype
    nan = torch.isnan(want.values)  # a NaN's payload: unspecified (IEEE 754)
    assert torch.equal(nan, torch.isnan(got.values))
    assert_identical(got.values[~nan], want.values[~nan])


@SETTINGS
@given(
    seed=st.integers(0, 2**16),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    weighted=st.booleans(),
    slice_rows=st.booleans(),
    specs=st.one_of(
        st.lists(bcast, max_size=1), st.lists(st.one_of(bcast, scalar), min_size=2, max_size=3)
    ),
    reduce=st.sampled_from(["sum", "max", "mean"]),
    op=st.sampled_from(OPS),
    axis=st.integers(0, 1),
)
def test_equals_the_unfused_kernels(seed, dtype, weighted, slice_rows, specs, reduce, op, axis):
    from gsample.backend.cuda import normalize

    A = matrix(seed, dtype if weighted else None, "cuda", slice_rows)
    _, program, operands = build(A, _dtyped(specs, dtype), seed, "cuda")
    one = normalize._one_launch(A, program, reduce, op, axis, operands) is not None
    assert one == (axis == 0 and len(program) <= 1), "the kernel runs where it can"
    got = normalize.fused_edge_normalize(A, program, reduce, op, axis, **operands)
    _same_bits(got, _unfused(A, program, operands, reduce, op, axis))
    ref = fused_compute.fused_edge_normalize(A, program, reduce, op, axis, **operands)
    torch.testing.assert_close(got.values, ref.values, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("reduce", ["sum", "max", "mean"])
def test_a_hub_column_and_special_values(dtype, reduce):
    """15,000 edges in one column beside empty ones and short ones (the tree over 15 groups
    of 1,024), then NaN, infinities and a column summing to zero."""
    from gsample.backend.cuda import normalize
    from gsample.formats.csc import CSC

    g = torch.Generator().manual_seed(3)
    lens = torch.tensor([0, 15000, 3, 0, 40, 1000, 1])
    E = int(lens.sum())
    indptr = torch.cat([torch.zeros(1, dtype=torch.long), lens.cumsum(0)]).cuda()
    rows = torch.randint(0, 500, (E,), generator=g).cuda()
    values = (torch.rand(E, generator=g, dtype=torch.float64) * 4 - 1).to(dtype).cuda()
    A = CSC.of(500, indptr, rows, None, torch.arange(7).cuda(), values)
    w = (torch.rand(500, generator=g, dtype=torch.float64) + 0.5).to(dtype).cuda()
    program, operands = (("div", "0", False, None, 1),), {"0": w}
    assert normalize._one_launch(A, program, reduce, "div", 0, operands) is not None
    got = normalize.fused_edge_normalize(A, program, reduce, "div", 0, **operands)
    _same_bits(got, _unfused(A, program, operands, reduce, "div", 0))
    special = values.clone()
    special[15003:15007] = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0])
    special[15043 : 15043 + 1000] = 0.0  # a column of zeros: 0 / 0
    Z = A.with_values(special)
    got = normalize.fused_edge_normalize(Z, (), reduce, "sub", 0)
    _same_bits(got, _unfused(Z, (), {}, reduce, "sub", 0))
    got = normalize.fused_edge_normalize(Z, (), reduce, "div", 0)
    _same_bits(got, _unfused(Z, (), {}, reduce, "div", 0))


def test_what_the_one_launch_path_takes():
    """One launch for no step or one edge broadcast of equal float dtypes, per column, up to
    ``ONE_LAUNCH`` edges; the composed kernels otherwise."""
    from gsample.backend.cuda import compute, normalize

    A = matrix(1, torch.float32, "cuda", False)
    w32 = torch.rand(A.num_rows, device="cuda") + 0.5
    div = (("div", "0", False, None, 1),)
    assert normalize._one_launch(A, div, "sum", "div", 0, {"0": w32}) is not None
    assert normalize._one_launch(A, (), "max", "sub", 0, {}) is not None
    assert normalize._one_launch(A, div, "sum", "div", 1, {"0": w32}) is None  # per row
    assert normalize._one_launch(A, div, "sum", "div", 0, {"0": w32.double()}) is None
    assert normalize._one_launch(A, div + div, "sum", "div", 0, {"0": w32}) is None
    rev = (("div", "0", True, None, 1),)
    assert normalize._one_launch(A, rev, "sum", "div", 0, {"0": w32}) is None
    from gsample.formats.csc import CSC

    E = compute.ONE_LAUNCH + 1  # a hub past one warp's share
    hub = CSC.of(
        10,
        torch.tensor([0, E], device="cuda"),
        torch.zeros(E, dtype=torch.long, device="cuda"),
        None,
        torch.tensor([0], device="cuda"),
    )
    assert normalize._one_launch(hub, (), "sum", "div", 0, {}) is None
    got = normalize.fused_edge_normalize(hub, (), "sum", "div", 0)
    ones = torch.ones(E, device="cuda")
    assert torch.equal(got.values, ones / torch.full((E,), float(E), device="cuda"))
