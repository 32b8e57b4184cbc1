"""node2vec's edge test (``kernels/walkstep.cuh``): the WAYS-way search ``gs_has_row_ways``
(``GS_WALK_WAYS`` 4 and 8; from pivots read early by ``gs_column_pivots`` or not) against
the binary search ``gs_has_row`` it replaces and the truth, on adversarial columns: empty,
one row, lengths about the scan's and a round's, a hub, duplicate runs, a column of one id
repeated, self loops, ids at both ends of the int64 range, each column placed at an offset
in a larger array whose other entries AddressSanitizer poisons, so a read outside the
column ends the program. Columns out of order (outside the CSC contract) must give some
answer, read inside the column only and end.

The kernel source compiled as C++ (``helpers.CUDA_AS_CPP``) under AddressSanitizer; the
walks the search serves are ``test_walk_kernel_cpu.py``'s (every switch)."""

import numpy as np
import pytest
from helpers import CUDA_AS_CPP, INT64_IO_CPP, build_asan, run_int64_program

PROGRAM = (
    CUDA_AS_CPP
    + r"""
template <typename T> static inline T __shfl_down_sync(unsigned, T, int) { return T(0); }
#include "walkstep.cuh"
#include <sanitizer/asan_interface.h>
"""
    + INT64_IO_CPP
    + r"""
// Input: the columns' rows (concatenated), their bounds (C + 1), the queries (concatenated)
// and their bounds per column, the offset each column is placed at. Output: per query, the
// binary search's answer, the WAYS-way search's from scratch and from pivots read first.
int main() {
    const vec rows = read_vec(), bounds = read_vec(), queries = read_vec(), qb = read_vec();
    const vec at = read_vec();
    const long long C = (long long)bounds.size() - 1;
    if (C < 0 || (long long)qb.size() != C + 1 || (long long)at.size() != 1) return 2;
    vec old_, fresh, early;
    for (long long c = 0; c < C; ++c) {
        const long long len = bounds[c + 1] - bounds[c], lo = at[0] + c;
        // the column at [lo, lo + len) of an array with poisoned room on both sides
        std::vector<long long> room(lo + len + 64, 0x5A5A5A5A);
        for (long long i = 0; i < len; ++i) room[lo + i] = rows[bounds[c] + i];
        ASAN_POISON_MEMORY_REGION(room.data(), lo * 8);
        ASAN_POISON_MEMORY_REGION(room.data() + lo + len, 64 * 8);
        const gs_i64* R = room.data();
        for (long long k = qb[c]; k < qb[c + 1]; ++k) {
            const gs_i64 x = queries[k];
            old_.push_back(gs_has_row(R, lo, lo + len, x));
            gs_walk_column col;
            col.lo = lo;
            col.hi = lo + len;
            col.read = false;
            fresh.push_back(gs_has_row_ways(R, col, x));
            gs_column_pivots(R, col);
            gs_column_pivots(R, col);                  // a second call reads nothing more
            early.push_back(gs_has_row_ways(R, col, x));
        }
        ASAN_UNPOISON_MEMORY_REGION(room.data(), room.size() * 8);
    }
    write_vec(old_);
    write_vec(fresh);
    write_vec(early);
    return 0;
}
"""
)

LO, HI = np.iinfo(np.int64).min, np.iinfo(np.int64).max


@pytest.fixture(scope="module", params=[4, 8], ids=lambda w: f"{w}-ways")
def program(request, tmp_path_factory):
    exe = tmp_path_factory.mktemp(f"edge_test_{request.param}") / "edge_test"
    return build_asan(PROGRAM, exe, f"-DGS_WALK_WAYS={request.param}")


def _columns(sorted_: bool = True) -> list:
    """Adversarial columns (each an int64 array; sorted unless ``sorted_`` is False)."""
    g = np.random.default_rng(11)
    cols = [np.array([], dtype=np.int64), np.array([5]), np.array([0]), np.array([HI])]
    for n in (2, 3, 4, 7, 8, 9, 10, 15, 16, 17, 31, 32, 33, 35, 64, 65, 100, 257):
        cols.append(np.sort(g.choice(10 * n, n, replace=False)))  # distinct
        cols.append(np.sort(g.integers(0, n, n)))  # duplicates
    cols.append(np.full(40, 7))  # one id, repeated
    cols.append(np.repeat(np.arange(12), [1, 9, 1, 1, 20, 1, 1, 1, 3, 1, 1, 30]))  # runs
    cols.append(np.sort(g.choice(1 << 22, 100_000, replace=False)))  # a hub
    cols.append(np.sort(g.integers(0, 3000, 20_000)))  # a hub of duplicates
    cols.append(np.array([LO, -1, 0, 1, HI - 1, HI]))  # the ends (and past an id's range)
    cols.append(np.concatenate([[0] * 9, np.arange(1, 30), [HI] * 9]))
    cols.append(np.sort(np.append(g.choice(500, 60, replace=False), 123)))  # a self loop
    if not sorted_:
        cols = [g.permutation(c) for c in cols] + [c[::-1].copy() for c in cols]
    return [np.asarray(c, dtype=np.int64) for c in cols]


def _queries(col: np.ndarray) -> np.ndarray:
    """Every row, its neighbours, the column's ends and past them, and the int64 ends."""
    near = np.concatenate([col, col - 1, col + 1]) if col.size else np.array([], np.int64)
    ends = np.array([LO, LO + 1, -1, 0, 1, HI - 1, HI], dtype=np.int64)
    if col.size > 500:  # a hub: a sample of its rows and misses
        g = np.random.default_rng(col.size)
        near = g.choice(near, 3000, replace=False)
    # col +- 1 wraps at the int64 ends (LO - 1 == HI): still a query
    return np.unique(np.concatenate([near, ends]))


def _run(program, cols, at):
    bounds = np.concatenate([[0], np.cumsum([c.size for c in cols])])
    qs = [_queries(c) for c in cols]
    qb = np.concatenate([[0], np.cumsum([q.size for q in qs])])
    with np.errstate(over="ignore"):
        return qs, run_int64_program(
            program, np.concatenate(cols), bounds, np.concatenate(qs), qb, [at]
        )


@pytest.mark.parametrize("at", [0, 1, 1000])
def test_the_ways_search_answers_as_the_binary_search(program, at):
    cols = _columns()
    qs, (old, fresh, early) = _run(program, cols, at)
    truth = np.concatenate([np.isin(q, c) for q, c in zip(qs, cols)])
    assert truth.any() and not truth.all()
    assert np.array_equal(old, truth)
    assert np.array_equal(fresh, truth)
    assert np.array_equal(early, truth)


def test_columns_out_of_order_are_read_inside_only(program):
    """Outside the contract (rows not sorted): some answer, every read inside the column
    (AddressSanitizer), and an end (the program's timeout)."""
    cols = _columns(sorted_=False)
    qs, (old, fresh, early) = _run(program, cols, 3)
    assert old.size == fresh.size == early.size == sum(q.size for q in qs)
    assert set(np.unique(np.concatenate([fresh, early]))) <= {0, 1}
