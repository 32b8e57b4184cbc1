"""The kernels' id handling on their CPU twins, under AddressSanitizer, with ids drawn by
hypothesis: no read or write through an id outside its array, whatever the ids.

``kernels/walk.cu``, ``gather.cu``, ``relabel.cu`` and ``convert.cu`` are compiled as C++
(one thread runs every grid-stride loop, CUDA's names defined as plain C++:
``helpers.CUDA_AS_CPP``) into one program built with ``-fsanitize=address``, whose
arrays are exact-size heap allocations: a read or write past one, before one, or through a
wild id ends the program with a report, which fails the test. CI has no GPU; the GPU's
proof is compute-sanitizer's memcheck on the same kernels (``scripts/memcheck.py``,
``tests/test_adversarial_ids.py``).

The test talks to the program through ``helpers.run_int64_program``: an op code and int64
arrays in, the arrays it writes back out.
"""

import numpy as np
import pytest
import torch
from helpers import CUDA_AS_CPP, INT64_IO_CPP, build_asan, run_int64_program
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gsample as gs
from gsample.backend.torch import walk as reference

SHIM = (
    CUDA_AS_CPP
    + r"""
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdint>
#include <vector>
// one thread runs every walker: a warp of one lane (its missing lanes add nothing)
template <typename T> static inline T __shfl_down_sync(unsigned, T, int) { return T(0); }
#define GS_WALK_CACHE 1
#include "walk.cu"
#include "gather.cu"
#include "relabel.cu"
#include "convert.cu"

"""
    + INT64_IO_CPP
    + r"""

// every array below is its own exact-size allocation (copy<T>): AddressSanitizer's
// redzones bound it

int main() {
    const vec op = read_vec();
    if (op.empty()) return 2;
    if (op[0] == 1 || op[0] == 5 || op[0] == 6) {
        // gs_random_walk; 5: its steps in address order; 6: its steps in a given order, with
        // the walkers' previous nodes overwritten before step 1 (as a fault would); with a
        // GPU cache where slot is given
        const vec indptr = read_vec(), rows = read_vec(), srows = read_vec(), seeds = read_vec();
        const vec p = read_vec(), slot = read_vec(), crows = read_vec();
        const vec given = op[0] == 6 ? read_vec() : vec(), prevs = op[0] == 6 ? read_vec() : vec();
        const bool cached = !slot.empty();
        const long long* S = cached ? slot.data() : nullptr;
        const long long* CR = cached ? crows.data() : nullptr;
        const long long cE = crows.size();
        std::vector<long long> counters(2, 0);
        long long* K = cached ? counters.data() : nullptr;
        const long long W = seeds.size(), L = p[0], N = p[1], n = p[2], M = p[3];
        const double inv_p = 1.0 / (p[4] / 8.0), inv_q = 1.0 / (p[5] / 8.0);
        const int node2vec = p[4] != p[5] || p[4] != 8;
        const double amax = fmax(fmax(inv_p, 1.0), inv_q);
        std::vector<long long> out(W * (L + 1));
        std::vector<int> failed(3, 0);
        std::vector<unsigned long long> key = {(unsigned long long)p[6], 0ULL};
        if (op[0] == 1) {
            gs_random_walk(indptr.data(), rows.data(), srows.data(), nullptr, seeds.data(), W,
                           L, N, 0ULL, key.data(), n, M, node2vec, inv_p, inv_q, amax, 0.0,
                           0.0, 0.0, out.data(), failed.data(), S, CR, cE, K);
        } else {                        // as backend/cuda/walk.py sorts the walkers
            std::vector<long long> state(4 * W), order(W);
            gs_random_walk_start(seeds.data(), W, L, N, n, M, state.data(), out.data(),
                                 failed.data());
            for (long long t = 0; t < L; ++t) {
                if (op[0] == 6) {
                    for (long long i = 0; i < W; ++i) order[i] = given[i];
                    if (t == 1)
                        for (long long w = 0; w < W; ++w) state[4 * w + 1] = prevs[w];
                } else {
                    for (long long i = 0; i < W; ++i) order[i] = i;
                    auto at = [&](long long w) {
                        return state[4 * w] >= 0 ? state[4 * w] : LLONG_MAX;
                    };
                    std::stable_sort(order.begin(), order.end(),
                                     [&](long long a, long long b) { return at(a) < at(b); });
                }
                gs_random_walk_step(indptr.data(), rows.data(), srows.data(), nullptr,
                                    seeds.data(), W, L, N, 0ULL, key.data(), n, node2vec,
                                    inv_p, inv_q, amax, 0.0, 0.0, 0.0, order.data(), t,
                                    state.data(), out.data(), failed.data(), S, CR, cE, K);
            }
        }
        write_vec(out);
        write_vec(failed);
        write_vec(counters);
    } else if (op[0] == 2) {            // gs_gather_rows (int32 words), with a device cache
        const vec table = read_vec(), ids = read_vec(), slot = read_vec(), cache = read_vec();
        const vec p = read_vec();
        const long long N = p[0], words = p[1], n = ids.size();
        std::vector<unsigned int> t = copy<unsigned int>(table), c = copy<unsigned int>(cache);
        std::vector<unsigned int> out(n * words);
        std::vector<unsigned long long> hits(1, 0);
        std::vector<int> bad(1, 0);
        gs_gather_rows(t.data(), c.data(), slot.data(), ids.data(), n, words, out.data(),
                       hits.data(), N, bad.data());
        write_vec(out);
        write_vec(bad);
    } else if (op[0] == 3) {            // unique ids in first-occurrence order and labels
        const vec ids = read_vec();
        const long long n = ids.size();
        long long size = 32;
        while (size < 2 * n) size *= 2;
        std::vector<unsigned long long> keys(size, ~0ULL), vals(size, ~0ULL);
        std::vector<long long> slot(n), rank(n), uniq, inv(n);
        std::vector<int> flags(n);
        gs_hash_insert(ids.data(), n, keys.data(), vals.data(), size - 1, slot.data());
        gs_first_flags(vals.data(), slot.data(), n, flags.data());
        long long count = 0;
        for (long long i = 0; i < n; ++i) rank[i] = count += flags[i];
        uniq.resize(count);
        gs_select_flagged(flags.data(), rank.data(), n, ids.data(), 1, uniq.data());
        gs_first_inverse(vals.data(), slot.data(), rank.data(), n, inv.data());
        write_vec(uniq);
        write_vec(inv);
    } else if (op[0] == 4) {            // gs_row_counts
        const vec rows = read_vec(), p = read_vec();
        std::vector<unsigned long long> counts(p[0], 0ULL);
        gs_row_counts(rows.data(), rows.size(), counts.data(), p[0]);
        write_vec(counts);
    } else {
        return 2;
    }
    return 0;
}
"""
)

#: ids no kernel may read or write through (N: the graph's nodes or the table's rows)
BAD = (-1, -2, -(2**40), 2**31, 2**32 + 1, 2**40, 2**62, 2**63 - 1, -(2**63))


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return build_asan(SHIM, tmp_path_factory.mktemp("ids_cpu") / "ids")


def run(exe, code: int, *arrays) -> list:
    """Run op ``code`` on int64 ``arrays``; the arrays it writes back (NumPy int64)."""
    return run_int64_program(exe, [code], *arrays)


def _ids(N: int):
    """Ids in range, mixed with the adversarial ones and any int64."""
    return st.lists(
        st.one_of(st.integers(0, N - 1), st.sampled_from(BAD), st.integers(-(2**63), 2**63 - 1)),
        min_size=1,
        max_size=48,
    )


GRAPH = gs.datasets.rmat(300, 3000, seed=5).csc
N = GRAPH.num_nodes
SROWS = reference.sorted_rows(GRAPH)[0]
SETTINGS = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(seeds=_ids(N), node2vec=st.booleans(), copies=st.integers(1, 3))
def test_walk_guards_its_seeds(program, seeds, node2vec, copies):
    """A seed outside [0, M) walks nowhere (its row all -1) and sets the flag, in one launch
    and a step at a time in address order (the same walks); the other walkers walk as they
    do with that seed replaced (a walker's draws depend on its own position only).
    ``copies > 1``: a super-batch's encoded ids, M = copies * N."""
    M, n = N * copies, N if copies > 1 else 0
    seeds = sorted(seeds) if n else seeds  # a super-batch's ids grouped by batch
    ok = np.array([0 <= s < M for s in seeds])
    p, q = (16, 4) if node2vec else (8, 8)  # p, q in eighths: 2.0 and 0.5
    params = [12, N, n, M, p, q, 977]
    args = (GRAPH.indptr, GRAPH.rows, SROWS)
    out, failed, _ = run(program, 1, *args, seeds, params)
    steps, flags, _ = run(program, 5, *args, seeds, params)  # a UVA graph's: step by step
    assert np.array_equal(steps, out) and np.array_equal(flags, failed)
    out = out.reshape(len(seeds), 13)
    assert failed.tolist() == [0, int(not ok.all()), 0]
    assert (out[~ok] == -1).all()
    # the same walkers in the same positions: one mini-batch's walker w is position w (a
    # bad seed replaced by node 0); a super-batch's is its place in its batch (the bad seeds,
    # sorted, lie before the first batch or past the last: the good ones alone)
    fixed = (
        [s for s, good in zip(seeds, ok) if good]
        if n
        else [s if good else 0 for s, good in zip(seeds, ok)]
    )
    if not fixed:
        return
    want, clean, _ = run(program, 1, *args, fixed, params)
    assert clean.tolist() == [0, 0, 0]
    want = want.reshape(len(fixed), 13)
    assert np.array_equal(out[ok], want if n else want[ok])


@SETTINGS
@given(
    seeds=st.lists(st.integers(0, N - 1), min_size=1, max_size=48),
    node2vec=st.booleans(),
    slots=st.lists(
        st.one_of(st.sampled_from(BAD), st.integers(-(2**63), 2**63 - 1)), min_size=8, max_size=8
    ),
)
def test_walk_reads_the_cache_within_its_bounds(program, seeds, node2vec, slots):
    """A GPU cache's column is read at slot[v] + (e - lo) only when all of it lies in the
    cache (crows an exact-size allocation here): the walks of a true cache are the graph's,
    and slots gone wrong (negative, past the end, any int64) read the graph instead."""
    p, q = (16, 4) if node2vec else (8, 8)
    params = [12, N, 0, N, p, q, 977]
    args = (GRAPH.indptr, GRAPH.rows, SROWS, seeds, params)
    want, clean, _ = run(program, 1, *args)
    deg = GRAPH.indptr.diff()
    cols = torch.nonzero(deg > 0).squeeze(1)[::3]
    index, ptr = gs.formats.gather_segments(GRAPH.indptr, cols)
    slot = torch.full((N,), -1, dtype=torch.int64)
    slot[cols] = ptr[:-1]
    out, failed, counters = run(program, 1, *args, slot, GRAPH.rows[index])
    assert np.array_equal(out, want) and failed.tolist() == clean.tolist() == [0, 0, 0]
    assert 0 <= counters[1] <= counters[0]
    steps, flags, step_counters = run(program, 5, *args, slot, GRAPH.rows[index])
    assert np.array_equal(steps, want) and flags.tolist() == [0, 0, 0]
    assert np.array_equal(step_counters, counters)  # the same reads, in another order
    bad = slot.clone()
    bad[cols[: len(slots)]] = torch.tensor(slots)
    # a wrong slot inside the cache reads cached rows (in bounds): only the bounds are checked
    within = (bad >= 0) & (bad <= index.numel() - deg)
    bad = torch.where(within & (bad != slot), -1, bad)
    out, failed, _ = run(program, 1, *args, bad, GRAPH.rows[index])
    assert np.array_equal(out, want) and failed.tolist() == [0, 0, 0]


@SETTINGS
@given(
    order=st.one_of(
        st.permutations(range(12)),
        st.lists(st.one_of(st.integers(0, 11), st.sampled_from(BAD)), min_size=12, max_size=12),
    ),
    prevs=st.lists(
        st.one_of(st.integers(0, N - 1), st.sampled_from(BAD)), min_size=12, max_size=12
    ),
    node2vec=st.booleans(),
)
def test_walk_steps_bound_their_own_order_and_state(program, order, prevs, node2vec):
    """The steps' walker order and state are the host's own arrays, bounded by the kernel all
    the same: an order entry outside the walkers, or (node2vec, which reads the previous
    node's column) a previous node outside the graph, is skipped and sets failed[2], never
    read through (AddressSanitizer); a true order walks as the one launch does."""
    seeds = [(7 * i) % N for i in range(12)]
    p, q = (16, 4) if node2vec else (8, 8)
    args = (GRAPH.indptr, GRAPH.rows, SROWS, seeds, [12, N, 0, N, p, q, 977], [], [])
    out, failed, _ = run(program, 6, *args, order, prevs)
    out = out.reshape(12, 13)
    if any(not 0 <= w < 12 for w in order):
        assert failed[2] == 1
        return
    if sorted(order) != list(range(12)):
        return  # a walker stepped twice, another never: nothing to compare with
    active = out[:, 1] >= 0  # on a node at step 1, which reads its previous node
    wrong = [not 0 <= v < N for v in prevs]
    assert failed[2] == int(node2vec and any(a and w for a, w in zip(active, wrong)))
    if not node2vec:  # previous nodes unread: the one launch's walks
        want, clean, _ = run(program, 1, *args)
        assert np.array_equal(out.ravel(), want) and clean.tolist() == failed.tolist() == [0, 0, 0]


@SETTINGS
@given(ids=_ids(40), cached=st.booleans())
def test_gather_guards_its_ids(program, ids, cached):
    """A row id outside the table reads row 0 instead and sets the flag; the others read
    their row (from the cache where it holds them)."""
    rows, words = 40, 3
    table = np.arange(rows * words, dtype=np.int64)
    slot = (
        np.where(np.arange(rows) % 3 == 0, np.arange(rows) // 3, -1)
        if cached
        else np.full(rows, -1)
    )
    cache = table.reshape(rows, words)[::3].reshape(-1) if cached else np.zeros(0)
    out, bad = run(program, 2, table, ids, slot, cache, [rows, words])
    ok = np.array([0 <= i < rows for i in ids])
    assert bad.tolist() == [int(not ok.all())]
    good = np.array(ids, dtype=object)[ok].astype(np.int64)
    assert np.array_equal(out.reshape(len(ids), words)[ok], table.reshape(rows, words)[good])


@SETTINGS
@given(ids=_ids(50))
def test_relabel_table_never_takes_a_negative_id(program, ids):
    """Negative ids (-1 is the table's empty key) are never inserted: neither unique nor
    labelled; the rest keep first-occurrence order (as torch's unique of the ids >= 0)."""
    uniq, inv = run(program, 3, ids)
    kept = [i for i in ids if i >= 0]
    want = list(dict.fromkeys(kept))
    assert uniq.tolist() == want
    assert inv.tolist() == [want.index(i) if i >= 0 else -1 for i in ids]


@SETTINGS
@given(rows=_ids(20))
def test_row_counts_guard_their_rows(program, rows):
    (counts,) = run(program, 4, rows, [20])
    kept = torch.tensor([r for r in rows if 0 <= r < 20], dtype=torch.int64)
    assert counts.tolist() == torch.bincount(kept, minlength=20).tolist()
