"""PyG's loader API on gsample samplers: ``NeighborLoader`` and ``Sampler`` (a PyG
``BaseSampler`` for PyG's own ``NodeLoader`` / ``LinkLoader``).

The implementation lives in :mod:`gsample.interop.pyg.loader`; this package is its public
import path.
"""

from gsample.interop.pyg.loader import (
    PYG_ONLY,
    NeighborLoader,
    PygOnly,
    Sampler,
    UnsupportedArgument,
    batch_key,
    check_pyg_arguments,
    neighbor_sample,
    with_edge_weight,
)

__all__ = [
    "PYG_ONLY",
    "NeighborLoader",
    "PygOnly",
    "Sampler",
    "UnsupportedArgument",
    "batch_key",
    "check_pyg_arguments",
    "neighbor_sample",
    "with_edge_weight",
]
