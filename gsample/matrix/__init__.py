"""``gs.Matrix``: the graph and every sub-matrix of it, with its eager operators
(:mod:`~gsample.matrix.sparse`) and constructors from other libraries' graphs
(:mod:`~gsample.matrix.convert`)."""

from gsample.matrix.sparse import Matrix, sddmm

__all__ = ["Matrix", "sddmm"]
