"""Lowering (``gsample.runtime.lower``): one resolved call per op, checks only where data
enters, release points, CUDA-graph regions; all without a GPU (lowering for the ``cuda``
backend resolves implementations, it runs none)."""
import pytest
import torch

import gsample as gs
from gsample.ir import Op
from gsample.runtime import Options, lower, run
from helpers import example, graphsage


@pytest.fixture(scope="module")
def A():
    return gs.datasets.rmat(1000, 10000, seed=0)


def _program(fn, G, backend="cuda", device="cuda:0", options=Options(), **kwargs):
    graph = gs.compile(fn).program(G, torch.arange(10), **kwargs)
    return lower(graph, backend, options, device)


def test_graphsage_lowers_to_one_call_per_op_and_one_read_back(A):
    p = _program(graphsage, A)
    ops = [s for s in p.steps if s.label.startswith("cuda.")]
    assert [s.node.op for s in ops] == [Op.SLICE_INDIVIDUAL_SAMPLE, Op.ALL_NODES,
                                        Op.SLICE_INDIVIDUAL_SAMPLE]
    assert all(s.graph_safe and "sync-free" in s.label for s in ops)
    checks = [s for s in p.steps if s.label.startswith("check")]
    assert len(checks) == 1 and "range in the kernel" in checks[0].label, \
        "the seeds are converted at the boundary; the frontier all_nodes makes is trusted"
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
    for slot, i in last.items():
        if p.env[slot] is None and slot not in outputs:
            assert slot in p.steps[i].release, (p.slot_names[slot], p.format())


def test_ladies_has_no_graph_region_and_per_layer_reads(A):
    lad = example("ladies")
    p = _program(lad.ladies, lad.normalize(A), layers=(50, 50, 50))
    assert p.region is None                      # its sync-free runs read fresh matrices
    ops = [s.node.op for s in p.steps if s.label.startswith("cuda.") and "sync-free" in s.label]
    assert ops.count(Op.SLICE_REDUCE) == 3 and ops.count(Op.SLICE_COLLECTIVE_SAMPLE) == 3


@pytest.mark.parametrize("options, device", [(Options(cuda_graphs=False), "cuda:0"),
                                             (Options(), "cpu")])
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
    for x, y in zip(got, want):
        assert torch.equal(x.csc.rows, y.csc.rows) and torch.equal(x.csc.indptr, y.csc.indptr)


def test_explain_prints_the_lowered_program(A, capsys):
    text = gs.explain(graphsage, A, torch.arange(10), file=False)
    section = text[text.index("== lowered program"):text.index("== summary")]
    assert "torch.slice_individual_sample[csc]" in section and "frees" in section
