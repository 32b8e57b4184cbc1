"""A replayed CUDA graph's results: their counts and flags read from its pinned copy, and
their trim planned once (packed by the graph, or not), equal to ``trim_copies`` (CPU
tensors stand in for the graph's buffers)."""

import torch
from test_bounded import _bounded, _fields

from gsample.formats.bounded import BoundedIds, counts, trim_copies, trim_parts
from gsample.formats.replayed import Replayed, counted, pack_groups, packable


class _Ended:
    """A replay's event that has passed (these tests run on the CPU)."""

    def synchronize(self):
        pass


def _replayed(values, flags=()):
    """A Replayed whose pinned scalars hold the counts of ``values``, then ``flags``, as a
    captured graph's copy would (here plain host tensors)."""
    scalars = [t for v in values for t in counts(v)] + list(flags)
    host = torch.tensor([int(t.reshape(-1)[0]) for t in scalars], dtype=torch.int64)
    return Replayed(host, scalars, [*values, *flags], done=_Ended())


def test_a_replayed_graphs_trim_planned_once_equals_trim_copies():
    """The plan of a replayed graph's results reads their counts and flags from its pinned
    copy and copies exactly what ``trim_copies`` copies; it is remembered (its values are the
    graph's own objects) and read again after the graph's buffers change."""
    ids = BoundedIds(torch.tensor([3, 1, 4, 1, 5]), torch.tensor([3]))
    b, plain, t = _bounded(), _bounded().csc, torch.arange(6.0).view(2, 3)
    flag = torch.tensor(False)
    values = (ids, b, plain, t, "x")
    r = _replayed(values, [flag])
    plan = r.plan(values, [flag])
    assert plan is r.plan(values, [flag])  # remembered
    sizes, hits = plan.read(r)
    assert sorted(sizes) == [2, 3, 3] and hits == [0]  # (in the plan's order)
    got = plan.copies(sizes)
    want = trim_copies(list(values), [[3], [3, 2], [], [], []])
    assert got[0].tolist() == want[0].tolist() == [3, 1, 4]
    assert _fields(got[1]) == _fields(want[1]) and _fields(got[2]) == _fields(plain)
    assert torch.equal(got[3], t) and got[3].data_ptr() != t.data_ptr() and got[4] == "x"
    assert got[1].rows.untyped_storage().data_ptr() != b.csc.rows.data_ptr()
    # the next replay: new counts in the same pinned copy, new contents in the same buffers
    r.host[0], r.host[1], r.host[2] = 5, 1, 1
    ids.data[:] = torch.tensor([9, 8, 7, 6, 5])
    sizes, _ = plan.read(r)
    got = plan.copies(sizes)
    assert got[0].tolist() == [9, 8, 7, 6, 5]
    assert _fields(got[1])[:2] == [[0, 2], [0]] and _fields(got[1])[3] == [1]
    r.host[3] = 1  # the flag set
    assert plan.read(r)[1] == [1]


def test_a_replayed_graphs_trim_is_not_planned_for_values_not_its_own():
    """Values the graph did not make (a later step's), or counts it did not copy out, are
    read the usual way (no plan), and nothing is remembered for them."""
    ids = BoundedIds(torch.tensor([3, 1, 4]), torch.tensor([2]))
    r = _replayed((ids,))
    other = BoundedIds(torch.tensor([3, 1, 4]), torch.tensor([2]))
    assert r.plan((other,), []) is None and r.plan((ids,), [torch.tensor(True)]) is None
    assert not r.plans
    blind = Replayed(
        torch.zeros(1, dtype=torch.int64), [torch.tensor([0])], [ids], done=_Ended()
    )  # ids' count not copied out
    assert blind.plan((ids,), []) is None


def _packed(values):
    """What a graph's pack leaves (``backend.cuda.pack``): per dtype group of the values'
    parts, each part's used prefix one after another, then junk up to the capacity."""
    parts = counted(values, trim_parts(values)[0])
    buffers = []
    for dtype, idx in pack_groups(parts):
        used = [
            parts[i][0][
                : (0 if parts[i][1] is None else int(parts[i][1].reshape(-1)[0])) + parts[i][2]
            ]
            for i in idx
        ]
        cap = sum(parts[i][0].numel() for i in idx)
        flat = torch.cat(used)
        buffers.append(torch.cat([flat, torch.full((cap - flat.numel(),), 99, dtype=dtype)]))
    return buffers


def test_a_packed_replay_is_copied_out_in_one_copy_a_dtype_and_equals_trim_copies():
    """Where the graph packed the values it trims, the plan copies each packed buffer's used
    part once and splits it into the values' fields: the same values as ``trim_copies``,
    sharing nothing with the graph's buffers; other values (not the packed ones, or in
    another order) are copied the usual way."""
    ids = BoundedIds(torch.tensor([3, 1, 4, 1, 5]), torch.tensor([3]))
    b, t = _bounded(), torch.arange(6.0)
    values = (b, ids, t, "x")
    parts = counted(values, trim_parts(values)[0])
    assert packable(parts) and [d for d, _ in pack_groups(parts)] == [torch.int64, torch.float32]
    buffers = _packed(values)
    r = Replayed(
        _replayed(values).pinned,
        [c for v in values for c in counts(v)],
        values,
        done=_Ended(),
        packed=(values, buffers),
    )
    plan = r.plan(values, [])
    assert plan.groups is not None and [g[0] for g in plan.groups] == buffers
    got = plan.copies(plan.read(r)[0])
    want = trim_copies(list(values), [[3, 2], [3], [], []])
    assert _fields(got[0]) == _fields(want[0]) and got[1].tolist() == [3, 1, 4]
    assert torch.equal(got[2], t) and got[3] == "x"
    assert {g.untyped_storage().data_ptr() for g in (got[0].rows, got[1], got[2])}.isdisjoint(
        {buf.untyped_storage().data_ptr() for buf in buffers}
    )
    other = r.plan((ids, b), [])  # not the packed values: the usual copy
    assert other.groups is None
    assert other.copies(other.read(r)[0])[0].tolist() == [3, 1, 4]
    flat = torch.zeros(2, 3)
    assert not packable(counted([flat], trim_parts([flat])[0]))  # 2-D: not packed


class _Event:
    """A chunk's event on the CPU: recorded, waited for (counted)."""

    def __init__(self):
        self.waits = 0

    def record(self, stream=None):
        pass

    def synchronize(self):
        self.waits += 1


def test_a_chunks_calls_share_one_wait_and_one_copy_of_their_packed_buffers():
    """The calls of a chunk (``runtime.cuda_graphs.ChunkGraphs``) pack into rows of one
    buffer a dtype (``_Shared.into``): after a replay, the first call's trim copies those
    buffers once, every call's values are views of that copy (none of the graph's memory),
    equal to ``trim_copies`` of its own values; one event wait for them all; the next
    replay copies again."""
    from gsample.runtime.cuda_graphs import _Shared

    event = _Event()
    shared = _Shared(3, event)
    calls = []
    for j in range(3):
        ids = BoundedIds(torch.tensor([3, 1, 4, 1, 5]) + 10 * j, torch.tensor([3 - j]))
        values = (_bounded(), ids, torch.arange(6.0) + j, "x")
        buffers = [
            shared.into(j)(buf.dtype, buf.numel(), buf.device).copy_(buf) for buf in _packed(values)
        ]
        r = Replayed(
            _replayed(values).pinned,
            [c for v in values for c in counts(v)],
            values,
            done=shared,
            packed=(values, buffers),
        )
        r.copied = shared.copied
        calls.append((values, r))
    assert set(shared.joints) == {torch.int64, torch.float32}
    shared.record()
    got = []
    for j, (values, r) in enumerate(calls):
        plan = r.plan(values, [])
        assert plan.groups is not None
        got.append(plan.copies(plan.read(r)[0], r.copied))
        want = trim_copies(list(values), [[3, 2], [3 - j], [], []])
        assert _fields(got[j][0]) == _fields(want[0])
        assert (
            got[j][1].tolist() == want[1].tolist() == [3 + 10 * j, 1 + 10 * j, 4 + 10 * j][: 3 - j]
        )
        assert torch.equal(got[j][2], values[2]) and got[j][3] == "x"
    assert event.waits == 1, "one wait for the chunk"
    copies = {v[1].untyped_storage().data_ptr() for v in got}
    assert len(copies) == 1, "one copy of the int64 buffers for every call"
    assert copies.isdisjoint({b.untyped_storage().data_ptr() for b in shared.joints.values()})
    first = shared.copy
    shared.record()  # the next replay: copied again
    values, r = calls[0]
    plan = r.plan(values, [])
    plan.copies(plan.read(r)[0], r.copied)
    assert shared.copy is not first and event.waits == 2


def test_a_chunks_calls_pack_into_rows_that_never_overlap():
    """``_Shared.into``: the calls' rows of a dtype follow one another in capture order; a
    call packing more than the first (which sized the joint buffer) gets a buffer of its
    own past the joint's end, never a row overlapping another call's."""
    from gsample.runtime.cuda_graphs import _Shared

    shared = _Shared(3, _Event())
    rows = [shared.into(j)(torch.int64, n, torch.device("cpu")) for j, n in enumerate((4, 6, 4))]
    joint = shared.joints[torch.int64]
    assert joint.numel() == 12
    spans = [(r.data_ptr(), r.data_ptr() + 8 * r.numel()) for r in rows]
    for a in range(3):
        for b in range(a + 1, 3):
            assert spans[a][1] <= spans[b][0] or spans[b][1] <= spans[a][0], (a, b)
    for r, v in zip(rows, (1, 2, 3)):
        r.fill_(v)
    shared.record()
    assert [shared.copied(r).tolist() for r in rows] == [[1] * 4, [2] * 6, [3] * 4]
