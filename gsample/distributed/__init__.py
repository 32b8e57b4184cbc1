"""Sampling with several processes, one per device, through ``torch.distributed``.

NCCL on GPUs, gloo on CPUs; start the processes with ``torchrun`` or
``torch.multiprocessing.spawn`` and initialise the process group first. Two pieces:

* **the graph** (:func:`place`): replicated on every rank's device, in memory shared by the
  ranks of a host (pinned and read by each GPU through UVA), or partitioned by edge-balanced
  ranges of columns (:class:`PartitionedMatrix`, whose node-wise sampling, uniform or
  weighted, and walks, uniform, weighted or node2vec, exchange frontiers between the ranks);
  a rule picks one from the graph's size and the ranks' device
  memory (:func:`choose_placement`), and ``placement=`` overrides it;
* **the seeds**: ``gs.DataLoader(G, sampler, seeds, batch_size, seed=0, distributed=True)``
  gives each rank its share of every epoch's mini-batches, as
  ``torch.utils.data.DistributedSampler`` does (:mod:`gsample.distributed.split`); with
  ``super_batch=N`` on a partitioned graph each rank samples N of them per round, every
  exchange carrying all N (:mod:`gsample.distributed.partition_batches`);
* **node features** partitioned by node ranges (:class:`PartitionedFeatures`): a mini-batch's
  rows owned by other ranks come in one all-to-all exchange, for data-parallel training.

A parent process can build a graph once and share it with the ranks it starts
(:func:`share_graph` into ``/dev/shm``, :func:`attach_graph` in each rank, then :func:`place`:
``"shared"`` pins that one copy in place, the other placements copy from it).

A mini-batch's draws are keyed by its global index, never by the rank (docs/architecture.md §3), so
the ranks' mini-batches together are the single-process epoch, sample for sample, under every
placement.

Examples
--------
In each process of ``torchrun --nproc-per-node 4`` (a process group on GPUs: not run
here), ``graphsage`` a compiled sampler, ``train_ids`` the training nodes:

>>> import os, torch, torch.distributed as dist, gsample as gs
>>> dist.init_process_group("nccl")  # doctest: +SKIP
>>> torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))  # doctest: +SKIP
>>> rank = dist.get_rank()  # doctest: +SKIP
>>> A = gs.datasets.rmat(2_400_000, 120_000_000, seed=0) if rank == 0 else None  # doctest: +SKIP
>>> G = gs.distributed.place(A)                              # "auto"  # doctest: +SKIP
>>> loader = gs.DataLoader(G, graphsage, train_ids, 512, seed=0, distributed=True)  # doctest: +SKIP
>>> for batch in loader:  # doctest: +SKIP
...     train(batch)                                         # batch.index: the global index
"""

from gsample.distributed.comm import local_init_method
from gsample.distributed.features import PartitionedFeatures, even_bounds
from gsample.distributed.partition import PartitionedMatrix, edge_balanced_bounds
from gsample.distributed.place import PLACEMENTS, choose_placement, place
from gsample.distributed.shared import attach_graph, remove_shared, share_graph
from gsample.distributed.split import rank_batches, resolve_ranks

__all__ = [
    "PLACEMENTS",
    "PartitionedFeatures",
    "PartitionedMatrix",
    "attach_graph",
    "choose_placement",
    "edge_balanced_bounds",
    "even_bounds",
    "local_init_method",
    "place",
    "rank_batches",
    "remove_shared",
    "resolve_ranks",
    "share_graph",
]
