"""``A.temporal_walk`` / ``A.temporal_walk_edges`` on the torch backend, against a brute-force
reference written here (every allowed in-edge of every step enumerated from the edge list):
every step's edge exists and respects the time order, a walk stops exactly when no edge is
allowed, the law of a walk is uniform step by step (a chi-square test on the joint law of two
steps, p-values printed), determinism, compiled == eager, super-batched == one at a time,
and bad input raising errors that name the argument. The CUDA kernel's source is checked
against this code in ``test_cuda_temporal_walk.py``."""

import collections
import functools

import pytest
import torch
from conftest import snap_path
from helpers import assert_same, check_compiled_equals_eager

import gsample as gs
from gsample.backend import get_backend, resolve
from gsample.backend.torch import temporal_walk as torch_walk
from gsample.ir import Op

scipy_stats = pytest.importorskip("scipy.stats")

P_MIN = 0.01


# ----------------------------------------------------------------------------- the reference
def _edge_table(A, et) -> dict:
    """In-edges by destination: ``v -> [(edge id, source, time)]`` (``et``: A's edge order)."""
    src, dst, eid = A.edges()
    table = collections.defaultdict(list)
    for s, d, e, t in zip(src.tolist(), dst.tolist(), eid.tolist(), et.tolist(), strict=True):
        table[d].append((e, s, t))
    return table


def _allows(t, bound, direction, strict) -> bool:
    if bound is None:
        return True
    if direction == "later":
        return t > bound if strict else t >= bound
    return t < bound if strict else t <= bound


def allowed(table, v, bound, direction, strict) -> dict:
    """The allowed in-edges of ``v`` after bound ``bound``: ``edge id -> (source, time)``."""
    return {e: (s, t) for e, s, t in table[v] if _allows(t, bound, direction, strict)}


def check_walks(table, seeds, time, walks, eids, length, direction, strict) -> tuple:
    """Every step of every walk against the reference: its edge allowed, its node the edge's
    source, a stop exactly where no edge is allowed; returns ``(steps, stops)`` taken."""
    W = seeds.numel()
    assert walks.shape == (W, length + 1) and walks.dtype == torch.int64
    assert eids.shape == (W, length) and eids.dtype == torch.int64
    steps = stops = 0
    for w, (row, erow) in enumerate(zip(walks.tolist(), eids.tolist(), strict=True)):
        v, bound = int(seeds[w]), None if time is None else time[w].item()
        assert row[0] == v
        for s in range(length):
            ok = allowed(table, v, bound, direction, strict)
            if not ok:
                assert row[s + 1 :] == [-1] * (length - s), (w, s, row)
                assert erow[s:] == [-1] * (length - s), (w, s, erow)
                stops += 1
                break
            e = erow[s]
            assert e in ok, f"walker {w} step {s}: edge {e} is not allowed at {v} after {bound}"
            assert row[s + 1] == ok[e][0]
            v, bound = ok[e]
            steps += 1
    return steps, stops


# ----------------------------------------------------------------------------- graphs
def timed_graph(N=200, E=3000, seed=0, floats=False, span=40):
    """An R-MAT graph with many parallel in-edges and tied times (integer, or float64 with
    ties too); its times in its edge order."""
    A = gs.datasets.rmat(N, E, seed=seed)
    g = torch.Generator().manual_seed(seed)
    by_id = torch.randint(0, span, (A.num_edges,), generator=g)
    if floats:
        by_id = by_id.double() / 3 - 4.5
    A = A.with_edge_time(by_id)
    return A, A.edge_time[A.edges()[2]]


@pytest.fixture(scope="module", params=["int", "float"])
def graph(request):
    return timed_graph(floats=request.param == "float")


def _seeds(A, W=150, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, A.num_nodes, (W,), generator=g)


def _times(et, W, seed=2):
    """Start times across the edge times' range (some before every edge, some after)."""
    g = torch.Generator().manual_seed(seed)
    lo, hi = float(et.min()) - 2, float(et.max()) + 2
    t = torch.rand(W, generator=g, dtype=torch.float64) * (hi - lo) + lo
    return t if et.is_floating_point() else t.round().to(torch.int64)


def _walk_both(A, seeds, length, et, **kw):
    """The walks and their edge ids, drawn with the same key."""
    gs.manual_seed(5)
    walks = A.temporal_walk(seeds, length, et, **kw)
    gs.manual_seed(5)
    eids = A.temporal_walk_edges(seeds, length, et, **kw)
    return walks, eids


# ----------------------------------------------------------------------------- structure
@pytest.mark.parametrize("direction", ["later", "earlier"])
@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("timed", [False, True], ids=["no-time", "time"])
def test_every_step_is_an_allowed_edge_and_walks_stop_exactly_when_none_is(
    graph, direction, strict, timed
):
    A, et = graph
    seeds = _seeds(A)
    time = _times(et, seeds.numel()) if timed else None
    L = 8
    walks, eids = _walk_both(A, seeds, L, et, time=time, direction=direction, strict=strict)
    steps, stops = check_walks(_edge_table(A, et), seeds, time, walks, eids, L, direction, strict)
    assert steps > 2 * seeds.numel(), "the walks went somewhere"
    assert stops > 0, "some walks ran out of allowed edges"
    assert bool((walks[:, 4] >= 0).any()), "some walks took several steps"


def test_step_times_are_monotone_and_edge_ids_give_the_nodes(graph):
    """The steps' times (``A.edge_time[ids]``) never go back (``"later"``), never forward
    (``"earlier"``), strictly with ``strict``; each step's node is its edge's source."""
    A, et = graph
    src_by_id = torch.empty_like(A.edges()[0])
    src_by_id[A.edges()[2]] = A.edges()[0]
    seeds = _seeds(A, 300, seed=3)
    for direction, strict in (("later", False), ("later", True), ("earlier", True)):
        walks, eids = _walk_both(A, seeds, 10, et, direction=direction, strict=strict)
        t = A.edge_time[eids.clamp(min=0)]
        both = (eids[:, 1:] >= 0) & (eids[:, :-1] >= 0)
        diff = t[:, 1:] - t[:, :-1]
        sign = 1 if direction == "later" else -1
        good = (sign * diff > 0) if strict else (sign * diff >= 0)
        assert bool(good[both].all())
        taken = eids >= 0
        assert torch.equal(taken, walks[:, 1:] >= 0)
        assert torch.equal(src_by_id[eids[taken]], walks[:, 1:][taken])


def test_the_first_step_respects_the_start_time():
    """Without a later step's bound to blur it: the first step of every walker is after
    (before) ``time``, and a walker whose node has no edge then stops at once."""
    A, et = timed_graph(seed=4)
    table = _edge_table(A, et)
    seeds = _seeds(A, 400, seed=5)
    time = _times(et, 400, seed=6)
    for direction in ("later", "earlier"):
        walks, eids = _walk_both(A, seeds, 1, et, time=time, direction=direction)
        for w in range(400):
            ok = allowed(table, int(seeds[w]), time[w].item(), direction, False)
            assert (int(eids[w, 0]) in ok) if ok else int(walks[w, 1]) == -1


def test_no_time_and_ties_later_is_every_edge_reachable():
    """All edges of one time, no start time: every step may take every in-edge (``"later"``,
    not strict), so a walk stops only at a node without in-edges; strictly later, a walk
    takes one step at most."""
    A = gs.datasets.rmat(100, 1500, seed=7)
    et = torch.full((A.num_edges,), 3)
    seeds = _seeds(A, 200, seed=8)
    gs.manual_seed(0)
    w = A.temporal_walk(seeds, 6, et)
    deg = A.degree(axis=0)
    last = w.gather(1, ((w >= 0).sum(1) - 1).unsqueeze(1)).squeeze(1)
    assert not bool(deg[last[w[:, -1] < 0]].any())
    gs.manual_seed(0)
    s = A.temporal_walk(seeds, 6, et, strict=True)
    assert bool((s[:, 2:] == -1).all()) and torch.equal(s[:, 1] >= 0, deg[seeds] > 0)


def test_shapes_and_edge_cases(graph):
    A, et = graph
    none = torch.empty(0, dtype=torch.int64)
    assert A.temporal_walk(none, 4, et).shape == (0, 5)
    assert A.temporal_walk_edges(none, 4, et).shape == (0, 4)
    assert A.temporal_walk(torch.tensor([3, 4]), 0, et).tolist() == [[3], [4]]
    assert A.temporal_walk_edges(torch.tensor([3, 4]), 0, et).shape == (2, 0)
    empty = gs.Matrix.from_edge_index(torch.zeros(2, 0, dtype=torch.int64), num_nodes=5)
    got = empty.temporal_walk(torch.tensor([1, 2]), 3, torch.zeros(0))
    assert got.tolist() == [[1, -1, -1, -1], [2, -1, -1, -1]]


def test_a_graph_without_edge_ids_gives_csc_positions():
    """A CSC without stored edge ids: the ids are the edges' CSC positions (``edges()[2]``)."""
    A, et = timed_graph(seed=9)
    plain = gs.Matrix.from_csc(A.csc.indptr, A.csc.rows)
    assert plain.csc.eids is None
    seeds = _seeds(A, 100, seed=10)
    walks, eids = _walk_both(plain, seeds, 6, et)
    check_walks(_edge_table(plain, et), seeds, None, walks, eids, 6, "later", False)


# ----------------------------------------------------------------------------- the law
def _exact_law(table, v0, t0, direction, strict, length, stale=False) -> dict:
    """The probability of every outcome of a walk from ``v0`` at time ``t0``: the tuple of
    its edge ids (shorter when it stops), each step uniform among the allowed edges.
    ``stale``: a wrong law, every step bounded by ``t0`` (the bound never moved on)."""
    law = {}

    def grow(v, bound, path, p):
        ok = allowed(table, v, bound, direction, strict)
        if len(path) == length or not ok:
            law[tuple(path)] = law.get(tuple(path), 0.0) + p
            return
        for e, (s, t) in ok.items():
            grow(s, t0 if stale else t, path + [e], p / len(ok))

    grow(v0, t0, [], 1.0)
    return law


@pytest.mark.parametrize(("direction", "strict", "t0"), [("later", False, 2), ("earlier", True, 6)])
def test_two_steps_follow_the_uniform_law(direction, strict, t0):
    """Many walkers from one node and time, two steps: the joint law of their edge pairs
    (every outcome's probability enumerated: uniform among the allowed edges at each step,
    the second's set depending on the first edge's time) by a chi-square test."""
    g = torch.Generator().manual_seed(11)
    N, E = 6, 48
    ei = torch.stack(
        [torch.randint(0, N, (E,), generator=g), torch.randint(0, N, (E,), generator=g)]
    )
    A = gs.Matrix.from_edge_index(ei, num_nodes=N, edge_time=torch.randint(0, 9, (E,), generator=g))
    et = A.edge_time[A.edges()[2]]
    table = _edge_table(A, et)
    v0 = int(torch.argmax(A.degree(axis=0)))
    law = _exact_law(table, v0, t0, direction, strict, 2)
    M = 40_000
    gs.manual_seed(12)
    eids = A.temporal_walk_edges(
        torch.full((M,), v0), 2, et, time=torch.full((M,), t0), direction=direction, strict=strict
    )
    seen = collections.Counter(tuple(e for e in row if e >= 0) for row in eids.tolist())
    assert set(seen) <= set(law), "an outcome the law gives probability 0"
    outcomes = sorted(law, key=lambda o: law[o])
    # outcomes expected fewer than 5 times are pooled (the chi-square approximation)
    small = [o for o in outcomes if law[o] * M < 5]
    big = [o for o in outcomes if law[o] * M >= 5]
    obs = [seen[o] for o in big] + ([sum(seen[o] for o in small)] if small else [])
    exp = [law[o] * M for o in big] + ([sum(law[o] for o in small) * M] if small else [])
    p = scipy_stats.chisquare(obs, exp).pvalue
    print(
        f"temporal walk, 2 steps from {v0} ({direction}, strict={strict}): "
        f"{len(law)} outcomes, chi-square p = {p:.3g}"
    )
    assert len(big) > 10 and p > P_MIN
    # power: the law of a walk whose bound stays the start time is rejected
    stale = _exact_law(table, v0, t0, direction, strict, 2, stale=True)
    wrong = [stale.get(o, 0.0) + 1e-12 for o in big]
    wrong = [x * sum(obs[: len(big)]) / sum(wrong) for x in wrong]
    assert scipy_stats.chisquare(obs[: len(big)], wrong).pvalue < P_MIN


# ----------------------------------------------------------------------------- determinism
def test_same_seed_same_walks_and_repeats_walk_independently(graph):
    A, et = graph
    node = int(torch.argmax(A.degree(axis=0)))
    seeds = torch.full((200,), node)
    gs.manual_seed(3)
    a = A.temporal_walk(seeds, 6, et)
    gs.manual_seed(3)
    assert torch.equal(a, A.temporal_walk(seeds, 6, et))
    assert len({tuple(r) for r in a.tolist()}) > 100, "repeated seeds walk independently"
    assert not torch.equal(a, A.temporal_walk(seeds, 6, et)), "the next op ordinal"


def _program(A, seeds, et, t, length=7):
    return (
        A.temporal_walk(seeds, length, et, time=t),
        A.temporal_walk_edges(seeds, length, et, time=t, direction="earlier", strict=True),
        A.temporal_walk(seeds, length, et, direction="earlier"),
    )


def test_compiled_equals_eager(graph):
    A, et = graph
    seeds = _seeds(A, 120, seed=13)
    t = _times(et, 120, seed=14)
    check_compiled_equals_eager(_program, A, seeds, et, t, distinct=True)


def test_super_batched_equals_one_at_a_time():
    """gs.DataLoader's super-batches (3 mini-batches a run, the last run short) draw what the
    mini-batches draw one by one: each batch's walkers with its key and their positions."""
    A, et = timed_graph(N=300, E=4000, seed=15)
    node_time = torch.randint(0, 40, (300,), generator=torch.Generator().manual_seed(16))

    def sampler(A, seeds):  # the times: captured constants, a start time per seed
        return _program(A, seeds, et, node_time[seeds], length=5)

    seeds = torch.arange(100)
    one = [b.out for b in gs.DataLoader(A, sampler, seeds, 16, shuffle=False, seed=7)]
    loader = gs.DataLoader(  # the times are captured constants: fixed while the loader runs
        A, gs.compile(sampler), seeds, 16, shuffle=False, seed=7, super_batch=3, fixed_state=True
    )
    assert loader.super_batch_size == 3
    got = [b.out for b in loader]
    assert len(got) == len(one) == 7
    for i, (g, o) in enumerate(zip(got, one, strict=True)):
        assert_same(g, o, f"super-batched, batch {i}")


# ----------------------------------------------------------------------------- bad input
BAD = [
    ({"seeds": torch.tensor([0, -1])}, IndexError, "seeds: node id -1 is negative"),
    ({"seeds": torch.tensor([0, 200])}, IndexError, "seeds: node id 200 is out of range"),
    ({"seeds": torch.tensor([2**40])}, IndexError, r"seeds: node id 1099511627776 is out"),
    ({"seeds": torch.tensor([True])}, TypeError, "seeds: node ids must be an integer"),
    ({"seeds": torch.zeros(2, 2, dtype=torch.int64)}, ValueError, "seeds: node ids must be 1-D"),
    ({"edge_time": "short"}, ValueError, r"edge_time: expected one time per edge"),
    ({"edge_time": "bool"}, TypeError, "edge_time: times must be integer or floating point"),
    ({"edge_time": "nan"}, ValueError, "edge_time: contains NaN"),
    ({"time": "nan"}, ValueError, "time: contains NaN"),
    ({"time": torch.tensor([True, False])}, TypeError, "time: times must be integer"),
    ({"time": torch.tensor([1, 2, 3])}, ValueError, r"time: expected one time per seed"),
    ({"time": "int"}, TypeError, "time: dtype .* but edge_time is"),
    ({"length": -1}, ValueError, "length"),
    ({"length": 2**31}, ValueError, "length: must be < 2\\*\\*31"),
    ({"direction": "sideways"}, ValueError, "direction: must be one of"),
    ({"strict": "yes"}, TypeError, "strict"),
]


def _bad_args(A, et, change: dict) -> dict:
    """The arguments of a good call with ``change`` made (edge times named by a word)."""
    kw = {"seeds": torch.tensor([0, 1]), "length": 3, "edge_time": et, "time": None}
    kw.update(change)
    named = {
        "short": et[:-1],
        "bool": torch.ones(et.numel(), dtype=torch.bool),
        "nan": torch.where(torch.arange(et.numel()) == 7, float("nan"), et.double()),
    }
    if isinstance(kw["edge_time"], str):
        kw["edge_time"] = named[kw["edge_time"]]
    if isinstance(kw["time"], str):  # with floating-point edge times: NaN, or integers
        kw["edge_time"] = et.double()
        kw["time"] = {"nan": torch.tensor([1.0, float("nan")]), "int": torch.tensor([1, 2])}[
            kw["time"]
        ]
    return kw


@pytest.mark.parametrize(("change", "exc", "match"), BAD, ids=[str(b[0])[:40] for b in BAD])
@pytest.mark.parametrize("method", ["temporal_walk", "temporal_walk_edges"])
def test_bad_input_raises_naming_the_argument(change, exc, match, method):
    A, et = timed_graph(seed=17)
    kw = _bad_args(A, et, change)
    with pytest.raises(exc, match=match):
        getattr(A, method)(**kw)


@pytest.mark.parametrize("bad", [-1, 200, 2**40])
def test_bad_seeds_raise_in_a_compiled_sampler_and_the_next_call_is_unharmed(bad):
    A, et = timed_graph(seed=17)
    fn = gs.compile(lambda A, seeds, et: A.temporal_walk(seeds, 4, et))
    with pytest.raises(IndexError, match="seeds: node id"):
        fn(A, torch.tensor([0, bad, 3]), et)
    gs.manual_seed(1)
    got = fn(A, torch.tensor([0, 2, 3]), et)
    gs.manual_seed(1)
    assert torch.equal(got, A.temporal_walk(torch.tensor([0, 2, 3]), 4, et))


def test_a_sub_matrix_is_refused():
    A, et = timed_graph(seed=17)
    with pytest.raises(ValueError, match="A: temporal_walk needs the whole graph"):
        A[:, torch.tensor([0, 1])].temporal_walk(torch.tensor([0]), 2, et[:0])


def test_the_nan_check_of_edge_times_sees_an_in_place_change():
    """A graph's edge times are read once for NaN while unchanged; changed in place, again."""
    A, et = timed_graph(seed=18, floats=True)
    et = et.clone()
    A.temporal_walk(torch.tensor([0]), 2, et)
    et[5] = float("nan")
    with pytest.raises(ValueError, match="edge_time: contains NaN"):
        A.temporal_walk(torch.tensor([0]), 2, et)


# ----------------------------------------------------------------------------- backends
def test_the_cuda_backend_registers_kernels_and_runs_a_cpu_graph_on_the_torch_code():
    """The CUDA backend has the kernel for both ops (on the CSC); a CPU graph under
    ``use_backend("cuda")`` runs the torch code: the same walks."""
    from gsample.backend.cuda import temporal_walk as cuda_walk

    cuda = get_backend("cuda")
    A, et = timed_graph(seed=19)
    assert resolve(cuda, Op.TEMPORAL_WALK, A.csc).fn is cuda_walk.temporal_walk
    assert resolve(cuda, Op.TEMPORAL_WALK_EDGES, A.csc).fn is cuda_walk.temporal_walk_edges
    assert cuda.impl(Op.TEMPORAL_WALK).checks == ("seeds",)
    inputs = {"A": A.csc, "seeds": torch.tensor([0])}
    assert resolve(cuda, Op.TEMPORAL_WALK, A.csc, inputs=inputs).fn is torch_walk.temporal_walk
    seeds = _seeds(A, 50, seed=20)
    gs.manual_seed(0)
    with gs.use_backend("cuda"):
        a = A.temporal_walk(seeds, 5, et, direction="earlier")
        with pytest.raises(IndexError, match="seeds: node id 200 is out of range"):
            A.temporal_walk(torch.tensor([200]), 5, et)
    gs.manual_seed(0)
    assert torch.equal(a, A.temporal_walk(seeds, 5, et, direction="earlier"))


# ----------------------------------------------------------------------------- CollegeMsg
@pytest.fixture(scope="module")
def college():
    """SNAP's CollegeMsg (skipped when ../shared/data lacks it)."""
    return gs.datasets.read_snap(snap_path("CollegeMsg.txt.gz"))


def test_collegemsg_walks_respect_the_message_times(college):
    """SNAP's CollegeMsg (1,899 users, 59,835 timestamped messages, parallel edges): walks
    forward and back in time along messages, checked step by step against the reference."""
    A = college
    et = A.edge_time[A.edges()[2]]
    g = torch.Generator().manual_seed(21)
    seeds = torch.randint(0, A.num_nodes, (150,), generator=g)
    start = torch.sort(A.edge_time).values[A.num_edges // 4].repeat(150)  # a quarter in
    table = _edge_table(A, et)
    for direction in ("later", "earlier"):
        walks, eids = _walk_both(A, seeds, 10, et, time=start, direction=direction)
        steps, _ = check_walks(table, seeds, start, walks, eids, 10, direction, False)
        assert steps > 150


def test_compiled_on_collegemsg_equals_eager(college):
    A = college
    et = A.edge_time[A.edges()[2]]
    fn = functools.partial(_program, length=6)
    seeds = torch.arange(0, A.num_nodes, 19)
    start = A.edge_time[torch.randperm(A.num_edges, generator=torch.Generator().manual_seed(22))]
    check_compiled_equals_eager(fn, A, seeds, et, start[: seeds.numel()])


def test_walks_of_the_transpose_follow_out_edges_forward_in_time():
    """CTDNE's direction: ``A.T`` walks along ``A``'s out-edges, each message no earlier
    than the one before (``A.edge_time[A.T.edges()[2]]``: the transpose keeps edge ids)."""
    A, _ = timed_graph(seed=23)
    T = A.T
    et = A.edge_time[T.edges()[2]]
    seeds = _seeds(A, 200, seed=24)
    walks, eids = _walk_both(T, seeds, 6, et)
    src, dst, eid = A.edges()
    by_id = {e: (s, d) for s, d, e in zip(src.tolist(), dst.tolist(), eid.tolist(), strict=True)}
    for row, erow in zip(walks.tolist(), eids.tolist(), strict=True):
        times = [A.edge_time[e].item() for e in erow if e >= 0]
        assert times == sorted(times)
        for s, e in enumerate(x for x in erow if x >= 0):
            assert by_id[e] == (row[s], row[s + 1]), "an out-edge of A, in its direction"
    assert int((eids >= 0).sum()) > 400
