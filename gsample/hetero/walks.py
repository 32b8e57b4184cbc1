"""Metapath walks on a :class:`~gsample.hetero.HeteroGraph`, and :func:`metapath_walk`, the
same walk in gsample's DSL for compiled samplers (relations as matrix arguments).

Ids are per node type (``gsample.hetero``'s docstring, *Id spaces*); every step is one
``random_walk(nodes, 1)`` op, so a walk takes one op ordinal per step (docs/architecture.md §3).
"""

from __future__ import annotations

import dataclasses
import itertools
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
import torch.fx

from gsample.base import validate as V
from gsample.capture.walks import walk as dsl_walk
from gsample.matrix.sparse import Matrix

if TYPE_CHECKING:  # (container.py imports this mixin)
    from gsample.hetero.container import EdgeKey

DIRECTIONS = ("in", "out")


# ----------------------------------------------------------------------------- the DSL walk
def metapath_walk(
    relations: Sequence[Matrix],
    seeds: torch.Tensor,
    restart_prob: float | Sequence[float] = 0.0,
) -> torch.Tensor:
    """A walk of one step per relation matrix: the metapath walk in gsample's DSL.

    Step ``t`` moves every walker from its node ``v`` to an in-neighbour of ``v`` in
    ``relations[t]`` (a row of column ``v``), uniformly over ``v``'s in-edges, by one
    ``relations[t].random_walk(nodes, 1, ...)``. It is written with Matrix and torch
    operators only, so a sampler calling it compiles (``gs.compile``) with the relations
    as arguments of their own; :meth:`HeteroGraph.metapath_walk` checks node types and calls
    it.

    Parameters
    ----------
    relations : sequence of gs.Matrix, each (N, N)
        The matrix of each step, whole graphs with one ``N`` (a :class:`HeteroGraph`'s
        ``H[edge_type]``). Step ``t`` moves from the node type of ``relations[t]``'s columns
        to that of its rows.
    seeds : LongTensor, shape (W,)
        Start nodes (ids of the first step's column type); repeats are independent walkers.
    restart_prob : float or sequence of float
        Probability that step ``t`` goes back to the walker's root (``seeds[w]``) instead of
        moving; one value for every step or one per step (``len(relations)`` values). Put
        it only on steps whose target type (``relations[t]``'s row type) is the seeds' type,
        or the walk leaves its types: :meth:`HeteroGraph.metapath_walk` does this for you.

    Returns
    -------
    LongTensor, shape (W, len(relations) + 1)
        Column 0 the seeds, column ``t + 1`` the node after step ``t``; ``-1`` from the
        step that found no in-edge on.

    Notes
    -----
    *Keys.* Every step passes all ``W`` walkers to ``random_walk``, each at its position in
    ``seeds``: walker ``w``'s draws at step ``t`` are keyed by (seed, op ordinal of step
    ``t``, mini-batch, ``w``), whether or not other walkers have stopped. A stopped walker
    (``-1``) takes node 0's place in the step's call and its result is dropped, so its
    stop changes no other walker's draws (compacting the live walkers would renumber
    them and change every later walker's keys). So walker ``w``'s walk is a function of the
    seed, the op ordinals, the mini-batch, ``w`` and ``seeds[w]`` only.

    *Restart.* On a step with ``restart_prob = r > 0``, a walker at a node with in-edges in
    that relation goes back to its root with probability ``r`` and otherwise moves to an
    in-neighbour chosen uniformly (``(1 - r) / deg`` per in-edge): the step's
    ``random_walk`` runs with ``stop_prob=r``, and a stop at a node with in-edges is read
    as the restart. A walker at a node without in-edges stops (``-1``), restart or not (as
    DGL's ``random_walk``; ``A.random_walk(restart_prob=r)`` would restart from there
    with probability ``r``). ``random_walk``'s own ``restart_prob`` is not used: its root
    is the step's start node, not the walk's. The in-edge test is one column sum per graph
    ``(A ** 0).sum(axis=0) > 0``, hoisted by a compiled sampler's pre-processing.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> H = gs.hetero.authors_papers()   # 2 authors write 3 papers; papers cite papers
    >>> papers = torch.tensor([0, 1, 2])
    >>> pap = gs.compile(lambda w, wb, seeds: metapath_walk([w, wb], seeds))
    >>> walks = pap(H["writes"], H["written_by"], papers)      # paper, author, paper
    >>> walks.shape == (len(papers), 3)
    True
    """
    if isinstance(relations, (Matrix, torch.Tensor, str)) or not isinstance(relations, Sequence):
        raise TypeError(
            f"relations: expected a list of gs.Matrix (one per step), got "
            f"{type(relations).__name__}"
        )
    mats = list(relations)
    for t, m in enumerate(mats):
        if not isinstance(m, (Matrix, torch.fx.Proxy)):
            raise TypeError(f"relations[{t}]: expected a gs.Matrix, got {type(m).__name__}")
    probs = _step_probs(restart_prob, len(mats), "restart_prob")
    return _walk(mats, seeds, probs, [None] * len(mats))


def _step_probs(restart_prob, steps: int, name: str) -> list:
    """One checked probability per step (static Python floats)."""
    if isinstance(restart_prob, (torch.Tensor, torch.fx.Proxy)):
        raise TypeError(
            f"{name}: must be a float or a sequence of floats (a static value), not a tensor"
        )
    if isinstance(restart_prob, numbers.Real):
        return [V.probability(restart_prob, name)] * steps
    try:
        if isinstance(restart_prob, (str, bytes)):
            raise TypeError
        probs = list(restart_prob)
    except TypeError:
        raise TypeError(
            f"{name}: must be a float or a sequence of floats, got {type(restart_prob).__name__}"
        ) from None
    if len(probs) != steps:
        raise ValueError(f"{name}: expected one probability per step ({steps}), got {len(probs)}")
    return [V.probability(p, f"{name}[{t}]") for t, p in enumerate(probs)]


def _walk(mats: list, seeds, probs: list, movable: list) -> torch.Tensor:
    """:func:`metapath_walk` with optional precomputed in-edge masks per step: one
    ``gs.walk`` step per relation (the step traced once per relation of the metapath's
    repeating pattern)."""
    if not mats:
        if isinstance(seeds, torch.fx.Proxy):
            return seeds.to(torch.int64).unsqueeze(1)
        # no graph to bound the ids: their type and shape only
        return V.ids(seeds, "seeds", 0, None, check_range=False).unsqueeze(1)
    if not isinstance(seeds, torch.fx.Proxy):  # the root of a restart: a checked tensor
        seeds = V.ids(seeds, "seeds", mats[0].num_nodes, mats[0].device)
    period = _period(mats, probs, movable)

    def step(ms, cur, prev, t, root):
        # the first step sees the seeds as given, so random_walk checks them; later ones
        # see a stopped walker at node 0, and gs.walk drops what it draws (keys by position)
        M, r = ms[t], probs[t]
        nxt = M.random_walk(cur, 1, stop_prob=r)[:, 1]
        if r > 0.0:
            mask = movable[t] if movable[t] is not None else (M**0).sum(axis=0) > 0
            # torch.logical_and, not `&`: the IR takes operator.and_ (a name ending in "_")
            # for in-place code and would not hoist the mask out of the batch
            restart = torch.logical_and(nxt < 0, mask[cur])
            nxt = torch.where(restart, root, nxt)
        return nxt, root

    walks, _ = dsl_walk(step, tuple(mats[:period]), seeds, len(mats), state=seeds, period=period)
    return walks


def _period(mats: list, probs: list, movable: list) -> int:
    """The shortest period of the steps (relation, restart, mask), e.g. 2 for ``[writes,
    written_by] * 40``: ``gs.walk`` traces one step per phase."""
    n = len(mats)
    for p in range(1, n + 1):
        if all(
            mats[i] is mats[i % p] and probs[i] == probs[i % p] and movable[i] is movable[i % p]
            for i in range(n)
        ):
            return p
    return n


# ----------------------------------------------------------------------------- HeteroGraph's
class WalkMethods:
    """:class:`~gsample.hetero.HeteroGraph`'s walk methods (a mixin: it reads the
    container's ``_rel``, ``_cache``, ``_size``, ``edge_type`` and ``_ids``)."""

    __slots__ = ()

    def path_types(self, metapath: Sequence[EdgeKey], direction: str = "in") -> list[str]:
        """Node type at each position of a walk along ``metapath`` (``len + 1`` types).

        ``direction="in"``: step ``t`` goes from a node of ``metapath[t]``'s destination
        type to its source type; ``"out"``: from source to destination. Raises when
        consecutive edge types do not chain.
        """
        if direction not in DIRECTIONS:
            raise ValueError(f"direction: must be 'in' or 'out', got {direction!r}")
        if isinstance(metapath, (str, tuple)) or not isinstance(metapath, Sequence):
            raise TypeError(
                "metapath: expected a list of edge types, e.g. "
                "[('author', 'writes', 'paper'), ('paper', 'written_by', 'author')]"
            )
        if len(metapath) == 0:
            raise ValueError("metapath: must name at least one edge type")
        ets = [self.edge_type(e, f"metapath[{i}]") for i, e in enumerate(metapath)]
        frm, to = (2, 0) if direction == "in" else (0, 2)
        types = [ets[0][frm]]
        for i, et in enumerate(ets):
            if et[frm] != types[-1]:
                other = "out" if direction == "in" else "in"
                hint = (
                    f"; these edge types chain with direction={other!r}"
                    if _chains(ets, other)
                    else ""
                )
                raise ValueError(
                    f"metapath[{i}]: {et!r} starts from node type {et[frm]!r}, but step {i} "
                    f"is at a node of type {types[-1]!r} (direction={direction!r}: a step "
                    f"moves from an edge type's {'destination' if frm == 2 else 'source'} "
                    f"to its {'source' if frm == 2 else 'destination'}){hint}"
                )
            types.append(et[to])
        return types

    def metapath_walk(
        self,
        seeds: torch.Tensor,
        metapath: Sequence[EdgeKey],
        restart_prob: float | Sequence[float] = 0.0,
        direction: str = "in",
    ) -> torch.Tensor:
        """Metapath walks (docs/catalogue.md #7): one step per edge type of ``metapath``.

        Parameters
        ----------
        seeds : LongTensor, shape (W,)
            Start nodes, ids of the first position's type (``metapath[0]``'s destination
            type; its source type with ``direction="out"``). Repeats are independent walkers.
        metapath : list of edge types
            ``(src_type, relation, dst_type)`` triples (or unique relation names) that
            chain. With ``direction="in"`` (gsample's walk direction) step ``t`` moves from
            a node of ``metapath[t]``'s destination type to an in-neighbour, of its source
            type, uniformly over the node's in-edges of that relation, so ``metapath[t +
            1]``'s destination type is ``metapath[t]``'s source type: paper -> author ->
            paper is ``[("author", "writes", "paper"), ("paper", "written_by", "author")]``.
            With ``direction="out"`` (PyG's ``MetaPath2Vec``, DGL's ``random_walk``) step
            ``t`` follows out-edges from source to destination: the same walk is
            ``[("paper", "written_by", "author"), ("author", "writes", "paper")]``. Repeat
            the list for longer walks (``metapath * 40``).
        restart_prob : float or sequence of float
            Probability that a step goes back to the walk's root instead of moving. A float
            applies to every step whose target type is the root's type (a return keeps
            every column in its position's type): in paper -> author -> paper, the author
            -> paper steps. A sequence gives one value per step (0 where the target type
            is not the root's). ``0`` (default): no restart.
        direction : {"in", "out"}
            Walk along in-edges (``H[edge_type]`` itself, as ``A.random_walk``) or along
            out-edges (the relation reversed, built once and kept).

        Returns
        -------
        LongTensor, shape (W, len(metapath) + 1)
            Column ``t`` holds ids of node type ``path_types(metapath)[t]``: column 0 the
            seeds, then one node per step (the root after a restart); ``-1`` from the step
            that found no edge on.

        Notes
        -----
        Each step is one ``random_walk(nodes, 1)`` on the step's relation, with all
        walkers at their positions in ``seeds``: a walker's draws are keyed by its
        position, never renumbered when others stop (:func:`metapath_walk`, *Keys*), so
        ``gs.manual_seed`` reproduces the walks, one op ordinal per step. A walker at a node
        without in-edges (out-edges) of the step's relation stops, restart or not
        (:func:`metapath_walk`, *Restart*).

        Examples
        --------
        >>> import torch, gsample as gs
        >>> H = gs.hetero.authors_papers()   # 2 authors write 3 papers; papers cite papers
        >>> papers = torch.tensor([0, 1, 2])
        >>> gs.manual_seed(0)
        >>> mp = [("author", "writes", "paper"), ("paper", "written_by", "author")]
        >>> walks = H.metapath_walk(papers.repeat_interleave(10), mp * 3, restart_prob=0.3)
        >>> walks.shape                           # (walks, 1 + len(metapath))
        torch.Size([30, 7])
        >>> bool((walks[:, 0::2] < 3).all())      # papers; walks[:, 1::2] are authors
        True
        """
        types = self.path_types(metapath, direction)
        ets = [self.edge_type(e, f"metapath[{i}]") for i, e in enumerate(metapath)]
        seeds = self._ids(seeds, types[0], f"seeds (ids of node type {types[0]!r})")
        if isinstance(restart_prob, numbers.Real):
            r = V.probability(restart_prob, "restart_prob")
            if r > 0 and types[0] not in types[1:]:
                raise ValueError(
                    f"restart_prob: no step of this metapath reaches the seeds' "
                    f"node type {types[0]!r}, so no step can return a walker "
                    "to its root"
                )
            probs = [r if types[t + 1] == types[0] else 0.0 for t in range(len(ets))]
        else:
            probs = _step_probs(restart_prob, len(ets), "restart_prob")
            for t, p in enumerate(probs):
                if p > 0 and types[t + 1] != types[0]:
                    raise ValueError(
                        f"restart_prob[{t}]: step {t} reaches node type {types[t + 1]!r}, "
                        f"the root is of type {types[0]!r}; a restart there would put a "
                        f"{types[0]!r} id in a {types[t + 1]!r} column (give 0)"
                    )
        mats = [self._walk_matrix(et, direction) for et in ets]
        movable = [self._movable(et, direction) if p > 0 else None for et, p in zip(ets, probs)]
        return _walk(mats, seeds, probs, movable)

    def reverse(self, edge_type: EdgeKey) -> Matrix:
        """The relation reversed, ``N x N``: entry ``(j, i)`` for each edge ``i -> j``, so
        column ``i`` holds ``i``'s out-neighbours (what ``direction="out"`` walks on; for a
        compiled sampler over forward metapaths). Built once and kept; edge ids are the
        relation's.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> H = gs.hetero.authors_papers()   # 2 authors write 3 papers; papers cite papers
        >>> R = H.reverse(("author", "writes", "paper"))
        >>> R[:, torch.tensor([0])].row()                 # the papers author 0 wrote
        tensor([0, 1])
        """
        return self._walk_matrix(self.edge_type(edge_type), "out")

    def _walk_matrix(self, et, direction: str) -> Matrix:
        if direction == "in":
            return self._rel[et]
        key = ("reverse", et)
        if key not in self._cache:
            src, dst, eid = self._rel[et].edges()
            rev = Matrix.from_edge_index(torch.stack([dst, src]), num_nodes=self._size)
            csc = dataclasses.replace(rev.csc, eids=eid[rev.csc.eid_tensor()])
            self._cache[key] = Matrix(csc)
        return self._cache[key]

    def _movable(self, et, direction: str) -> torch.Tensor:
        """Nodes with at least one edge to walk along in ``et`` (bool, shape (N,))."""
        key = ("movable", et, direction)
        if key not in self._cache:
            self._cache[key] = self._walk_matrix(et, direction).csc.degrees() > 0
        return self._cache[key]


def _chains(ets: list, direction: str) -> bool:
    frm, to = (2, 0) if direction == "in" else (0, 2)
    return all(a[to] == b[frm] for a, b in itertools.pairwise(ets))


__all__ = ["DIRECTIONS", "WalkMethods", "metapath_walk"]
