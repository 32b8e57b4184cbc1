"""The op table declares each op once, with its effect, ECSF step and layouts."""
import gsample.ir as ir
from gsample.backend import get_backend


def test_every_op_has_one_entry_and_a_torch_implementation():
    assert set(ir.OP_TABLE) == set(ir.Op)
    # program-structure ops (inputs, dense code, cached values, ...) are run by the executor
    sparse_ops = {op for op in ir.Op if ir.info(op).step is not ir.Step.GRAPH}
    assert get_backend("torch").capabilities == frozenset(sparse_ops)


def test_only_select_ops_are_random():
    random = {op for op, i in ir.OP_TABLE.items() if i.effect is ir.Effect.RANDOM}
    assert random == {ir.Op.INDIVIDUAL_SAMPLE, ir.Op.COLLECTIVE_SAMPLE,
                      ir.Op.SLICE_INDIVIDUAL_SAMPLE, ir.Op.SLICE_COLLECTIVE_SAMPLE}
    assert all(ir.info(op).step is ir.Step.SELECT for op in random)


def test_layouts_are_declared():
    for op, i in ir.OP_TABLE.items():
        if i.step is ir.Step.GRAPH:
            continue
        assert i.accepts and i.produces, op
        assert all(isinstance(layout, ir.Layout) for layout in i.accepts + i.produces)


def test_unknown_backend_is_a_clear_error():
    import pytest
    with pytest.raises(ValueError, match="backend"):
        get_backend("tpu")
