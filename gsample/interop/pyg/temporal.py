"""Disjoint and temporal neighbour sampling, PyG's way, as a gsample DSL program.

PyG's ``disjoint=True``: every seed grows its own tree. A node reached from two seeds
appears twice in the batch, each copy knowing its seed (``batch.batch``: for every sampled
node, the index of its seed in the mini-batch). Temporal sampling (``time_attr``) is always
disjoint: each node of a seed's tree carries the seed's time, and only edges (or
neighbours) of time ``<=`` that time are sampled.

:func:`disjoint_sample` is the program: its frontier is a list of *(seed slot, node)*
pairs, the column slice takes their nodes as independent columns (a node of two trees is
two columns), :meth:`gs.Matrix.temporal_sample` draws each column's edges among those
allowed at its seed's time, keyed by its seed (so a seed's tree does not depend on the
other seeds'), and the next frontier is the pairs first reached by their seed (a per-seed
unique, where PyG's shared mode has a global one). :func:`disjoint_pyg_sample` maps its
output to PyG's layout (``node``, local ``row`` / ``col``, ``edge``, ``batch``).
:class:`TemporalSpec` reads PyG's arguments (``disjoint``, ``time_attr``,
``temporal_strategy``, ``input_time``) off a homogeneous ``Data``, and
:class:`DisjointSampler` runs the program for a loader.

Semantics (pyg-lib's): with ``time_attr`` naming a node-level attribute, a neighbour is
allowed when its time is ``<=`` its seed's time; naming an edge-level one, an edge is allowed
when its time is. A seed's time is ``input_time`` (the loader's, per input node) or, for
node-level time, the seed node's own time. ``temporal_strategy="uniform"``: uniformly among
the allowed; ``"last"``: the ``k`` most recent allowed (largest ``(time, edge id)``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import torch

from gsample.base import validate as V
from gsample.interop.pyg.data import PygSample, _local, new_keys
from gsample.matrix.sparse import Matrix

#: PyG's temporal strategies
STRATEGIES = ("uniform", "last")


def disjoint_sample(
    A,
    seeds,
    seed_time=None,
    edge_time=None,
    seed_index=None,
    num_neighbors=(25, 10),
    replace: bool = False,
    weighted: bool = False,
    strategy: str = "uniform",
    window=None,
):
    """PyG's disjoint (and temporal) neighbour sampling in the DSL: one tree per seed.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph.
    seeds : LongTensor, shape (B,)
        The mini-batch's seed nodes (repeats allowed: each its own tree).
    seed_time : Tensor, shape (B,), optional
        Each seed's time (with ``edge_time``): its tree holds only edges of time ``<=`` it.
    edge_time : Tensor, shape (E,), optional
        The time of each of ``A``'s edges in ``A``'s edge order (``A.edge_time[A.edges()[2]]``;
        node-level time: ``node_time[A.edges()[0]]``, the neighbour's).
    seed_index : LongTensor, shape (B,), optional
        The index each seed's draws are keyed by (default ``arange(B)``, its position):
        seed ``i`` of a batch samples what this program samples for ``seeds[i:i + 1]`` alone
        with ``seed_index[i:i + 1]``, in the same mini-batch scope.
    num_neighbors : sequence of int
        Neighbours per node at each hop; ``-1``: every allowed one.
    replace : bool
        Sample with replacement.
    weighted : bool
        Draw in proportion to ``A``'s values.
    strategy : {"uniform", "last"}
        ``"last"``: the most recent allowed edges (needs times).
    window : number, optional
        Only edges of time in ``(seed time - window, seed time]``.

    Returns
    -------
    blocks : list of gs.Matrix
        ``blocks[h]``'s columns are hop ``h``'s frontier: the seeds (``h = 0``), then the
        pairs first reached by their seed at hop ``h``, by seed slot then node id; a node of
        two trees is two columns.
    slots : list of LongTensor
        ``slots[h][c]``: the slot (position in ``seeds``) of the seed owning column ``c``.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> blocks, slots = disjoint_sample(A, seeds, num_neighbors=(10, 5))
    >>> len(blocks), slots[0]                                # one tree per seed
    (2, tensor([0, 1, 2]))
    >>> s = disjoint_pyg_sample((blocks, slots), seeds)      # s.batch: each node's seed
    """
    slot = A.positions(seeds)  # 0 .. B - 1
    nodes, time, state = seeds, seed_time, None
    blocks, slots = [], []
    for hop, k in enumerate(num_neighbors):
        s = A.temporal_sample(
            nodes,
            k,
            time=time,
            edge_time=edge_time,
            seed=slot if seed_index is None else seed_index[slot],
            probs=A if weighted else None,
            replace=replace,
            strategy=strategy,
            window=window,
        )
        blocks.append(s)
        slots.append(slot)
        if hop + 1 == len(num_neighbors):
            break
        # the pairs (seed slot, neighbour) first reached by their seed, each with its time
        nodes, slot, carried, state = s.first_reached(slot, state, time)
        time = None if time is None else carried
    return blocks, slots


@dataclass
class DisjointSample(PygSample):
    """A disjoint mini-batch in PyG's layout: :class:`PygSample` and ``batch``.

    Attributes
    ----------
    batch : LongTensor, shape (n,)
        For each node of ``node``, the slot of its seed (``node[:B]`` are the seeds, so
        ``batch[:B] == arange(B)``).
    """

    batch: torch.Tensor


def disjoint_pyg_sample(out, seeds: torch.Tensor) -> DisjointSample:
    """Map :func:`disjoint_sample`'s output to PyG's disjoint layout.

    ``node`` is the seeds in order, then each hop's new pairs (by seed slot, then node id,
    as the program's frontiers); ``batch`` each node's seed slot; edges hop by hop, column by
    column, ``row`` / ``col`` the local ids of the edge's source and destination *copies*
    (the ones of the edge's seed); ``num_sampled_nodes`` / ``num_sampled_edges`` per hop.

    Parameters
    ----------
    out : (list of gs.Matrix, list of LongTensor)
        :func:`disjoint_sample`'s ``(blocks, slots)``.
    seeds : LongTensor, shape (B,)
        Its seeds.

    Returns
    -------
    DisjointSample

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> s = disjoint_pyg_sample(disjoint_sample(A, seeds, num_neighbors=(3,)), seeds)
    >>> bool((s.batch[: len(seeds)] == torch.arange(len(seeds))).all())
    True
    """
    blocks, slots = out
    seeds = seeds.to(torch.int64)
    B = seeds.numel()
    slot0 = torch.arange(B, device=seeds.device)
    n = blocks[0].num_nodes if blocks else int(seeds.max()) + 1 if B else 1
    pairs = [slot0 * n + seeds]
    seen = pairs[0]
    src, dst, edges, weights = [], [], [], []
    num_nodes, num_edges = [B], []
    weighted = any(b.csc.values is not None for b in blocks)
    for block, slot in zip(blocks, slots, strict=True):
        csc = block.csc
        edge_slot = torch.repeat_interleave(slot, csc.degrees(), output_size=csc.nnz)
        s = edge_slot * n + csc.global_rows()
        d = edge_slot * n + csc.global_cols()[csc.edge_cols()]
        new = new_keys(s, seen)
        seen = torch.cat([seen, new])
        pairs.append(new)
        src.append(s)
        dst.append(d)
        edges.append(csc.eid_tensor())
        if weighted:
            weights.append(csc.value_tensor())
        num_nodes.append(new.numel())
        num_edges.append(s.numel())
    pair = torch.cat(pairs)
    none = seeds.new_empty(0)
    s, d = (torch.cat(x) if x else none for x in (src, dst))
    return DisjointSample(
        node=torch.remainder(pair, n),
        row=_local(pair, s),
        col=_local(pair, d),
        edge=torch.cat(edges) if edges else none,
        weight=torch.cat(weights) if weighted else None,
        batch_size=B,
        num_sampled_nodes=num_nodes,
        num_sampled_edges=num_edges,
        batch=torch.div(pair, n, rounding_mode="floor"),
    )


def _attr_kind(data, name: str) -> str | None:
    """``"node"`` / ``"edge"``: whether ``data[name]`` is a node- or edge-level attribute
    (PyG's ``is_node_attr`` / ``is_edge_attr``), None when ``data`` has no such tensor."""
    value = getattr(data, name, None)
    if not isinstance(value, torch.Tensor):
        return None
    if data.is_node_attr(name):
        return "node"
    if data.is_edge_attr(name):
        return "edge"
    return None


def _as_time(t: torch.Tensor, name: str) -> torch.Tensor:
    """Times as the sampler compares them: int64 (integers) or float64, no NaN."""
    if (
        t.dtype == torch.bool
        or t.is_complex()
        or not (t.is_floating_point() or t.dtype in V.INT_DTYPES)
    ):
        raise TypeError(f"{name}: times must be integer or floating point, got dtype {t.dtype}")
    if t.is_floating_point() and bool(torch.isnan(t).any()):
        raise ValueError(f"{name}: contains NaN (not a time)")
    return t.to(torch.float64 if t.is_floating_point() else torch.int64)


@dataclass(frozen=True)
class TemporalSpec:
    """PyG's disjoint / temporal arguments, read off a homogeneous ``Data`` (a ``HeteroData``:
    :class:`HeteroTemporalSpec`).

    Attributes
    ----------
    disjoint : bool
        Always True (a spec exists only for disjoint or temporal sampling).
    time_attr : str or None
        PyG's ``time_attr``.
    node_time : Tensor, shape (N,), or None
        Node-level time (int64 or float64).
    edge_time : Tensor, shape (E,), or None
        Edge-level time per ``data.edge_index`` column (int64 or float64).
    strategy : {"uniform", "last"}
        PyG's ``temporal_strategy``.
    """

    disjoint: bool
    time_attr: str | None
    node_time: torch.Tensor | None
    edge_time: torch.Tensor | None
    strategy: str

    @classmethod
    def of(
        cls,
        data,
        disjoint=False,
        time_attr=None,
        temporal_strategy="uniform",
        loader: str = "NeighborLoader",
    ) -> TemporalSpec | None:
        """The spec of PyG's arguments for ``data``, or None for PyG's shared sampling
        (``disjoint=False`` and no ``time_attr``). Raises, naming the argument: a
        ``disjoint`` that is not a bool, a ``time_attr`` that names no node- or edge-level
        tensor of ``data`` (PyG's words), a ``temporal_strategy`` other than ``"uniform"`` /
        ``"last"``. A ``HeteroData`` gives a :class:`HeteroTemporalSpec` (per-type times);
        a ``(FeatureStore, GraphStore)`` must be read into its graph first (``loader`` names
        the loader in that message).

        Examples
        --------
        >>> import torch
        >>> from torch_geometric.data import Data
        >>> data = Data(edge_index=torch.tensor([[0, 1], [1, 2]]), time=torch.arange(3),
        ...             num_nodes=3)
        >>> spec = TemporalSpec.of(data, time_attr="time")     # a node-level attribute
        >>> spec.node_time.shape == (data.num_nodes,) and spec.edge_time is None
        True
        """
        disjoint = V.flag(disjoint, "disjoint")
        if isinstance(temporal_strategy, enum.Enum):
            temporal_strategy = temporal_strategy.value
        if temporal_strategy not in STRATEGIES:
            raise ValueError(
                f"temporal_strategy: expected one of {STRATEGIES}, got {temporal_strategy!r}"
            )
        if time_attr is not None and not isinstance(time_attr, str):
            raise TypeError(
                f"time_attr: the name of a node or edge attribute (a str) or None, got "
                f"{type(time_attr).__name__}"
            )
        if not disjoint and time_attr is None:
            return None
        if isinstance(data, (tuple, list)):  # the loaders read stores into a graph first
            what = "time_attr" if time_attr is not None else "disjoint"
            raise TypeError(
                f"{what}: gsample.pyg.{loader} reads a (FeatureStore, GraphStore) into its "
                "graph first (gsample.interop.pyg.stores.as_data, with time_attr): pass that"
            )
        if hasattr(data, "edge_types"):
            return HeteroTemporalSpec.of_hetero(data, time_attr, temporal_strategy)
        node_time = edge_time = None
        if time_attr is not None:
            kind = _attr_kind(data, time_attr)
            if kind is None:
                raise ValueError(
                    f"time_attr: the time attribute '{time_attr}' is neither a node-level "
                    "or edge-level attribute"
                )
            t = getattr(data, time_attr)
            if t.dim() != 1:
                raise ValueError(
                    f"time_attr: data.{time_attr} must hold one time per "
                    f"{kind}, got shape {tuple(t.shape)}"
                )
            if kind == "node":
                node_time = _as_time(t, f"time_attr (data.{time_attr})")
            else:
                edge_time = _as_time(t, f"time_attr (data.{time_attr})")
        return cls(True, time_attr, node_time, edge_time, temporal_strategy)

    @property
    def temporal(self) -> bool:
        return self.time_attr is not None

    def reference_time(self) -> torch.Tensor:
        """A tensor of the data's times (their dtype is what ``input_time`` must match)."""
        return self.node_time if self.node_time is not None else self.edge_time

    def graph_time(self, A: Matrix, edge_ids: torch.Tensor | None = None):
        """The time of each of ``A``'s edges in its edge order (what
        :meth:`gs.Matrix.temporal_sample` takes), or None without ``time_attr``.

        ``edge_ids``: the position in ``data.edge_index`` of each of ``A``'s edge ids (a
        graph of the positive-weight edges, PyG's ``weight_attr``); default they are those
        positions. Node-level time: the time of each edge's source (the neighbour)."""
        if self.node_time is not None:
            return self.node_time.to(A.device)[A.csc.global_rows()]
        if self.edge_time is not None:
            eid = A.csc.eid_tensor()
            if edge_ids is not None:
                eid = edge_ids.to(eid.device)[eid]
            return self.edge_time.to(A.device)[eid]
        return None

    def input_time(self, input_time, num_inputs: int, name: str = "input_time"):
        """PyG's ``input_time`` (one time per input node), checked and converted as the
        data's times (None stays None). Without ``time_attr`` it is PyG's error."""
        check_input_time(self, input_time)
        if input_time is None:
            return None
        t = V.as_tensor(input_time, name, None)
        if t.dim() != 1 or t.numel() != num_inputs:
            raise ValueError(
                f"{name}: expected one time per input node, shape ({num_inputs},); got "
                f"{tuple(t.shape)}"
            )
        ref = self.reference_time()
        t = _as_time(t, name)
        if t.is_floating_point() != ref.is_floating_point():
            raise TypeError(
                f"{name}: dtype {t.dtype} but data.{self.time_attr} is {ref.dtype}; give "
                "both as integers or both as floating point (times are compared exactly)"
            )
        return t.cpu()

    def seed_time(self, seeds: torch.Tensor, given: torch.Tensor | None):
        """Each seed's time: ``given`` (``input_time``'s entries), else, for node-level time,
        the seed's own; None without ``time_attr``. Edge-level time needs ``given``."""
        if not self.temporal:
            return None
        if given is not None:
            return given
        if self.node_time is None:
            raise ValueError(
                f"input_time: edge-level temporal sampling (time_attr='{self.time_attr}' "
                "names an edge attribute) needs each seed's time: give input_time"
            )
        return self.node_time[seeds.to(self.node_time.device)]


@dataclass(frozen=True)
class HeteroTemporalSpec(TemporalSpec):
    """PyG's disjoint / temporal arguments, read off a ``HeteroData`` (:meth:`TemporalSpec.of`).

    As PyG's heterogeneous ``NeighborSampler``: ``time_attr`` names a node-level attribute
    (held by some node types) or an edge-level one (held by some edge types), never both.
    Node-level: a neighbour of type ``s`` (an edge type ``(s, r, d)``) is allowed when its
    time is ``<=`` its seed's; edge types whose source type has no time sample without a
    time constraint, as pyg-lib. Edge-level: the edge types holding the attribute filter by
    edge time, the others sample without one.

    Attributes
    ----------
    node_time : dict or None
        ``{node_type: Tensor (num_nodes[t],)}`` of the node types holding ``time_attr``.
    edge_time : dict or None
        ``{edge_type: Tensor (E,)}`` of the edge types holding it (one per edge id).

    Examples
    --------
    >>> import torch
    >>> from torch_geometric.data import HeteroData
    >>> hetero_data = HeteroData()
    >>> hetero_data["author"].num_nodes, hetero_data["paper"].num_nodes = 2, 3
    >>> hetero_data["author"].time = torch.tensor([1999, 2000])
    >>> hetero_data["paper"].time = torch.tensor([2000, 2001, 2002])
    >>> hetero_data["author", "writes", "paper"].edge_index = torch.tensor([[0, 1], [1, 2]])
    >>> spec = TemporalSpec.of(hetero_data, time_attr="time")
    >>> sorted(spec.node_time)                     # the node types with a time
    ['author', 'paper']
    """

    node_time: dict | None
    edge_time: dict | None

    @classmethod
    def of_hetero(cls, data, time_attr, temporal_strategy) -> HeteroTemporalSpec:
        """The spec of a ``HeteroData`` (``TemporalSpec.of`` has checked the arguments)."""
        node_time = edge_time = None
        if time_attr is not None:
            nodes = {s._key: s[time_attr] for s in data.node_stores if time_attr in s}
            edges = {s._key: s[time_attr] for s in data.edge_stores if time_attr in s}
            if nodes and edges:
                raise ValueError(
                    f"time_attr: The time attribute '{time_attr}' holds both node-level and "
                    "edge-level information"
                )
            if not nodes and not edges:
                raise ValueError(
                    f"time_attr: the time attribute '{time_attr}' is neither a node-level "
                    "or edge-level attribute"
                )
            times = {}
            for key, t in {**nodes, **edges}.items():
                where = f"time_attr (data[{key!r}].{time_attr})"
                if not isinstance(t, torch.Tensor) or t.dim() != 1:
                    got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
                    raise ValueError(f"{where}: must hold one time per node or edge, got {got}")
                if key in nodes:
                    want = data[key].num_nodes
                else:
                    want = data[key].edge_index.shape[1] if "edge_index" in data[key] else None
                if want is not None and t.numel() != want:
                    raise ValueError(
                        f"{where}: expected one time per "
                        f"{'node' if key in nodes else 'edge'}, shape ({want},); got "
                        f"{tuple(t.shape)}"
                    )
                times[key] = _as_time(t, where)
            if len({t.is_floating_point() for t in times.values()}) > 1:
                raise TypeError(
                    f"time_attr: data's '{time_attr}' tensors mix integer and floating-point "
                    "times (compared exactly: give all of them as one kind)"
                )
            if nodes:
                node_time = {k: times[k] for k in nodes}
            else:
                edge_time = {k: times[k] for k in edges}
        return cls(True, time_attr, node_time, edge_time, temporal_strategy)

    def reference_time(self) -> torch.Tensor:
        return next(iter((self.node_time or self.edge_time).values()))

    def graph_time(self, H, edge_ids: dict | None = None) -> dict:
        """Each relation's edge times in ``H[edge_type]``'s edge order
        (:meth:`gs.HeteroGraph.relation_times`), ``{}`` without ``time_attr``.

        ``edge_ids``: ``{edge_type: LongTensor}``, the ``edge_index`` position of each edge
        id of a relation holding a subset of its edges (``weight_attr``)."""
        if not self.temporal:
            return {}
        return H.relation_times(self.node_time, self.edge_time, edge_ids)

    def seed_time(self, seeds: dict, given: dict | None) -> dict | None:
        """Each seed type's times: ``given`` (``{node_type: times}``, the loader's
        ``input_time``), else, for node-level time, the seeds' own; None without
        ``time_attr``. A seed type without time needs ``given``."""
        if not self.temporal:
            return None
        out = {}
        for t, ids in seeds.items():
            if given is not None and t in given:
                out[t] = given[t]
            elif self.node_time is not None and t in self.node_time:
                out[t] = self.node_time[t][ids.to(self.node_time[t].device)]
            else:
                why = (
                    f"node type {t!r} has no '{self.time_attr}'"
                    if self.node_time is not None
                    else f"time_attr='{self.time_attr}' names an edge attribute"
                )
                raise ValueError(
                    f"input_time: temporal sampling needs each seed's time, and {why}: "
                    "give input_time (edge_label_time)"
                )
        return out


def check_input_time(spec: TemporalSpec | None, input_time) -> None:
    """PyG's ``ValueError`` for an ``input_time`` without ``time_attr`` (``spec``: the
    loader's :class:`TemporalSpec`, None for shared sampling)."""
    if input_time is not None and (spec is None or not spec.temporal):
        raise ValueError(
            "Received conflicting 'input_time' and 'time_attr' arguments: "
            "'input_time' is set while 'time_attr' is not set."
        )


class DisjointSampler:
    """Runs :func:`disjoint_sample` for a loader: ``sampler.sample(seeds, seed_time)``.

    Parameters
    ----------
    A : gs.Matrix
        The graph sampled.
    fn : callable
        :func:`disjoint_sample` with its static arguments bound (compiled or not):
        ``fn(A, seeds, seed_time, edge_time)``.
    spec : TemporalSpec
        The loader's arguments.
    edge_ids : LongTensor, optional
        As :meth:`TemporalSpec.graph_time`.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> import functools
    >>> from torch_geometric.data import Data
    >>> from gsample.base.random import batch_scope
    >>> data = Data(edge_index=torch.stack(A.edges()[:2]), num_nodes=100, time=torch.arange(100))
    >>> spec = TemporalSpec.of(data, time_attr="time")
    >>> fn = functools.partial(gs.compile(disjoint_sample), num_neighbors=(10, 5))
    >>> sampler = DisjointSampler(A, fn, spec)
    >>> with batch_scope(0, 0):                                 # epoch seed 0, mini-batch 0
    ...     s = sampler.sample(seeds, spec.seed_time(seeds, None))   # s.batch: the trees
    >>> s.batch[:3]
    tensor([0, 1, 2])
    """

    def __init__(self, A: Matrix, fn, spec: TemporalSpec, edge_ids=None):
        self.A, self.fn, self.spec = A, fn, spec
        self.edge_time = spec.graph_time(A, edge_ids)  # once: the op sorts it once per graph

    def sample(self, seeds: torch.Tensor, seed_time: torch.Tensor | None) -> DisjointSample:
        """The mini-batch of ``seeds`` (global ids, on the graph's device) whose seeds have
        times ``seed_time`` (None: no time). Call it inside the mini-batch's
        ``batch_scope``."""
        if seed_time is not None:
            seed_time = seed_time.to(self.A.device)
        if self.edge_time is None:
            out = self.fn(self.A, seeds)
        else:
            out = self.fn(self.A, seeds, seed_time, self.edge_time)
        return disjoint_pyg_sample(out, seeds)


__all__ = [
    "STRATEGIES",
    "DisjointSample",
    "DisjointSampler",
    "HeteroTemporalSpec",
    "TemporalSpec",
    "check_input_time",
    "disjoint_pyg_sample",
    "disjoint_sample",
]
