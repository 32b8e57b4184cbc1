"""A super-batch's mini-batch matrices, their fields made when first read.

A super-batched program's matrix holds every mini-batch's part of each field (``indptr``,
``rows``, ``eids``, ...) one after another, and each mini-batch's matrix is a range of each
(``gsample.runtime.block_diagonal``). A tensor per field and mini-batch is a host object
each, the larger part of a super-batch's hand-out, which a loop that reads none of them
(a count of sampled edges, a loop that drops some mini-batches) need not pay.
:class:`SplitCSC` is a :class:`~gsample.formats.csc.CSC` whose fields are made when first
read: the first read of a field of any of a super-batch's matrices cuts that field into
every matrix's piece (:class:`Pieces`, one split, as the eager hand-out's), and each matrix
keeps its own. The pieces are what the eager split makes (views of the
super-batch's tensors, no copy, no device work); the sizes (``nnz``, ``num_cols``,
``num_rows``) and the device are known on the host without making any.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import torch

from gsample.formats.csc import CSC

#: the fields a :class:`SplitCSC` may make when first read
FIELDS = ("indptr", "rows", "row_ids", "col_ids", "values", "eids")


class Pieces:
    """The fields of a super-batch's matrices not made yet: ``make[name]()`` returns every
    matrix's piece of field ``name`` (a sequence, one per matrix, in order), called once, at
    the first read of that field of any of them (under a lock: a pipelined loader's
    threads may read the same super-batch's matrices); ``made[name]`` holds them then.

    Examples
    --------
    >>> import torch
    >>> t = torch.arange(5)
    >>> pieces = Pieces({"rows": lambda: t.split_with_sizes([2, 3])})
    >>> [p.tolist() for p in pieces.cut("rows")]
    [[0, 1], [2, 3, 4]]
    """

    __slots__ = ("lock", "made", "make")

    def __init__(self, make: dict[str, Callable]):
        self.make, self.made, self.lock = make, {}, threading.Lock()

    def cut(self, name: str):
        """Every matrix's piece of field ``name`` (made at the first call)."""
        with self.lock:
            parts = self.made.get(name)
            if parts is None:
                parts = self.made[name] = self.make.pop(name)()
        return parts


class _Field:
    """A :class:`SplitCSC` field not read yet: its piece is made (every matrix's at once,
    :meth:`Pieces.cut`) and kept in the instance, whose own attribute is found from then on
    (a descriptor with ``__get__`` alone: the instance's dictionary comes first)."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        d, name = obj.__dict__, self.name
        pieces = d["_pieces"]
        parts = pieces.made.get(name)
        if parts is None:
            parts = pieces.cut(name)
        value = d[name] = parts[d["_b"]]
        return value


class SplitCSC(CSC):
    """A :class:`~gsample.formats.csc.CSC` cut out of a super-batch's matrix (mini-batch
    ``b`` of a :class:`Pieces`), its fields made when first read; equal, field for field,
    to the CSC of the eager split. A pickle or copy is a plain CSC of the same fields (their
    pieces made first). Build them with :meth:`each`."""

    # (CSC's defaults, None, are class attributes: these come first until a field is read)
    indptr = _Field("indptr")
    rows = _Field("rows")
    row_ids = _Field("row_ids")
    col_ids = _Field("col_ids")
    values = _Field("values")
    eids = _Field("eids")

    @classmethod
    def each(
        cls,
        num_nodes: int,
        pieces: Pieces,
        device: torch.device,
        nnz: list,
        num_cols: list,
        num_rows: list | None,
        absent: tuple = (),
    ) -> list:
        """The matrices of a super-batch (one per entry of ``nnz``), their fields made by
        ``pieces`` when first read, but those named in ``absent`` (None in every one).

        Parameters
        ----------
        num_nodes : int
            The graph's node count (every matrix's ``num_nodes``).
        pieces : Pieces
            Makes each field's pieces (every field but the ``absent`` ones).
        device : torch.device
            Where the pieces are.
        nnz, num_cols : list of int
            Each matrix's edge and column count.
        num_rows : list of int, optional
            Each matrix's row count (None: no ``row_ids``, every node a row).
        absent : tuple of str
            The fields None in every matrix.

        Returns
        -------
        list of SplitCSC

        Examples
        --------
        >>> import torch
        >>> ptr, rows = torch.tensor([0, 1, 0, 0, 2]), torch.tensor([4, 1, 3])
        >>> pieces = Pieces({"indptr": lambda: ptr.split_with_sizes([2, 3]),
        ...                  "rows": lambda: rows.split_with_sizes([1, 2])})
        >>> a, b = SplitCSC.each(5, pieces, ptr.device, [1, 2], [1, 2], None,
        ...                      ("row_ids", "col_ids", "values", "eids"))
        >>> b.nnz, b.num_cols, "rows" in vars(b)
        (2, 2, False)
        >>> b.rows.tolist(), b.indptr.tolist(), b.eids is None
        ([1, 3], [0, 0, 2], True)
        """
        made = []
        append, new = made.append, object.__new__
        rows = num_rows if num_rows is not None else (num_nodes,) * len(nnz)
        for b, (e, c, r) in enumerate(zip(nnz, num_cols, rows, strict=True)):
            obj = new(cls)
            d = obj.__dict__
            d["num_nodes"] = num_nodes
            d["_pieces"] = pieces
            d["_b"] = b
            d["_sizes"] = (e, c, r, device)
            for name in absent:
                d[name] = None
            append(obj)
        return made

    # the sizes and device, from the host (a field read for them would make its pieces)
    @property
    def nnz(self) -> int:
        sizes = self.__dict__.get("_sizes")
        return sizes[0] if sizes is not None else CSC.nnz.fget(self)

    @property
    def num_cols(self) -> int:
        sizes = self.__dict__.get("_sizes")
        return sizes[1] if sizes is not None else CSC.num_cols.fget(self)

    @property
    def num_rows(self) -> int:
        sizes = self.__dict__.get("_sizes")
        return sizes[2] if sizes is not None else CSC.num_rows.fget(self)

    @property
    def device(self) -> torch.device:
        sizes = self.__dict__.get("_sizes")
        return sizes[3] if sizes is not None else CSC.device.fget(self)

    def __reduce_ex__(self, protocol):
        # a plain CSC of the same fields (made now); the facts stay behind, as a CSC's do
        return CSC.of, tuple(getattr(self, f) for f in ("num_nodes", *FIELDS))


__all__ = ["FIELDS", "Pieces", "SplitCSC"]
