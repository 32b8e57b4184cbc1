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
* a unit exponential is ``-log(((r >> 11) + 0.5) * 2**-53)``;
* a count of a tabulated law is ``#{j : (r >> 11) < T_j}`` (:func:`count_table`).

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
import functools
import itertools
import math
import threading
from dataclasses import dataclass

import torch

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
M1 = 0xBF58476D1CE4E5B9
M2 = 0x94D049BB133111EB


def signed(x: int) -> int:
    """The int64 with the same bits as the unsigned 64-bit ``x``."""
    x &= MASK64
    return x - (1 << 64) if x >= (1 << 63) else x


def mix64(z: int) -> int:
    """splitmix64 finaliser on a Python int (exact, unsigned 64-bit)."""
    z &= MASK64
    z = ((z ^ (z >> 30)) * M1) & MASK64
    z = ((z ^ (z >> 27)) * M2) & MASK64
    return z ^ (z >> 31)


def combine(h: int, x: int) -> int:
    """Fold one key component ``x`` into the running hash ``h`` (Python ints)."""
    return mix64((h + (x + 1) * GOLDEN) & MASK64)


def op_key(seed: int, op_ordinal: int, batch_index: int) -> int:
    """Scalar prefix of every key drawn by one random op (unsigned 64-bit int)."""
    return combine(combine(combine(0, seed), op_ordinal), batch_index)


# ----------------------------------------------------------------------------- tensors
_S_M1, _S_M2, _S_GOLDEN = signed(M1), signed(M2), signed(GOLDEN)


def srl(x: torch.Tensor, s: int) -> torch.Tensor:
    """Logical right shift of int64 bits (torch's ``>>`` is arithmetic)."""
    return (x >> s) & ((1 << (64 - s)) - 1)


def mix64_tensor(z: torch.Tensor) -> torch.Tensor:
    """:func:`mix64` on an int64 tensor holding unsigned bits (wrapping arithmetic)."""
    z = (z ^ srl(z, 30)) * _S_M1
    z = (z ^ srl(z, 27)) * _S_M2
    return z ^ srl(z, 31)


def combine_tensor(h, x: torch.Tensor) -> torch.Tensor:
    """:func:`combine` with a vector of components ``x`` (int64) and ``h`` an int or tensor."""
    if isinstance(h, int):
        h = signed(h)
    return mix64_tensor(h + (x.to(torch.int64) + 1) * _S_GOLDEN)


def combine_tensors(hs, x: torch.Tensor) -> torch.Tensor:
    """:func:`combine_tensor` of ``x`` with each int of ``hs``: row ``i`` is
    ``combine_tensor(hs[i], x)``, shape ``(len(hs), *x.shape)``; one mix over all rows (a
    third of the tensor ops of a call per ``h``: each is a kernel launch on a GPU).

    Examples
    --------
    >>> import torch
    >>> k = torch.arange(3)
    >>> torch.equal(combine_tensors([5, 9], k)[1], combine_tensor(9, k))
    True
    """
    z = (x.to(torch.int64) + 1) * _S_GOLDEN
    return mix64_tensor(torch.stack([z + signed(h) for h in hs]))


def hash_tensor(base, column_position: torch.Tensor, draw: torch.Tensor) -> torch.Tensor:
    """Random 64-bit words (as int64 bits) for the given column positions and draw ids.

    Parameters
    ----------
    base : int or LongTensor, shape (n,)
        The op's key prefix from :func:`op_key` (an unsigned int), or one prefix per
        element as int64 bits (a super-batch: each column draws with its own batch's
        key, see :class:`BatchKeys`).
    column_position, draw : LongTensor, shape (n,)
        Broadcastable tensors of key components.

    Returns
    -------
    LongTensor, shape (n,)
        ``combine(combine(base, column_position), draw)`` for each element.
    """
    n = column_position.numel()
    if (
        column_position.device.type == "cpu"
        and n > _CHUNK
        and column_position.dim() == 1
        and draw.shape == column_position.shape
        and (not isinstance(base, torch.Tensor) or base.shape == column_position.shape)
    ):
        return _hash_chunked(base, column_position, draw)
    return combine_tensor(combine_tensor(base, column_position), draw)


#: elements hashed at a time on the CPU: a chunk's temporaries stay in cache (the hash is
#: ~20 passes over its input; whole, a large tensor makes each pass a trip to memory)
_CHUNK = 1 << 14


def mix64_(z: torch.Tensor, t: torch.Tensor) -> None:
    """:func:`mix64_tensor` in place (``t``: scratch of ``z``'s shape): the same bits
    without a temporary per step.

    Examples
    --------
    >>> import torch
    >>> z = torch.tensor([1, 2]); mix64_(z, torch.empty_like(z))
    >>> torch.equal(z, mix64_tensor(torch.tensor([1, 2])))
    True
    """
    for shift, mul in ((30, _S_M1), (27, _S_M2), (31, None)):
        torch.bitwise_right_shift(z, shift, out=t)
        t &= (1 << (64 - shift)) - 1  # a logical shift
        z ^= t
        if mul is not None:
            z *= mul


def _hash_chunked(base, col: torch.Tensor, draw: torch.Tensor, index=None) -> torch.Tensor:
    """:func:`hash_tensor` on the CPU, chunk by chunk, in place: the same bits, faster.
    With ``index``: of ``base[index]``, ``col[index]`` (gathered a chunk at a time)."""
    col, draw = col.to(torch.int64), draw.to(torch.int64)
    per_element = isinstance(base, torch.Tensor)
    b = base if per_element else signed(base)
    n = draw.numel()
    out = torch.empty(n, dtype=torch.int64)
    scratch = torch.empty(_CHUNK, dtype=torch.int64)
    for i in range(0, n, _CHUNK):
        j = min(n, i + _CHUNK)
        z, t = out[i:j], scratch[: j - i]
        at = slice(i, j) if index is None else index[i:j]
        torch.add(col[at], 1, out=z)  # combine(base, col)
        z *= _S_GOLDEN
        z += b[at] if per_element else b
        mix64_(z, t)
        torch.add(draw[i:j], 1, out=t)  # combine(., draw)
        t *= _S_GOLDEN
        z += t
        mix64_(z, t)
    return out


def uniform_int(r: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """Integers uniform in ``[0, n)`` from random words ``r`` (``n > 0``)."""
    return torch.remainder(srl(r, 1), n)


def uniform_float(r: torch.Tensor) -> torch.Tensor:
    """float64 uniform in ``[0, 1)`` from random words ``r`` (53 random bits)."""
    return srl(r, 11).to(torch.float64) * (2.0**-53)


def exponential(r: torch.Tensor) -> torch.Tensor:
    """float64 unit exponentials from random words ``r`` (never 0, never inf)."""
    u = (srl(r, 11).to(torch.float64) + 0.5) * (2.0**-53)
    return -torch.log(u)


def count_from_words(r: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """Counts from random words ``r`` by inversion: ``#{j : (r >> 11) < T_j}`` for the
    non-increasing thresholds ``T`` of :func:`count_table`, given ascending (``T`` reversed,
    int64, on ``r``'s device). Integer comparisons only: the same counts on every device."""
    if table.numel() == 0:
        return torch.zeros_like(r)
    u = srl(r, 11)
    return table.numel() - torch.searchsorted(table, u, right=True)


@functools.lru_cache(maxsize=64)
def count_table(dist: str, p: float, n=None) -> tuple:
    """The thresholds ``T_j = floor(P(X >= j) * 2**53)``, ``j = 1, 2, ...`` while positive,
    of a count ``X`` with law ``dist``: ``"geometric"`` (``P(x) = (1 - p) p^x``, ``x >= 0``)
    or ``"binomial"`` (``n`` trials of probability ``p``). ``X = #{j : U < T_j}`` for ``U``
    uniform in ``[0, 2**53)`` then has ``P(X >= j) = P(j)`` up to ``2**-53``. Computed once
    on the host (exact Python floats and ints), so both backends compare against the same
    integers.

    Examples
    --------
    >>> count_table("geometric", 0.5)[:3] == (2 ** 52, 2 ** 51, 2 ** 50)
    True
    """
    one = 1 << 53
    if p <= 0.0 or (dist == "binomial" and not n):
        return ()
    if dist == "geometric":
        out, j = [], 1
        while True:
            t = math.floor(p**j * one)
            if t <= 0:
                return tuple(out)
            out.append(t)
            j += 1
    if p >= 1.0:
        return (one,) * n
    lp, lq, lg = math.log(p), math.log1p(-p), math.lgamma(n + 1)
    pmf = [
        math.exp(lg - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq)
        for i in range(n + 1)
    ]
    sf, acc = [0.0] * (n + 1), 0.0
    for i in range(n, 0, -1):  # P(X >= i), the small terms added first
        acc += pmf[i]
        sf[i] = acc
    out = [min(one, math.floor(sf[j] * one)) for j in range(1, n + 1)]
    while out and out[-1] == 0:
        out.pop()
    return tuple(out)


def sort_key(r: torch.Tensor) -> torch.Tensor:
    """Non-negative int64 ordering key (63 random bits) for random permutations."""
    return srl(r, 1)


def shuffle_keys(epoch_seed: int, n: int, device=None) -> torch.Tensor:
    """The sort keys of an epoch's permutation of ``n`` seeds: position ``i`` gets
    ``sort_key(hash_tensor(epoch_seed, -1, i))`` (``gs.DataLoader`` orders its seeds by a
    stable sort of them: ties, improbable, keep their positions' order).

    The reference and the CPU path; the CUDA backend computes the same bits in one kernel
    (hook ``"shuffle_keys"`` of :mod:`gsample.backend`).

    Parameters
    ----------
    epoch_seed : int
        The epoch's seed (an unsigned 64-bit int).
    n : int
        Number of keys (``>= 0``).
    device : torch.device or str, optional
        Where the keys are made (default the CPU).

    Returns
    -------
    LongTensor, shape (n,)
        Non-negative keys (63 random bits).

    Examples
    --------
    >>> k = shuffle_keys(3, 4)
    >>> k[2].item() == combine(combine(3, -1), 2) >> 1
    True
    """
    # hash_tensor(epoch_seed, -1, pos), its constant first half folded on the host
    h = combine(epoch_seed, -1)
    if torch.device("cpu" if device is None else device).type != "cpu" or n <= _CHUNK:
        return sort_key(combine_tensor(h, torch.arange(n, device=device)))
    # on the CPU a chunk at a time, in place (as _hash_chunked): whole, each of the ~17
    # passes is a trip to memory
    out = torch.empty(n, dtype=torch.int64)
    scratch = torch.empty(_CHUNK, dtype=torch.int64)
    for i in range(0, n, _CHUNK):
        j = min(n, i + _CHUNK)
        z, t = out[i:j], scratch[: j - i]
        torch.arange(i + 1, j + 1, out=z)  # (pos + 1)
        z *= _S_GOLDEN
        z += signed(h)
        mix64_(z, t)
        z >>= 1
        z &= (1 << 63) - 1  # sort_key: a logical shift
    return out


# ----------------------------------------------------------------------------- state
@dataclass
class _Stream:
    seed: int = 0
    ordinal: int = 0
    batch_index: int = 0


_local = threading.local()


def stream_state() -> _Stream:
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
    s = stream_state()
    s.seed, s.ordinal, s.batch_index = seed & MASK64, 0, 0


def initial_seed() -> int:
    """The seed of the current stream (set by :func:`manual_seed`, 0 by default)."""
    return stream_state().seed


def next_op_key() -> int:
    """Take the next op ordinal and return that op's key prefix (see :func:`op_key`)."""
    s = stream_state()
    key = op_key(s.seed, s.ordinal, s.batch_index)
    s.ordinal += 1
    return key


@contextlib.contextmanager
def batch_scope(seed: int, batch_index: int):
    """Run a block as mini-batch ``batch_index`` of a stream seeded with ``seed``.

    Op ordinals restart at 0 inside the block; the outer stream is restored after.
    """
    s = stream_state()
    saved = (s.seed, s.ordinal, s.batch_index)
    s.seed, s.ordinal, s.batch_index = seed & MASK64, 0, int(batch_index)
    try:
        yield
    finally:
        s.seed, s.ordinal, s.batch_index = saved


# ----------------------------------------------------------------------------- super-batches
def batch_ptr(batch: torch.Tensor, copies: int) -> list:
    """Where each of ``copies`` batches starts in ``batch`` (ascending batch indices, shape
    (m,)): a list of ``copies + 1`` positions.

    Raises when ``batch`` is not sorted: a super-batch keeps every batch's columns, rows
    and ids contiguous and in batch order, and its keys and splits rely on it.
    """
    if copies == 1:
        return [0, batch.numel()]
    ptr = torch.searchsorted(batch, torch.arange(copies + 1, device=batch.device))
    if batch.numel() < 2:
        return ptr.tolist()
    # the order check and the positions in one read-back (one host sync on a GPU)
    *ptr, unsorted = torch.cat([ptr, (batch[1:] < batch[:-1]).any().view(1)]).tolist()
    if unsorted:
        raise RuntimeError(
            "super-batch: ids are not grouped by mini-batch (an internal "
            "invariant of gsample.passes.super_batch)"
        )
    return ptr


#: where a tensor of encoded ids keeps its mini-batches' sizes, where the host knows them
_SIZES = "_gsample_batch_sizes"


def keep_sizes(ids: torch.Tensor, sizes: list) -> torch.Tensor:
    """Keep with ``ids`` (encoded ids, grouped by batch, never changed in place) the number
    of ids each batch has, so :func:`frontier_ptr` reads nothing back; returns ``ids``."""
    ids.__dict__[_SIZES] = tuple(sizes)
    return ids


def frontier_ptr(ids: torch.Tensor, n: int, copies: int) -> list:
    """Where each of ``copies`` batches starts among encoded ids ``ids`` (``b * n + v``,
    grouped by batch; shape (m,)): the sizes kept with them (:func:`keep_sizes`, no
    read-back), else :func:`batch_ptr` of ``ids // n`` (one).

    Examples
    --------
    >>> import torch
    >>> frontier_ptr(keep_sizes(torch.tensor([1, 2, 10]), [2, 1]), 10, 2)
    [0, 2, 3]
    """
    sizes = getattr(ids, "__dict__", {}).get(_SIZES)
    if sizes is not None and len(sizes) == copies and sum(sizes) == ids.shape[0]:
        return [0, *itertools.accumulate(sizes)]
    return batch_ptr(ids // n, copies)


@dataclass(frozen=True)
class BatchKeys:
    """The key prefixes of one random op run over a super-batch of mini-batches.

    A super-batch samples mini-batches ``first, first + 1, ...`` in one pass over a
    block-diagonal graph (``gsample.passes.super_batch``): node ``v`` of batch ``b`` has
    the id ``b * num_nodes + v``. Batch ``b`` draws with ``keys[b] = op_key(seed,
    ordinal, first + b)`` and, for a column, the column's position *within its batch*,
    so every draw is the one the mini-batch would make on its own (docs/architecture.md §3,
    consequence 4).

    Attributes
    ----------
    keys : tuple of int
        Key prefix of each batch of the block (unsigned 64-bit ints).
    num_nodes : int
        ``n``, the graph's node count: id ``e`` is node ``e % n`` of batch ``e // n``.

    Examples
    --------
    >>> k = BatchKeys.of(seed=0, ordinal=0, first_batch=4, copies=2, num_nodes=10)
    >>> k.keys[1] == op_key(0, 0, 5)
    True
    """

    keys: tuple
    num_nodes: int

    @classmethod
    def of(
        cls, seed: int, ordinal: int, first_batch: int, copies: int, num_nodes: int
    ) -> BatchKeys:
        prefix = combine(combine(0, seed), ordinal)  # op_key's, folded once for the block
        return cls(tuple(combine(prefix, first_batch + b) for b in range(copies)), num_nodes)

    @property
    def copies(self) -> int:
        return len(self.keys)

    def bases(self, device) -> torch.Tensor:
        """The keys as int64 bits, shape (copies,)."""
        return torch.tensor([signed(k) for k in self.keys], dtype=torch.int64, device=device)

    def columns(
        self, ids: torch.Tensor, batch: torch.Tensor | None = None, ptr: list | None = None
    ) -> ColumnKeys:
        """The keys of a frontier of encoded column ids ``ids`` (shape (C,)); ``batch``
        (``ids // num_nodes``) and ``ptr`` (its :func:`batch_ptr`) when already known."""
        if batch is None:
            batch = ids // self.num_nodes
            ptr = batch_ptr(batch, self.copies)
        start = torch.tensor(ptr, dtype=torch.int64, device=ids.device)
        position = torch.arange(ids.numel(), device=ids.device) - start[batch]
        return ColumnKeys(self.bases(ids.device)[batch], position, ptr, self.keys)


@dataclass(frozen=True)
class ColumnKeys:
    """Per-column keys of a super-batched frontier (see :class:`BatchKeys`).

    Column ``c`` draws ``hash_tensor(base[c], position[c], draw)``: its batch's key and its
    position within that batch. Batch ``b`` holds columns ``ptr[b]:ptr[b + 1]`` and has
    the key ``keys[b]``.
    """

    base: torch.Tensor  # (C,) int64 bits
    position: torch.Tensor  # (C,)
    ptr: list  # (copies + 1,)
    keys: tuple

    def take(self, cols: torch.Tensor) -> ColumnKeys:
        """The keys of columns ``cols`` (indices into the frontier), in that order."""
        return ColumnKeys(self.base[cols], self.position[cols], self.ptr, self.keys)

    def words(self, col: torch.Tensor, draw: torch.Tensor) -> torch.Tensor:
        """Random words of columns ``col`` (indices into the frontier) and draws ``draw``."""
        if (
            col.device.type == "cpu"
            and col.dim() == 1
            and col.shape == draw.shape
            and col.numel() > _CHUNK
        ):
            return _hash_chunked(self.base, self.position, draw, index=col)
        return hash_tensor(self.base[col], self.position[col], draw)


@dataclass(frozen=True)
class DeviceKey:
    """The key of one random op for a device kernel that computes it itself.

    ``prefix = combine(combine(0, seed), ordinal)`` and ``first``, the mini-batch index;
    mini-batch ``first + b`` of a super-batch of ``copies`` draws with ``combine(prefix,
    first + b)`` (``op_key`` for ``copies == 1``). ``tensor`` holds ``(prefix, first)`` as
    int64 bits on the device (read by the kernel, so a replayed CUDA graph takes new keys);
    ``host()`` gives the key the torch code takes (an int, or :class:`BatchKeys`).
    """

    tensor: torch.Tensor
    prefix: int
    first: int
    copies: int = 1
    num_nodes: int = 0
    static: bool = False  # ``tensor`` is a view of its program's key buffer (the same
    # memory every call)

    @classmethod
    def of(
        cls,
        tensor,
        prefix: int,
        first: int,
        copies: int = 1,
        num_nodes: int = 0,
        static: bool = False,
    ) -> DeviceKey:
        """``DeviceKey(...)`` without the frozen dataclass's ``__init__`` (the runtime makes
        one per random op and call)."""
        obj = object.__new__(cls)
        obj.__dict__.update(
            tensor=tensor,
            prefix=prefix,
            first=first,
            copies=copies,
            num_nodes=num_nodes,
            static=static,
        )
        return obj

    def host(self):
        if self.copies == 1 and self.num_nodes == 0:
            return combine(self.prefix, self.first)
        return BatchKeys(
            tuple(combine(self.prefix, self.first + b) for b in range(self.copies)), self.num_nodes
        )


@dataclass(frozen=True)
class KeyRange:
    """The keys of an op that takes several consecutive op ordinals (a fused walk: one per
    random op of every step), each the key a random op of that ordinal would get.

    Attributes
    ----------
    keys : tuple
        Per ordinal, in order: an op key (int), a super-batch's :class:`BatchKeys`, or a
        :class:`DeviceKey`.
    tensor : LongTensor, shape (count, 2), optional
        With device keys: their ``(prefix, first)`` rows, contiguous (the program's key
        buffer), for a kernel that reads them all.
    """

    keys: tuple
    tensor: torch.Tensor | None = None

    def __len__(self) -> int:
        return len(self.keys)

    def host(self) -> tuple:
        """The keys as the torch code takes them (ints, or :class:`BatchKeys`)."""
        return tuple(k.host() if isinstance(k, DeviceKey) else k for k in self.keys)

    @classmethod
    def of(cls, seed: int, ordinal: int, count: int, batch: int, batches=None) -> KeyRange:
        """Host keys of ordinals ``ordinal .. ordinal + count - 1`` (``batches``: a
        super-batch's ``(copies, num_nodes)``)."""
        if batches is None:
            return cls(tuple(op_key(seed, ordinal + i, batch) for i in range(count)))
        return cls(tuple(BatchKeys.of(seed, ordinal + i, batch, *batches) for i in range(count)))


def key_prefix(seed: int, ordinal: int) -> int:
    """``combine(combine(0, seed), ordinal)``: the part of :func:`op_key` before the batch."""
    return combine(combine(0, seed), ordinal)


def words(key, col: torch.Tensor, draw: torch.Tensor) -> torch.Tensor:
    """``hash_tensor(key, col, draw)``, ``key`` an op key (int) or a super-batch's
    :class:`ColumnKeys` (then ``col`` indexes its columns)."""
    if isinstance(key, ColumnKeys):
        return key.words(col, draw)
    return hash_tensor(key, col, draw)
