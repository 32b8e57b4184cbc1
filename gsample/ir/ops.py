"""The op table: every operator of gsample, declared once.

Each :class:`Op` has an :class:`OpInfo` with its effect (pure or random), its
ECSF step (Extract, Compute, Select, Finalize), the sparse layouts it accepts
and produces, its named inputs (IR values), its named attributes (static
Python values) and the kind of value it returns; :data:`ALIGN` says how its
tensor inputs and result line up with its matrix. The eager API dispatches
through this table to a backend; the compiler's passes read it. Nothing
matches on op names or on argument positions.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass


class Effect(enum.Enum):
    PURE = "pure"        # same inputs, same outputs: CSE may merge, DCE may drop
    RANDOM = "random"    # consumes an op ordinal of the random stream (DESIGN §3)


class Step(enum.Enum):
    EXTRACT = "extract"
    COMPUTE = "compute"
    SELECT = "select"
    FINALIZE = "finalize"
    GRAPH = "graph"      # program structure: inputs, constants, dense code, outputs


class Layout(enum.Enum):
    CSC = "csc"
    CSR = "csr"
    COO = "coo"
    DENSE = "dense"      # a dense tensor (per-row, per-column or per-edge values)


class Kind(enum.Enum):
    """What an IR value is."""
    MATRIX = "matrix"
    TENSOR = "tensor"
    TUPLE = "tuple"      # a fixed-size tuple of tensors (``edges()``), split by GETITEM
    ANY = "any"          # a dense op's result: tensor, number or a structure of them
    NONE = "none"        # the output node


@dataclass(frozen=True)
class OpInfo:
    effect: Effect
    step: Step
    accepts: tuple      # layouts of input A the torch backend's code takes (CSR: compact too)
    produces: tuple     # layouts of the output; several sparse ones: the output keeps A's
    inputs: tuple       # names of IR-value inputs; "?" marks an optional one, "*" any number
    attrs: tuple        # names of static attributes
    kind: Kind          # kind of the result
    doc: str

    @property
    def variadic(self) -> bool:
        """True when the op takes any number of inputs named ``"0", "1", ...`` (``"*"``),
        besides the named ones (``("*",)``: only those; ``("A", "*")``: ``A`` and those)."""
        return "*" in self.inputs

    def input_names(self) -> tuple:
        """The named inputs (``"?"`` and ``"*"`` stripped)."""
        return tuple(n.rstrip("?") for n in self.inputs if n != "*")

    def required_inputs(self) -> tuple:
        return tuple(n for n in self.inputs if not n.endswith("?") and n != "*")


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
    TO_LAYOUT = "to_layout"            # the same matrix in another layout (gsample.layouts)
    # select
    INDIVIDUAL_SAMPLE = "individual_sample"
    COLLECTIVE_SAMPLE = "collective_sample"
    SLICE_INDIVIDUAL_SAMPLE = "slice_individual_sample"  # A[:, cols].individual_sample(k)
    SLICE_COLLECTIVE_SAMPLE = "slice_collective_sample"  # A[:, cols].collective_sample(k)
    # finalize
    ROW = "row"
    COLUMN = "column"
    ALL_NODES = "all_nodes"
    EDGES = "edges"
    COMPACT = "compact"


_S = (Layout.CSC, Layout.CSR, Layout.COO)
_C, _D = (Layout.CSC,), (Layout.DENSE,)
_CR, _CO = (Layout.CSC, Layout.CSR), (Layout.CSC, Layout.COO)
P, R = Effect.PURE, Effect.RANDOM
M, T = Kind.MATRIX, Kind.TENSOR
_MAP_ATTRS = ("op", "reverse", "scalar")
_FUSED_DOC = (
    "edge maps and broadcasts evaluated in one pass over A's values. Inputs: A and operands "
    "'0', '1', ... (tensors). 'program' is a tuple of steps (op, operand, reverse, scalar, "
    "axis), applied in order to each edge value x: op in add/sub/mul/div/pow/neg; y is the "
    "scalar (operand None), operand[e] (axis None: one value per edge), operand[col(e)] "
    "(axis 0) or operand[row(e)] (axis 1); x = op(y, x) if reverse else op(x, y); dtype "
    "promotion as edge_map (gsample.passes.fuse_edge_map documents it)")

OP_TABLE: dict[Op, OpInfo] = {
    Op.INPUT: OpInfo(P, Step.GRAPH, (), _C + _D, (), ("name", "kind"), Kind.ANY,
                     "a traced argument (a matrix arrives as a CSC)"),
    Op.CONSTANT: OpInfo(P, Step.GRAPH, (), _D, (), ("value",), Kind.ANY, "a captured value"),
    Op.DENSE: OpInfo(P, Step.GRAPH, (), _D, ("*",), ("fn", "template"), Kind.ANY,
                     "torch code on dense values; 'template' holds the call's arguments"),
    Op.GETITEM: OpInfo(P, Step.GRAPH, (), _D, ("x",), ("index",), T, "x[index] of a tuple"),
    Op.OUTPUT: OpInfo(P, Step.GRAPH, (), (), ("*",), ("template",), Kind.NONE,
                      "the returned values"),
    Op.CACHED: OpInfo(P, Step.GRAPH, _C, _S, ("graph",), ("program", "kind"), Kind.ANY,
                      "a graph-only value computed once per graph and reused (its layout is "
                      "its program's)"),
    Op.TO_LAYOUT: OpInfo(P, Step.COMPUTE, _S, _S, ("A",), ("layout",), M,
                         "A in layout 'layout' (csc, csr, csr-compact or coo); exact, samples "
                         "unchanged"),
    Op.SLICE_COLS: OpInfo(P, Step.EXTRACT, _C, _C, ("A", "cols"), (), M, "A[:, cols]"),
    Op.SLICE_ROWS: OpInfo(P, Step.EXTRACT, _CR, _C, ("A", "rows"), (), M, "A[rows, :]"),
    Op.EDGE_MAP: OpInfo(P, Step.COMPUTE, _S, _S, ("A", "other?"), _MAP_ATTRS, M,
                        "A * x, A + x, A ** p, ... (x: scalar attr, or an edge tensor input)"),
    Op.EDGE_BROADCAST: OpInfo(P, Step.COMPUTE, _S, _S, ("A", "vector"), ("op", "axis"), M,
                              "A.div(v, axis)"),
    Op.REDUCE: OpInfo(P, Step.COMPUTE, _S, _D, ("A",), ("op", "axis"), T, "A.sum(axis)"),
    Op.SPMM: OpInfo(P, Step.COMPUTE, _S, _D, ("A", "dense"), (), T, "A @ D"),
    Op.SPMM_T: OpInfo(P, Step.COMPUTE, _S, _D, ("A", "dense"), (), T, "A.T @ D"),
    Op.SDDMM: OpInfo(P, Step.COMPUTE, _S, _S, ("A", "u", "v"), ("op",), M,
                     "gs.sddmm(A, U, V, op)"),
    Op.TRANSPOSE: OpInfo(P, Step.COMPUTE, _S, _C, ("A",), (), M, "A.T"),
    Op.VALUES: OpInfo(P, Step.COMPUTE, _S, _D, ("A",), (), T, "A.values"),
    Op.ROW_IDS: OpInfo(P, Step.FINALIZE, _S, _D, ("A",), (), T, "A.row_ids"),
    Op.COL_IDS: OpInfo(P, Step.FINALIZE, _S, _D, ("A",), (), T, "A.col_ids"),
    Op.FUSED_EDGE_MAP: OpInfo(P, Step.COMPUTE, _S, _S, ("A", "*"), ("program",), M,
                              _FUSED_DOC),
    Op.FUSED_EDGE_MAP_REDUCE: OpInfo(P, Step.COMPUTE, _S, _D, ("A", "*"),
                                     ("program", "op", "axis"), T,
                                     "a fused_edge_map program, then A.sum/max/mean(axis) of its "
                                     "values in the same evaluation"),
    Op.INDIVIDUAL_SAMPLE: OpInfo(R, Step.SELECT, _C, _C, ("A", "probs?"), ("k", "replace"), M,
                                 "A.individual_sample(k, probs, replace)"),
    Op.COLLECTIVE_SAMPLE: OpInfo(R, Step.SELECT, _C, _C, ("A", "node_probs?"), ("k", "replace"),
                                 M, "A.collective_sample(k, node_probs, replace)"),
    Op.SLICE_INDIVIDUAL_SAMPLE: OpInfo(R, Step.SELECT, _C, _C, ("A", "cols", "probs?"),
                                       ("k", "replace"), M,
                                       "A[:, cols].individual_sample(k) without the slice"),
    Op.SLICE_COLLECTIVE_SAMPLE: OpInfo(R, Step.SELECT, _C, _C, ("A", "cols", "node_probs?"),
                                       ("k", "replace"), M,
                                       "A[:, cols].collective_sample(k) without the slice"),
    Op.ROW: OpInfo(P, Step.FINALIZE, _S, _D, ("A",), (), T, "A.row()"),
    Op.COLUMN: OpInfo(P, Step.FINALIZE, _S, _D, ("A",), (), T, "A.column()"),
    Op.ALL_NODES: OpInfo(P, Step.FINALIZE, _S, _D, ("A",), (), T, "A.all_nodes()"),
    Op.EDGES: OpInfo(P, Step.FINALIZE, _CO, _D, ("A",), (), Kind.TUPLE, "A.edges()"),
    Op.COMPACT: OpInfo(P, Step.FINALIZE, _C, _C, ("A",), (), M, "A.compact()"),
}

#: the elementwise combinations ``gs.sddmm`` accepts (``dot`` reduces the feature axis)
SDDMM_OPS = ("dot", "add", "sub", "mul", "div")

assert set(OP_TABLE) == set(Op), "every Op needs exactly one OpInfo"

#: How an op's tensor inputs and tensor result line up with its matrix ``A``, by input name
#: (``"*"``: every numbered input; ``"out"``: the result, a tuple for a TUPLE result). Read by
#: ``gsample.passes.super_batch``, which samples N mini-batches at once over a block-diagonal
#: graph and must know how to cut each value into the mini-batches' parts:
#:
#: ``"rows"`` / ``"cols"`` / ``"edges"``
#:     one value per row / column / edge of ``A`` (first dimension; an ``"edges"`` input may
#:     also be a 0-dim scalar); ``"axis"``: ``"cols"`` when the ``axis`` attribute is 0, else
#:     ``"rows"``; ``"steps"``: per step of a fused ``program`` (its axis, as ``"axis"``; None:
#:     ``"edges"``).
#: ``"col_ids"`` / ``"row_ids"``
#:     node ids (values, not positions) that become the result's columns / rows.
#: ``"ids"``
#:     node ids in ``A``'s row-space or column order (``"rows ids"``, ``"cols ids"``: also one
#:     per row / column of ``A``); ``"set"``: unique node ids, columns first then new rows.
#:
#: An op missing here takes no tensor input and returns no tensor (or is program structure).
ALIGN: dict = {
    Op.SLICE_COLS: {"cols": "col_ids"},
    Op.SLICE_ROWS: {"rows": "row_ids"},
    Op.EDGE_MAP: {"other": "edges"},
    Op.EDGE_BROADCAST: {"vector": "axis"},
    Op.REDUCE: {"out": "axis"},
    Op.SPMM: {"dense": "cols", "out": "rows"},
    Op.SPMM_T: {"dense": "rows", "out": "cols"},
    Op.SDDMM: {"u": "rows", "v": "cols"},
    Op.VALUES: {"out": "edges"},
    Op.ROW_IDS: {"out": "rows ids"},
    Op.COL_IDS: {"out": "cols ids"},
    Op.FUSED_EDGE_MAP: {"*": "steps"},
    Op.FUSED_EDGE_MAP_REDUCE: {"*": "steps", "out": "axis"},
    Op.INDIVIDUAL_SAMPLE: {"probs": "edges"},
    Op.COLLECTIVE_SAMPLE: {"node_probs": "rows"},
    Op.SLICE_INDIVIDUAL_SAMPLE: {"cols": "col_ids", "probs": "edges"},
    Op.SLICE_COLLECTIVE_SAMPLE: {"cols": "col_ids", "node_probs": "rows"},
    Op.ROW: {"out": "ids"},
    Op.COLUMN: {"out": "cols ids"},
    Op.ALL_NODES: {"out": "set"},
    Op.EDGES: {"out": ("edges ids", "edges ids", "edges")},
}

assert all(set(a) <= set(OP_TABLE[op].input_names()) | {"*", "out"} for op, a in ALIGN.items()), \
    "ALIGN names an input the op table does not declare"


def align(op: Op) -> dict:
    """How ``op``'s tensor inputs and result line up with its matrix (see :data:`ALIGN`)."""
    return ALIGN.get(op, {})


def info(op: Op) -> OpInfo:
    """The :class:`OpInfo` of ``op``."""
    return OP_TABLE[op]
