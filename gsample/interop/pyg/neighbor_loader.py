"""PyG's ``NeighborLoader``, sampled by gsample: :class:`NeighborLoader` and its program,
:func:`neighbor_sample` (PyG's hops in the DSL).

:class:`NeighborLoader` takes PyG's ``NeighborLoader`` arguments (``num_neighbors``,
``input_nodes``, ``batch_size``, ``shuffle``, ``replace``, ``weight_attr``, ``transform``,
``transform_sampler_output``, ``filter_per_worker``, ``input_id``, ``subgraph_type``) and
samples with :func:`neighbor_sample`, compiled (``induced`` and ``bidirectional``:
:mod:`gsample.interop.pyg.subgraph`); ``disjoint`` and temporal sampling (``time_attr``,
``input_time``, ``temporal_strategy``) run :mod:`gsample.interop.pyg.temporal`'s program; a
``HeteroData`` :mod:`gsample.interop.pyg.hetero_loader`'s steps; a ``(FeatureStore,
GraphStore)`` is read by :mod:`gsample.interop.pyg.stores`. ``super_batch`` samples several
mini-batches in one run of the compiled program (:mod:`gsample.interop.pyg.super_batch`),
the batches unchanged. ``str(loader)`` and ``loader(index)`` are PyG's. PyG's other
arguments are refused by name (:mod:`gsample.interop.pyg.arguments`).

It is torch's ``DataLoader`` over the epoch's mini-batch indices (``_EpochBatches``, in the
main process) and a dataset that samples mini-batch ``i`` in ``batch_scope(epoch_seed, i)``
(``_MiniBatches``), whichever process draws it: it samples exactly what
``gs.DataLoader(A, neighbor_sample, input_nodes, batch_size, shuffle, seed=seed)`` samples
(docs/architecture.md §3, consequence 5; :mod:`gsample.pyg` on keys).
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable

import torch

from gsample.backend import backend_for
from gsample.base import validate as V
from gsample.base.random import MASK64, batch_scope, combine, hash_tensor
from gsample.compiler.compiled import compile as gs_compile
from gsample.interop.pyg import arguments as _args
from gsample.interop.pyg import data as _out
from gsample.interop.pyg import hetero_loader as _hetero
from gsample.interop.pyg import stores as _stores
from gsample.interop.pyg import subgraph as _subgraph
from gsample.interop.pyg import super_batch as _super
from gsample.interop.pyg import temporal as _temporal
from gsample.interop.pyg.hetero_super_batch import HeteroSuperBatches
from gsample.loader.dataloader import epoch_keys
from gsample.loader.super_batching import super_batch_options
from gsample.matrix.sparse import Matrix


def neighbor_sample(
    A, seeds, num_neighbors=(25, 10), replace: bool = False, weighted: bool = False
):
    """PyG's neighbour sampling in the DSL: each hop samples only the nodes it first reached.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph; column ``j`` holds the in-edges of ``j``.
    seeds : LongTensor, shape (B,)
        The mini-batch's nodes (global ids, unique).
    num_neighbors : sequence of int
        In-neighbours sampled per node at each hop; ``-1`` keeps all of them.
    replace : bool
        Sample with replacement.
    weighted : bool
        Draw each node's in-neighbours with probability proportional to the edges' values
        (``A``'s values, non-negative; every column with edges has one positive), as
        :meth:`gs.Matrix.individual_sample` with ``probs``; default uniformly.

    Returns
    -------
    list of gs.Matrix
        ``blocks[h]``'s columns are the nodes first reached at hop ``h`` (the seeds for
        ``h = 0``) in ascending id order, each with its sampled in-edges. Once a hop
        reaches no new node, the later blocks have no column (shape ``(N, 0)``), as PyG's
        hops add no node and no edge then; their draws still take their op ordinals.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> blocks = neighbor_sample(A, seeds, (15, 10))
    >>> data = gs.Batch(seeds, 0, blocks).to_pyg()
    >>> data.batch_size, data.num_sampled_nodes[0]          # the seeds come first
    (3, 3)
    """
    return _subgraph.neighbor_hops(A, seeds, num_neighbors, replace, weighted)[0]


def batch_key(input_id: torch.Tensor) -> int:
    """A mini-batch's key from the set of its ``input_id``: a hash of the set (order does not
    matter), below ``2**62`` (a batch index of :func:`gsample.base.random.batch_scope`).

    Parameters
    ----------
    input_id : LongTensor, shape (B,)
        The mini-batch's examples' positions in the loader's input.

    Examples
    --------
    >>> import torch
    >>> batch_key(torch.tensor([4, 2])) == batch_key(torch.tensor([2, 4]))
    True
    """
    ids = input_id.reshape(-1).to(torch.int64)
    h = hash_tensor(0x5EED, torch.zeros_like(ids), ids).sum()  # wraps modulo 2**64
    return combine(ids.numel(), int(h) & MASK64) & ((1 << 62) - 1)


def epoch_order(
    num_inputs: int, shuffle: bool, epoch_seed: int, device=None, sort_on=None
) -> torch.Tensor:
    """An epoch's order of ``num_inputs`` input positions: ``arange``, or shuffled by
    gsample's hash permutation of the epoch (``gs.DataLoader``'s shuffle), the same in every
    process.

    Parameters
    ----------
    num_inputs : int
        The loader's number of inputs.
    shuffle : bool
        Shuffle (else ``arange``).
    epoch_seed : int
        The epoch's seed.
    device : torch.device, optional
        Where the order is returned (default the CPU).
    sort_on : torch.device, optional
        Where the shuffle is computed (the graph's GPU: a stable sort of distinct keys, so
        the same permutation, without a host sort of every input each epoch); default
        ``device``.

    Returns
    -------
    LongTensor, shape (num_inputs,)

    Examples
    --------
    >>> epoch_order(5, False, 0)
    tensor([0, 1, 2, 3, 4])
    """
    out = torch.device("cpu") if device is None else torch.device(device)
    if not shuffle:
        return torch.arange(num_inputs, device=out)
    where = out if sort_on is None else torch.device(sort_on)
    # gs.DataLoader's keys, made as it makes them (the CUDA backend's kernel on a GPU)
    keys = epoch_keys(epoch_seed, num_inputs, where, backend_for(where))
    return torch.argsort(keys, stable=True).to(out)


class _EpochBatches(torch.utils.data.Sampler):
    """Yields ``(epoch_seed, i)`` for every mini-batch of the current epoch, in the main
    process, so the epoch travels with each index to whichever worker samples it. The
    loader sets ``epoch_seed`` when an epoch starts (torch may iterate a sampler more than
    once per epoch: its worker iterator resets it on creation).

    Super-batched (``runs``, a :class:`~gsample.interop.pyg.super_batch.Runs`): yields a
    :class:`~gsample.interop.pyg.super_batch.Run` per run of consecutive mini-batches
    instead, lazily (``"auto"`` decides the next run's size from what the dataset measured
    of the last one)."""

    def __init__(self, num_batches: int, runs: _super.Runs | None = None):
        self.num_batches, self.epoch_seed, self.runs = num_batches, 0, runs

    def __len__(self) -> int:
        """Items per epoch: mini-batches, or runs of a size given (``"auto"``'s runs are not
        known before it has chosen: then at most one per mini-batch)."""
        size = None if self.runs is None else self.runs.size
        return self.num_batches if size is None else -(-self.num_batches // size)

    def __iter__(self):
        if self.runs is None:
            return iter([(self.epoch_seed, i) for i in range(self.num_batches)])
        seed = self.epoch_seed
        return (_super.Run(seed, *run) for run in self.runs.plan(self.num_batches))


class _Flattened:
    """torch's iterator over a super-batched epoch (a list of batches per run), yielding
    the batches one by one, each through ``filter`` (PyG's ``filter_fn``, in this process:
    ``filter_per_worker=False``) when given; ``len`` is the epoch's mini-batches."""

    def __init__(self, iterator, filter: Callable | None, length: int):
        self.iterator, self.filter, self.length = iterator, filter, length
        self.pending: collections.deque = collections.deque()

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return self.length

    def _reset(self, loader, first_iter: bool = False) -> None:
        """A persistent-workers loader's next epoch (torch resets its iterator)."""
        self.pending.clear()
        self.iterator._reset(loader, first_iter)

    def __next__(self):
        while not self.pending:
            self.pending.extend(next(self.iterator))
        out = self.pending.popleft()
        return out if self.filter is None else self.filter(out)


class _MiniBatches(torch.utils.data.Dataset):
    """Mini-batch ``(epoch_seed, i)``: its seeds (as ``gs.DataLoader`` orders an epoch),
    sampled in ``batch_scope(epoch_seed, i)`` and, where PyG would (``filter_per_worker``),
    joined with the ``Data``'s attributes (:meth:`filter`, PyG's ``filter_fn``).

    ``join(node, row, col, edge)`` builds a batch's ``Data`` instead of PyG's
    ``filter_data`` (a ``(FeatureStore, GraphStore)``: :mod:`gsample.interop.pyg.stores`);
    ``hetero`` (a :class:`~gsample.interop.pyg.hetero_loader.HeteroBatches`) samples and
    builds the batches of a ``HeteroData`` (``A`` its graph, ``fn`` unused). Item
    ``Run(epoch_seed, first, count)`` (super-batching, :attr:`super`) is the list of those
    mini-batches' batches, drawn in one run."""

    def __init__(
        self,
        data,
        A,
        fn,
        input_nodes,
        input_id,
        batch_size,
        shuffle,
        transform,
        transform_sampler_output,
        filter_per_worker,
        edge_ids=None,
        post=None,
        join=None,
        hetero=None,
        disjoint=None,
        input_time=None,
        layout=None,
    ):
        self.data, self.A, self.fn = data, A, fn
        # the program's output as a PygSample (pyg_sample; hops_sample for neighbor_hops)
        self.layout = _out.pyg_sample if layout is None else layout
        self.join, self.hetero = join, hetero
        # disjoint / temporal sampling (a gsample.interop.pyg.temporal.DisjointSampler) and
        # each input node's time (PyG's input_time)
        self.disjoint, self.input_time = disjoint, input_time
        self.post = post  # PygSample -> PygSample (bidirectional: to_bidirectional) or None
        # weight_attr: the sampled graph holds the positive-weight edges only; their ids in
        # data.edge_index, and the weights are the Data's (filter_data slices them), not
        # edge values of the sample
        self.edge_ids = None if edge_ids is None else edge_ids.to(A.device)
        self.input_nodes, self.input_id = input_nodes, input_id
        self.batch_size, self.shuffle = batch_size, shuffle
        self.transform, self.transform_sampler_output = transform, transform_sampler_output
        self.filter_per_worker = filter_per_worker
        self._order = (None, None)  # (epoch_seed, positions): one per epoch
        # super-batching (NeighborLoader's super_batch): the program run for several
        # mini-batches at once (a gsample.interop.pyg.super_batch.SuperBatches), and how an
        # epoch is cut into runs (a Runs); None: one mini-batch at a time
        self.super: _super.SuperBatches | None = None
        self.runs: _super.Runs | None = None

    def positions(self, epoch_seed: int) -> torch.Tensor:
        """This epoch's order of the input positions (``gs.DataLoader``'s shuffle)."""
        if self._order[0] != epoch_seed:
            n, device = self.input_nodes.numel(), self.input_nodes.device
            order = epoch_order(n, self.shuffle, epoch_seed, device, _sort_on(self.A))
            self._order = (epoch_seed, order)
        return self._order[1]

    def __getitem__(self, item):
        if isinstance(item, _super.Run):  # a run of mini-batches: a list of their batches
            outs = self.sample_run(item)
            return [self.filter(out) for out in outs] if self.filter_per_worker else outs
        epoch_seed, i = item
        out = self.sample(self.batch_positions(epoch_seed, i), epoch_seed, i)
        return self.filter(out) if self.filter_per_worker else out

    def batch_positions(self, epoch_seed: int, i: int) -> torch.Tensor:
        """The input positions of mini-batch ``i`` of the epoch ``epoch_seed``."""
        return self.positions(epoch_seed)[i * self.batch_size : (i + 1) * self.batch_size]

    def sample(self, positions: torch.Tensor, epoch_seed: int, key: int, distinct: bool = True):
        """The ``SamplerOutput`` of the input positions ``positions`` drawn as mini-batch
        ``key`` (``metadata = (input_id, None, edge_weight)``, as
        :class:`gsample.pyg.Sampler`'s); ``distinct``: no position repeats (an epoch's
        mini-batches; ``loader(index)`` checks)."""
        seeds = self.input_nodes[positions]
        seed_time = None if self.input_time is None else self.input_time[positions]
        if self.hetero is not None:  # seeds of the input node type; metadata alike
            input_id = positions if self.input_id is None else self.input_id[positions]
            with batch_scope(epoch_seed, key):
                return self.hetero.sample_nodes(seeds, input_id, seed_time)
        with batch_scope(epoch_seed, key):
            s = self.draw(seeds, seed_time, distinct)
        return self.output(positions, s)

    def draw(self, seeds: torch.Tensor, seed_time: torch.Tensor | None, distinct: bool = True):
        """One mini-batch's sample (a ``PygSample``) of ``seeds`` at times ``seed_time``;
        call it inside the mini-batch's ``batch_scope``. ``distinct``: no seed repeats."""
        seeds = seeds.to(self.A.device)
        if self.disjoint is not None:  # one tree per seed, at the seed's time
            return self.disjoint.sample(seeds, self.disjoint.spec.seed_time(seeds, seed_time))
        out = self.fn(self.A, seeds)
        if self.layout is _out.hops_sample:  # (which lays a repeated seed out as pyg_sample)
            return _out.hops_sample(out, seeds, distinct)
        return self.layout(out, seeds)

    def sample_run(self, run: _super.Run) -> list:
        """The ``SamplerOutput`` of each mini-batch of ``run``, in order: drawn in one run
        of the super-batched program (:attr:`super`), mini-batch ``i`` with index ``i``, so
        each is the batch :meth:`sample` gives it alone. A run of one mini-batch is drawn
        as :meth:`sample` draws it. While ``"auto"`` picks its size, a ``"measure"`` run
        reports its bytes and a ``"time"`` run its seconds to :attr:`runs`."""
        indices = range(run.first, run.first + run.count)
        parts = [self.batch_positions(run.epoch_seed, i) for i in indices]
        runs = self.runs
        began = runs.clock() if run.role == "time" else 0.0
        if run.count == 1 and run.role != "measure":
            batches = [self.sample(parts[0], run.epoch_seed, run.first)]
        else:
            if run.role == "measure":
                out, runs.batch_bytes = self.super.measure(parts[0], run.epoch_seed, run.first)
                outs = [out]
            else:
                try:
                    outs = self.super.run(parts, run.epoch_seed, run.first)
                except Exception as error:
                    outs = None
                    batches = _super.sampled_alone(
                        error,
                        run.first,
                        run.count,
                        lambda i: self.sample(parts[i - run.first], run.epoch_seed, i),
                        self,
                    )
            if outs is not None and self.hetero is not None:  # PyG's outputs already
                batches = outs
            elif outs is not None:
                batches = [self.output(p, self.pyg_sample(o, p)) for o, p in zip(outs, parts)]
        if run.role == "time":
            runs.seconds = (runs.clock() - began) / run.count
        return batches

    def pyg_sample(self, out, positions: torch.Tensor):
        """A super-batched program's output of one mini-batch (input positions
        ``positions``) as its ``PygSample``, as :meth:`draw` maps it."""
        seeds = self.input_nodes[positions].to(self.A.device)
        if self.disjoint is not None:
            return _temporal.disjoint_pyg_sample(out, seeds)
        return self.layout(out, seeds)

    def output(self, positions: torch.Tensor, s):
        """The ``SamplerOutput`` of the sample ``s`` (a ``PygSample``) of the input positions
        ``positions``: ``post`` applied, edge ids mapped, on the inputs' device."""
        # import here: PyTorch Geometric is optional (the module imports without it)
        from torch_geometric.sampler import SamplerOutput

        seed_time = None if self.input_time is None else self.input_time[positions]
        batch = getattr(s, "batch", None)  # disjoint: each node's seed
        if self.post is not None:
            s = self.post(s)
        cpu = self.input_nodes.device
        input_id = positions if self.input_id is None else self.input_id[positions]
        weight = None if s.weight is None else s.weight.to(cpu)
        edge = s.edge
        if self.edge_ids is not None:
            edge, weight = self.edge_ids[edge], None
        # a Data's row and col stay on the sample's device: filter_data stacks them into
        # edge_index and moves that to the data's device (through the host would be a
        # copy each way for a graph and data on the GPU); a transform_sampler_output reads
        # the output first, all of it on one device (PyG's global_row, to_bidirectional)
        keep = self.join is None and self.transform_sampler_output is None
        local = s.row.device if keep else cpu
        return SamplerOutput(
            node=s.node.to(cpu),
            row=s.row.to(local),
            col=s.col.to(local),
            edge=edge.to(cpu),
            batch=None if batch is None else batch.to(cpu),
            num_sampled_nodes=s.num_sampled_nodes,
            num_sampled_edges=s.num_sampled_edges,
            metadata=(input_id, seed_time, weight),
        )

    def filter(self, out):
        """PyG's ``filter_fn``: ``transform_sampler_output``, then the ``Data``'s attributes
        of the sampled nodes and edges, PyG's fields, ``edge_weight`` when the sample has
        edge values, then ``transform``."""
        # import here: PyTorch Geometric is optional (the module imports without it)
        from torch_geometric.loader.utils import filter_data

        if self.transform_sampler_output is not None:
            out = self.transform_sampler_output(out)
        if self.hetero is not None:
            data = self.hetero.filter(out)
            return data if self.transform is None else self.transform(data)
        if self.join is None:
            data = filter_data(self.data, out.node, out.row, out.col, out.edge, None)
        else:
            data = self.join(out.node, out.row, out.col, out.edge)
        if "n_id" not in data:
            data.n_id = out.node
        if out.edge is not None and "e_id" not in data:
            data.e_id = out.edge
        data.num_sampled_nodes, data.num_sampled_edges = (
            out.num_sampled_nodes,
            out.num_sampled_edges,
        )
        input_id = out.metadata[0]
        data.input_id, data.batch_size = input_id, input_id.numel()
        if out.batch is not None:  # disjoint: PyG's batch vector, and the seeds' times
            data.batch = out.batch
        if out.metadata[1] is not None:
            data.seed_time = out.metadata[1]
        weight = out.metadata[2] if len(out.metadata) > 2 else None
        if weight is not None:
            data.edge_weight = weight
        return data if self.transform is None else self.transform(data)


def _identity(x):
    return x


def _sort_on(graph):
    """Where a loader over ``graph`` shuffles its inputs: the graph's GPU, else the host."""
    device = getattr(graph, "device", None)
    return device if device is not None and torch.device(device).type == "cuda" else None


def _distinct(ids: torch.Tensor, num_nodes: int | None = None) -> bool:
    """Whether the ids ``ids`` are all different; with ``num_nodes`` (ids checked in
    ``[0, num_nodes)``: a loader's input nodes) by marking them in a mask of the nodes, a
    pass over each, where a sort of every input of a large graph takes seconds."""
    if ids.numel() < 2:
        return True
    if num_nodes is None:
        return bool((torch.sort(ids).values.diff() != 0).all())
    seen = torch.zeros(num_nodes, dtype=torch.bool, device=ids.device)
    seen[ids] = True
    return int(seen.sum()) == ids.numel()


class NeighborLoader(torch.utils.data.DataLoader):
    """PyG's ``NeighborLoader``, sampled by gsample (:func:`neighbor_sample`, compiled).

    Parameters
    ----------
    data : torch_geometric.data.Data, HeteroData, or (FeatureStore, GraphStore)
        The graph and its node / edge attributes (``x``, ``y``, ``edge_attr``, ... are
        sliced into each mini-batch as PyG's loader does: dense, or sparse COO; another
        sparse layout is a ``TypeError`` naming the attribute). A ``Data`` without
        ``edge_index`` is a graph of no edge, as PyG's; one whose graph is a sparse
        adjacency (``adj_t``, ``adj``) is a ``TypeError`` naming it. A ``HeteroData`` is
        sampled per edge type by ``gs.HeteroGraph.sample_neighbors`` (one compiled step per
        hop and edge type: :mod:`gsample.interop.pyg.hetero_loader`) into PyG's
        ``HeteroData`` batches. A ``(FeatureStore, GraphStore)`` pair is read once into
        its graph (:mod:`gsample.interop.pyg.stores`) and its batches are built by PyG's
        ``filter_custom_store`` / ``filter_custom_hetero_store``; PyG's ``custom_cls``
        names their class.
    num_neighbors : list of int, or dict
        In-neighbours per node at each hop (``-1``: all). ``[]``: batches of the seeds
        alone (``n_id`` the seeds, no edge), as PyG's. For a ``HeteroData``, a list applies
        to every edge type, or PyG's ``{edge_type: [k, ...]}`` names every edge type (a
        missing or unknown one, or lists of different lengths: PyG's ``ValueError``).
    input_nodes : LongTensor of shape (S,), or BoolTensor of shape (N,), optional
        Seed nodes: ids, or a mask over the ``N`` nodes (its nonzero ids; another length
        is a ``ValueError``); default all nodes. Empty: an epoch of no mini-batch, as PyG's.
        For a ``HeteroData``: ``node_type``, ``(node_type, ids)``, ``(node_type, mask)`` or
        ``(node_type, None)`` (required, as PyG's).
    batch_size : int
        Seeds per mini-batch, ``>= 1``.
    shuffle : bool
        Shuffle the seeds every epoch (gsample's hash permutation, as ``gs.DataLoader``).
    replace : bool
        Sample with replacement.
    drop_last : bool
        Drop the last, smaller mini-batch.
    seed : int, optional
        The loader's seed; default drawn from gsample's stream now. Epoch ``e`` draws with
        ``combine(combine(0, seed), e)``, mini-batch ``i`` with index ``i``: the samples
        ``gs.DataLoader(..., seed=seed)`` draws, whatever ``num_workers``.
    graph : gs.Matrix or gs.HeteroGraph, optional
        The graph as a gsample matrix (e.g. already on a GPU; then keep
        ``num_workers=0``); default ``gs.Matrix.from_pyg(data, weight=None)``. Its edge
        values, when it has any, become each batch's ``edge_weight``. For a
        ``HeteroData``: a ``gs.HeteroGraph`` of its node and edge types and counts.
    compile : bool
        Compile the sampler with ``gs.compile`` (default True; on a GPU its ops run the
        CUDA backend's kernels). A ``HeteroData``'s per-(hop, edge type) step is compiled
        (``loader.graph.step_sampler()``, cached on the graph), the loop over hops and edge
        types staying in Python. ``False`` runs the same sampler eagerly: the same batches.
    transform : callable, optional
        Applied to each mini-batch's ``Data``.
    transform_sampler_output : callable, optional
        Applied to each mini-batch's ``SamplerOutput`` before the ``Data`` is built from
        it (PyG's; ``metadata = (input_id, None, edge_weight)``).
    filter_per_worker : bool, optional
        Build each batch's ``Data`` in the worker process that sampled it (True) or in the
        main process (False); default, as PyG: True unless ``data`` is on a GPU. It moves
        work between processes only: the batches are the same either way, and with
        ``num_workers=0`` it changes nothing.
    input_id : Tensor, shape (S,), optional
        What each seed is reported as in ``batch.input_id`` (PyG's); default its position
        in ``input_nodes``, or, for a mask, its node id (as PyG).
    weight_attr : str, optional
        PyG's weighted sampling: ``data[weight_attr]``, one finite non-negative weight per
        edge, makes each hop draw a node's in-neighbours with probability proportional to
        the weights (without replacement: ``k`` sequential draws among the edges not yet
        drawn, :meth:`gs.Matrix.individual_sample`). An edge of weight 0 is never sampled,
        at any hop (``-1`` keeps every edge of positive weight). The weights stay an
        attribute of the batch (sliced by ``e_id``), not ``edge_weight``. Not with
        ``graph=`` (a ``ValueError``).
    subgraph_type : {"directional", "bidirectional", "induced"} or PyG's SubgraphType
        PyG's: which edges a batch carries; the nodes (``n_id``) are the same for all three
        with the same seed (:mod:`gsample.interop.pyg.subgraph`). ``"directional"``: the
        sampled edges. ``"bidirectional"``: the sampled edges and their reverses (a reverse
        carries its sampled edge's ``e_id``), coalesced. ``"induced"``: every edge of the
        graph between two sampled nodes (with ``weight_attr``: every edge of positive
        weight). The last two have no hop structure: ``num_sampled_nodes`` /
        ``num_sampled_edges`` are None, as PyG's. Another value is a ``ValueError``.
    directed : bool
        PyG's deprecated spelling: ``False`` means ``subgraph_type="induced"``.
    input_time : Tensor, shape (S,), optional
        PyG's: each input node's time (integer or floating point, as ``data[time_attr]``),
        its tree's time; the batch's ``seed_time``. Needs ``time_attr``; default, for a
        node-level time, the seed's own (an edge-level one needs it).
    disjoint : bool
        PyG's: one tree per seed (a node reached from two seeds appears twice); the batch's
        ``batch`` gives each node's seed (its position in the mini-batch). Implied by
        ``time_attr``. Not with ``subgraph_type="induced"``. A ``HeteroData``: ``batch`` per
        node type (:meth:`gs.HeteroGraph.sample_disjoint`).
    temporal_strategy : {"uniform", "last"}
        PyG's: uniformly among the allowed edges, or the ``k`` most recent (ties: the larger
        edge id).
    time_attr : str, optional
        PyG's temporal sampling: a node-level attribute of ``data`` (a neighbour is allowed
        when its time is ``<=`` its seed's) or an edge-level one (an edge is allowed when
        its time is). :mod:`gsample.interop.pyg.temporal`.
    super_batch : int or "auto", optional
        Sample this many consecutive mini-batches in one run of the compiled program
        (``CompiledSampler.super_batched``), still yielded one by one: the batches, their
        order and every tensor of them are those of ``super_batch=None`` (the default: one
        mini-batch a run; ``1`` is the same), in every mode of a ``Data`` (subgraph types,
        weighted, disjoint, temporal with ``input_time`` or a node's own time) and of a
        ``HeteroData`` or heterogeneous stores (each (hop, edge type)'s compiled step run
        once for the run's mini-batches, every mode but ``compile=False``:
        :class:`gsample.interop.pyg.hetero_super_batch.HeteroSuperBatches`), and with worker
        processes (each samples whole runs).
        ``"auto"``: the fastest size that fits ``memory_budget``, timed on the first
        epoch's own mini-batches as ``gs.DataLoader`` times it (``loader.super_batch_size``,
        ``loader.auto_times``); it needs ``num_workers=0``. Refused with a ``ValueError``
        naming ``super_batch``: ``compile=False``. A run that runs out of memory
        where its mini-batches sample one by one gives them so (the same batches; a
        ``RuntimeWarning``, once); any other error of such a run is a ``RuntimeError``
        naming ``super_batch``; one whose mini-batch raises alone raises that error.
        :mod:`gsample.interop.pyg.super_batch`.
    memory_budget : int, optional
        Bytes a super-batch may use with ``super_batch="auto"``. Default: half the GPU's
        free memory; on the CPU the L2 cache size.
    **kwargs
        ``torch.utils.data.DataLoader`` options: ``num_workers``, ``persistent_workers``,
        ``pin_memory``, ... PyG's other arguments are in :data:`gsample.pyg.PYG_ONLY`:
        each is an :class:`gsample.pyg.UnsupportedArgument` (a ``TypeError`` and a
        ``ValueError``) naming it unless its value means what gsample does. An argument
        neither PyG's loader nor torch's takes is a ``TypeError``.

    Notes
    -----
    ``str(loader)`` is ``'NeighborLoader()'``, as PyG's; ``loader(index)`` returns the
    batch of the input positions ``index`` (:meth:`__call__`).

    Examples
    --------
    >>> import torch, gsample as gs, gsample.pyg
    >>> from torch_geometric.data import Data
    >>> A = gs.datasets.rmat(100, 500, seed=0)
    >>> data = Data(x=torch.randn(100, 8), edge_index=torch.stack(A.edges()[:2]), num_nodes=100)
    >>> data.train_mask, data.time = torch.arange(100) < 64, torch.arange(100)
    >>> loader = gsample.pyg.NeighborLoader(data, num_neighbors=[10, 5], batch_size=16,
    ...                                     input_nodes=data.train_mask, shuffle=True)
    >>> for batch in loader:
    ...     x = batch.x[:batch.batch_size]        # model(batch.x, batch.edge_index)[:B]
    >>> len(loader), x.shape
    (4, torch.Size([16, 8]))
    >>> induced = gsample.pyg.NeighborLoader(data, [10, 5], subgraph_type="induced")
    >>> temporal = gsample.pyg.NeighborLoader(data, [10, 5], time_attr="time")
    >>> batch = next(iter(temporal))              # batch.batch: each node's seed
    >>> fast = gsample.pyg.NeighborLoader(data, [10, 5], batch_size=16, super_batch=4)
    """

    def __init__(
        self,
        data,
        num_neighbors,
        input_nodes=None,
        batch_size: int = 1,
        shuffle: bool = False,
        replace: bool = False,
        drop_last: bool = False,
        seed: int | None = None,
        graph: Matrix | None = None,
        compile: bool = True,
        transform: Callable | None = None,
        transform_sampler_output: Callable | None = None,
        filter_per_worker: bool | None = None,
        input_id=None,
        weight_attr: str | None = None,
        subgraph_type="directional",
        directed: bool = True,
        input_time=None,
        disjoint: bool = False,
        temporal_strategy: str = "uniform",
        time_attr: str | None = None,
        super_batch=None,
        memory_budget: int | None = None,
        **kwargs,
    ):
        _args.require()
        stores = _stores.is_stores(data)
        # PyG's custom_cls: the class of the batches of a (FeatureStore, GraphStore)
        custom_cls = kwargs.pop("custom_cls", None) if stores else None
        kwargs = _args.check_pyg_arguments("NeighborLoader", kwargs)  # before anything is built
        super_batch, memory_budget = super_batch_options(super_batch, memory_budget)
        subgraph_type = _subgraph.subgraph_type_name(subgraph_type, directed)
        join = None  # a batch's attributes: PyG's filter_data of `data`
        if stores:  # the stores' graph (and times) as a Data / HeteroData; batches from them
            data, join = _stores.as_data(
                data, custom_cls, weight_attr, "NeighborLoader", time_attr=time_attr
            )
        # disjoint / temporal (a HeteroData's: per-type times)
        spec = _temporal.TemporalSpec.of(data, disjoint, time_attr, temporal_strategy)
        _temporal.check_input_time(spec, input_time)
        if _hetero.is_hetero(data):  # per-type sampling, in this loader's epochs
            if _super.active(super_batch) and not V.flag(compile, "compile"):
                _super.refuse(
                    super_batch,
                    "NeighborLoader",
                    "compile=False samples eagerly; a super-batch runs the compiled steps",
                )
            batches = _hetero.HeteroBatches(
                data,
                num_neighbors,
                replace,
                weight_attr,
                subgraph_type,
                graph,
                join,
                spec,
                compile=compile,
            )
            batches.input_type, input_nodes, input_id = _hetero.input_nodes_of(
                input_nodes, input_id, batches.graph.num_nodes_dict
            )
            if spec is not None:  # PyG's input_time: one per input node
                input_time = spec.input_time(input_time, input_nodes.numel())
            batch_size, filter_per_worker = _args.batch_options(
                data, batch_size, transform, transform_sampler_output, filter_per_worker
            )
            self.num_neighbors, self.replace = num_neighbors, batches.replace
            self.graph, self.subgraph_type = batches.graph, subgraph_type
            dataset = _MiniBatches(
                data,
                batches.graph,
                None,
                input_nodes,
                input_id,
                batch_size,
                V.flag(shuffle, "shuffle"),
                transform,
                transform_sampler_output,
                filter_per_worker,
                hetero=batches,
                input_time=input_time,
            )
            if _super.active(super_batch):  # each (hop, edge type) run for several at once
                dataset.super = HeteroSuperBatches(batches, input_nodes, input_id, input_time)
            self._start(dataset, seed, drop_last, kwargs, super_batch, memory_budget)
            return
        _args.check_data(data)
        _args.check_fanouts(num_neighbors)
        edge_ids = None  # the sampled graph's edge ids are positions in data.edge_index
        if weight_attr is not None:
            if graph is not None:
                raise ValueError(
                    "weight_attr: give the sampling weights either as an attribute of the "
                    "Data (weight_attr) or as the values of graph=, not both"
                )
            A, edge_ids = _args.weighted_graph(data, weight_attr)
        else:
            A = _args.read_graph(data) if graph is None else graph
        if not isinstance(A, Matrix) or A.num_nodes != data.num_nodes:
            raise ValueError(f"graph: expected a gs.Matrix of the data's {data.num_nodes} nodes")
        input_nodes, input_id = _hetero.input_seeds(
            input_nodes, data.num_nodes, "input_nodes", input_id
        )
        batch_size, filter_per_worker = _args.batch_options(
            data, batch_size, transform, transform_sampler_output, filter_per_worker
        )
        seed = V.seed(seed, none_ok=True)
        replace = V.flag(replace, "replace")
        hops = {
            "num_neighbors": tuple(num_neighbors),
            "replace": replace,
            "weighted": weight_attr is not None,
        }
        # induced: a DSL program of its own (its draws are neighbor_sample's); bidirectional:
        # neighbor_sample's batch with its reverse edges added (PyG's to_bidirectional)
        program = _subgraph.induced_sample if subgraph_type == "induced" else neighbor_sample
        layout = None
        if program is neighbor_sample and _distinct(input_nodes, data.num_nodes):
            # each mini-batch's seeds distinct: the hops' own n_id, laid out without a
            # read-back (pyg_sample searches for it; repeated seeds keep its layout)
            program, layout = _subgraph.neighbor_hops, _out.hops_sample
        post = _subgraph.to_bidirectional if subgraph_type == "bidirectional" else None
        if spec is not None:  # one tree per seed: gsample.interop.pyg.temporal's program
            if subgraph_type == "induced":
                raise ValueError(
                    "subgraph_type: 'induced' subgraphs are not disjoint (one subgraph per "
                    "mini-batch); with disjoint=True or time_attr use 'directional' or "
                    "'bidirectional'"
                )
            input_time = spec.input_time(input_time, input_nodes.numel())
            program, hops["strategy"] = _temporal.disjoint_sample, spec.strategy
        compiled = gs_compile(program) if V.flag(compile, "compile") else None
        fn = functools.partial(program if compiled is None else compiled, **hops)
        sampler = None if spec is None else _temporal.DisjointSampler(A, fn, spec, edge_ids)
        self.num_neighbors, self.replace, self.graph = list(num_neighbors), replace, A
        self.subgraph_type = subgraph_type
        dataset = _MiniBatches(
            data,
            A,
            fn,
            input_nodes,
            input_id,
            batch_size,
            V.flag(shuffle, "shuffle"),
            transform,
            transform_sampler_output,
            filter_per_worker,
            edge_ids,
            post,
            join=join,
            disjoint=sampler,
            input_time=input_time,
            layout=layout,
        )
        if _super.active(super_batch):  # its program, run for several mini-batches at once
            if compiled is None:
                _super.refuse(
                    super_batch,
                    "NeighborLoader",
                    "compile=False samples eagerly; a super-batch runs the compiled program",
                )
            if input_nodes.numel():  # traced now: refusals from here
                dataset.super = _super.SuperBatches(
                    A,
                    compiled,
                    hops,
                    input_nodes,
                    batch_size,
                    spec,
                    input_time,
                    None if sampler is None else sampler.edge_time,
                )
        self._start(dataset, seed, drop_last, kwargs, super_batch, memory_budget)

    def _start(
        self,
        dataset,
        seed: int | None,
        drop_last: bool,
        kwargs: dict,
        super_batch=None,
        memory_budget: int | None = None,
    ) -> None:
        """torch's ``DataLoader`` over ``dataset``'s mini-batches (a ``_MiniBatches``), in
        epochs of this loader's seed (default drawn from gsample's stream now); with
        ``super_batch`` (checked), over its runs of mini-batches."""
        seed = V.seed(seed, none_ok=True)
        seed = _args.default_seed() if seed is None else seed
        n, size = dataset.input_nodes.numel(), dataset.batch_size
        num_batches = n // size if V.flag(drop_last, "drop_last") else -(-n // size)
        self.seed = seed & MASK64
        self.epoch = 0
        self.super_batch, self.memory_budget = super_batch, memory_budget
        if _super.active(super_batch):
            if super_batch == "auto" and (kwargs.get("num_workers") or 0) > 0:
                _super.refuse(
                    super_batch,
                    "NeighborLoader",
                    "'auto' times super-batch sizes in the process that samples, and "
                    "num_workers > 0 samples in worker processes; give the number of "
                    "mini-batches a run, e.g. super_batch=8",
                )
            dataset.runs = _super.Runs(super_batch, memory_budget, dataset.A.device)
        self.batches = _EpochBatches(num_batches, dataset.runs)
        super().__init__(
            dataset, batch_size=None, sampler=self.batches, collate_fn=_identity, **kwargs
        )

    def __len__(self) -> int:
        """Mini-batches per epoch (super-batched too: runs are yielded batch by batch)."""
        return self.batches.num_batches

    @property
    def super_batch_size(self) -> int | None:
        """Mini-batches sampled per run: 1 without ``super_batch``, its int, or the size
        ``"auto"`` chose (None until the first epoch has chosen)."""
        runs = self.dataset.runs
        return 1 if runs is None else runs.size

    @property
    def auto_times(self) -> dict:
        """``super_batch="auto"``: seconds per mini-batch of every size it timed (its best
        counted run)."""
        runs = self.dataset.runs
        return {} if runs is None else dict(runs.times)

    @property
    def auto_runs(self) -> dict:
        """``super_batch="auto"``: every size's counted runs, seconds per mini-batch (what
        :func:`gsample.loader.super_batching.choose_super_batch` chose from)."""
        runs = self.dataset.runs
        return {} if runs is None else {k: list(v) for k, v in runs.runs.items()}

    def __iter__(self):
        """An epoch: its seed is ``combine(combine(0, seed), epoch)``, as ``gs.DataLoader``'s."""
        self.batches.epoch_seed = combine(combine(0, self.seed), self.epoch)
        self.epoch += 1
        return super().__iter__()

    def _get_iterator(self):
        """torch's iterator; with ``filter_per_worker=False`` each batch's ``Data`` is built
        in this process (PyG's ``DataLoaderIterator``)."""
        iterator = super()._get_iterator()
        filter = None if self.dataset.filter_per_worker else self.dataset.filter
        if self.batches.runs is not None:  # a list of batches per run: one by one
            return _Flattened(iterator, filter, len(self))
        if filter is None:
            return iterator
        # import here: PyTorch Geometric is optional (the module imports without it)
        from torch_geometric.loader.base import DataLoaderIterator

        return DataLoaderIterator(iterator, self.dataset.filter)

    def __call__(self, index):
        """PyG's ``loader(index)``: the mini-batch of the input positions ``index`` (into
        ``input_nodes``), with the fields of an iterated batch, drawn now in the current
        epoch (the last one started; epoch 0 before any). When ``index`` is mini-batch
        ``i`` of that epoch, in its order, the batch is the one iteration gives (drawn as
        mini-batch ``i``); any other ``index`` is drawn as mini-batch ``batch_key(index)``.

        Parameters
        ----------
        index : LongTensor of shape (B,), or list of int
            Positions in ``input_nodes`` (PyG's ``NodeLoader.__call__``).

        Returns
        -------
        torch_geometric.data.Data
            As iteration's batches (``transform`` applied).

        Examples
        --------
        >>> import torch, gsample as gs, gsample.pyg
        >>> from torch_geometric.data import Data
        >>> A = gs.datasets.rmat(100, 500, seed=0)
        >>> data = Data(edge_index=torch.stack(A.edges()[:2]), num_nodes=100)
        >>> loader = gsample.pyg.NeighborLoader(data, [10, 5], batch_size=16)
        >>> batch = loader([0, 5])          # seeds input_nodes[0] and input_nodes[5]
        >>> batch.n_id[:2]
        tensor([0, 5])
        >>> torch.equal(loader(torch.arange(16)).n_id, next(iter(loader)).n_id)  # no shuffle
        True
        """
        positions = V.ids(index, "index", self.dataset.input_nodes.numel(), None).cpu()
        epoch_seed = combine(combine(0, self.seed), max(self.epoch - 1, 0))
        key = self._batch_index(positions, epoch_seed)
        key = batch_key(positions) if key is None else key
        out = self.dataset.sample(positions, epoch_seed, key, _distinct(positions))
        return self.dataset.filter(out)

    def _batch_index(self, positions: torch.Tensor, epoch_seed: int) -> int | None:
        """``i`` when ``positions`` are exactly mini-batch ``i`` of the epoch ``epoch_seed``
        draws (same order), else None."""
        return batch_index(self.dataset, positions, epoch_seed, len(self))

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}()"


def batch_index(dataset, positions: torch.Tensor, epoch_seed: int, count: int) -> int | None:
    """``i`` when ``positions`` are exactly mini-batch ``i`` (of ``count``) of the epoch
    ``epoch_seed`` of ``dataset`` (its ``positions(epoch_seed)`` in ``batch_size`` parts),
    same order, else None: how a loader called with indices (``loader(index)``) finds the
    key the epoch's iteration samples that mini-batch with."""
    if positions.numel() == 0:
        return None
    order, size = dataset.positions(epoch_seed), dataset.batch_size
    start = int(torch.nonzero(order == positions[0])[0, 0])
    i = start // size
    if start % size or i >= count:
        return None
    return i if torch.equal(order[start : start + size], positions) else None


__all__ = ["NeighborLoader", "batch_index", "batch_key", "epoch_order", "neighbor_sample"]
