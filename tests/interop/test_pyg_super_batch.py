"""``super_batch=`` on ``gsample.pyg.NeighborLoader``: several mini-batches sampled in one run
of the compiled program, yielded one by one, each exactly (every tensor, its dtype and
device) the batch ``super_batch=None`` yields, in the same order, in every mode of a ``Data``
(subgraph types, weights, replacement, disjoint, temporal with node or edge time and
``input_time``), with shuffling, worker processes and ``"auto"``; refusals name
``super_batch`` (``compile=False``, bad values). ``LinkNeighborLoader``'s:
``test_link_super_batch.py``; a ``HeteroData``'s: ``test_hetero_super_batch.py``."""

import numpy as np
import pytest
import torch
from helpers import assert_same_batches, loader_batches, super_batch_runs

pytest.importorskip("torch_geometric")
from torch_geometric.data import Data, HeteroData

import gsample as gs
import gsample.pyg as gp
from gsample.loader.super_batching import auto_statistic, choose_super_batch

N, E = 90, 420


@pytest.fixture(scope="module")
def data():
    """A small graph with everything the modes read: features, labels, an edge attribute,
    sampling weights (a few 0), a time per node and a time per edge."""
    g = torch.Generator().manual_seed(0)
    w = torch.rand(E, generator=g)
    w[::7] = 0.0
    return Data(
        x=torch.randn(N, 4, generator=g),
        y=torch.randint(0, 3, (N,), generator=g),
        edge_index=torch.randint(0, N, (2, E), generator=g),
        edge_attr=torch.arange(E, dtype=torch.float),
        w=w,
        time=torch.randint(0, 40, (N,), generator=g),
        etime=torch.randint(0, 40, (E,), generator=g),
        num_nodes=N,
    )


# 75 input nodes (distinct: induced subgraphs need it) in mini-batches of 8: 10 batches,
# the last of 3 seeds; runs of 3 leave a last run of one mini-batch (a partial
# super-batch), runs of 2 none
INPUTS = torch.arange(75)
#: name -> (NeighborLoader arguments, whether the batches are disjoint); the times of
MODES = {
    "directional": ({}, False),
    "bidirectional": ({"subgraph_type": "bidirectional"}, False),
    "induced": ({"subgraph_type": "induced"}, False),
    "weighted": ({"weight_attr": "w"}, False),
    "replace": ({"replace": True}, False),
    "disjoint": ({"disjoint": True}, True),
    "node_time": ({"time_attr": "time"}, True),
    "node_time_last": ({"time_attr": "time", "temporal_strategy": "last"}, True),
    "input_time": ({"time_attr": "time", "input_time": (torch.arange(75) * 7) % 40}, True),
    "edge_time": (
        {"time_attr": "etime", "input_time": (torch.arange(75) * 3) % 40, "weight_attr": "w"},
        True,
    ),
    "edge_time_bidirectional": (
        {
            "time_attr": "etime",
            "input_time": torch.full((75,), 25),
            "subgraph_type": "bidirectional",
        },
        True,
    ),
}


@pytest.mark.parametrize("mode", list(MODES))
def test_super_batches_are_the_batches_one_at_a_time(data, mode):
    kw, disjoint = MODES[mode]
    common = dict(input_nodes=INPUTS, batch_size=8, shuffle=True, seed=11, **kw)
    ref = loader_batches(gp.NeighborLoader(data, [3, 2], **common), epochs=2)
    assert len(ref) == 20 and ref[9].batch_size == 3
    assert sum(b.edge_index.shape[1] for b in ref) > 0  # the hops sampled edges
    assert all(("batch" in b) == disjoint for b in ref)
    for n, runs in ((2, [2] * 5), (3, [3] * 3)):  # (runs of 3: the tenth alone, as ever)
        loader = gp.NeighborLoader(data, [3, 2], super_batch=n, **common)
        assert len(loader) == 10 and str(loader) == "NeighborLoader()"
        assert loader.super_batch_size == n
        sizes = super_batch_runs(loader)
        assert_same_batches(ref, loader_batches(loader, epochs=2))
        assert sizes == runs * 2  # every run of several is one run of the program


def test_more_inputs_than_nodes_with_their_own_times(data):
    """200 (node, time) inputs on 90 nodes, most nodes twice or more at other times (and in
    one mini-batch): the super-batched program reads nodes and times by input position,
    from a graph padded to 200 nodes; the draws are the graph's own."""
    inputs = torch.arange(200) % N
    times = (torch.arange(200) * 13) % 40
    common = dict(input_nodes=inputs, input_time=times, time_attr="time", batch_size=16)
    ref = loader_batches(gp.NeighborLoader(data, [3, 3], seed=2, **common))
    loader = gp.NeighborLoader(data, [3, 3], seed=2, super_batch=4, **common)
    assert loader.dataset.super.batcher.num_nodes == 200  # ids: positions
    got = loader_batches(loader)
    assert_same_batches(ref, got)
    for b in got:  # temporal indeed: every node reached is no later than its tree's seed
        reached = slice(b.batch_size, None)
        assert bool((b.time[reached] <= b.seed_time[b.batch[reached]]).all())
    assert sum(b.num_nodes - b.batch_size for b in got) > 0


def test_the_comparison_bites(data):
    """Another seed gives other batches (the equality above is not vacuous)."""
    a = loader_batches(gp.NeighborLoader(data, [3, 2], batch_size=8, seed=1, super_batch=2))
    b = loader_batches(gp.NeighborLoader(data, [3, 2], batch_size=8, seed=2, super_batch=2))
    with pytest.raises(AssertionError):
        assert_same_batches(a, b)


def test_transforms_filtering_in_the_main_process_and_stores(data):
    """``filter_per_worker=False``, ``transform`` and ``transform_sampler_output`` run per
    batch; a ``(FeatureStore, GraphStore)`` of a homogeneous graph super-batches as its
    ``Data`` does."""
    from torch_geometric.testing import MyFeatureStore, MyGraphStore

    def tag(batch):
        batch.tagged = torch.tensor([batch.batch_size])
        return batch

    kw = dict(
        batch_size=8,
        seed=3,
        filter_per_worker=False,
        transform=tag,
        transform_sampler_output=lambda out: out,
    )
    ref = loader_batches(gp.NeighborLoader(data, [2, 2], **kw))
    assert_same_batches(ref, loader_batches(gp.NeighborLoader(data, [2, 2], super_batch=3, **kw)))
    fs, store = MyFeatureStore(), MyGraphStore()
    fs.put_tensor(data.x, group_name=None, attr_name="x", index=None)
    store.put_edge_index(
        edge_index=(data.edge_index[0], data.edge_index[1]),
        edge_type=None,
        layout="coo",
        size=(N, N),
    )
    one = loader_batches(gp.NeighborLoader((fs, store), [2, 2], batch_size=8, seed=3))
    sb = loader_batches(gp.NeighborLoader((fs, store), [2, 2], batch_size=8, seed=3, super_batch=3))
    assert_same_batches(one, sb)


def test_worker_processes_sample_whole_runs(data):
    """Two worker processes (persistent, two epochs): each samples whole runs; the
    batches are those of one process, one mini-batch at a time."""
    kw, _ = MODES["input_time"]
    common = dict(input_nodes=INPUTS, batch_size=8, shuffle=True, seed=5, **kw)
    ref = loader_batches(gp.NeighborLoader(data, [3, 2], **common), epochs=2)
    loader = gp.NeighborLoader(
        data, [3, 2], super_batch=3, num_workers=2, persistent_workers=True, **common
    )
    assert_same_batches(ref, loader_batches(loader, epochs=2))


def test_auto_times_sizes_on_the_first_epoch(data):
    """``"auto"``: batch 0 alone (measured), then runs of 1 and 2 timed three times each
    (10 mini-batches leave no room for three runs of 4), the rest at the size chosen; the
    batches are the one-at-a-time batches, this epoch and the next. A budget of one byte
    caps the size at 1 (nothing timed)."""
    common = dict(input_nodes=INPUTS, batch_size=8, shuffle=True, seed=9, time_attr="time")
    ref = loader_batches(gp.NeighborLoader(data, [3, 2], **common), epochs=2)
    loader = gp.NeighborLoader(data, [3, 2], super_batch="auto", memory_budget=1 << 40, **common)
    assert loader.super_batch_size is None  # chosen while the first epoch runs
    assert_same_batches(ref, loader_batches(loader, epochs=2))
    assert set(loader.auto_times) == {1, 2}
    assert loader.super_batch_size == choose_super_batch(
        loader.auto_runs, statistic=auto_statistic(loader.dataset.runs.device)
    )
    capped = gp.NeighborLoader(data, [3, 2], super_batch="auto", memory_budget=1, **common)
    assert_same_batches(ref[:10], loader_batches(capped))
    assert capped.super_batch_size == 1 and capped.auto_times == {}


def test_loader_call_is_the_iterated_batch(data):
    """``loader(index)`` (PyG's) with ``index`` a mini-batch of the epoch drawn last: that
    batch, as without super-batching."""
    loader = gp.NeighborLoader(
        data, [3, 2], input_nodes=INPUTS, batch_size=8, shuffle=True, seed=4, super_batch=3
    )
    epoch = loader_batches(loader)
    for i in (0, 4, 9):
        assert_same_batches([epoch[i]], [loader(epoch[i].input_id)])


def test_a_run_failing_where_its_batches_do_not_names_super_batch(data, monkeypatch):
    loader = gp.NeighborLoader(data, [3, 2], batch_size=8, seed=0, super_batch=2)

    def fail(*args, **kwargs):
        raise ValueError("a kernel's own error (a test's)")

    monkeypatch.setattr(loader.dataset.super, "run", fail)
    with pytest.raises(RuntimeError, match=r"super_batch: sampling mini-batches 0\.\.1 in one"):
        next(iter(loader))


def test_a_run_out_of_memory_gives_the_batches_sampled_one_by_one(data, monkeypatch):
    """Out of memory where the mini-batches fit alone: the epoch goes on with the same
    batches (each run's mini-batches sampled one by one), one warning."""
    ref = loader_batches(gp.NeighborLoader(data, [3, 2], batch_size=8, seed=0))
    loader = gp.NeighborLoader(data, [3, 2], batch_size=8, seed=0, super_batch=2)

    def fail(*args, **kwargs):
        raise MemoryError("out of memory (a test's)")

    monkeypatch.setattr(loader.dataset.super, "run", fail)
    with pytest.warns(RuntimeWarning, match="ran out of memory") as caught:
        got = loader_batches(loader)
    assert len([w for w in caught if "out of memory" in str(w.message)]) == 1
    assert_same_batches(ref, got)


# ----------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("value", [0, -1, "x", 2.5, True, [2]])
@pytest.mark.parametrize("loader", ["NeighborLoader", "LinkNeighborLoader"])
def test_bad_values_name_super_batch(data, loader, value):
    with pytest.raises((TypeError, ValueError), match="super_batch"):
        getattr(gp, loader)(data, [2], super_batch=value)


def test_accepted_values(data):
    """NumPy ints are ints; 1 is one mini-batch a run (the default's batches)."""
    ref = loader_batches(gp.NeighborLoader(data, [2], batch_size=16, seed=1))
    for value in (np.int64(2), 1):
        got = loader_batches(gp.NeighborLoader(data, [2], batch_size=16, seed=1, super_batch=value))
        assert_same_batches(ref, got)
    with pytest.raises(ValueError, match="memory_budget: only used with super_batch='auto'"):
        gp.NeighborLoader(data, [2], super_batch=4, memory_budget=1 << 20)


def test_refused_modes_say_why(data):
    with pytest.raises(ValueError, match=r"super_batch: .*compile=False samples eagerly"):
        gp.NeighborLoader(data, [2], compile=False, super_batch=2)
    with pytest.raises(ValueError, match=r"super_batch: .*'auto' times super-batch sizes"):
        gp.NeighborLoader(data, [2], super_batch="auto", num_workers=2)
    # a HeteroData super-batches too (test_hetero_super_batch.py), compiled
    hetero = HeteroData()
    hetero["a"].x, hetero["b"].x = torch.randn(10, 2), torch.randn(8, 2)
    hetero["a", "to", "b"].edge_index = torch.tensor([[0, 1, 2], [3, 4, 5]])
    hetero["b", "to", "a"].edge_index = torch.tensor([[3, 4, 5], [0, 1, 2]])
    for value in (2, "auto"):
        with pytest.raises(ValueError, match=r"super_batch: .*compile=False"):
            gp.NeighborLoader(hetero, [2], input_nodes="a", compile=False, super_batch=value)
    assert len(list(gp.NeighborLoader(hetero, [2], input_nodes="a", super_batch=2))) == 10


def test_edge_time_without_input_time_is_pygs_error_at_construction(data):
    """Edge-level time needs each seed's time: one at a time, the first batch raises; a
    super-batched loader reads every input's time when it is made, and raises then."""
    with pytest.raises(ValueError, match="input_time: edge-level"):
        next(iter(gp.NeighborLoader(data, [2], time_attr="etime")))
    with pytest.raises(ValueError, match="input_time: edge-level"):
        gp.NeighborLoader(data, [2], time_attr="etime", super_batch=2)


# ----------------------------------------------------------------------------- devices
@pytest.mark.parametrize("mode", ["directional", "induced", "disjoint", "edge_time_bidirectional"])
def test_on_the_device_super_batches_are_the_cpu_batches(data, device, mode):
    """The graph on ``device`` (``graph=``): super-batched there (CUDA tensors with the
    torch backend, and the CUDA backend's kernels), the batches are the CPU's one at a
    time, bit for bit, and those one at a time on the device."""
    kw, _ = MODES[mode]
    kw = {k: v for k, v in kw.items() if k != "weight_attr"}  # (graph= carries weights)
    common = dict(input_nodes=INPUTS, batch_size=8, shuffle=True, seed=6, **kw)
    ref = loader_batches(gp.NeighborLoader(data, [3, 2], **common))
    graph = gs.Matrix.from_pyg(data, weight=None).to(device)
    one = loader_batches(gp.NeighborLoader(data, [3, 2], graph=graph, **common))
    got = loader_batches(gp.NeighborLoader(data, [3, 2], graph=graph, super_batch=3, **common))
    assert_same_batches(ref, one)
    assert_same_batches(ref, got)
