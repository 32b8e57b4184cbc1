"""PyG's subgraph types (``subgraph_type=``) for :class:`gsample.pyg.NeighborLoader`.

PyG's ``NeighborSampler`` draws the same nodes whatever its ``subgraph_type``; the type
only changes which edges a mini-batch carries:

* ``"directional"`` (PyG's default): the sampled edges, hop by hop
  (:func:`gsample.interop.pyg.loader.neighbor_sample`).
* ``"induced"``: every edge of the graph between two sampled nodes, sampled or not, each
  with its edge id (:func:`induced_sample`, a DSL program: the hops of ``neighbor_sample``,
  then ``A[nodes, nodes]``). No hop structure: ``num_sampled_nodes`` and
  ``num_sampled_edges`` are ``None``, as PyG's.
* ``"bidirectional"``: the sampled edges and their reverses, coalesced
  (:func:`to_bidirectional`, PyG's ``SamplerOutput.to_bidirectional``): a reverse edge
  ``dst -> src`` is added whether or not the graph holds it, and carries the id of the
  sampled edge ``src -> dst``; a pair sampled in both directions keeps its own sampled
  edge's id. Edges sorted by destination, then source; ``num_sampled_nodes`` and
  ``num_sampled_edges`` are ``None``, as PyG's.

Determinism: ``induced_sample`` makes exactly the draws ``neighbor_sample`` makes (the same
ops in the same order, then a slice that draws nothing), so with the same seed every subgraph
type samples the same nodes, in the same order (``n_id``: the seeds, then each hop's new
nodes in ascending id).
"""

from __future__ import annotations

import enum

import torch

from gsample.interop.pyg.data import PygSample

#: PyG's ``SubgraphType`` values, by name
SUBGRAPH_TYPES = ("directional", "bidirectional", "induced")


def subgraph_type_name(value, directed: bool = True) -> str:
    """PyG's ``subgraph_type`` (a str or PyG's ``SubgraphType``) as one of
    :data:`SUBGRAPH_TYPES`; ``directed=False`` (PyG's deprecated spelling) means ``"induced"``.

    Raises a ``ValueError`` naming the argument for any other value.

    Examples
    --------
    >>> from torch_geometric.sampler.base import SubgraphType
    >>> subgraph_type_name(SubgraphType.induced)
    'induced'
    >>> subgraph_type_name("directional", directed=False)
    'induced'
    """
    if not isinstance(directed, bool):
        raise TypeError(f"directed: expected a bool, got {type(directed).__name__}")
    name = value.value if isinstance(value, enum.Enum) else value
    if not isinstance(name, str) or name not in SUBGRAPH_TYPES:
        raise ValueError(
            f"subgraph_type: expected one of {', '.join(map(repr, SUBGRAPH_TYPES))} "
            f"(or PyG's SubgraphType), got {value!r}"
        )
    return "induced" if not directed else name


def sampled_nodes(A, seeds, num_neighbors=(25, 10), replace: bool = False, weighted: bool = False):
    """The nodes PyG's neighbour sampling reaches, in ``n_id`` order (DSL).

    The hops of :func:`gsample.interop.pyg.loader.neighbor_sample`, draw for draw: each hop
    samples the in-neighbours of the nodes first reached at the previous one.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph; column ``j`` holds the in-edges of ``j``.
    seeds : LongTensor, shape (B,)
        Global ids, unique.
    num_neighbors, replace, weighted
        As ``neighbor_sample``'s.

    Returns
    -------
    LongTensor, shape (n,)
        The seeds in their order, then the nodes first reached at hop 1, hop 2, ...
        (each hop's in ascending id).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> nodes = sampled_nodes(A, seeds, (10, 5))
    >>> bool((nodes[:len(seeds)] == seeds).all())
    True
    """
    return torch.cat(neighbor_hops(A, seeds, num_neighbors, replace, weighted)[1])


def neighbor_hops(A, seeds, num_neighbors=(25, 10), replace: bool = False, weighted: bool = False):
    """PyG's neighbour sampling hop by hop (DSL): the blocks and the nodes each hop reached.

    Hop ``h`` samples the in-neighbours of the nodes first reached at hop ``h - 1`` (the
    seeds at hop 0); what :func:`gsample.interop.pyg.loader.neighbor_sample` and
    :func:`sampled_nodes` return.

    Parameters
    ----------
    A, seeds, num_neighbors, replace, weighted
        As :func:`sampled_nodes`.

    Returns
    -------
    blocks : list of gs.Matrix
        ``blocks[h]``'s columns are the nodes first reached at hop ``h`` (the seeds for
        ``h = 0``) in ascending id order, each with its sampled in-edges.
    reached : list of LongTensor
        The seeds, then the nodes first reached at hop 1, 2, ... (each ascending):
        ``torch.cat(reached)`` is :func:`sampled_nodes`' ``n_id``. Kept apart, so that a
        compiled program leaves them in its buffers until its one read-back (a
        concatenation per hop would read each hop's count back first).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> blocks, reached = neighbor_hops(A, seeds, (10, 5))
    >>> n_id = torch.cat(reached)                    # the seeds, then each hop's new nodes
    >>> len(blocks), torch.equal(n_id[:3], seeds)
    (2, True)
    """
    blocks, frontier, reached, state = [], seeds, [seeds], None
    for k in num_neighbors:
        sub = A[:, frontier]
        if k < 0:
            s = sub
        elif weighted:
            s = sub.individual_sample(k, probs=sub, replace=replace)
        else:
            s = sub.individual_sample(k, replace=replace)
        blocks.append(s)
        frontier, _, _, state = s.first_reached(state=state)  # first reached at this hop
        reached.append(frontier)
    return blocks, reached


def induced_sample(A, seeds, num_neighbors=(25, 10), replace: bool = False, weighted: bool = False):
    """PyG's ``subgraph_type="induced"`` in the DSL: the subgraph the sampled nodes induce.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph.
    seeds : LongTensor, shape (B,)
        Global ids, unique.
    num_neighbors, replace, weighted
        As ``neighbor_sample``'s (the nodes are :func:`sampled_nodes`).

    Returns
    -------
    subgraph : gs.Matrix, shape (n, n)
        ``A[nodes, nodes]``: every edge of ``A`` between two sampled nodes (edge ids kept).
    nodes : LongTensor, shape (n,)
        ``n_id``: the seeds, then each hop's new nodes.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> sub, nodes = induced_sample(A, seeds, (10, 5))
    >>> sub.shape == (len(nodes), len(nodes))       # every edge among the sampled nodes
    True
    >>> data = gs.Batch(seeds, 0, (sub, nodes)).to_pyg()
    """
    nodes = sampled_nodes(A, seeds, num_neighbors, replace, weighted)
    return A[nodes, nodes], nodes


def to_bidirectional(sample: PygSample) -> PygSample:
    """PyG's ``SamplerOutput.to_bidirectional()`` on a mapped mini-batch.

    Each sampled edge ``row -> col`` and its reverse ``col -> row`` (with the same edge id),
    coalesced: one edge per ``(row, col)`` pair, sorted by ``col`` then ``row`` (PyG's
    ``coalesce(..., sort_by_row=False)``); a pair present more than once keeps the id (and
    value) of its first occurrence, a sampled edge before a reverse one (PyG's
    ``reduce="any"`` keeps an arbitrary one). ``num_sampled_nodes`` / ``num_sampled_edges``
    become ``None``, as PyG's.

    Parameters
    ----------
    sample : PygSample
        A directional mini-batch (:func:`gsample.interop.pyg.data.pyg_sample`).

    Returns
    -------
    PygSample
        Same ``node`` and ``batch_size``; ``row``, ``col``, ``edge`` (and ``weight``) of
        shape ``(E',)``, ``E' <= 2 E``.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> from torch_geometric.utils import is_undirected
    >>> from gsample.interop.pyg.data import pyg_sample
    >>> from gsample.interop.pyg.neighbor_loader import neighbor_sample
    >>> s = to_bidirectional(pyg_sample(neighbor_sample(A, seeds, (5, 5)), seeds))
    >>> is_undirected(torch.stack([s.row, s.col]))     # every (r, c) has its (c, r)
    True
    """
    row = torch.cat([sample.row, sample.col])
    col = torch.cat([sample.col, sample.row])
    edge = torch.cat([sample.edge, sample.edge])
    n = max(int(sample.node.numel()), 1)
    order = torch.argsort(col * n + row, stable=True)  # first occurrence first
    key = (col * n + row)[order]
    first = torch.ones_like(key, dtype=torch.bool)
    first[1:] = key[1:] != key[:-1]
    keep = order[first]
    weight = sample.weight
    if weight is not None:
        weight = torch.cat([weight, weight])[keep]
    return PygSample(
        node=sample.node,
        row=row[keep],
        col=col[keep],
        edge=edge[keep],
        weight=weight,
        batch_size=sample.batch_size,
        num_sampled_nodes=None,
        num_sampled_edges=None,
    )


__all__ = [
    "SUBGRAPH_TYPES",
    "induced_sample",
    "neighbor_hops",
    "sampled_nodes",
    "subgraph_type_name",
    "to_bidirectional",
]
