"""``A.random_uniform`` and ``A.random_count`` (``gsample.backend.torch.draws`` and the CUDA
backend's sync-free registration, ``gsample.backend.cuda.draws``).

* the determinism contract (docs/architecture.md §3): the same seed gives the same values, eager
  equals compiled, ``gs.DataLoader`` super-batched equals one mini-batch at a time, each entry is
  keyed by its position (repeats draw independently), the device-key path of the CUDA
  backend (run here on CPU tensors) gives the host-key values bit for bit, a bounded
  frontier included;
* the laws at fixed seeds, each shown to have power: the uniforms (Kolmogorov-Smirnov, and a
  chi-square of consecutive pairs for independence), geometric and binomial counts
  (chi-square against the pmf; a shifted ``p`` is rejected), and the inversion's thresholds
  exactly;
* bad arguments: clear exceptions naming the argument, eager and compiled;
* on a GPU (marked ``cuda``): ``backend="cuda"`` equals the torch backend, directly and
  through ``gs.DataLoader`` (one by one and super-batched by 4), call after call (the
  default runtime replays CUDA graphs from the third call).
"""

import numpy as np
import pytest
import scipy.stats as st
import torch
from helpers import (
    assert_same,
    check_compiled_equals_eager,
    check_super_batched,
    loader_outputs,
    run_seeded,
)

import gsample as gs
from gsample.backend.cuda import draws as cuda_draws
from gsample.backend.torch import draws
from gsample.base.random import (
    BatchKeys,
    DeviceKey,
    count_from_words,
    count_table,
    key_prefix,
    op_key,
    signed,
)
from gsample.formats.bounded import BoundedIds

P_MIN = 1e-3


@pytest.fixture(scope="module")
def A():
    return gs.datasets.rmat(2000, 30000, seed=1)


def layer(A, seeds, p=0.7):
    """Both ops on a frontier the program made (a slice's rows) and on the seeds."""
    sub = A[:, seeds].individual_sample(5)
    rows = sub.row()
    return (
        A.random_uniform(rows),
        rows,
        A.random_count(seeds, "geometric", p=p),
        A.random_count(sub.all_nodes(), "binomial", p=0.3, n=7),
    )


# ============================================================================= determinism
def test_same_seed_same_values_and_positions_key_the_draws(A):
    nodes = torch.tensor([5, 5, 5, 9, 1999, 0])
    u1 = run_seeded(A.random_uniform, nodes, seed=3)
    u2 = run_seeded(A.random_uniform, nodes, seed=3)
    assert torch.equal(u1, u2)
    assert u1.dtype == torch.float64 and u1.shape == (6,)
    assert u1.unique().numel() == 6  # repeats are independent entries
    assert not torch.equal(u1, run_seeded(A.random_uniform, nodes, seed=4))
    # the ids do not key the draws (docs/architecture.md §3: the column position does)
    assert torch.equal(u1, run_seeded(A.random_uniform, torch.arange(6), seed=3))
    # exactly the contract's word: (word >> 11) * 2**-53 of (seed, ordinal 0, batch 0, i, 0)
    assert torch.equal(u1 * 2.0**53, torch.floor(u1 * 2.0**53))
    gs.manual_seed(3)
    a, b = A.random_uniform(nodes), A.random_uniform(nodes)  # ordinals 0 and 1
    assert torch.equal(a, u1) and not torch.equal(a, b)


def test_compiled_equals_eager(A):
    seeds = torch.randperm(2000, generator=torch.Generator().manual_seed(0))[:64]
    check_compiled_equals_eager(layer, A, seeds, calls=3, distinct=True)


@pytest.mark.parametrize("n", [1, 4])
def test_super_batched_loader_equals_one_batch_at_a_time(A, n):
    seeds = torch.randperm(2000, generator=torch.Generator().manual_seed(1))[:180]
    check_super_batched(A, layer, seeds, 32, n)  # 6 mini-batches


def test_device_keys_give_the_host_keys_values():
    """The CUDA backend's sync-free path (a DeviceKey, finished with torch ops: here on CPU
    tensors) gives the values of the torch backend's int / BatchKeys paths, bit for bit."""
    seed, ordinal, first, n = 11, 4, 3, 50
    prefix = key_prefix(seed, ordinal)
    nodes = torch.tensor([3, 3, 7, 49, 0])
    dk = DeviceKey.of(torch.tensor([signed(prefix), first]), prefix, first)
    want = draws.random_uniform(None, nodes, op_key(seed, ordinal, first))
    assert torch.equal(cuda_draws.random_uniform(None, nodes, dk), want)
    # a super-batch of 3 mini-batches (the middle one empty), encoded ids b * n + v
    enc = torch.tensor([3, 9, 2 * n + 1, 2 * n + 1, 2 * n + 40])
    bk = BatchKeys.of(seed, ordinal, first, 3, n)
    dk = DeviceKey.of(torch.tensor([signed(prefix), first]), prefix, first, 3, n)
    want = draws.random_count(None, enc, bk, "binomial", 0.4, 9)
    assert torch.equal(cuda_draws.random_count(None, enc, dk, "binomial", 0.4, 9), want)
    one = [
        draws.random_count(None, enc[:2], op_key(seed, ordinal, first), "binomial", 0.4, 9),
        draws.random_count(
            None, enc[2:] - 2 * n, op_key(seed, ordinal, first + 2), "binomial", 0.4, 9
        ),
    ]
    assert torch.equal(want, torch.cat(one))  # each batch's own draws
    # a bounded frontier: the valid prefix's values, the same count
    padded = BoundedIds(torch.cat([enc, torch.tensor([7, -3, 10**6])]), torch.tensor([5]))
    out = cuda_draws.random_count(None, padded, dk, "binomial", 0.4, 9)
    assert isinstance(out, BoundedIds) and out.count is padded.count
    assert torch.equal(out.data[:5], want)


# ============================================================================= laws
def test_uniform_law(A):
    nodes = torch.randint(0, 2000, (200_000,), generator=torch.Generator().manual_seed(2))
    u = run_seeded(A.random_uniform, nodes, seed=5).numpy()
    assert u.min() >= 0.0 and u.max() < 1.0
    p = st.kstest(u, "uniform").pvalue
    wrong = st.kstest(u, st.beta(1.02, 1).cdf).pvalue
    # independence of neighbouring entries: consecutive pairs on a 10 x 10 grid
    cells = (np.floor(u[0::2] * 10) * 10 + np.floor(u[1::2] * 10)).astype(int)
    pairs = st.chisquare(np.bincount(cells, minlength=100)).pvalue
    print(f"random_uniform: KS p = {p:.4f}, Beta(1.02, 1) p = {wrong:.2e}, pairs p = {pairs:.4f}")
    assert p > P_MIN and pairs > P_MIN
    assert wrong < P_MIN  # power


def _chi2(counts, pmf):
    """Pearson chi-square p-value, bins with expectation < 5 pooled into the tail."""
    counts, pmf = np.asarray(counts, float), np.asarray(pmf, float)
    exp = counts.sum() * pmf
    keep = exp >= 5
    c = np.append(counts[keep], counts[~keep].sum())
    e = np.append(exp[keep], exp[~keep].sum())
    if e[-1] == 0:
        c, e = c[:-1], e[:-1]
    return st.chisquare(c, e * c.sum() / e.sum()).pvalue


@pytest.mark.parametrize(
    "dist,p,n,wrong_p",
    [
        ("geometric", 0.7, None, 0.69),
        ("geometric", 0.2, None, 0.21),
        ("binomial", 0.3, 12, 0.31),
        ("binomial", 0.95, 40, 0.94),
    ],
)
def test_count_law(A, dist, p, n, wrong_p):
    nodes = torch.randint(0, 2000, (200_000,), generator=torch.Generator().manual_seed(6))
    x = run_seeded(A.random_count, nodes, dist, p, n, seed=7).numpy()
    assert x.dtype == np.int64 and x.min() >= 0
    top = int(x.max()) + 1
    if dist == "binomial":
        assert top <= n + 1

        def law(q):
            return st.binom.pmf(np.arange(n + 1), n, q)

        counts = np.bincount(x, minlength=n + 1)
    else:

        def law(q):  # 0 .. top, then > top
            return np.append(st.geom.pmf(np.arange(1, top + 2), 1 - q), q ** (top + 1))

        counts = np.append(np.bincount(x, minlength=top + 1), 0)
    right, wrong = _chi2(counts, law(p)), _chi2(counts, law(wrong_p))
    print(f"random_count {dist}(p={p}, n={n}): p = {right:.4f}, p={wrong_p} law p = {wrong:.2e}")
    assert right > P_MIN
    assert wrong < P_MIN  # power


def test_count_thresholds_invert_the_survival_function():
    """``X = #{j : U < T_j}`` with ``T_j = floor(P(X >= j) 2**53)``: checked at the
    thresholds themselves, and the tables against scipy's survival functions."""
    for dist, p, n in [("geometric", 0.7, None), ("binomial", 0.3, 12), ("binomial", 1.0, 3)]:
        T = count_table(dist, p, n)
        sf = (
            st.binom.sf(np.arange(len(T)), n, p)
            if dist == "binomial"
            else p ** np.arange(1, len(T) + 1)
        )
        np.testing.assert_allclose(np.array(T, float) / 2.0**53, sf, rtol=1e-9, atol=2e-16)
        asc = torch.tensor(T[::-1], dtype=torch.int64)
        for j, t in enumerate(T[:8], start=1):
            words = torch.tensor([t - 1, min(t, 2**53 - 1)], dtype=torch.int64) << 11
            x = count_from_words(words, asc).tolist()  # U = t - 1, then t
            assert x[0] >= j  # U < T_1 .. T_j
            assert x[1] == sum(u > t for u in T) or t == 2**53  # only the T_i above t
    assert count_table("geometric", 0.0) == () and count_table("binomial", 0.5, 0) == ()
    assert count_table("binomial", 1.0, 3) == (2**53,) * 3


# ============================================================================= bad arguments
@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda A: A.random_uniform(torch.tensor([0, 2000])), IndexError, "nodes: node id 2000"),
        (lambda A: A.random_uniform(torch.tensor([-1])), IndexError, "nodes: node id -1"),
        (lambda A: A.random_uniform(torch.tensor([0.5])), TypeError, "nodes: node ids must be"),
        (lambda A: A.random_uniform(torch.zeros(2, 2, dtype=torch.long)), ValueError, "nodes:"),
        (lambda A: A[:, [1, 2]].random_uniform(torch.tensor([1])), ValueError, "A: "),
        (lambda A: A.random_count([1], "poisson"), ValueError, "dist: must be one of"),
        (lambda A: A.random_count([1], p=1.5), ValueError, "p: must be a probability"),
        (lambda A: A.random_count([1], p="x"), TypeError, "p: must be a number"),
        (lambda A: A.random_count([1], p=1.0), ValueError, "p: a geometric count needs p < 1"),
        (lambda A: A.random_count([1], p=0.99999), ValueError, "p: a geometric count needs p <="),
        (lambda A: A.random_count([1], "binomial", 0.5), ValueError, "n: dist='binomial' needs"),
        (lambda A: A.random_count([1], "geometric", 0.5, 3), ValueError, "n: the number of"),
        (lambda A: A.random_count([1], "binomial", 0.5, -1), ValueError, "n: must be >= 0"),
        (lambda A: A.random_count([1], "binomial", 0.5, 2.0), TypeError, "n: must be an int"),
        (lambda A: A.random_count([1], "binomial", 0.5, 1 << 21), ValueError, "n: at most"),
    ],
)
def test_bad_arguments(A, call, exc, match):
    with pytest.raises(exc, match=match):
        call(A)


def test_bad_arguments_compiled(A):
    sampler = gs.compile(lambda A, seeds: A.random_uniform(seeds))
    with pytest.raises(IndexError, match="nodes: node id 2000"):
        sampler(A, torch.tensor([1, 2000]))

    def counts(A, seeds, dist="geometric", p=0.5):
        return A.random_count(seeds, dist, p)

    for kwargs, match in [
        ({"p": 1.0}, "p: a geometric"),
        ({"dist": "binomial"}, "n: dist="),
        ({"dist": "x"}, "dist: must be one of"),
    ]:
        with pytest.raises(ValueError, match=match):
            gs.compile(counts)(A, torch.tensor([1, 2]), **kwargs)
    state = gs.compile(lambda A, seeds, p: A.random_count(seeds, p=p))
    with pytest.raises(Exception, match="p: must be a static Python float"):
        state(A, torch.tensor([1]), torch.tensor(0.5))


# ============================================================================= GPU
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_cuda_backend_equals_torch_backend(A):
    """``backend="cuda"`` (sync-free, CUDA graphs from the third call) samples the torch
    backend's values bit for bit, directly and through ``gs.DataLoader`` (one by one and
    super-batched by 4), and eager CUDA calls equal CPU calls."""
    pytest.importorskip("cupy")
    G = A.to("cuda")
    seeds = torch.randperm(2000, generator=torch.Generator().manual_seed(3))[:256].cuda()
    torch_fn = gs.compile(layer, backend="torch")
    cuda_fn = gs.compile(layer, backend="cuda")
    for call in range(4):
        ref = run_seeded(torch_fn, G, seeds[:64], seed=21 + call)
        assert_same(run_seeded(cuda_fn, G, seeds[:64], seed=21 + call), ref, f"call {call}")
        cpu = run_seeded(layer, A, seeds[:64].cpu(), seed=21 + call)
        assert_same(tuple(t.cpu() for t in ref), cpu, f"CPU, call {call}")
    ref = loader_outputs(G, torch_fn, seeds, 64)
    for options in ({}, {"super_batch": 4}):
        got = loader_outputs(G, cuda_fn, seeds, 64, **options)
        assert len(got) == len(ref) == 4
        for i, (g, r) in enumerate(zip(got, ref)):
            assert_same(g, r, f"loader {options}, batch {i}")
    with gs.use_backend("cuda"):  # eager
        got = run_seeded(layer, G, seeds[:64], seed=5)
    assert_same(tuple(t.cpu() for t in got), run_seeded(layer, A, seeds[:64].cpu(), seed=5))
