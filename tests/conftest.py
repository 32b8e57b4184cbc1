"""Shared fixtures: devices to parametrise over and the real SNAP graphs when present."""
import os
import pathlib

import pytest
import torch

import gsample as gs

DATA = pathlib.Path(os.environ.get("GSAMPLE_DATA", pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data"))

DEVICES = [
    "cpu",
    pytest.param("cuda", marks=[pytest.mark.cuda,
                                pytest.mark.skipif(not torch.cuda.is_available(),
                                                   reason="no CUDA GPU")]),
]


@pytest.fixture(params=DEVICES)
def device(request):
    """Each test using it runs on the CPU and, where a GPU exists, on CUDA tensors."""
    return torch.device(request.param)


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
