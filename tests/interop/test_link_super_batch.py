"""``super_batch=`` on ``gsample.pyg.LinkNeighborLoader`` (a ``Data``): several mini-batches
sampled in one run of the compiled program, yielded one by one, each exactly (every tensor,
its dtype and device) the batch ``super_batch=None`` yields, negatives included, in every
mode (binary / triplet negatives, strict, weighted, disjoint, temporal with
``edge_label_time``, bidirectional), with shuffling, epochs whose length is not a multiple
of the run, worker processes and ``"auto"``; mini-batch ``i`` is keyed ``i``; refusals name
``super_batch``."""

import math

import pytest
import torch
from helpers import assert_same_batches, loader_batches

pytest.importorskip("torch_geometric")
from torch_geometric.data import Data, HeteroData

import gsample.pyg as gp
from gsample.base.random import combine, op_key
from gsample.interop.pyg.negatives import NEGATIVE_ORDINAL, NegativeSampler, NegativeSampling
from gsample.loader.super_batching import auto_statistic, choose_super_batch

N, E = 70, 360
#: supervision edges: 150 in mini-batches of 16 -> 10 mini-batches, the last of 6; runs of
#: 3 leave a last run of one mini-batch, runs of 4 a last run of two
L, B = 150, 16


@pytest.fixture(scope="module")
def data():
    """A small graph with sampling weights (a few 0), a time per node and one per edge."""
    g = torch.Generator().manual_seed(1)
    w = torch.rand(E, generator=g)
    w[::9] = 0.0
    return Data(
        x=torch.randn(N, 3, generator=g),
        edge_index=torch.randint(0, N, (2, E), generator=g),
        edge_attr=torch.arange(E, dtype=torch.float),
        w=w,
        time=torch.randint(0, 40, (N,), generator=g),
        etime=torch.randint(0, 40, (E,), generator=g),
        num_nodes=N,
    )


LABEL_TIME = (torch.arange(L) * 7) % 40
MODES = {
    "binary": {"neg_sampling": "binary"},
    "binary_amount": {"neg_sampling": dict(mode="binary", amount=1.5)},
    "triplet": {"neg_sampling": dict(mode="triplet", amount=2)},
    "strict_binary": {"neg_sampling": NegativeSampling("binary", 2, strict=True)},
    "strict_triplet": {"neg_sampling": NegativeSampling("triplet", 3, strict=True)},
    "none": {},
    "bidirectional": {"neg_sampling": "binary", "subgraph_type": "bidirectional"},
    "weighted": {"neg_sampling": "triplet", "weight_attr": "w"},
    "disjoint": {"neg_sampling": "binary", "disjoint": True},
    "node_time": {"neg_sampling": "binary", "time_attr": "time", "edge_label_time": LABEL_TIME},
    "edge_time_last": {
        "neg_sampling": dict(mode="triplet", amount=2),
        "time_attr": "etime",
        "edge_label_time": LABEL_TIME,
        "temporal_strategy": "last",
        "subgraph_type": "bidirectional",
    },
}


def _kw(data, mode: str, **more) -> dict:
    return dict(
        edge_label_index=data.edge_index[:, :L],
        batch_size=B,
        shuffle=True,
        seed=5,
        **MODES[mode],
        **more,
    )


@pytest.mark.parametrize("mode", list(MODES))
def test_super_batches_are_the_batches_one_at_a_time(data, mode):
    """Runs of 3 over 10 mini-batches (the last run of one, shuffled): every batch,
    negatives included, is the one the loader yields one mini-batch at a time."""
    ref = loader_batches(gp.LinkNeighborLoader(data, [3, 2], **_kw(data, mode)))
    assert len(ref) == math.ceil(L / B)
    loader = gp.LinkNeighborLoader(data, [3, 2], super_batch=3, **_kw(data, mode))
    assert len(loader) == math.ceil(L / B) and loader.super_batch_size == 3
    assert_same_batches(ref, loader_batches(loader))


@pytest.mark.parametrize(("mode", "sizes"), [("strict_triplet", (4, 10)), ("node_time", (4,))])
def test_later_epochs_and_other_sizes_too(data, mode, sizes):
    """Two epochs (shuffled: other mini-batches, other keys) in runs of 4 (the last of two)
    and of a whole epoch."""
    ref = loader_batches(gp.LinkNeighborLoader(data, [3, 2], **_kw(data, mode)), epochs=2)
    for n in sizes:
        loader = gp.LinkNeighborLoader(data, [3, 2], super_batch=n, **_kw(data, mode))
        assert_same_batches(ref, loader_batches(loader, epochs=2))


def test_an_epoch_not_a_multiple_of_the_run(data):
    """10 mini-batches in runs of 4: runs 0-3, 4-7 and 8-9 sampled together; the last
    mini-batch holds the 6 remaining edges; ``drop_last`` drops it, super-batched too."""
    kw = _kw(data, "binary")
    loader = gp.LinkNeighborLoader(data, [3, 2], super_batch=4, **kw)
    got = loader_batches(loader)
    plan = list(loader.dataset.runs.plan(len(loader)))
    assert [(f, c) for f, c, _ in plan] == [(0, 4), (4, 4), (8, 2)]
    assert [b.input_id.numel() for b in got] == [B] * 9 + [L - 9 * B]
    assert torch.equal(torch.cat([b.input_id for b in got]).sort().values, torch.arange(L))
    dropped = gp.LinkNeighborLoader(data, [3, 2], super_batch=4, drop_last=True, **kw)
    assert_same_batches(got[:9], loader_batches(dropped))


@pytest.mark.parametrize("mode", ["binary", "triplet"])
def test_strict_negatives_super_batched_contain_no_positive_pair(data, mode):
    """Every pair of the graph enumerated: no strict negative of any super-batched
    mini-batch is an edge or a self-pair."""
    edges = set(zip(data.edge_index[0].tolist(), data.edge_index[1].tolist()))
    ns = NegativeSampling(mode, 2, strict=True)
    kw = dict(edge_label_index=data.edge_index[:, :L], batch_size=B, shuffle=True, seed=9)
    count = 0
    for b in gp.LinkNeighborLoader(data, [2], neg_sampling=ns, super_batch=3, **kw):
        n = b.input_id.numel()
        if mode == "binary":
            pairs = b.n_id[b.edge_label_index[:, n:]].t().tolist()
        else:
            src = b.n_id[b.src_index]
            neg = b.n_id[b.dst_neg_index]
            pairs = [(u, v) for u, row in zip(src.tolist(), neg.tolist()) for v in row]
        assert all(u != v and (u, v) not in edges for u, v in pairs)
        count += len(pairs)
    assert count == 2 * L


def test_mini_batch_i_draws_with_key_i(data):
    """Mini-batch ``i`` of epoch ``e`` draws its negatives with op NEGATIVE_ORDINAL of the
    stream ``(combine(combine(combine(0, seed), e), h), i)`` (``h``: the supervision edges'
    hash), super-batched or not; the second epoch (unshuffled) draws other negatives from
    the same edges."""
    kw = dict(edge_label_index=data.edge_index[:, :L], batch_size=B, seed=3)
    loader = gp.LinkNeighborLoader(data, [2], neg_sampling="binary", super_batch=3, **kw)
    neg = NegativeSampler(data.edge_index, N)
    label = data.edge_index[:, :L]
    epochs = []
    for e in range(2):
        epoch_seed = combine(combine(combine(0, 3), e), loader.label_stream)
        got = loader_batches(loader)
        for i, b in enumerate(got):
            n = b.input_id.numel()
            assert torch.equal(b.input_id, torch.arange(i * B, i * B + n))
            src, dst = label[:, b.input_id]
            drawn = neg(src, dst, "binary", 1, key=op_key(epoch_seed, NEGATIVE_ORDINAL, i))
            glob = b.n_id[b.edge_label_index]
            assert torch.equal(glob[:, :n], torch.stack([src, dst]))
            assert torch.equal(glob[:, n:], torch.stack([drawn.src, drawn.dst]))
        epochs.append(got)
    assert any(
        not torch.equal(a.edge_label_index, b.edge_label_index)
        for a, b in zip(*epochs, strict=True)
    )


def test_loaders_of_one_seed_over_other_edges_draw_other_negatives(data):
    """A training and a test loader of one seed: mini-batch ``i`` of each draws unrelated
    negative pairs (the edges' hash is in their streams); over the same edges, the same."""
    kw = dict(batch_size=B, seed=0, neg_sampling="binary", super_batch=2)

    def negatives(edges):
        out = []
        for b in gp.LinkNeighborLoader(data, [2], edge_label_index=edges, **kw):
            out.append(b.n_id[b.edge_label_index[:, b.input_id.numel() :]])
        return torch.cat(out, 1)

    train, test = negatives(data.edge_index[:, :L]), negatives(data.edge_index[:, L : 2 * L])
    assert torch.equal(train, negatives(data.edge_index[:, :L]))
    assert (train == test).all(0).float().mean() < 0.1  # chance: 1 / N**2 per pair


def test_loader_call_gives_the_iterated_batch(data):
    """``loader(index)`` of mini-batch ``i``'s edges (the epoch last started) is the batch
    iteration gave; another index set is a batch of its own, its negatives not an edge
    with strict negatives."""
    ns = NegativeSampling("binary", strict=True)
    kw = _kw(data, "binary") | {"neg_sampling": ns}
    loader = gp.LinkNeighborLoader(data, [3, 2], super_batch=3, **kw)
    epoch = loader_batches(loader)
    for i in (0, 4, 9):
        assert_same_batches([epoch[i]], [loader(epoch[i].input_id)])
    other = loader([5, 1, 7])
    assert torch.equal(other.input_id, torch.tensor([5, 1, 7]))
    edges = set(zip(data.edge_index[0].tolist(), data.edge_index[1].tolist()))
    pairs = other.n_id[other.edge_label_index[:, 3:]].t().tolist()
    assert all((u, v) not in edges and u != v for u, v in pairs)


def test_worker_processes_give_the_same_batches(data):
    """Two workers sampling whole runs (and building the batches there, or not) give the
    batches of one process one mini-batch at a time."""
    kw = _kw(data, "disjoint")
    ref = loader_batches(gp.LinkNeighborLoader(data, [3, 2], **kw))
    for per_worker in (True, False):
        got = gp.LinkNeighborLoader(
            data, [3, 2], super_batch=3, num_workers=2, filter_per_worker=per_worker, **kw
        )
        assert_same_batches(ref, loader_batches(got))


@pytest.mark.parametrize(("mode", "epochs"), [("binary", 2), ("edge_time_last", 1)])
def test_auto_picks_a_size_and_keeps_the_batches(data, mode, epochs):
    """``"auto"`` times runs of 1, 2, 4 on the epoch's own mini-batches (temporal: its
    tables grow with the runs) and keeps the batches, this epoch and the next at the size
    chosen; a budget of one byte holds one mini-batch a run."""
    kw = _kw(data, mode) | {"batch_size": 5}  # 30 mini-batches: runs of 1, 2, 4 timed
    ref = loader_batches(gp.LinkNeighborLoader(data, [3, 2], **kw), epochs=epochs)
    loader = gp.LinkNeighborLoader(data, [3, 2], super_batch="auto", memory_budget=1 << 40, **kw)
    assert loader.super_batch_size is None  # chosen while the first epoch runs
    assert_same_batches(ref, loader_batches(loader, epochs=epochs))
    assert sorted(loader.auto_times) == [1, 2, 4]
    assert loader.super_batch_size == choose_super_batch(
        loader.auto_runs, statistic=auto_statistic(loader.dataset.runs.device)
    )
    if epochs == 2:
        capped = gp.LinkNeighborLoader(data, [3, 2], super_batch="auto", memory_budget=1, **kw)
        assert_same_batches(ref[:30], loader_batches(capped))
        assert capped.super_batch_size == 1 and capped.auto_times == {}


def test_a_run_failing_where_its_batches_do_not_names_super_batch(data, monkeypatch):
    loader = gp.LinkNeighborLoader(data, [3, 2], super_batch=2, **_kw(data, "binary"))

    def fail(*args, **kwargs):
        raise ValueError("a kernel's own error (a test's)")

    monkeypatch.setattr(loader.dataset.super, "run", fail)
    with pytest.raises(RuntimeError, match=r"super_batch: sampling mini-batches 0\.\.1 in one"):
        next(iter(loader))


def test_a_run_out_of_memory_gives_the_batches_sampled_one_by_one(data, monkeypatch):
    """Out of memory where the mini-batches fit alone: the epoch goes on with the same
    batches (each run's mini-batches sampled one by one), one warning."""
    ref = loader_batches(gp.LinkNeighborLoader(data, [3, 2], **_kw(data, "binary")))
    loader = gp.LinkNeighborLoader(data, [3, 2], super_batch=2, **_kw(data, "binary"))

    def fail(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory (a test's)")

    monkeypatch.setattr(loader.dataset.super, "run", fail)
    with pytest.warns(RuntimeWarning, match="ran out of memory") as caught:
        got = loader_batches(loader)
    assert len([w for w in caught if "out of memory" in str(w.message)]) == 1
    assert_same_batches(ref, got)


# ----------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("value", [0, -1, "x", 2.5, True])
def test_bad_values_name_super_batch(data, value):
    with pytest.raises((TypeError, ValueError), match="super_batch"):
        gp.LinkNeighborLoader(data, [2], neg_sampling="binary", super_batch=value)


def test_refusals_name_super_batch_and_why(data):
    kw = dict(neg_sampling="binary", batch_size=8)
    with pytest.raises(ValueError, match=r"super_batch: .*compile=False samples eagerly"):
        gp.LinkNeighborLoader(data, [2], compile=False, super_batch=2, **kw)
    with pytest.raises(ValueError, match=r"super_batch: .*'auto' times super-batch sizes"):
        gp.LinkNeighborLoader(data, [2], super_batch="auto", num_workers=2, **kw)
    with pytest.raises(ValueError, match="memory_budget: only used with super_batch='auto'"):
        gp.LinkNeighborLoader(data, [2], super_batch=4, memory_budget=1 << 20, **kw)
    hetero = HeteroData()
    hetero["a"].num_nodes = 10
    hetero["a", "to", "a"].edge_index = torch.randint(0, 10, (2, 30))
    # a HeteroData super-batches too (test_hetero_super_batch.py), compiled
    with pytest.raises(ValueError, match=r"super_batch: .*compile=False samples eagerly"):
        gp.LinkNeighborLoader(
            hetero, [2], edge_label_index=("a", "to", "a"), compile=False, super_batch=2, **kw
        )
    one = gp.LinkNeighborLoader(hetero, [2], edge_label_index=("a", "to", "a"), super_batch=2)
    assert len(list(one)) == 30
