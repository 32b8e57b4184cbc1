"""The layout pass's cost model: size estimates of IR values and the price of a plan.

Sizes come from the example call the program is compiled for: :func:`annotate_inputs`
records, on each ``INPUT`` node, the argument's sizes (``meta["example"]``). From those,
:func:`estimate` derives the size of every value by these rules (``N`` nodes; ``E``, ``R``,
``C``: edges, rows, columns of the input ``A``; ``n``: the length of the index tensor):

==========================  ======================================================
graph input / cached value  its own ``(E, R, C)`` (a cached program: by these rules)
``A[:, cols]``              ``C' = n``, ``E' = n * E / C``, ``R' = R``
``A[rows, :]``              ``R' = n``, ``E' = E * n / R``, ``C' = C``
individual sample ``k``     ``E' = min(E, C * k)`` (``C * k`` with replacement)
collective sample ``k``     ``R' = min(k, S)``, ``E' = E * R' / S``, where
                            ``S = R * (1 - exp(-E / R))`` rows have edges (random rows)
``A.T`` / ``A.compact()``   ``(E, C, R)`` / ``(E, S, C)``
maps, broadcasts, SDDMM     ``A``'s sizes
tensor results              by the op table's alignment (``ALIGN["out"]``): all_nodes
                            ``C + S``, row ``S``, column and col_ids ``C``, row_ids
                            ``R``, edges and values ``E``, SpMM ``R``, reduce ``C``
                            or ``R`` by axis
dense code                  the longest of its tensor inputs
==========================  ======================================================

Without an example (a hand-built graph), a graph has ``N = 2**17`` nodes, 8 edges per node,
and a tensor input 512 entries. A node's cost is the table's price of its op on the layout
it reads, at its input's sizes; a conversion is priced at the size of the value converted,
divided by :data:`AMORTIZE` when that value is frontier-independent (converted once per
graph, in a ``CACHED`` node).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from .. import cost
from ..ir import Graph, Kind, Op
from ..ir.ops import align

#: calls a once-per-graph (cached) conversion is spread over
AMORTIZE = 100
_DEFAULT_N, _DEFAULT_DEGREE, _DEFAULT_TENSOR = 2 ** 17, 8, 512


@dataclass(frozen=True)
class Size:
    """Estimated ``(E, R, C)`` of a matrix value (or ``rows`` = the length of a tensor)."""
    nnz: float = 0.0
    rows: float = 0.0
    cols: float = 0.0

    @property
    def nonempty_rows(self) -> float:
        """Rows with at least one edge, for edges spread at random over the rows."""
        if self.rows <= 0:
            return 0.0
        return self.rows * -math.expm1(-self.nnz / self.rows)


def annotate_inputs(graph: Graph, args: dict, backend: str = "torch") -> Graph:
    """Record each traced argument's sizes and device, and the backend that will run the
    program, on its ``INPUT`` node (``meta["example"]``): for :func:`estimate` and for
    choosing the cost table."""
    import torch

    from ..matrix import Matrix
    for n in graph.nodes:
        if n.op is not Op.INPUT or n.attrs["name"] not in args:
            continue
        v = args[n.attrs["name"]]
        if isinstance(v, Matrix):
            c = v.csc
            n.meta["example"] = {"device": str(c.device), "backend": backend,
                                 "num_nodes": c.num_nodes,
                                 "nnz": c.nnz, "rows": c.num_rows, "cols": c.num_cols}
        elif isinstance(v, torch.Tensor):
            n.meta["example"] = {"device": str(v.device),
                                 "length": int(v.shape[0]) if v.dim() else 1}
    return graph


def example_graph(graph: Graph) -> tuple:
    """``(device, num_nodes, backend)`` of the program's first graph input (defaults without
    an example: the CPU, ``2**17`` nodes, the torch backend)."""
    for n in graph.nodes:
        ex = n.meta.get("example")
        if n.op is Op.INPUT and n.kind is Kind.MATRIX and ex:
            return ex["device"], ex["num_nodes"], ex.get("backend", "torch")
    return "cpu", _DEFAULT_N, "torch"


def _length(size: Optional[Size]) -> float:
    return _DEFAULT_TENSOR if size is None else size.rows


#: the length of a result lined up with ``A`` as ``gsample.ir.ops.ALIGN``'s "out" says
_LENGTH_OF = {"rows": lambda A: A.rows, "rows ids": lambda A: A.rows,
              "cols": lambda A: A.cols, "cols ids": lambda A: A.cols,
              "edges": lambda A: A.nnz, "edges ids": lambda A: A.nnz,
              "ids": lambda A: A.nonempty_rows, "set": lambda A: A.cols + A.nonempty_rows}


def _rule(node, A: Optional[Size], ins: dict) -> Optional[Size]:
    """The size of ``node``'s value from its inputs' (see the module docstring)."""
    op, at = node.op, node.attrs
    if op in (Op.SLICE_COLS, Op.SLICE_INDIVIDUAL_SAMPLE, Op.SLICE_COLLECTIVE_SAMPLE):
        n = _length(ins.get("cols"))
        A = Size(n * A.nnz / max(A.cols, 1), A.rows, n)
    if op is Op.SLICE_ROWS:
        n = _length(ins.get("rows"))
        return Size(A.nnz * min(n / max(A.rows, 1), 1.0), n, A.cols)
    if op in (Op.INDIVIDUAL_SAMPLE, Op.SLICE_INDIVIDUAL_SAMPLE):
        k = at["k"] * A.cols
        return Size(k if at["replace"] else min(A.nnz, k), A.rows, A.cols)
    if op in (Op.COLLECTIVE_SAMPLE, Op.SLICE_COLLECTIVE_SAMPLE):
        s = A.nonempty_rows
        r = min(at["k"], s)
        return Size(A.nnz * r / s if s else 0.0, r, A.cols)
    if op is Op.SLICE_COLS:
        return A
    if op is Op.TRANSPOSE:
        return Size(A.nnz, A.cols, A.rows)
    if op is Op.COMPACT:
        return Size(A.nnz, A.nonempty_rows, A.cols)
    if node.kind is Kind.MATRIX:              # maps, broadcasts, SDDMM, conversions
        return A
    out = align(op).get("out")                # a tensor lined up with A (the op table)
    if out is not None and A is not None:
        out = out[0] if isinstance(out, tuple) else out
        if out == "axis":
            out = "cols" if at["axis"] == 0 else "rows"
        return Size(rows=_LENGTH_OF[out](A))
    tensors = [s.rows for s in ins.values() if s is not None]
    return Size(rows=max(tensors)) if tensors else None


def estimate(graph: Graph, graph_size: Optional[Size] = None) -> dict:
    """``node -> Size`` for every value of ``graph`` (rules in the module docstring).

    Examples
    --------
    >>> sizes = estimate(program)      # doctest: +SKIP
    >>> sizes[slice_node].nnz          # frontier length x average in-degree
    4096.0
    """
    sizes: dict = {}
    for n in graph.nodes:
        ex = n.meta.get("example") or {}
        if n.op is Op.INPUT:
            if n.kind is Kind.MATRIX:
                sizes[n] = graph_size or (Size(ex["nnz"], ex["rows"], ex["cols"]) if ex else
                                          Size(_DEFAULT_N * _DEFAULT_DEGREE, _DEFAULT_N,
                                               _DEFAULT_N))
            else:
                sizes[n] = Size(rows=ex.get("length", _DEFAULT_TENSOR))
        elif n.op is Op.CACHED:
            g = sizes[n.inputs["graph"]]
            program = n.attrs["program"]
            sizes[n] = estimate(program, g)[program.output.inputs["0"]]
        elif n.op is Op.CONSTANT:
            v = n.attrs["value"]
            sizes[n] = Size(rows=float(v.shape[0])) if getattr(v, "dim", lambda: 0)() else None
        elif n.op is not Op.OUTPUT:
            ins = {k: sizes.get(v) for k, v in n.inputs.items()}
            sizes[n] = _rule(n, ins.get("A"), ins)
    return sizes


class Pricer:
    """Prices ops and conversions of one program from a :class:`gsample.cost.CostTable`."""

    def __init__(self, table: cost.CostTable, sizes: dict):
        self.table, self.sizes = table, sizes

    def op(self, node, layout: str) -> Optional[float]:
        """Microseconds of ``node`` reading its matrix input in ``layout``; ``None`` when the
        table does not price it (then every layout costs the same for it: 0)."""
        A = self.sizes.get(node.inputs.get("A"))
        if A is None:
            return None
        key = cost.op_key(node.op.value, layout, node.attrs.get("axis"))
        return self.table.cost(key, A.nnz, A.rows, A.cols)

    def conversion(self, value, src: str, dst: str, once_per_graph: bool) -> float:
        """Microseconds of converting ``value``; infinite when the table has no price."""
        s = self.sizes.get(value) or Size()
        c = self.table.cost(cost.conversion_key(src, dst), s.nnz, s.rows, s.cols)
        if c is None:
            return math.inf
        return c / AMORTIZE if once_per_graph else c
