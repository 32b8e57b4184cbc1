"""The harness's epoch timing (gsample.bench.measure.measure): the interpreter's objects
frozen for the timed epochs only, and the full collections that ran in them counted."""

import gc

import torch

from gsample.bench.measure import measure

CPU = torch.device("cpu")


def test_timed_epochs_run_with_the_objects_frozen_and_the_warm_up_does_not():
    seen = []

    def run():
        seen.append(gc.get_freeze_count())
        return 0.01, 3

    before = gc.get_freeze_count()
    row = measure(run, repeats=3, device=CPU)
    assert seen[0] == before  # the warm-up: nothing frozen by measure
    assert all(n > before for n in seen[1:]) and len(seen) == 4
    assert gc.get_freeze_count() == before  # undone
    assert row["epoch_s_all"] == [0.01] * 3 and row["units"] == 3


def test_full_collections_in_timed_epochs_are_counted_with_their_time():
    calls = []

    def run():
        calls.append(1)
        gc.collect()  # a full collection in every epoch, the warm-up's not counted
        return 0.02, 1

    n_callbacks = len(gc.callbacks)
    row = measure(run, repeats=4, device=CPU)
    assert len(calls) == 5
    assert row["gc_full_collections"] == 4
    assert row["gc_full_ms"] >= 0.0
    assert len(gc.callbacks) == n_callbacks  # its counter removed


def test_a_failing_epoch_leaves_the_collector_as_it_was():
    state = {"n": 0}

    def run():
        state["n"] += 1
        if state["n"] == 2:
            raise RuntimeError("boom")
        return 0.01, 1

    before, n_callbacks = gc.get_freeze_count(), len(gc.callbacks)
    try:
        measure(run, repeats=2, device=CPU)
    except RuntimeError:
        pass
    else:
        raise AssertionError("the epoch's error was swallowed")
    assert gc.get_freeze_count() == before and len(gc.callbacks) == n_callbacks


def test_a_callers_own_freeze_stays():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        measure(lambda: (0.01, 1), repeats=2, device=CPU)
        # gc.unfreeze() would empty the permanent generation; a few frozen objects may be
        # freed meanwhile (other threads of the test process drop theirs)
        assert gc.get_freeze_count() >= 0.9 * frozen
    finally:
        gc.unfreeze()
