"""The probs-support pass: a collective sampler whose node_probs are a row reduction of its
own slice (scaled) is marked ``probs_in_slice``; probabilities that may be positive off the
slice's rows are not; samples are unchanged (every backend, eager, compiled with and without
the pass, super-batched)."""

import functools

import helpers
import pytest
import torch
from helpers import random_seeds as seeds

import gsample as gs
from gsample.ir import Op
from gsample.passes import PIPELINE
from gsample.passes.probs_support import probs_support


@pytest.fixture(scope="module")
def A():
    return gs.datasets.rmat(2000, 30000, seed=1, weighted=True)


def _marked(fn, A, *args, **kwargs) -> list:
    program = gs.compile(fn).program(A, seeds(), *args, **kwargs)
    return [
        n.attrs.get("probs_in_slice", False)
        for n in program.nodes
        if n.op is Op.SLICE_COLLECTIVE_SAMPLE
    ]


def ladies_like(A, seeds, k=60, scale="sum"):
    sub = A[:, seeds]
    p = (sub**2).sum(axis=1)  # 0 off the slice's rows
    if scale == "sum":
        p = p / p.sum().clamp(min=1e-30)
    elif scale == "vector":
        p = torch.relu(p * torch.linspace(0.5, 2.0, p.numel(), device=p.device))
    return sub.collective_sample(k, node_probs=p)


def positive_off_slice(A, seeds, k=60, how="shift"):
    sub = A[:, seeds]
    if how == "shift":
        p = sub.sum(axis=1) + 1e-3  # positive on every row
    elif how == "clamp":
        p = sub.sum(axis=1).clamp(min=1e-3)
    elif how == "graph":
        p = A.sum(axis=1)  # the whole graph's rows
    else:  # another frontier's slice
        p = A[:, seeds[:10] + 1].sum(axis=1)
    return sub.collective_sample(k, node_probs=p)


def test_ladies_probabilities_are_marked(A):
    """LADIES (the example), and its bias scaled by a total or an elementwise vector, is marked;
    the pass changes nothing on a second run."""
    example = helpers.example("ladies")
    # for the CUDA backend, whose kernels read the mark (the torch backend's listed_rows pass
    # then makes the marked samples listed ones: tests/passes/test_listed_rows.py)
    program = gs.compile(
        functools.partial(example.ladies, layers=(80, 80)), backend="cuda"
    ).program(example.normalize(A), seeds())
    nodes = [n for n in program.nodes if n.op is Op.SLICE_COLLECTIVE_SAMPLE]
    assert len(nodes) == 2 and all(n.attrs["probs_in_slice"] for n in nodes)
    assert _marked(ladies_like, A) == [True]
    assert _marked(ladies_like, A, scale="vector") == [True]
    again = probs_support(program.copy())
    assert not again.changed
    assert [n.attrs for n in again.graph.nodes] == [n.attrs for n in program.nodes]


@pytest.mark.parametrize("how", ["shift", "clamp", "graph", "other frontier"])
def test_probabilities_positive_off_the_slice_are_not_marked(A, how):
    """p + c, p.clamp(min=c), the whole graph's row sums and another frontier's are not
    zero off this slice's rows: their collective samples keep marking the slice's rows;
    so does FastGCN's (graph-level degrees)."""
    assert _marked(positive_off_slice, A, how=how) == [False]
    fastgcn = helpers.example("fastgcn")
    fn = functools.partial(fastgcn.fastgcn, layers=(50,), degree=A.sum(axis=1))
    assert _marked(fn, A) == [False]


def test_pipeline_lists_the_pass_once():
    assert [fn for fn, _ in PIPELINE].count(probs_support) == 1


@pytest.mark.parametrize("scale", ["sum", "vector"])
def test_samples_unchanged(device, A, scale):
    """Compiled with the pass (the CUDA backend then skips marking the slice's rows) samples
    exactly what eager and the pipeline without it sample, one mini-batch and super-batched;
    a NaN made by scaling (0 / 0: every row's probability 0 / 0) still raises."""
    G = A.to(device)
    s = seeds().to(device)
    fn = functools.partial(ladies_like, scale=scale)
    without = [p for p in PIPELINE if p[0] is not probs_support]
    helpers.check_compiled_equals_eager(fn, G, s, calls=2, distinct=True)
    helpers.check_compiled_equals_eager(fn, G, s, passes=without, calls=2)
    helpers.check_super_batched(G, fn, seeds(200).to(device), 50, 2)

    def nan_probs(A, seeds):
        sub = A[:, seeds]
        p = sub.sum(axis=1)
        return sub.collective_sample(10, node_probs=p / (p * 0.0))  # 0 / 0: NaN

    assert _marked(nan_probs, A) == [True]
    with pytest.raises(ValueError, match="node_probs"):
        gs.compile(nan_probs)(G, s)
