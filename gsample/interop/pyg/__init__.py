"""PyG support: sample outputs as PyG objects (:mod:`~gsample.interop.pyg.data`,
:mod:`~gsample.interop.pyg.hetero`) and PyG's loader API (:mod:`~gsample.interop.pyg.loader`),
public as :mod:`gsample.pyg`."""
