"""Lowering and running compiled programs (docs/architecture.md §2: capture -> IR -> passes ->
lowering / runtime -> backends -> kernels).

* :func:`lower`: an optimised IR graph -> a :class:`Program`, a linear list of resolved
  calls (:class:`Instruction`) over value slots with release points, checks at the
  boundary, trims of bounded values (``gsample.formats.bounded``) only where a reader needs
  exact sizes;
* :func:`run`: runs a program (no per-node dictionaries, lookups or re-validation);
  :func:`start` / :func:`finish`, :func:`launch` / :func:`settle` / :func:`land`: a call in
  pieces, pausing where the host would wait for the device;
* :func:`interpret`: the node-by-node interpreter it replaces (``Options(lowered=False)``);
* :class:`Call`, :func:`interleave`, :func:`in_turn`, :class:`Lanes`, :func:`at_once`:
  several calls in flight (:mod:`.overlap`); :func:`in_chunks`, :class:`Chunks`,
  :func:`chunk_size`: several one-mini-batch calls in one CUDA graph's replay (:mod:`.chunk`);
* :class:`SuperBatcher`: one program run for N mini-batches at once as a block-diagonal
  graph (``gs.DataLoader(..., super_batch=N)``; :mod:`.super_batcher`, its helpers
  :mod:`.block_diagonal`), made by ``CompiledSampler.super_batched``;
* :data:`CAPTURE_LOCK`: held while a CUDA graph is captured (:mod:`.cuda_graphs`);
  :data:`CALLER_CODE`: a capture waits while another thread runs its caller's code
  (:mod:`.caller_code`: torch's CUDA generator refuses random ops there meanwhile);
* :class:`Options`: the runtime's switches (ablations).

The runtime returns sparse formats (``gsample.formats``); the compiler wraps them as
``gs.Matrix`` (``lower(..., wrap=)``). It reaches a backend's own modules only through
:func:`gsample.backend.hook`.
"""

from gsample.runtime.block_diagonal import helpers as block_helpers
from gsample.runtime.caller_code import CALLER_CODE
from gsample.runtime.chunk import Chunk, Chunks, chunk_size
from gsample.runtime.cuda_graphs import CAPTURE_LOCK
from gsample.runtime.interpret import interpret
from gsample.runtime.lower import describe, lower
from gsample.runtime.options import Options
from gsample.runtime.overlap import Call, Lanes, at_once, chunked, in_chunks, in_turn, interleave
from gsample.runtime.program import (
    Instruction,
    Program,
    finish,
    land,
    launch,
    run,
    settle,
    start,
)
from gsample.runtime.super_batcher import SuperBatcher, tensors

__all__ = [
    "CALLER_CODE",
    "CAPTURE_LOCK",
    "Call",
    "Chunk",
    "Chunks",
    "Instruction",
    "Lanes",
    "Options",
    "Program",
    "SuperBatcher",
    "at_once",
    "block_helpers",
    "chunk_size",
    "chunked",
    "describe",
    "finish",
    "in_chunks",
    "in_turn",
    "interleave",
    "interpret",
    "land",
    "launch",
    "lower",
    "run",
    "settle",
    "start",
    "tensors",
]
