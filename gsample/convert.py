"""Graph inputs: scipy.sparse, networkx and PyG ``Data`` to :class:`gsample.Matrix`."""
from __future__ import annotations

import numpy as np
import torch


def from_scipy(cls, matrix, weight: bool = True):
    import scipy.sparse as sp
    if not sp.issparse(matrix):
        raise TypeError(f"matrix: expected a scipy.sparse matrix, got {type(matrix).__name__}")
    if matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"matrix: must be square (N x N), got shape {matrix.shape}")
    coo = matrix.tocoo()
    ei = torch.from_numpy(np.stack([coo.row, coo.col]).astype(np.int64))
    w = torch.from_numpy(np.asarray(coo.data)) if weight else None
    if w is not None and not w.is_floating_point():
        w = w.to(torch.float32)
    return cls.from_edge_index(ei, num_nodes=matrix.shape[0], weight=w)


def from_networkx(cls, graph, weight=None):
    import networkx as nx
    if not isinstance(graph, nx.Graph):
        raise TypeError(f"graph: expected a networkx graph, got {type(graph).__name__}")
    index = {node: i for i, node in enumerate(graph.nodes)}
    edges = list(graph.edges(data=True))
    src = [index[u] for u, _, _ in edges]
    dst = [index[v] for _, v, _ in edges]
    w = [float(d.get(weight, 1.0)) for _, _, d in edges] if weight is not None else None
    if not graph.is_directed():         # both directions; a self-loop stays one edge
        back = [i for i, (u, v) in enumerate(zip(src, dst)) if u != v]
        src, dst = src + [dst[i] for i in back], dst + [src[i] for i in back]
        w = None if w is None else w + [w[i] for i in back]
    ei = torch.tensor([src, dst], dtype=torch.int64).reshape(2, -1)
    wt = None if w is None else torch.tensor(w, dtype=torch.float32)
    return cls.from_edge_index(ei, num_nodes=len(index), weight=wt)


def from_pyg(cls, data, weight="edge_weight"):
    edge_index = getattr(data, "edge_index", None)
    if edge_index is None:
        raise TypeError("data: expected a torch_geometric Data with an edge_index")
    w = getattr(data, weight, None) if weight is not None else None
    if w is not None and w.dim() != 1:
        raise ValueError(f"weight: data.{weight} must have one value per edge, "
                         f"got shape {tuple(w.shape)}")
    return cls.from_edge_index(edge_index, num_nodes=data.num_nodes, weight=w)
