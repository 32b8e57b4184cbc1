"""Train a 2-layer GCN-style model (PyG's ``GraphConv``, weighted sum) on LADIES mini-batches.

LADIES (``examples/ladies.py``, compiled) draws ``--layers`` rows per layer for the whole
mini-batch and weights the kept edges by importance so each column sums to 1; the model sums
neighbours with those weights (a weighted mean) plus its own root term. Evaluation and the
full-batch PyG baseline run the same model on the whole normalised graph, each column's
weights scaled to sum to 1. Cora by default (skipped when absent), a 60/20/20 split::

    python examples/train_ladies.py
    python examples/train_ladies.py --data planted --layers 2048 2048 --device cuda
"""

import functools
import sys

from ladies import ladies, normalize
from train_common import graph_edges, run
from train_graphsage import load, parser

import gsample as gs


def column_normalised(A):
    """The values of ``A``'s edges (``A.edges()`` order) scaled so each column sums to 1."""
    _, weight = graph_edges(A)
    _, col, _ = A.edges()
    total = A.sum(axis=0)
    return weight / total[col].clamp(min=1e-30)


def main(argv=None):
    p = parser(__doc__)
    p.add_argument("--layers", type=int, nargs="+", default=[512, 512])
    args = p.parse_args(argv)
    if args.quick:
        args.epochs, args.full_epochs = min(args.epochs, 15), min(args.full_epochs, 100)
    data = load(args)
    if data is None:
        return None
    A, x, y = data
    A = normalize(A)  # once, before sampling
    sampler = functools.partial(gs.compile(ladies), layers=tuple(args.layers))
    print(
        f"{args.data}: {A.num_nodes:,} nodes, {A.num_edges:,} edges, {x.shape[1]} features, "
        f"{int(y.max()) + 1} classes; LADIES {args.layers}, mini-batch {args.batch_size}, "
        f"pipeline {'on' if args.pipeline else 'off'}, {A.device}"
    )
    result = run(
        A,
        x,
        y,
        sampler,
        conv="graph",
        epochs=args.epochs,
        full_epochs=args.full_epochs,
        batch_size=args.batch_size,
        pipeline=args.pipeline,
        seed=args.seed,
        full_weight=column_normalised(A),
    )
    print(
        f"test accuracy: sampled (gsample) {result['sampled']:.3f}, full-batch PyG "
        f"{result['full']:.3f} (difference {result['sampled'] - result['full']:+.3f})"
    )
    return result


if __name__ == "__main__":
    sys.exit(0 if main() is not False else 1)
