"""The CUDA backend: kernels from ``kernels/`` compiled through NVRTC (CuPy's bindings).

Kernels for every op the IR lowers to, by family (``kernels/README.md``):

* ``extract.cu``: column / row slicing and transposition (a load-balanced segment gather,
  a device hash table for membership, int32 reads of a large graph);
* ``sampling.cu``: the draws of individual (uniform and weighted) and collective sampling,
  plain and fused with the column slice;
* ``segment_reduce.cu`` + ``convert.cu``: segment reductions, SpMM, SDDMM, edge
  broadcasts, and the CSC -> CSR / COO pieces they need;
* ``edge_map.cu`` + :mod:`.codegen`: generated kernels for fused edge maps (and the map of a
  fused edge-map-reduce);
* ``relabel.cu``: unique / relabel (first-occurrence order) for the finalize ops.

Ops with no kernel (graph structure, layout conversions other than CSC) and inputs a kernel
does not take (CPU tensors, non-CSC layouts, some dtypes) run the torch backend's code
(the executor falls back per op: :func:`gsample.backend.run_op`). Samples are bit-equal to
the torch backend's; reductions add in a fixed order of their own (bit-reproducible, equal
to the torch backend's results up to float rounding).
"""
from __future__ import annotations

from ...ir import Op
from ...layouts import CSR
from ...storage import CSC
from .. import Backend
from . import compute, edge_map, extract, finalize, sampling

IMPLS = {
    Op.SLICE_COLS: extract.slice_cols,                         # kernels/extract.cu
    Op.SLICE_ROWS: extract.slice_rows,
    Op.TRANSPOSE: extract.transpose,
    Op.INDIVIDUAL_SAMPLE: sampling.individual_sample,
    Op.SLICE_INDIVIDUAL_SAMPLE: sampling.slice_individual_sample,
    Op.COLLECTIVE_SAMPLE: sampling.collective_sample,
    Op.SLICE_COLLECTIVE_SAMPLE: sampling.slice_collective_sample,
    Op.REDUCE: compute.reduce,                                 # kernels/segment_reduce.cu
    Op.SPMM: compute.spmm,
    Op.SPMM_T: compute.spmm_t,
    Op.SDDMM: compute.sddmm,
    Op.EDGE_BROADCAST: compute.edge_broadcast,
    Op.FUSED_EDGE_MAP: edge_map.fused_edge_map,                # generated kernels
    Op.FUSED_EDGE_MAP_REDUCE: edge_map.fused_edge_map_reduce,
    Op.ROW: finalize.row,                                      # kernels/relabel.cu
    Op.ALL_NODES: finalize.all_nodes,
    Op.COMPACT: finalize.compact,
    Op.EDGES: finalize.edges,
    Op.COLUMN: finalize.column,                                # views: torch's code
    Op.ROW_IDS: finalize.row_ids,
    Op.COL_IDS: finalize.col_ids,
}

#: layouts besides CSC that an op's kernels take (others convert or run the torch code)
LAYOUTS = {Op.SLICE_ROWS: (CSR,)}                   # the segment gather over the CSR's rows


class CudaBackend(Backend):
    """Runs the ops it has kernels for on CUDA tensors."""

    name = "cuda"
    capabilities = frozenset(IMPLS)

    def accepts(self, ir_op, kwargs: dict) -> bool:
        """Graphs on a GPU, in CSC (or a layout in ``LAYOUTS`` for the op); other inputs
        run the torch code where they are."""
        A = kwargs.get("A")
        return (isinstance(A, (CSC, *LAYOUTS.get(ir_op, ()))) and A.indptr.is_cuda)

    def run(self, ir_op, /, **kwargs):
        A = kwargs["A"]
        if not A.indptr.is_cuda:
            raise ValueError("backend: the 'cuda' backend needs the graph on a GPU "
                             "(A.to('cuda'))")
        return IMPLS[ir_op](**kwargs)
