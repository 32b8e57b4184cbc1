"""PyG's heterogeneous batch layouts of gsample's draws, per subgraph type: the disjoint
layout (:func:`disjoint_layout`: one tree per seed, PyG's ``batch``), the induced subgraph of
the sampled nodes (:func:`induced_edges`) and PyG's ``to_bidirectional``
(:func:`to_bidirectional`). The directional layout of ``sample_neighbors``' draws is
:func:`gsample.interop.pyg.hetero.pyg_layout`.
"""

from __future__ import annotations

import warnings

import torch

from gsample.hetero.container import HeteroGraph
from gsample.interop.pyg.data import _local
from gsample.interop.pyg.hetero import HeteroLayout


def disjoint_layout(blocks: list, slots: list, seeds: dict, H: HeteroGraph) -> tuple:
    """PyG's disjoint heterogeneous layout of :meth:`gs.HeteroGraph.sample_disjoint`'s
    output: per node type the *(seed slot, node)* pairs of the batch, per edge type the
    sampled edges between the copies of their seed.

    Parameters
    ----------
    blocks, slots : list of dict
        ``sample_disjoint``'s output.
    seeds : dict
        ``{node_type: LongTensor}``: its seeds (slots numbered consecutively in this order).
    H : gs.HeteroGraph
        The graph sampled.

    Returns
    -------
    layout : HeteroLayout
        ``node[t]``: type ``t``'s seeds, then each hop's pairs first reached by their seed
        (by slot, then id), as node ids; ``num_nodes[t]`` per hop; ``edges[edge_type] =
        (row, col, e_id, weight or None)``, hop by hop, column by column, ``row`` / ``col``
        local ids of the edge's copies (its seed's); ``num_edges[edge_type]`` per hop.
    batch : dict
        ``{node_type: LongTensor}``: the seed slot of each node of ``node[t]``.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> H = gs.hetero.authors_papers()   # 2 authors write 3 papers; papers cite papers
    >>> seeds = {"paper": torch.tensor([0, 0])}             # two trees of one node
    >>> lay, batch = disjoint_layout(*H.sample_disjoint(seeds, [2]), seeds, H)
    >>> batch["paper"][:2]
    tensor([0, 1])
    """
    dev = H.device
    n = max(H.size, 1)
    empty = torch.zeros(0, dtype=torch.int64, device=dev)
    pairs = {t: [] for t in H.node_types}
    num_nodes = {t: [] for t in H.node_types}
    at = 0
    for t, ids in seeds.items():  # slots consecutive across the seed types
        pairs[t].append(torch.arange(at, at + ids.numel(), device=dev) * n + ids)
        at += ids.numel()
    for t in H.node_types:
        num_nodes[t].append(pairs[t][0].numel() if pairs[t] else 0)
    seen = {t: torch.cat(p) if p else empty for t, p in pairs.items()}
    weighted = {
        et: any(et in h and h[et].csc.values is not None for h in blocks) for et in H.edge_types
    }
    parts = {et: [] for et in H.edge_types}
    num_edges = {et: [] for et in H.edge_types}
    for hop, slot in zip(blocks, slots, strict=True):
        reached = {}
        for et in H.edge_types:
            m = hop.get(et)
            if m is None:
                num_edges[et].append(0)
                continue
            csc = m.csc
            own = slot.get(et[2], empty)
            edge_slot = torch.repeat_interleave(own, csc.degrees(), output_size=csc.nnz)
            src = edge_slot * n + csc.global_rows()
            dst = edge_slot * n + csc.global_cols()[csc.edge_cols()]
            w = csc.value_tensor() if weighted[et] else None
            parts[et].append((src, dst, csc.eid_tensor(), w))
            num_edges[et].append(csc.nnz)
            reached.setdefault(et[0], []).append(src)
        for t in H.node_types:
            new = empty
            if t in reached:
                p = torch.unique(torch.cat(reached[t]))
                new = p[~torch.isin(p, seen[t])]
                seen[t] = torch.cat([seen[t], new])
            pairs[t].append(new)
            num_nodes[t].append(new.numel())
    node, batch = {}, {}
    for t in H.node_types:
        node[t] = torch.remainder(seen[t], n)
        batch[t] = torch.div(seen[t], n, rounding_mode="floor")
    edges = {}
    for et in H.edge_types:
        s, _, d = et
        if parts[et]:
            src, dst, eid = (torch.cat([p[i] for p in parts[et]]) for i in range(3))
            w = torch.cat([p[3] for p in parts[et]]) if weighted[et] else None
            edges[et] = (_local(seen[s], src), _local(seen[d], dst), eid, w)
        else:
            w = torch.zeros(0, device=dev) if weighted[et] else None
            edges[et] = (empty, empty, empty, w)
    return HeteroLayout(node, num_nodes, edges, num_edges), batch


def induced_edges(H: HeteroGraph, node: dict) -> tuple:
    """Per edge type every edge between sampled nodes: ``(row, col, e_id, weight)`` dicts,
    row / col local (positions in ``node`` of the source / destination type), in column
    order.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> H = gs.hetero.authors_papers()   # 2 authors write 3 papers; papers cite papers
    >>> row, col, e_id, weight = induced_edges(
    ...     H, {"paper": torch.tensor([0, 2]), "author": torch.tensor([0, 1])})
    >>> row["paper", "cites", "paper"], col["paper", "cites", "paper"]   # paper 2 cites 0
    (tensor([1]), tensor([0]))
    >>> e_id["paper", "cites", "paper"], weight["paper", "cites", "paper"]
    (tensor([1]), None)
    """
    row, col, edge, weight = {}, {}, {}, {}
    for et in H.edge_types:
        s, _, d = et
        m = H[et]
        if node[s].numel() == 0 or node[d].numel() == 0:
            empty = node[s][:0]
            row[et] = col[et] = edge[et] = empty
            weight[et] = None
            continue
        csc = m[node[s], node[d]].csc  # A[rows, cols]: local rows and columns, edge ids kept
        row[et], col[et], edge[et] = csc.rows, csc.edge_cols(), csc.eid_tensor()
        weight[et] = None if csc.values is None else csc.value_tensor()
    return row, col, edge, weight


def _coalesce(row: torch.Tensor, col: torch.Tensor) -> tuple:
    """Distinct ``(row, col)`` pairs sorted by ``col``, then ``row`` (PyG's ``coalesce(...,
    sort_by_row=False)``)."""
    n = int(row.max()) + 1 if row.numel() else 1
    key = torch.unique(col * n + row)  # sorted
    return key % n, torch.div(key, n, rounding_mode="floor")


def to_bidirectional(row: dict, col: dict, edge: dict) -> tuple:
    """PyG's ``HeteroSamplerOutput.to_bidirectional()`` on local edges per edge type.

    For each edge type ``(s, r, d)`` whose relation does not start with ``rev_``: with its
    reverse type ``(d, rev_r, s)`` present, both get the union of the type's edges and the
    reverse type's reversed, coalesced (and one is the other reversed); else, ``s == d``:
    its edges and their reverses; else, if exactly one edge type goes ``d -> s``, the
    union with that type's reversed edges (that type gets its own union when its turn
    comes); else it stays directional (a warning, as PyG). A merged type's ``edge`` is
    None: its pairs have no single edge id.

    Parameters
    ----------
    row, col : dict
        ``{edge_type: LongTensor (E,)}``: local source / destination ids.
    edge : dict
        ``{edge_type: LongTensor (E,)}``: edge ids.

    Returns
    -------
    tuple of dict
        ``(row, col, edge)``, new dicts; merged types sorted by destination, then source.

    Examples
    --------
    >>> import torch
    >>> r, c, e = to_bidirectional({("a", "to", "a"): torch.tensor([0])},
    ...                            {("a", "to", "a"): torch.tensor([1])},
    ...                            {("a", "to", "a"): torch.tensor([7])})
    >>> r[("a", "to", "a")], c[("a", "to", "a")], e[("a", "to", "a")]
    (tensor([1, 0]), tensor([0, 1]), None)
    """
    out_row, out_col, out_edge = dict(row), dict(col), dict(edge)
    by_ends: dict = {}
    for et in row:
        by_ends.setdefault((et[0], et[2]), []).append(et)
    for et in [k for k in row if not k[1].startswith("rev_")]:
        s, r, d = et
        rev = (d, f"rev_{r}", s)
        if s == d and rev not in row:
            other = et
        elif rev in row:
            other = rev
        elif len(by_ends.get((d, s), [])) == 1:
            other = by_ends[(d, s)][0]
        else:
            warnings.warn(
                f"Cannot convert to bidirectional graph since the edge type {et} does not "
                "seem to have a reverse edge type",
                stacklevel=2,
            )
            continue
        r_, c_ = _coalesce(torch.cat([row[et], col[other]]), torch.cat([col[et], row[other]]))
        out_row[et], out_col[et], out_edge[et] = r_, c_, None
        if other == rev:
            out_row[rev], out_col[rev], out_edge[rev] = c_, r_, None
    return out_row, out_col, out_edge


__all__ = ["disjoint_layout", "induced_edges", "to_bidirectional"]
