"""A sampler's own dense indexing by ids (``gsample/runtime/dense_index.py``).

``node_time[seeds]`` inside a compiled sampler runs as the sampler's own torch code, before
any op checks ``seeds``. A bad id there must raise the documented ``IndexError`` naming the
argument, from the call that has it, and never reach a kernel unbounded: on a GPU an
out-of-range index is a device-side assert that leaves the process's CUDA context unusable,
so no later call could run. Each form is checked on the CPU, on a GPU (both backends: the
flag deferred to the read-back, the index clamped meanwhile) and in a replayed CUDA graph;
after every bad call the next good one returns exactly what it returned before.

The tables are indexed by the seeds and their values are what the graph is sliced by, so the
dense guard is the only check the seeds meet (a bad id would otherwise be caught by
``A[:, seeds]`` and prove nothing here).
"""

from __future__ import annotations

import operator

import pytest
import torch
from helpers import difference

import gsample as gs
from gsample.interop.pyg.temporal import disjoint_sample
from gsample.ir import Ref
from gsample.runtime import cuda_graphs, dense_index

N = 400
BATCH = 64

_GPU = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]
TARGETS = [
    pytest.param(("cpu", "torch"), id="cpu"),
    pytest.param(("cuda", "torch"), id="cuda-torch", marks=_GPU),
    pytest.param(("cuda", "cuda"), id="cuda-kernels", marks=_GPU),
]


def tables(device):
    """A permutation of the nodes, as a vector, a (N, 2) and a (2, N) table."""
    perm = torch.randperm(N, generator=torch.Generator().manual_seed(5)).to(device)
    return perm, torch.stack([perm, perm], 1), torch.stack([perm, perm])


def forms(device) -> dict:
    """name -> (sampler, whether a negative id in ``[-N, 0)`` is valid, as in torch)."""
    v, rows, cols = tables(device)

    def fanout(A, cols_):
        return A[:, cols_].individual_sample(3)

    return {
        "getitem": (lambda A, seeds: fanout(A, v[seeds]), True),
        "rows_getitem": (lambda A, seeds: fanout(A, rows[seeds, 1]), True),
        "cols_getitem": (lambda A, seeds: fanout(A, cols[1, seeds]), True),
        "ellipsis_getitem": (lambda A, seeds: fanout(A, cols[..., seeds][0]), True),
        # a 0-dim index: torch reads its value on the host (not captured in a CUDA graph)
        "scalar_getitem": (lambda A, seeds: fanout(A, v[seeds] + 0 * v[seeds[0]]), True),
        "index_select": (lambda A, seeds: fanout(A, torch.index_select(v, 0, seeds)), False),
        "index_select_method": (lambda A, seeds: fanout(A, v.index_select(0, seeds)), False),
        "gather": (lambda A, seeds: fanout(A, v.gather(0, seeds)), False),
        "take": (lambda A, seeds: fanout(A, torch.take(v, seeds)), True),
    }


FORMS = list(forms("cpu"))


def bad_ids(negative_ok: bool) -> list:
    """Out of range for a table of ``N`` rows (``-N - 1`` and beyond: for every form; ``-1``:
    for the forms torch does not wrap)."""
    return [N, N + 1, 2**31, 2**32 + 1, 2**40, 2**63 - 1, -N - 1, -(2**40)] + (
        [] if negative_ok else [-1]
    )


@pytest.fixture(scope="module")
def graphs() -> dict:
    g = torch.Generator().manual_seed(3)
    src = torch.cat([torch.randint(0, N, (8 * N,), generator=g), torch.arange(N)])
    dst = torch.cat([torch.randint(0, N, (8 * N,), generator=g), (torch.arange(N) + 1) % N])
    return {"cpu": gs.Matrix.from_edge_index(torch.stack([src, dst]), num_nodes=N)}


def graph(graphs, device: str) -> gs.Matrix:
    if device not in graphs:
        graphs[device] = graphs["cpu"].to(device)
    return graphs[device]


def call(fn, A, seeds):
    gs.manual_seed(1)
    return fn(A, seeds)


def exact(got, want, what):
    d = difference(got, want, what)
    assert d is None, d


def refuses(fn, A, seeds, bad, what):
    with pytest.raises(IndexError) as e:
        call(fn, A, seeds)
    message = str(e.value)
    assert message.startswith("seeds: index "), f"{what}: {message!r}"
    assert f" {bad} " in message, f"{what}: the bad id is not named: {message!r}"


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("form", FORMS)
def test_a_bad_id_is_refused_and_the_next_call_is_exact(graphs, form, target):
    device, backend = target
    A = graph(graphs, device)
    sampler, negative_ok = forms(device)[form]
    fn = gs.compile(sampler, backend=backend)
    good = torch.randperm(N, generator=torch.Generator().manual_seed(9))[:BATCH].to(device)
    with gs.use_backend(backend):
        want = call(sampler, A, good)  # eager: the sampler's own torch code on good ids
    exact(call(fn, A, good), want, f"{form}: compiled")
    for bad in bad_ids(negative_ok):
        seeds = good.clone()
        seeds[BATCH // 2] = bad
        refuses(fn, A, seeds, bad, f"{form}, {bad}")
        exact(call(fn, A, good), want, f"{form}: the call after {bad}")


@pytest.mark.parametrize("target", TARGETS)
def test_wrapping_negative_ids_index_as_in_torch(graphs, target):
    device, backend = target
    A = graph(graphs, device)
    sampler, _ = forms(device)["getitem"]
    fn = gs.compile(sampler, backend=backend)
    seeds = torch.tensor([-1, -N, 0, N - 1], device=device)
    with gs.use_backend(backend):
        exact(call(fn, A, seeds), call(sampler, A, seeds), "negative ids")


@pytest.mark.parametrize("target", TARGETS)
def test_temporal_seed_times(graphs, target):
    """PyG's temporal sampling as ``benchmarks/pyg_loaders.py`` writes it: the seeds' times
    read by the seeds."""
    device, backend = target
    A = graph(graphs, device)
    g = torch.Generator().manual_seed(2)
    edge_time = torch.randint(0, 100, (A.num_edges,), generator=g).to(device)
    node_time = torch.randint(0, 100, (A.num_nodes,), generator=g).to(device)

    def temporal(A, seeds):
        return disjoint_sample(A, seeds, node_time[seeds], edge_time, num_neighbors=(5, 5))

    fn = gs.compile(temporal, backend=backend)
    good = torch.arange(BATCH, device=device)
    want = call(fn, A, good)
    for bad in (A.num_nodes, 2**40, -(2**40)):
        seeds = good.clone()
        seeds[3] = bad
        refuses(fn, A, seeds, bad, f"temporal, {bad}")
        exact(call(fn, A, good), want, f"temporal: the call after {bad}")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("form", ["getitem", "index_select", "gather", "scalar_getitem"])
def test_cuda_graph_replay(graphs, form):
    """The guarded indexing is captured with the program's region; a bad id in a replay
    raises, and the replays after it are exact."""
    pytest.importorskip("cupy")
    A = graph(graphs, "cuda")
    sampler, negative_ok = forms("cuda")[form]
    fn = gs.compile(sampler, backend="cuda")
    good = torch.randperm(N, generator=torch.Generator().manual_seed(9))[:BATCH].cuda()
    want = call(fn, A, good)
    for i in range(3):
        exact(call(fn, A, good), want, f"{form}: good call {i + 2}")
    if cuda_graphs.enabled() and form != "scalar_getitem":  # (its region runs eagerly)
        program = fn.lowered(A, good)
        guarded = [r for r in program.regions if any(s.label.startswith("dense") for s in r.steps)]
        assert guarded and all(r.captured for r in guarded), "the indexing is not captured"
    for bad in bad_ids(negative_ok):
        seeds = good.clone()
        seeds[7] = bad
        refuses(fn, A, seeds, bad, f"{form} replayed, {bad}")
        for i in range(2):
            exact(call(fn, A, good), want, f"{form}: replay {i + 1} after {bad}")


# ----------------------------------------------------------------------------- the guard
def guard(fn, template, names=("0", "1")):
    return dense_index.GuardedIndex(fn, template, list(names), "ids", "test")


def refs(*names):
    return tuple(Ref(n) for n in names)


def test_setitem_is_bounded():
    t = torch.zeros(5)
    set_ = guard(operator.setitem, (refs("0", "1") + (1.0,), {}))
    set_(t, torch.tensor([0, 4]))
    assert t.tolist() == [1, 0, 0, 0, 1]
    with pytest.raises(IndexError, match=r"^ids: index 5 is out of range for dimension 0"):
        set_(t, torch.tensor([5]))


@pytest.mark.parametrize(
    "index",
    [slice(1, 3), 2, torch.tensor([True, False, True, False, True]), [0, 2]],
    ids=["slice", "int", "mask", "list"],
)
def test_what_torch_checks_on_the_host_passes_through(index):
    t = torch.arange(5) * 10
    get = guard(operator.getitem, (refs("0", "1"), {}))
    assert torch.equal(torch.as_tensor(get(t, index)), torch.as_tensor(t[index]))


def test_an_index_into_an_empty_dimension_is_refused_on_the_host():
    get = guard(operator.getitem, (refs("0", "1"), {}))
    with pytest.raises(IndexError, match=r"^ids: an index into dimension 0 of size 0"):
        get(torch.zeros(0), torch.tensor([0]))


def test_only_indexing_calls_are_guarded():
    assert dense_index.kind(operator.getitem) == "subscript"
    assert dense_index.kind(("method", "index_select")) == "dim"
    assert dense_index.kind(torch.gather) == "dim"
    assert dense_index.kind(torch.take) == "take"
    assert dense_index.kind(torch.add) is None
    assert dense_index.kind(("method", "sum")) is None

    def gather(x, i):  # a user's own function of the same name
        return x

    assert dense_index.kind(gather) is None

    class Unhashable:  # a user's callable object that defines __eq__ only
        __hash__ = None

        def __call__(self, x):
            return x

    assert dense_index.kind(Unhashable()) is None


def test_a_torch_function_another_library_replaced_is_still_indexing(monkeypatch):
    """PyG replaces ``torch.index_select`` with a wrapper of its own when it is imported."""
    original = torch.index_select

    def wrapper(*args, **kwargs):
        return original(*args, **kwargs)

    monkeypatch.setattr(torch, "index_select", wrapper)
    assert dense_index.kind(wrapper) == "dim"
    assert dense_index.kind(torch._C._VariableFunctions.index_select) == "dim"


def _dense_nodes(sampler, A, seeds):
    program = gs.compile(sampler).lowered(A, seeds)
    return [n for n in program.graph.nodes if n.op.value == "dense"]


@pytest.mark.parametrize(
    "form, captured",
    [("getitem", True), ("rows_getitem", True), ("index_select", True), ("take", True)],
)
def test_indexing_by_ids_is_captured_with_its_region(graphs, form, captured):
    """Indexing by the sampler's argument (or an op's ids) may run in a CUDA graph: nothing
    in it reads back."""
    sampler, _ = forms("cpu")[form]
    (node,) = _dense_nodes(sampler, graph(graphs, "cpu"), torch.arange(4))
    fn, template = node.attrs["fn"], node.attrs["template"]
    assert dense_index.capturable(fn, template, node.inputs) is captured


def test_indexing_by_a_mask_or_a_value_of_dense_code_is_not_captured(graphs):
    """A mask (``nonzero``) or a 0-dim tensor (its value) torch reads on the host: such a
    step stays out of the CUDA graph regions, as it did before it was guarded."""
    v, _, _ = tables("cpu")

    def sampler(A, seeds):
        keep = v[seeds] > 10  # a mask made by the sampler's code
        first = seeds[0]  # a 0-dim value
        return A[:, v[seeds][keep]].individual_sample(2), v[first]

    nodes = _dense_nodes(sampler, graph(graphs, "cpu"), torch.arange(40))
    by_index = {}
    for n in nodes:
        if dense_index.kind(n.attrs["fn"]) == "subscript":
            by_index[n.name] = dense_index.capturable(n.attrs["fn"], n.attrs["template"], n.inputs)
    assert sorted(by_index.values()) == [False, False, True, True], by_index


def test_what_is_not_a_tensor_is_indexed_as_it_is():
    """A tuple's item (``torch.unique(..., return_inverse=True)[1]``), or a method of the
    same name on another object, is not a tensor's indexing: called as written."""
    get = guard(operator.getitem, (refs("0", "1"), {}))
    pair = (torch.tensor([1]), torch.tensor([2]))
    assert get(pair, 1) is pair[1]

    class Store:
        def gather(self, dim, index):
            return ("gathered", dim, index)

    gather = guard(("method", "gather"), (refs("0") + (0,) + refs("1"), {}))
    assert gather(Store(), torch.tensor([7]))[0] == "gathered"
