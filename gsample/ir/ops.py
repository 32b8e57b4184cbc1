"""The op table: every operator of gsample, declared once.

Each :class:`Op` has one :class:`OpDef`, the only place that says what the op is:

* its named inputs (:class:`In`: a matrix, or a tensor and how it lines up with the
  op's matrix, an :class:`Align`), typed static attributes (:class:`Attr`, each with its
  check), and the kind of value it returns and how that lines up;
* its effect (pure or random), its ECSF step, and whether a matrix result keeps the
  layout its input was read in;
* its data checks (a function of the op's inputs, run where untrusted data enters an
  op: every eager call, a compiled program's boundary);
* its size rules: an estimate (the layout pass's cost model) and, where one exists, an
  upper bound computable from the inputs' buffer sizes (the runtime allocates from it);
* how the tracer captures it: the ``gs.Matrix`` methods, properties and Python
  operators that become this op.

Which layouts an op runs on is not here: each backend registers implementations keyed by
``(op, layout)`` (``gsample.backend``), and passes read the capabilities of the backend
a program is compiled for. Nothing else names ops, input names or argument positions.
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Callable, Optional

from .. import validate as V


class Effect(enum.Enum):
    PURE = "pure"        # same inputs, same outputs: CSE may merge, DCE may drop
    RANDOM = "random"    # consumes an op ordinal of the random stream (DESIGN §3)


class Step(enum.Enum):
    EXTRACT = "extract"
    COMPUTE = "compute"
    SELECT = "select"
    FINALIZE = "finalize"
    GRAPH = "graph"      # program structure: inputs, constants, dense code, outputs


class Kind(enum.Enum):
    """What an IR value is."""
    MATRIX = "matrix"
    TENSOR = "tensor"
    TUPLE = "tuple"      # a fixed-size tuple of tensors (``edges()``), split by GETITEM
    ANY = "any"          # a dense op's result: tensor, number or a structure of them
    NONE = "none"        # the output node


#: sparse layouts (``gsample.formats``): CSC; CSR, plain or compact (only the rows with
#: edges stored); COO (CSC order plus each edge's column)
LAYOUTS = ("csc", "csr", "csr-compact", "coo")


class Align(enum.Enum):
    """How a tensor input or result lines up with the op's matrix ``A``.

    ``along`` is the dimension of ``A`` it runs along (``rows``, ``cols``, ``edges``; ``ids``
    and ``set`` for lists of node ids of their own length) and ``ids`` whether it holds node
    ids (which super-batching encodes as ``b * n + v``) rather than values.
    """
    ROWS = ("rows", False)           # one value per row of A's row space
    COLS = ("cols", False)           # one value per column
    EDGES = ("edges", False)         # one value per edge (an edge operand may be 0-dim)
    AXIS = ("axis", False)           # COLS when attrs["axis"] == 0, else ROWS
    STEPS = ("steps", False)         # a fused program's operand: as its steps use it
    ROW_IDS = ("rows", True)         # node ids, one per row
    COL_IDS = ("cols", True)         # node ids, one per column
    EDGE_IDS = ("edges", True)       # node ids, one per edge
    NEW_COLS = ("new cols", True)    # node ids that become the result's columns (a frontier)
    NEW_ROWS = ("new rows", True)    # node ids that become the result's rows
    ROW_SET = ("ids", True)          # ids of the rows holding edges, in row-space order
    NODE_SET = ("set", True)         # unique ids: the columns first, then new rows
    WALKS = ("walks", True)          # a row of node ids (a walk, -1 after a stop) per node of
                                     # the op's frontier (its NEW_COLS input)
    ENTRIES = ("entries", False)     # one value per entry of the op's frontier (its NEW_COLS
                                     # input), in that order

    @property
    def along(self) -> str:
        return self.value[0]

    @property
    def ids(self) -> bool:
        return self.value[1]

    def resolve(self, attrs: dict, name: Optional[str] = None) -> "Align":
        """``AXIS`` and ``STEPS`` made concrete from a node's attributes (``name``: the
        operand of a fused program)."""
        if self is Align.AXIS:
            return Align.COLS if attrs["axis"] == 0 else Align.ROWS
        if self is Align.STEPS:
            axes = {axis for _op, operand, _reverse, _scalar, axis in attrs["program"]
                    if operand == name}
            if None in axes or not axes:
                return Align.EDGES
            return Align.COLS if axes == {0} else Align.ROWS
        return self


@dataclass(frozen=True)
class In:
    """A named input of an op: an IR value."""
    name: str
    align: Optional[Align] = None    # a tensor's alignment with A (None: a matrix, or opaque)
    optional: bool = False
    matrix: bool = False             # the op's matrix (``A``, ``graph``)
    edge_values: bool = False        # a gs.Matrix given here is taken by its values
    derived: Optional["Op"] = None   # never given by the user: pre-processing may set it to
                                     # derived(A, the op's weights) when those are graph-level


@dataclass(frozen=True)
class Attr:
    """A static attribute: a Python value built into the program."""
    name: str
    check: Optional[Callable] = None   # ``check(value) -> value`` (raises naming the argument)
    default: object = None
    what: str = "value"                # what the user passes (for messages): "int", "bool"
    example: object = None             # a value to time the op with (calibration)
    required: bool = True              # False: the node may omit it (the default applies)


@dataclass(frozen=True)
class Size:
    """Sizes of a value: ``(E, R, C)`` of a matrix, or ``rows`` = a tensor's length."""
    nnz: float = 0.0
    rows: float = 0.0
    cols: float = 0.0

    @property
    def nonempty_rows(self) -> float:
        """Rows with at least one edge, for edges spread at random over the rows."""
        if self.rows <= 0:
            return 0.0
        return self.rows * -math.expm1(-self.nnz / self.rows)

    def length(self, align: Align) -> float:
        """The length of a tensor lined up with a matrix of these sizes as ``align`` says."""
        return {"rows": self.rows, "cols": self.cols, "edges": self.nnz,
                "ids": self.nonempty_rows, "set": self.cols + self.nonempty_rows,
                "new cols": self.cols, "new rows": self.rows, "walks": self.cols,
                "entries": self.cols}[align.along]


@dataclass(frozen=True)
class Capture:
    """How the tracer records the op from the user's code."""
    methods: tuple = ()          # gs.Matrix methods (their name goes to an ``op`` attribute)
    properties: tuple = ()       # gs.Matrix properties
    params: dict = field(default_factory=dict)   # method parameter -> input / attribute name
    derive: dict = field(default_factory=dict)   # input -> op: the value given for it goes
                                                 # through that op (on A) first


@dataclass(frozen=True)
class OpDef:
    """Everything about one op (see the module docstring)."""
    op: "Op"
    effect: Effect
    step: Step
    inputs: tuple = ()           # In, in order
    attributes: tuple = ()       # Attr, in order
    kind: Kind = Kind.MATRIX     # what the op returns
    out: object = None           # Align (or a tuple of them) of a tensor (tuple) result
    variadic: Optional[Align] = None   # numbered inputs "0", "1", ... (their alignment;
    takes_any: bool = False            # takes_any: numbered inputs of any kind)
    keeps_layout: bool = False   # a matrix result stays in the layout A was read in
    batched: bool = False        # on a graph, takes a super-batch's encoded frontier itself
                                 # (attrs["batches"]), as random ops do
    check: Optional[Callable] = None   # data checks: check(**inputs, **attrs)
    attrs_check: Optional[Callable] = None   # the static attributes together (each
                                             # checked alone first): attrs_check(**attrs)
    estimate: Optional[Callable] = None   # (A, ins, attrs) -> Size: expected sizes
    bound: Optional[Callable] = None      # (A, ins, attrs) -> Size: upper bounds
    capture: Capture = field(default_factory=Capture)
    doc: str = ""

    # ---------------------------------------------------------------- reading it
    @property
    def attrs(self) -> tuple:
        """Names of the static attributes."""
        return tuple(a.name for a in self.attributes)

    def required_attrs(self) -> tuple:
        return tuple(a.name for a in self.attributes if a.required)

    @property
    def is_variadic(self) -> bool:
        return self.variadic is not None or self.takes_any

    def input_names(self) -> tuple:
        return tuple(i.name for i in self.inputs)

    def required_inputs(self) -> tuple:
        return tuple(i.name for i in self.inputs if not i.optional)

    def input(self, name: str) -> Optional[In]:
        """The declaration of input ``name`` (a numbered input of a variadic op included)."""
        for i in self.inputs:
            if i.name == name:
                return i
        if self.is_variadic and name.isdigit():
            return In(name, self.variadic)
        return None

    def attribute(self, name: str) -> Optional[Attr]:
        for a in self.attributes:
            if a.name == name:
                return a
        return None

    def alignment(self, name: Optional[str], attrs: dict) -> Optional[Align]:
        """How input ``name`` (None: the result) lines up with ``A`` at these attributes."""
        if name is None:
            out = self.out
            if isinstance(out, tuple):
                return out
            return None if out is None else out.resolve(attrs)
        i = self.input(name)
        if i is None or i.align is None:
            return None
        return i.align.resolve(attrs, name)

    @property
    def weights(self) -> Optional[str]:
        """The name of a sampling op's optional weight input (``probs``, ``node_probs``)."""
        names = [i.name for i in self.inputs if i.optional and not i.matrix]
        return names[0] if self.step is Step.SELECT and names else None


class Op(enum.Enum):
    # program structure
    INPUT = "input"
    CONSTANT = "constant"
    DENSE = "dense"                    # any torch function or method on dense values
    GETITEM = "getitem"                # element of a TUPLE value
    OUTPUT = "output"
    CACHED = "cached"                  # a frontier-independent value computed once per graph
    # extract
    SLICE_COLS = "slice_cols"
    SLICE_ROWS = "slice_rows"
    SLICE_ROWS_COLS = "slice_rows_cols"  # A[rows, cols] without the column slice (a pass's)
    # compute
    EDGE_MAP = "edge_map"              # A (op) scalar / edge tensor / same-sparsity matrix
    EDGE_BROADCAST = "edge_broadcast"  # A.mul/div/add/sub(v, axis)
    REDUCE = "reduce"                  # A.sum/max/mean(axis)
    SPMM = "spmm"                      # A @ D
    SPMM_T = "spmm_t"                  # A.T @ D
    SDDMM = "sddmm"
    TRANSPOSE = "transpose"
    VALUES = "values"                  # A.values
    ROW_IDS = "row_ids"                # A.row_ids
    COL_IDS = "col_ids"                # A.col_ids
    FUSED_EDGE_MAP = "fused_edge_map"  # a chain of edge maps and broadcasts, one evaluation
    FUSED_EDGE_MAP_REDUCE = "fused_edge_map_reduce"  # that chain, then a reduction
    SLICE_REDUCE = "slice_reduce"      # A[:, cols].sum/max/mean(axis) without the slice
    TO_LAYOUT = "to_layout"            # the same matrix in another layout (gsample.formats)
    # select
    INDIVIDUAL_SAMPLE = "individual_sample"
    COLLECTIVE_SAMPLE = "collective_sample"
    SLICE_INDIVIDUAL_SAMPLE = "slice_individual_sample"  # A[:, cols].individual_sample(k)
    SLICE_COLLECTIVE_SAMPLE = "slice_collective_sample"  # A[:, cols].collective_sample(k)
    ALIAS_TABLE = "alias_table"        # per-column alias tables of static edge weights
    RANDOM_WALK = "random_walk"        # A.random_walk(seeds, length, ...)
    RANDOM_UNIFORM = "random_uniform"  # A.random_uniform(nodes): a keyed uniform per entry
    RANDOM_COUNT = "random_count"      # A.random_count(nodes, dist, p, n): a count per entry
    FILTER_EDGES = "filter_edges"      # A.filter_edges(keep): the edges a mask keeps
    # finalize
    ROW = "row"
    COLUMN = "column"
    ALL_NODES = "all_nodes"
    EDGES = "edges"
    COMPACT = "compact"


#: the elementwise combinations ``gs.sddmm`` accepts (``dot`` reduces the feature axis)
SDDMM_OPS = ("dot", "add", "sub", "mul", "div")
#: edge-map operators (``neg`` is unary)
MAP_OPS = ("add", "sub", "mul", "div", "pow", "neg")
BROADCAST_OPS = ("add", "sub", "mul", "div")
REDUCE_OPS = ("sum", "max", "mean")


#: a fused edge-map program to time fused ops with (calibration): square, divide by a
#: per-column value, multiply by a per-row value
EXAMPLE_PROGRAM = (("pow", None, False, 2, None), ("div", "0", False, None, 0),
                   ("mul", "1", False, None, 1))


def _choice(name: str, allowed: tuple):
    def check(value):
        if value not in allowed:
            raise ValueError(f"{name}: must be one of {allowed}, got {value!r}")
        return value
    return check


# ----------------------------------------------------------------------------- size rules
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


def _per_entry(A, ins, at):
    # exact: one value per entry of the frontier
    return Size(rows=_n(ins, "nodes"))


#: the laws of ``random_count``
COUNT_DISTS = ("geometric", "binomial")


def _count_attrs(dist="geometric", p=0.5, n=None, **_):
    """``random_count``'s attributes together (each is checked on its own first)."""
    if dist == "geometric" and p >= 1.0:
        raise ValueError(f"p: a geometric count needs p < 1 (P(x) = (1 - p) p^x), got {p}")
    top = math.exp(-53 * math.log(2) / MAX_TRIALS)     # p**j * 2**53 >= 1 for MAX_TRIALS j
    if dist == "geometric" and p > top:
        raise ValueError(f"p: a geometric count needs p <= {top:.6f} (one threshold per count "
                         f"is tabulated, {MAX_TRIALS} at most), got {p}")
    if dist == "geometric" and n is not None:
        raise ValueError("n: the number of trials is for dist='binomial'; a geometric count "
                         "has none")
    if dist == "binomial" and n is None:
        raise ValueError("n: dist='binomial' needs the number of trials n (an int >= 0)")


def _trials(n):
    if n is None:
        return None
    n = V.count(n, "n")
    if n > MAX_TRIALS:
        raise ValueError(f"n: at most {MAX_TRIALS} trials (one threshold per count is "
                         f"tabulated), got {n}")
    return n


#: the largest binomial ``n`` of ``random_count``
MAX_TRIALS = 1 << 20


#: the probabilities a walk step may take instead of moving to a neighbour
WALK_PROBS = ("stop_prob", "restart_prob", "jump_prob")


def _walk_prob(name: str):
    return Attr(name, lambda x: V.probability(x, name), 0.0, what="float", example=0.0)


def _positive(name: str):
    return Attr(name, lambda x: V.positive(x, name), 1.0, what="float", example=1.0)


# ----------------------------------------------------------------------------- the table
P, R = Effect.PURE, Effect.RANDOM
M, T = Kind.MATRIX, Kind.TENSOR
_A = In("A", matrix=True)
_K = Attr("k", lambda k: V.count(k, "k"), what="int")
_REPLACE = Attr("replace", lambda r: V.flag(r, "replace"), False, what="bool")
_AXIS = Attr("axis", V.axis, what="int")
#: how weighted individual draws with replacement are made: inverse CDF or alias tables
SAMPLE_METHODS = ("cdf", "alias")
_METHOD = Attr("method", _choice("method", SAMPLE_METHODS), "cdf", what="str", example="cdf",
               required=False)
_ALIAS_IN = In("alias", Align.EDGES, optional=True, derived=Op.ALIAS_TABLE)
_FUSED_DOC = (
    "edge maps and broadcasts evaluated in one pass over A's values. Inputs: A and operands "
    "'0', '1', ... (tensors). 'program' is a tuple of steps (op, operand, reverse, scalar, "
    "axis), applied in order to each edge value x: op in add/sub/mul/div/pow/neg; y is the "
    "scalar (operand None), operand[e] (axis None: one value per edge), operand[col(e)] "
    "(axis 0) or operand[row(e)] (axis 1); x = op(y, x) if reverse else op(x, y); dtype "
    "promotion as edge_map (gsample.passes.fuse_edge_map documents it)")

_DEFS = [
    OpDef(Op.INPUT, P, Step.GRAPH, (), (Attr("name"), Attr("kind")), Kind.ANY,
          doc="a traced argument (a matrix arrives as a CSC)"),
    OpDef(Op.CONSTANT, P, Step.GRAPH, (), (Attr("value"),), Kind.ANY, doc="a captured value"),
    OpDef(Op.DENSE, P, Step.GRAPH, (), (Attr("fn"), Attr("template")), Kind.ANY,
          takes_any=True, doc="torch code on dense values; 'template' holds the call's arguments"),
    OpDef(Op.GETITEM, P, Step.GRAPH, (In("x"),), (Attr("index"),), T, doc="x[index] of a tuple"),
    OpDef(Op.OUTPUT, P, Step.GRAPH, (), (Attr("template"),), Kind.NONE, takes_any=True,
          doc="the returned values"),
    OpDef(Op.CACHED, P, Step.GRAPH, (In("graph", matrix=True),), (Attr("program"), Attr("kind")),
          Kind.ANY, doc="a graph-only value computed once per graph and reused (its layout is "
                        "its program's)"),
    OpDef(Op.TO_LAYOUT, P, Step.COMPUTE, (_A,), (Attr("layout", _choice("layout", LAYOUTS)),),
          M, keeps_layout=False, estimate=_same, bound=_same,
          doc="A in layout 'layout' (csc, csr, csr-compact or coo); exact, samples unchanged"),
    # extract
    OpDef(Op.SLICE_COLS, P, Step.EXTRACT, (_A, In("cols", Align.NEW_COLS)), (), M,
          check=V.check_cols, estimate=_slice_cols,
          bound=lambda A, ins, at: Size(A.nnz, A.rows, _n(ins, "cols")), doc="A[:, cols]"),
    OpDef(Op.SLICE_ROWS, P, Step.EXTRACT, (_A, In("rows", Align.NEW_ROWS)), (), M,
          check=V.check_rows, estimate=_slice_rows,
          bound=lambda A, ins, at: Size(A.nnz, _n(ins, "rows"), A.cols), doc="A[rows, :]"),
    OpDef(Op.SLICE_ROWS_COLS, P, Step.EXTRACT,
          (_A, In("rows", Align.NEW_ROWS), In("cols", Align.NEW_COLS)), (), M,
          check=V.check_rows_cols,
          estimate=lambda A, ins, at: _slice_rows(_slice_cols(A, ins, at), ins, at),
          bound=lambda A, ins, at: Size(A.nnz, _n(ins, "rows"), _n(ins, "cols")),
          doc="A[rows, cols] (the rows of the column slice) without building the column "
              "slice; made by fuse_extract_extract"),
    # compute
    OpDef(Op.EDGE_MAP, P, Step.COMPUTE, (_A, In("other", Align.EDGES, optional=True,
                                              edge_values=True)),
          (Attr("op", _choice("op", MAP_OPS), example="mul"), Attr("reverse", example=False),
           Attr("scalar", example=2.0)), M,
          keeps_layout=True, check=V.check_edge_map, estimate=_same, bound=_same,
          capture=Capture(), doc="A * x, A + x, A ** p, ... (x: scalar attr, or an edge tensor)"),
    OpDef(Op.EDGE_BROADCAST, P, Step.COMPUTE, (_A, In("vector", Align.AXIS)),
          (Attr("op", _choice("op", BROADCAST_OPS), example="div"), _AXIS), M,
          keeps_layout=True,
          check=V.check_broadcast, estimate=_same, bound=_same,
          capture=Capture(methods=BROADCAST_OPS, params={"v": "vector"}), doc="A.div(v, axis)"),
    OpDef(Op.REDUCE, P, Step.COMPUTE, (_A,),
          (Attr("op", _choice("op", REDUCE_OPS), example="sum"), _AXIS), T,
          out=Align.AXIS, capture=Capture(methods=REDUCE_OPS), doc="A.sum(axis)"),
    OpDef(Op.SPMM, P, Step.COMPUTE, (_A, In("dense", Align.COLS)), (), T, out=Align.ROWS,
          check=V.check_spmm, doc="A @ D"),
    OpDef(Op.SPMM_T, P, Step.COMPUTE, (_A, In("dense", Align.ROWS)), (), T, out=Align.COLS,
          check=V.check_spmm_t, doc="A.T @ D"),
    OpDef(Op.SDDMM, P, Step.COMPUTE, (_A, In("u", Align.ROWS), In("v", Align.COLS)),
          (Attr("op", _choice("op", SDDMM_OPS), example="mul"),), M, keeps_layout=True,
          check=V.check_sddmm,
          estimate=_same, bound=_same, doc="gs.sddmm(A, U, V, op)"),
    OpDef(Op.TRANSPOSE, P, Step.COMPUTE, (_A,), (), M,
          estimate=lambda A, ins, at: Size(A.nnz, A.cols, A.rows),
          bound=lambda A, ins, at: Size(A.nnz, A.cols, A.rows),
          capture=Capture(properties=("T",)), doc="A.T"),
    OpDef(Op.VALUES, P, Step.COMPUTE, (_A,), (), T, out=Align.EDGES,
          capture=Capture(properties=("values",)), doc="A.values"),
    OpDef(Op.ROW_IDS, P, Step.FINALIZE, (_A,), (), T, out=Align.ROW_IDS,
          capture=Capture(properties=("row_ids",)), doc="A.row_ids"),
    OpDef(Op.COL_IDS, P, Step.FINALIZE, (_A,), (), T, out=Align.COL_IDS,
          capture=Capture(properties=("col_ids",)), doc="A.col_ids"),
    OpDef(Op.FUSED_EDGE_MAP, P, Step.COMPUTE, (_A,), (Attr("program", example=EXAMPLE_PROGRAM),), M,
          variadic=Align.STEPS, keeps_layout=True, check=V.check_fused, estimate=_same,
          bound=_same, doc=_FUSED_DOC),
    OpDef(Op.FUSED_EDGE_MAP_REDUCE, P, Step.COMPUTE, (_A,),
          (Attr("program", example=EXAMPLE_PROGRAM),
           Attr("op", _choice("op", REDUCE_OPS), example="sum"), _AXIS), T, out=Align.AXIS,
          variadic=Align.STEPS, check=V.check_fused,
          doc="a fused_edge_map program, then A.sum/max/mean(axis) of its values in the same "
              "evaluation"),
    OpDef(Op.SLICE_REDUCE, P, Step.COMPUTE, (_A, In("cols", Align.NEW_COLS)),
          (Attr("op", _choice("op", REDUCE_OPS), example="sum"), _AXIS,
           Attr("batches", required=False)), T, out=Align.AXIS, batched=True,
          check=V.check_cols,
          estimate=lambda A, ins, at: Size(rows=_n(ins, "cols") if at["axis"] == 0 else A.rows),
          bound=lambda A, ins, at: Size(rows=_n(ins, "cols") if at["axis"] == 0 else A.rows),
          doc="A[:, cols].sum/max/mean(axis) without the slice; 'batches' (N, n): cols is a "
              "super-batch's encoded frontier and axis 1 gives the N * n encoded rows"),
    # select
    OpDef(Op.INDIVIDUAL_SAMPLE, R, Step.SELECT,
          (_A, In("probs", Align.EDGES, optional=True, edge_values=True), _ALIAS_IN),
          (_K, _REPLACE, _METHOD), M,
          check=V.check_individual, estimate=_individual, bound=_individual_bound,
          capture=Capture(methods=("individual_sample",)),
          doc="A.individual_sample(k, probs, replace, method); 'alias': alias tables of A "
              "for probs (alias_table), set by pre-processing for method 'alias'"),
    OpDef(Op.COLLECTIVE_SAMPLE, R, Step.SELECT,
          (_A, In("node_probs", Align.ROWS, optional=True)), (_K, _REPLACE), M,
          check=V.check_collective, estimate=_collective, bound=_collective_bound,
          capture=Capture(methods=("collective_sample",)),
          doc="A.collective_sample(k, node_probs, replace)"),
    OpDef(Op.SLICE_INDIVIDUAL_SAMPLE, R, Step.SELECT,
          (_A, In("cols", Align.NEW_COLS), In("probs", Align.EDGES, optional=True), _ALIAS_IN),
          (_K, _REPLACE, _METHOD), M, check=V.check_individual, estimate=_fused(_individual),
          bound=_fused_bound(_individual_bound),
          doc="A[:, cols].individual_sample(k) without the slice (probs, alias: aligned with "
              "A's edges)"),
    OpDef(Op.SLICE_COLLECTIVE_SAMPLE, R, Step.SELECT,
          (_A, In("cols", Align.NEW_COLS), In("node_probs", Align.ROWS, optional=True)),
          (_K, _REPLACE), M, check=V.check_collective, estimate=_fused(_collective),
          doc="A[:, cols].collective_sample(k) without the slice"),
    OpDef(Op.ALIAS_TABLE, P, Step.COMPUTE, (_A, In("probs", Align.EDGES, edge_values=True)), (),
          T, out=Align.EDGES, check=V.check_alias_table,
          doc="alias tables of A's columns for weights 'probs' (E,): a LongTensor (E, 2), "
              "per edge slot the threshold (53-bit fixed point) and the alias edge "
              "(gsample.backend.torch.walk documents the layout); pure: hoisted once per "
              "graph by pre-processing when probs depend on the graph only"),
    OpDef(Op.RANDOM_WALK, R, Step.SELECT,
          (_A, In("seeds", Align.NEW_COLS), In("alias", Align.EDGES, optional=True)),
          (Attr("length", lambda n: V.count(n, "length"), what="int", example=8),
           _positive("p"), _positive("q"), *(_walk_prob(n) for n in WALK_PROBS)), T,
          out=Align.WALKS,
          check=V.check_random_walk, estimate=_walk, bound=_walk,
          capture=Capture(methods=("random_walk",), params={"probs": "alias"},
                          derive={"alias": Op.ALIAS_TABLE}),
          doc="A.random_walk(seeds, length, probs, p, q, stop_prob, restart_prob, jump_prob): "
              "a LongTensor (len(seeds), length + 1) of in-neighbour walks, -1 after a stop"),
    OpDef(Op.RANDOM_UNIFORM, R, Step.SELECT, (_A, In("nodes", Align.NEW_COLS)), (), T,
          out=Align.ENTRIES, check=V.check_random_draws, estimate=_per_entry,
          bound=_per_entry, capture=Capture(methods=("random_uniform",)),
          doc="A.random_uniform(nodes): a float64 uniform in [0, 1) per entry of nodes, "
              "(word >> 11) * 2**-53 of the entry's key (its position in nodes, draw 0)"),
    OpDef(Op.RANDOM_COUNT, R, Step.SELECT, (_A, In("nodes", Align.NEW_COLS)),
          (Attr("dist", _choice("dist", COUNT_DISTS), "geometric", what="str",
                example="geometric"),
           Attr("p", lambda x: V.probability(x, "p"), 0.5, what="float", example=0.5),
           Attr("n", _trials, None, what="int", example=None, required=False)), T,
          out=Align.ENTRIES, check=V.check_random_draws, attrs_check=_count_attrs,
          estimate=_per_entry, bound=_per_entry, capture=Capture(methods=("random_count",)),
          doc="A.random_count(nodes, dist, p, n): an int64 count per entry of nodes, "
              "geometric (P(x) = (1 - p) p^x) or binomial(n, p), by inversion of one keyed "
              "word per entry against a table of thresholds (gsample.random.count_table)"),
    OpDef(Op.FILTER_EDGES, P, Step.SELECT, (_A, In("keep", Align.EDGES)), (), M,
          check=V.check_filter_edges,
          estimate=lambda A, ins, at: Size(A.nnz / 2, A.rows, A.cols), bound=_same,
          capture=Capture(methods=("filter_edges",)),
          doc="A.filter_edges(keep): the edges where keep (bool, (E,)) is True, in order, "
              "with their values and edge ids; the row and column spaces unchanged (a "
              "column may become empty)"),
    # finalize
    OpDef(Op.ROW, P, Step.FINALIZE, (_A,), (), T, out=Align.ROW_SET,
          capture=Capture(methods=("row",)), doc="A.row()"),
    OpDef(Op.COLUMN, P, Step.FINALIZE, (_A,), (), T, out=Align.COL_IDS,
          capture=Capture(methods=("column",)), doc="A.column()"),
    OpDef(Op.ALL_NODES, P, Step.FINALIZE, (_A,), (Attr("batches", required=False),), T,
          out=Align.NODE_SET, capture=Capture(methods=("all_nodes",)),
          doc="A.all_nodes(); 'batches' (N, n): A is a super-batch of N mini-batches of n "
              "nodes, and the ids come grouped by mini-batch (each its columns, then rows)"),
    OpDef(Op.EDGES, P, Step.FINALIZE, (_A,), (), Kind.TUPLE,
          out=(Align.EDGE_IDS, Align.EDGE_IDS, Align.EDGES),
          capture=Capture(methods=("edges",)), doc="A.edges()"),
    OpDef(Op.COMPACT, P, Step.FINALIZE, (_A,), (), M,
          estimate=lambda A, ins, at: Size(A.nnz, A.nonempty_rows, A.cols),
          bound=lambda A, ins, at: Size(A.nnz, min(A.nnz, A.rows), A.cols),
          capture=Capture(methods=("compact",)), doc="A.compact()"),
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


def estimate(op: Op, A: Optional[Size], ins: dict, attrs: dict) -> Optional[Size]:
    """Expected sizes of ``op``'s value (the cost model's rule), from its inputs' sizes."""
    d = OPS[op]
    if A is None:
        return None
    if d.estimate is not None:
        return d.estimate(A, ins, attrs)
    if d.out is not None:
        return _tensor(A, ins, attrs, d)
    return None


def bound(op: Op, A: Size, ins: dict, attrs: dict) -> Optional[Size]:
    """Upper bounds of ``op``'s value from its inputs' buffer sizes (None: no usable bound)."""
    d = OPS[op]
    if d.bound is not None:
        return d.bound(A, ins, attrs)
    if d.out is not None and d.kind is Kind.TENSOR:
        return _tensor(A, ins, attrs, d)
    return None
