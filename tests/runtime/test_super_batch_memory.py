"""A super-batch's induced subgraph (``A[rows, cols]``, ShaDow's) costs the sampled work, not
``copies * n``.

The super-batch rewrite runs ``SLICE_ROWS_COLS`` once for all mini-batches on their encoded
ids (``attrs["batches"]``); checked here:

* a super-batched ShaDow run of 32 mini-batches on a graph of a million nodes allocates no
  tensor larger than the larger of the graph's node count, a batch's frontier edges (twice)
  and the whole sample (kept edges and nodes): no marker of ``copies * n`` entries (the old
  row slice of the block-diagonal graph allocated 32 million) and no column slice of every
  batch's frontier at once (the old decode / re-encode);
* the batched op, on both of its membership paths (one marker shared by the batches, a
  search among the rows), equals each batch's own ``A[rows_b, cols_b]`` field for field,
  weighted and not, with edge ids;
* bad ids raise as a mini-batch's checks do: a repeated row (``ValueError``), a row or a
  column out of range (``IndexError``);
* per-batch row ids (dense code) are joined into the op, equal to one by one;
* on a GPU (``cuda``-marked): the CUDA op equals the torch op bit for bit (int64 and int32
  index arrays), raises alike, and a super-batched ShaDow run stays within a bound of the
  sample's size.
"""

import functools

import pytest
import torch
from helpers import assert_same, example
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

import gsample as gs
from gsample.backend.torch import extract
from gsample.base.random import batch_scope

COPIES, BATCH = 32, 8


class LargestTensor(TorchDispatchMode):
    """Records the largest storage (bytes) any op creates while active."""

    def __init__(self):
        super().__init__()
        self.largest, self.op = 0, None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor) and t.untyped_storage().nbytes() > self.largest:
                self.largest, self.op = t.untyped_storage().nbytes(), str(func)
        return out


def skewed_graph(n: int, m: int, seed: int = 0) -> gs.Matrix:
    """``n`` nodes, ``m`` edges, rows and columns drawn with a power-law-like skew (hubs, as
    R-MAT has), built in a second or two."""
    g = torch.Generator().manual_seed(seed)
    cols = (torch.rand(m, generator=g) ** 4 * n).long()
    indptr = torch.zeros(n + 1, dtype=torch.int64)
    indptr[1:] = torch.bincount(cols, minlength=n).cumsum(0)
    rows = (torch.rand(m, generator=g) ** 4 * n).long()
    return gs.Matrix.from_csc(indptr, rows, num_nodes=n)


@pytest.fixture(scope="module")
def big():
    return skewed_graph(1_000_000, 2_000_000)


@pytest.fixture(scope="module")
def small():
    return gs.datasets.rmat(3000, 40000, seed=3, weighted=True)


def test_super_batched_shadow_allocates_by_its_sample_not_copies_times_nodes(big):
    n = big.num_nodes
    g = torch.Generator().manual_seed(1)
    parts = list(torch.randperm(n, generator=g)[: COPIES * BATCH].split(BATCH))
    sb = gs.compile(example("shadow").shadow).super_batched((big, parts[0]), seeds="seeds")
    sb.run(parts, 0, 0)  # built and lowered before the recorded run
    spy = LargestTensor()
    with spy:
        outs = sb.run(parts, 0, 0)
    degree = big.csc.indptr[1:] - big.csc.indptr[:-1]
    frontier = [int(degree[nodes].sum()) for _, nodes in outs]
    sample = sum(sub.num_edges + nodes.numel() for sub, nodes in outs)
    bound = 8 * max(n, 2 * max(frontier), sample)
    assert sample > 0 and max(frontier) > 0
    # (a marker of copies * n would be 32x n; every batch's frontier at once, sum(frontier))
    assert 8 * COPIES * n > bound and 8 * sum(frontier) > bound
    assert spy.largest <= bound, (spy.largest, spy.op, bound)
    # and the samples are each mini-batch's own
    fn = gs.compile(example("shadow").shadow)
    for b in (0, COPIES - 1):
        with batch_scope(0, b):
            assert_same(outs[b], fn(big, parts[b]), f"batch {b}")


def encoded(parts: list, n: int) -> torch.Tensor:
    return torch.cat([p + b * n for b, p in enumerate(parts)])


def node_sets(A: gs.Matrix, copies: int, seed: int, size: int = 40) -> list:
    """``copies`` unique node lists (ShaDow-like: any order, overlapping between batches)."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randperm(A.num_nodes, generator=g)[: size + 7 * b] for b in range(copies)]


def each_batch(S, copies: int, n: int) -> list:
    from gsample.runtime.block_diagonal import bounds, split_matrix

    return split_matrix(S, bounds(S, n, copies), n, copies)


@pytest.mark.parametrize("weighted", [True, False])
@pytest.mark.parametrize("path", ["marker", "search"])
def test_the_batched_op_equals_each_batch_s_own_slice(small, weighted, path, monkeypatch):
    A = small if weighted else gs.Matrix.from_csc(small.csc.indptr, small.csc.rows)
    csc, n, copies = A.csc, A.num_nodes, 5
    sets = node_sets(A, copies, seed=4)
    if path == "search":  # a frontier too small for the shared marker to pay: the search
        sets = [s[:3] for s in sets]
    rows, cols = encoded(sets, n), encoded([s.flip(0) for s in sets], n)
    got = extract.slice_rows_cols_batched(csc, rows, cols, copies, n)
    assert got.num_nodes == copies * n
    assert torch.equal(got.row_ids, rows) and torch.equal(got.col_ids, cols)
    for b, part in enumerate(each_batch(got, copies, n)):
        ref = extract.slice_rows_cols(csc, sets[b], sets[b].flip(0))
        assert_same(gs.Matrix(part), gs.Matrix(ref), f"batch {b}")
        # against the definition: every edge of A (repeats too) between two of the batch's
        within = torch.isin(csc.global_rows(), sets[b]) & torch.isin(
            csc.global_cols()[csc.edge_cols()], sets[b]
        )
        assert part.nnz == int(within.sum())
        want = torch.sort(csc.eid_tensor()[within]).values
        assert torch.equal(torch.sort(part.eid_tensor()).values, want)


def test_a_repeated_row_or_an_id_out_of_range_raises_as_a_mini_batch_s_check(small):
    csc, n = small.csc, small.num_nodes
    sets = node_sets(small, 3, seed=5)
    cols = encoded(sets, n)
    twice = [sets[0], torch.cat([sets[1], sets[1][:1]]), sets[2]]
    node = int(sets[1][0])  # named as a node of the graph, not by its super-batch id
    with pytest.raises(ValueError, match=rf"^rows: node {node} appears more than once"):
        extract.slice_rows_cols_batched(csc, encoded(twice, n), cols, 3, n)
    with pytest.raises(IndexError, match="rows"):
        extract.slice_rows_cols_batched(csc, torch.tensor([3 * n]), cols, 3, n)
    with pytest.raises(IndexError, match="cols"):
        extract.slice_rows_cols_batched(csc, cols, torch.tensor([-1]), 3, n)
    with pytest.raises(ValueError, match=r"^A: a super-batch of 3 mini-batches"):
        extract.slice_rows_cols_batched(csc, cols, cols, 3, n + 1)  # neither n nor 3 n


def induced_flipped(A, seeds):
    """ShaDow one hop, the subgraph's rows given by dense code (per batch in a super-batch)."""
    nodes = A[:, seeds].individual_sample(5).all_nodes()
    return A[nodes.flip(0), nodes], nodes


def test_row_ids_from_dense_code_are_joined_into_the_op(small):
    seeds = torch.randperm(small.num_nodes, generator=torch.Generator().manual_seed(6))[:120]
    sampler = gs.compile(induced_flipped)
    gs.manual_seed(3)
    ref = list(gs.DataLoader(small, sampler, seeds, 16, seed=9))
    got = list(gs.DataLoader(small, sampler, seeds, 16, seed=9, super_batch=4))
    assert len(got) == len(ref) == 8
    for a, b in zip(got, ref):
        assert_same(a.out, b.out, f"batch {a.index}")


# ----------------------------------------------------------------------------- on a GPU
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")


@pytest.mark.cuda
@cuda
@pytest.mark.parametrize("narrow", [False, True])
@pytest.mark.parametrize("positions", ["array", "hash"])
def test_the_cuda_op_equals_the_torch_op(small, narrow, positions, monkeypatch):
    from gsample.backend.cuda import extract as cuda_extract
    from gsample.backend.cuda import layerwise

    if narrow:  # the graph read through its int32 copy
        monkeypatch.setattr(cuda_extract, "INT32_MIN_EDGES", 0)
    # the kept edges' rows mapped through a position array over the row space, or (a row
    # space past its size) a hash table of the rows
    monkeypatch.setattr(layerwise, "_NEWPOS_MAX", 1 << 40 if positions == "array" else 0)
    monkeypatch.setattr(layerwise, "_NEWPOS_PER_EDGE", 1 << 40)
    csc, n, copies = small.csc, small.num_nodes, 6
    sets = node_sets(small, copies, seed=7, size=300)
    rows, cols = encoded(sets, n), encoded([s.flip(0) for s in sets], n)
    ref = extract.slice_rows_cols_batched(csc, rows, cols, copies, n)
    got = layerwise.slice_rows_cols(csc.to("cuda"), rows.cuda(), cols.cuda(), (copies, n))
    assert_same(gs.Matrix(got.to("cpu")), gs.Matrix(ref), "the super-batch's slice")
    # repeats in two batches: both ops name the smallest, batch 0's, whichever occurrence
    # the kernels' race kept
    twice = encoded([torch.cat([sets[0], sets[0][-1:]]), torch.cat([sets[1], sets[1][:1]])], n)
    named = rf"^rows: node {int(sets[0][-1])} appears more than once"
    with pytest.raises(ValueError, match=named):
        extract.slice_rows_cols_batched(csc, twice, twice, 2, n)
    with pytest.raises(ValueError, match=named):
        layerwise.slice_rows_cols(csc.to("cuda"), twice.cuda(), twice.cuda(), (2, n))
    with pytest.raises(IndexError):
        layerwise.slice_rows_cols(csc.to("cuda"), rows.cuda(), cols.cuda() + n, (copies, n))


@pytest.mark.cuda
@cuda
@pytest.mark.parametrize("grid", [1, 3, None])
@pytest.mark.parametrize("degree", ["r-mat", "sparse"])
def test_the_mask_passes_place_every_kept_edge_as_the_torch_op(small, grid, degree, monkeypatch):
    """The kept-edge mask passes (``gs_kept_mask_warps``, ``gs_kept_ptr``,
    ``gs_kept_masked_warps``) with several tiles a block (a grid of 1 or 3 blocks: a warp's
    several runs), and on a graph of about one edge a column, whose
    tiles hold more columns than the kernels stage (GS_STAGE; a warp's window more than its
    cursor's next 32 columns) and, with few rows, many tiles keep no edge (skipped): the torch
    op's CSC, bit for bit."""
    from gsample.backend.cuda import layerwise

    if grid is not None:
        monkeypatch.setattr(layerwise, "_GRID", grid)
    if degree == "r-mat":
        A, size, copies = small, 300, 6
    else:
        g = torch.Generator().manual_seed(8)
        A = skewed_graph(6000, 7000, seed=8)
        A = gs.Matrix.from_csc(A.csc.indptr, A.csc.rows, weight=torch.rand(7000, generator=g))
        size, copies = 5000, 3
    csc, n = A.csc, A.num_nodes
    sets = node_sets(A, copies, seed=11, size=size)
    few = [s[:40] for s in sets]  # few rows: most of the frontier's tiles keep nothing
    for rows_of in (sets, few):
        rows, cols = encoded(rows_of, n), encoded([s.flip(0) for s in sets], n)
        ref = extract.slice_rows_cols_batched(csc, rows, cols, copies, n)
        got = layerwise.slice_rows_cols(csc.to("cuda"), rows.cuda(), cols.cuda(), (copies, n))
        assert_same(gs.Matrix(got.to("cpu")), gs.Matrix(ref), "the super-batch's slice")


@pytest.mark.cuda
@cuda
def test_super_batched_shadow_on_cuda_equals_one_by_one_within_its_sample_s_memory(big):
    A = big.to("cuda")
    n = A.num_nodes
    g = torch.Generator().manual_seed(8)
    parts = [p.cuda() for p in torch.randperm(n, generator=g)[: COPIES * BATCH].split(BATCH)]
    fn = gs.compile(example("shadow").shadow, backend="cuda")
    sb = fn.super_batched((A, parts[0]), seeds="seeds")
    sb.run(parts, 0, 0)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    outs = sb.run(parts, 0, 0)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before
    sample = sum(sub.num_edges + nodes.numel() for sub, nodes in outs)
    degree = big.csc.indptr[1:] - big.csc.indptr[:-1]
    frontier = sum(int(degree[nodes.cpu()].sum()) for _, nodes in outs)
    # a byte per encoded row (the membership bitmaps take a bit), two int64 per frontier
    # edge (the frontier's pointers and scans take less), the sample's arrays and tables:
    # the old column slice of every batch's frontier held about eight int64 arrays of
    # `frontier` entries
    bound = COPIES * n + 16 * frontier + 96 * sample + (16 << 20)
    assert 64 * frontier > bound
    assert peak <= bound, (peak, bound)
    one = functools.partial(fn)
    for b in range(COPIES):
        with batch_scope(0, b):
            assert_same(outs[b], one(A, parts[b]), f"batch {b}")
