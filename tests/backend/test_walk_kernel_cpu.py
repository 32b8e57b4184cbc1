"""``kernels/walk.cu``'s logic on the CPU: the kernel source, compiled as C++ with a few
definitions standing in for CUDA's (one thread runs every walker), must give the torch
reference's walks bit for bit. CI has no GPU; this catches a kernel that drifts from
``gsample/backend/torch/walk.py`` (draw slots, comparisons, alias and edge tests) without
one. The GPU comparison itself is ``test_cuda_walk.py``.

A UVA graph's GPU cache (``slot``, ``crows``, ``counters``: :mod:`gsample.formats.cache`) is
tested here too: a cache of altered rows shows which reads it serves (the walks are the
reference's on the graph with those rows), and its counters add every row read and those it
served."""

import ctypes
from dataclasses import replace

import pytest
import torch
from helpers import CUDA_AS_CPP, CXX, build_cpp

import gsample as gs
from gsample.backend.torch import walk as reference
from gsample.backend.torch.alias import alias_table
from gsample.base.random import BatchKeys, key_prefix, op_key, signed
from gsample.formats import cache as C

# one thread runs every walker: a warp of one lane, whose missing lanes add nothing to its
# sums; the kernel compiled to read a GPU cache (as for a UVA graph with one; without a
# cache's arrays it walks as compiled without)
SHIM = (
    CUDA_AS_CPP
    + "template <typename T> static inline T __shfl_down_sync(unsigned, T, int) { return T(0); }\n"
    + "#define GS_WALK_CACHE 1\n"
    + '#include "walk.cu"\n'
)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    if CXX is None:
        pytest.skip("no C++ compiler")
    lib = tmp_path_factory.mktemp("walk_cpu") / "libwalk.so"
    done = build_cpp(SHIM, lib, "-shared", "-fPIC")
    assert done.returncode == 0, done.stderr
    return ctypes.CDLL(str(lib)).gs_random_walk


@pytest.fixture(scope="module")
def narrow_kernel(tmp_path_factory):
    """The kernel compiled for int32 rows (``GS_ROW=int``), as the host launches it for a UVA
    graph that keeps its rows, and its GPU cache's, as int32
    (``gsample.backend.cuda.extract.rows_read``)."""
    if CXX is None:
        pytest.skip("no C++ compiler")
    lib = tmp_path_factory.mktemp("walk_cpu_int32") / "libwalk.so"
    done = build_cpp("#define GS_ROW int\n" + SHIM, lib, "-shared", "-fPIC")
    assert done.returncode == 0, done.stderr
    return ctypes.CDLL(str(lib)).gs_random_walk


@pytest.fixture(scope="module")
def step_major(tmp_path_factory):
    """The kernel compiled to write its walks step-major (``GS_WALK_TIME_MAJOR`` 1, as the
    host launches it for many walkers: ``gsample.backend.cuda.walk.TIME_MAJOR_MIN``)."""
    if CXX is None:
        pytest.skip("no C++ compiler")
    lib = tmp_path_factory.mktemp("walk_cpu_major") / "libwalk.so"
    done = build_cpp("#define GS_WALK_TIME_MAJOR 1\n" + SHIM, lib, "-shared", "-fPIC")
    assert done.returncode == 0, done.stderr
    return ctypes.CDLL(str(lib)).gs_random_walk


def run_kernel(
    fn,
    A,
    seeds,
    length,
    key,
    alias=None,
    p=1.0,
    q=1.0,
    stop_prob=0.0,
    restart_prob=0.0,
    jump_prob=0.0,
    device_key=None,
    n=0,
    cache=None,
    major=False,
    bad=True,
    rows=None,
):
    """The host code of ``gsample/backend/cuda/walk.py``, with CPU tensors. ``key``: the op
    key (an int); or ``device_key = (prefix, first)``, the key as the sync-free runtime
    gives it (``n > 0``: a super-batch of ``n``-node mini-batches, seeds encoded). ``cache``:
    ``(slot, crows, counters)``, a GPU cache's arrays (each may be None). ``major``: the
    kernel writes step-major (its result is returned transposed); ``bad``: seeds out of
    range are expected (the flag is returned with the walks). ``rows``: the rows the kernel
    reads in place of ``A.rows`` (int32 for a kernel compiled ``GS_ROW=int``)."""
    W = seeds.numel()
    shape = (length + 1, W) if major else (W, length + 1)
    out = torch.empty(shape, dtype=torch.int64).fill_(-7)  # the kernel writes all
    node2vec = p != 1.0 or q != 1.0
    srows = reference.sorted_rows(A)[0].contiguous() if node2vec else A.rows
    keys = (
        None
        if device_key is None
        else torch.tensor([signed(device_key[0]), device_key[1]], dtype=torch.int64)
    )
    c1, c2, c3 = reference.thresholds(stop_prob, restart_prob, jump_prob)
    failed = torch.zeros(2, dtype=torch.int32)
    slot, crows, counters = (None, None, None) if cache is None else cache

    def ptr(t):
        return ctypes.c_void_p(0 if t is None else t.data_ptr())

    i64, f64 = ctypes.c_int64, ctypes.c_double
    M = A.num_nodes * (int(seeds.max()) // n + 1 if n and W else 1)  # the seeds' id space
    fn(
        ptr(A.indptr),
        ptr(A.rows if rows is None else rows),
        ptr(srows),
        ptr(alias),
        ptr(seeds),
        i64(W),
        i64(length),
        i64(A.num_nodes),
        ctypes.c_uint64(0 if key is None else key),
        ptr(keys),
        i64(n),
        i64(M),
        ctypes.c_int(int(node2vec)),
        f64(1.0 / p),
        f64(1.0 / q),
        f64(max(1.0 / p, 1.0, 1.0 / q)),
        f64(c1),
        f64(c2),
        f64(c3),
        ptr(out),
        ptr(failed),
        ptr(slot),
        ptr(crows),
        i64(0 if crows is None else crows.numel()),
        ptr(counters),
    )
    out = out.t().contiguous() if major else out
    if bad is not True:
        assert failed.tolist() == [0, int(bad)]
        return out
    assert failed.tolist() == [0, 0]
    return out


VARIANTS = {
    "deepwalk": {},
    "ppr": {"stop_prob": 0.15},
    "restart-jump": {"restart_prob": 0.2, "jump_prob": 0.1},
    "weighted": {"alias": True},
    "node2vec": {"p": 2.0, "q": 0.5},
    "node2vec-odd": {"p": 3.0, "q": 0.7},
    "everything": {
        "p": 0.3,
        "q": 3.0,
        "alias": True,
        "stop_prob": 0.01,
        "restart_prob": 0.05,
        "jump_prob": 0.05,
    },
}


def _case(name: str):
    """A weighted graph, walk variant ``name``'s arguments (its alias tables built), 2,000
    seeds, a key and the reference's walks of length 30."""
    A = gs.datasets.rmat(5000, 60000, seed=3, weighted=True).csc
    kw = dict(VARIANTS[name])
    if kw.pop("alias", False):
        kw["alias"] = alias_table(A, A.values)
    seeds = torch.randint(0, A.num_nodes, (2000,), generator=torch.Generator().manual_seed(1))
    key = op_key(7, 3, 2)
    return A, kw, seeds, key, reference.reference_walk(A, seeds, 30, key, **kw)


@pytest.mark.parametrize("device_key", [False, True], ids=["key", "device-key"])
@pytest.mark.parametrize("name", list(VARIANTS))
def test_kernel_source_equals_reference(kernel, name, device_key):
    A, kw, seeds, key, want = _case(name)
    got = (
        run_kernel(kernel, A, seeds, 30, None, device_key=(key_prefix(7, 3), 2), **kw)
        if device_key
        else run_kernel(kernel, A, seeds, 30, key, **kw)
    )
    assert torch.equal(got, want)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_kernel_source_super_batch_equals_reference(kernel, name):
    """Three mini-batches of different sizes in one launch: the reference's super-batched
    walks (BatchKeys), which are the three mini-batches' own walks, encoded."""
    A = gs.datasets.rmat(5000, 60000, seed=3, weighted=True).csc
    n = A.num_nodes
    kw = dict(VARIANTS[name])
    if kw.pop("alias", False):
        kw["alias"] = alias_table(A, A.values)
    g = torch.Generator().manual_seed(4)
    parts = [torch.randint(0, n, (size,), generator=g) for size in (700, 700, 300)]
    enc = torch.cat([s + b * n for b, s in enumerate(parts)])
    want = reference.reference_walk(A, enc, 25, BatchKeys.of(7, 3, 5, 3, n), **kw)
    got = run_kernel(kernel, A, enc, 25, None, device_key=(key_prefix(7, 3), 5), n=n, **kw)
    assert torch.equal(got, want)
    start = 0
    for b, s in enumerate(parts):  # each batch's rows: its own walks, ids + b * n
        own = reference.reference_walk(A, s, 25, op_key(7, 3, 5 + b), **kw)
        part = got[start : start + s.numel()]
        assert torch.equal(torch.where(part >= 0, part - b * n, part), own)
        start += s.numel()


@pytest.mark.parametrize("name", list(VARIANTS))
def test_step_major_walks_are_the_walks_transposed(kernel, step_major, name):
    """Written step-major (a warp's walkers write one line a step), the walks are the
    walker-major kernel's and the reference's, bit for bit: one mini-batch, a super-batch,
    and a seed out of range (its row all -1, the flag set)."""
    A, kw, seeds, key, want = _case(name)
    assert torch.equal(run_kernel(step_major, A, seeds, 30, key, major=True, **kw), want)
    n = A.num_nodes
    enc = torch.cat([seeds[:900], seeds[900:] + n])
    batched = {"device_key": (key_prefix(7, 3), 5), "n": n}
    got = run_kernel(step_major, A, enc, 25, None, major=True, **batched, **kw)
    assert torch.equal(got, run_kernel(kernel, A, enc, 25, None, **batched, **kw))
    broken = seeds.clone()
    broken[17] = n  # out of range
    got = run_kernel(step_major, A, broken, 30, key, major=True, bad=1, **kw)
    assert (got[17] == -1).all()
    keep = torch.arange(seeds.numel()) != 17
    assert torch.equal(got[keep], want[keep])


# ----------------------------------------------------------------------------- GPU cache
def _cache_of(A, share, shift=0):
    """``(slot, crows, cols)``: a cache of about ``share`` of ``A``'s edges (the columns
    :func:`gsample.formats.cache.choose_columns` takes), its rows altered to ``(row +
    shift) % N`` (``shift`` 0: the graph's own)."""
    deg = A.indptr.diff()
    cols = C.choose_columns(A.indptr, int(8 * share * int(deg.sum())), 8)
    index, ptr = gs.formats.gather_segments(A.indptr, cols)
    slot = torch.full((A.num_nodes,), -1, dtype=torch.int64)
    slot[cols] = ptr[:-1]
    return slot, (A.rows[index] + shift) % A.num_nodes, cols, index


def _moves(out, slot):
    """(moves, moves from a cached column) of walks that only move or stop: every step
    after the seed that is not -1 read one row, of the column of the node before it."""
    moved = out[:, 1:] >= 0
    return int(moved.sum()), int((moved & (slot[out[:, :-1].clamp(min=0)] >= 0)).sum())


@pytest.mark.parametrize("name", [v for v in VARIANTS if "p" not in VARIANTS[v]])
@pytest.mark.parametrize("truncated", [False, True], ids=["whole", "truncated"])
def test_cached_columns_are_read_from_the_cache(kernel, name, truncated):
    """Rows of cached columns come from ``crows`` at ``slot[v] + (e - lo)``: with altered
    copies, the walks are the reference's on the graph whose cached columns hold them. A
    column running past the end of ``crows`` (``truncated``) is read from the graph."""
    A = gs.datasets.rmat(5000, 60000, seed=3, weighted=True).csc
    kw = dict(VARIANTS[name])
    if kw.pop("alias", False):
        kw["alias"] = alias_table(A, A.values)
    slot, crows, cols, index = _cache_of(A, 0.3, shift=1)
    altered = A.rows.clone()
    if truncated:  # the last cached column loses its last cached row: read from the graph
        crows = crows[:-1]
        last = A.indptr[cols[-1]]
        index = index[index < last]
    altered[index] = crows[: index.numel()]
    counters = torch.zeros(2, dtype=torch.int64)
    seeds = torch.randint(0, A.num_nodes, (2000,), generator=torch.Generator().manual_seed(1))
    key = op_key(7, 3, 2)
    got = run_kernel(kernel, A, seeds, 30, key, cache=(slot, crows, counters), **kw)
    want = reference.reference_walk(replace(A, rows=altered), seeds, 30, key, **kw)
    assert torch.equal(got, want)
    assert not torch.equal(want, reference.reference_walk(A, seeds, 30, key, **kw))
    if "restart_prob" not in kw:  # every step a move or a stop
        reads, hits = _moves(got, slot)
        if truncated:  # the truncated column's moves are reads of the graph
            hits -= int(((got[:, :-1] == cols[-1]) & (got[:, 1:] >= 0)).sum())
        assert counters.tolist() == [reads, hits] and 0 < hits < reads


@pytest.mark.parametrize("name", list(VARIANTS))
def test_the_cache_serves_the_same_walks_and_counts_every_row_read(kernel, name):
    """A cache of the graph's own rows: the reference's walks, every row read counted (a
    cache of ``indptr`` alone, ``slot`` null: the reads, no hit), and the hits those of
    cached columns: all of them when every column is cached."""
    A, kw, seeds, key, want = _case(name)
    counts = {}
    for share in (None, 0.3, 1.0):
        counters = torch.zeros(2, dtype=torch.int64)
        slot, crows = _cache_of(A, share)[:2] if share else (None, None)
        got = run_kernel(kernel, A, seeds, 30, key, cache=(slot, crows, counters), **kw)
        assert torch.equal(got, want), share
        counts[share] = counters.tolist()
    reads = counts[None][0]
    assert counts[None] == [reads, 0] and counts[1.0] == [reads, reads]
    assert counts[0.3][0] == reads and 0 < counts[0.3][1] < reads
    if "p" not in kw and "restart_prob" not in kw:
        assert reads == _moves(want, torch.zeros(A.num_nodes, dtype=torch.int64))[0]


@pytest.mark.parametrize("name", list(VARIANTS))
def test_int32_rows_and_an_int32_cache_walk_as_int64_ones(kernel, narrow_kernel, name):
    """Compiled for int32 rows (``GS_ROW=int``: a UVA graph's int32 host rows and GPU cache),
    the kernel reads both as int32 and walks as the reference (and as the int64 kernel)
    does, bit for bit: no cache, a third of the edges cached, all of them; a cache of
    altered int32 rows shows its reads are the cache's; the counters alike."""
    A, kw, seeds, key, want = _case(name)
    rows32 = A.rows.int()
    for share in (None, 0.3, 1.0):
        wide, narrow = torch.zeros(2, dtype=torch.int64), torch.zeros(2, dtype=torch.int64)
        slot, crows = _cache_of(A, share)[:2] if share else (None, None)
        got = run_kernel(
            narrow_kernel,
            A,
            seeds,
            30,
            key,
            cache=(slot, None if crows is None else crows.int(), narrow),
            rows=rows32,
            **kw,
        )
        assert torch.equal(got, want), share
        run_kernel(kernel, A, seeds, 30, key, cache=(slot, crows, wide), **kw)
        assert narrow.tolist() == wide.tolist(), share
    if "p" not in kw:  # altered cached rows: the walks of the graph holding them
        slot, crows, _, index = _cache_of(A, 0.3, shift=1)
        altered = A.rows.clone()
        altered[index] = crows
        want = reference.reference_walk(replace(A, rows=altered), seeds, 30, key, **kw)
        cache = (slot, crows.int(), torch.zeros(2, dtype=torch.int64))
        got = run_kernel(narrow_kernel, A, seeds, 30, key, cache=cache, rows=rows32, **kw)
        assert torch.equal(got, want)


# ----------------------------------------------------------------------------- node2vec's edge test
#: walkstep.cuh's switches of node2vec's edge test (gsample/backend/cuda/walk.py's
#: LAZY_EDGE_TEST, SEARCH_WAYS, PREFETCH_PIVOTS, KEEP_PREV_BOUNDS) and first-order walks
#: compiled without node2vec's code: every setting must give the same walks
SWITCHES = {
    "before": "-DGS_WALK_LAZY=0 -DGS_WALK_WAYS=2 -DGS_WALK_PREFETCH=0 -DGS_WALK_KEEP=0",
    "lazy-binary": "-DGS_WALK_LAZY=1 -DGS_WALK_WAYS=2 -DGS_WALK_PREFETCH=0 -DGS_WALK_KEEP=1",
    "eager-4way-prefetch": "-DGS_WALK_LAZY=0 -DGS_WALK_WAYS=4 -DGS_WALK_PREFETCH=1",
    "lazy-4way": "-DGS_WALK_WAYS=4 -DGS_WALK_PREFETCH=0 -DGS_WALK_KEEP=0",
    "lazy-8way-prefetch": "-DGS_WALK_WAYS=8 -DGS_WALK_PREFETCH=1",
    "first-order": "-DGS_WALK_NODE2VEC=0",
}
#: node2vec both ways round (1/q above and below 1: the coin's band that searches is [1, 1/q)
#: or [1/q, 1)), with teleports and alias tables, and first-order walks
SWITCH_VARIANTS = {
    "node2vec": {"p": 2.0, "q": 0.5},
    "node2vec-in": {"p": 0.5, "q": 2.0},
    "node2vec-q1": {"p": 4.0, "q": 1.0},
    "everything": VARIANTS["everything"],
    "deepwalk": {},
    "weighted-ppr": {"alias": True, "stop_prob": 0.1},
}


@pytest.fixture(scope="module")
def switched(tmp_path_factory):
    """The kernel compiled with each of :data:`SWITCHES` (a dict of them)."""
    if CXX is None:
        pytest.skip("no C++ compiler")
    out = {}
    for name, flags in SWITCHES.items():
        lib = tmp_path_factory.mktemp(f"walk_cpu_{name}") / "libwalk.so"
        done = build_cpp(SHIM, lib, "-shared", "-fPIC", *flags.split())
        assert done.returncode == 0, done.stderr
        out[name] = ctypes.CDLL(str(lib)).gs_random_walk
    return out


def _hub_graph():
    """An R-MAT graph plus a hub (node 0: an edge to and from every node, the first 400
    twice), self loops and its largest ids' columns, its rows out of order in the CSC (the
    edge test searches the sorted copy)."""
    A = gs.datasets.rmat(3000, 30000, seed=5).csc
    N = A.num_nodes
    every = torch.arange(N)
    loops = every[every % 7 == 0]
    src = torch.cat([A.rows, every, torch.zeros(N, dtype=torch.int64), every[:400], loops])
    dst = torch.cat([A.edge_cols(), torch.zeros(N, dtype=torch.int64), every, every[:400] * 0])
    dst = torch.cat([dst, loops])
    src = torch.cat([src, torch.full((50,), N - 1), every[-50:]])
    dst = torch.cat([dst, every[-50:], torch.full((50,), N - 1)])
    order = torch.argsort(dst * N + (N - 1 - src), stable=True)  # rows descending
    rows, cols = src[order], dst[order]
    indptr = torch.zeros(N + 1, dtype=torch.int64)
    indptr[1:] = torch.cumsum(torch.bincount(cols, minlength=N), 0)
    return gs.formats.csc.CSC(N, indptr, rows)


@pytest.mark.parametrize("graph", ["rmat", "hubs"])
@pytest.mark.parametrize("variant", list(SWITCH_VARIANTS))
@pytest.mark.parametrize("switch", list(SWITCHES))
def test_every_edge_test_switch_gives_the_reference_walks(switched, switch, variant, graph):
    """node2vec's edge test searched only where the coin needs it, by 4 or 8 ways, with the
    first pivots read early and prev's bounds kept (or none of these: the binary search at
    every attempt), and first-order walks compiled without node2vec's code: the reference's
    walks bit for bit, one mini-batch and a super-batch."""
    if switch == "first-order" and "p" in SWITCH_VARIANTS[variant]:
        pytest.skip("the host compiles node2vec's walks with node2vec's code")
    A = gs.datasets.rmat(5000, 60000, seed=3, weighted=True).csc if graph == "rmat" else None
    A = _hub_graph() if A is None else A
    kw = dict(SWITCH_VARIANTS[variant])
    if kw.pop("alias", False):
        values = A.values if A.values is not None else torch.rand(A.nnz, dtype=torch.float64)
        kw["alias"] = alias_table(A, values)
    g = torch.Generator().manual_seed(8)
    seeds = torch.randint(0, A.num_nodes, (1500,), generator=g)
    seeds[:20] = torch.tensor([0, A.num_nodes - 1] * 10)  # from the hub and the last id
    key = op_key(7, 3, 2)
    fn = switched[switch]
    want = reference.reference_walk(A, seeds, 30, key, **kw)
    assert torch.equal(run_kernel(fn, A, seeds, 30, key, **kw), want)
    n = A.num_nodes
    enc = torch.cat([seeds[:900], seeds[900:] + n])
    got = run_kernel(fn, A, enc, 25, None, device_key=(key_prefix(7, 3), 5), n=n, **kw)
    assert torch.equal(got, reference.reference_walk(A, enc, 25, BatchKeys.of(7, 3, 5, 2, n), **kw))


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """The kernel library (``gs_random_walk_start``, ``gs_random_walk_step``: a UVA graph's
    walks a step at a time) built with the default edge test and with the one before it."""
    if CXX is None:
        pytest.skip("no C++ compiler")
    out = {}
    for name in ("default", "before"):
        flags = () if name == "default" else SWITCHES["before"].split()
        lib = tmp_path_factory.mktemp(f"walk_sweep_{name}") / "libwalk.so"
        done = build_cpp(SHIM, lib, "-shared", "-fPIC", *flags)
        assert done.returncode == 0, done.stderr
        out[name] = ctypes.CDLL(str(lib))
    return out


def _sweep_walks(lib, A, seeds, length, key, alias=None, p=1.0, q=1.0, **probs):
    """``gsample/backend/cuda/walk.py``'s step-at-a-time launches (``gs_random_walk_start``,
    then ``gs_random_walk_step`` once a step, the walkers in a new random order each step as
    the host's sort by node gives them), with CPU tensors and one mini-batch."""
    W, N = seeds.numel(), A.num_nodes
    out = torch.full((W, length + 1), -7, dtype=torch.int64)
    state = torch.full((W, 4), -7, dtype=torch.int64)
    failed = torch.zeros(3, dtype=torch.int32)
    node2vec = p != 1.0 or q != 1.0
    srows = reference.sorted_rows(A)[0].contiguous() if node2vec else A.rows
    c1, c2, c3 = reference.thresholds(
        probs.get("stop_prob", 0.0), probs.get("restart_prob", 0.0), probs.get("jump_prob", 0.0)
    )

    def ptr(t):
        return ctypes.c_void_p(0 if t is None else t.data_ptr())

    i64, f64 = ctypes.c_int64, ctypes.c_double
    lib.gs_random_walk_start(
        ptr(seeds), i64(W), i64(length), i64(N), i64(0), i64(N), ptr(state), ptr(out), ptr(failed)
    )
    g = torch.Generator().manual_seed(4)
    for t in range(length):
        order = torch.randperm(W, generator=g)
        lib.gs_random_walk_step(
            ptr(A.indptr), ptr(A.rows), ptr(srows), ptr(alias), ptr(seeds), i64(W), i64(length),
            i64(N), ctypes.c_uint64(key), ptr(None), i64(0), ctypes.c_int(int(node2vec)),
            f64(1.0 / p), f64(1.0 / q), f64(max(1.0 / p, 1.0, 1.0 / q)), f64(c1), f64(c2),
            f64(c3), ptr(order), i64(t), ptr(state), ptr(out), ptr(failed), ptr(None),
            ptr(None), i64(0), ptr(None),
        )  # fmt: skip
    assert failed.tolist() == [0, 0, 0]
    return out


@pytest.mark.parametrize("build", ["default", "before"])
@pytest.mark.parametrize("name", ["node2vec", "node2vec-odd", "everything", "deepwalk"])
def test_the_step_sweep_gives_the_reference_walks(sweep, build, name):
    """The UVA sweep's step kernel (``gs_random_walk_step``: prev's bounds read each step,
    never kept) with node2vec's default edge test and the one before it: the reference's
    walks, whatever order the walkers take each step."""
    A, kw, seeds, key, want = _case(name)
    assert torch.equal(_sweep_walks(sweep[build], A, seeds, 30, key, **kw), want)
