"""Several mini-batches a replay: ``k`` calls of one single-region program in one CUDA graph.

A node-wise sampler's call on a GPU, one mini-batch at a time, is one replay of its CUDA
graph (:mod:`.cuda_graphs`), then the read-back of its sizes: the device is busy for a small
share of the call, the host's fixed work per call (the graph's launch, the copy of the seeds
into the graph's input, the wait for its event, Python) is the rest. A :class:`Chunk` holds
``k`` lanes of the program (:meth:`~gsample.runtime.program.Program.acquire`: each its own
static inputs, results, key buffer and check flags) and captures the calls of ``k``
consecutive mini-batches into one graph (:class:`~gsample.runtime.cuda_graphs.ChunkGraphs`):
one launch, one copy of the ``k`` mini-batches' seeds, one wait, then each call lands as
alone (:func:`~gsample.runtime.program.land`: its trim, its check flags, its output).

Each call is bound as its own (:func:`~gsample.runtime.program.launch`'s binding: its
stream ``(seed, ordinal, batch index)``, its keys in its lane's buffer), so it draws exactly
what it draws one at a time (the determinism contract): the chunk changes where its device
work is launched from, not what it computes. A check flag raised by one call is its own (it
raises at its :func:`land`, naming its argument; the other calls and the next chunk are
untouched).

Only a program that pauses once (:attr:`~gsample.runtime.program.Program.one_region`: one
region, then its read-backs) is chunked; a layer-wise program reads sizes back between its
regions and runs one call at a time (:func:`chunk_size` is 1 for it). :data:`CHUNK` sets the
number of calls (1: off, for an A/B); it is bounded by memory (:meth:`Chunks.limit`: two
chunks in flight, each ``k`` calls' results).
"""

from __future__ import annotations

import dataclasses

import torch

from gsample.base import validate as V
from gsample.base.readback import READ_BACK
from gsample.runtime.cuda_graphs import ChunkGraphs, enabled
from gsample.runtime.program import _bind, _run, _steps

#: calls a chunk holds (mini-batches a replay, one at a time on a GPU); 1 turns chunks off
CHUNK = 8

#: bytes a chunk's call holds per byte of its region's results (:meth:`Chunks.limit`): the
#: results, their packed rows in the chunk's joint buffers, the copy out of those
HELD = 3

#: chunks' graphs a program keeps between epochs (per set of lanes: the two chunks of a
#: loader, of a few chunk sizes); past it the oldest is dropped
MAX_KEPT = 8


def chunk_size(program, k: int | None = None) -> int:
    """How many calls of ``program`` a :class:`Chunk` holds: ``k`` (default :data:`CHUNK`)
    for a program that pauses once (:attr:`Program.one_region`: one CUDA graph region on a
    GPU) where CUDA graphs may be captured (``cuda_graphs.enabled``); else 1 (one call at a
    time).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> @gs.compile
    ... def graphsage(A, seeds):                   # two GraphSAGE layers
    ...     s1 = A[:, seeds].individual_sample(10)
    ...     return [s1, A[:, s1.all_nodes()].individual_sample(5)]
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.arange(8)
    >>> chunk_size(graphsage.lowered(A, seeds))   # CHUNK on a GPU, 1 on the CPU
    1
    """
    k = CHUNK if k is None else int(k)
    if k <= 1 or not program.one_region or not program.options.cuda_graphs:
        return 1
    if not enabled():
        return 1
    return k


class Chunk:
    """Up to ``k`` calls of a one-region program launched together (see the module's
    docstring); its lanes are acquired on the first launch and held until :meth:`release`.

    Parameters
    ----------
    program : Program
        A program with :attr:`~Program.one_region`.
    k : int
        Calls a launch may hold.
    """

    def __init__(self, program, k: int):
        self.program, self.k = program, k
        self.lanes: list = []  # [(number, lane)]
        self.graphs = None  # ChunkGraphs over the lanes' regions
        self.bytes = None  # one call's results (measured by the first launch)

    def launch(self, args: list, streams: list) -> list:
        """Launch the calls ``args[j]`` (``name -> value``, as :func:`launch`'s) drawing from
        ``streams[j]`` (``(seed, ordinal, batch index)``), at most ``k``. Returns per call
        its flight for :func:`~gsample.runtime.program.land` (and ``settle``), in order, or,
        for a call whose steps before the graph raised, the exception (the calls after it
        are not launched)."""
        n = len(args)
        if n > self.k:
            raise ValueError(f"Chunk.launch: {n} calls, the chunk holds {self.k}")
        if not self.lanes:
            self.lanes = [self.program.acquire() for _ in range(self.k)]
            numbers = tuple(number for number, _ in self.lanes)
            # kept with the program: the next epoch's chunk on these lanes replays them
            self.graphs = self.program.chunks.get(numbers)
            if self.graphs is None:
                self.graphs = ChunkGraphs([lane.regions[0] for _, lane in self.lanes])
                kept = self.program.chunks
                while len(kept) >= MAX_KEPT:  # the oldest dropped (a chunk holding it keeps it)
                    del kept[next(iter(kept))]
                kept[numbers] = self.graphs
        region = self.program.regions[0]
        envs, records, keys, failed = [], [], [], None
        reading = READ_BACK.set(None)
        try:
            for (_, lane), a, (seed, base, batch) in zip(self.lanes, args, streams):
                env, key = _bind(lane, a, seed, base, batch, lane.keys_in_region)
                record = V.Deferred()
                token = V.DEFERRED.set(record)
                try:
                    _steps(lane.steps[: region.start], env, None)
                except Exception as error:
                    failed = error
                    break
                finally:
                    V.DEFERRED.reset(token)
                envs.append(env)
                records.append(record)
                keys.append(key)
            made = self.graphs.regions[0]
            if self.bytes is None and envs:  # (storages of the inputs: not the call's own)
                given = {
                    t.untyped_storage().data_ptr()
                    for slot in made.inputs
                    for t in _tensors(envs[0][slot])
                }
            ran = self.graphs.run(envs, records, keys, _run) if envs else []
        finally:
            READ_BACK.reset(reading)
        if self.bytes is None and envs:
            self.bytes = _result_bytes(envs[0], made.outputs, given)
        flights = [
            [lane, env, record, raw, replayed, region.stop]
            for (_, lane), env, record, (raw, replayed) in zip(self.lanes, envs, records, ran)
        ]
        return flights if failed is None else [*flights, failed]

    def release(self) -> None:
        """Give the lanes back (their graphs stay with the program, for the next chunk
        holding the same lanes)."""
        for number, _ in self.lanes:
            self.program.release(number)
        self.lanes, self.graphs = [], None


class Chunks:
    """Two :class:`Chunk` s of a program handed out in turn (one lands while the other's
    graph runs: consecutive chunks never share lanes), and the chunk size they allow.

    Parameters
    ----------
    program : Program
    k : int
        Calls a chunk holds at most (:func:`chunk_size`).
    budget : int, optional
        Bytes the two chunks' results may take; default: half the GPU's free memory, read
        when the first chunk has run.

    Examples
    --------
    On a GPU, ``program`` a lowered program with one region (a node-wise sampler's),
    ``args`` its arguments and ``streams`` the calls' random streams:

    >>> chunks = Chunks(program, chunk_size(program))  # doctest: +SKIP
    >>> try:  # doctest: +SKIP
    ...     flights = chunks.next().launch(args, streams)
    ...     outs = [land(f) for f in flights]
    ... finally:
    ...     chunks.release()
    """

    def __init__(self, program, k: int, budget: int | None = None):
        self.program, self.k, self.budget = program, k, budget
        self.pair = [Chunk(program, k), Chunk(program, k)]
        self.turn = 1
        self.most, self.bounded = k, False

    def next(self) -> Chunk:
        """The chunk after the one handed out last."""
        self.turn ^= 1
        return self.pair[self.turn]

    def limit(self) -> int:
        """Calls a chunk may hold now: ``k``, bounded once a chunk has run by what two
        chunks' calls hold (one call's result bytes, measured, times :data:`HELD` and
        ``2 k``) within the budget."""
        if not self.bounded:
            measured = next((c.bytes for c in self.pair if c.bytes is not None), None)
            if measured is not None:  # (once)
                self.bounded = True
                budget = self.budget
                if budget is None:
                    device = torch.device(self.program.device)
                    budget = torch.cuda.mem_get_info(device)[0] // 2
                # a replayed call holds its results, their packed rows (the joint buffers)
                # and, once landed, its share of their copy out: three times its results
                self.most = most_calls(self.k, HELD * measured, budget)
        return self.most

    def release(self) -> None:
        """Give every lane back."""
        for chunk in self.pair:
            chunk.release()


def most_calls(k: int, call_bytes: int, budget: int) -> int:
    """Calls a chunk may hold: at most ``k``, and two chunks' results (``2 * calls *
    call_bytes``) within ``budget``; at least 1.

    Examples
    --------
    >>> most_calls(8, 10 << 20, 100 << 20), most_calls(8, 1 << 20, 1 << 30), most_calls(8, 5, 1)
    (5, 8, 1)
    """
    return max(1, min(k, budget // max(2 * call_bytes, 1)))


def _result_bytes(env: list, slots, given: set) -> int:
    """Bytes of the storages of the values in ``slots`` of ``env`` (a call's region
    results), each storage once, but those in ``given`` (the data pointers of its inputs'
    storages: the graph's, the arguments')."""
    seen, total = set(given), 0
    for slot in slots:
        for t in _tensors(env[slot]):
            ptr = t.untyped_storage().data_ptr()
            if ptr not in seen:
                seen.add(ptr)
                total += t.untyped_storage().nbytes()
    return total


def _tensors(value) -> list:
    """The tensors of a runtime value (a tensor, a tuple of results, a CSC, a bounded
    value: dataclasses of tensors)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [t for f in dataclasses.fields(value) for t in _tensors(getattr(value, f.name))]
    return []


__all__ = ["CHUNK", "Chunk", "Chunks", "chunk_size", "most_calls"]
