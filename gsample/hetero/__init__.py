"""Heterogeneous graphs: one ``gs.Matrix`` per edge type (docs/catalogue.md #7).

A :class:`HeteroGraph` holds node types with their node counts and one adjacency matrix
per edge type ``(src_type, relation, dst_type)``, as PyG's ``HeteroData`` and DGL's
heterographs do. It slices and samples per type: relation-typed neighbour sampling
(:meth:`HeteroGraph.sample_neighbors`), metapath walks with an optional restart to the
root (:meth:`HeteroGraph.metapath_walk`, and :func:`metapath_walk` for compiled samplers),
and the PyG mini-batch of a sample (:meth:`HeteroGraph.to_pyg`, a ``HeteroData``).

Id spaces
---------
Node ids are **per node type** ``0 .. num_nodes[t] - 1`` (PyG's and DGL's local ids),
everywhere: seeds, samples, walks, ``n_id``. gsample matrices are square, ``N x N`` over one
id space, so every relation is stored as an ``N x N`` matrix with
``N = max(num_nodes.values())`` (one ``N`` for all relations): row ``i`` is source node
``i`` of ``src_type``, column ``j`` destination node ``j`` of ``dst_type``; entry ``(i, j)``
is the edge ``i -> j`` and column ``j`` holds the in-edges of ``j`` (gsample's convention).
Rows ``>= num_nodes[src_type]`` and columns ``>= num_nodes[dst_type]`` never hold edges. One
``N`` for every relation (rather than ``max(n_src, n_dst)`` each) is what lets one compiled
sampler take several relations (``A.num_nodes`` is a static of its program) and what
super-batching's ``b * N + v`` ids need. The cost is ``8 * (N + 1)`` bytes of ``indptr`` per
relation. Ids between a type's count and ``N`` are valid for the matrix but not for the
type: :class:`HeteroGraph` checks seeds against their type's count (gsample's operators
would read those columns as empty).

Edge ids (``e_id``) are positions in the edge list each relation was built from (the
relation's ``edge_index`` in PyG's ``HeteroData``), per edge type.

Determinism (docs/architecture.md §3)
-----------------------
Every relation's sampling and every walk step is one gsample random op, called in a fixed
order, so ``gs.manual_seed`` and the same calls give the same samples: neighbour sampling
takes one op ordinal per (hop, edge type), edge types in sorted order; a metapath walk takes
one per step. Within an op a column (walker) draws with its position, which stays its
position in ``seeds`` at every step (see :func:`metapath_walk`).

The package, by concern: :mod:`.container` (the :class:`HeteroGraph` container: types,
relations, conversion from PyG, checks), :mod:`.sampling` (relation-typed neighbour
sampling), :mod:`.walks` (metapath walks, the DSL :func:`metapath_walk`), :mod:`.output`
(``HeteroGraph.to_pyg``). ``HeteroGraph`` gathers the methods of the last three;
:mod:`.toy` holds a graph small enough to read, for examples (:func:`authors_papers`).
"""

from gsample.hetero.container import EdgeKey, EdgeType, HeteroGraph
from gsample.hetero.toy import authors_papers
from gsample.hetero.walks import DIRECTIONS, metapath_walk

__all__ = ["DIRECTIONS", "EdgeKey", "EdgeType", "HeteroGraph", "authors_papers", "metapath_walk"]
