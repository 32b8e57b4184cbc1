"""Anchor-shaped graphs and graphs on disk, built within memory.

``papers-like`` and ``products-like`` (:data:`ANCHOR_GRAPHS`) are undirected R-MAT graphs at
ogbn-papers100M's and ogbn-products' sizes, pinned (seed 0, the Graph500 quadrant
probabilities) so that figures measured on them compare across runs, machines and
libraries. :func:`undirected_rmat` builds them straight into CSC, column range by column
range, never sorting the whole edge array; :func:`save_csc` / :func:`load_csc` keep a graph
on disk as a memory-mappable CSC and :func:`load_coo` turns an edge list on disk into one,
each placing its arrays (device, or pinned host memory for ``placement="uva"``) without a
full copy in host memory first.

The build, for ``E`` drawn edges over ``N`` nodes (the same steps serve :func:`load_coo`):

1. **count**: draw the edges chunk by chunk and add their ends to per-node counts (both
   directions of every edge: a node's column holds one entry per edge end at it);
2. **map**: the nodes that occur are numbered ``0..n-1`` in id order (isolated ones
   dropped), and ``indptr`` is the cumulated counts;
3. **place**: draw each chunk again (or read it back, when keeping the drawn pairs costs at
   most half the finished CSC), sort the chunk's entries by ``(column, row)`` and write each
   at its column's cursor;
4. **sort**: within each column the chunks' runs are merged by sorting ranges of whole
   columns (at most ``chunk`` entries plus one column each) in place, so that every column
   lists its rows in ascending order: the canonical order of :class:`gsample.Matrix`.

The working memory beyond the finished CSC is a few arrays of ``N`` entries and one chunk's
entries, so the peak stays within twice the CSC.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import warnings
from typing import NamedTuple

import numpy as np
import torch
from tqdm.auto import tqdm

from gsample.base import validate as V
from gsample.base.random import GOLDEN, M1, M2, combine, hash_tensor, signed, sort_key
from gsample.datasets.synthetic import check_rmat
from gsample.formats.csc import CSC, segment_ptr
from gsample.formats.placement import choose, free_memory, map_host, require_cuda
from gsample.matrix.sparse import Matrix

#: bumped whenever the same arguments would draw a different graph: a cache written by an
#: older build is then stale
GENERATOR_VERSION = 1
#: the on-disk layout :func:`save_csc` writes and :func:`load_csc` reads
FORMAT = "gsample.csc"
FORMAT_VERSION = 1
HEADER = "header.json"
#: the row dtype of a :class:`gsample.Matrix` (its samplers read int64 rows); files hold
#: int32 rows where the node count allows and are widened as they are placed
MATRIX_ROWS = torch.int64
_RMAT_TAG = 0x524D4154  # "RMAT": the key prefix gs.datasets.rmat draws with
_SEED_TAG = 0x53454544  # "SEED"
_INT_KINDS = "iu"


class AnchorGraph(NamedTuple):
    """A pinned graph of :data:`ANCHOR_GRAPHS`: what is drawn, its seeds, and the degree
    profile it was published with (:func:`degree_profile`'s keys)."""

    name: str
    num_nodes: int  # drawn over (before isolated nodes are dropped)
    num_edges: int  # drawn (each stored in both directions)
    num_seeds: int  # training seeds, drawn uniformly from the graph's nodes
    profile: dict


#: ``name -> AnchorGraph``: undirected R-MAT (a = 0.57, b = c = 0.19, seed 0) at the sizes of
#: ogbn-papers100M (its 1,207,179 training nodes) and ogbn-products (196,608 seeds)
ANCHOR_GRAPHS = {
    "papers-like": AnchorGraph(
        "papers-like",
        111_059_956,
        1_615_685_872,
        1_207_179,
        {
            "nodes": 54_475_832,
            "edges": 3_231_371_744,
            "mean": 59.3,
            "median": 4,
            "p99": 639,
            "max": 1_957_871,
        },
    ),
    "products-like": AnchorGraph(
        "products-like",
        2_449_029,
        61_859_140,
        196_608,
        {
            "nodes": 1_833_086,
            "edges": 123_718_280,
            "mean": 67.5,
            "median": 8,
            "p99": 943,
            "max": 295_221,
        },
    ),
}


# ----------------------------------------------------------------------------- drawing
_S_GOLDEN, _S_M1, _S_M2 = signed(GOLDEN), signed(M1), signed(M2)


def _mix_(z: torch.Tensor, t: torch.Tensor) -> None:
    """The splitmix64 finaliser (``gsample.base.random.mix64_tensor``) in place, ``t`` its
    scratch: the same bits without a temporary per step."""
    for shift, mul in ((30, _S_M1), (27, _S_M2), (31, None)):
        torch.bitwise_right_shift(z, shift, out=t)
        t &= (1 << (64 - shift)) - 1  # a logical shift
        z ^= t
        if mul is not None:
            z *= mul


class _Draws:
    """The edges of ``gs.datasets.rmat(num_nodes, ...)``, edge ``e`` by edge ``e``: the same
    key, hash and quadrant rule, so the same seed draws the same edges (before rmat's node
    permutation, which :func:`_node_permutation` repeats).

    ``rmat`` hashes ``(key, level, e)`` per level; ``combine(key, level)`` is the same for
    every edge, so it is folded once per level here (half the hashing), and ``u >= t`` on
    ``u = (r >> 11) * 2**-53`` is compared as ``r >> 11 >= ceil(t * 2**53)`` (exact: ``u`` and
    ``t * 2**53`` are exact doubles)."""

    def __init__(self, num_nodes: int, seed: int, a: float, b: float, c: float, device):
        self.num_nodes, self.device = num_nodes, device
        self.levels = max(1, (num_nodes - 1).bit_length())
        self.key = combine(combine(0, seed), _RMAT_TAG)
        self.level_keys = [signed(combine(self.key, level)) for level in range(self.levels)]
        # rmat's comparisons: u >= a, u >= a + b, u >= a + b + c (Python's float sums)
        self.t_a, self.t_ab, self.t_abc = (math.ceil(t * 2.0**53) for t in (a, a + b, a + b + c))
        # elements per pass of the in-place ops: in cache on a CPU, large on a GPU
        self.step = 1 << (24 if device.type == "cuda" else 16)
        m = self.step
        self._z, self._t, self._x = (
            torch.empty(m, dtype=torch.int64, device=device) for _ in "123"
        )
        self._ge, self._down, self._right = (
            torch.empty(m, dtype=torch.bool, device=device) for _ in "123"
        )

    def draw(self, start: int, src: torch.Tensor, dst: torch.Tensor) -> None:
        """Folded ends (``[0, num_nodes)``, before the permutation) of edges ``start ..
        start + len(src) - 1`` into ``src`` and ``dst`` (any integer dtype holding them)."""
        total = src.numel()
        for i in range(0, total, self.step):
            m = min(self.step, total - i)
            z, t, x = self._z[:m], self._t[:m], self._x[:m]
            ge, down, right = self._ge[:m], self._down[:m], self._right[:m]
            s = torch.zeros(m, dtype=torch.int64, device=self.device)
            d = torch.zeros_like(s)
            torch.arange(start + i + 1, start + i + m + 1, out=x)  # (e + 1) * GOLDEN
            x *= _S_GOLDEN
            for h in self.level_keys:
                torch.add(x, h, out=z)  # combine(combine(key, level), e)
                _mix_(z, t)
                z >>= 11
                z &= (1 << 53) - 1  # u * 2**53
                torch.ge(z, self.t_ab, out=down)
                torch.ge(z, self.t_a, out=right)
                torch.ge(z, self.t_abc, out=ge)
                right ^= down  # quadrants 1 and 3 of (0 a | 1 b | 2 c | 3 d)
                right ^= ge
                s <<= 1
                s |= down
                d <<= 1
                d |= right
            if self.levels and (1 << self.levels) > self.num_nodes:
                s.remainder_(self.num_nodes)  # rmat folds ids into [0, num_nodes)
                d.remainder_(self.num_nodes)
            src[i : i + m] = s
            dst[i : i + m] = d


def _node_permutation(key: int, num_nodes: int, device) -> torch.Tensor:
    """rmat's node ids: folded id ``x`` is node ``perm[x]`` (hubs spread over the ids). A
    stable sort: where two 63-bit keys tie, the lower folded id comes first on every
    device."""
    nodes = torch.arange(num_nodes, device=device)
    keys = sort_key(hash_tensor(key, torch.full_like(nodes, -1), nodes))
    del nodes
    return torch.argsort(keys, stable=True)


# ----------------------------------------------------------------------------- CSC build
def _place(cols, rows_in, n, cursor, rows, ones, eid=None, eids=None) -> None:
    """Write one chunk's entries (``rows_in[i]`` in column ``cols[i]``, int64) at their
    columns' cursors: sorted by ``(column, row)`` (stable: ties keep their order, so edge ids
    stay ascending), then entry ``i`` of a column's run goes to ``cursor[column] + i``."""
    key = cols.mul_(n).add_(rows_in)  # < n**2 <= 2**63 (n is checked)
    del rows_in
    if eid is None:
        key = torch.sort(key).values
        order = None
    else:
        key, order = torch.sort(key, stable=True)
    col = torch.div(key, n, rounding_mode="floor")
    row = key.sub_(col * n)
    m = col.numel()
    idx = torch.arange(m, device=col.device)
    new = torch.ones(m, dtype=torch.bool, device=col.device)
    torch.ne(col[1:], col[:-1], out=new[1:])
    start = torch.cummax(torch.where(new, idx, 0), 0).values  # where the column's run starts
    del new
    pos = cursor[col]
    pos += idx
    pos -= start
    del idx, start
    rows[pos] = row.to(rows.dtype)
    if eids is not None:
        eids[pos] = eid[order]
    cursor.index_add_(0, col, ones[:m])


def _ranges(indptr: torch.Tensor, limit: int) -> list:
    """``[(c0, c1, p0, p1)]``: ranges of whole columns ``c0..c1-1`` (edges ``p0..p1-1``) of
    about ``limit`` edges each (more where one column alone holds more)."""
    cols = indptr.numel() - 1
    total = int(indptr[-1]) if cols >= 0 else 0
    if cols <= 0 or total == 0:
        return []
    marks = torch.arange(limit, max(total, limit), limit, device=indptr.device)
    cuts = torch.searchsorted(indptr, marks, right=True) - 1  # the column holding each mark
    ends = torch.tensor([0, cols], device=indptr.device)
    cuts = torch.unique(torch.cat([ends, cuts]))
    bounds = indptr[cuts]
    cuts, bounds = cuts.tolist(), bounds.tolist()
    return [
        (c0, c1, p0, p1)
        for c0, c1, p0, p1 in zip(cuts[:-1], cuts[1:], bounds[:-1], bounds[1:])
        if p1 > p0
    ]


def _range_keys(indptr, rows, n, c0, c1, p0, p1):
    """``(key, base)`` of the edges of columns ``c0..c1-1``: ``(column - c0) * n + row``
    (int64) and ``(column - c0) * n`` alone."""
    counts = indptr[c0 + 1 : c1 + 1] - indptr[c0:c1]
    local = torch.arange(c1 - c0, device=rows.device)
    base = torch.repeat_interleave(local, counts.to(rows.device), output_size=p1 - p0)
    base *= n
    return base + rows[p0:p1], base


def _sort_ranges(indptr, rows, n, limit, eids=None, ranges=None, bar=None) -> None:
    """Sort every column's rows in place (stable: equal rows keep their edge ids' order),
    a range of whole columns at a time."""
    for c0, c1, p0, p1 in _ranges(indptr, limit) if ranges is None else ranges:
        key, base = _range_keys(indptr, rows, n, c0, c1, p0, p1)
        if eids is None:
            key = torch.sort(key).values
        else:
            key, order = torch.sort(key, stable=True)
            eids[p0:p1] = eids[p0:p1][order]
            del order
        key -= base
        rows[p0:p1] = key.to(rows.dtype)
        del key, base
        if bar is not None:
            bar.update(p1 - p0)


def _unsorted_ranges(indptr, rows, n, limit) -> list:
    """The column ranges (:func:`_ranges`) where some column's rows are not ascending."""
    out = []
    for r in _ranges(indptr, limit):
        key, _ = _range_keys(indptr, rows, n, *r)
        if key.numel() > 1 and bool((key[1:] < key[:-1]).any()):
            out.append(r)
    return out


def _check_size(n: int, name: str) -> None:
    # keys (column * n + row) must stay below 2**63
    if n > 3_037_000_499:
        raise ValueError(f"{name}: at most 3,037,000,499 nodes (int64 sort keys), got {n:,}")


def _default_chunk(device: torch.device) -> int:
    return 1 << (24 if device.type == "cuda" else 20)


def _undirected_csc(
    num_nodes: int,
    num_edges: int,
    seed: int,
    a: float,
    b: float,
    c: float,
    device: torch.device,
    chunk: int,
    progress: bool,
    store: bool | None = None,
    rows_dtype: torch.dtype = MATRIX_ROWS,
) -> CSC:
    """The CSC of :func:`undirected_rmat` (``store``: keep the drawn pairs between the count
    and the place pass instead of drawing them twice; None: when they take at most half the
    finished CSC)."""
    draws = _Draws(num_nodes, seed, a, b, c, device)
    pair = torch.int32 if num_nodes <= 2**31 - 1 else torch.int64
    pair_bytes = 2 * num_edges * pair.itemsize
    csc_bytes = 2 * num_edges * rows_dtype.itemsize + 8 * (num_nodes + 1)
    if store is None:
        store = pair_bytes <= csc_bytes // 2
    chunks = [(i, min(i + chunk, num_edges)) for i in range(0, num_edges, chunk)]
    sort = len(chunks) > 1
    bar = tqdm(
        total=2 * num_edges + (2 * num_edges if sort else 0),
        disable=not progress,
        desc="undirected_rmat: draw",
        unit="edge",
        unit_scale=True,
    )
    ones = torch.ones(2 * min(chunk, max(num_edges, 1)), dtype=torch.int64, device=device)
    width = min(chunk, num_edges)
    if store:
        src_all = torch.empty(num_edges, dtype=pair, device=device)
        dst_all = torch.empty(num_edges, dtype=pair, device=device)
    else:
        src_buf = torch.empty(width, dtype=torch.int64, device=device)
        dst_buf = torch.empty(width, dtype=torch.int64, device=device)

    def ends(i, j, fresh):
        if store and not fresh:
            return src_all[i:j], dst_all[i:j]
        s, d = (src_all[i:j], dst_all[i:j]) if store else (src_buf[: j - i], dst_buf[: j - i])
        draws.draw(i, s, d)
        return s, d

    # 1. count: entries per folded id (each edge end is an entry of its node's column)
    deg = torch.zeros(num_nodes, dtype=torch.int64, device=device)
    for i, j in chunks:
        s, d = ends(i, j, True)
        deg.index_add_(0, s, ones[: j - i])
        deg.index_add_(0, d, ones[: j - i])
        bar.update(j - i)
    # 2. map: rmat's ids, the isolated ones dropped, renumbered in id order
    perm = _node_permutation(draws.key, num_nodes, device)
    by_id = torch.empty_like(deg)
    by_id[perm] = deg
    del deg
    keep = by_id > 0
    new_id = torch.cumsum(keep, 0)
    new_id -= 1
    n = int(new_id[-1]) + 1 if num_nodes else 0
    fmap = new_id[perm]  # folded id -> final id
    del new_id, perm
    indptr = segment_ptr(by_id[keep])
    del by_id, keep
    _check_size(n, "num_nodes")
    # 3. place
    bar.set_description("undirected_rmat: place")
    rows = torch.empty(2 * num_edges, dtype=rows_dtype, device=device)
    cursor = indptr[:-1].clone()
    for i, j in chunks:
        s, d = ends(i, j, False)
        fs, fd = fmap[s], fmap[d]
        _place(torch.cat([fd, fs]), torch.cat([fs, fd]), n, cursor, rows, ones)
        del fs, fd
        bar.update(j - i)
    del fmap, cursor, ones
    if store:
        del src_all, dst_all
    # 4. sort each column's rows (one chunk's placement is sorted already)
    if sort:
        bar.set_description("undirected_rmat: sort")
        _sort_ranges(indptr, rows, n, 2 * chunk, bar=bar)
    bar.close()
    return CSC(n, indptr, rows)


def _rmat_params(num_nodes, num_edges, seed, a, b, c) -> dict:
    """What the graph is a function of (a cache's header; its staleness test)."""
    return {
        "name": "gsample.datasets.undirected_rmat",
        "version": GENERATOR_VERSION,
        "num_nodes": num_nodes,
        "num_edges": num_edges,
        "seed": seed,
        "a": a,
        "b": b,
        "c": c,
    }


def undirected_rmat(
    num_nodes: int,
    num_edges: int,
    seed: int = 0,
    a: float = 0.57,
    b: float = 0.19,
    c: float = 0.19,
    device: str | torch.device = "cpu",
    progress: bool = False,
    chunk: int | None = None,
    cache: str | os.PathLike | None = None,
) -> Matrix:
    """An undirected R-MAT power-law graph, built straight into CSC within memory.

    The edges :func:`gsample.datasets.rmat` draws with the same arguments (the same seed draws
    the same edges, on every device), each stored in both directions as drawn: repeats and
    self-loops are kept (a self-loop twice). Nodes no edge touches are dropped and the rest
    renumbered ``0..n-1`` keeping rmat's id order. Every column lists its rows in ascending
    order. Built chunk by chunk (see the module docstring): count, map, place, sort, with no
    sort of the whole edge array; the peak memory stays within twice the finished CSC.

    Parameters
    ----------
    num_nodes, num_edges : int
        Nodes drawn over and edges drawn, ``N`` and ``E`` (the graph has ``n <= N`` nodes
        and ``2 E`` edges).
    seed : int
        The graph is a pure function of the arguments and ``seed``.
    a, b, c : float
        Quadrant probabilities (top-left, top-right, bottom-left), as in rmat.
    device : str or torch.device
        Where it is built and returned (a GPU builds ``papers-like`` in seconds).
    progress : bool
        A tqdm bar over the edges of each step.
    chunk : int, optional
        Edges drawn per step (``>= 1``; default ``2**24`` on a GPU, ``2**20`` on a CPU):
        bounds the working memory, never changes the graph.
    cache : str or os.PathLike, optional
        A folder holding this graph (:func:`save_csc`): read from it (memory-mapped) when its
        header names these arguments, else built and written there, a stale copy (other
        arguments, an older generator) replaced with a warning.

    Returns
    -------
    Matrix
        ``n x n``, symmetric, ``2 E`` edges, edge ids the CSC positions.

    Examples
    --------
    >>> A = gs.datasets.undirected_rmat(10_000, 50_000, seed=0)
    >>> A.num_edges, A.num_nodes < 10_000
    (100000, True)
    """
    num_nodes, num_edges, a, b, c, seed = check_rmat(num_nodes, num_edges, a, b, c, seed)
    progress = V.flag(progress, "progress")
    device = V.device(device)
    chunk = _default_chunk(device) if chunk is None else V.count(chunk, "chunk", low=1)
    _check_size(num_nodes, "num_nodes")
    folder = None if cache is None else pathlib.Path(_path(cache, "cache"))
    params = _rmat_params(num_nodes, num_edges, seed, a, b, c)
    if folder is not None:
        header = _read_header(folder)
        if header is not None and header.get("generator") == params:
            return load_csc(folder, device=device)
        if header is not None:
            old = header.get("generator") or {}
            diff = ", ".join(
                f"{k} {old.get(k)!r} -> {v!r}" for k, v in params.items() if old.get(k) != v
            )
            warnings.warn(
                f"cache: {folder} holds a stale graph ({diff}); it is rebuilt", stacklevel=2
            )
    # the finished CSC (int64 rows) and the per-node arrays of the build, named if too large
    V.fits(2 * num_edges, MATRIX_ROWS.itemsize, device, "num_edges", f"{2 * num_edges} edges")
    V.fits(num_nodes, 40, device, "num_nodes", f"building over {num_nodes} nodes")
    A = Matrix(_undirected_csc(num_nodes, num_edges, seed, a, b, c, device, chunk, progress))
    if folder is not None:
        save_csc(A, folder, generator=params, profile=degree_profile(A))
    return A


# ----------------------------------------------------------------------------- seeds, profile
def uniform_seeds(
    num_nodes: int, count: int, seed: int = 0, device: str | torch.device = "cpu"
) -> torch.Tensor:
    """``count`` distinct nodes drawn uniformly from ``0..num_nodes-1``, in a random order:
    the first ``count`` of a random permutation keyed by gsample's counter-based hash, so the
    same arguments give the same seeds on every device.

    Parameters
    ----------
    num_nodes, count : int
        ``0 <= count <= num_nodes``.
    seed : int
    device : str or torch.device

    Returns
    -------
    LongTensor, shape (count,)

    Examples
    --------
    >>> s = gs.datasets.uniform_seeds(100, 10, seed=0)
    >>> s.shape, s.unique().numel()
    (torch.Size([10]), 10)
    """
    num_nodes = V.count(num_nodes, "num_nodes")
    count = V.count(count, "count")
    if count > num_nodes:
        raise ValueError(f"count: at most num_nodes = {num_nodes} distinct seeds, got {count}")
    key = combine(combine(0, V.seed(seed)), _SEED_TAG)
    device = V.device(device)
    nodes = torch.arange(num_nodes, device=device)
    keys = sort_key(hash_tensor(key, torch.zeros_like(nodes), nodes))
    return torch.argsort(keys, stable=True)[:count]


def anchor_seeds(name: str, A: Matrix) -> torch.Tensor:
    """The pinned training seeds of anchor graph ``name`` (:data:`ANCHOR_GRAPHS`): its
    ``num_seeds`` nodes drawn by :func:`uniform_seeds` at seed 0, on ``A``'s device.

    Examples
    --------
    >>> A = gs.datasets.undirected_rmat(2_449_029 // 64, 61_859_140 // 64)
    >>> gs.datasets.anchor_seeds("products-like", A).numel()  # more seeds than nodes: all
    32904
    """
    spec = _anchor(name)
    if not isinstance(A, Matrix):
        raise TypeError(f"A: expected a gsample.Matrix, got {type(A).__name__}")
    count = min(spec.num_seeds, A.num_nodes)
    return uniform_seeds(A.num_nodes, count, seed=0, device=A.device)


def degree_profile(A: Matrix, fanouts=()) -> dict:
    """In-degree profile of ``A``'s columns: how many neighbours a sampler finds per node.

    Parameters
    ----------
    A : Matrix
    fanouts : iterable of int
        For each ``k``, the share of nodes with fewer than ``k`` in-neighbours (where a
        node-wise sampler of fanout ``k`` takes them all; ``k = 1``: dead ends of a walk).

    Returns
    -------
    dict
        ``nodes`` (columns), ``edges``, ``mean``, ``median``, ``p99``, ``max`` (the
        nearest-rank quantiles of the sorted degrees: the value at rank ``ceil(q n)``) and
        ``below``: ``{k: share}``.

    Examples
    --------
    >>> A = gs.Matrix.from_edge_index(torch.tensor([[0, 1, 2, 2], [1, 2, 0, 1]]))
    >>> p = gs.datasets.degree_profile(A, fanouts=(2,))
    >>> p["median"], p["max"], p["below"]
    (1, 2, {2: 0.6666666666666666})
    """
    if not isinstance(A, Matrix):
        raise TypeError(f"A: expected a gsample.Matrix, got {type(A).__name__}")
    ks = []
    for k in fanouts:
        ks.append(V.count(k, "fanouts"))
    deg = A.csc.degrees()
    n, e = deg.numel(), A.num_edges
    if n == 0:
        return {
            "nodes": 0,
            "edges": e,
            "mean": None,
            "median": None,
            "p99": None,
            "max": None,
            "below": {k: None for k in ks},
        }
    s = torch.sort(deg).values
    at = [max(math.ceil(q * n) - 1, 0) for q in (0.5, 0.99)] + [n - 1]
    below = [torch.searchsorted(s, torch.tensor(ks, dtype=s.dtype, device=s.device))] if ks else []
    vals = torch.cat([s[torch.tensor(at, device=s.device)], *below]).tolist()
    return {
        "nodes": n,
        "edges": e,
        "mean": e / n,
        "median": vals[0],
        "p99": vals[1],
        "max": vals[2],
        "below": {k: v / n for k, v in zip(ks, vals[3:])},
    }


def _anchor(name) -> AnchorGraph:
    if not isinstance(name, str):
        raise TypeError(f"name: expected a str, one of {sorted(ANCHOR_GRAPHS)}")
    if name not in ANCHOR_GRAPHS:
        raise ValueError(f"name: unknown anchor graph {name!r} (one of {sorted(ANCHOR_GRAPHS)})")
    return ANCHOR_GRAPHS[name]


def anchor_graph(
    name: str,
    device: str | torch.device = "cpu",
    placement: str = "device",
    cache: str | os.PathLike | None = None,
    progress: bool = True,
) -> tuple[Matrix, torch.Tensor]:
    """``papers-like`` or ``products-like`` (:data:`ANCHOR_GRAPHS`) and its training seeds.

    Parameters
    ----------
    name : {"papers-like", "products-like"}
    device : str or torch.device
        Where the graph is sampled, and built when no cache holds it (products-like takes
        about 15 s on 2 CPU cores, papers-like some 26 times as many edges: build it on a
        GPU, or once into a cache).
    placement : {"device", "uva", "auto"}
        As :meth:`gsample.Matrix.to`; with a cache the arrays go from the files straight
        into device or pinned host memory.
    cache : str or os.PathLike, optional
        A folder: the graph is kept in ``<cache>/<name>`` (:func:`undirected_rmat`'s
        ``cache``), built once.
    progress : bool
        A tqdm bar while it is built.

    Returns
    -------
    A : Matrix
    seeds : LongTensor, shape (num_seeds,)
        :func:`anchor_seeds`, on ``A``'s device.

    Examples
    --------
    >>> A, seeds = gs.datasets.anchor_graph("products-like", device="cuda")
    >>> A.num_nodes, A.num_edges, seeds.numel()
    (1833086, 123718280, 196608)
    """
    spec = _anchor(name)
    device = V.device(device)
    if not isinstance(placement, str) or placement not in ("device", "uva", "auto"):
        raise ValueError(f"placement: must be one of ('device', 'uva', 'auto'), got {placement!r}")
    progress = V.flag(progress, "progress")
    folder = None if cache is None else pathlib.Path(_path(cache, "cache")) / name
    params = _rmat_params(spec.num_nodes, spec.num_edges, 0, 0.57, 0.19, 0.19)
    if folder is not None and placement != "device":
        header = _read_header(folder)
        if header is not None and header.get("generator") == params:
            # from the files straight into pinned host memory (or the device)
            return _with_seeds(name, load_csc(folder, device=device, placement=placement))
    A = undirected_rmat(
        spec.num_nodes, spec.num_edges, seed=0, device=device, progress=progress, cache=folder
    )
    if placement != "device":
        A = A.to(device, placement=placement)
    return _with_seeds(name, A)


def _with_seeds(name, A):
    return A, anchor_seeds(name, A)


# ----------------------------------------------------------------------------- disk
def _path(path, name: str) -> str:
    try:
        return os.fspath(path)
    except TypeError:
        raise TypeError(
            f"{name}: expected a str or os.PathLike, got {type(path).__name__}"
        ) from None


def _read_header(folder: pathlib.Path) -> dict | None:
    """The folder's header when it holds a complete graph of :data:`FORMAT` (its files
    there at the sizes it names), else None."""
    try:
        header = json.loads((folder / HEADER).read_text())
    except (OSError, ValueError):
        return None
    if header.get("format") != FORMAT or header.get("format_version") != FORMAT_VERSION:
        return None
    for spec in header.get("arrays", {}).values():
        try:
            arr = np.load(folder / spec["file"], mmap_mode="r")
        except (OSError, ValueError, KeyError):
            return None
        if list(arr.shape) != spec["shape"] or str(arr.dtype) != spec["dtype"]:
            return None
    return header


def _write_npy(path: pathlib.Path, t: torch.Tensor, dtype, chunk: int) -> dict:
    """``t`` (any device) into the ``.npy`` file ``path`` as ``dtype``, a chunk at a time
    (written under a temporary name, then renamed)."""
    tmp = path.with_name(path.name + ".part")
    out = np.lib.format.open_memmap(tmp, mode="w+", dtype=dtype, shape=(t.numel(),))
    for i in range(0, t.numel(), chunk):
        out[i : i + chunk] = t[i : i + chunk].cpu().numpy()
    out.flush()
    del out
    os.replace(tmp, path)
    return {"file": path.name, "dtype": np.dtype(dtype).name, "shape": [t.numel()]}


def save_csc(A: Matrix, folder: str | os.PathLike, chunk: int = 1 << 24, **meta) -> pathlib.Path:
    """Write the graph ``A`` as a memory-mappable CSC: ``indptr.npy`` (int64), ``rows.npy``
    (int32 when ``A.num_nodes < 2**31``, else int64), ``eids.npy`` (int64, when its edge ids
    are not the CSC positions) and ``values.npy`` (when weighted), then ``header.json``
    (sizes, dtypes, and ``meta``), a chunk at a time from any device.

    Parameters
    ----------
    A : Matrix
        A whole graph (not a sub-matrix).
    folder : str or os.PathLike
        Created if needed; files of the same names there are replaced.
    chunk : int
        Elements moved to the host per step.
    **meta
        JSON-serialisable facts kept in the header (a generator's parameters: what a stale
        copy is told by).

    Returns
    -------
    pathlib.Path
        The folder.

    Examples
    --------
    >>> A = gs.datasets.undirected_rmat(1000, 5000)
    >>> folder = gs.datasets.save_csc(A, "/tmp/g")
    >>> gs.datasets.load_csc(folder).num_edges
    10000
    """
    if not isinstance(A, Matrix):
        raise TypeError(f"A: expected a gsample.Matrix, got {type(A).__name__}")
    csc = A.csc
    if csc.row_ids is not None or csc.col_ids is not None:
        raise ValueError("A: a sub-matrix (its own row or column space); save the whole graph")
    chunk = V.count(chunk, "chunk", low=1)
    folder = pathlib.Path(_path(folder, "folder"))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / HEADER).unlink(missing_ok=True)  # incomplete until the header is back
    rows_dtype = np.int32 if csc.num_nodes <= 2**31 - 1 else np.int64
    arrays = {
        "indptr": _write_npy(folder / "indptr.npy", csc.indptr, np.int64, chunk),
        "rows": _write_npy(folder / "rows.npy", csc.rows, rows_dtype, chunk),
    }
    if csc.eids is not None:
        arrays["eids"] = _write_npy(folder / "eids.npy", csc.eids, np.int64, chunk)
    if csc.values is not None:
        if csc.values.dim() != 1:
            raise ValueError("A: edge values of shape (E, F) are not saved; only one per edge")
        dt = str(csc.values.dtype).replace("torch.", "")
        arrays["values"] = _write_npy(folder / "values.npy", csc.values, np.dtype(dt), chunk)
    header = {
        **json.loads(json.dumps(meta)),  # first: it cannot override the layout's own keys
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "num_nodes": csc.num_nodes,
        "num_edges": csc.nnz,
        "arrays": arrays,
    }
    tmp = folder / (HEADER + ".part")
    tmp.write_text(json.dumps(header, indent=1) + "\n")
    os.replace(tmp, folder / HEADER)
    return folder


def _array(x, name: str, ndim: int = 1) -> np.ndarray:
    """``x`` as a numpy array: a ``.npy`` path memory-mapped (copy-on-write: the file is
    never written), or an array (a ``numpy.memmap`` of raw binary, any integer dtype)."""
    if isinstance(x, (str, os.PathLike)):
        path = _path(x, name)
        if not os.path.exists(path):
            raise FileNotFoundError(f"{name}: no such file: {path}")
        try:
            arr = np.load(path, mmap_mode="c", allow_pickle=False)
        except ValueError as e:
            raise ValueError(f"{name}: {path} is not a .npy array ({e})") from None
    elif isinstance(x, np.ndarray):
        arr = x
    elif isinstance(x, torch.Tensor):
        if x.device.type != "cpu":
            raise ValueError(f"{name}: a host array or a file, got a tensor on {x.device}")
        arr = x.numpy()
    else:
        raise TypeError(
            f"{name}: expected a .npy path or an array (numpy.memmap of a raw file), got "
            f"{type(x).__name__}"
        )
    if arr.dtype.kind not in _INT_KINDS or arr.ndim != ndim:
        shape = "(E,)" if ndim == 1 else "(2, E)"
        raise TypeError(
            f"{name}: expected an integer array of shape {shape}, got dtype {arr.dtype} and "
            f"shape {arr.shape}"
        )
    return arr


class _Target:
    """Where placed arrays go: ``device`` memory, the host (a CPU device), or pinned host
    memory mapped for a GPU (``placement="uva"``, :func:`gsample.formats.placement.map_host`:
    the arrays are CUDA tensors at host addresses, so the checks and sorts run on the GPU
    for every placement but the CPU's)."""

    def __init__(self, device, placement: str, nbytes: int):
        if not isinstance(placement, str) or placement not in ("device", "uva", "auto"):
            raise ValueError(
                f"placement: must be one of ('device', 'uva', 'auto'), got {placement!r}"
            )
        if placement != "device" and device.type != "cuda":
            if placement == "uva":
                raise ValueError(
                    "placement: 'uva' keeps the graph in pinned host memory for a GPU to "
                    f"read; device must be a CUDA device, got {device}"
                )
            placement = "device"
        if placement == "auto":
            placement = choose(nbytes, free_memory(device))
        if placement == "uva":
            require_cuda("placement='uva'")
            if device.index is None:
                device = torch.device("cuda", torch.cuda.current_device())
        self.device, self.uva = device, placement == "uva"
        self.staging = None

    def empty(self, n: int, dtype) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(tensor, host)``: a new array of ``n`` elements, and its host view where one
        can be written from numpy directly (the host, pinned memory), else None."""
        if self.uva:
            with torch.cuda.device(self.device):  # pinned while the reading GPU is current
                host = torch.empty(n, dtype=dtype, pin_memory=True)
                return map_host(host, self.device), host
        t = torch.empty(n, dtype=dtype, device=self.device)
        return t, (t if self.device.type == "cpu" else None)

    def fill(self, dest, host, src: np.ndarray, chunk: int, bar=None) -> None:
        """``dest[:] = src`` a chunk at a time (widened as copied): on the host straight
        from the mapped file, to a GPU through a pinned buffer of ``chunk`` elements."""
        n = src.shape[0]
        for i in range(0, n, chunk):
            j = min(n, i + chunk)
            if host is not None:
                host[i:j].numpy()[...] = src[i:j]
            else:
                st = self._stage(src.dtype, chunk)[: j - i]
                st.numpy()[...] = src[i:j]
                dest[i:j].copy_(st)
            if bar is not None:
                bar.update(j - i)

    def chunk(self, src: np.ndarray, i: int, j: int, chunk: int) -> torch.Tensor:
        """``src[i:j]`` as an int64 tensor on the work device."""
        part = src[i:j]
        if self.device.type == "cpu":
            return torch.from_numpy(np.array(part, dtype=np.int64))  # a copy: sorted in place
        st = self._stage(src.dtype, chunk)[: j - i]
        st.numpy()[...] = part
        return st.to(self.device).to(torch.int64)

    def _stage(self, dtype, chunk: int) -> torch.Tensor:
        t = torch.from_numpy(np.empty(0, dtype=np.dtype(dtype).newbyteorder("="))).dtype
        if self.staging is None or self.staging.dtype != t or self.staging.numel() < chunk:
            self.staging = torch.empty(chunk, dtype=t, pin_memory=torch.cuda.is_available())
        return self.staging


def _zero_copy(arr: np.ndarray, dtype) -> torch.Tensor | None:
    """A CPU tensor over the mapped file ``arr`` (copy-on-write), when it already holds
    ``dtype`` in native order; else None."""
    want = np.dtype(str(dtype).replace("torch.", ""))
    if (
        isinstance(arr, np.memmap)
        and getattr(arr, "mode", None) == "c"
        and arr.dtype == want
        and arr.dtype.isnative
        and arr.flags.c_contiguous
    ):
        return torch.from_numpy(arr)
    return None


def load_csc(
    indptr,
    rows=None,
    num_nodes: int | None = None,
    device: str | torch.device = "cpu",
    placement: str = "device",
    chunk: int = 1 << 24,
    progress: bool = False,
) -> Matrix:
    """A graph from a CSC on disk, memory-mapped and placed a chunk at a time.

    Column ``j`` holds rows ``rows[indptr[j]:indptr[j + 1]]`` (the in-edges of ``j``, as
    :meth:`gsample.Matrix.from_csc`). The files are memory-mapped: on the CPU, arrays
    already of the matrix's dtypes are used in place (copy-on-write, the file is never
    written); otherwise each array goes chunk by chunk from the mapping into its final
    memory (device memory, or pinned host memory for ``placement="uva"``), with no full
    copy in host memory before. Values are checked there (``indptr`` from 0 to ``E``,
    non-decreasing; rows in ``[0, N)``). Columns whose rows are not ascending are sorted in
    place, a range of columns at a time; edge ids are then positions in ``rows`` (as
    ``from_csc`` numbers them), else none are kept (the CSC positions).

    Parameters
    ----------
    indptr : str, os.PathLike or numpy array
        A ``.npy`` file, or an array (``numpy.memmap(path, dtype, mode="r")`` of a raw
        file); any integer dtype, shape ``(N + 1,)``. Or a folder written by
        :func:`save_csc` (then ``rows`` is None), its edge ids and values included.
    rows : str, os.PathLike or numpy array, optional
        Shape ``(E,)``, any integer dtype (int32 is read and widened).
    num_nodes : int, optional
        Must equal ``N`` when given.
    device : str or torch.device
    placement : {"device", "uva", "auto"}
        As :meth:`gsample.Matrix.to`.
    chunk : int
        Elements per step (the pinned staging buffer, and the sort's ranges).
    progress : bool
        A tqdm bar over the elements copied.

    Returns
    -------
    Matrix

    Examples
    --------
    >>> import numpy as np
    >>> np.save("/tmp/indptr.npy", np.array([0, 1, 3]))
    >>> np.save("/tmp/rows.npy", np.array([1, 0, 1], np.int32))
    >>> gs.datasets.load_csc("/tmp/indptr.npy", "/tmp/rows.npy").sum(axis=0)
    tensor([1., 2.])
    """
    device = V.device(device)
    chunk = V.count(chunk, "chunk", low=1)
    progress = V.flag(progress, "progress")
    eids_np = values_np = None
    if rows is None:
        folder = pathlib.Path(_path(indptr, "indptr"))
        if not folder.is_dir():
            raise ValueError(
                f"rows: needed unless indptr is a folder written by save_csc, got {folder}"
            )
        header = _read_header(folder)
        if header is None:
            raise ValueError(
                f"indptr: {folder} holds no complete {FORMAT} graph (its {HEADER} is missing, "
                "or names files that are not there at its sizes)"
            )
        files = {k: folder / v["file"] for k, v in header["arrays"].items()}
        indptr, rows = files["indptr"], files["rows"]
        eids_np = _array(files["eids"], "eids") if "eids" in files else None
        values_np = np.load(files["values"], mmap_mode="c") if "values" in files else None
    ip = _array(indptr, "indptr")
    rw = _array(rows, "rows")
    if ip.shape[0] == 0:
        raise ValueError("indptr: must have at least one element (N + 1 offsets)")
    n = ip.shape[0] - 1
    if num_nodes is not None and V.count(num_nodes, "num_nodes") != n:
        raise ValueError(f"num_nodes: {num_nodes} does not match len(indptr) - 1 = {n}")
    _check_size(n, "indptr")
    e = rw.shape[0]
    nbytes = 8 * (n + 1 + e * (2 if eids_np is not None else 1))
    target = _Target(device, placement, nbytes)
    bar = tqdm(total=n + 1 + e, disable=not progress, desc="load_csc", unit_scale=True)

    def place(arr, dtype):
        if not target.uva and device.type == "cpu":
            t = _zero_copy(arr, dtype)
            if t is not None:
                bar.update(arr.shape[0])
                return t
        t, host = target.empty(arr.shape[0], dtype)
        target.fill(t, host, arr, chunk, bar)
        return t

    ptr = place(ip, torch.int64)
    first_last = ptr[torch.tensor([0, n], device=ptr.device)].tolist()
    if first_last != [0, e]:
        raise ValueError(
            f"indptr: must start at 0 and end at len(rows) = {e}, got {first_last[0]} and "
            f"{first_last[1]}"
        )
    if n and bool((ptr[1:] < ptr[:-1]).any()):
        raise ValueError("indptr: must be non-decreasing")
    r = place(rw, MATRIX_ROWS)
    if e:
        lo, hi = torch.aminmax(r)
        lo, hi = int(lo), int(hi)
        if lo < 0 or hi >= n:
            bad = lo if lo < 0 else hi
            raise IndexError(f"rows: node id {bad} is out of range for a graph of {n} nodes")
    eids = None if eids_np is None else place(eids_np, torch.int64)
    values = None
    if values_np is not None:
        dt = torch.from_numpy(np.empty(0, dtype=values_np.dtype)).dtype
        values = place(values_np, dt)
    bar.close()
    unsorted = _unsorted_ranges(ptr, r, n, chunk)
    if unsorted:
        if eids is not None or values is not None:
            raise ValueError(
                f"indptr: the columns of {folder} are not sorted (save_csc writes them sorted): "
                "the files were changed"
            )
        eids, host = target.empty(e, torch.int64)
        (host if host is not None else eids).copy_(torch.arange(e))
        _sort_ranges(ptr, r, n, chunk, eids=eids, ranges=unsorted)
    return Matrix(CSC(n, ptr, r, values=values, eids=eids))


def load_coo(
    edge_index,
    dst=None,
    num_nodes: int | None = None,
    device: str | torch.device = "cpu",
    placement: str = "device",
    edge_ids: bool = True,
    chunk: int = 1 << 24,
    progress: bool = False,
) -> Matrix:
    """A graph from an edge list on disk, built into CSC within memory (count, place, sort a
    range of columns at a time; no sort of the whole edge list, no copy of it in memory).

    Edge ``e`` is ``edge_index[0, e] -> edge_index[1, e]``: column ``dst`` holds the in-edges
    of ``dst``, rows ascending, as :meth:`gsample.Matrix.from_edge_index` builds it.

    Parameters
    ----------
    edge_index : str, os.PathLike or numpy array
        Shape ``(2, E)`` (a ``.npy`` file or an array, e.g. a ``numpy.memmap``), any integer
        dtype; or the sources, shape ``(E,)``, with ``dst`` the destinations.
    dst : str, os.PathLike or numpy array, optional
    num_nodes : int, optional
        Default: the largest id + 1 (one more pass over the file).
    device : str or torch.device
    placement : {"device", "uva", "auto"}
    edge_ids : bool
        Keep each edge's position in the file as its id (as ``from_edge_index``: the matrix
        is then equal to it; 8 bytes per edge), or number the edges by their CSC position.
    chunk : int
        Edges per step.
    progress : bool

    Returns
    -------
    Matrix

    Examples
    --------
    >>> import numpy as np
    >>> np.save("/tmp/ei.npy", np.array([[0, 2, 1], [1, 1, 0]], np.int32))
    >>> gs.datasets.load_coo("/tmp/ei.npy").edges()
    (tensor([1, 0, 2]), tensor([0, 1, 1]), tensor([2, 0, 1]))
    """
    device = V.device(device)
    chunk = V.count(chunk, "chunk", low=1)
    edge_ids, progress = V.flag(edge_ids, "edge_ids"), V.flag(progress, "progress")
    if dst is None:
        ei = _array(edge_index, "edge_index", ndim=2)
        if ei.shape[0] != 2:
            raise ValueError(f"edge_index: expected shape (2, E), got {ei.shape}")
        src_np, dst_np = ei[0], ei[1]
    else:
        src_np, dst_np = _array(edge_index, "edge_index"), _array(dst, "dst")
        if src_np.shape != dst_np.shape:
            raise ValueError(f"dst: {dst_np.shape[0]} destinations for {src_np.shape[0]} sources")
    e = src_np.shape[0]
    target = _Target(device, placement, 8 * e * (2 if edge_ids else 1))
    work = target.device
    chunks = [(i, min(i + chunk, e)) for i in range(0, e, chunk)]
    if num_nodes is None:
        hi = -1
        for i, j in chunks:
            hi = max(
                hi,
                int(target.chunk(src_np, i, j, chunk).max()),
                int(target.chunk(dst_np, i, j, chunk).max()),
            )
        num_nodes = hi + 1
    n = V.count(num_nodes, "num_nodes")
    _check_size(n, "num_nodes")
    passes = 2 + (1 if len(chunks) > 1 else 0)
    bar = tqdm(total=passes * e, disable=not progress, desc="load_coo: count", unit_scale=True)
    ones = torch.ones(min(chunk, max(e, 1)), dtype=torch.int64, device=work)
    deg = torch.zeros(n, dtype=torch.int64, device=work)
    for i, j in chunks:
        s, d = target.chunk(src_np, i, j, chunk), target.chunk(dst_np, i, j, chunk)
        for t, name in ((s, "edge_index[0] (sources)"), (d, "edge_index[1] (destinations)")):
            lo, hi = torch.aminmax(t)
            if int(lo) < 0 or int(hi) >= n:
                bad = int(lo) if int(lo) < 0 else int(hi)
                raise IndexError(f"{name}: node id {bad} is out of range for a graph of {n} nodes")
        deg.index_add_(0, d, ones[: j - i])
        bar.update(j - i)
    indptr_w = segment_ptr(deg)
    del deg
    rows_t = target.empty(e, MATRIX_ROWS)[0]
    eids_t = target.empty(e, torch.int64)[0] if edge_ids else None
    cursor = indptr_w[:-1].clone()
    bar.set_description("load_coo: place")
    for i, j in chunks:
        s, d = target.chunk(src_np, i, j, chunk), target.chunk(dst_np, i, j, chunk)
        eid = torch.arange(i, j, device=work) if edge_ids else None
        _place(d, s, n, cursor, rows_t, ones, eid, eids_t)
        bar.update(j - i)
    del cursor
    if len(chunks) > 1:
        bar.set_description("load_coo: sort")
        _sort_ranges(indptr_w, rows_t, n, chunk, eids=eids_t, bar=bar)
    bar.close()
    if target.uva:
        ptr, host = target.empty(n + 1, torch.int64)
        host.copy_(indptr_w)
    else:
        ptr = indptr_w
    return Matrix(CSC(n, ptr, rows_t, eids=eids_t))


__all__ = [
    "ANCHOR_GRAPHS",
    "FORMAT",
    "GENERATOR_VERSION",
    "AnchorGraph",
    "anchor_graph",
    "anchor_seeds",
    "degree_profile",
    "load_coo",
    "load_csc",
    "save_csc",
    "undirected_rmat",
    "uniform_seeds",
]
