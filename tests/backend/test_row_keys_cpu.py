"""``kernels/layerwise.cu``'s ``gs_row_keys_compact`` on the CPU, under AddressSanitizer:
compiled as C++ with a thread per CUDA thread (``helpers.CUDA_THREADS_AS_CPP``: its warps'
ballots, shuffles and atomics between real threads), on the host's grid and on small grids
whose warps take many spans, it lists each batch's candidates, each once, with the key the
per-row formula gives (written out below as it was before a span's batch and hash seed were
found once: ``gs_word(gs_combine(key[0], key[1] + b), 0, v)``), and flags a bad probability
as that formula's check does. Batches of 300 rows cut most warps' spans of 128 rows (a span
across two batches: the per-row path), of 1,024 none; a block's round of 1,024 rows is
one batch's (one atomic for the block) for batches of 1,024, for one mini-batch and for most
rounds of batches of 3,000, and grids of 1 and 3 blocks take several rounds. CI has no GPU;
the GPU's comparison is ``tests/backend/test_cuda_topk.py`` and the samplers' tests.

The program takes the case's arrays and gives back the compacted keys, its reference keys
and its flags through ``helpers.run_int64_program``.
"""

import struct

import numpy as np
import pytest
from helpers import CUDA_THREADS_AS_CPP, INT64_IO_CPP, build_asan, run_int64_program

SHIM = (
    CUDA_THREADS_AS_CPP
    + r"""
#include "layerwise.cu"
"""
    + INT64_IO_CPP
    + r"""

// a candidate and its key as every row found them before (its batch by a division, the
// batch's seed by two hash rounds)
static bool ref_candidate(const unsigned* cand, const gs_t* probs, int shared, gs_i64 n,
                          gs_i64 r, gs_i64* bad) {
    if (probs == nullptr) return cand == nullptr || gs_cand_bit(cand, r);
    const gs_i64 b = n > 0 ? gs_batch(r, n) : 0;
    const double x = (double)probs[shared ? r - b * n : r];
    if (!shared || b == 0) {
        if (isnan(x) || isinf(x)) bad[0] = 1;
        else if (x < 0.0) bad[1] = 1;
    }
    return (cand == nullptr || gs_cand_bit(cand, r)) && x > 0.0;
}
static gs_i64 ref_key(const gs_t* probs, int shared, const gs_u64* key, gs_i64 n, gs_i64 r) {
    const gs_i64 b = n > 0 ? gs_batch(r, n) : 0;
    const gs_u64 w = gs_word(gs_combine(key[0], (gs_i64)key[1] + b), 0, r - b * n);
    return probs == nullptr
        ? (gs_i64)(w >> 1)
        : __double_as_longlong(__ddiv_rn(gs_exponential(w),
                                         (double)probs[shared ? r - b * n : r]));
}

int main() {
    // p: R, n, per, probs (0 none, 1 per row, 2 shared), grid; cand's words (none: null);
    // probs as float64 bits; the key's two words
    const vec p = read_vec(), cand_w = read_vec(), probs_b = read_vec(), key_w = read_vec();
    if (p.size() != 5) return 2;
    const gs_i64 R = p[0], n = p[1], per = p[2], grid = p[4];
    const int shared = p[3] == 2;
    std::vector<unsigned> cand(cand_w.begin(), cand_w.end());
    std::vector<gs_t> probs(probs_b.size());
    for (size_t i = 0; i < probs.size(); ++i) {
        double x;
        memcpy(&x, &probs_b[i], 8);
        probs[i] = (gs_t)x;
    }
    const unsigned* C = cand.empty() ? nullptr : cand.data();
    const gs_t* P = p[3] ? probs.data() : nullptr;
    std::vector<gs_u64> key(key_w.begin(), key_w.end());
    const gs_i64 N = (R + per - 1) / per;
    vec at(N), ckeys(R, -7), crows(R, -7), bad(2, 0), ref(R), ref_bad(2, 0);
    for (gs_i64 b = 0; b < N; ++b) at[b] = b * per;
    gs_launch(grid, GS_KEY_WARPS * 32, [&] {
        gs_row_keys_compact(C, R, P, shared, key.data(), n, per, at.data(), ckeys.data(),
                            crows.data(), bad.data());
    });
    for (gs_i64 r = 0; r < R; ++r)
        ref[r] = ref_candidate(C, P, shared, n, r, ref_bad.data())
                 ? ref_key(P, shared, key.data(), n, r) : GS_NOT_A_ROW;
    write_vec(at);
    write_vec(ckeys);
    write_vec(crows);
    write_vec(bad);
    write_vec(ref);
    write_vec(ref_bad);
    write_vec(vec(1, (long long)gs_bad_masks));
    return 0;
}
"""
)


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return build_asan(SHIM, tmp_path_factory.mktemp("row_keys_cpu") / "row_keys", "-pthread")


def _bits(x: float) -> int:
    return struct.unpack("<q", struct.pack("<d", x))[0]


@pytest.mark.parametrize("grid", ["host", 1, 3])
@pytest.mark.parametrize("probs", [None, "per_row", "shared", "bad"])
@pytest.mark.parametrize("per, copies", [(300, 5), (1024, 3), (300, 1), (3000, 2), (5000, 1)])
def test_the_compacted_keys_are_each_rows_key(program, grid, probs, per, copies):
    rng = np.random.default_rng(per + copies + (len(probs) if probs else 0))
    R = per * copies
    n = per if copies > 1 else 0  # one mini-batch: no batches in the keys
    cand = rng.integers(0, 2**32, R // 32 + 1) & rng.integers(0, 2**32, R // 32 + 1)
    p = []
    if probs is not None:
        p = rng.random(per if probs == "shared" else R) ** 3
        p[::7] = 0
        if probs == "bad":
            p[5], p[-3] = -0.5, np.nan  # (the last a later batch's: flagged per row)
        p = [_bits(x) for x in p]
    code = {None: 0, "per_row": 1, "bad": 1, "shared": 2}[probs]
    threads = -(-R // 4)  # the host's launch: a thread per 4 rows, blocks of 256
    blocks = -(-threads // 256) if grid == "host" else grid
    key = [0x1234_5678_9ABC_DEF0, 77]
    # (a timeout: lanes that diverge around a collective hang)
    got = run_int64_program(program, [R, n, per, code, blocks], cand, p, key, timeout=300)
    at, ckeys, crows, bad, ref, ref_bad, bad_masks = got
    assert bad_masks[0] == 0  # every collective's masks as CUDA requires
    assert np.array_equal(bad, ref_bad)
    for b in range(copies):
        got = slice(b * per, at[b])
        order = np.argsort(crows[got])
        rows = crows[got][order]
        want = np.flatnonzero(ref[b * per : (b + 1) * per] != 2**63 - 1) + b * per
        assert np.array_equal(rows, want), b  # each of its candidates once
        assert np.array_equal(ckeys[got][order], ref[rows]), b
