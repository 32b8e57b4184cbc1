"""Capture (``gsample/trace.py``) and the compile cache (``gsample/compiler.py``).

* every Matrix operator becomes the op the table names, with its attributes, and the
  compiled program gives what the eager function gives;
* static arguments are specialised: a new value re-traces, an old one hits the cache,
  and the cache key also covers the traced arguments' dtype, device and layout;
* control flow on a traced value raises :class:`gsample.capture.trace.TraceError` naming the
  file and line and saying what to do instead.

The traced IR is checked with ``passes=[]`` so these tests do not depend on the
pipeline; every test runs with ``GSAMPLE_DEBUG=1`` (the IR is verified after every pass).
"""

import pathlib

import pytest
import torch
from helpers import assert_same
from helpers import graphsage as sage

import gsample as gs
from gsample.capture.trace import TraceError
from gsample.compiler.compiled import CompiledSampler
from gsample.ir import Kind, Op

HERE = pathlib.Path(__file__).resolve()


@pytest.fixture(autouse=True)
def _verify_after_every_pass(monkeypatch):
    monkeypatch.setenv("GSAMPLE_DEBUG", "1")


@pytest.fixture(scope="module")
def A():
    return gs.datasets.rmat(300, 3000, seed=3, weighted=True)


@pytest.fixture(scope="module")
def seeds():
    return torch.randperm(300, generator=torch.Generator().manual_seed(0))[:16]


def ops(graph):
    return [n.op for n in graph.nodes]


def line_of(marker: str) -> int:
    """The line of this file that carries ``# <marker>``."""
    for i, line in enumerate(HERE.read_text().splitlines(), 1):
        if line.rstrip().endswith(f"# {marker}"):
            return i
    raise AssertionError(marker)


# ----------------------------------------------------------------------------- capture
D = torch.randn(300, 4, generator=torch.Generator().manual_seed(1))
U = torch.randn(300, 4, generator=torch.Generator().manual_seed(2))

CASES = {
    # name: (fn(A, seeds), ops that must appear, attributes of the first node of that op)
    "slice_cols": (lambda A, s: A[:, s], [Op.SLICE_COLS], {}),
    "slice_rows": (lambda A, s: A[s, :], [Op.SLICE_ROWS], {}),
    "slice_both": (lambda A, s: A[s, s], [Op.SLICE_COLS, Op.SLICE_ROWS], {}),
    "mul_scalar": (
        lambda A, s: A[:, s] * 2.0,
        [Op.EDGE_MAP],
        {"op": "mul", "reverse": False, "scalar": 2.0},
    ),
    "rsub_scalar": (
        lambda A, s: 1.0 - A[:, s],
        [Op.EDGE_MAP],
        {"op": "sub", "reverse": True, "scalar": 1.0},
    ),
    "add_scalar": (lambda A, s: A[:, s] + 1, [Op.EDGE_MAP], {"op": "add", "scalar": 1}),
    "div_scalar": (lambda A, s: A[:, s] / 4, [Op.EDGE_MAP], {"op": "div", "scalar": 4}),
    "pow": (lambda A, s: A[:, s] ** 2, [Op.EDGE_MAP], {"op": "pow", "scalar": 2}),
    "neg": (lambda A, s: -A[:, s], [Op.EDGE_MAP], {"op": "neg"}),
    "mul_matrix": (
        lambda A, s: A[:, s] * A[:, s],
        [Op.EDGE_MAP, Op.VALUES],
        {"op": "mul", "scalar": None},
    ),
    "mul_edge_tensor": (
        lambda A, s: A[:, s] * A[:, s].values.sqrt(),
        [Op.EDGE_MAP, Op.VALUES, Op.DENSE],
        {"op": "mul", "scalar": None},
    ),
    "broadcast_mul": (
        lambda A, s: A[:, s].mul(A[:, s].sum(axis=0), axis=0),
        [Op.EDGE_BROADCAST, Op.REDUCE],
        {"op": "mul", "axis": 0},
    ),
    "broadcast_div": (
        lambda A, s: A[:, s].div(A[:, s].sum(axis=1) + 1, axis=1),
        [Op.EDGE_BROADCAST],
        {"op": "div", "axis": 1},
    ),
    "broadcast_add": (
        lambda A, s: A[:, s].add(A[:, s].max(axis=0), axis=0),
        [Op.EDGE_BROADCAST],
        {"op": "add", "axis": 0},
    ),
    "broadcast_sub": (
        lambda A, s: A[:, s].sub(A[:, s].mean(axis=1), axis=1),
        [Op.EDGE_BROADCAST],
        {"op": "sub", "axis": 1},
    ),
    "sum": (lambda A, s: A[:, s].sum(axis=0), [Op.REDUCE], {"op": "sum", "axis": 0}),
    "max": (lambda A, s: A[:, s].max(axis=1), [Op.REDUCE], {"op": "max", "axis": 1}),
    "mean": (lambda A, s: A[:, s].mean(axis=0), [Op.REDUCE], {"op": "mean", "axis": 0}),
    "spmm": (lambda A, s: A[:, s] @ D[s], [Op.SPMM], {}),
    "transpose": (lambda A, s: A[:, s].T, [Op.TRANSPOSE], {}),
    "spmm_t": (lambda A, s: A[:, s].T @ D, [Op.TRANSPOSE, Op.SPMM], {}),
    "sddmm": (lambda A, s: gs.sddmm(A[:, s], U, U[s], "dot"), [Op.SDDMM], {"op": "dot"}),
    "sddmm_mul": (
        lambda A, s: gs.sddmm(A[:, s], U[:, :1], U[s, :1], op="mul"),
        [Op.SDDMM],
        {"op": "mul"},
    ),
    "values_ids": (
        lambda A, s: (A[:, s].values, A[:, s].row_ids, A[:, s].col_ids),
        [Op.VALUES, Op.ROW_IDS, Op.COL_IDS],
        {},
    ),
    "individual": (
        lambda A, s: A[:, s].individual_sample(3),
        [Op.INDIVIDUAL_SAMPLE],
        {"k": 3, "replace": False, "ordinal": 0},
    ),
    "individual_probs": (
        lambda A, s: A[:, s].individual_sample(2, probs=A[:, s] ** 2, replace=True),
        [Op.INDIVIDUAL_SAMPLE, Op.VALUES],
        {"k": 2, "replace": True},
    ),
    "collective": (
        lambda A, s: A[:, s].collective_sample(5, node_probs=A[:, s].sum(axis=1)),
        [Op.COLLECTIVE_SAMPLE],
        {"k": 5, "replace": False, "ordinal": 0},
    ),
    "finalize": (
        lambda A, s: (A[:, s].row(), A[:, s].column(), A[:, s].all_nodes()),
        [Op.ROW, Op.COLUMN, Op.ALL_NODES],
        {},
    ),
    "edges": (lambda A, s: A[:, s].edges(), [Op.EDGES], {}),
    "edges_unpacked": (lambda A, s: A[:, s].edges()[2], [Op.GETITEM, Op.EDGES], {"index": 2}),
    "compact": (lambda A, s: A[:, s].compact(), [Op.COMPACT], {}),
    "dense_torch": (
        lambda A, s: torch.cumsum(A[:, s].sum(axis=0), 0).clamp(max=3.0),
        [Op.REDUCE, Op.DENSE],
        {},
    ),
    "num_nodes_static": (
        lambda A, s: A[:, s].individual_sample(A.num_nodes // 100),
        [Op.INDIVIDUAL_SAMPLE],
        {"k": 3},
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_operator_becomes_its_ir_op_and_runs_as_eager(name, A, seeds):
    fn, expected, attrs = CASES[name]
    compiled = gs.compile(fn, passes=[])
    graph = compiled.program(A, seeds)
    got = ops(graph)
    assert got[:2] == [Op.INPUT, Op.INPUT] and got[-1] is Op.OUTPUT
    for op in expected:
        assert op in got, f"{name}: {op} missing from {got}"
    node = next(n for n in graph.nodes if n.op is expected[0])
    for key, value in attrs.items():
        assert node.attrs[key] == value, (name, key, node.attrs)
    assert graph.num_random == sum(n.is_random for n in graph.nodes)
    graph.verify()
    gs.manual_seed(5)
    eager = fn(A, seeds)
    gs.manual_seed(5)
    assert_same(eager, compiled(A, seeds))
    gs.manual_seed(5)
    assert_same(eager, gs.compile(fn)(A, seeds))  # and through the default pipeline


def test_random_ops_numbered_in_program_order(A, seeds):
    def two_hops(A, seeds):
        s1 = A[:, seeds].individual_sample(2)
        s2 = A[:, s1.all_nodes()].collective_sample(4)
        s3 = A[:, seeds].individual_sample(1, replace=True)
        return s1, s2, s3

    graph = gs.compile(two_hops, passes=[]).program(A, seeds)
    assert [n.attrs["ordinal"] for n in graph.random_nodes()] == [0, 1, 2]
    assert graph.num_random == 3
    # the stream advances by the program's count, as eager does
    gs.manual_seed(1)
    two_hops(A, seeds)
    after_eager = A[:, seeds].individual_sample(3)
    gs.manual_seed(1)
    gs.compile(two_hops)(A, seeds)
    assert_same(after_eager, A[:, seeds].individual_sample(3))


def test_inputs_and_kinds(A, seeds):
    def fn(A, seeds, w, k=2):
        return A[:, seeds].individual_sample(k, probs=A[:, seeds].values * w[0])

    graph = gs.compile(fn, passes=[]).program(A, seeds, torch.ones(1))
    inputs = [n for n in graph.nodes if n.op is Op.INPUT]
    assert [(n.attrs["name"], n.kind) for n in inputs] == [
        ("A", Kind.MATRIX),
        ("seeds", Kind.TENSOR),
        ("w", Kind.TENSOR),
    ]


def test_returns_plain_python_containers(A, seeds):
    def fn(A, seeds):
        return [A[:, seeds]], {"x": A[:, seeds].row()}, (seeds,)

    out = gs.compile(fn)(A, seeds)
    assert type(out) is tuple and type(out[0]) is list and type(out[1]) is dict
    out[0].append(1)  # a list the caller can extend


# ----------------------------------------------------------------------------- the cache
def graphsage(A, seeds, fanouts=(3, 2), replace=False):
    return sage(A, seeds, fanouts, replace)


def test_static_arguments_retrace_and_same_arguments_hit(A, seeds):
    c = gs.compile(graphsage)
    c(A, seeds)
    c(A, seeds)
    c(A, seeds, fanouts=(3, 2))  # the default, spelled out
    assert c.traces == 1
    c(A, seeds, fanouts=(4, 2))
    assert c.traces == 2
    c(A, seeds, (4, 2))  # positional: same key
    c(A, seeds, fanouts=(3, 2))  # back to the first: cached
    assert c.traces == 2
    c(A, seeds, fanouts=(3, 2, 1))  # one more layer
    c(A, seeds, replace=True)
    assert c.traces == 4
    ks = [n.attrs["k"] for n in c.program(A, seeds, fanouts=(4, 2)).random_nodes()]
    assert ks == [4, 2]


def test_new_static_value_never_reuses_old_constants(A, seeds):
    def scaled(A, seeds, scale):
        return (A[:, seeds] * scale).values

    c = gs.compile(scaled)
    base = A[:, seeds].values
    assert torch.equal(c(A, seeds, 2.0), base * 2.0)
    assert torch.equal(c(A, seeds, 3.0), base * 3.0)
    assert torch.equal(c(A, seeds, 2.0), base * 2.0)
    assert c.traces == 2


def test_equal_but_differently_typed_static_values_do_not_share_a_program(A, seeds):
    def fn(A, seeds, p, shape):
        return (A[:, seeds] ** p).values, shape

    c = gs.compile(fn)
    c(A, seeds, 2, (1,))
    c(A, seeds, 2.0, (1,))  # 2 == 2.0, but a different program
    c(A, seeds, 2.0, [1])  # a list, not a tuple
    assert c.traces == 3
    assert type(c(A, seeds, 2.0, [1])[1]) is list
    assert c.traces == 3


def test_tensor_inside_a_static_argument_is_refused(A, seeds):
    def fn(A, seeds, extra):
        return A[:, seeds]

    with pytest.raises(TypeError, match=r"extra: a tensor or gs\.Matrix inside a static"):
        gs.compile(fn)(A, seeds, (torch.ones(2),))
    with pytest.raises(TypeError, match=r"extra: static arguments .* must be hashable"):
        gs.compile(fn)(A, seeds, [{1, 2}])


def pass_like(A, seeds, W):
    sub = A[:, seeds]
    att = gs.sddmm(sub, W[sub.row_ids], W[seeds], "dot").values.abs() + 1e-3
    return sub.individual_sample(2, probs=att)


def test_tensor_dtype_change_retraces(A, seeds):
    c = gs.compile(pass_like)
    W = torch.randn(300, 4, generator=torch.Generator().manual_seed(4))
    c(A, seeds, W)
    c(A, seeds, W + 1)  # new values, same dtype: cached
    assert c.traces == 1
    gs.manual_seed(2)
    out64 = c(A, seeds, W.double())
    assert c.traces == 2
    gs.manual_seed(2)
    assert_same(pass_like(A, seeds, W.double()), out64)
    c(A, seeds.int(), W)  # int32 seeds
    assert c.traces == 3
    c(A, seeds.int(), W)
    c(A, seeds, W)
    assert c.traces == 3


def test_matrix_kind_values_and_size_are_in_the_key(A, seeds):
    c = gs.compile(graphsage)
    c(A, seeds)
    c(gs.datasets.rmat(300, 3000, seed=3), seeds)  # no edge values
    assert c.traces == 2
    B = gs.Matrix.from_edge_index(torch.stack(A.edges()[:2]), A.num_nodes, weight=A.values.double())
    c(B, seeds)  # float64 values
    assert c.traces == 3
    c(gs.datasets.rmat(400, 3000, seed=3, weighted=True), seeds)  # num_nodes is static
    assert c.traces == 4


def test_device_and_layout_are_in_the_key(A, seeds):
    c = CompiledSampler(pass_like)
    W = torch.randn(300, 4)
    key = c._key(*c._split((A, seeds, W), {}), "torch")
    meta = c._key(*c._split((A, seeds, torch.empty(300, 4, device="meta")), {}), "torch")
    sparse = c._key(*c._split((A, seeds, W.to_sparse()), {}), "torch")
    assert len({key, meta, sparse}) == 3


def test_compile_rejects_a_function_without_a_matrix(seeds):
    with pytest.raises(TypeError, match=r"needs a gs\.Matrix"):
        gs.compile(lambda seeds: seeds)(seeds)
    with pytest.raises(TypeError, match="fn: expected a function"):
        gs.compile(3)


# ----------------------------------------------------------------------------- errors
def branch_on_sum(A, seeds):
    sub = A[:, seeds]
    if sub.sum(axis=0).sum() > 0:  # BRANCH
        return sub.individual_sample(2)
    return sub


def branch_len(A, seeds):
    n = len(seeds)  # LEN
    return A[:, seeds[:n]]


def branch_iter(A, seeds):
    out = []
    for s in seeds:  # ITER
        out.append(s)
    return out


def branch_item(A, seeds):
    k = int(seeds.max())  # ITEM
    return A[:, seeds].individual_sample(k)


@pytest.mark.parametrize(
    "fn, marker",
    [(branch_on_sum, "BRANCH"), (branch_len, "LEN"), (branch_iter, "ITER"), (branch_item, "ITEM")],
)
def test_control_flow_on_a_traced_value_names_the_line_and_the_fix(fn, marker, A, seeds):
    with pytest.raises(TraceError) as err:
        gs.compile(fn)(A, seeds)
    msg = str(err.value)
    assert f"{HERE}:{line_of(marker)}:" in msg
    assert "static" in msg and "torch.where" in msg  # what to do instead
    if fn in (branch_on_sum, branch_len):
        fn(A, seeds)  # eager mode runs it fine


def num_edges_branch(A, seeds):
    sub = A[:, seeds]
    if sub.num_edges > 10:  # NUM_EDGES
        return sub
    return sub.T


def test_data_dependent_matrix_attribute_is_an_error(A, seeds):
    with pytest.raises(TraceError, match="num_edges") as err:
        gs.compile(num_edges_branch)(A, seeds)
    assert f"{HERE}:{line_of('NUM_EDGES')}:" in str(err.value)
    with pytest.raises(TraceError, match="shape"):
        gs.compile(lambda A, seeds: A[:, seeds].individual_sample(A[:, seeds].shape[0]))(A, seeds)


def k_as_tensor(A, seeds, k):
    return A[:, seeds].individual_sample(k)  # K_TENSOR


def test_k_passed_as_a_tensor_is_an_error(A, seeds):
    with pytest.raises(TraceError, match="k: must be a static Python int") as err:
        gs.compile(k_as_tensor)(A, seeds, torch.tensor(3))
    assert f"{HERE}:{line_of('K_TENSOR')}:" in str(err.value)
    assert "pass it as a plain Python argument" in str(err.value)
    out = gs.compile(k_as_tensor)(A, seeds, 3)  # as a Python int it compiles
    assert out.num_edges > 0


def test_other_capture_errors_name_the_line(A, seeds):
    def to_device(A, seeds):
        return A.to("cpu")[:, seeds]

    with pytest.raises(TraceError, match=r"Matrix.to\(\) cannot be compiled"):
        gs.compile(to_device)(A, seeds)

    def bad_index(A, seeds):
        return A[seeds]  # BAD_INDEX

    with pytest.raises(TraceError, match=r"A\[rows, cols\]") as err:
        gs.compile(bad_index)(A, seeds)
    assert f"{HERE}:{line_of('BAD_INDEX')}:" in str(err.value)

    def matrix_to_torch(A, seeds):
        return torch.relu(A[:, seeds])  # TO_TORCH

    with pytest.raises(TraceError, match="use Matrix operators") as err:
        gs.compile(matrix_to_torch)(A, seeds)
    assert f"{HERE}:{line_of('TO_TORCH')}:" in str(err.value)
