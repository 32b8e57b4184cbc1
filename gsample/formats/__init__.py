"""Storage formats of a sparse matrix: CSC (the canonical form), CSR and COO, exact
conversions between them, and the bounded forms a sync-free program passes between its
steps. Imports nothing of gsample but the checks' helpers: every layer above reads these."""
from gsample.formats.csc import CSC, IdSpaces, gather_segments, locate, segment_ptr
from gsample.formats.layouts import COO, CSR, NAMES, Sparse, convert, name_of, to_coo, to_csc, to_csr

__all__ = ["CSC", "CSR", "COO", "IdSpaces", "Sparse", "NAMES", "convert", "name_of", "to_csc",
           "to_csr", "to_coo", "gather_segments", "locate", "segment_ptr"]
