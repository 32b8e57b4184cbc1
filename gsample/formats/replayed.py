"""A replayed CUDA graph's results read back and copied out of its memory.

A captured graph copies the counts of its bounded results (and its check flags) to pinned
host memory itself, and may pack the results its program's output trims
(``kernels/pack.cu``): :class:`Replayed` is what the read-back after a replay reads
(``gsample.base.readback.READ_BACK``), :class:`ReplayedTrim` the trim of those results
planned once per graph (``gsample.runtime.cuda_graphs`` captures, ``gsample.runtime.lower``'s
trim uses it).
"""

from __future__ import annotations

import torch

from gsample.formats.bounded import _copy_parts, _limits, counts, lengths, rebuild, trim_parts


def counted(values, parts: list) -> list:
    """:func:`~gsample.formats.bounded.trim_parts`' ``parts`` of ``values`` as
    ``(tensor, count, add)``: ``count`` the device tensor of its length's count (or None)."""
    have = {}
    out = []
    for t, at, add in parts:
        if at is not None and at[0] not in have:
            have[at[0]] = counts(values[at[0]])
        out.append((t, None if at is None else have[at[0]][at[1]], add))
    return out


def packable(parts: list) -> bool:
    """Whether a graph can pack ``parts`` (:func:`counted`'s) on the device: contiguous
    1-D buffers, int64 counts."""
    return bool(parts) and all(
        t.dim() == 1 and t.is_contiguous() and (c is None or c.dtype == torch.int64)
        for t, c, _ in parts
    )


def pack_groups(parts: list) -> list:
    """``[(dtype, [part indices])]``: ``parts`` by dtype, in order (a packed buffer each)."""
    groups: dict = {}
    for i, (t, _, _) in enumerate(parts):
        groups.setdefault(t.dtype, []).append(i)
    return list(groups.items())


class Replayed:
    """What a CUDA graph copies to pinned host memory itself at the end of each replay (the
    counts of its bounded results, the sizes a two-phase step's finish reads, its check
    flags), and the event recorded after each replay: the read-back after a replay only
    waits for that event (not the stream: another lane's work may follow) and reads.

    Parameters
    ----------
    pinned : LongTensor, shape (S,), pinned
        The graph's copy of ``scalars``.
    scalars : list of Tensor
        The 1-element device tensors the graph copies, in order.
    made : iterable
        The graph's results and check flags (objects its capture keeps alive): the values
        whose trims :meth:`plan` may remember.
    done : torch.cuda.Event, optional
        Recorded after each replay (default: a new one).
    packed : tuple, optional
        ``(values, buffers)``: results the graph packs at its end, and per
        :func:`pack_groups` group of their :func:`counted` parts the buffer it packs them in
        (each part's used prefix, one after another).
    """

    #: ``buffer -> a copy of it`` (outside the graph's memory), or None: where a graph's
    #: calls share one copy of their packed buffers (``runtime.cuda_graphs.ChunkGraphs``),
    #: :meth:`ReplayedTrim.copies` takes its pieces from that copy instead of copying
    copied = None

    def __init__(self, pinned, scalars: list, made, done=None, packed=None):
        self.pinned = pinned
        self.host = pinned.numpy()  # a view: what each replay copies in
        self.known = {(t.data_ptr(), t.dtype): i for i, t in enumerate(scalars)}
        self.done = torch.cuda.Event() if done is None else done
        self.made = frozenset(id(v) for v in made)
        self.packed = None if packed is None else (tuple(map(id, packed[0])), packed[1])
        self.plans: dict = {}

    def wait(self):
        """The pinned scalars (a NumPy view) once the replay has ended."""
        self.done.synchronize()
        return self.host

    def plan(self, values: tuple, flags: list):
        """The :class:`ReplayedTrim` of ``values`` and ``flags`` (check flags, 0-dim bool
        tensors), remembered, or None where any of them is not the graph's own or a count
        of theirs is not in pinned memory (then they are read the usual way)."""
        key = (*map(id, values), *map(id, flags))
        plan = self.plans.get(key)
        if plan is None:
            # the graph keeps these objects alive: their ids stay theirs
            if not self.made.issuperset(key) or len(self.plans) >= 64:
                return None
            packed = self.packed
            buffers = packed[1] if packed is not None and packed[0] == key[: len(values)] else None
            plan = self.plans[key] = ReplayedTrim.of(values, flags, self.known, buffers)
        return plan or None


class ReplayedTrim:
    """``trim_copies`` of a replayed graph's results, planned once: the positions of their
    counts (and of the flags read with them) in the graph's pinned scalars, the buffers to
    copy and how long each is as a function of the counts, and how to rebuild each value
    from the copies. Per call: one wait, one NumPy read, then, where the graph packed the
    results (:func:`pack_groups`), one copy of each packed buffer's used part split into
    views, else one ``torch.cat`` per dtype."""

    def __init__(self, index, sizes, parts, recipes, groups=None):
        self.index, self.sizes = index, sizes  # pinned positions; the first `sizes` counts
        self.parts, self.recipes = parts, recipes  # trim_parts', lengths by read()'s counts
        self.groups = groups  # [(packed buffer, part indices)] or None
        self.limits = _limits(parts)  # lengths()' view of the parts
        self.whole = (
            groups is not None
            and len(groups) == 1
            and list(groups[0][1]) == list(range(len(parts)))
        )  # one buffer, parts in order

    @classmethod
    def of(cls, values: tuple, flags: list, known: dict, buffers=None):
        """The plan, or False where a count or flag is not among ``known``; ``buffers``:
        where the graph packed ``values`` (:class:`Replayed`'s ``packed``)."""
        parts, recipes = trim_parts(values)
        counted_parts = counted(values, parts)
        index, place, at = [], {}, []  # each count read once; a part's: its place
        try:
            for _, c, _ in counted_parts:
                if c is not None and id(c) not in place:
                    place[id(c)] = len(index)
                    index.append(known[(c.data_ptr(), c.dtype)])
                at.append(None if c is None else (0, place[id(c)]))
            sizes = len(index)
            index += [known[(f.data_ptr(), f.dtype)] for f in flags]
        except KeyError:
            return False
        groups = (
            None
            if buffers is None
            else [(b, idx) for b, (_, idx) in zip(buffers, pack_groups(counted_parts))]
        )
        return cls(
            index, sizes, [(t, a, add) for (t, _, add), a in zip(parts, at)], recipes, groups
        )

    def read(self, replayed: Replayed) -> tuple:
        """``(counts, flags)`` of this replay (Python ints), once it has ended."""
        host = replayed.wait()[self.index].tolist()
        return host[: self.sizes], host[self.sizes :]

    def copies(self, sizes: list, copied=None) -> tuple:
        """The exact values, copies of the graph's buffers (``sizes``: :meth:`read`'s);
        ``copied``: :attr:`Replayed.copied` (the packed buffers' copies made already: views
        of them, no copy of their own)."""
        n = lengths(self.parts, [sizes], self.limits)

        def used(buffer, m):
            return buffer[:m].clone() if copied is None else copied(buffer)[:m]

        if self.groups is None:
            pieces = _copy_parts([(t, k) for (t, _, _), k in zip(self.parts, n)])
        elif self.whole:  # one packed buffer: one copy, split into views
            pieces = used(self.groups[0][0], sum(n)).split(n)
        else:  # packed by the graph: one copy, split into views
            pieces = [None] * len(n)
            for buffer, idx in self.groups:
                lens = [n[i] for i in idx]
                for i, piece in zip(idx, used(buffer, sum(lens)).split(lens)):
                    pieces[i] = piece
        return tuple(rebuild(self.recipes, pieces))
