"""A compiled call's host work done once, not per call (gsample issue 36): the lowered program
run without generators where a call would not pause, op-key prefixes and static arguments'
cache keys remembered, the output built from its slots, and a loader sampling one mini-batch at
a time running its epoch's prepared program. Every one must leave samples, errors and the
random stream as they were. Tests taking ``device`` run on a GPU too (a node-wise sampler's
call there: one CUDA graph region, ``launch`` then ``land``, without generators)."""

import functools

import pytest
import torch
from helpers import assert_same, graphsage

import gsample as gs
from gsample.base.random import batch_scope, combine, key_prefix, op_key, stream_state
from gsample.runtime import Options, run
from gsample.runtime.program import _prefix


@pytest.fixture(scope="module")
def A():
    return gs.datasets.rmat(500, 5000, seed=0)


def _seeds(i, n=500, size=16, device="cpu"):
    return gs.datasets.uniform_seeds(n, size, seed=i).to(device)


def test_remembered_prefixes_are_the_op_keys():
    for seed, ordinal, batch in [(0, 0, 0), (7, 3, 11), (2**64 - 1, 12345, 2**40)]:
        assert _prefix(seed, ordinal) == key_prefix(seed, ordinal)
        assert _prefix(seed, ordinal) == key_prefix(seed, ordinal)  # (a hit)
        assert combine(_prefix(seed, ordinal), batch) == op_key(seed, ordinal, batch)


def test_calls_draw_as_eager_calls_and_move_the_stream_as_they_do(A, device):
    G = A.to(device)
    fn = gs.compile(graphsage)
    gs.manual_seed(3)
    got = [fn(G, _seeds(i, device=device)) for i in range(4)]  # (a GPU: replays from the 3rd)
    after = stream_state().ordinal
    gs.manual_seed(3)
    want = [graphsage(G, _seeds(i, device=device)) for i in range(4)]
    assert stream_state().ordinal == after
    for g, w in zip(got, want):
        assert_same(g, w)


def test_a_failed_call_gives_its_ordinals_back(A, device):
    G = A.to(device)
    fn = gs.compile(graphsage)
    for i in range(3):
        fn(G, _seeds(i, device=device))
    gs.manual_seed(5)
    before = stream_state().ordinal
    with pytest.raises(IndexError, match="cols: node id 500 is out of range"):
        fn(G, torch.tensor([1, 500], device=device))
    with pytest.raises(IndexError, match="cols: node id -2 is negative"):
        fn(G, torch.tensor([-2, 3], device=device))
    assert stream_state().ordinal == before
    gs.manual_seed(5)
    got = fn(G, _seeds(7, device=device))
    gs.manual_seed(5)
    assert_same(got, graphsage(G, _seeds(7, device=device)))


def test_a_tuple_output_stays_a_tuple_and_repeated_blocks_are_returned_twice(A):
    def twice(A, seeds):
        s = A[:, seeds].individual_sample(5)
        return (s, s, s.all_nodes())

    fn = gs.compile(twice, backend="torch")
    gs.manual_seed(0)
    out = fn(A, _seeds(1))
    assert type(out) is tuple and len(out) == 3
    assert out[0] is not out[1] and out[0].csc is out[1].csc
    gs.manual_seed(0)
    assert_same(list(out), list(twice(A, _seeds(1))))


def test_static_tuples_are_keyed_once_and_lists_every_call(A):
    fn = gs.compile(graphsage, backend="torch")
    fanouts = (5, 3)
    fn(A, _seeds(0), fanouts)
    fn(A, _seeds(1), fanouts)
    fn(A, _seeds(1), (5, 3))  # an equal tuple: the same program
    assert fn.traces == 1
    listed = [5, 3]
    fn(A, _seeds(0), listed)
    listed[1] = 4  # the list changed in place: a new value, a new program
    blocks = fn(A, _seeds(0), listed)
    assert fn.traces == 3 and len(blocks) == 2
    assert int(blocks[1].csc.degrees().max()) <= 4


def test_prepare_is_the_call(A, device):
    G = A.to(device)
    fn = gs.compile(graphsage)
    program, arguments = fn.prepare(G, _seeds(0, device=device))
    gs.manual_seed(1)
    got = run(program, {**arguments, "seeds": _seeds(2, device=device)})
    gs.manual_seed(1)
    assert_same(got, fn(G, _seeds(2, device=device)))
    bare = gs.compile(graphsage, runtime=Options(lowered=False))
    assert bare.prepare(G, _seeds(0, device=device)) is None


@pytest.mark.parametrize("lowered", [True, False])
@pytest.mark.parametrize("overlap", [True, False])
def test_a_loader_one_at_a_time_samples_each_batch_as_its_call(A, device, lowered, overlap):
    G = A.to(device)
    fn = gs.compile(graphsage, runtime=Options(lowered=lowered, overlap=overlap))
    seeds = torch.arange(100, device=device)
    got = list(gs.DataLoader(G, fn, seeds, 16, seed=4))
    epoch_seed = gs.DataLoader(G, fn, seeds, 16, seed=4)._epoch_seed()
    for b in got:
        with batch_scope(epoch_seed, b.index):
            assert_same(b.out, graphsage(G, b.seeds))


def test_a_loader_calls_again_after_its_sampler_cache_is_cleared(A):
    want = [b.out for b in gs.DataLoader(A, gs.compile(graphsage), torch.arange(64), 16, seed=0)]
    fn = gs.compile(graphsage, backend="torch")
    got = []
    for b in gs.DataLoader(A, fn, torch.arange(64), 16, seed=0):
        got.append(b.out)
        fn.clear_cache()  # the next mini-batch's call traces again
    assert fn.traces == len(want)
    for g, w in zip(got, want):
        assert_same(g, w)


def _epoch(loader):
    """The seed of the first epoch of ``loader`` (made with ``seed=``): a twin's."""
    twin = gs.DataLoader(loader.A, loader.sampler_fn, loader.seeds, loader.batch_size, seed=4)
    return twin._epoch_seed()


def test_a_loader_samples_with_a_list_as_it_is_at_each_mini_batch(A, device):
    # a static list changed in place between mini-batches (a curriculum) is a new value
    # for each call: the loader's mini-batches sample with it as it is then (overlap off:
    # one at a time on a GPU too)
    G, fanouts = A.to(device), [5, 3]
    fn = gs.compile(graphsage, runtime=Options(overlap=False))
    seeds = torch.arange(64, device=device)
    loader = gs.DataLoader(G, functools.partial(fn, fanouts=fanouts), seeds, 16, seed=4)
    epoch_seed, got = _epoch(loader), []
    for b in loader:
        got.append((b, list(fanouts)))
        fanouts[1] = 1
    assert [f for _, f in got] == [[5, 3], [5, 1], [5, 1], [5, 1]]
    for b, f in got:
        with batch_scope(epoch_seed, b.index):
            assert_same(b.out, graphsage(G, b.seeds, f))


def test_a_loader_runs_the_program_of_the_backend_set_at_each_mini_batch(A, device):
    G = A.to(device)
    fn = gs.compile(graphsage, runtime=Options(overlap=False))  # gs.use_backend's at each call
    loader = gs.DataLoader(G, fn, torch.arange(64, device=device), 16, seed=4)
    epoch_seed, batches = _epoch(loader), iter(loader)
    first = next(batches)
    # (a CPU graph runs the torch code under either name, but another program)
    other = "torch" if gs.current_backend() == "cuda" else "cuda"
    with gs.use_backend(other):
        rest = list(batches)
    assert fn.traces == 2
    for b in [first, *rest]:
        with batch_scope(epoch_seed, b.index):
            assert_same(b.out, graphsage(G, b.seeds))


def test_a_gathering_loader_traces_again_after_its_sampler_cache_is_cleared(A, device):
    # with features the loader samples with the sampler's variant (with_passes): clearing
    # the sampler's cache clears the variant's too (the next mini-batch traces again)
    G, x = A.to(device), torch.randn(500, 4, device=device)
    fn = gs.compile(graphsage, runtime=Options(overlap=False))
    seeds = torch.arange(64, device=device)
    loader = gs.DataLoader(G, fn, seeds, 16, seed=4, features=x, pipeline=False)
    epoch_seed, variant, got = _epoch(loader), loader._sampler, []
    for b in loader:
        got.append(b)
        fn.clear_cache()
    assert variant.traces == len(got)
    for b in got:
        with batch_scope(epoch_seed, b.index):
            assert_same(b.out, graphsage(G, b.seeds))


def test_prepare_leaves_a_mutable_static_argument_to_the_call_and_stamps_change(A):
    fn = gs.compile(graphsage)
    assert fn.prepare(A, _seeds(0), [5, 3]) is None  # keyed per call, as it is then
    assert fn.prepare(A, _seeds(0), (5, 3)) is not None
    stamp = fn.stamp()
    with gs.use_backend("torch"):
        assert fn.stamp() != stamp
    fn.clear_cache()
    assert fn.stamp() != stamp
    assert gs.compile(graphsage, backend="torch").stamp() == (0, None)
