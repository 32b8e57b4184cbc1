"""Input checks (docs/architecture.md §6): every bad input becomes a clear Python exception that
names the argument, raised before any backend op could read out of bounds.

Documented behaviours instead of errors: a non-contiguous tensor is copied to a
contiguous one; int8/16/32 and uint8 ids are widened to int64; Python lists and NumPy
arrays are turned into tensors on the matrix's device; no id (an empty frontier, as a hop
that reached no new node leaves) is a slice of no column, as in torch's indexing.

Value dtypes. Edge values are real floating point. Integer and bool values promote as
PyTorch promotes them against the matrix's float values (``torch.ones(3) * mask``): an
integer or bool weight (``from_edge_index(weight=...)``, ``from_csc``, ``from_scipy``)
becomes float32, an edge map, broadcast or ``A @ D`` with an integer or bool operand gives
float values, and an SDDMM of two integer or bool operands is taken in float32 (as an edge
map's integer result is). Probabilities (``probs``, ``node_probs``, walk weights) must be
floating point already, as ``torch.multinomial`` requires: an integer or bool tensor there
is a TypeError. Complex values are a TypeError naming the argument wherever they enter
(constructors, scalars and tensors of edge maps, broadcasts, products, probabilities),
raised before anything is cast: PyTorch would drop the imaginary part with a warning only.
Sparse tensors are a TypeError too (pass ``.to_dense()``).

Data checks that need a tensor's values (id ranges, finite probabilities) go through
:func:`fail_if`. Eagerly, and on the CPU, it raises at once (on a GPU that reads one flag
back: a host synchronisation). Inside :func:`deferred` on a GPU it records the flag
instead; the compiled runtime reads every recorded flag together with the sizes it reads
back anyway, once per call, and raises the first failure's exception then, before any
result is returned. Ids checked that way are clamped into range first, so no kernel
reads out of bounds while the flag is in flight.
"""

from __future__ import annotations

import contextlib
import contextvars
import numbers
import os
from collections.abc import Callable

import numpy as np
import torch
from torch.utils.weak import WeakIdKeyDictionary

from gsample.base.readback import read_scalars

#: the integer dtypes ids may come in (widened to int64)
INT_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)

# ----------------------------------------------------------------------------- failures
#: the :class:`Deferred` record :func:`fail_if` appends CUDA flags to (None: raise at once);
#: set by :func:`deferred`, and by the runtime around a compiled call's steps
DEFERRED: contextvars.ContextVar = contextvars.ContextVar("gsample_deferred", default=None)


class Deferred:
    """Failures recorded on the device: ``(flag, exception type, message, details)``."""

    def __init__(self):
        self.failures: list = []

    def flags(self) -> list:
        """The recorded flags (0-dim bool tensors), in order."""
        return [f[0] for f in self.failures]

    def raise_first(self, values: list) -> None:
        """Raise the first failure whose flag read back True (``values``: the flags)."""
        for (_flag, exc, message, details), hit in zip(self.failures, values):
            if hit:
                raise exc(message(*[d.tolist() for d in details]) if callable(message) else message)


@contextlib.contextmanager
def deferred():
    """Record :func:`fail_if` failures of CUDA tensors instead of reading them back; yields
    the :class:`Deferred` record (its flags are to be read once, then ``raise_first``)."""
    record = Deferred()
    token = DEFERRED.set(record)
    try:
        yield record
    finally:
        DEFERRED.reset(token)


def fail_if(bad: torch.Tensor, exc: type, message: str | Callable, *details) -> None:
    """Raise ``exc(message)`` when the 0-dim bool tensor ``bad`` is True.

    ``message`` may be a function of the ``details`` (tensors, read back only on failure).
    Inside :func:`deferred` a CUDA flag is recorded instead of read (see the module doc).
    """
    record = DEFERRED.get()
    if record is not None and bad.is_cuda:
        record.failures.append((bad, exc, message, details))
        return
    if bool(bad):
        raise exc(message(*[d.tolist() for d in details]) if callable(message) else message)


def read_back(scalars: list) -> list:
    """The values (ints) of device scalars ``scalars`` (1-element tensors), read back
    together with every pending deferred check flag in one host synchronisation; the first
    failed check raises its error (before any value is returned)."""
    record = DEFERRED.get()
    flags = record.flags() if record is not None else []
    host = read_scalars(list(scalars) + flags)
    hits = host[len(scalars) :]
    if any(hits):
        record.raise_first(hits)
    if record is not None:
        record.failures.clear()
    return host[: len(scalars)]


def deferring(t: torch.Tensor) -> bool:
    """Whether checks of ``t`` are being deferred (then ids must be clamped)."""
    return DEFERRED.get() is not None and t.is_cuda


def not_complex(dtype, name: str, fix: str = "pass x.real or x.abs()") -> None:
    """Raise a TypeError naming ``name`` for a complex ``dtype`` (torch or NumPy): gsample's
    values are real, and a cast would drop the imaginary part with a warning only. ``fix``:
    what the message tells the caller to do."""
    if (
        dtype.is_complex
        if isinstance(dtype, torch.dtype)
        else np.issubdtype(dtype, np.complexfloating)
    ):
        raise TypeError(
            f"{name}: complex values (dtype {dtype}) are not supported; gsample's "
            f"edge values, probabilities and operands are real ({fix})"
        )


def as_tensor(x, name: str, device) -> torch.Tensor:
    """``x`` as a dense, real, contiguous tensor on ``device``; lists and arrays are
    converted, tensors must be on ``device`` (complex and sparse tensors: TypeError)."""
    if isinstance(x, torch.Tensor):
        if x.layout != torch.strided:
            raise TypeError(
                f"{name}: sparse tensors (layout {x.layout}) are not supported; "
                "pass a dense tensor (.to_dense())"
            )
        not_complex(x.dtype, name)
        if device is not None and x.device != torch.device(device):
            raise ValueError(
                f"{name}: tensor is on {x.device} but the matrix is on {device}; "
                f"move it with .to({str(device)!r})"
            )
        return x.contiguous()
    if isinstance(x, (list, tuple, range, np.ndarray, numbers.Number)):
        arr = np.asarray(x)
        if arr.dtype == object:
            raise TypeError(
                f"{name}: cannot convert {type(x).__name__} to a tensor (its "
                "elements must all be numbers, integers within 64 bits)"
            )
        not_complex(arr.dtype, name)
        return torch.as_tensor(arr, device=device)
    raise TypeError(f"{name}: expected a tensor, got {type(x).__name__}")


def ids(
    x, name: str, num_nodes: int, device, *, allow_empty: bool = True, check_range: bool = True
) -> torch.Tensor:
    """Check node ids: 1-D, integer, in ``[0, num_nodes)``; returns int64 (shape (n,)).

    ``check_range=False``: the conversions and host checks only (the caller's kernel checks
    the range itself and reports it through :func:`fail_if`). ``allow_empty=False``: no id
    is a ValueError (a frontier given where at least one node is needed).

    An empty list (or tuple) is no id, as in torch's indexing (NumPy would read it as
    float64)."""
    if isinstance(x, (list, tuple)) and len(x) == 0:
        x = torch.zeros(0, dtype=torch.int64, device=device)
    t = as_tensor(x, name, device)
    if t.dtype == torch.bool or t.dtype not in INT_DTYPES:
        raise TypeError(f"{name}: node ids must be an integer tensor, got dtype {t.dtype}")
    if t.dim() != 1:
        raise ValueError(f"{name}: node ids must be 1-D, got shape {tuple(t.shape)}")
    if t.numel() == 0:
        if not allow_empty:
            raise ValueError(f"{name}: empty frontier (no node ids); sample from at least one node")
        return t.to(torch.int64)
    if t.dtype is not torch.int64:
        t = t.to(torch.int64)
    if not check_range:
        return t
    in_range(t, name, num_nodes)
    if deferring(t):  # nothing may read out of bounds before the flag is read
        t = t.clamp(0, max(num_nodes - 1, 0))
    return t


def in_range(t: torch.Tensor, name: str, num_nodes: int) -> None:
    """Raise an IndexError naming ``name`` when an id of ``t`` (a non-empty integer
    tensor) is outside ``[0, num_nodes)``; deferred (:func:`fail_if`) where checks are.
    Nothing is clamped: the caller clamps what it reads through."""
    lo, hi = torch.aminmax(t)
    if not t.is_cuda:  # read at once (fail_if's raise, without a comparison tensor each)
        lo, hi = lo.item(), hi.item()
        if lo < 0:
            raise IndexError(f"{name}: node id {lo} is negative")
        if hi >= num_nodes:
            raise IndexError(
                f"{name}: node id {hi} is out of range for a graph of {num_nodes} nodes"
            )
        return
    fail_if(lo < 0, IndexError, lambda v: f"{name}: node id {v} is negative", lo)
    fail_if(
        hi >= num_nodes,
        IndexError,
        lambda v: f"{name}: node id {v} is out of range for a graph of {num_nodes} nodes",
        hi,
    )


def unique_ids(t: torch.Tensor, name: str, n: int = 0) -> None:
    """Raise when ``t`` repeats an id, naming the smallest repeated one (where ``n`` is
    given, ids ``b * n + v`` of a super-batch: node ``v`` of the first batch with a repeat,
    its smallest repeated node)."""
    if t.numel() > 1:
        s = torch.sort(t).values
        dup = s[1:] == s[:-1]
        fail_if(
            dup.any(),
            ValueError,
            lambda v: (
                f"{name}: node {v % n if n else v} appears more than once; row ids must be unique"
            ),
            s[1:][torch.argmax(dup.to(torch.int8))],
        )


def count(k, name: str = "k", low: int = 0) -> int:
    """Check a sample size: a Python or NumPy integer ``>= low`` (0 by default)."""
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (numbers.Integral,)):
        raise TypeError(f"{name}: must be an int, got {type(k).__name__}")
    if k < low:
        raise ValueError(f"{name}: must be >= {low}, got {k}")
    if k > 2**63 - 1:
        raise ValueError(f"{name}: {k} does not fit in int64")
    return int(k)


def memory_bytes(device) -> int:
    """The memory of ``device``: a GPU's total memory, or the host's physical memory."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).total_memory
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def fits(elements: int, bytes_each: int, device, name: str, what: str) -> None:
    """Raise a ValueError naming ``name`` when ``elements`` values of ``bytes_each`` bytes
    (``what``, for the message) cannot fit in ``device``'s memory: before the allocator
    would fail with a message about storage sizes."""
    need = elements * bytes_each
    have = memory_bytes(device)
    if need > have:
        raise ValueError(
            f"{name}: {what} would need about {need:.3g} bytes, more than the "
            f"{torch.device(device).type} device's {have:.3g}"
        )


def flag(x, name: str) -> bool:
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name}: must be True or False, got {x!r}")
    return bool(x)


def probability(x, name: str) -> float:
    """A probability: a real number in [0, 1] (as a Python float)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name}: must be a number in [0, 1], got {type(x).__name__}")
    if not 0.0 <= float(x) <= 1.0:
        raise ValueError(f"{name}: must be a probability in [0, 1], got {x}")
    return float(x)


def positive(x, name: str) -> float:
    """A finite real number > 0 (as a Python float)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name}: must be a positive number, got {type(x).__name__}")
    if not (np.isfinite(float(x)) and float(x) > 0):
        raise ValueError(f"{name}: must be finite and > 0, got {x}")
    return float(x)


def real(x, name: str, low: float = -float("inf"), high: float = float("inf")) -> float:
    """A finite real number in ``[low, high]`` (as a Python float)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name}: must be a real number, got {type(x).__name__}")
    v = float(x)
    if not np.isfinite(v):
        raise ValueError(f"{name}: must be finite, got {x}")
    if not low <= v <= high:
        what = (
            f">= {low}"
            if high == float("inf")
            else f"<= {high}"
            if low == -float("inf")
            else f"in [{low}, {high}]"
        )
        raise ValueError(f"{name}: must be {what}, got {x}")
    return v


def seed(x, name: str = "seed", none_ok: bool = False):
    """A random seed: any Python or NumPy integer (as an int); with ``none_ok``, None too
    (returned as is)."""
    if none_ok and x is None:
        return None
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Integral):
        raise TypeError(
            f"{name}: must be an int{' or None' if none_ok else ''}, got {type(x).__name__}"
        )
    return int(x)


def device(x, name: str = "device") -> torch.device:
    """A CPU or CUDA device, given as a ``torch.device``, its name or a GPU index; a CUDA
    device needs a GPU here (a RuntimeError naming ``name`` otherwise)."""
    if isinstance(x, bool) or not isinstance(x, (str, torch.device, int)):
        raise TypeError(
            f"{name}: expected a torch.device or a device name ('cpu', 'cuda', "
            f"'cuda:0'), got {type(x).__name__}"
        )
    try:
        d = torch.device(x)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"{name}: {x!r} is not a device; use 'cpu', 'cuda' or 'cuda:N'") from None
    if d.type not in ("cpu", "cuda"):
        raise ValueError(f"{name}: gsample runs on 'cpu' or 'cuda' devices, got {str(d)!r}")
    if d.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            f"{name}: {str(d)!r} needs a CUDA GPU, and torch.cuda.is_available() is False"
        )
    return d


def axis(a) -> int:
    if isinstance(a, bool) or a not in (0, 1):
        raise ValueError(
            f"axis: must be 0 (one value per column) or 1 (one value per row), got {a!r}"
        )
    return int(a)


def vector(v, name: str, length: int, device, what: str) -> torch.Tensor:
    """A dense vector with one value per ``what``; shape (length,) or (length, F)."""
    t = as_tensor(v, name, device)
    if t.dim() not in (1, 2) or t.shape[0] != length:
        raise ValueError(
            f"{name}: expected one value per {what} (shape ({length},) or "
            f"({length}, F)), got shape {tuple(t.shape)}"
        )
    return t


def probabilities(
    p, name: str, length: int, device, what: str, values: bool = True
) -> torch.Tensor:
    """Floating values of shape (length,); with ``values`` also finite and non-negative."""
    t = as_tensor(p, name, device)
    if not t.is_floating_point():
        raise TypeError(f"{name}: probabilities must be floating point, got dtype {t.dtype}")
    if t.dim() != 1 or t.shape[0] != length:
        raise ValueError(
            f"{name}: expected one probability per {what} (shape ({length},)), "
            f"got shape {tuple(t.shape)}"
        )
    if values:
        finite_nonnegative(t, name)
    return t


def scalar_or_edges(x, name: str, nnz: int, device):
    """An edge-map operand: a real scalar (returned as a Python int or float), or a tensor
    of shape (), (E,) or (E, F)."""
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name}: expected a number or an edge-aligned tensor, got bool")
    if isinstance(x, numbers.Integral):
        if not -(2**63) <= x < 2**63:
            raise ValueError(f"{name}: the integer {x} does not fit in int64; pass it as a float")
        return int(x)
    if isinstance(x, numbers.Real):  # NumPy scalars, fractions: as Python floats
        return float(x)
    if isinstance(x, numbers.Complex):
        raise TypeError(
            f"{name}: complex values ({x!r}) are not supported; gsample's edge values are real"
        )
    t = as_tensor(x, name, device)
    if t.dim() == 0:
        return t
    if t.dim() not in (1, 2) or t.shape[0] != nnz:
        raise ValueError(
            f"{name}: expected a scalar or one value per edge (shape ({nnz},) or "
            f"({nnz}, F)), got shape {tuple(t.shape)}"
        )
    return t


# ----------------------------------------------------------------------------- probabilities
# Value checks that several ops' data checks (``gsample.ir.checks``) and the samplers that
# check weights with their draws share: their messages are the ops' errors.


#: CPU tensors :func:`finite_nonnegative` passed, with their version counter then: a sampler
#: handed the same weights every call (a cached degree vector) is checked once, until the
#: tensor changes in place (which bumps its version). Checked on the host, so a pass is
#: known at once; a deferred GPU check is only known at its read-back, so never kept.
_PASSED = WeakIdKeyDictionary()


def finite_nonnegative(t: torch.Tensor, name: str) -> None:
    """Raise (through :func:`fail_if`) when ``t`` holds a NaN, an infinity or a negative value.

    A CPU tensor that passed and has not changed since (its ``_version``) is not read again."""
    if not t.numel():
        return
    kept = t.device.type == "cpu"
    if kept and _PASSED.get(t) == t._version:
        return
    # one pass over t: a NaN makes both extremes NaN, an infinity one of them
    lo, hi = torch.aminmax(t)
    fail_if(
        ~(torch.isfinite(lo) & torch.isfinite(hi)),
        ValueError,
        f"{name}: contains NaN or infinite values",
    )
    fail_if(lo < 0, ValueError, lambda v: f"{name}: contains negative values (min {v})", lo)
    if kept:  # raised above if it failed (a CPU flag is read at once)
        _PASSED[t] = t._version


def edge_probs(p, indptr, cols) -> None:
    """Per column ``indptr`` of edge probabilities ``p``: at least one positive where it has
    edges."""
    positive = torch.cat([p.new_zeros(1, dtype=torch.int64), torch.cumsum((p > 0).long(), 0)])
    starts, ends = indptr[:-1], indptr[1:]
    empty = (positive[ends] - positive[starts] == 0) & (ends > starts)
    if empty.numel():
        c = torch.argmax(empty.to(torch.int8))
        fail_if(
            empty.any(),
            ValueError,
            lambda c, n: (
                f"probs: column {c} (node {n}) has edges but all its probabilities are zero"
            ),
            c,
            cols[c],
        )


def column_probs(p, indptr, cols, at_once: bool = False) -> None:
    """Edge probabilities ``p`` in column order (``indptr``; ``cols``: the columns' node ids):
    finite, non-negative, a positive one in every column with edges, with the errors of
    ``gsample.ir.checks.check_individual``. ``at_once``: raise now, also inside :func:`deferred` (a
    kernel's flags, already read back, found a failure; this names it)."""
    token = DEFERRED.set(None) if at_once else None
    try:
        finite_nonnegative(p, "probs")
        edge_probs(p, indptr, cols)
    finally:
        if token is not None:
            DEFERRED.reset(token)
