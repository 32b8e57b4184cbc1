"""Bounded values trimmed to their counts: views, or copies in one launch per dtype."""

import torch

from gsample.formats.bounded import BoundedCSC, BoundedIds, copy_all, trim, trim_copies
from gsample.formats.csc import CSC


def _bounded():
    c = CSC(
        10,
        torch.tensor([0, 2, 3, 3]),
        torch.tensor([0, 1, 1, 9]),
        row_ids=torch.tensor([4, 5]),
        col_ids=torch.tensor([1, 2, 3]),
        values=torch.tensor([0.5, 1.5, 2.5, 9.0]),
        eids=torch.tensor([7, 8, 9, 9]),
    )
    return BoundedCSC(c, ncols=torch.tensor([2]))


def _fields(c):
    return [
        None if getattr(c, f) is None else getattr(c, f).tolist()
        for f in ("indptr", "rows", "row_ids", "col_ids", "values", "eids")
    ]


def test_trim_keeps_the_counted_part_and_a_fixed_row_space():
    b = _bounded()
    want = [[0, 2, 3], [0, 1, 1], [4, 5], [1, 2], [0.5, 1.5, 2.5], [7, 8, 9]]
    assert _fields(trim(b, [3, 2])) == want
    assert trim(b, [3, 2]).rows.data_ptr() == b.csc.rows.data_ptr()  # views
    copied = trim(b, [3, 2], copy=True)
    assert _fields(copied) == want
    for f in ("indptr", "rows", "row_ids", "col_ids", "values", "eids"):  # nothing shared
        assert getattr(copied, f).data_ptr() != getattr(b.csc, f).data_ptr(), f


def test_trim_copies_mixes_ids_matrices_tensors_and_others():
    ids = BoundedIds(torch.tensor([3, 1, 4, 1, 5]), torch.tensor([3]))
    t = torch.arange(6.0).view(2, 3)
    out = trim_copies([ids, _bounded(), t, "x", None], [[3], [3, 2], [], [], []])
    assert out[0].tolist() == [3, 1, 4]
    assert _fields(out[1])[0] == [0, 2, 3]
    assert torch.equal(out[2], t) and out[2].data_ptr() != t.data_ptr()
    assert out[3:] == ["x", None]
    whole = copy_all([_bounded().csc])[0]
    assert _fields(whole) == _fields(_bounded().csc)


def test_copies_of_short_counts_in_long_buffers_and_of_2d_values():
    """Both ways of copying: buffers whose unused tails are short are copied whole and their
    tails split off; a long tail (a count far below its bound) or a 2-D tensor is sliced
    first. Either way every copy is exact and shares nothing with its source."""
    long = BoundedIds(torch.arange(200_000), torch.tensor([10]))
    short = BoundedIds(torch.arange(7), torch.tensor([5]))
    t2 = torch.arange(12.0).view(4, 3)
    c = CSC(
        10, torch.tensor([0, 2, 4]), torch.tensor([1, 2, 3, 4]), values=torch.arange(8.0).view(4, 2)
    )
    out = trim_copies([long, short, t2, c], [[10], [5], [], []])
    assert out[0].tolist() == list(range(10)) and out[1].tolist() == list(range(5))
    assert torch.equal(out[2], t2) and torch.equal(out[3].values, c.values)
    assert out[3].values.shape == (4, 2) and torch.equal(out[3].rows, c.rows)
    sources = {long.data.data_ptr(), short.data.data_ptr(), t2.data_ptr(), c.values.data_ptr()}
    assert not sources & {o.untyped_storage().data_ptr() for o in out[:3]}
    few = trim_copies([short, short], [[0], [7]])  # an empty count, a full one
    assert few[0].numel() == 0 and few[1].tolist() == list(range(7))


def test_copy_all_of_plain_vectors_is_one_copy_split_and_others_take_the_trim():
    """Vectors of one dtype (a collective sample's columns, rows and pointer): copies, views
    of one new buffer; mixed dtypes, a 2-D tensor or a CSC: copied as the trim copies them."""
    a, b, c = torch.arange(5), torch.arange(3) + 10, torch.arange(0)
    out = copy_all([a, b, c])
    assert [o.tolist() for o in out] == [a.tolist(), b.tolist(), []]
    assert len({o.untyped_storage().data_ptr() for o in out}) == 1
    assert out[0].untyped_storage().data_ptr() not in {a.data_ptr(), b.data_ptr()}
    mixed = copy_all([a, torch.arange(4.0), torch.ones(2, 2), "x"])
    assert mixed[0].tolist() == a.tolist() and mixed[1].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert torch.equal(mixed[2], torch.ones(2, 2)) and mixed[3] == "x"
    assert mixed[0].data_ptr() != a.data_ptr()
    assert copy_all([]) == []
