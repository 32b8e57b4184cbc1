"""Lowering and running compiled programs (docs/architecture.md §2: capture -> IR -> passes -> lowering /
runtime -> backends -> kernels).

* :func:`lower`: an optimised IR graph -> a :class:`Program`, a linear list of resolved
  calls over value slots with release points, checks at the boundary, trims of bounded
  values (``gsample.formats.bounded``) only where a reader needs exact sizes;
* :func:`run`: runs a program (no per-node dictionaries, lookups or re-validation);
* :func:`interpret`: the node-by-node interpreter it replaces (``Options(lowered=False)``);
* :mod:`.super_batch` / :mod:`.blocks`: the lowering of one program over N mini-batches as a
  block-diagonal graph (``gs.DataLoader(..., super_batch=N)``);
* :class:`Options`: the runtime's switches (ablations).
"""

from gsample.runtime.interpret import interpret
from gsample.runtime.lower import lower
from gsample.runtime.options import Options
from gsample.runtime.program import Program, Step, run

__all__ = ["Options", "Program", "Step", "interpret", "lower", "run"]
