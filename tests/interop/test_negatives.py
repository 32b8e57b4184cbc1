"""Link-prediction negatives drawn by gsample (gsample.interop.pyg.negatives): PyG's laws
checked by goodness of fit at fixed keys, strict negatives against every pair of a brute-force
edge set, PyG's edge_sample layout, the loader's fields and the determinism contract."""

import math

import pytest
import torch
from scipy import stats

pytest.importorskip("torch_geometric")

from torch_geometric.data import Data
from torch_geometric.sampler import EdgeSamplerInput, SamplerOutput
from torch_geometric.sampler import NegativeSampling as PygNegativeSampling
from torch_geometric.sampler.neighbor_sampler import edge_sample as pyg_edge_sample

import gsample as gs
import gsample.pyg as gp
from gsample.base.random import combine, op_key
from gsample.interop.pyg.loader import batch_key
from gsample.interop.pyg.negatives import (
    NEGATIVE_ORDINAL,
    NegativeSampler,
    NegativeSampling,
    edge_sample,
    negative_sample,
)

#: goodness-of-fit tests at fixed keys: deterministic p-values, a wrong law gives p ~ 0
ALPHA = 1e-3


def _excluded(edge_index: torch.Tensor) -> set:
    """The pairs strict negatives exclude: the edges and the self-pairs (brute force)."""
    pairs = set(map(tuple, edge_index.t().tolist()))
    return pairs | {(v, v) for v in range(int(edge_index.max()) + 1)}


def _dense(n: int, p: float, seed: int) -> torch.Tensor:
    """A graph with each ordered pair an edge with probability ``p`` (some repeated)."""
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(n, n, generator=g) < p
    ei = mask.nonzero().t()
    return torch.cat([ei, ei[:, :5]], dim=1)  # parallel edges count once


def _chisquare(observed: torch.Tensor, expected: torch.Tensor) -> float:
    observed, expected = observed.double(), expected.double()
    expected = expected * (observed.sum() / expected.sum())
    return float(stats.chisquare(observed.numpy(), expected.numpy()).pvalue)


# ----------------------------------------------------------------------------- laws
def test_uniform_negatives_goodness_of_fit():
    n = 50
    ei = _dense(n, 0.1, 0)
    src = torch.randint(0, n, (1000,), generator=torch.Generator().manual_seed(1))
    out = negative_sample(ei, src, src, "binary", 5, num_nodes=n, key=op_key(7, 0, 0))
    assert out.src.shape == out.dst.shape == (5000,)
    p_src = _chisquare(torch.bincount(out.src, minlength=n), torch.ones(n))
    p_dst = _chisquare(torch.bincount(out.dst, minlength=n), torch.ones(n))
    print(f"uniform binary negatives: chi-square p = {p_src:.3f} (src), {p_dst:.3f} (dst)")
    assert p_src > ALPHA and p_dst > ALPHA
    # the two endpoints are independent: the pair counts fit the product law too
    pairs = torch.bincount(out.src * n + out.dst, minlength=n * n).view(n, n)
    p_pair = _chisquare(pairs.sum(0), torch.ones(n))  # dst marginal over all sources
    assert p_pair > ALPHA


def test_degree_weighted_negatives_goodness_of_fit():
    n = 40
    g = torch.Generator().manual_seed(2)
    ei = torch.randint(0, n, (2, 300), generator=g)
    ei = ei[:, ei[1] < 30]  # nodes 30.. have no in-edge: in-degree 0, never drawn
    deg = torch.bincount(ei[1], minlength=n).double()
    src = torch.randint(0, n, (1000,), generator=g)
    neg = NegativeSampler(ei, n, dst_weight=deg)
    out = neg(src, None, "triplet", 4, key=3)
    assert out.dst.shape == (1000, 4)
    # a weight of 0 is a mass of exactly 0 in the integer table (trailing ones too)
    assert torch.equal(neg.dst_table.diff() == 0, deg == 0)
    counts = torch.bincount(out.dst.reshape(-1), minlength=n)
    assert int(counts[deg == 0].sum()) == 0
    p = _chisquare(counts[deg > 0], deg[deg > 0])
    print(f"in-degree-weighted triplet negatives: chi-square p = {p:.3f}")
    assert p > ALPHA
    # a wrong law is caught: uniform over the same nodes fits badly
    assert _chisquare(counts[deg > 0], torch.ones(int((deg > 0).sum()))) < ALPHA


def test_strict_binary_negatives_follow_the_pair_law_and_are_never_edges():
    """Dense graph (about half the pairs are edges): every negative is a non-edge,
    non-self pair, drawn with probability proportional to src_weight[u] * dst_weight[v]."""
    n = 8
    ei = _dense(n, 0.5, 3)
    g = torch.Generator().manual_seed(4)
    ws, wd = torch.rand(n, generator=g) + 0.5, torch.rand(n, generator=g) + 0.5
    ws[2], wd[5] = 0.0, 0.0
    neg = NegativeSampler(ei, n, src_weight=ws, dst_weight=wd, strict=True)
    src = torch.zeros(10_000, dtype=torch.long)
    out = neg(src, None, "binary", 4, key=op_key(1, NEGATIVE_ORDINAL, 5))
    excluded = _excluded(ei)
    drawn = list(zip(out.src.tolist(), out.dst.tolist()))
    assert sum(p in excluded for p in drawn) == 0
    assert not bool(out.relaxed.any())
    allowed = [
        (u, v)
        for u in range(n)
        for v in range(n)
        if (u, v) not in excluded and ws[u] > 0 and wd[v] > 0
    ]
    index = {p: i for i, p in enumerate(allowed)}
    observed = torch.bincount(torch.tensor([index[p] for p in drawn]), minlength=len(allowed))
    expected = torch.tensor([float(ws[u] * wd[v]) for u, v in allowed])
    p = _chisquare(observed, expected)
    print(f"strict binary negatives ({len(allowed)} allowed pairs): chi-square p = {p:.3f}")
    assert p > ALPHA
    assert torch.equal(neg.excluded(out.src, out.dst), torch.zeros(40_000, dtype=torch.bool))


def test_strict_triplet_negatives_follow_each_sources_law():
    n = 10
    ei = _dense(n, 0.5, 5)
    wd = torch.arange(1, n + 1, dtype=torch.float64)  # node v drawn ~ v + 1
    neg = NegativeSampler(ei, n, dst_weight=wd, strict=True)
    src = torch.arange(n).repeat(400)
    out = neg(src, None, "triplet", 3, key=11)
    excluded = _excluded(ei)
    assert torch.equal(out.src, src.view(-1, 1).expand(-1, 3))
    drawn = list(zip(out.src.reshape(-1).tolist(), out.dst.reshape(-1).tolist()))
    assert sum(p in excluded for p in drawn) == 0
    observed = torch.bincount(out.src.reshape(-1) * n + out.dst.reshape(-1), minlength=n * n)
    expected = torch.zeros(n * n, dtype=torch.float64)
    for u in range(n):
        ok = torch.tensor([(u, v) not in excluded for v in range(n)])
        law = wd * ok
        expected[u * n : (u + 1) * n] = law / law.sum() * 1200  # 400 positives x 3
    cells = expected > 0
    assert int(observed[~cells].sum()) == 0
    p = float(stats.chisquare(observed[cells].double().numpy(), expected[cells].numpy()).pvalue)
    print(f"strict triplet negatives, per-source laws: chi-square p = {p:.3f}")
    assert p > ALPHA


def test_non_strict_negatives_hit_edges_at_the_graphs_density():
    n = 10
    ei = _dense(n, 0.4, 6)
    excluded = _excluded(ei)
    out = negative_sample(ei, torch.zeros(5000, dtype=torch.long), None, "binary", 1, num_nodes=n)
    hits = sum(p in excluded for p in zip(out.src.tolist(), out.dst.tolist()))
    assert hits > 0  # PyG's law: a negative may be an edge
    test = stats.binomtest(hits, 5000, len(excluded) / n**2)
    print(
        f"non-strict collisions {hits}/5000 vs density {len(excluded) / n**2:.3f}: "
        f"binomial p = {test.pvalue:.3f}"
    )
    assert test.pvalue > ALPHA


def test_temporal_negatives_exist_at_their_positives_time():
    n = 30
    g = torch.Generator().manual_seed(7)
    node_time = torch.randint(0, 10, (n,), generator=g)
    node_time[4] = -5  # the earliest node: PyG's fallback when none exists yet
    ei = torch.randint(0, n, (2, 200), generator=g)
    time = torch.randint(-6, 12, (600,), generator=g)
    src = torch.randint(0, n, (600,), generator=g)
    for strict in (False, True):
        neg = NegativeSampler(ei, n, strict=strict, node_time=node_time)
        for mode in ("binary", "triplet"):
            out = neg(src, None, mode, 2, time=time, key=2)
            u, v, t = out.flat()
            owner = torch.arange(v.numel()) % 600
            assert torch.equal(t, time[owner])  # each negative carries its positive's time
            none = t < -5  # no node exists yet
            assert torch.equal(out.relaxed.t().reshape(-1) & none, none)
            assert bool((v[none] == 4).all())
            ok = ~out.relaxed.t().reshape(-1)
            assert bool((node_time[v[ok]] <= t[ok]).all())
            if mode == "binary":
                assert bool((node_time[u[ok]] <= t[ok]).all())
            if strict:  # relaxed exactly where no allowed pair exists (brute force)
                excluded = _excluded(ei)
                bad = torch.tensor([(a, b) in excluded for a, b in zip(u.tolist(), v.tolist())])
                assert not bool((bad & ok).any())
                if mode == "triplet":
                    for a, tt, r in zip(u.tolist(), t.tolist(), (~ok).tolist()):
                        free = any(node_time[b] <= tt and (a, b) not in excluded for b in range(n))
                        assert r == (not free)
    # within one time the law is uniform over the nodes existing then
    out = NegativeSampler(ei, n, node_time=node_time)(
        src, None, "triplet", 5, time=torch.full((600,), 4), key=9
    )
    alive = node_time <= 4
    counts = torch.bincount(out.dst.reshape(-1), minlength=n)
    assert int(counts[~alive].sum()) == 0
    p = _chisquare(counts[alive], torch.ones(int(alive.sum())))
    print(f"temporal negatives at t = 4: chi-square p = {p:.3f}")
    assert p > ALPHA


def test_a_source_without_negatives_is_relaxed_and_the_loader_refuses_it():
    n = 5
    ei = torch.tensor([[0, 0, 0, 0, 1], [1, 2, 3, 4, 2]])  # 0 -> every other node
    neg = NegativeSampler(ei, n, strict=True)
    assert neg.stranded(torch.tensor([0, 1])).tolist() == [True, False]
    out = neg(torch.tensor([0, 1]), None, "triplet", 3, key=0)
    assert out.relaxed.tolist() == [[True] * 3, [False] * 3]
    assert all((1, v) not in _excluded(ei) for v in out.dst[1].tolist())
    data = Data(edge_index=ei, num_nodes=n)
    strict = NegativeSampling("triplet", 1, strict=True)
    with pytest.raises(ValueError, match=r"neg_sampling: .*node 0, the source of supervision"):
        gp.LinkNeighborLoader(data, [1], neg_sampling=strict, batch_size=2, compile=False)
    gp.LinkNeighborLoader(  # not strict: PyG's law, negatives may be edges
        data, [1], neg_sampling=dict(mode="triplet", strict=False), batch_size=2
    )
    complete = torch.ones(3, 3).nonzero().t()
    with pytest.raises(ValueError, match="strict: no pair"):
        NegativeSampler(complete, 3, strict=True)


def test_excluded_is_the_edge_set():
    n = 9
    ei = _dense(n, 0.3, 8)
    neg = NegativeSampler(gs.Matrix.from_edge_index(ei, num_nodes=n), strict=True)
    u, v = torch.arange(n).repeat_interleave(n), torch.arange(n).repeat(n)
    want = torch.tensor([p in _excluded(ei) for p in zip(u.tolist(), v.tolist())])
    assert torch.equal(neg.excluded(u, v), want)


# ----------------------------------------------------------------------------- determinism
def test_a_negative_depends_on_its_key_and_position_only():
    ei = _dense(20, 0.2, 9)
    neg = NegativeSampler(ei, 20, src_weight=torch.rand(20) + 0.1, strict=True)
    a = neg(torch.arange(10), None, "binary", 2, key=5)
    b = neg(torch.arange(20), None, "binary", 1, key=5)  # the same 20 draws
    c = neg(torch.arange(20), None, "binary", 1.5, key=5)  # and 10 more
    assert torch.equal(a.src, b.src) and torch.equal(a.dst, b.dst)
    assert torch.equal(c.dst[:20], b.dst)
    d = neg(torch.arange(20), None, "binary", 1, key=6)
    assert not torch.equal(d.dst, b.dst)
    gs.manual_seed(3)
    e = neg(torch.arange(20), None, "binary", 1)
    gs.manual_seed(3)
    f = neg(torch.arange(20), None, "binary", 1)
    assert torch.equal(e.dst, f.dst) and torch.equal(e.src, f.src)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_negatives_are_the_same_on_cuda_and_cpu():
    n = 200
    g = torch.Generator().manual_seed(10)
    ei = torch.randint(0, n, (2, 3000), generator=g)
    kw = {
        "src_weight": torch.rand(n, generator=g),
        "dst_weight": torch.bincount(ei[1], minlength=n).float(),
        "node_time": torch.randint(0, 50, (n,), generator=g),
    }
    src, time = torch.randint(0, n, (512,), generator=g), torch.randint(0, 60, (512,), generator=g)
    for strict in (False, True):
        cpu = NegativeSampler(ei, n, strict=strict, **kw)
        cuda = NegativeSampler(ei.cuda(), n, strict=strict, **kw)
        for mode, amount in (("binary", 2.5), ("triplet", 3)):
            a = cpu(src, None, mode, amount, time=time, key=42)
            b = cuda(src.cuda(), None, mode, amount, time=time.cuda(), key=42)
            assert b.dst.is_cuda
            for x, y in zip((a.src, a.dst, a.relaxed), (b.src, b.dst, b.relaxed)):
                assert torch.equal(x, y.cpu())


# ----------------------------------------------------------------------------- PyG's layout
class _Given(PygNegativeSampling):
    """PyG's NegativeSampling returning given negatives (to run PyG's own edge_sample on
    the negatives gsample drew)."""

    def __init__(self, mode, amount, src, dst):
        super().__init__(mode, amount)
        self.given = {"src": src, "dst": dst}

    def sample(self, num_samples, endpoint, num_nodes=None):
        assert self.given[endpoint].numel() == num_samples
        return self.given[endpoint]


def _record(calls):
    def sample_fn(seed, seed_time):
        calls.append((seed, seed_time))
        return SamplerOutput(
            node=seed, row=seed[:0], col=seed[:0], edge=seed[:0], batch=torch.arange(seed.numel())
        )

    return sample_fn


@pytest.mark.parametrize(
    "mode, amount, disjoint, temporal",
    [
        ("binary", 1, False, False),
        ("binary", 0.5, False, False),
        ("binary", 2, True, False),
        ("binary", 1.5, True, True),
        ("triplet", 1, False, False),
        ("triplet", 3, False, False),
        ("triplet", 2, True, False),
        ("triplet", 2, True, True),
    ],
)
def test_edge_sample_is_pygs_with_gsamples_negatives(mode, amount, disjoint, temporal):
    n, b = 30, 7
    g = torch.Generator().manual_seed(11)
    ei = torch.randint(0, n, (2, 100), generator=g)
    pos = torch.randint(0, n, (2, b), generator=g)
    label = None if mode == "triplet" else torch.arange(b) % 2 + 1
    time = torch.randint(0, 9, (b,), generator=g) if temporal else None
    index = EdgeSamplerInput(torch.arange(b), pos[0], pos[1], label, time)
    neg = NegativeSampler(ei, n, strict=True)
    ours, theirs = [], []
    out = edge_sample(
        index, _record(ours), neg, NegativeSampling(mode, amount), key=4, disjoint=disjoint
    )
    drawn = neg(pos[0], pos[1], mode, amount, time=time, key=4)
    # PyG's non-disjoint triplet layout reads the flat negatives row by row
    flat_dst = drawn.dst.reshape(-1) if mode == "triplet" and not disjoint else drawn.flat()[1]
    given = _Given(mode, amount, drawn.flat()[0], flat_dst)
    ref = pyg_edge_sample(index, _record(theirs), n, disjoint, None, given)
    assert len(out.metadata) == len(ref.metadata)
    for x, y in zip(out.metadata, ref.metadata):
        assert (x is None and y is None) or torch.equal(x, y)
    assert torch.equal(ours[0][0], theirs[0][0])  # the seeds (unique: the same set)
    if temporal:
        assert torch.equal(ours[0][1], theirs[0][1])
    if disjoint:
        assert torch.equal(out.batch, ref.batch)
    if mode == "triplet":
        want = (b,) if amount == 1 else (b, amount)
        assert out.metadata[3].shape == want
        # row i holds positive i's negatives (the ones drawn for its source)
        assert torch.equal(ours[0][0][out.metadata[3]].view(b, -1), drawn.dst)
    else:
        m = math.ceil(b * amount)
        assert out.metadata[1].shape == (2, b + m)
        assert torch.equal(out.metadata[2], torch.cat([label, torch.zeros(m, dtype=label.dtype)]))


# ----------------------------------------------------------------------------- the loader
N, E = 60, 400


@pytest.fixture
def data():
    g = torch.Generator().manual_seed(0)
    edge_index = torch.randint(0, N, (2, E), generator=g)
    return Data(
        x=torch.arange(N, dtype=torch.float).view(-1, 1),
        edge_index=edge_index,
        edge_attr=torch.arange(E, dtype=torch.float),
        num_nodes=N,
    )


def _expected(loader, batch, neg: NegativeSampler, mode, amount, index=None):
    """The negatives gsample draws for ``batch``: op NEGATIVE_ORDINAL of its stream, keyed
    by its index in the epoch (``index``: gsample.pyg.LinkNeighborLoader's) or, in PyG's
    LinkLoader over gsample.pyg.Sampler, by its input_id set."""
    epoch_seed = loader.link_sampler.epoch_seed()
    if index is None:
        index = batch_key(batch.input_id)
    else:  # gsample.pyg.LinkNeighborLoader's stream holds its supervision edges' hash
        epoch_seed = combine(epoch_seed, loader.label_stream)
    key = op_key(epoch_seed, NEGATIVE_ORDINAL, index)
    label_index = loader.input_data.row, loader.input_data.col
    src, dst = (x[batch.input_id] for x in label_index)
    return src, dst, neg(src, dst, mode, amount, key=key)


@pytest.mark.parametrize("amount", [1, 2, 0.5])
def test_binary_batches_hold_gsamples_negatives_in_pygs_fields(data, amount):
    label = torch.arange(E) % 3  # starts at 0: PyG shifts it by one, 0 means negative
    loader = gp.LinkNeighborLoader(
        data,
        [2],
        edge_label=label,
        batch_size=25,
        neg_sampling=dict(mode="binary", amount=amount),
        seed=1,
        compile=False,
    )
    neg = NegativeSampler(data.edge_index, N)
    for i, batch in enumerate(loader):
        b = batch.input_id.numel()
        m = math.ceil(amount * b)
        src, dst, drawn = _expected(loader, batch, neg, "binary", amount, i)
        assert batch.edge_label_index.shape == (2, b + m)
        glob = batch.n_id[batch.edge_label_index]
        assert torch.equal(glob[:, :b], torch.stack([src, dst]))
        assert torch.equal(glob[:, b:], torch.stack([drawn.src, drawn.dst]))
        assert batch.edge_label.dtype == torch.long
        assert torch.equal(batch.edge_label[:b], label[batch.input_id] + 1)
        assert torch.equal(batch.edge_label[b:], torch.zeros(m, dtype=torch.long))
        # the seeds: every endpoint once, sorted (PyG's unique), first in n_id
        seeds = torch.cat([src, drawn.src, dst, drawn.dst]).unique()
        assert batch.num_sampled_nodes[0] == seeds.numel()
        assert torch.equal(batch.n_id[: seeds.numel()], seeds)
    unlabelled = gp.LinkNeighborLoader(data, [2], batch_size=50, neg_sampling="binary", seed=1)
    batch = next(iter(unlabelled))
    assert batch.edge_label.dtype == torch.float
    assert torch.equal(batch.edge_label, torch.cat([torch.ones(50), torch.zeros(50)]))


@pytest.mark.parametrize("amount", [1, 2])
def test_triplet_batches_hold_gsamples_negatives_in_pygs_fields(data, amount):
    deg = torch.bincount(data.edge_index[1], minlength=N).float()
    ns = NegativeSampling("triplet", amount, dst_weight=deg, strict=True)
    loader = gp.LinkNeighborLoader(data, [2], batch_size=30, neg_sampling=ns, seed=2)
    neg = NegativeSampler(data.edge_index, N, dst_weight=deg, strict=True)
    excluded = _excluded(data.edge_index)
    for i, batch in enumerate(loader):
        b = batch.input_id.numel()
        src, dst, drawn = _expected(loader, batch, neg, "triplet", amount, i)
        assert batch.src_index.shape == batch.dst_pos_index.shape == (b,)
        assert batch.dst_neg_index.shape == ((b,) if amount == 1 else (b, amount))
        assert torch.equal(batch.n_id[batch.src_index], src)
        assert torch.equal(batch.n_id[batch.dst_pos_index], dst)
        negs = batch.n_id[batch.dst_neg_index].view(b, amount)
        assert torch.equal(negs, drawn.dst)
        assert all(
            (u, v) not in excluded for u, row in zip(src.tolist(), negs.tolist()) for v in row
        )
        assert "edge_label" not in batch and "edge_label_index" not in batch
    with pytest.raises(ValueError, match="amount"):
        gp.LinkNeighborLoader(data, [2], neg_sampling=dict(mode="triplet", amount=0.5))


def test_loader_batches_are_the_same_whatever_the_workers(data):
    kw = dict(batch_size=48, neg_sampling=NegativeSampling("binary", 1.5, strict=True), seed=4)

    def run(**more):
        loader = gp.LinkNeighborLoader(data, [3], compile=False, **kw, **more)
        return [(b.n_id, b.edge_label_index, b.e_id) for b in loader]

    a, b = run(), run(num_workers=2)
    assert len(a) == len(b) == math.ceil(E / 48)
    assert all(torch.equal(x, y) for p, q in zip(a, b) for x, y in zip(p, q))
    kw["seed"] = 5
    c = run()
    assert any(not torch.equal(p[1], q[1]) or not torch.equal(p[0], q[0]) for p, q in zip(a, c))


def test_pygs_link_loader_over_sampler_draws_gsamples_negatives(data):
    """PyG's own LinkLoader over gsample.pyg.Sampler: the negatives are gsample's too."""
    from torch_geometric.loader import LinkLoader

    sampler = gp.Sampler(data, gs.compile(gp.neighbor_sample), seed=3)
    loader = LinkLoader(data, sampler, batch_size=40, neg_sampling=PygNegativeSampling("binary"))
    neg = NegativeSampler(data.edge_index, N)
    for batch in loader:
        b = batch.input_id.numel()
        _, _, drawn = _expected(loader, batch, neg, "binary", 1)
        glob = batch.n_id[batch.edge_label_index[:, b:]]
        assert torch.equal(glob, torch.stack([drawn.src, drawn.dst]))


# ----------------------------------------------------------------------------- bad arguments
@pytest.mark.parametrize(
    "kw, exc, match",
    [
        ({"amount": 0}, ValueError, "amount: must be finite and > 0"),
        ({"amount": -1.5}, ValueError, "amount"),
        ({"amount": float("nan")}, ValueError, "amount"),
        ({"amount": True}, TypeError, "amount"),
        ({"amount": "2"}, TypeError, "amount"),
        ({"mode": "triplet", "amount": 1.5}, ValueError, "amount: must be an integer"),
        ({"mode": "ternary"}, ValueError, "mode: expected 'binary' or 'triplet'"),
        ({"dst_weight": torch.ones(N - 1)}, ValueError, r"dst_weight: .*shape \(60,\)"),
        ({"dst_weight": -torch.ones(N)}, ValueError, "dst_weight: .*non-negative"),
        ({"src_weight": torch.zeros(N)}, ValueError, "src_weight: .*positive"),
        ({"dst_weight": torch.full((N,), float("inf"))}, ValueError, "dst_weight: .*finite"),
        ({"dst_weight": "degree"}, TypeError, "dst_weight"),
        ({"node_time": torch.zeros(N)}, ValueError, "time: required with node_time"),
        ({"time": torch.zeros(3)}, ValueError, "time: expected one time per positive"),
        ({"strict": 1}, TypeError, "strict"),
    ],
)
def test_bad_arguments_are_named(data, kw, exc, match):
    kw = {"mode": "binary", "amount": 1, **kw}
    with pytest.raises(exc, match=match):
        negative_sample(data.edge_index, torch.arange(5), num_nodes=N, **kw)


def test_bad_negative_sampling_in_the_loader_is_named(data):
    for ns, match in (
        (PygNegativeSampling("binary", dst_weight=torch.ones(N + 1)), "neg_sampling.dst_weight"),
        (NegativeSampling("triplet", src_weight=-torch.ones(N)), "neg_sampling.src_weight"),
        ({"mode": "binary", "amount": 0}, "neg_sampling: amount"),
        ("ternary", "neg_sampling: mode"),
    ):
        with pytest.raises(ValueError, match=match):
            gp.LinkNeighborLoader(data, [2], neg_sampling=ns, batch_size=8)
    with pytest.raises(TypeError, match="strict"):
        NegativeSampling("binary", strict="yes")
    assert "strict=True" in repr(NegativeSampling("binary", 2, strict=True))
