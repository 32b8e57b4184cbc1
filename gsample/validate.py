"""Input checks (DESIGN §6): every bad input becomes a clear Python exception that
names the argument, raised before any backend op runs.

Documented behaviours instead of errors: a non-contiguous tensor is copied to a
contiguous one; int32 ids are widened to int64; Python lists and NumPy arrays are
turned into tensors on the matrix's device.
"""
from __future__ import annotations

import numbers

import numpy as np
import torch

_INT_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)


def as_tensor(x, name: str, device) -> torch.Tensor:
    """``x`` as a tensor on ``device``; lists and arrays are converted, tensors must match."""
    if isinstance(x, torch.Tensor):
        if device is not None and x.device != torch.device(device):
            raise ValueError(f"{name}: tensor is on {x.device} but the matrix is on {device}; "
                             f"move it with .to({str(device)!r})")
        return x.contiguous()
    if isinstance(x, (list, tuple, range, np.ndarray)) or isinstance(x, numbers.Number):
        arr = np.asarray(x)
        if arr.dtype == object:
            raise TypeError(f"{name}: cannot convert {type(x).__name__} to a tensor")
        return torch.as_tensor(arr, device=device)
    raise TypeError(f"{name}: expected a tensor, got {type(x).__name__}")


def ids(x, name: str, num_nodes: int, device, *, allow_empty: bool = True) -> torch.Tensor:
    """Check node ids: 1-D, integer, in ``[0, num_nodes)``; returns int64 (shape (n,))."""
    t = as_tensor(x, name, device)
    if t.dtype == torch.bool or t.dtype not in _INT_DTYPES:
        raise TypeError(f"{name}: node ids must be an integer tensor, got dtype {t.dtype}")
    if t.dim() != 1:
        raise ValueError(f"{name}: node ids must be 1-D, got shape {tuple(t.shape)}")
    if t.numel() == 0:
        if not allow_empty:
            raise ValueError(f"{name}: empty frontier (no node ids); sample from at least one node")
        return t.to(torch.int64)
    t = t.to(torch.int64)
    lo, hi = int(t.min()), int(t.max())
    if lo < 0:
        raise IndexError(f"{name}: node id {lo} is negative")
    if hi >= num_nodes:
        raise IndexError(f"{name}: node id {hi} is out of range for a graph of {num_nodes} nodes")
    return t


def unique_ids(t: torch.Tensor, name: str) -> None:
    """Raise when ``t`` repeats an id."""
    if t.numel() > 1:
        s = torch.sort(t).values
        dup = s[1:] == s[:-1]
        if bool(dup.any()):
            raise ValueError(f"{name}: node {int(s[1:][dup][0])} appears more than once; "
                             "row ids must be unique")


def count(k, name: str = "k") -> int:
    """Check a sample size: a non-negative Python or NumPy integer."""
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (numbers.Integral,)):
        raise TypeError(f"{name}: must be an int, got {type(k).__name__}")
    if k < 0:
        raise ValueError(f"{name}: must be >= 0, got {k}")
    if k > 2**63 - 1:
        raise ValueError(f"{name}: {k} does not fit in int64")
    return int(k)


def flag(x, name: str) -> bool:
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name}: must be True or False, got {x!r}")
    return bool(x)


def axis(a) -> int:
    if isinstance(a, bool) or a not in (0, 1):
        raise ValueError(f"axis: must be 0 (one value per column) or 1 (one value per row), "
                         f"got {a!r}")
    return int(a)


def vector(v, name: str, length: int, device, what: str) -> torch.Tensor:
    """A dense vector with one value per ``what``; shape (length,) or (length, F)."""
    t = as_tensor(v, name, device)
    if t.dim() not in (1, 2) or t.shape[0] != length:
        raise ValueError(f"{name}: expected one value per {what} (shape ({length},) or "
                         f"({length}, F)), got shape {tuple(t.shape)}")
    return t


def probabilities(p, name: str, length: int, device, what: str,
                  values: bool = True) -> torch.Tensor:
    """Floating values of shape (length,); with ``values`` also finite and non-negative."""
    t = as_tensor(p, name, device)
    if not t.is_floating_point():
        raise TypeError(f"{name}: probabilities must be floating point, got dtype {t.dtype}")
    if t.dim() != 1 or t.shape[0] != length:
        raise ValueError(f"{name}: expected one probability per {what} (shape ({length},)), "
                         f"got shape {tuple(t.shape)}")
    if values:
        _finite_nonnegative(t, name)
    return t


def scalar_or_edges(x, name: str, nnz: int, device):
    """An edge-map operand: a real scalar, or a tensor of shape (E,) or (E, F)."""
    if isinstance(x, bool):
        raise TypeError(f"{name}: expected a number or an edge-aligned tensor, got bool")
    if isinstance(x, numbers.Real):
        return x
    t = as_tensor(x, name, device)
    if t.dim() == 0:
        return t
    if t.dim() not in (1, 2) or t.shape[0] != nnz:
        raise ValueError(f"{name}: expected a scalar or one value per edge (shape ({nnz},) or "
                         f"({nnz}, F)), got shape {tuple(t.shape)}")
    return t


# ----------------------------------------------------------------------------- per-op data checks
# Run on the op's inputs right before the backend, in eager and compiled execution alike.
# Static arguments (k, replace, axis, op names) are checked where they are given.

def _check_cols(A, cols, **_):
    ids(cols, "cols", A.num_nodes, A.device, allow_empty=False)


def _check_rows(A, rows, **_):
    unique_ids(ids(rows, "rows", A.num_nodes, A.device), "rows")


def _check_edge_map(A, other=None, **_):
    if other is not None:
        scalar_or_edges(other, "other", A.nnz, A.device)


def _check_broadcast(A, vector, axis, **_):
    n, what = (A.num_cols, "column") if axis == 0 else (A.num_rows, "row")
    v = vector_(vector, "v", n, A.device, what)
    if v.dim() != 1:
        raise ValueError(f"v: broadcast needs one scalar per {what}, got shape {tuple(v.shape)}")


def _scalar_values(A):
    if A.values is not None and A.values.dim() != 1:
        raise ValueError(f"A: A @ D needs one value per edge; A has values of shape "
                         f"{tuple(A.values.shape)} (reduce them to (E,) first)")


def _check_spmm(A, dense, **_):
    _scalar_values(A)
    vector_(dense, "D", A.num_cols, A.device, "column of A")


def _check_spmm_t(A, dense, **_):
    _scalar_values(A)
    vector_(dense, "D", A.num_rows, A.device, "row of A")


def _check_sddmm(A, u, v, **_):
    u = vector_(u, "U", A.num_rows, A.device, "row of A")
    v = vector_(v, "V", A.num_cols, A.device, "column of A")
    if u.dim() != v.dim() or (u.dim() == 2 and u.shape[1] != v.shape[1]):
        raise ValueError(f"U, V: feature shapes differ: {tuple(u.shape)} and {tuple(v.shape)}")


def _frontier(A, cols):
    """``(index, indptr)`` of the edges of ``A[:, cols]`` (see ``storage.gather_segments``)."""
    from .storage import gather_segments
    return gather_segments(*A.column_segments(cols))


def edge_probs(p, indptr, cols) -> None:
    """Per column ``indptr`` of edge probabilities ``p``: at least one positive where it has edges."""
    positive = torch.cat([p.new_zeros(1, dtype=torch.int64), torch.cumsum((p > 0).long(), 0)])
    starts, ends = indptr[:-1], indptr[1:]
    empty = (positive[ends] - positive[starts] == 0) & (ends > starts)
    if bool(empty.any()):
        c = int(empty.nonzero()[0])
        raise ValueError(f"probs: column {c} (node {int(cols[c])}) has edges but all its "
                         "probabilities are zero")


def _check_individual(A, probs=None, cols=None, **_):
    if cols is not None:
        ids(cols, "cols", A.num_nodes, A.device, allow_empty=False)
    if probs is None:
        return
    probabilities(probs, "probs", A.nnz, A.device, "edge", values=False)
    if cols is None:
        p, indptr, cols = probs, A.indptr, A.global_cols()
    else:                                   # fused op: check the frontier's edges only
        index, indptr = _frontier(A, cols)
        p = probs[index]
    _finite_nonnegative(p, "probs")
    edge_probs(p, indptr, cols)


def _finite_nonnegative(t, name):
    if t.numel():
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name}: contains NaN or infinite values")
        if bool((t < 0).any()):
            raise ValueError(f"{name}: contains negative values (min {float(t.min())})")


#: the error of collective sampling when no row with edges has a positive probability
NO_POSITIVE_ROW = "node_probs: zero on every row that has edges; nothing can be sampled"


def _check_collective(A, node_probs=None, cols=None, **_):
    if cols is not None:
        ids(cols, "cols", A.num_nodes, A.device, allow_empty=False)
    if node_probs is not None:
        p = probabilities(node_probs, "node_probs", A.num_rows, A.device, "row")
        # the fused A[:, cols].collective_sample checks this in its host code, before its
        # draws (choose_rows): here it would gather the frontier's edges a second time
        if cols is None and A.nnz and not bool((p[A.rows] > 0).any()):
            raise ValueError(NO_POSITIVE_ROW)


def _check_fused(A, program, **operands):
    """The checks of the unfused edge maps and broadcasts, step by step."""
    for _op, name, _reverse, _scalar, axis in program:
        if name is None:
            continue
        if axis is None:
            _check_edge_map(A, other=operands[name])
        else:
            _check_broadcast(A, vector=operands[name], axis=axis)


def check_op(op, kwargs: dict) -> None:
    """Run the data checks of ``op`` on its named inputs (see the op table)."""
    fn = OP_CHECKS.get(op)
    if fn is not None:
        fn(**kwargs)


vector_ = vector


def _op_checks():
    from .ir import Op
    return {
        Op.SLICE_COLS: _check_cols,
        Op.SLICE_ROWS: _check_rows,
        Op.EDGE_MAP: _check_edge_map,
        Op.EDGE_BROADCAST: _check_broadcast,
        Op.SPMM: _check_spmm,
        Op.SPMM_T: _check_spmm_t,
        Op.SDDMM: _check_sddmm,
        Op.FUSED_EDGE_MAP: _check_fused,
        Op.FUSED_EDGE_MAP_REDUCE: _check_fused,
        Op.INDIVIDUAL_SAMPLE: _check_individual,
        Op.SLICE_INDIVIDUAL_SAMPLE: _check_individual,
        Op.COLLECTIVE_SAMPLE: _check_collective,
        Op.SLICE_COLLECTIVE_SAMPLE: _check_collective,
    }


OP_CHECKS = _op_checks()
