"""The graph constructors' CSC (``Matrix.from_edge_index`` / ``from_csc``, built a range of
columns at a time within memory) against the straightforward construction they replace: the
same CSC order (the determinism contract's), values and edge ids, for every input; edge ids
stored exactly when they are not the identity."""

from pathlib import Path

import numpy as np
import pytest
import torch

import gsample as gs
from gsample.matrix import convert

ROOT = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------- the reference
def reference_csc(src, dst, num_nodes, weight=None):
    """The construction as it was: two stable argsorts (by row, then by column)."""
    src, dst = src.to(torch.int64), dst.to(torch.int64)
    perm = torch.argsort(src, stable=True)
    perm = perm[torch.argsort(dst[perm], stable=True)]
    indptr = torch.zeros(num_nodes + 1, dtype=torch.int64)
    torch.cumsum(torch.bincount(dst, minlength=num_nodes), 0, out=indptr[1:])
    return indptr, src[perm], None if weight is None else weight[perm], perm


def lexsort_csc(src, dst, num_nodes):
    """A second reference: numpy's lexsort by (column, row, position)."""
    s, d = src.numpy().astype(np.int64), dst.numpy().astype(np.int64)
    perm = np.lexsort((np.arange(s.size), s, d))
    return torch.from_numpy(s[perm]), torch.from_numpy(perm)


def assert_same(A, ref):
    indptr, rows, values, perm = ref
    c = A.csc
    assert torch.equal(c.indptr, indptr)
    assert c.rows.dtype == torch.int64 and torch.equal(c.rows, rows)
    if values is None:
        assert c.values is None
    else:
        assert c.values.dtype == values.dtype and torch.equal(c.values, values)
    assert torch.equal(c.eid_tensor(), perm)
    identity = torch.equal(perm, torch.arange(perm.numel()))
    assert (c.eids is None) == identity, "edge ids are stored exactly when not the identity"


def random_edges(g, num_nodes, num_edges, self_loops=True, hot=None):
    """Edges with repeats (a small id range), self-loops, and isolated nodes (ids above
    ``hot`` never drawn)."""
    hi = num_nodes if hot is None else hot
    src = torch.randint(0, max(hi, 1), (num_edges,), generator=g)
    dst = torch.randint(0, max(hi, 1), (num_edges,), generator=g)
    if not self_loops:
        dst = torch.where(dst == src, (dst + 1) % max(hi, 1), dst)
    return src, dst


@pytest.fixture
def small_ranges(monkeypatch):
    """Ranges of a few edges, so that small graphs take the multi-range paths."""
    monkeypatch.setattr(convert, "MIN_CHUNK", 7)
    monkeypatch.setattr(convert, "PIECES", 4)


CASES = [  # (nodes, edges, hot): hot < nodes leaves isolated nodes and empty columns
    (0, 0, None),
    (1, 0, None),
    (1, 5, None),
    (5, 0, None),
    (3, 40, None),
    (50, 400, 20),
    (200, 1000, None),
    (1000, 300, None),
    (64, 2000, 64),
]


# ----------------------------------------------------------------------------- from_edge_index
@pytest.mark.parametrize("ranges", ["one", "many"])
@pytest.mark.parametrize("n,e,hot", CASES)
def test_from_edge_index_matches_the_reference(n, e, hot, ranges, request):
    if ranges == "many":
        request.getfixturevalue("small_ranges")
    g = torch.Generator().manual_seed(n * 7919 + e)
    src, dst = random_edges(g, n, e, hot=hot)
    w = torch.rand(e, generator=g, dtype=torch.float64)
    t = torch.randint(0, 100, (e,), generator=g)
    for weight in (None, w):
        A = gs.Matrix.from_edge_index(torch.stack([src, dst]), num_nodes=n, weight=weight)
        assert_same(A, reference_csc(src, dst, n, weight))
    rows, perm = lexsort_csc(src, dst, n)
    assert torch.equal(A.csc.rows, rows) and torch.equal(A.csc.eid_tensor(), perm)
    # times are by edge id: every stored edge meets its own input line's time
    T = gs.Matrix.from_edge_index(torch.stack([src, dst]), num_nodes=n, edge_time=t)
    r, c, eid = T.edges()
    assert torch.equal(r, src[eid]) and torch.equal(c, dst[eid])
    assert torch.equal(T.edge_time[eid], t[eid]) and T.edge_time is not None


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.uint8])
def test_narrow_edge_index_gives_the_int64_graph(dtype, small_ranges):
    g = torch.Generator().manual_seed(5)
    src, dst = random_edges(g, 100, 700)
    A = gs.Matrix.from_edge_index(torch.stack([src, dst]).to(dtype), num_nodes=120)
    assert_same(A, reference_csc(src, dst, 120))


@pytest.mark.parametrize("ranges", ["one", "many"])
def test_edges_in_csc_order_keep_no_edge_ids(ranges, request):
    if ranges == "many":
        request.getfixturevalue("small_ranges")
    g = torch.Generator().manual_seed(11)
    src, dst = random_edges(g, 80, 900, hot=60)
    w = torch.rand(900, generator=g)
    order = torch.from_numpy(np.lexsort((src.numpy(), dst.numpy())))
    s, d = src[order], dst[order]
    A = gs.Matrix.from_edge_index(torch.stack([s, d]), num_nodes=80, weight=w[order])
    assert A.csc.eids is None
    assert_same(A, reference_csc(s, d, 80, w[order]))
    # the caller's tensors are copied, not aliased
    ei = torch.stack([s, d])
    B = gs.Matrix.from_edge_index(ei, num_nodes=80)
    ei[0].zero_()
    assert torch.equal(B.csc.rows, s)
    # by column but not by row within one column: that column sorted, ids kept
    s2 = s.clone()
    at = (d == d[500]).nonzero().squeeze(1)
    assert int(torch.unique(s[at]).numel()) > 1
    s2[at] = s2[at].flip(0)
    C = gs.Matrix.from_edge_index(torch.stack([s2, d]), num_nodes=80)
    assert C.csc.eids is not None
    assert_same(C, reference_csc(s2, d, 80))


def test_ranges_split_by_the_sort_keys_span(monkeypatch, small_ranges):
    """Sort keys (column offset, row) stay within 62 bits: a graph with more nodes than that
    allows sorts fewer columns at a time (forced here by a smaller span)."""
    real = convert._key_bits
    monkeypatch.setattr(convert, "_key_bits", lambda n: (real(n)[0], 3))
    g = torch.Generator().manual_seed(2)
    src, dst = random_edges(g, 40, 600)
    assert_same(gs.Matrix.from_edge_index(torch.stack([src, dst]), 40), reference_csc(src, dst, 40))
    indptr, rows, _, _ = reference_csc(src, dst, 40)
    # the rows shuffled within their columns
    by_col = torch.repeat_interleave(torch.arange(40), indptr[1:] - indptr[:-1])
    order = torch.from_numpy(np.lexsort((np.random.default_rng(0).random(600), by_col.numpy())))
    shuffled = rows[order]
    A = gs.Matrix.from_csc(indptr, shuffled)
    assert_same(A, reference_csc(shuffled, by_col, 40))


# ----------------------------------------------------------------------------- from_csc
def random_csc(g, n, e, hot=None, sorted_share=0.5):
    """A CSC whose columns are sorted with probability ``sorted_share``, else shuffled."""
    src, dst = random_edges(g, n, e, hot=hot)
    _, rows, _, _ = reference_csc(src, dst, n)
    d = torch.sort(dst).values
    shuffle = torch.rand(n, generator=g) >= sorted_share
    noise = torch.rand(e, generator=g).numpy()
    # unsorted columns: rows in a random order; sorted ones keep theirs
    keyed = np.where(shuffle[d].numpy(), noise, np.arange(e) / max(e, 1))
    order = torch.from_numpy(np.lexsort((keyed, d.numpy())))
    indptr = torch.zeros(n + 1, dtype=torch.int64)
    torch.cumsum(torch.bincount(d, minlength=n), 0, out=indptr[1:])
    return indptr, rows[order], d


@pytest.mark.parametrize("ranges", ["one", "many"])
@pytest.mark.parametrize("share", [0.0, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("n,e,hot", CASES)
def test_from_csc_matches_the_reference(n, e, hot, share, ranges, request):
    if ranges == "many":
        request.getfixturevalue("small_ranges")
    g = torch.Generator().manual_seed(n * 31 + e + int(share * 10))
    indptr, rows, by_col = random_csc(g, n, e, hot, share)
    w = torch.rand(e, generator=g)
    t = torch.arange(e) * 3
    for weight in (None, w):
        A = gs.Matrix.from_csc(indptr, rows, weight=weight, edge_time=t)
        assert_same(A, reference_csc(rows, by_col, n, weight))
        assert A.edge_time is t or torch.equal(A.edge_time, t)
    unsorted = any(
        b - a > 1 and bool((rows[a + 1 : b] < rows[a : b - 1]).any())
        for a, b in zip(indptr[:-1].tolist(), indptr[1:].tolist())
    )
    assert (A.csc.eids is not None) == unsorted
    ptr = indptr.clone()
    B = gs.Matrix.from_csc(ptr, rows.to(torch.int32))
    assert_same(B, reference_csc(rows, by_col, n))
    ptr.zero_()  # not aliased
    assert torch.equal(B.csc.indptr, indptr)


def test_from_csc_sorts_only_the_unsorted_columns(monkeypatch):
    """The rows of a sorted column are not re-sorted: the sort sees only unsorted ones."""
    indptr = torch.tensor([0, 3, 3, 6, 8, 8, 8])
    rows = torch.tensor([0, 2, 2, 5, 1, 1, 4, 4])  # column 2 unsorted; the rest sorted
    seen = []
    real = torch.sort

    def sort(t, *a, **k):
        seen.append(t.numel())
        return real(t, *a, **k)

    monkeypatch.setattr(torch, "sort", sort)
    A = gs.Matrix.from_csc(indptr, rows)
    monkeypatch.undo()
    assert seen == [3]
    assert A.csc.rows.tolist() == [0, 2, 2, 1, 1, 5, 4, 4]
    assert A.csc.eids.tolist() == [0, 1, 2, 4, 5, 3, 6, 7]


def test_refusals_name_the_argument():
    with pytest.raises(IndexError, match=r"edge_index\[0\] \(sources\): node id -1 is negative"):
        gs.Matrix.from_edge_index(torch.tensor([[-1], [0]], dtype=torch.int32), num_nodes=2)
    with pytest.raises(IndexError, match=r"edge_index\[1\].*node id 5 is out of range"):
        gs.Matrix.from_edge_index(torch.tensor([[0], [5]], dtype=torch.int16), num_nodes=2)
    with pytest.raises(IndexError, match="indices: node id 3 is out of range"):
        gs.Matrix.from_csc(torch.tensor([0, 1, 2, 2]), torch.tensor([0, 3], dtype=torch.int32))


# ----------------------------------------------------------------------------- devices
GPU = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]


@pytest.mark.parametrize("dummy", [pytest.param(0, marks=GPU)])
def test_the_gpu_builds_the_cpu_graph(dummy, small_ranges):
    g = torch.Generator().manual_seed(9)
    src, dst = random_edges(g, 300, 5000, hot=250)
    w = torch.rand(5000, generator=g)
    ei = torch.stack([src, dst]).to(torch.int32)
    for e, wt in ((ei, w), (ei[:, torch.argsort(dst, stable=True)], None)):
        want = gs.Matrix.from_edge_index(e, num_nodes=300, weight=wt).csc
        got = gs.Matrix.from_edge_index(
            e.cuda(), num_nodes=300, weight=None if wt is None else wt.cuda()
        ).csc
        for f in ("indptr", "rows", "values", "eids"):
            a, b = getattr(want, f), getattr(got, f)
            assert (a is None) == (b is None) and (a is None or torch.equal(a, b.cpu()))
    indptr, rows, _ = random_csc(g, 300, 5000, 250, 0.7)
    want = gs.Matrix.from_csc(indptr, rows).csc
    got = gs.Matrix.from_csc(indptr.cuda(), rows.cuda()).csc
    assert torch.equal(got.rows.cpu(), want.rows) and torch.equal(got.eids.cpu(), want.eids)


def test_a_graph_without_edge_ids_samples_what_it_did_with_them(device):
    """Edge ids left out (the identity) change no sample: the same graph with its ids
    stored draws the same edges, eagerly and compiled, on every device and backend."""
    import dataclasses

    g = torch.Generator().manual_seed(1)
    src, dst = random_edges(g, 400, 6000)
    order = torch.from_numpy(np.lexsort((src.numpy(), dst.numpy())))
    w = torch.rand(6000, generator=g) + 0.1
    A = gs.Matrix.from_edge_index(torch.stack([src, dst])[:, order], 400, weight=w)
    assert A.csc.eids is None
    B = gs.Matrix(dataclasses.replace(A.csc, eids=torch.arange(6000)))
    A, B = A.to(device), B.to(device)
    seeds = torch.arange(0, 400, 7, device=device)

    def sage(M, seeds):
        s = M[:, seeds].individual_sample(5, M[:, seeds])
        return s, M[:, s.all_nodes()].individual_sample(3)

    for fn in (sage, gs.compile(sage)):
        got = []
        for M in (A, B):
            gs.manual_seed(3)
            got.append([m.edges() for m in fn(M, seeds)])
        for x, y in zip(*got):
            assert all(torch.equal(u, v) for u, v in zip(x, y))


# ----------------------------------------------------------------------------- the script
# ----------------------------------------------------------------------------- read_snap
def loadtxt_reference(path, times=True):
    """The whole file at once, as ``read_snap`` read it before it streamed."""
    import gzip

    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        pairs = np.loadtxt(f, dtype=np.int64, comments="#", usecols=(0, 1), ndmin=2)
    t = None
    if times:
        for dtype in (np.int64, np.float64):
            try:
                with opener(path, "rt") as f:
                    t = np.loadtxt(f, dtype=dtype, comments="#", usecols=(2,), ndmin=2)[:, 0]
                break
            except ValueError:
                continue
    return torch.from_numpy(pairs.T.copy()), None if t is None else torch.from_numpy(t.copy())


def write_lines(path, lines):
    import gzip

    text = "".join(lines)
    if str(path).endswith(".gz"):
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


def messy_lines(g, n, m, time=None):
    """SNAP-like lines: comments (also indented and trailing), blank lines, tabs and
    spaces; ``time``: None (two columns), "int" or "float" third column."""
    out = ["# FromNodeId\tToNodeId\n"]
    src = torch.randint(0, n, (m,), generator=g).tolist()
    dst = torch.randint(0, n, (m,), generator=g).tolist()
    for i, (u, v) in enumerate(zip(src, dst)):
        sep = "\t" if i % 3 else " "
        tail = ""
        if time == "int":
            tail = f"{sep}{1000 + 7 * i}"
        elif time == "float":
            tail = f"{sep}{i * 0.25}"
        out.append(f"{u}{sep}{v}{tail}" + ("  # note\n" if i % 17 == 5 else "\n"))
        if i % 13 == 0:
            out.append("\n" if i % 2 else "   # an indented comment\n")
    return out


@pytest.fixture
def small_blocks(monkeypatch):
    """Pieces of a few elements, so that small files take the multi-piece path."""
    monkeypatch.setattr(convert, "PIECE", 5)


@pytest.mark.parametrize("name", ["e.txt", "e.txt.gz"])
@pytest.mark.parametrize("time", [None, "int", "float"])
def test_read_edge_list_in_blocks_reads_the_whole_file(tmp_path, name, time, small_blocks):
    g = torch.Generator().manual_seed(3)
    p = write_lines(tmp_path / name, messy_lines(g, 50, 300, time))
    want, want_t = loadtxt_reference(p)
    for block in (1, 40, 1 << 23):  # a line a block, a few lines, all at once
        ei, t, n = convert.read_edge_list(str(p), block=block)
        assert ei.dtype == torch.int32 and torch.equal(ei.long(), want) and n is None
        if time is None:
            assert t is None
        else:
            assert t.dtype == want_t.dtype and torch.equal(t, want_t)
    A = gs.datasets.read_snap(p)
    assert_same(A, reference_csc(want[0], want[1], int(want.max()) + 1))
    assert (A.edge_time is None) == (time is None)


def test_read_edge_list_types_change_between_blocks(tmp_path, small_blocks):
    """A later block decides for the whole file: a float time makes every time float64,
    a line without one drops the times, an id past int32 makes every id int64."""
    lines = [f"{i} {i + 1} {10 * i}\n" for i in range(20)]
    floats = [*lines, "3 4 2.5\n"]
    p = write_lines(tmp_path / "f.txt", floats)
    ei, t, _ = convert.read_edge_list(str(p), block=1)
    assert t.dtype == torch.float64 and torch.equal(t, loadtxt_reference(p)[1])
    p = write_lines(tmp_path / "g.txt", [*lines, "3 4\n", *lines])
    _, t, _ = convert.read_edge_list(str(p), block=1)
    assert t is None
    big = 2**31 + 5
    p = write_lines(tmp_path / "h.txt", [*lines, f"{big} 1 0\n", *lines])
    ei, _, _ = convert.read_edge_list(str(p), block=1, times=False)
    assert ei.dtype == torch.int64 and torch.equal(ei, loadtxt_reference(p)[0])
    ei, _, n = convert.read_edge_list(str(p), block=1, relabel=True, undirected=True)
    ids = torch.unique(loadtxt_reference(p)[0])
    want = torch.searchsorted(ids, loadtxt_reference(p)[0])
    assert n == ids.numel() and torch.equal(ei.long(), torch.cat([want, want.flip(0)], 1))


@pytest.mark.parametrize("spread", [1, 10**12])
def test_relabel_ranks_the_ids_that_occur(spread):
    """The table (ids in a small range) and the binary search (ids spread far apart) give
    the ranks torch.unique gives."""
    g = torch.Generator().manual_seed(4)
    ei = torch.randint(0, 300, (2, 1000), generator=g) * spread - 7
    want = torch.unique(ei, return_inverse=True)
    for dtype in (torch.int64, torch.int32) if spread == 1 else (torch.int64,):
        got = ei.to(dtype)
        assert convert.relabel_ids(got) == want[0].numel()
        assert got.dtype == dtype and torch.equal(got.long(), want[1])
    narrow = torch.randint(-(2**31), 2**31 - 1, (2, 300), generator=g, dtype=torch.int64)
    n32 = narrow.to(torch.int32)
    assert convert.relabel_ids(n32) == torch.unique(narrow).numel()
    assert torch.equal(n32.long(), torch.unique(narrow, return_inverse=True)[1])


def test_read_snap_names_the_line_of_a_bad_block(tmp_path):
    p = write_lines(tmp_path / "bad.txt", ["1 2\n"] * 50 + ["3 x\n"])
    with pytest.raises(ValueError, match=r"path: .* is not a SNAP edge list \(in the lines"):
        gs.datasets.read_snap(p)
    with pytest.raises(TypeError, match="progress"):
        gs.datasets.read_snap(p, progress="yes")
