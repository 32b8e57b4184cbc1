"""gsample.distributed on GPUs with NCCL (``-m cuda``): one rank per GPU, 1 and (where the
machine has them) 2 GPUs. Under every placement (replicated on each GPU, shared pinned host
memory read through UVA, partitioned with NCCL all-to-alls) the ranks' mini-batches are the
single-GPU epoch, sample for sample, for GraphSAGE compiled on the CUDA backend, DeepWalk,
weighted node-wise sampling with and without replacement, and node2vec.
"""

import datetime
import functools
import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from helpers import assert_same, graphsage

import gsample as gs

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
]
N, E, BATCH, NUM_SEEDS = 20_000, 400_000, 256, 2560
PLACEMENTS = ("replicated", "shared", "partitioned")


def _weighted(A, seeds, replace=False):
    """Two layers of weighted node-wise sampling, the slice's own values as weights (eager,
    the torch backend's draws: the partitioned operators' too)."""
    blocks = []
    for k in (8, 4):
        sub = A[:, seeds]
        s = sub.individual_sample(k, probs=sub, replace=replace)
        blocks.append(s)
        seeds = s.all_nodes()
    return blocks


def samplers():
    return {
        "graphsage": functools.partial(gs.compile(graphsage, backend="cuda"), fanouts=(25, 10)),
        "deepwalk": lambda A, seeds: A.random_walk(seeds, 20),
        "weighted": _weighted,
        "weighted with replacement": functools.partial(_weighted, replace=True),
        "node2vec": lambda A, seeds: A.random_walk(seeds, 20, p=2.0, q=0.5),
    }


def _cpu(out):
    if isinstance(out, gs.Matrix):
        return out.to("cpu")
    if isinstance(out, (list, tuple)):
        return type(out)(_cpu(o) for o in out)
    return out.cpu()


def _epoch(G, sampler, device, **kw):
    seeds = torch.arange(NUM_SEEDS, device=device) * 7 % N
    loader = gs.DataLoader(G, sampler, seeds, BATCH, seed=1, **kw)
    return {b.index: _cpu(b.out) for b in loader}


def _worker(rank, world, url, out):
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # never NVLink multicast
    torch.cuda.set_device(rank)
    gs.use_backend("torch")  # eager samplers: the draws the partitioned operators make
    dist.init_process_group(
        "nccl",
        init_method=url,
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(seconds=120),
    )
    try:
        A = gs.datasets.rmat(N, E, seed=4, weighted=True) if rank == 0 else None
        res = {}
        for placement in PLACEMENTS:
            G = gs.distributed.place(A, placement)
            res[placement] = G.placement
            for name, sampler in samplers().items():
                res[placement, name] = _epoch(
                    G, sampler, torch.device("cuda", rank), distributed=True
                )
        torch.save(res, f"{out}/rank{rank}.pt")
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("world", [1, 2])
def test_every_placement_on_gpus_samples_the_single_gpu_epoch(tmp_path, world):
    if torch.cuda.device_count() < world:
        pytest.skip(f"needs {world} GPUs")
    url = gs.distributed.local_init_method()
    mp.spawn(_worker, args=(world, url, str(tmp_path)), nprocs=world)
    ranks = [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(world)]
    A = gs.datasets.rmat(N, E, seed=4, weighted=True).to("cuda")
    for name, sampler in samplers().items():
        with gs.use_backend("torch"):  # as the ranks (by default: the kernels)
            single = _epoch(A, sampler, A.device)
        for placement in PLACEMENTS:
            seen = {}
            for res in ranks:
                for index, out in res[placement, name].items():
                    assert_same(out, single[index], f"{placement}, {name}, mini-batch {index}")
                    seen[index] = out
            assert sorted(seen) == sorted(single)
    for res in ranks:
        assert (res["replicated"], res["shared"], res["partitioned"]) == (
            "device",
            "uva",
            "partitioned",
        )
