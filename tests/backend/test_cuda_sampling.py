"""The column statistic of weighted draws in ``gsample.backend.cuda.sampling`` (``column_max``:
a segment reduction) against ``select.Draws``' atomic scatter, bit for bit.

On the CPU the segment reduction runs as its torch replay (``reference_segment_reduce``,
the kernel's tree step for step), so the hooks, the super-batch's ``BatchDraws`` and the
draws they feed are checked here (the torch code's inverse CDF with the hooks: the CUDA
backend's own draws, ``weighted_with``, are ``test_cuda_cdf.py``'s); on a GPU (marked
``cuda``) the kernels, the absence of host synchronisations, and compiled PASS on
``backend="cuda"``: the torch backend's samples up to the weighted contract (docs/architecture.md
§3: 99.9% of draws).
"""

import warnings

import pytest
import torch
from helpers import example, random_seeds

import gsample as gs
from gsample.backend.cuda import compute, sampling
from gsample.backend.torch import select
from gsample.backend.torch.alias import alias_columns
from gsample.base.random import BatchKeys, op_key
from gsample.formats.csc import segment_ptr

HOOKS = ("column_max",)


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _columns(seed, C=2000, hub=100_000, first_empty=True, device="cpu"):
    """``(indptr, col, w)`` of random columns: empty ones (the first and last among them),
    all-zero ones (one of -0.0 weights), 30% zero weights, a hub, tiny positive weights."""
    g = _gen(seed)
    deg = torch.randint(0, 60, (C,), generator=g)
    deg[::9] = 0
    deg[0] = 0 if first_empty else 5
    deg[-1] = 0
    deg[C // 2] = hub
    indptr = segment_ptr(deg)
    E = int(indptr[-1])
    w = torch.rand(E, generator=g, dtype=torch.float64) ** 4
    w[torch.rand(E, generator=g) < 0.3] = 0
    w[torch.rand(E, generator=g) < 0.01] = 5e-324  # the least positive double
    for c in (1, 2, 10, C // 3, C - 2):  # all-zero columns
        w[indptr[c] : indptr[c + 1]] = 0
    w[indptr[4] : indptr[5]] = -0.0
    col = torch.repeat_interleave(torch.arange(C), deg, output_size=E)
    return indptr.to(device), col.to(device), w.to(device)


def _bits_equal(a, b):
    """Equal dtype, shape and bits (-0.0 is not 0.0)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype == torch.float64:
        a, b = a.view(torch.int64), b.view(torch.int64)
    return torch.equal(a, b)


@pytest.fixture
def tree_on_cpu(monkeypatch):
    """The segment reduction as its torch replay, so the hooks run on CPU tensors."""
    monkeypatch.setattr(sampling, "segment_reduce", compute.reference_segment_reduce)


# ----------------------------------------------------------------------------- CPU
@pytest.mark.parametrize("seed", [0, 1])
def test_column_max_tree_equals_the_scatter(tree_on_cpu, seed):
    indptr, col, w = _columns(seed)
    got = sampling.column_max(indptr, col, w)
    assert _bits_equal(got, select.Draws.column_max(indptr, col, w))
    assert got[4].item() == 0 and not got[4].signbit()  # -0.0 weights: 0.0
    empty = torch.zeros(3, dtype=torch.float64)
    assert _bits_equal(
        sampling.column_max(
            segment_ptr(torch.zeros(3, dtype=torch.long)), torch.zeros(0, dtype=torch.long), w[:0]
        ),
        empty,
    )


def test_super_batches_take_the_batch_draws():
    assert sampling._draws(op_key(1, 2, 3)) is sampling.CudaDraws
    keys = BatchKeys.of(seed=3, ordinal=2, first_batch=5, copies=3, num_nodes=10)
    draws = sampling._draws(keys)
    assert draws is sampling.BatchDraws and issubclass(draws, select.Draws)
    for name in HOOKS + ("weighted_with",):
        assert getattr(draws, name) is getattr(sampling.CudaDraws, name)
        assert getattr(draws, name) is not getattr(select.Draws, name, None)


class _TorchCdf(sampling.BatchDraws):
    """``BatchDraws`` without the kernels' inverse CDF: the torch code's, with the hooks."""

    weighted_with = None


def _weighted(seed, copies=3, n=1500):
    """A super-batch's degrees, weights and per-column keys (columns grouped by batch)."""
    g = _gen(seed)
    cols = torch.cat([b * n + torch.randperm(n, generator=g)[:400] for b in range(copies)])
    deg = torch.randint(0, 40, (cols.numel(),), generator=g)
    deg[::7] = 0
    deg[5] = 30_000
    probs = torch.rand(int(deg.sum()), generator=g) ** 3
    probs[torch.rand(probs.numel(), generator=g) < 0.2] = 0
    start = segment_ptr(deg)
    probs[start[3] : start[4]] = 0  # an all-zero column: it draws nothing
    keys = BatchKeys.of(seed=7, ordinal=1, first_batch=2, copies=copies, num_nodes=n)
    return deg, probs, keys.columns(cols)


@pytest.mark.parametrize("method", ["cdf", "alias"])
@pytest.mark.parametrize("k", [1, 10])
def test_batch_draws_draw_what_the_torch_draws_draw(tree_on_cpu, method, k):
    """Weighted draws with replacement, super-batched (per-batch keys) and with one key."""
    deg, probs, ck = _weighted(k)
    for key in (ck, op_key(4, 0, 1)):
        ref = select.select_in_columns(deg, k, True, key, probs, method=method)
        got = select.select_in_columns(deg, k, True, key, probs, _TorchCdf, method)
        for a, b in zip(ref, got):
            assert _bits_equal(a, b)


def test_alias_tables_with_the_tree_max(tree_on_cpu):
    indptr, _, w = _columns(3)
    deg = indptr[1:] - indptr[:-1]
    w[indptr[:-1][deg > 0]] = 0.5  # a positive weight in every column
    for a, b in zip(alias_columns(deg, w), alias_columns(deg, w, sampling.column_max)):
        assert torch.equal(a, b)


# ----------------------------------------------------------------------------- GPU
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("hub", [0, 1_000_000])
@pytest.mark.parametrize("draws", ["CudaDraws", "BatchDraws"])
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_hooks_on_the_gpu_equal_the_scatters(seed, hub, draws):
    """The GPU's scatters give the same values; the CPU's (order-free) the same bits: the sign
    of a zero maximum (a column of -0.0 weights) depends on the order of the atomics."""
    draws = getattr(sampling, draws)
    indptr, col, w = _columns(seed, hub=hub, device="cuda")
    for name in HOOKS:
        got = getattr(draws, name)(indptr, col, w)
        assert torch.equal(got, getattr(select.Draws, name)(indptr, col, w)), name
        cpu = getattr(select.Draws, name)(indptr.cpu(), col.cpu(), w.cpu())
        assert _bits_equal(got.cpu(), cpu), name
    torch.cuda.synchronize()  # warm (the kernels compiled): no read-back
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for name in HOOKS:
                getattr(draws, name)(indptr, col, w)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert not [str(x.message) for x in caught if "synchroniz" in str(x.message)]


def _sampled_edges(blocks):
    found = set()
    for i, b in enumerate(blocks):
        rows, cols, eids = b.edges()
        found |= {(i, *e) for e in zip(rows.tolist(), cols.tolist(), eids.tolist())}
    return found


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_compiled_pass_on_cuda_agrees_with_the_torch_backend(monkeypatch):
    """Compiled PASS (weighted draws with replacement) on ``backend="cuda"``: the kernels'
    inverse CDF (``weighted_with``, per-column running sums), the torch backend's samples up
    to the weighted contract."""
    pas = example("pass_sampler")
    A = gs.datasets.rmat(3000, 60000, seed=4, weighted=True).to("cuda")
    inputs = {k: v.cuda() for k, v in pas.random_inputs(A.num_nodes, 8, 16).items()}
    seeds = random_seeds(256, 3, A.num_nodes).cuda()

    def run(backend):
        sampler = gs.compile(pas.pass_sampler, backend=backend)
        gs.manual_seed(21)
        return [sampler(A, seeds, **inputs) for _ in range(2)]

    calls = []
    hook = sampling.weighted_with
    monkeypatch.setattr(
        sampling.CudaDraws,
        "weighted_with",
        staticmethod(lambda *args: calls.append(args[1]) or hook(*args)),
    )
    got, torch_backend = run("cuda"), run("torch")
    assert calls == [10, 10] * 2  # PASS's draws took the kernels, every layer
    for g, t in zip(got, torch_backend):
        a, b = _sampled_edges(g), _sampled_edges(t)
        assert len(a & b) / max(len(a | b), 1) >= 0.999
