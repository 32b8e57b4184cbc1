"""Compiler passes, each ``Graph -> PassResult`` in a file of its own, run in ``PIPELINE`` order.

Passes read op properties from the op definitions (``gsample.ir.OPS``: effects, steps,
inputs, attributes, alignments, size rules) and the capabilities of the backend a program
is compiled for (``Graph.target``); none matches on op names' strings or on argument
positions. A pass never changes samples: random ops keep their op ordinals, so the program
draws what the eager function draws (docs/architecture.md §3).

A pass rewrites the graph in place and says whether it changed it
(:class:`~gsample.passes.result.PassResult`, counted from the rewrites it made);
:func:`run_passes` records that for every pass (``gs.explain`` reports it) and
:func:`optimize` returns the program alone.

Super-batching is not a pass of the pipeline: :meth:`gsample.CompiledSampler.super_batched`
(what ``gs.DataLoader(..., super_batch=N)`` calls) applies
:func:`gsample.passes.super_batch.super_batch` to an optimised program, through
:func:`optimize`, to sample N mini-batches in one run.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

from gsample.ir import Graph
from gsample.ir.graph import debug_level
from gsample.ir.printer import format_lines
from gsample.passes.alias_tables import alias_tables
from gsample.passes.cse import cse
from gsample.passes.dce import dce
from gsample.passes.fuse_edge_map import fuse_edge_map, fuse_edge_map_reduce
from gsample.passes.fuse_edge_normalize import fuse_edge_normalize
from gsample.passes.fuse_extract_extract import fuse_extract_extract
from gsample.passes.fuse_extract_reduce import fuse_extract_reduce
from gsample.passes.fuse_extract_select import fuse_extract_select
from gsample.passes.layout import forced, select_layouts
from gsample.passes.listed_rows import listed_rows
from gsample.passes.preprocess import preprocess
from gsample.passes.probs_support import probs_support
from gsample.passes.result import Pass, PassResult
from gsample.passes.scaled_row_sums import scaled_row_sums
from gsample.passes.structure_reads import structure_reads

#: the passes, in order, each with why it runs at that point (``gs.explain`` prints it)
PIPELINE: list[tuple[Pass, str]] = [
    (cse, "merge repeated pure computations first, so later passes see one copy of each"),
    (preprocess, "after CSE (each value hoisted once), before fusion (it fuses cached values)"),
    (fuse_edge_map, "after pre-processing hoisted graph-only maps: per-batch chains are left"),
    (fuse_edge_map_reduce, "after edge-map fusion: a reduction absorbs the chain only it reads"),
    (fuse_edge_normalize, "after the map fusions, which leave it X.div(X.sum(a), a): X read twice"),
    (fuse_extract_reduce, "before extract-select: slices whose reductions fused feed samples only"),
    (fuse_extract_extract, "with the extract fusions, before layout selection prices the slices"),
    (fuse_extract_select, "last fusion: by now slice weights read cached graph values, sums fused"),
    (alias_tables, "after extract-select fusion, which makes a slice's weights the graph's"),
    (probs_support, "after extract-select fusion makes the fused collective samples it marks"),
    (listed_rows, "after probs_support marks the samples whose probabilities it lists"),
    (scaled_row_sums, "after listed_rows, which takes LADIES's p / c where its backend lists it"),
    (structure_reads, "after the rewrites that make value maps; before DCE drops maps left unread"),
    (select_layouts, "after every rewrite, so the cost model prices the ops that really run"),
    (dce, "last: drop what the rewrites left unused (random ops keep their ordinals)"),
]


@dataclass(frozen=True)
class PassRun:
    """What one pass of a :func:`run_passes` did: its name and whether it changed the graph."""

    name: str
    changed: bool


@dataclass(frozen=True)
class PipelineResult:
    """The optimised program and, pass by pass, whether each changed it.

    Examples
    --------
    >>> result = run_passes(graph)  # doctest: +SKIP
    >>> result.changed  # the names of the passes that changed it, in order  # doctest: +SKIP
    ('preprocess', 'fuse_extract_select', 'select_layouts')
    """

    graph: Graph
    runs: tuple[PassRun, ...]

    @property
    def changed(self) -> tuple[str, ...]:
        """The names of the passes that changed the graph, in the order they ran."""
        return tuple(r.name for r in self.runs if r.changed)


def pass_name(fn) -> str:
    """The name a pass is reported by (its ``__name__``, or its type's name)."""
    return getattr(fn, "__name__", type(fn).__name__)


def _reports(fn) -> bool:
    """Whether ``fn`` is one of gsample's passes, which return a :class:`PassResult`."""
    return (getattr(fn, "__module__", None) or "").startswith(f"{__name__}.")


def run_passes(
    graph: Graph,
    passes: list | None = None,
    on_pass: Callable[[int, PassRun, Graph], None] | None = None,
) -> PipelineResult:
    """Run ``passes`` (default: :data:`PIPELINE`) on a copy of ``graph``; record which changed it.

    Parameters
    ----------
    graph : Graph
        The traced program; it is left as it is.
    passes : list, optional
        ``Graph -> PassResult`` functions or ``(function, why)`` pairs, in order. A pass
        that returns a bare ``Graph`` (one written for an earlier gsample, or a user's)
        still runs: unless it is one of gsample's own (which say whether they changed the
        graph), whether it did is found by comparing the printed IR before and after it.
    on_pass : callable, optional
        ``on_pass(index, run, graph)`` after each pass (``index`` from 1), before the IR is
        verified: ``gs.explain`` shows the IR after each pass and names a pass that breaks it.

    Returns
    -------
    PipelineResult
        The optimised program and one :class:`PassRun` per pass.

    Notes
    -----
    With ``GSAMPLE_DEBUG >= 1`` the IR is verified after every pass; with ``>= 2`` the IR is
    printed (to stderr) after every pass that changed it.

    Examples
    --------
    >>> import gsample as gs
    >>> result = run_passes(gs.compile(ladies, passes=[]).program(A, seeds))  # doctest: +SKIP
    >>> [r.name for r in result.runs if r.changed][:2]  # doctest: +SKIP
    ['preprocess', 'fuse_edge_normalize']
    """
    level = debug_level()
    g = graph.copy()
    runs = []
    for index, entry in enumerate(PIPELINE if passes is None else passes, 1):
        fn = entry[0] if isinstance(entry, tuple) else entry
        name = pass_name(fn)
        # a pass that may not say whether it changed the graph is compared by its printed IR
        before = None if _reports(fn) else format_lines(g)
        out = fn(g)
        if isinstance(out, PassResult):
            g, changed = out.graph, out.changed
        elif isinstance(out, Graph):
            g, changed = out, before is None or format_lines(out) != before
        else:
            raise TypeError(
                f"pass {name} returned {type(out).__name__}: expected a PassResult (or a Graph)"
            )
        run = PassRun(name, changed)
        runs.append(run)
        if on_pass is not None:
            on_pass(index, run, g)
        if level >= 1:
            g.verify()
        if level >= 2 and changed:
            print(f"[gsample] after {name}:\n{format_lines(g)}", file=sys.stderr)
    return PipelineResult(g, tuple(runs))


def pipeline(force: str | None = None) -> list[tuple[Pass, str]]:
    """:data:`PIPELINE` with the layout step forced to ``force`` (``None``: as it is).

    Parameters
    ----------
    force : str, optional
        ``"csc"``, ``"csr"``, ``"csr-compact"`` or ``"coo"``: every op reads its matrix in
        that layout where it accepts it (:func:`gsample.passes.layout.forced`); ``"csc"`` is
        layout selection off.

    Returns
    -------
    list of (pass, why)
        A new list, as ``gs.compile(passes=...)`` takes it.

    Examples
    --------
    >>> import gsample as gs
    >>> sampler = gs.compile(ladies, passes=pipeline("csc"))  # doctest: +SKIP
    """
    if force is None:
        return list(PIPELINE)
    return [(forced(force), why) if fn is select_layouts else (fn, why) for fn, why in PIPELINE]


def optimize(graph: Graph, passes: list | None = None) -> Graph:
    """The program :func:`run_passes` makes of ``graph`` (default passes: :data:`PIPELINE`).

    Parameters
    ----------
    graph : Graph
        The traced program; it is left as it is.
    passes : list, optional
        As :func:`run_passes` takes them.

    Returns
    -------
    Graph
        The optimised program.

    Examples
    --------
    >>> import gsample as gs
    >>> program = optimize(gs.compile(graphsage, passes=[]).program(A, seeds))  # doctest: +SKIP
    """
    return run_passes(graph, passes).graph


__all__ = [
    "PIPELINE",
    "Pass",
    "PassResult",
    "PassRun",
    "PipelineResult",
    "optimize",
    "pass_name",
    "pipeline",
    "run_passes",
]
