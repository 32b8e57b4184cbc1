"""``temporal_walk``'s kernel (``kernels/temporal_walk.cu``) against the torch code, bit for bit.

On the CPU (no GPU needed): the kernel source compiled as C++ (one thread runs every walker:
``helpers.CUDA_AS_CPP``) and called as the host code calls it, for integer and float times,
both directions, strict or not, with and without start times, with and without stored edge
ids, a super-batch's keys, and adversarial seeds (flagged, their rows ``-1``, the other
walkers untouched). On a GPU (marked ``cuda``): the CUDA backend's implementation equals the
torch backend's on an R-MAT graph, eagerly, compiled and super-batched through
``gs.DataLoader``; a bad seed raises ``IndexError`` naming ``seeds`` and the next call is
unharmed."""

import ctypes
import dataclasses
import functools

import pytest
import torch
from helpers import CUDA_AS_CPP, CXX, assert_same, build_cpp

import gsample as gs
from gsample.backend import get_backend
from gsample.backend.torch import temporal_walk as reference
from gsample.backend.torch.temporal import time_order
from gsample.base.random import BatchKeys, op_key
from gsample.ir import Op


def GPU(f):
    """Marks a test that needs a CUDA GPU (skipped without one)."""
    skip = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
    return pytest.mark.cuda(skip(f))


# ----------------------------------------------------------------------------- graphs
def graph(seed=0, floats=False, N=3000, E=50_000):
    """An R-MAT graph with hubs and parallel edges; times with ties (integer or float64), in
    its edge order."""
    A = gs.datasets.rmat(N, E, seed=seed)
    g = torch.Generator().manual_seed(seed)
    et = torch.randint(0, 500, (A.num_edges,), generator=g)
    if floats:
        et = et.double() / 7 - 20.0
    return A, et


def start_times(et, W, seed=1):
    g = torch.Generator().manual_seed(seed)
    lo, hi = float(et.min()), float(et.max())
    t = torch.rand(W, generator=g, dtype=torch.float64) * (hi - lo) + lo
    return t if et.is_floating_point() else t.round().to(torch.int64)


CASES = [
    # (direction, strict, timed, float times)
    ("later", False, False, False),
    ("later", False, True, False),
    ("later", True, True, False),
    ("earlier", False, True, False),
    ("earlier", True, False, False),
    ("later", True, True, True),
    ("earlier", False, True, True),
    ("earlier", True, True, True),
]


# ----------------------------------------------------------------------------- C++ twin
SHIM = (
    CUDA_AS_CPP
    + r"""
template <typename T>
static inline T atomicMax(T* p, T v) { T o = *p; if (v > o) *p = v; return o; }
"""
)


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """``{"long long": fn, "double": fn}``: ``gs_temporal_walk`` built for each time type."""
    if CXX is None:
        pytest.skip("no C++ compiler")
    out = {}
    for name, ctype in (("int", "long long"), ("float", "double")):
        lib = tmp_path_factory.mktemp(f"twalk_{name}") / f"libtwalk_{name}.so"
        src = SHIM + f"#define GS_DTYPE0 {ctype}\n" + '#include "temporal_walk.cu"\n'
        done = build_cpp(src, lib, "-shared", "-fPIC")
        assert done.returncode == 0, done.stderr
        out[ctype] = ctypes.CDLL(str(lib)).gs_temporal_walk
    return out


def run_kernel(
    kernels, A, seeds, length, key, edge_time, time=None, direction="later", strict=False, n=0
):
    """The host code of ``gsample/backend/cuda/temporal_walk.py`` on CPU tensors: ``(walks,
    edge ids, err)``. ``key``: an op key, or a super-batch's :class:`BatchKeys` (then ``n``,
    the graph's nodes, and seeds encoded)."""
    to = time_order(A, edge_time)
    order, stime = to.order.contiguous(), to.time.contiguous()
    fn = kernels["double" if stime.is_floating_point() else "long long"]
    W, L = seeds.numel(), length
    out = torch.full((W, L + 1), -7, dtype=torch.int64)  # the kernel writes every entry
    eout = torch.full((W, L), -7, dtype=torch.int64)
    err = torch.zeros(4, dtype=torch.int64)
    t = None if time is None else reference.wide(time).contiguous()
    batches = isinstance(key, BatchKeys)
    keys = key.bases("cpu") if batches else None
    M = A.num_nodes * (key.copies if batches else 1)

    def ptr(x):
        return ctypes.c_void_p(0 if x is None else x.data_ptr())

    i64 = ctypes.c_int64
    seeds = seeds.to(torch.int64).contiguous()
    fn(
        ptr(A.indptr),
        ptr(A.rows),
        ptr(A.eids),
        ptr(order),
        ptr(stime),
        ptr(seeds),
        i64(W),
        i64(L),
        i64(A.num_nodes),
        ptr(t),
        ctypes.c_int(int(direction == "later")),
        ctypes.c_int(int(strict)),
        ptr(keys),
        ctypes.c_uint64(0 if batches else key),
        i64(n if batches else 0),
        i64(M),
        ptr(out),
        ptr(eout),
        ptr(err),
    )
    return out, eout, err


@pytest.mark.parametrize("eids", [True, False], ids=["eids", "positions"])
@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_kernel_source_equals_the_torch_code(kernels, case, eids):
    direction, strict, timed, floats = case
    A, et = graph(floats=floats)
    csc = A.csc if eids else gs.Matrix.from_csc(A.csc.indptr, A.csc.rows).csc
    assert (csc.eids is not None) == eids
    seeds = torch.randint(0, A.num_nodes, (2000,), generator=torch.Generator().manual_seed(2))
    time = start_times(et, 2000) if timed else None
    key = op_key(7, 3, 2)
    kw = {"time": time, "direction": direction, "strict": strict}
    want, want_e = reference.walk(csc, seeds, 20, key, et, edges=True, **kw)
    got, got_e, err = run_kernel(kernels, csc, seeds, 20, key, et, **kw)
    assert err.tolist() == [0, 0, 0, 0]
    assert torch.equal(got, want) and torch.equal(got_e, want_e)
    assert bool((want[:, 5] >= 0).any()) and bool((want[:, -1] < 0).any())


@pytest.mark.parametrize("case", CASES[:4], ids=[str(c) for c in CASES[:4]])
def test_kernel_source_super_batch_equals_the_torch_code(kernels, case):
    """Three mini-batches of different sizes in one launch (one of them empty): the torch
    code's super-batched walks, which are the mini-batches' own walks, encoded."""
    direction, strict, timed, floats = case
    A, et = graph(1, floats)
    n = A.num_nodes
    g = torch.Generator().manual_seed(3)
    parts = [torch.randint(0, n, (size,), generator=g) for size in (700, 0, 300, 500)]
    enc = torch.cat([s + b * n for b, s in enumerate(parts)])
    time = start_times(et, enc.numel(), seed=4) if timed else None
    key = BatchKeys.of(5, 1, 8, 4, n)
    kw = {"time": time, "direction": direction, "strict": strict}
    want, want_e = reference.walk(A.csc, enc, 15, key, et, edges=True, **kw)
    got, got_e, err = run_kernel(kernels, A.csc, enc, 15, key, et, n=n, **kw)
    assert err.tolist() == [0, 0, 0, 0]
    assert torch.equal(got, want) and torch.equal(got_e, want_e)
    start = 0
    for b, s in enumerate(parts):  # each batch's rows: its own walks, ids + b * n
        t = None if time is None else time[start : start + s.numel()]
        own, own_e = reference.walk(
            A.csc, s, 15, op_key(5, 1, 8 + b), et, t, direction, strict, edges=True
        )
        part = got[start : start + s.numel()]
        assert torch.equal(torch.where(part >= 0, part - b * n, part), own)
        assert torch.equal(got_e[start : start + s.numel()], own_e)
        start += s.numel()


@pytest.mark.parametrize("bad", [-1, 3000, 2**32 + 1, 2**40, -(2**62), 2**63 - 1])
def test_kernel_source_flags_a_bad_seed_and_walks_the_others(kernels, bad):
    """A bad seed's rows are all ``-1`` and it is flagged (err: negative / too large, the
    smallest / largest); every other walker walks as with good seeds (positions unchanged)."""
    A, et = graph(2)
    seeds = torch.tensor([0, 5, bad, 7, 2999])
    time = start_times(et, 5, seed=5)
    got, got_e, err = run_kernel(kernels, A.csc, seeds, 6, 11, et, time)
    negative = bad < 0
    assert err.tolist() == [int(negative), int(not negative), min(bad, 0), max(bad, 0)]
    assert got[2].tolist() == [-1] * 7 and got_e[2].tolist() == [-1] * 6
    good = seeds.clone()
    good[2] = 1
    want, want_e = reference.walk(A.csc, good, 6, 11, et, time, edges=True)
    keep = torch.tensor([0, 1, 3, 4])
    assert torch.equal(got[keep], want[keep]) and torch.equal(got_e[keep], want_e[keep])
    # a super-batch's seed outside its copies * n ids, or negative, likewise
    key = BatchKeys.of(1, 0, 0, 2, A.num_nodes)
    enc = torch.tensor([3, 9, A.num_nodes + 4, bad if negative else 2 * A.num_nodes + 1])
    got, _, err = run_kernel(kernels, A.csc, enc, 4, key, et, n=A.num_nodes)
    assert err[0 if negative else 1] == 1 and got[3].tolist() == [-1] * 5


# ----------------------------------------------------------------------------- on a GPU
def _same_pair(a, b):
    assert torch.equal(a.cpu(), b.cpu())


@GPU
@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_the_cuda_backend_equals_the_torch_backend(case):
    from gsample.backend.cuda import temporal_walk as cuda_walk

    direction, strict, timed, floats = case
    A, et = graph(floats=floats)
    seeds = torch.randint(0, A.num_nodes, (5000,), generator=torch.Generator().manual_seed(2))
    time = start_times(et, 5000) if timed else None
    key = op_key(7, 3, 2)
    kw = {"time": time, "direction": direction, "strict": strict}
    want, want_e = reference.walk(A.csc, seeds, 25, key, et, edges=True, **kw)
    dev = {k: v.cuda() if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
    Ad, etd, sd = A.to("cuda").csc, et.cuda(), seeds.cuda()
    got = cuda_walk.temporal_walk(Ad, sd, 25, key, etd, **dev)
    got_e = cuda_walk.temporal_walk_edges(Ad, sd, 25, key, etd, **dev)
    assert got.is_cuda
    _same_pair(got, want)
    _same_pair(got_e, want_e)


@GPU
def test_super_batch_keys_on_the_gpu():
    from gsample.backend.cuda import temporal_walk as cuda_walk

    A, et = graph(1)
    n = A.num_nodes
    g = torch.Generator().manual_seed(3)
    parts = [torch.randint(0, n, (size,), generator=g) for size in (700, 0, 300)]
    enc = torch.cat([s + b * n for b, s in enumerate(parts)])
    time = start_times(et, enc.numel(), seed=4)
    key = BatchKeys.of(5, 1, 8, 3, n)
    for direction in ("later", "earlier"):
        want = reference.walk(A.csc, enc, 12, key, et, time, direction, edges=True)
        Ad, args = A.to("cuda").csc, (enc.cuda(), 12, key, et.cuda(), time.cuda(), direction)
        _same_pair(cuda_walk.temporal_walk(Ad, *args), want[0])
        _same_pair(cuda_walk.temporal_walk_edges(Ad, *args), want[1])


@GPU
@pytest.mark.parametrize("bad", [-1, 3000, 2**32 + 1, 2**40, -(2**62)])
def test_a_bad_seed_raises_and_the_next_call_is_unharmed(bad):
    from gsample.backend.cuda import temporal_walk as cuda_walk

    A, et = graph()
    Ad, etd = A.to("cuda"), et.cuda()
    seeds = torch.tensor([0, 5, bad, 7], device="cuda")
    for fn in (cuda_walk.temporal_walk, cuda_walk.temporal_walk_edges):
        with pytest.raises(IndexError, match="seeds: node id"):
            fn(Ad.csc, seeds, 4, 11, etd)
    with gs.use_backend("cuda"), pytest.raises(IndexError, match="seeds: node id"):
        Ad.temporal_walk(seeds, 4, etd)  # eager: the boundary only converts, the kernel checks
    compiled = gs.compile(lambda A, s, e: A.temporal_walk(s, 4, e), backend="cuda")
    with pytest.raises(IndexError, match="seeds: node id"):
        compiled(Ad, seeds, etd)
    good = torch.tensor([0, 5, 6, 7])
    _same_pair(
        cuda_walk.temporal_walk(Ad.csc, good.cuda(), 4, 11, etd),
        reference.walk(A.csc, good, 4, 11, et)[0],
    )
    gs.manual_seed(2)
    got = compiled(Ad, good.cuda(), etd)
    gs.manual_seed(2)
    _same_pair(got, A.temporal_walk(good, 4, et))


@GPU
def test_an_empty_walk_set_and_a_zero_length_walk():
    from gsample.backend.cuda import temporal_walk as cuda_walk

    A, et = graph()
    Ad, etd = A.to("cuda").csc, et.cuda()
    none = torch.empty(0, dtype=torch.int64, device="cuda")
    assert cuda_walk.temporal_walk(Ad, none, 3, 1, etd).shape == (0, 4)
    assert cuda_walk.temporal_walk_edges(Ad, none, 3, 1, etd).shape == (0, 3)
    got = cuda_walk.temporal_walk(Ad, torch.tensor([4, 2], device="cuda"), 0, 1, etd)
    assert got.tolist() == [[4], [2]]


def _program(A, seeds, et, t):
    return (
        A.temporal_walk(seeds, 6, et, time=t),
        A.temporal_walk_edges(seeds, 6, et, time=t, direction="earlier", strict=True),
    )


@GPU
def test_eager_compiled_and_super_batched_on_the_cuda_backend_run_the_kernel(monkeypatch):
    """On the CUDA backend, eager calls, a compiled sampler and gs.DataLoader's super-batches
    run the kernel (not the torch code) and give the CPU's walks, bit for bit."""
    from gsample.backend.cuda import temporal_walk as cuda_walk

    calls = []
    impls = get_backend("cuda").impls
    for op in (Op.TEMPORAL_WALK, Op.TEMPORAL_WALK_EDGES):
        real = impls[op, "csc"].fn

        @functools.wraps(real)  # the same signature: lowering reads it
        def spy(*a, _real=real, **k):
            calls.append(1)
            return _real(*a, **k)

        monkeypatch.setitem(impls, (op, "csc"), dataclasses.replace(impls[op, "csc"], fn=spy))
    assert impls[Op.TEMPORAL_WALK, "csc"].fn.__wrapped__ is cuda_walk.temporal_walk
    A, et = graph(3, N=2000, E=30_000)
    node_time = torch.randint(0, 500, (A.num_nodes,), generator=torch.Generator().manual_seed(6))
    seeds = torch.arange(0, 2000, 7)
    gs.manual_seed(4)
    want = _program(A, seeds, et, node_time[seeds])
    Ad, etd, ntd = A.to("cuda"), et.cuda(), node_time.cuda()
    with gs.use_backend("cuda"):
        for f in (_program, gs.compile(_program)):
            calls.clear()
            gs.manual_seed(4)
            got = f(Ad, seeds.cuda(), etd, ntd[seeds.cuda()])
            assert calls, "the CUDA backend did not run the temporal walk kernel"
            for x, y in zip(got, want, strict=True):
                _same_pair(x, y)

        def on_gpu(A, s):  # the times: captured constants (fixed_state)
            return _program(A, s, etd, ntd[s])

        calls.clear()
        sb = gs.DataLoader(
            Ad,
            gs.compile(on_gpu),
            seeds.cuda(),
            32,
            shuffle=False,
            seed=7,
            super_batch=3,
            fixed_state=True,
        )
        got = [b.out for b in sb]
        assert calls, "the super-batch did not run the kernel"

    def on_cpu(A, s):
        return _program(A, s, et, node_time[s])

    one = [b.out for b in gs.DataLoader(A, on_cpu, seeds, 32, shuffle=False, seed=7)]
    assert len(got) == len(one)
    for i, (g, o) in enumerate(zip(got, one, strict=True)):
        assert_same(tuple(x.cpu() for x in g), o, f"super-batch on the GPU, batch {i}")
