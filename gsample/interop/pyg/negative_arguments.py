"""The arguments of gsample's link-prediction negatives, read and checked.

:class:`NegativeSampling` is PyG's ``NegativeSampling`` with ``strict`` (the loaders'
``neg_sampling``); :func:`check_mode` / :func:`check_amount` are PyG's rules for its
``mode`` and ``amount``; :func:`graph_edges`, :func:`node_weights` and :func:`time_ranking`
read a :class:`~gsample.interop.pyg.negative_draws.NegativeSampler`'s graph, node weights and
node times (every error names the argument).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch

from gsample.base import validate as V
from gsample.matrix.sparse import Matrix

try:
    from torch_geometric.sampler.base import NegativeSampling as _PygNegativeSampling
    from torch_geometric.sampler.base import NegativeSamplingMode as _PygMode
except ImportError:  # the module imports without PyG; NegativeSampling then raises
    _PygNegativeSampling, _PygMode = object, None

_MODES = ("binary", "triplet")


# ----------------------------------------------------------------------------- mode, amount
def check_mode(mode) -> str:
    """``mode`` as ``"binary"`` or ``"triplet"`` (PyG's ``NegativeSamplingMode`` by value);
    anything else is a ``ValueError`` naming ``mode``."""
    value = getattr(mode, "value", mode)
    if not isinstance(value, str) or value not in _MODES:
        raise ValueError(f"mode: expected 'binary' or 'triplet', got {mode!r}")
    return value


def check_amount(amount, mode: str) -> int | float:
    """PyG's rule: ``amount > 0``, finite; an integer in ``triplet`` mode (``2.0`` is 2).
    A ``TypeError`` / ``ValueError`` naming ``amount``."""
    if isinstance(amount, (bool, np.bool_)) or not isinstance(amount, numbers.Real):
        raise TypeError(f"amount: must be a positive number, got {type(amount).__name__}")
    if not (math.isfinite(float(amount)) and amount > 0):
        raise ValueError(f"amount: must be finite and > 0, got {amount}")
    if mode == "triplet":
        if amount != math.ceil(amount):
            raise ValueError(
                f"amount: must be an integer in 'triplet' mode (negatives per positive), "
                f"got {amount}"
            )
        return math.ceil(amount)
    return amount


# ----------------------------------------------------------------------------- PyG
class NegativeSampling(_PygNegativeSampling):
    """PyG's ``NegativeSampling`` with ``strict``: a link loader's negatives are never an
    edge of the graph (nor a self-pair) when ``strict=True``.

    ``gsample.pyg.LinkNeighborLoader`` and PyG's ``LinkLoader`` over
    ``gsample.pyg.Sampler`` take it as ``neg_sampling`` (a dict with ``"strict"`` works
    with ``LinkNeighborLoader`` too); PyG's own class means ``strict=False``.

    Parameters
    ----------
    mode : {"binary", "triplet"}
    amount : int or float
        Binary: negatives per positive, any positive ratio (``ceil(amount * B)`` a batch);
        triplet: an integer.
    src_weight, dst_weight : Tensor, shape (N,), optional
        Node weights of the drawn sources and destinations (uniform when None).
    strict : bool
        Exclude the graph's edges and self-pairs.

    Examples
    --------
    >>> import torch, gsample as gs, gsample.pyg
    >>> from torch_geometric.data import Data
    >>> A = gs.datasets.rmat(100, 500, seed=0)
    >>> data = Data(edge_index=torch.stack(A.edges()[:2]), num_nodes=100)
    >>> deg = A.degree(axis=0).double()                  # destinations by in-degree
    >>> loader = gsample.pyg.LinkNeighborLoader(
    ...     data, [10, 5], batch_size=256, seed=0,
    ...     neg_sampling=NegativeSampling("binary", 2, dst_weight=deg, strict=True))
    >>> next(iter(loader)).edge_label_index.shape        # 256 positives, 512 negatives
    torch.Size([2, 768])
    """

    def __init__(
        self,
        mode,
        amount: int | float = 1,
        src_weight: torch.Tensor | None = None,
        dst_weight: torch.Tensor | None = None,
        strict: bool = False,
    ):
        if _PygMode is None:
            raise ImportError(
                "NegativeSampling needs PyTorch Geometric: pip install 'gsample[pyg]'"
            )
        name = check_mode(mode)
        amount = check_amount(amount, name)
        super().__init__(name, amount, src_weight, dst_weight)
        self.strict = V.flag(strict, "strict")

    def __repr__(self) -> str:
        return (
            f"NegativeSampling(mode={self.mode.value!r}, amount={self.amount}, "
            f"src_weight={_shape(self.src_weight)}, dst_weight={_shape(self.dst_weight)}, "
            f"strict={self.strict})"
        )


def _shape(t) -> str:
    return "None" if t is None else f"<tensor of shape {tuple(t.shape)}>"


# ----------------------------------------------------------------------------- a sampler's inputs
def node_weights(weight, name: str, num_nodes: int) -> torch.Tensor | None:
    """A node weight vector as float64 on the CPU, checked (None stays None).

    Parameters
    ----------
    weight : Tensor, ndarray or sequence of shape (num_nodes,), or None
        Finite, non-negative, at least one positive.
    name : str
        The argument's name in errors (``src_weight`` / ``dst_weight``).
    num_nodes : int

    Examples
    --------
    >>> node_weights([1, 0, 3], "dst_weight", 3)
    tensor([1., 0., 3.], dtype=torch.float64)
    """
    if weight is None:
        return None
    if not isinstance(weight, (torch.Tensor, np.ndarray, list, tuple)):
        raise TypeError(
            f"{name}: expected a tensor of one weight per node, got {type(weight).__name__}"
        )
    w = V.as_tensor(weight, name, None)
    if w.dim() != 1 or w.numel() != num_nodes:
        raise ValueError(
            f"{name}: expected one weight per node, shape ({num_nodes},); got shape "
            f"{tuple(w.shape)}"
        )
    w = w.detach().to("cpu", torch.float64)
    if not bool(torch.isfinite(w).all()) or bool((w < 0).any()):
        raise ValueError(f"{name}: weights must be finite and non-negative")
    if not bool((w > 0).any()):
        raise ValueError(f"{name}: at least one node needs a positive weight")
    return w


def _typed_counts(num_nodes) -> tuple[int, int] | None:
    """``(N_src, N_dst)`` when ``num_nodes`` is a pair (a typed graph), else None."""
    if isinstance(num_nodes, (tuple, list)):
        if len(num_nodes) != 2:
            raise ValueError(
                f"num_nodes: an int, or a pair (num_src_nodes, num_dst_nodes) for a graph of "
                f"two node types; got {len(num_nodes)} entries"
            )
        return V.count(num_nodes[0], "num_nodes[0]"), V.count(num_nodes[1], "num_nodes[1]")
    return None


def graph_edges(graph, num_nodes) -> tuple[torch.Tensor, torch.Tensor, int, int, bool]:
    """``(src, dst, N_src, N_dst, typed)`` of a ``gs.Matrix`` or an ``edge_index`` of shape
    (2, E); ``typed`` when ``num_nodes`` is a pair (sources and destinations of two node
    types).

    Parameters
    ----------
    graph : gs.Matrix, or LongTensor of shape (2, E)
    num_nodes : int or (int, int), optional
        ``N`` (required with an ``edge_index``), or ``(N_src, N_dst)``.

    Returns
    -------
    src, dst : LongTensor, shape (E,)
        The edges' endpoints, every id checked, on the graph's device.
    N_src, N_dst : int
    typed : bool

    Examples
    --------
    >>> import torch
    >>> graph_edges(torch.tensor([[0, 1], [1, 2]]), 3)
    (tensor([0, 1]), tensor([1, 2]), 3, 3, False)
    """
    typed = _typed_counts(num_nodes)
    if isinstance(graph, Matrix):
        csc = graph.csc
        counts = csc.indptr[1:] - csc.indptr[:-1]
        dst = csc.global_cols().repeat_interleave(counts)
        src = csc.global_rows(csc.rows)
        if typed is not None:  # a relation stored N x N: its ids checked against the types
            src = V.ids(src, "graph's sources", typed[0], None)
            dst = V.ids(dst, "graph's destinations", typed[1], None)
            return src, dst, typed[0], typed[1], True
        if num_nodes is not None and num_nodes != graph.num_nodes:
            raise ValueError(f"num_nodes: {num_nodes} does not match the graph's {graph.num_nodes}")
        return src, dst, graph.num_nodes, graph.num_nodes, False
    if not isinstance(graph, torch.Tensor):
        raise TypeError(
            f"graph: expected a gs.Matrix or an edge_index tensor of shape (2, E), got "
            f"{type(graph).__name__}"
        )
    if graph.dim() != 2 or graph.shape[0] != 2:
        raise ValueError(f"graph: an edge_index must have shape (2, E), got {tuple(graph.shape)}")
    if num_nodes is None:
        raise TypeError("num_nodes: required with an edge_index graph")
    if typed is not None:
        src = V.ids(graph[0], "graph[0]", typed[0], None)
        dst = V.ids(graph[1], "graph[1]", typed[1], None)
        return src, dst, typed[0], typed[1], True
    n = V.count(num_nodes, "num_nodes")
    src = V.ids(graph[0], "graph[0]", n, None)
    dst = V.ids(graph[1], "graph[1]", n, None)
    return src, dst, n, n, False


def time_ranking(node_time, name: str, count: int):
    """``(order, rank, sorted_time)`` on the CPU: the nodes sorted by ``node_time`` (ties by
    id), each node's rank, and the sorted times; None without ``node_time``.

    Parameters
    ----------
    node_time : Tensor of shape (count,), or None
        Finite times.
    name : str
        The argument's name in errors.
    count : int

    Examples
    --------
    >>> import torch
    >>> time_ranking(torch.tensor([5, 1, 5]), "node_time", 3)
    (tensor([1, 0, 2]), tensor([1, 0, 2]), tensor([1, 5, 5]))
    """
    if node_time is None:
        return None
    t = V.as_tensor(node_time, name, None)
    if t.dim() != 1 or t.numel() != count:
        raise ValueError(
            f"{name}: expected one time per node, shape ({count},); got {tuple(t.shape)}"
        )
    if t.is_floating_point() and not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name}: times must be finite")
    t = t.detach().cpu()
    sorted_time, order = torch.sort(t, stable=True)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(count)
    return order, rank, sorted_time


__all__ = [
    "NegativeSampling",
    "check_amount",
    "check_mode",
    "graph_edges",
    "node_weights",
    "time_ranking",
]
