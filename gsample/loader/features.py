"""Features and labels of a mini-batch's nodes: ``gs.DataLoader(..., features=X, labels=y)``.

Which nodes (:func:`batch_nodes`, stored as ``Batch.n_id``): the seeds first, in their order,
then the nodes the sample reaches, hop by hop. For blocks (a matrix or a list of them, first
hop first) hop ``l`` adds block ``l``'s columns and then its rows that are not listed yet
(columns in column order, rows in row-space order). A DGL-style sampler (``graphsage``,
``ladies``, ``fastgcn``: block ``l + 1``'s columns are ``blocks[l].all_nodes()``) therefore gets
``n_id == blocks[-1].all_nodes()``, and every block's columns are a prefix of ``n_id``: the
layout a DGL-style model loop reads (layer ``j`` computes the first ``C`` rows of ``h``). The
loader samples with a compiled sampler's variant whose program computes that last
``all_nodes`` and says its blocks chain (``gsample.loader.dataloader.gathering``): ``n_id`` is
then the program's tensor, found without a launch or a read-back; other blocks (an eager
sampler's) are compared, in one read-back on a GPU. For an induced subgraph ``(subgraph,
nodes)`` it is the seeds, then ``nodes`` without them (as ``Batch.to_pyg`` orders them).
``Batch.x[i]`` / ``Batch.y[i]`` are the rows of ``n_id[i]``.

Where rows come from (:class:`FeatureStore`): a table on the graph's device is indexed there; a
CPU table for a graph on a GPU is pinned (``pin_memory()``: a copy, unless it is pinned
already) and read by the GPU itself through unified virtual addressing, only the rows a
mini-batch needs crossing the bus (``kernels/gather.cu``; without CuPy, the CPU gathers and
copies). ``cache_bytes`` keeps the rows of the highest in-degree nodes in device memory
(hits are counted: ``FeatureStore.hit_rate``); only where such a cache can exist, a table that
is not on the graph's device already: elsewhere (a CPU graph, or a table on the graph's GPU) no
cache is made and ``hit_rate`` is None.

A sparse table (``torch.sparse`` COO, CSR, CSC, BSR or BSC; bag-of-words features) is kept
sparse, as CSR, where it is: each mini-batch's rows are gathered from it and made dense, so
``Batch.x`` is dense (``(n, F)``) without a dense copy of the whole table. A sparse table of
labels of shape ``(N,)`` is made dense once (it holds one value per node).

Ids: :class:`FeatureStore` called with ``n_id`` checks them (``IndexError`` naming ``n_id`` for
an id outside ``[0, N)``) before any row is read; the loader's own gathers read ids it made
from the sample (an induced subgraph's ``nodes``, which the sampler returns, are checked by
:func:`batch_nodes`).
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import torch

from gsample.base import validate as V
from gsample.formats.csc import gather_segments
from gsample.formats.derived import COLUMNS, kept_facts
from gsample.formats.placement import check_fits
from gsample.ir import Op
from gsample.matrix.sparse import Matrix

#: bytes per node of the cache's slot map (node -> cache row, or -1), counted in the budget
SLOT_BYTES = 8

#: gather a super-batch's rows in one op per table (:meth:`FeatureStore.rows_of`) where its
#: mini-batches' ``n_id`` are consecutive views of one tensor; False: one op per mini-batch
#: (the same rows either way: a switch to compare the two on a GPU)
GROUP_GATHER = True

#: a mini-batch's floating-point rows cut out of a group's gather start this aligned (a fresh
#: CUDA allocation's alignment), as its own gather's would: kernels that vectorise by
#: alignment (the model's GEMMs) then round its rows alike; else each is gathered alone
ROWS_ALIGN = 512


def batch_nodes(out, seeds: torch.Tensor, num_nodes: int | None = None) -> torch.Tensor:
    """The nodes of one mini-batch whose rows ``DataLoader`` gathers (``Batch.n_id``).

    Parameters
    ----------
    out : gs.Matrix, list of gs.Matrix, or (gs.Matrix, LongTensor)
        What the sampler returned: blocks, first hop first, or an induced subgraph and its
        nodes.
    seeds : LongTensor, shape (B,)
        The mini-batch's seeds (global ids).
    num_nodes : int, optional
        The graph's nodes: given, an induced subgraph's ``nodes`` (made by the sampler, not
        by a gsample op) must lie in ``[0, num_nodes)`` (``IndexError`` otherwise), as rows
        are then read with them.

    Returns
    -------
    LongTensor, shape (n,)
        Global ids, the seeds first, no other repeat (see the module docstring for the
        order); for a DGL-style sampler this is ``out[-1].all_nodes()``.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.arange(8)
    >>> s1 = A[:, seeds].individual_sample(10)
    >>> blocks = [s1, A[:, s1.all_nodes()].individual_sample(5)]      # GraphSAGE's
    >>> torch.equal(batch_nodes(blocks, seeds), blocks[-1].all_nodes())
    True
    """
    if seeds.dtype != torch.int64:  # (a cast that would return the seeds is still a call)
        seeds = seeds.to(torch.int64)
    if isinstance(out, Matrix):
        out = [out]
    if (
        isinstance(out, (list, tuple))
        and len(out) == 2
        and isinstance(out[0], Matrix)
        and isinstance(out[1], torch.Tensor)
    ):
        nodes = out[1].to(torch.int64)
        if num_nodes is not None:
            V.ids(nodes, "batch.out (the induced subgraph's nodes)", num_nodes, None)
        return _append_new(seeds, nodes)
    if isinstance(out, (list, tuple)) and not out:  # zero hops: the seeds alone
        return seeds
    if isinstance(out, (list, tuple)) and all(isinstance(m, Matrix) for m in out):
        chained = _chained(out, seeds)
        return chained if chained is not None else _hop_by_hop(out, seeds)
    raise TypeError(
        "features / labels: the loader gathers rows for samplers that return "
        "blocks (a gs.Matrix or a list of them) or an induced subgraph (subgraph, "
        f"nodes); this sampler returned {type(out).__name__}"
    )


def _hop_by_hop(blocks: list, seeds: torch.Tensor) -> torch.Tensor:
    """The definition: hop by hop, each block's columns, then its rows, not listed yet."""
    node = seeds
    for block in blocks:
        csc = block.csc
        reached = csc.global_rows(torch.unique(csc.rows))  # row-space order
        node = _append_new(node, torch.cat([csc.global_cols(), reached]))
    return node


def _chained(blocks: list, seeds: torch.Tensor):
    """``blocks[-1].all_nodes()`` when the blocks are DGL-style (block 0's columns are the
    seeds and block ``l + 1``'s are ``blocks[l].all_nodes()``: then :func:`_hop_by_hop`
    gives it too), checked in one read-back; None otherwise. A few launches per block where
    the definition's unique / isin / sort take tens and a read-back each, on every
    mini-batch. Blocks a compiled sampler returned say so themselves
    (:func:`_program_chained`): then nothing is compared or launched."""
    last = _program_chained(blocks, seeds)
    if last is not None:
        return last
    cols = [b.csc.global_cols() for b in blocks]
    frontiers = [seeds] + [b.all_nodes() for b in blocks[:-1]]
    if any(c.numel() != f.numel() for c, f in zip(cols, frontiers)):
        return None
    if all(_same(c, f) for c, f in zip(cols, frontiers)):
        # a compiled sampler's blocks: each frontier is the very tensor the program made
        # (``all_nodes`` kept with its block) and sliced the next hop with; no comparison
        return blocks[-1].all_nodes()
    if seeds.device.type == "cpu":
        if not all(torch.equal(c, f) for c, f in zip(cols, frontiers)):
            return None
    elif not bool(torch.stack([(c == f).all() for c, f in zip(cols, frontiers)]).all()):
        return None
    return blocks[-1].all_nodes()


def _program_chained(blocks: list, seeds: torch.Tensor):
    """``blocks[-1].all_nodes()`` where the program that returned the blocks kept, with each
    of them, the object it sliced its columns with (``gsample.formats.derived.COLUMNS``) and
    those are ``seeds`` itself, then the ``all_nodes`` it kept with the block before; and it
    kept the last block's ``all_nodes`` (``gs.DataLoader`` has its program compute it:
    ``gsample.passes.gather_nodes``). Else None (the ids are compared instead). Identities
    only: a few dictionary lookups per block, no launch, no read-back."""
    frontier = seeds
    for block in blocks:
        kept = kept_facts(block.csc)  # (its facts looked up once for both)
        if frontier is None or kept is None or kept.get(COLUMNS) is not frontier:
            return None
        frontier = kept.get(Op.ALL_NODES)
    return frontier


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether ``a`` and ``b`` view the same memory the same way (so they are equal)."""
    return a is b or (
        a.dtype == b.dtype
        and a.device == b.device
        and a.shape == b.shape
        and a.stride() == b.stride()
        and a.data_ptr() == b.data_ptr()
    )


def _append_new(node: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """``node`` followed by the first occurrence of every id of ``ids`` not in it."""
    ids = ids[~torch.isin(ids, node)]
    if ids.numel() == 0:
        return node
    uniq, inverse = torch.unique(ids, return_inverse=True)
    first = torch.full((uniq.numel(),), ids.numel(), dtype=torch.int64, device=ids.device)
    first.scatter_reduce_(0, inverse, torch.arange(ids.numel(), device=ids.device), "amin")
    return torch.cat([node, ids[torch.sort(first).values]])


def adjacent(parts: list):
    """``(whole, sizes)`` where the 1-D tensors ``parts`` are consecutive views of one
    tensor (a super-batch's ``n_id``, split from one decoded tensor): ``whole`` is
    ``torch.cat(parts)`` as one view (no copy), ``sizes`` their lengths; else None.

    Examples
    --------
    >>> import torch
    >>> ids = torch.arange(10)
    >>> whole, sizes = adjacent(list(ids.split_with_sizes([3, 0, 7])))
    >>> torch.equal(whole, ids), sizes
    (True, [3, 0, 7])
    >>> adjacent([ids[:3], ids[4:]]) is None                      # a gap
    True
    """
    first = parts[0] if parts else None
    base = getattr(first, "_base", None)
    if base is None:
        return None
    start = at = first.storage_offset()
    sizes = []
    for p in parts:
        n = p.numel()
        # the same base (so the same storage), one after another, each one contiguous run
        if p._base is not base or p.dim() != 1 or p.storage_offset() != at:
            return None
        if n > 1 and p.stride(0) != 1:
            return None
        sizes.append(n)
        at += n
    return first.as_strided((at - start,), (1,)), sizes


#: sparse layouts a table may have (kept as CSR, :func:`_as_csr`)
_SPARSE = (torch.sparse_coo, torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc)


def _check_table(table, name: str, num_nodes: int, device: torch.device) -> torch.Tensor:
    """Validate a per-node table: ``(N, F)`` features (floating point) or ``(N,)`` /
    ``(N, C)`` labels; on the CPU or the graph's device; dense, or sparse (returned as CSR,
    or dense for a 1-D table: see the module docstring)."""
    if not isinstance(table, torch.Tensor):
        raise TypeError(
            f"{name}: expected a torch.Tensor with one row per graph node, got "
            f"{type(table).__name__}"
        )
    if table.layout != torch.strided and table.layout not in _SPARSE:
        raise TypeError(
            f"{name}: tensors of layout {table.layout} are not supported; pass a "
            "dense tensor (or a torch.sparse one)"
        )
    shape = tuple(table.shape)
    if name == "features":
        if table.dim() != 2 or shape[0] != num_nodes:
            raise ValueError(
                f"features: expected shape (N, F) with N = {num_nodes} graph nodes, got {shape}"
            )
        if not table.is_floating_point():
            raise TypeError(
                f"features: expected a floating-point dtype, got {table.dtype} "
                "(convert with .float())"
            )
    else:
        if table.dim() not in (1, 2) or shape[0] != num_nodes:
            raise ValueError(
                f"{name}: expected shape (N,) or (N, C) with N = {num_nodes} "
                f"graph nodes, got {shape}"
            )
        if table.dtype == torch.bool or table.is_complex():
            raise TypeError(
                f"{name}: expected an integer (classes) or floating-point dtype, got {table.dtype}"
            )
    if table.device.type != "cpu" and table.device != device:
        raise ValueError(
            f"{name}: is on {table.device} but the graph is on {device} (give "
            "it on the graph's device, or on the CPU to be read from host memory)"
        )
    if table.layout != torch.strided:
        table = table.to_dense() if table.dim() == 1 else _as_csr(table, name)
    return table


def _as_csr(table: torch.Tensor, name: str) -> torch.Tensor:
    """A 2-D sparse table as CSR (rows are gathered from its row pointer), scalar values."""
    with warnings.catch_warnings():  # PyTorch's "CSR support is in beta": ours to mind
        warnings.filterwarnings("ignore", "Sparse CSR tensor support", UserWarning)
        return _to_csr(table, name)


def _to_csr(table: torch.Tensor, name: str) -> torch.Tensor:
    if table.layout == torch.sparse_coo:
        if table.dense_dim():
            raise TypeError(
                f"{name}: a sparse COO table with dense dimensions (hybrid, "
                f"dense_dim {table.dense_dim()}) is not supported; pass "
                ".to_dense() or a 2-D sparse tensor"
            )
        return table.coalesce().to_sparse_csr()
    if table.layout != torch.sparse_csr:
        table = table.to_sparse_coo().coalesce().to_sparse_csr()
    if table.values().dim() != 1:
        raise TypeError(
            f"{name}: a sparse CSR table with dense dimensions (hybrid) is not "
            "supported; pass .to_dense() or a 2-D sparse tensor"
        )
    return table


def csr_rows(table: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Rows ``ids`` of a CSR table, dense: ``table.to_dense()[ids]`` without the dense table.

    Parameters
    ----------
    table : sparse CSR Tensor, shape (N, F)
        Scalar values (no dense dimensions).
    ids : LongTensor, shape (n,), on the table's device
        Rows, each in ``[0, N)`` (not checked here).

    Returns
    -------
    Tensor, shape (n, F), dense, the table's dtype and device

    Examples
    --------
    >>> import torch
    >>> X = torch.tensor([[0., 2.], [3., 0.]]).to_sparse_csr()
    >>> csr_rows(X, torch.tensor([1, 1, 0]))
    tensor([[3., 0.],
            [3., 0.],
            [0., 2.]])
    """
    crow, col, val = table.crow_indices(), table.col_indices(), table.values()
    index, ptr = gather_segments(crow.to(torch.int64), ids)
    owner = torch.repeat_interleave(
        torch.arange(ids.numel(), device=ids.device), ptr.diff(), output_size=index.numel()
    )
    out = torch.zeros((ids.numel(), table.shape[1]), dtype=val.dtype, device=val.device)
    out[owner, col[index].to(torch.int64)] = val[index]
    return out


def _device(device: torch.device) -> torch.device:
    """``cuda`` with its index made explicit (tensors report ``cuda:0``)."""
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return device


class FeatureStore:
    """Rows of a per-node table, gathered onto the graph's device for each mini-batch.

    Parameters
    ----------
    table : Tensor, shape (N, F) (``name="features"``) or (N,) / (N, C) (labels)
        One row per graph node; on the graph's device, or on the CPU; dense or
        ``torch.sparse`` (see the module docstring).
    A : gs.Matrix, shape (N, N)
        The graph: its device is where rows go, its in-degrees rank the cache.
    name : str
        The argument's name in errors (``"features"``, ``"labels"``).
    cache_bytes : int
        Device memory for the rows of the highest in-degree nodes (ties: smaller id
        first), ``SLOT_BYTES`` per graph node of it for the map from node to cache row;
        0: no cache. A cache is made only where the table is not on the graph's device (a
        CPU table for a GPU graph); elsewhere the rows are read in place, nothing is
        cached, and ``hit_rate`` is None. Not for a sparse table (``ValueError``).
    always_cache : bool
        Make the cache even where the table is on the graph's device (a CPU graph: it then
        only copies rows), so that its logic can be tested without a GPU. The loader never
        sets it.

    Attributes
    ----------
    mode : str
        ``"device"`` (indexed where it is), ``"uva"`` (a pinned host table read by the
        GPU), ``"host"`` (gathered by the CPU, then copied), ``"sparse"`` (a CSR table's
        rows gathered where it is, made dense, then copied).
    cached_rows : int
        Rows in the cache.
    lookups : int
        Rows asked for so far; ``hits`` (read from the device) of them the cache served.
    hit_rate : float or None
        ``hits / lookups``; None where no cache exists.

    Examples
    --------
    >>> import torch
    >>> import gsample as gs
    >>> A, X = gs.datasets.rmat(100, 500, seed=0), torch.randn(100, 16)
    >>> store = FeatureStore(X, A, cache_bytes=256 << 20)        # X: (N, F) on the CPU
    >>> rows = store(torch.tensor([4, 2], device=A.device))      # (2, F) on A's device
    >>> rows.shape
    torch.Size([2, 16])
    >>> store.hit_rate is None                                   # a rate with A on a GPU
    True
    """

    def __init__(
        self,
        table,
        A: Matrix,
        name: str = "features",
        cache_bytes: int = 0,
        always_cache: bool = False,
    ):
        if isinstance(cache_bytes, (bool, np.bool_)) or not isinstance(
            cache_bytes, numbers.Integral
        ):
            raise TypeError(
                f"feature_cache: expected a byte count (an int >= 0), got {cache_bytes!r}"
            )
        if cache_bytes < 0:
            raise ValueError(f"feature_cache: expected a byte count >= 0, got {cache_bytes!r}")
        cache_bytes = int(cache_bytes)
        self.name = name
        self.device = _device(A.device)
        table = _check_table(table, name, A.num_nodes, self.device)
        self.num_rows = A.num_nodes
        self.lookups, self._hits = 0, None
        self.cache, self.slot, self.cached_rows = None, None, 0
        if table.layout == torch.sparse_csr:
            if cache_bytes and table.device != self.device:
                raise ValueError(
                    "feature_cache: not supported with a sparse features table "
                    "(its rows are gathered from the CSR where it is); pass "
                    "features.to_dense() to cache rows on the device"
                )
            self.mode, self.table, self.row_bytes = "sparse", table, 0
            return
        self.row_bytes = table[0].numel() * table.element_size() if len(table) else 0
        if table.device == self.device and not (cache_bytes and always_cache):
            # already where rows are needed: nothing to cache (on a CPU graph the tests
            # still build one, always_cache, to check the cache's logic there)
            self.mode, self.table = "device", table
            return
        table = table.cpu().contiguous()
        self.mode = "host"
        if self.device.type == "cuda":
            if not table.is_pinned():
                table = table.pin_memory()  # a copy: the GPU reads pinned memory only
            if _cupy():
                self.mode = "uva"
        self.table = table
        self._address = None
        if cache_bytes:
            self._build_cache(A, cache_bytes)

    def _build_cache(self, A: Matrix, cache_bytes: int) -> None:
        n = A.num_nodes
        rows = (cache_bytes - SLOT_BYTES * n) // max(self.row_bytes, 1)
        rows = max(0, min(n, rows))
        if rows:  # said before the slot map and the rows are allocated
            check_fits(
                SLOT_BYTES * n + rows * self.row_bytes,
                self.device,
                "feature_cache",
                f"a cache of {rows} rows and its slot map",
                "pass a smaller feature_cache (bytes)",
            )
        degree = A.csc.degrees()
        hot = torch.argsort(-degree.cpu(), stable=True)[:rows]  # highest in-degree first
        self.slot = torch.full((n,), -1, dtype=torch.int64, device=self.device)
        self.slot[hot.to(self.device)] = torch.arange(rows, device=self.device)
        self.cache = self.table[hot].to(self.device)
        self.cached_rows = rows
        self._hits = torch.zeros(1, dtype=torch.int64, device=self.device)

    @property
    def cache_bytes(self) -> int:
        """Device bytes the cache holds (rows and slot map)."""
        if self.cache is None:
            return 0
        return self.cached_rows * self.row_bytes + SLOT_BYTES * self.slot.numel()

    @property
    def hits(self) -> int:
        """Rows the cache served so far (a read from the device; 0 without a cache)."""
        return 0 if self._hits is None else int(self._hits.item())

    @property
    def hit_rate(self) -> float | None:
        """``hits / lookups`` (0.0 before the first lookup); None where no cache exists
        (``cache_bytes`` 0, or a table on the graph's device: rows read in place)."""
        if self.cache is None:
            return None
        return self.hits / self.lookups if self.lookups else 0.0

    def __call__(self, n_id) -> torch.Tensor:
        """Rows ``table[n_id]`` on the graph's device, shape ``(len(n_id), ...)``.

        Parameters
        ----------
        n_id : LongTensor, shape (n,)
            Global node ids (a tensor on any device, a list or an array); each in ``[0, N)``:
            checked before any row is read (``IndexError`` naming ``n_id``; on a GPU one
            host read of the check's flag).

        Examples
        --------
        >>> import torch, gsample as gs
        >>> A = gs.datasets.rmat(1000, 5000, seed=0)
        >>> store = FeatureStore(torch.randn(1000, 16), A)
        >>> store(torch.tensor([0, 5])).shape                # (2, F)
        torch.Size([2, 16])
        >>> store(torch.tensor([5000]))                      # N = 1000
        Traceback (most recent call last):
        IndexError: n_id: node id 5000 is out of range for a graph of 1000 nodes
        """
        return self._rows(V.ids(n_id, "n_id", self.num_rows, None))

    def cuts(self, sizes: list) -> bool:
        """Whether :meth:`rows_of` may gather mini-batches of ``sizes`` ids together: a
        dense table, and each one's floating-point rows starting :data:`ROWS_ALIGN`-aligned
        in the group's (as its own gather's would); not a table that requires grad (each
        mini-batch's rows then have a backward of their own, as one gather each gives)."""
        if self.mode == "sparse" or self.table.requires_grad:
            return False
        if self.table.is_floating_point() or self.table.is_complex():
            width = self.row_bytes
            if width % ROWS_ALIGN:
                at = 0
                for n in sizes:
                    if (at * width) % ROWS_ALIGN:
                        return False
                    at += n
        return True

    def rows_of(self, whole: torch.Tensor, sizes: list) -> tuple:
        """The rows of several mini-batches' ids in one gather, where :meth:`cuts` says so:
        ``whole`` their ids one after another (:func:`adjacent`), ``sizes`` how many each
        has. Returns each one's rows (``self._rows(ids_b)``, the same values, shape and
        strides) in one storage; each a tensor of its own to autograd (no view of the
        group's, its own version counter: an in-place op on one batch's rows, even with an
        operand that requires grad, acts as on a gather of its own). Keeping one of them
        keeps the whole storage (every mini-batch's rows of the group) alive.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> A = gs.datasets.rmat(100, 500, seed=0)
        >>> store = FeatureStore(torch.randn(100, 16), A)
        >>> n_ids = list(torch.arange(7).split_with_sizes([3, 4]))   # views of one tensor
        >>> whole, sizes = adjacent(n_ids)                  # a super-batch's mini-batches
        >>> xs = store.rows_of(whole, sizes)                # xs[b] == store._rows(n_ids[b])
        >>> [x.shape for x in xs]
        [torch.Size([3, 16]), torch.Size([4, 16])]
        """
        # (split_with_sizes' views refuse an in-place op that requires grad: "a view ...
        # output of a function that returns multiple views")
        return self._rows(whole).unsafe_split_with_sizes(sizes)

    def _rows(self, n_id: torch.Tensor) -> torch.Tensor:
        """:meth:`__call__` without the check of the ids: for ids made by the loader from a
        sample (every id a gsample op made is in range; :func:`batch_nodes` checks the
        rest)."""
        self.lookups += n_id.numel()
        if self.mode == "device":
            # index_select: one gather kernel; advanced indexing (table[n_id]) costs several
            # times the host work per call for the same rows. The method, not
            # torch.index_select (which PyG replaces by a Python wrapper), and no cast to
            # the device the ids are on already (a call that releases the GIL, a switch to
            # the model's thread, for nothing)
            if n_id.device != self.table.device:
                n_id = n_id.to(self.table.device)
            return self.table.index_select(0, n_id)
        if self.mode == "sparse":
            rows = csr_rows(self.table, n_id.to(self.table.device))
            return rows.to(self.device, non_blocking=True)
        n_id = n_id.to(self.device)
        if self.mode == "uva":
            # import here: the CUDA backend loads only when a GPU path runs (as the registry
            # loads it), and "uva" mode runs only on a GPU with CuPy
            from gsample.backend.cuda.gather import device_pointer, gather_rows

            if self._address is None:
                self._address = device_pointer(self.table)
            out = torch.empty(
                (n_id.numel(), *self.table.shape[1:]), dtype=self.table.dtype, device=self.device
            )
            return gather_rows(
                self.table, n_id, out, self.cache, self.slot, self._hits, self._address
            )
        if self.cache is None:
            rows = self.table.index_select(0, n_id.cpu())
            return rows.to(self.device, non_blocking=True)
        slot = self.slot[n_id]
        hit = slot >= 0
        out = torch.empty(
            (n_id.numel(), *self.table.shape[1:]), dtype=self.table.dtype, device=self.device
        )
        out[hit] = self.cache[slot[hit]]
        out[~hit] = self.table[n_id[~hit].cpu()].to(self.device, non_blocking=True)
        self._hits += hit.sum()
        return out


def _cupy() -> bool:
    # import here: CuPy is optional (pip install gsample[cuda])
    try:
        import cupy  # noqa: F401  (only whether it imports)
    except ImportError:
        return False
    return True


__all__ = ["FeatureStore", "adjacent", "batch_nodes", "csr_rows"]
