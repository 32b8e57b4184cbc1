"""Backends: what runs the ops of the IR.

A :class:`Backend` declares the ops it implements (``capabilities``); the torch
backend implements all of them and is the semantic reference every other backend
is tested against, sample for sample.
"""
from __future__ import annotations

import abc

from ..ir import Op


class Backend(abc.ABC):
    """An executor of IR ops."""

    name: str = "abstract"
    capabilities: frozenset = frozenset()

    def supports(self, op: Op) -> bool:
        return op in self.capabilities

    @abc.abstractmethod
    def run(self, ir_op: Op, /, **kwargs):
        """Run ``ir_op`` on its (already checked) inputs and attributes, named as the op
        table names them (random ops also get ``key``, their key prefix)."""


_BACKENDS: dict = {}


def get_backend(name: str = "torch") -> Backend:
    """The backend called ``name``: ``"torch"`` (CPU and CUDA tensors) or ``"cuda"``
    (CuPy kernels; ops without a kernel run the torch backend's code)."""
    if name not in _BACKENDS:
        if name == "torch":
            from .torch import TorchBackend
            _BACKENDS[name] = TorchBackend()
        elif name == "cuda":
            from .cuda import CudaBackend
            _BACKENDS[name] = CudaBackend()
        else:
            raise ValueError(f"backend: unknown backend {name!r}; available: 'torch', 'cuda'")
    return _BACKENDS[name]
