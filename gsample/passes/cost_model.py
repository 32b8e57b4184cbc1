"""The layout pass's cost model: size estimates of IR values and the price of a plan.

Sizes come from the example call the program is compiled for: :func:`annotate_inputs`
records, on each ``INPUT`` node, the argument's sizes (``meta["example"]``). From those,
:func:`estimate` derives the size of every value by each op's estimate rule, declared with
the op (``gsample.ir.ops``: a column slice of ``n`` columns has ``n * E / C`` edges, an
individual sample ``min(E, k * C)``, a collective sample of ``k`` rows ``E * k / S`` of the
``S`` rows that have edges, a tensor the length its alignment gives, ...); dense code takes
the length of its longest tensor input.

Without an example (a hand-built graph), a graph has ``N = 2**17`` nodes, 8 edges per node,
and a tensor input 512 entries. A node's cost is the table's price of its op on the layout
it reads, at its input's sizes; a conversion is priced at the size of the value converted,
divided by :data:`AMORTIZE` when that value is frontier-independent (converted once per
graph, in a ``CACHED`` node).
"""

from __future__ import annotations

import math

import torch

from gsample.cost import table as cost
from gsample.formats.placement import placement_of
from gsample.ir import Graph, Kind, Op, Size
from gsample.ir import estimate as op_estimate

#: calls a once-per-graph (cached) conversion is spread over
AMORTIZE = 100
_DEFAULT_N, _DEFAULT_DEGREE, _DEFAULT_TENSOR = 2**17, 8, 512


def annotate_inputs(graph: Graph, args: dict, backend: str = "torch") -> Graph:
    """Record each traced argument's sizes and device, and the backend that will run the
    program, on its ``INPUT`` node (``meta["example"]``): for :func:`estimate` and for
    choosing the cost table."""
    for n in graph.nodes:
        if n.op is not Op.INPUT or n.attrs["name"] not in args:
            continue
        v = args[n.attrs["name"]]
        c = getattr(v, "csc", None)  # a gs.Matrix (passes import nothing above them)
        if c is not None:
            n.meta["example"] = {
                "device": str(c.device),
                "backend": backend,
                "num_nodes": c.num_nodes,
                "nnz": c.nnz,
                "rows": c.num_rows,
                "cols": c.num_cols,
                "placement": placement_of(c),
            }
        elif isinstance(v, torch.Tensor):
            n.meta["example"] = {
                "device": str(v.device),
                "length": int(v.shape[0]) if v.dim() else 1,
            }
    return graph


def _first_graph_example(graph: Graph) -> dict | None:
    """``meta["example"]`` of the program's first graph input (None without one)."""
    for n in graph.nodes:
        ex = n.meta.get("example")
        if n.op is Op.INPUT and n.kind is Kind.MATRIX and ex:
            return ex
    return None


def example_graph(graph: Graph) -> tuple:
    """``(device, num_nodes, backend)`` of the program's first graph input (defaults without
    an example: the CPU, ``2**17`` nodes, the torch backend)."""
    ex = _first_graph_example(graph)
    if ex is None:
        return "cpu", _DEFAULT_N, "torch"
    return ex["device"], ex["num_nodes"], ex.get("backend", "torch")


def example_placement(graph: Graph) -> str:
    """Where the program's first graph input's arrays are
    (:func:`gsample.formats.placement.placement_of`: ``"device"`` without an example)."""
    ex = _first_graph_example(graph)
    return "device" if ex is None else ex.get("placement", "device")


def estimate(graph: Graph, graph_size: Size | None = None) -> dict:
    """``node -> Size`` for every value of ``graph`` (rules in the module docstring).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> @gs.compile
    ... def graphsage(A, seeds):                   # two GraphSAGE layers
    ...     s1 = A[:, seeds].individual_sample(10)
    ...     return [s1, A[:, s1.all_nodes()].individual_sample(5)]
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.arange(8)
    >>> program = graphsage.program(A, seeds)
    >>> sizes = estimate(program)
    >>> sample = next(n for n in program.nodes if n.op.value == "slice_individual_sample")
    >>> sizes[sample]                  # 8 columns, at most 5 of their in-edges each
    Size(nnz=40.0, rows=100, cols=8)
    """
    sizes: dict = {}
    for n in graph.nodes:
        ex = n.meta.get("example") or {}
        if n.op is Op.INPUT:
            if n.kind is Kind.MATRIX:
                sizes[n] = graph_size or (
                    Size(ex["nnz"], ex["rows"], ex["cols"])
                    if ex
                    else Size(_DEFAULT_N * _DEFAULT_DEGREE, _DEFAULT_N, _DEFAULT_N)
                )
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
            sizes[n] = op_estimate(n.op, ins.get("A"), ins, n.attrs)
            if sizes[n] is None and n.kind is not Kind.MATRIX:  # dense code: longest input
                tensors = [x.rows for x in ins.values() if x is not None]
                sizes[n] = Size(rows=max(tensors)) if tensors else None
    return sizes


class Pricer:
    """Prices ops and conversions of one program from a :class:`gsample.cost.CostTable`."""

    def __init__(self, table: cost.CostTable, sizes: dict):
        self.table, self.sizes = table, sizes

    def op(self, node, layout: str) -> float | None:
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
