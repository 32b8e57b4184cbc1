"""Code generation for fused edge maps (CPU only: expression text, literals, fallbacks)."""

import math

import pytest
import torch

import gsample as gs
from gsample.backend.cuda import codegen
from gsample.backend.cuda.module import full_source


def csc(values=None, nnz=6):
    ei = torch.tensor([[0, 1, 2, 0, 1, 2][:nnz], [0, 0, 1, 1, 2, 2][:nnz]])
    return gs.Matrix.from_edge_index(ei, num_nodes=3, weight=values).csc


def test_expression_text_for_a_program():
    program = (
        ("pow", None, False, 2, None),
        ("mul", None, False, 3, None),
        ("div", "v", False, None, 0),
        ("sub", "w", True, None, 1),
        ("add", "e", False, None, None),
        ("neg", None, False, None, None),
        ("mul", "v", True, None, 0),
    )
    k = codegen.generate(program, torch.float32, True)
    assert k.expr == (
        "gs_mul(o0[col[e]], gs_neg(gs_add(gs_sub(o1[row[e]], gs_div(gs_mul("
        "gs_sq(v[e]), (0x1.8000000000000p+1f)), o0[col[e]])), o2[e])))"
    )
    assert k.operands == ("v", "w", "e") and k.reads_cols and k.reads_rows and k.reads_values
    assert k.key == dict(dtypes=("float",), layout="csc", params=(("EXPR", k.expr),))
    src = full_source("edge_map", **k.key)
    assert src.startswith(
        "#define GS_DTYPE0 float\n#define GS_LAYOUT_CSC 1\n#define GS_EXPR gs_mul("
    )


def test_operand_names_do_not_change_the_key():
    a = codegen.generate(
        (("add", "3", False, None, 0), ("mul", "7", False, None, None)), torch.float64, False
    )
    b = codegen.generate(
        (("add", "x", False, None, 0), ("mul", "y", False, None, None)), torch.float64, False
    )
    assert a.key == b.key and a.expr == "gs_mul(gs_add((0x1.0000000000000p+0), o0[col[e]]), o1[e])"


@pytest.mark.parametrize(
    "dtype,s,text",
    [
        (torch.float64, 0.1, "(0x1.999999999999ap-4)"),
        (torch.float32, 0.1, "(0x1.99999a0000000p-4f)"),  # rounded to float32 first
        (torch.float64, 1e-300, f"({(1e-300).hex()})"),
        (torch.float32, 1e-300, "(0x0.0p+0f)"),  # underflows, as ATen's cast
        (torch.float64, -0.0, "(-0x0.0p+0)"),
        (torch.float32, float("inf"), "__int_as_float(0x7f800000)"),
        (torch.float64, float("-inf"), "__longlong_as_double((long long)0xfff0000000000000ULL)"),
        (torch.float64, 3, "(0x1.8000000000000p+1)"),
    ],
)
def test_exact_literals(dtype, s, text):
    assert codegen.literal(codegen.cast_scalar(s, dtype), dtype) == text
    if math.isfinite(s):  # the hex literal is the exact value
        assert float.fromhex(text.strip("()f")) == float(codegen.cast_scalar(s, dtype))


def test_division_by_a_scalar_is_a_reciprocal_multiply():
    # ATen's div_true_kernel_cuda: a * (1 / b), the reciprocal rounded in the value dtype
    k = codegen.generate((("div", None, False, 3, None),), torch.float32, True)
    inv = float(torch.tensor(1.0, dtype=torch.float32) / 3)
    assert k.expr == f"gs_mul(v[e], ({inv.hex()}f))"
    k = codegen.generate((("div", None, True, 3, None),), torch.float64, True)
    assert k.expr == "gs_div((0x1.8000000000000p+1), v[e])"
    k = codegen.generate((("div", None, False, 0, None),), torch.float64, True)
    assert k.expr == "gs_mul(v[e], __longlong_as_double((long long)0x7ff0000000000000ULL))"


@pytest.mark.parametrize(
    "s,expr",
    [
        (0, "(0x1.0000000000000p+0f)"),
        (0.0, "(0x1.0000000000000p+0f)"),
        (1, "v[e]"),
        (0.5, "gs_sqrt(v[e])"),
        (-1, "gs_div((0x1.0000000000000p+0f), v[e])"),
        (2, "gs_sq(v[e])"),
        (2.0, "gs_sq(v[e])"),
        (3, "gs_pow3(v[e])"),
        (-2, "gs_pow_m2(v[e])"),
        (2.00000001, "gs_sq(v[e])"),  # the exponent as float32 is 2
        (1.5, "gs_pow(v[e], (0x1.8000000000000p+0f))"),
        (1e-300, "gs_pow(v[e], (0x0.0p+0f))"),  # 0 as float32, but not the 0 special case
    ],
)
def test_pow_follows_aten_dispatch(s, expr):
    assert codegen.generate((("pow", None, False, s, None),), torch.float32, True).expr == expr


def test_reverse_pow():
    k = codegen.generate((("pow", None, True, 2, None),), torch.float64, True)
    assert k.expr == "gs_pow((0x1.0000000000000p+1), v[e])"
    k = codegen.generate((("pow", None, True, 1, None),), torch.float64, True)
    assert k.expr == "(0x1.0000000000000p+0)"  # pow_Scalar_out: 1 ** x = 1
    k = codegen.generate((("pow", "0", True, None, 1),), torch.float64, True)
    assert k.expr == "gs_pow(o0[row[e]], v[e])"


def test_value_dtype_rule():
    A = csc()
    f64 = torch.ones(6, dtype=torch.float64)
    k = codegen.plan(A, (("neg", None, False, None, None),), {})  # no values: float32 ones
    assert k.dtype == torch.float32 and not k.reads_values
    k = codegen.plan(A, (("mul", "0", False, None, None),), {"0": f64})
    assert (
        k.dtype == torch.float64
        and not k.reads_values
        and k.expr == "gs_mul((0x1.0000000000000p+0), o0[e])"
    )
    B = csc(torch.ones(6, dtype=torch.float64))
    assert codegen.plan(B, (("add", None, False, 1, None),), {}).dtype == torch.float64


@pytest.mark.parametrize(
    "case",
    [
        "empty",
        "wide_values",
        "wide_operand",
        "int_values",
        "promoting_operand",
        "int_operand",
        "rsqrt",
        "bool_scalar",
        "huge_int",
        "float32_overflow",
        "nine_operands",
    ],
)
def test_fallback_decisions(case):
    A, ops = csc(torch.rand(6)), {}
    program = (("add", None, False, 1, None),)
    if case == "empty":
        program = ()
    elif case == "wide_values":
        A = csc().with_values(torch.rand(6, 2))
    elif case == "wide_operand":
        program, ops = (("mul", "0", False, None, None),), {"0": torch.rand(6, 2)}
    elif case == "int_values":
        A = csc().with_values(torch.arange(6))
    elif case == "promoting_operand":
        program, ops = (("mul", "0", False, None, 0),), {"0": torch.rand(3, dtype=torch.float64)}
    elif case == "int_operand":
        program, ops = (("mul", "0", False, None, None),), {"0": torch.arange(6)}
    elif case == "rsqrt":
        program = (("pow", None, False, -0.5, None),)
    elif case == "bool_scalar":
        program = (("add", None, False, True, None),)
    elif case == "huge_int":
        program = (("mul", None, False, 2**60 + 1, None),)
    elif case == "float32_overflow":
        program = (("pow", None, False, 1e300, None),)
    elif case == "nine_operands":
        program = tuple(("add", str(i), False, None, None) for i in range(9))
        ops = {str(i): torch.rand(6) for i in range(9)}
    with pytest.raises(codegen.Unsupported):
        codegen.plan(A, program, ops)


def test_float64_keeps_large_scalars():
    k = codegen.plan(
        csc(torch.rand(6, dtype=torch.float64)), (("mul", None, False, 1e300, None),), {}
    )
    assert k.expr == f"gs_mul(v[e], ({(1e300).hex()}))"


def test_cpu_tensors_run_the_torch_code():
    """Off the GPU the CUDA backend's entry points are the torch backend's (no kernel)."""
    from gsample.backend.cuda import edge_map
    from gsample.backend.torch import fused_compute

    A = csc(torch.rand(6))
    program = (("mul", None, False, 3, None), ("div", "0", False, None, 0))
    ops = {"0": torch.rand(3) + 1}
    assert edge_map.kernel_for(A, program, ops) is None
    assert torch.equal(
        edge_map.fused_edge_map(A, program, **ops).values,
        fused_compute.fused_edge_map(A, program, **ops).values,
    )
    for axis in (0, 1):
        assert torch.equal(
            edge_map.fused_edge_map_reduce(A, program, "sum", axis, **ops),
            fused_compute.fused_edge_map_reduce(A, program, "sum", axis, **ops),
        )


def test_backend_registers_fused_ops():
    from gsample.backend import get_backend
    from gsample.ir import Op

    be = get_backend("cuda")
    assert be.supports(Op.FUSED_EDGE_MAP) and be.supports(Op.FUSED_EDGE_MAP_REDUCE)
