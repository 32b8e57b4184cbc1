"""An empty frontier: a hop that reaches no new node.

PyG's ``NeighborLoader`` returns the nodes reached so far when a hop reaches nothing new: the
later hops add no node and no edge, and ``num_sampled_nodes`` / ``num_sampled_edges`` get
zeros. gsample's samplers slice ``A[:, frontier]`` at every hop, so an empty frontier is a
column slice of no column: a matrix of shape ``(R, 0)``, which every op takes (a sample of it
is empty, a per-column reduction has length 0, a per-row one is all zeros, its node lists
are empty). Each random op on it still takes its op ordinal, so an empty hop does not shift
the draws after it.

Checked here: PyG's batches against a brute-force reference written below (every in-edge
of every frontier node enumerated), eager == compiled (with and without the passes,
interpreted, every input checked), super-batched == one by one, every DSL op on a 0-column
matrix, the random stream, and the CUDA backend (``@pytest.mark.cuda``: the lead's GPU run).
"""

import functools

import pytest
import torch
from helpers import assert_same, check_super_batched, example

import gsample as gs
from gsample.base.random import stream_state
from gsample.interop.pyg.loader import neighbor_sample
from gsample.ir import Op
from gsample.runtime import Options

pytest.importorskip("torch_geometric")
from torch_geometric.data import Data

import gsample.pyg as gp

# A forest of small in-trees (edge ``e`` is ``SRC[e] -> DST[e]``, its id ``e``): a star into 0
# (1, 2, 3 -> 0), a chain 6 -> 5 -> 4, node 7 isolated, a 2-cycle 8 <-> 9, a 2-cycle
# 10 <-> 11 with 12 -> 10. No new node is reached after two hops (the longest in-path has two
# edges), so a tree ends at hop 1, 2 or 3: the hop after that samples an empty frontier.
SRC = [1, 2, 3, 6, 5, 9, 8, 11, 10, 12]
DST = [0, 0, 0, 5, 4, 8, 9, 10, 11, 10]
N = 13
WEIGHT = [1.0, 2.0, 3.0, 1.0, 2.0, 1.0, 4.0, 2.0, 1.0, 3.0]
# mini-batches of 2, in order: [8, 9], [1, 2] and [12, 6] reach nothing new at hop 1 (hop 2's
# frontier is empty), [7, 0] ends at hop 2 (hop 3's frontier is empty), [3, 4] not within 3
SEEDS = torch.tensor([8, 9, 7, 0, 1, 2, 12, 6, 3, 4])


def graph(weighted: bool = False, device="cpu") -> gs.Matrix:
    ei = torch.tensor([SRC, DST])
    w = torch.tensor(WEIGHT) if weighted else None
    return gs.Matrix.from_edge_index(ei, num_nodes=N, weight=w).to(device)


def edgeless(n: int = 6, device="cpu") -> gs.Matrix:
    return gs.Matrix.from_edge_index(torch.empty(2, 0, dtype=torch.long), num_nodes=n).to(device)


# ----------------------------------------------------------------------------- PyG's batches
def in_edges(v: int) -> list:
    return [e for e, d in enumerate(DST) if d == v]


def check_pyg_batch(batch, seeds: list, num_neighbors: list) -> int:
    """Check a (directional) PyG batch against the reference: seeds first, then each hop's
    new nodes (the sources first reached there) in ascending id order; each frontier node's
    sampled edges are distinct in-edges of it, ``min(k, degree)`` of them (``k = -1``:
    all), and ``e_id`` names them; a hop whose frontier is empty adds no node and no edge.
    Returns how many hops sampled an empty frontier."""
    B, hops = len(seeds), len(num_neighbors)
    n_id, e_id = batch.n_id.tolist(), batch.e_id.tolist()
    row, col = batch.edge_index.tolist() if batch.edge_index is not None else ([], [])
    assert n_id[:B] == seeds and batch.batch_size == B
    assert len(batch.num_sampled_nodes) == hops + 1 and len(batch.num_sampled_edges) == hops
    assert sum(batch.num_sampled_nodes) == len(n_id) and sum(batch.num_sampled_edges) == len(e_id)
    assert len(set(n_id)) == len(n_id), "a node appears once"
    starts = [sum(batch.num_sampled_nodes[:h]) for h in range(hops + 2)]
    estarts = [sum(batch.num_sampled_edges[:h]) for h in range(hops + 1)]
    seen, frontier, empty = set(seeds), list(range(B)), 0
    for h, k in enumerate(num_neighbors):
        empty += not frontier
        got = {c: [] for c in frontier}
        for j in range(estarts[h], estarts[h + 1]):
            assert col[j] in got, ("an edge into the hop's frontier", h, j)
            e = e_id[j]
            assert (SRC[e], DST[e]) == (n_id[row[j]], n_id[col[j]]), "e_id names the edge"
            got[col[j]].append(e)
        reached = set()
        for c, es in got.items():
            ok = in_edges(n_id[c])
            want = len(ok) if k < 0 else min(k, len(ok))
            assert set(es) <= set(ok) and len(es) == len(set(es)) == want, (h, n_id[c], es)
            reached |= {SRC[e] for e in es}
        new = sorted(reached - seen)
        seen |= reached
        frontier = list(range(starts[h + 1], starts[h + 2]))
        assert [n_id[c] for c in frontier] == new, ("hop's new nodes", h)
        if not new:  # nothing reached: every later hop is empty
            assert batch.num_sampled_nodes[h + 1 :] == [0] * (hops - h)
            assert batch.num_sampled_edges[h + 1 :] == [0] * (hops - h - 1)
    return empty


@pytest.fixture(scope="module")
def data():
    g = torch.Generator().manual_seed(0)
    return Data(edge_index=torch.tensor([SRC, DST]), x=torch.randn(N, 3, generator=g))


@pytest.mark.parametrize("compile", [True, False], ids=["compiled", "eager"])
@pytest.mark.parametrize("num_neighbors", [[2, 2], [-1, -1], [2, 1, 3], [-1, -1, -1]])
def test_neighbor_loader_matches_the_reference(data, num_neighbors, compile):
    """Every mini-batch exactly as the reference says, the empty hops included; the 2-hop
    loaders slice at an empty frontier for 3 of the 5 mini-batches, the 3-hop ones for 4."""
    loader = gp.NeighborLoader(
        data, num_neighbors, input_nodes=SEEDS, batch_size=2, seed=3, compile=compile
    )
    empty = []
    for batch, seeds in zip(loader, SEEDS.split(2), strict=True):
        empty.append(check_pyg_batch(batch, seeds.tolist(), num_neighbors))
        assert torch.equal(batch.x, data.x[batch.n_id])
    assert sum(e > 0 for e in empty) == (3 if len(num_neighbors) == 2 else 4)


def test_neighbor_loader_empty_hops_are_zeros(data):
    """Hand-checked: seeds ``[8, 9]`` (a 2-cycle) reach only each other; ``[7, 0]`` reach
    1, 2, 3 at hop 1 and nothing after."""
    loader = gp.NeighborLoader(data, [-1, -1, -1], input_nodes=SEEDS[:4], batch_size=2, seed=0)
    a, b = list(loader)
    assert a.n_id.tolist() == [8, 9] and sorted(a.e_id.tolist()) == [5, 6]
    assert a.num_sampled_nodes == [2, 0, 0, 0] and a.num_sampled_edges == [2, 0, 0]
    assert b.n_id.tolist() == [7, 0, 1, 2, 3] and sorted(b.e_id.tolist()) == [0, 1, 2]
    assert b.num_sampled_nodes == [2, 3, 0, 0] and b.num_sampled_edges == [3, 0, 0]


@pytest.mark.parametrize("subgraph_type", ["bidirectional", "induced"])
def test_other_subgraph_types_end_as_directional(data, subgraph_type):
    """The same nodes as the directional batch (``induced`` and ``bidirectional`` change the
    edges, not the hops)."""
    kw = dict(input_nodes=SEEDS, batch_size=2, seed=3)
    ref = list(gp.NeighborLoader(data, [-1, -1, -1], **kw))
    got = list(gp.NeighborLoader(data, [-1, -1, -1], subgraph_type=subgraph_type, **kw))
    assert [b.n_id.tolist() for b in got] == [b.n_id.tolist() for b in ref]


def test_a_graph_of_no_edge_through_the_loader():
    """A ``Data`` of nodes only, three hops, batches of 4: the seeds alone."""
    d = Data(x=torch.randn(10, 2), num_nodes=10)
    for compile in (True, False):
        batches = list(gp.NeighborLoader(d, [3, 2, 1], batch_size=4, seed=1, compile=compile))
        assert [b.n_id.tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
        for b in batches:
            assert b.edge_index is None and b.e_id.numel() == 0
            assert b.num_sampled_nodes == [b.batch_size, 0, 0, 0]
            assert b.num_sampled_edges == [0, 0, 0]


# ----------------------------------------------------------------------------- eager == compiled
def rowsage(A, seeds, fanouts=(2, 2)):
    """GraphSAGE with the reached rows as the next frontier (empty once nothing is reached)."""
    blocks = []
    for k in fanouts:
        s = A[:, seeds].individual_sample(k)
        blocks.append(s)
        seeds = s.row()
    return blocks


def layerwise(A, seeds, layers=(2, 2)):
    """LADIES-like: rows drawn by their column-slice weight, the chosen rows next."""
    blocks = []
    for k in layers:
        sub = A[:, seeds]
        p = sub.sum(axis=1)
        s = sub.collective_sample(k, node_probs=p / p.sum().clamp(min=1e-30))
        s = s.div(s.sum(axis=0).clamp(min=1e-30), axis=0)
        blocks.append(s)
        seeds = s.row()
    return blocks


SAMPLERS = {
    "pyg-2": functools.partial(neighbor_sample, num_neighbors=(2, 2)),
    "pyg-3": functools.partial(neighbor_sample, num_neighbors=(2, 1, 3)),
    "pyg-all": functools.partial(neighbor_sample, num_neighbors=(-1, -1, -1)),
    "pyg-replace": functools.partial(neighbor_sample, num_neighbors=(2, 2, 2), replace=True),
    "pyg-weighted": functools.partial(neighbor_sample, num_neighbors=(1, 2, 2), weighted=True),
    "rowsage": rowsage,
    "layerwise": layerwise,
}

COMPILED = {
    "default": {},
    "no-passes": {"passes": []},
    "interpreted": {"runtime": Options(lowered=False)},
    "every-input-checked": {"runtime": Options(boundary_checks=False)},
}


def unwrap(fn):
    """The function and keyword arguments of a ``functools.partial``."""
    return (fn.func, fn.keywords) if isinstance(fn, functools.partial) else (fn, {})


def widths(blocks) -> list:
    return [b.shape[1] for b in blocks]


@pytest.mark.parametrize("how", list(COMPILED))
@pytest.mark.parametrize("name", list(SAMPLERS))
def test_compiled_equals_eager(name, how, device):
    """Each mini-batch of ``SEEDS`` (and all of them at once), eagerly and compiled: the
    same blocks, bit for bit, empty ones included; the stream ends at the same ordinal."""
    fn, kw = unwrap(SAMPLERS[name])
    A = graph(weighted=True, device=device)
    compiled = gs.compile(fn, **COMPILED[how])
    shapes = []
    for seeds in [*SEEDS.split(2), SEEDS]:
        seeds = seeds.to(device)
        gs.manual_seed(11)
        want = fn(A, seeds, **kw)
        after = stream_state().ordinal
        gs.manual_seed(11)
        got = compiled(A, seeds, **kw)
        assert stream_state().ordinal == after
        assert_same(got, want, f"{name} {how} seeds {seeds.tolist()}")
        shapes.append(widths(want))
    assert any(0 in s for s in shapes), "no hop of these seeds had an empty frontier"


@pytest.mark.parametrize("name", ["pyg-2", "pyg-3", "pyg-all", "rowsage", "layerwise"])
def test_edgeless_graph(name, device):
    """On a graph of no edge, hop 1 keeps the seeds' columns and every later hop has none."""
    fn, kw = unwrap(SAMPLERS[name])
    A, seeds = edgeless(device=device), torch.tensor([4, 0, 2], device=device)
    gs.manual_seed(0)
    want = fn(A, seeds, **kw)
    gs.manual_seed(0)
    assert_same(gs.compile(fn)(A, seeds, **kw), want, name)
    assert widths(want)[0] == 3
    assert widths(want)[1:] == [0] * (len(want) - 1)
    assert all(b.num_edges == 0 for b in want)


@pytest.mark.parametrize("fanouts", [(2, 2), (2, 1, 3)])
def test_star_hop_two_reaches_nothing(fanouts, device):
    """A star (leaves -> hub), hub seed: hop 1 reaches ``min(k, 5)`` leaves, hop 2 samples
    them and reaches nothing (no edge), hop 3 has no column; as the reference says."""
    ei = torch.tensor([[1, 2, 3, 4, 5], [0, 0, 0, 0, 0]])
    A = gs.Matrix.from_edge_index(ei, num_nodes=6).to(device)
    seeds = torch.tensor([0], device=device)
    fn = gs.compile(neighbor_sample)
    for s in range(5):
        gs.manual_seed(s)
        blocks = neighbor_sample(A, seeds, fanouts)
        gs.manual_seed(s)
        assert_same(fn(A, seeds, fanouts), blocks)
        src, dst, eid = (t.tolist() for t in blocks[0].edges())
        assert dst == [0, 0] and len(set(src)) == 2 and set(src) <= {1, 2, 3, 4, 5}
        assert eid == [v - 1 for v in src]
        assert blocks[1].col_ids.tolist() == sorted(src) and blocks[1].num_edges == 0
        assert widths(blocks)[2:] == [0] * (len(fanouts) - 2)


def test_an_empty_hop_takes_its_ordinal(device):
    """A random op on an empty frontier takes its op ordinal: the draws after an empty hop
    are those after a non-empty one (each op's key comes from its ordinal alone)."""
    A = graph(device=device)
    one = torch.tensor([12], device=device)  # reaches nothing: hops 2 and 3 are empty
    gs.manual_seed(4)
    neighbor_sample(A, one, (2, 2, 2))
    assert stream_state().ordinal == 3
    after_empty = A[:, SEEDS.to(device)].individual_sample(1)
    gs.manual_seed(4)
    neighbor_sample(A, torch.tensor([3, 4], device=device), (2, 2, 2))  # never empty
    assert_same(A[:, SEEDS.to(device)].individual_sample(1), after_empty)


# ----------------------------------------------------------------------------- super-batches
@pytest.mark.parametrize("name", list(SAMPLERS))
def test_super_batched_equals_one_by_one(name):
    """Mini-batches of 2 super-batched 5 at a time (one round: some mini-batches' frontiers
    empty at a hop, others not), and 2 at a time, equal the eager loader's one by one."""
    fn, kw = unwrap(SAMPLERS[name])
    A = graph(weighted=True)
    for n in (5, 2):
        check_super_batched(A, functools.partial(fn, **kw), SEEDS, 2, n)


def test_super_batched_edgeless():
    """Every mini-batch's later frontiers empty at once."""
    for fanouts in ((2, 2), (-1, 3, 1)):
        sampler = functools.partial(neighbor_sample, num_neighbors=fanouts)
        check_super_batched(edgeless(12), sampler, torch.arange(12), 3, 4)


def test_super_batched_loader_to_pyg(data):
    """Through ``gs.DataLoader`` to PyG: a super-batch gives the batches one by one does,
    with zeros for the empty hops."""
    A = gs.Matrix.from_pyg(data, weight=None)
    sampler = functools.partial(gs.compile(neighbor_sample), num_neighbors=(2, 2, 2))
    kw = dict(shuffle=False, seed=5)
    one = [b.to_pyg() for b in gs.DataLoader(A, sampler, SEEDS, 2, **kw)]
    sb = [b.to_pyg() for b in gs.DataLoader(A, sampler, SEEDS, 2, super_batch=5, **kw)]
    for a, b, seeds in zip(one, sb, SEEDS.split(2), strict=True):
        check_pyg_batch(a, seeds.tolist(), [2, 2, 2])
        for key in ("n_id", "e_id", "edge_index"):
            assert torch.equal(a[key], b[key]), key
        assert a.num_sampled_nodes == b.num_sampled_nodes
        assert a.num_sampled_edges == b.num_sampled_edges


# ----------------------------------------------------------------------------- every op
def every_op(A, seeds):
    """Every DSL op on a frontier the program computes empty (``s.row()`` of a sample of
    nodes with no in-edge)."""
    s = A[:, seeds].individual_sample(2)
    fr = s.row()  # empty: the seeds have no in-edge
    sub = A[:, fr]
    return dict(
        sub=sub,
        rows=sub[seeds, :],
        rows_cols=A[seeds, fr],
        sub_of_sub=s[:, fr],
        T=sub.T,
        uniform=sub.individual_sample(2),
        replace=sub.individual_sample(2, replace=True),
        weighted=sub.individual_sample(2, probs=sub),
        weighted_replace=sub.individual_sample(2, probs=sub**2, replace=True),
        alias=sub.individual_sample(2, probs=sub, replace=True, method="alias"),
        fused=A[:, fr].individual_sample(3),
        collective=sub.collective_sample(2),
        collective_p=sub.collective_sample(2, node_probs=sub.sum(axis=1)),
        sum0=sub.sum(axis=0),
        sum1=sub.sum(axis=1),
        max0=sub.max(axis=0),
        max1=sub.max(axis=1),
        mean0=sub.mean(axis=0),
        mean1=sub.mean(axis=1),
        mul0=sub.mul(sub.sum(axis=0), 0),
        div1=sub.div(sub.sum(axis=1) + 1, 1),
        power=sub**2,
        scaled=sub * 3,
        spmm=sub @ torch.ones(fr.shape[0], device=fr.device),
        spmm_t=sub.T @ torch.ones(A.num_nodes, device=fr.device),
        sddmm=gs.sddmm(
            sub, torch.ones(A.num_nodes, device=fr.device), torch.ones(0, device=fr.device)
        ),
        filtered=sub.filter_edges(sub.values > 0),
        row=sub.row(),
        column=sub.column(),
        all_nodes=sub.all_nodes(),
        edges=sub.edges(),
        compact=sub.compact(),
        uniforms=A.random_uniform(fr),
        counts=A.random_count(fr, "geometric", p=0.5),
        walk=A.random_walk(fr, 3),
        temporal=A.temporal_sample(fr, 2),
        from_neighbors=A.from_neighbors(fr, torch.zeros(0, 2, dtype=torch.long, device=fr.device)),
    )


def test_every_op_on_an_empty_frontier(device):
    """Eager == compiled (default passes and none), each of the expected shape."""
    A, seeds = graph(weighted=True, device=device), torch.tensor([7, 12], device=device)
    gs.manual_seed(2)
    want = every_op(A, seeds)
    for passes in (None, []):
        gs.manual_seed(2)
        assert_same(gs.compile(every_op, passes=passes)(A, seeds), want, f"passes={passes}")
    R = A.num_nodes
    shapes = {k: tuple(v.shape) for k, v in want.items() if not isinstance(v, tuple)}
    assert shapes["sub"] == shapes["uniform"] == shapes["fused"] == (R, 0)
    assert shapes["rows"] == shapes["rows_cols"] == (2, 0) and shapes["T"] == (0, R)
    assert shapes["collective"] == shapes["compact"] == (0, 0)
    assert shapes["sum0"] == shapes["max0"] == shapes["mean0"] == shapes["spmm_t"] == (0,)
    for k in ("sum1", "max1", "mean1", "spmm"):
        assert torch.equal(want[k], torch.zeros(R, device=device)), k
    for k in ("row", "column", "all_nodes", "uniforms", "counts"):
        assert want[k].numel() == 0, k
    assert shapes["walk"] == (0, 4)
    assert all(v.num_edges == 0 for v in want.values() if isinstance(v, gs.Matrix))


def fused_ops(A, seeds):
    """The fused ops (each slice read by one op) on frontiers the program computes empty
    (distinct dense values, so that no two slices are merged into one)."""
    fr = A[:, seeds].individual_sample(2).row()
    return (
        A[:, fr + 0].individual_sample(3),
        A[:, fr + 1 - 1].individual_sample(2, replace=True),
        A[:, fr * 1].collective_sample(2),
        A[:, fr + 2 - 2].max(axis=1),
        A[:, fr + 3 - 3].sum(axis=1),
        A[:, fr + 4 - 4].sum(axis=0),
        A[seeds, fr + 5 - 5],
    )


def test_fused_ops_on_an_empty_frontier(device):
    """The fused slice + sample / reduce / row slice ops (the backends' own frontier code)
    on an empty frontier: eager == compiled fused == compiled unfused."""
    A, seeds = graph(weighted=True, device=device), torch.tensor([7, 12], device=device)
    program = gs.compile(fused_ops).program(A, seeds)
    kinds = [n.op for n in program.nodes]
    for op in (Op.SLICE_COLLECTIVE_SAMPLE, Op.SLICE_REDUCE, Op.SLICE_ROWS_COLS):
        assert op in kinds, op
    assert kinds.count(Op.SLICE_INDIVIDUAL_SAMPLE) == 3
    gs.manual_seed(3)
    want = fused_ops(A, seeds)
    for passes in (None, []):
        gs.manual_seed(3)
        assert_same(gs.compile(fused_ops, passes=passes)(A, seeds), want, f"passes={passes}")
    assert [tuple(x.shape) for x in want] == [(N, 0), (N, 0), (0, 0), (N,), (N,), (0,), (2, 0)]
    assert torch.equal(want[3], torch.zeros(N, device=device))


def test_forest_fire_that_dies_out():
    """``examples/forest_fire.py``: a fire that burns nothing at hop 1 leaves hop 2 an empty
    frontier; eager == compiled."""
    fire = example("forest_fire").forest_fire
    A, seeds = graph(), torch.tensor([7, 12])  # no in-edge: nothing can burn
    gs.manual_seed(0)
    blocks, burned = fire(A, seeds, p=0.5, depth=3)
    gs.manual_seed(0)
    assert_same(gs.compile(fire)(A, seeds, p=0.5, depth=3), (blocks, burned))
    assert widths(blocks) == [0, 0, 0] and burned.tolist() == [7, 12]


# ----------------------------------------------------------------------------- the user's seeds
def test_empty_seeds_are_an_empty_sample_eager_and_compiled(device):
    """``A[:, empty]`` is a matrix of no column, as torch's indexing (the loaders treat an
    empty seed set as an empty epoch, as PyG's): eagerly and compiled alike, every op
    taking its ordinal."""
    A, none = graph(device=device), torch.tensor([], dtype=torch.long, device=device)
    assert A[:, none].shape == (N, 0) and A[:, []].shape == (N, 0)
    for name, sampler in SAMPLERS.items():
        fn, kw = unwrap(sampler)
        gs.manual_seed(1)
        want = fn(A, none, **kw)
        after = stream_state().ordinal
        gs.manual_seed(1)
        assert_same(gs.compile(fn)(A, none, **kw), want, name)
        assert stream_state().ordinal == after
        assert widths(want)[1:] == [0] * (len(want) - 1)


# ----------------------------------------------------------------------------- CUDA backend
def on_host(x):
    """Comparable host values: a matrix as its shape, edges, ids and values."""
    if isinstance(x, gs.Matrix):
        vals = None if x.values is None else x.values.cpu()
        return (x.shape, *(t.cpu() for t in x.edges()), x.row_ids.cpu(), x.col_ids.cpu(), vals)
    if isinstance(x, torch.Tensor):
        return x.cpu()
    if isinstance(x, (list, tuple)):
        return type(x)(on_host(v) for v in x)
    if isinstance(x, dict):
        return {k: on_host(v) for k, v in x.items()}
    return x


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("name", ["pyg-2", "pyg-3", "pyg-all", "pyg-replace", "rowsage"])
@pytest.mark.parametrize("super_batch", [1, 5])
def test_cuda_backend_equals_the_torch_backend(name, super_batch):
    """Compiled with ``backend="cuda"`` on the GPU (uniform draws: bit-equal to the torch
    backend's), one by one and super-batched, each mini-batch as the CPU's."""
    pytest.importorskip("cupy")
    fn, kw = unwrap(SAMPLERS[name])
    cpu = functools.partial(gs.compile(fn), **kw)
    cuda = functools.partial(gs.compile(fn, backend="cuda"), **kw)
    ref = [b.out for b in gs.DataLoader(graph(), cpu, SEEDS, 2, shuffle=False, seed=7)]
    loader = gs.DataLoader(
        graph(device="cuda"), cuda, SEEDS.cuda(), 2, shuffle=False, seed=7, super_batch=super_batch
    )
    got = [b.out for b in loader]
    assert_same(on_host(got), on_host(ref), f"{name}, super_batch={super_batch}")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("placement", ["device", "uva"])
def test_cuda_backend_empty_hops_in_host_memory_too(placement):
    """A graph in GPU memory or in pinned host memory (UVA: the CUDA backend's exact
    sampler), 3 hops: every mini-batch as the CPU's."""
    pytest.importorskip("cupy")
    kw = dict(num_neighbors=(2, 1, 3))
    cpu = functools.partial(gs.compile(neighbor_sample), **kw)
    cuda = functools.partial(gs.compile(neighbor_sample, backend="cuda"), **kw)
    ref = [b.out for b in gs.DataLoader(graph(), cpu, SEEDS, 2, shuffle=False, seed=7)]
    A = graph().to("cuda", placement=placement)
    got = [b.out for b in gs.DataLoader(A, cuda, SEEDS.cuda(), 2, shuffle=False, seed=7)]
    assert_same(on_host(got), on_host(ref), placement)
