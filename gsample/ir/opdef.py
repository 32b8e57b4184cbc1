"""The vocabulary of the op table (:mod:`.ops`): what an op declaration is made of.

Enums for an op's effect, ECSF step, value kind and alignment; :class:`In`, :class:`Attr`,
:class:`Size`, :class:`Capture` and :class:`OpDef`; the :class:`Op` names; the op-name
vocabularies of edge maps, broadcasts, reductions and SDDMM. The declarations themselves are
in :mod:`.ops`, the size rules they use in :mod:`.size_rules`.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass, field


class Effect(enum.Enum):
    PURE = "pure"  # same inputs, same outputs: CSE may merge, DCE may drop
    RANDOM = "random"  # consumes an op ordinal of the random stream (docs/architecture.md §3)


class Step(enum.Enum):
    EXTRACT = "extract"
    COMPUTE = "compute"
    SELECT = "select"
    FINALIZE = "finalize"
    GRAPH = "graph"  # program structure: inputs, constants, dense code, outputs


class Kind(enum.Enum):
    """What an IR value is."""

    MATRIX = "matrix"
    TENSOR = "tensor"
    TUPLE = "tuple"  # a fixed-size tuple of tensors (``edges()``), split by GETITEM
    ANY = "any"  # a dense op's result: tensor, number or a structure of them
    NONE = "none"  # the output node


#: sparse layouts (``gsample.formats``): CSC; CSR, plain or compact (only the rows with
#: edges stored); COO (CSC order plus each edge's column)
LAYOUTS = ("csc", "csr", "csr-compact", "coo")


class Align(enum.Enum):
    """How a tensor input or result lines up with the op's matrix ``A``.

    ``along`` is the dimension of ``A`` it runs along (``rows``, ``cols``, ``edges``; ``ids``
    and ``set`` for lists of node ids of their own length) and ``ids`` whether it holds node
    ids (which super-batching encodes as ``b * n + v``) rather than values.
    """

    ROWS = ("rows", False)  # one value per row of A's row space
    COLS = ("cols", False)  # one value per column
    EDGES = ("edges", False)  # one value per edge (an edge operand may be 0-dim)
    AXIS = ("axis", False)  # COLS when attrs["axis"] == 0, else ROWS
    STEPS = ("steps", False)  # a fused program's operand: as its steps use it
    ROW_IDS = ("rows", True)  # node ids, one per row
    COL_IDS = ("cols", True)  # node ids, one per column
    EDGE_IDS = ("edges", True)  # node ids, one per edge
    NEW_COLS = ("new cols", True)  # node ids that become the result's columns (a frontier)
    NEW_ROWS = ("new rows", True)  # node ids that become the result's rows
    ROW_SET = ("ids", True)  # ids of the rows holding edges, in row-space order
    NODE_SET = ("set", True)  # unique ids: the columns first, then new rows
    WALKS = ("walks", True)  # a row of node ids (a walk, -1 after a stop) per node of
    # the op's frontier (its NEW_COLS input)
    ENTRIES = ("entries", False)  # one value per entry of the op's frontier (its NEW_COLS
    # input), in that order
    PAIRED = ("paired", False)  # one value per entry of the op's first result (a tuple's
    # ids), in that order
    STATE = ("state", False)  # an op's opaque state, read only by a later call of that op
    SCALAR = ("scalar", False)  # one value for the whole matrix (0-dim); in a super-batch,
    # one per mini-batch

    @property
    def along(self) -> str:
        return self.value[0]

    @property
    def ids(self) -> bool:
        return self.value[1]

    def resolve(self, attrs: dict, name: str | None = None) -> Align:
        """``AXIS`` and ``STEPS`` made concrete from a node's attributes (``name``: the
        operand of a fused program)."""
        if self is Align.AXIS:
            return Align.COLS if attrs["axis"] == 0 else Align.ROWS
        if self is Align.STEPS:
            axes = {
                axis
                for _op, operand, _reverse, _scalar, axis in attrs["program"]
                if operand == name
            }
            if None in axes or not axes:
                return Align.EDGES
            return Align.COLS if axes == {0} else Align.ROWS
        return self


@dataclass(frozen=True)
class In:
    """A named input of an op: an IR value."""

    name: str
    align: Align | None = None  # a tensor's alignment with A (None: a matrix, or opaque)
    optional: bool = False
    matrix: bool = False  # the op's matrix (``A``, ``graph``)
    edge_values: bool = False  # a gs.Matrix given here is taken by its values
    derived: Op | None = None  # never given by the user: pre-processing may set it to
    # derived(A, the op's weights) when those are graph-level
    ordered: bool = False  # a backend's sync-free kernel may need it ascending within each
    # mini-batch (it cannot re-rank without a read-back): the lowering tells it whether
    # the value's producer guarantees that (OpDef.ordered_out) by the name "<name>:unordered"


@dataclass(frozen=True)
class Attr:
    """A static attribute: a Python value built into the program."""

    name: str
    check: Callable | None = None  # ``check(value) -> value`` (raises naming the argument)
    default: object = None
    what: str = "value"  # what the user passes (for messages): "int", "bool"
    example: object = None  # a value to time the op with (calibration)
    required: bool = True  # False: the node may omit it (the default applies)
    internal: bool = False  # set by passes or pre-processing, never by the user: no
    # parameter of the op's Matrix method


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
        return {
            "rows": self.rows,
            "cols": self.cols,
            "edges": self.nnz,
            "ids": self.nonempty_rows,
            "set": self.cols + self.nonempty_rows,
            "new cols": self.cols,
            "new rows": self.rows,
            "walks": self.cols,
            "entries": self.cols,
            "scalar": 1.0,
        }[align.along]


@dataclass(frozen=True)
class Capture:
    """How the tracer records the op from the user's code."""

    methods: tuple = ()  # gs.Matrix methods (their name goes to an ``op`` attribute)
    properties: tuple = ()  # gs.Matrix properties
    params: dict = field(default_factory=dict)  # method parameter -> input / attribute name
    derive: dict = field(default_factory=dict)  # input -> op: the value given for it goes
    # through that op (on A) first
    when_none: dict = field(default_factory=dict)  # parameter -> op: a call that leaves
    # this parameter None is that op (``A.sum()``, no axis: ``TOTAL``), its other
    # parameters and the method's name (``op``) its own
    doc: str = ""  # the docstring of a Matrix method made from the op (gsample.matrix.sparse
    # makes one for each of ``methods`` and ``properties`` that gs.Matrix does not write)


@dataclass(frozen=True)
class OpDef:
    """Everything about one op (see the module docstring)."""

    op: Op
    effect: Effect
    step: Step
    inputs: tuple = ()  # In, in order
    attributes: tuple = ()  # Attr, in order
    kind: Kind = Kind.MATRIX  # what the op returns
    out: object = None  # Align (or a tuple of them) of a tensor (tuple) result
    variadic: Align | None = None  # numbered inputs "0", "1", ... (their alignment;
    takes_any: bool = False  # takes_any: numbered inputs of any kind)
    keeps_layout: bool = False  # a matrix result stays in the layout A was read in
    edges: str | None = None  # a matrix result's edges: "same" as A's (values changed,
    # or the layout), a "subset" of A's; None: not said
    structure_only: bool = False  # reads only A's structure (edges, row and column ids),
    # never its values
    ordered_out: tuple = ()  # results ascending within each mini-batch: their positions
    # in a tuple result, None for the op's one result (see In.ordered)
    batched: bool = False  # on a graph, takes a super-batch's encoded frontier itself
    # (attrs["batches"]), as random ops do
    remembered: bool = False  # its result (on one mini-batch) is kept with its matrix
    # (gsample.formats.derived): an eager call on a block a program returned reuses it
    check: Callable | None = None  # data checks: check(**inputs, **attrs)
    attrs_check: Callable | None = None  # the static attributes together (each
    # checked alone first): attrs_check(**attrs)
    estimate: Callable | None = None  # (A, ins, attrs) -> Size: expected sizes
    bound: Callable | None = None  # (A, ins, attrs) -> Size: upper bounds
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

    def input(self, name: str) -> In | None:
        """The declaration of input ``name`` (a numbered input of a variadic op included)."""
        for i in self.inputs:
            if i.name == name:
                return i
        if self.is_variadic and name.isdigit():
            return In(name, self.variadic)
        return None

    def attribute(self, name: str) -> Attr | None:
        for a in self.attributes:
            if a.name == name:
                return a
        return None

    def alignment(self, name: str | None, attrs: dict) -> Align | None:
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
    def weights(self) -> str | None:
        """The name of a sampling op's optional weight input (``probs``, ``node_probs``)."""
        names = [i.name for i in self.inputs if i.optional and not i.matrix]
        return names[0] if self.step is Step.SELECT and names else None


class Op(enum.Enum):
    # program structure
    INPUT = "input"
    CONSTANT = "constant"
    DENSE = "dense"  # any torch function or method on dense values
    GETITEM = "getitem"  # element of a TUPLE value
    OUTPUT = "output"
    CACHED = "cached"  # a frontier-independent value computed once per graph
    # extract
    SLICE_COLS = "slice_cols"
    SLICE_ROWS = "slice_rows"
    SLICE_ROWS_COLS = "slice_rows_cols"  # A[rows, cols] without the column slice (a pass's)
    # compute
    EDGE_MAP = "edge_map"  # A (op) scalar / edge tensor / same-sparsity matrix
    EDGE_BROADCAST = "edge_broadcast"  # A.mul/div/add/sub(v, axis)
    REDUCE = "reduce"  # A.sum/max/mean(axis)
    TOTAL = "total"  # A.sum(): every edge value, one order-free sum
    DEGREE = "degree"  # A.degree(axis): edges per column / row
    SPMM = "spmm"  # A @ D
    SPMM_T = "spmm_t"  # A.T @ D
    SDDMM = "sddmm"
    TRANSPOSE = "transpose"
    VALUES = "values"  # A.values
    ROW_IDS = "row_ids"  # A.row_ids
    COL_IDS = "col_ids"  # A.col_ids
    FUSED_EDGE_MAP = "fused_edge_map"  # a chain of edge maps and broadcasts, one evaluation
    FUSED_EDGE_MAP_REDUCE = "fused_edge_map_reduce"  # that chain, then a reduction
    FUSED_EDGE_NORMALIZE = "fused_edge_normalize"  # that chain, then each value combined
    # with its column's (row's) reduction
    SLICE_REDUCE = "slice_reduce"  # A[:, cols].sum/max/mean(axis) without the slice
    SLICE_TOTAL = "slice_total"  # A[:, cols].sum() without the slice
    TO_LAYOUT = "to_layout"  # the same matrix in another layout (gsample.formats)
    # select
    INDIVIDUAL_SAMPLE = "individual_sample"
    COLLECTIVE_SAMPLE = "collective_sample"
    SLICE_INDIVIDUAL_SAMPLE = "slice_individual_sample"  # A[:, cols].individual_sample(k)
    SLICE_COLLECTIVE_SAMPLE = "slice_collective_sample"  # A[:, cols].collective_sample(k)
    LISTED_COLLECTIVE_SAMPLE = "listed_collective_sample"  # its row probabilities summed
    # over the slice and scaled at the slice's rows only (the listed_rows pass's)
    ALIAS_TABLE = "alias_table"  # per-column alias tables of static edge weights
    RANDOM_WALK = "random_walk"  # A.random_walk(seeds, length, ...)
    RANDOM_UNIFORM = "random_uniform"  # A.random_uniform(nodes): a keyed uniform per entry
    RANDOM_COUNT = "random_count"  # A.random_count(nodes, dist, p, n): a count per entry
    FUSED_WALK = "fused_walk"  # gs.walk(step, A, seeds, length): every step in one op
    FILTER_EDGES = "filter_edges"  # A.filter_edges(keep): the edges a mask keeps
    TEMPORAL_SAMPLE = "temporal_sample"  # A.temporal_sample(cols, k, time, ...): the slice's
    # edges allowed at each column's time, sampled, keyed per seed (disjoint, temporal)
    TEMPORAL_WALK = "temporal_walk"  # A.temporal_walk(seeds, length, edge_time, time, ...):
    # walks whose every step is later (or earlier) than the previous one
    TEMPORAL_WALK_EDGES = "temporal_walk_edges"  # the edge ids of those walks' steps
    FROM_NEIGHBORS = "from_neighbors"  # A.from_neighbors(cols, neighbors): a block of dense
    # per-column neighbour lists
    # finalize
    ROW = "row"
    COLUMN = "column"
    POSITIONS = "positions"  # A.positions(nodes): each frontier entry's position in its
    # mini-batch (disjoint sampling's seed slots)
    FIRST_REACHED = "first_reached"  # s.first_reached(slot, state): disjoint sampling's
    # next frontier, the (seed slot, node) pairs first reached by their seed
    ALL_NODES = "all_nodes"
    EDGES = "edges"
    COMPACT = "compact"


#: the elementwise combinations ``gs.sddmm`` accepts (``dot`` reduces the feature axis)
SDDMM_OPS = ("dot", "add", "sub", "mul", "div")
#: edge-map operators (``neg`` is unary)
MAP_OPS = ("add", "sub", "mul", "div", "pow", "neg")
BROADCAST_OPS = ("add", "sub", "mul", "div")
REDUCE_OPS = ("sum", "max", "mean")
#: reductions of every edge value (``A.sum()``, no axis)
TOTAL_OPS = ("sum",)


#: a fused edge-map program to time fused ops with (calibration): square, divide by a
#: per-column value, multiply by a per-row value
EXAMPLE_PROGRAM = (
    ("pow", None, False, 2, None),
    ("div", "0", False, None, 0),
    ("mul", "1", False, None, 1),
)


def _choice(name: str, allowed: tuple):
    def check(value):
        if value not in allowed:
            raise ValueError(f"{name}: must be one of {allowed}, got {value!r}")
        return value

    return check
