"""Several calls of a program in flight, their host work overlapping the device's.

A layer-wise sampler on a GPU reads each layer's sizes back before it can launch the next
layer: one call alone keeps the host waiting for the device and the device idle while the
host finishes a layer (a LADIES call alone leaves the device idle for about half its time).
:func:`interleave` keeps ``depth`` calls in flight, each a
:class:`Call` of :func:`gsample.runtime.program.start`, which pauses after queueing device
work and before reading it back: while the host finishes one call's layer, the device runs
the layer another call queued. Each call holds a lane of its program
(:meth:`~gsample.runtime.program.Program.acquire`: CUDA graphs and key buffers not shared)
and runs in a ``contextvars`` context of its own (deferred checks, read-back state) with
its own state of gsample's random stream, so it draws exactly what it draws alone: results
come out in order, and an error surfaces at its call, after the calls before it.

A program that pauses once per call (one CUDA graph, then its read-backs: a node-wise
sampler, one mini-batch or one super-batch at a time) needs none of that machinery:
:func:`in_turn` launches a call, then lands the one before it
(:func:`gsample.runtime.program.launch` and ``land``, on the two lanes of :class:`Lanes`),
and a super-batch settles its read-backs before the next one's graph is queued on the same
stream (``settle``), so that they do not wait for it.
"""

from __future__ import annotations

import contextvars
from collections import deque
from collections.abc import Callable, Iterable, Iterator

from gsample.base.random import stream_state


class Call:
    """One call in flight: a generator that pauses where it would wait for the device
    (:func:`gsample.runtime.program.start`, or anything pausing so), advanced by
    :meth:`step` in its own context and with its own random-stream state.

    Parameters
    ----------
    begin : callable
        ``() -> generator``; called (and first advanced) by the constructor, with
        gsample's random stream at ``stream`` (``(seed, ordinal, batch_index)``).
    stream : tuple of int
        The stream state the call starts with (a loader's mini-batch: its epoch's seed,
        ordinal 0 and its index).
    """

    def __init__(self, begin: Callable, stream: tuple):
        self.context = contextvars.copy_context()
        self.stream = stream
        self.done, self.value, self.error = False, None, None
        self.calls = None
        self._advance(begin)

    def step(self) -> bool:
        """Run the call up to its next pause (or its end); returns whether it has ended."""
        if not self.done:
            self._advance(None)
        return self.done

    def close(self) -> None:
        """Abandon the call (its generator closed in its own context)."""
        if not self.done and self.calls is not None:
            self.done = True
            self.context.run(self.calls.close)

    def _advance(self, begin) -> None:
        s = stream_state()
        outer = (s.seed, s.ordinal, s.batch_index)
        s.seed, s.ordinal, s.batch_index = self.stream
        try:
            if begin is not None:
                self.calls = self.context.run(begin)
            self.context.run(next, self.calls)
        except StopIteration as end:
            self.done, self.value = True, end.value
        except Exception as error:
            self.done, self.error = True, error
        finally:
            self.stream = (s.seed, s.ordinal, s.batch_index)
            s.seed, s.ordinal, s.batch_index = outer


def interleave(items: Iterable, begin: Callable, depth: int = 2) -> Iterator:
    """``(item, result)`` of every item, in order, with up to ``depth`` calls in flight.

    Parameters
    ----------
    items : iterable
        What to run, in order.
    begin : callable
        ``item -> Call``: starts the item's call (a call that raises, or another after it,
        is not started).
    depth : int
        Calls in flight at most (1: one after the other).

    Yields
    ------
    (item, result)
        As each call ends, in the items' order; a call that raised raises here, at its
        turn, after the other calls in flight are abandoned.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> from gsample.runtime.program import start
    >>> sampler = gs.compile(lambda A, seeds: [A[:, seeds].individual_sample(5)])
    >>> A, parts = gs.datasets.rmat(100, 500, seed=0), list(torch.arange(24).view(3, 8))
    >>> program, seed = sampler.lowered(A, parts[0]), 0
    >>> def begin(i):
    ...     return Call(lambda: start(program, {"A": A, "seeds": parts[i]}), (seed, 0, i))
    >>> outs = [out for _, out in interleave(range(len(parts)), begin)]
    >>> len(outs), outs[0][0].shape                    # a block per mini-batch of 8 seeds
    (3, (100, 8))
    """
    items = iter(items)
    order, turn = deque(), deque()  # started (their order), to be advanced next
    failed = []  # a call that raised: none is started after it

    def fill():
        while len(order) - sum(c.done for _, c in order) < depth and not failed:
            item = next(items, _END)
            if item is _END:
                return
            call = begin(item)
            order.append((item, call))
            if call.done:  # ended at its first pause (or raised)
                ended(call)
            else:
                turn.append(call)

    def ended(call):
        if call.error is not None:
            failed.append(call)

    try:
        fill()
        while order:
            while turn and not order[0][1].done:
                call = turn.popleft()
                if call.step():
                    ended(call)
                    fill()  # the next call queued before this one is handed out
                else:
                    turn.append(call)
            item, call = order.popleft()
            if call.error is not None:
                raise call.error
            yield item, call.value
    finally:
        for _, call in order:
            call.close()


def in_turn(
    items: Iterable, launch: Callable, land: Callable, settle: Callable | None = None
) -> Iterator:
    """``(item, land(launch(item)))`` of every item, in order, each item launched before the
    one before it lands: two calls in flight, without :class:`Call`'s generator and context
    per call. For programs that pause once per call (one CUDA graph, then its read-back:
    :func:`gsample.runtime.program.launch`, :func:`~gsample.runtime.program.settle` and
    :func:`~gsample.runtime.program.land` on two lanes the caller holds, :class:`Lanes`),
    whose calls are short enough that :func:`interleave`'s generator and context per call
    would be a visible share of their host work.

    With ``settle``, each call's read-backs are made before the next call is launched (its
    device work queued after them, on the same stream, would otherwise be waited for): the
    order is launch 0, then per item settle ``i``, launch ``i + 1``, land ``i`` (its host
    work, while the device runs ``i + 1``), yield ``i``. A super-batch's host work
    (splitting its outputs into mini-batches) then overlaps the next super-batch's device
    work instead of waiting for it, and call ``i + 1`` settles only when item ``i + 1`` is
    asked for, not right after its launch: a caller that uses item ``i`` meanwhile (a
    training loop's steps on its mini-batches) finds ``i + 1``'s device work done, and its
    read-backs do not wait.

    Parameters
    ----------
    items : iterable
        What to run, in order.
    launch : callable
        ``item -> flight``: queues the item's call (called for item ``i + 1`` before
        ``land`` of item ``i``).
    land : callable
        ``flight -> result``: ends it.
    settle : callable, optional
        ``flight -> None``: its read-backs (see above).

    Yields
    ------
    (item, result)
        In order; a launch, settle or land that raised raises at its item's turn, after the
        items before it (nothing is launched after a launch or settle that raised).

    Examples
    --------
    On a GPU, ``program`` a node-wise sampler's lowered program, ``A`` and ``parts`` on
    the device (:func:`gsample.runtime.program.launch`, ``land``, ``settle``):

    >>> lanes = Lanes()
    >>> go = lambda p: launch(lanes.next(program), {"A": A, "seeds": p[1]}, (seed, 0, p[0]))
    >>> outs = [out for _, out in in_turn(enumerate(parts), go, land, settle)]  # doctest: +SKIP
    """
    items = iter(items)
    ahead = _launched(next(items, _END), launch)
    while ahead is not None:
        item, flight, error = _settled(ahead, settle)
        if error is not None:
            raise error
        ahead = _launched(next(items, _END), launch)
        result = land(flight)
        yield item, result


def _launched(item, launch):
    """``(item, flight, error)`` of ``launch(item)``, or None past the last item."""
    if item is _END:
        return None
    try:
        return item, launch(item), None
    except Exception as error:
        return item, None, error


def _settled(ahead, settle):
    """``ahead`` (:func:`_launched`'s) after ``settle`` of its flight (an error its own)."""
    if ahead is None or settle is None or ahead[2] is not None:
        return ahead
    try:
        settle(ahead[1])
        return ahead
    except Exception as error:
        return ahead[0], None, error


def chunked(items: Iterable, k, size: Callable = len) -> Iterator:
    """``items`` in groups, in order: runs of ``k`` consecutive items of one ``size`` (a
    chunk, launched together by :func:`in_chunks`), and the rest one by one (lists of one):
    the items of a size that fewer than ``k`` consecutive items share (an epoch's last, short
    mini-batch, and the full ones before it that make no whole chunk).

    Parameters
    ----------
    items : iterable
        What to run, in order.
    k : int or callable
        Items a chunk (``<= 1``: every item alone); a callable ``() -> int`` is asked as
        each item joins a chunk (a limit learnt while the first chunks run).
    size : callable
        ``item -> hashable``: items of a chunk have the same.

    Yields
    ------
    list
        A chunk of ``k`` items, or one item.

    Examples
    --------
    >>> [len(g) for g in chunked([[0] * 4] * 7 + [[0] * 2], 3)]
    [3, 3, 1, 1]
    """
    run: list = []
    for item in items:
        if run and size(item) != size(run[0]):
            yield from ([x] for x in run)  # fewer than k of the size before
            run = []
        run.append(item)
        limit = max(1, k() if callable(k) else k)
        while len(run) >= limit:  # (a limit lowered meanwhile: chunks of the new one)
            head, run = run[:limit], run[limit:]
            yield head
    yield from ([x] for x in run)


def in_chunks(
    items: Iterable,
    k,
    launch: Callable,
    land: Callable,
    launch_many: Callable,
    settle: Callable | None = None,
    size: Callable = len,
) -> Iterator:
    """:func:`in_turn` over :func:`chunked` groups: ``(item, result)`` of every item, in
    order, ``k`` consecutive items of one size launched together (``launch_many``: one
    replay of a graph holding their calls, ``gsample.runtime.chunk.Chunk.launch``), the rest
    one by one (``launch``). Each group is launched before the group before it lands, and a
    chunk's calls land together, while the device runs the next group: a chunk's host work
    (its calls' read-backs and outputs) overlaps the next one's device work.

    Parameters
    ----------
    items, k, size
        As :func:`chunked`'s.
    launch : callable
        ``item -> flight``.
    land : callable
        ``flight -> result`` (each of a chunk's flights in turn).
    launch_many : callable
        ``list of items -> list of flights``, one per item; the last may be an exception
        instead (that item's call failed to start: the items after it have none).
    settle : callable, optional
        ``flight -> None``, each flight of a group before the next group is launched.

    Yields
    ------
    (item, result)
        In order. A failure raises at its item's turn, after the items before it (a chunk's
        calls before it included): a failed land or settle stops its chunk there (nothing
        is launched after a chunk whose call failed to start or settle); a ``launch_many``
        that raises does so at its chunk's first item.

    Examples
    --------
    On a GPU, as :func:`in_turn` (``args`` and ``stream`` an item's arguments and stream):

    >>> from gsample.runtime.chunk import Chunks
    >>> chunks = Chunks(program, 8)  # doctest: +SKIP
    >>> go_many = lambda g: chunks.next().launch([args(p) for p in g], [stream(p) for p in g])
    >>> outs = in_chunks(pairs, chunks.limit, go, land, go_many, settle)  # doctest: +SKIP
    >>> outs = [o for _, o in outs]  # doctest: +SKIP
    """

    failed = []  # a call failed to start or settle: no group is launched after its own

    def groups():
        for group in chunked(items, k, size):
            if failed:
                return
            yield group

    def go(group):
        if len(group) == 1:
            return [launch(group[0])]
        flights = list(launch_many(group))
        whole = len(flights) == len(group) or (
            0 < len(flights) < len(group) and isinstance(flights[-1], BaseException)
        )
        if not whole:  # (a call not launched must say why)
            raise RuntimeError(f"launch_many: {len(flights)} flights for {len(group)} items")
        if isinstance(flights[-1], BaseException):
            failed.append(flights[-1])
        return flights

    def landed(flights):
        out = []
        for flight in flights:
            if isinstance(flight, BaseException):
                out.append((None, flight))
                break
            try:
                out.append((land(flight), None))
            except Exception as error:
                out.append((None, error))
                break
        return out

    def settled(flights):
        # a call whose settle raises ends its chunk there, as a land that raises does: the
        # calls before it still land and come out first (one at a time, they would)
        for i, flight in enumerate(flights):
            if isinstance(flight, BaseException):
                return
            try:
                settle(flight)
            except Exception as error:
                flights[i:] = [error]
                failed.append(error)
                return

    for group, results in in_turn(groups(), go, landed, settled if settle is not None else None):
        for item, (value, error) in zip(group, results):
            if error is not None:
                raise error
            yield item, value


class Lanes:
    """Two lanes of each program a caller keeps two calls in flight on
    (:meth:`~gsample.runtime.program.Program.acquire`, the first time it asks), handed out
    in turn (consecutive calls never share a lane), given back by :meth:`release`.

    Examples
    --------
    On a GPU, as :func:`in_turn`:

    >>> lanes = Lanes()
    >>> try:  # doctest: +SKIP
    ...     flights = [launch(lanes.next(program), args, (seed, 0, i)) for i in range(2)]
    ... finally:
    ...     lanes.release()
    """

    def __init__(self):
        self.held: dict = {}  # id(program) -> (program, [(number, lane)] x 2, turn)

    def next(self, program):
        """The lane of ``program`` after the one it handed out last."""
        held = self.held.get(id(program))
        if held is None:
            held = self.held[id(program)] = [program, [program.acquire(), program.acquire()], 1]
        held[2] ^= 1
        return held[1][held[2]][1]

    def release(self) -> None:
        """Give every lane back."""
        for program, pairs, _ in self.held.values():
            for number, _ in pairs:
                program.release(number)
        self.held.clear()


_END = object()


def at_once(fn: Callable):
    """A generator of :func:`gsample.runtime.program.start`'s kind that pauses nowhere: its
    first step returns ``fn()`` (a call made as it is, among calls in flight).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> from gsample.runtime.program import finish
    >>> sampler = gs.compile(lambda A, seeds: [A[:, seeds].individual_sample(5)])
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.arange(8)
    >>> calls = at_once(lambda: sampler(A, seeds))
    >>> out = finish(calls)                         # what sampler(A, seeds) returns
    >>> out[0].shape
    (100, 8)
    """
    return fn()
    yield  # unreachable: makes this a generator
