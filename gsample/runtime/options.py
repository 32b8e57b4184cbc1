"""What the runtime may do with a compiled program (``gs.compile(..., runtime=Options(...))``).

Every combination draws the same samples; the switches exist for ablations and debugging.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Options:
    """Runtime switches of a compiled sampler.

    Attributes
    ----------
    lowered : bool
        Lower the optimised IR once per cache key into a linear program of resolved calls
        (``gsample.runtime.lower``). False: interpret the IR node by node, every op checking
        its inputs as an eager call does (the runtime before lowering; for ablations).
    boundary_checks : bool
        Check data where it enters the program (arguments, constants, dense user code's
        results) and never again on values the program's own ops made. False: every op
        checks all its inputs, as eagerly.
    sync_free : bool
        Use backends' sync-free implementations: sizes stay on the device, buffers come
        from bounds, a program reads sizes (and deferred check flags) back once, at its end;
        on a GPU, host work the next device launch does not wait for runs after it
        (``gsample.runtime.schedule``). False: every op reads its sizes back as it goes.
    cuda_graphs : bool
        Capture the longest run of sync-free steps of a program (its *region*) as a CUDA
        graph per argument shapes and replay it (``gsample.runtime.cuda_graphs``; on a GPU,
        unless ``GSAMPLE_CUDA_GRAPHS=0`` or PyTorch's caching allocator is off).
    overlap : bool
        A ``gs.DataLoader`` running the sampler one mini-batch at a time on a GPU keeps two
        calls in flight where a program reads sizes back before its end (a layer-wise
        sampler, each layer): while the host finishes one mini-batch's layer the device
        runs the other's (``gsample.runtime.overlap``); super-batched, two super-batches
        (the host splits one's outputs while the device samples the next). Same samples, in
        the same order.

    Examples
    --------
    >>> import gsample as gs
    >>> from gsample.runtime import Options
    >>> def graphsage(A, seeds):
    ...     return [A[:, seeds].individual_sample(10)]
    >>> sampler = gs.compile(graphsage, backend="cuda", runtime=Options(cuda_graphs=False))
    >>> sampler.runtime.cuda_graphs
    False
    """

    lowered: bool = True
    boundary_checks: bool = True
    sync_free: bool = True
    cuda_graphs: bool = True
    overlap: bool = True

    def __post_init__(self):
        for name in ("lowered", "boundary_checks", "sync_free", "cuda_graphs", "overlap"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(
                    f"runtime: Options.{name} must be True or False, got {getattr(self, name)!r}"
                )
