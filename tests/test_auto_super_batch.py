"""``super_batch="auto"`` never chooses a size slower than one at a time (the decision, from
injected timings, not the wall clock), and a super-batch that fails releases what its run
allocated before its error reaches the caller."""

import functools
import gc
import statistics
import traceback
import weakref

import pytest
import torch
from helpers import assert_same, example, random_seeds

import gsample as gs
import gsample.loader.dataloader as dataloader_module
import gsample.runtime.super_batcher as super_batcher_module
from gsample.loader.super_batching import AUTO_MARGIN, auto_statistic, choose_super_batch

BATCH = 16


@pytest.fixture(scope="module")
def graph():
    return gs.datasets.rmat(1000, 10000, seed=0)


def sampler():
    return functools.partial(gs.compile(example("graphsage").graphsage), fanouts=(5, 3))


# ----------------------------------------------------------------------------- the decision
@pytest.mark.parametrize(
    "runs, size",
    [
        ({1: [1.0, 1.1], 2: [0.95, 0.97]}, 1),  # 5% faster: within the noise, one at a time
        ({1: [1.0, 1.0], 2: [0.85, 0.86], 4: [0.8, 1.3]}, 4),  # past the margin: the best
        ({1: [1.0], 2: [0.5], 4: [0.5], 8: [0.7]}, 2),  # a tie: the smaller size
        ({1: [1.0, 3.0], 2: [1.2, 1.5]}, 1),  # 1's best run is the reference, not its worst
        ({1: 1.0, 16: 0.2}, 16),  # floats: one run each
        ({1: [1.0]}, 1),
        ({}, 1),  # nothing timed (too few mini-batches, or a cap of 1)
        ({2: [0.1], 4: [0.05]}, 1),  # without one at a time, nothing to beat
        ({1: [], 2: [0.5]}, 1),
    ],
)
def test_a_size_is_kept_only_where_it_beats_one_at_a_time_by_the_margin(runs, size):
    assert choose_super_batch(runs) == size


def test_the_margin_is_the_threshold():
    runs = {1: [1.0], 2: [1.0 - AUTO_MARGIN]}  # exactly the margin: not enough
    assert choose_super_batch(runs) == 1
    assert choose_super_batch({1: [1.0], 2: [0.99 - AUTO_MARGIN]}) == 2
    assert choose_super_batch({1: [1.0], 2: [0.99]}, margin=0) == 2
    assert choose_super_batch({1: [1.0], 2: [0.6]}, margin=0.5) == 1
    assert 0.05 <= AUTO_MARGIN < 0.5


@pytest.mark.parametrize(
    "runs, margin, error, match",
    [
        ([1.0], AUTO_MARGIN, TypeError, "runs: expected a dict"),
        ({0: [1.0]}, AUTO_MARGIN, ValueError, "runs: sizes must be ints >= 1"),
        ({1.5: [1.0]}, AUTO_MARGIN, ValueError, "runs: sizes must be ints >= 1"),
        ({1: [1.0]}, 1.0, ValueError, r"margin: must be a number in \[0, 1\)"),
        ({1: [1.0]}, -0.1, ValueError, "margin"),
        ({1: [1.0]}, True, ValueError, "margin"),
    ],
)
def test_bad_runs_and_margins_are_refused_by_name(runs, margin, error, match):
    with pytest.raises(error, match=match):
        choose_super_batch(runs, margin)


class Clock:
    """A fake ``time`` module: ``perf_counter`` advances only as the loader samples, by
    ``per_batch[N]`` seconds a mini-batch for a run of ``N`` (one at a time: ``N = 1``)."""

    def __init__(self, per_batch):
        self.now, self.per_batch = 0.0, per_batch

    def perf_counter(self):
        return self.now

    def charge(self, n):
        self.now += n * self.per_batch(n)


def auto_loader(A, seeds, clock, monkeypatch):
    """A ``"auto"`` loader whose clock is ``clock`` and with room for sizes 1 .. 8."""
    monkeypatch.setattr(dataloader_module, "time", clock)
    fn = sampler()
    loader = gs.DataLoader(A, fn, seeds, BATCH, seed=3, super_batch="auto", memory_budget=1 << 40)

    def one(A, s):
        clock.charge(1)
        return fn(A, s)

    real_run = loader._super.run

    def run(parts, *args, **kwargs):
        clock.charge(len(parts))
        return real_run(parts, *args, **kwargs)

    loader.sampler_fn = one
    loader._super.run = run
    return loader


@pytest.mark.parametrize(
    "per_batch, timed, chosen",
    [
        # super-batching a few per cent faster (the CPU's usual case): one at a time
        (lambda n: 1.0 if n == 1 else 0.96, {1, 2, 4, 8}, 1),
        # slower at every size (LADIES on the CPU): one at a time
        (lambda n: 1.0 if n == 1 else 1.0 + 0.1 * n, {1, 2, 4, 8}, 1),
        # faster the larger (a GPU): the largest timed
        (lambda n: 1.0 / n, {1, 2, 4, 8}, 8),
        # best at 4, then doubling stops paying
        (lambda n: {1: 1.0, 2: 0.7, 4: 0.5}.get(n, 0.8), {1, 2, 4, 8}, 4),
    ],
)
def test_auto_picks_one_at_a_time_unless_a_size_is_clearly_faster(
    graph, monkeypatch, per_batch, timed, chosen
):
    seeds = random_seeds(46 * BATCH, 2, graph.num_nodes)  # 1 + 3 (1 + 2 + 4 + 8) = 46
    gs.manual_seed(0)
    ref = list(gs.DataLoader(graph, sampler(), seeds, BATCH, seed=3))
    loader = auto_loader(graph, seeds, Clock(per_batch), monkeypatch)
    got = list(loader)
    assert set(loader.auto_times) == set(loader.auto_runs) == timed
    for n, runs in loader.auto_runs.items():  # the first run of each size is not counted
        assert len(runs) == 2 and runs == pytest.approx([per_batch(n)] * 2)
        assert loader.auto_times[n] == pytest.approx(per_batch(n))
    assert loader.super_batch_size == chosen
    assert [b.index for b in got] == list(range(len(ref)))
    for g, r in zip(got, ref):  # whatever the choice, the one-at-a-time batches
        assert torch.equal(g.seeds, r.seeds)
        assert_same(g.out, r.out, f"batch {r.index}")


def test_on_the_cpu_one_light_run_does_not_decide(graph, monkeypatch):
    """The runs of a size sample different mini-batches: on the CPU a size is judged by
    the median of its runs (:func:`auto_statistic`), so a size whose one run was light and
    the other heavy (FastGCN super-batched by 2 on web-NotreDame: 3.6 and 4.5 ms a
    mini-batch against 4.2 and 4.3 one at a time) is not kept; by its best run it would be
    (a GPU's rule, where host noise only adds time)."""
    light = {1: [4.3e-3, 4.2e-3], 2: [4.5e-3, 3.6e-3]}
    assert choose_super_batch(light) == 2
    assert choose_super_batch(light, statistic=statistics.median) == 1
    assert auto_statistic(torch.device("cpu")) is statistics.median
    assert auto_statistic(torch.device("cuda", 0)) is min
    two = iter([1.0, 0.85, 1.05])  # the runs of 2 (the first not counted): light, heavy

    def per_batch(n):  # (called once a run)
        return {1: 1.0, 2: None}.get(n, 1.2) or next(two)

    seeds = random_seeds(46 * BATCH, 2, graph.num_nodes)
    loader = auto_loader(graph, seeds, Clock(per_batch), monkeypatch)
    list(loader)
    assert min(loader.auto_runs[2]) < (1 - AUTO_MARGIN) * min(loader.auto_runs[1])
    assert loader.super_batch_size == 1


def test_the_runs_after_the_choice_are_of_the_chosen_size(graph, monkeypatch):
    sizes = []
    clock = Clock(lambda n: 1.0 if n == 1 else 0.5)
    seeds = random_seeds(60 * BATCH, 4, graph.num_nodes)
    loader = auto_loader(graph, seeds, clock, monkeypatch)
    run = loader._super.run

    def recording(parts, *args, **kwargs):
        sizes.append(len(parts))
        return run(parts, *args, **kwargs)

    loader._super.run = recording
    assert len(list(loader)) == 60
    assert loader.super_batch_size == 2  # a tie from 2 on: the smallest
    # batch 0 measured alone; timed: 3 runs of 2, 4 and 8 (size 1 is one at a time, without
    # the super-batcher); then 60 - 46 = 14 in runs of 2
    assert sizes == [1] + [2] * 3 + [4] * 3 + [8] * 3 + [2] * 7


# ----------------------------------------------------------------------------- a failed run
@pytest.mark.parametrize("in_flight", [False, True])
def test_a_super_batch_out_of_memory_falls_back_and_frees_its_buffers(
    graph, monkeypatch, in_flight
):
    """Runs of 4 mini-batches allocate (their outputs, and a large tensor in the failing
    frame), then run out of memory; runs of 2 fit. The loader samples the failed run's
    mini-batches one by one (nothing the failed run made alive by then, without a garbage
    collection), warns once, and splits every later run in halves: the epoch completes
    with the batches one at a time samples. Also with two super-batches in flight (a GPU's
    path, forced here)."""
    seeds = random_seeds(8 * BATCH, 6, graph.num_nodes)
    alive, sizes = [], []
    real_start = super_batcher_module.SuperBatcher.start

    def failing_start(self, parts, observe=None):  # a run, also one paused in flight
        outs = yield from real_start(self, parts, observe)
        sizes.append(len(outs))
        if len(outs) >= 4:
            big = torch.empty(1 << 20)
            alive.extend(weakref.ref(t) for t in [big, *tensors(outs)])
            raise MemoryError("out of memory (a test's)")
        return outs

    fn = sampler()
    ref = list(gs.DataLoader(graph, fn, seeds, BATCH, seed=1))
    monkeypatch.setattr(super_batcher_module.SuperBatcher, "start", failing_start)
    if in_flight:
        monkeypatch.setattr(gs.DataLoader, "_overlaps", lambda self, fn=None: fn is not None)
    loader = gs.DataLoader(graph, fn, seeds, BATCH, seed=1, super_batch=4)
    at_retry = []

    def one(A, s):
        at_retry.append(sum(r() is not None for r in alive))
        return fn(A, s)

    loader.sampler_fn = one
    gc.disable()  # what is freed must be freed by reference counting alone
    try:
        with pytest.warns(RuntimeWarning, match=r"super_batch: 4 mini-batches in one run ran"):
            got = list(loader)
        assert len(alive) > 1 and all(r() is None for r in alive)
        assert at_retry == [0] * 4  # the failed run's 4, one by one, after it was freed
    finally:
        gc.enable()
    assert sizes == [4, 2, 2] and loader.out_of_memory_at == 4
    assert [b.index for b in got] == list(range(8))
    for g, r in zip(got, ref, strict=True):
        assert_same(g.out, r.out)


def test_a_failure_that_is_not_out_of_memory_still_raises(graph, monkeypatch):
    """Only an allocation failure falls back: any other error of a run whose mini-batches
    sample one by one names super_batch, its cause kept (and printed)."""

    def failing_finish(flight):
        raise ValueError("a kernel's own error (a test's)")

    monkeypatch.setattr(super_batcher_module, "finish", failing_finish)
    seeds = random_seeds(8 * BATCH, 6, graph.num_nodes)
    loader = gs.DataLoader(graph, sampler(), seeds, BATCH, seed=1, super_batch=4)
    with pytest.raises(RuntimeError, match=r"super_batch: sampling mini-batches 0\.\.3") as info:
        next(iter(loader))
    assert isinstance(info.value.__cause__, ValueError)
    assert "failing_finish" in "".join(traceback.format_exception(info.value))
    assert loader.out_of_memory_at is None


def _on_a_gpu(monkeypatch, budget: int):
    """Pretend the graph is on a GPU with ``budget`` bytes for a given super_batch's runs."""
    monkeypatch.setattr(dataloader_module.DataLoader, "_capped_on_gpu", lambda self: True)
    monkeypatch.setattr(dataloader_module, "default_budget", lambda device: budget)


def test_a_given_size_on_a_gpu_runs_within_the_budget(graph, monkeypatch):
    """``super_batch=4`` on a GPU: mini-batch 0 is measured alone, and runs hold no more
    mini-batches than the default budget fits (here fewer than 4), the batches those one
    at a time."""
    seeds = random_seeds(8 * BATCH, 7, graph.num_nodes)
    ref = list(gs.DataLoader(graph, sampler(), seeds, BATCH, seed=1))
    probe = gs.DataLoader(graph, sampler(), seeds, BATCH, seed=1, super_batch=4)
    _, nbytes = probe._super.measure(seeds[:BATCH], 0, 0)
    budget = 2 * nbytes + nbytes // 2
    _on_a_gpu(monkeypatch, budget)
    loader = gs.DataLoader(graph, sampler(), seeds, BATCH, seed=1, super_batch=4)
    sizes, run = [], loader._super.run
    monkeypatch.setattr(
        loader._super, "run", lambda parts, *a, **k: sizes.append(len(parts)) or run(parts, *a, **k)
    )
    got = list(loader)
    cap = loader.memory_cap
    assert cap == budget // loader.batch_bytes and 1 < cap < 4
    assert sizes[0] == 1 and max(sizes) <= cap and sum(sizes) == 8  # 0 measured alone
    assert [b.index for b in got] == list(range(8))
    for g, r in zip(got, ref, strict=True):
        assert_same(g.out, r.out)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_a_cache_built_once_per_graph_is_not_a_mini_batch_s_bytes():
    """The temporal program builds the graph's time order (16 bytes an edge, kept per graph)
    on its first call: measuring mini-batch 0 must not count it as that mini-batch's
    memory, or a given super_batch is capped by a cost no later run pays."""
    from gsample.interop.pyg.temporal import disjoint_sample

    A = gs.datasets.rmat(20_000, 400_000, seed=0).to("cuda")
    g = torch.Generator().manual_seed(0)
    edge_time = torch.randint(0, 1000, (A.num_edges,), generator=g).cuda()
    node_time = torch.randint(0, 1000, (A.num_nodes,), generator=g).cuda()

    def temporal(A, seeds):
        return disjoint_sample(A, seeds, node_time[seeds], edge_time, num_neighbors=(5, 5))

    seeds = torch.arange(0, 4 * 64, device="cuda")
    loader = gs.DataLoader(A, gs.compile(temporal), seeds, 64, super_batch=4, fixed_state=True)
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    _, nbytes = loader._super.measure(seeds[:64], 0, 0)
    cache = torch.cuda.memory_allocated() - before  # the time order, kept with the graph
    assert cache >= 16 * A.num_edges
    assert nbytes < cache / 4, (nbytes, cache)


def test_an_error_measuring_mini_batch_0_is_no_cap(graph, monkeypatch):
    """An error that is not an allocation failure, measuring mini-batch 0, raises (naming
    super_batch) and leaves no cap behind: the next epoch measures again."""
    _on_a_gpu(monkeypatch, 1 << 40)
    seeds = random_seeds(8 * BATCH, 7, graph.num_nodes)
    loader = gs.DataLoader(graph, sampler(), seeds, BATCH, seed=1, super_batch=4)
    real, calls = loader._super.measure, []

    def measure(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("a transient error (a test's)")
        return real(*args, **kwargs)

    monkeypatch.setattr(loader._super, "measure", measure)
    with pytest.raises(RuntimeError, match="super_batch"):
        list(loader)
    assert loader.memory_cap is None
    assert len(list(loader)) == 8 and len(calls) == 2 and loader.memory_cap > 1


def tensors(x):
    """Every tensor of a sampler's outputs (matrices' storages, tensors, nested lists)."""
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in tensors(v)]
    if isinstance(x, gs.Matrix):
        csc = x.csc
        fields = (csc.indptr, csc.rows, csc.col_ids, csc.values, csc.eids)
        return [t for t in fields if isinstance(t, torch.Tensor)]
    return []
