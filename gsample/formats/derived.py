"""Values a program computed from a sparse matrix, kept with the matrix.

A compiled sampler computes ``s.all_nodes()`` of a block to slice the next hop; the loader
later asks the returned block for the same value (to gather its nodes' features). An op
declared ``remembered`` (:class:`gsample.ir.OpDef`) has its result kept here, keyed by the
matrix object itself (sparse formats compare by identity and are never changed in place), so
that eager call returns the program's tensor instead of recomputing it. The table holds its
keys weakly: a value lives as long as its matrix.

A program also keeps, under :data:`COLUMNS`, what it knows of a returned block's column ids:
the very object it sliced the block's columns with, where that is a tensor it was given (a
mini-batch's seeds) or the ``all_nodes`` it keeps with another block it returns. The loader
then sees that its blocks chain (block ``l + 1``'s columns are ``blocks[l].all_nodes()``) by
identity, with no comparison of ids on the device (``gsample.loader.features``).

A sparse format (``gsample.formats.csc.IdSpaces``: CSC, CSR, COO) keeps its facts in its
own instance dictionary, under :data:`FACTS`: a super-batch hands out hundreds of blocks a
run and keeps a few facts with each, and a weak-keyed table costs a weak reference per
matrix (and its callback when the matrix dies) where the instance's dictionary costs a
lookup. A pickle or copy of a sparse format leaves its facts behind
(``IdSpaces.__getstate__``). Other objects go to the weak-keyed table.
"""

from __future__ import annotations

import contextlib
import weakref

import torch

_KEPT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: the key of a matrix's facts in its instance dictionary
FACTS = "_gsample_facts"

#: the key of a block's column ids as the program that made the block knew them: the object
#: it sliced them with (equal to ``A.global_cols()`` as node ids; any integer dtype)
COLUMNS = "columns"


class _Seeds:
    """The type of :data:`SEEDS`."""

    def __repr__(self) -> str:
        return "SEEDS"


#: kept as a block's :data:`COLUMNS` where its columns are the mini-batch's seeds, which
#: the program that made it did not hold as one object (a super-batch's output: its seeds
#: were encoded together); whoever holds them binds them (:func:`bind_seeds`)
SEEDS = _Seeds()


def remember(A, op, value: torch.Tensor) -> None:
    """Keep ``value``, op ``op``'s result on the matrix ``A`` (or, ``op`` :data:`COLUMNS`,
    the object ``A``'s columns were sliced with).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> from gsample.ir import Op
    >>> csc, nodes = gs.datasets.rmat(100, 500, seed=0).csc, torch.tensor([0, 1])
    >>> remember(csc, Op.ALL_NODES, nodes)
    >>> recall(csc, Op.ALL_NODES) is nodes
    True
    """
    own = _own(A)
    if own is not None:
        kept = own.get(FACTS)
        if kept is None:
            own[FACTS] = kept = {}
        kept[op] = value
        return
    with contextlib.suppress(TypeError):  # not weakly referenceable: nothing kept
        _KEPT.setdefault(A, {})[op] = value


def recall(A, op) -> torch.Tensor | None:
    """Op ``op``'s result on ``A`` kept by :func:`remember`, or None."""
    kept = kept_facts(A)
    return None if kept is None else kept.get(op)


def remember_each(matrices: list, ops: list, columns: list) -> None:
    """:func:`remember` for many matrices at once: ``matrices[b]`` keeps ``columns[k][b]``
    as op ``ops[k]``'s result, for every ``k`` and ``b`` (a value None is left out): what a
    super-batch keeps with its mini-batches' blocks. A sparse format with no facts yet gets
    them as one dictionary (a super-batch's blocks are fresh: one write each, not a
    :func:`remember` per fact).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> from gsample.ir import Op
    >>> a, b = gs.datasets.rmat(100, 500, seed=0).csc, gs.datasets.rmat(100, 500, seed=1).csc
    >>> nodes_a, nodes_b = torch.tensor([0]), torch.tensor([1])
    >>> remember_each([a, b], [Op.ALL_NODES], [[nodes_a, nodes_b]])
    >>> recall(b, Op.ALL_NODES) is nodes_b
    True
    """
    facts = list(zip(ops, columns))
    for b, m in enumerate(matrices):
        own = _own(m)
        if own is None or FACTS in own:
            for op, values in facts:
                if values[b] is not None:
                    remember(m, op, values[b])
            continue
        kept = {}
        for op, values in facts:
            if values[b] is not None:
                kept[op] = values[b]
        if kept:
            own[FACTS] = kept


def _own(A) -> dict | None:
    """A sparse format's instance dictionary (its class says ``KEEPS_FACTS``), where its
    facts go; None for anything else."""
    return A.__dict__ if getattr(type(A), "KEEPS_FACTS", False) else None


def kept_facts(A) -> dict | None:
    """The facts kept with ``A`` (its own dictionary's, or the weak-keyed table's).

    Parameters
    ----------
    A : object
        A sparse format (e.g. a CSC) or any object.

    Returns
    -------
    dict or None
        The facts dictionary itself (keys such as :data:`COLUMNS`), not a copy; None where
        nothing is kept.

    Examples
    --------
    >>> import torch
    >>> from gsample.formats.csc import CSC
    >>> A = CSC(1, torch.tensor([0, 1]), torch.tensor([0]))
    >>> kept_facts(A) is None
    True
    """
    own = _own(A)
    if own is not None:
        return own.get(FACTS)
    try:
        return _KEPT.get(A)
    except TypeError:  # not weakly referenceable: nothing kept
        return None


def bind_seeds(outs: list, seeds: list) -> None:
    """Bind each output's :data:`SEEDS` to its mini-batch's seeds: ``outs[b]``'s blocks (a
    matrix, or a list or tuple of them; a ``gs.Matrix`` by its ``.csc``) whose columns
    were the seeds keep ``seeds[b]`` itself as their :data:`COLUMNS` (the loader's chain
    check is then by identity, as for a mini-batch sampled alone).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> csc, seeds = gs.datasets.rmat(100, 500, seed=0).csc, torch.tensor([0, 1])
    >>> remember(csc, COLUMNS, SEEDS)
    >>> bind_seeds([[csc]], [seeds])
    >>> recall(csc, COLUMNS) is seeds
    True
    """
    if not outs:
        return
    # the outputs of one run keep the same facts in the same places: those of the first
    # say where to look (a few lookups per run where none is there: walks, subgraphs)
    places = [i for i, m in enumerate(_matrices(outs[0])) if recall(m, COLUMNS) is SEEDS]
    if not places:
        return
    # then a lookup per mini-batch and place: each matrix's facts found once, and the
    # seeds put in their place (what remember would do, without its calls)
    for out, s in zip(outs, seeds):
        items = out if isinstance(out, (list, tuple)) else (out,)
        for i in places:
            if i < len(items):
                m = items[i]
                kept = kept_facts(getattr(m, "csc", m))
                if kept is not None and kept.get(COLUMNS) is SEEDS:
                    kept[COLUMNS] = s


def _matrices(out) -> list:
    """The sparse formats of an output: itself, or the items of a list or tuple (a
    ``gs.Matrix`` by its ``.csc``)."""
    items = out if isinstance(out, (list, tuple)) else (out,)
    return [getattr(m, "csc", m) for m in items]


__all__ = ["COLUMNS", "FACTS", "SEEDS", "bind_seeds", "recall", "remember", "remember_each"]
