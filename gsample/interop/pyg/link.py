"""PyG's ``LinkNeighborLoader``, sampled by gsample: link prediction (a ``HeteroData`` or
``(FeatureStore, GraphStore)``: :mod:`gsample.interop.pyg.hetero_loader`).

:class:`LinkNeighborLoader` is PyG's ``torch_geometric.loader.LinkLoader`` with
:class:`gsample.pyg.Sampler` running :func:`gsample.pyg.neighbor_sample`'s hops (compiled
:func:`~gsample.interop.pyg.subgraph.neighbor_hops`: its draws, with ``n_id``, so that a
mini-batch is laid out without a read-back) as its link sampler: PyG builds the mini-batches
of supervision edges and joins the ``Data``'s attributes; gsample draws the negatives on the
graph's device (:mod:`gsample.interop.pyg.negatives`) and samples the neighbourhoods of the
edges' endpoints. The loader runs its own epochs (``_Epochs``, ``_LinkBatches``): mini-batch
``i`` of an epoch is keyed ``i``, as ``NeighborLoader``'s, so that ``super_batch`` can
sample consecutive mini-batches in one run and give the same batches
(:class:`gsample.interop.pyg.super_batch.LinkSuperBatches` on a ``Data``;
:class:`~gsample.interop.pyg.hetero_super_batch.HeteroSuperBatches` on a ``HeteroData``,
whose mini-batches :class:`_KeyedHeteroSampler` plans and finishes as PyG's heterogeneous
``edge_sample`` lays them out). Batches are PyG's: ``edge_label_index`` in local ids,
``edge_label`` (binary negatives labelled 0), ``src_index`` / ``dst_pos_index`` /
``dst_neg_index`` in triplet mode, ``input_id``, ``n_id`` (the label edges' endpoints
first), ``e_id``.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Callable

import torch

from gsample.base import validate as V
from gsample.base.random import MASK64, batch_scope, combine, hash_tensor, op_key
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
from gsample.interop.pyg.hetero_super_batch import HeteroSuperBatches
from gsample.interop.pyg.loader import Sampler, _ByInput
from gsample.interop.pyg.negatives import (
    NEGATIVE_ORDINAL,
    EdgeSeeds,
    NegativeSampling,
    edge_output,
    edge_seeds,
    hetero_edge_sample,
)
from gsample.interop.pyg.neighbor_loader import (
    _EpochBatches,
    _Flattened,
    _identity,
    _sort_on,
    batch_index,
    batch_key,
    epoch_order,
)
from gsample.interop.pyg.subgraph import neighbor_hops, subgraph_type_name, to_bidirectional
from gsample.loader.super_batching import super_batch_options

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


@dataclasses.dataclass(frozen=True)
class _Program:
    """A ``Data``'s sampling program, for super-batching: the compiled program (None with
    ``compile=False``), its static arguments, the graph and the temporal spec; or, for a
    ``HeteroData`` (or heterogeneous stores), its ``HeteroBatches`` (``hetero``: compiled
    steps per (hop, edge type), ``compiled`` None with ``compile=False``)."""

    compiled: object
    hops: dict | None
    A: object
    spec: object
    edge_time: torch.Tensor | None
    hetero: object = None

    @property
    def num_nodes(self) -> int:
        """The graph's node count (a heterogeneous graph's: its relations' ``N``)."""
        return self.A.num_nodes if self.hetero is None else self.hetero.graph.size

    @property
    def device(self) -> torch.device:
        return self.A.device if self.hetero is None else self.hetero.graph.device


@dataclasses.dataclass(frozen=True)
class _HeteroPlan:
    """A heterogeneous link mini-batch's seeds as PyG's ``edge_sample`` lays them out
    (``{node_type: ids}``, their times), with the ``metadata`` its batch gets and its
    positives' count (disjoint: ``batch`` is taken modulo it)."""

    seed: dict
    seed_time: dict | None
    metadata: tuple
    num_pos: int


class _KeyedHeteroSampler(_hetero.HeteroSampler):
    """:class:`~gsample.interop.pyg.hetero_loader.HeteroSampler` as
    :class:`LinkNeighborLoader` runs it on a ``HeteroData`` (its own epochs, mini-batch
    ``i`` keyed ``i``, as on a ``Data``): :meth:`plan` draws a mini-batch's negatives and
    lays out its seeds, :meth:`finish` samples them (or lays out the draws a super-batch
    made for them), exactly as ``sample_from_edges`` does with that key."""

    def plan(self, index, neg_sampling, epoch_seed: int, key: int) -> _HeteroPlan:
        """Mini-batch ``key``'s negatives drawn and its seeds laid out: PyG's heterogeneous
        ``edge_sample`` (:func:`~gsample.interop.pyg.negatives.hetero_edge_sample`, its
        negatives keyed by ``(epoch_seed, NEGATIVE_ORDINAL, key)``) up to the sampling,
        whose seeds it records."""
        if index.time is not None and not self._temporal():
            raise ValueError(
                "index: edge_label_time needs a temporal sampler (HeteroBatches with a spec "
                "of a time_attr)"
            )
        seen = []

        def record(seeds, seed_time):  # what the sampling would be given; no draw
            seen.append((seeds, seed_time))
            return _Pending()

        negatives = None
        if neg_sampling is not None:
            negatives = self.negative_sampler(neg_sampling, tuple(index.input_type))
        pending = hetero_edge_sample(
            index,
            record,
            negatives,
            neg_sampling,
            key=op_key(epoch_seed, NEGATIVE_ORDINAL, key),
            disjoint=self.disjoint,
        )
        ((seeds, seed_time),) = seen
        return _HeteroPlan(seeds, seed_time, pending.metadata, int(index.row.numel()))

    def finish(self, plan: _HeteroPlan, epoch_seed: int, key: int, draws=None):
        """The ``HeteroSamplerOutput`` of ``plan``'s seeds drawn as mini-batch ``key`` of
        the epoch ``epoch_seed`` (``draws``: made by a super-batch), with PyG's
        ``metadata``."""
        with batch_scope(epoch_seed, key):
            out = self.batches._sample(plan.seed, plan.seed_time, draws)[0]
        if self.disjoint:  # PyG's: each node's positive, not its seed slot
            out.batch = {t: b % plan.num_pos for t, b in out.batch.items()}
        out.metadata = plan.metadata
        return out


class _Pending:
    """The sample :meth:`_KeyedHeteroSampler.plan` hands PyG's layout in place of one: it
    takes the ``metadata`` the layout sets (``batch``: none yet)."""

    def __init__(self):
        self.batch, self.metadata = {}, None


class _Replayable:
    """A :class:`~gsample.interop.pyg.temporal.DisjointSampler` that, while its
    :class:`_KeyedSampler` finishes a mini-batch drawn in a super-batch, returns that
    mini-batch's program output instead of drawing."""

    def __init__(self, inner, owner):
        self.inner, self.owner = inner, owner

    def __getattr__(self, name):
        if name in ("inner", "owner"):  # not set yet (unpickling)
            raise AttributeError(name)
        return getattr(self.inner, name)

    def sample(self, seeds: torch.Tensor, seed_time):
        raw = self.owner.raw
        if raw is None:
            return self.inner.sample(seeds, seed_time)
        return _temporal.disjoint_pyg_sample(raw, seeds)


class _KeyedSampler(Sampler):
    """:class:`gsample.pyg.Sampler` as :class:`LinkNeighborLoader` runs it on a ``Data``:
    the loader gives each mini-batch its key (its index in the epoch) and epoch seed, and
    a mini-batch drawn in a super-batch is finished from its program output (:attr:`raw`),
    mapped exactly as one drawn alone. Inside PyG's own ``LinkLoader`` it is the plain
    ``Sampler`` (keys from the ``input_id`` set)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.scope = None  # the epoch seed of the mini-batch being finished
        self.raw = None  # its program output, when drawn in a super-batch
        if self.disjoint is not None:
            self.disjoint = _Replayable(self.disjoint, self)
        # its consumer is LinkLoader.filter_fn over a Data (filter_data), which moves
        # edge_index to the data's device: row / col stay on the graph's
        self.keep_edges = True

    def epoch_seed(self) -> int:
        return super().epoch_seed() if self.scope is None else self.scope

    def _run(self, fn: Callable, seeds: torch.Tensor, key: int, checked: bool = False):
        if self.raw is not None:  # the loader's program (fn) drew it in a super-batch
            return self.raw
        return super()._run(fn, seeds, key, checked)

    def plan(self, index, neg_sampling, epoch_seed: int, key: int) -> EdgeSeeds:
        """Mini-batch ``key``'s negatives drawn and its seeds laid out (PyG's
        ``edge_sample``'s first half), as :meth:`Sampler.sample_from_edges` draws them with
        that key."""
        if index.time is not None and not self._temporal():
            raise ValueError(
                "index: edge_label_time needs a temporal sampler (gsample.pyg.Sampler with "
                "disjoint=DisjointSampler of a time_attr)"
            )
        negatives = None if neg_sampling is None else self.negative_sampler(neg_sampling)
        key = op_key(epoch_seed, NEGATIVE_ORDINAL, key)
        disjoint = self.disjoint is not None
        return edge_seeds(index, negatives, neg_sampling, key, disjoint, self.seeds_in_range)

    def finish(self, plan: EdgeSeeds, epoch_seed: int, key: int, raw=None):
        """The ``SamplerOutput`` of ``plan``'s seeds drawn as mini-batch ``key`` of the
        epoch ``epoch_seed`` (``raw``: that draw's program output, made in a super-batch),
        with PyG's ``metadata``."""
        self.scope, self.raw = epoch_seed, raw
        # gsample.pyg.with_edge_weight finds a batch by its input_id set, as PyG's loaders
        # key it (the draws are keyed by key, the batch's index in the epoch)
        memo = _ByInput(plan.input_id)
        try:  # the seeds: unique endpoints (edge_seeds) unless disjoint
            out = self._output(plan.seed, key, seed_time=plan.seed_time, distinct=True, memo=memo)
        finally:
            self.scope = self.raw = None
        return edge_output(plan, out)


class _LinkBatches(torch.utils.data.Dataset):
    """A loader's link mini-batches (a ``Data``'s, or a ``HeteroData``'s through a
    :class:`_KeyedHeteroSampler`): item ``(epoch_seed, i)`` is mini-batch ``i`` of that
    epoch (its supervision edges in the epoch's order, :func:`epoch_order`), drawn with key
    ``i``; item ``Run(epoch_seed, first, count)`` the list of those mini-batches, drawn in
    one run of :attr:`super` (each one's negatives first, with its own key). Batches are
    built (PyG's ``filter_fn``) where they are sampled when ``filter_per_worker``."""

    def __init__(self, loader, batch_size: int, shuffle: bool):
        self.input_data, self.sampler = loader.input_data, loader.link_sampler
        self.neg_sampling = loader.neg_sampling
        self.filter, self.filter_per_worker = loader.filter_fn, loader.filter_per_worker
        self.batch_size, self.shuffle = batch_size, shuffle
        self.num_inputs = int(self.input_data.row.numel())
        self._order = (None, None)
        self.super: _super.LinkSuperBatches | None = None
        self.runs: _super.Runs | None = None

    def positions(self, epoch_seed: int) -> torch.Tensor:
        if self._order[0] != epoch_seed:
            graph = getattr(self.sampler, "A", getattr(self.sampler, "graph", None))
            order = epoch_order(self.num_inputs, self.shuffle, epoch_seed, None, _sort_on(graph))
            self._order = (epoch_seed, order)
        return self._order[1]

    def batch_positions(self, epoch_seed: int, i: int) -> torch.Tensor:
        return self.positions(epoch_seed)[i * self.batch_size : (i + 1) * self.batch_size]

    def __getitem__(self, item):
        if isinstance(item, _super.Run):
            outs = self.sample_run(item)
        else:
            epoch_seed, i = item
            outs = [self.sample(self.batch_positions(epoch_seed, i), epoch_seed, i)]
        if self.filter_per_worker:
            outs = [self.filter(out) for out in outs]
        return outs if isinstance(item, _super.Run) else outs[0]

    def plan(self, positions: torch.Tensor, epoch_seed: int, key: int) -> EdgeSeeds:
        return self.sampler.plan(self.input_data[positions], self.neg_sampling, epoch_seed, key)

    def sample(self, positions: torch.Tensor, epoch_seed: int, key: int):
        """The ``SamplerOutput`` of the supervision edges at ``positions`` drawn as
        mini-batch ``key`` of the epoch ``epoch_seed``."""
        return self.sampler.finish(self.plan(positions, epoch_seed, key), epoch_seed, key)

    def sample_run(self, run: _super.Run) -> list:
        """The ``SamplerOutput`` of each mini-batch of ``run``: each one's negatives drawn
        with its own key, then all their seeds sampled in one run of :attr:`super`
        (mini-batch ``first + b`` with key ``first + b``), so each is the batch
        :meth:`sample` gives it alone. ``"auto"``'s ``"measure"`` / ``"time"`` runs report
        to :attr:`runs`, as ``NeighborLoader``'s."""
        runs, first = self.runs, run.first
        began = runs.clock() if run.role == "time" else 0.0
        if run.count == 1 and run.role != "measure":
            positions = self.batch_positions(run.epoch_seed, first)
            batches = [self.sample(positions, run.epoch_seed, first)]
        else:
            indices = range(first, first + run.count)
            plans = [
                self.plan(self.batch_positions(run.epoch_seed, i), run.epoch_seed, i)
                for i in indices
            ]
            if isinstance(self.sampler, _KeyedHeteroSampler):  # seed dicts, drawn per step
                seeds = [p.seed for p in plans]
                times = [p.seed_time for p in plans]
                measure, sample = self.super.measure_seeds, self.super.seed_draws
            else:
                num_nodes = self.sampler.A.num_nodes
                seeds = [V.ids(p.seed, "seeds", num_nodes, None) for p in plans]
                spec = getattr(self.sampler.disjoint, "spec", None)
                times = [
                    None if spec is None else spec.seed_time(s, p.seed_time)
                    for s, p in zip(seeds, plans)
                ]
                measure, sample = self.super.measure, self.super.run
            if run.role == "measure":
                raw, runs.batch_bytes = measure(seeds[0], times[0], run.epoch_seed, first)
                raws = [raw]
            else:
                try:
                    raws = sample(seeds, times, run.epoch_seed, first)
                except Exception as error:
                    raws = None
                    batches = _super.sampled_alone(
                        error,
                        first,
                        run.count,
                        lambda i: self.sample(
                            self.batch_positions(run.epoch_seed, i), run.epoch_seed, i
                        ),
                        self,
                    )
            if raws is not None:
                batches = [
                    self.sampler.finish(p, run.epoch_seed, i, raw)
                    for p, i, raw in zip(plans, indices, raws)
                ]
        if run.role == "time":
            runs.seconds = (runs.clock() - began) / run.count
        return batches


class _Epochs(torch.utils.data.DataLoader):
    """torch's ``DataLoader`` as PyG's ``LinkLoader`` makes it (``super().__init__(range(L),
    collate_fn=...)``), except for a ``Data`` (:attr:`LinkNeighborLoader._program` set):
    then over :class:`_LinkBatches`, in epochs of the loader's own (mini-batch ``i`` of an
    epoch keyed ``i``), super-batched or not."""

    def __init__(self, dataset, collate_fn=None, **kwargs):
        program = getattr(self, "_program", None)
        if program is None:  # PyG's LinkLoader, unchanged
            super().__init__(dataset, collate_fn=collate_fn, **kwargs)
            return
        batch_size = V.count(kwargs.pop("batch_size", 1), "batch_size", low=1)
        shuffle = kwargs.pop("shuffle", None)  # torch's default: None, no shuffling
        shuffle = False if shuffle is None else V.flag(shuffle, "shuffle")
        drop_last = V.flag(kwargs.pop("drop_last", False), "drop_last")
        batches = _LinkBatches(self, batch_size, shuffle)
        n = batches.num_inputs
        num_batches = n // batch_size if drop_last else -(-n // batch_size)
        super_batch, memory_budget = self.super_batch, self.memory_budget
        if _super.active(super_batch):
            if program.compiled is None:  # (a HeteroData's: compile=False)
                _super.refuse(
                    super_batch,
                    _NAME,
                    "compile=False samples eagerly; a super-batch runs the compiled program",
                )
            if super_batch == "auto" and (kwargs.get("num_workers") or 0) > 0:
                _super.refuse(
                    super_batch,
                    _NAME,
                    "'auto' times super-batch sizes in the process that samples, and "
                    "num_workers > 0 samples in worker processes; give the number of "
                    "mini-batches a run, e.g. super_batch=8",
                )
            if program.hetero is not None:  # its steps, traced by the runs that need them
                batches.super = HeteroSuperBatches(program.hetero)
            elif n and program.A.num_nodes:  # traced now
                probe = torch.arange(min(program.A.num_nodes, 2 * batch_size))
                batches.super = _super.LinkSuperBatches(
                    program.A,
                    program.compiled,
                    program.hops,
                    probe,
                    program.spec,
                    program.edge_time,
                )
            batches.runs = _super.Runs(super_batch, memory_budget, program.device)
        self.epoch = 0
        self.label_stream = _stream(batches.input_data, program.num_nodes)
        self.batches = _EpochBatches(num_batches, batches.runs)
        super().__init__(
            batches, batch_size=None, sampler=self.batches, collate_fn=_identity, **kwargs
        )


def _stream(input_data, num_nodes: int) -> int:
    """A hash of the supervision edges (each pair, in order), folded into every epoch's
    seed: two loaders of one seed over other edges (training and test edges) draw
    unrelated negatives, where mini-batch ``i`` of both would otherwise draw the same
    pairs (uniform negatives do not depend on the positives)."""
    row, col = input_data.row.to(torch.int64), input_data.col.to(torch.int64)
    pairs = row * max(num_nodes, 1) + col
    position = torch.arange(pairs.numel(), device=pairs.device)
    h = hash_tensor(0x11AC, position, pairs).sum()  # wraps modulo 2**64
    return combine(pairs.numel(), int(h) & MASK64)


_BASES = (_Epochs,) if _LinkLoader is object else (_LinkLoader, _Epochs)


class LinkNeighborLoader(*_BASES):
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
    super_batch : int or "auto", optional
        Sample this many consecutive mini-batches in one run of the compiled program
        (``CompiledSampler.super_batched``; a ``HeteroData``'s or heterogeneous stores':
        one run of each (hop, edge type)'s step), still yielded one by one: the batches,
        their order and every tensor of them (negatives included: each mini-batch's are
        drawn with its own key before the run samples their seeds together) are those of
        ``super_batch=None`` (the default: one mini-batch a run; ``1`` is the same), in
        every mode (binary / triplet negatives, strict, weighted, disjoint, temporal with
        ``edge_label_time``, directional or bidirectional; a ``HeteroData``'s induced too)
        and with worker processes (each samples whole runs). ``"auto"``: the fastest size
        that fits ``memory_budget``, timed on the first epoch's own mini-batches
        (``loader.super_batch_size``, ``loader.auto_times``); it needs ``num_workers=0``.
        Refused with a ``ValueError`` naming ``super_batch``: ``compile=False`` (a
        super-batch runs the compiled program). A run that runs out of memory where its
        mini-batches sample one by one gives them so (the same
        batches; a ``RuntimeWarning``, once); any other error of such a run is a
        ``RuntimeError`` naming ``super_batch``. :mod:`gsample.interop.pyg.super_batch`.
    memory_budget : int, optional
        Bytes a super-batch may use with ``super_batch="auto"``, as ``NeighborLoader``'s.
    **kwargs
        ``torch.utils.data.DataLoader`` options (``batch_size``, ``shuffle``,
        ``num_workers``, ...) and ``LinkLoader``'s ``input_id``. PyG's other arguments
        (:data:`gsample.pyg.PYG_ONLY`) are refused unless their value means what gsample
        does; anything else is a ``TypeError``.

    Notes
    -----
    The loader orders its epochs as ``NeighborLoader`` does (``shuffle``:
    gsample's hash permutation of the epoch, the same in every process), and mini-batch
    ``i`` of epoch ``e`` (the loader's ``e``-th iteration) draws its negatives and its
    neighbourhoods with the key ``i`` in the stream ``combine(combine(combine(0, seed), e),
    h)``, ``h`` a hash of the supervision edges (so that a training and a test loader of
    one seed do not draw the same negative pairs): its draws depend on the seed, the
    supervision edges, the epoch and ``i`` only, whatever ``num_workers`` and
    ``super_batch``. (PyG's own ``LinkLoader`` over :class:`gsample.pyg.Sampler` keys a
    mini-batch by its ``input_id`` set instead, and advances epochs only by
    ``Sampler.set_epoch``.) A ``HeteroData`` (or heterogeneous stores) alike: its
    mini-batches are planned and finished by gsample's typed sampler with key ``i`` (PyG's
    heterogeneous ``edge_sample`` layout). ``str(loader)`` is ``'LinkNeighborLoader()'``;
    ``loader(index)`` returns the batch of the supervision edges ``index``, as PyG's.

    Examples
    --------
    >>> import torch, gsample as gs, gsample.pyg
    >>> from torch_geometric.data import Data
    >>> A = gs.datasets.rmat(100, 500, seed=0)
    >>> data = Data(x=torch.randn(100, 8), edge_index=torch.stack(A.edges()[:2]), num_nodes=100)
    >>> train_edges = data.edge_index[:, :128]            # the supervision edges
    >>> import torch.nn.functional as F
    >>> loader = gsample.pyg.LinkNeighborLoader(
    ...     data, num_neighbors=[10, 5], edge_label_index=train_edges, batch_size=32,
    ...     neg_sampling="binary", shuffle=True, seed=0)
    >>> batch = next(iter(loader))
    >>> src, dst = batch.edge_label_index          # local ids in batch.n_id
    >>> batch.edge_label_index.shape               # 32 positives, 32 negatives
    torch.Size([2, 64])
    >>> h = batch.x                                # h = model(batch.x, batch.edge_index)
    >>> score = (h[src] * h[dst]).sum(-1)
    >>> loss = F.binary_cross_entropy_with_logits(score, batch.edge_label)
    >>> fast = gsample.pyg.LinkNeighborLoader(
    ...     data, [10, 5], batch_size=32, neg_sampling="binary", seed=0, super_batch=4)
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
        memory_budget: int | None = None,
        **kwargs,
    ):
        require()
        super_batch, memory_budget = super_batch_options(super_batch, memory_budget)
        self.super_batch, self.memory_budget = super_batch, memory_budget
        self._program = None  # a Data's: set by _homogeneous_sampler (then _Epochs' epochs)
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
        # a transform_sampler_output reads the SamplerOutput before filter_data: all of it
        # on one device, as PyG's own helpers (global_row, to_bidirectional) need
        if hasattr(sampler, "keep_edges"):
            sampler.keep_edges = sampler.keep_edges and transform_sampler_output is None
        if isinstance(sampler, _KeyedSampler):  # every batch's endpoints checked here, once
            for ids in (self.input_data.row, self.input_data.col):
                V.ids(ids, "edge_label_index", sampler.A.num_nodes, None)
            # a batch's seeds: these endpoints and negatives drawn among the graph's nodes
            sampler.seeds_in_range = True
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
        :func:`~gsample.interop.pyg.subgraph.neighbor_hops` (:func:`gsample.pyg.neighbor_sample`'s
        draws and ``n_id``; one tree per seed with ``options.spec``)."""
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
        # the endpoints are unique (edge_seeds): neighbor_sample's draws with the hops' n_id,
        # laid out without a read-back (gsample.pyg.Sampler runs neighbor_hops as it)
        program = neighbor_hops
        if spec is not None:  # one tree per seed: gsample.interop.pyg.temporal's program
            program, hops["strategy"] = _temporal.disjoint_sample, spec.strategy
            edge_label_time = spec.input_time(
                edge_label_time, _num_labels(data, edge_label_index), "edge_label_time"
            )
        compiled = gs_compile(program) if V.flag(options.compile, "compile") else None
        fn = functools.partial(program if compiled is None else compiled, **hops)
        # bidirectional: the same draws, each batch's reverse edges added (PyG applies
        # to_bidirectional after edge_sample; the seeds / labels do not depend on the edges)
        post = to_bidirectional if subgraph_type == "bidirectional" else None
        disjoint = None if spec is None else _temporal.DisjointSampler(A, fn, spec, edge_ids)
        sampler = _KeyedSampler(
            A, fn, seed=options.seed, edge_ids=edge_ids, post=post, disjoint=disjoint
        )
        edge_time = None if disjoint is None else disjoint.edge_time
        self._program = _Program(compiled, hops, A, spec, edge_time)
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
        # its own epochs, mini-batch i keyed i (as a Data's), so a super-batch can run them
        sampler = _KeyedHeteroSampler(batches, seed, batch_key)
        compiled = batches.step_sampler
        self._program = _Program(compiled, None, None, spec, None, hetero=batches)
        self.num_neighbors, self.replace = options.num_neighbors, batches.replace
        self.subgraph_type = options.subgraph_type
        return sampler, edge_label_time, neg_sampling

    def __len__(self) -> int:
        """Mini-batches per epoch (super-batched too: runs are yielded batch by batch)."""
        if self._program is None:
            return super().__len__()
        return self.batches.num_batches

    def __iter__(self):
        """An epoch. On a ``Data``, epoch ``e`` (the loader's ``e``-th iteration) draws with
        ``combine(combine(0, seed), e)`` (``link_sampler.set_epoch(e)``), as
        ``NeighborLoader``'s."""
        if self._program is not None:
            self.link_sampler.set_epoch(self.epoch)
            self.batches.epoch_seed = combine(self.link_sampler.epoch_seed(), self.label_stream)
            self.epoch += 1
        return super().__iter__()

    def _get_iterator(self):
        """torch's iterator; with ``filter_per_worker=False`` each batch is built in this
        process (PyG's ``DataLoaderIterator``); super-batched runs are yielded batch by
        batch."""
        if self._program is None:
            return super()._get_iterator()
        iterator = torch.utils.data.DataLoader._get_iterator(self)
        filter = None if self.filter_per_worker else self.filter_fn
        if self.batches.runs is not None:
            return _Flattened(iterator, filter, len(self))
        if filter is None:
            return iterator
        # import here: PyTorch Geometric is optional (the module imports without it)
        from torch_geometric.loader.base import DataLoaderIterator

        return DataLoaderIterator(iterator, filter)

    def __call__(self, index):
        """PyG's ``loader(index)``: the batch of the supervision edges at positions ``index``
        (into ``edge_label_index``), drawn now in the current epoch (the last one started;
        epoch 0 before any). On a ``Data``, when ``index`` is mini-batch ``i`` of that epoch,
        in its order, the batch is the one iteration gives (drawn as mini-batch ``i``); any
        other ``index`` is drawn as mini-batch ``batch_key(index)``.

        Examples
        --------
        >>> import torch, gsample as gs, gsample.pyg
        >>> from torch_geometric.data import Data
        >>> A = gs.datasets.rmat(100, 500, seed=0)
        >>> data = Data(x=torch.randn(100, 8), edge_index=torch.stack(A.edges()[:2]), num_nodes=100)
        >>> train_edges = data.edge_index[:, :128]            # the supervision edges
        >>> loader = gsample.pyg.LinkNeighborLoader(
        ...     data, [10, 5], edge_label_index=train_edges, neg_sampling="binary", seed=0)
        >>> batch = loader([0, 5])          # supervision edges 0 and 5, their negatives
        >>> batch.edge_label_index.shape
        torch.Size([2, 4])
        """
        if self._program is None:
            return super().__call__(index)
        dataset = self.dataset
        positions = V.ids(index, "index", dataset.num_inputs, None).cpu()
        epoch_seed = combine(self.link_sampler.epoch_seed(), self.label_stream)
        key = self._batch_index(positions, epoch_seed)
        key = batch_key(positions) if key is None else key
        return self.filter_fn(dataset.sample(positions, epoch_seed, key))

    def _batch_index(self, positions: torch.Tensor, epoch_seed: int) -> int | None:
        """``i`` when ``positions`` are exactly mini-batch ``i`` of the epoch ``epoch_seed``
        (same order), else None."""
        return batch_index(self.dataset, positions, epoch_seed, len(self))

    @property
    def super_batch_size(self) -> int | None:
        """Mini-batches sampled per run: 1 without ``super_batch``, its int, or the size
        ``"auto"`` chose (None until the first epoch has chosen)."""
        runs = None if self._program is None else self.dataset.runs
        return 1 if runs is None else runs.size

    @property
    def auto_times(self) -> dict:
        """``super_batch="auto"``: seconds per mini-batch of every size it timed."""
        runs = None if self._program is None else self.dataset.runs
        return {} if runs is None else dict(runs.times)

    @property
    def auto_runs(self) -> dict:
        """``super_batch="auto"``: every size's counted runs, seconds per mini-batch."""
        runs = None if self._program is None else self.dataset.runs
        return {} if runs is None else {k: list(v) for k, v in runs.runs.items()}


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
