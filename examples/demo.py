"""The main job: train a 2-layer GraphSAGE (PyG's SAGEConv) on mini-batches from a compiled gsample
sampler, on a generated graph with planted communities.

The graph (``gs.datasets.planted_partition``: 20,000 nodes in 8 classes, 12 neighbours a node on
average, half of the edges drawn inside a class; 32 features, the class centroid plus noise:
the nearest centroid to a node's own features is right for about 57 % of nodes, to its
neighbours' mean for about 77 %) is split 60/20/20. The
loader gathers each mini-batch's features and labels and pipelines sampling, gathering and
training. Each epoch prints its sampling, gathering and training time; then the test accuracy
of the sampled model, of the same model trained full-batch, and of the features alone (nearest
class centroid), and an excerpt of ``gs.explain`` of the sampler. Run from the repository root
(``bash scripts/run.sh demo`` sets everything up first)::

    python examples/demo.py                     # on the CPU, under a minute on 2 cores
    python examples/demo.py --device cuda --num-nodes 2000000
"""

import argparse
import functools
import re
import time

import torch
from graphsage import graphsage
from train_common import run, split

import gsample as gs


def explain_excerpt(sampler, A, seeds, fanouts):
    """The traced IR, one line per compiler pass, and the optimised IR of ``gs.explain``."""
    report = gs.explain(sampler, A, seeds, fanouts=fanouts, file=False)
    sections = re.split(r"\n(?===)", report)
    keep = []
    for s in sections:
        head = s.splitlines()[0]
        if head.startswith(("== traced IR", "== optimised IR")):
            keep.append(s.rstrip())
        elif head.startswith("== pass "):
            keep.append("  " + head.strip("= "))
    return "\n".join(keep)


def centroid_accuracy(x, y, train_ids, test_ids):
    """Test accuracy of the features alone: the nearest class centroid of the training nodes."""
    classes = int(y.max()) + 1
    c = torch.stack([x[train_ids][y[train_ids] == k].mean(0) for k in range(classes)])
    return float((torch.cdist(x[test_ids], c).argmin(1) == y[test_ids]).float().mean())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-nodes", type=int, default=20_000)
    p.add_argument("--num-classes", type=int, default=8)
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--full-epochs", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--fanouts", type=int, nargs="+", default=[10, 5])
    p.add_argument("--device", default="cpu")
    p.add_argument("--no-pipeline", dest="pipeline", action="store_false")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    start = time.perf_counter()
    A, x, y = gs.datasets.planted_partition(
        args.num_nodes, args.num_classes, seed=args.seed, device=args.device
    )
    print(
        f"graph: planted partition, {A.num_nodes:,} nodes, {A.num_edges:,} edges, "
        f"{args.num_classes} classes, {x.shape[1]} features, on {A.device} "
        f"({time.perf_counter() - start:.1f} s to generate)"
    )
    fanouts = tuple(args.fanouts)
    sampler = gs.compile(graphsage)
    print(
        f"training a 2-layer GraphSAGE (SAGEConv, hidden 64) on GraphSAGE {list(fanouts)} "
        f"mini-batches of {args.batch_size}, pipeline {'on' if args.pipeline else 'off'}:"
    )
    result = run(
        A,
        x,
        y,
        functools.partial(sampler, fanouts=fanouts),
        epochs=args.epochs,
        full_epochs=args.full_epochs,
        batch_size=args.batch_size,
        pipeline=args.pipeline,
        seed=args.seed,
    )
    train_ids, _, test_ids = split(y, seed=args.seed)
    loader = result["loader"]
    result["features_alone"] = centroid_accuracy(x, y, train_ids, test_ids)
    print(
        f"test accuracy: sampled GraphSAGE {result['sampled']:.3f}, full-batch PyG "
        f"{result['full']:.3f}, features alone (nearest centroid) "
        f"{result['features_alone']:.3f}"
    )
    print(
        f"mini-batches per epoch: {len(loader)}; epoch times "
        + ", ".join(f"{s['epoch']:.2f}" for s in result["epochs"])
        + " s"
    )
    print("\nthe sampler, compiled (excerpt of gs.explain(sampler, A, seeds, fanouts=...)):")
    print(explain_excerpt(sampler, A, train_ids[: args.batch_size].to(A.device), fanouts))
    return result


if __name__ == "__main__":
    main()
