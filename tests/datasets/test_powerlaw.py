"""``gs.datasets.undirected_rmat`` and the anchor graphs (papers-like, products-like): the
chunked CSC build against an un-chunked reference written here, the degree profile, the
seeds, the on-disk cache, and the memory-mapped CSC / COO loaders."""

import json
import math
import pathlib
import warnings

import numpy as np
import pytest
import torch
from scipy import stats

import gsample as gs
from gsample.datasets import coo, mapped, undirected

# products-like at 1/64 of its size
N64, E64 = 2_449_029 // 64, 61_859_140 // 64
#: the profile of that graph as the reference below computes it (pinned: the generator's
#: output must not drift)
PROFILE64 = {"nodes": 32_904, "edges": 1_933_098, "median": 10, "p99": 770, "max": 23_925}
CHECKSUM64 = 32_115_930_408  # sum of its rows


def reference_csc(num_nodes, num_edges, seed=0):
    """The un-chunked path: every edge ``gs.datasets.rmat`` draws, both directions, the
    isolated nodes dropped (ids renumbered in order), one sort by (column, row)."""
    src, dst, _ = gs.datasets.rmat(num_nodes, num_edges, seed=seed).edges()
    r, c = torch.cat([src, dst]), torch.cat([dst, src])
    ids = torch.unique(torch.cat([r, c]))
    r, c = torch.searchsorted(ids, r), torch.searchsorted(ids, c)
    n = ids.numel()
    key = torch.sort(c * n + r).values
    indptr = torch.zeros(n + 1, dtype=torch.int64)
    indptr[1:] = torch.cumsum(torch.bincount(key // n, minlength=n), 0)
    return n, indptr, key % n


def mapped_from(t: torch.Tensor, path) -> bool:
    """Whether ``t``'s memory lies in a mapping of the file ``path`` (Linux's
    ``/proc/self/maps``; True elsewhere, where it cannot be told)."""
    try:
        maps = pathlib.Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return True
    ptr = t.data_ptr()
    for line in maps:
        if line.endswith(str(path)):
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if lo <= ptr < hi:
                return True
    return False


@pytest.fixture(scope="module")
def ref64():
    return reference_csc(N64, E64)


@pytest.fixture(scope="module")
def small():
    return gs.datasets.undirected_rmat(3000, 20_000, seed=1)


def test_chunked_build_equals_the_reference_and_its_pinned_profile(ref64):
    n, indptr, rows = ref64
    assert (n, rows.numel(), int(rows.sum())) == (
        PROFILE64["nodes"],
        PROFILE64["edges"],
        CHECKSUM64,
    )
    A = gs.datasets.undirected_rmat(N64, E64, seed=0, chunk=150_000)  # 7 chunks, sorted ranges
    assert A.num_nodes == n and A.csc.rows.dtype == torch.int64
    assert torch.equal(A.csc.indptr, indptr) and torch.equal(A.csc.rows, rows)
    assert A.csc.eids is None and A.csc.values is None
    p = gs.datasets.degree_profile(A)
    assert {k: p[k] for k in PROFILE64} == PROFILE64
    assert p["mean"] == PROFILE64["edges"] / PROFILE64["nodes"]


@pytest.mark.parametrize("store", [True, False])
@pytest.mark.parametrize("chunk", [20_000, 4_099, 257])
def test_chunking_and_keeping_the_drawn_pairs_never_change_the_graph(store, chunk):
    n, indptr, rows = reference_csc(3000, 20_000, seed=1)
    csc = undirected._undirected_csc(
        3000, 20_000, 1, 0.57, 0.19, 0.19, torch.device("cpu"), chunk, False, store=store
    )
    assert csc.num_nodes == n
    assert torch.equal(csc.indptr, indptr) and torch.equal(csc.rows, rows)


@pytest.mark.parametrize("args", [(500, 3000, 7, 0.45, 0.25, 0.15), (1, 5, 0, 0.57, 0.19, 0.19)])
def test_other_quadrant_probabilities_draw_rmats_edges(args):
    """Every edge of ``rmat`` with the same arguments, once in each direction."""
    n, m, seed, a, b, c = args
    A = gs.datasets.undirected_rmat(n, m, seed, a=a, b=b, c=c, chunk=700)
    src, dst, _ = gs.datasets.rmat(n, m, seed, a=a, b=b, c=c).edges()
    ids = torch.unique(torch.cat([src, dst]))
    s, d = torch.searchsorted(ids, src), torch.searchsorted(ids, dst)
    k = ids.numel()
    want = torch.sort(torch.cat([d * k + s, s * k + d])).values
    assert A.num_nodes == k and torch.equal(A.csc.edge_cols() * k + A.csc.rows, want)


def test_no_edges_no_nodes():
    A = gs.datasets.undirected_rmat(10, 0)
    assert A.num_nodes == 0 and A.num_edges == 0 and A.csc.indptr.tolist() == [0]


def test_undirected_both_directions_self_loops_twice_no_isolated_node(small):
    csc = small.csc
    n = small.num_nodes
    cols = csc.edge_cols()
    key = cols * n + csc.rows
    assert torch.equal(torch.sort(key).values, key)  # every column's rows ascending
    assert torch.equal(torch.sort(csc.rows * n + cols).values, key)  # symmetric, repeats too
    assert int(csc.degrees().min()) >= 1  # isolated nodes dropped
    src, dst, _ = gs.datasets.rmat(3000, 20_000, seed=1).edges()
    loops = int((src == dst).sum())
    assert loops > 0 and int((csc.rows == cols).sum()) == 2 * loops  # each one stored twice
    assert small.num_edges == 40_000 and n == torch.unique(torch.cat([src, dst])).numel()


def test_degree_profile_is_the_nearest_rank_quantiles(small):
    deg = small.csc.degrees().numpy()
    p = gs.datasets.degree_profile(small, fanouts=(1, 5, 25))
    median, p99 = np.percentile(deg, [50, 99], method="inverted_cdf")
    assert (p["median"], p["p99"], p["max"]) == (int(median), int(p99), int(deg.max()))
    assert p["mean"] == pytest.approx(deg.mean(), rel=1e-12)
    assert p["below"] == {k: float((deg < k).mean()) for k in (1, 5, 25)}
    sub = small[:, torch.tensor([0, 1, 2])]
    assert gs.datasets.degree_profile(sub)["nodes"] == 3


def test_uniform_seeds_are_distinct_uniform_and_pinned():
    s = gs.datasets.uniform_seeds(100_000, 20_000, seed=0)
    assert s.dtype == torch.int64 and s.unique().numel() == 20_000
    assert int(s.min()) >= 0 and int(s.max()) < 100_000
    assert torch.equal(s[:500], gs.datasets.uniform_seeds(100_000, 500, seed=0))  # a prefix
    assert not torch.equal(s, gs.datasets.uniform_seeds(100_000, 20_000, seed=1))
    counts = torch.bincount(s // 1000, minlength=100).numpy()  # 200 expected per bin
    p = stats.chisquare(counts).pvalue
    assert p > 1e-3, p
    # the sample's order is random too: the first half's mean id is the population's
    half = s[:10_000].double()
    z = (half.mean() - 49_999.5) / (100_000 / math.sqrt(12) / math.sqrt(10_000))
    assert abs(float(z)) < 4


def test_anchor_graphs_and_their_seeds(monkeypatch, tmp_path):
    assert gs.datasets.ANCHOR_GRAPHS["papers-like"][1:4] == (111_059_956, 1_615_685_872, 1_207_179)
    assert gs.datasets.ANCHOR_GRAPHS["products-like"][1:4] == (2_449_029, 61_859_140, 196_608)
    tiny = gs.datasets.AnchorGraph("tiny-like", 3000, 20_000, 500, {})
    monkeypatch.setitem(gs.datasets.ANCHOR_GRAPHS, "tiny-like", tiny)
    A, seeds = gs.datasets.anchor_graph("tiny-like", cache=tmp_path, progress=False)
    n, indptr, rows = reference_csc(3000, 20_000, seed=0)
    assert torch.equal(A.csc.indptr, indptr) and torch.equal(A.csc.rows, rows)
    assert torch.equal(seeds, gs.datasets.uniform_seeds(n, 500, seed=0))
    assert torch.equal(gs.datasets.anchor_seeds("tiny-like", A), seeds)
    header = json.loads((tmp_path / "tiny-like" / "header.json").read_text())
    assert header["generator"]["num_edges"] == 20_000 and header["profile"]["nodes"] == n


def test_cache_round_trips_and_detects_stale_parameters(tmp_path, monkeypatch):
    folder = tmp_path / "g"
    A = gs.datasets.undirected_rmat(3000, 20_000, seed=1, cache=folder)
    header = json.loads((folder / "header.json").read_text())
    assert header["arrays"]["rows"]["dtype"] == "int32"
    assert header["arrays"]["indptr"]["dtype"] == "int64"
    assert header["generator"] == {
        "name": "gsample.datasets.undirected_rmat",
        "version": undirected.GENERATOR_VERSION,
        "num_nodes": 3000,
        "num_edges": 20_000,
        "seed": 1,
        "a": 0.57,
        "b": 0.19,
        "c": 0.19,
    }
    assert np.load(folder / "rows.npy").dtype == np.int32

    def no_build(*args, **kwargs):
        raise AssertionError("built again instead of read from the cache")

    with monkeypatch.context() as m:
        m.setattr(undirected, "_undirected_csc", no_build)
        B = gs.datasets.undirected_rmat(3000, 20_000, seed=1, cache=folder)
    assert torch.equal(B.csc.indptr, A.csc.indptr) and torch.equal(B.csc.rows, A.csc.rows)
    assert B.csc.rows.dtype == torch.int64
    # other parameters: stale, rebuilt with a warning naming what differs
    with pytest.warns(UserWarning, match=r"stale graph \(seed 1 -> 2\)"):
        C = gs.datasets.undirected_rmat(3000, 20_000, seed=2, cache=folder)
    assert json.loads((folder / "header.json").read_text())["generator"]["seed"] == 2
    assert torch.equal(C.csc.rows, gs.datasets.undirected_rmat(3000, 20_000, seed=2).csc.rows)
    # an older generator's copy is stale too
    header = json.loads((folder / "header.json").read_text())
    header["generator"]["version"] = 0
    (folder / "header.json").write_text(json.dumps(header))
    with pytest.warns(UserWarning, match=r"version 0 -> 1"):
        gs.datasets.undirected_rmat(3000, 20_000, seed=2, cache=folder)
    # a truncated file (not the size its header names) is no cache: rebuilt silently
    np.save(folder / "rows.npy", np.zeros(5, np.int32))
    D = gs.datasets.undirected_rmat(3000, 20_000, seed=2, cache=folder)
    assert torch.equal(D.csc.rows, C.csc.rows)
    assert np.load(folder / "rows.npy").shape == (40_000,)


def test_load_csc_maps_the_files_and_sorts_only_unsorted_columns(tmp_path, small):
    ip, rw = small.csc.indptr.numpy(), small.csc.rows.numpy()
    np.save(tmp_path / "ip.npy", ip)
    np.save(tmp_path / "rw64.npy", rw)
    A = gs.datasets.load_csc(tmp_path / "ip.npy", tmp_path / "rw64.npy")
    assert A.csc.eids is None and torch.equal(A.csc.rows, small.csc.rows)
    # int64 files on the CPU are used in place (copy-on-write maps of the files)
    assert mapped_from(A.csc.rows, tmp_path / "rw64.npy")
    assert mapped_from(A.csc.indptr, tmp_path / "ip.npy")
    # rows shuffled within their columns, as raw int32 behind a numpy.memmap
    g = torch.Generator().manual_seed(0)
    order = torch.argsort(small.csc.edge_cols() * 2**20 + torch.randperm(rw.size, generator=g))
    shuffled = small.csc.rows[order]
    raw = np.memmap(tmp_path / "rows.bin", dtype=np.int32, mode="w+", shape=(rw.size,))
    raw[:] = shuffled.numpy()
    raw.flush()
    want = gs.Matrix.from_csc(small.csc.indptr, shuffled)
    for chunk in (1 << 20, 1000):
        B = gs.datasets.load_csc(
            ip, np.memmap(tmp_path / "rows.bin", dtype=np.int32, mode="r"), chunk=chunk
        )
        for x, y in zip(B.edges(), want.edges()):
            assert torch.equal(x, y)  # the same edge ids as from_csc's
    assert np.array_equal(np.memmap(tmp_path / "rows.bin", dtype=np.int32), shuffled.numpy())


def test_save_csc_keeps_edge_ids_and_values(tmp_path):
    ei = torch.tensor([[2, 0, 1, 2, 0], [1, 1, 0, 0, 2]])
    A = gs.Matrix.from_edge_index(ei, num_nodes=3, weight=torch.tensor([1.0, 2, 3, 4, 5]))
    B = gs.datasets.load_csc(gs.datasets.save_csc(A, tmp_path / "w"))
    for x, y in zip(A.edges(), B.edges()):
        assert torch.equal(x, y)
    assert torch.equal(A.values, B.values)


@pytest.mark.parametrize("chunk", [10_000, 999, 64])
def test_load_coo_equals_from_edge_index(tmp_path, chunk):
    g = torch.Generator().manual_seed(chunk)
    ei = torch.randint(0, 700, (2, 10_000), generator=g)
    np.save(tmp_path / "ei.npy", ei.numpy().astype(np.int32))
    want = gs.Matrix.from_edge_index(ei, num_nodes=700)
    got = gs.datasets.load_coo(tmp_path / "ei.npy", num_nodes=700, chunk=chunk)
    for x, y in zip(got.edges(), want.edges()):
        assert torch.equal(x, y)
    src, dst = ei.numpy().copy()
    np.save(tmp_path / "s.npy", src)
    np.save(tmp_path / "d.npy", dst)
    bare = gs.datasets.load_coo(tmp_path / "s.npy", tmp_path / "d.npy", edge_ids=False, chunk=chunk)
    assert bare.num_nodes == int(ei.max()) + 1 and bare.csc.eids is None
    assert torch.equal(bare.csc.rows, want.csc.rows)
    assert torch.equal(bare.csc.indptr, want.csc.indptr[: bare.num_nodes + 1])


@pytest.mark.parametrize("edge_ids", [True, False])
@pytest.mark.parametrize("chunk", [10_000, 999, 64])
def test_load_coo_streamed_a_chunk_at_a_time_equals_from_edge_index(chunk, edge_ids):
    """The build a GPU runs (count, place, sort ranges), here into host memory."""
    g = torch.Generator().manual_seed(chunk)
    ei = torch.randint(0, 700, (2, 10_000), generator=g)
    want = gs.Matrix.from_edge_index(ei, num_nodes=700)
    arr = ei.numpy().astype(np.int32)
    target = mapped.Target(torch.device("cpu"), "device", 0)
    csc = coo._coo_streamed(arr[0], arr[1], 700, target, edge_ids, chunk, False)
    assert torch.equal(csc.indptr, want.csc.indptr) and torch.equal(csc.rows, want.csc.rows)
    assert torch.equal(csc.eids, want.csc.eids) if edge_ids else csc.eids is None


def test_load_coo_reads_any_integer_file_as_from_edge_index(tmp_path):
    g = torch.Generator().manual_seed(3)
    ei = torch.randint(0, 300, (2, 5000), generator=g)
    want = gs.Matrix.from_edge_index(ei, num_nodes=300)
    # read in place (int16, uint8), or widened first (unsigned over 8 bits, big-endian)
    for dtype in (np.int16, np.uint8, np.uint16, np.uint32, np.dtype(">i4")):
        arr = (ei.numpy() % (200 if dtype == np.uint8 else 300)).astype(dtype)
        ref = gs.Matrix.from_edge_index(torch.from_numpy(arr.astype(np.int64)), num_nodes=300)
        np.save(tmp_path / "ei.npy", arr)
        got = gs.datasets.load_coo(tmp_path / "ei.npy", num_nodes=300)
        for x, y in zip(got.edges(), ref.edges()):
            assert torch.equal(x, y)
    # a read-only map of a raw file is read in place, without torch's not-writable warning
    raw = np.memmap(tmp_path / "ei.bin", dtype=np.int64, mode="w+", shape=(2, 5000))
    raw[:] = ei.numpy()
    raw.flush()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = gs.datasets.load_coo(np.memmap(tmp_path / "ei.bin", np.int64, "r", shape=(2, 5000)))
    for x, y in zip(got.edges(), want.edges()):
        assert torch.equal(x, y)
    # edges already in CSC order keep no ids, as from_edge_index: they are the CSC positions
    src, dst, _ = want.edges()
    np.save(tmp_path / "sorted.npy", torch.stack([src, dst]).numpy())
    got = gs.datasets.load_coo(tmp_path / "sorted.npy", num_nodes=300)
    assert got.csc.eids is None and torch.equal(got.csc.rows, want.csc.rows)


def test_bad_arguments_are_named(tmp_path):
    rmat = gs.datasets.undirected_rmat
    cases = [
        (lambda: rmat(10.5, 10), TypeError, r"^num_nodes: "),
        (lambda: rmat(0, 10), ValueError, r"^num_nodes: "),
        (lambda: rmat(10, -1), ValueError, r"^num_edges: "),
        (lambda: rmat(10, 10, a=0.6, b=0.3, c=0.3), ValueError, r"^a, b, c: "),
        (lambda: rmat(10, 10, seed="0"), TypeError, r"^seed: "),
        (lambda: rmat(10, 10, chunk=0), ValueError, r"^chunk: "),
        (lambda: rmat(10, 10, progress=1), TypeError, r"^progress: "),
        (lambda: rmat(10, 10, cache=5), TypeError, r"^cache: "),
        (lambda: rmat(10, 10, device="tpu"), ValueError, r"^device: "),
        (lambda: rmat(10, 2**62), ValueError, r"^num_edges: "),
        (lambda: gs.datasets.anchor_graph("arxiv-like"), ValueError, r"^name: "),
        (lambda: gs.datasets.anchor_graph(3), TypeError, r"^name: "),
        (
            lambda: gs.datasets.anchor_graph("papers-like", placement="gpu"),
            ValueError,
            "^placement",
        ),
        (lambda: gs.datasets.anchor_seeds("products-like", None), TypeError, r"^A: "),
        (lambda: gs.datasets.uniform_seeds(5, 6), ValueError, r"^count: "),
        (lambda: gs.datasets.degree_profile(torch.zeros(3)), TypeError, r"^A: "),
        (lambda: gs.datasets.degree_profile(rmat(10, 10), (-1,)), ValueError, r"^fanouts: "),
        (
            lambda: gs.datasets.load_csc(tmp_path / "none.npy", tmp_path / "r.npy"),
            FileNotFoundError,
            r"^indptr: ",
        ),
        (lambda: gs.datasets.load_csc(tmp_path), ValueError, r"^indptr: .* holds no complete"),
        (lambda: gs.datasets.load_csc(np.array([0, 2]), np.array([0.5, 1])), TypeError, r"^rows: "),
        (
            lambda: gs.datasets.load_csc(np.array([1, 2]), np.array([0, 0])),
            ValueError,
            r"^indptr: must start at 0",
        ),
        (
            lambda: gs.datasets.load_csc(np.array([0, 2, 1, 2]), np.array([0, 0])),
            ValueError,
            r"^indptr: must be non-decreasing",
        ),
        (
            lambda: gs.datasets.load_csc(np.array([0, 1, 2]), np.array([0, 2])),
            IndexError,
            r"^rows: node id 2 is out of range",
        ),
        (
            lambda: gs.datasets.load_csc(np.array([0, 1]), np.array([0]), num_nodes=2),
            ValueError,
            r"^num_nodes: ",
        ),
        (
            lambda: gs.datasets.load_csc(np.array([0, 1]), np.array([0]), placement="uva"),
            ValueError,
            r"^placement: 'uva'",
        ),
        (lambda: gs.datasets.load_coo(np.zeros((3, 4), np.int64)), ValueError, r"^edge_index: "),
        (
            lambda: gs.datasets.load_coo(np.array([[0, 1], [1, 5]]), num_nodes=3),
            IndexError,
            r"^edge_index\[1\] \(destinations\): node id 5",
        ),
        (lambda: gs.datasets.load_coo(np.array([0, 1]), np.array([1])), ValueError, r"^dst: "),
        (lambda: gs.datasets.load_coo([[0], [1]]), TypeError, r"^edge_index: "),
        (
            lambda: gs.datasets.save_csc(rmat(10, 10)[:, torch.tensor([0])], tmp_path),
            ValueError,
            r"^A: a sub-matrix",
        ),
    ]
    for fn, exc, match in cases:
        with pytest.raises(exc, match=match):
            fn()


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_builds_the_same_graph_and_products_like_profile():
    cpu = gs.datasets.undirected_rmat(N64, E64, chunk=150_000)
    for store in (True, False):
        csc = undirected._undirected_csc(
            N64, E64, 0, 0.57, 0.19, 0.19, torch.device("cuda"), 100_000, False, store=store
        )
        assert torch.equal(csc.indptr.cpu(), cpu.csc.indptr)
        assert torch.equal(csc.rows.cpu(), cpu.csc.rows)
    A, seeds = gs.datasets.anchor_graph("products-like", device="cuda", progress=False)
    p = gs.datasets.degree_profile(A)
    for k, v in gs.datasets.ANCHOR_GRAPHS["products-like"].profile.items():
        assert abs(p[k] - v) <= 0.05 * v, (k, p[k], v)
    assert seeds.is_cuda and seeds.numel() == 196_608
    assert torch.equal(seeds.cpu(), gs.datasets.uniform_seeds(A.num_nodes, 196_608))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_loaders_place_on_the_device_and_in_pinned_memory(tmp_path, small):
    folder = gs.datasets.save_csc(small, tmp_path / "g")
    g = torch.Generator().manual_seed(0)
    ei = torch.randint(0, 700, (2, 10_000), generator=g)
    np.save(tmp_path / "ei.npy", ei.numpy())
    want = gs.Matrix.from_edge_index(ei, num_nodes=700)
    for placement in ("device", "uva"):
        A = gs.datasets.load_csc(folder, device="cuda", placement=placement, chunk=5000)
        assert A.placement == placement and A.device.type == "cuda"
        assert torch.equal(A.csc.rows.cpu(), small.csc.rows)
        B = gs.datasets.load_coo(
            tmp_path / "ei.npy", num_nodes=700, device="cuda", placement=placement, chunk=999
        )
        assert B.placement == placement
        for x, y in zip(B.edges(), want.edges()):
            assert torch.equal(x.cpu(), y)
        s = A[:, torch.arange(64, device="cuda")].individual_sample(5)
        assert s.num_edges > 0
