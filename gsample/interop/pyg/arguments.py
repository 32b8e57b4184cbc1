"""PyG's loader arguments for ``gsample.pyg``'s loaders: read, checked, refused by name.

:data:`PYG_ONLY` is the table of PyG's arguments the loaders do not take as parameters (each
accepted only at the value meaning what gsample does: :class:`PygOnly`);
:func:`check_pyg_arguments` applies it, and refuses anything torch's ``DataLoader`` would not
take either, before a loader builds anything. The other checks read the arguments the
homogeneous loaders share: ``batch_size`` and the transforms (:func:`batch_options`), a
``Data`` (:func:`check_data`), ``num_neighbors`` (:func:`check_fanouts`), the graph to sample
(:func:`read_graph`, :func:`weighted_graph` for PyG's ``weight_attr``) and a loader's default
``seed`` (:func:`default_seed`). Every refusal names its argument (docs/architecture.md §6).
"""

from __future__ import annotations

import enum
import inspect
from dataclasses import dataclass

import torch

from gsample.base import validate as V
from gsample.base.random import op_key, stream_state
from gsample.interop.pyg import hetero_loader as _hetero
from gsample.matrix.sparse import Matrix

try:
    from torch_geometric.data import Data as _Data
except ImportError:  # the module imports without PyG; building a loader raises (require)
    _Data = None


def require() -> None:
    """An ``ImportError`` saying how to install PyG, when it is missing (the modules of
    ``gsample.pyg`` import without it; building a loader needs it)."""
    if _Data is None:
        raise ImportError("gsample.pyg needs PyTorch Geometric: pip install 'gsample[pyg]'")


class UnsupportedArgument(TypeError, ValueError):
    """A PyG loader argument, or a value of one, that gsample's loaders cannot honour yet.

    Both a ``TypeError`` (the argument is not one this loader takes, as Python says of an
    unexpected keyword) and a ``ValueError`` (the argument is PyG's, its value is the
    problem, as PyG says of a value it cannot sample): ``except`` either catches it.

    Examples
    --------
    >>> import torch, gsample.pyg
    >>> from torch_geometric.data import Data
    >>> data = Data(edge_index=torch.tensor([[0, 1], [1, 2]]), num_nodes=3)
    >>> gsample.pyg.NeighborLoader(data, [10], sample_direction="backward")
    ... # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    UnsupportedArgument: gsample.pyg.NeighborLoader: sample_direction='backward' is not ...
    """


@dataclass(frozen=True)
class PygOnly:
    """A PyG loader argument gsample's loaders do not take as a parameter of their own.

    Attributes
    ----------
    accepted : tuple
        The values that mean what gsample does anyway (PyG's default, or a hint that
        changes nothing); any other value is refused.
    why : str
        Why another value is refused, and what to use instead (the
        :class:`UnsupportedArgument`'s text).
    """

    accepted: tuple
    why: str


_ANY_BOOL = (False, True)

#: Every argument of PyG's ``NeighborLoader``, ``NodeLoader`` and ``NeighborSampler`` that
#: :class:`NeighborLoader` does not take as a parameter: the one table its checks read
#: (``tests/test_interop_errors.py`` reads PyG's signatures, so a new PyG argument fails a
#: test until it is added here or taken).
PYG_ONLY = {
    "sample_direction": PygOnly(("forward",), "backward (temporal) sampling is not supported yet"),
    "neighbor_sampler": PygOnly(
        (None,),
        "a PyG NeighborSampler samples with PyG, not "
        "gsample; run a gsample sampler through gsample.pyg.Sampler in "
        "PyG's NodeLoader instead",
    ),
    "node_sampler": PygOnly(
        (None,),
        "this loader samples with gsample.pyg.neighbor_sample; "
        "for another sampler pass gsample.pyg.Sampler to PyG's NodeLoader",
    ),
    "custom_cls": PygOnly(
        (None,),
        "PyG's class of the batches of a (FeatureStore, GraphStore) input; a Data or "
        "HeteroData's batches are of its own class",
    ),
    # hints that change nothing here: gsample builds its own CSC from the Data (sorted or
    # not), and worker processes get the graph's tensors as torch shares a dataset's
    "is_sorted": PygOnly(
        _ANY_BOOL, "a hint, True or False: gsample builds its own CSC from the Data either way"
    ),
    "share_memory": PygOnly(
        _ANY_BOOL,
        "a hint, True or False: worker processes get the "
        "graph's tensors as torch shares a dataset's either way",
    ),
}

#: ``torch.utils.data.DataLoader`` arguments the loaders make themselves
_OWN = ("dataset", "sampler", "batch_sampler", "collate_fn")
#: every argument of ``torch.utils.data.DataLoader`` (the rest of a loader's ``**kwargs``)
_DATALOADER_ARGS = frozenset(inspect.signature(torch.utils.data.DataLoader).parameters)


def _accepted(value, accepted: tuple) -> bool:
    """Whether ``value`` is one of ``accepted`` (PyG's enums, as ``SubgraphType``, by value;
    ``True`` is not ``1``)."""
    if isinstance(value, enum.Enum):
        value = value.value
    return any(value is a or (type(value) is type(a) and value == a) for a in accepted)


def shown(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"<tensor of shape {tuple(value.shape)}>"
    if isinstance(value, enum.Enum):
        return repr(value.value)
    text = repr(value)
    return text if len(text) <= 60 else f"<{type(value).__name__}>"


def check_pyg_arguments(loader: str, kwargs: dict) -> dict:
    """Refuse the PyG arguments a loader does not take (:data:`PYG_ONLY`, an
    :class:`UnsupportedArgument`) and any other keyword torch's ``DataLoader`` would not take
    either (a ``TypeError``), naming it; returns ``kwargs`` without the accepted ones of
    :data:`PYG_ONLY` (what is left goes to the ``DataLoader``).

    Parameters
    ----------
    loader : str
        The loader's name, for the messages (``"NeighborLoader"``).
    kwargs : dict
        The loader's ``**kwargs``.

    Examples
    --------
    >>> check_pyg_arguments("NeighborLoader", {"sample_direction": "backward"})
    ... # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    UnsupportedArgument: gsample.pyg.NeighborLoader: sample_direction='backward' is not ...
    >>> check_pyg_arguments("NeighborLoader", {"is_sorted": True, "num_workers": 2})
    {'num_workers': 2}
    """
    rest = {}
    for name, value in kwargs.items():
        rule = PYG_ONLY.get(name)
        if rule is not None:
            if not _accepted(value, rule.accepted):
                raise UnsupportedArgument(
                    f"gsample.pyg.{loader}: {name}={shown(value)} is not supported yet ({rule.why})"
                )
        elif name in _OWN:
            raise TypeError(
                f"gsample.pyg.{loader}: {name} is not an argument (the loader makes its own)"
            )
        elif name not in _DATALOADER_ARGS:
            raise TypeError(
                f"gsample.pyg.{loader}: unexpected keyword argument {name!r} "
                f"(neither an argument of PyG's {loader} nor of "
                "torch.utils.data.DataLoader)"
            )
        else:
            rest[name] = value
    return rest


def default_seed() -> int:
    """A seed drawn from gsample's stream (takes one ordinal, as ``gs.DataLoader`` does)."""
    stream = stream_state()
    key = op_key(stream.seed, stream.ordinal, stream.batch_index)
    stream.ordinal += 1
    return key


def check_adjacency(data, name: str) -> None:
    """Refuse a ``Data`` whose graph is a sparse adjacency (``adj`` / ``adj_t``, as PyG's
    ``ToSparseTensor`` leaves it): PyG samples it ahead of ``edge_index``, gsample reads
    ``edge_index`` only, so sampling would silently see another (or no) graph."""
    for key in ("adj_t", "adj"):
        if getattr(data, key, None) is not None:
            layout = " (transposed: adj_t[dst, src])" if key == "adj_t" else ""
            raise TypeError(
                f"{name}.{key}: a graph stored as a sparse adjacency ({key}) is not "
                "supported yet; gsample samples the Data's edge_index (source, "
                "destination): build the Data without ToSparseTensor, or set edge_index "
                f"from {key}'s COO indices{layout} and delete {key}"
            )


def read_graph(graph) -> Matrix:
    if isinstance(graph, Matrix):
        return graph
    if hasattr(graph, "edge_index"):
        check_adjacency(graph, "graph")
        if graph.edge_index is None:  # a Data of nodes only: no edge to sample, as PyG
            return Matrix.from_edge_index(
                torch.empty(2, 0, dtype=torch.int64), num_nodes=graph.num_nodes
            )
        return Matrix.from_pyg(graph, weight=None)
    raise TypeError(
        f"graph: expected a gs.Matrix or a torch_geometric Data, got {type(graph).__name__}"
    )


def batch_options(data, batch_size, transform, transform_sampler_output, filter_per_worker):
    """``batch_size`` checked and ``filter_per_worker`` decided (PyG's inference: True
    unless ``data`` is on a GPU); the transforms must be callable or None."""
    batch_size = V.count(batch_size, "batch_size", low=1)
    for name, f in (
        ("transform", transform),
        ("transform_sampler_output", transform_sampler_output),
    ):
        if f is not None and not callable(f):
            raise TypeError(f"{name}: must be callable or None, got {type(f).__name__}")
    if filter_per_worker is None:  # PyG's inference: a Data on a GPU filters in main
        filter_per_worker = not getattr(data, "is_cuda", False)
    return batch_size, V.flag(filter_per_worker, "filter_per_worker")


def check_data(data, loader: str = "NeighborLoader") -> None:
    """``data`` must be a homogeneous ``Data`` whose graph is its ``edge_index`` (or none);
    ``loader`` names the gsample.pyg loader in the message. (The loaders take a
    ``HeteroData`` or a ``(FeatureStore, GraphStore)`` before they get here.)"""
    if _Data is None or not isinstance(data, _Data):
        got = type(data).__name__
        if isinstance(data, (tuple, list)):
            got = f"a {got} ({', '.join(type(d).__name__ for d in data)})"
        raise TypeError(
            "data: expected a torch_geometric Data, a HeteroData or a (FeatureStore, "
            f"GraphStore) pair in gsample.pyg.{loader}, got {got}"
        )
    check_adjacency(data, "data")
    _hetero.check_sliceable(data, "data")  # PyG's filter_data slices them per batch


def check_fanouts(num_neighbors) -> None:
    """A homogeneous loader's ``num_neighbors``: a list of ints ``>= -1``, one per hop."""
    if isinstance(num_neighbors, dict):
        raise TypeError(
            "num_neighbors: a dict per edge type is for a HeteroData (this graph is "
            "homogeneous); give a list of ints >= -1, one per hop"
        )
    if isinstance(num_neighbors, int) or not all(
        isinstance(k, int) and not isinstance(k, bool) and k >= -1 for k in num_neighbors
    ):
        raise TypeError(
            f"num_neighbors: expected a list of ints >= -1 (one per hop), got {num_neighbors!r}"
        )


def weighted_graph(data, weight_attr: str) -> tuple[Matrix, torch.Tensor]:
    """The graph to sample by ``data[weight_attr]`` (PyG's ``weight_attr``): its edges of
    positive weight, each with its weight as value, and their positions in
    ``data.edge_index`` (the sample's edge ids are positions in the kept edges)."""
    if not isinstance(weight_attr, str):
        raise TypeError(
            f"weight_attr: the name of an edge attribute (a str) or None, got "
            f"{type(weight_attr).__name__}"
        )
    w = getattr(data, weight_attr, None)
    num_edges = 0 if data.edge_index is None else data.edge_index.shape[1]
    if not isinstance(w, torch.Tensor):
        raise ValueError(f"weight_attr: data has no tensor attribute {weight_attr!r}")
    if w.dim() != 1 or w.numel() != num_edges or not w.is_floating_point():
        raise ValueError(
            f"weight_attr: data.{weight_attr} must hold one floating-point weight per edge, "
            f"shape ({num_edges},); got dtype {w.dtype} and shape {tuple(w.shape)}"
        )
    if not bool(torch.isfinite(w).all()) or bool((w < 0).any()):
        raise ValueError(
            f"weight_attr: data.{weight_attr} must be finite and non-negative (PyG's "
            "sampling weights)"
        )
    kept = torch.nonzero(w > 0).reshape(-1)
    edge_index = data.edge_index[:, kept] if num_edges else torch.empty(2, 0, dtype=torch.long)
    A = Matrix.from_edge_index(edge_index, num_nodes=data.num_nodes, weight=w[kept])
    return A, kept


__all__ = [
    "PYG_ONLY",
    "PygOnly",
    "UnsupportedArgument",
    "batch_options",
    "check_adjacency",
    "check_data",
    "check_fanouts",
    "check_pyg_arguments",
    "default_seed",
    "read_graph",
    "require",
    "shown",
    "weighted_graph",
]
