"""Anchor-shaped graphs: ``papers-like`` and ``products-like`` (:data:`ANCHOR_GRAPHS`) are
undirected R-MAT graphs (:func:`gsample.datasets.undirected_rmat`) at ogbn-papers100M's and
ogbn-products' sizes, pinned (seed 0, the Graph500 quadrant probabilities) with their
training seeds, so that figures measured on them compare across runs, machines and
libraries."""

from __future__ import annotations

import os
import pathlib
from typing import NamedTuple

import torch

from gsample.base import validate as V
from gsample.base.random import combine, hash_tensor, sort_key
from gsample.datasets.mapped import as_path, check_placement
from gsample.datasets.ondisk import load_csc, read_header
from gsample.datasets.undirected import rmat_params, undirected_rmat
from gsample.matrix.sparse import Matrix

__all__ = ["ANCHOR_GRAPHS", "AnchorGraph", "anchor_graph", "anchor_seeds", "uniform_seeds"]

_SEED_TAG = 0x53454544  # "SEED"


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
    >>> import gsample as gs
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
    >>> import gsample as gs
    >>> A = gs.datasets.undirected_rmat(1000, 10_000, seed=0)
    >>> A.num_nodes, gs.datasets.anchor_seeds("products-like", A).numel()  # all: too few
    (845, 845)
    """
    spec = _anchor(name)
    if not isinstance(A, Matrix):
        raise TypeError(f"A: expected a gsample.Matrix, got {type(A).__name__}")
    count = min(spec.num_seeds, A.num_nodes)
    return uniform_seeds(A.num_nodes, count, seed=0, device=A.device)


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
    >>> import gsample as gs
    >>> A, seeds = gs.datasets.anchor_graph("products-like", device="cuda")  # doctest: +SKIP
    >>> A.num_nodes, A.num_edges, seeds.numel()  # doctest: +SKIP
    (1833086, 123718280, 196608)
    """
    spec = _anchor(name)
    device = V.device(device)
    placement = check_placement(placement)
    progress = V.flag(progress, "progress")
    folder = None if cache is None else pathlib.Path(as_path(cache, "cache")) / name
    params = rmat_params(spec.num_nodes, spec.num_edges, 0, 0.57, 0.19, 0.19)
    if folder is not None and placement != "device":
        header = read_header(folder)
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
