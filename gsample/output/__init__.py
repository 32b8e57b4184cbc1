"""Sampler outputs as other libraries' mini-batches: PyG (:mod:`.pyg`) and DGL (:mod:`.dgl`).

Both read what a sampler function returned (``gs.Batch.out``) and never import their
library before a conversion is asked for.
"""
from .pyg import PygSample, pyg_sample

__all__ = ["PygSample", "pyg_sample"]
