"""The CUDA backend's listed LADIES sample (``gsample/backend/cuda/listed.py``): the pass's
choice by graph size (``LISTED``, ``Target.listed_min_nodes``), the host code's structure
on CPU tensors (its two device pieces, the exact row sums and the row keys, replaced by
CPU twins), nothing over the graph's rows; and, on a GPU, the listed program's samples
equal to the dense program's, bit for bit (one mini-batch and super-batched, int32 and
int64 index reads), bad probabilities raising as there, and its read-backs counted."""

from __future__ import annotations

import functools
from dataclasses import replace

import pytest
import torch
from helpers import assert_same, assert_same_csc, example, host_syncs, ops, random_seeds
from torch.utils._python_dispatch import TorchDispatchMode

import gsample as gs
from gsample.backend import get_backend
from gsample.backend.cuda import extract as X
from gsample.backend.cuda import listed
from gsample.backend.cuda.rowsum import NO_SCALE
from gsample.backend.torch import fused_select, select
from gsample.base import validate as V
from gsample.base.random import BatchKeys, DeviceKey, key_prefix, op_key, signed
from gsample.formats.bounded import BoundedIds
from gsample.ir import Op
from gsample.ir.graph import Target
from gsample.passes import PIPELINE
from gsample.passes.listed_rows import applies, listed_rows
from gsample.passes.scaled_row_sums import scaled_row_sums

#: a GPU test: marked as the suite marks them (``-m cuda``), skipped without a GPU
gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
N = 3000
#: the pipeline that keeps the dense path (and its division, as the dense program has it)
DENSE = [f for f, _ in PIPELINE if f not in (listed_rows, scaled_row_sums)]


def _ladies(A, seeds, layers=(60, 60)):
    return example("ladies").ladies(A, seeds, layers=layers)


def _slice_degree(A, seeds, layers=(60, 60)):
    """LADIES's shape with ``W = A`` (no edge map): each row by its slice edges' weight."""
    blocks = []
    for k in layers:
        sub = A[:, seeds]
        p = sub.sum(axis=1) / sub.sum().clamp(min=1e-30)
        s = sub.collective_sample(k, node_probs=p)
        s = s.div(p[s.row_ids], axis=1)
        blocks.append(s.div(s.sum(axis=0), axis=0))
        seeds = s.all_nodes()
    return blocks


@pytest.fixture(scope="module")
def G():
    return example("ladies").normalize(gs.datasets.rmat(N, 40_000, seed=0, weighted=True))


# ----------------------------------------------------------------------------- the pass's choice
def _program(fn, A, seeds):
    """``fn``'s program for the CUDA backend (traced and optimised on a CPU graph: the pass
    reads the CUDA backend's target and the example call's node count)."""
    return gs.compile(fn, backend="cuda").program(A, seeds)


@pytest.mark.parametrize(
    "switch, least, expect",
    [("auto", N, True), ("auto", N + 1, False), (True, 2**40, True), (False, 0, False)],
)
def test_the_cuda_backend_lists_from_its_node_count_on(G, monkeypatch, switch, least, expect):
    """``"auto"`` lists a graph of at least ``MIN_NODES`` nodes, ``True`` every graph,
    ``False`` none; the dense path is kept otherwise, its division folded into the row sums'
    finish (scaled_row_sums) as before."""
    monkeypatch.setattr(listed, "LISTED", switch)
    monkeypatch.setattr(listed, "MIN_NODES", least)
    assert get_backend("cuda").target().listed_min_nodes == (
        least if switch == "auto" else (0 if switch else None)
    )
    assert get_backend("cuda").target().listed_pinned is (switch is True)
    g = _program(_ladies, G, random_seeds(64, num_nodes=N))
    n_listed = ops(g).count(Op.LISTED_COLLECTIVE_SAMPLE)
    assert n_listed == (2 if expect else 0)
    assert ops(g).count(Op.SLICE_COLLECTIVE_SAMPLE) == (0 if expect else 2)
    assert ops(g).count(Op.SLICE_REDUCE) == (0 if expect else 2)


def test_the_default_keeps_cuda_graphs_dense_and_the_torch_backend_lists_every_graph(G):
    assert listed.LISTED == "auto" and listed.min_nodes() == listed.MIN_NODES
    assert listed.MIN_NODES == 2**23 > N  # G is a small graph: dense
    seeds = random_seeds(64, num_nodes=N)
    assert Op.LISTED_COLLECTIVE_SAMPLE not in ops(_program(_ladies, G, seeds))
    torch_program = gs.compile(_ladies, backend="torch").program(G, seeds)
    assert ops(torch_program).count(Op.LISTED_COLLECTIVE_SAMPLE) == 2
    assert get_backend("torch").target().listed_min_nodes == 0


def test_the_pass_reads_the_threshold_and_the_example_node_count(G):
    """On a hand-built target: the pass applies from ``listed_min_nodes`` nodes of the
    program's example graph on (None: never); a backend without the op never."""
    g = gs.compile(_ladies, backend="torch", passes=DENSE).program(G, random_seeds(64, num_nodes=N))
    own = frozenset({Op.LISTED_COLLECTIVE_SAMPLE, Op.SLICE_COLLECTIVE_SAMPLE})
    layouts = g.target.op_layouts
    for least, want in [(0, True), (N, True), (N + 1, False), (None, False)]:
        g.target = Target("cuda", layouts, own, least)
        assert applies(g) is want
    g.target = Target("cuda", layouts, frozenset({Op.SLICE_COLLECTIVE_SAMPLE}), 0)
    assert not applies(g)
    # a graph in pinned host memory: listed only where the target says so
    (inp,) = [
        n
        for n in g.nodes
        if n.op is Op.INPUT and "example" in n.meta and "nnz" in n.meta["example"]
    ]
    assert inp.meta["example"]["placement"] == "device"  # a CPU graph's arrays
    inp.meta["example"] = {**inp.meta["example"], "placement": "uva"}
    for pinned in (False, True):
        g.target = Target("cuda", layouts, own, 0, pinned)
        assert applies(g) is pinned
    inp.meta["example"] = {**inp.meta["example"], "placement": "device"}
    g.target = Target("cuda", layouts, own, N)
    before = ops(g)
    assert listed_rows(g).changed and ops(g).count(Op.LISTED_COLLECTIVE_SAMPLE) == 2
    assert ops(g) != before


def test_the_op_is_registered_as_reading_back():
    """Both registrations read back (``Impl.syncs``: the lowering keeps the step out of every
    CUDA graph region): the sync-free one (bounded frontiers, device keys) and the exact one
    (the runtime trims its inputs; a super-batch's keys)."""
    be = get_backend("cuda")
    given = ("A", "cols", "row_weights", "scale", "k", "replace")
    free = be.impl(Op.LISTED_COLLECTIVE_SAMPLE, "csc", sync_free=True, given=given)
    plain = be.impl(Op.LISTED_COLLECTIVE_SAMPLE, "csc", given=given)
    assert free.sync_free and free.syncs and free.bounded_out is False
    assert not plain.sync_free and plain.syncs and plain.batch_keys
    assert free.fn is plain.fn is listed.listed_collective_sample


# ------------------------------------------------------------------------- the host code, on a CPU
def _cpu_sums(rows, values, R, dtype, scale=NO_SCALE):
    """``rowsum.edge_row_sums`` on CPU tensors (float64 sums: exact for the eighths below),
    divided as its finish divides (``(divisor, per, count)``)."""
    out = torch.zeros(R, dtype=torch.float64).index_add_(0, rows, values.double()).to(dtype)
    divisor, per, count = scale
    if isinstance(divisor, torch.Tensor):
        out = out / divisor.reshape(-1)[(torch.arange(R) // per).clamp(max=count - 1)]
    return out


@pytest.fixture
def on_cpu(monkeypatch):
    """The listed host code with CPU twins of its device pieces: the torch draws (the
    CUDA draws' kernels compute the same keys) and float64 row sums."""
    monkeypatch.setattr(listed, "edge_row_sums", _cpu_sums)
    monkeypatch.setattr(listed, "CudaDraws", select.Draws)


def _eighths(nnz, seed=0, dtype=torch.float64):
    """Weights in eighths (0 to 1): their sums are exact in any order."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, 9, (nnz,), generator=g).to(torch.float64) / 8).to(dtype)


def _int32_rows(A, int32: bool):
    return replace(A, rows=A.rows.to(torch.int32)) if int32 else A


@pytest.mark.parametrize("with_replacement", [False, True])
@pytest.mark.parametrize("int32", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_host_code_draws_the_torch_listed_sample(G, on_cpu, with_replacement, int32, dtype):
    """One mini-batch: the rows, edges (in the slice's order), values and ids of the torch
    backend's listed sample (same sums, same keys), int32 rows read as int64."""
    A = G.csc
    w = _eighths(A.nnz, 1, dtype)
    g = torch.Generator().manual_seed(2)
    for k in (1, 40, 10**6):
        cols = torch.randperm(N, generator=g)[:64]
        scale = torch.tensor(3.0, dtype=dtype)
        key = op_key(5, 1, k)
        want = fused_select.listed_collective_sample(A, cols, w, scale, k, with_replacement, key)
        got = listed._sample(_int32_rows(A, int32), cols, w, scale, k, with_replacement, key)
        assert_same_csc(got, want)
        assert got.nnz > 0 and 1 <= got.row_ids.numel() <= k


@pytest.mark.parametrize("with_replacement", [False, True])
@pytest.mark.parametrize("per_batch_scale", [False, True])
def test_the_host_code_draws_a_super_batch_as_its_mini_batches(
    G, on_cpu, with_replacement, per_batch_scale
):
    """A super-batch (encoded frontier, a scale a mini-batch or one for all): the torch
    backend's listed super-batch, each mini-batch drawing as on its own."""
    A, copies = G.csc, 3
    w = _eighths(A.nnz, 3)
    g = torch.Generator().manual_seed(4)
    parts = [torch.randperm(N, generator=g)[: 40 + 15 * b] for b in range(copies)]
    parts[1] = parts[1][:0]  # a mini-batch whose frontier is empty
    cols = torch.cat([p + b * N for b, p in enumerate(parts)])
    scale = (
        torch.tensor([2.0, 4.0, 0.5], dtype=torch.float64)
        if per_batch_scale
        else torch.tensor(8.0, dtype=torch.float64)
    )
    for k in (5, 400):
        key = BatchKeys.of(seed=1, ordinal=2, first_batch=6, copies=copies, num_nodes=N)
        want = fused_select.listed_collective_sample(A, cols, w, scale, k, with_replacement, key)
        got = listed._sample(A, cols, w, scale, k, with_replacement, key)
        assert_same_csc(got, want)
        assert got.num_nodes == copies * N
        batch_of_rows = got.row_ids // N
        assert set(batch_of_rows.tolist()) == {0, 2}


def test_nan_or_negative_probabilities_raise_naming_node_probs(G, on_cpu):
    A = G.csc
    cols = random_seeds(64, num_nodes=N)
    w = torch.full((A.nnz,), float("nan"), dtype=torch.float64)
    with pytest.raises(ValueError, match="node_probs: contains NaN or infinite values"):
        listed._sample(A, cols, w, torch.tensor(1.0, dtype=torch.float64), 10, False, 3)
    w = _eighths(A.nnz, 5) + 0.125  # every row positive
    with pytest.raises(ValueError, match="node_probs: contains negative values"):
        listed._sample(A, cols, w, torch.tensor(-1.0, dtype=torch.float64), 10, False, 3)
    with pytest.raises(ValueError, match="node_probs: zero on every row that has edges"):
        listed._sample(A, cols, w * 0, torch.tensor(1.0, dtype=torch.float64), 10, False, 3)


@pytest.mark.parametrize("copies", [1, 3])
def test_a_bounded_frontier_draws_as_its_ids_do(G, on_cpu, copies):
    """A bounded frontier (the sync-free registration's: the ids a program's op made, in a
    buffer whose entries past ``count`` are anything) samples as its ``count`` ids do; the
    exact registration's fallback (CPU tensors) with a device key and a bounded frontier
    too."""
    A = G.csc
    w = _eighths(A.nnz, 7)
    g = torch.Generator().manual_seed(8)
    parts = [torch.randperm(N, generator=g)[:50] for _ in range(copies)]
    n = N if copies > 1 else 0
    cols = torch.cat([p + b * n for b, p in enumerate(parts)])
    padding = torch.tensor([-5, 10**12, 2**63 - 1, N * copies, 0])
    bounded = BoundedIds(torch.cat([cols, padding]), torch.tensor([cols.numel()]))
    prefix = key_prefix(4, 2)
    if copies == 1:
        key, scale = op_key(4, 2, 9), torch.tensor(2.0, dtype=torch.float64)
    else:
        key = BatchKeys.of(seed=4, ordinal=2, first_batch=9, copies=copies, num_nodes=N)
        scale = torch.tensor([2.0, 0.5, 4.0], dtype=torch.float64)
    want = listed._sample(A, cols, w, scale, 30, False, key)
    assert_same_csc(listed._sample(A, bounded, w, scale, 30, False, key), want)
    device_key = DeviceKey.of(
        torch.tensor([signed(prefix), 9]), prefix, 9, copies, n if copies > 1 else 0
    )
    assert device_key.host() == key
    reference = fused_select.listed_collective_sample(A, cols, w, scale, 30, False, key)
    got = listed.listed_collective_sample(A, bounded, w, scale, 30, False, device_key)
    assert_same_csc(got, reference)


@pytest.mark.parametrize("E", [0, 1, 2, 1000])
def test_distinct_rows_are_torch_unique_s(E):
    """``_distinct``: the sorted distinct rows (then ``_PAST``), each entry's place among
    them and their number, as ``torch.unique`` gives them."""
    g = torch.Generator().manual_seed(E)
    rows_s = torch.randint(0, max(E // 3, 1), (E,), generator=g) * 7 + 2**40
    rows, local, count = listed._distinct(rows_s)
    want, inverse = torch.unique(rows_s, sorted=True, return_inverse=True)
    L = int(count)
    assert want.numel() == L and rows.shape == local.shape == (E,)
    assert torch.equal(rows[:L], want) and (rows[L:] == listed._PAST).all()
    assert torch.equal(local, inverse)


class _Sizes(TorchDispatchMode):
    """The largest tensor any op makes while it is active."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return out


def test_nothing_is_made_over_the_graph_s_rows(on_cpu):
    """On a graph of 2 M nodes whose edges lie among its first 5,000: no tensor the listed
    code makes has as many entries as the graph has nodes (one mini-batch and a super-batch)."""
    nodes, active = 2_000_000, 5_000
    small = gs.datasets.rmat(active, 50_000, seed=1, weighted=True)
    r, c, _ = small.edges()
    A = gs.Matrix.from_edge_index(torch.stack([r, c]), num_nodes=nodes, weight=small.values).csc
    w = _eighths(A.nnz, 6)
    cols = random_seeds(256, num_nodes=active)
    key = BatchKeys.of(seed=0, ordinal=0, first_batch=0, copies=4, num_nodes=nodes)
    for f in (
        lambda: listed._sample(A, cols, w, torch.tensor(2.0, dtype=torch.float64), 500, False, 9),
        lambda: listed._sample(
            A,
            torch.cat([cols + b * nodes for b in range(4)]),
            w,
            torch.full((4,), 2.0, dtype=torch.float64),
            500,
            False,
            key,
        ),
    ):
        with _Sizes() as sizes:
            out = f()
        assert out.nnz > 0
        assert sizes.largest < active * 20 < nodes


# ----------------------------------------------------------------------------- on a GPU
@pytest.fixture(scope="module")
def cuda_graph():
    A = gs.datasets.rmat(20_000, 300_000, seed=4, weighted=True).to("cuda")
    return A, example("ladies").normalize(A)


def _samplers():
    """name -> (sampler, listed samples a layer when the pass applies)."""
    return {
        "ladies": (_ladies, 1),
        "slice-degree": (_slice_degree, 1),
        "fastgcn": (functools.partial(example("fastgcn").fastgcn, layers=(300, 300)), 0),
    }


def _run(fn, A, seeds, switch, monkeypatch, pool):
    """``gs.compile(fn, backend="cuda")`` with ``LISTED = switch`` (read when the program is
    compiled): its IR, four calls (eager, capture, replays of the captured regions), and a
    super-batched epoch over ``pool``."""
    monkeypatch.setattr(listed, "LISTED", switch)
    sampler = gs.compile(fn, backend="cuda")
    program = sampler.program(A, seeds[0])
    gs.manual_seed(6)
    calls = [sampler(A, s) for s in seeds]
    epoch = [
        b.out for b in gs.DataLoader(A, sampler, pool, 128, shuffle=False, seed=3, super_batch=4)
    ]
    return program, calls, epoch


@pytest.mark.cuda
@gpu
@pytest.mark.parametrize("int32", [False, True])
@pytest.mark.parametrize("name", ["ladies", "slice-degree", "fastgcn"])
def test_the_listed_program_draws_the_dense_program_s_samples(cuda_graph, monkeypatch, name, int32):
    """LADIES (and its shape with ``W = A``) listed on the GPU draws the dense program's
    blocks bit for bit: rows, kept edges and their order, values, ids, call after call
    (the dense program's regions captured and replayed), and super-batched; FastGCN's
    probabilities are not a slice's (the pass leaves it dense either way)."""
    monkeypatch.setattr(X, "INT32_MIN_EDGES", 0 if int32 else None)
    fn, per_layer = _samplers()[name]
    A = cuda_graph[1] if name == "ladies" else cuda_graph[0]
    seeds = [random_seeds(256, seed=10 + i, num_nodes=A.num_nodes).cuda() for i in range(4)]
    pool = random_seeds(1024, seed=20, num_nodes=A.num_nodes).cuda()
    p_listed, got, got_epoch = _run(fn, A, seeds, True, monkeypatch, pool)
    p_dense, want, want_epoch = _run(fn, A, seeds, False, monkeypatch, pool)
    n_layers = 2
    assert ops(p_listed).count(Op.LISTED_COLLECTIVE_SAMPLE) == n_layers * per_layer
    assert Op.LISTED_COLLECTIVE_SAMPLE not in ops(p_dense)
    for i, (g, w) in enumerate(zip(got, want)):
        assert_same(g, w, f"call {i}")
    assert len(got_epoch) == len(want_epoch) == 8
    for i, (g, w) in enumerate(zip(got_epoch, want_epoch)):
        assert_same(g, w, f"super-batched, batch {i}")


@pytest.mark.cuda
@gpu
@pytest.mark.parametrize("switch", ["auto", True])
def test_auto_keeps_a_pinned_graph_dense(cuda_graph, monkeypatch, switch):
    """``"auto"`` lists a large enough graph on the device but not one in pinned host
    memory (the listing's passes over the slice would read it over the host link); True
    lists both. Either way the samples are the dense program's."""
    monkeypatch.setattr(listed, "LISTED", switch)
    monkeypatch.setattr(listed, "MIN_NODES", 0)
    A = cuda_graph[1]
    pinned = A.to("cuda", placement="uva")
    seeds = random_seeds(256, seed=11, num_nodes=A.num_nodes).cuda()
    sampler = gs.compile(_ladies, backend="cuda")
    assert Op.LISTED_COLLECTIVE_SAMPLE in ops(sampler.program(A, seeds))
    on_host = ops(sampler.program(pinned, seeds))
    assert (Op.LISTED_COLLECTIVE_SAMPLE in on_host) is (switch is True)
    gs.manual_seed(3)
    want = sampler(A, seeds)
    gs.manual_seed(3)
    assert_same(sampler(pinned, seeds), want, "pinned against device")


@pytest.mark.cuda
@gpu
def test_the_listed_op_is_a_syncing_step_outside_every_captured_region(cuda_graph, monkeypatch):
    """The op reads sizes back: the lowering marks its step as syncing, never graph-safe,
    and no CUDA graph region holds it."""
    monkeypatch.setattr(listed, "LISTED", True)
    A = cuda_graph[1]
    seeds = random_seeds(256, num_nodes=A.num_nodes).cuda()
    program = gs.compile(_ladies, backend="cuda").lowered(A, seeds)
    at = [
        i
        for i, s in enumerate(program.steps)
        if s.label.startswith("cuda.listed_collective_sample")
    ]
    steps = [program.steps[i] for i in at]
    assert len(steps) == 2, program.format()
    assert all(s.syncs and not s.graph_safe for s in steps)
    for r in program.regions:
        assert not any(r.start <= i < r.stop for i in at), program.format()


@pytest.mark.cuda
@gpu
@pytest.mark.parametrize("copies", [1, 4])
def test_the_listed_sample_reads_back_three_times(cuda_graph, copies):
    """One mini-batch: the slice's size; its distinct rows and candidates, with the check
    flags; the kept edges. A super-batch the same three (each mini-batch's draw on the
    device, from the candidates' counts)."""
    A = cuda_graph[1]
    w = (A.csc.values**2).contiguous()
    n = A.num_nodes
    cols = random_seeds(512, num_nodes=n).cuda()
    if copies == 1:
        key, scale = op_key(0, 0, 0), torch.tensor(1e-3, device="cuda")
    else:
        key = BatchKeys.of(seed=0, ordinal=0, first_batch=0, copies=copies, num_nodes=n)
        cols = torch.cat([cols + b * n for b in range(copies)])
        scale = torch.full((copies,), 1e-3, device="cuda")

    padding = torch.tensor([-1, 2**40], device="cuda")
    bounded = BoundedIds(torch.cat([cols, padding]), torch.tensor([cols.numel()], device="cuda"))
    for frontier in (cols, bounded):  # (a bounded one's count read with the slice's size)

        def call(frontier=frontier):
            with V.deferred():
                return listed.listed_collective_sample(A.csc, frontier, w, scale, 400, False, key)

        call()  # warm: kernels compiled
        syncs = host_syncs(call)
        assert len(syncs) <= 3, syncs


@pytest.mark.cuda
@gpu
@pytest.mark.parametrize("copies", [1, 4])
def test_a_device_key_s_sample_is_listed_on_the_device_and_read_back_once(
    cuda_graph, monkeypatch, copies
):
    """With the device's keys (what a compiled program passes) the rows are listed on the
    device (``_on_device``): the host-sized path's sample bit for bit, one read-back (the
    dense finish's). A batch whose rows overflow its list is drawn again by that path (the
    same sample) and the next sample of the graph gets room for them; a compiled LADIES takes
    the device path."""
    A = cuda_graph[1]
    w = (A.csc.values**2).contiguous()
    n = A.num_nodes
    cols = random_seeds(512, num_nodes=n).cuda()
    prefix = key_prefix(0, 0)
    first = torch.tensor([signed(prefix), 0], device="cuda")
    dkey = DeviceKey.of(first, prefix, 0, copies, n if copies > 1 else 0)
    if copies == 1:
        scale = torch.tensor(1e-3, device="cuda")
    else:
        cols = torch.cat([cols + b * n for b in range(copies)])
        scale = torch.full((copies,), 1e-3, device="cuda")

    def call(key):
        with V.deferred():
            return listed.listed_collective_sample(A.csc, cols, w, scale, 400, False, key)

    ran = []
    real = listed._on_device

    def spy(*args):
        out = real(*args)
        ran.append(out is not None)
        return out

    monkeypatch.setattr(listed, "_on_device", spy)
    want = call(dkey.host())  # the host-sized path (a sort, three read-backs)
    assert not ran
    assert_same_csc(call(dkey), want)
    assert ran == [True]
    assert len(host_syncs(lambda: call(dkey))) <= 1
    # lists of 8 rows: too few, drawn again by the host-sized path, then room for them
    monkeypatch.setattr(listed, "_ROOM", {})
    monkeypatch.setattr(listed, "LIST_ROOM", 8)
    assert_same_csc(call(dkey), want)
    (room,) = listed._ROOM.values()
    assert room > 8
    assert_same_csc(call(dkey), want)  # (no redo: the room holds them)
    # a compiled program's layers take it
    ran.clear()
    monkeypatch.setattr(listed, "LISTED", True)
    sampler = gs.compile(_ladies, backend="cuda")
    seeds = random_seeds(256, num_nodes=n).cuda()
    sampler(A, seeds)
    assert ran and all(ran), ran


@pytest.mark.cuda
@gpu
@pytest.mark.parametrize("switch", [True, False])
def test_bad_probabilities_raise_naming_node_probs_on_both_paths(cuda_graph, monkeypatch, switch):
    """NaN weights and a negative normaliser raise naming ``node_probs``, listed or dense,
    one mini-batch and super-batched; the program samples again after the errors."""
    monkeypatch.setattr(listed, "LISTED", switch)
    A = cuda_graph[1]
    bad = gs.Matrix(replace(A.csc, values=A.csc.values.clone()))
    bad.csc.values[::5] = float("nan")
    seeds = random_seeds(256, num_nodes=A.num_nodes).cuda()

    def negative(A, seeds):
        sub = A[:, seeds]
        sq = sub**2
        p = sq.sum(axis=1) / (sq.sum() * -1.0)
        return sub.collective_sample(10, node_probs=p)

    nan_sampler, neg_sampler = (
        gs.compile(_ladies, backend="cuda"),
        gs.compile(negative, backend="cuda"),
    )
    assert (Op.LISTED_COLLECTIVE_SAMPLE in ops(neg_sampler.program(A, seeds))) is switch
    with pytest.raises(ValueError, match="node_probs: contains NaN or infinite values"):
        nan_sampler(bad, seeds)
    with pytest.raises(ValueError, match="node_probs: contains negative values"):
        neg_sampler(A, seeds)
    pool = random_seeds(512, seed=2, num_nodes=A.num_nodes).cuda()
    with pytest.raises(ValueError, match="node_probs: contains NaN or infinite values"):
        list(gs.DataLoader(bad, nan_sampler, pool, 256, super_batch=2))
    with pytest.raises(ValueError, match="node_probs: contains negative values"):
        list(gs.DataLoader(A, neg_sampler, pool, 256, super_batch=2))
    gs.manual_seed(1)
    again = nan_sampler(A, seeds)
    assert all(b.num_edges > 0 for b in again)
