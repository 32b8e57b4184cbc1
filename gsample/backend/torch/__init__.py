"""The PyTorch backend: the semantic reference, on CPU tensors and CUDA tensors alike."""
from __future__ import annotations

from ...ir import Op
from .. import Backend
from . import compute, extract, finalize, select
from . import fused_compute
from . import fused_select
from . import layout_ops

IMPLS = {
    Op.SLICE_COLS: extract.slice_cols,
    Op.SLICE_ROWS: extract.slice_rows,
    Op.TRANSPOSE: extract.transpose,
    Op.EDGE_MAP: compute.edge_map,
    Op.EDGE_BROADCAST: compute.edge_broadcast,
    Op.REDUCE: compute.reduce,
    Op.FUSED_EDGE_MAP: fused_compute.fused_edge_map,
    Op.FUSED_EDGE_MAP_REDUCE: fused_compute.fused_edge_map_reduce,
    Op.SPMM: compute.spmm,
    Op.SPMM_T: compute.spmm_t,
    Op.SDDMM: compute.sddmm,
    Op.VALUES: compute.values,
    Op.ROW_IDS: finalize.row_ids,
    Op.COL_IDS: finalize.col_ids,
    Op.INDIVIDUAL_SAMPLE: select.individual_sample,
    Op.COLLECTIVE_SAMPLE: select.collective_sample,
    Op.SLICE_INDIVIDUAL_SAMPLE: fused_select.slice_individual_sample,
    Op.SLICE_COLLECTIVE_SAMPLE: fused_select.slice_collective_sample,
    Op.ROW: finalize.row,
    Op.COLUMN: finalize.column,
    Op.ALL_NODES: finalize.all_nodes,
    Op.EDGES: finalize.edges,
    Op.COMPACT: finalize.compact,
}
# ops that also take CSR / COO inputs (gsample.layouts), and the conversion op
IMPLS.update(layout_ops.IMPLS)


class TorchBackend(Backend):
    """Runs every op with PyTorch operators on the tensors' own device."""

    name = "torch"
    capabilities = frozenset(IMPLS)

    def run(self, ir_op, /, **kwargs):
        return IMPLS[ir_op](**kwargs)
