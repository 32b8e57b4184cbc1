"""Partitioned node features (``gs.distributed.PartitionedFeatures``) and a graph shared by a
parent process (``share_graph`` / ``attach_graph`` / ``place``), with gloo processes.

Every rank reads ``x[ids]`` exactly, whatever ids it asks for (repeats, none, only its own,
only others', out of order) and whatever the others ask for at the same time; the rows it owns
are in place before the exchange. A graph written once by the parent is mapped by every rank
and placed ``"shared"`` with no copy (the same memory), ``"replicated"`` and ``"partitioned"``
from it, each sampling the single-process mini-batches.
"""

import datetime
import functools
import itertools
import json
import pathlib

import pytest
import torch
import torch.distributed as dist
from helpers import assert_same, graphsage, spawn_ranks

import gsample as gs
from gsample.distributed.features import even_bounds
from gsample.distributed.shared import (
    attach_graph,
    remove_shared,
    share_graph,
    shared_graph_header,
    write_shared,
)

N, F = 37, 3


def table():
    return torch.arange(N * F, dtype=torch.float32).view(N, F) * 0.5 - 7


def id_sets(rank, world):
    """The ids rank ``rank`` asks for in each call, all ranks calling together."""
    g = torch.Generator().manual_seed(rank)
    bounds = even_bounds(N, world)
    own = torch.arange(bounds[rank], bounds[rank + 1])
    others = torch.cat([torch.arange(bounds[r], bounds[r + 1]) for r in range(world) if r != rank])
    return [
        torch.randint(0, N, (50,), generator=g),  # repeats, every owner
        torch.empty(0, dtype=torch.int64),  # nothing
        own.flip(0),  # only its own
        others[torch.randperm(others.numel(), generator=g)],  # only others'
        torch.randint(0, N, (5,), generator=g) if rank == 0 else torch.empty(0, dtype=torch.int64),
        torch.tensor([N - 1, 0, N - 1], dtype=torch.int32),  # int32 ids, the ends
    ]


BAD = (
    (torch.zeros(5, 2), [0, 5]),  # one bound short
    (torch.zeros(5, 2), [0, 6, 3]),  # decreasing
    (torch.zeros(4, 2), [0, 5, 10]),  # rows for another range
    (torch.zeros(5, 2), [1, 5, 10]),  # not from 0
)


def _exchange_worker(rank, world, url, out):
    dist.init_process_group(
        "gloo", init_method=url, rank=rank, world_size=world, timeout=datetime.timedelta(60)
    )
    try:
        bounds = even_bounds(N, world)
        x = table()
        feats = gs.distributed.PartitionedFeatures(
            x[bounds[rank] : bounds[rank + 1]].clone(), bounds
        )
        results = []
        for ids in id_sets(rank, world):
            req = feats.request(ids)
            mine = (feats.owner(ids.long()) == rank).nonzero().squeeze(1)
            before = req.out[mine].clone()  # in place before any communication
            results.append((feats.exchange(req), before, req.remote.numel()))
        results.append((feats.gather(id_sets(rank, world)[0]), None, None))
        bad_ids = (torch.tensor([N]), torch.tensor([-1]), torch.tensor([0.5]), torch.zeros(2, 2))
        errors = raised(feats.request, [(b,) for b in bad_ids], (IndexError, TypeError), True)
        errors += raised(gs.distributed.PartitionedFeatures, BAD, ValueError)
        torch.save((results, errors), pathlib.Path(out) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def test_every_rank_reads_exactly_its_rows(tmp_path):
    world = 2
    x = table()
    bounds = even_bounds(N, world)
    for rank, (results, errors) in enumerate(spawn_ranks(_exchange_worker, tmp_path, world)):
        sets = id_sets(rank, world) + [id_sets(rank, world)[0]]
        for i, ((rows, before, remote), ids) in enumerate(zip(results, sets, strict=True)):
            ids = ids.long()
            assert rows.shape == (ids.numel(), F) and rows.dtype == x.dtype
            assert torch.equal(rows, x[ids]), (rank, i)
            if before is not None:
                owned = (ids >= bounds[rank]) & (ids < bounds[rank + 1])
                assert torch.equal(before, x[ids[owned]]), (rank, i)
                assert remote == int((~owned).sum())
        assert [e.split(":")[0] for e in errors[:4]] == [
            "IndexError",
            "IndexError",
            "TypeError",
            "TypeError",
        ]
        assert f"[0, {N})" in errors[0]
        # bad partitions, named
        assert errors[4].startswith("bounds: expected world_size + 1 = 3")
        assert errors[5].startswith("bounds: must be non-decreasing")
        lo, hi = (0, 4) if rank == 0 else (5, 9)
        assert errors[6].startswith(f"local: rank {rank} owns nodes {lo}..{hi} (5 rows), got 4")
        assert errors[7].startswith("bounds: expected world_size + 1 = 3 bounds from 0")


def raised(call, arguments, errors, with_type: bool = False) -> list:
    """The message of the error (one of ``errors``) each ``call(*args)`` raises, for every
    ``args`` of ``arguments``, prefixed with its type's name with ``with_type``; none for a
    call that raises nothing (the caller's count of messages then falls short)."""
    out = []
    for args in arguments:
        try:
            call(*args)
        except errors as e:
            out.append(f"{type(e).__name__}: {e}" if with_type else str(e))
    return out


def _no_route(*args, **kwargs):
    raise AssertionError("one rank routes nothing")


def _one_rank_worker(rank, world, url, out):
    dist.init_process_group("gloo", init_method=url, rank=rank, world_size=world)
    gs.distributed.features.Route = _no_route  # (this process only)
    try:
        x = table()
        feats = gs.distributed.PartitionedFeatures(x.clone(), even_bounds(N, 1))
        sets = id_sets(0, 2)[:3] + [torch.tensor([N - 1, 0, N - 1], dtype=torch.int32)]
        results = [(feats.exchange(r := feats.request(ids)), r.remote.numel()) for ids in sets]
        error = raised(
            feats.request,
            [(torch.tensor([N]),), (torch.tensor([True, False]),)],
            (IndexError, TypeError),
        )
        error += raised(
            gs.distributed.PartitionedFeatures,
            [(x.clone(), b) for b in ([0, float(N)], [False, N])],
            TypeError,
        )
        torch.save((results, error), pathlib.Path(out) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def test_one_rank_owns_every_row_and_routes_nothing(tmp_path):
    """World size 1: every row is gathered in place (no all-to-all: routing raises in the
    worker), exactly ``x[ids]``; a bad id, boolean ids and non-integer bounds still raise,
    naming ``ids`` / ``bounds``."""
    x = table()
    ((results, error),) = spawn_ranks(_one_rank_worker, tmp_path, 1)
    sets = id_sets(0, 2)[:3] + [torch.tensor([N - 1, 0, N - 1])]
    for (rows, remote), ids in zip(results, sets, strict=True):
        assert torch.equal(rows, x[ids.long()]) and remote == 0
    assert [e.split(":")[0] for e in error] == ["ids", "ids", "bounds", "bounds"], error


@pytest.mark.parametrize("n, world", [(10, 3), (9, 3), (2, 4), (0, 2), (7, 1)])
def test_even_bounds(n, world):
    b = even_bounds(n, world)
    sizes = [hi - lo for lo, hi in itertools.pairwise(b)]
    assert b[0] == 0 and b[-1] == n and len(b) == world + 1
    assert max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)


@pytest.mark.parametrize("n, world", [(-1, 2), (3, 0), (3.0, 2), (True, 2)])
def test_even_bounds_bad_arguments(n, world):
    with pytest.raises(ValueError, match=r"num_nodes|world_size"):
        even_bounds(n, world)


# ----------------------------------------------------------------------------- shared graph
SEEDS = torch.arange(0, 900, 7)  # 129 seeds: 4 mini-batches of 40


def _shared_graph_worker(rank, world, url, out):
    dist.init_process_group("gloo", init_method=url, rank=rank, world_size=world)
    try:
        folder = pathlib.Path(out) / "graph"
        A = attach_graph(folder)
        res = {"attached_placement": A.placement}
        sampler = functools.partial(gs.compile(graphsage), fanouts=(4, 3))
        for placement in ("shared", "replicated", "partitioned"):
            G = gs.distributed.place(A, placement)
            if placement == "shared":  # the attached memory itself: no copy
                res["same_memory"] = all(
                    getattr(G.csc, n).data_ptr() == getattr(A.csc, n).data_ptr()
                    for n in ("indptr", "rows")
                )
            loader = gs.DataLoader(G, sampler, SEEDS, 40, seed=1, distributed=True)
            res[placement] = {b.index: b.out for b in loader}
        torch.save(res, pathlib.Path(out) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def test_a_graph_shared_by_the_parent_is_placed_by_every_rank(tmp_path, small_graph):
    folder = tmp_path / "graph"
    header = share_graph(small_graph, folder, spec="small")
    assert shared_graph_header(folder) == header and header["meta"] == {"spec": "small"}
    attached = attach_graph(folder)
    assert attached.placement == "shared"
    assert torch.equal(attached.csc.indptr, small_graph.csc.indptr)
    assert torch.equal(attached.csc.rows, small_graph.csc.rows)
    sampler = functools.partial(gs.compile(graphsage), fanouts=(4, 3))
    single = {b.index: b.out for b in gs.DataLoader(small_graph, sampler, SEEDS, 40, seed=1)}
    seen = {p: {} for p in ("shared", "replicated", "partitioned")}
    for res in spawn_ranks(_shared_graph_worker, tmp_path, 2):
        assert res["attached_placement"] == "shared" and res["same_memory"]
        for p in seen:
            seen[p].update(res[p])
    for p, batches in seen.items():
        assert sorted(batches) == sorted(single), p
        for i, out in batches.items():
            assert_same(out, single[i], f"{p}, mini-batch {i}")
    remove_shared(folder)
    assert not folder.exists()


def test_a_truncated_shared_graph_is_not_attached(tmp_path, small_graph):
    folder = tmp_path / "g"
    header = share_graph(small_graph, folder)
    rows = pathlib.Path(header["arrays"]["rows"][0])
    rows.write_bytes(rows.read_bytes()[:-8])
    assert shared_graph_header(folder) is None
    with pytest.raises(ValueError, match=r"folder: .* holds no complete graph"):
        attach_graph(folder)
    with pytest.raises(TypeError, match=r"A: expected a gs\.Matrix"):
        share_graph(small_graph.csc, folder)


def test_removing_a_shared_graph_keeps_the_folders_other_files(tmp_path, small_graph):
    """``remove_shared`` deletes the header and the files it names (the seeds kept in its
    meta too), never another file of the folder, whatever its name."""
    folder = tmp_path / "g"
    seeds = write_shared({"seeds": torch.arange(5)}, folder)["seeds"]
    header = share_graph(small_graph, folder, seeds=seeds)
    mine = folder / "users_model.bin"
    mine.write_bytes(b"weights")
    remove_shared(folder)
    assert mine.read_bytes() == b"weights" and sorted(folder.iterdir()) == [mine]
    assert not any(pathlib.Path(spec[0]).exists() for spec in header["arrays"].values() if spec)


@pytest.mark.parametrize(
    "edit",
    [
        lambda h: h["arrays"]["rows"].__setitem__(1, "nosuch"),  # a dtype torch lacks
        lambda h: h["arrays"]["rows"].__setitem__(2, [7]),  # a shape not the file's
        lambda h: h["arrays"].pop("indptr"),  # no offsets
        lambda h: h.__setitem__("num_nodes", 5),  # offsets of another node count
        lambda h: h["arrays"].__setitem__("x", h["arrays"]["rows"]),  # not a graph array
    ],
)
def test_a_corrupt_header_is_refused_naming_the_folder(tmp_path, small_graph, edit):
    folder = tmp_path / "g"
    header = share_graph(small_graph, folder)
    edit(header)
    (folder / "graph.json").write_text(json.dumps(header))
    assert shared_graph_header(folder) is None
    with pytest.raises(ValueError, match=r"^folder: .* holds no complete graph"):
        attach_graph(folder)


def test_a_shared_graph_whose_offsets_do_not_end_at_its_rows_is_refused(tmp_path, small_graph):
    folder = tmp_path / "g"
    header = share_graph(small_graph, folder)
    path = pathlib.Path(header["arrays"]["indptr"][0])
    indptr = small_graph.csc.indptr.clone()
    indptr[-1] -= 1
    path.write_bytes(indptr.numpy().tobytes())
    with pytest.raises(ValueError, match=r"^folder: .* is not a CSC"):
        attach_graph(folder)


def _two_graphs_worker(rank, world, url, out):
    dist.init_process_group("gloo", init_method=url, rank=rank, world_size=world)
    try:
        A = attach_graph(pathlib.Path(out) / f"graph{rank}")
        try:
            gs.distributed.place(A, "shared")
            error = None
        except ValueError as e:
            error = str(e)
        torch.save(error, pathlib.Path(out) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def test_ranks_placing_different_graphs_all_raise(tmp_path, small_graph):
    share_graph(small_graph, tmp_path / "graph0")
    share_graph(gs.datasets.rmat(300, 2000, seed=1), tmp_path / "graph1")
    for error in spawn_ranks(_two_graphs_worker, tmp_path, 2):
        assert error is not None and error.startswith("A: the ranks passed different graphs")


def test_a_share_that_fails_leaves_no_files(tmp_path, small_graph, monkeypatch):
    """Meta that JSON cannot hold is refused (naming ``meta``) before any file is written;
    a write that fails after the arrays are out removes them."""
    import gsample.distributed.shared as shared

    with pytest.raises(TypeError, match=r"^meta: must be JSON-serialisable"):
        share_graph(small_graph, tmp_path / "a", x=torch.tensor(1))
    assert not (tmp_path / "a").exists() or not list((tmp_path / "a").iterdir())
    real = shared.write_shared

    def written_then_fails(arrays, folder):
        real(arrays, folder)
        raise OSError("the disk went away (a test's)")

    monkeypatch.setattr(shared, "write_shared", written_then_fails)
    with pytest.raises(OSError, match="a test's"):
        share_graph(small_graph, tmp_path / "b")
    assert not list((tmp_path / "b").iterdir())


def test_writing_past_a_full_file_system_is_refused(tmp_path, monkeypatch):
    import gsample.distributed.shared as shared

    monkeypatch.setattr(shared, "_free_bytes", lambda folder: 100)
    with pytest.raises(
        RuntimeError, match=r"folder: .* has 100 bytes free and the arrays need 800"
    ):
        write_shared({"a": torch.zeros(100, dtype=torch.int64)}, tmp_path)
    assert not list(tmp_path.iterdir())
