"""PyG's loader modes on the GPU, each beside its baseline in the same run.

On the products-like graph (``gs.datasets.anchor_graph``: undirected R-MAT, 1,833,086 nodes,
123,718,280 stored edges, 196,608 seeds), GraphSAGE [10, 10], mini-batches of 1,024 seeds:

- ``shared``: PyG's default sampling (``gsample.pyg.neighbor_sample``, one sample per node of
  the mini-batch), the baseline of the next two;
- ``disjoint``: one tree per seed (``gsample.interop.pyg.temporal.disjoint_sample``);
- ``temporal``: disjoint, strategy ``uniform``, edge times and seed times uniform over the
  same range (about half the edges allowed to a seed);

each through ``gs.DataLoader``, compiled, one mini-batch at a time and super-batched
(``--super-batch``); then the PyG loaders as a user calls them on a ``Data`` on the GPU:

- ``node_loader``: ``gsample.pyg.NeighborLoader``, 1,024 seeds a batch;
- ``link_loader``: ``gsample.pyg.LinkNeighborLoader``, 256 positive edges a batch with 256
  strict binary negatives (up to 1,024 seed nodes), over as many batches as the node loader
  (the negatives are checked: none is an edge);
- ``node_loader/super``, ``link_loader/super``: the two super-batched (``--super-batch``).

Each row: the epoch time (median of ``--repeats`` after a warm-up epoch) and its ratio to
its baseline. The rows compared run in rounds, each once a round (:func:`interleaved`), and
a ratio is the median of the rounds' ratios: these epochs are mostly host work, and what
else runs on the machine moves them by tens of percent from one minute to the next.
Writes ``pyg_loaders_<graph>_<device>.json`` (device, date, command) to ``--out``.

    python benchmarks/pyg_loaders.py                       # products-like, on cuda
    python benchmarks/pyg_loaders.py --quick --device cpu  # a 20k-node R-MAT, seconds
"""

import argparse
import functools
import pathlib
import statistics
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import gsample as gs
import gsample.pyg
from gsample.bench.report import script_record, write_record
from gsample.interop.pyg.temporal import disjoint_sample

ROOT = pathlib.Path(__file__).resolve().parents[1]
FANOUT = (10, 10)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def interleaved(runs: dict, repeats: int, device: torch.device) -> dict:
    """``name -> seconds of each epoch`` of every ``runs[name]()`` (an epoch), after one
    warm-up epoch each, taken in rounds: each round runs every one once, in turn (the order
    reversed every other round), so that what drifts on the machine while they run (its
    other load, its clocks) falls on all of them alike and their ratio round by round
    (:func:`paired_ratio`) compares them under the same conditions."""
    names = list(runs)
    for name in names:
        runs[name]()
    out: dict = {name: [] for name in names}
    for r in range(repeats):
        for name in names if r % 2 == 0 else names[::-1]:
            sync(device)
            t = time.perf_counter()
            runs[name]()
            sync(device)
            out[name].append(time.perf_counter() - t)
    return out


def paired_ratio(a: list, b: list) -> float:
    """The median over rounds of ``a[i] / b[i]`` (epoch times of one :func:`interleaved`)."""
    return statistics.median(x / y for x, y in zip(a, b))


def graph(args, device):
    if args.quick:
        A = gs.datasets.undirected_rmat(20_000, 200_000, seed=0, device=device)
        seeds = torch.randperm(A.num_nodes, generator=torch.Generator().manual_seed(0))[:8192]
        return A, seeds.to(device)
    return gs.datasets.anchor_graph(args.graph, device=device, cache=args.graph_cache)


def samplers(A, seeds, device):
    """The DSL rows: name -> sampler_fn(A, seeds)."""
    g = torch.Generator().manual_seed(1)
    span = 1_000_000
    edge_time = torch.randint(0, span, (A.num_edges,), generator=g).to(device)
    node_time = torch.randint(0, span, (A.num_nodes,), generator=g).to(device)

    def temporal(A, seeds):
        return disjoint_sample(A, seeds, node_time[seeds], edge_time, num_neighbors=FANOUT)

    return {
        "shared": functools.partial(gsample.pyg.neighbor_sample, num_neighbors=FANOUT),
        "disjoint": functools.partial(disjoint_sample, num_neighbors=FANOUT),
        "temporal": temporal,
    }


def loader_epoch(loader) -> int:
    n = 0
    for batch in loader:
        n += int(batch.num_sampled_edges[-1]) if batch.num_sampled_edges else 0
    return n


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", default="products-like", choices=["products-like", "papers-like"])
    p.add_argument("--graph-cache", default=None, help="folder caching the generated graph")
    p.add_argument("--device", default="cuda")
    p.add_argument("--quick", action="store_true", help="a 20k-node graph (a smoke run)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--super-batch", type=int, default=16)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--rows", nargs="*", default=None, help="only these rows (default all)")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = p.parse_args(argv)
    device = torch.device(args.device)
    t0 = time.perf_counter()
    A, seeds = graph(args, device)
    build_s = time.perf_counter() - t0
    print(
        f"graph: {A.num_nodes} nodes, {A.num_edges} edges, {seeds.numel()} seeds ({build_s:.1f} s)",
        flush=True,
    )
    want = set(args.rows) if args.rows else None
    rows: dict = {}

    def record(name, times, **extra):
        rows[name] = {"seconds": statistics.median(times), "all": times, **extra}
        print(f"{name:28s} {rows[name]['seconds']:.4f} s  {extra or ''}", flush=True)

    mb = args.batch_size
    fns = {n: f for n, f in samplers(A, seeds, device).items() if not want or n in want}
    for mode, extra in (("one", {}), ("super", {"super_batch": args.super_batch})):
        loaders = {
            n: gs.DataLoader(
                A, gs.compile(f), seeds, mb, shuffle=True, seed=0, fixed_state=True, **extra
            )
            for n, f in fns.items()
        }

        def run(loader):
            for _ in loader:
                pass

        times = interleaved(
            {n: functools.partial(run, L) for n, L in loaders.items()}, args.repeats, device
        )
        for n in loaders:
            record(f"{n}/{mode}", times[n])
        for a in ("temporal", "disjoint"):
            if a in times and "shared" in times:
                r = paired_ratio(times[a], times["shared"])
                rows[f"{a}/{mode}"]["ratio_to_shared"] = r
                print(f"  {a}/{mode} / shared/{mode} = {r:.2f} (median of the rounds' ratios)")

    src, dst, _ = A.edges()
    from torch_geometric.data import Data

    data = Data(edge_index=torch.stack([src, dst]), num_nodes=A.num_nodes)
    if not want or "node_loader" in want or "link_loader" in want:
        g = torch.Generator().manual_seed(2)
        pick = torch.randint(0, A.num_edges, (seeds.numel() // 4,), generator=g).to(device)
        label_index = torch.stack([src[pick], dst[pick]])
        neg = gsample.pyg.NegativeSampling("binary", 1, strict=True)
        # each loader one at a time and super-batched (their batches equal, batch for batch)
        node_args = dict(input_nodes=seeds, batch_size=mb, shuffle=True, seed=0, graph=A)
        link_args = dict(
            edge_label_index=label_index, batch_size=mb // 4, shuffle=True, seed=0, neg_sampling=neg
        )
        sizes = (None, args.super_batch)
        node, node_sb = (
            gsample.pyg.NeighborLoader(data, list(FANOUT), **node_args, super_batch=n)
            for n in sizes
        )
        link, link_sb = (
            gsample.pyg.LinkNeighborLoader(data, list(FANOUT), **link_args, super_batch=n)
            for n in sizes
        )
        times = interleaved(
            {
                name: functools.partial(loader_epoch, L)
                for name, L in (
                    ("node_loader", node),
                    ("link_loader", link),
                    ("node_loader/super", node_sb),
                    ("link_loader/super", link_sb),
                )
            },
            args.repeats,
            device,
        )
        for name, t in times.items():
            record(name, t)
        r = paired_ratio(times["link_loader"], times["node_loader"])
        rows["link_loader"]["ratio_to_node_loader"] = r
        print(f"  link_loader / node_loader = {r:.2f} (median of the rounds' ratios)")
        for name in ("node_loader", "link_loader"):
            r = paired_ratio(times[f"{name}/super"], times[name])
            rows[f"{name}/super"]["ratio_to_one_at_a_time"] = r
            print(f"  {name}/super / {name} = {r:.2f}")
        # strict: no negative pair is an edge (keys of the graph's edges, sorted once)
        n = A.num_nodes
        keys = torch.sort(src * n + dst).values.cpu()
        positives, negatives = 0, 0
        for batch in link:
            lab = batch.edge_label_index
            pair = (batch.n_id[lab[0]] * n + batch.n_id[lab[1]]).cpu()
            pair = pair[batch.edge_label == 0]
            at = torch.searchsorted(keys, pair).clamp(max=keys.numel() - 1)
            positives += int((keys[at] == pair).sum())
            negatives += pair.numel()
        rows["link_loader"]["strict_negatives"] = negatives
        rows["link_loader"]["strict_negatives_that_are_edges"] = positives
        print(f"  strict negatives: {negatives}, of which edges: {positives}")
    meta = script_record(
        device,
        ROOT,
        argv,
        graph={
            "name": "quick" if args.quick else args.graph,
            "nodes": A.num_nodes,
            "edges": A.num_edges,
            "seeds": seeds.numel(),
            "build_s": build_s,
        },
        fanout=list(FANOUT),
        batch_size=mb,
        super_batch=args.super_batch,
        repeats=args.repeats,
        rows=rows,
    )
    name = "quick" if args.quick else args.graph
    print(f"wrote {write_record(meta, args.out, f'pyg_loaders_{name}_{device.type}.json')}")
    return meta


if __name__ == "__main__":
    main()
