"""The step functions of a lowered program that other runtime modules recognise: an op's
data check (:class:`Check`) and the trim of bounded values (:func:`trim`).

Shared by the lowering (``gsample.runtime.lower``, which emits them) and the scheduler
(``gsample.runtime.schedule``, which must tell them from an op's call), so neither imports
the other.
"""

from __future__ import annotations

from gsample.base import validate as V
from gsample.base.readback import READ_BACK
from gsample.formats.bounded import COPY_OUT, Bounded, counts, trim_copies
from gsample.formats.bounded import trim as trim_bounded


class Check:
    """An op's data check on the inputs that enter it untrusted; returns them converted."""

    def __init__(self, check, names, attrs, trusted, checked, in_kernel=()):
        self.check, self.names, self.attrs = check, names, attrs
        self.trusted, self.checked, self.in_kernel = trusted, checked, in_kernel
        self.extra = {"in_kernel": in_kernel} if in_kernel else {}
        # the keyword arguments every call passes, merged once
        self.fixed = {**attrs, "trusted": trusted, **self.extra}

    def __call__(self, *values):
        kwargs = dict(zip(self.names, values))
        out = self.check(**kwargs, **self.fixed)
        return tuple(out.get(k, kwargs[k]) for k in self.checked)


def trim(*values):
    """Read back the counts of bounded values and every pending deferred check flag in one
    host synchronisation; raise a failed check's error; return the exact values (a tuple's,
    as an op with several results returns them, element by element)."""
    if any(v.__class__ is tuple for v in values):
        flat = [x for v in values for x in (v if v.__class__ is tuple else (v,))]
        exact = iter(trim(*flat))
        return tuple(
            tuple(next(exact) for _ in v) if v.__class__ is tuple else next(exact) for v in values
        )
    replayed = READ_BACK.get()
    if replayed is not None and COPY_OUT.get():
        # a replayed graph's own results: their trim planned once per graph
        record = V.DEFERRED.get()
        failures = record.failures if record is not None else ()
        plan = replayed.plan(values, [f[0] for f in failures])
        if plan is not None:
            sizes, hits = plan.read(replayed)
            if any(hits):
                record.raise_first(hits)
            if failures:
                failures.clear()
            return plan.copies(sizes, replayed.copied)
    parts = [counts(v) for v in values]
    host = V.read_back([t for p in parts for t in p])
    sizes, i = [], 0
    for p in parts:
        sizes.append(host[i : i + len(p)])
        i += len(p)
    if COPY_OUT.get():  # results of a replayed CUDA graph: copied out
        return tuple(trim_copies(values, sizes))
    return tuple(trim_bounded(v, s) if isinstance(v, Bounded) else v for v, s in zip(values, sizes))


__all__ = ["Check", "trim"]
