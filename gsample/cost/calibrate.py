"""Calibration: time every layout-dependent op and every conversion on the device in use.

:func:`calibrate` builds an R-MAT graph of ``num_nodes`` nodes on the device, takes
sub-matrices shaped like the values samplers make (column slices over a row space of all
``N`` nodes, and the same slices restricted to their rows with edges; frontiers of
random nodes and of hubs, so that edges, rows and columns vary independently), times
each op of the op table that accepts a layout besides CSC, on each layout it accepts, and
each conversion, and fits ``a + b*E + c*R + d*C`` per key (non-negative least squares,
weighted by 1 / time so small and large sizes count alike). The result is cached by
(device name, size bucket) in :func:`gsample.cost.cache_path`; compiles read it there.

    python -m gsample calibrate                      # the CPU, 262,144 nodes
    python -m gsample calibrate --device cuda --num-nodes 2400000
"""

from __future__ import annotations

import datetime
import itertools
import time

import numpy as np
import torch
from tqdm import tqdm

from gsample.backend import get_backend, run_op
from gsample.backend.torch import extract
from gsample.cost import table as cost
from gsample.datasets.synthetic import rmat
from gsample.formats.layouts import NAMES, convert
from gsample.ir import Align, Op, Size, info


def layout_ops(backend: str = "torch") -> list:
    """The ops ``backend`` runs on more than CSC: the ones a layout choice prices."""
    target = get_backend(backend).target()
    return [op for op in Op if op is not Op.TO_LAYOUT and set(target.layouts(op)) - {"csc"}]


def variants(op: Op) -> tuple:
    """Attribute variants priced apart: the axis, for ops that have one."""
    return (0, 1) if "axis" in info(op).attrs else (None,)


def _kwargs(op: Op, A, axis, g) -> dict:
    """Inputs and attributes to time ``op`` with on ``A`` (CSC), from its definition: each
    attribute's example value, and for each tensor input random values of the length its
    alignment gives (ids: a random 1/64 of the nodes)."""
    d = info(op)
    attrs = {a.name: a.example for a in d.attributes}
    if "axis" in attrs:
        attrs["axis"] = axis
    names = [i.name for i in d.inputs if not i.matrix]
    if d.variadic is not None:
        names += sorted({x for _o, x, *_ in attrs["program"] if x is not None}, key=int)
    size, kwargs = Size(A.nnz, A.num_rows, A.num_cols), dict(attrs)
    for name in names:
        a = d.alignment(name, attrs)
        if a is Align.NEW_ROWS:
            kwargs[name] = torch.randperm(A.num_nodes, generator=g)[: max(1, A.num_nodes // 64)].to(
                A.device
            )
        else:
            kwargs[name] = torch.rand(int(size.length(a)), generator=g).to(A.device) + 0.5
    return kwargs


def samples(num_nodes: int, avg_degree: int = 8, device="cpu", seed: int = 0) -> list:
    """Sub-matrices (CSC) to time on: see the module docstring."""
    G = rmat(num_nodes, num_nodes * avg_degree, seed=seed, weighted=True, device=device).csc
    g = torch.Generator().manual_seed(seed)
    hubs = torch.argsort(G.degrees().cpu(), descending=True, stable=True)
    out = []
    for frac in (65536, 4096, 256, 16):  # frontiers of 4 to N / 16 nodes
        n = max(4, num_nodes // frac)
        for cols in (torch.randperm(num_nodes, generator=g)[:n], hubs[:n]):
            sub = extract.slice_cols(G, cols.to(G.device))
            out.append(sub)
            out.append(extract.slice_rows(sub, torch.unique(sub.rows)))
    return out


def _timed(fn, device, repeats: int) -> float:
    """Fastest of ``repeats`` runs of ``fn()`` after a warm-up, in microseconds (the least
    disturbed run: other processes only ever add time)."""
    sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)
    fn()
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - start) * 1e6)
    return min(times)


def fit(sizes: np.ndarray, times: np.ndarray) -> tuple:
    """Non-negative ``(a, b, c, d)`` minimising the relative error of ``a + b*E + c*R + d*C``.

    ``sizes`` has shape (n, 3) (E, R, C), ``times`` shape (n,). Exact non-negative least
    squares: the best of the unconstrained fits on every subset of the four terms whose
    coefficients come out non-negative.
    """
    X = np.column_stack([np.ones(len(times)), sizes]).astype(np.float64)
    w = 1.0 / np.maximum(times, 1e-3)
    Xw, yw = X * w[:, None], times * w
    best, best_err = (float(np.mean(times)), 0.0, 0.0, 0.0), np.inf
    for k in range(1, 5):
        for cols in itertools.combinations(range(4), k):
            coef, *_ = np.linalg.lstsq(Xw[:, cols], yw, rcond=None)
            if (coef < 0).any():
                continue
            err = float(np.sum((Xw[:, cols] @ coef - yw) ** 2))
            if err < best_err:
                full = np.zeros(4)
                full[list(cols)] = coef
                best, best_err = tuple(float(x) for x in full), err
    return best


def calibrate(
    device="cpu",
    num_nodes: int = 4**9,
    repeats: int = 5,
    avg_degree: int = 8,
    save: bool = True,
    progress: bool = True,
    keys: list | None = None,
    backend: str = "torch",
) -> dict:
    """Time the layout-dependent ops and conversions on ``device`` and fit their costs.

    Parameters
    ----------
    device : str or torch.device
        Where to time (CUDA work is synchronised around each timing).
    num_nodes : int
        Nodes of the synthetic graph; the entry serves the bucket of this size.
    repeats : int
        Timed runs per (key, sample), after one warm-up; the fastest is kept.
    avg_degree : int
        Edges per node of the synthetic graph.
    save : bool
        Store the entry in the cache (:func:`gsample.cost.save`).
    progress : bool
        A tqdm bar over the keys.
    keys : list of str, optional
        Time only these keys (default: all).
    backend : str
        The backend to time (``"cuda"``: its kernels where it has them for a CSC input,
        the torch code elsewhere, as a compiled call runs).

    Returns
    -------
    dict
        The cache entry: ``device``, ``bucket``, ``num_nodes``, ``date``, ``torch``,
        ``samples`` (their (E, R, C)) and ``coefficients`` (key -> [a, b, c, d]).

    Examples
    --------
    >>> entry = calibrate("cpu", num_nodes=1024, repeats=1, save=False, progress=False)
    >>> entry["coefficients"]["reduce/csr-compact/axis1"]      # doctest: +SKIP
    [3.1, 0.004, 0.0, 0.0]
    """
    device = torch.device(device)
    be, g = get_backend(backend), torch.Generator().manual_seed(1)
    mats = samples(num_nodes, avg_degree, device)
    target = be.target()
    jobs = [
        (cost.op_key(op.value, name, axis), op, name, axis)
        for op in layout_ops(backend)
        for name in target.layouts(op)
        for axis in variants(op)
    ]
    jobs += [
        (cost.conversion_key(s, d), Op.TO_LAYOUT, s, d) for s in NAMES for d in NAMES if s != d
    ]
    jobs = [j for j in jobs if keys is None or j[0] in keys]
    sizes = np.array([(A.nnz, A.num_rows, A.num_cols) for A in mats], dtype=np.float64)
    coefficients = {}
    for key, op, name, extra in tqdm(jobs, desc="calibrating", disable=not progress):
        times = []
        for A in mats:
            x = convert(A, name)
            if op is Op.TO_LAYOUT:
                kwargs = {"layout": extra}
            else:
                kwargs = _kwargs(op, A, extra, g)
            kwargs["A"] = x
            times.append(
                _timed(lambda op=op, kwargs=kwargs: run_op(be, op, kwargs), device, repeats)
            )
        coefficients[key] = [round(c, 9) for c in fit(sizes, np.array(times))]
    entry = {
        "device": cost.device_name(device),
        "backend": backend,
        "bucket": cost.bucket(num_nodes),
        "num_nodes": num_nodes,
        "avg_degree": avg_degree,
        "repeats": repeats,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "samples": sizes.astype(int).tolist(),
        "coefficients": coefficients,
    }
    if save:
        entry["path"] = str(cost.save(entry))
    return entry
