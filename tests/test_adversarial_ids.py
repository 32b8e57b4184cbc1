"""Bad node ids on every path of the compiled catalogue samplers (issue 32, item 2).

A user who passes one bad id must get the documented ``IndexError`` naming the argument
(docs/architecture.md §6), from the call that had it, and the next good call must return exactly
what it returns in a fresh process (docs/architecture.md §3): a kernel that reads or writes through
an unchecked id corrupts memory or loses the CUDA context, and then either the error or the next
sample is wrong. The ids (:func:`adversarial.bad_ids`, ``N`` the node count): ``N``, ``N + 1``,
``-1``, ``-2**40``, ``2**31``, ``2**32 + 1`` (1 after a 32-bit cast), ``2**40``, ``2**62``,
``2**63 - 1``; each one among good seeds (one of 512, at a random position: the good seeds'
shape, so a compiled sampler runs, and replays, the very program its good seeds run) and as
the only seed.

One test per (sampler, mode), every id inside it, so that ``scripts/memcheck.py --chunk 1``
runs one sanitized process per sampler and mode. The samplers (:func:`adversarial.specs`)
cover every family and every distinct GPU path of the catalogue; the modes:

* ``test_one_mini_batch``: a compiled call and an eager one;
* ``test_a_failed_call_draws_nothing``: the good call right after a refused one, without a
  new ``gs.manual_seed``, samples what a fresh process's first call samples (eager and
  compiled alike);
* ``test_cuda_graph_replay`` (GPU): good calls until the sampler's regions are captured and
  replayed (from the third call on, ``gsample/runtime/cuda_graphs.py``), then the bad call,
  then good calls (replays) again;
* ``test_loader_super_batch``: ``gs.DataLoader(..., super_batch=2)`` given a bad seed;
* ``test_uva`` / ``test_uva_cache`` (GPU): the graph in pinned host memory
  (``A.to("cuda", placement="uva")``), and with a GPU cache of its busiest columns;
* ``test_feature_gather`` / ``_uva`` / ``_cached``: the loader's ``FeatureStore`` called with
  a user's ``n_id``: the table on the graph's device, and (GPU) a CPU table in pinned host
  memory read through UVA, without and with a device cache of its busiest rows.

Every mode runs on the CPU with the torch backend; on a GPU (``@pytest.mark.cuda``) with
``backend="torch"`` and ``backend="cuda"``, the latter with the graph read through int64 and
through int32 index arrays (``gsample.backend.cuda.extract.INT32_MIN_EDGES`` set to 0 forces
the int32 copy). ``test_listed_ladies`` runs LADIES through those modes with its rows
listed on the device (``gsample.backend.cuda.listed.LISTED`` set to True: the test graph is
below ``"auto"``'s size), through both widths (UVA: int64). The backend is always
explicit (``gs.compile(backend=...)``, eager calls under ``gs.use_backend``).

On a GPU, under ``compute-sanitizer``: with PyTorch's caching allocator and CUDA graphs off
(a stray write that faults nothing is then a write past its own allocation), then with the
caching allocator and the graphs for the replays (exit status 3: call again, it resumes)::

    python3 scripts/memcheck.py --jobs 8 --chunk 1 --deadline 570 --log-dir memcheck-ids \\
        -- -m cuda tests/test_adversarial_ids.py
    python3 scripts/memcheck.py --allocator cached --jobs 8 --chunk 1 --deadline 570 \\
        --log-dir memcheck-ids-cached -- -m cuda tests/test_adversarial_ids.py \\
        -k "test_cuda_graph_replay or test_listed_ladies"
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import pytest
import torch
from adversarial import (
    alone,
    assert_exact,
    bad_ids,
    good_seeds,
    planted,
    raises_index_error,
    seeded,
    specs,
)

import gsample as gs
from gsample.backend.cuda import extract as X
from gsample.backend.cuda import listed
from gsample.formats import placement as P
from gsample.loader.features import SLOT_BYTES
from gsample.runtime import cuda_graphs

#: the CPU graph (small: the CPU part stays fast) and the GPU graph (issue 32's repro size)
CPU_GRAPH = dict(num_nodes=20_000, num_edges=200_000)
GPU_GRAPH = dict(num_nodes=200_000, num_edges=1_000_000)
EPOCH_SEED = 7  # the loaders' and super-batches' epoch seed
FEATURES = 16  # feature columns

SAMPLERS = list(specs())
GATHERING = [n for n in SAMPLERS if specs()[n].gathers]

_GPU = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]


@dataclass(frozen=True)
class Target:
    """Where a test runs: the device, the backend, and (CUDA backend) the index width."""

    device: torch.device
    backend: str
    int32: bool | None = None  # None: the library's default
    listed: bool = False  # LADIES's rows listed on the device at every graph size


CPU = pytest.param(Target(torch.device("cpu"), "torch"), id="cpu-torch")
CUDA_TORCH = pytest.param(Target(torch.device("cuda"), "torch"), id="cuda-torch", marks=_GPU)
KERNELS_64 = pytest.param(
    Target(torch.device("cuda"), "cuda", False), id="cuda-kernels-int64", marks=_GPU
)
KERNELS_32 = pytest.param(
    Target(torch.device("cuda"), "cuda", True), id="cuda-kernels-int32", marks=_GPU
)
#: the CUDA backend's LADIES with its rows listed on the device (``listed.LISTED = True``:
#: the test graph is below ``"auto"``'s size), through int64 and int32 index arrays
LISTED_64 = pytest.param(
    Target(torch.device("cuda"), "cuda", False, True), id="cuda-listed-int64", marks=_GPU
)
LISTED_32 = pytest.param(
    Target(torch.device("cuda"), "cuda", True, True), id="cuda-listed-int32", marks=_GPU
)
ALL = [CPU, CUDA_TORCH, KERNELS_64, KERNELS_32]
GPU_ONLY = [CUDA_TORCH, KERNELS_64, KERNELS_32]
# a graph in pinned host memory is read as int64 in place (no int32 copy: extract.py), and a
# feature gather does not depend on the sampler's index width
UVA = [CUDA_TORCH, KERNELS_64]
GATHER = [CPU, CUDA_TORCH, KERNELS_64]


@pytest.fixture
def target(request, monkeypatch) -> Target:
    t: Target = request.param
    if t.backend == "cuda":
        pytest.importorskip("cupy")
    if t.int32 is not None:  # 0: every whole graph through int32; None: never
        monkeypatch.setattr(X, "INT32_MIN_EDGES", 0 if t.int32 else None)
    if t.listed:  # (read when a program is compiled: every test compiles its own)
        monkeypatch.setattr(listed, "LISTED", True)
    return t


def targets(params):
    """Parametrise a test's ``target`` fixture over ``params``."""
    return pytest.mark.parametrize("target", params, indirect=True)


# ----------------------------------------------------------------------------- graphs
#: (sampler's prepare, device type, placement, cache) -> (the graph, copies of its arrays)
_GRAPHS: dict = {}


def base_graph(device: torch.device) -> gs.Matrix:
    """The weighted R-MAT graph of ``device`` (made once per process)."""
    return _keep(
        ("base", device.type),
        lambda: gs.datasets.rmat(
            **(GPU_GRAPH if device.type == "cuda" else CPU_GRAPH),
            seed=0,
            weighted=True,
            device=device,
        ),
    )


def graph(
    name: str, device: torch.device, placement: str = "device", cache: bool = False
) -> gs.Matrix:
    """The graph sampler ``name`` takes on ``device`` (its ``prepare`` applied), on the
    device or (``placement="uva"``) in pinned host memory, with a GPU cache of its
    ``indptr`` and part of its columns (``cache``: room for about a quarter of its edges)."""
    spec = specs()[name]

    def make():
        A = base_graph(device)
        if spec.prepare is not None:
            A = spec.prepare(A)
        if placement == "uva":
            nbytes = None
            if cache:  # indptr and slots (16 bytes a node), then part of the rows (a
                # quarter at 16 bytes an edge; more at int32 rows' 4 + 8)
                nbytes = 16 * (A.num_nodes + 1) + 16 * A.num_edges // 4
            A = A.to(device, placement="uva", cache=nbytes)
            assert A.placement == "uva" and (A.cache is not None) == cache
        return A

    return _keep((spec.prepare, device.type, placement, cache), make)


def _keep(key, make) -> gs.Matrix:
    """The graph of ``key``, made once per process and kept with copies of its arrays."""
    if key not in _GRAPHS:
        A = make()
        _GRAPHS[key] = (A, _arrays(A))
    return _GRAPHS[key][0]


def _arrays(A: gs.Matrix) -> dict:
    """CPU copies of every array a sampler reads of ``A``: its CSC, its GPU cache, a UVA
    graph's int32 rows in pinned host memory and the CUDA backend's int32 copy of its index
    arrays (where made)."""
    csc = A.csc
    out = {f: getattr(csc, f) for f in ("indptr", "rows", "row_ids", "col_ids", "values", "eids")}
    if A.cache is not None:
        out.update({f"cache.{f}": getattr(A.cache, f) for f in ("slot", "rows", "eids")})
    if P.narrow_rows(csc) is not None:
        out["int32 host rows"] = P.narrow_rows(csc)
    narrow = X._NARROW.get(csc)
    if narrow is not None:
        out.update({"int32 indptr": narrow[1], "int32 rows": narrow[2]})
    return {k: v.detach().cpu().clone() for k, v in out.items() if v is not None}


@pytest.fixture(autouse=True)
def _graphs_intact():
    """After each test: every graph the process keeps holds what it held when it was made
    (a stray write through a bad id that faults nothing lands in some allocation; the
    graphs, shared by the tests of a process, are where it would change later samples). An
    int32 copy made since is checked against the int64 arrays it narrows."""
    yield
    for key, (A, made) in _GRAPHS.items():
        for field, value in _arrays(A).items():
            narrowed = field.startswith("int32 ")  # (a UVA graph's "copy" is int64)
            want = made["rows" if field == "int32 host rows" else field.removeprefix("int32 ")]
            assert torch.equal(value.to(want.dtype) if narrowed else value, want), (
                f"graph {key}: its {field} changed"
            )


def sampler(name: str, target: Target, compiled: bool = True):
    """The sampler ``name`` with its static arguments for ``target``'s device: compiled for
    its backend, or the plain function (to call under ``gs.use_backend``)."""
    spec = specs()[name]
    fn = gs.compile(spec.fn, backend=target.backend) if compiled else spec.fn
    return functools.partial(fn, **spec.kwargs(target.device))


def eager(fn, target: Target):
    """``fn`` run eagerly on ``target``'s backend."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        with gs.use_backend(target.backend):
            return fn(*args, **kwargs)

    return call


def seeds_for(name: str, A: gs.Matrix, target: Target, n: int | None = None) -> torch.Tensor:
    """``n`` (default: a mini-batch of ``name``) distinct good seeds on ``target``'s device."""
    spec = specs()[name]
    return good_seeds(A.num_nodes, spec.batch if n is None else n, name).to(target.device)


# ----------------------------------------------------------------------------- one call
def check_calls(name: str, target: Target, A: gs.Matrix, what: str) -> None:
    """The compiled sampler (and the eager function) on ``A``: every bad id, among good
    seeds and alone, raises from the call that has it; the good call right after returns
    exactly the reference computed before any bad call, under the same seed."""
    spec = specs()[name]
    fn = sampler(name, target)
    good = seeds_for(name, A, target)
    one = good[:1]
    ref, ref_one = seeded(fn, A, good), seeded(fn, A, one)
    plain = eager(sampler(name, target, compiled=False), target)
    calls = [
        ("compiled", fn, ref, ref_one),
        ("eager", plain, seeded(plain, A, good), seeded(plain, A, one)),
    ]
    for how, call, r, r_one in calls:
        for bad in bad_ids(A.num_nodes):
            seeds, pos = planted(good, bad, name, what)
            raises_index_error(
                lambda call=call, seeds=seeds: seeded(call, A, seeds),
                spec.names,
                bad,
                f"{what}, {how}, {bad} at {pos} of {len(seeds)}",
            )
            if how == "compiled":  # (the eager reference is checked once, below)
                assert_exact(seeded(call, A, good), r, f"{what}, {how}, after {bad}")
            raises_index_error(
                lambda call=call, bad=bad: seeded(call, A, alone(bad, target.device)),
                spec.names,
                bad,
                f"{what}, {how}, {bad} alone",
            )
            if how == "compiled":
                assert_exact(seeded(call, A, one), r_one, f"{what}, {how}, one seed after {bad}")
        assert_exact(seeded(call, A, good), r, f"{what}, {how}, after every bad id")
        assert_exact(seeded(call, A, one), r_one, f"{what}, {how}, one seed, after every bad id")


@targets(ALL)
@pytest.mark.parametrize("name", SAMPLERS)
def test_one_mini_batch(name, target):
    check_calls(name, target, graph(name, target.device), f"{name}, one mini-batch")


@targets(UVA)
@pytest.mark.parametrize("name", SAMPLERS)
def test_uva(name, target):
    check_calls(name, target, graph(name, target.device, "uva"), f"{name}, UVA graph")


@targets(UVA)
@pytest.mark.parametrize("name", SAMPLERS)
def test_uva_cache(name, target):
    check_calls(
        name,
        target,
        graph(name, target.device, "uva", cache=True),
        f"{name}, UVA graph with a GPU cache",
    )


@targets(ALL)
@pytest.mark.parametrize("name", SAMPLERS)
def test_a_failed_call_draws_nothing(name, target):
    """docs/architecture.md §3 after an error: a call refused for a bad seed takes nothing from the
    random stream, so the good call right after it (no ``gs.manual_seed`` in between) samples what
    the first call of a fresh process samples. An eager call checks its seeds before it
    draws; a compiled call must leave the stream as that eager call leaves it (docs/architecture.md
    §3, consequence 2: eager and compiled give the same samples)."""
    spec = specs()[name]
    A = graph(name, target.device)
    good = seeds_for(name, A, target)
    for how, fn in (
        ("eager", eager(sampler(name, target, compiled=False), target)),
        ("compiled", sampler(name, target)),
    ):
        ref = seeded(fn, A, good)
        for bad in bad_ids(A.num_nodes):
            seeds, _ = planted(good, bad, name, "stream")
            raises_index_error(
                lambda fn=fn, seeds=seeds: seeded(fn, A, seeds),
                spec.names,
                bad,
                f"{name}, {how}, {bad}",
            )
            assert_exact(
                fn(A, good),
                ref,
                f"{name}, {how}: the good call right after the "
                f"call refused for {bad} (the stream moved)",
            )


# ----------------------------------------------------------------------------- CUDA graphs
WARM_CALLS = 4  # a region runs eagerly, is captured, then replayed from the third call
#: samplers whose CUDA-backend programs are documented to hold CUDA graph regions (a node-wise
#: sampler one, a layer-wise one one per layer, PyG's disjoint sampler one from its seed slots
#: to its read-back: gsample/runtime/cuda_graphs.py): checked to be
#: captured, so that their bad calls are replays (the others' may run eagerly)
CAPTURED = ("graphsage", "ladies", "disjoint")


@targets(GPU_ONLY)
@pytest.mark.parametrize("name", SAMPLERS)
def test_cuda_graph_replay(name, target):
    """Good calls until the regions are captured and replayed, then each bad id (the same
    shape: the captured graph replays it), then good replays: each exact."""
    spec = specs()[name]
    A = graph(name, target.device)
    fn = sampler(name, target)
    what = f"{name}, CUDA graph replay"
    good = seeds_for(name, A, target)
    for seeds, where in ((good, "among good seeds"), (good[:1], "alone")):
        ref = seeded(fn, A, seeds)
        for i in range(1, WARM_CALLS):
            assert_exact(seeded(fn, A, seeds), ref, f"{what}, good call {i + 1}")
        # (a listed sample reads its sizes back: its layers' steps run eagerly)
        if name in CAPTURED and target.backend == "cuda" and not target.listed:
            captured = cuda_graphs.enabled()
        else:
            captured = False
        if captured:
            program = fn.func.lowered(A, seeds, **fn.keywords)
            assert any(r.captured for r in program.regions), (
                f"{what}: nothing captured after {WARM_CALLS} calls"
            )
        for bad in bad_ids(A.num_nodes):
            bad_seeds = (
                planted(seeds, bad, name, what)[0]
                if seeds.numel() > 1
                else alone(bad, target.device)
            )
            raises_index_error(
                lambda bad_seeds=bad_seeds: seeded(fn, A, bad_seeds),
                spec.names,
                bad,
                f"{what}, {bad} {where}",
            )
            for i in range(2):  # the next replay, and the one after it
                assert_exact(
                    seeded(fn, A, seeds), ref, f"{what}, good call {i + 1} after {bad} {where}"
                )


# ----------------------------------------------------------------------------- super-batches
SUPER_BATCH = 2
BATCHES = 3  # mini-batches of a loader's epoch: two super-batches, the last of one


def epoch(A, fn, seeds, batch, **options) -> list:
    """One unshuffled loader epoch's outputs (a fixed epoch seed)."""
    loader = gs.DataLoader(A, fn, seeds, batch, shuffle=False, seed=EPOCH_SEED, **options)
    return [b.out for b in loader]


@targets(ALL)
@pytest.mark.parametrize("name", SAMPLERS)
def test_loader_super_batch(name, target):
    """A super-batched loader given a bad seed (among an epoch's seeds, or alone) refuses it
    when it is made (the loader checks its ``seeds``, before anything runs), and a loader
    made after samples the reference epoch."""
    spec = specs()[name]
    A = graph(name, target.device)
    fn = sampler(name, target)
    what = f"{name}, super_batch={SUPER_BATCH}"
    seeds = seeds_for(name, A, target, BATCHES * spec.batch)
    ref = epoch(A, fn, seeds, spec.batch, super_batch=SUPER_BATCH)
    assert len(ref) == BATCHES
    for bad in bad_ids(A.num_nodes):
        bad_seeds, pos = planted(seeds, bad, name, what)
        raises_index_error(
            lambda bad_seeds=bad_seeds: gs.DataLoader(
                A, fn, bad_seeds, spec.batch, super_batch=SUPER_BATCH
            ),
            ("seeds",),
            bad,
            f"{what}, {bad} at {pos} of the epoch's seeds",
        )
        raises_index_error(
            lambda bad=bad: gs.DataLoader(
                A, fn, alone(bad, target.device), spec.batch, super_batch=SUPER_BATCH
            ),
            ("seeds",),
            bad,
            f"{what}, {bad} alone",
        )
        assert_exact(
            epoch(A, fn, seeds, spec.batch, super_batch=SUPER_BATCH),
            ref,
            f"{what}, the epoch after {bad}",
        )


# ----------------------------------------------------------------------------- listed rows
#: the modes LADIES's listed rows run through (name: the test above that runs it); the
#: graph in pinned host memory is read as int64 (UVA)
LISTED_MODES = {
    "one_mini_batch": ("test_one_mini_batch", (LISTED_64, LISTED_32)),
    "failed_call": ("test_a_failed_call_draws_nothing", (LISTED_64, LISTED_32)),
    "cuda_graph_replay": ("test_cuda_graph_replay", (LISTED_64, LISTED_32)),
    "loader_super_batch": ("test_loader_super_batch", (LISTED_64, LISTED_32)),
    "uva": ("test_uva", (LISTED_64,)),
    "uva_cache": ("test_uva_cache", (LISTED_64,)),
}


@pytest.mark.parametrize(
    "mode, target",
    [
        pytest.param(mode, t.values[0], id=f"{mode}-{t.id}", marks=t.marks)
        for mode, (_, ts) in LISTED_MODES.items()
        for t in ts
    ],
    indirect=["target"],
)
def test_listed_ladies(mode, target, monkeypatch):
    """LADIES with its rows listed on the device (``gsample/backend/cuda/listed.py``'s
    ``gs_listed_*`` kernels) through each mode above: every bad id refused, the next call
    exact; and the device's listing ran (not the host-keyed path's)."""
    on_device, made = listed._on_device, []

    def counted(*args):
        out = on_device(*args)
        made.append(out is not None)
        return out

    monkeypatch.setattr(listed, "_on_device", counted)
    globals()[LISTED_MODES[mode][0]]("ladies", target)
    assert any(made), f"{mode}: no sample was listed on the device"


# ----------------------------------------------------------------------------- features
def table(A: gs.Matrix) -> torch.Tensor:
    """A feature table of ``A``'s nodes, on the CPU."""
    g = torch.Generator().manual_seed(3)
    return torch.randn(A.num_nodes, FEATURES, generator=g)


def check_gather(name: str, target: Target, features: torch.Tensor, cache: int, mode: str) -> None:
    """A loader's feature store (``mode``: where its rows come from) called with a user's
    ``n_id`` holding a bad id raises the documented error naming ``n_id``; the good
    gather right after returns the reference rows, and a new loader the reference epoch."""
    spec = specs()[name]
    A = graph(name, target.device)
    fn = sampler(name, target)
    what = f"{name}, feature gather ({mode})"
    seeds = seeds_for(name, A, target, 2 * spec.batch)

    def run_epoch():
        loader = gs.DataLoader(
            A,
            fn,
            seeds,
            spec.batch,
            shuffle=False,
            seed=EPOCH_SEED,
            features=features,
            feature_cache=cache,
        )
        return loader, [(b.out, b.n_id, b.x) for b in loader]

    loader, ref = run_epoch()
    store = loader.feature_store
    assert store.mode == mode, f"{what}: the store reads its rows as {store.mode!r}"
    assert (store.cache is not None) == bool(cache), f"{what}: cache {store.cache_bytes} bytes"
    n_id = ref[0][1]
    rows = store(n_id)
    assert_exact(rows, ref[0][2], f"{what}, the store's rows")
    for bad in bad_ids(A.num_nodes):
        bad_n_id, pos = planted(n_id, bad, name, what)
        raises_index_error(
            lambda bad_n_id=bad_n_id: store(bad_n_id),
            ("n_id",),
            bad,
            f"{what}, {bad} at {pos} of {len(n_id)}",
        )
        assert_exact(store(n_id), rows, f"{what}, after {bad}")
        raises_index_error(
            lambda bad=bad: store(alone(bad, target.device)), ("n_id",), bad, f"{what}, {bad} alone"
        )
        assert_exact(store(n_id[:1]), rows[:1], f"{what}, one row after {bad}")
    assert_exact(run_epoch()[1], ref, f"{what}, a new loader's epoch")


@targets(GATHER)
@pytest.mark.parametrize("name", GATHERING)
def test_feature_gather(name, target):
    """The table on the graph's device: indexed there."""
    A = graph(name, target.device)
    check_gather(name, target, table(A).to(target.device), 0, "device")


@targets(UVA)
@pytest.mark.parametrize("name", GATHERING)
def test_feature_gather_cached(name, target):
    """A CPU table for a GPU graph behind a cache of the highest in-degree nodes' rows (a
    quarter of them): pinned and read through UVA by CuPy's gather kernel (without CuPy
    the CPU gathers), the cached rows from the device. (A loader makes no cache where the
    table is on the graph's device already: a CPU graph has none.)"""
    A = graph(name, target.device)
    features = table(A)
    cache = SLOT_BYTES * A.num_nodes + features[0].numel() * features.element_size() * (
        A.num_nodes // 4
    )
    check_gather(name, target, features, cache, "uva" if _cupy() else "host")


@targets(UVA)
@pytest.mark.parametrize("name", GATHERING)
def test_feature_gather_uva(name, target):
    """A CPU table for a GPU graph: pinned, its rows read by the GPU through UVA."""
    pytest.importorskip("cupy")
    A = graph(name, target.device)
    check_gather(name, target, table(A), 0, "uva")


def _cupy() -> bool:
    try:
        # import here: the optional dependency; importing it is the check (an installed CuPy
        # that fails to import counts as none, which importlib.util.find_spec would miss)
        import cupy  # noqa: F401
    except ImportError:
        return False
    return True
