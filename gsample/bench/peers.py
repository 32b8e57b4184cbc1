"""The peers the harness times beside gsample: what a user would otherwise pick.

* ``plain PyTorch``: ``benchmarks/baselines.py``, the sampler written directly with torch
  ops on the CSC tensors (GraphSAGE, LADIES, FastGCN, ShaDow, PASS; any device);
* ``torch_cluster random_walk``: the kernel behind PyG's ``Node2Vec`` (DeepWalk, node2vec;
  CPU and CUDA), from an installed ``torch_cluster`` or built from its sdist by
  ``benchmarks/torch_cluster_rw.py`` (``--torch-cluster-sdist``);
* ``PyG NeighborLoader`` (GraphSAGE) and ``PyG ShaDowKHopSampler`` (ShaDow), on the CPU,
  where PyG has a sampling backend (torch-sparse or pyg-lib: ``pip install torch-sparse
  --no-build-isolation``, about ten minutes of compiling; a documented extra);
* ``DGL``: ``NeighborSampler`` (GraphSAGE), ``random_walk`` and ``node2vec_random_walk``,
  where ``import dgl`` works.

A peer that cannot run here is recorded with the reason, never an error. Peers draw from
their own random streams (the same law, other samples), so they are checked for validity,
not agreement; PyG's and DGL's conventions differ from gsample's where noted.
"""

from __future__ import annotations

import functools
import glob
import os
from collections.abc import Callable
from typing import NamedTuple

import torch

from gsample.bench.measure import calls_epoch, epoch_runner
from gsample.bench.workloads import Workload, count, host_count

#: why DGL does not run with this environment's torch (dgl 2.1.0 installed with
#: ``pip --target`` beside the venv's torch)
DGL_WHY = (
    "dgl 2.1.0, the newest release on PyPI, ships its C++ graphbolt library for torch "
    "2.0.0 to 2.2.1 only: under torch >= 2.3 'import dgl' raises FileNotFoundError "
    "(Cannot find DGL C++ graphbolt library ... libgraphbolt_pytorch_<torch>.so)"
)
#: why torch_cluster's node2vec is not run on CUDA by default
CLUSTER_NODE2VEC_CUDA = (
    "not run: torch_cluster 1.6.3's CUDA node2vec kernel (csrc/cuda/rw_cuda.cu, "
    "rejection_sampling_kernel) tests 'x -> t is an edge' by a linear scan of x's adjacency "
    "and overwrites the current node's row bounds with x's inside its rejection loop; on the "
    "products-sized R-MAT its first epoch had not finished after 4 minutes (H100, "
    "2026-11-24). --torch-cluster-node2vec runs it anyway."
)
PYG_WHY = (
    "not installed: PyG's samplers need pyg-lib or torch-sparse, which imports "
    "torch-scatter (pip install torch-scatter torch-sparse --no-build-isolation: they "
    "compile from source, 10 to 40 minutes on 2 cores)"
)


class Peer(NamedTuple):
    """A peer of one workload: ``run() -> (seconds, units)`` times one epoch; ``check(seeds)``
    raises if its sample of ``seeds`` is not valid; ``note`` says how it differs; ``sample``
    (``seeds -> output``, for peers that sample call by call) lets a GPU run profile it."""

    run: Callable
    check: Callable
    note: str = ""
    sample: Callable | None = None


def coo(A):
    """``(rows, cols)`` of ``A``'s edges in CSC order (column by column)."""
    c = A.csc
    cols = torch.repeat_interleave(
        torch.arange(A.num_nodes, device=c.indptr.device), c.indptr[1:] - c.indptr[:-1]
    )
    return c.rows, cols


# ----------------------------------------------------------------------------- plain PyTorch
def plain_pytorch(w: Workload, baselines):
    """``sample(seeds) -> [Block]`` of ``benchmarks/baselines.py``, or ``None`` (walks)."""
    c, n = w.G.csc, w.A.num_nodes
    if w.name == "graphsage":
        return functools.partial(baselines.graphsage, c.indptr, c.rows, n, **w.kw)
    if w.name == "ladies":
        return functools.partial(baselines.ladies, c.indptr, c.rows, w.G.values, n, **w.kw)
    if w.name == "fastgcn":
        return functools.partial(baselines.fastgcn, c.indptr, c.rows, None, n, **w.kw)
    if w.name == "shadow":
        return functools.partial(baselines.shadow, c.indptr, c.rows, n, **w.kw)
    if w.name == "pass":
        return functools.partial(baselines.pass_sampler, c.indptr, c.rows, None, n, **w.kw)
    return None


def _plain_check(w, sample):
    """The baseline's first layer has gsample's sizes where they are not random: GraphSAGE
    edges (``min(k, degree)`` per column), PASS edges (``k`` per column with an edge),
    LADIES / FastGCN rows drawn."""

    def check(batch):
        b, g = sample(batch)[0], w.fn(w.G, batch, **w.kw)[0]
        if w.name in ("graphsage", "pass"):
            assert b.num_edges == g.num_edges, (b.num_edges, g.num_edges)
        elif w.name in ("ladies", "fastgcn"):
            assert torch.unique(b.rows).numel() == g.shape[0], "other number of rows drawn"
        assert b.num_edges > 0

    return check


# ----------------------------------------------------------------------------- torch_cluster
_CLUSTER: dict = {}


def torch_cluster_op(sdist):
    """``(op, version)`` of torch_cluster's random walk (built once per process), or
    ``(None, reason)``."""
    key = str(sdist)
    if key not in _CLUSTER:
        # import here: benchmarks/torch_cluster_rw.py, on sys.path after import_repo
        try:
            from torch_cluster_rw import load

            op, version = load(sdist)
            _CLUSTER[key] = (
                (op, version)
                if op is not None
                else (None, "not installed: no torch_cluster and no --torch-cluster-sdist")
            )
        except Exception as e:  # a failed build is the peer's, not ours
            _CLUSTER[key] = (None, f"not built: {type(e).__name__}: {str(e)[:300]}")
    return _CLUSTER[key]


def default_sdist(root):
    """``$GSAMPLE_TORCH_CLUSTER_SDIST``, else the newest ``.whl/torch_cluster-*.tar.gz`` of
    the checkout, else ``None``."""
    env = os.environ.get("GSAMPLE_TORCH_CLUSTER_SDIST")
    if env:
        return env
    found = sorted(glob.glob(str(root / ".whl" / "torch_cluster-*.tar.gz")))
    return found[-1] if found else None


def torch_cluster_peer(w: Workload, batches, device, sdist, node2vec_on_cuda=False):
    """torch_cluster's ``random_walk`` on the workload's CSC (built from ``sdist`` when it
    does not import): a :class:`Peer`, or a string saying why it cannot run."""
    op, version = torch_cluster_op(sdist)
    if op is None:
        return version
    p, q = w.walk_pq
    if device.type == "cuda" and (p, q) != (1.0, 1.0) and not node2vec_on_cuda:
        return CLUSTER_NODE2VEC_CUDA
    c, L = w.G.csc, w.kw["length"]

    def sample(seeds):
        return op(c.indptr, c.rows, seeds, L, p, q)[1]  # edge_seq: -1 = stood still

    def check(batch):
        # import here: benchmarks/torch_cluster_rw.py, on sys.path after import_repo
        from torch_cluster_rw import check_walks

        check_walks(op, c.indptr, c.rows, batch, L, p, q)

    return Peer(
        calls_epoch(sample, batches, device, lambda e: int((e >= 0).sum())),
        check,
        f"torch_cluster {version} on the CSC (walks along in-edges, as gsample); "
        "units: steps that moved",
        sample,
    )


# ----------------------------------------------------------------------------- PyG
def _pyg_data(w: Workload, gid: bool):
    """The graph as a PyG ``Data`` (edges row -> column, so PyG samples in-edges as gsample);
    ``gid``: a node attribute of global ids, for loaders whose batches have no ``n_id``."""
    # import here: PyTorch Geometric is an optional peer
    from torch_geometric.data import Data

    rows, cols = coo(w.A)
    data = Data(edge_index=torch.stack([rows, cols]), num_nodes=w.A.num_nodes)
    if gid:
        data.gid = torch.arange(w.A.num_nodes)
    return data


def _pyg_check(w, loader):
    """PyG's first mini-batch: every edge an edge of the graph; for GraphSAGE the seeds first
    among ``n_id`` and hop 1 exactly gsample's first layer (``min(k, degree)`` per seed)."""
    rows, cols = coo(w.A)
    keys = cols * w.A.num_nodes + rows

    def check(batch):
        b = next(iter(loader))
        n_id = b.n_id if w.name == "graphsage" else b.gid
        src, dst = n_id[b.edge_index]
        assert b.edge_index.size(1) > 0
        assert bool(torch.isin(dst * w.A.num_nodes + src, keys).all()), "not an edge"
        if w.name == "graphsage":
            assert torch.equal(n_id[: batch.numel()], batch.cpu()), "seeds not first"
            # PyG never re-samples a node: the edges into the seeds are hop 1's
            hop1 = int((b.edge_index[1] < batch.numel()).sum())
            assert hop1 == w.fn(w.G, batch, **w.kw)[0].num_edges, "hop 1 has other sizes"

    return check


def pyg_peer(w: Workload, batches, device):
    """PyG's ``NeighborLoader`` (GraphSAGE) or ``ShaDowKHopSampler`` (ShaDow) over the
    same mini-batches, on the CPU: a :class:`Peer`, a string saying why it cannot run, or
    None for a workload PyG has no sampler of."""
    if w.name not in ("graphsage", "shadow"):
        return None
    # import here: PyTorch Geometric is an optional peer
    try:
        import torch_geometric.typing as T
    except Exception as e:
        return f"not installed: torch_geometric ({type(e).__name__})"
    if not (T.WITH_PYG_LIB or T.WITH_TORCH_SPARSE):
        return PYG_WHY
    if device.type != "cpu":
        return "not run: PyG's loaders sample on the CPU (run the CPU set)"
    # import here: PyTorch Geometric is an optional peer (it imports: checked above)
    from torch_geometric.loader import NeighborLoader, ShaDowKHopSampler

    data = _pyg_data(w, gid=w.name == "shadow")
    seeds = torch.cat(batches)  # the same mini-batches, in order
    if w.name == "graphsage":
        loader = NeighborLoader(
            data,
            num_neighbors=list(w.kw["fanouts"]),
            input_nodes=seeds,
            batch_size=w.batch_size,
            is_sorted=True,
        )
        note = (
            "PyG-style hops: hop 2 samples only the nodes first reached at hop 1 (gsample's "
            "graphsage re-samples the whole frontier), so fewer edges; compare edges/s"
        )
    else:
        if not T.WITH_TORCH_SPARSE:
            return "not installed: ShaDowKHopSampler needs torch-sparse"
        if len(set(w.kw["fanouts"])) > 1:  # it takes one fanout for every hop
            fanouts = w.kw["fanouts"]
            return f"not comparable: ShaDowKHopSampler takes one fanout for all hops, not {fanouts}"
        loader = ShaDowKHopSampler(
            data,
            depth=len(w.kw["fanouts"]),
            num_neighbors=w.kw["fanouts"][0],
            node_idx=seeds,
            batch_size=w.batch_size,
        )
        note = "one ego subgraph per seed, batched (gsample's shadow: one subgraph per mini-batch)"

    def n_edges(b) -> int:
        return int(b.edge_index.size(1))

    return Peer(epoch_runner(lambda: iter(loader), device, n_edges), _pyg_check(w, loader), note)


# ----------------------------------------------------------------------------- DGL
def dgl_peer(w: Workload, batches, device):
    """DGL's neighbour sampling / random walks over the same mini-batches, where DGL
    imports: a :class:`Peer`, a string saying why it cannot run, or None for a workload
    DGL has no sampler of."""
    if w.name not in ("graphsage", "deepwalk", "node2vec"):
        return None
    # import here: DGL is an optional peer, and does not import with every torch
    try:
        import dgl
    except Exception as e:
        why = f"{type(e).__name__}: {str(e)[:200]}"
        return (
            f"not importable ({why}); {DGL_WHY}"
            if not isinstance(e, ModuleNotFoundError)
            else f"not installed; {DGL_WHY}"
        )
    rows, cols = coo(w.A)
    if w.name == "graphsage":  # in-edges of the seeds, as gsample
        g = dgl.graph((rows, cols), num_nodes=w.A.num_nodes).to(device)
        sampler = dgl.dataloading.NeighborSampler(list(reversed(w.kw["fanouts"])))

        def sample(seeds):
            return sampler.sample_blocks(g, seeds)[2]

        def units(blocks):
            return sum(int(b.num_edges()) for b in blocks)

        note = "dgl.dataloading.NeighborSampler"
    else:  # walks follow out-edges: reversed
        g = dgl.graph((cols, rows), num_nodes=w.A.num_nodes).to(device)
        L, (p, q) = w.kw["length"], w.walk_pq
        if w.name == "deepwalk":

            def sample(seeds):
                return dgl.sampling.random_walk(g, seeds, length=L)[0]
        else:

            def sample(seeds):
                return dgl.sampling.node2vec_random_walk(g, seeds, p, q, L)

        units = count
        note = "dgl.sampling random walks on the reversed graph (in-edges, as gsample)"

    def check(batch):
        out = sample(batch)
        assert units(out) > 0
        if w.name == "graphsage":  # hop 1: min(k, degree) per seed
            assert int(out[-1].num_edges()) == w.fn(w.G, batch, **w.kw)[0].num_edges

    return Peer(
        calls_epoch(sample, batches, device, units), check, f"DGL {dgl.__version__}: {note}", sample
    )


def build(w: Workload, batches, device, args, baselines):
    """``({label: Peer}, {label: reason not run})`` of workload ``w``'s peers that
    ``args.peers`` asks for (``plain``, ``torch_cluster``, ``pyg``, ``dgl``)."""
    peers, notes = {}, {}

    def add(label, peer):
        if isinstance(peer, Peer):
            peers[label] = peer
        elif peer is not None:
            notes[label] = peer

    if "plain" in args.peers:
        sample = plain_pytorch(w, baselines)
        if sample is None:
            notes["plain PyTorch"] = "none in benchmarks/baselines.py (no walk baseline)"
        else:
            add(
                "plain PyTorch",
                Peer(
                    calls_epoch(sample, batches, device, count, host_count),
                    _plain_check(w, sample),
                    "benchmarks/baselines.py: torch's random stream",
                    sample,
                ),
            )
    if "torch_cluster" in args.peers and w.walk:
        add(
            "torch_cluster random_walk",
            torch_cluster_peer(
                w, batches, device, args.torch_cluster_sdist, args.torch_cluster_node2vec
            ),
        )
    if "pyg" in args.peers:
        add(
            "PyG NeighborLoader" if w.name == "graphsage" else "PyG ShaDowKHopSampler",
            pyg_peer(w, batches, device),
        )
    if "dgl" in args.peers:
        add("DGL", dgl_peer(w, batches, device))
    return peers, notes
