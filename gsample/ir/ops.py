"""The op table: every operator of gsample, declared once.

Each :class:`Op` has one :class:`OpDef`, the only place that says what the op is:

* its named inputs (:class:`In`: a matrix, or a tensor and how it lines up with the
  op's matrix, an :class:`Align`), typed static attributes (:class:`Attr`, each with its
  check), and the kind of value it returns and how that lines up;
* its effect (pure or random), its ECSF step, and whether a matrix result keeps the
  layout its input was read in;
* its data checks (a function of the op's inputs in :mod:`.checks`, run where untrusted
  data enters an op: every eager call, a compiled program's boundary);
* its size rules: an estimate (the layout pass's cost model) and, where one exists, an
  upper bound computable from the inputs' buffer sizes (the runtime allocates from it);
* how the tracer captures it: the ``gs.Matrix`` methods, properties and Python
  operators that become this op.

The vocabulary (:class:`OpDef` and its parts, the :class:`Op` names) is in :mod:`.opdef`,
the size rules in :mod:`.size_rules`; both are re-exported here. Which layouts an op runs on
is not here: each backend registers implementations keyed by
``(op, layout)`` (``gsample.backend``), and passes read the capabilities of the backend
a program is compiled for. Nothing else names ops, input names or argument positions.
"""

from __future__ import annotations

from gsample.base import validate as V
from gsample.ir.checks import (
    TEMPORAL_DIRECTIONS,
    TEMPORAL_STRATEGIES,
    check_alias_table,
    check_broadcast,
    check_collective,
    check_cols,
    check_edge_map,
    check_filter_edges,
    check_first_reached,
    check_from_neighbors,
    check_fused,
    check_fused_walk,
    check_individual,
    check_listed,
    check_positions,
    check_random_draws,
    check_random_walk,
    check_rows,
    check_rows_cols,
    check_sddmm,
    check_spmm,
    check_spmm_t,
    check_temporal,
    check_temporal_walk,
)
from gsample.ir.opdef import (
    BROADCAST_OPS,
    EXAMPLE_PROGRAM,
    LAYOUTS,
    MAP_OPS,
    REDUCE_OPS,
    SDDMM_OPS,
    TOTAL_OPS,
    Align,
    Attr,
    Capture,
    Effect,
    In,
    Kind,
    Op,
    OpDef,
    Size,
    Step,
    _choice,
)
from gsample.ir.size_rules import (
    COUNT_DISTS,
    WALK_PROBS,
    _collective,
    _collective_bound,
    _count_attrs,
    _fused,
    _fused_bound,
    _individual,
    _individual_bound,
    _n,
    _neighbor_lists,
    _per_entry,
    _positive,
    _same,
    _slice_cols,
    _slice_rows,
    _tensor,
    _trials,
    _walk,
    _walk_prob,
)

# ----------------------------------------------------------------------------- the table
P, R = Effect.PURE, Effect.RANDOM
M, T = Kind.MATRIX, Kind.TENSOR
_A = In("A", matrix=True)
_K = Attr("k", lambda k: V.count(k, "k"), what="int")
_REPLACE = Attr("replace", lambda r: V.flag(r, "replace"), False, what="bool")
_AXIS = Attr("axis", V.axis, what="int")
#: how weighted individual draws with replacement are made: inverse CDF or alias tables
SAMPLE_METHODS = ("cdf", "alias")
_METHOD = Attr(
    "method", _choice("method", SAMPLE_METHODS), "cdf", what="str", example="cdf", required=False
)
_ALIAS_IN = In("alias", Align.EDGES, optional=True, derived=Op.ALIAS_TABLE)
_FUSED_DOC = (
    "edge maps and broadcasts evaluated in one pass over A's values. Inputs: A and operands "
    "'0', '1', ... (tensors). 'program' is a tuple of steps (op, operand, reverse, scalar, "
    "axis), applied in order to each edge value x: op in add/sub/mul/div/pow/neg; y is the "
    "scalar (operand None), operand[e] (axis None: one value per edge), operand[col(e)] "
    "(axis 0) or operand[row(e)] (axis 1); x = op(y, x) if reverse else op(x, y); dtype "
    "promotion as edge_map (gsample.passes.fuse_edge_map documents it)"
)
_FIRST_REACHED_METHOD = """Disjoint sampling's next frontier: the *(seed slot, node)* pairs
first reached by their seed.

``s`` is a hop's sample whose columns are the frontier's pairs (a node of two trees is two
columns); ``slot[c]`` is the tree (seed slot) of column ``c``. Each edge ``(r, c)`` reaches
the pair ``(slot[c], r)``; the result is the pairs reached that are not in ``state``
(default: ``s``'s own columns' pairs, the seeds at the first hop), unique, ordered by slot
then node id. One read-back (the result's size).

Parameters
----------
slot : LongTensor, shape (C,), optional
    Each column's seed slot, ``>= 0``; default every column's is 0: one tree, the nodes first
    reached (PyG's shared sampling) (a pair is a 64-bit key: ``slot * n`` must stay
    below ``2**62`` for a graph of ``n`` nodes, ``n`` times the mini-batches super-batched).
state : Tensor, optional
    The previous call's ``state`` (every pair reached so far).
carry : Tensor, shape (C,), optional
    A value per column carried to the pairs it reaches (the seed's time): a pair gets the
    value of the first column (in column order) that reached it.

Returns
-------
nodes : LongTensor, shape (M,)
    The new pairs' nodes.
slot : LongTensor, shape (M,)
    Their seed slots.
carry : Tensor, shape (M,), or None
    ``carry`` of the column that reached each pair first (None without ``carry``).
state : LongTensor
    Every pair reached so far: pass it to the next hop's call.

Examples
--------
>>> import torch, gsample as gs
>>> A = gs.datasets.rmat(100, 500, seed=0)
>>> seeds, time = torch.tensor([0, 1, 2]), torch.tensor([5, 5, 8])
>>> slot = A.positions(seeds)                     # one tree per seed
>>> s = A.temporal_sample(seeds, 10, seed=slot)
>>> nodes, slot, time, state = s.first_reached(slot, carry=time)
>>> nodes.shape == slot.shape == time.shape       # (M,): the next hop's frontier
True
"""

_FUSED_WALK_DOC = (
    "gs.walk(step, A, seeds, length) as one op (made by gsample.capture.walks when the step is "
    "per-walker): 'first' and 'phases' are the step's bodies (gsample.ir.walk_body: small "
    "programs of per-walker code), the first step's and step s's = phases[s % len(phases)]; "
    "operands '0', '1', ... are graph-level values the bodies read (degrees). Takes "
    "attrs['num_ordinals'] op ordinals from attrs['ordinal'] on: step s's random op j has "
    "the ordinal the unrolled program gives it. A LongTensor (len(seeds), length + 1)"
)
_FILTER_EDGES_METHOD = """The edges a mask keeps; every column stays, possibly empty.

Parameters
----------
keep : BoolTensor, shape (E,)
    One flag per edge, in the order of ``values`` and ``edges()``.

Returns
-------
Matrix
    Same row and column spaces; the kept edges in their order, with their values and
    edge ids. A column none of whose edges is kept is empty (where
    ``individual_sample`` with 0/1 ``probs`` would refuse an all-zero column).

Examples
--------
>>> import torch, gsample as gs
>>> A = gs.datasets.rmat(100, 500, seed=0)
>>> sub = A[:, torch.tensor([0, 1, 2])].mul(torch.tensor([0.2, 0.6, 1.0]), axis=0)
>>> heavy = sub.filter_edges(sub.values > 0.5)
>>> heavy.shape == sub.shape
True
>>> heavy.degree(axis=0)                          # column 0's edge is dropped
tensor([ 0, 10,  1])
"""


def _fanout(k):
    """``temporal_sample``'s ``k``: edges per column, ``-1`` for every allowed one."""
    if isinstance(k, int) and not isinstance(k, bool) and k == -1:
        return -1
    return V.count(k, "k")


def _window(w):
    """``temporal_sample``'s ``window``: None, or a positive finite time span."""
    if w is None:
        return None
    w = V.real(w, "window")
    if not 0 < w < float("inf"):
        raise ValueError(f"window: must be a positive, finite time span, got {w!r}")
    return w


#: ``temporal_sample``'s strategies (``gsample.ir.checks.TEMPORAL_STRATEGIES``)
_STRATEGY = Attr(
    "strategy",
    _choice("strategy", TEMPORAL_STRATEGIES),
    "uniform",
    what="str",
    example="uniform",
    required=False,
)
_TEMPORAL_DOC = (
    "A.temporal_sample(cols, k, time, edge_time, seed, probs, replace, strategy, window): "
    "A[:, cols] restricted, column by column, to the edges allowed at the column's time "
    "(edge_time <= time[c], and > time[c] - window), then k of them sampled per column "
    "(-1: all; 'last': among the k most recent, ties by edge id), uniformly or by probs "
    "(A's edges), every column's draws keyed by its seed (combine(key, seed[c])) and its "
    "position among that seed's columns; without seed, by its position (then, without "
    "times, what A[:, cols].individual_sample(k) draws)"
)

_WINDOW_ATTR = Attr("window", _window, None, what="number", example=None, required=False)

#: ``temporal_walk``'s and ``temporal_walk_edges``' attributes
_TEMPORAL_WALK_ATTRS = (
    Attr("length", lambda n: V.count(n, "length"), what="int", example=8),
    Attr(
        "direction",
        _choice("direction", TEMPORAL_DIRECTIONS),
        "later",
        what="str",
        example="later",
        required=False,
    ),
    Attr(
        "strict", lambda v: V.flag(v, "strict"), False, what="bool", example=False, required=False
    ),
)
_TEMPORAL_WALK_DOC = (
    "A.temporal_walk(seeds, length, edge_time, time, direction, strict): a LongTensor "
    "(len(seeds), length + 1) of in-neighbour walks whose step s + 1 takes an edge of time "
    ">= (direction 'later'; > with strict) or <= ('earlier'; <) step s's edge time, the "
    "first step's bound time[w] (none without time), uniformly among the allowed edges of "
    "the current node (found by a binary search in its time order); -1 after a walk with "
    "no allowed edge"
)
_TEMPORAL_WALK_EDGES_DOC = (
    "A.temporal_walk_edges(seeds, length, edge_time, time, direction, strict): the edge ids "
    "(A's, as edges()[2]) of the steps of the walks temporal_walk draws with the same key, "
    "a LongTensor (len(seeds), length), -1 after a stop"
)

_DEFS = [
    OpDef(
        Op.INPUT,
        P,
        Step.GRAPH,
        (),
        (Attr("name"), Attr("kind")),
        Kind.ANY,
        doc="a traced argument (a matrix arrives as a CSC)",
    ),
    OpDef(Op.CONSTANT, P, Step.GRAPH, (), (Attr("value"),), Kind.ANY, doc="a captured value"),
    OpDef(
        Op.DENSE,
        P,
        Step.GRAPH,
        (),
        (Attr("fn"), Attr("template")),
        Kind.ANY,
        takes_any=True,
        doc="torch code on dense values; 'template' holds the call's arguments",
    ),
    OpDef(Op.GETITEM, P, Step.GRAPH, (In("x"),), (Attr("index"),), T, doc="x[index] of a tuple"),
    OpDef(
        Op.OUTPUT,
        P,
        Step.GRAPH,
        (),
        (Attr("template"),),
        Kind.NONE,
        takes_any=True,
        doc="the returned values",
    ),
    OpDef(
        Op.CACHED,
        P,
        Step.GRAPH,
        (In("graph", matrix=True),),
        (Attr("program"), Attr("kind")),
        Kind.ANY,
        doc="a graph-only value computed once per graph and reused (its layout is its program's)",
    ),
    OpDef(
        Op.TO_LAYOUT,
        P,
        Step.COMPUTE,
        (_A,),
        (Attr("layout", _choice("layout", LAYOUTS)),),
        M,
        keeps_layout=False,
        edges="same",
        estimate=_same,
        bound=_same,
        doc="A in layout 'layout' (csc, csr, csr-compact or coo); exact, samples unchanged",
    ),
    # extract
    OpDef(
        Op.SLICE_COLS,
        P,
        Step.EXTRACT,
        (_A, In("cols", Align.NEW_COLS)),
        (),
        M,
        check=check_cols,
        estimate=_slice_cols,
        bound=lambda A, ins, at: Size(A.nnz, A.rows, _n(ins, "cols")),
        doc="A[:, cols]",
    ),
    OpDef(
        Op.SLICE_ROWS,
        P,
        Step.EXTRACT,
        (_A, In("rows", Align.NEW_ROWS)),
        (),
        M,
        check=check_rows,
        estimate=_slice_rows,
        bound=lambda A, ins, at: Size(A.nnz, _n(ins, "rows"), A.cols),
        doc="A[rows, :]",
    ),
    OpDef(
        Op.SLICE_ROWS_COLS,
        P,
        Step.EXTRACT,
        (_A, In("rows", Align.NEW_ROWS), In("cols", Align.NEW_COLS)),
        (Attr("batches", required=False, internal=True),),
        M,
        batched=True,
        check=check_rows_cols,
        estimate=lambda A, ins, at: _slice_rows(_slice_cols(A, ins, at), ins, at),
        bound=lambda A, ins, at: Size(A.nnz, _n(ins, "rows"), _n(ins, "cols")),
        doc="A[rows, cols] (the rows of the column slice) without building the column "
        "slice; made by fuse_extract_extract; 'batches' (N, n): rows and cols are a "
        "super-batch's encoded ids, each mini-batch's edges those of its own A[rows, cols]",
    ),
    # compute
    OpDef(
        Op.EDGE_MAP,
        P,
        Step.COMPUTE,
        (_A, In("other", Align.EDGES, optional=True, edge_values=True)),
        (
            Attr("op", _choice("op", MAP_OPS), example="mul"),
            Attr("reverse", example=False),
            Attr("scalar", example=2.0),
        ),
        M,
        keeps_layout=True,
        edges="same",
        check=check_edge_map,
        estimate=_same,
        bound=_same,
        capture=Capture(),
        doc="A * x, A + x, A ** p, ... (x: scalar attr, or an edge tensor)",
    ),
    OpDef(
        Op.EDGE_BROADCAST,
        P,
        Step.COMPUTE,
        (_A, In("vector", Align.AXIS)),
        (Attr("op", _choice("op", BROADCAST_OPS), example="div"), _AXIS),
        M,
        keeps_layout=True,
        edges="same",
        check=check_broadcast,
        estimate=_same,
        bound=_same,
        capture=Capture(methods=BROADCAST_OPS, params={"v": "vector"}),
        doc="A.div(v, axis)",
    ),
    OpDef(
        Op.REDUCE,
        P,
        Step.COMPUTE,
        (_A,),
        (Attr("op", _choice("op", REDUCE_OPS), example="sum"), _AXIS),
        T,
        out=Align.AXIS,
        capture=Capture(methods=REDUCE_OPS, when_none={"axis": Op.TOTAL}),
        doc="A.sum(axis)",
    ),
    OpDef(
        Op.TOTAL,
        P,
        Step.COMPUTE,
        (_A,),
        (
            Attr("op", _choice("op", TOTAL_OPS), example="sum"),
            Attr("batches", required=False, internal=True),
        ),
        T,
        out=Align.SCALAR,
        doc="A.sum() (no axis): the sum of every edge value, a 0-dim tensor of the values' "
        "dtype, the same bits in any edge order, layout, device and backend (62-bit fixed "
        "point at the largest term's binary exponent, added in 128-bit integers: "
        "gsample.backend.torch.compute.exact_sums); 'batches' (N, n): A is a super-batch "
        "and the result the N mini-batches' sums, shape (N,)",
    ),
    OpDef(
        Op.DEGREE,
        P,
        Step.COMPUTE,
        (_A,),
        (_AXIS,),
        T,
        out=Align.AXIS,
        structure_only=True,
        capture=Capture(
            methods=("degree",),
            doc="""Edges per column (``axis=0``, shape (C,)) or per row (``axis=1``, shape (R,)).

            The count of stored edges, whatever their values (``A.sum(axis)`` adds the
            values); an int64 tensor, 0 where a column or row is empty.

            Examples
            --------
            >>> import torch, gsample as gs
            >>> A = gs.Matrix.from_edge_index(torch.tensor([[0, 0, 1], [1, 2, 2]]))
            >>> A.degree(axis=0)                        # in-degrees
            tensor([0, 1, 2])
            >>> A[:, torch.tensor([2, 2])].degree(axis=1)
            tensor([2, 2, 0])
            """,
        ),
        doc="A.degree(axis): edges per column (axis 0) or per row (axis 1), int64",
    ),
    OpDef(
        Op.SPMM,
        P,
        Step.COMPUTE,
        (_A, In("dense", Align.COLS)),
        (),
        T,
        out=Align.ROWS,
        check=check_spmm,
        doc="A @ D",
    ),
    OpDef(
        Op.SPMM_T,
        P,
        Step.COMPUTE,
        (_A, In("dense", Align.ROWS)),
        (),
        T,
        out=Align.COLS,
        check=check_spmm_t,
        doc="A.T @ D",
    ),
    OpDef(
        Op.SDDMM,
        P,
        Step.COMPUTE,
        (_A, In("u", Align.ROWS), In("v", Align.COLS)),
        (Attr("op", _choice("op", SDDMM_OPS), example="mul"),),
        M,
        keeps_layout=True,
        edges="same",
        check=check_sddmm,
        estimate=_same,
        bound=_same,
        doc="gs.sddmm(A, U, V, op)",
    ),
    OpDef(
        Op.TRANSPOSE,
        P,
        Step.COMPUTE,
        (_A,),
        (),
        M,
        estimate=lambda A, ins, at: Size(A.nnz, A.cols, A.rows),
        bound=lambda A, ins, at: Size(A.nnz, A.cols, A.rows),
        capture=Capture(properties=("T",)),
        doc="A.T",
    ),
    OpDef(
        Op.VALUES,
        P,
        Step.COMPUTE,
        (_A,),
        (),
        T,
        out=Align.EDGES,
        capture=Capture(properties=("values",)),
        doc="A.values",
    ),
    OpDef(
        Op.ROW_IDS,
        P,
        Step.FINALIZE,
        (_A,),
        (),
        T,
        out=Align.ROW_IDS,
        structure_only=True,
        capture=Capture(properties=("row_ids",)),
        doc="A.row_ids",
    ),
    OpDef(
        Op.COL_IDS,
        P,
        Step.FINALIZE,
        (_A,),
        (),
        T,
        out=Align.COL_IDS,
        structure_only=True,
        capture=Capture(properties=("col_ids",)),
        doc="A.col_ids",
    ),
    OpDef(
        Op.FUSED_EDGE_MAP,
        P,
        Step.COMPUTE,
        (_A,),
        (Attr("program", example=EXAMPLE_PROGRAM),),
        M,
        variadic=Align.STEPS,
        keeps_layout=True,
        edges="same",
        check=check_fused,
        estimate=_same,
        bound=_same,
        doc=_FUSED_DOC,
    ),
    OpDef(
        Op.FUSED_EDGE_MAP_REDUCE,
        P,
        Step.COMPUTE,
        (_A,),
        (
            Attr("program", example=EXAMPLE_PROGRAM),
            Attr("op", _choice("op", REDUCE_OPS), example="sum"),
            _AXIS,
        ),
        T,
        out=Align.AXIS,
        variadic=Align.STEPS,
        check=check_fused,
        doc="a fused_edge_map program, then A.sum/max/mean(axis) of its values in the same "
        "evaluation",
    ),
    OpDef(
        Op.FUSED_EDGE_NORMALIZE,
        P,
        Step.COMPUTE,
        (_A,),
        (
            Attr("program", example=EXAMPLE_PROGRAM),
            Attr("reduce", _choice("reduce", REDUCE_OPS), example="sum"),
            Attr("op", _choice("op", BROADCAST_OPS), example="div"),
            _AXIS,
        ),
        M,
        variadic=Align.STEPS,
        keeps_layout=True,
        edges="same",
        check=check_fused,
        estimate=_same,
        bound=_same,
        doc="a fused_edge_map program's values x, then x.op(x.reduce(axis), axis) in one "
        "op: X.div(X.sum(axis=0), axis=0), a column normalisation, without the "
        "reduction's vector or the mapped matrix between them (made by "
        "fuse_edge_normalize)",
    ),
    OpDef(
        Op.SLICE_REDUCE,
        P,
        Step.COMPUTE,
        (_A, In("cols", Align.NEW_COLS), In("scale", Align.SCALAR, optional=True)),
        (
            Attr("op", _choice("op", REDUCE_OPS), example="sum"),
            _AXIS,
            Attr("batches", required=False, internal=True),
        ),
        T,
        out=Align.AXIS,
        batched=True,
        check=check_cols,
        estimate=lambda A, ins, at: Size(rows=_n(ins, "cols") if at["axis"] == 0 else A.rows),
        bound=lambda A, ins, at: Size(rows=_n(ins, "cols") if at["axis"] == 0 else A.rows),
        doc="A[:, cols].sum/max/mean(axis) without the slice; 'batches' (N, n): cols is a "
        "super-batch's encoded frontier and axis 1 gives the N * n encoded rows; 'scale' (a "
        "0-dim tensor; a super-batch's: one a mini-batch, (N,)): the result divided by it, "
        "r / scale, as the program's own division (made by the scaled_row_sums pass from "
        "LADIES's p / p_total: the CUDA finish divides as it writes, no pass over the rows)",
    ),
    OpDef(
        Op.SLICE_TOTAL,
        P,
        Step.COMPUTE,
        (_A, In("cols", Align.NEW_COLS)),
        (
            Attr("op", _choice("op", TOTAL_OPS), example="sum"),
            Attr("batches", required=False, internal=True),
        ),
        T,
        out=Align.SCALAR,
        batched=True,
        check=check_cols,
        doc="A[:, cols].sum() (no axis) without the slice: the bits of total on the slice "
        "(made by fuse_extract_reduce); 'batches' (N, n): cols is a super-batch's encoded "
        "frontier and the result the N mini-batches' sums, shape (N,)",
    ),
    # select
    OpDef(
        Op.INDIVIDUAL_SAMPLE,
        R,
        Step.SELECT,
        (_A, In("probs", Align.EDGES, optional=True, edge_values=True), _ALIAS_IN),
        (_K, _REPLACE, _METHOD),
        M,
        check=check_individual,
        estimate=_individual,
        bound=_individual_bound,
        capture=Capture(methods=("individual_sample",)),
        doc="A.individual_sample(k, probs, replace, method); 'alias': alias tables of A "
        "for probs (alias_table), set by pre-processing for method 'alias'",
    ),
    OpDef(
        Op.COLLECTIVE_SAMPLE,
        R,
        Step.SELECT,
        (_A, In("node_probs", Align.ROWS, optional=True)),
        (_K, _REPLACE),
        M,
        check=check_collective,
        estimate=_collective,
        bound=_collective_bound,
        capture=Capture(methods=("collective_sample",)),
        doc="A.collective_sample(k, node_probs, replace)",
    ),
    OpDef(
        Op.SLICE_INDIVIDUAL_SAMPLE,
        R,
        Step.SELECT,
        (_A, In("cols", Align.NEW_COLS), In("probs", Align.EDGES, optional=True), _ALIAS_IN),
        (_K, _REPLACE, _METHOD),
        M,
        check=check_individual,
        estimate=_fused(_individual),
        bound=_fused_bound(_individual_bound),
        doc="A[:, cols].individual_sample(k) without the slice (probs, alias: aligned with "
        "A's edges)",
    ),
    OpDef(
        Op.SLICE_COLLECTIVE_SAMPLE,
        R,
        Step.SELECT,
        (_A, In("cols", Align.NEW_COLS), In("node_probs", Align.ROWS, optional=True)),
        (
            _K,
            _REPLACE,
            Attr(
                "probs_in_slice",
                lambda v: V.flag(v, "probs_in_slice"),
                False,
                what="bool",
                example=False,
                required=False,
                internal=True,
            ),
        ),
        M,
        check=check_collective,
        estimate=_fused(_collective),
        doc="A[:, cols].collective_sample(k) without the slice; probs_in_slice (set by the "
        "probs_support pass): node_probs is 0 at every row without an edge in the "
        "slice, so its positive rows are the candidates",
    ),
    OpDef(
        Op.LISTED_COLLECTIVE_SAMPLE,
        R,
        Step.SELECT,
        (
            _A,
            In("cols", Align.NEW_COLS),
            In("row_weights", Align.EDGES),
            In("scale", Align.SCALAR),
        ),
        (_K, _REPLACE),
        M,
        check=check_listed,
        estimate=_fused(_collective),
        doc="A[:, cols].collective_sample(k, node_probs=p, replace) where p = W[:, cols]"
        ".sum(axis=1) / scale, W a matrix of A's edges whose values are row_weights: p "
        "evaluated at the slice's rows only (listed: no tensor over A's rows), the bits "
        "the dense p has there, so the same draws (made by the listed_rows pass from "
        "LADIES's slice_reduce, division and slice_collective_sample)",
    ),
    OpDef(
        Op.ALIAS_TABLE,
        P,
        Step.COMPUTE,
        (_A, In("probs", Align.EDGES, edge_values=True)),
        (),
        T,
        out=Align.EDGES,
        check=check_alias_table,
        doc="alias tables of A's columns for weights 'probs' (E,): a LongTensor (E, 2), "
        "per edge slot the threshold (53-bit fixed point) and the alias edge "
        "(gsample.backend.torch.walk documents the layout); pure: hoisted once per "
        "graph by pre-processing when probs depend on the graph only",
    ),
    OpDef(
        Op.RANDOM_WALK,
        R,
        Step.SELECT,
        (_A, In("seeds", Align.NEW_COLS), In("alias", Align.EDGES, optional=True)),
        (
            Attr("length", lambda n: V.count(n, "length"), what="int", example=8),
            _positive("p"),
            _positive("q"),
            *(_walk_prob(n) for n in WALK_PROBS),
        ),
        T,
        out=Align.WALKS,
        check=check_random_walk,
        estimate=_walk,
        bound=_walk,
        capture=Capture(
            methods=("random_walk",), params={"probs": "alias"}, derive={"alias": Op.ALIAS_TABLE}
        ),
        doc="A.random_walk(seeds, length, probs, p, q, stop_prob, restart_prob, jump_prob): "
        "a LongTensor (len(seeds), length + 1) of in-neighbour walks, -1 after a stop",
    ),
    OpDef(
        Op.FUSED_WALK,
        R,
        Step.SELECT,
        (_A, In("seeds", Align.NEW_COLS)),
        (
            Attr("first"),
            Attr("phases"),
            Attr("length", lambda n: V.count(n, "length"), what="int", example=8),
        ),
        T,
        out=Align.WALKS,
        variadic=Align.ROWS,
        check=check_fused_walk,
        estimate=_walk,
        bound=_walk,
        doc=_FUSED_WALK_DOC,
    ),
    OpDef(
        Op.RANDOM_UNIFORM,
        R,
        Step.SELECT,
        (_A, In("nodes", Align.NEW_COLS)),
        (),
        T,
        out=Align.ENTRIES,
        check=check_random_draws,
        estimate=_per_entry,
        bound=_per_entry,
        capture=Capture(methods=("random_uniform",)),
        doc="A.random_uniform(nodes): a float64 uniform in [0, 1) per entry of nodes, "
        "(word >> 11) * 2**-53 of the entry's key (its position in nodes, draw 0)",
    ),
    OpDef(
        Op.RANDOM_COUNT,
        R,
        Step.SELECT,
        (_A, In("nodes", Align.NEW_COLS)),
        (
            Attr(
                "dist", _choice("dist", COUNT_DISTS), "geometric", what="str", example="geometric"
            ),
            Attr("p", lambda x: V.probability(x, "p"), 0.5, what="float", example=0.5),
            Attr("n", _trials, None, what="int", example=None, required=False),
        ),
        T,
        out=Align.ENTRIES,
        check=check_random_draws,
        attrs_check=_count_attrs,
        estimate=_per_entry,
        bound=_per_entry,
        capture=Capture(methods=("random_count",)),
        doc="A.random_count(nodes, dist, p, n): an int64 count per entry of nodes, "
        "geometric (P(x) = (1 - p) p^x) or binomial(n, p), by inversion of one keyed "
        "word per entry against a table of thresholds (gsample.base.random.count_table)",
    ),
    OpDef(
        Op.FILTER_EDGES,
        P,
        Step.SELECT,
        (_A, In("keep", Align.EDGES)),
        (),
        M,
        edges="subset",
        check=check_filter_edges,
        estimate=lambda A, ins, at: Size(A.nnz / 2, A.rows, A.cols),
        bound=_same,
        capture=Capture(methods=("filter_edges",), doc=_FILTER_EDGES_METHOD),
        doc="A.filter_edges(keep): the edges where keep (bool, (E,)) is True, in order, "
        "with their values and edge ids; the row and column spaces unchanged (a "
        "column may become empty)",
    ),
    OpDef(
        Op.TEMPORAL_SAMPLE,
        R,
        Step.SELECT,
        (
            _A,
            In("cols", Align.NEW_COLS),
            In("probs", Align.EDGES, optional=True, edge_values=True),
            In("time", Align.ENTRIES, optional=True),
            In("edge_time", Align.EDGES, optional=True),
            In("seed", Align.ENTRIES, optional=True, ordered=True),
        ),
        (Attr("k", _fanout, what="int", example=10), _REPLACE, _STRATEGY, _WINDOW_ATTR),
        M,
        check=check_temporal,
        estimate=lambda A, ins, at: (
            _slice_cols(A, ins, at) if at["k"] < 0 else _fused(_individual)(A, ins, at)
        ),
        bound=lambda A, ins, at: (
            None if at["k"] < 0 else _fused_bound(_individual_bound)(A, ins, at)
        ),
        capture=Capture(methods=("temporal_sample",)),
        doc=_TEMPORAL_DOC,
    ),
    *(
        OpDef(
            op,
            R,
            Step.SELECT,
            (
                _A,
                In("seeds", Align.NEW_COLS),
                In("edge_time", Align.EDGES),
                In("time", Align.ENTRIES, optional=True),
            ),
            _TEMPORAL_WALK_ATTRS,
            T,
            out=out,
            check=check_temporal_walk,
            estimate=_walk,
            bound=_walk,
            capture=Capture(methods=(op.value,)),
            doc=doc,
        )
        for op, out, doc in (
            (Op.TEMPORAL_WALK, Align.WALKS, _TEMPORAL_WALK_DOC),
            (Op.TEMPORAL_WALK_EDGES, Align.ENTRIES, _TEMPORAL_WALK_EDGES_DOC),
        )
    ),
    OpDef(
        Op.FROM_NEIGHBORS,
        P,
        Step.SELECT,
        (
            _A,
            In("cols", Align.NEW_COLS),
            In("neighbors", Align.WALKS),
            In("values", Align.ENTRIES, optional=True),
        ),
        (),
        M,
        batched=True,
        check=check_from_neighbors,
        estimate=_neighbor_lists,
        capture=Capture(methods=("from_neighbors",)),
        doc="A.from_neighbors(cols, neighbors, values=None): a block whose column j is "
        "cols[j] and holds the ids neighbors[j] (a (C, K) row, -1 after its last), "
        "with values[j] as values; A's row space (its nodes), any ids (not edges)",
    ),
    # finalize
    OpDef(
        Op.ROW,
        P,
        Step.FINALIZE,
        (_A,),
        (),
        T,
        out=Align.ROW_SET,
        structure_only=True,
        capture=Capture(
            methods=("row",),
            doc="""Global ids of the rows that hold at least one edge, in row-space order,
            shape (R',).

            Examples
            --------
            >>> import torch, gsample as gs
            >>> A = gs.datasets.rmat(100, 500, seed=0)
            >>> seeds = torch.tensor([0, 1, 2])
            >>> gs.manual_seed(0)
            >>> A[:, seeds].individual_sample(5).row()     # the sampled neighbours
            tensor([23, 55, 66, 80, 84])
            """,
        ),
        doc="A.row()",
    ),
    OpDef(
        Op.COLUMN,
        P,
        Step.FINALIZE,
        (_A,),
        (),
        T,
        out=Align.COL_IDS,
        structure_only=True,
        capture=Capture(
            methods=("column",),
            doc="Global ids of the columns (the frontier, repeats kept), shape (C,).",
        ),
        doc="A.column()",
    ),
    OpDef(
        Op.ALL_NODES,
        P,
        Step.FINALIZE,
        (_A,),
        (Attr("batches", required=False, internal=True),),
        T,
        out=Align.NODE_SET,
        structure_only=True,
        remembered=True,
        capture=Capture(
            methods=("all_nodes",),
            doc="""The next frontier: columns first, then new rows; unique, shape (n,).

            Columns keep their first occurrence order; rows not among the columns
            follow in row-space order.

            Examples
            --------
            >>> import torch, gsample as gs
            >>> A = gs.datasets.rmat(100, 500, seed=0)
            >>> seeds = torch.tensor([0, 1, 2])
            >>> gs.manual_seed(0)
            >>> A[:, seeds].individual_sample(5).all_nodes()   # the next hop's seeds
            tensor([ 0,  1,  2, 23, 55, 66, 80, 84])
            """,
        ),
        doc="A.all_nodes(); 'batches' (N, n): A is a super-batch of N mini-batches of n "
        "nodes, and the ids come grouped by mini-batch (each its columns, then rows)",
    ),
    OpDef(
        Op.POSITIONS,
        P,
        Step.FINALIZE,
        (_A, In("nodes", Align.NEW_COLS)),
        (Attr("batches", required=False, internal=True),),
        T,
        out=Align.ENTRIES,
        structure_only=True,
        ordered_out=(None,),  # 0, 1, ... in each mini-batch
        batched=True,
        check=check_positions,
        capture=Capture(
            methods=("positions",),
            doc="""Each entry's position in the frontier ``nodes``: ``0 .. len(nodes) - 1``
            (in a super-batch, each mini-batch's own), shape (len(nodes),), int64.

            Disjoint sampling's seed slots: ``slot = A.positions(seeds)`` numbers the trees
            without per-mini-batch code when mini-batches are super-batched.

            Examples
            --------
            >>> import torch, gsample as gs
            >>> A = gs.datasets.rmat(100, 500, seed=0)
            >>> A.positions(torch.tensor([7, 3, 7]))
            tensor([0, 1, 2])
            """,
        ),
        doc="A.positions(nodes): arange(len(nodes)); 'batches' (N, n): nodes is a super-batch's "
        "encoded frontier, each mini-batch's entries numbered from 0",
    ),
    OpDef(
        Op.FIRST_REACHED,
        P,
        Step.FINALIZE,
        (
            _A,
            In("slot", Align.COLS, optional=True),
            In("state", Align.STATE, optional=True),
            In("carry", Align.COLS, optional=True),
        ),
        (Attr("batches", required=False, internal=True),),
        Kind.TUPLE,
        out=(Align.ROW_SET, Align.PAIRED, Align.PAIRED, Align.STATE),
        structure_only=True,
        ordered_out=(1,),  # the pairs by slot: their slots ascending
        check=check_first_reached,
        capture=Capture(methods=("first_reached",), doc=_FIRST_REACHED_METHOD),
        doc="s.first_reached(slot, state, carry): disjoint sampling's next frontier, the "
        "(slot, row) pairs of s's edges (slot: each column's tree) not in state (default: "
        "s's columns' pairs), by slot then node id; (nodes, slot, carry, state'); "
        "'batches' (N, n): s is a super-batch, the pairs grouped by mini-batch",
    ),
    OpDef(
        Op.EDGES,
        P,
        Step.FINALIZE,
        (_A,),
        (),
        Kind.TUPLE,
        out=(Align.EDGE_IDS, Align.EDGE_IDS, Align.EDGES),
        capture=Capture(
            methods=("edges",),
            doc="""``(row ids, column ids, original edge ids)``, each a LongTensor of shape (E,).

            Examples
            --------
            >>> import torch, gsample as gs
            >>> A = gs.datasets.rmat(100, 500, seed=0)
            >>> seeds = torch.tensor([0, 1, 2])
            >>> src, dst, eid = A[:, seeds].individual_sample(10).edges()
            >>> src.shape == dst.shape == eid.shape
            True
            """,
        ),
        doc="A.edges()",
    ),
    OpDef(
        Op.COMPACT,
        P,
        Step.FINALIZE,
        (_A,),
        (),
        M,
        estimate=lambda A, ins, at: Size(A.nnz, A.nonempty_rows, A.cols),
        bound=lambda A, ins, at: Size(A.nnz, min(A.nnz, A.rows), A.cols),
        capture=Capture(
            methods=("compact",),
            doc="""This matrix with the rows that have no edges dropped from its row space.

            Examples
            --------
            >>> import torch, gsample as gs
            >>> A = gs.datasets.rmat(100, 500, seed=0)
            >>> seeds = torch.tensor([0, 1, 2])
            >>> sub = A[:, seeds].compact()
            >>> sub.shape[0] == len(sub.row())
            True
            """,
        ),
        doc="A.compact()",
    ),
]

OPS: dict = {d.op: d for d in _DEFS}
assert set(OPS) == set(Op) and len(_DEFS) == len(Op), "every Op needs exactly one OpDef"
assert all(d.attrs == tuple(dict.fromkeys(d.attrs)) for d in _DEFS)

#: Matrix method / property name -> op (the tracer's and the eager API's capture map)
METHODS = {m: d.op for d in _DEFS for m in d.capture.methods}
PROPERTIES = {p: d.op for d in _DEFS for p in d.capture.properties}


def info(op: Op) -> OpDef:
    """The :class:`OpDef` of ``op``."""
    return OPS[op]


def estimate(op: Op, A: Size | None, ins: dict, attrs: dict) -> Size | None:
    """Expected sizes of ``op``'s value (the cost model's rule), from its inputs' sizes."""
    d = OPS[op]
    if A is None:
        return None
    if d.estimate is not None:
        return d.estimate(A, ins, attrs)
    if d.out is not None:
        return _tensor(A, ins, attrs, d)
    return None


def bound(op: Op, A: Size, ins: dict, attrs: dict) -> Size | None:
    """Upper bounds of ``op``'s value from its inputs' buffer sizes (None: no usable bound)."""
    d = OPS[op]
    if d.bound is not None:
        return d.bound(A, ins, attrs)
    if d.out is not None and d.kind is Kind.TENSOR:
        return _tensor(A, ins, attrs, d)
    return None
