"""The PyTorch backend: the semantic reference, on CPU tensors and CUDA tensors alike.

Each op's code is registered where it is written, with ``@torch_impl(op, layouts=...)``
(:class:`gsample.backend.Implementations`): every op on CSC, and the ops whose code also
takes CSR (plain or compact) and COO forms (``layout_ops``) on those. Importing this
package imports every module of it, so :class:`TorchBackend` runs what they registered.
"""

from __future__ import annotations

import importlib
import pkgutil

from gsample.backend.registry import Backend, torch_impl

# every module of the package: the registrations are made at import (a new module needs
# no line here)
for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")


class TorchBackend(Backend):
    """Runs every op with PyTorch operators on the tensors' own device."""

    name = "torch"
    implementations = torch_impl
