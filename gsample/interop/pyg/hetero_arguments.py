"""The arguments of ``gsample.pyg``'s loaders for a PyG ``HeteroData``, read and checked:
the data (:func:`is_hetero`, :func:`check_attributes`, :func:`check_sliceable`), the graph to
sample (:func:`graph_skeleton`, :func:`check_graph`, :func:`weighted_relations` for
``weight_attr``), ``num_neighbors`` (:func:`fanouts`) and the seeds (:func:`input_nodes_of`,
:func:`input_seeds`). :class:`~gsample.interop.pyg.hetero_loader.HeteroBatches` reads them.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import torch

from gsample.base import validate as V
from gsample.hetero.container import HeteroGraph
from gsample.loader.dataloader import seed_ids
from gsample.matrix.sparse import Matrix

try:
    from torch_geometric.data import HeteroData as _HeteroData
    from torch_geometric.sampler import NumNeighbors as _NumNeighbors
except ImportError:  # the module imports without PyG; the loaders raise first (_require)
    _HeteroData = _NumNeighbors = None

#: PyG's subgraph types this module builds
SUBGRAPH_TYPES = ("directional", "bidirectional", "induced")


def is_hetero(data) -> bool:
    """Whether ``data`` is a PyG ``HeteroData`` (the loaders' dispatch).

    Examples
    --------
    >>> from torch_geometric.data import Data, HeteroData
    >>> is_hetero(HeteroData()), is_hetero(Data())
    (True, False)
    """
    return _HeteroData is not None and isinstance(data, _HeteroData)


def check_attributes(data) -> None:
    """PyG's ``filter_hetero_data`` slices dense and sparse-COO attributes only, and gsample
    samples ``edge_index``: refuse what either would silently get wrong, naming it.

    Examples
    --------
    >>> import torch
    >>> from torch_geometric.data import HeteroData
    >>> data = HeteroData()
    >>> data["author"].num_nodes, data["paper"].num_nodes = 2, 3
    >>> data["author", "writes", "paper"].edge_index = torch.tensor([[0, 0, 1, 1], [0, 1, 1, 2]])
    >>> data["author", "writes", "paper"].w = torch.tensor([1.0, 0.0, 2.0, 0.5])
    >>> check_attributes(data)                        # edge_index and dense tensors: fine
    >>> data["paper"].adj_t = torch.eye(3).to_sparse_coo()
    >>> check_attributes(data)                        # a relation stored as an adjacency
    Traceback (most recent call last):
    TypeError: data['paper'].adj_t: a relation stored as a sparse adjacency (adj_t) is not ...
    """
    for store in data.stores:
        key = store._key
        where = f"data[{key!r}]"
        for name in ("adj_t", "adj"):
            if name in store:
                raise TypeError(
                    f"{where}.{name}: a relation stored as a sparse adjacency ({name}) is not "
                    f"supported yet; gsample samples edge_index: set {where}.edge_index "
                    f"from {name}'s COO indices and delete {name}"
                )
        check_sliceable(store, where)


def check_sliceable(store, where: str) -> None:
    """Every tensor attribute of ``store`` (a ``Data`` or one store of a ``HeteroData``,
    named ``where``) must be one PyG's ``filter_data`` / ``filter_hetero_data`` slice per
    mini-batch: dense or sparse COO; another layout is a ``TypeError`` naming it.

    Examples
    --------
    >>> import torch
    >>> from torch_geometric.data import Data
    >>> data = Data(x=torch.eye(3).to_sparse_csr(), num_nodes=3)
    >>> check_sliceable(data, "data")
    Traceback (most recent call last):
    TypeError: data.x: a sparse tensor of layout torch.sparse_csr cannot be sliced per ...
    """
    for name, value in store.items():
        if isinstance(value, torch.Tensor) and value.layout not in (
            torch.strided,
            torch.sparse_coo,
        ):
            raise TypeError(
                f"{where}.{name}: a sparse tensor of layout {value.layout} cannot be sliced "
                "per mini-batch (PyG's filter_data takes dense and sparse COO tensors); "
                f"pass {where}.{name}.to_sparse_coo() or .to_dense()"
            )


def weighted_relations(data, weight_attr: str, H: HeteroGraph) -> tuple[HeteroGraph, dict]:
    """``H`` with every relation that has ``data[edge_type][weight_attr]`` replaced by its
    edges of positive weight, weighted (PyG's weighted sampling never draws an edge of
    weight 0), and for those relations the positions of the kept edges in ``edge_index``
    (``{edge_type: LongTensor}``: the sample's edge ids are positions among the kept ones).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> from torch_geometric.data import HeteroData
    >>> data = HeteroData()
    >>> data["author"].num_nodes, data["paper"].num_nodes = 2, 3
    >>> data["author", "writes", "paper"].edge_index = torch.tensor([[0, 0, 1, 1], [0, 1, 1, 2]])
    >>> data["author", "writes", "paper"].w = torch.tensor([1.0, 0.0, 2.0, 0.5])
    >>> H, kept = weighted_relations(data, "w", gs.HeteroGraph.from_pyg(data, weight=None))
    >>> kept[("author", "writes", "paper")]        # the edges of positive weight
    tensor([0, 2, 3])
    """
    if not isinstance(weight_attr, str):
        raise TypeError(
            f"weight_attr: the name of an edge attribute (a str) or None, got "
            f"{type(weight_attr).__name__}"
        )
    rels, kept = {}, {}
    for et in H.edge_types:
        store = data[et]
        if weight_attr not in store:  # a relation without weights samples uniformly
            rels[et] = H[et]
            continue
        w = store[weight_attr]
        num_edges = store.edge_index.shape[1]
        where = f"data[{et!r}].{weight_attr}"
        if (
            not isinstance(w, torch.Tensor)
            or w.dim() != 1
            or w.numel() != num_edges
            or not w.is_floating_point()
        ):
            got = (
                f"dtype {w.dtype} and shape {tuple(w.shape)}"
                if isinstance(w, torch.Tensor)
                else type(w).__name__
            )
            raise ValueError(
                f"weight_attr: {where} must hold one floating-point weight per edge, shape "
                f"({num_edges},); got {got}"
            )
        if not bool(torch.isfinite(w).all()) or bool((w < 0).any()):
            raise ValueError(
                f"weight_attr: {where} must be finite and non-negative (PyG's sampling weights)"
            )
        keep = torch.nonzero(w > 0).reshape(-1)
        ei = store.edge_index.to(torch.int64)[:, keep.to(store.edge_index.device)]
        rels[et] = Matrix.from_edge_index(
            ei.to(H.device), num_nodes=H.size, weight=w[keep].to(H.device)
        )
        kept[et] = keep.to(H.device)
    if not kept:
        raise ValueError(
            f"weight_attr: no edge type of data has an attribute {weight_attr!r} (PyG's "
            "sampling weights, one per edge)"
        )
    return HeteroGraph(rels, H.num_nodes_dict), kept


def check_graph(graph, data) -> HeteroGraph:
    """``graph=``: a ``gs.HeteroGraph`` of the data's node types, node counts, edge types
    and edge counts (its edge ids are taken as positions in the data's ``edge_index``).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> from torch_geometric.data import HeteroData
    >>> data = HeteroData()
    >>> data["author"].num_nodes, data["paper"].num_nodes = 2, 3
    >>> data["author", "writes", "paper"].edge_index = torch.tensor([[0, 0, 1, 1], [0, 1, 1, 2]])
    >>> data["author", "writes", "paper"].w = torch.tensor([1.0, 0.0, 2.0, 0.5])
    >>> check_graph(gs.HeteroGraph.from_pyg(data), graph_skeleton(data))
    HeteroGraph(num_nodes={author=2, paper=3}, edges={('author', 'writes', 'paper'): 4}, device=cpu)
    """
    if not isinstance(graph, HeteroGraph):
        raise TypeError(
            f"graph: for a HeteroData, a gs.HeteroGraph of the same node and edge types "
            f"(e.g. gs.HeteroGraph.from_pyg(data).to('cuda')); got {type(graph).__name__}"
        )
    want = sorted(tuple(et) for et in data.edge_types)
    problem = None
    if graph.edge_types != want:
        problem = f"edge types {want}, got {graph.edge_types}"
    else:
        for et in want:
            e = data[et].edge_index.shape[1]
            if graph.num_edges(et) != e:
                problem = f"{e} edges of type {et}, got {graph.num_edges(et)}"
                break
        for t in data.node_types:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                n = data[t].num_nodes
            if n is not None and (t not in graph.num_nodes_dict or graph.num_nodes(t) != n):
                problem = f"{n} nodes of type {t!r}, got {graph.num_nodes_dict.get(t)}"
                break
    if problem is not None:
        raise ValueError(f"graph: expected a gs.HeteroGraph of the data's graph: {problem}")
    return graph


def graph_skeleton(data):
    """The graph of ``data`` alone (node counts, ``edge_index``), for ``from_pyg``.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> from torch_geometric.data import HeteroData
    >>> data = HeteroData()
    >>> data["author"].num_nodes, data["paper"].num_nodes = 2, 3
    >>> data["author", "writes", "paper"].edge_index = torch.tensor([[0, 0, 1, 1], [0, 1, 1, 2]])
    >>> data["author", "writes", "paper"].w = torch.tensor([1.0, 0.0, 2.0, 0.5])
    >>> H = gs.HeteroGraph.from_pyg(graph_skeleton(data), weight=None)
    >>> H.edge_types
    [('author', 'writes', 'paper')]
    """
    out = _HeteroData()
    for t in data.node_types:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            n = data[t].num_nodes
        if n is not None:
            out[t].num_nodes = n
    for et in data.edge_types:
        if "edge_index" not in data[et]:  # PyG's samplers need one too
            raise ValueError(f"data[{et!r}]: has no edge_index (the edge type's graph)")
        out[et].edge_index = data[et].edge_index
    return out


def fanouts(num_neighbors, edge_types: list) -> tuple[dict, int]:
    """PyG's ``num_neighbors`` as ``{edge_type: [k per hop]}`` over ``edge_types``.

    Parameters
    ----------
    num_neighbors : list of int, dict, or PyG's NumNeighbors
        A list: the same fanouts for every edge type. A dict ``{edge_type: [k, ...]}``
        (PyG's keys: ``(src, rel, dst)`` triples) must name edge types of the graph only,
        and all of them (else PyG's ``ValueError``); a ``NumNeighbors(values, default)``
        gives the missing ones ``default``. Every edge type lists the same number of hops
        (else PyG's ``ValueError``: "Number of hops must be the same across all edge
        types").
    edge_types : list of tuple
        The graph's edge types.

    Returns
    -------
    per_type : dict
        ``{edge_type: list of int >= -1}`` for every edge type.
    num_hops : int

    Examples
    --------
    >>> fanouts([10, 5], [("a", "to", "b")])
    ({('a', 'to', 'b'): [10, 5]}, 2)
    """
    if isinstance(num_neighbors, int) or not isinstance(
        num_neighbors, (list, tuple, dict, _NumNeighbors)
    ):
        raise TypeError(
            "num_neighbors: expected a list of ints >= -1 (one per hop), or a dict "
            f"{{edge_type: list}} (PyG's), got {num_neighbors!r}"
        )
    given = num_neighbors
    if isinstance(given, _NumNeighbors):  # a copy: PyG's get_values caches on the object
        given = _NumNeighbors(given.values, given.default)
    else:
        given = _NumNeighbors(dict(given) if isinstance(given, dict) else list(given))
    per_type = given.get_values(list(edge_types))  # PyG's checks and messages (ValueError)
    lists = list(per_type.values())
    if isinstance(given.values, (list, tuple)):
        lists.append(given.values)
    for ks in lists:
        if not isinstance(ks, (list, tuple)) or not all(
            isinstance(k, int) and not isinstance(k, bool) and k >= -1 for k in ks
        ):
            raise TypeError(
                f"num_neighbors: expected lists of ints >= -1 (one per hop), got {ks!r}"
            )
    num_hops = len(lists[0]) if lists else 0
    return {et: list(ks) for et, ks in per_type.items()}, num_hops


def input_nodes_of(input_nodes, input_id, counts: Mapping[str, int]) -> tuple:
    """PyG's heterogeneous ``input_nodes`` as ``(node_type, ids, input_id or None)``.

    Parameters
    ----------
    input_nodes : str or tuple
        ``node_type`` (all its nodes), ``(node_type, None)`` (the same), ``(node_type,
        ids)`` (a LongTensor, list or range) or ``(node_type, mask)`` (a BoolTensor of one
        entry per node of the type: its nonzero ids).
    input_id : Tensor, optional
        What each seed is reported as (PyG's); default its position, or for a mask its id.
    counts : dict
        ``{node_type: num_nodes}``.

    Examples
    --------
    >>> import torch
    >>> input_nodes_of(("paper", torch.tensor([True, False, True])), None, {"paper": 3})
    ('paper', tensor([0, 2]), tensor([0, 2]))
    """
    if input_nodes is None:
        raise ValueError(
            "input_nodes: a HeteroData needs the seeds' node type: 'paper', "
            "('paper', ids), ('paper', mask) or ('paper', None)"
        )
    if isinstance(input_nodes, str):
        node_type, ids = input_nodes, None
    elif (
        isinstance(input_nodes, (tuple, list))
        and len(input_nodes) == 2
        and isinstance(input_nodes[0], str)
    ):
        node_type, ids = input_nodes
    else:
        raise TypeError(
            "input_nodes: for a HeteroData, a node type (str) or a pair (node_type, ids, "
            f"mask or None); got {type(input_nodes).__name__}"
        )
    if node_type not in counts:
        raise ValueError(
            f"input_nodes: {node_type!r} is not a node type of data ({sorted(counts)})"
        )
    name = f"input_nodes (ids of node type {node_type!r})"
    ids, input_id = input_seeds(ids, counts[node_type], name, input_id)
    return node_type, ids, input_id


def input_seeds(ids, num_nodes: int, name: str, input_id=None) -> tuple:
    """PyG's ``input_nodes`` / ``input_id`` of one node type: ``(seed ids, input_id)`` on
    the CPU.

    Parameters
    ----------
    ids : LongTensor of shape (S,), BoolTensor of shape (num_nodes,), range, or None
        Seed ids, or a mask over the nodes; None: every node.
    num_nodes : int
        Nodes of the type (ids are checked against it).
    name : str
        The argument's name in errors.
    input_id : Tensor of shape (S,), optional
        What each seed is reported as; default None (its position), or, for a mask, its
        node id (as PyG).

    Examples
    --------
    >>> import torch
    >>> input_seeds(torch.tensor([True, False, True]), 3, "input_nodes")
    (tensor([0, 2]), tensor([0, 2]))
    """
    mask = isinstance(ids, torch.Tensor) and ids.dtype == torch.bool
    if ids is None:
        ids = torch.arange(num_nodes)
    else:
        if isinstance(ids, range):
            ids = torch.arange(ids.start, ids.stop, ids.step)
        ids = seed_ids(ids, name, num_nodes, None).cpu()
    if input_id is not None:
        input_id = V.as_tensor(input_id, "input_id", None).cpu()
        if input_id.dim() != 1 or input_id.numel() != ids.numel():
            raise ValueError(
                f"input_id: expected one entry per input node, shape ({ids.numel()},); "
                f"got {tuple(input_id.shape)}"
            )
    elif mask:  # PyG reports a mask's seeds by their node ids
        input_id = ids
    return ids, input_id


__all__ = [
    "SUBGRAPH_TYPES",
    "check_attributes",
    "check_graph",
    "check_sliceable",
    "fanouts",
    "graph_skeleton",
    "input_nodes_of",
    "input_seeds",
    "is_hetero",
    "weighted_relations",
]
