"""``A.from_neighbors(cols, neighbors, values)``: a block from dense per-column neighbour
lists (issue 13: "a matrix from dense tensors inside a sampler"). Structure exactly as
specified, eager = compiled, super-batched = one mini-batch at a time, PyG conversion, and
every bad argument refused by name, eager and compiled."""

import pytest
import torch
from helpers import example

import gsample as gs


@pytest.fixture(scope="module")
def A():
    return gs.datasets.rmat(3000, 30000, seed=2)


def walk_neighbors(A, seeds, walks=4, length=3):
    """PinSAGE-like: each seed's walk visits (with repeats and -1 after a stop) as its
    neighbour list, weighted 1 per visit."""
    w = A.random_walk(seeds.repeat_interleave(walks), length, restart_prob=0.3)
    nbrs = w[:, 1:].reshape(-1, walks * length)  # (B, walks * length)
    return A.from_neighbors(seeds, nbrs, (nbrs >= 0).float())


def test_structure_is_the_lists_column_by_column(A):
    seeds = torch.tensor([4, 9, 4, 2999])
    nbrs = torch.tensor([[2, -1, 1], [-1, -1, -1], [6, 0, 5], [7, 7, -1]])
    vals = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    b = A.from_neighbors(seeds, nbrs, vals)
    c = b.csc
    assert b.shape == (A.num_nodes, 4) and b.num_edges == 7
    assert c.indptr.tolist() == [0, 2, 2, 5, 7]  # an empty column stays
    assert c.rows.tolist() == [1, 2, 0, 5, 6, 7, 7]  # -1 anywhere skipped; by id, repeats
    assert b.values.tolist() == [2.0, 0.0, 7.0, 8.0, 6.0, 9.0, 10.0]  # follow their entries
    assert torch.equal(b.col_ids, seeds) and c.row_ids is None
    assert torch.equal(b.all_nodes(), torch.tensor([4, 9, 2999, 0, 1, 2, 5, 6, 7]))
    src, dst, _ = b.edges()
    assert src.tolist() == [1, 2, 0, 5, 6, 7, 7] and dst.tolist() == [4, 4, 4, 4, 4, 2999, 2999]
    assert A.from_neighbors(seeds[:1], torch.tensor([[3]])).csc.values is None  # unweighted


def test_compiled_and_super_batched_equal_eager(A):
    seeds = torch.randperm(A.num_nodes, generator=torch.Generator().manual_seed(0))[:256]
    gs.manual_seed(5)
    eager = walk_neighbors(A, seeds)
    gs.manual_seed(5)
    compiled = gs.compile(walk_neighbors)(A, seeds)
    for x, y in (
        (eager.csc.indptr, compiled.csc.indptr),
        (eager.csc.rows, compiled.csc.rows),
        (eager.values, compiled.values),
        (eager.col_ids, compiled.col_ids),
    ):
        assert torch.equal(x, y)

    def blocks(**kw):
        return [
            b.out for b in gs.DataLoader(A, gs.compile(walk_neighbors), seeds, 64, seed=3, **kw)
        ]

    one, many = blocks(), blocks(super_batch=4)
    assert len(one) == len(many) == 4
    for x, y in zip(one, many):
        assert x.shape == y.shape == (A.num_nodes, 64)
        for f in ("indptr", "rows", "col_ids", "values"):
            assert torch.equal(getattr(x.csc, f), getattr(y.csc, f)), f


def test_to_pyg_sends_each_neighbour_to_its_column(A):
    pytest.importorskip("torch_geometric")
    seeds = torch.tensor([10, 20])
    nbrs = torch.tensor([[30, 40], [10, -1]])
    data = gs.Batch(seeds, 0, A.from_neighbors(seeds, nbrs)).to_pyg()
    assert data.n_id[:2].tolist() == [10, 20] and data.batch_size == 2
    pairs = {(int(data.n_id[s]), int(data.n_id[d])) for s, d in data.edge_index.t()}
    assert pairs == {(30, 10), (40, 10), (10, 20)}


def _bad(A, cols, nbrs, vals=None):
    return A.from_neighbors(cols, nbrs, vals)


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize(
    "cols, nbrs, vals, exc, needle",
    [
        (
            torch.tensor([1, 2]),
            torch.tensor([1, 2]),
            None,
            ValueError,
            "neighbors: expected one row",
        ),
        (
            torch.tensor([1, 2]),
            torch.ones(3, 2, dtype=torch.long),
            None,
            ValueError,
            "neighbors: expected one row",
        ),
        (torch.tensor([1, 2]), torch.ones(2, 2), None, TypeError, "neighbors: node ids must be"),
        (
            torch.tensor([1, 2]),
            torch.tensor([[1, 3000], [2, 3]]),
            None,
            IndexError,
            "neighbors: node id 3000 is out of range",
        ),
        (
            torch.tensor([1, 2]),
            torch.tensor([[1, -2], [2, 3]]),
            None,
            IndexError,
            "neighbors: node id -2 is negative",
        ),
        (torch.tensor([1, 5000]), torch.tensor([[1], [2]]), None, IndexError, "cols: node id 5000"),
        (
            torch.tensor([1, 2]),
            torch.tensor([[1], [2]]),
            torch.ones(2, 2),
            ValueError,
            "values: expected one value per entry",
        ),
        (
            torch.tensor([1, 2]),
            torch.tensor([[1], [2]]),
            torch.ones(2, 1, dtype=torch.long),
            TypeError,
            "values: must be floating point",
        ),
    ],
)
def test_bad_arguments_are_refused_by_name(A, compiled, cols, nbrs, vals, exc, needle):
    fn = gs.compile(_bad) if compiled else _bad
    with pytest.raises(exc, match=needle):
        fn(A, cols, nbrs, vals)


def test_a_sub_matrix_is_refused(A):
    with pytest.raises(ValueError, match="A: from_neighbors needs the whole graph"):
        A[:, torch.tensor([1, 2])].from_neighbors(torch.tensor([1]), torch.tensor([[3]]))


def test_pinsage_block_is_its_dense_output(A):
    m = example("pinsage")
    seeds = torch.tensor([1, 2, 3, 50])
    gs.manual_seed(1)
    nbrs, w = m.pinsage(A, seeds, num_walks=20, length=3, k=5)
    gs.manual_seed(1)
    block = m.pinsage_block(A, seeds, num_walks=20, length=3, k=5)
    keep = nbrs >= 0
    assert torch.equal(block.csc.indptr[1:] - block.csc.indptr[:-1], keep.sum(1))
    for i in range(len(seeds)):  # each seed's neighbours and counts, by id
        lo, hi = block.csc.indptr[i], block.csc.indptr[i + 1]
        want = sorted(zip(nbrs[i][keep[i]].tolist(), w[i][keep[i]].tolist()))
        assert list(zip(block.csc.rows[lo:hi].tolist(), block.values[lo:hi].tolist())) == want


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_cuda_backend_equals_torch_backend(A):
    G = A.to("cuda")
    seeds = torch.arange(0, 3000, 7, device="cuda")
    out = {}
    for backend in ("torch", "cuda"):
        gs.manual_seed(4)
        out[backend] = gs.compile(walk_neighbors, backend=backend)(G, seeds)
    for f in ("indptr", "rows", "col_ids", "values"):
        assert torch.equal(getattr(out["torch"].csc, f), getattr(out["cuda"].csc, f)), f
