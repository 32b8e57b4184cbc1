"""The workloads of docs/architecture.md §8 and the gsample modes the harness times for each.

==========  ====  ===============================================  ==========  ==========
workload    §8    sampler (``examples/``)                          mini-batch  weighted
==========  ====  ===============================================  ==========  ==========
graphsage   W1    ``graphsage``, fanouts (25, 10)                  512         no
deepwalk    W2    ``deepwalk``, length 80                          1024        no
node2vec    W3    ``node2vec``, length 80, p = 2, q = 0.5          1024        yes
ladies      W4    ``ladies`` on ``normalize(A)``, 3 x 4000         512         yes
fastgcn     W5    ``fastgcn``, 2 x 2000, degree = ``A.sum(axis=1)``  512         yes
shadow      W5    ``shadow``, fanouts (10, 10)                     512         no
pass        W5    ``pass_sampler``, fanouts (10, 10), F = 32       64          yes
==========  ====  ===============================================  ==========  ==========

The samplers are the repository's ``examples/``, imported by path: the harness needs a
source checkout (``examples/`` and ``benchmarks/`` beside the package, or
``$GSAMPLE_REPO``).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import pathlib
import sys
from collections.abc import Callable
from typing import NamedTuple

import torch

import gsample as gs

ALL_WORKLOADS = ("graphsage", "deepwalk", "node2vec", "ladies", "fastgcn", "shadow", "pass")
DESIGN_IDS = {
    "graphsage": "W1",
    "deepwalk": "W2",
    "node2vec": "W3",
    "ladies": "W4",
    "fastgcn": "W5",
    "shadow": "W5",
    "pass": "W5",
}
WALKS = ("deepwalk", "node2vec")
WEIGHTED = ("ladies", "fastgcn", "node2vec", "pass")
AGREEMENT_BATCHES = 4
#: the determinism contract (docs/architecture.md §3): uniform draws identical everywhere; weighted
#: ones may round their probabilities differently across backends, so at least this share agrees
WEIGHTED_MIN_AGREEMENT = 0.999
#: ``--modes``: ``bare`` is ``@gs.compile`` without ``backend=`` (the default, ``"auto"``:
#: the CUDA backend's kernels on a GPU), one at a time and super-batched, beside the modes
#: that name their backend; a GPU only (on the CPU it is the torch backend's mode again)
MODE_KEYS = ("eager", "torch", "cuda", "super", "bare")


#: the label of the ``bare`` mode (super-batched: ``BARE + ", super-batched N"``)
BARE = "compiled, bare @gs.compile"


class HarnessError(RuntimeError):
    """The harness cannot run here (no source checkout, bad ``--graph``, too small a graph)."""


def repo_root() -> pathlib.Path:
    """The source checkout holding ``benchmarks/`` and ``examples/``."""
    here = pathlib.Path(__file__).resolve().parents[2]
    for c in (os.environ.get("GSAMPLE_REPO"), here):
        if (
            c
            and (pathlib.Path(c) / "benchmarks" / "baselines.py").is_file()
            and (pathlib.Path(c) / "examples" / "graphsage.py").is_file()
        ):
            return pathlib.Path(c).resolve()
    raise HarnessError(
        "gsample.bench needs the repository's benchmarks/ and examples/ folders (the samplers "
        f"and baselines it times); none found beside the package at {here} - run it from a "
        "source checkout (pip install -e .) or set GSAMPLE_REPO to one"
    )


def import_repo(root: pathlib.Path):
    """Put ``examples/`` and ``benchmarks/`` on ``sys.path``; the plain-PyTorch baselines."""
    for sub in ("examples", "benchmarks"):
        p = str(root / sub)
        if p not in sys.path:
            sys.path.insert(0, p)
    # import here: benchmarks/, on sys.path from the line above
    import baselines

    return baselines


@dataclasses.dataclass
class Workload:
    """One workload on one graph: what every mode and peer samples."""

    name: str
    fn: Callable  # the gsample sampler, fn(G, seeds, **kw)
    G: gs.Matrix  # the graph it samples (LADIES: normalised)
    A: gs.Matrix  # the graph as given (the peers' input)
    kw: dict
    batch_size: int
    loader: dict  # DataLoader options super-batching needs
    walk_pq: tuple | None = None  # (p, q) of a walk

    @property
    def walk(self) -> bool:
        return self.name in WALKS

    @property
    def unit(self) -> str:
        return "walk steps" if self.walk else "sampled edges"

    def required_agreement(self) -> float:
        return WEIGHTED_MIN_AGREEMENT if self.name in WEIGHTED else 1.0


def workload(
    name: str, A, batch_size=None, walk_length: int = 80, fanouts: tuple | None = None
) -> Workload:
    """The :class:`Workload` ``name`` on graph ``A`` (on ``A``'s device); ``fanouts``
    replaces a node-wise sampler's own (GraphSAGE's (25, 10), ShaDow's and PASS's (10, 10)):
    e.g. (20, 15, 10), the layers papers100M's figures sample."""
    # import here: examples/, on sys.path after import_repo
    import deepwalk
    import fastgcn
    import graphsage
    import ladies
    import node2vec
    import pass_sampler
    import shadow

    bs = batch_size or (1024 if name in WALKS else 64 if name == "pass" else 512)
    if name == "graphsage":
        return Workload(name, graphsage.graphsage, A, A, {"fanouts": fanouts or (25, 10)}, bs, {})
    if name == "ladies":
        return Workload(
            name, ladies.ladies, ladies.normalize(A), A, {"layers": (4000,) * 3}, bs, {}
        )
    if name == "fastgcn":
        return Workload(
            name,
            fastgcn.fastgcn,
            A,
            A,
            {"layers": (2000, 2000), "degree": A.sum(axis=1)},
            bs,
            {"fixed_state": True},
        )
    if name == "shadow":
        return Workload(name, shadow.shadow, A, A, {"fanouts": fanouts or (10, 10)}, bs, {})
    if name == "pass":
        inputs = {k: v.to(A.device) for k, v in pass_sampler.random_inputs(A.num_nodes).items()}
        return Workload(
            name,
            pass_sampler.pass_sampler,
            A,
            A,
            {"fanouts": fanouts or (10, 10), **inputs},
            bs,
            {"fixed_state": True},
        )
    if name == "deepwalk":
        return Workload(name, deepwalk.deepwalk, A, A, {"length": walk_length}, bs, {}, (1.0, 1.0))
    if name == "node2vec":
        return Workload(
            name,
            node2vec.node2vec,
            A,
            A,
            {"length": walk_length, "p": 2.0, "q": 0.5},
            bs,
            {},
            (2.0, 0.5),
        )
    raise HarnessError(f"unknown workload {name!r} (one of {', '.join(ALL_WORKLOADS)})")


class Mode(NamedTuple):
    """A gsample mode: the sampler, its extra ``gs.DataLoader`` options, and its kind
    (``eager``, ``compiled`` or ``super``: how it is drawn and coloured)."""

    sampler: Callable
    options: dict
    kind: str


def make_modes(w: Workload, device, super_batches, keys=MODE_KEYS) -> dict:
    """``{label: Mode}``: eager (on the default backend: the CUDA kernels on a GPU where CuPy
    runs), compiled on the torch backend, on the CUDA backend (a GPU only), super-batched
    ``N`` for each of ``super_batches`` (on the CUDA backend on a GPU, the torch one on the
    CPU), and, on a GPU, ``bare``: a sampler compiled without ``backend=``, one at a time
    and super-batched ``N`` (what ``@gs.compile`` gives a user who names no backend); those
    of ``keys`` (:data:`MODE_KEYS`). The first is the reference of the agreement check."""
    kw = w.kw
    backend = "cuda" if device.type == "cuda" else "torch"
    modes = {}
    if "eager" in keys:
        modes["gsample eager"] = Mode(functools.partial(w.fn, **kw), {}, "eager")
    if "torch" in keys:
        modes["compiled, torch backend"] = Mode(
            functools.partial(gs.compile(w.fn, backend="torch"), **kw), {}, "compiled"
        )
    if "cuda" in keys and backend == "cuda":
        modes["compiled, cuda backend"] = Mode(
            functools.partial(gs.compile(w.fn, backend="cuda"), **kw), {}, "compiled"
        )
    if "super" in keys:
        compiled = functools.partial(gs.compile(w.fn, backend=backend), **kw)
        for n in super_batches:
            modes[f"compiled, super-batched {n}"] = Mode(
                compiled, {"super_batch": n, **w.loader}, "super"
            )
    if "bare" in keys and device.type == "cuda":
        bare = functools.partial(gs.compile(w.fn), **kw)
        modes[BARE] = Mode(bare, {}, "compiled")
        for n in super_batches:
            modes[f"{BARE}, super-batched {n}"] = Mode(
                bare, {"super_batch": n, **w.loader}, "super"
            )
    return modes


def matrices(out) -> list:
    """The ``gs.Matrix`` objects of a sampler's output (blocks; a subgraph and its nodes),
    in order."""
    if isinstance(out, gs.Matrix):
        return [out]
    if isinstance(out, (list, tuple)):
        return [m for o in out for m in matrices(o)]
    return []


def count(out) -> int:
    """Sampled edges of a sampler's output (blocks; a subgraph and its nodes; baseline
    ``Block``s) or walk steps of a walk tensor (entries after the start that are not -1)."""
    if isinstance(out, torch.Tensor):
        return int((out[:, 1:] >= 0).sum()) if out.dim() == 2 else 0
    if isinstance(out, gs.Matrix) or (hasattr(out, "_fields") and hasattr(out, "num_edges")):
        return out.num_edges
    if isinstance(out, (list, tuple)):
        return sum(count(o) for o in out)
    return 0


def host_count(out):
    """:func:`count` where it reads nothing from the device (blocks, subgraphs: their edge
    counts are host ints), else None (a walk tensor's steps). Called inside the clock for
    every mini-batch: a list of matrices (blocks) is counted without a call per matrix
    (inside the clock, a call per matrix would be a visible share of a super-batched
    epoch's host time)."""
    if out.__class__ in (list, tuple) and all(o.__class__ is gs.Matrix for o in out):
        return sum(o.num_edges for o in out)
    if isinstance(out, torch.Tensor):  # a walk's steps are on the device; ids count none
        return None if out.dim() == 2 else 0
    if isinstance(out, gs.Matrix) or (hasattr(out, "_fields") and hasattr(out, "num_edges")):
        n = out.num_edges
        return n if isinstance(n, int) else None
    if isinstance(out, (list, tuple)):
        parts = [host_count(o) for o in out]
        return None if None in parts else sum(parts)
    return 0


def agreement(x_blocks, y_blocks) -> float:
    """Share of sampled edges two runs both drew: Jaccard of their (layer, row, column,
    edge id) sets (1.0: the same samples)."""

    # vectorised (a Python set of ShaDow's subgraph edges would hold an object per edge of
    # every mini-batch, too slow on an epoch's worth): the
    # distinct (layer, row, column, edge id) rows of each run, then the rows both have
    def edges(blocks, device):
        parts = []
        for i, b in enumerate(blocks):
            rows, cols, eids = (t.to(device=device, dtype=torch.int64) for t in b.edges())
            parts.append(torch.stack([torch.full_like(rows, i), rows, cols, eids], 1))
        if not parts:
            return torch.empty((0, 4), dtype=torch.int64, device=device)
        return torch.unique(torch.cat(parts), dim=0)

    first = next((b for b in list(x_blocks) + list(y_blocks)), None)
    device = first.device if first is not None else "cpu"
    a, b = edges(x_blocks, device), edges(y_blocks, device)
    if not len(a) and not len(b):
        return 0.0
    _, times = torch.unique(torch.cat([a, b]), dim=0, return_counts=True)
    return int((times == 2).sum()) / max(times.numel(), 1)


def draw(w: Workload, mode: Mode, seeds, batches: int = AGREEMENT_BATCHES):
    """The outputs of ``mode`` on the first ``batches`` mini-batches of ``seeds``, from
    ``gs.manual_seed(0)`` and loader seed 1 (super-batches capped at ``batches``)."""
    options = dict(mode.options)
    if isinstance(options.get("super_batch"), int):
        options["super_batch"] = min(options["super_batch"], batches)
    gs.manual_seed(0)
    loader = gs.DataLoader(
        w.G, mode.sampler, seeds[: batches * w.batch_size], w.batch_size, seed=1, **options
    )
    return [b.out for b in loader]


def agreement_of(w: Workload, modes: dict, seeds, extra=None) -> dict:
    """``{label: agreement with the first mode}`` on the first mini-batches; ``extra``:
    ``{label: outputs}`` drawn elsewhere (the CPU's, a second draw) to compare too."""
    outs = {m: draw(w, mode, seeds) for m, mode in modes.items()}
    outs.update(extra or {})
    ref = next(iter(outs.values()))
    result = {}
    for m, got in outs.items():
        if w.walk:
            a, b = torch.cat(ref).cpu(), torch.cat(got).cpu()
            result[m] = float((a == b).double().mean()) if a.shape == b.shape else 0.0
        else:
            result[m] = agreement(matrices(ref), matrices(got))
    return result
