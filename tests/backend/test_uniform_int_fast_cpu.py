"""``gs_uniform_int_fast`` of ``kernels/nodewise.cu`` (the node-wise sampler's draws without a
64-bit division for degrees below 2**32) built for the CPU, against the contract's
``uniform_int``: ``(r >> 1) % n`` bit for bit.

The function is IEEE arithmetic throughout (the conversions round to nearest or truncate,
``__drcp_rn`` and the products round to nearest, nothing is contracted into an FMA), so a
host build computes what the GPU computes; the CUDA tests then compare the kernel's samples
with the torch backend's.
"""

import re
import struct
import subprocess

import numpy as np
import pytest
from helpers import CUDA_AS_CPP, CXX, KERNELS, build_cpp

PROGRAM = r"""
#include <cstdio>
#include <cstdint>
#include <random>
#include "hash.cuh"
static inline double __drcp_rn(double x) { return 1.0 / x; }
%s
int main(int argc, char** argv) {
    // (r, n) pairs from stdin: their values to stdout
    unsigned long long pair[2];
    while (fread(pair, 8, 2, stdin) == 2) {
        long long v = gs_uniform_int_fast(pair[0], (long long)pair[1]);
        fwrite(&v, 8, 1, stdout);
    }
    // then random words against %%, every magnitude of n below 2**33 (past 2**32: the
    // division itself)
    std::mt19937_64 g(7);
    long long bad = 0;
    for (long i = 0; i < 3000000; ++i) {
        const unsigned long long r = g();
        long long n = (long long)(g() >> (64 - 1 - (int)(g() %% 33)));
        if (n == 0) n = 1;
        if (gs_uniform_int_fast(r, n) != (long long)((r >> 1) %% (unsigned long long)n)) ++bad;
    }
    fprintf(stderr, "mismatches %%lld\n", bad);
    return bad != 0;
}
"""


def _function() -> str:
    text = (KERNELS / "nodewise.cu").read_text()
    m = re.search(r"__device__ __forceinline__ gs_i64 gs_uniform_int_fast\(.*?\n}\n", text, re.S)
    assert m, "gs_uniform_int_fast in kernels/nodewise.cu"
    return m.group(0)


def _cases() -> list:
    """(r, n): words at and around multiples of n (where a quotient off by one shows), the
    extreme words, and n at the edges of 2**16, 2**31 and 2**32."""
    rng = np.random.default_rng(3)
    ns = [1, 2, 3, 7, 2**16 - 1, 2**16, 2**31 - 1, 2**31, 2**31 + 1, 2**32 - 2, 2**32 - 1]
    ns += [2**32, 2**32 + 1, 3 * 2**40 + 5]
    ns += [int(v) for v in rng.integers(1, 2**32, 20)]
    out = []
    for n in ns:
        for r in (0, 1, 2, 2**63, 2**63 - 1, 2**64 - 1, 2**64 - 2):
            out.append((r, n))
        top = (2**63 - 1) // n
        for q in [top, top - 1, 1, 2] + [int(v) for v in rng.integers(0, top + 1, 150)]:
            for d in (-1, 0, 1):
                x = q * n + d
                if 0 <= x < 2**63:
                    out += [(2 * x, n), (2 * x + 1, n)]
    return out


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_the_fast_uniform_int_is_the_contract_s(tmp_path):
    exe = tmp_path / "fast_mod"
    done = build_cpp(CUDA_AS_CPP + PROGRAM % _function(), exe)
    assert done.returncode == 0, done.stderr[-3000:]
    cases = _cases()
    data = b"".join(struct.pack("<QQ", r, n) for r, n in cases)
    run = subprocess.run([str(exe)], input=data, capture_output=True, check=False)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    got = np.frombuffer(run.stdout, np.int64)
    want = [(r >> 1) % n for r, n in cases]
    assert len(got) == len(want) > 10_000
    assert got.tolist() == want
