"""Relation-typed neighbour sampling on a :class:`~gsample.hetero.HeteroGraph`
(``HeteroGraph.sample_neighbors``, ``sample_disjoint``): ``k`` in-neighbours per seed and edge
type, one or several hops (PyG's heterogeneous ``NeighborLoader``). One op ordinal per (hop,
edge type), edge types in sorted order (docs/architecture.md §3).

Each (hop, edge type) is one call of a DSL step, :func:`relation_sample` (or
:func:`relation_temporal_sample` for disjoint trees), on the relation's whole matrix: by
default through the graph's :meth:`~SamplingMethods.step_sampler`, the step compiled with
``gs.compile`` (one program per relation signature and static arguments, shared by the
relations of one signature), so that on a GPU it runs the CUDA backend's fused
slice-and-sample kernels; ``compile=False`` runs the same function eagerly. Compiled and eager
calls take the same op ordinal from the stream, so they draw the same samples. The Python
loop over hops and edge types, and the per-type unique of the next frontier, stay eager.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import torch

from gsample.base import validate as V
from gsample.base.random import next_op_key
from gsample.compiler.compiled import CompiledSampler
from gsample.compiler.compiled import compile as gs_compile
from gsample.formats.csc import CSC
from gsample.matrix.sparse import Matrix

if TYPE_CHECKING:  # (container.py imports this mixin)
    from gsample.hetero.container import EdgeType

#: ``k`` for every edge type, ``{edge_type: k}``, or one of those per hop (PyG's
#: ``num_neighbors``; ``{edge_type: [k1, k2, ...]}`` too)
Fanouts = int | Mapping | Sequence

#: the step samplers' names (:meth:`SamplingMethods.step_sampler`)
STEPS = ("neighbors", "disjoint")


# ----------------------------------------------------------------------------- the DSL steps
def relation_sample(
    A: Matrix, cols: torch.Tensor, k: int = -1, replace: bool = False, weighted: bool = False
) -> Matrix:
    """One (hop, edge type) of :meth:`HeteroGraph.sample_neighbors` in gsample's DSL: ``k``
    in-edges of each column ``cols`` of relation ``A``.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The relation's whole matrix (``H[edge_type]``).
    cols : LongTensor, shape (B,)
        The hop's frontier of the destination type (repeats are independent columns).
    k : int
        In-edges per column; ``-1`` keeps every in-edge (no random op).
    replace : bool
        Sample with replacement.
    weighted : bool
        Draw in proportion to ``A``'s values (``A`` must have values).

    Returns
    -------
    gs.Matrix, shape (N, B)
        ``A[:, cols]``'s sampled edges (global row and column ids kept).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> H = gs.hetero.authors_papers()   # 2 authors write 3 papers; papers cite papers
    >>> step = gs.compile(relation_sample)
    >>> s = step(H["writes"], torch.tensor([0, 2]), 5)   # 5 authors of papers 0 and 2
    >>> s.shape, s.row()                                 # (N, seeds); the authors
    ((3, 2), tensor([0, 1]))
    """
    sub = A[:, cols]
    if k < 0:
        return sub
    return sub.individual_sample(k, probs=sub if weighted else None, replace=replace)


def relation_temporal_sample(
    A: Matrix,
    cols: torch.Tensor,
    seed: torch.Tensor,
    time: torch.Tensor | None = None,
    edge_time: torch.Tensor | None = None,
    k: int = -1,
    replace: bool = False,
    weighted: bool = False,
    strategy: str = "uniform",
    window=None,
) -> Matrix:
    """One (hop, edge type) of :meth:`HeteroGraph.sample_disjoint` in gsample's DSL:
    :meth:`gs.Matrix.temporal_sample` of relation ``A`` (one op ordinal, ``k = -1`` too).

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The relation's whole matrix.
    cols : LongTensor, shape (B,)
        The hop's frontier of the destination type (a node of two trees is two columns).
    seed : LongTensor, shape (B,)
        The index each column's draws are keyed by (its tree's).
    time : Tensor, shape (B,), optional
        Each column's seed time (with ``edge_time``).
    edge_time : Tensor, shape (E,), optional
        ``A``'s edge times in its edge order.
    k, replace, weighted, strategy, window
        As :meth:`gs.Matrix.temporal_sample`'s (``weighted``: ``A``'s values).

    Returns
    -------
    gs.Matrix, shape (N, B)

    Examples
    --------
    >>> import torch, gsample as gs
    >>> H = gs.hetero.authors_papers()   # 2 authors write 3 papers; papers cite papers
    >>> papers = torch.tensor([0, 1, 2])
    >>> step = gs.compile(relation_temporal_sample)
    >>> s = step(H["cites"], papers, torch.arange(len(papers)), k=3)
    >>> s.shape                                          # (papers, seeds)
    (3, 3)
    """
    return A.temporal_sample(
        cols,
        k,
        time=time,
        edge_time=edge_time,
        seed=seed,
        probs=A if weighted else None,
        replace=replace,
        strategy=strategy,
        window=window,
    )


def _per_seed(given: Mapping, name: str, what: str, t: str, ids, dev) -> torch.Tensor:
    """``given[t]``: one ``what`` per seed of type ``t`` (shape ``ids``'), or a
    ``ValueError`` naming ``name``."""
    if t not in given:
        raise ValueError(f"{name}: no {what} for the seeds of type {t!r}")
    x = V.as_tensor(given[t], f"{name}[{t!r}]", dev)
    if x.dim() != 1 or x.numel() != ids.numel():
        raise ValueError(
            f"{name}[{t!r}]: expected one {what} per seed, shape ({ids.numel()},); "
            f"got {tuple(x.shape)}"
        )
    return x


_STEP_FNS = {"neighbors": relation_sample, "disjoint": relation_temporal_sample}


class SamplingMethods:
    """:class:`~gsample.hetero.HeteroGraph`'s sampling methods (a mixin: it reads the
    container's ``_rel``, ``_size``, ``_steps``, ``device``, ``edge_type`` and
    ``_seed_dict``)."""

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

    def step_sampler(self, step: str = "neighbors") -> CompiledSampler:
        """The compiled per-(hop, edge type) step this graph's sampling runs: ``gs.compile``
        of :func:`relation_sample` (``"neighbors"``: :meth:`sample_neighbors`) or of
        :func:`relation_temporal_sample` (``"disjoint"``: :meth:`sample_disjoint`), made once
        per graph and step.

        Its programs are cached per relation signature (device, values, ``N``) and static
        arguments (``k``, ``replace``, ``weighted``, ...): relations of one signature share
        one. ``backend_for(H[edge_type])`` names the backend its calls run on (``"cuda"``
        for a graph on a GPU where CuPy's kernels run, else ``"torch"``), ``traces`` counts
        its programs, and ``lowered(...)`` / ``gs.explain`` show them.

        Parameters
        ----------
        step : {"neighbors", "disjoint"}

        Returns
        -------
        gs.CompiledSampler

        Examples
        --------
        >>> import torch, gsample as gs
        >>> H = gs.hetero.authors_papers()   # 2 authors write 3 papers; papers cite papers
        >>> papers = torch.tensor([0, 1, 2])
        >>> s = H.sample_neighbors({"paper": papers}, [10, 5])
        >>> H.step_sampler().traces                 # one program per fanout here
        2
        >>> H.step_sampler().backend_for(H["writes"])
        'torch'
        >>> G = H.to("cuda")                       # CuPy installed  # doctest: +SKIP
        >>> G.step_sampler().backend_for(G["writes"])  # doctest: +SKIP
        'cuda'
        """
        if step not in STEPS:
            raise ValueError(f"step: expected one of {STEPS}, got {step!r}")
        sampler = self._steps.get(step)
        if sampler is None:
            sampler = self._steps[step] = gs_compile(_STEP_FNS[step])
        return sampler

    def _step(self, step: str, compiled: bool):
        """What a (hop, edge type) calls: :meth:`step_sampler` or the DSL function."""
        return self.step_sampler(step) if V.flag(compiled, "compile") else _STEP_FNS[step]

    # ------------------------------------------------------------------ neighbour sampling
    def sample_neighbors(
        self,
        seeds: Mapping[str, torch.Tensor],
        fanouts: Fanouts,
        replace: bool = False,
        weighted: bool = False,
        compile: bool = True,
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
        compile : bool
            Run each (hop, edge type) through the compiled :meth:`step_sampler` (default;
            on a GPU, the CUDA backend's kernels) or :func:`relation_sample` eagerly. The
            samples are the same.

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
        ``seeds[d]``. A (hop, edge type) is one call of :func:`relation_sample` (``H[(s, r,
        d)][:, seeds[d]].individual_sample(k)``), compiled or not. Uniform without
        replacement is exactly uniform over ``k``-subsets of a column's in-edges (gsample's
        ``individual_sample``).

        Examples
        --------
        >>> import torch, gsample as gs
        >>> H = gs.hetero.authors_papers()   # 2 authors write 3 papers; papers cite papers
        >>> papers = torch.tensor([0, 1, 2])
        >>> gs.manual_seed(0)
        >>> s = H.sample_neighbors({"paper": torch.tensor([0, 2])}, 5)
        >>> src, dst, eid = s["author", "writes", "paper"].edges()
        >>> src, dst                              # the authors of papers 0 and 2
        (tensor([0, 1]), tensor([0, 2]))
        >>> hops = H.sample_neighbors({"paper": papers}, [10, 5])     # two hops
        >>> len(hops)
        2
        """
        front = self._seed_dict(seeds)
        replace = V.flag(replace, "replace")
        weighted = V.flag(weighted, "weighted")
        step = self._step("neighbors", compile)
        hops, listed = self._fanout_hops(fanouts)
        reached = {t: ids for t, ids in front.items()}
        out = []
        for h, hop in enumerate(hops):
            sampled = {}
            for et, k in hop.items():
                sampled[et] = self._sample_relation(
                    step, et, front.get(et[2]), k, replace, weighted
                )
            out.append(sampled)
            if h + 1 < len(hops):
                front = new_nodes(sampled, reached)
                for t, ids in front.items():
                    reached[t] = torch.cat([reached[t], ids]) if t in reached else ids
        return out if listed else out[0]

    def _sample_relation(
        self,
        step,
        et: EdgeType,
        cols: torch.Tensor | None,
        k: int,
        replace: bool,
        weighted: bool,
    ) -> Matrix:
        """One (hop, edge type) of :meth:`sample_neighbors`: ``k`` in-edges of each of
        ``cols`` (this hop's frontier of type ``et[2]``, or None) along ``et`` by ``step``
        (:func:`relation_sample`, compiled or not); exactly one op ordinal, whatever the
        frontier."""
        if cols is None or cols.numel() == 0:
            next_op_key()  # the (hop, edge type)'s ordinal, unused
            return self._empty(et)
        m = self._rel[et]
        if k < 0:  # the step draws nothing: its ordinal is taken here
            next_op_key()
        # static: a relation without values samples uniformly (one program per case)
        return step(m, cols, k, replace, weighted and m.csc.values is not None)

    # ------------------------------------------------------------------ disjoint / temporal
    def relation_times(
        self,
        node_time: Mapping[str, torch.Tensor] | None = None,
        edge_time: Mapping[EdgeType, torch.Tensor] | None = None,
        edge_ids: Mapping[EdgeType, torch.Tensor] | None = None,
    ) -> dict[EdgeType, torch.Tensor]:
        """Each relation's edge times in its matrix's edge order (what
        :meth:`sample_disjoint` takes as ``edge_time``), from node- or edge-level times.

        Parameters
        ----------
        node_time : dict, optional
            ``{node_type: Tensor (num_nodes[t],)}``: node-level time. An edge ``s -> d`` of
            type ``(s, r, d)`` gets its source's time (a neighbour is allowed when its own
            time is), for the edge types whose source type has a time.
        edge_time : dict, optional
            ``{edge_type: Tensor (E,)}``: edge-level time, one per edge id (position in the
            relation's ``edge_index``). Not with ``node_time``.
        edge_ids : dict, optional
            ``{edge_type: LongTensor}``: for a relation holding a subset of its edges (PyG's
            ``weight_attr``: the positive ones), the ``edge_index`` position of each of the
            matrix's edge ids (``edge_time`` is read there).

        Returns
        -------
        dict
            ``{edge_type: Tensor (E_et,)}`` on the graph's device, for the edge types with a
            time (the others sample without one). Compute it once and pass the same tensors
            to every call: the op keeps a per-column time order keyed on each tensor.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> H = gs.hetero.authors_papers()   # 2 authors write 3 papers; papers cite papers
        >>> year = torch.tensor([2000, 2001, 2002])
        >>> times = H.relation_times(node_time={"paper": year})
        >>> sorted(times) == sorted(et for et in H.edge_types if et[0] == "paper")
        True
        """
        if node_time is not None and edge_time is not None:
            raise ValueError("edge_time: give node-level or edge-level times, not both")
        out = {}
        for et, m in self._rel.items():
            if node_time is not None and et[0] in node_time:
                t = node_time[et[0]]
                src = m.csc.global_rows()
                if t.dim() != 1 or t.numel() != self._num_nodes[et[0]]:
                    raise ValueError(
                        f"node_time[{et[0]!r}]: expected one time per node, shape "
                        f"({self._num_nodes[et[0]]},); got {tuple(t.shape)}"
                    )
                out[et] = t.to(self.device)[src]
            elif edge_time is not None and et in edge_time:
                t = edge_time[et]
                eid = m.csc.eid_tensor()
                if edge_ids is not None and et in edge_ids:
                    eid = edge_ids[et].to(eid.device)[eid]
                if t.dim() != 1 or (eid.numel() and int(eid.max()) >= t.numel()):
                    raise ValueError(
                        f"edge_time[{et!r}]: expected one time per edge of the relation, got "
                        f"shape {tuple(t.shape)}"
                    )
                out[et] = t.to(self.device)[eid]
        return out

    def sample_disjoint(
        self,
        seeds: Mapping[str, torch.Tensor],
        fanouts: Fanouts,
        seed_time: Mapping[str, torch.Tensor] | None = None,
        edge_time: Mapping[EdgeType, torch.Tensor] | None = None,
        seed_index: Mapping[str, torch.Tensor] | None = None,
        replace: bool = False,
        weighted: bool = False,
        strategy: str = "uniform",
        window=None,
        compile: bool = True,
    ) -> tuple[list[dict[EdgeType, Matrix]], list[dict[str, torch.Tensor]]]:
        """Disjoint (and temporal) relation-typed sampling, PyG's ``disjoint=True``: every
        seed grows its own tree across the node types.

        Seeds are numbered consecutively across ``seeds``' types, in the dict's order (PyG's
        batch: the seeds of the first type are ``0 .. B_1 - 1``, and so on); a frontier is a
        list of *(seed slot, node)* pairs per node type, and a node reached by two seeds is
        two pairs. At hop ``h``, each edge type ``(s, r, d)`` draws ``k`` in-edges of every
        pair of type ``d`` first reached (by its seed) at hop ``h - 1``, with
        :meth:`gs.Matrix.temporal_sample`: among the edges allowed at the pair's seed time
        when the edge type has times, keyed by its seed. The next frontier of type ``s`` is
        the pairs (seed, source) not yet reached by their seed (a per-seed unique, where
        :meth:`sample_neighbors` has a global one), by seed slot, then node id.

        Parameters
        ----------
        seeds : dict
            ``{node_type: LongTensor (B_t,)}``; repeats allowed (each its own tree).
        fanouts : int, dict, or list of them
            As :meth:`sample_neighbors`' (``-1``: every allowed in-edge).
        seed_time : dict, optional
            ``{node_type: Tensor (B_t,)}``: each seed's time, for every type of ``seeds``
            (needed with ``edge_time``).
        edge_time : dict, optional
            ``{edge_type: Tensor (E,)}`` in each relation's edge order
            (:meth:`relation_times`): an edge is allowed at time ``t`` when its time is
            ``<= t``. Edge types left out sample without time.
        seed_index : dict, optional
            ``{node_type: LongTensor (B_t,)}``: the index each seed's draws are keyed by
            (default its slot). Seed ``i`` samples the tree it samples alone (``seeds``
            holding it alone) with its index, in the same mini-batch scope.
        replace, weighted : bool
            As :meth:`sample_neighbors`' (weights: the relations' values).
        strategy : {"uniform", "last"}
            ``"last"``: the ``k`` most recent allowed edges (needs times).
        window : number, optional
            Only edges of time in ``(t - window, t]``.
        compile : bool
            Run each (hop, edge type) through the compiled :meth:`step_sampler`
            ``("disjoint")`` (default) or :func:`relation_temporal_sample` eagerly; the
            samples are the same.

        Returns
        -------
        blocks : list of dict
            One ``{edge_type: gs.Matrix}`` per hop: columns the hop's frontier of the
            destination type (repeats for nodes of several trees), rows source ids.
        slots : list of dict
            One ``{node_type: LongTensor}`` per hop: the seed slot of each node of the hop's
            frontier of that type (``blocks[h][et]``'s column ``c`` is of seed
            ``slots[h][et[2]][c]``).

        Notes
        -----
        Every (hop, edge type) takes one op ordinal, in hop order and sorted edge-type order,
        whether or not it has a frontier, as :meth:`sample_neighbors`. Semantics: pyg-lib's
        heterogeneous disjoint sampler (an edge type whose source type has no node time, or
        that has no edge time, samples without a time constraint).

        Examples
        --------
        >>> import torch, gsample as gs
        >>> H = gs.hetero.authors_papers()   # 2 authors write 3 papers; papers cite papers
        >>> papers = torch.tensor([0, 1, 2])
        >>> year, since = torch.tensor([2000, 2001, 2002]), torch.tensor([1999, 2000])
        >>> times = H.relation_times(node_time={"paper": year, "author": since})
        >>> blocks, slots = H.sample_disjoint({"paper": papers}, [10, 5],
        ...                                   seed_time={"paper": year[papers]},
        ...                                   edge_time=times)
        """
        front = self._seed_dict(seeds)
        replace = V.flag(replace, "replace")
        weighted = V.flag(weighted, "weighted")
        step = self._step("disjoint", compile)
        hops, _ = self._fanout_hops(fanouts)
        if strategy not in ("uniform", "last"):
            raise ValueError(f"strategy: must be one of ('uniform', 'last'), got {strategy!r}")
        edge_time = dict(edge_time or {})
        for et in edge_time:
            self.edge_type(et, "edge_time key")
        dev, n = self.device, max(self._size, 1)
        # consecutive slots across the seed types, in the dict's order (PyG's batch)
        slot, times, index, at = {}, [], [], 0
        for t, ids in front.items():
            slot[t] = torch.arange(at, at + ids.numel(), device=dev)
            at += ids.numel()
            if seed_time is not None:
                times.append(_per_seed(seed_time, "seed_time", "time", t, ids, dev))
            if seed_index is not None:
                si = _per_seed(seed_index, "seed_index", "index", t, ids, dev)
                index.append(si.to(torch.int64))
        if edge_time and seed_time is None:
            raise ValueError("seed_time: temporal sampling (edge_time) needs each seed's time")
        flat_time = torch.cat(times) if times else None
        flat_index = torch.cat(index) if index else None
        seen = {t: slot[t] * n + ids for t, ids in front.items()}
        out_blocks, out_slots = [], []
        for h, hop in enumerate(hops):
            sampled = {}
            for et, k in hop.items():
                d = et[2]
                cols = front.get(d)
                own = slot.get(d)
                if cols is None:
                    cols = own = torch.zeros(0, dtype=torch.int64, device=dev)
                m = self._rel[et]
                timed = et in edge_time and flat_time is not None
                sampled[et] = step(
                    m,
                    cols,
                    own if flat_index is None else flat_index[own],
                    flat_time[own] if timed else None,
                    edge_time[et] if timed else None,
                    k=k,
                    replace=replace,
                    weighted=weighted and m.csc.values is not None,
                    strategy=strategy if timed else "uniform",
                    window=window if timed else None,
                )
            out_blocks.append(sampled)
            out_slots.append(dict(slot))
            if h + 1 == len(hops):
                break
            front, slot = next_pairs(sampled, slot, seen, n)
        return out_blocks, out_slots

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


def new_nodes(sampled: dict, reached: dict) -> dict:
    """Per source type: the rows of a hop's matrices (``sampled``: ``{edge type: Matrix}``)
    not in ``reached[type]``, ascending: the next frontier of a shared (not disjoint) hop.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> H = gs.hetero.authors_papers()   # 2 authors write 3 papers; papers cite papers
    >>> seeds = torch.tensor([0, 2])
    >>> gs.manual_seed(0)
    >>> sampled = H.sample_neighbors({"paper": seeds}, 5)
    >>> new_nodes(sampled, {"paper": seeds})          # {"author": ids, "paper": ids}
    {'author': tensor([0, 1]), 'paper': tensor([1])}
    """
    rows: dict = {}
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


def next_pairs(sampled: dict, slot: dict, seen: dict, n: int) -> tuple:
    """A disjoint hop's next frontier: per source type, the pairs (seed slot, source) of the
    hop's edges (``sampled``: ``{edge type: Matrix}``, its columns' slots ``slot[dst
    type]``) not reached by their seed before (``seen[type]``: keys ``slot * n + node``,
    updated), by slot then node.

    Returns
    -------
    tuple
        ``(nodes, slots)``: ``{node type: LongTensor}`` each, of one shape per type.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> H = gs.hetero.authors_papers()   # 2 authors write 3 papers; papers cite papers
    >>> gs.manual_seed(0)
    >>> sampled = H.sample_neighbors({"paper": torch.tensor([0, 2])}, 5)
    >>> front, slots = next_pairs(sampled, {"paper": torch.arange(2)}, {}, 3)
    >>> front                                         # per type, the pairs' nodes ...
    {'author': tensor([0, 1]), 'paper': tensor([1, 2])}
    >>> slots                                         # ... and their seeds' slots
    {'author': tensor([0, 1]), 'paper': tensor([0, 0])}
    """
    pairs: dict = {}
    for et, s in sampled.items():  # (seed slot, source) of each sampled edge
        own = slot.get(et[2])
        if own is None:  # no frontier of the destination type this hop
            continue
        p = torch.repeat_interleave(own, s.degree(axis=0)) * n + s.edges()[0]
        pairs.setdefault(et[0], []).append(p)
    front, slots = {}, {}
    for t, parts in pairs.items():
        p = torch.unique(torch.cat(parts))
        if t in seen:
            p = p[~torch.isin(p, seen[t])]
            seen[t] = torch.cat([seen[t], p])
        else:
            seen[t] = p
        front[t] = torch.remainder(p, n)
        slots[t] = torch.div(p, n, rounding_mode="floor")
    return front, slots


__all__ = [
    "STEPS",
    "SamplingMethods",
    "new_nodes",
    "next_pairs",
    "relation_sample",
    "relation_temporal_sample",
]
