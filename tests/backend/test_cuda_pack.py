"""``kernels/pack.cu``: buffers' used prefixes packed one after another on the device, the
lengths read there (what a CUDA graph does with the results its output's trim copies out),
against plain slicing (skipped without a GPU)."""

import pytest
import torch
from helpers import assert_same, graphsage

import gsample as gs
from gsample.backend.cuda.pack import pack_parts

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
]


def _count(n):
    return torch.tensor([n], dtype=torch.int64, device="cuda")


def _reference(parts):
    used = []
    for t, count, add in parts:
        n = (0 if count is None else int(count)) + add
        used.append(t[: min(max(n, 0), t.numel())])
    return torch.cat(used)


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.int16, torch.uint8])
def test_packs_used_prefixes_in_order_with_lengths_clamped(dtype):
    g = torch.Generator(device="cuda").manual_seed(0)
    bufs = [
        torch.randint(0, 100, (n,), generator=g, device="cuda").to(dtype)
        for n in (7, 1000, 1, 300_000, 5)
    ]
    parts = [
        (bufs[0], _count(3), 1),  # a count and an offset (an indptr: ncols + 1)
        (bufs[1], _count(1000), 0),  # full
        (bufs[2], _count(0), 0),  # empty
        (bufs[3], _count(123_457), 0),  # long: many blocks
        (bufs[4], None, 5),
    ]  # no count: its whole length
    out = torch.full((sum(b.numel() for b in bufs),), 7, dtype=dtype, device="cuda")
    desc = torch.empty(4 * len(parts), dtype=torch.int64).pin_memory()
    pack_parts(parts, out, desc)
    want = _reference(parts)
    assert torch.equal(out[: want.numel()], want)
    # counts past a part's capacity or below zero are clamped (a failed check's garbage)
    wild = [(bufs[0], _count(50), 0), (bufs[1], _count(-3), 0), (bufs[4], _count(2), 0)]
    pack_parts(wild, out, desc)
    want = torch.cat([bufs[0], bufs[4][:2]])
    assert torch.equal(out[: want.numel()], want)


def _graphs_or_skip():
    from gsample.runtime import cuda_graphs

    if not cuda_graphs.enabled():  # scripts/memcheck.py turns the graphs off
        pytest.skip("CUDA graphs are off in this process (GSAMPLE_CUDA_GRAPHS=0 or no caching)")


def test_a_captured_pack_reads_each_replay_s_counts_and_contents():
    _graphs_or_skip()
    a = torch.arange(100, device="cuda")
    b = torch.arange(100, 150, device="cuda")
    na, nb = _count(10), _count(5)
    out = torch.zeros(150, dtype=torch.int64, device="cuda")
    desc = torch.empty(8, dtype=torch.int64).pin_memory()
    pack_parts([(a, na, 0), (b, nb, 1)], out, desc)  # loads the kernel
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        pack_parts([(a, na, 0), (b, nb, 1)], out, desc)
    for n, m in ((3, 0), (100, 49), (0, 2)):
        na.fill_(n)
        nb.fill_(m)
        a.add_(1)
        graph.replay()
        torch.cuda.synchronize()
        want = torch.cat([a[:n], b[: m + 1]])
        assert torch.equal(out[: want.numel()], want)


def test_parts_must_be_flat_tensors_of_out_s_dtype():
    out = torch.zeros(10, dtype=torch.int64, device="cuda")
    desc = torch.empty(8, dtype=torch.int64).pin_memory()
    with pytest.raises(ValueError, match="parts: contiguous 1-D"):
        pack_parts([(torch.zeros(2, 2, dtype=torch.int64, device="cuda"), None, 1)], out, desc)
    with pytest.raises(ValueError, match="parts: counts must be int64"):
        pack_parts([(out, torch.zeros(1, dtype=torch.int32, device="cuda"), 0)], out, desc)
    with pytest.raises(ValueError, match="out: 10 entries"):
        pack_parts([(torch.zeros(11, dtype=torch.int64, device="cuda"), None, 1)], out, desc)


def test_graphsage_replays_copy_its_packed_results_out():
    """A node-wise sampler's graph packs the blocks its output trims and copies each call's
    keys to the device itself; replays copy the blocks out of that buffer (one copy, split
    into views) and still draw the torch backend's samples (each call's own keys), each
    call's results surviving the next replays."""
    _graphs_or_skip()
    A = gs.datasets.rmat(20_000, 300_000, seed=4).to("cuda")
    sampler = gs.compile(graphsage, backend="cuda")
    reference = gs.compile(graphsage, backend="torch")
    seeds = [torch.randperm(A.num_nodes, device="cuda")[:300] for _ in range(5)]
    gs.manual_seed(2)
    got = [sampler(A, s) for s in seeds]  # eager, capture, replays
    gs.manual_seed(2)
    for g, s in zip(got, seeds):
        assert_same(g, reference(A, s))
    program = sampler.lowered(A, seeds[0])
    assert program.keys_in_region  # its replays copy their keys in the graph
    region = program.region
    (cap,) = region.captured.values()
    assert cap.keys is not None and cap.keys[0] is program.key_buffers[0]
    assert region.packed and cap.replayed.packed is not None
    plans = [p for p in cap.replayed.plans.values() if p]
    assert len(plans) == 1 and plans[0].groups is not None
