"""Edge times on the graph: ``gs.Matrix``'s ``edge_time`` (by edge id), its constructors and
``.to``, and ``gs.datasets.read_snap`` keeping a SNAP file's timestamp column."""

import gzip
import math

import pytest
import torch
from conftest import snap_path

import gsample as gs


def _write(tmp_path, name, text):
    p = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(p, "wt") as f:
            f.write(text)
    else:
        p.write_text(text)
    return p


def test_read_snap_keeps_the_third_column_by_edge_id(tmp_path):
    p = _write(tmp_path, "t.txt.gz", "# SRC DST UNIXTS\n0 1 100\n2 1 101\n1 0 99\n")
    A = gs.datasets.read_snap(p)
    assert A.edge_time.tolist() == [100, 101, 99] and A.edge_time.dtype == torch.int64
    src, dst, eid = A.edges()
    # edge ids are line positions: the time of each stored edge is edge_time[eid]
    lines = {0: (0, 1, 100), 1: (2, 1, 101), 2: (1, 0, 99)}
    for u, v, e, t in zip(src.tolist(), dst.tolist(), eid.tolist(), A.edge_time[eid].tolist()):
        assert lines[e] == (u, v, t)


def test_read_snap_times_follow_relabel_and_undirected(tmp_path):
    p = _write(tmp_path, "t.txt", "10 20 5\n20 30 7\n")
    A = gs.datasets.read_snap(p, relabel=True, undirected=True)
    assert A.num_nodes == 3 and A.edge_time.tolist() == [5, 7, 5, 7]  # edge E + e: e's time
    src, dst, eid = A.edges()
    assert sorted(zip(src.tolist(), dst.tolist(), A.edge_time[eid].tolist())) == [
        (0, 1, 5),
        (1, 0, 5),
        (1, 2, 7),
        (2, 1, 7),
    ]


def test_read_snap_float_times_and_none(tmp_path):
    A = gs.datasets.read_snap(_write(tmp_path, "f.txt", "0 1 1.5\n1 2 2.25\n"))
    assert A.edge_time.dtype == torch.float64 and A.edge_time.tolist() == [1.5, 2.25]
    assert gs.datasets.read_snap(_write(tmp_path, "two.txt", "0 1\n1 2\n")).edge_time is None
    no = gs.datasets.read_snap(_write(tmp_path, "t.txt", "0 1 3\n"), edge_time=False)
    assert no.edge_time is None and no.num_edges == 1
    with pytest.raises(TypeError, match="edge_time"):
        gs.datasets.read_snap(_write(tmp_path, "u.txt", "0 1 3\n"), edge_time="yes")


def test_read_snap_college_msg():
    """SNAP's CollegeMsg: 1,899 nodes, 59,835 messages sorted by time."""
    A = gs.datasets.read_snap(snap_path("CollegeMsg.txt.gz"), relabel=True)
    assert A.num_nodes == 1899 and A.num_edges == 59835
    t = A.edge_time
    assert t.shape == (59835,) and t.dtype == torch.int64
    assert bool((t[1:] >= t[:-1]).all()), "the file is sorted by time: so are the edge ids"
    assert int(t[0]) == 1082040961


def test_matrix_edge_time_constructors_and_to():
    ei = torch.tensor([[0, 2, 1], [1, 1, 0]])
    t = torch.tensor([7, 3, 5])
    A = gs.Matrix.from_edge_index(ei, edge_time=t)
    assert torch.equal(A.edge_time, t)
    eid = A.edges()[2]
    assert A.edge_time[eid].tolist() == [5, 7, 3]  # column 0, then column 1 by row
    B = A.to("cpu")
    assert torch.equal(B.edge_time, t) and B.edge_time.device.type == "cpu"
    C = gs.Matrix.from_csc(torch.tensor([0, 1, 3, 3]), torch.tensor([1, 0, 2]), edge_time=t)
    assert torch.equal(C.edge_time, t)
    assert A.with_edge_time(None).edge_time is None
    assert gs.Matrix.from_edge_index(ei).edge_time is None
    from torch_geometric.data import Data

    D = gs.Matrix.from_pyg(Data(edge_index=ei, t=t, num_nodes=3), edge_time="t")
    assert torch.equal(D.edge_time, t)
    # a slice carries no times; its edge ids index the graph's
    S = A[:, torch.tensor([1])]
    assert S.edge_time is None and A.edge_time[S.edges()[2]].tolist() == [7, 3]


def test_matrix_edge_time_refusals():
    ei = torch.tensor([[0, 1], [1, 0]])
    with pytest.raises(ValueError, match=r"edge_time: expected one time per edge id \(shape"):
        gs.Matrix.from_edge_index(ei, edge_time=torch.arange(3))
    with pytest.raises(TypeError, match="edge_time: must be an integer or floating-point"):
        gs.Matrix.from_edge_index(ei, edge_time=torch.tensor([True, False]))
    with pytest.raises(ValueError, match="edge_time: NaN is not a time"):
        gs.Matrix.from_edge_index(ei, edge_time=torch.tensor([1.0, math.nan]))
    with pytest.raises(ValueError, match="edge_time: data has no tensor attribute"):
        from torch_geometric.data import Data

        gs.Matrix.from_pyg(Data(edge_index=ei, num_nodes=2), edge_time="t")


def test_times_change_no_sample():
    """A graph with times samples exactly what the same graph without samples."""
    A = gs.datasets.rmat(200, 2000, seed=0)
    T = A.with_edge_time(torch.arange(A.num_edges))
    seeds = torch.arange(40)

    def sage(A, seeds):
        s = A[:, seeds].individual_sample(5)
        return s, A[:, s.all_nodes()].individual_sample(3)

    for fn in (sage, gs.compile(sage)):
        gs.manual_seed(1)
        a = fn(A, seeds)
        gs.manual_seed(1)
        b = fn(T, seeds)
        for x, y in zip(a, b, strict=True):
            assert all(torch.equal(u, v) for u, v in zip(x.edges(), y.edges(), strict=True))
