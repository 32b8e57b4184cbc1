"""The exact sums' kernels over a frontier's edges (``kernels/rowsum.cu``: ``gs_total_*``, the
chunked row sums ``gs_rowsum_chunk_counts`` / ``_fill`` / ``gs_rowsum_chunks``, and the count
and fill that take the totals too, ``gs_rowsum_chunk_counts_total`` / ``_fill_total``) run on
the CPU as whole blocks (``helpers.CUDA_THREADS_AS_CPP``): each CUDA thread a
``std::thread``, ``__syncthreads`` a barrier of the block, each warp intrinsic an exchange
behind a barrier of the warp's 32 lanes, global and shared atomics real atomics, blocks one
after the other (``__shared__`` arrays static). Built with AddressSanitizer (every array an
exact-size allocation).

What this checks without a GPU: every frontier edge counted once whatever the rounds of a
tile (``sub``), the grid, the block, the staged or unstaged tile, the last partial tile, the
empty and bad columns (empty in the frontier's pointer, never read through); the bits of the
torch code, NaN and infinities included; the chunk fill using exactly the places the counts
made; no barrier or warp intrinsic that a lane misses (a deadlock, ended by the program's
watchdog), and every intrinsic's masks as CUDA requires (the peer groups' partial ones too).
Not what it checks: memory ordering or timing on a GPU (the threads here are real and
unordered, but a CPU's memory model is not the GPU's, and a warp's intrinsic here is also a
barrier of its lanes, which a GPU's is not), or the launch configuration the host picks
(``tests/backend/test_total.py`` and ``test_cuda_sync_free.py`` run the kernels on a GPU).
"""

import numpy as np
import pytest
import torch
from helpers import (
    FLOAT_IO_CPP,
    INT64_IO_CPP,
    build_float_kernels,
    run_int64_program,
)

import gsample as gs
from gsample.backend.torch import fused_reduce
from gsample.backend.torch.compute import exact_sums

PROGRAM = (
    r"""
#include "rowsum.cu"
#include <unistd.h>
"""
    + INT64_IO_CPP
    + FLOAT_IO_CPP
    + r"""
int main() {
    alarm(120);                         // a barrier or warp intrinsic some lane never reaches
    const vec op = read_vec();
    if (op.empty()) return 2;
    const vec ip = read_vec(), rw = read_vec(), vbits = read_vec(), cols = read_vec();
    const vec ptr = read_vec(), p = read_vec();
    // exact-size copies, each bounded by AddressSanitizer
    const std::vector<gs_idx> indptr(ip.begin(), ip.end()), rows(rw.begin(), rw.end());
    const std::vector<gs_t> values = reals(vbits);
    const gs_t* V = values.empty() ? nullptr : values.data();     // none: 1.0 each
    const long long C = cols.size(), n = p[0], G = p[1], grid = p[3], block = p[4];
    const int sub = (int)p[2];
    const gs_idx* IP = indptr.data();
    const gs_idx* RW = rows.data();
    const gs_i64* CO = cols.data();
    const gs_i64* PT = ptr.data();
    // a super-batch's terms placed by chunk of R rows (the counts, their scan, the fill):
    // starts (K + 1), the cursors the fill advanced, the terms (each exact size)
    auto place_terms = [&](long long R, std::vector<gs_i64>& starts, std::vector<gs_i64>& cursor,
                           std::vector<gs_term_t>& terms) {
        const long long K = (R + GS_CHUNK - 1) / GS_CHUNK;
        std::vector<gs_i64> counts(K + 1, 0);
        starts.assign(K + 1, 0);
        gs_launch(grid, block, [&]() {
            gs_rowsum_chunk_counts(IP, RW, V, CO, C, PT, n, counts.data(), sub);
        });
        for (long long k = 0; k < K; ++k) starts[k + 1] = starts[k] + counts[k];
        terms = std::vector<gs_term_t>(starts[K]);
        cursor.assign(starts.begin(), starts.begin() + K);
        if (starts[K])
            gs_launch(grid, block, [&]() {
                gs_rowsum_chunk_fill(IP, RW, V, CO, C, PT, n, cursor.data(), terms.data(), sub);
            });
    };
    if (op[0] == 1) {                   // gs_total_*: G sums (G mini-batches)
        std::vector<int> emax(G, 0), flags(G, 0);
        std::vector<gs_u64> lo(G, 0), hi(G, 0);
        std::vector<gs_t> out(G);
        gs_launch(grid, block, [&]() {
            gs_total_exponents(IP, V, CO, C, PT, n, G, emax.data(), flags.data(), sub);
        });
        gs_launch(grid, block, [&]() {
            gs_total_add(IP, V, CO, C, PT, n, G, emax.data(), lo.data(), hi.data(), sub);
        });
        gs_launch(1, 32, [&]() {
            gs_rowsum_finish(emax.data(), flags.data(), lo.data(), hi.data(), G, out.data(),
                             nullptr, nullptr, 1, 1);
        });
        write_reals(out);
    } else if (op[0] == 2) {            // the row sums of R = G rows by chunk
        const long long R = G, K = (R + GS_CHUNK - 1) / GS_CHUNK;
        std::vector<gs_i64> starts, cursor;
        std::vector<gs_term_t> terms;
        place_terms(R, starts, cursor, terms);
        std::vector<gs_t> out(R);
        gs_launch(K, p[5], [&]() {
            gs_rowsum_chunks(starts.data(), terms.empty() ? nullptr : terms.data(), R,
                             out.data(), nullptr, 1, 1);
        });
        write_reals(out);
        write_vec(starts);
        write_vec(cursor);
    } else if (op[0] == 3) {            // both: the row sums of R rows and G totals, fused
        const long long R = p[6], K = (R + GS_CHUNK - 1) / GS_CHUNK;
        std::vector<gs_i64> counts(K + 1, 0), starts(K + 1, 0);
        std::vector<int> emax(G, 0), flags(G, 0);
        std::vector<gs_u64> lo(G, 0), hi(G, 0);
        gs_launch(grid, block, [&]() {
            gs_rowsum_chunk_counts_total(IP, RW, V, CO, C, PT, n, counts.data(), sub, G,
                                         emax.data(), flags.data());
        });
        for (long long k = 0; k < K; ++k) starts[k + 1] = starts[k] + counts[k];
        std::vector<gs_term_t> terms(starts[K]);
        std::vector<gs_i64> cursor(starts.begin(), starts.begin() + K);
        if (starts[K])
            gs_launch(grid, block, [&]() {
                gs_rowsum_chunk_fill_total(IP, RW, V, CO, C, PT, n, cursor.data(), terms.data(),
                                           sub, G, emax.data(), lo.data(), hi.data());
            });
        std::vector<gs_t> out(R), total(G);
        gs_launch(K, p[5], [&]() {
            gs_rowsum_chunks(starts.data(), terms.empty() ? nullptr : terms.data(), R,
                             out.data(), nullptr, 1, 1);
        });
        gs_launch(1, 32, [&]() {
            gs_rowsum_finish(emax.data(), flags.data(), lo.data(), hi.data(), G, total.data(),
                             nullptr, nullptr, 1, 1);
        });
        write_reals(out);
        write_vec(starts);
        write_vec(cursor);
        write_reals(total);
    } else if (op[0] == 4) {            // one mini-batch's row sums over R rows, cleared by pass 1
        const long long R = p[5], K = (R + GS_CHUNK - 1) / GS_CHUNK + 1;
        // only the exponents and flags zero: the sums hold garbage pass 1 must clear where
        // pass 2 adds (and the finish may read nowhere else)
        std::vector<int> emax(R, 0), flags(R, 0);
        std::vector<gs_u64> lo(R, 0xA5A5A5A5A5A5A5A5ULL), hi(R, 0x5A5A5A5A5A5A5A5AULL);
        std::vector<unsigned char> touched(K, 0);
        gs_launch(grid, block, [&]() {
            gs_rowsum_exponents(IP, RW, V, CO, C, PT, n, emax.data(), flags.data(), lo.data(),
                                hi.data(), touched.data());
        });
        gs_launch(grid, block, [&]() {
            gs_rowsum_add(IP, RW, V, CO, C, PT, n, emax.data(), lo.data(), hi.data());
        });
        std::vector<gs_t> out(R, (gs_t)-7);
        gs_launch(grid, block, [&]() {
            gs_rowsum_finish(emax.data(), flags.data(), lo.data(), hi.data(), R, out.data(),
                             touched.data(), nullptr, 1, 1);
        });
        write_reals(out);
        write_vec(vec(touched.begin(), touched.end()));
    } else if (op[0] == 5 || op[0] == 6) {  // op 4's or op 2's, each row divided in the finish
        const vec sbits = read_vec();   // the scales (float64 bits), each for p[6] rows
        std::vector<gs_t> scale(sbits.size());
        for (size_t i = 0; i < sbits.size(); ++i) {
            double d;
            memcpy(&d, &sbits[i], 8);
            scale[i] = (gs_t)d;
        }
        const long long per = p[6], count = scale.size();
        std::vector<gs_t> out;
        if (op[0] == 5) {
            const long long R = p[5], K = (R + GS_CHUNK - 1) / GS_CHUNK + 1;
            std::vector<int> emax(R, 0), flags(R, 0);
            std::vector<gs_u64> lo(R, 0xA5A5A5A5A5A5A5A5ULL), hi(R, 0x5A5A5A5A5A5A5A5AULL);
            std::vector<unsigned char> touched(K, 0);
            gs_launch(grid, block, [&]() {
                gs_rowsum_exponents(IP, RW, V, CO, C, PT, n, emax.data(), flags.data(),
                                    lo.data(), hi.data(), touched.data());
            });
            gs_launch(grid, block, [&]() {
                gs_rowsum_add(IP, RW, V, CO, C, PT, n, emax.data(), lo.data(), hi.data());
            });
            out.assign(R, (gs_t)-7);
            gs_launch(grid, block, [&]() {
                gs_rowsum_finish(emax.data(), flags.data(), lo.data(), hi.data(), R,
                                 out.data(), touched.data(), scale.data(), per, count);
            });
        } else {
            const long long R = p[5], K = (R + GS_CHUNK - 1) / GS_CHUNK;
            std::vector<gs_i64> starts, cursor;
            std::vector<gs_term_t> terms;
            place_terms(R, starts, cursor, terms);
            out.assign(R, (gs_t)-7);
            gs_launch(K, 64, [&]() {
                gs_rowsum_chunks(starts.data(), terms.empty() ? nullptr : terms.data(), R,
                                 out.data(), scale.data(), per, count);
            });
        }
        write_reals(out);
    } else {
        return 2;
    }
    write_vec(vec(1, (long long)gs_bad_masks));
    return 0;
}
"""
)

DTYPES = {"float": torch.float32, "double": torch.float64}


@pytest.fixture(scope="module", params=sorted(DTYPES))
def program(request, tmp_path_factory):
    ctype = request.param
    exe = build_float_kernels(tmp_path_factory, "rowsum_cpu", PROGRAM, ctype)
    return exe, DTYPES[ctype]


def run(exe, code: int, *arrays) -> list:
    """Run op ``code`` on int64 ``arrays``; the arrays it writes back (NumPy int64), once its
    warp intrinsics are known to have passed masks as CUDA requires."""
    *out, bad_masks = run_int64_program(exe, [code], *arrays)
    assert bad_masks[0] == 0  # every intrinsic's masks as CUDA requires
    return out


def _as_floats(a) -> torch.Tensor:
    return torch.from_numpy(a.copy()).view(torch.float64)


GRAPH = gs.datasets.rmat(600, 12_000, seed=3).csc  # mean degree 20
NODES = GRAPH.num_nodes
DEG = GRAPH.indptr.diff()
#: ids no column may be read through (the frontier's pointer makes them empty)
BAD = [-1, -(2**40), 2**31, 2**40, 2**63 - 1]


def _values(kind: str, dtype) -> torch.Tensor | None:
    """``ones``: none (1.0 each; a total is its edge count, a term dropped or counted twice
    changes it); ``spread``: signed terms whose exponents pass the 62-bit grain, with NaN,
    inf and -inf at a few edges."""
    if kind == "ones":
        return None
    g = torch.Generator().manual_seed(4)
    e = torch.randint(-30, 30, (GRAPH.nnz,), generator=g)
    v = torch.ldexp(torch.rand(GRAPH.nnz, generator=g) * 2 - 1, e).to(torch.float64)
    v[GRAPH.indptr[torch.nonzero(DEG > 0).squeeze(1)[[40, 90, 300]]]] = torch.tensor(
        [float("nan"), float("inf"), -float("inf")], dtype=torch.float64
    )
    return v.to(dtype)


def _frontier(kind: str):
    """(encoded good ids grouped by batch, the buffer the kernels see with bad and padding
    ids among them, batches N, n)."""
    g = torch.Generator().manual_seed(len(kind))
    if kind == "slice":
        parts = [torch.randint(0, NODES, (150,), generator=g)]
    elif kind == "super-batch":
        parts = [torch.randperm(NODES, generator=g)[: 7 + 23 * b] for b in range(9)]
    elif kind == "short columns":  # of 0 to 2 edges: tiles of more than GS_STAGE, unstaged
        short = torch.nonzero(DEG <= 2).squeeze(1).repeat(3)
        parts = [short[b % 2 :: 2] for b in range(6)]
    else:  # "tiny": fewer edges than one round, some batches empty
        parts = [torch.tensor([5, 5]), torch.tensor([], dtype=torch.int64), torch.tensor([17])]
    N = len(parts)
    n = NODES if N > 1 else 0
    good = torch.cat([p + b * n for b, p in enumerate(parts)])
    buf = good.tolist()
    for i, bad in enumerate(BAD):  # anywhere in the frontier
        buf.insert((i * 37) % (len(buf) + 1), bad)
    buf += [0, 3]  # a bounded frontier's padding: columns past ncols, empty
    return good, torch.tensor(buf), N, n


def _ptr(buf: torch.Tensor, n: int, N: int) -> torch.Tensor:
    """gs_frontier_ptr's: a column's edges, none for a bad id or a padding column."""
    M = NODES * N
    real = buf.numel() - 2
    ok = (buf >= 0) & (buf < M)
    ok[real:] = False
    v = torch.where(ok, buf - (buf // n) * n if n else buf, 0)
    deg = torch.where(ok, DEG[v], 0)
    return torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(deg, 0)])


def _args(vals, buf, ptr):
    vbits = [] if vals is None else vals.to(torch.float64).view(torch.int64)
    return GRAPH.indptr, GRAPH.rows, vbits, buf, ptr


CASES = [
    # (frontier, rounds, grid, block)
    *[(f, r, 3, 64) for f in ("slice", "super-batch", "short columns") for r in (1, 2, 3, 4)],
    ("super-batch", 4, 2, 256),
    ("short columns", 3, 2, 256),
    ("tiny", 4, 3, 64),
]


@pytest.mark.parametrize("frontier,rounds,grid,block", CASES)
@pytest.mark.parametrize("values", ["spread", "ones"])
def test_frontier_totals_count_every_edge_once(program, frontier, rounds, grid, block, values):
    """gs_total_exponents / gs_total_add with ``rounds`` rounds a tile: each mini-batch's sum
    the torch code's bits (ones: its exact edge count)."""
    exe, dtype = program
    vals = _values(values, dtype)
    good, buf, N, n = _frontier(frontier)
    ptr = _ptr(buf, n, N)
    (out,) = run(exe, 1, *_args(vals, buf, ptr), [n, N, rounds, grid, block])
    got = _as_floats(out)
    A = GRAPH.with_values(vals if vals is not None else torch.ones(GRAPH.nnz, dtype=dtype))
    want = fused_reduce.slice_total(A, good, "sum", batches=(N, n) if N > 1 else None)
    want = want.reshape(-1).to(torch.float64)
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("frontier,rounds,grid,block", CASES)
@pytest.mark.parametrize("values", ["spread", "ones"])
def test_chunked_row_sums_count_every_term_once(program, frontier, rounds, grid, block, values):
    """gs_rowsum_chunk_counts / _fill with ``rounds`` rounds a tile, then gs_rowsum_chunks (a
    block of 64 threads: chunks of more terms than the GS_CHUNK_HELD a thread holds): every
    row the torch code's bits, and every chunk's places filled exactly."""
    exe, dtype = program
    vals = _values(values, dtype)
    good, buf, N, n = _frontier(frontier)
    ptr = _ptr(buf, n, N)
    R = NODES * N
    out, starts, cursor = run(exe, 2, *_args(vals, buf, ptr), [n, R, rounds, grid, block, 64])
    assert np.array_equal(cursor, starts[1:])
    got = _as_floats(out)
    A = GRAPH.with_values(vals if vals is not None else torch.ones(GRAPH.nnz, dtype=dtype))
    # the CUDA row sums are exact (the torch backend's add in order): exact_sums by row
    v = good - (good // n) * n if n else good
    edges = torch.cat([torch.arange(int(GRAPH.indptr[c]), int(GRAPH.indptr[c + 1])) for c in v])
    row = GRAPH.rows[edges] + torch.repeat_interleave(good - v, DEG[v])
    want = exact_sums(A.values[edges], row, R).to(dtype)
    torch.testing.assert_close(got, want.to(torch.float64), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("frontier,rounds,grid,block", CASES)
@pytest.mark.parametrize("values", ["spread", "ones"])
def test_row_sums_and_totals_in_the_same_passes(program, frontier, rounds, grid, block, values):
    """gs_rowsum_chunk_counts_total / _fill_total (``layerwise.FUSE_TOTALS``), then
    gs_rowsum_chunks: every row sum the bits of the passes without the totals (op 2), and
    each mini-batch's total the bits of gs_total_exponents / gs_total_add (op 1) and of the
    torch code, whatever the rounds, grid and block; every chunk's places filled exactly."""
    exe, dtype = program
    vals = _values(values, dtype)
    good, buf, N, n = _frontier(frontier)
    ptr = _ptr(buf, n, N)
    R = NODES * N
    args = _args(vals, buf, ptr)
    out, starts, cursor, total = run(exe, 3, *args, [n, N, rounds, grid, block, 64, R])
    assert np.array_equal(cursor, starts[1:])
    alone, alone_starts, _ = run(exe, 2, *args, [n, R, rounds, grid, block, 64])
    assert np.array_equal(starts, alone_starts)
    assert np.array_equal(out, alone)  # the bits (float64's: NaN's payload included)
    (totals,) = run(exe, 1, *args, [n, N, rounds, grid, block])
    assert np.array_equal(total, totals)
    A = GRAPH.with_values(vals if vals is not None else torch.ones(GRAPH.nnz, dtype=dtype))
    want = fused_reduce.slice_total(A, good, "sum", batches=(N, n) if N > 1 else None)
    got = _as_floats(total)
    torch.testing.assert_close(
        got, want.reshape(-1).to(torch.float64), rtol=0, atol=0, equal_nan=True
    )


@pytest.mark.parametrize("frontier,rounds,grid,block", CASES)
@pytest.mark.parametrize("values", ["spread", "ones"])
def test_row_sums_clear_only_the_rows_they_write(program, frontier, rounds, grid, block, values):
    """gs_rowsum_exponents / gs_rowsum_add / gs_rowsum_finish as one mini-batch runs them
    (``layerwise.slice_reduce``): the sums' scratch not cleared (garbage in every row's
    128-bit sum; pass 1 clears the rows it writes), the finish reading only the chunks pass 1
    marked, over a row space with chunks the frontier never touches: every row the bits of
    the chunked passes (op 2) and of the torch code, 0 in every untouched chunk, and a chunk
    marked only where a row of it has a nonzero term."""
    exe, dtype = program
    vals = _values(values, dtype)
    good, buf, N, n = _frontier(frontier)
    ptr = _ptr(buf, n, N)
    R = NODES * N
    space = R + 3 * 2048 + 5  # chunks past the frontier's rows: never touched
    args = _args(vals, buf, ptr)
    out, touched = run(exe, 4, *args, [n, N, rounds, grid, block, space])
    assert touched.shape == ((space + 2047) // 2048 + 1,)
    alone, _, _ = run(exe, 2, *args, [n, R, rounds, grid, block, 64])
    assert np.array_equal(out[:R], alone)  # the bits (float64's: NaN's payload included)
    assert not out[R:].any()  # +0.0 past the frontier's rows
    # marked: the chunks of the rows with a nonzero term (NaN and infinities included)
    v = good - (good // n) * n if n else good
    edges = torch.cat([torch.arange(int(GRAPH.indptr[c]), int(GRAPH.indptr[c + 1])) for c in v])
    row = GRAPH.rows[edges] + torch.repeat_interleave(good - v, DEG[v])
    if vals is not None:
        row = row[vals[edges] != 0]
    want = np.zeros(touched.size, dtype=bool)
    want[(row // 2048).numpy()] = True
    assert np.array_equal(touched.astype(bool), want)


#: a row space of 7 chunks (the last partial) and the frontier's terms placed in it: a chunk
#: whose one row is its last (0) or its first (1, 5), one whose only term is NaN (2) or -inf
#: (3), one whose terms are all 0.0 (4: no exponent, no flag, not marked), a chunk's last row
#: and the row space's (5, 6); row 2047 takes three terms of three exponents (three raisers)
LONE_R = 6 * 2048 + 100
LONE_COLS = [
    ([2047, 2048, 10240], [1.5, -2.25, 3.0]),
    ([2047, 4101, 8201], [2.0**-40, float("nan"), 0.0]),
    ([6151, 2047, LONE_R - 1], [-float("inf"), 2.0**20, 0.75]),
    ([8201, 12287], [0.0, 5.0]),
]


@pytest.mark.parametrize("grid,block", [(1, 32), (2, 64)])
def test_row_sums_mark_the_chunk_of_a_lone_row(program, grid, block):
    """One mini-batch's row sums (op 4) where a chunk's only row is at its edge or holds
    only a NaN or an infinity: the chunk marked is the row's own (not a neighbour's, which
    a frontier of many rows a chunk would hide), a flag alone marks it, a row of only 0.0
    terms marks nothing, and the finish tests each row's own chunk: every row the bits of
    the torch code's exact sums."""
    exe, dtype = program
    indptr = np.cumsum([0] + [len(r) for r, _ in LONE_COLS])
    rows = np.concatenate([r for r, _ in LONE_COLS])
    vals = torch.tensor([x for _, v in LONE_COLS for x in v], dtype=torch.float64).to(dtype)
    cols = torch.arange(len(LONE_COLS))
    ptr = torch.from_numpy(indptr)  # (every column's edges, in order)
    vbits = vals.to(torch.float64).view(torch.int64)
    out, touched = run(exe, 4, indptr, rows, vbits, cols, ptr, [0, 1, 1, grid, block, LONE_R])
    want = exact_sums(vals, torch.from_numpy(rows), LONE_R).to(dtype).to(torch.float64)
    torch.testing.assert_close(_as_floats(out), want, rtol=0, atol=0, equal_nan=True)
    assert touched.tolist() == [1, 1, 1, 1, 0, 1, 1, 0]


#: divisors of the finish (float64; the kernel's dtype's): a LADIES total, its clamp, an
#: inexact one, a negative one, and 0, NaN and infinity (0 / 0, x / 0, x / inf)
SCALES = [2.75, 1e-30, 3.0, -0.1, 0.0, float("nan"), float("inf"), 7e5]


def _scaled(sums: np.ndarray, scales: list, per: int, dtype) -> torch.Tensor:
    """The program's ``p / c`` (torch's division, the reference) of the unscaled sums ``sums``
    (float64 bits of the kernel's values), row ``r`` by ``scales[r // per]``, as float64."""
    p = _as_floats(sums).to(dtype)
    c = torch.tensor(scales, dtype=torch.float64).to(dtype)
    b = torch.div(torch.arange(p.numel()), per, rounding_mode="floor").clamp(max=len(scales) - 1)
    out = torch.empty_like(p)
    for i in range(len(scales)):
        out[b == i] = p[b == i] / c[i]  # a 0-dim divisor, as the program's
    return out.to(torch.float64)


def _same_bits(got: torch.Tensor, want: torch.Tensor) -> None:
    """Bit for bit (a zero's sign included), NaN where NaN."""
    nan = torch.isnan(want)
    assert torch.equal(torch.isnan(got), nan)
    assert torch.equal(got[~nan].view(torch.int64), want[~nan].view(torch.int64))


@pytest.mark.parametrize("frontier,rounds,grid,block", CASES)
@pytest.mark.parametrize("values", ["spread", "ones"])
def test_the_finish_divides_as_the_program_does(program, frontier, rounds, grid, block, values):
    """gs_rowsum_finish (one mini-batch: ``scale`` a 0-dim total for every row) and
    gs_rowsum_chunks (a super-batch: each mini-batch's ``n`` rows by its own) with a scale
    (``SLICE_REDUCE``'s, the ``scaled_row_sums`` pass's): every row the bits of torch's
    division of the same kernels' unscaled sums by the same value (the program's ``p / c``),
    the untouched chunks' 0 divided too (0 / c: 0, -0 or NaN), NaN and infinities included;
    a scale index past the scales' count clamped (ASan: no read past them)."""
    exe, dtype = program
    vals = _values(values, dtype)
    _, buf, N, n = _frontier(frontier)
    ptr = _ptr(buf, n, N)
    R = NODES * N
    args = _args(vals, buf, ptr)
    space = R + 3 * 2048 + 5
    alone, _ = run(exe, 4, *args, [n, N, rounds, grid, block, space])
    for scales in ([SCALES[rounds % len(SCALES)]], SCALES[:3], SCALES):
        sbits = torch.tensor(scales, dtype=torch.float64).view(torch.int64)
        # one total for every row (per past the rows, as the host passes it), or a few
        (out,) = run(exe, 5, *args, [n, N, rounds, grid, block, space, space], sbits)
        want = _scaled(alone, scales[:1], space, dtype)
        _same_bits(_as_floats(out), want)
        (out,) = run(exe, 5, *args, [n, N, rounds, grid, block, space, 2048], sbits)
        want = _scaled(alone, scales, 2048, dtype)
        _same_bits(_as_floats(out), want)
        # by chunk: the super-batch's n rows a mini-batch (n = 0 for one: a scale for all)
        chunked, _, _ = run(exe, 2, *args, [n, R, rounds, grid, block, 64])
        per = max(n, 1) if N > 1 else R
        (out,) = run(exe, 6, *args, [n, N, rounds, grid, block, R, per], sbits)
        want = _scaled(chunked, scales, per, dtype)
        _same_bits(_as_floats(out), want)
