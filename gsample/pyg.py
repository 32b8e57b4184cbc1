"""PyG integration: any gsample sampler inside PyG's loaders, and a drop-in ``NeighborLoader``.

* :class:`Sampler` is a ``torch_geometric.sampler.BaseSampler``: PyG's ``NodeLoader`` and
  ``LinkLoader`` (with PyG's negative sampling) run a gsample sampler function through it.
* :class:`NeighborLoader` takes PyG's ``NeighborLoader`` arguments (``num_neighbors``,
  ``input_nodes``, ``batch_size``, ``shuffle``, ``replace``) and samples with
  :func:`neighbor_sample`, PyG's hop semantics written in the gsample DSL.

Determinism (DESIGN §3, consequence 5): every mini-batch is sampled inside
``gsample.random.batch_scope(epoch_seed, key)``, so its draws depend on the seed, the
epoch and ``key`` only, never on the process or worker that draws it, nor on the batches
drawn before it in that process (a worker holds a copy of the random stream, so drawing
from the stream itself made batches 0 and 1 of two workers identical). ``key`` is the
mini-batch's index in :class:`NeighborLoader` (which therefore samples exactly what
``gs.DataLoader(A, neighbor_sample, input_nodes, batch_size, shuffle, seed=seed)``
samples), and, inside PyG's own loaders, which do not tell a sampler the index, a hash of
the mini-batch's ``input_id`` set (its examples' positions in ``input_nodes``), which
identifies the mini-batch within an epoch. PyG's negative sampling draws from torch's
generator, which :class:`Sampler` seeds from the same key.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

import torch

from . import validate as V
from .matrix import Matrix
from .output import pyg as _out
from .random import MASK64, _stream, batch_scope, combine, hash_tensor, op_key, sort_key

try:
    from torch_geometric.sampler import BaseSampler as _Base
except ImportError:           # the module imports without PyG; using it raises (_require)
    _Base = object


def _require():
    if _Base is object:
        raise ImportError("gsample.pyg needs PyTorch Geometric: pip install 'gsample[pyg]'")


def neighbor_sample(A, seeds, num_neighbors=(25, 10), replace: bool = False):
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

    Returns
    -------
    list of gs.Matrix
        ``blocks[h]``'s columns are the nodes first reached at hop ``h`` (the seeds for
        ``h = 0``) in ascending id order, each with its sampled in-edges.

    Examples
    --------
    >>> blocks = neighbor_sample(A, seeds, (15, 10))
    >>> data = gs.Batch(seeds, 0, blocks).to_pyg()
    """
    blocks, frontier, seen = [], seeds, seeds
    for k in num_neighbors:
        sub = A[:, frontier]
        s = sub if k < 0 else sub.individual_sample(k, replace=replace)
        blocks.append(s)
        rows = s.row()                                   # reached, ascending id
        frontier = rows[~torch.isin(rows, seen)]         # first reached at this hop
        seen = torch.cat([seen, frontier])
    return blocks


def batch_key(input_id: torch.Tensor) -> int:
    """A mini-batch's key from the set of its ``input_id``: a hash of the set (order does not
    matter), below ``2**62`` (a batch index of :func:`gsample.random.batch_scope`).

    Parameters
    ----------
    input_id : LongTensor, shape (B,)
        The mini-batch's examples' positions in the loader's input.

    Examples
    --------
    >>> batch_key(torch.tensor([4, 2])) == batch_key(torch.tensor([2, 4]))
    True
    """
    ids = input_id.reshape(-1).to(torch.int64)
    h = hash_tensor(0x5EED, torch.zeros_like(ids), ids).sum()     # wraps modulo 2**64
    return combine(ids.numel(), int(h) & MASK64) & ((1 << 62) - 1)


def _default_seed() -> int:
    """A seed drawn from gsample's stream (takes one ordinal, as ``gs.DataLoader`` does)."""
    stream = _stream()
    key = op_key(stream.seed, stream.ordinal, stream.batch_index)
    stream.ordinal += 1
    return key


def _graph(graph) -> Matrix:
    if isinstance(graph, Matrix):
        return graph
    if hasattr(graph, "edge_index"):
        return Matrix.from_pyg(graph, weight=None)
    raise TypeError(f"graph: expected a gs.Matrix or a torch_geometric Data, got "
                    f"{type(graph).__name__}")


class Sampler(_Base):
    """A ``torch_geometric.sampler.BaseSampler`` running a gsample sampler function.

    Parameters
    ----------
    graph : gs.Matrix or torch_geometric.data.Data
        The graph (a ``Data`` is read with ``gs.Matrix.from_pyg``, unweighted, so edge
        ids are positions in ``data.edge_index``).
    sampler_fn : callable
        ``sampler_fn(A, seeds) -> out``, plain or ``gs.compile``'d; ``out`` is blocks or
        an induced subgraph, mapped as :mod:`gsample.output.pyg` says.
    seed : int, optional
        Seed of the sampler's stream; default drawn from gsample's stream now.

    Notes
    -----
    Mini-batch keys: see :mod:`gsample.pyg`. With PyG's loaders the key is the set of
    the mini-batch's ``input_id``; ``shuffle=True`` gives other mini-batches, hence other
    draws, every epoch; without shuffling an epoch repeats the last one's draws unless
    :meth:`set_epoch` is called (before the epoch's iterator starts its workers).
    Results are on the device of the input nodes PyG passes (the CPU), as PyG's
    ``filter_data`` indexes the ``Data``'s tensors with them.

    Examples
    --------
    >>> from torch_geometric.loader import NodeLoader
    >>> sampler = gsample.pyg.Sampler(data, functools.partial(graphsage, fanouts=(10, 5)))
    >>> for batch in NodeLoader(data, sampler, input_nodes=train_idx, batch_size=512):
    ...     out = model(batch.x, batch.edge_index)[:batch.batch_size]
    """

    def __init__(self, graph, sampler_fn: Callable, seed: int | None = None):
        _require()
        if not callable(sampler_fn):
            raise TypeError("sampler_fn: must be callable as sampler_fn(A, seeds)")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"seed: must be an int or None, got {type(seed).__name__}")
        self.A = _graph(graph)
        self.sampler_fn = sampler_fn
        self.seed = _default_seed() if seed is None else seed & MASK64
        self.epoch = 0

    @property
    def num_nodes(self) -> int:
        return self.A.num_nodes

    def set_epoch(self, epoch: int) -> None:
        """Draw epoch ``epoch``'s samples (keys ``(seed, epoch, mini-batch)``)."""
        self.epoch = V.count(epoch, "epoch")

    def epoch_seed(self) -> int:
        return combine(combine(0, self.seed), self.epoch)

    def sample(self, seeds: torch.Tensor, key: int):
        """``sampler_fn(A, seeds)`` as mini-batch ``key`` of the current epoch.

        Parameters
        ----------
        seeds : LongTensor, shape (B,)
            Global ids.
        key : int
            The mini-batch's index (``0 <= key < 2**62``).

        Examples
        --------
        >>> blocks = sampler.sample(torch.tensor([0, 5, 9]), key=3)   # what batch 3 draws
        """
        seeds = V.ids(seeds, "seeds", self.A.num_nodes, None).to(self.A.device)
        with batch_scope(self.epoch_seed(), key):
            return self.sampler_fn(self.A, seeds)

    def _output(self, seeds: torch.Tensor, key: int, metadata=None):
        sample = _out.pyg_sample(self.sample(seeds, key), seeds.to(self.A.device))
        out = _out.to_sampler_output(sample, *(metadata or (None, None)))
        device = seeds.device
        return out.__class__(node=out.node.to(device), row=out.row.to(device),
                             col=out.col.to(device), edge=out.edge.to(device),
                             num_sampled_nodes=out.num_sampled_nodes,
                             num_sampled_edges=out.num_sampled_edges, metadata=out.metadata)

    def sample_from_nodes(self, index, **kwargs):
        """PyG's node-level entry point: ``index`` is a ``NodeSamplerInput``; returns a
        ``SamplerOutput`` with ``metadata = (input_id, time)``."""
        if index.time is not None:
            raise ValueError("index: temporal sampling (input_time) is not supported")
        return self._output(index.node, batch_key(index.input_id), (index.input_id, None))

    def sample_from_edges(self, index, neg_sampling=None):
        """PyG's link-level entry point (``LinkLoader``): ``index`` is an
        ``EdgeSamplerInput``; negatives come from PyG's ``neg_sampling`` with torch's
        generator seeded from the mini-batch's key; the seeds are both endpoints, unique
        (as PyG's ``NeighborSampler``), and ``metadata`` holds PyG's ``edge_label_index``
        and ``edge_label`` (or the triplet indices)."""
        from torch_geometric.sampler.neighbor_sampler import edge_sample
        if index.time is not None:
            raise ValueError("index: temporal sampling (edge_label_time) is not supported")
        key = batch_key(index.input_id)

        def sample_fn(seed, seed_time):
            return self._output(seed, key)

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(combine(self.epoch_seed(), key) & ((1 << 63) - 1))
            return edge_sample(index, sample_fn, self.A.num_nodes, disjoint=False,
                               node_time=None, neg_sampling=neg_sampling)


class _EpochBatches(torch.utils.data.Sampler):
    """Yields ``(epoch_seed, i)`` for every mini-batch of the current epoch, in the main
    process, so the epoch travels with each index to whichever worker samples it. The
    loader sets ``epoch_seed`` when an epoch starts (torch may iterate a sampler more than
    once per epoch: its worker iterator resets it on creation)."""

    def __init__(self, num_batches: int):
        self.num_batches, self.epoch_seed = num_batches, 0

    def __len__(self) -> int:
        return self.num_batches

    def __iter__(self):
        return iter([(self.epoch_seed, i) for i in range(self.num_batches)])


class _MiniBatches(torch.utils.data.Dataset):
    """Mini-batch ``(epoch_seed, i)``: its seeds (as ``gs.DataLoader`` orders an epoch),
    sampled in ``batch_scope(epoch_seed, i)`` and joined with the ``Data``'s attributes."""

    def __init__(self, data, A, fn, input_nodes, batch_size, shuffle, transform):
        self.data, self.A, self.fn = data, A, fn
        self.input_nodes, self.batch_size, self.shuffle = input_nodes, batch_size, shuffle
        self.transform = transform
        self._order = (None, None)                 # (epoch_seed, positions): one per epoch

    def positions(self, epoch_seed: int) -> torch.Tensor:
        """This epoch's order of the input positions (``gs.DataLoader``'s shuffle)."""
        if self._order[0] != epoch_seed:
            pos = torch.arange(self.input_nodes.numel(), device=self.input_nodes.device)
            if self.shuffle:
                keys = sort_key(hash_tensor(epoch_seed, torch.full_like(pos, -1), pos))
                pos = pos[torch.argsort(keys, stable=True)]
            self._order = (epoch_seed, pos)
        return self._order[1]

    def __getitem__(self, item):
        from torch_geometric.loader.utils import filter_data
        epoch_seed, i = item
        input_id = self.positions(epoch_seed)[i * self.batch_size:(i + 1) * self.batch_size]
        seeds = self.input_nodes[input_id]
        with batch_scope(epoch_seed, i):
            out = self.fn(self.A, seeds.to(self.A.device))
        s = _out.pyg_sample(out, seeds.to(self.A.device))
        cpu = self.input_nodes.device
        node, row, col, edge = (t.to(cpu) for t in (s.node, s.row, s.col, s.edge))
        data = filter_data(self.data, node, row, col, edge, None)
        data.n_id, data.e_id = node, edge
        data.batch_size, data.input_id = s.batch_size, input_id
        data.num_sampled_nodes, data.num_sampled_edges = s.num_sampled_nodes, s.num_sampled_edges
        return data if self.transform is None else self.transform(data)


def _identity(x):
    return x


class NeighborLoader(torch.utils.data.DataLoader):
    """PyG's ``NeighborLoader``, sampled by gsample (:func:`neighbor_sample`, compiled).

    Parameters
    ----------
    data : torch_geometric.data.Data
        The graph and its node / edge attributes (``x``, ``y``, ``edge_attr``, ... are
        sliced into each mini-batch as PyG's loader does).
    num_neighbors : list of int
        In-neighbours per node at each hop (``-1``: all).
    input_nodes : LongTensor or BoolTensor, optional
        Seed nodes (ids or a mask); default all nodes.
    batch_size : int
        Seeds per mini-batch.
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
    graph : gs.Matrix, optional
        The graph as a gsample matrix (e.g. already on a GPU; then keep
        ``num_workers=0``); default ``gs.Matrix.from_pyg(data, weight=None)``.
    compile : bool
        Compile the sampler with ``gs.compile`` (default True).
    transform : callable, optional
        Applied to each mini-batch's ``Data``.
    **kwargs
        ``torch.utils.data.DataLoader`` options: ``num_workers``, ``persistent_workers``,
        ``pin_memory``, ...

    Examples
    --------
    >>> loader = gsample.pyg.NeighborLoader(data, num_neighbors=[25, 10], batch_size=512,
    ...                                     input_nodes=data.train_mask, shuffle=True)
    >>> for batch in loader:
    ...     out = model(batch.x, batch.edge_index)[:batch.batch_size]
    """

    def __init__(self, data, num_neighbors, input_nodes=None, batch_size: int = 1,
                 shuffle: bool = False, replace: bool = False, drop_last: bool = False,
                 seed: int | None = None, graph: Matrix | None = None,
                 compile: bool = True, transform: Callable | None = None, **kwargs):
        _require()
        if not hasattr(data, "edge_index"):
            raise TypeError(f"data: expected a torch_geometric Data, got {type(data).__name__}")
        if isinstance(num_neighbors, int) or not all(
                isinstance(k, int) and not isinstance(k, bool) and k >= -1
                for k in num_neighbors):
            raise TypeError("num_neighbors: expected a list of ints >= -1 (one per hop), got "
                            f"{num_neighbors!r}")
        A = _graph(data) if graph is None else graph
        if not isinstance(A, Matrix) or A.num_nodes != data.num_nodes:
            raise ValueError("graph: expected a gs.Matrix of the data's "
                             f"{data.num_nodes} nodes")
        if input_nodes is None:
            input_nodes = torch.arange(data.num_nodes)
        elif isinstance(input_nodes, torch.Tensor) and input_nodes.dtype == torch.bool:
            input_nodes = input_nodes.nonzero().view(-1)
        input_nodes = V.ids(input_nodes, "input_nodes", data.num_nodes, None).cpu()
        batch_size = V.count(batch_size, "batch_size")
        if batch_size == 0:
            raise ValueError("batch_size: must be >= 1")
        seed = _default_seed() if seed is None else seed
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed: must be an int or None, got {type(seed).__name__}")
        for name in ("dataset", "sampler", "batch_sampler", "collate_fn"):
            if name in kwargs:
                raise TypeError(f"{name}: not an argument of gsample.pyg.NeighborLoader")
        fn = functools.partial(neighbor_sample, num_neighbors=tuple(num_neighbors),
                               replace=V.flag(replace, "replace"))
        if compile:
            from .compiler import compile as gs_compile
            fn = functools.partial(gs_compile(neighbor_sample),
                                   num_neighbors=tuple(num_neighbors), replace=bool(replace))
        n = input_nodes.numel()
        num_batches = n // batch_size if drop_last else -(-n // batch_size)
        self.num_neighbors, self.replace, self.graph = list(num_neighbors), replace, A
        self.seed = seed & MASK64
        self.epoch = 0
        self.batches = _EpochBatches(num_batches)
        dataset = _MiniBatches(data, A, fn, input_nodes, batch_size,
                               V.flag(shuffle, "shuffle"), transform)
        super().__init__(dataset, batch_size=None, sampler=self.batches,
                         collate_fn=_identity, **kwargs)

    def __iter__(self):
        """An epoch: its seed is ``combine(combine(0, seed), epoch)``, as ``gs.DataLoader``'s."""
        self.batches.epoch_seed = combine(combine(0, self.seed), self.epoch)
        self.epoch += 1
        return super().__iter__()
