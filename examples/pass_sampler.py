"""PASS: performance-adaptive sampling (Yoon et al., 2021), written in the gsample DSL.

Each layer samples ``k`` in-neighbours per frontier node *with* replacement,
with probability given by a learned attention over three scores per edge: two
dot products of projected features and the normalised edge weight. (The file is
not called ``pass.py`` because ``pass`` is a Python keyword.)

Run it from the repository root (after ``pip install -e .``)::

    python examples/pass_sampler.py                    # an R-MAT graph
    python examples/pass_sampler.py --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools

import torch
from common import graph_parser, load_graph, run_batches

import gsample as gs


def pass_sampler(A, seeds, X, W1, W2, W3, fanouts=(10, 10)):
    """Sample one block per layer with PASS attention.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph.
    seeds : LongTensor, shape (B,)
        Global ids of the mini-batch's target nodes.
    X : Tensor, shape (N, F)
        Node features.
    W1, W2 : Tensor, shape (F, H)
        Projections of the two feature scores (H = 64 in the paper).
    W3 : Tensor, shape (3, 1)
        Mixing logits of the three scores (softmax over its 3 rows).
    fanouts : sequence of int
        Draws per node at each layer, with replacement.

    Returns
    -------
    list of gs.Matrix
        ``blocks[l]`` has shape ``(R_l, C_l)``: its columns are layer ``l``'s
        frontier (``C_0 = B``, the seeds), and every column with in-edges holds
        exactly ``fanouts[l]`` sampled edges (repeats possible). ``blocks[l + 1]``'s
        columns are ``blocks[l].all_nodes()``.
    """
    blocks = []
    for k in fanouts:
        sub = A[:, seeds].compact()  # row space: rows with edges
        u, v = X[sub.row_ids], X[seeds]  # (R, F), (C, F)
        att1 = gs.sddmm(sub, u @ W1, v @ W1).values  # (E,): one dot per edge
        att2 = gs.sddmm(sub, u @ W2, v @ W2).values
        att3 = sub.div(sub.sum(axis=0), axis=0).values  # weight / column sum
        scores = torch.stack([att1, att2, att3], dim=1)  # (E, 3)
        att = torch.relu(scores @ torch.softmax(W3, dim=0)).squeeze(1) + 1e-9
        s = sub.individual_sample(k, probs=att, replace=True)
        blocks.append(s)
        seeds = s.all_nodes()  # frontier first, then new rows
    return blocks


def random_inputs(num_nodes, num_features=32, hidden=64, seed=0):
    """Random features and weights for trying PASS on a graph without features.

    Returns
    -------
    dict
        ``X`` (N, F) standard normal, ``W1`` and ``W2`` (F, H) Xavier-uniform,
        ``W3`` (3, 1) standard normal: keyword arguments of :func:`pass_sampler`.
    """
    g = torch.Generator().manual_seed(seed)
    bound = (6.0 / (num_features + hidden)) ** 0.5
    return {
        "X": torch.randn(num_nodes, num_features, generator=g),
        "W1": (torch.rand(num_features, hidden, generator=g) * 2 - 1) * bound,
        "W2": (torch.rand(num_features, hidden, generator=g) * 2 - 1) * bound,
        "W3": torch.randn(3, 1, generator=g),
    }


def main(argv=None):
    p = graph_parser(__doc__, batch_size=64)
    p.add_argument("--fanouts", type=int, nargs="+", default=[10, 10])
    p.add_argument("--num-features", type=int, default=32)
    args = p.parse_args(argv)
    A = load_graph(args)
    sampler = functools.partial(
        pass_sampler, fanouts=args.fanouts, **random_inputs(A.num_nodes, args.num_features)
    )
    run_batches("pass", A, sampler, args)


if __name__ == "__main__":
    main()
