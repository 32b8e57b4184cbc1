"""``gs.Batch``: one mini-batch of ``gs.DataLoader`` and its conversions (PyG, DGL)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from gsample.interop import dgl
from gsample.interop.pyg import data as pyg
from gsample.interop.pyg.data import NodeRows
from gsample.matrix.sparse import Matrix

if TYPE_CHECKING:  # the return types of the conversions (optional dependencies)
    import dgl as dgl_types
    from torch_geometric.data import Data
    from torch_geometric.sampler import SamplerOutput


@dataclass
class Batch:
    """One mini-batch.

    Attributes
    ----------
    seeds : LongTensor, shape (B,)
        This mini-batch's seed nodes (global ids).
    index : int
        Its position in the epoch (0, 1, ...), part of every random key.
    out : Any
        What the sampler function returned for these seeds.
    n_id : LongTensor, shape (n,), or None
        With ``features`` or ``labels`` given to the loader: the nodes whose rows were
        gathered, the seeds first (:func:`gsample.loader.features.batch_nodes`; for a DGL-style
        sampler ``out[-1].all_nodes()``, so every block's columns are a prefix).
    x : Tensor, shape (n, F), or None
        The loader's ``features`` rows of ``n_id``, on the graph's device.
    y : Tensor, shape (n,) or (n, C), or None
        The loader's ``labels`` rows of ``n_id`` (``y[:len(seeds)]``: the seeds' labels).
    seeds_are_nodes : bool
        False when the seeds are not node ids (ClusterGCN's part ids, GraphSAINT's draw
        counters: ``DataLoader(..., seeds_are_nodes=False)``): ``n_id`` and the conversions
        then start from the induced subgraph's nodes (:attr:`node_seeds`), not the seeds.
    """

    seeds: torch.Tensor
    index: int
    out: Any
    n_id: torch.Tensor | None = None
    x: torch.Tensor | None = None
    y: torch.Tensor | None = None
    seeds_are_nodes: bool = True

    @property
    def node_seeds(self) -> torch.Tensor:
        """The nodes ``n_id`` and the conversions put first, shape (B,) or (n,): the seeds,
        or, when they are not node ids, every node of the induced subgraph ``out = (sub,
        nodes)`` (all of them are the mini-batch's targets, as in PyG's GraphSAINT and
        ClusterGCN loaders: ``to_pyg().batch_size == len(nodes)``)."""
        if self.seeds_are_nodes:
            return self.seeds
        out = self.out
        if not (
            isinstance(out, (list, tuple))
            and len(out) == 2
            and isinstance(out[0], Matrix)
            and isinstance(out[1], torch.Tensor)
        ):
            raise TypeError(
                "seeds_are_nodes=False: the sampler must return an induced "
                "subgraph and its nodes, (A[nodes, nodes], nodes); it returned "
                f"{type(out).__name__}"
            )
        return out[1].to(torch.int64)

    def _rows(self, table: str, gathered: str) -> NodeRows:
        """What ``to_pyg`` / ``to_dgl`` gather ``x`` / ``y`` from by default: the batch's
        ``features`` / ``labels`` attribute (a whole table) if set, else the loader's
        gathered rows, looked up by global id in ``n_id``."""
        whole = getattr(self, table, None)
        rows = getattr(self, gathered)
        if whole is not None or rows is None:
            return whole
        n_id = self.n_id
        order = torch.argsort(n_id)

        def lookup(node: torch.Tensor) -> torch.Tensor:
            node = node.to(n_id.device)
            pos = order[torch.searchsorted(n_id[order], node).clamp(max=n_id.numel() - 1)]
            if not bool((n_id[pos] == node).all()):
                raise ValueError(
                    f"batch.{gathered}: the conversion reaches nodes outside "
                    "batch.n_id (pass the whole table instead)"
                )
            return rows[pos]

        return lookup

    # conversions: the mappings live in gsample/interop/pyg/data.py and gsample/interop/dgl.py
    def to_pyg(self, x: NodeRows = None, y: NodeRows = None) -> Data:
        """This mini-batch as PyG's ``NeighborLoader`` returns one: a ``Data``.

        Parameters
        ----------
        x, y : Tensor with one row per graph node (shape (N, ...)), or callable, optional
            Features / labels, gathered by ``n_id`` (a callable is called with ``n_id``).
            Default: the batch's ``features`` / ``labels`` attributes when it has them,
            else the rows the loader gathered (``batch.x`` / ``batch.y``, by ``n_id``).

        Returns
        -------
        torch_geometric.data.Data
            ``edge_index`` (2, E) in local ids, ``n_id`` (n,) with the seeds first,
            ``e_id`` (E,), ``batch_size`` = B, ``input_id``, ``num_sampled_nodes`` and
            ``num_sampled_edges`` per hop (not for an induced subgraph), ``edge_weight``
            when the sampled matrices have values, ``x`` / ``y``. The mapping of every
            sampler shape (DGL-style blocks re-sampling the frontier, PyG-style blocks,
            layer-wise blocks, induced subgraphs) is in :mod:`gsample.interop.pyg.data`; no
            ``(edge id, destination)`` message appears twice.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> A = gs.datasets.rmat(100, 500, seed=0)
        >>> sampler = gs.compile(lambda A, seeds: [A[:, seeds].individual_sample(5)])
        >>> batch = next(iter(gs.DataLoader(A, sampler, torch.arange(16), 8)))
        >>> features, labels = torch.randn(100, 4), torch.randint(0, 3, (100,))
        >>> data = batch.to_pyg(x=features, y=labels)
        >>> data.x.shape == (data.num_nodes, 4), data.batch_size   # the seeds come first
        (True, 8)
        """
        x = self._rows("features", "x") if x is None else x
        y = self._rows("labels", "y") if y is None else y
        return pyg.to_data(pyg.pyg_sample(self.out, self.node_seeds), x, y)

    def to_sampler_output(self, input_id: torch.Tensor | None = None) -> SamplerOutput:
        """This mini-batch as a ``torch_geometric.sampler.SamplerOutput`` (``node``, local
        ``row`` -> ``col``, ``edge``, per-hop counts; ``metadata = (input_id, None,
        edge_weight)``, with ``input_id`` default ``arange(B)`` and ``edge_weight`` the
        edge values ``to_pyg()`` gives, or None). See :meth:`to_pyg`.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> A = gs.datasets.rmat(100, 500, seed=0)
        >>> sampler = gs.compile(lambda A, seeds: [A[:, seeds].individual_sample(5)])
        >>> batch = next(iter(gs.DataLoader(A, sampler, torch.arange(16), 8)))
        >>> out = batch.to_sampler_output()
        >>> torch.equal(out.node[:len(batch.seeds)], batch.seeds)   # the seeds come first
        True
        """
        return pyg.to_sampler_output(pyg.pyg_sample(self.out, self.node_seeds), input_id)

    def to_dgl(
        self, x: NodeRows = None, y: NodeRows = None
    ) -> list[dgl_types.DGLGraph] | dgl_types.DGLGraph:
        """This mini-batch as DGL message-flow graphs (``dgl.create_block``), input layer
        first, destination nodes first among sources, ``dgl.NID`` / ``dgl.EID`` set; an
        induced subgraph becomes one ``dgl.graph``. Needs DGL (torch < 2.3); the mapping is
        in :mod:`gsample.interop.dgl`.

        Examples
        --------
        With DGL installed, ``batch`` a mini-batch of a loader (:meth:`to_pyg`):

        >>> import dgl  # doctest: +SKIP
        >>> blocks = batch.to_dgl(x=features, y=labels)  # doctest: +SKIP
        >>> blocks[-1].dstdata[dgl.NID]          # the seeds  # doctest: +SKIP
        """
        x = self._rows("features", "x") if x is None else x
        y = self._rows("labels", "y") if y is None else y
        return dgl.to_dgl(self.out, self.node_seeds, x, y)


def batches_of(seeds: list, first: int, outs: list, seeds_are_nodes: bool = True) -> list[Batch]:
    """``[Batch(seeds=s, index=first + b, out=o, seeds_are_nodes=...) for b, (s, o) in ...]``:
    the mini-batches of one sampling run, each made without the dataclass's ``__init__`` (a
    keyword call per mini-batch; attributes set in field order, so each is the same
    object, ``vars`` and all).

    Parameters
    ----------
    seeds : list of LongTensor
        Each mini-batch's seeds.
    first : int
        The first one's index in the epoch.
    outs : list
        What the sampler returned for each.

    Returns
    -------
    list of Batch, one per pair of ``seeds`` and ``outs`` (of equal lengths).

    Examples
    --------
    >>> import torch
    >>> [b.index for b in batches_of([torch.tensor([0]), torch.tensor([1])], 4, [None, None])]
    [4, 5]
    """
    made = []
    append, new = made.append, object.__new__
    for index, (s, out) in enumerate(zip(seeds, outs, strict=True), first):
        b = new(Batch)
        b.seeds = s
        b.index = index
        b.out = out
        b.n_id = None
        b.x = None
        b.y = None
        b.seeds_are_nodes = seeds_are_nodes
        append(b)
    return made
