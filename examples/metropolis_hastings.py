"""Metropolis-Hastings random walk: a walk whose stationary distribution is uniform over
the nodes (for an undirected graph), as used to sample nodes without degree bias.

At node ``v`` the walk proposes a uniform in-neighbour ``u`` and moves there with
probability ``min(1, deg(v) / deg(u))``, else stays at ``v`` (``deg``: in-degree); a node
without in-edges ends the walk. Written as one step of ``gs.walk`` (:func:`mh_step`): the
proposal is a one-step ``random_walk``, the coin a uniform number keyed by the walker
(:func:`uniforms`), the degrees a graph-level value that a compiled sampler computes once
per graph. Compiled, the step is traced once and copied ``length`` times.

:func:`mh_graph` gives the same law as a graph: edge ``u -> v`` weighs ``min(1 / deg(v),
1 / deg(u))`` and a self-loop at ``v`` the rest, so a weighted ``random_walk`` on it (alias
tables) is the same Markov chain; the tests check the walks against it.

Run it from the repository root (after ``pip install -e .``)::

    python examples/metropolis_hastings.py --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools

import torch
from common import load_graph, run_walks, walk_parser

import gsample as gs


def mh_graph(A):
    """The Metropolis-Hastings transition graph of ``A``.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph (its weights are ignored).

    Returns
    -------
    gs.Matrix, shape (N, N)
        ``A``'s edges (edge ids ``0 .. E-1`` in ``A``'s CSC order) plus one self-loop per
        node with in-edges (ids ``E ..``); its values are the move probabilities, summing to
        1 over every non-empty column.

    Examples
    --------
    >>> M = mh_graph(A)                     # the chain of metropolis_hastings(A, ...)
    >>> walks = M.random_walk(seeds, 80, probs=M.values)
    """
    src, dst, _ = A.edges()
    n = A.num_nodes
    deg = torch.bincount(dst, minlength=n).to(torch.float64)
    inv = torch.where(deg > 0, 1.0 / deg.clamp(min=1), torch.inf)  # 1 / deg(u), inf at 0
    w = torch.minimum(inv[dst], inv[src])
    stay = (1.0 - torch.zeros(n, dtype=torch.float64).index_add_(0, dst, w)).clamp(min=0.0)
    nodes = torch.nonzero(deg > 0).squeeze(1)
    edge_index = torch.stack([torch.cat([src, nodes]), torch.cat([dst, nodes])])
    return gs.Matrix.from_edge_index(edge_index, num_nodes=n, weight=torch.cat([w, stay[nodes]]))


def metropolis_hastings(A, seeds, length=80):
    """One Metropolis-Hastings walk per seed on ``A``.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph (its weights are ignored; ``N ** 2 < 2 ** 53``).
    seeds : LongTensor, shape (B,)
        Start nodes.
    length : int
        Steps per walk.

    Returns
    -------
    LongTensor, shape (B, length + 1)
        Each step moves to an in-neighbour or stays (the same node twice in a row); ``-1``
        after a node without in-edges.
    """
    return gs.walk(mh_step, A, seeds, length)


def mh_step(A, cur, prev, t):
    """A ``gs.walk`` step: propose a uniform in-neighbour, accept it with probability
    ``min(1, deg(cur) / deg(proposal))``."""
    deg = (A**0).sum(axis=0)  # in-degrees: once per graph
    proposal = A.random_walk(cur, 1)[:, 1]  # -1 at a node without in-edges
    ratio = deg[cur] / deg[proposal.clamp(min=0)]  # inf for a proposal without in-edges
    move = uniforms(A, cur) < ratio
    return torch.where(proposal < 0, -1, torch.where(move, proposal, cur))


def uniforms(A, ids):
    """One float64 uniform in (0, 1) per entry of ``ids`` (shape (n,)), keyed by the entry's
    position: two uniform jumps ``j1, j2`` in ``[0, N)`` of a walk give ``(j1 N + j2 + 0.5) /
    N**2`` (a grid of ``N**2`` points: ``|P(u <= x) - x| <= 0.5 / N**2``)."""
    n = A.num_nodes
    jumps = A.random_walk(ids, 2, jump_prob=1.0)
    return ((jumps[:, 1] * n + jumps[:, 2]).double() + 0.5) / float(n * n)


def main(argv=None):
    args = walk_parser(__doc__).parse_args(argv)
    run_walks(
        "metropolis_hastings",
        load_graph(args),
        functools.partial(metropolis_hastings, length=args.length),
        args,
    )


if __name__ == "__main__":
    main()
