"""The op table declares each op once: effect, ECSF step, inputs and their alignment,
attributes, checks, size rules and capture; backends declare the layouts they run."""

import pytest

import gsample.ir as ir
from gsample.backend import get_backend
from gsample.formats.layouts import NAMES


def test_every_op_has_one_definition_and_a_torch_implementation():
    assert set(ir.OPS) == set(ir.Op)
    assert all(ir.info(op).op is op for op in ir.Op)
    # program-structure ops (inputs, dense code, cached values, ...) are run by the runtime
    sparse_ops = {op for op in ir.Op if ir.info(op).step is not ir.Step.GRAPH}
    torch_be = get_backend("torch")
    assert {op for op, _ in torch_be.impls} == sparse_ops
    assert all(torch_be.impl(op, "csc") is not None for op in sparse_ops), (
        "the reference runs every op on CSC"
    )


def test_only_select_ops_are_random():
    random = {op for op, d in ir.OPS.items() if d.effect is ir.Effect.RANDOM}
    assert random == {
        ir.Op.INDIVIDUAL_SAMPLE,
        ir.Op.COLLECTIVE_SAMPLE,
        ir.Op.SLICE_INDIVIDUAL_SAMPLE,
        ir.Op.SLICE_COLLECTIVE_SAMPLE,
        ir.Op.LISTED_COLLECTIVE_SAMPLE,
        ir.Op.RANDOM_WALK,
        ir.Op.RANDOM_UNIFORM,
        ir.Op.RANDOM_COUNT,
        ir.Op.FUSED_WALK,
        ir.Op.TEMPORAL_SAMPLE,
        ir.Op.TEMPORAL_WALK,
        ir.Op.TEMPORAL_WALK_EDGES,
    }
    assert all(ir.info(op).step is ir.Step.SELECT for op in random)


def test_backends_register_layouts_the_ir_knows():
    for name in ("torch", "cuda"):
        be = get_backend(name)
        assert all(layout in NAMES and isinstance(op, ir.Op) for op, layout in be.impls)
        assert be.target().name == name


def test_tensor_inputs_and_results_declare_their_alignment():
    for op, d in ir.OPS.items():
        if d.step is ir.Step.GRAPH:
            continue
        for i in d.inputs:
            assert i.matrix or isinstance(i.align, ir.Align), (op, i.name)
        if d.kind in (ir.Kind.TENSOR, ir.Kind.TUPLE):
            assert d.out is not None, op


def test_capture_maps_come_from_the_definitions():
    assert ir.METHODS["individual_sample"] is ir.Op.INDIVIDUAL_SAMPLE
    assert ir.METHODS["sum"] is ir.Op.REDUCE and ir.METHODS["div"] is ir.Op.EDGE_BROADCAST
    assert ir.PROPERTIES["T"] is ir.Op.TRANSPOSE
    # every Matrix method the tracer maps exists on gs.Matrix
    import gsample as gs

    assert all(hasattr(gs.Matrix, m) for m in ir.METHODS)
    assert all(hasattr(gs.Matrix, p) for p in ir.PROPERTIES)


def test_size_rules_estimate_and_bound():
    A = ir.Size(nnz=1000.0, rows=500.0, cols=100.0)
    ins = {"cols": ir.Size(rows=10.0)}
    sample = ir.estimate(ir.Op.SLICE_INDIVIDUAL_SAMPLE, A, ins, {"k": 5, "replace": False})
    assert sample.cols == 10 and sample.nnz == min(10 * 1000 / 100, 50)
    b = ir.bound(ir.Op.SLICE_INDIVIDUAL_SAMPLE, A, ins, {"k": 5, "replace": False})
    assert b.nnz == 50 and b.cols == 10, "k per column, whatever the slice holds"
    # a tensor result takes the length its alignment says
    assert ir.estimate(ir.Op.REDUCE, A, {}, {"op": "sum", "axis": 1}).rows == 500
    assert ir.estimate(ir.Op.REDUCE, A, {}, {"op": "sum", "axis": 0}).rows == 100


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(ValueError, match="backend"):
        get_backend("tpu")
