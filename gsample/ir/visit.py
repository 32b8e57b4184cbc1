"""One dispatch of a graph's nodes by kind, shared by whatever walks a program node by node:
the lowering (``gsample.runtime.lower``), the interpreter (``gsample.runtime.interpret``)
and the super-batch rewrite (``gsample.passes.super_batch``).

A node is an argument (``INPUT``), a captured value (``CONSTANT``), opaque user code
(``DENSE``), an element of a tuple (``GETITEM``), a value computed once per graph
(``CACHED``), the program's result (``OUTPUT``), or an op of the op table (everything else:
the sparse ops, which a backend implements). A :class:`NodeVisitor` subclass says what to do
for each kind in one method per kind; :meth:`NodeVisitor.visit` picks the method, with one
dictionary lookup per node (the table is built once per subclass).
"""

from __future__ import annotations

from typing import ClassVar

from gsample.ir.graph import Node
from gsample.ir.ops import Op

#: the node kinds that are program structure, not ops of the op table, and the
#: :class:`NodeVisitor` method that handles each (every other op: :meth:`NodeVisitor.op`)
STRUCTURE = {
    Op.INPUT: "input",
    Op.CONSTANT: "constant",
    Op.DENSE: "dense",
    Op.GETITEM: "getitem",
    Op.CACHED: "cached",
    Op.OUTPUT: "output",
}


class NodeVisitor:
    """Dispatch of nodes by kind: :meth:`visit` calls the method of the node's kind.

    A subclass overrides the methods of the kinds it meets: :meth:`input`,
    :meth:`constant`, :meth:`dense`, :meth:`getitem`, :meth:`cached`, :meth:`output` and
    :meth:`op` (an op of the op table: a sparse op). One it does not override raises
    ``NotImplementedError`` naming the node.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> class Count(NodeVisitor):
    ...     def __init__(self):
    ...         self.ops = 0
    ...     def input(self, node): pass
    ...     def output(self, node): pass
    ...     def op(self, node):
    ...         self.ops += 1
    >>> sampler = gs.compile(lambda A, seeds: A[:, seeds].individual_sample(5))
    >>> graph = sampler.program(gs.datasets.rmat(100, 500, seed=0), torch.arange(8))
    >>> counter = Count()
    >>> for node in graph.nodes:           # graph: a sampler's IR (gsample.ir.Graph)
    ...     counter.visit(node)
    >>> counter.ops                        # the slice and the sample, fused into one op
    1
    """

    #: op -> the function handling it (for the structure kinds; built per subclass)
    _table: ClassVar[dict] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._table = {op: getattr(cls, name) for op, name in STRUCTURE.items()}

    def visit(self, node: Node):
        """What the method of ``node``'s kind returns."""
        return self._table.get(node.op, type(self).op)(self, node)

    def _missing(self, node: Node):
        raise NotImplementedError(
            f"{type(self).__name__}: no handling of {node.op.value} nodes (%{node.name})"
        )

    def input(self, node: Node):
        """An argument of the program (``attrs["name"]``)."""
        return self._missing(node)

    def constant(self, node: Node):
        """A captured value (``attrs["value"]``)."""
        return self._missing(node)

    def dense(self, node: Node):
        """Opaque user code (``attrs["fn"]`` called as ``attrs["template"]``)."""
        return self._missing(node)

    def getitem(self, node: Node):
        """``x[index]`` of a tuple value."""
        return self._missing(node)

    def cached(self, node: Node):
        """A value computed once per graph (``attrs["program"]`` on input ``graph``)."""
        return self._missing(node)

    def output(self, node: Node):
        """The program's result (``attrs["template"]``)."""
        return self._missing(node)

    def op(self, node: Node):
        """An op of the op table (a sparse op: ``gsample.ir.info(node.op)``)."""
        return self._missing(node)


__all__ = ["STRUCTURE", "NodeVisitor"]
