"""64-bit offsets: a graph whose ``indptr`` passes 2**32 while its memory stays small.

Node 0's column (the *filler*) holds ``FILL = 2**32 + 2**31 + 7`` edges, so its degree and every
later column's offsets pass 2**31 and 2**32; the other columns (nodes ``1 .. N - 1``, a few
hundred edges, rows among themselves) start at ``FILL``. Nothing allocates the filler's
edges:

- on the CPU the graph's ``rows`` is a memory map of a sparse file (its apparent size about
  50 GB, its pages made only where something reads or writes them: the small columns, and
  the filler's few drawn edges, zeros);
- on the GPU ``rows`` is an *offset view*: a tensor of ``FILL + m`` entries whose data pointer
  is ``8 * FILL`` bytes before a device buffer of the ``m`` small columns' rows, so no memory
  lies behind the filler and any read through an offset narrowed to 32 bits leaves the buffer
  (an illegal address, or a wrong row);
- the kernels compiled as C++ (``helpers.CUDA_AS_CPP``) take the same offset view on the
  host, under AddressSanitizer.

A *twin* graph holds the same small columns from offset 0 (node 0 without edges). Every
draw is keyed by the op, the column's position in the frontier and the draw's index, never
by an offset (docs/architecture.md §3), so a sample of the small columns must be the twin's,
with every edge id ``FILL`` higher: a narrowed offset, degree or edge count anywhere on the
path (slicing, fused sampling, ``all_nodes``, walks, collective sampling) breaks that
equality. The filler's own draws (a degree past 2**32) must cover its whole range uniformly
(a Kolmogorov-Smirnov test). CPU tests run in CI; ``@pytest.mark.cuda`` ones check the CUDA
backend, bit for bit against the CPU, on the lead's GPU.
"""

import numpy as np
import pytest
import torch
from helpers import CUDA_AS_CPP, INT64_IO_CPP, assert_same, build_asan, run_int64_program

import gsample as gs
from gsample.backend.cuda import layerwise as cuda_layerwise
from gsample.backend.torch import walk as reference
from gsample.base.random import combine, op_key, signed
from gsample.formats.csc import CSC

#: node 0's edges: past 2**32, so a degree or offset cut to 32 bits (signed or not) is wrong
FILL = 2**32 + 2**31 + 7
N = 48
#: small columns sampled below: an empty one (3), hubs past a warp's 32 draws (7, 20), a
#: repeat
COLS = torch.tensor([5, 3, 7, 20, 1, 47, 7, 30])


def GPU(f):
    """Marks a test that needs a CUDA GPU (skipped without one)."""
    skip = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
    return pytest.mark.cuda(skip(f))


def _twin() -> CSC:
    """The small columns from offset 0: node v >= 1 has 0 .. 59 in-edges from nodes 1 .. N - 1
    (rows ascending within a column), nodes 3 and 11 none, 7 and 20 more than 40; node 0
    none."""
    g = torch.Generator().manual_seed(0)
    deg = torch.randint(0, 60, (N,), generator=g)
    deg[0] = deg[3] = deg[11] = 0
    deg[7], deg[20] = 57, 44
    indptr = torch.zeros(N + 1, dtype=torch.int64)
    torch.cumsum(deg, 0, out=indptr[1:])
    rows = torch.cat([torch.sort(torch.randint(1, N, (int(d),), generator=g)).values for d in deg])
    return CSC(N, indptr, rows)


TWIN = _twin()


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """The graph with node 0's ``FILL`` edges first, ``rows`` a memory map of a sparse file."""
    E = FILL + TWIN.nnz
    path = tmp_path_factory.mktemp("offsets64") / "rows.bin"
    try:
        mapped = np.memmap(path, dtype=np.int64, mode="w+", shape=(E,))
    except (OSError, ValueError) as e:  # a file system without sparse files of this size
        pytest.skip(f"no sparse file of {8 * E} bytes: {e}")
    rows = torch.from_numpy(mapped)
    rows[FILL:] = TWIN.rows
    indptr = TWIN.indptr + FILL
    indptr[0] = 0
    yield CSC(N, indptr, rows)
    del rows, mapped
    path.unlink(missing_ok=True)  # (its apparent size would confuse a disk-usage report)


def _shifted(csc: CSC) -> dict:
    """The fields of a sample of the big graph, its edge ids brought back to the twin's."""
    return {
        "indptr": csc.indptr,
        "rows": csc.rows,
        "col_ids": csc.col_ids,
        "eids": csc.eid_tensor() - FILL,
        "num_nodes": csc.num_nodes,
    }


def _fields(csc: CSC) -> dict:
    return {
        "indptr": csc.indptr,
        "rows": csc.rows,
        "col_ids": csc.col_ids,
        "eids": csc.eid_tensor(),
        "num_nodes": csc.num_nodes,
    }


def _edges_of(cols) -> torch.Tensor:
    """Every edge position of the big graph's columns ``cols``, column after column: the
    brute-force reference of a slice."""
    ip = TWIN.indptr
    return torch.cat([torch.arange(int(ip[c]), int(ip[c + 1])) for c in cols.tolist()]) + FILL


# ----------------------------------------------------------------------------- the torch backend
def test_the_graph_passes_2_32_in_little_memory(big):
    assert big.nnz == FILL + TWIN.nnz and int(big.indptr[1]) == FILL > 2**32 + 2**31
    assert int(big.indptr[-1]) - int(big.indptr[1]) == TWIN.nnz < 2000
    A = gs.Matrix(big)
    assert A.num_edges > 2**32 and A.shape == (N, N)


def test_a_slice_is_every_edge_of_its_columns(big):
    """``A[:, cols]``: exactly the columns' edges (enumerated here), their rows read at
    offsets past 2**32."""
    S = gs.Matrix(big)[:, COLS].csc
    want = _edges_of(COLS)
    assert torch.equal(S.eid_tensor(), want)
    assert torch.equal(S.rows, big.rows[want])
    assert torch.equal(S.indptr, torch.cat([torch.zeros(1), TWIN.degrees()[COLS].cumsum(0)]).long())


@pytest.mark.parametrize("k, replace", [(3, False), (40, False), (5, True), (40, True)])
def test_node_wise_samples_are_the_twins(big, k, replace):
    """Slice-then-sample, eager and compiled (the fused slice and sample): the twin's sample,
    edge ids ``FILL`` higher, each edge one of its column's (rows read back at its id)."""

    def sample(A, cols):
        return A[:, cols].individual_sample(k, replace=replace)

    for fn in (sample, gs.compile(sample)):
        gs.manual_seed(4)
        got = fn(gs.Matrix(big), COLS).csc
        gs.manual_seed(4)
        want = fn(gs.Matrix(TWIN), COLS).csc
        assert_same(_shifted(got), _fields(want), fn)
        assert torch.equal(got.rows, big.rows[got.eids])
        lo, hi = big.indptr[got.col_ids], big.indptr[got.col_ids + 1]
        owner = torch.repeat_interleave(torch.arange(COLS.numel()), got.degrees())
        assert bool(((got.eids >= lo[owner]) & (got.eids < hi[owner])).all())


def graphsage(A, seeds, fanouts=(4, 3, 2)):
    blocks = []
    for k in fanouts:
        s = A[:, seeds].individual_sample(k)
        blocks.append(s)
        seeds = s.all_nodes()
    return blocks


def test_graphsage_compiled_and_eager_are_the_twins(big):
    seeds = torch.tensor([9, 7, 3, 30])
    compiled = gs.compile(graphsage)
    outs = []
    for fn, A in ((graphsage, big), (compiled, big), (compiled, TWIN)):
        gs.manual_seed(2)
        outs.append(fn(gs.Matrix(A), seeds))
    for got_e, got_c, want in zip(*outs, strict=True):
        assert_same(_shifted(got_c.csc), _fields(want.csc), "compiled")
        assert_same(_shifted(got_e.csc), _fields(want.csc), "eager")


@pytest.mark.parametrize("replace", [False, True], ids=["floyd", "with-replacement"])
def test_the_fillers_draws_cover_its_whole_range(replace):
    """2,000 draws from a column of ``FILL`` > 2**32 edges (the fused slice and sample, which
    never materialises the slice; its rows a zero broadcast over ``FILL`` entries, as the
    big graph's filler reads zeros) are uniform over ``[0, FILL)``: a degree cut to 32 bits
    would keep them below 2**32 (or below ``2**31 + 7``). Kolmogorov-Smirnov at a fixed seed;
    distinct without replacement."""
    stats = pytest.importorskip("scipy.stats")
    filler = CSC(1, torch.tensor([0, FILL]), torch.zeros(1, dtype=torch.int64).expand(FILL))

    @gs.compile
    def draw(A, cols):
        return A[:, cols].individual_sample(2000, replace=replace)

    gs.manual_seed(0)
    s = draw(gs.Matrix(filler), torch.tensor([0])).csc
    pos = s.eid_tensor()
    assert pos.numel() == 2000 and bool((pos >= 0).all()) and bool((pos < FILL).all())
    assert bool((s.rows == 0).all())
    if not replace:
        assert torch.unique(pos).numel() == 2000
    assert bool((pos >= 2**32).any()) and bool((pos < 2**31).any())
    p = stats.kstest(pos.double().numpy() / FILL, "uniform").pvalue
    assert p > 0.01, p


def test_walks_are_the_twins(big):
    """Uniform walks (the CPU's native walk, ``kernels/walk.cu`` compiled as C++, and the
    torch reference) from the small columns: the twin's walks; from node 0 they stay on node 0
    (its rows: zeros), drawing among more than 2**32 edges at every step."""
    seeds = torch.tensor([9, 7, 30, 3, 47, 1])
    key = op_key(5, 1, 0)
    want = reference.reference_walk(TWIN, seeds, 12, key)
    assert torch.equal(reference.reference_walk(big, seeds, 12, key), want)
    gs.manual_seed(6)
    native = gs.Matrix(big).random_walk(seeds, 12)
    gs.manual_seed(6)
    assert torch.equal(native, gs.Matrix(TWIN).random_walk(seeds, 12))
    gs.manual_seed(6)
    stay = gs.Matrix(big).random_walk(torch.tensor([0, 0]), 5)
    assert bool((stay == 0).all())


def collective(A, cols):
    return A[:, cols].collective_sample(10)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_collective_samples_are_the_twins(big, compiled):
    """A layer-wise sample (compiled: the fused slice and sample, over the graph's edges)."""
    fn = gs.compile(collective) if compiled else collective
    gs.manual_seed(8)
    got = fn(gs.Matrix(big), COLS).csc
    gs.manual_seed(8)
    want = fn(gs.Matrix(TWIN), COLS).csc
    assert_same(_shifted(got), _fields(want), "collective")
    assert torch.equal(got.row_ids, want.row_ids)


def rows_cols(A, rows, cols):
    return A[rows, cols]


ROWS = torch.arange(1, N, 3)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_row_and_column_slices_are_the_twins(big, compiled):
    """``A[rows, cols]`` (compiled: the fused slice of rows and columns)."""
    fn = gs.compile(rows_cols) if compiled else rows_cols
    got = fn(gs.Matrix(big), ROWS, COLS).csc
    want = fn(gs.Matrix(TWIN), ROWS, COLS).csc
    assert_same(_shifted(got), _fields(want), "A[rows, cols]")
    assert torch.equal(got.row_ids, want.row_ids) and got.nnz > 50


# ----------------------------------------------------------------------------- the kernels as C++
SHIM = (
    CUDA_AS_CPP
    + r"""
#include <cstdio>
#include <cstdint>
#include <vector>
// warp intrinsics of kernels this program does not run (one lane, were they to run)
template <typename T> static inline T __shfl_down_sync(unsigned, T v, int) { return v; }
template <typename T> static inline T __shfl_sync(unsigned, T v, long long) { return v; }
static inline unsigned __ballot_sync(unsigned, bool b) { return b; }
template <typename T> static inline T atomicMax(T* p, T v) {
    T o = *p; *p = v > o ? v : o; return o;
}
static inline double __ddiv_rn(double a, double b) { return a / b; }
#include "extract.cu"
#include "sampling.cu"
#include "temporal.cu"
#include "walk.cu"

"""
    + INT64_IO_CPP
    + r"""

// The offset view: `base` entries before `window`'s first one, with no memory behind them.
static const long long* view(const vec& window, long long base) { return window.data() - base; }

int main() {
    const vec op = read_vec();
    if (op.empty()) return 2;
    if (op[0] == 1) {                   // a column slice: segment counts, then the gather
        const vec indptr = read_vec(), seg = read_vec(), rows = read_vec(), eids = read_vec();
        const vec p = read_vec();
        const long long base = p[0], n = seg.size(), nseg = indptr.size() - 1;
        vec starts(n), counts(n), ptr(n + 1, 0);
        gs_segment_counts(indptr.data(), nseg, seg.data(), n, starts.data(), counts.data(),
                          nullptr, 0, nullptr);
        for (long long i = 0; i < n; ++i) ptr[i + 1] = ptr[i] + counts[i];
        const long long total = ptr[n];
        vec index(total), rows_out(total), eids_out(total);
        gs_gather_segments(ptr.data(), n, starts.data(), total, view(rows, base),
                           view(eids, base), index.data(), rows_out.data(), eids_out.data(),
                           nullptr, nullptr, nullptr, nullptr, 0);
        write_vec(starts);
        write_vec(counts);
        write_vec(index);
        write_vec(rows_out);
        write_vec(eids_out);
    } else if (op[0] == 2) {            // each edge's column (a search in indptr)
        const vec indptr = read_vec(), perm = read_vec();
        vec cols(perm.size());
        gs_perm_cols(indptr.data(), indptr.size() - 1, perm.data(), perm.size(), nullptr,
                     cols.data(), nullptr);
        write_vec(cols);
    } else if (op[0] == 3) {            // uniform draws from columns of a huge degree
        const vec cols = read_vec(), deg = read_vec(), p = read_vec();
        const unsigned long long key = (unsigned long long)p[0];
        const long long k = p[1], n = cols.size();
        vec with(n * k), floyd(n * k);
        gs_draw_with_replacement(key, cols.data(), deg.data(), n, k, with.data());
        gs_floyd(key, cols.data(), deg.data(), n, k, floyd.data());
        write_vec(with);
        write_vec(floyd);
    } else if (op[0] == 4) {            // uniform walks
        const vec indptr = read_vec(), rows = read_vec(), seeds = read_vec(), p = read_vec();
        const long long base = p[0], L = p[1], W = seeds.size(), Nn = indptr.size() - 1;
        vec out(W * (L + 1));
        std::vector<int> failed(2, 0);
        gs_random_walk(indptr.data(), view(rows, base), nullptr, nullptr, seeds.data(), W, L,
                       Nn, (unsigned long long)p[2], nullptr, 0, Nn, 0, 1.0, 1.0, 1.0, 0.0,
                       0.0, 0.0, out.data(), failed.data(), nullptr, nullptr, 0, nullptr);
        write_vec(out);
        write_vec(failed);
    } else if (op[0] == 5) {            // temporal candidates: binary searches in the times
        const vec indptr = read_vec(), cols = read_vec(), time = read_vec(), stime = read_vec();
        const vec p = read_vec();
        const long long base = p[0], C = cols.size(), Nn = indptr.size() - 1;
        vec lo(C), cand(C), count(C), err(6, 0);
        gs_temporal_count(indptr.data(), cols.data(), C, Nn, Nn, time.data(), view(stime, base),
                          (int)p[1], p[2], (int)p[3], p[4], 0, nullptr, nullptr, 0ULL,
                          lo.data(), cand.data(), count.data(), nullptr, nullptr, err.data());
        write_vec(lo);
        write_vec(cand);
        write_vec(count);
        write_vec(err);
    } else {
        return 2;
    }
    return 0;
}
"""
)


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return build_asan(SHIM, tmp_path_factory.mktemp("offsets64_cpu") / "offsets")


def run(exe, code: int, *arrays) -> list:
    """Op ``code`` on int64 ``arrays``; the arrays it writes back. A read through a narrowed
    offset leaves the window: AddressSanitizer (or the fault) ends the program, and the test
    fails on its return code."""
    return [torch.from_numpy(a) for a in run_int64_program(exe, [code], *arrays)]


BIG_INDPTR = torch.cat([torch.zeros(1, dtype=torch.int64), TWIN.indptr[1:] + FILL])


def test_kernel_slice_reads_past_2_32(program):
    """``kernels/extract.cu``: a column slice's starts, counts, edges, rows and edge ids, the
    rows and ids read through the offset view (an out-of-range segment is empty)."""
    eids = torch.arange(TWIN.nnz) * 3 + 2**40  # edge ids of their own, past 2**32 too
    seg = torch.cat([COLS, torch.tensor([N, -1])])
    starts, counts, index, rows, got_eids = run(
        program, 1, BIG_INDPTR, seg, TWIN.rows, eids, [FILL]
    )
    ok = (seg >= 0) & (seg < N)
    deg = TWIN.degrees()
    assert torch.equal(counts, torch.where(ok, deg[seg.clamp(0, N - 1)], 0))
    assert torch.equal(starts[:-2], BIG_INDPTR[COLS])
    want = _edges_of(COLS)
    assert torch.equal(index, want)
    assert torch.equal(rows, TWIN.rows[want - FILL])
    assert torch.equal(got_eids, eids[want - FILL])


def test_kernel_edge_columns_past_2_32(program):
    """``gs_perm_cols``: the column of edges at offsets past 2**32 (and of the filler's, far
    below and just below its end), by binary search in ``indptr``."""
    perm = torch.cat([torch.arange(FILL, FILL + TWIN.nnz), torch.tensor([0, 2**32, FILL - 1])])
    (cols,) = run(program, 2, BIG_INDPTR, perm)
    assert torch.equal(cols, torch.searchsorted(BIG_INDPTR, perm, right=True) - 1)
    assert cols[-3:].tolist() == [0, 0, 0]


def _word(base: int, col: int, draw: int) -> int:
    return combine(combine(base, col), draw)


def test_kernel_draws_from_a_degree_past_2_32(program):
    """``gs_draw_with_replacement`` and ``gs_floyd`` over columns of ``FILL``, ``2**32 + 1``
    and ``2**31 + 1`` edges: the draws of the determinism contract, computed here with Python
    integers (Floyd: draw i takes t = uniform_int(word(col, i), j + 1), j = deg - k + i, or
    j when t was drawn)."""
    key, k = op_key(3, 2, 1), 6
    degrees = [FILL, 2**32 + 1, 2**31 + 1]
    cols = torch.arange(len(degrees))
    with_r, floyd = run(program, 3, cols, degrees, [signed(key), k])
    want_with, want_floyd = [], []
    for c, d in enumerate(degrees):
        want_with += [(_word(key, c, i) >> 1) % d for i in range(k)]
        drawn = []
        for i in range(k):
            j = d - k + i
            t = (_word(key, c, i) >> 1) % (j + 1)
            drawn.append(j if t in drawn else t)
        want_floyd += drawn
    assert with_r.tolist() == want_with and floyd.tolist() == want_floyd
    assert max(want_with[:k] + want_floyd[:k]) >= 2**32  # the filler's draws pass 2**32


def test_kernel_walks_read_past_2_32(program, big):
    """``gs_random_walk`` over the offset view: the torch reference's walks on the memory-mapped
    graph and the twin's, bit for bit."""
    seeds = torch.tensor([9, 7, 30, 3, 47, 1, 20, 20])
    key = op_key(5, 4, 0)
    out, failed = run(program, 4, BIG_INDPTR, TWIN.rows, seeds, [FILL, 15, signed(key)])
    want = reference.reference_walk(TWIN, seeds, 15, key)
    assert failed.tolist() == [0, 0]
    assert torch.equal(out.view(seeds.numel(), 16), want)
    assert torch.equal(reference.reference_walk(big, seeds, 15, key), want)


def test_kernel_temporal_candidates_past_2_32(program):
    """``gs_temporal_count``: each column's candidates (times ``<= t``, within a window, the
    ``k`` most recent), found by binary searches in its times at offsets past 2**32."""
    g = torch.Generator().manual_seed(2)
    stime = torch.cat(
        [torch.sort(torch.randint(0, 50, (int(d),), generator=g)).values for d in TWIN.degrees()]
    )
    cols = torch.cat([COLS, torch.tensor([N + 5])])  # a bad id: an empty column, flagged
    time = torch.randint(0, 60, (cols.numel(),), generator=g)
    for window_on, window, last, k in ((0, 0, 0, 4), (1, 20, 0, 4), (0, 0, 1, 3)):
        lo, cand, count, err = run(
            program, 5, BIG_INDPTR, cols, time, stime, [FILL, window_on, window, last, k]
        )
        for c, (v, t) in enumerate(zip(cols.tolist(), time.tolist(), strict=True)):
            if v >= N:
                assert (lo[c], cand[c], count[c]) == (0, 0, 0)
                continue
            a, b = int(BIG_INDPTR[v]), int(BIG_INDPTR[v + 1])
            times = stime[a - FILL : b - FILL].tolist()
            hi = a + sum(x <= t for x in times)
            first = a + sum(x <= t - window for x in times) if window_on else a
            if last:
                first = max(first, hi - k)
            assert (int(lo[c]), int(cand[c])) == (first, hi - first), (v, t)
            assert int(count[c]) == min(k, hi - first)
        assert err.tolist()[:2] == [0, 1] and err.tolist()[4] == 1


# ----------------------------------------------------------------------------- the CUDA backend
def _offset_view(t: torch.Tensor, base: int) -> torch.Tensor:
    """A CUDA tensor of ``base + t.numel()`` entries of ``t``'s dtype whose last ``t.numel()``
    are ``t``'s memory: its data pointer lies ``base`` entries before ``t``'s, with no memory
    behind the first ``base`` entries (``t`` kept alive by the view)."""
    cp = pytest.importorskip("cupy")
    size = t.element_size()
    mem = cp.cuda.UnownedMemory(
        t.data_ptr() - base * size, (base + t.numel()) * size, t, t.device.index
    )
    dtype = {torch.int64: cp.int64, torch.int32: cp.int32}[t.dtype]
    arr = cp.ndarray((base + t.numel(),), dtype=dtype, memptr=cp.cuda.MemoryPointer(mem, 0))
    return torch.from_dlpack(arr)


def _big_cuda() -> CSC:
    """The big graph on the GPU: ``indptr`` on the device, ``rows`` the offset view of the small
    columns' rows (the filler's ``FILL`` entries have no memory: never read)."""
    rows = _offset_view(TWIN.rows.cuda(), FILL)
    assert rows.numel() == FILL + TWIN.nnz and rows.is_contiguous()
    return CSC(N, BIG_INDPTR.cuda(), rows)


def _cpu(csc: CSC) -> dict:
    return {k: v.cpu() if isinstance(v, torch.Tensor) else v for k, v in _fields(csc).items()}


def _on_cuda(fn, *args):
    """``fn(*args)`` with the CUDA backend (its kernels), after ``gs.manual_seed(4)``."""
    gs.manual_seed(4)
    with gs.use_backend("cuda"):
        return fn(*args)


def _on_cpu(fn, *args):
    """``fn(*args)`` on CPU tensors (the torch backend), after ``gs.manual_seed(4)``."""
    gs.manual_seed(4)
    return fn(*args)


def _same_as_twin(got: CSC, want: CSC, where: str) -> None:
    assert_same(_cpu(got) | {"eids": got.eid_tensor().cpu() - FILL}, _fields(want), where)


@GPU
@pytest.mark.parametrize("k, replace", [(3, False), (40, False), (5, True), (40, True)])
def test_cuda_node_wise_samples_past_2_32(k, replace):
    """The CUDA backend's slice and sample (eager: ``extract.cu`` and ``sampling.py``;
    compiled: the fused ``nodewise.cu``) on the offset view: the twin's samples on the CPU,
    bit for bit, edge ids ``FILL`` higher; the slice itself every edge of its columns."""
    A, twin, cols = gs.Matrix(_big_cuda()), gs.Matrix(TWIN), COLS.cuda()

    def sample(A, cols):
        return A[:, cols].individual_sample(k, replace=replace)

    for fn in (sample, gs.compile(sample)):
        got = _on_cuda(fn, A, cols).csc
        _same_as_twin(got, _on_cpu(fn, twin, COLS).csc, f"{fn} {k} {replace}")
    S = _on_cuda(lambda: A[:, cols].csc)
    assert torch.equal(S.eid_tensor().cpu(), _edges_of(COLS))
    assert torch.equal(S.rows.cpu(), TWIN.rows[_edges_of(COLS) - FILL])
    torch.cuda.synchronize()  # an illegal address (a narrowed offset) surfaces here at last


@GPU
@pytest.mark.parametrize("select", ["radix", "torch"])
def test_cuda_graphsage_walks_and_collective_past_2_32(monkeypatch, select):
    """Compiled GraphSAGE (``nodewise.cu``, ``frontier.cu``), uniform walks (``walk.cu``) and
    a compiled collective sample (``layerwise.cu``; ``topk.cu``'s select, or
    ``torch.topk``) on the offset view: the twin's, bit for bit."""
    monkeypatch.setattr(cuda_layerwise, "SELECT", select)
    A, twin = gs.Matrix(_big_cuda()), gs.Matrix(TWIN)
    seeds = torch.tensor([9, 7, 3, 30])
    sage = gs.compile(graphsage)
    got, want = _on_cuda(sage, A, seeds.cuda()), _on_cpu(sage, twin, seeds)
    for h, (g, w) in enumerate(zip(got, want, strict=True)):
        _same_as_twin(g.csc, w.csc, f"hop {h}")
    walkers = torch.tensor([9, 7, 30, 3, 47, 1, 20, 20])
    walks = _on_cuda(lambda: A.random_walk(walkers.cuda(), 15))
    assert torch.equal(walks.cpu(), _on_cpu(lambda: twin.random_walk(walkers, 15)))
    fused = gs.compile(collective)
    got = _on_cuda(fused, A, COLS.cuda()).csc
    want = _on_cpu(fused, twin, COLS).csc
    _same_as_twin(got, want, f"collective, {select}")
    assert torch.equal(got.row_ids.cpu(), want.row_ids)
    torch.cuda.synchronize()


def _refused(*args, **kwargs):
    raise AssertionError("a kernel with a narrow count ran past its bound")


@GPU
@pytest.mark.parametrize("bound", [None, "_MAX_CHOSEN", "_MAX_CANDIDATES"])
def test_cuda_layer_wise_slices_past_2_32(monkeypatch, bound):
    """``A[rows, cols]`` (eager: the column slice, then its rows; compiled: the fused
    ``SLICE_ROWS_COLS``, ``layerwise.cu``'s kept edges) and a compiled collective sample
    (``topk.cu``'s radix select) on the offset view: the twin's. With a bound of the narrow
    values set below this sample's sizes, the code past it runs instead, with the same result:
    ``_MAX_CHOSEN`` (int32 positions among the chosen rows) the exact implementation, never
    ``_positions`` or ``_kept_counts``; ``_MAX_CANDIDATES`` (uint32 digit counts)
    ``torch.topk``, never the radix select."""
    monkeypatch.setattr(cuda_layerwise, "SELECT", "radix")
    if bound is not None:
        monkeypatch.setattr(cuda_layerwise, bound, 1)
        if bound == "_MAX_CHOSEN":  # every pass over int32 positions
            monkeypatch.setattr(cuda_layerwise, "_positions", _refused)
            monkeypatch.setattr(cuda_layerwise, "_kept_counts", _refused)
        else:
            monkeypatch.setattr(cuda_layerwise.topk, "smallest_compact", _refused)
    A, twin = gs.Matrix(_big_cuda()), gs.Matrix(TWIN)
    for fn in (rows_cols, gs.compile(rows_cols)):
        got = _on_cuda(fn, A, ROWS.cuda(), COLS.cuda()).csc
        want = _on_cpu(fn, twin, ROWS, COLS).csc
        _same_as_twin(got, want, f"A[rows, cols], {fn}")
        assert torch.equal(got.row_ids.cpu(), want.row_ids)
    fused = gs.compile(collective)
    got = _on_cuda(fused, A, COLS.cuda()).csc
    want = _on_cpu(fused, twin, COLS).csc
    _same_as_twin(got, want, "collective")
    assert torch.equal(got.row_ids.cpu(), want.row_ids)
    torch.cuda.synchronize()
