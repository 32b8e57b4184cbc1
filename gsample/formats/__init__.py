"""Storage formats of a sparse matrix: CSC (the canonical form), CSR and COO, exact
conversions between them, and the bounded forms a sync-free program passes between its
steps. Imports nothing of gsample but the checks' helpers: every layer above reads these."""

from gsample.formats.csc import CSC, IdSpaces, gather_segments, locate, segment_ptr
from gsample.formats.layouts import (
    COO,
    CSR,
    NAMES,
    Sparse,
    convert,
    name_of,
    to_coo,
    to_csc,
    to_csr,
)

__all__ = [
    "COO",
    "CSC",
    "CSR",
    "NAMES",
    "IdSpaces",
    "Sparse",
    "convert",
    "gather_segments",
    "locate",
    "name_of",
    "segment_ptr",
    "to_coo",
    "to_csc",
    "to_csr",
]
