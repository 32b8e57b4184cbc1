"""PyG's remote-backend input, ``(FeatureStore, GraphStore)``, for ``gsample.pyg``'s loaders.

gsample samples a graph it holds as ``gs.Matrix`` / ``gs.HeteroGraph``, so the loaders read
the ``GraphStore``'s edges once (:func:`as_data`: every edge type's ``edge_index``, from its
COO, CSR or CSC layout) into the graph-only ``Data`` or ``HeteroData`` it stands for, sample
that as they sample any ``Data`` / ``HeteroData``, and build each batch from the stores with
PyG's own ``filter_custom_store`` / ``filter_custom_hetero_store`` (the ``join``): node
features come from the ``FeatureStore`` (``multi_get_tensor`` of the sampled nodes), as in
PyG's loaders.

As PyG's ``NeighborSampler``: the graph is homogeneous when every edge attribute of the
``GraphStore`` has ``edge_type=None``, heterogeneous when none has; an edge type stored in
several layouts is read from its CSC, else COO, else CSR one. ``e_id`` are positions in the
layout read (PyG's ``edge_permutation``: CSC positions map to positions in the stored
layout). A node type's count is PyG's ``remote_backend_utils.num_nodes`` (an edge
attribute's ``size``, else a feature tensor's rows), else the largest id of its edges + 1.
Edge attributes are not in PyG's stores (``weight_attr`` is refused, as PyG refuses it).
"""

from __future__ import annotations

import copy
import functools

import torch

try:
    from torch_geometric.data import Data as _Data
    from torch_geometric.data import FeatureStore as _FeatureStore
    from torch_geometric.data import GraphStore as _GraphStore
    from torch_geometric.data import HeteroData as _HeteroData
except ImportError:  # the module imports without PyG; the loaders raise first (_require)
    _Data = _FeatureStore = _GraphStore = _HeteroData = None

#: layouts in the order an edge type is read from (PyG's ``GraphStore.csc()`` preference)
_LAYOUTS = ("csc", "coo", "csr")


def is_stores(data) -> bool:
    """Whether ``data`` is PyG's remote-backend input, a ``(FeatureStore, GraphStore)`` pair.

    Examples
    --------
    >>> from torch_geometric.data import Data
    >>> from torch_geometric.testing import MyFeatureStore, MyGraphStore   # in-memory stores
    >>> is_stores((MyFeatureStore(), MyGraphStore())), is_stores(Data())
    (True, False)
    """
    return (
        _FeatureStore is not None
        and isinstance(data, (tuple, list))
        and len(data) == 2
        and isinstance(data[0], _FeatureStore)
        and isinstance(data[1], _GraphStore)
    )


def _ptr_to_index(ptr: torch.Tensor) -> torch.Tensor:
    """A compressed pointer (``indptr``, ``n + 1`` entries) as one index per entry."""
    ptr = ptr.to(torch.int64)
    n = ptr.numel() - 1
    return torch.repeat_interleave(torch.arange(n, device=ptr.device), ptr.diff())


def edge_index(graph_store, edge_type) -> tuple[torch.Tensor, tuple | None]:
    """One edge type's edges as a COO ``edge_index`` (in the stored layout's order) and the
    attribute's ``size`` (``(num_src, num_dst)`` or None).

    Parameters
    ----------
    graph_store : torch_geometric.data.GraphStore
    edge_type : tuple or None
        ``(src, rel, dst)``, or None for a homogeneous store.

    Returns
    -------
    edge_index : LongTensor, shape (2, E)
        Row 0 the sources; edge ``i`` is the ``i``-th of the layout read (CSC, else COO,
        else CSR).
    size : tuple or None

    Examples
    --------
    >>> import torch
    >>> from torch_geometric.testing import MyFeatureStore, MyGraphStore   # in-memory stores
    >>> feature_store, graph_store = MyFeatureStore(), MyGraphStore()
    >>> feature_store.put_tensor(torch.randn(3, 4), group_name="paper", attr_name="x", index=None)
    True
    >>> feature_store.put_tensor(torch.randn(2, 4), group_name="author", attr_name="x", index=None)
    True
    >>> graph_store.put_edge_index(torch.tensor([[0, 1], [1, 2]]),
    ...                            edge_type=("paper", "to", "paper"), layout="coo", size=(3, 3))
    True
    >>> graph_store.put_edge_index(torch.tensor([[0, 2], [1, 0]]),
    ...                            edge_type=("paper", "to", "author"), layout="coo", size=(3, 2))
    True
    >>> ei, size = edge_index(graph_store, ("paper", "to", "author"))
    >>> ei.tolist(), size
    ([[0, 2], [1, 0]], (3, 2))
    """
    attrs = [a for a in graph_store.get_all_edge_attrs() if a.edge_type == edge_type]
    if not attrs:
        raise ValueError(f"data: the GraphStore has no edge_index of type {edge_type!r}")
    attr = min(attrs, key=lambda a: _LAYOUTS.index(a.layout.value))
    first, second = graph_store.get_edge_index(attr)
    where = f"data[1] (GraphStore), edge type {edge_type!r} ({attr.layout.value})"
    for x in (first, second):
        if not isinstance(x, torch.Tensor) or x.dim() != 1:
            raise ValueError(f"{where}: expected two 1-D index tensors, got {type(x).__name__}")
    if attr.layout.value == "csr":  # (rowptr, col)
        first = _ptr_to_index(first)
    elif attr.layout.value == "csc":  # (row, colptr)
        second = _ptr_to_index(second)
    if first.numel() != second.numel():
        raise ValueError(
            f"{where}: {first.numel()} sources and {second.numel()} destinations do not match"
        )
    return torch.stack([first.to(torch.int64), second.to(torch.int64)]), attr.size


def _num_nodes(feature_store, graph_store, node_type, ids: list) -> int:
    """PyG's count of a node type in the stores, else the largest id in ``ids`` + 1."""
    # import here: PyTorch Geometric is optional (the module imports without it)
    from torch_geometric.data import remote_backend_utils

    try:
        return int(remote_backend_utils.num_nodes(feature_store, graph_store, node_type))
    except (ValueError, TypeError):  # PyG: "Unable to accurately infer the number of nodes"
        return max((int(i.max()) + 1 for i in ids if i.numel()), default=0)


def as_data(
    data, custom_cls=None, weight_attr=None, loader: str = "NeighborLoader", time_attr=None
) -> tuple:
    """The graph a ``(FeatureStore, GraphStore)`` holds, and how its batches are built.

    Parameters
    ----------
    data : tuple
        ``(feature_store, graph_store)``.
    custom_cls : type, optional
        PyG's ``custom_cls``: the class of the batches (a ``Data`` / ``HeteroData``
        subclass); default ``Data`` / ``HeteroData``.
    weight_attr : None
        PyG's stores hold no edge attributes: anything else is a ``ValueError``.
    loader : str
        The loader's name, for messages.
    time_attr : str, optional
        PyG's temporal sampling: the ``FeatureStore``'s tensors of attribute name
        ``time_attr`` (whole, ``index=None``) are copied onto the graph, as PyG's
        ``NeighborSampler`` reads them: a group named by a node type (or None, homogeneous)
        is a node-level time, one named by an edge type an edge-level one. None of them: a
        ``ValueError`` naming ``time_attr`` (PyG's "did not find any temporal data").

    Returns
    -------
    graph : Data or HeteroData
        Only the graph: ``edge_index`` per edge type, ``num_nodes`` per node type (and the
        time attribute, with ``time_attr``).
    join : callable
        ``join(node, row, col, edge)`` -> the batch (PyG's ``filter_custom_store`` /
        ``filter_custom_hetero_store`` of the stores: ``edge_index`` and the sampled nodes'
        features).

    Examples
    --------
    >>> import torch
    >>> from torch_geometric.testing import MyFeatureStore, MyGraphStore   # in-memory stores
    >>> feature_store, graph_store = MyFeatureStore(), MyGraphStore()
    >>> feature_store.put_tensor(torch.randn(3, 4), group_name="paper", attr_name="x", index=None)
    True
    >>> feature_store.put_tensor(torch.randn(2, 4), group_name="author", attr_name="x", index=None)
    True
    >>> graph_store.put_edge_index(torch.tensor([[0, 1], [1, 2]]),
    ...                            edge_type=("paper", "to", "paper"), layout="coo", size=(3, 3))
    True
    >>> graph_store.put_edge_index(torch.tensor([[0, 2], [1, 0]]),
    ...                            edge_type=("paper", "to", "author"), layout="coo", size=(3, 2))
    True
    >>> graph, join = as_data((feature_store, graph_store))
    >>> graph.edge_types
    [('paper', 'to', 'paper'), ('paper', 'to', 'author')]
    """
    feature_store, graph_store = data
    if weight_attr is not None:
        raise ValueError(
            f"weight_attr: a (FeatureStore, GraphStore) holds no edge attributes, so no "
            f"sampling weights (PyG's {loader} refuses weight_attr for stores too); pass a "
            "Data or HeteroData"
        )
    if custom_cls is not None and not isinstance(custom_cls, type):
        raise TypeError(f"custom_cls: expected a class, got {type(custom_cls).__name__}")
    edge_types = list(dict.fromkeys(a.edge_type for a in graph_store.get_all_edge_attrs()))
    if not edge_types:
        raise ValueError("data: the GraphStore holds no edge_index (put_edge_index first)")
    if None in edge_types:
        if len(edge_types) > 1:
            raise ValueError(
                "data: the GraphStore mixes edges of no type (edge_type=None, a homogeneous "
                f"graph) with typed ones ({[t for t in edge_types if t is not None]})"
            )
        ei, size = edge_index(graph_store, None)
        if size is not None:
            n = max(size)
        else:
            n = _num_nodes(feature_store, graph_store, None, [ei[0], ei[1]])
        graph = _Data(edge_index=ei, num_nodes=n)
        for _, t in _times(feature_store, time_attr):  # PyG reads the one tensor there is
            graph[time_attr] = t
        return graph, functools.partial(_join, feature_store, graph_store, custom_cls)
    for et in edge_types:
        if not (isinstance(et, tuple) and len(et) == 3 and all(isinstance(p, str) for p in et)):
            raise ValueError(
                f"data: the GraphStore's edge types must be (src, rel, dst) triples of "
                f"strings, got {et!r}"
            )
    edges = {et: edge_index(graph_store, et)[0] for et in edge_types}
    node_types = [
        a.group_name for a in feature_store.get_all_tensor_attrs() if isinstance(a.group_name, str)
    ]
    node_types += [t for et in edge_types for t in (et[0], et[2])]
    graph = _HeteroData()
    for t in dict.fromkeys(node_types):
        ids = [ei[0] for et, ei in edges.items() if et[0] == t]
        ids += [ei[1] for et, ei in edges.items() if et[2] == t]
        graph[t].num_nodes = _num_nodes(feature_store, graph_store, t, ids)
    for et, ei in edges.items():
        graph[et].edge_index = ei
    for group, t in _times(feature_store, time_attr):
        # a node type's group (a str) is node-level time, an edge type's (a tuple) edge-level
        known = graph.node_types if isinstance(group, str) else graph.edge_types
        if group in known:
            graph[group][time_attr] = t
    return graph, functools.partial(_join_hetero, feature_store, graph_store, custom_cls)


def _times(feature_store, time_attr) -> list:
    """``[(group_name, tensor)]``: the ``FeatureStore``'s whole tensors of attribute name
    ``time_attr`` (PyG's temporal sampling reads these); ``[]`` without ``time_attr``."""
    if time_attr is None:
        return []
    if not isinstance(time_attr, str):
        raise TypeError(
            f"time_attr: the name of a node or edge attribute (a str) or None, got "
            f"{type(time_attr).__name__}"
        )
    attrs = [a for a in feature_store.get_all_tensor_attrs() if a.attr_name == time_attr]
    if not attrs:
        raise ValueError(
            f"time_attr: the FeatureStore holds no tensor named '{time_attr}' (PyG: "
            "temporal sampling specified but did not find any temporal data)"
        )
    out = []
    for a in attrs:
        a = copy.copy(a)
        a.index = None  # the whole tensor, as PyG's NeighborSampler reads it
        out.append((a.group_name, feature_store.get_tensor(a)))
    return out


def _join(feature_store, graph_store, custom_cls, node, row, col, edge):
    """PyG's ``filter_custom_store``: a homogeneous batch from the stores."""
    # import here: PyTorch Geometric is optional (the module imports without it)
    from torch_geometric.loader.utils import filter_custom_store

    return filter_custom_store(feature_store, graph_store, node, row, col, edge, custom_cls)


def _join_hetero(feature_store, graph_store, custom_cls, node, row, col, edge):
    """PyG's ``filter_custom_hetero_store``: a heterogeneous batch from the stores."""
    # import here: PyTorch Geometric is optional (the module imports without it)
    from torch_geometric.loader.utils import filter_custom_hetero_store

    return filter_custom_hetero_store(feature_store, graph_store, node, row, col, edge, custom_cls)


__all__ = ["as_data", "edge_index", "is_stores"]
