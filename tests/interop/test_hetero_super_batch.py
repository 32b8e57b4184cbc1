"""``super_batch=`` on ``gsample.pyg.NeighborLoader`` and ``LinkNeighborLoader`` over a
``HeteroData``: each (hop, edge type) of several mini-batches is one run of the relation's
compiled step (the frontiers of every mini-batch of the run, then split), and every batch
(each node type's ``n_id``, ``x``, ``num_sampled_nodes``, ``batch``, each edge type's
``edge_index``, ``e_id``, ``edge_attr``, ``num_sampled_edges``, ``input_id``,
``batch_size``, a link batch's labels and negatives) is, tensor for tensor, the batch
``super_batch=None`` yields, in every mode of the heterogeneous loaders (subgraph types,
weights, replacement, per-type fanouts, disjoint, temporal with node or edge time and
``input_time`` / ``edge_label_time``, binary / triplet / strict negatives,
``(FeatureStore, GraphStore)``), over two shuffled epochs with a partial last run, with
worker processes, ``"auto"``, ``loader(index)`` and the out-of-memory fallback; the step
runs once per super-batch and (hop, edge type); refusals name ``super_batch``."""

import pytest
import torch
from helpers import loader_batches, super_batch_runs

pytest.importorskip("torch_geometric")
from torch_geometric.data import HeteroData

import gsample as gs
import gsample.pyg as gp
from gsample.compiler.compiled import CompiledSampler
from gsample.loader.super_batching import auto_statistic, choose_super_batch
from gsample.runtime import SuperBatcher

WRITES = ("author", "writes", "paper")
REV_WRITES = ("paper", "rev_writes", "author")
CITES = ("paper", "cites", "paper")
IN = ("paper", "in", "venue")
REV_IN = ("venue", "rev_in", "paper")
COUNTS = {"author": 40, "paper": 60, "venue": 6}


@pytest.fixture(scope="module")
def data() -> HeteroData:
    """Authors, papers and venues; ``writes``, ``cites``, ``in`` and their reverses; features,
    labels, per-edge attributes distinct per edge type and sampling weights (a few 0)."""
    g = torch.Generator().manual_seed(0)
    d = HeteroData()
    for t, n in COUNTS.items():
        d[t].x = torch.randn(n, 3, generator=g)
    d["paper"].y = torch.randint(0, 4, (COUNTS["paper"],), generator=g)
    for t in ("paper", "author"):  # (venues have no time: rev_in samples without one)
        d[t].time = torch.randint(0, 30, (COUNTS[t],), generator=g)
    venue = torch.stack([torch.arange(60), torch.randint(0, 6, (60,), generator=g)])
    writes = torch.stack(
        [torch.randint(0, 40, (180,), generator=g), torch.randint(0, 60, (180,), generator=g)]
    )
    edges = {
        WRITES: writes,
        REV_WRITES: writes.flip(0),
        CITES: torch.randint(0, 60, (2, 150), generator=g),
        IN: venue,
        REV_IN: venue.flip(0),
    }
    for i, (et, ei) in enumerate(edges.items()):
        d[et].edge_index = ei
        d[et].edge_attr = torch.arange(ei.shape[1], dtype=torch.float) + 1000 * i
        w = torch.rand(ei.shape[1], generator=g)
        w[::6] = 0.0
        d[et].w = w
        if et != IN:  # (in: no edge time, sampled without one)
            d[et].etime = torch.randint(0, 30, (ei.shape[1],), generator=g)
    return d


def assert_same_hetero(a: list, b: list) -> None:
    """Batch for batch (``HeteroData``): the same node and edge types, per type the same
    keys, every tensor equal (values, dtype, device), every other value equal."""
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        assert type(x) is type(y)
        assert x.node_types == y.node_types and x.edge_types == y.edge_types, i
        for key in x.node_types + x.edge_types:
            u, v = x[key], y[key]
            assert sorted(u.keys()) == sorted(v.keys()), (i, key)
            for attr in u:
                p, q = u[attr], v[attr]
                if isinstance(p, torch.Tensor):
                    assert p.dtype == q.dtype and p.device == q.device, (i, key, attr)
                    assert torch.equal(p, q), (i, key, attr)
                else:
                    assert p == q, (i, key, attr)


def counted_steps(monkeypatch) -> tuple:
    """``(starts, calls)``, recorded from now on: the size of every super-batched run
    (``SuperBatcher.start``), and one entry per one-mini-batch step (a compiled sampler's
    call)."""
    starts, calls = [], []
    start, call = SuperBatcher.start, CompiledSampler.__call__

    def counted_start(self, parts, observe=None):
        starts.append(len(parts))
        return start(self, parts, observe)

    def counted_call(self, *args, **kwargs):
        calls.append(1)
        return call(self, *args, **kwargs)

    monkeypatch.setattr(SuperBatcher, "start", counted_start)
    monkeypatch.setattr(CompiledSampler, "__call__", counted_call)
    return starts, calls


# 60 papers in mini-batches of 7: 9 batches, the last of 4 seeds (a mini-batch of another
# size in the run); runs of 2 and of 4 leave a last run of one mini-batch
MODES = {
    "directional": {},
    "bidirectional": {"subgraph_type": "bidirectional"},
    "induced": {"subgraph_type": "induced"},
    "weighted": {"weight_attr": "w"},
    "replace": {"replace": True},
    "disjoint": {"disjoint": True},
    "disjoint_bidirectional": {"disjoint": True, "subgraph_type": "bidirectional"},
    "node_time": {"time_attr": "time"},
    "node_time_last": {"time_attr": "time", "temporal_strategy": "last", "replace": True},
    "input_time": {"time_attr": "time", "input_time": (torch.arange(60) * 7) % 30},
    "edge_time": {"time_attr": "etime", "input_time": (torch.arange(60) * 3) % 30},
    "edge_time_weighted": {
        "time_attr": "etime",
        "input_time": torch.full((60,), 20),
        "weight_attr": "w",
    },
    "per_type": {
        "num_neighbors": {
            WRITES: [4, 2],
            REV_WRITES: [2, -1],
            CITES: [-1, 1],
            IN: [0, 3],
            REV_IN: [1, 1],
        }
    },
}
RUNS = {2: [2, 2, 2, 2], 4: [4, 4]}  # (the last run, of one mini-batch, runs alone)


def loader_of(data, mode: str, **kw):
    args = dict(MODES[mode])
    fanouts = args.pop("num_neighbors", [3, 2])
    common = dict(input_nodes="paper", batch_size=7, shuffle=True, seed=11)
    return gp.NeighborLoader(data, fanouts, **{**common, **args, **kw})


@pytest.mark.parametrize("mode", list(MODES))
def test_super_batches_are_the_batches_one_at_a_time(data, mode):
    ref = loader_batches(loader_of(data, mode), epochs=2)
    assert len(ref) == 18 and ref[8]["paper"].batch_size == 4
    # the hops reached every node type and sampled edges of every edge type
    assert all(sum(b[t].num_nodes for b in ref) > 0 for t in COUNTS)
    assert all(sum(b[et].edge_index.shape[1] for b in ref) > 0 for et in data.edge_types)
    for n, runs in RUNS.items():
        loader = loader_of(data, mode, super_batch=n)
        assert len(loader) == 9 and loader.super_batch_size == n
        sizes = super_batch_runs(loader)
        assert_same_hetero(ref, loader_batches(loader, epochs=2))
        assert sizes == runs * 2  # every run of several: one super-batched run


def test_auto_times_sizes_on_the_first_epoch(data):
    """``"auto"``: batch 0 alone (measured), runs of 1 and 2 timed three times each, the
    rest at the size chosen (12 mini-batches of 5: no room for three runs of 4); this epoch
    and the next are the one-at-a-time batches. A budget of one byte caps the size at 1."""
    ref = loader_batches(loader_of(data, "directional", batch_size=5), epochs=2)
    loader = loader_of(data, "directional", batch_size=5, super_batch="auto", memory_budget=1 << 40)
    assert loader.super_batch_size is None
    assert_same_hetero(ref, loader_batches(loader, epochs=2))
    assert set(loader.auto_times) == {1, 2}
    assert loader.super_batch_size == choose_super_batch(
        loader.auto_runs, statistic=auto_statistic(loader.dataset.runs.device)
    )
    capped = loader_of(data, "directional", batch_size=5, super_batch="auto", memory_budget=1)
    assert_same_hetero(ref[:12], loader_batches(capped))
    assert capped.super_batch_size == 1 and capped.auto_times == {}


@pytest.mark.parametrize("mode", ["directional", "disjoint"])
def test_one_step_run_per_super_batch_and_edge_type(data, monkeypatch, mode):
    """A super-batch of N mini-batches runs each relation's step once per hop (a
    SuperBatcher run over the N frontiers), never the one-mini-batch step; a (hop, edge
    type) runs when some mini-batch of the run has a frontier of its destination type
    (counted here from the one-at-a-time batches' ``num_sampled_nodes``). A mini-batch
    alone calls the step per (hop, edge type) with a frontier (disjoint: every one)."""
    ref = loader_batches(loader_of(data, mode))
    starts, calls = counted_steps(monkeypatch)
    loader = loader_of(data, mode, super_batch=4)
    assert_same_hetero(ref, loader_batches(loader))
    expected = []
    for first, count in ((0, 4), (4, 4)):  # the last run, of one mini-batch, runs alone
        run = ref[first : first + count]
        for h in range(2):
            for et in sorted(data.edge_types):
                if any(b[et[2]].num_sampled_nodes[h] > 0 for b in run):
                    expected.append(count)
    assert starts == expected and len(expected) > 8
    last = ref[8]  # alone: its steps are the one-mini-batch step's calls
    alone = [
        et
        for h in range(2)
        for et in data.edge_types
        if last[et[2]].num_sampled_nodes[h] or mode == "disjoint"
    ]
    assert len(calls) == len(alone) > 0
    # one super-batched step per (edge type, fanout) run: hop 0 into papers, hop 1 all
    into_papers = {et for et in data.edge_types if et[2] == "paper"}
    assert set(loader.dataset.super.batchers) == {(et, 3, False, False) for et in into_papers} | {
        (et, 2, False, False) for et in data.edge_types
    }


def test_the_comparison_bites(data):
    """Another seed gives other batches (the equality above is not vacuous)."""
    a = loader_batches(gp.NeighborLoader(data, [3, 2], "paper", batch_size=7, seed=1))
    b = loader_batches(
        gp.NeighborLoader(data, [3, 2], "paper", batch_size=7, seed=2, super_batch=2)
    )
    with pytest.raises(AssertionError):
        assert_same_hetero(a, b)


def test_worker_processes_sample_whole_runs(data):
    """Two worker processes (persistent, two epochs): the batches of one process, one
    mini-batch at a time."""
    ref = loader_batches(loader_of(data, "bidirectional"), epochs=2)
    loader = loader_of(data, "bidirectional", super_batch=2, num_workers=2, persistent_workers=True)
    assert_same_hetero(ref, loader_batches(loader, epochs=2))


def test_transforms_filtering_in_the_main_process_and_loader_call(data):
    """``filter_per_worker=False`` and ``transform`` run per batch; ``loader(index)`` of an
    iterated mini-batch is that batch."""

    def tag(batch):
        batch["paper"].tagged = torch.tensor([batch["paper"].batch_size])
        return batch

    kw = dict(filter_per_worker=False, transform=tag)
    ref = loader_batches(loader_of(data, "directional", **kw))
    loader = loader_of(data, "directional", super_batch=3, **kw)
    epoch = loader_batches(loader)
    assert_same_hetero(ref, epoch)
    for i in (0, 4, 8):
        assert_same_hetero([epoch[i]], [loader(epoch[i]["paper"].input_id)])


def test_heterogeneous_stores(data):
    """A ``(FeatureStore, GraphStore)`` of a heterogeneous graph super-batches as its
    ``HeteroData`` does."""
    from torch_geometric.testing import MyFeatureStore, MyGraphStore

    fs, store = MyFeatureStore(), MyGraphStore()
    for t in COUNTS:
        fs.put_tensor(data[t].x, group_name=t, attr_name="x", index=None)
    for et in data.edge_types:
        ei = data[et].edge_index
        size = (COUNTS[et[0]], COUNTS[et[2]])
        store.put_edge_index(edge_index=(ei[0], ei[1]), edge_type=et, layout="coo", size=size)
    kw = dict(input_nodes="paper", batch_size=7, seed=3)
    one = loader_batches(gp.NeighborLoader((fs, store), [2, 2], **kw))
    sb = loader_batches(gp.NeighborLoader((fs, store), [2, 2], super_batch=4, **kw))
    assert_same_hetero(one, sb)
    assert sum(b["author"].x.shape[0] for b in sb) > 0


def test_a_run_out_of_memory_gives_the_batches_sampled_one_by_one(data, monkeypatch):
    """A step's super-batched run raising ``torch.OutOfMemoryError`` midway (after earlier
    steps drew): the epoch goes on with the same batches, each run's mini-batches sampled
    one by one, one warning."""
    ref = loader_batches(loader_of(data, "directional"))
    loader = loader_of(data, "directional", super_batch=2)
    start, seen = SuperBatcher.start, []

    def fail_on_the_third(self, parts, observe=None):
        seen.append(1)
        if len(seen) % 3 == 0:
            raise torch.OutOfMemoryError("CUDA out of memory (a test's)")
        return start(self, parts, observe)

    monkeypatch.setattr(SuperBatcher, "start", fail_on_the_third)
    with pytest.warns(RuntimeWarning, match="ran out of memory") as caught:
        got = loader_batches(loader)
    assert len([w for w in caught if "out of memory" in str(w.message)]) == 1
    assert_same_hetero(ref, got)


def test_a_run_failing_where_its_batches_do_not_names_super_batch(data, monkeypatch):
    loader = loader_of(data, "directional", super_batch=2)

    def fail(self, parts, observe=None):
        raise ValueError("a kernel's own error (a test's)")

    monkeypatch.setattr(SuperBatcher, "start", fail)
    with pytest.raises(RuntimeError, match=r"super_batch: sampling mini-batches 0\.\.1 in one"):
        next(iter(loader))


# ----------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("value", [0, -1, "x", 2.5, True, [2]])
def test_bad_values_name_super_batch(data, value):
    with pytest.raises((TypeError, ValueError), match="super_batch"):
        gp.NeighborLoader(data, [2], input_nodes="paper", super_batch=value)


def test_refused_modes_say_why(data):
    with pytest.raises(ValueError, match=r"super_batch: .*compile=False samples eagerly"):
        gp.NeighborLoader(data, [2], input_nodes="paper", compile=False, super_batch=2)
    with pytest.raises(ValueError, match=r"super_batch: .*'auto' times super-batch sizes"):
        gp.NeighborLoader(data, [2], input_nodes="paper", super_batch="auto", num_workers=2)
    with pytest.raises(ValueError, match=r"super_batch: .*'auto' times super-batch sizes"):
        gp.NeighborLoader(
            data, [2], input_nodes="paper", time_attr="time", super_batch="auto", num_workers=1
        )
    one = gp.NeighborLoader(data, [2], input_nodes="paper", disjoint=True, super_batch=1)
    assert len(list(one)) == 60 and one.super_batch_size == 1


# ----------------------------------------------------------------------------- devices
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("mode", ["directional", "bidirectional", "induced", "per_type"])
def test_on_the_gpu_with_the_cuda_backend(data, mode):
    """The graph on the GPU (``graph=``), the steps compiled on the CUDA backend (its
    kernels, not the torch fallback): the super-batched batches are the CPU's one at a
    time, bit for bit, and the GPU's one at a time."""
    ref = loader_batches(loader_of(data, mode), epochs=2)
    graph = gs.HeteroGraph.from_pyg(data, weight=None).to("cuda")
    with gs.use_backend("cuda"):
        one = loader_batches(loader_of(data, mode, graph=graph), epochs=2)
        loader = loader_of(data, mode, graph=graph, super_batch=4)
        got = loader_batches(loader, epochs=2)
    assert_same_hetero(ref, one)
    assert_same_hetero(ref, got)
    batchers = loader.dataset.super.batchers.values()
    assert batchers and all(b.backend == "cuda" for b in batchers)
    assert all(graph.step_sampler().backend_for(graph[et]) == "cuda" for et in graph.edge_types)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("mode", ["binary", "triplet", "disjoint", "edge_label_time"])
def test_link_on_the_gpu_with_the_cuda_backend(data, mode):
    """The link loader's graph on the GPU (the data on the GPU), its steps on the CUDA
    backend: super-batched equals one at a time there, and the CPU's, bit for bit."""
    ref = loader_batches(link_loader_of(data, mode), epochs=2)
    gpu = data.clone().to("cuda")  # (PyG's .to() moves in place: the fixture stays on the CPU)
    kw = {k: v.cuda() if torch.is_tensor(v) else v for k, v in LINK_MODES[mode].items()}
    with gs.use_backend("cuda"):
        one = loader_batches(link_loader_of(gpu, mode, **kw), epochs=2)
        loader = link_loader_of(gpu, mode, super_batch=4, **kw)
        got = loader_batches(loader, epochs=2)
    assert_same_hetero(one, got)
    assert_same_hetero(ref, [b.to("cpu") for b in got])
    batchers = loader.dataset.super.batchers.values()
    assert batchers and all(b.backend == "cuda" for b in batchers)


# ----------------------------------------------------------------------------- link loader
LINK_MODES = {
    "binary": {"neg_sampling": "binary"},
    "triplet": {"neg_sampling": "triplet"},
    "strict": {"neg_sampling": gp.NegativeSampling("binary", 2, strict=True)},
    "no_negatives": {},
    "bidirectional": {"neg_sampling": "binary", "subgraph_type": "bidirectional"},
    "induced": {"neg_sampling": "binary", "subgraph_type": "induced"},
    "weighted": {"neg_sampling": "triplet", "weight_attr": "w"},
    "disjoint": {"neg_sampling": "binary", "disjoint": True},
    "edge_label_time": {
        "neg_sampling": "binary",
        "time_attr": "time",
        "edge_label_time": (torch.arange(180) * 7) % 30,
    },
    "same_type": {"neg_sampling": "binary", "edge_label_index": CITES},
}


def link_loader_of(data, mode: str, **kw):
    args = {"edge_label_index": WRITES, **LINK_MODES[mode]}
    common = dict(batch_size=16, shuffle=True, seed=5)
    return gp.LinkNeighborLoader(data, [3, 2], **{**common, **args, **kw})


@pytest.mark.parametrize("mode", list(LINK_MODES))
def test_link_super_batches_are_the_batches_one_at_a_time(data, mode):
    """``LinkNeighborLoader`` on a ``HeteroData``: each mini-batch's negatives drawn with
    its own key, then every (hop, edge type) of the run's seeds in one step run; 180
    supervision edges in mini-batches of 16 (12, the last of 4), two shuffled epochs."""
    ref = loader_batches(link_loader_of(data, mode), epochs=2)
    count = 150 if mode == "same_type" else 180
    assert len(ref) == 2 * -(-count // 16)
    for n in (2, 4):
        loader = link_loader_of(data, mode, super_batch=n)
        sizes, draw = [], loader.dataset.super.seed_draws

        def record(seeds, times, epoch_seed, first, draw=draw, sizes=sizes):
            sizes.append(len(seeds))
            return draw(seeds, times, epoch_seed, first)

        loader.dataset.super.seed_draws = record
        assert_same_hetero(ref, loader_batches(loader, epochs=2))
        full = (len(ref) // 2) // n
        assert sizes[:full] == [n] * full and len(sizes) in (2 * full, 2 * full + 2)


def test_link_batches_are_pygs_layout_of_the_keyed_draws(data):
    """Mini-batch ``i`` of the loader (its own epochs) is what the sampler's PyG entry
    point, ``sample_from_edges`` (PyG's heterogeneous ``edge_sample``), gives its
    supervision edges under key ``i`` and the epoch's seed: the plan / finish split lays
    them out as PyG does."""
    loader = link_loader_of(data, "triplet")
    batches = loader_batches(loader)
    sampler = loader.link_sampler
    sampler.epoch_seed = lambda: loader.batches.epoch_seed  # the loader's epoch, as iterated
    order = loader.dataset.positions(loader.batches.epoch_seed)
    for i in (0, 5, 11):
        sampler.key = lambda ids, i=i: i
        index = loader.input_data[order[i * 16 : (i + 1) * 16]]
        out = sampler.sample_from_edges(index, loader.neg_sampling)
        assert_same_hetero([batches[i]], [loader.filter_fn(out)])


def test_link_one_step_run_per_super_batch(data, monkeypatch):
    """Runs of several mini-batches call no one-mini-batch step; every step runs
    super-batched (SuperBatcher runs of the run's size)."""
    ref = loader_batches(link_loader_of(data, "binary"))
    starts, calls = counted_steps(monkeypatch)
    assert_same_hetero(ref, loader_batches(link_loader_of(data, "binary", super_batch=6)))
    assert calls == [] and set(starts) == {6}  # 12 mini-batches: two runs of 6
    # hop 0 into authors and papers (the seeds' types), hop 1 every edge type's frontier
    assert 2 * 3 < len(starts) <= 2 * 2 * len(data.edge_types)


def test_link_workers_auto_and_out_of_memory(data, monkeypatch):
    """Two worker processes; ``"auto"``; a step's run out of memory midway: the batches
    of one process, one mini-batch at a time."""
    ref = loader_batches(link_loader_of(data, "disjoint"), epochs=2)
    workers = link_loader_of(
        data, "disjoint", super_batch=3, num_workers=2, persistent_workers=True
    )
    assert_same_hetero(ref, loader_batches(workers, epochs=2))
    auto = link_loader_of(data, "disjoint", super_batch="auto", memory_budget=1 << 40)
    assert_same_hetero(ref, loader_batches(auto, epochs=2))
    assert set(auto.auto_times) == {1, 2}
    start, seen = SuperBatcher.start, []

    def fail_on_the_fourth(self, parts, observe=None):
        seen.append(1)
        if len(seen) % 4 == 0:
            raise torch.OutOfMemoryError("CUDA out of memory (a test's)")
        return start(self, parts, observe)

    monkeypatch.setattr(SuperBatcher, "start", fail_on_the_fourth)
    with pytest.warns(RuntimeWarning, match="ran out of memory"):
        got = loader_batches(link_loader_of(data, "disjoint", super_batch=4))
    assert_same_hetero(ref[:12], got)
