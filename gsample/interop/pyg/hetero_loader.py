"""Heterogeneous mini-batches for ``gsample.pyg``'s loaders: a PyG ``HeteroData`` sampled by
a :class:`gs.HeteroGraph` (PyG's heterogeneous ``NeighborLoader`` and ``LinkNeighborLoader``).

:class:`HeteroBatches` holds the graph and the sampling options: it turns seeds of one or
more node types into PyG's ``HeteroSamplerOutput`` (:meth:`HeteroBatches.sample`) and a
node-level output into PyG's ``HeteroData`` batch (:meth:`HeteroBatches.filter`, PyG's
``NodeLoader.filter_fn`` with PyG's own ``filter_hetero_data``, or a ``join`` of
:mod:`gsample.interop.pyg.stores` for ``(FeatureStore, GraphStore)`` input).
:class:`HeteroSampler` is the ``BaseSampler`` PyG's ``LinkLoader`` calls (keys, negatives).

Sampling is :meth:`gs.HeteroGraph.sample_neighbors` with PyG's hops: at hop ``h`` every edge
type ``(s, r, d)`` draws ``k`` in-neighbours of each node of type ``d`` first reached at hop
``h - 1`` (the seeds at hop 0), without replacement unless ``replace`` (``k = -1``: all of
them). Each (hop, edge type) is one call of a compiled DSL step on the relation's matrix
(:meth:`gs.HeteroGraph.step_sampler`: the slice of the frontier's columns and
``individual_sample``, fused, one program per relation signature and fanout, cached on the
graph), so that on a GPU it runs the CUDA backend's kernels; with ``compile=False`` the same
step runs eagerly, drawing the same samples. Each (hop, edge type) is one op of the random
stream, edge types in sorted order, whether or not it has seeds; the loaders run each
mini-batch in ``batch_scope(epoch_seed, key)`` (docs/architecture.md §3), so its draws depend
on the seed, the epoch and the key only.

A batch is PyG's: per node type ``n_id`` (the seeds first, then each hop's new nodes in
ascending id order) and ``num_sampled_nodes`` (``hops + 1`` counts); per edge type
``edge_index`` (source, destination in local ids), ``e_id`` (positions in
``data[edge_type].edge_index``) and ``num_sampled_edges``; ``input_id`` and ``batch_size`` on
the input node type; the data's attributes sliced by PyG's ``filter_hetero_data``. Subgraph
types (``subgraph_type``), the nodes being the same for all three with the same seed:

* ``"directional"``: the sampled edges;
* ``"bidirectional"``: PyG's ``HeteroSamplerOutput.to_bidirectional`` (:func:`to_bidirectional`):
  an edge type and its reverse type (``rev_<relation>``, or the one edge type going back)
  each get the union of their sampled edges and the other's reversed, coalesced; their
  ``e_id`` (and so their edge attributes) are dropped, as PyG's, and ``num_sampled_*`` are
  None;
* ``"induced"``: every edge of each edge type between two sampled nodes (with ``e_id``); no
  hop counts.

Disjoint and temporal sampling (a :class:`~gsample.interop.pyg.temporal.HeteroTemporalSpec`:
``disjoint``, ``time_attr``, ``temporal_strategy``) is :meth:`gs.HeteroGraph.sample_disjoint`
(pyg-lib's semantics): every seed grows its own tree, seeds numbered consecutively across
their types; each (hop, edge type) is one ``temporal_sample`` op (one ordinal) drawing each
column's in-edges among those allowed at its seed's time, keyed by its seed; the next
frontier is a per-seed unique. :func:`disjoint_layout` lays it out as PyG's (``batch`` per
node type: each node's seed). Node-level time filters the edge types whose source type has
a time, edge-level time the edge types holding one; the others sample without time, as
pyg-lib. ``subgraph_type="induced"`` is not disjoint (refused).

Link batches (:class:`HeteroSampler`): gsample draws the negatives on the graph's device
under its stream (:mod:`gsample.interop.pyg.negatives`), typed by the supervision edge type
(sources of its source type, destinations of its destination type; ``strict`` excludes its
edges), in PyG's heterogeneous ``edge_sample`` layout.

The data's arguments are read and checked by :mod:`gsample.interop.pyg.hetero_arguments`;
the disjoint, induced and bidirectional layouts are :mod:`gsample.interop.pyg.hetero_layout`'s.
The names of both that the loaders use are re-exported here (their import path).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch

from gsample.base import validate as V
from gsample.base.random import MASK64, batch_scope, combine, op_key
from gsample.compiler import CompiledSampler
from gsample.hetero.container import HeteroGraph
from gsample.interop.pyg import negatives as _negatives
from gsample.interop.pyg.hetero import pyg_layout
from gsample.interop.pyg.hetero_arguments import (
    SUBGRAPH_TYPES,
    check_attributes,
    check_graph,
    check_sliceable,
    fanouts,
    graph_skeleton,
    input_nodes_of,
    input_seeds,
    is_hetero,
    weighted_relations,
)
from gsample.interop.pyg.hetero_layout import disjoint_layout, induced_edges, to_bidirectional
from gsample.interop.pyg.temporal import HeteroTemporalSpec

try:
    from torch_geometric.sampler import BaseSampler as _Base
    from torch_geometric.sampler import HeteroSamplerOutput as _Output
except ImportError:  # the module imports without PyG; the loaders raise first (_require)
    _Output = None
    _Base = object


class HeteroBatches:
    """A ``HeteroData``'s graph and sampling options: seeds in, PyG's batches out.

    Parameters
    ----------
    data : torch_geometric.data.HeteroData
        The graph (``edge_index`` per edge type) and its attributes.
    num_neighbors : list of int or dict
        PyG's (:func:`fanouts`).
    replace : bool
        Sample with replacement.
    weight_attr : str, optional
        PyG's weighted sampling: ``data[edge_type][weight_attr]``, one finite non-negative
        weight per edge, on the edge types that have it (the others sample uniformly); an
        edge of weight 0 is never drawn.
    subgraph_type : {"directional", "bidirectional", "induced"}
        See the module docstring.
    graph : gs.HeteroGraph, optional
        The graph to sample (e.g. on a GPU), of the data's node counts and edge types;
        default ``gs.HeteroGraph.from_pyg(data, weight=None)`` (on the data's device). Its
        edge values, if any, become each batch's ``edge_weight`` (sampling stays uniform).
    join : callable, optional
        ``join(node, row, col, edge) -> HeteroData``: the batch's attributes (a store's,
        :mod:`gsample.interop.pyg.stores`); default PyG's ``filter_hetero_data`` of ``data``.
    spec : HeteroTemporalSpec, optional
        PyG's disjoint / temporal sampling (``disjoint``, ``time_attr``,
        ``temporal_strategy``: :meth:`TemporalSpec.of`): every seed grows its own tree
        (:meth:`gs.HeteroGraph.sample_disjoint`), the batches carry PyG's ``batch`` per node
        type. Not with ``subgraph_type="induced"``.
    compile : bool
        Run each (hop, edge type) through the graph's compiled step
        (:meth:`gs.HeteroGraph.step_sampler`, default) or eagerly; the samples are the
        same.

    Attributes
    ----------
    graph : gs.HeteroGraph
        What is sampled.
    hops : list of dict
        ``{edge_type: k}`` per hop, every edge type of ``graph``.
    input_type : str or None
        The node loader's seed type (:meth:`sample_nodes`), set by the loader.
    compile : bool
    step_sampler : gs.CompiledSampler or None
        The compiled step the draws run (``compile=True``; None for eager draws): its
        ``backend_for(graph[edge_type])`` names the backend, ``traces`` its programs.

    Examples
    --------
    >>> import torch
    >>> import gsample.pyg
    >>> from gsample.base.random import batch_scope
    >>> data = gsample.pyg.users_movies()          # 100 users rate 40 movies
    >>> b = HeteroBatches(data, [10, 5])
    >>> with batch_scope(0, 0):                        # epoch seed 0, mini-batch 0
    ...     out = b.sample({"movie": torch.tensor([0, 1])})
    >>> out.node["movie"][:2]                          # the seeds come first
    tensor([0, 1])
    """

    def __init__(
        self,
        data,
        num_neighbors,
        replace: bool = False,
        weight_attr: str | None = None,
        subgraph_type: str = "directional",
        graph: HeteroGraph | None = None,
        join: Callable | None = None,
        spec: HeteroTemporalSpec | None = None,
        compile: bool = True,
    ):
        if not is_hetero(data):
            raise TypeError(f"data: expected a torch_geometric HeteroData, got {type(data)}")
        if subgraph_type not in SUBGRAPH_TYPES:
            raise ValueError(
                f"subgraph_type: expected one of {SUBGRAPH_TYPES}, got {subgraph_type!r}"
            )
        if join is not None and not callable(join):
            raise TypeError(f"join: must be callable or None, got {type(join).__name__}")
        if spec is not None and not isinstance(spec, HeteroTemporalSpec):
            raise TypeError(f"spec: expected a HeteroTemporalSpec, got {type(spec).__name__}")
        if spec is not None and subgraph_type == "induced":
            raise ValueError(
                "subgraph_type: 'induced' subgraphs are not disjoint (one subgraph per "
                "mini-batch); with disjoint=True or time_attr use 'directional' or "
                "'bidirectional'"
            )
        check_attributes(data)
        self.replace = V.flag(replace, "replace")
        self.compile = V.flag(compile, "compile")
        self.edge_ids: dict = {}  # weight_attr: {edge_type: positions of the kept edges}
        skeleton = graph_skeleton(data)
        if graph is not None:
            if weight_attr is not None:
                raise ValueError(
                    "weight_attr: give the sampling weights either as an edge attribute of "
                    "the HeteroData (weight_attr) or as the values of graph=, not both"
                )
            H = check_graph(graph, skeleton)
        else:
            H = HeteroGraph.from_pyg(skeleton, weight=None)
            if weight_attr is not None:
                H, self.edge_ids = weighted_relations(data, weight_attr, H)
        per_type, num_hops = fanouts(num_neighbors, H.edge_types)
        self.hops = [{et: per_type[et][h] for et in H.edge_types} for h in range(num_hops)]
        self.data, self.graph, self.join = data, H, join
        self.weighted = weight_attr is not None
        # graph='s values are edge weights of the batch (as gsample.pyg.NeighborLoader's)
        self.values = graph is not None and any(
            graph[et].csc.values is not None for et in H.edge_types
        )
        self.subgraph_type = subgraph_type
        self.input_type = None  # the node loader's seed type (set by input_nodes)
        self.spec = spec
        # each relation's edge times in its matrix's edge order: computed once, passed to
        # every call (the op keeps its per-column time order keyed on these tensors)
        self.edge_time = {} if spec is None else spec.graph_time(H, self.edge_ids or None)

    @property
    def step_sampler(self) -> CompiledSampler | None:
        """The compiled step :meth:`draw` runs (None with ``compile=False``)."""
        if not self.compile:
            return None
        return self.graph.step_sampler("neighbors" if self.spec is None else "disjoint")

    # ------------------------------------------------------------------ sampling
    def draw(self, seeds: dict, seed_time: dict | None = None):
        """The draws of one mini-batch: :meth:`gs.HeteroGraph.sample_neighbors` of
        ``seeds`` with this loader's hops (one ``{edge_type: gs.Matrix}`` per hop), or with
        a :attr:`spec`, :meth:`gs.HeteroGraph.sample_disjoint`'s ``(blocks, slots)`` at the
        seeds' times ``seed_time`` (``{node_type: times}``). Run it inside the mini-batch's
        ``batch_scope``."""
        if self.spec is not None:
            return self.graph.sample_disjoint(
                seeds,
                self.hops,
                seed_time,
                self.edge_time,
                replace=self.replace,
                weighted=self.weighted,
                strategy=self.spec.strategy,
                compile=self.compile,
            )
        return self.graph.sample_neighbors(
            seeds, self.hops, self.replace, self.weighted, compile=self.compile
        )

    def sample(
        self, seeds: Mapping[str, torch.Tensor], seed_time: Mapping | None = None
    ) -> _Output:
        """One mini-batch of ``seeds`` as PyG's ``HeteroSamplerOutput`` (no metadata).

        Parameters
        ----------
        seeds : dict
            ``{node_type: LongTensor (B_t,)}``: unique ids per type (PyG's seeds); with a
            :attr:`spec`, any ids (each seed its own tree, numbered in the dict's order).
        seed_time : dict, optional
            ``{node_type: times}`` of the seeds (a temporal :attr:`spec`; default, for
            node-level time, the seeds' own).

        Returns
        -------
        HeteroSamplerOutput
            ``node``, ``row``, ``col``, ``edge`` (None for the edge types a bidirectional
            subgraph merged), ``num_sampled_nodes`` / ``num_sampled_edges`` (None unless
            directional), ``batch`` (``{node_type: seed slot of each node}``, with a
            :attr:`spec`), on the seeds' device; ``metadata`` is None (the caller's).

        Examples
        --------
        >>> import torch
        >>> import gsample.pyg
        >>> from gsample.base.random import batch_scope
        >>> data = gsample.pyg.users_movies()          # 100 users rate 40 movies
        >>> batches = HeteroBatches(data, [10, 5])
        >>> with batch_scope(0, 0):                    # epoch seed 0, mini-batch 0
        ...     out = batches.sample({"movie": torch.tensor([0, 1])})
        >>> out.node["movie"][:2]
        tensor([0, 1])
        """
        return self._sample(seeds, seed_time)[0]

    def _sample(self, seeds: Mapping[str, torch.Tensor], seed_time=None, draws=None) -> tuple:
        """:meth:`sample`'s output and ``{edge_type: edge values}`` of ``graph=`` (or {});
        ``draws``: the seeds' draws, made already (:meth:`draw`'s, by a super-batch:
        :class:`gsample.interop.pyg.hetero_super_batch.HeteroSuperBatches`), laid out here."""
        if not isinstance(seeds, Mapping):
            raise TypeError(f"seeds: expected a dict {{node_type: ids}}, got {type(seeds)}")
        device = next(iter(seeds.values())).device if seeds else torch.device("cpu")
        H = self.graph
        seeds = {
            t: V.as_tensor(ids, f"seeds[{t!r}]", None).to(H.device) for t, ids in seeds.items()
        }
        batch = None
        if self.spec is not None:  # one tree per seed, at the seeds' times
            seeds = _checked_seeds(seeds, H)
            times = self.spec.seed_time(seeds, seed_time)
            if times is not None:
                times = {t: v.to(H.device) for t, v in times.items()}
            blocks, slots = self.draw(seeds, times) if draws is None else draws
            lay, batch = disjoint_layout(blocks, slots, seeds, H)
        else:
            samples = self.draw(seeds) if draws is None else draws  # draw checks the seeds
            lay = pyg_layout(samples, {t: ids.to(torch.int64) for t, ids in seeds.items()}, H)
        node = {t: lay.node[t] for t in H.node_types}
        row, col, edge, weight = {}, {}, {}, {}
        for et in H.edge_types:
            row[et], col[et], edge[et], weight[et] = lay.edges[et]
        num_nodes, num_edges = lay.num_nodes, lay.num_edges
        if self.subgraph_type == "induced":
            row, col, edge, weight = induced_edges(H, node)
            num_nodes = num_edges = None
        for et, keep in self.edge_ids.items():  # weight_attr: ids in data[et].edge_index
            edge[et] = keep[edge[et]]
        weight = weight if self.values else {}
        for et, w in weight.items():  # no edge sampled: an empty weight of the graph's
            values = H[et].csc.values
            if w is None and values is not None:
                weight[et] = values.new_zeros((0,) + tuple(values.shape[1:]))
        if self.subgraph_type == "bidirectional":
            row, col, edge = to_bidirectional(row, col, edge)
            num_nodes = num_edges = None
        out = _Output(
            node={t: v.to(device) for t, v in node.items()},
            row={et: v.to(device) for et, v in row.items()},
            col={et: v.to(device) for et, v in col.items()},
            edge={et: None if v is None else v.to(device) for et, v in edge.items()},
            batch=None if batch is None else {t: v.to(device) for t, v in batch.items()},
            num_sampled_nodes=num_nodes,
            num_sampled_edges=num_edges,
        )
        # a merged (bidirectional) type's pairs have no single edge, hence no value
        weight = {
            et: w.to(device)
            for et, w in weight.items()
            if w is not None and out.edge.get(et) is not None
        }
        return out, weight

    def sample_nodes(
        self,
        seeds: torch.Tensor,
        input_id: torch.Tensor,
        seed_time: torch.Tensor | None = None,
        draws=None,
    ) -> _Output:
        """The node loader's mini-batch: seeds of :attr:`input_type` (at times
        ``seed_time``, PyG's ``input_time``: temporal sampling); ``metadata = (input_id,
        seed_time, edge weights)`` (PyG's ``(input_id, seed_time)``, and ``{edge_type:
        values}`` of ``graph=``). ``draws``: :meth:`draw`'s result for these seeds, when a
        super-batch drew it (then nothing is drawn here)."""
        times = None if seed_time is None else {self.input_type: seed_time}
        out, weight = self._sample({self.input_type: seeds}, times, draws)
        out.metadata = (input_id, seed_time, weight)
        return out

    # ------------------------------------------------------------------ PyG's batch
    def filter(self, out: _Output):
        """PyG's ``NodeLoader.filter_fn`` for a heterogeneous output (``transform`` is the
        loader's): the attributes of the sampled nodes and edges (PyG's
        ``filter_hetero_data``, or ``join``), ``n_id``, ``e_id``, ``num_sampled_nodes`` /
        ``num_sampled_edges``, and ``input_id`` / ``batch_size`` on the input type."""
        # import here: PyTorch Geometric is optional (the module imports without it)
        from torch_geometric.loader.utils import filter_hetero_data

        # filter_hetero_data fills missing types into the dicts it is given: copies
        node, row, col, edge = dict(out.node), dict(out.row), dict(out.col), dict(out.edge)
        if self.join is None:
            data = filter_hetero_data(self.data, node, row, col, edge, None)
        else:
            data = self.join(node, row, col, edge)
        for t, n_id in out.node.items():
            if "n_id" not in data[t]:
                data[t].n_id = n_id
        for et, e_id in (out.edge or {}).items():
            if e_id is not None and "e_id" not in data[et]:
                data[et].e_id = e_id
        if out.batch is not None:  # disjoint: each node's seed (PyG's batch)
            data.set_value_dict("batch", out.batch)
        data.set_value_dict("num_sampled_nodes", out.num_sampled_nodes)
        data.set_value_dict("num_sampled_edges", out.num_sampled_edges)
        input_id = out.metadata[0]
        data[self.input_type].input_id = input_id
        if out.metadata[1] is not None:  # PyG's seed_time: the given input_time
            data[self.input_type].seed_time = out.metadata[1]
        data[self.input_type].batch_size = input_id.numel()
        weight = out.metadata[2] if len(out.metadata) > 2 else None
        for et, w in (weight or {}).items():
            data[et].edge_weight = w
        return data


def _checked_seeds(seeds: dict, H: HeteroGraph) -> dict:
    """``{node_type: int64 ids}`` on the graph's device, each type and id checked."""
    out = {}
    for t, ids in seeds.items():
        if t not in H.num_nodes_dict:
            raise ValueError(f"seeds: {t!r} is not a node type of the graph ({H.node_types})")
        out[t] = V.ids(ids, f"seeds[{t!r}]", H.num_nodes(t), H.device)
    return out


class HeteroSampler(_Base):
    """A ``torch_geometric.sampler.BaseSampler`` sampling a ``HeteroData`` with gsample.

    PyG's ``LinkLoader`` (``gsample.pyg.LinkNeighborLoader``) and ``NodeLoader`` call it:
    it draws each mini-batch in ``batch_scope(epoch seed, key(input_id))``, and a link
    batch's negatives on the graph's device under gsample's stream
    (:func:`~gsample.interop.pyg.negatives.hetero_edge_sample`, keyed by the epoch, the
    mini-batch's key and ``NEGATIVE_ORDINAL``), as :class:`gsample.pyg.Sampler` does for
    homogeneous graphs: sources among the edge type's source type, destinations among its
    destination type, ``strict`` negatives never an edge of that type.

    Parameters
    ----------
    batches : HeteroBatches
        The graph and sampling options (its ``spec``: disjoint / temporal sampling).
    seed : int
        The sampler's seed.
    key : callable
        ``key(input_id) -> int`` in ``[0, 2**62)``: a mini-batch's key from its
        ``input_id`` (``gsample.pyg.batch_key``: a hash of the set).

    Examples
    --------
    >>> import torch
    >>> import gsample.pyg
    >>> from gsample.base.random import batch_scope
    >>> data = gsample.pyg.users_movies()          # 100 users rate 40 movies
    >>> from torch_geometric.loader import LinkLoader
    >>> from gsample.interop.pyg.neighbor_loader import batch_key
    >>> sampler = HeteroSampler(HeteroBatches(data, [10, 5]), seed=0, key=batch_key)
    >>> loader = LinkLoader(data, sampler, edge_label_index=(("user", "rates", "movie"), None))
    >>> batch = next(iter(loader))                     # a HeteroData mini-batch
    >>> batch["user", "rates", "movie"].edge_label_index.shape[0]
    2
    """

    def __init__(self, batches: HeteroBatches, seed: int, key: Callable):
        if not isinstance(batches, HeteroBatches):
            raise TypeError(f"batches: expected HeteroBatches, got {type(batches).__name__}")
        if not callable(key):
            raise TypeError(f"key: must be callable, got {type(key).__name__}")
        self.batches, self.key = batches, key
        self.seed = V.seed(seed) & MASK64
        self.epoch = 0
        self._negatives: dict = {}  # (id of neg_sampling, edge type) -> (it, sampler)

    @property
    def num_nodes(self) -> dict:
        return self.batches.graph.num_nodes_dict

    @property
    def disjoint(self) -> bool:
        return self.batches.spec is not None

    def set_epoch(self, epoch: int) -> None:
        """Draw epoch ``epoch``'s samples (keys ``(seed, epoch, mini-batch)``)."""
        self.epoch = V.count(epoch, "epoch")

    def epoch_seed(self) -> int:
        return combine(combine(0, self.seed), self.epoch)

    def _draw(self, seeds: dict, key: int, seed_time: dict | None = None) -> _Output:
        with batch_scope(self.epoch_seed(), key):
            return self.batches.sample(seeds, seed_time)

    def _temporal(self) -> bool:
        return self.batches.spec is not None and self.batches.spec.temporal

    def sample_from_nodes(self, index, **kwargs) -> _Output:
        """PyG's node-level entry point (``NodeLoader``): ``index`` a ``NodeSamplerInput``
        with ``input_type`` (and ``time``: the seeds' times, temporal sampling);
        ``metadata = (input_id, time)``."""
        if index.time is not None and not self._temporal():
            raise ValueError(
                "index: seed times (input_time) need a temporal sampler (HeteroBatches with "
                "a spec of a time_attr)"
            )
        if index.input_type is None:
            raise ValueError("index: a heterogeneous sampler needs the seeds' node type")
        input_id = index.input_id
        if input_id is None:
            input_id = torch.arange(index.node.numel())
        times = None if index.time is None else {index.input_type: index.time}
        out = self._draw({index.input_type: index.node}, self.key(input_id), times)
        out.metadata = (input_id, index.time)
        return out

    def sample_from_edges(self, index, neg_sampling=None) -> _Output:
        """PyG's link-level entry point (``LinkLoader``): gsample draws the negatives of
        ``neg_sampling`` (PyG's ``NegativeSampling``, or gsample's with ``strict``) on the
        graph's device (:meth:`negative_sampler`), PyG's layout makes the seeds (the
        endpoints, unique per node type unless disjoint) and gsample samples their
        neighbourhoods (:func:`~gsample.interop.pyg.negatives.hetero_edge_sample`)."""
        if index.time is not None and not self._temporal():
            raise ValueError(
                "index: edge_label_time needs a temporal sampler (HeteroBatches with a spec "
                "of a time_attr)"
            )
        if index.input_type is None:
            raise ValueError("index: a heterogeneous sampler needs the edges' type")
        key = self.key(index.input_id)

        def sample_fn(seeds, seed_time):
            return self._draw(seeds, key, seed_time)

        negatives = None
        if neg_sampling is not None:
            negatives = self.negative_sampler(neg_sampling, tuple(index.input_type))
        return _negatives.hetero_edge_sample(
            index,
            sample_fn,
            negatives,
            neg_sampling,
            key=op_key(self.epoch_seed(), _negatives.NEGATIVE_ORDINAL, key),
            disjoint=self.disjoint,
        )

    def negative_sampler(self, neg_sampling, edge_type: tuple):
        """The :class:`~gsample.interop.pyg.negatives.NegativeSampler` of ``neg_sampling``
        for supervision edges of ``edge_type`` on the graph's device: sources among the
        nodes of ``edge_type[0]``, destinations among those of ``edge_type[-1]`` (one node
        type: PyG's homogeneous law, self-pairs excluded when strict), ``strict`` excluding
        the data's edges of ``edge_type`` (zero-weight ones too), temporal negatives
        existing at their positive's time (node-level ``time_attr`` of their type). Built
        once per ``neg_sampling`` object and edge type.

        Examples
        --------
        >>> import torch
        >>> import gsample.pyg
        >>> from gsample.base.random import batch_scope
        >>> data = gsample.pyg.users_movies()          # 100 users rate 40 movies
        >>> from gsample.interop.pyg.negative_arguments import NegativeSampling
        >>> from gsample.interop.pyg.neighbor_loader import batch_key
        >>> sampler = HeteroSampler(HeteroBatches(data, [10, 5]), seed=0, key=batch_key)
        >>> neg = sampler.negative_sampler(NegativeSampling("binary", strict=True),
        ...                                ("user", "rates", "movie"))
        >>> neg.num_nodes                                   # (users, movies)
        (100, 40)
        """
        cached = self._negatives.get((id(neg_sampling), edge_type))
        if cached is not None and cached[0] is neg_sampling:
            return cached[1]
        H, data = self.batches.graph, self.batches.data
        s, d = edge_type[0], edge_type[-1]
        for t in (s, d):
            if t not in H.num_nodes_dict:
                raise ValueError(
                    f"edge_label_index: node type {t!r} of {edge_type!r} is not a node type "
                    f"of the graph ({H.node_types})"
                )
        if edge_type in data.edge_types and "edge_index" in data[edge_type]:
            edge_index = data[edge_type].edge_index.to(H.device, torch.int64)
        else:  # supervision edges of a type the graph does not hold: nothing to exclude
            edge_index = torch.zeros(2, 0, dtype=torch.int64, device=H.device)
        spec = self.batches.spec
        node_time = None if spec is None else spec.node_time
        if s == d:
            num_nodes, times = H.num_nodes(s), None if node_time is None else node_time.get(s)
        else:
            num_nodes = (H.num_nodes(s), H.num_nodes(d))
            times = None if node_time is None else (node_time.get(s), node_time.get(d))
        sampler = _negatives.sampler_for(neg_sampling, edge_index, num_nodes, times)
        self._negatives[(id(neg_sampling), edge_type)] = (neg_sampling, sampler)
        return sampler


__all__ = [
    "SUBGRAPH_TYPES",
    "HeteroBatches",
    "HeteroSampler",
    "check_sliceable",
    "disjoint_layout",
    "fanouts",
    "input_nodes_of",
    "input_seeds",
    "is_hetero",
    "to_bidirectional",
]
