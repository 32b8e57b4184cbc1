"""GraphSAINT node sampler (Zeng et al., "GraphSAINT: Graph Sampling Based Inductive
Learning Method", ICLR 2020), written in the gsample DSL.

Each mini-batch is one subgraph: ``budget`` (6000) nodes are drawn from the whole graph
with replacement, node ``v`` with probability proportional to the sum of its squared
in-edge weights, ``p(v) ~ sum_u A[u, v] ** 2`` (its in-degree on an unweighted graph;
GraphSAINT's ``||A~[:, v]||^2`` with ``normalized=True``, A~ the row-normalised
adjacency). The sample is the subgraph the distinct drawn nodes induce, ``A[nodes,
nodes]``.

The mini-batch's ``seeds`` are not roots: their values are ignored. GraphSAINT picks its
nodes from the whole graph, so a mini-batch is only a place in the epoch: its draws are
keyed by the epoch's seed and its index (docs/architecture.md §3), and ``gs.DataLoader(A,
graphsaint_node, torch.arange(S), batch_size=1)`` gives ``S`` independent subgraphs an
epoch (a larger ``batch_size`` gives fewer, not larger, subgraphs). The seeds are not
nodes: give the loader ``seeds_are_nodes=False``, and ``batch.n_id``, its ``features=`` /
``labels=`` rows and ``batch.to_pyg()`` take the subgraph's nodes alone (with the default,
the seed values would come first as if they were node ids).

``gs.DataLoader(..., super_batch=N)`` works, with the same subgraphs: the draw on the
whole graph (no frontier to key the mini-batches by) runs once per mini-batch of the
super-batch, each with its own mini-batch's key, and the rest (``row``, the induced
subgraph) once for the N mini-batches (``gsample.passes.super_batch``).

Run it from the repository root (after ``pip install -e .``)::

    python examples/graphsaint_node.py                 # an R-MAT graph
    python examples/graphsaint_node.py --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools

from common import graph_parser, load_graph, run_batches


def node_probabilities(A, normalized=False):
    """GraphSAINT's unnormalised node probabilities, shape (N,).

    ``sum_u A[u, v] ** 2`` per node ``v`` (one value per column); with ``normalized``,
    the same on ``D^-1 A`` (each edge ``u -> v`` divided by the weighted out-degree of
    ``u``), the paper's ``||A~[:, v]||^2``. Nodes without in-edges get 0 (never drawn).
    """
    if normalized:
        A = A.div(A.sum(axis=1), axis=1)  # row-normalised: A~ = D^-1 A
    return (A**2).sum(axis=0)  # (N,): one value per column


def graphsaint_node(A, seeds, budget=6000, normalized=False):
    """Sample one GraphSAINT-node subgraph.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph; column ``j`` holds the in-edges of node ``j``.
    seeds : LongTensor, shape (B,)
        The mini-batch's identity only; the values are ignored (see the module docstring).
    budget : int
        Node draws, with replacement (GraphSAINT's subgraph size ``n``).
    normalized : bool
        Draw by the row-normalised adjacency's squared column norms (see
        :func:`node_probabilities`).

    Returns
    -------
    subgraph : gs.Matrix, shape (n, n)
        ``A[nodes, nodes]``: every edge of ``A`` between two of ``nodes``.
    nodes : LongTensor, shape (n,)
        The distinct drawn nodes in ascending id order, ``n <= budget``.

    Notes
    -----
    ``collective_sample(k, node_probs, replace=True)`` on ``A.T`` (whose rows are the
    graph's nodes with in-edges) makes ``budget`` independent draws with probability
    ``p(v) / sum(p)`` and keeps each drawn node once, so node ``v`` is in the subgraph with
    probability ``1 - (1 - p(v) / sum(p)) ** budget``.
    """
    p = node_probabilities(A, normalized)
    drawn = A.T.collective_sample(budget, node_probs=p, replace=True)  # rows: drawn nodes
    nodes = drawn.row()
    return A[nodes, nodes], nodes


def main(argv=None):
    p = graph_parser(__doc__, batch_size=1)
    p.add_argument("--budget", type=int, default=6000)
    p.add_argument("--normalized", action="store_true")
    args = p.parse_args(argv)
    A = load_graph(args)
    sampler = functools.partial(graphsaint_node, budget=args.budget, normalized=args.normalized)
    run_batches("graphsaint_node", A, sampler, args)


if __name__ == "__main__":
    main()
