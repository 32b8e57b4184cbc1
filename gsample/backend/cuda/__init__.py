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

* ``temporal.cu``: disjoint and temporal neighbour sampling (``temporal_sample``, uniform
  draws): allowed edges by a binary search in each column's time order, per-seed keys;
  ``temporal_walk.cu``: temporal random walks (``temporal_walk``, ``temporal_walk_edges``), a
  thread per walker, each step's allowed edges by a binary search in that time order.
* :mod:`.listed`: LADIES's collective sample with its probabilities at the slice's rows
  only (``listed_collective_sample``, the ``listed_rows`` pass's; the exact row sums of
  ``rowsum.cu`` over the slice's distinct rows, the dense sampler's keys), where its
  ``listed.LISTED`` switch asks (``"auto"``: graphs of at least ``listed.MIN_NODES`` nodes
  on the device; :meth:`CudaBackend.listed_min_nodes`, :meth:`CudaBackend.listed_pinned`).
* ``first_reached.cu``: disjoint sampling's next frontier (``first_reached``): the pairs
  (seed slot, node) in a device hash table (the first edge by ``atomicMin``), the new ones
  compacted by a single-pass scan, placed by key within their (mini-batch, slot) group, and
  the new state merged; one read-back.

``random_uniform`` / ``random_count`` (one hash per entry) run torch code on the device,
sync-free (:mod:`.draws`); so does ``filter_edges`` (:mod:`.edge_filter`).

Ops with no kernel (graph structure, layout conversions other than CSC) and inputs a kernel
does not take (CPU tensors, non-CSC layouts, some dtypes) run the torch backend's code
(the executor falls back per op: :func:`gsample.backend.run_op`). Each kernel's host code
is registered where it is written, with ``@cuda_impl(op, ...)``
(:class:`gsample.backend.Implementations`); importing this package imports every module of
it (no CuPy needed: kernels compile at their first launch), so :class:`CudaBackend` runs
what they registered. Samples are bit-equal to
the torch backend's, except weighted draws with replacement by inverse CDF (running sums
per column here, over all columns there: the same draws up to float rounding,
docs/architecture.md §3);
reductions add in a fixed order of their own (bit-reproducible, equal to the torch
backend's results up to float rounding).
"""

from __future__ import annotations

import importlib
import pkgutil

from gsample.backend.cuda import listed
from gsample.backend.registry import Backend, cuda_impl

# every module of the package: the registrations are made at import (a new module needs
# no line here)
for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")


class CudaBackend(Backend):
    """Runs the ops it has kernels for on CUDA tensors."""

    name = "cuda"
    implementations = cuda_impl

    def listed_min_nodes(self) -> int | None:
        """The fewest nodes of a graph whose LADIES rows are listed, from the ``LISTED``
        switch of :mod:`.listed` (``MIN_NODES`` by default: below it the dense kernels
        cost less)."""
        return listed.min_nodes()

    def listed_pinned(self) -> bool:
        """Whether a graph in pinned host memory is listed too (only when ``LISTED`` is
        True: there the listing's passes over the slice read it over the host link)."""
        return listed.pinned()

    def runs_here(self, inputs: dict) -> bool:
        """Graphs on a GPU; inputs on the CPU run the torch code where they are."""
        A = inputs.get("A")
        return A is not None and A.indptr.is_cuda
