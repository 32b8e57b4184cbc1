"""Calls in flight (``gsample.runtime.overlap``): the scheduler on plain generators (CPU),
the pauses and lanes of lowered programs (lowering for the ``cuda`` backend runs nothing),
and a ``gs.DataLoader`` keeping two layer-wise calls in flight on a GPU, sample for sample
what one call after the other draws."""

import contextvars
import functools

import pytest
import torch
from helpers import assert_same, example, graphsage

import gsample as gs
from gsample.base.random import batch_scope, stream_state
from gsample.compiler.compiled import wrap
from gsample.runtime import Options, lower, run
from gsample.runtime.overlap import Call, in_turn, interleave
from gsample.runtime.program import start

_WHO = contextvars.ContextVar("test_overlap_who", default=None)


def _call(i, log, pauses, fail_at=None):
    """A generator standing for a program's call: sets its context, pauses ``pauses``
    times, checking its context and the random stream each time, returns ``i * 10``."""

    def calls():
        _WHO.set(i)
        stream = stream_state()
        mine = (stream.seed, stream.batch_index)
        stream.ordinal += 3  # as run() advances the stream
        log.append(("start", i))
        try:
            for p in range(pauses):
                yield
                assert _WHO.get() == i, "another call's context"
                assert (stream.seed, stream.batch_index, stream.ordinal) == (*mine, 3), (
                    "another call's stream"
                )
                if p == fail_at:
                    raise ValueError(f"call {i} failed")
                log.append(("step", i))
            log.append(("end", i))
            return i * 10
        finally:
            log.append(("closed", i))

    return calls


def _run(n, depth, pauses=lambda i: 1 + i % 3):
    log = []

    def begin(i):
        in_flight = {j for what, j in log if what == "start"} - {
            j for what, j in log if what == "closed"
        }
        assert len(in_flight) < depth, f"{in_flight} in flight when {i} starts"
        return Call(_call(i, log, pauses(i)), (99, 0, i))

    return list(interleave(range(n), begin, depth)), log


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_results_come_in_order_with_depth_calls_in_flight(depth):
    stream = stream_state()
    outer = (stream.seed, stream.ordinal, stream.batch_index)
    out, log = _run(7, depth)
    assert out == [(i, i * 10) for i in range(7)]
    assert (stream.seed, stream.ordinal, stream.batch_index) == outer, "the stream restored"
    assert _WHO.get() is None, "each call ran in its own context"
    starts = [e for e in log if e[0] == "start"]
    assert [i for _, i in starts] == list(range(7))
    first_end = log.index(("end", 0))
    in_flight = sum(1 for e in log[:first_end] if e[0] == "start")
    assert in_flight == depth, f"{in_flight} calls started before the first ended: {log}"


def test_an_error_surfaces_at_its_call_after_the_calls_before_it():
    log, got = [], []
    with pytest.raises(ValueError, match="call 3 failed"):
        for i, _value in interleave(
            range(8), lambda i: Call(_call(i, log, 3, fail_at=1 if i == 3 else None), (1, 0, i)), 2
        ):
            got.append(i)
    assert got == [0, 1, 2]
    started = {i for what, i in log if what == "start"}
    closed = {i for what, i in log if what == "closed"}
    assert started == closed, "every call started was ended or closed"
    assert max(started) <= 4, "no call started past the one after the failure"


def test_a_consumer_that_stops_early_closes_the_calls_in_flight():
    log = []
    calls = interleave(range(6), lambda i: Call(_call(i, log, 4), (1, 0, i)), 2)
    assert next(calls) == (0, 0)
    calls.close()
    started = {i for what, i in log if what == "start"}
    assert started == {i for what, i in log if what == "closed"} and len(started) >= 2


def test_a_call_without_pauses_and_a_raising_start():
    def begin(i):
        if i == 2:

            def bad():
                raise TypeError("seeds: bad")

            return Call(bad, (0, 0, i))
        return Call(_call(i, [], 0), (0, 0, i))

    got = []
    with pytest.raises(TypeError, match="seeds: bad"):
        for _i, value in interleave(range(5), begin, 2):
            got.append(value)
    assert got == [0, 10]


def _turns(n, fail_launch=None, fail_land=None, settles=False, fail_settle=None):
    """``in_turn`` over ``range(n)`` with a log of launches, settles (``settles``) and lands
    (a launch, settle or land of item ``fail_*`` raising)."""
    log = []

    def settle(flight):
        i = flight["item"]
        log.append(("settle", i))
        if i == fail_settle:
            raise ValueError(f"bounds of {i}")

    def launch(i):
        log.append(("launch", i))
        if i == fail_launch:
            raise TypeError(f"seeds of {i}: bad")
        return {"item": i}

    def land(flight):
        i = flight["item"]
        log.append(("land", i))
        if i == fail_land:
            raise IndexError(f"call {i}: node id out of range")
        return i * 10

    return in_turn(range(n), launch, land, settle if settles else None), log


def test_in_turn_lands_in_order_each_after_the_next_one_is_launched():
    calls, log = _turns(5)
    assert list(calls) == [(i, i * 10) for i in range(5)]
    assert log == [
        ("launch", 0),
        ("launch", 1),
        ("land", 0),
        ("launch", 2),
        ("land", 1),
        ("launch", 3),
        ("land", 2),
        ("launch", 4),
        ("land", 3),
        ("land", 4),
    ]
    calls, log = _turns(0)
    assert list(calls) == [] and log == []


def test_in_turn_settles_each_call_before_the_next_is_launched():
    """With ``settle``: a call's read-backs come before the next call's device work is
    queued, its host work (land) after, while the device runs the next one; and a call
    settles only when its item is asked for (after the item before it was used: its device
    work is then done, and its read-backs do not wait for it)."""
    calls, log = _turns(4, settles=True)
    out = []
    for i, value in calls:
        out.append(value)
        log.append(("yield", i))
    assert out == [0, 10, 20, 30]
    assert log == [
        ("launch", 0),
        ("settle", 0),
        ("launch", 1),
        ("land", 0),
        ("yield", 0),
        ("settle", 1),
        ("launch", 2),
        ("land", 1),
        ("yield", 1),
        ("settle", 2),
        ("launch", 3),
        ("land", 2),
        ("yield", 2),
        ("settle", 3),
        ("land", 3),
        ("yield", 3),
    ]


def test_lanes_hand_out_two_lanes_of_each_program_in_turn(A):
    from gsample.runtime.overlap import Lanes

    p = _program(graphsage, A)
    q = _program(
        functools.partial(example("ladies").ladies, layers=(50,)), example("ladies").normalize(A)
    )
    lanes = Lanes()
    got = [lanes.next(p), lanes.next(p), lanes.next(q), lanes.next(p), lanes.next(q)]
    assert got[0] is p and got[1] is p.lanes[1] and got[3] is p, "alternating"
    assert got[2] is q and got[4] is q.lanes[1]
    assert p.busy == {0, 1} == q.busy and p.acquire()[0] == 2, "held until released"
    p.release(2)
    lanes.release()
    assert not p.busy and not q.busy and lanes.next(p) is p


@pytest.mark.parametrize(
    "fail, error, match, before, never",
    [
        (
            {"fail_launch": 3},
            TypeError,
            "seeds of 3: bad",
            [0, 10, 20],
            [("launch", 4), ("land", 3)],
        ),
        ({"fail_land": 2}, IndexError, "call 2: node id out of range", [0, 10], [("launch", 4)]),
        (
            {"fail_settle": 2, "settles": True},
            ValueError,
            "bounds of 2",
            [0, 10],
            [("launch", 3), ("land", 2)],
        ),
    ],
)
def test_in_turn_raises_a_failure_at_its_item_s_turn(fail, error, match, before, never):
    """A launch, settle or land that raises does so after the items before it came out;
    nothing is launched after a failed launch or settle, nor after the item a land failed."""
    calls, log = _turns(6, **fail)
    got = []
    with pytest.raises(error, match=match):
        for _i, value in calls:
            got.append(value)
    assert got == before, "the items before it come out first"
    assert not set(never) & set(log), log


# ----------------------------------------------------------------------------- programs
@pytest.fixture(scope="module")
def A():
    return gs.datasets.rmat(1000, 10000, seed=0)


def _program(fn, G, **kwargs):
    graph = gs.compile(fn).program(G, torch.arange(10), **kwargs)
    return lower(graph, "cuda", Options(), "cuda:0", wrap)


def test_layer_wise_programs_pause_after_each_layer_s_graph(A):
    ladies = functools.partial(example("ladies").ladies, layers=(50, 50, 50))
    p = _program(ladies, example("ladies").normalize(A))
    assert p.pauses == len(p.regions) == 3, p.format()
    node_wise = _program(graphsage, A)
    assert node_wise.pauses == 1 and node_wise.one_region and not p.one_region, (
        "a node-wise sampler's calls are launched and landed (runtime.program.launch)"
    )
    assert not lower(
        gs.compile(graphsage).program(A, torch.arange(10)),
        "cuda",
        Options(cuda_graphs=False),
        "cuda:0",
    ).one_region
    assert p.acquire() == (0, p)
    number, other = p.acquire()  # lane 0 is held: another lane
    assert number == 1 and other is not p and p.acquire()[0] == 2
    assert other.steps is p.steps and other.key_buffers is None and not other.busy
    assert all(
        a is not b and (a.start, a.stop) == (b.start, b.stop) and not b.captured
        for a, b in zip(p.regions, other.regions)
    ), "graphs of its own"
    p.release(0)
    assert p.acquire() == (0, p) and p.busy == {0, 1, 2}
    for n in (0, 1, 2):
        p.release(n)
    assert p.acquire() == (0, p) and p.acquire() == (1, other), "a lane is made once"
    cpu = lower(gs.compile(graphsage).program(A, torch.arange(10)), "torch", Options(), "cpu")
    assert cpu.pauses == 0 and not cpu.one_region


def test_start_returns_what_run_returns(A):
    graph = gs.compile(graphsage).program(A, torch.arange(10))
    program = lower(graph, "torch", Options(), "cpu", wrap)
    seeds = torch.arange(40)
    gs.manual_seed(1)
    want = run(program, {"A": A, "seeds": seeds})
    gs.manual_seed(1)
    call = Call(lambda: start(program, {"A": A, "seeds": seeds}), (stream_state().seed, 0, 0))
    assert call.done and call.error is None
    assert_same(call.value, want)
    assert not program.busy, "the call's lane given back"
    program.acquire()  # as if a call held lane 0, paused
    gs.manual_seed(1)
    assert_same(run(program, {"A": A, "seeds": seeds}), want)
    assert list(program.lanes) == [1] and program.busy == {0}, "it ran on lane 1"


def test_a_cpu_call_never_pauses(A):
    """On the CPU a compiled sampler's call has no device to wait for: nothing to plan or
    begin (the loader calls it as it is)."""
    sampler = gs.compile(graphsage)
    assert sampler.plan(A, torch.arange(8)) is None and sampler.begin(A, torch.arange(8)) is None
    assert sampler.traces == 1, "planned once: the program of the call, cached"


def test_options_overlap_must_be_a_bool():
    with pytest.raises(TypeError, match=r"Options\.overlap"):
        Options(overlap=1)


# ----------------------------------------------------------------------------- on a GPU
def _workload(sampler: str, device: str):
    """``(graph, sampler)`` of the GPU tests: LADIES 3 x 300 (on the normalised graph) or
    GraphSAGE [10, 5] on an R-MAT graph of 20,000 nodes."""
    G = gs.datasets.rmat(20_000, 300_000, seed=4).to(device)
    if sampler == "ladies":
        return (
            example("ladies").normalize(G),
            functools.partial(example("ladies").ladies, layers=(300, 300, 300)),
        )
    return G, functools.partial(graphsage, fanouts=(10, 5))


@pytest.mark.parametrize("sampler", ["ladies", "graphsage"])
@pytest.mark.parametrize("graphs", [True, False])
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_a_loader_with_two_calls_in_flight_draws_what_one_at_a_time_draws(sampler, graphs):
    """Epochs through a ``gs.DataLoader`` (two calls in flight, on two lanes) equal the
    sampler's calls one after the other and the loader with ``overlap`` off, bit for bit,
    in order, over the warm-up, capturing and replaying calls of both lanes (and with CUDA
    graphs off, where the calls pause before each read-back); the outer stream moves as
    without overlap."""
    G, fn = _workload(sampler, "cuda")
    runtime = Options(cuda_graphs=graphs)
    compiled = gs.compile(fn, backend="cuda", runtime=runtime)
    alone = gs.compile(fn, backend="cuda", runtime=Options(cuda_graphs=graphs, overlap=False))
    seeds = torch.randperm(G.num_nodes, generator=torch.Generator().manual_seed(0))[:1800]
    seeds = seeds.cuda()
    loader = gs.DataLoader(G, compiled, seeds, 256, seed=5)
    reference = gs.DataLoader(G, alone, seeds, 256, seed=5)
    assert loader._overlaps() and not reference._overlaps()
    probe = seeds[:300]
    with batch_scope(9, 9):
        alone_out = alone(G, probe)
    with batch_scope(9, 9):  # a call as a generator, drained
        calls, paused = compiled.begin(G, probe), 0
        try:
            while True:
                next(calls)
                paused += 1
        except StopIteration as end:
            assert_same(end.value, alone_out)
    assert paused == compiled.lowered(G, probe).pauses >= 1
    # GraphSAGE with graphs: launched and landed on two lanes (overlap.in_turn); else Calls
    assert compiled.lowered(G, probe).one_region == (sampler == "graphsage" and graphs)
    for epoch in range(3):
        gs.manual_seed(epoch)
        got = []
        for batch in loader:  # a direct call while the loader has one in flight
            got.append(batch)
            with batch_scope(9, 9):
                assert_same(compiled(G, probe), alone_out, f"a direct call, epoch {epoch}")
        after = stream_state().ordinal
        gs.manual_seed(epoch)
        want = list(reference)
        assert stream_state().ordinal == after
        assert [b.index for b in got] == list(range(len(want))) == [b.index for b in want]
        for a, b in zip(got, want):
            assert_same(a.out, b.out, f"epoch {epoch}, batch {a.index}")
            assert torch.equal(a.seeds, b.seeds)
    program = compiled.lowered(G, seeds[:256])
    # the loader's two calls held lanes 0 and 1, the direct calls between them lane 2
    assert program.pauses >= 1 and sorted(program.lanes) == [1, 2] and not program.busy
    from gsample.runtime import cuda_graphs

    if graphs and cuda_graphs.enabled():
        assert all(r.captured for r in program.lanes[1].regions), "lane 1 replays its own"
        for r0, r1 in zip(program.regions, program.lanes[1].regions):

            def ptrs(r):
                return {id(c.graph) for c in r.captured.values()}

            assert not ptrs(r0) & ptrs(r1)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_launch_and_land_are_a_node_wise_call_in_two_halves():
    """``launch`` then ``land`` on two lanes, calls alternating (each launched before the
    one before it lands, through the warm-up, capture and replays of both lanes' graphs),
    equal the sampler's calls bit for bit and leave gsample's stream where it was; a bad
    seed raises its clear error at ``land``, and the lane draws exactly after it."""
    from gsample.runtime.program import land, launch

    G, fn = _workload("graphsage", "cuda")
    compiled = gs.compile(fn, backend="cuda")
    seeds = torch.randperm(G.num_nodes, generator=torch.Generator().manual_seed(2))[:2048]
    parts = list(seeds.cuda().split(256))
    program, arguments = compiled.plan(G, parts[0])
    assert program.one_region
    name = next(n for n, v in arguments.items() if v is parts[0])
    want = []
    for i, s in enumerate(parts):
        with batch_scope(11, i):
            want.append(compiled(G, s))
    (n0, lane0), (n1, lane1) = program.acquire(), program.acquire()
    try:
        outer = (stream_state().seed, stream_state().ordinal, stream_state().batch_index)
        flights, got = [], []
        for i, s in enumerate(parts):
            flights.append(launch((lane0, lane1)[i % 2], {**arguments, name: s}, (11, 0, i)))
            if i:
                got.append(land(flights[i - 1]))
        got.append(land(flights[-1]))
        assert (stream_state().seed, stream_state().ordinal, stream_state().batch_index) == outer
        for i, (a, b) in enumerate(zip(got, want)):
            assert_same(a, b, f"call {i}")
        bad = parts[1].clone()
        bad[7] = G.num_nodes + 3
        with pytest.raises(IndexError, match="cols"):
            land(launch(lane1, {**arguments, name: bad}, (11, 0, 1)))
        assert_same(land(launch(lane1, {**arguments, name: parts[1]}, (11, 0, 1))), want[1])
    finally:
        program.release(n0)
        program.release(n1)
    from gsample.runtime import cuda_graphs

    if cuda_graphs.enabled():
        assert lane0.regions[0].captured and lane1.regions[0].captured


@pytest.mark.parametrize("sampler", ["ladies", "graphsage"])
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_a_loader_with_two_super_batches_in_flight_draws_what_one_at_a_time_draws(sampler):
    """Super-batched epochs with two super-batches in flight (two lanes of the program,
    each capturing and replaying its own CUDA graphs) equal the loader with ``overlap``
    off, bit for bit, in order, a last partial super-batch included."""
    G, fn = _workload(sampler, "cuda")
    compiled = gs.compile(fn, backend="cuda")
    alone = gs.compile(fn, backend="cuda", runtime=Options(overlap=False))
    seeds = torch.randperm(G.num_nodes, generator=torch.Generator().manual_seed(0))[:3300]
    seeds = seeds.cuda()  # 26 mini-batches: 6 super-batches of 4 and one of 2
    loader = gs.DataLoader(G, compiled, seeds, 128, seed=5, super_batch=4)
    reference = gs.DataLoader(G, alone, seeds, 128, seed=5, super_batch=4)
    assert loader._overlaps(loader._super_sampler)
    assert not reference._overlaps(reference._super_sampler)
    for epoch in range(4):  # warm-up, capture, replays (lanes 0 and 1)
        got, want = list(loader), list(reference)
        assert [b.index for b in got] == list(range(26)) == [b.index for b in want]
        for a, b in zip(got, want):
            assert_same(a.out, b.out, f"epoch {epoch}, batch {a.index}")
            assert torch.equal(a.seeds, b.seeds)
    program = loader._super.program(4)[1]
    assert sorted(program.lanes) == [1] and not program.busy, "two super-batches in flight"
    # GraphSAGE's (one graph): settled (its bounds read back) before the next is launched
    assert (program.settles is not None) == (sampler == "graphsage") == program.one_region
    from gsample.runtime import cuda_graphs

    if cuda_graphs.enabled():
        assert all(r.captured for r in program.lanes[1].regions), "lane 1 replays its own"


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_no_calls_in_flight_where_a_training_step_may_change_the_sampler_s_state():
    from helpers import weighted_sampler

    G = gs.datasets.rmat(2_000, 20_000, seed=1).to("cuda")
    v = torch.ones(G.num_nodes, device="cuda")
    compiled = gs.compile(weighted_sampler, backend="cuda")
    seeds = torch.arange(600, device="cuda")
    stateful = gs.DataLoader(G, functools.partial(compiled, v=v), seeds, 100)
    assert not stateful._overlaps()
    fixed = gs.DataLoader(G, functools.partial(compiled, v=v), seeds, 100, fixed_state=True)
    assert fixed._overlaps() and len(list(fixed)) == 6
    eager = gs.DataLoader(G, functools.partial(graphsage, fanouts=(5,)), seeds, 100)
    assert not eager._overlaps()


@pytest.mark.parametrize("planned", [False, True])
def test_the_loader_s_calls_in_flight_start_the_epoch_s_planned_program(A, monkeypatch, planned):
    """The loader's two-in-flight path, on the CPU: without a plan (a program that does not
    pause) each call is made as it is; with one, the epoch's first call is planned once and
    the others start that program with their own seeds. Either way the batches equal the
    loader's one-by-one calls, in order."""
    from gsample.compiler.compiled import CompiledSampler

    sampler = functools.partial(gs.compile(graphsage), fanouts=(5, 3))
    seeds = torch.randperm(A.num_nodes, generator=torch.Generator().manual_seed(1))[:700]
    want = [b.out for b in gs.DataLoader(A, sampler, seeds, 128, seed=4)]
    plans = []
    if planned:  # as on a GPU: a plan (the CPU program just never pauses)

        def plan(self, *args, **kwargs):
            dynamic, static, num_nodes = self._split(args, kwargs)
            plans.append(args)
            return self._entry(dynamic, static, num_nodes, self._backend())[1], dynamic

        monkeypatch.setattr(CompiledSampler, "plan", plan)
    monkeypatch.setattr(gs.DataLoader, "_overlaps", lambda self: True)
    got = list(gs.DataLoader(A, sampler, seeds, 128, seed=4))
    assert [b.index for b in got] == list(range(len(want))) == [0, 1, 2, 3, 4, 5]
    for b, w in zip(got, want):
        assert_same(b.out, w, f"batch {b.index}")
    assert len(plans) == (1 if planned else 0), "planned once an epoch"
