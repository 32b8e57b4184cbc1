"""PyG support: sample outputs as PyG objects (:mod:`~gsample.interop.pyg.data`,
:mod:`~gsample.interop.pyg.hetero`) and PyG's loader API (:mod:`~gsample.interop.pyg.loader`),
public as :mod:`gsample.pyg`."""

from gsample.interop.pyg import data, hetero

# (the loader API, a level above these, is imported by its public path gsample.pyg)
__all__ = ["data", "hetero"]
