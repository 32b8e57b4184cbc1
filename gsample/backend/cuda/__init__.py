"""The CUDA backend: kernels from ``kernels/`` compiled through NVRTC (CuPy's bindings).

Kernels for every op the IR lowers to, by family (``kernels/README.md``):

* ``extract.cu``: column / row slicing and transposition (a load-balanced segment gather,
  a device hash table for membership, int32 reads of a large graph);
* ``sampling.cu``: the draws of individual (uniform and weighted) and collective sampling,
  plain and fused with the column slice;
* ``cdf.cu``: weighted draws with replacement by inverse CDF, running sums per column (a
  super-batch draws as its mini-batches, no loop), the weights checked by device flags;
* ``segment_reduce.cu`` + ``convert.cu``: segment reductions, SpMM, SDDMM, edge
  broadcasts, and the CSC -> CSR / COO pieces they need;
* ``edge_map.cu`` + :mod:`.codegen`: generated kernels for fused edge maps (and the map of a
  fused edge-map-reduce);
* ``normalize.cu``: a fused column normalisation (``X.div(X.sum(axis=0), axis=0)``) in one
  launch (``tree.cuh``: the reductions' exact arithmetic and tree, shared with
  ``segment_reduce.cu``);
* ``relabel.cu``: unique / relabel (first-occurrence order) for the finalize ops;
* ``walk.cu``: random walks, every step of every walker (of a mini-batch or a super-batch)
  in one launch; ``fused_walk.cu`` + :mod:`.walk_codegen`: a ``gs.walk`` of a per-walker step
  (Metropolis-Hastings) likewise, its step generated as straight-line C.

``random_uniform`` / ``random_count`` (one hash per entry) run torch code on the device,
sync-free (:mod:`.draws`); so does ``filter_edges`` (:mod:`.edge_filter`).

Ops with no kernel (graph structure, layout conversions other than CSC) and inputs a kernel
does not take (CPU tensors, non-CSC layouts, some dtypes) run the torch backend's code
(the executor falls back per op: :func:`gsample.backend.run_op`). Samples are bit-equal to
the torch backend's, except weighted draws with replacement by inverse CDF (running sums
per column here, over all columns there: the same draws up to float rounding, docs/architecture.md §3);
reductions add in a fixed order of their own (bit-reproducible, equal to the torch
backend's results up to float rounding).
"""

from __future__ import annotations

from gsample.backend import Backend
from gsample.backend.cuda import (
    compute,
    draws,
    edge_filter,
    edge_map,
    extract,
    finalize,
    fused_walk,
    layerwise,
    nodewise,
    normalize,
    sampling,
    walk,
)
from gsample.ir import Op

_CSC = ("csc",)
#: op -> (its kernels' host code, the layouts it takes); the rest runs the torch code
IMPLS = {
    Op.SLICE_COLS: (extract.slice_cols, _CSC),  # kernels/extract.cu
    Op.SLICE_ROWS: (extract.slice_rows, ("csc", "csr", "csr-compact")),  # + segment gather
    Op.TRANSPOSE: (extract.transpose, _CSC),
    Op.INDIVIDUAL_SAMPLE: (sampling.individual_sample, _CSC),  # kernels/sampling.cu
    Op.SLICE_INDIVIDUAL_SAMPLE: (sampling.slice_individual_sample, _CSC),
    Op.COLLECTIVE_SAMPLE: (sampling.collective_sample, _CSC),
    Op.SLICE_COLLECTIVE_SAMPLE: (sampling.slice_collective_sample, _CSC),
    Op.REDUCE: (compute.reduce, _CSC),  # kernels/segment_reduce.cu
    Op.SPMM: (compute.spmm, _CSC),
    Op.SPMM_T: (compute.spmm_t, _CSC),
    Op.SDDMM: (compute.sddmm, _CSC),
    Op.EDGE_BROADCAST: (compute.edge_broadcast, _CSC),
    Op.FUSED_EDGE_MAP: (edge_map.fused_edge_map, _CSC),  # generated kernels
    Op.FUSED_EDGE_MAP_REDUCE: (edge_map.fused_edge_map_reduce, _CSC),
    Op.FUSED_EDGE_NORMALIZE: (normalize.fused_edge_normalize, _CSC),  # kernels/normalize.cu
    Op.ROW: (finalize.row, _CSC),  # kernels/relabel.cu
    Op.ALL_NODES: (finalize.all_nodes, _CSC),
    Op.COMPACT: (finalize.compact, _CSC),
    Op.EDGES: (finalize.edges, _CSC),
    Op.COLUMN: (finalize.column, _CSC),  # views: torch's code
    Op.ROW_IDS: (finalize.row_ids, _CSC),
    Op.COL_IDS: (finalize.col_ids, _CSC),
    Op.RANDOM_WALK: (walk.random_walk, _CSC),  # kernels/walk.cu
    Op.FUSED_WALK: (fused_walk.fused_walk, _CSC),  # generated: fused_walk.cu
}


#: ops whose code above never reads a size back to the host (views and per-edge kernels)
NO_READ_BACK = frozenset({Op.COLUMN, Op.ROW_IDS, Op.COL_IDS, Op.EDGE_BROADCAST})
#: random ops whose code above also takes a super-batch's keys: the torch code with the
#: column statistics of weighted draws as kernels (``sampling.BatchDraws``: no atomics)
BATCH_KEYS = frozenset({Op.INDIVIDUAL_SAMPLE, Op.SLICE_INDIVIDUAL_SAMPLE})
#: inputs whose values the code above checks itself (the runtime's check only converts
#: them): edge weights, with the draws (``sampling.weighted_with``: device flags read back
#: with the sizes)
CHECKS = {Op.INDIVIDUAL_SAMPLE: ("probs",), Op.SLICE_INDIVIDUAL_SAMPLE: ("probs",)}


class CudaBackend(Backend):
    """Runs the ops it has kernels for on CUDA tensors."""

    name = "cuda"

    def __init__(self):
        super().__init__()
        for op, (fn, layouts) in IMPLS.items():
            self.register(
                op,
                layouts,
                fn,
                syncs=op not in NO_READ_BACK,
                batch_keys=op in BATCH_KEYS,
                checks=CHECKS.get(op, ()),
            )
        nodewise.register(self)  # sync-free variants (kernels/nodewise.cu, frontier.cu)
        layerwise.register(self)  # and of the layer-wise ops (layerwise.cu, rowsum.cu)
        walk.register(self)  # and of random walks (kernels/walk.cu)
        fused_walk.register(self)  # and of fused gs.walk steps (kernels/fused_walk.cu)
        draws.register(self)  # keyed values per entry (torch code, sync-free)
        edge_filter.register(self)  # and the edge filter (bounded result)

    def runs_here(self, inputs: dict) -> bool:
        """Graphs on a GPU; inputs on the CPU run the torch code where they are."""
        A = inputs.get("A")
        return A is not None and A.indptr.is_cuda
