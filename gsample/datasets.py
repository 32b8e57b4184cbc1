"""Graph inputs from files and generators: SNAP edge lists and R-MAT power-law graphs."""
from __future__ import annotations

import gzip
import os
import warnings

import numpy as np
import torch
from tqdm.auto import tqdm

from . import validate as V
from .random import combine, hash_tensor, sort_key, uniform_float


def read_snap(path, num_nodes=None, relabel: bool = False, undirected: bool = False):
    """Read a SNAP edge list (``.txt`` or ``.txt.gz``) as a :class:`gsample.Matrix`.

    Lines starting with ``#`` are comments; every other line is ``src dst``
    (tab or space separated). Entry ``(src, dst)`` is set: column ``dst`` holds the
    in-edges of ``dst``.

    Parameters
    ----------
    path : str or os.PathLike
        The file; a ``.gz`` suffix is read through gzip.
    num_nodes : int, optional
        Default: largest id + 1 (or the number of distinct ids with ``relabel``).
    relabel : bool
        Renumber the ids that occur to ``0..n-1`` in ascending order.
    undirected : bool
        Add the reverse of every edge (edge ``e`` reversed gets id ``E + e``).

    Returns
    -------
    Matrix
        Edge ids are line positions among the edges of the file.

    Examples
    --------
    >>> A = gs.datasets.read_snap("../shared/data/web-NotreDame.txt.gz")
    >>> A.num_nodes, A.num_edges
    (325729, 1497134)
    """
    from .matrix import Matrix
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"path: no such file: {path}")
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)     # "input contained no data"
        try:   # extra columns (timestamps of temporal SNAP graphs) are ignored
            pairs = np.loadtxt(f, dtype=np.int64, comments="#", usecols=(0, 1), ndmin=2)
        except ValueError as e:
            raise ValueError(f"path: {path} is not a SNAP edge list ({e})") from None
    ei = torch.from_numpy(pairs.T.copy())
    if relabel:
        uniq, inverse = torch.unique(ei, return_inverse=True)
        ei = inverse.reshape(2, -1)
        num_nodes = uniq.numel() if num_nodes is None else num_nodes
    if undirected:
        ei = torch.cat([ei, ei.flip(0)], dim=1)
    return Matrix.from_edge_index(ei, num_nodes=num_nodes)


def rmat(num_nodes: int, num_edges: int, seed: int = 0, a: float = 0.57, b: float = 0.19,
         c: float = 0.19, weighted: bool = False, device="cpu", progress: bool = False,
         chunk: int = 1 << 22):
    """A reproducible R-MAT power-law graph (Chakrabarti et al.; Graph500 defaults).

    Each edge descends ``ceil(log2 num_nodes)`` levels of the adjacency matrix,
    choosing a quadrant with probabilities ``a, b, c, 1 - a - b - c``; ids are
    folded into ``[0, num_nodes)`` and then shuffled by a fixed permutation so that
    hubs are spread over the id range. Random numbers come from gsample's
    counter-based hash, so the same arguments give the same graph on every device.
    Self-loops and repeated edges are kept (as in Graph500).

    Parameters
    ----------
    num_nodes, num_edges : int
        Size of the graph, ``N`` and ``E``.
    seed : int
        The graph is a pure function of the arguments and ``seed``.
    a, b, c : float
        Quadrant probabilities (top-left, top-right, bottom-left).
    weighted : bool
        Attach edge weights uniform in ``[1, 5)``.
    device : str or torch.device
        Where to generate (a GPU generates products-sized graphs in seconds).
    progress : bool
        Show a tqdm bar over edge chunks.

    Returns
    -------
    Matrix
        ``N x N`` with ``E`` edges.

    Examples
    --------
    >>> A = gs.datasets.rmat(10_000, 100_000, seed=0)
    >>> A.num_edges
    100000
    """
    from .matrix import Matrix
    num_nodes = V.count(num_nodes, "num_nodes")
    num_edges = V.count(num_edges, "num_edges")
    if num_nodes == 0 and num_edges:
        raise ValueError("num_nodes: a graph with edges needs at least one node")
    if not (min(a, b, c) >= 0 and a + b + c <= 1):
        raise ValueError(f"a, b, c: must be probabilities with a + b + c <= 1, got {a}, {b}, {c}")
    device = torch.device(device)
    V.fits(num_nodes + 1, 16, device, "num_nodes", f"a graph of {num_nodes} nodes")
    V.fits(num_edges, 48, device, "num_edges", f"generating {num_edges} edges")
    levels = max(1, (num_nodes - 1).bit_length())
    base = combine(combine(0, int(seed)), 0x524D4154)   # "RMAT"
    src = torch.empty(num_edges, dtype=torch.int64, device=device)
    dst = torch.empty_like(src)
    starts = range(0, num_edges, chunk)
    for start in tqdm(starts, disable=not progress, desc="rmat", unit="chunk"):
        e = torch.arange(start, min(start + chunk, num_edges), device=device)
        s = torch.zeros_like(e)
        d = torch.zeros_like(e)
        for level in range(levels):
            u = uniform_float(hash_tensor(base, torch.full_like(e, level), e))
            right = ((u >= a) & (u < a + b)) | (u >= a + b + c)
            down = u >= a + b
            s = (s << 1) | down.to(torch.int64)
            d = (d << 1) | right.to(torch.int64)
        src[start:start + e.numel()] = s
        dst[start:start + e.numel()] = d
    if num_nodes:
        nodes = torch.arange(num_nodes, device=device)
        perm = torch.argsort(sort_key(hash_tensor(base, torch.full_like(nodes, -1), nodes)))
        src, dst = perm[src % num_nodes], perm[dst % num_nodes]
    weight = None
    if weighted:
        e = torch.arange(num_edges, device=device)
        weight = (1 + 4 * uniform_float(hash_tensor(base, torch.full_like(e, -2), e))).float()
    return Matrix.from_edge_index(torch.stack([src, dst]), num_nodes=num_nodes, weight=weight)


__all__ = ["read_snap", "rmat"]
