"""A fused walk (``FUSED_WALK``) on the GPU: every step of every walker in one generated
kernel launch (``kernels/fused_walk.cu`` + :mod:`.walk_codegen`).

One thread per walker loops over the steps and runs the step's body as straight-line C:
its ``random_walk``\\ s are ``gs_random_walk``'s own walker (``kernels/walkstep.cuh``) with
the keys of their op ordinals, its arithmetic PyTorch's CUDA arithmetic, so the walks are
the torch backend's (:mod:`gsample.backend.torch.fused_walk`), bit for bit. Keys come as a
:class:`~gsample.base.random.KeyRange`: device keys (the program's key buffer: the kernel combines
each ordinal's prefix with the mini-batch, so a super-batch's walkers are one launch too), or
host keys (copied to the device). Bodies :mod:`.walk_codegen` cannot type exactly, CPU
tensors and a super-batch with host keys run the torch code (on the same device). A UVA
graph's GPU cache serves its cached columns' rows to the inlined walks and counts their reads,
as in :mod:`.walk`, and its int32 rows are read where it keeps them (``GS_ROW=int``).
"""

from __future__ import annotations

import torch

from gsample.backend.cuda import walk_codegen
from gsample.backend.cuda.extract import rows_read
from gsample.backend.cuda.module import launch, memset
from gsample.backend.cuda.nodewise import exact
from gsample.backend.cuda.walk import cache_args
from gsample.backend.registry import cuda_impl
from gsample.backend.torch import fused_walk as reference
from gsample.base import validate as V
from gsample.base.random import BatchKeys, DeviceKey, KeyRange, signed
from gsample.formats.bounded import BoundedIds
from gsample.formats.csc import CSC
from gsample.ir import Op

#: threads per block: a mini-batch of walkers is small, so small blocks spread it over SMs
_THREADS = 64


def kernel_for(A: CSC, seeds, first, phases: tuple, operands: dict, key):
    """The generated kernel of this walk, or None (the torch code runs)."""
    if not A.indptr.is_cuda or not isinstance(key, KeyRange) or not len(key):
        return None
    k0 = key.keys[0]
    if isinstance(k0, BatchKeys) or (isinstance(k0, DeviceKey) and key.tensor is None):
        return None
    if any(not (isinstance(o, torch.Tensor) and o.is_cuda) for o in operands.values()):
        return None
    try:
        return walk_codegen.generate(first, phases, operands)
    except walk_codegen.Unsupported:
        return None


@cuda_impl(Op.FUSED_WALK)  # generated: kernels/fused_walk.cu
# the sync-free variant (device keys) may run the torch code, which reads sizes back for a
# super-batch, so it is not marked free of read-backs
@cuda_impl(Op.FUSED_WALK, sync_free=True, syncs=True, bounded_out=False)
def fused_walk(A: CSC, seeds, first, phases: tuple, length: int, key, **operands):
    """As :func:`gsample.backend.torch.fused_walk.fused_walk`, in one kernel launch.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> def step(A, cur, prev, t):                       # DeepWalk, written as one step
    ...     return A.random_walk(cur, 1)[:, 1]
    >>> sampler = gs.compile(lambda A, seeds: gs.walk(step, A, seeds, 80), backend="cuda")
    >>> walks = sampler(A.to("cuda"), seeds.cuda())  # one gs_fused_walk launch  # doctest: +SKIP
    """
    if isinstance(seeds, BoundedIds):  # one row per seed: its exact size first
        seeds = exact(seeds)
    kernel = kernel_for(A, seeds, first, phases, operands, key)
    if kernel is None:
        return reference.fused_walk(A, seeds, first, phases, length, key, **operands)
    W, dev = seeds.numel(), seeds.device
    out = torch.empty((W, length + 1), dtype=torch.int64, device=dev)  # every entry written
    if W == 0:
        return out
    k0 = key.keys[0]
    if key.tensor is not None:  # (prefix, first) rows of the key buffer
        keys, direct = key.tensor.contiguous(), False
        n = k0.num_nodes if k0.copies > 1 else 0
    else:  # host op keys, one per ordinal
        keys = torch.tensor([signed(k) for k in key.keys], dtype=torch.int64, device=dev)
        direct, n = True, 0
    M = k0.copies * n if n else A.num_nodes  # the seeds' id space
    ptrs = [operands[name].contiguous() for name in kernel.operands]
    lens = [p.numel() for p in ptrs]
    ptrs += [0] * (walk_codegen.MAX_OPERANDS - len(ptrs))
    lens += [0] * (walk_codegen.MAX_OPERANDS - len(lens))
    failed = torch.empty(2, dtype=torch.int32, device=dev)  # a step's ids, the seeds
    memset(failed, 0)
    # a UVA graph's int32 rows (host and GPU cache) where it keeps them, as the walks read
    rows = rows_read(A, A.rows.to(torch.int64).contiguous())[0]
    (slot, crows, cE, counters), on = cache_args(A, rows)
    launch(
        "fused_walk",
        "gs_fused_walk",
        W,
        A.indptr.to(torch.int64).contiguous(),
        rows,
        seeds.to(torch.int64).contiguous(),
        W,
        length,
        A.num_nodes,
        keys,
        bool(direct),
        n,
        M,
        *ptrs,
        *lens,
        out,
        failed,
        slot,
        crows,
        cE,
        counters,
        block=_THREADS,
        params=kernel.key["params"] + on,
    )
    V.fail_if(failed[1:], IndexError, f"seeds: a node id is out of range for a graph of {M} nodes")
    V.fail_if(
        failed[:1],
        IndexError,
        f"gs.walk: a step computed a node id out of range (every id must be in [0, {A.num_nodes}))",
    )
    return out


__all__ = [
    "fused_walk",
    "kernel_for",
]
