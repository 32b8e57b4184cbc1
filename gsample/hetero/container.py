"""The :class:`HeteroGraph` container: node types with their counts and one ``N x N``
matrix per edge type (``gsample.hetero``'s docstring: *Id spaces*), built from matrices,
``edge_index`` tensors or a PyG ``HeteroData``; types, sizes, per-type id checks. Its
sampling, walk and PyG methods come from :mod:`.sampling`, :mod:`.walks` and
:mod:`gsample.interop.pyg.hetero`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING

import torch

from gsample.base import validate as V
from gsample.formats.csc import CSC
from gsample.hetero.sampling import SamplingMethods
from gsample.hetero.walks import WalkMethods
from gsample.interop.pyg.hetero import PyGOutput
from gsample.matrix.sparse import Matrix

if TYPE_CHECKING:  # PyTorch Geometric is optional: HeteroData only names an argument's type
    from torch_geometric.data import HeteroData

EdgeType = tuple[str, str, str]
"""``(src_type, relation, dst_type)``, three strings."""

EdgeKey = EdgeType | str
"""An edge type, or the name of a relation that only one edge type has."""


class HeteroGraph(SamplingMethods, WalkMethods, PyGOutput):
    """A heterogeneous graph: node types and one adjacency matrix per edge type.

    Parameters
    ----------
    relations : dict
        ``{(src_type, relation, dst_type): matrix}``. A matrix is a whole-graph
        ``gs.Matrix`` whose entry ``(i, j)`` is the edge from source node ``i`` (of
        ``src_type``) to destination node ``j`` (of ``dst_type``), of any size ``>=`` its
        largest id + 1 (``Matrix.from_edge_index(edge_index)`` will do), or an
        ``edge_index`` LongTensor of shape (2, E) (row 0 the sources). Its edge ids are
        kept (positions in its ``edge_index``).
    num_nodes : dict
        ``{node_type: count}`` for every node type (types without edges allowed).

    Notes
    -----
    Every relation is stored as an ``N x N`` matrix over per-type ids, ``N`` the largest
    node count (the module docstring, *Id spaces*); ``H[edge_type]`` returns it. Types are
    listed in sorted order, and every operation visits edge types in that order.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> writes = torch.tensor([[0, 0, 1], [0, 1, 1]])          # author -> paper
    >>> H = gs.HeteroGraph({("author", "writes", "paper"): writes,
    ...                     ("paper", "written_by", "author"): writes.flip(0)},
    ...                    num_nodes={"author": 2, "paper": 3})
    >>> H["writes"].num_nodes, H.num_nodes("paper")
    (3, 3)
    >>> H["writes"][:, torch.tensor([1])].row()                 # authors of paper 1
    tensor([0, 1])
    """

    __slots__ = ("_cache", "_num_nodes", "_rel", "_size", "_steps")

    def __init__(
        self, relations: Mapping[EdgeType, Matrix | torch.Tensor], num_nodes: Mapping[str, int]
    ) -> None:
        self._num_nodes = _check_num_nodes(num_nodes)
        self._size = max(self._num_nodes.values(), default=0)
        if not isinstance(relations, Mapping):
            raise TypeError(
                "relations: expected a dict {(src_type, relation, dst_type): "
                f"gs.Matrix or edge_index}}, got {type(relations).__name__}"
            )
        rel = {}
        device = None
        for et in relations:
            key = _check_edge_type(et, self._num_nodes)
            if key in rel:
                raise ValueError(f"relations: edge type {key!r} given twice")
            m = self._relation(key, relations[et])
            if device is None:
                device = m.device
            elif m.device != device:
                raise ValueError(
                    f"relations[{key!r}]: on {m.device}, while other relations "
                    f"are on {device}; move them to one device"
                )
            rel[key] = m
        self._rel = dict(sorted(rel.items()))
        self._cache = {}
        self._steps = {}  # the compiled sampling steps (SamplingMethods.step_sampler)

    def __getstate__(self):
        # a pickle or copy (a worker process's graph) leaves the compiled steps behind: their
        # lowered programs hold closures, and are traced again on first use
        state = {name: getattr(self, name) for name in self.__slots__}
        state["_steps"] = {}
        return None, state

    def _relation(self, et, value) -> Matrix:
        """``value`` as an ``N x N`` whole-graph matrix, its edges checked against the types."""
        s, _, d = et
        name = f"relations[{et!r}]"
        if isinstance(value, Matrix):
            csc = value.csc
            if csc.row_ids is not None or csc.col_ids is not None:
                raise ValueError(
                    f"{name}: a sub-matrix (sliced, sampled or compacted); pass "
                    "the relation's whole matrix"
                )
            if not isinstance(csc, CSC):
                raise TypeError(f"{name}: expected a gs.Matrix in CSC form")
            if csc.nnz:
                hi = int(csc.rows.max())
                if hi >= self._num_nodes[s]:
                    raise IndexError(
                        f"{name}: source id {hi} is out of range for node type "
                        f"{s!r} ({self._num_nodes[s]} nodes)"
                    )
            deg = csc.degrees()
            n_dst = self._num_nodes[d]
            if deg[n_dst:].any():
                j = n_dst + int(torch.nonzero(deg[n_dst:])[-1])
                raise IndexError(
                    f"{name}: destination id {j} is out of range for node "
                    f"type {d!r} ({n_dst} nodes)"
                )
            V.fits(
                self._size + 1,
                16,
                csc.device,
                "num_nodes",
                f"relations over {self._size} nodes (the largest node type's count)",
            )
            return Matrix(_resize(csc, self._size))
        if isinstance(value, torch.Tensor):
            ei = V.as_tensor(value, name, None)
            if ei.dtype == torch.bool or ei.dtype not in V.INT_DTYPES:
                raise TypeError(
                    f"{name}: an edge_index must be an integer tensor, got dtype {ei.dtype}"
                )
            if ei.dim() != 2 or ei.shape[0] != 2:
                raise ValueError(
                    f"{name}: an edge_index must have shape (2, E), got {tuple(ei.shape)}"
                )
            V.ids(ei[0], f"{name}[0] (sources of type {s!r})", self._num_nodes[s], ei.device)
            V.ids(ei[1], f"{name}[1] (destinations of type {d!r})", self._num_nodes[d], ei.device)
            return Matrix.from_edge_index(ei, num_nodes=self._size)
        raise TypeError(
            f"{name}: expected a gs.Matrix or an edge_index LongTensor (2, E), "
            f"got {type(value).__name__}"
        )

    @classmethod
    def from_pyg(
        cls,
        data: HeteroData,
        weight: str | None = "edge_weight",
        num_nodes: Mapping[str, int] | None = None,
    ) -> HeteroGraph:
        """From a PyG ``HeteroData`` (each ``edge_index`` source -> target, local ids).

        Parameters
        ----------
        data : torch_geometric.data.HeteroData
        weight : str, optional
            An edge attribute to use as a relation's weights where it is present.
        num_nodes : dict, optional
            Node counts overriding ``data[t].num_nodes`` (a type PyG cannot count is
            given ``max id + 1`` over its edges).

        Returns
        -------
        HeteroGraph
            Edge ids are positions in each ``data[edge_type].edge_index``.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> from torch_geometric.data import HeteroData
        >>> data = HeteroData()
        >>> data["author"].num_nodes, data["paper"].num_nodes = 2, 3
        >>> data["author", "writes", "paper"].edge_index = torch.tensor([[0, 1], [2, 2]])
        >>> H = gs.HeteroGraph.from_pyg(data)
        >>> H.edge_types
        [('author', 'writes', 'paper')]
        """
        if not (
            hasattr(data, "node_types")
            and hasattr(data, "edge_types")
            and hasattr(data, "metadata")
        ):
            raise TypeError(
                f"data: expected a torch_geometric HeteroData, got {type(data).__name__}"
            )
        stored, edge_types = data.metadata()
        node_types = list(stored)  # + types only named by edge types
        node_types += [t for et in edge_types for t in (et[0], et[2]) if t not in node_types]
        node_types = list(dict.fromkeys(node_types))
        given = {} if num_nodes is None else dict(num_nodes)
        counts = {}
        for t in node_types:
            if t in given:
                counts[t] = given[t]
                continue
            n = None
            if t in stored:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    n = data[t].num_nodes
            counts[t] = n
        rels = {}
        for et in edge_types:
            store = data[et]
            ei = getattr(store, "edge_index", None)
            if ei is None:
                raise ValueError(
                    f"data[{et!r}]: has no edge_index (a SparseTensor adj_t is "
                    "not supported: give edge_index)"
                )
            w = store[weight] if weight is not None and weight in store else None
            rels[tuple(et)] = (ei, w)
        for t, n in counts.items():  # types PyG cannot count: max id + 1
            if n is None:
                ids = [ei[0] for (s, _, _), (ei, _) in rels.items() if s == t and ei.numel()]
                ids += [ei[1] for (_, _, d), (ei, _) in rels.items() if d == t and ei.numel()]
                counts[t] = max((int(i.max()) + 1 for i in ids), default=0)
        for t, n in given.items():
            counts.setdefault(t, n)
        counts = _check_num_nodes(counts)
        size = max(counts.values(), default=0)
        mats = {}
        for et, (ei, w) in rels.items():
            if w is not None and w.dim() != 1:
                raise ValueError(
                    f"weight: data[{et!r}].{weight} must have one value per "
                    f"edge, got shape {tuple(w.shape)}"
                )
            s, _, d = et
            for t in (s, d):
                if t not in counts:
                    raise ValueError(f"data[{et!r}]: node type {t!r} has no node count")
            name = f"data[{et!r}].edge_index"
            ei = V.as_tensor(ei, name, None)
            if ei.dim() != 2 or ei.shape[0] != 2:
                raise ValueError(f"{name}: expected shape (2, E), got {tuple(ei.shape)}")
            V.ids(ei[0], f"{name}[0] (sources of type {s!r})", counts[s], ei.device)
            V.ids(ei[1], f"{name}[1] (destinations of type {d!r})", counts[d], ei.device)
            mats[et] = Matrix.from_edge_index(ei, num_nodes=size, weight=w)
        return cls(mats, counts)

    # ------------------------------------------------------------------ types and sizes
    @property
    def node_types(self) -> list[str]:
        """Node types, sorted."""
        return sorted(self._num_nodes)

    @property
    def edge_types(self) -> list[EdgeType]:
        """Edge types ``(src_type, relation, dst_type)``, sorted."""
        return list(self._rel)

    def metadata(self) -> tuple[list[str], list[EdgeType]]:
        """``(node_types, edge_types)``, as PyG's ``HeteroData.metadata()`` (for ``to_hetero``)."""
        return self.node_types, self.edge_types

    def num_nodes(self, node_type: str) -> int:
        """Nodes of ``node_type``.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> H = gs.hetero.authors_papers()   # 2 authors write 3 papers; papers cite papers
        >>> H.num_nodes("paper")
        3
        """
        if node_type not in self._num_nodes:
            raise KeyError(
                f"node_type: {node_type!r} is not a node type of this graph ({self.node_types})"
            )
        return self._num_nodes[node_type]

    @property
    def num_nodes_dict(self) -> dict[str, int]:
        """``{node_type: count}``."""
        return {t: self._num_nodes[t] for t in self.node_types}

    def num_edges(self, edge_type: EdgeKey) -> int:
        """Edges of ``edge_type``."""
        return self[edge_type].num_edges

    @property
    def size(self) -> int:
        """``N``: the node count every relation matrix is stored with (the largest type's)."""
        return self._size

    @property
    def device(self) -> torch.device:
        for m in self._rel.values():
            return m.device
        return torch.device("cpu")

    def edge_type(self, key: EdgeKey, name: str = "edge_type") -> EdgeType:
        """The edge type ``key`` names: a ``(src_type, relation, dst_type)`` of this graph,
        or a relation name used by one edge type only."""
        if isinstance(key, tuple) and key in self._rel:
            return key
        if isinstance(key, list) and tuple(key) in self._rel:
            return tuple(key)
        if isinstance(key, str):
            hits = [et for et in self._rel if et[1] == key]
            if len(hits) == 1:
                return hits[0]
            if len(hits) > 1:
                raise ValueError(
                    f"{name}: relation {key!r} names {len(hits)} edge types "
                    f"({hits}); give the (src_type, relation, dst_type) triple"
                )
        raise ValueError(f"{name}: {key!r} is not an edge type of this graph ({self.edge_types})")

    def __getitem__(self, edge_type: EdgeKey) -> Matrix:
        """The relation's matrix, ``N x N`` over per-type ids (entry ``(i, j)``: source ``i``
        -> destination ``j``).

        Examples
        --------
        >>> import torch, gsample as gs
        >>> H = gs.hetero.authors_papers()   # 2 authors write 3 papers; papers cite papers
        >>> A = H["author", "writes", "paper"]       # or H["writes"] when unique
        >>> A.shape                  # (N, N): N the largest node type's count
        (3, 3)
        >>> src, dst, eid = A.edges()
        """
        try:
            return self._rel[self.edge_type(edge_type)]
        except ValueError as e:
            raise KeyError(str(e)) from None

    def __contains__(self, edge_type: object) -> bool:
        try:
            self.edge_type(edge_type)
            return True
        except ValueError:
            return False

    def __repr__(self) -> str:
        nodes = ", ".join(f"{t}={n}" for t, n in self.num_nodes_dict.items())
        edges = ", ".join(f"{et}: {m.num_edges}" for et, m in self._rel.items())
        return f"HeteroGraph(num_nodes={{{nodes}}}, edges={{{edges}}}, device={self.device})"

    def to(self, device: torch.device | str) -> HeteroGraph:
        """This graph with every relation on ``device``.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> H = gs.hetero.authors_papers()   # 2 authors write 3 papers; papers cite papers
        >>> H.to("cpu").device
        device(type='cpu')
        """
        return HeteroGraph({et: m.to(device) for et, m in self._rel.items()}, self._num_nodes)

    # ------------------------------------------------------------------ checks
    def _ids(self, ids, node_type: str, name: str) -> torch.Tensor:
        """Ids of ``node_type``: 1-D integer, in ``[0, num_nodes[node_type])``, int64."""
        return V.ids(ids, name, self._num_nodes[node_type], self.device)

    def _seed_dict(self, seeds, name: str = "seeds") -> dict:
        if not isinstance(seeds, Mapping):
            raise TypeError(
                f"{name}: expected a dict {{node_type: LongTensor of ids}}, got "
                f"{type(seeds).__name__}"
            )
        out = {}
        for t, ids in seeds.items():
            if t not in self._num_nodes:
                raise ValueError(
                    f"{name}: {t!r} is not a node type of this graph ({self.node_types})"
                )
            out[t] = self._ids(ids, t, f"{name}[{t!r}]")
        return out


# ----------------------------------------------------------------------------- helpers
def _check_num_nodes(num_nodes) -> dict:
    if not isinstance(num_nodes, Mapping):
        raise TypeError(
            f"num_nodes: expected a dict {{node_type: count}}, got {type(num_nodes).__name__}"
        )
    out = {}
    for t, n in num_nodes.items():
        if not isinstance(t, str):
            raise TypeError(f"num_nodes: node types must be strings, got {t!r}")
        out[t] = V.count(n, f"num_nodes[{t!r}]")
    return out


def _check_edge_type(et, num_nodes: dict) -> tuple:
    if not (isinstance(et, tuple) and len(et) == 3 and all(isinstance(p, str) for p in et)):
        raise TypeError(
            f"relations: keys must be (src_type, relation, dst_type) triples of strings, got {et!r}"
        )
    for t in (et[0], et[2]):
        if t not in num_nodes:
            raise ValueError(
                f"relations: edge type {et!r} names node type {t!r}, which "
                f"num_nodes does not list ({sorted(num_nodes)})"
            )
    return et


def _resize(csc: CSC, n: int) -> CSC:
    """A whole-graph CSC over ``n`` nodes (columns past the old size empty, or dropped
    when empty)."""
    if csc.num_nodes == n:
        return csc
    ptr = csc.indptr
    if n > csc.num_nodes:
        ptr = torch.cat([ptr, ptr[-1:].expand(n - csc.num_nodes)])
    else:
        ptr = ptr[: n + 1]
    eids = csc.eids if csc.eids is not None else torch.arange(csc.nnz, device=csc.device)
    return CSC(n, ptr.contiguous(), csc.rows, None, None, csc.values, eids)


__all__ = ["EdgeKey", "EdgeType", "HeteroGraph"]
