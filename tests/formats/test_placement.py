"""Graph placement (gsample.formats.placement): ``A.to(device, placement=..., budget=...)``.

On the CPU: the API, the "auto" rule with a budget, and the errors (each naming its argument;
pinning without CUDA). On a GPU (``-m cuda``): a UVA matrix lives in pinned host memory (not
in device memory) and every sampler draws on it exactly what it draws on the device-resident
graph, forced onto UVA by a budget: GraphSAGE [25, 10] (eager and compiled, both backends,
super-batched), LADIES (values hoisted from the graph), and walks (uniform, weighted through
alias tables, node2vec, PPR).
"""

import functools

import pytest
import torch
from helpers import assert_same, example, graphsage

import gsample as gs
from gsample.formats import placement as P

cuda = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]


# ----------------------------------------------------------------------------- CPU
def test_a_matrix_knows_its_placement(small_graph):
    assert small_graph.placement == "device"
    assert "placement='device'" in repr(small_graph)
    assert small_graph.to("cpu", placement="auto").placement == "device"  # nothing to choose
    B = small_graph.to("cpu", placement="device")
    assert torch.equal(B.csc.rows, small_graph.csc.rows)


def test_graph_bytes_count_every_array(small_graph):
    c = small_graph.csc
    arrays = [c.indptr, c.rows, c.values, c.eids]
    assert P.graph_bytes(c) == sum(t.numel() * t.element_size() for t in arrays)


def test_the_auto_rule_keeps_a_graph_on_the_device_while_it_takes_half_the_budget(small_graph):
    nbytes = P.graph_bytes(small_graph.csc)
    assert P.choose(nbytes, 2 * nbytes) == "device"
    assert P.choose(nbytes, 2 * nbytes - 1) == "uva"
    assert P.choose(nbytes, 0) == "uva"
    assert P.choose(0, 0) == "device"
    assert P.DEVICE_SHARE == 0.5


@pytest.mark.parametrize(
    "device, kwargs, error, match",
    [
        ("cpu", {"placement": "host"}, ValueError, "placement: must be one of"),
        ("cpu", {"placement": None}, ValueError, "placement: must be one of"),
        ("cpu", {"placement": "uva"}, ValueError, "placement: 'uva' .* device must be a CUDA"),
        ("cpu", {"placement": "auto", "budget": -1}, ValueError, "budget: must be >= 0"),
        ("cpu", {"placement": "auto", "budget": 1.5}, TypeError, "budget: must be an int"),
        ("cpu", {"placement": "auto", "budget": True}, TypeError, "budget: must be an int"),
        ("cpu", {"placement": "uva", "budget": 10}, ValueError, "budget: only used with"),
        ("cpu", {"budget": 10}, ValueError, "budget: only used with"),
        ("tpu:0", {"placement": "device"}, ValueError, "device: "),
        ("cuda:x", {"placement": "uva"}, ValueError, "device: "),
    ],
)
def test_bad_placement_arguments_name_the_argument(small_graph, device, kwargs, error, match):
    with pytest.raises(error, match=match):
        small_graph.to(device, **kwargs)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error without CUDA")
@pytest.mark.parametrize(
    "placement, match",
    [
        ("uva", "placement='uva': pinning host memory for a GPU to read \\(UVA\\) needs CUDA"),
        ("auto", "device: cuda needs a CUDA GPU"),
        ("device", "device: cuda needs a CUDA GPU"),
    ],
)
def test_without_cuda_pinning_raises_a_clear_error(small_graph, placement, match):
    with pytest.raises(RuntimeError, match=match):
        small_graph.to("cuda", placement=placement)


def test_offload_leaves_a_device_graph_alone(small_graph):
    table = torch.zeros(small_graph.num_edges, 2, dtype=torch.int64)
    assert P.offload(small_graph.csc, table) is table
    assert P.host_twin(small_graph.csc) is None
    assert not P.is_mapped(small_graph.csc.rows)


# ----------------------------------------------------------------------------- GPU
@pytest.fixture(scope="module")
def graphs():
    """``(device-resident, UVA)`` copies of one graph of 2**20+ edges (the CUDA backend reads
    a device graph that large through int32 copies, a UVA one in place), weighted."""
    A = gs.datasets.rmat(60_000, 1_300_000, seed=2, weighted=True, device="cuda")
    budget = P.graph_bytes(A.csc)  # pretend a GPU the graph does not fit
    H = A.to("cuda", placement="auto", budget=budget)
    return A, H


@pytest.mark.parametrize("dummy", [pytest.param(0, marks=cuda)])
def test_uva_edge_arrays_stay_in_pinned_host_memory_and_indptr_moves_to_the_device(graphs, dummy):
    A, H = graphs
    assert H.placement == "uva" and "placement='uva'" in repr(H)
    assert H.device == A.device and H.csc.rows.is_cuda
    for name in ("rows", "values", "eids"):
        mapped, dev = getattr(H.csc, name), getattr(A.csc, name)
        assert P.is_mapped(mapped) and P.host_of(mapped).is_pinned(), name
        assert torch.equal(mapped, dev), name  # read by device kernels
    assert H.csc.indptr.is_cuda and not P.is_mapped(H.csc.indptr)
    assert torch.equal(H.csc.indptr, A.csc.indptr)
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    again = A.to("cuda", placement="uva")
    indptr_bytes = A.csc.indptr.numel() * 8
    assert torch.cuda.memory_allocated() - before <= indptr_bytes + P.graph_bytes(A.csc) // 50
    assert again.placement == "uva" and not P.is_mapped(again.csc.indptr)
    assert A.to("cuda", placement="auto", budget=4 * P.graph_bytes(A.csc)).placement == "device"


@pytest.mark.parametrize("dummy", [pytest.param(0, marks=cuda)])
def test_indptr_stays_in_host_memory_where_it_would_take_over_half_the_budget(graphs, dummy):
    A, _ = graphs
    indptr_bytes = A.csc.indptr.numel() * 8
    small = A.to("cuda", placement="auto", budget=2 * indptr_bytes - 1)
    assert small.placement == "uva" and P.is_mapped(small.csc.indptr)
    fits = A.to("cuda", placement="auto", budget=2 * indptr_bytes)
    assert fits.placement == "uva" and not P.is_mapped(fits.csc.indptr)
    sampler = functools.partial(gs.compile(graphsage, backend="cuda"), fanouts=(25, 10))
    with gs.use_backend("cuda"):
        want = _epoch(A, sampler, batches=2)
        for G in (small, fits):  # the same samples either way
            assert_same(_epoch(G, sampler, batches=2), want)


@pytest.mark.parametrize("dummy", [pytest.param(0, marks=cuda)])
def test_a_uva_graph_moves_back_to_the_device_and_the_cpu(graphs, dummy):
    A, H = graphs
    D = H.to("cuda")
    assert D.placement == "device" and not P.is_mapped(D.csc.rows)
    assert torch.equal(D.csc.rows, A.csc.rows) and torch.equal(D.csc.indptr, A.csc.indptr)
    C = H.to("cpu")
    assert C.device.type == "cpu" and torch.equal(C.csc.eids, A.csc.eids.cpu())


def _epoch(G, sampler, batches=6, **kw):
    seeds = torch.arange(0, 512 * batches, device=G.device) * 7 % G.num_nodes
    gs.manual_seed(0)
    return [(b.index, b.out) for b in gs.DataLoader(G, sampler, seeds, 512, seed=4, **kw)]


@pytest.mark.parametrize("backend", [pytest.param(b, marks=cuda) for b in ("torch", "cuda")])
@pytest.mark.parametrize("mode", ["eager", "compiled", "super-batched"])
def test_graphsage_on_uva_equals_the_device_graph(graphs, backend, mode):
    A, H = graphs
    fn = graphsage if mode == "eager" else gs.compile(graphsage, backend=backend)
    sampler = functools.partial(fn, fanouts=(25, 10))
    kw = {"super_batch": 3} if mode == "super-batched" else {}
    with gs.use_backend(backend):
        assert_same(_epoch(H, sampler, **kw), _epoch(A, sampler, **kw))


@pytest.mark.parametrize("backend", [pytest.param(b, marks=cuda) for b in ("torch", "cuda")])
@pytest.mark.parametrize(
    "walk",
    [
        {},
        {"p": 2.0, "q": 0.5},
        {"stop_prob": 0.15},
        {"restart_prob": 0.2, "jump_prob": 0.1},
        {"probs": "weight"},
        {"probs": "degree"},
    ],
)
def test_walks_on_uva_equal_the_device_graph(graphs, backend, walk):
    """Weighted walks read alias tables: built once per graph (compiled: hoisted by the
    pre-processing pass, "degree" from whole-graph sums), kept in host memory for UVA."""
    A, H = graphs
    biased = example("biased_deepwalk").biased_deepwalk

    def walker(G, seeds):
        kw = dict(walk)
        if "probs" in kw:
            return biased(G, seeds, 20, bias=kw["probs"])
        return G.random_walk(seeds, 20, **kw)

    with gs.use_backend(backend):
        assert_same(_epoch(H, walker, batches=3), _epoch(A, walker, batches=3))
        compiled = gs.compile(walker, backend=backend)
        assert_same(_epoch(H, compiled, batches=3), _epoch(A, compiled, batches=3))


@pytest.mark.parametrize("dummy", [pytest.param(0, marks=cuda)])
def test_ladies_on_uva_equals_the_device_graph(graphs, dummy):
    A, H = graphs
    ladies = example("ladies")
    sampler = functools.partial(gs.compile(ladies.ladies, backend="cuda"), layers=(500, 500))
    An, Hn = ladies.normalize(A), ladies.normalize(H)
    assert Hn.placement == "uva"  # its structure: the UVA graph's, in host memory
    assert_same(_epoch(Hn, sampler, batches=3), _epoch(An, sampler, batches=3))


def test_a_graph_that_does_not_fit_on_the_gpu_is_said_before_anything_is_copied(monkeypatch):
    """placement='device' with less GPU memory available than the graph's arrays: a
    ValueError naming placement, with both sizes and the way out, raised before any array
    is copied (the copy itself is never reached: this machine may have no GPU)."""
    A = gs.datasets.rmat(500, 5000, seed=0)
    need = P.graph_bytes(A.csc)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(P, "available_memory", lambda device: need - 1)
    copies = []
    monkeypatch.setattr(type(A.csc), "to", lambda self, device: copies.append(device) or self)
    with pytest.raises(
        ValueError,
        match=r"^placement: the graph's arrays \(0\.\d+ GiB\) does not "
        r"fit on cuda:0, which has .* available; keep it in pinned host memory",
    ):
        A.to("cuda:0", placement="device")
    assert copies == []
    monkeypatch.setattr(P, "available_memory", lambda device: need)  # exactly fits: copied
    A.to("cuda:0", placement="device")
    assert copies == [torch.device("cuda:0")]
