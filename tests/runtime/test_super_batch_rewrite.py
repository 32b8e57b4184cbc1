"""The super-batching rewrite (``gsample.passes.super_batch``), structurally.

* the rewritten program verifies; random ops keep their names and op ordinals and are
  marked to draw for N batches; the stream's ordinal count is unchanged;
* ``all_nodes`` (which interleaves batches) is regrouped by batch before its users;
  a column slice of the graph reads decoded columns and is re-encoded;
* dense code runs per batch only when it reads per-batch values (graph-level dense code,
  as FastGCN's normalisation of a degree argument, stays as it is: once);
* a random op on the whole graph (no frontier) stays itself, marked to draw once per batch
  (its per-batch inputs split), with a per-batch result;
* the rewrite reads the op definitions' alignments: without one it refuses, naming it;
* state detection (tensor arguments and captured tensors reaching a random op);
* run directly, the rewritten program returns the N batches' own outputs.
"""

import functools

import pytest
import torch
from helpers import assert_same, dense_ladies, example, random_seeds

import gsample as gs
from gsample.base.random import batch_scope
from gsample.compiler.compiled import execute, wrap
from gsample.ir import Op, format_lines
from gsample.ir import ops as op_table
from gsample.passes import PIPELINE, optimize
from gsample.passes.super_batch import GRAPH, LIST, stateful_inputs, super_batch
from gsample.runtime import block_diagonal as blocks

N_NODES = 1000


@pytest.fixture(scope="module")
def A():
    return gs.datasets.rmat(N_NODES, 8000, seed=2, weighted=True)


def program(fn, A, passes=None, backend="auto", **kwargs):
    return gs.compile(fn, passes=passes, backend=backend).program(A, torch.arange(16), **kwargs)


def rewrite(graph, copies=3, **options):
    sb = super_batch(copies, N_NODES, **options, helpers=blocks.helpers(wrap))
    return optimize(graph, [sb]).verify()


def fn_of(node):
    return node.attrs["fn"] if node.op is Op.DENSE else None


def pass_inputs():
    return example("pass_sampler").random_inputs(N_NODES, 8, 16)


@pytest.mark.parametrize("name", ["graphsage", "ladies", "fastgcn", "shadow", "pass_sampler"])
def test_random_ops_keep_their_ordinals_and_draw_for_every_batch(name, A):
    fn = getattr(example(name), name)
    kwargs = pass_inputs() if name == "pass_sampler" else {}
    before = program(fn, A, **kwargs)
    after = rewrite(before, fixed_state=True)
    assert after.num_random == before.num_random
    assert [(n.name, n.attrs["ordinal"]) for n in after.random_nodes()] == [
        (n.name, n.attrs["ordinal"]) for n in before.random_nodes()
    ]
    assert all(n.attrs["batches"] == (3, N_NODES) for n in after.random_nodes())
    assert not any("batches" in n.attrs for n in before.random_nodes())  # a copy was rewritten
    out = after.output
    assert list(out.inputs) == ["0"] and isinstance(fn_of(out.inputs["0"]), blocks.Assemble)


def test_all_nodes_groups_its_ids_by_batch_for_its_users(A):
    g = rewrite(program(example("graphsage").graphsage, A))
    first = next(n for n in g.nodes if n.op is Op.ALL_NODES)
    second = g.random_nodes()[1]
    assert first.attrs["batches"] == (3, N_NODES)
    assert second.inputs["cols"] is first, "the op itself groups the ids: no helper between"
    assert not any(isinstance(fn_of(n), blocks.PerBatch) for n in g.nodes)  # no dense code


def test_an_induced_subgraph_runs_once_on_the_encoded_ids(A):
    # A[nodes, nodes] (fused by the pipeline): one op for every batch, taking the encoded
    # rows and columns itself; no column slice of the block-diagonal graph
    g = rewrite(program(example("shadow").shadow, A))
    (sub,) = [n for n in g.nodes if n.op is Op.SLICE_ROWS_COLS]
    assert sub.attrs["batches"] == (3, N_NODES)
    assert sub.inputs["rows"] is sub.inputs["cols"]
    assert sub.inputs["rows"].op is Op.ALL_NODES
    assert not any(n.op in (Op.SLICE_COLS, Op.SLICE_ROWS) for n in g.nodes)
    assert not any(fn_of(n) in (blocks.decode_cols, blocks.encode_columns) for n in g.nodes)


def test_a_column_slice_of_the_graph_is_decoded_and_re_encoded(A):
    g = rewrite(program(example("shadow").shadow, A, passes=[]))  # unfused: two slices
    (rows,) = [n for n in g.nodes if n.op is Op.SLICE_ROWS]
    enc = rows.inputs["A"]  # a row slice of the encoded slice: as is
    assert fn_of(enc) is blocks.encode_columns
    sl = enc.inputs["0"]
    assert sl.op is Op.SLICE_COLS
    assert fn_of(sl.inputs["cols"]) is blocks.decode_cols
    assert g.users()[sl] == [enc]


def test_dense_code_runs_per_batch_only_on_per_batch_values(A):
    fastgcn = example("fastgcn").fastgcn
    before = program(fastgcn, A, layers=(20, 20), degree=A.sum(axis=1))
    g = rewrite(before, fixed_state=True)
    dense = [n for n in g.nodes if n.op is Op.DENSE and n.name in {m.name for m in before.nodes}]
    shared = [n for n in dense if n.meta["super_batch"] == GRAPH]
    per_batch = [n for n in dense if n.meta["super_batch"] == LIST]
    # p = degree / degree.sum().clamp(...): graph-level, computed once, its code unchanged
    assert len(shared) == 3 and not any(isinstance(fn_of(n), blocks.PerBatch) for n in shared)
    # p[s.row_ids], once per layer: one gather of the encoded rows (their ids decoded)
    assert not per_batch
    gathers = [n for n in dense if fn_of(n) is blocks.gather]
    assert len(gathers) == 2 and all(n.attrs["template"][1] == {"n": N_NODES} for n in gathers)

    def user_ladies(A, seeds):  # a user's own p / p.sum(): dense code
        return dense_ladies(A, seeds, layers=(20, 20))

    text = format_lines(rewrite(program(user_ladies, A)))
    # p / p.sum().clamp(...): the sums per batch, the clamp and the division once for all
    assert "fn=per_batch(.sum())" in text and "fn=batched(.clamp())" in text
    assert "fn=batched(truediv)" in text and "fn=per_batch(truediv)" not in text
    assert "fn=per_batch(.clamp())" not in text
    # p[s.row_ids] on the encoded p: one gather, nothing split before the output
    assert text.count("fn=gather") == 2 and "per_batch(getitem)" not in text
    assert text.count("fn=bounds") == 2  # the two blocks' bounds, for the output
    # the catalogue's p / (sub ** 2).sum().clamp(...) (dense, as the CUDA backend runs it):
    # the slice's sums once for all batches (an (N,) tensor unbound into the batches'
    # scalars), the clamp once too, and the division in the row sums (scaled_row_sums: each
    # batch's clamped total stacked into their scale), once for all batches
    ladies = example("ladies").ladies
    text = format_lines(rewrite(program(ladies, A, layers=(20, 20), backend="cuda")))
    assert text.count("slice_total(") == 2 and text.count("fn=unbind") == 2
    assert "per_batch(" not in text.replace("per_batch=", "")
    assert "fn=batched(.clamp())" in text and "truediv" not in text
    assert text.count("fn=stack") == 2 and text.count(", scale=%") == 2
    assert text.count("fn=gather") == 2 and text.count("fn=bounds") == 2
    # listed (the torch backend): each batch's scale stacked into the listed sample
    text = format_lines(rewrite(program(ladies, A, layers=(20, 20), backend="torch")))
    assert text.count("listed_collective_sample(") == 2 and text.count("fn=stack") == 2


def test_a_captured_tensor_at_the_seeds_is_one_gather(A):
    """``t[seeds]`` with ``t`` a tensor the sampler captures (a node time: torch.fx records
    the method ``__getitem__`` of a constant, which the tracer makes the ``getitem`` a proxy
    gives) is one gather for every batch, not a per-batch step; the super-batched samples
    equal one at a time."""
    node_time = torch.arange(N_NODES).flip(0) * 3
    edge_time = torch.arange(A.num_edges) % (3 * N_NODES)

    def timed(A, seeds):
        return A.temporal_sample(seeds, 3, time=node_time[seeds], edge_time=edge_time)

    text = format_lines(rewrite(program(timed, A), fixed_state=True))
    assert "fn=gather" in text and "per_batch(" not in text
    loader = functools.partial(gs.DataLoader, A, gs.compile(timed), torch.arange(64), 16, seed=3)
    one = [b.out.csc for b in loader()]
    sup = [b.out.csc for b in loader(super_batch=4, fixed_state=True)]
    for x, y in zip(one, sup, strict=True):
        assert torch.equal(x.indptr, y.indptr) and torch.equal(x.global_rows(), y.global_rows())


def test_the_rewrite_reads_the_op_table(A, monkeypatch):
    import dataclasses

    # for the CUDA backend: the dense probabilities (the torch backend lists them)
    ladies = program(example("ladies").ladies, A, layers=(20, 20), backend="cuda")
    unfused = program(example("ladies").ladies, A, layers=(20, 20), passes=[])
    d = op_table.OPS[Op.EDGE_BROADCAST]
    unaligned = tuple(dataclasses.replace(i, align=None) for i in d.inputs)
    monkeypatch.setitem(op_table.OPS, Op.EDGE_BROADCAST, dataclasses.replace(d, inputs=unaligned))
    with pytest.raises(
        ValueError, match=r"super_batch: .*input 'vector' of edge_broadcast.*ir\.ops"
    ):
        rewrite(unfused)
    monkeypatch.undo()
    for op in (Op.REDUCE, Op.SLICE_REDUCE):  # its result: how to cut it?
        monkeypatch.undo()
        monkeypatch.setitem(op_table.OPS, op, dataclasses.replace(op_table.OPS[op], out=None))
        with pytest.raises(ValueError, match=f"super_batch: .*result of {op.value}.*ir.ops"):
            rewrite(ladies if op is Op.SLICE_REDUCE else unfused)


BIAS = torch.rand(N_NODES) + 0.1


def captured_bias(A, seeds):
    return A[:, seeds].collective_sample(5, node_probs=BIAS)  # a tensor built in


def features_only(A, seeds, X):
    s = A[:, seeds].individual_sample(3)
    return s, X[s.row()]


def test_state_is_what_reaches_a_random_op(A):
    pas = program(example("pass_sampler").pass_sampler, A, **pass_inputs())
    assert stateful_inputs(pas) == ["X", "W1", "W2", "W3"]
    assert stateful_inputs(program(example("graphsage").graphsage, A)) == []
    assert stateful_inputs(program(features_only, A, X=torch.rand(N_NODES, 2))) == []
    (const,) = stateful_inputs(program(captured_bias, A))
    assert const.startswith("a tensor constant")
    with pytest.raises(ValueError, match=r"super_batch: .*a tensor constant.*fixed_state=True"):
        rewrite(program(captured_bias, A))
    rewrite(program(captured_bias, A), fixed_state=True)


def test_bad_parameters(A):
    with pytest.raises(ValueError, match="super_batch: must be >= 1"):
        super_batch(0, N_NODES)
    with pytest.raises(TypeError, match="super_batch: must be an int"):
        super_batch(2.0, N_NODES)
    with pytest.raises(ValueError, match="super_batch: the program has no input 'frontier'"):
        rewrite(program(example("graphsage").graphsage, A), seeds="frontier")
    assert all(getattr(p[0], "__name__", "") != "super_batch" for p in PIPELINE)


@pytest.mark.parametrize("copies", [1, 2, 3])
def test_the_rewritten_program_returns_each_batch_s_output(A, copies):
    fn = gs.compile(example("ladies").ladies)
    L = example("ladies").normalize(A)
    parts = [random_seeds(10 + 7 * b, b, N_NODES) for b in range(copies)]
    g = rewrite(gs.compile(functools.partial(fn.fn, layers=(30, 30))).program(L, parts[0]), copies)
    with batch_scope(11, 4):
        outs = execute(
            g, {"A": L, "seeds": torch.cat([p + b * N_NODES for b, p in enumerate(parts)])}
        )
    assert isinstance(outs, list) and len(outs) == copies
    for b, p in enumerate(parts):
        with batch_scope(11, 4 + b):  # mini-batch 4 + b, on its own
            assert_same(outs[b], fn(L, p, layers=(30, 30)), f"batch {b}")


def whole_graph(A, seeds):
    p = A[:, seeds].sum(axis=1)  # encoded: split for the draw
    drawn = A.T.collective_sample(5, replace=True)  # graph-level inputs only
    return A.collective_sample(4, node_probs=p, replace=True), drawn.row()


@pytest.mark.parametrize("passes", [None, []], ids=["optimised", "as-traced"])
def test_a_random_op_on_the_whole_graph_draws_once_per_batch(A, passes):
    """No frontier to key the batches by: the op stays itself (op, ordinal), marked to run
    once per batch (``per_batch``: its per-batch inputs, split; graph-level ones shared),
    and its result is per batch; the lowering runs ``blocks.PerBatchDraw`` with the op's
    ``BatchKeys``, a sparse reader joins the N matrices."""
    before = program(whole_graph, A, passes=passes)
    g = rewrite(before)
    assert [(n.op, n.attrs["ordinal"]) for n in g.random_nodes()] == [
        (n.op, n.attrs["ordinal"]) for n in before.random_nodes()
    ]
    draw_t, draw_a = sorted(g.random_nodes(), key=lambda n: n.attrs["ordinal"])
    assert draw_t.attrs["per_batch"] == frozenset() and draw_a.attrs["per_batch"] == {"node_probs"}
    assert all(
        n.attrs["batches"] == (3, N_NODES) and n.meta["super_batch"] == LIST
        for n in (draw_t, draw_a)
    )
    split = draw_a.inputs["node_probs"]
    # the fused slice's sums are n per batch; unfused, the rows of the encoded slice
    assert fn_of(split) is blocks.split
    assert split.attrs["template"][1]["spec"] == ("nodes" if passes is None else "rows")
    (row,) = [n for n in g.nodes if n.op is Op.ROW]
    assert fn_of(row.inputs["A"]) is blocks.join_matrices
    from gsample.runtime import lower

    text = lower(g, "torch").format()
    assert text.count("per batch: torch.collective_sample[csc]") == 2
    assert "op key of ordinal 0 for 3 mini-batches" in text
