"""Super-batching in the heterogeneous :class:`gsample.pyg.NeighborLoader` and
:class:`gsample.pyg.LinkNeighborLoader` (a ``HeteroData`` or heterogeneous stores);
:mod:`gsample.interop.pyg.super_batch` holds the homogeneous loaders' and the runs.

``NeighborLoader`` on a ``HeteroData`` (or heterogeneous stores) samples hop by hop, each
(hop, edge type) one call of a compiled step on the relation's matrix
(:meth:`gs.HeteroGraph.step_sampler`). :class:`HeteroSuperBatches` runs each such step once
for the run's mini-batches: the step's super-batched program over all their frontiers of
the edge type's destination type, with the stream at the (hop, edge type)'s ordinal, so
mini-batch ``first + b`` draws with its own key and its columns' positions in its own
frontier, as alone; the outputs are split and each mini-batch's next frontier is its own.
Disjoint and temporal sampling (``gs.HeteroGraph.sample_disjoint``) key each column by its
seed's slot and filter by its seed's time, three per-column inputs where a super-batched
program takes one: :func:`disjoint_by_position` reads the column's node, slot and time by
position from tables the run fills before each step (shared by the steps, kept while they
are large enough, as :class:`gsample.interop.pyg.super_batch.LinkSuperBatches`' tables). A
(hop, edge type) with no column in any of the run's mini-batches takes its ordinal and runs
nothing.

``LinkNeighborLoader`` on a ``HeteroData`` (or heterogeneous stores) runs its own epochs too,
mini-batch ``i`` keyed ``i``: each mini-batch's typed negatives are drawn with its own key and
its seeds laid out as PyG's heterogeneous ``edge_sample`` lays them out, then
:meth:`HeteroSuperBatches.seed_draws` samples the seeds of the run's mini-batches, one run
per (hop, edge type).
"""

from __future__ import annotations

import torch

from gsample.base import validate as V
from gsample.base.random import batch_scope, next_op_key
from gsample.compiler import compile as gs_compile
from gsample.formats import CSC
from gsample.hetero.sampling import new_nodes, next_pairs, relation_temporal_sample
from gsample.interop.pyg.super_batch import padded
from gsample.matrix.sparse import Matrix
from gsample.runtime import SuperBatcher, finish, tensors


class HeteroSuperBatches:
    """A heterogeneous loader's steps (``NeighborLoader``'s, ``LinkNeighborLoader``'s) run for
    several consecutive mini-batches at once: per (hop, edge type), one run of the
    relation's compiled step over the frontiers of every mini-batch of the run, then split.

    A ``HeteroData`` is sampled hop by hop, each (hop, edge type) one call of the graph's
    compiled step (:meth:`gs.HeteroGraph.step_sampler`: ``A[:, cols]`` and
    ``individual_sample``, one op ordinal) on the frontier of the edge type's destination
    type. Here that call is the step's super-batched program
    (``CompiledSampler.super_batched``, its per-mini-batch input the columns), run with the
    stream at the (hop, edge type)'s ordinal, so mini-batch ``first + b``'s columns draw
    with ``op_key(epoch_seed, ordinal, first + b)`` and their positions in its own frontier,
    as :meth:`gs.HeteroGraph.sample_neighbors` draws them one mini-batch at a time. Each
    mini-batch's next frontier (the nodes it reached first, ascending per type) is its own,
    as there; a (hop, edge type) with no column in any of the run's mini-batches runs
    nothing and takes its ordinal, as one at a time. Disjoint / temporal sampling runs
    :func:`disjoint_by_position` per (hop, edge type) alike (see the module docstring).

    Parameters
    ----------
    batches : HeteroBatches
        The loader's graph and options (:mod:`gsample.interop.pyg.hetero_loader`;
        ``compile=True``; its ``spec``: disjoint / temporal sampling).
    input_nodes : LongTensor, shape (S,), optional
        The node loader's seeds of ``batches.input_type``, one per input position
        (checked), for :meth:`run` (a link loader gives each mini-batch's seeds to
        :meth:`seed_draws` instead).
    input_id : LongTensor, shape (S,), optional
        PyG's ``input_id`` of each input position (default the position).
    input_time : Tensor, shape (S,), optional
        PyG's ``input_time`` of each input position (temporal sampling).

    Attributes
    ----------
    batchers : dict
        ``{(edge_type, k, replace, weighted): gs.runtime.SuperBatcher}`` (disjoint:
        ``(edge_type, k, timed, weighted)``): each relation's step, super-batched, built by
        the first run that needs it.

    Examples
    --------
    >>> import torch
    >>> import gsample.pyg
    >>> from gsample.interop.pyg.hetero_loader import HeteroBatches
    >>> data = gsample.pyg.users_movies()          # 100 users rate 40 movies
    >>> batches = HeteroBatches(data, [10, 5])
    >>> batches.input_type = "movie"                   # a node loader's seeds: movies
    >>> input_nodes = torch.arange(40)
    >>> sb = HeteroSuperBatches(batches, input_nodes)
    >>> outs = sb.run([torch.arange(16), torch.arange(16, 32)], 0, first=0)  # epoch seed 0
    >>> outs[1].node["movie"][:16].equal(input_nodes[16:32])
    True
    """

    def __init__(
        self,
        batches,
        input_nodes: torch.Tensor | None = None,
        input_id: torch.Tensor | None = None,
        input_time: torch.Tensor | None = None,
    ):
        if not batches.compile:
            raise ValueError("super_batch: compile=False samples eagerly")
        self.batches, self.graph = batches, batches.graph
        self.input_nodes, self.input_id, self.input_time = input_nodes, input_id, input_time
        self.batchers: dict = {}
        self.tables: dict = {}  # disjoint: "tables": (nodes, slots, times), every step's
        self.empties: dict = {}  # disjoint: (edge type, timed) -> a sample of no column

    def _batcher(self, et: tuple, k: int, weighted: bool, cols: torch.Tensor) -> SuperBatcher:
        """The step of ``et`` with these static arguments, super-batched (``cols``: a
        frontier to trace it with; nothing is drawn)."""
        key = (et, k, self.batches.replace, weighted)
        batcher = self.batchers.get(key)
        if batcher is None:
            args = (self.graph[et], cols, k, self.batches.replace, weighted)
            with batch_scope(0, 0):  # tracing takes no ordinal of the run's stream
                batcher = self.batches.step_sampler.super_batched(
                    args, seeds="cols", fixed_state=True
                )
            self.batchers[key] = batcher
        return batcher

    def _empty(self) -> Matrix:
        """A relation's sample of no column (what a step of an empty frontier gives)."""
        z = torch.zeros(1, dtype=torch.int64, device=self.graph.device)
        e = z[:0]
        return Matrix(CSC(self.graph.size, z, e, None, e, None, e))

    def draws(self, seeds: list, epoch_seed: int, first: int) -> list:
        """The draws of mini-batches ``first, first + 1, ...`` of the seed dicts ``seeds``
        (``{node_type: checked ids}`` each, on the graph's device): per mini-batch, one
        ``{edge_type: gs.Matrix}`` per hop, what ``graph.sample_neighbors`` gives it alone
        in ``batch_scope(epoch_seed, first + b)``."""
        H, count = self.graph, len(seeds)
        fronts = [dict(s) for s in seeds]
        reached = [dict(s) for s in seeds]
        out: list = [[] for _ in range(count)]
        hops = self.batches.hops
        with batch_scope(epoch_seed, first):
            for h, hop in enumerate(hops):
                sampled: list = [{} for _ in range(count)]
                for et, k in sorted(hop.items()):  # sample_neighbors' order: sorted
                    cols = [f.get(et[2]) for f in fronts]
                    live = [c is not None and c.numel() > 0 for c in cols]
                    if not any(live):  # no column anywhere: the ordinal alone
                        next_op_key()
                        for b in range(count):
                            sampled[b][et] = self._empty()
                        continue
                    if k < 0:  # the step draws nothing: its ordinal is taken here
                        next_op_key()
                    weighted = self.batches.weighted and H[et].csc.values is not None
                    probe = next(c for c, ok in zip(cols, live) if ok)
                    batcher = self._batcher(et, k, weighted, probe)
                    empty = probe[:0]
                    parts = [c if ok else empty for c, ok in zip(cols, live)]
                    # the run takes the step's ordinals (batch b keyed by first + b)
                    outs = finish(batcher.start(parts))
                    for b in range(count):
                        sampled[b][et] = outs[b] if live[b] else self._empty()
                for b in range(count):
                    out[b].append(sampled[b])
                    if h + 1 < len(hops):
                        fronts[b] = new_nodes(sampled[b], reached[b])
                        for t, ids in fronts[b].items():
                            r = reached[b].get(t)
                            reached[b][t] = ids if r is None else torch.cat([r, ids])
        return out

    # ------------------------------------------------------------------ disjoint / temporal
    def _disjoint_batcher(self, et: tuple, k: int, timed: bool, size: int, dtype) -> tuple:
        """``(super-batcher, (nodes, slots, times))`` of ``et``'s disjoint step read by
        position (:func:`disjoint_by_position`) from the tables, which hold ``size``
        columns or more. The tables are shared by every step (a run fills them just before
        its step runs) and keep their identity (a captured program reads them where they
        are): when they are too small (or hold another time dtype), new, larger ones are
        made and every step's batcher is rebuilt over them (the relation padded to their
        size, :func:`padded`), when next used."""
        spec = self.batches.spec
        m = self.graph[et]
        weighted = self.batches.weighted and m.csc.values is not None
        key = (et, k, timed, weighted)
        tables = self.tables.get("tables")
        if tables is None or tables[0].numel() < size or (timed and tables[2].dtype != dtype):
            old = 0 if tables is None else tables[0].numel()
            # room to spare: a rebuild traces every step again
            capacity = max(size, 2 * old, _MIN_TABLE)
            dev = self.graph.device
            nodes = torch.zeros(capacity, dtype=torch.int64, device=dev)
            slots = torch.zeros(capacity, dtype=torch.int64, device=dev)
            keep = None if tables is None else tables[2]
            dtype = dtype if timed else (torch.float32 if keep is None else keep.dtype)
            times = torch.zeros(capacity, dtype=dtype, device=dev)
            tables = self.tables["tables"] = (nodes, slots, times)
            self.batchers.clear()
        batcher = self.batchers.get(key)
        if batcher is None:
            nodes, slots, times = tables
            edge_time = self.batches.edge_time[et] if timed else None
            args = (
                padded(m, nodes.numel()),
                nodes[:1],
                nodes,
                slots,
                times if timed else None,
                edge_time,
            )
            static = {
                "k": k,
                "replace": self.batches.replace,
                "weighted": weighted,
                "strategy": spec.strategy if timed else "uniform",
            }
            with batch_scope(0, 0):  # tracing takes no ordinal of the run's stream
                batcher = _DISJOINT_STEP.super_batched(args, static, seeds="pos", fixed_state=True)
            self.batchers[key] = batcher
        return batcher, tables

    def _disjoint_draws(self, seeds: list, times: list, epoch_seed: int, first: int) -> list:
        """:meth:`draws` of disjoint / temporal sampling: per mini-batch,
        ``gs.HeteroGraph.sample_disjoint``'s ``(blocks, slots)`` of its seeds at its seeds'
        times (``{node_type: times}`` each, or None), one run of each relation's step per
        (hop, edge type) for all of them."""
        H, count = self.graph, len(seeds)
        n, dev = max(H.size, 1), H.device
        none = torch.zeros(0, dtype=torch.int64, device=dev)
        fronts, slots, flat_time, seen = [], [], [], []
        for s, t in zip(seeds, times):  # seeds numbered across their types, in order
            slot, at = {}, 0
            for typ, ids in s.items():
                slot[typ] = torch.arange(at, at + ids.numel(), device=dev)
                at += ids.numel()
            fronts.append(dict(s))
            slots.append(slot)
            flat_time.append(None if t is None else torch.cat([t[typ] for typ in s]))
            seen.append({typ: slot[typ] * n + ids for typ, ids in s.items()})
        blocks: list = [[] for _ in range(count)]
        out_slots: list = [[] for _ in range(count)]
        hops = self.batches.hops
        with batch_scope(epoch_seed, first):
            for h, hop in enumerate(hops):
                sampled: list = [{} for _ in range(count)]
                for et, k in sorted(hop.items()):  # sample_disjoint's order: sorted
                    d = et[2]
                    cols = [f.get(d, none) for f in fronts]
                    own = [s.get(d, none) for s in slots]
                    timed = et in self.batches.edge_time and flat_time[0] is not None
                    sizes = [c.numel() for c in cols]
                    if not any(sizes):  # nothing to draw: the ordinal alone
                        next_op_key()
                        for b in range(count):
                            sampled[b][et] = self._no_columns(et, timed)
                        continue
                    dtype = flat_time[0].dtype if timed else None
                    batcher, (nodes, slot_t, time_t) = self._disjoint_batcher(
                        et, k, timed, sum(sizes), dtype
                    )
                    total = sum(sizes)
                    # in place: the program reads the tables where it found them
                    nodes[:total].copy_(torch.cat(cols))
                    slot_t[:total].copy_(torch.cat(own))
                    if timed:
                        time_t[:total].copy_(torch.cat([t[o] for t, o in zip(flat_time, own)]))
                    parts = list(torch.split(torch.arange(total, device=dev), sizes))
                    outs = finish(batcher.start(parts))  # batch b keyed by first + b
                    for b in range(count):
                        sampled[b][et] = outs[b]
                for b in range(count):
                    blocks[b].append(sampled[b])
                    out_slots[b].append(dict(slots[b]))
                    if h + 1 < len(hops):
                        fronts[b], slots[b] = next_pairs(sampled[b], slots[b], seen[b], n)
        return list(zip(blocks, out_slots))

    def _no_columns(self, et: tuple, timed: bool) -> Matrix:
        """The step's sample of no column of ``et`` (what a mini-batch draws alone for an
        empty frontier)."""
        hit = self.empties.get((et, timed))
        if hit is None:
            none = torch.zeros(0, dtype=torch.int64, device=self.graph.device)
            edge_time = self.batches.edge_time[et] if timed else None
            time = none.to(edge_time.dtype) if timed else None
            with batch_scope(0, 0):  # no column: nothing drawn, the ordinal thrown away
                hit = relation_temporal_sample(self.graph[et], none, none, time, edge_time)
            self.empties[(et, timed)] = hit
        return hit

    # ------------------------------------------------------------------ the loader's runs
    def _seeds(self, positions: torch.Tensor) -> dict:
        return {self.batches.input_type: self.input_nodes[positions].to(self.graph.device)}

    def _seed_time(self, seeds: dict, positions: torch.Tensor) -> dict | None:
        """A mini-batch's seeds' times (temporal), as ``HeteroBatches`` reads them."""
        given = None
        if self.input_time is not None:
            given = {self.batches.input_type: self.input_time[positions]}
        times = self.batches.spec.seed_time(seeds, given)
        return None if times is None else {t: v.to(self.graph.device) for t, v in times.items()}

    def _draw_all(self, parts: list, epoch_seed: int, first: int) -> list:
        seeds = [self._seeds(p) for p in parts]
        if self.batches.spec is None:
            return self.draws(seeds, epoch_seed, first)
        times = [self._seed_time(s, p) for s, p in zip(seeds, parts)]
        return self._disjoint_draws(seeds, times, epoch_seed, first)

    def seed_draws(self, seeds: list, times: list, epoch_seed: int, first: int) -> list:
        """The draws of mini-batches ``first, first + 1, ...`` of the seed dicts ``seeds``
        (``{node_type: ids}`` each, any device; ids checked here) at times ``times`` (a
        ``{node_type: times}`` each, or None): what ``HeteroBatches.draw`` gives each alone
        in its ``batch_scope`` (its ``draws=`` argument), one run per (hop, edge type).

        Examples
        --------
        >>> import torch
        >>> import gsample.pyg
        >>> from gsample.interop.pyg.hetero_loader import HeteroBatches
        >>> data = gsample.pyg.users_movies()          # 100 users rate 40 movies
        >>> batches = HeteroBatches(data, [10, 5])
        >>> batches.input_type = "movie"                   # a node loader's seeds: movies
        >>> sb = HeteroSuperBatches(batches)
        >>> p0, p1 = torch.tensor([0, 1]), torch.tensor([2])
        >>> draws = sb.seed_draws([{"movie": p0}, {"movie": p1}], [None, None], 0, 0)
        >>> len(draws)                                 # one per mini-batch
        2
        """
        H = self.graph
        checked = [
            {
                t: V.ids(ids.to(H.device), f"seeds[{t!r}]", H.num_nodes(t), H.device)
                for t, ids in s.items()
            }
            for s in seeds
        ]
        if self.batches.spec is None:
            return self.draws(checked, epoch_seed, first)
        spec = self.batches.spec
        timed = []
        for s, t in zip(checked, times):
            t = spec.seed_time(s, t)
            timed.append(None if t is None else {k: v.to(H.device) for k, v in t.items()})
        return self._disjoint_draws(checked, timed, epoch_seed, first)

    def measure_seeds(self, seeds: dict, times, epoch_seed: int, index: int) -> tuple:
        """Mini-batch ``index`` alone (:meth:`seed_draws`): ``(its draws, its estimated
        bytes)``."""
        return self._measured(lambda: self.seed_draws([seeds], [times], epoch_seed, index))

    def _outputs(self, parts: list, draws: list) -> list:
        outs = []
        for p, d in zip(parts, draws):
            input_id = p if self.input_id is None else self.input_id[p]
            seed_time = None if self.input_time is None else self.input_time[p]
            outs.append(
                self.batches.sample_nodes(self.input_nodes[p], input_id, seed_time, draws=d)
            )
        return outs

    def run(self, parts: list, epoch_seed: int, first: int) -> list:
        """The ``HeteroSamplerOutput`` of mini-batches ``first, first + 1, ...`` (input
        positions ``parts``, a LongTensor each), drawn in one run per (hop, edge type)."""
        return self._outputs(parts, self._draw_all(parts, epoch_seed, first))

    def measure(self, positions: torch.Tensor, epoch_seed: int, index: int) -> tuple:
        """Mini-batch ``index`` alone: ``(its output, its estimated bytes)``: on a GPU the
        peak memory its run allocated, on the CPU the bytes of its draws."""
        draws, nbytes = self._measured(lambda: self._draw_all([positions], epoch_seed, index))
        (out,) = self._outputs([positions], [draws])
        return out, nbytes

    def _measured(self, draw) -> tuple:
        """``(draw()'s first mini-batch's draws, their estimated bytes)``: on a GPU the peak
        memory the run allocated, on the CPU the bytes of the draws."""
        cuda = self.graph.device.type == "cuda"
        if cuda:
            torch.cuda.reset_peak_memory_stats(self.graph.device)
            begin = torch.cuda.memory_allocated(self.graph.device)
        (draws,) = draw()
        if cuda:
            nbytes = torch.cuda.max_memory_allocated(self.graph.device) - begin
        else:
            seen = {t.untyped_storage().data_ptr(): t for t in tensors(draws)}
            nbytes = sum(t.untyped_storage().nbytes() for t in seen.values())
        return draws, nbytes


def disjoint_by_position(
    A,
    pos,
    nodes,
    slots,
    times=None,
    edge_time=None,
    k: int = -1,
    replace: bool = False,
    weighted: bool = False,
    strategy: str = "uniform",
):
    """One (hop, edge type) of ``gs.HeteroGraph.sample_disjoint``
    (:func:`~gsample.hetero.sampling.relation_temporal_sample`) of the columns at positions
    ``pos`` of the tables ``nodes`` (each column's node), ``slots`` (its seed's slot, which
    keys its draws) and ``times`` (its seed's time): the per-mini-batch input of a
    super-batch is one tensor, the positions (ids of ``A`` padded to the tables' size,
    :func:`padded`).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A = gs.datasets.rmat(100, 500, seed=0)
    >>> nodes, slots = torch.tensor([3, 5, 7]), torch.tensor([0, 1, 2])   # the tables
    >>> s = gs.compile(disjoint_by_position)(A, torch.arange(3), nodes, slots, k=2)
    >>> s.shape                                        # one column per position
    (100, 3)
    """
    return relation_temporal_sample(
        A,
        nodes[pos],
        slots[pos],
        None if times is None else times[pos],
        edge_time,
        k=k,
        replace=replace,
        weighted=weighted,
        strategy=strategy,
    )


_DISJOINT_STEP = gs_compile(disjoint_by_position)
#: the disjoint steps' tables' least size (columns): fewer rebuilds as frontiers grow
_MIN_TABLE = 1024


__all__ = ["HeteroSuperBatches", "disjoint_by_position"]
