"""The CUDA backend against the torch backend, sample for sample (skipped without a GPU)."""
import pytest
import torch

import gsample as gs
from gsample.backend import get_backend
from gsample.backend.torch import fused_select, select
from gsample.ir import Op
from gsample.random import hash_tensor, op_key

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]


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
    col = torch.randint(-2**62, 2**62, (100_000,), generator=g).cuda()
    draw = torch.randint(0, 2**62, (100_000,), generator=g).cuda()
    for key in (0, op_key(7, 3, 2), 2**64 - 1):
        assert torch.equal(cuda.hash_words(key, col, draw), hash_tensor(key, col, draw))


@pytest.mark.parametrize("k", [0, 1, 5, 25, 1000])
@pytest.mark.parametrize("replace", [False, True])
def test_draws_equal_torch(cuda, k, replace):
    deg = torch.randint(0, 3000, (4000,), generator=torch.Generator().manual_seed(k)).cuda()
    deg[::7] = 0
    deg[5] = 2_000_000                    # a hub: its candidates spread over the whole grid
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
        gs.manual_seed(s)
        eager = graphsage(hub_graph, seeds)
        gs.manual_seed(s)
        got = compiled(hub_graph, seeds)
        for x, y in zip(eager, got):
            for p, q in zip(x.edges(), y.edges()):
                assert torch.equal(p, q)
