"""PyG's ``LinkNeighborLoader``, sampled by gsample: link prediction (a ``HeteroData`` or
``(FeatureStore, GraphStore)``: :mod:`gsample.interop.pyg.hetero_loader`).

:class:`LinkNeighborLoader` is PyG's ``torch_geometric.loader.LinkLoader`` with
:class:`gsample.pyg.Sampler` running :func:`gsample.pyg.neighbor_sample` (compiled) as its
link sampler: PyG builds the mini-batches of supervision edges and joins the ``Data``'s
attributes; gsample draws the negatives on the graph's device
(:mod:`gsample.interop.pyg.negatives`) and samples the neighbourhoods of the edges'
endpoints. Batches are PyG's: ``edge_label_index`` in local ids, ``edge_label`` (binary
negatives labelled 0), ``src_index`` / ``dst_pos_index`` / ``dst_neg_index`` in triplet
mode, ``input_id``, ``n_id`` (the label edges' endpoints first), ``e_id``.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Callable

import torch

from gsample.base import validate as V
from gsample.compiler.compiled import compile as gs_compile
from gsample.interop.pyg import hetero_loader as _hetero
from gsample.interop.pyg import stores as _stores
from gsample.interop.pyg import super_batch as _super
from gsample.interop.pyg import temporal as _temporal
from gsample.interop.pyg.arguments import (
    PYG_ONLY,
    UnsupportedArgument,
    check_data,
    check_fanouts,
    check_pyg_arguments,
    default_seed,
    read_graph,
    require,
    shown,
    weighted_graph,
)
from gsample.interop.pyg.loader import Sampler
from gsample.interop.pyg.negatives import NegativeSampling
from gsample.interop.pyg.neighbor_loader import batch_key, neighbor_sample
from gsample.interop.pyg.subgraph import subgraph_type_name, to_bidirectional
from gsample.loader.dataloader import super_batch_options

try:
    from torch_geometric.loader import LinkLoader as _LinkLoader
except ImportError:  # the module imports without PyG; building a loader raises (require)
    _LinkLoader = object

_NAME = "LinkNeighborLoader"


def _refuse(name: str, value, accepted: tuple, why: str) -> None:
    """An :class:`UnsupportedArgument` naming ``name`` unless ``value`` is one of
    ``accepted`` (enums by value, ``True`` is not ``1``)."""
    if isinstance(value, enum.Enum):
        value = value.value
    if not any(value is a or (type(value) is type(a) and value == a) for a in accepted):
        raise UnsupportedArgument(
            f"gsample.pyg.{_NAME}: {name}={shown(value)} is not supported yet ({why})"
        )


def _num_labels(data, edge_label_index) -> int:
    """The number of supervision edges (``edge_label_index``'s columns, default the
    ``Data``'s edges)."""
    index = data.edge_index if edge_label_index is None else edge_label_index
    if index is None:
        return 0
    if isinstance(index, (tuple, list)) and len(index) == 2 and not torch.is_tensor(index[0]):
        index = index[1]  # PyG's (edge type, index): the type of a homogeneous graph's
    return int(V.as_tensor(index, "edge_label_index", None).shape[-1])


@dataclasses.dataclass(frozen=True)
class _Options:
    """The loader's sampling options as given (checked by the layout's sampler builder):
    what :meth:`LinkNeighborLoader._homogeneous_sampler` and ``_hetero_sampler`` read."""

    num_neighbors: object
    replace: bool
    subgraph_type: str
    weight_attr: str | None
    is_sorted: bool
    seed: int | None
    compile: bool
    spec: object  # a TemporalSpec (HeteroTemporalSpec for typed data), or None


class LinkNeighborLoader(_LinkLoader):
    """PyG's ``LinkNeighborLoader`` (homogeneous), sampled by gsample.

    Each mini-batch takes ``batch_size`` supervision edges (``edge_label_index``), adds
    PyG's negatives, samples the neighbourhood of every endpoint with
    :func:`gsample.pyg.neighbor_sample` (PyG's hops) and returns PyG's
    ``Data``.

    Parameters
    ----------
    data : torch_geometric.data.Data
        The graph and its node / edge attributes. A ``HeteroData``, or a
        ``(FeatureStore, GraphStore)`` of a heterogeneous graph (PyG's ``custom_cls``
        names its batches' class), is sampled per edge type
        (:mod:`gsample.interop.pyg.hetero_loader`, eagerly; all three subgraph types) with
        ``edge_label_index=(edge_type, LongTensor (2, L))`` or ``edge_type`` (all its
        edges); its negatives are drawn by gsample as a ``Data``'s are, sources among the
        edge type's source type and destinations among its destination type
        (:func:`~gsample.interop.pyg.negatives.hetero_edge_sample`, PyG's layout;
        ``strict`` excludes that edge type's edges).
    num_neighbors : list of int, or dict
        In-neighbours per node at each hop (``-1``: all); for a heterogeneous graph also
        PyG's ``{edge_type: [k, ...]}``, every edge type named.
    edge_label_index : LongTensor, shape (2, L), optional
        The supervision edges (global ids); default ``data.edge_index``.
    edge_label : Tensor, shape (L,), optional
        Their labels. With binary negatives, labels starting at 0 are shifted by one, as
        PyG's: 0 means "negative".
    edge_label_time : Tensor, shape (L,), optional
        PyG's temporal link sampling (with ``time_attr``): each supervision edge's time;
        both endpoints (and their negatives) are seeds at that time, each its own tree of
        nodes / edges no later (:mod:`gsample.interop.pyg.temporal`). The batch's
        ``edge_label_time`` (binary) or ``seed_time`` (triplet), as PyG's.
    replace : bool
        Sample with replacement.
    subgraph_type : str or SubgraphType
        ``"directional"`` (PyG's default: the sampled edges) or ``"bidirectional"`` (the
        sampled edges and their reverses, coalesced, as PyG's
        ``SamplerOutput.to_bidirectional``: the same nodes, ``edge_label_index`` and
        ``edge_label``; ``num_sampled_nodes`` / ``num_sampled_edges`` are ``None``).
        ``"induced"`` is an :class:`UnsupportedArgument` for a ``Data`` (taken for a
        heterogeneous graph); another value a ``ValueError``.
    disjoint : bool
        PyG's: every endpoint (negatives too) its own tree; ``batch.batch`` is each node's
        tree modulo ``L`` (PyG's layout: ``edge_label_index`` is ``arange(2 * L').view(2,
        -1)``). Implied by ``time_attr``. A heterogeneous graph's seeds are numbered
        consecutively across types (the source type's first), ``batch`` per node type.
    temporal_strategy : {"uniform", "last"}
        PyG's: uniformly among the allowed edges, or the ``k`` most recent.
    neg_sampling : NegativeSampling, str or dict, optional
        PyG's negative sampling, ``binary`` (``batch.edge_label_index`` holds the ``L``
        positives, then ``ceil(amount * L)`` negatives, labelled 0; both endpoints random)
        or ``triplet`` (``batch.src_index``, ``batch.dst_pos_index`` of shape ``(L,)`` and
        ``batch.dst_neg_index`` of shape ``(L,)`` or ``(L, amount)``, row ``i`` the
        negatives of positive ``i``), drawn by ``src_weight`` / ``dst_weight`` (uniform
        when None). gsample draws them on the graph's device, under its stream (the same
        on the CPU and a GPU, whatever ``num_workers``): see
        :mod:`gsample.interop.pyg.negatives`. As PyG's, they may be edges of the graph;
        :class:`gsample.interop.pyg.negatives.NegativeSampling` (or a dict) with
        ``strict=True`` excludes the ``Data``'s edges and self-pairs (a ``ValueError`` here
        when some supervision source has no such negative in triplet mode, or no pair has
        one in binary mode).
    neg_sampling_ratio : int or float, optional
        PyG's deprecated ``neg_sampling=NegativeSampling("binary", ratio)``.
    time_attr : str, optional
        PyG's temporal sampling: a node-level attribute of ``data`` (a neighbour, or a
        negative, is allowed when its time is ``<=`` its seed's) or an edge-level one;
        given with ``edge_label_time``.
    weight_attr : str, optional
        PyG's weighted sampling: ``data[weight_attr]``, one finite non-negative weight per
        edge; each hop draws in-neighbours with probability proportional to it (weight 0:
        never).
    transform, transform_sampler_output : callable, optional
        As PyG's.
    is_sorted : bool
        A hint: gsample builds its own CSC either way.
    filter_per_worker : bool, optional
        As PyG's (default True unless ``data`` is on a GPU).
    neighbor_sampler : None
        A PyG ``NeighborSampler`` samples with PyG, not gsample: refused.
    directed : bool
        ``True`` only (``False``, PyG's deprecated ``subgraph_type="induced"``: an
        :class:`UnsupportedArgument` naming ``directed``).
    seed : int, optional
        The sampler's seed (gsample's; not PyG's): same seed, same batches. Default drawn
        from gsample's stream now.
    compile : bool
        Compile the sampler with ``gs.compile`` (default True).
    super_batch : None or 1
        Mini-batches sampled per run: one (None, the default, or 1). Several (an int
        ``> 1``, or ``"auto"``) are refused with a ``ValueError`` naming ``super_batch``:
        this loader's mini-batches draw with the key of their ``input_id`` set (PyG's
        ``LinkLoader`` does not tell a sampler their index), while a super-batch draws
        mini-batches of consecutive indices, so its batches would not be these.
        :class:`gsample.pyg.NeighborLoader` and ``gs.DataLoader`` super-batch.
    **kwargs
        ``torch.utils.data.DataLoader`` options (``batch_size``, ``shuffle``,
        ``num_workers``, ...) and ``LinkLoader``'s ``input_id``. PyG's other arguments
        (:data:`gsample.pyg.PYG_ONLY`) are refused unless their value means what gsample
        does; anything else is a ``TypeError``.

    Notes
    -----
    A mini-batch's draws depend on the seed, the epoch (:meth:`Sampler.set_epoch` on
    ``loader.link_sampler``) and the set of its ``input_id`` only (see
    :mod:`gsample.pyg`). ``str(loader)`` is ``'LinkNeighborLoader()'``; ``loader(index)``
    returns the batch of the supervision edges ``index``, as PyG's.

    Examples
    --------
    >>> loader = gsample.pyg.LinkNeighborLoader(
    ...     data, num_neighbors=[10, 5], edge_label_index=train_edges, batch_size=256,
    ...     neg_sampling="binary", shuffle=True, seed=0)
    >>> batch = next(iter(loader))
    >>> src, dst = batch.edge_label_index          # shape (2, 512): local ids in batch.n_id
    >>> score = (h[src] * h[dst]).sum(-1)          # h = model(batch.x, batch.edge_index)
    >>> loss = F.binary_cross_entropy_with_logits(score, batch.edge_label)
    """

    def __init__(
        self,
        data,
        num_neighbors,
        edge_label_index=None,
        edge_label: torch.Tensor | None = None,
        edge_label_time: torch.Tensor | None = None,
        replace: bool = False,
        subgraph_type="directional",
        disjoint: bool = False,
        temporal_strategy: str = "uniform",
        neg_sampling=None,
        neg_sampling_ratio: float | None = None,
        time_attr: str | None = None,
        weight_attr: str | None = None,
        transform: Callable | None = None,
        transform_sampler_output: Callable | None = None,
        is_sorted: bool = False,
        filter_per_worker: bool | None = None,
        neighbor_sampler=None,
        directed: bool = True,
        seed: int | None = None,
        compile: bool = True,
        super_batch=None,
        **kwargs,
    ):
        require()
        super_batch = super_batch_options(super_batch)[0]
        _super.refuse(
            super_batch,
            _NAME,
            "its mini-batches draw with the key of their input_id set, as PyG's LinkLoader "
            "over gsample.pyg.Sampler does, and a super-batch draws mini-batches with "
            "consecutive indices, so its batches would not be those sampled one at a time; "
            "super-batch node batches with gsample.pyg.NeighborLoader or gs.DataLoader",
        )
        self.super_batch = super_batch
        if (edge_label_time is None) != (time_attr is None):  # PyG's check, PyG's words
            raise ValueError(
                "Received conflicting 'edge_label_time' and 'time_attr' arguments: "
                f"'edge_label_time' is {'not set' if edge_label_time is None else 'set'} "
                f"while 'time_attr' is {'not set' if time_attr is None else 'set'}. "
                "Both arguments must be provided for temporal sampling."
            )
        # LinkLoader's own arguments pass through; the rest must be the DataLoader's
        own = {k: kwargs.pop(k) for k in ("input_id",) if k in kwargs}
        if _stores.is_stores(data) and "custom_cls" in kwargs:  # PyG's, for stores only
            own["custom_cls"] = kwargs.pop("custom_cls")
        kwargs = check_pyg_arguments(_NAME, kwargs)
        _refuse("neighbor_sampler", neighbor_sampler, (None,), PYG_ONLY["neighbor_sampler"].why)
        stored = None  # stores: (their graph with its times, join), read once here
        if _stores.is_stores(data):
            stored = _stores.as_data(data, None, weight_attr, _NAME, time_attr=time_attr)
        # disjoint / temporal (a HeteroData's or stores': per-type times)
        spec = _temporal.TemporalSpec.of(
            data if stored is None else stored[0], disjoint, time_attr, temporal_strategy, _NAME
        )
        _refuse(
            "directed",
            directed,
            (True,),
            "directed=False is PyG's deprecated subgraph_type='induced'",
        )
        subgraph_type = subgraph_type_name(subgraph_type)  # a ValueError for unknown values
        options = _Options(
            num_neighbors, replace, subgraph_type, weight_attr, is_sorted, seed, compile, spec
        )
        hetero = _hetero.is_hetero(data) or stored is not None
        if hetero:
            sampler, edge_label_time, neg_sampling = self._hetero_sampler(
                data, stored, options, edge_label_index, edge_label_time, neg_sampling
            )
        else:
            sampler, edge_label_time, neg_sampling = self._homogeneous_sampler(
                data, options, edge_label_index, edge_label_time, neg_sampling
            )
        super().__init__(
            data=data,
            link_sampler=sampler,
            edge_label_index=edge_label_index,
            edge_label=edge_label,
            edge_label_time=edge_label_time,
            neg_sampling=neg_sampling,
            neg_sampling_ratio=neg_sampling_ratio,
            transform=transform,
            transform_sampler_output=transform_sampler_output,
            filter_per_worker=filter_per_worker,
            **own,
            **kwargs,
        )
        if self.neg_sampling is None:
            return
        # built once here: bad weights fail now
        if hetero:
            edge_type = tuple(self.input_data.input_type)
            negatives = sampler.negative_sampler(self.neg_sampling, edge_type)
        else:
            edge_type, edge_index = None, data.edge_index
            if edge_index is None:
                edge_index = torch.empty(2, 0, dtype=torch.long)
            # node-level time: a negative exists at its positive's time (PyG's neg_sample)
            node_time = None if spec is None else spec.node_time
            negatives = sampler.negative_sampler(self.neg_sampling, edge_index, node_time)
        if self.neg_sampling.is_triplet():
            _refuse_stranded(negatives, self.input_data.row, edge_type)

    def _homogeneous_sampler(
        self, data, options: _Options, edge_label_index, edge_label_time, neg_sampling
    ) -> tuple:
        """``__init__`` for a ``Data``: ``(sampler, edge_label_time, neg_sampling)`` for
        PyG's ``LinkLoader``, a :class:`gsample.pyg.Sampler` of the compiled
        :func:`neighbor_sample` (one tree per seed with ``options.spec``)."""
        spec, subgraph_type = options.spec, options.subgraph_type
        # induced would need the link loader's own DSL program (induced_sample's slice)
        _refuse(
            "subgraph_type",
            subgraph_type,
            ("directional", "bidirectional"),
            "gsample's link loader samples directional or bidirectional subgraphs",
        )
        check_data(data, _NAME)
        check_fanouts(options.num_neighbors)
        V.flag(options.is_sorted, "is_sorted")
        edge_ids = None
        if options.weight_attr is not None:
            A, edge_ids = weighted_graph(data, options.weight_attr)
        else:
            A = read_graph(data)
        hops = {
            "num_neighbors": tuple(options.num_neighbors),
            "replace": V.flag(options.replace, "replace"),
            "weighted": options.weight_attr is not None,
        }
        program = neighbor_sample
        if spec is not None:  # one tree per seed: gsample.interop.pyg.temporal's program
            program, hops["strategy"] = _temporal.disjoint_sample, spec.strategy
            edge_label_time = spec.input_time(
                edge_label_time, _num_labels(data, edge_label_index), "edge_label_time"
            )
        fn = gs_compile(program) if V.flag(options.compile, "compile") else program
        fn = functools.partial(fn, **hops)
        # bidirectional: the same draws, each batch's reverse edges added (PyG applies
        # to_bidirectional after edge_sample; the seeds / labels do not depend on the edges)
        post = to_bidirectional if subgraph_type == "bidirectional" else None
        disjoint = None if spec is None else _temporal.DisjointSampler(A, fn, spec, edge_ids)
        sampler = Sampler(A, fn, seed=options.seed, edge_ids=edge_ids, post=post, disjoint=disjoint)
        self.num_neighbors, self.replace = list(options.num_neighbors), hops["replace"]
        self.subgraph_type = subgraph_type
        return sampler, edge_label_time, _negative_sampling(neg_sampling)

    def _hetero_sampler(
        self, data, stored, options: _Options, edge_label_index, edge_label_time, neg_sampling
    ) -> tuple:
        """``__init__`` for a ``HeteroData`` or a ``(FeatureStore, GraphStore)`` (``stored``:
        its graph and join): ``(sampler, edge_label_time, neg_sampling)`` for PyG's
        ``LinkLoader``, a :class:`~gsample.interop.pyg.hetero_loader.HeteroSampler`
        (negatives drawn by gsample on the graph's device, typed by the supervision edge
        type; disjoint and temporal with ``options.spec``; all three subgraph types
        without)."""
        V.flag(options.is_sorted, "is_sorted")
        if edge_label_index is None:  # PyG asserts
            raise ValueError(
                "edge_label_index: a heterogeneous graph needs the supervision edges' type: "
                "edge_type, or (edge_type, edge_label_index)"
            )
        graph, join = (data, None) if stored is None else stored
        if stored is not None and not _hetero.is_hetero(graph):
            raise TypeError(
                "data: a (FeatureStore, GraphStore) of a homogeneous graph "
                "(edge_type=None) in gsample.pyg.LinkNeighborLoader: PyG's LinkLoader "
                "takes heterogeneous stores only; pass a Data"
            )
        neg_sampling = _negative_sampling(neg_sampling)
        spec = options.spec
        batches = _hetero.HeteroBatches(
            graph,
            options.num_neighbors,
            options.replace,
            options.weight_attr,
            options.subgraph_type,
            None,
            join,
            spec,
            compile=options.compile,
        )
        if spec is not None:  # checked and converted as the data's times
            edge_label_time = spec.input_time(
                edge_label_time, _num_hetero_labels(graph, edge_label_index), "edge_label_time"
            )
        seed = V.seed(options.seed, none_ok=True)
        seed = default_seed() if seed is None else seed
        sampler = _hetero.HeteroSampler(batches, seed, batch_key)
        self.num_neighbors, self.replace = options.num_neighbors, batches.replace
        self.subgraph_type = options.subgraph_type
        return sampler, edge_label_time, neg_sampling


def _negative_sampling(neg_sampling):
    """``neg_sampling`` as gsample's :class:`NegativeSampling` (PyG's, and a dict may say
    ``strict``), an error naming ``neg_sampling``."""
    try:
        return NegativeSampling.cast(neg_sampling)
    except (TypeError, ValueError) as e:
        raise type(e)(f"neg_sampling: {e}") from None


def _refuse_stranded(negatives, src: torch.Tensor, edge_type: tuple | None) -> None:
    """A ``ValueError`` when a supervision edge's source (``src``, of ``edge_type``'s source
    type in a heterogeneous graph) has no strict triplet negative."""
    stranded = negatives.stranded(src)
    if bool(stranded.any()):
        i = int(torch.nonzero(stranded)[0, 0])
        of_type = "" if edge_type is None else f" of type {edge_type[0]!r}"
        edge = "an edge" if edge_type is None else f"an edge of type {edge_type!r}"
        raise ValueError(
            f"neg_sampling: strict triplet negatives: node {int(src[i])}{of_type}, the "
            f"source of supervision edge {i}, has {edge} to every node of positive "
            "dst_weight (or is the only one): it has no negative"
        )


def _num_hetero_labels(graph, edge_label_index) -> int:
    """The number of supervision edges of a heterogeneous ``edge_label_index`` (PyG's
    ``edge_type`` or ``(edge_type, index or None)``; None: the type's ``edge_index``)."""
    index = None
    pair = isinstance(edge_label_index, (tuple, list)) and len(edge_label_index) == 2
    if pair and not isinstance(edge_label_index[0], str):  # (edge_type, index)
        edge_label_index, index = edge_label_index
    if index is None:
        store = graph[tuple(edge_label_index)]
        return int(store.edge_index.shape[1]) if "edge_index" in store else 0
    return int(V.as_tensor(index, "edge_label_index", None).shape[-1])
