"""The op table: every operator of gsample, declared once.

Each :class:`Op` has an :class:`OpInfo` with its effect (pure or random), its
ECSF step (Extract, Compute, Select, Finalize) and the sparse layouts it accepts
and produces. The eager API dispatches through this table to a backend, and the
compiler's passes (``gsample/passes``) read it; nothing matches on op names.
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


class Layout(enum.Enum):
    CSC = "csc"
    CSR = "csr"
    COO = "coo"
    DENSE = "dense"      # a dense tensor (per-row, per-column or per-edge values)


@dataclass(frozen=True)
class OpInfo:
    effect: Effect
    step: Step
    accepts: tuple      # layouts of the sparse input the backend can take
    produces: tuple     # layouts of the output
    doc: str


class Op(enum.Enum):
    SLICE_COLS = "slice_cols"
    SLICE_ROWS = "slice_rows"
    EDGE_MAP = "edge_map"            # A (op) scalar / edge tensor / same-sparsity matrix
    EDGE_BROADCAST = "edge_broadcast"  # A.mul/div/add/sub(v, axis)
    REDUCE = "reduce"                # A.sum/max/mean(axis)
    SPMM = "spmm"                    # A @ D
    SPMM_T = "spmm_t"                # A.T @ D
    SDDMM = "sddmm"
    TRANSPOSE = "transpose"
    INDIVIDUAL_SAMPLE = "individual_sample"
    COLLECTIVE_SAMPLE = "collective_sample"
    ROW = "row"
    COLUMN = "column"
    ALL_NODES = "all_nodes"
    EDGES = "edges"
    COMPACT = "compact"


_S = (Layout.CSC, Layout.CSR, Layout.COO)
_C, _D = (Layout.CSC,), (Layout.DENSE,)

OP_TABLE: dict[Op, OpInfo] = {
    Op.SLICE_COLS: OpInfo(Effect.PURE, Step.EXTRACT, (Layout.CSC,), _C, "A[:, cols]"),
    Op.SLICE_ROWS: OpInfo(Effect.PURE, Step.EXTRACT, _S, _C, "A[rows, :]"),
    Op.EDGE_MAP: OpInfo(Effect.PURE, Step.COMPUTE, _S, _S, "A * x, A + x, A ** p, ..."),
    Op.EDGE_BROADCAST: OpInfo(Effect.PURE, Step.COMPUTE, _S, _S, "A.div(v, axis)"),
    Op.REDUCE: OpInfo(Effect.PURE, Step.COMPUTE, _S, _D, "A.sum(axis)"),
    Op.SPMM: OpInfo(Effect.PURE, Step.COMPUTE, _S, _D, "A @ D"),
    Op.SPMM_T: OpInfo(Effect.PURE, Step.COMPUTE, _S, _D, "A.T @ D"),
    Op.SDDMM: OpInfo(Effect.PURE, Step.COMPUTE, _S, _S, "gs.sddmm(A, U, V, op)"),
    Op.TRANSPOSE: OpInfo(Effect.PURE, Step.COMPUTE, _S, _C, "A.T"),
    Op.INDIVIDUAL_SAMPLE: OpInfo(Effect.RANDOM, Step.SELECT, (Layout.CSC,), _C,
                                 "A.individual_sample(k, probs, replace)"),
    Op.COLLECTIVE_SAMPLE: OpInfo(Effect.RANDOM, Step.SELECT, _S, _C,
                                 "A.collective_sample(k, node_probs, replace)"),
    Op.ROW: OpInfo(Effect.PURE, Step.FINALIZE, _S, _D, "A.row()"),
    Op.COLUMN: OpInfo(Effect.PURE, Step.FINALIZE, _S, _D, "A.column()"),
    Op.ALL_NODES: OpInfo(Effect.PURE, Step.FINALIZE, _S, _D, "A.all_nodes()"),
    Op.EDGES: OpInfo(Effect.PURE, Step.FINALIZE, _S, _D, "A.edges()"),
    Op.COMPACT: OpInfo(Effect.PURE, Step.FINALIZE, _S, _C, "A.compact()"),
}

#: the elementwise combinations ``gs.sddmm`` accepts (``dot`` reduces the feature axis)
SDDMM_OPS = ("dot", "add", "sub", "mul", "div")

assert set(OP_TABLE) == set(Op), "every Op needs exactly one OpInfo"


def info(op: Op) -> OpInfo:
    """The :class:`OpInfo` of ``op``."""
    return OP_TABLE[op]
