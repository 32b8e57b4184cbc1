"""``kernels/layerwise.cu``'s ``gs_chosen_bits`` on the CPU, under AddressSanitizer: compiled
as C++ with a thread per CUDA thread (``helpers.CUDA_THREADS_AS_CPP``: the block scan's
barriers and the single-pass scan's look-back between real threads), launched as
``gsample/backend/cuda/layerwise.py``'s ``_positions`` launches it (a block a tile of
``_THREADS * GS_ITEMS`` words of the drawn rows' bits, ``gs_mark_bits``'), it lists the drawn
rows ascending, each one's position at its row of ``newpos`` and nothing else: ``chosen`` past
the drawn rows and ``newpos`` at every other row keep the garbage they started with (the
collective sample neither clears nor reads them), and entries of the draws at or past ``R``
(fewer candidates than draws) are no row. The cases: one mini-batch's few draws in a large row
space (most words zero), a super-batch's draws in every batch, dense draws (full words), draws
in the last word, several tiles and one, and ``room`` below the draws (bounded); and the
kernel's own bounds and tile order: stray bits past ``R`` and blocks run last to first. CI
has no GPU; the GPU's comparison is the collective samplers' tests (``tests/backend``).

The case's arrays go in and the pass's arrays come back through ``helpers.run_int64_program``.
"""

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
int main() {
    // p: R, room, block, stray (bits set past R in the last word: no rows), reversed (blocks
    // run last to first); the draws (entries >= R: no row)
    const vec p = read_vec(), pick = read_vec();
    if (p.size() != 5) return 2;
    const long long R = p[0], room = p[1], block = p[2], K = pick.size();
    const long long words = R / 32 + 1, tiles = (words + block * GS_ITEMS - 1) / (block * GS_ITEMS);
    std::vector<unsigned> bits(words, 0u);
    gs_launch(1, 64, [&] { gs_mark_bits(pick.data(), K, R, bits.data()); });
    if (p[3]) bits[words - 1] |= ~((1u << (R % 32)) - 1u);  // (R % 32 == 0: the whole word)
    std::vector<gs_u64> state(1 + tiles, 0);
    vec chosen(room, -7);                      // (torch.empty: garbage where not written)
    std::vector<int> newpos(R, -9);            // (exact size: a write at or past R is caught)
    auto pass = [&] {
        gs_chosen_bits(bits.data(), words, R, state.data(), chosen.data(), room, newpos.data());
    };
    // reversed: the block that starts first takes tile 0 (gs_scan_ticket) whatever its
    // blockIdx, as on the GPU, where blocks start in any order
    gs_launch(tiles, block, pass, p[4] != 0);
    write_vec(chosen);
    write_vec(vec(newpos.begin(), newpos.end()));
    write_vec(vec(1, (long long)gs_bad_masks));
    return 0;
}
"""
)


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    out = tmp_path_factory.mktemp("chosen_bits_cpu") / "chosen_bits"
    return build_asan(SHIM, out, "-pthread")


def _draws(case: str, rng) -> tuple:
    """(R, the draws): distinct rows below R, and R for draws past the candidates."""
    if case == "one mini-batch":  # a few thousand rows among many: most words zero
        R = 300_000
        rows = rng.choice(R, 900, replace=False)
        return R, np.concatenate([rows, [R] * 40])
    if case == "super-batch":  # each batch's draws in its block of n rows
        n, copies = 7_001, 5
        rows = np.concatenate([rng.choice(n, 60, replace=False) + b * n for b in range(copies)])
        return n * copies, np.concatenate([rows, [n * copies] * 9])
    if case == "dense":  # full words, and the last row of the row space
        R = 5_000
        rows = rng.choice(R - 1, 3_000, replace=False)
        return R, np.concatenate([rows, [R - 1]])
    if case == "last word":  # R a multiple of 32: its last word holds no row
        R = 4_096
        return R, np.array([R - 1, R - 32, 0, R, R])
    assert case == "none"
    return 1_000, np.array([1_000, 1_000])


@pytest.mark.parametrize("case", ["one mini-batch", "super-batch", "dense", "last word", "none"])
@pytest.mark.parametrize("block", [256, 64])
@pytest.mark.parametrize("short", [False, True])
def test_the_drawn_rows_in_order_and_their_positions_only(program, case, block, short):
    _check(program, case, block, short, stray=False, reversed_=False)


@pytest.mark.parametrize("case", ["one mini-batch", "super-batch", "dense", "last word"])
@pytest.mark.parametrize("block", [64])
def test_the_pass_bounds_its_rows_and_takes_tiles_by_ticket(program, case, block):
    """The kernel's own bounds and order, which the launch as the host makes it never
    exercises: bits set past ``R`` in the bitmap's last word (``_drawn_bits`` never sets
    them) are no row (a position written there is past ``newpos``: AddressSanitizer), and
    blocks run last to first still scan the tiles in the order their tickets give (a tile
    taken by ``blockIdx`` instead of by ticket would place them by the wrong prefix)."""
    _check(program, case, block, short=False, stray=True, reversed_=True)


def _check(program, case, block, short, stray, reversed_):
    rng = np.random.default_rng(len(case) + block)
    R, pick = _draws(case, rng)
    rng.shuffle(pick)
    rows = np.sort(pick[pick < R])
    room = pick.size - 5 if short and pick.size > 5 else pick.size  # (short: bounded)
    chosen, newpos, bad_masks = run_int64_program(
        program, [R, room, block, int(stray), int(reversed_)], pick
    )
    assert bad_masks[0] == 0  # every collective's masks as CUDA requires
    listed = min(rows.size, room)
    assert np.array_equal(chosen[:listed], rows[:listed])
    assert (chosen[listed:] == -7).all()  # not written
    want = np.full(R, -9)
    want[rows[:listed]] = np.arange(listed)
    assert np.array_equal(newpos, want)  # positions at the drawn rows, nothing elsewhere
