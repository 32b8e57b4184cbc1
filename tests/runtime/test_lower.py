"""Lowering (``gsample.runtime.lower``): one resolved call per op, checks only where data
enters, release points, CUDA-graph regions; all without a GPU (lowering for the ``cuda``
backend resolves implementations, it runs none)."""

import dataclasses
import itertools
import operator

import pytest
import torch
from helpers import example, graphsage

import gsample as gs
from gsample.formats.csc import CSC
from gsample.formats.derived import COLUMNS, recall
from gsample.ir import Op
from gsample.loader.features import _program_chained
from gsample.passes import PIPELINE
from gsample.passes.gather_nodes import frontier_of, gather_nodes, returned_blocks
from gsample.runtime import Options, lower, run
from gsample.runtime.cuda_graphs import regions


@pytest.fixture(scope="module")
def A():
    return gs.datasets.rmat(1000, 10000, seed=0)


def _program(fn, G, backend="cuda", device="cuda:0", options=None, **kwargs):
    # optimised for the backend it is lowered for (its passes read the backend's target)
    graph = gs.compile(fn, backend=backend).program(G, torch.arange(10), **kwargs)
    return lower(graph, backend, options or Options(), device)


def test_graphsage_lowers_to_one_call_per_op_and_one_read_back(A):
    p = _program(graphsage, A)
    ops = [s for s in p.steps if s.label.startswith("cuda.")]
    assert [s.node.op for s in ops] == [
        Op.SLICE_INDIVIDUAL_SAMPLE,
        Op.ALL_NODES,
        Op.SLICE_INDIVIDUAL_SAMPLE,
    ]
    assert all(s.graph_safe and "sync-free" in s.label for s in ops)
    checks = [s for s in p.steps if s.label.startswith("check")]
    assert len(checks) == 1 and "checked in the kernel" in checks[0].label, (
        "the seeds are converted at the boundary; the frontier all_nodes makes is trusted"
    )
    assert p.num_syncs == 1 and p.deferred
    assert (p.region.start, p.region.stop) == (1, 4), "every kernel in one CUDA graph"
    assert p.steps[-1].label.startswith("finish")


def test_release_points_free_every_slot_after_its_last_reader(A):
    p = _program(graphsage, A)
    last = {}
    for i, s in enumerate(p.steps):
        for a in s.args:
            last[a] = i
    outputs = set(p.steps[-1].out)
    # the argument the first block's columns were sliced with: the output keeps it with the
    # block (gsample.formats.derived.COLUMNS), so it is held to the end, never released
    held = {slot for name, slot, _ in p.inputs if name == "seeds"}
    assert held and not any(held & set(s.release) for s in p.steps)
    for slot, i in last.items():
        if p.env[slot] is None and slot not in outputs | held:
            assert slot in p.steps[i].release, (p.slot_names[slot], p.format())


def test_ladies_lowers_to_a_graph_region_per_layer_ending_at_its_read_back(A):
    """LADIES' collective sampler runs in two steps (device part, read-back); each layer's
    frontier total, the row sums that divide by it (scaled_row_sums: no dense division),
    their check and the device part form one CUDA-graph region, and the read-back ends it:
    three regions, three reads per call."""
    lad = example("ladies")
    p = _program(lad.ladies, lad.normalize(A), layers=(50, 50, 50))
    ops = [s.node.op for s in p.steps if s.label.startswith("cuda.") and "sync-free" in s.label]
    assert ops.count(Op.SLICE_REDUCE) == 3 and ops.count(Op.SLICE_COLLECTIVE_SAMPLE) == 6
    assert len(p.regions) == 3
    for r in p.regions:
        labels = [s.label for s in r.steps]
        assert labels[0].startswith("cuda.slice_total") and labels[-1].endswith("device part")
        assert any(lab.startswith("cuda.slice_reduce") for lab in labels)
        assert not any(lab.startswith("dense truediv") for lab in labels)
        assert all(s.graph_safe and not s.syncs for s in r.steps)
        # the read-back ends it; between them, the layer before's importance weights and
        # column normalisation (moved there by runtime.schedule: the GPU runs the region
        # while the host does them), after the first region
        after = p.steps[r.stop :]
        finish = next(s for s in after if s.label.endswith("read back, finish"))
        moved = after[: after.index(finish)]
        assert all(not s.graph_safe or s.label.startswith("check ") for s in moved)
        assert (r is p.regions[0]) == (not moved), [s.label for s in moved]
        assert {s.node.op for s in moved} <= {Op.FUSED_EDGE_NORMALIZE}
    first = p.regions[0]
    assert not set(p.steps[first.start - 1].args).isdisjoint(
        {slot for _, slot, m in p.inputs if not m}
    ), "the step converting the caller's seeds stays out (they may be on the host)"
    reads = [s for s in p.steps if s.syncs]
    assert len(reads) == 7  # 3 finishes, 3 column normalisations (their sums), the
    # final read-back
    assert f"steps [{first.start}] .. [{first.stop - 1}]: one CUDA graph" in p.format()


def test_a_super_batch_s_first_sample_joins_its_graph_region(A):
    """A super-batch's seeds come encoded on the device, unchecked: its first sample is
    captured with the rest (a region after it would read the bounded matrix it makes, a
    new object each call, and never be captured); one mini-batch's seeds are converted by
    a check that stays out."""
    sampler = gs.compile(graphsage)
    sb = sampler.super_batched((A, torch.arange(10)), {"fanouts": (5, 3)}, seeds="seeds")
    graph, _ = sb.program(8)
    p = lower(graph, "cuda", Options(), "cuda:0")
    seeds = next(slot for name, slot, _ in p.inputs if name == "seeds")
    assert not any(s.check for s in p.steps)
    assert (p.region.start, p.region.stop) == (0, 3) and seeds in p.steps[0].args
    assert [s.node.op for s in p.region.steps] == [
        Op.SLICE_INDIVIDUAL_SAMPLE,
        Op.ALL_NODES,
        Op.SLICE_INDIVIDUAL_SAMPLE,
    ]
    one = _program(graphsage, A)
    assert one.steps[0].check and one.region.start == 1
    # its bounds read back, its splits of matrices do not: a call has read back all it will
    # before its end (but for its final read-back) after the last bounds (Program.settles)
    labels = [s.label for s in p.steps]
    bounds = [i for i, s in enumerate(p.steps) if s.label == "dense bounds"]
    assert len(bounds) == 2 and all(p.steps[i].syncs for i in bounds), labels
    assert not any(s.syncs for s in p.steps if s.label == "dense split"), labels
    assert p.one_region and p.settles == bounds[-1] + 1 < len(p.steps) - 1, labels
    assert one.one_region and one.settles is None, "one mini-batch: its final read-back only"


def test_a_super_batch_s_row_sums_read_back_and_join_no_region(A):
    """The catalogue LADIES super-batched: its row sums (``slice_reduce``, by chunk of rows
    with one read-back for a super-batch, ``syncs_batched``) are a syncing step, so no
    region is formed around them only to be refused at capture (one mini-batch's are
    sync-free). Each layer's region is its sample's device part."""
    ladies = example("ladies")
    G = ladies.normalize(A)
    with gs.use_backend("cuda"):  # optimised for the CUDA backend (a CPU graph lowers)
        sb = gs.compile(ladies.ladies).super_batched(
            (G, torch.arange(10)), {"layers": (30, 30)}, seeds="seeds"
        )
        p = lower(sb.program(4)[0], "cuda", Options(), "cuda:0")
    sums = [s for s in p.steps if s.node is not None and s.node.op is Op.SLICE_REDUCE]
    assert len(sums) == 2 and all(s.syncs and not s.graph_safe for s in sums)
    assert len(p.regions) == 2
    for r in p.regions:
        assert all(s.graph_safe and not s.syncs for s in r.steps)
        assert [s.node.op for s in r.steps] == [Op.SLICE_COLLECTIVE_SAMPLE]
    one = _program(ladies.ladies, G, layers=(30, 30))
    sums = [s for s in one.steps if s.node is not None and s.node.op is Op.SLICE_REDUCE]
    assert sums and all(s.graph_safe and not s.syncs for s in sums)


def test_dense_code_joins_a_region_only_when_it_cannot_read_back(A):
    """Elementwise dense code and reductions may be captured; indexing (perhaps by a mask,
    whose result's size is read back) and ``nonzero`` may not."""
    from gsample.runtime.lower import _capturable

    assert _capturable(operator.truediv, ((None, None), {}))
    assert _capturable((torch.Tensor, "sum"), ((None,), {}))
    assert _capturable(torch.where, ((None, None, None), {}))
    assert not _capturable(torch.where, ((None,), {}))
    assert not _capturable(operator.getitem, ((None, None), {}))
    assert not _capturable((torch.Tensor, "nonzero"), ((None,), {}))
    assert not _capturable((torch.Tensor, "item"), ((None,), {}))
    assert not _capturable(lambda x: x, ((None,), {}))


@pytest.mark.parametrize(
    "options, device", [(Options(cuda_graphs=False), "cuda:0"), (Options(), "cpu")]
)
def test_no_region_without_cuda_graphs_or_a_gpu(A, options, device):
    p = _program(graphsage, A, options=options, device=device)
    assert p.region is None
    assert p.deferred == (device != "cpu")
    if device == "cpu":
        assert all(not s.label.startswith("cuda.") for s in p.steps), "a CPU graph: torch"


def test_per_op_checks_when_boundary_checks_are_off(A):
    p = _program(graphsage, A, options=Options(boundary_checks=False, sync_free=False))
    checks = [s for s in p.steps if s.label.startswith("check")]
    assert len(checks) == 2, "every op checks its inputs, as eagerly"
    assert not p.deferred and p.region is None


def test_a_lowered_cpu_program_runs_as_the_interpreter(A):
    graph = gs.compile(graphsage).program(A, torch.arange(10))
    gs.manual_seed(2)
    want = gs.runtime.interpret(graph, {"A": A, "seeds": torch.arange(10)})
    gs.manual_seed(2)
    got = run(lower(graph, "torch"), {"A": A, "seeds": torch.arange(10)})
    for x, y in zip(got, want):  # the runtime returns formats (the compiler wraps them)
        assert isinstance(x, CSC) and isinstance(y, CSC)
        assert torch.equal(x.rows, y.rows) and torch.equal(x.indptr, y.indptr)


def test_explain_prints_the_lowered_program(A, capsys):
    text = gs.explain(graphsage, A, torch.arange(10), file=False)
    section = text[text.index("== lowered program") : text.index("== summary")]
    assert "torch.slice_individual_sample[csc]" in section and "frees" in section


# ----------------------------------------------------------------------------- impl choice
def _neighbours(A, seeds, weighted=False, k=5):
    sub = A[:, seeds]
    s = sub.individual_sample(k, probs=sub**2 if weighted else None)
    return s, s.all_nodes()


def _samplers(p):
    """The steps that run the node-wise sampler (not its checks or trims)."""
    return [s for s in p.steps if s.label.startswith("cuda.slice_individual_sample[")]


@pytest.mark.parametrize("weighted", [False, True], ids=["uniform", "probs"])
def test_a_node_with_probs_lowers_to_the_sampler_that_takes_them(A, weighted):
    """The CUDA backend's sync-free node-wise sampler is uniform only (registered
    ``without=("probs",)``): a fused weighted sample lowers to the exact sampler, which reads
    sizes back and so stays out of any CUDA-graph region; a uniform one keeps the sync-free
    kernel. Decided at lowering, on the node's inputs, without a GPU."""
    from gsample.backend.cuda import nodewise, sampling

    W = gs.datasets.rmat(1000, 10000, seed=0, weighted=True)
    graph = gs.compile(_neighbours).program(W, torch.arange(10), weighted=weighted)
    (step,) = _samplers(lower(graph, "cuda", Options(), "cuda:0"))
    if weighted:
        assert step.fn is sampling.slice_individual_sample, step.label
        assert "sync-free" not in step.label and step.syncs and not step.graph_safe
        assert step.node.inputs.keys() >= {"probs"}
    else:
        assert step.fn is nodewise.slice_individual_sample, step.label
        assert "sync-free" in step.label and step.graph_safe and not step.syncs


def _alias_layers(A, seeds, fanouts=(5, 3)):
    blocks = []
    for k in fanouts:
        sub = A[:, seeds]
        s = sub.individual_sample(k, probs=sub**2 + 0.5, replace=True, method="alias")
        blocks.append(s)
        seeds = s.all_nodes()
    return blocks


def test_alias_draws_lower_to_the_sync_free_sampler_cdf_draws_do_not(A):
    """``method="alias"`` with weights of the graph alone gets the graph's alias tables
    (an ``alias`` input): the sync-free kernel takes it (registered ``without`` probs
    ``unless`` an alias table is given), and both layers are one CUDA-graph region; inverse-
    CDF draws of the same weights, or tables built per call, lower to the exact sampler."""
    from gsample.backend.cuda import nodewise, sampling

    W = gs.datasets.rmat(1000, 10000, seed=0, weighted=True)
    p = _program(_alias_layers, W)
    samplers = _samplers(p)
    assert len(samplers) == 2 and all(
        s.fn is nodewise.slice_individual_sample and s.graph_safe and "sync-free" in s.label
        for s in samplers
    ), p.format()
    assert all(s.node.inputs.get("alias") is not None for s in samplers)
    (region,) = p.regions
    assert all(region.start <= p.steps.index(s) < region.stop for s in samplers)

    def cdf_layers(A, seeds):
        sub = A[:, seeds]
        return sub.individual_sample(5, probs=sub**2 + 0.5, replace=True)

    (step,) = _samplers(_program(cdf_layers, W))
    assert step.fn is sampling.slice_individual_sample and not step.graph_safe
    # their checks only convert the weights: the sampler checks their values with its draws
    # (kernels/cdf.cu's flags, read back with its sizes), so no check gathers the frontier's
    # weights or reads back
    checks = [
        s
        for s in _program(_cdf_two_layers, W).steps
        if s.label.startswith("check") and "probs" in s.label
    ]
    assert len(checks) == 2 and all(
        "probs: checked in the kernel" in s.label and not s.syncs for s in checks
    )


def _cdf_two_layers(A, seeds):
    sub = A[:, seeds]
    s = sub.individual_sample(5, probs=sub**2 + 0.5, replace=True)
    sub = A[:, s.all_nodes()]
    return s, sub.individual_sample(3, probs=sub**2 + 0.5, replace=True)


def test_weighted_neighbours_lower_to_no_region_reading_back(A):
    """``examples/weighted_neighbors.py`` (probs = the graph's values): no step inside a
    CUDA-graph region reads back (the bug: its sampler was marked sync-free)."""
    fn = example("weighted_neighbors").weighted_neighbors
    W = gs.datasets.rmat(1000, 10000, seed=0, weighted=True)
    p = _program(fn, W, fanouts=(5, 3))
    samplers = _samplers(p)
    assert len(samplers) == 2 and all(not s.graph_safe for s in samplers)
    if p.region is not None:
        assert all(s.graph_safe and not s.syncs for s in p.region.steps)


def test_backend_impl_passes_over_a_variant_without_an_input():
    """``Backend.impl``: a sync-free variant registered ``without`` an input is chosen only
    for nodes that lack that input; the exact implementation otherwise."""
    from gsample.backend import Backend, resolve

    be = Backend()
    exact, fast = (lambda **kw: "exact"), (lambda **kw: "fast")
    be.register(Op.SLICE_INDIVIDUAL_SAMPLE, ("csc",), exact)
    be.register(Op.SLICE_INDIVIDUAL_SAMPLE, ("csc",), fast, sync_free=True, without=("probs",))
    op = Op.SLICE_INDIVIDUAL_SAMPLE
    assert be.impl(op, "csc", sync_free=True, given=("A", "cols")).fn is fast
    assert be.impl(op, "csc", sync_free=True, given=("A", "cols", "probs")).fn is exact
    assert be.impl(op, "csc", sync_free=False, given=("A", "cols")).fn is exact
    assert resolve(be, op, layout="csc", sync_free=True, given=("A", "cols", "probs")).fn is exact
    # eagerly, inputs given as None are not inputs the node has
    assert (
        resolve(
            be, op, layout="csc", sync_free=True, inputs={"A": None, "cols": 1, "probs": None}
        ).fn
        is fast
    )


def test_the_cyclic_gc_is_paused_while_a_graph_is_captured():
    """A collection inside a capture may free an earlier CUDA graph, which invalidates the
    capture (seen in the CUDA suite): ``Region._capture`` captures inside ``_gc_paused``,
    which restores the collector's state afterwards, also when the capture raises."""
    import gc
    import inspect

    from gsample.runtime import cuda_graphs

    assert "_gc_paused()" in inspect.getsource(cuda_graphs.Region._capture)
    assert gc.isenabled()
    with cuda_graphs._gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), cuda_graphs._gc_paused():
        raise RuntimeError("capture failed")
    assert gc.isenabled()
    gc.disable()
    try:  # a caller that had it off keeps it off
        with cuda_graphs._gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


# ----------------------------------------------------------------------------- the loader's nodes
def test_the_loaders_variant_computes_the_last_frontier_inside_the_graph_region(A):
    """``gather_nodes`` after the pipeline: the last block's all_nodes is a hidden output,
    computed by a sync-free kernel in the same CUDA graph as the rest, its size read back
    with theirs (one read-back in all), and not returned."""
    graph = gs.compile(graphsage, passes=[*PIPELINE, gather_nodes]).program(A, torch.arange(10))
    out = graph.output
    assert [out.inputs[r.name] for r in out.attrs["template"]] == [
        n for n in graph.nodes if n.op is Op.SLICE_INDIVIDUAL_SAMPLE
    ]
    (hidden,) = set(out.inputs) - {r.name for r in out.attrs["template"]}
    assert out.inputs[hidden].op is Op.ALL_NODES
    assert out.inputs[hidden].inputs["A"] is out.inputs[out.attrs["template"][-1].name]
    p = lower(graph, "cuda", Options(), "cuda:0")
    ops = [s.node.op for s in p.steps if s.label.startswith("cuda.")]
    assert ops == [Op.SLICE_INDIVIDUAL_SAMPLE, Op.ALL_NODES] * 2
    assert p.num_syncs == 1 and (p.region.start, p.region.stop) == (1, 5)


def _flipped(A, seeds):
    s = A[:, seeds].individual_sample(5)
    return [s, A[:, s.all_nodes().flip(0)].individual_sample(5)]


def _rows_of(A, seeds):
    s = A[:, seeds].individual_sample(5)
    return [s, A[:, s.row()].individual_sample(5)]


@pytest.mark.parametrize(
    "fn, kwargs, added",
    [
        (graphsage, {"fanouts": (5, 5, 5)}, True),
        (graphsage, {"fanouts": (5,)}, True),  # one block: it chains
        (example("ladies").ladies, {"layers": (50, 50)}, True),  # through its value maps
        (_flipped, {}, False),  # dense code between the hops: no chain the IR shows
        (_rows_of, {}, False),  # the next hop slices rows, not all_nodes
        (example("graphsage_pyg").graphsage_pyg, {"fanouts": (5, 5)}, False),
        (example("shadow").shadow, {"fanouts": (4, 4)}, False),  # (subgraph, nodes)
    ],
)
def test_gather_nodes_adds_the_last_frontier_only_where_the_blocks_chain(A, fn, kwargs, added):
    G = example("ladies").normalize(A) if fn.__name__ == "ladies" else A
    graph = gs.compile(fn).program(G, torch.arange(10), **kwargs)
    before = len(graph.nodes)
    result = gather_nodes(graph)
    assert result.changed is added and len(graph.nodes) == before + added
    graph.verify()
    assert not gather_nodes(graph).changed  # computed now (or never)
    if added:
        last = returned_blocks(graph)[-1]
        assert frontier_of(graph, last) is graph.output.inputs[max(graph.output.inputs, key=int)]


@pytest.mark.parametrize("name", ["graphsage", "ladies"])
def test_a_program_keeps_what_its_blocks_columns_were_sliced_with(A, name):
    """The output keeps with each returned block the object its columns were sliced with
    (gsample.formats.derived.COLUMNS): block 0, the seeds argument itself; block l + 1, the
    all_nodes kept with block l (so a loader checks the chain by identity), equal to its
    columns; the last block's all_nodes is kept only by the loader's variant."""
    lad = example("ladies")
    G, fn, kwargs = (
        (A, graphsage, {"fanouts": (5, 5, 5)})
        if name == "graphsage"
        else (lad.normalize(A), lad.ladies, {"layers": (50, 50, 50)})
    )
    seeds = torch.arange(0, 1000, 9)
    for passes, last in ((None, False), ([*PIPELINE, gather_nodes], True)):
        blocks = gs.compile(fn, passes=passes)(G, seeds, **kwargs)
        assert recall(blocks[0].csc, COLUMNS) is seeds
        for before, block in itertools.pairwise(blocks):
            frontier = recall(before.csc, Op.ALL_NODES)
            assert recall(block.csc, COLUMNS) is frontier is before.all_nodes()
            assert torch.equal(frontier, block.csc.global_cols())
        kept = recall(blocks[-1].csc, Op.ALL_NODES)
        assert (kept is not None) is last
        if last:
            assert torch.equal(kept, gs.Matrix(dataclasses.replace(blocks[-1].csc)).all_nodes())


def _pinsage_blocks(A, seeds):
    """Two PinSAGE hops as blocks (``from_neighbors``), the second from the first's nodes."""
    first = example("pinsage").pinsage_block(A, seeds, num_walks=10, length=2, k=4)
    return [first, example("pinsage").pinsage_block(A, first.all_nodes(), 10, 2, 0.5, 4)]


@pytest.mark.parametrize(
    "name, fn, kwargs, chained",
    [
        ("graphsage", graphsage, {"fanouts": (5, 5, 5)}, True),
        ("ladies", example("ladies").ladies, {"layers": (50, 50)}, True),
        ("fastgcn", example("fastgcn").fastgcn, {"layers": (60, 60)}, True),
        ("labor", example("labor").labor, {"fanouts": (4, 4)}, True),  # filter_edges
        ("pinsage", _pinsage_blocks, {}, True),  # from_neighbors
        ("graphsage_pyg", example("graphsage_pyg").graphsage_pyg, {"fanouts": (5, 5)}, False),
    ],
)
def test_what_a_program_keeps_with_its_blocks_is_what_they_hold(A, name, fn, kwargs, chained):
    """The op-table rules the lowering reads (``column_source``: a NEW_COLS input, or the
    matrix of a map, a sample or a filter) against the samples: every object a program
    keeps with a block as its columns equals the block's global column ids, every all_nodes
    it keeps equals one computed afresh; DGL-style samplers chain by identity
    (``_program_chained``), others do not."""
    G = example("ladies").normalize(A) if name == "ladies" else A
    seeds = torch.arange(3, 1000, 11)
    gs.manual_seed(1)
    blocks = gs.compile(fn, passes=[*PIPELINE, gather_nodes])(G, seeds, **kwargs)
    facts = 0
    for block in blocks:
        cols = recall(block.csc, COLUMNS)
        if cols is not None:
            facts += 1
            assert torch.equal(cols.to(torch.int64), block.csc.global_cols()), name
        kept = recall(block.csc, Op.ALL_NODES)
        if kept is not None:
            fresh = gs.Matrix(dataclasses.replace(block.csc)).all_nodes()
            assert torch.equal(kept, fresh), name
    assert facts == (len(blocks) if chained else 1)  # (the first block's: the seeds)
    assert (_program_chained(blocks, seeds) is not None) is chained


def test_a_tuple_of_bounded_results_is_trimmed_element_by_element():
    """An op with several results (``first_reached``'s sync-free implementation) returns
    them as one tuple of bounded values: the trim before a reader of the whole tuple, or at
    the program's end, trims each element (one read-back), and leaves other values as they
    are."""
    from gsample.formats.bounded import BoundedIds
    from gsample.runtime.steps import trim

    count = torch.tensor([2])
    nodes = BoundedIds(torch.tensor([5, 7, -1, -1]), count)
    slot = BoundedIds(torch.tensor([0, 1, 9, 9]), count)
    state = BoundedIds(torch.tensor([3, 5, 7, 0, 0]), torch.tensor([3]))
    plain = torch.tensor([4, 4])
    got_tuple, got_plain = trim((nodes, slot, None, state), plain)
    assert [None if t is None else t.tolist() for t in got_tuple] == [
        [5, 7],
        [0, 1],
        None,
        [3, 5, 7],
    ]
    assert got_plain is plain
    assert trim(nodes)[0].tolist() == [5, 7]


@pytest.mark.parametrize("timed", [False, True])
def test_the_disjoint_program_reads_back_once_at_its_end(A, timed):
    """PyG's disjoint (and temporal) sampler on the CUDA backend: every hop's
    ``temporal_sample`` and ``first_reached`` is sync-free (their results stay bounded, the
    tuple's elements too), so the program reads back once, at its end, however many hops."""
    from gsample.interop.pyg.temporal import disjoint_sample

    edge_time = torch.arange(A.num_edges)

    def timed_program(A, seeds, seed_time):
        return disjoint_sample(A, seeds, seed_time, edge_time, num_neighbors=(5, 4, 3))

    def untimed_program(A, seeds):
        return disjoint_sample(A, seeds, num_neighbors=(5, 4, 3))

    fn = timed_program if timed else untimed_program
    extra = (torch.arange(10),) if timed else ()
    graph = gs.compile(fn).program(A, torch.arange(10), *extra)
    p = lower(graph, "cuda", Options(), "cuda:0")
    ops = {s.node.op: s for s in p.steps if s.label.startswith("cuda.")}
    for op in (Op.TEMPORAL_SAMPLE, Op.FIRST_REACHED):
        assert "sync-free" in ops[op].label and not ops[op].syncs, ops[op].label
    assert not any(s.label == "trim" for s in p.steps), p.format()
    assert p.num_syncs == 1, p.format()
    # one CUDA-graph region from the seeds' slots to the read-back: outside it only the
    # seeds' conversion (no flag: A.positions checks the ids on the device, in the graph),
    # so a replayed call's counts and check flags are all the graph's own
    labels = [s.label for s in p.steps]
    assert labels[0] == "check positions(nodes) [nodes: checked in the kernel]", p.format()
    assert labels[1] == "cuda.positions[csc] sync-free", p.format()
    assert regions(p) == [(1, len(p.steps) - 1)], p.format()


def test_seeds_made_by_user_code_lower_to_the_exact_temporal_sampler(A):
    """The sync-free ``temporal_sample`` ranks a seed's columns by a binary search, so it
    takes only seeds ascending within each mini-batch, which ``positions`` and
    ``first_reached``'s slots are (``OpDef.ordered_out``). Seeds computed by user code
    (``seed_index[slot]``) lower to the exact implementation, which ranks any order."""
    from gsample.interop.pyg.temporal import disjoint_sample

    def program(A, seeds, seed_index):
        return disjoint_sample(A, seeds, seed_index=seed_index, num_neighbors=(5, 4))

    graph = gs.compile(program).program(A, torch.arange(10), torch.arange(10).flip(0))
    p = lower(graph, "cuda", Options(), "cuda:0")
    temporal = [s for s in p.steps if s.label.startswith("cuda.temporal_sample")]
    assert len(temporal) == 2 and not any("sync-free" in s.label for s in temporal)
    assert all(s.syncs for s in temporal)
    reached = [s for s in p.steps if s.label.startswith("cuda.first_reached")]
    assert len(reached) == 1 and "sync-free" in reached[0].label


def test_a_region_reading_a_matrix_or_results_an_op_made_is_never_replayed(A):
    """A CUDA graph cannot read in place what an earlier step made afresh each call (an
    exact slice's matrix, a sync-free op's tuple of results): no region starts on one (a
    region of the tuple's getitems alone would replay the first call's elements), and a
    region's key refuses such a value (its id and storages a later call may reuse with
    other sizes)."""
    from gsample.interop.pyg.subgraph import neighbor_hops
    from gsample.interop.pyg.temporal import disjoint_sample

    def every_neighbour(A, seeds):
        return neighbor_hops(A, seeds, (-1, -1, -1), False, False)[0]

    graph = gs.compile(every_neighbour, passes=[]).program(A, torch.arange(10))
    p = lower(graph, "cuda", Options(), "cuda:0")
    assert sum(s.label.startswith("cuda.first_reached") for s in p.steps) == 3
    assert p.regions == [], p.format()  # each hop's first_reached reads a fresh slice

    def disjoint(A, seeds):
        return disjoint_sample(A, seeds, num_neighbors=(5, 4))

    graph = gs.compile(disjoint).program(A, torch.arange(10))
    p = lower(graph, "cuda", Options(), "cuda:0")
    (region,) = p.regions
    ops = [s.node.op for s in region.steps if s.label.startswith("cuda.")]
    want = [Op.POSITIONS, Op.TEMPORAL_SAMPLE, Op.FIRST_REACHED, Op.TEMPORAL_SAMPLE]
    assert ops == want, p.format()
    graph_slot = next(s for s in region.inputs if s in region.in_place)
    env = [0] * (max(region.inputs) + 1)  # (plain values: keyed by value on any device)
    env[graph_slot] = A.csc
    assert region._key(env) is not None
    region.in_place = region.in_place - {graph_slot}  # as if an op had made the matrix
    assert region._key(env) is None
    env[graph_slot] = (A.csc,)
    assert region._key(env) is None


def _walk_from_sampled_nodes(A, seeds):
    return A.random_walk(A[:, seeds].individual_sample(2).all_nodes(), 4)


def _walk_from_seeds(A, seeds):
    return A.random_walk(seeds, 4)


def test_a_super_batch_s_walks_split_with_its_seeds_and_no_other_frontier(A):
    """The split of a super-batch's walks takes their frontier where it is the seeds (their
    mini-batches' sizes kept on the host: ``frontier_ptr``), and no other: a sync-free op's
    bounded frontier would be trimmed for it, a read-back more than the split's own."""
    for fn, frontier in ((_walk_from_seeds, True), (_walk_from_sampled_nodes, False)):
        sb = gs.compile(fn).super_batched((A, torch.arange(10)), seeds="seeds")
        p = lower(sb.program(4)[0], "cuda", Options(), "cuda:0")
        seeds = next(slot for name, slot, _ in p.inputs if name == "seeds")
        labels = [s.label for s in p.steps]
        (split,) = [s for s in p.steps if s.label == "dense split"]
        walk = next(s for s in p.steps if s.node is not None and s.node.op is Op.RANDOM_WALK)
        assert split.args == ((walk.out, seeds) if frontier else (walk.out,)), labels
        assert "trim" not in labels, labels
