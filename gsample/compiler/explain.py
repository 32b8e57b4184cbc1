"""``gs.explain``: what the compiler does to a sampler, pass by pass.

:func:`explain` traces a sampler on example arguments exactly as ``@gs.compile``
would, runs the same passes through :func:`gsample.passes.run_passes`, and reports:

1. the arguments, split into traced ones (matrices and tensors) and static ones;
2. the traced IR;
3. for every pass, in pipeline order: its name, ``changed`` or ``unchanged`` (as the pass
   reported it: :class:`gsample.passes.PassResult`), why it runs at that point (the
   pipeline's comment), and the IR after it when it changed;
4. the optimised IR (the program a compiled call runs);
5. the layout of every sparse value: the one a pass chose (``node.meta["layout"]``)
   or, where none did, CSC (every op returns CSC unless it keeps its input's layout);
6. the programs held inside nodes: what each ``CACHED`` node computes once per graph,
   and the step list of every fused node;
7. the lowered program (``gsample.runtime``): the resolved call of every step (backend,
   op, layout, sync-free or not), the checks at its boundary, where sizes are read back,
   and when each value slot is released.

The IR is verified after every pass, whatever ``GSAMPLE_DEBUG`` says, and a pass that
breaks it is named. ``python -m gsample ir file.py:function`` prints the same report
for a function in a file (see :mod:`gsample.__main__`).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from gsample.backend import backend_for, cuda_problem, current_backend, get_backend
from gsample.capture.trace import trace
from gsample.compiler.compiled import CompiledSampler, check_passes
from gsample.ir import Graph, Kind, Op, VerifyError, format_lines, format_table, to_dot
from gsample.matrix.sparse import Matrix
from gsample.passes import PIPELINE, run_passes
from gsample.passes.cost_model import annotate_inputs
from gsample.runtime import lower

FORMATS = ("lines", "table", "dot")


@dataclass
class _PassRecord:
    """What the report shows of a pass besides the pipeline's record of it (a ``PassRun``)."""

    why: str | None
    graph_text: str = ""  # the IR after the pass, in the requested format (when it changed)
    removed: list = field(default_factory=list)  # names of the nodes the pass removed
    added: list = field(default_factory=list)  # and of those it created


@dataclass
class _Report:
    fmt: str
    parts: list = field(default_factory=list)

    def comment(self, text: str = "") -> None:
        """A line of prose (a ``//`` comment in dot output, so the report stays valid dot)."""
        for line in text.split("\n"):
            self.parts.append(("// " + line).rstrip() if self.fmt == "dot" else line)

    def heading(self, text: str) -> None:
        self.comment("")
        self.comment(f"== {text} ==")

    def graph(self, graph: Graph, name: str, indent: str = "") -> None:
        text = _render(graph, self.fmt, name)
        if indent and self.fmt != "dot":
            text = "\n".join(indent + line for line in text.split("\n"))
        self.parts.append(text)

    def text(self) -> str:
        return "\n".join(self.parts) + "\n"


def _render(graph: Graph, fmt: str, name: str) -> str:
    if fmt == "table":
        return format_table(graph)
    if fmt == "dot":
        return to_dot(graph, name)
    return format_lines(graph)


def _name_of(fn) -> str:
    while isinstance(fn, functools.partial):
        fn = fn.func
    return getattr(fn, "__qualname__", getattr(fn, "__name__", type(fn).__name__))


def _describe_arg(value) -> str:
    if isinstance(value, Matrix):
        vals = "no values" if value.csc.values is None else f"{value.values.dtype} values"
        return (
            f"matrix {value.num_nodes:,} nodes, {value.num_edges:,} edges, {vals}, "
            f"on {value.device}"
        )
    if isinstance(value, torch.Tensor):
        return f"tensor {value.dtype} {tuple(value.shape)}, on {value.device}"
    return repr(value)


def _short(value, width: int = 70) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _layout(node) -> tuple:
    """``(layout, source)`` of a node's value."""
    chosen = node.meta.get("layout")
    if chosen is not None:
        return getattr(chosen, "value", str(chosen)), "chosen by a pass"
    if node.kind is not Kind.MATRIX:
        return "-", "no value"
    return "csc", f"default for {node.op.value}"


def _layout_rows(graph: Graph, prefix: str = "") -> list:
    rows = []
    for n in graph.nodes:
        if n.kind is Kind.MATRIX or n.meta.get("layout") is not None:
            layout, source = _layout(n)
            label = f"{prefix}%{n.name}"
            if n.op is Op.INPUT:
                label += f" ({n.attrs['name']})"
            rows.append((label, layout, source))
        program = n.attrs.get("program")
        if isinstance(program, Graph):
            rows.extend(_layout_rows(program, f"{prefix}%{n.name}/"))
    return rows


def _plan_lines(graph: Graph) -> list:
    """The layout plan (``gsample.passes.layout``): reads, conversions and estimated costs."""
    plan = graph.output.meta.get("layout_plan")
    if not plan:
        return ["(no layout plan: the layout pass did not run)"]
    forced = f", forced to {plan['forced']}" if plan.get("forced") else ""
    lines = [
        f"plan: {plan['conversions']} conversion(s){forced}; estimated "
        f"{plan['cost_us']:.1f} us per call vs {plan['csc_cost_us']:.1f} us all-CSC "
        "(layout-dependent ops and conversions)",
        f"cost table: {plan['table']}",
    ]
    for n in graph.nodes:
        if n.op is Op.TO_LAYOUT or (n.op is Op.CACHED and "cost_us" in n.meta):
            src = n.inputs.get("A", n.inputs.get("graph"))
            lines.append(
                f"  convert %{src.name} -> {n.meta['layout']} as %{n.name}"
                f"{' (once per graph)' if n.op is Op.CACHED else ''}: "
                f"{n.meta['cost_us']:.1f} us"
            )
        elif "reads" in n.meta and n.meta["reads"] != "csc":
            lines.append(
                f"  %{n.name} ({n.op.value}) reads {n.meta['reads']}: {n.meta['cost_us']:.1f} us"
            )
    return lines


def _programs(report: _Report, graph: Graph, prefix: str = "") -> int:
    """Print every program held in a node attribute; returns how many."""
    count = 0
    for n in graph.nodes:
        program = n.attrs.get("program")
        if program is None:
            continue
        count += 1
        label = f"{prefix}%{n.name}"
        if isinstance(program, Graph):
            what = (
                "computed once per graph, then reused by every call"
                if n.op is Op.CACHED
                else "its program"
            )
            report.comment(f"{label} = {n.op.value}: {what} ({len(program.nodes)} nodes)")
            report.graph(program, f"{label.lstrip('%')}_program", indent="    ")
            count += _programs(report, program, label + "/")
        else:
            steps = program if isinstance(program, (list, tuple)) else [program]
            report.comment(f"{label} = {n.op.value}: {len(steps)} steps, applied in order")
            for i, step in enumerate(steps):
                report.comment(f"  {i}: {_short(step, 100)}")
    return count


def _backend_text(sampler: CompiledSampler, dynamic: dict) -> str:
    """Which backend a call on ``dynamic`` runs, and why: ``backend 'cuda' (auto: ...)``."""
    device = next(v.device for v in dynamic.values() if isinstance(v, Matrix))
    runs = backend_for(device, sampler.backend)
    setting = sampler.backend or current_backend()
    if setting != "auto":
        asked = f"backend={setting!r}" if sampler.backend else f"gs.use_backend({setting!r})"
        if runs != setting:
            return (
                f"backend {runs!r} ({asked}, but the graph is on the CPU: every op runs "
                "the torch backend's code)"
            )
        return f"backend {runs!r} ({asked})"
    if device.type != "cuda":
        return f"backend {runs!r} (auto: the graph is on the CPU)"
    if runs == "cuda":
        return (
            f"backend 'cuda' (auto: the graph is on {device} and CuPy's kernels run "
            "there; gs.use_backend('torch') forces the reference)"
        )
    return (
        f"backend 'torch' (auto: the graph is on {device}, but the CUDA backend's kernels "
        f"cannot run there: {cuda_problem(device)}; pip install gsample[cuda])"
    )


def _passes_of(fn, passes) -> list:
    passes = check_passes(passes)
    if passes is None and isinstance(fn, CompiledSampler):
        passes = fn.passes
    if passes is None:
        passes = PIPELINE
    return list(passes)


def explain(
    fn: Callable,
    *example_args,
    passes: list | None = None,
    format: str = "lines",
    file=None,
    **example_kwargs,
) -> str:
    """Show how ``@gs.compile`` compiles ``fn``: its IR before and after each pass.

    ``fn`` is traced on the example arguments as a compiled call would trace it
    (matrices and tensors are traced, every other argument is static), and the
    passes run through :func:`gsample.passes.run_passes`. Nothing is sampled.

    Parameters
    ----------
    fn : callable or CompiledSampler
        The sampler, plain or decorated with ``@gs.compile`` (its ``fn`` and
        ``passes`` are used then).
    *example_args, **example_kwargs
        Arguments as for a call of ``fn``: at least one ``gs.Matrix``; tensors are
        only looked at for their kind, dtype, shape and device. (A sampler parameter
        called ``passes``, ``format`` or ``file`` must be passed positionally.)
    passes : list, optional
        The passes to run, ``Graph -> PassResult`` functions (or ``Graph -> Graph`` ones),
        ``(function, why)`` pairs or names of the pipeline's passes (as ``gs.compile``
        takes them). Default:
        ``fn.passes`` for a compiled sampler, else :data:`gsample.passes.PIPELINE`.
    format : {"lines", "table", "dot"}
        How each IR is printed: one line per node, a table, or graphviz dot (prose
        becomes ``//`` comments, so the whole report is a valid multi-graph dot file:
        ``... | dot -Tsvg -O``).
    file : file-like, str, os.PathLike, None or False
        Where to print the report: an object with ``write`` (an open file), a path (the
        file is created or overwritten, UTF-8), ``None`` (default: ``sys.stdout``), or
        ``False`` (prints nothing, only returns it).

    Returns
    -------
    str
        The report: arguments and the backend the call runs on (``backend 'cuda' (auto:
        ...)``, :func:`gsample.backend_for`), traced IR, one section per pass (``changed``
        with the IR after it, or ``unchanged``), the optimised IR, the layout of every
        sparse value, and the programs of ``CACHED`` and fused nodes.

    Raises
    ------
    TypeError
        ``file`` is none of the above, or ``passes`` is not a list of passes.
    gsample.capture.trace.TraceError
        ``fn`` cannot be compiled (the message names the line).
    gsample.ir.VerifyError
        A pass broke the IR (the message names the pass; the report up to there is
        printed first).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A = gs.datasets.rmat(1000, 10000, seed=0)
    >>> def graphsage(A, seeds, fanouts=(25, 10)):
    ...     blocks = []
    ...     for k in fanouts:
    ...         s = A[:, seeds].individual_sample(k)
    ...         blocks.append(s)
    ...         seeds = s.all_nodes()
    ...     return blocks
    >>> text = gs.explain(graphsage, A, torch.arange(8), file=False)
    >>> print(text.splitlines()[0])
    gs.explain: graphsage(A, seeds, fanouts=(25, 10))
    """
    if format not in FORMATS:
        raise ValueError(f"format: must be one of {FORMATS}, got {format!r}")
    _check_file(file)
    sampler = fn if isinstance(fn, CompiledSampler) else CompiledSampler(fn)
    entries = _passes_of(fn, passes)
    dynamic, static, num_nodes = sampler._split(example_args, example_kwargs)
    name = _name_of(sampler.fn)
    report = _Report(format)

    # 1. arguments
    shown = ", ".join(list(dynamic) + [f"{k}={_short(v, 40)}" for k, v in static.items()])
    report.comment(f"gs.explain: {name}({shown})")
    width = max(len(k) for k in list(dynamic) + list(static))
    for k, v in dynamic.items():
        report.comment(f"  traced  {k:<{width}}  {_describe_arg(v)}")
    for k, v in static.items():
        report.comment(f"  static  {k:<{width}}  {_short(v)}")
    backend = sampler._backend(dynamic)
    report.comment(f"  {_backend_text(sampler, dynamic)}")
    if isinstance(fn, CompiledSampler):
        key = sampler._key(dynamic, static, num_nodes, backend)
        report.comment(
            f"  compiled sampler: {len(sampler._cache)} program(s) cached, "
            f"{'including' if key in sampler._cache else 'not yet'} this call's; "
            f"{sampler.traces} trace(s) so far"
        )

    # 2. the traced IR
    kinds = {k: Kind.MATRIX if isinstance(v, Matrix) else Kind.TENSOR for k, v in dynamic.items()}
    traced = trace(sampler.fn, kinds, static, num_nodes)
    traced.target = get_backend(backend).target()  # as the compiler does
    traced = annotate_inputs(traced, dynamic, backend)
    report.heading(f"traced IR: {len(traced.nodes)} nodes, {traced.num_random} random ops")
    report.graph(traced, f"{name}_traced")

    # 3. the passes: the pipeline records whether each changed the IR; after each, the IR is
    # verified (a pass that breaks it is named) and, when it changed, rendered for the report
    records: list = []
    names = [n.name for n in traced.nodes]  # before the first pass (its copy keeps the names)

    def on_pass(index, run, graph):
        nonlocal names
        entry = entries[index - 1]
        why = entry[1] if isinstance(entry, tuple) and len(entry) > 1 else None
        after = [n.name for n in graph.nodes]
        rec = _PassRecord(why)
        if run.changed:
            kept_before, kept_after = set(names), set(after)
            rec.removed = [n for n in names if n not in kept_after]
            rec.added = [n for n in after if n not in kept_before]
        names = after
        records.append(rec)
        title = f"{name}_after_{index}_{run.name}"
        try:
            graph.verify()
        except VerifyError as e:
            report.heading(f"pass {index}/{len(entries)} {run.name}: BROKE THE IR")
            report.parts.append(_render(graph, format, title))
            _emit(report.text(), file)
            raise VerifyError(
                f"pass {run.name} (#{index} of {len(entries)}) left an invalid IR: {e}"
            ) from None
        if run.changed:
            rec.graph_text = _render(graph, format, title)

    result = run_passes(traced, entries, on_pass)
    final = result.graph
    if not entries:
        report.heading("passes: none")
    for i, (run, rec) in enumerate(zip(result.runs, records), 1):
        state = "changed" if run.changed else "unchanged"
        report.heading(f"pass {i}/{len(result.runs)} {run.name}: {state}")
        if rec.why:
            report.comment(f"why here: {rec.why}")
        if run.changed:
            report.comment(f"removed: {_names(rec.removed)}; added: {_names(rec.added)}")
            report.parts.append(rec.graph_text)

    # 4. the optimised program
    report.heading(
        f"optimised IR: {len(final.nodes)} nodes, {final.num_random} random ops "
        f"(the program a compiled call runs)"
    )
    report.graph(final, f"{name}_optimised")

    # 5. layouts
    report.heading("layouts: sparse values (CSC, CSR, COO) and where each layout comes from")
    rows = _layout_rows(final)
    if rows:
        w0 = max(len(r[0]) for r in rows)
        w1 = max(len(r[1]) for r in rows)
        for label, layout, source in rows:
            report.comment(f"{label:<{w0}}  {layout:<{w1}}  {source}")
    else:
        report.comment("(no sparse values)")
    report.heading("layout plan: conversions and estimated costs (gsample.passes.layout)")
    for line in _plan_lines(final):
        report.comment(line)

    # 6. programs inside nodes
    report.heading("programs of cached and fused nodes")
    if not _programs(report, final):
        report.comment("(none)")

    # 7. the lowered program
    device = next(str(v.device) for v in dynamic.values() if isinstance(v, Matrix))
    runs = backend_for(device, sampler.backend)
    report.heading(f"lowered program (gsample.runtime, backend {runs!r} on {device})")
    try:
        report.comment(lower(final, backend, sampler.runtime, device).format())
    except (NotImplementedError, TypeError) as e:  # e.g. a pass claimed a layout no op runs
        report.comment(f"cannot be lowered: {e}")

    # summary
    changed = result.changed
    unchanged = [r.name for r in result.runs if not r.changed]
    report.heading("summary")
    report.comment(f"passes that changed the IR: {', '.join(changed) or '(none)'}")
    report.comment(f"passes that left it unchanged: {', '.join(unchanged) or '(none)'}")
    report.comment(f"nodes: {len(traced.nodes)} traced -> {len(final.nodes)} optimised")
    text = report.text()
    _emit(text, file)
    return text


def _names(names: list, limit: int = 12) -> str:
    if not names:
        return "none"
    shown = ", ".join("%" + n for n in names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def _check_file(file) -> None:
    if (
        file is None
        or file is False
        or isinstance(file, (str, os.PathLike))
        or callable(getattr(file, "write", None))
    ):
        return
    raise TypeError(
        f"file: expected a file-like object (with write()), a path (str or "
        f"os.PathLike), None (stdout) or False (no output), got "
        f"{type(file).__name__}"
    )


def _emit(text: str, file) -> None:
    if file is False:
        return
    if isinstance(file, (str, os.PathLike)):
        with open(file, "w", encoding="utf-8") as out:
            out.write(text)
        return
    out = sys.stdout if file is None else file
    out.write(text)
    if hasattr(out, "flush"):
        out.flush()


__all__ = ["FORMATS", "explain"]
