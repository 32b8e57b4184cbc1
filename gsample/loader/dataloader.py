"""Mini-batch iteration: ``gs.DataLoader`` (``gs.Batch``: :mod:`gsample.loader.batch`; super-batching:
:mod:`gsample.runtime.super_batcher`; the pipelined stages: :mod:`gsample.loader.pipeline`)."""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections.abc import Callable

import numpy as np
import torch
from tqdm.auto import tqdm

from gsample.backend import backend_for
from gsample.base import validate as V
from gsample.base.random import (
    MASK64,
    batch_scope,
    combine,
    combine_tensor,
    op_key,
    sort_key,
    stream_state,
)
from gsample.loader.batch import Batch
from gsample.runtime.super_batcher import (
    _default_budget,
    _returns,
    _super_batch_options,
    _SuperBatcher,
    _unwrap,
)


class DataLoader:
    """Iterate over mini-batches of seeds, sampling each with ``sampler_fn``.

    Parameters
    ----------
    A : Matrix
        The graph.
    sampler_fn : callable
        ``sampler_fn(A, seeds) -> out``; bind extra arguments with
        ``functools.partial``.
    seeds : LongTensor, shape (S,), or BoolTensor, shape (N,)
        All seeds of an epoch (global node ids), at least one; or a boolean mask over the
        graph's ``N`` nodes, meaning its nonzero ids (``data.train_mask``). An empty set
        is a ``ValueError`` (an epoch of no mini-batch; PyG's loaders, ``gsample.pyg``,
        keep PyG's empty epoch instead).
    batch_size : int
        Seeds per mini-batch, ``B >= 1``.
    shuffle : bool
        Shuffle the seeds every epoch (a permutation drawn from gsample's hash, so
        it is the same on CPU and GPU).
    drop_last : bool
        Drop the last mini-batch when it is smaller than ``batch_size``.
    seed : int, optional
        Seed of the loader's stream (any int; its stream is keyed by it modulo ``2**64``).
        Default: drawn from gsample's stream when an epoch starts, so ``gs.manual_seed``
        controls it. Epoch ``e`` of a loader uses its own stream either way, so epochs
        differ and are reproducible.
    progress : bool
        Show a tqdm bar over the mini-batches.
    super_batch : int or "auto", optional
        Sample this many mini-batches in one run of the compiled program
        (``gsample.passes.super_batch``); ``"auto"``: the fastest size that fits
        ``memory_budget``, timed on the first epoch's own mini-batches. The batches are
        the same, bit for bit, as without it (they are still yielded one by one).
        ``sampler_fn`` must be a ``gs.compile``'d sampler
        (or a ``functools.partial`` of one) or a function ``gs.compile`` can trace,
        which is then compiled here with the default passes. Default: off.

        On a partitioned graph (:class:`gsample.distributed.PartitionedMatrix`), an int
        ``N``: the sampler runs eagerly once for N consecutive mini-batches of the rank (a
        *round*, :mod:`gsample.distributed.partition_batches`), so that every exchange
        between the ranks carries the N mini-batches' frontiers at once (``N`` times fewer
        collectives); it gets its seeds as one value per mini-batch, and code other than the
        partitioned operators runs once per mini-batch. Node-wise sampling (uniform or
        weighted) and walks are super-batched; Python control flow on a per-batch value
        (``if``, ``len`` of a tensor, ...), a per-batch ``k`` and in-place writes into a
        tensor the mini-batches share raise a ``ValueError`` naming ``super_batch`` on
        every rank. Every rank must pass the same ``N`` (checked, together, when the loader
        is made: every rank makes it); every rank has ``ceil(M / world_size)`` mini-batches,
        so all run the same rounds, the last one holding the remainder. ``"auto"`` is
        refused there (the ranks would time and pick sizes of their own).
    memory_budget : int, optional
        Bytes a super-batch may use, with ``super_batch="auto"``. Default: half of a GPU's
        free memory; on the CPU the L2 cache size, as a super-batch only pays there while
        its values stay in cache (see Notes).
    fixed_state : bool
        With ``super_batch``: declare that the tensors the sampler's random draws depend
        on (model weights, bandit biases) do not change while the loader runs. A
        super-batch samples its mini-batches before the training step of the first one,
        so a sampler with such state is refused unless this is True. With ``pipeline``,
        a sampler given tensors as arguments (``functools.partial``: state a training
        step may update, as PASS's weights) samples in the caller's thread, in step with
        training, unless this is True.
    features : Tensor, shape (N, F), optional
        Node features (floating point), on the graph's device or on the CPU. Each batch
        then carries ``n_id`` (its nodes, the seeds first: :func:`gsample.loader.features.batch_nodes`)
        and ``x = features[n_id]`` on the graph's device. A CPU table for a GPU graph is
        pinned (a copy, unless it is pinned already) and read by the GPU through UVA,
        only the rows a mini-batch needs crossing the bus (:mod:`gsample.loader.features`). A
        ``torch.sparse`` table stays sparse (as CSR): each mini-batch's rows are gathered
        from it and made dense, so ``x`` is dense.
    labels : Tensor, shape (N,) or (N, C), optional
        Node labels (integer or floating point), gathered as ``y = labels[n_id]``.
    feature_cache : int
        Bytes of device memory for a cache of the highest in-degree nodes' feature rows
        (8 bytes per graph node of it for the node -> row map), used where ``features``
        is not on the graph's device (a CPU table for a GPU graph);
        ``feature_store.hit_rate`` reports how many rows it served. Where no cache can
        exist (a CPU graph, or ``features`` on the graph's GPU: rows are read in place)
        none is made and ``hit_rate`` is None, so one script runs on either. Not for a
        sparse ``features`` table (``ValueError``). Default 0: none.
    pipeline : bool
        Overlap the stages (default True) when the loader gathers ``features`` or
        ``labels``: a background thread samples mini-batch
        ``i + 1`` while another gathers mini-batch ``i``'s features and the loop trains
        on ``i - 1``, through bounded queues (one mini-batch, or one super-batch's
        mini-batches, waits between stages), each
        stage on its own CUDA stream on a GPU (the loop's stream waits for the batch's
        event before it gets it). Batches, their order and their samples are the same as
        with ``pipeline=False`` (a mini-batch's samples depend only on the epoch's seed,
        its index and its seeds), and an error still surfaces at its mini-batch.
        Without ``features`` and ``labels`` the loader has no stage to overlap and
        samples in the caller's thread: a sampling thread running ahead of the loop
        lost more to the hand-overs (the GIL) than it won (H100, compiled GraphSAGE
        [25, 10] one mini-batch at a time: 0.276 s an epoch against 0.107 s).
    distributed : bool
        Yield only this process's share of every epoch (one process per device, as
        ``torch.utils.data.DistributedSampler`` splits a dataset): every rank orders the
        epoch alike, pads it by repeating its first mini-batches to a multiple of the world
        size and takes a contiguous block of ``ceil(M / world_size)`` of its ``M``
        mini-batches (:mod:`gsample.distributed.split`). ``rank`` and ``world_size`` are read
        from ``torch.distributed`` (initialised first) unless given. A mini-batch keeps its
        global index (``Batch.index``), which keys its draws: the ranks' mini-batches together
        are the single-process epoch, sample for sample, whatever the graph's placement
        (:func:`gsample.distributed.place`). Give every rank the same ``seed`` (or the same
        ``gs.manual_seed``). A partitioned graph (:class:`gsample.distributed.PartitionedMatrix`)
        sets this itself, and its sampler runs eagerly (a ``gs.compile``'d one as its
        Python function), N mini-batches per round with ``super_batch=N``.
    seeds_are_nodes : bool
        True (default): the seeds are node ids, first in every mini-batch's ``n_id`` and
        conversions. False: they only name the mini-batch (ClusterGCN's part ids,
        GraphSAINT's draw counters); the sampler returns ``(A[nodes, nodes], nodes)`` and
        ``n_id``, the gathered ``features`` / ``labels`` and ``to_pyg()`` / ``to_dgl()`` take
        ``nodes`` alone (:attr:`Batch.node_seeds`).
    rank, world_size : int, optional
        This process's rank and the number of ranks: give both to split without
        ``torch.distributed`` (or to override what it says).

    Attributes
    ----------
    super_batch_size : int or None
        Mini-batches per super-batch (``"auto"``: chosen during the first epoch).
    batch_bytes : int or None
        ``"auto"``'s estimate of one mini-batch's memory (see Notes).
    memory_cap : int or None
        ``"auto"``: the most mini-batches ``memory_budget`` holds.
    auto_times : dict
        ``"auto"``: seconds per mini-batch of every super-batch size it timed.
    feature_store, label_store : gsample.loader.features.FeatureStore or None
        Where ``x`` / ``y`` come from (``feature_store.hit_rate``: the cache's hits, None
        without a cache). Calling one with ids, ``feature_store(n_id)``, checks them
        (``IndexError`` naming ``n_id`` for an id outside ``[0, N)``).
    sample_seconds, gather_seconds : float
        The last epoch's time spent sampling and gathering, summed over its mini-batches
        (host time of the stage's thread; pipelined on a GPU, each stage waits for its
        stream, so they include the device work).

    Notes
    -----
    Mini-batch ``i`` runs ``sampler_fn`` with the epoch's seed, batch index ``i``
    and op ordinals restarting at 0, so its samples depend only on the epoch's
    seed, ``i`` and its seeds: not on the batches before it. That is also why a
    super-batch of mini-batches ``i .. i + N - 1`` samples exactly what they sample
    one by one (docs/architecture.md §3, consequence 4). A super-batch that raises is re-run one by
    one, so an error surfaces at the mini-batch that has it, after the batches before it.

    One mini-batch at a time, a ``gs.compile``'d sampler on a GPU whose program reads sizes
    back before its end (a layer-wise sampler reads each layer's) runs with two calls in
    flight (``gsample.runtime.overlap``): while the host finishes one mini-batch's layer the
    GPU runs the other's (H100, LADIES 3 x 4000, 384 mini-batches of 512: 0.83 -> 0.65 s an
    epoch). Same samples, same order, an error still at its mini-batch; not for a sampler
    given tensors without ``fixed_state`` (a training step may change them between
    mini-batches), and off with ``gs.compile(..., runtime=Options(overlap=False))``.
    Super-batches on a GPU are kept two in flight likewise: the host splits one super-batch's
    outputs into its mini-batches while the GPU samples the next (H100, GraphSAGE [25, 10],
    super-batches of 64 on a slow host core: 0.0253 -> 0.0227 s an epoch), so two
    super-batches' memory is held at once (``"auto"``: only where two fit its budget).

    ``"auto"`` samples the epoch's first mini-batch alone and measures it: the bytes of
    every tensor its program creates that is not graph-level (the executor keeps all of
    them until the batch is done, so their sum is its footprint; on CUDA, at least the
    peak allocation the run adds); ``memory_cap = memory_budget // that`` (at least 1, at
    most the number of batches) bounds N, as a super-batch's values grow linearly in N.
    Within that cap it times super-batches of 1, 2, 4, ... of the epoch's next
    mini-batches (each size three times, timing the last: the first run of a size lowers
    and compiles, the second captures a CUDA graph) and keeps the size with the least
    time per mini-batch, stopping once doubling gains less than 5 % (from 8 on); the
    timed batches are yielded like the others (1: the rest run one by one, as without
    super-batching). On the CPU, super-batching removes per-op overhead but makes every
    array N times larger: it pays for small mini-batches (web-NotreDame, GraphSAGE
    [25, 10], 64 seeds: x1.85 with N = 8) and costs once a mini-batch's values outgrow
    the cache (LADIES 3 x 4000: x0.8); on a GPU the per-op overhead (kernel launches,
    Python) is the larger part (H100, products-sized GraphSAGE: 0.16 ms per mini-batch
    with N = 64 against 0.4 to 0.7 one by one).

    Examples
    --------
    >>> loader = gs.DataLoader(A, graphsage, train_ids, batch_size=512, seed=0)
    >>> for batch in loader:
    ...     blocks = batch.out
    >>> fast = gs.DataLoader(A, graphsage, train_ids, batch_size=512, super_batch="auto")
    >>> train = gs.DataLoader(A, graphsage, train_ids, 512, features=X, labels=y)
    >>> for batch in train:          # batch.x: (len(batch.n_id), F), seeds' rows first
    ...     loss = F.cross_entropy(model(batch)[:len(batch.seeds)], batch.y[:len(batch.seeds)])
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
        pipeline: bool = True,
        distributed: bool = False,
        rank: int | None = None,
        world_size: int | None = None,
        seeds_are_nodes: bool = True,
    ):
        from gsample.distributed.split import resolve_ranks
        from gsample.matrix.sparse import Matrix

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
        self.super_batch, self.memory_budget = _super_batch_options(super_batch, memory_budget)
        self.fixed_state = V.flag(fixed_state, "fixed_state")
        self.super_batch_size = self.super_batch if isinstance(self.super_batch, int) else None
        self.batch_bytes = None
        self.memory_cap = None
        self.auto_times: dict = {}
        self._super = None
        self._partitioned = partitioned
        if self.super_batch is not None and not partitioned:  # traced now: refusals from here
            self._super = _SuperBatcher(
                A, sampler_fn, self.seeds[: self.batch_size], self.fixed_state
            )
        from gsample.loader.features import FeatureStore

        self.feature_store = (
            None if features is None else FeatureStore(features, A, "features", feature_cache)
        )
        if feature_cache and features is None:
            raise ValueError("feature_cache: caches rows of features; none were given")
        self.label_store = None if labels is None else FeatureStore(labels, A, "labels")
        self.pipeline = V.flag(pipeline, "pipeline")
        self.seeds_are_nodes = V.flag(seeds_are_nodes, "seeds_are_nodes")
        self.sample_seconds = self.gather_seconds = 0.0
        self._streams = None
        self._workers = None  # the pipeline's stage threads (gsample.loader.pipeline)
        self._pipelines_open = 0  # epochs whose pipeline is running
        if self.super_batch is not None and partitioned:  # every rank, together
            from gsample.distributed.partition_batches import agree

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
        from gsample.compiler.compiled import (
            CompiledSampler,  # imported where used, as elsewhere here
        )

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
        if self.shuffle:
            pos = torch.arange(order.numel(), device=order.device)
            # hash_tensor(epoch_seed, -1, pos), its constant first half folded on the host
            keys = sort_key(combine_tensor(combine(epoch_seed, -1), pos))
            order = order[torch.argsort(keys, stable=True)]
        parts = list(order.split(self.batch_size))[: self.num_batches]  # one call, not a slice each
        # this rank's mini-batches: runs of consecutive global indices (all of them, alone)
        from gsample.distributed.split import rank_batches

        runs = [
            (first, parts[first : first + n])
            for first, n in rank_batches(len(parts), self.rank, self.world_size)
        ]
        mine = [p for _, run in runs for p in run]
        bar = tqdm(
            total=len(mine),
            disable=not self.progress,
            unit="batch",
            desc=f"sampling ({self.backend} backend)",
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
        if self.pipeline and gathers and not self._stateful() and not self._one_run(mine):
            from gsample.loader.pipeline import pipelined

            batches = pipelined(self, groups)
        else:
            batches = (self._gather(b) for group in self._timed(groups) for b in group)
        for batch in batches:
            yield batch
            bar.update(1)
        bar.close()

    def _one_run(self, parts: list) -> bool:
        """Whether the epoch is sampled in at most one run (no mini-batches, or a super-batch
        holding all of them): then no stage has anything to overlap with."""
        size = self.super_batch_size if self.super_batch is not None else 1
        return len(parts) == 0 or (size is not None and size >= len(parts))

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
            start = time.perf_counter()
            try:
                group = next(groups)
            except StopIteration:
                return
            if sync is not None:
                sync()
            self.sample_seconds += time.perf_counter() - start
            yield group

    def _gather(self, batch: Batch, sync=None) -> Batch:
        """Set ``batch.n_id``, ``x`` and ``y`` (with ``features`` / ``labels``)."""
        if self.feature_store is None and self.label_store is None:
            return batch
        from gsample.loader.features import batch_nodes

        start = time.perf_counter()
        # n_id is the sample's (every id a gsample op made is in range; batch_nodes checks
        # the induced subgraph's nodes a sampler returns): the stores' unchecked gather
        batch.n_id = batch_nodes(batch.out, batch.node_seeds, self.A.num_nodes)
        if self.feature_store is not None:
            batch.x = self.feature_store._rows(batch.n_id)
        if self.label_store is not None:
            batch.y = self.label_store._rows(batch.n_id)
        if sync is not None:
            sync()
        self.gather_seconds += time.perf_counter() - start
        return batch

    def _one_by_one(self, parts: list, epoch_seed: int, first: int = 0, indices=None):
        """The batches ``first, first + 1, ...`` (or ``indices``), seeds ``parts``, sampled
        one by one; a compiled sampler whose program reads back before its end (on a GPU)
        with two mini-batches in flight (``_overlapped``)."""
        pairs = zip(range(first, first + len(parts)) if indices is None else indices, parts)
        if self._overlaps():
            yield from self._overlapped(pairs, epoch_seed)
            return
        for i, batch_seeds in pairs:
            with batch_scope(epoch_seed, i):
                out = self.sampler_fn(self.A, batch_seeds)
            yield Batch(seeds=batch_seeds, index=i, out=out, seeds_are_nodes=self.seeds_are_nodes)

    def _overlaps(self, fn=None) -> bool:
        """Whether calls of a ``gs.compile``'d sampler (``fn``, default the loader's) keep two
        in flight: its ``runtime`` ``overlap`` on, a graph on a GPU, samples no training step
        may change between them (see ``_stateful``)."""
        from gsample.compiler.compiled import CompiledSampler

        fn = _unwrap(self.sampler_fn)[0] if fn is None else fn
        return (
            isinstance(fn, CompiledSampler)
            and fn.runtime.overlap
            and getattr(self.A, "device", None) is not None
            and self.A.device.type == "cuda"
            and not self._stateful()
        )

    def _overlapped(self, pairs, epoch_seed: int):
        """``(index, seeds)`` pairs sampled with two calls in flight: while the host finishes
        one mini-batch's layer, the GPU runs the other's. Each call draws what it draws alone
        (its own lane and stream state); the batches come out in order, an error at its
        mini-batch. The epoch's program, its arguments and the seeds' name come from its
        first call's plan (the others start it with their seeds in place); a program that
        pauses once per call (a node-wise sampler: one CUDA graph, then its read-back) is
        launched and landed in turn on two lanes the epoch holds
        (:func:`gsample.runtime.overlap.in_turn`), any other call is a
        :class:`~gsample.runtime.overlap.Call` of :func:`gsample.runtime.overlap.interleave`
        (a context of its own: deferred checks, read-back state), or made as it is where
        nothing was planned."""
        from gsample.runtime.overlap import Call, Lanes, in_turn, interleave
        from gsample.runtime.program import land, launch, settle, start

        fn, args, kwargs = _unwrap(self.sampler_fn)
        pairs = iter(pairs)
        first = next(pairs, None)
        if first is None:
            return
        pairs = itertools.chain([first], pairs)
        planned = fn.plan(*args, self.A, first[1], **kwargs)
        names = [] if planned is None else [n for n, v in planned[1].items() if v is first[1]]
        program, arguments = planned if len(names) == 1 else (None, None)
        seed, lanes = epoch_seed & MASK64, Lanes()
        if program is not None and program.one_region:
            go = lambda pair: launch(
                lanes.next(program), {**arguments, names[0]: pair[1]}, (seed, 0, pair[0])
            )
            calls = in_turn(pairs, go, land, settle)
        else:

            def begin(pair):
                i, batch_seeds = pair
                if program is not None:
                    call = lambda: start(program, {**arguments, names[0]: batch_seeds})
                else:  # as it is
                    call = lambda: _returns(lambda: fn(*args, self.A, batch_seeds, **kwargs))
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

    def _super_batches(self, parts: list, epoch_seed: int, base: int = 0):
        """The batches ``base, base + 1, ...`` (seeds ``parts``) in groups, a group per
        sampling run (a super-batch's mini-batches, or one mini-batch)."""
        i = 0
        if self.super_batch_size is None and parts:  # "auto": measure batch 0 first
            try:
                outs, self.batch_bytes = self._super.measure(parts[0], epoch_seed, base)
            except Exception as error:
                yield from self._explain_failure(parts[:1], epoch_seed, base, error)
            budget = self.memory_budget or _default_budget(self.A.device)
            self.memory_cap = max(1, min(len(parts), budget // max(self.batch_bytes, 1)))
            yield [
                Batch(seeds=parts[0], index=base, out=outs[0], seeds_are_nodes=self.seeds_are_nodes)
            ]
            i = 1
            if self.memory_cap > 1:
                chosen = yield from self._time_sizes(parts, epoch_seed, base)
                i, self.super_batch_size = chosen
            else:
                self.super_batch_size = 1
        if self.super_batch == "auto" and self.super_batch_size == 1:
            yield from ([b] for b in self._one_by_one(parts[i:], epoch_seed, base + i))  # no gain
            return
        size = self.super_batch_size
        blocks = [(base + j, parts[j : j + size]) for j in range(i, len(parts), size)]
        if len(blocks) > 1 and self._overlaps(self._super.compiled) and self._two_fit(size):
            yield from self._overlapped_blocks(blocks, epoch_seed)
            return
        for first, block in blocks:
            yield from self._block(block, epoch_seed, first)

    def _two_fit(self, size: int) -> bool:
        """Whether two super-batches of ``size`` may be in flight: always for a size given
        (the user chose it; an error names it), for ``"auto"``'s when twice its estimate
        fits the budget (``batch_bytes``, measured)."""
        if self.super_batch != "auto":
            return True
        budget = self.memory_budget or _default_budget(self.A.device)
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
        from gsample.runtime.overlap import Call, Lanes, in_turn, interleave
        from gsample.runtime.program import land, settle

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
        try:
            for first, block in blocks:
                try:
                    _, outs = next(calls)
                except Exception as error:
                    yield from self._explain_failure(block, epoch_seed, first, error)
                yield self._batches(block, first, outs)
        finally:
            calls.close()
            lanes.release()

    def _rounds(self, runs: list, epoch_seed: int):
        """A partitioned graph's super-batches: this rank's mini-batches (``runs``: ``(first
        index, seeds of each)``) ``super_batch_size`` at a time, each group sampled in one
        round whose exchanges carry them all (:mod:`gsample.distributed.partition_batches`).
        Every rank has as many mini-batches (``rank_batches`` pads the epoch), so the ranks
        run as many rounds, each as many mini-batches; a group may span the wrap-around of
        the padding (its indices need not be consecutive: each keys its own draws)."""
        from gsample.distributed.partition_batches import is_refusal, sample_round

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
        try:
            outs = self._super.run(block, epoch_seed, first)
        except Exception as error:
            yield from self._explain_failure(block, epoch_seed, first, error)
        return self._batches(block, first, outs)

    def _batches(self, block: list, first: int, outs: list) -> list:
        """The ``Batch`` of each mini-batch ``first, ...`` (seeds ``block``, outputs ``outs``)."""
        return [
            Batch(seeds=block[b], index=first + b, out=out, seeds_are_nodes=self.seeds_are_nodes)
            for b, out in enumerate(outs)
        ]

    def _time_sizes(self, parts: list, epoch_seed: int, base: int = 0):
        """``"auto"``: time super-batches of 1, 2, 4, ... mini-batches (within the memory
        cap), each size three times so that the one-off work of its first two runs
        (lowering and compiling, then capturing a CUDA graph) is not counted, and keep the
        size with the least time per mini-batch; stop once doubling stops paying (from 8
        on: a super-batch's fixed cost per run makes 2 slower than 1 on a GPU, H100,
        GraphSAGE: 1.13 against 0.50 ms per mini-batch, and 64 three times faster). The
        timed runs sample (and yield) the epoch's own mini-batches. Returns ``(next
        mini-batch, chosen size)``; ``auto_times`` keeps the seconds per mini-batch of
        every size tried."""
        cuda = self.A.device.type == "cuda"
        i, N, self.auto_times = 1, 1, {}
        while self.memory_cap >= N and i + 3 * N <= len(parts):
            for _ in range(3):
                block = parts[i : i + N]
                if cuda:
                    torch.cuda.synchronize(self.A.device)
                start = time.perf_counter()
                if N == 1:  # as without super-batching; an error raises here
                    batches = [next(self._one_by_one(block, epoch_seed, base + i))]
                else:
                    batches = yield from self._sample_block(block, epoch_seed, base + i)
                if cuda:
                    torch.cuda.synchronize(self.A.device)
                seconds = (time.perf_counter() - start) / N
                yield batches
                i += N
            self.auto_times[N] = seconds
            best = min(self.auto_times, key=self.auto_times.get)
            if N >= 8 and best != N and seconds > 0.95 * self.auto_times[best]:
                break  # doubling stopped paying (below 8, a run's fixed cost hides it)
            N *= 2
        if not self.auto_times:  # too few mini-batches to time
            return i, 1
        return i, min(self.auto_times, key=self.auto_times.get)

    def _explain_failure(
        self, block: list, epoch_seed: int, first: int, error: Exception, indices=None
    ):
        """A super-batch raised: sample its mini-batches one by one. The first one that
        raises yields the batches before it, then raises its own error (as without
        super-batching); if none does, the super-batch itself is at fault. (On a partitioned
        graph every rank does so together: a failing exchange raises on every rank.)"""
        done, failed = [], None
        batches = self._one_by_one(block, epoch_seed, first, indices)
        while failed is None and len(done) < len(block):
            try:
                done.append(next(batches))
            except Exception as e:
                failed = e
        if failed is not None:
            if done:
                yield done
            raise failed
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


def _eager(sampler_fn):
    """``sampler_fn`` with a ``gs.compile``'d sampler inside replaced by its Python function
    (what a partitioned graph runs: its ops exchange frontiers, eagerly)."""
    from gsample.compiler.compiled import CompiledSampler

    fn, args, kwargs = _unwrap(sampler_fn)
    if not isinstance(fn, CompiledSampler):
        return sampler_fn
    return functools.partial(fn.fn, *args, **kwargs) if args or kwargs else fn.fn
