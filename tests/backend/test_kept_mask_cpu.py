"""``kernels/layerwise.cu``'s kept-edge mask passes on the CPU, under AddressSanitizer:
``gs_kept_mask_warps`` (a ballot's word per 32 frontier edges, a count per tile),
``gs_kept_ptr`` and ``gs_kept_masked_warps`` (the kept edges placed from the mask) compiled as
C++ with a thread per CUDA thread (``helpers.CUDA_THREADS_AS_CPP``: barriers, ballots and
shuffles between real threads), as ``gsample/backend/cuda/layerwise.py``'s ``_kept_mask`` and
``_kept_edges`` launch them, give every kept edge of a brute-force ``A[rows, cols]`` (column
pointer, rows or their positions, graph edges, values of 4 and 8 bytes, ids, in the
frontier's order) and the same as the passes they replace (``gs_kept_counts``,
``gs_kept_edges``), and touch nothing outside their exact-size arrays. The mask and the tile
counts start as garbage (``torch.empty``): a word or count left unwritten shows. The cases:
the host's grid and run and runs of one tile (a warp's several runs) or of all tiles (one
warp), rows' positions or the rows themselves, bad and padding-like (empty) columns, hubs
and columns longer than a tile, runs of more than 32 empty columns (a window of more than 32
columns; a skip past 32 columns), a padded frontier's empty columns at its end and tiles
keeping nothing (skipped); ``gs_batch_inline`` (their batch of a column's id) is the
division, past 32 bits too. CI has no GPU; the GPU's comparison is
``tests/runtime/test_super_batch_memory.py``.

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
    // p: C, n, R, grid, use newpos, the warp passes' run (0: the host's); then the graph's
    // indptr and rows, the frontier's ids and its edge pointer (the host's _frontier_ptr),
    // the rows of A[rows, cols] (encoded), the graph's values (float bits) and eids
    const vec p = read_vec(), indptr = read_vec(), rows = read_vec(), cols = read_vec();
    const vec ptr = read_vec(), pick = read_vec(), vals = read_vec(), eids = read_vec();
    if (p.size() != 6) return 2;
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
    // the host's grid (at most G blocks, a tile a warp) and run (tiles / warps rounded up),
    // or the case's run (1: a warp takes several runs; past the tiles: one warp takes them all)
    const long long wgrid = std::max(1LL, std::min(G, (tiles + 7) / 8));
    const long long W = wgrid * (GS_KEPT_THREADS / 32);
    const int run = p[5] > 0 ? (int)p[5] : (int)std::max(1LL, (tiles + W - 1) / W);
    if (tiles)
        gs_launch(wgrid, GS_KEPT_THREADS, [&] {
            gs_kept_mask_warps(indptr.data(), rows.data(), cols.data(), C, ptr.data(), n, nullptr,
                               bits.data(), at(mask), words, at(its), tiles, run);
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
        gs_launch(wgrid, GS_KEPT_THREADS, [&] {
            gs_kept_masked_warps(indptr.data(), rows.data(), cols.data(), C, ptr.data(), n, np,
                                 at(mask), words, before.data(), tiles, run, K, at(rows_out),
                                 at(pos_out), vals.empty() ? nullptr : values.data(),
                                 at(values_out), vals.empty() ? 0 : 4,
                                 eids.empty() ? nullptr : eids.data(),
                                 eids.empty() ? nullptr : at(eids_out));
        });
    // 8-byte values (vsize 8: the ids as the values, through the same copy)
    vec values8(K, -7), rows8(K, -7), pos8(K, -7);
    if (K && !eids.empty())
        gs_launch(wgrid, GS_KEPT_THREADS, [&] {
            gs_kept_masked_warps(indptr.data(), rows.data(), cols.data(), C, ptr.data(), n, np,
                                 at(mask), words, before.data(), tiles, run, K, at(rows8),
                                 at(pos8), eids.data(), at(values8), 8, nullptr, nullptr);
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
    write_vec(its);
    write_vec(values8);
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
    "grid, positions, n, copies, cols, degree, rows_a_batch, empty, pad, run",
    [
        (3, True, 400, 3, 300, 6, 150, 0.0, 0, 0),  # several tiles a block
        (1, True, 400, 3, 300, 6, 150, 0.0, 0, 0),  # one block: every tile
        (1000, True, 400, 3, 300, 6, 150, 0.0, 0, 0),  # a tile a block (the grid capped)
        (3, False, 400, 3, 300, 6, 150, 0.0, 0, 0),  # rows, not positions (newpos null)
        (2, True, 400, 3, 2000, 1, 20, 0.0, 0, 0),  # tiles of ~900 columns (unstaged)
        (3, True, 400, 2, 300, 6, 0, 0.0, 0, 0),  # nothing kept
        (3, True, 400, 2, 0, 6, 50, 0.0, 0, 0),  # no columns
        (3, True, 400, 1, 300, 6, 150, 0.0, 0, 0),  # one batch
        # the warp passes' cursor: columns longer than a tile (hubs of 2400 edges), a warp
        # a run of many tiles (run past the tiles: one warp; run 1: a run after another)
        (2, True, 300, 2, 200, 40, 100, 0.0, 0, 0),
        (2, True, 300, 2, 200, 40, 100, 0.0, 0, 10**6),
        (2, False, 300, 2, 200, 40, 100, 0.0, 0, 1),
        # a warp's several runs of several tiles (one block: 8 warps, runs of 2, ~25 tiles)
        (1, True, 300, 2, 200, 40, 100, 0.0, 0, 2),
        (1, False, 500, 2, 12000, 2, 60, 0.9, 70, 2),  # (~22 tiles, runs of empty columns)
        # runs of more than 32 empty columns (a window of more than 32 columns, a skip
        # past 32 columns) and padding-like empty columns at the end (ptr[C] = E clamps)
        (2, True, 500, 2, 3000, 2, 60, 0.9, 70, 0),
        (2, False, 500, 2, 3000, 2, 5, 0.9, 70, 3),
        (3, True, 500, 3, 1500, 3, 200, 0.6, 40, 0),  # keeps most: few skipped windows
    ],
)
def test_the_mask_passes_keep_every_edge_of_a_chosen_row(
    program, grid, positions, n, copies, cols, degree, rows_a_batch, empty, pad, run
):
    rng = np.random.default_rng(grid + 7 * cols + copies + rows_a_batch + positions + run)
    counts = rng.integers(0, 2 * degree + 1, n)
    counts[rng.random(n) < empty] = 0  # empty columns, in runs where most are
    counts[rng.integers(0, n, 3)] = 60 * degree  # hubs: a tile inside one column
    indptr = np.concatenate([[0], np.cumsum(counts)])
    rows = rng.integers(0, n, indptr[-1])
    R = copies * n
    ids = np.concatenate([b * n + rng.integers(0, n, cols) for b in range(copies)])
    if ids.size:  # bad ids: empty columns (gs_frontier_ptr checked and flagged them)
        ids[rng.integers(0, ids.size, 4)] = [-3, R, R + 5, -1]
    ids = np.concatenate([ids, np.full(pad, -1)])  # a padded frontier's end: empty columns
    ok = (ids >= 0) & (ids < R)
    ptr = np.concatenate([[0], np.cumsum(np.where(ok, counts[np.where(ok, ids % n, 0)], 0))])
    pick = np.concatenate(
        [b * n + rng.choice(n, rows_a_batch, replace=False) for b in range(copies)]
    ).astype(np.int64)
    values = rng.integers(0, 2**32, indptr[-1])
    eids = rng.integers(0, 2**40, indptr[-1])
    arrays = [ids.size, n, R, grid, positions, run], indptr, rows, ids, ptr, pick, values, eids
    # (a timeout: lanes that diverge around a collective hang)
    got = run_int64_program(program, *arrays, timeout=300)
    mask, its, values8 = got[:3]
    got_ptr, got_rows, got_pos, got_values, got_eids, *old, bad_masks = got[3:]
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
    # the mask: edge g's bit (in the frontier's order), each tile's count its words' bits
    kept = np.zeros(mask.size * 32, dtype=bool)
    for c in range(ids.size):
        b, v = divmod(int(ids[c]), n)
        for g in range(ptr[c], ptr[c + 1]):
            kept[g] = newpos[rows[indptr[v] + g - ptr[c]] + b * n] >= 0
    bits_of = (mask.astype(np.uint64)[:, None] >> np.arange(32, dtype=np.uint64)) & 1
    assert np.array_equal(bits_of.reshape(-1).astype(bool), kept)
    per_tile = bits_of.reshape(its.size, -1).sum(axis=1) if its.size else its
    assert np.array_equal(its, per_tile)
    if eids.size:
        assert np.array_equal(values8, eids[want_pos])  # 8-byte values (vsize 8)


# gs_batch_inline (the warp cursor's batch of a column's id: no 64-bit division's call)
# against the division, where the ids and n do not fit 32 bits too
BATCH = (
    CUDA_THREADS_AS_CPP
    + r"""
#include "layerwise.cu"
"""
    + INT64_IO_CPP
    + r"""
int main() {
    const vec id = read_vec(), n = read_vec();
    if (id.size() != n.size()) return 2;
    vec out(id.size());
    for (size_t i = 0; i < id.size(); ++i) out[i] = gs_batch_inline(id[i], n[i]);
    write_vec(out);
    return 0;
}
"""
)


def test_the_cursor_batch_is_the_division(tmp_path):
    program = build_asan(BATCH, tmp_path / "batch", "-pthread")
    rng = np.random.default_rng(5)
    n = np.concatenate(
        [rng.integers(1, 2**20, 300), rng.integers(2**31, 2**34, 300), [1, 2, 2**32, 2**62]]
    )
    ids = np.concatenate(
        [rng.integers(0, 2**63 - 1, 600, dtype=np.int64), [2**63 - 1, 0, 2**32, 2**63 - 2]]
    )
    ids[:200] = rng.integers(0, 2**32, 200)  # the 32-bit path too
    (got,) = run_int64_program(program, ids, n)
    assert np.array_equal(got, ids // n)


def test_the_warp_grid_is_one_wave_and_its_runs_cover_the_tiles(monkeypatch):
    """``layerwise._warp_grid``: the warp passes' grid at most one wave of ``_WARP_BLOCKS``
    blocks an SM (and ``_GRID``), a tile a warp at most, runs covering every tile."""
    import torch

    from gsample.backend.cuda import layerwise

    dev = torch.device("cuda", 0)
    monkeypatch.setitem(layerwise._SMS, 0, 132)  # (an H200's SMs: no GPU asked)
    warps = layerwise._THREADS // 32
    for tiles in (1, 7, 8, 9, 6336, 6337, 2_660_000, 2**40):
        grid, run = layerwise._warp_grid(tiles, dev)
        assert 1 <= grid <= min(layerwise._WARP_BLOCKS * 132, layerwise._GRID)
        assert grid <= -(-tiles // warps) and 1 <= run < 2**31
        assert grid * warps * run >= tiles > grid * warps * (run - 1)
    monkeypatch.setattr(layerwise, "_GRID", 3)  # (a test's grid: several runs a warp)
    assert layerwise._warp_grid(6337, dev) == (3, -(-6337 // (3 * warps)))
