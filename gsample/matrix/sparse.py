"""``gs.Matrix``: the graph and every sub-matrix of it (docs/architecture.md §1).

Entry ``(i, j)`` is the edge ``i -> j``: column ``j`` holds the in-edges of node
``j``. A sub-matrix keeps global row and column ids. Axis convention, as in
PyTorch: ``A.sum(axis=0)`` reduces over rows and gives one value per column;
``A.sum(axis=1)`` gives one value per row.

Shapes used in the docstrings: ``N`` nodes in the graph, ``R`` rows in the
matrix's row space (``N`` unless rows were sliced, sampled or compacted), ``C``
columns (the frontier, repeats allowed), ``E`` edges.
"""

from __future__ import annotations

import inspect
import numbers
import weakref

import torch
import torch.fx

from gsample.backend import eager_backend, resolve, run_op
from gsample.base import validate as V
from gsample.base.random import next_op_key
from gsample.formats.cache import cache_of
from gsample.formats.csc import CSC
from gsample.formats.derived import recall
from gsample.formats.placement import offload, place, placement_of
from gsample.ir import METHODS, PROPERTIES, SDDMM_OPS, Effect, Kind, Op, OpDef, info
from gsample.ir.checks import check_rows
from gsample.matrix import convert


def _run(ir_op: Op, /, **kwargs):
    """Run one op eagerly: its data checks (which also convert its inputs as the op takes
    them), then the backend: the current setting (``gs.use_backend``), ``"auto"`` resolved
    for the matrix's device (``gsample.backend.backend_for``).

    ``kwargs`` are the op's inputs and attributes as the op table names them; a
    random op takes the next ordinal of the stream (after its checks passed).
    """
    d = info(ir_op)
    if d.remembered and len(kwargs) == 1:
        kept = recall(kwargs.get("A"), ir_op)  # the program that made A computed it
        if kept is not None:
            return kept
    backend = eager_backend(kwargs.get("A"))
    if d.check is not None:
        # inputs the backend's code checks itself (``Impl.checks``) are only converted here,
        # as a compiled program's check does
        own = resolve(backend, ir_op, kwargs.get("A"), inputs=kwargs).checks
        kwargs.update(d.check(**kwargs, **({"in_kernel": own} if own else {})))
    if d.effect is Effect.RANDOM:
        kwargs["key"] = next_op_key()
    return run_op(backend, ir_op, kwargs)


_ALIAS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _alias_table(csc: CSC, probs: torch.Tensor) -> torch.Tensor:
    """The ``alias_table`` op for eager walks, kept per graph for the last weights seen
    (the same tensor, unchanged: the tables are reused, as a compiled sampler's are)."""
    stamp = (id(probs), probs._version, csc.rows._version)
    hit = _ALIAS.get(csc)
    if hit is not None and hit[0] == stamp and hit[1]() is probs:
        return hit[2]
    table = offload(csc, _run(Op.ALIAS_TABLE, A=csc, probs=probs))  # UVA: in host memory
    _ALIAS[csc] = (stamp, weakref.ref(probs), table)
    return table


def _edge_time(edge_time, csc: CSC, count: int | None = None) -> torch.Tensor:
    """``edge_time`` checked as a graph's times by edge id (on the graph's device): one per
    id up to the largest (exactly ``count`` for a graph made from ``count`` edges)."""
    t = V.as_tensor(edge_time, "edge_time", csc.device)
    if (
        t.dtype == torch.bool
        or t.is_complex()
        or not (t.is_floating_point() or t.dtype in V.INT_DTYPES)
    ):
        raise TypeError(
            f"edge_time: must be an integer or floating-point tensor, got dtype {t.dtype}"
        )
    if count is not None:
        need = count
    elif csc.eids is None:
        need = csc.nnz
    else:
        need = int(csc.eids.max()) + 1 if csc.nnz else 0
    exact = count is not None or csc.eids is None
    if t.dim() != 1 or t.shape[0] < need or (exact and t.shape[0] != need):
        raise ValueError(
            f"edge_time: expected one time per edge id (shape ({need},)), got shape "
            f"{tuple(t.shape)}"
        )
    if t.is_floating_point() and bool(torch.isnan(t).any()):
        raise ValueError("edge_time: NaN is not a time (give every edge a time)")
    return t


def _weight(weight, name: str, nnz: int, device):
    if weight is None:
        return None
    w = V.as_tensor(weight, name, device)
    if w.dim() != 1 or w.shape[0] != nnz:
        raise ValueError(
            f"{name}: expected one value per edge (shape ({nnz},)), got shape {tuple(w.shape)}"
        )
    return w if w.is_floating_point() else w.to(torch.float32)


class EdgeMapOperators:
    """Python's arithmetic operators as edge maps (``A * 2``, ``1 / A``, ``A ** 2``, ``-A``),
    for a class that defines ``_edge_map(op, other, reverse=False)`` and ``_negate()``:
    :class:`Matrix`, and the partitioned graph's column slice (``gsample.distributed``)."""

    def __add__(self, other):
        return self._edge_map("add", other)

    def __radd__(self, other):
        return self._edge_map("add", other, True)

    def __sub__(self, other):
        return self._edge_map("sub", other)

    def __rsub__(self, other):
        return self._edge_map("sub", other, True)

    def __mul__(self, other):
        return self._edge_map("mul", other)

    def __rmul__(self, other):
        return self._edge_map("mul", other, True)

    def __truediv__(self, other):
        return self._edge_map("div", other)

    def __rtruediv__(self, other):
        return self._edge_map("div", other, True)

    def __pow__(self, other):
        return self._edge_map("pow", other)

    def __neg__(self):
        return self._negate()


class Matrix(EdgeMapOperators):
    """A sparse adjacency matrix over global node ids.

    Build one with :meth:`from_edge_index`, :meth:`from_csc`, :meth:`from_scipy`,
    :meth:`from_networkx`, :meth:`from_pyg`, :func:`gsample.datasets.read_snap` or
    :func:`gsample.datasets.rmat`. Every operator returns a new matrix or tensor.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A = gs.Matrix.from_edge_index(torch.tensor([[0, 1, 2], [1, 2, 0]]))
    >>> A.num_nodes, A.num_edges
    (3, 3)
    >>> A[:, torch.tensor([2])].row()
    tensor([1])
    """

    __slots__ = ("_csc", "_edge_time")

    def __init__(self, csc: CSC, edge_time: torch.Tensor | None = None):
        if not isinstance(csc, CSC):
            raise TypeError(
                "Matrix: build one with Matrix.from_edge_index, from_csc, from_scipy, "
                "from_networkx or from_pyg"
            )
        self._csc = csc
        # per edge id (not per stored edge): the graph's times, which a slice's eids index
        self._edge_time = None if edge_time is None else _edge_time(edge_time, csc)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_edge_index(
        cls, edge_index, num_nodes: int | None = None, weight=None, edge_time=None
    ) -> Matrix:
        """The graph of edges ``edge_index[0] -> edge_index[1]``.

        Parameters
        ----------
        edge_index : LongTensor, shape (2, E)
            Source and destination ids; entry ``(src, dst)`` is set, so column
            ``dst`` holds the in-edges of ``dst``.
        num_nodes : int, optional
            Number of nodes ``N``; default ``edge_index.max() + 1``.
        weight : Tensor, shape (E,), optional
            Edge weights (the matrix's values); default 1.0 everywhere.
        edge_time : Tensor, shape (E,), optional
            A time per edge (integer or floating point, no NaN), by position in
            ``edge_index`` (:attr:`edge_time`): temporal sampling's ``edge_time``.

        Returns
        -------
        Matrix
            ``N x N``, each column's edges by row id, ties in input order; original edge
            ids are positions in ``edge_index`` (none are stored when the edges came in that
            order already: the ids are then the CSC positions).

        Notes
        -----
        Built with little memory beyond the CSC it returns, at any size (scratch of about
        3 bytes an edge): edges counted per column, bucketed by range of columns, then
        one stable sort per range (``gsample.matrix.convert``). ``edge_index`` of any
        integer dtype is read as it is (int32 is not widened first).

        Examples
        --------
        >>> import torch, gsample as gs
        >>> A = gs.Matrix.from_edge_index(torch.tensor([[0, 0], [1, 2]]), num_nodes=4)
        >>> A[:, torch.tensor([1, 2])].edges()
        (tensor([0, 0]), tensor([1, 2]), tensor([0, 1]))
        """
        ei = V.as_tensor(edge_index, "edge_index", None)
        if ei.dtype == torch.bool or ei.dtype not in V.INT_DTYPES:
            raise TypeError(f"edge_index: must be an integer tensor, got dtype {ei.dtype}")
        if ei.dim() != 2 or ei.shape[0] != 2:
            raise ValueError(f"edge_index: expected shape (2, E), got {tuple(ei.shape)}")
        # any integer dtype is read as it is (a widened copy would cost 8 bytes an edge)
        if num_nodes is None:
            num_nodes = int(ei.max()) + 1 if ei.numel() else 0
        num_nodes = V.count(num_nodes, "num_nodes")
        V.fits(num_nodes + 1, 16, ei.device, "num_nodes", f"a graph of {num_nodes} nodes")
        convert.check_ids(ei[0], "edge_index[0] (sources)", num_nodes)
        convert.check_ids(ei[1], "edge_index[1] (destinations)", num_nodes)
        w = _weight(weight, "weight", ei.shape[1], ei.device)
        csc = convert.csc_from_edges(ei[0], ei[1], num_nodes, w)
        out = cls(csc)
        out._edge_time = None if edge_time is None else _edge_time(edge_time, csc, ei.shape[1])
        return out

    @classmethod
    def from_csc(
        cls, indptr, indices, num_nodes: int | None = None, weight=None, edge_time=None
    ) -> Matrix:
        """The graph whose column ``j`` holds rows ``indices[indptr[j]:indptr[j + 1]]``.

        Parameters
        ----------
        indptr : LongTensor, shape (N + 1,)
            Non-decreasing offsets, ``indptr[0] == 0`` and ``indptr[-1] == E``.
        indices : LongTensor, shape (E,)
            Source (row) id of each edge.
        num_nodes : int, optional
            Must equal ``len(indptr) - 1`` when given (the matrix is square).
        weight : Tensor, shape (E,), optional
            Edge weights.
        edge_time : Tensor, shape (E,), optional
            A time per edge, by position in ``indices`` (:attr:`edge_time`).

        Returns
        -------
        Matrix
            ``N x N``; a column whose rows are not ascending is sorted (stable: equal rows
            keep their order), as :meth:`from_edge_index` orders it. Edge ids are positions
            in ``indices``: stored only when a column was sorted (else the CSC positions
            are the ids). The order is checked in one pass and only unsorted columns are
            sorted; ``indptr`` and ``indices`` are copied (the graph never aliases them).

        Examples
        --------
        >>> import torch, gsample as gs
        >>> A = gs.Matrix.from_csc(torch.tensor([0, 1, 3]), torch.tensor([1, 0, 1]))
        >>> A.sum(axis=0)
        tensor([1., 2.])
        """
        ptr = V.as_tensor(indptr, "indptr", None)
        idx = V.as_tensor(indices, "indices", ptr.device)
        for t, name in ((ptr, "indptr"), (idx, "indices")):
            if t.dtype == torch.bool or t.dtype not in V.INT_DTYPES or t.dim() != 1:
                raise TypeError(
                    f"{name}: must be a 1-D integer tensor, got dtype {t.dtype} "
                    f"and shape {tuple(t.shape)}"
                )
        if ptr.numel() == 0:
            raise ValueError("indptr: must have at least one element (N + 1 offsets)")
        n = ptr.numel() - 1
        if num_nodes is not None and V.count(num_nodes, "num_nodes") != n:
            raise ValueError(f"num_nodes: {num_nodes} does not match len(indptr) - 1 = {n}")
        ptr = ptr.to(torch.int64)
        if int(ptr[0]) != 0 or int(ptr[-1]) != idx.numel():
            raise ValueError(
                f"indptr: must start at 0 and end at len(indices) = {idx.numel()}, "
                f"got {int(ptr[0])} and {int(ptr[-1])}"
            )
        if n and bool((ptr[1:] < ptr[:-1]).any()):
            raise ValueError(
                "indptr: must be non-decreasing (an int32 indptr overflows past "
                "2**31 - 1 edges: pass int64)"
            )
        convert.check_ids(idx, "indices", n)
        w = _weight(weight, "weight", idx.numel(), ptr.device)
        out = cls(convert.csc_from_columns(ptr, idx, n, w))
        if edge_time is not None:
            out._edge_time = _edge_time(edge_time, out._csc, idx.numel())
        return out

    @classmethod
    def from_scipy(cls, matrix, weight: bool = True) -> Matrix:
        """From a square ``scipy.sparse`` matrix; entry ``(i, j)`` is the edge ``i -> j``.

        Parameters
        ----------
        matrix : scipy.sparse matrix or array, shape (N, N)
        weight : bool
            Keep the stored values as edge weights (default) or drop them.

        Examples
        --------
        >>> import gsample as gs
        >>> import scipy.sparse as sp
        >>> A = gs.Matrix.from_scipy(sp.coo_matrix(([2.0], ([0], [1])), shape=(2, 2)))
        >>> A.values
        tensor([2.], dtype=torch.float64)
        """
        return convert.from_scipy(cls, matrix, weight)

    @classmethod
    def from_networkx(cls, graph, weight: str | None = None) -> Matrix:
        """From a networkx graph; nodes are numbered in ``graph.nodes`` order.

        An undirected graph gives both directions of every edge but self-loops (ids
        ``0..m-1`` for ``u -> v`` as listed by ``graph.edges``, then ``v -> u`` for the
        edges with ``u != v``, in the same order).
        ``weight`` names the edge attribute to use as weight (missing: 1.0).

        Examples
        --------
        >>> import gsample as gs
        >>> import networkx as nx
        >>> gs.Matrix.from_networkx(nx.path_graph(3)).num_edges
        4
        """
        return convert.from_networkx(cls, graph, weight)

    @classmethod
    def from_pyg(
        cls, data, weight: str | None = "edge_weight", edge_time: str | None = None
    ) -> Matrix:
        """From a PyG ``Data`` (``edge_index`` is source -> target, PyG's default flow).

        ``weight`` names an edge attribute to use as weights when present; ``edge_time``
        an edge attribute (one time per edge) to keep as :attr:`edge_time`.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> from torch_geometric.data import Data
        >>> gs.Matrix.from_pyg(Data(edge_index=torch.tensor([[0], [1]]), num_nodes=2)).num_edges
        1
        """
        return convert.from_pyg(cls, data, weight, edge_time)

    # ------------------------------------------------------------------ properties
    @property
    def num_nodes(self) -> int:
        """Nodes in the graph (the size of the global id space)."""
        return self._csc.num_nodes

    @property
    def num_edges(self) -> int:
        """Edges stored in this matrix, ``E``."""
        return self._csc.nnz

    @property
    def shape(self) -> tuple:
        """``(R, C)``: rows in the row space, columns in the column space."""
        return (self._csc.num_rows, self._csc.num_cols)

    @property
    def device(self) -> torch.device:
        return self._csc.device

    @property
    def edge_time(self) -> torch.Tensor | None:
        """The graph's time of every edge, by edge id (shape ``(E,)``: ``edge_time[e]`` is
        edge ``e``'s), or None.

        Set by the constructors' ``edge_time=`` (:func:`gsample.datasets.read_snap` keeps a
        SNAP file's timestamp column) or :meth:`with_edge_time`; :meth:`to` moves it. The
        matrices an op returns carry none, but their edge ids index the graph's:
        ``A.edge_time[S.edges()[2]]`` are the times of ``S``'s edges, in ``S``'s edge order
        (what :meth:`temporal_sample` takes as ``edge_time`` when ``S`` is ``A``).

        Examples
        --------
        >>> import torch, gsample as gs
        >>> A = gs.Matrix.from_edge_index(torch.tensor([[0, 2], [1, 1]]),
        ...                               edge_time=torch.tensor([5, 3]))
        >>> A.edge_time[A.edges()[2]]                   # column 1's edges, by row id
        tensor([5, 3])
        """
        return self._edge_time

    def with_edge_time(self, edge_time) -> Matrix:
        """This matrix (the same storage) with :attr:`edge_time` set: one time per edge id.

        Parameters
        ----------
        edge_time : Tensor, shape (E,), or None
            Integer or floating point, no NaN; ``E`` covers every edge id of the matrix
            (its edges for a graph built from an edge list). None removes the times.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> A = gs.datasets.rmat(100, 500, seed=0)
        >>> T = A.with_edge_time(torch.arange(A.num_edges))
        >>> T.edge_time.shape == (A.num_edges,)
        True
        """
        return Matrix(self._csc, edge_time)

    @property
    def values(self) -> torch.Tensor:
        """Edge values (weights), shape (E,) (or (E, F) after a feature SDDMM); 1.0 when none."""
        return self._csc.value_tensor()

    @property
    def row_ids(self) -> torch.Tensor:
        """Global ids of the row space, shape (R,), aligned with ``sum(axis=1)``."""
        return self._csc.all_row_ids()

    @property
    def col_ids(self) -> torch.Tensor:
        """Global ids of the columns, shape (C,), aligned with ``sum(axis=0)``."""
        return self._csc.global_cols()

    @property
    def csc(self) -> CSC:
        """The underlying storage (see :class:`gsample.formats.CSC`)."""
        return self._csc

    @property
    def placement(self) -> str:
        """Where the arrays live: ``"device"`` (the memory of :attr:`device`), ``"uva"``
        (pinned host memory that the GPU :attr:`device` reads through unified virtual
        addressing) or ``"shared"`` (CPU memory shared by the processes of a host,
        :mod:`gsample.distributed`). See :meth:`to`."""
        return placement_of(self._csc)

    @property
    def cache(self):
        """The GPU cache of a UVA matrix's most-read adjacency
        (:class:`gsample.formats.cache.GraphCache`: ``.stats()`` gives its hit rate), or None.
        See :meth:`to`."""
        return cache_of(self._csc)

    def to(
        self,
        device,
        placement: str = "device",
        budget: int | None = None,
        cache: int | str | None = None,
        cache_priority=None,
    ) -> Matrix:
        """This matrix for ``device``: its arrays in the device's memory, or in pinned host memory.

        Parameters
        ----------
        device : torch.device or str
            Where samples are made (and returned).
        placement : {"device", "uva", "auto"}
            ``"device"``: every array in the device's memory. ``"uva"`` (a CUDA device):
            the arrays stay in pinned host memory and the GPU reads them in place through
            unified virtual addressing, only what a sampler touches crossing the bus; a
            graph larger than the GPU's memory can be sampled so, and the samples are
            identical to the device-resident graph's. ``"auto"``: ``"device"`` when the
            graph takes at most half of the GPU's free memory (of ``budget``), else
            ``"uva"`` (:mod:`gsample.formats.placement`). Both backends run on a UVA
            matrix: the CUDA backend's kernels and PyTorch's read the mapped arrays alike
            (an op over the whole graph, such as ``A.sum(axis=0)``, reads all of it over
            the bus, and its result is a device tensor).
        budget : int, optional
            With ``"auto"`` (or ``cache="auto"``): decide as if the GPU had ``budget`` bytes
            free.
        cache : int or "auto", optional
            With ``"uva"`` (or ``"auto"`` choosing it): bytes of device memory for a cache
            of the adjacency sampling reads most: ``indptr``, then the rows and edge ids of
            the columns of most expected reads per byte (:mod:`gsample.formats.cache`;
            column slicing, node-wise sampling and random walks read them from the device;
            :attr:`cache` reports its hit rate). Samples are the same with or without it.
            ``"auto"``: half the GPU's free memory (of ``budget``), at most what caching
            the whole graph takes (:func:`gsample.formats.cache.auto_budget`). Where
            ``"auto"`` keeps the graph on the device, ``cache`` is not used; with
            ``"device"`` it is an error.
        cache_priority : Tensor, shape (N,), optional
            Expected reads of each node's column (e.g. counted on a few presampled
            mini-batches); default: out-degrees.

        Returns
        -------
        Matrix
            ``placement`` is ``"device"`` or ``"uva"`` (:attr:`placement`).

        Examples
        --------
        >>> import gsample as gs
        >>> A = gs.datasets.rmat(100, 500, seed=0)
        >>> A.to("cpu").device
        device(type='cpu')

        On a GPU:

        >>> H = A.to("cuda", placement="uva")  # pinned host memory  # doctest: +SKIP
        >>> H.placement  # doctest: +SKIP
        'uva'
        >>> A.to("cuda", placement="auto", budget=1 << 20).placement  # 1 MiB GPU  # doctest: +SKIP
        'uva'
        >>> A.to("cuda", placement="uva", cache=64 << 20).cache.nbytes <= 64 << 20  # doctest: +SKIP
        True
        >>> H = A.to("cuda", placement="uva", cache="auto", budget=1 << 30)  # doctest: +SKIP
        >>> H.cache.nbytes <= 1 << 29  # doctest: +SKIP
        True
        """
        out = Matrix(place(self._csc, device, placement, budget, cache, cache_priority))
        t = self._edge_time
        if t is not None:  # a UVA graph's edge-sized arrays stay in host memory: times too
            out._edge_time = offload(out._csc, t.to(out.device))
        return out

    def __repr__(self) -> str:
        r, c = self.shape
        return (
            f"Matrix(num_nodes={self.num_nodes}, shape=({r}, {c}), num_edges={self.num_edges}, "
            f"device={self.device}, placement={self.placement!r}, "
            f"weighted={self._csc.values is not None})"
        )

    # ------------------------------------------------------------------ extract
    def _index(self, key):
        """A slice or an int as ids; anything else as given (the op's check converts it)."""
        if isinstance(key, slice):
            if key == slice(None):
                return None
            return torch.arange(self.num_nodes, device=self.device)[key]
        if isinstance(key, numbers.Integral) and not isinstance(key, bool):
            return [key]
        return key

    def __getitem__(self, key) -> Matrix:
        """``A[:, cols]``, ``A[rows, :]`` or ``A[rows, cols]``: a sub-matrix.

        Parameters
        ----------
        key : tuple (rows, cols)
            Each a 1-D integer tensor of global ids, a list, or ``:``. ``cols`` may
            repeat a node (each repeat is its own column, sampled independently);
            ``rows`` may not. Ids outside this matrix's spaces give empty rows or
            columns.

        Returns
        -------
        Matrix
            Shape ``(len(rows) or R, len(cols) or C)``, keeping global ids, edge
            values and edge ids.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> A = gs.datasets.rmat(100, 500, seed=0)
        >>> sub = A[:, torch.tensor([0, 2])]      # in-edges of nodes 0 and 2
        >>> sub.shape
        (100, 2)
        >>> sub.column()
        tensor([0, 2])
        """
        if not isinstance(key, tuple) or len(key) != 2:
            raise TypeError("Matrix indexing: use A[rows, cols], e.g. A[:, seeds]")
        rows = self._index(key[0])
        cols = self._index(key[1])
        if rows is not None:  # checked before the column slice runs
            rows = check_rows(self._csc, rows)["rows"]
        csc = self._csc
        if cols is not None:
            csc = _run(Op.SLICE_COLS, A=csc, cols=cols)
        if rows is not None:
            csc = _run(Op.SLICE_ROWS, A=csc, rows=rows)
        return Matrix(csc)

    # ------------------------------------------------------------------ compute: edge maps
    def _edge_map(self, op: str, other, reverse: bool = False) -> Matrix:
        if isinstance(other, Matrix):
            if not self._csc.same_structure(other._csc):
                raise ValueError(
                    "other: matrices in an edge-map must have the same sparsity "
                    "(derive one from the other with edge-map operators)"
                )
            other = other.values
        other = V.scalar_or_edges(other, "other", self.num_edges, self.device)
        tensor = other if isinstance(other, torch.Tensor) else None
        scalar = None if tensor is not None else other
        return Matrix(
            _run(Op.EDGE_MAP, A=self._csc, op=op, reverse=reverse, scalar=scalar, other=tensor)
        )

    def _negate(self) -> Matrix:
        return Matrix(_run(Op.EDGE_MAP, A=self._csc, op="neg", reverse=False, scalar=None))

    # ------------------------------------------------------------------ compute: broadcasts
    def _broadcast(self, op: str, v, axis) -> Matrix:
        v = V.as_tensor(v, "v", self.device)
        return Matrix(_run(Op.EDGE_BROADCAST, A=self._csc, op=op, vector=v, axis=V.axis(axis)))

    def mul(self, v, axis: int) -> Matrix:
        """Multiply every edge by a per-column (``axis=0``) or per-row (``axis=1``) value.

        Parameters
        ----------
        v : Tensor, shape (C,) for ``axis=0`` (edge ``(i, j)`` uses ``v[j]``, the
            shape ``sum(axis=0)`` returns) or (R,) for ``axis=1`` (uses ``v[i]``).
        axis : {0, 1}

        Examples
        --------
        >>> import torch, gsample as gs
        >>> A = gs.datasets.rmat(100, 500, seed=0)        # 100 nodes, 500 edges
        >>> seeds = torch.tensor([0, 1, 2])
        >>> sub = A[:, seeds]
        >>> normalised = sub.div(sub.sum(axis=0), axis=0)   # columns sum to 1
        >>> normalised.sum(axis=0)
        tensor([1.0000, 1.0000, 1.0000])
        """
        return self._broadcast("mul", v, axis)

    def div(self, v, axis: int) -> Matrix:
        """Divide every edge by a per-column or per-row value (see :meth:`mul`)."""
        return self._broadcast("div", v, axis)

    def add(self, v, axis: int) -> Matrix:
        """Add a per-column or per-row value to every edge (see :meth:`mul`)."""
        return self._broadcast("add", v, axis)

    def sub(self, v, axis: int) -> Matrix:
        """Subtract a per-column or per-row value from every edge (see :meth:`mul`)."""
        return self._broadcast("sub", v, axis)

    # ------------------------------------------------------------------ compute: reductions
    def _reduce(self, op: str, axis) -> torch.Tensor:
        return _run(Op.REDUCE, A=self._csc, op=op, axis=V.axis(axis))

    def sum(self, axis: int | None = None) -> torch.Tensor:
        """Sum of edge values per column (``axis=0``, shape (C,)), per row (``axis=1``, (R,))
        or of every edge (no axis: a 0-dim tensor).

        An empty column or row sums to 0. Sums are bit-reproducible run to run. The sum of
        every edge is also independent of the order of the terms: the same bits on every
        device and backend, eager or compiled, super-batched or not, and whether or not a
        compiler pass evaluates it from other intermediate values (its terms become 62-bit
        fixed-point integers at the largest term's binary exponent, added exactly; a term
        more than 62 binary orders below the largest is rounded to that grain). NaN, or
        both infinities, give NaN; else an infinity wins. Floating-point values keep their
        dtype; integer or boolean ones give the exact int64 sum.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> A = gs.datasets.rmat(100, 500, seed=0)        # 100 nodes, 500 edges
        >>> seeds = torch.tensor([0, 1, 2])
        >>> in_degree = A.sum(axis=0)          # one value per column
        >>> in_degree.shape
        torch.Size([100])
        >>> sub = A[:, seeds] ** 2
        >>> p = sub.sum(axis=1)                # LADIES's bias: one value per row
        >>> p = p / sub.sum().clamp(min=1e-30)  # normalised by the sum of every edge
        >>> p.shape
        torch.Size([100])
        """
        if axis is None:
            return _run(Op.TOTAL, A=self._csc, op="sum")
        return self._reduce("sum", axis)

    def max(self, axis: int) -> torch.Tensor:
        """Largest edge value per column (``axis=0``) or row (``axis=1``); 0 where empty."""
        return self._reduce("max", axis)

    def mean(self, axis: int) -> torch.Tensor:
        """Mean edge value per column (``axis=0``) or row (``axis=1``); 0 where empty."""
        return self._reduce("mean", axis)

    # ------------------------------------------------------------------ compute: products
    def __matmul__(self, dense) -> torch.Tensor:
        """``A @ D``: ``D`` has one row per column, shape (C,) or (C, F); returns (R,) or (R, F).

        Examples
        --------
        >>> import torch, gsample as gs
        >>> A = gs.datasets.rmat(100, 500, seed=0)        # 100 nodes, 500 edges
        >>> seeds = torch.tensor([0, 1, 2])
        >>> out = A[:, seeds] @ torch.ones(len(seeds))   # per-row sum over the frontier
        >>> out.shape
        torch.Size([100])
        """
        return _run(Op.SPMM, A=self._csc, dense=V.as_tensor(dense, "D", self.device))

    @property
    def T(self) -> Matrix:
        """The transpose: rows become columns, shape ``(C, R)``.

        ``A.T @ D`` with ``D`` of one row per row of ``A`` (shape (R, F)) gives
        ``(C, F)``: the sum over each column's in-edges, as GNN aggregation needs.
        """
        return Matrix(_run(Op.TRANSPOSE, A=self._csc))

    # ------------------------------------------------------------------ select
    def individual_sample(
        self, k: int, probs=None, replace: bool = False, method: str = "cdf"
    ) -> Matrix:
        """Sample ``k`` edges in every column (node-wise sampling).

        Parameters
        ----------
        k : int
            Edges per column, ``k >= 0``. Without replacement a column with fewer
            than ``k`` edges (or positive-probability edges) returns all of them.
        probs : Matrix or Tensor, optional
            Unnormalised probabilities: a matrix of the same sparsity (``A ** 2``)
            or a tensor of shape (E,). Finite, non-negative, and not all zero in a
            column that has edges. ``None`` samples uniformly.
        replace : bool
            With replacement every non-empty column returns exactly ``k`` edges
            (repeats appear as repeated edges).
        method : {"cdf", "alias"}
            How weighted draws with replacement are made: ``"cdf"`` (default) searches
            each draw in the column's running sum of ``probs``; ``"alias"`` reads alias
            tables (Walker's method: one slot and one coin per draw), built once per graph
            in a compiled sampler when ``probs`` depend on the graph only (pre-processing,
            Skywalker+'s offline mode), else per call for the frontier's columns. The same
            distribution, other draws. Needs ``replace=True`` when ``probs`` is given;
            without ``probs`` it changes nothing.

        Returns
        -------
        Matrix
            Same row and column spaces; each column keeps its selected edges in
            their original order, with their values and edge ids.

        Notes
        -----
        Uniform sampling without replacement is exactly uniform over k-subsets.
        Weighted sampling without replacement has the distribution of ``k``
        sequential draws, each proportional to weight among the edges not yet
        drawn (exponential keys, as A-Res); the marginal inclusion probability is
        therefore *not* proportional to weight. Every draw is keyed by the seed,
        the op ordinal, the mini-batch index and the column's position in the
        frontier, so repeated columns draw independently.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> A = gs.datasets.rmat(100, 500, seed=0)        # 100 nodes, 500 edges
        >>> seeds = torch.tensor([0, 1, 2])
        >>> s = A[:, seeds].individual_sample(5)                    # GraphSAGE layer
        >>> s.shape, s.degree(axis=0)          # node 1 has 10 in-edges, the others 1
        ((100, 3), tensor([1, 5, 1]))
        >>> s = A[:, seeds].individual_sample(5, probs=A[:, seeds].values, replace=True)
        >>> sub = A[:, seeds]
        >>> s = sub.individual_sample(5, probs=sub, replace=True, method="alias")
        >>> s.degree(axis=0)
        tensor([5, 5, 5])
        """
        k = V.count(k)
        replace = V.flag(replace, "replace")
        method = info(Op.INDIVIDUAL_SAMPLE).attribute("method").check(method)
        if method == "alias" and probs is not None and not replace:
            raise ValueError(
                "method: 'alias' draws with replacement (replace=True); without "
                "replacement weighted draws use exponential keys (method='cdf')"
            )
        p = None
        if probs is not None:
            p = V.as_tensor(self._probs_values(probs), "probs", self.device)
        extra = {"method": method} if method != "cdf" else {}
        return Matrix(
            _run(Op.INDIVIDUAL_SAMPLE, A=self._csc, probs=p, k=k, replace=replace, **extra)
        )

    def _probs_values(self, probs):
        """``probs`` as edge weights: a matrix of this one's sparsity gives its values."""
        if isinstance(probs, Matrix):
            if not self._csc.same_structure(probs._csc):
                raise ValueError(
                    "probs: a probability matrix must have the same sparsity "
                    "as the matrix being sampled"
                )
            return probs.values
        return probs

    def temporal_sample(
        self,
        cols,
        k: int,
        time=None,
        edge_time=None,
        seed=None,
        probs=None,
        replace: bool = False,
        strategy: str = "uniform",
        window=None,
    ) -> Matrix:
        """Sample ``k`` in-edges per column of ``A[:, cols]`` among those allowed at the
        column's time, each column's draws keyed by its seed: temporal and disjoint
        node-wise sampling, one op (the slice and the time filter are never materialised).

        Parameters
        ----------
        cols : LongTensor, shape (C,)
            The frontier: node ids, repeats allowed (each repeat its own column).
        k : int
            Edges per column, ``>= 0``, or ``-1`` for every allowed edge. A column with
            fewer allowed edges (or positive-weight ones) keeps them all (without
            replacement).
        time : Tensor, shape (C,), optional
            Each column's time (its seed's): the column's allowed edges are those with
            ``edge_time <= time[c]`` (and ``> time[c] - window``). Integer or floating
            point, as ``edge_time``; no NaN. None: every edge is allowed.
        edge_time : Tensor, shape (E,), optional
            The time of each of this matrix's edges, in its edge order (``values`` and
            ``edges()``'s): ``A.edge_time[A.edges()[2]]``. Given with ``time``. A node-level
            time is the edge time ``node_time[A.edges()[0]]`` (a neighbour is allowed when
            its own time is). Sorted by column once per graph and tensor (kept with the
            graph): keep passing the same tensor.
        seed : LongTensor, shape (C,), optional
            Each column's seed index, ``>= 0`` (the seed whose tree the column grows):
            column ``c`` draws with the key ``combine(op key, seed[c])`` and its position
            among the columns of its seed, so each seed's draws are independent of the
            other seeds' frontiers. None: each column draws by its position in ``cols``.
        probs : Matrix or Tensor, optional
            Weights of this matrix's edges (a matrix of its sparsity, or shape (E,)):
            finite, non-negative. None: uniform.
        replace : bool
            Draw with replacement (``k`` draws per column with a candidate).
        strategy : {"uniform", "last"}
            ``"last"``: the candidates are the ``k`` most recent allowed edges (largest
            ``(edge_time, edge id)``), then drawn as ``strategy="uniform"`` draws (without
            replacement, uniformly: all of them). Needs times.
        window : number, optional
            Only edges of time in ``(time[c] - window, time[c]]``; an integer for integer
            times. Needs times.

        Returns
        -------
        Matrix
            Shape ``(R, C)``: this matrix's row space, column space ``cols``; each column's
            sampled edges in their order, with their values and edge ids.

        Notes
        -----
        Without times and ``seed``, and for uniform draws or weighted ones without
        replacement, it draws exactly what ``A[:, cols].individual_sample(k, probs,
        replace)`` draws; weighted draws with replacement are alias draws (Walker's
        method over the allowed edges: exact per column). With times, the allowed edges
        are enumerated by ``(edge_time, edge id)``: another enumeration, the same laws
        (uniform over k-subsets; sequential draws proportional to weight).
        ``gsample.backend.torch.temporal`` documents the algorithm and keys.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> A = gs.datasets.rmat(100, 500, seed=0)        # 100 nodes, 500 edges
        >>> seeds = torch.tensor([0, 1, 2])
        >>> A = A.with_edge_time(torch.arange(A.num_edges) % 10)
        >>> seed_time = torch.tensor([5, 5, 8])
        >>> et = A.edge_time[A.edges()[2]]              # the graph's times, edge order
        >>> s = A.temporal_sample(seeds, 10, time=seed_time, edge_time=et)
        >>> t = A.edge_time[s.edges()[2]]               # the sampled edges' times
        >>> bool((t <= seed_time.repeat_interleave(s.degree(axis=0))).all())
        True
        >>> s = A.temporal_sample(seeds, 5, seed=A.positions(seeds))   # disjoint: keyed per seed
        >>> s.shape
        (100, 3)
        """
        d = info(Op.TEMPORAL_SAMPLE)
        attrs = {
            a.name: a.check(v)
            for a, v in zip(d.attributes, (k, replace, strategy, window), strict=True)
        }
        probs = self._probs_values(probs)
        return Matrix(
            _run(
                Op.TEMPORAL_SAMPLE,
                A=self._csc,
                cols=cols,
                probs=probs,
                time=time,
                edge_time=edge_time,
                seed=seed,
                **attrs,
            )
        )

    def collective_sample(self, k: int, node_probs=None, replace: bool = False) -> Matrix:
        """Sample ``k`` rows for the whole matrix (layer-wise sampling).

        Every edge of a chosen row is kept. Rows without edges are never chosen.

        Parameters
        ----------
        k : int
            Rows to draw, ``k >= 0``; without replacement, if fewer than ``k``
            rows qualify, all of them are returned.
        node_probs : Tensor, shape (R,), optional
            One unnormalised probability per row of the row space (e.g.
            ``(sub ** 2).sum(axis=1)``); finite, non-negative, positive on at least
            one row with edges. ``None`` samples uniformly among rows with edges.
        replace : bool
            Draw ``k`` times with replacement; a row drawn twice appears once.

        Returns
        -------
        Matrix
            Row space = the chosen rows, in row-space order (ascending global id
            for a column slice of the graph); columns unchanged.

        Notes
        -----
        Without replacement the weighted form follows sequential draws
        proportional to ``node_probs`` (exponential keys), and the uniform form is
        exactly uniform over k-subsets of the rows with edges.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> A = gs.datasets.rmat(100, 500, seed=0)        # 100 nodes, 500 edges
        >>> seeds = torch.tensor([0, 1, 2])
        >>> sub = A[:, seeds]
        >>> p = (sub ** 2).sum(axis=1)
        >>> s = sub.collective_sample(4, node_probs=p)              # LADIES layer
        >>> s.shape                                                 # 4 rows drawn
        (4, 3)
        """
        k = V.count(k)
        replace = V.flag(replace, "replace")
        p = None
        if node_probs is not None:
            p = V.as_tensor(node_probs, "node_probs", self.device)
        return Matrix(_run(Op.COLLECTIVE_SAMPLE, A=self._csc, node_probs=p, k=k, replace=replace))

    # ------------------------------------------------------------------ walks
    def random_walk(
        self,
        seeds,
        length: int,
        probs=None,
        p: float = 1.0,
        q: float = 1.0,
        stop_prob: float = 0.0,
        restart_prob: float = 0.0,
        jump_prob: float = 0.0,
    ) -> torch.Tensor:
        """Random walks along in-edges, one per seed (DeepWalk, node2vec, PPR, ...).

        Each step moves from node ``v`` to a row of column ``v`` (an in-neighbour: the
        direction every select op reads), chosen uniformly, or in proportion to ``probs``,
        and for node2vec reweighted by the previous node.

        Parameters
        ----------
        seeds : LongTensor, shape (W,)
            Start nodes; repeats are independent walkers.
        length : int
            Steps per walk, ``>= 0``.
        probs : Matrix or Tensor, optional
            Static edge weights, one per edge of ``A`` (e.g. ``A.values``): finite,
            non-negative, positive somewhere in every column with edges. Sampled through
            alias tables, built once per graph in a compiled sampler when they depend on
            the graph only (pre-processing), else per call.
        p, q : float
            node2vec (Grover and Leskovec, 2016): from the second step on, a candidate
            ``x`` of the current node after previous node ``u`` has weight ``1/p`` when
            ``x == u``, ``1`` when ``x -> u`` is an edge, ``1/q`` otherwise (times its
            static weight). ``p = q = 1`` (default) is the first-order walk.
        stop_prob : float
            Probability that a walk ends before each step (PPR / walks with termination).
        restart_prob : float
            Probability that a step goes back to the walk's seed (random walk with restart).
        jump_prob : float
            Probability that a step goes to a node drawn uniformly from all ``N`` nodes.

        Returns
        -------
        LongTensor, shape (W, length + 1)
            Row ``w`` is walker ``w``'s walk: ``seeds[w]``, then one node per step; once a
            walk stops (at a node without in-edges, or by ``stop_prob``) the rest is ``-1``.

        Notes
        -----
        ``stop_prob + restart_prob + jump_prob <= 1``; one uniform draw per step decides
        among stop, restart, jump and a move, in that order. Every draw is keyed by the
        seed, the op ordinal, the mini-batch, the walker's position in ``seeds``, the step
        and the draw (docs/architecture.md §3): walks are reproducible, eager equals compiled,
        and the CUDA backend gives the same walks. ``A`` must be the whole graph.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> A = gs.datasets.rmat(100, 500, seed=0)        # 100 nodes, 500 edges
        >>> seeds = torch.tensor([0, 1, 2])
        >>> walks = A.random_walk(seeds, 80)                        # DeepWalk
        >>> walks = A.random_walk(seeds, 80, p=2.0, q=0.5)          # node2vec
        >>> walks = A.random_walk(seeds, 80, stop_prob=0.15)        # PPR
        >>> walks.shape == (len(seeds), 81)
        True
        """
        length = V.count(length, "length")
        p, q = V.positive(p, "p"), V.positive(q, "q")
        stop_prob = V.probability(stop_prob, "stop_prob")
        restart_prob = V.probability(restart_prob, "restart_prob")
        jump_prob = V.probability(jump_prob, "jump_prob")
        alias = None
        if probs is not None:
            if isinstance(probs, Matrix):
                if not self._csc.same_structure(probs._csc):
                    raise ValueError(
                        "probs: a weight matrix must have the same sparsity as the graph"
                    )
                probs = probs.values
            probs = V.as_tensor(probs, "probs", self.device)
            alias = _alias_table(self._csc, probs)
        return _run(
            Op.RANDOM_WALK,
            A=self._csc,
            seeds=seeds,
            alias=alias,
            length=length,
            p=p,
            q=q,
            stop_prob=stop_prob,
            restart_prob=restart_prob,
            jump_prob=jump_prob,
        )

    def temporal_walk(
        self,
        seeds,
        length: int,
        edge_time,
        time=None,
        direction: str = "later",
        strict: bool = False,
    ) -> torch.Tensor:
        """Temporal random walks along in-edges: each step's edge is no earlier (or, with
        ``direction="earlier"``, no later) than the previous step's (CTDNE's time-respecting
        walks; causal walks back in time from a seed's time).

        Step ``s`` moves from node ``v`` along an in-edge ``u -> v`` (to ``u``, a row of
        column ``v``, as :meth:`random_walk` moves) drawn uniformly among the *allowed*
        in-edges of ``v``: those whose time is ``>=`` the previous step's edge time
        (``"later"``; ``>`` with ``strict``) or ``<=`` it (``"earlier"``; ``<`` with
        ``strict``). The first step's bound is the walker's ``time`` (none without it). A
        walk with no allowed edge stops.

        Parameters
        ----------
        seeds : LongTensor, shape (W,)
            Start nodes; repeats are independent walkers.
        length : int
            Steps per walk, ``>= 0``.
        edge_time : Tensor, shape (E,)
            The time of each of this matrix's edges, in its edge order (``values``'
            and ``edges()``'s): ``A.edge_time[A.edges()[2]]``. Integer or floating point, no
            NaN. Each column's edges are sorted by time once per graph and tensor (kept
            with the graph): keep passing the same tensor.
        time : Tensor, shape (W,), optional
            Each walker's start time, the first step's bound (of ``edge_time``'s kind:
            both integer or both floating point; no NaN). None: any first edge.
        direction : {"later", "earlier"}
            Forward in time (each step at or after the previous one) or backward.
        strict : bool
            Strictly later (earlier): an edge of the same time as the previous step's is
            not allowed (nor, for the first step, one at ``time``).

        Returns
        -------
        LongTensor, shape (W, length + 1)
            Row ``w`` is walker ``w``'s walk: ``seeds[w]``, then one node per step; after
            a stop (no allowed edge) the rest is ``-1``.

        Notes
        -----
        Walks follow in-edges: a walk ``v0, v1, v2`` with ``direction="earlier"`` is the
        time-respecting path ``v2 -> v1 -> v0`` into ``v0`` (information that reached
        ``v0`` by ``time``); for walks along out-edges forward in time (CTDNE's), walk
        ``A.T`` with its edges' times. Step ``s`` of walker ``w`` draws ``(word >> 1) %
        count`` of the word keyed by the seed, the op ordinal, the mini-batch, ``w`` (its
        position in ``seeds``) and ``s`` (docs/architecture.md §3): reproducible, eager
        equals compiled and super-batched, and the CUDA backend's kernel walks the same
        walks. :meth:`temporal_walk_edges` gives the steps' edge ids (and so their
        times). ``gsample.backend.torch.temporal_walk`` documents the algorithm.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> A = gs.datasets.rmat(100, 500, seed=0)        # 100 nodes, 500 edges
        >>> seeds = torch.tensor([0, 1, 2])
        >>> A = A.with_edge_time(torch.arange(A.num_edges) % 10)
        >>> et = A.edge_time[A.edges()[2]]              # the graph's times, edge order
        >>> walks = A.temporal_walk(seeds, 10, et)      # each step no earlier than the last
        >>> t = torch.tensor([5, 5, 8])
        >>> back = A.temporal_walk(seeds, 10, et, time=t, direction="earlier", strict=True)
        >>> walks.shape == (len(seeds), 11)
        True
        """
        return self._temporal_walk(
            Op.TEMPORAL_WALK, seeds, length, edge_time, time, direction, strict
        )

    def temporal_walk_edges(
        self,
        seeds,
        length: int,
        edge_time,
        time=None,
        direction: str = "later",
        strict: bool = False,
    ) -> torch.Tensor:
        """The edge ids of temporal walks' steps: the walks :meth:`temporal_walk` draws with
        the same key (after the same ``gs.manual_seed``, at the same op ordinal), as ids of
        this matrix's edges (``edges()[2]``'s).

        Parameters
        ----------
        seeds, length, edge_time, time, direction, strict
            As :meth:`temporal_walk`.

        Returns
        -------
        LongTensor, shape (W, length)
            Entry ``[w, s]``: the edge of walker ``w``'s step ``s`` (from node ``s`` of
            its walk to node ``s + 1``), ``-1`` after a stop. The steps' times are
            ``A.edge_time[ids]``; a multigraph's parallel edges (messages) stay apart.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> A = gs.datasets.rmat(100, 500, seed=0)        # 100 nodes, 500 edges
        >>> seeds = torch.tensor([0, 1, 2])
        >>> A = A.with_edge_time(torch.arange(A.num_edges) % 10)
        >>> et = A.edge_time[A.edges()[2]]
        >>> gs.manual_seed(0)
        >>> eids = A.temporal_walk_edges(seeds, 10, et)
        >>> gs.manual_seed(0)
        >>> walks = A.temporal_walk(seeds, 10, et)        # the same walks, as nodes
        >>> src = A.edges()[0][torch.argsort(A.edges()[2])]   # source by edge id
        >>> bool((src[eids[eids >= 0]] == walks[:, 1:][eids >= 0]).all())
        True
        """
        return self._temporal_walk(
            Op.TEMPORAL_WALK_EDGES, seeds, length, edge_time, time, direction, strict
        )

    def _temporal_walk(self, op: Op, seeds, length, edge_time, time, direction, strict):
        d = info(op)
        attrs = {
            a.name: a.check(v)
            for a, v in zip(d.attributes, (length, direction, strict), strict=True)
        }
        return _run(op, A=self._csc, seeds=seeds, edge_time=edge_time, time=time, **attrs)

    def from_neighbors(self, cols, neighbors, values=None) -> Matrix:
        """A block built from dense per-column neighbour lists (PinSAGE's top visited nodes,
        any neighbours a sampler computed with torch code), on this graph's nodes.

        Parameters
        ----------
        cols : LongTensor, shape (C,)
            The block's columns: node ids of this graph (the whole graph).
        neighbors : LongTensor, shape (C, K)
            Row ``j``: the node ids column ``j`` holds, ``-1`` where there is none (every
            entry ``>= 0`` is kept; repeats too). They need not be edges of the graph.
        values : Tensor, shape (C, K), optional
            The entries' values (weights), floating point.

        Returns
        -------
        Matrix
            Shape ``(N, C)``, the row space this graph's nodes (as a column slice's),
            ``(neighbors >= 0).sum()`` entries, column by column and by id within a column
            (as a sampled block's); ``values`` as its values.
            It converts (``to_pyg``, ``all_nodes``) and chains like a sampled block; its
            entries have no edge ids of the graph (``edges()`` gives their positions).
            Compiled, it super-batches.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> A = gs.datasets.rmat(100, 500, seed=0)
        >>> seeds = torch.tensor([0, 1])
        >>> nbrs = torch.tensor([[5, 7, -1], [3, -1, -1]])  # (C, K) ids, -1 padded
        >>> w = torch.tensor([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]])
        >>> block = A.from_neighbors(seeds, nbrs, w)      # column i: seed i's neighbours
        >>> block.shape == (A.num_nodes, len(seeds))
        True
        >>> block.row(), block.values
        (tensor([3, 5, 7]), tensor([0.5000, 0.5000, 1.0000]))
        """
        return Matrix(
            _run(Op.FROM_NEIGHBORS, A=self._csc, cols=cols, neighbors=neighbors, values=values)
        )

    # ------------------------------------------------------------------ keyed random values
    def random_uniform(self, nodes) -> torch.Tensor:
        """One uniform random number per entry of ``nodes``, keyed by the entry's position.

        Parameters
        ----------
        nodes : LongTensor, shape (C,)
            Node ids of this graph (a frontier, a matrix's rows ``sub.row()``, the rows of
            its edges ``sub.edges()[0]``, walkers' positions); repeats are independent
            entries. Only the positions key the draws; the ids place a super-batch's
            entries in their mini-batches.

        Returns
        -------
        DoubleTensor, shape (C,)
            ``u[i]`` uniform in ``[0, 1)`` on the grid of ``2**-53``.

        Notes
        -----
        Entry ``i`` draws ``word(seed, op ordinal, mini-batch, i, 0)`` (docs/architecture.md
        §3) and ``u = (word >> 11) * 2**-53``: the values are the same on every run, eager and
        compiled,
        super-batched or not, on the torch and the CUDA backend (bit for bit). ``A`` must be
        the whole graph. For LABOR's per-row variates, Metropolis-Hastings' acceptance coin,
        random ranks (``argsort`` of one per edge).

        Examples
        --------
        >>> import torch, gsample as gs
        >>> A = gs.datasets.rmat(100, 500, seed=0)        # 100 nodes, 500 edges
        >>> seeds = torch.tensor([0, 1, 2])
        >>> sub = A[:, seeds]
        >>> u = A.random_uniform(sub.row())                  # one per candidate row (LABOR)
        >>> u.dtype, u.shape == sub.row().shape
        (torch.float64, True)
        """
        return _run(Op.RANDOM_UNIFORM, A=self._csc, nodes=nodes)

    def random_count(
        self, nodes, dist: str = "geometric", p: float = 0.5, n: int | None = None
    ) -> torch.Tensor:
        """One random count per entry of ``nodes``, keyed by the entry's position.

        Parameters
        ----------
        nodes : LongTensor, shape (C,)
            Node ids of this graph, as :meth:`random_uniform` takes them.
        dist : {"geometric", "binomial"}
            ``"geometric"``: ``P(x) = (1 - p) p^x``, ``x = 0, 1, ...`` (successes before the
            first failure; mean ``p / (1 - p)``), ``p < 1``. ``"binomial"``: successes in
            ``n`` trials of probability ``p``.
        p : float
            In ``[0, 1]``.
        n : int, optional
            The binomial's trials, ``0 <= n <= 2**20`` (only with ``"binomial"``).

        Returns
        -------
        LongTensor, shape (C,)

        Notes
        -----
        Each entry draws one word, keyed as :meth:`random_uniform`'s, and inverts the law's
        survival function, tabulated once on the host as 53-bit integers
        (:func:`gsample.base.random.count_table`): ``P(x >= j)`` is exact up to ``2**-53``, and the
        counts are the same on every device, eager and compiled, super-batched or not.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> A = gs.datasets.rmat(100, 500, seed=0)        # 100 nodes, 500 edges
        >>> seeds = torch.tensor([0, 1, 2])
        >>> x = A.random_count(seeds, "geometric", p=0.7)     # forest fire's burn counts
        >>> k = A.random_count(seeds, "binomial", p=0.5, n=10)
        >>> x.shape, k.shape
        (torch.Size([3]), torch.Size([3]))
        >>> bool((k <= 10).all())
        True
        """
        d = info(Op.RANDOM_COUNT)
        attrs = {a.name: a.check(v) for a, v in zip(d.attributes, (dist, p, n))}
        d.attrs_check(**attrs)
        return _run(Op.RANDOM_COUNT, A=self._csc, nodes=nodes, **attrs)


def matrix_of(csc: CSC) -> Matrix:
    """``Matrix(csc)`` for a CSC the runtime made: the same object, without ``__init__``'s
    argument checks (the runtime hands out one per block and mini-batch; users call
    ``Matrix``, whose checks name their mistakes).

    Examples
    --------
    >>> import torch
    >>> m = matrix_of(CSC.of(3, torch.tensor([0, 0]), torch.tensor([], dtype=torch.long)))
    >>> m.num_nodes, m.num_edges
    (3, 0)
    """
    m = object.__new__(Matrix)
    m._csc = csc
    m._edge_time = None
    return m


# ----------------------------------------------------------------------------- from the op table
def op_method(name: str, d: OpDef):
    """The ``gs.Matrix`` method ``name`` of op ``d``, made from its definition.

    Its parameters are the op's inputs but the matrix, then its attributes, in the table's
    order, named as ``d.capture.params`` renames them (an optional input defaults to None,
    an attribute to its ``default``; attributes the passes set, ``internal``, and inputs
    pre-processing derives are left out; an ``op`` attribute is the method's name). A call
    checks each attribute (``Attr.check``, then ``d.attrs_check``), runs the op eagerly
    (:func:`_run`: the op's data checks, then the backend) and returns a matrix result as a
    :class:`Matrix`. The function is compiled from source, as ``dataclasses`` makes its
    methods: a plain function with real parameters (what the tracer binds a call to, and
    no work per call beyond the hand-written method's).

    Parameters
    ----------
    name : str
        The method's name (one of ``d.capture.methods``).
    d : OpDef
        The op.

    Returns
    -------
    function
        ``method(self, ...)`` with ``d.capture.doc`` (else ``d.doc``) as its docstring.

    Examples
    --------
    >>> Matrix.degree.__doc__.splitlines()[0]
    'Edges per column (``axis=0``, shape (C,)) or per row (``axis=1``, shape (R,)).'
    """
    rename = {v: k for k, v in d.capture.params.items()}
    ns = {"_run": _run, "_op": d.op, "Matrix": Matrix, "_attrs_check": d.attrs_check}
    params, inputs, attrs = [], [], []
    for i in d.inputs:
        if i.matrix or i.derived is not None:
            continue
        p = rename.get(i.name, i.name)
        params.append(f"{p}=None" if i.optional else p)
        inputs.append(f"{i.name}={p}")
    for a in d.attributes:
        if a.internal:
            continue
        if a.name == "op":  # A.sum(axis) is reduce(op="sum")
            attrs.append(f"op={name!r}")
            continue
        p = rename.get(a.name, a.name)
        if a.default is not None or not a.required:
            ns[f"_default_{p}"] = a.default
            params.append(f"{p}=_default_{p}")
        else:
            params.append(p)
        if a.check is not None:
            ns[f"_check_{p}"] = a.check
            attrs.append(f"{a.name}=_check_{p}({p})")
        else:
            attrs.append(f"{a.name}={p}")
    run = f"_run(_op, A=self._csc, {', '.join(inputs)}{', ' if inputs else ''}**_attrs)"
    if d.kind is Kind.MATRIX:
        run = f"Matrix({run})"
    body = [f"    _attrs = dict({', '.join(attrs)})"]
    if d.attrs_check is not None:
        body.append("    _attrs_check(**_attrs)")
    body.append(f"    return {run}")
    source = f"def {name}(self{''.join(', ' + p for p in params)}):\n" + "\n".join(body)
    exec(source, ns)  # the parameters above: names from the op table, no user text
    fn = ns[name]
    fn.__qualname__, fn.__module__ = f"Matrix.{name}", __name__
    fn.__doc__ = inspect.cleandoc(d.capture.doc or d.doc)
    fn.__annotations__["return"] = _RETURNS.get(d.kind, "object")
    return fn


_RETURNS = {Kind.MATRIX: "Matrix", Kind.TENSOR: "torch.Tensor", Kind.TUPLE: "tuple"}


def op_property(d: OpDef) -> property:
    """A ``gs.Matrix`` property of an op of the matrix alone (``A.T``), made from its
    definition as :func:`op_method` makes methods."""
    wrap = Matrix if d.kind is Kind.MATRIX else None
    op = d.op

    def get(self):
        out = _run(op, A=self._csc)
        return out if wrap is None else wrap(out)

    get.__doc__ = inspect.cleandoc(d.capture.doc or d.doc)
    return property(get)


# every method and property of the op table that Matrix does not write by hand (those
# convert or check what the user gives, as individual_sample takes a Matrix of weights)
for _name, _op in METHODS.items():
    if not hasattr(Matrix, _name):
        setattr(Matrix, _name, op_method(_name, info(_op)))
for _name, _op in PROPERTIES.items():
    if not hasattr(Matrix, _name):
        setattr(Matrix, _name, op_property(info(_op)))
del _name, _op


def sddmm(A: Matrix, U, V_, op: str = "dot") -> Matrix:
    """Sampled dense-dense product: edge ``(i, j)`` gets ``op(U[i], V[j])``.

    Parameters
    ----------
    A : Matrix
        The sparsity pattern, shape (R, C).
    U : Tensor, shape (R, F) or (R,)
        One row per row of ``A``'s row space.
    V_ : Tensor, shape (C, F) or (C,)
        One row per column of ``A`` (the ``V`` of the formula).
    op : {"dot", "add", "sub", "mul", "div"}
        ``dot`` gives one value per edge (shape (E,)); the others are elementwise
        (shape (E, F)).

    Returns
    -------
    Matrix
        ``A``'s sparsity with the results as values.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A = gs.datasets.rmat(100, 500, seed=0)
    >>> seeds = torch.tensor([0, 1, 2])
    >>> X, W = torch.randn(100, 8), torch.randn(8, 4)
    >>> sub = A[:, seeds].compact()
    >>> att = gs.sddmm(sub, X[sub.row_ids] @ W, X[seeds] @ W)   # PASS attention
    >>> att.shape == sub.shape, att.values.shape == (sub.num_edges,)
    (True, True)
    """
    if isinstance(A, torch.fx.Proxy):  # being traced by @gs.compile
        return A.tracer.create_proxy("call_function", sddmm, (A, U, V_), {"op": op})
    if not isinstance(A, Matrix):
        raise TypeError(f"A: expected a gs.Matrix, got {type(A).__name__}")
    if op not in SDDMM_OPS:
        raise ValueError(f"op: must be one of {SDDMM_OPS}, got {op!r}")
    u, v = V.as_tensor(U, "U", A.device), V.as_tensor(V_, "V", A.device)
    return Matrix(_run(Op.SDDMM, A=A.csc, u=u, v=v, op=op))


sddmm._gs_op = Op.SDDMM  # how the tracer recognises it
