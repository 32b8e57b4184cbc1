"""Random walks and alias tables on PyTorch tensors: the semantic reference.

Walks (``A.random_walk``)
-------------------------
Walker ``w`` (its position in ``seeds``, the column position of docs/architecture.md §3) starts at
``out[w, 0] = seeds[w]``; step ``t`` (``0 <= t < length``) goes from ``v = out[w, t]`` to
``out[w, t + 1]``. Every draw of step ``t`` is ``word(w, t * STRIDE + slot)`` of the op's key
(``gsample.base.random``), so a draw depends on (seed, op ordinal, batch, walker, step, slot) only:

1. with ``c1 = stop_prob``, ``c2 = c1 + restart_prob``, ``c3 = c2 + jump_prob`` (Python
   floats) and ``u = uniform_float(word(w, t * STRIDE + DECIDE))`` (only when ``c3 > 0``):
   ``u < c1`` stops the walk, ``u < c2`` moves to the root ``out[w, 0]``, ``u < c3`` jumps to
   ``uniform_int(word(w, t * STRIDE + JUMP), N)``; otherwise the walker moves to an
   in-neighbour (a row of column ``v``);
2. a node without in-edges stops the walk; a stopped walk's later entries are ``-1``;
3. a move makes attempts ``a = 0, 1, ...``: the slot ``s = uniform_int(word(w, t * STRIDE +
   FIRST + 3a), deg(v))`` picks edge ``e = indptr[v] + s``; with static weights (alias
   tables, below) ``e`` becomes ``alias[e]`` unless ``(word(w, t * STRIDE + FIRST + 3a + 1)
   >> 11) < threshold[e]``; the candidate is ``x = rows[e]``;
4. node2vec (``p != 1`` or ``q != 1``), from the second step on: with ``u = out[w, t - 1]``,
   ``alpha = 1/p`` when ``x == u``, ``1`` when ``x -> u`` is an edge (``x`` is a row of
   column ``u``: a binary search in its sorted rows), ``1/q`` otherwise; the attempt is
   accepted when ``uniform_float(word(w, t * STRIDE + FIRST + 3a + 2)) * max(1/p, 1, 1/q) <
   alpha`` (rejection sampling: exact, and at most ``max / min`` expected attempts), else
   the next attempt runs. Without node2vec the first attempt is taken.

The CUDA backend (``kernels/walk.cu``) runs the same steps with the same draws: uniform walks
are bit-equal, and so are the others (their comparisons are exact IEEE double or integer).

On CPU tensors :func:`random_walk` runs that kernel's source compiled as C++ (:mod:`.walk_native`:
built at first use with the system's C++ compiler, over ``torch.get_num_threads()`` threads),
whose walks are the torch code's bit for bit; without a compiler, or with
``GSAMPLE_NATIVE_CPU=0``, it runs the torch code, :func:`reference_walk`: the reference.

Alias tables (``alias_table``)
------------------------------
Built by :mod:`.alias` (layout, construction and why it is exact and column-local there).
"""

from __future__ import annotations

import weakref

import torch

from gsample.backend.registry import torch_impl
from gsample.backend.torch import walk_native
from gsample.backend.torch.alias import alias_draw
from gsample.base.random import (
    GOLDEN,
    MASK64,
    BatchKeys,
    ColumnKeys,
    combine_tensor,
    mix64_tensor,
    signed,
    uniform_float,
    uniform_int,
)
from gsample.formats import placement
from gsample.formats.csc import CSC
from gsample.ir import Op

#: draw ids of one step: ``step * STRIDE + slot``
STRIDE = 1 << 32
DECIDE, JUMP, FIRST = 0, 1, 2
#: rejection attempts past which a walk is a bug, not bad luck (acceptance >= min/max)
MAX_ATTEMPTS = 1 << 20


# ----------------------------------------------------------------------------- edge tests
_SORTED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def sorted_rows(A: CSC) -> tuple:
    """``(rows, keys)``: each column's rows in ascending order (``A.rows`` itself when the
    CSC keeps them so, as gsample's constructors do) and the keys ``col * N + row`` (sorted,
    shape (E,)), for exact edge tests by binary search. Once per graph (cached)."""
    stamp = (A.rows._version, A.indptr._version)
    hit = _SORTED.get(A)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    twin = placement.host_twin(A)
    if twin is not None:  # a graph in pinned host memory (UVA): built on the host, kept
        rows, keys = sorted_rows(twin)  # there and read by the GPU in place
        out = tuple(placement.to_host_mapped(t, A.device) for t in (rows, keys))
        _SORTED[A] = (stamp, out)
        return out
    keys = A.edge_cols() * A.num_nodes + A.rows
    rows = A.rows
    if keys.numel() > 1 and bool((keys[1:] < keys[:-1]).any()):
        keys = torch.sort(keys).values
        rows = keys % max(A.num_nodes, 1)
    _SORTED[A] = (stamp, (rows, keys))
    return rows, keys


def has_edge(keys: torch.Tensor, num_nodes: int, src: torch.Tensor, dst: torch.Tensor):
    """Whether each ``src -> dst`` is an edge (``keys`` from :func:`sorted_rows`)."""
    if keys.numel() == 0:
        return torch.zeros_like(src, dtype=torch.bool)
    k = dst * num_nodes + src
    pos = torch.searchsorted(keys, k).clamp_(max=keys.numel() - 1)
    return keys[pos] == k


# ----------------------------------------------------------------------------- walks
def thresholds(stop_prob: float, restart_prob: float, jump_prob: float) -> tuple:
    """``(c1, c2, c3)``: the cumulative step probabilities, as both backends compare them."""
    c1 = float(stop_prob)
    c2 = c1 + float(restart_prob)
    c3 = c2 + float(jump_prob)
    if not 0.0 <= c3 <= 1.0 + 1e-12:  # checked at the boundary too; a super-batch's
        raise ValueError(  # op skips that check, so here as well
            f"stop_prob, restart_prob, jump_prob: must sum to at most 1, got {c3}"
        )
    return c1, c2, c3


@torch_impl(Op.RANDOM_WALK)
def random_walk(
    A: CSC,
    seeds: torch.Tensor,
    length: int,
    key,
    alias=None,
    p: float = 1.0,
    q: float = 1.0,
    stop_prob: float = 0.0,
    restart_prob: float = 0.0,
    jump_prob: float = 0.0,
) -> torch.Tensor:
    """``A.random_walk(seeds, length, ...)`` (the algorithm: the module docstring).

    Parameters
    ----------
    A : CSC
        The whole graph.
    seeds : LongTensor, shape (W,)
        Start nodes (checked).
    length : int
        Steps per walk.
    key : int
        The op's key (``gsample.base.random.op_key``).
    alias : LongTensor, shape (E, 2), optional
        Alias tables of static weights (``gsample.backend.torch.alias.alias_table``); None: uniform.
    p, q : float
        node2vec's return and in-out parameters.
    stop_prob, restart_prob, jump_prob : float
        Per-step probabilities of stopping, going back to the root, jumping anywhere.

    Returns
    -------
    LongTensor, shape (W, length + 1)
        Column 0 the seeds, then the walk; ``-1`` after a stop.
    """
    if isinstance(key, ColumnKeys):
        raise TypeError("random_walk: takes an op key or a super-batch's BatchKeys")
    if seeds.device.type == "cpu" and walk_native.enabled():
        out = _native(A, seeds, length, key, alias, p, q, stop_prob, restart_prob, jump_prob)
        if out is not None:
            return out
    return reference_walk(A, seeds, length, key, alias, p, q, stop_prob, restart_prob, jump_prob)


def reference_walk(
    A: CSC,
    seeds: torch.Tensor,
    length: int,
    key,
    alias=None,
    p: float = 1.0,
    q: float = 1.0,
    stop_prob: float = 0.0,
    restart_prob: float = 0.0,
    jump_prob: float = 0.0,
) -> torch.Tensor:
    """:func:`random_walk` in torch operators, on any device: the semantic reference."""
    if isinstance(key, ColumnKeys):
        raise TypeError("random_walk: takes an op key or a super-batch's BatchKeys")
    W, dev, N = seeds.numel(), seeds.device, A.num_nodes
    shift = None
    if isinstance(key, BatchKeys):
        # a super-batch: seeds b * n + v grouped by batch; walker w of batch b draws with
        # b's key as its position within b, and the walks come out encoded
        columns = key.columns(seeds)
        shift = seeds - seeds % N
        seeds = seeds - shift
        h = combine_tensor(columns.base, columns.position)
    out = torch.full((W, length + 1), -1, dtype=torch.int64, device=dev)
    out[:, 0] = seeds
    if W == 0 or length == 0:
        return _encode(out, shift)
    indptr, rows = A.indptr, A.rows
    deg_all = indptr[1:] - indptr[:-1]
    node2vec = p != 1.0 or q != 1.0
    keys = sorted_rows(A)[1] if node2vec else None
    inv_p, inv_q = 1.0 / p, 1.0 / q
    amax = max(inv_p, 1.0, inv_q)
    ip, one, iq = (torch.tensor(v, dtype=torch.float64, device=dev) for v in (inv_p, 1.0, inv_q))
    c1, c2, c3 = thresholds(stop_prob, restart_prob, jump_prob)
    E = rows.numel()
    flat = out.view(-1)
    # the walks still going, compacted: flat offset of their row, hash of their walker (the
    # first half of every key: a draw is then one combine with its draw id), root, position
    walker = torch.arange(W, device=dev)
    at_row = walker * (length + 1)
    if shift is None:
        h = combine_tensor(key, walker)
    root = cur = seeds.to(torch.int64)
    prev = None
    for t in range(length):
        base = t * STRIDE
        deg = deg_all[cur]
        if c3 == 0.0 and not (node2vec and prev is not None):
            # first order, no teleport: one draw (two with alias tables) per walker
            if E == 0:
                break
            e = indptr[cur] + uniform_int(step_word(h, base + FIRST), deg.clamp(min=1))
            e = e.clamp_(max=max(E - 1, 0))  # a dead end's draw is dropped below
            if alias is not None:
                e = alias_draw(alias, e, step_word(h, base + FIRST + 1))
            nxt = torch.where(deg > 0, rows[e], -1)
        else:
            nxt = general_step(
                t,
                base,
                h,
                cur,
                prev,
                root,
                deg,
                indptr,
                rows,
                alias,
                N,
                keys,
                (c1, c2, c3),
                (ip, one, iq, amax),
                node2vec,
                dev,
            )
        going = nxt >= 0
        if not bool(going.all()):
            idx = going.nonzero().squeeze(1)
            if idx.numel() == 0:
                break
            at_row, h, root, nxt, cur = at_row[idx], h[idx], root[idx], nxt[idx], cur[idx]
        flat[at_row + (t + 1)] = nxt
        prev, cur = cur, nxt
    return _encode(out, shift)


def _native(A: CSC, seeds, length: int, key, alias, p, q, stop_prob, restart_prob, jump_prob):
    """:func:`random_walk` by :mod:`.walk_native` on CPU tensors, or None where the torch code
    must run: no native build, or inputs the kernel does not take as they are (the torch code
    then gives its result or its error)."""
    N, W = A.num_nodes, seeds.numel()
    tensors = (A.indptr, A.rows) + (() if alias is None else (alias,))
    if (
        any(t.device.type != "cpu" or t.dtype != torch.int64 for t in tensors)
        or seeds.dtype not in (torch.int64, torch.int32)
        or seeds.dim() != 1
        or not isinstance(length, int)
        or length < 0
    ):
        return None
    if alias is not None and alias.shape != (A.rows.numel(), 2):
        return None
    c1, c2, c3 = thresholds(stop_prob, restart_prob, jump_prob)
    seeds = seeds.to(torch.int64).contiguous()
    prefix, n = None, 0
    if isinstance(key, BatchKeys):
        n = key.num_nodes
        if n != N or N == 0:
            return None
        prefix = walk_native.device_key(key.keys)
        if prefix is None:
            return None
        hi = key.copies * N
    elif isinstance(key, int):
        hi = N
    else:
        return None
    if W:
        lo_hi = torch.aminmax(seeds)
        if int(lo_hi.min) < 0 or int(lo_hi.max) >= hi:
            return None  # out of range: the torch code's error
        if n and W > 1 and bool(((seeds[1:] // n) < (seeds[:-1] // n)).any()):
            return None  # not grouped by batch: the torch code's error
    node2vec = p != 1.0 or q != 1.0
    rows = A.rows.contiguous()
    srows = sorted_rows(A)[0].contiguous() if node2vec else rows
    return walk_native.random_walk(
        A.indptr.contiguous(),
        rows,
        srows,
        None if alias is None else alias.contiguous(),
        seeds,
        int(length),
        N,
        0 if prefix is not None else int(key),
        prefix,
        n,
        node2vec,
        1.0 / p,
        1.0 / q,
        c1,
        c2,
        c3,
        space=hi,
    )


def _encode(out: torch.Tensor, shift) -> torch.Tensor:
    """A super-batch's walks as ids ``b * n + v`` (``shift``: ``b * n`` per walker)."""
    if shift is None:
        return out
    return torch.where(out >= 0, out + shift[:, None], out)


def general_step(
    t, base, h, cur, prev, root, deg, indptr, rows, alias, N, keys, cs, weights, node2vec, dev
):
    """One step with teleports and / or node2vec's rejection (the module docstring, 1-4):
    the next node of each walker, -1 where its walk stops (the partitioned graph's walk,
    ``gsample.distributed.partition_walks``, takes its steps with it too)."""
    c1, c2, c3 = cs
    ip, one, iq, amax = weights
    n = cur.numel()
    nxt = torch.full((n,), -1, dtype=torch.int64, device=dev)
    moves = deg > 0
    if c3 > 0.0:
        u = uniform_float(step_word(h, base + DECIDE))
        moves &= u >= c3
        nxt = torch.where((u >= c1) & (u < c2), root, nxt)
        jumps = (u >= c2) & (u < c3)
        if bool(jumps.any()):
            at = jumps.nonzero().squeeze(1)
            nxt[at] = uniform_int(step_word(h[at], base + JUMP), N)
    pend = moves.nonzero().squeeze(1)
    # a few attempts at once from the start (node2vec accepts one in max/min at worst):
    # fewer rounds of small tensor ops; the draws are the same
    attempt, k = 0, (4 if node2vec and prev is not None else 1)
    while pend.numel():
        hp, slot, at, e = attempts(h, pend, attempt, k, base, indptr, cur, deg, alias)
        x = rows[e]
        if not (node2vec and prev is not None):
            nxt[pend] = x
            break
        u = prev[at]
        # float64 throughout: the CUDA kernel compares the same doubles
        alpha = torch.where(has_edge(keys, N, x, u), one, iq)
        alpha = torch.where(x == u, ip, alpha)
        ok = uniform_float(combine_tensor(hp, slot + 2)) * amax < alpha
        pend = take_first(ok, x, pend, k, nxt)
        attempt, k = attempt + k, min(4 * k, 64)
    return nxt


def attempts(h, pend, attempt: int, k: int, base: int, indptr, cur, deg, alias=None):
    """Attempts ``attempt .. attempt + k - 1`` of every pending walker at once (node2vec's
    rejection; the first accepted one counts, as when they run one by one): ``(hp, slot, at,
    e)``, each of ``len(pend) * k`` entries, walker-major: the walkers' hashes, the attempts'
    draw slots (``slot + 2``: the acceptance word), the walkers' positions in ``pend``'s
    arrays and the drawn edges (by ``alias`` tables when given)."""
    if attempt >= MAX_ATTEMPTS:
        raise RuntimeError(
            "random_walk: node2vec rejection sampling ran past its bound "
            "of 2**20 attempts (p or q too extreme)"
        )
    m = pend.numel()
    hp = h[pend].repeat_interleave(k)
    slot = base + FIRST + 3 * (attempt + torch.arange(k, device=pend.device).repeat(m))
    at = pend.repeat_interleave(k)
    e = indptr[cur[at]] + uniform_int(combine_tensor(hp, slot), deg[at])
    if alias is not None:
        e = alias_draw(alias, e, combine_tensor(hp, slot + 1))
    return hp, slot, at, e


def take_first(ok, x, pend, k: int, nxt):
    """Each pending walker's first accepted attempt of its ``k`` (``ok``, ``x``: walker-major,
    as :func:`attempts`) into ``nxt``; returns the walkers still pending."""
    m = pend.numel()
    ok = ok.view(m, k)
    hit = ok.any(1)
    first = torch.argmax(ok.to(torch.int8), 1)
    nxt[pend[hit]] = x.view(m, k)[hit, first[hit]]
    return pend[~hit]


def step_word(h: torch.Tensor, draw: int) -> torch.Tensor:
    """``combine(h, draw)`` for walker hashes ``h = combine(key, walker)`` (int64 bits)."""
    return mix64_tensor(h + signed(((draw + 1) * GOLDEN) & MASK64))
