"""The samplers, ids and checks of ``tests/test_adversarial_ids.py`` (issue 32, item 2).

Every check here asks what a user who passes one bad node id expects (docs/architecture.md §6): the
call that got it raises an ``IndexError`` naming the argument and the id, before it returns
anything, and the process goes on sampling exactly what it sampled before (docs/architecture.md §3).

``tests/`` is on ``sys.path`` while pytest runs (see ``tests/helpers.py``), so the test module
imports this one as ``adversarial``.
"""

from __future__ import annotations

import functools
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
import torch
from helpers import difference, example

import gsample as gs
from gsample.interop.pyg.temporal import disjoint_sample

#: the seed every reference and every call after a failure starts from (``gs.manual_seed``)
SEED = 11


def bad_ids(num_nodes: int) -> list:
    """The ids of issue 32 for a graph of ``num_nodes`` nodes: just past the end, negative,
    past int32 (``2**31``), one that a 32-bit cast turns into a valid id (``2**32 + 1`` is 1),
    far past any allocation, and the extremes of int64."""
    n = num_nodes
    return [n, n + 1, -1, -(2**40), 2**31, 2**32 + 1, 2**40, 2**62, 2**63 - 1]


# ----------------------------------------------------------------------------- samplers
@dataclass(frozen=True)
class Spec:
    """One catalogue sampler as the suite runs it.

    Attributes
    ----------
    fn : callable
        The example's sampler function, ``fn(A, seeds, **kwargs)``.
    cpu, gpu : dict
        Static keyword arguments on the CPU (small: the CPU suite stays fast) and on a GPU
        (the catalogue's parameters, docs/architecture.md §7).
    names : tuple of str
        What an error about a bad seed may name: the sampler's own argument (``seeds``) or
        the argument of the operator the seeds are passed to (``A[:, cols]``: ``cols``).
    prepare : callable, optional
        Graph -> the graph the sampler takes (LADIES: the normalised graph), on the CPU.
    batch : int
        Seeds per mini-batch (SEAL samples one target pair).
    gathers : bool
        Whether it returns blocks or an induced subgraph, whose nodes a loader gathers
        ``features`` for (walks return walks).
    """

    fn: Callable
    cpu: dict = field(default_factory=dict)
    gpu: dict = field(default_factory=dict)
    names: tuple = ("seeds", "cols")
    prepare: Callable | None = None
    batch: int = 512
    gathers: bool = True

    def kwargs(self, device: torch.device) -> dict:
        """The static arguments on ``device``."""
        return self.gpu if device.type == "cuda" else self.cpu


def _normalized(A):
    return example("ladies").normalize(A)


def _disjoint(A, seeds, num_neighbors=(10, 5)):
    """PyG's ``disjoint=True`` sampler: its blocks and seed slots."""
    return disjoint_sample(A, seeds, num_neighbors=num_neighbors)


@functools.cache
def specs() -> dict:
    """name -> :class:`Spec`: every sampler family and every distinct GPU path of the
    catalogue's compiled samplers (the comments name them)."""
    ex = example
    return {
        # node-wise: uniform (sync-free kernel, all_nodes), weighted without replacement
        # (the exact path) and with it (alias tables), LABOR (per-row draws, edge filter)
        "graphsage": Spec(ex("graphsage").graphsage, {"fanouts": (10, 5)}, {"fanouts": (25, 10)}),
        "weighted_neighbors": Spec(
            ex("weighted_neighbors").weighted_neighbors, {"fanouts": (10, 5)}, {"fanouts": (25, 10)}
        ),
        "weighted_neighbors_replace": Spec(
            ex("weighted_neighbors").weighted_neighbors,
            {"fanouts": (10, 5), "replace": True},
            {"fanouts": (25, 10), "replace": True},
        ),
        "labor": Spec(ex("labor").labor, {"fanouts": (5, 5)}, {"fanouts": (10, 10, 10)}),
        # node-wise, then the induced subgraph (a row slice through a hash table)
        "shadow": Spec(ex("shadow").shadow, {"fanouts": (5, 5)}, {"fanouts": (10, 10)}),
        # layer-wise: probabilities from the frontier, from the whole graph, none
        "ladies": Spec(
            ex("ladies").ladies,
            {"layers": (256, 256)},
            {"layers": (4000, 4000, 4000)},
            prepare=_normalized,
        ),
        "fastgcn": Spec(ex("fastgcn").fastgcn, {"layers": (256, 256)}, {"layers": (2000, 2000)}),
        "csaw_layer": Spec(
            ex("csaw_layer").csaw_layer, {"layers": (256, 256)}, {"layers": (2000, 2000)}
        ),
        # walks: uniform, second order, stop, jump, the fused gs.walk step
        "deepwalk": Spec(
            ex("deepwalk").deepwalk, {"length": 10}, {"length": 80}, names=("seeds",), gathers=False
        ),
        "node2vec": Spec(
            ex("node2vec").node2vec, {"length": 10}, {"length": 80}, names=("seeds",), gathers=False
        ),
        "ppr": Spec(ex("ppr").ppr, {"length": 10}, {"length": 80}, names=("seeds",), gathers=False),
        "walk_with_jump": Spec(
            ex("walk_with_jump").walk_with_jump,
            {"length": 10},
            {"length": 80},
            names=("seeds",),
            gathers=False,
        ),
        "metropolis_hastings": Spec(
            ex("metropolis_hastings").metropolis_hastings,
            {"length": 10},
            {"length": 80},
            names=("seeds",),
            gathers=False,
        ),
        # subgraph: a walk's induced subgraph; SEAL's PPR-biased enclosing subgraph of a pair
        "graphsaint_rw": Spec(
            ex("graphsaint_rw").graphsaint_rw, {"length": 4}, {"length": 4}, names=("seeds",)
        ),
        "seal": Spec(
            ex("seal").seal,
            {"fanouts": (10, 10), "bias": "ppr", "num_walks": 20},
            {"fanouts": (10, 10), "bias": "ppr"},
            batch=2,
        ),
        # PyG's disjoint sampling: per-seed keyed draws, then first_reached (a hash table of
        # (slot, node) pairs); a bad seed reaches A.positions first
        "disjoint": Spec(
            _disjoint,
            {"num_neighbors": (10, 5)},
            {"num_neighbors": (25, 10)},
            names=("seeds", "cols", "nodes"),
            gathers=False,
        ),
    }


# ----------------------------------------------------------------------------- seeds
def generator(*key) -> torch.Generator:
    """A CPU generator seeded by ``key`` (stable across runs and processes)."""
    return torch.Generator().manual_seed(zlib.crc32(repr(key).encode()))


def good_seeds(num_nodes: int, n: int, *key) -> torch.Tensor:
    """``n`` distinct node ids (a prefix of a permutation that ``key`` picks), int64, CPU."""
    return torch.randperm(num_nodes, generator=generator("seeds", *key))[:n]


def planted(seeds: torch.Tensor, bad: int, *key) -> tuple:
    """``(seeds with one entry replaced by bad, its position)``: the position is drawn by
    ``key``; the result has ``seeds``' shape, device and dtype (int64), so a compiled
    sampler runs the very program (and a replayed CUDA graph) its good seeds run."""
    pos = int(torch.randint(seeds.numel(), (1,), generator=generator("pos", bad, *key)))
    out = seeds.clone()
    out[pos] = bad
    return out, pos


def alone(bad: int, device) -> torch.Tensor:
    """The bad id as the only seed."""
    return torch.tensor([bad], dtype=torch.int64, device=device)


# ----------------------------------------------------------------------------- checks
def check_index_error(error: BaseException, names, bad: int, what: str) -> None:
    """``error`` is the documented ``IndexError``: its message starts with one of ``names``
    and a colon (``"cols: node id ..."``, as :func:`gsample.base.validate.ids` and the CUDA
    kernels' flags word it) and names the id itself (``node id <bad>``: not a clamped,
    wrapped or encoded one)."""
    message = str(error)
    assert isinstance(error, IndexError), (
        f"{what}: expected an IndexError naming {' or '.join(names)}, got "
        f"{type(error).__name__}: {message}"
    )
    assert re.match(rf"({'|'.join(map(re.escape, names))}):", message), (
        f"{what}: the message does not start with the argument's name "
        f"({' or '.join(names)}): {message!r}"
    )
    assert f"node id {bad}" in message and not re.search(rf"node id {bad}\d", message), (
        f"{what}: the message does not name the bad id {bad}: {message!r}"
    )


def raises_index_error(call: Callable, names, bad: int, what: str) -> None:
    """``call()`` raises the documented ``IndexError`` (see :func:`check_index_error`);
    anything it returns instead is a silent failure."""
    try:
        out = call()
    except Exception as error:
        check_index_error(error, names, bad, what)
        return
    pytest.fail(f"{what}: no error; the call returned {_brief(out)}")


def _brief(out) -> str:
    if isinstance(out, torch.Tensor):
        return f"a tensor of shape {tuple(out.shape)}"
    if isinstance(out, (list, tuple)):
        return f"a {type(out).__name__} of {len(out)}"
    return type(out).__name__


def assert_exact(got, ref, what: str) -> None:
    """Every output tensor of ``got`` equal to ``ref``'s (dtype, shape, device, bits)."""
    d = difference(got, ref, what)
    assert d is None, d


def seeded(fn: Callable, *args, **kwargs):
    """``fn(*args, **kwargs)`` right after ``gs.manual_seed(SEED)``."""
    gs.manual_seed(SEED)
    return fn(*args, **kwargs)
