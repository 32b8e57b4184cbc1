"""A brute-force reference for disjoint and temporal neighbour sampling (PyG's / pyg-lib's
semantics), in plain Python: every allowed edge of every (seed, hop) enumerated.

``Graph`` holds an edge list with times; :func:`allowed` lists the in-edges of a node allowed
at a time; :func:`check_batch` checks a PyG disjoint batch (``n_id``, ``batch``,
``edge_index``, ``e_id``, ``num_sampled_nodes`` / ``num_sampled_edges``) tree by tree against
it: each frontier copy's sampled edges are allowed at its seed's time, ``min(k, #allowed)``
of them (``-1``: all), distinct without replacement, the most recent ones for
``strategy="last"``, and each hop's new nodes are the sources its seed had not reached
before, in id order. :func:`expected_trees` builds the whole batch where sampling draws
nothing (``k = -1``, or ``"last"`` without replacement) for exact comparison.

Heterogeneous graphs: :func:`relation_graphs` gives one ``Graph`` per edge type (its time:
the source's node time, or the edge's, as pyg-lib compares them; None where the relation has
none) and :func:`check_hetero_batch` checks a disjoint ``HeteroData`` batch tree by tree,
relation by relation, in the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Graph:
    """Edges ``src[e] -> dst[e]`` (``e`` the edge id) with ``time[e]`` (None: no times)."""

    src: list
    dst: list
    time: list | None

    @classmethod
    def of(cls, edge_index: torch.Tensor, time: torch.Tensor | None = None) -> Graph:
        return cls(
            edge_index[0].tolist(),
            edge_index[1].tolist(),
            None if time is None else time.tolist(),
        )

    def in_edges(self, v: int) -> list:
        if not hasattr(self, "_in"):
            self._in = {}
            for e, d in enumerate(self.dst):
                self._in.setdefault(d, []).append(e)
        return self._in.get(v, [])


def allowed(g: Graph, v: int, t=None, window=None, strategy="uniform", k=-1) -> list:
    """The edge ids a column of node ``v`` at time ``t`` may sample (sorted): every in-edge
    of time ``<= t`` (and ``> t - window``); with ``"last"``, the ``k`` most recent of them
    (largest ``(time, edge id)``)."""
    out = [
        e
        for e in g.in_edges(v)
        if t is None or (g.time[e] <= t and (window is None or g.time[e] > t - window))
    ]
    if strategy == "last" and k >= 0:
        out = sorted(out, key=lambda e: (g.time[e], e))[max(len(out) - k, 0) :] if k else []
    return sorted(out)


def _hops(batch, name: str, count: int) -> list:
    """``[start, stop)`` of each hop along ``batch[name]`` (``num_sampled_nodes``: the seeds
    are hop 0)."""
    sizes = list(batch[name])
    assert len(sizes) == count, (name, sizes)
    out, at = [], 0
    for s in sizes:
        out.append((at, at + s))
        at += s
    return out


def check_batch(
    batch,
    g: Graph,
    seeds: list,
    num_neighbors: list,
    seed_time: list | None = None,
    replace: bool = False,
    strategy: str = "uniform",
    window=None,
    weight: list | None = None,
) -> dict:
    """Check a disjoint batch against the reference (see the module docstring); returns
    ``{(slot, hop): {frontier node: sorted sampled edge ids}}`` (for law tests).

    ``seeds`` / ``seed_time``: the batch's seeds and their times, in order (None: no time);
    ``weight``: per edge id, when sampling is weighted (a weight-0 edge is never sampled)."""
    B = len(seeds)
    n_id, bvec = batch.n_id.tolist(), batch.batch.tolist()
    row, col = batch.edge_index.tolist()
    e_id = batch.e_id.tolist()
    assert n_id[:B] == list(seeds) and bvec[:B] == list(range(B)), "seeds first, in order"
    nodes = _hops(batch, "num_sampled_nodes", len(num_neighbors) + 1)
    edges = _hops(batch, "num_sampled_edges", len(num_neighbors))
    assert nodes[-1][1] == len(n_id) and (not edges or edges[-1][1] == len(e_id))
    pairs = list(zip(bvec, n_id))
    assert len(set(pairs)) == len(pairs), "a node appears once per tree"
    draws = {}
    for i in range(B):
        t = None if seed_time is None else seed_time[i]
        seen = {seeds[i]}
        for h, k in enumerate(num_neighbors):
            frontier = [c for c in range(*nodes[h]) if bvec[c] == i]
            by_col = {c: [] for c in frontier}
            reached = set()
            for j in range(*edges[h]):
                if bvec[col[j]] != i:
                    continue
                assert col[j] in by_col, "an edge into a node of its hop's frontier"
                assert bvec[row[j]] == i, "an edge within its seed's tree"
                e = e_id[j]
                assert g.dst[e] == n_id[col[j]] and g.src[e] == n_id[row[j]], "e_id's edge"
                by_col[col[j]].append(e)
                reached.add(n_id[row[j]])
            for c, got in by_col.items():
                ok = allowed(g, n_id[c], t, window, strategy, k)
                if weight is not None:
                    ok = [e for e in ok if weight[e] > 0]
                assert set(got) <= set(ok), ("sampled edges allowed", i, h, n_id[c], got, ok)
                if replace:
                    assert len(got) == (k if ok and k >= 0 else len(ok) if k < 0 else 0)
                else:
                    want = len(ok) if k < 0 else min(k, len(ok))
                    assert len(got) == want and len(set(got)) == want, (i, h, got, ok)
                    if strategy == "last" or k < 0:
                        assert sorted(got) == ok
                draws[(i, h, n_id[c])] = sorted(got)
            new = sorted(reached - seen)
            seen |= reached
            got_new = [n_id[c] for c in range(*nodes[h + 1]) if bvec[c] == i]
            assert got_new == new, ("hop's new nodes: first reached by their seed", i, h)
    return draws


def expected_trees(
    g: Graph, seeds, num_neighbors, seed_time=None, strategy="uniform", window=None
) -> list:
    """Where sampling draws nothing (every ``k == -1``, or ``"last"`` without replacement):
    per seed, per hop, the sorted edge ids its tree holds."""
    out = []
    for i, s in enumerate(seeds):
        t = None if seed_time is None else seed_time[i]
        frontier, seen, hops = [s], {s}, []
        for k in num_neighbors:
            es = sorted(e for v in frontier for e in allowed(g, v, t, window, strategy, k))
            hops.append(es)
            reached = {g.src[e] for e in es}
            frontier = sorted(reached - seen)
            seen |= reached
        out.append(hops)
    return out


def trees_of(batch, B: int, hops: int) -> list:
    """Per seed, per hop, the sorted edge ids of a batch's tree (to compare with
    :func:`expected_trees`)."""
    bvec, col = batch.batch.tolist(), batch.edge_index[1].tolist()
    e_id = batch.e_id.tolist()
    edges = _hops(batch, "num_sampled_edges", hops)
    return [
        [sorted(e_id[j] for j in range(*edges[h]) if bvec[col[j]] == i) for h in range(hops)]
        for i in range(B)
    ]


# --- heterogeneous graphs: one reference Graph per edge type ------------------------------


def relation_graphs(data, time_attr: str | None = None) -> dict:
    """Per edge type ``(s, r, d)`` of a ``HeteroData``, its edges as a :class:`Graph` whose
    time is what a seed's time is compared with (pyg-lib's heterogeneous rule): node-level
    ``time_attr``, the source's time (None when type ``s`` has none: no constraint);
    edge-level, the edge's own (None for edge types without it)."""
    out = {}
    node_level = time_attr is not None and any(time_attr in s for s in data.node_stores)
    for et in data.edge_types:
        ei = data[et].edge_index
        t = None
        if node_level and time_attr in data[et[0]]:
            t = data[et[0]][time_attr][ei[0]]
        elif not node_level and time_attr is not None and time_attr in data[et]:
            t = data[et][time_attr]
        out[et] = Graph.of(ei, t)
    return out


def check_hetero_batch(
    batch,
    graphs: dict,
    seeds: list,
    num_neighbors: list,
    seed_time: list | None = None,
    replace: bool = False,
    strategy: str = "uniform",
    weight: dict | None = None,
) -> dict:
    """Check a disjoint heterogeneous batch (PyG's ``HeteroData``: per node type ``n_id``,
    ``batch``, ``num_sampled_nodes``; per edge type ``edge_index``, ``e_id``,
    ``num_sampled_edges``) tree by tree against the reference of each relation.

    ``seeds``: ``[(node_type, node)]`` in slot order (the batch's seeds, numbered across
    types); ``num_neighbors``: ``k`` per hop, or ``{edge_type: k per hop}``; ``seed_time``:
    per slot (None: no time); ``graphs``: :func:`relation_graphs`;
    ``weight``: ``{edge_type: per edge id}`` for weighted sampling. Checks, for every tree
    ``i``, hop ``h`` and edge type ``(s, r, d)``: every frontier copy of type ``d`` of tree
    ``i`` has ``min(k, #allowed)`` distinct allowed in-edges of the type (``k`` with
    replacement; all for ``k = -1``; the most recent for ``"last"`` on a timed relation),
    each an edge of the relation between two copies of tree ``i``; the hop's new nodes of
    each type are the sources tree ``i`` had not reached, in id order; the seeds come first,
    in slot order. Returns ``{(slot, hop, edge_type, node): sorted edge ids}``."""
    types = batch.node_types
    per_type = num_neighbors if isinstance(num_neighbors, dict) else None
    num_hops = len(next(iter(per_type.values()))) if per_type else len(num_neighbors)
    n_id = {t: batch[t].n_id.tolist() for t in types}
    bvec = {t: batch[t].batch.tolist() for t in types}
    nodes = {t: _hops(batch[t], "num_sampled_nodes", num_hops + 1) for t in types}
    for t in types:
        assert nodes[t][-1][1] == len(n_id[t])
        pairs = list(zip(bvec[t], n_id[t]))
        assert len(set(pairs)) == len(pairs), ("a node appears once per tree", t)
        want = [(i, v) for i, (tt, v) in enumerate(seeds) if tt == t]
        assert pairs[: nodes[t][0][1]] == want, ("seeds first, in slot order", t)
    edges = {}
    for et in batch.edge_types:
        edges[et] = _hops(batch[et], "num_sampled_edges", num_hops)
        e = batch[et].e_id.numel()
        assert not edges[et] or edges[et][-1][1] == e
    draws = {}
    for i, (t0, v0) in enumerate(seeds):
        t_i = None if seed_time is None else seed_time[i]
        seen = {t: set() for t in types}
        seen[t0].add(v0)
        for h in range(num_hops):
            reached = {t: set() for t in types}
            for et in batch.edge_types:
                s, _, d = et
                g = graphs[et]
                k = per_type[et][h] if per_type else num_neighbors[h]
                row, col = batch[et].edge_index.tolist()
                e_id = batch[et].e_id.tolist()
                frontier = [c for c in range(*nodes[d][h]) if bvec[d][c] == i]
                by_col = {c: [] for c in frontier}
                for j in range(*edges[et][h]):
                    if bvec[d][col[j]] != i:
                        continue
                    assert col[j] in by_col, ("an edge into its hop's frontier", et)
                    assert bvec[s][row[j]] == i, ("an edge within its seed's tree", et)
                    e = e_id[j]
                    assert g.dst[e] == n_id[d][col[j]] and g.src[e] == n_id[s][row[j]], et
                    by_col[col[j]].append(e)
                    reached[s].add(n_id[s][row[j]])
                timed = g.time is not None and t_i is not None
                how = strategy if timed else "uniform"
                for c, got in by_col.items():
                    ok = allowed(g, n_id[d][c], t_i if timed else None, None, how, k)
                    if weight is not None and et in weight:
                        ok = [e for e in ok if weight[et][e] > 0]
                    assert set(got) <= set(ok), ("sampled edges allowed", i, h, et, got, ok)
                    if replace:
                        assert len(got) == (k if ok and k >= 0 else len(ok) if k < 0 else 0)
                    else:
                        want = len(ok) if k < 0 else min(k, len(ok))
                        assert len(got) == want == len(set(got)), (i, h, et, got, ok)
                        if how == "last" or k < 0:
                            assert sorted(got) == ok
                    draws[(i, h, et, n_id[d][c])] = sorted(got)
            for t in types:
                new = sorted(reached[t] - seen[t])
                seen[t] |= reached[t]
                got_new = [n_id[t][c] for c in range(*nodes[t][h + 1]) if bvec[t][c] == i]
                assert got_new == new, ("hop's new nodes: first reached by their seed", i, h, t)
    return draws
