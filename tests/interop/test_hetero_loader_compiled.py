"""``gsample.pyg``'s loaders on a ``HeteroData`` run each (hop, edge type) through the
graph's compiled step (``gs.HeteroGraph.step_sampler``): the batches are bit for bit the
eager ones (``compile=False``) for every sampling option, every call of a step runs a
program the compiler cached for the graph's backend (the torch reference on the CPU, the
CUDA backend's kernels on a GPU: the ``cuda``-marked tests), and a GPU graph draws the CPU's
batches."""

import pytest
import torch

pytest.importorskip("torch_geometric")
from torch_geometric.data import HeteroData
from torch_geometric.loader import LinkLoader

import gsample as gs
import gsample.pyg as gp
from gsample.backend import cuda_problem, get_backend
from gsample.compiler.compiled import CompiledSampler
from gsample.hetero.sampling import STEPS
from gsample.interop.pyg.hetero_loader import HeteroBatches, HeteroSampler
from gsample.ir import Op

A, P, V = "author", "paper", "venue"
WRITES = (A, "writes", P)
REV = (P, "rev_writes", A)
CITES = (P, "cites", P)
IN = (P, "in", V)
HAS = (V, "has", P)
COUNTS = {A: 25, P: 40, V: 6}


def hetero(seed: int = 0) -> HeteroData:
    """Authors, papers, venues; node times on authors and papers, edge times on ``CITES``
    (``etime``); weights on ``WRITES`` and ``CITES`` (some zero); ``x`` the node ids."""
    g = torch.Generator().manual_seed(seed)
    data = HeteroData()
    for i, (t, n) in enumerate(COUNTS.items()):
        data[t].x = torch.arange(n) + 1000 * i
    writes = torch.stack(
        [torch.randint(0, 25, (120,), generator=g), torch.randint(0, 40, (120,), generator=g)]
    )
    data[WRITES].edge_index = writes
    data[REV].edge_index = writes.flip(0)
    data[CITES].edge_index = torch.randint(0, 40, (2, 150), generator=g)
    venue = torch.stack([torch.arange(40), torch.randint(0, 6, (40,), generator=g)])
    data[IN].edge_index, data[HAS].edge_index = venue, venue.flip(0)
    data[A].time = torch.randint(0, 30, (25,), generator=g)
    data[P].time = torch.randint(0, 30, (40,), generator=g)
    for et in (WRITES, CITES):
        w = torch.rand(data[et].edge_index.shape[1], generator=g)
        w[::5] = 0.0
        data[et].w = w
    data[CITES].etime = torch.randint(0, 30, (150,), generator=g)
    return data


def same(a, b) -> bool:
    """Two HeteroData batches hold the same tensors and values (on the CPU)."""
    if a.node_types != b.node_types or a.edge_types != b.edge_types:
        return False
    for sa, sb in zip(a.stores, b.stores, strict=True):
        if set(sa.keys()) != set(sb.keys()):
            return False
        for k in sa:
            x, y = sa[k], sb[k]
            if isinstance(x, torch.Tensor):
                if not torch.equal(x.cpu(), y.cpu()):
                    return False
            elif x != y:
                return False
    return True


PER_TYPE = {WRITES: [2, 1], REV: [3, -1], CITES: [-1, 2], IN: [0, 1], HAS: [1, 4]}
OPTIONS = [
    pytest.param({"num_neighbors": [3, 2]}, id="uniform"),
    pytest.param({"num_neighbors": PER_TYPE}, id="per-type"),
    pytest.param({"num_neighbors": [3, 2], "replace": True}, id="replace"),
    pytest.param({"num_neighbors": [2, 2], "weight_attr": "w"}, id="weighted"),
    pytest.param({"num_neighbors": [2, -1], "weight_attr": "w", "replace": True}, id="w-replace"),
    pytest.param({"num_neighbors": [3, 2], "subgraph_type": "bidirectional"}, id="bidirectional"),
    pytest.param({"num_neighbors": [3, 2], "subgraph_type": "induced"}, id="induced"),
    pytest.param({"num_neighbors": [3, 2], "disjoint": True}, id="disjoint"),
    pytest.param({"num_neighbors": PER_TYPE, "time_attr": "time"}, id="node-time"),
    pytest.param(
        {"num_neighbors": [2, 2], "time_attr": "time", "temporal_strategy": "last"},
        id="node-time-last",
    ),
    pytest.param(
        {"num_neighbors": [3, 2], "time_attr": "etime", "input_time": torch.arange(16) % 30},
        id="edge-time",
    ),
    pytest.param({"num_neighbors": [2, 2], "time_attr": "time", "weight_attr": "w"}, id="w-time"),
]


def _loader(data, compile: bool, graph=None, **kw):
    return gp.NeighborLoader(
        data,
        # temporal: 16 seeds, repeats included (each its own tree)
        input_nodes=(P, torch.arange(0, 40, 5).repeat(2)) if "time_attr" in kw else P,
        batch_size=10,
        shuffle=True,
        seed=4,
        compile=compile,
        graph=graph,
        **kw,
    )


def _programs(monkeypatch, loader) -> tuple:
    """``(batches, programs)``: the loader's batches, and the lowered program each call of
    its graph's step samplers ran (its cache entry, read back without tracing)."""
    steps = [loader.graph.step_sampler(s) for s in STEPS]
    call = CompiledSampler.__call__
    ran = []

    def spy(self, *args, **kwargs):
        out = call(self, *args, **kwargs)
        if any(self is s for s in steps):
            traces = self.traces
            ran.append(self.lowered(*args, **kwargs))
            assert self.traces == traces, "the program of the call just made"
        return out

    monkeypatch.setattr(CompiledSampler, "__call__", spy)
    batches = list(loader)
    monkeypatch.setattr(CompiledSampler, "__call__", call)
    return batches, ran


def _calls(batches, kw) -> int | None:
    """Step calls the batches imply: disjoint, every (hop, edge type); else every (hop, edge
    type) whose destination type has nodes first reached at the hop before (None: the batches
    have no hop counts)."""
    hops = len(kw["num_neighbors"]) if isinstance(kw["num_neighbors"], list) else 2
    if "disjoint" in kw or "time_attr" in kw:
        return len(batches) * hops * 5
    if kw.get("subgraph_type", "directional") != "directional":
        return None  # no hop counts in the batch (PyG's)
    n = 0
    for b in batches:
        counts = {t: b[t].num_sampled_nodes for t in COUNTS}
        n += sum(counts[et[2]][h] > 0 for h in range(hops) for et in b.edge_types)
    return n


def _check_programs(programs: list, backend: str, disjoint: bool) -> None:
    """Every program was lowered for ``backend`` and runs its implementations of the step's
    op (``slice_individual_sample``, or ``slice`` for ``k = -1``; ``temporal_sample``, the
    CUDA backend's where it registers one), and no torch code on the CUDA backend."""
    assert programs
    op = "temporal_sample" if disjoint else "slice"
    owner = backend
    if disjoint and not get_backend(backend).supports(Op.TEMPORAL_SAMPLE):
        owner = "torch"  # the reference code on the graph's device
    for p in programs:
        labels = [s.label for s in p.steps]
        assert p.backend == backend, labels
        assert any(x.startswith(f"{owner}.{op}") for x in labels), labels
        if owner != "torch":
            assert not any(x.startswith("torch.") for x in labels), labels


@pytest.mark.parametrize("kw", OPTIONS)
def test_compiled_loader_draws_the_eager_batches(monkeypatch, kw):
    data = hetero(1)
    compiled, programs = _programs(monkeypatch, _loader(data, True, **kw))
    eager_loader = _loader(data, False, **kw)
    eager = list(eager_loader)
    assert len(compiled) == len(eager) >= 2
    assert all(same(x, y) for x, y in zip(compiled, eager))
    disjoint = "disjoint" in kw or "time_attr" in kw
    calls = _calls(compiled, kw)  # every (hop, edge type) with a frontier
    assert calls is None or len(programs) == calls
    _check_programs(programs, "torch", disjoint)
    assert all(eager_loader.graph.step_sampler(s).traces == 0 for s in STEPS)
    # the batches are not all alike (the equality above compares draws)
    assert not all(same(compiled[0], x) for x in compiled[1:])


def test_link_sampler_compiled_is_eager():
    """The link loader's sampler (``HeteroSampler`` over ``HeteroBatches``): typed negatives
    and the endpoints' neighbourhoods, compiled == eager."""
    data = hetero(2)
    out = []
    for compile in (True, False):
        torch.manual_seed(0)  # PyG's LinkLoader shuffles with torch's generator
        sampler = HeteroSampler(HeteroBatches(data, [2, 2], compile=compile), 3, gp.batch_key)
        loader = LinkLoader(
            data,
            sampler,
            edge_label_index=(WRITES, data[WRITES].edge_index[:, :30]),
            neg_sampling="binary",
            batch_size=8,
            shuffle=True,
        )
        out.append(list(loader))
        assert (sampler.batches.step_sampler is None) == (not compile)
    assert len(out[0]) == 4 and all(same(x, y) for x, y in zip(*out))
    assert HeteroBatches(data, [2]).step_sampler.traces == 0  # made per graph, lazily


def test_bad_compile_names_itself():
    data = hetero(0)
    with pytest.raises(TypeError, match="compile"):
        gp.NeighborLoader(data, [2], input_nodes=P, compile="no")
    with pytest.raises(TypeError, match="compile"):
        HeteroBatches(data, [2], compile=None)


# ----------------------------------------------------------------------------- on a GPU
def _kernels() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    problem = cuda_problem(torch.cuda.current_device())
    if problem is not None:
        pytest.skip(f"the CUDA backend cannot run: {problem}")


GPU_OPTIONS = [
    pytest.param({"num_neighbors": [3, 2]}, id="uniform"),
    pytest.param({"num_neighbors": PER_TYPE}, id="per-type"),
    pytest.param({"num_neighbors": [3, 2], "replace": True}, id="replace"),
    pytest.param({"num_neighbors": [3, 2], "subgraph_type": "bidirectional"}, id="bidirectional"),
    pytest.param({"num_neighbors": [3, 2], "disjoint": True}, id="disjoint"),
    pytest.param({"num_neighbors": PER_TYPE, "time_attr": "time"}, id="node-time"),
    pytest.param(
        {"num_neighbors": [2, 2], "time_attr": "time", "temporal_strategy": "last"},
        id="node-time-last",
    ),
]


@pytest.mark.cuda
@pytest.mark.parametrize("kw", GPU_OPTIONS)
def test_gpu_graph_runs_the_cuda_backend_and_draws_the_cpu_batches(monkeypatch, kw):
    """A graph on a GPU: every step call runs a program lowered for the CUDA backend (its
    kernels, no torch step), and the batches are the CPU's (uniform draws and ``"last"``:
    the backends agree bit for bit) and the eager GPU loader's."""
    _kernels()
    data = hetero(3)
    H = gs.HeteroGraph.from_pyg(data, weight=None).to("cuda")
    loader = _loader(data, True, graph=H, **kw)
    gpu, programs = _programs(monkeypatch, loader)
    cpu = list(_loader(data, True, **kw))
    eager = list(_loader(data, False, graph=H, **kw))
    assert len(gpu) == len(cpu) == len(eager) >= 2
    assert all(same(x, y) and same(x, z) for x, y, z in zip(gpu, cpu, eager))
    disjoint = "disjoint" in kw or "time_attr" in kw
    calls = _calls(gpu, kw)
    assert calls is None or len(programs) == calls
    _check_programs(programs, "cuda", disjoint)
    for et in H.edge_types:
        assert H.step_sampler().backend_for(H[et]) == "cuda"


@pytest.mark.cuda
@pytest.mark.parametrize("replace", [False, True])
def test_gpu_weighted_compiled_is_eager(monkeypatch, replace):
    """Weighted draws on a GPU (the data there, ``weight_attr``): the compiled CUDA-backend
    steps draw what the eager ones draw (float rounding may differ from the CPU's, so the
    CPU is not the reference here)."""
    _kernels()
    data = hetero(4).to("cuda")
    kw = {"num_neighbors": [2, 2], "weight_attr": "w", "replace": replace}
    gpu, programs = _programs(monkeypatch, _loader(data, True, **kw))
    eager = list(_loader(data, False, **kw))
    assert len(gpu) == len(eager) >= 2 and all(same(x, y) for x, y in zip(gpu, eager))
    _check_programs(programs, "cuda", False)
