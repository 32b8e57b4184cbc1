"""The pipelined ``gs.DataLoader`` (``gsample/loader/pipeline.py``, and ``pipeline="stream"``:
``gsample/loader/side_stream.py``): the same batches, exactly, in the same order as without
it; errors at their mini-batch; the caller's context in the stages; stages stopped when the
loop leaves; samplers with state run in step with the loop."""

import contextlib
import functools
import threading
import time

import pytest
import torch
from helpers import example

import gsample as gs


def samplers():
    return {
        "graphsage": functools.partial(example("graphsage").graphsage, fanouts=(5, 5)),
        "ladies": functools.partial(example("ladies").ladies, layers=(64, 64)),
        "shadow": functools.partial(example("shadow").shadow, fanouts=(4, 4)),
    }


def tensors(batch):
    """Every tensor of a batch, in a fixed order."""
    from gsample.runtime import tensors as runtime_tensors

    out = list(runtime_tensors(batch.out))
    return out + [t for t in (batch.seeds, batch.n_id, batch.x, batch.y) if t is not None]


def same(a, b):
    assert len(a) == len(b)
    for p, q in zip(a, b):
        assert p.index == q.index
        tp, tq = tensors(p), tensors(q)
        assert len(tp) == len(tq)
        for s, t in zip(tp, tq):
            assert s.dtype == t.dtype and torch.equal(s, t)


@pytest.mark.parametrize("name", ["graphsage", "ladies", "shadow"])
@pytest.mark.parametrize("super_batch", [None, 3])
def test_identical_batches_with_and_without_pipelining(small_graph, device, name, super_batch):
    A = small_graph.to(device)
    if name == "ladies":
        A = example("ladies").normalize(A)
    g = torch.Generator().manual_seed(0)
    X = torch.randn(A.num_nodes, 4, generator=g).to(device)
    y = torch.randint(0, 3, (A.num_nodes,), generator=g).to(device)
    seeds = torch.arange(0, 2000, 11, device=device)
    runs = {}
    for pipeline in (False, True, "stream"):
        loader = gs.DataLoader(
            A,
            samplers()[name],
            seeds,
            16,
            seed=5,
            features=X,
            labels=y,
            super_batch=super_batch,
            pipeline=pipeline,
        )
        runs[pipeline] = [list(loader), list(loader)]  # two epochs
        assert len(runs[pipeline][0]) == len(loader) == 12
    for epoch in (0, 1):
        same(runs[False][epoch], runs[True][epoch])
        same(runs[False][epoch], runs["stream"][epoch])
    assert not torch.equal(runs[True][0][0].seeds, runs[True][1][0].seeds)  # epochs differ


def test_default_seed_follows_manual_seed(small_graph):
    f = samplers()["graphsage"]
    runs = []
    for pipeline in (False, True, True):
        gs.manual_seed(11)
        runs.append(
            list(
                gs.DataLoader(
                    small_graph,
                    f,
                    torch.arange(300),
                    64,
                    pipeline=pipeline,
                    labels=torch.arange(2000),
                )
            )
        )
    same(runs[0], runs[1])
    same(runs[1], runs[2])


def failing(A, seeds, bad=3):
    from gsample.base.random import stream_state

    if stream_state().batch_index == bad:
        raise IndexError("seeds: node 10**9 is out of range")
    return A[:, seeds].individual_sample(3)


@pytest.mark.parametrize("pipeline", [False, True, "stream"])
def test_an_error_surfaces_at_its_mini_batch(small_graph, pipeline, device):
    A = small_graph.to(device)
    X = torch.zeros(A.num_nodes, 2, device=device)
    seeds = torch.arange(200, device=device)
    loader = gs.DataLoader(A, failing, seeds, 20, pipeline=pipeline, features=X)
    got = []
    with pytest.raises(IndexError, match="seeds: node"):
        for batch in loader:
            got.append(batch.index)
    assert got == [0, 1, 2]


def stage_threads(loader=None):
    """The live stage threads of ``loader`` (of every loader when None): threads of loaders
    of earlier tests in this process may not be collected yet."""
    prefix = "gsample" if loader is None else f"gsample-{id(loader):x}"
    return [t for t in threading.enumerate() if t.name.startswith(prefix)]


def test_leaving_the_loop_stops_the_stages(small_graph):
    loader = gs.DataLoader(
        small_graph, samplers()["graphsage"], torch.arange(2000), 16, features=torch.zeros(2000, 3)
    )
    for batch in loader:
        assert len(stage_threads(loader)) == 2  # sampling and gathering
        assert loader._pipelines_open == 1
        if batch.index == 2:
            break
    del batch
    assert loader._pipelines_open == 0  # the stages returned
    assert len(list(loader)) == len(loader)  # the next epoch runs in full
    assert len(stage_threads(loader)) == 2  # in the same two threads, kept


def test_without_features_or_labels_batches_are_sampled_in_the_callers_thread(small_graph):
    """Nothing to overlap inside the loader: no stage threads (a thread hand-over per
    mini-batch cost more than it saved), and an epoch sampled in one run neither."""
    threads = []

    def recording(A, seeds):
        threads.append(threading.current_thread().name)
        return A[:, seeds].individual_sample(2)

    list(gs.DataLoader(small_graph, recording, torch.arange(64), 16))
    assert threads == [threading.current_thread().name] * 4
    threads.clear()
    loader = gs.DataLoader(
        small_graph,
        gs.compile(recording),
        torch.arange(64),
        16,
        super_batch=4,
        labels=torch.arange(2000),
    )
    list(loader)
    assert loader._pipelines_open == 0 and loader._workers is None  # one run: inline


def test_an_epoch_kept_open_does_not_block_the_next(small_graph):
    """The loader's stage threads are kept between epochs; an epoch whose iterator the caller
    still holds keeps them busy, so the next epoch gets threads of its own."""
    loader = gs.DataLoader(
        small_graph,
        samplers()["graphsage"],
        torch.arange(2000),
        16,
        features=torch.zeros(2000, 3),
        seed=0,
        shuffle=False,
    )
    held = iter(loader)
    first = next(held)
    assert len(list(loader)) == len(loader)
    rest = list(held)  # the held epoch goes on where it was
    assert [b.index for b in [first, *rest]] == list(range(len(loader)))
    assert loader._pipelines_open == 0


def test_stages_see_the_callers_context_and_run_in_threads(small_graph):
    seen = []

    def recording(A, seeds):
        seen.append((gs.current_backend(), threading.current_thread().name))
        return A[:, seeds].individual_sample(2)

    with gs.use_backend("cuda"):  # a CPU graph: torch code, as eager ops do
        list(gs.DataLoader(small_graph, recording, torch.arange(64), 16, labels=torch.arange(2000)))
    assert [backend for backend, _ in seen] == ["cuda"] * 4
    assert all(
        thread.startswith("gsample") and thread != threading.current_thread().name
        for _, thread in seen
    )


def test_a_sampler_with_state_runs_in_step_with_the_loop(small_graph):
    """A sampler given tensors (a training step may update them) is not run ahead, unless
    fixed_state=True says they do not change."""
    threads = []

    def weighted(A, seeds, w):
        threads.append(threading.current_thread().name)
        return A[:, seeds].individual_sample(2, probs=w[A[:, seeds].edges()[2]])

    w = torch.ones(small_graph.num_edges)
    f = functools.partial(weighted, w=w)
    y = torch.arange(2000)
    list(gs.DataLoader(small_graph, f, torch.arange(32), 16, labels=y))
    assert threads == ["MainThread"] * 2
    threads.clear()
    list(gs.DataLoader(small_graph, f, torch.arange(32), 16, fixed_state=True, labels=y))
    assert len(threads) == 2 and all(t.startswith("gsample") for t in threads)


def test_stage_times_are_recorded(small_graph):
    for pipeline in (False, True, "stream"):
        loader = gs.DataLoader(
            small_graph,
            samplers()["graphsage"],
            torch.arange(512),
            64,
            features=torch.zeros(2000, 8),
            pipeline=pipeline,
        )
        list(loader)
        assert loader.sample_seconds > 0 and loader.gather_seconds > 0


def test_auto_pipelines_unless_the_graph_and_tables_are_all_on_a_gpu(small_graph, device):
    """``pipeline="auto"`` (the default): on the CPU, or with a table the GPU reads from host
    memory, the stages overlap in threads; with the graph and every table on a GPU, in the
    loop's thread on a side stream (``"stream"``: threads would cost the training loop more
    host time than they save)."""
    A = small_graph.to(device)
    X = torch.randn(A.num_nodes, 4, device=device)
    fn = samplers()["graphsage"]
    seeds = torch.arange(100, device=device)
    on_gpu = device.type == "cuda"
    auto = gs.DataLoader(A, fn, seeds, 16, features=X).pipeline
    assert auto == "stream" if on_gpu else auto is True
    assert gs.DataLoader(A, fn, seeds, 16, features=X, pipeline=True).pipeline is True
    assert gs.DataLoader(A, fn, seeds, 16, features=X, pipeline=False).pipeline is False
    assert gs.DataLoader(A, fn, seeds, 16, features=X, pipeline="stream").pipeline == "stream"
    if on_gpu:  # a host table read over the bus: pipelined
        assert gs.DataLoader(A, fn, seeds, 16, features=X.cpu().pin_memory()).pipeline is True
    for bad in ("yes", "threads", 1, None):
        with pytest.raises(TypeError, match="pipeline"):
            gs.DataLoader(A, fn, seeds, 16, features=X, pipeline=bad)


def test_the_loops_body_runs_as_the_callers_code(small_graph):
    """The loader marks the loop's body as the caller's code (a capture in the sampling
    thread waits for it) and its waits for a mini-batch as not; leaving the loop, early or
    at its end, clears the mark."""
    from gsample.runtime import CALLER_CODE

    me = threading.get_ident()
    loader = gs.DataLoader(
        small_graph, samplers()["graphsage"], torch.arange(64), 16, labels=torch.arange(2000)
    )
    marks = [CALLER_CODE.is_running(me) for _ in loader]
    assert marks == [True] * 4 and not CALLER_CODE.is_running(me)
    it = iter(loader)
    next(it)
    assert CALLER_CODE.is_running(me)
    del it  # (closed: left early)
    assert not CALLER_CODE.is_running(me)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_the_loops_random_ops_run_while_the_sampling_thread_captures(small_graph):
    """torch refuses a random op in any thread while a CUDA graph is being captured
    ("Offset increment outside graph capture"). The loop's body runs dropout the whole
    time, in the first epochs of a sampler whose super-batch programs the sampling thread
    captures: the captures wait for the body, and the batches equal those sampled without
    a pipeline."""
    pytest.importorskip("cupy")
    from gsample.runtime import cuda_graphs

    A = small_graph.to("cuda")
    X = torch.randn(A.num_nodes, 4, device="cuda")
    seeds = torch.arange(0, 2000, 11, device="cuda")
    h = torch.ones(1 << 16, device="cuda")
    runs = {}
    for pipeline in (False, True, "stream"):  # a sampler each: each captures itself
        sampler = gs.compile(samplers()["graphsage"], backend="cuda")
        loader = gs.DataLoader(
            A, sampler, seeds, 16, seed=5, features=X, super_batch=3, pipeline=pipeline
        )
        runs[pipeline] = []
        for _ in range(3):
            for batch in loader:
                runs[pipeline].append(batch)
                until = time.perf_counter() + 0.02
                while time.perf_counter() < until:
                    torch.nn.functional.dropout(h, 0.5, training=True)
    same(runs[False], runs[True])
    same(runs[False], runs["stream"])
    if cuda_graphs.enabled():
        assert loader._super.program(3)[1].region.captured, "the loop's thread captured"


def gated(in_body, seen, timeout=10.0):
    """A sampler that opens a capture's window (the gate's ``quiet``) at every call, as a
    CUDA graph's capture in the sampling thread does, noting whether a loop's body ran
    inside it (``in_body``: threads in a body now) and whether the window timed out."""
    from gsample.runtime import CALLER_CODE

    def sampler(A, seeds):
        with CALLER_CODE.quiet(timeout=timeout) as ok:
            seen.append("timed out" if not ok else "overlap" if in_body else "clean")
            if ok:
                time.sleep(0.002)  # (a capture takes a while)
                if in_body:
                    seen[-1] = "overlap"
        return A[:, seeds].individual_sample(3)

    return sampler


def body(in_body, seconds=0.002):
    me = threading.get_ident()
    in_body.add(me)
    time.sleep(seconds)
    in_body.discard(me)


def test_captures_in_the_sampling_threads_never_overlap_the_loops_body(small_graph):
    """One loop, a loop nested in its body, and two loaders zipped: every capture window of
    the sampling threads falls outside the bodies, and none waits for its timeout."""
    in_body, seen = set(), []
    X = torch.zeros(2000, 3)

    def loader(n):
        return gs.DataLoader(small_graph, gated(in_body, seen), torch.arange(n), 16, features=X)

    for _ in loader(160):
        body(in_body)
    outer, inner = loader(96), loader(96)
    for _ in outer:
        body(in_body)
        for _ in inner:
            body(in_body)
    for _ in zip(loader(160), loader(160)):
        body(in_body)
    assert len(seen) == 10 + 6 + 6 * 6 + 2 * 10
    assert set(seen) == {"clean"}


def test_leaving_an_inner_loop_does_not_hold_its_captures_back(small_graph):
    """Leaving a loop inside another loop's body waits for the inner loader's stages; a
    capture there must not wait for the outer body (the loop is waiting, not running)."""
    from gsample.runtime import CALLER_CODE

    in_body, calls = threading.Event(), []
    X = torch.zeros(2000, 3)

    def sampler(A, seeds):
        calls.append(None)
        if len(calls) == 2:  # mini-batch 1: sampled while the body of mini-batch 0 runs
            in_body.wait(5)
            with CALLER_CODE.quiet(timeout=3):
                pass
        return A[:, seeds].individual_sample(3)

    outer = gs.DataLoader(small_graph, samplers()["graphsage"], torch.arange(64), 16, features=X)
    for _ in outer:
        inner = gs.DataLoader(small_graph, sampler, torch.arange(64), 16, features=X)
        for _ in inner:
            in_body.set()
            time.sleep(0.05)  # (the capture now waits for this body)
            began = time.perf_counter()
            break  # closes the inner loop: its stages end first
        assert time.perf_counter() - began < 1.5
        break


def _windowed_captures(monkeypatch, capturing: threading.Event, captures: list):
    """Every CUDA graph capture of the runtime held open 30 ms (a host sleep inside it, no
    CUDA call), with ``capturing`` set meanwhile: a loop's dropout meets it if the gate
    lets the two overlap."""
    from gsample.runtime import cuda_graphs

    original = cuda_graphs.Region._capture

    def capture(self, env, run_steps, keys=None):
        def steps(chosen, work):
            capturing.set()
            captures.append(threading.current_thread().name)
            try:
                time.sleep(0.03)
                run_steps(chosen, work)
            finally:
                capturing.clear()

        return original(self, env, steps, keys)

    monkeypatch.setattr(cuda_graphs.Region, "_capture", capture)


def _training(A, X, capturing, overlaps, spin, pipeline=True):
    """Three pipelined epochs whose body runs dropout for ``spin`` seconds per mini-batch,
    counting the dropouts run while a capture was open."""
    h = torch.ones(1 << 16, device="cuda")
    sampler = gs.compile(samplers()["graphsage"], backend="cuda")
    seeds = torch.arange(0, 2000, 11, device="cuda")
    loader = gs.DataLoader(
        A, sampler, seeds, 16, seed=5, features=X, super_batch=3, pipeline=pipeline
    )
    for _ in range(3):
        for _ in loader:
            until = time.perf_counter() + spin
            while time.perf_counter() < until:
                open_before = capturing.is_set()
                torch.nn.functional.dropout(h, 0.5, training=True)
                overlaps[0] += open_before or capturing.is_set()
    return loader


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("pipeline", [True, "stream"])
def test_no_capture_is_open_while_the_loops_body_runs(small_graph, monkeypatch, pipeline):
    """The property itself, with captures held open 30 ms: the body's dropouts never meet
    an open capture, and the sampling thread still captures (``"stream"``: the loop's own
    thread, inside ``next()``, on the side stream)."""
    pytest.importorskip("cupy")
    from gsample.runtime import cuda_graphs

    if not cuda_graphs.enabled():
        pytest.skip("CUDA graphs are off in this process")
    capturing, captures, overlaps = threading.Event(), [], [0]
    _windowed_captures(monkeypatch, capturing, captures)
    A = small_graph.to("cuda")
    X = torch.randn(A.num_nodes, 4, device="cuda")
    _training(A, X, capturing, overlaps, spin=0.02, pipeline=pipeline)
    assert overlaps[0] == 0
    if pipeline is True:
        assert any(name.startswith("gsample") for name in captures)  # the sampling thread's
    else:
        assert captures and set(captures) == {threading.current_thread().name}


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_without_the_gate_the_loops_dropout_fails_during_a_capture(small_graph, monkeypatch):
    """The failure the gate prevents, reproduced with the gate off (torch before 2.13 marks
    its default CUDA generator as captured during any capture): the test above would see
    it, were the gate gone."""
    pytest.importorskip("cupy")
    from gsample.runtime import cuda_graphs

    if not cuda_graphs.enabled():
        pytest.skip("CUDA graphs are off in this process")
    if tuple(int(v) for v in torch.__version__.split(".")[:2]) >= (2, 13):
        pytest.skip("torch 2.13 keeps a generator state per capture")

    class Open:
        @contextlib.contextmanager
        def quiet(self, timeout=None):
            yield True

    monkeypatch.setattr(cuda_graphs, "CALLER_CODE", Open())
    capturing, captures, overlaps = threading.Event(), [], [0]
    _windowed_captures(monkeypatch, capturing, captures)
    A = small_graph.to("cuda")
    X = torch.randn(A.num_nodes, 4, device="cuda")
    with pytest.raises(RuntimeError, match="Offset increment outside graph capture"):
        _training(A, X, capturing, overlaps, spin=0.2)
