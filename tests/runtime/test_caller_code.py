"""``gsample.runtime.caller_code``: a CUDA graph capture never overlaps the caller's code in
another thread (torch refuses the caller's random ops during any capture), and no wait
there deadlocks: a thread waiting for a loader is not running its caller's code, and a
capture gives up (runs eagerly) after its timeout."""

import functools
import threading
import time

from gsample.runtime.caller_code import CallerCode

#: long enough for a started thread to reach its wait
SETTLE = 0.2


def started(fn) -> threading.Thread:
    t = threading.Thread(target=fn, daemon=True)
    t.start()
    return t


def test_a_capture_waits_for_the_callers_code_in_another_thread():
    gate, order = CallerCode(), []
    inside, leave = threading.Event(), threading.Event()

    def caller():
        with gate.running():
            inside.set()
            leave.wait()
            order.append("body ends")

    t = started(caller)
    inside.wait()

    def capture():
        with gate.quiet(timeout=10) as ok:
            order.append(("capture", ok))

    c = started(capture)
    time.sleep(SETTLE)
    assert order == []  # still waiting for the body
    leave.set()
    t.join(5), c.join(5)
    assert order == ["body ends", ("capture", True)]


def test_the_callers_code_waits_for_a_capture_in_another_thread():
    gate, order = CallerCode(), []
    capturing, finish = threading.Event(), threading.Event()

    def capture():
        with gate.quiet(timeout=10) as ok:
            assert ok
            capturing.set()
            finish.wait()
            order.append("capture ends")

    c = started(capture)
    capturing.wait()

    def caller():
        with gate.running():
            order.append("body")

    t = started(caller)
    time.sleep(SETTLE)
    assert order == []
    finish.set()
    c.join(5), t.join(5)
    assert order == ["capture ends", "body"]


def test_a_thread_captures_inside_its_own_callers_code():
    gate = CallerCode()
    with gate.running():
        assert gate.is_running(threading.get_ident())
        with gate.quiet(timeout=0.1) as ok:
            assert ok
    assert not gate.is_running(threading.get_ident())


def test_a_loop_waiting_for_another_loader_lets_captures_run():
    """A loop's body that waits for a second loader's mini-batch (the second loader's
    sampling thread may need to capture) is not running the caller's code meanwhile."""
    gate, seen = CallerCode(), []
    waiting, done = threading.Event(), threading.Event()

    def caller():
        with gate.running(), gate.waiting():
            waiting.set()
            done.wait()

    t = started(caller)
    waiting.wait()
    with gate.quiet(timeout=5) as ok:
        seen.append(ok)
    done.set()
    t.join(5)
    assert seen == [True]


def test_leaving_a_wait_back_into_the_callers_code_waits_for_a_capture():
    gate, order = CallerCode(), []
    waiting, capturing, finish = threading.Event(), threading.Event(), threading.Event()

    def caller():
        with gate.running():
            with gate.waiting():
                waiting.set()
                capturing.wait()
            order.append("body again")

    t = started(caller)
    waiting.wait()

    def capture():
        with gate.quiet(timeout=5):
            capturing.set()
            finish.wait()
            order.append("capture ends")

    c = started(capture)
    time.sleep(SETTLE)
    assert order == []  # the caller left its wait, and waits for the capture
    finish.set()
    t.join(5), c.join(5)
    assert order == ["capture ends", "body again"]


def test_a_capture_gives_up_after_its_timeout():
    """A body kept suspended (its loader's iterator neither resumed nor closed) delays a
    capture by the timeout only: the call then runs eagerly."""
    gate = CallerCode()
    inside, leave = threading.Event(), threading.Event()

    def caller():
        with gate.running():
            inside.set()
            leave.wait()

    t = started(caller)
    inside.wait()
    began = time.perf_counter()
    with gate.quiet(timeout=0.3) as ok:
        pass
    assert not ok and time.perf_counter() - began >= 0.3
    leave.set()
    t.join(5)
    with gate.quiet(timeout=0.3) as ok:  # the body has ended
        assert ok


def test_the_state_is_cleared_when_blocks_end():
    gate = CallerCode()
    me = threading.get_ident()
    with gate.running():
        with gate.running():
            pass
        assert gate.is_running(me)
        with gate.waiting():
            assert not gate.is_running(me)
        assert gate.is_running(me)
    assert not gate.is_running(me)
    assert not gate._depth and not gate._waiting and not gate._capturing


def test_two_bodies_that_capture_do_not_wait_for_each_other():
    """Two loop bodies (two threads' loaders) that each call a compiled sampler, which
    captures: a thread blocked in :meth:`quiet` runs none of its caller's code, so neither
    waits for the other's timeout."""
    gate, got = CallerCode(), {}
    both = threading.Barrier(2)

    def body(name):
        with gate.running():
            both.wait()
            began = time.perf_counter()
            with gate.quiet(timeout=5) as ok:
                got[name] = (ok, time.perf_counter() - began)

    threads = [started(functools.partial(body, name)) for name in "ab"]
    for t in threads:
        t.join(10)
    assert sorted(got) == ["a", "b"]
    assert all(ok and waited < 2.5 for ok, waited in got.values()), got


def test_a_thread_blocked_in_the_gate_is_not_running():
    """A loop whose wait for another loader ends while a capture runs waits for it before
    its body goes on, and meanwhile runs none of its code: another capture may start."""
    gate, order = CallerCode(), []
    waiting, capturing, finish = threading.Event(), threading.Event(), threading.Event()

    def first_capture():
        with gate.quiet(timeout=5) as ok:
            assert ok
            capturing.set()
            finish.wait(10)
            order.append("first capture ends")

    def caller():
        with gate.running():  # the outer loop's body
            with gate.waiting():  # waits for an inner loader's batch
                waiting.set()
                capturing.wait(10)
            order.append("body again")  # (once the first capture has ended)

    t = started(caller)
    waiting.wait(10)
    c = started(first_capture)
    capturing.wait(10)
    time.sleep(SETTLE)  # the caller has left its wait and is blocked in the gate
    with gate.quiet(timeout=5) as ok:
        order.append(("second capture", ok))
    finish.set()
    c.join(5), t.join(5)
    assert order == [("second capture", True), "first capture ends", "body again"]


def test_the_default_timeout_is_read_at_each_call(monkeypatch):
    from gsample.runtime import caller_code

    monkeypatch.setattr(caller_code, "TIMEOUT", 0.1)
    gate = CallerCode()
    inside, leave = threading.Event(), threading.Event()

    def caller():
        with gate.running():
            inside.set()
            leave.wait(10)

    t = started(caller)
    inside.wait(10)
    began = time.perf_counter()
    with gate.quiet() as ok:
        pass
    leave.set()
    t.join(5)
    assert not ok and time.perf_counter() - began < 3


def test_a_loop_never_waiting_does_not_hold_a_capture_back():
    """Another thread's loop whose mini-batches are always ready (it never waits) goes from
    body to body: a capture waiting to start holds its next body back, so it starts at the
    loop's next step, not at its timeout."""
    gate, stop = CallerCode(), threading.Event()
    looping = threading.Event()

    def loop():
        while not stop.is_set():
            with gate.running():
                looping.set()
                time.sleep(0.01)

    t = started(loop)
    looping.wait(10)
    began = time.perf_counter()
    with gate.quiet(timeout=5) as ok:
        waited = time.perf_counter() - began
    stop.set()
    t.join(5)
    assert ok and waited < 2.5


def test_a_block_left_in_another_thread_ends_the_entering_thread_s_count():
    """A loop's generator suspended inside ``running()`` may be resumed (or closed) in
    another thread (``asyncio.to_thread(next, it)``): the block ends the count of the thread
    that entered it, and leaves no entry behind."""
    gate = CallerCode()
    for block in (gate.running, gate.waiting):

        def body(block=block):
            with block():
                yield threading.get_ident()

        it, entered = body(), []
        t = started(lambda it=it, entered=entered: entered.append(next(it)))
        t.join(5)
        assert gate._depth or gate._waiting  # the entering thread's, still open
        assert next(it, None) is None  # resumed here: the block is left in this thread
        assert not gate._depth and not gate._waiting, (gate._depth, gate._waiting)
        assert not gate.is_running(entered[0]) and not gate.is_running(threading.get_ident())
