"""Unique / relabel kernels (``kernels/relabel.cu``) against the torch backend's finalize.

Every GPU result is asserted bit-equal (values, dtype, order) to
``gsample.backend.torch.finalize`` run on the same CUDA tensors. The host-side arithmetic
(table sizing, the choice between row flags and hashing) and the argument checks run on
the CPU.
"""

import pytest
import torch
from helpers import assert_same, graphsage

import gsample as gs
from gsample.backend import get_backend
from gsample.backend.cuda import finalize as F
from gsample.backend.torch import finalize as T
from gsample.ir import Op

on_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")


def cuda_test(fn):
    """Mark a test as needing a GPU (the file also holds CPU tests)."""
    return pytest.mark.cuda(on_gpu(fn))


def _gen(seed):
    return torch.Generator().manual_seed(seed)


# ----------------------------------------------------------------------------- CPU: host side
@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, 1000, 1024, 1025, 10_000_000, 2**40 + 3])
def test_table_size_is_the_smallest_power_of_two_at_least_2n(n):
    size = F.table_size(n)
    assert size & (size - 1) == 0  # a power of two: mask = size - 1
    assert size >= 2 * n and size >= F.MIN_TABLE  # at most half full
    assert size // 2 < max(2 * n, F.MIN_TABLE)  # and no larger than needed


def test_table_size_rejects_negative_counts():
    with pytest.raises(ValueError, match="n: expected a count >= 0"):
        F.table_size(-1)


def test_row_path_choice():
    assert F.use_row_flags(0, 0) and F.use_row_flags(F.ROW_FLAG_RATIO, 0)
    assert F.use_row_flags(100 * F.ROW_FLAG_RATIO, 100)
    assert not F.use_row_flags(100 * F.ROW_FLAG_RATIO + 1, 100)
    assert not F.use_row_flags(2_400_000, 12_800)  # first GraphSAGE layer: hash the rows


def test_arguments_checked_before_any_launch():
    ids = torch.arange(10)
    with pytest.raises(ValueError, match="ids: expected a CUDA tensor"):
        F.unique_first(ids)
    with pytest.raises(ValueError, match="ids: expected a CUDA tensor"):
        F.relabel(ids, ids)
    with pytest.raises(TypeError, match="ids: expected a tensor"):
        F.unique_first([1, 2])
    with pytest.raises(ValueError, match="indptr: expected a CUDA tensor"):
        F.edge_cols(ids, 9)


def test_cuda_backend_declares_the_finalize_ops():
    be = get_backend("cuda")
    for op in (Op.ROW, Op.COLUMN, Op.ALL_NODES, Op.EDGES, Op.COMPACT, Op.ROW_IDS, Op.COL_IDS):
        assert be.supports(op), op


# ----------------------------------------------------------------------------- GPU: unique
CASES = {
    "repeats": lambda g: torch.randint(0, 1000, (1_000_000,), generator=g),
    "all_equal": lambda g: torch.full((100_000,), 7, dtype=torch.long),
    "all_distinct": lambda g: torch.randperm(300_000, generator=g),
    "empty": lambda g: torch.empty(0, dtype=torch.long),
    "single": lambda g: torch.tensor([5]),
    "zero_and_max": lambda g: torch.tensor([2**63 - 1, 0, 2**63 - 1, 3, 0]),
    "near_2_62": lambda g: torch.randint(2**62 - 5000, 2**62 + 5000, (200_000,), generator=g),
    # equal low bits: the table's hash must spread them
    "strided": lambda g: torch.randint(0, 5000, (100_000,), generator=g) << 32,
    "ten_million": lambda g: torch.randint(0, 3_000_000, (10_000_000,), generator=g),
}


def _ids(name):
    return CASES[name](_gen(0)).cuda()


@cuda_test
@pytest.mark.parametrize("name", sorted(CASES))
def test_unique_first_equals_torch(name):
    ids = _ids(name)
    ref = T.unique_first(ids)
    got, inv = F.unique_first(ids, return_inverse=True)
    assert got.dtype == ref.dtype and torch.equal(got, ref)
    assert inv.dtype == torch.int64 and torch.equal(got[inv], ids)
    # the first occurrence of each value comes first: its position is a first occurrence
    first = torch.full((got.numel(),), ids.numel(), dtype=torch.long, device="cuda")
    first.scatter_reduce_(0, inv, torch.arange(ids.numel(), device="cuda"), "amin")
    assert torch.all(first[1:] > first[:-1])
    assert torch.equal(F.unique_first(ids), ref)  # same answer again (determinism)


@cuda_test
@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.uint8])
def test_unique_first_keeps_the_dtype(dtype):
    ids = torch.randint(0, 100, (5000,), generator=_gen(1)).to(dtype).cuda()
    got = F.unique_first(ids)
    assert got.dtype == dtype and torch.equal(got, T.unique_first(ids))


@cuda_test
def test_unique_first_rejects_bad_ids():
    with pytest.raises(ValueError, match="ids: ids must be >= 0"):
        F.unique_first(torch.tensor([3, -1, 2], device="cuda"))
    with pytest.raises(TypeError, match="ids: expected integer ids"):
        F.unique_first(torch.ones(3, device="cuda"))
    with pytest.raises(ValueError, match="ids: expected a 1-D tensor"):
        F.unique_first(torch.zeros(2, 2, dtype=torch.long, device="cuda"))
    with pytest.raises(ValueError, match="space: ids must be >= 0"):
        F.relabel(torch.arange(3, device="cuda"), torch.tensor([-5], device="cuda"))


@cuda_test
@pytest.mark.parametrize("name", ["repeats", "all_distinct", "near_2_62", "empty", "zero_and_max"])
def test_relabel_is_the_position_in_unique_first(name):
    space = _ids(name)
    uniq = T.unique_first(space)
    g = _gen(2)
    inside = (
        space[torch.randint(0, max(space.numel(), 1), (50_000,), generator=g).cuda()]
        if space.numel()
        else space
    )
    outside = torch.tensor([-1, -7, 2**62 + 10**6, 1234567891011], device="cuda")
    outside = outside[~torch.isin(outside, space)]
    ids = torch.cat([inside, outside])
    got = F.relabel(ids, space)
    assert got.dtype == torch.int64
    n_in = inside.numel()
    assert torch.all(got[n_in:] == -1)  # not in the space (or negative)
    assert torch.all((got[:n_in] >= 0) & (got[:n_in] < uniq.numel()))
    assert torch.equal(uniq[got[:n_in]], inside)


# ----------------------------------------------------------------------------- GPU: the ops
@pytest.fixture(scope="module")
def graph():
    return gs.datasets.rmat(100_000, 1_500_000, seed=4, device="cuda")


def _matrices(A):
    """Sub-matrices of every kind the finalize ops meet: slices (repeated columns, columns
    without edges), node-wise and layer-wise samples, compacted ones, the whole graph."""
    g = _gen(5)
    seeds = torch.randperm(A.num_nodes, generator=g)[:3000].cuda()
    seeds = torch.cat([seeds, seeds[:50]])  # repeated frontier nodes
    gs.manual_seed(0)
    sub = A[:, seeds]
    sampled = sub.individual_sample(10)
    layer = sub.collective_sample(2000)
    out = {
        "slice": sub,
        "individual": sampled,
        "collective": layer,
        "compacted": sampled.compact(),
        "compacted_slice": sub.compact(),
        "graph": A,
        "k0": sub.individual_sample(0),
    }
    hop = sampled.all_nodes()
    out["second_hop"] = A[:, hop].individual_sample(5)
    return out


@cuda_test
@pytest.mark.parametrize("flags", ["auto", "always", "never"])
def test_finalize_ops_equal_torch(graph, monkeypatch, flags):
    if flags != "auto":  # both row paths on every matrix
        monkeypatch.setattr(F, "ROW_FLAG_RATIO", 2**62 if flags == "always" else 0)
    for name, M in _matrices(graph).items():
        A = M.csc
        assert_same(F.row(A), T.row(A), f"{name}: row")
        assert_same(F.all_nodes(A), T.all_nodes(A), f"{name}: all_nodes")
        assert_same(F.edges(A), T.edges(A), f"{name}: edges")
        assert_same(gs.Matrix(F.compact(A)), gs.Matrix(T.compact(A)), f"{name}: compact")


@cuda_test
def test_all_nodes_puts_the_columns_first(graph):
    seeds = torch.randperm(graph.num_nodes, generator=_gen(6))[:500].cuda()
    s = graph[:, seeds].individual_sample(5).csc
    nodes = F.all_nodes(s)
    assert torch.equal(nodes[:500], seeds)
    assert nodes.unique().numel() == nodes.numel()


@cuda_test
def test_edge_cols_with_a_hub_and_empty_columns():
    g = _gen(7)
    deg = torch.randint(0, 5, (20_000,), generator=g)
    deg[::3] = 0
    deg[0] = deg[-1] = 0
    deg[777] = 2_000_000  # one column of two million edges
    indptr = torch.cat([torch.zeros(1, dtype=torch.long), deg.cumsum(0)]).cuda()
    nnz = int(indptr[-1])
    col_ids = torch.randint(0, 2**40, (deg.numel(),), generator=g).cuda()
    local = torch.repeat_interleave(torch.arange(deg.numel()).cuda(), deg.cuda())
    assert torch.equal(F.edge_cols(indptr, nnz), local)
    assert torch.equal(F.edge_cols(indptr, nnz, col_ids), col_ids[local])
    assert F.edge_cols(indptr[:1], 0).numel() == 0  # no columns, no edges


# ----------------------------------------------------------------------------- end to end
def finalize_sampler(A, seeds, fanouts=(10, 5)):
    """Every finalize op of both layers, so the compiled program runs each on the backend."""
    out = []
    for k in fanouts:
        s = A[:, seeds].individual_sample(k)
        c = s.compact()
        out += [s.row(), s.column(), s.edges(), c, c.row_ids, c.col_ids]
        seeds = s.all_nodes()
        out.append(seeds)
    return out


@cuda_test
@pytest.mark.parametrize(
    "fn, kwargs",
    [(graphsage, {"fanouts": (15, 10, 5)}), (finalize_sampler, {})],
    ids=["graphsage_3_layers", "every_finalize_op"],
)
def test_compiled_cuda_backend_equals_torch_backend(graph, monkeypatch, fn, kwargs):
    seeds = torch.randperm(graph.num_nodes, generator=_gen(8))[:512].cuda()
    from gsample.backend.cuda import nodewise

    launched = []
    real = F.launch
    for mod in (F, nodewise):
        monkeypatch.setattr(mod, "launch", lambda *a, **k: (launched.append(a[1]), real(*a, **k)))
    for seed in (0, 1):
        gs.manual_seed(seed)
        ref = gs.compile(fn, backend="torch")(graph, seeds, **kwargs)
        gs.manual_seed(seed)
        got = gs.compile(fn, backend="cuda")(graph, seeds, **kwargs)
        assert_same(got, ref, f"seed {seed}")
    # the kernels ran, not the fallback: the sync-free samples and frontiers
    assert {"gs_sample_uniform", "gs_nodes_scan_emit"} <= set(launched)
