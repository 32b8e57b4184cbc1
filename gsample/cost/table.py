"""Measured op and conversion costs: the tables the layout pass minimises over.

A :class:`CostTable` prices an op on a layout, or a conversion, as

    ``cost_us = a + b * E + c * R + d * C``

(``E`` edges, ``R`` rows, ``C`` columns of the op's input matrix; microseconds), one
``(a, b, c, d)`` per key. Keys are ``"op/layout"`` (``"reduce/csr-compact/axis1"`` for ops
with an ``axis``: the two axes cost differently) and ``"to_layout/src->dst"``.

Where a table comes from (``GSAMPLE_CALIBRATION``):

* ``auto`` (unset): the calibration cached for this device and graph-size bucket
  (:func:`gsample.cost.calibrate.calibrate`, ``python -m gsample calibrate``), else the
  nearest bucket calibrated on this device, else the built-in default;
* ``default``: always the built-in :data:`DEFAULT` table (tests and CI use it: plans
  are then deterministic and nothing is timed).

The cache is one JSON file, ``$GSAMPLE_CACHE/costs.json`` (default
``~/.cache/gsample/costs.json``), keyed by device name and bucket ``round(log4(N))``.
Nothing is timed at compile time: a missing calibration falls back, it never runs one.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import platform
from dataclasses import dataclass

import torch

from gsample.cost.default import DEFAULT_COEFFICIENTS, DEFAULT_SOURCE


@dataclass(frozen=True)
class CostTable:
    """Coefficients ``key -> (a, b, c, d)``: ``a + b*E + c*R + d*C`` microseconds.

    Examples
    --------
    >>> t = CostTable({"reduce/csc/axis1": (10.0, 0.02, 0.003, 0.0)}, "example")
    >>> t.cost("reduce/csc/axis1", nnz=1000, rows=10_000, cols=100)
    60.0
    >>> t.cost("reduce/coo/axis1", 1, 1, 1) is None
    True
    """

    coefficients: dict
    source: str

    def cost(self, key: str, nnz: float, rows: float, cols: float) -> float | None:
        """Estimated microseconds, or ``None`` when the table has no entry for ``key``."""
        c = self.coefficients.get(key)
        if c is None:
            return None
        a, b, r, d = c
        return a + b * nnz + r * rows + d * cols


#: the built-in table: a calibration of the development machine, rounded (see _cost_default)
DEFAULT = CostTable(DEFAULT_COEFFICIENTS, DEFAULT_SOURCE)


def op_key(op: str, layout: str, axis: int | None = None) -> str:
    """The table key of op ``op`` (its ``Op`` value) on ``layout``."""
    return f"{op}/{layout}" + ("" if axis is None else f"/axis{axis}")


def conversion_key(src: str, dst: str) -> str:
    return f"to_layout/{src}->{dst}"


def device_name(device) -> str:
    """A stable name of ``device`` for the cache: the GPU model, or the CPU and its threads."""
    d = torch.device(device)
    if d.type == "cuda":
        return torch.cuda.get_device_name(d)
    return f"cpu {platform.machine()} {torch.get_num_threads()} threads"


def bucket(num_nodes: int) -> int:
    """Graph-size bucket: ``round(log4(N))`` (a calibration at ``4 ** b`` nodes serves it)."""
    return max(1, round(math.log(max(int(num_nodes), 1), 4)))


def cache_path() -> pathlib.Path:
    root = os.environ.get("GSAMPLE_CACHE")
    base = pathlib.Path(root) if root else pathlib.Path.home() / ".cache" / "gsample"
    return base / "costs.json"


def _read(path: pathlib.Path) -> list:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return data.get("tables", []) if isinstance(data, dict) else []


def _where(entry: dict) -> tuple:
    return entry.get("device"), entry.get("backend", "torch"), entry.get("bucket")


def save(entry: dict, path: pathlib.Path | None = None) -> pathlib.Path:
    """Add (or replace) a calibration ``entry`` (``device``, ``backend``, ``bucket``,
    ``coefficients``, ...) in the cache file; returns its path."""
    path = path or cache_path()
    tables = [t for t in _read(path) if _where(t) != _where(entry)]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"format": 1, "tables": tables + [entry]}, indent=1))
    tmp.replace(path)  # atomic: a reader never sees half a file
    return path


def table_for(device, num_nodes: int, backend: str = "torch") -> CostTable:
    """The cost table for a graph of ``num_nodes`` nodes on ``device``, run by ``backend``
    (see the module doc).

    Examples
    --------
    >>> table_for("cpu", 325_729) is DEFAULT     # with GSAMPLE_CALIBRATION=default
    True
    """
    mode = os.environ.get("GSAMPLE_CALIBRATION", "auto")
    if mode not in ("auto", "default"):
        raise ValueError(f"GSAMPLE_CALIBRATION: must be 'auto' or 'default', got {mode!r}")
    if mode == "default":
        return DEFAULT
    name, b = device_name(device), bucket(num_nodes)
    mine = [
        t for t in _read(cache_path()) if _where(t)[:2] == (name, backend) and "coefficients" in t
    ]
    if not mine:
        return DEFAULT
    best = min(mine, key=lambda t: (abs(t["bucket"] - b), -t["bucket"]))
    coefficients = {k: tuple(v) for k, v in best["coefficients"].items()}
    return CostTable(
        coefficients,
        f"calibrated on {name} ({backend} backend), "
        f"{best.get('num_nodes')} nodes (bucket {best['bucket']}), "
        f"{best.get('date', '?')}",
    )
