"""``kernels/walk.cu`` against the torch backend, walk for walk (skipped without a GPU).

Uniform walks must be identical (docs/architecture.md §3, consequence 3); weighted and node2vec
walks agree on at least 99.9% of steps (their comparisons are exact, so in practice all of them).
"""

import pytest
import torch

import gsample as gs
from gsample.backend import get_backend
from gsample.backend.torch import walk as reference
from gsample.backend.torch.alias import alias_table
from gsample.base.random import op_key
from gsample.ir import Op

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
]

VARIANTS = {
    "deepwalk": ({}, True),
    "ppr": ({"stop_prob": 0.15}, True),
    "restart-jump": ({"restart_prob": 0.2, "jump_prob": 0.1}, True),
    "weighted": ({"probs": True}, False),
    "node2vec": ({"p": 2.0, "q": 0.5}, False),
    "node2vec-weighted": ({"p": 0.3, "q": 3.0, "probs": True, "stop_prob": 0.01}, False),
}


@pytest.fixture(scope="module")
def graphs():
    A = gs.datasets.rmat(50_000, 800_000, seed=3, weighted=True)
    return A, A.to("cuda")


@pytest.fixture(scope="module")
def small():
    """A graph small enough for the guards' tests to run under memcheck in seconds."""
    return gs.datasets.rmat(3_000, 40_000, seed=3, weighted=True).to("cuda")


def agreement(a, b):
    return float((a == b).double().mean())


@pytest.fixture(params=[False, True], ids=["walker-major", "step-major"])
def major(request, monkeypatch):
    """The walks written walker-major, or step-major and transposed (as for many walkers:
    ``gsample.backend.cuda.walk.TIME_MAJOR_MIN``, here lowered to every launch)."""
    from gsample.backend.cuda import walk as cuda_walk

    monkeypatch.setattr(cuda_walk, "TIME_MAJOR_MIN", 0 if request.param else None)
    return request.param


@pytest.mark.parametrize("shape", [(1, 1), (81, 1), (1, 70), (33, 65), (81, 100_003)])
def test_the_transpose_kernel_is_torch_s(shape):
    """``gs_transpose_i64`` (``kernels/transpose.cu``): a tile of 32 x 32 at a time, every
    index bounded by the shape; partial tiles on both sides, one row, one column."""
    from gsample.backend.cuda.module import launch

    R, C = shape
    x = torch.randint(-(2**62), 2**62, shape, device="cuda")
    out = torch.full((C, R), 7, dtype=torch.int64, device="cuda")
    tiles = -(-R // 32) * -(-C // 32)
    launch("transpose", "gs_transpose_i64", tiles, x, R, C, out, block=256, grid=min(tiles, 97))
    assert torch.equal(out, x.t())


def test_walk_has_a_cuda_kernel():
    assert get_backend("cuda").impl(Op.RANDOM_WALK).backend == "cuda"


@pytest.mark.parametrize("name", list(VARIANTS))
def test_kernel_equals_torch_backend(graphs, name, major):
    A, G = graphs
    kw, exact = VARIANTS[name]
    kw = dict(kw)
    seeds = torch.randint(0, A.num_nodes, (20_000,), generator=torch.Generator().manual_seed(1))
    key = op_key(7, 3, 2)
    want_alias = alias_table(A.csc, A.values) if kw.pop("probs", False) else None
    alias = None if want_alias is None else alias_table(G.csc, G.values)
    want = reference.random_walk(A.csc, seeds, 40, key, alias=want_alias, **kw)
    got = (
        get_backend("cuda").impl(Op.RANDOM_WALK).fn(G.csc, seeds.cuda(), 40, key, alias=alias, **kw)
    )
    torch_cuda = reference.random_walk(G.csc, seeds.cuda(), 40, key, alias=alias, **kw)
    assert got.shape == want.shape == (20_000, 41)
    assert torch.equal(torch_cuda, got)  # the same tables on the device: equal
    if exact:
        assert torch.equal(got.cpu(), want)
    else:
        assert agreement(got.cpu(), want) >= 0.999


@pytest.mark.parametrize("name", list(VARIANTS))
def test_compiled_cuda_backend_equals_eager_torch(graphs, name):
    A, G = graphs
    kw, exact = VARIANTS[name]
    kw = dict(kw)
    weighted = kw.pop("probs", False)

    def walk(A, seeds):
        return A.random_walk(seeds, 80, probs=A.values if weighted else None, **kw)

    seeds = torch.randint(0, A.num_nodes, (1024,), generator=torch.Generator().manual_seed(2))
    gs.manual_seed(5)
    want = walk(A, seeds)
    gs.manual_seed(5)
    got = gs.compile(walk, backend="cuda")(G, seeds.cuda())
    with gs.use_backend("cuda"):
        gs.manual_seed(5)
        eager = walk(G, seeds.cuda())
    assert torch.equal(got, eager)
    if exact:
        assert torch.equal(got.cpu(), want)
    else:
        assert agreement(got.cpu(), want) >= 0.999


def test_cuda_bad_seeds_raise(graphs):
    _, G = graphs
    f = gs.compile(lambda A, seeds: A.random_walk(seeds, 4), backend="cuda")
    with pytest.raises(IndexError, match="seeds: node id 50000 is out of range"):
        f(G, torch.tensor([0, 50_000], device="cuda"))
    with gs.use_backend("cuda"), pytest.raises(IndexError, match="seeds: node id -3"):
        G.random_walk(torch.tensor([-3], device="cuda"), 4)


@pytest.mark.parametrize("bad", [-1, -(2**40), 2**31, 2**32 + 1, 2**40, 2**63 - 1, "M"])
@pytest.mark.parametrize("copies", [1, 3])
@pytest.mark.parametrize("node2vec", [False, True])
def test_the_kernel_guards_seeds_it_did_not_check(small, bad, copies, node2vec, major):
    """A seed outside the id space that reaches the kernel (one made by an earlier op whose
    flag is still pending) walks nowhere, its row all -1, the other walkers walk as without
    it, and the call raises an IndexError naming ``seeds`` when the flags are read (``M``:
    the graph's nodes, a super-batch's ``copies * n`` ids)."""
    from gsample.backend.cuda import walk as cuda_walk
    from gsample.base import validate as V
    from gsample.base.random import DeviceKey, key_prefix, signed

    G = small
    n = G.num_nodes
    gen = torch.Generator().manual_seed(9)
    seeds = torch.cat(
        [torch.randint(0, n, (300,), generator=gen) + b * n for b in range(copies)]
    ).cuda()
    prefix = key_prefix(7, 3)
    key = DeviceKey(
        torch.tensor([signed(prefix), 0], device="cuda"), prefix, 0, copies, n if copies > 1 else 0
    )
    kw = {"p": 2.0, "q": 0.5} if node2vec else {}
    want = cuda_walk.random_walk_sync_free(G.csc, seeds, 20, key, **kw)
    value = copies * n if bad == "M" else bad
    at = 0 if value < 0 else seeds.numel() - 1  # where the batches stay grouped by id
    bad_seeds = seeds.clone()
    bad_seeds[at] = value
    with V.deferred():
        got = cuda_walk.random_walk_sync_free(G.csc, bad_seeds, 20, key, **kw)
        assert bool((got[at] == -1).all()), "a bad seed walks nowhere"
        keep = torch.ones(seeds.numel(), dtype=torch.bool, device="cuda")
        keep[at] = False
        if copies == 1 or at != 0:  # (a super-batch's first walker moved a position)
            assert torch.equal(got[keep], want[keep])
        with pytest.raises(IndexError, match="seeds: a node id is out of range"):
            V.read_back([])


#: gsample.backend.cuda.walk's switches of node2vec's edge test and of first-order walks'
#: modules: (LAZY_EDGE_TEST, SEARCH_WAYS, PREFETCH_PIVOTS, KEEP_PREV_BOUNDS, LEAN_FIRST_ORDER)
EDGE_TESTS = {
    "before": (False, 2, False, False, False),
    "default": (True, 4, True, True, True),
    "lazy-binary": (True, 2, False, True, True),
    "eager-4-ways": (False, 4, True, False, True),
    "lazy-8-ways": (True, 8, True, True, True),
}


@pytest.mark.parametrize("setting", list(EDGE_TESTS))
@pytest.mark.parametrize("name", ["deepwalk", "node2vec", "node2vec-weighted"])
def test_every_edge_test_switch_gives_the_same_walks(graphs, name, setting, major, monkeypatch):
    """node2vec's edge test searched only where the coin needs it, by 2, 4 or 8 ways, its
    first pivots read early, prev's bounds kept (or none of it), and first-order walks with
    or without node2vec's code: the torch backend's walks on the device, bit for bit, one
    mini-batch and a super-batch."""
    from gsample.backend.cuda import walk as cuda_walk
    from gsample.base.random import DeviceKey, key_prefix, signed

    names = ("LAZY_EDGE_TEST", "SEARCH_WAYS", "PREFETCH_PIVOTS", "KEEP_PREV_BOUNDS")
    for attr, value in zip((*names, "LEAN_FIRST_ORDER"), EDGE_TESTS[setting]):
        monkeypatch.setattr(cuda_walk, attr, value)
    A, G = graphs
    kw = dict(VARIANTS[name][0])
    alias = alias_table(G.csc, G.values) if kw.pop("probs", False) else None
    seeds = torch.randint(0, A.num_nodes, (20_000,), generator=torch.Generator().manual_seed(1))
    seeds = seeds.cuda()
    key = op_key(7, 3, 2)
    got = cuda_walk.random_walk(G.csc, seeds, 40, key, alias=alias, **kw)
    assert torch.equal(got, reference.reference_walk(G.csc, seeds, 40, key, alias=alias, **kw))
    n = A.num_nodes
    enc = torch.cat([seeds[:12_000], seeds[12_000:] + n])
    prefix = key_prefix(7, 3)
    dk = DeviceKey.of(torch.tensor([signed(prefix), 5], device="cuda"), prefix, 5, 2, n)
    got = cuda_walk.random_walk_sync_free(G.csc, enc, 25, dk, alias=alias, **kw)
    assert torch.equal(got, reference.reference_walk(G.csc, enc, 25, dk.host(), alias=alias, **kw))
