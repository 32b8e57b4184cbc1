"""A sampler's output as PyG's node-level mini-batch (``Batch.to_pyg``, ``to_sampler_output``).

The mapping, for each shape a sampler function may return (``gs.Batch.out``):

* **Blocks** (a list of matrices, first hop first, as ``examples/graphsage.py``,
  ``examples/graphsage_pyg.py``, ``examples/ladies.py`` and ``examples/fastgcn.py``
  return; a single matrix is one block; no block, zero hops, is the seeds alone). Block
  ``l`` holds hop ``l + 1``'s edges ``row -> column``. PyG samples each node once, at the
  hop after the one that first reached it, so hop ``h`` keeps the edges of block ``h - 1``
  whose destination column

  1. was reached by hop ``h - 1`` (it is in ``n_id`` already; a column only reachable
     through dropped edges could never send a message to a seed),
  2. was not a destination at an earlier hop, and
  3. is the column's first occurrence in the block.

  A PyG-style sampler (``graphsage_pyg``: each hop samples only the nodes first
  reached at the previous one) keeps every edge. A DGL-style sampler re-samples the
  whole frontier at every hop, seeds included: rule 2 drops those re-drawn edges, which
  joined into one ``edge_index`` would send a node's messages twice (use
  :meth:`gsample.Batch.to_dgl` to keep one block per layer instead). So no
  ``(edge id, destination)`` pair appears twice, except as the repeated draws of a
  with-replacement sampler inside one column (multiplicities, as PyG's
  ``replace=True`` gives). Layer-wise blocks (LADIES, FastGCN) map the same way; their
  edge values (the importance weights; every kept column still sums to 1) become
  ``edge_weight``.

  ``n_id`` is the seeds in their order, then the nodes first reached at hop 1, hop 2,
  ... (each hop's in row-space order, i.e. the order ``all_nodes`` gives);
  ``num_sampled_nodes = [B, n_1, ..., n_L]`` and ``num_sampled_edges = [e_1, ...,
  e_L]``; edges are grouped by hop, so hop ``h``'s destinations lie among the nodes of
  hops ``< h`` and its sources among those of hops ``<= h``: what
  ``torch_geometric.utils.trim_to_layer`` needs.

* **Induced subgraph** (``(subgraph, nodes)``, as ``examples/shadow.py`` returns):
  ``n_id`` is ``nodes`` (the seeds first; any seed missing from ``nodes`` is put
  first), ``edge_index`` every edge of the subgraph in local ids (first occurrence of a
  repeated column). It has no hop structure: every layer of the model runs on the whole
  subgraph (as PyG's ``ShaDowKHopSampler``), so ``num_sampled_nodes`` and
  ``num_sampled_edges`` are ``None`` and ``trim_to_layer`` does not apply.

In both, ``edge_index[0]`` is the source and ``edge_index[1]`` the destination
(messages flow to the seeds, PyG's default ``flow="source_to_target"``), every edge is
an edge of the graph (``n_id[edge_index]`` are global ids, ``e_id`` its edge ids), and
the first ``batch_size`` nodes are the seeds: ``model(data)[:data.batch_size]``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from gsample.backend.torch import reached_native
from gsample.matrix.sparse import Matrix

if TYPE_CHECKING:  # PyTorch Geometric is optional: its classes only name return types
    from torch_geometric.data import Data
    from torch_geometric.sampler import SamplerOutput

#: a per-node table for a conversion: one row per graph node, ``f(node) -> rows``, or None
NodeRows = torch.Tensor | Callable[[torch.Tensor], torch.Tensor] | None


@dataclass
class PygSample:
    """One mini-batch in PyG's layout, before any PyG object is built.

    Attributes
    ----------
    node : LongTensor, shape (n,)
        Global ids (``n_id``), the seeds first.
    row, col : LongTensor, shape (E,)
        Local source and destination of each edge (indices into ``node``).
    edge : LongTensor, shape (E,)
        Edge ids in the graph (``e_id``).
    weight : Tensor, shape (E,) or (E, F), or None
        The sampled matrices' edge values, when they have any.
    batch_size : int
        Seeds, ``B``.
    num_sampled_nodes, num_sampled_edges : list of int, or None
        Nodes per hop ``[B, n_1, ...]`` and edges per hop ``[e_1, ...]``; ``None`` for an
        induced subgraph.
    """

    node: torch.Tensor
    row: torch.Tensor
    col: torch.Tensor
    edge: torch.Tensor
    weight: torch.Tensor | None
    batch_size: int
    num_sampled_nodes: list | None
    num_sampled_edges: list | None


def pyg_sample(out: Any, seeds: torch.Tensor) -> PygSample:
    """Map a sampler's output to PyG's node-level layout (see the module docstring).

    Parameters
    ----------
    out : gs.Matrix, list of gs.Matrix, or (gs.Matrix, LongTensor)
        Blocks (first hop first) or an induced subgraph and its nodes.
    seeds : LongTensor, shape (B,)
        The mini-batch's seeds (global ids).

    Returns
    -------
    PygSample

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> s1 = A[:, seeds].individual_sample(10)
    >>> blocks = [s1, A[:, s1.all_nodes()].individual_sample(5)]     # GraphSAGE's, two hops
    >>> s = pyg_sample(blocks, seeds)
    >>> bool((s.node[:len(seeds)] == seeds).all())
    True
    """
    if not isinstance(seeds, torch.Tensor) or seeds.dim() != 1:
        raise TypeError("seeds: expected a 1-D LongTensor of global node ids")
    seeds = seeds.to(torch.int64)
    if isinstance(out, Matrix):
        return _blocks([out], seeds)
    if (
        isinstance(out, (list, tuple))
        and len(out) == 2
        and isinstance(out[0], Matrix)
        and isinstance(out[1], torch.Tensor)
    ):
        return _induced(out[0], out[1], seeds)
    if isinstance(out, (list, tuple)) and all(isinstance(m, Matrix) for m in out):
        return _blocks(list(out), seeds)  # no block (zero hops): the seeds alone
    raise TypeError(
        "batch.out: to_pyg() takes a sampler's blocks (a gs.Matrix or a list of "
        "them, first hop first) or an induced subgraph (subgraph, nodes); got "
        f"{_describe(out)}"
    )


def _describe(out) -> str:
    if isinstance(out, (list, tuple)):
        return f"a {type(out).__name__} of ({', '.join(type(o).__name__ for o in out[:4])})"
    return type(out).__name__


def new_keys(keys: torch.Tensor, seen: torch.Tensor) -> torch.Tensor:
    """The keys not in ``seen``, unique and ascending (a hop's newly reached *(seed slot,
    node)* pairs when laying a disjoint sample out), with one read-back.

    ``torch.unique`` and ``torch.isin`` each read sizes back from the device; this sorts
    both sides, finds each key in ``seen`` by binary search and reads back once.

    Parameters
    ----------
    keys : LongTensor, shape (K,)
        Candidates, any order, repeats allowed, ``>= 0``.
    seen : LongTensor, shape (S,)
        Keys already reached, any order.

    Returns
    -------
    LongTensor, shape (K',)
        ``unique(keys)`` without the members of ``seen``.

    Examples
    --------
    >>> import torch
    >>> new_keys(torch.tensor([5, 1, 5, 3]), torch.tensor([3, 9]))
    tensor([1, 5])
    """
    if keys.device.type == "cpu":  # a hash table in native code, where it runs
        got = reached_native.new_keys(keys, seen)
        if got is not None:
            return got
    k = torch.sort(keys).values
    # a sentinel below every key keeps the table non-empty (an empty one has no slot to
    # compare against)
    table = torch.sort(torch.cat([seen, seen.new_full((1,), -1)])).values
    at = torch.searchsorted(table, k).clamp(max=table.numel() - 1)
    first = torch.diff(k, prepend=k[:1] - 1) != 0  # the first of equal keys
    return k[first & (table[at] != k)]


def _first_occurrence(ids: torch.Tensor) -> torch.Tensor:
    """Boolean mask, True at the first position of every distinct value of ``ids``."""
    mask = torch.zeros(ids.numel(), dtype=torch.bool, device=ids.device)
    if ids.numel():
        uniq, inverse = torch.unique(ids, return_inverse=True)
        pos = torch.arange(ids.numel(), device=ids.device)
        first = torch.full((uniq.numel(),), ids.numel(), dtype=torch.int64, device=ids.device)
        first.scatter_reduce_(0, inverse, pos, "amin")
        mask[first] = True
    return mask


def _local(node: torch.Tensor, ids: torch.Tensor, order=None) -> torch.Tensor:
    """Position in ``node`` of the first occurrence of each of ``ids`` (all present);
    ``order``: ``_order(node)``, when several searches share it. On the CPU, a hash table
    of ``node`` in native code where its ids are distinct."""
    if order is None and node.device.type == "cpu":
        got = reached_native.positions(node, ids)
        if got is not None:
            return got
    perm, ordered = _order(node) if order is None else order
    return perm[torch.searchsorted(ordered, ids)]


def _order(node: torch.Tensor) -> tuple:
    """``(perm, node[perm])``: ``node`` sorted, equal ids in their order."""
    perm = torch.argsort(node, stable=True)
    return perm, node[perm]


def _blocks(blocks: list, seeds: torch.Tensor) -> PygSample:
    device = seeds.device
    node, done = seeds, seeds[:0]
    rows, cols, edges, weights = [], [], [], []
    num_nodes, num_edges = [seeds.numel()], []
    weighted = any(b.csc.values is not None for b in blocks)
    for block in blocks:
        csc = block.csc
        if csc.device != device:
            raise ValueError(f"batch.out: a block is on {csc.device}, the seeds on {device}")
        col_ids = csc.global_cols()
        keep = _first_occurrence(col_ids) & torch.isin(col_ids, node) & ~torch.isin(col_ids, done)
        done = torch.cat([done, col_ids[keep]])
        edge_col = csc.edge_cols()
        mask = keep[edge_col]
        local_rows = csc.rows[mask]
        src = csc.global_rows(local_rows)
        dst = col_ids[edge_col[mask]]
        reached = csc.global_rows(torch.unique(local_rows))  # row-space order
        new = reached[~torch.isin(reached, node)]
        node = torch.cat([node, new])
        rows.append(src)
        cols.append(dst)
        edges.append(csc.eid_tensor()[mask])
        if weighted:
            weights.append(csc.value_tensor()[mask])
        num_nodes.append(new.numel())
        num_edges.append(src.numel())
    return _hops_layout(
        node, seeds, rows, cols, edges, weights if weighted else None, num_nodes, num_edges
    )


def _hops_layout(
    node, seeds, rows, cols, edges, weights, num_nodes, num_edges, local_cols=False
) -> PygSample:
    """The ``PygSample`` of ``n_id`` ``node`` and each hop's kept edges (global ``rows`` ->
    ``cols``, their ids ``edges`` and values ``weights`` or None), in local ids;
    ``local_cols``: ``cols`` are positions in ``node`` already."""
    none = seeds.new_empty(0)
    src, dst = torch.cat(rows) if rows else none, torch.cat(cols) if cols else none
    # one sort shared by the searches, except where _local looks up in a native hash table
    native = node.device.type == "cpu" and reached_native.available()
    order = None if native else _order(node)
    row = _local(node, src, order)
    col = dst if local_cols else _local(node, dst, order)
    return PygSample(
        node=node,
        row=row,
        col=col,
        edge=torch.cat(edges) if edges else none,
        weight=None if weights is None else torch.cat(weights),
        batch_size=seeds.numel(),
        num_sampled_nodes=num_nodes,
        num_sampled_edges=num_edges,
    )


def hops_sample(out: tuple, seeds: torch.Tensor, distinct: bool = True) -> PygSample:
    """:func:`pyg_sample` of PyG's hops (``gsample.interop.pyg.subgraph.neighbor_hops``):
    the same ``PygSample``, laid out without reading anything back.

    Block ``h + 1``'s columns are the nodes first reached at hop ``h`` (ascending, each
    once, none reached before), and ``nodes`` is ``n_id`` already (the seeds, then each
    hop's new nodes), so every edge is kept in block order and the node counts are the
    blocks' column counts; what :func:`pyg_sample` finds by searching (``unique`` and
    ``isin``, each a read-back on a GPU) is known.

    Parameters
    ----------
    out : (list of gs.Matrix, list of LongTensor)
        ``neighbor_hops``' blocks (first hop first) and the nodes each hop reached (the
        seeds first), or their concatenation (LongTensor of shape (n,)).
    seeds : LongTensor, shape (B,)
        The mini-batch's seeds (``nodes[:B]``).
    distinct : bool
        No seed repeats. ``False``: the blocks are laid out by :func:`pyg_sample`, which
        keeps a repeated seed's first copy's edges only (the hops' layout would keep every
        copy's).

    Returns
    -------
    PygSample

    Examples
    --------
    >>> import torch, gsample as gs
    >>> from gsample.interop.pyg.neighbor_loader import neighbor_sample
    >>> from gsample.interop.pyg.subgraph import neighbor_hops
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> gs.manual_seed(0)
    >>> s = hops_sample(neighbor_hops(A, seeds, (10, 5)), seeds)
    >>> gs.manual_seed(0)
    >>> bool((s.node == pyg_sample(neighbor_sample(A, seeds, (10, 5)), seeds).node).all())
    True
    """
    blocks, node = out
    if not distinct:
        return pyg_sample(blocks, seeds)
    if isinstance(node, (list, tuple)):  # neighbor_hops' nodes, hop by hop
        node = torch.cat(node)
    seeds = seeds.to(torch.int64)
    weighted = any(b.csc.values is not None for b in blocks)
    rows, cols, edges, weights, num_edges = [], [], [], [], []
    at = 0  # block h's columns are n_id[at : at + C_h]: an edge's column is at + its column
    for block in blocks:
        csc = block.csc
        rows.append(csc.global_rows())
        cols.append(csc.edge_cols() + at)
        at += csc.num_cols
        edges.append(csc.eid_tensor())
        if weighted:
            weights.append(csc.value_tensor())
        num_edges.append(csc.nnz)
    reached = [b.csc.num_cols for b in blocks[1:]]  # hop h's new nodes: block h + 1's columns
    num_nodes = [seeds.numel(), *reached]
    if blocks:
        num_nodes.append(node.numel() - sum(num_nodes))
    return _hops_layout(
        node,
        seeds,
        rows,
        cols,
        edges,
        weights if weighted else None,
        num_nodes,
        num_edges,
        local_cols=True,
    )


def _induced(sub: Matrix, nodes: torch.Tensor, seeds: torch.Tensor) -> PygSample:
    csc = sub.csc
    nodes = nodes.to(torch.int64)
    node = torch.cat([seeds, nodes[~torch.isin(nodes, seeds)]])
    col_ids = csc.global_cols()
    edge_col = csc.edge_cols()
    mask = _first_occurrence(col_ids)[edge_col]
    src = csc.global_rows(csc.rows[mask])
    dst = col_ids[edge_col[mask]]
    if not bool(torch.isin(src, node).all() & torch.isin(dst, node).all()):
        raise ValueError(
            "batch.out: the subgraph has edges outside its node set (expected "
            "(A[nodes, nodes], nodes))"
        )
    weight = None if csc.values is None else csc.values[mask]
    return PygSample(
        node=node,
        row=_local(node, src),
        col=_local(node, dst),
        edge=csc.eid_tensor()[mask],
        weight=weight,
        batch_size=seeds.numel(),
        num_sampled_nodes=None,
        num_sampled_edges=None,
    )


def gather(table: NodeRows, node: torch.Tensor, name: str) -> torch.Tensor | None:
    """Rows ``node`` of a per-node table (``table[node]``) or ``table(node)`` for a callable
    (a feature store's gather); ``None`` stays ``None``.

    Parameters
    ----------
    table : Tensor of shape (N, ...), callable, or None
        One row per graph node (indexed on its own device), or ``f(node) -> rows``. A
        ``torch.sparse`` table gives sparse COO rows, as PyG's loaders slice one.
    node : LongTensor, shape (n,)
        Global ids.
    name : str
        The argument's name, for errors.

    Examples
    --------
    >>> import torch
    >>> gather(torch.arange(10) * 2, torch.tensor([3, 1]), "y")
    tensor([6, 2])
    """
    if table is None:
        return None
    if callable(table) and not isinstance(table, torch.Tensor):
        return table(node)
    if not isinstance(table, torch.Tensor):
        raise TypeError(
            f"{name}: expected a tensor with one row per node, or a callable "
            f"taking node ids; got {type(table).__name__}"
        )
    if table.dim() == 0:
        raise ValueError(f"{name}: expected one row per node, got a 0-d tensor")
    if node.numel() and int(node.max()) >= table.shape[0]:
        raise ValueError(
            f"{name}: has {table.shape[0]} rows but the mini-batch reaches node {int(node.max())}"
        )
    if table.layout != torch.strided:  # sparse: rows of a COO table (PyG's filter_data)
        if table.layout != torch.sparse_coo:
            table = table.to_sparse_coo()
        return table.index_select(0, node.to(table.device))
    return table[node.to(table.device)]


def _pyg() -> tuple:
    # import here: PyTorch Geometric is optional (pip install 'gsample[pyg]')
    try:
        from torch_geometric.data import Data
        from torch_geometric.sampler import SamplerOutput
    except ImportError:
        raise ImportError("to_pyg() needs PyTorch Geometric: pip install 'gsample[pyg]'") from None
    return Data, SamplerOutput


def to_sampler_output(
    sample: PygSample, input_id: torch.Tensor | None = None, seed_time: torch.Tensor | None = None
) -> SamplerOutput:
    """``torch_geometric.sampler.SamplerOutput`` of a mapped mini-batch.

    ``metadata`` is ``(input_id, seed_time, edge_weight)``: the first two as PyG's
    ``NodeLoader`` reads them (``input_id`` defaults to ``arange(B)``), then the sampled
    matrices' edge values in ``edge`` order (LADIES' and FastGCN's importance weights), or
    None; PyG's loaders drop the third when they rebuild the batch from their ``Data``
    (``gsample.pyg.with_edge_weight`` puts it on the batch).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> s1 = A[:, seeds].individual_sample(10)
    >>> blocks = [s1, A[:, s1.all_nodes()].individual_sample(5)]     # GraphSAGE's, two hops
    >>> out = to_sampler_output(pyg_sample(blocks, seeds))
    >>> out.row.shape == out.col.shape == out.edge.shape        # (E,) each
    True
    """
    _, SamplerOutput = _pyg()
    if input_id is None:
        input_id = torch.arange(sample.batch_size, device=sample.node.device)
    return SamplerOutput(
        node=sample.node,
        row=sample.row,
        col=sample.col,
        edge=sample.edge,
        batch=None,
        num_sampled_nodes=sample.num_sampled_nodes,
        num_sampled_edges=sample.num_sampled_edges,
        metadata=(input_id, seed_time, sample.weight),
    )


def to_data(
    sample: PygSample,
    x: NodeRows = None,
    y: NodeRows = None,
    input_id: torch.Tensor | None = None,
) -> Data:
    """``torch_geometric.data.Data`` of a mapped mini-batch, as PyG's ``NeighborLoader``
    returns it (``edge_index``, ``n_id``, ``e_id``, ``batch_size``, ``input_id``,
    ``num_sampled_nodes``, ``num_sampled_edges``; ``x`` / ``y`` / ``edge_weight`` when
    given or sampled). ``x`` / ``y``: see :func:`gather`.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> s1 = A[:, seeds].individual_sample(10)
    >>> blocks = [s1, A[:, s1.all_nodes()].individual_sample(5)]     # GraphSAGE's, two hops
    >>> features = torch.randn(100, 4)                            # (N, F)
    >>> data = to_data(pyg_sample(blocks, seeds), x=features)    # data.x: (n, F)
    >>> data.x.shape == (data.num_nodes, 4)
    True
    >>> data.edge_index.shape[0]
    2
    """
    Data, _ = _pyg()
    data = Data(edge_index=torch.stack([sample.row, sample.col]), num_nodes=sample.node.numel())
    data.n_id = sample.node
    data.e_id = sample.edge
    data.batch_size = sample.batch_size
    data.input_id = (
        input_id
        if input_id is not None
        else torch.arange(sample.batch_size, device=sample.node.device)
    )
    if sample.num_sampled_nodes is not None:
        data.num_sampled_nodes = sample.num_sampled_nodes
        data.num_sampled_edges = sample.num_sampled_edges
    if sample.weight is not None:
        data.edge_weight = sample.weight
    xs, ys = gather(x, sample.node, "x"), gather(y, sample.node, "y")
    if xs is not None:
        data.x = xs
    if ys is not None:
        data.y = ys
    return data


__all__ = [
    "NodeRows",
    "PygSample",
    "gather",
    "hops_sample",
    "new_keys",
    "pyg_sample",
    "to_data",
    "to_sampler_output",
]
