"""Keeping a CUDA graph's capture apart from the caller's own code in other threads.

While any CUDA graph is being captured, torch marks its default CUDA generator as captured
(``CUDAGraph::capture_begin`` registers it), so a random op that another thread runs
meanwhile (a model's dropout) fails with "Offset increment outside graph capture encountered
unexpectedly". The pipelined ``gs.DataLoader`` samples in a worker thread, and the first
calls of a program's keys capture there while the caller's loop trains on earlier
mini-batches. :data:`CALLER_CODE` orders the two:

* the loader marks the caller's thread as *running* while the loop's body runs (around its
  ``yield``) and as *waiting* while it waits for the next mini-batch;
* a capture (:meth:`CallerCode.quiet`) first waits until no other thread runs the caller's
  code, and a thread about to run it again waits for the captures of other threads to end,
  those still waiting to start included (else a second loop, in another thread, whose
  mini-batches are always ready would hold a capture back until its timeout);
* a thread blocked in any of these waits is not running the caller's code (two loop bodies
  that each call a compiled sampler, which captures, would otherwise wait for each other).

A capture that finds the caller's code still running after ``timeout`` seconds (a loop body
kept suspended, its iterator neither resumed nor closed) is not made: the call runs eagerly,
as a warm-up call does, and a later call captures. Replays never wait: a graph without random
ops leaves the generator alone when replayed (pytorch#143777, torch 2.7 on; before it, a
replay in one thread during a capture in another failed alike).
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from threading import get_ident

#: seconds a capture waits for the caller's code in other threads before running eagerly
TIMEOUT = 5.0


class CallerCode:
    """Which threads run the caller's code, and which capture CUDA graphs.

    A thread runs the caller's code while it is inside at least one :meth:`running` block,
    not inside a :meth:`waiting` block (a loop over one loader that waits for another
    loader's mini-batch is waiting; a ``waiting`` block never spans a ``yield``) and not
    blocked in this gate's own waits.

    Examples
    --------
    >>> gate = CallerCode()
    >>> with gate.running():
    ...     gate.is_running(threading.get_ident())
    True
    >>> with gate.quiet(timeout=0.1) as ok:  # only this thread runs the caller's code
    ...     ok
    True
    """

    def __init__(self) -> None:
        # the loop's thread enters running() around every mini-batch it hands out: its
        # blocks take the lock itself (C) and notify only where a thread sleeps on it
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._asleep = 0  # threads inside self._cond.wait_for (none: nobody to notify)
        self._depth: Counter = Counter()  # thread -> open running() blocks
        self._waiting: Counter = Counter()  # thread -> open waiting() blocks
        self._capturing: Counter = Counter()  # thread -> captures in progress
        self._pending: Counter = Counter()  # thread -> captures waiting to start

    def is_running(self, thread: int) -> bool:
        """Whether ``thread`` (an ident) is running the caller's code now."""
        return self._depth[thread] > 0 and self._waiting[thread] == 0

    def _others_run(self, me: int) -> bool:
        return any(self.is_running(t) for t in list(self._depth) if t != me)

    def _others_capture(self, me: int) -> bool:
        """Whether another thread captures, or waits to."""
        if not self._capturing and not self._pending:  # (no entry is kept at 0)
            return False
        return any(n > 0 for t, n in self._capturing.items() if t != me) or any(
            n > 0 for t, n in self._pending.items() if t != me
        )

    def _notify(self) -> None:
        """Wake the threads waiting on the gate (``self._cond`` held), if any."""
        if self._asleep:
            self._cond.notify_all()

    def _wait_for(self, until, timeout=None) -> bool:
        """``self._cond.wait_for``, counted in ``_asleep`` (``self._cond`` held)."""
        self._asleep += 1
        try:
            return self._cond.wait_for(until, timeout)
        finally:
            self._asleep -= 1

    def _blocked(self, me: int, until, timeout=None) -> bool:
        """Wait (``self._cond`` held) until ``until()``, ``me`` counted as waiting meanwhile
        (it runs none of its caller's code while blocked here); ``until()``'s last value."""
        if until():  # (the common case: no notification, no other thread wakes up)
            return True
        self._waiting[me] += 1
        self._notify()
        try:
            return self._wait_for(until, timeout)
        finally:
            self._waiting[me] -= 1
            if not self._waiting[me]:
                del self._waiting[me]

    def running(self):
        """A block (a context manager) inside which the caller's code runs in this thread
        (entered once the captures of other threads, started or waiting to start, have
        ended). Left in another thread (a generator resumed or closed there), it is the
        entering thread's block that ends."""
        block = _new(_Running)  # (no __init__: no Python call)
        block.gate = self
        return block

    def waiting(self):
        """A block (a context manager) inside which this thread waits for a loader: its
        caller's code is not running (even inside a :meth:`running` block). On leaving, if
        the caller's code runs again, the captures of other threads are waited for
        first. Left in another thread, as :meth:`running`'s."""
        block = _new(_Waiting)
        block.gate = self
        return block

    @contextlib.contextmanager
    def quiet(self, timeout: float | None = None):
        """Yield True, with no other thread running the caller's code until the block
        ends (a capture goes inside), or False if one still did after ``timeout``
        seconds (default :data:`TIMEOUT`, read at the call; then capture nothing)."""
        me = threading.get_ident()
        with self._cond:
            self._pending[me] += 1  # (threads about to run their caller's code wait now)
            try:
                ok = self._blocked(
                    me, lambda: not self._others_run(me), TIMEOUT if timeout is None else timeout
                )
            finally:
                self._pending[me] -= 1
                if not self._pending[me]:
                    del self._pending[me]
                self._notify()  # (threads it held back go on, or wait for it)
            if ok:
                self._capturing[me] += 1
        try:
            yield ok
        finally:
            if ok:
                with self._cond:
                    self._capturing[me] -= 1
                    if not self._capturing[me]:
                        del self._capturing[me]
                    self._notify()


_new = object.__new__


class _Running:
    """:meth:`CallerCode.running`'s block: no generator; it keeps the thread that entered
    it (``me``), whose count it ends, whichever thread leaves it (a generator suspended
    inside the block may be resumed, or closed, in another thread)."""

    __slots__ = ("gate", "me")

    def __enter__(self) -> None:
        gate = self.gate
        me = self.me = get_ident()
        with gate._lock:
            if gate._capturing or gate._pending:
                gate._blocked(me, lambda: not gate._others_capture(me))
            depth = gate._depth
            depth[me] = depth.get(me, 0) + 1

    def __exit__(self, *exc) -> None:
        gate, me = self.gate, self.me
        with gate._lock:
            depth = gate._depth
            n = depth[me] - 1
            if n:
                depth[me] = n
            else:
                del depth[me]
            gate._notify()


class _Waiting:
    """:meth:`CallerCode.waiting`'s block (as :class:`_Running`)."""

    __slots__ = ("gate", "me")

    def __enter__(self) -> None:
        gate = self.gate
        me = self.me = get_ident()
        with gate._lock:
            waiting = gate._waiting
            waiting[me] = waiting.get(me, 0) + 1
            gate._notify()

    def __exit__(self, *exc) -> None:
        gate, me = self.gate, self.me
        with gate._lock:
            waiting = gate._waiting
            try:
                # back into the caller's code: the captures of other threads first
                if gate._depth.get(me) and waiting[me] == 1 and gate._others_capture(me):
                    gate._wait_for(lambda: not gate._others_capture(me))
            finally:  # (only now: running, once the captures have ended)
                n = waiting[me] - 1
                if n:
                    waiting[me] = n
                else:
                    del waiting[me]


#: the process's one gate (threads of every loader and sampler)
CALLER_CODE = CallerCode()
