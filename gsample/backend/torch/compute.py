"""Compute: edge maps, broadcasts, reductions, SpMM and SDDMM on PyTorch tensors.

Reductions use ``torch.segment_reduce`` over sorted segments rather than atomics,
so sums are bit-reproducible run to run on a GPU: probabilities computed from them
feed samplers, and the determinism contract must hold through them.
"""

from __future__ import annotations

import torch

from gsample.backend.registry import torch_impl
from gsample.backend.torch import layerwise_native
from gsample.formats.csc import CSC
from gsample.formats.layouts import NAMES
from gsample.ir import Op

BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "pow": torch.pow,
}


def map_values(v, A: CSC, op: str, reverse: bool, y) -> torch.Tensor:
    """One edge-map step on a value tensor: ``op(v, y)`` (``op(y, v)`` when ``reverse``).

    ``v`` None stands for ``A``'s own values (1.0 where it has none, in ``y``'s float
    dtype or float32). ``y`` is a number or a per-edge tensor ((E,) or (E, F)); an
    integer result becomes float32. The fused evaluation applies this step by step.
    """
    if v is None:
        like = y.dtype if isinstance(y, torch.Tensor) and y.is_floating_point() else torch.float32
        v = A.value_tensor(like)
    if op == "neg":
        return -v
    if isinstance(y, torch.Tensor) and y.dim() == 2 and v.dim() == 1:
        v = v.unsqueeze(1)
    elif isinstance(y, torch.Tensor) and y.dim() == 1 and v.dim() == 2:
        y = y.unsqueeze(1)  # one value per edge, over every feature
    out = BINARY[op](y, v) if reverse else BINARY[op](v, y)
    return out if out.is_floating_point() else out.to(torch.float32)


def edge_map(A: CSC, op: str, reverse: bool = False, scalar=None, other=None) -> CSC:
    """Values ``op(values, x)`` (or ``op(x, values)`` when ``reverse``).

    ``x`` is ``other``, a tensor aligned with the edges (shape (E,) or (E, F)), or
    else the Python number ``scalar``; ``op`` is one of ``add, sub, mul, div, pow``
    or ``neg`` (unary).
    """
    return A.with_values(map_values(None, A, op, reverse, scalar if other is None else other))


@torch_impl(Op.EDGE_BROADCAST, layouts=NAMES)
def edge_broadcast(A: CSC, op: str, vector: torch.Tensor, axis: int) -> CSC:
    """Values ``op(values, vector[col])`` (``axis=0``) or ``op(values, vector[row])``
    (``axis=1``)."""
    per_edge = _rows_of(vector, A.edge_cols() if axis == 0 else A.rows)
    return edge_map(A, op, other=per_edge)


def _by_rows(csc: CSC):
    perm = torch.argsort(csc.rows, stable=True)
    lengths = torch.bincount(csc.rows, minlength=csc.num_rows)
    return perm, lengths


def _segment(data: torch.Tensor, reduce: str, lengths: torch.Tensor) -> torch.Tensor:
    if data.numel() == 0 or lengths.numel() == 0:
        return torch.zeros(
            (lengths.numel(),) + tuple(data.shape[1:]), dtype=data.dtype, device=data.device
        )
    out = torch.segment_reduce(data, reduce, lengths=lengths, axis=0)
    empty = (lengths == 0).view((-1,) + (1,) * (out.dim() - 1))
    return torch.where(empty, torch.zeros((), dtype=out.dtype, device=out.device), out)


def reduce(A: CSC, op: str, axis: int) -> torch.Tensor:
    """Per-column (``axis=0``, shape (C,)) or per-row (``axis=1``, shape (R,)) reduction.

    ``op`` is ``sum``, ``max`` or ``mean``; an empty column or row gives 0.
    """
    csc = A
    v = csc.value_tensor()
    if axis == 0:
        return _segment(v, op, csc.degrees())
    if op == "sum" and v.device.type == "cpu" and v.dim() == 1:
        out = _native_row_sums(csc, v)
        if out is not None:
            return out
    perm, lengths = _by_rows(csc)
    return _segment(v[perm], op, lengths)


def _native_row_sums(csc: CSC, v: torch.Tensor):
    """Row sums by one native pass over the edges in CSC order (``layerwise_native
    .slice_row_sum`` of the matrix as a graph of its own columns, all of them): each row's
    edges added from 0 in the order the segment sum adds them (the same bits), without a
    sort; None where the torch code must run."""
    local = CSC.of(csc.num_rows, csc.indptr, csc.rows, None, None, v.contiguous(), None)
    if local.num_rows != csc.num_rows:
        return None
    return layerwise_native.slice_row_sum(local, torch.arange(csc.num_cols))


#: a group's exponent when it has no finite nonzero term
_NO_TERM = -(1 << 20)


def _pow2(e: torch.Tensor) -> torch.Tensor:
    """``2.0 ** e`` exactly, float64, for int64 ``e`` in [-1022, 1023] (its bits built:
    no ``pow`` or ``exp2`` whose rounding a device library chooses)."""
    return ((e + 1023) << 52).view(torch.float64)


def exact_sums(x: torch.Tensor, group: torch.Tensor | None = None, G: int = 1) -> torch.Tensor:
    """Sums of floating-point terms that do not depend on the terms' order.

    Each group's terms become 62-bit fixed-point integers at the group's largest binary
    exponent ``em`` (``|x| < 2 ** em``): ``q = round(x * 2 ** (62 - em))``, half to even;
    the integers add exactly (in 16- and 32-bit pieces whose int64 sums cannot overflow,
    then carried into a 128-bit two's complement ``(lo, hi)``), and the sum is converted
    back once: ``(hi * 2 ** 64 + float(lo)) * 2 ** (em - 62)``, each step rounded to
    nearest. That is exactly what the CUDA kernels compute (``kernels/rowsum.cu``,
    ``gs_rowsum_value``: the same bits). Non-finite terms follow IEEE: NaN, or +inf and
    -inf, give NaN; else an infinity wins. A group without a nonzero term sums to 0.

    Parameters
    ----------
    x : Tensor, shape (M,)
        The terms (any floating dtype; computed in float64).
    group : LongTensor, shape (M,), optional
        Each term's group, in ``[0, G)``; None: one group.
    G : int
        The number of groups.

    Returns
    -------
    Tensor, shape (G,), float64

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([1e16, 1.0, -1e16])
    >>> exact_sums(x), exact_sums(x.flip(0))
    (tensor([1.], dtype=torch.float64), tensor([1.], dtype=torch.float64))
    """
    x = x.reshape(-1).to(torch.float64)
    dev, M = x.device, x.numel()
    if group is None and M == 0:
        return torch.zeros(G, dtype=torch.float64, device=dev)
    i64 = {"dtype": torch.int64, "device": dev}

    def per_group(v: torch.Tensor, how: str, start: int) -> torch.Tensor:
        if group is None:  # one group: a plain reduction
            return (v.amax() if how == "amax" else v.sum()).reshape(1)
        out = torch.full((G,), start, **i64)
        return out.scatter_reduce(0, group, v, how) if how == "amax" else out.index_add(0, group, v)

    term = torch.isfinite(x) & (x != 0)
    nan = per_group(torch.isnan(x).to(torch.int64), "amax", 0) > 0
    pinf = per_group((x == float("inf")).to(torch.int64), "amax", 0) > 0
    ninf = per_group((x == float("-inf")).to(torch.int64), "amax", 0) > 0
    ex = torch.where(term, torch.frexp(x).exponent.to(torch.int64), _NO_TERM)
    em = per_group(ex, "amax", _NO_TERM)  # |x| < 2 ** em: the group's largest exponent
    s = 62 - (em if group is None else em[group])  # in [-962, 1135] for a term: below 2 ** 62
    s1 = s.clamp(-962, 1000)  # two exact scalings where 2 ** s has no float64
    q = torch.round(torch.where(term, x, 0.0) * _pow2(s1) * _pow2((s - s1).clamp(0, 1000)))
    q = q.to(torch.int64)
    low = per_group(q & 0xFFFF, "sum", 0)  # each below M * 2 ** 16
    mid = per_group((q >> 16) & 0xFFFF, "sum", 0)
    high = per_group(q >> 32, "sum", 0)  # |q >> 32| < 2 ** 30
    t1 = mid + (low >> 16)
    t2 = high + (t1 >> 16)  # the sum is t2 * 2 ** 32 + w, 0 <= w < 2 ** 32
    w = ((t1 & 0xFFFF) << 16) | (low & 0xFFFF)
    lo = (t2 & 0xFFFFFFFF).to(torch.float64) * 2.0**32 + w.to(torch.float64)  # float(lo word)
    whole = (t2 >> 32).to(torch.float64) * 2.0**64 + lo
    r = em - 62
    # whole * 2 ** r, rounded once: where 2 ** r is subnormal, first an exact scaling to
    # 2 ** -960 (|whole| >= 1 stays normal), then the rounding one
    tiny = r < -1022
    r1 = torch.where(tiny, -960, r).clamp(-1022, 1023)
    r2 = torch.where(tiny, r + 960, 0).clamp(-1022, 1023)
    v = whole * _pow2(r1) * _pow2(r2)
    v = torch.where(em == _NO_TERM, 0.0, v)
    v = torch.where(ninf, float("-inf"), v)
    v = torch.where(pinf, float("inf"), v)
    return torch.where(nan | (pinf & ninf), float("nan"), v)


def exact_total(v: torch.Tensor, group: torch.Tensor | None = None, G: int = 1) -> torch.Tensor:
    """The sum of every edge value, per group of edges, in any order the same bits.

    Parameters
    ----------
    v : Tensor, shape (E,) or (E, F)
        Edge values. Floating ones sum by :func:`exact_sums` and keep their dtype;
        integer and boolean ones give their (exact) int64 sum.
    group : LongTensor, shape (E,), optional
        Each edge's group in ``[0, G)``; None: one group, and the result has no group axis.
    G : int

    Returns
    -------
    Tensor, shape ``v.shape[1:]`` (``group`` None) or ``(G,) + v.shape[1:]``
    """
    if group is None and v.device.type == "cpu" and v.dim() == 1:
        out = layerwise_native.total(v.contiguous())  # one native pass: the same bits
        if out is not None:
            return out
    rest = tuple(v.shape[1:])
    if not v.is_floating_point():
        v = v.to(torch.int64)
        if group is None:
            return v.sum(0)
        return torch.zeros((G,) + rest, dtype=torch.int64, device=v.device).index_add_(0, group, v)
    F = 1
    for d in rest:
        F *= d
    g = group
    if F != 1:  # a group per (group, feature)
        g = torch.zeros(v.shape[0], dtype=torch.int64, device=v.device) if g is None else g
        g = (g.unsqueeze(1) * F + torch.arange(F, device=v.device)).reshape(-1)
    out = exact_sums(v, g, (1 if group is None else G) * F).to(v.dtype)
    return out.reshape(rest) if group is None else out.reshape((G,) + rest)


@torch_impl(Op.TOTAL, layouts=NAMES)
def total(A, op: str, batches=None) -> torch.Tensor:
    """``A.sum()``: every edge value's sum (``op`` is ``sum``), a 0-dim tensor (shape (F,)
    for values of shape (E, F)); see :func:`exact_total`. With ``batches`` ``(N, n)``, ``A``
    is a super-batch (columns encoded ``b * n + v``) and the result holds each mini-batch's
    sum, shape (N,): the bits each mini-batch's own call gives.
    """
    v = A.value_tensor()
    if batches is None:
        return exact_total(v)
    N, n = batches
    return exact_total(v, A.global_cols()[A.edge_cols()] // n, N)


@torch_impl(Op.DEGREE)
def degree(A: CSC, axis: int) -> torch.Tensor:
    """Edges per column (``axis=0``, shape (C,)) or per row (``axis=1``, shape (R,)), int64.

    No size is read back (the result's length is the matrix's), and integer adds are exact
    in any order, so the result is the same on every device and for every layout.
    """
    if axis == 0:
        return A.degrees().to(torch.int64)
    ones = torch.ones(A.nnz, dtype=torch.int64, device=A.device)
    return torch.zeros(A.num_rows, dtype=torch.int64, device=A.device).index_add_(0, A.rows, ones)


def values(A: CSC) -> torch.Tensor:
    """``A.values``: edge values, 1.0 where the matrix has none."""
    return A.value_tensor()


def _weighted(csc: CSC, dense_rows: torch.Tensor) -> torch.Tensor:
    v = csc.value_tensor(dense_rows.dtype if dense_rows.is_floating_point() else torch.float32)
    return dense_rows * (v if dense_rows.dim() == 1 else v.unsqueeze(1))


def spmm(A: CSC, dense: torch.Tensor) -> torch.Tensor:
    """``A @ D``: ``D`` has one row per column (shape (C,) or (C, F)); out (R,) or (R, F)."""
    csc = A
    contrib = _weighted(csc, dense[csc.edge_cols()])
    perm, lengths = _by_rows(csc)
    return _segment(contrib[perm], "sum", lengths)


def spmm_t(A: CSC, dense: torch.Tensor) -> torch.Tensor:
    """``A.T @ D``: ``D`` has one row per row (shape (R,) or (R, F)); out (C,) or (C, F)."""
    csc = A
    contrib = _weighted(csc, dense[csc.rows])
    return _segment(contrib, "sum", csc.degrees())


def _rows_of(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``x[index]`` (a copy of the rows ``index``): on the CPU by ``index_select``, which
    copies each row whole where advanced indexing steps element by element (several times
    slower for rows of features); the same values."""
    if x.device.type == "cpu" and x.dim() >= 1 and index.dtype == torch.int64:
        return torch.index_select(x, 0, index)
    return x[index]


@torch_impl(Op.SDDMM, layouts=NAMES)
def sddmm(A: CSC, u: torch.Tensor, v: torch.Tensor, op: str) -> CSC:
    """Edge values ``op(U[row], V[col])``; ``dot`` sums over the feature axis.

    ``dot`` of feature rows on the CPU runs over chunks of :data:`DOT_CHUNK` gathered
    values (:func:`_dot_rows`): the same values, bit for bit."""
    csc = A
    rows, cols = csc.rows, csc.edge_cols()
    if op == "dot" and u.dim() == 2 and v.dim() == 2 and u.device.type == "cpu":
        return csc.with_values(_dot_rows(u, rows, v, cols))
    a, b = _rows_of(u, rows), _rows_of(v, cols)
    if op == "dot":
        out = a * b if a.dim() == 1 else (a * b).sum(-1)
    else:
        out = BINARY[op](a, b)
    return csc.with_values(out)


#: gathered values (edges x features) per chunk of :func:`_dot_rows`: a few hundred KiB a
#: temporary, which the allocator reuses and the caches hold
DOT_CHUNK = 1 << 16


def _dot_rows(u: torch.Tensor, rows: torch.Tensor, v: torch.Tensor, cols: torch.Tensor):
    """``(u[rows] * v[cols]).sum(-1)`` (shape (E,)) without its two (E, F) temporaries.

    Each edge's dot product is the sum over its own F products, whatever the number of
    edges, so chunks of edges give the whole tensor's values bit for bit. Whole, the
    temporaries grow with the edges: a super-batch of N mini-batches (PASS's attention)
    would allocate N times a mini-batch's, memory fresh from the system (page faults) that
    no cache holds, a cost that grows faster than the edges; chunked, the work is the
    edges' and the memory a chunk's.

    Examples
    --------
    >>> import torch
    >>> u, v = torch.randn(5, 3), torch.randn(4, 3)
    >>> rows, cols = torch.tensor([0, 4, 2]), torch.tensor([1, 1, 3])
    >>> torch.equal(_dot_rows(u, rows, v, cols), (u[rows] * v[cols]).sum(-1))
    True
    """
    step = max(1, DOT_CHUNK // max(u.shape[1], v.shape[1], 1))
    E = rows.numel()
    if step >= E:
        return (_rows_of(u, rows) * _rows_of(v, cols)).sum(-1)
    parts = [
        (_rows_of(u, rows[i : i + step]) * _rows_of(v, cols[i : i + step])).sum(-1)
        for i in range(0, E, step)
    ]
    return torch.cat(parts)  # (E,): an entry per edge (differentiable, as the whole)
