"""The CUDA listed sample's probabilities by the row-sum kernels themselves
(``kernels/rowsum.cu`` built as C++, ``helpers.CUDA_THREADS_AS_CPP``): the listed host code
(``gsample/backend/cuda/listed.py``), its row sums run by ``gs_rowsum_edges_*`` and
``gs_rowsum_finish`` over the slice's distinct rows, against the dense path's
``SLICE_REDUCE`` kernels (``gs_rowsum_exponents`` / ``_add`` / ``_finish`` over the whole
row space, each row divided by its mini-batch's scale), bit for bit at the slice's rows;
and the listed sample against the dense sample drawn from those dense probabilities (the
torch draws on both sides: the CUDA keys' own equality is a GPU test's). One mini-batch
and a super-batch, float32 and float64, scales that round."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import (
    FLOAT_IO_CPP,
    INT64_IO_CPP,
    assert_same_csc,
    build_float_kernels,
    run_int64_program,
)

import gsample as gs
from gsample.backend.cuda import listed
from gsample.backend.cuda.rowsum import NO_SCALE
from gsample.backend.torch import fused_reduce, fused_select, select
from gsample.base.random import BatchKeys, combine, exponential, key_prefix, op_key, signed
from gsample.formats.csc import gather_segments

PROGRAM = (
    r"""
#include "rowsum.cu"
#include <unistd.h>
"""
    + INT64_IO_CPP
    + FLOAT_IO_CPP
    + r"""
int main() {
    alarm(120);
    const vec op = read_vec();
    if (op.empty()) return 2;
    if (op[0] == 1) {  // the dense path: the frontier's row sums over R rows, divided
        const vec ip = read_vec(), rw = read_vec(), vbits = read_vec(), cols = read_vec();
        const vec ptr = read_vec(), p = read_vec(), sbits = read_vec();
        const std::vector<gs_idx> indptr(ip.begin(), ip.end()), rows(rw.begin(), rw.end());
        const std::vector<gs_t> values = reals(vbits), scale = reals(sbits);
        const long long n = p[0], R = p[1], per = p[2], K = (R + GS_CHUNK - 1) / GS_CHUNK + 1;
        std::vector<int> emax(R, 0), flags(R, 0);
        std::vector<gs_u64> lo(R, 0xA5A5A5A5A5A5A5A5ULL), hi(R, 0x5A5A5A5A5A5A5A5AULL);
        std::vector<unsigned char> touched(K, 0);
        std::vector<gs_t> out(R, (gs_t)-7);
        const gs_t* V = values.empty() ? nullptr : values.data();
        gs_launch(3, 64, [&]() {
            gs_rowsum_exponents(indptr.data(), rows.data(), V, cols.data(), cols.size(),
                                ptr.data(), n, emax.data(), flags.data(), lo.data(), hi.data(),
                                touched.data());
        });
        gs_launch(3, 64, [&]() {
            gs_rowsum_add(indptr.data(), rows.data(), V, cols.data(), cols.size(), ptr.data(),
                          n, emax.data(), lo.data(), hi.data());
        });
        gs_launch(3, 64, [&]() {
            gs_rowsum_finish(emax.data(), flags.data(), lo.data(), hi.data(), R, out.data(),
                             touched.data(), scale.data(), per, scale.size());
        });
        write_reals(out);
    } else if (op[0] == 2) {  // rowsum.edge_row_sums: R rows' sums of edges (rows[e], values[e])
        const vec rw = read_vec(), vbits = read_vec(), sbits = read_vec(), p = read_vec();
        const std::vector<gs_i64> rows(rw.begin(), rw.end());
        const std::vector<gs_t> values = reals(vbits), scale = reals(sbits);
        const long long R = p[0], per = p[1], E = rows.size();
        std::vector<int> emax(R, 0), flags(R, 0);
        std::vector<gs_u64> lo(R, 0), hi(R, 0);
        std::vector<gs_t> out(R, (gs_t)-7);
        const gs_t* V = values.empty() ? nullptr : values.data();
        gs_launch(3, 64, [&]() {
            gs_rowsum_edges_exponents(rows.data(), V, E, emax.data(), flags.data());
        });
        gs_launch(3, 64, [&]() {
            gs_rowsum_edges_add(rows.data(), V, E, emax.data(), lo.data(), hi.data());
        });
        gs_launch(3, 64, [&]() {
            gs_rowsum_finish(emax.data(), flags.data(), lo.data(), hi.data(), R, out.data(),
                             nullptr, scale.empty() ? nullptr : scale.data(), per,
                             scale.empty() ? 1 : (long long)scale.size());
        });
        write_reals(out);
    } else if (op[0] == 3) {  // the device listing: places, sums, the positive rows' keys
        const vec ip = read_vec(), rw = read_vec(), vbits = read_vec(), cols = read_vec();
        const vec ptr = read_vec(), p = read_vec(), sbits = read_vec(), kw = read_vec();
        const std::vector<gs_idx> indptr(ip.begin(), ip.end()), rows(rw.begin(), rw.end());
        const std::vector<gs_t> values = reals(vbits), scale = reals(sbits);
        const long long n = p[0], R = p[1], per = p[2], copies = p[3], cap = p[4];
        const long long wcopy = p[5], M = copies * cap;
        const std::vector<gs_u64> key(kw.begin(), kw.end());
        std::vector<int> slot(R, -1), emax(M, 7), flags(M, 7);
        std::vector<gs_i64> count(copies, 0), list(M, -5), at(copies), ckeys(M, -5), crows(M, -5);
        std::vector<gs_i64> bad(2, 0);
        std::vector<gs_u64> lo(M, 0xA5A5A5A5A5A5A5A5ULL), hi(M, 0x5A5A5A5A5A5A5A5AULL);
        for (long long b = 0; b < copies; ++b) at[b] = b * cap;
        gs_launch(3, 64, [&]() {
            gs_listed_claim(indptr.data(), rows.data(), cols.data(), cols.size(), ptr.data(), n,
                            slot.data(), count.data(), cap, list.data(), emax.data(),
                            flags.data(), lo.data(), hi.data(), 2);
        });
        gs_launch(3, 64, [&]() {
            gs_listed_exponents(indptr.data(), rows.data(), values.data(), wcopy, cols.data(),
                                cols.size(), ptr.data(), n, slot.data(), cap, emax.data(),
                                flags.data());
        });
        gs_launch(3, 64, [&]() {
            gs_listed_add(indptr.data(), rows.data(), values.data(), wcopy, cols.data(),
                          cols.size(), ptr.data(), n, slot.data(), cap, emax.data(), lo.data(),
                          hi.data());
        });
        gs_launch(3, 64, [&]() {
            gs_listed_keys(count.data(), cap, copies, list.data(), emax.data(), flags.data(),
                           lo.data(), hi.data(), scale.data(), per, scale.size(), key.data(), n,
                           at.data(), ckeys.data(), crows.data(), bad.data());
        });
        write_vec(vec(slot.begin(), slot.end()));
        write_vec(count);
        write_vec(at);
        write_vec(ckeys);
        write_vec(crows);
        write_vec(bad);
    } else {
        return 2;
    }
    write_vec(vec(1, (long long)gs_bad_masks));
    return 0;
}
"""
)

DTYPES = {"float": torch.float32, "double": torch.float64}
GRAPH = gs.datasets.rmat(600, 12_000, seed=3).csc
NODES = GRAPH.num_nodes
DEG = GRAPH.indptr.diff()


@pytest.fixture(scope="module", params=sorted(DTYPES))
def program(request, tmp_path_factory):
    ctype = request.param
    exe = build_float_kernels(tmp_path_factory, "listed_sums", PROGRAM, ctype)
    return exe, DTYPES[ctype]


def _run(exe, code: int, *arrays) -> np.ndarray:
    out, bad_masks = run_int64_program(exe, [code], *arrays)
    assert bad_masks[0] == 0
    return out


def _bits(t: torch.Tensor | None):
    return [] if t is None else t.to(torch.float64).contiguous().view(torch.int64)


def _reals(a: np.ndarray, dtype) -> torch.Tensor:
    return torch.from_numpy(a.copy()).view(torch.float64).to(dtype)


def kernel_edge_row_sums(exe):
    """``rowsum.edge_row_sums`` by the kernels built as C++ (the same arguments)."""

    def sums(rows, values, R, dtype, scale=NO_SCALE):
        divisor, per, _count = scale
        sbits = _bits(divisor.reshape(-1)) if isinstance(divisor, torch.Tensor) else []
        out = _run(exe, 2, rows.to(torch.int64), _bits(values), sbits, [R, per])
        return _reals(out, dtype)

    return sums


def _weights(dtype, seed=0) -> torch.Tensor:
    """Positive weights spread over 2**-30 .. 2**30: their sums round, in any order but the
    exact one."""
    g = torch.Generator().manual_seed(seed)
    e = torch.randint(-30, 30, (GRAPH.nnz,), generator=g)
    return torch.ldexp(torch.rand(GRAPH.nnz, generator=g, dtype=torch.float64) + 0.01, e).to(dtype)


def _frontier(copies: int, seed=1):
    """(encoded frontier grouped by mini-batch, n): one mini-batch (n = 0) or ``copies``."""
    g = torch.Generator().manual_seed(seed)
    parts = [torch.randint(0, NODES, (40 + 17 * b,), generator=g) for b in range(copies)]
    n = NODES if copies > 1 else 0
    return torch.cat([p + b * n for b, p in enumerate(parts)]), n


def dense_probs(exe, w, cols, n: int, copies: int, scale) -> torch.Tensor:
    """``SLICE_REDUCE``'s probabilities over the whole row space (``copies * NODES`` rows),
    as the dense CUDA path computes them: the frontier kernels, each row divided by its
    mini-batch's scale in the finish."""
    v = cols - (cols // n) * n if n else cols
    ptr = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(DEG[v], 0)])
    R = NODES * copies
    per = n if copies > 1 and scale.dim() == 1 else max(R, 1)
    out = _run(
        exe, 1, GRAPH.indptr, GRAPH.rows, _bits(w), cols, ptr, [n, R, per], _bits(scale.reshape(-1))
    )
    return _reals(out, w.dtype)


@pytest.mark.parametrize("copies", [1, 3])
@pytest.mark.parametrize("per_batch", [False, True])
def test_listed_probabilities_are_the_dense_vector_s_bits(program, monkeypatch, copies, per_batch):
    """``listed._probs`` (the slice's distinct rows, their sums by the edge kernels, divided
    in the finish: one scale, or each row by its mini-batch's) gives, at every slice row,
    the bits the dense kernels write there; every other dense row is 0."""
    exe, dtype = program
    monkeypatch.setattr(listed, "edge_row_sums", kernel_edge_row_sums(exe))
    w = _weights(dtype)
    cols, n = _frontier(copies)
    scale = (
        torch.tensor([0.37, 3.1, 1e-3], dtype=dtype)[:copies]
        if per_batch and copies > 1
        else torch.tensor(0.37, dtype=dtype)
    )
    want = dense_probs(exe, w, cols, n, copies, scale)
    # the listed host code's steps up to its probabilities
    v = cols - (cols // n) * n if n else cols
    index, _ = gather_segments(GRAPH.indptr, v)
    rows_s = GRAPH.rows[index] + (torch.repeat_interleave(cols // n, DEG[v]) * n if n else 0)
    rows, local, count = listed._distinct(rows_s)
    E, L = rows_s.numel(), int(count)
    got = listed._probs(local, w[index], rows, E, scale, n, copies if n else None)
    assert got.shape == (E,) and not got[L:].any()  # (rows past the distinct ones: 0)
    rows, got = rows[:L], got[:L]
    assert torch.equal(
        got.view(torch.int64 if dtype == torch.float64 else torch.int32),
        want[rows].view(torch.int64 if dtype == torch.float64 else torch.int32),
    )
    off = torch.ones(want.numel(), dtype=torch.bool)
    off[rows] = False
    assert not want[off].any()
    assert (got > 0).all() and got.unique().numel() > rows.numel() // 2  # rounded values


@pytest.mark.parametrize("copies", [1, 3])
@pytest.mark.parametrize("k", [5, 60, 100_000])
def test_the_listed_sample_is_the_dense_sample(program, monkeypatch, copies, k):
    """The listed sample (its sums by the kernels, the torch draws) is the dense sample drawn
    from the dense kernels' probabilities (the torch code of the fused collective sample,
    the same draws): rows, kept edges and their order, values, ids."""
    exe, dtype = program
    monkeypatch.setattr(listed, "edge_row_sums", kernel_edge_row_sums(exe))
    monkeypatch.setattr(listed, "CudaDraws", select.Draws)
    A = GRAPH.with_values(_weights(torch.float32, seed=5))
    w = _weights(dtype, seed=6)
    cols, n = _frontier(copies, seed=k)
    if copies == 1:
        key, scale = op_key(3, 1, k), torch.tensor(0.37, dtype=dtype)
    else:
        key = BatchKeys.of(seed=3, ordinal=1, first_batch=k, copies=copies, num_nodes=NODES)
        scale = torch.tensor([0.37, 3.1, 1e-3], dtype=dtype)
    p = dense_probs(exe, w, cols, n, copies, scale)
    want = fused_select.slice_collective_sample(
        A, cols, k, False, key, node_probs=p, probs_in_slice=True
    )
    got = listed._sample(A, cols, w, scale, k, False, key)
    assert_same_csc(got, want)
    assert got.nnz > 0


@pytest.mark.parametrize("copies", [1, 3])
def test_a_scale_of_another_dtype_divides_as_torch_divides_the_dense_sums(
    program, monkeypatch, copies
):
    """float32 weights, float64 scales: the dense path's finish cannot divide (its sums, then
    ``fused_reduce.divided``: a 0-dim scale's promotion, each mini-batch's rows by its own);
    the listed rows the same bits."""
    exe, dtype = program
    if dtype != torch.float32:
        pytest.skip("a float64 program: the scales' dtype is its own")
    monkeypatch.setattr(listed, "edge_row_sums", kernel_edge_row_sums(exe))
    w = _weights(dtype, seed=2)
    cols, n = _frontier(copies, seed=3)
    scale = torch.tensor([0.37, 3.1, 1e-3], dtype=torch.float64)[:copies]
    scale = scale if copies > 1 else scale[0]
    ones = torch.ones(copies, dtype=dtype) if copies > 1 else torch.tensor(1.0, dtype=dtype)
    sums = dense_probs(exe, w, cols, n, copies, ones)  # (a division by 1: the sums)
    want = fused_reduce.divided(sums, scale, (copies, NODES) if copies > 1 else None)
    v = cols - (cols // n) * n if n else cols
    index, _ = gather_segments(GRAPH.indptr, v)
    rows_s = GRAPH.rows[index] + (torch.repeat_interleave(cols // n, DEG[v]) * n if n else 0)
    rows, local, count = listed._distinct(rows_s)
    got = listed._probs(local, w[index], rows, rows_s.numel(), scale, n, copies if n else None)
    rows, got = rows[: int(count)], got[: int(count)]
    assert got.dtype == want.dtype == torch.float32
    assert torch.equal(got.view(torch.int32), want[rows].view(torch.int32))


def _device_listing(exe, w, cols, n: int, copies: int, scale, cap: int, key: tuple):
    """``listed._on_device``'s kernels (``gs_listed_*``) built as C++, every array of its exact
    size (AddressSanitizer bounds each read and write): the map, each batch's count and
    cursor, the compacted keys and rows, the two check flags."""
    v = cols - (cols // n) * n if n else cols
    ptr = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(DEG[v], 0)])
    R = NODES * copies
    per = n if copies > 1 and scale.dim() == 1 else max(R, 1)
    wcopy = GRAPH.nnz if w.numel() == copies * GRAPH.nnz != GRAPH.nnz else 0
    params = [n, R, per, copies, cap, wcopy]
    args = (GRAPH.indptr, GRAPH.rows, _bits(w), cols, ptr, params, _bits(scale.reshape(-1)), key)
    *out, bad_masks = run_int64_program(exe, [3], *args)
    assert bad_masks[0] == 0
    return [torch.from_numpy(a.copy()) for a in out]


@pytest.mark.parametrize("copies", [1, 3])
@pytest.mark.parametrize("per_copy", [False, True])
def test_the_device_listing_keys_the_dense_probabilities_positive_rows(program, copies, per_copy):
    """The device listing (``gs_listed_claim``, ``_exponents``, ``_add``, ``_keys``) gives each
    batch's distinct slice rows a place (the map: -1 off them), and compacts, batch by
    batch, exactly the rows whose dense probability is positive with the dense kernels'
    key ``exponential(word) / p`` (``p`` the dense vector's bits at the row); with lists too
    short the counts pass the room, the rows without a place keep -1, and nothing is read
    or written out of bounds."""
    exe, dtype = program
    cols, n = _frontier(copies, seed=11)
    w = _weights(dtype, seed=4)
    if per_copy and copies > 1:  # one copy of the weights a mini-batch
        w = torch.cat([_weights(dtype, seed=4 + b) for b in range(copies)])
    scale = (
        torch.tensor([0.37, 3.1, 1e-3], dtype=dtype)[:copies]
        if copies > 1
        else torch.tensor(0.37, dtype=dtype)
    )
    if per_copy and copies > 1:
        want = torch.cat(
            [
                dense_probs(exe, w[b * GRAPH.nnz : (b + 1) * GRAPH.nnz], cols, n, copies, scale)[
                    b * NODES : (b + 1) * NODES
                ]
                for b in range(copies)
            ]
        )
    else:
        want = dense_probs(exe, w, cols, n, copies, scale)
    prefix, first = key_prefix(3, 1), 5
    v = cols - (cols // n) * n if n else cols
    index, _ = gather_segments(GRAPH.indptr, v)
    rows_s = GRAPH.rows[index] + (torch.repeat_interleave(cols // n, DEG[v]) * n if n else 0)
    distinct = rows_s.unique()
    cap = NODES
    slot, count, at, ckeys, crows, bad = _device_listing(
        exe, w, cols, n, copies, scale, cap, (signed(prefix), first)
    )
    assert not bad.any()
    listed_rows = (slot >= 0).nonzero().squeeze(1)
    assert torch.equal(listed_rows, distinct) and (slot[slot < 0] == -1).all()
    for b in range(copies):
        mine = (distinct >= b * NODES) & (distinct < (b + 1) * NODES) if n else distinct >= 0
        assert int(count[b]) == int(mine.sum())
        places = slot[distinct[mine]]
        assert torch.equal(places.sort().values, torch.arange(int(count[b])))  # distinct places
        got_rows = crows[b * cap : int(at[b])]
        order = got_rows.argsort()
        got_rows, got_keys = got_rows[order], ckeys[b * cap : int(at[b])][order]
        rows_b = distinct[mine]
        positive = rows_b[want[rows_b] > 0]
        assert torch.equal(got_rows, positive)
        seed = combine(combine(prefix, first + b), 0)
        words = torch.tensor([signed(combine(seed, int(r) - b * n)) for r in positive])
        keys = exponential(words) / want[positive].to(torch.float64)
        # (the C++ build's log is the host's libm, torch's its own: an ulp apart at most)
        torch.testing.assert_close(got_keys.view(torch.float64), keys, rtol=1e-14, atol=0)
    # too little room: the counts say so, the rows past it keep no place
    slot, count, at, ckeys, crows, bad = _device_listing(
        exe, w, cols, n, copies, scale, 7, (signed(prefix), first)
    )
    assert (count > 7).all() and int((slot >= 0).sum()) == 7 * copies
    assert (slot[slot < 0] == -1).all()
