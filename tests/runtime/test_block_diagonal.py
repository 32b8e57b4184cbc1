"""gsample/backend/torch/blocks.py: the helpers a super-batched program joins, tiles and
splits its values with (exercised end to end by tests/test_super_batch.py)."""

import pytest
import torch

import gsample as gs
from gsample.backend.torch import extract, select
from gsample.formats.layouts import convert
from gsample.passes.super_batch import exact_elementwise, full_reduction
from gsample.runtime import block_diagonal as blocks


def test_tile_encodes_one_copy_of_graph_level_ids_per_batch():
    ids = torch.tensor([3, 1, 9], dtype=torch.int64)
    got = blocks.tile(ids, 10, 3, True, "rows")
    assert torch.equal(got, torch.tensor([3, 1, 9, 13, 11, 19, 23, 21, 29]))
    assert got.dtype == ids.dtype
    w = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert torch.equal(blocks.tile(w, 10, 2, False, "w"), torch.cat([w, w]))
    assert blocks.tile(2.5, 10, 4, False, "s") == 2.5
    with pytest.raises(IndexError, match="rows: node id 10 is out of range"):
        blocks.tile(torch.tensor([10]), 10, 3, True, "rows")  # not a node of the graph


@pytest.mark.parametrize("layout", ["csr", "csr-compact", "coo"])
def test_bounds_of_every_layout_are_those_of_its_csc(layout):
    """Per batch: where its columns, rows and edges start, whatever the layout (CSR and COO
    count each batch's edges, CSC reads its column pointer)."""
    n = 200
    A = gs.datasets.rmat(n, 3000, seed=5).csc
    parts = [
        select.collective_sample(
            extract.slice_cols(A, torch.arange(b, 60 + 7 * b, 3)), 15 + 5 * b, False, 100 + b
        )
        for b in range(4)
    ]
    M = blocks.join_matrices(parts, n)
    want = blocks.bounds(M, n, 4)
    assert want.edges == [sum(p.nnz for p in parts[:b]) for b in range(5)]
    assert want.cols == [sum(p.num_cols for p in parts[:b]) for b in range(5)]
    got = blocks.bounds(convert(M, layout), n, 4)
    assert (got.cols, got.rows, got.edges) == (want.cols, want.rows, want.edges)


def test_a_batch_part_is_a_view_only_where_it_starts_as_a_fresh_tensor_would():
    """``split``: a batch's part of an encoded vector is a view where it starts 512-byte
    aligned (as a fresh allocation), else a copy (reductions vectorise by alignment)."""

    def aligned_vector(size):  # a vector starting 512-byte aligned
        base = torch.arange(size + 128, dtype=torch.float32)
        skip = (-base.data_ptr() % 512) // 4
        return base[skip : skip + size]

    aligned = aligned_vector(4 * 128)  # n = 128: 512 bytes
    parts = blocks.split(aligned, spec="nodes", n=128, copies=4)
    assert all(p.data_ptr() == aligned.data_ptr() + b * 512 for b, p in enumerate(parts))
    assert all(p.shape == (128,) and p.stride() == (1,) for p in parts)
    wide = aligned_vector(4 * 128 * 3).view(4 * 128, 3)  # rows of 3 values
    parts = blocks.split(wide, spec="nodes", n=128, copies=4)
    assert all(
        p.data_ptr() == wide.data_ptr() + b * 1536
        and p.shape == (128, 3)
        and p.stride() == (3, 1)
        and torch.equal(p, wide[b * 128 : (b + 1) * 128])
        for b, p in enumerate(parts)
    )
    odd = aligned_vector(4 * 100)  # n = 100: 400 bytes
    parts = blocks.split(odd, spec="nodes", n=100, copies=4)
    assert parts[0].data_ptr() == odd.data_ptr()  # starts aligned: a view
    assert all(
        p.untyped_storage().data_ptr() != odd.untyped_storage().data_ptr() for p in parts[1:]
    )  # the others: copies
    for b, p in enumerate(parts):
        assert torch.equal(p, odd[b * 100 : (b + 1) * 100]) and p.is_contiguous()


def _elementwise(fn, template, nodes, scalars, n=37, copies=5):
    return blocks.Elementwise(fn, template, frozenset(nodes), frozenset(scalars), copies, n)


@pytest.mark.parametrize("case", ["div", "clamp", "where", "compare", "graph-scalar"])
def test_elementwise_code_runs_once_with_each_batchs_bits(case, monkeypatch):
    """One call over the (N, n) view equals the code run batch by batch, bit for bit, and
    it is one call (the per-batch path is not taken)."""
    import operator

    from gsample.ir.graph import Ref

    N, n = 5, 37
    g = torch.Generator().manual_seed(3)
    p = torch.rand(N * n, generator=g, dtype=torch.float64) * 1e-3
    sums = [p[b * n : (b + 1) * n].sum() for b in range(N)]
    fn, template, inputs = {
        "div": (operator.truediv, ((Ref("p"), Ref("s")), {}), {"p": p, "s": sums}),
        "clamp": (("method", "clamp"), ((Ref("p"),), {"min": Ref("s")}), {"p": p, "s": sums}),
        "where": (
            torch.where,
            ((Ref("c"), Ref("p"), Ref("s")), {}),
            {"c": p > 5e-4, "p": p, "s": sums},
        ),
        "compare": (operator.gt, ((Ref("p"), Ref("s")), {}), {"p": p, "s": [s / n for s in sums]}),
        "graph-scalar": (operator.mul, ((Ref("p"), Ref("k")), {}), {"p": p, "k": 3.0}),
    }[case]
    nodes = {
        k
        for k, v in inputs.items()
        if isinstance(v, torch.Tensor) and v.dim() == 1 and v.dtype == p.dtype
    }
    scalars = {k for k, v in inputs.items() if isinstance(v, list)}
    if case == "where":
        nodes, inputs["c"] = nodes | {"c"}, inputs["c"]
    e = _elementwise(fn, template, nodes, scalars, n, N)
    want = torch.cat([e._batch(inputs, b) for b in range(N)])
    batched = e._batched(inputs)
    if case == "where":  # a bool condition with float values: dtypes differ, per batch
        assert batched is None
    else:
        assert batched is not None and batched.dtype == want.dtype
        assert torch.equal(batched, want)
    assert torch.equal(e(**inputs), want)


def test_elementwise_code_falls_back_per_batch_where_a_stack_would_promote_otherwise():
    """float32 rows over a float64 0-dim sum: a mini-batch computes in float32 (a 0-dim
    tensor does not promote a dimensioned one), a (N, 1) stack would promote to float64;
    the code then runs batch by batch, and the results are the mini-batches' own."""
    import operator

    from gsample.ir.graph import Ref

    N, n = 3, 11
    p = torch.rand(N * n, dtype=torch.float32)
    sums = [p[b * n : (b + 1) * n].double().sum() for b in range(N)]
    e = _elementwise(operator.truediv, ((Ref("p"), Ref("s")), {}), {"p"}, {"s"}, n, N)
    assert e._batched({"p": p, "s": sums}) is None
    got = e(p=p, s=sums)
    assert got.dtype == torch.float32
    assert torch.equal(got, torch.cat([p[b * n : (b + 1) * n] / sums[b] for b in range(N)]))


@pytest.mark.parametrize("case", ["clamp", "sum of two", "mixed dtypes", "tensor constant"])
def test_scalar_code_runs_once_with_each_batch_s_bits(case):
    """Exact elementwise code on per-batch 0-dim tensors (p.sum().clamp(min=...)) runs once
    over their stack where that promotes as 0-dim tensors do, else batch by batch: each
    batch gets its own value, dtype and shape either way."""
    import operator

    from gsample.ir.graph import Ref

    N = 4
    g = torch.Generator().manual_seed(3)
    s = [torch.rand((), generator=g) * 1e-29 for _ in range(N)]
    t = [
        torch.rand(
            (), generator=g, dtype=torch.float64 if case == "mixed dtypes" else torch.float32
        )
        for _ in range(N)
    ]
    if case in ("clamp", "tensor constant"):
        fn, template = ("method", "clamp"), ((Ref("s"),), {"min": 1e-30})
        per, inputs = {"s"}, {"s": s}
        if case == "tensor constant":  # a float64 0-dim constant: promotes per batch
            fn, template = operator.mul, ((Ref("s"), Ref("c")), {})
            inputs["c"] = torch.tensor(3.0, dtype=torch.float64)
    else:
        fn, template = operator.add, ((Ref("s"), Ref("t")), {})
        per, inputs = {"s", "t"}, {"s": s, "t": t}
    got = blocks.Scalars(fn, template, frozenset(per), N)(**inputs)
    own = blocks.PerBatch(fn, template, frozenset(per), N)(**inputs)
    assert len(got) == N
    for a, b in zip(got, own):
        assert a.dim() == 0 and a.dtype == b.dtype and torch.equal(a, b)


def test_exact_elementwise_table():
    import operator

    from gsample.ir.graph import Ref

    assert exact_elementwise(operator.truediv, ((Ref("a"), Ref("b")), {}))
    assert exact_elementwise(("method", "clamp"), ((Ref("a"),), {"min": 0.0}))
    # a + alpha * b is fused on a CPU's vector path only; exp rounds apart there
    assert not exact_elementwise(torch.add, ((Ref("a"), Ref("b")), {"alpha": 2}))
    assert not exact_elementwise(torch.exp, ((Ref("a"),), {}))
    assert not exact_elementwise(("method", "exp"), ((Ref("a"),), {}))
    assert full_reduction(("method", "sum"), ((Ref("a"),), {}))
    assert not full_reduction(("method", "sum"), ((Ref("a"), 0), {}))


@pytest.mark.parametrize("shared", [False, True])
def test_a_gather_at_encoded_ids_is_each_batch_s_own(shared):
    """``x[s.row_ids]`` once for all batches (a value over the graph's nodes, encoded or
    shared, at encoded ids) is the batches' own gathers, in batch order, value for value
    (rows of a 2-D value too)."""
    n, N = 50, 3
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n if shared else N * n, 2, generator=g)
    ids = [torch.sort(torch.randperm(n, generator=g)[: 7 + b]).values for b in range(N)]
    enc = torch.cat([v + b * n for b, v in enumerate(ids)])
    own = torch.cat([(x if shared else x[b * n : (b + 1) * n])[v] for b, v in enumerate(ids)])
    got = blocks.gather(x, enc, n if shared else None)
    assert got.dtype == x.dtype and torch.equal(got, own)


def test_the_helpers_say_which_of_them_read_back():
    """The lowering's ``Instruction.syncs`` of the super-batch helpers (a scheduling hint): bounds
    read back; a split does where its parts are found on the host (by ids, walks or entries),
    not for matrices and node-aligned values."""
    from gsample.runtime.lower import _reads_back

    assert _reads_back(blocks.bounds, ((), {"n": 5, "copies": 2}))
    for spec, reads in (
        ("matrix", False),
        ("nodes", False),
        ("rows", False),
        ("edges ids", False),
        ("ids", True),
        ("walks", True),
        ("entries", True),
        (("matrix", "nodes"), False),
        (("matrix", "ids"), True),
    ):
        assert _reads_back(blocks.split, ((), {"spec": spec, "n": 5, "copies": 2})) == reads, spec
    assert not _reads_back(blocks.Assemble(None, frozenset(), 2), ((), {}))
    assert not _reads_back(torch.add, ((), {}))
