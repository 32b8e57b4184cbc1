"""``temporal_sample``'s kernels (``kernels/temporal.cu``) on the CPU, against the torch code,
bit for bit.

The kernel source compiled as C++ (one thread runs every loop: ``helpers.CUDA_AS_CPP``;
``GS_WARP_DRAWS`` 0, so every column takes the sequential draw path that columns of more
than 32 draws take on the GPU) and called by the CUDA backend's own host code
(:func:`gsample.backend.cuda.temporal.run_sync_free` and ``run_exact``, with a CPU
``launch``): grouped frontiers, bounded frontiers whose padding holds garbage ids, times and
seeds, super-batch keys made from a device key, bad ids flagged and the next call
unharmed, a frontier out of (batch, seed) order refused by the sync-free path and ranked by
the exact one. Which implementation the CUDA backend picks is checked here too."""

from __future__ import annotations

import ctypes

import pytest
import torch
from helpers import CUDA_AS_CPP, CXX, build_cpp

import gsample as gs
from gsample.backend import get_backend, resolve
from gsample.backend.cuda import temporal as kernels
from gsample.backend.torch import temporal as reference
from gsample.base.random import DeviceKey, key_prefix, signed
from gsample.formats.bounded import BoundedCSC, BoundedIds, counts, trim
from gsample.ir import Op

# what CUDA_AS_CPP lacks for this family (the warp intrinsics are never called: no warp path)
PRELUDE = r"""
template <typename T>
static inline T atomicMax(T* p, T v) { T o = *p; if (v > o) *p = v; return o; }
static inline long long __shfl_sync(unsigned, long long v, int) { return v; }
static inline unsigned __ballot_sync(unsigned, bool p) { return p; }
#define GS_WARP_DRAWS 0
"""


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    """The kernels built for the CPU, one library per time type."""
    if CXX is None:
        pytest.skip("no C++ compiler")
    out = {}
    for i, ctype in enumerate(("long long", "double")):
        path = tmp_path_factory.mktemp("temporal") / f"libtemporal{i}.so"
        src = CUDA_AS_CPP + PRELUDE + f"#define GS_DTYPE0 {ctype}\n" + '#include "temporal.cu"\n'
        done = build_cpp(src, path, "-shared", "-fPIC")
        assert done.returncode == 0, done.stderr
        out[ctype] = ctypes.CDLL(str(path))
    return out


def _arg(x):
    if isinstance(x, torch.Tensor):
        assert x.is_contiguous() and x.device.type == "cpu"
        return ctypes.c_void_p(x.data_ptr())
    if isinstance(x, float):
        return ctypes.c_double(x)
    x = int(x)
    return ctypes.c_int64(x - (1 << 64) if x >= 1 << 63 else x)


class CPU:
    """The CUDA module's ``launch`` and ``memset`` for the C++ build (records the kernels)."""

    def __init__(self, libs):
        self.libs, self.launched = libs, []

    def launch(self, family, name, n, *args, dtypes=("long long",), grid=None, block=None):
        assert family == "temporal"
        self.launched.append(name)
        if n > 0:
            getattr(self.libs[dtypes[0]], name)(*[_arg(a) for a in args])

    def memset(self, t, byte):
        t.view(torch.uint8).fill_(byte)

    def sync_free(self, A, cols, k, replace, key, **kw):
        return kernels.run_sync_free(A, cols, k, replace, key, *self._rest(kw), self.kernels)

    def exact(self, A, cols, k, replace, key, **kw):
        return kernels.run_exact(A, cols, k, replace, key, *self._rest(kw), self.kernels)

    @property
    def kernels(self):
        return (self.launch, self.memset)

    @staticmethod
    def _rest(kw):
        """``(time, edge_time, seed, strategy, window)`` from keywords."""
        names = ("time", "edge_time", "seed", "strategy", "window")
        return tuple(kw.get(n, "uniform" if n == "strategy" else None) for n in names)


def device_key(seed=7, ordinal=3, first=2, copies=1, num_nodes=0, device="cpu") -> DeviceKey:
    prefix = key_prefix(seed, ordinal)
    tensor = torch.tensor([signed(prefix), first], dtype=torch.int64, device=device)
    return DeviceKey.of(tensor, prefix, first, copies, num_nodes)


def trimmed(value: BoundedCSC):
    """The exact CSC of a bounded result, after checking the layout contract: padding
    columns empty (``indptr`` constant past ``ncols``) and of id 0, ``k`` slots a column."""
    csc = value.csc
    ncols = csc.num_cols if value.ncols is None else int(value.ncols)
    assert torch.all(csc.indptr[ncols:] == csc.indptr[-1])
    assert torch.all(csc.col_ids[ncols:] == 0)
    return trim(value, [int(c) for c in counts(value)])


def same(got, ref):
    assert torch.equal(got.indptr, ref.indptr)
    assert torch.equal(got.rows, ref.rows)
    assert torch.equal(got.eid_tensor(), ref.eid_tensor())
    assert torch.equal(got.col_ids, ref.col_ids)
    assert got.num_nodes == ref.num_nodes


# ----------------------------------------------------------------------------- inputs
@pytest.fixture(scope="module")
def graph():
    """An R-MAT graph with hubs (in-degree in the hundreds) and integer edge times."""
    A = gs.datasets.rmat(400, 8000, seed=0)
    et = torch.randint(0, 1000, (A.num_edges,), generator=torch.Generator().manual_seed(0))
    return A.csc, et


def frontier(A, C=150, seed=1, seeds=20):
    """``(cols, time, seed ids)``, grouped by seed (ascending, as disjoint_sample's
    frontiers), with the graph's hubs in it."""
    g = torch.Generator().manual_seed(seed)
    hubs = torch.argsort(A.degrees(), descending=True)[:10]
    cols = torch.cat([torch.randint(0, A.num_nodes, (C,), generator=g), hubs, hubs[:3]])
    time = torch.randint(0, 1000, (cols.numel(),), generator=g)
    sid = torch.sort(torch.randint(0, seeds, (cols.numel(),), generator=g)).values
    return cols, time, sid


def super_batch(A, C=200):
    """``(encoded cols, time, seed ids, batch)``: a super-batch's frontier of three batches
    (batch 1 empty), each batch's seeds grouped in ascending order."""
    cols, time, sid = frontier(A, C=C)
    batch = torch.arange(cols.numel()) % 3
    batch[batch == 1] = 2
    order = torch.argsort(batch * 64 + sid, stable=True)
    cols, time, sid, batch = cols[order], time[order], sid[order], batch[order]
    return batch * A.num_nodes + cols, time, sid, batch


def padded(x: torch.Tensor, count: int, fill) -> BoundedIds:
    """``x[:count]`` as a bounded buffer of ``x.numel() + 7`` entries, padding ``fill``."""
    pad = torch.full((x.numel() + 7 - count,), fill, dtype=x.dtype, device=x.device)
    return BoundedIds(torch.cat([x[:count], pad]), torch.tensor([count], device=x.device))


CASES = [
    # (k, replace, timed, strategy, window, seeded, float times)
    (5, False, False, "uniform", None, False, False),
    (5, False, True, "uniform", None, False, False),
    (5, True, True, "uniform", None, True, False),
    (40, False, True, "uniform", None, True, False),
    (40, True, False, "uniform", None, True, False),
    (10, False, True, "last", None, True, False),
    (10, False, True, "uniform", 300, True, False),
    (64, False, True, "last", 200, False, False),
    (7, False, True, "uniform", 250.5, True, True),
    (0, False, True, "uniform", None, True, False),
    (3, False, True, "uniform", 40, True, True),
    (32, False, True, "uniform", None, True, True),  # a warp's draws on the GPU, exactly
]


def inputs(graph, case, given=None):
    """``(A, cols, k, replace, keywords)`` of a case on ``graph``: a grouped frontier, or
    ``given`` ``(cols, time, seed ids)``."""
    k, replace, timed, strategy, window, seeded, floats = case
    A, et = graph
    cols, time, sid = frontier(A) if given is None else given
    if floats:
        et, time = et.double() / 3, time.double() / 3
    kw = {}
    if timed:
        kw = {"time": time, "edge_time": et, "strategy": strategy, "window": window}
    if seeded:
        kw["seed"] = sid
    return A, cols, k, replace, kw


# ----------------------------------------------------------------------------- sync-free
@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_sync_free_kernels_equal_the_torch_code(libs, graph, case):
    A, cols, k, replace, kw = inputs(graph, case)
    key = device_key()
    ref = reference.temporal_sample(A, cols, k, replace, key.host(), **kw)
    cpu = CPU(libs)
    out = cpu.sync_free(A, cols, k, replace, key, **kw)
    assert isinstance(out, BoundedCSC) and out.ncols is None
    assert out.csc.rows.numel() == cols.numel() * k  # allocated from the bound
    same(trimmed(out), ref)
    assert cpu.launched == ["gs_temporal_count_bounded", "gs_temporal_draw"]
    assert ref.nnz > 0 or k == 0
    ex = cpu.exact(A, cols, k, replace, key.host(), **kw)  # the exact path's host code
    same(ex, ref)
    assert cpu.launched[2:] == ["gs_temporal_count", "gs_temporal_draw"]


@pytest.mark.parametrize("case", CASES[1:4] + CASES[8:9], ids=str)
def test_a_bounded_frontier_with_padding(libs, graph, case):
    """The previous hop's bounded frontier: ``count`` real columns, then padding of bad ids,
    times and seeds that must not be read (nor flagged): the sample of the real columns,
    padding columns empty."""
    A, cols, k, replace, kw = inputs(graph, case)
    m = cols.numel() - 30
    key = device_key(first=5)
    ref_kw = {n: v[:m] if n in ("time", "seed") else v for n, v in kw.items()}
    ref = reference.temporal_sample(A, cols[:m], k, replace, key.host(), **ref_kw)
    for junk in (-1, A.num_nodes, 2**40):
        bkw = dict(kw)
        for n, fill in (("time", -(10**9)), ("seed", -3)):  # out of order if read
            if n in kw:
                bkw[n] = padded(kw[n], m, fill)
        out = CPU(libs).sync_free(A, padded(cols, m, junk), k, replace, key, **bkw)
        assert out.csc.num_cols == cols.numel() + 7 and int(out.ncols) == m
        same(trimmed(out), ref)


@pytest.mark.parametrize("seeded", [False, True])
def test_super_batch_keys_from_the_device_key(libs, graph, seeded):
    """A super-batch's encoded frontier (three batches, one empty, each batch's seeds
    grouped) draws with ``combine(prefix, first + b)`` made by the kernel: the torch code's
    sample with the host's :class:`BatchKeys`."""
    A, et = graph
    n = A.num_nodes
    enc, time, sid, batch = super_batch(A)
    key = device_key(5, 1, 8, copies=3, num_nodes=n)
    kw = {"time": time, "edge_time": et, "seed": sid if seeded else None}
    ref = reference.temporal_sample(A, enc, 6, False, key.host(), **kw)
    got = trimmed(CPU(libs).sync_free(A, enc, 6, False, key, **kw))
    same(got, ref)
    assert got.num_nodes == 3 * n and bool((got.rows // n == batch.repeat_interleave(
        torch.diff(got.indptr))).all())  # fmt: skip


def test_a_new_device_key_is_read_by_the_kernel(libs, graph):
    """The key is read from ``key.tensor``: writing new (prefix, first) into the same tensor
    (a replayed CUDA graph's key buffer) gives the new key's sample."""
    A, cols, k, replace, kw = inputs(graph, CASES[3])
    key, other = device_key(first=2), device_key(seed=9, first=11)
    cpu = CPU(libs)
    first = trimmed(cpu.sync_free(A, cols, k, replace, key, **kw))
    key.tensor.copy_(other.tensor)
    second = trimmed(cpu.sync_free(A, cols, k, replace, key, **kw))
    same(second, reference.temporal_sample(A, cols, k, replace, other.host(), **kw))
    assert not torch.equal(first.rows, second.rows)


@pytest.mark.parametrize("bad", [-1, 400, 2**32 + 1, 2**40, -(2**62)])
def test_a_bad_id_raises_and_the_next_call_is_unharmed(libs, graph, bad):
    A, et = graph
    cols, time, sid = frontier(A, C=20)
    cpu = CPU(libs)
    b = cols.clone()
    b[4] = bad
    kw = {"time": time, "edge_time": et, "seed": sid}
    what = "is negative" if bad < 0 else "is out of range for a graph of 400 nodes"
    with pytest.raises(IndexError, match=f"^cols: node id {bad} {what}"):
        cpu.sync_free(A, b, 3, False, device_key(), **kw)
    with pytest.raises(IndexError, match=f"^cols: node id {bad} {what}"):
        cpu.exact(A, b, 3, False, device_key().host(), **kw)
    ref = reference.temporal_sample(A, cols, 3, False, device_key().host(), **kw)
    same(trimmed(cpu.sync_free(A, cols, 3, False, device_key(), **kw)), ref)


def test_a_frontier_out_of_seed_order(libs, graph):
    """Groups not in ascending (batch, seed) order: the sync-free path cannot rank them
    without a read-back and raises naming ``seed``; the exact one ranks them on the host."""
    A, et = graph
    cols, time, sid = frontier(A, C=60)
    perm = torch.randperm(cols.numel(), generator=torch.Generator().manual_seed(3))
    cols, time, sid = cols[perm], time[perm], sid[perm]
    kw = {"time": time, "edge_time": et, "seed": sid}
    cpu = CPU(libs)
    with pytest.raises(ValueError, match=r"^seed: under the sync-free runtime"):
        cpu.sync_free(A, cols, 4, False, device_key(), **kw)
    ref = reference.temporal_sample(A, cols, 4, False, device_key().host(), **kw)
    same(cpu.exact(A, cols, 4, False, device_key().host(), **kw), ref)
    # descending groups, each together, are out of order too
    o = torch.argsort(-sid, stable=True)
    kw = {"time": time[o], "edge_time": et, "seed": sid[o]}
    with pytest.raises(ValueError, match=r"^seed: under the sync-free runtime"):
        cpu.sync_free(A, cols[o], 4, False, device_key(), **kw)


def test_an_empty_frontier(libs, graph):
    A, et = graph
    none = torch.empty(0, dtype=torch.int64)
    out = CPU(libs).sync_free(A, none, 4, False, device_key(), time=none, edge_time=et, seed=none)
    assert out.csc.indptr.tolist() == [0] and out.csc.rows.numel() == 0
    empty = BoundedIds(torch.full((5,), -1), torch.tensor([0]))
    out = CPU(libs).sync_free(A, empty, 4, False, device_key())
    assert out.csc.indptr.tolist() == [0] * 6 and trimmed(out).nnz == 0


# ----------------------------------------------------------------------------- picking
def test_the_cuda_backend_picks_the_sync_free_kernels(graph):
    """Sync-free lowering takes the sync-free kernels for uniform draws; weighted ones
    (``probs``) the torch code; the exact runtime the exact kernels."""
    cuda = get_backend("cuda")
    A, _ = graph
    names = ("A", "cols", "time", "edge_time", "seed")
    got = resolve(cuda, Op.TEMPORAL_SAMPLE, A, sync_free=True, given=names)
    assert got.fn is kernels.temporal_sample_sync_free
    assert got.sync_free and got.bounded_out and not got.syncs and got.checks == ("cols",)
    assert resolve(cuda, Op.TEMPORAL_SAMPLE, A, given=names).fn is kernels.temporal_sample
    weighted = resolve(cuda, Op.TEMPORAL_SAMPLE, A, sync_free=True, given=(*names, "probs"))
    assert weighted.fn is reference.temporal_sample


def test_inputs_the_kernels_do_not_take_run_the_exact_code(graph):
    """On CPU tensors (and for k = -1) the sync-free implementation trims its bounded
    inputs and runs the exact one: the torch code's sample, padded back to the frontier's
    buffer (empty columns of id 0), so the slots and times beside it stay aligned."""
    A, et = graph
    cols, time, sid = frontier(A, C=40)
    m = cols.numel() - 5
    key = device_key()
    for k in (4, -1):
        ref = reference.temporal_sample(
            A, cols[:m], k, False, key.host(), time=time[:m], edge_time=et, seed=sid[:m]
        )
        front = padded(cols, m, -1)
        got = kernels.temporal_sample_sync_free(
            A, front, k, False, key, padded(time, m, 0), et, padded(sid, m, -1)
        )
        assert isinstance(got, BoundedCSC) and got.csc.num_cols == front.data.numel()
        same(trimmed(got), ref)  # (padding columns checked empty, of id 0)


def test_time_and_seed_of_another_length_or_dtype_are_refused(graph):
    """The kernels read ``time[c]`` and ``seed[c]`` for every column of the frontier's
    buffer: buffers of another length (a bounded frontier's checks cannot see its count)
    and float seeds are refused on the host, naming the argument, on both paths."""
    A, et = graph
    cols, time, sid = frontier(A, C=40)
    key = device_key()
    short_seed = padded(sid[:10], 10, -1)
    with pytest.raises(ValueError, match="seed: expected one value per column"):
        kernels.temporal_sample_sync_free(
            A, padded(cols, 40, -1), 4, False, key, None, None, short_seed
        )
    with pytest.raises(ValueError, match="time: expected one value per column"):
        kernels.temporal_sample_sync_free(A, cols, 4, False, key, time[:39], et, sid)
    with pytest.raises(TypeError, match="seed: seed indices must be an integer"):
        kernels.temporal_sample_sync_free(A, cols, 4, False, key, time, et, sid.double())
    with pytest.raises(ValueError, match="seed: expected one value per column"):
        kernels.run_exact(A, cols, 4, False, key.host(), time, et, sid[:5], "uniform", None)


def test_a_graph_keeps_a_time_order_per_edge_time_tensor(graph):
    """Two samplers with their own edge times on one graph: each keeps its time order (a
    CUDA graph captured with one reads it in place at every replay: a second sampler must
    not free it), rebuilt only when its tensor changes in place."""
    A, et = graph
    other = et.flip(0).clone()
    first = reference.time_order(A, et)
    second = reference.time_order(A, other)
    assert reference.time_order(A, et) is first and reference.time_order(A, other) is second
    assert not torch.equal(first.order, second.order)
    other.add_(1)  # a new version: its order is rebuilt, the other one kept
    assert reference.time_order(A, other) is not second
    assert reference.time_order(A, et) is first
