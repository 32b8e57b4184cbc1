"""AS-GCN adaptive layer-wise sampling (Huang et al., 2018), written in the gsample DSL.

Each layer draws ``k`` rows for the whole frontier, as LADIES does, but with a bias that
a model computes: a self-dependent linear score ``g(x) = x W[:, 0]`` of each candidate
row's features and the frontier's summed score ``x W[:, 1]``. For candidate row ``u`` of
the frontier ``V``:

* ``p(u) = sqrt(sum_v A[u, v] ** 2)`` (the norm of ``u``'s edges into the frontier),
* ``att(u) = (relu(h_u + sum_v h_v) + 1) / k`` with ``h_u = X[u] W[:, 0]``, ``h_v = X[v] W[:, 1]``,
* ``q(u) = p(u) att(u) (relu(h_u) + 1)``, normalised to sum to 1,

and the ``k`` rows are drawn by ``q`` without replacement (sequential draws in proportion
to ``q``: ``collective_sample``). A kept edge ``u -> v`` gets the attention
``(relu(h_u + h_v) + 1) / n`` divided by ``q(u)``, ``n`` the rows drawn (the form of
gSampler's AS-GCN). ``W`` (``F x 2``) is an argument, like PASS's weights: training
updates it between mini-batches.

Super-batching: the draws depend on the tensor arguments ``X`` and ``W``, so
``gs.DataLoader(..., super_batch=4)`` is refused with a ``ValueError`` unless
``fixed_state=True`` declares that they do not change while the loader runs; with it the
super-batched mini-batches equal the ones sampled one by one.

Run it from the repository root (after ``pip install -e .``)::

    python examples/asgcn.py                           # an R-MAT graph, random features
    python examples/asgcn.py --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools

import torch
from common import graph_parser, load_graph, run_batches

import gsample as gs


def asgcn(A, seeds, X, W, layers=(512, 512)):
    """Sample one block per layer with AS-GCN's learned bias.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph (its edge values enter ``p(u)``).
    seeds : LongTensor, shape (B,)
        Global ids of the mini-batch's target nodes.
    X : Tensor, shape (N, F)
        Node features.
    W : Tensor, shape (F, 2)
        The sampler's weights: column 0 scores candidate rows, column 1 frontier nodes.
    layers : sequence of int
        Rows drawn per layer, first layer first.

    Returns
    -------
    list of gs.Matrix
        ``blocks[l]`` has shape ``(R_l, C_l)``, ``R_l <= layers[l]`` rows (ascending ids)
        drawn among the frontier's in-neighbours and ``C_l`` frontier columns (``C_0 =
        B``); every edge from a chosen row to the frontier is kept, its value AS-GCN's
        weight ``(relu(h_u + h_v) + 1) / (R_l q(u))``. ``blocks[l + 1]``'s columns are
        ``blocks[l].all_nodes()``.
    """
    blocks = []
    for k in layers:
        sub = A[:, seeds].compact()  # rows: the frontier's in-neighbours
        rows = sub.row_ids  # (R,), ascending
        p = (sub**2).sum(axis=1).sqrt()  # (R,)
        h_u = X[rows] @ W[:, 0]  # (R,)
        h_v = X[seeds] @ W[:, 1]  # (C,)
        att = (torch.relu(h_u + h_v.sum()) + 1) / k
        q = p * att * (torch.relu(h_u) + 1)
        q = q / q.sum().clamp(min=1e-30)
        s = sub.collective_sample(k, node_probs=q)  # rows: the chosen ones
        at = torch.searchsorted(rows, s.row_ids)  # their positions in ``rows``
        w = gs.sddmm(s, h_u[at], h_v, "add")  # edge (u, v): h_u + h_v
        n = torch.ones_like(q[at]).sum()  # rows drawn (a 0-dim tensor)
        s = (w * 0.0 + (torch.relu(w.values) + 1) / n).div(q[at], axis=1)
        blocks.append(s)
        seeds = s.all_nodes()  # frontier first, then new rows
    return blocks


def random_inputs(num_nodes, num_features=32, seed=0):
    """Random features and weights for trying AS-GCN on a graph without features.

    Returns
    -------
    dict
        ``X`` (N, F) standard normal and ``W`` (F, 2) Xavier-uniform: keyword arguments
        of :func:`asgcn`.
    """
    g = torch.Generator().manual_seed(seed)
    bound = (6.0 / (num_features + 2)) ** 0.5
    return {
        "X": torch.randn(num_nodes, num_features, generator=g),
        "W": (torch.rand(num_features, 2, generator=g) * 2 - 1) * bound,
    }


def main(argv=None):
    p = graph_parser(__doc__, batch_size=256)
    p.add_argument("--layers", type=int, nargs="+", default=[512, 512])
    p.add_argument("--num-features", type=int, default=32)
    args = p.parse_args(argv)
    A = load_graph(args)
    sampler = functools.partial(
        asgcn, layers=args.layers, **random_inputs(A.num_nodes, args.num_features)
    )
    run_batches("asgcn", A, sampler, args)


if __name__ == "__main__":
    main()
