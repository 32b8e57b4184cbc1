"""The IR graph: the verifier catches every broken invariant, and the three printers show
every node (``format_lines``, ``format_table``, ``to_dot``)."""

import re

import pytest
import torch

import gsample as gs
from gsample.ir import Graph, Kind, Op, Ref, VerifyError, format_lines, format_table, info, to_dot


def sampler_graph() -> Graph:
    """``A[:, seeds].individual_sample(2)`` then ``.all_nodes()``, built by hand."""
    g = Graph()
    A = g.add(Op.INPUT, attrs={"name": "A", "kind": Kind.MATRIX}, kind=Kind.MATRIX)
    seeds = g.add(Op.INPUT, attrs={"name": "seeds", "kind": Kind.TENSOR}, kind=Kind.TENSOR)
    sub = g.add(Op.SLICE_COLS, {"A": A, "cols": seeds})
    sq = g.add(Op.EDGE_MAP, {"A": sub}, {"op": "pow", "reverse": False, "scalar": 2})
    p = g.add(Op.VALUES, {"A": sq})
    s = g.add(
        Op.INDIVIDUAL_SAMPLE, {"A": sub, "probs": p}, {"k": 2, "replace": False, "ordinal": 0}
    )
    nodes = g.add(Op.ALL_NODES, {"A": s})
    t = g.add(
        Op.INDIVIDUAL_SAMPLE,
        {"A": g.add(Op.SLICE_COLS, {"A": A, "cols": nodes})},
        {"k": 1, "replace": True, "ordinal": 1},
    )
    g.num_random = 2
    g.add(Op.OUTPUT, {"0": s, "1": t}, {"template": [Ref("0"), Ref("1")]})
    return g


def find(g, op, i=0):
    return [n for n in g.nodes if n.op is op][i]


def test_a_well_formed_graph_verifies():
    g = sampler_graph()
    assert g.verify() is g
    assert g.copy().verify() is not g
    assert [n.op for n in g.copy().nodes] == [n.op for n in g.nodes]


def test_a_copy_of_a_copy_never_reuses_a_name():
    g = sampler_graph()
    for _ in range(3):  # as a pass adding nodes on each optimize() copy
        g = g.copy()
        A, seeds = g.nodes[0], g.nodes[1]
        first = g.add(Op.SLICE_COLS, {"A": A, "cols": seeds}, before=g.output)
        g.add(Op.SLICE_COLS, {"A": A, "cols": seeds}, before=g.output)
        g.verify()
        g.remove([first])  # the graph grows by one node, its names by two
        g.verify()
    names = [n.name for n in g.nodes]
    assert len(names) == len(set(names))


def test_traced_graphs_verify():
    A = gs.datasets.rmat(100, 1000, seed=0)

    def fn(A, seeds):
        sub = A[:, seeds]
        return sub.collective_sample(3, node_probs=(sub**2).sum(axis=1)).edges()

    gs.compile(fn, passes=[]).program(A, torch.arange(4)).verify()


# ----------------------------------------------------------------------------- verifier
def test_use_before_def():
    g = sampler_graph()
    sub = find(g, Op.SLICE_COLS)
    g.nodes.remove(sub)
    g.nodes.insert(len(g.nodes) - 1, sub)  # defined after its users
    with pytest.raises(VerifyError, match="is not defined before it"):
        g.verify()


def test_input_from_another_graph_is_undefined():
    g, other = sampler_graph(), sampler_graph()
    find(g, Op.ALL_NODES).inputs["A"] = find(other, Op.INDIVIDUAL_SAMPLE)
    with pytest.raises(VerifyError, match="not defined before"):
        g.verify()


def test_missing_required_input():
    g = sampler_graph()
    del find(g, Op.SLICE_COLS).inputs["cols"]
    with pytest.raises(VerifyError, match=r"missing \['cols'\]"):
        g.verify()


def test_optional_input_may_be_absent():
    g = sampler_graph()
    del find(g, Op.INDIVIDUAL_SAMPLE).inputs["probs"]  # "probs?" is optional
    g.verify()


def test_unknown_input():
    g = sampler_graph()
    sub = find(g, Op.SLICE_COLS)
    sub.inputs["rows"] = sub.inputs["cols"]
    with pytest.raises(VerifyError, match=r"unknown \['rows'\]"):
        g.verify()


def test_missing_attribute():
    g = sampler_graph()
    del find(g, Op.INDIVIDUAL_SAMPLE, 1).attrs["replace"]
    with pytest.raises(VerifyError, match=r"attributes \['replace'\] missing"):
        g.verify()


def test_duplicate_op_ordinals():
    g = sampler_graph()
    find(g, Op.INDIVIDUAL_SAMPLE, 1).attrs["ordinal"] = 0
    with pytest.raises(VerifyError, match="share an op ordinal"):
        g.verify()


def test_random_op_without_ordinal_and_ordinal_out_of_range():
    g = sampler_graph()
    del find(g, Op.INDIVIDUAL_SAMPLE).attrs["ordinal"]
    with pytest.raises(VerifyError, match="without an op ordinal"):
        g.verify()
    g = sampler_graph()
    g.num_random = 1
    with pytest.raises(VerifyError, match=r"outside 0\.\.0"):
        g.verify()


def test_output_not_last():
    g = sampler_graph()
    g.nodes.append(g.nodes.pop(-2))  # the second sample after the output
    with pytest.raises(VerifyError, match=r"OUTPUT|not defined"):
        g.verify()
    g = sampler_graph()
    g.add(Op.ALL_NODES, {"A": find(g, Op.INDIVIDUAL_SAMPLE)})
    with pytest.raises(VerifyError, match="must end in one OUTPUT"):
        g.verify()
    g = sampler_graph()
    g.add(Op.OUTPUT, {"0": find(g, Op.INDIVIDUAL_SAMPLE)}, {"template": Ref("0")})
    with pytest.raises(VerifyError, match="OUTPUT must be the last node"):
        g.verify()


def test_empty_graph_and_duplicate_names_and_kinds():
    with pytest.raises(VerifyError, match="must end in one OUTPUT"):
        Graph().verify()
    g = sampler_graph()
    find(g, Op.ALL_NODES).name = find(g, Op.SLICE_COLS).name
    with pytest.raises(VerifyError, match="duplicate node name"):
        g.verify()
    g = sampler_graph()
    find(g, Op.ALL_NODES).inputs["A"] = find(g, Op.VALUES)  # a tensor where A goes
    with pytest.raises(VerifyError, match="input A must be a matrix"):
        g.verify()


def test_variadic_inputs_must_be_numbered():
    g = sampler_graph()
    g.output.inputs["x"] = g.output.inputs.pop("1")
    with pytest.raises(VerifyError, match="variadic inputs"):
        g.verify()


# ----------------------------------------------------------------------------- printers
def test_lines_show_every_node_with_op_inputs_attrs_and_kind():
    g = sampler_graph()
    find(g, Op.SLICE_COLS).meta["layout"] = "csr"
    text = format_lines(g)
    lines = text.splitlines()
    assert len(lines) == len(g.nodes)
    for n, line in zip(g.nodes, lines):
        assert line.startswith(f"%{n.name} = {n.op.value}(")
        assert line.split(" [")[0].endswith(f": {n.kind.value}")
        for key, v in n.inputs.items():
            assert f"{key}=%{v.name}" in line
    assert "k=2, replace=False, ordinal=0" in text
    assert "[csr]" in lines[2]


def test_table_has_a_row_per_node_with_step_and_effect():
    g = sampler_graph()
    rows = format_table(g).splitlines()
    assert rows[0].split() == ["node", "op", "step", "effect", "inputs", "attrs", "kind", "layout"]
    assert set(rows[1]) <= {"-", " "}
    assert len(rows) == len(g.nodes) + 2
    for n, row in zip(g.nodes, rows[2:]):
        cells = row.split()
        assert cells[:4] == [n.name, n.op.value, info(n.op).step.value, info(n.op).effect.value]


_DOT_LINE = re.compile(
    r'^  ("[^"]+") \[label="[^"]*"(, style=filled, fillcolor="#[0-9a-f]{6}")?\];$'  # node
    r'|^  ("[^"]+") -> ("[^"]+") \[label="[^"]*"\];$'  # edge
    r"|^  node \[[^\]]*\];$"
)


def test_dot_is_valid_looking_graphviz_with_every_node_and_edge():
    g = sampler_graph()
    g.nodes[0].attrs["name"] = 'quo"ted'  # quotes must not break the label
    dot = to_dot(g, name="sampler")
    lines = dot.splitlines()
    assert lines[0] == 'digraph "sampler" {' and lines[-1] == "}"
    declared = set()
    for line in lines[1:-1]:
        m = _DOT_LINE.match(line)
        assert m, f"not a dot statement: {line!r}"
        if m.group(1):
            declared.add(m.group(1).strip('"'))
        elif m.group(3):
            assert m.group(3).strip('"') in declared and m.group(4).strip('"') in declared
    assert declared == {n.name for n in g.nodes}
    edges = sum(len(n.inputs) for n in g.nodes)
    assert dot.count(" -> ") == edges
    filled = [line for line in lines if "style=filled" in line]
    assert len(filled) == len(g.random_nodes())
    assert dot.count("{") == dot.count("}")


def test_printers_show_tensor_constants_programs_and_dense_functions():
    A = gs.datasets.rmat(100, 1000, seed=0)

    def fn(A, seeds):
        return torch.softmax(A[:, seeds].sum(axis=0) * torch.ones(4), dim=0)

    g = gs.compile(fn, passes=[]).program(A, torch.arange(4))
    for text in (format_lines(g), format_table(g), to_dot(g)):
        for n in g.nodes:
            assert n.name in text
        assert "softmax" in text


@pytest.mark.parametrize(
    "fn, in_place",
    [
        (__import__("operator").and_, False),
        (__import__("operator").or_, False),
        (__import__("operator").iand, True),
        (__import__("operator").iadd, True),
        (torch.relu_, True),
        (torch.relu, False),
        (("method", "add_"), True),
        (("method", "add"), False),
    ],
)
def test_dense_code_written_in_place(fn, in_place):
    """``a & b`` traces to ``operator.and_`` (pure: its name's trailing "_" is not torch's
    in-place mark); ``a &= b`` to ``operator.iand``; ``x.add_()`` and ``torch.relu_`` write."""
    g = Graph()
    x = g.add(Op.INPUT, {}, {"name": "x"}, Kind.TENSOR)
    node = g.add(Op.DENSE, {"0": x}, {"fn": fn, "template": ((Ref("0"),), {})}, Kind.TENSOR)
    assert node.writes_in_place is in_place
