"""PyG integration: any gsample sampler inside PyG's loaders, and the public face of
``gsample.pyg``'s loader API.

* :class:`Sampler` is a ``torch_geometric.sampler.BaseSampler``: PyG's ``NodeLoader`` and
  ``LinkLoader`` (with PyG's negative sampling, drawn by gsample) run a gsample sampler
  function through it.
* :func:`with_edge_weight`: the transform that puts a sampler's edge values (LADIES' and
  FastGCN's importance weights) on PyG's ``NodeLoader`` / ``LinkLoader`` batches as
  ``edge_weight``, as ``Batch.to_pyg()`` does (PyG rebuilds a batch from its ``Data`` by
  ``e_id``, which drops them).
* Re-exported from where they live: :class:`NeighborLoader`, :func:`neighbor_sample` and
  :func:`batch_key` (:mod:`gsample.interop.pyg.neighbor_loader`: PyG's ``NeighborLoader``
  on a ``Data``, a ``HeteroData`` or stores, with ``super_batch``:
  :mod:`gsample.interop.pyg.super_batch`); :data:`PYG_ONLY`, :class:`PygOnly`,
  :class:`UnsupportedArgument` and :func:`check_pyg_arguments`
  (:mod:`gsample.interop.pyg.arguments`: PyG's other arguments, refused by name at any
  value but the one meaning what gsample does, before torch's ``DataLoader`` sees them).
  ``LinkNeighborLoader`` is :mod:`gsample.interop.pyg.link`'s.

Determinism (docs/architecture.md §3, consequence 5): every mini-batch is sampled inside
``gsample.base.random.batch_scope(epoch_seed, key)``, so its draws depend on the seed, the
epoch and ``key`` only, never on the process or worker that draws it, nor on the batches
drawn before it in that process (a worker holds a copy of the random stream, so drawing
from the stream itself made batches 0 and 1 of two workers identical). ``key`` is the
mini-batch's index in :class:`NeighborLoader` (which therefore samples exactly what
``gs.DataLoader(A, neighbor_sample, input_nodes, batch_size, shuffle, seed=seed)``
samples) and in ``LinkNeighborLoader`` on a ``Data`` (its stream also holding a hash of the
supervision edges), and, inside PyG's own loaders, which do not tell a sampler the index, a hash of
the mini-batch's ``input_id`` set (its examples' positions in ``input_nodes``), which
identifies the mini-batch within an epoch. A link loader's negatives are drawn by gsample
from the same key (:mod:`gsample.interop.pyg.negatives`), on the graph's device.
"""

from __future__ import annotations

import collections
import functools
import weakref
from collections.abc import Callable

import torch

from gsample.base import validate as V
from gsample.base.random import MASK64, batch_scope, combine, op_key
from gsample.compiler.compiled import CompiledSampler
from gsample.interop.pyg import arguments as _args
from gsample.interop.pyg import data as _out
from gsample.interop.pyg import negatives as _negatives
from gsample.interop.pyg.arguments import (
    PYG_ONLY,
    PygOnly,
    UnsupportedArgument,
    check_pyg_arguments,
)
from gsample.interop.pyg.neighbor_loader import (
    NeighborLoader,
    _distinct,
    batch_key,
    neighbor_sample,
)
from gsample.interop.pyg.subgraph import neighbor_hops

try:
    from torch_geometric.sampler import BaseSampler as _Base
except ImportError:  # the module imports without PyG; using it raises (arguments.require)
    _Base = object


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
    Results are on the device of the input nodes PyG passes (the CPU), as PyG's loaders put
    them on the batch (``n_id``, ``e_id``) and as a ``transform_sampler_output`` reads
    them. (``gsample.pyg.LinkNeighborLoader`` without such a transform keeps ``row`` and
    ``col`` on the graph's device: PyG's ``filter_data`` stacks them into ``edge_index``
    on the data's device itself.)

    A ``sampler_fn`` that is :func:`gsample.pyg.neighbor_sample` (plain, under
    ``functools.partial`` or ``gs.compile``) is run as
    :func:`~gsample.interop.pyg.subgraph.neighbor_hops` in its place: the same draws (the
    same ops in the same order), with ``n_id`` as well, so that a mini-batch of distinct
    seeds (always a link mini-batch's; a node mini-batch's when its input nodes are
    distinct, checked where they lie) is laid out without a read-back
    (:func:`gsample.interop.pyg.data.hops_sample`; the samples are those of
    :func:`~gsample.interop.pyg.data.pyg_sample`, which searches for ``n_id`` with
    ``unique`` and ``isin``, read-backs on a GPU).

    Edge values (importance weights: LADIES, FastGCN) travel in the node-level
    ``SamplerOutput``'s ``metadata = (input_id, seed_time, edge_weight)``; PyG's loaders
    drop them when they rebuild the batch from the ``Data``: give the loader
    ``transform=gsample.pyg.with_edge_weight`` to get them as ``batch.edge_weight``.

    Examples
    --------
    >>> import functools, torch, gsample as gs, gsample.pyg
    >>> from torch_geometric.data import Data
    >>> A = gs.datasets.rmat(100, 500, seed=0)
    >>> data = Data(x=torch.randn(100, 8), edge_index=torch.stack(A.edges()[:2]), num_nodes=100)
    >>> hops = functools.partial(gsample.pyg.neighbor_sample, num_neighbors=(10, 5))
    >>> sampler = gsample.pyg.Sampler(data, hops)
    >>> from torch_geometric.loader import NodeLoader
    >>> for batch in NodeLoader(data, sampler, input_nodes=torch.arange(64), batch_size=16):
    ...     x = batch.x[:batch.batch_size]        # model(batch.x, batch.edge_index)[:B]
    >>> x.shape
    torch.Size([16, 8])
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
        _args.require()
        if not callable(sampler_fn):
            raise TypeError("sampler_fn: must be callable as sampler_fn(A, seeds)")
        if post is not None and not callable(post):
            raise TypeError(f"post: must be callable or None, got {type(post).__name__}")
        seed = V.seed(seed, none_ok=True)
        self.A = _args.read_graph(graph)
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
        # neighbor_sample's hops with their n_id (the same draws), or None: another sampler
        self.hops_fn = _hops_program(sampler_fn)
        # row / col stay on the graph's device only where the loader driving this sampler
        # is known to hand them to filter_data alone, which moves edge_index to the data's
        # device itself (LinkNeighborLoader's, without a transform_sampler_output); in a
        # user's PyG loader its transform_sampler_output may read the output first
        self.keep_edges = False
        self.post = post  # PygSample -> PygSample (bidirectional: to_bidirectional) or None
        # disjoint / temporal sampling: a gsample.interop.pyg.temporal.DisjointSampler, which
        # samples instead of sampler_fn (its batches carry PyG's batch vector)
        self.disjoint = disjoint
        self.seed = _args.default_seed() if seed is None else seed & MASK64
        self.epoch = 0
        # the loader driving this sampler checked its inputs when it was made, so its seeds
        # (and a link batch's endpoints) are node ids of the graph: not checked again, batch
        # by batch (a read-back each on a GPU; the compiled program still bounds them)
        self.seeds_in_range = False

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
        >>> import functools, torch, gsample as gs, gsample.pyg
        >>> from torch_geometric.data import Data
        >>> A = gs.datasets.rmat(100, 500, seed=0)
        >>> data = Data(x=torch.randn(100, 8), edge_index=torch.stack(A.edges()[:2]), num_nodes=100)
        >>> hops = functools.partial(gsample.pyg.neighbor_sample, num_neighbors=(10, 5))
        >>> sampler = gsample.pyg.Sampler(data, hops)
        >>> blocks = sampler.sample(torch.tensor([0, 5, 9]), key=3)   # what batch 3 draws
        >>> len(blocks)
        2
        """
        return self._run(self.sampler_fn, seeds, key)

    def _run(self, fn: Callable, seeds: torch.Tensor, key: int, checked: bool = False):
        """``fn(A, seeds)`` (``sampler_fn`` or :attr:`hops_fn`) as mini-batch ``key``;
        ``checked``: the seeds are ids in range on the graph's device already."""
        if not checked:
            seeds = self._checked(seeds).to(self.A.device)
        with batch_scope(self.epoch_seed(), key):
            return fn(self.A, seeds)

    def _checked(self, seeds) -> torch.Tensor:
        """The seeds as int64 ids, range-checked where they are (a host tensor's check
        reads nothing back) unless the loader checked them already."""
        return V.ids(seeds, "seeds", self.A.num_nodes, None, check_range=not self.seeds_in_range)

    def _layout(self, seeds: torch.Tensor, key: int, distinct: bool):
        """Mini-batch ``key``'s ``PygSample`` (on the graph's device); ``distinct``: the
        seeds are known to be distinct (the hops' own ``n_id`` is then the layout's)."""
        at = self._checked(seeds).to(self.A.device)  # one copy, which the sample reads
        if self.hops_fn is None:
            return _out.pyg_sample(self._run(self.sampler_fn, at, key, checked=True), at)
        return _out.hops_sample(self._run(self.hops_fn, at, key, checked=True), at, distinct)

    def _output(
        self,
        seeds: torch.Tensor,
        key: int,
        metadata=None,
        seed_time=None,
        distinct: bool = False,
        memo=None,
    ):
        """The ``SamplerOutput`` of mini-batch ``key`` on the seeds' device (``row`` and
        ``col`` on the graph's with :attr:`keep_edges`); ``metadata`` ``(input_id,
        seed_time)`` gets the edge values (or None) as a third entry, and the batch is
        remembered for :func:`with_edge_weight`, by ``memo`` (default ``key``: PyG's
        loaders key a batch by its ``input_id``). ``seed_time``: the seeds' times (temporal
        sampling; default ``metadata``'s). ``distinct``: no seed repeats (a link
        mini-batch's unique endpoints)."""
        if self.disjoint is not None:  # one tree per seed (gsample.interop.pyg.temporal)
            if seed_time is None and metadata is not None:
                seed_time = metadata[1]
            ids = V.ids(seeds, "seeds", self.A.num_nodes, None).to(self.A.device)
            times = self.disjoint.spec.seed_time(seeds, seed_time)
            with batch_scope(self.epoch_seed(), key):
                sample = self.disjoint.sample(ids, times)
        else:
            sample = self._layout(seeds, key, distinct)
        batch = getattr(sample, "batch", None)  # disjoint: each node's seed
        if self.post is not None:
            sample = self.post(sample)
        input_id, seed_time = metadata or (None, None)
        out = _out.to_sampler_output(sample, input_id, seed_time)
        device = seeds.device
        local = sample.row.device if self.keep_edges else device
        weight = None if sample.weight is None else sample.weight.to(device)
        edge = out.edge
        if self.edge_ids is not None:  # positions in the kept edges -> in data.edge_index
            edge, weight = self.edge_ids.to(edge.device)[edge], None
        out = out.__class__(
            node=out.node.to(device),
            row=out.row.to(local),
            col=out.col.to(local),
            edge=edge.to(device),
            batch=None if batch is None else batch.to(device),
            num_sampled_nodes=out.num_sampled_nodes,
            num_sampled_edges=out.num_sampled_edges,
            metadata=(out.metadata[0], seed_time, weight),
        )
        _remember(key if memo is None else memo, out.edge, weight)
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
        # PyG's input nodes may repeat; checked where they lie (the host, from PyG's loaders)
        distinct = self.hops_fn is not None and _distinct(index.node)
        key = batch_key(input_id)
        return self._output(index.node, key, (input_id, index.time), distinct=distinct)

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

        def sample_fn(seed, seed_time):  # the endpoints, unique (edge_sample) unless disjoint
            return self._output(seed, key, seed_time=seed_time, distinct=True)

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
        >>> import functools, torch, gsample as gs, gsample.pyg
        >>> from torch_geometric.data import Data
        >>> A = gs.datasets.rmat(100, 500, seed=0)
        >>> data = Data(x=torch.randn(100, 8), edge_index=torch.stack(A.edges()[:2]), num_nodes=100)
        >>> hops = functools.partial(gsample.pyg.neighbor_sample, num_neighbors=(10, 5))
        >>> sampler = gsample.pyg.Sampler(data, hops)
        >>> from gsample.interop.pyg.negative_arguments import NegativeSampling
        >>> neg = sampler.negative_sampler(NegativeSampling("binary", strict=True))
        >>> src, dst = torch.tensor([0, 1]), torch.tensor([5, 6])    # two positive edges
        >>> out = neg(src, dst, "binary", 1, key=0)
        >>> neg.excluded(out.src, out.dst)                 # none an edge of the graph
        tensor([False, False])
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


#: gs.compile'd neighbor_sample -> its neighbor_hops twin, compiled with its options (one
#: trace cache per compiled function, however many samplers share it)
_TWINS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _hops_program(fn: Callable) -> Callable | None:
    """``fn``'s twin returning :func:`~gsample.interop.pyg.subgraph.neighbor_hops`'
    ``(blocks, n_id)``, with ``fn``'s draws; None for any other sampler.

    :func:`gsample.pyg.neighbor_sample` is ``neighbor_hops(...)[0]``: the same ops in the
    same order, so ``neighbor_hops`` in its place, under the same ``functools.partial``
    arguments and ``gs.compile`` options, draws what ``fn`` draws under the same key, and
    returns ``n_id`` too. A ``fn`` that is ``neighbor_hops`` already is its own twin.

    Parameters
    ----------
    fn : callable
        A sampler function, plain, ``functools.partial`` of one, or ``gs.compile``'d.

    Returns
    -------
    callable or None

    Examples
    --------
    >>> import functools, torch, gsample as gs
    >>> from gsample.interop.pyg.neighbor_loader import neighbor_sample
    >>> A = gs.datasets.rmat(100, 500, seed=0)
    >>> hops = _hops_program(functools.partial(gs.compile(neighbor_sample), num_neighbors=(5,)))
    >>> seeds = torch.tensor([0, 1, 2])
    >>> blocks, n_id = hops(A, seeds)           # blocks: what fn(A, seeds) returns
    >>> len(blocks), n_id[0]                    # n_id: the seeds, then each hop's new nodes
    (1, tensor([0, 1, 2]))
    >>> def one_layer(A, seeds):                # a sampler of the user's own: no twin
    ...     return [A[:, seeds].individual_sample(64)]
    >>> _hops_program(one_layer) is None
    True
    """
    if isinstance(fn, functools.partial):
        inner = _hops_program(fn.func)
        if inner is None or inner is fn.func:
            return None if inner is None else fn
        return functools.partial(inner, *fn.args, **fn.keywords)
    if isinstance(fn, CompiledSampler):
        inner = _hops_program(fn.fn)
        if inner is None or inner is fn.fn:
            return None if inner is None else fn
        twin = _TWINS.get(fn)
        if twin is None:
            twin = _TWINS[fn] = CompiledSampler(inner, fn.passes, fn.backend, fn.runtime)
        return twin
    if fn is neighbor_hops:
        return fn
    return neighbor_hops if fn is neighbor_sample else None


#: the last mini-batches :class:`Sampler` drew in this process, by key: ``(edge ids, edge
#: values or None)``, for :func:`with_edge_weight` (PyG runs a loader's transform right
#: after its sampler, in the same process: a few entries are enough; the oldest go first).
#: A batch remembered by its ``input_id`` (a :class:`_ByInput`) is keyed by an object
#: of its own, its key computed only if a lookup needs it.
_RECENT: collections.OrderedDict = collections.OrderedDict()
_RECENT_SIZE = 8


def _remember(key: int, edge: torch.Tensor, weight) -> None:
    _RECENT[key] = (edge, weight)
    _RECENT.move_to_end(key)
    while len(_RECENT) > _RECENT_SIZE:
        _RECENT.popitem(last=False)


class _ByInput:
    """A remembered batch's key, ``batch_key(input_id)``, computed when first asked (on a
    GPU a hash of the ids and a read-back: most batches are never looked up): what a loader
    that keys its draws otherwise gives :meth:`Sampler._output` as ``memo``."""

    def __init__(self, input_id: torch.Tensor):
        self.input_id, self.key = input_id, None

    def resolve(self) -> int:
        if self.key is None:
            self.key = batch_key(self.input_id)
        return self.key


def _recall(key: int):
    """The remembered ``(edge, weight)`` of the batch ``key`` (removed), or None."""
    entry = _RECENT.pop(key, None)
    if entry is not None:
        return entry
    for token in reversed(list(_RECENT)):
        if isinstance(token, _ByInput) and token.resolve() == key:
            return _RECENT.pop(token)
    return None


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
    >>> import torch, gsample as gs, gsample.pyg as gp
    >>> from torch_geometric.data import Data
    >>> from torch_geometric.loader import NodeLoader
    >>> A = gs.datasets.rmat(100, 500, seed=0)
    >>> data = Data(x=torch.randn(100, 8), edge_index=torch.stack(A.edges()[:2]), num_nodes=100)
    >>> def mean_weighted(A, seeds):              # one layer; each column's values sum to 1
    ...     s = A[:, seeds].individual_sample(5)
    ...     return [s.div(s.sum(axis=0), axis=0)]
    >>> sampler = gp.Sampler(data, mean_weighted)
    >>> loader = NodeLoader(data, sampler, batch_size=16, transform=gp.with_edge_weight)
    >>> batch = next(iter(loader))                # model(batch.x, batch.edge_index, w)
    >>> batch.edge_weight.shape == (batch.edge_index.shape[1],)
    True
    """
    if getattr(data, "input_id", None) is None or getattr(data, "e_id", None) is None:
        raise TypeError(
            "data: expected a mini-batch of PyG's NodeLoader or LinkLoader over "
            "gsample.pyg.Sampler (with input_id and e_id)"
        )
    entry = _recall(batch_key(data.input_id))
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
