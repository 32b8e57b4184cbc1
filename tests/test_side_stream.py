"""``gs.DataLoader(pipeline="stream")`` (``gsample/loader/side_stream.py``): the next group of
mini-batches made on a side CUDA stream in the loop's own thread, after the current group's
first batch is handed out. Its order of work, errors and early exits are checked on the CPU
with CUDA's stream calls replaced by recorders; on a GPU, the batches are those of
``pipeline=False`` bit for bit, the loop's stream reads complete rows, and an error in a later
group is raised at its turn."""

import contextlib
import functools
import types

import pytest
import torch
from helpers import example

import gsample as gs
from gsample.loader import side_stream
from gsample.loader.side_stream import streamed

_GPU = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]


def graphsage():
    return functools.partial(gs.compile(example("graphsage").graphsage), fanouts=(5, 4))


def tensors(batch):
    from gsample.runtime import tensors as runtime_tensors

    out = list(runtime_tensors(batch.out))
    return out + [t for t in (batch.seeds, batch.n_id, batch.x, batch.y) if t is not None]


def same(a, b):
    assert [p.index for p in a] == [q.index for q in b]
    for p, q in zip(a, b):
        tp, tq = tensors(p), tensors(q)
        assert len(tp) == len(tq)
        for s, t in zip(tp, tq):
            assert s.dtype == t.dtype and s.device == t.device and torch.equal(s, t)


class _Streams:
    """CUDA's stream calls as :mod:`gsample.loader.side_stream` makes them, recorded in
    ``log`` (the CPU has no streams): which stream is current, waits, events, hand-overs."""

    def __init__(self, monkeypatch, log: list):
        self.log, self.current = log, "loop"
        recorder = self

        class Event:
            def record(self, stream):
                recorder.log.append(("event", stream))

        class Stream(str):
            def wait_stream(self, other):
                recorder.log.append(("wait", str(self), str(other)))

        def stream(s):
            @contextlib.contextmanager
            def on():
                before, recorder.current = recorder.current, str(s)
                try:
                    yield
                finally:
                    recorder.current = before

            return on()

        cuda = types.SimpleNamespace(
            Stream=lambda device: Stream("side"),
            Event=Event,
            stream=stream,
            current_stream=lambda device: Stream(recorder.current),
        )
        monkeypatch.setattr(side_stream, "torch", types.SimpleNamespace(cuda=cuda))
        monkeypatch.setattr(
            side_stream,
            "hand_over",
            lambda group, done, device: log.append(("hand over", [b.index for b in group])),
        )


def _setup(n=8):
    A = gs.datasets.rmat(2000, 30000, seed=1)
    x = torch.randn(A.num_nodes, 4, generator=torch.Generator().manual_seed(0))
    loader = gs.DataLoader(A, graphsage(), torch.arange(16 * n), 16, seed=3, features=x)
    return loader, list(torch.arange(16 * n).split(16))


def _groups(loader, parts, log, streams, fail_at=None):
    """The epoch's batches two a group (a super-batch's hand-over), sampled one by one; each
    group's sampling logged with the stream current then; group ``fail_at`` raises."""
    batches = loader._one_by_one(parts, 7)
    try:
        for g in range(len(parts) // 2):
            log.append(("sample", g, streams.current))
            if g == fail_at:
                raise IndexError(f"group {g} failed")
            yield [next(batches), next(batches)]
    finally:
        log.append(("closed", streams.current))


def test_the_next_group_is_made_on_the_side_stream_after_the_first_batch(monkeypatch):
    """Group ``g + 1`` is sampled and gathered on the side stream (after it waited for the
    loop's stream) once group ``g``'s first batch is handed out; each group is handed over
    (the loop's stream waits for its event) before its first batch; the batches are
    ``pipeline=False``'s."""
    log = []
    loader, parts = _setup()
    streams = _Streams(monkeypatch, log)
    got = []
    for batch in streamed(loader, _groups(loader, parts, log, streams)):
        log.append(("got", batch.index, streams.current))
        got.append(batch)
    assert [e for e in log if e[0] != "event"] == [
        ("wait", "side", "loop"),
        ("sample", 0, "side"),
        ("hand over", [0, 1]),
        ("got", 0, "loop"),
        ("sample", 1, "side"),
        ("got", 1, "loop"),
        ("hand over", [2, 3]),
        ("got", 2, "loop"),
        ("sample", 2, "side"),
        ("got", 3, "loop"),
        ("hand over", [4, 5]),
        ("got", 4, "loop"),
        ("sample", 3, "side"),
        ("got", 5, "loop"),
        ("hand over", [6, 7]),
        ("got", 6, "loop"),
        ("closed", "side"),  # (the epoch's end: asked for a group after 6, none left)
        ("got", 7, "loop"),
        ("wait", "loop", "side"),
    ]
    assert log.count(("event", "side")) == 4  # a group each
    assert loader.sample_seconds > 0 and loader.gather_seconds > 0
    monkeypatch.undo()
    same(got, [loader._gather(b) for b in loader._one_by_one(parts, 7)])  # stage by stage


def test_an_error_making_a_later_group_is_raised_at_its_turn(monkeypatch):
    """Group 2 fails while group 1 is handed out: batches 0-3 are still handed out, the error
    is raised where batch 4 would be, and nothing is asked of the epoch after it."""
    log = []
    loader, parts = _setup()
    streams = _Streams(monkeypatch, log)
    got = []
    with pytest.raises(IndexError, match="group 2 failed"):
        for batch in streamed(loader, _groups(loader, parts, log, streams, fail_at=2)):
            got.append(batch.index)
    assert got == [0, 1, 2, 3]
    assert [e for e in log if e[0] == "sample"] == [("sample", g, "side") for g in range(3)]
    assert log[-1] == ("wait", "loop", "side")


def test_a_gather_error_hands_out_the_batches_gathered_before_it(monkeypatch):
    """A group whose second batch fails to gather: its first batch is handed out, then the
    error is raised."""
    log = []
    loader, parts = _setup()
    _Streams(monkeypatch, log)
    real = loader._gather

    def gather(batch, sync=None, n_id=None):
        if batch.index == 5:
            raise RuntimeError("features: batch 5")
        return real(batch, sync, n_id)

    monkeypatch.setattr(loader, "_gather", gather)
    groups = ([next(b), next(b)] for b in [loader._one_by_one(parts, 7)] for _ in range(4))
    got = []
    with pytest.raises(RuntimeError, match="batch 5"):
        for batch in streamed(loader, groups):
            got.append(batch.index)
    assert got == [0, 1, 2, 3, 4]


def test_leaving_the_loop_early_closes_the_epoch_on_the_side_stream(monkeypatch):
    """The loop leaves after batch 3 (group 2 made already): the epoch's generator is closed
    with the side stream current, and the loop's stream then waits for the side stream."""
    log = []
    loader, parts = _setup()
    streams = _Streams(monkeypatch, log)
    for batch in streamed(loader, _groups(loader, parts, log, streams)):
        if batch.index == 3:
            break
    assert log[-2:] == [("closed", "side"), ("wait", "loop", "side")]
    assert ("sample", 2, "side") in log and ("sample", 3, "side") not in log


@pytest.mark.parametrize("progress", [False, True])
def test_on_the_cpu_stream_is_stage_by_stage(small_graph, progress):
    """No CUDA streams on the CPU: ``"stream"`` samples in the loop's thread as
    ``pipeline=False`` does, the same batches (with a progress bar too)."""
    X = torch.randn(small_graph.num_nodes, 3, generator=torch.Generator().manual_seed(0))
    runs = [
        list(
            gs.DataLoader(
                small_graph,
                graphsage(),
                torch.arange(300),
                32,
                seed=1,
                features=X,
                pipeline=p,
                progress=progress,
                super_batch=sb,
            )
        )
        for sb in (None, 4)
        for p in (False, "stream")
    ]
    same(runs[0], runs[1]), same(runs[2], runs[3]), same(runs[0], runs[2])
    loader = gs.DataLoader(small_graph, graphsage(), torch.arange(32), 16, features=X)
    assert loader._side_stream is None and loader.pipeline is True  # ("auto", the CPU)


# ---- on a GPU ---------------------------------------------------------------------------


def _gpu_setup(width=128):
    A = gs.datasets.rmat(3000, 40000, seed=3).to("cuda")
    g = torch.Generator().manual_seed(0)
    X = torch.randn(A.num_nodes, width, generator=g).cuda()
    y = torch.randint(0, 5, (A.num_nodes,), generator=g).cuda()
    return A, X, y, torch.arange(0, 3000, 3, device="cuda")


@pytest.mark.parametrize("super_batch", [None, 8])
@pytest.mark.parametrize("backend", ["cuda", "torch"])
@pytest.mark.parametrize("kind", [pytest.param("gpu", marks=_GPU)])
def test_stream_batches_are_pipeline_false_s_bit_for_bit(super_batch, backend, kind):
    """Two epochs of 63 mini-batches, each started with the loop's stream busy: ``"stream"``
    and ``"auto"`` (which resolves to it for tables on the GPU) yield ``pipeline=False``'s
    batches (out, n_id, x, y), bit for bit."""
    A, X, y, seeds = _gpu_setup()
    sampler = functools.partial(
        gs.compile(example("graphsage").graphsage, backend=backend), fanouts=(5, 4, 3)
    )
    runs = {}
    for pipeline in (False, "stream", "auto"):
        loader = gs.DataLoader(
            A,
            sampler,
            seeds,
            16,
            seed=2,
            features=X,
            labels=y,
            super_batch=super_batch,
            pipeline=pipeline,
            progress=pipeline == "auto",
        )
        assert loader.pipeline == (False if pipeline is False else "stream")
        runs[pipeline] = []
        for _ in range(2):
            # the loop's stream busy when the epoch starts: its shuffled seed order is
            # written behind the spin, and the side stream must wait for it
            torch.cuda._sleep(50_000_000)
            runs[pipeline].append(list(loader))
        assert len(runs[pipeline][0]) == 63
        if pipeline:
            assert loader._side_stream is not None
    for epoch in (0, 1):
        same(runs[False][epoch], runs["stream"][epoch])
        same(runs[False][epoch], runs["auto"][epoch])


@pytest.mark.parametrize("kind", [pytest.param("gpu", marks=_GPU)])
def test_the_sampler_runs_on_the_side_stream_in_the_loop_s_thread(kind):
    """``"stream"``: every mini-batch is sampled in the loop's thread on the loader's side
    stream; ``pipeline=False`` stays on the loop's stream."""
    import threading

    A, X, _, seeds = _gpu_setup()
    loop = torch.cuda.current_stream()
    for pipeline in ("stream", False):
        seen = []

        def recording(A, seeds, seen=seen):
            seen.append((torch.cuda.current_stream(), threading.current_thread()))
            return [A[:, seeds].individual_sample(3)]

        loader = gs.DataLoader(A, recording, seeds[:64], 16, features=X, pipeline=pipeline)
        got = list(loader)
        assert len(got) == len(seen) == 4
        want = loader._side_stream if pipeline else loop
        if pipeline:
            assert want is not None and want != loop
        assert all(s == want for s, _ in seen)
        assert all(t is threading.current_thread() for _, t in seen)
        assert all(torch.equal(b.x, X[b.n_id]) for b in got)


@pytest.mark.parametrize("pipeline", [True, "stream"])
@pytest.mark.parametrize("kind", [pytest.param("gpu", marks=_GPU)])
def test_a_gather_error_in_a_later_super_batch_is_raised_at_its_batch(pipeline, kind):
    """Super-batches of 8 (mini-batch 0 measured alone first, then 1-8, 9-16, ...): the group
    of mini-batches 9-16 gathers 9 and 10, then fails at 11: batches 0-10 are handed out,
    with their rows, and the error is raised where 11 would be."""
    A, X, _, seeds = _gpu_setup()
    loader = gs.DataLoader(
        A, graphsage(), seeds, 16, seed=2, features=X, super_batch=8, pipeline=pipeline
    )
    real = loader._gather_group

    def gather_group(group, sync=None, gathered=None):
        gathered = [] if gathered is None else gathered
        if group[0].index == 9:
            real(group[:2], sync, gathered)
            raise RuntimeError("features: mini-batch 11")
        return real(group, sync, gathered)

    loader._gather_group = gather_group
    got = []
    with pytest.raises(RuntimeError, match="mini-batch 11"):
        for batch in loader:
            assert bool((batch.x == X[batch.n_id]).all())  # (read at once, on the loop's stream)
            got.append(batch.index)
    assert got == list(range(11))


@pytest.mark.parametrize("super_batch", [None, 8])
@pytest.mark.parametrize("kind", [pytest.param("gpu", marks=_GPU)])
def test_the_loop_s_stream_reads_complete_rows_at_once(super_batch, kind):
    """The side stream is held back (a 20 ms spin before every group's gather): the loop's
    stream reads each batch's ``x`` and ``y`` the moment it is handed out, and finds the
    table's rows (it waited for the group's event), with and without super-batches."""
    A, X, y, seeds = _gpu_setup()
    loader = gs.DataLoader(
        A,
        graphsage(),
        seeds,
        16,
        seed=2,
        features=X,
        labels=y,
        super_batch=super_batch,
        pipeline="stream",
    )
    real = loader._gather_group

    def slow(group, sync=None, gathered=None):
        torch.cuda._sleep(20_000_000)  # (on the current stream: the side one)
        return real(group, sync, gathered)

    loader._gather_group = slow
    flags = []
    for batch in loader:
        flags.append((batch.x == X[batch.n_id]).all() & (batch.y == y[batch.n_id]).all())
        del batch
    torch.cuda.synchronize()
    assert len(flags) == 63 and bool(torch.stack(flags).all())


@pytest.mark.parametrize("kind", [pytest.param("gpu", marks=_GPU)])
def test_leaving_a_gpu_epoch_early_leaves_the_next_whole(kind):
    """An epoch left with the next super-batch made on the side stream: the next epoch
    yields what stage by stage does."""
    A, X, _, seeds = _gpu_setup()
    loader = gs.DataLoader(
        A, graphsage(), seeds, 16, seed=2, features=X, super_batch=8, pipeline="stream"
    )
    for batch in loader:
        if batch.index == 3:  # (the next super-batch, 9-16, is made already)
            break
    del batch
    whole = list(loader)
    loader._epoch = 1  # the same epoch again, stage by stage
    loader.pipeline = False
    same(whole, list(loader))
