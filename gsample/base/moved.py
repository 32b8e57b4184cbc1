"""Old module paths that moved when the package was organised in rooms.

``import gsample.trace`` (or ``from gsample.features import batch_nodes``) still works: a
finder on ``sys.meta_path`` answers each old name with its new module, once, under the old
name too, with a :class:`DeprecationWarning` saying where it lives now. No module is left
at the top of the package for it.

Examples
--------
>>> import gsample
>>> import warnings
>>> with warnings.catch_warnings(record=True):
...     from gsample.trace import TraceError          # now gsample.capture.trace
>>> TraceError.__module__
'gsample.capture.trace'
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: old module -> the module it became (not ``gsample.explain``: importing a module of that
#: name would replace the function ``gs.explain`` on the package)
MOVED = {
    "gsample.random": "gsample.base.random",
    "gsample.validate": "gsample.base.validate",
    "gsample.convert": "gsample.matrix.convert",
    "gsample.trace": "gsample.capture.trace",
    "gsample.walks": "gsample.capture.walks",
    "gsample.walk_fusion": "gsample.capture.walk_fusion",
    "gsample.super_batcher": "gsample.runtime.super_batcher",
    "gsample.runtime.super_batch": "gsample.passes.super_batch",
    "gsample.runtime.blocks": "gsample.runtime.block_diagonal",
    "gsample.batch": "gsample.loader.batch",
    "gsample.pipeline": "gsample.loader.pipeline",
    "gsample.features": "gsample.loader.features",
    "gsample.output": "gsample.interop",
    "gsample.output.pyg": "gsample.interop.pyg.data",
    "gsample.output.dgl": "gsample.interop.dgl",
    "gsample.hetero.output": "gsample.interop.pyg.hetero",
    "gsample.calibrate": "gsample.cost.calibrate",
    "gsample._cost_default": "gsample.cost.default",
}


class _Alias(importlib.abc.Loader):
    """Loads an old name as the module it became (the same module object)."""

    def __init__(self, new: str):
        self.new = new

    def create_module(self, spec):
        return importlib.import_module(self.new)

    def exec_module(self, module) -> None:
        pass  # already executed under its new name


class MovedFinder(importlib.abc.MetaPathFinder):
    """Finds the old names of :data:`MOVED`, warning once per name."""

    def find_spec(self, fullname: str, path=None, target=None):
        new = MOVED.get(fullname)
        if new is None:
            return None
        warnings.warn(
            f"{fullname} moved to {new}; import it from there (the old path will go)",
            DeprecationWarning,
            stacklevel=3,
        )
        return importlib.util.spec_from_loader(fullname, _Alias(new))


def install() -> None:
    """Put :class:`MovedFinder` first on ``sys.meta_path`` (once): an old name whose new
    parent package holds a file of the same name (``gsample.output.pyg``) must not be
    loaded a second time from there."""
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedFinder())


__all__ = ["MOVED", "MovedFinder", "install"]
