"""Negatives for link prediction, drawn on the graph's device under gsample's stream.

PyG's ``LinkLoader`` draws a mini-batch's negatives on the host with torch's generator
(``NegativeSampling.sample``: ``torch.randint`` or ``torch.multinomial``). Here they are
drawn by :class:`NegativeSampler` with torch ops on the graph's device, from gsample's
counter-based hash (docs/architecture.md §3): negative ``k`` of a draw keyed ``key`` reads
the words ``hash(key, 0, k)`` (its source) and ``hash(key, 1, k)`` (its destination), and
everything after the hash is integer arithmetic (searches in integer tables), so the
negatives are the same on the CPU and a GPU, in any worker, bit for bit.

The laws, PyG's (``NegativeSampling(mode, amount, src_weight, dst_weight)``):

* ``binary``: ``ceil(amount * B)`` pairs ``(u, v)`` for ``B`` positives, ``u`` drawn with
  probability proportional to ``src_weight`` and ``v`` to ``dst_weight`` (uniform when
  None), independently;
* ``triplet``: ``amount`` destinations per positive (``amount`` an integer), ``v`` drawn
  by ``dst_weight``; the source is the positive's.

Strict negatives (``strict=True``, not PyG's: its ``LinkLoader`` may draw pairs that are
edges) exclude every pair ``(u, v)`` that is an edge of the graph, and self-pairs ``(v, v)``
(as PyG's ``torch_geometric.utils.negative_sampling``). They follow the law of redrawing a
pair until it is not excluded, exactly, without rounds: the graph's pairs are kept once as
a sorted array of keys ``u * N + v`` (with per-row cumulative masses), and ``v`` is drawn
directly among the non-neighbours of ``u``:

* ``binary``: ``P(u, v)`` proportional to ``src_weight[u] * dst_weight[v]`` over the pairs
  that are not excluded (``u`` is drawn with its mass of allowed destinations, then ``v``
  among them);
* ``triplet``: ``P(v)`` proportional to ``dst_weight[v]`` over the ``v`` with ``(u, v)``
  not excluded, ``u`` the positive's source.

When no allowed pair exists at all (binary: every weighted pair is an edge) building the
sampler raises a ``ValueError``; when one source has none (triplet: ``u`` points to every
node of positive weight), its negatives are drawn as if not strict and flagged in
:attr:`Negatives.relaxed` (:class:`gsample.pyg.LinkNeighborLoader` checks its supervision
edges for such sources when it is built, and raises).

Temporal negatives (``node_time``): a negative of a positive at time ``t`` is drawn among the
nodes with ``node_time <= t`` (PyG's rule; PyG rejects and redraws up to 5 times, here the
draw is exact), and carries the time ``t``. When no node exists at ``t``, the negative is
the earliest node (PyG's fallback), flagged in :attr:`Negatives.relaxed`. In binary mode
with strict negatives the source is then drawn by ``src_weight`` among the nodes existing at
``t`` and the destination among its allowed ones (the pair law above holds without
``node_time``).

Weights are kept as integer tables (each node's share of the total, in units of
``2**-b`` with ``b = min(40, 62 - bit_length(N))``, built once on the host): a node whose
share is below ``2**-b`` is never drawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from gsample.base import validate as V
from gsample.base.random import combine, combine_tensors, next_op_key, uniform_int
from gsample.interop.pyg.negative_arguments import (
    check_amount,
    check_mode,
    graph_edges,
    node_weights,
    time_ranking,
)

#: the hash's column positions of a negative's two words (its draw id is its position ``k``)
_SRC_WORD, _DST_WORD = 0, 1


# ----------------------------------------------------------------------------- weight tables
def _table(w: torch.Tensor, bits: int) -> torch.Tensor:
    """Cumulative integer masses ``T`` (shape (N + 1,), ``T[0] = 0``, ``T[N] = 2**bits``) of
    the non-negative float64 weights ``w`` on the CPU: node ``v`` has mass
    ``T[v + 1] - T[v]``, 0 exactly when its weight is 0 (or its share below ``2**-bits``)."""
    c = torch.cumsum(w, 0)
    scale = float(1 << bits) / float(c[-1])
    t = torch.floor(c * scale).clamp_(0, 1 << bits).to(torch.int64)
    t[c >= c[-1]] = 1 << bits  # the total, from the last positive weight on (rounding)
    return torch.cat([t.new_zeros(1), t])


# ----------------------------------------------------------------------------- the draws
@dataclass(frozen=True)
class Negatives:
    """The negatives of one draw (:meth:`NegativeSampler.__call__`), on the graph's device.

    Attributes
    ----------
    src, dst : LongTensor, shape (M,) in binary mode, (B, amount) in triplet mode
        Global node ids. Triplet: ``src[i, j]`` is the ``i``-th positive's source and
        ``dst[i, j]`` its ``j``-th negative destination.
    time : Tensor or None, same shape
        Each negative's time, its positive's (binary: negative ``k`` belongs to positive
        ``k % B``, as PyG's ``edge_label_time.repeat``); None when no time was given.
    relaxed : BoolTensor, same shape
        The negatives that could not meet every constraint (strict: a source adjacent to
        every candidate; ``node_time``: no node existing at the time) and were drawn as the
        module says instead. All False when neither applies.
    """

    src: torch.Tensor
    dst: torch.Tensor
    time: torch.Tensor | None
    relaxed: torch.Tensor

    def flat(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """``(src, dst, time)`` flattened in draw order: negative ``k`` belongs to positive
        ``k % B`` in both modes (triplet: ``dst[i, j]`` is negative ``j * B + i``), the order
        PyG's ``edge_sample`` lays the negatives' seeds and times out in."""
        if self.dst.dim() == 1:
            return self.src, self.dst, self.time
        t = None if self.time is None else self.time.t().reshape(-1)
        return self.src.t().reshape(-1), self.dst.t().reshape(-1), t


def _existing(sorted_time, time, owner, count: int):
    """How many nodes exist at each negative's time (its positive's: ``time[owner]``): a
    prefix of the nodes ranked by time; ``count`` (all of them) without times."""
    if sorted_time is None:
        return count
    t = time[owner]
    common = torch.promote_types(t.dtype, sorted_time.dtype)
    return torch.searchsorted(sorted_time.to(common), t.to(common), right=True)


class NegativeSampler:
    """Draws negatives for link prediction on a graph's device (see the module's text).

    Built once per graph and weights (the sorted pair keys for ``strict``, the integer
    weight tables); each call draws one mini-batch's negatives with no host work per
    negative and no read-back.

    Parameters
    ----------
    graph : gs.Matrix, or LongTensor of shape (2, E)
        The graph whose edges ``strict`` excludes (``src -> dst``); the negatives are drawn
        on its device.
    num_nodes : int or (int, int), optional
        ``N``; required with an ``edge_index``. A pair ``(N_src, N_dst)``: a graph between
        two node types (a heterogeneous edge type ``(s, r, d)``: sources of type ``s``,
        destinations of type ``d``), whose negatives' sources are drawn among the ``N_src``
        nodes and destinations among the ``N_dst``, and ``strict`` excludes its edges only
        (a pair of two types is never a self-pair).
    src_weight, dst_weight : Tensor, shape (N_src,) / (N_dst,), optional
        Non-negative finite weights of the negatives' sources (binary) and destinations;
        a node is drawn with probability proportional to its weight (PyG's
        ``NegativeSampling``); uniform when None. E.g. ``dst_weight=degree`` for
        degree-weighted destinations.
    strict : bool
        Exclude pairs that are edges of ``graph``, and self-pairs.
    node_time : Tensor of shape (N,), or a pair of them (or None) for a typed graph, optional
        Each node's time: a negative of a positive at time ``t`` is drawn among the nodes
        with ``node_time <= t`` (calls then need ``time``). Typed: ``(source times,
        destination times)``, either None (that endpoint is drawn without time, as PyG's
        ``edge_sample`` for a node type without time).

    Raises
    ------
    ValueError
        Weights of the wrong length, negative, non-finite or all zero (naming
        ``src_weight`` / ``dst_weight``); ``strict`` binary negatives when every pair of
        positive weights is excluded.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A = gs.datasets.rmat(1000, 10_000, seed=0)
    >>> neg = NegativeSampler(A, dst_weight=A.sum(axis=0), strict=True)  # by in-degree
    >>> out = neg(torch.arange(256), None, "binary", amount=2, key=0)
    >>> out.src.shape, out.dst.shape                      # 2 * B pairs, none an edge
    (torch.Size([512]), torch.Size([512]))
    >>> bool(neg.excluded(out.src, out.dst).any())
    False
    """

    def __init__(
        self,
        graph,
        num_nodes: int | tuple[int, int] | None = None,
        *,
        src_weight: torch.Tensor | None = None,
        dst_weight: torch.Tensor | None = None,
        strict: bool = False,
        node_time: torch.Tensor | None = None,
    ):
        src, dst, ns, nd, typed = graph_edges(graph, num_nodes)
        self.num_nodes = (ns, nd) if typed else ns
        self.num_src, self.num_dst, self.typed = ns, nd, typed
        self.device = src.device
        self.strict = V.flag(strict, "strict")
        n = max(ns, nd)
        if ns * nd >= 1 << 63:
            raise ValueError(f"graph: {n} nodes is too many for int64 pair keys (N * N)")
        # mass tables in units of 2**-bits: n * (2**bits + 1) stays below 2**62, so the
        # keys of the strict draw (row * (total + 1) + mass) fit in int64
        self.bits = min(40, 62 - max(n, 1).bit_length())
        ws = node_weights(src_weight, "src_weight", ns)
        wd = node_weights(dst_weight, "dst_weight", nd)
        # nodes are ranked by time (ties by id) so that the nodes existing at a time are a
        # prefix; without node_time the rank is the id. Sources and destinations have a
        # ranking each (one node type's times each in a typed graph; the same otherwise)
        if typed:
            if node_time is None:
                node_time = (None, None)
            if not (isinstance(node_time, (tuple, list)) and len(node_time) == 2):
                raise TypeError(
                    "node_time: for a typed graph (num_nodes a pair), a pair (source times, "
                    "destination times), either None"
                )
            src_rank = time_ranking(node_time[0], "node_time[0]", ns)
            dst_rank = time_ranking(node_time[1], "node_time[1]", nd)
        else:
            src_rank = dst_rank = time_ranking(node_time, "node_time", n)
        self.src_order = self.src_rank = self.src_time = None
        self.dst_order = self.dst_rank = self.dst_time = None
        if src_rank is not None:
            ws = None if ws is None else ws[src_rank[0]]
            self.src_order, self.src_rank, self.src_time = (x.to(self.device) for x in src_rank)
        if dst_rank is not None:
            wd = None if wd is None else wd[dst_rank[0]]
        if dst_rank is src_rank:  # one node type: one ranking (and None stays None)
            self.dst_order, self.dst_rank = self.src_order, self.src_rank
            self.dst_time = self.src_time
        elif dst_rank is not None:
            self.dst_order, self.dst_rank, self.dst_time = (x.to(self.device) for x in dst_rank)
        self.src_table = None if ws is None else _table(ws, self.bits).to(self.device)
        self.dst_table = None if wd is None else _table(wd, self.bits).to(self.device)
        self.dst_total = nd if wd is None else 1 << self.bits
        self.pair_table = None
        if self.strict:
            self._build_strict(src, dst, ws)

    # -------------------------------------------------------------------- strict tables
    def _build_strict(self, src: torch.Tensor, dst: torch.Tensor, ws) -> None:
        """The sorted keys ``u * N_dst + v`` (ranks) of the excluded pairs, each row's
        cumulative masses, and (binary) the sources' table weighted by their allowed mass."""
        ns, n, dev = self.num_src, self.num_dst, self.device
        if self.src_rank is not None:
            src = self.src_rank[src]
        if self.dst_rank is not None:
            dst = self.dst_rank[dst]
        pairs = src * n + dst
        if not self.typed:  # self-pairs (of one node type) are excluded too
            loops = torch.arange(n, device=dev)
            pairs = torch.cat([pairs, loops * n + loops])
        keys = torch.unique(pairs, sorted=True)
        self.keys = keys
        self.rowptr = torch.searchsorted(keys, torch.arange(ns + 1, device=dev) * n)
        row, col = keys // n, keys % n
        mass = self._mass(col)
        # Pn: a row's masses before each key (exclusive); G: allowed mass before its column
        before = torch.cumsum(mass, 0) - mass  # global, < 2**62: no overflow
        start = before[self.rowptr[:-1]] if keys.numel() else before.new_zeros(ns)
        prefix = before - start[row]
        g = self._cum(col) - prefix
        self.span = self.dst_total + 1  # row u's G values live in [u * span, u * span + total]
        self.gkeys = row * self.span + g
        row_mass = torch.zeros(ns, dtype=torch.int64, device=dev).index_add_(0, row, mass)
        self.avail = self.dst_total - row_mass  # allowed mass of each source (by rank)
        # binary: a source is drawn with its weight times its allowed mass (pair law)
        pair = self.avail.cpu().to(torch.float64)
        if ws is not None:
            pair = pair * ws
        if not bool((pair > 0).any()):
            raise ValueError(
                "strict: no pair of nodes (of positive weights) is a negative: every pair is "
                "an edge of the graph or a self-pair"
            )
        self.pair_table = _table(pair, self.bits).to(dev)

    def _mass(self, v: torch.Tensor) -> torch.Tensor:
        """Destination mass of ranks ``v`` (1 when uniform)."""
        if self.dst_table is None:
            return torch.ones_like(v)
        return self.dst_table[v + 1] - self.dst_table[v]

    def _cum(self, v: torch.Tensor) -> torch.Tensor:
        """Destination mass of the ranks below ``v`` (``T[v]``)."""
        return v if self.dst_table is None else self.dst_table[v]

    # -------------------------------------------------------------------- primitive draws
    def _pick(self, table, words: torch.Tensor, limit) -> tuple[torch.Tensor, torch.Tensor]:
        """Ranks drawn by ``table`` among ranks ``[0, limit)`` (``limit``: N or a tensor of
        prefix lengths); ``(rank, empty)``: empty where the prefix has no mass (rank 0)."""
        if not isinstance(limit, torch.Tensor):  # every rank: the whole table
            total = limit if table is None else 1 << self.bits  # _table's T[N]
        else:
            total = limit if table is None else table[limit]
        empty = (total <= 0) if isinstance(total, torch.Tensor) else None
        if empty is not None:
            total = total.clamp(min=1)
        u = uniform_int(words, total)
        v = u if table is None else torch.searchsorted(table, u, right=True) - 1
        if empty is None:
            return v, torch.zeros_like(v, dtype=torch.bool)
        return torch.where(empty, 0, v), empty

    def _before(self, u, lo, t, deg) -> torch.Tensor:
        """Mass of row ``u``'s first ``t`` excluded columns (``Pn_t``)."""
        at = (lo + t).clamp(max=self.keys.numel() - 1)  # in row u where t < deg
        col = self.keys[at] % self.num_dst  # (the modulo keeps the others in range)
        g = self.gkeys[at] % self.span
        full = self.dst_total - self.avail[u]
        return torch.where(t < deg, self._cum(col) - g, full)

    def _allowed(self, u, words, limit) -> tuple[torch.Tensor, torch.Tensor]:
        """Ranks drawn by the destination weights among the allowed columns of rows ``u``
        (below ``limit`` when a tensor); ``(rank, ok)``, ``ok`` False where none exists."""
        n = self.num_dst
        lo = self.rowptr[u]
        deg = self.rowptr[u + 1] - lo
        if isinstance(limit, torch.Tensor):
            below = torch.searchsorted(self.keys, u * n + limit) - lo  # excluded cols < limit
            top = limit if self.dst_table is None else self.dst_table[limit]
            avail = top - self._before(u, lo, below, deg)
        else:
            avail = self.avail[u]
        ok = avail > 0
        x = uniform_int(words, avail.clamp(min=1))  # the x-th allowed unit of mass
        t = torch.searchsorted(self.gkeys, u * self.span + x, right=True) - lo
        x = x + self._before(u, lo, t, deg)  # the same unit among all columns
        v = x if self.dst_table is None else torch.searchsorted(self.dst_table, x, right=True) - 1
        return v, ok

    # -------------------------------------------------------------------- a draw
    def __call__(
        self,
        src: torch.Tensor,
        dst: torch.Tensor | None = None,
        mode: str = "binary",
        amount: int | float = 1,
        *,
        time: torch.Tensor | None = None,
        key: int | None = None,
        checked: bool = False,
    ) -> Negatives:
        """Draw the negatives of ``B`` positive pairs.

        Parameters
        ----------
        src : LongTensor, shape (B,)
            The positives' sources (global ids).
        dst : LongTensor, shape (B,), optional
            Their destinations (not read: negatives do not depend on them; taken for
            symmetry with PyG's ``edge_sample``).
        mode : {"binary", "triplet"}
            PyG's ``NegativeSamplingMode``.
        amount : int or float
            Binary: ``ceil(amount * B)`` negative pairs. Triplet: negatives per positive
            (an integer).
        time : Tensor, shape (B,), optional
            The positives' times: each negative gets its positive's; with ``node_time``,
            required (negatives exist at that time).
        key : int, optional
            The draw's op key (``gsample.base.random.op_key(seed, ordinal, batch)``);
            default the next op of gsample's stream (``gs.manual_seed``).
        checked : bool
            ``src`` / ``dst`` were range-checked already (a loader checks its supervision
            edges once): they are not checked again (a host read-back each on a GPU).

        Returns
        -------
        Negatives
            Binary: ``src``, ``dst`` of shape ``(ceil(amount * B),)``; triplet:
            ``(B, amount)``.
        """
        mode = check_mode(mode)
        amount = check_amount(amount, mode)
        dev = self.device
        # (read on the device by triplet draws only: a binary draw needs no copy of it)
        src = V.ids(src, "src", self.num_src, None, check_range=not checked)
        b = src.numel()
        if dst is not None:
            dst = V.ids(dst, "dst", self.num_dst, None, check_range=not checked)
            if dst.numel() != b:
                raise ValueError(f"dst: expected shape ({b},) as src, got {tuple(dst.shape)}")
        if time is not None:
            time = V.as_tensor(time, "time", None)
            if time.dim() != 1 or time.numel() != b:
                raise ValueError(f"time: expected one time per positive, shape ({b},)")
            time = time.to(dev)
        elif self.src_time is not None or self.dst_time is not None:
            raise ValueError("time: required with node_time (negatives exist at their time)")
        m = math.ceil(b * amount) if mode == "binary" else b * amount
        k = torch.arange(m, device=dev)
        owner = k % b if b else k
        if key is None:
            key = next_op_key()
        # hash_tensor(key, word, k) with the constant word folded in on the host, both words
        # mixed in one pass: the same bits, a third of the tensor ops (each a kernel launch
        # on a GPU)
        w_src, w_dst = combine_tensors((combine(key, _SRC_WORD), combine(key, _DST_WORD)), k)
        src_limit = _existing(self.src_time, time, owner, self.num_src)
        dst_limit = (
            src_limit
            if self.dst_time is self.src_time and self.num_dst == self.num_src
            else _existing(self.dst_time, time, owner, self.num_dst)
        )
        untimed = self.src_time is None and self.dst_time is None
        relaxed = torch.zeros(m, dtype=torch.bool, device=dev)
        if mode == "binary":
            if self.strict and untimed:
                u, _ = self._pick(self.pair_table, w_src, src_limit)
            else:
                u, empty = self._pick(self.src_table, w_src, src_limit)
                relaxed = relaxed | empty
        else:
            u = src.to(dev)[owner]
            u = u if self.src_rank is None else self.src_rank[u]
        v, empty = self._pick(self.dst_table, w_dst, dst_limit)
        relaxed = relaxed | empty
        if self.strict:
            allowed, ok = self._allowed(u, w_dst, dst_limit)
            v = torch.where(ok, allowed, v)
            relaxed = relaxed | ~ok
        if self.src_order is not None:
            u = self.src_order[u]
        if self.dst_order is not None:
            v = self.dst_order[v]
        t = None if time is None else time[owner]
        if mode == "triplet":  # negative j * B + i is positive i's j-th
            shape = (amount, b)
            u, v, relaxed = (x.view(shape).t() for x in (u, v, relaxed))
            t = None if t is None else t.view(shape).t()
        return Negatives(u, v, t, relaxed)

    def stranded(self, src: torch.Tensor) -> torch.Tensor:
        """Whether each source has no strict negative destination at all (every node of
        positive destination weight is an out-neighbour of it, or itself), whatever the
        time: its triplet negatives are then relaxed.

        Parameters
        ----------
        src : LongTensor, shape (P,)

        Returns
        -------
        BoolTensor, shape (P,)
            All False when the sampler is not strict.

        Examples
        --------
        >>> import torch
        >>> NegativeSampler(torch.tensor([[0, 0], [1, 2]]), 3, strict=True).stranded(
        ...     torch.tensor([0, 1]))
        tensor([ True, False])
        """
        src = V.ids(src, "src", self.num_src, None).to(self.device)
        if not self.strict:
            return torch.zeros_like(src, dtype=torch.bool)
        return self.avail[src if self.src_rank is None else self.src_rank[src]] <= 0

    def excluded(self, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        """Whether each pair ``(src[i], dst[i])`` is excluded by ``strict`` (an edge of the
        graph or a self-pair): one search per pair in the sorted keys, every id checked.

        Parameters
        ----------
        src, dst : LongTensor, shape (P,)

        Returns
        -------
        BoolTensor, shape (P,)

        Examples
        --------
        >>> import torch
        >>> edge_index = torch.tensor([[0, 1, 2], [1, 2, 0]])
        >>> neg = NegativeSampler(edge_index, 4, strict=True)
        >>> neg.excluded(torch.tensor([0, 1]), torch.tensor([1, 1]))   # an edge; a self-pair
        tensor([True, True])
        """
        if not self.strict:
            raise ValueError("excluded: the sampler was built with strict=False (no pair keys)")
        n = self.num_dst
        src = V.ids(src, "src", self.num_src, None).to(self.device)
        dst = V.ids(dst, "dst", n, None).to(self.device)
        if src.shape != dst.shape:
            raise ValueError(f"dst: expected shape {tuple(src.shape)} as src")
        if self.src_rank is not None:
            src = self.src_rank[src]
        if self.dst_rank is not None:
            dst = self.dst_rank[dst]
        q = src * n + dst
        at = torch.searchsorted(self.keys, q).clamp(max=self.keys.numel() - 1)
        return self.keys[at] == q


def negative_sample(
    graph,
    src: torch.Tensor,
    dst: torch.Tensor | None = None,
    mode: str = "binary",
    amount: int | float = 1,
    *,
    num_nodes: int | tuple[int, int] | None = None,
    src_weight: torch.Tensor | None = None,
    dst_weight: torch.Tensor | None = None,
    strict: bool = False,
    time: torch.Tensor | None = None,
    node_time: torch.Tensor | None = None,
    key: int | None = None,
) -> Negatives:
    """Draw negatives for ``B`` positive pairs on ``graph``'s device (one call of a
    :class:`NegativeSampler`; build that once to draw many mini-batches).

    Parameters
    ----------
    graph : gs.Matrix, or LongTensor of shape (2, E)
        The graph (its edges are what ``strict`` excludes; its device is the draw's).
    src, dst : LongTensor, shape (B,)
        The positive pairs (``dst`` is optional and not read).
    mode : {"binary", "triplet"}
        Binary: random pairs, both endpoints drawn. Triplet: ``amount`` destinations per
        positive, whose source is the positive's.
    amount : int or float
        Binary: ``ceil(amount * B)`` pairs (any positive ratio, as PyG). Triplet: per
        positive, an integer.
    num_nodes : int or (int, int), optional
        ``N``; required with an ``edge_index``. A pair: a graph between two node types
        (:class:`NegativeSampler`).
    src_weight, dst_weight : Tensor, shape (N,), optional
        Node weights of the drawn sources (binary) and destinations; uniform when None.
    strict : bool
        No negative is an edge of ``graph`` or a self-pair (see the module for the law).
    time : Tensor, shape (B,), optional
        The positives' times; each negative gets its positive's.
    node_time : Tensor, shape (N,), optional
        Negatives of a positive at time ``t`` are drawn among the nodes with
        ``node_time <= t``.
    key : int, optional
        The op key (default: the next of gsample's stream).

    Returns
    -------
    Negatives
        ``src``, ``dst`` (and ``time``): shape ``(ceil(amount * B),)`` in binary mode,
        ``(B, amount)`` in triplet mode; ``relaxed`` flags the negatives that could not
        meet a constraint.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> edge_index = torch.tensor([[0, 1, 2], [1, 2, 0]])
    >>> gs.manual_seed(0)
    >>> out = negative_sample(edge_index, edge_index[0], edge_index[1], "triplet", 2,
    ...                       num_nodes=3, strict=True)
    >>> out.dst.shape                            # (B, amount); (0, 2), (1, 0), (2, 1)
    torch.Size([3, 2])
    >>> out.dst
    tensor([[2, 2],
            [0, 0],
            [1, 1]])
    """
    sampler = NegativeSampler(
        graph,
        num_nodes,
        src_weight=src_weight,
        dst_weight=dst_weight,
        strict=strict,
        node_time=node_time,
    )
    return sampler(src, dst, mode, amount, time=time, key=key)


__all__ = ["NegativeSampler", "Negatives", "negative_sample"]
