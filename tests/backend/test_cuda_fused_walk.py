"""The generated fused-walk kernel (``kernels/fused_walk.cu``) against the torch backend on the
same GPU, walk for walk (skipped without a GPU): a compiled ``gs.walk`` of a per-walker step
is one ``gs_fused_walk`` launch per mini-batch (or super-batch) and draws, bit for bit, what
the torch backend's fused op and the unrolled program draw (docs/architecture.md §3, consequence
3)."""

import pytest
import torch
from helpers import assert_same, example, loader_outputs, run_seeded

import gsample as gs
from gsample.backend import get_backend
from gsample.ir import Op
from gsample.runtime import Options

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
]


@pytest.fixture(scope="module")
def graphs():
    pytest.importorskip("cupy")
    A = gs.datasets.rmat(50_000, 800_000, seed=3)
    return A, A.to("cuda")


def mh(length, fuse=True):
    step = example("metropolis_hastings").mh_step
    return lambda A, seeds: gs.walk(step, A, seeds, length, fuse=fuse)


def phased(A, cur, prev, t):
    """Two phases: stop / restart / jump walks, float64 degree ratios, casts, masks."""
    nxt = A.random_walk(cur, 1 + t, stop_prob=0.05, restart_prob=0.2 * t, jump_prob=0.1)[:, -1]
    deg = (A**0).sum(axis=0).double()
    far = (deg[nxt.clamp(min=0)] / (deg[cur] + 1.0)).float().clamp(max=3.0) > 1.5
    return torch.where(far & (nxt != prev), cur, nxt)


STEPS = {
    "metropolis_hastings": mh(80),
    "phased": lambda A, seeds: gs.walk(phased, A, seeds, 25, period=2),
}


def seeds_of(n, N, seed=1):
    return torch.randint(0, N, (n,), generator=torch.Generator().manual_seed(seed)).cuda()


def test_fused_walk_has_a_cuda_kernel():
    assert get_backend("cuda").impl(Op.FUSED_WALK).backend == "cuda"
    assert get_backend("cuda").impl(Op.FUSED_WALK, sync_free=True).backend == "cuda"


@pytest.mark.parametrize("sync_free", [True, False], ids=["device-keys", "host-keys"])
@pytest.mark.parametrize("name", sorted(STEPS))
def test_kernel_equals_torch_backend(graphs, name, sync_free):
    _, G = graphs
    fn, seeds = STEPS[name], seeds_of(4096, G.num_nodes)
    runtime = Options(sync_free=sync_free)
    cuda = gs.compile(fn, backend="cuda", runtime=runtime)
    assert [n.op for n in cuda.program(G, seeds).nodes].count(Op.FUSED_WALK) == 1
    want = run_seeded(gs.compile(fn, backend="torch"), G, seeds, seed=3)
    for call in range(3):  # the third replays a CUDA graph where one is made
        assert torch.equal(run_seeded(cuda, G, seeds, seed=3), want), f"call {call}"
    if name == "metropolis_hastings":
        unrolled = run_seeded(gs.compile(mh(80, fuse=False), backend="cuda"), G, seeds, seed=3)
        assert torch.equal(unrolled, want)
    assert int((want[:, -1] < 0).sum()) < want.shape[0]


def test_super_batched_equals_one_by_one(graphs):
    _, G = graphs
    seeds = seeds_of(2000, G.num_nodes, seed=5)
    fn = mh(30)
    ref = loader_outputs(G, gs.compile(mh(30, fuse=False), backend="torch"), seeds, 250)
    for n in (1, 4):
        got = loader_outputs(G, gs.compile(fn, backend="cuda"), seeds, 250, super_batch=n)
        assert_same(got, ref, f"super_batch={n}")


def test_one_launch_per_mini_batch(graphs):
    _, G = graphs
    seeds = seeds_of(1024, G.num_nodes)
    sampler = gs.compile(mh(80), backend="cuda")
    run_seeded(sampler, G, seeds, seed=1)  # compile, warm up
    torch.cuda.synchronize()
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            sampler(G, seeds)
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type.name == "CUDA"]
    assert sum("gs_fused_walk" in x for x in names) == 3, names
    assert not any("gs_random_walk" in x for x in names)


def test_bad_ids_raise(graphs):
    _, G = graphs
    sampler = gs.compile(mh(5), backend="cuda")
    with pytest.raises(IndexError):
        sampler(G, torch.tensor([G.num_nodes], device="cuda"))

    def escapes(A, cur, prev, t):
        return A.random_walk(cur, 1)[:, 1].clamp(min=0) + G.num_nodes

    bad = gs.compile(lambda A, seeds: gs.walk(escapes, A, seeds, 3), backend="cuda")
    with pytest.raises(IndexError):
        bad(G, seeds_of(8, G.num_nodes))


def test_on_a_snap_graph(notredame):
    pytest.importorskip("cupy")
    G = notredame.to("cuda")
    seeds = seeds_of(8192, G.num_nodes, seed=9)
    want = run_seeded(gs.compile(mh(80), backend="torch"), G, seeds, seed=2)
    got = run_seeded(gs.compile(mh(80), backend="cuda"), G, seeds, seed=2)
    assert torch.equal(got, want)
    cpu = run_seeded(gs.compile(mh(80)), notredame, seeds.cpu(), seed=2)
    assert float((cpu == got.cpu()).double().mean()) >= 0.999  # torch CPU divides exactly
