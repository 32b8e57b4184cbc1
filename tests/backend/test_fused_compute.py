"""Fused edge maps (and edge-map-reduce) equal the unfused ops bit for bit.

Random programs (hypothesis) mix scalar steps (either side), negation, per-edge tensors
of shape (E,) and (E, F), per-column and per-row broadcasts, operands read by several
steps, and operand dtypes float32 / float64 / int64, on weighted, float64-weighted and
unweighted matrices with repeated columns, sliced rows and empty columns; each is run
step by step with ``compute.edge_map`` / ``edge_broadcast`` / ``reduce`` and in one
``fused_edge_map`` / ``fused_edge_map_reduce`` call, and the results must have the same
dtype, shape and bits.
"""

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gsample as gs
from gsample.backend import get_backend
from gsample.backend.torch import compute
from gsample.backend.torch.fused_compute import (
    fused_edge_map,
    fused_edge_map_reduce,
    fused_edge_normalize,
)
from gsample.ir import Op

N, F = 40, 3
DTYPES = (torch.float32, torch.float64, torch.int64)
SCALARS = (-2, -1, 0, 1, 2, 3, 0.5, -1.5, 2.0)


def matrix(seed, weights, device, slice_rows, nnz=150):
    """A sliced sub-matrix with repeated columns (some empty); weights None/float32/float64."""
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(0, N, (2, nnz), generator=g)
    w = None if weights is None else torch.rand(nnz, generator=g, dtype=weights) * 2 - 0.5
    A = gs.Matrix.from_edge_index(ei, num_nodes=N, weight=w).to(device)
    cols = torch.randint(0, N, (12,), generator=g).to(device)
    rows = torch.randperm(N, generator=g)[:25].to(device) if slice_rows else slice(None)
    return A[rows, cols].csc


def bits(t):
    """The tensor's bit pattern (so -0.0 != 0.0 and NaNs compare by payload)."""
    if t.is_floating_point():
        return t.view({torch.float32: torch.int32, torch.float64: torch.int64}[t.dtype])
    return t


def assert_identical(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    assert torch.equal(bits(a), bits(b))


step = st.one_of(
    st.tuples(
        st.just("scalar"),
        st.sampled_from(["add", "sub", "mul", "div", "pow"]),
        st.booleans(),
        st.sampled_from(SCALARS),
    ),
    st.tuples(st.just("neg")),
    st.tuples(
        st.just("edge"),
        st.sampled_from(["add", "sub", "mul", "div", "pow"]),
        st.booleans(),
        st.integers(0, 2),
        st.booleans(),
        st.integers(0, 1),
    ),
    st.tuples(
        st.just("bcast"),
        st.sampled_from(["add", "sub", "mul", "div"]),
        st.integers(0, 1),
        st.integers(0, 2),
        st.integers(0, 1),
    ),
)


def build(A, specs, seed, device):
    """``(unfused, program, operands)``: the CSC after the unfused chain, and the fused form."""
    g = torch.Generator().manual_seed(seed)
    pool, operands, program = {}, {}, []

    def operand(key, shape, dtype):
        """A tensor per (what, dtype, slot): two steps may read the same operand."""
        if key not in pool:
            t = torch.randn(shape, generator=g, dtype=torch.float64) * 2
            t = t.round() if dtype is torch.int64 else t
            pool[key] = (str(len(pool)), t.to(dtype).to(device))
            operands[pool[key][0]] = pool[key][1]
        return pool[key]

    csc = A
    for s in specs:
        if s[0] == "scalar":
            _, op, rev, x = s
            csc = compute.edge_map(csc, op, reverse=rev, scalar=x)
            program.append((op, None, rev, x, None))
        elif s[0] == "neg":
            csc = compute.edge_map(csc, "neg", scalar=None)
            program.append(("neg", None, False, None, None))
        elif s[0] == "edge":
            _, op, rev, d, wide, slot = s
            shape = (A.nnz, F) if wide else (A.nnz,)
            name, t = operand(("edge", wide, d, slot), shape, DTYPES[d])
            csc = compute.edge_map(csc, op, reverse=rev, other=t)
            program.append((op, name, rev, None, None))
        else:
            _, op, axis, d, slot = s
            n = A.num_cols if axis == 0 else A.num_rows
            name, t = operand(("bcast", axis, d, slot), (n,), DTYPES[d])
            csc = compute.edge_broadcast(csc, op, t, axis)
            program.append((op, name, False, None, axis))
    return csc, tuple(program), operands


SETTINGS = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@SETTINGS
@given(
    seed=st.integers(0, 2**16),
    weights=st.sampled_from([None, torch.float32, torch.float64]),
    slice_rows=st.booleans(),
    specs=st.lists(step, min_size=1, max_size=6),
)
def test_fused_edge_map_equals_unfused(device, seed, weights, slice_rows, specs):
    A = matrix(seed, weights, device, slice_rows)
    unfused, program, operands = build(A, specs, seed, device)
    fused = fused_edge_map(A, program, **operands)
    assert fused.same_structure(unfused)
    assert_identical(fused.values, unfused.values)


@SETTINGS
@given(
    seed=st.integers(0, 2**16),
    weights=st.sampled_from([None, torch.float32, torch.float64]),
    slice_rows=st.booleans(),
    specs=st.lists(step, min_size=0, max_size=5),
    op=st.sampled_from(["sum", "max", "mean"]),
    axis=st.integers(0, 1),
)
def test_fused_edge_map_reduce_equals_unfused(device, seed, weights, slice_rows, specs, op, axis):
    A = matrix(seed, weights, device, slice_rows)
    unfused, program, operands = build(A, specs, seed, device)
    expected = compute.reduce(unfused, op, axis)
    assert_identical(fused_edge_map_reduce(A, program, op, axis, **operands), expected)


@SETTINGS
@given(
    seed=st.integers(0, 2**16),
    weights=st.sampled_from([None, torch.float32, torch.float64]),
    slice_rows=st.booleans(),
    specs=st.lists(step, min_size=0, max_size=5),
    reduce=st.sampled_from(["sum", "max", "mean"]),
    op=st.sampled_from(["add", "sub", "mul", "div"]),
    axis=st.integers(0, 1),
    layout=st.sampled_from(["csc", "csr", "csr-compact", "coo"]),
)
def test_fused_edge_normalize_equals_unfused(
    device, seed, weights, slice_rows, specs, reduce, op, axis, layout
):
    """``X.op(X.reduce(axis), axis)`` of the chain's ``X``, in one call, on every layout the
    torch backend registers it for: the unfused ops' bits (an empty program: ``A`` itself)."""
    from gsample.backend.torch import layout_ops
    from gsample.formats.layouts import convert

    A = matrix(seed, weights, device, slice_rows)
    unfused, program, operands = build(A, specs, seed, device)
    expected = compute.edge_broadcast(unfused, op, compute.reduce(unfused, reduce, axis), axis)
    got = fused_edge_normalize(A, program, reduce, op, axis, **operands)
    assert got.same_structure(expected)
    assert_identical(got.values, expected.values)
    other = convert(
        layout_ops.fused_edge_normalize(convert(A, layout), program, reduce, op, axis, **operands),
        "csc",
    ).values
    # another layout holds the edges in another order: torch's CPU pow may round an element
    # apart by where it sits in a vector register, and a NaN's sign and payload may differ
    # (tests/test_layouts.py compares the layouts' bits on programs without pow)
    torch.testing.assert_close(other, expected.values, equal_nan=True)


def test_backend_runs_fused_ops_by_table_names(device):
    A = matrix(0, torch.float32, device, slice_rows=False)
    v = torch.rand(A.num_cols, device=device) + 0.5
    program = (
        ("pow", None, False, 2, None),
        ("mul", None, False, 3, None),
        ("div", "0", False, None, 0),
    )
    be = get_backend("torch")
    out = be.run(Op.FUSED_EDGE_MAP, A=A, program=program, **{"0": v})
    ref = compute.edge_broadcast(
        compute.edge_map(compute.edge_map(A, "pow", scalar=2), "mul", scalar=3), "div", v, 0
    )
    assert_identical(out.values, ref.values)
    red = be.run(Op.FUSED_EDGE_MAP_REDUCE, A=A, program=program[:1], op="sum", axis=1)
    assert_identical(red, compute.reduce(compute.edge_map(A, "pow", scalar=2), "sum", 1))
    norm = be.run(Op.FUSED_EDGE_NORMALIZE, A=A, program=program[:1], reduce="sum", op="div", axis=0)
    X = compute.edge_map(A, "pow", scalar=2)
    assert_identical(
        norm.values, compute.edge_broadcast(X, "div", compute.reduce(X, "sum", 0), 0).values
    )


def test_empty_matrix(device):
    A = gs.Matrix.from_edge_index(torch.tensor([[0], [1]]), num_nodes=4).to(device)
    A = A[:, torch.tensor([0, 2], device=device)].csc  # no edges at all
    program = (("add", "0", False, None, 1), ("pow", None, False, 2, None))
    v = torch.ones(A.num_rows, dtype=torch.float64, device=device)
    out = fused_edge_map(A, program, **{"0": v})
    assert out.values.shape == (0,) and out.values.dtype == torch.float64
    red = fused_edge_map_reduce(A, program, "max", 0, **{"0": v})
    assert_identical(red, torch.zeros(2, dtype=torch.float64, device=device))


def test_bad_operands_raise_the_unfused_errors(device):
    """The fused ops' checks (their definitions' checks, run before any backend) reuse the
    unfused ones."""
    from gsample.ir import Op, info

    A = matrix(0, None, device, slice_rows=True)
    check = info(Op.FUSED_EDGE_MAP).check
    assert check is info(Op.FUSED_EDGE_MAP_REDUCE).check
    with pytest.raises(ValueError, match="v: expected one value per column"):
        check(
            A=A,
            program=(("div", "0", False, None, 0),),
            **{"0": torch.ones(A.num_cols + 1, device=device)},
        )
    with pytest.raises(ValueError, match="v: expected one value per row"):
        check(
            A=A,
            program=(("mul", "0", False, None, 1),),
            op="sum",
            axis=0,
            **{"0": torch.ones(A.num_cols, device=device)},
        )
    with pytest.raises(ValueError, match="other: expected a scalar or one value per edge"):
        check(
            A=A,
            program=(("mul", "0", False, None, None),),
            **{"0": torch.ones(A.nnz + 2, device=device)},
        )


def test_one_operand_on_both_axes(device):
    """A vector read per column and per row (R == C) is gathered once per axis."""
    g = torch.Generator().manual_seed(3)
    A = gs.Matrix.from_edge_index(torch.randint(0, N, (2, 200), generator=g), num_nodes=N)
    nodes = torch.randperm(N, generator=g)[:15]
    A = A.to(device)[nodes.to(device), nodes.to(device)].csc
    v = torch.rand(15, generator=g).to(device) + 0.5
    program = (
        ("div", "0", False, None, 0),
        ("mul", "0", False, None, 1),
        ("sub", "0", False, None, 0),
    )
    ref = compute.edge_broadcast(
        compute.edge_broadcast(compute.edge_broadcast(A, "div", v, 0), "mul", v, 1), "sub", v, 0
    )
    assert_identical(fused_edge_map(A, program, **{"0": v}).values, ref.values)
