"""gsample's dataflow IR: the op table, nodes and graphs with a verifier, and printers."""
from gsample.ir.graph import Graph, Node, Ref, Target, VerifyError, attr_key, map_template, structure_key
from gsample.ir.ops import (LAYOUTS, METHODS, OPS, PROPERTIES, SDDMM_OPS, Align, Attr, Effect, In, Kind,
                  Op, OpDef, Size, Step, bound, estimate, info)
from gsample.ir.printer import format_lines, format_table, to_dot

__all__ = ["OPS", "METHODS", "PROPERTIES", "SDDMM_OPS", "LAYOUTS", "Align", "Attr", "Effect",
           "In", "Kind", "Op", "OpDef", "Size", "Step", "info", "estimate", "bound", "Graph",
           "Node", "Ref", "Target", "VerifyError", "map_template", "attr_key", "structure_key",
           "format_lines", "format_table", "to_dot"]
