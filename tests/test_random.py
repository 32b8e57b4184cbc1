"""The counter-based hash and the determinism contract (docs/architecture.md §3)."""

import torch

import gsample as gs
from gsample.base import random as R

# splitmix64 reference outputs for state 1234567 (the generator adds GOLDEN, then mixes):
# combine(h, i) = mix64(h + (i + 1) * GOLDEN) is exactly that generator's i-th output.
SPLITMIX_1234567 = [
    6457827717110365317,
    3203168211198807973,
    9817491932198370423,
    4593380528125082431,
    16408922859458223821,
]


def test_combine_is_splitmix64():
    assert [R.combine(1234567, i) for i in range(5)] == SPLITMIX_1234567


def test_tensor_hash_bit_equal_to_python(device):
    g = torch.Generator().manual_seed(0)
    x = torch.randint(-(2**63), 2**63 - 1, (20000,), dtype=torch.int64, generator=g)
    got = R.mix64_tensor(x.to(device)).cpu().tolist()
    assert got == [R.signed(R.mix64(v & R.MASK64)) for v in x.tolist()]
    base = R.op_key(2**64 - 1, 3, 7)
    cols = torch.randint(0, 2**40, (5000,), generator=g)
    draws = torch.randint(0, 2**62, (5000,), generator=g)
    got = R.hash_tensor(base, cols.to(device), draws.to(device)).cpu().tolist()
    ref = [
        R.signed(R.combine(R.combine(base, c), d)) for c, d in zip(cols.tolist(), draws.tolist())
    ]
    assert got == ref


def test_combined_rows_are_each_combine(device):
    g = torch.Generator().manual_seed(1)
    x = torch.randint(-(2**62), 2**62, (3000,), dtype=torch.int64, generator=g).to(device)
    hs = [R.op_key(3, 1, 2), 2**64 - 1, 0]
    got = R.combine_tensors(hs, x)
    assert got.shape == (3, 3000)
    for row, h in zip(got, hs):
        assert torch.equal(row, R.combine_tensor(h, x))
    assert got[0, :5].cpu().tolist() == [R.signed(R.combine(hs[0], v)) for v in x[:5].tolist()]


def test_derived_variates(device):
    r = R.hash_tensor(
        R.op_key(1, 2, 3),
        torch.zeros(100000, dtype=torch.int64, device=device),
        torch.arange(100000, device=device),
    )
    u = R.uniform_float(r)
    assert u.dtype == torch.float64 and bool((u >= 0).all()) and bool((u < 1).all())
    assert abs(float(u.mean()) - 0.5) < 0.01
    e = R.exponential(r)
    assert bool(torch.isfinite(e).all()) and bool((e > 0).all()) and abs(float(e.mean()) - 1) < 0.02
    n = torch.tensor([1, 2, 7, 10**12], device=device).repeat(25000)
    i = R.uniform_int(r, n)
    assert bool((i >= 0).all()) and bool((i < n).all())
    assert bool((R.sort_key(r) >= 0).all())


def _sample(A, seeds):
    s = A[:, seeds].individual_sample(3)
    c = A[:, seeds].collective_sample(20)
    return torch.cat([s.edges()[2], c.edges()[2]])


def test_same_seed_same_samples(small_graph):
    seeds = torch.arange(0, 400, 3)
    gs.manual_seed(42)
    a = _sample(small_graph, seeds)
    b = _sample(small_graph, seeds)
    gs.manual_seed(42)
    assert torch.equal(a, _sample(small_graph, seeds))
    assert torch.equal(b, _sample(small_graph, seeds))
    assert not torch.equal(a, b), "consecutive calls must take new op ordinals"
    gs.manual_seed(43)
    assert not torch.equal(a, _sample(small_graph, seeds))


def test_random_ops_take_one_ordinal_pure_ops_none(small_graph):
    gs.manual_seed(0)
    stream = R.stream_state()
    sub = small_graph[:, torch.arange(10)]
    (sub**2).sum(axis=1)
    sub.all_nodes()
    assert stream.ordinal == 0
    sub.individual_sample(2)
    sub.collective_sample(2)
    assert stream.ordinal == 2


def test_batch_scope_restores_the_outer_stream(small_graph):
    seeds = torch.arange(50)
    gs.manual_seed(5)
    first = _sample(small_graph, seeds)
    gs.manual_seed(5)
    with R.batch_scope(seed=99, batch_index=4):
        inner = _sample(small_graph, seeds)
    assert torch.equal(first, _sample(small_graph, seeds))
    with R.batch_scope(seed=99, batch_index=4):
        assert torch.equal(inner, _sample(small_graph, seeds))
    with R.batch_scope(seed=99, batch_index=5):
        assert not torch.equal(inner, _sample(small_graph, seeds))


def test_column_position_not_node_id_keys_draws(small_graph):
    hub = int(torch.argmax(small_graph.sum(axis=0)))
    gs.manual_seed(0)
    s = small_graph[:, torch.full((2,), hub)].individual_sample(5)
    _, _cols, eids = s.edges()
    assert not torch.equal(eids[:5], eids[5:]), "two walkers on one node must draw independently"


def _all_kinds(A, seeds):
    sub = A[:, seeds]
    p = (sub**2).sum(axis=1)
    return [
        sub.individual_sample(4),
        sub.individual_sample(4, replace=True),
        sub.collective_sample(30),
        sub.collective_sample(30, replace=True),
    ], [
        sub.individual_sample(4, probs=sub.values),
        sub.individual_sample(4, probs=sub.values, replace=True),
        sub.collective_sample(30, node_probs=p),
        sub.collective_sample(30, node_probs=p, replace=True),
    ]


def test_cpu_and_device_give_the_same_samples(small_graph, device):
    """Uniform ops: identical on CPU and CUDA tensors; weighted ones: >= 99.9% of draws."""
    seeds = torch.arange(0, 2000, 2)
    gs.manual_seed(7)
    cpu_u, cpu_w = _all_kinds(small_graph, seeds)
    gs.manual_seed(7)
    dev_u, dev_w = _all_kinds(small_graph.to(device), seeds.to(device))
    for a, b in zip(cpu_u, dev_u):
        for x, y in zip(a.edges(), b.edges()):
            assert torch.equal(x, y.cpu())
    for a, b in zip(cpu_w, dev_w):
        ea, eb = a.edges()[2], b.edges()[2].cpu()
        same = (ea == eb).float().mean() if ea.shape == eb.shape else torch.tensor(0.0)
        assert float(same) >= 0.999
