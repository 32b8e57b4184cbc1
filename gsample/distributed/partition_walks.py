"""Random walks on a partitioned graph: the mixin :class:`Walks` that
:class:`gsample.distributed.partition.PartitionedMatrix` inherits.

``A.random_walk(seeds, length, probs=..., p=..., q=..., stop_prob=..., ...)``
    each step sends every walk still going to the owner of its current node (with its walker
    hash, root and previous node), which takes the step as ``gsample.backend.torch.walk``
    does, and answers with the next node: three collectives per step (the counts, the
    walkers, the answers). Static weights (``probs``: the graph itself or a tensor of one
    weight per edge) become alias tables of the owner's columns (column-local: the
    single-process tables, bit for bit). node2vec's
    acceptance needs the edge test ``x -> u`` of a candidate ``x`` and the previous node ``u``,
    whose column may live on another rank: the owner of the current node draws a batch of
    attempts, asks ``u``'s owner only about those whose acceptance the test decides (before
    the walker's first attempt accepted either way), and keeps each walker's first accepted
    attempt; rounds of attempts (4, then 16, then 64 at a time, as one process batches them;
    an all-reduce and three collectives each) repeat until no rank has a walker pending.

In a super-batch (:mod:`gsample.distributed.partition_batches`) the N mini-batches' walkers
walk together (the same collectives, once for the N), walker ``w`` of mini-batch ``b``
hashed with ``b``'s key and its position within ``b`` (``ColumnKeys``), as the
single-device super-batched walk hashes it.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from gsample.backend.torch.alias import alias_table
from gsample.backend.torch.walk import (
    DECIDE,
    STRIDE,
    attempts,
    general_step,
    has_edge,
    sorted_rows,
    step_word,
    take_first,
    thresholds,
)
from gsample.base import validate as V
from gsample.base.random import ColumnKeys, combine_tensor, next_op_key, uniform_float
from gsample.distributed.comm import Route
from gsample.distributed.partition_batches import active_round
from gsample.distributed.partition_frontier import Frontier
from gsample.distributed.partition_sampling import check_probs, together
from gsample.ir.checks import check_random_walk
from gsample.matrix.sparse import Matrix


class Walks:
    """``random_walk`` of :class:`~gsample.distributed.partition.PartitionedMatrix` (a mixin:
    it reads the partition's ``local``, ``lo``, ``_deg``, ``owner``, ``first_edge``, group
    and checks, and caches the alias tables of ``probs=A`` in ``_own_alias``)."""

    def random_walk(
        self,
        seeds,
        length: int,
        probs=None,
        p: float = 1.0,
        q: float = 1.0,
        stop_prob: float = 0.0,
        restart_prob: float = 0.0,
        jump_prob: float = 0.0,
    ) -> torch.Tensor:
        """``gs.Matrix.random_walk``, the steps exchanged between the ranks: the walks are the
        single-process ones, bit for bit.

        Parameters
        ----------
        seeds : LongTensor, shape (W,)
            Start nodes (each rank its own).
        length : int
            Steps per walk, ``>= 0``.
        probs : PartitionedMatrix or Tensor, optional
            Static edge weights: this graph itself (its edge values, as ``probs=A`` on one
            process) or one weight per edge of the whole graph, shape (E,) (each rank reads
            its edges, ``probs[first_edge:first_edge + local.nnz]``). Finite, non-negative,
            positive somewhere in every column with edges; drawn through alias tables of
            the rank's columns (cached for ``probs=A``).
        p, q : float
            node2vec's return and in-out parameters (the previous node's edge test asked of
            its owner).
        stop_prob, restart_prob, jump_prob : float
            As ``gs.Matrix.random_walk``.

        Returns
        -------
        LongTensor, shape (W, length + 1)
            On this rank's device; ``-1`` after a walk stops.

        Examples
        --------
        In each rank of a process group (not run here), ``A`` a weighted graph and
        ``seeds`` 1024 nodes:

        >>> import gsample as gs
        >>> P = gs.distributed.place(A, "partitioned")  # doctest: +SKIP
        >>> P.random_walk(seeds, 80, probs=P, p=2.0, q=0.5).shape  # node2vec  # doctest: +SKIP
        torch.Size([1024, 81])
        """
        run, ptr = active_round(), None
        if run is not None:  # a super-batch: its mini-batches' walkers at once
            run.shared(
                length=length,
                probs=probs,
                p=p,
                q=q,
                stop_prob=stop_prob,
                restart_prob=restart_prob,
                jump_prob=jump_prob,
            )
            seeds, ptr = run.join_ids(seeds, "seeds", self)
        length = V.count(length, "length")
        p, q = V.positive(p, "p"), V.positive(q, "q")
        stop_prob = V.probability(stop_prob, "stop_prob")
        restart_prob = V.probability(restart_prob, "restart_prob")
        jump_prob = V.probability(jump_prob, "jump_prob")
        # (``type(self)``: the PartitionedMatrix this mixin is part of)
        if isinstance(probs, (Matrix, Frontier)) or (
            isinstance(probs, type(self)) and probs is not self
        ):
            raise ValueError(
                "probs: on a partitioned graph, the graph itself (probs=A: its "
                "values) or a tensor of one weight per edge of the graph (shape "
                f"({self.num_edges},)); got {type(probs).__name__}"
            )
        seeds = check_random_walk(
            self._checks,
            seeds,
            length=length,
            stop_prob=stop_prob,
            restart_prob=restart_prob,
            jump_prob=jump_prob,
        )["seeds"]
        alias = None if probs is None else self._alias_tables(probs)
        # after the checks, as an eager op takes it (a super-batch: walker w of mini-batch b
        # draws with b's key and its position within b)
        key = next_op_key() if run is None else run.column_keys(seeds, ptr)
        pq = None
        if p != 1.0 or q != 1.0:  # node2vec's weights, as the torch code's
            inv_p, inv_q = 1.0 / p, 1.0 / q
            pq = tuple(
                torch.tensor(v, dtype=torch.float64, device=self.device)
                for v in (inv_p, 1.0, inv_q)
            ) + (max(inv_p, 1.0, inv_q),)
        out = self._walk(
            seeds, length, key, thresholds(stop_prob, restart_prob, jump_prob), alias, pq
        )
        return out if run is None else run.split_rows(out, ptr)

    def _alias_tables(self, probs) -> torch.Tensor:
        """Alias tables of this rank's columns (local edge positions) for walk weights
        ``probs`` (checked on every rank together)."""
        local = self.local
        own = probs is self
        stamp = None if local.values is None else local.values._version
        if own and self._own_alias is not None and self._own_alias[0] == stamp:
            return self._own_alias[1]

        def build():
            if own:
                w = local.value_tensor()
            else:
                w = V.probabilities(
                    probs, "probs", self.num_edges, self.device, "edge", values=False
                )
                w = w[self.first_edge : self.first_edge + local.nnz]
            nodes = torch.arange(self.lo, self.lo + local.num_cols, device=self.device)
            w = check_probs(w, local.indptr, nodes, nodes)
            return alias_table(local, w)

        if not own:
            _ = self.first_edge  # (a collective, if unknown): on every rank
        table = together(self, build)
        if own:
            self._own_alias = (stamp, table)
        return table

    def _walk(self, seeds, length, key, cs, alias=None, pq=None):
        W, dev, local = seeds.numel(), self.device, self.local
        out = torch.full((W, length + 1), -1, dtype=torch.int64, device=dev)
        out[:, 0] = seeds
        at = torch.arange(W, device=dev)
        # the walker's hash: the first half of every key
        h = (
            combine_tensor(key.base, key.position)
            if isinstance(key, ColumnKeys)
            else combine_tensor(key, at)
        )
        root = cur = seeds
        prev = None
        one = torch.ones((), dtype=torch.float64, device=dev)
        weights = (one, one, one, 1.0) if pq is None else pq
        for t in range(length):
            second = pq is not None and prev is not None  # node2vec from the second step
            sent = [cur, h, root] + ([prev] if second else [])
            route = Route(torch.stack(sent, 1), self.owner(cur), self.world_size, self.group)
            got = route.received
            v, hv, rv = got[:, 0] - self.lo, got[:, 1], got[:, 2]
            if second:
                step = self._node2vec_step(t, hv, v, got[:, 3], rv, cs, alias, weights)
            else:
                step = general_step(
                    t,
                    t * STRIDE,
                    hv,
                    v,
                    None,
                    rv,
                    self._deg[v],
                    local.indptr,
                    local.rows,
                    alias,
                    self.num_nodes,
                    None,
                    cs,
                    weights,
                    False,
                    dev,
                )
            nxt = route.answer(step)
            out[at, t + 1] = nxt
            going = nxt >= 0
            prev = cur[going]
            at, h, root, cur = at[going], h[going], root[going], nxt[going]
        return out

    def _node2vec_step(self, t, h, v, prev, root, cs, alias, weights):
        """Step ``t`` of the walkers at this rank's (local) columns ``v``: rule 4 of
        ``gsample.backend.torch.walk`` with the edge tests ``x -> prev`` asked of ``prev``'s
        owner. Every rank runs the same rounds (until no rank has a walker pending)."""
        local, dev, N = self.local, self.device, self.num_nodes
        base = t * STRIDE
        deg = self._deg[v]
        ip, one, iq, amax = weights
        # stops, restarts and jumps (rule 1): the torch code's step with nowhere to move
        nxt = general_step(
            t,
            base,
            h,
            v,
            None,
            root,
            torch.zeros_like(deg),
            local.indptr,
            local.rows,
            None,
            N,
            None,
            cs,
            weights,
            False,
            dev,
        )
        moves = deg > 0  # the others move along an in-edge (rule 1)
        if cs[2] > 0.0:
            moves &= uniform_float(step_word(h, base + DECIDE)) >= cs[2]
        pend = moves.nonzero().squeeze(1)
        attempt, k = 0, 4
        while self._anyone(pend.numel()):
            m = pend.numel()
            hp, slot, at, e = attempts(h, pend, attempt, k, base, local.indptr, v, deg, alias)
            x, u = local.rows[e], prev[at]
            r = uniform_float(combine_tensor(hp, slot + 2)) * amax
            back = x == u
            if_edge = torch.where(back, r < ip, r < one)  # accepted if x -> u is an edge
            if_not = torch.where(back, r < ip, r < iq)  # ... and if it is not
            # the test decides where the two differ; only attempts before the walker's first
            # one accepted either way can count
            sure = (if_edge & if_not).view(m, k)
            before = (torch.cumsum(sure.to(torch.int64), 1) == 0).view(-1)
            ask = ((if_edge != if_not) & before).nonzero().squeeze(1)
            ok = if_not.clone()
            ok[ask] = torch.where(self._has_edges(x[ask], u[ask]), if_edge[ask], if_not[ask])
            pend = take_first(ok, x, pend, k, nxt)
            attempt, k = attempt + k, min(4 * k, 64)
        return nxt

    def _has_edges(self, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        """Whether each ``src -> dst`` is an edge (``src`` a row of column ``dst``), asked of
        ``dst``'s owner (a binary search in its sorted rows, as one process tests it)."""
        route = Route(torch.stack([src, dst], 1), self.owner(dst), self.world_size, self.group)
        got = route.received
        keys = sorted_rows(self.local)[1]
        answer = has_edge(keys, self.num_nodes, got[:, 0], got[:, 1] - self.lo)
        return route.answer(answer.to(torch.int64)) > 0

    def _anyone(self, n: int) -> bool:
        """Whether ``n > 0`` on some rank (every rank calls it)."""
        t = torch.tensor([n], dtype=torch.int64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.group)
        return bool(t[0] > 0)
