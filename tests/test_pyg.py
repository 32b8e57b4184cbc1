"""``gsample.pyg``: the ``BaseSampler`` adapter inside PyG's ``NodeLoader`` / ``LinkLoader``, the
drop-in ``NeighborLoader`` against PyG's conventions, and worker processes drawing exactly
what one process draws (docs/architecture.md §3, consequence 5)."""

import functools

import numpy as np
import pytest
import scipy.stats
import torch
from helpers import example

import gsample as gs

pytest.importorskip("torch_geometric")
from torch_geometric.data import Data
from torch_geometric.loader import LinkLoader, NodeLoader
from torch_geometric.sampler import NegativeSampling, NodeSamplerInput
from torch_geometric.utils import subgraph, trim_to_layer

import gsample.interop.pyg.loader as gp
import gsample.pyg


@pytest.fixture(scope="module")
def data():
    """A PyG ``Data`` over an R-MAT graph, edge ``i`` of ``edge_index`` has edge id ``i``."""
    A = gs.datasets.rmat(1500, 15000, seed=2)
    src, dst, eid = A.edges()
    ei = torch.empty(2, A.num_edges, dtype=torch.long)
    ei[0, eid], ei[1, eid] = src, dst
    g = torch.Generator().manual_seed(0)
    return Data(
        edge_index=ei,
        x=torch.randn(1500, 4, generator=g),
        y=torch.randint(0, 3, (1500,), generator=g),
        edge_attr=torch.randn(A.num_edges, 2, generator=g),
        num_nodes=1500,
    )


def check_pyg_conventions(batch, data, fanouts, seeds):
    """What PyG's ``NeighborLoader`` documents for a mini-batch (directed, not disjoint)."""
    n, B = batch.num_nodes, batch.batch_size
    assert torch.equal(batch.n_id[:B], seeds)  # seeds first, in order
    assert batch.n_id.unique().numel() == n  # each node once
    assert torch.equal(batch.x, data.x[batch.n_id]) and torch.equal(batch.y, data.y[batch.n_id])
    assert torch.equal(batch.edge_attr, data.edge_attr[batch.e_id])
    assert torch.equal(batch.n_id[batch.edge_index], data.edge_index[:, batch.e_id])
    assert len(batch.num_sampled_nodes) == len(fanouts) + 1 and batch.num_sampled_nodes[0] == B
    assert sum(batch.num_sampled_nodes) == n
    assert sum(batch.num_sampled_edges) == batch.edge_index.shape[1]
    # hop h: each node first reached at hop h - 1 has min(fanout, in-degree) distinct in-edges
    deg = torch.bincount(data.edge_index[1], minlength=data.num_nodes)
    starts = np.cumsum([0] + batch.num_sampled_nodes)
    e0 = 0
    for h, (k, m) in enumerate(zip(fanouts, batch.num_sampled_edges)):
        hop = batch.edge_index[:, e0 : e0 + m]
        dst_nodes = torch.arange(starts[h], starts[h + 1])
        got = torch.bincount(hop[1], minlength=n)[dst_nodes]
        want = deg[batch.n_id[dst_nodes]]
        assert torch.equal(got, want if k < 0 else want.clamp(max=k))
        assert batch.e_id[e0 : e0 + m].unique().numel() == m
        e0 += m
    # trim_to_layer, layer after layer (as a model calls it): the last keeps the seeds and
    # hop 1 only
    x, ei = batch.x, batch.edge_index
    for layer in range(len(fanouts)):
        x, ei, _ = trim_to_layer(layer, batch.num_sampled_nodes, batch.num_sampled_edges, x, ei)
    assert x.shape[0] == B + batch.num_sampled_nodes[1]
    assert ei.shape[1] == batch.num_sampled_edges[0]
    # every edge lies in the graph's subgraph induced by n_id (PyG's own utility)
    _, _, mask = subgraph(
        batch.n_id,
        data.edge_index,
        relabel_nodes=True,
        num_nodes=data.num_nodes,
        return_edge_mask=True,
    )
    assert bool(torch.isin(batch.e_id, mask.nonzero().view(-1)).all())


@pytest.mark.parametrize("fanouts", [[5, 3], [-1, 2], [4, 3, 2]])
def test_neighbor_loader_follows_pyg_conventions(data, fanouts):
    train = torch.arange(0, 1500, 3)
    loader = gp.NeighborLoader(data, fanouts, input_nodes=train, batch_size=64, seed=0)
    batches = list(loader)
    assert len(batches) == len(loader) == 8
    for i, batch in enumerate(batches):
        seeds = train[i * 64 : (i + 1) * 64]
        check_pyg_conventions(batch, data, fanouts, seeds)
        assert torch.equal(batch.input_id, torch.arange(i * 64, i * 64 + seeds.numel()))


def test_neighbor_loader_with_a_mask_shuffle_and_replacement(data):
    mask = torch.zeros(1500, dtype=torch.bool)
    mask[::5] = True
    loader = gp.NeighborLoader(
        data,
        [3],
        input_nodes=mask,
        batch_size=50,
        shuffle=True,
        replace=True,
        seed=1,
        drop_last=True,
    )
    epochs = [torch.cat([b.n_id[: b.batch_size] for b in loader]) for _ in range(2)]
    assert torch.equal(epochs[0].sort().values, mask.nonzero().view(-1))
    assert not torch.equal(epochs[0], epochs[1])  # reshuffled
    batch = next(iter(loader))
    deg = torch.bincount(data.edge_index[1], minlength=1500)[batch.n_id[:50]]
    got = torch.bincount(batch.edge_index[1, : batch.num_sampled_edges[0]], minlength=50)
    assert torch.equal(got, torch.where(deg > 0, 3, 0))  # k draws per node


def test_neighbor_loader_equals_gs_dataloader(data):
    """Same seed: the batches of ``gs.DataLoader`` over :func:`neighbor_sample`."""
    loader = gp.NeighborLoader(data, [4, 2], batch_size=100, shuffle=True, seed=7)
    A = gs.Matrix.from_pyg(data, weight=None)
    ref = gs.DataLoader(
        A,
        functools.partial(gp.neighbor_sample, num_neighbors=(4, 2)),
        torch.arange(1500),
        100,
        shuffle=True,
        seed=7,
    )
    for _ in range(2):  # two epochs
        for a, b in zip(loader, ref, strict=True):
            expected = b.to_pyg()
            assert torch.equal(a.n_id, expected.n_id) and torch.equal(a.e_id, expected.e_id)
            assert torch.equal(a.edge_index, expected.edge_index)


@pytest.mark.parametrize("persistent", [False, True])
def test_workers_draw_what_one_process_draws(data, persistent):
    one = gp.NeighborLoader(data, [5, 3], batch_size=100, shuffle=True, seed=3)
    two = gp.NeighborLoader(
        data,
        [5, 3],
        batch_size=100,
        shuffle=True,
        seed=3,
        num_workers=2,
        persistent_workers=persistent,
    )
    for _ in range(2):
        for a, b in zip(two, one, strict=True):
            assert torch.equal(a.e_id, b.e_id) and torch.equal(a.n_id, b.n_id)


def test_workers_do_not_share_draws():
    """Every node has 8 in-neighbours laid out alike, so a worker drawing from a copy of the
    parent's random stream picks, for its first mini-batch, the neighbour offsets the other
    worker picks for its own (the bug of issue 12): batches 0 and 1 must draw different
    offsets, and the same ones as without workers."""
    n, d = 400, 8
    dst = torch.arange(n).repeat_interleave(d)
    src = (dst + 1 + torch.arange(d).repeat(n)) % n
    order = torch.argsort(dst * n + src)  # edge ids in CSC order
    data = Data(edge_index=torch.stack([src[order], dst[order]]), num_nodes=n)
    sampler = gp.Sampler(data, functools.partial(gp.neighbor_sample, num_neighbors=(3,)), seed=0)

    def offsets(num_workers):
        loader = NodeLoader(data, sampler, batch_size=50, num_workers=num_workers)
        return [b.e_id - d * b.n_id[b.edge_index[1]] for b in loader]

    two, one = offsets(2), offsets(0)
    assert all(torch.equal(a, b) for a, b in zip(two, one, strict=True))
    assert bool(((two[0] >= 0) & (two[0] < d)).all())
    assert not torch.equal(two[0], two[1])


def test_sampler_in_pyg_node_loader(data):
    sampler = gp.Sampler(
        data, functools.partial(example("graphsage").graphsage, fanouts=(4, 3)), seed=5
    )
    train = torch.arange(0, 1500, 4)
    batches = list(NodeLoader(data, sampler, input_nodes=train, batch_size=75))
    workers = list(NodeLoader(data, sampler, input_nodes=train, batch_size=75, num_workers=2))
    for i, (batch, other) in enumerate(zip(batches, workers, strict=True)):
        seeds = train[i * 75 : (i + 1) * 75]
        assert batch.batch_size == seeds.numel()
        assert torch.equal(batch.n_id[: batch.batch_size], seeds)
        assert torch.equal(batch.x, data.x[batch.n_id])
        assert torch.equal(batch.n_id[batch.edge_index], data.edge_index[:, batch.e_id])
        assert torch.equal(batch.e_id, other.e_id)  # workers draw the same
        # the mini-batch alone, its key from its input ids, in this process: the same
        out = sampler.sample_from_nodes(NodeSamplerInput(input_id=batch.input_id, node=seeds))
        assert torch.equal(out.edge, batch.e_id)


def test_sampler_runs_any_sampler_shape(data):
    """Layer-wise (LADIES) and induced subgraphs (ShaDow) through PyG's NodeLoader."""
    A = gs.Matrix.from_pyg(data, weight=None)
    for fn, graph in [
        (
            functools.partial(example("ladies").ladies, layers=(200, 200)),
            example("ladies").normalize(A),
        ),
        (functools.partial(example("shadow").shadow, fanouts=(3, 3)), A),
    ]:
        loader = NodeLoader(data, gp.Sampler(graph, fn, seed=0), batch_size=200)
        batch = next(iter(loader))
        assert torch.equal(batch.n_id[:200], torch.arange(200))
        assert torch.equal(batch.n_id[batch.edge_index], data.edge_index[:, batch.e_id])


@pytest.mark.parametrize("mode", ["binary", "triplet"])
def test_sampler_in_pyg_link_loader(data, mode):
    sampler = gp.Sampler(data, functools.partial(gp.neighbor_sample, num_neighbors=(3, 2)), seed=2)
    label_index = data.edge_index[:, :300]

    def epoch(num_workers):
        return list(
            LinkLoader(
                data,
                sampler,
                edge_label_index=label_index,
                batch_size=100,
                neg_sampling=NegativeSampling(mode),
                num_workers=num_workers,
            )
        )

    batches, workers = epoch(0), epoch(2)
    for i, (batch, other) in enumerate(zip(batches, workers, strict=True)):
        pos = label_index[:, i * 100 : (i + 1) * 100]
        seeds = batch.n_id[: batch.num_sampled_nodes[0]]
        assert torch.equal(seeds, seeds.unique())  # both endpoints, unique
        assert torch.equal(batch.n_id[batch.edge_index], data.edge_index[:, batch.e_id])
        if mode == "binary":
            assert torch.equal(batch.n_id[batch.edge_label_index[:, :100]], pos)
            assert batch.edge_label.tolist() == [1.0] * 100 + [0.0] * 100
            assert torch.equal(batch.edge_label_index, other.edge_label_index)  # negatives too
        else:
            assert torch.equal(batch.n_id[batch.src_index], pos[0])
            assert torch.equal(batch.n_id[batch.dst_pos_index], pos[1])
            assert torch.equal(batch.dst_neg_index, other.dst_neg_index)
        assert torch.equal(batch.e_id, other.e_id)


def test_neighbor_sample_is_uniform(data):
    """A node's sampled in-neighbours over many mini-batches: each of its ``d`` in-edges
    drawn ``k / d`` of the time (chi-square)."""
    deg = torch.bincount(data.edge_index[1], minlength=1500)
    v = int(torch.argmax(deg))
    k = 3
    A = gs.Matrix.from_pyg(data, weight=None)
    sampler = gp.Sampler(A, functools.partial(gp.neighbor_sample, num_neighbors=(k,)), seed=0)
    counts = torch.zeros(data.edge_index.shape[1])
    draws = 3000
    for i in range(draws):
        out = sampler.sample(torch.tensor([v]), i)[0]
        counts[out.edges()[2]] += 1
    mine = (data.edge_index[1] == v).nonzero().view(-1)
    assert counts.sum() == draws * k and counts[mine].sum() == draws * k
    p = scipy.stats.chisquare(counts[mine].numpy()).pvalue
    assert p > 1e-3, p


def test_bad_arguments_name_themselves(data):
    with pytest.raises(TypeError, match="num_neighbors"):
        gp.NeighborLoader(data, 5)
    with pytest.raises(TypeError, match="num_neighbors"):
        gp.NeighborLoader(data, [5, -2])
    with pytest.raises(IndexError, match="input_nodes"):
        gp.NeighborLoader(data, [5], input_nodes=torch.tensor([0, 5000]))
    with pytest.raises(ValueError, match="batch_size"):
        gp.NeighborLoader(data, [5], batch_size=0)
    with pytest.raises(TypeError, match="graph"):
        gp.Sampler("not a graph", gp.neighbor_sample)
    with pytest.raises(TypeError, match="sampler_fn"):
        gp.Sampler(data, None)
    with pytest.raises(TypeError, match="sampler"):
        gp.NeighborLoader(data, [5], sampler=None)


def test_gsample_pyg_shows_only_its_public_api():
    """``dir(gsample.pyg)`` is its ``__all__`` (the implementation's helpers stay in
    :mod:`gsample.interop.pyg.loader`), and every name there is the implementation's."""
    public = gsample.pyg
    assert {n for n in dir(public) if not n.startswith("__")} == set(public.__all__)
    from gsample.interop.pyg import link, negatives, toy

    impl = {
        **vars(gp),
        **vars(negatives),
        "LinkNeighborLoader": link.LinkNeighborLoader,
        "users_movies": toy.users_movies,
    }
    assert all(getattr(public, n) is impl[n] for n in public.__all__)
