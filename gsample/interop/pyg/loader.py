"""PyG integration: any gsample sampler inside PyG's loaders, and a drop-in ``NeighborLoader``.

* :class:`Sampler` is a ``torch_geometric.sampler.BaseSampler``: PyG's ``NodeLoader`` and
  ``LinkLoader`` (with PyG's negative sampling) run a gsample sampler function through it.
* :class:`NeighborLoader` takes PyG's ``NeighborLoader`` arguments (``num_neighbors``,
  ``input_nodes``, ``batch_size``, ``shuffle``, ``replace``, ``weight_attr``, ``transform``,
  ``transform_sampler_output``, ``filter_per_worker``, ``input_id``, ``subgraph_type``) and
  samples with :func:`neighbor_sample`, PyG's hop semantics written in the gsample DSL
  (``induced`` and ``bidirectional``: :mod:`gsample.interop.pyg.subgraph`); ``str(loader)``
  and ``loader(index)`` are PyG's; ``disjoint`` and temporal sampling (``time_attr``,
  ``input_time``, ``temporal_strategy``) run :mod:`gsample.interop.pyg.temporal`'s program.
  PyG's other arguments (:data:`PYG_ONLY`) are an :class:`UnsupportedArgument`
  (a ``TypeError`` and a ``ValueError``) naming them at any value but the one meaning what
  gsample does, before torch's ``DataLoader`` sees them.
* :func:`with_edge_weight`: the transform that puts a sampler's edge values (LADIES' and
  FastGCN's importance weights) on PyG's ``NodeLoader`` / ``LinkLoader`` batches as
  ``edge_weight``, as ``Batch.to_pyg()`` does (PyG rebuilds a batch from its ``Data`` by
  ``e_id``, which drops them).

Determinism (docs/architecture.md §3, consequence 5): every mini-batch is sampled inside
``gsample.base.random.batch_scope(epoch_seed, key)``, so its draws depend on the seed, the
epoch and ``key`` only, never on the process or worker that draws it, nor on the batches
drawn before it in that process (a worker holds a copy of the random stream, so drawing
from the stream itself made batches 0 and 1 of two workers identical). ``key`` is the
mini-batch's index in :class:`NeighborLoader` (which therefore samples exactly what
``gs.DataLoader(A, neighbor_sample, input_nodes, batch_size, shuffle, seed=seed)``
samples), and, inside PyG's own loaders, which do not tell a sampler the index, a hash of
the mini-batch's ``input_id`` set (its examples' positions in ``input_nodes``), which
identifies the mini-batch within an epoch. A link loader's negatives are drawn by gsample
from the same key (:mod:`gsample.interop.pyg.negatives`), on the graph's device.
"""

from __future__ import annotations

import collections
import enum
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass

import torch

from gsample.base import validate as V
from gsample.base.random import (
    MASK64,
    batch_scope,
    combine,
    hash_tensor,
    op_key,
    sort_key,
    stream_state,
)
from gsample.compiler.compiled import compile as gs_compile
from gsample.interop.pyg import data as _out
from gsample.interop.pyg import hetero_loader as _hetero
from gsample.interop.pyg import negatives as _negatives
from gsample.interop.pyg import stores as _stores
from gsample.interop.pyg import subgraph as _subgraph
from gsample.interop.pyg import temporal as _temporal
from gsample.matrix.sparse import Matrix

try:
    from torch_geometric.data import Data as _Data
    from torch_geometric.sampler import BaseSampler as _Base
except ImportError:  # the module imports without PyG; using it raises (_require)
    _Base, _Data = object, None


def _require():
    if _Base is object:
        raise ImportError("gsample.pyg needs PyTorch Geometric: pip install 'gsample[pyg]'")


class UnsupportedArgument(TypeError, ValueError):
    """A PyG loader argument, or a value of one, that gsample's loaders cannot honour yet.

    Both a ``TypeError`` (the argument is not one this loader takes, as Python says of an
    unexpected keyword) and a ``ValueError`` (the argument is PyG's, its value is the
    problem, as PyG says of a value it cannot sample): ``except`` either catches it.

    Examples
    --------
    >>> gsample.pyg.NeighborLoader(data, [10], sample_direction="backward")
    Traceback (most recent call last):
    UnsupportedArgument: gsample.pyg.NeighborLoader: sample_direction='backward' is not ...
    """


@dataclass(frozen=True)
class PygOnly:
    """A PyG loader argument gsample's loaders do not take as a parameter of their own.

    Attributes
    ----------
    accepted : tuple
        The values that mean what gsample does anyway (PyG's default, or a hint that
        changes nothing); any other value is refused.
    why : str
        Why another value is refused, and what to use instead (the
        :class:`UnsupportedArgument`'s text).
    """

    accepted: tuple
    why: str


_ANY_BOOL = (False, True)

#: Every argument of PyG's ``NeighborLoader``, ``NodeLoader`` and ``NeighborSampler`` that
#: :class:`NeighborLoader` does not take as a parameter: the one table its checks read
#: (``tests/test_interop_errors.py`` reads PyG's signatures, so a new PyG argument fails a
#: test until it is added here or taken).
PYG_ONLY = {
    "sample_direction": PygOnly(("forward",), "backward (temporal) sampling is not supported yet"),
    "neighbor_sampler": PygOnly(
        (None,),
        "a PyG NeighborSampler samples with PyG, not "
        "gsample; run a gsample sampler through gsample.pyg.Sampler in "
        "PyG's NodeLoader instead",
    ),
    "node_sampler": PygOnly(
        (None,),
        "this loader samples with gsample.pyg.neighbor_sample; "
        "for another sampler pass gsample.pyg.Sampler to PyG's NodeLoader",
    ),
    "custom_cls": PygOnly(
        (None,),
        "PyG's class of the batches of a (FeatureStore, GraphStore) input; a Data or "
        "HeteroData's batches are of its own class",
    ),
    # hints that change nothing here: gsample builds its own CSC from the Data (sorted or
    # not), and worker processes get the graph's tensors as torch shares a dataset's
    "is_sorted": PygOnly(
        _ANY_BOOL, "a hint, True or False: gsample builds its own CSC from the Data either way"
    ),
    "share_memory": PygOnly(
        _ANY_BOOL,
        "a hint, True or False: worker processes get the "
        "graph's tensors as torch shares a dataset's either way",
    ),
}

#: ``torch.utils.data.DataLoader`` arguments the loaders make themselves
_OWN = ("dataset", "sampler", "batch_sampler", "collate_fn")
#: every argument of ``torch.utils.data.DataLoader`` (the rest of a loader's ``**kwargs``)
_DATALOADER_ARGS = frozenset(inspect.signature(torch.utils.data.DataLoader).parameters)


def _accepted(value, accepted: tuple) -> bool:
    """Whether ``value`` is one of ``accepted`` (PyG's enums, as ``SubgraphType``, by value;
    ``True`` is not ``1``)."""
    if isinstance(value, enum.Enum):
        value = value.value
    return any(value is a or (type(value) is type(a) and value == a) for a in accepted)


def _shown(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"<tensor of shape {tuple(value.shape)}>"
    if isinstance(value, enum.Enum):
        return repr(value.value)
    text = repr(value)
    return text if len(text) <= 60 else f"<{type(value).__name__}>"


def check_pyg_arguments(loader: str, kwargs: dict) -> dict:
    """Refuse the PyG arguments a loader does not take (:data:`PYG_ONLY`, an
    :class:`UnsupportedArgument`) and any other keyword torch's ``DataLoader`` would not take
    either (a ``TypeError``), naming it; returns ``kwargs`` without the accepted ones of
    :data:`PYG_ONLY` (what is left goes to the ``DataLoader``).

    Parameters
    ----------
    loader : str
        The loader's name, for the messages (``"NeighborLoader"``).
    kwargs : dict
        The loader's ``**kwargs``.

    Examples
    --------
    >>> check_pyg_arguments("NeighborLoader", {"sample_direction": "backward"})
    Traceback (most recent call last):
    UnsupportedArgument: gsample.pyg.NeighborLoader: sample_direction='backward' is not ...
    >>> check_pyg_arguments("NeighborLoader", {"is_sorted": True, "num_workers": 2})
    {'num_workers': 2}
    """
    rest = {}
    for name, value in kwargs.items():
        rule = PYG_ONLY.get(name)
        if rule is not None:
            if not _accepted(value, rule.accepted):
                raise UnsupportedArgument(
                    f"gsample.pyg.{loader}: {name}={_shown(value)} is not "
                    f"supported yet ({rule.why})"
                )
        elif name in _OWN:
            raise TypeError(
                f"gsample.pyg.{loader}: {name} is not an argument (the loader makes its own)"
            )
        elif name not in _DATALOADER_ARGS:
            raise TypeError(
                f"gsample.pyg.{loader}: unexpected keyword argument {name!r} "
                f"(neither an argument of PyG's {loader} nor of "
                "torch.utils.data.DataLoader)"
            )
        else:
            rest[name] = value
    return rest


def neighbor_sample(
    A, seeds, num_neighbors=(25, 10), replace: bool = False, weighted: bool = False
):
    """PyG's neighbour sampling in the DSL: each hop samples only the nodes it first reached.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph; column ``j`` holds the in-edges of ``j``.
    seeds : LongTensor, shape (B,)
        The mini-batch's nodes (global ids, unique).
    num_neighbors : sequence of int
        In-neighbours sampled per node at each hop; ``-1`` keeps all of them.
    replace : bool
        Sample with replacement.
    weighted : bool
        Draw each node's in-neighbours with probability proportional to the edges' values
        (``A``'s values, non-negative; every column with edges has one positive), as
        :meth:`gs.Matrix.individual_sample` with ``probs``; default uniformly.

    Returns
    -------
    list of gs.Matrix
        ``blocks[h]``'s columns are the nodes first reached at hop ``h`` (the seeds for
        ``h = 0``) in ascending id order, each with its sampled in-edges. Once a hop
        reaches no new node, the later blocks have no column (shape ``(N, 0)``), as PyG's
        hops add no node and no edge then; their draws still take their op ordinals.

    Examples
    --------
    >>> blocks = neighbor_sample(A, seeds, (15, 10))
    >>> data = gs.Batch(seeds, 0, blocks).to_pyg()
    """
    return _subgraph.neighbor_hops(A, seeds, num_neighbors, replace, weighted)[0]


def batch_key(input_id: torch.Tensor) -> int:
    """A mini-batch's key from the set of its ``input_id``: a hash of the set (order does not
    matter), below ``2**62`` (a batch index of :func:`gsample.base.random.batch_scope`).

    Parameters
    ----------
    input_id : LongTensor, shape (B,)
        The mini-batch's examples' positions in the loader's input.

    Examples
    --------
    >>> batch_key(torch.tensor([4, 2])) == batch_key(torch.tensor([2, 4]))
    True
    """
    ids = input_id.reshape(-1).to(torch.int64)
    h = hash_tensor(0x5EED, torch.zeros_like(ids), ids).sum()  # wraps modulo 2**64
    return combine(ids.numel(), int(h) & MASK64) & ((1 << 62) - 1)


def _default_seed() -> int:
    """A seed drawn from gsample's stream (takes one ordinal, as ``gs.DataLoader`` does)."""
    stream = stream_state()
    key = op_key(stream.seed, stream.ordinal, stream.batch_index)
    stream.ordinal += 1
    return key


def _check_adjacency(data, name: str) -> None:
    """Refuse a ``Data`` whose graph is a sparse adjacency (``adj`` / ``adj_t``, as PyG's
    ``ToSparseTensor`` leaves it): PyG samples it ahead of ``edge_index``, gsample reads
    ``edge_index`` only, so sampling would silently see another (or no) graph."""
    for key in ("adj_t", "adj"):
        if getattr(data, key, None) is not None:
            layout = " (transposed: adj_t[dst, src])" if key == "adj_t" else ""
            raise TypeError(
                f"{name}.{key}: a graph stored as a sparse adjacency ({key}) is not "
                "supported yet; gsample samples the Data's edge_index (source, "
                "destination): build the Data without ToSparseTensor, or set edge_index "
                f"from {key}'s COO indices{layout} and delete {key}"
            )


def _graph(graph) -> Matrix:
    if isinstance(graph, Matrix):
        return graph
    if hasattr(graph, "edge_index"):
        _check_adjacency(graph, "graph")
        if graph.edge_index is None:  # a Data of nodes only: no edge to sample, as PyG
            return Matrix.from_edge_index(
                torch.empty(2, 0, dtype=torch.int64), num_nodes=graph.num_nodes
            )
        return Matrix.from_pyg(graph, weight=None)
    raise TypeError(
        f"graph: expected a gs.Matrix or a torch_geometric Data, got {type(graph).__name__}"
    )


class Sampler(_Base):
    """A ``torch_geometric.sampler.BaseSampler`` running a gsample sampler function.

    Parameters
    ----------
    graph : gs.Matrix or torch_geometric.data.Data
        The graph (a ``Data`` is read with ``gs.Matrix.from_pyg``, unweighted, so edge
        ids are positions in ``data.edge_index``).
    sampler_fn : callable
        ``sampler_fn(A, seeds) -> out``, plain or ``gs.compile``'d; ``out`` is blocks or
        an induced subgraph, mapped as :mod:`gsample.interop.pyg.data` says.
    seed : int, optional
        Seed of the sampler's stream; default drawn from gsample's stream now.
    edge_ids : LongTensor, shape (E',), optional
        The position in ``data.edge_index`` of each of ``graph``'s ``E'`` edges, when
        ``graph`` holds a subset of them (PyG's ``weight_attr``: the positive-weight
        edges): the batches' ``e_id`` are mapped through it, and the graph's values (the
        sampling weights, an attribute of the ``Data``) are not ``edge_weight``. Default:
        ``graph``'s edge ids are positions in ``data.edge_index``.
    post : callable, optional
        ``post(PygSample) -> PygSample``, applied to every mapped mini-batch before it
        becomes a ``SamplerOutput`` (``gsample.pyg.LinkNeighborLoader``'s
        ``subgraph_type="bidirectional"``: :func:`~gsample.interop.pyg.subgraph.to_bidirectional`,
        as PyG's ``NeighborSampler`` applies ``SamplerOutput.to_bidirectional``). Draws
        nothing: the samples stay those of ``sampler_fn``.
    disjoint : gsample.interop.pyg.temporal.DisjointSampler, optional
        PyG's disjoint (and temporal) sampling: it samples every mini-batch instead of
        ``sampler_fn`` (one tree per seed, at the seeds' times: ``input_time``,
        ``edge_label_time``), and the batches carry PyG's ``batch`` vector; link sampling is
        then disjoint (PyG's layout). ``gsample.pyg.LinkNeighborLoader`` makes one from
        ``disjoint`` / ``time_attr``.

    Notes
    -----
    Mini-batch keys: see :mod:`gsample.pyg`. With PyG's loaders the key is the set of
    the mini-batch's ``input_id``; ``shuffle=True`` gives other mini-batches, hence other
    draws, every epoch; without shuffling an epoch repeats the last one's draws unless
    :meth:`set_epoch` is called (before the epoch's iterator starts its workers).
    Results are on the device of the input nodes PyG passes (the CPU), as PyG's
    ``filter_data`` indexes the ``Data``'s tensors with them.

    Edge values (importance weights: LADIES, FastGCN) travel in the node-level
    ``SamplerOutput``'s ``metadata = (input_id, seed_time, edge_weight)``; PyG's loaders
    drop them when they rebuild the batch from the ``Data``: give the loader
    ``transform=gsample.pyg.with_edge_weight`` to get them as ``batch.edge_weight``.

    Examples
    --------
    >>> from torch_geometric.loader import NodeLoader
    >>> sampler = gsample.pyg.Sampler(data, functools.partial(graphsage, fanouts=(10, 5)))
    >>> for batch in NodeLoader(data, sampler, input_nodes=train_idx, batch_size=512):
    ...     out = model(batch.x, batch.edge_index)[:batch.batch_size]
    """

    def __init__(
        self,
        graph,
        sampler_fn: Callable,
        seed: int | None = None,
        edge_ids: torch.Tensor | None = None,
        post: Callable | None = None,
        disjoint=None,
    ):
        _require()
        if not callable(sampler_fn):
            raise TypeError("sampler_fn: must be callable as sampler_fn(A, seeds)")
        if post is not None and not callable(post):
            raise TypeError(f"post: must be callable or None, got {type(post).__name__}")
        seed = V.seed(seed, none_ok=True)
        self.A = _graph(graph)
        if edge_ids is not None:
            edge_ids = V.as_tensor(edge_ids, "edge_ids", None)
            if edge_ids.dim() != 1 or edge_ids.numel() != self.A.num_edges:
                raise ValueError(
                    f"edge_ids: expected one id per edge of graph, shape ({self.A.num_edges},); "
                    f"got {tuple(edge_ids.shape)}"
                )
            edge_ids = edge_ids.to(torch.int64)
        self.edge_ids = edge_ids
        self.sampler_fn = sampler_fn
        self.post = post  # PygSample -> PygSample (bidirectional: to_bidirectional) or None
        # disjoint / temporal sampling: a gsample.interop.pyg.temporal.DisjointSampler, which
        # samples instead of sampler_fn (its batches carry PyG's batch vector)
        self.disjoint = disjoint
        self.seed = _default_seed() if seed is None else seed & MASK64
        self.epoch = 0

    @property
    def num_nodes(self) -> int:
        return self.A.num_nodes

    def set_epoch(self, epoch: int) -> None:
        """Draw epoch ``epoch``'s samples (keys ``(seed, epoch, mini-batch)``)."""
        self.epoch = V.count(epoch, "epoch")

    def epoch_seed(self) -> int:
        return combine(combine(0, self.seed), self.epoch)

    def sample(self, seeds: torch.Tensor, key: int):
        """``sampler_fn(A, seeds)`` as mini-batch ``key`` of the current epoch.

        Parameters
        ----------
        seeds : LongTensor, shape (B,)
            Global ids.
        key : int
            The mini-batch's index (``0 <= key < 2**62``).

        Examples
        --------
        >>> blocks = sampler.sample(torch.tensor([0, 5, 9]), key=3)   # what batch 3 draws
        """
        seeds = V.ids(seeds, "seeds", self.A.num_nodes, None).to(self.A.device)
        with batch_scope(self.epoch_seed(), key):
            return self.sampler_fn(self.A, seeds)

    def _output(self, seeds: torch.Tensor, key: int, metadata=None, seed_time=None):
        """The ``SamplerOutput`` of mini-batch ``key`` on the seeds' device; ``metadata``
        ``(input_id, seed_time)`` gets the edge values (or None) as a third entry, and the
        batch is remembered for :func:`with_edge_weight`. ``seed_time``: the seeds' times
        (temporal sampling; default ``metadata``'s)."""
        if self.disjoint is not None:  # one tree per seed (gsample.interop.pyg.temporal)
            if seed_time is None and metadata is not None:
                seed_time = metadata[1]
            ids = V.ids(seeds, "seeds", self.A.num_nodes, None).to(self.A.device)
            times = self.disjoint.spec.seed_time(seeds, seed_time)
            with batch_scope(self.epoch_seed(), key):
                sample = self.disjoint.sample(ids, times)
        else:
            sample = _out.pyg_sample(self.sample(seeds, key), seeds.to(self.A.device))
        batch = getattr(sample, "batch", None)  # disjoint: each node's seed
        if self.post is not None:
            sample = self.post(sample)
        input_id, seed_time = metadata or (None, None)
        out = _out.to_sampler_output(sample, input_id, seed_time)
        device = seeds.device
        weight = None if sample.weight is None else sample.weight.to(device)
        edge = out.edge
        if self.edge_ids is not None:  # positions in the kept edges -> in data.edge_index
            edge, weight = self.edge_ids.to(edge.device)[edge], None
        out = out.__class__(
            node=out.node.to(device),
            row=out.row.to(device),
            col=out.col.to(device),
            edge=edge.to(device),
            batch=None if batch is None else batch.to(device),
            num_sampled_nodes=out.num_sampled_nodes,
            num_sampled_edges=out.num_sampled_edges,
            metadata=(out.metadata[0], seed_time, weight),
        )
        _remember(key, out.edge, weight)
        return out

    def sample_from_nodes(self, index, **kwargs):
        """PyG's node-level entry point: ``index`` is a ``NodeSamplerInput``; returns a
        ``SamplerOutput`` with ``metadata = (input_id, seed_time, edge_weight)``
        (``edge_weight``: the sampled matrices' values in ``edge`` order, or None; PyG's
        ``NodeLoader`` reads the first two, :func:`with_edge_weight` puts the third on the
        batch)."""
        if index.time is not None and not self._temporal():
            raise ValueError(
                "index: seed times (input_time) need a temporal sampler (gsample.pyg.Sampler "
                "with disjoint=DisjointSampler of a time_attr)"
            )
        input_id = index.input_id  # None: the seeds' positions, as PyG's
        if input_id is None:
            input_id = torch.arange(index.node.numel())
        return self._output(index.node, batch_key(input_id), (input_id, index.time))

    def _temporal(self) -> bool:
        return self.disjoint is not None and self.disjoint.spec.temporal

    def sample_from_edges(self, index, neg_sampling=None):
        """PyG's link-level entry point (``LinkLoader``): ``index`` is an
        ``EdgeSamplerInput``. The negatives of ``neg_sampling`` (PyG's ``NegativeSampling``,
        or :class:`gsample.interop.pyg.negatives.NegativeSampling` with ``strict``) are drawn
        by gsample on the graph's device (:meth:`negative_sampler`), keyed by the epoch, the
        mini-batch's key and their own op ordinal (``NEGATIVE_ORDINAL``); the seeds are both
        endpoints, unique (as PyG's ``NeighborSampler``), and ``metadata`` holds PyG's
        ``edge_label_index`` and ``edge_label`` (or the triplet indices), as PyG's
        ``edge_sample`` lays them out."""
        if index.time is not None and not self._temporal():
            raise ValueError(
                "index: edge_label_time needs a temporal sampler (gsample.pyg.Sampler with "
                "disjoint=DisjointSampler of a time_attr)"
            )
        key = batch_key(index.input_id)

        def sample_fn(seed, seed_time):
            return self._output(seed, key, seed_time=seed_time)

        negatives = None if neg_sampling is None else self.negative_sampler(neg_sampling)
        return _negatives.edge_sample(
            index,
            sample_fn,
            negatives,
            neg_sampling,
            key=op_key(self.epoch_seed(), _negatives.NEGATIVE_ORDINAL, key),
            disjoint=self.disjoint is not None,
        )

    def negative_sampler(
        self,
        neg_sampling,
        edge_index: torch.Tensor | None = None,
        node_time: torch.Tensor | None = None,
    ):
        """The :class:`~gsample.interop.pyg.negatives.NegativeSampler` of ``neg_sampling``
        (its weights and ``strict``) on this graph's device, built once per
        ``neg_sampling`` object (a loader passes the same one every mini-batch).

        Parameters
        ----------
        neg_sampling : NegativeSampling
            PyG's, or gsample's (with ``strict``).
        edge_index : LongTensor, shape (2, E), optional
            The edges ``strict`` excludes; default the sampled graph's.
        node_time : Tensor, shape (N,), optional
            Temporal negatives: each negative exists at its positive's time.

        ``edge_index`` and ``node_time``, once given, are kept for later ``neg_sampling``
        objects (``LinkNeighborLoader`` gives the ``Data``'s edges, zero-weight edges
        included under ``weight_attr``).

        Examples
        --------
        >>> neg = sampler.negative_sampler(NegativeSampling("binary", strict=True))
        >>> neg(src, dst, "binary", 1, key=0).dst          # none an edge of the graph
        """
        cached = getattr(self, "_negative_cache", None)
        if cached is not None:
            if edge_index is None and node_time is None and cached[0] is neg_sampling:
                return cached[3]
            edge_index = cached[1] if edge_index is None else edge_index
            node_time = cached[2] if node_time is None else node_time
        graph = self.A if edge_index is None else edge_index.to(self.A.device)
        sampler = _negatives.sampler_for(neg_sampling, graph, self.A.num_nodes, node_time)
        self._negative_cache = (neg_sampling, edge_index, node_time, sampler)
        return sampler


#: the last mini-batches :class:`Sampler` drew in this process, by key: ``(edge ids, edge
#: values or None)``, for :func:`with_edge_weight` (PyG runs a loader's transform right
#: after its sampler, in the same process: a few entries are enough; the oldest go first)
_RECENT: collections.OrderedDict = collections.OrderedDict()
_RECENT_SIZE = 8


def _remember(key: int, edge: torch.Tensor, weight) -> None:
    _RECENT[key] = (edge, weight)
    _RECENT.move_to_end(key)
    while len(_RECENT) > _RECENT_SIZE:
        _RECENT.popitem(last=False)


def with_edge_weight(data):
    """PyG loader transform: the sampler's edge values as ``data.edge_weight``.

    PyG's ``NodeLoader`` and ``LinkLoader`` rebuild a mini-batch from their ``Data`` by the
    sampled edge ids (``e_id``), so the values a gsample sampler gives its edges (LADIES'
    and FastGCN's importance weights, which ``Batch.to_pyg()`` puts in ``edge_weight``) do
    not reach the batch. :class:`Sampler` keeps them in its ``SamplerOutput``'s
    ``metadata`` and remembers its last mini-batches; this transform, given as the
    loader's ``transform=`` (first, if composed: ``T.Compose([gp.with_edge_weight, ...])``),
    looks its batch up by ``input_id`` and sets ``edge_weight`` (aligned with
    ``edge_index`` and ``e_id``); a batch whose sampler gave no values gets none.

    It must run in the process that sampled the batch: PyG's default for a ``Data`` on
    the CPU (``filter_per_worker=True``), or any loader without worker processes. Else,
    and when the batch's edges are not those the sampler drew (a
    ``transform_sampler_output`` that changes them), it raises a ``RuntimeError``.

    Parameters
    ----------
    data : torch_geometric.data.Data
        A mini-batch of PyG's ``NodeLoader`` / ``LinkLoader`` over :class:`Sampler`
        (``input_id``, ``e_id``).

    Returns
    -------
    torch_geometric.data.Data
        ``data``, with ``edge_weight`` of shape ``(E,)`` (or ``(E, F)``) when the sampler's
        matrices have values.

    Examples
    --------
    >>> sampler = gp.Sampler(ladies.normalize(A), functools.partial(ladies.ladies,
    ...                                                         layers=(512, 512)))
    >>> loader = NodeLoader(data, sampler, batch_size=256, transform=gp.with_edge_weight)
    >>> batch = next(iter(loader))
    >>> out = model(batch.x, batch.edge_index, batch.edge_weight)
    """
    if getattr(data, "input_id", None) is None or getattr(data, "e_id", None) is None:
        raise TypeError(
            "data: expected a mini-batch of PyG's NodeLoader or LinkLoader over "
            "gsample.pyg.Sampler (with input_id and e_id)"
        )
    entry = _RECENT.pop(batch_key(data.input_id), None)
    if entry is None:
        raise RuntimeError(
            "with_edge_weight: gsample.pyg.Sampler did not sample this "
            "mini-batch in this process; the transform must run where the "
            "batch was sampled: give the loader filter_per_worker=True (PyG's "
            "default for a Data on the CPU) or num_workers=0"
        )
    edge, weight = entry
    if not torch.equal(edge, data.e_id.to(edge.device)):
        raise RuntimeError(
            "with_edge_weight: the batch's edges (e_id) are not those "
            "gsample.pyg.Sampler drew for it (a transform_sampler_output that "
            "changes edges, or a transform before this one?)"
        )
    if weight is not None:
        data.edge_weight = weight
    return data


class _EpochBatches(torch.utils.data.Sampler):
    """Yields ``(epoch_seed, i)`` for every mini-batch of the current epoch, in the main
    process, so the epoch travels with each index to whichever worker samples it. The
    loader sets ``epoch_seed`` when an epoch starts (torch may iterate a sampler more than
    once per epoch: its worker iterator resets it on creation)."""

    def __init__(self, num_batches: int):
        self.num_batches, self.epoch_seed = num_batches, 0

    def __len__(self) -> int:
        return self.num_batches

    def __iter__(self):
        return iter([(self.epoch_seed, i) for i in range(self.num_batches)])


class _MiniBatches(torch.utils.data.Dataset):
    """Mini-batch ``(epoch_seed, i)``: its seeds (as ``gs.DataLoader`` orders an epoch),
    sampled in ``batch_scope(epoch_seed, i)`` and, where PyG would (``filter_per_worker``),
    joined with the ``Data``'s attributes (:meth:`filter`, PyG's ``filter_fn``).

    ``join(node, row, col, edge)`` builds a batch's ``Data`` instead of PyG's
    ``filter_data`` (a ``(FeatureStore, GraphStore)``: :mod:`gsample.interop.pyg.stores`);
    ``hetero`` (a :class:`~gsample.interop.pyg.hetero_loader.HeteroBatches`) samples and
    builds the batches of a ``HeteroData`` (``A`` its graph, ``fn`` unused)."""

    def __init__(
        self,
        data,
        A,
        fn,
        input_nodes,
        input_id,
        batch_size,
        shuffle,
        transform,
        transform_sampler_output,
        filter_per_worker,
        edge_ids=None,
        post=None,
        join=None,
        hetero=None,
        disjoint=None,
        input_time=None,
    ):
        self.data, self.A, self.fn = data, A, fn
        self.join, self.hetero = join, hetero
        # disjoint / temporal sampling (a gsample.interop.pyg.temporal.DisjointSampler) and
        # each input node's time (PyG's input_time)
        self.disjoint, self.input_time = disjoint, input_time
        self.post = post  # PygSample -> PygSample (bidirectional: to_bidirectional) or None
        # weight_attr: the sampled graph holds the positive-weight edges only; their ids in
        # data.edge_index, and the weights are the Data's (filter_data slices them), not
        # edge values of the sample
        self.edge_ids = None if edge_ids is None else edge_ids.to(A.device)
        self.input_nodes, self.input_id = input_nodes, input_id
        self.batch_size, self.shuffle = batch_size, shuffle
        self.transform, self.transform_sampler_output = transform, transform_sampler_output
        self.filter_per_worker = filter_per_worker
        self._order = (None, None)  # (epoch_seed, positions): one per epoch

    def positions(self, epoch_seed: int) -> torch.Tensor:
        """This epoch's order of the input positions (``gs.DataLoader``'s shuffle)."""
        if self._order[0] != epoch_seed:
            pos = torch.arange(self.input_nodes.numel(), device=self.input_nodes.device)
            if self.shuffle:
                keys = sort_key(hash_tensor(epoch_seed, torch.full_like(pos, -1), pos))
                pos = pos[torch.argsort(keys, stable=True)]
            self._order = (epoch_seed, pos)
        return self._order[1]

    def __getitem__(self, item):
        epoch_seed, i = item
        positions = self.positions(epoch_seed)[i * self.batch_size : (i + 1) * self.batch_size]
        out = self.sample(positions, epoch_seed, i)
        return self.filter(out) if self.filter_per_worker else out

    def sample(self, positions: torch.Tensor, epoch_seed: int, key: int):
        """The ``SamplerOutput`` of the input positions ``positions`` drawn as mini-batch
        ``key`` (``metadata = (input_id, None, edge_weight)``, as :class:`Sampler`'s)."""
        # import here: PyTorch Geometric is optional (the module imports without it)
        from torch_geometric.sampler import SamplerOutput

        seeds = self.input_nodes[positions]
        seed_time = None if self.input_time is None else self.input_time[positions]
        if self.hetero is not None:  # seeds of the input node type; metadata alike
            input_id = positions if self.input_id is None else self.input_id[positions]
            with batch_scope(epoch_seed, key):
                return self.hetero.sample_nodes(seeds, input_id, seed_time)
        with batch_scope(epoch_seed, key):
            if self.disjoint is not None:  # one tree per seed, at the seed's time
                times = self.disjoint.spec.seed_time(seeds, seed_time)
                s = self.disjoint.sample(seeds.to(self.A.device), times)
            else:
                out = self.fn(self.A, seeds.to(self.A.device))
                s = _out.pyg_sample(out, seeds.to(self.A.device))
        batch = getattr(s, "batch", None)  # disjoint: each node's seed
        if self.post is not None:
            s = self.post(s)
        cpu = self.input_nodes.device
        input_id = positions if self.input_id is None else self.input_id[positions]
        weight = None if s.weight is None else s.weight.to(cpu)
        edge = s.edge
        if self.edge_ids is not None:
            edge, weight = self.edge_ids[edge], None
        return SamplerOutput(
            node=s.node.to(cpu),
            row=s.row.to(cpu),
            col=s.col.to(cpu),
            edge=edge.to(cpu),
            batch=None if batch is None else batch.to(cpu),
            num_sampled_nodes=s.num_sampled_nodes,
            num_sampled_edges=s.num_sampled_edges,
            metadata=(input_id, seed_time, weight),
        )

    def filter(self, out):
        """PyG's ``filter_fn``: ``transform_sampler_output``, then the ``Data``'s attributes
        of the sampled nodes and edges, PyG's fields, ``edge_weight`` when the sample has
        edge values, then ``transform``."""
        # import here: PyTorch Geometric is optional (the module imports without it)
        from torch_geometric.loader.utils import filter_data

        if self.transform_sampler_output is not None:
            out = self.transform_sampler_output(out)
        if self.hetero is not None:
            data = self.hetero.filter(out)
            return data if self.transform is None else self.transform(data)
        if self.join is None:
            data = filter_data(self.data, out.node, out.row, out.col, out.edge, None)
        else:
            data = self.join(out.node, out.row, out.col, out.edge)
        if "n_id" not in data:
            data.n_id = out.node
        if out.edge is not None and "e_id" not in data:
            data.e_id = out.edge
        data.num_sampled_nodes, data.num_sampled_edges = (
            out.num_sampled_nodes,
            out.num_sampled_edges,
        )
        input_id = out.metadata[0]
        data.input_id, data.batch_size = input_id, input_id.numel()
        if out.batch is not None:  # disjoint: PyG's batch vector, and the seeds' times
            data.batch = out.batch
        if out.metadata[1] is not None:
            data.seed_time = out.metadata[1]
        weight = out.metadata[2] if len(out.metadata) > 2 else None
        if weight is not None:
            data.edge_weight = weight
        return data if self.transform is None else self.transform(data)


def _identity(x):
    return x


def _batch_options(data, batch_size, transform, transform_sampler_output, filter_per_worker):
    """``batch_size`` checked and ``filter_per_worker`` decided (PyG's inference: True
    unless ``data`` is on a GPU); the transforms must be callable or None."""
    batch_size = V.count(batch_size, "batch_size", low=1)
    for name, f in (
        ("transform", transform),
        ("transform_sampler_output", transform_sampler_output),
    ):
        if f is not None and not callable(f):
            raise TypeError(f"{name}: must be callable or None, got {type(f).__name__}")
    if filter_per_worker is None:  # PyG's inference: a Data on a GPU filters in main
        filter_per_worker = not getattr(data, "is_cuda", False)
    return batch_size, V.flag(filter_per_worker, "filter_per_worker")


def _check_data(data, loader: str = "NeighborLoader") -> None:
    """``data`` must be a homogeneous ``Data`` whose graph is its ``edge_index`` (or none);
    ``loader`` names the gsample.pyg loader in the message. (The loaders take a
    ``HeteroData`` or a ``(FeatureStore, GraphStore)`` before they get here.)"""
    if _Data is None or not isinstance(data, _Data):
        got = type(data).__name__
        if isinstance(data, (tuple, list)):
            got = f"a {got} ({', '.join(type(d).__name__ for d in data)})"
        raise TypeError(
            "data: expected a torch_geometric Data, a HeteroData or a (FeatureStore, "
            f"GraphStore) pair in gsample.pyg.{loader}, got {got}"
        )
    _check_adjacency(data, "data")
    _hetero.check_sliceable(data, "data")  # PyG's filter_data slices them per batch


def _check_fanouts(num_neighbors) -> None:
    """A homogeneous loader's ``num_neighbors``: a list of ints ``>= -1``, one per hop."""
    if isinstance(num_neighbors, dict):
        raise TypeError(
            "num_neighbors: a dict per edge type is for a HeteroData (this graph is "
            "homogeneous); give a list of ints >= -1, one per hop"
        )
    if isinstance(num_neighbors, int) or not all(
        isinstance(k, int) and not isinstance(k, bool) and k >= -1 for k in num_neighbors
    ):
        raise TypeError(
            f"num_neighbors: expected a list of ints >= -1 (one per hop), got {num_neighbors!r}"
        )


def _weighted_graph(data, weight_attr: str) -> tuple[Matrix, torch.Tensor]:
    """The graph to sample by ``data[weight_attr]`` (PyG's ``weight_attr``): its edges of
    positive weight, each with its weight as value, and their positions in
    ``data.edge_index`` (the sample's edge ids are positions in the kept edges)."""
    if not isinstance(weight_attr, str):
        raise TypeError(
            f"weight_attr: the name of an edge attribute (a str) or None, got "
            f"{type(weight_attr).__name__}"
        )
    w = getattr(data, weight_attr, None)
    num_edges = 0 if data.edge_index is None else data.edge_index.shape[1]
    if not isinstance(w, torch.Tensor):
        raise ValueError(f"weight_attr: data has no tensor attribute {weight_attr!r}")
    if w.dim() != 1 or w.numel() != num_edges or not w.is_floating_point():
        raise ValueError(
            f"weight_attr: data.{weight_attr} must hold one floating-point weight per edge, "
            f"shape ({num_edges},); got dtype {w.dtype} and shape {tuple(w.shape)}"
        )
    if not bool(torch.isfinite(w).all()) or bool((w < 0).any()):
        raise ValueError(
            f"weight_attr: data.{weight_attr} must be finite and non-negative (PyG's "
            "sampling weights)"
        )
    kept = torch.nonzero(w > 0).reshape(-1)
    edge_index = data.edge_index[:, kept] if num_edges else torch.empty(2, 0, dtype=torch.long)
    A = Matrix.from_edge_index(edge_index, num_nodes=data.num_nodes, weight=w[kept])
    return A, kept


class NeighborLoader(torch.utils.data.DataLoader):
    """PyG's ``NeighborLoader``, sampled by gsample (:func:`neighbor_sample`, compiled).

    Parameters
    ----------
    data : torch_geometric.data.Data, HeteroData, or (FeatureStore, GraphStore)
        The graph and its node / edge attributes (``x``, ``y``, ``edge_attr``, ... are
        sliced into each mini-batch as PyG's loader does: dense, or sparse COO; another
        sparse layout is a ``TypeError`` naming the attribute). A ``Data`` without
        ``edge_index`` is a graph of no edge, as PyG's; one whose graph is a sparse
        adjacency (``adj_t``, ``adj``) is a ``TypeError`` naming it. A ``HeteroData`` is
        sampled per edge type by ``gs.HeteroGraph.sample_neighbors`` (one compiled step per
        hop and edge type: :mod:`gsample.interop.pyg.hetero_loader`) into PyG's
        ``HeteroData`` batches. A ``(FeatureStore, GraphStore)`` pair is read once into
        its graph (:mod:`gsample.interop.pyg.stores`) and its batches are built by PyG's
        ``filter_custom_store`` / ``filter_custom_hetero_store``; PyG's ``custom_cls``
        names their class.
    num_neighbors : list of int, or dict
        In-neighbours per node at each hop (``-1``: all). ``[]``: batches of the seeds
        alone (``n_id`` the seeds, no edge), as PyG's. For a ``HeteroData``, a list applies
        to every edge type, or PyG's ``{edge_type: [k, ...]}`` names every edge type (a
        missing or unknown one, or lists of different lengths: PyG's ``ValueError``).
    input_nodes : LongTensor of shape (S,), or BoolTensor of shape (N,), optional
        Seed nodes: ids, or a mask over the ``N`` nodes (its nonzero ids; another length
        is a ``ValueError``); default all nodes. Empty: an epoch of no mini-batch, as PyG's.
        For a ``HeteroData``: ``node_type``, ``(node_type, ids)``, ``(node_type, mask)`` or
        ``(node_type, None)`` (required, as PyG's).
    batch_size : int
        Seeds per mini-batch, ``>= 1``.
    shuffle : bool
        Shuffle the seeds every epoch (gsample's hash permutation, as ``gs.DataLoader``).
    replace : bool
        Sample with replacement.
    drop_last : bool
        Drop the last, smaller mini-batch.
    seed : int, optional
        The loader's seed; default drawn from gsample's stream now. Epoch ``e`` draws with
        ``combine(combine(0, seed), e)``, mini-batch ``i`` with index ``i``: the samples
        ``gs.DataLoader(..., seed=seed)`` draws, whatever ``num_workers``.
    graph : gs.Matrix or gs.HeteroGraph, optional
        The graph as a gsample matrix (e.g. already on a GPU; then keep
        ``num_workers=0``); default ``gs.Matrix.from_pyg(data, weight=None)``. Its edge
        values, when it has any, become each batch's ``edge_weight``. For a
        ``HeteroData``: a ``gs.HeteroGraph`` of its node and edge types and counts.
    compile : bool
        Compile the sampler with ``gs.compile`` (default True; on a GPU its ops run the
        CUDA backend's kernels). A ``HeteroData``'s per-(hop, edge type) step is compiled
        (``loader.graph.step_sampler()``, cached on the graph), the loop over hops and edge
        types staying in Python. ``False`` runs the same sampler eagerly: the same batches.
    transform : callable, optional
        Applied to each mini-batch's ``Data``.
    transform_sampler_output : callable, optional
        Applied to each mini-batch's ``SamplerOutput`` before the ``Data`` is built from
        it (PyG's; ``metadata = (input_id, None, edge_weight)``).
    filter_per_worker : bool, optional
        Build each batch's ``Data`` in the worker process that sampled it (True) or in the
        main process (False); default, as PyG: True unless ``data`` is on a GPU. It moves
        work between processes only: the batches are the same either way, and with
        ``num_workers=0`` it changes nothing.
    input_id : Tensor, shape (S,), optional
        What each seed is reported as in ``batch.input_id`` (PyG's); default its position
        in ``input_nodes``, or, for a mask, its node id (as PyG).
    weight_attr : str, optional
        PyG's weighted sampling: ``data[weight_attr]``, one finite non-negative weight per
        edge, makes each hop draw a node's in-neighbours with probability proportional to
        the weights (without replacement: ``k`` sequential draws among the edges not yet
        drawn, :meth:`gs.Matrix.individual_sample`). An edge of weight 0 is never sampled,
        at any hop (``-1`` keeps every edge of positive weight). The weights stay an
        attribute of the batch (sliced by ``e_id``), not ``edge_weight``. Not with
        ``graph=`` (a ``ValueError``).
    subgraph_type : {"directional", "bidirectional", "induced"} or PyG's SubgraphType
        PyG's: which edges a batch carries; the nodes (``n_id``) are the same for all three
        with the same seed (:mod:`gsample.interop.pyg.subgraph`). ``"directional"``: the
        sampled edges. ``"bidirectional"``: the sampled edges and their reverses (a reverse
        carries its sampled edge's ``e_id``), coalesced. ``"induced"``: every edge of the
        graph between two sampled nodes (with ``weight_attr``: every edge of positive
        weight). The last two have no hop structure: ``num_sampled_nodes`` /
        ``num_sampled_edges`` are None, as PyG's. Another value is a ``ValueError``.
    directed : bool
        PyG's deprecated spelling: ``False`` means ``subgraph_type="induced"``.
    input_time : Tensor, shape (S,), optional
        PyG's: each input node's time (integer or floating point, as ``data[time_attr]``),
        its tree's time; the batch's ``seed_time``. Needs ``time_attr``; default, for a
        node-level time, the seed's own (an edge-level one needs it).
    disjoint : bool
        PyG's: one tree per seed (a node reached from two seeds appears twice); the batch's
        ``batch`` gives each node's seed (its position in the mini-batch). Implied by
        ``time_attr``. Not with ``subgraph_type="induced"``. A ``HeteroData``: ``batch`` per
        node type (:meth:`gs.HeteroGraph.sample_disjoint`).
    temporal_strategy : {"uniform", "last"}
        PyG's: uniformly among the allowed edges, or the ``k`` most recent (ties: the larger
        edge id).
    time_attr : str, optional
        PyG's temporal sampling: a node-level attribute of ``data`` (a neighbour is allowed
        when its time is ``<=`` its seed's) or an edge-level one (an edge is allowed when
        its time is). :mod:`gsample.interop.pyg.temporal`.
    **kwargs
        ``torch.utils.data.DataLoader`` options: ``num_workers``, ``persistent_workers``,
        ``pin_memory``, ... PyG's other arguments are in :data:`PYG_ONLY`: each is an
        :class:`UnsupportedArgument` (a ``TypeError`` and a ``ValueError``) naming it
        unless its value means what gsample does. An argument neither PyG's loader nor
        torch's takes is a ``TypeError``.

    Notes
    -----
    ``str(loader)`` is ``'NeighborLoader()'``, as PyG's; ``loader(index)`` returns the
    batch of the input positions ``index`` (:meth:`__call__`).

    Examples
    --------
    >>> loader = gsample.pyg.NeighborLoader(data, num_neighbors=[25, 10], batch_size=512,
    ...                                     input_nodes=data.train_mask, shuffle=True)
    >>> for batch in loader:
    ...     out = model(batch.x, batch.edge_index)[:batch.batch_size]
    >>> induced = gsample.pyg.NeighborLoader(data, [25, 10], subgraph_type="induced")
    >>> temporal = gsample.pyg.NeighborLoader(data, [10, 5], time_attr="time")
    >>> batch = next(iter(temporal))              # batch.batch: each node's seed
    """

    def __init__(
        self,
        data,
        num_neighbors,
        input_nodes=None,
        batch_size: int = 1,
        shuffle: bool = False,
        replace: bool = False,
        drop_last: bool = False,
        seed: int | None = None,
        graph: Matrix | None = None,
        compile: bool = True,
        transform: Callable | None = None,
        transform_sampler_output: Callable | None = None,
        filter_per_worker: bool | None = None,
        input_id=None,
        weight_attr: str | None = None,
        subgraph_type="directional",
        directed: bool = True,
        input_time=None,
        disjoint: bool = False,
        temporal_strategy: str = "uniform",
        time_attr: str | None = None,
        **kwargs,
    ):
        _require()
        stores = _stores.is_stores(data)
        # PyG's custom_cls: the class of the batches of a (FeatureStore, GraphStore)
        custom_cls = kwargs.pop("custom_cls", None) if stores else None
        kwargs = check_pyg_arguments("NeighborLoader", kwargs)  # before anything is built
        subgraph_type = _subgraph.subgraph_type_name(subgraph_type, directed)
        join = None  # a batch's attributes: PyG's filter_data of `data`
        if stores:  # the stores' graph (and times) as a Data / HeteroData; batches from them
            data, join = _stores.as_data(
                data, custom_cls, weight_attr, "NeighborLoader", time_attr=time_attr
            )
        # disjoint / temporal (a HeteroData's: per-type times)
        spec = _temporal.TemporalSpec.of(data, disjoint, time_attr, temporal_strategy)
        _temporal.check_input_time(spec, input_time)
        if _hetero.is_hetero(data):  # per-type sampling, in this loader's epochs
            batches = _hetero.HeteroBatches(
                data,
                num_neighbors,
                replace,
                weight_attr,
                subgraph_type,
                graph,
                join,
                spec,
                compile=compile,
            )
            batches.input_type, input_nodes, input_id = _hetero.input_nodes_of(
                input_nodes, input_id, batches.graph.num_nodes_dict
            )
            if spec is not None:  # PyG's input_time: one per input node
                input_time = spec.input_time(input_time, input_nodes.numel())
            batch_size, filter_per_worker = _batch_options(
                data, batch_size, transform, transform_sampler_output, filter_per_worker
            )
            self.num_neighbors, self.replace = num_neighbors, batches.replace
            self.graph, self.subgraph_type = batches.graph, subgraph_type
            dataset = _MiniBatches(
                data,
                batches.graph,
                None,
                input_nodes,
                input_id,
                batch_size,
                V.flag(shuffle, "shuffle"),
                transform,
                transform_sampler_output,
                filter_per_worker,
                hetero=batches,
                input_time=input_time,
            )
            self._start(dataset, seed, drop_last, kwargs)
            return
        _check_data(data)
        _check_fanouts(num_neighbors)
        edge_ids = None  # the sampled graph's edge ids are positions in data.edge_index
        if weight_attr is not None:
            if graph is not None:
                raise ValueError(
                    "weight_attr: give the sampling weights either as an attribute of the "
                    "Data (weight_attr) or as the values of graph=, not both"
                )
            A, edge_ids = _weighted_graph(data, weight_attr)
        else:
            A = _graph(data) if graph is None else graph
        if not isinstance(A, Matrix) or A.num_nodes != data.num_nodes:
            raise ValueError(f"graph: expected a gs.Matrix of the data's {data.num_nodes} nodes")
        input_nodes, input_id = _hetero.input_seeds(
            input_nodes, data.num_nodes, "input_nodes", input_id
        )
        batch_size, filter_per_worker = _batch_options(
            data, batch_size, transform, transform_sampler_output, filter_per_worker
        )
        seed = V.seed(seed, none_ok=True)
        replace = V.flag(replace, "replace")
        hops = {
            "num_neighbors": tuple(num_neighbors),
            "replace": replace,
            "weighted": weight_attr is not None,
        }
        # induced: a DSL program of its own (its draws are neighbor_sample's); bidirectional:
        # neighbor_sample's batch with its reverse edges added (PyG's to_bidirectional)
        program = _subgraph.induced_sample if subgraph_type == "induced" else neighbor_sample
        post = _subgraph.to_bidirectional if subgraph_type == "bidirectional" else None
        if spec is not None:  # one tree per seed: gsample.interop.pyg.temporal's program
            if subgraph_type == "induced":
                raise ValueError(
                    "subgraph_type: 'induced' subgraphs are not disjoint (one subgraph per "
                    "mini-batch); with disjoint=True or time_attr use 'directional' or "
                    "'bidirectional'"
                )
            input_time = spec.input_time(input_time, input_nodes.numel())
            program, hops["strategy"] = _temporal.disjoint_sample, spec.strategy
        fn = functools.partial(program, **hops)
        if V.flag(compile, "compile"):
            fn = functools.partial(gs_compile(program), **hops)
        sampler = None if spec is None else _temporal.DisjointSampler(A, fn, spec, edge_ids)
        self.num_neighbors, self.replace, self.graph = list(num_neighbors), replace, A
        self.subgraph_type = subgraph_type
        dataset = _MiniBatches(
            data,
            A,
            fn,
            input_nodes,
            input_id,
            batch_size,
            V.flag(shuffle, "shuffle"),
            transform,
            transform_sampler_output,
            filter_per_worker,
            edge_ids,
            post,
            join=join,
            disjoint=sampler,
            input_time=input_time,
        )
        self._start(dataset, seed, drop_last, kwargs)

    def _start(self, dataset, seed: int | None, drop_last: bool, kwargs: dict) -> None:
        """torch's ``DataLoader`` over ``dataset``'s mini-batches (a ``_MiniBatches``), in
        epochs of this loader's seed (default drawn from gsample's stream now)."""
        seed = V.seed(seed, none_ok=True)
        seed = _default_seed() if seed is None else seed
        n, size = dataset.input_nodes.numel(), dataset.batch_size
        num_batches = n // size if V.flag(drop_last, "drop_last") else -(-n // size)
        self.seed = seed & MASK64
        self.epoch = 0
        self.batches = _EpochBatches(num_batches)
        super().__init__(
            dataset, batch_size=None, sampler=self.batches, collate_fn=_identity, **kwargs
        )

    def __iter__(self):
        """An epoch: its seed is ``combine(combine(0, seed), epoch)``, as ``gs.DataLoader``'s."""
        self.batches.epoch_seed = combine(combine(0, self.seed), self.epoch)
        self.epoch += 1
        return super().__iter__()

    def _get_iterator(self):
        """torch's iterator; with ``filter_per_worker=False`` each batch's ``Data`` is built
        in this process (PyG's ``DataLoaderIterator``)."""
        iterator = super()._get_iterator()
        if self.dataset.filter_per_worker:
            return iterator
        # import here: PyTorch Geometric is optional (the module imports without it)
        from torch_geometric.loader.base import DataLoaderIterator

        return DataLoaderIterator(iterator, self.dataset.filter)

    def __call__(self, index):
        """PyG's ``loader(index)``: the mini-batch of the input positions ``index`` (into
        ``input_nodes``), with the fields of an iterated batch, drawn now in the current
        epoch (the last one started; epoch 0 before any). When ``index`` is mini-batch
        ``i`` of that epoch, in its order, the batch is the one iteration gives (drawn as
        mini-batch ``i``); any other ``index`` is drawn as mini-batch ``batch_key(index)``.

        Parameters
        ----------
        index : LongTensor of shape (B,), or list of int
            Positions in ``input_nodes`` (PyG's ``NodeLoader.__call__``).

        Returns
        -------
        torch_geometric.data.Data
            As iteration's batches (``transform`` applied).

        Examples
        --------
        >>> batch = loader([0, 5])          # seeds input_nodes[0] and input_nodes[5]
        >>> batch.n_id[:2]
        >>> torch.equal(loader(torch.arange(512)).n_id, next(iter(loader)).n_id)  # no shuffle
        True
        """
        positions = V.ids(index, "index", self.dataset.input_nodes.numel(), None).cpu()
        epoch_seed = combine(combine(0, self.seed), max(self.epoch - 1, 0))
        key = self._batch_index(positions, epoch_seed)
        out = self.dataset.sample(
            positions, epoch_seed, batch_key(positions) if key is None else key
        )
        return self.dataset.filter(out)

    def _batch_index(self, positions: torch.Tensor, epoch_seed: int) -> int | None:
        """``i`` when ``positions`` are exactly mini-batch ``i`` of the epoch ``epoch_seed``
        draws (same order), else None."""
        if positions.numel() == 0:
            return None
        order, size = self.dataset.positions(epoch_seed), self.dataset.batch_size
        start = int(torch.nonzero(order == positions[0])[0, 0])
        i = start // size
        if start % size or i >= len(self.batches):
            return None
        return i if torch.equal(order[start : start + size], positions) else None

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}()"


__all__ = [
    "PYG_ONLY",
    "NeighborLoader",
    "PygOnly",
    "Sampler",
    "UnsupportedArgument",
    "batch_key",
    "check_pyg_arguments",
    "neighbor_sample",
    "with_edge_weight",
]
