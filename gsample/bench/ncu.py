"""Nsight Compute (``ncu``) for the harness's roofline: the command that runs the roofline
worker (:mod:`gsample.bench.roofline_worker`) under it, and the parser of its CSV.

The worker samples each (workload, mode) region between ``cudaProfilerStart`` and
``cudaProfilerStop`` (``--profile-from-start off``), each region opened by a marker kernel
named :data:`MARKER` so that the kernels of one process's single CSV table can be told apart
by launch order. ``--cache-control none``: the L2 is not flushed before each profiled kernel,
so that a kernel which reads what the one before it wrote (a mini-batch's intermediates fit
in the L2) is not charged DRAM bytes it does not move outside the profiler.
"""

from __future__ import annotations

import csv
import io
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys

__all__ = [
    "CACHE_CONTROL",
    "MARKER",
    "METRICS",
    "NcuError",
    "find_ncu",
    "ncu_command",
    "parse_csv",
    "regions_of",
    "run_worker",
    "to_bytes",
]

#: the DRAM traffic of a kernel, in bytes, as ncu's raw page names it
METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum")
#: the name of the kernel that opens each sampled region (an ``extern "C"`` kernel: the same
#: name whatever ncu's ``--print-kernel-base``)
MARKER = "gsample_roofline_mark"
CACHE_CONTROL = "none"
#: byte units ncu prints (``--print-units auto``): decimal prefixes as ncu uses them, and
#: binary ones should a version print them
_UNITS = {
    "byte": 1,
    "kbyte": 10**3,
    "mbyte": 10**6,
    "gbyte": 10**9,
    "tbyte": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
}


class NcuError(RuntimeError):
    """ncu could not measure: not found, refused (counter permissions), failed, timed out,
    or printed nothing the parser can read; the message says which."""


def find_ncu(explicit: str | None = None) -> str | None:
    """The ncu executable: ``explicit``, else ``$GSAMPLE_NCU``, else ``ncu`` on the ``PATH``,
    else ``/usr/local/cuda/bin/ncu``; None when none exists."""
    for c in (explicit, os.environ.get("GSAMPLE_NCU")):
        if c:
            return c if (os.path.isfile(c) or shutil.which(c)) else None
    found = shutil.which("ncu")
    if found:
        return found
    default = "/usr/local/cuda/bin/ncu"
    return default if os.path.isfile(default) else None


def ncu_command(ncu: str, spec_path, out_path, log_path, python: str | None = None) -> list:
    """The command line that runs the worker on ``spec_path`` under ncu, its CSV in
    ``log_path`` (``--log-file``: the worker's own output stays apart).

    Examples
    --------
    >>> cmd = ncu_command("ncu", "s.json", "o.json", "l.csv", python="python")
    >>> cmd[-4:]
    ['-m', 'gsample.bench.roofline_worker', 's.json', 'o.json']
    >>> "--profile-from-start" in cmd and "dram__bytes_read.sum,dram__bytes_write.sum" in cmd
    True
    """
    return [
        ncu,
        "--target-processes",
        "all",
        "--profile-from-start",
        "off",
        "--metrics",
        ",".join(METRICS),
        "--cache-control",
        CACHE_CONTROL,
        "--csv",
        "--page",
        "raw",
        "--print-units",
        "base",
        "--log-file",
        str(log_path),
        python or sys.executable,
        "-m",
        "gsample.bench.roofline_worker",
        str(spec_path),
        str(out_path),
    ]


def to_bytes(value: str, unit: str = "byte") -> float | None:
    """A CSV cell of a byte metric in bytes: ``value`` (thousands separators allowed) times
    ``unit``'s multiplier; None for ``n/a`` or an empty cell.

    Raises
    ------
    NcuError
        An unknown unit or a value that is not a number.

    Examples
    --------
    >>> to_bytes("1,024"), to_bytes("1.5", "Kbyte"), to_bytes("n/a")
    (1024.0, 1500.0, None)
    """
    v = value.strip().replace(",", "")
    if v in ("", "n/a", "N/A", "-"):
        return None
    scale = _UNITS.get(unit.strip().lower() or "byte")
    if scale is None:
        raise NcuError(f"ncu printed a byte metric in an unknown unit {unit!r}")
    try:
        return float(v) * scale
    except ValueError:
        raise NcuError(f"ncu printed {value!r} where a number of bytes belongs") from None


def parse_csv(text: str) -> dict:
    """The kernels of ncu's ``--csv --page raw`` output for :data:`METRICS`.

    Tolerates ncu's own lines (``==PROF==``, ``==WARNING==``), a units row under the header
    (or units in the header, ``name [unit]``), thousands separators and scaled units
    (``Kbyte``, ``Mbyte``, from ``--print-units auto``).

    Parameters
    ----------
    text : str
        What ncu wrote (its ``--log-file``).

    Returns
    -------
    dict
        ``kernels``: ``[{"id", "name", "read", "write"}]`` in launch order (bytes; None for
        ``n/a``); ``units``: the units seen per metric; ``errors``: ncu's ``==ERROR==``
        lines; ``warnings``: its ``==WARNING==`` lines.

    Raises
    ------
    NcuError
        No table (with the ncu errors, when it printed some), or a table without the metrics.

    Examples
    --------
    >>> t = '"ID","Kernel Name","dram__bytes_read.sum","dram__bytes_write.sum"\\n'
    >>> t += '"","","byte","byte"\\n"0","k","64","32"\\n'
    >>> parse_csv(t)["kernels"]
    [{'id': 0, 'name': 'k', 'read': 64.0, 'write': 32.0}]
    """
    errors, warnings, table = [], [], []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("==ERROR=="):
            errors.append(s)
        elif s.startswith("==WARNING=="):
            warnings.append(s)
        elif s.startswith('"') and (table or s.startswith('"ID"')):
            table.append(line)
    if not table:
        why = "; ".join(errors or warnings) or "no CSV table (no kernel was profiled?)"
        raise NcuError(f"ncu printed no kernel table: {why}")
    rows = list(csv.reader(io.StringIO("\n".join(table))))
    header = [h.strip() for h in rows[0]]
    names, units = [], {}
    for h in header:
        m = re.fullmatch(r"(.+?)\s*\[(.+)\]", h)
        names.append(m.group(1) if m else h)
        if m:
            units[m.group(1)] = m.group(2)
    missing = [m for m in METRICS if m not in names]
    if missing:
        raise NcuError(f"ncu's table has no column {', '.join(missing)} (columns: {names})")
    col = {m: names.index(m) for m in METRICS}
    name_col = names.index("Kernel Name") if "Kernel Name" in names else None
    id_col = names.index("ID")
    body = rows[1:]
    if body and not body[0][id_col].strip():  # the units row: no kernel ID
        for m in METRICS:
            units.setdefault(m, body[0][col[m]].strip())
        body = body[1:]
    kernels = []
    for r in body:
        if len(r) < len(names) or not r[id_col].strip():
            continue
        kernels.append(
            {
                "id": int(r[id_col].replace(",", "")),
                "name": r[name_col] if name_col is not None else "",
                "read": to_bytes(r[col[METRICS[0]]], units.get(METRICS[0], "byte")),
                "write": to_bytes(r[col[METRICS[1]]], units.get(METRICS[1], "byte")),
            }
        )
    kernels.sort(key=lambda k: k["id"])
    return {
        "kernels": kernels,
        "units": {m: units.get(m, "byte") for m in METRICS},
        "errors": errors,
        "warnings": warnings,
    }


def regions_of(kernels: list, num_regions: int) -> list:
    """The kernels of each sampled region: the rows after each :data:`MARKER` kernel, up to
    the next (markers left out), summed.

    Returns
    -------
    list of dict
        Per region, ``read`` and ``write`` bytes, ``kernels`` (count) and ``na`` (kernels
        whose metric was ``n/a``); ``unattributed``: the kernels before the first marker
        are an error.

    Raises
    ------
    NcuError
        Not exactly ``num_regions`` markers, or kernels before the first one.

    Examples
    --------
    >>> def k(name, read, write):
    ...     return {"name": name, "read": read, "write": write}
    >>> ks = [k(MARKER, 0.0, 0.0), k("a", 10.0, 2.0), k("b", 5.0, 1.0), k(MARKER, 0.0, 0.0)]
    >>> ks.append(k("c", None, 4.0))
    >>> [(r["read"], r["write"], r["kernels"], r["na"]) for r in regions_of(ks, 2)]
    [(15.0, 3.0, 2, 0), (0.0, 4.0, 1, 1)]
    """
    regions, before = [], 0
    for k in kernels:
        if MARKER in k["name"]:
            regions.append({"read": 0.0, "write": 0.0, "kernels": 0, "na": 0})
            continue
        if not regions:
            before += 1
            continue
        r = regions[-1]
        r["kernels"] += 1
        if k["read"] is None or k["write"] is None:
            r["na"] += 1
        r["read"] += k["read"] or 0.0
        r["write"] += k["write"] or 0.0
    if before:
        raise NcuError(f"{before} profiled kernels came before the first region's marker")
    if len(regions) != num_regions:
        raise NcuError(
            f"found {len(regions)} region markers ({MARKER}) in ncu's table, expected "
            f"{num_regions} (a region whose marker was not profiled?)"
        )
    return regions


def _tail(text: str, n: int = 1500) -> str:
    return text[-n:].strip()


def run_worker(ncu: str, spec_path, out_path, log_path, timeout: float, env=None) -> dict:
    """Run the worker under ncu; ``parse_csv`` of its table.

    Raises
    ------
    NcuError
        ncu timed out, exited non-zero, or its table cannot be read: the message holds
        ncu's errors and the tail of the worker's stderr.
    """
    cmd = ncu_command(ncu, spec_path, out_path, log_path)
    try:
        # a session of its own: on a timeout the worker (ncu's child) is killed with it
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
    except OSError as e:
        raise NcuError(f"ncu could not start: {e}") from None
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, stderr = proc.communicate()
        raise NcuError(
            f"ncu timed out after {timeout:.0f} s (--roofline-timeout; fewer "
            f"--roofline-batches or workloads); worker stderr: {_tail(stderr or '')}"
        ) from None
    try:
        log = pathlib.Path(log_path).read_text()
    except OSError:
        log = ""
    if proc.returncode != 0:
        errors = [s for s in (log + stdout).splitlines() if "==ERROR==" in s]
        raise NcuError(
            f"ncu exited {proc.returncode}: {'; '.join(errors)[:1500]}; worker stderr: "
            f"{_tail(stderr)}"
        )
    try:
        # the table is in the log; should a version print it to stdout, it is read there
        return parse_csv(log + "\n" + stdout)
    except NcuError as e:
        raise NcuError(f"{e}; worker stderr: {_tail(stderr)}") from None
