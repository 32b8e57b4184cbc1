"""Generated fused edge-map kernels against the torch backend, bit for bit (skipped without a GPU).

Random programs (the strategy of test_fused_compute.py, plus extra scalars that exercise
every pow special case and exact literals) run through the CUDA backend's
``fused_edge_map`` / ``fused_edge_map_reduce`` and the torch backend's on the same CUDA
tensors; dtype, shape and bits must agree. Programs the generator supports must also
really run as a kernel (checked with ``edge_map.kernel_for``).
"""

import pytest
import torch
from helpers import weighted_sampler
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fused_compute import assert_identical, build, matrix

import gsample as gs
from gsample.backend import get_backend
from gsample.backend.cuda import codegen
from gsample.backend.torch import fused_compute
from gsample.ir import Op

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
]

SCALARS = (-2, -1, 0, 1, 2, 3, 0.5, -0.5, -1.5, 2.0, 0.1, 1e-300, 2.00000001, -0.0)
OPS = ["add", "sub", "mul", "div", "pow"]

step = st.one_of(
    st.tuples(st.just("scalar"), st.sampled_from(OPS), st.booleans(), st.sampled_from(SCALARS)),
    st.tuples(st.just("neg")),
    st.tuples(
        st.just("edge"),
        st.sampled_from(OPS),
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
# same-dtype 1-D programs (the ones that run as kernels), float32 or float64 throughout
narrow = st.one_of(
    st.tuples(st.just("scalar"), st.sampled_from(OPS), st.booleans(), st.sampled_from(SCALARS)),
    st.tuples(st.just("neg")),
    st.tuples(
        st.just("edge"),
        st.sampled_from(OPS),
        st.booleans(),
        st.just(-1),
        st.just(False),
        st.integers(0, 1),
    ),
    st.tuples(
        st.just("bcast"),
        st.sampled_from(["add", "sub", "mul", "div"]),
        st.integers(0, 1),
        st.just(-1),
        st.integers(0, 1),
    ),
)

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def cuda_edge_map():
    from gsample.backend.cuda import edge_map

    return edge_map


def _same_dtype(specs, dtype):
    """``specs`` with every operand dtype index -1 replaced by ``dtype``'s index."""
    d = {torch.float32: 0, torch.float64: 1}[dtype]
    out = []
    for s in specs:
        if (s[0] == "edge" and s[3] == -1) or (s[0] == "bcast" and s[3] == -1):
            s = s[:3] + (d,) + s[4:]
        out.append(s)
    return out


def _check(cuda_edge_map, A, program, operands):
    ref = fused_compute.fused_edge_map(A, program, **operands)
    got = cuda_edge_map.fused_edge_map(A, program, **operands)
    assert got.same_structure(ref)
    if ref.values is None:
        assert got.values is None
    else:
        # bit for bit, except that a NaN's payload and sign are not compared: IEEE 754
        # leaves them unspecified, and no sample can depend on them (NaN probabilities
        # are rejected before sampling)
        nan = torch.isnan(ref.values)
        assert torch.equal(nan, torch.isnan(got.values))

        def canon(v):
            return torch.where(nan, torch.zeros((), dtype=v.dtype, device=v.device), v)

        assert_identical(canon(got.values), canon(ref.values))


@SETTINGS
@given(
    seed=st.integers(0, 2**16),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    weighted=st.booleans(),
    slice_rows=st.booleans(),
    specs=st.lists(narrow, min_size=1, max_size=7),
)
def test_generated_kernel_equals_torch_backend(
    cuda_edge_map, seed, dtype, weighted, slice_rows, specs
):
    A = matrix(seed, dtype if weighted else None, "cuda", slice_rows)
    _, program, operands = build(A, _same_dtype(specs, dtype), seed, "cuda")
    try:
        codegen.plan(A, program, operands)
        supported = True
    except codegen.Unsupported:
        supported = False
    assert (cuda_edge_map.kernel_for(A, program, operands) is not None) == supported
    _check(cuda_edge_map, A, program, operands)


@SETTINGS
@given(
    seed=st.integers(0, 2**16),
    weights=st.sampled_from([None, torch.float32, torch.float64]),
    slice_rows=st.booleans(),
    specs=st.lists(step, min_size=0, max_size=6),
)
def test_any_program_equals_torch_backend(cuda_edge_map, seed, weights, slice_rows, specs):
    """Mixed dtypes and (E, F) operands: the fallbacks, and kernels where supported."""
    A = matrix(seed, weights, "cuda", slice_rows)
    _, program, operands = build(A, specs, seed, "cuda")
    _check(cuda_edge_map, A, program, operands)


@SETTINGS
@given(
    seed=st.integers(0, 2**16),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    weighted=st.booleans(),
    slice_rows=st.booleans(),
    specs=st.lists(narrow, min_size=0, max_size=5),
    op=st.sampled_from(["sum", "max", "mean"]),
    axis=st.integers(0, 1),
)
def test_map_reduce_equals_torch_backend(
    cuda_edge_map, seed, dtype, weighted, slice_rows, specs, op, axis
):
    A = matrix(seed, dtype if weighted else None, "cuda", slice_rows)
    _, program, operands = build(A, _same_dtype(specs, dtype), seed, "cuda")
    from gsample.backend.cuda import compute

    got = cuda_edge_map.fused_edge_map_reduce(A, program, op, axis, **operands)
    # the map is bit-equal to the torch backend's, the reduction is the segment-reduce
    # kernels' (their own fixed order: equal to the torch backend's up to rounding)
    mapped = fused_compute._evaluate(A, program, operands)
    assert_identical(got, compute.reduce_values(A, mapped, op, axis))
    ref = fused_compute.fused_edge_map_reduce(A, program, op, axis, **operands)
    assert got.dtype == ref.dtype and got.shape == ref.shape
    torch.testing.assert_close(got, ref, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_special_values(cuda_edge_map, dtype):
    """Zeros of both signs, subnormals, huge values, inf and NaN through every scalar op."""
    n = 64
    base = torch.tensor(
        [
            0.0,
            -0.0,
            1.0,
            -1.0,
            2.0,
            0.5,
            3.0,
            1e-40,
            -1e-40,
            1e-310,
            1e30,
            -1e30,
            1e300,
            float("inf"),
            float("-inf"),
            float("nan"),
        ],
        dtype=torch.float64,
    )
    vals = base.repeat(n // base.numel()).to(dtype)
    ei = torch.stack([torch.arange(n) % 8, torch.arange(n) // 8])
    A = gs.Matrix.from_edge_index(ei, num_nodes=8).csc.with_values(vals).to("cuda")
    A = A.with_values(vals.cuda())
    for op in OPS:
        for rev in (False, True):
            for s in SCALARS + (float("inf"), float("nan")):
                program = ((op, None, rev, s, None),)
                if s == -0.5 and op == "pow" and not rev:
                    continue
                assert cuda_edge_map.kernel_for(A, program, {}) is not None, program
                _check(cuda_edge_map, A, program, {})
    y = vals.flip(0).cuda()
    for op in OPS:
        for rev in (False, True):
            _check(cuda_edge_map, A, ((op, "0", rev, None, None),), {"0": y})


def test_empty_matrix(cuda_edge_map):
    A = matrix(0, torch.float32, "cuda", False)
    A = A.take_edges(
        torch.zeros(0, dtype=torch.long, device="cuda"),
        torch.zeros(A.num_cols + 1, dtype=torch.long, device="cuda"),
    )
    program = (("mul", None, False, 3, None), ("add", None, False, 1, None))
    _check(cuda_edge_map, A, program, {})


def test_compiled_sampler_with_generated_kernels_equals_eager(cuda_edge_map, small_graph):
    A = small_graph.to("cuda")
    v = (torch.rand(A.num_nodes, generator=torch.Generator().manual_seed(2)) + 0.5).cuda()
    seeds = torch.randperm(A.num_nodes, generator=torch.Generator().manual_seed(1))[:64].cuda()
    compiled = gs.compile(weighted_sampler, backend="cuda")
    program = compiled.program(A, seeds, v)
    fused = [n for n in program.nodes if n.op in (Op.FUSED_EDGE_MAP, Op.FUSED_EDGE_MAP_REDUCE)]
    assert fused and all(get_backend("cuda").supports(n.op) for n in fused)
    for n in fused:  # each runs as a generated kernel, not the fallback
        codegen.generate(n.attrs["program"], torch.float32, True)
    for s in (0, 1):
        with gs.use_backend("torch"):  # the reference (by default: the kernels)
            gs.manual_seed(s)
            eager = weighted_sampler(A, seeds, v)
        gs.manual_seed(s)
        got = compiled(A, seeds, v)
        for x, y in zip(eager, got):
            for p, q in zip(x.edges(), y.edges()):
                assert torch.equal(p, q)
