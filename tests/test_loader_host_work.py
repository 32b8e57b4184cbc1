"""The pipelined loader's host work per mini-batch it hands out, counted on the CPU: Python
calls (``sys.setprofile``) and torch op dispatches (a ``TorchDispatchMode``) in each of its
threads. On a GPU the loop's thread is the model's, and every call or op of the stages'
threads competes with the model's launches for the interpreter: these bounds keep that work
from growing back (counts, not times). A super-batch's rows are gathered in one op per table,
the same rows as one mini-batch at a time."""

import collections
import contextlib
import contextvars
import functools
import sys
import threading

import pytest
import torch
from helpers import example
from torch.utils._python_dispatch import TorchDispatchMode

import gsample as gs
import gsample.loader.pipeline as pipeline
from gsample.loader import features
from gsample.loader.features import adjacent


class _Ops(TorchDispatchMode):
    def __init__(self, counts: collections.Counter, on: list):
        super().__init__()
        self.counts, self.on = counts, on

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.on[0]:
            self.counts[str(func)] += 1
        return func(*args, **(kwargs or {}))


class Counted:
    """Counts, per thread (``"loop"``, ``"sample_stage"``, ``"gather_stage"``), Python calls
    (``mode="calls"``) or torch ops (``mode="ops"``) while ``on``. The stages' threads are
    counted through the contexts the pipeline runs them in (``contextvars.copy_context``)."""

    def __init__(self, monkeypatch, mode: str):
        self.mode, self.on = mode, [False]
        self.counts = collections.defaultdict(collections.Counter)
        counted = self

        class Context:
            def __init__(self):
                self.context = contextvars.copy_context()

            def run(self, fn, *args):
                with counted.counting(fn.__name__):
                    return self.context.run(fn, *args)

        monkeypatch.setattr(pipeline, "contextvars", type("cv", (), {"copy_context": Context}))

    def _profile(self, name):
        counts = self.counts[name]

        def profile(frame, event, arg):
            if self.on[0] and event == "call":
                counts[frame.f_code.co_name] += 1

        return profile

    @contextlib.contextmanager
    def counting(self, name: str):
        if self.mode == "ops":
            with _Ops(self.counts[name], self.on):
                yield
            return
        sys.setprofile(self._profile(name))
        try:
            yield
        finally:
            sys.setprofile(None)

    def epoch(self, loader, whole: bool = False) -> list:
        """An epoch of ``loader``, counted from its first mini-batch on (the epoch's own
        shuffle is not a mini-batch's work), or ``whole`` (the stages run ahead of the loop:
        what they do for every mini-batch)."""
        if whole:
            with self.counting("loop"):
                self.on[0] = True
                batches = list(loader)
                self.on[0] = False
            return batches
        it = iter(loader)
        batches = [next(it)]
        with self.counting("loop"):
            self.on[0] = True
            batches += list(it)
            self.on[0] = False
        return batches

    def per_batch(self, name: str, batches: int) -> float:
        return sum(self.counts[name].values()) / batches


@pytest.fixture
def setup():
    A = gs.datasets.rmat(3000, 40000, seed=3)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(A.num_nodes, 128, generator=g)  # rows of 512 bytes: always aligned
    y = torch.randint(0, 5, (A.num_nodes,), generator=g)
    fn = functools.partial(gs.compile(example("graphsage").graphsage), fanouts=(5, 4, 3))
    return A, x, y, fn, torch.arange(0, 3000, 3)


def _loader(setup, **kw):
    A, x, y, fn, seeds = setup
    kw = {"features": x, "labels": y, "pipeline": True, **kw}
    return gs.DataLoader(A, fn, seeds, 16, seed=2, **kw)  # 63 mini-batches


def _same(got: list, want: list) -> None:
    """The same values, dtypes, shapes and strides; floating-point rows starting 512-byte
    aligned in their storage, as a gather of their own does (the model's kernels round
    alike)."""
    assert [b.index for b in got] == [b.index for b in want]
    for a, b in zip(got, want):
        for f in ("seeds", "n_id", "x", "y"):
            u, v = getattr(a, f), getattr(b, f)
            assert u.dtype == v.dtype and u.shape == v.shape and torch.equal(u, v), (a.index, f)
            assert u.stride() == v.stride() and u.is_contiguous() == v.is_contiguous(), (a.index, f)
            if f == "x":
                assert u.storage_offset() * u.element_size() % features.ROWS_ALIGN == 0
                assert u.data_ptr() % (features.ROWS_ALIGN if u.is_cuda else 64) == 0


def _shared(batch) -> bool:
    """Whether ``batch.x``'s storage holds more than its rows (a group's)."""
    return batch.x.untyped_storage().nbytes() > batch.x.nbytes


def test_adjacent_finds_consecutive_views_of_one_tensor():
    ids = torch.arange(12)
    whole, sizes = adjacent(list(ids.split_with_sizes([4, 0, 5, 3])))
    assert torch.equal(whole, ids) and sizes == [4, 0, 5, 3] and whole._base is ids
    parts = list(ids.split_with_sizes([4, 8]))
    assert adjacent(parts[::-1]) is None  # out of order
    assert adjacent([ids[:4], ids[5:]]) is None  # a gap
    assert adjacent([ids[:4], torch.arange(4, 12)]) is None  # another tensor
    assert adjacent([torch.arange(3)]) is None  # not a view
    assert adjacent([ids[0:6:2], ids[6:9]]) is None  # strided
    assert adjacent([]) is None


@pytest.mark.parametrize("width", [128, 3])
def test_a_super_batch_s_rows_are_those_of_one_mini_batch_at_a_time(
    setup, width, device, monkeypatch
):
    """Gathered for the group (128 float32 features: every part's rows start 512-byte
    aligned) or, where a part would start unaligned (3 features), batch by batch: the same
    ``n_id``, ``x`` and ``y`` as one at a time and as without the pipeline. On a GPU the
    gathering thread marks the loop's stream as a user of the batches' memory, not the
    loop's thread."""
    A, _, y, fn, seeds = setup
    x = torch.randn(A.num_nodes, width, generator=torch.Generator().manual_seed(1))
    setup = (A.to(device), x.to(device), y.to(device), fn, seeds.to(device))
    want = list(_loader(setup))
    plain = list(_loader(setup, super_batch=8, pipeline=False))
    counted = Counted(monkeypatch, "ops")
    got = counted.epoch(_loader(setup, super_batch=8), whole=True)
    _same(got, want), _same(plain, want)
    grouped = width == 128
    # each super-batch's x (and y) one storage, or one each; never views to autograd
    bases = {b.x.untyped_storage().data_ptr() for b in got[1:]}
    assert (len(bases) < len(got) - 1) == grouped
    assert all(_shared(b) == grouped for b in got[8:])
    assert all(b.x._base is None and b.y._base is None for b in got)
    gathers = counted.counts["gather_stage"]["aten.index_select.default"]
    groups = -(-len(got) // 8) + 1  # (on a GPU mini-batch 0 is measured alone, a group)
    assert gathers <= 2 * groups if grouped else gathers == 2 * len(got)
    recorded = "aten.record_stream.default"
    assert counted.counts["loop"][recorded] == 0
    assert (counted.counts["gather_stage"][recorded] > 0) == (device.type == "cuda")


def test_group_gather_can_be_switched_off(setup, monkeypatch):
    monkeypatch.setattr(features, "GROUP_GATHER", False)
    got = list(_loader(setup, super_batch=8))
    assert not any(_shared(b) for b in got)
    _same(got, list(_loader(setup)))


def test_a_table_whose_rows_start_unaligned_is_gathered_batch_by_batch_once(setup, monkeypatch):
    """100 float32 features (400-byte rows): a super-batch's parts would start unaligned, so
    each mini-batch's rows are gathered alone, from the ``n_id`` the group's attempt made
    (``batch_nodes`` once a mini-batch, not twice)."""
    A, _, y, fn, seeds = setup
    x = torch.randn(A.num_nodes, 100, generator=torch.Generator().manual_seed(1))
    setup = (A, x, y, fn, seeds)
    counted = Counted(monkeypatch, "calls")
    got = counted.epoch(_loader(setup, super_batch=8), whole=True)
    assert not any(_shared(b) for b in got)
    assert counted.counts["gather_stage"]["batch_nodes"] == len(got)
    _same(got, list(_loader(setup)))


def test_rows_keep_the_autograd_of_a_gather_of_their_own(setup):
    """A table that requires grad (a learned embedding) is gathered batch by batch (each
    mini-batch's backward its own: a group's would be freed by the first); a group's rows
    take an in-place op whose operand requires grad, as a tensor of their own does (views
    of one split would refuse it)."""
    A, x, y, fn, seeds = setup
    table = torch.nn.Parameter(x.clone())
    n = 0
    for batch in _loader((A, table, y, fn, seeds), super_batch=8):
        assert not _shared(batch)
        batch.x.sum().backward()
        n += 1
    assert n == 63 and torch.equal(table.grad.sum(1) != 0, table.grad.abs().sum(1) != 0)
    w = torch.ones(x.shape[1], requires_grad=True)
    for batch in _loader(setup, super_batch=8):
        batch.x.mul_(w)  # (in place, an operand that requires grad)
        batch.x.sum().backward()
    assert w.grad is not None


#: (super_batch, thread) -> most Python calls a mini-batch handed out may cost (measured on
#: this graph with Python 3.11: one at a time, the loop 24, gathering 53, before the gate's
#: blocks became objects and the rows' gather a method call 49 and 61; super-batches of 8,
#: the loop 9.5 and gathering 20, before 26 and 35)
CALLS = {
    (None, "loop"): 32,
    (None, "gather_stage"): 58,
    (8, "loop"): 14,
    (8, "gather_stage"): 28,
}
#: ... and torch ops (one at a time gathering 2, x's and y's; super-batches of 8 0.56: five a
#: super-batch, before 16)
OPS = {(None, "loop"): 0, (None, "gather_stage"): 2, (8, "loop"): 0, (8, "gather_stage"): 1}


@pytest.mark.parametrize("super_batch", [None, 8])
def test_the_host_work_a_mini_batch_costs_is_bounded(setup, super_batch, monkeypatch):
    """Python calls and torch ops per mini-batch in the loop's thread (the model's, on a GPU)
    and the gathering thread stay within bounds: the loop hands out batches (no op), the
    gathering thread gathers a super-batch's rows in one op per table. Where a bound fails,
    the host work per mini-batch grew: find the new calls (``sys.setprofile``) before
    raising it."""
    for mode, bounds in (("calls", CALLS), ("ops", OPS)):
        counted = Counted(monkeypatch, mode)
        n = len(counted.epoch(_loader(setup, super_batch=super_batch)))
        for thread in ("loop", "gather_stage"):
            got = counted.per_batch(thread, n)
            assert got <= bounds[(super_batch, thread)], (mode, thread, got)
        assert counted.counts["sample_stage"]  # (the stages' threads were counted)
        assert threading.current_thread() is threading.main_thread()


def test_each_storage_of_a_group_is_recorded_once(setup):
    """``pipeline._distinct`` (what the gathering thread ``record_stream`` s on a GPU): one
    tensor per storage of the group's batches, every storage of their tensors (as
    ``gsample.runtime.tensors`` finds them) among them, for blocks and for other outputs."""
    from gsample.runtime import tensors

    for super_batch in (None, 8):
        group = list(_loader(setup, super_batch=super_batch, pipeline=False))[:8]
        got = pipeline._distinct(group, cuda=False)
        ptrs = [t.untyped_storage().data_ptr() for t in got]
        every = {
            t.untyped_storage().data_ptr()
            for b in group
            for t in [*tensors(b.out), b.seeds, b.n_id, b.x, b.y]
        }
        assert len(ptrs) == len(set(ptrs)) and set(ptrs) == every
        assert pipeline._distinct(group) == []  # (no CUDA tensor)
    odd = [gs.Batch(seeds=torch.arange(3), index=0, out={"a": torch.ones(2)})]
    assert len(pipeline._distinct(odd, cuda=False)) == 2


def test_a_super_batch_s_blocks_are_read_by_name(setup, monkeypatch):
    """``pipeline._fields`` reads a super-batch's blocks (``SplitCSC``) field by field, as a
    mini-batch's CSCs: no ``dataclasses.fields`` walk (``_tensors``) per block."""
    group = list(_loader(setup, super_batch=8, pipeline=False))[:8]
    want = [[id(t) for t in pipeline._fields(b)] for b in group]

    def walked(batch):
        raise AssertionError("a dataclass walk per block")

    monkeypatch.setattr(pipeline, "_tensors", walked)
    assert [[id(t) for t in pipeline._fields(b)] for b in group] == want


def test_a_cached_store_s_group_rows_and_counts_are_those_of_one_at_a_time(setup):
    """The cache's path (``always_cache``: on a CPU graph it only copies) gathers a
    super-batch's rows together too: the same rows, lookups and hits as batch by batch."""
    from gsample.loader.features import FeatureStore

    A, x, *_ = setup
    counts = []
    for pipelined in (False, True):
        loader = _loader(setup, super_batch=8, pipeline=pipelined)
        store = loader.feature_store = FeatureStore(x, A, cache_bytes=1 << 20, always_cache=True)
        got = list(loader)
        assert all(torch.equal(b.x, x[b.n_id]) for b in got)
        assert all(_shared(b) == pipelined for b in got[8:])
        counts.append((store.lookups, store.hits))
    assert counts[0] == counts[1] and 0 < counts[0][1] < counts[0][0]


@pytest.mark.parametrize("pipelined", [True, "stream"])
@pytest.mark.parametrize("super_batch", [None, 8])
def test_the_loop_s_late_kernels_read_rows_no_stage_has_reused(
    setup, super_batch, device, pipelined
):
    """On a GPU: each batch's ``n_id`` and ``x`` are read by the loop's stream behind a long
    kernel and the batch is dropped at once, while the stages allocate the next groups on
    their own streams. The rows read are the table's: the allocator gave no stage their
    memory before the loop's kernels ran (``record_stream`` on the loop's stream, by the
    gathering thread, and by the loop's thread once the loop moved to another stream, half
    way through one at a time: every group's hand-out then runs on it). A batch of each
    eight kept to the end still holds its rows. The same with ``pipeline="stream"`` (the
    loop's thread marks the loop's stream at each group's hand-out)."""
    if device.type != "cuda":
        pytest.skip("the caching allocator's streams: a GPU")
    A, x, y, fn, seeds = setup
    X = x.to(device)
    setup = (A.to(device), X, y.to(device), fn, seeds.to(device))
    loader = _loader(setup, super_batch=super_batch, pipeline=pipelined)
    other = torch.cuda.Stream(device)
    flags, kept, it = [], [], iter(loader)
    for i in range(10**6):
        moved = super_batch is None and i >= 32
        if moved and i == 32:
            other.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(other) if moved else contextlib.nullcontext():
            batch = next(it, None)
            if batch is None:
                break
            torch.cuda._sleep(20_000_000)  # (the loop's stream runs behind the stages)
            flags.append((batch.x == X[batch.n_id]).all())
            if i % 8 == 0:
                kept.append(batch)
        del batch
    torch.cuda.synchronize(device)
    assert len(flags) == 63 and bool(torch.stack(flags).all())
    assert all(torch.equal(b.x, X[b.n_id]) for b in kept)
