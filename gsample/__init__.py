"""gsample: graph sampling for graph learning, written as sparse-matrix programs.

>>> import torch, gsample as gs
>>> A = gs.datasets.rmat(1000, 10000, seed=0)
>>> gs.manual_seed(0)
>>> s = A[:, torch.arange(8)].individual_sample(5)
>>> s.shape
(1000, 8)

Ops run on the backend ``gs.use_backend`` sets, ``"auto"`` by default: the CUDA backend's
kernels for a graph on a GPU where CuPy runs (``pip install gsample[cuda]``), the torch
backend otherwise; ``gs.backend_for(A)`` names the one a graph gets.
"""

from gsample import datasets, distributed
from gsample.backend import backend_for, current_backend, use_backend
from gsample.base import moved
from gsample.base.random import initial_seed, manual_seed
from gsample.capture.trace import TraceError
from gsample.capture.walks import walk
from gsample.compiler.compiled import CompiledSampler, compile
from gsample.compiler.explain import explain
from gsample.hetero import HeteroGraph
from gsample.loader.batch import Batch
from gsample.loader.dataloader import DataLoader
from gsample.matrix.sparse import Matrix, sddmm

__version__ = "0.1.0"

moved.install()  # old module paths (gsample.trace, gsample.features, ...) keep working

__all__ = [
    "Batch",
    "CompiledSampler",
    "DataLoader",
    "HeteroGraph",
    "Matrix",
    "TraceError",
    "backend_for",
    "compile",
    "current_backend",
    "datasets",
    "distributed",
    "explain",
    "initial_seed",
    "manual_seed",
    "sddmm",
    "use_backend",
    "walk",
]
