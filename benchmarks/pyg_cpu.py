"""gsample's PyG loaders beside PyG's own on the CPU, in the same run.

PyG samples on the CPU through pyg-lib or torch-sparse; ``gsample.pyg`` takes the same
arguments. Each row is an epoch of one loader, GraphSAGE [10, 10]:

- ``node``: ``NeighborLoader``, ``--seeds`` seed nodes in mini-batches of 1,024;
- ``link``: ``LinkNeighborLoader``, ``--edges`` supervision edges in mini-batches of 256,
  with as many binary negatives (PyG's default law: not strict, which PyG does not have);

once with ``gsample.pyg``'s class and once with PyG's, run in rounds (each loader once a
round, ``pyg_loaders.interleaved``), each ratio the median of the rounds' ratios. Without
pyg-lib or torch-sparse PyG's rows are not run, and the record says why. Writes
``pyg_cpu_<graph>_<threads>t.json`` (device, date, command) to ``--out``.

    python benchmarks/pyg_cpu.py                                   # web-NotreDame, 1 thread
    python benchmarks/pyg_cpu.py --rmat 300000 3000000 --threads 2
"""

import argparse
import pathlib
import statistics

import torch
import torch_geometric.typing as pyg_typing
from pyg_loaders import interleaved, paired_ratio
from torch_geometric.data import Data
from torch_geometric.loader import LinkNeighborLoader, NeighborLoader
from torch_geometric.sampler import NegativeSampling

import gsample as gs
import gsample.pyg
from gsample.bench.report import script_record, write_record

ROOT = pathlib.Path(__file__).resolve().parents[1]
SNAP = ROOT.parent / "shared" / "data" / "web-NotreDame.txt.gz"
FANOUT = [10, 10]
NO_PYG = "PyG samples with pyg-lib or torch-sparse: neither is installed"


def loaders(data, seeds, edges) -> dict:
    """name -> (gsample's loader, PyG's loader class and arguments)."""
    neg = NegativeSampling("binary", 1)
    node = dict(input_nodes=seeds, batch_size=1024, shuffle=True)
    link = dict(edge_label_index=edges, batch_size=256, shuffle=True, neg_sampling=neg)
    return {
        "node": (gsample.pyg.NeighborLoader(data, FANOUT, **node), NeighborLoader, node),
        "link": (gsample.pyg.LinkNeighborLoader(data, FANOUT, **link), LinkNeighborLoader, link),
    }


def epoch(loader) -> None:
    for _ in loader:
        pass


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--snap", default=str(SNAP), help="a SNAP edge list (default web-NotreDame)")
    p.add_argument("--rmat", type=int, nargs=2, metavar=("NODES", "EDGES"), help="an R-MAT")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seeds", type=int, default=16384)
    p.add_argument("--edges", type=int, default=4096)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.rmat:
        A = gs.datasets.undirected_rmat(*args.rmat, seed=0)
        name = f"rmat{args.rmat[0]}x{args.rmat[1]}"
    else:
        A = gs.datasets.read_snap(args.snap)
        name = pathlib.Path(args.snap).name.split(".")[0]
    src, dst, _ = A.edges()
    data = Data(edge_index=torch.stack([src, dst]), num_nodes=A.num_nodes)
    g = torch.Generator().manual_seed(0)
    seeds = torch.randperm(A.num_nodes, generator=g)[: args.seeds]
    pick = torch.randint(0, A.num_edges, (args.edges,), generator=g)
    made = loaders(data, seeds, torch.stack([src[pick], dst[pick]]))
    pyg = pyg_typing.WITH_PYG_LIB or pyg_typing.WITH_TORCH_SPARSE
    runs = {}
    for row, (ours, cls, kwargs) in made.items():
        runs[f"gsample {row}"] = lambda ours=ours: epoch(ours)
        if pyg:
            theirs = cls(data, FANOUT, **kwargs)
            runs[f"PyG {row}"] = lambda theirs=theirs: epoch(theirs)
    times = interleaved(runs, args.repeats, torch.device("cpu"))
    rows = {k: {"seconds": statistics.median(v), "all": v} for k, v in times.items()}
    for k, v in rows.items():
        print(f"{k:14s} {v['seconds']:.4f} s", flush=True)
    for row in made:
        if pyg:
            r = paired_ratio(times[f"gsample {row}"], times[f"PyG {row}"])
            rows[f"gsample {row}"]["ratio_to_pyg"] = r
            print(f"  gsample {row} / PyG {row} = {r:.2f} (median of the rounds' ratios)")
    record = script_record(
        torch.device("cpu"),
        ROOT,
        argv,
        threads=args.threads,
        graph={"name": name, "nodes": A.num_nodes, "edges": A.num_edges},
        pyg_backend="pyg-lib"
        if pyg_typing.WITH_PYG_LIB
        else ("torch-sparse" if pyg_typing.WITH_TORCH_SPARSE else None),
        peers_not_run=None if pyg else NO_PYG,
        repeats=args.repeats,
        rows=rows,
    )
    print(f"wrote {write_record(record, args.out, f'pyg_cpu_{name}_{args.threads}t.json')}")
    return record


if __name__ == "__main__":
    main()
