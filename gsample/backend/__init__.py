"""Backends: what runs the ops of the IR.

A :class:`Backend` declares the ops it implements (``capabilities``); the torch
backend implements all of them and is the semantic reference every other backend
is tested against, sample for sample.
"""
from __future__ import annotations

import abc
import contextlib
import contextvars

from ..ir import Op


class Backend(abc.ABC):
    """An executor of IR ops."""

    name: str = "abstract"
    capabilities: frozenset = frozenset()

    def supports(self, op: Op) -> bool:
        return op in self.capabilities

    def accepts(self, ir_op: Op, kwargs: dict) -> bool:
        """Whether this backend can run ``ir_op`` on these inputs (device, layout)."""
        return True

    @abc.abstractmethod
    def run(self, ir_op: Op, /, **kwargs):
        """Run ``ir_op`` on its (already checked) inputs and attributes, named as the op
        table names them (random ops also get ``key``, their key prefix)."""


_BACKENDS: dict = {}
#: the backend eager ops (and compiled samplers without an explicit ``backend``) run on
_CURRENT = contextvars.ContextVar("gsample_backend", default="torch")


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


def current_backend() -> str:
    """The name of the backend eager ops run on (see :func:`use_backend`)."""
    return _CURRENT.get()


@contextlib.contextmanager
def use_backend(name: str):
    """Run eager ops, and compiled samplers made without ``backend=``, on backend ``name``.

    Parameters
    ----------
    name : str
        ``"torch"`` or ``"cuda"``.

    Examples
    --------
    >>> with gs.use_backend("cuda"):
    ...     s = A.to("cuda")[:, seeds].individual_sample(10)   # CuPy kernels where they exist
    """
    get_backend(name)                          # an unknown name fails here, clearly
    token = _CURRENT.set(name)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def run_op(backend: Backend, ir_op: Op, kwargs: dict):
    """Run ``ir_op`` on ``backend``, or on the torch reference where ``backend`` has no
    kernel for it or its data is not on a GPU (the per-op fallback of DESIGN §2)."""
    if backend.name != "torch" and backend.supports(ir_op) and backend.accepts(ir_op, kwargs):
        return backend.run(ir_op, **kwargs)
    return get_backend("torch").run(ir_op, **kwargs)
