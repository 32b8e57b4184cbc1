"""``gs.HeteroGraph``'s sampling through its compiled per-(hop, edge type) steps
(``step_sampler``: ``relation_sample`` / ``relation_temporal_sample`` under ``gs.compile``):
compiled == eager bit for bit (every fanout form, replace, weighted, disjoint and temporal),
the op ordinals each call takes, one program per relation signature and static arguments,
and the lowering of the steps for the CUDA backend (checked without a GPU: lowering
resolves implementations, it runs none)."""

import copy as copy_module
import pickle

import pytest
import torch

import gsample as gs
from gsample.backend import get_backend
from gsample.base.random import batch_scope, stream_state
from gsample.hetero.sampling import relation_sample, relation_temporal_sample
from gsample.ir import Op
from gsample.runtime import Options, lower

A_, B_, C_ = "a", "b", "c"
W = (A_, "w", B_)  # weighted
R = (B_, "r", A_)
CITES = (B_, "cites", B_)
IN = (B_, "in", C_)
ONE = (C_, "one", A_)  # a single edge: most columns empty
COUNTS = {A_: 40, B_: 30, C_: 7}


def graph(seed: int = 1) -> gs.HeteroGraph:
    """Three node types, five relations: ``W`` weighted (zero weights included), the others
    without values; parallel edges and self-loops in ``CITES``."""
    g = torch.Generator().manual_seed(seed)

    def ei(s, d, e):
        return torch.stack(
            [
                torch.randint(0, COUNTS[s], (e,), generator=g),
                torch.randint(0, COUNTS[d], (e,), generator=g),
            ]
        )

    w = torch.rand(200, generator=g)
    w[::7] = 0.0
    rel = {
        W: gs.Matrix.from_edge_index(ei(A_, B_, 200), num_nodes=40, weight=w),
        R: ei(B_, A_, 200),
        CITES: ei(B_, B_, 150),
        IN: torch.stack([torch.arange(30), torch.randint(0, 7, (30,), generator=g)]),
        ONE: torch.tensor([[2], [5]]),
    }
    return gs.HeteroGraph(rel, COUNTS)


@pytest.fixture(scope="module")
def H() -> gs.HeteroGraph:
    """One graph for the module: its step samplers' programs are traced once."""
    return graph()


def canon(m: gs.Matrix) -> tuple:
    """What a sample means: columns (global ids), their edges (global rows, edge ids), values."""
    c = m.csc
    values = None if c.values is None else c.value_tensor()
    return (
        c.num_nodes,
        c.global_cols(),
        c.indptr,
        c.global_rows(),
        c.eid_tensor(),
        values,
    )


def equal(x, y) -> bool:
    if isinstance(x, (list, tuple)):
        return len(x) == len(y) and all(equal(a, b) for a, b in zip(x, y))
    if isinstance(x, dict):
        return list(x) == list(y) and all(equal(x[k], y[k]) for k in x)
    if isinstance(x, gs.Matrix):
        return equal(canon(x), canon(y))
    if isinstance(x, torch.Tensor):
        return isinstance(y, torch.Tensor) and x.dtype == y.dtype and torch.equal(x, y)
    return x == y


SEEDS = {B_: torch.tensor([3, 5, 7, 1, 3]), A_: torch.tensor([0, 2, 39])}
FANOUTS = [  # (fanouts, op ordinals a call takes: one per (hop, edge type) sampled)
    pytest.param(3, 5, id="int"),
    pytest.param([3, 2], 10, id="hops"),
    pytest.param([-1, 2, 1], 15, id="all"),
    pytest.param(
        {W: [2, 1], R: [3, 0], CITES: [-1, 2], IN: [1, 1], ONE: [4, 4]}, 10, id="per-type"
    ),
    pytest.param({"w": 2, CITES: 1}, 2, id="some"),  # edge types left out are not sampled
]


@pytest.mark.parametrize(("fanouts", "ordinals"), FANOUTS)
@pytest.mark.parametrize("replace", [False, True], ids=["without", "with"])
@pytest.mark.parametrize("weighted", [False, True], ids=["uniform", "weighted"])
def test_sample_neighbors_compiled_is_eager(H, fanouts, ordinals, replace, weighted):
    for scope in [(5, 3), (0, 0), (2**40 + 1, 17)]:
        with batch_scope(*scope):
            compiled = H.sample_neighbors(SEEDS, fanouts, replace, weighted)
            assert stream_state().ordinal == ordinals  # empty frontiers included
        with batch_scope(*scope):
            eager = H.sample_neighbors(SEEDS, fanouts, replace, weighted, compile=False)
            assert stream_state().ordinal == ordinals
        assert equal(compiled, eager), scope
    assert H.step_sampler().traces >= 1


def test_sample_neighbors_draws_depend_on_the_scope(H):
    """The equality above is not vacuous: another mini-batch index draws other samples."""
    with batch_scope(5, 3):
        a = H.sample_neighbors(SEEDS, [3, 2])
    with batch_scope(5, 4):
        b = H.sample_neighbors(SEEDS, [3, 2])
    assert not equal(a, b)


def test_an_empty_frontier_and_sampling_between_manual_seeds(H):
    """Outside a batch scope (``gs.manual_seed``) compiled and eager continue one stream: a
    type without seeds, a hop reaching no node of a type, and a draw after the sampling
    (it takes the next ordinal in both modes)."""
    seeds = {C_: torch.tensor([0, 6])}  # hop 0: IN alone has a frontier
    out = []
    for compile in (True, False):
        gs.manual_seed(11)
        s = H.sample_neighbors(seeds, [2, 3, 2], compile=compile)
        nxt = H[CITES][:, torch.arange(30)].individual_sample(2)
        out.append((s, nxt))
    assert equal(out[0], out[1])
    first = out[0][0][0]
    assert first[IN].num_edges > 0
    assert all(first[et].csc.num_cols == 0 for et in H.edge_types if et != IN)


TIMES = {
    "none": {},
    "node": {"node_time": True},
    "edge": {"edge_time": True},
}


def _times(H, kind: str, g: torch.Generator) -> dict:
    if kind == "node":
        node_time = {
            t: torch.randint(0, 10, (n,), generator=g) for t, n in COUNTS.items() if t != C_
        }
        return H.relation_times(node_time=node_time)
    if kind == "edge":
        edge_time = {et: torch.randint(0, 10, (H.num_edges(et),), generator=g) for et in (W, CITES)}
        return H.relation_times(edge_time=edge_time)
    return {}


@pytest.mark.parametrize("times", ["none", "node", "edge"])
@pytest.mark.parametrize(
    "kw",
    [{}, {"replace": True}, {"weighted": True}, {"strategy": "last"}, {"window": 3}],
    ids=["uniform", "replace", "weighted", "last", "window"],
)
def test_sample_disjoint_compiled_is_eager(H, times, kw):
    if times == "none" and ("strategy" in kw or "window" in kw):
        pytest.skip("strategy 'last' and window need times")
    g = torch.Generator().manual_seed(3)
    edge_time = _times(H, times, g)
    seed_time = None
    if edge_time:
        seed_time = {
            t: torch.randint(0, 10, (ids.numel(),), generator=g) for t, ids in SEEDS.items()
        }
    per_type = {W: [2, 2], R: [1, 3], CITES: [-1, 1], IN: [0, 2], ONE: [1, 1]}
    for fanouts, hops in (([3, -1, 2], 3), (per_type, 2)):
        for scope in [(7, 2**50)]:
            with batch_scope(*scope):
                compiled = H.sample_disjoint(SEEDS, fanouts, seed_time, edge_time, **kw)
                after = stream_state().ordinal
            with batch_scope(*scope):
                eager = H.sample_disjoint(SEEDS, fanouts, seed_time, edge_time, compile=False, **kw)
                assert stream_state().ordinal == after
            assert equal(compiled, eager), (fanouts, scope)
            assert after == hops * len(H.edge_types)


def test_sample_disjoint_seed_index_compiled_is_eager(H):
    index = {B_: torch.tensor([9, 4, 4, 0, 1]), A_: torch.tensor([2, 2, 7])}
    with batch_scope(1, 1):
        a = H.sample_disjoint(SEEDS, [2, 2], seed_index=index)
    with batch_scope(1, 1):
        b = H.sample_disjoint(SEEDS, [2, 2], seed_index=index, compile=False)
    assert equal(a, b)


def test_one_program_per_relation_signature_and_static_arguments():
    """Relations of one signature (no values, one ``N``) share a program; the weighted one
    has its own; a second call of the same fanouts traces nothing; eager calls none."""
    H = graph()
    step = H.step_sampler()
    assert H.step_sampler() is step and step.traces == 0
    with batch_scope(0, 0):
        H.sample_neighbors(SEEDS, 2)
    assert step.traces == 2  # {R, CITES, IN, ONE} and W (its values: another signature)
    with batch_scope(0, 1):
        H.sample_neighbors(SEEDS, [2, 2])
        H.sample_neighbors(SEEDS, 2, weighted=True)  # W's program with probs
    assert step.traces == 3
    with batch_scope(0, 1):
        H.sample_neighbors(SEEDS, [2, -1], replace=True, compile=False)
    assert step.traces == 3
    other = graph(2)
    assert other.step_sampler() is not step and other.step_sampler().traces == 0


def _labels(program) -> list:
    return [s.label for s in program.steps]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("replace", [False, True])
def test_neighbor_step_lowers_to_the_cuda_backends_fused_kernel(H, weighted, replace):
    """For the CUDA backend the step is one fused slice-and-sample kernel (the slice never
    materialised), sync-free when uniform; on the CPU, the torch reference."""
    step = H.step_sampler()
    ir = step.program(H[W], torch.tensor([1, 2, 2]), 3, replace, weighted)
    cuda = _labels(lower(ir, "cuda", Options(), "cuda:0"))
    fused = [x for x in cuda if x.startswith("cuda.slice_individual_sample[")]
    assert len(fused) == 1, cuda
    assert ("sync-free" in fused[0]) == (not weighted), cuda
    assert not any(x.startswith(("torch.", "cuda.slice[")) for x in cuda), cuda
    cpu = step.lowered(H[W], torch.tensor([1, 2, 2]), 3, replace, weighted)
    assert cpu.backend == "torch"
    assert any(x.startswith("torch.slice_individual_sample[") for x in _labels(cpu))
    assert step.backend_for(H[W]) == "torch"
    # k = -1: the slice alone (no random op), on the CUDA backend too
    whole = _labels(lower(step.program(H[R], torch.tensor([0]), -1), "cuda", Options(), "cuda:0"))
    assert any(x.startswith("cuda.") for x in whole) and not any("sample" in x for x in whole), (
        whole
    )


@pytest.mark.parametrize("timed", [False, True])
def test_disjoint_step_lowers_to_the_cuda_backends_temporal_kernel(H, timed):
    times = _times(H, "edge", torch.Generator().manual_seed(0))
    cols, seed = torch.tensor([1, 2, 2]), torch.tensor([0, 1, 2])
    time = torch.tensor([3, 5, 9]) if timed else None
    ir = H.step_sampler("disjoint").program(
        H[CITES], cols, seed, time, times[CITES] if timed else None, k=2
    )
    labels = _labels(lower(ir, "cuda", Options(), "cuda:0"))
    # the CUDA backend's kernel where it registers one (else the torch code, on the GPU)
    owner = "cuda" if get_backend("cuda").supports(Op.TEMPORAL_SAMPLE) else "torch"
    assert [x for x in labels if "temporal_sample" in x and not x.startswith("check")] == [
        f"{owner}.temporal_sample[csc]"
    ], labels


def test_the_steps_are_the_dsl_functions(H):
    """The eager path runs the very functions the step samplers compile."""
    assert H.step_sampler().fn is relation_sample
    assert H.step_sampler("disjoint").fn is relation_temporal_sample
    with batch_scope(3, 3):
        direct = relation_sample(H[CITES], torch.tensor([4, 4, 9]), 2)
    with batch_scope(3, 3):
        stepped = H.step_sampler()(H[CITES], torch.tensor([4, 4, 9]), 2)
    assert equal(direct, stepped)
    src, dst, eid = direct.edges()
    s_all, d_all, e_all = H[CITES].edges()
    by_id = torch.argsort(e_all)  # edge id -> its edge
    assert torch.equal(s_all[by_id][eid], src) and torch.equal(d_all[by_id][eid], dst)
    degree = torch.bincount(d_all, minlength=30)
    assert direct.csc.degrees().tolist() == [min(2, int(degree[v])) for v in (4, 4, 9)]


def test_bad_arguments_name_themselves(H):
    with pytest.raises(TypeError, match="compile"):
        H.sample_neighbors(SEEDS, 2, compile="yes")
    with pytest.raises(TypeError, match="compile"):
        H.sample_disjoint(SEEDS, 2, compile=1)
    with pytest.raises(ValueError, match="step"):
        H.step_sampler("walk")


def test_a_pickled_graph_leaves_its_programs_behind_and_draws_the_same(H):
    """A graph sent to a worker process (pickled) or copied after sampling: its compiled
    steps hold lowered programs (closures, not picklable) and stay behind; the copy traces
    its own and draws the same samples."""
    with batch_scope(2, 2):
        before = H.sample_neighbors(SEEDS, [2, 2])
    assert H.step_sampler().traces >= 1
    for copy in (pickle.loads(pickle.dumps(H)), copy_module.deepcopy(H)):
        assert copy.step_sampler() is not H.step_sampler()
        assert copy.step_sampler().traces == 0
        with batch_scope(2, 2):
            assert equal(copy.sample_neighbors(SEEDS, [2, 2]), before)
        assert copy.edge_types == H.edge_types and copy.num_nodes_dict == H.num_nodes_dict
