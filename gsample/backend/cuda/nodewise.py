"""Sync-free node-wise sampling on the GPU: ``A[:, cols].individual_sample(k)`` and
``all_nodes`` without reading a size back to the host (``kernels/nodewise.cu``,
``kernels/frontier.cu``).

These are the CUDA backend's sync-free implementations (``Impl.sync_free``): they take a
frontier that is a :class:`~gsample.formats.bounded.BoundedIds` (or an exact tensor) and
return bounded values whose sizes stay on the device. Buffers come from bounds known from
the inputs' buffer sizes: ``k`` edges per column of the frontier's buffer, columns plus
sampled edges for ``all_nodes``. Samples are bit for bit the torch backend's (the same
Floyd draws, with the same keys; a super-batch's columns draw with their mini-batch's key
and their position within it). Weighted sampling is taken only from the graph's alias tables
(``method="alias"``, with replacement; the tables built once per graph by the
``alias_tables`` pass): the sampler is registered ``without=("probs", "method")`` ``unless``
an ``alias`` input is there, so lowering picks the exact implementation for any other node
with ``probs`` (no hidden read-back inside a step marked sync-free, which would break a CUDA
graph's capture). Matrices outside what the kernels take (other than the whole graph, a
sub-matrix's row space) are trimmed (one read-back) and run the exact implementation.

The frontier kernels keep two bitmaps over the id space per (device, size), all zero
between calls (each call clears the words it set): no clearing launch.
"""

from __future__ import annotations

import functools

import torch

from gsample.backend.cuda import finalize, sampling
from gsample.backend.cuda.extract import _cache, _eids, _index_arrays, _params, rows_read
from gsample.backend.cuda.module import launch, memset
from gsample.backend.registry import cuda_impl
from gsample.base import validate as V
from gsample.base.random import DeviceKey
from gsample.base.readback import refuse_capture
from gsample.formats.bounded import BoundedCSC, BoundedIds, counts, trim
from gsample.formats.csc import CSC
from gsample.formats.placement import is_mapped
from gsample.ir import Op

_TILE = 1024  # items per tile of the frontier kernels (GS_TILE)
#: a UVA graph is sampled in address order when its frontier's buffer has a column per this
#: many nodes (walks: a walker): sparser, the columns share few pages of ``indptr``, and the
#: order's sort and second launch cost more than the translations they save. Decided from
#: sizes, never values, so that a captured CUDA graph replays the same launches
SWEEP_DENSITY = 64
_THREADS = 256
_WARPS = _THREADS // 32


def exact(value):
    """A bounded value trimmed, for the exact implementations: its sizes are read back
    together with every pending check flag (:func:`gsample.base.validate.read_back`), so a call
    whose ids were flagged raises there, before any size its bad ids made is used."""
    if isinstance(value, (BoundedIds, BoundedCSC)):
        return trim(value, V.read_back(counts(value)))
    return value


def _frontier(cols):
    """``(buffer, count tensor or None)`` of a frontier."""
    if isinstance(cols, BoundedIds):
        return cols.data, cols.count
    return cols.to(torch.int64).contiguous(), None


# ----------------------------------------------------------------------------- sampling
def _id_error(name: str, M: int):
    def message(err):
        if err[0]:
            return f"{name}: node id {err[2]} is negative"
        return f"{name}: node id {err[3]} is out of range for a graph of {M} nodes"

    return message


# uniform, or weighted from the graph's alias tables (an ``alias`` input: the alias_tables
# pass adds it for method="alias" with weights of the graph alone); other weighted nodes
# lower to the exact sampler
@cuda_impl(
    Op.SLICE_INDIVIDUAL_SAMPLE,
    sync_free=True,
    checks=("cols",),
    without=("probs", "method"),
    unless=("alias",),
)
def slice_individual_sample(
    A: CSC, cols, k: int, replace: bool, key: DeviceKey, probs=None, method: str = "cdf", alias=None
):
    """``A[:, cols].individual_sample(k, replace=replace)``, uniform or (with the graph's
    alias tables) weighted, sync-free, one launch.

    Parameters
    ----------
    A : CSC
        The graph (no row or column space of its own).
    cols : LongTensor (C,) or BoundedIds
        The frontier (global ids; in a super-batch, ids ``b * n + v``). Its ids are checked
        by the kernel (a deferred :func:`gsample.base.validate.fail_if`): a bad one is an empty
        column, of id 0 in the result's ``col_ids`` (never the caller's tensor, unchanged).
    k, replace
        As ``individual_sample``.
    key : gsample.base.random.DeviceKey
        The op's key (a super-batch's: ``copies`` mini-batches of ``num_nodes`` nodes).
    probs, method, alias
        Weighted draws are taken with ``method="alias"``, ``replace`` and ``alias``, the
        graph's alias tables for ``probs`` (LongTensor, shape (A.nnz, 2): the
        ``alias_table`` op's value, built once per graph; the draws read only the tables).
        Other weighted draws are not taken (registered ``without`` them, see
        :func:`register`): ``sampling.slice_individual_sample`` makes them.

    Returns
    -------
    BoundedCSC
        ``k`` edge slots per column of the frontier's buffer (``C * k``), the columns' true
        count on the device; row space of all nodes (encoded in a super-batch).
    """
    n = key.num_nodes if key.copies > 1 else 0
    C = (cols.data if isinstance(cols, BoundedIds) else cols).numel()
    weighted = probs is not None
    tables = (
        weighted
        and method == "alias"
        and replace
        and alias is not None
        and alias.is_cuda
        and alias.shape == (A.nnz, 2)
    )
    if (
        A.row_ids is not None
        or A.col_ids is not None
        or (weighted and not tables)
        or not A.indptr.is_cuda
        or _too_large(C * k, A.indptr.device)
    ):
        refuse_capture()  # the exact code reads sizes back
        trimmed = exact(cols)
        V.ids(trimmed, "cols", A.num_nodes * max(key.copies, 1), trimmed.device)
        return sampling.slice_individual_sample(
            A, trimmed, k, replace, key.host(), probs, method, alias
        )
    buf, ncols = _frontier(cols)
    C, dev = buf.numel(), buf.device
    M = A.num_nodes * key.copies if n else A.num_nodes
    indptr_g, rows_g = _index_arrays(A)
    # a warp per column, or 32 / W columns of W lanes at once (kernels/nodewise.cu's
    # gs_group); more per warp once there are enough blocks without (a tile per block and a
    # short chain of tiles for the scan), always a multiple of those at once
    at_once = 4 if k <= 8 else 2 if k <= 16 else 1
    per_warp = max(1, min(32, C // (_WARPS * 2048)))
    per_warp = -(-per_warp // at_once) * at_once
    tiles = -(-C // (_WARPS * per_warp))
    state = torch.empty(1 + tiles + 6, dtype=torch.int64, device=dev)
    memset(state, 0)
    # one allocation: the result's indptr, then its col_ids (the frontier's clamped copy)
    indptr, col_ids = torch.empty(2 * C + 1, dtype=torch.int64, device=dev).split((C + 1, C))
    E = C * k
    gathers = A.values is not None or A.eids is not None
    rows = torch.empty(E, dtype=torch.int64, device=dev)
    pos = torch.empty(E, dtype=torch.int64, device=dev)
    if gathers:
        memset(pos, 0)  # padding: valid positions to gather at
    if C == 0:
        memset(indptr, 0)
    table = alias.to(torch.int64).contiguous() if tables else None
    # a UVA graph's int32 rows in host memory, where it keeps them (half the distance
    # between the reads, which share more address translations), and its GPU cache (of
    # int32 rows too): cached columns' rows and edge ids read from the device, the edge ids
    # gathered by the kernel (through the cache) rather than by torch (the bus)
    params = _params(indptr_g)
    if indptr_g.dtype == torch.int64:
        rows_g, cache = rows_read(A, rows_g)
    else:  # a device graph's int32 copy: no cache, no host rows
        cache = _cache(A, rows_g)
    if rows_g.dtype == torch.int32 and indptr_g.dtype == torch.int64:
        params = (*params, ("ROW", "int"))
    eids_g = _eids(A) if cache is not None else None
    eids = torch.zeros(E, dtype=torch.int64, device=dev) if eids_g is not None else None
    slot, crows, cE, ceids, counters = (
        (0, 0, 0, 0, 0)
        if cache is None
        else (_opt(cache.slot), cache.rows, cache.rows.numel(), _opt(cache.eids), cache.counters)
    )
    # a graph in pinned host memory is read in address order, in two launches (the kernel's
    # phases 1 and 2: the counts, scanned here, then the draws), once the frontier is dense
    # enough for its columns to share pages of the host arrays
    sweep = is_mapped(rows_g) and A.num_nodes <= C * SWEEP_DENSITY
    order = _address_order(buf, ncols, n) if sweep else None
    run = functools.partial(
        launch,
        "nodewise",
        "gs_sample_uniform",
        tiles * _THREADS,
        indptr_g,
        rows_g,
        buf,
        C,
        _opt(ncols),
        n,
        M,
        k,
        replace,
        _opt(table),
        key.tensor,
        state,
        tiles,
        per_warp,
        indptr,
        rows,
        pos,
        slot,
        crows,
        cE,
        _opt(eids_g),
        ceids,
        _opt(eids),
        counters,
        col_ids,
        block=_THREADS,
        grid=tiles,
        params=params,
    )
    if order is None:
        run(0, 0)
    else:
        run(order, 1)
        indptr[1:] = indptr[1:].cumsum(0)
        memset(state, 0)  # the tiles' tickets; the id checks are made again
        run(order, 2)
    err = state[1 + tiles :]
    V.fail_if(err[4:5], IndexError, _id_error("cols", M), err[:4])
    if order is not None:
        V.fail_if(err[5:6], RuntimeError, _ORDER_ERROR)
    if eids is None:
        eids = pos if A.eids is None else _at(A.eids, pos)
    out = CSC(
        num_nodes=M,
        indptr=indptr,
        rows=rows,
        row_ids=None,
        col_ids=col_ids,
        values=_at(A.values, pos),
        eids=eids,
    )
    return BoundedCSC(out, ncols)


_ORDER_ERROR = (
    "individual_sample: the address order of the frontier (or its offsets) fell outside "
    "the frontier; nothing was read or written through it, and the call's sample is void. "
    "This is a bug in gsample: please report it"
)


def _opt(t):
    return 0 if t is None else t


def _address_order(buf: torch.Tensor, ncols, n: int) -> torch.Tensor:
    """The frontier's positions ordered by the node each column reads (padding last).

    Parameters
    ----------
    buf : LongTensor, shape (C,)
        The frontier's buffer (ids ``b * n + v`` in a super-batch of ``n`` nodes a copy).
    ncols : LongTensor or None
        Its true count on the device (None: all ``C``).
    n : int
        Nodes a copy in a super-batch, or 0.

    Returns
    -------
    LongTensor, shape (C,)
        A permutation of ``range(C)``: the kernel reads a UVA graph's columns in this order,
        so that its reads of host memory sweep it in address order.

    Examples
    --------
    >>> import torch
    >>> _address_order(torch.tensor([7, 2, 5, 0]), torch.tensor(3), 0)
    tensor([1, 2, 0, 3])
    """
    v = torch.remainder(buf, n) if n else buf
    real = None if ncols is None else torch.arange(buf.numel(), device=buf.device) < ncols
    return by_node(v, real, n if n else None)


def by_node(nodes: torch.Tensor, valid: torch.Tensor | None, bound: int | None) -> torch.Tensor:
    """Positions of ``nodes`` sorted by node, those not ``valid`` last: the address order of
    the reads they make (:func:`_address_order`, the walks' ``_walker_orders``).

    Parameters
    ----------
    nodes : LongTensor, shape (C,)
    valid : BoolTensor, shape (C,), or None (all valid)
    bound : int or None
        An upper bound of the valid nodes, if known: below ``2**31 - 1`` the keys sort as
        int32 (faster). An invalid entry may hold anything (it is not read).

    Returns
    -------
    LongTensor, shape (C,)
        A permutation of ``range(C)``.

    Examples
    --------
    >>> import torch
    >>> by_node(torch.tensor([5, -1, 2]), torch.tensor([True, False, True]), 10)
    tensor([2, 0, 1])
    """
    narrow = torch.int32 if bound is not None and bound < 2**31 - 1 else torch.int64
    if valid is not None:
        nodes = torch.where(valid, nodes, torch.iinfo(narrow).max)
    return torch.argsort(nodes.to(narrow))


def _at(t, pos):
    """``t[pos]`` along the first dimension (None for None), as ``index_select`` (``pos``:
    positions the kernels made, all in range)."""
    return None if t is None else t.index_select(0, pos)


def _too_large(slots: int, device) -> bool:
    """Whether ``slots`` edge slots (rows and positions, 16 bytes each) would take more than
    a quarter of the GPU: a bound that large (a huge k) is not allocated; the exact
    implementation sizes its result by the frontier's degrees (and checks k)."""
    return slots > (1 << 26) and 16 * slots > V.memory_bytes(device) // 4


# ----------------------------------------------------------------------------- frontiers
_SCRATCH: dict = {}
_RETIRED: list = []


def _bitmaps(device: torch.device, words: int):
    """Two all-zero bitmaps of at least ``words`` 32-bit words, per device, and a flag word
    past them (the kernels leave all of it zero; samplers on one device share them: one
    stream per device at a time, as the runtime runs). Allocated outside any CUDA graph
    capture (a region's first call runs eagerly), so replays share them too. Outgrown
    bitmaps are kept, never freed: a captured
    graph reads and clears the ones it was captured with (freed, their memory would be
    another tensor's). Sizes at least double, so all of them take at most twice the
    largest."""
    key = device.index
    have = _SCRATCH.get(key)
    if have is None or have.shape[1] <= words:
        if have is not None:
            _RETIRED.append(have)
            words = max(words, 2 * have.shape[1])
        have = torch.zeros((2, max(words + 1, 1024)), dtype=torch.int32, device=device)
        _SCRATCH[key] = have
    return have[0], have[1], have[1, -1:]


@cuda_impl(Op.ALL_NODES, sync_free=True)
def all_nodes(A, batches=None):
    """``A.all_nodes()`` of a sample, sync-free.

    Columns first (first occurrence), then the new rows in row-space order (ascending ids
    when the row space is all nodes; else in ``row_ids`` order, e.g. a collective sample's
    chosen rows); with ``batches`` ``(N, n)``, grouped by mini-batch. ``A`` is a
    :class:`BoundedCSC` or a CSC. Two launches for one mini-batch (four for a super-batch;
    one more with ``row_ids``), see ``kernels/frontier.cu``.

    Ids are guarded in the kernels: a column id outside ``[0, num_nodes)`` counts as 0 and
    an edge's row outside the row space marks nothing; either raises an ``IndexError``
    (a deferred :func:`gsample.base.validate.fail_if`: the matrix was not the sample of a graph).

    Returns
    -------
    BoundedIds
        A buffer of ``C + E`` ids (the columns' and the edges' buffers) and their count.
    """
    bounded = isinstance(A, BoundedCSC)
    csc = A.csc if bounded else A
    if (
        not isinstance(csc, CSC)
        or not csc.indptr.is_cuda
        or csc.col_ids is None
        or (bounded and A.nrows is not None)
    ):
        return finalize.all_nodes(exact(A), batches)
    ncols = A.ncols if bounded else None
    cols, rows = csc.col_ids.to(torch.int64).contiguous(), csc.rows.contiguous()
    row_ids = None if csc.row_ids is None else csc.row_ids.to(torch.int64).contiguous()
    C, E, dev = cols.numel(), rows.numel(), cols.device
    N, n = batches if batches is not None else (1, 0)
    W = ((csc.num_nodes if row_ids is None else row_ids.numel()) + 31) // 32  # words of R
    size = 1 << max(2 * C, 32).bit_length()  # hash slots: a power of two >= 2 C
    R, K, flag = _bitmaps(dev, max(W, (csc.num_nodes + 31) // 32))
    M, NR = csc.num_nodes, csc.num_nodes if row_ids is None else row_ids.numel()
    col_tiles = (C + _TILE - 1) // _TILE
    tiles = max(col_tiles + (W + _TILE - 1) // _TILE, 1)  # >= 1: a tile writes the count
    # one allocation (a call's host time is mostly allocations and launches): the hash table,
    # the scan's state, the count and the flag, the counters and the tiles' offsets (a
    # super-batch), each column's slot, the ids
    nc = max(2 * N, 1)
    row_tiles = max(tiles - col_tiles, 1)  # >= 1: the rows' pass writes the count
    # a super-batch scans its columns' tiles and its rows' tiles apart
    states = 1 + tiles if N == 1 else 2 + col_tiles + row_tiles
    lens = (2 * size, states, 2, nc, col_tiles if N > 1 else 0, max(C, 1), C + E)
    scratch = torch.empty(sum(lens), dtype=torch.int64, device=dev)
    table, state, count, counters, offsets, slot, out = scratch.split(lens)
    table = table.view(2, size)
    memset(table, 0xFF)  # free keys, the atomicMin start
    nnz = csc.indptr[-1:]  # padding columns are empty: the edge count
    rid, mask = _opt(row_ids), size - 1
    launch(
        "frontier",
        "gs_nodes_mark",
        max(C + E, 2 * N),
        cols,
        C,
        _opt(ncols),
        rows,
        E,
        nnz,
        rid,
        table[0],
        table[1],
        mask,
        slot,
        R,
        K,
        counters,
        2 * N if N > 1 else 0,
        M,
        NR,
        flag,
    )
    if row_ids is not None and row_ids.numel():
        launch(
            "frontier",
            "gs_nodes_drop_cols",
            row_ids.numel(),
            row_ids,
            row_ids.numel(),
            table[0],
            mask,
            R,
            M,
            flag,
        )
    memset(state, 0)
    if N == 1:
        launch(
            "frontier",
            "gs_nodes_scan_emit",
            tiles * _THREADS,
            cols,
            C,
            _opt(ncols),
            table[0],
            table[1],
            mask,
            slot,
            rid,
            R,
            K,
            W,
            col_tiles,
            tiles,
            state,
            out,
            count,
            M,
            flag,
            block=_THREADS,
            grid=tiles,
        )
        return _flagged(out, count, M)
    col_state, row_state = state.split((1 + col_tiles, 1 + row_tiles))
    columns = (cols, C, _opt(ncols), table[1], slot, n, N, M, counters)
    _launch_columns("gs_nodes_count", col_tiles, columns, col_state, offsets)
    launch("frontier", "gs_nodes_prefix", 1, counters, N, 0, block=1, grid=1)
    launch(
        "frontier",
        "gs_nodes_rows",
        row_tiles * _THREADS,
        rid,
        R,
        K,
        W,
        n,
        N,
        row_tiles,
        M,
        counters,
        row_state,
        out,
        count,
        flag,
        block=_THREADS,
        grid=row_tiles,
    )
    launch("frontier", "gs_nodes_prefix", 1, counters, N, 1, block=1, grid=1)
    _launch_columns("gs_nodes_emit", col_tiles, columns, offsets, out)
    return _flagged(out, count, M)


def _launch_columns(name: str, col_tiles: int, columns: tuple, *rest) -> None:
    """Launch ``gs_nodes_count`` or ``gs_nodes_emit`` of ``kernels/frontier.cu`` (a block per
    tile of columns; none without columns): their shared leading arguments ``columns`` (the
    columns, their count, the hash table's values, the columns' slots, ``n``, ``N``, ``M``
    and the per-batch counters), then ``rest``."""
    if col_tiles:
        launch(
            "frontier", name, col_tiles * _THREADS, *columns, *rest, block=_THREADS, grid=col_tiles
        )


def _flagged(out, count, M: int) -> BoundedIds:
    """``all_nodes``' result, its kernels' flag (``count[1]``) raising a deferred error."""
    V.fail_if(
        count[1:],
        IndexError,
        f"all_nodes: a node id of the matrix is outside [0, {M}) (not a sample of this graph)",
    )
    return BoundedIds(out, count[:1])


__all__ = ["all_nodes", "by_node", "slice_individual_sample"]
