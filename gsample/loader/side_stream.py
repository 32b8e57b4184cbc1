"""``gs.DataLoader(pipeline="stream")``: the next group made on a side CUDA stream, in the
loop's own thread.

The threaded pipeline (:mod:`gsample.loader.pipeline`) overlaps on the host too, but its
threads share the interpreter with the loop's thread, the model's: where the graph and its
tables are on a GPU, a mini-batch's sampling and gathering take little host time and the
threads cost a host-bound model more than they win. Stage by stage (``pipeline=False``) the
loader works on the loop's stream, so each of its host syncs (a read-back of a size) also
waits for the model's kernels queued before it.

Here there is one thread and two streams. A *group* (the mini-batches of one sampling run:
one, or a super-batch's N) is sampled and gathered (a super-batch's rows in one op per table:
``DataLoader._gather_group``) on a CUDA stream of the loader's own, in the loop's thread,
right after the previous group's first batch was handed out: the model has queued its step's
kernels by then, the loader's syncs wait only for the side stream, and the GPU runs the
loader's kernels beside the model's. Before a group's batches are handed out, the loop's
current stream waits for an event recorded after its gather and is marked as a user of their
memory (:func:`gsample.loader.pipeline.hand_over`); the side stream first waits for the
stream the loop started on (the epoch's shuffled seed order is written there).

Nothing about the samples changes: the groups are the epoch's own generator's (each
mini-batch draws under its own ``batch_scope``), advanced in order in the loop's thread. An
exception while group ``g + 1`` is made is raised at its turn, after group ``g``'s batches
(and those of ``g + 1`` made before it) are handed out. A CUDA graph the sampler captures (a
program's first calls) is captured inside the loop's ``next()``, never while its body runs;
the capture is legal from any current stream (``torch.cuda.graph`` syncs the device and
captures on a stream of its own). Leaving the loop early closes the epoch's generator on the
side stream, and the loop's stream waits for what the side stream still had queued.
"""

from __future__ import annotations

import torch

from gsample.loader.pipeline import hand_over


def streamed(loader, groups):
    """Yield the batches of ``groups``, each group made on a side CUDA stream while the loop
    trains on the group before it.

    Parameters
    ----------
    loader : gs.DataLoader
        Its graph is on a GPU; its ``_gather_group`` fills a group's ``n_id`` / ``x`` /
        ``y``; ``sample_seconds`` and ``gather_seconds`` are added the host time spent
        making groups (no sync is added to time them: their GPU work runs beside the
        model's). Its side stream is made on first use and kept (``_side_stream``).
    groups : iterator of list of gs.Batch
        The epoch's batches, a list per sampling run, sampled when advanced.

    Yields
    ------
    gs.Batch
        The same batches, in order, gathered, ready on the loop's current stream.

    Examples
    --------
    On a GPU (skipped elsewhere; ``gs.DataLoader(..., pipeline="stream")`` runs it):

    >>> import torch, gsample as gs
    >>> A = gs.datasets.rmat(100, 500, seed=0).to("cuda")  # doctest: +SKIP
    >>> sampler = gs.compile(lambda A, seeds: [A[:, seeds].individual_sample(5)])
    >>> X = torch.randn(100, 4, device="cuda")  # doctest: +SKIP
    >>> loader = gs.DataLoader(A, sampler, torch.arange(32), 8, features=X)  # doctest: +SKIP
    >>> parts = list(torch.arange(32, device="cuda").split(8))  # doctest: +SKIP
    >>> groups = ([b] for b in loader._one_by_one(parts, 0))  # doctest: +SKIP
    >>> [batch.x.shape[1] for batch in streamed(loader, groups)]  # doctest: +SKIP
    [4, 4, 4, 4]
    """
    device = loader.A.device
    if loader._side_stream is None:
        loader._side_stream = torch.cuda.Stream(device)
    side = loader._side_stream
    caller = torch.cuda.current_stream(device)
    # the side stream starts after what the loop's stream queued (the epoch's shuffled seed
    # order): without this wait the first group may read the seeds before they are written
    side.wait_stream(caller)
    timed = loader._timed(groups)

    def make():
        """The next group made on the side stream: ``(batches, event, error)``, ``batches``
        those made before ``error`` (an exception, or None); None at the epoch's end."""
        batches, error = [], None
        with torch.cuda.stream(side):
            try:
                group = next(timed, None)
                if group is None:
                    return None
                loader._gather_group(group, None, batches)
            except Exception as e:  # (raised at its turn, after the batches before it)
                error = e
            done = torch.cuda.Event()
            done.record(side)
        return batches, done, error

    try:
        pending = make()
        while pending is not None:
            batches, done, error = pending
            pending, asked = None, error is not None
            if batches:
                hand_over(batches, done, device)
            for batch in batches:
                yield batch
                if not asked:  # the loop queued this batch's step: the next group now
                    asked = True
                    pending = make()
            if error is not None:
                raise error
            if not asked:  # (an empty group: nothing was handed out)
                pending = make()
    finally:
        # an epoch left early (or failed): its generators close on the side stream (two
        # calls in flight land there), and the loop's streams wait for what was queued on it
        # (memory of theirs the side stream still reads is not reused before it is done)
        with torch.cuda.stream(side):
            timed.close()
            if hasattr(groups, "close"):
                groups.close()
        now = torch.cuda.current_stream(device)
        for stream in (caller,) if now == caller else (caller, now):
            stream.wait_stream(side)
