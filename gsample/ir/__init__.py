"""gsample's dataflow IR. ``ops`` holds the op table every other stage reads."""
from .ops import OP_TABLE, Effect, Layout, Op, OpInfo, Step, info

__all__ = ["OP_TABLE", "Effect", "Layout", "Op", "OpInfo", "Step", "info"]
