"""Super-batching at run time: one compiled sampler's program run for N mini-batches at once
(``gs.DataLoader(..., super_batch=N | "auto")``).

:class:`SuperBatcher` is what ``CompiledSampler.super_batched`` returns: it holds the call's
traced arguments and, per number of mini-batches N, the program rewritten for N
(``gsample.passes.super_batch``) and lowered, which the compiler builds (once per super-batcher,
a loader's, and N) and hands it; it encodes the N mini-batches' seeds, runs the program
(:func:`gsample.runtime.program.run`, ``start``, ``launch``) and measures one mini-batch's
memory (``"auto"``). It imports no compiler: what it runs comes from there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import torch

from gsample.base.random import batch_scope, keep_sizes
from gsample.base.seed_parts import SeedParts
from gsample.passes.super_batch import GRAPH
from gsample.runtime.interpret import interpret
from gsample.runtime.overlap import at_once
from gsample.runtime.program import finish, launch, start


def tensors(value) -> Iterator[torch.Tensor]:
    """Every tensor inside ``value``: tensors, sparse formats and other dataclasses, lists,
    tuples, dicts, and objects holding a format as ``.csc`` (a ``gs.Matrix``).

    Examples
    --------
    >>> import torch
    >>> [t.shape for t in tensors([torch.zeros(2), {"x": torch.ones(3)}])]
    [torch.Size([2]), torch.Size([3])]
    """
    if isinstance(value, torch.Tensor):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from tensors(getattr(value, f.name))
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from tensors(v)
    else:
        csc = getattr(value, "csc", None)  # a gs.Matrix (the runtime does not import it)
        if csc is not None:
            yield from tensors(csc)


class SuperBatcher:
    """A compiled sampler's program, super-batched: runs N mini-batches at once.

    Made by ``CompiledSampler.super_batched`` (which checks the call and traces it). The
    mini-batches' seeds must be checked node ids (``gs.DataLoader`` checks every seed once,
    when it is made): batch ``b``'s ids become ``b * n + v``, so an unchecked id past one
    batch's end would be a node of the next. Such an id reads and writes nothing out of
    bounds (the kernels guard every id), but it is not reported as the user's id.

    Parameters
    ----------
    args : dict
        The call's traced arguments by name (``gs.Matrix`` and tensors); the seeds' entry
        is replaced by each run's encoded seeds.
    seeds : str
        The name of the argument holding a mini-batch's seeds.
    num_nodes : int
        The graph's node count ``n``.
    backend : str
        The backend the programs run on.
    build : callable
        ``copies -> (IR, lowered program or None)``: the program for ``copies``
        mini-batches (None: interpret the IR), built by the compiler; called once per
        count, and once with 1 now, so that a refusal (state, unsupported code) surfaces
        when the super-batcher is made.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> @gs.compile
    ... def graphsage(A, seeds):                   # two GraphSAGE layers
    ...     s1 = A[:, seeds].individual_sample(10)
    ...     return [s1, A[:, s1.all_nodes()].individual_sample(5)]
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.arange(8)
    >>> seeds0, seeds1 = seeds, seeds + 8
    >>> sb = graphsage.super_batched((A, seeds0), seeds="seeds")
    >>> outs = sb.run([seeds0, seeds1], 0, first=0)   # [out of batch 0, of batch 1]
    >>> len(outs), [b.shape for b in outs[1]]
    (2, [(100, 8), (100, 28)])
    """

    def __init__(
        self, args: dict, seeds: str, num_nodes: int, backend: str, build: Callable[[int], tuple]
    ):
        self.args, self.seeds_name, self.num_nodes = args, seeds, num_nodes
        self.backend, self.build = backend, build
        self.programs: dict = {}
        self._shifts: dict = {}
        self.program(1)  # refusals (state, unsupported code) surface now

    def program(self, copies: int) -> tuple:
        """``(IR, lowered program or None)`` for ``copies`` mini-batches (built once per
        count, by the compiler)."""
        hit = self.programs.get(copies)
        if hit is None:
            hit = self.programs[copies] = self.build(copies)
        return hit

    def run(self, parts: list, epoch_seed: int, first: int, observe=None, meanwhile=None) -> list:
        """The outputs of mini-batches ``first, first + 1, ...`` (seeds ``parts``);
        ``observe(node, value)`` after each step (:meth:`measure`); ``meanwhile()``, host
        work that needs neither the outputs nor the random stream, where the host would
        first wait for the device (or at the end)."""
        with batch_scope(epoch_seed, first):
            calls = self.start(parts, observe)
            return finish(calls if meanwhile is None else _at_first_pause(calls, meanwhile))

    def start(self, parts: list, observe=None):
        """:meth:`run` as a generator pausing where the host would wait for the device
        (:func:`gsample.runtime.program.start`); its return value is the outputs. Run it
        with the stream at the first mini-batch's (``batch_scope``, or an overlap ``Call``)."""
        args = self._args(parts)
        graph, program = self.program(len(parts))
        if program is None:
            return at_once(lambda: interpret(graph, args, self.backend))
        return start(program, args, observe)

    def launch(self, parts: list, lane, stream: tuple) -> list:
        """:meth:`start`'s call launched on ``lane`` (a lane of ``self.program(len(parts))``'s
        one-region program) with the random stream at ``stream`` (``(seed, 0, first
        mini-batch)``): :func:`gsample.runtime.program.launch`'s flight, for its ``settle``
        and ``land`` (which returns the outputs)."""
        return launch(lane, self._args(parts), stream)

    def _args(self, parts: list) -> dict:
        """The super-batch's arguments: the sampler's, its seeds those of ``parts``
        encoded."""
        args = dict(self.args)
        args[self.seeds_name] = self._encode(parts)
        return args

    def _encode(self, parts: list) -> torch.Tensor:
        """The super-batch's seeds: batch ``b``'s ids ``+ b * n``, in batch order (a few
        launches whatever the count: the leading run of equal mini-batches, an epoch's all
        but its short last one, is a (K, B) view plus a per-batch shift; the rest, a launch
        each)."""
        n = self.num_nodes
        if isinstance(parts, SeedParts):  # the loader's: one view, no copy, no view per part
            sizes, flat = parts.sizes(), parts.joined()
        else:
            sizes, flat = [p.numel() for p in parts], torch.cat(list(parts))
        B = sizes[0]
        K = next((b for b, m in enumerate(sizes) if m != B), len(sizes))
        shift = self._shifts.get((K, flat.device))
        if shift is None:
            shift = self._shifts[(K, flat.device)] = (
                torch.arange(K, device=flat.device) * n
            ).unsqueeze(1)
        block = (flat[: K * B].view(K, B) + shift).view(-1)
        if len(parts) != K:
            block = torch.cat([block] + [s + b * n for b, s in enumerate(parts[K:], K)])
        return keep_sizes(block, sizes)  # (the splits by batch then read nothing back)

    def measure(self, seeds: torch.Tensor, epoch_seed: int, index: int = 0):
        """Sample mini-batch ``index`` alone: ``(its outputs, its estimated bytes)``.

        On a GPU, a first call that leaves memory allocated beyond the values it made (a
        cache built once per graph: a temporal sampler's time order) is measured again:
        the cache's own construction (a sort of every edge) is no mini-batch's cost."""
        outs, total, cached = self._measure(seeds, epoch_seed, index)
        if cached:
            outs, total, _ = self._measure(seeds, epoch_seed, index)
        return outs, total

    def _measure(self, seeds: torch.Tensor, epoch_seed: int, index: int):
        """One measured call: ``(outputs, bytes, whether it left a cache behind)``."""
        seen, total, alive = set(), 0, []

        def observe(node, value):
            nonlocal total
            shared = node is not None and node.meta.get("super_batch") == GRAPH
            for t in tensors(value):
                storage = t.untyped_storage()
                key = (storage.data_ptr(), str(t.device))
                if key not in seen:
                    seen.add(key)
                    alive.append(t)  # no address is reused (and missed) while measuring
                    total += 0 if shared else storage.nbytes()

        if seeds.device.type != "cuda":
            return self.run([seeds], epoch_seed, index, observe), total, False
        torch.cuda.reset_peak_memory_stats(seeds.device)
        begin = torch.cuda.memory_allocated(seeds.device)
        outs = self.run([seeds], epoch_seed, index, observe)
        peak = torch.cuda.max_memory_allocated(seeds.device) - begin
        # what the call left allocated beyond the values it made (kept alive above) and its
        # outputs is a cache kept with the graph (a time order, alias tables)
        kept = torch.cuda.memory_allocated(seeds.device) - begin
        storages = {t.untyped_storage().data_ptr(): t for t in tensors(outs)}
        out_bytes = sum(t.untyped_storage().nbytes() for t in storages.values())
        cached = max(kept - total - out_bytes, 0)
        # (scratch a kernel keeps, a few words per node, is no cache worth a second call)
        return outs, max(total, peak - cached), cached > (1 << 20)


def _at_first_pause(calls, meanwhile: Callable[[], None]):
    """``calls`` (a generator of :func:`start`'s kind), with ``meanwhile()`` run where it
    first pauses (the device working), or at its end where it never pauses."""
    try:
        try:
            pause = next(calls)
        except StopIteration as done:
            meanwhile()
            return done.value
        meanwhile()
        yield pause
        return (yield from calls)
    finally:  # (a no-op once it ended; else it gives back the program's lane now)
        calls.close()


__all__ = ["SuperBatcher", "tensors"]
