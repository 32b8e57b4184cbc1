"""``SplitCSC``: a super-batch's mini-batch matrices whose fields are made when first read
(``gsample.formats.pieces``), as the loader hands them out: the same tensors as the eager
split, each field's pieces made once for every matrix, the sizes from the host, and copies,
pickles and ``dataclasses.replace`` plain matrices of the same fields."""

import copy
import dataclasses
import pickle
import threading

import torch
from helpers import graphsage

import gsample as gs
from gsample.formats.csc import CSC
from gsample.formats.pieces import FIELDS, Pieces, SplitCSC
from gsample.runtime import block_diagonal as blocks


def _counted(parts: dict) -> tuple[Pieces, dict]:
    """A :class:`Pieces` over ``{field: (tensor, sizes)}`` and how often each field's
    pieces were made."""
    calls = dict.fromkeys(parts, 0)

    def maker(name):
        def make():
            calls[name] += 1
            value, sizes = parts[name]
            return value.split_with_sizes(sizes)

        return make

    return Pieces({k: maker(k) for k in parts}), calls


def _two():
    ptr, rows = torch.tensor([0, 1, 0, 0, 2]), torch.tensor([4, 1, 3])
    pieces, calls = _counted({"indptr": (ptr, [2, 3]), "rows": (rows, [1, 2])})
    absent = ("row_ids", "col_ids", "values", "eids")
    return SplitCSC.each(5, pieces, ptr.device, [1, 2], [1, 2], None, absent), calls


def test_a_field_is_made_once_for_every_matrix_when_first_read():
    (a, b), calls = _two()
    assert a.nnz == 1 and b.nnz == 2 and b.num_cols == 2 and b.num_rows == 5
    assert b.device == torch.device("cpu") and calls == {"indptr": 0, "rows": 0}
    assert "rows" not in vars(a) and "indptr" not in vars(b)
    assert b.rows.tolist() == [1, 3] and calls == {"indptr": 0, "rows": 1}
    assert "indptr" not in vars(b) and "rows" not in vars(a)  # b's rows alone
    assert a.rows.tolist() == [4] and b.rows is b.rows and calls["rows"] == 1
    assert a.indptr.tolist() == [0, 1] and b.indptr.tolist() == [0, 0, 2]
    assert calls == {"indptr": 1, "rows": 1}
    assert a.row_ids is None and a.eids is None and a.values is None and a.col_ids is None


def test_copies_pickles_and_replace_hold_the_same_fields():
    (_, b), _ = _two()
    for other in (copy.copy(b), copy.deepcopy(b), pickle.loads(pickle.dumps(b))):
        assert type(other) is CSC
        assert other.num_nodes == b.num_nodes
        for f in FIELDS:
            x, y = getattr(other, f), getattr(b, f)
            assert (x is None and y is None) or torch.equal(x, y), f
    (_, b), _ = _two()
    values = torch.ones(2)
    c = dataclasses.replace(b, values=values)
    assert c.values is values and c.nnz == 2 and c.num_cols == 2
    assert torch.equal(c.rows, torch.tensor([1, 3])) and b.values is None


def test_threads_reading_one_field_make_it_once():
    rows = torch.arange(64)
    pieces, calls = _counted({"rows": (rows, [1] * 64)})
    absent = ("indptr", "row_ids", "col_ids", "values", "eids")
    made = SplitCSC.each(9, pieces, rows.device, [1] * 64, [0] * 64, None, absent)
    got = [None] * 64

    def read(b):
        got[b] = int(made[b].rows)

    threads = [threading.Thread(target=read, args=(b,)) for b in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == list(range(64)) and calls["rows"] == 1


def test_a_loader_s_super_batch_makes_no_field_until_read_and_then_the_eager_ones(monkeypatch):
    """A super-batched loader's blocks: their edge counts read make no field; every field
    read equals the eager split's (the same samples)."""
    A, seeds = gs.datasets.rmat(300, 3000, seed=2), torch.arange(96)
    sampler = gs.compile(graphsage)

    def epoch():
        gs.manual_seed(0)
        loader = gs.DataLoader(A, sampler, seeds, 16, super_batch=3, seed=0)
        return [b.out for b in loader]

    lazy = epoch()
    blocks_ = [m.csc for out in lazy for m in out]
    assert blocks_ and all(type(c) is SplitCSC for c in blocks_)
    assert sum(m.num_edges for out in lazy for m in out) > 0
    assert not any({"indptr", "rows", "eids"} & set(vars(c)) for c in blocks_)
    monkeypatch.setattr(blocks, "LAZY_PIECES", False)
    eager = epoch()
    assert all(type(m.csc) is CSC for out in eager for m in out)
    for x, y in zip(lazy, eager, strict=True):
        for m, w in zip(x, y, strict=True):
            for f in FIELDS:
                u, v = getattr(m.csc, f), getattr(w.csc, f)
                assert (u is None and v is None) or torch.equal(u, v), f
