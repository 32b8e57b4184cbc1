"""CSR and COO forms of a matrix, next to :class:`~gsample.formats.CSC`, and exact conversions.

All three forms hold the same matrix: the same row space (``row_ids``), column space
(``col_ids``), edges, values and original edge ids. Only the order and the index
arrays differ:

=========  =======================================================================
CSC        edges in the canonical order: by column, within a column as the graph's CSC
CSR        edges by row; *within a row in CSC order* (a stable sort of the CSC by row),
           with ``perm[e]``, the CSC position of edge ``e``, so the way back is exact.
           ``compact`` CSR stores only the rows that have edges (``stored_rows``): a
           per-row result over a row space of all ``N`` nodes then costs ``O(E)``, not
           ``O(N)``, though the row space, and every per-row vector handed back, is
           unchanged (compaction of storage, not of the matrix)
COO        edges in CSC order with an explicit column index ``cols`` (and the CSC
           ``indptr``, so that converting back to CSC is free)
=========  =======================================================================

Per-edge tensors a user sees (``A.values``, edge-aligned operands, probabilities) are
always in CSC order; a CSR maps them with :meth:`CSR.from_csc_order` and
:meth:`CSR.to_csc_order`. Samplers only ever draw on a CSC (docs/architecture.md §3), so the layout
a compiled program picks never changes a sample.

Examples
--------
>>> import torch, gsample as gs
>>> A = gs.datasets.rmat(100, 500, seed=0).csc
>>> r = to_csr(A, compact=True)
>>> back = to_csc(r)
>>> bool(torch.equal(back.rows, A.rows) and torch.equal(back.indptr, A.indptr))
True
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from gsample.formats.csc import CSC, IdSpaces, segment_ptr


def _inverse(perm: torch.Tensor) -> torch.Tensor:
    """The inverse permutation (shape (E,)): ``inv[perm[e]] = e``."""
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(perm.numel(), device=perm.device)
    return inv


class _Spaces(IdSpaces):
    """Row and column spaces, shared by :class:`CSR` and :class:`COO` (as :class:`CSC` has)."""

    @property
    def num_rows(self) -> int:
        return self.num_nodes if self.row_ids is None else int(self.row_ids.numel())

    @property
    def num_cols(self) -> int:
        return self.num_nodes if self.col_ids is None else int(self.col_ids.numel())

    @property
    def nnz(self) -> int:
        return int(self.cols.numel())

    @property
    def device(self) -> torch.device:
        return self.cols.device

    def edge_cols(self) -> torch.Tensor:
        """Local column of each edge, in this form's edge order, shape (E,)."""
        return self.cols

    def with_values(self, values: torch.Tensor | None):
        """The same matrix with ``values`` (shape (E,) or (E, F), in this form's edge order)."""
        return replace(self, values=values)


@dataclass(frozen=True, eq=False)
class CSR(_Spaces):
    """Compressed sparse rows; within a row, edges keep their CSC order.

    Attributes
    ----------
    num_nodes : int
    indptr : LongTensor, shape (S + 1,)
        Stored row ``s`` holds edges ``indptr[s]:indptr[s + 1]``; ``S = R``, or the
        number of rows with edges when compact.
    cols : LongTensor, shape (E,)
        Local column index of each edge (row-major order).
    perm : LongTensor, shape (E,)
        CSC position of each edge: ``CSC.rows[perm[e]]`` is edge ``e``'s row.
    row_ids, col_ids : LongTensor or None
        As :class:`~gsample.formats.CSC` (``None``: all nodes).
    values : Tensor, shape (E,) or (E, F), or None
        Row-major edge values (``None``: 1.0).
    eids : LongTensor, shape (E,), or None
        Row-major original edge ids; ``None`` when the CSC had none (the ids are ``perm``).
    stored_rows : LongTensor, shape (S,), or None
        Compact form: the local rows stored, ascending, each with at least one edge;
        ``None``: every row of the row space is stored.
    """

    num_nodes: int
    indptr: torch.Tensor
    cols: torch.Tensor
    perm: torch.Tensor
    row_ids: torch.Tensor | None = None
    col_ids: torch.Tensor | None = None
    values: torch.Tensor | None = None
    eids: torch.Tensor | None = None
    stored_rows: torch.Tensor | None = None

    @property
    def compact(self) -> bool:
        return self.stored_rows is not None

    def row_counts(self) -> torch.Tensor:
        """Edges per stored row, shape (S,)."""
        return self.indptr[1:] - self.indptr[:-1]

    def stored(self) -> torch.Tensor:
        """Local row of each stored row, shape (S,)."""
        if self.stored_rows is None:
            return torch.arange(self.indptr.numel() - 1, device=self.device)
        return self.stored_rows

    @property
    def rows(self) -> torch.Tensor:
        """Local row of each edge (row-major, so non-decreasing), shape (E,)."""
        return torch.repeat_interleave(self.stored(), self.row_counts(), output_size=self.nnz)

    def eid_tensor(self) -> torch.Tensor:
        return self.perm if self.eids is None else self.eids

    def from_csc_order(self, t: torch.Tensor) -> torch.Tensor:
        """A per-edge tensor in CSC order (shape (E, ...)) put in this CSR's order."""
        return t[self.perm]

    def to_csc_order(self, t: torch.Tensor) -> torch.Tensor:
        """A per-edge tensor in this CSR's order put back in CSC order."""
        out = torch.empty_like(t)
        out[self.perm] = t  # one scatter: no inverse permutation
        return out

    def full_indptr(self) -> torch.Tensor:
        """The row pointer over every row of the row space, shape (R + 1,) (``indptr``
        itself unless compact)."""
        return (
            self.indptr
            if self.stored_rows is None
            else segment_ptr(self.scatter_rows(self.row_counts()))
        )

    def with_compact(self, compact: bool) -> CSR:
        """This CSR storing only its non-empty rows (``compact``) or every row: same edges,
        same order; only ``indptr`` and ``stored_rows`` change."""
        if compact == self.compact:
            return self
        if not compact:
            return replace(self, indptr=self.full_indptr(), stored_rows=None)
        counts = self.row_counts()
        keep = (counts > 0).nonzero().squeeze(1)
        return replace(self, indptr=segment_ptr(counts[keep]), stored_rows=keep)

    def scatter_rows(self, per_stored: torch.Tensor) -> torch.Tensor:
        """A per-stored-row result (shape (S, ...)) as one per row of the row space (zeros
        elsewhere), shape (R, ...)."""
        if self.stored_rows is None:
            return per_stored
        out = per_stored.new_zeros((self.num_rows,) + tuple(per_stored.shape[1:]))
        out[self.stored_rows] = per_stored
        return out


@dataclass(frozen=True, eq=False)
class COO(_Spaces):
    """Edges in CSC order with an explicit local column index.

    Attributes
    ----------
    num_nodes : int
    indptr : LongTensor, shape (C + 1,)
        The CSC column pointer of the same edges (kept: the way back to CSC is free).
    rows, cols : LongTensor, shape (E,)
        Local row and column of each edge, CSC order.
    row_ids, col_ids, values, eids
        As :class:`~gsample.formats.CSC`.
    """

    num_nodes: int
    indptr: torch.Tensor
    rows: torch.Tensor
    cols: torch.Tensor
    row_ids: torch.Tensor | None = None
    col_ids: torch.Tensor | None = None
    values: torch.Tensor | None = None
    eids: torch.Tensor | None = None

    def degrees(self) -> torch.Tensor:
        return self.indptr[1:] - self.indptr[:-1]

    def eid_tensor(self) -> torch.Tensor:
        if self.eids is None:
            return torch.arange(self.nnz, device=self.device)
        return self.eids

    def from_csc_order(self, t: torch.Tensor) -> torch.Tensor:
        return t

    to_csc_order = from_csc_order


Sparse = CSC | CSR | COO

#: the layout names a compiled program uses; ``csr-compact`` is a CSR of the non-empty rows
NAMES = ("csc", "csr", "csr-compact", "coo")


def name_of(A: Sparse) -> str:
    """The layout name of ``A``: one of :data:`NAMES`."""
    if isinstance(A, CSR):
        return "csr-compact" if A.compact else "csr"
    return "coo" if isinstance(A, COO) else "csc"


# ----------------------------------------------------------------------------- conversions
def to_csc(A: Sparse) -> CSC:
    """The CSC of ``A`` (``A`` itself when it is one): exact, stable."""
    if isinstance(A, CSC):
        return A
    if isinstance(A, COO):
        return CSC(A.num_nodes, A.indptr, A.rows, A.row_ids, A.col_ids, A.values, A.eids)
    inv = _inverse(A.perm)
    return CSC(
        num_nodes=A.num_nodes,
        indptr=segment_ptr(torch.bincount(A.cols, minlength=A.num_cols)),
        rows=A.rows[inv],
        row_ids=A.row_ids,
        col_ids=A.col_ids,
        values=None if A.values is None else A.values[inv],
        eids=None if A.eids is None else A.eids[inv],
    )


def to_csr(A: Sparse, compact: bool = False) -> CSR:
    """The CSR of ``A``: edges by row, within a row in CSC order (a stable sort).

    Parameters
    ----------
    A : CSC, CSR or COO
    compact : bool
        Store only the rows that have edges (``O(E)`` work and memory; else ``O(E + R)``).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> r = to_csr(gs.Matrix.from_edge_index(torch.tensor([[1, 0, 1], [0, 1, 1]])).csc)
    >>> r.indptr, r.cols, r.perm
    (tensor([0, 1, 3]), tensor([1, 0, 1]), tensor([1, 0, 2]))
    """
    if isinstance(A, CSR):
        return A.with_compact(compact)
    cols = A.cols if isinstance(A, COO) else A.edge_cols()
    sorted_rows, perm = torch.sort(A.rows, stable=True)
    if compact:
        stored, counts = torch.unique_consecutive(sorted_rows, return_counts=True)
    else:
        stored, counts = None, torch.bincount(A.rows, minlength=A.num_rows)
    return CSR(
        num_nodes=A.num_nodes,
        indptr=segment_ptr(counts),
        cols=cols[perm],
        perm=perm,
        row_ids=A.row_ids,
        col_ids=A.col_ids,
        values=None if A.values is None else A.values[perm],
        eids=None if A.eids is None else A.eids[perm],
        stored_rows=stored,
    )


def to_coo(A: Sparse) -> COO:
    """The COO of ``A``: CSC order, with each edge's column."""
    if isinstance(A, COO):
        return A
    if isinstance(A, CSR):
        A = to_csc(A)
    return COO(A.num_nodes, A.indptr, A.rows, A.edge_cols(), A.row_ids, A.col_ids, A.values, A.eids)


def convert(A: Sparse, layout: str) -> Sparse:
    """``A`` in layout ``layout`` (one of :data:`NAMES`); exact in every direction.

    Examples
    --------
    >>> import gsample as gs
    >>> A = gs.datasets.rmat(100, 500, seed=0).csc    # a CSC of 100 nodes, 500 edges
    >>> convert(A, "coo").cols.shape == (A.nnz,)
    True
    """
    if layout == "csc":
        return to_csc(A)
    if layout in ("csr", "csr-compact"):
        return to_csr(A, compact=layout == "csr-compact")
    if layout == "coo":
        return to_coo(A)
    raise ValueError(f"layout: must be one of {NAMES}, got {layout!r}")
