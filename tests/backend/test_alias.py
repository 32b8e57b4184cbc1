"""Alias tables (``gsample/backend/torch/alias.py``) and alias draws in weighted individual
sampling (``individual_sample(k, probs, replace=True, method="alias")``).

The table: a column's table depends on its own weights only, bit for bit (built on the whole
graph or on any slice, on the CPU or a GPU), and its implied probabilities are the weights'.
The draws: the weights' distribution (chi-square at a fixed seed, for alias and for the
inverse-CDF path, each with a power check), and the determinism contract of docs/architecture.md §3
for a method of its own: eager == compiled (tables built once per graph by pre-processing, or per
call from dynamic weights), super-batched == one by one, CPU == CUDA.
"""

import functools

import numpy as np
import pytest
import scipy.stats as st
import torch
from helpers import assert_same, check_compiled_equals_eager, loader_outputs, run_seeded

import gsample as gs
from gsample.backend.torch.alias import ONE, alias_columns, alias_table, local
from gsample.formats.csc import gather_segments
from gsample.ir import Op
from gsample.passes import PIPELINE
from gsample.passes.alias_tables import alias_tables

P_MIN = 1e-3


@pytest.fixture(scope="module")
def graph():
    return gs.datasets.rmat(2000, 40000, seed=3, weighted=True)


def hard_weights(A, seed=0):
    """Weights over 12 orders of magnitude, 30% zeros, a positive one in every column."""
    g = torch.Generator().manual_seed(seed)
    ptr = A.csc.indptr
    w = torch.rand(A.num_edges, generator=g, dtype=torch.float64) ** 12
    w[torch.rand(A.num_edges, generator=g) < 0.3] = 0.0
    w[ptr[:-1][ptr[1:] > ptr[:-1]]] += 1e-3
    return w


def implied(threshold, alias, deg):
    """Per slot's edge: (its slot share + the shares aliased to it) / degree."""
    prob = threshold.double() / ONE
    ptr = torch.cat([deg.new_zeros(1), torch.cumsum(deg, 0)])
    col = torch.repeat_interleave(torch.arange(deg.numel()), deg)
    out = prob.clone().index_add_(0, ptr[col] + alias, 1.0 - prob)
    return out / deg[col].double()


# ----------------------------------------------------------------------------- tables
def test_a_column_table_depends_on_its_own_weights_only(graph):
    """The whole graph's table read at a slice's edges (with repeated columns) is, bit for
    bit, the table built on the slice: tables built once and per call agree."""
    w = hard_weights(graph)
    ptr = graph.csc.indptr
    whole = alias_table(graph.csc, w)
    cols = torch.randint(0, graph.num_nodes, (700,), generator=torch.Generator().manual_seed(1))
    cols = torch.cat([cols, cols[:50]])
    index, _ = gather_segments(ptr, cols)
    deg = ptr[cols + 1] - ptr[cols]
    got = local(whole, index, ptr[cols].repeat_interleave(deg))
    want = alias_columns(deg, w[index])
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    # and in float32, as a graph's values usually are: the same table as from float64
    w32 = w.float()
    assert torch.equal(
        alias_columns(deg, w32[index])[0], alias_columns(deg, w32[index].double())[0]
    )


def test_tables_give_the_weights(graph):
    """Implied probabilities equal ``w / sum(w)`` per column (within the quantisation the
    module states), zero weights are never drawn, aliases stay in their column."""
    w = hard_weights(graph, seed=2)
    deg = graph.csc.degrees()
    threshold, alias = alias_columns(deg, w)
    col = graph.csc.edge_cols()
    assert bool(((alias >= 0) & (alias < deg[col])).all())
    p = implied(threshold, alias, deg)
    total = torch.zeros(graph.num_nodes, dtype=torch.float64).index_add_(0, col, w)
    assert torch.allclose(p, w / total[col], rtol=0, atol=1e-12)
    assert bool((p[w == 0] == 0).all())
    table = alias_table(graph.csc, w)
    assert torch.equal(table[:, 0], threshold)
    assert torch.equal(table[:, 1], graph.csc.indptr[col] + alias)


@pytest.mark.parametrize(
    "weights",
    [[1.0, 1.0, 4.0], [0.0, 5.0], [3.0], [2.0, 2.0, 2.0], [1e-300, 1.0], [7.0, 0.0, 0.0, 1e-9]],
)
def test_small_columns(weights):
    w = torch.tensor(weights, dtype=torch.float64)
    thr, al = alias_columns(torch.tensor([len(weights)]), w)
    p = implied(thr, al, torch.tensor([len(weights)]))
    torch.testing.assert_close(p, w / w.sum(), rtol=0, atol=1e-12)
    assert bool((p[w > 0] > 0).all()), "a positive weight is always drawable"


# ----------------------------------------------------------------------------- draws
T = 30_000


@pytest.fixture(scope="module")
def hub():
    """Node 0 with 12 in-neighbours (1..12) of weights 1..12 (and a few other edges)."""
    src = list(range(1, 13)) + [0] * 12
    dst = [0] * 12 + list(range(1, 13))
    w = [float(i) for i in range(1, 13)] + [1.0] * 12
    return gs.Matrix.from_edge_index(torch.tensor([src, dst]), num_nodes=13, weight=torch.tensor(w))


def hub_layer(A, seeds, method="alias"):
    sub = A[:, seeds]
    return sub.individual_sample(3, probs=sub, replace=True, method=method)


def chisquare(counts, probs):
    counts, probs = np.asarray(counts, float), np.asarray(probs, float)
    return st.chisquare(counts, counts.sum() * probs / probs.sum()).pvalue


@pytest.mark.parametrize("method", ["alias", "cdf"])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_draws_follow_the_weights(hub, method, compiled):
    """``T`` columns of node 0, 3 draws each: counts of the 12 neighbours fit ``1 : ... : 12``
    and reject uniform (power), for alias tables and for the inverse CDF."""
    fn = gs.compile(hub_layer) if compiled else hub_layer
    s = run_seeded(fn, hub, torch.zeros(T, dtype=torch.int64), method=method, seed=11)
    counts = torch.bincount(s.edges()[0], minlength=13)[1:].numpy()
    assert counts.sum() == 3 * T
    assert chisquare(counts, np.arange(1, 13)) > P_MIN
    assert chisquare(counts, np.ones(12)) < P_MIN


def test_alias_and_inverse_cdf_are_one_distribution(hub):
    """Two-sample chi-square: alias draws and inverse-CDF draws of the same weights."""
    seeds = torch.zeros(T, dtype=torch.int64)
    a = run_seeded(hub_layer, hub, seeds, method="alias", seed=12).edges()[0]
    c = run_seeded(hub_layer, hub, seeds, method="cdf", seed=12).edges()[0]
    table = np.stack([torch.bincount(x, minlength=13)[1:].numpy() for x in (a, c)])
    assert st.chi2_contingency(table).pvalue > P_MIN
    assert not torch.equal(a, c), "another method: other draws"


# ----------------------------------------------------------------------------- determinism
def static_sampler(A, seeds, fanouts=(6, 4), method="alias"):
    """Weights of the graph alone: pre-processing builds the tables once per graph."""
    blocks = []
    for k in fanouts:
        sub = A[:, seeds]
        s = sub.individual_sample(k, probs=sub**2 + 0.5, replace=True, method=method)
        blocks.append(s)
        seeds = s.all_nodes()
    return blocks


def dynamic_sampler(A, seeds, w, k=5):
    """Weights given per call (a tensor over the graph's edges): tables per call."""
    sub, Aw = A[:, seeds], A * w
    return sub.individual_sample(k, probs=Aw[:, seeds], replace=True, method="alias")


def _ops(program, op):
    return [n for n in program.nodes if n.op is op]


def test_compiled_equals_eager(graph):
    seeds = torch.randint(0, graph.num_nodes, (300,), generator=torch.Generator().manual_seed(4))
    static = check_compiled_equals_eager(static_sampler, graph, seeds, calls=2, distinct=True)
    w = hard_weights(graph, seed=5).float()
    check_compiled_equals_eager(dynamic_sampler, graph, seeds, w, calls=2, distinct=True)
    # offline (a table per graph) and online (built per call: the pass left out) agree
    program = static.program(graph, seeds)
    assert len(_ops(program, Op.CACHED)) >= 2 and all(
        n.input("alias") is not None for n in _ops(program, Op.SLICE_INDIVIDUAL_SAMPLE)
    )
    online = gs.compile(static_sampler, passes=[e for e in PIPELINE if e[0] is not alias_tables])
    assert all(
        n.input("alias") is None
        for n in _ops(online.program(graph, seeds), Op.SLICE_INDIVIDUAL_SAMPLE)
    )
    assert_same(run_seeded(online, graph, seeds, seed=9), run_seeded(static, graph, seeds, seed=9))


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_super_batched_equals_one_by_one(graph, dynamic):
    seeds = torch.randint(0, graph.num_nodes, (160,), generator=torch.Generator().manual_seed(6))
    if dynamic:
        fn = functools.partial(gs.compile(dynamic_sampler), w=hard_weights(graph, 7).float())
        extra = {"fixed_state": True}
    else:
        fn, extra = gs.compile(static_sampler), {}
    ref = loader_outputs(graph, fn, seeds, 40)
    for n in (2, 4):
        got = loader_outputs(graph, fn, seeds, 40, super_batch=n, **extra)
        assert len(got) == len(ref) == 4
        for i, (g, r) in enumerate(zip(got, ref)):
            assert_same(g, r, f"super_batch={n}, batch {i}")


# ----------------------------------------------------------------------------- errors
def test_alias_needs_replacement(graph):
    seeds = torch.arange(10)
    sub = graph[:, seeds]
    with pytest.raises(ValueError, match="method: 'alias' draws with replacement"):
        sub.individual_sample(3, probs=sub, method="alias")
    with pytest.raises(ValueError, match="method: must be one of"):
        sub.individual_sample(3, probs=sub, replace=True, method="vose")

    def no_replace(A, seeds):
        s = A[:, seeds]
        return s.individual_sample(3, probs=s, method="alias")

    with pytest.raises(ValueError, match="method: 'alias' draws with replacement"):
        gs.compile(no_replace)(graph, seeds)
    # without probs the draws are uniform whatever the method
    gs.manual_seed(0)
    a = sub.individual_sample(3, method="alias")
    gs.manual_seed(0)
    assert_same(a, sub.individual_sample(3))


# ----------------------------------------------------------------------------- CUDA
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("backend", ["torch", "cuda"])
def test_cuda_draws_what_the_cpu_draws(graph, backend):
    """The tables are bit-equal on the GPU (no float sum), so are the draws: both backends,
    eager and compiled, one by one and super-batched."""
    if backend == "cuda":
        pytest.importorskip("cupy")
    w = hard_weights(graph, seed=8)
    deg = graph.csc.degrees()
    cpu = alias_columns(deg, w)
    gpu = alias_columns(deg.cuda(), w.cuda())
    assert torch.equal(cpu[0], gpu[0].cpu()) and torch.equal(cpu[1], gpu[1].cpu())
    G = graph.to("cuda")
    seeds = torch.randint(0, graph.num_nodes, (160,), generator=torch.Generator().manual_seed(9))
    ref = run_seeded(static_sampler, graph, seeds, seed=3)
    with gs.use_backend(backend):
        assert_same(
            [b.to("cpu") for b in run_seeded(static_sampler, G, seeds.cuda(), seed=3)], ref, "eager"
        )
    fn = gs.compile(static_sampler, backend=backend)
    for call in range(3):  # CUDA graphs capture from the second call on
        got = run_seeded(fn, G, seeds.cuda(), seed=3)
        assert_same([b.to("cpu") for b in got], ref, f"compiled, call {call}")
    cpu_batches = loader_outputs(graph, gs.compile(static_sampler), seeds, 40)
    gpu_batches = loader_outputs(G, fn, seeds.cuda(), 40, super_batch=4)
    for i, (g, r) in enumerate(zip(gpu_batches, cpu_batches)):
        assert_same([b.to("cpu") for b in g], r, f"super-batched, batch {i}")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("fanouts", [(6, 4), (40, 3)], ids=["warp", "serial"])
def test_the_cuda_alias_kernel_draws_the_cpu_samples_call_after_call(graph, fanouts):
    """Weighted draws from the graph's alias tables run the sync-free node-wise kernel
    (``gs_alias_draw`` of kernels/nodewise.cu: a lane per draw up to 32, one lane past it),
    lowered as a step a CUDA graph captures: every call (eager, captured, replayed, new
    seeds each) and every super-batch draws the CPU torch backend's samples."""
    pytest.importorskip("cupy")
    from gsample.backend.cuda import nodewise
    from gsample.runtime import cuda_graphs

    G = graph.to("cuda")
    fn, ref = gs.compile(static_sampler, backend="cuda"), gs.compile(static_sampler)
    seeds = [
        torch.randint(0, graph.num_nodes, (160,), generator=torch.Generator().manual_seed(20 + i))
        for i in range(5)
    ]
    program = fn.lowered(G, seeds[0].cuda(), fanouts=fanouts)
    samplers = [
        s
        for s in program.steps
        if s.node is not None
        and s.node.op is Op.SLICE_INDIVIDUAL_SAMPLE
        and s.label.startswith("cuda.")
    ]
    assert len(samplers) == len(fanouts), program.format()
    assert all(s.fn is nodewise.slice_individual_sample and s.graph_safe for s in samplers)
    for i, s in enumerate(seeds):
        got = run_seeded(fn, G, s.cuda(), fanouts=fanouts, seed=i)
        want = run_seeded(ref, graph, s, fanouts=fanouts, seed=i)
        assert_same([b.to("cpu") for b in got], want, f"call {i}")
    if cuda_graphs.enabled():
        assert any(r.captured for r in program.regions), "the alias draws are captured"
    pool = torch.cat(seeds)
    sb = loader_outputs(G, functools.partial(fn, fanouts=fanouts), pool.cuda(), 160, super_batch=3)
    one = loader_outputs(graph, functools.partial(ref, fanouts=fanouts), pool, 160)
    for i, (g, r) in enumerate(zip(sb, one)):
        assert_same([b.to("cpu") for b in g], r, f"super-batched, batch {i}")
