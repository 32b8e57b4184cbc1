"""Super-batching samples exactly what the mini-batches sample one by one
(docs/architecture.md §3, 4.).

``gs.DataLoader(..., super_batch=N)`` runs N mini-batches in one run of the compiled
program (``gsample.passes.super_batch``). Checked here, on every device:

* every example (GraphSAGE, LADIES, FastGCN, ShaDow, PASS with ``fixed_state=True``), for
  N = 1, 2, 3, 4 (does not divide the 6 batches) and 50 (more than the batches), shuffled
  and in order: every batch equal (same tensors, dtypes, storage) to one-by-one sampling;
* more samplers, through the default pipeline and through the unoptimised program (the
  unfused ops on the encoded graph): weighted and uniform, with and without replacement,
  collective sampling, per-batch scalars, whole-graph row slices, products, tuples;
* random ops on the whole graph (no frontier: GraphSAINT's node and edge draws) run once
  per mini-batch, each with its own key: GraphSAINT node / edge / random walk and more,
  N = 2 and 3 with a last partial super-batch, equal to one by one; the stream after a
  super-batch is where mini-batch ``first``'s run leaves it, and a later random op draws alike;
* samplers whose draws depend on tensor arguments are refused unless ``fixed_state``, and
  so are matrix arguments whose node count is not the graph's;
* an error in a mini-batch surfaces at that batch, after the batches before it;
* ``"auto"`` times sizes that fit the budget and keeps the fastest (1 for a tiny one);
  bad arguments fail in the constructor, naming the argument;
* the keys: each column draws with its batch's key and its position within the batch, and
  the CPU's chunked hash gives the plain hash's bits.

Every test runs with ``GSAMPLE_DEBUG=1``: the rewritten program is verified.
"""

import functools

import pytest
import torch
from helpers import (
    assert_same,
    assert_stream_after_loader,
    example,
    graphsage,
    loader_outputs,
    random_seeds,
    weighted_sampler,
)

import gsample as gs
from gsample.base.random import (
    BatchKeys,
    ColumnKeys,
    batch_scope,
    combine_tensor,
    hash_tensor,
    op_key,
    stream_state,
    uniform_int,
    words,
)
from gsample.loader.super_batching import auto_statistic, choose_super_batch
from gsample.runtime import Options, SuperBatcher, interpret, run

BATCH, NUM_SEEDS = 32, 180  # 6 batches, the last one of 20 seeds
COUNTS = (1, 2, 3, 4, 50)


@pytest.fixture(autouse=True)
def _verify_after_every_pass(monkeypatch):
    monkeypatch.setenv("GSAMPLE_DEBUG", "1")


@pytest.fixture(scope="module")
def graph():
    return gs.datasets.rmat(2000, 20000, seed=0, weighted=True)


def workloads(A):
    """name -> (function, graph, keyword arguments, fixed_state) for every example."""
    pas = example("pass_sampler")
    return {
        "graphsage": (example("graphsage").graphsage, A, {}, False),
        "graphsage-3": (example("graphsage").graphsage, A, {"fanouts": (15, 10, 5)}, False),
        "ladies": (
            example("ladies").ladies,
            example("ladies").normalize(A),
            {"layers": (64, 64)},
            False,
        ),
        "fastgcn": (example("fastgcn").fastgcn, A, {"layers": (300, 300)}, False),
        "fastgcn-degree": (
            example("fastgcn").fastgcn,
            A,
            {"layers": (300, 300), "degree": A.sum(axis=1)},
            True,
        ),
        "shadow": (example("shadow").shadow, A, {}, False),
        "pass_sampler": (pas.pass_sampler, A, pas.random_inputs(A.num_nodes, 8, 16), True),
    }


NAMES = [
    "graphsage",
    "graphsage-3",
    "ladies",
    "fastgcn",
    "fastgcn-degree",
    "shadow",
    "pass_sampler",
]


def on(device, kwargs):
    return {
        k: v.to(device) if isinstance(v, (torch.Tensor, gs.Matrix)) else v
        for k, v in kwargs.items()
    }


def epochs(A, sampler, seeds, count=1, **options):
    """``count`` epochs of a loader (each reshuffles), after ``gs.manual_seed(5)``."""
    gs.manual_seed(5)
    loader = gs.DataLoader(A, sampler, seeds, BATCH, **options)
    return loader, [list(loader) for _ in range(count)]


def assert_same_batches(got, ref, what):
    for e, (g_epoch, r_epoch) in enumerate(zip(got, ref)):
        assert [b.index for b in g_epoch] == [b.index for b in r_epoch] == list(range(len(r_epoch)))
        assert len(r_epoch) >= 6
        for g, r in zip(g_epoch, r_epoch):
            assert torch.equal(g.seeds, r.seeds)
            assert_same(g.out, r.out, f"{what}, epoch {e}, batch {r.index}")


@pytest.mark.parametrize("shuffle", [True, False], ids=["shuffled", "in-order"])
@pytest.mark.parametrize("name", NAMES)
def test_example_super_batched_equals_one_by_one(name, shuffle, graph, device):
    fn, A, kwargs, fixed = workloads(graph)[name]
    A, kwargs = A.to(device), on(device, kwargs)
    seeds = random_seeds(NUM_SEEDS, 2, A.num_nodes).to(device)
    _, ref = epochs(A, functools.partial(fn, **kwargs), seeds, shuffle=shuffle)  # eager
    compiled = functools.partial(gs.compile(fn), **kwargs)
    for N in COUNTS:
        loader, got = epochs(A, compiled, seeds, shuffle=shuffle, super_batch=N, fixed_state=fixed)
        assert loader.super_batch_size == N
        assert_same_batches(got, ref, f"{name}, super_batch={N}")


def sampled_edges(out):
    """Every sampled edge of an example's output: a set of (matrix, row, col, edge id)."""
    matrices = [
        m for m in (out if isinstance(out, (list, tuple)) else [out]) if isinstance(m, gs.Matrix)
    ]
    return {(i, *e) for i, m in enumerate(matrices) for e in zip(*(t.tolist() for t in m.edges()))}


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("name", NAMES)
def test_cuda_backend_super_batched_equals_one_by_one(name, graph):
    """With ``backend="cuda"`` super-batched random ops run the torch draws (documented): a
    uniform sampler is still bit-equal; a weighted one agrees on >= 99.9% of its edges, as the
    two backends do (float rounding)."""
    pytest.importorskip("cupy")
    fn, A, kwargs, fixed = workloads(graph)[name]
    A, kwargs = A.to("cuda"), on("cuda", kwargs)
    seeds = random_seeds(NUM_SEEDS, 2, A.num_nodes).to("cuda")
    sampler = functools.partial(gs.compile(fn, backend="cuda"), **kwargs)
    _, ref = epochs(A, sampler, seeds)
    _, got = epochs(A, sampler, seeds, super_batch=4, fixed_state=fixed)
    if name in ("graphsage", "graphsage-3", "shadow"):
        assert_same_batches(got, ref, f"{name}, cuda backend")
        return
    assert [b.index for b in got[0]] == [b.index for b in ref[0]] == list(range(6))
    for g, r in zip(got[0], ref[0]):
        a, b = sampled_edges(g.out), sampled_edges(r.out)
        assert len(a & b) >= 0.999 * len(a | b), f"{name} batch {r.index}"


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_a_super_batch_s_cuda_graph_holds_its_first_sample_and_replays(graph):
    """A super-batched GraphSAGE program is one CUDA graph from its first sample on (the
    encoded seeds are copied in): it is captured and replayed over four epochs, every batch
    equal to one-by-one sampling."""
    pytest.importorskip("cupy")
    from gsample.runtime import cuda_graphs

    A = graph.to("cuda")
    seeds = random_seeds(NUM_SEEDS, 2, A.num_nodes).to("cuda")
    sampler = gs.compile(example("graphsage").graphsage, backend="cuda")
    _, ref = epochs(A, sampler, seeds, 4)
    loader, got = epochs(A, sampler, seeds, 4, super_batch=2)
    assert_same_batches(got, ref, "graphsage, cuda backend, super_batch=2, replayed")
    program = loader._super.program(2)[1]
    assert program.region.start == 0 and program.keys_in_region
    if cuda_graphs.enabled():
        assert program.region.captured, "the super-batch's graph was captured"


def test_a_plain_function_is_compiled_by_the_loader(graph):
    seeds = random_seeds(NUM_SEEDS, 3)
    sampler = functools.partial(example("graphsage").graphsage, fanouts=(5, 5))
    _, ref = epochs(graph, sampler, seeds, count=2)
    _, got = epochs(graph, sampler, seeds, count=2, super_batch=4)
    assert_same_batches(got, ref, "plain function, two epochs")
    # the stream after the loader is where one-by-one sampling leaves it
    assert_stream_after_loader(graph, sampler, sampler, seeds, BATCH, 3)


# ----------------------------------------------------------------------------- more samplers
def weighted_individual(A, seeds, replace=False):
    blocks = []
    for k in (5, 3):
        sub = A[:, seeds]
        s = sub.individual_sample(k, probs=sub**2, replace=replace)
        blocks.append(s)
        seeds = s.all_nodes()
    return blocks


def collective(A, seeds, replace=False, weighted=True):
    blocks = []
    for k in (30, 50):
        sub = A[:, seeds]
        s = sub.collective_sample(
            k, node_probs=(sub**2).sum(axis=1) if weighted else None, replace=replace
        )
        blocks.append(s)
        seeds = s.all_nodes()
    return blocks


def per_batch_scalar(A, seeds):
    sub = A[:, seeds]
    t = sub / sub.values.sum()  # a 0-dim tensor, one per mini-batch
    s = t.individual_sample(4, probs=t)
    return s, s.edges(), s.row(), s.column()


def whole_graph_rows(A, seeds):
    nodes = A[:, seeds].individual_sample(3).all_nodes()
    r = A[nodes, :]  # every column of the graph: per batch
    return r, r.sum(axis=0), A[:, nodes][nodes, :].compact()


def dense_frontier(A, seeds):
    s = A[:, seeds].individual_sample(3)
    frontier = torch.cat([seeds, s.row()])  # ids made by dense code, repeats kept
    s2 = A[:, frontier].individual_sample(2, replace=True)
    return s2, frontier, s2.T


def products(A, seeds):
    sub = A[:, seeds].compact()
    u, v = sub.row_ids.float(), sub.col_ids.float()
    att = gs.sddmm(sub, u, v, "mul")
    return att, att.T @ u, att @ v, sub.sum(axis=1), sub.mean(axis=0)


def graph_level(A, seeds):
    d = A.sum(axis=0)  # cached once per graph, shared by the batches
    s = A[:, seeds].individual_sample(2)
    return d, s, d[s.col_ids]


def walks(A, seeds, weighted=False, p=1.0, q=1.0, stop_prob=0.0, jump_prob=0.0):
    # one launch of kernels/walk.cu for the whole super-batch on the CUDA backend
    w = A.random_walk(
        seeds,
        9,
        probs=A.values if weighted else None,
        p=p,
        q=q,
        stop_prob=stop_prob,
        jump_prob=jump_prob,
    )
    return w, w[:, -1]


def whole_graph_sample(A, seeds):
    return A.individual_sample(2), A[:, seeds].individual_sample(2)


def whole_graph_then_frontier(A, seeds, replace=False):
    """Draws on the whole graph (no frontier), then a random op on a frontier after them."""
    s = A.individual_sample(2, probs=A**2, replace=replace)  # every column of the graph
    rows = A.T.collective_sample(40, replace=True).row()  # 40 draws over the nodes
    f = A[:, torch.cat([seeds, rows])].individual_sample(3)
    return s, rows, f


def whole_graph_per_batch_probs(A, seeds):
    """Draws on the whole graph by probabilities of the mini-batch: its frontier's row sums
    (a sparse op's encoded value, split per batch) and dense code on them (per batch)."""
    p = A[:, seeds].sum(axis=1)  # (n,): 0 off the frontier's in-neighbours
    a = A.collective_sample(10, node_probs=p, replace=True)
    b = A.collective_sample(10, node_probs=p / p.sum() + 1e-3)
    return a, b, b.row()


MORE = {
    "weighted": (weighted_individual, {}),
    "weighted-replace": (weighted_individual, {"replace": True}),
    "collective": (collective, {}),
    "collective-replace": (collective, {"replace": True}),
    "collective-uniform": (collective, {"weighted": False}),
    "collective-uniform-replace": (collective, {"weighted": False, "replace": True}),
    "per-batch-scalar": (per_batch_scalar, {}),
    "whole-graph-rows": (whole_graph_rows, {}),
    "dense-frontier": (dense_frontier, {}),
    "products": (products, {}),
    "graph-level": (graph_level, {}),
    "fused-edge-maps": (
        weighted_sampler,
        {"v": torch.rand(2000, generator=torch.Generator().manual_seed(0)) + 0.5},
    ),
    "uniform-replace": (graphsage, {"replace": True, "fanouts": (4, 3)}),
    "walk": (walks, {}),
    "walk-weighted-node2vec": (walks, {"weighted": True, "p": 2.0, "q": 0.5}),
    "walk-stop-jump": (walks, {"stop_prob": 0.1, "jump_prob": 0.2}),
    "whole-graph": (whole_graph_sample, {}),
    "whole-graph-then-frontier": (whole_graph_then_frontier, {}),
    "whole-graph-per-batch-probs": (whole_graph_per_batch_probs, {}),
}


@pytest.mark.parametrize("passes", [None, []], ids=["optimised", "as-traced"])
@pytest.mark.parametrize("name", list(MORE))
def test_more_samplers_super_batched_equal_one_by_one(name, passes, graph, device):
    fn, kwargs = MORE[name]
    A, kwargs = graph.to(device), on(device, kwargs)
    seeds = random_seeds(NUM_SEEDS, 4).to(device)
    _, ref = epochs(A, functools.partial(fn, **kwargs), seeds)
    sampler = functools.partial(gs.compile(fn, passes=passes), **kwargs)
    _, got = epochs(A, sampler, seeds, super_batch=4, fixed_state=True)
    assert_same_batches(got, ref, name)


# ----------------------------------------------------------------------------- whole graph
def whole_graph_workloads(A):
    """name -> (sampler, seeds, batch size): samplers with random ops on the whole graph (no
    frontier), each in 5 mini-batches (super-batches of 2 and 3 end with a partial one)."""
    saint_edge = example("graphsaint_edge")
    node, rw = example("graphsaint_node").graphsaint_node, example("graphsaint_rw").graphsaint_rw
    draws = torch.arange(5, device=A.device)  # GraphSAINT's seeds: draw counters
    frontier = random_seeds(5 * BATCH - 7, 8).to(A.device)
    return {
        "graphsaint_node": (functools.partial(node, budget=200), draws, 1),
        "graphsaint_node-normalized": (
            functools.partial(node, budget=200, normalized=True),
            draws,
            1,
        ),
        "graphsaint_edge": (
            functools.partial(
                saint_edge.graphsaint_edge, budget=150, column=saint_edge.node_column(A)
            ),
            draws,
            1,
        ),
        "graphsaint_rw": (functools.partial(rw, length=3), frontier, BATCH),
        "whole-graph-then-frontier": (
            functools.partial(whole_graph_then_frontier),
            frontier,
            BATCH,
        ),
        "whole-graph-replace": (
            functools.partial(whole_graph_then_frontier, replace=True),
            frontier,
            BATCH,
        ),
        "whole-graph-per-batch-probs": (
            functools.partial(whole_graph_per_batch_probs),
            frontier,
            BATCH,
        ),
    }


@pytest.mark.parametrize(
    "name",
    [
        "graphsaint_node",
        "graphsaint_node-normalized",
        "graphsaint_edge",
        "graphsaint_rw",
        "whole-graph-then-frontier",
        "whole-graph-replace",
        "whole-graph-per-batch-probs",
    ],
)
def test_whole_graph_draws_super_batched_equal_one_by_one(name, graph, device):
    """A random op on the whole graph runs once per mini-batch of the super-batch, each with
    its own key: every batch equals the eager one-by-one batch, N = 2 and 3 (5 batches)."""
    A = graph.to(device)
    fn, seeds, batch = whole_graph_workloads(A)[name]
    ref = loader_outputs(A, fn, seeds, batch)  # eager, one by one
    assert len(ref) == 5
    compiled = functools.partial(gs.compile(fn.func), *fn.args, **fn.keywords)
    for N in (2, 3):
        assert_same(
            loader_outputs(A, compiled, seeds, batch, super_batch=N),
            ref,
            f"{name}, super_batch={N}",
        )


@pytest.mark.parametrize("lowered", [True, False], ids=["lowered", "interpreted"])
def test_a_super_batch_leaves_the_stream_where_its_first_mini_batch_does(lowered, graph):
    """Run directly, a super-batch of mini-batches 10, 11, 12 returns each one's own sample
    (keys of batch ``first + b``), and the stream then stands where mini-batch 10's run
    leaves it: the same ordinal, and the next draw is the same."""
    sampler = gs.compile(whole_graph_then_frontier, runtime=Options(lowered=lowered))
    seeds = random_seeds(3 * BATCH - 5, 9)
    parts = [seeds[:BATCH], seeds[BATCH : 2 * BATCH], seeds[2 * BATCH :]]
    sb = sampler.super_batched((graph, parts[0]), seeds="seeds")
    ir, program = sb.program(3)
    assert (program is None) is not lowered
    assert [n.attrs.get("per_batch") for n in ir.random_nodes()] == [
        frozenset(),
        frozenset(),
        None,
    ]  # two whole-graph draws, one on seeds
    args = dict(sb.args, seeds=sb._encode(parts))
    with batch_scope(4, 10):
        outs = run(program, args) if lowered else interpret(ir, args)
        ordinal = stream_state().ordinal
        after = graph[:, seeds].individual_sample(2)
    for b, part in enumerate(parts):
        with batch_scope(4, 10 + b):
            assert_same(outs[b], sampler(graph, part), f"batch {10 + b}")
            if b == 0:
                assert stream_state().ordinal == ordinal == ir.num_random == 3
                assert_same(graph[:, seeds].individual_sample(2), after, "the next draw")
    # through the loader: the caller's stream after an epoch is where one by one leaves it
    assert_stream_after_loader(graph, whole_graph_then_frontier, sampler, seeds, BATCH, 2)


def test_a_heterogeneous_sampler_of_two_relations_super_batches():
    """A heterogeneous graph's relations share one node count: a sampler taking two of them
    (``examples/metapath_walk.py``) super-batches, equal to one by one."""
    m = example("metapath_walk")
    H = m.academic_graph(300, 800, 20)
    seeds = torch.randperm(800, generator=torch.Generator().manual_seed(0))[: 5 * 16 - 3]
    kwargs = {"written_by": H[m.WRITTEN_BY], "traversals": 2, "restart_prob": 0.3}
    ref = loader_outputs(H[m.WRITES], functools.partial(m.paper_author_paper, **kwargs), seeds, 16)
    compiled = functools.partial(gs.compile(m.paper_author_paper), **kwargs)
    for N in (2, 3):
        assert_same(loader_outputs(H[m.WRITES], compiled, seeds, 16, super_batch=N), ref)


def test_whole_graph_draws_that_read_state_are_refused_unless_fixed(graph):
    def by_state(A, seeds, v):
        return A.collective_sample(10, node_probs=v, replace=True), A[:, seeds].row()

    v = torch.rand(graph.num_nodes, generator=torch.Generator().manual_seed(2)) + 0.1
    sampler = functools.partial(by_state, v=v)
    seeds = random_seeds(5 * BATCH - 7, 8)
    with pytest.raises(ValueError, match=r"super_batch: .*depend on v.*fixed_state=True"):
        gs.DataLoader(graph, sampler, seeds, BATCH, super_batch=2)
    ref = loader_outputs(graph, sampler, seeds, BATCH)
    compiled = functools.partial(gs.compile(by_state), v=v)
    assert_same(loader_outputs(graph, compiled, seeds, BATCH, super_batch=3, fixed_state=True), ref)


# ----------------------------------------------------------------------------- keys
def test_batch_keys_give_each_column_its_batch_key_and_position():
    n = 10
    keys = BatchKeys.of(seed=3, ordinal=2, first_batch=5, copies=3, num_nodes=n)
    assert keys.keys == tuple(op_key(3, 2, 5 + b) for b in range(3))
    cols = torch.tensor([4, 4, 9, 2 * n + 1, 2 * n + 0])  # batch 1 has no column
    ck = keys.columns(cols)
    assert ck.ptr == [0, 3, 3, 5] and ck.position.tolist() == [0, 1, 2, 0, 1]
    draw = torch.arange(5)
    expect = [
        hash_tensor(keys.keys[b], torch.tensor([p]), torch.tensor([d]))
        for b, p, d in zip([0, 0, 0, 2, 2], ck.position.tolist(), draw.tolist())
    ]
    assert torch.equal(words(ck, torch.arange(5), draw), torch.cat(expect))
    with pytest.raises(RuntimeError, match="not grouped by mini-batch"):
        keys.columns(torch.tensor([2 * n, 1]))


@pytest.mark.parametrize("size", [5, 16384, 16385, 70000])
def test_the_chunked_cpu_hash_gives_the_same_bits(size):
    """Large draws (a super-batch's) hash in cache-sized chunks on the CPU: same words."""
    g = torch.Generator().manual_seed(size)
    col = torch.randint(-1, 5000, (size,), generator=g)
    draw = torch.randint(0, 2**40, (size,), generator=g)
    base = torch.randint(-(2**63), 2**63 - 1, (size,), generator=g)
    for key in (0, 2**64 - 1, op_key(1, 2, 3), base):
        assert torch.equal(
            hash_tensor(key, col, draw), combine_tensor(combine_tensor(key, col), draw)
        )
    bases, positions = torch.randint(-(2**63), 2**63 - 1, (300,), generator=g), torch.arange(300)
    ck = ColumnKeys(bases, positions, [0, 300], (0,))
    index = torch.randint(0, 300, (size,), generator=g)
    assert torch.equal(
        ck.words(index, draw), combine_tensor(combine_tensor(bases[index], positions[index]), draw)
    )


def _floyd_sequential(word_of, deg, k):
    """Floyd's algorithm as written (Floyd, CACM 1987), one column at a time."""
    out = []
    for c, D in enumerate(deg.tolist()):
        S = []
        for i in range(k):
            j = D - k + i
            t = int(uniform_int(word_of(c, i), torch.tensor(j + 1)))
            S.append(j if t in S else t)
        out += S
    return torch.tensor(out)


@pytest.mark.parametrize("sizes", [(50, 5000), (300, 12), (1, 50000), (40, 2)])
def test_floyd_vectorised_equals_the_sequential_algorithm(sizes):
    """The vectorised draws (collisions resolved to a fixed point) are Floyd's, draw for
    draw, with an op key and with a super-batch's per-column keys; columns just above k
    collide often, so the fixed point needs several rounds there."""
    from gsample.backend.torch import select

    g = torch.Generator().manual_seed(sizes[0])
    C, most = sizes
    k = 7
    deg = k + torch.randint(1, most, (C,), generator=g)
    cols = torch.randperm(2 * C, generator=g)[:C]
    keys = ColumnKeys(
        torch.randint(-(2**62), 2**62, (2 * C,), generator=g),
        torch.randint(0, 99, (2 * C,), generator=g),
        [0, 2 * C],
        (0,),
    )
    key = op_key(1, 2, 3)
    for got, word_of in (
        (
            select.Draws.floyd(cols, deg, k, key),
            lambda c, i: hash_tensor(key, cols[c : c + 1], torch.tensor([i])),
        ),
        (
            select.Draws.floyd(cols, deg, k, keys),
            lambda c, i: hash_tensor(keys.base[cols[c]], keys.position[cols[c]], torch.tensor(i)),
        ),
    ):
        assert torch.equal(got, _floyd_sequential(word_of, deg, k))
        offs = got.view(C, k)
        assert all(len(set(r.tolist())) == k for r in offs), "k distinct offsets per column"
        assert bool(((offs >= 0) & (offs < deg[:, None])).all())


@pytest.mark.parametrize("weighted", [False, True])
def test_both_top_k_strategies_choose_the_same_rows(weighted):
    """Collective sampling keeps k rows per batch: by one segmented sort (on a GPU) or batch
    by batch (on the CPU); both keep what each batch keeps on its own."""
    from gsample.backend.torch import select

    n, copies, k = 50, 4, 6
    g = torch.Generator().manual_seed(int(weighted))
    keys = BatchKeys.of(seed=1, ordinal=0, first_batch=3, copies=copies, num_nodes=n)
    gid = torch.cat(
        [
            torch.sort(torch.randperm(n, generator=g)[:m]).values + b * n
            for b, m in enumerate((3, 20, 0, 45))
        ]
    )  # 6 or fewer, none, more
    probs = torch.rand(gid.numel(), generator=g) + 0.01 if weighted else None
    batch = gid // n
    ptr = [0, 3, 23, 23, 68]
    cand = torch.arange(gid.numel()) + 100  # local rows
    args = (cand, gid, batch, ptr, k, keys, probs, select.Draws)
    one = select._top_k_batch_by_batch(*args)
    assert torch.equal(select._top_k_segmented(*args), one)
    for b in range(copies):  # = each batch alone
        lo, hi = ptr[b], ptr[b + 1]
        alone = (
            select.choose_rows(
                torch.arange(hi - lo),
                hi - lo,
                lambda r, lo=lo, hi=hi, b=b: gid[lo:hi][r] - b * n,
                k,
                False,
                keys.keys[b],
                None if probs is None else probs[lo:hi],
            )
            + 100
            + lo
        )
        assert torch.equal(one[(one >= 100 + lo) & (one < 100 + hi)], alone)


# ----------------------------------------------------------------------------- refusals
def test_state_dependent_samplers_are_refused_unless_fixed(graph):
    pas = example("pass_sampler")
    sampler = functools.partial(pas.pass_sampler, **pas.random_inputs(graph.num_nodes, 8, 16))
    with pytest.raises(ValueError, match=r"super_batch: .*X, W1, W2, W3.*fixed_state=True"):
        gs.DataLoader(graph, sampler, torch.arange(64), BATCH, super_batch=2)
    biased = functools.partial(weighted_sampler, v=torch.rand(graph.num_nodes))  # a bandit bias
    with pytest.raises(ValueError, match=r"super_batch: .*depend on v"):
        gs.DataLoader(graph, biased, torch.arange(64), BATCH, super_batch="auto")
    gs.DataLoader(graph, biased, torch.arange(64), BATCH, super_batch=2, fixed_state=True)

    # MVS proper: its draws are compared with probabilities of the norms, and the block of
    # the rows kept is sliced: the norms decide the sample, so they are state
    mvs = functools.partial(
        example("mvs").mvs_independent, grad_norm=torch.rand(graph.num_nodes), batch_size=8
    )
    with pytest.raises(ValueError, match=r"super_batch: .*depend on grad_norm"):
        gs.DataLoader(graph, mvs, torch.arange(64), BATCH, super_batch=2)
    gs.DataLoader(graph, mvs, torch.arange(64), BATCH, super_batch=2, fixed_state=True)

    def features_only(A, seeds, X):  # a tensor that feeds no draw: not state
        s = A[:, seeds].individual_sample(3)
        return s, X[s.row()]

    gs.DataLoader(
        graph,
        functools.partial(features_only, X=torch.rand(2000, 4)),
        torch.arange(64),
        BATCH,
        super_batch=2,
    )


def in_place(A, seeds):
    nodes = A[:, seeds].individual_sample(2).row()
    nodes.add_(0)
    return nodes


def branching(A, seeds):
    if seeds.sum() > 3:
        return A[:, seeds].individual_sample(2)
    return A[:, seeds].individual_sample(3)


def two_graphs(A, seeds, B):
    return A[:, seeds].individual_sample(2), B[:, seeds].individual_sample(2)


@pytest.mark.parametrize(
    "sampler, match",
    [
        (in_place, "writes in place"),
        (branching, "must compile with gs.compile"),
    ],
    ids=["in-place", "untraceable"],
)
def test_programs_that_cannot_be_super_batched_are_refused(graph, sampler, match):
    with pytest.raises(ValueError, match=f"super_batch: .*{match}"):
        gs.DataLoader(graph, sampler, torch.arange(64), BATCH, super_batch=2)


def test_matrix_arguments_of_another_node_count_are_refused(graph):
    """A second matrix is encoded as the graph is (``b * n + v``): it must have ``n`` nodes."""
    other = gs.datasets.rmat(1500, 8000, seed=1)
    with pytest.raises(
        ValueError,
        match=r"super_batch: .*more than one gs\.Matrix argument .*"
        r"node count \(2000\); 'B' has 1500",
    ):
        gs.DataLoader(
            graph, functools.partial(two_graphs, B=other), torch.arange(64), BATCH, super_batch=2
        )
    seeds = random_seeds(5 * BATCH - 7, 6)
    sampler = functools.partial(two_graphs, B=gs.datasets.rmat(2000, 8000, seed=1))
    ref = loader_outputs(graph, sampler, seeds, BATCH)
    compiled = functools.partial(gs.compile(two_graphs), B=sampler.keywords["B"])
    assert_same(loader_outputs(graph, compiled, seeds, BATCH, super_batch=3), ref)


# ----------------------------------------------------------------------------- errors
def zero_weight_graph(node):
    A = gs.datasets.rmat(500, 5000, seed=3)
    src, dst, _ = A.edges()
    weight = torch.where(dst == node, 0.0, 1.0)
    return gs.Matrix.from_edge_index(torch.stack([src, dst]), 500, weight=weight)


def weighted_layer(A, seeds):
    return A[:, seeds].individual_sample(2, probs=A[:, seeds])


def outcome(loader):
    """``(batches yielded, the error raised or None)``."""
    got = []
    try:
        for b in loader:
            got.append(b)
    except Exception as e:
        return got, e
    return got, None


@pytest.mark.parametrize("overlapped", [False, True], ids=["alone", "two-in-flight"])
@pytest.mark.parametrize("super_batch", [3, "auto"])
@pytest.mark.parametrize("where", [0, 2])
def test_an_error_surfaces_at_its_mini_batch(where, super_batch, overlapped, monkeypatch):
    if overlapped:  # a GPU's path (two super-batches in flight), forced here
        monkeypatch.setattr(gs.DataLoader, "_overlaps", lambda self, fn=None: fn is not None)
    bad = 7
    A = zero_weight_graph(bad)
    assert A[:, torch.tensor([bad])].num_edges > 0
    fill = torch.arange(100, 100 + 4 * BATCH)
    seeds = torch.cat([fill[: where * BATCH + 5], torch.tensor([bad]), fill[where * BATCH + 5 :]])
    ref, ref_error = outcome(gs.DataLoader(A, weighted_layer, seeds, BATCH, shuffle=False, seed=0))
    got, error = outcome(
        gs.DataLoader(
            A, weighted_layer, seeds, BATCH, shuffle=False, seed=0, super_batch=super_batch
        )
    )
    assert [b.index for b in ref] == [b.index for b in got] == list(range(where))
    for g, r in zip(got, ref):
        assert_same(g.out, r.out)
    assert type(error) is type(ref_error) is ValueError and str(error) == str(ref_error)
    assert "all its probabilities are zero" in str(error)


def test_a_super_batch_failure_where_batches_succeed_is_reported(graph, monkeypatch):
    def broken(self, *args, **kwargs):
        raise RuntimeError("out of memory")

    loader = gs.DataLoader(graph, graphsage, torch.arange(100), BATCH, super_batch=2, seed=0)
    monkeypatch.setattr(SuperBatcher, "run", broken)
    got, error = outcome(loader)
    assert got == [] and isinstance(error, RuntimeError)
    assert "super_batch: sampling mini-batches 0..1 in one run failed" in str(error)
    assert "out of memory" in str(error)


# ----------------------------------------------------------------------------- in flight
@pytest.mark.parametrize("name", ["graphsage", "ladies"])
def test_two_super_batches_in_flight_draw_what_one_at_a_time_draws(name, graph, monkeypatch):
    """The loader's path with two super-batches in flight (a GPU's: forced here, where
    programs never pause) yields every batch, in order, equal to one-by-one sampling,
    with a last partial super-batch; each super-batch is one call started at its first
    mini-batch's stream state."""
    from gsample.runtime import overlap

    fn, A, kwargs, _ = workloads(graph)[name]
    seeds = random_seeds(NUM_SEEDS, 3, A.num_nodes)
    _, ref = epochs(A, functools.partial(fn, **kwargs), seeds, 2)
    monkeypatch.setattr(gs.DataLoader, "_overlaps", lambda self, fn=None: fn is not None)
    started = []
    make = overlap.Call.__init__

    def record(self, begin, stream):
        started.append(stream[2])
        make(self, begin, stream)

    monkeypatch.setattr(overlap.Call, "__init__", record)
    compiled = functools.partial(gs.compile(fn), **kwargs)
    for N in (2, 4):
        started.clear()
        _loader, got = epochs(A, compiled, seeds, 2, super_batch=N)
        assert_same_batches(got, ref, f"{name}, super_batch={N}, two in flight")
        assert started == list(range(0, len(ref[0]), N)) * 2, "a call per super-batch"


def test_auto_keeps_two_super_batches_in_flight_only_where_two_fit(graph):
    loader = gs.DataLoader(
        graph, graphsage, torch.arange(640), BATCH, super_batch="auto", memory_budget=1000
    )
    loader.batch_bytes = 100
    assert loader._two_fit(5) and not loader._two_fit(6)
    fixed = gs.DataLoader(graph, graphsage, torch.arange(640), BATCH, super_batch=64)
    assert fixed._two_fit(64)


# ----------------------------------------------------------------------------- "auto"
def test_auto_fits_the_budget_and_a_tiny_budget_gives_one(graph, device):
    A = graph.to(device)
    seeds = random_seeds(22 * BATCH, 5).to(device)  # room to time sizes 1, 2 and 4
    sampler = functools.partial(example("graphsage").graphsage, fanouts=(10, 5))
    _, ref = epochs(A, sampler, seeds)
    loader, got = epochs(A, sampler, seeds, super_batch="auto", memory_budget=1)
    assert loader.super_batch_size == 1
    assert_same_batches(got, ref, "auto, tiny budget")
    assert_same_batches([list(loader)], epochs(A, sampler, seeds, 2)[1][1:], "auto, epoch 2")
    per_batch = loader.batch_bytes
    out_bytes = sum(
        t.numel() * t.element_size()
        for b in got[0][:1]
        for m in b.out
        for t in (m.csc.indptr, m.csc.rows, m.csc.col_ids, m.csc.values, m.csc.eids)
    )
    assert per_batch >= out_bytes > 0  # the outputs are part of the footprint
    for budget, cap in ((3 * per_batch + 1, 3), (10**12, len(loader))):
        loader, got = epochs(A, sampler, seeds, super_batch="auto", memory_budget=budget)
        assert loader.memory_cap == cap  # what the budget holds ...
        assert set(loader.auto_times) <= {1, 2, 4, 8, 16} and 1 in loader.auto_times
        assert max(loader.auto_times) <= cap  # ... bounds every size timed
        # (judged as the loader judges on this device: the CPU's median, a GPU's best run)
        statistic = auto_statistic(A.device)
        assert loader.super_batch_size == choose_super_batch(loader.auto_runs, statistic=statistic)
        assert loader.super_batch_size * loader.batch_bytes <= budget
        assert_same_batches(got, ref, f"auto, budget {budget}")
    loader, got = epochs(A, sampler, seeds, super_batch="auto")  # the L2 cache or half a GPU
    assert 1 <= loader.super_batch_size <= len(loader)
    assert_same_batches(got, ref, "auto, default budget")


@pytest.mark.parametrize(
    "options, error, match",
    [
        ({"super_batch": 0}, ValueError, "super_batch: must be >= 1"),
        ({"super_batch": -2}, ValueError, "super_batch: must be >= 1"),
        ({"super_batch": 1.5}, TypeError, "super_batch: must be a positive int or 'auto'"),
        ({"super_batch": "max"}, TypeError, "super_batch: must be a positive int or 'auto'"),
        ({"super_batch": True}, TypeError, "super_batch: must be a positive int or 'auto'"),
        ({"super_batch": "auto", "memory_budget": 0}, ValueError, "memory_budget: must be >= 1"),
        ({"super_batch": "auto", "memory_budget": "1GB"}, TypeError, "memory_budget: must be a"),
        ({"super_batch": "auto", "memory_budget": 2.0}, TypeError, "memory_budget: must be a"),
        ({"super_batch": 4, "memory_budget": 10**9}, ValueError, "memory_budget: only used with"),
        ({"memory_budget": 10**9}, ValueError, "memory_budget: only used with"),
        ({"super_batch": 2, "fixed_state": "yes"}, TypeError, "fixed_state: must be True or False"),
    ],
)
def test_bad_arguments_fail_in_the_constructor(graph, options, error, match):
    with pytest.raises(error, match=match):
        gs.DataLoader(graph, graphsage, torch.arange(64), BATCH, **options)


def test_tables_read_at_the_seeds_super_batch():
    """``t[seeds]`` (a value per seed: its time) is one gather for all the mini-batches, and
    a table of node ids read at the seeds is encoded per mini-batch where an op takes it as
    a frontier: the same draws as one mini-batch at a time."""
    A = gs.datasets.rmat(400, 4000, seed=5)
    g = torch.Generator().manual_seed(0)
    et = torch.randint(0, 100, (A.num_edges,), generator=g)
    t = torch.randint(0, 100, (A.num_nodes,), generator=g)
    table = torch.randperm(A.num_nodes, generator=g)  # seed i stands for node table[i]

    def sampler(A, seeds):
        nodes = table[seeds]
        s = A.temporal_sample(nodes, 3, time=t[seeds], edge_time=et, seed=A.positions(nodes))
        return s, t[seeds] * 2, nodes

    seeds = random_seeds(70, num_nodes=400)
    ref = loader_outputs(A, sampler, seeds, 16)
    loader = gs.DataLoader(
        A, gs.compile(sampler), seeds, 16, shuffle=False, seed=7, super_batch=3, fixed_state=True
    )
    for i, (got, want) in enumerate(zip([b.out for b in loader], ref, strict=True)):
        assert_same(got, want, f"batch {i}")
    # an id of the table out of range is a bad id of the op reading it, as one at a time
    table[5] = A.num_nodes
    with pytest.raises(IndexError, match="node id 400 is out of range"):
        list(
            gs.DataLoader(
                A, gs.compile(sampler), torch.arange(16), 8, super_batch=2, fixed_state=True
            )
        )


@pytest.mark.parametrize("sizes", [[4, 4, 4], [4, 4, 3], [4], [3, 5, 5], [5, 5, 2, 5], [0, 0]])
def test_a_super_batch_encodes_each_mini_batch_s_ids_by_its_place(sizes, graph):
    """Batch ``b``'s ids become ``b * n + v`` whatever the mini-batches' sizes (the leading
    run of equal ones shifted in one launch, the rest one by one)."""
    sampler = gs.compile(whole_graph_then_frontier)
    seeds = random_seeds(max(sum(sizes), 1), 3)
    parts, at = [], 0
    for k in sizes:
        parts.append(seeds[at : at + k])
        at += k
    sb = sampler.super_batched((graph, parts[0]), seeds="seeds")
    n = graph.num_nodes
    want = torch.cat([p + b * n for b, p in enumerate(parts)])
    assert torch.equal(sb._encode(parts), want)
