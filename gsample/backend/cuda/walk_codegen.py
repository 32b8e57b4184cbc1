"""Code generation for fused walks: a ``FUSED_WALK``'s step bodies as straight-line C per
walker, for the template ``kernels/fused_walk.cu``.

:func:`generate` types every value of the bodies (``gsample.ir.walk_body``) from the
operands' dtypes with PyTorch's promotion rules (a Python number is a wrapped number: it
never promotes a tensor of its category) and writes ``GS_STEP``: the body of step ``s``
(the first one's, or ``switch (s % period)`` over the phases'), each node one statement on a
register ``v<i>``. Bit-exactness with PyTorch's CUDA kernels (the torch backend on the GPU):

* ``random_walk`` is ``gs_walk_one`` (``kernels/walkstep.cuh``), ``gs_random_walk``'s own
  walker, with the key of its ordinal and the walker's position; its thresholds are the
  torch code's (``walk.thresholds``), written as exact literals;
* ``+ - *`` in the result dtype (int64 wrapping; float ``_rn`` intrinsics: ATen adds
  ``a + 1 * b``, exact), ``/`` as :mod:`.codegen` argues it (a tensor by a Python number:
  times the reciprocal computed on the host), comparisons and ``where`` in the promoted
  dtype, ``clamp`` as ATen's (NaN kept), casts as C casts with explicit rounding;
* a gather ``v[x]`` wraps negative ``x`` as torch does; an id out of range (a gather's or a
  walk's start) sets the kernel's failure flag (an ``IndexError``, as the torch code raises).

Anything else (an operand that is not a 1-D bool / int64 / float32 / float64 vector, a
result that is not int64, a bool in arithmetic, a float clamp bound on an int tensor, more
than 8 operands) raises :class:`~.codegen.Unsupported` and the torch code runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gsample.backend.cuda.codegen import Unsupported, cast_scalar, literal
from gsample.backend.cuda.codegen import _reciprocal as reciprocal
from gsample.backend.cuda.module import full_source
from gsample.backend.torch.walk import thresholds
from gsample.ir import Op, Ref
from gsample.ir.walk_body import dense_form

MAX_OPERANDS = 8
_C = {torch.bool: "bool", torch.int64: "gs_i64", torch.float32: "float", torch.float64: "double"}
_RANK = {torch.bool: 0, torch.int64: 1, torch.float32: 2, torch.float64: 3}
_CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


@dataclass(frozen=True)
class FusedWalkKernel:
    """A generated fused walk: its step code and the operands it reads, in pointer order."""

    step: str
    operands: tuple

    @property
    def key(self) -> dict:
        """The module cache key (keyword arguments of ``module.launch``)."""
        return dict(params=(("STEP", self.step),))


def _promote(a, b):
    """``torch.result_type`` of two values: a dtype (a tensor) or a Python number."""
    ta, tb = isinstance(a, torch.dtype), isinstance(b, torch.dtype)
    if not ta and not tb:  # two numbers: the default dtype of the higher
        cat = max(0 if isinstance(x, bool) else 1 if isinstance(x, int) else 2 for x in (a, b))
        return (torch.bool, torch.int64, torch.float32)[cat]
    if ta and tb:
        return max(a, b, key=_RANK.get)
    t, s = (a, b) if ta else (b, a)
    cat = 0 if isinstance(s, bool) else 1 if isinstance(s, int) else 2
    if cat <= min(_RANK[t], 2):
        return t
    return torch.int64 if cat == 1 else torch.float32  # the default dtypes


def _scalar(x, dtype) -> str:
    """The Python number ``x`` as a ``dtype`` literal (ATen's cast of a wrapped number)."""
    if dtype is torch.bool:
        return "true" if x else "false"
    if dtype is torch.int64:
        if isinstance(x, float) or not -(2**63) <= int(x) < 2**63:
            raise Unsupported(f"scalar {x!r} as int64")
        return (
            f"((gs_i64){int(x)}LL)"
            if int(x) != -(2**63)
            else "((gs_i64)(-9223372036854775807LL - 1))"
        )
    return literal(cast_scalar(float(x) if isinstance(x, bool) else x, dtype), dtype)


def _cast(expr: str, src, dst) -> str:
    """``expr`` (of dtype ``src``) converted to ``dst`` as ATen's ``static_cast`` does."""
    if src is dst:
        return expr
    if dst is torch.bool:
        raise Unsupported("a cast to bool")
    if src is torch.bool:
        return f"(({_C[dst]})({expr} ? 1 : 0))"
    if dst is torch.int64:
        return f"((gs_i64)({expr}))"  # truncation: cvt.rzi, as nvcc's cast
    fn = {
        (torch.int64, torch.float64): "__ll2double_rn",
        (torch.int64, torch.float32): "__ll2float_rn",
        (torch.float64, torch.float32): "__double2float_rn",
    }.get((src, dst))
    return f"{fn}({expr})" if fn else f"((double)({expr}))"


class _Body:
    """The C statements of one body, given the operands' dtypes."""

    def __init__(self, body, ptr: dict, dtypes: dict):
        self.lines, self.type, self.expr = [], {}, {}
        self.ptr, self.dtypes = ptr, dtypes
        for i, n in enumerate(body.nodes):
            self.node(i, n)
        self.count = body.num_random

    def val(self, n, a):
        """``(C expression, dtype or Python number)`` of a template argument of node ``n``."""
        if isinstance(a, Ref):
            v = n.inputs[a.name]
            return self.expr[v], self.type[v]
        return None, a

    def operand(self, v) -> tuple:
        name = v.attrs["name"]
        return self.ptr[name], self.dtypes[name]

    def node(self, i: int, n) -> None:
        r = f"v{i}"
        if n.op is Op.INPUT:
            name = n.attrs["name"]
            if name in ("cur", "prev"):
                self.expr[n], self.type[n] = name, torch.int64
            return
        if n.op is Op.OUTPUT:
            v = n.inputs["0"]
            if self.type[v] is not torch.int64:
                raise Unsupported(f"the step returns {self.type[v]} (int64 positions only)")
            self.lines.append(f"nxt = {self.expr[v]};")
            return
        if n.op is Op.RANDOM_WALK:
            L = n.attrs["length"]
            c1, c2, c3 = (
                literal(c, torch.float64)
                for c in thresholds(
                    n.attrs.get("stop_prob", 0.0),
                    n.attrs.get("restart_prob", 0.0),
                    n.attrs.get("jump_prob", 0.0),
                )
            )
            x = self.expr[n.inputs["seeds"]]
            # first order (node2vec 0): no sorted rows read, none passed (the rows may be a
            # UVA graph's int32 ones, GS_ROW)
            self.lines.append(
                f"gs_i64 {r}[{L + 1}]; {{ gs_i64 x = gs_fw_id({x}, N, failed); "
                f"gs_walk_one(indptr, rows, nullptr, nullptr, cache, {L}, N, "
                f"gs_fw_key(keys, direct, "
                f"at + {n.attrs['ordinal']}, b), pos, x, 0, 0, 1.0, 1.0, 1.0, {c1}, {c2}, {c3}, "
                f"{r}, failed); }}"
            )
            self.expr[n], self.type[n] = r, ("walks", L)
            return
        if n.op is not Op.DENSE:
            raise Unsupported(f"{n.op.value} in a step body")
        name, args, param = dense_form(n)
        dtype, expr = self.dense(n, name, args, param)
        self.lines.append(f"const {_C[dtype]} {r} = {expr};")
        self.expr[n], self.type[n] = r, dtype

    def dense(self, n, name, args, param) -> tuple:
        if name == "column":
            w, (_, L) = self.val(n, args[0])
            i = param + L + 1 if param < 0 else param
            if not 0 <= i <= L:
                raise Unsupported(f"column {param} of a walk of {L} steps")
            return torch.int64, f"{w}[{i}]"
        if name == "gather":
            ptr, dtype = self.operand(n.inputs[args[0].name])
            x, t = self.val(n, args[1])
            if t is not torch.int64:
                raise Unsupported(f"an index of {t}")
            return dtype, f"((const {_C[dtype]}*){ptr})[gs_fw_index({x}, m{ptr[1:]}, failed)]"
        vals = [self.val(n, a) for a in args]
        if name == "cast":
            ((x, t),) = vals
            return param, _cast(x, t, param)
        if name == "neg":
            ((x, t),) = vals
            if t is torch.bool:
                raise Unsupported("-bool")
            return t, f"((gs_i64)(0ULL - (gs_u64){x}))" if t is torch.int64 else f"(-{x})"
        if name == "clamp":
            ((x, t),) = vals
            lo, hi = param
            if t is torch.bool or (t is torch.int64 and any(isinstance(b, float) for b in param)):
                raise Unsupported(f"clamp of {t} by {param}")
            if t is torch.int64:
                if lo is not None:
                    x = f"gs_fw_max({x}, {_scalar(lo, t)})"
                if hi is not None:
                    x = f"gs_fw_min({x}, {_scalar(hi, t)})"
                return t, x
            f = "f" if t is torch.float32 else ""  # ATen: NaN stays NaN
            y = x if lo is None else f"fmax{f}({x}, {_scalar(lo, t)})"
            y = y if hi is None else f"fmin{f}({y}, {_scalar(hi, t)})"
            return t, f"(isnan({x}) ? {x} : {y})"
        if name == "where":
            (c, tc), a, b = vals
            if tc is not torch.bool:
                raise Unsupported("where on a non-bool condition")
            t = _promote(a[1], b[1])
            return t, f"({c} ? {self.as_(a, t)} : {self.as_(b, t)})"
        (x, tx), (y, ty) = vals
        t = _promote(tx, ty)
        if name in _CMP:
            return torch.bool, f"({self.as_(vals[0], t)} {_CMP[name]} {self.as_(vals[1], t)})"
        if name in ("and", "or"):
            if tx is not ty or t not in (torch.bool, torch.int64):
                raise Unsupported(f"{name} of {tx} and {ty}")
            return t, f"({x} {'&' if name == 'and' else '|'} {y})"
        if t is torch.bool:
            raise Unsupported(f"{name} of bools")
        if name == "div":
            t = torch.float32 if t is torch.int64 else t
            if x is not None and y is None:  # ATen: a * (1 / b), b on the host
                inv = reciprocal(cast_scalar(ty, t), t)
                return t, f"gs_mul({self.as_(vals[0], t)}, {literal(inv, t)})"
            return t, f"gs_div({self.as_(vals[0], t)}, {self.as_(vals[1], t)})"
        a, b = self.as_(vals[0], t), self.as_(vals[1], t)
        if t is torch.int64:  # wrapping, as ATen's int64
            op = {"add": "+", "sub": "-", "mul": "*"}[name]
            return t, f"((gs_i64)((gs_u64)({a}) {op} (gs_u64)({b})))"
        return t, f"gs_{name}({a}, {b})"

    def as_(self, v, t) -> str:
        expr, typ = v
        return _scalar(typ, t) if expr is None else _cast(expr, typ, t)


def generate(first, phases: tuple, operands: dict) -> FusedWalkKernel:
    """The kernel of a fused walk's bodies on ``operands`` (name -> tensor)."""
    names = sorted(operands, key=int)
    if len(names) > MAX_OPERANDS:
        raise Unsupported(f"more than {MAX_OPERANDS} operands")
    dtypes = {}
    for k in names:
        o = operands[k]
        if not isinstance(o, torch.Tensor) or o.dim() != 1 or o.dtype not in _C:
            raise Unsupported(f"operand {k} is not a 1-D bool / int64 / float tensor")
        dtypes[k] = o.dtype
    ptr = {k: f"o{i}" for i, k in enumerate(names)}
    code = [_block(first, ptr, dtypes)]
    if any(p is not None for p in phases):
        cases = " ".join(
            f"case {t}: {_block(p, ptr, dtypes)} break;"
            for t, p in enumerate(phases)
            if p is not None
        )
        code = [f"if (s == 0) {code[0]} else switch (s % {len(phases)}) {{ {cases} }}"]
    return FusedWalkKernel(" ".join(code), tuple(names))


def _block(body, ptr, dtypes) -> str:
    b = _Body(body, ptr, dtypes)
    return "{ " + " ".join(b.lines) + f" at += {b.count}; }}"


def source(kernel: FusedWalkKernel) -> str:
    """The full CUDA source compiled for ``kernel`` (for nvcc in tests)."""
    return full_source("fused_walk", **kernel.key)


__all__ = ["FusedWalkKernel", "Unsupported", "generate", "source"]
