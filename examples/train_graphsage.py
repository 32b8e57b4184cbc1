"""Train a 2-layer GraphSAGE (PyG's ``SAGEConv``) on mini-batches from a compiled gsample sampler.

Cora (``../shared/data/cora.npz``: real features and labels) by default, or the planted-
partition graph of ``gs.datasets.planted_partition``; a random stratified 60/20/20 split. It
prints each epoch's sampling, gathering and training time, then the test accuracy of the
sampled model next to the same model trained full-batch with PyG on the same split (each at its
best validation epoch)::

    python examples/train_graphsage.py                       # Cora, skipped when absent
    python examples/train_graphsage.py --data planted --device cuda
    python examples/train_graphsage.py --no-pipeline --quick
"""

import argparse
import functools
import os
import sys

from graphsage import graphsage
from train_common import run

import gsample as gs


def parser(description):
    p = argparse.ArgumentParser(description=description.splitlines()[0])
    p.add_argument("--data", choices=["cora", "planted"], default="cora")
    p.add_argument("--cora", default=None, help="path of cora.npz (default: ../shared/data)")
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--full-epochs", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--device", default="cpu")
    p.add_argument("--no-pipeline", dest="pipeline", action="store_false")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="fewer epochs (the tests' mode)")
    return p


def load(args):
    """``(A, x, y)`` of ``--data``; None (with a message) when Cora is absent."""
    if args.data == "planted":
        return gs.datasets.planted_partition(seed=args.seed, device=args.device)
    path = args.cora or gs.datasets.default_data_path("cora.npz")
    if not os.path.exists(path):
        print(f"skipped: {path} not present (try --data planted)")
        return None
    return gs.datasets.cora(path, device=args.device)


def main(argv=None):
    p = parser(__doc__)
    p.add_argument("--fanouts", type=int, nargs="+", default=[10, 10])
    args = p.parse_args(argv)
    if args.quick:
        args.epochs, args.full_epochs = min(args.epochs, 15), min(args.full_epochs, 100)
    data = load(args)
    if data is None:
        return None
    A, x, y = data
    sampler = functools.partial(gs.compile(graphsage), fanouts=tuple(args.fanouts))
    print(
        f"{args.data}: {A.num_nodes:,} nodes, {A.num_edges:,} edges, {x.shape[1]} features, "
        f"{int(y.max()) + 1} classes; GraphSAGE {args.fanouts}, mini-batch {args.batch_size}, "
        f"pipeline {'on' if args.pipeline else 'off'}, {A.device}"
    )
    result = run(
        A,
        x,
        y,
        sampler,
        epochs=args.epochs,
        full_epochs=args.full_epochs,
        batch_size=args.batch_size,
        pipeline=args.pipeline,
        seed=args.seed,
    )
    print(
        f"test accuracy: sampled (gsample) {result['sampled']:.3f}, full-batch PyG "
        f"{result['full']:.3f} (difference {result['sampled'] - result['full']:+.3f})"
    )
    return result


if __name__ == "__main__":
    sys.exit(0 if main() is not False else 1)
