"""Three views of an IR graph: one line per node, a table, and graphviz dot."""

from __future__ import annotations

import torch

from gsample.ir.graph import Graph, Ref
from gsample.ir.ops import info


def _attr(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor{tuple(value.shape)}"
    if isinstance(value, Graph):
        return f"<program of {len(value.nodes)} nodes>"
    if isinstance(value, tuple) and any(isinstance(v, Graph) for v in value):
        return "(" + ", ".join(_attr(v) for v in value) + ")"  # a fused walk's phases
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "method":
        return f".{value[1]}()"
    if callable(value):
        return getattr(value, "__qualname__", getattr(value, "__name__", repr(value)))
    if isinstance(value, Ref):
        return f"${value.name}"
    return repr(value)


def _attrs(node) -> str:
    return ", ".join(
        f"{k}={_attr(v)}" for k, v in node.attrs.items() if k not in ("template", "kind")
    )


def format_lines(graph: Graph) -> str:
    """One line per node: ``%name = op(inputs) {attrs} : kind``."""
    lines = []
    for n in graph.nodes:
        ins = ", ".join(f"{k}=%{v.name}" for k, v in n.inputs.items())
        attrs = _attrs(n)
        layout = n.meta.get("layout")
        lines.append(
            f"%{n.name} = {n.op.value}({ins})"
            + (f" {{{attrs}}}" if attrs else "")
            + f" : {n.kind.value}"
            + (f" [{layout}]" if layout else "")
        )
    return "\n".join(lines)


def format_table(graph: Graph) -> str:
    """A table: node, op, ECSF step, effect, inputs, attributes, kind, layout."""
    rows = [("node", "op", "step", "effect", "inputs", "attrs", "kind", "layout")]
    for n in graph.nodes:
        i = info(n.op)
        rows.append(
            (
                n.name,
                n.op.value,
                i.step.value,
                i.effect.value,
                " ".join(f"{k}=%{v.name}" for k, v in n.inputs.items()),
                _attrs(n),
                n.kind.value,
                str(n.meta.get("layout", "-")),
            )
        )
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]

    def fmt(r):
        return "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()

    return "\n".join(
        [fmt(rows[0]), fmt(tuple("-" * w for w in widths))] + [fmt(r) for r in rows[1:]]
    )


def to_dot(graph: Graph, name: str = "gsample") -> str:
    """Graphviz ``digraph``: one box per node (random ops filled), edges labelled by input."""
    out = [f'digraph "{name}" {{', "  node [shape=box, fontname=monospace];"]
    for n in graph.nodes:
        label = f"{n.name}\\n{n.op.value}"
        attrs = _attrs(n).replace('"', "'")
        if attrs:
            label += f"\\n{attrs}"
        style = ', style=filled, fillcolor="#ffe0b0"' if n.is_random else ""
        out.append(f'  "{n.name}" [label="{label}"{style}];')
        for k, v in n.inputs.items():
            out.append(f'  "{v.name}" -> "{n.name}" [label="{k}"];')
    out.append("}")
    return "\n".join(out)
