"""The loader's super-batching: ``gs.DataLoader(..., super_batch=N | "auto")`` runs a
sampler's program for N mini-batches at once (:class:`_SuperBatcher`), with the checks of
its options and ``"auto"``'s default memory budget."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import numbers

import numpy as np
import torch

from gsample.base.random import batch_scope


def _super_batch_options(super_batch, memory_budget):
    """Check ``super_batch`` (None, an int >= 1 or "auto") and ``memory_budget``."""
    if super_batch is not None and not (isinstance(super_batch, str) and super_batch == "auto"):
        if _not_int(super_batch):
            raise TypeError(f"super_batch: must be a positive int or 'auto', got {super_batch!r}")
        super_batch = int(super_batch)
        if super_batch < 1:
            raise ValueError(f"super_batch: must be >= 1 (or 'auto'), got {super_batch}")
    if memory_budget is not None:
        if _not_int(memory_budget):
            raise TypeError(f"memory_budget: must be a positive int (bytes), got {memory_budget!r}")
        memory_budget = int(memory_budget)
        if memory_budget < 1:
            raise ValueError(f"memory_budget: must be >= 1 byte, got {memory_budget}")
        if super_batch != "auto":
            raise ValueError(
                "memory_budget: only used with super_batch='auto' (it picks the "
                "largest super-batch that fits)"
            )
    return super_batch, memory_budget


def _not_int(x) -> bool:
    """Whether ``x`` is not an integer (Python or NumPy; bools are not)."""
    return isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Integral)


def _default_budget(device: torch.device) -> int:
    """``"auto"``'s budget when none is given: half the free memory of a GPU; on the CPU, the
    size of a core's L2 cache (2 MiB when unknown), as a super-batch pays there only while
    its values stay in cache (measured: ``python -m gsample.bench --modes super``)."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0] // 2
    try:
        with open("/sys/devices/system/cpu/cpu0/cache/index2/size") as f:
            size = f.read().strip().upper()
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
        return int(size.rstrip("KMG")) * scale
    except (OSError, ValueError):
        return 2 << 20


def _unwrap(fn):
    """``(function, positional args, keyword args)`` of nested ``functools.partial``s."""
    args, kwargs = (), {}
    while isinstance(fn, functools.partial):
        args, kwargs = fn.args + args, {**fn.keywords, **kwargs}
        fn = fn.func
    return fn, args, kwargs


def _tensors(value):
    """Every tensor inside ``value`` (matrices, storage forms, lists, tuples, dicts)."""
    from gsample.matrix.sparse import Matrix

    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, Matrix):
        yield from _tensors(value.csc)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _tensors(getattr(value, f.name))
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)


class _SuperBatcher:
    """A sampler's program, super-batched: runs N mini-batches at once.

    The mini-batches' seeds must be checked node ids (``gs.DataLoader`` checks every seed
    once, when it is made): batch ``b``'s ids become ``b * n + v``, so an unchecked id past
    one batch's end would be a node of the next. Such an id reads and writes nothing out of
    bounds (the kernels guard every id), but it is not reported as the user's id."""

    def __init__(self, A, sampler_fn, seeds: torch.Tensor, fixed_state: bool):
        from gsample.capture.trace import TraceError
        from gsample.compiler.compiled import CompiledSampler, compile

        fn, args, kwargs = _unwrap(sampler_fn)
        # a super-batch replaces the seeds by name and gs.compile traces with every argument
        # passed by name: a *args / **kwargs parameter has no name to pass them by
        try:
            params = inspect.signature(fn.fn if isinstance(fn, CompiledSampler) else fn)
        except (TypeError, ValueError):
            params = None  # (compile names the problem below)
        packed = (
            []
            if params is None
            else [
                p for p in params.parameters.values() if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            ]
        )
        if packed:
            name = getattr(fn, "__name__", type(fn).__name__)
            stars = ", ".join(
                ("*" if p.kind == p.VAR_POSITIONAL else "**") + p.name for p in packed
            )
            raise TypeError(
                f"sampler_fn: super_batch needs a sampler whose parameters are all "
                f"named (e.g. def {name}(A, seeds, fanouts=(25, 10))); {name} "
                f"takes {stars}. Name its parameters, or sample without "
                "super_batch"
            )
        try:
            self.compiled = fn if isinstance(fn, CompiledSampler) else compile(fn)
        except TypeError as e:
            raise TypeError(f"sampler_fn: super_batch needs a function to compile ({e})") from e
        call = (*args, A, seeds)
        try:
            bound = self.compiled.signature.bind(*call, **kwargs)
        except TypeError as e:
            raise TypeError(f"sampler_fn: cannot be called as sampler_fn(A, seeds): {e}") from e
        self.seeds_name = next((k for k, v in bound.arguments.items() if v is seeds), None)
        if self.seeds_name is None:  # e.g. a partial binding a parameter twice
            raise TypeError(
                "sampler_fn: super_batch could not find the parameter that takes "
                "the seeds in sampler_fn(A, seeds)"
            )
        self.args, static, self.num_nodes = self.compiled._split(call, kwargs)
        self.compiled._check_device(self.args)
        self.backend = self.compiled._backend(self.args)
        try:
            self.base = self.compiled._program(self.args, static, self.num_nodes, self.backend)
        except TraceError as e:
            raise ValueError(f"super_batch: the sampler must compile with gs.compile: {e}") from e
        self.fixed_state = fixed_state
        self.compiled_graph_device = A.device
        self.programs: dict = {}
        self._shifts: dict = {}
        self.program(1)  # refusals (state, unsupported code) surface now

    def program(self, copies: int):
        """``(IR, lowered program)`` for ``copies`` mini-batches (built once per count)."""
        if copies not in self.programs:
            from gsample.matrix.sparse import Matrix
            from gsample.passes import optimize
            from gsample.passes.super_batch import super_batch
            from gsample.runtime import lower

            counts = {k: v.num_nodes for k, v in self.args.items() if isinstance(v, Matrix)}
            graph = optimize(
                self.base,
                [super_batch(copies, self.num_nodes, self.seeds_name, self.fixed_state, counts)],
            )
            options = self.compiled.runtime
            device = str(self.compiled_graph_device)
            self.programs[copies] = (
                graph,
                lower(graph, self.backend, options, device) if options.lowered else None,
            )
        return self.programs[copies]

    def run(self, parts: list, epoch_seed: int, first: int, observe=None) -> list:
        """The outputs of mini-batches ``first, first + 1, ...`` (seeds ``parts``);
        ``observe(node, value)`` after each step (:meth:`measure`)."""
        from gsample.runtime.program import finish

        with batch_scope(epoch_seed, first):
            return finish(self.start(parts, observe))

    def start(self, parts: list, observe=None):
        """:meth:`run` as a generator pausing where the host would wait for the device
        (:func:`gsample.runtime.program.start`); its return value is the outputs. Run it
        with the stream at the first mini-batch's (``batch_scope``, or an overlap ``Call``)."""
        from gsample.runtime import interpret
        from gsample.runtime.program import start

        args = self._args(parts)
        graph, program = self.program(len(parts))
        if program is None:
            return _returns(lambda: interpret(graph, args, self.backend))
        return start(program, args, observe)

    def launch(self, parts: list, lane, stream: tuple) -> list:
        """:meth:`start`'s call launched on ``lane`` (a lane of ``self.program(len(parts))``'s
        one-region program) with the random stream at ``stream`` (``(seed, 0, first
        mini-batch)``): :func:`gsample.runtime.program.launch`'s flight, for its ``settle``
        and ``land`` (which returns the outputs)."""
        from gsample.runtime.program import launch

        return launch(lane, self._args(parts), stream)

    def _args(self, parts: list) -> dict:
        """The super-batch's arguments: the sampler's, its seeds those of ``parts``
        encoded."""
        args = dict(self.args)
        args[self.seeds_name] = self._encode(parts)
        return args

    def _encode(self, parts: list) -> torch.Tensor:
        """The super-batch's seeds: batch ``b``'s ids ``+ b * n``, in batch order (a launch
        or two: a block of equal mini-batches is a (N, B) view plus a per-batch shift)."""
        n, N, B = self.num_nodes, len(parts), parts[0].numel()
        flat = torch.cat(parts)
        if any(p.numel() != B for p in parts):
            return torch.cat([s + b * n for b, s in enumerate(parts)])
        shift = self._shifts.get((N, flat.device))
        if shift is None:
            shift = self._shifts[(N, flat.device)] = (
                torch.arange(N, device=flat.device) * n
            ).unsqueeze(1)
        return (flat.view(N, B) + shift).view(-1)

    def measure(self, seeds: torch.Tensor, epoch_seed: int, index: int = 0):
        """Sample mini-batch ``index`` alone: ``(its outputs, its estimated bytes)``."""
        from gsample.passes.super_batch import GRAPH

        seen, total, alive = set(), 0, []

        def observe(node, value):
            nonlocal total
            shared = node is not None and node.meta.get("super_batch") == GRAPH
            for t in _tensors(value):
                storage = t.untyped_storage()
                key = (storage.data_ptr(), str(t.device))
                if key not in seen:
                    seen.add(key)
                    alive.append(t)  # no address is reused (and missed) while measuring
                    total += 0 if shared else storage.nbytes()

        cuda = seeds.device.type == "cuda"
        if cuda:
            torch.cuda.reset_peak_memory_stats(seeds.device)
            start = torch.cuda.memory_allocated(seeds.device)
        outs = self.run([seeds], epoch_seed, index, observe)
        if cuda:
            total = max(total, torch.cuda.max_memory_allocated(seeds.device) - start)
        return outs, total


def _returns(fn):
    """A generator that returns ``fn()`` at its first step, pausing nowhere."""
    return fn()
    yield  # noqa: unreachable - makes this a generator
