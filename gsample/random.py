"""The determinism contract: one counter-based hash and the random stream state.

Every random choice gsample makes is a pure function of

    (seed, op_ordinal, batch_index, column_position, draw_or_edge_id)

through :func:`combine`, a splitmix64-style mixer. Python computes the scalar
prefix of the key (seed, op ordinal, batch index) once per random op with exact
integer arithmetic (:func:`op_key`); the torch backend finishes it per column and
per draw on tensors (:func:`hash_tensor`), on any device, with the same bits.
The CUDA backend implements the same function as a device function.

Key layout
----------
``base = combine(combine(combine(0, seed), op_ordinal), batch_index)`` and, for
one draw, ``r = combine(combine(base, column_position), draw_or_edge_id)``.
``combine(h, x) = mix64(h + (x + 1) * GOLDEN mod 2**64)`` where ``mix64`` is the
splitmix64 finaliser. From ``r`` (an unsigned 64-bit value):

* a uniform integer in ``[0, n)`` is ``(r >> 1) % n`` (relative bias below
  ``n / 2**63``);
* a uniform double in ``[0, 1)`` is ``(r >> 11) * 2**-53``;
* a unit exponential is ``-log(((r >> 11) + 0.5) * 2**-53)``.

The stream
----------
:func:`manual_seed` sets the seed and resets the op ordinal and the batch
index. Each random operator call takes the next ordinal. :func:`batch_scope`
runs a block (one mini-batch of a :class:`gsample.DataLoader`) with its own seed
and batch index and ordinals restarting at 0, so that a mini-batch's samples do
not depend on what ran before it.
"""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass

import torch

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB


def _signed(x: int) -> int:
    """The int64 with the same bits as the unsigned 64-bit ``x``."""
    x &= MASK64
    return x - (1 << 64) if x >= (1 << 63) else x


def mix64(z: int) -> int:
    """splitmix64 finaliser on a Python int (exact, unsigned 64-bit)."""
    z &= MASK64
    z = ((z ^ (z >> 30)) * _M1) & MASK64
    z = ((z ^ (z >> 27)) * _M2) & MASK64
    return z ^ (z >> 31)


def combine(h: int, x: int) -> int:
    """Fold one key component ``x`` into the running hash ``h`` (Python ints)."""
    return mix64((h + (x + 1) * GOLDEN) & MASK64)


def op_key(seed: int, op_ordinal: int, batch_index: int) -> int:
    """Scalar prefix of every key drawn by one random op (unsigned 64-bit int)."""
    return combine(combine(combine(0, seed), op_ordinal), batch_index)


# ----------------------------------------------------------------------------- tensors
_S_M1, _S_M2, _S_GOLDEN = _signed(_M1), _signed(_M2), _signed(GOLDEN)


def _srl(x: torch.Tensor, s: int) -> torch.Tensor:
    """Logical right shift of int64 bits (torch's ``>>`` is arithmetic)."""
    return (x >> s) & ((1 << (64 - s)) - 1)


def mix64_tensor(z: torch.Tensor) -> torch.Tensor:
    """:func:`mix64` on an int64 tensor holding unsigned bits (wrapping arithmetic)."""
    z = (z ^ _srl(z, 30)) * _S_M1
    z = (z ^ _srl(z, 27)) * _S_M2
    return z ^ _srl(z, 31)


def combine_tensor(h, x: torch.Tensor) -> torch.Tensor:
    """:func:`combine` with a vector of components ``x`` (int64) and ``h`` an int or tensor."""
    if isinstance(h, int):
        h = _signed(h)
    return mix64_tensor(h + (x.to(torch.int64) + 1) * _S_GOLDEN)


def hash_tensor(base: int, column_position: torch.Tensor, draw: torch.Tensor) -> torch.Tensor:
    """Random 64-bit words (as int64 bits) for the given column positions and draw ids.

    Parameters
    ----------
    base : int
        The op's key prefix from :func:`op_key`.
    column_position, draw : LongTensor, shape (n,)
        Broadcastable tensors of key components.

    Returns
    -------
    LongTensor, shape (n,)
        ``combine(combine(base, column_position), draw)`` for each element.
    """
    return combine_tensor(combine_tensor(base, column_position), draw)


def uniform_int(r: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """Integers uniform in ``[0, n)`` from random words ``r`` (``n > 0``)."""
    return torch.remainder(_srl(r, 1), n)


def uniform_float(r: torch.Tensor) -> torch.Tensor:
    """float64 uniform in ``[0, 1)`` from random words ``r`` (53 random bits)."""
    return _srl(r, 11).to(torch.float64) * (2.0 ** -53)


def exponential(r: torch.Tensor) -> torch.Tensor:
    """float64 unit exponentials from random words ``r`` (never 0, never inf)."""
    u = (_srl(r, 11).to(torch.float64) + 0.5) * (2.0 ** -53)
    return -torch.log(u)


def sort_key(r: torch.Tensor) -> torch.Tensor:
    """Non-negative int64 ordering key (63 random bits) for random permutations."""
    return _srl(r, 1)


# ----------------------------------------------------------------------------- state
@dataclass
class _Stream:
    seed: int = 0
    ordinal: int = 0
    batch_index: int = 0


_local = threading.local()


def _stream() -> _Stream:
    s = getattr(_local, "stream", None)
    if s is None:
        s = _local.stream = _Stream()
    return s


def manual_seed(seed: int) -> None:
    """Reset gsample's random stream.

    After ``gs.manual_seed(s)`` the same sequence of gsample calls gives the same
    samples, on every run and on CPU and CUDA tensors alike (for uniform
    operators; weighted ones may differ on rare draws through float rounding).

    Parameters
    ----------
    seed : int
        Any integer; it is reduced modulo ``2**64``.

    Examples
    --------
    >>> import gsample as gs
    >>> gs.manual_seed(0)
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"manual_seed: seed must be an int, got {type(seed).__name__}")
    s = _stream()
    s.seed, s.ordinal, s.batch_index = seed & MASK64, 0, 0


def initial_seed() -> int:
    """The seed of the current stream (set by :func:`manual_seed`, 0 by default)."""
    return _stream().seed


def next_op_key() -> int:
    """Take the next op ordinal and return that op's key prefix (see :func:`op_key`)."""
    s = _stream()
    key = op_key(s.seed, s.ordinal, s.batch_index)
    s.ordinal += 1
    return key


@contextlib.contextmanager
def batch_scope(seed: int, batch_index: int):
    """Run a block as mini-batch ``batch_index`` of a stream seeded with ``seed``.

    Op ordinals restart at 0 inside the block; the outer stream is restored after.
    """
    s = _stream()
    saved = (s.seed, s.ordinal, s.batch_index)
    s.seed, s.ordinal, s.batch_index = seed & MASK64, 0, int(batch_index)
    try:
        yield
    finally:
        s.seed, s.ordinal, s.batch_index = saved
