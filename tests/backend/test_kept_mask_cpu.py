"""``kernels/layerwise.cu``'s kept-edge mask passes on the CPU, under AddressSanitizer:
``gs_kept_mask`` (a ballot's word per 32 frontier edges, a count per tile), ``gs_kept_ptr`` and
``gs_kept_masked`` (the kept edges placed from the mask) compiled as C++ with a thread per
CUDA thread (``helpers.CUDA_THREADS_AS_CPP``: barriers, ballots and shuffles between real
threads), as ``gsample/backend/cuda/layerwise.py``'s ``_kept_mask`` and ``_kept_edges`` launch
them, give every kept edge of a brute-force ``A[rows, cols]`` (column pointer, rows or their
positions, graph edges, values, ids, in the frontier's order) and the same as the passes they
replace (``gs_kept_counts``, ``gs_kept_edges``), and touch nothing outside their exact-size
arrays. The mask and the tile counts start as garbage (``torch.empty``): a word or count left
unwritten shows. The cases: several tiles a block (grids of 1 and 3), one tile a block, rows'
positions or the rows themselves, bad and padding-like (empty) columns, hubs (a tile of one
column), tiles of more columns than GS_STAGE (unstaged) and tiles keeping nothing (skipped).
CI has no GPU; the GPU's comparison is ``tests/runtime/test_super_batch_memory.py``.

The case's arrays go in and the passes' arrays come back through
``helpers.run_int64_program``.
"""

import numpy as np
import pytest
from helpers import CUDA_THREADS_AS_CPP, INT64_IO_CPP, build_asan, run_int64_program

SHIM = (
    CUDA_THREADS_AS_CPP
    + r"""
#include "layerwise.cu"
#include <algorithm>
"""
    + INT64_IO_CPP
    + r"""
template <typename T> static T* at(std::vector<T>& v) { return v.empty() ? nullptr : v.data(); }

int main() {
    // p: C, n, R, grid, use newpos; then the graph's indptr and rows, the frontier's ids and
    // its edge pointer (the host's _frontier_ptr), the rows of A[rows, cols] (encoded),
    // the graph's values (float bits) and eids
    const vec p = read_vec(), indptr = read_vec(), rows = read_vec(), cols = read_vec();
    const vec ptr = read_vec(), pick = read_vec(), vals = read_vec(), eids = read_vec();
    if (p.size() != 5) return 2;
    const long long C = p[0], n = p[1], R = p[2], G = p[3], K0 = pick.size();
    std::vector<unsigned> bits((R + 31) / 32, 0u);
    std::vector<int> newpos(R, -1);
    gs_launch(1, 64, [&] { gs_mark_bits(pick.data(), K0, R, bits.data()); });
    gs_launch(1, 64, [&] { gs_scatter_positions(pick.data(), K0, R, newpos.data()); });
    const int* np = p[4] ? newpos.data() : nullptr;
    std::vector<unsigned> values(vals.begin(), vals.end());
    const long long E = ptr[C], tiles = (E + GS_KEPT_TILE - 1) / GS_KEPT_TILE;
    const long long words = tiles * (GS_KEPT_TILE / 32);
    // (torch.empty: garbage, which a word or count left unwritten would keep)
    std::vector<unsigned> mask(words, 0xDEADBEEFu);
    vec its(tiles, -7), before(tiles + 1, -7), out_ptr(C + 1, -7);
    if (tiles)
        gs_launch(std::min(G, tiles), GS_KEPT_THREADS, [&] {
            gs_kept_mask(indptr.data(), rows.data(), cols.data(), C, ptr.data(), n, nullptr,
                         bits.data(), at(mask), words, at(its), tiles);
        });
    before[0] = 0;
    for (long long t = 0; t < tiles; ++t) before[t + 1] = before[t] + its[t];
    gs_launch(2, 32, [&] {
        gs_kept_ptr(ptr.data(), C, at(mask), words, before.data(), tiles, out_ptr.data());
    });
    const long long K = out_ptr[C];
    vec rows_out(K, -7), pos_out(K, -7), eids_out(K, -7);
    std::vector<unsigned> values_out(K, 0xDEADBEEFu);
    if (K)
        gs_launch(std::min(G, tiles), GS_KEPT_THREADS, [&] {
            gs_kept_masked(indptr.data(), rows.data(), cols.data(), C, ptr.data(), n, np,
                           at(mask), words, before.data(), tiles, K, at(rows_out), at(pos_out),
                           vals.empty() ? nullptr : values.data(), at(values_out),
                           vals.empty() ? 0 : 4, eids.empty() ? nullptr : eids.data(),
                           eids.empty() ? nullptr : at(eids_out));
        });
    // the passes they replace: gs_kept_counts, its cumsum, gs_kept_edges (a block a tile)
    vec counts(C, 0), old_ptr(C + 1, 0);
    if (C)
        gs_launch(std::min(G, std::max(tiles, 1LL)), GS_KEPT_THREADS, [&] {
            gs_kept_counts(indptr.data(), rows.data(), cols.data(), C, ptr.data(), n, np,
                           bits.data(), counts.data());
        });
    for (long long c = 0; c < C; ++c) old_ptr[c + 1] = old_ptr[c] + counts[c];
    const long long K2 = old_ptr[C];
    vec old_rows(K2, -7), old_pos(K2, -7), state(1 + tiles, 0);
    if (K2)
        gs_launch(tiles, GS_KEPT_THREADS, [&] {
            gs_kept_edges(indptr.data(), rows.data(), cols.data(), C, ptr.data(), n, np,
                          bits.data(), (gs_u64*)state.data(), at(old_rows), at(old_pos),
                          nullptr, nullptr, 0, nullptr, nullptr);
        });
    write_vec(mask);
    write_vec(out_ptr);
    write_vec(rows_out);
    write_vec(pos_out);
    write_vec(values_out);
    write_vec(eids_out);
    write_vec(old_ptr);
    write_vec(old_rows);
    write_vec(old_pos);
    write_vec(vec(1, (long long)gs_bad_masks));
    return 0;
}
"""
)


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return build_asan(SHIM, tmp_path_factory.mktemp("kept_mask_cpu") / "kept_mask", "-pthread")


@pytest.mark.parametrize(
    "grid, positions, n, copies, cols, degree, rows_a_batch",
    [
        (3, True, 400, 3, 300, 6, 150),  # several tiles a block
        (1, True, 400, 3, 300, 6, 150),  # one block: every tile
        (1000, True, 400, 3, 300, 6, 150),  # a tile a block (the grid capped at the tiles)
        (3, False, 400, 3, 300, 6, 150),  # rows, not positions (newpos null)
        (2, True, 400, 3, 2000, 1, 20),  # tiles of ~900 columns (unstaged); most keep none
        (3, True, 400, 2, 300, 6, 0),  # nothing kept
        (3, True, 400, 2, 0, 6, 50),  # no columns
        (3, True, 400, 1, 300, 6, 150),  # one batch
    ],
)
def test_the_mask_passes_keep_every_edge_of_a_chosen_row(
    program, grid, positions, n, copies, cols, degree, rows_a_batch
):
    rng = np.random.default_rng(grid + 7 * cols + copies + rows_a_batch + positions)
    counts = rng.integers(0, 2 * degree + 1, n)
    counts[rng.integers(0, n, 3)] = 60 * degree  # hubs: a tile inside one column
    indptr = np.concatenate([[0], np.cumsum(counts)])
    rows = rng.integers(0, n, indptr[-1])
    R = copies * n
    ids = np.concatenate([b * n + rng.integers(0, n, cols) for b in range(copies)])
    if ids.size:  # bad ids: empty columns (gs_frontier_ptr checked and flagged them)
        ids[rng.integers(0, ids.size, 4)] = [-3, R, R + 5, -1]
    ok = (ids >= 0) & (ids < R)
    ptr = np.concatenate([[0], np.cumsum(np.where(ok, counts[np.where(ok, ids % n, 0)], 0))])
    pick = np.concatenate(
        [b * n + rng.choice(n, rows_a_batch, replace=False) for b in range(copies)]
    ).astype(np.int64)
    values = rng.integers(0, 2**32, indptr[-1])
    eids = rng.integers(0, 2**40, indptr[-1])
    arrays = [ids.size, n, R, grid, positions], indptr, rows, ids, ptr, pick, values, eids
    # (a timeout: lanes that diverge around a collective hang)
    got = run_int64_program(program, *arrays, timeout=300)
    mask, got_ptr, got_rows, got_pos, got_values, got_eids, *old, bad_masks = got
    # brute force: the frontier's columns in order, each one's edges in the graph's order
    newpos = np.full(R, -1)
    newpos[pick] = np.arange(pick.size)
    want_ptr, want_rows, want_pos = [0], [], []
    for c in range(ids.size):
        b, v = divmod(int(ids[c]), n)
        for e in range(indptr[v], indptr[v + 1]) if ok[c] else ():  # a bad id: empty
            r = rows[e] + b * n
            if newpos[r] >= 0:
                want_rows.append(newpos[r] if positions else r)
                want_pos.append(e)
        want_ptr.append(len(want_rows))
    want_pos = np.asarray(want_pos, dtype=np.int64)
    assert bad_masks[0] == 0  # every collective's masks as CUDA requires
    assert not (mask == 0xDEADBEEF).any()  # every word written (the host's empty mask)
    assert np.array_equal(got_ptr, want_ptr)
    assert np.array_equal(got_rows, want_rows)
    assert np.array_equal(got_pos, want_pos)
    assert np.array_equal(got_values, values[want_pos])
    assert np.array_equal(got_eids, eids[want_pos])
    for a, b in zip(old, (want_ptr, want_rows, want_pos)):  # the passes they replace
        assert np.array_equal(a, b)
