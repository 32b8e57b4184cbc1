"""An epoch's mini-batches of seeds as views of one tensor, made when first asked for.

A loader cuts its epoch's seeds into mini-batches of ``batch_size``. Made up front, the
views cost the host about a microsecond each before anything is sampled (thousands a
papers-sized epoch), and a super-batch then copies them back into one tensor. A
:class:`SeedParts` is the same sequence made lazily: a super-batch takes its seeds as one
view (:meth:`SeedParts.joined`, no copy), and the mini-batches' own views are made while
the device samples (:meth:`SeedParts.materialize`), each once: every access returns the same
tensor object, as a list would.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch


class SeedParts(Sequence):
    """Mini-batches ``lo, ..., hi - 1`` of an epoch: ``flat[j * size : (j + 1) * size]``.

    Parameters
    ----------
    flat : Tensor, shape (S, ...)
        The epoch's seeds in order (mini-batches cut along the first dimension).
    size : int
        Seeds a mini-batch (the last one of the epoch may have fewer).
    count : int, optional
        Mini-batches of the epoch (at most ``ceil(S / size)``; fewer drops the last ones,
        as ``drop_last`` does); by default all.

    A slice is a :class:`SeedParts` of the same epoch sharing its views; an index is a view
    of ``flat`` (made once: the same object every time).

    Examples
    --------
    >>> import torch
    >>> parts = SeedParts(torch.arange(10), 4)
    >>> len(parts), parts[2].tolist(), parts[1:].joined().tolist()
    (3, [8, 9], [4, 5, 6, 7, 8, 9])
    >>> parts[0] is parts[:2][0]
    True
    """

    __slots__ = ("_views", "flat", "hi", "lo", "size")

    def __init__(self, flat: torch.Tensor, size: int, count: int | None = None) -> None:
        if flat.dim() < 1 or size < 1:
            raise ValueError("SeedParts: a tensor of at least one dimension and a positive size")
        most = -(-flat.shape[0] // size)
        self.flat, self.size = flat, size
        self.lo, self.hi = 0, most if count is None else max(0, min(count, most))
        self._views: list = [None] * self.hi

    def _part(self, lo: int, hi: int) -> SeedParts:
        part = object.__new__(SeedParts)
        part.flat, part.size, part.lo, part.hi, part._views = (
            self.flat,
            self.size,
            lo,
            hi,
            self._views,
        )
        return part

    def __len__(self) -> int:
        return self.hi - self.lo

    def __getitem__(self, i):
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                return [self[j] for j in range(start, stop, step)]
            return self._part(self.lo + start, self.lo + max(start, stop))
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"SeedParts: mini-batch {i} of {n}")
        j = self.lo + (i + n if i < 0 else i)
        view = self._views[j]
        if view is None:
            view = self._views[j] = self.flat[j * self.size : (j + 1) * self.size]
        return view

    def __iter__(self) -> Iterator[torch.Tensor]:
        self.materialize()
        return iter(self._views[self.lo : self.hi])

    def materialize(self) -> None:
        """Make the views not made yet, in one call (a split of :meth:`joined`); views made
        before are kept (the same objects)."""
        views = self._views
        # (by identity: `None in views` would compare each tensor with None)
        if all(v is not None for v in views[self.lo : self.hi]):
            return
        # (split_with_sizes: the views split(size) makes, with less host work per view)
        for j, view in enumerate(self.joined().split_with_sizes(self.sizes()), self.lo):
            if views[j] is None:
                views[j] = view

    def joined(self) -> torch.Tensor:
        """All the seeds of these mini-batches, in order: one view of ``flat`` (no copy)."""
        return self.flat[self.lo * self.size : min(self.hi * self.size, self.flat.shape[0])]

    def sizes(self) -> list:
        """Seeds of each mini-batch (all ``size`` but possibly the epoch's last), along the
        first dimension."""
        if not len(self):
            return []
        last = min(self.hi * self.size, self.flat.shape[0]) - (self.hi - 1) * self.size
        return [self.size] * (len(self) - 1) + [last]


__all__ = ["SeedParts"]
