"""The ops' data checks: each :class:`gsample.ir.OpDef` names its own (``check=``).

A check runs on the op's inputs where untrusted data enters the op: every eager call, and a
compiled program's boundary (its arguments and what dense user code computed), never on
values a program's ops made. Static arguments (k, replace, axis, op names) are checked where
they are given (each :class:`gsample.ir.Attr`'s ``check``). The generic argument checks
they are built of (ids, probabilities, shapes, :func:`gsample.base.validate.fail_if`) are in
:mod:`gsample.base.validate`.

Each returns the inputs it checked, converted as the op takes them (ids as int64 tensors on
the matrix's device, ...): eager calls and compiled programs pass those on. ``trusted`` names
id inputs a compiled program's own ops made (a frontier from all_nodes): their ids are in
range by construction and are not checked again. ``in_kernel`` names inputs the backend's
code checks itself (``gsample.backend.Impl.checks``): they are only converted here. Values
(probabilities, operands) are always checked: they may come from user data through any
arithmetic.

Examples
--------
>>> import gsample as gs
>>> from gsample.ir.checks import check_cols
>>> A = gs.datasets.rmat(100, 1000, seed=0).csc
>>> check_cols(A, [3, 5])["cols"]
tensor([3, 5])
>>> check_cols(A, [100])
Traceback (most recent call last):
IndexError: cols: node id 100 is out of range for a graph of 100 nodes
"""

from __future__ import annotations

import weakref

import torch

from gsample.base import validate as V
from gsample.formats.bounded import BoundedIds
from gsample.formats.csc import gather_segments


def check_cols(A, cols, trusted=(), in_kernel=(), **_):
    if "cols" in trusted:
        return {}
    return {"cols": _frontier_ids(A, cols, trusted, in_kernel)}


def _frontier_ids(A, cols, trusted, in_kernel):
    """A frontier's ids, converted; range-checked unless the op's kernel does it. An empty
    frontier is allowed: a hop that reached no new node gives a matrix of no column."""
    return V.ids(cols, "cols", A.num_nodes, A.device, check_range="cols" not in in_kernel)


def check_listed(A, cols, row_weights, scale, trusted=(), in_kernel=(), **_):
    """``listed_collective_sample``: the frontier's ids, and one floating weight per edge
    of ``A`` (its probabilities' values are checked where they are summed, as the dense
    ones are where they are drawn from)."""
    out = check_cols(A, cols, trusted, in_kernel)
    if "row_weights" not in trusted:
        w = row_weights
        if not isinstance(w, torch.Tensor) or w.shape != (A.nnz,) or not w.is_floating_point():
            raise ValueError(
                f"row_weights: expected one floating-point weight per edge (shape ({A.nnz},)), "
                f"got {getattr(w, 'shape', type(w).__name__)}"
            )
    return out


def check_rows(A, rows, trusted=(), **_):
    if "rows" in trusted:
        return {}
    rows = V.ids(rows, "rows", A.num_nodes, A.device)
    V.unique_ids(rows, "rows")
    return {"rows": rows}


def check_rows_cols(A, rows, cols, trusted=(), **_):
    """``A[rows, cols]``: the column slice's and the row slice's checks."""
    return {**check_cols(A, cols, trusted), **check_rows(A, rows, trusted)}


def check_edge_map(A, other=None, **_):
    if other is None:
        return {}
    return {"other": V.scalar_or_edges(other, "other", A.nnz, A.device)}


def check_broadcast(A, vector, axis, **_):
    n, what = (A.num_cols, "column") if axis == 0 else (A.num_rows, "row")
    v = V.vector(vector, "v", n, A.device, what)
    if v.dim() != 1:
        raise ValueError(f"v: broadcast needs one scalar per {what}, got shape {tuple(v.shape)}")
    return {"vector": v}


def _scalar_values(A):
    if A.values is not None and A.values.dim() != 1:
        raise ValueError(
            f"A: A @ D needs one value per edge; A has values of shape "
            f"{tuple(A.values.shape)} (reduce them to (E,) first)"
        )


def check_spmm(A, dense, **_):
    _scalar_values(A)
    return {"dense": V.vector(dense, "D", A.num_cols, A.device, "column of A")}


def check_spmm_t(A, dense, **_):
    _scalar_values(A)
    return {"dense": V.vector(dense, "D", A.num_rows, A.device, "row of A")}


def check_sddmm(A, u, v, **_):
    u = V.vector(u, "U", A.num_rows, A.device, "row of A")
    v = V.vector(v, "V", A.num_cols, A.device, "column of A")
    if u.dim() != v.dim() or (u.dim() == 2 and u.shape[1] != v.shape[1]):
        raise ValueError(f"U, V: feature shapes differ: {tuple(u.shape)} and {tuple(v.shape)}")
    if not torch.promote_types(u.dtype, v.dtype).is_floating_point:
        # edge values are floating point (the module doc): integer or bool features are
        # multiplied in float32, as an edge map's integer result is made float32
        u, v = u.to(torch.float32), v.to(torch.float32)
    return {"u": u, "v": v}


def _frontier(A, cols):
    """``(index, indptr)`` of the edges of ``A[:, cols]`` (see ``formats.gather_segments``);
    a bounded frontier is read back first."""
    if isinstance(cols, BoundedIds):
        (n,) = V.read_back([cols.count])
        cols = cols.data[:n]
    return (*gather_segments(*A.column_segments(cols)), cols)


def check_individual(A, probs=None, cols=None, trusted=(), in_kernel=(), **_):
    out = {}
    if cols is not None and "cols" not in trusted:
        cols = out["cols"] = _frontier_ids(A, cols, trusted, in_kernel)
    if probs is None or "probs" in trusted:  # (trusted: checked with their alias tables)
        return out
    probs = out["probs"] = V.probabilities(probs, "probs", A.nnz, A.device, "edge", values=False)
    if "probs" in in_kernel:  # the sampler's code checks the values (the CUDA backend's:
        return out  # with its draws, select.select_in_columns' ``nodes``)
    if cols is None:
        p, indptr, cols = probs, A.indptr, A.global_cols()
    else:  # fused op: check the frontier's edges only
        index, indptr, cols = _frontier(A, cols)
        p = probs[index]
    V.column_probs(p, indptr, cols)
    return out


#: the error of collective sampling when no row with edges has a positive probability
NO_POSITIVE_ROW = "node_probs: zero on every row that has edges; nothing can be sampled"


def check_collective(A, node_probs=None, cols=None, trusted=(), in_kernel=(), **_):
    out = {}
    if cols is not None and "cols" not in trusted:
        out["cols"] = _frontier_ids(A, cols, trusted, in_kernel)
    if node_probs is not None:
        # in_kernel: the sampler's kernel checks the values (finite, >= 0) itself
        p = out["node_probs"] = V.probabilities(
            node_probs,
            "node_probs",
            A.num_rows,
            A.device,
            "row",
            values="node_probs" not in in_kernel,
        )
        # the fused A[:, cols].collective_sample checks this in its host code, before its
        # draws (choose_rows): here it would gather the frontier's edges a second time
        if cols is None and A.nnz:
            V.fail_if(~(p[A.rows] > 0).any(), ValueError, NO_POSITIVE_ROW)
    return out


def _whole_graph(A, what: str) -> None:
    if A.row_ids is not None or A.col_ids is not None:
        raise ValueError(
            f"A: {what} needs the whole graph (a matrix whose rows and columns "
            "are all nodes), not a sub-matrix; walk on the graph itself"
        )


def check_alias_table(A, probs, **_):
    """Static walk weights: one finite, non-negative value per edge, and a positive one in
    every column that has edges (a walker there must be able to move)."""
    _whole_graph(A, "walk weights (probs)")
    p = V.probabilities(probs, "probs", A.nnz, A.device, "edge", values=False)
    if p.dim() == 1 and p.numel():
        V.finite_nonnegative(p, "probs")
        V.edge_probs(p, A.indptr, A.global_cols())
    return {"probs": p}


def check_random_walk(
    A, seeds, length=0, stop_prob=0.0, restart_prob=0.0, jump_prob=0.0, trusted=(), **_
):
    """``A.random_walk``: the whole graph, seeds in range, the step probabilities summing to
    at most 1 (its other inputs and attributes are not data: ``alias``, made by the
    ``alias_table`` op from checked weights, is not re-checked; ``p`` and ``q`` were checked
    where they were given)."""
    _whole_graph(A, "random_walk")
    total = stop_prob + restart_prob + jump_prob
    if total > 1.0 + 1e-12:
        raise ValueError(
            f"stop_prob, restart_prob, jump_prob: must sum to at most 1, got "
            f"{stop_prob} + {restart_prob} + {jump_prob} = {total}"
        )
    if length >= 1 << 31:  # a step's draws are numbered step * 2**32 + slot
        raise ValueError(f"length: must be < 2**31, got {length}")
    V.fits(
        len(seeds) * (length + 1), 8, A.device, "length", f"{len(seeds)} walks of {length} steps"
    )
    if "seeds" in trusted:
        return {}
    return {"seeds": V.ids(seeds, "seeds", A.num_nodes, A.device)}


def check_fused_walk(A, seeds, length=0, trusted=(), **_):
    """A fused ``gs.walk`` (``fused_walk``): the whole graph and seeds in range (the ids its
    steps compute are checked where its body reads them)."""
    _whole_graph(A, "gs.walk")
    V.fits(
        len(seeds) * (length + 1), 8, A.device, "length", f"{len(seeds)} walks of {length} steps"
    )
    if "seeds" in trusted:
        return {}
    return {"seeds": V.ids(seeds, "seeds", A.num_nodes, A.device)}


def check_random_draws(A, nodes, trusted=(), **_):
    """``A.random_uniform`` / ``A.random_count``: the whole graph (its node count decodes a
    super-batch's frontier) and node ids in range."""
    _whole_graph(A, "random_uniform / random_count")
    if "nodes" in trusted:
        return {}
    return {"nodes": V.ids(nodes, "nodes", A.num_nodes, A.device)}


def check_positions(A, nodes, trusted=(), in_kernel=(), **_):
    """``A.positions``: node ids in range (an empty frontier is allowed)."""
    if "nodes" in trusted:
        return {}
    return {
        "nodes": V.ids(nodes, "nodes", A.num_nodes, A.device, check_range="nodes" not in in_kernel)
    }


def check_first_reached(A, slot=None, state=None, carry=None, trusted=(), **_):
    """``s.first_reached``: ``slot`` one integer per column of ``s`` (its range is checked
    where the pairs are made), ``carry`` one value per column, ``state`` a previous call's
    (an int64 vector on ``s``'s device)."""
    C = getattr(A, "num_cols", None)  # None: a sample still in bounded buffers (trusted)
    out = {}
    if slot is not None and "slot" not in trusted:
        t = V.as_tensor(slot, "slot", A.device)
        if t.dtype == torch.bool or t.dtype not in V.INT_DTYPES:
            raise TypeError(f"slot: seed slots must be an integer tensor, got dtype {t.dtype}")
        if t.dim() != 1 or (C is not None and t.shape[0] != C):
            raise ValueError(
                f"slot: expected one seed slot per column of the sample, shape ({C},); "
                f"got shape {tuple(t.shape)}"
            )
        out["slot"] = t.to(torch.int64)
    if carry is not None and "carry" not in trusted:
        c = V.as_tensor(carry, "carry", A.device)
        if c.dim() != 1 or (C is not None and c.shape[0] != C):
            raise ValueError(
                f"carry: expected one value per column of the sample, shape ({C},); "
                f"got shape {tuple(c.shape)}"
            )
        out["carry"] = c
    if (
        state is not None
        and "state" not in trusted
        and (
            not isinstance(state, torch.Tensor)
            or state.dtype != torch.int64
            or state.dim() != 1
            or state.device != torch.device(A.device)
        )
    ):
        raise TypeError(
            "state: pass the state a previous first_reached call returned (an int64 vector "
            f"on {A.device}), or None"
        )
    return out


def check_from_neighbors(A, cols, neighbors, values=None, trusted=(), **_):
    """``A.from_neighbors``: the whole graph (its node count decodes a super-batch), column
    ids in range, one row of neighbour ids per column (``-1`` pads), values of the same
    shape, floating point."""
    _whole_graph(A, "from_neighbors")
    out = {} if "cols" in trusted else {"cols": V.ids(cols, "cols", A.num_nodes, A.device)}
    c = out.get("cols", cols)
    C = c.shape[0] if isinstance(c, torch.Tensor) else None  # a trusted frontier may be bounded
    t = V.as_tensor(neighbors, "neighbors", A.device)
    if t.dtype == torch.bool or t.dtype not in V.INT_DTYPES:
        raise TypeError(f"neighbors: node ids must be an integer tensor, got dtype {t.dtype}")
    if t.dim() != 2 or (C is not None and t.shape[0] != C):
        raise ValueError(
            f"neighbors: expected one row of ids per column (shape ({C}, K)), "
            f"got shape {tuple(t.shape)}"
        )
    if "neighbors" not in trusted:
        t = t.to(torch.int64)
        if t.numel():
            lo, hi = torch.aminmax(t)
            V.fail_if(
                lo < -1,
                IndexError,
                lambda v: f"neighbors: node id {v} is negative (-1 is the padding)",
                lo,
            )
            V.fail_if(
                hi >= A.num_nodes,
                IndexError,
                lambda v: (
                    f"neighbors: node id {v} is out of range for a graph of {A.num_nodes} nodes"
                ),
                hi,
            )
        out["neighbors"] = t
    if values is not None:
        v = V.as_tensor(values, "values", A.device)
        if not v.is_floating_point():
            raise TypeError(f"values: must be floating point, got dtype {v.dtype}")
        if tuple(v.shape) != tuple(t.shape):
            raise ValueError(
                f"values: expected one value per entry of neighbors (shape "
                f"{tuple(t.shape)}), got shape {tuple(v.shape)}"
            )
        out["values"] = v
    return out


def check_filter_edges(A, keep, **_):
    """``A.filter_edges``: one bool per edge."""
    t = V.as_tensor(keep, "keep", A.device)
    if t.dtype != torch.bool:
        raise TypeError(f"keep: must be a bool tensor (one flag per edge), got dtype {t.dtype}")
    if t.dim() != 1 or t.shape[0] != A.nnz:
        raise ValueError(
            f"keep: expected one flag per edge (shape ({A.nnz},)), got shape {tuple(t.shape)}"
        )
    return {"keep": t}


def check_fused(A, program, **operands):
    """The checks of the unfused edge maps and broadcasts, step by step."""
    out = {}
    for _op, name, _reverse, _scalar, axis in program:
        if name is None:
            continue
        if axis is None:
            out[name] = check_edge_map(A, other=operands[name])["other"]
        else:
            out[name] = check_broadcast(A, vector=operands[name], axis=axis)["vector"]
    return out


#: ``temporal_sample``'s strategies: uniform among the allowed edges, or the most recent
TEMPORAL_STRATEGIES = ("uniform", "last")


def _times(t, name: str, length: int, device, what: str | None = None) -> torch.Tensor:
    """A 1-D tensor of ``length`` integer or floating-point times (``what``: one per what,
    for the message; default: edge for ``edge_time``, else column)."""
    t = V.as_tensor(t, name, device)
    if (
        t.dtype == torch.bool
        or t.is_complex()
        or not (t.is_floating_point() or t.dtype in V.INT_DTYPES)
    ):
        raise TypeError(f"{name}: times must be integer or floating point, got dtype {t.dtype}")
    if t.dim() != 1 or t.shape[0] != length:
        raise ValueError(
            f"{name}: expected one time per "
            f"{what or ('edge' if name == 'edge_time' else 'column')} "
            f"(shape ({length},)), got shape {tuple(t.shape)}"
        )
    return t


def check_temporal(
    A,
    cols,
    probs=None,
    time=None,
    edge_time=None,
    seed=None,
    k=0,
    strategy="uniform",
    window=None,
    trusted=(),
    in_kernel=(),
    **_,
):
    """``A.temporal_sample``: column ids in range (an empty frontier is allowed: a temporal
    tree may end early), ``time`` one per column with ``edge_time`` one per edge of ``A``,
    both integer or both floating point, no NaN time; ``seed`` one non-negative integer per
    column; ``probs`` one floating-point weight per edge of ``A`` (their values are checked
    where they are read: only the candidates' weights of each call). ``strategy="last"`` and
    ``window`` need times; an integer ``window`` with integer times."""
    out = {}
    c = cols
    if "cols" not in trusted:
        c = out["cols"] = V.ids(
            cols, "cols", A.num_nodes, A.device, check_range="cols" not in in_kernel
        )
    C = c.shape[0] if isinstance(c, torch.Tensor) else None  # a trusted frontier may be bounded
    if (time is None) != (edge_time is None):
        given, missing = ("time", "edge_time") if time is not None else ("edge_time", "time")
        raise ValueError(
            f"{missing}: temporal sampling needs both each column's time (time) and each "
            f"edge's (edge_time); only {given} was given"
        )
    if time is None and (strategy != "uniform" or window is not None):
        name = "strategy" if strategy != "uniform" else "window"
        raise ValueError(
            f"{name}: {name}={strategy if name == 'strategy' else window!r} needs "
            "time and edge_time (the most recent edges, or a time window)"
        )
    if time is not None:
        # trusted times are copies of checked ones (first_reached carries the seeds' times),
        # perhaps still in bounded buffers: only their dtype is read
        if "time" in trusted:
            t = getattr(time, "data", time)
        else:
            t = out["time"] = _times(time, "time", C if C is not None else len(time), A.device)
        et = edge_time
        if "edge_time" not in trusted:
            et = out["edge_time"] = _times(edge_time, "edge_time", A.nnz, A.device)
        if t.is_floating_point() != et.is_floating_point():
            raise TypeError(
                f"time: dtype {t.dtype} but edge_time is {et.dtype}; give both as integers "
                "or both as floating point (times are compared exactly)"
            )
        if "time" not in trusted and t.is_floating_point() and t.numel():
            V.fail_if(torch.isnan(t).any(), ValueError, "time: contains NaN (not a time)")
        if window is not None and not t.is_floating_point() and window != int(window):
            raise ValueError(f"window: integer times take an integer window, got {window!r}")
    if seed is not None and "seed" not in trusted:
        s = V.as_tensor(seed, "seed", A.device)
        if s.dtype == torch.bool or s.dtype not in V.INT_DTYPES:
            raise TypeError(f"seed: seed indices must be an integer tensor, got dtype {s.dtype}")
        if s.dim() != 1 or (C is not None and s.shape[0] != C):
            raise ValueError(
                f"seed: expected one seed index per column (shape ({C},)), got shape "
                f"{tuple(s.shape)}"
            )
        s = out["seed"] = s.to(torch.int64)
        if s.numel():
            V.fail_if(
                s.min() < 0, ValueError, lambda v: f"seed: seed index {v} is negative", s.min()
            )
    if probs is not None and "probs" not in trusted:
        out["probs"] = V.probabilities(probs, "probs", A.nnz, A.device, "edge", values=False)
    return out


#: ``temporal_walk``'s directions: each step at or after the previous one (CTDNE's
#: time-respecting walks), or at or before it (back in time from the seed, as causal walks
#: explore a node's past)
TEMPORAL_DIRECTIONS = ("later", "earlier")

#: floating-point edge-time tensors found free of NaN: ``id -> (weak reference, version)``
#: (a graph's times are checked once, not on every walk over them; a few kept)
_NAN_FREE: dict = {}


def _no_nan(t: torch.Tensor, name: str, remember: bool = False) -> None:
    """Raise a ValueError naming ``name`` when the times ``t`` hold a NaN (no order: a step
    could neither be before nor after it). ``remember``: a tensor found clean is not read
    again while unchanged (a graph's edge times)."""
    if not t.is_floating_point() or not t.numel():
        return
    hit = _NAN_FREE.get(id(t))
    if hit is not None and hit[0]() is t and hit[1] == t._version:
        return
    V.fail_if(torch.isnan(t).any(), ValueError, f"{name}: contains NaN (not a time)")
    if remember and not V.deferring(t):  # a deferred flag is not known yet: not clean yet
        if len(_NAN_FREE) >= 8:
            _NAN_FREE.clear()
        _NAN_FREE[id(t)] = (weakref.ref(t), t._version)


def check_temporal_walk(A, seeds, edge_time, time=None, length=0, trusted=(), in_kernel=(), **_):
    """``A.temporal_walk`` / ``A.temporal_walk_edges``: the whole graph, seeds in range
    (unless the op's kernel checks them), ``length < 2**31``, ``edge_time`` one time per edge
    of ``A`` and ``time`` one per seed, integer or floating point, both of one kind (times
    are compared exactly), no NaN."""
    _whole_graph(A, "temporal_walk")
    if length >= 1 << 31:  # a step's draws are numbered step * 2**32 + slot
        raise ValueError(f"length: must be < 2**31, got {length}")
    out = {}
    s = seeds
    if "seeds" not in trusted:
        s = out["seeds"] = V.ids(
            seeds, "seeds", A.num_nodes, A.device, check_range="seeds" not in in_kernel
        )
    # a trusted frontier may be bounded (its exact length is on the device)
    W = s.shape[0] if isinstance(s, torch.Tensor) else None
    most = s.bound if isinstance(s, BoundedIds) else W if W is not None else len(s)
    V.fits(most * (length + 1), 8, A.device, "length", f"{most} walks of {length} steps")
    et = out["edge_time"] = _times(edge_time, "edge_time", A.nnz, A.device)
    _no_nan(et, "edge_time", remember=True)
    if time is not None:
        if "time" in trusted:  # carried times, perhaps in bounded buffers: their dtype only
            t = getattr(time, "data", time)
        else:
            t = out["time"] = _times(
                time, "time", W if W is not None else len(time), A.device, what="seed"
            )
        if t.is_floating_point() != et.is_floating_point():
            raise TypeError(
                f"time: dtype {t.dtype} but edge_time is {et.dtype}; give both as integers "
                "or both as floating point (times are compared exactly)"
            )
        if "time" not in trusted:
            _no_nan(t, "time")
    return out
