"""PyG's loader API on gsample samplers: ``NeighborLoader``, ``LinkNeighborLoader`` and
``Sampler`` (a PyG ``BaseSampler`` for PyG's own ``NodeLoader`` / ``LinkLoader``);
``users_movies``, a small ``HeteroData`` the examples use.

The implementation lives in :mod:`gsample.interop.pyg.loader`,
:mod:`gsample.interop.pyg.neighbor_loader`, :mod:`gsample.interop.pyg.link` and
:mod:`gsample.interop.pyg.negatives`; this package is their public import path.
"""

from gsample.interop.pyg.link import LinkNeighborLoader
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
from gsample.interop.pyg.negatives import NegativeSampler, NegativeSampling, negative_sample
from gsample.interop.pyg.toy import users_movies

__all__ = [
    "PYG_ONLY",
    "LinkNeighborLoader",
    "NegativeSampler",
    "NegativeSampling",
    "NeighborLoader",
    "PygOnly",
    "Sampler",
    "UnsupportedArgument",
    "batch_key",
    "check_pyg_arguments",
    "negative_sample",
    "neighbor_sample",
    "users_movies",
    "with_edge_weight",
]
