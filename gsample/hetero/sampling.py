"""Relation-typed neighbour sampling on a :class:`~gsample.hetero.HeteroGraph`
(``HeteroGraph.sample_neighbors``): ``k`` in-neighbours per seed and edge type, one or
several hops (PyG's heterogeneous ``NeighborLoader``). One op ordinal per (hop, edge type),
edge types in sorted order (docs/architecture.md §3).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import torch

from gsample.base import validate as V
from gsample.base.random import next_op_key
from gsample.formats.csc import CSC
from gsample.matrix.sparse import Matrix

if TYPE_CHECKING:  # (container.py imports this mixin)
    from gsample.hetero.container import EdgeType

#: ``k`` for every edge type, ``{edge_type: k}``, or one of those per hop (PyG's
#: ``num_neighbors``; ``{edge_type: [k1, k2, ...]}`` too)
Fanouts = int | Mapping | Sequence


class SamplingMethods:
    """:class:`~gsample.hetero.HeteroGraph`'s sampling methods (a mixin: it reads the
    container's ``_rel``, ``_size``, ``device``, ``edge_type`` and ``_seed_dict``)."""

    __slots__ = ()

    def _fanout_hops(self, fanouts) -> tuple:
        """``(list of {edge_type: k} per hop, whether hops were given)``."""

        def one(f, where):
            if isinstance(f, Mapping):
                hop = {}
                for key, k in f.items():
                    et = self.edge_type(key, f"{where} key")
                    hop[et] = _fanout(k, f"{where}[{et!r}]")
                return dict(sorted(hop.items()))
            return {et: _fanout(f, where) for et in self._rel}

        if (
            isinstance(fanouts, Mapping)
            and fanouts
            and all(isinstance(v, (list, tuple)) for v in fanouts.values())
        ):
            lengths = {len(v) for v in fanouts.values()}  # PyG's {edge_type: [k1, k2]}
            if len(lengths) != 1:
                raise ValueError(
                    f"fanouts: every edge type must list the same number of "
                    f"hops, got lengths {sorted(lengths)}"
                )
            hops = [{key: v[h] for key, v in fanouts.items()} for h in range(lengths.pop())]
            return [one(h, f"fanouts (hop {i})") for i, h in enumerate(hops)], True
        if isinstance(fanouts, (list, tuple)):
            return [one(f, f"fanouts[{i}]") for i, f in enumerate(fanouts)], True
        return [one(fanouts, "fanouts")], False

    # ------------------------------------------------------------------ neighbour sampling
    def sample_neighbors(
        self,
        seeds: Mapping[str, torch.Tensor],
        fanouts: Fanouts,
        replace: bool = False,
        weighted: bool = False,
    ) -> dict[EdgeType, Matrix] | list[dict[EdgeType, Matrix]]:
        """Relation-typed neighbour sampling: ``k`` in-neighbours per seed and edge type.

        For each edge type ``(s, r, d)`` (sorted), ``H[(s, r, d)][:, seeds[d]]
        .individual_sample(k)``: ``k`` in-edges of each seed of type ``d`` along that
        relation, their sources nodes of type ``s`` (messages flow ``s -> d``, as PyG's
        heterogeneous ``NeighborLoader`` samples).

        Parameters
        ----------
        seeds : dict
            ``{node_type: LongTensor (B_t,)}`` of per-type ids; repeats are independent
            columns.
        fanouts : int, dict, or list of them
            ``k`` for every edge type, or ``{edge_type: k}`` (edge types left out are not
            sampled; ``k = -1`` keeps every in-edge, as PyG's ``num_neighbors``). A list
            (or PyG's ``{edge_type: [k1, k2, ...]}``) samples one hop per entry, PyG-style:
            hop ``h + 1`` samples only the nodes first reached at hop ``h``.
        replace : bool
            Sample with replacement (every non-empty column returns exactly ``k`` edges).
        weighted : bool
            Draw in proportion to the relations' edge weights (``individual_sample(k,
            probs=sub)``: sequential draws without replacement, see its notes); a relation
            without weights samples uniformly.

        Returns
        -------
        dict or list of dict
            ``{edge_type: gs.Matrix}`` (one hop), or one such dict per hop when
            ``fanouts`` listed hops. Each matrix is ``N x B_d``: its columns are the
            hop's seeds of type ``d`` (global per-type ids kept), rows nodes of type ``s``;
            ``.edges()`` gives ``(source ids, destination ids, edge ids)``. An edge type
            whose destination type has no seeds in the hop gives a matrix with no columns.

        Notes
        -----
        Every (hop, edge type) takes one op ordinal of the random stream, in hop order and
        sorted edge-type order, whether or not it has seeds (so one type's empty frontier
        does not shift another's draws); a column draws with its position in
        ``seeds[d]``. Uniform without replacement is exactly uniform over ``k``-subsets of
        a column's in-edges (gsample's ``individual_sample``).

        Examples
        --------
        >>> gs.manual_seed(0)
        >>> s = H.sample_neighbors({"paper": torch.tensor([0, 2])}, 5)
        >>> src, dst, eid = s["author", "writes", "paper"].edges()
        >>> hops = H.sample_neighbors({"paper": papers}, [10, 5])     # two hops
        """
        front = self._seed_dict(seeds)
        replace = V.flag(replace, "replace")
        weighted = V.flag(weighted, "weighted")
        hops, listed = self._fanout_hops(fanouts)
        reached = {t: ids for t, ids in front.items()}
        out = []
        for h, hop in enumerate(hops):
            sampled = {}
            for et, k in hop.items():
                d = et[2]
                cols = front.get(d)
                if cols is None or cols.numel() == 0:
                    next_op_key()  # the (hop, edge type)'s ordinal, unused
                    sampled[et] = self._empty(et)
                    continue
                sub = self._rel[et][:, cols]
                if k < 0:
                    next_op_key()
                    sampled[et] = sub
                else:
                    probs = sub if weighted and sub.csc.values is not None else None
                    sampled[et] = sub.individual_sample(k, probs=probs, replace=replace)
            out.append(sampled)
            if h + 1 < len(hops):
                front = _new_nodes(sampled, reached)
                for t, ids in front.items():
                    reached[t] = torch.cat([reached[t], ids]) if t in reached else ids
        return out if listed else out[0]

    def _empty(self, et) -> Matrix:
        z = torch.zeros(1, dtype=torch.int64, device=self.device)
        e = z[:0]
        return Matrix(CSC(self._size, z, e, None, e, None, e))


def _fanout(k, name: str) -> int:
    if isinstance(k, (bool,)) or not isinstance(k, numbers.Integral):
        raise TypeError(
            f"{name}: a fanout must be an int (-1 for every in-edge), got {type(k).__name__}"
        )
    if k < -1:
        raise ValueError(f"{name}: a fanout must be >= 0, or -1 for every in-edge; got {k}")
    return int(k)


def _new_nodes(sampled: dict, reached: dict) -> dict:
    """Per source type: the rows of a hop's matrices not reached before, ascending."""
    rows = {}
    for (s, _, _), m in sampled.items():
        if m.num_edges:
            rows.setdefault(s, []).append(m.row())
    out = {}
    for t, parts in rows.items():
        ids = torch.unique(torch.cat(parts))
        if t in reached:
            ids = ids[~torch.isin(ids, reached[t])]
        out[t] = ids
    return out


__all__ = ["SamplingMethods"]
