"""Size rules and attribute checks of the op table (:mod:`.ops`): each op's estimate (the
layout pass's cost model) and upper bound (what the runtime allocates), from its inputs'
sizes; the checks of the random-count and walk-probability attributes."""

from __future__ import annotations

import math

from gsample.base import validate as V
from gsample.ir.opdef import Attr, Size

# (A, ins, attrs) -> Size; A: the input matrix's sizes, ins: every input's (None when unknown)
_DEFAULT_TENSOR = 512


def _n(ins: dict, name: str) -> float:
    s = ins.get(name)
    return _DEFAULT_TENSOR if s is None else s.rows


def _same(A, ins, at):
    return A


def _slice_cols(A, ins, at):
    n = _n(ins, "cols")
    return Size(n * A.nnz / max(A.cols, 1), A.rows, n)


def _slice_rows(A, ins, at):
    n = _n(ins, "rows")
    return Size(A.nnz * min(n / max(A.rows, 1), 1.0), n, A.cols)


def _individual(A, ins, at):
    k = at["k"] * A.cols
    return Size(k if at["replace"] else min(A.nnz, k), A.rows, A.cols)


def _individual_bound(A, ins, at):
    return Size(at["k"] * A.cols, A.rows, A.cols)


def _collective(A, ins, at):
    s = A.nonempty_rows
    r = min(at["k"], s)
    return Size(A.nnz * r / s if s else 0.0, r, A.cols)


def _collective_bound(A, ins, at):
    return Size(A.nnz, min(at["k"], A.rows), A.cols)


def _fused(rule):
    """A rule of an op on ``A[:, cols]``, for the fused op that never builds that slice."""
    return lambda A, ins, at: rule(_slice_cols(A, ins, at), ins, at)


def _fused_bound(rule):
    # the slice's edges are not known before the run: a fused sample's bound may not need them
    return lambda A, ins, at: rule(Size(math.inf, A.rows, _n(ins, "cols")), ins, at)


def _tensor(A, ins, at, op_def):
    """A tensor result lined up with ``A`` as the op's ``out`` says."""
    out = op_def.alignment(None, at)
    out = out[0] if isinstance(out, tuple) else out
    return Size(rows=A.length(out))


def _walk(A, ins, at):
    # exact: one row per walker, the seed then one entry per step
    return Size(rows=_n(ins, "seeds"), cols=at["length"] + 1)


def _neighbor_lists(A, ins, at):
    # estimate: the columns, a few entries each (the lists' width is not a known size)
    cols = _n(ins, "cols")
    return Size(nnz=10 * cols, rows=A.rows, cols=cols)


def _per_entry(A, ins, at):
    # exact: one value per entry of the frontier
    return Size(rows=_n(ins, "nodes"))


#: the laws of ``random_count``
COUNT_DISTS = ("geometric", "binomial")


def _count_attrs(dist="geometric", p=0.5, n=None, **_):
    """``random_count``'s attributes together (each is checked on its own first)."""
    if dist == "geometric" and p >= 1.0:
        raise ValueError(f"p: a geometric count needs p < 1 (P(x) = (1 - p) p^x), got {p}")
    top = math.exp(-53 * math.log(2) / MAX_TRIALS)  # p**j * 2**53 >= 1 for MAX_TRIALS j
    if dist == "geometric" and p > top:
        raise ValueError(
            f"p: a geometric count needs p <= {top:.6f} (one threshold per count "
            f"is tabulated, {MAX_TRIALS} at most), got {p}"
        )
    if dist == "geometric" and n is not None:
        raise ValueError(
            "n: the number of trials is for dist='binomial'; a geometric count has none"
        )
    if dist == "binomial" and n is None:
        raise ValueError("n: dist='binomial' needs the number of trials n (an int >= 0)")


def _trials(n):
    if n is None:
        return None
    n = V.count(n, "n")
    if n > MAX_TRIALS:
        raise ValueError(
            f"n: at most {MAX_TRIALS} trials (one threshold per count is tabulated), got {n}"
        )
    return n


#: the largest binomial ``n`` of ``random_count``
MAX_TRIALS = 1 << 20


#: the probabilities a walk step may take instead of moving to a neighbour
WALK_PROBS = ("stop_prob", "restart_prob", "jump_prob")


def _walk_prob(name: str):
    return Attr(name, lambda x: V.probability(x, name), 0.0, what="float", example=0.0)


def _positive(name: str):
    return Attr(name, lambda x: V.positive(x, name), 1.0, what="float", example=1.0)
