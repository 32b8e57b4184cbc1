"""The cost model: measured op and conversion costs (:mod:`~gsample.cost.table`), the built-in
default table (:mod:`~gsample.cost.default`) and the calibration that measures a device's
(:mod:`~gsample.cost.calibrate`, the one module here that runs the backends)."""

from gsample.cost.table import CostTable, cache_path, table_for

__all__ = ["CostTable", "cache_path", "table_for"]
