"""Graph inputs: scipy.sparse, networkx and PyG ``Data`` to :class:`gsample.Matrix`."""

from __future__ import annotations

import numbers

import numpy as np
import torch

from gsample.base import validate as V


def from_scipy(cls, matrix, weight: bool = True):
    # import here: scipy is an optional dependency (only this constructor needs it)
    import scipy.sparse as sp

    if not sp.issparse(matrix):
        raise TypeError(f"matrix: expected a scipy.sparse matrix, got {type(matrix).__name__}")
    if matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"matrix: must be square (N x N), got shape {matrix.shape}")
    weight = V.flag(weight, "weight")
    coo = matrix.tocoo()
    ei = torch.from_numpy(np.stack([coo.row, coo.col]).astype(np.int64))
    w = None
    if weight:
        data = np.asarray(coo.data)
        # before any cast: a complex matrix would lose its imaginary part with a warning only
        V.not_complex(
            data.dtype,
            "matrix",
            "pass matrix.real or abs(matrix), or weight=False to drop the values",
        )
        if data.dtype == object or not (
            np.issubdtype(data.dtype, np.number) or data.dtype == np.bool_
        ):
            raise TypeError(
                f"matrix: stored values must be numbers, got dtype {data.dtype} "
                "(pass weight=False to drop them)"
            )
        w = torch.from_numpy(data)
        if not w.is_floating_point():  # integer and bool weights: float32 (validate's doc)
            w = w.to(torch.float32)
    return cls.from_edge_index(ei, num_nodes=matrix.shape[0], weight=w)


def from_networkx(cls, graph, weight=None):
    # import here: networkx takes a while to import and only this constructor needs it
    import networkx as nx

    if not isinstance(graph, nx.Graph):
        raise TypeError(f"graph: expected a networkx graph, got {type(graph).__name__}")
    index = {node: i for i, node in enumerate(graph.nodes)}
    edges = list(graph.edges(data=True))
    src = [index[u] for u, _, _ in edges]
    dst = [index[v] for _, v, _ in edges]
    if weight is not None and not isinstance(weight, str):
        raise TypeError(
            f"weight: the name of an edge attribute (a str) or None, got {type(weight).__name__}"
        )
    w = (
        [_real(d.get(weight, 1.0), u, v, weight) for u, v, d in edges]
        if weight is not None
        else None
    )
    if not graph.is_directed():  # both directions; a self-loop stays one edge
        back = [i for i, (u, v) in enumerate(zip(src, dst)) if u != v]
        src, dst = src + [dst[i] for i in back], dst + [src[i] for i in back]
        w = None if w is None else w + [w[i] for i in back]
    ei = torch.tensor([src, dst], dtype=torch.int64).reshape(2, -1)
    wt = None if w is None else torch.tensor(w, dtype=torch.float32)
    return cls.from_edge_index(ei, num_nodes=len(index), weight=wt)


def _real(x, u, v, weight: str) -> float:
    """An edge attribute as a float weight; a complex or non-numeric one names the edge."""
    if isinstance(x, (bool, np.bool_, numbers.Real)):
        return float(x)
    kind = "complex" if isinstance(x, numbers.Complex) else "not a real number"
    raise TypeError(
        f"weight: edge ({u!r}, {v!r}) has {weight}={x!r}, {kind}; weights must be real numbers"
    )


def from_pyg(cls, data, weight="edge_weight"):
    edge_index = getattr(data, "edge_index", None)
    if edge_index is None:
        raise TypeError("data: expected a torch_geometric Data with an edge_index")
    if weight is not None and not isinstance(weight, str):
        raise TypeError(
            f"weight: the name of an edge attribute (a str) or None, got {type(weight).__name__}"
        )
    w = getattr(data, weight, None) if weight is not None else None
    if w is not None:
        w = V.as_tensor(w, f"weight (data.{weight})", None)
    if w is not None and w.dim() != 1:
        raise ValueError(
            f"weight: data.{weight} must have one value per edge, got shape {tuple(w.shape)}"
        )
    return cls.from_edge_index(edge_index, num_nodes=data.num_nodes, weight=w)
