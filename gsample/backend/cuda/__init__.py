"""The CUDA backend: kernels from ``kernels/`` compiled through CuPy.

Today it has kernels for the draws of individual (uniform and weighted) and collective
sampling (plain and fused with the column slice: ``kernels/sampling.cu``) and generated
kernels for fused edge maps (``kernels/edge_map.cu`` + ``codegen``; float64); every other
op runs the torch backend's code on the CUDA tensors (the executor falls back per op,
by the declared ``capabilities``). Samples are bit-equal to the torch backend's.
"""
from __future__ import annotations

from ...ir import Op
from .. import Backend
from . import edge_map, sampling

IMPLS = {
    Op.INDIVIDUAL_SAMPLE: sampling.individual_sample,
    Op.SLICE_INDIVIDUAL_SAMPLE: sampling.slice_individual_sample,
    Op.COLLECTIVE_SAMPLE: sampling.collective_sample,
    Op.SLICE_COLLECTIVE_SAMPLE: sampling.slice_collective_sample,
    Op.FUSED_EDGE_MAP: edge_map.fused_edge_map,                # generated kernels
    Op.FUSED_EDGE_MAP_REDUCE: edge_map.fused_edge_map_reduce,
}


class CudaBackend(Backend):
    """Runs the ops it has kernels for on CUDA tensors."""

    name = "cuda"
    capabilities = frozenset(IMPLS)

    def run(self, ir_op, /, **kwargs):
        A = kwargs["A"]
        if not A.indptr.is_cuda:
            raise ValueError("backend: the 'cuda' backend needs the graph on a GPU "
                             "(A.to('cuda'))")
        return IMPLS[ir_op](**kwargs)
