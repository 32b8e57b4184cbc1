"""The native CPU ``all_nodes`` (``gsample/backend/torch/relabel_native.py``) against the torch
code (``GSAMPLE_NATIVE_CPU=0``), bit for bit: GraphSAGE blocks of an R-MAT graph (repeated
columns, columns without edges), empty blocks, sub-matrices with row and column ids (permuted,
repeated), COO and compact CSR forms, super-batches (``batches=(N, n)``) in and out of batch
order, a sparse row space far larger than the rows used, one thread and two; the inputs it
must leave to the torch code (ids and rows out of range, int32 ids, a CSR storing every
row); the bitmaps left clear after a declined call; a compiled GraphSAGE sampler; a forked
child."""

import os
from dataclasses import replace as dc_replace

import pytest
import torch
from helpers import in_forked_child

import gsample as gs
from gsample.backend.torch import batched, extract, finalize, layout_ops, relabel_native, select
from gsample.base.random import op_key
from gsample.formats.csc import CSC
from gsample.formats.layouts import convert

pytestmark = pytest.mark.skipif(
    not relabel_native.available(), reason="no native CPU all_nodes (no C++ compiler, disabled)"
)

KEY = op_key(2, 7, 1)


@pytest.fixture(scope="module")
def graph():
    """An R-MAT graph of 4000 nodes (hubs, many nodes without in-edges)."""
    return gs.datasets.rmat(4000, 40000, seed=3).csc


@pytest.fixture(params=[1, 2], ids=["1t", "2t"])
def threads(request, monkeypatch):
    monkeypatch.setattr(relabel_native, "THREADS", request.param)
    return request.param


def reference(A, batches=None):
    """The torch code's ``all_nodes`` (both implementations agree), native off."""
    saved = relabel_native.ENABLED
    relabel_native.ENABLED = False
    try:
        want = finalize.all_nodes(A, batches) if isinstance(A, CSC) else None
        other = layout_ops.all_nodes(A, batches)
    finally:
        relabel_native.ENABLED = saved
    if want is not None:
        assert torch.equal(want, other)
    return other


def brute_force(A, batches=None):
    """The definition, in Python: columns by first occurrence, then unseen rows ascending."""
    cols = A.global_cols().tolist()
    rows = sorted(set(A.rows.tolist()))
    row_ids = A.row_ids.tolist() if A.row_ids is not None else None
    out, seen = [], set()
    for v in cols + [row_ids[r] if row_ids is not None else r for r in rows]:
        if v not in seen:
            seen.add(v)
            out.append(v)
    if batches is not None:
        out.sort(key=lambda v: v // batches[1])  # stable
    return out


def native_only(monkeypatch):
    """Make the torch code fail, so a quiet fallback cannot pass a comparison."""

    def refuse(*args, **kwargs):
        raise AssertionError("the torch code ran")

    monkeypatch.setattr(finalize, "unique_first", refuse)
    monkeypatch.setattr(finalize, "batch_order", refuse)


def check(A, monkeypatch, batches=None):
    """Native == torch == brute force, for ``finalize`` (CSC) and ``layout_ops``."""
    want = reference(A, batches)
    assert want.tolist() == brute_force(A, batches)
    with monkeypatch.context() as m:
        native_only(m)
        got = layout_ops.all_nodes(A, batches)
        assert got.dtype == torch.int64 and torch.equal(got, want)
        if isinstance(A, CSC):
            assert torch.equal(finalize.all_nodes(A, batches), want)
    return want


def frontier(graph, size, seed):
    """Random ids with repeats, a hub, and columns without in-edges."""
    g = torch.Generator().manual_seed(seed)
    empty = torch.nonzero(graph.degrees() == 0).squeeze(1)[:5]
    ids = torch.randint(0, graph.num_nodes, (size,), generator=g)
    cols = torch.cat([ids, torch.tensor([int(graph.degrees().argmax())] * 2), empty, ids[:10]])
    return cols[torch.randperm(cols.numel(), generator=g)]


def block(graph, cols, k, key=KEY):
    return select.individual_sample(extract.slice_cols(graph, cols), k, False, key)


@pytest.mark.parametrize("k", [1, 5, 25])
@pytest.mark.parametrize("size", [1, 300, 2000])
def test_graphsage_blocks_equal_torch(graph, k, size, threads, monkeypatch):
    S = block(graph, frontier(graph, size, k + size), k)
    want = check(S, monkeypatch)
    assert want.numel() < S.num_cols + S.nnz  # repeats were removed
    for layout in ("coo", "csr-compact"):
        assert torch.equal(check(convert(S, layout), monkeypatch), want)
    assert torch.equal(layout_ops.all_nodes(convert(S, "csr")), want)  # (torch: every row)


def test_two_hops_and_the_whole_graph(graph, threads, monkeypatch):
    S = block(graph, frontier(graph, 500, 1), 10)
    S2 = block(graph, check(S, monkeypatch), 5, op_key(2, 7, 2))
    check(S2, monkeypatch)
    check(graph, monkeypatch)  # no column or row ids: every node
    check(convert(graph, "coo"), monkeypatch)


def test_empty_blocks(graph, threads, monkeypatch):
    empty = gs.Matrix.from_edge_index(torch.zeros((2, 0), dtype=torch.int64), 6).csc
    none = torch.tensor([], dtype=torch.int64)
    for cols in (none, torch.tensor([0, 5, 5])):
        S = extract.slice_cols(empty, cols)
        got = check(S, monkeypatch)
        assert got.tolist() == list(dict.fromkeys(cols.tolist()))
    no_edges = torch.nonzero(graph.degrees() == 0).squeeze(1)[:7]
    assert check(block(graph, no_edges, 5), monkeypatch).tolist() == no_edges.tolist()
    assert check(block(graph, none, 5), monkeypatch).numel() == 0
    check(convert(block(graph, none, 5), "csr-compact"), monkeypatch)


def test_sub_matrices_with_row_and_col_ids(graph, threads, monkeypatch):
    S = block(graph, frontier(graph, 800, 2), 10)
    check(finalize.compact(S), monkeypatch)  # row ids: the rows with edges
    rows = torch.randperm(4000, generator=torch.Generator().manual_seed(4))[:1500]
    R = extract.slice_rows(graph, rows)  # row ids in a random order
    check(R, monkeypatch)
    check(extract.slice_cols(R, frontier(graph, 600, 5)), monkeypatch)
    # row ids with repeats and rows that are also columns
    g = torch.Generator().manual_seed(6)
    row_ids = torch.randint(0, 50, (40,), generator=g)
    A = CSC(
        num_nodes=4000,
        indptr=torch.tensor([0, 3, 3, 9]),
        rows=torch.tensor([5, 0, 39, 7, 7, 5, 2, 1, 0]),
        row_ids=row_ids,
        col_ids=torch.cat([row_ids[7:8], torch.tensor([3999, 3999])]),
    )
    check(A, monkeypatch)
    check(convert(A, "coo"), monkeypatch)
    check(convert(A, "csr-compact"), monkeypatch)


def test_a_sparse_row_space(monkeypatch, threads):
    """A row space of 2**20 nodes and a few hundred rows (the touched words sorted, not the
    whole bitmap scanned), rows at both ends of a word and of the space."""
    n = 1 << 20
    g = torch.Generator().manual_seed(8)
    rows = torch.cat([torch.randint(0, n, (300,), generator=g), torch.tensor([0, 63, 64, n - 1])])
    A = CSC(
        num_nodes=n,
        indptr=torch.tensor([0, 100, 250, rows.numel()]),
        rows=rows,
        col_ids=torch.tensor([n - 1, 64, 12345]),
    )
    check(A, monkeypatch)
    check(dc_replace(A, row_ids=torch.randperm(n, generator=g)), monkeypatch)


def super_batch(graph, copies, k, seed, ordered=True):
    """A super-batch of ``copies`` GraphSAGE blocks: columns ``b * n + v``, rows moved to
    their column's batch."""
    n = graph.num_nodes
    parts = [frontier(graph, 300, seed + b) + b * n for b in range(copies)]
    enc = torch.cat(parts)
    if not ordered:
        enc = enc[torch.randperm(enc.numel(), generator=torch.Generator().manual_seed(seed))]
    S = extract.slice_cols(graph, enc % n)
    S = batched.encode_columns(S, enc, n, copies)
    return select.individual_sample(S, k, False, KEY)


@pytest.mark.parametrize("ordered", [True, False], ids=["ordered", "shuffled"])
def test_super_batch_equals_torch(graph, ordered, threads, monkeypatch):
    n, copies = graph.num_nodes, 3
    S = super_batch(graph, copies, 10, 11, ordered)
    got = check(S, monkeypatch, (copies, n))
    assert torch.equal(torch.sort(got // n, stable=True).values, got // n)  # grouped
    check(convert(S, "coo"), monkeypatch, (copies, n))
    check(S, monkeypatch, (copies, 7))  # batches not dividing the space
    # a tiny block of a space of many batches (n = 1): the comparison sort, not the counts
    check(block(graph, torch.tensor([9, 3, 3]), 4), monkeypatch, (4000, 1))


def test_default_threads_on_a_large_block(graph, monkeypatch):
    monkeypatch.setattr(relabel_native, "THREADS", None)
    monkeypatch.setattr(relabel_native, "EDGES_PER_THREAD", 1000)
    S = block(graph, frontier(graph, 20000, 3), 10)
    check(S, monkeypatch)


def test_bad_ids_decline_and_leave_the_bitmaps_clear(graph, threads, monkeypatch):
    """Columns, rows and row ids outside their spaces, int32 ids, a compact CSR's stored rows
    out of order, bad ``batches``: declined (None), nothing read out of bounds; the torch
    code then answers; later calls are still exact (the bitmaps were cleared)."""
    S = block(graph, frontier(graph, 400, 9), 10)
    n = graph.num_nodes
    bad = [
        dc_replace(S, col_ids=torch.cat([S.col_ids, torch.tensor([n])])),
        dc_replace(S, col_ids=torch.cat([S.col_ids, torch.tensor([-1])])),
        dc_replace(S, col_ids=torch.cat([S.col_ids, torch.tensor([2**40])])),
        dc_replace(S, rows=torch.cat([S.rows[:-1], torch.tensor([n])])),
        dc_replace(S, rows=torch.cat([S.rows[:-1], torch.tensor([-(2**40)])])),
        dc_replace(S, row_ids=torch.arange(n).index_fill(0, S.rows[-1:], -1)),
        dc_replace(S, row_ids=torch.arange(n).index_fill(0, S.rows[:1], n)),
        dc_replace(S, col_ids=S.col_ids.int()),
        dc_replace(S, num_nodes=10),
    ]
    for A in bad:
        assert relabel_native.all_nodes(A) is None
        assert relabel_native.all_nodes(A, (1, n)) is None
    C = convert(S, "csr-compact")
    assert relabel_native.all_nodes(dc_replace(C, stored_rows=C.stored_rows.flip(0))) is None
    assert relabel_native.all_nodes(convert(S, "csr")) is None
    for batches in ((2, 0), (2, -3), (2, 1.5), (2,), 5):
        assert relabel_native.all_nodes(S, batches) is None
    # the torch code answers as it did (it keeps an id past the graph)
    A = dc_replace(S, col_ids=torch.cat([S.col_ids, torch.tensor([n + 5])]))
    assert finalize.all_nodes(A).tolist() == brute_force(A)
    check(S, monkeypatch)  # exact after the declined calls
    check(super_batch(graph, 2, 5, 1), monkeypatch, (2, n))


def test_switches_turn_it_off(graph, monkeypatch):
    S = block(graph, frontier(graph, 100, 1), 5)
    assert relabel_native.all_nodes(S) is not None
    monkeypatch.setenv("GSAMPLE_NATIVE_CPU", "0")
    assert relabel_native.all_nodes(S) is None
    monkeypatch.delenv("GSAMPLE_NATIVE_CPU")
    monkeypatch.setattr(relabel_native, "ENABLED", False)
    assert relabel_native.all_nodes(S) is None


def test_compiled_graphsage_runs_native_and_equals_torch(monkeypatch):
    """A compiled three-hop GraphSAGE sampler: the native path runs, the frontiers and
    blocks are the torch code's."""
    g = gs.datasets.rmat(3000, 30000, seed=5)

    def sage(A, seeds):
        out = []
        for k in (15, 10, 5):
            S = A[:, seeds].individual_sample(k)
            seeds = S.all_nodes()
            out.append((S, seeds))
        return out

    seeds = torch.randint(0, 3000, (256,), generator=torch.Generator().manual_seed(0))

    def run():
        gs.manual_seed(4)
        f = gs.compile(sage)
        return [f(g, seeds) for _ in range(2)]

    monkeypatch.setattr(relabel_native, "ENABLED", False)
    want = run()
    monkeypatch.setattr(relabel_native, "ENABLED", True)
    native_only(monkeypatch)
    got = run()
    for a, b in zip(got, want):
        for (S, f), (T, h) in zip(a, b):
            assert torch.equal(f, h) and torch.equal(S.csc.rows, T.csc.rows)


def _relabel_in_child(S, conn):
    torch.set_num_threads(1)
    relabel_native.THREADS = 2
    conn.send(relabel_native.all_nodes(S).numpy().tobytes())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_forked_child_runs_with_threads(graph, monkeypatch):
    """A child forked after the parent ran OpenMP teams marks rows on std::threads: no
    hang, the same ids."""
    monkeypatch.setattr(relabel_native, "THREADS", 2)
    torch.rand(1 << 20).sum()  # an OpenMP team of torch's
    S = block(graph, frontier(graph, 3000, 4), 10)
    want = relabel_native.all_nodes(S)
    assert torch.equal(want, reference(S))
    assert in_forked_child(_relabel_in_child, S) == want.numpy().tobytes()
