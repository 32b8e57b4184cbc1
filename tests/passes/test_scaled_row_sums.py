"""The ``scaled_row_sums`` pass: LADIES's ``p = row sums / total`` as one ``SLICE_REDUCE``
whose finish divides (no dense division over the graph's rows): the rewrite where the CUDA
backend keeps the dense path (every layer), not for look-alikes whose division the finish
cannot make (a host number, a vector, ``c / p``, a rounding mode, the sums read elsewhere);
the torch backend's scaled op the unfused program's bits, one mini-batch and super-batched,
and LADIES's samples unchanged."""

from __future__ import annotations

import operator

import pytest
import torch
from helpers import (
    assert_same,
    check_compiled_equals_eager,
    example,
    loader_outputs,
    ops,
    random_seeds,
)

import gsample as gs
from gsample.backend.torch import fused_reduce
from gsample.ir import Op
from gsample.passes import PIPELINE
from gsample.passes.listed_rows import listed_rows
from gsample.passes.scaled_row_sums import scaled_row_sums

N = 3000
#: the torch backend without listed_rows: the dense path the CUDA backend keeps, scaled
SCALED = [(f, why) for f, why in PIPELINE if f is not listed_rows]
#: ... and unscaled: the dense division of the traced program
UNSCALED = [(f, why) for f, why in SCALED if f is not scaled_row_sums]


@pytest.fixture(scope="module")
def G():
    return example("ladies").normalize(gs.datasets.rmat(N, 40_000, seed=0, weighted=True))


def ladies(A, seeds, layers=(150, 150, 150)):
    return example("ladies").ladies(A, seeds, layers=layers)


def _scaled(g) -> list:
    return [n for n in g.nodes if n.op is Op.SLICE_REDUCE and n.inputs.get("scale") is not None]


def _divisions(g) -> list:
    return [n for n in g.nodes if n.op is Op.DENSE and n.attrs["fn"] is operator.truediv]


def test_ladies_on_the_cuda_backend_divides_in_the_row_sums(G):
    """The CUDA backend's program (no listed op): every layer's ``p / total`` folded."""
    seeds = random_seeds(64, num_nodes=N)
    g = gs.compile(ladies, backend="cuda").program(G, seeds)
    scaled = _scaled(g)
    assert len(scaled) == 3 and not _divisions(g)
    for n in scaled:  # the clamp of the slice's total, computed before the row sums
        c = n.input("scale")
        assert c.op is Op.DENSE and c.input("0").op is Op.SLICE_TOTAL
        assert g.nodes.index(c) < g.nodes.index(n)
        assert c.input("0").input("cols") is n.input("cols")


def test_the_pass_runs_where_the_torch_backend_lists_nothing(G):
    seeds = random_seeds(64, num_nodes=N)
    g = gs.compile(ladies, passes=UNSCALED).program(G, seeds)
    assert len(_divisions(g)) == 3 and not _scaled(g)
    assert scaled_row_sums(g).changed
    assert len(_scaled(g)) == 3 and not _divisions(g)
    g.verify()
    assert not scaled_row_sums(g).changed  # nothing left to fold
    # the torch backend's own pipeline lists LADIES first: no row sums left to scale
    listed = gs.compile(ladies).program(G, seeds)
    assert Op.SLICE_REDUCE not in ops(listed)


def _layer(divide):
    """One LADIES layer whose probabilities are ``divide(p, sq)`` (``p`` the row sums)."""

    def sampler(A, seeds):
        sub = A[:, seeds]
        sq = sub**2
        p = sq.sum(axis=1)
        q = divide(p, sq)
        s = sub.collective_sample(50, node_probs=q)
        return s, q

    return sampler


LOOKALIKES = {
    "a host number": lambda p, sq: p / 2.0,
    "p / p.sum(): p read twice": lambda p, sq: p / p.sum().clamp(min=1e-30),
    "c / p": lambda p, sq: sq.sum().clamp(min=1e-30) / (p + 1.0),
    "a rounding mode": lambda p, sq: torch.div(p, sq.sum(), rounding_mode="floor") + p,
    # p read by the division alone: the rounding mode is what keeps it
    "a rounding mode alone": lambda p, sq: (
        torch.div(p, sq.sum().clamp(min=1e-30) * 1e-3, rounding_mode="trunc") + 1.0
    ),
    "a vector over the rows": lambda p, sq: p / (sq.sum(axis=1) + 1.0),
    "a product": lambda p, sq: p * sq.sum().clamp(min=1e-30),
    "a constant tensor": lambda p, sq: p / torch.tensor(4.0),
    "a vector constant": lambda p, sq: p / (sq.sum() * torch.ones(1)),
}


@pytest.mark.parametrize("name", sorted(LOOKALIKES))
def test_look_alikes_keep_their_division(G, name):
    seeds = random_seeds(64, num_nodes=N)
    sampler = _layer(LOOKALIKES[name])
    c = check_compiled_equals_eager(sampler, G, seeds, passes=SCALED)
    g = c.program(G, seeds)
    assert not _scaled(g), name


def test_the_sums_read_elsewhere_keep_their_division(G):
    def both(A, seeds):
        sub = A[:, seeds]
        sq = sub**2
        p = sq.sum(axis=1)
        q = p / sq.sum().clamp(min=1e-30)
        return sub.collective_sample(50, node_probs=q), p  # p itself leaves

    seeds = random_seeds(64, num_nodes=N)
    c = check_compiled_equals_eager(both, G, seeds, passes=SCALED)
    assert not _scaled(c.program(G, seeds))


def test_a_scaled_layer_is_the_unscaled_programs_bits(G):
    """``q`` itself returned: the scaled op's values the dense division's, bit for bit."""
    for name, divide in {
        "the total clamped": lambda p, sq: p / sq.sum().clamp(min=1e-30),
        "the total times a number": lambda p, sq: torch.div(p, sq.sum() * 3.0),
        "a zero total (0 / 0)": lambda p, sq: p / (sq.sum() * 0.0),
    }.items():
        sampler = _layer(divide)
        seeds = random_seeds(64, num_nodes=N)
        scaled = gs.compile(sampler, passes=SCALED)
        assert len(_scaled(scaled.program(G, seeds))) == 1, name
        if "zero" in name:  # NaN probabilities raise, as the dense program's
            with pytest.raises(ValueError, match="node_probs"):
                scaled(G, seeds)
            continue
        check_compiled_equals_eager(sampler, G, seeds, passes=SCALED, seed=3)
        gs.manual_seed(3)
        want = gs.compile(sampler, passes=UNSCALED)(G, seeds)
        gs.manual_seed(3)
        assert_same(scaled(G, seeds), want, name)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_torch_code_divides_as_the_program(G, dtype):
    """``fused_reduce.slice_reduce(..., scale=c)``: the unscaled sums ``/ c`` (one
    mini-batch), each mini-batch's rows by its own scale (a super-batch, (N,)), the shared
    0-dim scale, and a scale of another dtype (promoted as a 0-dim tensor is)."""
    A = G.csc.with_values(G.csc.values.to(dtype))
    seeds = random_seeds(64, num_nodes=N)
    p = fused_reduce.slice_reduce(A, seeds, "sum", 1)
    for c in (torch.tensor(0.37, dtype=dtype), torch.tensor(0.0, dtype=dtype)):
        got = fused_reduce.slice_reduce(A, seeds, "sum", 1, scale=c)
        assert_same(got, p / c)
    parts = [random_seeds(20 + 9 * b, seed=b, num_nodes=N) for b in range(4)]
    enc = torch.cat([x + b * N for b, x in enumerate(parts)])
    scales = [torch.tensor(0.5 + b, dtype=dtype) for b in range(4)]
    want = torch.cat([fused_reduce.slice_reduce(A, x, "sum", 1) / s for x, s in zip(parts, scales)])
    got = fused_reduce.slice_reduce(A, enc, "sum", 1, (4, N), torch.stack(scales))
    assert_same(got, want)
    other = torch.tensor(1 / 3, dtype=torch.float64 if dtype == torch.float32 else torch.float32)
    assert_same(fused_reduce.slice_reduce(A, seeds, "sum", 1, scale=other), p / other)
    # each mini-batch its own scale of the other dtype (batch by batch, as Elementwise)
    others = [other * (b + 1) for b in range(4)]
    want = torch.cat([fused_reduce.slice_reduce(A, x, "sum", 1) / o for x, o in zip(parts, others)])
    got = fused_reduce.slice_reduce(A, enc, "sum", 1, (4, N), torch.stack(others))
    assert_same(got, want)
    want = torch.cat([fused_reduce.slice_reduce(A, x, "sum", 1) / other for x in parts])
    assert_same(fused_reduce.slice_reduce(A, enc, "sum", 1, (4, N), other), want)


def test_ladies_samples_are_unchanged(G):
    """The catalogue's LADIES through the scaled op: eager's samples, the unscaled program's."""
    seeds = random_seeds(128, num_nodes=N)
    scaled = check_compiled_equals_eager(ladies, G, seeds, passes=SCALED, calls=2, seed=4)
    assert len(_scaled(scaled.program(G, seeds))) == 3
    gs.manual_seed(4)
    want = [gs.compile(ladies, passes=UNSCALED)(G, seeds) for _ in range(2)]
    gs.manual_seed(4)
    assert_same([scaled(G, seeds) for _ in range(2)], want)


@pytest.mark.parametrize("n", [2, 4])
def test_super_batched_scaled_row_sums_equal_one_by_one(G, n):
    """Super-batched, each mini-batch's rows divided by its own total (the stack of the
    per-batch clamps, no per-batch run of the row sums): eager's samples, batch by batch."""
    seeds = random_seeds(256, num_nodes=N)
    ref = loader_outputs(G, ladies, seeds, 32)
    compiled = gs.compile(ladies, passes=SCALED)
    loader = gs.DataLoader(G, compiled, seeds, 32, shuffle=False, seed=7, super_batch=n)
    assert loader.super_batch_size == n
    got = [b.out for b in loader]
    assert len(got) == len(ref)
    for i, (g, r) in enumerate(zip(got, ref)):
        assert_same(g, r, f"super_batch={n}, batch {i}")


def test_the_super_batch_keeps_one_row_sum_op(G):
    """The rewrite stacks the mini-batches' totals into the scaled op's (N,) scale: the row
    sums still run once for the super-batch (no per-batch run)."""
    from gsample.passes.super_batch import super_batch
    from gsample.runtime import block_helpers

    seeds = random_seeds(64, num_nodes=N)
    g = gs.compile(ladies, passes=SCALED).program(G, seeds).copy()
    g = super_batch(4, N, helpers=block_helpers())(g).graph.verify()
    scaled = _scaled(g)
    assert len(scaled) == 3
    for n in scaled:
        assert n.attrs["batches"] == (4, N)
        assert "stack" in str(n.input("scale").attrs["fn"])


def _same_bits(got: torch.Tensor, want: torch.Tensor, where: str = "") -> None:
    """Bit for bit (a zero's sign included), NaN where NaN; dtype and device the same."""
    assert got.dtype == want.dtype and got.device == want.device and got.shape == want.shape
    nan = torch.isnan(want)
    assert torch.equal(torch.isnan(got), nan), where
    bits = torch.int64 if want.dtype == torch.float64 else torch.int32
    assert torch.equal(got[~nan].view(bits), want[~nan].view(bits)), where


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_on_a_gpu_the_finish_divides_as_torch_does(G, dtype):
    """``layerwise.slice_reduce(..., scale=c)``: the bits of torch's ``p / c`` on the GPU, one
    mini-batch (gs_rowsum_finish: touched and untouched chunks, 0 / c), an empty frontier,
    a super-batch (gs_rowsum_chunks, each mini-batch's own scale; its totals' terms reused
    or not), and the divisors the finish does not take (a host tensor, which torch divides
    through its reciprocal; another dtype) divided by torch."""
    pytest.importorskip("cupy")
    from gsample.backend.cuda import layerwise

    A = G.csc.with_values(G.csc.values.to(dtype))
    Ag = gs.Matrix(A).to("cuda").csc
    seeds = random_seeds(64, num_nodes=N).cuda()
    p = layerwise.slice_reduce(Ag, seeds, "sum", 1)
    scales = [0.37, 1e-30, 3.0, -0.1, 0.0, float("nan"), float("inf")]
    for x in scales:
        c = torch.tensor(x, dtype=dtype, device="cuda")
        _same_bits(layerwise.slice_reduce(Ag, seeds, "sum", 1, scale=c), p / c, f"c={x}")
        empty = layerwise.slice_reduce(Ag, seeds[:0], "sum", 1, scale=c)
        _same_bits(empty, layerwise.slice_reduce(Ag, seeds[:0], "sum", 1) / c, f"c={x}")
    host = torch.tensor(0.37, dtype=dtype)  # a 0-dim host tensor: torch's reciprocal
    _same_bits(layerwise.slice_reduce(Ag, seeds, "sum", 1, scale=host), p / host)
    other = torch.tensor(1 / 3, device="cuda").to(
        torch.float64 if dtype == torch.float32 else torch.float32
    )
    _same_bits(layerwise.slice_reduce(Ag, seeds, "sum", 1, scale=other), p / other)
    parts = [random_seeds(20 + 9 * b, seed=b, num_nodes=N).cuda() for b in range(5)]
    enc = torch.cat([x + b * N for b, x in enumerate(parts)])
    totals = [torch.tensor(s, dtype=dtype, device="cuda") for s in scales[:5]]
    want = torch.cat([layerwise.slice_reduce(Ag, x, "sum", 1) / s for x, s in zip(parts, totals)])
    for paired in (False, True, True):  # the totals' terms placed for the row sums, or not
        if paired:
            layerwise.slice_total(Ag, enc, "sum", batches=(5, N))
        got = layerwise.slice_reduce(Ag, enc, "sum", 1, (5, N), torch.stack(totals))
        _same_bits(got, want, f"paired={paired}")
    shared = totals[0]
    want = torch.cat([layerwise.slice_reduce(Ag, x, "sum", 1) / shared for x in parts])
    _same_bits(layerwise.slice_reduce(Ag, enc, "sum", 1, (5, N), shared), want)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_on_a_gpu_ladies_samples_are_unchanged(G):
    """The CUDA backend's LADIES with the division in the row sums' finish: the blocks of
    its program without the pass, one mini-batch at a time (CUDA graphs) and super-batched."""
    pytest.importorskip("cupy")
    Gc = G.to("cuda")
    seeds = random_seeds(128, num_nodes=N).cuda()
    scaled = gs.compile(ladies, backend="cuda")
    assert len(_scaled(scaled.program(Gc, seeds))) == 3
    unscaled = gs.compile(
        ladies, backend="cuda", passes=[e for e in PIPELINE if e[0] is not scaled_row_sums]
    )
    assert not _scaled(unscaled.program(Gc, seeds))
    gs.manual_seed(2)
    want = [unscaled(Gc, seeds) for _ in range(3)]
    gs.manual_seed(2)
    assert_same([scaled(Gc, seeds) for _ in range(3)], want)
    ids = random_seeds(256, num_nodes=N).cuda()
    runs = [
        [b.out for b in gs.DataLoader(Gc, f, ids, 32, shuffle=False, seed=3, super_batch=4)]
        for f in (scaled, unscaled)
    ]
    assert_same(runs[0], runs[1])
