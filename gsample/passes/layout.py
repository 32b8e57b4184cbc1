"""Layout selection: CSC, CSR (plain or compact) or COO per sparse value, by a cost model.

Every op that takes a matrix ``A`` reads it in one of the layouts the backend the program
is compiled for runs it on (``Graph.target``, from the backend's registry; a CSR may be
compact: only the rows with edges stored, so per-row work over a row space of all ``N``
nodes costs ``O(E)``). An op whose definition says it ``keeps_layout`` keeps ``A``'s;
every other matrix is a CSC. Where a reader wants another
layout than the value has, an explicit ``TO_LAYOUT`` node converts it, once per (value,
layout); a graph-level value (a graph input or a ``CACHED`` value) is converted once per
graph, in a ``CACHED`` node of its own. Dense code and the program's output always get
CSC: users see exactly what eager mode returns.

The plan minimises ``sum(op costs) + sum(conversion costs)`` from
:mod:`gsample.passes.cost_model` (a table measured on the device, see
:mod:`gsample.cost`), by local search from the all-CSC plan: each step moves one op, or
one op and the chain of layout-keeping ops after it, to another layout, if that lowers
the total by more than :data:`MARGIN` of the moved ops' CSC cost (a tie or a marginal win
keeps CSC). No plan is ever timed.

Samples never change: sampling ops accept CSC only (they draw on the canonical order),
conversions are exact, and every op gives the same bits on every layout it accepts.

The plan is recorded for ``gs.explain``: ``meta["layout"]`` on every matrix value,
``meta["reads"]`` and ``meta["cost_us"]`` on ops that have a choice, and
``meta["layout_plan"]`` on the output (estimated cost, that of the all-CSC plan, the
table's source). A graph that already has conversions is left as it is.
"""

from __future__ import annotations

import math
from collections import defaultdict

from gsample.cost import table as cost
from gsample.formats.layouts import NAMES
from gsample.ir import Graph, Kind, Op, Ref, info
from gsample.passes.cost_model import Pricer, estimate, example_graph
from gsample.passes.dce import dce
from gsample.passes.preprocess import program_key
from gsample.passes.result import Pass, PassResult

_SWEEPS = 8
#: a move must save this share of its ops' CSC cost (plus 1 us): on small values the fitted
#: costs are least accurate, and a marginal win is as likely a loss
MARGIN = 0.25


def _keeps_layout(node) -> bool:
    """Whether ``node``'s matrix result is in the layout its input ``A`` was read in."""
    return node.kind is Kind.MATRIX and "A" in node.inputs and info(node.op).keeps_layout


class _Planner:
    def __init__(self, graph: Graph, pricer: Pricer):
        self.graph, self.pricer = graph, pricer
        self.priced_choices: dict = {}
        self.readers = [
            n for n in graph.nodes if "A" in n.inputs and n.inputs["A"].kind is Kind.MATRIX
        ]
        # the layouts the target backend runs each op on (CSC first)
        self.choices = {n: graph.target.layouts(n.op) for n in self.readers}
        self.op_cost = {
            n: {lay: pricer.op(n, lay) for lay in self.choices[n]} for n in self.readers
        }
        for n, costs in self.op_cost.items():  # an unpriced layout is never chosen
            if costs["csc"] is None:
                self.op_cost[n] = dict.fromkeys(costs, 0.0)
                self.priced_choices[n] = ("csc",)
            else:
                self.priced_choices[n] = tuple(lay for lay, c in costs.items() if c is not None)
                self.op_cost[n] = {lay: math.inf if c is None else c for lay, c in costs.items()}
        self.users = graph.users()
        self._conv: dict = {}
        # the structure total() walks, once: (reader, reads A?, value), (value, keeps layout?)
        self._reads = [
            (n, key == "A", v)
            for n in graph.nodes
            for key, v in n.inputs.items()
            if v.kind is Kind.MATRIX
        ]
        self._values = [(n, _keeps_layout(n)) for n in graph.nodes if n.kind is Kind.MATRIX]

    def layouts(self, plan: dict) -> tuple:
        """``(value -> its layout, value -> the layouts its readers need)`` under ``plan``."""
        need = defaultdict(set)
        for n, is_a, v in self._reads:
            need[v].add(plan.get(n, "csc") if is_a else "csc")
        out = {n: plan.get(n, "csc") if keeps else "csc" for n, keeps in self._values}
        return out, need

    def conversion(self, v, src: str, dst: str) -> float:
        key = (v, src, dst)
        if key not in self._conv:
            once = v.op in (Op.INPUT, Op.CACHED)
            self._conv[key] = self.pricer.conversion(v, src, dst, once)
        return self._conv[key]

    def total(self, plan: dict) -> float:
        out, need = self.layouts(plan)
        ops = sum(self.op_cost[n][plan.get(n, "csc")] for n in self.readers)
        return ops + sum(
            self.conversion(v, out[v], lay)
            for v, lays in need.items()
            for lay in lays
            if lay != out[v]
        )

    def _chain(self, plan: dict, node, layout: str) -> dict:
        """``plan`` with ``node`` and the layout-keeping readers after it moved to ``layout``."""
        trial, stack = dict(plan), [node]
        trial[node] = layout
        while stack:
            n = stack.pop()
            if not _keeps_layout(n):
                continue
            for u in self.users[n]:
                if u.inputs.get("A") is n and layout in self.priced_choices.get(u, ()):
                    trial[u] = layout
                    stack.append(u)
        return trial

    def search(self, force: str | None) -> dict:
        if force is not None:
            return {n: force if force in self.choices[n] else "csc" for n in self.readers}
        plan = {n: "csc" for n in self.readers}
        best = self.total(plan)
        for _ in range(_SWEEPS):
            improved = False
            for n in self.readers:
                for lay in self.priced_choices[n]:
                    if lay == plan[n]:
                        continue
                    for trial in ({**plan, n: lay}, self._chain(plan, n, lay)):
                        moved = sum(self.op_cost[m]["csc"] for m in trial if trial[m] != plan[m])
                        c = self.total(trial)
                        if c < best - MARGIN * moved - 1.0:
                            plan, best, improved = trial, c, True
            if not improved:
                break
        return plan


def _convert(graph: Graph, value, layout: str, before):
    """A node holding ``value`` in ``layout``: ``TO_LAYOUT``, or a ``CACHED`` conversion of
    a graph-level value (computed once per graph)."""
    if value.op not in (Op.INPUT, Op.CACHED):
        return graph.add(
            Op.TO_LAYOUT,
            {"A": value},
            {"layout": layout},
            Kind.MATRIX,
            before=before,
            meta={"layout": layout},
        )
    if value.op is Op.INPUT:
        program, source = Graph(), value
        root = program.add(Op.INPUT, attrs=dict(value.attrs), kind=Kind.MATRIX, name=value.name)
    else:
        program, source = value.attrs["program"].copy(), value.inputs["graph"]
        root = program.output.inputs["0"]
        program.remove([program.output])
    conv = program.add(
        Op.TO_LAYOUT, {"A": root}, {"layout": layout}, Kind.MATRIX, meta={"layout": layout}
    )
    program.add(Op.OUTPUT, {"0": conv}, {"template": Ref("0")})
    program.verify()
    return graph.add(
        Op.CACHED,
        {"graph": source},
        {"program": program, "kind": Kind.MATRIX},
        Kind.MATRIX,
        name=f"{value.name}_as_{layout.replace('-', '_')}",
        before=before,
        meta={"cache_key": program_key(program), "layout": layout},
    )


def _apply(graph: Graph, planner: _Planner, plan: dict) -> tuple:
    """Insert the conversions ``plan`` needs and record it in ``meta``; returns how many
    conversions it inserted and how many values' layouts it set or changed."""
    out, _ = planner.layouts(plan)
    made: dict = {}
    for n in list(graph.nodes):
        for key, v in list(n.inputs.items()):
            if v.kind is not Kind.MATRIX:
                continue
            want = plan.get(n, "csc") if key == "A" else "csc"
            if want != out[v]:
                if (v, want) not in made:
                    made[v, want] = _convert(graph, v, want, before=n)
                    made[v, want].meta["cost_us"] = planner.conversion(v, out[v], want)
                n.inputs[key] = made[v, want]
    relabelled = 0
    for n, lay in out.items():
        relabelled += n.meta.get("layout") != lay
        n.meta["layout"] = lay
    for n in planner.readers:
        n.meta["reads"] = plan[n]
        n.meta["cost_us"] = planner.op_cost[n][plan[n]]
    return len(made), relabelled


def select_layouts(graph: Graph, force: str | None = None) -> PassResult:
    """Choose a layout for every sparse value and make conversions explicit (module doc).

    Parameters
    ----------
    graph : Graph
    force : str, optional
        ``"csc"``, ``"csr"``, ``"csr-compact"`` or ``"coo"``: every op reads its matrix in
        that layout where it accepts it (CSC elsewhere), whatever it costs; for ablations
        and tests. ``"csc"`` is layout selection off.

    Returns
    -------
    PassResult
        Changed when the pass dropped dead values, inserted a conversion or set a value's
        layout (``meta["layout"]``, which the printed IR shows); a graph it already planned
        comes back unchanged.

    Examples
    --------
    >>> import gsample as gs
    >>> g = select_layouts(gs.compile(ladies, passes=[]).program(A, seeds)).graph  # doctest: +SKIP
    >>> [n.attrs["layout"] for n in g.nodes if n.op is Op.TO_LAYOUT]     # doctest: +SKIP
    ['csr-compact', 'csr-compact', 'csr-compact']
    """
    if force is not None and force not in NAMES:
        raise ValueError(f"force: a layout name ({', '.join(NAMES)}), got {force!r}")
    if any(n.op is Op.TO_LAYOUT or "layout_plan" in n.meta for n in graph.nodes):
        return PassResult(graph, False)
    pruned = dce(graph)  # price only what runs: a dead value needs no layout
    graph = pruned.graph
    device, num_nodes, backend = example_graph(graph)
    pricer = Pricer(cost.table_for(device, num_nodes, backend), estimate(graph))
    planner = _Planner(graph, pricer)
    plan = planner.search(force)
    all_csc = planner.total({n: "csc" for n in planner.readers})
    estimated = planner.total(plan)
    conversions, relabelled = _apply(graph, planner, plan)
    graph.output.meta["layout_plan"] = {
        "cost_us": estimated,
        "csc_cost_us": all_csc,
        "conversions": conversions,
        "table": pricer.table.source,
        "forced": force,
        "device": device,
    }
    return PassResult(graph, bool(pruned.changed or conversions or relabelled))


def forced(layout: str) -> Pass:
    """A layout pass that forces ``layout`` (see :func:`select_layouts`); the pipeline with
    it in place of :func:`select_layouts` is :func:`gsample.passes.pipeline`.

    Examples
    --------
    >>> g = forced("csc")(graph).graph  # layout selection off  # doctest: +SKIP
    """

    def run(graph: Graph) -> PassResult:
        return select_layouts(graph, force=layout)

    run.__name__ = f"select_layouts_{layout.replace('-', '_')}"
    return run
