"""``gsample.bench.peers``: each peer samples what its gsample workload samples (checked on its
first mini-batch, and in law for torch_cluster's walks), and a peer that cannot run here is
recorded with the reason instead of failing the run.

torch_cluster compiles (about a minute) and runs only with ``GSAMPLE_BUILD_TORCH_CLUSTER=1``
(sdist: ``$GSAMPLE_TORCH_CLUSTER_SDIST`` or ``.whl/torch_cluster-1.6.3.tar.gz``); PyG's
loaders need torch-sparse or pyg-lib (an extra); DGL does not import with torch >= 2.3.
"""

import importlib
import importlib.util
import os
import pathlib

import pytest
import torch
from scipy import stats

import gsample as gs
from gsample.bench import cli, peers, workloads

ROOT = pathlib.Path(__file__).resolve().parents[2]
SDIST = pathlib.Path(
    os.environ.get("GSAMPLE_TORCH_CLUSTER_SDIST", ROOT / ".whl" / "torch_cluster-1.6.3.tar.gz")
)
SMALL = [
    "--quick",
    "--device",
    "cpu",
    "--graph",
    "rmat:4000:40000",
    "--seeds",
    "512",
    "--repeats",
    "1",
    "--super-batch",
    "2",
    "--batch-size",
    "128",
    "--walk-length",
    "10",
    "--no-plots",
    "--modes",
    "eager",
]
workloads.import_repo(workloads.repo_root())


def _harness(tmp_path, *argv):
    rec = cli.run(cli.parse([*SMALL, "--out", str(tmp_path), *argv]))
    assert rec["ok"], rec["failures"]
    return rec["workloads"]


@pytest.fixture(scope="module")
def cluster():
    if (
        importlib.util.find_spec("torch_cluster") is None
        and os.environ.get("GSAMPLE_BUILD_TORCH_CLUSTER") != "1"
    ):
        pytest.skip("compiles torch_cluster's random walk: set GSAMPLE_BUILD_TORCH_CLUSTER=1")
    op, version = peers.torch_cluster_op(SDIST if SDIST.is_file() else None)
    if op is None:
        pytest.skip(f"torch_cluster: {version}")
    return op


def test_torch_cluster_walks_are_timed_beside_gsample(cluster, tmp_path):
    got = _harness(
        tmp_path,
        "--workloads",
        "deepwalk",
        "node2vec",
        "--peers",
        "torch_cluster",
        "--torch-cluster-sdist",
        str(SDIST),
    )
    for name in ("deepwalk", "node2vec"):
        row = got[name]["modes"]["torch_cluster random_walk"]
        assert row["kind"] == "peer" and row["units"] > 0 and row["units_per_s"] > 0
        assert "walks along in-edges" in row["note"]
        # the same law: moved steps within 10% of gsample's over 512 walks of 10 steps
        assert row["units"] == pytest.approx(got[name]["modes"]["gsample eager"]["units"], rel=0.1)


def _walks(A, seeds, length, p, q, op):
    import deepwalk
    import node2vec

    gs.manual_seed(0)
    ours = (
        deepwalk.deepwalk(A, seeds, length)
        if p == q == 1
        else node2vec.node2vec(A, seeds, length, p, q)
    )
    torch.manual_seed(0)
    theirs, moved = op(A.csc.indptr, A.csc.rows, seeds, length, p, q)
    theirs = torch.where(torch.cat([torch.ones_like(moved[:, :1]), moved], 1) >= 0, theirs, -1)
    return ours, theirs


def test_torch_cluster_deepwalk_has_gsamples_walk_lengths(cluster):
    A = gs.datasets.rmat(3000, 9000, seed=3)  # sparse: many walks stop early
    seeds = torch.arange(3000).repeat(2)
    ours, theirs = _walks(A, seeds, 8, 1.0, 1.0, cluster)
    # torch_cluster stands still where gsample stops: count moves up to the first stop
    lengths = [(w[:, 1:] >= 0).cumprod(1).sum(1) for w in (ours, theirs)]
    assert lengths[0].float().mean() < 7.5  # the test sees early stops
    assert stats.ks_2samp(lengths[0].numpy(), lengths[1].numpy()).pvalue > 1e-3


def test_torch_cluster_node2vec_returns_as_often_as_gsample(cluster):
    """p = 0.25 makes going back to the previous node 4x as likely: the share of walks with
    x2 == x0 tells whether p and q reach torch_cluster in the right order."""
    rows, cols, _ = gs.datasets.rmat(2000, 20000, seed=4).edges()
    A = gs.Matrix.from_edge_index(
        torch.stack([torch.cat([rows, cols]), torch.cat([cols, rows])]), 2000
    )  # both directions: x1 -> x0 too
    seeds = torch.arange(2000).repeat(3)
    ours, theirs = _walks(A, seeds, 2, 0.25, 4.0, cluster)
    back = [int(((w[:, 2] == w[:, 0]) & (w[:, 2] >= 0)).sum()) for w in (ours, theirs)]
    walked = [int((w[:, 2] >= 0).sum()) for w in (ours, theirs)]
    table = [[b, n - b] for b, n in zip(back, walked)]
    assert back[0] > 0.1 * walked[0]  # the bias is there (p = q = 1: 4%)
    assert stats.chi2_contingency(table).pvalue > 1e-3


def test_a_peer_that_cannot_build_is_recorded_not_raised(tmp_path):
    peers._CLUSTER.clear()
    try:
        op, why = peers.torch_cluster_op(tmp_path / "torch_cluster-9.9.9.tar.gz")
    finally:
        peers._CLUSTER.clear()
    assert op is None and why.startswith("not built: FileNotFoundError")


def test_dgl_is_run_where_it_imports_else_the_reason_is_recorded(tmp_path):
    got = _harness(tmp_path, "--workloads", "graphsage", "deepwalk", "--peers", "dgl")
    for name in ("graphsage", "deepwalk"):
        try:
            importlib.import_module("dgl")
        except Exception:
            assert peers.DGL_WHY in got[name]["peers_not_run"]["DGL"]
        else:
            assert got[name]["modes"]["DGL"]["units"] > 0


def test_pyg_loaders_where_a_sampling_backend_is_installed(tmp_path):
    import torch_geometric.typing as T

    got = _harness(tmp_path, "--workloads", "graphsage", "shadow", "--peers", "pyg")
    if not (T.WITH_PYG_LIB or T.WITH_TORCH_SPARSE):
        assert got["graphsage"]["peers_not_run"]["PyG NeighborLoader"] == peers.PYG_WHY
        return
    sage = got["graphsage"]["modes"]["PyG NeighborLoader"]  # its hop-1 check passed
    assert (
        sage["kind"] == "peer"
        and 0 < sage["units"] < got["graphsage"]["modes"]["gsample eager"]["units"]
    )  # PyG-style: fewer edges
    if T.WITH_TORCH_SPARSE:
        assert got["shadow"]["modes"]["PyG ShaDowKHopSampler"]["units"] > 0


def test_pygs_shadow_sampler_is_not_compared_at_other_fanouts_a_hop(monkeypatch):
    """ShaDowKHopSampler takes one fanout for every hop: with ``--fanouts 3 2`` it would
    sample other subgraphs, so the peer says it is not comparable instead of running."""
    T = pytest.importorskip("torch_geometric.typing")
    monkeypatch.setattr(T, "WITH_TORCH_SPARSE", True)
    A = gs.datasets.rmat(200, 1000, seed=0)
    w = workloads.workload("shadow", A, 16, fanouts=(3, 2))
    why = peers.pyg_peer(w, [torch.arange(16)], torch.device("cpu"))
    assert isinstance(why, str) and why.startswith("not comparable: ShaDowKHopSampler"), why


def test_the_plain_pytorch_check_catches_other_sizes():
    A = gs.datasets.rmat(2000, 30000, seed=1)
    import baselines

    w = workloads.workload("graphsage", A)
    seeds = torch.arange(256)
    c = A.csc
    peers._plain_check(w, peers.plain_pytorch(w, baselines))(seeds)

    def wrong(s):  # other fanouts: other sizes
        return baselines.graphsage(c.indptr, c.rows, A.num_nodes, s, fanouts=(5, 5))

    with pytest.raises(AssertionError):
        peers._plain_check(w, wrong)(seeds)
