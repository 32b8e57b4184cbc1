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

    def _load(self, cap: _Captured, env: list) -> None:
        for slot, static in cap.statics.items():
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
        statics = {}
        for slot in self.inputs:
            v = env[slot]
            if isinstance(v, DeviceKey):  # the program's key buffer stays in place
                statics[slot] = v if v.static else replace(v, tensor=v.tensor.clone())
            elif isinstance(v, torch.Tensor) and slot not in self.in_place:
                statics[slot] = v.clone()
            elif isinstance(v, BoundedIds):
                # padding past the bound: node 0, a valid id (as padding may be read)
                data = torch.zeros(bucket(v.bound), dtype=v.data.dtype, device=v.device)
                data[: v.bound].copy_(v.data)
                statics[slot] = BoundedIds(data, v.count.clone())
        work = list(env)
        for slot, static in statics.items():
            work[slot] = static
        record = V.DEFERRED.get()
        before = len(record.failures) if record is not None else 0
        graph = torch.cuda.CUDAGraph()
        torch.cuda.current_stream().synchronize()
        pinned = None
        desc = (
            torch.empty(24 * len(self.packed), dtype=torch.int64, pin_memory=True)
            if self.packed
            else None
        )  # room for the packed parts' descriptions
        # thread_local: the pipelined DataLoader captures in its sampling thread while the
        # caller's thread trains (allocates, syncs); "global" would refuse those calls there
        with CAPTURE_LOCK, _gc_paused(), torch.cuda.graph(graph, capture_error_mode="thread_local"):
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
            scalars = [
                t for s in self.outputs if isinstance(work[s], Bounded) for t in counts(work[s])
            ]
            scalars += [
                t
                for s in self.outputs
                if isinstance(work[s], PendingSizes)
                for t in work[s].scalars
            ]
            scalars += [f[0] for f in (record.failures[before:] if record is not None else [])]
            packed, held = (
                _pack([work[s] for s in self.packed], desc) if self.packed else (None, ())
            )
            if scalars:
                pinned = torch.empty(len(scalars), dtype=torch.int64, pin_memory=True)
                pinned.copy_(
                    torch.cat([t.reshape(1).to(torch.int64) for t in scalars]), non_blocking=True
                )
        failures = list(record.failures[before:]) if record is not None else []
        if record is not None:
            del record.failures[before:]
        outputs = {s: work[s] for s in self.outputs}
        replayed = (
            None
            if pinned is None
            else Replayed(
                pinned, scalars, [*outputs.values(), *(f[0] for f in failures)], packed=packed
            )
        )
        cap = _Captured(
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
        graph.replay()
        return cap


def _pack(values: list, desc) -> tuple:
    """Inside a capture: ``values`` (the results the output's trim takes) packed by the
    graph, each :func:`~gsample.formats.replayed.pack_groups` group's used prefixes one after
    another in a buffer of its own. Returns ``((values, buffers), held)``: the first for
    :class:`~gsample.formats.replayed.Replayed` (None where they cannot be packed), then what
    the graph reads and must outlive it (``desc``, pinned, holds the parts' descriptions,
    which each replay copies to the device)."""
    parts = counted(values, trim_parts(values)[0])
    if not values or not packable(parts) or 4 * len(parts) > desc.numel():
        return None, ()
    pack_parts = hook("pack_parts")  # (once per capture)
    buffers, held, at = [], [desc], 0
    for dtype, idx in pack_groups(parts):
        group = [parts[i] for i in idx]
        out = torch.empty(
            sum(t.numel() for t, _, _ in group), dtype=dtype, device=group[0][0].device
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
