"""``A.random_walk`` on the GPU: every step of every walker in one launch (``kernels/walk.cu``).

One thread per walker runs the torch reference's algorithm (``gsample.backend.torch.walk``)
with the same draws, so the walks are the torch backend's, bit for bit: uniform, weighted
(alias tables, built by the ``alias_table`` op: once per graph in a compiled sampler),
node2vec (the edge test is a search in the sorted rows of the previous node's column,
sorted once per graph when the CSC does not keep them so, made only where the attempt's
acceptance coin needs its answer: :data:`LAZY_EDGE_TEST`) and the stop / restart / jump
variants. Nothing is read back but two (deferred) flags: a rejection loop that ran past
its bound, which a correct input never sets, and a seed outside the graph, which the kernel
guards whoever made it (its walk is all ``-1``) and the host raises as an ``IndexError``.

A graph in pinned host memory (``placement="uva"``) with many walkers (one per
:data:`~gsample.backend.cuda.nodewise.SWEEP_DENSITY` nodes or more: a large super-batch) is
walked a step at a time instead, the walkers sorted by the node they stand on before each
step, so that the GPU reads host memory in address order (``gs_random_walk_step``); the
draws, and so the walks, are the same.

A UVA graph's GPU cache (:mod:`gsample.formats.cache`) serves the rows of its cached columns
(the same values, so the same walks) and counts the rows the walks read and those it served
(``H.cache.stats()``); node2vec's sorted rows and the alias tables are read as they are. The
walks read a UVA graph's int32 rows (host and cache) where it keeps them
(:func:`gsample.backend.cuda.extract.rows_read`; ``GS_ROW=int``).

Two entry points: :func:`random_walk` (eager calls and the plain runtime: an ``int`` key)
and :func:`random_walk_sync_free` (the sync-free runtime: a
:class:`~gsample.base.random.DeviceKey` the kernel reads on the device, so a captured CUDA graph
replays with new keys, and which may stand for a super-batch: the N mini-batches' walkers in
the same single launch).
"""

from __future__ import annotations

import torch

from gsample.backend.cuda.extract import _cache, rows_read
from gsample.backend.cuda.module import launch, memset
from gsample.backend.cuda.nodewise import SWEEP_DENSITY, by_node, exact
from gsample.backend.registry import cuda_impl
from gsample.backend.torch import walk as reference
from gsample.base import validate as V
from gsample.base.random import BatchKeys, ColumnKeys, DeviceKey
from gsample.formats.bounded import BoundedIds
from gsample.formats.csc import CSC
from gsample.formats.placement import is_mapped
from gsample.ir import Op

#: threads per block: a mini-batch of walkers is small, so small blocks spread it over SMs
_THREADS = 64
#: walkers from which one launch writes its walks step-major and transposes them (walk.cu's
#: GS_WALK_TIME_MAJOR; fewer, and every walker's row stays in the L2 cache until it is full);
#: None: never. A super-batch's walkers (a products-sized epoch's 196,608 and more) write
#: whole sectors a step at a time where a row per walker scatters 8-byte stores; a mini-batch's
#: rows fit in the L2 cache (its tests run both layouts)
TIME_MAJOR_MIN: int | None = 1 << 16
#: blocks of :data:`_THREADS` walkers ``gs_random_walk`` is compiled to fit on a
#: multiprocessor (walk.cu's ``GS_WALK_MIN_BLOCKS``: registers capped); None: the compiler's
#: choice
MIN_BLOCKS: int | None = None
#: node2vec's edge test (walkstep.cuh's switches; every setting gives the same walks, and
#: ``False, 2, False, False`` is the plain binary search): LAZY_EDGE_TEST draws an attempt's
#: acceptance coin first and searches column ``prev`` only where the coin falls between ``1``
#: and ``1/q`` (``GS_WALK_LAZY``; p = 2, q = 0.5: half the attempts); SEARCH_WAYS 2, 4 or 8:
#: a search round reads ``SEARCH_WAYS - 1`` pivots at once (``GS_WALK_WAYS``: fewer dependent
#: rounds, a few more reads); PREFETCH_PIVOTS reads the first round's pivots as soon as the
#: coin says the column will be searched, beside ``indptr[cur]`` (``GS_WALK_PREFETCH``, with
#: SEARCH_WAYS 4 or 8); KEEP_PREV_BOUNDS keeps ``prev``'s column bounds from the move that
#: read them instead of reading them again (``GS_WALK_KEEP``)
LAZY_EDGE_TEST: bool = True
SEARCH_WAYS: int = 4
PREFETCH_PIVOTS: bool = True
KEEP_PREV_BOUNDS: bool = True
#: compile first-order walks without node2vec's code (``GS_WALK_NODE2VEC`` 0): fewer registers
#: held, more walkers resident per multiprocessor; False: one module for both
LEAN_FIRST_ORDER: bool = True
#: walkers a step of an address-ordered walk (``gs_random_walk_step``, a UVA graph) has in
#: flight at once, rounded up to whole blocks; the kernel strides over the rest. The GPU keeps
#: few address translations of host memory: reads in flight spread over less of the graph's
#: rows share them, where a thread per walker keeps every resident walker's read in flight
#: at once, across gigabytes. None: a thread per walker (also where a GPU cache holds every
#: edge)
STEP_IN_FLIGHT: int | None = 6144


@cuda_impl(Op.RANDOM_WALK)  # kernels/walk.cu
def random_walk(
    A: CSC,
    seeds: torch.Tensor,
    length: int,
    key,
    alias=None,
    p: float = 1.0,
    q: float = 1.0,
    stop_prob: float = 0.0,
    restart_prob: float = 0.0,
    jump_prob: float = 0.0,
) -> torch.Tensor:
    """``A.random_walk(seeds, length, ...)`` in one kernel launch.

    Parameters
    ----------
    A : CSC
        The whole graph (on the GPU; CPU inputs run the reference code).
    seeds : LongTensor, shape (W,)
        Start nodes (checked by the caller).
    length : int
        Steps per walk.
    key : int or gsample.base.random.DeviceKey
        The op's key (a super-batch's keys: :func:`random_walk_sync_free`).
    alias, p, q, stop_prob, restart_prob, jump_prob
        As :func:`gsample.backend.torch.walk.random_walk`.

    Returns
    -------
    LongTensor, shape (W, length + 1)
        Column 0 the seeds, then the walk; ``-1`` after a stop.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> with gs.use_backend("cuda"):  # doctest: +SKIP
    ...     walks = A.to("cuda").random_walk(seeds.cuda(), 80)
    """
    if isinstance(key, DeviceKey):
        return random_walk_sync_free(
            A, seeds, length, key, alias, p, q, stop_prob, restart_prob, jump_prob
        )
    args = {
        "alias": alias,
        "p": p,
        "q": q,
        "stop_prob": stop_prob,
        "restart_prob": restart_prob,
        "jump_prob": jump_prob,
    }
    if not A.indptr.is_cuda or isinstance(key, (BatchKeys, ColumnKeys)):
        return reference.random_walk(A, seeds, length, key, **args)
    return _launch(A, seeds, length, int(key), None, 0, A.num_nodes, **args)


@cuda_impl(Op.RANDOM_WALK, sync_free=True, syncs=False, bounded_out=False)
def random_walk_sync_free(
    A: CSC,
    seeds,
    length: int,
    key: DeviceKey,
    alias=None,
    p: float = 1.0,
    q: float = 1.0,
    stop_prob: float = 0.0,
    restart_prob: float = 0.0,
    jump_prob: float = 0.0,
) -> torch.Tensor:
    """:func:`random_walk` with a device key: no host synchronisation (CUDA-graph safe).

    ``key.copies > 1`` (a super-batch of ``key.num_nodes``-node mini-batches): ``seeds`` are
    ids ``b * n + v`` grouped by batch, walker ``w`` of batch ``b`` draws as position ``w -
    (first walker of b)`` with mini-batch ``key.first + b``'s key, and the result's ids are
    encoded the same way (``-1`` stays ``-1``). Seeds of a bounded size (from a sync-free op)
    are read back first: a walk's result has one row per seed.
    """
    if isinstance(seeds, BoundedIds):
        seeds = exact(seeds)
    args = {
        "alias": alias,
        "p": p,
        "q": q,
        "stop_prob": stop_prob,
        "restart_prob": restart_prob,
        "jump_prob": jump_prob,
    }
    if not A.indptr.is_cuda:
        return reference.random_walk(A, seeds, length, key.host(), **args)
    n = key.num_nodes if key.copies > 1 else 0
    return _launch(A, seeds, length, 0, key.tensor, n, key.copies * n if n else A.num_nodes, **args)


def _launch(
    A: CSC,
    seeds,
    length: int,
    key0: int,
    key_tensor,
    n: int,
    M: int,
    alias,
    p,
    q,
    stop_prob,
    restart_prob,
    jump_prob,
) -> torch.Tensor:
    """The walks in one launch of ``gs_random_walk``, or, on a UVA graph with a walker per
    :data:`SWEEP_DENSITY` nodes or more, a step at a time in address order (``1 + length``
    launches). ``M``: the seeds' id space, the graph's nodes or a super-batch's
    ``copies * n`` ids."""
    W, L, dev = seeds.numel(), length, seeds.device
    out = torch.empty((W, L + 1), dtype=torch.int64, device=dev)  # every entry written
    if W == 0:
        return out
    seeds = seeds.to(torch.int64).contiguous()
    indptr = A.indptr.to(torch.int64).contiguous()
    rows = A.rows.to(torch.int64).contiguous()
    node2vec = p != 1.0 or q != 1.0
    srows = reference.sorted_rows(A)[0].contiguous() if node2vec else rows
    inv_p, inv_q = 1.0 / p, 1.0 / q
    c1, c2, c3 = reference.thresholds(stop_prob, restart_prob, jump_prob)
    # failed[0]: node2vec's rejection loop ran past its bound; failed[1]: a seed out of range;
    # failed[2]: the steps' own order or state out of range (an internal error)
    failed = torch.empty(3, dtype=torch.int32, device=dev)
    memset(failed, 0)
    table = 0 if alias is None else alias.contiguous()
    # a UVA graph's int32 rows in host memory, where it keeps them (the walks' reads lie
    # half as far apart and share more address translations), and its GPU cache's (int32
    # rows too)
    read = rows_read(A, rows)[0]
    (slot, crows, cE, counters), params = cache_args(A, read)
    key = 0 if key_tensor is None else key_tensor
    amax = max(inv_p, 1.0, inv_q)
    params = (*params, *_node2vec_params(node2vec))
    if not (is_mapped(read) and A.num_nodes <= W * SWEEP_DENSITY):
        major = TIME_MAJOR_MIN is not None and W >= TIME_MAJOR_MIN
        steps = torch.empty((L + 1, W), dtype=torch.int64, device=dev) if major else out
        launch(
            "walk",
            "gs_random_walk",
            W,
            indptr,
            read,
            srows,
            table,
            seeds,
            W,
            L,
            A.num_nodes,
            key0,
            key,
            n,
            M,
            bool(node2vec),
            inv_p,
            inv_q,
            amax,
            c1,
            c2,
            c3,
            steps,
            failed,
            slot,
            crows,
            cE,
            counters,
            block=_THREADS,
            params=(
                *params,
                *((("WALK_TIME_MAJOR", "1"),) if major else ()),
                *((("WALK_MIN_BLOCKS", str(MIN_BLOCKS)),) if MIN_BLOCKS else ()),
            ),
        )
        if major:  # back to a row per walker, a tile at a time
            tiles = -(-(L + 1) // 32) * -(-W // 32)
            launch(
                "transpose",
                "gs_transpose_i64",
                tiles,
                steps,
                L + 1,
                W,
                out,
                block=256,
                grid=min(tiles, 1 << 20),
            )
        _raise_flags(failed, M, node2vec)
        return out
    # a UVA graph with many walkers: a step at a time, the walkers sorted by the node they
    # stand on before each step, so that host memory is read in address order
    state = torch.empty((W, 4), dtype=torch.int64, device=dev)
    launch(  # the steps' module (their compile parameters)
        "walk",
        "gs_random_walk_start",
        W,
        seeds,
        W,
        L,
        A.num_nodes,
        n,
        M,
        state,
        out,
        failed,
        params=params,
    )
    step_grid = None
    # a GPU cache of every edge serves every read from device memory, where more reads in
    # flight only help: no cap then
    if STEP_IN_FLIGHT is not None and cE < read.numel():
        step_grid = max(1, -(-min(STEP_IN_FLIGHT, W) // _THREADS))
    for t, order in enumerate(_walker_orders(state, L, A.num_nodes)):
        launch(
            "walk",
            "gs_random_walk_step",
            W,
            indptr,
            read,
            srows,
            table,
            seeds,
            W,
            L,
            A.num_nodes,
            key0,
            key,
            n,
            bool(node2vec),
            inv_p,
            inv_q,
            amax,
            c1,
            c2,
            c3,
            order,
            t,
            state,
            out,
            failed,
            slot,
            crows,
            cE,
            counters,
            block=_THREADS,
            grid=step_grid,
            params=params,
        )
    _raise_flags(failed, M, node2vec)
    V.fail_if(failed[2:], RuntimeError, _STEP_ERROR)
    return out


def _node2vec_params(node2vec: bool) -> tuple:
    """The walk kernels' compile parameters for node2vec's edge test (the module constants
    above), or those leaving node2vec's code out of a first-order walk's module.

    Examples
    --------
    >>> _node2vec_params(True)
    (('WALK_LAZY', 1), ('WALK_WAYS', 4), ('WALK_PREFETCH', 1), ('WALK_KEEP', 1))
    >>> _node2vec_params(False)
    (('WALK_NODE2VEC', 0),)
    """
    if not node2vec:
        return (("WALK_NODE2VEC", 0),) if LEAN_FIRST_ORDER else ()
    if SEARCH_WAYS not in (2, 4, 8):
        raise ValueError(f"SEARCH_WAYS: 2, 4 or 8, got {SEARCH_WAYS!r}")
    return (
        ("WALK_LAZY", int(bool(LAZY_EDGE_TEST))),
        ("WALK_WAYS", int(SEARCH_WAYS)),
        ("WALK_PREFETCH", int(bool(PREFETCH_PIVOTS))),
        ("WALK_KEEP", int(bool(KEEP_PREV_BOUNDS))),
    )


_STEP_ERROR = (
    "random_walk: a step's walker order or state fell outside the walkers or the graph; "
    "nothing was read or written through it, and the call's walks are void. This is a bug "
    "in gsample: please report it"
)


def _raise_flags(failed: torch.Tensor, M: int, node2vec: bool) -> None:
    V.fail_if(failed[1:2], IndexError, f"seeds: a node id is out of range for a graph of {M} nodes")
    if node2vec:
        V.fail_if(
            failed[:1],
            RuntimeError,
            "random_walk: node2vec rejection sampling "
            "ran past its bound of 2**20 attempts (p or q too extreme)",
        )


def _walker_orders(state: torch.Tensor, steps: int, N: int):
    """Before each of ``steps`` steps (``kernels/walk.cu``'s ``gs_random_walk_step``), the
    walkers sorted by the node they stand on, stopped ones last.

    Parameters
    ----------
    state : LongTensor, shape (W, 4)
        The walkers' state: column 0 the node each stands on, ``-1`` once it stopped; read
        anew before each step (the generator yields after the previous step's launch).
    steps : int
    N : int
        The graph's nodes (int32 keys sort faster, where the ids fit).

    Yields
    ------
    LongTensor, shape (W,)
        A permutation of the walkers.

    Examples
    --------
    >>> import torch
    >>> state = torch.tensor([[5, -1, 0, 5], [-1, 3, 1, 8], [2, 0, 2, 2]])
    >>> next(_walker_orders(state, 1, 10))
    tensor([2, 0, 1])
    """
    for _ in range(steps):
        at = state[:, 0]
        yield by_node(at, at >= 0, N)


def cache_args(A: CSC, rows: torch.Tensor) -> tuple:
    """The walk kernels' GPU-cache arguments and their compile parameters.

    Parameters
    ----------
    A : CSC
        The graph a walk reads.
    rows : Tensor, shape (E,)
        The rows the kernel reads: int64, or a UVA graph's int32 rows in host memory
        (:func:`gsample.backend.cuda.extract.rows_read`).

    Returns
    -------
    tuple
        ``((slot, crows, cE, counters), params)``: a whole UVA graph's GPU cache
        (:mod:`gsample.formats.cache`; ``slot`` (N,), ``crows`` (cE,), ``counters`` (2,))
        where its rows have ``rows``' dtype, with ``params`` ``(("WALK_CACHE", 1),)``; else
        nulls (``0``) and ``()``: every row read from the graph, nothing counted, the kernel
        compiled without the cache's code (``GS_WALK_CACHE`` 0). A cache of ``indptr``
        alone counts reads, none a hit. ``params`` end with ``("ROW", "int")`` where
        ``rows`` are int32 (``GS_ROW``: the rows' and the cache's rows' type).

    Examples
    --------
    >>> import gsample as gs
    >>> A = gs.datasets.rmat(100, 500, seed=0)
    >>> cache_args(A.csc, A.csc.rows)       # no GPU cache
    ((0, 0, 0, 0), ())
    """
    cache = _cache(A, rows)
    row = (("ROW", "int"),) if rows.dtype == torch.int32 else ()
    if cache is None:
        return (0, 0, 0, 0), row
    on = (("WALK_CACHE", 1), *row)
    if cache.slot is None:  # the device indptr alone: every read counted, none a hit
        return (0, 0, 0, cache.counters), on
    return (cache.slot, cache.rows, cache.rows.numel(), cache.counters), on


__all__ = [
    "cache_args",
    "random_walk",
    "random_walk_sync_free",
]
