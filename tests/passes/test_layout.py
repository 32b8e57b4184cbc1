"""The layout-selection pass (``gsample.passes.layout``) and its cost model.

Structure: conversions appear exactly where the cost table makes them pay (one per value
and layout, graph-level ones cached once per graph), none when all-CSC is cheapest; the
output and dense code always get CSC; the IR verifies; ``gs.explain`` shows the plan.
Samples: every example gives its eager samples with the pass on (built-in table, and a
table that favours every other layout) and with each forced layout. Cost model: size
estimates follow the documented rules; tables come from the cache per device and size
bucket, or the built-in default; calibration times, fits and caches on a tiny size.
"""

import json

import numpy as np
import pytest
import torch
from helpers import check_compiled_equals_eager, example, ladies_layer, programs, random_seeds

import gsample as gs
from gsample import __main__ as cli
from gsample.cost import table as cost
from gsample.cost.calibrate import calibrate, fit, layout_ops
from gsample.formats.layouts import NAMES
from gsample.ir import Kind, Op
from gsample.passes import PIPELINE, cost_model, pipeline
from gsample.passes.fuse_extract_reduce import fuse_extract_reduce
from gsample.passes.layout import select_layouts

FORCED = ("csr", "csr-compact", "coo")


@pytest.fixture(autouse=True)
def _default_table(monkeypatch, tmp_path):
    """Deterministic plans: the built-in table, and an empty private cache."""
    monkeypatch.setenv("GSAMPLE_CALIBRATION", "default")
    monkeypatch.setenv("GSAMPLE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GSAMPLE_DEBUG", "1")  # verify the IR after every pass


@pytest.fixture(scope="module")
def A():
    return gs.datasets.rmat(2000, 30000, seed=1, weighted=True)


def use_table(monkeypatch, coefficients):
    table = cost.CostTable(coefficients, "test table")
    monkeypatch.setattr(cost, "table_for", lambda device, num_nodes, backend: table)


def unfused(entries=PIPELINE):
    """A pipeline without extract-reduce fusion: per-row reductions of materialised slices,
    the values whose layout these tests watch the pass choose."""
    return [e for e in entries if e[0] is not fuse_extract_reduce]


#: per-row work on CSC is dear, a compact CSR and the conversion to it are cheap
FAVOUR_COMPACT = {
    "reduce/csc/axis1": (0, 0, 1.0, 0),
    "reduce/csr-compact/axis1": (0, 0.01, 0, 0),
    "to_layout/csc->csr-compact": (0, 0.1, 0, 0),
}


def conversions(graph):
    return [n for n in graph.nodes if n.op is Op.TO_LAYOUT]


# ----------------------------------------------------------------------------- structure
def test_conversion_goes_where_the_table_makes_it_pay(A, monkeypatch):
    use_table(monkeypatch, FAVOUR_COMPACT)
    lad = example("ladies")
    _, g = programs(
        lad.ladies, lad.normalize(A), random_seeds(), layers=(100, 100), passes=unfused()
    )
    convs = conversions(g)
    assert [c.attrs["layout"] for c in convs] == ["csr-compact", "csr-compact"]
    for c in convs:  # each feeds exactly the per-row reduction of a slice
        assert c.inputs["A"].op is Op.SLICE_COLS
        readers = [n for n in g.nodes if c in n.inputs.values()]
        assert [(r.op, r.attrs["axis"]) for r in readers] == [(Op.REDUCE, 1)]
        assert readers[0].meta["reads"] == "csr-compact"
    plan = g.output.meta["layout_plan"]
    assert plan["cost_us"] < plan["csc_cost_us"] and plan["conversions"] == 2
    for n in g.nodes:  # sampling still reads CSC
        if n.is_random:
            assert n.inputs["A"].meta["layout"] == "csc"


def test_no_conversion_when_all_csc_is_cheapest(A, monkeypatch):
    use_table(monkeypatch, {**FAVOUR_COMPACT, "reduce/csr-compact/axis1": (0, 0, 2.0, 0)})
    _, g = programs(ladies_layer, A, random_seeds())
    assert not conversions(g)
    assert all(n.meta.get("reads", "csc") == "csc" for n in g.nodes)
    plan = g.output.meta["layout_plan"]
    assert plan["cost_us"] == plan["csc_cost_us"] and plan["conversions"] == 0


def test_an_op_the_table_does_not_price_on_a_layout_stays_csc(A, monkeypatch):
    # the compact reduce is unpriced here: it must not look free
    use_table(
        monkeypatch,
        {"reduce/csc/axis1": (0, 0, 1.0, 0), "to_layout/csc->csr-compact": (0, 0, 0, 0)},
    )
    _, g = programs(ladies_layer, A, random_seeds())
    assert not conversions(g)


def test_built_in_table_leaves_graphsage_all_csc(A):
    _, g = programs(example("graphsage").graphsage, A, random_seeds())
    assert not conversions(g) and not [n for n in g.nodes if n.op is Op.CACHED]


def test_one_conversion_per_value_and_layout(A, monkeypatch):
    use_table(
        monkeypatch,
        {
            **FAVOUR_COMPACT,
            "reduce/csc/axis0": (0, 0, 0, 1.0),
            "reduce/csr-compact/axis0": (0, 0, 0, 0),
        },
    )

    def two_reductions(A, seeds):
        sub = A[:, seeds]
        return sub.sum(axis=1), sub.max(axis=1), sub.sum(axis=0)

    _, g = programs(two_reductions, A, random_seeds(), passes=[select_layouts])
    (conv,) = conversions(g)
    assert sorted(n.attrs["axis"] for n in g.nodes if conv in n.inputs.values()) == [0, 1, 1]


def test_outputs_and_dense_code_get_csc(A):
    def block(A, seeds):
        s = A[:, seeds].individual_sample(5)
        return s.div(s.sum(axis=0), axis=0), torch.stack([s.column(), s.column()])

    _, g = programs(block, A, random_seeds(), passes=[pipeline("coo")[-2]])
    for n in g.nodes:
        if n.op in (Op.OUTPUT, Op.DENSE):
            assert all(
                v.meta.get("layout", "csc") == "csc"
                for v in n.inputs.values()
                if v.kind is Kind.MATRIX
            )
    assert conversions(g)[-1].attrs["layout"] == "csc"
    check_compiled_equals_eager(block, A, random_seeds(), passes=pipeline("coo"))


def test_graph_level_conversion_is_cached_once_per_graph(A, monkeypatch):
    use_table(
        monkeypatch,
        {
            "slice_rows/csc": (0, 1.0, 0, 0),
            "slice_rows/csr": (0, 0, 0, 0),
            "to_layout/csc->csr": (0, 1.0, 0, 0),
        },
    )

    def rows_of(A, rows):
        return A[rows, :]

    rows = random_seeds(50)
    _, g = programs(rows_of, A, rows, passes=[select_layouts])
    (cached,) = [n for n in g.nodes if n.op is Op.CACHED]
    assert cached.inputs["graph"].op is Op.INPUT and cached.meta["layout"] == "csr"
    assert [n.attrs["layout"] for n in cached.attrs["program"].nodes if n.op is Op.TO_LAYOUT] == [
        "csr"
    ]
    sampler = check_compiled_equals_eager(rows_of, A, rows, passes=[select_layouts])
    assert sampler(A, random_seeds(30, seed=5)).shape == (30, A.num_nodes)


def test_forced_layout_reads_it_wherever_accepted(A):
    lad = example("ladies")
    for force in FORCED:
        _, g = programs(
            lad.ladies,
            lad.normalize(A),
            random_seeds(),
            layers=(100, 100),
            passes=unfused(pipeline(force)),
        )
        for n in g.nodes:
            if "reads" in n.meta:
                want = "csc" if n.is_random or n.op is Op.SLICE_COLS else force
                assert n.meta["reads"] in (want, "csc") and (
                    n.meta["reads"] == want or force == "coo"
                )
        assert g.output.meta["layout_plan"]["forced"] == force


def test_pass_runs_once_and_names_a_bad_force(A):
    _, g = programs(ladies_layer, A, random_seeds(), passes=pipeline("csr"))
    before = [(n.name, n.op) for n in g.nodes]
    again = select_layouts(g)
    assert not again.changed
    assert [(n.name, n.op) for n in again.graph.nodes] == before
    with pytest.raises(ValueError, match="force"):
        select_layouts(g, force="dense")


def test_pipeline_lists_the_pass_once_before_dce():
    names = [fn.__name__ for fn, _ in PIPELINE]
    assert names.count("select_layouts") == 1
    assert names.index("select_layouts") == names.index("dce") - 1
    assert names.index("select_layouts") > names.index("fuse_extract_select")


def test_explain_shows_the_plan(A, monkeypatch):
    use_table(monkeypatch, FAVOUR_COMPACT)
    text = gs.explain(ladies_layer, A, random_seeds(), passes=unfused(), file=False)
    assert "csr-compact" in text[text.index("== layouts") : text.index("== layout plan")]
    layouts = text[text.index("== layout plan") : text.index("== programs")]
    assert "plan: 1 conversion(s)" in layouts
    assert "all-CSC" in layouts and "cost table: test table" in layouts
    assert "reads csr-compact" in layouts and "convert %slice_cols" in layouts


# ----------------------------------------------------------------------------- samples
def example_workloads(A):
    N = A.num_nodes
    lad, fast, pas = example("ladies"), example("fastgcn"), example("pass_sampler")
    return {
        "graphsage": (example("graphsage").graphsage, A, {}),
        "ladies": (lad.ladies, lad.normalize(A), {"layers": (200, 200)}),
        "fastgcn": (fast.fastgcn, A, {"layers": (200, 200)}),
        "shadow": (example("shadow").shadow, A, {}),
        "pass_sampler": (pas.pass_sampler, A, pas.random_inputs(N, num_features=8, hidden=16)),
    }


#: every layout priced far below CSC: the pass converts wherever an op accepts another layout
FAVOUR_ALL = {
    cost.op_key(op.value, lay, axis): (0, 0, 0, 0) if lay != "csc" else (1e3, 1, 1, 1)
    for op in layout_ops()
    for lay in NAMES
    for axis in (None, 0, 1)
}
FAVOUR_ALL.update({cost.conversion_key(s, d): (1, 0, 0, 0) for s in NAMES for d in NAMES})


@pytest.mark.parametrize("plan", ["selected", "favour-all", *FORCED])
@pytest.mark.parametrize("name", ["graphsage", "ladies", "fastgcn", "shadow", "pass_sampler"])
def test_examples_compiled_equal_eager_whatever_the_layouts(A, name, plan, monkeypatch):
    fn, G, kwargs = example_workloads(A)[name]
    if plan == "favour-all":
        use_table(monkeypatch, FAVOUR_ALL)
    passes = pipeline(plan) if plan in FORCED else None
    sampler = check_compiled_equals_eager(fn, G, random_seeds(64, 3), passes=passes, **kwargs)
    g = sampler.program(G, random_seeds(64, 3), **kwargs)
    if plan != "selected" and name in ("ladies", "fastgcn", "pass_sampler"):
        assert conversions(g), "the plan must really use other layouts"


# ----------------------------------------------------------------------------- cost model
def test_size_estimates_follow_the_rules(A):
    g = gs.compile(ladies_layer, passes=[]).program(A, random_seeds(64))
    sizes = cost_model.estimate(g)
    by_op = {n.op: sizes[n] for n in g.nodes if n.op in (Op.SLICE_COLS, Op.COLLECTIVE_SAMPLE)}
    sl = by_op[Op.SLICE_COLS]
    assert (sl.cols, sl.rows) == (64, 2000) and sl.nnz == pytest.approx(64 * 30000 / 2000)
    cs = by_op[Op.COLLECTIVE_SAMPLE]
    assert cs.rows == pytest.approx(min(100, sl.nonempty_rows))
    assert cs.nnz == pytest.approx(sl.nnz * cs.rows / sl.nonempty_rows)
    assert sl.nonempty_rows == pytest.approx(2000 * (1 - torch.exp(torch.tensor(-0.48)).item()))


def test_tensor_results_take_the_length_the_op_table_aligns_them_with(A):
    """SpMM gives one row per matrix row (after a collective sample: R' = k, fewer than the
    frontier's columns), reduce one per column or row by axis, edges one per edge."""

    def layer(A, seeds, X):
        s = A[:, seeds].collective_sample(20)
        return s @ X[s.column()], s.sum(axis=0), s.sum(axis=1), s.edges()[0], s.all_nodes()

    g = gs.compile(layer, passes=[]).program(A, random_seeds(64), torch.randn(2000, 4))
    sizes = cost_model.estimate(g)
    s = next(sizes[n] for n in g.nodes if n.op is Op.COLLECTIVE_SAMPLE)
    assert (s.rows, s.cols) == (20, 64)
    got = {
        (n.op, n.attrs.get("axis")): sizes[n].rows
        for n in g.nodes
        if n.op in (Op.SPMM, Op.REDUCE, Op.EDGES, Op.ALL_NODES)
    }
    assert got == {
        (Op.SPMM, None): 20,
        (Op.REDUCE, 0): 64,
        (Op.REDUCE, 1): 20,
        (Op.EDGES, None): pytest.approx(s.nnz),
        (Op.ALL_NODES, None): pytest.approx(64 + s.nonempty_rows),
    }


def test_table_for_reads_the_cache_by_device_and_bucket(monkeypatch, tmp_path):
    assert cost.table_for("cpu", 1000) is cost.DEFAULT
    monkeypatch.setenv("GSAMPLE_CALIBRATION", "auto")
    assert cost.table_for("cpu", 1000) is cost.DEFAULT  # nothing cached yet
    name = cost.device_name("cpu")
    for b, a in ((5, 1.0), (9, 2.0)):
        cost.save(
            {
                "device": name,
                "bucket": b,
                "num_nodes": 4**b,
                "coefficients": {"reduce/csc/axis1": [a, 0, 0, 0]},
            }
        )
    cost.save({"device": "another GPU", "bucket": 7, "coefficients": {"x": [9, 9, 9, 9]}})
    cost.save({"device": name, "backend": "cuda", "bucket": 5, "coefficients": {}})
    assert cost.table_for("cpu", 4**5, "cuda").coefficients == {}  # per backend
    assert cost.table_for("cpu", 4**5).cost("reduce/csc/axis1", 0, 0, 0) == 1.0
    assert cost.table_for("cpu", 4**10).cost("reduce/csc/axis1", 0, 0, 0) == 2.0  # nearest
    assert "calibrated on" in cost.table_for("cpu", 300_000).source
    stored = json.loads(cost.cache_path().read_text())["tables"]
    assert len(stored) == 4 and cost.cache_path().parent == tmp_path / "cache"
    monkeypatch.setenv("GSAMPLE_CALIBRATION", "sometimes")
    with pytest.raises(ValueError, match="GSAMPLE_CALIBRATION"):
        cost.table_for("cpu", 1000)


def test_default_table_prices_every_layout_op_and_conversion():
    keys = set(cost.DEFAULT.coefficients)
    for op in layout_ops():
        assert any(k.startswith(op.value + "/") for k in keys), op
    assert {cost.conversion_key(s, d) for s in NAMES for d in NAMES if s != d} <= keys
    assert all(min(c) >= 0 for c in cost.DEFAULT.coefficients.values())


def test_fit_recovers_known_costs():
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 10**6, size=(12, 3)).astype(float)
    truth = np.array([5.0, 0.02, 0.0, 0.3])
    times = truth[0] + sizes @ truth[1:]
    assert np.allclose(fit(sizes, times), truth, rtol=1e-6, atol=1e-9)
    assert min(fit(sizes, 10.0 - sizes[:, 0] * 1e-6)) >= 0  # never negative


def test_calibration_times_fits_and_caches(monkeypatch):
    monkeypatch.setenv("GSAMPLE_CALIBRATION", "auto")
    keys = ["reduce/csc/axis1", "reduce/csr-compact/axis1", "to_layout/csc->csr-compact"]
    entry = calibrate("cpu", num_nodes=256, repeats=1, keys=keys, progress=False)
    assert sorted(entry["coefficients"]) == sorted(keys)
    assert len(entry["samples"]) == 16 and entry["bucket"] == cost.bucket(256) == 4
    table = cost.table_for("cpu", 256)
    assert table.source.startswith("calibrated on") and set(table.coefficients) == set(keys)
    assert all(min(c) >= 0 for c in table.coefficients.values())


def test_calibrate_command_line(monkeypatch, capsys):
    calls = []

    def fake(device, n, repeats, degree, backend):
        calls.append((device, n, repeats, degree, backend))
        return {"device": "dev", "bucket": cost.bucket(n), "coefficients": {}, "path": "p"}

    monkeypatch.setattr(cli, "calibrate", fake)  # the name the command line calls
    assert cli.main(["calibrate", "--num-nodes", "1000", "5000", "--repeats", "2"]) == 0
    assert calls == [("cpu", 1000, 2, 8, "torch"), ("cpu", 5000, 2, 8, "torch")]
    assert "bucket 5" in capsys.readouterr().out
