"""How a sparse matrix is held: compressed sparse columns over index spaces.

Every :class:`gsample.Matrix` is conceptually ``num_nodes x num_nodes`` with global
row and column ids. It stores a *row space* (the global ids of its rows, shape
``(R,)``) and a *column space* (shape ``(C,)``, the frontier, which may repeat a
node), and its edges in CSC order over the column space. Within a column, edges
keep the order of the graph's CSC (by row id, then by original edge id), so every
sampler sees one canonical order whatever layout later stages choose.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from gsample.formats.derived import FACTS


class IdSpaces:
    """Global ids of a matrix's row and column spaces, shared by :class:`CSC` and the CSR /
    COO forms of :mod:`gsample.formats.layouts` (each has ``num_nodes``, ``rows``, ``row_ids``,
    ``col_ids``, ``values``, ``num_cols``, ``nnz`` and ``device``)."""

    def global_rows(self, local: torch.Tensor | None = None) -> torch.Tensor:
        local = self.rows if local is None else local
        return local if self.row_ids is None else self.row_ids[local]

    def global_cols(self) -> torch.Tensor:
        if self.col_ids is None:
            return torch.arange(self.num_cols, device=self.device)
        return self.col_ids

    def all_row_ids(self) -> torch.Tensor:
        if self.row_ids is None:
            return torch.arange(self.num_nodes, device=self.device)
        return self.row_ids

    def value_tensor(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        if self.values is None:
            return torch.ones(self.nnz, dtype=dtype, device=self.device)
        return self.values

    #: programs keep facts with a sparse format in its own dictionary
    #: (gsample.formats.derived: a lookup, where a weak-keyed table costs a reference)
    KEEPS_FACTS = True

    def __getstate__(self) -> dict:
        # a pickle or copy holds the fields, not the facts a program kept with this object
        # (they are about this object, by its identity)
        state = dict(self.__dict__)
        state.pop(FACTS, None)
        return state


@dataclass(frozen=True, eq=False)  # identity semantics: usable as a cache key
class CSC(IdSpaces):
    """Compressed sparse columns over a row space and a column space.

    Attributes
    ----------
    num_nodes : int
        Size of the global id space (the graph's node count).
    indptr : LongTensor, shape (C + 1,)
        Column ``c`` holds edges ``indptr[c]:indptr[c + 1]``.
    rows : LongTensor, shape (E,)
        Local row index of each edge, in ``[0, R)``.
    row_ids : LongTensor, shape (R,), or None
        Global id of each local row; ``None`` means all nodes (``R = num_nodes``).
    col_ids : LongTensor, shape (C,), or None
        Global id of each column; ``None`` means all nodes (``C = num_nodes``).
    values : Tensor, shape (E,) or (E, F), or None
        Edge values (weights); ``None`` means 1.0 on every edge.
    eids : LongTensor, shape (E,), or None
        Original edge ids; ``None`` means ``arange(E)`` (the graph itself).
    """

    num_nodes: int
    indptr: torch.Tensor
    rows: torch.Tensor
    row_ids: torch.Tensor | None = None
    col_ids: torch.Tensor | None = None
    values: torch.Tensor | None = None
    eids: torch.Tensor | None = None

    @classmethod
    def of(cls, num_nodes, indptr, rows, row_ids=None, col_ids=None, values=None, eids=None) -> CSC:
        """``CSC(...)`` without the frozen dataclass's ``__init__`` (a ``setattr`` per field):
        for the runtime's hot paths, which build one per mini-batch and output."""
        obj = object.__new__(cls)
        # item by item into the instance's dict: cheaper than a keyword dict and update()
        d = obj.__dict__
        d["num_nodes"] = num_nodes
        d["indptr"] = indptr
        d["rows"] = rows
        d["row_ids"] = row_ids
        d["col_ids"] = col_ids
        d["values"] = values
        d["eids"] = eids
        return obj

    @classmethod
    def each(cls, num_nodes, indptr, rows, row_ids, col_ids, values, eids) -> list:
        """``[CSC.of(num_nodes, p, r, ri, ci, v, e) for p, r, ri, ci, v, e in zip(...)]``
        without a call per matrix: a super-batch's mini-batch matrices, one per position of
        the per-matrix sequences (``indptr`` ... ``eids``, of equal lengths; ``(None,) * N``
        for a field every matrix leaves out).

        Examples
        --------
        >>> t = torch.arange(3)
        >>> [m.nnz for m in CSC.each(5, [t[:2], t], [t[:1], t], [None] * 2, [t[:1], t[:2]],
        ...                           [None] * 2, [None] * 2)]
        [1, 3]
        """
        made = []
        append, new = made.append, object.__new__
        for p, r, ri, ci, v, e in zip(indptr, rows, row_ids, col_ids, values, eids, strict=True):
            # CSC.of's body, inline (its call is a third of the cost of making one)
            obj = new(cls)
            d = obj.__dict__
            d["num_nodes"] = num_nodes
            d["indptr"] = p
            d["rows"] = r
            d["row_ids"] = ri
            d["col_ids"] = ci
            d["values"] = v
            d["eids"] = e
            append(obj)
        return made

    # ------------------------------------------------------------------ sizes
    @property
    def num_rows(self) -> int:
        return self.num_nodes if self.row_ids is None else int(self.row_ids.numel())

    @property
    def num_cols(self) -> int:
        return int(self.indptr.numel()) - 1

    @property
    def nnz(self) -> int:
        return int(self.rows.numel())

    @property
    def device(self) -> torch.device:
        return self.indptr.device

    # ------------------------------------------------------------------ derived views
    def degrees(self) -> torch.Tensor:
        """Edges per column, shape (C,)."""
        return self.indptr[1:] - self.indptr[:-1]

    def edge_cols(self) -> torch.Tensor:
        """Local column index of each edge, shape (E,)."""
        c = torch.arange(self.num_cols, device=self.device)
        return torch.repeat_interleave(c, self.degrees(), output_size=self.nnz)

    def eid_tensor(self) -> torch.Tensor:
        if self.eids is None:
            return torch.arange(self.nnz, device=self.device)
        return self.eids

    # ------------------------------------------------------------------ rebuilding
    def take_edges(self, index: torch.Tensor, indptr: torch.Tensor) -> CSC:
        """A CSC with the edges at ``index`` (in CSC order) and the new ``indptr``."""
        return replace(
            self,
            indptr=indptr,
            rows=self.rows[index],
            values=None if self.values is None else self.values[index],
            eids=index if self.eids is None else self.eids[index],
        )

    def column_segments(self, cols: torch.Tensor):
        """``(indptr, seg)``: column ``c`` of ``A[:, cols]`` is segment ``seg[c]`` of ``indptr``.

        A node outside a sub-matrix's column space points at an empty segment
        appended after the last column (so it yields an empty column).
        """
        if self.col_ids is None:
            return self.indptr, cols
        local, hit = locate(self.col_ids, cols)
        indptr = torch.cat([self.indptr, self.indptr[-1:]])
        return indptr, torch.where(hit, local, self.num_cols)

    def with_values(self, values: torch.Tensor | None) -> CSC:
        return replace(self, values=values)

    def to(self, device) -> CSC:
        def mv(t):
            return None if t is None else t.to(device)

        return CSC(
            self.num_nodes,
            mv(self.indptr),
            mv(self.rows),
            mv(self.row_ids),
            mv(self.col_ids),
            mv(self.values),
            mv(self.eids),
        )

    def same_structure(self, other: CSC) -> bool:
        """True when both hold the same edges in the same order (values aside)."""
        if self is other or (self.indptr is other.indptr and self.rows is other.rows):
            return self.row_ids is other.row_ids or _eq(self.row_ids, other.row_ids)
        return (
            self.num_nodes == other.num_nodes
            and _eq(self.indptr, other.indptr)
            and _eq(self.rows, other.rows)
            and _eq(self.row_ids, other.row_ids)
            and _eq(self.col_ids, other.col_ids)
        )


def _eq(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and a.device == b.device and bool(torch.equal(a, b))


def locate(space: torch.Tensor, ids: torch.Tensor):
    """Position of each of ``ids`` in ``space`` (its first occurrence where ``space``
    repeats an id); ``hit`` marks found ones."""
    sorted_space, order = torch.sort(space, stable=True)  # repeats: the first occurrence
    pos = torch.searchsorted(sorted_space, ids).clamp_(max=max(space.numel() - 1, 0))
    if space.numel() == 0:
        return pos, torch.zeros_like(ids, dtype=torch.bool)
    hit = sorted_space[pos] == ids
    return order[pos], hit


def segment_ptr(counts: torch.Tensor) -> torch.Tensor:
    """``indptr`` (shape (n + 1,)) from per-segment counts (shape (n,))."""
    out = torch.zeros(counts.numel() + 1, dtype=torch.int64, device=counts.device)
    torch.cumsum(counts, 0, out=out[1:])
    return out


def gather_segments(indptr: torch.Tensor, seg: torch.Tensor):
    """Edge positions of segments ``seg`` of a CSC, concatenated.

    Returns ``(index, new_indptr)``: ``index`` (shape (sum of their lengths,)) lists
    the edges of ``seg[0]``, then ``seg[1]``, ... and ``new_indptr`` delimits them.
    """
    starts = indptr[seg]
    counts = indptr[seg + 1] - starts
    new_indptr = segment_ptr(counts)
    total = int(new_indptr[-1])
    # position p of the output belongs to segment s; its edge is p + (starts[s] - new_indptr[s])
    # (one per-edge gather of the per-segment shift)
    owner = torch.repeat_interleave(
        torch.arange(seg.numel(), device=seg.device), counts, output_size=total
    )
    index = torch.arange(total, device=seg.device) + (starts - new_indptr[:-1])[owner]
    return index, new_indptr
