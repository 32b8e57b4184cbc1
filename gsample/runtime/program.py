"""A lowered program and how it runs.

A :class:`Program` is a linear list of :class:`Instruction`\\ s (its steps) over numbered
value slots: each step calls a resolved function (a backend's implementation of an op on one
layout, a check, dense user code, a trim) on the values of some slots and stores its result
in one; slots are released after their last use. Running it (:func:`run`) fills the
argument, constant and random-key slots, then calls the steps in order: no per-node
dictionaries, op-table lookups or re-validation.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from gsample.base import validate as V
from gsample.base.random import (
    BatchKeys,
    DeviceKey,
    KeyRange,
    combine,
    key_prefix,
    signed,
    stream_state,
)
from gsample.base.readback import READ_BACK
from gsample.formats.bounded import COPY_OUT
from gsample.ir import Graph
from gsample.runtime.options import Options


@dataclass
class Instruction:
    """One step of a program: ``env[out] = fn(*[env[i] for i in args])``. (Not
    ``gsample.ir.Step``, the stage of the sampling model an op belongs to.)

    ``out`` may be a tuple of slots (the step returns that many values); ``release`` lists
    the slots whose last reader this step is; ``label`` says what runs (for ``gs.explain``).
    """

    fn: Callable
    args: tuple
    out: Any
    label: str
    release: tuple = ()
    node: Any = None
    syncs: bool = False  # the step may read a size or flag back to the host
    graph_safe: bool = False  # reads nothing back (a sync-free kernel, a device part, a
    # deferred check, capturable dense code): a graph may hold it
    device_part: bool = False  # the first phase of a two-phase implementation
    trim: bool = False  # the output's trim: a CUDA graph right before it packs
    # what it trims (cuda_graphs.Region)
    check: bool = False  # a data check: converts what it checks (a caller's list
    # or host tensor is copied; cuda_graphs.regions)


@dataclass
class Program:
    """A compiled sampler's program for one cache key, lowered for one backend.

    Attributes
    ----------
    graph : Graph
        The optimised IR it was lowered from.
    backend : str
    options : Options
    steps : list of Instruction
    env : list
        The slot template: constants filled in, everything else None.
    inputs : tuple of (name, slot, is_matrix)
        Where each argument goes (a matrix as its CSC).
    keys : tuple of (slot, ordinal, batches, on_device, count)
        Random-op key slots: the op ordinal of each random op, its super-batch shape
        ``(N, n)`` or None, whether its implementation takes a
        :class:`~gsample.base.random.DeviceKey` (all of a call's are copied to the device at once),
        and, for an op taking ``count`` ordinals from ``ordinal`` on (a fused walk), that
        count (the slot then holds their :class:`~gsample.base.random.KeyRange`; 0: one key).
    output : callable
        ``env -> the returned structure``.
    num_random : int
        Op ordinals the program takes from the random stream per call.
    deferred : bool
        Data checks on GPU tensors are deferred to the program's final read-back.
    slot_names : list
        A name per slot (for printing).
    regions : list of cuda_graphs.Region
        The runs of steps captured as CUDA graphs (a node-wise sampler has one, a
        layer-wise one one per layer), in program order.
    """

    graph: Graph
    backend: str
    options: Options
    steps: list = field(default_factory=list)
    env: list = field(default_factory=list)
    inputs: tuple = ()
    keys: tuple = ()
    output: Callable | None = None
    num_random: int = 0
    deferred: bool = False
    slot_names: list = field(default_factory=list)
    device: str = "cpu"
    regions: list = field(default_factory=list)  # steps captured as CUDA graphs, in order
    graph_slots: frozenset = frozenset()  # slots of values of the graph alone (read in place)
    key_buffers: Any = None  # (pinned, its numpy view, device, event) of device keys
    key_views: Any = None  # per key slot: (its first row, its rows of the device buffer)
    keys_in_region: bool = False  # the first region copies the device keys (none read before)
    lanes: dict = field(default_factory=dict, repr=False)  # lane number (>= 1) -> program
    busy: set = field(default_factory=set, repr=False)  # lanes a call in flight holds
    chunks: dict = field(default_factory=dict, repr=False)  # lane numbers -> the
    # cuda_graphs.ChunkGraphs of a runtime.chunk.Chunk holding them (kept between epochs)

    def acquire(self) -> tuple:
        """``(number, program)`` of a lane no call in flight holds, held until
        :meth:`release`: lane 0 is this program; another (made on first use) has the same
        steps with CUDA graphs and a device key buffer of its own, since a call paused in
        :func:`start` keeps values in its lane's (two calls in flight, or a direct call
        while a loader's is paused, or another thread's call)."""
        with _LANE_LOCK:
            number = 0
            while number in self.busy:
                number += 1
            self.busy.add(number)
            if number == 0:
                return 0, self
            lane = self.lanes.get(number)
            if lane is None:
                lane = self.lanes[number] = replace(
                    self, key_buffers=None, key_views=None, lanes={}, busy=set(), chunks={}
                )
                lane.regions = [r.fresh() for r in self.regions]
            return number, lane

    def release(self, number: int) -> None:
        """Give lane ``number`` back (see :meth:`acquire`)."""
        self.busy.discard(number)

    @property
    def region(self):
        """The longest of :attr:`regions` (a ``cuda_graphs.Region``), or None."""
        return max(self.regions, key=lambda r: r.stop - r.start, default=None)

    @property
    def pauses(self) -> int:
        """Where a call of it pauses (:func:`start`) on a GPU: after each CUDA graph, or,
        without graphs, before each step that may read back (but the first); on the CPU,
        nowhere (0)."""
        if not str(self.device).startswith("cuda"):
            return 0
        if self.deferred and self.regions:
            return len(self.regions)
        return sum(s.syncs for s in self.steps[1:])

    @property
    def one_region(self) -> bool:
        """Whether a call pauses once, after its one CUDA graph region (a node-wise sampler
        on a GPU): :func:`launch` and :func:`land` make its two halves."""
        return self.deferred and len(self.regions) == 1 and str(self.device).startswith("cuda")

    @functools.cached_property
    def settles(self) -> int | None:
        """Where a one-region program's call has read back all it will before its end: the
        index after its last step past the region that may read back (``Instruction.syncs``), but
        for its final step, when any (a super-batch's bounds, between its trims and the
        split of its outputs); else None. The steps after it (host work, the final
        read-back of what the graph copied to the host itself) never wait for device work
        queued after the call's: :func:`settle` runs the steps before it."""
        if not self.one_region:
            return None
        stop = self.regions[0].stop
        last = max(
            (i for i in range(stop, len(self.steps) - 1) if self.steps[i].syncs), default=None
        )
        return None if last is None else last + 1

    @property
    def num_syncs(self) -> int:
        """Steps that may read back to the host (an upper count per call)."""
        return sum(s.syncs for s in self.steps)

    def format(self) -> str:
        """One line per step: ``[i] outputs = label(arguments)  frees ...``."""

        def name(i):
            return f"${self.slot_names[i]}"

        lines = [
            f"lowered program: {len(self.steps)} steps, {len(self.env)} slots, backend "
            f"{self.backend!r}, {self.num_syncs} step(s) that may read back to the host"
            f"{', checks deferred to the end' if self.deferred else ''}"
        ]
        for name_, slot, matrix in self.inputs:
            lines.append(f"  in  {name(slot)} = argument {name_!r}" + (" (CSC)" if matrix else ""))
        for slot, ordinal, batches, on_device, count in self.keys:
            what = (
                f"op keys of ordinals {ordinal}..{ordinal + count - 1}"
                if count
                else f"op key of ordinal {ordinal}"
            )
            lines.append(
                f"  key {name(slot)} = {what}"
                + (f" for {batches[0]} mini-batches" if batches else "")
                + (" (on the device)" if on_device else "")
            )
        for r in self.regions:
            lines.append(
                f"  steps [{r.start}] .. [{r.stop - 1}]: one CUDA graph per argument "
                "shape, replayed from the third call on"
            )
        for i, s in enumerate(self.steps):
            outs = s.out if isinstance(s.out, tuple) else (s.out,)
            lhs = ", ".join(name(o) for o in outs)
            args = ", ".join(
                name(a) if self.env[a] is None else _const(self.env[a]) for a in s.args
            )
            tail = f"   frees {', '.join(name(r) for r in s.release)}" if s.release else ""
            sync = "   [reads back]" if s.syncs else ""
            lines.append(f"  [{i}] {lhs} = {s.label}({args}){sync}{tail}")
        return "\n".join(lines)


_LANE_LOCK = threading.Lock()


def _const(value) -> str:
    text = repr(value) if not hasattr(value, "shape") else f"tensor{tuple(value.shape)}"
    return text if len(text) <= 24 else text[:21] + "..."


def run(program: Program, args: dict, observe: Callable | None = None):
    """Run ``program`` on ``args`` (``name -> gs.Matrix or tensor``) and return its output.

    Random op ``i`` draws with op ordinal ``stream.ordinal + i``; the stream then advances
    by ``program.num_random``, as the eager program would (a call that raises gives them
    back: it drew nothing the caller sees). ``observe(node, value)``, when
    given, is called after each step (the loader's memory estimate; ``GSAMPLE_DEBUG=3``).

    What :func:`start` does, without its generators where a call made alone would not
    pause anyway (a CPU program, or a GPU one whose checks are not deferred, whose pauses
    :func:`finish` would only resume; or one with a single CUDA graph region: its
    :func:`launch` and :func:`land`): a call one mini-batch at a time is on the host's path.
    """
    if program.deferred and not (program.one_region and observe is None):
        return finish(start(program, args, observe))
    number, lane = program.acquire()
    try:
        stream = stream_state()
        seed, base, batch = stream.seed, stream.ordinal, stream.batch_index
        stream.ordinal += lane.num_random
        try:
            if not lane.deferred:
                env = _bind(lane, args, seed, base, batch, False)[0]
                _steps(lane.steps, env, observe)
                return lane.output(env, ())
            env, keys = _bind(lane, args, seed, base, batch, lane.keys_in_region)
            return land(_launch(lane, env, keys))
        except Exception:
            # as _start: a call that raises gives its ordinals back
            if stream.ordinal == base + lane.num_random:
                stream.ordinal = base
            raise
    finally:
        program.release(number)


def finish(calls):
    """The return value of a generator of :func:`start`'s kind, run to its end without
    pausing (a call made alone)."""
    try:
        while True:
            next(calls)
    except StopIteration as done:
        return done.value


def start(program: Program, args: dict, observe: Callable | None = None):
    """:func:`run` as a generator that pauses where the host would wait for the device:
    after each CUDA graph's launch (before the read-back of its sizes) and, without
    graphs, before each step that may read back. Its return value (``StopIteration.value``)
    is the program's output. Everything that reads gsample's random stream runs before the
    first pause. Each call holds a lane of the program (:meth:`Program.acquire`) until it
    ends: calls paused in turn (``gsample.runtime.overlap``, each in a context of its own)
    never share CUDA graphs or key buffers.
    """
    number, lane = program.acquire()
    try:
        return (yield from _start(lane, args, observe))
    finally:
        program.release(number)


def _start(program: Program, args: dict, observe):
    stream = stream_state()
    seed, base, batch = stream.seed, stream.ordinal, stream.batch_index
    stream.ordinal += program.num_random
    try:
        return (yield from _call(program, args, observe, seed, base, batch))
    except Exception:
        # a call that raises (a bad argument's check) returns no sample, so it gives its
        # ordinals back, unless a call started after it has taken more: the next call draws
        # what it would have drawn had the failed one not been made
        if stream.ordinal == base + program.num_random:
            stream.ordinal = base
        raise


def _call(program: Program, args: dict, observe, seed: int, base: int, batch: int):
    """:func:`_start`'s call, drawing with op ordinals from ``base`` on."""
    # the keys' copy to the device: done by the first region (its graph copies them on
    # replay) where no step before it reads them, else now
    in_region = program.keys_in_region and program.deferred and observe is None
    env, keys = _bind(program, args, seed, base, batch, in_region)
    if not program.deferred:
        yield from _paused_steps(program, env, observe)
        return program.output(env, ())
    if program.one_region and observe is None:  # one pause: a node-wise sampler
        flight = _launch(program, env, keys)
        yield  # the graph is queued: its read-back comes next
        return land(flight)
    with V.deferred():
        if not program.regions or observe is not None:
            yield from _paused_steps(program, env, observe)
            return program.output(env, ())
        raw, at, token = set(), 0, None
        try:
            for r in program.regions:
                _steps(program.steps[at : r.start], env, None)
                READ_BACK.set(None)
                in_graph = r.run(env, _run, keys)
                keys = None  # (the first region copied them)
                if in_graph is not None:
                    # the region's results live in the graph's memory, which the next replay
                    # overwrites: the steps after it keep copies of what they take from it,
                    # and results returned as they are (or views of them) are copied at the
                    # output
                    raw = raw | in_graph if raw else in_graph
                    if token is None:
                        token = COPY_OUT.set(True)
                at = r.stop
                yield  # the graph is queued: its read-back comes next
            _steps(program.steps[at:], env, None)
        finally:
            if token is not None:
                COPY_OUT.reset(token)
            READ_BACK.set(None)
        return program.output(env, raw)


def _bind(program: Program, args: dict, seed: int, base: int, batch: int, in_region: bool) -> tuple:
    """``(env, keys)``: the slots of a call filled with its arguments, constants and random
    keys (op ``i`` of the program drawing with op ordinal ``base + i`` of stream ``seed``,
    mini-batch ``batch``); ``keys``: the device keys' ``(pinned, device)`` buffers the first
    region copies (``in_region``), else None (copied already)."""
    env = list(program.env)
    for name, slot, matrix in program.inputs:
        value = args[name]
        env[slot] = value.csc if matrix else value
    device_keys = []
    for slot, ordinal, batches, on_device, count in program.keys:
        if on_device:
            device_keys.append(
                (slot, _prefixes(seed, base + ordinal, max(count, 1)), batches, count)
            )
        elif count:
            env[slot] = KeyRange.of(seed, base + ordinal, count, batch, batches)
        elif batches is None:  # op_key(seed, base + ordinal, batch), its prefix remembered
            env[slot] = combine(_prefix(seed, base + ordinal), batch)
        else:
            env[slot] = BatchKeys.of(seed, base + ordinal, batch, *batches)
    keys = _device_keys(program, env, device_keys, batch, in_region) if device_keys else None
    return env, keys


def launch(program: Program, args: dict, stream: tuple) -> list:
    """The first half of a call of a program that pauses once (one CUDA graph region, the
    read-back of its sizes after it: a node-wise sampler): its checks run and its graph is
    queued (or the region runs eagerly, the first calls of a shape). With :func:`land`, what
    :func:`start` does without a generator, for a caller keeping two calls in flight on two
    lanes of the program it holds (``gsample.runtime.overlap.in_turn``): no context of its
    own per call, nothing of gsample's random stream read or moved.

    Parameters
    ----------
    program : Program
        A lane (:meth:`Program.acquire`) of a program with one region, on a GPU.
    args : dict
        ``name -> gs.Matrix or tensor``, as for :func:`run`.
    stream : tuple of int
        ``(seed, ordinal, batch_index)``: the random stream the call draws from (a loader's
        mini-batch: its epoch's seed, 0 and its index).

    Returns
    -------
    list
        The call in flight, for :func:`settle` and :func:`land`.

    Examples
    --------
    On a GPU, ``lane`` a lane of a node-wise sampler's lowered program (``A`` and
    ``seeds`` on the device):

    >>> flight = launch(lane, {"A": A, "seeds": seeds}, (seed, 0, 7))  # doctest: +SKIP
    >>> out = land(flight)  # the call's result, the stream at (seed, 0, 7)  # doctest: +SKIP
    """
    seed, base, batch = stream
    env, keys = _bind(program, args, seed, base, batch, program.keys_in_region)
    return _launch(program, env, keys)


def _launch(program: Program, env: list, keys) -> list:
    """:func:`launch` once the slots are bound: the checks before the region, then the
    region, under a deferred-check record of the call's own (contextvars set and reset
    here: another call may run between this and :func:`land`)."""
    record, region = V.Deferred(), program.regions[0]
    deferring, reading = V.DEFERRED.set(record), READ_BACK.set(None)
    try:
        _steps(program.steps[: region.start], env, None)
        raw = region.run(env, _run, keys)
        return [program, env, record, raw, READ_BACK.get(), region.stop]
    finally:
        READ_BACK.reset(reading)
        V.DEFERRED.reset(deferring)


def settle(flight: list) -> None:
    """Run a call :func:`launch` started up to where it has read back all it will before its
    end (:attr:`Program.settles`; nothing where None): a caller queues the next call's
    device work after this, so that these read-backs wait for this call's work alone
    (``gsample.runtime.overlap.in_turn``)."""
    program = flight[0]
    if program.settles is not None and flight[5] < program.settles:
        _rest(flight, program.settles)
        flight[5] = program.settles


def land(flight: list):
    """The rest of a call :func:`launch` started (its read-backs, trims and any check's
    error; after :func:`settle`, its host work and final read-back); returns what the call
    returns."""
    program, env, record, raw = flight[:4]
    deferring = V.DEFERRED.set(record)
    try:
        _rest(flight, len(program.steps))
        return program.output(env, raw or ())
    finally:
        V.DEFERRED.reset(deferring)


def _rest(flight: list, stop: int) -> None:
    """The steps of a call in flight from where it is to ``stop``, in its read-back state
    (its deferred checks' record, the replayed graph's scalars, copies out of its memory)."""
    program, env, record, raw, replayed, at = flight
    deferring, reading = V.DEFERRED.set(record), READ_BACK.set(replayed)
    # the graph's results: copied out of its memory by the steps after it and the output
    copying = COPY_OUT.set(True) if raw is not None else None
    try:
        _steps(program.steps[at:stop], env, None)
    finally:
        if copying is not None:
            COPY_OUT.reset(copying)
        READ_BACK.reset(reading)
        V.DEFERRED.reset(deferring)


def _run(steps: list, env: list) -> None:
    """A region's steps, run eagerly or captured (``cuda_graphs.Region.run``'s runner)."""
    _steps(steps, env, None)


def _paused_steps(program: Program, env: list, observe):
    """The program's steps, pausing (a generator) before each step that may read back where
    it pauses at all (:attr:`Program.pauses`: on a GPU; with ``observe``: never)."""
    steps = program.steps
    if observe is not None or not program.pauses:  # (the CPU: no scan of the steps)
        _steps(steps, env, observe)
        return
    at = 0
    for i, s in enumerate(steps):
        if s.syncs and i > at:
            _steps(steps[at:i], env, None)
            at = i
            yield
    _steps(steps[at:], env, None)


def _device_keys(program: Program, env: list, keys: list, batch: int, in_region: bool = False):
    """Every device key of a call in one copy into the program's key buffer, from its pinned
    twin (no synchronisation; the buffers stay in place, so a captured CUDA graph reads the
    new keys where it read the old ones). The copy of the previous call is done: every such
    program ends with a read-back, and the event recorded after the copy is waited for.
    ``keys``: per key slot ``(slot, (prefixes, their int64 bits), batches, count)``; a range
    (``count`` ordinals, a fused walk) takes consecutive rows, written at once. With
    ``in_region`` the copy is left to the program's first region: the ``(pinned, device)``
    buffers are returned for its ``Region.run`` (a replayed graph copies them itself, one
    call fewer); else None."""
    bufs = program.key_buffers
    if bufs is None:
        rows = sum(len(p[0]) for _, p, _, _ in keys)
        host = torch.empty(2 * rows, dtype=torch.int64, pin_memory=True)
        dev = torch.empty(2 * rows, dtype=torch.int64, device=program.device)
        bufs = program.key_buffers = (host, host.numpy(), dev, torch.cuda.Event())
        at, views = 0, []
        for _, (raw, _), _, _ in keys:  # each slot's rows of the device buffer
            views.append((at, dev[2 * at : 2 * (at + len(raw))]))
            at += len(raw)
        program.key_views = views
    host, view, dev, done = bufs
    if not program.deferred:  # else the previous call ended with a read-back
        done.synchronize()
    for (at, _), (_, (raw, bits), _, _) in zip(program.key_views, keys):
        if len(raw) == 1:
            view[2 * at], view[2 * at + 1] = bits, batch
        else:
            view[2 * at : 2 * (at + len(raw)) : 2] = bits
            view[2 * at + 1 : 2 * (at + len(raw)) : 2] = batch
    if not in_region:
        dev.copy_(host, non_blocking=True)
    if not program.deferred:
        done.record()
    for (_, rows), (slot, (raw, _), batches, count) in zip(program.key_views, keys):
        copies, n = batches if batches is not None else (1, 0)
        if not count:
            env[slot] = DeviceKey.of(rows, raw[0], batch, copies, n, True)
        else:  # the kernel reads the rows; DeviceKeys only if asked for
            env[slot] = KeyRange(_DeviceKeys(rows, raw, batch, copies, n), rows.view(-1, 2))
    return (host, dev) if in_region else None


class _DeviceKeys(Sequence):
    """The :class:`DeviceKey` of each row of a key range, made when read (a fused walk's
    kernel reads the rows themselves; the torch code asks for the keys)."""

    def __init__(self, rows, prefixes, batch, copies, n):
        self.rows, self.prefixes, self.batch, self.copies, self.n = (
            rows,
            prefixes,
            batch,
            copies,
            n,
        )

    def __len__(self) -> int:
        return len(self.prefixes)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return DeviceKey.of(
            self.rows[2 * i : 2 * i + 2], self.prefixes[i], self.batch, self.copies, self.n, True
        )


_PREFIXES: dict = {}
_PREFIX: dict = {}
_SEEDS: dict = {}


def _prefix(seed: int, ordinal: int) -> int:
    """``key_prefix(seed, ordinal)``, remembered: a loader's mini-batches draw with the
    same ordinals of one epoch's seed (a few per epoch), their batch index alone differing;
    calls made one after another draw with new ordinals of the same seed (its part kept)."""
    hit = _PREFIX.get((seed, ordinal))
    if hit is None:
        if len(_PREFIX) > 4096:
            _PREFIX.clear()
            _SEEDS.clear()
        first = _SEEDS.get(seed)
        if first is None:
            first = _SEEDS[seed] = combine(0, seed)
        # key_prefix(seed, ordinal), its seed's part remembered
        hit = _PREFIX[(seed, ordinal)] = combine(first, ordinal)
    return hit


def _prefixes(seed: int, ordinal: int, count: int) -> tuple:
    """``(key_prefix(seed, o) for the count ordinals from ordinal on, their int64 bits)``:
    a tuple and, for a range, a numpy array (a single key's bits: an int); remembered (a few
    per epoch)."""
    hit = _PREFIXES.get((seed, ordinal, count))
    if hit is None:
        if len(_PREFIXES) > 4096:
            _PREFIXES.clear()
        raw = tuple(key_prefix(seed, ordinal + i) for i in range(count))
        bits = signed(raw[0]) if count == 1 else np.array([signed(p) for p in raw], dtype=np.int64)
        hit = _PREFIXES[(seed, ordinal, count)] = (raw, bits)
    return hit


def _steps(steps: list, env: list, observe) -> None:
    if observe is None:
        for s in steps:
            out = s.out
            if out.__class__ is int:
                env[out] = s.fn(*[env[i] for i in s.args])
            else:
                for o, v in zip(out, s.fn(*[env[i] for i in s.args])):
                    env[o] = v
            for r in s.release:
                env[r] = None
        return
    for s in steps:
        value = s.fn(*[env[i] for i in s.args])
        outs = (s.out,) if isinstance(s.out, int) else s.out
        values = (value,) if isinstance(s.out, int) else value
        for o, v in zip(outs, values):
            env[o] = v
        observe(s.node, value)
        for r in s.release:
            env[r] = None
