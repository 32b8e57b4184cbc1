"""Slicing and transposition kernels (``kernels/extract.cu``) against the torch backend.

Every op test runs twice: on "cuda" (the kernels; skipped without a GPU) and on "cpu",
where the same host code runs the kernels' pure-torch twins (``extract._Twin``), so the
index arithmetic around the kernels (scans, compaction, int32 copies, empty and missing
columns) is checked without a GPU. Results must be identical to the torch backend's in
every storage field, dtype included.
"""

import dataclasses
import functools
import shutil
import subprocess

import pytest
import torch
from helpers import assert_same, assert_same_csc

import gsample as gs
from gsample.backend import get_backend
from gsample.backend.cuda import extract as X
from gsample.backend.torch import extract as R
from gsample.formats import csc as storage
from gsample.formats.csc import CSC
from gsample.ir import Op

_GPU = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]
DEVICES = ["cpu", pytest.param("cuda", marks=_GPU)]


@pytest.fixture(params=DEVICES)
def device(request):
    return torch.device(request.param)


@pytest.fixture(params=["int64", "int32"])
def int32(request, monkeypatch):
    """Force the int32 copy of whole graphs (0 edges suffice) or forbid it."""
    forced = request.param == "int32"
    monkeypatch.setattr(X, "INT32_MIN_EDGES", 0 if forced else None)
    return forced


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _skewed_graph(n: int, m: int, seed: int, weighted: bool = True) -> CSC:
    """``m`` random edges over ``n`` nodes, in-degrees skewed (a few large columns, many
    empty ones), with repeated edges and self-loops; weights uniform in [1, 5)."""
    g = _gen(seed)
    src = torch.randint(0, n, (m,), generator=g)
    dst = (torch.rand(m, generator=g) ** 3 * n).long()[torch.randperm(m, generator=g)]
    dst = torch.randperm(n, generator=g)[dst]  # hubs spread over the ids
    w = torch.rand(m, generator=g) * 4 + 1 if weighted else None
    return gs.Matrix.from_edge_index(torch.stack([src, dst]), num_nodes=n, weight=w).csc


@functools.cache
def _base(seed: int) -> CSC:
    return _skewed_graph(3000, 40000, seed)


@functools.cache
def _variants(seed: int, device: str) -> dict:
    """A whole graph in several storages and sub-matrices of it (column / row spaces)."""
    G = _base(seed).to(device)
    g = _gen(seed)
    n = G.num_nodes
    cols0 = torch.cat([torch.randint(0, n, (400,), generator=g), torch.tensor([7, 7, 7])])
    rows0 = torch.randperm(n, generator=g)[:1800]
    cols0, rows0 = cols0.to(device), rows0.to(device)
    bare = dataclasses.replace(G, values=None, eids=None)
    wide = dataclasses.replace(
        G, values=torch.rand(G.nnz, 3, generator=g, dtype=torch.float64).to(device)
    )
    out = {
        "graph": G,  # float32 values, eids: a permutation
        "bare": bare,  # no values, no eids
        "wide": wide,  # (E, 3) float64 values
        "col_space": R.slice_cols(G, cols0),  # repeated column ids
        "col_space_bare": R.slice_cols(bare, cols0),
        "row_space": R.slice_rows(G, rows0),
        "both": R.slice_rows(R.slice_cols(G, cols0), rows0),
        "no_cols": R.slice_cols(G, cols0[:0]),  # 0 columns, 0 edges
    }
    return out


VARIANTS = ["graph", "bare", "wide", "col_space", "col_space_bare", "row_space", "both", "no_cols"]


def _col_selections(A: CSC, seed: int):
    g = _gen(seed + 100)
    n = A.num_nodes
    dev = A.device
    sel = {
        "random_repeats": torch.randint(0, n, (700,), generator=g),  # outside ids included
        "one": torch.tensor([int(torch.randint(0, n, (1,), generator=g))]),
        "empty": torch.zeros(0, dtype=torch.long),
    }
    sel = {k: v.to(dev) for k, v in sel.items()}
    space = A.global_cols()
    if space.numel():
        sel["space_reversed"] = space.flip(0)
        sel["space_repeated"] = torch.cat([space, space[:50]])
    return sel


def _row_selections(A: CSC, seed: int):
    g = _gen(seed + 200)
    n = A.num_nodes
    dev = A.device
    sel = {
        "random": torch.randperm(n, generator=g)[:900].to(dev),  # outside ids included
        "one": torch.randperm(n, generator=g)[:1].to(dev),
        "empty": torch.zeros(0, dtype=torch.long, device=dev),
        "all_nodes": torch.randperm(n, generator=g).to(dev),
    }
    space = A.all_row_ids()
    sel["space_shuffled"] = space[torch.randperm(space.numel(), generator=g).to(dev)]
    return sel


def _expect_int32_path(A: CSC, forced: bool):
    """The int32 copy is read exactly for whole graphs when forced."""
    whole = A.row_ids is None and A.col_ids is None
    dtype = torch.int32 if forced and whole else torch.int64
    indptr, rows = X._index_arrays(A)
    assert indptr.dtype == rows.dtype == dtype


# ----------------------------------------------------------------------------- ops vs torch
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("variant", VARIANTS)
def test_slice_cols_equals_torch(device, int32, seed, variant):
    A = _variants(seed, device.type)[variant]
    _expect_int32_path(A, int32)
    for name, cols in _col_selections(A, seed).items():
        got, ref = X.slice_cols(A, cols), R.slice_cols(A, cols)
        assert got.nnz == ref.nnz, name
        assert_same_csc(got, ref)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("variant", VARIANTS)
def test_slice_rows_equals_torch(device, int32, seed, variant):
    A = _variants(seed, device.type)[variant]
    _expect_int32_path(A, int32)
    for name, rows in _row_selections(A, seed).items():
        got, ref = X.slice_rows(A, rows), R.slice_rows(A, rows)
        assert got.nnz == ref.nnz, name
        assert_same_csc(got, ref)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("variant", VARIANTS)
def test_transpose_equals_torch(device, int32, seed, variant):
    A = _variants(seed, device.type)[variant]
    got, ref = X.transpose(A), R.transpose(A)
    assert_same_csc(got, ref)
    assert_same_csc(X.transpose(got), R.transpose(ref))  # and back


def test_selections_are_not_trivial(device):
    """The fixtures really produce edges, missing columns and dropped edges."""
    A = _variants(0, device.type)["col_space"]
    cols = _col_selections(A, 0)["random_repeats"]
    out = X.slice_cols(A, cols)
    assert out.nnz > 0 and bool((out.degrees() == 0).any())
    G = _variants(0, device.type)["graph"]
    rows = _row_selections(G, 0)["random"]
    assert 0 < X.slice_rows(G, rows).nnz < G.nnz


def test_repeated_column_space_takes_first_occurrence(device, int32):
    """A column space repeating a node (two different columns 5): the first one counts."""
    t = functools.partial(torch.tensor, device=device)
    A = CSC(
        10,
        t([0, 2, 3, 6, 6]),
        t([1, 4, 2, 0, 3, 4]),
        col_ids=t([5, 8, 5, 9]),
        values=torch.arange(6.0, device=device),
        eids=t([10, 11, 12, 13, 14, 15]),
    )
    out = X.slice_cols(A, t([5, 9, 3, 5]))
    assert out.indptr.tolist() == [0, 2, 2, 2, 4]
    assert out.rows.tolist() == [1, 4, 1, 4]
    assert out.eids.tolist() == [10, 11, 10, 11]
    assert out.values.tolist() == [0.0, 1.0, 0.0, 1.0]


@functools.cache
def _hub_graph() -> CSC:
    """R-MAT plus one hub column of 1,000,000 in-edges (node 0)."""
    G = _skewed_graph(50_000, 200_000, 3, weighted=False)
    hub = torch.randint(0, 50_000, (1_000_000,), generator=_gen(0))
    end0 = int(G.indptr[1])
    col0 = torch.sort(torch.cat([G.rows[:end0], hub])).values  # rows sorted in a column
    indptr = torch.cat([G.indptr[:1], G.indptr[1:] + hub.numel()])
    return CSC(
        G.num_nodes,
        indptr,
        torch.cat([col0, G.rows[end0:]]),
        eids=torch.randperm(indptr[-1].item(), generator=_gen(1)),
    )


def test_hub_column(device, int32):
    """One column of 1,000,000 in-edges, gathered and filtered over the whole grid."""
    A = dataclasses.replace(_hub_graph().to(device))  # a fresh CSC: its own int32 copy
    _expect_int32_path(A, int32)
    cols = torch.tensor([0, 5, 0, 17, 0, 49_999]).to(device)
    got, ref = X.slice_cols(A, cols), R.slice_cols(A, cols)
    assert got.nnz > 3_000_000
    assert_same_csc(got, ref)
    rows = torch.randperm(50_000, generator=_gen(1))[:20_000].to(device)
    assert_same_csc(X.slice_rows(got, rows), R.slice_rows(ref, rows))
    assert_same_csc(X.slice_rows(A, rows), R.slice_rows(A, rows))
    assert_same_csc(X.transpose(got), R.transpose(ref))


# ----------------------------------------------------------------------------- array level
def test_array_level_twins(device):
    g = _gen(4)
    indptr = storage.segment_ptr(torch.randint(0, 6, (300,), generator=g)).to(device)
    seg = torch.randint(0, 300, (1000,), generator=g).to(device)
    for a, b in zip(X.gather_segments(indptr, seg), storage.gather_segments(indptr, seg)):
        assert a.dtype == b.dtype and torch.equal(a, b)
    with pytest.raises(IndexError, match="seg: segment ids must be in"):
        X.gather_segments(indptr, torch.tensor([0, 300]).to(device))
    space = torch.randperm(10_000, generator=g)[:3000].to(device)
    ids = torch.randint(0, 10_000, (20_000,), generator=g).to(device)
    pos, hit = X.member_positions(space, ids)
    ref_pos, ref_hit = storage.locate(space, ids)
    assert torch.equal(hit, ref_hit) and bool(hit.any()) and not bool(hit.all())
    assert torch.equal(pos[hit], ref_pos[hit]) and bool((pos[~hit] == -1).all())
    pos32, hit32 = X.member_positions(space, ids.int())  # int32 ids (GS_IDX=int)
    assert torch.equal(pos32, pos) and torch.equal(hit32, hit)
    keep, local = X.filter_members(space, ids)
    assert torch.equal(keep, hit.nonzero().squeeze(1)) and torch.equal(local, pos[keep])
    empty = torch.zeros(0, dtype=torch.long, device=device)
    assert bool((X.member_positions(empty, ids)[0] == -1).all())
    assert X.member_positions(space, empty)[0].numel() == 0
    with pytest.raises(TypeError, match="ids: expected a 1-D integer tensor"):
        X.member_positions(space, ids.float())


def test_int32_copy_is_cached_per_graph(monkeypatch):
    monkeypatch.setattr(X, "INT32_MIN_EDGES", 0)
    G = dataclasses.replace(_base(0), rows=_base(0).rows.clone())
    first = X._index_arrays(G)
    assert first[0].dtype == torch.int32 and X._index_arrays(G)[1] is first[1]
    assert torch.equal(first[1].long(), G.rows) and torch.equal(first[0].long(), G.indptr)
    assert X._index_arrays(R.slice_cols(G, torch.arange(5)))[1].dtype == torch.int64
    G.rows[0] = (int(G.rows[0]) + 1) % G.num_nodes  # in-place write: remade
    again = X._index_arrays(G)
    assert again[1] is not first[1] and torch.equal(again[1].long(), G.rows)
    monkeypatch.setattr(X, "INT32_MIN_EDGES", G.nnz + 1)  # too small a graph
    assert X._index_arrays(dataclasses.replace(G))[1].dtype == torch.int64


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_kernels_compile_for_int32_ids(tmp_path):
    """test_kernels_ptx compiles the default (int64); the GS_IDX=int build must compile too."""
    from gsample.backend.cuda.module import KERNELS as kernels
    from gsample.backend.cuda.module import OPTIONS

    out = tmp_path / "extract32.ptx"
    done = subprocess.run(
        [
            shutil.which("nvcc"),
            "-ptx",
            "-arch=sm_90",
            *OPTIONS,
            "-DGS_IDX=int",
            f"{kernels}/extract.cu",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    ptx = out.read_text()
    assert ptx.count(".entry") == 8 and ".s32" in ptx


# ----------------------------------------------------------------------------- compiled
def _extract_sampler(A, seeds):
    sub = A[:, seeds]
    s = sub.individual_sample(5)
    nodes = s.all_nodes()
    induced, by_rows = A[nodes, nodes], A[nodes, :]
    return (
        sub,
        s,
        by_rows,
        induced,
        sub[nodes, :],
        induced[:, seeds],
        by_rows[seeds, :],
        sub.T,
        induced.T,
    )


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("pipeline", ["default", "no_passes"])
@pytest.mark.parametrize("forced_int32", [False, True])
def test_compiled_cuda_equals_torch_backend(monkeypatch, forced_int32, pipeline):
    """``gs.compile(backend="cuda")`` of a sampler with every kind of slice and transpose
    equals backend "torch" on the same CUDA graph; the slices ran the extract kernels
    (without passes every op stays a CSC op the kernels take)."""
    monkeypatch.setattr(X, "INT32_MIN_EDGES", 0 if forced_int32 else None)
    launched = []
    launch = X.launch  # the name extract.py calls (imported from backend/cuda/module.py)
    monkeypatch.setattr(
        X,
        "launch",
        lambda fam, name, *a, **k: (launched.append((fam, name)), launch(fam, name, *a, **k))[1],
    )
    passes = None if pipeline == "default" else []
    A = gs.Matrix(_skewed_graph(20_000, 300_000, 5)).to("cuda")
    seeds = torch.randperm(20_000, generator=_gen(2))[:512].cuda()
    program = gs.compile(_extract_sampler, backend="cuda", passes=passes).program(A, seeds)
    ops = {n.op for n in program.nodes}
    assert {Op.SLICE_COLS, Op.SLICE_ROWS, Op.TRANSPOSE} <= ops
    assert all(
        get_backend("cuda").supports(op) for op in (Op.SLICE_COLS, Op.SLICE_ROWS, Op.TRANSPOSE)
    )
    for seed in (0, 1):
        gs.manual_seed(seed)
        ref = gs.compile(_extract_sampler, backend="torch", passes=passes)(A, seeds)
        gs.manual_seed(seed)
        launched.clear()
        got = gs.compile(_extract_sampler, backend="cuda", passes=passes)(A, seeds)
        assert_same(got, ref)
        assert all(m.num_edges > 0 for m in got)
        names = {name for fam, name in launched if fam == "extract"}
        want = {"gs_gather_segments", "gs_hash_lookup"}
        if passes == []:
            want |= {"gs_compact", "gs_map_rows", "gs_perm_cols", "gs_lower_bounds"}
        assert want <= names, names


def test_other_layouts_run_the_torch_code():
    """A CSR input (never handed over by the backend, which takes CSC only) still gives
    the torch backend's result."""
    layouts = pytest.importorskip("gsample.formats.layouts")
    A = _base(0)
    csr = layouts.to_csr(A)
    rows = torch.randperm(A.num_nodes, generator=_gen(3))[:700]
    assert_same(gs.Matrix(X.slice_rows(csr, rows)), gs.Matrix(R.slice_rows(A, rows)))
    assert_same(gs.Matrix(X.transpose(csr)), gs.Matrix(R.transpose(A)))


def test_compiled_with_twins_equals_torch_backend(monkeypatch):
    """The host code (with the kernels' twins) in place of the torch ops of a compiled CPU
    sampler: the same samples, every path of the wrappers taken."""
    from gsample.backend import Impl, get_backend

    monkeypatch.setattr(X, "INT32_MIN_EDGES", 0)
    A = gs.Matrix(_skewed_graph(5000, 60_000, 6))
    seeds = torch.randperm(5000, generator=_gen(2))[:256]
    gs.manual_seed(0)
    ref = gs.compile(_extract_sampler, backend="torch", passes=[])(A, seeds)
    called = set()
    for name in ("gather", "positions", "map_rows", "compact", "perm_cols", "lower_bounds"):
        fn = getattr(X._Twin, name)
        monkeypatch.setattr(
            X._Twin,
            name,
            staticmethod(lambda *a, _fn=fn, _name=name: (called.add(_name), _fn(*a))[1]),
        )
    for op, fn in (
        (Op.SLICE_COLS, X.slice_cols),
        (Op.SLICE_ROWS, X.slice_rows),
        (Op.TRANSPOSE, X.transpose),
    ):
        monkeypatch.setitem(get_backend("torch").impls, (op, "csc"), Impl(fn, "torch"))
    gs.manual_seed(0)
    assert_same(gs.compile(_extract_sampler, backend="torch", passes=[])(A, seeds), ref)
    assert called == {"gather", "positions", "map_rows", "compact", "perm_cols", "lower_bounds"}
