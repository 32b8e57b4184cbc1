"""gsample's dataflow IR. ``ops`` holds the op table every other stage reads."""
from .ops import OP_TABLE, SDDMM_OPS, Effect, Layout, Op, OpInfo, Step, info

__all__ = ["OP_TABLE", "SDDMM_OPS", "Effect", "Layout", "Op", "OpInfo", "Step", "info"]
