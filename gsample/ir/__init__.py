"""gsample's dataflow IR: the op table, nodes and graphs with a verifier, and printers."""
from .graph import Graph, Node, Ref, VerifyError, map_template
from .ops import OP_TABLE, SDDMM_OPS, Effect, Kind, Layout, Op, OpInfo, Step, info
from .printer import format_lines, format_table, to_dot

__all__ = ["OP_TABLE", "SDDMM_OPS", "Effect", "Kind", "Layout", "Op", "OpInfo", "Step", "info",
           "Graph", "Node", "Ref", "VerifyError", "map_template", "format_lines", "format_table",
           "to_dot"]
