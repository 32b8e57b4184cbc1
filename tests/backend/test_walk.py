"""``A.random_walk`` on the torch backend: structure, determinism, compiled == eager, errors.

Structure is checked against the graph's own edge list (a set of ``(src, dst)`` pairs), not
with another gsample operator. Distributions are in ``test_walk_statistics.py``. Every test
runs on both CPU paths: the native walk (``walk_native``, when it builds) and the torch code
(``GSAMPLE_NATIVE_CPU=0``); ``test_walk_native.py`` compares the two bit for bit.
"""

import itertools

import pytest
import torch

import gsample as gs
from gsample.backend.torch import walk_native
from gsample.backend.torch.walk import has_edge, sorted_rows
from gsample.formats.csc import CSC

VARIANTS = {
    "deepwalk": {},
    "weighted": {"probs": "values"},
    "node2vec": {"p": 2.0, "q": 0.5},
    "node2vec-weighted": {"p": 0.25, "q": 4.0, "probs": "values"},
    "ppr": {"stop_prob": 0.15},
    "restart": {"restart_prob": 0.3},
    "jump": {"jump_prob": 0.1},
    "all": {
        "p": 3.0,
        "q": 0.7,
        "stop_prob": 0.05,
        "restart_prob": 0.1,
        "jump_prob": 0.1,
        "probs": "values",
    },
}


@pytest.fixture(autouse=True, params=["native", "torch"])
def cpu_path(request, monkeypatch):
    """The CPU walk under test: the native one, or the torch code."""
    if request.param == "torch":
        monkeypatch.setenv("GSAMPLE_NATIVE_CPU", "0")
    elif not walk_native.available():
        pytest.skip("no native CPU walk (no C++ compiler)")
    return request.param


def options(A, name):
    kw = dict(VARIANTS[name])
    if kw.get("probs") == "values":
        kw["probs"] = A.values
    return kw


@pytest.fixture(scope="module")
def graph():
    return gs.datasets.rmat(3000, 40000, seed=2, weighted=True)


def edge_set(A):
    src, dst, _ = A.edges()
    return set(zip(src.tolist(), dst.tolist()))


def check_walks(A, walks, seeds, length, edges, teleports=False):
    """Shape, seeds in column 0, -1 only as a suffix, every step an in-edge (or, with
    restart / jump, a teleport)."""
    assert walks.shape == (seeds.numel(), length + 1) and walks.dtype == torch.int64
    assert torch.equal(walks[:, 0], seeds)
    stopped = walks < 0
    assert not bool((stopped[:, :-1] & ~stopped[:, 1:]).any()), "-1 must fill a walk's end"
    assert bool((walks < A.num_nodes).all())
    steps = 0
    for row in walks.tolist():
        for v, x in itertools.pairwise(row):
            if x < 0:
                break
            steps += 1
            if not teleports:
                assert (x, v) in edges, f"step {v} -> {x} is not an in-edge of {v}"
    return steps


@pytest.mark.parametrize("name", list(VARIANTS))
def test_walks_follow_in_edges(graph, name):
    kw = options(graph, name)
    seeds = torch.randint(0, graph.num_nodes, (300,), generator=torch.Generator().manual_seed(0))
    gs.manual_seed(1)
    walks = graph.random_walk(seeds, 12, **kw)
    teleports = bool(kw.get("restart_prob") or kw.get("jump_prob"))
    steps = check_walks(graph, walks, seeds, 12, edge_set(graph), teleports)
    assert steps > 300, "the walks went somewhere"
    # a walk stops only at a node without in-edges (or by stop_prob)
    deg = graph.sum(axis=0) > 0
    last = walks.gather(1, ((walks >= 0).sum(1) - 1).unsqueeze(1)).squeeze(1)
    short = walks[:, -1] < 0
    if not kw.get("stop_prob"):
        assert not bool(deg[last[short]].any())


def test_dead_end_and_zero_length(graph):
    deg = graph.sum(axis=0)
    dead = int(torch.nonzero(deg == 0)[0])
    walks = graph.random_walk(torch.tensor([dead, dead]), 5)
    assert walks.tolist() == [[dead, -1, -1, -1, -1, -1]] * 2
    assert graph.random_walk(torch.tensor([0, 1]), 0).tolist() == [[0], [1]]
    assert graph.random_walk(torch.tensor([], dtype=torch.int64), 4).shape == (0, 5)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_same_seed_same_walks_and_positions_independent(graph, name):
    kw = options(graph, name)
    seeds = torch.full((200,), 7)
    gs.manual_seed(3)
    a = graph.random_walk(seeds, 10, **kw)
    gs.manual_seed(3)
    b = graph.random_walk(seeds, 10, **kw)
    assert torch.equal(a, b)
    assert len({tuple(r) for r in a.tolist()}) > 100, "repeated seeds walk independently"
    c = graph.random_walk(seeds, 10, **kw)  # the next op ordinal
    assert not torch.equal(a, c)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_compiled_equals_eager(graph, name):
    kw = options(graph, name)
    probs = kw.pop("probs", None)

    def walk(A, seeds, length=9):
        return A.random_walk(seeds, length, probs=None if probs is None else A.values, **kw)

    seeds = torch.randint(0, graph.num_nodes, (257,), generator=torch.Generator().manual_seed(5))
    compiled = gs.compile(walk)
    for s in (0, 11):
        gs.manual_seed(s)
        want = walk(graph, seeds)
        gs.manual_seed(s)
        assert torch.equal(compiled(graph, seeds), want)


def test_compiled_alias_tables_are_hoisted_or_per_call(graph):
    """Weights of the graph alone become a CACHED alias table (once per graph); weights passed
    as an argument are tabled per call. Both give eager's walks."""
    from gsample.ir import Op

    def static(A, seeds):
        return A.random_walk(seeds, 6, probs=A.values**2)

    def dynamic(A, seeds, w):
        return A.random_walk(seeds, 6, probs=w)

    seeds = torch.arange(100)
    ops = [n.op for n in gs.compile(static).program(graph, seeds).nodes]
    assert Op.CACHED in ops and Op.ALIAS_TABLE not in ops
    w = torch.rand(graph.num_edges, generator=torch.Generator().manual_seed(0))
    ops = [n.op for n in gs.compile(dynamic).program(graph, seeds, w).nodes]
    assert Op.ALIAS_TABLE in ops
    for fn, args in ((static, ()), (dynamic, (w,))):
        gs.manual_seed(2)
        want = fn(graph, seeds, *args)
        gs.manual_seed(2)
        assert torch.equal(gs.compile(fn)(graph, seeds, *args), want)


def test_walks_in_a_loader_equal_eager(graph):
    def walk(A, seeds):
        return A.random_walk(seeds, 5, p=2.0, q=0.5)

    seeds = torch.arange(200)
    got = [
        b.out
        for b in gs.DataLoader(graph, gs.compile(walk), seeds, batch_size=64, shuffle=False, seed=4)
    ]
    want = [b.out for b in gs.DataLoader(graph, walk, seeds, batch_size=64, shuffle=False, seed=4)]
    assert len(got) == 4 and all(torch.equal(a, b) for a, b in zip(got, want))
    # super-batched: one walk over two mini-batches' walkers at a time, the same walks
    sb = [
        b.out
        for b in gs.DataLoader(
            graph, walk, seeds, batch_size=64, shuffle=False, seed=4, super_batch=2
        )
    ]
    assert len(sb) == 4 and all(torch.equal(a, b) for a, b in zip(sb, want))


# ----------------------------------------------------------------------------- errors
BAD = [
    ({"seeds": torch.tensor([0.5])}, TypeError, "seeds: node ids must be an integer tensor"),
    ({"seeds": torch.tensor([[0]])}, ValueError, "seeds: node ids must be 1-D"),
    ({"seeds": torch.tensor([3000])}, IndexError, "seeds: node id 3000 is out of range"),
    ({"seeds": torch.tensor([-1])}, IndexError, "seeds: node id -1 is negative"),
    ({"length": -1}, ValueError, "length: must be >= 0"),
    ({"length": 2.0}, TypeError, "length: must be an int"),
    ({"length": 2**31}, ValueError, r"length: must be < 2\*\*31"),
    (
        {"seeds": torch.zeros(4096, dtype=torch.int64), "length": 2**31 - 1},
        ValueError,
        "length: 4096 walks of 2147483647 steps would need",
    ),
    ({"p": 0.0}, ValueError, "p: must be finite and > 0"),
    ({"q": float("nan")}, ValueError, "q: must be finite and > 0"),
    ({"q": "1"}, TypeError, "q: must be a positive number"),
    ({"stop_prob": 1.5}, ValueError, "stop_prob: must be a probability in"),
    ({"restart_prob": -0.1}, ValueError, "restart_prob: must be a probability in"),
    ({"jump_prob": True}, TypeError, "jump_prob: must be a number"),
    (
        {"stop_prob": 0.6, "jump_prob": 0.6},
        ValueError,
        "stop_prob, restart_prob, jump_prob: must sum to at most 1",
    ),
    ({"probs": torch.ones(5)}, ValueError, r"probs: expected one probability per edge"),
    ({"probs": "negative"}, ValueError, "probs: contains negative values"),
    ({"probs": "nan"}, ValueError, "probs: contains NaN or infinite values"),
    ({"probs": "int"}, TypeError, "probs: probabilities must be floating point"),
    (
        {"probs": "zero-column"},
        ValueError,
        "probs: column .* has edges but all its probabilities are zero",
    ),
]


def _bad_args(A, bad):
    args = {"seeds": torch.tensor([0, 1]), "length": 3, **bad}
    p = args.get("probs")
    if isinstance(p, str):
        w = A.values.clone()
        if p == "negative":
            w[3] = -1.0
        elif p == "nan":
            w[3] = float("nan")
        elif p == "int":
            w = torch.ones(A.num_edges, dtype=torch.int64)
        else:
            ptr = A.csc.indptr
            c = int(torch.nonzero(ptr[1:] > ptr[:-1])[0])
            w[ptr[c] : ptr[c + 1]] = 0.0
        args["probs"] = w
    return args


@pytest.mark.parametrize("bad, exc, match", BAD, ids=[m[:30] for _, _, m in BAD])
def test_bad_arguments_raise_naming_them(graph, bad, exc, match):
    args = _bad_args(graph, bad)
    seeds, length = args.pop("seeds"), args.pop("length")
    with pytest.raises(exc, match=match):
        graph.random_walk(seeds, length, **args)
    # compiled: tensors are checked at the program's boundary, static values when traced
    probs = args.pop("probs", None)
    if probs is None:

        def fn(A, seeds):
            return A.random_walk(seeds, length, **args)

        call = (graph, seeds)
    else:

        def fn(A, seeds, w):
            return A.random_walk(seeds, length, probs=w, **args)

        call = (graph, seeds, probs)
    with pytest.raises(exc, match=match):
        gs.compile(fn)(*call)


def test_sub_matrix_is_refused(graph):
    with pytest.raises(ValueError, match="A: random_walk needs the whole graph"):
        graph[:, torch.arange(5)].random_walk(torch.tensor([0]), 3)


# ----------------------------------------------------------------------------- edge tests
def test_edge_test_sorts_an_unsorted_csc_once():
    """A CSC whose columns keep rows unsorted: the node2vec edge test still finds every edge
    (the rows are sorted once, for the test only) and no non-edge."""
    g = torch.Generator().manual_seed(0)
    A = gs.datasets.rmat(500, 6000, seed=4)
    csc = A.csc
    perm = torch.randperm(csc.nnz, generator=g)
    col = csc.edge_cols()
    order = torch.argsort(col[perm], stable=True)  # shuffled within each column
    shuffled = CSC(csc.num_nodes, csc.indptr, csc.rows[perm][order])
    rows, keys = sorted_rows(shuffled)
    assert sorted_rows(shuffled)[1] is keys  # cached
    assert not torch.equal(shuffled.rows, rows)
    src, dst = shuffled.rows, col
    assert bool(has_edge(keys, 500, src, dst).all())
    fake_src = torch.randint(0, 500, (5000,), generator=g)
    fake_dst = torch.randint(0, 500, (5000,), generator=g)
    edges = set(zip(src.tolist(), dst.tolist()))
    want = torch.tensor([(s, d) in edges for s, d in zip(fake_src.tolist(), fake_dst.tolist())])
    assert torch.equal(has_edge(keys, 500, fake_src, fake_dst), want)
    # node2vec on the unsorted CSC walks along edges
    walks = gs.Matrix(shuffled).random_walk(torch.arange(100), 8, p=0.5, q=2.0)
    check_walks(gs.Matrix(shuffled), walks, torch.arange(100), 8, edges)
