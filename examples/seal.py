"""SEAL's enclosing subgraphs (Zhang and Chen, "Link Prediction Based on Graph Neural
Networks", NeurIPS 2018), written in the gsample DSL.

For a target pair ``(u, v)`` the ``k``-hop (2) enclosing subgraph is the subgraph
induced by the nodes within ``k`` hops of ``u`` or ``v``: every in-neighbour, hop by hop
(``bias="uniform"``, no ``fanouts``). Hops follow in-edges, as every gsample operator;
for SEAL's undirected neighbourhoods store both directions of each edge.

Variants, for graphs where full hops are too large:

* ``bias="uniform"`` with ``fanouts``: at most ``fanouts[h]`` uniformly chosen
  in-neighbours per node at hop ``h`` (as SEAL's ``max_nodes_per_hop`` bounds a hop);
* ``bias="ppr"`` (needs ``fanouts``): neighbours chosen in proportion to a personalised
  PageRank estimate from the pair: ``num_walks`` walks with termination ``alpha`` from
  each of ``u`` and ``v`` (``A.random_walk(..., stop_prob=alpha)``), their visit counts
  plus ``smoothing`` (so that a column whose candidates were never visited still draws,
  uniformly); weighted without replacement, as sequential draws.

One pair per mini-batch: ``seeds`` is ``[u, v]``. For many pairs, interleave them,
``gs.DataLoader(A, seal, pairs.reshape(-1), batch_size=2, shuffle=False)`` (a shuffle
would split the pairs: shuffle the pairs themselves between epochs); with
``super_batch=N`` one run extracts the subgraphs of N pairs (the block-diagonal batch of
enclosing subgraphs SEAL trains on), each exactly as sampled alone. ``u`` and ``v`` come
first among the nodes, so ``batch.to_pyg()`` gives them first too. The subgraph holds the
target link itself when the graph has it; SEAL removes it for positive training pairs
(``r, c, e = sub.edges()``: drop ``(r == u) & (c == v)`` and ``(r == v) & (c == u)``), and
labels nodes by their distances to ``u`` and ``v`` (DRNL), the model's business.

Run it from the repository root (after ``pip install -e .``)::

    python examples/seal.py                            # random pairs of an R-MAT graph
    python examples/seal.py --bias ppr --fanouts 10 10 --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools

import torch
from common import graph_parser, load_graph, run_batches


def ppr_visits(A, seeds, num_walks=100, alpha=0.15, length=20):
    """Visit counts of ``num_walks`` walks with termination ``alpha`` (at most ``length``
    steps) from each seed, start included: a PPR estimate, float32 of shape (N,)."""
    walks = A.random_walk(seeds.repeat(num_walks), length, stop_prob=alpha)
    return torch.bincount(walks[walks >= 0], minlength=A.num_nodes).to(torch.float32)


def seal(
    A,
    seeds,
    hops=2,
    fanouts=None,
    bias="uniform",
    num_walks=100,
    alpha=0.15,
    walk_length=20,
    smoothing=0.01,
):
    """The enclosing subgraph of one target pair.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph; column ``j`` holds the in-edges of node ``j``.
    seeds : LongTensor, shape (2,)
        The target pair ``[u, v]`` (``u == v`` is allowed).
    hops : int
        ``k``: hops from the pair (ignored when ``fanouts`` is given: one per hop).
    fanouts : sequence of int, optional
        Neighbours kept per node at each hop; ``None``: all of them.
    bias : {"uniform", "ppr"}
        How a bounded hop picks neighbours (see the module docstring).
    num_walks, alpha, walk_length, smoothing
        The PPR estimate (``bias="ppr"`` only): walks per target node, termination
        probability, longest walk, the count added to every node's visits.

    Returns
    -------
    subgraph : gs.Matrix, shape (n, n)
        ``A[nodes, nodes]``: every edge of ``A`` between two of ``nodes``.
    nodes : LongTensor, shape (n,)
        Unique: ``u``, ``v``, then hop by hop the newly reached nodes (each hop's in
        ascending id order).
    """
    if bias not in ("uniform", "ppr"):
        raise ValueError(f"bias: must be 'uniform' or 'ppr', got {bias!r}")
    if bias == "ppr" and fanouts is None:
        raise ValueError("fanouts: bias='ppr' samples neighbours, give one count per hop")
    if fanouts is not None:
        hops = len(fanouts)
    if bias == "ppr":
        score = ppr_visits(A, seeds, num_walks, alpha, walk_length) + smoothing
    nodes = seeds
    for h in range(hops):
        sub = A[:, nodes]  # every in-edge of the frontier
        if fanouts is not None and bias == "uniform":
            sub = sub.individual_sample(fanouts[h])
        elif fanouts is not None:
            sub = sub.individual_sample(fanouts[h], probs=(sub**0).mul(score, axis=1))
        nodes = sub.all_nodes()  # frontier first, then new nodes
    return A[nodes, nodes], nodes


def main(argv=None):
    p = graph_parser(__doc__, batch_size=2)
    p.add_argument("--hops", type=int, default=2)
    p.add_argument("--fanouts", type=int, nargs="+")
    p.add_argument("--bias", choices=["uniform", "ppr"], default="uniform")
    args = p.parse_args(argv)
    A = load_graph(args)
    sampler = functools.partial(seal, hops=args.hops, fanouts=args.fanouts, bias=args.bias)
    run_batches("seal", A, sampler, args)  # mini-batches of 2 random nodes: random pairs


if __name__ == "__main__":
    main()
