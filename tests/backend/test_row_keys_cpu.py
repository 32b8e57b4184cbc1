"""``kernels/layerwise.cu``'s ``gs_row_keys_compact`` on the CPU, under AddressSanitizer:
compiled as C++ with a thread per CUDA thread (``helpers.CUDA_THREADS_AS_CPP``: its warps'
ballots, shuffles and atomics between real threads), on the host's grid and on small grids
whose warps take many spans, it lists each batch's candidates, each once, with the key the
per-row formula gives (written out below as it was before a span's batch and hash seed were
found once: ``gs_word(gs_combine(key[0], key[1] + b), 0, v)``), and flags a bad probability
as that formula's check does. Batches of 300 rows cut most warps' spans of 128 rows (a span
across two batches: the per-row path), of 1,024 none. CI has no GPU; the GPU's comparison
is ``tests/backend/test_cuda_topk.py`` and the super-batched samplers' tests.

The protocol: the test writes int64 arrays (each its length first) to the program's stdin
and reads the program's arrays back.
"""

import struct
import subprocess

import numpy as np
import pytest
from helpers import CUDA_THREADS_AS_CPP, CXX, build_cpp

SHIM = (
    CUDA_THREADS_AS_CPP
    + r"""
#include "layerwise.cu"
#include <cstdio>
typedef std::vector<long long> vec;
static vec get() {                      // one array: its length, then its entries
    long long n = 0;
    if (fread(&n, 8, 1, stdin) != 1) return vec();
    vec v(n);
    if (n && fread(v.data(), 8, n, stdin) != (size_t)n) return vec();
    return v;
}
static void put(const vec& v) {
    long long n = v.size();
    fwrite(&n, 8, 1, stdout);
    fwrite(v.data(), 8, n, stdout);
}

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
    const vec p = get(), cand_w = get(), probs_b = get(), key_w = get();
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
    put(at);
    put(ckeys);
    put(crows);
    put(bad);
    put(ref);
    put(ref_bad);
    put(vec(1, (long long)gs_bad_masks));
    return 0;
}
"""
)


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    if CXX is None:
        pytest.skip("no C++ compiler")
    exe = tmp_path_factory.mktemp("row_keys_cpu") / "row_keys"
    done = build_cpp(SHIM, exe, "-g", "-pthread", "-fsanitize=address", "-fno-omit-frame-pointer")
    if done.returncode and "sanitize" in done.stderr:
        pytest.skip(f"no AddressSanitizer runtime: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr[-3000:]
    return exe


def _run(exe, arrays) -> list:
    data = b"".join(
        np.int64(np.size(a)).tobytes() + np.asarray(a, dtype=np.int64).tobytes() for a in arrays
    )
    done = subprocess.run(
        [str(exe)],
        input=data,
        capture_output=True,
        check=False,
        timeout=300,  # lanes that diverge around a collective hang
        env={"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0"},
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    out, rest = [], done.stdout
    while rest:
        k = int(np.frombuffer(rest[:8], np.int64)[0])
        out.append(np.frombuffer(rest[8 : 8 + 8 * k], np.int64))
        rest = rest[8 + 8 * k :]
    return out


def _bits(x: float) -> int:
    return struct.unpack("<q", struct.pack("<d", x))[0]


@pytest.mark.parametrize("grid", ["host", 1, 3])
@pytest.mark.parametrize("probs", [None, "per_row", "shared", "bad"])
@pytest.mark.parametrize("per, copies", [(300, 5), (1024, 3), (300, 1)])
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
    at, ckeys, crows, bad, ref, ref_bad, bad_masks = _run(
        program, [[R, n, per, code, blocks], cand, p, key]
    )
    assert bad_masks[0] == 0  # every collective's masks as CUDA requires
    assert np.array_equal(bad, ref_bad)
    for b in range(copies):
        got = slice(b * per, at[b])
        order = np.argsort(crows[got])
        rows = crows[got][order]
        want = np.flatnonzero(ref[b * per : (b + 1) * per] != 2**63 - 1) + b * per
        assert np.array_equal(rows, want), b  # each of its candidates once
        assert np.array_equal(ckeys[got][order], ref[rows]), b
