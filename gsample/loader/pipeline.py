"""The pipelined ``gs.DataLoader``: sampling, gathering and training overlap.

Three stages, as TurboGNN runs them: a sampling thread makes mini-batch ``i + 1`` while a
gathering thread fills mini-batch ``i``'s ``n_id`` / ``x`` / ``y`` and the caller's loop trains
on ``i - 1``. Stages hand over *groups* (the mini-batches of one sampling run: one, or a
super-batch's N; one hand-over per run, since a thread hand-over costs tens of microseconds)
through bounded queues (one group waits between two stages), so at most about five groups
are alive. The caller's stream is waited for first (the epoch's seed order is written
there). On a GPU each stage issues its work on its own CUDA stream and records an event
after each group; the next stage's stream waits for that event (no host sync between
stages), and the loop's stream waits for the gathering event before the group's batches are
yielded. Their tensors are ``record_stream``'d on the loop's stream (so the caching allocator
does not reuse them while the loop's kernels still read them) by the gathering thread, once
per storage, on the stream the loop started on (the loop's thread does it only where its
current stream has changed since).

The loop's thread is the model's: in one process every Python step and every torch call of
the stages' threads competes with the model's launches for the interpreter (each torch call
releases it, and a waiting thread takes it). So the stages do per group what they can (a
super-batch's rows gathered in one op per table: ``DataLoader._gather_group``), and the loop's
thread little more than hand out its batches.

The stages run in two worker threads the loader keeps from epoch to epoch (an epoch still
open when the next starts, its iterator held by the caller, keeps them; the next gets two of
its own).

Nothing about the samples changes: mini-batch ``i`` draws under ``batch_scope(epoch seed,
i)`` in whatever thread runs it (the random stream is per thread, and the epoch's seed is
taken in the caller's thread before the stages start), each stage runs in a copy of the
caller's ``contextvars`` context (so ``gs.use_backend`` applies), and batches arrive in order.
An exception in a stage travels down the queues behind the batches made before it and is
raised in the loop at that mini-batch. Leaving the loop early stops the stages.

A CUDA graph the sampling thread captures (a program's first calls) is captured while the
loop waits for a mini-batch, never while its body runs (``gsample.runtime.CALLER_CODE``):
torch refuses a random op, such as a model's dropout, during any capture.
"""

from __future__ import annotations

import contextlib
import contextvars
import queue
import threading
from concurrent.futures import ThreadPoolExecutor

import torch

from gsample.formats.csc import CSC
from gsample.formats.pieces import SplitCSC
from gsample.runtime import CALLER_CODE, CAPTURE_LOCK, tensors

#: groups (sampling runs' mini-batches) waiting between two stages
DEPTH = 1
_DONE = object()


class _Failure:
    def __init__(self, error: BaseException):
        self.error = error


def _put(q: queue.Queue, item, stop: threading.Event) -> bool:
    """Put ``item`` unless the consumer has gone (``stop``); False then."""
    while not stop.is_set():
        try:
            q.put(item, timeout=0.05)
            return True
        except queue.Full:
            continue
    return False


def _get(q: queue.Queue, stop: threading.Event):
    while not stop.is_set():
        try:
            return q.get(timeout=0.05)
        except queue.Empty:
            continue
    return _DONE


def _tensors(batch):
    """Every tensor of ``batch`` (its sample, seeds, node ids, features and labels)."""
    yield from tensors(batch.out)
    yield from (t for t in (batch.seeds, batch.n_id, batch.x, batch.y) if t is not None)


#: the CSC types whose fields :func:`_fields` reads by name
_BY_NAME = (CSC, SplitCSC)


def _fields(batch):
    """:func:`_tensors` of ``batch``, its sample's blocks read field by field where they are
    ``gs.Matrix`` es of a CSC (a sampler's blocks, a super-batch's ``SplitCSC`` ones: no
    ``dataclasses.fields`` walk per block), else through :func:`gsample.runtime.tensors`."""
    out = batch.out
    blocks = out if isinstance(out, (list, tuple)) else (out,)
    if all(type(getattr(b, "csc", None)) in _BY_NAME for b in blocks):
        for b in blocks:
            c = b.csc
            yield from (
                t
                for t in (c.indptr, c.rows, c.row_ids, c.col_ids, c.values, c.eids)
                if t is not None
            )
        yield from (t for t in (batch.seeds, batch.n_id, batch.x, batch.y) if t is not None)
        return
    yield from _tensors(batch)


def _distinct(group: list, cuda: bool = True) -> list:
    """A tensor of ``group``'s batches per storage they use (``cuda``: CUDA ones only; a
    super-batch's outputs are mostly views of a few tensors): what ``record_stream`` needs
    once each."""
    seen, out = set(), []
    for batch in group:
        for t in _fields(batch):
            if isinstance(t, torch.Tensor) and (t.is_cuda or not cuda):
                ptr = t.untyped_storage().data_ptr()
                if ptr not in seen:
                    seen.add(ptr)
                    out.append(t)
    return out


def hand_over(group: list, done, device, recorded=None) -> None:
    """Make ``group``'s batches safe to use on the loop's current stream on ``device``: the
    stream waits for ``done`` (an event recorded after the group was made on another
    stream; no host sync) and is marked as a user of their memory (``record_stream``, once
    per storage: the caching allocator does not give it to the stream that made them while
    the loop's kernels still read it), unless ``recorded``, the stream already marked, is
    the current one.

    Parameters
    ----------
    group : list of gs.Batch
        One sampling run's batches, gathered, on a GPU.
    done : torch.cuda.Event
        Recorded on the stream that made them, after their last kernel.
    device : torch.device
        The graph's GPU.
    recorded : torch.cuda.Stream, optional
        A stream their tensors were ``record_stream``'d on already.

    Examples
    --------
    On a GPU (skipped elsewhere): a group gathered on a side stream, then handed to the loop.

    >>> side = torch.cuda.Stream(device)  # doctest: +SKIP
    >>> with torch.cuda.stream(side):  # doctest: +SKIP
    ...     group = loader._gather_group(group)
    ...     done = torch.cuda.Event()
    ...     done.record(side)
    >>> hand_over(group, done, device)  # doctest: +SKIP
    >>> x = group[0].x  # doctest: +SKIP
    """
    stream = torch.cuda.current_stream(device)
    stream.wait_event(done)
    if recorded is None or stream != recorded:  # (e.g. not the stream the loop started on)
        for t in _distinct(group):
            t.record_stream(stream)


def pipelined(loader, groups):
    """Yield the batches of ``groups``, sampled and gathered ahead of the loop.

    Parameters
    ----------
    loader : gs.DataLoader
        Its ``_gather`` fills a batch's ``n_id`` / ``x`` / ``y``; its ``sample_seconds`` and
        ``gather_seconds`` are added to.
    groups : iterator of list of gs.Batch
        The epoch's batches, a list per sampling run, sampled when advanced (in the
        sampling thread).

    Yields
    ------
    gs.Batch
        The same batches, in order, gathered.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A = gs.datasets.rmat(100, 500, seed=0)
    >>> sampler = gs.compile(lambda A, seeds: [A[:, seeds].individual_sample(5)])
    >>> loader = gs.DataLoader(A, sampler, torch.arange(32), 8, features=torch.randn(100, 4))
    >>> parts = list(torch.arange(32).split(8))               # the epoch's mini-batches
    >>> groups = ([b] for b in loader._one_by_one(parts, 0))  # epoch seed 0, one at a time
    >>> for batch in pipelined(loader, groups):
    ...     x = batch.x                                       # train(batch)
    >>> x.shape[1]
    4
    """
    device = loader.A.device
    cuda = device.type == "cuda"
    gather = loader.feature_store is not None or loader.label_store is not None
    if cuda and loader._streams is None:
        loader._streams = (torch.cuda.Stream(device), torch.cuda.Stream(device))
    caller = None
    if cuda:
        # the stages' streams start after what the caller queued (the epoch's shuffled seed
        # order, the graph's own tensors): without this wait, the sampling stream may read
        # the seeds before the caller's stream has written them
        caller = torch.cuda.current_stream(device)
        for s in loader._streams:
            s.wait_stream(caller)
    stop = threading.Event()
    sampled = queue.Queue(maxsize=DEPTH)
    ready = queue.Queue(maxsize=DEPTH) if gather else sampled

    def on_stream(index):
        return torch.cuda.stream(loader._streams[index]) if cuda else contextlib.nullcontext()

    def sync(index):
        return loader._streams[index].synchronize if cuda else None

    def event(index):
        if not cuda:
            return None
        e = torch.cuda.Event()
        e.record(loader._streams[index])
        return e

    def sample_stage():
        try:
            with on_stream(0):
                for group in loader._timed(groups, sync(0)):
                    if not _put(sampled, (group, event(0), None), stop):
                        return
        except BaseException as error:
            _put(sampled, _Failure(error), stop)
            return
        _put(sampled, _DONE, stop)

    def gather_stage():
        with on_stream(1):
            while True:
                item = _get(sampled, stop)
                if item is _DONE or isinstance(item, _Failure):
                    _put(ready, item, stop)
                    return
                group, done, _ = item
                gathered = []
                try:
                    if cuda:
                        loader._streams[1].wait_event(done)
                    # not while the sampling thread captures a CUDA graph: gathering reads
                    # sizes back, which CUDA refused there (the lock is free but for that)
                    with CAPTURE_LOCK if cuda else contextlib.nullcontext():
                        # a super-batch's rows in one op per table where they can be
                        loader._gather_group(group, sync(1), gathered)
                        # the loop's stream marked as a user of the group's memory here, not
                        # in the loop's thread (which the model's launches need); under the
                        # lock (no capture under way: the allocator keeps no capture's
                        # bookkeeping of it) and in the try (an error reaches the loop, which
                        # then records what it gets itself; else it would wait forever)
                        if cuda:
                            for t in _distinct(group):
                                t.record_stream(caller)
                except BaseException as error:
                    if gathered:
                        _put(ready, (gathered, event(1), None), stop)
                    _put(ready, _Failure(error), stop)
                    return
                if not _put(ready, (group, event(1), caller if cuda else None), stop):
                    return

    # the stages run in the loader's own two worker threads, kept from epoch to epoch: a new
    # thread per epoch also starts a new OpenMP team for the CPU ops it runs, a cost as large
    # as a short epoch's sampling
    # (an epoch of this loader still open, its iterator kept alive by the caller, keeps its
    # threads: this one gets threads of its own)
    own = loader._workers is None or loader._pipelines_open > 0
    workers = (
        ThreadPoolExecutor(max_workers=2, thread_name_prefix=f"gsample-{id(loader):x}")
        if own
        else loader._workers
    )
    if loader._workers is None:
        loader._workers = workers
    loader._pipelines_open += 1
    stages = [workers.submit(contextvars.copy_context().run, sample_stage)]
    if gather:
        stages.append(workers.submit(contextvars.copy_context().run, gather_stage))
    try:
        while True:
            with CALLER_CODE.waiting():  # (the loop's body waits: a capture may run)
                item = ready.get()
            if item is _DONE:
                return
            if isinstance(item, _Failure):
                raise item.error
            group, done, recorded = item
            if cuda:
                hand_over(group, done, device, recorded)
            for batch in group:
                # the loop's body runs: the sampling thread's captures wait (runtime's
                # CALLER_CODE: torch refuses the body's random ops during a capture)
                with CALLER_CODE.running():
                    yield batch
    finally:
        stop.set()
        # the loop waits for its stages (a capture of theirs would otherwise wait for a body
        # around this loop, an outer loader's, until the gate's timeout)
        with CALLER_CODE.waiting():
            for stage in stages:
                stage.result()  # the stages report their errors through the queues
        loader._pipelines_open -= 1
        if workers is not loader._workers:
            workers.shutdown(wait=False)
