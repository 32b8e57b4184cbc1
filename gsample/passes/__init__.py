"""Compiler passes, each ``Graph -> Graph`` in a file of its own, run in ``PIPELINE`` order.

Passes read op properties from the op definitions (``gsample.ir.OPS``: effects, steps,
inputs, attributes, alignments, size rules) and the capabilities of the backend a program
is compiled for (``Graph.target``); none matches on op names' strings or on argument positions. A
pass never changes samples: random ops keep their op ordinals, so the program
draws what the eager function draws (docs/architecture.md §3).

Super-batching is not a pass of the pipeline but part of lowering
(:func:`gsample.passes.super_batch.super_batch`): ``gs.DataLoader(..., super_batch=N)``
rewrites an optimised program to sample N mini-batches in one run.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Optional

from gsample.ir import Graph
from gsample.passes.alias_tables import alias_tables
from gsample.passes.cse import cse
from gsample.passes.dce import dce
from gsample.passes.fuse_edge_map import fuse_edge_map, fuse_edge_map_reduce
from gsample.passes.fuse_edge_normalize import fuse_edge_normalize
from gsample.passes.fuse_extract_extract import fuse_extract_extract
from gsample.passes.fuse_extract_reduce import fuse_extract_reduce
from gsample.passes.fuse_extract_select import fuse_extract_select
from gsample.passes.layout import select_layouts
from gsample.passes.preprocess import preprocess
from gsample.passes.probs_support import probs_support
from gsample.passes.structure_reads import structure_reads

#: the passes, in order, each with why it runs at that point
PIPELINE: list = [
    (cse, "merge repeated pure computations first, so later passes see one copy of each"),
    (
        preprocess,
        "after CSE, so each graph-only value is hoisted once; before fusion, so "
        "fusion sees slices of the cached values, not per-batch compute",
    ),
    (
        fuse_edge_map,
        "after pre-processing, which hoists graph-only maps (A ** 2) out of "
        "the batch; what is left, chains of per-batch edge maps / broadcasts, "
        "becomes one evaluation each",
    ),
    (
        fuse_edge_map_reduce,
        "after edge-map fusion: a reduction used as the only consumer of "
        "a fused chain (or of single maps) absorbs it, so the mapped "
        "matrix is never built",
    ),
    (
        fuse_edge_normalize,
        "after edge-map-reduce fusion, which leaves a reduction whose "
        "input is also read by a broadcast of its result (X.div(X.sum(0), "
        "0)); the three, and the maps making X, become one op",
    ),
    (
        fuse_extract_reduce,
        "after edge-map fusion (a reduction that absorbed a map is no longer "
        "a plain reduction) and before extract-select fusion: once a slice's "
        "reductions read the graph directly, a slice feeding only its "
        "sampling ops fuses with them too",
    ),
    (
        fuse_extract_extract,
        "with the other extract fusions, before layout selection (which "
        "prices the fused slice, not a column slice that is never built); "
        "a slice it fuses has one user, a row slice, so it takes nothing "
        "from extract-select fusion",
    ),
    (
        fuse_extract_select,
        "last rewrite, after pre-processing and edge-map fusion: by now "
        "slice ** 2 reads a cached graph-level matrix (graph-level probs) "
        "and a slice feeds only its sampling ops when nothing else needs "
        "it, so A[:, cols].individual_sample(k) fuses and never builds "
        "the slice",
    ),
    (
        alias_tables,
        "pre-processing's offline mode, after extract-select fusion, which makes a "
        "slice's weights the graph's: alias tables of graph-level weights are "
        "built once per graph",
    ),
    (
        probs_support,
        "after extract-select and extract-reduce fusion, which make the fused "
        "collective sampler and the slice's row reductions it relates (its "
        "node_probs vanish off the slice's rows: no marking pass over them)",
    ),
    (
        structure_reads,
        "after the rewrites that make value maps (fused edge maps) and before "
        "layout selection and DCE: a reader of a matrix's structure reads "
        "past maps of its values, which may then be left to the output only",
    ),
    (
        select_layouts,
        "after every rewrite, so the cost model prices the ops that really run "
        "(fused ones included) and each conversion is placed once; before DCE, "
        "which then drops what a conversion made unused",
    ),
    (
        dce,
        "drop values nothing uses (random ops keep their ordinals: the stream still "
        "advances by the program's full count)",
    ),
]


def optimize(graph: Graph, passes: list | None = None, trace: Callable | None = None):
    """Run ``passes`` (default: :data:`PIPELINE`) on a copy of ``graph``.

    ``trace(name, before, after, changed)`` is called after each pass (``gs.explain``
    uses it). With ``GSAMPLE_DEBUG >= 1`` the IR is verified after every pass; with
    ``>= 2`` the IR is printed after every pass that changed it.
    """
    from gsample.ir.graph import debug_level
    from gsample.ir.printer import format_lines

    level = debug_level()
    g = graph.copy()
    for entry in PIPELINE if passes is None else passes:
        fn = entry[0] if isinstance(entry, tuple) else entry
        before = format_lines(g)
        g = fn(g)
        after = format_lines(g)
        if level >= 1:
            g.verify()
        if level >= 2 and before != after:
            print(f"[gsample] after {fn.__name__}:\n{after}", file=sys.stderr)
        if trace is not None:
            trace(fn.__name__, before, after, before != after)
    return g
