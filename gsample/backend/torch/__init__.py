"""The PyTorch backend: the semantic reference, on CPU tensors and CUDA tensors alike.

Its registry below is the declaration of what it runs: every op on CSC, and the ops whose
code also takes CSR (plain or compact) and COO forms (``layout_ops``) on those.
"""

from __future__ import annotations

from gsample.backend import Backend
from gsample.backend.torch import (
    compute,
    draws,
    edge_filter,
    extract,
    finalize,
    from_neighbors,
    fused_reduce,
    fused_select,
    fused_walk,
    layout_ops,
    select,
    walk,
)
from gsample.formats.layouts import NAMES
from gsample.ir import Op

_CSC = ("csc",)
_ANY = NAMES
_CSC_CSR = ("csc", "csr", "csr-compact")

#: op -> (its code, the layouts that code takes)
IMPLS = {
    Op.SLICE_COLS: (extract.slice_cols, _CSC),
    Op.SLICE_ROWS: (layout_ops.slice_rows, _CSC_CSR),
    Op.SLICE_ROWS_COLS: (extract.slice_rows_cols, _CSC),
    Op.TRANSPOSE: (layout_ops.transpose, _ANY),
    Op.EDGE_MAP: (layout_ops.edge_map, _ANY),
    Op.EDGE_BROADCAST: (compute.edge_broadcast, _ANY),
    Op.REDUCE: (layout_ops.reduce, _ANY),
    Op.FUSED_EDGE_MAP: (layout_ops.fused_edge_map, _ANY),
    Op.FUSED_EDGE_MAP_REDUCE: (layout_ops.fused_edge_map_reduce, _ANY),
    Op.FUSED_EDGE_NORMALIZE: (layout_ops.fused_edge_normalize, _ANY),
    Op.SLICE_REDUCE: (fused_reduce.slice_reduce, _CSC),
    Op.SPMM: (layout_ops.spmm, _ANY),
    Op.SPMM_T: (layout_ops.spmm_t, _ANY),
    Op.SDDMM: (compute.sddmm, _ANY),
    Op.VALUES: (layout_ops.values, _ANY),
    Op.ROW_IDS: (finalize.row_ids, _ANY),
    Op.COL_IDS: (finalize.col_ids, _ANY),
    Op.INDIVIDUAL_SAMPLE: (select.individual_sample, _CSC),
    Op.COLLECTIVE_SAMPLE: (select.collective_sample, _CSC),
    Op.SLICE_INDIVIDUAL_SAMPLE: (fused_select.slice_individual_sample, _CSC),
    Op.SLICE_COLLECTIVE_SAMPLE: (fused_select.slice_collective_sample, _CSC),
    Op.ROW: (layout_ops.row, _ANY),
    Op.COLUMN: (finalize.column, _ANY),
    Op.ALL_NODES: (layout_ops.all_nodes, _ANY),
    Op.EDGES: (finalize.edges, ("csc", "coo")),
    Op.COMPACT: (finalize.compact, _CSC),
    Op.TO_LAYOUT: (layout_ops.to_layout, _ANY),
    Op.ALIAS_TABLE: (walk.alias_table, _CSC),
    Op.RANDOM_WALK: (walk.random_walk, _CSC),
    Op.FUSED_WALK: (fused_walk.fused_walk, _CSC),
    Op.RANDOM_UNIFORM: (draws.random_uniform, _CSC),
    Op.RANDOM_COUNT: (draws.random_count, _CSC),
    Op.FILTER_EDGES: (edge_filter.filter_edges, _CSC),
    Op.FROM_NEIGHBORS: (from_neighbors.from_neighbors, _CSC),
}


class TorchBackend(Backend):
    """Runs every op with PyTorch operators on the tensors' own device."""

    name = "torch"

    def __init__(self):
        super().__init__()
        for op, (fn, layouts) in IMPLS.items():
            self.register(op, layouts, fn)
