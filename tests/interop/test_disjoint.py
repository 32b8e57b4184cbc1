"""Disjoint sampling (``disjoint=True``, no time): one tree per seed, as a DSL program
(``gsample.interop.pyg.temporal.disjoint_sample``) and in gsample.pyg's loaders. Checked
against the brute-force reference of ``brute_force.py``: each seed's tree exactly (its
frontier copies, ``min(k, deg)`` distinct in-edges each, the per-seed unique of each hop),
the batch vector, the law (a goodness-of-fit test, its p-value printed), the determinism
target (each seed samples what it samples alone), compiled == eager, super-batches."""

import collections
import functools
import itertools

import pytest
import torch
from brute_force import Graph, check_batch, expected_trees, trees_of
from helpers import check_super_batched

pytest.importorskip("torch_geometric")
pytest.importorskip("scipy")

from scipy import stats
from torch_geometric.data import Data
from torch_geometric.sampler import NegativeSampling

import gsample as gs
import gsample.pyg as gp
from gsample.backend.cuda import first_reached as cuda_first_reached
from gsample.base.random import batch_scope
from gsample.interop.pyg.subgraph import to_bidirectional
from gsample.interop.pyg.temporal import disjoint_pyg_sample, disjoint_sample

N, E = 70, 900


@pytest.fixture(scope="module")
def data():
    A = gs.datasets.rmat(N, E, seed=3)
    src, dst, _ = A.edges()
    g = torch.Generator().manual_seed(0)
    return Data(
        x=torch.arange(N).view(-1, 1),
        edge_index=torch.stack([src, dst]),
        w=torch.rand(E, generator=g) * (torch.rand(E, generator=g) > 0.2),
        num_nodes=N,
    )


@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("hops", [[3, 2], [-1, 2], [2, 2, 2]])
def test_trees_are_the_references(data, replace, hops):
    """Each seed's tree, whatever the other seeds (repeated ones included): its frontier
    copies sample ``min(k, deg)`` distinct in-edges (``k`` with replacement), and each
    hop's new nodes are those its seed had not reached."""
    g = Graph.of(data.edge_index)
    seeds = torch.tensor([0, 5, 5, 11, 30, 0, 69, 42, 8, 13])
    loader = gp.NeighborLoader(
        data, hops, input_nodes=seeds, batch_size=5, disjoint=True, replace=replace, seed=1
    )
    for j, batch in enumerate(loader):
        s = seeds[5 * j : 5 * j + 5].tolist()
        check_batch(batch, g, s, hops, replace=replace)
        assert "seed_time" not in batch  # no time: PyG's seed_time is None


def test_all_neighbours_is_the_reference_exactly(data):
    g = Graph.of(data.edge_index)
    seeds = torch.tensor([3, 3, 40, 7])
    batch = next(iter(gp.NeighborLoader(data, [-1, -1], input_nodes=seeds, disjoint=True)))
    # batch_size 1 by default: the first batch is seed 3 alone
    assert trees_of(batch, 1, 2) == expected_trees(g, [3], [-1, -1])
    batch = next(
        iter(gp.NeighborLoader(data, [-1, -1], input_nodes=seeds, disjoint=True, batch_size=4))
    )
    assert trees_of(batch, 4, 2) == expected_trees(g, seeds.tolist(), [-1, -1])
    t = trees_of(batch, 4, 2)
    assert t[0] == t[1], "a repeated seed grows the same tree when every edge is taken"


def test_weighted_trees(data):
    """``weight_attr``: weight-0 edges never sampled, each tree as the reference's."""
    g = Graph.of(data.edge_index)
    seeds = torch.arange(0, N, 4)
    loader = gp.NeighborLoader(
        data, [3, 3], input_nodes=seeds, batch_size=6, disjoint=True, weight_attr="w", seed=2
    )
    w = data.w.tolist()
    for j, batch in enumerate(loader):
        check_batch(batch, g, seeds[6 * j : 6 * j + 6].tolist(), [3, 3], weight=w)


def test_uniform_law(data):
    """One node as M seeds: M independent trees; their first hop's 2-subsets are uniform."""
    g = Graph.of(data.edge_index)
    deg = torch.bincount(data.edge_index[1], minlength=N)
    v = int(torch.nonzero(deg == 5)[0, 0])
    M = 4000
    loader = gp.NeighborLoader(
        data, [2], input_nodes=torch.full((M,), v), disjoint=True, batch_size=M, seed=3
    )
    draws = check_batch(next(iter(loader)), g, [v] * M, [2])
    counts = collections.Counter(tuple(d) for d in draws.values())
    subsets = list(itertools.combinations(sorted(g.in_edges(v)), 2))
    p = stats.chisquare([counts[s] for s in subsets]).pvalue
    print(f"disjoint uniform (deg 5, k=2, M={M}): p={p:.3g}")
    assert p > 1e-3


def test_each_seed_samples_what_it_samples_alone(data):
    """The determinism target: seed ``i`` of a mini-batch's tree is the tree the program
    draws for that seed alone with its batch key (the same ``batch_scope``) and position
    (seed index ``i``); the loader's batches are the program's."""
    A = gs.Matrix.from_edge_index(data.edge_index, N)
    seeds = torch.tensor([9, 1, 9, 27, 50, 3, 1])
    fn = gs.compile(functools.partial(disjoint_sample, num_neighbors=(4, 3)))
    with batch_scope(7, 2):
        whole = disjoint_pyg_sample(fn(A, seeds), seeds)
    for i in range(seeds.numel()):
        with batch_scope(7, 2):
            one = fn(A, seeds[i : i + 1], None, None, torch.tensor([i]))
        one = disjoint_pyg_sample(one, seeds[i : i + 1])
        mine = whole.batch == i
        assert torch.equal(whole.node[mine], one.node)
        assert torch.equal(whole.edge[whole.batch[whole.col] == i], one.edge)
    # and with another seed beside it, seed 0's tree does not change
    with batch_scope(7, 2):
        other = disjoint_pyg_sample(fn(A, seeds[:1]), seeds[:1])
    assert torch.equal(other.edge, whole.edge[whole.batch[whole.col] == 0])


def test_loader_batches_are_the_programs(data):
    """``gsample.pyg.NeighborLoader(disjoint=True)``'s mini-batch ``i`` is the program run in
    ``batch_scope(epoch seed, i)`` (so the property above holds for its batches)."""
    from gsample.base.random import combine

    loader = gp.NeighborLoader(
        data, [3, 2], input_nodes=torch.arange(20), batch_size=8, disjoint=True, seed=5
    )
    A = gs.Matrix.from_edge_index(data.edge_index, N)
    for i, batch in enumerate(loader):
        seeds = torch.arange(20)[8 * i : 8 * i + 8]
        with batch_scope(combine(combine(0, 5), 0), i):
            s = disjoint_pyg_sample(disjoint_sample(A, seeds, num_neighbors=(3, 2)), seeds)
        assert torch.equal(batch.n_id, s.node) and torch.equal(batch.batch, s.batch)
        assert torch.equal(batch.e_id, s.edge)


def test_determinism_and_compiled_equals_eager(data):
    kw = dict(disjoint=True, batch_size=9, shuffle=True, seed=4)

    def batches(**extra):
        return [
            (b.n_id, b.batch, b.edge_index, b.e_id)
            for b in gp.NeighborLoader(data, [3, 3], **kw, **extra)
        ]

    a = batches()
    for other in (batches(), batches(num_workers=2), batches(compile=False)):
        for x, y in zip(a, other, strict=True):
            assert all(torch.equal(u, v) for u, v in zip(x, y, strict=True))


def test_bidirectional_and_induced(data):
    """``bidirectional``: the directional batch's nodes (and batch vector), its edges made
    bidirectional (PyG's ``to_bidirectional``); ``induced`` is not disjoint: refused."""
    kw = dict(input_nodes=torch.arange(12), batch_size=6, disjoint=True, seed=6)
    d = list(gp.NeighborLoader(data, [3, 2], **kw))
    b = list(gp.NeighborLoader(data, [3, 2], subgraph_type="bidirectional", **kw))
    for x, y in zip(d, b, strict=True):
        assert torch.equal(x.n_id, y.n_id) and torch.equal(x.batch, y.batch)
        s = to_bidirectional(disjoint_pyg_sample_like(x))
        assert torch.equal(torch.stack([s.row, s.col]), y.edge_index)
        assert torch.equal(s.edge, y.e_id)
    with pytest.raises(ValueError, match="subgraph_type: 'induced' subgraphs are not disjoint"):
        gp.NeighborLoader(data, [3], disjoint=True, subgraph_type="induced")


def disjoint_pyg_sample_like(batch):
    """A PyG batch as the mapped sample ``to_bidirectional`` takes."""
    from gsample.interop.pyg.data import PygSample

    return PygSample(
        node=batch.n_id,
        row=batch.edge_index[0],
        col=batch.edge_index[1],
        edge=batch.e_id,
        weight=None,
        batch_size=batch.batch_size,
        num_sampled_nodes=None,
        num_sampled_edges=None,
    )


@pytest.mark.parametrize("mode", ["binary", "triplet"])
def test_link_loader_disjoint_layout(data, mode):
    """PyG's disjoint link layout: every endpoint (negatives' too) a seed of its own tree,
    seeds first, ``batch`` the tree modulo the positives; each tree the reference's."""
    g = Graph.of(data.edge_index)
    label_index = data.edge_index[:, :40]
    loader = gp.LinkNeighborLoader(
        data,
        [2, 2],
        edge_label_index=label_index,
        disjoint=True,
        neg_sampling=NegativeSampling(mode, 1),
        batch_size=10,
        seed=3,
    )
    for batch in loader:
        P = batch.input_id.numel()
        n_seeds = 4 * P if mode == "binary" else 3 * P
        assert torch.equal(batch.batch[:n_seeds], torch.arange(n_seeds) % P)
        if mode == "binary":
            assert torch.equal(batch.edge_label_index, torch.arange(n_seeds).view(2, -1))
            src = batch.n_id[batch.edge_label_index[0, :P]]
            assert torch.equal(src, label_index[0, batch.input_id])
        else:
            assert torch.equal(batch.src_index, torch.arange(P))
            assert torch.equal(batch.dst_pos_index, torch.arange(P, 2 * P))
            assert torch.equal(batch.n_id[batch.dst_pos_index], label_index[1, batch.input_id])
        # PyG's batch is modulo P: restore each node's tree to check the trees exactly
        batch.batch = _trees(batch, n_seeds)
        check_batch(batch, g, batch.n_id[:n_seeds].tolist(), [2, 2])


def _trees(batch, n_seeds):
    """Each node's tree (seed position) in a disjoint link batch, hop by hop: an edge's
    source copy is in its destination copy's tree."""
    tree = torch.full((batch.n_id.numel(),), -1)
    tree[:n_seeds] = torch.arange(n_seeds)
    row, col = batch.edge_index
    at = 0
    for count in batch.num_sampled_edges:  # hop h's destinations' trees are known
        r, c = row[at : at + count], col[at : at + count]
        tree.scatter_reduce_(0, r, tree[c], "amax")
        at += count
    return tree


def test_super_batched_equals_one_by_one():
    A = gs.datasets.rmat(300, 3000, seed=0)
    seeds = torch.arange(64) % 40  # repeats across and within mini-batches
    fn = functools.partial(disjoint_sample, num_neighbors=(4, 3))
    check_super_batched(A, fn, seeds, 16, 2)  # blocks and slots, each batch's


def test_zero_hops_and_empty_frontiers():
    """``num_neighbors=[]``: the seeds alone; a tree that ends (no in-edge) stays empty."""
    data = Data(edge_index=torch.tensor([[0], [1]]), num_nodes=3)
    b = next(iter(gp.NeighborLoader(data, [], disjoint=True, batch_size=3)))
    assert b.n_id.tolist() == [0, 1, 2] and b.batch.tolist() == [0, 1, 2]
    b = next(iter(gp.NeighborLoader(data, [2, 2], disjoint=True, batch_size=3)))
    assert b.n_id.tolist() == [0, 1, 2, 0] and b.batch.tolist() == [0, 1, 2, 1]
    assert b.num_sampled_nodes == [3, 1, 0] and b.e_id.tolist() == [0]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("super_batch", [None, 3])
def test_cuda_backend_batches_equal_the_cpus(data, super_batch, monkeypatch):
    """On a GPU, the CUDA backend (``first_reached``'s kernels among them: counted) gives the
    torch backend's batches and the CPU's, bit for bit, one at a time and super-batched."""
    calls = []
    run = cuda_first_reached.run
    monkeypatch.setattr(cuda_first_reached, "run", lambda *a, **k: calls.append(1) or run(*a, **k))
    seeds = torch.arange(N).repeat(2)  # repeats within and across mini-batches

    def batches(device, backend):
        graph = gs.Matrix.from_pyg(data, weight=None).to(device)
        with gs.use_backend(backend):
            loader = gp.NeighborLoader(
                data,
                [4, 3, 2],
                input_nodes=seeds,
                batch_size=16,
                disjoint=True,
                shuffle=True,
                seed=2,
                graph=graph,
                super_batch=super_batch,
            )
            return [tuple(t.cpu() for t in (b.n_id, b.batch, b.edge_index, b.e_id)) for b in loader]

    ref = batches("cpu", "torch")
    for backend in ("torch", "cuda"):
        got = batches("cuda", backend)
        assert len(got) == len(ref)
        for x, y in zip(ref, got, strict=True):
            assert all(torch.equal(u, v) for u, v in zip(x, y, strict=True)), backend
    assert calls, "the CUDA backend did not run first_reached's kernels"
