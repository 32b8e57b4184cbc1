"""The CUDA backend against the torch backend, sample for sample (skipped without a GPU)."""

import pytest
import torch

import gsample as gs
from gsample.backend import get_backend
from gsample.backend.torch import fused_select, select
from gsample.base.random import hash_tensor, op_key
from gsample.ir import Op

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
]


@pytest.fixture(scope="module")
def cuda():
    from gsample.backend.cuda import sampling

    return sampling


@pytest.fixture(scope="module")
def hub_graph():
    """R-MAT plus one hub column of 1,000,000 in-edges (node 0)."""
    g = gs.datasets.rmat(50_000, 400_000, seed=3)
    src, dst, _ = g.edges()
    hub = torch.randint(0, 50_000, (1_000_000,), generator=torch.Generator().manual_seed(0))
    ei = torch.stack([torch.cat([src, hub]), torch.cat([dst, torch.zeros_like(hub)])])
    return gs.Matrix.from_edge_index(ei, num_nodes=50_000).to("cuda")


def test_hash_words_bit_equal(cuda):
    g = torch.Generator().manual_seed(1)
    col = torch.randint(-(2**62), 2**62, (100_000,), generator=g).cuda()
    draw = torch.randint(0, 2**62, (100_000,), generator=g).cuda()
    for key in (0, op_key(7, 3, 2), 2**64 - 1):
        assert torch.equal(cuda.hash_words(key, col, draw), hash_tensor(key, col, draw))


@pytest.mark.parametrize("k", [0, 1, 5, 25, 1000])
@pytest.mark.parametrize("replace", [False, True])
def test_draws_equal_torch(cuda, k, replace):
    deg = torch.randint(0, 3000, (4000,), generator=torch.Generator().manual_seed(k)).cuda()
    deg[::7] = 0
    deg[5] = 2_000_000  # a hub: its candidates spread over the whole grid
    key = op_key(11, 4, 9)
    ref = select.select_in_columns(deg, k, replace, key)
    got = select.select_in_columns(deg, k, replace, key, draws=cuda.CudaDraws)
    for a, b in zip(ref, got):
        assert torch.equal(a, b)


@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("k", [1, 10, 25, 3000])
def test_fused_op_equals_torch_backend(cuda, hub_graph, replace, k):
    cols = torch.cat([torch.zeros(3, dtype=torch.long), torch.arange(1, 2000, 3)]).cuda()
    key = op_key(5, 0, 1)
    a = fused_select.slice_individual_sample(hub_graph.csc, cols, k, replace, key)
    b = cuda.slice_individual_sample(hub_graph.csc, cols, k, replace, key)
    for x, y in zip(gs.Matrix(a).edges(), gs.Matrix(b).edges()):
        assert torch.equal(x, y)


def graphsage(A, seeds, fanouts=(25, 10)):
    blocks = []
    for k in fanouts:
        s = A[:, seeds].individual_sample(k)
        blocks.append(s)
        seeds = s.all_nodes()
    return blocks


def test_compiled_on_cuda_backend_equals_eager(hub_graph):
    seeds = torch.arange(0, 20_000, 37).cuda()
    compiled = gs.compile(graphsage, backend="cuda")
    program = compiled.program(hub_graph, seeds)
    fused = [n for n in program.nodes if n.op is Op.SLICE_INDIVIDUAL_SAMPLE]
    assert len(fused) == 2 and all(get_backend("cuda").supports(n.op) for n in fused)
    for s in (0, 1):
        with gs.use_backend("torch"):  # the reference (by default: the kernels)
            gs.manual_seed(s)
            eager = graphsage(hub_graph, seeds)
        gs.manual_seed(s)
        got = compiled(hub_graph, seeds)
        for x, y in zip(eager, got):
            for p, q in zip(x.edges(), y.edges()):
                assert torch.equal(p, q)


# ----------------------------------------------------------------------------- weighted and
# collective draws. Float steps: same words, each IEEE step rounded alone (no FMA) and the
# same libdevice double log as torch's float64 log kernel, so the keys are asserted equal.
def _gen(seed):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_exp_keys_equal_torch(cuda, dtype):
    g = _gen(21)
    n = 300_000
    col = torch.randint(0, 5000, (n,), generator=g).cuda()
    offset = torch.randint(0, 2**40, (n,), generator=g).cuda()
    probs = (torch.rand(n, generator=g, dtype=torch.float64) * 10 + 1e-12).to(dtype).cuda()
    probs[::5] = torch.rand(probs[::5].numel(), generator=g).to(dtype).cuda() ** 8
    key = op_key(3, 1, 4)
    ref = select.Draws.exp_keys(col, offset, probs, key)
    got = cuda.CudaDraws.exp_keys(col, offset, probs, key)
    assert got.dtype == torch.float64 and torch.equal(ref, got)


@pytest.mark.parametrize("weighted", [False, True])
def test_row_keys_equal_torch(cuda, weighted):
    g = _gen(5)
    gid = torch.randperm(2_000_000, generator=g)[:400_000].cuda()
    probs = torch.rand(gid.numel(), generator=g).cuda() + 1e-9 if weighted else None
    key = op_key(1, 9, 3)
    ref = select.Draws.row_keys(gid, key, probs)
    got = cuda.CudaDraws.row_keys(gid, key, probs)
    assert ref.dtype == got.dtype and torch.equal(ref, got)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("k", [1, 64, 100_000])
def test_row_draws_equal_torch(cuda, weighted, k):
    g = _gen(k)
    cand = torch.randperm(1_000_000, generator=g)[:250_000].sort().values.cuda()
    cum = None
    if weighted:
        p = torch.rand(cand.numel(), generator=g, dtype=torch.float64) ** 6 + 1e-300
        cum = torch.cumsum(p.cuda(), 0)
    key = op_key(2, 5, 7)
    ref = select.Draws.row_draws(cand, k, key, cum)
    got = cuda.CudaDraws.row_draws(cand, k, key, cum)
    assert torch.equal(ref, got)


def _draws_agreement(a, b) -> float:
    """Share of (column, offset) draws two ``select_in_columns`` results share (multisets)."""
    from collections import Counter

    x, y = (Counter(zip(r[1].tolist(), r[2].tolist())) for r in (a, b))
    return sum((x & y).values()) / max(sum((x | y).values()), 1)


@pytest.mark.parametrize("k", [1, 5, 25, 1000])
@pytest.mark.parametrize("replace", [False, True])
def test_weighted_draws_equal_torch(cuda, k, replace):
    """Exponential keys: the same bits. With replacement the backend's own inverse CDF
    (running sums per column, ``kernels/cdf.cu``): the same columns, and the same draws up
    to float rounding (docs/architecture.md §3)."""
    g = _gen(k)
    deg = torch.randint(0, 300, (4000,), generator=g)
    deg[::7] = 0
    deg[5] = 300_000
    probs = torch.rand(int(deg.sum()), generator=g) ** 3
    probs[torch.rand(probs.numel(), generator=g) < 0.1] = 0
    deg, probs, key = deg.cuda(), probs.cuda(), op_key(11, 4, 9)
    ref = select.select_in_columns(deg, k, replace, key, probs)
    got = select.select_in_columns(deg, k, replace, key, probs, draws=cuda.CudaDraws)
    for a, b in zip(ref, got[:2] if replace else got):
        assert torch.equal(a, b)
    assert _draws_agreement(ref, got) >= (0.999 if replace else 1.0)


def _edges_equal(a, b):
    for x, y in zip(gs.Matrix(a).edges(), gs.Matrix(b).edges()):
        assert torch.equal(x, y)
    assert torch.equal(a.indptr, b.indptr)
    assert (a.row_ids is None) == (b.row_ids is None)
    if a.row_ids is not None:
        assert torch.equal(a.row_ids, b.row_ids)


@pytest.fixture(scope="module")
def weighted_hub_graph(hub_graph):
    """Weights with zeros, and a positive one in every column with edges (the CUDA backend's
    samplers check ``probs`` themselves: they are valid here)."""
    p = torch.rand(hub_graph.csc.nnz, generator=_gen(9)).cuda() ** 2
    p[::11] = 0
    indptr = hub_graph.csc.indptr
    p[indptr[1:][indptr[1:] > indptr[:-1]] - 1] = 0.5
    return hub_graph, p


def _edges_agree(a, b):
    """The same columns' counts, and >= 99.9% of the (column, edge id) draws shared."""
    from collections import Counter

    assert torch.equal(a.indptr, b.indptr)
    x, y = (
        Counter(zip(gs.Matrix(m).edges()[1].tolist(), gs.Matrix(m).edges()[2].tolist()))
        for m in (a, b)
    )
    assert sum((x & y).values()) >= 0.999 * sum((x | y).values())


@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("k", [1, 10, 3000])
def test_weighted_individual_op_equals_torch_backend(cuda, weighted_hub_graph, replace, k):
    """Without replacement the same edges; with replacement up to float rounding (the
    backend's own inverse CDF)."""
    A, probs = weighted_hub_graph
    cols = torch.cat([torch.zeros(3, dtype=torch.long), torch.arange(1, 2000, 3)]).cuda()
    key = op_key(5, 0, 1)
    same = _edges_agree if replace else _edges_equal
    same(
        fused_select.slice_individual_sample(A.csc, cols, k, replace, key, probs),
        cuda.slice_individual_sample(A.csc, cols, k, replace, key, probs),
    )
    same(
        select.individual_sample(A.csc, k, replace, key, probs),
        cuda.individual_sample(A.csc, k, replace, key, probs),
    )


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("k", [0, 1, 100, 4000, 60_000])
def test_collective_op_equals_torch_backend(cuda, hub_graph, weighted, replace, k):
    A = hub_graph.csc
    node_probs = None
    if weighted:
        node_probs = torch.rand(A.num_rows, generator=_gen(k), dtype=torch.float64) ** 4
        node_probs[::13] = 0
        node_probs = node_probs.float().cuda()
    cols = torch.cat([torch.zeros(2, dtype=torch.long), torch.arange(1, 30_000, 2)]).cuda()
    key = op_key(6, 3, 2)
    _edges_equal(
        fused_select.slice_collective_sample(A, cols, k, replace, key, node_probs),
        cuda.slice_collective_sample(A, cols, k, replace, key, node_probs),
    )
    _edges_equal(
        select.collective_sample(A, k, replace, key, node_probs),
        cuda.collective_sample(A, k, replace, key, node_probs),
    )


def test_compiled_ladies_on_cuda_backend_equals_eager(hub_graph):
    from helpers import example

    ladies = example("ladies")
    A = ladies.normalize(hub_graph)
    seeds = torch.arange(0, 20_000, 41).cuda()
    layers = (2000, 2000)

    def fn(A, seeds):
        return ladies.ladies(A, seeds, layers=layers)

    compiled = gs.compile(fn, backend="cuda")
    program = compiled.program(A, seeds)
    ops = [n.op for n in program.nodes]
    collective = [o for o in ops if o in (Op.COLLECTIVE_SAMPLE, Op.SLICE_COLLECTIVE_SAMPLE)]
    assert len(collective) == 2 and all(get_backend("cuda").supports(o) for o in collective)
    for s in (0, 1):
        with gs.use_backend("torch"):  # the reference (by default: the kernels)
            gs.manual_seed(s)
            eager = fn(A, seeds)
        gs.manual_seed(s)
        got = compiled(A, seeds)
        for x, y in zip(eager, got):
            assert torch.equal(x.row_ids, y.row_ids)
            for p, q in zip(x.edges(), y.edges()):
                assert torch.equal(p, q)
