"""PyG's ``LinkNeighborLoader``, sampled by gsample: homogeneous link prediction.

:class:`LinkNeighborLoader` is PyG's ``torch_geometric.loader.LinkLoader`` with
:class:`gsample.pyg.Sampler` running :func:`gsample.pyg.neighbor_sample` (compiled) as its
link sampler: PyG builds the mini-batches of supervision edges, draws the negatives and
joins the ``Data``'s attributes; gsample samples the neighbourhoods of the edges'
endpoints. Batches are PyG's: ``edge_label_index`` in local ids, ``edge_label`` (binary
negatives labelled 0), ``src_index`` / ``dst_pos_index`` / ``dst_neg_index`` in triplet
mode, ``input_id``, ``n_id`` (the label edges' endpoints first), ``e_id``.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable

import torch

from gsample.base import validate as V
from gsample.compiler.compiled import compile as gs_compile
from gsample.interop.pyg.loader import (
    _TEMPORAL,
    PYG_ONLY,
    Sampler,
    UnsupportedArgument,
    _check_data,
    _graph,
    _require,
    _shown,
    _weighted_graph,
    check_pyg_arguments,
    neighbor_sample,
)
from gsample.interop.pyg.subgraph import subgraph_type_name, to_bidirectional

try:
    from torch_geometric.loader import LinkLoader as _LinkLoader
except ImportError:  # the module imports without PyG; building a loader raises (_require)
    _LinkLoader = object

_NAME = "LinkNeighborLoader"


def _refuse(name: str, value, accepted: tuple, why: str) -> None:
    """An :class:`UnsupportedArgument` naming ``name`` unless ``value`` is one of
    ``accepted`` (enums by value, ``True`` is not ``1``)."""
    if isinstance(value, enum.Enum):
        value = value.value
    if not any(value is a or (type(value) is type(a) and value == a) for a in accepted):
        raise UnsupportedArgument(
            f"gsample.pyg.{_NAME}: {name}={_shown(value)} is not supported yet ({why})"
        )


class LinkNeighborLoader(_LinkLoader):
    """PyG's ``LinkNeighborLoader`` (homogeneous), sampled by gsample.

    Each mini-batch takes ``batch_size`` supervision edges (``edge_label_index``), adds
    PyG's negatives, samples the neighbourhood of every endpoint with
    :func:`gsample.pyg.neighbor_sample` (PyG's hops) and returns PyG's
    ``Data``.

    Parameters
    ----------
    data : torch_geometric.data.Data
        The graph and its node / edge attributes. ``HeteroData`` and ``(FeatureStore,
        GraphStore)`` are a ``TypeError`` naming ``data`` (not yet).
    num_neighbors : list of int
        In-neighbours per node at each hop (``-1``: all).
    edge_label_index : LongTensor, shape (2, L), optional
        The supervision edges (global ids); default ``data.edge_index``.
    edge_label : Tensor, shape (L,), optional
        Their labels. With binary negatives, labels starting at 0 are shifted by one, as
        PyG's: 0 means "negative".
    edge_label_time : Tensor, optional
        Temporal sampling: not supported yet (an :class:`UnsupportedArgument`).
    replace : bool
        Sample with replacement.
    subgraph_type : str or SubgraphType
        ``"directional"`` (PyG's default: the sampled edges) or ``"bidirectional"`` (the
        sampled edges and their reverses, coalesced, as PyG's
        ``SamplerOutput.to_bidirectional``: the same nodes, ``edge_label_index`` and
        ``edge_label``; ``num_sampled_nodes`` / ``num_sampled_edges`` are ``None``).
        ``"induced"`` is an :class:`UnsupportedArgument`; another value a ``ValueError``.
    disjoint : bool
        ``False`` only.
    temporal_strategy : str
        ``"uniform"`` only (temporal sampling is not supported yet).
    neg_sampling : NegativeSampling or dict, optional
        PyG's negative sampling, ``binary`` (``batch.edge_label_index`` holds the positives,
        then ``amount * L`` negatives, labelled 0) or ``triplet`` (``batch.src_index``,
        ``batch.dst_pos_index`` of shape ``(L,)`` and ``batch.dst_neg_index`` of shape
        ``(L,)`` or ``(L, amount)``). The negatives are drawn by PyG on the host, with
        torch's generator seeded from the mini-batch's key (so they are reproducible, but
        not yet on the graph's device under gsample's own stream).
    neg_sampling_ratio : int or float, optional
        PyG's deprecated ``neg_sampling=NegativeSampling("binary", ratio)``.
    time_attr : str, optional
        Temporal sampling: not supported yet.
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
        **kwargs,
    ):
        _require()
        if (edge_label_time is None) != (time_attr is None):  # PyG's check, PyG's words
            raise ValueError(
                "Received conflicting 'edge_label_time' and 'time_attr' arguments: "
                f"'edge_label_time' is {'not set' if edge_label_time is None else 'set'} "
                f"while 'time_attr' is {'not set' if time_attr is None else 'set'}. "
                "Both arguments must be provided for temporal sampling."
            )
        # LinkLoader's own arguments pass through; the rest must be the DataLoader's
        own = {k: kwargs.pop(k) for k in ("input_id",) if k in kwargs}
        kwargs = check_pyg_arguments(_NAME, kwargs)
        for name, value, accepted in (
            ("time_attr", time_attr, (None,)),
            ("edge_label_time", edge_label_time, (None,)),
            ("temporal_strategy", temporal_strategy, ("uniform",)),
            ("disjoint", disjoint, (False,)),
            ("neighbor_sampler", neighbor_sampler, (None,)),
        ):
            rule = PYG_ONLY.get(name)
            _refuse(name, value, accepted, _TEMPORAL if rule is None else rule.why)
        _refuse(
            "directed",
            directed,
            (True,),
            "directed=False is PyG's deprecated subgraph_type='induced'",
        )
        subgraph_type = subgraph_type_name(subgraph_type)  # a ValueError for unknown values
        # induced would need the link loader's own DSL program (induced_sample's slice)
        _refuse(
            "subgraph_type",
            subgraph_type,
            ("directional", "bidirectional"),
            "gsample's link loader samples directional or bidirectional subgraphs",
        )
        _check_data(data, _NAME)
        if isinstance(num_neighbors, dict):
            raise TypeError(
                "num_neighbors: a dict per edge type (heterogeneous sampling) is not "
                "supported yet; give a list of ints >= -1, one per hop"
            )
        if isinstance(num_neighbors, int) or not all(
            isinstance(k, int) and not isinstance(k, bool) and k >= -1 for k in num_neighbors
        ):
            raise TypeError(
                f"num_neighbors: expected a list of ints >= -1 (one per hop), got {num_neighbors!r}"
            )
        V.flag(is_sorted, "is_sorted")
        edge_ids = None
        if weight_attr is not None:
            A, edge_ids = _weighted_graph(data, weight_attr)
        else:
            A = _graph(data)
        hops = {
            "num_neighbors": tuple(num_neighbors),
            "replace": V.flag(replace, "replace"),
            "weighted": weight_attr is not None,
        }
        fn = gs_compile(neighbor_sample) if V.flag(compile, "compile") else neighbor_sample
        # bidirectional: the same draws, each batch's reverse edges added (PyG applies
        # to_bidirectional after edge_sample; the seeds / labels do not depend on the edges)
        post = to_bidirectional if subgraph_type == "bidirectional" else None
        sampler = Sampler(A, functools.partial(fn, **hops), seed=seed, edge_ids=edge_ids, post=post)
        self.num_neighbors, self.replace = list(num_neighbors), hops["replace"]
        self.subgraph_type = subgraph_type
        super().__init__(
            data=data,
            link_sampler=sampler,
            edge_label_index=edge_label_index,
            edge_label=edge_label,
            edge_label_time=None,
            neg_sampling=neg_sampling,
            neg_sampling_ratio=neg_sampling_ratio,
            transform=transform,
            transform_sampler_output=transform_sampler_output,
            filter_per_worker=filter_per_worker,
            **own,
            **kwargs,
        )
