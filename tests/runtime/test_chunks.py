"""Several one-mini-batch calls a replay (``gsample.runtime.chunk``, gsample issue 36 item 2):
the grouping and scheduling of chunks (:func:`~gsample.runtime.overlap.chunked`,
:func:`~gsample.runtime.overlap.in_chunks`) on plain callables (CPU), the chunk size and its
memory bound, lowered programs' eligibility (lowering for the ``cuda`` backend runs nothing),
and on a GPU: a ``gs.DataLoader`` epoch with chunks equal to one at a time sample for sample
(GraphSAGE, a walk, LADIES), a bad id in the k-th call of a chunk, and the launches and host
synchronisations per mini-batch."""

import functools
import re

import pytest
import torch
from adversarial import bad_ids
from helpers import assert_same, difference, example, graphsage, host_syncs

import gsample as gs
from gsample.compiler.compiled import wrap
from gsample.runtime import Options, chunk, chunk_size, chunked, in_chunks, in_turn, lower
from gsample.runtime.chunk import Chunk, Chunks, most_calls


# ----------------------------------------------------------------------------- grouping
def _items(sizes):
    return [(i, n) for i, n in enumerate(sizes)]


def _size(item):
    return item[1]


@pytest.mark.parametrize(
    "sizes, k, groups",
    [
        ([4] * 8, 3, [[0, 1, 2], [3, 4, 5], [6], [7]]),
        ([4] * 7 + [2], 3, [[0, 1, 2], [3, 4, 5], [6], [7]]),  # the short last one alone
        ([4] * 6 + [2], 3, [[0, 1, 2], [3, 4, 5], [6]]),
        ([4] * 5, 8, [[0], [1], [2], [3], [4]]),  # fewer than k: one at a time
        ([4] * 5, 1, [[0], [1], [2], [3], [4]]),  # k = 1: off
        ([4] * 5, 0, [[0], [1], [2], [3], [4]]),
        ([4, 4, 2, 4, 4, 4], 2, [[0, 1], [2], [3, 4], [5]]),
        ([], 4, []),
    ],
)
def test_chunks_are_runs_of_k_consecutive_items_of_one_size(sizes, k, groups):
    got = [[i for i, _ in g] for g in chunked(_items(sizes), k, _size)]
    assert got == groups
    assert [i for g in got for i in g] == list(range(len(sizes))), "every item once, in order"


def test_a_limit_lowered_meanwhile_makes_smaller_chunks():
    limit = [4]
    got = []
    for g in chunked(_items([4] * 11), lambda: limit[0], _size):
        got.append([i for i, _ in g])
        limit[0] = 2  # learnt once the first chunk ran
    assert got == [[0, 1, 2, 3], [4, 5], [6, 7], [8, 9], [10]]


def _scheduled(
    sizes, k, fail_land=None, fail_start=None, raise_many=None, settles=False, fail_settle=None
):
    """``in_chunks`` over fake calls: each launch records which items it got (with the
    stream it would draw from: ``(seed, 0, index)``), each land returns ``index * 10``."""
    log = []

    def launch(item):
        log.append(("launch", (item[0],)))
        return ("one", item[0], (7, 0, item[0]))

    def launch_many(group):
        log.append(("launch", tuple(i for i, _ in group)))
        if raise_many is not None and raise_many in [i for i, _ in group]:
            raise RuntimeError(f"chunk of {raise_many} failed")
        out = []
        for i, _ in group:
            if i == fail_start:
                out.append(TypeError(f"seeds of {i}: bad"))
                break
            out.append(("many", i, (7, 0, i)))
        return out

    def land(flight):
        log.append(("land", flight[1]))
        assert flight[2] == (7, 0, flight[1]), "each call draws with its own batch index"
        if flight[1] == fail_land:
            raise IndexError(f"cols: node id out of range in call {flight[1]}")
        return flight[1] * 10

    def settle(flight):
        log.append(("settle", flight[1]))
        if flight[1] == fail_settle:
            raise IndexError(f"seeds: node id out of range in call {flight[1]}")

    calls = in_chunks(
        _items(sizes), k, launch, land, launch_many, settle if settles else None, size=_size
    )
    return calls, log


def test_in_chunks_yields_every_item_in_order_with_its_own_result():
    calls, log = _scheduled([4] * 7 + [2], 3)
    assert list(calls) == [((i, 4 if i < 7 else 2), i * 10) for i in range(8)]
    launches = [who for what, who in log if what == "launch"]
    assert launches == [(0, 1, 2), (3, 4, 5), (6,), (7,)]


def test_in_chunks_lands_a_chunk_after_the_next_is_launched_and_before_the_one_after():
    """Two chunks in flight at most: chunk c lands (all its calls) after chunk c + 1 is
    launched and before chunk c + 2 is, so two Chunks in turn never share lanes."""
    calls, log = _scheduled([4] * 9, 3, settles=True)
    assert [v for _, v in calls] == [i * 10 for i in range(9)]
    assert log == [
        ("launch", (0, 1, 2)),
        *[("settle", i) for i in (0, 1, 2)],
        ("launch", (3, 4, 5)),
        *[("land", i) for i in (0, 1, 2)],
        *[("settle", i) for i in (3, 4, 5)],
        ("launch", (6, 7, 8)),
        *[("land", i) for i in (3, 4, 5)],
        *[("settle", i) for i in (6, 7, 8)],
        *[("land", i) for i in (6, 7, 8)],
    ]
    # a chunk settles when its first item is asked for, after the chunk before it was used
    calls, log = _scheduled([4] * 6, 3, settles=True)
    first = next(calls)
    assert first == ((0, 4), 0) and ("settle", 3) not in log and ("land", 2) in log
    assert next(calls) == ((1, 4), 10) and ("settle", 3) not in log, "a chunk's calls in turn"
    next(calls)
    next(calls)
    assert ("settle", 3) in log


@pytest.mark.parametrize("k", [1, 4])
def test_k_of_one_is_in_turn(k):
    """``k = 1`` (chunks off) schedules exactly as :func:`in_turn`; any ``k`` yields the
    same items and results."""
    calls, log = _scheduled([4] * 6 + [3], k)
    got = list(calls)
    turn_log = []

    def launch(item):
        turn_log.append(("launch", (item[0],)))
        return ("one", item[0], (7, 0, item[0]))

    def land(flight):
        turn_log.append(("land", flight[1]))
        return flight[1] * 10

    want = list(in_turn(_items([4] * 6 + [3]), launch, land))
    assert got == want
    if k == 1:
        assert log == turn_log


@pytest.mark.parametrize("j", [0, 2, 3])
def test_a_failure_in_the_kth_call_of_a_chunk_raises_at_its_turn(j):
    """A land that raises in call ``j`` of a chunk: the calls before it come out first, the
    ones after it in its chunk never land, nothing is launched after the next chunk."""
    calls, log = _scheduled([4] * 12, 4, fail_land=4 + j)
    got = []
    with pytest.raises(IndexError, match=f"in call {4 + j}"):
        for _, value in calls:
            got.append(value)
    assert got == [i * 10 for i in range(4 + j)]
    assert not {("land", i) for i in range(5 + j, 8)} & set(log), "its chunk stops there"
    assert ("launch", (8, 9, 10, 11)) in log and all(
        who in ((0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11)) for what, who in log if what == "launch"
    )


def test_a_call_that_fails_to_start_raises_at_its_turn():
    calls, log = _scheduled([4] * 8, 4, fail_start=6)
    got = []
    with pytest.raises(TypeError, match="seeds of 6: bad"):
        for _, value in calls:
            got.append(value)
    assert got == [i * 10 for i in range(6)]
    assert ("land", 7) not in log


@pytest.mark.parametrize("j", [0, 2, 3])
def test_a_settle_that_fails_in_the_kth_call_of_a_chunk_raises_at_its_turn(j):
    """A settle (a read-back before the next launch: GraphSAINT-RW's, where its seeds'
    check flag is read) that raises in call ``j`` of a chunk: as one at a time, the calls
    before it (its chunk's included) come out first, its chunk's later calls never land,
    and no chunk is launched after it."""
    for k in (4, 1):
        calls, log = _scheduled([4] * 16, k, settles=True, fail_settle=4 + j)
        got = []
        with pytest.raises(IndexError, match=f"in call {4 + j}"):
            for _, value in calls:
                got.append(value)
        assert got == [i * 10 for i in range(4 + j)], k
        launched = [i for what, who in log if what == "launch" for i in who]
        assert max(launched) == (7 if k == 4 else 4 + j), "nothing launched after it"
        assert not {("land", i) for i in range(4 + j, 16)} & set(log)


def test_nothing_is_launched_after_a_chunk_whose_call_failed_to_start():
    calls, log = _scheduled([4] * 16, 4, fail_start=5)
    with pytest.raises(TypeError, match="seeds of 5: bad"):
        list(calls)
    assert [who for what, who in log if what == "launch"] == [(0, 1, 2, 3), (4, 5, 6, 7)]


def test_a_chunk_launch_that_raises_does_so_at_its_first_item():
    calls, _ = _scheduled([4] * 8, 4, raise_many=5)
    got = []
    with pytest.raises(RuntimeError, match="chunk of 5 failed"):
        for _, value in calls:
            got.append(value)
    assert got == [0, 10, 20, 30]


def test_the_chunk_size_is_bounded_by_two_chunks_results_in_the_budget():
    assert most_calls(8, 10 << 20, 100 << 20) == 5
    assert most_calls(8, 1 << 20, 1 << 30) == 8
    assert most_calls(8, 1 << 30, 1 << 20) == 1
    assert most_calls(8, 0, 0) == 1

    class _Chunk:
        bytes = None

    chunks = Chunks.__new__(Chunks)
    chunks.program, chunks.k, chunks.budget = None, 8, 100 << 20
    chunks.pair, chunks.turn = [_Chunk(), _Chunk()], 1
    chunks.most, chunks.bounded = 8, False
    assert chunks.limit() == 8, "nothing measured yet"
    chunks.pair[1].bytes = (10 << 20) // chunk.HELD
    assert chunks.limit() == 5
    chunks.pair[1].bytes = 1  # (read once)
    assert chunks.limit() == 5
    assert chunks.next() is chunks.pair[0] and chunks.next() is chunks.pair[1]


# ----------------------------------------------------------------------------- programs
@pytest.fixture(scope="module")
def A():
    return gs.datasets.rmat(1000, 10000, seed=0)


def _program(fn, G, options=None):
    graph = gs.compile(fn).program(G, torch.arange(10))
    return lower(graph, "cuda", options or Options(), "cuda:0", wrap)


def test_only_a_program_that_pauses_once_is_chunked(A, monkeypatch):
    monkeypatch.setattr(chunk, "enabled", lambda: True)  # (as on a GPU)
    node_wise = _program(graphsage, A)
    assert node_wise.one_region
    assert chunk_size(node_wise) == chunk.CHUNK == 8
    assert chunk_size(node_wise, 3) == 3 and chunk_size(node_wise, 1) == 1
    monkeypatch.setattr(chunk, "CHUNK", 1)  # the A/B switch
    assert chunk_size(node_wise) == 1
    monkeypatch.setattr(chunk, "CHUNK", 8)
    ladies = functools.partial(example("ladies").ladies, layers=(50, 50))
    layer_wise = _program(ladies, example("ladies").normalize(A))
    assert not layer_wise.one_region and chunk_size(layer_wise) == 1
    assert chunk_size(_program(graphsage, A, Options(cuda_graphs=False))) == 1
    cpu = lower(gs.compile(graphsage).program(A, torch.arange(10)), "torch", Options(), "cpu")
    assert chunk_size(cpu) == 1
    monkeypatch.setattr(chunk, "enabled", lambda: False)  # GSAMPLE_CUDA_GRAPHS=0
    assert chunk_size(node_wise) == 1


def test_a_cpu_loader_is_untouched_by_chunks(A):
    """On the CPU nothing is chunked: an epoch is what the sampler's calls draw."""
    fn = gs.compile(graphsage)
    seeds = torch.arange(0, 1000, 7)
    loader = gs.DataLoader(A, fn, seeds, 16, seed=3)
    got = list(loader)
    from gsample.base.random import batch_scope

    for b in got:
        with batch_scope(loader_seed(3), b.index):
            assert_same(b.out, graphsage(A, b.seeds), f"batch {b.index}")


def loader_seed(seed, epoch=0):
    from gsample.base.random import combine

    return combine(combine(0, seed), epoch)


# ----------------------------------------------------------------------------- on a GPU
def _sampler(name):
    """``(graph, sampler)`` of the GPU tests on an R-MAT graph of 20,000 nodes."""
    G = gs.datasets.rmat(20_000, 300_000, seed=4).to("cuda")
    if name == "ladies":
        return (
            example("ladies").normalize(G),
            functools.partial(example("ladies").ladies, layers=(300, 300)),
        )
    if name == "deepwalk":
        return G, functools.partial(example("deepwalk").deepwalk, length=8)
    if name == "graphsaint_rw":
        return G, functools.partial(example("graphsaint_rw").graphsaint_rw, length=4)
    return G, functools.partial(graphsage, fanouts=(10, 5))


def _planned(seed, count, key=None):
    """GraphSAGE compiled for the GPU and ``count`` of the graph's nodes (a permutation of
    generator seed ``seed``) in mini-batches of 128: ``(G, parts, program, arguments, name,
    want)``, the program planned for the first (``name``: its seeds' argument) and, with
    ``key``, what each mini-batch draws alone in ``batch_scope(key, i)`` (else ``[]``)."""
    from gsample.base.random import batch_scope

    G, fn = _sampler("graphsage")
    compiled = gs.compile(fn, backend="cuda")
    seeds = torch.randperm(G.num_nodes, generator=torch.Generator().manual_seed(seed))[:count]
    parts = list(seeds.cuda().split(128))
    program, arguments = compiled.plan(G, parts[0])
    name = next(n for n, v in arguments.items() if v is parts[0])
    want = []
    for i, s in enumerate(parts if key is not None else ()):
        with batch_scope(key, i):
            want.append(compiled(G, s))
    return G, parts, program, arguments, name, want


def _epochs(G, compiled, seeds, k, epochs=3, batch_size=128):
    """Every epoch's batches with chunks of ``k`` (``gsample.runtime.chunk.CHUNK``)."""
    old = chunk.CHUNK
    chunk.CHUNK = k
    try:
        loader = gs.DataLoader(G, compiled, seeds, batch_size, seed=5)
        return [list(loader) for _ in range(epochs)]
    finally:
        chunk.CHUNK = old


@pytest.mark.parametrize("name", ["graphsage", "graphsaint_rw", "deepwalk", "ladies"])
@pytest.mark.parametrize("k", [8, 3])
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_a_chunked_epoch_draws_what_one_at_a_time_draws(name, k):
    """Epochs with chunks of ``k`` (the warm-up chunk, the captured one, replays, the
    last partial chunk one at a time: 2,600 seeds in 128s are 20 full mini-batches and
    one of 40, so that both chunks of a loader run at k = 8) equal the loader with chunks
    off, bit for bit, epoch after epoch (a chunk's
    graphs are kept with the program). GraphSAGE and GraphSAINT-RW (a walk, then the
    induced subgraph: one region) are chunked; DeepWalk (one walk step: no CUDA graph) and
    LADIES (a region per layer) run one at a time, as before."""
    G, fn = _sampler(name)
    compiled = gs.compile(fn, backend="cuda")
    seeds = torch.randperm(G.num_nodes, generator=torch.Generator().manual_seed(0))[:2600]
    seeds = seeds.cuda()
    got = _epochs(G, compiled, seeds, k)
    want = _epochs(G, compiled, seeds, 1)
    for e, (a_epoch, b_epoch) in enumerate(zip(got, want)):
        assert [b.index for b in a_epoch] == [b.index for b in b_epoch] == list(range(21))
        for a, b in zip(a_epoch, b_epoch):
            assert torch.equal(a.seeds, b.seeds)
            assert_same(a.out, b.out, f"{name}, epoch {e}, batch {a.index}")
    program = compiled.lowered(G, seeds[:128])
    assert program.one_region == (name in ("graphsage", "graphsaint_rw"))
    if not program.one_region:
        assert not program.chunks, "not chunked"
    else:
        assert program.chunks, "chunks ran"
        graphs = list(program.chunks.values())
        assert len(graphs) == 2, "two chunks in turn, kept between epochs"
        assert all(g.captured for g in graphs), "every chunk replays a graph of its own"
        assert not program.busy, "every lane given back"


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("j", [0, 5, 7])
def test_a_bad_id_in_the_kth_call_of_a_chunk_raises_naming_it_and_harms_no_other(j):
    """Chunks of 8 on two chunk objects (warm-up, capture, replays): a bad seed in call
    ``j`` of a replayed chunk (each of ``adversarial.bad_ids``, one chunk each) raises
    ``cols``' error at that call's land, the calls before it in the chunk are right, and
    the next chunk (and the one after, on the same lanes) draws exactly what it draws
    alone."""
    from gsample.runtime import land

    G, parts, program, arguments, name, want = _planned(1, 7168, key=11)
    chunks = Chunks(program, 8)
    try:

        def run(first, block):
            flights = chunks.next().launch(
                [{**arguments, name: s} for s in block], [(11, 0, first + i) for i in range(8)]
            )
            return flights

        for c in range(5):  # warm-up, capture, replays on both chunks
            flights = run(8 * c, parts[8 * c : 8 * c + 8])
            for i, f in enumerate(flights):
                assert_same(land(f), want[8 * c + i], f"chunk {c}, call {i}")
        for value in bad_ids(G.num_nodes):  # (issue 32's: past the end, negative, wide)
            bad = [s.clone() for s in parts[40:48]]
            bad[j][3] = value
            flights = run(40, bad)
            for i, f in enumerate(flights):
                if i == j and isinstance(f, BaseException):  # (raised before the graph)
                    assert isinstance(f, IndexError) and re.search("cols|seeds", str(f)), f
                elif i == j:
                    with pytest.raises(IndexError, match=r"cols|seeds"):
                        land(f)
                elif i < j:
                    assert_same(land(f), want[40 + i], f"call {i} before the bad one {value}")
        for c in (5, 6):  # the next chunk, and the one on the same lanes
            flights = run(8 * c, parts[8 * c : 8 * c + 8])
            for i, f in enumerate(flights):
                assert_same(land(f), want[8 * c + i], f"chunk {c} after the bad one, call {i}")
        assert all(c.graphs.captured for c in chunks.pair)
    finally:
        chunks.release()
    assert not program.busy


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("error", ["not_capturable", "out_of_memory"])
def test_a_chunk_whose_capture_fails_in_a_later_call_runs_eagerly_drawing_the_same(
    error, monkeypatch
):
    """The capture of a chunk failing in its call 3 (a step refusing capture, or the
    capture running out of memory, raised where call 3 packs its results): the capture
    ends cleanly (the caller's stream current again), the key is refused and every chunk
    after it runs eagerly, drawing what one at a time does."""
    from gsample.base.readback import NotCapturable
    from gsample.runtime import cuda_graphs, land

    _, parts, program, arguments, name, want = _planned(2, 3072, key=17)
    real = cuda_graphs._Shared.into

    def into(self, j):
        allocate = real(self, j)

        def failing(dtype, numel, device):
            if j == 3 and torch.cuda.is_current_stream_capturing():
                if error == "not_capturable":
                    raise NotCapturable("call 3 reads back")
                raise torch.cuda.OutOfMemoryError("call 3 ran out of memory")
            return allocate(dtype, numel, device)

        return failing

    monkeypatch.setattr(cuda_graphs._Shared, "into", into)
    stream = torch.cuda.current_stream()
    one = Chunk(program, 8)
    try:
        for c in range(3):  # warm-up, the failed capture (eager), eager from then on
            flights = one.launch(
                [{**arguments, name: s} for s in parts[8 * c : 8 * c + 8]],
                [(17, 0, 8 * c + i) for i in range(8)],
            )
            assert torch.cuda.current_stream() == stream, "the capture's stream left"
            for i, f in enumerate(flights):
                assert_same(land(f), want[8 * c + i], f"chunk {c}, call {i}")
        assert one.graphs.refused and not one.graphs.captured
    finally:
        one.release()
    assert not program.busy


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_a_replayed_chunk_launches_once_and_waits_once():
    """A replayed chunk of 8: one CUDA graph launch and one host synchronisation for its
    8 calls (their read-backs wait for one event), where one call at a time makes one of
    each per call."""
    from unittest import mock

    from gsample.runtime import land

    _, parts, program, arguments, name, _ = _planned(3, 5 * 8 * 128)  # five full chunks
    chunks = Chunks(program, 8)
    replays = []
    original = torch.cuda.CUDAGraph.replay

    def counted(graph):
        replays.append(graph)
        return original(graph)

    def chunk_of(c):
        block = parts[8 * c : 8 * c + 8]
        assert len(block) == 8
        flights = chunks.next().launch(
            [{**arguments, name: s} for s in block], [(13, 0, 8 * c + i) for i in range(8)]
        )
        assert len(flights) == 8
        return [land(f) for f in flights]

    try:
        for c in range(4):  # warm-up and capture of both chunks
            chunk_of(c)
        with mock.patch.object(torch.cuda.CUDAGraph, "replay", counted):
            syncs = host_syncs(lambda: chunk_of(4))
        assert len(replays) == 1, "one launch for 8 mini-batches"
        assert syncs == ["torch.cuda.Event.synchronize"], syncs
    finally:
        chunks.release()


def test_calls_alike_share_their_graph_key_without_making_it():
    """``cuda_graphs._alike``: a chunk's calls are known to share a graph key where each
    input is the same object or a seeds tensor / device key of the same shape; anything
    else is left to the full comparison of keys (False)."""
    from types import SimpleNamespace

    from gsample.base.random import DeviceKey
    from gsample.runtime.cuda_graphs import _alike

    region = SimpleNamespace(inputs=[0, 1, 2, 3], in_place={3})
    graph, const = torch.arange(5), 25

    def env(seeds, key):
        return [seeds, key, const, graph]

    def key(copies=1):
        return DeviceKey.of(torch.zeros(2, dtype=torch.int64), 1, 2, copies)

    a = env(torch.arange(8), key())
    assert _alike(region, a, env(torch.arange(8) + 1, key()))
    assert not _alike(region, a, env(torch.arange(9), key())), "another shape"
    assert not _alike(region, a, env(torch.arange(8).int(), key())), "another dtype"
    assert not _alike(region, a, env(torch.arange(8), key(copies=2)))
    b = env(torch.arange(8), key())
    b[3] = torch.arange(5)  # read in place: another object is another key
    assert not _alike(region, a, b)
    b = env(torch.arange(8), key())
    b[2] = 26  # (a plain value not the same object: compared by the keys)
    assert not _alike(region, a, b)
    assert not _alike(region, a, env([0] * 8, key()))


def test_the_loader_hands_each_mini_batch_to_its_chunk_call(A, monkeypatch):
    """The loader's wiring (``DataLoader._overlapped``) on the CPU, with the runtime's
    launch, land and chunks replaced by recorders: consecutive full mini-batches go to
    chunks of ``chunk_size`` (their seeds and streams ``(epoch seed, 0, index)`` in order),
    the short last one alone, each batch gets its own call's result, and the chunks' lanes
    are given back at the end of the epoch (and when the loop stops early)."""
    from types import SimpleNamespace

    import gsample.loader.dataloader as D

    fn = gs.compile(graphsage)
    program = SimpleNamespace(one_region=True)
    program.acquire = lambda: (0, program)
    program.release = lambda number: None
    monkeypatch.setattr(
        type(fn), "plan", lambda self, A_, seeds, **kw: (program, {"A": A_, "seeds": seeds})
    )
    monkeypatch.setattr(D.DataLoader, "_overlaps", lambda self, fn=None: True)
    monkeypatch.setattr(D, "launch", lambda lane, args, stream: ("one", args["seeds"], stream))
    monkeypatch.setattr(D, "land", lambda flight: flight)
    monkeypatch.setattr(D, "settle", lambda flight: None)
    monkeypatch.setattr(D, "chunk_size", lambda p: 3)
    released = []

    class _Chunks:
        def __init__(self, p, k):
            assert p is program and k == 3
            self.launched = []

        def limit(self):
            return 3

        def next(self):
            return self

        def launch(self, args, streams):
            self.launched.append([s[2] for s in streams])
            return [("many", a["seeds"], s) for a, s in zip(args, streams)]

        def release(self):
            released.append(self.launched)

    monkeypatch.setattr(D, "Chunks", _Chunks)
    loader = gs.DataLoader(A, fn, torch.arange(50), 4, seed=3)
    got = list(loader)
    assert [b.index for b in got] == list(range(13))
    for b in got:
        kind, seeds, stream = b.out
        assert kind == ("many" if b.index < 12 else "one")
        assert seeds is b.seeds and stream == (loader_seed(3), 0, b.index)
    assert released == [[[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]]
    for _ in zip(range(2), loader):  # stopped early: the lanes given back all the same
        pass
    assert len(released) == 2
    # a super-batch's mini-batches re-run one by one after it failed (it may have run out
    # of memory): one at a time, no chunk of them
    made = []
    monkeypatch.setattr(D, "Chunks", lambda p, k: made.append(k) or _Chunks(p, k))
    parts = list(torch.arange(40).split(4))
    with pytest.raises(RuntimeError, match="super_batch"):
        list(loader._explain_failure(parts, 5, 0, RuntimeError("a super-batch failed")))
    assert not made
    outs = [b.out[0] for b in loader._one_by_one(parts, 5)]
    assert made == [3] and outs == ["many"] * 9 + ["one"]


def test_a_chunk_key_is_warmed_up_then_captured_then_replayed(monkeypatch):
    """``ChunkGraphs.run``'s life of a key (CPU, its capture and replay replaced by
    recorders): eager the first time (kernels loaded), captured the second, replayed after;
    calls of unequal keys run eagerly; a key whose capture cannot be made
    (``NotCapturable``) runs eagerly from then on; where the capture gate times out the call
    runs eagerly and a later one captures; a chunk of another size is another key."""
    import contextlib
    from types import SimpleNamespace

    from gsample.base.readback import NotCapturable
    from gsample.runtime import cuda_graphs as G

    monkeypatch.setattr(G, "enabled", lambda: True)
    log = []

    def region(i):
        return SimpleNamespace(
            _key=lambda env: env[0], inputs=[0], in_place=set(), packed=(), steps=[i]
        )

    graphs = G.ChunkGraphs([region(i) for i in range(4)])
    fail = set()

    def capture(envs, records, keys, run_steps):
        log.append(("capture", len(envs)))
        if envs[0][0] in fail:
            raise NotCapturable("a read-back")
        return SimpleNamespace(graph=SimpleNamespace(replay=lambda: log.append("replay")))

    monkeypatch.setattr(graphs, "_capture", capture)
    monkeypatch.setattr(graphs, "_load", lambda cap, envs: log.append("load"))
    monkeypatch.setattr(
        graphs, "_replayed", lambda cap, envs, records: [("raw", "replayed")] * len(envs)
    )
    monkeypatch.setattr(
        graphs,
        "_eager",
        lambda envs, records, keys, run_steps, prepare=False: (
            log.append(("eager", prepare)) or [(None, None)] * len(envs)
        ),
    )

    def run(*keys):
        log.clear()
        out = graphs.run([[k] for k in keys], [None] * len(keys), [None] * len(keys), None)
        assert len(out) == len(keys)
        return list(log)

    assert run("a", "a", "a") == [("eager", True)]
    assert run("a", "a", "a") == [("capture", 3)]
    assert run("a", "a", "a") == ["load", "replay"]
    assert run("a", "a") == [("eager", True)], "another size: another key"
    assert run("a", "b", "a") == [("eager", False)], "unequal keys"
    fail.add("c")
    assert run("c", "c") == [("eager", True)]
    assert run("c", "c") == [("capture", 2), ("eager", False)]
    assert run("c", "c") == [("eager", False)], "refused: eager from then on"

    @contextlib.contextmanager
    def timed_out(timeout=None):
        yield False

    monkeypatch.setattr(G.CALLER_CODE, "quiet", timed_out)
    assert run("d") == [("eager", True)]
    assert run("d") == [("eager", False)], "the gate timed out: no capture"
    monkeypatch.undo()
    monkeypatch.setattr(G, "enabled", lambda: True)
    monkeypatch.setattr(graphs, "_capture", capture)
    monkeypatch.setattr(graphs, "_load", lambda cap, envs: log.append("load"))
    monkeypatch.setattr(
        graphs, "_replayed", lambda cap, envs, records: [("raw", "replayed")] * len(envs)
    )
    assert run("d") == [("capture", 1)], "a later call captures"


def _cpu_program_of_one_region(A, fn=graphsage):
    """A CPU program given the region a GPU's has (its steps after the seeds' check): a
    :class:`Chunk` runs it for real on the CPU (``ChunkGraphs.run`` eagerly, as a warm-up
    chunk runs on a GPU), its calls bound on lanes of their own."""
    from gsample.runtime.cuda_graphs import Region

    program = lower(gs.compile(fn).program(A, torch.arange(10)), "torch", Options(), "cpu", wrap)
    program.regions = [Region(program, 1, len(program.steps))]
    return program


@pytest.mark.parametrize("n", [5, 3])
def test_each_call_of_a_chunk_draws_what_it_draws_launched_alone(A, n):
    """``Chunk.launch`` binds call ``j`` with its own arguments and stream ``streams[j]``
    (its batch index: its keys) on a lane of its own: every landed call equals the call
    launched alone with that stream, and calls of equal seeds but other batch indices
    differ (no key shared)."""
    from gsample.runtime import Chunk, land, launch

    program = _cpu_program_of_one_region(A)
    parts = [torch.arange(40 * j, 40 * j + 40) % A.num_nodes for j in range(n)]
    parts[1] = parts[0]  # the same seeds: only their keys tell them apart
    streams = [(9, 0, 20 + j) for j in range(n)]
    chunk_ = Chunk(program, 5)
    try:
        for _ in range(2):  # (the lanes kept between launches)
            flights = chunk_.launch([{"A": A, "seeds": s} for s in parts], streams)
            assert len(flights) == n and len({id(f[0]) for f in flights}) == n
            got = [land(f) for f in flights]
            for j, (s, stream) in enumerate(zip(parts, streams)):
                number, lane = program.acquire()
                try:
                    want = land(launch(lane, {"A": A, "seeds": s}, stream))
                finally:
                    program.release(number)
                assert_same(got[j], want, f"call {j}")
            assert difference(got[0], got[1]) is not None, "batch 20 and 21 draw apart"
    finally:
        chunk_.release()
    assert not program.busy


def test_a_call_of_a_chunk_that_fails_to_start_ends_it_there(A):
    """A bad seed in call ``j`` (its check raises before the graph): the calls before it
    are launched and land as alone, call ``j``'s flight is the error naming the argument."""
    from gsample.runtime import Chunk, land

    program = _cpu_program_of_one_region(A)
    parts = [torch.arange(30 * j, 30 * j + 30) for j in range(4)]
    parts[2] = parts[2].clone()
    parts[2][7] = A.num_nodes + 3
    chunk_ = Chunk(program, 4)
    try:
        flights = chunk_.launch(
            [{"A": A, "seeds": s} for s in parts], [(9, 0, j) for j in range(4)]
        )
        assert len(flights) == 3 and isinstance(flights[2], IndexError)
        assert "cols" in str(flights[2]) or "seeds" in str(flights[2])
        assert all(land(f) is not None for f in flights[:2])
    finally:
        chunk_.release()


def test_a_chunk_capture_gives_call_j_its_own_inputs_and_a_replay_loads_them_in_order(
    A, monkeypatch
):
    """``ChunkGraphs._capture`` and ``_load`` on the CPU (``torch.cuda.graph`` replaced by a
    context that runs its body: what a capture's first replay computes): call ``j``'s steps
    read row ``j`` of the seeds' one static buffer, filled from call ``j``'s seeds, and
    draw what call ``j`` draws alone; a replay's one ``torch.stack`` puts call ``j``'s seeds
    in the row call ``j``'s graph reads."""
    import contextlib
    from types import SimpleNamespace

    from gsample.base import validate as V
    from gsample.runtime import cuda_graphs, land, launch
    from gsample.runtime.chunk import _tensors
    from gsample.runtime.cuda_graphs import ChunkGraphs
    from gsample.runtime.program import _bind, _run, _steps

    class _Graph:
        def replay(self):
            pass

    monkeypatch.setattr(torch.cuda, "CUDAGraph", _Graph)
    monkeypatch.setattr(torch.cuda, "Event", lambda: SimpleNamespace(record=lambda s=None: None))
    monkeypatch.setattr(
        torch.cuda, "current_stream", lambda: SimpleNamespace(synchronize=lambda: None)
    )
    monkeypatch.setattr(torch.cuda, "graph", lambda g, **kw: contextlib.nullcontext())
    monkeypatch.setattr(cuda_graphs, "current_stream", lambda device: None)
    program = _cpu_program_of_one_region(A)
    n = 4
    lanes = [program.acquire() for _ in range(n)]
    try:
        graphs = ChunkGraphs([lane.regions[0] for _, lane in lanes])
        region = program.regions[0]
        parts = [torch.arange(25 * j, 25 * j + 25) for j in range(n)]
        envs, records = [], []
        for j, ((_, lane), s) in enumerate(zip(lanes, parts)):
            env, _ = _bind(lane, {"A": A, "seeds": s}, 9, 0, 30 + j, False)
            _steps(lane.steps[: region.start], env, None)
            envs.append(env)
            records.append(V.Deferred())
        # each call's key buffers ((pinned, device) on a GPU): the capture copies call j's
        keys = [(torch.tensor([7, 30 + j]), torch.zeros(2, dtype=torch.int64)) for j in range(n)]
        seen = []

        def run_steps(steps, work):  # (each call's steps under its own deferred record)
            seen.append((V.DEFERRED.get(), [k[1].tolist() for k in keys]))
            _run(steps, work)

        cap = graphs._capture(envs, records, keys, run_steps)
        assert [r for r, _ in seen] == records, "call j's checks recorded in its own record"
        for j, (_, copied) in enumerate(seen):  # call j's keys copied right before its steps
            assert copied[j] == [7, 30 + j] and all(c == [0, 0] for c in copied[j + 1 :])
        assert [call.keys for call in cap.calls] == keys
        (slot,) = cap.stacked  # the converted seeds
        for j, call in enumerate(cap.calls):
            assert torch.equal(cap.stacked[slot][j], parts[j])
            assert call.statics[slot].data_ptr() == cap.stacked[slot][j].data_ptr()
            number, lane = program.acquire()
            try:
                flight = launch(lane, {"A": A, "seeds": parts[j]}, (9, 0, 30 + j))
            finally:
                program.release(number)
            for out in region.outputs:  # what call j's steps left: call j's alone
                a, b = _tensors(call.outputs[out]), _tensors(flight[1][out])
                assert a and len(a) == len(b), out
                assert all(torch.equal(x, y) for x, y in zip(a, b)), f"call {j}, slot {out}"
            land(flight)
        later = [[*env] for env in envs]
        for j, env in enumerate(later):
            env[slot] = parts[j] + 100
        graphs._load(cap, later)
        for j, call in enumerate(cap.calls):
            assert torch.equal(call.statics[slot], parts[j] + 100), f"row {j}"
        flags = [(torch.tensor(j == 2), IndexError, f"cols of {j}", ()) for j in range(n)]
        for call, flag in zip(cap.calls, flags):
            call.failures = [flag]
        records = [V.Deferred() for _ in range(n)]
        cap.shared.synchronize()
        graphs._replayed(cap, later, records)  # each call's flags in its own record
        assert not cap.shared.waited, "the replay's event recorded: the first read-back waits"
        assert [r.failures for r in records] == [[f] for f in flags]
        for key in keys:
            key[1].zero_()
        graphs._eager(later, records, keys, lambda steps, env: None)
        assert [k[1].tolist() for k in keys] == [[7, 30 + j] for j in range(n)]
    finally:
        for number, _ in lanes:
            program.release(number)
