"""Code generation for fused edge maps: a ``FUSED_EDGE_MAP`` program as one CUDA expression.

:func:`generate` turns a program (see :mod:`gsample.backend.torch.fused_compute`) into a
straight-line C expression ``GS_EXPR`` for the template ``kernels/edge_map.cu``; the
module cache key is ``(family="edge_map", dtypes=(value ctype,), layout="csc",
params=(("EXPR", expr),))``. Operands become pointers ``o0 .. o7`` in order of first use
(so renaming operands reuses a module), read as ``o<i>[e]`` (per edge), ``o<i>[col[e]]``
(axis 0) or ``o<i>[row[e]]`` (axis 1).

Bit-exactness with the torch backend on CUDA (PyTorch's ATen CUDA kernels) is argued per
step; every other case raises :class:`Unsupported` and the caller runs the torch code:

``add`` / ``sub``
    ATen computes ``a + alpha * b`` with ``alpha`` = 1 / -1: ``alpha * b`` is exact, so
    (fused or not) the result is the correctly rounded ``a + b`` / ``a - b``:
    ``__fadd_rn`` / ``__fsub_rn`` (``__d*_rn`` for float64).
``mul``
    ``a * b`` in the value dtype (opmath of float32 is float32): ``__fmul_rn``.
``div``
    tensor / tensor and scalar / tensor: IEEE ``a / b`` (ATen is built with the default
    ``-prec-div=true``): ``__fdiv_rn``. tensor / Python scalar: ATen's
    ``div_true_kernel_cuda`` multiplies by the reciprocal ``1 / b`` computed on the host
    in the value dtype, so we emit ``x * inv`` with ``inv`` computed here the same way
    (numpy float32 / float64 division, correctly rounded).
``pow``
    tensor ** Python scalar follows ATen's dispatch exactly: exponent ``== 0`` → 1,
    ``== 1`` → x (``pow_Tensor_Scalar_out``); ``== 0.5`` → sqrt (``__fsqrt_rn``, ATen's
    ``std::sqrt`` with ``-prec-sqrt=true``); ``== -0.5`` → rsqrt (not reproducible:
    **falls back**); ``== -1`` → ``1 / x``; then on the exponent cast to the value dtype:
    2 → ``x * x`` (``gs_sq``), 3 → ``x * x * x``, -2 → ``1.0 / (x * x)`` (for float32 a double
    division rounded to float, as ATen's lambda); otherwise ``powf`` / ``pow``, as
    ATen's ``pow_`` (``std::pow``), as for every tensor ** tensor and scalar ** tensor
    step (a scalar base of 1 gives 1: ``pow_Scalar_out``). ``powf``/``pow`` are
    libdevice functions: bit-equal as long as NVRTC's libdevice computes them as the one
    PyTorch was built with (they have been stable for many CUDA releases).
``neg``
    ``-x`` (a sign flip), as ATen's ``neg``.

Scalars are cast to the value dtype as ATen does (a Python number is a "wrapped number"
that never promotes a float tensor: ``scalar_value<opmath_t>``) and written as exact hex
float literals (bit casts for inf / NaN). Falls back (:class:`Unsupported`) when: the
program is empty; the values or an operand are not 1-D (an (E, F) value or operand); the
value dtype is not float32 / float64; an operand's dtype differs from the value dtype
(promotion, e.g. an int64 or float64 operand on float32 values); a scalar is a bool, an
int beyond 2**53, or a finite float that overflows float32 for float32 values (ATen
raises for some such exponents); more than 8 distinct operands; ``pow`` by -0.5.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from gsample.backend.cuda.module import full_source

#: the most operand pointers ``gs_edge_map`` takes
MAX_OPERANDS = 8
CTYPES = {torch.float32: "float", torch.float64: "double"}
_NP = {torch.float32: np.float32, torch.float64: np.float64}
_BINARY = ("add", "sub", "mul", "div", "pow")


class Unsupported(Exception):
    """The program cannot be generated bit-exactly; the message says why."""


@dataclass(frozen=True)
class EdgeMapKernel:
    """A generated fused edge map: the expression, its operands and what it reads."""

    dtype: torch.dtype  # the value dtype (of the input values, every step and the result)
    expr: str  # GS_EXPR
    operands: tuple  # operand names, pointer i = operands[i]
    reads_values: bool  # the leaf is v[e] (else the literal 1)
    reads_cols: bool  # some operand is indexed by col[e]
    reads_rows: bool  # ... by row[e]

    @property
    def key(self) -> dict:
        """The module cache key (keyword arguments of ``module.module`` / ``launch``)."""
        return dict(dtypes=(CTYPES[self.dtype],), layout="csc", params=(("EXPR", self.expr),))


def literal(x, dtype: torch.dtype) -> str:
    """The exact C literal of the number ``x`` (already in ``dtype``'s value set)."""
    x = _NP[dtype](x)
    if np.isfinite(x):
        text = float(x).hex()
        return f"({text}f)" if dtype is torch.float32 else f"({text})"
    if dtype is torch.float32:
        return f"__int_as_float(0x{int(x.view(np.uint32)):08x})"
    return f"__longlong_as_double((long long)0x{int(x.view(np.uint64)):016x}ULL)"


def cast_scalar(s, dtype: torch.dtype):
    """``s`` as ATen casts a wrapped Python number to the value dtype (raises Unsupported)."""
    if isinstance(s, bool) or not isinstance(s, (int, float)):
        raise Unsupported(f"scalar {s!r} is not an int or float")
    if isinstance(s, int) and abs(s) > 2**53:
        raise Unsupported(f"int scalar {s} is not exact in float64")
    with np.errstate(over="ignore"):
        x = _NP[dtype](float(s))
    if np.isinf(x) and np.isfinite(float(s)):
        raise Unsupported(f"scalar {s!r} overflows {dtype}")
    return x


def _reciprocal(x, dtype):
    """``opmath_t(1.0) / b`` in the value dtype (IEEE, as ATen's host code)."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return _NP[dtype](1) / x


def _pow_scalar(x: str, s, dtype) -> str:
    """``x ** s`` (tensor ** Python scalar) as ATen's CUDA dispatch computes it."""
    e = cast_scalar(s, dtype)
    d = float(s)  # Scalar::equal compares the Python value
    if d == 0:
        return literal(1, dtype)  # pow_Tensor_Scalar_out: fill_(1)
    if d == 1:
        return x  # ... copy_(base)
    if d == 0.5:
        return f"gs_sqrt({x})"  # sqrt_kernel_cuda
    if d == -0.5:
        raise Unsupported("pow by -0.5 is rsqrt in torch (not correctly rounded)")
    if d == -1:
        return f"gs_div({literal(1, dtype)}, {x})"  # reciprocal_kernel_cuda: 1 / a
    de = float(e)  # the exponent cast to the value dtype
    if de == 2:
        return f"gs_sq({x})"  # base * base
    if de == 3:
        return f"gs_pow3({x})"
    if de == -2:
        return f"gs_pow_m2({x})"
    return f"gs_pow({x}, {literal(e, dtype)})"


def generate(
    program: tuple, dtype: torch.dtype, has_values: bool, operand_axes: dict | None = None
) -> EdgeMapKernel:
    """The kernel of ``program`` on values of ``dtype`` (read from memory if ``has_values``).

    The caller has checked that each operand is 1-D with ``dtype`` (:func:`plan`).
    """
    if not program:
        raise Unsupported("empty program")
    if dtype not in CTYPES:
        raise Unsupported(f"value dtype {dtype} (only float32 / float64)")
    x = "v[e]" if has_values else literal(1, dtype)
    names: list = []
    cols = rows = False
    for op, name, reverse, scalar, axis in program:
        if op == "neg":
            x = f"gs_neg({x})"
            continue
        if op not in _BINARY:
            raise Unsupported(f"op {op!r}")
        if name is None:
            s = cast_scalar(scalar, dtype)
            if op == "div" and not reverse:  # div_true_kernel_cuda: a * (1 / b)
                x = f"gs_mul({x}, {literal(_reciprocal(s, dtype), dtype)})"
            elif op == "pow" and not reverse:
                x = _pow_scalar(x, scalar, dtype)
            elif op == "pow":  # scalar ** x; pow_Scalar_out: 1 ** x = 1
                x = literal(1, dtype) if float(scalar) == 1 else f"gs_pow({literal(s, dtype)}, {x})"
            else:
                y = literal(s, dtype)
                x = f"gs_{op}({y}, {x})" if reverse else f"gs_{op}({x}, {y})"
            continue
        if name not in names:
            if len(names) == MAX_OPERANDS:
                raise Unsupported(f"more than {MAX_OPERANDS} operands")
            names.append(name)
        ptr = f"o{names.index(name)}"
        if axis is None:
            y = f"{ptr}[e]"
        elif axis == 0:
            y, cols = f"{ptr}[col[e]]", True
        elif axis == 1:
            y, rows = f"{ptr}[row[e]]", True
        else:
            raise Unsupported(f"axis {axis!r}")
        x = f"gs_{op}({y}, {x})" if reverse else f"gs_{op}({x}, {y})"
    return EdgeMapKernel(dtype, x, tuple(names), has_values, cols, rows)


def value_dtype(A, program: tuple, operands: dict) -> torch.dtype:
    """The dtype of the values every step works in (``map_values``' rule for a missing value)."""
    if A.values is not None:
        return A.values.dtype
    _op, name, *_ = program[0]
    y = None if name is None else operands[name]
    if isinstance(y, torch.Tensor) and y.is_floating_point():
        return y.dtype
    return torch.float32


def plan(A, program: tuple, operands: dict) -> EdgeMapKernel:
    """The generated kernel for ``program`` on ``A``, or :class:`Unsupported` (fall back).

    Supported exactly when every step's result dtype equals the value dtype: values and
    operands 1-D and of that dtype (float32 / float64), scalars as :func:`cast_scalar`.
    """
    if not program:
        raise Unsupported("empty program")
    if A.values is not None and A.values.dim() != 1:
        raise Unsupported("(E, F) values")
    dtype = value_dtype(A, program, operands)
    if dtype not in CTYPES:
        raise Unsupported(f"value dtype {dtype} (only float32 / float64)")
    for _, name, _, _, _axis in program:
        if name is None:
            continue
        y = operands[name]
        if not isinstance(y, torch.Tensor) or y.dim() != 1:
            raise Unsupported(f"operand {name!r} is not a 1-D tensor")
        if y.dtype != dtype:
            raise Unsupported(f"operand {name!r} is {y.dtype}, values are {dtype}")
    return generate(program, dtype, A.values is not None)


def source(kernel: EdgeMapKernel) -> str:
    """The full CUDA source compiled for ``kernel`` (for nvcc in tests)."""
    return full_source("edge_map", **kernel.key)
