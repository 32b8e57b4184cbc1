"""Compute ops as CUDA kernels (``kernels/segment_reduce.cu``): segment reductions, SpMM,
SDDMM and edge broadcasts, with the torch backend's signatures and dtype rules.

Reductions (``reduce``, ``spmm``, ``spmm_t``) add in a fixed order, never with float
atomics (docs/architecture.md §3), so two runs are bit-identical. Row sums of one feature are exact
instead (:mod:`.rowsum`: 128-bit integer sums, order-free), so a column slice's row sums
are the same bits built or fused (``SLICE_REDUCE``). With one feature the tree runs without
a read-back, load-balanced (:func:`segment_reduce`: a warp per group of ``GROUP`` terms of
any segment, then a warp per segment over its group values); with several, level by
level. The order is a ``CHUNK``-ary tree per
segment (a column in CSC order, or a row in CSR order through :func:`convert.to_csr`'s
stable permutation, without materialising permuted values): the segment's terms are cut
into chunks of ``CHUNK`` consecutive ones, each chunk is reduced left to right, and the
chunk results, in order, are cut and reduced again until one value is left; a mean is that
sum divided by the length; an empty segment gives 0. :func:`reference_segment_reduce`
replays the order in torch, bit for bit. Results equal the torch backend's up to float
rounding (its order differs: ``torch.segment_reduce``); per-edge ops (``sddmm`` except
``dot`` over features, ``edge_broadcast``) are single IEEE operations, bit-equal to it.

Dtype rules (as :mod:`gsample.backend.torch.compute`): ``values`` None means 1.0; a product
of values and a dense operand, or an edge op, computes in their promoted dtype (ones take
the dense operand's float dtype, else float32). The kernels handle float32 and float64
results with values and dense operands of shape (E,) / (C,) / (C, F) as below; any other
case (float16 / bfloat16 or integer results, (E, F) values in SpMM, ``pow``, tensors on
another device, unexpected shapes) runs the torch backend's code, which also raises its
errors.
"""

from __future__ import annotations

import numpy as np
import torch

from gsample.backend.cuda import convert, rowsum
from gsample.backend.cuda.module import BLOCK, launch, memset
from gsample.backend.registry import cuda_impl
from gsample.backend.torch import compute as ref
from gsample.backend.torch import fused_compute
from gsample.formats.csc import CSC, segment_ptr
from gsample.ir import Op

#: terms per chunk (a thread's serial work per tree level)
CHUNK = 32
#: terms per group (``GS_GROUP``): the one-feature kernels' unit of work, a warp's
GROUP = CHUNK * CHUNK
#: threads per block of ``gs_seg_groups`` / ``gs_seg_groups_finish`` (``GS_SEG_BLOCK``)
GROUP_BLOCK = 128
#: one-feature reductions of at most this many terms run ``gs_seg_warp`` (one launch; its
#: longest segment, at most this long, is one warp's serial work: the bound keeps that
#: serial work below the host time the grouped path's extra launches cost)
ONE_LAUNCH = 1 << 14
_FLOATS = {torch.float32: "float", torch.float64: "double"}
_NULL = np.uint64(0)
SUM, MAX = 0, 1  # GS_SUM, GS_MAX
BINARY_OPS = {"add": 0, "sub": 1, "mul": 2, "div": 3}
AT_EDGE, AT_COL, AT_ROW = 0, 1, 2  # GS_AT_EDGE, GS_AT_COL, GS_AT_ROW
REDUCE_OPS = ("sum", "max", "mean")


def _ptr(t: torch.Tensor | None):
    return _NULL if t is None else t.contiguous()


def _i64(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.int64).contiguous()


# ----------------------------------------------------------------------------- the tree
def levels(n: int, chunk: int = CHUNK) -> int:
    """Tree levels that reduce ``n`` terms to one: the least ``L >= 1`` with
    ``chunk ** L >= n`` (0 when ``n == 0``)."""
    if n <= 0:
        return 0
    L, span = 1, chunk
    while span < n:
        L, span = L + 1, span * chunk
    return L


def plan(ptr: torch.Tensor, num_positions: int, chunk: int = CHUNK):
    """The chunk layout of every tree level, with one host synchronisation.

    Parameters
    ----------
    ptr : LongTensor, shape (S + 1,)
        Segment ``s`` holds positions ``ptr[s]:ptr[s + 1]``.
    num_positions : int
        ``ptr[S]`` (known on the host: no sync).

    Returns
    -------
    list of (LongTensor of shape (S + 1,), int)
        Per level ``l = 1 .. L``: the chunk pointer (segment ``s`` has
        ``ceil(length_s / chunk ** l)`` chunks) and the number of chunks.
    """
    lens = ptr[1:] - ptr[:-1]
    top = levels(num_positions, chunk)
    stats = [lens.max()] + [((lens + (chunk**l - 1)) // chunk**l).sum() for l in range(1, top + 1)]
    host = torch.stack(stats).tolist()
    return [
        (segment_ptr((lens + (chunk**l - 1)) // chunk**l), host[l])
        for l in range(1, levels(host[0], chunk) + 1)
    ]


def group_ptr(ptr: torch.Tensor, group: int = GROUP) -> torch.Tensor:
    """Where each segment's groups start: the exclusive running sum of
    ``ceil(length_s / group)``, shape (S + 1,), on ``ptr``'s device (no host sync).

    Group ``g`` of segment ``s`` holds positions ``ptr[s] + group * g`` .. (at most
    ``group`` of them) and is number ``gptr[s] + g`` of all; the tree of :func:`plan` reduces
    it to one value alone (it is aligned on the segment's start). The CUDA path computes
    the same pointer in one launch (:func:`group_pointer`).
    """
    lens = ptr[1:] - ptr[:-1]
    return segment_ptr(torch.div(lens + (group - 1), group, rounding_mode="floor"))


def group_pointer(ptr: torch.Tensor, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """:func:`group_ptr` of ``GROUP``-term groups on the GPU: one memset and one launch
    (``gs_seg_group_ptr``, a single-pass scan), no host sync.

    ``ptr`` (LongTensor, shape (S + 1,), ``S >= 1``) on a CUDA device; ``dtype`` (float32 or
    float64) picks the module that holds the kernel, so callers that also reduce values of
    that dtype load one module. Returns the group pointer, shape (S + 1,).
    """
    ptr, S = _i64(ptr), ptr.numel() - 1
    blocks = -(-S // BLOCK)
    scratch = torch.empty(1 + blocks + S + 1, dtype=torch.int64, device=ptr.device)
    state, gptr = scratch[: 1 + blocks], scratch[1 + blocks :]
    memset(state, 0)
    launch(
        "segment_reduce",
        "gs_seg_group_ptr",
        blocks * BLOCK,
        ptr,
        S,
        state,
        gptr,
        grid=blocks,
        dtypes=(_FLOATS[dtype],),
    )
    return gptr


def group_bound(num_positions: int, num_segments: int, group: int = GROUP) -> int:
    """An upper bound of ``group_ptr(ptr)[-1]`` known on the host:
    ``sum ceil(len_s / group) <= (P + (group - 1) * S) // group``."""
    return (num_positions + (group - 1) * num_segments) // group


def _features(x, d) -> int:
    for t in (x, d):
        if t is not None and t.dim() == 2:
            return int(t.shape[1])
    return 1


def _tree(ptr, op, num_positions, dtype, x, perm, gidx, d, step, finish):
    S, F = ptr.numel() - 1, _features(x, d)
    if S <= 0 or num_positions == 0 or F == 0:
        return torch.zeros((max(S, 0), F), dtype=dtype, device=ptr.device)
    ptr = _i64(ptr)
    xf = 1 if x is None or x.dim() == 1 else F
    df = 1 if d is None or d.dim() == 1 else F
    code, src = (MAX if op == "max" else SUM), ptr
    for cptr, total in plan(ptr, num_positions):
        x = step(src, cptr, total, F, perm, x, xf, gidx, d, df, code, dtype)
        src, perm, gidx, d, xf = cptr, None, None, None, F  # next level: the partials
    return finish(ptr, src, F, op == "mean", x, dtype)


def _step_cuda(ptr, cptr, total, F, perm, x, xf, gidx, d, df, code, dtype):
    out = torch.empty((total, F), dtype=dtype, device=ptr.device)
    launch(
        "segment_reduce",
        "gs_seg_chunks",
        total * F,
        ptr,
        cptr,
        ptr.numel() - 1,
        CHUNK,
        F,
        total * F,
        _ptr(perm),
        _ptr(x),
        xf,
        _ptr(gidx),
        _ptr(d),
        df,
        code,
        out,
        dtypes=(_FLOATS[dtype],),
    )
    return out


def _finish_cuda(ptr, cptr, F, mean, x, dtype):
    S = ptr.numel() - 1
    out = torch.empty((S, F), dtype=dtype, device=ptr.device)
    launch(
        "segment_reduce",
        "gs_seg_finish",
        S * F,
        ptr,
        cptr,
        S,
        F,
        int(mean),
        x,
        out,
        dtypes=(_FLOATS[dtype],),
    )
    return out


def _step_torch(ptr, cptr, total, F, perm, x, xf, gidx, d, df, code, dtype):
    c = torch.arange(total, device=ptr.device)
    s = torch.searchsorted(cptr, c, right=True) - 1  # the last s with cptr[s] <= c
    start = ptr[s] + (c - cptr[s]) * CHUNK
    end = torch.minimum(start + CHUNK, ptr[s + 1])

    def term(p):
        item = p if perm is None else perm[p]
        v = None if x is None else x.reshape(-1, xf)[item].expand(total, F)
        if d is not None:
            w = d.reshape(-1, df)[gidx[item]].expand(total, F)
            v = w if v is None else v * w
        return torch.ones((total, F), dtype=dtype, device=ptr.device) if v is None else v

    acc = term(start)
    for t in range(1, CHUNK):
        valid = (start + t < end).unsqueeze(1)
        val = term(torch.minimum(start + t, end - 1))
        new = torch.where(val.isnan() | (val > acc), val, acc) if code == MAX else acc + val
        acc = torch.where(valid, new, acc)
    return acc


def _finish_torch(ptr, cptr, F, mean, x, dtype):
    lens = (ptr[1:] - ptr[:-1]).unsqueeze(1)
    v = x[cptr[:-1].clamp(max=x.shape[0] - 1)]
    if mean:
        v = v / lens.to(dtype)
    return torch.where(lens > 0, v, torch.zeros((), dtype=dtype, device=v.device))


def segment_reduce(
    ptr: torch.Tensor,
    op: str,
    num_positions: int,
    dtype: torch.dtype,
    x: torch.Tensor | None = None,
    perm: torch.Tensor | None = None,
    gidx: torch.Tensor | None = None,
    d: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-segment ``sum`` / ``max`` / ``mean`` of terms, as the kernels' fixed tree.

    Parameters
    ----------
    ptr : LongTensor, shape (S + 1,)
        Segment ``s`` holds positions ``ptr[s]:ptr[s + 1]`` (``ptr[S] == num_positions``).
    op : str
        ``"sum"``, ``"max"`` or ``"mean"``.
    num_positions : int
        ``P = ptr[S]``.
    dtype : torch.dtype
        float32 or float64: of ``x``, ``d`` and the result.
    x : Tensor, shape (E,) or (E, F), optional
        Per item; None means 1.0.
    perm : LongTensor, shape (P,), optional
        The item at each position (None: position ``p`` is item ``p``).
    gidx, d : LongTensor of shape (E,) and Tensor of shape (N,) or (N, F), optional
        When given, each term is multiplied by ``d[gidx[item]]`` (SpMM).

    Returns
    -------
    Tensor, shape (S, F)
        ``term(p, f) = x[item, f] * d[gidx[item], f]`` reduced per segment; 0 where empty.
    """
    S = ptr.numel() - 1
    if S > 0 and num_positions > 0 and _features(x, d) == 1:
        return _one_feature(ptr, op, num_positions, dtype, x, perm, gidx, d)
    return _tree(ptr, op, num_positions, dtype, x, perm, gidx, d, _step_cuda, _finish_cuda)


def _one_feature(ptr, op, num_positions, dtype, x, perm, gidx, d) -> torch.Tensor:
    """The tree for one feature, no read-back, balanced: the group pointer (one single-pass
    scan, ``gs_seg_group_ptr``: :func:`group_ptr` on the device), a warp per group of
    ``GROUP`` terms of any segment (``gs_seg_groups``; a column of 10**6 edges is 977 warps),
    then a warp per segment over its group values (``gs_seg_groups_finish``): bit-equal to
    :func:`reference_segment_reduce`. Sizes are host-known bounds (:func:`group_bound`), so
    it runs inside CUDA graphs. At most :data:`ONE_LAUNCH` terms take ``gs_seg_warp`` (one
    launch: a warp per whole segment), which costs less host time than the three launches
    (small reductions such as LADIES's column sums of a kept block are bound by launches)
    and at most ``ONE_LAUNCH`` serial terms of GPU time."""
    if num_positions <= ONE_LAUNCH:
        return segment_reduce_warp(ptr, op, num_positions, dtype, x, perm, gidx, d)
    ptr, S, dev = _i64(ptr), ptr.numel() - 1, ptr.device
    key = dict(dtypes=(_FLOATS[dtype],))
    code = MAX if op == "max" else SUM
    gptr = group_pointer(ptr, dtype)
    Q = group_bound(num_positions, S)
    gval = torch.empty(Q, dtype=dtype, device=dev)
    launch(
        "segment_reduce",
        "gs_seg_groups",
        Q * 32,
        ptr,
        gptr,
        S,
        Q,
        _ptr(perm),
        _ptr(x),
        _ptr(gidx),
        _ptr(d),
        code,
        gval,
        block=GROUP_BLOCK,
        **key,
    )
    out = torch.empty((S, 1), dtype=dtype, device=dev)
    launch(
        "segment_reduce",
        "gs_seg_groups_finish",
        S * 32,
        ptr,
        gptr,
        S,
        gval,
        code,
        int(op == "mean"),
        out,
        block=GROUP_BLOCK,
        **key,
    )
    return out


def segment_reduce_warp(
    ptr, op, num_positions, dtype, x=None, perm=None, gidx=None, d=None
) -> torch.Tensor:
    """The same one-feature tree in one launch, a warp walking each whole segment
    (``gs_seg_warp``; a hub is one warp's serial work): :func:`segment_reduce`'s path for
    at most :data:`ONE_LAUNCH` terms (bit-equal to the grouped kernels)."""
    S = ptr.numel() - 1
    if _features(x, d) != 1:
        raise ValueError("segment_reduce_warp: one feature only")
    work = S > 0 and num_positions > 0
    # the kernel writes every segment (0 where empty): no fill launch before it
    out = (torch.empty if work else torch.zeros)((max(S, 0), 1), dtype=dtype, device=ptr.device)
    if work:
        launch(
            "segment_reduce",
            "gs_seg_warp",
            S * 32,
            _i64(ptr),
            S,
            _ptr(perm),
            _ptr(x),
            _ptr(gidx),
            _ptr(d),
            MAX if op == "max" else SUM,
            int(op == "mean"),
            out,
            dtypes=(_FLOATS[dtype],),
        )
    return out


def reference_segment_reduce(
    ptr, op, num_positions, dtype, x=None, perm=None, gidx=None, d=None
) -> torch.Tensor:
    """:func:`segment_reduce` in torch, step for step (same tree, same IEEE operations): on
    any device, bit-equal to the kernels (for tests, and to state the order)."""
    return _tree(ptr, op, num_positions, dtype, x, perm, gidx, d, _step_torch, _finish_torch)


# ----------------------------------------------------------------------------- the ops
def _on(A: CSC, *tensors) -> bool:
    return convert.on_gpu(A.indptr) and all(
        t is None or (isinstance(t, torch.Tensor) and t.device == A.device) for t in tensors
    )


# A.degree(axis): no kernel of its own (a difference of the column pointer, or one integer
# scatter-add, exact in any order): the torch code on the device, registered to say that it
# never reads a size back (so a CUDA-graph region may hold it)
cuda_impl(Op.DEGREE, syncs=False)(ref.degree)


@cuda_impl(Op.TOTAL, syncs=False)  # kernels/rowsum.cu: no read-back
def total(A: CSC, op: str, batches=None) -> torch.Tensor:
    """``A.sum()``: the exact sum of every edge value (``rowsum.edge_total``), the bits of
    the torch code (``ref.total``), which runs a super-batch's sums per mini-batch, other
    dtypes and tensors off the GPU (on their device, also without a read-back)."""
    v = A.values
    if (
        batches is not None
        or not _on(A, v)
        or (v is not None and (v.dtype not in _FLOATS or v.dim() != 1))
    ):
        return ref.total(A, op, batches)
    return rowsum.edge_total(v, A.nnz, torch.float32 if v is None else v.dtype, A.device)


@cuda_impl(Op.REDUCE)  # kernels/segment_reduce.cu
def reduce(A: CSC, op: str, axis: int) -> torch.Tensor:
    """Per-column (``axis=0``, shape (C,) or (C, F)) or per-row (``axis=1``, (R,) or (R, F))
    ``sum`` / ``max`` / ``mean`` of the values; an empty column or row gives 0."""
    return reduce_values(A, None, op, axis)


def reduce_values(A: CSC, v: torch.Tensor | None, op: str, axis: int) -> torch.Tensor:
    """:func:`reduce` over values ``v`` on ``A``'s edges (None: ``A``'s own), as
    :func:`fused_compute.reduce_values` (the reduction of a fused edge-map-reduce)."""
    v = A.values if v is None else v
    if (
        op not in REDUCE_OPS
        or axis not in (0, 1)
        or not _on(A, v)
        or (v is not None and (v.dtype not in _FLOATS or v.dim() not in (1, 2)))
    ):
        return fused_compute.reduce_values(A, v, op, axis)  # the torch code
    dtype = torch.float32 if v is None else v.dtype
    if axis == 1 and op == "sum" and (v is None or v.dim() == 1):
        # exact, order-free row sums: the same bits as the fused SLICE_REDUCE (rowsum.py)
        return rowsum.edge_row_sums(A.rows, v, A.num_rows, dtype)
    if axis == 0:
        ptr, perm = A.indptr, None
    else:
        ptr, perm = convert.to_csr(A)
    out = segment_reduce(ptr, op, A.nnz, dtype, x=None if v is None else v.contiguous(), perm=perm)
    return out if v is not None and v.dim() == 2 else out.reshape(-1)


def _product_dtype(A: CSC, dense) -> torch.dtype | None:
    """``ref._weighted``'s result dtype when the kernels handle it, else None."""
    vals = A.values
    if not isinstance(dense, torch.Tensor) or not _on(A, dense, vals) or dense.dim() not in (1, 2):
        return None
    if vals is not None and vals.dim() != 1:
        return None
    vd = (
        vals.dtype
        if vals is not None
        else (dense.dtype if dense.is_floating_point() else torch.float32)
    )
    res = torch.promote_types(dense.dtype, vd)
    return res if res in _FLOATS else None


def _spmm(A: CSC, dense, ptr, perm, gidx, dtype):
    w = None if A.values is None else A.values.to(dtype).contiguous()
    out = segment_reduce(
        ptr, "sum", A.nnz, dtype, x=w, perm=perm, gidx=gidx, d=dense.to(dtype).contiguous()
    )
    return out if dense.dim() == 2 else out.reshape(-1)


@cuda_impl(Op.SPMM)
def spmm(A: CSC, dense: torch.Tensor) -> torch.Tensor:
    """``A @ D``: ``D`` has one row per column (shape (C,) or (C, F)); out (R,) or (R, F)."""
    dtype = _product_dtype(A, dense)
    if dtype is None or dense.shape[0] != A.num_cols:
        return ref.spmm(A, dense)
    indptr_r, perm = convert.to_csr(A)
    return _spmm(A, dense, indptr_r, perm, convert.edge_cols(A), dtype)


@cuda_impl(Op.SPMM_T)
def spmm_t(A: CSC, dense: torch.Tensor) -> torch.Tensor:
    """``A.T @ D``: ``D`` has one row per row (shape (R,) or (R, F)); out (C,) or (C, F)."""
    dtype = _product_dtype(A, dense)
    if dtype is None or dense.shape[0] != A.num_rows:
        return ref.spmm_t(A, dense)
    return _spmm(A, dense, A.indptr, None, _i64(A.rows), dtype)


def _edge_binary(A: CSC, a, amode, b, bmode, op: str, F: int, dtype) -> torch.Tensor:
    """``op(a[at(e)], b[at(e)])`` per edge and feature, shape (E * F,) (see the kernel)."""
    out = torch.empty(A.nnz * F, dtype=dtype, device=A.device)
    af = 1 if a is None or a.dim() == 1 else F
    bf = 1 if b.dim() == 1 else F
    launch(
        "segment_reduce",
        "gs_edge_binary",
        out.numel(),
        _ptr(a),
        amode,
        af,
        b,
        bmode,
        bf,
        _i64(A.indptr),
        A.num_cols,
        _i64(A.rows),
        A.nnz,
        F,
        BINARY_OPS[op],
        out,
        dtypes=(_FLOATS[dtype],),
    )
    return out


@cuda_impl(Op.SDDMM)
def sddmm(A: CSC, u: torch.Tensor, v: torch.Tensor, op: str) -> CSC:
    """Edge values ``op(U[row], V[col])``; ``dot`` sums over the feature axis."""
    ok = (
        isinstance(u, torch.Tensor)
        and isinstance(v, torch.Tensor)
        and _on(A, u, v)
        and (op == "dot" or op in BINARY_OPS)
        and u.dim() == v.dim()
        and u.dim() in (1, 2)
        and u.shape[1:] == v.shape[1:]
        and u.shape[0] == A.num_rows
        and v.shape[0] == A.num_cols
    )
    dtype = torch.promote_types(u.dtype, v.dtype) if ok else None
    if dtype not in _FLOATS:
        return ref.sddmm(A, u, v, op)
    F = 1 if u.dim() == 1 else int(u.shape[1])
    uu, vv = u.to(dtype).contiguous(), v.to(dtype).contiguous()
    if op != "dot" or u.dim() == 1:
        out = _edge_binary(A, uu, AT_ROW, vv, AT_COL, "mul" if op == "dot" else op, F, dtype)
        return A.with_values(out if u.dim() == 1 else out.view(A.nnz, F))
    out = torch.zeros(A.nnz, dtype=dtype, device=A.device)  # F == 0: empty sums
    if F > 0:
        launch(
            "segment_reduce",
            "gs_edge_dot",
            A.nnz,
            uu,
            vv,
            _i64(A.indptr),
            A.num_cols,
            _i64(A.rows),
            A.nnz,
            F,
            out,
            dtypes=(_FLOATS[dtype],),
        )
    return A.with_values(out)


@cuda_impl(Op.EDGE_BROADCAST, syncs=False)  # per edge: no read-back
def edge_broadcast(A: CSC, op: str, vector: torch.Tensor, axis: int) -> CSC:
    """Values ``op(values, vector[col])`` (``axis=0``) or ``op(values, vector[row])``
    (``axis=1``); ``vector`` has shape (C,) or (R,), values (E,) or (E, F)."""
    vals = A.values
    n = A.num_cols if axis == 0 else A.num_rows
    ok = (
        op in BINARY_OPS
        and axis in (0, 1)
        and isinstance(vector, torch.Tensor)
        and _on(A, vector, vals)
        and vector.dim() == 1
        and vector.shape[0] == n
        and (vals is None or vals.dim() in (1, 2))
    )
    dtype = None
    if ok:
        vd = (
            vals.dtype
            if vals is not None
            else (vector.dtype if vector.is_floating_point() else torch.float32)
        )
        dtype = torch.promote_types(vd, vector.dtype)
    if dtype not in _FLOATS:
        return ref.edge_broadcast(A, op, vector, axis)
    F = int(vals.shape[1]) if vals is not None and vals.dim() == 2 else 1
    a = None if vals is None else vals.to(dtype).contiguous()
    out = _edge_binary(
        A, a, AT_EDGE, vector.to(dtype).contiguous(), AT_COL if axis == 0 else AT_ROW, op, F, dtype
    )
    return A.with_values(out.view(A.nnz, F) if vals is not None and vals.dim() == 2 else out)
