"""The alias-table pass: weights of the graph alone get a CACHED alias table (offline);
weights given per call, or the inverse CDF, get none (the sampler builds what it needs);
samples unchanged."""

import helpers
import pytest
import torch
from helpers import cached, ops
from helpers import random_seeds as seeds

import gsample as gs
from gsample.ir import Op, format_lines
from gsample.passes.alias_tables import alias_tables


@pytest.fixture(scope="module")
def A():
    return gs.datasets.rmat(2000, 30000, seed=1, weighted=True)


def alias_layer(A, seeds, w=None, method="alias"):
    sub = A[:, seeds]
    probs = sub**2 if w is None else (A * w)[:, seeds]
    return sub.individual_sample(4, probs=probs, replace=True, method=method)


def _sample_node(graph):
    (node,) = [n for n in graph.nodes if n.op is Op.SLICE_INDIVIDUAL_SAMPLE]
    return node


def test_alias_tables_of_graph_level_weights_are_cached(A):
    """``method="alias"`` with weights of the graph alone: the fused sample reads a CACHED
    ``alias_table`` of the graph and those weights (offline); with weights given per call,
    or with the inverse CDF, no table is made (the sampler builds what it needs)."""
    after = gs.compile(alias_layer).program(A, seeds())
    table = _sample_node(after).input("alias")
    assert table is not None and table.op is Op.CACHED
    assert Op.ALIAS_TABLE in ops(table.attrs["program"]) and Op.ALIAS_TABLE not in ops(after)
    again = alias_tables(after.copy())
    assert not again.changed
    assert format_lines(again.graph.verify()) == format_lines(after)
    w = torch.rand(A.num_edges) + 0.1
    for program in (
        gs.compile(alias_layer).program(A, seeds(), w),
        gs.compile(alias_layer).program(A, seeds(), method="cdf"),
    ):
        assert _sample_node(program).input("alias") is None
        assert all(Op.ALIAS_TABLE not in ops(c.attrs["program"]) for c in cached(program))
    helpers.check_compiled_equals_eager(alias_layer, A, seeds(), calls=2, distinct=True)
