"""``A.random_uniform`` and ``A.random_count`` on the GPU, sync-free.

One hash per entry is all they do, so there is no kernel of their own: the torch
reference's code (:mod:`gsample.backend.torch.draws`) runs on the CUDA tensors, with the
op's key finished on the device (:class:`~gsample.base.random.DeviceKey`) and a super-batch's
positions found by a search on the device. Nothing is read back to the host (CUDA-graph
safe), and the values are the torch backend's bit for bit (integer hashing, exact
conversions). A frontier in a bounded buffer (:class:`~gsample.formats.bounded.BoundedIds`)
gives a bounded result of the same count.
"""

from __future__ import annotations

from gsample.backend.registry import cuda_impl
from gsample.backend.torch import draws as reference
from gsample.base import validate as V
from gsample.base.random import DeviceKey, count_from_words, uniform_float
from gsample.formats.bounded import BoundedIds
from gsample.ir import Op


def _words(nodes, key):
    """``(words, count or None)`` of a frontier, exact or bounded."""
    if isinstance(nodes, BoundedIds):
        return reference.entry_words(key, nodes.data, valid=nodes.count), nodes.count
    if isinstance(key, DeviceKey) and key.num_nodes:
        # a super-batch: ids checked (deferred: no read-back)
        nodes = V.ids(nodes, "nodes", key.num_nodes * key.copies, nodes.device)
    return reference.entry_words(key, nodes), None


def _out(values, count):
    return values if count is None else BoundedIds(values, count)


@cuda_impl(Op.RANDOM_UNIFORM, syncs=False)  # eager calls
@cuda_impl(Op.RANDOM_UNIFORM, sync_free=True, syncs=False)  # and the sync-free runtime
def random_uniform(A, nodes, key):
    """:func:`gsample.backend.torch.draws.random_uniform`, sync-free."""
    words, count = _words(nodes, key)
    return _out(uniform_float(words), count)


@cuda_impl(Op.RANDOM_COUNT, syncs=False)
@cuda_impl(Op.RANDOM_COUNT, sync_free=True, syncs=False)
def random_count(A, nodes, key, dist: str = "geometric", p: float = 0.5, n=None):
    """:func:`gsample.backend.torch.draws.random_count`, sync-free (the thresholds are
    copied to the device once per law)."""
    words, count = _words(nodes, key)
    return _out(count_from_words(words, reference.table(dist, p, n, words.device)), count)


__all__ = [
    "random_count",
    "random_uniform",
]
