"""Graph inputs from files and generators: SNAP edge lists, R-MAT power-law graphs, Cora, and a
planted-partition graph with features and labels to train on."""

from __future__ import annotations

import os

import numpy as np
import torch
from tqdm.auto import tqdm

from gsample.base import validate as V
from gsample.base.random import hash_tensor, uniform_float
from gsample.datasets.mapped import as_path
from gsample.datasets.rmat_draws import Draws, check_rmat, node_permutation
from gsample.matrix.convert import read_edge_list
from gsample.matrix.sparse import Matrix


def read_snap(
    path: str | os.PathLike,
    num_nodes: int | None = None,
    relabel: bool = False,
    undirected: bool = False,
    edge_time: bool = True,
    progress: bool | None = None,
) -> Matrix:
    """Read a SNAP edge list (``.txt`` or ``.txt.gz``) as a :class:`gsample.Matrix`.

    Lines starting with ``#`` are comments; every other line is ``src dst`` (tab or space
    separated), or ``src dst time`` in SNAP's temporal graphs (``CollegeMsg``,
    ``sx-*``: a Unix timestamp per edge). Entry ``(src, dst)`` is set: column ``dst``
    holds the in-edges of ``dst``.

    Parameters
    ----------
    path : str or os.PathLike
        The file; a ``.gz`` suffix is read through gzip.
    num_nodes : int, optional
        Default: largest id + 1 (or the number of distinct ids with ``relabel``).
    relabel : bool
        Renumber the ids that occur to ``0..n-1`` in ascending order.
    undirected : bool
        Add the reverse of every edge (edge ``e`` reversed gets id ``E + e``, and its
        time).
    edge_time : bool
        Keep a third column (integers: int64; else float64) as the matrix's
        :attr:`~gsample.Matrix.edge_time` (default); False ignores it. A file of two
        columns has no times.
    progress : bool, optional
        A tqdm bar over the file's bytes; None (default): for files over 64 MiB.

    Returns
    -------
    Matrix
        Edge ids are line positions among the edges of the file.

    Notes
    -----
    The file is read a block of lines at a time into arrays of int32 ids (int64 only when
    an id needs it), then built by :meth:`gsample.Matrix.from_edge_index`: the peak memory
    stays within about twice the returned CSC (ids relabelled in place, by a table over the
    id range or a binary search in the sorted distinct ids;
    ``benchmarks/constructors_memory.py`` measures it).

    Raises
    ------
    ValueError
        The file is not an edge list (the lines named), has a negative id (without
        ``relabel``), or an id ``>= num_nodes``.

    Examples
    --------
    >>> import gsample as gs
    >>> A = gs.datasets.read_snap("../shared/data/web-NotreDame.txt.gz")
    >>> A.num_nodes, A.num_edges
    (325729, 1497134)
    >>> M = gs.datasets.read_snap("../shared/data/CollegeMsg.txt.gz")   # SRC DST UNIXTS
    >>> M.edge_time[:2]                                # the first two messages' times
    tensor([1082040961, 1082155839])
    """
    path = as_path(path)
    relabel, undirected = V.flag(relabel, "relabel"), V.flag(undirected, "undirected")
    edge_time = V.flag(edge_time, "edge_time")
    if progress is not None:
        progress = V.flag(progress, "progress")
    if not os.path.exists(path):
        raise FileNotFoundError(f"path: no such file: {path}")
    if num_nodes is not None:
        num_nodes = V.count(num_nodes, "num_nodes")
    ei, t, distinct = read_edge_list(path, edge_time, relabel, undirected, progress)
    if relabel and num_nodes is None:
        num_nodes = distinct
    if ei.numel():  # the file's ids, named as the caller knows them (not as edge_index)
        lo, hi = (int(x) for x in torch.aminmax(ei))
        if lo < 0:
            raise ValueError(f"path: {path} has a negative node id ({lo}); pass relabel=True")
        if num_nodes is not None and hi >= num_nodes:
            raise ValueError(
                f"num_nodes: {num_nodes} is too few for {path}, whose largest node id is {hi}"
                + (" after relabelling" if relabel else "")
            )
    return Matrix.from_edge_index(ei, num_nodes=num_nodes, edge_time=t)


def rmat(
    num_nodes: int,
    num_edges: int,
    seed: int = 0,
    a: float = 0.57,
    b: float = 0.19,
    c: float = 0.19,
    weighted: bool = False,
    device: str | torch.device = "cpu",
    progress: bool = False,
    chunk: int = 1 << 22,
) -> Matrix:
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
        The graph is a pure function of the arguments and ``seed`` (any integer).
    a, b, c : float
        Quadrant probabilities (top-left, top-right, bottom-left).
    weighted : bool
        Attach edge weights uniform in ``[1, 5)``.
    device : str or torch.device
        Where to generate (a GPU generates products-sized graphs in seconds).
    progress : bool
        Show a tqdm bar over edge chunks.
    chunk : int
        Edges drawn per step of the progress bar (``>= 1``); never changes the graph (the
        draws work in place on a few scratch arrays, whatever the chunk).

    Returns
    -------
    Matrix
        ``N x N`` with ``E`` edges.

    Examples
    --------
    >>> import gsample as gs
    >>> A = gs.datasets.rmat(10_000, 100_000, seed=0)
    >>> A.num_edges
    100000
    """
    num_nodes, num_edges, a, b, c, seed = check_rmat(num_nodes, num_edges, a, b, c, seed)
    weighted, progress = V.flag(weighted, "weighted"), V.flag(progress, "progress")
    chunk = V.count(chunk, "chunk", low=1)
    device = V.device(device)
    V.fits(num_nodes + 1, 16, device, "num_nodes", f"a graph of {num_nodes} nodes")
    V.fits(num_edges, 48, device, "num_edges", f"generating {num_edges} edges")
    draws = Draws(num_nodes, seed, a, b, c, device)
    src = torch.empty(num_edges, dtype=torch.int64, device=device)
    dst = torch.empty_like(src)
    starts = range(0, num_edges, chunk)
    for start in tqdm(starts, disable=not progress, desc="rmat", unit="chunk"):
        end = min(start + chunk, num_edges)
        draws.draw(start, src[start:end], dst[start:end])
    if num_nodes:
        perm = node_permutation(draws.key, num_nodes, device)
        src, dst = perm[src], perm[dst]
        del perm
    weight = None
    if weighted:
        e = torch.arange(num_edges, device=device)
        weight = (1 + 4 * uniform_float(hash_tensor(draws.key, torch.full_like(e, -2), e))).float()
    return Matrix.from_edge_index(torch.stack([src, dst]), num_nodes=num_nodes, weight=weight)


def planted_partition(
    num_nodes: int = 20_000,
    num_classes: int = 8,
    avg_degree: float = 12.0,
    homophily: float = 0.5,
    num_features: int = 32,
    noise: float = 3.5,
    seed: int = 0,
    device: str | torch.device = "cpu",
) -> tuple[Matrix, torch.Tensor, torch.Tensor]:
    """A graph with planted communities, and node features that carry them plus noise.

    A stochastic block model in its planted-partition form: node ``v`` belongs to class
    ``y[v]`` (balanced, in a random order); each of ``num_nodes * avg_degree / 2`` undirected
    edges joins a uniformly chosen node ``u`` to a node of ``u``'s class with probability
    ``homophily``, else to a uniformly chosen node (of any class), and is stored in both
    directions (self-loops and repeats dropped). Features are the class's centroid, drawn
    from ``N(0, I)``, plus ``N(0, noise^2 I)``: with the defaults the nearest centroid to a
    node's own features is its class's for about 57 % of the nodes, to the mean of its
    neighbours' for about 77 %, so a GNN's accuracy means something. Drawn on the CPU from
    ``torch.Generator(seed)``.

    Parameters
    ----------
    num_nodes, num_classes : int
        ``N`` nodes in ``C`` classes (``N >= C >= 1``).
    avg_degree : float
        Mean in-degree (and out-degree) before repeats are dropped.
    homophily : float
        In ``[0, 1]``: the share of edges drawn inside a class (plus chance ones).
    num_features : int
        ``F``.
    noise : float
        Standard deviation of the features' noise (``>= 0``).
    seed : int
        The graph, features and labels are a function of the arguments.
    device : str or torch.device
        Where the results go.

    Returns
    -------
    A : Matrix, shape (N, N)
        Symmetric, unweighted.
    x : FloatTensor, shape (N, F)
    y : LongTensor, shape (N,)
        Classes in ``[0, C)``.

    Examples
    --------
    >>> import gsample as gs
    >>> A, x, y = gs.datasets.planted_partition(1000, num_classes=4, seed=0)
    >>> x.shape, int(y.max()) + 1
    (torch.Size([1000, 32]), 4)
    """
    num_nodes = V.count(num_nodes, "num_nodes")
    num_classes = V.count(num_classes, "num_classes")
    if not 1 <= num_classes <= num_nodes:
        raise ValueError(f"num_classes: must be in [1, num_nodes = {num_nodes}], got {num_classes}")
    avg_degree = V.real(avg_degree, "avg_degree", low=0.0)
    homophily = V.real(homophily, "homophily", 0.0, 1.0)
    num_features = V.count(num_features, "num_features")
    noise = V.real(noise, "noise", low=0.0)
    device = V.device(device)
    # the sizes first, so that one too large is named rather than failing in the allocator:
    # per node its class, order and features (x and its noise, float32); per drawn edge
    # its ends, draws and keys (int64, both directions)
    V.fits(num_nodes, 40, "cpu", "num_nodes", f"{num_nodes} nodes")
    V.fits(
        num_nodes * num_features, 8, "cpu", "num_features", f"{num_nodes} x {num_features} features"
    )
    V.fits(
        int(num_nodes * avg_degree / 2),
        96,
        "cpu",
        "avg_degree",
        f"{num_nodes} nodes of average degree {avg_degree}",
    )
    g = torch.Generator().manual_seed(V.seed(seed) & (2**64 - 1))  # as gs.manual_seed
    n, k = num_nodes, num_classes
    y = (torch.arange(n) % k)[torch.randperm(n, generator=g)]
    members = torch.argsort(y, stable=True)  # nodes grouped by class
    start = torch.searchsorted(y[members], torch.arange(k))
    size = torch.bincount(y, minlength=k)
    m = int(n * avg_degree / 2)
    u = torch.randint(0, n, (m,), generator=g)
    inside = torch.rand(m, generator=g) < homophily
    pick = (torch.rand(m, generator=g) * size[y[u]]).long().clamp(max=size[y[u]] - 1)
    v = torch.where(inside, members[start[y[u]] + pick], torch.randint(0, n, (m,), generator=g))
    keep = u != v  # no self-loops
    u, v = u[keep], v[keep]
    # Drop repeats: one int64 key per directed edge (ascending key = (src, dst) order, the
    # order of torch.unique(edge_index, dim=1), which sorts 2-D columns lexicographically and
    # is far slower on millions of edges).
    key = torch.unique(torch.cat([u * n + v, v * n + u]))
    ei = torch.stack([key // n, key % n])
    centroids = torch.randn(k, num_features, generator=g)
    x = centroids[y] + noise * torch.randn(n, num_features, generator=g)
    A = Matrix.from_edge_index(ei, num_nodes=n)
    return A.to(device), x.to(device), y.to(device)


def cora(
    path: str | os.PathLike | None = None, device: str | torch.device = "cpu"
) -> tuple[Matrix, torch.Tensor, torch.Tensor]:
    """Cora (2,708 papers, 1,433 bag-of-words features, 7 classes), symmetrised.

    Reads the ``.npz`` layout of the graph-adversarial-robustness literature (CSR adjacency
    ``adj_*``, CSR features ``attr_*``, ``labels``) with ``allow_pickle=False``; citations
    are stored in both directions, self-loops and repeats dropped.

    Parameters
    ----------
    path : str or os.PathLike, optional
        Default: ``$GSAMPLE_DATA/cora.npz``, else ``../shared/data/cora.npz`` beside the
        checkout.
    device : str or torch.device

    Returns
    -------
    A : Matrix, shape (2708, 2708)
    x : FloatTensor, shape (2708, 1433)
        Binary word occurrences.
    y : LongTensor, shape (2708,)

    Examples
    --------
    >>> import gsample as gs
    >>> A, x, y = gs.datasets.cora()
    >>> A.num_nodes, x.shape[1], int(y.max()) + 1
    (2708, 1433, 7)
    """
    path = as_path(path) if path is not None else default_data_path("cora.npz")
    device = V.device(device)
    if not os.path.exists(path):
        raise FileNotFoundError(f"path: no such file: {path}")
    d = np.load(path, allow_pickle=False)
    n = int(d["adj_shape"][0])
    indptr = torch.from_numpy(d["adj_indptr"].astype(np.int64))
    dst = torch.from_numpy(d["adj_indices"].astype(np.int64))
    src = torch.repeat_interleave(torch.arange(n), indptr[1:] - indptr[:-1])
    ei = torch.cat([torch.stack([src, dst]), torch.stack([dst, src])], 1)
    ei = torch.unique(ei[:, ei[0] != ei[1]], dim=1)
    x = torch.zeros(n, int(d["attr_shape"][1]))
    fptr = torch.from_numpy(d["attr_indptr"].astype(np.int64))
    frow = torch.repeat_interleave(torch.arange(n), fptr[1:] - fptr[:-1])
    x[frow, torch.from_numpy(d["attr_indices"].astype(np.int64))] = 1.0
    y = torch.from_numpy(d["labels"].astype(np.int64))
    return Matrix.from_edge_index(ei, num_nodes=n).to(device), x.to(device), y.to(device)


def default_data_path(name: str) -> str:
    """``$GSAMPLE_DATA/name``, else ``../shared/data/name`` beside the repository."""
    root = os.environ.get("GSAMPLE_DATA") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)),
        os.pardir,
        os.pardir,
        os.pardir,
        "shared",
        "data",
    )
    return os.path.normpath(os.path.join(root, name))


__all__ = ["cora", "default_data_path", "planted_partition", "read_snap", "rmat"]
