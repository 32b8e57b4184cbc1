"""Super-batching in :class:`gsample.pyg.NeighborLoader`: ``super_batch=N`` or ``"auto"``.

``gs.DataLoader(..., super_batch=N)`` samples N mini-batches in one run of a compiled
program (``CompiledSampler.super_batched``: the program rewritten over block-diagonal ids by
``gsample.passes.super_batch``), mini-batch ``first + b`` drawing with its own key, so its
batches are those sampled one at a time (docs/architecture.md §3, consequence 4).
``NeighborLoader`` keys mini-batch ``i`` of an epoch by ``i``, as ``gs.DataLoader`` does, so
the same holds for it: :class:`SuperBatches` runs the loader's program for a run of
consecutive mini-batches, and :class:`Runs` cuts an epoch into such runs (``"auto"``: the
size timed on the first epoch's own mini-batches, by ``gs.DataLoader``'s policy). The
batches, their order and every tensor of them are those of ``super_batch=1``.

Which program runs: the loader's own (``neighbor_sample``, ``induced_sample``,
``disjoint_sample``), its per-mini-batch input the seeds. Temporal sampling gives each seed
a time too (``input_time``, or a node's own), and a super-batched program takes one
per-mini-batch input (every other tensor is the same for all its mini-batches): there the
input is the seeds' positions in ``input_nodes``, and :func:`by_position` looks the nodes
and their times up in tables fixed when the loader is made. Positions are ids of a graph of
``max(N, S)`` nodes (:func:`padded`: isolated nodes added when the ``S`` inputs outnumber
the ``N`` nodes), whose draws are the graph's own.

``LinkNeighborLoader`` on a ``Data`` keys its mini-batches by their index in the epoch too,
and :class:`LinkSuperBatches` runs its program over the seeds of several mini-batches, each
mini-batch's negatives drawn first with its own key (as one at a time). Its seeds, with
their negatives, are new each mini-batch: temporal link sampling writes each run's seeds
and times into tables the program reads by position (:func:`by_position`), buffers that
keep their identity (a captured program reads them where they are) and grow when a run
needs more room.

On a ``HeteroData`` (or heterogeneous stores), both loaders run their steps through
:class:`gsample.interop.pyg.hetero_super_batch.HeteroSuperBatches`.

Refused, with a ``ValueError`` naming ``super_batch`` (:func:`refuse`): ``compile=False``
and ``"auto"`` with worker processes (it times sizes in the process that samples).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from gsample.compiler import compile as gs_compile
from gsample.formats import CSC
from gsample.interop.pyg.temporal import TemporalSpec, disjoint_sample
from gsample.loader.super_batching import (
    auto_statistic,
    choose_super_batch,
    default_budget,
    out_of_memory,
    release_frames,
)
from gsample.matrix.sparse import Matrix


def active(super_batch) -> bool:
    """Whether a checked ``super_batch`` asks for more than one mini-batch per run."""
    return super_batch is not None and super_batch != 1


def refuse(super_batch, loader: str, why: str) -> None:
    """A ``ValueError`` naming ``super_batch`` when it asks for runs of several mini-batches
    (None and 1 sample one at a time, as the loader does anyway); ``why`` says why
    ``loader`` cannot.

    Examples
    --------
    >>> refuse(4, "NeighborLoader", "compile=False samples eagerly")
    Traceback (most recent call last):
    ValueError: super_batch: gsample.pyg.NeighborLoader cannot super-batch ...
    """
    if active(super_batch):
        raise ValueError(
            f"super_batch: gsample.pyg.{loader} cannot super-batch here ({why}); give "
            "super_batch=None (or 1) to sample one mini-batch at a time"
        )


def padded(A: Matrix, num_nodes: int) -> Matrix:
    """``A`` with isolated nodes added up to ``num_nodes`` (``A`` itself when it has as
    many): the same edges, in the same order, with the same ids and values.

    Examples
    --------
    >>> import gsample as gs
    >>> A = gs.datasets.rmat(100, 500, seed=0)
    >>> padded(A, A.num_nodes + 3).num_nodes
    103
    >>> padded(A, A.num_nodes + 3).num_edges == A.num_edges
    True
    """
    if num_nodes <= A.num_nodes:
        return A
    csc = A.csc
    extra = csc.indptr[-1:].expand(num_nodes - A.num_nodes)
    return Matrix(
        CSC.of(
            num_nodes,
            torch.cat([csc.indptr, extra]),
            csc.rows,
            row_ids=csc.row_ids,
            col_ids=csc.col_ids,
            values=csc.values,
            eids=csc.eids,
        )
    )


def by_position(
    A,
    seeds,
    nodes,
    times,
    edge_time=None,
    num_neighbors=(25, 10),
    replace: bool = False,
    weighted: bool = False,
    strategy: str = "uniform",
):
    """:func:`~gsample.interop.pyg.temporal.disjoint_sample` of the inputs at positions
    ``seeds``: seed ``i`` is node ``nodes[seeds[i]]`` at time ``times[seeds[i]]``.

    Parameters
    ----------
    A : gs.Matrix, shape (N', N')
        The graph, with at least as many nodes as there are inputs (:func:`padded`).
    seeds : LongTensor, shape (B,)
        The mini-batch's positions in the loader's inputs (its per-mini-batch input).
    nodes, times : Tensor, shape (S,)
        Each input's node and time.
    edge_time : Tensor, shape (E,), optional
        As ``disjoint_sample``'s.
    num_neighbors, replace, weighted, strategy
        As ``disjoint_sample``'s.

    Returns
    -------
    (list of gs.Matrix, list of LongTensor)
        ``disjoint_sample(A, nodes[seeds], times[seeds], edge_time, ...)``: the draws the
        loader makes for those seeds one mini-batch at a time.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A = gs.datasets.rmat(100, 500, seed=0)
    >>> nodes, times = torch.tensor([3, 5, 7]), torch.tensor([10, 20, 30])   # 3 inputs
    >>> et = torch.arange(A.num_edges)                      # edge times, A's edge order
    >>> blocks, slots = gs.compile(by_position)(A, torch.tensor([0, 2]), nodes, times, et,
    ...                                         num_neighbors=(5, 5))
    >>> len(blocks), slots[0]                               # inputs 0 and 2: two trees
    (2, tensor([0, 1]))
    """
    return disjoint_sample(
        A,
        nodes[seeds],
        times[seeds],
        edge_time,
        num_neighbors=num_neighbors,
        replace=replace,
        weighted=weighted,
        strategy=strategy,
    )


class SuperBatches:
    """A ``NeighborLoader``'s program run for several consecutive mini-batches at once.

    Parameters
    ----------
    A : gs.Matrix
        The graph sampled.
    program : gs.CompiledSampler
        The loader's compiled program (``neighbor_sample``, ``induced_sample`` or
        ``disjoint_sample``), called as ``program(A, seeds, **hops)``.
    hops : dict
        Its static arguments (``num_neighbors``, ``replace``, ...).
    input_nodes : LongTensor, shape (S,)
        The loader's seeds, one per input position (checked ids).
    batch_size : int
        Seeds per mini-batch (the first mini-batch traces the program).
    spec : TemporalSpec, optional
        Disjoint / temporal sampling; with ``time_attr`` the program run is
        :func:`by_position`.
    input_time : Tensor, shape (S,), optional
        Each input's time (PyG's ``input_time``); default, for node-level time, its node's.
    edge_time : Tensor, shape (E,), optional
        The graph's edge times in its edge order (``DisjointSampler.edge_time``).

    Raises
    ------
    ValueError
        ``super_batch: ...`` where the program cannot be super-batched; PyG's
        ``input_time`` error for edge-level time without it.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> from gsample.interop.pyg.neighbor_loader import neighbor_sample
    >>> A = gs.datasets.rmat(100, 500, seed=0)
    >>> input_nodes = torch.arange(64)                      # the loader's seeds
    >>> sb = SuperBatches(A, gs.compile(neighbor_sample), {"num_neighbors": (5, 5)},
    ...                   input_nodes, 32)
    >>> outs = sb.run([torch.arange(32), torch.arange(32, 64)], 0, first=0)  # epoch seed 0
    >>> len(outs)                                           # one output per mini-batch
    2
    """

    def __init__(
        self,
        A: Matrix,
        program,
        hops: dict,
        input_nodes: torch.Tensor,
        batch_size: int,
        spec: TemporalSpec | None = None,
        input_time: torch.Tensor | None = None,
        edge_time: torch.Tensor | None = None,
    ):
        self.device = A.device
        self.input_nodes = input_nodes
        self.temporal = spec is not None and spec.temporal
        first = torch.arange(min(batch_size, input_nodes.numel()))
        if self.temporal:  # per-mini-batch input: positions; nodes and times are tables
            times = spec.seed_time(input_nodes, input_time)
            graph = padded(A, input_nodes.numel())
            nodes, times = input_nodes.to(self.device), times.to(self.device)
            args = (graph, first.to(self.device), nodes, times, edge_time)
            program = gs_compile(by_position)
        else:
            args = (A, self.seeds(first))
        # the tables and the graph's times are fixed while the loader runs
        self.batcher = program.super_batched(args, hops, seeds="seeds", fixed_state=True)

    def seeds(self, positions: torch.Tensor) -> torch.Tensor:
        """The per-mini-batch input of the input positions ``positions``, on the graph's
        device: their nodes, or (temporal) the positions."""
        return (positions if self.temporal else self.input_nodes[positions]).to(self.device)

    def run(self, parts: list, epoch_seed: int, first: int) -> list:
        """The program's outputs of mini-batches ``first, first + 1, ...`` (input positions
        ``parts``, a LongTensor each), drawn in one run."""
        return self.batcher.run([self.seeds(p) for p in parts], epoch_seed, first)

    def measure(self, positions: torch.Tensor, epoch_seed: int, index: int) -> tuple:
        """Mini-batch ``index`` alone: ``(its output, its estimated bytes)``."""
        outs, nbytes = self.batcher.measure(self.seeds(positions), epoch_seed, index)
        return outs[0], nbytes


class LinkSuperBatches:
    """A ``LinkNeighborLoader``'s program run for the seeds of several mini-batches at once.

    Its per-mini-batch input is each mini-batch's seeds (the positives' endpoints and their
    negatives, :func:`gsample.interop.pyg.negatives.edge_seeds`), given to :meth:`run`:
    node ids, or, temporal, positions in the run's table of seeds and times (the graph
    padded to the table's size, :func:`padded`).

    Parameters
    ----------
    A : gs.Matrix
        The graph sampled.
    program : gs.CompiledSampler
        The loader's compiled program (``neighbor_sample`` or ``disjoint_sample``).
    hops : dict
        Its static arguments.
    probe : LongTensor, shape (B,)
        Node ids of ``A`` to trace the program with (no draw is kept).
    spec : TemporalSpec, optional
        Disjoint / temporal sampling; with ``time_attr`` :func:`by_position` runs.
    edge_time : Tensor, shape (E,), optional
        The graph's edge times in its edge order (``DisjointSampler.edge_time``).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> from gsample.interop.pyg.neighbor_loader import neighbor_sample
    >>> A = gs.datasets.rmat(100, 500, seed=0)
    >>> sb = LinkSuperBatches(A, gs.compile(neighbor_sample), {"num_neighbors": (5, 5)},
    ...                       torch.arange(64))
    >>> seeds0, seeds1 = torch.arange(32), torch.arange(32, 64)
    >>> outs = sb.run([seeds0, seeds1], [None, None], 0, first=0)   # epoch seed 0
    >>> len(outs)
    2
    """

    def __init__(
        self,
        A: Matrix,
        program,
        hops: dict,
        probe: torch.Tensor,
        spec: TemporalSpec | None = None,
        edge_time: torch.Tensor | None = None,
    ):
        self.A, self.device, self.hops = A, A.device, hops
        self.temporal = spec is not None and spec.temporal
        self.edge_time, self.capacity = edge_time, 0
        self.nodes = self.times = self.batcher = None
        if self.temporal:  # built by the first run, at its size (_tables)
            self.program = gs_compile(by_position)
        else:
            args = (A, probe.to(self.device))
            self.batcher = program.super_batched(args, hops, seeds="seeds", fixed_state=True)

    def _tables(self, size: int, dtype: torch.dtype) -> None:
        """Room for ``size`` seeds in the tables (temporal): new, larger buffers (and the
        program over a graph padded to them) when they hold fewer, else the same ones."""
        if self.times is not None and size <= self.capacity and self.times.dtype == dtype:
            return
        self.capacity = max(size, 2 * self.capacity)
        self.nodes = torch.zeros(self.capacity, dtype=torch.int64, device=self.device)
        self.times = torch.zeros(self.capacity, dtype=dtype, device=self.device)
        graph = padded(self.A, self.capacity)
        first = torch.zeros(1, dtype=torch.int64, device=self.device)
        args = (graph, first, self.nodes, self.times, self.edge_time)
        self.batcher = self.program.super_batched(args, self.hops, seeds="seeds", fixed_state=True)

    def inputs(self, seeds: list, times: list) -> list:
        """The per-mini-batch inputs of mini-batches of seeds ``seeds`` (checked node ids)
        at times ``times`` (tensors, or None each): the seeds on the graph's device, or,
        temporal, their positions in the tables, which now hold them."""
        if not self.temporal:
            return [s.to(self.device) for s in seeds]
        sizes = [s.numel() for s in seeds]
        flat_time = torch.cat([t.to(self.device) for t in times])
        self._tables(sum(sizes), flat_time.dtype)
        total = sum(sizes)
        # in place: the program reads the tables where it found them when it was built
        self.nodes[:total].copy_(torch.cat(seeds).to(self.device))
        self.times[:total].copy_(flat_time)
        positions = torch.arange(total, device=self.device)
        return list(torch.split(positions, sizes))

    def run(self, seeds: list, times: list, epoch_seed: int, first: int) -> list:
        """The program's outputs of mini-batches ``first, first + 1, ...`` (seeds ``seeds``,
        times ``times``), drawn in one run."""
        parts = self.inputs(seeds, times)  # first: it may build the batcher (temporal)
        return self.batcher.run(parts, epoch_seed, first)

    def measure(self, seeds, times, epoch_seed: int, index: int) -> tuple:
        """Mini-batch ``index`` alone: ``(its output, its estimated bytes)``."""
        (part,) = self.inputs([seeds], [times])
        outs, nbytes = self.batcher.measure(part, epoch_seed, index)
        return outs[0], nbytes


@dataclass(frozen=True)
class Run:
    """One item of a super-batched epoch: mini-batches ``first .. first + count - 1`` of the
    epoch ``epoch_seed``, sampled together. ``role``: ``"run"``, or, while ``"auto"`` picks
    its size, ``"measure"`` (mini-batch ``first`` alone, its memory measured) or
    ``"time"`` (timed)."""

    epoch_seed: int
    first: int
    count: int
    role: str = "run"


class Runs:
    """How an epoch's mini-batches are cut into runs: ``size`` at a time, or ``"auto"``.

    ``"auto"`` is ``gs.DataLoader``'s policy: mini-batch 0 is sampled alone and its bytes
    measured, which caps the size (``memory_budget``, default half a GPU's free memory, or on
    the CPU the L2 cache); then runs of 1, 2, 4, ... mini-batches are timed three times each
    on the epoch's own mini-batches (the first two runs of a size lower, compile and capture
    it), until doubling stops paying from 8 on; the size with the least time per mini-batch
    is kept for the rest of the epoch and every later one. The loader's dataset reports
    what it measured (:attr:`batch_bytes`, :attr:`seconds`) while :meth:`plan` is paused on
    the item, so ``"auto"`` needs the sampling in the process that iterates
    (``num_workers=0``).

    Attributes
    ----------
    size : int or None
        Mini-batches per run (``"auto"``: None until chosen).
    batch_bytes, memory_cap : int or None
        ``"auto"``: one mini-batch's measured bytes, and the most mini-batches the budget
        holds.
    times : dict
        ``"auto"``: seconds per mini-batch of every size timed.
    seconds : float or None
        Set by the dataset after a ``"time"`` run: its seconds per mini-batch.

    Examples
    --------
    >>> import torch
    >>> list(Runs(4, None, torch.device("cpu")).plan(10))
    [(0, 4, 'run'), (4, 4, 'run'), (8, 2, 'run')]
    """

    def __init__(self, super_batch, memory_budget: int | None, device: torch.device):
        self.super_batch = super_batch
        self.size = super_batch if isinstance(super_batch, int) else None
        self.memory_budget, self.device = memory_budget, device
        self.batch_bytes = self.memory_cap = self.seconds = None
        self.times: dict = {}
        self.runs: dict = {}  # "auto": size -> seconds per mini-batch of its counted runs

    def plan(self, num_batches: int) -> Iterator[tuple]:
        """``(first, count, role)`` of each run of an epoch of ``num_batches`` mini-batches."""
        i = 0
        if self.size is None and num_batches:  # "auto": measure batch 0, time sizes
            yield 0, 1, "measure"
            budget = self.memory_budget or default_budget(self.device)
            self.memory_cap = max(1, min(num_batches, budget // max(self.batch_bytes or 0, 1)))
            i, size = 1, 1
            self.times, self.runs = {}, {}
            while 1 < self.memory_cap >= size and i + 3 * size <= num_batches:
                runs = []
                for r in range(3):
                    yield i, size, "time"
                    i += size
                    if r:  # the first run of a size compiles it: not counted
                        runs.append(self.seconds)
                self.runs[size] = runs
                self.times[size] = min(runs)
                best = min(self.times, key=self.times.get)
                if size >= 8 and best != size and self.times[size] > 0.95 * self.times[best]:
                    break  # doubling stopped paying (below 8, a run's fixed cost hides it)
                size *= 2
            # one at a time unless a size is clearly faster (gs.DataLoader's rule)
            self.size = (
                choose_super_batch(self.runs, statistic=auto_statistic(self.device))
                if self.runs
                else 1
            )
        size = self.size or 1
        for first in range(i, num_batches, size):
            yield first, min(size, num_batches - first), "run"

    def clock(self) -> float:
        """The time now, after the device's queued work (a GPU's) is done."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter()


def sampled_alone(error: Exception, first: int, count: int, sample, loader) -> list:
    """A run of the mini-batches ``first .. first + count - 1`` raised ``error``: sample them
    one by one (``sample(i)`` draws mini-batch ``i`` alone), the failed run's values freed
    first. The first that raises raises its own error, as without super-batching. If none
    does and the run ran out of memory (:func:`gsample.loader.super_batching.out_of_memory`),
    they are returned (the same batches: a run samples what its mini-batches do), with a
    ``RuntimeWarning`` the first time for ``loader``; any other error is a ``RuntimeError``
    naming ``super_batch``."""
    release_frames(error)
    batches = [sample(i) for i in range(first, first + count)]
    if out_of_memory(error):
        if not getattr(loader, "_warned_out_of_memory", False):
            loader._warned_out_of_memory = True
            warnings.warn(
                f"super_batch: {count} mini-batches in one run ran out of memory "
                f"({type(error).__name__}); they were sampled one by one (the same batches): "
                "a smaller super_batch (or 'auto' with a memory_budget) avoids the failed "
                "attempt",
                RuntimeWarning,
                stacklevel=3,
            )
        return batches
    raise RuntimeError(
        f"super_batch: sampling mini-batches {first}..{first + count - 1} in one run failed "
        f"({type(error).__name__}: {error}) although they sample one by one; use a smaller "
        "super_batch (or 'auto' with a memory_budget)"
    ) from error


__all__ = [
    "LinkSuperBatches",
    "Run",
    "Runs",
    "SuperBatches",
    "active",
    "by_position",
    "padded",
    "refuse",
    "sampled_alone",
]
