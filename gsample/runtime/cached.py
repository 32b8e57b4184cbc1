"""``CACHED`` values: frontier-independent values computed once per graph, then reused."""

from __future__ import annotations

import weakref
from collections.abc import Callable

import torch

from gsample.formats.csc import CSC
from gsample.formats.placement import offload
from gsample.ir import Op
from gsample.runtime.program import run

_VALUES: weakref.WeakKeyDictionary[CSC, dict] = weakref.WeakKeyDictionary()


class CachedValue:
    """The step of a ``CACHED`` node: its program's value for the graph it is given.

    Keyed by the backend and the node's ``meta["cache_key"]`` (a structural key of the
    program, so re-traced and repeated programs share a value; else the program's id), and
    recomputed when one of the graph's tensors, or a tensor constant of the program, was
    written in place since. ``lower`` is the lowering (:func:`gsample.runtime.lower.lower`,
    which builds these steps: passed in, so that neither module imports the other).
    """

    def __init__(self, node, backend: str, options, lower: Callable):
        self.program = node.attrs["program"]
        self.lower = lower
        self.backend, self.options = backend, options
        self.key = (backend, node.meta.get("cache_key", id(self.program)))
        self.consts = [
            n.attrs["value"]
            for n in self.program.nodes
            if n.op is Op.CONSTANT and isinstance(n.attrs["value"], torch.Tensor)
        ]
        (self.name,) = [n.attrs["name"] for n in self.program.nodes if n.op is Op.INPUT]
        self.lowered = {}

    def __call__(self, graph: CSC):
        per_graph = _VALUES.setdefault(graph, {})
        stamp = tuple(
            t._version
            for t in (
                graph.indptr,
                graph.rows,
                graph.row_ids,
                graph.col_ids,
                graph.values,
                graph.eids,
                *self.consts,
            )
            if isinstance(t, torch.Tensor)
        )
        hit = per_graph.get(self.key)
        if hit is None or hit[1] != stamp:
            device = str(graph.device)
            if device not in self.lowered:
                self.lowered[device] = self.lower(self.program, self.backend, self.options, device)
            # (the program's matrix argument is read as ``.csc``, as a gs.Matrix's is; its
            # result is a format: lowered without a wrap)
            out = run(self.lowered[device], {self.name: _Given(graph)})
            # of a graph in pinned host memory (UVA), edge-sized values go there too
            out = offload(graph, out)
            hit = per_graph[self.key] = (self.program, stamp, out)
        return hit[2]


class _Given:
    """A graph given to a program as its matrix argument (which it reads as ``.csc``)."""

    __slots__ = ("csc",)

    def __init__(self, csc: CSC):
        self.csc = csc
