"""What a pass returns: the graph and whether the pass changed it.

Every pass of :data:`gsample.passes.PIPELINE` is a plain function ``Graph -> PassResult``
(as torch.fx's ``PassResult(graph_module, modified)``). A pass works on the graph in place
and counts the rewrites it makes; ``changed`` is that count being non-zero, so the pipeline
learns which passes changed the program without printing or comparing it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gsample.ir import Graph


@dataclass(frozen=True)
class PassResult:
    """A pass's result: the graph (changed in place or new) and whether the pass changed it.

    Attributes
    ----------
    graph : Graph
        The program after the pass.
    changed : bool
        Whether the pass rewrote anything: added, removed or rewired a node, or set an
        attribute or a layout the printed IR shows. False means ``graph`` is the program
        the pass was given, as it was.

    Examples
    --------
    >>> result = cse(graph)                  # doctest: +SKIP
    >>> result.changed, len(result.graph.nodes)  # doctest: +SKIP
    (True, 12)
    """

    graph: Graph
    changed: bool


#: a pass: a plain function from a program to a :class:`PassResult`
Pass = Callable[[Graph], PassResult]


__all__ = ["Pass", "PassResult"]
