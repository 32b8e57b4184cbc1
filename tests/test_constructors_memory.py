"""The graph constructors built within memory (``Matrix.from_edge_index`` / ``from_csc`` a
range of columns at a time, ``read_snap`` a block of lines at a time) against a brute-force
reference written here (numpy's lexsort of every edge by column, row, input position): the
same ``indptr``, rows, values and edge ids, on random inputs with repeats, self-loops, empty
columns, partly sorted CSCs and narrow dtypes, with the small ranges and blocks that take
every multi-range path; edge ids stored exactly when they are not the identity; bad input
refused naming the argument; and the peak memory beyond the inputs within twice the graph
(``benchmarks/constructors_memory.py``, in a subprocess; on a GPU, torch's allocator)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import gsample as gs
from gsample.matrix import convert

ROOT = Path(__file__).resolve().parent.parent


# ----------------------------------------------------------------------------- the reference
def brute(src, dst, n, weight=None):
    """``(indptr, rows, values, perm)`` of edges ``src -> dst``: every edge sorted at once by
    (column, row, input position); ``perm[i]`` is the input position of stored edge ``i``."""
    s = np.asarray(src, dtype=np.int64)
    d = np.asarray(dst, dtype=np.int64)
    perm = np.lexsort((np.arange(s.size), s, d))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(d, minlength=n), out=indptr[1:])
    values = None if weight is None else np.asarray(weight)[perm]
    return indptr, s[perm], values, perm


def check(A, ref, n):
    """``A`` is the reference graph: structure, values, edge ids; ids stored iff needed."""
    indptr, rows, values, perm = ref
    c = A.csc
    assert A.num_nodes == n and c.indptr.dtype == torch.int64 and c.rows.dtype == torch.int64
    assert c.indptr.numpy().tolist() == indptr.tolist()
    assert c.rows.numpy().tolist() == rows.tolist()
    assert c.eid_tensor().numpy().tolist() == perm.tolist()
    assert (c.eids is None) == bool(np.array_equal(perm, np.arange(perm.size)))
    if values is None:
        assert c.values is None
    else:
        assert np.array_equal(c.values.numpy(), values)


def draw(rng, n, e, hot):
    """Edges over ``n`` nodes whose ids fall below ``hot`` (the rest: isolated nodes and
    empty columns); a small ``hot`` gives many repeats and self-loops."""
    hi = max(min(hot, n), 1)
    src = rng.integers(0, hi, e)
    dst = rng.integers(0, hi, e)
    loops = rng.random(e) < 0.1  # self-loops on top of the chance ones
    dst[loops] = src[loops]
    return src, dst


@pytest.fixture(params=["one range", "small ranges"])
def ranges(request, monkeypatch):
    """The construction in one range, or in ranges (and bucketing blocks) of a few edges."""
    if request.param == "small ranges":
        monkeypatch.setattr(convert, "MIN_CHUNK", 5)
        monkeypatch.setattr(convert, "PIECES", 3)
    return request.param


SIZES = [  # (nodes, edges, hot)
    (1, 0, 1),
    (1, 9, 1),
    (4, 60, 4),
    (30, 200, 6),
    (60, 500, 45),
    (500, 300, 500),
    (2000, 3000, 1500),
]


# ----------------------------------------------------------------------------- from_edge_index
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16])
@pytest.mark.parametrize("n,e,hot", SIZES)
def test_from_edge_index_is_the_lexsort(n, e, hot, dtype, ranges):
    rng = np.random.default_rng(n * 1009 + e)
    src, dst = draw(rng, n, e, hot)
    ei = torch.from_numpy(np.stack([src, dst])).to(dtype)
    kept = ei.clone()
    w = torch.from_numpy(rng.random(e).astype(np.float32))
    t = torch.from_numpy(rng.integers(0, 10**9, e))
    A = gs.Matrix.from_edge_index(ei, num_nodes=n, weight=w, edge_time=t)
    check(A, brute(src, dst, n, w.numpy()), n)
    assert torch.equal(ei, kept), "the caller's edge_index is left as it was"
    # the times are by edge id: each stored edge meets its own input line's
    r, c, eid = A.edges()
    assert torch.equal(r, torch.from_numpy(src)[eid]) and torch.equal(c, torch.from_numpy(dst)[eid])
    assert torch.equal(A.edge_time, t)
    check(gs.Matrix.from_edge_index(ei, num_nodes=n), brute(src, dst, n), n)


@pytest.mark.parametrize("order", ["csc", "by column", "by column, one column reversed"])
def test_edges_already_in_order(order, ranges):
    """Edges in CSC order keep no edge ids (the identity); by column but with a column's
    rows out of order: that column sorted, the ids kept."""
    rng = np.random.default_rng(3)
    n = 90
    src, dst = draw(rng, n, 1500, 70)
    by = np.lexsort((src, dst)) if order == "csc" else np.argsort(dst, kind="stable")
    src, dst = src[by], dst[by]
    if order.endswith("reversed"):
        col = int(np.bincount(dst).argmax())
        at = np.flatnonzero(dst == col)
        src[at] = np.sort(src[at])[::-1]
    A = gs.Matrix.from_edge_index(torch.from_numpy(np.stack([src, dst])), num_nodes=n)
    ref = brute(src, dst, n)
    check(A, ref, n)
    assert (A.csc.eids is None) == (order == "csc")


# ----------------------------------------------------------------------------- from_csc
def csc_input(rng, n, e, hot, unsorted_share):
    """``(indptr, rows, dst)``: a CSC whose columns are in row order but for about
    ``unsorted_share`` of them (their rows in a random order)."""
    src, dst = draw(rng, n, e, hot)
    by = np.lexsort((src, dst))
    src, dst = src[by], dst[by]
    shuffle = rng.random(n) < unsorted_share
    noise = np.where(shuffle[dst], rng.random(e), np.arange(e) / max(e, 1))
    by = np.lexsort((noise, dst))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    return indptr, src[by], dst


@pytest.mark.parametrize("share", [0.0, 0.05, 0.5, 1.0])
@pytest.mark.parametrize("n,e,hot", SIZES)
def test_from_csc_is_the_lexsort(n, e, hot, share, ranges):
    rng = np.random.default_rng(n * 31 + e + int(100 * share))
    indptr, rows, dst = csc_input(rng, n, e, hot, share)
    w = rng.random(e)
    ptr, idx = torch.tensor(indptr), torch.tensor(rows)  # copies: changed below
    A = gs.Matrix.from_csc(ptr, idx, weight=torch.from_numpy(w))
    check(A, brute(rows, dst, n, w), n)
    # int32 offsets and rows give the same graph
    ptr32, idx32 = ptr.to(torch.int32), idx.to(torch.int32)
    check(gs.Matrix.from_csc(ptr32, idx32), brute(rows, dst, n), n)
    assert torch.equal(idx32.long(), idx) and torch.equal(ptr32.long(), ptr)
    # the inputs are not aliased: changing them afterwards changes nothing
    ptr.zero_()
    idx.fill_(n - 1)
    check(A, brute(rows, dst, n, w), n)


def test_from_csc_descents_between_columns_are_not_unsorted(ranges, monkeypatch):
    """Rows falling from one column's last edge to the next column's first (or across an
    empty column, or a one-edge column) are in order: nothing is sorted, no ids kept."""
    indptr = torch.tensor([0, 3, 3, 4, 7, 9, 9])
    rows = torch.tensor([3, 4, 5, 2, 0, 0, 5, 1, 3])
    calls = []
    real = torch.sort
    monkeypatch.setattr(torch, "sort", lambda *a, **k: calls.append(1) or real(*a, **k))
    A = gs.Matrix.from_csc(indptr, rows)
    monkeypatch.undo()
    assert calls == [] and A.csc.eids is None
    assert torch.equal(A.csc.rows, rows) and torch.equal(A.csc.indptr, indptr)
    dst = np.repeat(np.arange(6), np.diff(indptr.numpy()))
    check(A, brute(rows.numpy(), dst, 6), 6)


def test_from_csc_a_column_larger_than_a_range(monkeypatch):
    """One unsorted column holding more edges than a range: sorted whole, as one range."""
    monkeypatch.setattr(convert, "MIN_CHUNK", 4)
    monkeypatch.setattr(convert, "PIECES", 8)
    rng = np.random.default_rng(8)
    sizes = [0, 3, 40, 1, 0, 25, 2]
    indptr = np.concatenate([[0], np.cumsum(sizes)])
    rows = rng.integers(0, 7, indptr[-1])
    rows[3:43] = rng.permutation(40) % 7  # the big column, with repeats, unsorted
    dst = np.repeat(np.arange(7), sizes)
    A = gs.Matrix.from_csc(torch.from_numpy(indptr), torch.from_numpy(rows))
    check(A, brute(rows, dst, 7), 7)


# ----------------------------------------------------------------------------- read_snap
def write_snap(path, src, dst, times=None):
    lines = ["# FromNodeId\tToNodeId\n"]
    for i, (u, v) in enumerate(zip(src.tolist(), dst.tolist())):
        tail = "" if times is None else f"\t{times[i]}"
        lines.append(f"{u}\t{v}{tail}\n")
        if i % 50 == 7:
            lines.append("# a comment between edges\n")
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize("undirected", [False, True])
@pytest.mark.parametrize("relabel", [False, True])
def test_read_snap_is_the_lexsort(tmp_path, undirected, relabel, ranges, monkeypatch):
    monkeypatch.setattr(convert, "PIECE", 7)  # the ids gathered in many pieces
    rng = np.random.default_rng(5)
    src, dst = draw(rng, 300, 900, 120)
    src, dst = src * 3 + 11, dst * 3 + 11  # gaps in the ids: relabelling matters
    times = rng.integers(0, 10**6, 900)
    p = write_snap(tmp_path / "g.txt", src, dst, times)
    A = gs.datasets.read_snap(p, relabel=relabel, undirected=undirected)
    s, d, t = src, dst, times
    if relabel:
        uniq = np.unique(np.concatenate([s, d]))
        s, d = np.searchsorted(uniq, s), np.searchsorted(uniq, d)
    if undirected:  # edge e reversed is edge E + e
        s, d, t = np.concatenate([s, d]), np.concatenate([d, s]), np.concatenate([t, t])
    n = int(max(s.max(), d.max())) + 1
    check(A, brute(s, d, n), n)
    assert A.edge_time.numpy().tolist() == t.tolist()


def test_read_edge_list_streams_in_blocks(tmp_path):
    """A block of a few lines at a time reads the file the whole-file parse reads."""
    rng = np.random.default_rng(6)
    src, dst = draw(rng, 50, 400, 50)
    p = write_snap(tmp_path / "g.txt", src, dst)
    for block in (1, 64, 1 << 20):
        ei, t, _ = convert.read_edge_list(str(p), block=block)
        assert t is None and ei.dtype == torch.int32
        assert ei.numpy().tolist() == [src.tolist(), dst.tolist()]


# ----------------------------------------------------------------------------- bad input
def test_bad_input_names_the_argument(tmp_path):
    ei = torch.tensor([[0, 1, 2], [1, 2, 0]])
    fe, fc = gs.Matrix.from_edge_index, gs.Matrix.from_csc
    with pytest.raises(IndexError, match=r"edge_index\[0\] \(sources\): node id -3 is negative"):
        fe(torch.tensor([[0, -3], [1, 1]], dtype=torch.int32), num_nodes=3)
    with pytest.raises(IndexError, match=r"edge_index\[1\] \(destinations\): node id 3 is out"):
        fe(ei.flip(1) + torch.tensor([[0], [1]]), num_nodes=3)
    with pytest.raises(IndexError, match=r"edge_index\[0\].*node id 2 is out of range"):
        fe(ei, num_nodes=2)
    with pytest.raises(ValueError, match=r"edge_index: expected shape \(2, E\)"):
        fe(torch.zeros(3, 4, dtype=torch.int64))
    with pytest.raises(TypeError, match="edge_index: must be an integer tensor"):
        fe(ei.float())
    with pytest.raises(ValueError, match=r"weight: expected one value per edge \(shape \(3,\)\)"):
        fe(ei, weight=torch.ones(4))
    with pytest.raises(ValueError, match=r"edge_time: expected one time per edge id"):
        fe(ei, edge_time=torch.ones(2))
    with pytest.raises(ValueError, match="num_nodes: must be >= 0"):
        fe(ei, num_nodes=-1)
    ptr = torch.tensor([0, 1, 3])
    with pytest.raises(IndexError, match="indices: node id -1 is negative"):
        fc(ptr, torch.tensor([0, -1, 1]))
    with pytest.raises(IndexError, match="indices: node id 2 is out of range"):
        fc(ptr, torch.tensor([0, 2, 1], dtype=torch.int32))
    with pytest.raises(ValueError, match=r"indptr: must start at 0 and end at len\(indices\)"):
        fc(ptr, torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="indptr: must be non-decreasing"):
        fc(torch.tensor([0, 2, 1, 3]), torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="weight: expected one value per edge"):
        fc(ptr, torch.tensor([0, 1, 1]), weight=torch.ones(2))
    with pytest.raises(ValueError, match="num_nodes: 3 does not match"):
        fc(ptr, torch.tensor([0, 1, 1]), num_nodes=3)
    p = write_snap(tmp_path / "g.txt", np.array([0, 5]), np.array([1, 2]))
    with pytest.raises(ValueError, match=r"num_nodes: 5 is too few for .*largest node id is 5"):
        gs.datasets.read_snap(p, num_nodes=5)
    with pytest.raises(ValueError, match="num_nodes: must be >= 0"):
        gs.datasets.read_snap(p, num_nodes=-2)
    q = write_snap(tmp_path / "h.txt", np.array([0, -4]), np.array([1, 2]))
    with pytest.raises(ValueError, match=r"path: .*h.txt has a negative node id \(-4\)"):
        gs.datasets.read_snap(q)
    assert gs.datasets.read_snap(q, relabel=True).num_nodes == 4  # ids ranked: -4 is id 0


# ----------------------------------------------------------------------------- memory
def test_the_benchmark_measures_within_twice_the_graph(tmp_path):
    """Each constructor's peak beyond its inputs (resident memory, read by the kernel) stays
    within twice the graph it returns. The scratch follows the size of a range, which is
    :data:`convert.MIN_CHUNK` edges at least (at most a sixteenth of the graph above 16
    times that): the benchmark's ``--min-chunk`` makes a small graph's ranges the share of
    it a large graph's are. The graph's bytes: rows and edge ids (none in CSC order)."""
    cases = ["edge_index_int32", "csc_partly"]
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/constructors_memory.py"), "--json"]
        + ["--edges", "3000000", "--nodes", "200000", "--min-chunk", str(1 << 17)]
        + ["--threads", "1", "--folder", str(tmp_path), "--cases", *cases],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    got = {r["case"]: r for r in map(json.loads, out.stdout.splitlines())}
    assert set(got) == set(cases) and all(r["source"] == str(ROOT) for r in got.values())
    assert got["edge_index_int32"]["graph"] == 8 * 200_001 + 16 * 3_000_000
    for r in got.values():
        assert r["eids"] and 0 < r["beyond"] <= 2 * r["graph"], r


GPU = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]


@pytest.mark.parametrize("dummy", [pytest.param(0, marks=GPU)])
def test_on_the_gpu_within_twice_the_graph_and_the_cpu_graph(dummy):
    """On a GPU: torch's peak allocation beyond the inputs within twice the graph, at a size
    of several ranges, and the graph the CPU builds, for every constructor path."""
    g = torch.Generator().manual_seed(0)
    n, e = 400_000, 40_000_000
    src = torch.randint(0, n, (e,), generator=g)
    dst = torch.randint(0, n, (e,), generator=g)

    def built(fn, *args, **kw):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        A = fn(*args, **kw)
        torch.cuda.synchronize()
        c = A.csc
        size = sum(
            t.numel() * t.element_size() for t in (c.indptr, c.rows, c.eids) if t is not None
        )
        assert torch.cuda.max_memory_allocated() - before <= 2 * size
        return c

    ei = torch.stack([src, dst]).to(torch.int32)
    want = gs.Matrix.from_edge_index(ei, num_nodes=n).csc
    got = built(gs.Matrix.from_edge_index, ei.cuda(), num_nodes=n)
    assert torch.equal(got.rows.cpu(), want.rows) and torch.equal(got.eids.cpu(), want.eids)
    by = torch.argsort(dst, stable=True)
    indptr, rows = want.indptr, src[by]  # by column, unsorted within columns
    want = gs.Matrix.from_csc(indptr, rows).csc
    got = built(gs.Matrix.from_csc, indptr.cuda(), rows.cuda())
    assert torch.equal(got.rows.cpu(), want.rows) and torch.equal(got.eids.cpu(), want.eids)
