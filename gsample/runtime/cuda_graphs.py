"""Capturing the sync-free part of a program as a CUDA graph, and replaying it.

A lowered program's runs of steps that never read back to the host (sync-free
implementations: every size stays on the device; the first phase of a two-phase op, which
ends where its sizes are read; dense user code known to be elementwise or a reduction) are
its *regions*: a node-wise sampler has one, a layer-wise one one per layer. With
``Options(cuda_graphs=True)`` on a GPU, the first call of a given shape runs a region
eagerly (it compiles the kernels and allocates the scratch they keep), the second captures
it into a ``torch.cuda.CUDAGraph`` and every later call replays it: one launch instead of a
Python call, allocations and a launch per kernel.

What changes between calls goes into the capture's static buffers before a replay: the
region's tensor inputs (the converted seeds, any tensor computed before it; a frontier in a
bounded buffer, captured with a buffer of a power-of-two size so that frontiers of varying
bounds share a few graphs) are copied in, and so are the random keys
(``gsample.base.random.DeviceKey``: the kernels read their keys from the device). Matrices (the
graph, values cached per graph, tensors of the graph alone such as a cached matrix's
values) must be the very objects (or storage) the graph was captured with, as the kernels
read them in place; another object (or one written in place since) captures again, and a
captured graph keeps its matrices alive (freed, their id and memory could be another
matrix's). Scratch the kernels keep between calls is never
freed while a graph may read it (``backend.cuda.nodewise._bitmaps``). Check flags recorded
during the capture are recorded again at each replay; steps after a replay keep copies of
what they take from the graph's memory (``formats.bounded.COPY_OUT``), and the program's
final read-back copies every result out of it, as the next replay overwrites it. A region
right before that read-back packs the results it trims at its end (``kernels/pack.cu``: the
used part of each buffer, one after another), so that, once the counts are read, that copy
is one copy of the packed buffer split into views (``formats.replayed.ReplayedTrim``, planned
once per graph).

Nothing is captured where PyTorch cannot capture (its caching allocator off:
``PYTORCH_NO_CUDA_MEMORY_CACHING=1`` allocates with ``cudaMalloc``, which a capture
refuses) or where ``GSAMPLE_CUDA_GRAPHS=0`` says so (``scripts/memcheck.py`` sets it with
``cudaMallocAsync``, whose graph allocations compute-sanitizer reports as out of bounds even
for plain PyTorch code); the region then runs eagerly, drawing the same samples.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import os
import threading
from dataclasses import dataclass, field, replace

import torch

from gsample.backend import hook
from gsample.base import validate as V
from gsample.base.random import DeviceKey
from gsample.base.readback import READ_BACK, NotCapturable, current_stream
from gsample.formats.bounded import (
    Bounded,
    BoundedIds,
    PendingSizes,
    copy_all,
    counts,
    trim_parts,
)
from gsample.formats.csc import CSC
from gsample.formats.replayed import Replayed, counted, pack_groups, packable
from gsample.ir import Kind, Op
from gsample.runtime.caller_code import CALLER_CODE

_CUDA = torch.device("cuda")

#: graphs kept per region (argument shapes; a new one past this runs eagerly)
MAX_GRAPHS = 8


def enabled() -> bool:
    """Whether regions may be captured in this process (see the module's docstring)."""
    return (
        torch.cuda.is_available()
        and os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING", "0") != "1"
        and os.environ.get("GSAMPLE_CUDA_GRAPHS", "1") != "0"
    )


#: held while a graph is captured; the pipelined DataLoader's gathering thread holds it
#: while it gathers (its eager ops read sizes back, which CUDA refuses while another thread
#: captures: ``cudaErrorStreamCaptureUnsupported``)
CAPTURE_LOCK = threading.Lock()


#: what an op's tuple of results holds (a tuple of attributes, such as ``batches``, holds
#: none: keyed as the same object every call)
_DATA = (torch.Tensor, CSC, *Bounded)


def regions(program) -> list:
    """``[(start, stop), ...]``: every run of sync-free steps of the program
    (``Instruction.graph_safe``; at least two, or a two-phase op's device part) that reads no
    matrix made by an earlier step (only the graph and values cached per graph, which stay
    the same objects from call to call), in order. A layer-wise sampler has one per layer:
    its read-back of the layer's sizes ends each."""

    made_by = {}
    for s in program.steps:
        for o in (s.out,) if isinstance(s.out, int) else s.out:
            made_by[o] = s

    def fresh_matrix(slot, start):
        """Whether ``slot`` holds a matrix (or a tuple of results) a step before ``start``
        made (a new object each call, which a graph cannot read in place). A step with one
        output holds its node's value; checks (several outputs) hold the tensors they
        checked."""
        s = made_by.get(slot)
        return (
            s is not None
            and isinstance(s.out, int)
            and program.steps.index(s) < start
            and s.node is not None
            and s.node.kind in (Kind.MATRIX, Kind.TUPLE)
            and s.node.op is not Op.CACHED
        )

    runs, start = [], None
    for i, s in enumerate(program.steps):
        if s.graph_safe:
            begin = i if start is None else start
            if not any(fresh_matrix(a, begin) for a in s.args):
                start = begin
                continue
        if start is not None:
            runs.append((start, i))
        start = None
    if start is not None:
        runs.append((start, len(program.steps)))
    # a run starts after the checks that convert the caller's tensors (which may be on the
    # host, or a list): its graph then replays whatever device the seeds come from. Another
    # step reading an argument stays (a super-batch's encoded seeds, on the device: the
    # graph copies them in; a host tensor is not captured, see Region._key)
    arguments = {slot for _, slot, matrix in program.inputs if not matrix}
    trimmed = []
    for begin, end in runs:
        while (
            begin < end
            and program.steps[begin].check
            and arguments & set(program.steps[begin].args)
        ):
            begin += 1
        trimmed.append((begin, end))
    # one step alone is not worth a graph, unless it is a two-phase op's device part
    return [
        r
        for r in trimmed
        if r[1] - r[0] >= 2 or any(s.device_part for s in program.steps[r[0] : r[1]])
    ]


def bucket(n: int) -> int:
    """The buffer size a bounded input of bound ``n`` is captured with: the next power of
    two (at least 256), so that the varying bounds of a frontier share a few graphs."""
    return max(256, 1 << max(0, int(n) - 1).bit_length())


@dataclass
class _Captured:
    graph: object
    statics: dict  # slot -> the static value the graph reads
    outputs: dict  # slot -> the value the graph leaves there
    failures: list = field(default_factory=list)
    replayed: object = None  # formats.replayed.Replayed: the results' counts and
    # check flags the graph copies to pinned memory
    matrices: list = field(default_factory=list)  # read in place: kept alive (their ids key it)
    storages: frozenset = frozenset()  # of the outputs: what a replay overwrites
    held: tuple = ()  # what the graph reads besides (the pack's descriptions)
    keys: tuple = None  # (pinned, device) keys the graph copies (Region.run)


class Region:
    """The capturable steps ``[start, stop)`` of a program, and its captured graphs."""

    def __init__(self, program, start: int, stop: int):
        self.steps = program.steps[start:stop]
        self.start, self.stop = start, stop
        made = {o for s in self.steps for o in ((s.out,) if isinstance(s.out, int) else s.out)}
        self.inputs = sorted({a for s in self.steps for a in s.args} - made)
        self.outputs = sorted(made)
        # tensors of the graph alone (a cached matrix's values): read in place, as matrices
        self.in_place = set(self.inputs) & set(program.graph_slots)
        # results the output's trim takes right after this region: packed by the graph at
        # its end (one copy out of its memory after a replay, formats.replayed.ReplayedTrim)
        after = program.steps[stop] if stop < len(program.steps) else None
        self.packed = (
            tuple(after.args)
            if after is not None and after.trim and after.args and set(after.args) <= made
            else ()
        )
        self.captured: dict = {}
        self.seen: set = set()
        self.refused: set = set()  # keys whose steps read back (run eagerly)
        self.enabled = enabled()

    def fresh(self) -> Region:
        """These steps with no graph captured yet (another lane's, ``Program.acquire``)."""
        other = copy.copy(self)
        other.captured, other.seen, other.refused = {}, set(), set()
        return other

    def _key(self, env: list):
        key = []
        for slot in self.inputs:
            v = env[slot]
            if isinstance(v, torch.Tensor):
                if not v.is_cuda:  # a host tensor's copy cannot be captured
                    return None
                if slot in self.in_place:  # read in place: the same storage, unchanged
                    key.append(("p", v.data_ptr(), v._version, v.shape, v.dtype))
                else:
                    key.append(("t", v.shape, v.dtype, v.device))
            elif isinstance(v, DeviceKey):
                key.append(("k", v.copies, v.num_nodes))
            elif isinstance(v, CSC):
                if slot not in self.in_place:
                    # a matrix an earlier op made (a slice read back): a new object whose
                    # id and storages a later call's may reuse with other sizes: not captured
                    return None
                key.append(("m", id(v), v.indptr.data_ptr(), v.indptr._version, v.rows._version))
            elif isinstance(v, BoundedIds):  # a frontier: its buffer's size bucketed
                key.append(("b", bucket(v.bound), v.data.dtype, v.device))
            elif isinstance(v, Bounded):
                return None  # not captured: a bounded matrix
            elif isinstance(v, tuple) and any(isinstance(x, _DATA) for x in v):
                return None  # an op's results, made afresh each call
            elif isinstance(v, list) or hasattr(v, "__array__"):
                return None  # ids on the host: converted by a copy
            else:
                plain = isinstance(v, (int, float, str, bool, type(None)))
                key.append(("v", type(v).__qualname__, v if plain else id(v)))
        return tuple(key)

    def run(self, env: list, run_steps, keys=None):
        """Run the region on ``env``: replay its graph, capture it, or (the first time for
        this key) run it eagerly. ``keys``: ``(pinned, device)`` buffers of the call's random
        keys to copy to the device first (``runtime.program._device_keys``: a captured graph
        copies them at each replay, so a replayed call makes no copy of its own). Returns the
        storages of its results when they live in a graph's memory (a frozenset), else
        None."""
        key = self._key(env)
        cap = self.captured.get(key) if key is not None else None
        if cap is not None:  # the steady state: a replay
            self._load(cap, env)
            if keys is not None and (cap.keys is None or cap.keys[0] is not keys[0]):
                _copy_keys(keys)  # (captured without this copy)
            cap.graph.replay()
            return self._replayed(cap, env)
        if key is None or not self.enabled or key in self.refused:
            _copy_keys(keys)
            run_steps(self.steps, env)
            return None
        if key not in self.seen or len(self.captured) >= MAX_GRAPHS:
            self.seen.add(key)  # warm-up: kernels compiled, scratch allocated
            _copy_keys(keys)
            run_steps(self.steps, env)
            if self.packed:
                _prepare_pack([env[s] for s in self.packed])
            return None
        with CALLER_CODE.quiet() as quiet:
            if quiet:  # no other thread runs its caller's code (its random ops would fail)
                try:
                    cap = self.captured[key] = self._capture(env, run_steps, keys)
                except NotCapturable:  # an exact fallback: this key runs eagerly
                    self.refused.add(key)
        # refused, or the gate timed out (the key stays seen, not refused: a later call captures)
        if cap is None:
            _copy_keys(keys)
            run_steps(self.steps, env)
            return None
        return self._replayed(cap, env)

    def _replayed(self, cap: _Captured, env: list):
        """After a capture or a replay of ``cap``: its check flags recorded, its results in
        ``env``, the event its read-back waits for recorded."""
        record = V.DEFERRED.get()
        if record is not None:
            record.failures.extend(cap.failures)
        for slot, value in cap.outputs.items():
            env[slot] = value
        if cap.replayed is not None:  # the graph copied them out: read without a copy
            cap.replayed.done.record(current_stream(_CUDA))  # (the current device's)
            READ_BACK.set(cap.replayed)
        return cap.storages

    def _load(self, cap: _Captured, env: list, skip=()) -> None:
        """The call's inputs into ``cap``'s static buffers (but the slots in ``skip``)."""
        for slot, static in cap.statics.items():
            if slot in skip:
                continue
            v = env[slot]
            if isinstance(v, DeviceKey):
                if v.tensor.data_ptr() != static.tensor.data_ptr():  # not the program's own
                    static.tensor.copy_(v.tensor, non_blocking=True)
            elif isinstance(v, BoundedIds):  # the ids, then the count (padding: unspecified)
                static.data[: v.bound].copy_(v.data, non_blocking=True)
                static.count.copy_(v.count, non_blocking=True)
            else:
                static.copy_(v, non_blocking=True)

    def _capture(self, env: list, run_steps, keys=None) -> _Captured:
        statics, work = self._statics(env)
        record = V.DEFERRED.get()
        before = len(record.failures) if record is not None else 0
        graph = torch.cuda.CUDAGraph()
        torch.cuda.current_stream().synchronize()
        desc = self._desc()
        # thread_local: the pipelined DataLoader captures in its sampling thread while the
        # caller's thread trains (allocates, syncs); "global" would refuse those calls there
        with CAPTURE_LOCK, _gc_paused(), torch.cuda.graph(graph, capture_error_mode="thread_local"):
            body = self._body(work, run_steps, keys, record, before, desc)
        cap = self._made(graph, env, work, statics, record, before, body, keys)
        graph.replay()
        return cap

    def _statics(self, env: list, given=None) -> tuple:
        """``(statics, work)``: the static buffers a capture reads the call's inputs from
        (``given``: slot -> a buffer to copy a tensor input into instead of a clone of its
        own, a chunk's row of one buffer for its calls), and ``env`` with them in place."""
        statics = {}
        for slot in self.inputs:
            v = env[slot]
            if isinstance(v, DeviceKey):  # the program's key buffer stays in place
                statics[slot] = v if v.static else replace(v, tensor=v.tensor.clone())
            elif isinstance(v, torch.Tensor) and slot not in self.in_place:
                if given is not None and slot in given:
                    statics[slot] = given[slot].copy_(v)
                else:
                    statics[slot] = v.clone()
            elif isinstance(v, BoundedIds):
                # padding past the bound: node 0, a valid id (as padding may be read)
                data = torch.zeros(bucket(v.bound), dtype=v.data.dtype, device=v.device)
                data[: v.bound].copy_(v.data)
                statics[slot] = BoundedIds(data, v.count.clone())
        work = list(env)
        for slot, static in statics.items():
            work[slot] = static
        return statics, work

    def _desc(self):
        """Pinned room for the packed parts' descriptions (None where nothing is packed)."""
        if not self.packed:
            return None
        return torch.empty(24 * len(self.packed), dtype=torch.int64, pin_memory=True)

    def _body(self, work: list, run_steps, keys, record, before: int, desc, into=None) -> tuple:
        """Inside a capture: the region's steps on ``work`` (its keys copied first), then
        the copy of its scalars to pinned memory and the pack of its trimmed results (in
        buffers ``into`` gives, :func:`_pack`). Returns ``(scalars, pinned, packed, held)``
        for :meth:`_made`."""
        try:
            _copy_keys(keys)  # the graph copies each replay's keys itself
            run_steps(self.steps, work)
        except NotCapturable:  # raised before any read-back: a clean end
            if record is not None:
                del record.failures[before:]
            raise
        # the counts of the bounded results, the sizes a two-phase step's finish reads
        # and the check flags, copied to pinned host memory by the graph itself: the
        # read-back after a replay only waits
        scalars = [t for s in self.outputs if isinstance(work[s], Bounded) for t in counts(work[s])]
        scalars += [
            t for s in self.outputs if isinstance(work[s], PendingSizes) for t in work[s].scalars
        ]
        scalars += [f[0] for f in (record.failures[before:] if record is not None else [])]
        packed, held = (
            _pack([work[s] for s in self.packed], desc, into) if self.packed else (None, ())
        )
        pinned = None
        if scalars:
            pinned = torch.empty(len(scalars), dtype=torch.int64, pin_memory=True)
            pinned.copy_(
                torch.cat([t.reshape(1).to(torch.int64) for t in scalars]), non_blocking=True
            )
        return scalars, pinned, packed, held

    def _made(self, graph, env, work, statics, record, before, body, keys, done=None):
        """The :class:`_Captured` of a capture (``body``: :meth:`_body`'s); the check flags
        it recorded move from ``record`` to it (recorded again at each replay)."""
        scalars, pinned, packed, held = body
        failures = list(record.failures[before:]) if record is not None else []
        if record is not None:
            del record.failures[before:]
        outputs = {s: work[s] for s in self.outputs}
        replayed = (
            None
            if pinned is None
            else Replayed(
                pinned,
                scalars,
                [*outputs.values(), *(f[0] for f in failures)],
                done=done,
                packed=packed,
            )
        )
        return _Captured(
            graph,
            statics,
            outputs,
            failures,
            replayed,
            [env[s] for s in self.inputs if isinstance(env[s], CSC) or s in self.in_place],
            frozenset(p for v in outputs.values() for p in storages(v)),
            held,
            keys,
        )


class _Shared:
    """What the calls of a chunk's graph (:class:`ChunkGraphs`, one key) share: the event
    recorded after each replay, waited for by the first read-back of any of its calls alone
    (the others find it done: one host synchronisation a chunk), and the buffers the calls
    pack their results in (call ``j``'s of a dtype: rows ``j`` of one buffer), copied out of
    the graph's memory at once by the first call's trim after a replay
    (:attr:`~gsample.formats.replayed.Replayed.copied`: one copy a dtype for the chunk, each
    call's pieces views of it)."""

    def __init__(self, calls: int, event=None):
        self.event = torch.cuda.Event() if event is None else event
        self.waited = True
        self.calls = calls
        self.joints: dict = {}  # dtype -> the calls' packed buffers, one after another
        self.where: dict = {}  # (data_ptr, numel, dtype) of a call's buffer -> its start
        self.ends: dict = {}  # dtype -> the end of the rows handed out (in a capture)
        self.copy = None  # dtype -> the joint buffer's copy (this replay's)

    def record(self, stream=None) -> None:
        self.event.record(stream)
        self.waited, self.copy = False, None

    def synchronize(self) -> None:
        if not self.waited:
            self.event.synchronize()
            self.waited = True

    def into(self, j: int):
        """The allocator of call ``j``'s packed buffers (``_pack``'s ``into``), in a capture
        (the calls allocate in order: call ``j``'s rows follow call ``j - 1``'s)."""

        def allocate(dtype, numel, device):
            joint = self.joints.get(dtype)
            if joint is None:  # (every call of a key packs as many entries)
                joint = self.joints[dtype] = torch.empty(
                    self.calls * numel, dtype=dtype, device=device
                )
            # the calls' rows one after another, none overlapping another's (a call packing
            # more than the first, which sized the buffer: a buffer of its own past its end)
            start = self.ends.get(dtype, 0)
            if start + numel > joint.numel():
                return torch.empty(numel, dtype=dtype, device=device)
            self.ends[dtype] = start + numel
            out = joint[start : start + numel]
            self.where[(out.data_ptr(), numel, dtype)] = start
            return out

        return allocate

    def copied(self, buffer: torch.Tensor) -> torch.Tensor:
        """``buffer`` (a call's packed buffer) as a view of this replay's copy of them all."""
        start = self.where.get((buffer.data_ptr(), buffer.numel(), buffer.dtype))
        if start is None:
            return buffer.clone()
        if self.copy is None:
            self.copy = {dtype: joint.clone() for dtype, joint in self.joints.items()}
        return self.copy[buffer.dtype][start : start + buffer.numel()]


@dataclass
class _Chunked:
    graph: object
    calls: list  # per call, its _Captured (graph: the chunk's)
    stacked: dict  # slot -> a static buffer (k, ...) whose row j is call j's input
    shared: _Shared  # the calls' event and packed buffers


class ChunkGraphs:
    """Several calls of one region (the same steps; each call on a lane of its own, with
    its own static inputs, results, key buffer and check flags) captured one after the
    other into one CUDA graph: one replay runs them all, their per-call tensor inputs (the
    seeds) are loaded with one copy (``torch.stack`` into a buffer whose rows are the
    calls' static inputs), their read-backs wait for one event and their packed results are
    copied out of the graph's memory in one copy a dtype (:class:`_Shared`).

    Each call draws what it draws alone: its steps, keys and inputs are those of its own
    lane's call, only captured next to the others'. The life of a key (the calls' argument
    shapes, :meth:`Region._key`, the same for every call) is a region's: run eagerly the
    first time (a warm-up), captured the second (under :data:`CALLER_CODE`'s gate; where
    the gate times out, eagerly again), replayed from then on; refused (eager from then
    on) where a step cannot be captured or the capture runs out of memory.

    Parameters
    ----------
    regions : list of Region
        The region of each lane (``Program.acquire``), in the order the calls use them.
    """

    def __init__(self, regions: list):
        self.regions = regions
        self.captured: dict = {}
        self.seen: set = set()
        self.refused: set = set()
        self.enabled = enabled()

    def run(self, envs: list, records: list, keys: list, run_steps) -> list:
        """Run the region of call ``j`` on ``envs[j]`` for each call (at most
        ``len(regions)``), its check flags recorded in ``records[j]`` (a
        ``validate.Deferred``), ``keys[j]`` its key buffers' ``(pinned, device)`` pair (or
        None: copied already). Returns per call ``(storages, replayed)``: the storages of its
        results where they live in the chunk's graph memory (else None) and its
        ``formats.replayed.Replayed`` (or None), as a region's call leaves them
        (:meth:`Region.run`, ``READ_BACK``)."""
        n = len(envs)
        regions = self.regions[:n]
        first = regions[0]._key(envs[0])
        same = first is not None and all(
            _alike(regions[0], envs[0], e) or r._key(e) == first
            for r, e in zip(regions[1:], envs[1:])
        )
        key = (n, first) if same else None
        cap = self.captured.get(key) if key is not None else None
        if cap is not None:  # the steady state: one replay
            self._load(cap, envs)
            cap.graph.replay()
            return self._replayed(cap, envs, records)
        if key is None or not self.enabled or key in self.refused:
            return self._eager(envs, records, keys, run_steps)
        if key not in self.seen or len(self.captured) >= MAX_GRAPHS:
            self.seen.add(key)  # warm-up: kernels compiled, scratch allocated
            return self._eager(envs, records, keys, run_steps, prepare=True)
        with CALLER_CODE.quiet() as quiet:
            if quiet:  # no other thread runs its caller's code (its random ops would fail)
                try:
                    cap = self.captured[key] = self._capture(envs, records, keys, run_steps)
                except (NotCapturable, torch.cuda.OutOfMemoryError):
                    self.refused.add(key)  # an exact fallback: these calls run eagerly
        if cap is None:
            return self._eager(envs, records, keys, run_steps)
        return self._replayed(cap, envs, records)

    def _eager(self, envs, records, keys, run_steps, prepare=False) -> list:
        region = self.regions[0]
        for env, record, k in zip(envs, records, keys):
            token = V.DEFERRED.set(record)
            try:
                _copy_keys(k)
                run_steps(region.steps, env)
            finally:
                V.DEFERRED.reset(token)
        if prepare and region.packed:
            _prepare_pack([envs[0][s] for s in region.packed])
        return [(None, None)] * len(envs)

    def _capture(self, envs, records, keys, run_steps) -> _Chunked:
        n, region = len(envs), self.regions[0]
        stacked = {
            slot: torch.empty((n, *v.shape), dtype=v.dtype, device=v.device)
            for slot in region.inputs
            if isinstance(v := envs[0][slot], torch.Tensor) and slot not in region.in_place
        }
        made = [
            r._statics(env, {slot: buf[j] for slot, buf in stacked.items()})
            for j, (r, env) in enumerate(zip(self.regions, envs))
        ]
        befores = [len(record.failures) for record in records]
        descs = [r._desc() for r in self.regions[:n]]
        shared = _Shared(n)
        graph = torch.cuda.CUDAGraph()
        torch.cuda.current_stream().synchronize()
        bodies = []
        try:
            with (
                CAPTURE_LOCK,
                _gc_paused(),
                torch.cuda.graph(graph, capture_error_mode="thread_local"),
            ):
                for j in range(n):
                    token = V.DEFERRED.set(records[j])
                    try:
                        bodies.append(
                            self.regions[j]._body(
                                made[j][1],
                                run_steps,
                                keys[j],
                                records[j],
                                befores[j],
                                descs[j],
                                shared.into(j),
                            )
                        )
                    finally:
                        V.DEFERRED.reset(token)
        except BaseException:
            for record, before in zip(records, befores):  # no call keeps a captured flag
                del record.failures[before:]
            raise
        calls = [
            self.regions[j]._made(
                graph,
                envs[j],
                made[j][1],
                made[j][0],
                records[j],
                befores[j],
                bodies[j],
                keys[j],
                done=shared,
            )
            for j in range(n)
        ]
        for call in calls:
            if call.replayed is not None:
                call.replayed.copied = shared.copied
        graph.replay()
        return _Chunked(graph, calls, stacked, shared)

    def _load(self, cap: _Chunked, envs: list) -> None:
        for slot, buf in cap.stacked.items():  # the calls' seeds: one copy
            torch.stack([env[slot] for env in envs], out=buf)
        for r, call, env in zip(self.regions, cap.calls, envs):
            r._load(call, env, cap.stacked)

    def _replayed(self, cap: _Chunked, envs: list, records: list) -> list:
        cap.shared.record(current_stream(_CUDA))
        out = []
        for call, env, record in zip(cap.calls, envs, records):
            record.failures.extend(call.failures)
            for slot, value in call.outputs.items():
                env[slot] = value
            out.append((call.storages, call.replayed))
        return out


def _alike(region: Region, env: list, other: list) -> bool:
    """Whether ``other``'s key is ``env``'s (:meth:`Region._key`) for sure, without making
    it: each input the very same object, or a tensor not read in place of the same shape,
    dtype and device, or a device key of the same shape (a chunk's calls share their
    constants and matrices; their seeds and keys are their own). False: not known so (the
    keys are then compared)."""
    for slot in region.inputs:
        a, b = env[slot], other[slot]
        if a is b:
            continue
        if a.__class__ is not b.__class__:
            return False
        if isinstance(a, torch.Tensor):
            if slot in region.in_place:
                return False
            if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
                return False
        elif isinstance(a, DeviceKey):
            if (a.copies, a.num_nodes) != (b.copies, b.num_nodes):
                return False
        else:
            return False
    return True


def _pack(values: list, desc, into=None) -> tuple:
    """Inside a capture: ``values`` (the results the output's trim takes) packed by the
    graph, each :func:`~gsample.formats.replayed.pack_groups` group's used prefixes one after
    another in a buffer of its own. Returns ``((values, buffers), held)``: the first for
    :class:`~gsample.formats.replayed.Replayed` (None where they cannot be packed), then what
    the graph reads and must outlive it (``desc``, pinned, holds the parts' descriptions,
    which each replay copies to the device). ``into(dtype, numel, device)``: where a group is
    packed (default: a buffer of its own)."""
    parts = counted(values, trim_parts(values)[0])
    if not values or not packable(parts) or 4 * len(parts) > desc.numel():
        return None, ()
    pack_parts = hook("pack_parts")  # (once per capture)
    buffers, held, at = [], [desc], 0
    for dtype, idx in pack_groups(parts):
        group = [parts[i] for i in idx]
        numel, device = sum(t.numel() for t, _, _ in group), group[0][0].device
        out = (
            torch.empty(numel, dtype=dtype, device=device)
            if into is None
            else into(dtype, numel, device)
        )
        held.append(pack_parts(group, out, desc[at : at + 4 * len(group)]))
        buffers.append(out)
        at += 4 * len(group)
    return (values, buffers), tuple(held)


def _copy_keys(keys) -> None:
    """A call's keys to the device (``Region.run``'s ``keys`` pair, or nothing for None)."""
    if keys is not None:
        keys[1].copy_(keys[0], non_blocking=True)


def _prepare_pack(values: list) -> None:
    """Load the pack kernels for ``values`` (a warm-up run's results) before a capture."""
    parts = counted(values, trim_parts(values)[0])
    if values and packable(parts) and parts[0][0].is_cuda:
        prepare = hook("prepare_pack")
        for dtype, _ in pack_groups(parts):
            prepare(dtype, parts[0][0].device)


@contextlib.contextmanager
def _gc_paused():
    """Python's cyclic garbage collection paused while a graph is captured (``torch.cuda.graph``
    collects once before it starts): a collection inside a capture may free an earlier
    program's CUDA graph, whose reset is not permitted while a stream captures and
    invalidates the capture (a GraphSAGE capture failed so in the CUDA suite once a
    super-batch's parts became views, which moved when cycles were collected)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def storages(value):
    """The storages (data pointers) of the tensors of a runtime value: a tensor, a CSC, a
    bounded value (a value a replayed graph left is known by them: so are its views)."""
    if isinstance(value, torch.Tensor):
        return (value.untyped_storage().data_ptr(),)
    if isinstance(value, BoundedIds):
        return storages(value.data)
    if isinstance(value, Bounded):
        value = value.csc
    if isinstance(value, CSC):
        return tuple(
            t.untyped_storage().data_ptr()
            for t in (
                value.indptr,
                value.rows,
                value.row_ids,
                value.col_ids,
                value.values,
                value.eids,
            )
            if t is not None
        )
    return ()


def copy_out(value):
    """``value`` (a result the graph's memory holds) copied out: a tensor or CSC in one
    launch per dtype, anything else as it is."""
    return copy_all([value])[0]
