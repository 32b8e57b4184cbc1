"""The backend by default (issue 32, item 3): ``"auto"`` picks the CUDA backend's kernels for
a graph on a GPU where CuPy runs and the torch backend otherwise, for eager ops and compiled
samplers alike; ``gs.use_backend`` as a call and as a context manager; one warning when
CuPy is missing on a GPU; ``gs.explain`` naming the backend; the ``passes=`` and ``file=``
errors.

The CPU tests simulate a GPU where they need one: the CuPy probe
(``gsample.backend._probe_cuda``) is replaced, and a device ``cuda:0`` is only looked at,
never allocated on. The tests marked ``cuda`` run on a GPU with CuPy.
"""

import functools
import pathlib
import re
import threading
import types
import warnings

import pytest
import torch
from helpers import graphsage, random_seeds

import gsample as gs
import gsample.backend as backend_mod
from gsample.backend import BackendWarning, eager_backend
from gsample.passes import cse, dce

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def _same_blocks(x, y) -> bool:
    return len(x) == len(y) and all(
        all(torch.equal(a.cpu(), b.cpu()) for a, b in zip(p.edges(), q.edges()))
        and torch.equal(p.col_ids.cpu(), q.col_ids.cpu())
        for p, q in zip(x, y)
    )


@pytest.fixture
def probe(monkeypatch):
    """A simulated CuPy probe: ``probe.result`` is what it reports (None: kernels run) and
    ``probe.calls`` the GPUs it was asked about; the probe cache and the once-per-process
    warning start fresh (and are restored after the test)."""
    state = types.SimpleNamespace(result="CuPy is not installed", calls=[])

    def fake(index):
        state.calls.append(index)
        return state.result

    monkeypatch.setattr(backend_mod, "_probe_cuda", fake)
    monkeypatch.setattr(backend_mod, "_PROBED", {})
    monkeypatch.setattr(backend_mod, "_WARNED", False)
    return state


class _OnGpu:
    """A graph's CSC reporting ``cuda:0`` as its device (its tensors stay on the CPU)."""

    device = torch.device("cuda", 0)
    indptr = types.SimpleNamespace(device=device, is_cuda=True)

    def __init__(self, csc):
        self._csc = csc

    def __getattr__(self, name):
        return getattr(self._csc, name)


def _gpu_graph(monkeypatch, A):
    """``A`` (every gs.Matrix, for the test) reporting ``cuda:0`` as its device: what the
    backend resolution looks at."""
    monkeypatch.setattr(gs.Matrix, "device", property(lambda self: _OnGpu.device))
    monkeypatch.setattr(gs.Matrix, "csc", property(lambda self: _OnGpu(self._csc)))
    return A


# ----------------------------------------------------------------------------- "auto"
def test_auto_is_the_default_and_a_cpu_graph_runs_torch(small_graph):
    assert gs.current_backend() == "auto"
    A, seeds = small_graph, random_seeds(16, 1, small_graph.num_nodes)
    assert gs.backend_for(A) == gs.backend_for(A.csc) == gs.backend_for("cpu") == "torch"
    # a graph on the CPU runs the torch code whatever is asked for
    assert gs.backend_for(A, "cuda") == gs.backend_for(seeds, "torch") == "torch"
    assert eager_backend(A.csc).name == "torch"
    f = gs.compile(graphsage)
    assert f.backend is None and f.backend_for(A) == "torch"
    gs.manual_seed(3)
    got = f(A, seeds)
    gs.manual_seed(3)
    assert _same_blocks(got, graphsage(A, seeds))
    assert f.lowered(A, seeds).backend == "torch"
    assert [key[-1] for key in f._cache] == ["torch"]  # resolved before the cache key


def test_auto_shares_the_torch_program_and_forced_names_keep_theirs(small_graph):
    """The cache key holds the resolved backend: on the CPU ``"auto"`` and ``"torch"`` are
    one program; ``gs.use_backend("cuda")`` (a CPU graph: the torch code, priced for the
    CUDA backend) another."""
    A, seeds = small_graph, random_seeds(16, 2, small_graph.num_nodes)
    f = gs.compile(graphsage)
    f(A, seeds)
    with gs.use_backend("torch"):
        f(A, seeds)
    assert f.traces == 1
    with gs.use_backend("cuda"):
        f(A, seeds)
    assert f.traces == 2 and sorted(key[-1] for key in f._cache) == ["cuda", "torch"]
    pinned = gs.compile(graphsage, backend="auto")
    with gs.use_backend("cuda"):  # backend= wins over the setting
        pinned(A, seeds)
    assert pinned.backend == "auto" and [key[-1] for key in pinned._cache] == ["torch"]


def test_auto_resolves_per_graph_device_in_compiled_samplers(small_graph, probe, monkeypatch):
    """A graph on a GPU: ``"cuda"`` where the probe says CuPy's kernels run, ``"torch"``
    where it does not; the two resolutions are different cache keys."""
    A, seeds = small_graph, random_seeds(16, 3, small_graph.num_nodes)
    f = gs.compile(graphsage)
    dynamic, static, n = f._split((A, seeds), {})
    cpu_key = f._key(dynamic, static, n, f._backend(dynamic))
    _gpu_graph(monkeypatch, A)
    probe.result = None
    assert f._backend(dynamic) == f.backend_for(A) == gs.backend_for(A) == "cuda"
    gpu_key = f._key(dynamic, static, n, f._backend(dynamic))
    assert gpu_key != cpu_key and gpu_key[-1] == "cuda" and cpu_key[-1] == "torch"
    assert gs.compile(graphsage, backend="torch")._backend(dynamic) == "torch"
    with gs.use_backend("torch"):
        assert f._backend(dynamic) == gs.backend_for(A) == "torch"
    assert probe.calls == [0]  # probed once for the process


def _csc_on(device: str):
    """A stand-in for a sparse matrix on ``device`` (what an eager op's backend reads)."""
    device = torch.device(device)
    return types.SimpleNamespace(
        indptr=types.SimpleNamespace(device=device, is_cuda=device.type == "cuda")
    )


def test_eager_ops_resolve_auto_per_matrix(probe, small_graph):
    probe.result = None
    assert eager_backend(_csc_on("cuda:0")).name == "cuda"
    assert eager_backend(_csc_on("cpu")).name == eager_backend(small_graph.csc).name == "torch"
    assert eager_backend(None).name == "torch"
    with gs.use_backend("torch"):
        assert eager_backend(_csc_on("cuda:0")).name == "torch"
    with gs.use_backend("cuda"):  # a CPU matrix then runs the torch code
        assert eager_backend(_csc_on("cpu")).name == "cuda"
    assert probe.calls == [0]
    backend_mod._PROBED.clear()
    probe.result = "CuPy is not installed"
    with pytest.warns(BackendWarning):
        assert eager_backend(_csc_on("cuda:0")).name == "torch"


def test_backend_for_takes_graphs_tensors_and_devices(small_graph):
    assert gs.backend_for(torch.device("cpu")) == gs.backend_for(torch.zeros(2)) == "torch"
    with pytest.raises(TypeError, match=r"graph: expected a gs\.Matrix, a tensor or a device"):
        gs.backend_for([1, 2])
    with pytest.raises(
        ValueError, match="backend: unknown backend 'gpu'; expected one of 'auto', 'torch', 'cuda'"
    ):
        gs.backend_for(small_graph, "gpu")
    with pytest.raises(ValueError, match="'auto' picks a backend per graph"):
        backend_mod.get_backend("auto")


# ----------------------------------------------------------------------------- the warning
def test_missing_cupy_on_a_gpu_warns_once_per_process(probe):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert gs.backend_for("cuda:0") == "torch"
        assert gs.backend_for(torch.device("cuda", 0)) == "torch"
        assert gs.backend_for("cuda:1") == "torch"  # another GPU: probed, no warning
        assert gs.backend_for("cuda:1") == "torch"
    ours = [w for w in seen if issubclass(w.category, BackendWarning)]
    assert len(ours) == 1, [str(w.message) for w in seen]
    text = str(ours[0].message)
    assert "cuda:0" in text and "CuPy is not installed" in text
    assert "torch backend runs instead" in text and "pip install gsample[cuda]" in text
    assert "gs.use_backend('torch')" in text
    assert ours[0].filename == __file__  # points at the user's line
    assert probe.calls == [0, 1]  # once per GPU


def test_a_kernel_that_fails_to_launch_warns_with_the_reason(probe):
    probe.result = "a CuPy kernel does not compile or launch (CUDADriverError: no kernel image)"
    with pytest.warns(BackendWarning, match="no kernel image.*pip install gsample\\[cuda\\]"):
        assert gs.backend_for("cuda:0") == "torch"


def test_no_probe_and_no_warning_where_auto_is_not_asked_for(probe):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        assert gs.backend_for("cuda:0", "torch") == "torch"
        assert gs.backend_for("cuda:0", "cuda") == "cuda"
        with gs.use_backend("torch"):
            assert gs.backend_for("cuda:0") == "torch"
        assert gs.backend_for("cpu") == "torch"
        probe.result = None
        assert gs.backend_for("cuda:0") == "cuda"  # kernels run: no warning
    assert probe.calls == [0]


# ----------------------------------------------------------------------------- use_backend
def test_use_backend_as_a_plain_call_sets_it():
    gs.use_backend("torch")
    assert gs.current_backend() == "torch"
    gs.use_backend("cuda")
    assert gs.current_backend() == "cuda"
    gs.use_backend("auto")
    assert gs.current_backend() == "auto"


def test_use_backend_as_a_context_manager_restores_nested_and_after_errors():
    with gs.use_backend("torch") as ctx:
        assert ctx.name == "torch" and gs.current_backend() == "torch"
        with gs.use_backend("cuda"):
            assert gs.current_backend() == "cuda"
        assert gs.current_backend() == "torch"
        with pytest.raises(RuntimeError), gs.use_backend("cuda"):
            raise RuntimeError("inside")
        assert gs.current_backend() == "torch"
    assert gs.current_backend() == "auto"


def test_a_plain_call_inside_a_with_is_undone_at_its_exit():
    gs.use_backend("torch")
    with gs.use_backend("cuda"):
        gs.use_backend("torch")
        gs.use_backend("auto")
        assert gs.current_backend() == "auto"
    assert gs.current_backend() == "torch"


def test_a_use_backend_object_entered_later_or_again():
    ctx = gs.use_backend("cuda")  # a call: set now
    assert gs.current_backend() == "cuda"
    gs.use_backend("torch")
    for _ in range(2):
        with ctx:
            assert gs.current_backend() == "cuda"
        assert gs.current_backend() == "torch"


def test_use_backend_is_per_thread():
    """A plain call in another thread leaves this thread's setting alone."""
    seen = []

    def other():
        gs.use_backend("cuda")
        seen.append(gs.current_backend())

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == ["cuda"] and gs.current_backend() == "auto"


@pytest.mark.parametrize("name", ["gpu", "CUDA", "", "cupy"])
def test_unknown_backend_names_raise_and_change_nothing(name):
    message = f"name: unknown backend {name!r}; expected one of 'auto', 'torch', 'cuda'"
    with pytest.raises(ValueError, match=re.escape(message)):
        gs.use_backend(name)
    with pytest.raises(ValueError, match=re.escape(message)), gs.use_backend(name):
        pass
    assert gs.current_backend() == "auto"
    with pytest.raises(ValueError, match=re.escape(f"backend: unknown backend {name!r}")):
        gs.compile(graphsage, backend=name)
    with pytest.raises(ValueError, match=re.escape(f"backend: unknown backend {name!r}")):
        gs.compile(backend=name)  # the decorator form: at once


def test_a_backend_name_that_is_not_a_string_raises_a_type_error():
    with pytest.raises(
        TypeError,
        match="name: expected a backend name, one of 'auto', 'torch', 'cuda', got NoneType",
    ):
        gs.use_backend(None)
    with pytest.raises(TypeError, match="backend: expected a backend name"):
        gs.compile(graphsage, backend=1)


def test_the_device_fixture_picks_the_backend_its_name_says(device):
    """``cpu`` and ``cuda`` run the torch backend, ``cuda-kernels`` the CUDA backend (a GPU
    would make ``"auto"`` pick the kernels for ``cuda``: the fixture forces the torch one)."""
    kernels = gs.current_backend() == "cuda"
    assert gs.backend_for(device) == ("cuda" if kernels else "torch")
    assert gs.current_backend() in (
        ("torch",) if device.type == "cuda" and not kernels else ("auto", "cuda")
    )


# ----------------------------------------------------------------------------- explain
def test_explain_names_the_backend_and_why(small_graph):
    A, seeds = small_graph, torch.arange(8)
    text = gs.explain(graphsage, A, seeds, file=False)
    assert "  backend 'torch' (auto: the graph is on the CPU)" in text.splitlines()
    assert "lowered program (gsample.runtime, backend 'torch' on cpu)" in text
    text = gs.explain(gs.compile(graphsage, backend="torch"), A, seeds, file=False)
    assert "  backend 'torch' (backend='torch')" in text.splitlines()
    with gs.use_backend("cuda"):
        text = gs.explain(graphsage, A, seeds, file=False)
    assert (
        "backend 'torch' (gs.use_backend('cuda'), but the graph is on the CPU: every op "
        "runs the torch backend's code)"
    ) in text


def test_explain_on_a_gpu_graph_says_auto_and_the_fallback(small_graph, probe, monkeypatch):
    """The report's backend line for a graph on a GPU, kernels running or not (the line
    only; the rest of the report would lower for the GPU)."""
    from gsample.compiler.explain import _backend_text

    f = gs.compile(graphsage)
    dynamic, _, _ = f._split((small_graph, torch.arange(8)), {})
    _gpu_graph(monkeypatch, small_graph)
    with pytest.warns(BackendWarning):
        assert _backend_text(f, dynamic) == (
            "backend 'torch' (auto: the graph is on cuda:0, but the CUDA backend's kernels "
            "cannot run there: CuPy is not installed; pip install gsample[cuda])"
        )
    backend_mod._PROBED.clear()
    probe.result = None
    assert _backend_text(f, dynamic).startswith(
        "backend 'cuda' (auto: the graph is on cuda:0 and CuPy's kernels run there"
    )


# ----------------------------------------------------------------------------- passes=
def test_passes_must_be_a_list(small_graph):
    start = "passes: expected a list of passes (Graph -> Graph callables, (callable, why) "
    with pytest.raises(
        TypeError, match=re.escape(start) + ".*got the str 'cse'; write passes=\\['cse'\\]"
    ):
        gs.compile(graphsage, passes="cse")
    with pytest.raises(TypeError, match=re.escape(start)):
        gs.compile(passes="cse")  # the decorator form: at once
    with pytest.raises(TypeError, match="got function; write passes=\\[cse\\]"):
        gs.compile(graphsage, passes=cse)
    with pytest.raises(
        TypeError,
        match=re.escape(
            "passes[1]: expected a Graph -> Graph "
            "callable, a (callable, why) pair or a "
            "pass name, got int"
        ),
    ):
        gs.compile(graphsage, passes=[cse, 3])
    with pytest.raises(
        ValueError,
        match=re.escape(
            "passes[0]: no pass named 'CSE' in "
            "gsample.passes.PIPELINE; its passes: "
            "'cse', 'preprocess'"
        ),
    ):
        gs.compile(graphsage, passes=["CSE"])
    with pytest.raises(TypeError, match=re.escape(start)):
        gs.explain(graphsage, small_graph, torch.arange(8), passes="cse", file=False)


def test_pass_names_run_the_pipeline_passes(small_graph):
    A, seeds = small_graph, random_seeds(32, 4, small_graph.num_nodes)
    by_name, by_fn = (
        gs.compile(graphsage, passes=["cse", "dce"]),
        gs.compile(graphsage, passes=(cse, dce)),
    )
    assert [e[0] for e in by_name.passes] == [cse, dce]
    assert str(by_name.program(A, seeds)) == str(by_fn.program(A, seeds))
    gs.manual_seed(1)
    x = by_name(A, seeds)
    gs.manual_seed(1)
    assert _same_blocks(x, by_fn(A, seeds))
    text = gs.explain(graphsage, A, seeds, passes=["cse", "dce"], file=False)
    assert "pass 1/2 cse" in text and "pass 2/2 dce" in text
    assert "why here: merge repeated pure computations first" in text  # the pipeline's why


# ----------------------------------------------------------------------------- file=
def test_explain_writes_to_a_path(small_graph, tmp_path):
    A, seeds = small_graph, torch.arange(8)
    text = gs.explain(graphsage, A, seeds, file=str(tmp_path / "out.txt"))
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == text
    assert text.startswith("gs.explain: graphsage(")
    (tmp_path / "old.txt").write_text("stale " * 10_000)
    assert gs.explain(graphsage, A, seeds, file=tmp_path / "old.txt") == (
        tmp_path / "old.txt"
    ).read_text(encoding="utf-8")  # os.PathLike, overwritten


@pytest.mark.parametrize("bad", [3, True, b"out.txt", object()])
def test_explain_refuses_other_files_before_tracing(small_graph, bad):
    def broken(A, seeds):
        raise AssertionError("traced although file= was bad")

    with pytest.raises(
        TypeError,
        match=re.escape(
            "file: expected a file-like object (with "
            "write()), a path (str or os.PathLike), "
            "None (stdout) or False (no output), got "
        ),
    ):
        gs.explain(broken, small_graph, torch.arange(8), file=bad)


# ----------------------------------------------------------------------------- README tour
def test_the_readme_tour_runs_as_written():
    """The tour's code block, as printed, on this machine's default device: on a GPU with
    CuPy its sampler resolves to the CUDA backend (full speed without ``backend=``)."""
    text = README.read_text(encoding="utf-8")
    tour = re.search(r"## A short tour\n\n```python\n(.*?)```", text, re.S).group(1)
    assert "backend=" not in tour and "use_backend" not in tour
    space: dict = {}
    exec(compile(tour, str(README), "exec"), space)
    A, sampler = space["A"], space["graphsage"]
    assert isinstance(sampler, gs.CompiledSampler) and sampler.traces == 1
    assert space["src"].numel() > 0
    gpu = (
        torch.cuda.is_available() and backend_mod.cuda_problem(A.device) is None
        if A.device.type == "cuda"
        else False
    )
    want = "cuda" if gpu else "torch"
    assert gs.backend_for(A) == sampler.backend_for(A) == want
    assert [key[-1] for key in sampler._cache] == [want]


# ----------------------------------------------------------------------------- on a GPU
def _gpu_and_cupy():
    pytest.importorskip("cupy")
    A = gs.datasets.rmat(20_000, 300_000, seed=5, device="cuda")
    assert backend_mod.cuda_problem(A.device) is None, backend_mod.cuda_problem(A.device)
    return A


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("fanouts", [(5, 3), (25, 10)])
def test_gpu_bare_compile_is_the_cuda_backend(fanouts):
    A = _gpu_and_cupy()
    seeds = random_seeds(512, 6, A.num_nodes).cuda()
    bare, pinned = gs.compile(graphsage), gs.compile(graphsage, backend="cuda")
    assert gs.backend_for(A) == bare.backend_for(A) == "cuda"
    gs.manual_seed(2)
    got = bare(A, seeds, fanouts)
    gs.manual_seed(2)
    want = pinned(A, seeds, fanouts)
    assert _same_blocks(got, want)
    assert bare.lowered(A, seeds, fanouts).backend == "cuda"
    assert [key[-1] for key in bare._cache] == ["cuda"]
    assert "  backend 'cuda' (auto: the graph is on cuda:0" in gs.explain(
        bare, A, seeds, fanouts, file=False
    )
    gs.manual_seed(2)
    eager = graphsage(A, seeds, fanouts)  # eager ops: the kernels too
    assert eager_backend(A.csc).name == "cuda"
    assert _same_blocks(eager, want)
    with gs.use_backend("torch"):  # the reference, still the same samples
        assert bare.backend_for(A) == "torch"
        gs.manual_seed(2)
        assert _same_blocks(bare(A, seeds, fanouts), want)
    assert sorted(key[-1] for key in bare._cache) == ["cuda", "torch"]


def _loader_outputs(A, sampler, seeds, **options):
    return [b.out for b in gs.DataLoader(A, sampler, seeds, 256, seed=3, **options)]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_gpu_bare_super_batched_and_walks_equal_the_cuda_backend():
    A = _gpu_and_cupy()
    seeds = random_seeds(2048, 7, A.num_nodes).cuda()
    bare, pinned = gs.compile(graphsage), gs.compile(graphsage, backend="cuda")
    for options in ({}, {"super_batch": 4}):
        got = _loader_outputs(A, bare, seeds, **options)
        want = _loader_outputs(A, pinned, seeds, **options)
        assert len(got) == len(want) == 8
        assert all(_same_blocks(x, y) for x, y in zip(got, want))

    def deepwalk(A, seeds, length=20):
        return A.random_walk(seeds, length)

    walk_bare = functools.partial(gs.compile(deepwalk), length=20)
    walk_cuda = functools.partial(gs.compile(deepwalk, backend="cuda"), length=20)
    for options in ({}, {"super_batch": 4}):
        got = _loader_outputs(A, walk_bare, seeds, **options)
        want = _loader_outputs(A, walk_cuda, seeds, **options)
        assert all(torch.equal(x, y) for x, y in zip(got, want))
    gs.manual_seed(4)
    eager = deepwalk(A, seeds[:256])
    with gs.use_backend("cuda"):
        gs.manual_seed(4)
        assert torch.equal(eager, deepwalk(A, seeds[:256]))
