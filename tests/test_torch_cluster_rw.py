"""``benchmarks/torch_cluster_rw.py``: torch_cluster's random-walk operator, installed or built
from its sdist, walks along edges.

It compiles C++ (about a minute; CUDA too where a GPU is present), so it runs only with
``GSAMPLE_BUILD_TORCH_CLUSTER=1``. The sdist is ``$GSAMPLE_TORCH_CLUSTER_SDIST``, else
``.whl/torch_cluster-1.6.3.tar.gz`` in the checkout (an installed torch_cluster is used first).
"""

import os
import pathlib
import sys

import pytest
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))

import torch_cluster_rw as R

ROOT = pathlib.Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    os.environ.get("GSAMPLE_BUILD_TORCH_CLUSTER") != "1",
    reason="compiles torch_cluster's random walk: set GSAMPLE_BUILD_TORCH_CLUSTER=1",
)

SDIST = pathlib.Path(
    os.environ.get("GSAMPLE_TORCH_CLUSTER_SDIST", ROOT / ".whl" / "torch_cluster-1.6.3.tar.gz")
)
DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=[
            pytest.mark.cuda,
            pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
        ],
    ),
]


@pytest.fixture(scope="module")
def op():
    op, version = R.load(SDIST if SDIST.is_file() else None)
    if op is None:
        pytest.skip(f"torch_cluster is not installed and {SDIST} is not present")
    assert version and version[0].isdigit()
    return op


def ring(n):
    """Node ``i``'s edges go to ``i - 1`` and ``i + 1`` (mod ``n``)."""
    rowptr = torch.arange(0, 2 * n + 1, 2)
    col = torch.stack([torch.arange(n) - 1, torch.arange(n) + 1], 1).remainder(n).flatten()
    return rowptr, col


def random_graph(n, m, seed):
    """A random CSR graph with repeats, self-loops and nodes without edges."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, n, (m,), generator=g) // 2 * 2  # odd nodes have no edges
    dst = torch.randint(0, n, (m,), generator=g)
    order = torch.argsort(src * n + dst)
    src, dst = src[order], dst[order]
    rowptr = torch.zeros(n + 1, dtype=torch.int64)
    rowptr[1:] = torch.cumsum(torch.bincount(src, minlength=n), 0)
    return rowptr, dst


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("p, q", [(1.0, 1.0), (0.5, 2.0)])
def test_ring_walks_follow_edges(op, device, p, q):
    rowptr, col = ring(500)
    torch.manual_seed(0)
    start = torch.arange(500).repeat(3).to(device)
    nodes, _ = R.check_walks(op, rowptr.to(device), col.to(device), start, 16, p, q)
    step = (nodes[:, 1:] - nodes[:, :-1]).remainder(500)
    assert bool(((step == 1) | (step == 499)).all())  # one node left or right


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("p, q", [(1.0, 1.0), (2.0, 0.25)])
def test_random_graph_walks_follow_edges(op, device, p, q):
    rowptr, col = random_graph(2000, 12_000, seed=1)
    torch.manual_seed(1)
    start = torch.randint(0, 2000, (4000,)).to(device)
    nodes, edges = R.check_walks(op, rowptr.to(device), col.to(device), start, 12, p, q)
    odd = start % 2 == 1
    assert bool((edges[odd] == -1).all()) and bool((nodes[odd] == start[odd, None]).all())
    assert bool((edges[~odd, 0] >= 0).all())


def test_version_from_the_sdist():
    if not SDIST.is_file():
        pytest.skip(f"{SDIST} not present")
    import tarfile

    with tarfile.open(SDIST) as tar:
        assert R._version(tar, str(SDIST)) == SDIST.name[len("torch_cluster-") : -len(".tar.gz")]
