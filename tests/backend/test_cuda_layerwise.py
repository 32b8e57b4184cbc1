"""Host-side choices of the layer-wise kernels' driver (``gsample/backend/cuda/layerwise.py``;
the kernels themselves: ``test_cuda_sync_free.py``, on a GPU)."""

import torch

from gsample.backend.cuda import layerwise


def test_the_kept_edges_list_learns_its_room_and_when_not_to_list(monkeypatch):
    """One mini-batch counts its kept edges per column; a super-batch lists them, with room
    for _KEPT_ROOM a draw (at least _KEPT_MIN), then twice what the op's last super-batch
    kept, and counts them per column once that kept more than one edge in _LIST_SHARE;
    each op (key prefix: epoch seed and ordinal) by its own record."""
    monkeypatch.setattr(layerwise, "_LAST_KEPT", {})
    indptr = torch.zeros(11, dtype=torch.int64)
    k, N, op, other = 4000, 64, 123, 456
    assert layerwise._list_room(indptr, op, k, 1) == 0
    first = layerwise._list_room(indptr, op, k, N)
    assert first == max(layerwise._KEPT_ROOM * N * k, layerwise._KEPT_MIN)
    layerwise._note_kept(indptr, op, k, N, 5 * first, 10**10)  # overflowed
    assert layerwise._list_room(indptr, op, k, N) == 10 * first
    assert layerwise._list_room(indptr, other, k, N) == first  # its own record
    assert layerwise._list_room(indptr, op, k // 2, N) == first // 2
    edges = 5 * first * layerwise._LIST_SHARE - 1  # past 1 / 16
    layerwise._note_kept(indptr, op, k, N, 5 * first, edges)
    assert layerwise._list_room(indptr, op, k, N) == 0
    assert layerwise._list_room(indptr, other, k, N) == first
