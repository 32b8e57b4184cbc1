"""A sampler's output as DGL message-flow graphs (``Batch.to_dgl``).

Written against DGL's documented block API (``dgl.create_block``, ``dgl.graph``,
``dgl.NID``, ``dgl.EID``); DGL is imported only here, when a conversion is asked for
(DGL does not import with torch >= 2.3).

The mapping:

* **Blocks** (a list of matrices, first hop first: ``examples/graphsage.py``,
  ``ladies.py``, ``fastgcn.py``): one DGL block per matrix, in DGL's order, the input
  layer first, so ``blocks[-1]``'s destination nodes are the seeds. Block ``l``'s
  destination nodes are matrix ``l``'s columns (its frontier, repeats kept as their own
  nodes); its source nodes are those columns first, then the rows not among them in
  row-space order (``Matrix.all_nodes()``), so ``block.srcdata[dgl.NID][:num_dst]``
  equals ``block.dstdata[dgl.NID]``; every edge is ``row -> column`` with its graph
  edge id in ``edata[dgl.EID]`` and the matrix's values, when it has any, in
  ``edata["edge_weight"]`` (LADIES / FastGCN importance weights). Consecutive layers
  must chain as DGL's model loop expects: matrix ``l + 1``'s columns are matrix ``l``'s
  ``all_nodes()`` (a DGL-style sampler, which re-samples the whole frontier each hop);
  otherwise (``graphsage_pyg``, which samples only new nodes) ``to_dgl`` raises and
  ``to_pyg`` is the conversion to use.
* **Induced subgraph** (``(subgraph, nodes)``: ``examples/shadow.py``): one
  ``dgl.graph`` over ``nodes`` (seeds first) with ``ndata[dgl.NID]`` and
  ``edata[dgl.EID]``, as DGL's ``ShaDowKHopSampler`` returns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from gsample.interop.pyg.data import NodeRows, _local, gather, pyg_sample
from gsample.matrix.sparse import Matrix

if TYPE_CHECKING:  # DGL is optional: its classes only name return types
    import dgl as dgl_types


def _dgl():
    """The ``dgl`` module, or an ImportError that tells "not installed" apart from "installed
    but does not import" (DGL 2.1's graphbolt fails to load under torch >= 2.3, with an
    OSError or FileNotFoundError rather than an ImportError)."""
    # import here: DGL is optional, and does not import with every torch
    try:
        import dgl
    except ModuleNotFoundError as e:
        if e.name != "dgl":  # DGL is there; one of its own imports is missing
            raise ImportError(f"to_dgl(): DGL is installed but does not import ({e})") from e
        raise ImportError(
            "to_dgl() needs DGL, which is not installed: pip install dgl==2.1.0 with torch "
            "2.0-2.2 (see docs/guide/dgl.md)"
        ) from None
    except Exception as e:
        raise ImportError(
            f"to_dgl(): DGL is installed but does not import with torch {torch.__version__} "
            f"({type(e).__name__}: {e}); DGL 2.1 needs torch 2.0-2.2 (see docs/guide/dgl.md)"
        ) from e
    return dgl


def block_nodes(m: Matrix):
    """``(dst, src, edge_src, edge_dst)`` of one block: destination ids (the columns),
    source ids (columns first, then new rows) and each edge's local source and
    destination."""
    csc = m.csc
    dst = csc.global_cols()
    local_rows = csc.rows
    reached = csc.global_rows(torch.unique(local_rows))  # row-space order
    src = torch.cat([dst, reached[~torch.isin(reached, dst)]])
    edge_src = _local(src, csc.global_rows(local_rows))
    edge_dst = csc.edge_cols()  # the column's position
    return dst, src, edge_src, edge_dst


def to_dgl(
    out: Any, seeds: torch.Tensor, x: NodeRows = None, y: NodeRows = None
) -> list[dgl_types.DGLGraph] | dgl_types.DGLGraph:
    """DGL blocks (or, for an induced subgraph, a DGL graph) of a sampler's output.

    Parameters
    ----------
    out : gs.Matrix, list of gs.Matrix, or (gs.Matrix, LongTensor)
        What the sampler returned (see the module docstring).
    seeds : LongTensor, shape (B,)
        The mini-batch's seeds.
    x, y : Tensor of one row per node, or callable, optional
        Features gathered into the first block's ``srcdata["feat"]`` and labels into the
        last block's ``dstdata["label"]`` (a subgraph's ``ndata``).

    Returns
    -------
    list of dgl.DGLBlock, or dgl.DGLGraph
        Blocks input layer first (``blocks[-1].dstdata[dgl.NID]`` are the seeds).

    Examples
    --------
    With DGL installed, ``batch`` a mini-batch of ``gs.DataLoader(..., features=x)`` and
    ``model`` a DGL model of one layer per block:

    >>> blocks = batch.to_dgl()  # doctest: +SKIP
    >>> h = blocks[0].srcdata["feat"]  # doctest: +SKIP
    >>> for layer, block in zip(model.layers, blocks):  # doctest: +SKIP
    ...     h = layer(block, h)
    """
    if (
        isinstance(out, (list, tuple))
        and len(out) == 2
        and isinstance(out[0], Matrix)
        and isinstance(out[1], torch.Tensor)
    ):
        return _subgraph(out[0], out[1], seeds, x, y)
    if isinstance(out, Matrix):
        out = [out]
    if not (isinstance(out, (list, tuple)) and out and all(isinstance(m, Matrix) for m in out)):
        raise TypeError(
            "batch.out: to_dgl() takes a sampler's blocks (a gs.Matrix or a list "
            "of them, first hop first) or an induced subgraph (subgraph, nodes)"
        )
    parts = [block_nodes(m) for m in out]
    for layer in range(len(parts) - 1):
        src, nxt = parts[layer][1], parts[layer + 1][0]
        if src.shape != nxt.shape or not bool((src == nxt).all()):
            raise ValueError(
                f"batch.out: block {layer + 1}'s columns are not block {layer}'s "
                "all_nodes(); DGL blocks need a sampler that re-samples the whole "
                "frontier (blocks[l + 1] = A[:, blocks[l].all_nodes()]...); use "
                "to_pyg() for one that samples only new nodes"
            )
    dgl = _dgl()
    blocks = []
    for m, (dst, src, edge_src, edge_dst) in zip(out, parts):
        block = dgl.create_block(
            (edge_src, edge_dst), num_src_nodes=src.numel(), num_dst_nodes=dst.numel()
        )
        block.srcdata[dgl.NID] = src
        block.dstdata[dgl.NID] = dst
        block.edata[dgl.EID] = m.csc.eid_tensor()
        if m.csc.values is not None:
            block.edata["edge_weight"] = m.csc.values
        blocks.append(block)
    blocks.reverse()  # DGL's order: the input layer first
    feat = gather(x, parts[-1][1], "x")  # the input layer's source nodes
    label = gather(y, parts[0][0], "y")  # the seeds' block's destinations
    if feat is not None:
        blocks[0].srcdata["feat"] = feat
    if label is not None:
        blocks[-1].dstdata["label"] = label
    return blocks


def _subgraph(sub: Matrix, nodes: torch.Tensor, seeds: torch.Tensor, x, y):
    s = pyg_sample((sub, nodes), seeds)  # the same node order and edges as to_pyg
    dgl = _dgl()
    g = dgl.graph((s.row, s.col), num_nodes=s.node.numel())
    g.ndata[dgl.NID] = s.node
    g.edata[dgl.EID] = s.edge
    if s.weight is not None:
        g.edata["edge_weight"] = s.weight
    feat, label = gather(x, s.node, "x"), gather(y, s.node, "y")
    if feat is not None:
        g.ndata["feat"] = feat
    if label is not None:
        g.ndata["label"] = label
    return g


__all__ = ["block_nodes", "to_dgl"]
