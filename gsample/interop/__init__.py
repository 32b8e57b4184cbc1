"""Interoperation with PyG and DGL: mini-batches as PyG ``Data`` / ``HeteroData`` and DGL
blocks, and PyG's loader API (``NeighborLoader``, ``Sampler``) over gsample samplers.
Neither library is imported before a conversion asks for it."""

from gsample.interop import dgl, pyg

__all__ = ["dgl", "pyg"]
