"""A heterogeneous sample as PyG's ``HeteroData`` (``HeteroGraph.to_pyg``), mapped per edge
type as the homogeneous mapping does (``gsample/output/pyg.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import torch

from gsample.interop.pyg.data import NodeRows, _first_occurrence, _local, gather
from gsample.matrix.sparse import Matrix

if TYPE_CHECKING:  # PyTorch Geometric is optional: HeteroData only names the return type
    from torch_geometric.data import HeteroData


class PyGOutput:
    """:class:`~gsample.hetero.HeteroGraph`'s ``to_pyg`` (a mixin)."""

    __slots__ = ()

    def to_pyg(
        self,
        samples: Mapping[tuple, Matrix] | Sequence[Mapping[tuple, Matrix]],
        seeds: Mapping[str, torch.Tensor],
        x: Mapping[str, NodeRows] | None = None,
        y: Mapping[str, NodeRows] | None = None,
    ) -> HeteroData:
        """A neighbour sample as PyG's ``HeteroData`` (as PyG's heterogeneous
        ``NeighborLoader`` gives it).

        Parameters
        ----------
        samples : dict or list of dict
            :meth:`sample_neighbors`' result: ``{edge_type: gs.Matrix}`` for one hop, or one
            such dict per hop (first hop first). Matrices are columns of seeds (``A[:,
            cols]``, sampled or not) of their relation.
        seeds : dict
            ``{node_type: LongTensor}``: the first hop's seeds.
        x, y : dict, optional
            ``{node_type: Tensor (num_nodes[t], ...) or callable(n_id)}``: features and
            labels gathered by ``n_id`` into ``data[t].x`` / ``data[t].y``.

        Returns
        -------
        torch_geometric.data.HeteroData
            Every node type and edge type of the graph. ``data[t].n_id``: type ``t``'s
            seeds in order, then the nodes first reached at hop 1, hop 2, ... (each hop's
            in ascending id order), ``num_nodes``, ``num_sampled_nodes`` (per hop);
            ``data[edge_type].edge_index``: ``[source, destination]`` in local ids
            (``n_id`` positions of their types; messages flow source -> destination, PyG's
            default), ``e_id`` (edge ids in the relation), ``num_sampled_edges`` (per hop),
            ``edge_weight`` where the relation has weights; ``data[t].batch_size`` and
            ``input_id`` for every seed type.

        Notes
        -----
        As the homogeneous mapping (:mod:`gsample.interop.pyg.data`), per edge type: hop ``h``
        keeps the edges into the columns that hop ``h - 1`` reached, that were not a
        destination of that edge type at an earlier hop, at their first occurrence in the
        hop. A PyG-style sample (:meth:`sample_neighbors` with hops) keeps every edge; a
        DGL-style one (every hop re-sampling its whole frontier) would send no message twice.

        Examples
        --------
        >>> import torch, gsample as gs
        >>> H = gs.hetero.authors_papers()   # 2 authors write 3 papers; papers cite papers
        >>> seeds = {"paper": torch.tensor([0, 2])}
        >>> data = H.to_pyg(H.sample_neighbors(seeds, [5, 5]), seeds)
        >>> data["paper"].n_id[:data["paper"].batch_size]
        tensor([0, 2])
        """
        # import here: PyTorch Geometric is optional (pip install 'gsample[pyg]')
        try:
            from torch_geometric.data import HeteroData
        except ImportError:
            raise ImportError(
                "to_pyg() needs PyTorch Geometric: pip install 'gsample[pyg]'"
            ) from None

        seeds = self._seed_dict(seeds)
        hops = [samples] if isinstance(samples, Mapping) else list(samples)
        if not all(isinstance(h, Mapping) for h in hops):
            raise TypeError(
                "samples: expected sample_neighbors' result, a dict {edge_type: "
                "gs.Matrix} or a list of them (one per hop)"
            )
        hops = [{self.edge_type(k, "samples key"): m for k, m in h.items()} for h in hops]
        lay = pyg_layout(hops, seeds, self)
        data = HeteroData()
        for t in self.node_types:
            node = lay.node[t]
            data[t].n_id = node
            data[t].num_nodes = node.numel()
            data[t].num_sampled_nodes = lay.num_nodes[t]
            for table, attr in ((x, "x"), (y, "y")):
                if table is not None and t in table:
                    data[t][attr] = gather(table[t], node, f"{attr}[{t!r}]")
        for t, ids in seeds.items():
            data[t].batch_size = ids.numel()
            data[t].input_id = torch.arange(ids.numel(), device=ids.device)
        for et in self.edge_types:
            row, col, eid, w = lay.edges[et]
            data[et].edge_index = torch.stack([row, col])
            data[et].e_id = eid
            data[et].num_sampled_edges = lay.num_edges[et]
            if w is not None:
                data[et].edge_weight = w
        return data


@dataclasses.dataclass
class HeteroLayout:
    """A heterogeneous sample in PyG's terms (:func:`pyg_layout`)."""

    node: dict  # node type -> LongTensor n_id
    num_nodes: dict  # node type -> [seeds, hop 1, ...]
    edges: dict  # edge type -> (row, col, e_id, weight or None); row / col local ids
    num_edges: dict  # edge type -> [hop 1, ...]


def pyg_layout(hops: list, seeds: dict, H) -> HeteroLayout:
    """Per node type its ``n_id`` and per edge type its local edges, hop by hop.

    The mapping of :meth:`PyGOutput.to_pyg` (its notes), before any ``HeteroData`` is built
    (``gsample.pyg``'s heterogeneous loaders build theirs with PyG's ``filter_hetero_data``).

    Parameters
    ----------
    hops : list of dict
        :meth:`~gsample.hetero.HeteroGraph.sample_neighbors`' result with hops: one
        ``{edge_type: gs.Matrix}`` per hop (edge types as the graph names them).
    seeds : dict
        ``{node_type: LongTensor}``: the first hop's seeds, checked.
    H : gs.HeteroGraph
        The graph sampled.

    Returns
    -------
    HeteroLayout
        ``node[t]`` (``n_id``: seeds, then each hop's new nodes in ascending id order),
        ``num_nodes[t]`` (``len(hops) + 1`` counts), ``edges[edge_type] = (row, col,
        e_id, weight or None)`` with ``row`` / ``col`` positions in ``node`` of the source
        and destination types, ``num_edges[edge_type]`` (``len(hops)`` counts).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> H = gs.hetero.authors_papers()   # 2 authors write 3 papers; papers cite papers
    >>> seeds = {"paper": torch.tensor([0, 2])}
    >>> lay = pyg_layout(H.sample_neighbors(seeds, [5, 5]), seeds, H)
    >>> lay.node["paper"][:2]
    tensor([0, 2])
    """
    dev = H.device
    empty = torch.zeros(0, dtype=torch.int64, device=dev)
    node = {t: seeds.get(t, empty) for t in H.node_types}
    num_nodes = {t: [node[t].numel()] for t in H.node_types}
    done = {et: empty for et in H.edge_types}
    parts = {et: [] for et in H.edge_types}
    weighted = {
        et: any(et in h and h[et].csc.values is not None for h in hops) for et in H.edge_types
    }
    num_edges = {et: [] for et in H.edge_types}
    for hop in hops:
        new_rows = {}
        for et in H.edge_types:
            m = hop.get(et)
            if m is None:
                num_edges[et].append(0)
                continue
            if not isinstance(m, Matrix):
                raise TypeError(f"samples[{et!r}]: expected a gs.Matrix, got {type(m).__name__}")
            s, _, d = et
            csc = m.csc
            if csc.device != dev:
                raise ValueError(f"samples[{et!r}]: on {csc.device}, the graph on {dev}")
            col_ids = csc.global_cols()
            keep = (
                _first_occurrence(col_ids)
                & torch.isin(col_ids, node[d])
                & ~torch.isin(col_ids, done[et])
            )
            done[et] = torch.cat([done[et], col_ids[keep]])
            edge_col = csc.edge_cols()
            mask = keep[edge_col]
            local_rows = csc.rows[mask]
            src = csc.global_rows(local_rows)
            dst = col_ids[edge_col[mask]]
            w = csc.value_tensor()[mask] if weighted[et] else None
            parts[et].append((src, dst, csc.eid_tensor()[mask], w))
            num_edges[et].append(src.numel())
            new_rows.setdefault(s, []).append(src)
        for t in H.node_types:
            if t in new_rows:
                ids = torch.unique(torch.cat(new_rows[t]))
                ids = ids[~torch.isin(ids, node[t])]
                node[t] = torch.cat([node[t], ids])
                num_nodes[t].append(ids.numel())
            else:
                num_nodes[t].append(0)
    edges = {}
    for et in H.edge_types:
        s, _, d = et
        if parts[et]:
            src = torch.cat([p[0] for p in parts[et]])
            dst = torch.cat([p[1] for p in parts[et]])
            eid = torch.cat([p[2] for p in parts[et]])
            w = torch.cat([p[3] for p in parts[et]]) if weighted[et] else None
            edges[et] = (_local(node[s], src), _local(node[d], dst), eid, w)
        else:
            w = torch.zeros(0, device=dev) if weighted[et] else None
            edges[et] = (empty, empty, empty, w)
        if len(num_edges[et]) < len(hops):
            num_edges[et] += [0] * (len(hops) - len(num_edges[et]))
    return HeteroLayout(node, num_nodes, edges, num_edges)


__all__ = ["HeteroLayout", "PyGOutput", "pyg_layout"]
