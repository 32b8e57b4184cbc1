"""Cluster-GCN (Chiang et al., "Cluster-GCN: An Efficient Algorithm for Training Deep and
Large Graph Convolutional Networks", KDD 2019), written in the gsample DSL.

The nodes are split once into parts (METIS in the paper; any ``node -> part`` tensor
here, or :func:`random_partition`'s 1500 balanced random parts); each mini-batch joins
``q`` (20) parts and samples the subgraph their nodes induce, ``A[nodes, nodes]``, links
between the chosen parts included (the paper's stochastic multiple partitions).

The mini-batch's ``seeds`` are part ids, not nodes:
``gs.DataLoader(A, partial(cluster_gcn, parts=parts), torch.arange(num_parts),
batch_size=20)`` shuffles the parts every epoch and puts 20 in each mini-batch. Part ids
must be smaller than the graph's node count (the loader checks seeds as node ids).
Nothing here is random but the loader's shuffle: a mini-batch's subgraph is a function
of its parts. Give the loader ``seeds_are_nodes=False``: ``batch.n_id``, its ``features=``
/ ``labels=`` rows and ``batch.to_pyg()`` then take the subgraph's nodes alone (with the
default, the part ids would come first as if they were node ids). ``super_batch`` works (the
subgraphs are made one mini-batch at a time inside the run: ``A[nodes, nodes]`` with per-batch
``nodes``), with the same subgraphs.

Run it from the repository root (after ``pip install -e .``)::

    python examples/cluster_gcn.py                     # an R-MAT graph, 1500 random parts
    python examples/cluster_gcn.py --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools

import torch
from common import epoch, graph_parser, load_graph

import gsample as gs


def random_partition(num_nodes, num_parts=1500, seed=0):
    """A balanced random partition: part ``i % num_parts`` for the ``i``-th node of a fixed
    random permutation (``seed`` picks it). LongTensor, shape (num_nodes,).

    Made once, outside the sampler (torch's generator, not gsample's stream)."""
    perm = torch.randperm(num_nodes, generator=torch.Generator().manual_seed(seed))
    parts = torch.empty(num_nodes, dtype=torch.long)
    parts[perm] = torch.arange(num_nodes) % num_parts
    return parts


def cluster_gcn(A, seeds, parts):
    """The subgraph induced by the nodes of the mini-batch's parts.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph; column ``j`` holds the in-edges of node ``j``.
    seeds : LongTensor, shape (q,)
        The mini-batch's part ids.
    parts : LongTensor, shape (N,)
        The part of every node (on ``A``'s device).

    Returns
    -------
    subgraph : gs.Matrix, shape (n, n)
        ``A[nodes, nodes]``: every edge of ``A`` between two of ``nodes``.
    nodes : LongTensor, shape (n,)
        The nodes whose part is among ``seeds``, ascending.
    """
    nodes = torch.isin(parts, seeds).nonzero().squeeze(1)
    return A[nodes, nodes], nodes


def main(argv=None):
    p = graph_parser(__doc__, batch_size=20, batches=None)
    p.add_argument("--parts", type=int, default=1500)
    args = p.parse_args(argv)
    A = load_graph(args)
    parts = random_partition(A.num_nodes, args.parts)
    gs.manual_seed(0)
    loader = gs.DataLoader(
        A, functools.partial(cluster_gcn, parts=parts), torch.arange(args.parts), args.batch_size
    )
    elapsed, edges = epoch(loader)
    print(
        f"cluster_gcn: {len(loader)} batches of {args.batch_size} parts, "
        f"{edges} sampled edges, {edges / elapsed:,.0f} sampled edges/s"
    )


if __name__ == "__main__":
    main()
