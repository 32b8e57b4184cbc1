"""A heterogeneous graph that examples build in one line."""

from __future__ import annotations

import torch

from gsample.hetero.container import HeteroGraph


def authors_papers() -> HeteroGraph:
    """A heterogeneous graph small enough to read: 2 authors write 3 papers, and papers cite
    papers.

    Relations (source -> destination): ``("author", "writes", "paper")``, its reverse
    ``("paper", "written_by", "author")`` and ``("paper", "cites", "paper")``. Author 0
    wrote papers 0 and 1, author 1 papers 1 and 2; paper 1 cites paper 0, paper 2 cites
    papers 0 and 1.

    Returns
    -------
    HeteroGraph
        2 authors, 3 papers; 4 + 4 + 3 edges (each relation a 3 x 3 matrix: one id
        space of the largest type's size, see :mod:`gsample.hetero`).

    Examples
    --------
    >>> import gsample as gs
    >>> H = gs.hetero.authors_papers()
    >>> H.num_nodes("author"), H.num_nodes("paper"), H["writes"].num_edges
    (2, 3, 4)
    """
    writes = torch.tensor([[0, 0, 1, 1], [0, 1, 1, 2]])  # author -> paper
    return HeteroGraph(
        {
            ("author", "writes", "paper"): writes,
            ("paper", "written_by", "author"): writes.flip(0),
            ("paper", "cites", "paper"): torch.tensor([[1, 2, 2], [0, 0, 1]]),
        },
        num_nodes={"author": 2, "paper": 3},
    )
