"""R-MAT's edge draws, shared by :func:`gsample.datasets.rmat` and
:func:`gsample.datasets.undirected_rmat`: the same seed draws the same edges in both, on
every device.

Edge ``e`` descends ``ceil(log2 N)`` levels of the adjacency matrix; at level ``l`` it
takes quadrant ``0 a | 1 b | 2 c | 3 d`` by ``u = uniform_float(hash(key, l, e))`` against
the cumulated probabilities ``a, a + b, a + b + c``. The ids reached are folded into
``[0, N)`` and then mapped through a fixed permutation of the nodes (hubs spread over the
ids).
"""

from __future__ import annotations

import math

import torch

from gsample.base import validate as V
from gsample.base.random import GOLDEN, combine, mix64_, shuffle_keys, signed

__all__ = ["RMAT_TAG", "Draws", "check_rmat", "node_permutation"]

#: the key prefix R-MAT draws with ("RMAT"); the key of a graph is
#: ``combine(combine(0, seed), RMAT_TAG)``
RMAT_TAG = 0x524D4154
_S_GOLDEN = signed(GOLDEN)


def check_rmat(num_nodes, num_edges, a, b, c, seed) -> tuple:
    """R-MAT's arguments checked (each named in its error): ``(num_nodes, num_edges, a, b,
    c, seed)``, as :func:`gsample.datasets.rmat` and :func:`gsample.datasets.undirected_rmat`
    take them."""
    num_nodes = V.count(num_nodes, "num_nodes")
    num_edges = V.count(num_edges, "num_edges")
    if num_nodes == 0 and num_edges:
        raise ValueError("num_nodes: a graph with edges needs at least one node")
    a, b, c = (V.probability(x, n) for x, n in ((a, "a"), (b, "b"), (c, "c")))
    if a + b + c > 1:
        raise ValueError(f"a, b, c: must be probabilities with a + b + c <= 1, got {a}, {b}, {c}")
    return num_nodes, num_edges, a, b, c, V.seed(seed)


class Draws:
    """The edges of the R-MAT graph of ``(num_nodes, seed, a, b, c)``, edge ``e`` by edge
    ``e``, folded into ``[0, num_nodes)`` (before :func:`node_permutation`).

    Edge ``e`` hashes ``(key, level, e)`` per level; ``combine(key, level)`` is the same
    for every edge, so it is folded once per level here (half the hashing), and ``u >= t``
    on ``u = (r >> 11) * 2**-53`` is compared as ``r >> 11 >= ceil(t * 2**53)`` (exact:
    ``u`` and ``t * 2**53`` are exact doubles). The in-place steps work on slices of a few
    scratch arrays (at most ``step`` elements: in cache on a CPU), so drawing needs little
    memory beyond its output.

    Parameters
    ----------
    num_nodes : int
        ``N >= 1``.
    seed : int
    a, b, c : float
        Quadrant probabilities (checked: :func:`check_rmat`).
    device : torch.device

    Examples
    --------
    >>> import torch
    >>> d = Draws(1000, 0, 0.57, 0.19, 0.19, torch.device("cpu"))
    >>> src, dst = torch.empty(5, dtype=torch.int64), torch.empty(5, dtype=torch.int64)
    >>> d.draw(0, src, dst)  # edges 0..4, folded ids
    """

    def __init__(self, num_nodes: int, seed: int, a: float, b: float, c: float, device):
        self.num_nodes, self.device = num_nodes, device
        self.levels = max(1, (num_nodes - 1).bit_length())
        self.key = combine(combine(0, seed), RMAT_TAG)
        self.level_keys = [signed(combine(self.key, level)) for level in range(self.levels)]
        # the comparisons u >= a, u >= a + b, u >= a + b + c (Python's float sums)
        self.t_a, self.t_ab, self.t_abc = (math.ceil(t * 2.0**53) for t in (a, a + b, a + b + c))
        # elements per pass of the in-place ops: in cache on a CPU, large on a GPU
        self.step = 1 << (24 if device.type == "cuda" else 16)
        self._scratch: list[torch.Tensor] = []  # sized by the first draw: a small graph's

    def _buffers(self, m: int) -> list[torch.Tensor]:
        """Three int64 and three bool scratch arrays of at least ``m`` elements."""
        if not self._scratch or self._scratch[0].numel() < m:
            self._scratch = [
                torch.empty(m, dtype=dt, device=self.device)
                for dt in (torch.int64,) * 3 + (torch.bool,) * 3
            ]
        return self._scratch

    def draw(self, start: int, src: torch.Tensor, dst: torch.Tensor) -> None:
        """Folded ends (``[0, num_nodes)``, before the permutation) of edges ``start ..
        start + len(src) - 1`` into ``src`` and ``dst`` (any integer dtype holding them)."""
        total = src.numel()
        scratch = self._buffers(min(self.step, total))
        for i in range(0, total, self.step):
            m = min(self.step, total - i)
            z, t, x, ge, down, right = (buf[:m] for buf in scratch)
            s = torch.zeros(m, dtype=torch.int64, device=self.device)
            d = torch.zeros_like(s)
            torch.arange(start + i + 1, start + i + m + 1, out=x)  # (e + 1) * GOLDEN
            x *= _S_GOLDEN
            for h in self.level_keys:
                torch.add(x, h, out=z)  # combine(combine(key, level), e)
                mix64_(z, t)
                z >>= 11
                z &= (1 << 53) - 1  # u * 2**53
                torch.ge(z, self.t_ab, out=down)
                torch.ge(z, self.t_a, out=right)
                torch.ge(z, self.t_abc, out=ge)
                right ^= down  # quadrants 1 and 3 of (0 a | 1 b | 2 c | 3 d)
                right ^= ge
                s <<= 1
                s |= down
                d <<= 1
                d |= right
            if (1 << self.levels) > self.num_nodes:
                s.remainder_(self.num_nodes)  # fold the ids into [0, num_nodes)
                d.remainder_(self.num_nodes)
            src[i : i + m] = s
            dst[i : i + m] = d


def node_permutation(key: int, num_nodes: int, device) -> torch.Tensor:
    """R-MAT's node ids: folded id ``x`` is node ``perm[x]`` (hubs spread over the ids). A
    stable sort of hashed keys: where two 63-bit keys tie, the lower folded id comes first
    on every device.

    Examples
    --------
    >>> node_permutation(combine(combine(0, 0), RMAT_TAG), 5, "cpu").sort().values
    tensor([0, 1, 2, 3, 4])
    """
    # the loader's epoch permutation of num_nodes positions, keyed by `key`
    return torch.argsort(shuffle_keys(key, num_nodes, device), stable=True)
