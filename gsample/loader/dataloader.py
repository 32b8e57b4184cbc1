"""Mini-batch iteration: ``gs.DataLoader`` (``gs.Batch``: :mod:`gsample.loader.batch`;
super-batching: ``CompiledSampler.super_batched``, run by :class:`gsample.runtime.SuperBatcher`;
the pipelined stages: :mod:`gsample.loader.pipeline`; the side stream's overlap:
:mod:`gsample.loader.side_stream`)."""

from __future__ import annotations

import functools
import inspect
import itertools
import math
import time
import warnings
from collections.abc import Callable

import numpy as np
import torch
from tqdm.auto import tqdm

from gsample.backend import backend_for, hook
from gsample.base import validate as V
from gsample.base.random import (
    MASK64,
    batch_scope,
    combine,
    op_key,
    shuffle_keys,
    stream_state,
)
from gsample.base.seed_parts import SeedParts
from gsample.compiler import CompiledSampler, compile
from gsample.distributed.partition_batches import agree, is_refusal, sample_round
from gsample.distributed.split import rank_batches, resolve_ranks
from gsample.formats.derived import bind_seeds
from gsample.loader import features as _features
from gsample.loader.batch import Batch, batches_of
from gsample.loader.features import FeatureStore, adjacent, batch_nodes
from gsample.loader.pipeline import pipelined
from gsample.loader.side_stream import streamed
from gsample.loader.super_batching import (
    auto_statistic,
    choose_super_batch,
    default_budget,
    out_of_memory,
    release_frames,
    super_batch_options,
)
from gsample.matrix.sparse import Matrix
from gsample.passes.gather_nodes import WHY as GATHER_WHY
from gsample.passes.gather_nodes import gather_nodes
from gsample.runtime import (
    Call,
    Chunks,
    Lanes,
    at_once,
    chunk_size,
    in_chunks,
    in_turn,
    interleave,
    land,
    launch,
    run,
    settle,
    start,
)


class DataLoader:
    """Iterate over mini-batches of seeds, sampling each with ``sampler_fn``.

    Mini-batch ``i`` samples with the epoch's seed, batch index ``i`` and op ordinals
    restarting at 0, so its samples depend only on the epoch's seed, ``i`` and its seeds
    (docs/architecture.md §3, consequence 4): super-batched, pipelined or split over ranks,
    the batches are the same, bit for bit. The user guide's loader page
    (``docs/guide/loader.md``) explains super-batching, ``"auto"``, the pipeline and the
    calls kept in flight.

    Parameters
    ----------
    A : Matrix or gsample.distributed.PartitionedMatrix
        The graph, ``N`` nodes.
    sampler_fn : callable
        ``sampler_fn(A, seeds) -> out``, plain or ``gs.compile``'d; bind other arguments
        with ``functools.partial``.
    seeds : LongTensor, shape (S,), or BoolTensor, shape (N,)
        The epoch's seeds (global node ids, at least one), or a mask over the nodes.
    batch_size : int
        Seeds per mini-batch, ``>= 1``.
    shuffle : bool
        Permute the seeds every epoch (with gsample's hash: the same on CPU and GPU).
    drop_last : bool
        Drop a last mini-batch smaller than ``batch_size``.
    seed : int, optional
        Seed of the loader's stream. Default: drawn from gsample's stream when an epoch
        starts (``gs.manual_seed`` controls it). Every epoch has a stream of its own.
    progress : bool
        Show a tqdm bar.
    super_batch : int or "auto", optional
        Sample this many mini-batches in one run of the compiled program (still yielded
        one by one); ``"auto"``: the fastest size that fits ``memory_budget``, timed on the
        first epoch's own mini-batches (one at a time unless a size is clearly faster).
        ``sampler_fn`` must be compiled or traceable. On a partitioned graph, an int: N of
        the rank's mini-batches per round of exchanges.
        Default: off.
    memory_budget : int, optional
        Bytes a super-batch may use with ``"auto"``. Default: half the GPU's free memory;
        on the CPU the L2 cache size.
    fixed_state : bool
        Declare that tensors the sampler's draws depend on (model weights, bandit biases)
        do not change while the loader runs; needed to super-batch or pipeline such a
        sampler.
    features : Tensor, shape (N, F), optional
        Node features (floating point, dense or ``torch.sparse``), on the graph's device
        or the CPU (pinned and read through UVA for a GPU graph): each batch carries
        ``n_id`` (its nodes, seeds first) and ``x = features[n_id]``.
    labels : Tensor, shape (N,) or (N, C), optional
        Node labels, gathered as ``y = labels[n_id]``.
    feature_cache : int
        Bytes of GPU memory caching the highest in-degree nodes' feature rows of a CPU
        table read by a GPU graph. Default 0: none.
    pipeline : bool, "stream" or "auto"
        With ``features`` or ``labels``, how sampling and gathering overlap training.
        True: in overlapping stages (two threads, and CUDA streams on a GPU). ``"stream"``:
        on a GPU, the next group of mini-batches (one, or a super-batch's N) sampled and
        gathered on a CUDA stream of the loader's, in the loop's own thread, right after the
        current group's first batch is handed out (the GPU runs it beside the model's
        kernels; no thread competes with the model's for the interpreter); on the CPU as
        False. False: one stage after the other, on the loop's stream. ``"auto"``
        (default): ``"stream"`` where the graph and every table are on a GPU (a mini-batch's
        sampling and gathering take so little host time there that the stages' threads
        would cost the training loop more than the overlap wins), else True. A sampler
        given tensors without ``fixed_state``, and an epoch sampled in one run, run stage
        by stage whatever the setting.
    distributed : bool
        Yield only this rank's share of every epoch (``torch.distributed``, or ``rank`` and
        ``world_size``); a mini-batch keeps its global ``index``.
    rank, world_size : int, optional
        This process's rank and the number of ranks, instead of ``torch.distributed``'s.
    seeds_are_nodes : bool
        False when the seeds only name a mini-batch (ClusterGCN's parts): the sampler
        returns ``(A[nodes, nodes], nodes)`` and ``n_id`` starts from ``nodes``.

    Attributes
    ----------
    super_batch_size : int or None
        Mini-batches per super-batch (``"auto"``: chosen during the first epoch).
    batch_bytes, memory_cap : int or None
        ``"auto"``: one mini-batch's measured bytes, and the most mini-batches the budget
        holds.
    auto_times : dict
        ``"auto"``: seconds per mini-batch of every super-batch size timed (its best run).
    auto_runs : dict
        ``"auto"``: those of each counted run of every size (:func:`choose_super_batch`
        chooses from them: a size is kept only where it beats one at a time by
        :data:`AUTO_MARGIN`).
    feature_store, label_store : gsample.loader.features.FeatureStore or None
        Where ``x`` / ``y`` come from (``feature_store.hit_rate``: the cache's hits).
    pipeline : bool or "stream"
        The ``pipeline`` setting resolved (``"auto"``: ``"stream"`` or True).
    sample_seconds, gather_seconds : float
        The last epoch's time spent sampling and gathering (with ``"stream"``: the loop
        thread's host time issuing them; their GPU work runs beside the model's).

    Yields
    ------
    Batch
        ``seeds`` (B,), ``index``, ``out`` (what ``sampler_fn`` returned), and with
        ``features`` / ``labels``: ``n_id`` (n,), ``x`` (n, F), ``y`` (n,) or (n, C).

    Raises
    ------
    TypeError, ValueError
        A bad argument, naming it (a refused ``super_batch`` names ``super_batch``).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> @gs.compile
    ... def graphsage(A, seeds, fanouts=(10, 5)):
    ...     blocks = []
    ...     for k in fanouts:
    ...         s = A[:, seeds].individual_sample(k)
    ...         blocks.append(s)
    ...         seeds = s.all_nodes()
    ...     return blocks
    >>> A, x, y = gs.datasets.planted_partition(2_000, num_classes=4, seed=0)
    >>> loader = gs.DataLoader(A, graphsage, torch.arange(1024), 256, features=x, labels=y)
    >>> for batch in loader:
    ...     data = batch.to_pyg()          # x, y: the rows of batch.n_id
    >>> len(loader), data.batch_size, data.x.shape == (data.num_nodes, 32)
    (4, 256, True)
    >>> fast = gs.DataLoader(A, graphsage, torch.arange(1024), 256, super_batch="auto")
    >>> ahead = gs.DataLoader(A, graphsage, torch.arange(1024), 256, features=x, pipeline="stream")
    >>> [b.x.shape[1] for b in ahead]  # on the CPU: stage by stage, as pipeline=False
    [32, 32, 32, 32]
    """

    def __init__(
        self,
        A,
        sampler_fn: Callable,
        seeds,
        batch_size: int,
        shuffle: bool = True,
        drop_last: bool = False,
        seed: int | None = None,
        progress: bool = False,
        super_batch=None,
        memory_budget: int | None = None,
        fixed_state: bool = False,
        features=None,
        labels=None,
        feature_cache: int = 0,
        pipeline: bool | str = "auto",
        distributed: bool = False,
        rank: int | None = None,
        world_size: int | None = None,
        seeds_are_nodes: bool = True,
    ):
        partitioned = getattr(A, "placement", None) == "partitioned"
        if not isinstance(A, Matrix) and not partitioned:
            raise TypeError(f"A: expected a gs.Matrix, got {type(A).__name__}")
        self.rank, self.world_size = resolve_ranks(distributed, rank, world_size)
        if partitioned:  # its ranks sample together: the loader splits as they do
            if (rank is not None or world_size is not None) and (self.rank, self.world_size) != (
                A.rank,
                A.world_size,
            ):
                raise ValueError(
                    f"rank, world_size: the partitioned graph is rank {A.rank} "
                    f"of {A.world_size}, got {self.rank} of {self.world_size}"
                )
            self.rank, self.world_size = A.rank, A.world_size
            sampler_fn = _eager(sampler_fn)
        if not callable(sampler_fn):
            raise TypeError("sampler_fn: must be callable as sampler_fn(A, seeds)")
        self.A = A
        self.sampler_fn = sampler_fn
        self.seeds = seed_ids(seeds, "seeds", A.num_nodes, A.device)
        if self.seeds.numel() == 0:
            raise ValueError(
                "seeds: no seeds (an empty tensor, or a mask with no True entry): "
                "an epoch would have no mini-batch; give at least one node id"
            )
        self.batch_size = V.count(batch_size, "batch_size", low=1)
        self.shuffle = V.flag(shuffle, "shuffle")
        self.drop_last = V.flag(drop_last, "drop_last")
        self.seed = V.seed(seed, none_ok=True)
        self.progress = V.flag(progress, "progress")
        self._epoch = 0
        self.super_batch, self.memory_budget = super_batch_options(super_batch, memory_budget)
        self.fixed_state = V.flag(fixed_state, "fixed_state")
        self.super_batch_size = self.super_batch if isinstance(self.super_batch, int) else None
        self.batch_bytes = None
        self.memory_cap = None
        # the size of the smallest super-batch that ran out of memory (later runs are split
        # below it), or None
        self.out_of_memory_at = None
        self.auto_times: dict = {}
        self.auto_runs: dict = {}
        self._super = None  # the super-batcher (gsample.runtime.SuperBatcher)
        self._super_sampler = None  # its compiled sampler
        self._partitioned = partitioned
        # with rows to gather, a compiled sampler's variant that also computes the nodes
        # they are gathered for (``gathering``), kept with the sampler it was made for; a
        # super-batch's keeps them with each batch's blocks too
        gathers = features is not None or labels is not None
        self._variant = (sampler_fn, gathering(sampler_fn) if gathers and not partitioned else None)
        if self.super_batch is not None and not partitioned:  # traced now: refusals from here
            self._super_sampler, self._super = _super_batcher(
                A, self._variant[1] or sampler_fn, self.seeds[: self.batch_size], self.fixed_state
            )
        self.feature_store = (
            None if features is None else FeatureStore(features, A, "features", feature_cache)
        )
        if feature_cache and features is None:
            raise ValueError("feature_cache: caches rows of features; none were given")
        self.label_store = None if labels is None else FeatureStore(labels, A, "labels")
        self.pipeline = self._pipelines(pipeline)
        self.seeds_are_nodes = V.flag(seeds_are_nodes, "seeds_are_nodes")
        self.sample_seconds = self.gather_seconds = 0.0
        self._streams = None
        self._side_stream = None  # pipeline="stream"'s (gsample.loader.side_stream)
        self._workers = None  # the pipeline's stage threads (gsample.loader.pipeline)
        self._pipelines_open = 0  # epochs whose pipeline is running
        if self.super_batch is not None and partitioned:  # every rank, together
            refused = None
            if self.super_batch == "auto":
                refused = (
                    "'auto' is not supported on a partitioned graph (each rank would "
                    "time sizes on its own mini-batches, and the ranks must sample the "
                    "same rounds); give the number of mini-batches, e.g. super_batch=8"
                )
            elif self._stateful():
                refused = (
                    "the sampler is given tensors (functools.partial), state that may "
                    "change between mini-batches (model weights, bandit biases); a "
                    "super-batch samples its mini-batches before any update. If they "
                    "stay fixed while the loader runs, say so: gs.DataLoader(..., "
                    "super_batch=4, fixed_state=True)"
                )
            agree(A, self.super_batch, refused, len(self))

    def __len__(self) -> int:
        """Mini-batches this process yields per epoch (its share, when distributed)."""
        n = self.num_batches
        return n if self.world_size == 1 else math.ceil(n / self.world_size) if n else 0

    @property
    def num_batches(self) -> int:
        """Mini-batches of the whole epoch (over all ranks)."""
        n = self.seeds.numel()
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    @property
    def backend(self) -> str:
        """The backend whose code samples this loader's graph, ``"torch"`` or ``"cuda"``
        (:func:`gsample.backend_for` of the graph, with a compiled sampler's ``backend=``);
        the progress bar shows it."""
        fn = _unwrap(self.sampler_fn)[0]
        return backend_for(self.A, fn.backend if isinstance(fn, CompiledSampler) else None)

    def _epoch_seed(self) -> int:
        if self.seed is not None:
            return combine(combine(0, self.seed), self._epoch)
        stream = stream_state()
        key = op_key(stream.seed, stream.ordinal, stream.batch_index)
        stream.ordinal += 1  # the loader's epoch takes one ordinal of the outer stream
        return key

    def __iter__(self):
        epoch_seed = self._epoch_seed()
        self._epoch += 1
        order = self.seeds
        backend = self.backend
        if self.shuffle:
            keys = epoch_keys(epoch_seed, order.numel(), order.device, backend)
            order = order[torch.argsort(keys, stable=True)]
        # views made when first asked for: a super-batch takes its seeds as one view and
        # its mini-batches' own views are made while the device samples
        parts = SeedParts(order, self.batch_size, self.num_batches)
        # this rank's mini-batches: runs of consecutive global indices (all of them, alone)
        runs = [
            (first, parts[first : first + n])
            for first, n in rank_batches(len(parts), self.rank, self.world_size)
        ]
        mine = sum(len(run) for _, run in runs)
        bar = tqdm(
            total=mine,
            disable=not self.progress,
            unit="batch",
            desc=f"sampling ({backend} backend)",
        )
        # groups: the mini-batches of one sampling run (one, or a super-batch's N), handed
        # between the stages together (one hand-over per run, not per mini-batch)
        if self._partitioned and self.super_batch is not None:
            groups = self._rounds(runs, epoch_seed)
        elif self._super is None:
            groups = ([b] for first, run in runs for b in self._one_by_one(run, epoch_seed, first))
        else:
            groups = (g for first, run in runs for g in self._super_batches(run, epoch_seed, first))
        self.sample_seconds = self.gather_seconds = 0.0
        gathers = self.feature_store is not None or self.label_store is not None
        shown = not bar.disable
        staged = None
        if self.pipeline and gathers and not self._stateful() and not self._one_run(mine):
            if self.pipeline is True:
                staged = pipelined(self, groups)
            elif self.A.device.type == "cuda":  # "stream" (on the CPU: stage by stage)
                staged = streamed(self, groups)
        if staged is not None:
            if not shown:  # (the loop's thread is the model's: no call per mini-batch)
                yield from staged
                return
            for batch in staged:
                yield batch
                bar.update(1)
            bar.close()
            return
        # handed out group by group; without rows to gather or a bar to show, by `yield
        # from` (the list iterated in C: no call per mini-batch)
        for group in self._timed(groups):
            if not gathers and not shown:
                yield from group
                continue
            for batch in group:
                yield self._gather(batch)
                bar.update(1)
        bar.close()

    def _pipelines(self, pipeline) -> bool | str:
        """The ``pipeline`` argument resolved (True, False or ``"stream"``): ``"auto"`` is
        ``"stream"`` when the graph and every table it gathers from are on a GPU
        (``FeatureStore.mode == "device"``), else True."""
        if isinstance(pipeline, str) and pipeline in ("auto", "stream"):
            if pipeline == "stream":
                return pipeline
            stores = [s for s in (self.feature_store, self.label_store) if s is not None]
            on_gpu = self.A.device.type == "cuda" and all(s.mode == "device" for s in stores)
            return "stream" if on_gpu else True
        if not isinstance(pipeline, (bool, np.bool_)):
            raise TypeError(f'pipeline: must be True, False, "stream" or "auto", got {pipeline!r}')
        return bool(pipeline)

    def _one_run(self, count: int) -> bool:
        """Whether the epoch (``count`` mini-batches) is sampled in at most one run (none,
        or a super-batch holding all of them): then no stage has anything to overlap with."""
        size = self.super_batch_size if self.super_batch is not None else 1
        return count == 0 or (size is not None and size >= count)

    def _stateful(self) -> bool:
        """Whether ``sampler_fn`` was given tensors (state a training step may change)
        without ``fixed_state``: then it samples in step with the loop, unpipelined."""
        if self.fixed_state:
            return False
        _, args, kwargs = _unwrap(self.sampler_fn)
        return any(isinstance(v, torch.Tensor) for v in (*args, *kwargs.values()))

    def _timed(self, groups, sync=None):
        """``groups`` (lists of batches), adding the time each takes to make to
        ``sample_seconds``."""
        groups = iter(groups)
        while True:
            began = time.perf_counter()
            try:
                group = next(groups)
            except StopIteration:
                return
            if sync is not None:
                sync()
            self.sample_seconds += time.perf_counter() - began
            yield group

    def _gather(self, batch: Batch, sync=None, n_id=None) -> Batch:
        """Set ``batch.n_id`` (``n_id`` where given: its :func:`batch_nodes`, made already),
        ``x`` and ``y`` (with ``features`` / ``labels``)."""
        if self.feature_store is None and self.label_store is None:
            return batch
        began = time.perf_counter()
        # n_id is the sample's (every id a gsample op made is in range; batch_nodes checks
        # the induced subgraph's nodes a sampler returns): the stores' unchecked gather
        if n_id is None:
            n_id = batch_nodes(batch.out, batch.node_seeds, self.A.num_nodes)
        batch.n_id = n_id
        if self.feature_store is not None:
            batch.x = self.feature_store._rows(n_id)
        if self.label_store is not None:
            batch.y = self.label_store._rows(n_id)
        if sync is not None:
            sync()
        self.gather_seconds += time.perf_counter() - began
        return batch

    def _gather_group(self, group: list, sync=None, gathered: list | None = None) -> list:
        """:meth:`_gather` of every batch of ``group`` (one sampling run's), appended to
        ``gathered`` (returned) as each is done: where one fails, those before it are there.

        Each table's rows are gathered in one op for all of them where their ``n_id`` are
        consecutive views of one tensor (a super-batch's:
        :func:`gsample.loader.features.adjacent`) and the stores can cut them out
        (:meth:`FeatureStore.cuts`, :meth:`FeatureStore.rows_of`): the same rows, each
        batch's ``x`` / ``y`` in the group's storage. Else (``GROUP_GATHER`` off, one batch,
        ids elsewhere, a store that cannot, an error) batch by batch, with the ``n_id``
        made here already (an error: made again, so that the batch at fault raises)."""
        gathered = [] if gathered is None else gathered
        stores = [s for s in (self.feature_store, self.label_store) if s is not None]
        n_ids = None
        if _features.GROUP_GATHER and len(group) > 1 and stores:
            began = time.perf_counter()
            try:
                n_ids = [batch_nodes(b.out, b.node_seeds, self.A.num_nodes) for b in group]
                found = adjacent(n_ids)
                if found is not None and all(s.cuts(found[1]) for s in stores):
                    rows = [s.rows_of(*found) for s in stores]
                    x = rows.pop(0) if self.feature_store is not None else [None] * len(group)
                    y = rows.pop(0) if self.label_store is not None else [None] * len(group)
                    for batch, n_id, xb, yb in zip(group, n_ids, x, y):
                        batch.n_id, batch.x, batch.y = n_id, xb, yb
                    if sync is not None:
                        sync()
                    self.gather_seconds += time.perf_counter() - began
                    gathered.extend(group)
                    return gathered
            except Exception:  # (the batch at fault raises again, at its turn, batch by batch)
                n_ids = None
            self.gather_seconds += time.perf_counter() - began
        if n_ids is None:
            for batch in group:
                gathered.append(self._gather(batch, sync))
        else:  # (a table whose rows would start unaligned: the n_id are made already)
            for batch, n_id in zip(group, n_ids):
                gathered.append(self._gather(batch, sync, n_id))
        return gathered

    def _one_by_one(
        self, parts: list, epoch_seed: int, first: int = 0, indices=None, chunked: bool = True
    ):
        """The batches ``first, first + 1, ...`` (or ``indices``), seeds ``parts``, sampled
        one by one; a compiled sampler whose program reads back before its end (on a GPU)
        with two mini-batches in flight (``_overlapped``; ``chunked=False``: no chunks of
        mini-batches a replay, e.g. where a super-batch ran out of memory)."""
        pairs = zip(range(first, first + len(parts)) if indices is None else indices, parts)
        if self._overlaps():
            yield from self._overlapped(pairs, epoch_seed, chunked)
            return
        # the first call prepares the epoch's program (CompiledSampler.prepare) and runs it;
        # the others run it with their seeds while the sampler's stamp is unchanged (else,
        # after a clear_cache() or under another gs.use_backend, they are calls again)
        sampler, first_call = self._sampler, True
        prepared = arguments = name = None
        for i, batch_seeds in pairs:
            with batch_scope(epoch_seed, i):
                if first_call:
                    first_call = False
                    prepared, arguments, name = self._prepared(sampler, batch_seeds)
                if prepared is not None and prepared[0].stamp() == prepared[1]:
                    out = run(prepared[2], {**arguments, name: batch_seeds})
                else:
                    out = sampler(self.A, batch_seeds)
            yield Batch(seeds=batch_seeds, index=i, out=out, seeds_are_nodes=self.seeds_are_nodes)

    def _prepared(self, sampler, seeds) -> tuple:
        """``((compiled sampler, its stamp, program), arguments, name)`` of a
        ``gs.compile``'d ``sampler``'s call on the mini-batch ``seeds``
        (``CompiledSampler.prepare``: the epoch's mini-batches run ``program`` with their
        seeds as argument ``name``, without the call's binding and cache lookup, while the
        sampler's ``stamp()`` is unchanged), or Nones where it has none (an eager sampler, an
        interpreted program, a static argument that may change in place, the seeds passed
        other than as one argument)."""
        fn, args, kwargs = _unwrap(sampler)
        if not isinstance(fn, CompiledSampler):
            return None, None, None
        stamp = fn.stamp()
        prepared = fn.prepare(*args, self.A, seeds, **kwargs)
        names = [] if prepared is None else [n for n, v in prepared[1].items() if v is seeds]
        if len(names) != 1:
            return None, None, None
        return (fn, stamp, prepared[0]), prepared[1], names[0]

    @property
    def _sampler(self):
        """What samples one mini-batch at a time: ``sampler_fn``, or, with ``features`` /
        ``labels``, its variant computing the nodes whose rows are gathered
        (:func:`gathering`; the same samples), unless ``sampler_fn`` was replaced since."""
        made_for, variant = self._variant
        return variant if variant is not None and self.sampler_fn is made_for else self.sampler_fn

    def _overlaps(self, fn=None) -> bool:
        """Whether calls of a ``gs.compile``'d sampler (``fn``, default the loader's) keep two
        in flight: its ``runtime`` ``overlap`` on, a graph on a GPU, samples no training step
        may change between them (see ``_stateful``)."""
        fn = _unwrap(self.sampler_fn)[0] if fn is None else fn
        return (
            isinstance(fn, CompiledSampler)
            and fn.runtime.overlap
            and getattr(self.A, "device", None) is not None
            and self.A.device.type == "cuda"
            and not self._stateful()
        )

    def _overlapped(self, pairs, epoch_seed: int, chunked: bool = True):
        """``(index, seeds)`` pairs sampled with two calls in flight: while the host finishes
        one mini-batch's layer, the GPU runs the other's. Each call draws what it draws alone
        (its own lane and stream state); the batches come out in order, an error at its
        mini-batch. The epoch's program, its arguments and the seeds' name come from its
        first call's plan (the others start it with their seeds in place); a program that
        pauses once per call (a node-wise sampler: one CUDA graph, then its read-back) is
        launched and landed in turn on two lanes the epoch holds
        (:func:`gsample.runtime.overlap.in_turn`), its consecutive mini-batches of one size
        ``chunk_size`` at a time (``gsample.runtime.chunk.CHUNK``, 1: off) as one replay of
        a CUDA graph holding their calls (:func:`gsample.runtime.in_chunks`, two
        :class:`~gsample.runtime.Chunks` in turn: the same samples), any other call is a
        :class:`~gsample.runtime.overlap.Call` of :func:`gsample.runtime.overlap.interleave`
        (a context of its own: deferred checks, read-back state), or made as it is where
        nothing was planned."""
        fn, args, kwargs = _unwrap(self._sampler)
        pairs = iter(pairs)
        first = next(pairs, None)
        if first is None:
            return
        pairs = itertools.chain([first], pairs)
        planned = fn.plan(*args, self.A, first[1], **kwargs)
        names = [] if planned is None else [n for n, v in planned[1].items() if v is first[1]]
        program, arguments = planned if len(names) == 1 else (None, None)
        seed, lanes, chunks = epoch_seed & MASK64, Lanes(), None
        if program is not None and program.one_region:

            def go(pair):
                return launch(
                    lanes.next(program), {**arguments, names[0]: pair[1]}, (seed, 0, pair[0])
                )

            k = chunk_size(program) if chunked else 1
            if k > 1:  # k consecutive mini-batches of one size a replay, the rest alone
                chunks = Chunks(program, k)

                def go_many(group):
                    return chunks.next().launch(
                        [{**arguments, names[0]: p} for _, p in group],
                        [(seed, 0, i) for i, _ in group],
                    )

                calls = in_chunks(pairs, chunks.limit, go, land, go_many, settle, size=_seeds_shape)
            else:
                calls = in_turn(pairs, go, land, settle)
        else:

            def begin(pair):
                i, batch_seeds = pair
                if program is not None:

                    def call():
                        return start(program, {**arguments, names[0]: batch_seeds})
                else:  # as it is

                    def call():
                        return at_once(lambda: fn(*args, self.A, batch_seeds, **kwargs))

                return Call(call, (seed, 0, i))

            calls = interleave(pairs, begin, depth=2)
        try:
            for (i, batch_seeds), out in calls:
                yield Batch(
                    seeds=batch_seeds, index=i, out=out, seeds_are_nodes=self.seeds_are_nodes
                )
        finally:
            calls.close()
            lanes.release()
            if chunks is not None:
                chunks.release()

    def _super_batches(self, parts: list, epoch_seed: int, base: int = 0):
        """The batches ``base, base + 1, ...`` (seeds ``parts``) in groups, a group per
        sampling run (a super-batch's mini-batches, or one mini-batch)."""
        i = 0
        if self.super_batch_size is None and parts:  # "auto": measure batch 0 first
            try:
                outs, self.batch_bytes = self._super.measure(parts[0], epoch_seed, base)
            except Exception as error:
                # out of memory measuring one mini-batch that fits alone: one at a time
                yield (yield from self._explain_failure(parts[:1], epoch_seed, base, error))
                self.super_batch_size = 1
                yield from ([b] for b in self._one_by_one(parts[1:], epoch_seed, base + 1))
                return
            budget = self.memory_budget or default_budget(self.A.device)
            self.memory_cap = max(1, min(len(parts), budget // max(self.batch_bytes, 1)))
            yield self._batches(parts[:1], base, outs)
            i = 1
            if self.memory_cap > 1:
                chosen = yield from self._time_sizes(parts, epoch_seed, base)
                i, self.super_batch_size = chosen
            else:
                self.super_batch_size = 1
        elif parts and self.memory_cap is None and self._capped_on_gpu():
            # a size given, on a GPU: mini-batch 0 measured first (and yielded, as "auto"
            # does), and runs no larger than the default budget holds (half the free memory:
            # a run that would not fit is never attempted, its allocations never made)
            try:
                outs, self.batch_bytes = self._super.measure(parts[0], epoch_seed, base)
            except Exception as error:
                if out_of_memory(error):  # one mini-batch alone: runs stay one at a time
                    self.memory_cap = 1
                yield (yield from self._explain_failure(parts[:1], epoch_seed, base, error))
            else:
                budget = default_budget(self.A.device)
                self.memory_cap = max(1, budget // max(self.batch_bytes, 1))
                yield self._batches(parts[:1], base, outs)
            i = 1
        if self.super_batch == "auto" and self.super_batch_size == 1:
            yield from ([b] for b in self._one_by_one(parts[i:], epoch_seed, base + i))  # no gain
            return
        size = self.super_batch_size
        if self.super_batch != "auto" and self.memory_cap is not None:
            size = min(size, self.memory_cap)  # (the same samples, in more runs)
        blocks = [(base + j, parts[j : j + size]) for j in range(i, len(parts), size)]
        if len(blocks) > 1 and self._overlaps(self._super_sampler) and self._two_fit(size):
            yield from self._overlapped_blocks(blocks, epoch_seed)
            return
        for first, block in blocks:
            yield from self._block(block, epoch_seed, first)

    def _capped_on_gpu(self) -> bool:
        """Whether a super-batch size given (not ``"auto"``) is kept within the default
        budget: on a GPU, for a size above one, on a graph that is not partitioned."""
        return (
            self.super_batch != "auto"
            and (self.super_batch_size or 1) > 1
            and self.A.device.type == "cuda"
            and not self._partitioned
        )

    def _two_fit(self, size: int) -> bool:
        """Whether two super-batches of ``size`` may be in flight: always for a size given
        (the user chose it; an error names it), for ``"auto"``'s when twice its estimate
        fits the budget (``batch_bytes``, measured)."""
        if self.super_batch != "auto":
            return True
        budget = self.memory_budget or default_budget(self.A.device)
        return 2 * size * max(self.batch_bytes or 0, 1) <= budget

    def _overlapped_blocks(self, blocks: list, epoch_seed: int):
        """``blocks`` (``(first index, seeds of each)``) sampled with two super-batches in
        flight: the host splits one super-batch's outputs into its mini-batches while the GPU
        samples the next. A program of one CUDA graph (a node-wise sampler's) is launched,
        settled and landed in turn on two lanes (:func:`gsample.runtime.overlap.in_turn`:
        its read-backs before the next super-batch's graph is queued, the split after), any
        other is a :class:`~gsample.runtime.overlap.Call` of
        :func:`~gsample.runtime.overlap.interleave`. A super-batch that raises is re-run one
        by one at its turn, as alone (``_explain_failure``)."""
        seed, lanes = epoch_seed & MASK64, Lanes()
        programs = [self._super.program(n)[1] for n in {len(block) for _, block in blocks}]
        if all(p is not None and p.one_region for p in programs):
            calls = in_turn(
                blocks,
                lambda item: self._super.launch(
                    item[1], lanes.next(self._super.program(len(item[1]))[1]), (seed, 0, item[0])
                ),
                land,
                settle,
            )
        else:
            calls = interleave(
                blocks,
                lambda item: Call(lambda: self._super.start(item[1]), (seed, 0, item[0])),
                depth=2,
            )
        rest = []
        try:
            for n, (first, block) in enumerate(blocks):
                try:
                    _, outs = next(calls)
                except Exception as error:
                    batches = yield from self._explain_failure(block, epoch_seed, first, error)
                    yield batches  # out of memory: sampled one by one; the rest in turn
                    rest = blocks[n + 1 :]
                    break
                yield self._batches(block, first, outs)
        finally:
            calls.close()
            lanes.release()
        for first, block in rest:
            yield from self._block(block, epoch_seed, first)

    def _rounds(self, runs: list, epoch_seed: int):
        """A partitioned graph's super-batches: this rank's mini-batches (``runs``: ``(first
        index, seeds of each)``) ``super_batch_size`` at a time, each group sampled in one
        round whose exchanges carry them all (:mod:`gsample.distributed.partition_batches`).
        Every rank has as many mini-batches (``rank_batches`` pads the epoch), so the ranks
        run as many rounds, each as many mini-batches; a group may span the wrap-around of
        the padding (its indices need not be consecutive: each keys its own draws)."""
        items = [(first + j, p) for first, run in runs for j, p in enumerate(run)]
        for i in range(0, len(items), self.super_batch_size):
            group = items[i : i + self.super_batch_size]
            indices, block = [j for j, _ in group], [p for _, p in group]
            if len(group) == 1:  # a round of one: as without super-batching
                yield list(self._one_by_one(block, epoch_seed, indices=indices))
                continue
            try:
                outs = sample_round(self.A, self.sampler_fn, block, indices, epoch_seed)
            except Exception as error:
                if is_refusal(error):  # raised alike on every rank, at the same point
                    raise
                yield from self._explain_failure(block, epoch_seed, indices[0], error, indices)
            yield [
                Batch(seeds=p, index=j, out=out, seeds_are_nodes=self.seeds_are_nodes)
                for (j, p), out in zip(group, outs)
            ]

    def _block(self, block: list, epoch_seed: int, first: int):
        """Sample the mini-batches ``first, ...`` (seeds ``block``) in one run; yield them
        as one group."""
        batches = yield from self._sample_block(block, epoch_seed, first)
        yield batches

    def _sample_block(self, block: list, epoch_seed: int, first: int):
        """Sample the mini-batches ``first, ...`` in one run and return them (a list of
        ``Batch``); a run that raises is re-run one by one (``_explain_failure``)."""
        limit = self.out_of_memory_at
        if limit is not None and len(block) >= limit > 1:  # runs of this size ran out
            size, batches = max(1, limit // 2), []
            for j in range(0, len(block), size):
                part = yield from self._sample_block(block[j : j + size], epoch_seed, first + j)
                batches += part
            return batches
        if len(block) == 1 and limit is not None:  # split down to one: as without super-batching
            return list(self._one_by_one(block, epoch_seed, first))
        try:
            # the mini-batches' seed views made while the device samples
            meanwhile = block.materialize if isinstance(block, SeedParts) else None
            outs = self._super.run(block, epoch_seed, first, meanwhile=meanwhile)
        except Exception as error:
            return (yield from self._explain_failure(block, epoch_seed, first, error))
        return self._batches(block, first, outs)

    def _batches(self, block: list, first: int, outs: list) -> list:
        """The ``Batch`` of each mini-batch ``first, ...`` (seeds ``block``, outputs ``outs``).
        A super-batch's blocks whose columns are the seeds keep ``block[b]`` itself as
        such, as a mini-batch sampled alone does (no comparison of ids when gathering)."""
        bind_seeds(outs, block)
        return batches_of(block, first, outs, self.seeds_are_nodes)

    def _time_sizes(self, parts: list, epoch_seed: int, base: int = 0):
        """``"auto"``: time super-batches of 1, 2, 4, ... mini-batches (within the memory
        cap), each size three times: its first run is not counted (it lowers and compiles),
        the other two are, by :func:`auto_statistic` (a GPU's best run, the CPU's median). Stop once
        doubling stops paying (from 8 on: a super-batch's fixed cost per run can make 2
        slower than 1 on a GPU while much larger sizes are faster, so the small sizes do not
        decide); :func:`choose_super_batch` picks the size. The timed runs sample (and
        yield) the epoch's own mini-batches. Returns ``(next mini-batch, chosen size)``;
        ``auto_times`` keeps the seconds per mini-batch of every size tried, ``auto_runs``
        those of each of its counted runs."""
        cuda = self.A.device.type == "cuda"
        i, N, self.auto_times, self.auto_runs = 1, 1, {}, {}
        while self.memory_cap >= N and i + 3 * N <= len(parts):
            runs = []
            for _ in range(3):
                block = parts[i : i + N]
                if cuda:
                    torch.cuda.synchronize(self.A.device)
                began = time.perf_counter()
                if N == 1:  # as without super-batching; an error raises here
                    batches = [next(self._one_by_one(block, epoch_seed, base + i))]
                else:
                    batches = yield from self._sample_block(block, epoch_seed, base + i)
                if cuda:
                    torch.cuda.synchronize(self.A.device)
                runs.append((time.perf_counter() - began) / N)
                yield batches
                i += N
            self.auto_runs[N] = runs[1:]
            self.auto_times[N] = seconds = min(runs[1:])
            best = min(self.auto_times, key=self.auto_times.get)
            if N >= 8 and best != N and seconds > 0.95 * self.auto_times[best]:
                break  # doubling stopped paying (below 8, a run's fixed cost hides it)
            N *= 2
        return i, choose_super_batch(self.auto_runs, statistic=auto_statistic(self.A.device))

    def _explain_failure(
        self, block: list, epoch_seed: int, first: int, error: Exception, indices=None
    ):
        """A super-batch raised: sample its mini-batches one by one. The first one that
        raises yields the batches before it, then raises its own error (as without
        super-batching); if none does, the super-batch itself is at fault. (On a partitioned
        graph every rank does so together: a failing exchange raises on every rank.) The
        failed run's values are released first (:func:`release_frames`), before the re-run
        and before any error reaches the caller. A run that ran out of memory
        (:func:`out_of_memory`) whose mini-batches sample one by one returns them instead
        (the same samples: a super-batch samples what its mini-batches do), once with a
        ``RuntimeWarning``, and later runs of its size or more are split in halves
        (``out_of_memory_at``)."""
        release_frames(error)
        done, failed = [], None
        # one at a time, not in chunks: two chunks in flight hold 2 * CHUNK mini-batches'
        # results, more than a super-batch that ran out of memory may have held
        batches = self._one_by_one(block, epoch_seed, first, indices, chunked=False)
        while failed is None and len(done) < len(block):
            try:
                done.append(next(batches))
            except Exception as e:
                failed = e
        if failed is not None:
            if done:
                yield done
            raise failed
        if out_of_memory(error) and not self._partitioned and indices is None:
            # one at a time fits where this run did not: its mini-batches (the same samples)
            # are returned, and later runs split below its size
            if self.out_of_memory_at is None:
                warnings.warn(
                    f"super_batch: {len(block)} mini-batches in one run ran out of memory "
                    f"({type(error).__name__}); they were sampled one by one, and later runs "
                    f"take at most {max(1, len(block) // 2)}: a smaller super_batch (or "
                    "'auto' with a memory_budget) avoids the failed attempt",
                    RuntimeWarning,
                    stacklevel=2,
                )
            self.out_of_memory_at = min(self.out_of_memory_at or len(block), len(block))
            return done
        if self._partitioned:
            which = ", ".join(map(str, indices or range(first, first + len(block))))
            raise ValueError(
                f"super_batch: mini-batches {which} sample one by one but not in "
                f"one round on a partitioned graph ({type(error).__name__}: "
                f"{error}): the sampler cannot be super-batched there "
                "(gsample.distributed.partition_batches says what can); sample "
                "without super_batch"
            ) from error
        raise RuntimeError(
            f"super_batch: sampling mini-batches {first}..{first + len(block) - 1} "
            f"in one run failed ({type(error).__name__}: {error}) although they "
            "sample one by one; use a smaller super_batch (or 'auto' with a "
            "memory_budget)"
        ) from error


def epoch_keys(epoch_seed: int, n: int, device, backend: str) -> torch.Tensor:
    """An epoch's shuffle keys (:func:`gsample.base.random.shuffle_keys`'s bits) made by
    ``backend``'s code: a loader's seeds (and PyG's loaders' inputs) are ordered by a stable
    sort of them.

    Parameters
    ----------
    epoch_seed : int
        The epoch's seed (an unsigned 64-bit int).
    n : int
        Number of keys (``>= 0``).
    device : torch.device or str
        Where the keys are made.
    backend : {"torch", "cuda"}
        The resolved backend (:func:`gsample.backend_for`). ``"cuda"`` on a GPU makes them
        in one kernel (hook ``"shuffle_keys"``), where the torch code launches seventeen
        ops before the epoch's first sampling kernel; anything else runs the torch code.

    Returns
    -------
    LongTensor, shape (n,), on ``device``
        Non-negative keys (63 random bits), the same on every device and backend.

    Examples
    --------
    >>> import torch
    >>> torch.equal(epoch_keys(3, 4, "cpu", "cuda"), shuffle_keys(3, 4))  # CPU: torch code
    True
    """
    device = torch.device(device)
    if device.type == "cuda" and backend == "cuda":
        return hook("shuffle_keys")(epoch_seed, n, device)
    return shuffle_keys(epoch_seed, n, device)


def seed_ids(x, name: str, num_nodes: int, device) -> torch.Tensor:
    """Seeds given as node ids or as a boolean mask over the graph's nodes, as node ids.

    Parameters
    ----------
    x : LongTensor of shape (S,), BoolTensor of shape (num_nodes,), list or array
        Node ids, or a mask meaning its nonzero ids (in ascending order).
    name : str
        The argument's name, for errors.
    num_nodes : int
        The graph's nodes.
    device : torch.device or None
        Where a tensor must be (None: anywhere); lists and arrays are made there.

    Returns
    -------
    LongTensor, shape (S,)
        Ids checked as :func:`gsample.base.validate.ids` checks them (possibly empty).

    Examples
    --------
    >>> import torch
    >>> seed_ids(torch.tensor([True, False, True]), "seeds", 3, None)
    tensor([0, 2])
    >>> seed_ids(torch.tensor([True, False]), "seeds", 3, None)
    Traceback (most recent call last):
    ValueError: seeds: a boolean mask needs one entry per graph node, shape (3,); got (2,)
    """
    if isinstance(x, (list, tuple)) and not x:  # no ids (NumPy would make floats)
        x = torch.empty(0, dtype=torch.int64, device=device)
    if not isinstance(x, torch.Tensor) and (
        (isinstance(x, np.ndarray) and x.dtype == np.bool_)
        or (isinstance(x, (list, tuple)) and all(isinstance(v, bool) for v in x))
    ):
        x = V.as_tensor(x, name, device)
    if isinstance(x, torch.Tensor) and x.dtype == torch.bool:
        if x.dim() != 1 or x.numel() != num_nodes:
            raise ValueError(
                f"{name}: a boolean mask needs one entry per graph node, shape "
                f"({num_nodes},); got {tuple(x.shape)}"
            )
        x = V.as_tensor(x, name, device).nonzero().view(-1)
    return V.ids(x, name, num_nodes, device)


def _seeds_shape(pair) -> tuple:
    """The shape of an ``(index, seeds)`` pair's seeds: mini-batches of one shape share a
    chunk (``gsample.runtime.in_chunks``)."""
    return tuple(pair[1].shape)


def _unwrap(fn):
    """``(function, positional args, keyword args)`` of nested ``functools.partial``s."""
    args, kwargs = (), {}
    while isinstance(fn, functools.partial):
        args, kwargs = fn.args + args, {**fn.keywords, **kwargs}
        fn = fn.func
    return fn, args, kwargs


def _super_batcher(A, sampler_fn, seeds: torch.Tensor, fixed_state: bool) -> tuple:
    """``(compiled sampler, its gsample.runtime.SuperBatcher)`` for ``sampler_fn(A, seeds)``
    (a ``gs.compile``'d sampler, a function it compiles, or a ``functools.partial`` of
    either), with ``seeds`` an epoch's first mini-batch; ``TypeError`` naming
    ``sampler_fn`` where it cannot be super-batched as called."""
    fn, args, kwargs = _unwrap(sampler_fn)
    # a super-batch replaces the seeds by name and gs.compile traces with every argument
    # passed by name: a *args / **kwargs parameter has no name to pass them by
    try:
        params = inspect.signature(fn.fn if isinstance(fn, CompiledSampler) else fn)
    except (TypeError, ValueError):
        params = None  # (compile names the problem below)
    packed = (
        []
        if params is None
        else [p for p in params.parameters.values() if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    )
    if packed:
        name = getattr(fn, "__name__", type(fn).__name__)
        stars = ", ".join(("*" if p.kind == p.VAR_POSITIONAL else "**") + p.name for p in packed)
        raise TypeError(
            f"sampler_fn: super_batch needs a sampler whose parameters are all "
            f"named (e.g. def {name}(A, seeds, fanouts=(25, 10))); {name} "
            f"takes {stars}. Name its parameters, or sample without "
            "super_batch"
        )
    try:
        compiled = fn if isinstance(fn, CompiledSampler) else compile(fn)
    except TypeError as e:
        raise TypeError(f"sampler_fn: super_batch needs a function to compile ({e})") from e
    call = (*args, A, seeds)
    try:
        bound = compiled.signature.bind(*call, **kwargs)
    except TypeError as e:
        raise TypeError(f"sampler_fn: cannot be called as sampler_fn(A, seeds): {e}") from e
    name = next((k for k, v in bound.arguments.items() if v is seeds), None)
    if name is None:  # e.g. a partial binding a parameter twice
        raise TypeError(
            "sampler_fn: super_batch could not find the parameter that takes "
            "the seeds in sampler_fn(A, seeds)"
        )
    return compiled, compiled.super_batched(call, kwargs, seeds=name, fixed_state=fixed_state)


def gathering(sampler_fn):
    """``sampler_fn`` whose program also computes the nodes a loader gathers rows for.

    A ``gs.compile``'d sampler (or a ``functools.partial`` of one) is replaced by a variant
    compiled with :func:`gsample.passes.gather_nodes.gather_nodes` after its passes: where
    its blocks chain, the program computes the last block's ``all_nodes`` (``n_id``) and
    keeps it with the block, so the loader neither recomputes it nor compares ids
    (:func:`gsample.loader.features.batch_nodes`). The samples are the same, bit for bit;
    the variant is made once per compiled sampler and traces its own programs. Anything
    else (a plain function, an interpreted sampler) is returned as it is.

    Parameters
    ----------
    sampler_fn : callable
        ``sampler_fn(A, seeds) -> out``.

    Returns
    -------
    callable
        Called as ``sampler_fn``.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> @gs.compile
    ... def graphsage(A, seeds, fanouts=(10, 5)):
    ...     blocks = []
    ...     for k in fanouts:
    ...         s = A[:, seeds].individual_sample(k)
    ...         blocks.append(s)
    ...         seeds = s.all_nodes()
    ...     return blocks
    >>> import functools
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.arange(8)
    >>> sample = gathering(functools.partial(graphsage, fanouts=(10, 5)))
    >>> blocks = sample(A, seeds)                     # the same blocks as sampler_fn's
    >>> n_id = blocks[-1].all_nodes()                 # the program's: nothing launched
    """
    fn, args, kwargs = _unwrap(sampler_fn)
    if not isinstance(fn, CompiledSampler) or not fn.runtime.lowered:
        return sampler_fn
    variant = fn.with_passes((gather_nodes, GATHER_WHY))
    return functools.partial(variant, *args, **kwargs) if args or kwargs else variant


def _eager(sampler_fn):
    """``sampler_fn`` with a ``gs.compile``'d sampler inside replaced by its Python function
    (what a partitioned graph runs: its ops exchange frontiers, eagerly)."""
    fn, args, kwargs = _unwrap(sampler_fn)
    if not isinstance(fn, CompiledSampler):
        return sampler_fn
    return functools.partial(fn.fn, *args, **kwargs) if args or kwargs else fn.fn


__all__ = [
    "DataLoader",
    "epoch_keys",
    "gathering",
    "seed_ids",
]
