"""Shared fixtures: devices to parametrise over, the real SNAP graphs when present, and a
recorder of the ops the torch backend runs (`ran_ops`)."""

import os
import pathlib

import hypothesis
import pytest
import torch

import gsample as gs
from gsample.backend import get_backend

# the layout pass prices plans with the built-in cost table, not a calibration a developer
# may have cached for this machine: every test sees the same plans
os.environ.setdefault("GSAMPLE_CALIBRATION", "default")
# under pytest-xdist each worker is one process of its own: one intra-op thread each keeps
# 2 workers on 2 cores from oversubscribing them (small ops slowed down up to 100x)
if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)

# property tests draw the same examples every run (fixed seeds, as every other test): a
# failure is reproducible, and CI does not flake on an example no earlier run drew
hypothesis.settings.register_profile("gsample", derandomize=True)
hypothesis.settings.load_profile("gsample")


DATA = pathlib.Path(
    os.environ.get(
        "GSAMPLE_DATA", pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data"
    )
)

_GPU = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]
DEVICES = [
    "cpu",
    pytest.param("cuda", marks=_GPU),  # the torch backend on CUDA tensors
    pytest.param("cuda-kernels", marks=_GPU),  # the CUDA backend: CuPy kernels
]


@pytest.fixture(params=DEVICES)
def device(request):
    """Each test using it runs on the CPU and, where a GPU exists, on CUDA tensors with
    the torch backend (``gs.use_backend("torch")``: the default, ``"auto"``, would pick the
    kernels there) and again with the CUDA backend (``gs.use_backend("cuda")``: eager
    ops and compiled samplers made without ``backend=`` run its kernels)."""
    if request.param == "cuda-kernels":
        with gs.use_backend("cuda"):
            yield torch.device("cuda")
    elif request.param == "cuda":
        with gs.use_backend("torch"):
            yield torch.device("cuda")
    else:
        yield torch.device(request.param)


@pytest.fixture(autouse=True)
def _backend_setting_restored():
    """A test that sets the backend with a plain ``gs.use_backend(name)`` call leaves the
    next test the setting it found."""
    before = gs.current_backend()
    yield
    gs.use_backend(before)


def snap_path(name: str) -> pathlib.Path:
    """Path of a SNAP graph in ../shared/data; skips the test when it is absent."""
    p = DATA / name
    if not p.exists():
        pytest.skip(f"{p} not present")
    return p


@pytest.fixture(scope="session")
def notredame():
    """web-NotreDame as a gs.Matrix (skipped when ../shared/data is absent)."""
    return gs.datasets.read_snap(snap_path("web-NotreDame.txt.gz"))


@pytest.fixture(scope="session")
def small_graph():
    """A 2,000-node R-MAT graph with weights, on the CPU."""
    return gs.datasets.rmat(2000, 30000, seed=1, weighted=True)


@pytest.fixture
def ran_ops(monkeypatch):
    """Records every op the torch backend runs from now on."""
    backend = get_backend("torch")
    calls = []
    original = backend.run

    def run(ir_op, *args, **attrs):
        calls.append(ir_op)
        return original(ir_op, *args, **attrs)

    monkeypatch.setattr(backend, "run", run)
    return calls
