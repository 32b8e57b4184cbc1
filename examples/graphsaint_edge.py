"""GraphSAINT edge sampler (Zeng et al., "GraphSAINT: Graph Sampling Based Inductive
Learning Method", ICLR 2020), written in the gsample DSL.

Each mini-batch is one subgraph: ``budget`` (4000) edges are drawn from the whole graph,
independently and with replacement, edge ``u -> v`` with probability proportional to
``1 / deg(u) + 1 / deg(v)`` (the paper's variance-minimising law; on a directed graph
``deg(u)`` is ``u``'s out-degree and ``deg(v)`` ``v``'s in-degree, edge counts, as PyG's
``GraphSAINTEdgeSampler`` means it); the sample is the subgraph induced by the drawn
edges' endpoints, ``A[nodes, nodes]``. (GraphSAINT's own code keeps each edge by an
independent coin of about the same mean; PyG draws without replacement.)

The DSL has no operator that draws from *all* the edges of a matrix at once:
``individual_sample`` draws within each column and ``collective_sample`` keeps each drawn
row once (so it cannot say how many of the draws a node got). The draw is therefore made
in two exact steps: the destination ``v`` of each of the ``budget`` draws is drawn with
replacement from a helper matrix whose one column holds every node
(:func:`node_column`, built once outside the sampler), with probability proportional to
the column mass ``sum_{u -> v} p(u -> v)``; then one in-edge of each drawn ``v``,
proportional to ``p``, by a one-step ``A.random_walk(dst, 1, probs=P)`` (alias tables,
built once per graph when compiled; each walker draws independently, so a repeated ``v``
draws again). An edge is so drawn with probability ``p(e) / sum(p)`` at every draw.
(``A[:, dst].individual_sample(1, probs=P[:, dst], replace=True)`` draws the same law
and keeps edge ids, but copies a hub's whole column for each of its repeats: 830,000
edges sliced for 4000 draws on a 300,000-edge R-MAT graph, where the walk reads one edge
a draw.)

The mini-batch's ``seeds`` are not roots: their values are ignored; a mini-batch is a
place in the epoch, whose draws are keyed by the epoch's seed and its index (docs/architecture.md
§3): ``gs.DataLoader(A, partial(graphsaint_edge, column=node_column(A)), torch.arange(S),
batch_size=1)`` gives ``S`` independent subgraphs an epoch. The seeds are not nodes:
give the loader ``seeds_are_nodes=False`` so that ``batch.n_id``, its ``features=`` /
``labels=`` rows and ``batch.to_pyg()`` take the subgraph's nodes alone.
``super_batch`` works, with the same subgraphs: the helper column is a second matrix, of
the graph's node count, which a super-batch encodes as it does the graph.

Run it from the repository root (after ``pip install -e .``)::

    python examples/graphsaint_edge.py                 # an R-MAT graph
    python examples/graphsaint_edge.py --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools

import torch
from common import graph_parser, load_graph, run_batches

import gsample as gs


def node_column(A):
    """The helper matrix: column 0 holds one edge ``v -> 0`` (value 1) from every node ``v``.

    Shape (N, N), on ``A``'s device; ``column[:, [0]].individual_sample(k, probs,
    replace=True)`` then draws ``k`` nodes with replacement, with their repeats (which
    ``collective_sample`` does not return). Build it once per graph.
    """
    n = A.num_nodes
    src = torch.arange(n, device=A.device)
    return gs.Matrix.from_edge_index(torch.stack([src, torch.zeros_like(src)]), num_nodes=n)


def edge_probabilities(A):
    """``1 / deg_out(u) + 1 / deg_in(v)`` on every edge ``u -> v``: a matrix of ``A``'s
    sparsity (unnormalised; degrees count edges, whatever the weights)."""
    ones = A**0  # the sparsity, every value 1
    deg_in, deg_out = ones.sum(axis=0), ones.sum(axis=1)
    return ones.div(deg_out, axis=1) + ones.div(deg_in, axis=0)


def graphsaint_edge(A, seeds, column, budget=4000, return_edges=False):
    """Sample one GraphSAINT-edge subgraph.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph; column ``j`` holds the in-edges of node ``j``.
    seeds : LongTensor, shape (B,)
        The mini-batch's identity only; the values are ignored (see the module docstring).
    column : gs.Matrix, shape (N, N)
        :func:`node_column` of ``A``.
    budget : int
        Edge draws, with replacement (GraphSAINT's ``m``).
    return_edges : bool
        Also return the drawn edges.

    Returns
    -------
    subgraph : gs.Matrix, shape (n, n)
        ``A[nodes, nodes]``: every edge of ``A`` between two of ``nodes`` (drawn or not).
    nodes : LongTensor, shape (n,)
        The drawn edges' endpoints, unique, ascending.
    drawn : LongTensor, shape (2, budget)
        Only with ``return_edges``: the draws as ``(source, destination)`` pairs, repeats
        kept, by ascending destination (parallel edges are one pair, drawn with their
        summed probability).
    """
    P = edge_probabilities(A)  # compiled: computed once per graph
    mass = P.sum(axis=0)  # (N,): sum of p over each node's in-edges
    hub = column[:, torch.zeros(1, dtype=torch.long, device=seeds.device)]
    dst = hub.individual_sample(budget, probs=hub.mul(mass, axis=1), replace=True).edges()[0]
    src = A.random_walk(dst, 1, probs=P)[:, 1]  # one in-edge of each, by p (alias tables)
    nodes = torch.unique(torch.cat([dst, src]))
    if return_edges:
        return A[nodes, nodes], nodes, torch.stack([src, dst])
    return A[nodes, nodes], nodes


def main(argv=None):
    p = graph_parser(__doc__, batch_size=1)
    p.add_argument("--budget", type=int, default=4000)
    args = p.parse_args(argv)
    A = load_graph(args)
    sampler = functools.partial(graphsaint_edge, column=node_column(A), budget=args.budget)
    run_batches("graphsaint_edge", A, sampler, args)


if __name__ == "__main__":
    main()
