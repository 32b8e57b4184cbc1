"""The step operator: a walk the built-ins do not cover, written as one step in the DSL.

``gs.walk(step, A, seeds, length)`` runs ``length`` steps of a user's ``step(A, cur, prev,
t)``, which maps every walker's position to its next one with Matrix operators and torch
code (Metropolis-Hastings, multi-root / frontier sampling, metapaths over edge types).

In a compiled sampler (``gs.compile``) ``step`` is traced once per *phase* (``t = step %
period``; the first step, whose positions are the seeds themselves, once more). When every
traced body is per-walker code (``gsample.ir.walk_body``: uniform walks from the walkers'
positions, gathers of graph-level vectors such as degrees, elementwise arithmetic), the walk
is one ``FUSED_WALK`` op holding the bodies (``gsample.capture.walk_fusion``): one generated kernel
per mini-batch on the CUDA backend, the bodies' torch code step by step on the torch one.
Otherwise (or with ``fuse=False``) the trace is copied ``length`` times into the program:
the copies are ordinary ops, so every pass, super-batching and both backends apply to them.
Either way the random ops of step ``s`` take the op ordinals right after those of step
``s - 1``, in program order, exactly as a hand-written Python loop over the same ``step``
(eager or compiled): the samples are that loop's, bit for bit (docs/architecture.md §3).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.fx as fx

from gsample.base import validate as V
from gsample.capture.trace import Tracer
from gsample.capture.walk_fusion import try_fuse
from gsample.matrix.sparse import Matrix


def walk(step: Callable, A, seeds, length: int, state=None, period: int = 1, fuse: bool = True):
    """Walks of ``length`` steps, each step written by the user as one DSL function.

    Parameters
    ----------
    step : callable
        ``step(A, cur, prev, t) -> nxt`` or, with ``state``, ``step(A, cur, prev, t, state)
        -> (nxt, state)``. ``cur`` (LongTensor (W,)) holds every walker's position,
        ``prev`` its position one step before (the seed at the first step); ``t`` is the
        step's phase, ``step index % period`` (a static Python int: ``step`` is traced
        once per phase). ``nxt`` (integer tensor (W,)) is each walker's next position,
        ``-1`` to stop it. Walkers keep their positions ``0 .. W-1`` (the column positions
        that key their draws), so one walker's stop never changes another's draws: a stopped
        walker is presented at a valid node (``cur`` 0, ``prev`` its last position or 0)
        and whatever ``step`` returns for it is dropped. The first step sees the seeds as
        given (an op reading them checks them). Random ops must be gsample's (Matrix
        methods), so the walk follows the determinism contract.
    A : gs.Matrix or tuple of gs.Matrix
        Passed to ``step`` as it is (several matrices: a metapath's relations).
    seeds : LongTensor, shape (W,)
        Start positions; repeats are independent walkers.
    length : int
        Steps, ``>= 0``.
    state : tensor or tuple of them, optional
        Carried from step to step (``step`` returns the next one): accumulators, roots,
        counters. It is not masked for stopped walkers.
    period : int
        The phases of ``t``, ``>= 1`` (``len(metapath)`` for a metapath walk).
    fuse : bool
        Compiled: make the walk one fused op when its step is per-walker code (the module
        docstring); False: unroll it. The samples are the same.

    Returns
    -------
    LongTensor, shape (W, length + 1)
        Column 0 the seeds, column ``s + 1`` the positions after step ``s``; ``-1`` from a
        walker's stop on. With ``state``: ``(walks, final state)``.

    Notes
    -----
    Compiled, the walk is traced once per phase and fused into one op, or unrolled in the
    IR (the module docstring); a step's graph-level values (degrees, ``A ** 2``) are
    computed once per graph by pre-processing. Eager, it is the plain loop.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> def uniform_step(A, cur, prev, t):              # DeepWalk, written as one step
    ...     return A.random_walk(cur, 1)[:, 1]
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.arange(4)
    >>> gs.manual_seed(0)
    >>> walks = gs.walk(uniform_step, A, seeds, 80)
    >>> walks.shape                                      # (len(seeds), length + 1)
    torch.Size([4, 81])
    >>> sampler = gs.compile(lambda A, seeds: gs.walk(uniform_step, A, seeds, 80))
    >>> gs.manual_seed(0)
    >>> torch.equal(sampler(A, seeds), walks)            # after the same gs.manual_seed
    True
    """
    if not callable(step):
        raise TypeError(
            f"step: expected a function step(A, cur, prev, t), got {type(step).__name__}"
        )
    length, period = V.count(length, "length"), V.count(period, "period")
    if length >= 1 << 31:  # random_walk's limit: a traced walk unrolls its steps
        raise ValueError(f"length: must be < 2**31, got {length}")
    if period < 1:
        raise ValueError("period: must be >= 1")
    fuse = V.flag(fuse, "fuse")
    has_state = state is not None
    traced = _tracer(A, seeds, state)
    if traced is None:
        matrices = A if isinstance(A, (tuple, list)) else (A,)
        if not matrices or not all(isinstance(m, Matrix) for m in matrices):
            raise TypeError(f"A: expected a gs.Matrix or a tuple of them, got {type(A).__name__}")
        seeds = V.ids(seeds, "seeds", matrices[0].num_nodes, matrices[0].device)
        V.fits(
            seeds.numel() * (length + 1),
            8,
            seeds.device,
            "length",
            f"{seeds.numel()} walks of {length} steps",
        )
        run = _one_step
    else:
        run = _Inliner(traced, step, has_state)
        if fuse and not has_state:
            fused = try_fuse(traced, run, A, seeds, length, period)
            if fused is not None:
                return fused
    cols, cur, prev = [seeds], seeds, seeds
    for s in range(length):
        nxt, state = run(step, A, cur, prev, s % period, s == 0, state, has_state)
        if traced is None:
            _check_next(nxt, seeds, s)
        cols.append(nxt)
        prev, cur = cur, nxt
    walks = torch.stack(cols, dim=1)
    return (walks, state) if has_state else walks


def _one_step(step, A, cur, prev, t, first, state, has_state):
    """One step: ``step`` on the live walkers' positions (the first step on the seeds)."""
    stopped = None
    if not first:  # a stopped walker (-1) at node 0
        stopped = cur < 0
        cur, prev = cur.clamp(min=0), prev.clamp(min=0)
    out = step(A, cur, prev, t, state) if has_state else step(A, cur, prev, t)
    if has_state:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError("step: with state, must return (next positions, next state)")
        nxt, state = out
    else:
        nxt = out
    if stopped is not None:  # stays stopped, whatever step drew for it
        nxt = torch.where(stopped, -1, nxt)
    return nxt, state


def _check_next(nxt, seeds, s):
    if not isinstance(nxt, torch.Tensor) or nxt.shape != seeds.shape:
        raise ValueError(
            f"step: must return one position per walker (shape "
            f"{tuple(seeds.shape)}), got {getattr(nxt, 'shape', type(nxt))} at "
            f"step {s}"
        )


# ----------------------------------------------------------------------------- compiled
def _leaves(x) -> list:
    """The leaves of a structure of tuples / lists (proxies, tensors, Python values)."""
    if isinstance(x, (tuple, list)):
        return [leaf for item in x for leaf in _leaves(item)]
    return [x]


def _rebuild(x, it):
    if isinstance(x, (tuple, list)):
        return type(x)(_rebuild(item, it) for item in x)
    return next(it)


def _tracer(*values):
    """The fx tracer recording a compiled sampler, if any of ``values`` is its proxy."""
    for leaf in _leaves(values):
        if isinstance(leaf, fx.Proxy):
            return leaf.tracer
    return None


class _Inliner:
    """Steps of a compiled walk: each phase's step traced once into a graph of its own,
    then copied into the sampler's graph at every step of that phase."""

    def __init__(self, tracer, step, has_state):
        self.outer, self.step, self.has_state = tracer, step, has_state
        self.bodies: dict = {}

    def body(self, args, t, first) -> tuple:
        """``(fx graph, placeholders)`` of the step's body for ``args`` (traced once)."""
        leaves = _leaves(args)
        # a body is traced for which leaves are traced values (a state that starts as a
        # plain tensor and becomes a traced one is traced again)
        key = (first, t, tuple(isinstance(v, fx.Proxy) for v in leaves))
        if key not in self.bodies:
            self.bodies[key] = self._trace(args, leaves, t, first)
        return self.bodies[key]

    def __call__(self, step, A, cur, prev, t, first, state, has_state):
        args = (A, cur, prev, state)
        leaves = _leaves(args)
        body, places = self.body(args, t, first)
        val_map = {ph: leaves[i].node for ph, i in places}
        out = self.outer.graph.graph_copy(body, val_map)
        nxt, state = fx.node.map_arg(out, self.outer.proxy)
        return nxt, state

    def _trace(self, args, leaves, t, first):
        outer = self.outer
        body = Tracer(outer.num_nodes)
        body.root, body.tensor_attrs = outer.root, outer.tensor_attrs
        body.graph = fx.Graph(tracer_cls=Tracer)
        places, inner = [], []
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, fx.Proxy):
                node = body.graph.placeholder(f"walk_arg{i}")
                node.meta["gs_kind"] = leaf.node.meta.get("gs_kind")
                places.append((node, i))
                inner.append(body.proxy(node))
            else:
                inner.append(leaf)
        A, cur, prev, state = _rebuild(args, iter(inner))
        out = _one_step(self.step, A, cur, prev, t, first, state, self.has_state)
        body.graph.output(body.create_arg(out))
        return body.graph, places


__all__ = ["walk"]
